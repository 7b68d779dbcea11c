/* rpc_rest.c - the REST client transport (rpc_client.h): HTTP/1.1
 * keep-alive connections (http_client.h) that POST the article's JSON
 * document to /v1/create and judge each answer. RPC_OK is a 201 whose body
 * is {"status":"created"} (JSON whitespace aside); another status is
 * RPC_E_STATUS with the code; anything unparsable, or a 201 with another
 * body, is RPC_E_PROTOCOL.
 *
 * Calls may be pipelined up to max_in_flight; responses answer them in
 * order. The driver may call call() or close() from inside its callbacks.
 */
#include <stdio.h>
#include <string.h>

#include "car/car_json.h"
#include "core/mem.h"
#include "http/http_client.h"
#include "load/rpc/rpc_client.h"
#include "load/trace.h"

/* A response body longer than this is not what we expect, so we only keep
 * its start (the expected one is 20 bytes). */
#define REST_BODY_KEEP 64
/* Limit of a body, to fail a server that never ends one. */
#define REST_MAX_BODY (1u << 20)
/* Records are about 200 bytes of JSON; larger ones take the slow path. */
#define REST_BODY_STACK 1024

static const char created[] = "{\"status\":\"created\"}";

struct rpc_conn {
    struct http_conn *http;
    struct rpc_events events;
};

/* Whether the body is {"status":"created"}, whitespace between JSON tokens
 * aside. The expected text has no escapes, so a body with one differs. */
static bool rest_body_is_created(const struct http_resp *r)
{
    if (r->body_len > REST_BODY_KEEP)
        return false;
    size_t k = 0;
    bool in_string = false;
    for (size_t i = 0; i < r->body_kept; i++) {
        char ch = r->body[i];
        if (!in_string && (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'))
            continue;
        if (ch == '"')
            in_string = !in_string;
        if (k == sizeof created - 1 || created[k] != ch)
            return false;
        k++;
    }
    return k == sizeof created - 1;
}

static void rest_on_connected(void *ctx, struct http_conn *h, int err)
{
    struct rpc_conn *c = ctx;
    c->events.connected(c->events.ctx, c, err);
}

static void rest_on_done(void *ctx, struct http_conn *h, void *call_ctx, enum http_outcome outcome,
                         const struct http_resp *resp, int code)
{
    struct rpc_conn *c = ctx;
    enum rpc_outcome rpc = RPC_E_CLOSED;
    if (outcome == HTTP_DONE) {
        code = resp->status;
        rpc = resp->status != 201        ? RPC_E_STATUS
              : rest_body_is_created(resp) ? RPC_OK
                                           : RPC_E_PROTOCOL;
    } else if (outcome == HTTP_E_PROTOCOL) {
        rpc = RPC_E_PROTOCOL;
    }
    c->events.done(c->events.ctx, c, call_ctx, rpc, code);
}

static int rest_call(struct rpc_conn *c, const Com__Stevenpg__Rvg__Message *msg, void *call_ctx)
{
    if (!http_conn_is_open(c->http))
        return -1;
    char stack[REST_BODY_STACK], *body = stack;
    size_t blen;
    enum car_json_err jrc = car_json_encode(msg, stack, sizeof stack, &blen);
    if (jrc == CAR_JSON_E_NOSPACE) {
        body = mem_alloc(blen);
        jrc = car_json_encode(msg, body, blen, &blen);
    }
    int rc = -1;
    if (jrc == CAR_JSON_OK) { /* else a message without its fields: the driver's bug */
        char head[160];
        int hlen = snprintf(head, sizeof head,
                            "POST /v1/create HTTP/1.1\r\nHost: %s\r\n"
                            "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                            http_conn_host(c->http), blen);
        rc = http_conn_request(c->http, head, (size_t)hlen, body, blen, call_ctx);
    }
    if (body != stack)
        mem_free(body);
    return rc;
}

static struct rpc_conn *rest_connect(struct ev_loop *loop, const struct rpc_conn_opts *opts,
                                     const struct rpc_events *events, int *err)
{
    struct rpc_conn *c = mem_calloc(1, sizeof *c);
    c->events = *events;
    struct http_conn_opts ho = {
        .host = opts->host,
        .port = opts->port,
        .max_in_flight = opts->max_in_flight,
        .body_keep = REST_BODY_KEEP,
        .max_body = REST_MAX_BODY,
        .trace = trace_http(opts->trace),
    };
    struct http_events he = {.connected = rest_on_connected, .done = rest_on_done, .ctx = c};
    c->http = http_conn_connect(loop, &ho, &he, err);
    if (!c->http) {
        mem_free(c);
        return NULL;
    }
    return c;
}

/* The http connection defers its own free while its handler runs, and
 * calls no callback after the close, so c can go at once. */
static void rest_close(struct rpc_conn *c)
{
    http_conn_close(c->http);
    mem_free(c);
}

const struct rpc_protocol rpc_rest_protocol = {
    .name = "rest",
    .default_port = 8080,
    .connect = rest_connect,
    .call = rest_call,
    .close = rest_close,
};
