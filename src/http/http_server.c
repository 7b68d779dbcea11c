/* http_server.c - HTTP/1.1 connections with asynchronous handlers on
 * core/srv.c's workers.
 *
 * A connection reads into its own buffer (level-triggered; read interest
 * is dropped while it may not take more requests), parses as many
 * requests as it may hold in flight, and keeps them in a FIFO. A handler's
 * answer only marks its request done and puts the connection on the
 * worker's attention list; the prepare hook then moves the done requests
 * at the head of the FIFO into the output queue, in order, and writes
 * them with one writev. Responses are serialised there, not when answered,
 * so that the last one before a close (Connection: close, draining) is
 * known when its head is written.
 *
 * Closed connections wait on the worker's dead list until the prepare
 * hook, since callbacks up the stack and events of the same loop iteration
 * may still hold them. One timer per connection covers every wait.
 */
#include "http/http_server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/ev.h"
#include "core/linger.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/outq.h"
#include "core/srv.h"
#include "core/version.h"

#define MAX_HEADERS 64
#define READ_CHUNK (64 * 1024)
/* Bytes read from one connection per event before the others get a turn. */
#define READ_BUDGET (256 * 1024)
/* Output queued for a client that does not read, past which no further
 * request is read from it. */
#define OUT_HIGH (256 * 1024)
/* Input handed to the chunked decoder at a time (bounds the body buffer
 * to max_body + this). */
#define CHUNK_SLICE 4096
/* Speed over ratio: every response of a Gatling journey asks for gzip, so
 * compression is on the hot path; level 1 still shrinks JSON 4-6x. */
#define GZIP_LEVEL 1

struct http_worker {
    struct srv_worker *base;
    const struct http_server_config *cfg;
    const struct http_app *app;
    void *app_worker;
    struct http_conn *conns;     /* open connections */
    struct http_conn *attention; /* to pump in the prepare hook */
    struct http_conn *dead;      /* closed, to free in the prepare hook */
    struct http_req *orphans;    /* pending requests whose connection is gone */
    struct http_gzip *gzip;      /* NULL: responses go uncompressed */
};

enum conn_state {
    C_OPEN,
    C_CLOSING, /* the last response is queued; linger once it is out */
    C_LINGER,  /* write side shut; dropping input until EOF (core/linger.h) */
    C_CLOSED,
};

enum in_phase {
    IN_HEAD,    /* waiting for a request head */
    IN_BODY,    /* Content-Length body of cur, left in the input until complete */
    IN_CHUNKED, /* chunked body of cur, decoded into body */
    IN_DONE,    /* no further request will be read */
};

enum conn_wait { W_IDLE, W_REQUEST, W_APP, W_WRITE, W_LINGER };

struct http_conn {
    struct ev_io io;
    struct ev_timer timer;
    struct http_worker *w;
    struct http_conn *prev, *next; /* w->conns */
    struct http_conn *attn_next;   /* w->attention */
    struct http_conn *dead_next;   /* w->dead */
    bool in_attention;
    enum conn_state state;
    enum in_phase phase;
    char *in;                      /* unconsumed input */
    size_t in_len, in_cap;
    struct outq out;
    struct http_req *cur;          /* request whose body is being read */
    uint64_t body_left;
    struct http1_chunked chunked;
    char *body;                    /* IN_CHUNKED: decoded so far */
    size_t body_len, body_cap;
    struct http_req *head, *tail;  /* dispatched, in request order */
    unsigned inflight;
    bool continue_due;             /* 100 Continue owed once earlier responses are out */
    bool peer_done;                /* the client closed its side */
    uint32_t dropped;              /* C_LINGER: input dropped */
    enum conn_wait wait;
    uint64_t since_ms;
};

/* ---- Pure helpers ------------------------------------------------------- */

const char *http_date(void)
{
    static _Thread_local time_t cached = -1;
    static _Thread_local char date[HTTP_DATE_LEN + 1];
    static const char days[] = "SunMonTueWedThuFriSat";
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    time_t now = time(NULL);
    if (now != cached) {
        struct tm tm;
        gmtime_r(&now, &tm);
        /* The moduli only tell the compiler how wide the fields are. */
        snprintf(date, sizeof date, "%.3s, %02u %.3s %04u %02u:%02u:%02u GMT",
                 days + 3 * ((unsigned)tm.tm_wday % 7), (unsigned)tm.tm_mday % 100,
                 months + 3 * ((unsigned)tm.tm_mon % 12), (unsigned)(tm.tm_year + 1900) % 10000,
                 (unsigned)tm.tm_hour % 100, (unsigned)tm.tm_min % 100, (unsigned)tm.tm_sec % 100);
        cached = now;
    }
    return date;
}

const char *http_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

/* q-value of one Accept-Encoding member's parameters: 1 unless "q=" says
 * otherwise; a malformed q counts as 0 (refused), the cautious reading. */
static double coding_q(const char *p, const char *end)
{
    while (p < end) {
        while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
            p++;
        if (end - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            p += 2;
            double q = 0;
            if (p < end && (*p == '0' || *p == '1')) {
                q = *p++ - '0';
                if (p < end && *p == '.') {
                    double scale = 0.1;
                    for (p++; p < end && *p >= '0' && *p <= '9'; p++, scale /= 10)
                        q += (*p - '0') * scale;
                }
            }
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            return p == end || *p == ';' ? (q > 1 ? 1 : q) : 0;
        }
        while (p < end && *p != ';')
            p++;
    }
    return 1;
}

bool http_accepts_gzip(struct http1_str ae)
{
    if (!ae.ptr)
        return false;
    int gzip = -1, star = -1; /* -1 not listed, else q > 0 */
    const char *p = ae.ptr, *end = ae.ptr + ae.len;
    while (p < end) {
        const char *item = p;
        while (p < end && *p != ',')
            p++;
        const char *item_end = p;
        if (p < end)
            p++;
        while (item < item_end && (*item == ' ' || *item == '\t'))
            item++;
        const char *name_end = item;
        while (name_end < item_end && *name_end != ';' && *name_end != ' ' && *name_end != '\t')
            name_end++;
        struct http1_str name = {item, (size_t)(name_end - item)};
        int ok = coding_q(name_end, item_end) > 0;
        if (http1_str_eq(name, "gzip") || http1_str_eq(name, "x-gzip"))
            gzip = ok;
        else if (http1_str_eq(name, "*"))
            star = ok;
    }
    return gzip >= 0 ? gzip == 1 : star == 1;
}

struct http_gzip {
    z_stream z;
};

struct http_gzip *http_gzip_new(void)
{
    struct http_gzip *g = mem_calloc(1, sizeof *g);
    /* windowBits 15 + 16: a gzip wrapper rather than zlib's. */
    if (deflateInit2(&g->z, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        mem_free(g);
        return NULL;
    }
    return g;
}

void http_gzip_free(struct http_gzip *g)
{
    if (!g)
        return;
    deflateEnd(&g->z);
    mem_free(g);
}

size_t http_gzip(struct http_gzip *g, const char *in, size_t len, char **out)
{
    if (!g || deflateReset(&g->z) != Z_OK)
        return 0;
    z_stream *z = &g->z;
    size_t cap = deflateBound(z, (uLong)len) + 32;
    char *buf = mem_alloc(cap);
    z->next_in = (Bytef *)in;
    z->avail_in = (uInt)len;
    z->next_out = (Bytef *)buf;
    z->avail_out = (uInt)cap;
    int r = deflate(z, Z_FINISH);
    size_t n = cap - z->avail_out;
    if (r != Z_STREAM_END) {
        mem_free(buf);
        return 0;
    }
    *out = buf;
    return n;
}

struct http1_str http_target_path(struct http1_str path)
{
    static const char *const schemes[] = {"http://", "https://"};
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i]);
        if (path.len < n || !http1_str_eq((struct http1_str){path.ptr, n}, schemes[i]))
            continue;
        const char *slash = memchr(path.ptr + n, '/', path.len - n);
        if (!slash)
            return (struct http1_str){"/", 1};
        return (struct http1_str){slash, path.len - (size_t)(slash - path.ptr)};
    }
    return path;
}

void http_server_config_defaults(struct http_server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->name = "shootout";
    cfg->bind = "127.0.0.1";
    cfg->port = 8080;
    cfg->threads = 1;
    cfg->max_connections = 10000;
    cfg->max_inflight = 16;
    cfg->max_header = 8 * 1024;
    cfg->max_body = 1024 * 1024;
    cfg->idle_timeout_ms = 60000;
    cfg->request_timeout_ms = 10000;
    cfg->drain_timeout_ms = 5000;
}

/* ---- Requests ----------------------------------------------------------- */

/* One allocation: the request, then method, path, query and content type. */
static struct http_req *req_new(struct http_conn *c, const struct http1_request *r,
                                const struct http1_header *headers)
{
    struct http1_str path = http_target_path(r->path);
    size_t ct_len = r->content_type.ptr ? r->content_type.len : 0;
    size_t q_len = r->query.ptr ? r->query.len : 0;
    size_t text = r->method.len + 1 + path.len + 1 + q_len + 1 + ct_len + 1;
    struct http_req *req = mem_calloc(1, sizeof *req + text);
    char *t = (char *)(req + 1);
    req->method = t;
    memcpy(t, r->method.ptr, r->method.len);
    t += r->method.len + 1;
    req->path = t;
    memcpy(t, path.ptr, path.len);
    t += path.len + 1;
    if (r->query.ptr) {
        req->query = t;
        memcpy(t, r->query.ptr, q_len);
    }
    t += q_len + 1;
    if (r->content_type.ptr) {
        memcpy(t, r->content_type.ptr, ct_len);
        req->content_type = (struct http1_str){t, ct_len};
    }
    const struct http1_header *ae = http1_find_header(headers, r->num_headers, "accept-encoding");
    req->gzip_ok = ae && http_accepts_gzip(ae->value);
    req->head = http1_str_eq(r->method, "HEAD");
    req->keep_alive = r->keep_alive;
    req->http10 = r->minor_version == 0;
    req->start_ns = clock_now_ns();
    req->route = -1;
    req->worker = c->w->app_worker;
    req->conn = c;
    req->w = c->w;
    return req;
}

/* A request for an answer of the server's own to input it could not read. */
static struct http_req *req_bare(struct http_conn *c)
{
    struct http_req *req = mem_calloc(1, sizeof *req + 2);
    char *t = (char *)(req + 1);
    t[0] = '-';
    req->method = req->path = t;
    req->start_ns = clock_now_ns();
    req->route = -1;
    req->worker = c->w->app_worker;
    req->conn = c;
    req->w = c->w;
    return req;
}

static void req_free(struct http_req *req)
{
    mem_free((void *)req->body);
    mem_free(req->resp);
    mem_free(req);
}

static void orphan_unlink(struct http_req *req)
{
    *req->pprev_orphan = req->next;
    if (req->next)
        req->next->pprev_orphan = req->pprev_orphan;
}

static void orphan_add(struct http_worker *w, struct http_req *req)
{
    req->conn = NULL;
    req->next = w->orphans;
    if (req->next)
        req->next->pprev_orphan = &req->next;
    w->orphans = req;
    req->pprev_orphan = &w->orphans;
}

/* ---- Connections -------------------------------------------------------- */

static void conn_attend(struct http_conn *c)
{
    if (c->in_attention || c->state == C_CLOSED)
        return;
    c->in_attention = true;
    c->attn_next = c->w->attention;
    c->w->attention = c;
}

static void conn_close(struct http_conn *c, const char *why)
{
    if (c->state == C_CLOSED)
        return;
    struct http_worker *w = c->w;
    log_debug("HTTP conn %d closed: %s", c->io.fd, why);
    close(c->io.fd);
    ev_timer_stop(w->base->loop, &c->timer);
    mem_free(c->in);
    c->in = NULL;
    c->in_len = c->in_cap = 0;
    outq_clear(&c->out);
    mem_free(c->body);
    c->body = NULL;
    if (c->cur)
        req_free(c->cur);
    c->cur = NULL;
    while (c->head) {
        struct http_req *req = c->head;
        c->head = req->next;
        if (req->done)
            req_free(req);
        else
            orphan_add(w, req); /* its handler still holds it */
    }
    c->tail = NULL;
    c->state = C_CLOSED;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    /* It may still be on the attention list, which skips closed ones;
     * the prepare hook frees it once that list is empty. */
    c->dead_next = w->dead;
    w->dead = c;
    srv_worker_conn_closed(w->base, c->io.fd);
}

/* ---- Responses ---------------------------------------------------------- */

struct sbuf {
    char *p;
    size_t len, cap;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = mem_realloc(b->p, b->cap);
    }
    if (n > 0) /* s may be NULL then (a 201 without a body) */
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(struct sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

void http_respond(struct http_req *req, int status, const char *content_type, const char *body,
                  size_t len, const char *extra_headers)
{
    if (!req->conn) {
        orphan_unlink(req);
        req_free(req);
        return;
    }
    struct http_worker *w = req->w;
    char *zipped = NULL;
    bool bodiless = status == 204 || status == 304 || status < 200;
    bool compressible = !bodiless && len > HTTP_GZIP_MIN;
    if (compressible && req->gzip_ok) {
        size_t n = http_gzip(w->gzip, body, len, &zipped);
        if (n > 0) {
            body = zipped;
            len = n;
        }
    }
    struct sbuf b = {0};
    char line[128];
    snprintf(line, sizeof line, "HTTP/1.1 %d %s\r\nDate: ", status, http_reason(status));
    sb_str(&b, line);
    sb_put(&b, http_date(), HTTP_DATE_LEN);
    sb_str(&b, "\r\nServer: shootout/" SHOOTOUT_VERSION "\r\n");
    if (content_type && !bodiless) {
        sb_str(&b, "Content-Type: ");
        sb_str(&b, content_type);
        sb_str(&b, "\r\n");
    }
    if (zipped)
        sb_str(&b, "Content-Encoding: gzip\r\n");
    if (compressible)
        sb_str(&b, "Vary: Accept-Encoding\r\n");
    if (!bodiless) {
        snprintf(line, sizeof line, "Content-Length: %zu\r\n", len);
        sb_str(&b, line);
    }
    if (extra_headers)
        sb_str(&b, extra_headers);
    /* The Connection header and the blank line are added when the
     * response is written: marker between head and body. */
    req->resp_head_len = b.len;
    if (!bodiless && !req->head)
        sb_put(&b, body, len);
    mem_free(zipped);
    req->resp = b.p;
    req->resp_len = b.len;
    req->done = true;
    if (w->app->observe)
        w->app->observe(req, status);
    if (w->cfg->log_requests)
        log_debug("HTTP conn %d: %s %s%s%s -> %d", req->conn->io.fd, req->method, req->path,
                  req->query ? "?" : "", req->query ? req->query : "", status);
    if (req == req->conn->head)
        conn_attend(req->conn);
}

/* Answers with an error of the server's own (the app shapes the body). */
static void respond_error(struct http_req *req, int status, const char *message)
{
    req->keep_alive = false;
    const struct http_app *app = req->w->app;
    if (app->error) {
        app->error(req, status, message);
        return;
    }
    http_respond(req, status, "text/plain; charset=utf-8", message, strlen(message), NULL);
}

/* Moves the done responses at the head of the FIFO into the output, in
 * order. Returns whether any moved. */
static bool conn_write_done(struct http_conn *c)
{
    bool moved = false;
    while (c->state == C_OPEN && c->head && c->head->done) {
        struct http_req *req = c->head;
        c->head = req->next;
        if (!c->head)
            c->tail = NULL;
        c->inflight--;
        bool last = !req->keep_alive || (c->phase == IN_DONE && !c->head && !c->cur);
        size_t head_len = req->resp_head_len;
        outq_copy(&c->out, req->resp, head_len);
        if (last)
            outq_copy(&c->out, "Connection: close\r\n\r\n", 21);
        else if (req->http10)
            outq_copy(&c->out, "Connection: keep-alive\r\n\r\n", 26);
        else
            outq_copy(&c->out, "\r\n", 2);
        outq_copy(&c->out, req->resp + head_len, req->resp_len - head_len);
        req_free(req);
        moved = true;
        if (last)
            c->state = C_CLOSING;
    }
    return moved;
}

/* ---- Input -------------------------------------------------------------- */

static void conn_consume(struct http_conn *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
    if (c->in_len == 0) {
        mem_free(c->in);
        c->in = NULL;
        c->in_cap = 0;
    }
}

static void dispatch(struct http_conn *c, struct http_req *req)
{
    if (c->tail)
        c->tail->next = req;
    else
        c->head = req;
    c->tail = req;
    c->inflight++;
    c->phase = req->keep_alive && !c->w->base->draining ? IN_HEAD : IN_DONE;
    c->w->app->handle(req);
}

/* An error answered in order, after which nothing more is read. */
static void dispatch_error(struct http_conn *c, struct http_req *req, int status, const char *msg)
{
    req->keep_alive = false;
    if (c->tail)
        c->tail->next = req;
    else
        c->head = req;
    c->tail = req;
    c->inflight++;
    c->phase = IN_DONE;
    c->in_len = 0;
    respond_error(req, status, msg);
}

/* RFC 9110 10.1.1: 100-continue is the only expectation defined. */
static bool expectation_failed(const struct http1_request *r, const struct http1_header *h)
{
    if (r->minor_version == 0)
        return false;
    for (size_t i = 0; i < r->num_headers; i++)
        if (http1_str_eq(h[i].name, "expect") && !http1_str_eq(h[i].value, "100-continue"))
            return true;
    return false;
}

static bool step_head(struct http_conn *c)
{
    const struct http_server_config *cfg = c->w->cfg;
    struct http1_request r;
    struct http1_header headers[MAX_HEADERS];
    int n = http1_parse_request(c->in, c->in_len, &r, headers, MAX_HEADERS, cfg->max_header);
    if (n == 0)
        return false;
    if (n < 0) {
        dispatch_error(c, req_bare(c), http1_status(n), http1_strerror(n));
        return true;
    }
    struct http_req *req = req_new(c, &r, headers);
    bool has_body = r.body == HTTP1_BODY_CHUNKED || (r.body == HTTP1_BODY_LENGTH && r.content_length > 0);
    if (expectation_failed(&r, headers)) {
        dispatch_error(c, req, 417, "only 100-continue can be expected");
        return true;
    }
    if (r.body == HTTP1_BODY_LENGTH && r.content_length > cfg->max_body) {
        dispatch_error(c, req, 413, "request body too large");
        return true;
    }
    conn_consume(c, (size_t)n);
    if (!has_body) {
        dispatch(c, req);
        return true;
    }
    c->cur = req;
    if (r.expect_continue && c->in_len == 0)
        c->continue_due = true;
    if (r.body == HTTP1_BODY_CHUNKED) {
        http1_chunked_init(&c->chunked, cfg->max_body);
        c->phase = IN_CHUNKED;
    } else {
        c->body_left = r.content_length;
        c->phase = IN_BODY;
    }
    return true;
}

static bool step_body(struct http_conn *c)
{
    if (c->in_len < c->body_left)
        return false;
    struct http_req *req = c->cur;
    c->cur = NULL;
    c->continue_due = false;
    req->body = mem_strndup(c->in, (size_t)c->body_left);
    req->body_len = (size_t)c->body_left;
    conn_consume(c, (size_t)c->body_left);
    dispatch(c, req);
    return true;
}

static bool step_chunked(struct http_conn *c)
{
    if (c->in_len == 0)
        return false;
    c->continue_due = false;
    size_t off = 0;
    while (off < c->in_len) {
        size_t slice = c->in_len - off < CHUNK_SLICE ? c->in_len - off : CHUNK_SLICE;
        if (c->body_len + slice + 1 > c->body_cap) {
            c->body_cap = (c->body_len + slice + 1) * 2;
            c->body = mem_realloc(c->body, c->body_cap);
        }
        size_t produced, consumed;
        int r = http1_chunked_decode(&c->chunked, c->in + off, slice, c->body + c->body_len,
                                     &produced, &consumed);
        c->body_len += produced;
        off += consumed;
        if (r < 0) {
            struct http_req *req = c->cur;
            c->cur = NULL;
            dispatch_error(c, req, http1_status(r), http1_strerror(r));
            return true;
        }
        if (r == 1) {
            struct http_req *req = c->cur;
            c->cur = NULL;
            c->body[c->body_len] = 0;
            if (c->body_len > 0) {
                req->body = c->body;
                req->body_len = c->body_len;
            } else {
                mem_free(c->body);
            }
            c->body = NULL;
            c->body_len = c->body_cap = 0;
            conn_consume(c, off);
            dispatch(c, req);
            return true;
        }
    }
    conn_consume(c, off);
    return false;
}

/* Whether another request may be read now. */
static bool conn_may_read_request(const struct http_conn *c)
{
    return c->state == C_OPEN && c->phase != IN_DONE && c->inflight < c->w->cfg->max_inflight &&
           outq_pending(&c->out) < OUT_HIGH;
}

/* Parses and dispatches what the input holds, as far as allowed. */
static bool conn_parse(struct http_conn *c)
{
    bool any = false;
    while (conn_may_read_request(c)) {
        bool progress = false;
        switch (c->phase) {
        case IN_HEAD: progress = c->in_len > 0 && step_head(c); break;
        case IN_BODY: progress = step_body(c); break;
        case IN_CHUNKED: progress = step_chunked(c); break;
        case IN_DONE: break;
        }
        if (!progress)
            break;
        any = true;
    }
    return any;
}

/* Reads what the socket holds, within the budget. An open connection keeps
 * it; a lingering one drops it (LINGER_MAX_BYTES at most, then it stops
 * reading). */
static void conn_read(struct http_conn *c)
{
    if (c->state == C_LINGER) {
        if (linger_discard(c->io.fd, &c->dropped) == LINGER_EOF)
            c->peer_done = true;
        return;
    }
    /* Level-triggered: what the budget leaves is reported again. */
    size_t budget = READ_BUDGET;
    while (budget > 0 && !c->peer_done) {
        if (c->in_cap - c->in_len < READ_CHUNK) {
            c->in_cap = c->in_len + READ_CHUNK;
            c->in = mem_realloc(c->in, c->in_cap);
        }
        ssize_t n = read(c->io.fd, c->in + c->in_len, READ_CHUNK);
        if (n == 0) {
            c->peer_done = true;
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_close(c, strerror(errno));
            else if (c->in_len == 0) {
                mem_free(c->in); /* an idle connection holds no buffer */
                c->in = NULL;
                c->in_cap = 0;
            }
            return;
        }
        c->in_len += (size_t)n;
        if ((size_t)n < READ_CHUNK)
            return;
        budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
        if (!conn_may_read_request(c))
            return;
    }
}

/* ---- Timeouts ----------------------------------------------------------- */

static enum conn_wait conn_wait_kind(const struct http_conn *c)
{
    if (c->state == C_LINGER)
        return W_LINGER;
    if (outq_pending(&c->out) > 0)
        return W_WRITE;
    if (c->cur || (c->phase == IN_HEAD && c->in_len > 0 && c->inflight < c->w->cfg->max_inflight))
        return W_REQUEST;
    if (c->head)
        return W_APP;
    return W_IDLE;
}

static uint64_t conn_wait_limit(const struct http_conn *c)
{
    switch (c->wait) {
    case W_REQUEST: return c->w->cfg->request_timeout_ms;
    case W_LINGER: return LINGER_MS;
    default: return c->w->cfg->idle_timeout_ms;
    }
}

static void conn_on_timer(struct ev_loop *loop, struct ev_timer *t)
{
    struct http_conn *c = t->data;
    switch (c->wait) {
    case W_REQUEST: {
        struct http_req *req = c->cur ? c->cur : req_bare(c);
        c->cur = NULL;
        dispatch_error(c, req, 408, "request not complete in time");
        conn_attend(c);
        /* Written by the prepare hook; the wait is now for the app. */
        c->wait = W_APP;
        c->since_ms = ev_now(loop);
        ev_timer_start(loop, t, conn_wait_limit(c), 0);
        return;
    }
    case W_IDLE: conn_close(c, "idle timeout"); return;
    case W_APP: conn_close(c, "no answer in time"); return;
    case W_WRITE: conn_close(c, "client does not read its responses"); return;
    case W_LINGER: conn_close(c, "linger time over"); return;
    }
}

/* ---- Moving a connection on --------------------------------------------- */

static void conn_set_interest(struct http_conn *c)
{
    uint32_t want = 0;
    if (!c->peer_done &&
        (c->state == C_LINGER ? c->dropped < LINGER_MAX_BYTES : conn_may_read_request(c)))
        want |= EV_READ;
    if (outq_pending(&c->out) > 0)
        want |= EV_WRITE;
    if (ev_io_modify(c->w->base->loop, &c->io, want) < 0)
        conn_close(c, strerror(errno));
}

/* After any event: answers, parses, writes, and moves the connection on to
 * what its state calls for next. */
static void conn_pump(struct http_conn *c, bool progress)
{
    for (int round = 0; round < 64 && c->state != C_CLOSED; round++) {
        bool moved = conn_write_done(c);
        bool parsed = conn_parse(c);
        progress |= moved || parsed;
        /* A handler that answered at once leaves done requests behind. */
        if (!parsed || !c->head || !c->head->done)
            break;
    }
    if (c->state == C_CLOSED)
        return;
    /* Owed once every earlier response is out, so it cannot overtake them. */
    if (c->continue_due && !c->head && c->state == C_OPEN) {
        outq_copy(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
        c->continue_due = false;
    }
    if (c->state == C_OPEN && c->phase == IN_DONE && !c->head && !c->cur)
        c->state = C_CLOSING;
    size_t before = outq_pending(&c->out);
    if (before > 0) {
        if (outq_flush(&c->out, c->io.fd) < 0) {
            conn_close(c, strerror(errno));
            return;
        }
        progress |= outq_pending(&c->out) < before;
    }
    if (outq_pending(&c->out) == 0) {
        if (c->state == C_CLOSING) {
            if (c->peer_done) {
                conn_close(c, "done");
                return;
            }
            linger_shut(c->io.fd);
            c->state = C_LINGER;
            mem_free(c->in);
            c->in = NULL;
            c->in_len = c->in_cap = 0;
            progress = true;
        } else if (c->state == C_OPEN && c->peer_done && !c->head) {
            conn_close(c, "closed by client");
            return;
        } else if (c->state == C_OPEN && c->w->base->draining && !c->head && !c->cur &&
                   c->in_len == 0) {
            conn_close(c, "server draining");
            return;
        }
    }
    if (c->state == C_LINGER && c->peer_done) {
        conn_close(c, "done");
        return;
    }
    conn_set_interest(c);
    if (c->state == C_CLOSED)
        return;
    enum conn_wait kind = conn_wait_kind(c);
    uint64_t now = ev_now(c->w->base->loop);
    if (kind != c->wait || progress) {
        c->wait = kind;
        c->since_ms = now;
    }
    uint64_t deadline = c->since_ms + conn_wait_limit(c);
    ev_timer_start(c->w->base->loop, &c->timer, deadline > now ? deadline - now : 0, 0);
}

static void conn_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct http_conn *c = io->data;
    if (c->state == C_CLOSED)
        return;
    if ((events & EV_READ) && !(c->io.events & EV_READ)) {
        /* Not reading now, yet told of an error or a hang-up: level
         * triggering would repeat it every iteration, so settle it. */
        int err = 0;
        socklen_t len = sizeof err;
        char b;
        if (getsockopt(c->io.fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
            conn_close(c, strerror(err));
            return;
        }
        /* A lingering one stopped reading at LINGER_MAX_BYTES: the
         * client's hang-up ends it. */
        if (c->state == C_LINGER || recv(c->io.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
            c->peer_done = true;
    } else if (events & EV_READ) {
        size_t before = c->in_len;
        conn_read(c);
        if (c->state == C_CLOSED)
            return;
        conn_pump(c, c->in_len != before);
        return;
    }
    conn_pump(c, false);
}

static void http_accept(struct srv_worker *base, unsigned listener, int fd)
{
    struct http_worker *w = base->data;
    struct http_conn *c = mem_calloc(1, sizeof *c);
    c->io.fd = fd;
    c->io.cb = conn_on_io;
    c->io.data = c;
    c->w = w;
    if (ev_io_start(base->loop, &c->io, EV_READ) < 0) {
        log_warn("cannot watch fd %d: %s", fd, strerror(errno));
        close(fd);
        mem_free(c);
        srv_worker_conn_closed(base, fd);
        return;
    }
    ev_timer_init(&c->timer, conn_on_timer, c);
    c->state = C_OPEN;
    c->phase = w->base->draining ? IN_DONE : IN_HEAD;
    c->next = w->conns;
    if (c->next)
        c->next->prev = c;
    w->conns = c;
    c->wait = W_IDLE;
    c->since_ms = ev_now(base->loop);
    ev_timer_start(base->loop, &c->timer, w->cfg->idle_timeout_ms, 0);
    log_debug("HTTP conn %d accepted", fd);
}

static void free_dead(struct http_worker *w)
{
    while (w->dead) {
        struct http_conn *c = w->dead;
        w->dead = c->dead_next;
        mem_free(c);
    }
}

static bool http_prepare(struct srv_worker *base)
{
    struct http_worker *w = base->data;
    for (int pass = 0; pass < 4 && w->attention; pass++) {
        struct http_conn *list = w->attention;
        w->attention = NULL;
        while (list) {
            struct http_conn *c = list;
            list = c->attn_next;
            c->in_attention = false;
            if (c->state != C_CLOSED)
                conn_pump(c, false);
        }
    }
    if (w->attention)
        return true;
    free_dead(w);
    return false;
}

static void http_drain(struct srv_worker *base)
{
    struct http_worker *w = base->data;
    struct http_conn *next;
    for (struct http_conn *c = w->conns; c; c = next) {
        next = c->next;
        /* A lingering one ends on its own, LINGER_MS at most. */
        if (c->state == C_OPEN && !c->head && !c->cur && c->in_len == 0 &&
            outq_pending(&c->out) == 0) {
            conn_close(c, "server draining");
        } else if (c->phase == IN_HEAD && c->in_len == 0) {
            c->phase = IN_DONE; /* the last response in flight closes */
        }
    }
}

static void http_close_all(struct srv_worker *base)
{
    struct http_worker *w = base->data;
    while (w->conns)
        conn_close(w->conns, "server stopping");
    w->attention = NULL;
}

/* ---- The server --------------------------------------------------------- */

struct http_server {
    const struct http_server_config *cfg;
    const struct http_app *app;
};

static int http_worker_init(struct srv_worker *base, void *ctx)
{
    struct http_server *s = ctx;
    struct http_worker *w = mem_calloc(1, sizeof *w);
    w->base = base;
    w->cfg = s->cfg;
    w->app = s->app;
    w->gzip = http_gzip_new();
    base->data = w;
    if (s->app->worker_init) {
        w->app_worker = s->app->worker_init(base->loop, base->index, s->app->ctx);
        if (!w->app_worker)
            return -1;
    }
    return 0;
}

static void http_worker_fini(struct srv_worker *base, void *ctx)
{
    struct http_server *s = ctx;
    struct http_worker *w = base->data;
    if (!w)
        return;
    free_dead(w);
    http_gzip_free(w->gzip);
    /* The app has stopped (its stopped hook ran): nobody will answer these. */
    while (w->orphans) {
        struct http_req *req = w->orphans;
        orphan_unlink(req);
        req_free(req);
    }
    if (w->app_worker && s->app->worker_fini)
        s->app->worker_fini(w->app_worker, s->app->ctx);
    mem_free(w);
    base->data = NULL;
}

static void http_listening(void *ctx, const int *ports)
{
    struct http_server *s = ctx;
    bool v6 = strchr(s->cfg->bind, ':') != NULL;
    log_info("%s: HTTP/1.1 on %s%s%s:%d, %u worker%s", s->cfg->name, v6 ? "[" : "", s->cfg->bind,
             v6 ? "]" : "", ports[0], s->cfg->threads, s->cfg->threads == 1 ? "" : "s");
}

static void http_stopped(void *ctx)
{
    struct http_server *s = ctx;
    if (s->app->stopped)
        s->app->stopped(s->app->ctx);
}

int http_server_run(const struct http_server_config *cfg, const struct http_app *app)
{
    static const struct srv_hooks hooks = {
        .worker_init = http_worker_init,
        .accept = http_accept,
        .prepare = http_prepare,
        .drain = http_drain,
        .close_all = http_close_all,
        .listening = http_listening,
        .stopped = http_stopped,
        .worker_fini = http_worker_fini,
    };
    struct srv_config sc = {
        .bind = cfg->bind,
        .ports = {cfg->port},
        .nports = 1,
        .threads = cfg->threads ? cfg->threads : 1,
        .max_connections = cfg->max_connections,
        .max_per_address = cfg->max_per_address,
        .drain_timeout_ms = cfg->drain_timeout_ms,
    };
    struct http_server s = {.cfg = cfg, .app = app};
    return srv_run(&sc, &hooks, &s);
}
