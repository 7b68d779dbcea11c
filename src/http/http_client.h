/* http_client.h - one HTTP/1.1 client connection on an event loop, for the
 * load generators: a non-blocking connect, requests written as given
 * (pipelined up to max_in_flight, answered in order), responses framed by
 * http1.h (Content-Length, chunked, until-close, interim 1xx skipped),
 * bodies decoded from gzip or deflate when the server sent them so (zlib,
 * the CRC checked), keep-alive, and an optional timeout on the connect and
 * on each answer.
 *
 * The body is kept up to opts.body_keep decoded bytes (the rest is decoded,
 * counted and dropped), so a caller that only needs the status holds no
 * body memory at all.
 *
 * Callbacks run on the loop thread, never from inside http_conn_connect()
 * or http_conn_request(). The caller may call http_conn_request() or
 * http_conn_close() from inside them; a connection closed there is freed
 * when the client's handler returns, and no callback follows the close.
 */
#ifndef SHOOTOUT_HTTP_CLIENT_H
#define SHOOTOUT_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ev.h"

struct http_conn; /* opaque */

/* How a request ended. */
enum http_outcome {
    HTTP_DONE = 0,     /* a final response arrived (any status) */
    HTTP_E_PROTOCOL,   /* unparsable response, or a body that fails to decode (code: http1_err or 0) */
    HTTP_E_CLOSED,     /* the connection closed or failed before the answer ended (code: errno or 0) */
    HTTP_E_TIMEOUT,    /* no complete answer within opts.timeout_ms */
};

/* A final response. body points into the connection and is valid only
 * during the done callback. */
struct http_resp {
    int status;
    const char *body;  /* the first body_kept decoded bytes */
    size_t body_kept;
    uint64_t body_len; /* decoded length of the whole body */
};

struct http_events {
    /* The connection is usable (err 0) or failed to connect (err = errno,
     * ETIMEDOUT when opts.connect_timeout_ms passed). */
    void (*connected)(void *ctx, struct http_conn *c, int err);
    /* One request ended; resp is NULL unless outcome is HTTP_DONE. */
    void (*done)(void *ctx, struct http_conn *c, void *req_ctx, enum http_outcome outcome,
                 const struct http_resp *resp, int code);
    void *ctx;
};

/* What a connection tells a tracer of its exchanges. Hooks, so that the
 * client knows nothing of how tracing is done (load/trace.c does it, a
 * layer above): the tracer is the first member of the tracer's own state,
 * and each hook gets it back. */
struct http_tracer {
    /* Whether the exchange numbered seq (per connection, from 0) is traced. */
    bool (*pick)(const struct http_tracer *t, uint64_t seq);
    /* A fresh connection id. */
    unsigned (*conn_id)(struct http_tracer *t);
    /* Bytes of each body to show. */
    unsigned (*body_max)(const struct http_tracer *t);
    /* A request ('>') or response ('<') head of len bytes. */
    void (*head)(struct http_tracer *t, unsigned conn, char dir, const char *head, size_t len);
    /* A body of total bytes, its first kept bytes in data. */
    void (*body)(struct http_tracer *t, unsigned conn, char dir, const void *data, size_t kept,
                 uint64_t total);
};

struct http_conn_opts {
    const char *host; /* numeric address or name */
    int port;
    unsigned max_in_flight; /* pipelining depth; 0 means 1 */
    size_t body_keep;       /* decoded body bytes kept per response */
    uint64_t max_body;      /* larger bodies fail as HTTP_E_PROTOCOL; 0: 16 MiB */
    unsigned connect_timeout_ms; /* 0: none */
    /* From a request's write to its complete answer, restarted at every
     * answer while others are in flight; 0: none. */
    unsigned timeout_ms;
    /* Traces requests and responses, sampled by exchange (the load
     * generators' --trace: trace_http() of load/trace.h); NULL: none. */
    struct http_tracer *trace;
};

/* Starts a non-blocking connect; NULL with *err (errno) if it cannot even
 * start (EMFILE, say). events->connected follows. */
struct http_conn *http_conn_connect(struct ev_loop *loop, const struct http_conn_opts *opts,
                                    const struct http_events *events, int *err);

/* The "Host" field value the connection sends, "host:port". */
const char *http_conn_host(const struct http_conn *c);

/* Queues one request: head[0..head_len) is the complete request head
 * (request line, fields, empty line) and body[0..body_len) its body; both
 * are copied. Written at once when nothing else is in flight, else once per
 * loop iteration. Returns 0, or -1 when the connection is not open (still
 * connecting, or closed) or max_in_flight requests are in flight. */
int http_conn_request(struct http_conn *c, const void *head, size_t head_len, const void *body,
                      size_t body_len, void *req_ctx);

/* Whether requests can be sent (connected, not closed by either side). */
bool http_conn_is_open(const struct http_conn *c);
/* Requests in flight. */
unsigned http_conn_in_flight(const struct http_conn *c);

/* Closes at once; requests in flight are not reported. */
void http_conn_close(struct http_conn *c);

#endif
