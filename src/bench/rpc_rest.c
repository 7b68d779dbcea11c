/* rpc_rest.c - placeholder until the REST client lands: cannot connect. */
#include <errno.h>
#include <stddef.h>

#include "bench/rpc_client.h"

static struct rpc_conn *rpc_rest_connect(struct ev_loop *loop, const struct rpc_conn_opts *opts,
                                      const struct rpc_events *events, int *err)
{
    *err = ENOTSUP;
    return NULL;
}

static int rpc_rest_call(struct rpc_conn *c, const Com__Stevenpg__Rvg__Message *msg, void *call_ctx)
{
    return -1;
}

static void rpc_rest_close(struct rpc_conn *c) {}

const struct rpc_protocol rpc_rest_protocol = {
    .name = "rest",
    .default_port = 8080,
    .connect = rpc_rest_connect,
    .call = rpc_rest_call,
    .close = rpc_rest_close,
};
