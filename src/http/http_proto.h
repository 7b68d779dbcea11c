/* http_proto.h - the HTTP/1.1 server protocol as a pure state machine,
 * one per connection, for every HTTP server of shootout (car-server's REST
 * side, a2b-server): the bytes a client sent go in, the bytes to answer
 * with come out. No sockets, no timers; http_engine.c does the I/O around it
 * and the unit tests and the fuzz target drive it directly.
 *
 * What it does: request heads parsed by http1.c (limits 431, framing
 * errors 400/501/505), Content-Length bodies left in the caller's input
 * until complete (so a body is read where it lies), chunked bodies decoded
 * into a buffer of its own, 413 over max_body, 417 for expectations other
 * than 100-continue, 100 Continue when a client waits for it, HEAD, the
 * keep-alive rules of HTTP/1.0 and 1.1, pipelining with the answers in
 * request order, bodies skipped when a request was answered from its head,
 * 408 for a request that took too long, and the lingering-close decision:
 * after the last response (Connection: close: the client asked, HTTP/1.0
 * without keep-alive, a framing error or a limit, draining) all further
 * input is ignored.
 *
 * The application sees each request as a struct http_req and answers it
 * with http_respond(). A synchronous app (struct http_app.async false)
 * answers before its handler returns: the request then points into the
 * caller's input and the answer is written straight into the output, so a
 * request that arrives whole allocates nothing. An asynchronous app may
 * answer later from any callback on the same loop: each request is then a
 * copy of its own, and answers wait in a queue until those before them are
 * out.
 */
#ifndef SHOOTOUT_HTTP_PROTO_H
#define SHOOTOUT_HTTP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http1.h"

struct ev_loop;
struct outq;
struct http_gzip;
struct http_proto;

/* Output room the machine wants before it handles a request: the largest
 * response of the synchronous apps, 100 Continue included, fits in it.
 * Anything larger goes to the output's spill queue. */
#define HTTP_PROTO_ROOM 1024
/* Output waiting in the spill queue past which no further request is
 * read: a client that does not read its answers is not read either. */
#define HTTP_PROTO_SPILL_HIGH (256 * 1024)

/* One request. The strings stay valid until it is answered; for an
 * asynchronous app they are NUL-terminated copies owned by the request. */
struct http_req {
    struct http1_str method;
    struct http1_str path;   /* the target up to '?', absolute form reduced to the path */
    struct http1_str query;  /* after '?'; ptr NULL when there is none */
    struct http1_str content_type; /* ptr NULL when absent */
    const char *body;        /* the whole body, or NULL when there is none */
    size_t body_len;
    uint64_t content_length; /* as announced; 0 for chunked */
    bool has_body;           /* a body follows the head (chunked, or a length > 0) */
    bool head;               /* HEAD: the response body is announced, not sent */
    bool gzip_ok;            /* Accept-Encoding allows gzip (asynchronous apps only) */
    uint64_t start_ns;       /* env->now_ns() when the head was complete, or 0 */
    int route;               /* the app's label for metrics; -1 until it sets one */
    void *worker;            /* the app's per-loop state (env->app_worker) */
    bool keep_alive;         /* the connection goes on after the answer; a handler may
                              * clear it before answering, to close after it */

    /* private */
    struct http_proto *p;    /* NULL once the connection is gone */
    struct http_req *next;   /* p's queue, or env's orphans */
    struct http_req **pprev_orphan;
    struct http_env *env;
    const char *what;        /* for the log when there is no method: "(malformed request)" */
    char *resp;              /* queued answer: head without Connection and the blank */
    size_t resp_len, resp_head_len; /* line, then the body */
    bool http10, answered, done, body_owned;
};

/* The application. worker_init, stopped and worker_fini are for
 * http_server_run (http_server.h); the machine uses the rest. */
struct http_app {
    /* Whether handlers may answer after they return (see the top). */
    bool async;
    /* A complete head, before its body is read. Optional: it may answer
     * (the body is then skipped, or the connection closed when the body is
     * over the limit or the client waits for 100 Continue) or leave it for
     * handle. */
    void (*head)(struct http_req *req);
    /* A complete request, body included; answers it with http_respond(). */
    void (*handle)(struct http_req *req);
    /* Every response, the machine's own (400, 408, ...) included, as it is
     * made: for counting. Optional. */
    void (*observe)(const struct http_req *req, int status);
    /* Answers an error the machine found (malformed request, limits,
     * timeouts) with http_respond(), in the app's own body shape. Optional:
     * text/plain otherwise. */
    void (*error)(struct http_req *req, int status, const char *message);

    void *(*worker_init)(struct ev_loop *loop, unsigned index, void *ctx);
    void (*stopped)(void *ctx);
    void (*worker_fini)(void *worker, void *ctx);
    void *ctx;
};

/* What the machines of one loop share: settings and the app, read only to
 * the machine but for the orphan list. */
struct http_env {
    const struct http_app *app;
    void *app_worker;        /* req->worker */
    size_t max_header;       /* request head limit (431 over) */
    size_t max_body;         /* request body limit (413 over) */
    unsigned max_inflight;   /* asynchronous requests waiting per connection */
    bool draining;           /* the server is stopping: the answers close */
    bool log_requests;       /* one debug line per response */
    const char *log_name;    /* "<log_name> conn <id>: ..." in log lines */
    struct http_gzip *gzip;  /* NULL: answers are never compressed */
    const char *(*date)(void);  /* the IMF-fixdate for Date (HTTP_DATE_LEN bytes) */
    uint64_t (*now_ns)(void);   /* req->start_ns; optional */
    /* An asynchronous answer made the queue's head ready: feed the machine
     * (with no new input if need be) to send it. */
    void (*ready)(struct http_proto *p);
    struct http_req *orphans; /* asynchronous requests whose connection is gone */
};

/* Where responses are appended: buf[0..cap) with len used; what does not
 * fit there goes, after buf's bytes (which then move there first), to
 * spill. The caller sends spill's bytes, then buf's. */
struct http_out {
    char *buf;
    size_t len, cap;
    struct outq *spill;
};

enum http_phase {
    HTTP_HEAD,         /* waiting for a request head */
    HTTP_BODY,         /* Content-Length body, left in the input until complete */
    HTTP_CHUNKED,      /* chunked body, decoded into body */
    HTTP_SKIP,         /* Content-Length body of a request answered from its head */
    HTTP_SKIP_CHUNKED, /* chunked body of a request answered from its head */
    HTTP_DONE,         /* no further request is read; answers still due go out */
    HTTP_CLOSED,       /* the last response is out; input is ignored */
};

/* One connection's protocol state. Set up with http_proto_init(), released
 * with http_proto_free(). */
struct http_proto {
    enum http_phase phase;
    struct http_env *env;
    struct http_out *out;    /* during http_proto_feed() only */
    struct http_req *cur;    /* asynchronous: the request whose body is read */
    bool continue_due;       /* 100 Continue owed once earlier answers are out */
    uint64_t body_left;      /* HTTP_BODY / HTTP_SKIP: body bytes still due */
    uint64_t skip_len;       /* HTTP_SKIP: the whole body being skipped */
    struct http1_chunked chunked;
    char *body;              /* HTTP_CHUNKED: decoded body, owned; NULL otherwise */
    size_t body_len, body_cap;
    struct http_req *head, *tail; /* asynchronous requests, in request order */
    unsigned inflight;
    uint64_t requests;       /* requests complete (head and body) on this connection */
    int id;                  /* names the connection in log lines */
};

enum http_stop {
    HTTP_NEED_MORE, /* every complete request is handled; feed again with more input */
    HTTP_OUT_FULL,  /* the output is full: send it, then feed again */
    HTTP_WAIT_APP,  /* answers are pending: feed again once env->ready says so */
    HTTP_CLOSE,     /* the last response is in the output: send it, then close */
};

void http_proto_init(struct http_proto *p, struct http_env *env, int id);
/* Pending asynchronous requests become orphans: http_respond() frees them. */
void http_proto_free(struct http_proto *p);

/* Handles the requests in data[0..len) and sends the answers that are
 * ready, appending to out.
 *
 * *used is set to the bytes consumed; the caller keeps data[*used..len) and
 * offers it again, followed by whatever arrives next (a Content-Length body
 * stays there until it is complete). After HTTP_CLOSE everything is
 * consumed, now and later. */
enum http_stop http_proto_feed(struct http_proto *p, const char *data, size_t len, size_t *used,
                               struct http_out *out);

/* Whether a request has begun and is not complete, given that the caller
 * still holds `pending` unconsumed bytes: the request deadline applies. */
bool http_proto_busy(const struct http_proto *p, size_t pending);

/* Body bytes of the request in progress received so far, given the
 * caller's `pending` unconsumed bytes (a chunked body counts what it
 * decoded to); 0 while a head is awaited. */
uint64_t http_proto_body_received(const struct http_proto *p, size_t pending);

/* Whether asynchronous answers are still due. */
static inline bool http_proto_waiting(const struct http_proto *p) { return p->head != NULL; }

/* The request in progress took too long: 408 (unless it was answered and
 * only its body was being skipped), after which the machine closes; what
 * can go out is appended to out (HTTP_PROTO_ROOM of room), the rest after
 * the answers still due, by feeding it again. */
void http_proto_timeout(struct http_proto *p, struct http_out *out);

/* Answers req (once). content_type may be NULL for a bodiless answer;
 * extra_headers is NULL or complete "Name: value\r\n" lines. The body is
 * copied, gzip-compressed when the client accepts it, env->gzip is set and
 * it is over HTTP_GZIP_MIN bytes. Frees req if its connection is gone. */
void http_respond(struct http_req *req, int status, const char *content_type, const char *body,
                  size_t len, const char *extra_headers);

/* Frees the orphans of env (their app will never answer them). */
void http_env_free_orphans(struct http_env *env);

/* Bodies below this are sent as they are: compressing them saves too
 * little to pay for the CPU and the gzip header. */
#define HTTP_GZIP_MIN 1024

/* ---- Pure helpers, shared and unit-tested ----------------------------- */

/* Length of an IMF-fixdate such as "Sun, 06 Nov 1994 08:49:37 GMT". */
#define HTTP_DATE_LEN 29
/* The current IMF-fixdate, formatted at most once per second per thread. */
const char *http_date(void);

/* The reason phrase of a status code ("Not Found"); "Unknown" if none. */
const char *http_reason(int status);

/* Whether an Accept-Encoding value allows gzip (RFC 9110 12.5.3): gzip,
 * x-gzip or * listed with a q-value above 0, and gzip not refused. */
bool http_accepts_gzip(struct http1_str accept_encoding);

/* A gzip compressor to reuse: deflate's state is about 256 KB, which,
 * made and freed per response, costs page faults and heap trims (two brk
 * calls) on every one. A loop keeps one. */
struct http_gzip *http_gzip_new(void);
void http_gzip_free(struct http_gzip *g);

/* Compresses in[0..len) into a gzip member with g; *out is mem_alloc'ed.
 * Returns the compressed length, 0 on failure. */
size_t http_gzip(struct http_gzip *g, const char *in, size_t len, char **out);

/* The path of a request target: "http://host/p" (absolute form, RFC 9112
 * 3.2.2) is reduced to "/p". */
struct http1_str http_target_path(struct http1_str path);

#endif
