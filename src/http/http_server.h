/* http_server.h - a generic HTTP/1.1 server on core/srv.h's workers whose
 * handlers may answer later: a handler gets each request with a handle,
 * and calls http_respond() on it now or from any later callback on the
 * same loop (a database completion, say).
 *
 * Per connection: requests are parsed by http1.c (head, Content-Length or
 * chunked body, limits 431/413, 400/501/505, Expect: 100-continue,
 * keep-alive and HTTP/1.0, Connection: close), pipelined requests are
 * dispatched as they arrive and their responses sent in request order,
 * however they complete. At most max_inflight requests wait per connection;
 * past that, and while the client does not read its responses, input is
 * not read (bounded memory). Idle connections are closed after
 * idle_timeout_ms; a request begun and not complete within
 * request_timeout_ms gets 408. The last response is followed by a
 * lingering close (core/linger.h: write side shut, input dropped until EOF,
 * 2 s and 1 MiB at most, draining or not) so that a client still sending
 * never sees a reset destroy it.
 *
 * A request whose connection closes while its handler is pending stays
 * valid: http_respond() on it just frees it. Every request must be
 * answered exactly once; those still pending when the server stops are
 * freed after the app's stopped hook.
 *
 * car_rest.c does not use this: its synchronous protocol answers in the
 * read callback without allocating per request, which this generic layer
 * (a request object per request, copied path and body) cannot.
 */
#ifndef SHOOTOUT_HTTP_SERVER_H
#define SHOOTOUT_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http1.h"

struct ev_loop;
struct http_conn;

struct http_server_config {
    const char *name;          /* in the start-up line: "<name>: HTTP/1.1 on host:port, ..." */
    const char *bind;          /* default 127.0.0.1 */
    int port;                  /* default 8080; 0 = a free port */
    unsigned threads;          /* workers, default 1 */
    unsigned max_connections;  /* default 10000 */
    unsigned max_per_address;  /* connections from one address, 0 (default) = no limit */
    unsigned max_inflight;     /* pipelined requests waiting per connection, default 16 */
    size_t max_header;         /* request head, default 8 KiB (431 over) */
    size_t max_body;           /* request body, default 1 MiB (413 over) */
    uint32_t idle_timeout_ms;    /* default 60 s */
    uint32_t request_timeout_ms; /* default 10 s */
    uint32_t drain_timeout_ms;   /* default 5 s */
    bool log_requests;         /* one debug line per request */
};

/* One request. The public fields are valid until http_respond(); strings
 * are NUL-terminated copies owned by the request. */
struct http_req {
    const char *method;
    const char *path;     /* the target up to '?', absolute form reduced to the path */
    const char *query;    /* after '?', or NULL */
    const char *body;     /* decoded body (NUL-terminated), or NULL when empty */
    size_t body_len;
    struct http1_str content_type; /* into the request's own copy; ptr NULL when absent */
    bool head;            /* HEAD: the response body is announced, not sent */
    bool gzip_ok;         /* Accept-Encoding allows gzip */
    uint64_t start_ns;    /* CLOCK_MONOTONIC when the head was complete */
    int route;            /* the app's label for metrics; -1 until it sets one */
    void *worker;         /* the app's per-worker state (app->worker_init) */

    /* private */
    struct http_conn *conn; /* NULL once the connection is gone */
    struct http_req *next;  /* the connection's FIFO, or the worker's orphans */
    struct http_req **pprev_orphan;
    struct http_worker *w;
    char *resp;             /* the response once answered: head without */
    size_t resp_len;        /* Connection and the blank line, then body */
    size_t resp_head_len;
    bool done, keep_alive, http10;
};

/* The application: its hooks run on the worker's loop thread, except
 * stopped and worker_fini (on the main thread once all loops stopped). */
struct http_app {
    /* Per-worker state, created once the loop exists; NULL (logged) fails
     * the start. Optional. */
    void *(*worker_init)(struct ev_loop *loop, unsigned index, void *ctx);
    /* A complete request; answer now or later with http_respond(). */
    void (*handle)(struct http_req *req);
    /* Every response, the server's own (400, 408, ...) included, just
     * before it is queued: for counting. Optional. */
    void (*observe)(const struct http_req *req, int status);
    /* Answers an error the server found itself (malformed request, limits,
     * timeouts) with http_respond(), in the app's own body shape. Optional:
     * text/plain otherwise. */
    void (*error)(struct http_req *req, int status, const char *message);
    /* All loops stopped; pending requests will never complete. Optional. */
    void (*stopped)(void *ctx);
    void (*worker_fini)(void *worker, void *ctx); /* optional */
    void *ctx;
};

void http_server_config_defaults(struct http_server_config *cfg);

/* Runs until SIGTERM/SIGINT. 0 after a clean stop, 1 on a setup failure. */
int http_server_run(const struct http_server_config *cfg, const struct http_app *app);

/* Answers req (once). content_type may be NULL for a bodiless answer;
 * extra_headers is NULL or complete "Name: value\r\n" lines. The body is
 * copied, gzip-compressed when the client accepts it and it is over
 * HTTP_GZIP_MIN bytes. Frees req if its connection is gone. */
void http_respond(struct http_req *req, int status, const char *content_type, const char *body,
                  size_t len, const char *extra_headers);

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
 * calls) on every one. A worker keeps one. */
struct http_gzip;
struct http_gzip *http_gzip_new(void);
void http_gzip_free(struct http_gzip *g);

/* Compresses in[0..len) into a gzip member with g; *out is mem_alloc'ed.
 * Returns the compressed length, 0 on failure. */
size_t http_gzip(struct http_gzip *g, const char *in, size_t len, char **out);

/* The path of a request target: "http://host/p" (absolute form, RFC 9112
 * 3.2.2) is reduced to "/p". */
struct http1_str http_target_path(struct http1_str path);

#endif
