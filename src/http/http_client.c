/* http_client.c - the HTTP/1.1 client connection of http_client.h.
 *
 * Sockets are registered edge-triggered once, so the hot path makes no
 * epoll_ctl calls. A request is written at once when it is the only one in
 * flight (a sequential caller measures one round trip per request, so
 * nothing may wait for the loop); otherwise requests gather and go out in
 * one write per loop iteration, from a zero-delay timer.
 */
#include "http/http_client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/inbuf.h"
#include "core/mem.h"
#include "core/net.h"
#include "core/outq.h"
#include "http/http1.h"

#define HC_MAX_HEAD 16384
#define HC_MAX_HEADERS 64
#define HC_READ_CHUNK (16 * 1024)
#define HC_DEFAULT_MAX_BODY (16u << 20)

enum hc_state { HC_CONNECTING, HC_OPEN, HC_CLOSED };

/* Where the response in progress stands. */
enum hc_read { READ_HEAD, READ_LENGTH, READ_CHUNKED, READ_UNTIL_CLOSE };

/* How the body is encoded. */
enum hc_coding { CODING_IDENTITY, CODING_ZLIB };

struct http_conn {
    struct ev_loop *loop;
    struct ev_io io;
    struct ev_timer flush_timer; /* zero-delay: write what gathered this iteration */
    struct ev_timer timeout;     /* connect, then the answer in progress */
    struct http_events events;
    struct http_conn_opts opts;
    uint8_t state;   /* enum hc_state */
    uint8_t read;    /* enum hc_read */
    uint8_t coding;  /* enum hc_coding */
    bool blocked;    /* socket full: wait for a writable edge */
    bool freed;      /* closed inside a callback */
    bool zinit;      /* zs is initialised */
    unsigned depth;  /* our handlers on the stack; free only at 0 */
    int write_error; /* errno of a write that failed inside request() */
    void **reqs;     /* ring of the req_ctx of requests in flight */
    unsigned head, count;
    struct outq out;
    struct inbuf in;
    /* The response being read. */
    int status;
    bool keep_alive;
    uint64_t body_left; /* READ_LENGTH */
    uint64_t body_raw;  /* body bytes on the wire so far */
    struct http1_chunked chunked;
    uint64_t body_len; /* decoded bytes so far */
    char *body;        /* the first opts.body_keep of them */
    size_t body_kept, body_cap;
    z_stream zs;
    char host[72]; /* Host field value */
    /* --trace: the connection's id, its requests and answers so far (the
     * nth answer answers the nth request), whether the response being read
     * is traced, and the start of its body. */
    unsigned trace_id;
    uint64_t trace_sent, trace_answered;
    bool trace_resp;
    char *trace_body;
    size_t trace_body_len;
};

/* Reads go here first; only a partial response is copied to the
 * connection (inbuf.h). One per thread, as loops are. */
static _Thread_local uint8_t hc_scratch[HC_READ_CHUNK];

/* ---- lifetime ------------------------------------------------------------ */

static void hc_close_fd(struct http_conn *c)
{
    if (c->state == HC_CLOSED)
        return;
    ev_io_stop(c->loop, &c->io);
    close(c->io.fd);
    ev_timer_stop(c->loop, &c->flush_timer);
    ev_timer_stop(c->loop, &c->timeout);
    c->state = HC_CLOSED;
    outq_clear(&c->out);
    inbuf_free(&c->in);
}

static void hc_free(struct http_conn *c)
{
    hc_close_fd(c);
    mem_free(c->trace_body);
    if (c->zinit)
        inflateEnd(&c->zs);
    mem_free(c->body);
    mem_free(c->reqs);
    mem_free(c);
}

static void hc_enter(struct http_conn *c) { c->depth++; }

/* Leaves a handler; true if c is gone and must not be touched. */
static bool hc_leave(struct http_conn *c)
{
    if (--c->depth == 0 && c->freed) {
        hc_free(c);
        return true;
    }
    return false;
}

static void *hc_pop(struct http_conn *c)
{
    void *req_ctx = c->reqs[c->head];
    c->head = (c->head + 1) % c->opts.max_in_flight;
    c->count--;
    return req_ctx;
}

/* Closes the connection and reports the requests in flight: the first with
 * outcome and code, the rest as closed, until the caller closes us. */
static void hc_abort(struct http_conn *c, enum http_outcome outcome, int code)
{
    hc_close_fd(c);
    while (c->count > 0 && !c->freed) {
        void *req_ctx = hc_pop(c);
        c->events.done(c->events.ctx, c, req_ctx, outcome, NULL, code);
        outcome = HTTP_E_CLOSED;
        code = 0;
    }
}

/* (Re)arms the answer timeout while requests are in flight. */
static void hc_arm_timeout(struct http_conn *c)
{
    if (!c->opts.timeout_ms || c->state != HC_OPEN)
        return;
    if (c->count > 0)
        ev_timer_start(c->loop, &c->timeout, c->opts.timeout_ms, 0);
    else
        ev_timer_stop(c->loop, &c->timeout);
}

static void hc_on_timeout(struct ev_loop *loop, struct ev_timer *t)
{
    struct http_conn *c = t->data;
    hc_enter(c);
    if (c->state == HC_CONNECTING) {
        hc_close_fd(c);
        c->events.connected(c->events.ctx, c, ETIMEDOUT);
    } else {
        hc_abort(c, HTTP_E_TIMEOUT, 0);
    }
    hc_leave(c);
}

/* ---- output -------------------------------------------------------------- */

/* Writes what is queued. 0, or -1 with errno once the connection is dead. */
static int hc_flush(struct http_conn *c)
{
    if (c->blocked || outq_pending(&c->out) == 0)
        return 0;
    int rc = outq_flush(&c->out, c->io.fd);
    if (rc < 0)
        return -1;
    c->blocked = rc == 1;
    return 0;
}

static void hc_on_flush_timer(struct ev_loop *loop, struct ev_timer *t)
{
    struct http_conn *c = t->data;
    hc_enter(c);
    if (c->write_error)
        hc_abort(c, HTTP_E_CLOSED, c->write_error);
    else if (hc_flush(c) < 0)
        hc_abort(c, HTTP_E_CLOSED, errno);
    hc_leave(c);
}

/* ---- --trace ------------------------------------------------------------- */

static void hc_trace_request(struct http_conn *c, const void *head, size_t head_len,
                             const void *body, size_t body_len)
{
    struct http_tracer *t = c->opts.trace;
    if (!t->pick(t, c->trace_sent++))
        return;
    t->head(t, c->trace_id, '>', head, head_len);
    if (body_len)
        t->body(t, c->trace_id, '>', body, body_len, body_len);
}

/* A response head (interim or final) of head_len bytes; the final one
 * decides whether its body is kept for the trace. */
static void hc_trace_head(struct http_conn *c, const uint8_t *head, size_t head_len, bool final)
{
    struct http_tracer *t = c->opts.trace;
    bool picked = t->pick(t, c->trace_answered);
    if (final) {
        c->trace_resp = picked;
        c->trace_body_len = 0;
    }
    if (picked)
        t->head(t, c->trace_id, '<', (const char *)head, head_len);
}

/* Keeps the start of a traced response's decoded body. */
static void hc_trace_keep(struct http_conn *c, const void *data, size_t n)
{
    size_t room = c->opts.trace->body_max(c->opts.trace) - c->trace_body_len;
    if (n > room)
        n = room;
    memcpy(c->trace_body + c->trace_body_len, data, n);
    c->trace_body_len += n;
}

static void hc_trace_response_done(struct http_conn *c)
{
    if (c->trace_resp && c->body_len)
        c->opts.trace->body(c->opts.trace, c->trace_id, '<', c->trace_body, c->trace_body_len, c->body_len);
    c->trace_resp = false;
    c->trace_answered++;
}

int http_conn_request(struct http_conn *c, const void *head, size_t head_len, const void *body,
                      size_t body_len, void *req_ctx)
{
    if (c->state != HC_OPEN || c->write_error || c->count == c->opts.max_in_flight)
        return -1;
    uint8_t *p = outq_reserve(&c->out, head_len + body_len);
    memcpy(p, head, head_len);
    if (body_len)
        memcpy(p + head_len, body, body_len);
    if (c->opts.trace)
        hc_trace_request(c, head, head_len, body, body_len);
    c->reqs[(c->head + c->count) % c->opts.max_in_flight] = req_ctx;
    c->count++;
    if (c->count == 1) {
        hc_arm_timeout(c);
        if (!c->blocked && hc_flush(c) < 0) {
            /* A failed write is reported from the loop, never from here. */
            c->write_error = errno ? errno : EPIPE;
            ev_timer_start(c->loop, &c->flush_timer, 0, 0);
        }
    } else if (!ev_timer_active(&c->flush_timer)) {
        ev_timer_start(c->loop, &c->flush_timer, 0, 0);
    }
    return 0;
}

/* ---- input --------------------------------------------------------------- */

static void hc_keep(struct http_conn *c, const void *data, size_t n)
{
    if (c->trace_resp)
        hc_trace_keep(c, data, n);
    c->body_len += n;
    size_t room = c->opts.body_keep - c->body_kept;
    if (n > room)
        n = room;
    if (n == 0)
        return;
    if (c->body_kept + n > c->body_cap) {
        size_t cap = c->body_cap ? c->body_cap : 256;
        while (cap < c->body_kept + n)
            cap *= 2;
        if (cap > c->opts.body_keep)
            cap = c->opts.body_keep;
        c->body = mem_realloc(c->body, cap);
        c->body_cap = cap;
    }
    memcpy(c->body + c->body_kept, data, n);
    c->body_kept += n;
}

/* Takes n raw body bytes (after chunked decoding). Returns 0, or a
 * negative value when the encoded body is broken or too large. */
static int hc_body(struct http_conn *c, const void *data, size_t n)
{
    c->body_raw += n;
    if (c->body_raw > c->opts.max_body)
        return -1;
    if (c->coding == CODING_IDENTITY) {
        hc_keep(c, data, n);
        return 0;
    }
    c->zs.next_in = (Bytef *)(uintptr_t)data;
    c->zs.avail_in = (uInt)n;
    while (c->zs.avail_in > 0) {
        Bytef out[4096];
        c->zs.next_out = out;
        c->zs.avail_out = sizeof out;
        int rc = inflate(&c->zs, Z_NO_FLUSH);
        hc_keep(c, out, sizeof out - c->zs.avail_out);
        if (c->body_len > c->opts.max_body)
            return -1;
        if (rc == Z_STREAM_END)
            return c->zs.avail_in ? -1 : 0; /* bytes after the end: broken */
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return -1;
    }
    return 0;
}

/* The response in progress is complete: reports it. Returns false once
 * the connection is closed or c freed. */
static bool hc_response_done(struct http_conn *c)
{
    if (c->coding == CODING_ZLIB) {
        /* Finish the stream: the CRC sits in its last bytes. */
        Bytef out[64];
        c->zs.next_in = NULL;
        c->zs.avail_in = 0;
        c->zs.next_out = out;
        c->zs.avail_out = sizeof out;
        if (inflate(&c->zs, Z_FINISH) != Z_STREAM_END) {
            hc_abort(c, HTTP_E_PROTOCOL, 0);
            return false;
        }
    }
    c->read = READ_HEAD;
    if (c->opts.trace)
        hc_trace_response_done(c);
    void *req_ctx = hc_pop(c);
    /* Closed before the report, so that a request() from inside it fails
     * instead of writing to a connection the server ends. */
    if (!c->keep_alive)
        hc_close_fd(c);
    else
        hc_arm_timeout(c);
    struct http_resp resp = {
        .status = c->status,
        .body = c->body,
        .body_kept = c->body_kept,
        .body_len = c->body_len,
    };
    c->events.done(c->events.ctx, c, req_ctx, HTTP_DONE, &resp, 0);
    if (c->state == HC_CLOSED && !c->freed)
        hc_abort(c, HTTP_E_CLOSED, 0);
    return c->state != HC_CLOSED && !c->freed;
}

static enum hc_coding hc_coding_of(const struct http1_header *hdrs, size_t n)
{
    const struct http1_header *h = http1_find_header(hdrs, n, "content-encoding");
    if (h && (http1_str_eq(h->value, "gzip") || http1_str_eq(h->value, "deflate")))
        return CODING_ZLIB;
    return CODING_IDENTITY;
}

/* Starts reading the body of a final response. False once the connection
 * is closed or c freed. */
static bool hc_response_head(struct http_conn *c, const struct http1_response *resp,
                             enum hc_coding coding)
{
    c->status = resp->status;
    c->keep_alive = resp->keep_alive;
    c->body_len = 0;
    c->body_raw = 0;
    c->body_kept = 0;
    c->coding = resp->body == HTTP1_BODY_NONE ? CODING_IDENTITY : (uint8_t)coding;
    if (c->coding == CODING_ZLIB) {
        /* 15 + 32: gzip or zlib wrapper, detected from the header. */
        if (!c->zinit && inflateInit2(&c->zs, 15 + 32) == Z_OK)
            c->zinit = true;
        else if (c->zinit)
            inflateReset(&c->zs);
        if (!c->zinit) {
            hc_abort(c, HTTP_E_PROTOCOL, 0);
            return false;
        }
    }
    switch (resp->body) {
    case HTTP1_BODY_LENGTH:
        if (resp->content_length > c->opts.max_body) {
            hc_abort(c, HTTP_E_PROTOCOL, HTTP1_E_BODY_TOO_LARGE);
            return false;
        }
        if (resp->content_length == 0)
            return hc_response_done(c);
        c->read = READ_LENGTH;
        c->body_left = resp->content_length;
        return true;
    case HTTP1_BODY_CHUNKED:
        c->read = READ_CHUNKED;
        http1_chunked_init(&c->chunked, c->opts.max_body);
        return true;
    case HTTP1_BODY_UNTIL_CLOSE:
        c->read = READ_UNTIL_CLOSE;
        return true;
    default:
        return hc_response_done(c);
    }
}

/* Feeds data[0..len) to the chunked decoder through a small buffer (the
 * input is read-only). Returns the bytes used, or -1 once the connection
 * is closed or c freed. */
static long hc_read_chunked(struct http_conn *c, const uint8_t *data, size_t len)
{
    size_t off = 0;
    char out[2048];
    while (off < len) {
        size_t piece = len - off < sizeof out ? len - off : sizeof out, out_len, used;
        int rc = http1_chunked_decode(&c->chunked, (const char *)data + off, piece, out, &out_len,
                                      &used);
        off += used;
        if (rc < 0 || hc_body(c, out, out_len) < 0) {
            hc_abort(c, HTTP_E_PROTOCOL, rc < 0 ? rc : 0);
            return -1;
        }
        if (rc == 1)
            return hc_response_done(c) ? (long)off : -1;
    }
    return (long)off;
}

/* Handles every whole piece of response in data[0..len). Returns the
 * bytes consumed, or -1 once the connection is closed or c freed. */
static long hc_parse(struct http_conn *c, const uint8_t *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        if (c->read == READ_HEAD) {
            if (c->count == 0) { /* nothing asked: the server is confused */
                hc_abort(c, HTTP_E_PROTOCOL, 0);
                return -1;
            }
            struct http1_header hdrs[HC_MAX_HEADERS];
            struct http1_response resp;
            int rc = http1_parse_response((const char *)data + off, len - off, &resp, hdrs,
                                          HC_MAX_HEADERS, HC_MAX_HEAD);
            if (rc == 0)
                break;
            if (rc < 0 || resp.status == 101) { /* we asked for no upgrade */
                hc_abort(c, HTTP_E_PROTOCOL, rc);
                return -1;
            }
            if (c->opts.trace)
                hc_trace_head(c, data + off, (size_t)rc, resp.status >= 200);
            off += (size_t)rc;
            if (resp.status >= 200 &&
                !hc_response_head(c, &resp, hc_coding_of(hdrs, resp.num_headers)))
                return -1;
        } else if (c->read == READ_LENGTH) {
            size_t n = len - off < c->body_left ? len - off : (size_t)c->body_left;
            c->body_left -= n;
            if (hc_body(c, data + off, n) < 0) {
                hc_abort(c, HTTP_E_PROTOCOL, 0);
                return -1;
            }
            off += n;
            if (c->body_left == 0 && !hc_response_done(c))
                return -1;
        } else if (c->read == READ_CHUNKED) {
            long used = hc_read_chunked(c, data + off, len - off);
            if (used < 0)
                return -1;
            off += (size_t)used;
        } else { /* READ_UNTIL_CLOSE */
            if (hc_body(c, data + off, len - off) < 0) {
                hc_abort(c, HTTP_E_PROTOCOL, 0);
                return -1;
            }
            off = len;
        }
    }
    return (long)off;
}

/* The server closed its side: a body that ran to the close is complete;
 * every other request in flight is lost. */
static void hc_on_eof(struct http_conn *c)
{
    if (c->read == READ_UNTIL_CLOSE && c->count > 0) {
        c->keep_alive = false;
        if (!hc_response_done(c))
            return;
    }
    hc_abort(c, HTTP_E_CLOSED, 0);
}

/* Reads until the socket is drained, as the edge-triggered registration
 * requires: a short read is enough unless the server may have closed. */
static void hc_read(struct http_conn *c, bool hup)
{
    while (c->state == HC_OPEN && !c->freed) {
        size_t cap;
        uint8_t *buf = inbuf_read_target(&c->in, hc_scratch, sizeof hc_scratch, &cap);
        ssize_t n = read(c->io.fd, buf, cap);
        if (n == 0) {
            hc_on_eof(c);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                hc_abort(c, HTTP_E_CLOSED, errno);
            return;
        }
        size_t len;
        const uint8_t *data = inbuf_filled(&c->in, hc_scratch, (size_t)n, &len);
        long used = hc_parse(c, data, len);
        if (used < 0)
            return;
        inbuf_consumed(&c->in, data, len, (size_t)used);
        if ((size_t)n < cap && !hup)
            return;
    }
}

static void hc_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct http_conn *c = io->data;
    hc_enter(c);
    if (c->state == HC_CONNECTING && (events & EV_WRITE)) {
        int err = net_connect_result(io->fd);
        if (err) {
            hc_close_fd(c);
        } else {
            c->state = HC_OPEN;
            ev_timer_stop(loop, &c->timeout);
        }
        c->events.connected(c->events.ctx, c, err);
        /* That writable edge was the connect's; a readable one that came
         * with it (a server closing at once) is handled below, as edges
         * are reported once. */
        events &= ~EV_WRITE;
    }
    if (c->state == HC_OPEN && !c->freed) {
        if ((events & EV_WRITE) && c->blocked) {
            c->blocked = false;
            if (hc_flush(c) < 0)
                hc_abort(c, HTTP_E_CLOSED, errno);
        }
        if (events & EV_READ)
            hc_read(c, events & EV_HUP);
    }
    hc_leave(c);
}

/* ---- the connection ------------------------------------------------------ */

struct http_conn *http_conn_connect(struct ev_loop *loop, const struct http_conn_opts *opts,
                                    const struct http_events *events, int *err)
{
    char msg[NET_ERR_LEN];
    errno = 0;
    int fd = net_connect(opts->host, opts->port, msg, sizeof msg);
    if (fd < 0) {
        *err = errno ? errno : EHOSTUNREACH;
        return NULL;
    }
    struct http_conn *c = mem_calloc(1, sizeof *c);
    c->loop = loop;
    c->events = *events;
    c->opts = *opts;
    if (!c->opts.max_in_flight)
        c->opts.max_in_flight = 1;
    if (!c->opts.max_body)
        c->opts.max_body = HC_DEFAULT_MAX_BODY;
    c->opts.host = NULL; /* not kept: the caller's */
    c->reqs = mem_calloc(c->opts.max_in_flight, sizeof *c->reqs);
    c->state = HC_CONNECTING;
    bool v6 = strchr(opts->host, ':') != NULL;
    snprintf(c->host, sizeof c->host, "%s%s%s:%d", v6 ? "[" : "", opts->host, v6 ? "]" : "",
             opts->port);
    ev_timer_init(&c->flush_timer, hc_on_flush_timer, c);
    ev_timer_init(&c->timeout, hc_on_timeout, c);
    c->io.fd = fd;
    c->io.cb = hc_on_io;
    c->io.data = c;
    if (ev_io_start(loop, &c->io, EV_READ | EV_WRITE | EV_EDGE) < 0) {
        *err = errno;
        close(fd);
        mem_free(c->reqs);
        mem_free(c);
        return NULL;
    }
    if (c->opts.connect_timeout_ms)
        ev_timer_start(loop, &c->timeout, c->opts.connect_timeout_ms, 0);
    if (c->opts.trace) {
        c->trace_id = c->opts.trace->conn_id(c->opts.trace);
        c->trace_body = mem_alloc(c->opts.trace->body_max(c->opts.trace) + 1);
    }
    return c;
}

const char *http_conn_host(const struct http_conn *c) { return c->host; }

bool http_conn_is_open(const struct http_conn *c)
{
    return c->state == HC_OPEN && !c->write_error;
}

unsigned http_conn_in_flight(const struct http_conn *c) { return c->count; }

void http_conn_close(struct http_conn *c)
{
    if (c->depth > 0) {
        hc_close_fd(c);
        c->freed = true;
        return;
    }
    hc_free(c);
}
