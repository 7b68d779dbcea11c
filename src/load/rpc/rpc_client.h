/* rpc_client.h - the client side of one RPC protocol for the Car service,
 * as `shootout bench rpc-seq` drives it: connections on our event loop that
 * send Message records and report each call's outcome.
 *
 * Implementations: rpc_rest.c (HTTP/1.1 + JSON, POST /v1/create) and
 * rpc_grpc.c (HTTP/2 h2c, or TLS with ALPN h2, + protobuf,
 * /com.stevenpg.rvg.MessageService/send).
 * The driver (rpc_seq.c) owns the loop, the records, the clock and the
 * statistics; a transport only moves calls.
 *
 * Ownership: the message passed to call() is only read during the call to
 * call() (the transport encodes it at once); the driver may reuse it after.
 * Callbacks run on the loop thread, never from inside connect() or call().
 */
#ifndef SHOOTOUT_RPC_CLIENT_H
#define SHOOTOUT_RPC_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "car.pb-c.h"
#include "core/ev.h"

struct rpc_conn; /* one connection; opaque, per protocol */
struct tls_ctx;

/* How a call ended. */
enum rpc_outcome {
    RPC_OK = 0,       /* REST 201 / gRPC status 0 with the expected reply */
    RPC_E_STATUS,     /* the server answered with an error (code: HTTP status or grpc-status) */
    RPC_E_PROTOCOL,   /* malformed or unexpected answer (bad framing, wrong reply body) */
    RPC_E_CLOSED,     /* the connection closed or failed before the answer (code: errno or 0) */
};

struct rpc_events {
    /* The connection is usable (err 0) or failed to connect (err = errno). */
    void (*connected)(void *ctx, struct rpc_conn *c, int err);
    /* One call finished. call_ctx is what was passed to call(). */
    void (*done)(void *ctx, struct rpc_conn *c, void *call_ctx, enum rpc_outcome outcome, int code);
    void *ctx;
};

struct rpc_conn_opts {
    const char *host; /* numeric address or name */
    int port;
    /* Calls the driver may keep in flight on this connection: 1 for the
     * sequential experiment; with --concurrency, the HTTP/1.1 pipelining
     * depth or the number of concurrent HTTP/2 streams. */
    unsigned max_in_flight;
    bool gzip; /* gRPC: compress request messages (grpc-encoding: gzip) */
    /* TLS: a client context (tls_client_ctx_new) with the protocol's ALPN
     * id, shared by the connections and not owned (OpenSSL keeps what they
     * need); NULL for cleartext. Only protocols with an alpn take it. */
    struct tls_ctx *tls;
    const char *server_name; /* TLS: SNI and the name the certificate must
                                match when the context verifies; NULL: host */
    /* --trace (load/trace.h): REST requests and responses, gRPC calls
     * with their path, status and message sizes; NULL: none. */
    struct trace *trace;
};

struct rpc_protocol {
    const char *name; /* "rest" or "grpc" */
    int default_port; /* 8080 / 50051, as car-server */
    const char *alpn; /* its ALPN id over TLS; NULL: no TLS support */
    /* Starts a non-blocking connect; NULL with *err (errno) if it cannot
     * even start. events->connected follows (with TLS, once the handshake
     * is done; a failed one reports EPROTO and logs why). */
    struct rpc_conn *(*connect)(struct ev_loop *loop, const struct rpc_conn_opts *opts,
                                const struct rpc_events *events, int *err);
    /* Sends one call. Returns 0, or -1 if the connection is closed or at
     * max_in_flight (a driver bug). Output is flushed once per loop
     * iteration (or at once for the sequential case: implementations write
     * immediately when nothing else is pending). */
    int (*call)(struct rpc_conn *c, const Com__Stevenpg__Rvg__Message *msg, void *call_ctx);
    /* Closes at once; calls still in flight are not reported. */
    void (*close)(struct rpc_conn *c);
};

extern const struct rpc_protocol rpc_rest_protocol;
extern const struct rpc_protocol rpc_grpc_protocol;

#endif
