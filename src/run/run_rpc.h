/* run_rpc.h - the RPC part of `shootout run`: the gRPC-vs-REST article's
 * experiment against our car-server (REST and gRPC), then each chosen
 * grpc and rest contender (contender.h) that can run here, one server at
 * a time, a JVM server twice (cold, as the article, then warm): the sweep
 * of 1000..5000 sequential calls with the article's three tables, latency
 * and CPU per call, and a throughput table at concurrency 1, 10 and 50;
 * a row per (server, protocol) and ours over the best other of each
 * protocol.
 */
#ifndef SHOOTOUT_RUN_RPC_H
#define SHOOTOUT_RUN_RPC_H

#include <stdbool.h>
#include <stdio.h>

#include "report/result.h"
#include "run/contender.h"

struct run_rpc_opts {
    unsigned runs;        /* runs per cell */
    double scale;         /* multiplies every call count */
    unsigned timeout_s;   /* per call, 0: rpc-seq's own */
    const char *exe;      /* our binary, which serves `car-server` */
    const char *version;  /* ours */
    const struct contender_roster *roster;
    FILE *out;            /* the tables; progress goes to stderr */
    const struct result_context *ctx;
    struct result_set *rows; /* the job's rows; this part's are appended */
};

/* Measures the servers and prints the tables. Returns 0, 1 if our server
 * could not start or died (or did not exit 0 on SIGTERM), or 3 if an
 * experiment against it failed with it up. A contender's failures are
 * only its cells' (and a line): they never change the exit code. */
int run_rpc(const struct run_rpc_opts *o);

#endif
