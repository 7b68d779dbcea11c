/* rpc_grpc.c - placeholder until the GRPC client lands: cannot connect. */
#include <errno.h>
#include <stddef.h>

#include "bench/rpc_client.h"

static struct rpc_conn *rpc_grpc_connect(struct ev_loop *loop, const struct rpc_conn_opts *opts,
                                      const struct rpc_events *events, int *err)
{
    *err = ENOTSUP;
    return NULL;
}

static int rpc_grpc_call(struct rpc_conn *c, const Com__Stevenpg__Rvg__Message *msg, void *call_ctx)
{
    return -1;
}

static void rpc_grpc_close(struct rpc_conn *c) {}

const struct rpc_protocol rpc_grpc_protocol = {
    .name = "grpc",
    .default_port = 50051,
    .connect = rpc_grpc_connect,
    .call = rpc_grpc_call,
    .close = rpc_grpc_close,
};
