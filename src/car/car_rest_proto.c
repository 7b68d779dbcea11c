/* car_rest_proto.c - the Car service's HTTP/1.1 request handling: heads
 * parsed by http1.c, documents by car_json.c, responses written straight
 * into the caller's output buffer. */
#include "car/car_rest_proto.h"

#include <stdio.h>
#include <string.h>

#include "car/car_json.h"
#include "car/car_server.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/version.h"
#include "http/http_server.h"

/* More fields than this is a 431; real clients send about ten. */
#define MAX_HEADERS 64
/* Input handed to the chunked decoder at a time, so that the body buffer
 * only ever needs this much room beyond what it holds. */
#define CHUNK_SLICE 4096
/* Documents up to this size are unescaped on the stack; the article's is
 * 175 bytes. Larger ones get a buffer for the moment. */
#define JSON_STACK_BUF 4096

static const char body_created[] = "{\"status\":\"created\"}";
static const char body_ok[] = "{\"status\":\"ok\"}";

static const char *status_line(int status)
{
    switch (status) {
    case 200: return "HTTP/1.1 200 OK\r\n";
    case 201: return "HTTP/1.1 201 Created\r\n";
    case 400: return "HTTP/1.1 400 Bad Request\r\n";
    case 404: return "HTTP/1.1 404 Not Found\r\n";
    case 405: return "HTTP/1.1 405 Method Not Allowed\r\n";
    case 408: return "HTTP/1.1 408 Request Timeout\r\n";
    case 413: return "HTTP/1.1 413 Content Too Large\r\n";
    case 415: return "HTTP/1.1 415 Unsupported Media Type\r\n";
    case 417: return "HTTP/1.1 417 Expectation Failed\r\n";
    case 431: return "HTTP/1.1 431 Request Header Fields Too Large\r\n";
    case 501: return "HTTP/1.1 501 Not Implemented\r\n";
    case 505: return "HTTP/1.1 505 HTTP Version Not Supported\r\n";
    default: return "HTTP/1.1 500 Internal Server Error\r\n";
    }
}

/* ---- Writing responses ---------------------------------------------------- */

static char *put(char *w, const char *s, size_t n)
{
    memcpy(w, s, n);
    return w + n;
}

#define PUT_LIT(w, lit) put((w), (lit), sizeof(lit) - 1)

static char *put_str(char *w, const char *s) { return put(w, s, strlen(s)); }

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

/* A response without a body of its own: {"error":"<text>"}. The texts are
 * ours and need no escaping. */
static size_t error_body(char *out, size_t cap, const char *text)
{
    int n = snprintf(out, cap, "{\"error\":\"%s\"}", text);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

struct answer {
    int status;
    const char *allow;   /* Allow header value, or NULL */
    const char *body;    /* JSON */
    size_t body_len;
    bool head_only;      /* HEAD: the body is announced, not sent */
    bool close;          /* close after this response whatever the request said */
};

/* Appends the final response to the request in progress and counts it.
 * After a closing response the machine stops (CAR_REST_CLOSED); otherwise
 * the caller picks the next phase. */
static void respond(struct car_rest_proto *p, const struct car_rest_env *env,
                    struct car_rest_out *out, const struct answer *a)
{
    bool close = a->close || !p->keep_alive || env->draining;
    char *start = out->buf + out->len, *w = start;
    w = put_str(w, status_line(a->status));
    w = PUT_LIT(w, "Date: ");
    w = put(w, env->date, CAR_REST_DATE_LEN);
    w = PUT_LIT(w, "\r\nServer: shootout/" SHOOTOUT_VERSION
                   "\r\nContent-Type: application/json\r\nContent-Length: ");
    w = put_uint(w, a->body_len);
    w = PUT_LIT(w, "\r\n");
    if (a->allow) {
        w = PUT_LIT(w, "Allow: ");
        w = put_str(w, a->allow);
        w = PUT_LIT(w, "\r\n");
    }
    if (close)
        w = PUT_LIT(w, "Connection: close\r\n");
    else if (p->http10)
        w = PUT_LIT(w, "Connection: keep-alive\r\n");
    w = PUT_LIT(w, "\r\n");
    if (!a->head_only)
        w = put(w, a->body, a->body_len);
    out->len += (size_t)(w - start);

    p->requests++;
    if (env->stats) {
        env->stats->rest_requests++;
        if (a->status >= 400)
            env->stats->rest_errors++;
    }
    if (env->log_requests) {
        if (a->status >= 400)
            log_debug("REST conn %d: %s -> %d %.*s", p->id, p->what, a->status, (int)a->body_len,
                      a->body);
        else
            log_debug("REST conn %d: %s -> %d", p->id, p->what, a->status);
    }
    if (close)
        p->phase = CAR_REST_CLOSED;
}

/* Answers a request with an error of ours, closing the connection. */
static void respond_error(struct car_rest_proto *p, const struct car_rest_env *env,
                          struct car_rest_out *out, int status, const char *text)
{
    char body[128];
    struct answer a = {.status = status, .close = true};
    a.body = body;
    a.body_len = error_body(body, sizeof body, text);
    respond(p, env, out, &a);
}

static void drop_body(struct car_rest_proto *p)
{
    mem_free(p->body);
    p->body = NULL;
    p->body_len = p->body_cap = 0;
}

/* ---- The service ---------------------------------------------------------- */

/* POST /v1/create with its whole document in body[0..len). */
static void create(struct car_rest_proto *p, const struct car_rest_env *env,
                   struct car_rest_out *out, const char *body, size_t len)
{
    char local[JSON_STACK_BUF];
    char *strings = len <= sizeof local ? local : mem_alloc(len);
    struct car_record rec;
    struct car_json_error err;
    char err_body[256];
    struct answer a = {.status = 201, .body = body_created, .body_len = sizeof body_created - 1};
    if (car_json_parse(body, len, &rec, strings, len <= sizeof local ? sizeof local : len, &err) !=
        CAR_JSON_OK) {
        a.status = 400;
        a.body = err_body;
        a.body_len = car_json_error_body(&err, err_body, sizeof err_body);
        if (a.body_len >= sizeof err_body) /* cannot happen: the texts are short */
            a.body_len = sizeof err_body - 1;
    }
    if (strings != local)
        mem_free(strings);
    respond(p, env, out, &a);
    if (p->phase != CAR_REST_CLOSED)
        p->phase = CAR_REST_HEAD;
}

static bool str_is(struct http1_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
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

/* A complete head: decides the answer, or prepares to read the document.
 * `after` is how many bytes already follow the head. */
static void start_request(struct car_rest_proto *p, const struct car_rest_env *env,
                          struct car_rest_out *out, const struct http1_request *req,
                          const struct http1_header *headers, size_t after)
{
    p->keep_alive = req->keep_alive;
    p->http10 = req->minor_version == 0;
    if (env->log_requests)
        snprintf(p->what, sizeof p->what, "%.*s %.*s", (int)req->method.len, req->method.ptr,
                 (int)req->target.len, req->target.ptr);

    bool has_body = req->body == HTTP1_BODY_CHUNKED ||
                    (req->body == HTTP1_BODY_LENGTH && req->content_length > 0);
    bool too_large = req->body == HTTP1_BODY_LENGTH && req->content_length > env->max_body;
    struct http1_str path = http_target_path(req->path);
    bool get = str_is(req->method, "GET"), head = str_is(req->method, "HEAD");
    char err[128];
    struct answer a = {.head_only = head, .body = err};

    if (expectation_failed(req, headers)) {
        a.status = 417;
        a.body_len = error_body(err, sizeof err, "only 100-continue can be expected");
    } else if (str_is(path, "/v1/create")) {
        if (!str_is(req->method, "POST")) {
            a.status = 405;
            a.allow = "POST";
            a.body_len = error_body(err, sizeof err, "method not allowed");
        } else if (!http1_media_type_is(req->content_type, "application/json")) {
            a.status = 415;
            a.body_len = error_body(err, sizeof err, "content type must be application/json");
        } else if (too_large) {
            a.status = 413;
            a.body_len = error_body(err, sizeof err, "body too large");
        }
    } else if (str_is(path, "/healthz")) {
        if (!get && !head) {
            a.status = 405;
            a.allow = "GET, HEAD";
            a.body_len = error_body(err, sizeof err, "method not allowed");
        } else {
            a.status = 200;
            a.body = body_ok;
            a.body_len = sizeof body_ok - 1;
        }
    } else {
        a.status = 404;
        a.body_len = error_body(err, sizeof err, "not found");
    }

    if (a.status == 0) {
        /* The document is wanted. A client that waits for 100 Continue
         * gets it; one that sent the body along does not need it. */
        if (req->expect_continue && has_body && after == 0) {
            static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
            memcpy(out->buf + out->len, cont, sizeof cont - 1);
            out->len += sizeof cont - 1;
        }
        if (req->body == HTTP1_BODY_CHUNKED) {
            http1_chunked_init(&p->chunked, env->max_body);
            p->phase = CAR_REST_CHUNKED;
        } else {
            p->body_left = req->body == HTTP1_BODY_LENGTH ? req->content_length : 0;
            p->phase = CAR_REST_BODY;
        }
        return;
    }

    /* Answered from the head alone. The body, if any, is skipped so that
     * the connection can go on, unless it is over the limit, or the client
     * may be holding it back for a 100 Continue that will not come (it
     * might send it after all, or not: only closing is unambiguous). */
    a.close = too_large || (has_body && (req->expect_continue || a.status == 417));
    respond(p, env, out, &a);
    if (p->phase == CAR_REST_CLOSED)
        return;
    if (req->body == HTTP1_BODY_CHUNKED) {
        http1_chunked_init(&p->chunked, env->max_body);
        p->phase = CAR_REST_SKIP_CHUNKED;
    } else if (has_body) {
        p->body_left = req->content_length;
        p->phase = CAR_REST_SKIP;
    } else {
        p->phase = CAR_REST_HEAD;
    }
}

/* ---- One step per phase: each consumes *n bytes and returns whether it
 * made progress (false: it needs more input) ---------------------------- */

static bool step_head(struct car_rest_proto *p, const struct car_rest_env *env,
                      struct car_rest_out *out, const char *data, size_t len, size_t *n)
{
    if (len == 0)
        return false;
    struct http1_request req;
    struct http1_header headers[MAX_HEADERS];
    int r = http1_parse_request(data, len, &req, headers, MAX_HEADERS, env->max_header);
    if (r == 0)
        return false;
    if (r < 0) {
        /* Where this request ends is unknown, so nothing after it can be
         * read: answer and close. */
        if (env->log_requests)
            snprintf(p->what, sizeof p->what, "(malformed request)");
        respond_error(p, env, out, http1_status(r), http1_strerror(r));
        *n = len;
        return true;
    }
    *n = (size_t)r;
    start_request(p, env, out, &req, headers, len - (size_t)r);
    return true;
}

static bool step_body(struct car_rest_proto *p, const struct car_rest_env *env,
                      struct car_rest_out *out, const char *data, size_t len, size_t *n)
{
    if (len < p->body_left)
        return false;
    *n = (size_t)p->body_left;
    create(p, env, out, data, *n);
    return true;
}

/* Room in p->body for the output of a slice of input. The decoder never
 * takes the body past max_body, so the buffer stays within max_body +
 * CHUNK_SLICE. */
static void reserve_body(struct car_rest_proto *p, size_t slice, size_t max_body)
{
    size_t need = p->body_len + slice;
    if (p->body_cap >= need)
        return;
    size_t cap = p->body_cap ? p->body_cap * 2 : CHUNK_SLICE;
    if (cap > max_body + CHUNK_SLICE)
        cap = max_body + CHUNK_SLICE;
    if (cap < need)
        cap = need;
    p->body = mem_realloc(p->body, cap);
    p->body_cap = cap;
}

static bool step_chunked(struct car_rest_proto *p, const struct car_rest_env *env,
                         struct car_rest_out *out, const char *data, size_t len, size_t *n)
{
    if (len == 0)
        return false;
    size_t off = 0;
    while (off < len) {
        size_t slice = len - off < CHUNK_SLICE ? len - off : CHUNK_SLICE;
        reserve_body(p, slice, env->max_body);
        size_t produced, consumed;
        int r = http1_chunked_decode(&p->chunked, data + off, slice, p->body + p->body_len,
                                     &produced, &consumed);
        p->body_len += produced;
        off += consumed;
        if (r < 0) {
            drop_body(p);
            respond_error(p, env, out, http1_status(r), http1_strerror(r));
            *n = len;
            return true;
        }
        if (r == 1) {
            create(p, env, out, p->body, p->body_len);
            drop_body(p);
            break;
        }
    }
    *n = off;
    return true;
}

static bool step_skip(struct car_rest_proto *p, const char *data, size_t len, size_t *n)
{
    if (len == 0)
        return false;
    *n = len < p->body_left ? len : (size_t)p->body_left;
    p->body_left -= *n;
    if (p->body_left == 0)
        p->phase = CAR_REST_HEAD;
    return true;
}

static bool step_skip_chunked(struct car_rest_proto *p, const char *data, size_t len, size_t *n)
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
            p->phase = CAR_REST_CLOSED;
            off = len;
            break;
        }
        if (r == 1) {
            p->phase = CAR_REST_HEAD;
            break;
        }
    }
    *n = off;
    return true;
}

/* ---- Interface ---------------------------------------------------------- */

void car_rest_proto_init(struct car_rest_proto *p, int id)
{
    memset(p, 0, sizeof *p);
    p->phase = CAR_REST_HEAD;
    p->id = id;
}

void car_rest_proto_free(struct car_rest_proto *p) { drop_body(p); }

enum car_rest_stop car_rest_proto_feed(struct car_rest_proto *p, const struct car_rest_env *env,
                                       const char *data, size_t len, size_t *used,
                                       struct car_rest_out *out)
{
    size_t off = 0;
    enum car_rest_stop stop = CAR_REST_NEED_MORE;
    for (;;) {
        if (p->phase == CAR_REST_CLOSED) {
            off = len;
            stop = CAR_REST_CLOSE;
            break;
        }
        if (out->cap - out->len < CAR_REST_RESPONSE_MAX) {
            stop = CAR_REST_OUT_FULL;
            break;
        }
        size_t n = 0;
        bool progress = false;
        switch (p->phase) {
        case CAR_REST_HEAD:
            progress = step_head(p, env, out, data + off, len - off, &n);
            break;
        case CAR_REST_BODY:
            progress = step_body(p, env, out, data + off, len - off, &n);
            break;
        case CAR_REST_CHUNKED:
            progress = step_chunked(p, env, out, data + off, len - off, &n);
            break;
        case CAR_REST_SKIP:
            progress = step_skip(p, data + off, len - off, &n);
            break;
        case CAR_REST_SKIP_CHUNKED:
            progress = step_skip_chunked(p, data + off, len - off, &n);
            break;
        case CAR_REST_CLOSED:
            break;
        }
        off += n;
        if (!progress)
            break;
    }
    *used = off;
    return stop;
}

bool car_rest_proto_busy(const struct car_rest_proto *p, size_t pending)
{
    switch (p->phase) {
    case CAR_REST_HEAD: return pending > 0;
    case CAR_REST_CLOSED: return false;
    default: return true;
    }
}

bool car_rest_proto_timeout(struct car_rest_proto *p, const struct car_rest_env *env,
                            struct car_rest_out *out)
{
    switch (p->phase) {
    case CAR_REST_HEAD:
    case CAR_REST_BODY:
    case CAR_REST_CHUNKED:
        if (p->phase == CAR_REST_HEAD && env->log_requests)
            snprintf(p->what, sizeof p->what, "(incomplete request)");
        drop_body(p);
        respond_error(p, env, out, 408, "request not complete in time");
        return true;
    default:
        p->phase = CAR_REST_CLOSED;
        return false;
    }
}
