/* http_proto.c - the HTTP/1.1 server protocol machine (http_proto.h):
 * heads parsed by http1.c, bodies framed here, answers serialised straight
 * into the caller's output (synchronous apps) or queued in request order
 * (asynchronous ones); and the small pure helpers every HTTP server uses
 * (date, reason phrases, Accept-Encoding, gzip, target paths). */
#include "http/http_proto.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/outq.h"
#include "core/version.h"

/* More fields than this is a 431; real clients send about ten. */
#define MAX_HEADERS 64
/* Input handed to the chunked decoder at a time, so that the body buffer
 * only ever needs this much room beyond what it holds. */
#define CHUNK_SLICE 4096
/* Speed over ratio: every response of a Gatling journey asks for gzip, so
 * compression is on the hot path; level 1 still shrinks JSON 4-6x. */
#define GZIP_LEVEL 1
/* Room for a response head but the app's Content-Type and extra headers:
 * the longest status line, Date, Server, Content-Encoding, Vary,
 * Content-Length and Connection come to about 240 bytes. */
#define HEAD_BASE 320

static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

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

/* The statuses the servers answer with, and their reason phrases. */
#define HTTP_STATUSES(X)                                                                          \
    X(100, "Continue")                                                                            \
    X(200, "OK")                                                                                  \
    X(201, "Created")                                                                             \
    X(204, "No Content")                                                                          \
    X(304, "Not Modified")                                                                        \
    X(400, "Bad Request")                                                                         \
    X(404, "Not Found")                                                                           \
    X(405, "Method Not Allowed")                                                                  \
    X(408, "Request Timeout")                                                                     \
    X(409, "Conflict")                                                                            \
    X(413, "Content Too Large")                                                                   \
    X(415, "Unsupported Media Type")                                                              \
    X(417, "Expectation Failed")                                                                  \
    X(431, "Request Header Fields Too Large")                                                     \
    X(500, "Internal Server Error")                                                               \
    X(501, "Not Implemented")                                                                     \
    X(503, "Service Unavailable")                                                                 \
    X(505, "HTTP Version Not Supported")

const char *http_reason(int status)
{
    switch (status) {
#define REASON(code, text)                                                                        \
    case code: return text;
        HTTP_STATUSES(REASON)
#undef REASON
    default: return "Unknown";
    }
}

/* "HTTP/1.1 <code> <reason>\r\n" as one literal, *n its length: the
 * status line costs one copy. */
static const char *status_line(int status, size_t *n)
{
    switch (status) {
#define LINE(code, text)                                                                          \
    case code:                                                                                    \
        *n = sizeof("HTTP/1.1 " #code " " text "\r\n") - 1;                                     \
        return "HTTP/1.1 " #code " " text "\r\n";
        HTTP_STATUSES(LINE)
#undef LINE
    default: *n = 0; return NULL;
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

/* ---- Writing ------------------------------------------------------------- */

static char *put(char *w, const char *s, size_t n)
{
    if (n > 0) /* s may be NULL then (a 201 without a body) */
        memcpy(w, s, n);
    return w + n;
}

#define PUT_LIT(w, lit) put((w), (lit), sizeof(lit) - 1)


static char *put_uint(char *w, uint64_t v)
{
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *w++ = digits[--n];
    return w;
}

/* Appends to the output: into buf while it has room, else (buf's bytes
 * first, to keep the order) to the spill queue. */
static void out_put(struct http_out *o, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (o->cap - o->len >= n && outq_pending(o->spill) == 0) {
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        return;
    }
    if (o->len > 0) {
        outq_copy(o->spill, o->buf, o->len);
        o->len = 0;
    }
    outq_copy(o->spill, s, n);
}

static bool out_has_room(const struct http_out *o)
{
    return o->cap - o->len >= HTTP_PROTO_ROOM && outq_pending(o->spill) < HTTP_PROTO_SPILL_HIGH;
}

/* The status line and the fields up to, not including, Connection. */
struct head {
    int status;
    const char *content_type, *extra; /* NULL when absent */
    size_t content_type_len, extra_len;
    size_t body_len;
    bool bodiless, zipped, vary;
};

static size_t head_size(const struct head *h)
{
    return HEAD_BASE + h->content_type_len + h->extra_len;
}

static char *put_head(char *w, const struct head *h, const char *date)
{
    size_t n;
    const char *line = status_line(h->status, &n);
    if (line) {
        w = put(w, line, n);
    } else {
        w = PUT_LIT(w, "HTTP/1.1 ");
        w = put_uint(w, (uint64_t)h->status);
        w = PUT_LIT(w, " Unknown\r\n");
    }
    w = PUT_LIT(w, "Date: ");
    w = put(w, date, HTTP_DATE_LEN);
    w = PUT_LIT(w, "\r\nServer: shootout/" SHOOTOUT_VERSION "\r\n");
    if (h->content_type && !h->bodiless) {
        w = PUT_LIT(w, "Content-Type: ");
        w = put(w, h->content_type, h->content_type_len);
        w = PUT_LIT(w, "\r\n");
    }
    if (h->zipped)
        w = PUT_LIT(w, "Content-Encoding: gzip\r\n");
    if (h->vary)
        w = PUT_LIT(w, "Vary: Accept-Encoding\r\n");
    if (!h->bodiless) {
        w = PUT_LIT(w, "Content-Length: ");
        w = put_uint(w, h->body_len);
        w = PUT_LIT(w, "\r\n");
    }
    return put(w, h->extra, h->extra_len);
}

static const char *connection_line(bool last, bool http10, size_t *n)
{
    static const char close_[] = "Connection: close\r\n\r\n";
    static const char keep[] = "Connection: keep-alive\r\n\r\n";
    if (last) {
        *n = sizeof close_ - 1;
        return close_;
    }
    if (http10) {
        *n = sizeof keep - 1;
        return keep;
    }
    *n = 2;
    return "\r\n";
}

/* ---- Requests -------------------------------------------------------------- */

static void req_free(struct http_req *req)
{
    if (req->body_owned)
        mem_free((void *)req->body);
    mem_free(req->resp);
    mem_free(req);
}

/* A copy of a request that outlives the input it was parsed from: one
 * allocation, the strings NUL-terminated after it; the body is added
 * later. */
static struct http_req *req_copy(const struct http_req *v)
{
    const struct http1_str *s[] = {&v->method, &v->path, &v->query, &v->content_type};
    size_t text = 0;
    for (size_t i = 0; i < 4; i++)
        text += s[i]->len + 1;
    struct http_req *req = mem_alloc(sizeof *req + text);
    *req = *v;
    struct http1_str *d[] = {&req->method, &req->path, &req->query, &req->content_type};
    char *t = (char *)(req + 1);
    for (size_t i = 0; i < 4; i++) {
        if (!s[i]->ptr) {
            d[i]->ptr = NULL;
            t++;
            continue;
        }
        memcpy(t, s[i]->ptr, s[i]->len);
        t[s[i]->len] = '\0';
        d[i]->ptr = t;
        t += s[i]->len + 1;
    }
    req->body = NULL;
    req->body_len = 0;
    return req;
}

/* The view of a parsed head, pointing into the input. */
static void req_view(struct http_proto *p, struct http_req *v, const struct http1_request *r,
                     const struct http1_header *headers)
{
    struct http_env *env = p->env;
    memset(v, 0, sizeof *v);
    v->method = r->method;
    v->path = http_target_path(r->path);
    v->query = r->query;
    v->content_type = r->content_type;
    v->has_body = r->body == HTTP1_BODY_CHUNKED ||
                  (r->body == HTTP1_BODY_LENGTH && r->content_length > 0);
    v->content_length = r->body == HTTP1_BODY_LENGTH ? r->content_length : 0;
    v->head = r->method.len == 4 && memcmp(r->method.ptr, "HEAD", 4) == 0;
    if (env->gzip) {
        const struct http1_header *ae =
            http1_find_header(headers, r->num_headers, "accept-encoding");
        v->gzip_ok = ae && http_accepts_gzip(ae->value);
    }
    v->start_ns = env->now_ns ? env->now_ns() : 0;
    v->route = -1;
    v->worker = env->app_worker;
    v->p = p;
    v->env = env;
    v->keep_alive = r->keep_alive;
    v->http10 = r->minor_version == 0;
}

/* A request for an answer of the machine's own to input it could not read. */
static void req_bare(struct http_proto *p, struct http_req *v, const char *what)
{
    memset(v, 0, sizeof *v);
    v->method = v->path = (struct http1_str){"-", 1};
    v->route = -1;
    v->worker = p->env->app_worker;
    v->start_ns = p->env->now_ns ? p->env->now_ns() : 0;
    v->p = p;
    v->env = p->env;
    v->what = what;
}

static void orphan_unlink(struct http_req *req)
{
    *req->pprev_orphan = req->next;
    if (req->next)
        req->next->pprev_orphan = req->pprev_orphan;
}

static void enqueue(struct http_proto *p, struct http_req *req)
{
    req->next = NULL;
    if (p->tail)
        p->tail->next = req;
    else
        p->head = req;
    p->tail = req;
    p->inflight++;
}

/* ---- Answers ------------------------------------------------------------- */

static void log_answer(const struct http_req *req, int status, const char *body, size_t len)
{
    const struct http_env *env = req->env;
    char what[96];
    if (req->what)
        snprintf(what, sizeof what, "%s", req->what);
    else
        snprintf(what, sizeof what, "%.*s %.*s%s%.*s", (int)req->method.len, req->method.ptr,
                 (int)req->path.len, req->path.ptr, req->query.ptr ? "?" : "",
                 req->query.ptr ? (int)req->query.len : 0, req->query.ptr ? req->query.ptr : "");
    if (status >= 400 && len <= 256)
        log_debug("%s conn %d: %s -> %d %.*s", env->log_name, req->p ? req->p->id : -1, what,
                  status, (int)len, body);
    else
        log_debug("%s conn %d: %s -> %d", env->log_name, req->p ? req->p->id : -1, what, status);
}

void http_respond(struct http_req *req, int status, const char *content_type, const char *body,
                  size_t len, const char *extra_headers)
{
    struct http_proto *p = req->p;
    if (!p) {
        orphan_unlink(req);
        req_free(req);
        return;
    }
    struct http_env *env = req->env;
    if (env->app->observe)
        env->app->observe(req, status);
    if (env->log_requests)
        log_answer(req, status, body, len);
    req->answered = true;

    struct head h = {.status = status, .content_type = content_type, .extra = extra_headers};
    h.content_type_len = content_type ? strlen(content_type) : 0;
    h.extra_len = extra_headers ? strlen(extra_headers) : 0;
    h.bodiless = status == 204 || status == 304 || status < 200;
    h.vary = env->gzip && !h.bodiless && len > HTTP_GZIP_MIN;
    char *zipped = NULL;
    if (h.vary && req->gzip_ok) {
        size_t n = http_gzip(env->gzip, body, len, &zipped);
        if (n > 0) {
            body = zipped;
            len = n;
            h.zipped = true;
        }
    }
    h.body_len = len;
    size_t body_out = h.bodiless || req->head ? 0 : len;

    if (!env->app->async) {
        /* In line: nothing can be ahead of it. */
        struct http_out *o = p->out;
        bool last = !req->keep_alive || env->draining || p->phase == HTTP_DONE;
        size_t need = head_size(&h) + body_out;
        size_t n;
        const char *conn = connection_line(last, req->http10, &n);
        if (o->cap - o->len >= need && outq_pending(o->spill) == 0) {
            char *start = o->buf + o->len;
            char *w = put_head(start, &h, env->date());
            if (n == 2) { /* the common "\r\n": no copy call */
                *w++ = '\r';
                *w++ = '\n';
            } else {
                w = put(w, conn, n);
            }
            w = put(w, body, body_out);
            o->len += (size_t)(w - start);
        } else {
            char local[HTTP_PROTO_ROOM];
            size_t hs = head_size(&h);
            char *hb = hs <= sizeof local ? local : mem_alloc(hs);
            size_t hl = (size_t)(put_head(hb, &h, env->date()) - hb);
            out_put(o, hb, hl);
            out_put(o, conn, n);
            out_put(o, body, body_out);
            if (hb != local)
                mem_free(hb);
        }
        if (last)
            p->phase = HTTP_CLOSED;
        mem_free(zipped);
        return;
    }

    /* Queued: the Connection field is decided when it goes out. */
    char *buf = mem_alloc(head_size(&h) + body_out);
    req->resp_head_len = (size_t)(put_head(buf, &h, env->date()) - buf);
    put(buf + req->resp_head_len, body, body_out);
    req->resp = buf;
    req->resp_len = req->resp_head_len + body_out;
    req->done = true;
    mem_free(zipped);
    /* Within a feed, the feed sends it. */
    if (req == p->head && !p->out && env->ready)
        env->ready(p);
}

/* Answers with an error of the machine's own, the app shaping the body;
 * close: the connection ends after it whatever the request said. */
static void error_reply(struct http_req *req, int status, const char *message, bool close)
{
    if (close)
        req->keep_alive = false;
    const struct http_app *app = req->env->app;
    if (app->error)
        app->error(req, status, message);
    else
        http_respond(req, status, "text/plain; charset=utf-8", message, strlen(message), NULL);
}

/* Moves the ready answers at the queue's head to the output, in order. */
static void emit_ready(struct http_proto *p)
{
    while (p->head && p->head->done && p->phase != HTTP_CLOSED) {
        struct http_req *req = p->head;
        p->head = req->next;
        if (!p->head)
            p->tail = NULL;
        p->inflight--;
        bool last = !req->keep_alive ||
                    ((p->env->draining || p->phase == HTTP_DONE) && !p->head && !p->cur);
        size_t n;
        const char *conn = connection_line(last, req->http10, &n);
        out_put(p->out, req->resp, req->resp_head_len);
        out_put(p->out, conn, n);
        out_put(p->out, req->resp + req->resp_head_len, req->resp_len - req->resp_head_len);
        req_free(req);
        if (last)
            p->phase = HTTP_CLOSED;
    }
    if (p->continue_due && !p->head && p->phase != HTTP_CLOSED) {
        out_put(p->out, cont, sizeof cont - 1);
        p->continue_due = false;
    }
}

/* An error answered in order, after which nothing more is read. A
 * synchronous app's answer goes out at once; an asynchronous one's is
 * queued behind those still due, on a copy of v. */
static void fail(struct http_proto *p, struct http_req *v, bool owned, int status,
                 const char *msg)
{
    if (p->env->app->async) {
        struct http_req *req = owned ? v : req_copy(v);
        enqueue(p, req);
        p->phase = HTTP_DONE;
        error_reply(req, status, msg, true);
        return;
    }
    error_reply(v, status, msg, true);
    p->phase = HTTP_CLOSED;
    if (owned)
        req_free(v);
}

/* ---- Requests complete ------------------------------------------------------- */

static void drop_body(struct http_proto *p)
{
    mem_free(p->body);
    p->body = NULL;
    p->body_len = p->body_cap = 0;
}

/* Hands a complete request to the app. req is v (a synchronous app's view,
 * on the caller's stack) or a copy of its own (owned = true). */
static void dispatch(struct http_proto *p, struct http_req *req, bool owned)
{
    struct http_env *env = p->env;
    p->requests++;
    p->continue_due = false;
    if (env->app->async) {
        enqueue(p, req);
        p->phase = req->keep_alive && !env->draining ? HTTP_HEAD : HTTP_DONE;
        env->app->handle(req);
        return;
    }
    p->phase = HTTP_HEAD;
    env->app->handle(req);
    if (!req->answered)
        error_reply(req, 500, "the request was not answered", true);
    if (owned)
        req_free(req);
}

/* RFC 9110 section 10.1.1: 100-continue is the only expectation defined;
 * a server may answer any other with 417. HTTP/1.0 has none. */
static bool expectation_failed(const struct http1_request *req, const struct http1_header *h)
{
    if (req->minor_version == 0)
        return false;
    for (size_t i = 0; i < req->num_headers; i++)
        if (http1_str_eq(h[i].name, "expect") && !http1_str_eq(h[i].value, "100-continue"))
            return true;
    return false;
}

/* After an answer from the head alone: the body, if any, is skipped so
 * that the connection can go on, unless the answer closes it. */
static void skip_body(struct http_proto *p, const struct http_req *req,
                      const struct http1_request *r)
{
    if (p->env->app->async && (!req->keep_alive || p->env->draining))
        p->phase = HTTP_DONE;
    if (p->phase == HTTP_CLOSED || p->phase == HTTP_DONE)
        return;
    if (r->body == HTTP1_BODY_CHUNKED) {
        http1_chunked_init(&p->chunked, p->env->max_body);
        p->phase = HTTP_SKIP_CHUNKED;
    } else if (r->body == HTTP1_BODY_LENGTH && r->content_length > 0) {
        p->body_left = p->skip_len = r->content_length;
        p->phase = HTTP_SKIP;
    } else {
        p->phase = HTTP_HEAD;
    }
}

/* A complete head of hl bytes in data[0..len). Consumes *n. */
static void start_request(struct http_proto *p, const struct http1_request *r,
                          const struct http1_header *headers, const char *data, size_t len,
                          size_t hl, size_t *n)
{
    struct http_env *env = p->env;
    const struct http_app *app = env->app;
    struct http_req v;
    req_view(p, &v, r, headers);
    bool too_large = r->body == HTTP1_BODY_LENGTH && r->content_length > env->max_body;
    bool keep_alive = v.keep_alive;
    size_t after = len - hl;
    *n = hl;

    /* Answered from the head alone, the connection closes when the body is
     * over the limit, or when the client may be holding it back for a 100
     * Continue that will not come (it might send it after all, or not:
     * only closing is unambiguous). */
    if (expectation_failed(r, headers)) {
        v.keep_alive = keep_alive && !v.has_body;
        struct http_req *req = &v;
        if (app->async) {
            req = req_copy(&v);
            enqueue(p, req);
        }
        p->requests++;
        error_reply(req, 417, "only 100-continue can be expected", false);
        skip_body(p, &v, r);
        return;
    }
    if (app->head) {
        v.keep_alive = keep_alive && !too_large && !(v.has_body && r->expect_continue);
        app->head(&v);
        if (v.answered) {
            p->requests++;
            skip_body(p, &v, r);
            return;
        }
        v.keep_alive = keep_alive;
    }
    if (too_large) {
        fail(p, &v, false, 413, "request body too large");
        *n = len;
        return;
    }
    if (r->body == HTTP1_BODY_LENGTH && after >= r->content_length && !app->async) {
        /* The common case: the body came with the head, and is read where
         * it lies. */
        v.body = r->content_length > 0 ? data + hl : NULL;
        v.body_len = (size_t)r->content_length;
        *n = hl + (size_t)r->content_length;
        dispatch(p, &v, false);
        return;
    }
    if (!v.has_body) {
        dispatch(p, app->async ? req_copy(&v) : &v, false);
        return;
    }
    p->cur = req_copy(&v);
    if (r->expect_continue && after == 0) {
        if (p->head)
            p->continue_due = true;
        else
            out_put(p->out, cont, sizeof cont - 1);
    }
    if (r->body == HTTP1_BODY_CHUNKED) {
        http1_chunked_init(&p->chunked, env->max_body);
        p->phase = HTTP_CHUNKED;
    } else {
        p->body_left = r->content_length;
        p->phase = HTTP_BODY;
    }
}

/* ---- One step per phase: each consumes *n bytes and returns whether it
 * made progress (false: it needs more input) ---------------------------- */

static bool step_head(struct http_proto *p, const char *data, size_t len, size_t *n)
{
    if (len == 0)
        return false;
    struct http1_request r;
    struct http1_header headers[MAX_HEADERS];
    int k = http1_parse_request(data, len, &r, headers, MAX_HEADERS, p->env->max_header);
    if (k == 0)
        return false;
    if (k < 0) {
        /* Where this request ends is unknown, so nothing after it can be
         * read: answer and close. */
        struct http_req bare;
        req_bare(p, &bare, "(malformed request)");
        fail(p, &bare, false, http1_status(k), http1_strerror(k));
        *n = len;
        return true;
    }
    start_request(p, &r, headers, data, len, (size_t)k, n);
    return true;
}

/* The request whose body was read, complete: body[0..len) lies in the
 * input (Content-Length) or in p->body (chunked, owned = true). */
static void complete(struct http_proto *p, const char *body, size_t len, bool from_chunks)
{
    struct http_req *req = p->cur;
    p->cur = NULL;
    if (p->env->app->async) {
        if (from_chunks) {
            req->body = len > 0 ? body : NULL;
            req->body_owned = len > 0;
            if (len > 0)
                p->body = NULL; /* the request has it now */
        } else {
            req->body = mem_strndup(body, len);
            req->body_owned = true;
        }
    } else {
        req->body = len > 0 ? body : NULL;
    }
    req->body_len = len;
    dispatch(p, req, true);
    drop_body(p);
}

static bool step_body(struct http_proto *p, const char *data, size_t len, size_t *n)
{
    if (len > 0)
        p->continue_due = false; /* the client did not wait for it */
    if (len < p->body_left)
        return false;
    *n = (size_t)p->body_left;
    complete(p, data, *n, false);
    return true;
}

/* Room in p->body for the output of a slice of input and a NUL. The
 * decoder never takes the body past max_body, so the buffer stays within
 * max_body + CHUNK_SLICE + 1. */
static void reserve_body(struct http_proto *p, size_t slice)
{
    size_t need = p->body_len + slice + 1, max = p->env->max_body + CHUNK_SLICE + 1;
    if (p->body_cap >= need)
        return;
    size_t cap = p->body_cap ? p->body_cap * 2 : CHUNK_SLICE;
    if (cap > max)
        cap = max;
    if (cap < need)
        cap = need;
    p->body = mem_realloc(p->body, cap);
    p->body_cap = cap;
}

static bool step_chunked(struct http_proto *p, const char *data, size_t len, size_t *n)
{
    if (len == 0)
        return false;
    p->continue_due = false;
    size_t off = 0;
    while (off < len) {
        size_t slice = len - off < CHUNK_SLICE ? len - off : CHUNK_SLICE;
        reserve_body(p, slice);
        size_t produced, consumed;
        int r = http1_chunked_decode(&p->chunked, data + off, slice, p->body + p->body_len,
                                     &produced, &consumed);
        p->body_len += produced;
        off += consumed;
        if (r < 0) {
            drop_body(p);
            struct http_req *req = p->cur;
            p->cur = NULL;
            fail(p, req, true, http1_status(r), http1_strerror(r));
            *n = len;
            return true;
        }
        if (r == 1) {
            p->body[p->body_len] = '\0';
            complete(p, p->body, p->body_len, true);
            break;
        }
    }
    *n = off;
    return true;
}

static bool step_skip(struct http_proto *p, size_t len, size_t *n)
{
    if (len == 0)
        return false;
    *n = len < p->body_left ? len : (size_t)p->body_left;
    p->body_left -= *n;
    if (p->body_left == 0)
        p->phase = HTTP_HEAD;
    return true;
}

static bool step_skip_chunked(struct http_proto *p, const char *data, size_t len, size_t *n)
{
    if (len == 0)
        return false;
    char sink[CHUNK_SLICE];
    size_t off = 0;
    while (off < len) {
        size_t slice = len - off < sizeof sink ? len - off : sizeof sink;
        size_t produced, consumed;
        int r = http1_chunked_decode(&p->chunked, data + off, slice, sink, &produced, &consumed);
        off += consumed;
        if (r < 0) {
            /* Its answer is out already; a second one would be taken for
             * the next request's. */
            p->phase = p->env->app->async ? HTTP_DONE : HTTP_CLOSED;
            off = len;
            break;
        }
        if (r == 1) {
            p->phase = HTTP_HEAD;
            break;
        }
    }
    *n = off;
    return true;
}

/* ---- Interface ---------------------------------------------------------- */

void http_proto_init(struct http_proto *p, struct http_env *env, int id)
{
    memset(p, 0, sizeof *p);
    p->phase = HTTP_HEAD;
    p->env = env;
    p->id = id;
}

void http_proto_free(struct http_proto *p)
{
    drop_body(p);
    if (p->cur)
        req_free(p->cur);
    p->cur = NULL;
    struct http_env *env = p->env;
    while (p->head) {
        struct http_req *req = p->head;
        p->head = req->next;
        if (req->done) {
            req_free(req);
            continue;
        }
        /* Its handler still holds it. */
        req->p = NULL;
        req->next = env->orphans;
        if (req->next)
            req->next->pprev_orphan = &req->next;
        env->orphans = req;
        req->pprev_orphan = &env->orphans;
    }
    p->tail = NULL;
    p->inflight = 0;
    p->phase = HTTP_CLOSED;
}

void http_env_free_orphans(struct http_env *env)
{
    while (env->orphans) {
        struct http_req *req = env->orphans;
        orphan_unlink(req);
        req_free(req);
    }
}

enum http_stop http_proto_feed(struct http_proto *p, const char *data, size_t len, size_t *used,
                               struct http_out *out)
{
    const struct http_env *env = p->env;
    size_t off = 0;
    enum http_stop stop;
    p->out = out;
    for (;;) {
        if (p->head || p->continue_due)
            emit_ready(p);
        if (p->phase == HTTP_DONE && !p->head && !p->cur)
            p->phase = HTTP_CLOSED;
        if (p->phase == HTTP_CLOSED) {
            off = len;
            stop = HTTP_CLOSE;
            break;
        }
        if (!out_has_room(out)) {
            stop = HTTP_OUT_FULL;
            break;
        }
        if (p->phase == HTTP_DONE || (env->app->async && p->inflight >= env->max_inflight)) {
            stop = HTTP_WAIT_APP;
            break;
        }
        size_t n = 0;
        bool progress = false;
        switch (p->phase) {
        case HTTP_HEAD: progress = step_head(p, data + off, len - off, &n); break;
        case HTTP_BODY: progress = step_body(p, data + off, len - off, &n); break;
        case HTTP_CHUNKED: progress = step_chunked(p, data + off, len - off, &n); break;
        case HTTP_SKIP: progress = step_skip(p, len - off, &n); break;
        case HTTP_SKIP_CHUNKED: progress = step_skip_chunked(p, data + off, len - off, &n); break;
        case HTTP_DONE:
        case HTTP_CLOSED: break;
        }
        off += n;
        if (!progress) {
            stop = HTTP_NEED_MORE;
            break;
        }
    }
    p->out = NULL;
    *used = off;
    return stop;
}

bool http_proto_busy(const struct http_proto *p, size_t pending)
{
    switch (p->phase) {
    case HTTP_HEAD:
        return pending > 0 && (!p->env->app->async || p->inflight < p->env->max_inflight);
    case HTTP_DONE:
    case HTTP_CLOSED: return false;
    default: return true;
    }
}

uint64_t http_proto_body_received(const struct http_proto *p, size_t pending)
{
    switch (p->phase) {
    case HTTP_BODY: return pending; /* the body waits in the input until complete */
    case HTTP_CHUNKED: return p->body_len + pending;
    case HTTP_SKIP: return p->skip_len - p->body_left;
    case HTTP_SKIP_CHUNKED: return p->chunked.total + pending;
    default: return 0;
    }
}

void http_proto_timeout(struct http_proto *p, struct http_out *out)
{
    p->out = out;
    switch (p->phase) {
    case HTTP_HEAD:
    case HTTP_BODY:
    case HTTP_CHUNKED:
        drop_body(p);
        if (p->cur) {
            struct http_req *req = p->cur;
            p->cur = NULL;
            fail(p, req, true, 408, "request not complete in time");
        } else {
            struct http_req bare;
            req_bare(p, &bare, "(incomplete request)");
            fail(p, &bare, false, 408, "request not complete in time");
        }
        break;
    default:
        /* Only an answered request's body was being skipped. */
        p->phase = p->env->app->async && p->head ? HTTP_DONE : HTTP_CLOSED;
        break;
    }
    emit_ready(p);
    p->out = NULL;
}
