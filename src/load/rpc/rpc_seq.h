/* rpc_seq.h - `shootout bench rpc-seq`: the gRPC-vs-REST article's
 * experiment against the Car service. N calls, each carrying a freshly
 * generated record (car_fake.h), over REST or gRPC (rpc_client.h); by
 * default strictly one at a time over one keep-alive connection, as the
 * article's blocking clients did. Reported per run: the total wall time of
 * the N calls (the article's figure), calls per second, the per-call
 * latency distribution and the CPU time per call of this client and, with
 * --server-pid, of the server.
 *
 * With --concurrency C, C calls are in flight at once: over C connections
 * for REST (HTTP/1.1, one call at a time each), over C concurrent streams
 * spread across --connections K connections for gRPC.
 */
#ifndef SHOOTOUT_RPC_SEQ_H
#define SHOOTOUT_RPC_SEQ_H

#include <stdbool.h>
#include <stdint.h>

#include "load/bench.h"
#include "load/rpc/rpc_client.h"

struct rpc_seq_opts {
    const struct rpc_protocol *proto;
    uint64_t requests;    /* timed calls per run */
    uint64_t warmup;      /* calls before the clock starts, per run */
    unsigned concurrency; /* calls in flight at once */
    unsigned connections; /* gRPC: connections the calls spread over (<= concurrency) */
    bool gzip;            /* gRPC: compressed requests */
    bool tls;             /* gRPC over TLS (ALPN h2) */
    const char *tls_ca;   /* TLS: verify the server against this PEM CA file;
                             NULL: no verification */
    uint64_t seed;        /* of the records; run r uses seed + r */
};

/* `shootout bench rpc-seq ...`; argv[0] is "rpc-seq". */
int rpc_seq_main(int argc, char **argv, const struct result_context *ctx);

/* The experiment against o's target (o->host numeric, o->port set), with
 * o->runs runs; appends its rows to out. Returns the exit code. For
 * `shootout run`, which starts the servers itself. */
int rpc_seq_exec(const struct bench_opts *o, const struct rpc_seq_opts *s,
                 const struct result_context *ctx, struct result_set *out);

#endif
