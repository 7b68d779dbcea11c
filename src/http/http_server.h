/* http_server.h - a standalone HTTP/1.1 server: core/srv.h's workers
 * (listener, threads, signals, drain), each with an engine of
 * http_engine.h, for one app of http_proto.h (a2b-server's). The app's
 * handlers may answer later (struct http_app.async): a handler gets each
 * request and calls http_respond() on it now or from any later callback on
 * the same loop (a database completion, say).
 *
 * Requests pipelined on a connection are dispatched as they arrive and
 * their answers sent in request order, however they complete; at most
 * max_inflight wait per connection, and past that, and while the client
 * does not read its responses, input is not read (bounded memory). The
 * timers are http_engine.h's.
 *
 * A request whose connection closes while its handler is pending stays
 * valid: http_respond() on it just frees it. Every request must be
 * answered exactly once; those still pending when the server stops are
 * freed after the app's stopped hook.
 */
#ifndef SHOOTOUT_HTTP_SERVER_H
#define SHOOTOUT_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http_proto.h"

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
    uint32_t min_body_rate;      /* bytes a second a body gets past it, default 4096; 0: none */
    uint32_t drain_timeout_ms;   /* default 5 s */
    bool log_requests;         /* one debug line per request */
};

void http_server_config_defaults(struct http_server_config *cfg);

/* Runs until SIGTERM/SIGINT. 0 after a clean stop, 1 on a setup failure. */
int http_server_run(const struct http_server_config *cfg, const struct http_app *app);

#endif
