/* run_rpc.h - the RPC part of `shootout run`: the gRPC-vs-REST article's
 * experiment against our car-server (REST and gRPC) and, when it is built,
 * the gRPC C++ peer server (build/peers/car-grpc-cpp-server): the sweep of
 * 1000..5000 sequential calls with the article's three tables, latency and
 * CPU per call, and a throughput table at concurrency 1, 10 and 50.
 */
#ifndef SHOOTOUT_RUN_RPC_H
#define SHOOTOUT_RUN_RPC_H

#include <stdbool.h>
#include <stdio.h>

#include "report/result.h"

struct run_rpc_opts {
    unsigned runs;        /* runs per cell */
    double scale;         /* multiplies every call count */
    const char *exe;      /* our binary, which serves `car-server` */
    bool no_peer;         /* measure our server alone */
    FILE *out;            /* the tables; progress goes to stderr */
    const struct result_context *ctx;
    struct result_set *rows; /* the job's rows; this part's are appended */
};

/* Starts the servers, measures, stops them and prints the tables. Returns
 * 0, 1 if a server could not start or died (or ours did not exit 0 on
 * SIGTERM), or 3 if an experiment failed with the servers up. */
int run_rpc(const struct run_rpc_opts *o);

#endif
