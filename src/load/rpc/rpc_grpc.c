/* rpc_grpc.c - the gRPC client transport (rpc_client.h): unary calls to
 * /com.stevenpg.rvg.MessageService/send over one nghttp2 client session per
 * connection (HTTP/2 cleartext with prior knowledge, or TLS with ALPN h2
 * when opts->tls is set).
 *
 * A call is packed with protobuf-c behind its 5-byte prefix (gzip-
 * compressed with --gzip), submitted as HEADERS plus one DATA frame with
 * END_STREAM, and succeeds only with grpc-status 0 and exactly one reply,
 * Result{status: "successful"}. Up to max_in_flight calls run as
 * concurrent streams; the slots for them are allocated at connect.
 *
 * Overhead is kept low because the client must not be what the benchmark
 * measures: the request header array is built once per connection (HPACK
 * then sends each header as a one-byte index), and output is written once
 * per wake-up: calls made from inside our callbacks (the driver answering
 * a reply with the next call) are written together when the callback
 * returns, and a call made from anywhere else (the first call, a driver's
 * timer) is written at once, so a sequential client never waits for the
 * loop to come round.
 *
 * The socket is watched level-triggered: for writability while
 * connecting, as the TLS handshake asks during it, then for reading, or for writability alone while the socket
 * is full. Callbacks may call call() and close(); close() from inside a
 * callback is carried out when our callback returns.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/net.h"
#include "core/tls.h"
#include "core/version.h"
#include "http/grpc_frame.h"
#include "http/h2_io.h"
#include "load/rpc/rpc_client.h"
#include "load/trace.h"

#define RPC_GRPC_READ_BUDGET (256 * 1024)
/* Largest reply accepted: grpc's default receive limit. */
#define RPC_GRPC_MAX_REPLY (4 * 1024 * 1024)
#define RPC_GRPC_WINDOW (1024 * 1024)

struct rpc_grpc_call {
    struct rpc_conn *c;
    struct rpc_grpc_call *next_free;
    void *ctx;
    int32_t id; /* 0: the slot is free */
    /* The request message with its prefix; the buffer is kept for the
     * slot's next call. */
    uint8_t *req;
    size_t req_cap;
    struct h2_io_body body; /* over req */
    /* The answer so far. */
    int http_status; /* 0: none yet */
    int grpc_status; /* -1: none yet */
    bool reply_gzip; /* grpc-encoding: gzip */
    bool reply_ok;   /* a Result{status: "successful"} arrived */
    bool malformed;  /* bad framing, or a reply that does not decode */
    unsigned nmsgs;
    size_t reply_len; /* bytes of the reply messages, as sent */
    bool traced;      /* --trace picked this call */
    struct grpc_reader rd;
};

struct rpc_conn {
    struct h2_io x; /* socket, session (NULL until connected), pending output */
    struct ev_loop *loop;
    struct rpc_events ev;
    struct tls_ctx *tls;        /* not owned */
    const char *server_name;    /* for TLS; the caller's */
    char authority[NET_ERR_LEN];
    nghttp2_nv hdrs[9];
    size_t nhdrs;
    struct rpc_grpc_call *calls, *free_calls;
    unsigned ncalls;
    unsigned depth; /* our callbacks running; the driver's may call back in */
    bool connected;
    bool dead;        /* failed or finished: calls are refused */
    bool close_asked; /* close() from inside a callback: free when it returns */
    bool goaway;      /* the server will take no new streams */
    int32_t goaway_last_id;
    bool gzip;
    struct grpc_gzip gz;
    struct trace *trace; /* NULL: none */
    unsigned trace_id;
    uint64_t trace_calls;
};

static const char rpc_grpc_path[] = "/com.stevenpg.rvg.MessageService/send";

#define RPC_NV(n, v)                                                                               \
    (nghttp2_nv)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v),                                      \
            NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE                           \
    }

/* ---- Finishing calls --------------------------------------------------- */

/* grpc-status for a stream reset before any status (PROTOCOL-HTTP2.md,
 * "Errors"). */
static int rpc_grpc_rst_status(uint32_t code)
{
    switch (code) {
    case NGHTTP2_REFUSED_STREAM:
        return GRPC_UNAVAILABLE;
    case NGHTTP2_CANCEL:
        return GRPC_CANCELLED;
    case NGHTTP2_ENHANCE_YOUR_CALM:
        return GRPC_RESOURCE_EXHAUSTED;
    case NGHTTP2_INADEQUATE_SECURITY:
        return GRPC_PERMISSION_DENIED;
    default:
        return GRPC_INTERNAL;
    }
}

/* grpc-status for an HTTP error without one (doc/http-grpc-status-mapping.md). */
static int rpc_grpc_http_status(int http)
{
    switch (http) {
    case 400:
        return GRPC_INTERNAL;
    case 401:
        return GRPC_UNAUTHENTICATED;
    case 403:
        return GRPC_PERMISSION_DENIED;
    case 404:
        return GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return GRPC_UNAVAILABLE;
    default:
        return GRPC_UNKNOWN;
    }
}

/* Frees the call's slot, then tells the driver (unless it closed us). */
static void rpc_grpc_report(struct rpc_conn *c, struct rpc_grpc_call *k, enum rpc_outcome outcome,
                            int code)
{
    if (k->traced) {
        static const char *const how[] = {
            [RPC_OK] = "ok", [RPC_E_STATUS] = "error status", [RPC_E_PROTOCOL] = "malformed",
            [RPC_E_CLOSED] = "closed"};
        trace_line(c->trace, c->trace_id, '<', "grpc",
                   "stream=%d %s http=%d grpc-status=%d msgs=%u len=%zu: %s", k->id, rpc_grpc_path,
                   k->http_status, k->grpc_status, k->nmsgs, k->reply_len, how[outcome]);
    }
    void *ctx = k->ctx;
    k->ctx = NULL;
    k->id = 0;
    grpc_reader_free(&k->rd);
    k->next_free = c->free_calls;
    c->free_calls = k;
    if (!c->close_asked)
        c->ev.done(c->ev.ctx, c, ctx, outcome, code);
}

static void rpc_grpc_finish(struct rpc_conn *c, struct rpc_grpc_call *k, uint32_t error_code)
{
    if (c->goaway && k->id > c->goaway_last_id) {
        /* Never processed: the server shut down. */
        rpc_grpc_report(c, k, RPC_E_CLOSED, 0);
    } else if (k->grpc_status == GRPC_OK) {
        bool ok = k->nmsgs == 1 && k->reply_ok && !k->malformed;
        rpc_grpc_report(c, k, ok ? RPC_OK : RPC_E_PROTOCOL, 0);
    } else if (k->grpc_status > 0) {
        rpc_grpc_report(c, k, RPC_E_STATUS, k->grpc_status);
    } else if (error_code != NGHTTP2_NO_ERROR) {
        rpc_grpc_report(c, k, RPC_E_STATUS, rpc_grpc_rst_status(error_code));
    } else if (k->http_status != 200 && k->http_status != 0) {
        rpc_grpc_report(c, k, RPC_E_STATUS, rpc_grpc_http_status(k->http_status));
    } else {
        rpc_grpc_report(c, k, RPC_E_PROTOCOL, 0); /* ended without grpc-status */
    }
}

/* The connection is over: every call in flight ends RPC_E_CLOSED. */
static void rpc_grpc_die(struct rpc_conn *c, int err, const char *why)
{
    if (c->dead)
        return;
    log_debug("grpc client %s: connection over (%s)", c->authority, why);
    c->dead = true;
    ev_io_stop(c->loop, &c->x.io);
    for (unsigned i = 0; i < c->ncalls; i++)
        if (c->calls[i].id)
            rpc_grpc_report(c, &c->calls[i], RPC_E_CLOSED, err);
}

static void rpc_grpc_destroy(struct rpc_conn *c)
{
    h2_io_close(&c->x, c->loop);
    for (unsigned i = 0; i < c->ncalls; i++) {
        grpc_reader_free(&c->calls[i].rd);
        mem_free(c->calls[i].req);
    }
    mem_free(c->calls);
    grpc_gzip_free(&c->gz);
    mem_free(c);
}

/* ---- The reply ----------------------------------------------------------- */

static void rpc_grpc_reply_message(struct rpc_grpc_call *k, const struct grpc_msg *m)
{
    k->reply_len += m->len;
    if (++k->nmsgs > 1)
        return; /* a cardinality violation: rpc_grpc_finish sees nmsgs */
    const uint8_t *data = m->data;
    size_t len = m->len;
    uint8_t *plain = NULL;
    if (m->compressed) {
        if (!k->reply_gzip ||
            grpc_gzip_inflate(&k->c->gz, data, len, RPC_GRPC_MAX_REPLY, &plain, &len) != GRPC_OK) {
            k->malformed = true;
            return;
        }
        data = plain;
    }
    Com__Stevenpg__Rvg__Result *r = com__stevenpg__rvg__result__unpack(NULL, len, data);
    mem_free(plain);
    if (!r) {
        k->malformed = true;
        return;
    }
    k->reply_ok = strcmp(r->status, "successful") == 0;
    com__stevenpg__rvg__result__free_unpacked(r, NULL);
}

static struct rpc_grpc_call *rpc_grpc_call_of(nghttp2_session *h2, int32_t id)
{
    return nghttp2_session_get_stream_user_data(h2, id);
}

static int rpc_grpc_on_header(nghttp2_session *h2, const nghttp2_frame *frame, const uint8_t *name,
                              size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                              void *user)
{
    struct rpc_grpc_call *k = rpc_grpc_call_of(h2, frame->hd.stream_id);
    if (!k || frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    const char *n = (const char *)name, *v = (const char *)value;
    if (namelen == 7 && memcmp(n, ":status", 7) == 0) {
        k->http_status = valuelen == 3 ? atoi(v) : -1;
    } else if (namelen == 11 && memcmp(n, "grpc-status", 11) == 0) {
        int st = grpc_status_parse(v, valuelen);
        k->grpc_status = st < 0 ? GRPC_UNKNOWN : st; /* unparsable: UNKNOWN (statuscodes.md) */
    } else if (namelen == 13 && memcmp(n, "grpc-encoding", 13) == 0) {
        k->reply_gzip = grpc_encoding_parse(v, valuelen) == GRPC_ENC_GZIP;
    }
    return 0;
}

static int rpc_grpc_on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t id,
                                  const uint8_t *data, size_t len, void *user)
{
    struct rpc_grpc_call *k = rpc_grpc_call_of(h2, id);
    while (k && !k->malformed && len > 0) {
        struct grpc_msg m;
        size_t used;
        enum grpc_read r = grpc_reader_feed(&k->rd, data, len, &used, &m);
        data += used;
        len -= used;
        if (r == GRPC_READ_TOO_LARGE)
            k->malformed = true;
        else if (r == GRPC_READ_MSG)
            rpc_grpc_reply_message(k, &m);
    }
    return 0;
}

static int rpc_grpc_on_frame_recv(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
    struct rpc_conn *c = user;
    if (frame->hd.type == NGHTTP2_GOAWAY) {
        c->goaway = true;
        c->goaway_last_id = frame->goaway.last_stream_id;
    }
    return 0;
}

static int rpc_grpc_on_stream_close(nghttp2_session *h2, int32_t id, uint32_t error_code,
                                    void *user)
{
    struct rpc_grpc_call *k = rpc_grpc_call_of(h2, id);
    if (!k)
        return 0;
    if (grpc_reader_partial(&k->rd))
        k->malformed = true; /* the reply stopped inside a message */
    rpc_grpc_finish(user, k, error_code);
    return 0;
}

/* ---- The request --------------------------------------------------------- */

static ssize_t rpc_grpc_read_request(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t length,
                                     uint32_t *data_flags, nghttp2_data_source *source, void *user)
{
    struct rpc_grpc_call *k = source->ptr;
    return h2_io_body_read(&k->body, buf, length, data_flags); /* EOF: END_STREAM */
}

/* Packs msg behind its prefix into the slot's buffer. */
static void rpc_grpc_pack(struct rpc_conn *c, struct rpc_grpc_call *k,
                          const Com__Stevenpg__Rvg__Message *msg)
{
    size_t n = com__stevenpg__rvg__message__get_packed_size(msg), len = GRPC_PREFIX_LEN + n;
    if (len > k->req_cap) {
        k->req_cap = len;
        k->req = mem_realloc(k->req, k->req_cap);
    }
    com__stevenpg__rvg__message__pack(msg, k->req + GRPC_PREFIX_LEN);
    if (c->gzip) {
        uint8_t *z;
        grpc_gzip_deflate(&c->gz, k->req + GRPC_PREFIX_LEN, n, GRPC_PREFIX_LEN, &z, &len);
        mem_free(k->req);
        k->req = z;
        k->req_cap = len;
    }
    grpc_prefix_write(k->req, c->gzip, (uint32_t)(len - GRPC_PREFIX_LEN));
    k->body = (struct h2_io_body){.data = k->req, .len = len};
}

/* ---- I/O ----------------------------------------------------------------- */

static void rpc_grpc_flush(struct rpc_conn *c)
{
    if (c->dead)
        return;
    const char *why = NULL;
    enum h2_io_flushed r = h2_io_flush(&c->x, c->loop, &why);
    if (r == H2_IO_ERROR)
        rpc_grpc_die(c, errno, why);
    else if (r == H2_IO_FINISHED)
        rpc_grpc_die(c, 0, "session finished (GOAWAY)");
}

static void rpc_grpc_session_new(struct rpc_conn *c)
{
    static const struct h2_io_callbacks cb = {
        .on_header = rpc_grpc_on_header,
        .on_frame_recv = rpc_grpc_on_frame_recv,
        .on_data_chunk_recv = rpc_grpc_on_data_chunk,
        .on_stream_close = rpc_grpc_on_stream_close,
    };
    static const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, RPC_GRPC_WINDOW},
    };
    h2_io_session(&c->x, false, &cb, c, settings, sizeof settings / sizeof settings[0],
                  RPC_GRPC_WINDOW);
}

/* Connecting failed: the only report is connected(err). */
static void rpc_grpc_connect_failed(struct rpc_conn *c, int err)
{
    c->dead = true;
    ev_io_stop(c->loop, &c->x.io);
    c->ev.connected(c->ev.ctx, c, err);
}

/* Advances the TLS handshake; once done, the connection is usable. */
static void rpc_grpc_handshake(struct rpc_conn *c)
{
    const char *why = NULL;
    int r = h2_io_handshake(&c->x, c->loop, &why);
    if (r < 0) {
        log_warn("grpc client %s: TLS: %s", c->authority, why);
        rpc_grpc_connect_failed(c, EPROTO);
    } else if (r == 0) {
        rpc_grpc_session_new(c);
        c->connected = true;
        c->ev.connected(c->ev.ctx, c, 0);
    }
}

/* The TCP connection is up (or failed): start TLS, or the session. */
static void rpc_grpc_connected(struct rpc_conn *c)
{
    int err = net_connect_result(c->x.io.fd);
    if (err) {
        rpc_grpc_connect_failed(c, err);
        return;
    }
    if (c->tls) {
        c->x.tls = tls_conn_new(c->tls, c->x.io.fd, c->server_name);
        rpc_grpc_handshake(c);
        return;
    }
    rpc_grpc_session_new(c);
    c->connected = true;
    ev_io_modify(c->loop, &c->x.io, EV_READ);
    c->ev.connected(c->ev.ctx, c, 0);
}

static void rpc_grpc_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct rpc_conn *c = io->data;
    c->depth++;
    if (c->x.tls && !c->connected) {
        rpc_grpc_handshake(c);
    } else if (!c->connected) {
        rpc_grpc_connected(c);
    } else if (h2_io_may_read(&c->x, events)) {
        const char *why = NULL;
        if (h2_io_read(&c->x, RPC_GRPC_READ_BUDGET, &why) < 0)
            rpc_grpc_die(c, errno, why);
    }
    if (!c->close_asked)
        rpc_grpc_flush(c);
    if (--c->depth == 0 && c->close_asked)
        rpc_grpc_destroy(c);
}

/* ---- The interface ------------------------------------------------------- */

static struct rpc_conn *rpc_grpc_connect(struct ev_loop *loop, const struct rpc_conn_opts *opts,
                                         const struct rpc_events *events, int *err)
{
    char why[NET_ERR_LEN];
    errno = 0;
    int fd = net_connect(opts->host, opts->port, why, sizeof why);
    if (fd < 0) {
        *err = errno ? errno : EINVAL;
        log_debug("grpc client: %s", why);
        return NULL;
    }
    struct rpc_conn *c = mem_calloc(1, sizeof *c);
    c->loop = loop;
    c->ev = *events;
    c->gzip = opts->gzip;
    c->tls = opts->tls;
    c->trace = opts->trace;
    if (c->trace)
        c->trace_id = trace_conn_id(c->trace);
    c->server_name = opts->server_name ? opts->server_name : opts->host;
    c->x.io.fd = fd;
    c->x.io.cb = rpc_grpc_on_io;
    c->x.io.data = c;
    if (ev_io_start(loop, &c->x.io, EV_WRITE) < 0) {
        *err = errno;
        close(fd);
        mem_free(c);
        return NULL;
    }
    bool v6 = strchr(opts->host, ':') != NULL;
    snprintf(c->authority, sizeof c->authority, v6 ? "[%s]:%d" : "%s:%d", opts->host, opts->port);
    c->ncalls = opts->max_in_flight ? opts->max_in_flight : 1;
    c->calls = mem_calloc(c->ncalls, sizeof *c->calls);
    for (unsigned i = c->ncalls; i-- > 0;) {
        c->calls[i].c = c;
        c->calls[i].next_free = c->free_calls;
        c->free_calls = &c->calls[i];
    }
    /* Pseudo-headers first, then the Call-Definition in the order
     * PROTOCOL-HTTP2.md gives. */
    size_t n = 0;
    c->hdrs[n++] = RPC_NV(":method", "POST");
    c->hdrs[n++] = RPC_NV(":scheme", c->tls ? "https" : "http");
    c->hdrs[n++] = RPC_NV(":path", rpc_grpc_path);
    c->hdrs[n++] = RPC_NV(":authority", c->authority);
    c->hdrs[n++] = RPC_NV("te", "trailers");
    c->hdrs[n++] = RPC_NV("content-type", "application/grpc");
    if (c->gzip)
        c->hdrs[n++] = RPC_NV("grpc-encoding", "gzip");
    c->hdrs[n++] = RPC_NV("grpc-accept-encoding", "gzip");
    c->hdrs[n++] = RPC_NV("user-agent", "grpc-c-shootout/" SHOOTOUT_VERSION);
    c->nhdrs = n;
    return c;
}

static int rpc_grpc_call(struct rpc_conn *c, const Com__Stevenpg__Rvg__Message *msg, void *call_ctx)
{
    /* After a GOAWAY (or with stream ids used up) nghttp2 would refuse the
     * stream while writing it, which would report the call from inside
     * this function; refusing here keeps that promise. */
    if (!c->connected || c->dead || c->close_asked || !c->free_calls || c->goaway ||
        !nghttp2_session_check_request_allowed(c->x.h2))
        return -1;
    struct rpc_grpc_call *k = c->free_calls;
    rpc_grpc_pack(c, k, msg);
    k->http_status = 0;
    k->grpc_status = -1;
    k->reply_gzip = k->reply_ok = k->malformed = false;
    k->nmsgs = 0;
    k->reply_len = 0;
    grpc_reader_init(&k->rd, RPC_GRPC_MAX_REPLY);
    nghttp2_data_provider prd = {.source.ptr = k, .read_callback = rpc_grpc_read_request};
    int32_t id = nghttp2_submit_request(c->x.h2, NULL, c->hdrs, c->nhdrs, &prd, k);
    if (id < 0)
        return -1;
    c->free_calls = k->next_free;
    k->id = id;
    k->ctx = call_ctx;
    k->traced = c->trace && trace_pick(c->trace, c->trace_calls++);
    if (k->traced)
        trace_line(c->trace, c->trace_id, '>', "grpc", "stream=%d POST %s len=%zu%s", id,
                   rpc_grpc_path, k->body.len - GRPC_PREFIX_LEN, c->gzip ? " gzip" : "");
    if (c->depth == 0) {
        /* A write error is left for the read side to report, not from in
         * here: the socket stays readable with its error. */
        const char *why;
        h2_io_flush(&c->x, c->loop, &why);
    }
    return 0;
}

static void rpc_grpc_close(struct rpc_conn *c)
{
    if (c->depth > 0) {
        c->close_asked = true;
        return;
    }
    rpc_grpc_destroy(c);
}

const struct rpc_protocol rpc_grpc_protocol = {
    .name = "grpc",
    .default_port = 50051,
    .alpn = "h2",
    .connect = rpc_grpc_connect,
    .call = rpc_grpc_call,
    .close = rpc_grpc_close,
};
