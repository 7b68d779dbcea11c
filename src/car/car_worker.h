/* car_worker.h - what one car-server worker is, as the protocol modules
 * (car_rest.c, car_grpc.c) see it: the configuration every worker reads, the
 * counters, and the worker's loop with each protocol's connections.
 * car_server.c starts the workers above these modules; they reach it only
 * through this header, never by calling back into car_server.c.
 */
#ifndef SHOOTOUT_CAR_WORKER_H
#define SHOOTOUT_CAR_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ev.h"
#include "core/srv.h"
#include "http/http_engine.h"

struct car_server_config {
    const char *bind;        /* default 127.0.0.1 */
    int rest_port;           /* default 8080; -1 = no REST listener */
    int grpc_port;           /* default 50051; -1 = no gRPC listener */
    unsigned threads;        /* workers, default 1 */
    unsigned max_connections;/* both protocols together, default 10000 */
    unsigned max_per_address;/* connections from one address, 0 (default) = no limit */
    size_t max_header;       /* HTTP/1.1 request head, default 8 KiB (431 over) */
    size_t max_body;         /* REST body, default 1 MiB (413 over) */
    size_t max_message;      /* gRPC message, default 4 MiB (RESOURCE_EXHAUSTED over) */
    uint32_t idle_timeout_ms;   /* keep-alive connection without a request, default 60 s */
    uint32_t request_timeout_ms;/* a started request must be complete, default 10 s */
    uint32_t min_body_rate;     /* REST bodies: bytes a second past it, default 4096; 0: none */
    uint32_t drain_timeout_ms;  /* graceful shutdown bound, default 5 s */
    bool log_requests;       /* -v: one line per request */
    /* gRPC over TLS with ALPN h2 when tls_cert and tls_key are set (REST
     * stays cleartext); tls_ca + tls_require_client_cert: mutual TLS. */
    const char *tls_cert, *tls_key, *tls_ca;
    bool tls_require_client_cert;
};

/* What a worker counts; summed over workers and logged at shutdown. */
struct car_stats {
    uint64_t rest_requests;   /* answered, any status */
    uint64_t rest_errors;     /* answered 4xx/5xx */
    uint64_t grpc_calls;      /* finished, any grpc-status */
    uint64_t grpc_errors;     /* finished with grpc-status != 0 */
    uint64_t refused_connections;
};

struct car_grpc_conn;

struct tls_ctx;

/* One event loop and everything the Car protocols keep for it; the
 * process skeleton (listeners, signals, drain) is core/srv.h's worker,
 * base. The protocol modules keep their connections on the lists below and
 * call car_worker_conn_closed when one goes away. */
struct car_worker {
    struct srv_worker *base;
    const struct car_server_config *cfg;
    struct tls_ctx *grpc_tls;     /* NULL: h2c; shared read-only by all workers */
    struct ev_loop *loop;
    bool draining;
    struct http_engine rest;      /* car_rest.c's app on http/http_engine.c */
    struct car_grpc_conn *grpc_conns;
    struct car_stats stats;
};

/* A protocol module closed a connection, accepted as fd (core/srv.h's
 * srv_worker_conn_closed); when draining and none is left, the worker
 * stops (srv's count, shared with its drain). */
static inline void car_worker_conn_closed(struct car_worker *w, int fd)
{
    srv_worker_conn_closed(w->base, fd);
}

#endif
