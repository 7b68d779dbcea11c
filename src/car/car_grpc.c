/* car_grpc.c - the Car service over gRPC: one nghttp2 server session per
 * connection (HTTP/2 cleartext with prior knowledge, or over TLS with ALPN
 * h2 when the server has a certificate) on the worker's loop.
 *
 * I/O (h2_io.h): the socket is watched level-triggered for reading; a
 * wake-up reads what the socket has (up to a budget; the rest is reported
 * again) and hands it to nghttp2, whose callbacks run the calls, and then
 * writes everything nghttp2 produced with one write. So a sequential
 * client's call is answered within the wake-up that brought it, and a
 * pipelining one gets one write per wake-up, not one per call; the loop's
 * prepare step has nothing left to do. While the socket is full the
 * connection waits for writability and stops reading, so a client that
 * does not read cannot make us queue answers without bound.
 *
 * Calls are unary: a request is HEADERS, exactly one Length-Prefixed-
 * Message (reassembled across DATA frames by grpc_frame's reader), then
 * END_STREAM. The answer is HEADERS, the reply message and trailers with
 * grpc-status 0 once END_STREAM arrives; an error is answered as soon as
 * it is known with a Trailers-Only response, followed by RST_STREAM
 * (NO_ERROR) if the client is still sending (PROTOCOL-HTTP2.md, "Early
 * Server Closure"). The status chosen for each failure follows grpc's
 * doc/statuscodes.md, as car_server.md lists.
 *
 * Deadlines: a call must have received its whole request by its
 * grpc-timeout, and by the server's request timeout in any case; otherwise
 * it ends with DEADLINE_EXCEEDED and RST_STREAM(CANCEL). One timer per
 * connection serves every stream's deadline and the idle timeout; before
 * that, the TLS handshake must be done within the request timeout.
 */
#include "car/car_grpc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "car.pb-c.h"
#include "car/car_worker.h"
#include "core/linger.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/tls.h"
#include "health.pb-c.h"
#include "http/grpc_frame.h"
#include "http/h2_io.h"

/* Bytes read from one connection per wake-up before the loop serves
 * others; level-triggered reading brings it back for the rest. */
#define CAR_GRPC_READ_BUDGET (256 * 1024)
#define CAR_GRPC_MAX_STREAMS 100
/* Request header list limit, counted as SETTINGS_MAX_HEADER_LIST_SIZE
 * counts (name + value + 32 per field); twice the 8 KiB default that
 * PROTOCOL-HTTP2.md suggests. */
#define CAR_GRPC_MAX_HEADER_LIST (16 * 1024)
/* Flow-control window per stream and per connection: a message of a few
 * MiB flows without waiting for WINDOW_UPDATE round trips. */
#define CAR_GRPC_WINDOW (1024 * 1024)
#define CAR_GRPC_PATH_LOG 96

struct car_grpc_stream;

/* A method we serve. handle() answers a request message of the method's
 * input type: it sets the reply with car_grpc_set_reply and returns
 * GRPC_OK, or returns an error status with *msg saying why. */
struct car_grpc_route {
    const ProtobufCServiceDescriptor *service;
    const char *method;
    int (*handle)(struct car_grpc_stream *s, const ProtobufCMessage *req, const char **msg);
};

struct car_grpc_conn {
    struct h2_io x; /* socket, session, pending output */
    struct car_worker *w;
    struct car_grpc_conn *prev, *next;
    struct ev_timer timer; /* stream deadlines and the idle timeout */
    uint64_t accepted_ms;
    uint64_t last_frame_ms;    /* a whole frame, not a byte: trickling does not count */
    bool spoke;                /* a frame came: the client's connection preface is in */
    uint64_t blocked_since_ms; /* while x.write_blocked */
    struct car_grpc_stream *streams;
    unsigned fails_pending; /* streams with fail_pending set */
    bool reading;           /* inside h2_io_read */
    bool lingering;         /* the session is over: dropping input (core/linger.h) */
    uint32_t dropped;       /* lingering: input dropped */
    struct grpc_gzip gz;
};

struct car_grpc_stream {
    struct car_grpc_conn *c;
    struct car_grpc_stream *prev, *next;
    int32_t id;
    /* From the request headers. */
    const struct car_grpc_route *route;      /* NULL: not a method we serve */
    const ProtobufCMethodDescriptor *method; /* the route's, from the .proto */
    char path[CAR_GRPC_PATH_LOG];            /* for messages and logs; may be cut */
    size_t header_bytes;
    bool headers_too_large, post, content_type_ok, bad_timeout, accept_gzip;
    bool known_service;
    enum grpc_encoding encoding;
    uint64_t timeout_ms; /* 0: none given */
    uint64_t deadline_ms; /* from the first HEADERS frame; lowered by grpc-timeout */
    bool deadline_is_client;
    bool headers_done;    /* the request's header block is complete */
    /* The request body. */
    struct grpc_reader rd;
    unsigned nmsgs;
    bool remote_done; /* END_STREAM received */
    bool answered;    /* a status was decided (and counted) */
    /* An error answer decided but not yet submitted (car_grpc_fail). */
    bool fail_pending;
    int fail_http, fail_status;
    char *fail_text; /* grpc-message, percent-encoded */
    int rst_after;   /* RST_STREAM code to send after the answer, or -1 */
    /* The reply message with its prefix, once the request was handled. */
    struct h2_io_body reply;
    uint8_t *reply_heap; /* the reply's bytes when not in reply_inline */
    bool reply_gzip;
    uint8_t reply_inline[32];
};

/* ---- Methods -------------------------------------------------------------- */

/* MessageService/send: as the article's server, answer
 * Result{status: "successful"} to any well-formed Message. */
static int car_grpc_send(struct car_grpc_stream *s, const ProtobufCMessage *req, const char **msg);
/* grpc.health.v1.Health/Check: the server as a whole ("") and the Car
 * service are SERVING; any other name is NOT_FOUND (doc/health-checking.md). */
static int car_grpc_check(struct car_grpc_stream *s, const ProtobufCMessage *req, const char **msg);

static const struct car_grpc_route car_grpc_routes[] = {
    {&com__stevenpg__rvg__message_service__descriptor, "send", car_grpc_send},
    {&grpc__health__v1__health__descriptor, "Check", car_grpc_check},
};
#define CAR_GRPC_NROUTES (sizeof car_grpc_routes / sizeof car_grpc_routes[0])

/* ---- Header arrays (static: nghttp2 references them without copying) ---- */

#define CAR_NV(n, v)                                                                               \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1,                              \
            NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE                           \
    }

/* What we accept, announced on every response (PROTOCOL-HTTP2.md lists it
 * among the Response-Headers; compression.md requires it on UNIMPLEMENTED
 * for an unsupported encoding). */
#define CAR_GRPC_ACCEPT "identity,gzip"

static const nghttp2_nv car_grpc_reply_headers[] = {
    CAR_NV(":status", "200"), CAR_NV("content-type", "application/grpc"),
    CAR_NV("grpc-accept-encoding", CAR_GRPC_ACCEPT),
    CAR_NV("grpc-encoding", "gzip"), /* only with a compressed reply */
};
static const nghttp2_nv car_grpc_ok_trailers[] = {CAR_NV("grpc-status", "0")};

static const char *car_grpc_http_status(int http)
{
    switch (http) {
    case 405:
        return "405";
    case 415:
        return "415";
    default:
        return "200";
    }
}

/* ---- Calls ----------------------------------------------------------------- */

static void car_grpc_count(struct car_grpc_stream *s, int status, const char *msg)
{
    struct car_worker *w = s->c->w;
    w->stats.grpc_calls++;
    if (status != GRPC_OK)
        w->stats.grpc_errors++;
    if (w->cfg->log_requests)
        log_debug("grpc fd %d stream %d %s: %s%s%s", s->c->x.io.fd, s->id, s->path,
                  grpc_status_name(status), msg ? ": " : "", msg ? msg : "");
}

/* Sends the error answer car_grpc_fail recorded: one Trailers-Only
 * HEADERS frame, then RST_STREAM if the client is still sending: NO_ERROR
 * (the answer is complete, stop sending; PROTOCOL-HTTP2.md, "Early Server
 * Closure"), or CANCEL for an expired deadline, as the same document asks. */
static void car_grpc_submit_fail(struct car_grpc_stream *s)
{
    s->fail_pending = false;
    s->c->fails_pending--;
    const char *http_text = car_grpc_http_status(s->fail_http);
    const char *status_text = grpc_status_text(s->fail_status);
    nghttp2_nv nv[] = {
        {(uint8_t *)":status", (uint8_t *)http_text, 7, strlen(http_text), NGHTTP2_NV_FLAG_NONE},
        car_grpc_reply_headers[1], /* content-type */
        car_grpc_reply_headers[2], /* grpc-accept-encoding */
        {(uint8_t *)"grpc-status", (uint8_t *)status_text, 11, strlen(status_text),
         NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"grpc-message", (uint8_t *)s->fail_text, 12, strlen(s->fail_text),
         NGHTTP2_NV_FLAG_NONE},
    };
    /* The RST_STREAM goes out once the answer has (car_grpc_on_frame_send):
     * submitted now, it would make nghttp2 drop the queued answer. */
    if (!s->remote_done)
        s->rst_after = s->fail_status == GRPC_DEADLINE_EXCEEDED ? NGHTTP2_CANCEL : NGHTTP2_NO_ERROR;
    int rv = nghttp2_submit_response(s->c->x.h2, s->id, nv, sizeof nv / sizeof nv[0], NULL);
    if (rv != 0)
        log_warn("grpc fd %d stream %d: cannot answer: %s", s->c->x.io.fd, s->id,
                 nghttp2_strerror(rv));
}

/* Ends the call with an error status and no message (HTTP `http`: 200
 * unless the request was not gRPC at all). Found while reading, the answer
 * is sent once the rest of what was read is processed: if the client's
 * END_STREAM was in there too, no RST_STREAM is needed. That matters
 * beyond saving a frame: grpc-core clients (grpcio 1.51) turn a
 * RST_STREAM(NO_ERROR) that arrives after the status into INTERNAL, so a
 * client that sent its whole request at once must not get one. */
static void car_grpc_fail(struct car_grpc_stream *s, int http, int status, const char *msg)
{
    if (s->answered)
        return;
    s->answered = true;
    char text[256];
    grpc_pct_encode(msg, strlen(msg), text, sizeof text);
    s->fail_text = mem_strdup(text);
    s->fail_http = http;
    s->fail_status = status;
    s->fail_pending = true;
    s->c->fails_pending++;
    car_grpc_count(s, status, msg);
    if (!s->c->reading)
        car_grpc_submit_fail(s);
}

/* Sets the reply to message m, packed with protobuf-c behind its prefix,
 * gzip-compressed if the client sent gzip (as grpc-go answers). */
static void car_grpc_set_reply(struct car_grpc_stream *s, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m), len;
    uint8_t *out;
    if (s->reply_gzip) {
        uint8_t *plain = mem_alloc(n ? n : 1);
        protobuf_c_message_pack(m, plain);
        grpc_gzip_deflate(&s->c->gz, plain, n, GRPC_PREFIX_LEN, &out, &len);
        mem_free(plain);
        grpc_prefix_write(out, true, (uint32_t)(len - GRPC_PREFIX_LEN));
        s->reply_heap = out;
    } else {
        len = GRPC_PREFIX_LEN + n;
        out = len <= sizeof s->reply_inline ? s->reply_inline : (s->reply_heap = mem_alloc(len));
        grpc_prefix_write(out, false, (uint32_t)n);
        protobuf_c_message_pack(m, out + GRPC_PREFIX_LEN);
    }
    s->reply = (struct h2_io_body){.data = out, .len = len};
}

static ssize_t car_grpc_read_reply(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t length,
                                   uint32_t *data_flags, nghttp2_data_source *source, void *user)
{
    struct car_grpc_stream *s = source->ptr;
    ssize_t n = h2_io_body_read(&s->reply, buf, length, data_flags);
    if (*data_flags & NGHTTP2_DATA_FLAG_EOF) {
        *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM; /* the trailers end it */
        if (nghttp2_submit_trailer(h2, id, car_grpc_ok_trailers, 1) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return n;
}

/* Answers with the reply set by the handler: HEADERS, DATA, trailers. */
static void car_grpc_answer(struct car_grpc_stream *s)
{
    s->answered = true;
    nghttp2_data_provider prd = {.source.ptr = s, .read_callback = car_grpc_read_reply};
    size_t nv = s->reply_gzip ? 4 : 3;
    int rv = nghttp2_submit_response(s->c->x.h2, s->id, car_grpc_reply_headers, nv, &prd);
    if (rv != 0)
        log_warn("grpc fd %d stream %d: cannot answer: %s", s->c->x.io.fd, s->id,
                 nghttp2_strerror(rv));
    car_grpc_count(s, GRPC_OK, NULL);
}

static int car_grpc_send(struct car_grpc_stream *s, const ProtobufCMessage *req, const char **msg)
{
    Com__Stevenpg__Rvg__Result r = COM__STEVENPG__RVG__RESULT__INIT;
    r.status = (char *)"successful";
    car_grpc_set_reply(s, &r.base);
    return GRPC_OK;
}

static int car_grpc_check(struct car_grpc_stream *s, const ProtobufCMessage *req, const char **msg)
{
    const Grpc__Health__V1__HealthCheckRequest *q =
        (const Grpc__Health__V1__HealthCheckRequest *)req;
    if (q->service[0] && strcmp(q->service, com__stevenpg__rvg__message_service__descriptor.name)) {
        *msg = "unknown service";
        return GRPC_NOT_FOUND;
    }
    Grpc__Health__V1__HealthCheckResponse r = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    r.status = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    car_grpc_set_reply(s, &r.base);
    return GRPC_OK;
}

/* One complete request message. Errors are answered at once; a reply
 * waits for END_STREAM, which proves there is no second message. */
static void car_grpc_message(struct car_grpc_stream *s, const struct grpc_msg *m)
{
    if (++s->nmsgs > 1) {
        /* A request cardinality violation (statuscodes.md). */
        car_grpc_fail(s, 200, GRPC_UNIMPLEMENTED, "more than one request message in a unary call");
        return;
    }
    const uint8_t *data = m->data;
    size_t len = m->len;
    uint8_t *plain = NULL;
    if (m->compressed) {
        if (s->encoding != GRPC_ENC_GZIP) {
            car_grpc_fail(s, 200, GRPC_INTERNAL, "compressed message without grpc-encoding");
            return;
        }
        int st = grpc_gzip_inflate(&s->c->gz, data, len, s->c->w->cfg->max_message, &plain, &len);
        if (st != GRPC_OK) {
            car_grpc_fail(s, 200, st,
                          st == GRPC_RESOURCE_EXHAUSTED
                              ? "decompressed message larger than the server's limit"
                              : "cannot decompress the message (gzip)");
            return;
        }
        data = plain;
    }
    ProtobufCMessage *req = protobuf_c_message_unpack(s->method->input, NULL, len, data);
    mem_free(plain);
    if (!req) {
        car_grpc_fail(s, 200, GRPC_INTERNAL, "cannot parse the request message");
        return;
    }
    s->reply_gzip = s->encoding == GRPC_ENC_GZIP && s->accept_gzip;
    const char *msg = NULL;
    int st = s->route->handle(s, req, &msg);
    protobuf_c_message_free_unpacked(req, NULL);
    if (st != GRPC_OK)
        car_grpc_fail(s, 200, st, msg);
}

/* The client's END_STREAM. */
static void car_grpc_request_end(struct car_grpc_stream *s)
{
    if (s->answered)
        return;
    if (grpc_reader_partial(&s->rd))
        car_grpc_fail(s, 200, GRPC_INTERNAL, "request ended inside a message");
    else if (s->nmsgs == 0)
        car_grpc_fail(s, 200, GRPC_UNIMPLEMENTED, "no request message in a unary call");
    else
        car_grpc_answer(s);
}

static void car_grpc_arm_timer(struct car_grpc_conn *c, uint64_t when)
{
    uint64_t now = ev_now(c->w->loop);
    if (ev_timer_active(&c->timer) && c->timer.when_ms <= when)
        return;
    ev_timer_start(c->w->loop, &c->timer, when > now ? when - now : 0, 0);
}

/* The request headers are complete: check them, and bring the deadline in
 * to the client's grpc-timeout if that is sooner. */
static void car_grpc_request_headers(struct car_grpc_stream *s)
{
    char msg[CAR_GRPC_PATH_LOG + 64];
    s->headers_done = true;
    if (s->headers_too_large) {
        car_grpc_fail(s, 200, GRPC_RESOURCE_EXHAUSTED, "request headers too large");
    } else if (!s->content_type_ok) {
        car_grpc_fail(s, 415, GRPC_INTERNAL, "content-type must be application/grpc");
    } else if (!s->post) {
        car_grpc_fail(s, 405, GRPC_INTERNAL, "method must be POST");
    } else if (!s->route) {
        snprintf(msg, sizeof msg, "unknown %s %s", s->known_service ? "method" : "service",
                 s->path);
        car_grpc_fail(s, 200, GRPC_UNIMPLEMENTED, msg);
    } else if (s->bad_timeout) {
        car_grpc_fail(s, 200, GRPC_INTERNAL, "malformed grpc-timeout");
    } else if (s->encoding == GRPC_ENC_OTHER) {
        car_grpc_fail(s, 200, GRPC_UNIMPLEMENTED,
                      "grpc-encoding not supported (only " CAR_GRPC_ACCEPT ")");
    } else {
        uint64_t client = ev_now(s->c->w->loop) + s->timeout_ms;
        s->deadline_is_client = s->timeout_ms && client <= s->deadline_ms;
        if (s->deadline_is_client)
            s->deadline_ms = client;
        car_grpc_arm_timer(s->c, s->deadline_ms);
    }
}

/* :path "/" service "/" method, matched against the routes. */
static void car_grpc_route(struct car_grpc_stream *s, const char *path, size_t len)
{
    snprintf(s->path, sizeof s->path, "%.*s", (int)len, path);
    const char *slash = len > 1 && path[0] == '/' ? memchr(path + 1, '/', len - 1) : NULL;
    if (!slash)
        return;
    const char *svc = path + 1, *method = slash + 1;
    size_t svc_len = (size_t)(slash - svc);
    for (size_t i = 0; i < CAR_GRPC_NROUTES; i++) {
        const struct car_grpc_route *r = &car_grpc_routes[i];
        const char *name = r->service->name;
        if (strlen(name) != svc_len || memcmp(name, svc, svc_len) != 0)
            continue;
        s->known_service = true;
        /* nghttp2 NUL-terminates header values, so method is a C string;
         * a NUL inside the path (which nghttp2 rejects anyway) would just
         * not match. */
        if (strcmp(method, r->method) == 0) {
            s->route = r;
            s->method = protobuf_c_service_descriptor_get_method_by_name(r->service, r->method);
            return;
        }
    }
}

static bool car_grpc_name_is(const uint8_t *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* ---- nghttp2 callbacks ----------------------------------------------------- */

static struct car_grpc_stream *car_grpc_stream_of(nghttp2_session *h2, int32_t id)
{
    return nghttp2_session_get_stream_user_data(h2, id);
}

static int car_grpc_on_begin_headers(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
    struct car_grpc_conn *c = user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct car_grpc_stream *s = mem_calloc(1, sizeof *s);
    s->c = c;
    s->id = frame->hd.stream_id;
    s->rst_after = -1;
    /* A header block sent in trickled CONTINUATION frames counts too. */
    s->deadline_ms = ev_now(c->w->loop) + c->w->cfg->request_timeout_ms;
    car_grpc_arm_timer(c, s->deadline_ms);
    grpc_reader_init(&s->rd, c->w->cfg->max_message);
    s->next = c->streams;
    if (c->streams)
        c->streams->prev = s;
    c->streams = s;
    nghttp2_session_set_stream_user_data(h2, s->id, s);
    return 0;
}

static int car_grpc_on_header(nghttp2_session *h2, const nghttp2_frame *frame, const uint8_t *name,
                              size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                              void *user)
{
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* request trailers: nothing in them matters to a unary call */
    struct car_grpc_stream *s = car_grpc_stream_of(h2, frame->hd.stream_id);
    if (!s || s->headers_too_large)
        return 0;
    s->header_bytes += namelen + valuelen + 32;
    if (s->header_bytes > CAR_GRPC_MAX_HEADER_LIST) {
        s->headers_too_large = true;
        return 0;
    }
    const char *v = (const char *)value;
    if (car_grpc_name_is(name, namelen, ":method")) {
        s->post = valuelen == 4 && memcmp(v, "POST", 4) == 0;
    } else if (car_grpc_name_is(name, namelen, ":path")) {
        car_grpc_route(s, v, valuelen);
    } else if (car_grpc_name_is(name, namelen, "content-type")) {
        s->content_type_ok = grpc_content_type_ok(v, valuelen);
    } else if (car_grpc_name_is(name, namelen, "grpc-timeout")) {
        uint64_t ns;
        if (grpc_timeout_parse(v, valuelen, &ns) < 0)
            s->bad_timeout = true;
        else
            s->timeout_ms = grpc_timeout_ms(ns) ? grpc_timeout_ms(ns) : 1;
    } else if (car_grpc_name_is(name, namelen, "grpc-encoding")) {
        s->encoding = grpc_encoding_parse(v, valuelen);
    } else if (car_grpc_name_is(name, namelen, "grpc-accept-encoding")) {
        s->accept_gzip = grpc_list_has(v, valuelen, "gzip");
    }
    return 0;
}

static int car_grpc_on_frame_recv(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
    struct car_grpc_conn *c = user;
    c->last_frame_ms = ev_now(c->w->loop);
    c->spoke = true;
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    struct car_grpc_stream *s = car_grpc_stream_of(h2, frame->hd.stream_id);
    if (!s)
        return 0;
    bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
    if (end)
        s->remote_done = true; /* before answering: no RST_STREAM needed then */
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        car_grpc_request_headers(s);
    if (end)
        car_grpc_request_end(s);
    return 0;
}

static int car_grpc_on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t id,
                                  const uint8_t *data, size_t len, void *user)
{
    struct car_grpc_stream *s = car_grpc_stream_of(h2, id);
    if (s && (flags & NGHTTP2_FLAG_END_STREAM))
        s->remote_done = true; /* this is the last DATA frame */
    while (s && !s->answered && len > 0) {
        struct grpc_msg m;
        size_t used;
        enum grpc_read r = grpc_reader_feed(&s->rd, data, len, &used, &m);
        data += used;
        len -= used;
        if (r == GRPC_READ_TOO_LARGE)
            car_grpc_fail(s, 200, GRPC_RESOURCE_EXHAUSTED,
                          "request message larger than the server's limit");
        else if (r == GRPC_READ_MSG)
            car_grpc_message(s, &m);
    }
    return 0;
}

static int car_grpc_on_frame_send(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    struct car_grpc_stream *s = car_grpc_stream_of(h2, frame->hd.stream_id);
    if (s && s->rst_after >= 0) {
        nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, s->id, (uint32_t)s->rst_after);
        s->rst_after = -1;
    }
    return 0;
}

static void car_grpc_stream_free(struct car_grpc_stream *s)
{
    struct car_grpc_conn *c = s->c;
    if (s->prev)
        s->prev->next = s->next;
    else
        c->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    grpc_reader_free(&s->rd);
    mem_free(s->reply_heap);
    if (s->fail_pending)
        c->fails_pending--;
    mem_free(s->fail_text);
    mem_free(s);
}

static int car_grpc_on_stream_close(nghttp2_session *h2, int32_t id, uint32_t error_code,
                                    void *user)
{
    struct car_grpc_stream *s = car_grpc_stream_of(h2, id);
    if (!s)
        return 0;
    if (!s->answered) {
        /* Reset by the client, or by nghttp2 for a malformed request. */
        char msg[64];
        snprintf(msg, sizeof msg, "stream reset (%s)", nghttp2_http2_strerror(error_code));
        car_grpc_count(s, GRPC_CANCELLED, msg);
    }
    car_grpc_stream_free(s);
    return 0;
}

static void car_grpc_session_new(struct car_grpc_conn *c)
{
    static const struct h2_io_callbacks cb = {
        .on_begin_headers = car_grpc_on_begin_headers,
        .on_header = car_grpc_on_header,
        .on_frame_recv = car_grpc_on_frame_recv,
        .on_data_chunk_recv = car_grpc_on_data_chunk,
        .on_frame_send = car_grpc_on_frame_send,
        .on_stream_close = car_grpc_on_stream_close,
    };
    static const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, CAR_GRPC_MAX_STREAMS},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, CAR_GRPC_MAX_HEADER_LIST},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, CAR_GRPC_WINDOW},
    };
    h2_io_session(&c->x, true, &cb, c, settings, sizeof settings / sizeof settings[0],
                  CAR_GRPC_WINDOW);
}

/* ---- Connections ----------------------------------------------------------- */

static void car_grpc_end_streams(struct car_grpc_conn *c)
{
    while (c->streams) {
        struct car_grpc_stream *s = c->streams;
        if (!s->answered)
            car_grpc_count(s, GRPC_CANCELLED, "connection closed");
        car_grpc_stream_free(s);
    }
}

static void car_grpc_close(struct car_grpc_conn *c, const char *why)
{
    struct car_worker *w = c->w;
    int fd = c->x.io.fd; /* h2_io_close forgets it */
    if (w->cfg->log_requests)
        log_debug("grpc fd %d: connection closed (%s)", c->x.io.fd, why);
    car_grpc_end_streams(c);
    h2_io_close(&c->x, w->loop);
    ev_timer_stop(w->loop, &c->timer);
    grpc_gzip_free(&c->gz);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->grpc_conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    mem_free(c);
    car_worker_conn_closed(w, fd);
}

/* The session finished with its GOAWAY out: the connection lingers
 * (core/linger.h) so that a client still sending reads the GOAWAY rather
 * than a reset, LINGER_MS at most. */
static void car_grpc_linger(struct car_grpc_conn *c)
{
    car_grpc_end_streams(c);
    h2_io_linger(&c->x, c->w->loop);
    c->lingering = true;
    ev_timer_stop(c->w->loop, &c->timer);
    ev_timer_start(c->w->loop, &c->timer, LINGER_MS, 0);
}

/* Lingering: drops what comes until the client closes. Past
 * LINGER_MAX_BYTES the socket is no longer read, and a wake-up can only be
 * its hang-up. */
static void car_grpc_linger_read(struct car_grpc_conn *c)
{
    enum linger_read r =
        c->dropped < LINGER_MAX_BYTES ? linger_discard(c->x.io.fd, &c->dropped) : LINGER_EOF;
    if (r == LINGER_EOF)
        car_grpc_close(c, "session finished");
    else if (r == LINGER_FULL)
        ev_io_modify(c->w->loop, &c->x.io, 0);
}

/* Writes what nghttp2 has; closes the connection when it failed, and
 * lingers when it is finished (nghttp2 wants neither to read nor to write:
 * after a GOAWAY once its streams are done). Returns false if it closed or
 * lingers. */
static bool car_grpc_flush(struct car_grpc_conn *c)
{
    const char *why = NULL;
    bool was_blocked = c->x.write_blocked;
    enum h2_io_flushed r = h2_io_flush(&c->x, c->w->loop, &why);
    if (r == H2_IO_ERROR) {
        car_grpc_close(c, why);
        return false;
    }
    if (r == H2_IO_FINISHED) {
        car_grpc_linger(c);
        return false;
    }
    if (c->x.write_blocked && !was_blocked)
        c->blocked_since_ms = ev_now(c->w->loop);
    return true;
}

/* Advances the TLS handshake; false if the connection is not ready (yet,
 * or closed). A refused client is logged whatever -v says: it is a
 * configuration problem on one side or the other. */
static bool car_grpc_handshake(struct car_grpc_conn *c)
{
    const char *why = NULL;
    int r = h2_io_handshake(&c->x, c->w->loop, &why);
    if (r < 0) {
        log_info("grpc fd %d: TLS connection refused: %s", c->x.io.fd, why);
        car_grpc_close(c, why);
        return false;
    }
    if (r == 0 && c->w->cfg->log_requests)
        log_debug("grpc fd %d: %s handshake done, h2", c->x.io.fd, tls_protocol(c->x.tls));
    return r == 0;
}

static void car_grpc_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct car_grpc_conn *c = io->data;
    if (c->lingering) {
        car_grpc_linger_read(c);
        return;
    }
    if (!h2_io_ready(&c->x)) {
        if (!car_grpc_handshake(c))
            return; /* the timer set at the accept still bounds the preface */
    } else if (h2_io_may_read(&c->x, events)) {
        const char *why = NULL;
        c->reading = true;
        int r = h2_io_read(&c->x, CAR_GRPC_READ_BUDGET, &why);
        c->reading = false;
        if (r < 0) {
            car_grpc_close(c, why);
            return;
        }
        for (struct car_grpc_stream *s = c->streams; s && c->fails_pending; s = s->next)
            if (s->fail_pending)
                car_grpc_submit_fail(s);
    }
    car_grpc_flush(c);
}

static void car_grpc_goaway(struct car_grpc_conn *c)
{
    nghttp2_submit_goaway(c->x.h2, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(c->x.h2), NGHTTP2_NO_ERROR, NULL,
                          0);
}

/* The connection preface, deadlines of calls still receiving their
 * request, and the idle timeout. The TLS handshake and the client's
 * connection preface must be in within the request timeout of the accept;
 * a call's request within the request timeout of its first HEADERS frame
 * (a header block still incomplete then closes the connection: nothing
 * else may come on it meanwhile). A connection that sent no whole frame
 * for idle_timeout while no call was receiving its request, or whose
 * client took none of our output for as long (answers stuck behind a full
 * socket or a closed flow-control window count as nothing), is closed
 * with a GOAWAY, if the socket takes it. Calls still receiving need no
 * exception: their deadline ends them within the request timeout. */
static void car_grpc_on_timer(struct ev_loop *loop, struct ev_timer *t)
{
    struct car_grpc_conn *c = t->data;
    if (c->lingering) {
        car_grpc_close(c, "linger time over");
        return;
    }
    if (!h2_io_ready(&c->x)) {
        log_info("grpc fd %d: TLS connection refused: no handshake within the request timeout",
                 c->x.io.fd);
        car_grpc_close(c, "TLS handshake timeout");
        return;
    }
    uint64_t now = ev_now(loop), idle = c->w->cfg->idle_timeout_ms;
    uint64_t next = (c->x.write_blocked ? c->blocked_since_ms : c->last_frame_ms) + idle;
    const char *cut = NULL;
    if (!c->spoke && now - c->accepted_ms >= c->w->cfg->request_timeout_ms)
        cut = "no connection preface within the request timeout";
    else if (!c->spoke && c->accepted_ms + c->w->cfg->request_timeout_ms < next)
        next = c->accepted_ms + c->w->cfg->request_timeout_ms;
    bool receiving = false;
    for (struct car_grpc_stream *s = c->streams; s && !cut; s = s->next) {
        if (s->answered || !s->deadline_ms)
            continue;
        if (s->deadline_ms <= now && !s->headers_done) {
            cut = "request headers not complete within the request timeout";
        } else if (s->deadline_ms <= now) {
            car_grpc_fail(s, 200, GRPC_DEADLINE_EXCEEDED,
                          s->deadline_is_client
                              ? "deadline exceeded before the request was complete"
                              : "request not complete within the server's request timeout");
        } else {
            receiving = true;
            if (s->deadline_ms < next)
                next = s->deadline_ms;
        }
    }
    bool idle_now = c->x.write_blocked ? now - c->blocked_since_ms >= idle
                                       : !receiving && now - c->last_frame_ms >= idle;
    if (idle_now && !cut)
        cut = c->x.write_blocked ? "client stopped reading" : "idle";
    if (cut) {
        car_grpc_goaway(c);
        if (car_grpc_flush(c))
            car_grpc_close(c, cut);
        return;
    }
    if (next <= now) /* idle time passed while a call was receiving: look again later */
        next = now + idle;
    ev_timer_start(loop, t, next - now, 0);
    car_grpc_flush(c);
}

void car_grpc_accept(struct car_worker *w, int fd)
{
    struct car_grpc_conn *c = mem_calloc(1, sizeof *c);
    c->w = w;
    c->x.io.fd = fd;
    c->x.io.cb = car_grpc_on_io;
    c->x.io.data = c;
    if (w->grpc_tls)
        c->x.tls = tls_conn_new(w->grpc_tls, fd, NULL);
    if (ev_io_start(w->loop, &c->x.io, EV_READ) < 0) {
        log_warn("cannot watch fd %d: %s", fd, strerror(errno));
        tls_conn_free(c->x.tls);
        close(fd);
        mem_free(c);
        car_worker_conn_closed(w, fd);
        return;
    }
    car_grpc_session_new(c);
    c->accepted_ms = c->last_frame_ms = ev_now(w->loop);
    ev_timer_init(&c->timer, car_grpc_on_timer, c);
    ev_timer_start(w->loop, &c->timer,
                   w->cfg->request_timeout_ms < w->cfg->idle_timeout_ms ? w->cfg->request_timeout_ms
                                                                        : w->cfg->idle_timeout_ms,
                   0);
    c->next = w->grpc_conns;
    if (w->grpc_conns)
        w->grpc_conns->prev = c;
    w->grpc_conns = c;
    if (w->cfg->log_requests)
        log_debug("grpc fd %d: connection accepted", fd);
    car_grpc_flush(c); /* our SETTINGS, the server connection preface; after TLS's */
}

bool car_grpc_prepare(struct car_worker *w) { return false; }

void car_grpc_drain(struct car_worker *w)
{
    struct car_grpc_conn *next;
    for (struct car_grpc_conn *c = w->grpc_conns; c; c = next) {
        next = c->next;
        if (c->lingering)
            continue; /* it ends on its own, LINGER_MS at most */
        if (!h2_io_ready(&c->x)) {
            car_grpc_close(c, "server draining"); /* no call can be in progress */
            continue;
        }
        car_grpc_goaway(c);
        car_grpc_flush(c);
    }
}

void car_grpc_close_all(struct car_worker *w)
{
    while (w->grpc_conns)
        car_grpc_close(w->grpc_conns, "server stopping");
}
