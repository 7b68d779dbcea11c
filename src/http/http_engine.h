/* http_engine.h - HTTP/1.1 connections on one event loop, around the
 * protocol machine of http_proto.h: reading with a budget, writing, the
 * wait timers and the lingering close. car-server's REST side and
 * http_server.c (a2b-server) each keep one engine per worker loop.
 *
 * The timers: a connection with no request begun is closed after
 * idle_timeout_ms; a request's head has request_timeout_ms from its first
 * byte to be complete, and a body of L bytes request_timeout_ms + L /
 * min_body_rate (bytes trickling in extend it only by what they bring at
 * that rate; without a rate, only a completed request or output the client
 * took does), or the request gets 408; a client that
 * does not take its answers, or an app that does not answer, has
 * idle_timeout_ms; the lingering close after the last answer
 * (core/linger.h) LINGER_MS.
 */
#ifndef SHOOTOUT_HTTP_CONN_H
#define SHOOTOUT_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http_proto.h"

struct ev_loop;
struct engine_conn;

struct http_engine_config {
    const char *log_name;        /* "<log_name> conn <fd> ..." in log lines */
    size_t max_header;           /* request head (431 over) */
    size_t max_body;             /* request body (413 over) */
    unsigned max_inflight;       /* asynchronous apps: requests waiting per connection */
    uint32_t idle_timeout_ms;
    uint32_t request_timeout_ms;
    uint32_t min_body_rate;      /* bytes a second; 0: request_timeout_ms bounds bodies too */
    bool log_requests;           /* one debug line per response */
    bool gzip;                   /* compress answers for clients that accept it */
    bool start_times;            /* set req->start_ns (a clock read per request) */
};

/* One loop's connections. The fields are the engine's; callers read
 * env.draining at most. */
struct http_engine {
    struct ev_loop *loop;
    struct http_env env;
    uint32_t idle_timeout_ms, request_timeout_ms, min_body_rate;
    struct engine_conn *conns;   /* the ones needing the loop before it sleeps first */
    void (*closed)(void *ctx, int fd); /* a connection went away; fd was its socket */
    void *closed_ctx;
};

/* Sets e up for app on loop; app_worker becomes every request's worker,
 * closed(closed_ctx, fd) is called once per connection that goes away,
 * just after its socket fd was closed (core/srv.h's
 * srv_worker_conn_closed wants it). */
void http_engine_init(struct http_engine *e, struct ev_loop *loop,
                      const struct http_engine_config *cfg, const struct http_app *app,
                      void *app_worker, void (*closed)(void *ctx, int fd), void *closed_ctx);
/* Once every connection is closed: frees what the engine still holds
 * (requests whose app never answered them, the compressor). */
void http_engine_fini(struct http_engine *e);

/* Serves the accepted, non-blocking socket fd (ownership passes). */
void http_engine_accept(struct http_engine *e, int fd);
/* Called once per loop iteration before waiting. Returns true if work is
 * left over for the next iteration (the loop then does not sleep). */
bool http_engine_prepare(struct http_engine *e);
/* Graceful shutdown: idle connections close now, busy ones after the
 * answer in progress (sent with Connection: close). */
void http_engine_drain(struct http_engine *e);
/* Closes every connection at once (the drain timeout expired, or exit). */
void http_engine_close_all(struct http_engine *e);

#endif
