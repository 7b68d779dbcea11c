/* car_rest.c - the REST side of car-server: the Car service's routes and
 * answers, as an app of the HTTP/1.1 machine (http/http_proto.c) on each
 * worker's connection engine (http/http_engine.c).
 *
 * Every answer is made from the head where it can be: a route or method
 * that is wrong, or a document that is not JSON or too large, is refused
 * before its body is read (and the body skipped). Only POST /v1/create's
 * document is waited for; it is parsed where it lies in the input, its
 * strings unescaped on the stack, and the answer written straight to the
 * output, so the article's request allocates nothing.
 */
#include "car/car_rest.h"

#include <stdio.h>
#include <string.h>

#include "car/car_json.h"
#include "car/car_worker.h"
#include "core/mem.h"
#include "http/http_engine.h"

/* Documents up to this size are unescaped on the stack; the article's is
 * 175 bytes. Larger ones get a buffer for the moment. */
#define JSON_STACK_BUF 4096
#define JSON_TYPE "application/json"

static const char body_created[] = "{\"status\":\"created\"}";
static const char body_ok[] = "{\"status\":\"ok\"}";

static bool str_is(struct http1_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

/* An answer without a body of its own: {"error":"<text>"}. The texts are
 * ours or http1.c's and need no escaping. */
static void respond_error(struct http_req *req, int status, const char *text, const char *allow)
{
    char body[160];
    int n = snprintf(body, sizeof body, "{\"error\":\"%s\"}", text);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof body ? (size_t)n : sizeof body - 1;
    http_respond(req, status, JSON_TYPE, body, len, allow);
}

static void rest_error(struct http_req *req, int status, const char *message)
{
    respond_error(req, status, message, NULL);
}

/* Routes from the head alone; leaves POST /v1/create with an acceptable
 * document for rest_handle. */
static void rest_head(struct http_req *req)
{
    const struct car_worker *w = req->worker;
    if (str_is(req->path, "/v1/create")) {
        if (!str_is(req->method, "POST"))
            respond_error(req, 405, "method not allowed", "Allow: POST\r\n");
        else if (!http1_media_type_is(req->content_type, JSON_TYPE))
            respond_error(req, 415, "content type must be application/json", NULL);
        else if (req->content_length > w->cfg->max_body)
            respond_error(req, 413, "body too large", NULL);
    } else if (str_is(req->path, "/healthz")) {
        if (!str_is(req->method, "GET") && !req->head)
            respond_error(req, 405, "method not allowed", "Allow: GET, HEAD\r\n");
        else
            http_respond(req, 200, JSON_TYPE, body_ok, sizeof body_ok - 1, NULL);
    } else {
        respond_error(req, 404, "not found", NULL);
    }
}

/* POST /v1/create with its whole document. */
static void rest_handle(struct http_req *req)
{
    const char *body = req->body ? req->body : "";
    size_t len = req->body_len;
    char local[JSON_STACK_BUF];
    char *strings = len <= sizeof local ? local : mem_alloc(len);
    struct car_record rec;
    struct car_json_error err;
    if (car_json_parse(body, len, &rec, strings, len <= sizeof local ? sizeof local : len, &err) ==
        CAR_JSON_OK) {
        http_respond(req, 201, JSON_TYPE, body_created, sizeof body_created - 1, NULL);
    } else {
        char err_body[256];
        size_t n = car_json_error_body(&err, err_body, sizeof err_body);
        if (n >= sizeof err_body) /* cannot happen: the texts are short */
            n = sizeof err_body - 1;
        http_respond(req, 400, JSON_TYPE, err_body, n, NULL);
    }
    if (strings != local)
        mem_free(strings);
}

static void rest_observe(const struct http_req *req, int status)
{
    struct car_worker *w = req->worker;
    w->stats.rest_requests++;
    if (status >= 400)
        w->stats.rest_errors++;
}

const struct http_app car_rest_app = {
    .head = rest_head,
    .handle = rest_handle,
    .observe = rest_observe,
    .error = rest_error,
};

static void rest_conn_closed(void *ctx, int fd) { car_worker_conn_closed(ctx, fd); }

void car_rest_start(struct car_worker *w)
{
    const struct car_server_config *cfg = w->cfg;
    struct http_engine_config ec = {
        .log_name = "REST",
        .max_header = cfg->max_header,
        .max_body = cfg->max_body,
        .idle_timeout_ms = cfg->idle_timeout_ms,
        .request_timeout_ms = cfg->request_timeout_ms,
        .min_body_rate = cfg->min_body_rate,
        .log_requests = cfg->log_requests,
    };
    http_engine_init(&w->rest, w->loop, &ec, &car_rest_app, w, rest_conn_closed, w);
}
