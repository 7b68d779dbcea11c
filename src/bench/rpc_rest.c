/* rpc_rest.c - the REST client transport (rpc_client.h): HTTP/1.1
 * keep-alive connections on the driver's event loop that POST the
 * article's JSON document to /v1/create and judge each answer. RPC_OK is a
 * 201 whose body is {"status":"created"} (JSON whitespace aside); another
 * status is RPC_E_STATUS with the code; anything unparsable, or a 201 with
 * another body, is RPC_E_PROTOCOL.
 *
 * Calls may be pipelined up to max_in_flight; responses answer them in
 * order. A call is written at once when it is the only one in flight (the
 * sequential experiment measures one round trip per call, so nothing may
 * wait for the loop); otherwise requests gather and go out in one write per
 * loop iteration, from a zero-delay timer. Sockets are registered
 * edge-triggered once, so the hot path makes no epoll_ctl calls.
 *
 * The driver may call call() or close() from inside its callbacks; a
 * connection closed there is freed when our handler returns.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/rpc_client.h"
#include "car/car_json.h"
#include "core/inbuf.h"
#include "core/mem.h"
#include "core/net.h"
#include "core/outq.h"
#include "http/http1.h"

#define REST_MAX_HEAD 8192
#define REST_MAX_HEADERS 32
/* A response body longer than this is not what we expect, so we only keep
 * its start (the expected one is 20 bytes). */
#define REST_BODY_KEEP 64
/* Limit of a chunked body, to fail a server that never ends one. */
#define REST_MAX_BODY (1u << 20)
#define REST_READ_CHUNK (16 * 1024)
/* Records are about 200 bytes of JSON; larger ones take the slow path. */
#define REST_BODY_STACK 1024

static const char created[] = "{\"status\":\"created\"}";

enum rest_state { REST_CONNECTING, REST_OPEN, REST_CLOSED };

/* Where the response in progress stands. */
enum rest_read { READ_HEAD, READ_LENGTH, READ_CHUNKED, READ_UNTIL_CLOSE };

struct rpc_conn {
    struct ev_loop *loop;
    struct ev_io io;
    struct ev_timer flush_timer; /* zero-delay: write what gathered this iteration */
    struct rpc_events events;
    uint8_t state;      /* enum rest_state */
    uint8_t read;       /* enum rest_read */
    bool blocked;       /* socket full: wait for a writable edge */
    bool freed;         /* the driver closed us inside a callback */
    unsigned depth;     /* our handlers on the stack; free only at 0 */
    int write_error;    /* errno of a write that failed inside call() */
    unsigned max_in_flight;
    void **calls; /* ring of the call_ctx of calls in flight */
    unsigned head, count;
    struct outq out;
    struct inbuf in;
    /* The response being read. */
    int status;
    bool keep_alive;
    uint64_t body_left; /* READ_LENGTH */
    struct http1_chunked chunked;
    size_t body_len; /* bytes of body so far; body[] holds the first REST_BODY_KEEP */
    char body[REST_BODY_KEEP];
    char host[72]; /* Host field value */
};

/* Reads go here first; only a partial response is copied to the
 * connection (inbuf.h). One per thread, as loops are. */
static _Thread_local uint8_t rest_scratch[REST_READ_CHUNK];

/* ---- lifetime ------------------------------------------------------------ */

static void rest_close_fd(struct rpc_conn *c)
{
    if (c->state == REST_CLOSED)
        return;
    ev_io_stop(c->loop, &c->io);
    close(c->io.fd);
    ev_timer_stop(c->loop, &c->flush_timer);
    c->state = REST_CLOSED;
    outq_clear(&c->out);
    inbuf_free(&c->in);
}

static void rest_free(struct rpc_conn *c)
{
    rest_close_fd(c);
    mem_free(c->calls);
    mem_free(c);
}

static void rest_enter(struct rpc_conn *c) { c->depth++; }

/* Leaves a handler; true if c is gone and must not be touched. */
static bool rest_leave(struct rpc_conn *c)
{
    if (--c->depth == 0 && c->freed) {
        rest_free(c);
        return true;
    }
    return false;
}

static void *rest_pop_call(struct rpc_conn *c)
{
    void *call_ctx = c->calls[c->head];
    c->head = (c->head + 1) % c->max_in_flight;
    c->count--;
    return call_ctx;
}

/* Closes the connection and reports the calls in flight: the first with
 * outcome and code, the rest as closed, until the driver closes us. */
static void rest_abort(struct rpc_conn *c, enum rpc_outcome outcome, int code)
{
    rest_close_fd(c);
    while (c->count > 0 && !c->freed) {
        void *call_ctx = rest_pop_call(c);
        c->events.done(c->events.ctx, c, call_ctx, outcome, code);
        outcome = RPC_E_CLOSED;
        code = 0;
    }
}

/* ---- output -------------------------------------------------------------- */

/* Writes what is queued. 0, or -1 with errno once the connection is dead. */
static int rest_flush(struct rpc_conn *c)
{
    if (c->blocked || outq_pending(&c->out) == 0)
        return 0;
    int rc = outq_flush(&c->out, c->io.fd);
    if (rc < 0)
        return -1;
    c->blocked = rc == 1;
    return 0;
}

static void rest_on_flush_timer(struct ev_loop *loop, struct ev_timer *t)
{
    struct rpc_conn *c = t->data;
    rest_enter(c);
    if (c->write_error)
        rest_abort(c, RPC_E_CLOSED, c->write_error);
    else if (rest_flush(c) < 0)
        rest_abort(c, RPC_E_CLOSED, errno);
    rest_leave(c);
}

static int rest_call(struct rpc_conn *c, const Com__Stevenpg__Rvg__Message *msg, void *call_ctx)
{
    if (c->state != REST_OPEN || c->write_error || c->count == c->max_in_flight)
        return -1;
    char stack[REST_BODY_STACK], *body = stack;
    size_t blen;
    enum car_json_err jrc = car_json_encode(msg, stack, sizeof stack, &blen);
    if (jrc == CAR_JSON_E_NOSPACE) {
        body = mem_alloc(blen);
        jrc = car_json_encode(msg, body, blen, &blen);
    }
    if (jrc != CAR_JSON_OK) { /* a message without its fields: the driver's bug */
        if (body != stack)
            mem_free(body);
        return -1;
    }
    char head[160];
    int hlen = snprintf(head, sizeof head,
                        "POST /v1/create HTTP/1.1\r\nHost: %s\r\n"
                        "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                        c->host, blen);
    uint8_t *p = outq_reserve(&c->out, (size_t)hlen + blen);
    memcpy(p, head, (size_t)hlen);
    memcpy(p + hlen, body, blen);
    if (body != stack)
        mem_free(body);

    c->calls[(c->head + c->count) % c->max_in_flight] = call_ctx;
    c->count++;
    if (c->count == 1 && !c->blocked) {
        /* The only call in flight: its round trip starts now. A failed
         * write is reported from the loop, never from inside call(). */
        if (rest_flush(c) < 0) {
            c->write_error = errno ? errno : EPIPE;
            ev_timer_start(c->loop, &c->flush_timer, 0, 0);
        }
    } else if (!ev_timer_active(&c->flush_timer)) {
        ev_timer_start(c->loop, &c->flush_timer, 0, 0);
    }
    return 0;
}

/* ---- input --------------------------------------------------------------- */

static void rest_keep_body(struct rpc_conn *c, const void *data, size_t n)
{
    if (c->body_len < REST_BODY_KEEP) {
        size_t k = n < REST_BODY_KEEP - c->body_len ? n : REST_BODY_KEEP - c->body_len;
        memcpy(c->body + c->body_len, data, k);
    }
    c->body_len += n;
}

/* Whether the body is {"status":"created"}, whitespace between JSON tokens
 * aside. The expected text has no escapes, so a body with one differs. */
static bool rest_body_is_created(const struct rpc_conn *c)
{
    if (c->body_len > REST_BODY_KEEP)
        return false;
    size_t k = 0;
    bool in_string = false;
    for (size_t i = 0; i < c->body_len; i++) {
        char ch = c->body[i];
        if (!in_string && (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'))
            continue;
        if (ch == '"')
            in_string = !in_string;
        if (k == sizeof created - 1 || created[k] != ch)
            return false;
        k++;
    }
    return k == sizeof created - 1;
}

/* The response in progress is complete: reports its call. Returns false
 * once the connection is closed or c freed. */
static bool rest_response_done(struct rpc_conn *c)
{
    enum rpc_outcome outcome = RPC_OK;
    int code = c->status;
    if (c->status != 201)
        outcome = RPC_E_STATUS;
    else if (!rest_body_is_created(c))
        outcome = RPC_E_PROTOCOL;
    c->read = READ_HEAD;
    void *call_ctx = rest_pop_call(c);
    /* Closed before the report, so that a call() from inside it fails
     * instead of writing to a connection the server ends. */
    if (!c->keep_alive)
        rest_close_fd(c);
    c->events.done(c->events.ctx, c, call_ctx, outcome, code);
    if (c->state == REST_CLOSED && !c->freed)
        rest_abort(c, RPC_E_CLOSED, 0);
    return c->state != REST_CLOSED && !c->freed;
}

/* Starts reading the body of a final response. False once the connection
 * is closed or c freed. */
static bool rest_response_head(struct rpc_conn *c, const struct http1_response *resp)
{
    c->status = resp->status;
    c->keep_alive = resp->keep_alive;
    c->body_len = 0;
    switch (resp->body) {
    case HTTP1_BODY_LENGTH:
        if (resp->content_length == 0)
            return rest_response_done(c);
        c->read = READ_LENGTH;
        c->body_left = resp->content_length;
        return true;
    case HTTP1_BODY_CHUNKED:
        c->read = READ_CHUNKED;
        http1_chunked_init(&c->chunked, REST_MAX_BODY);
        return true;
    case HTTP1_BODY_UNTIL_CLOSE:
        c->read = READ_UNTIL_CLOSE;
        return true;
    default:
        return rest_response_done(c);
    }
}

/* Feeds data[0..len) to the chunked decoder through a small buffer (the
 * input is read-only). Returns the bytes used, or -1 after a protocol
 * error or the end of the body closed the connection. */
static long rest_read_chunked(struct rpc_conn *c, const uint8_t *data, size_t len)
{
    size_t off = 0;
    char out[512];
    while (off < len) {
        size_t piece = len - off < sizeof out ? len - off : sizeof out, out_len, used;
        int rc = http1_chunked_decode(&c->chunked, (const char *)data + off, piece, out, &out_len,
                                      &used);
        rest_keep_body(c, out, out_len);
        off += used;
        if (rc < 0) {
            rest_abort(c, RPC_E_PROTOCOL, rc);
            return -1;
        }
        if (rc == 1)
            return rest_response_done(c) ? (long)off : -1;
    }
    return (long)off;
}

/* Handles every whole piece of response in data[0..len). Returns the
 * bytes consumed, or -1 once the connection is closed or c freed. */
static long rest_parse(struct rpc_conn *c, const uint8_t *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        if (c->read == READ_HEAD) {
            if (c->count == 0) { /* nothing asked: the server is confused */
                rest_abort(c, RPC_E_PROTOCOL, 0);
                return -1;
            }
            struct http1_header hdrs[REST_MAX_HEADERS];
            struct http1_response resp;
            int rc = http1_parse_response((const char *)data + off, len - off, &resp, hdrs,
                                          REST_MAX_HEADERS, REST_MAX_HEAD);
            if (rc == 0)
                break;
            if (rc < 0 || resp.status == 101) { /* we asked for no upgrade */
                rest_abort(c, RPC_E_PROTOCOL, rc);
                return -1;
            }
            off += (size_t)rc;
            if (resp.status >= 200 && !rest_response_head(c, &resp))
                return -1;
        } else if (c->read == READ_LENGTH) {
            size_t n = len - off < c->body_left ? len - off : (size_t)c->body_left;
            rest_keep_body(c, data + off, n);
            off += n;
            c->body_left -= n;
            if (c->body_left == 0 && !rest_response_done(c))
                return -1;
        } else if (c->read == READ_CHUNKED) {
            long used = rest_read_chunked(c, data + off, len - off);
            if (used < 0)
                return -1;
            off += (size_t)used;
        } else { /* READ_UNTIL_CLOSE */
            rest_keep_body(c, data + off, len - off);
            off = len;
        }
    }
    return (long)off;
}

/* The server closed its side: a body that ran to the close is complete;
 * every other call in flight is lost. */
static void rest_on_eof(struct rpc_conn *c)
{
    if (c->read == READ_UNTIL_CLOSE) {
        c->keep_alive = false;
        if (!rest_response_done(c))
            return;
    }
    rest_abort(c, RPC_E_CLOSED, 0);
}

/* Reads until the socket is drained, as the edge-triggered registration
 * requires: a short read is enough unless the server may have closed. */
static void rest_read(struct rpc_conn *c, bool hup)
{
    while (c->state == REST_OPEN && !c->freed) {
        size_t cap;
        uint8_t *buf = inbuf_read_target(&c->in, rest_scratch, sizeof rest_scratch, &cap);
        ssize_t n = read(c->io.fd, buf, cap);
        if (n == 0) {
            rest_on_eof(c);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                rest_abort(c, RPC_E_CLOSED, errno);
            return;
        }
        size_t len;
        const uint8_t *data = inbuf_filled(&c->in, rest_scratch, (size_t)n, &len);
        long used = rest_parse(c, data, len);
        if (used < 0)
            return;
        inbuf_consumed(&c->in, data, len, (size_t)used);
        if ((size_t)n < cap && !hup)
            return;
    }
}

static void rest_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct rpc_conn *c = io->data;
    rest_enter(c);
    if (c->state == REST_CONNECTING && (events & EV_WRITE)) {
        int err = net_connect_result(io->fd);
        if (err)
            rest_close_fd(c);
        else
            c->state = REST_OPEN;
        c->events.connected(c->events.ctx, c, err);
        /* That writable edge was the connect's; a readable one that came
         * with it (a server closing at once) is handled below, as edges
         * are reported once. */
        events &= ~EV_WRITE;
    }
    if (c->state == REST_OPEN && !c->freed) {
        if ((events & EV_WRITE) && c->blocked) {
            c->blocked = false;
            if (rest_flush(c) < 0)
                rest_abort(c, RPC_E_CLOSED, errno);
        }
        if (events & EV_READ)
            rest_read(c, events & EV_HUP);
    }
    rest_leave(c);
}

/* ---- the transport ------------------------------------------------------- */

static struct rpc_conn *rest_connect(struct ev_loop *loop, const struct rpc_conn_opts *opts,
                                     const struct rpc_events *events, int *err)
{
    char msg[NET_ERR_LEN];
    errno = 0;
    int fd = net_connect(opts->host, opts->port, msg, sizeof msg);
    if (fd < 0) {
        *err = errno ? errno : EHOSTUNREACH;
        return NULL;
    }
    struct rpc_conn *c = mem_calloc(1, sizeof *c);
    c->loop = loop;
    c->events = *events;
    c->max_in_flight = opts->max_in_flight ? opts->max_in_flight : 1;
    c->calls = mem_calloc(c->max_in_flight, sizeof *c->calls);
    c->state = REST_CONNECTING;
    bool v6 = strchr(opts->host, ':') != NULL;
    snprintf(c->host, sizeof c->host, "%s%s%s:%d", v6 ? "[" : "", opts->host, v6 ? "]" : "",
             opts->port);
    ev_timer_init(&c->flush_timer, rest_on_flush_timer, c);
    c->io.fd = fd;
    c->io.cb = rest_on_io;
    c->io.data = c;
    if (ev_io_start(loop, &c->io, EV_READ | EV_WRITE | EV_EDGE) < 0) {
        *err = errno;
        close(fd);
        mem_free(c->calls);
        mem_free(c);
        return NULL;
    }
    return c;
}

static void rest_close(struct rpc_conn *c)
{
    if (c->depth > 0) {
        rest_close_fd(c);
        c->freed = true;
        return;
    }
    rest_free(c);
}

const struct rpc_protocol rpc_rest_protocol = {
    .name = "rest",
    .default_port = 8080,
    .connect = rest_connect,
    .call = rest_call,
    .close = rest_close,
};
