/* test_http_proto.c - unit tests for the HTTP/1.1 server machine
 * (http_proto.c). Driven with the Car service's app (car_rest.c, a
 * synchronous one): the article's request and its exact answer, every
 * split of the input, pipelining, keep-alive and close, chunked bodies,
 * 100-continue, every error status, HEAD, timeouts, draining and the
 * output-room rule. Driven with a small asynchronous app: answers given
 * later and out of order go out in request order, the in-flight bound,
 * errors and 408 queued behind pending answers, bodies handed over,
 * orphans, answers too large for the output buffer, gzip. And the pure
 * helpers: Accept-Encoding, gzip, the target path, reason phrases and the
 * Date format.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <cmocka.h>
#include <zlib.h>

#include "car/car_rest.h"
#include "car/car_server.h"
#include "core/mem.h"
#include "core/outq.h"
#include "http/http_proto.h"

#define DATE "Sun, 06 Nov 1994 08:49:37 GMT"
#define DOC                                                                                        \
    "{\"car\":{\"make\":\"toyota\",\"model\":\"corolla\",\"trim\":\"4DR Sedan\",\"color\":"       \
    "\"gray\",\"year\":2012,\"mileage\":120000},\"driver\":{\"firstname\":\"John\",\"lastname\":" \
    "\"Smith\",\"driverId\":\"someId\"}}"
#define CREATE_HEAD                                                                                \
    "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 175\r\n"
#define CREATE CREATE_HEAD "\r\n" DOC
#define CREATED                                                                                    \
    "HTTP/1.1 201 Created\r\nDate: " DATE "\r\nServer: shootout/0.1.0\r\n"                       \
    "Content-Type: application/json\r\nContent-Length: 20\r\n\r\n{\"status\":\"created\"}"
#define CONTINUE "HTTP/1.1 100 Continue\r\n\r\n"

/* Drives the machine the way http_engine.c does: unconsumed input is kept and
 * offered again with the next piece. */
struct harness {
    struct http_proto p;
    struct http_env env;
    struct car_server_config cfg;
    struct car_worker w;
    struct outq spill;
    char in[1 << 16];
    size_t in_len;
    char out[1 << 16];
    size_t out_len, read_pos;
    enum http_stop last;
};

static const char *fixed_date(void) { return DATE; }

static struct harness *harness_new(size_t max_header, size_t max_body)
{
    struct harness *h = calloc(1, sizeof *h);
    assert_non_null(h);
    h->cfg.max_header = max_header;
    h->cfg.max_body = max_body;
    h->w.cfg = &h->cfg;
    h->env.app = &car_rest_app;
    h->env.app_worker = &h->w;
    h->env.max_header = max_header;
    h->env.max_body = max_body;
    h->env.log_name = "REST";
    h->env.date = fixed_date;
    http_proto_init(&h->p, &h->env, 1);
    return h;
}

static struct harness *harness(void) { return harness_new(8192, 1 << 20); }

static void harness_free(struct harness *h)
{
    http_proto_free(&h->p);
    outq_clear(&h->spill);
    free(h);
}

static void feed_n(struct harness *h, const char *data, size_t n)
{
    assert_true(h->in_len + n <= sizeof h->in);
    memcpy(h->in + h->in_len, data, n);
    h->in_len += n;
    struct http_out o = {h->out + h->out_len, 0, sizeof h->out - h->out_len, &h->spill};
    size_t used;
    h->last = http_proto_feed(&h->p, h->in, h->in_len, &used, &o);
    assert_true(used <= h->in_len);
    assert_int_not_equal(h->last, HTTP_OUT_FULL);
    assert_int_equal(outq_pending(&h->spill), 0);
    h->out_len += o.len;
    memmove(h->in, h->in + used, h->in_len - used);
    h->in_len -= used;
}

static void feed(struct harness *h, const char *s) { feed_n(h, s, strlen(s)); }

/* The output as a C string. */
static const char *output(struct harness *h)
{
    assert_true(h->out_len < sizeof h->out);
    h->out[h->out_len] = '\0';
    return h->out;
}

struct response {
    int status;
    char head[1024]; /* status line and fields, NUL-terminated */
    char body[512];
};

/* Reads the next response from the output; fails if there is none. */
static void next_response(struct harness *h, struct response *r, bool head_only)
{
    const char *start = h->out + h->read_pos, *end = h->out + h->out_len;
    const char *blank = NULL;
    for (const char *q = start; q + 4 <= end; q++)
        if (memcmp(q, "\r\n\r\n", 4) == 0) {
            blank = q;
            break;
        }
    if (!blank)
        fail_msg("no complete response in output at %zu", h->read_pos);
    size_t head_len = (size_t)(blank - start);
    assert_true(head_len < sizeof r->head);
    memcpy(r->head, start, head_len);
    r->head[head_len] = '\0';
    assert_int_equal(sscanf(r->head, "HTTP/1.1 %d ", &r->status), 1);
    const char *cl = strstr(r->head, "\r\nContent-Length: ");
    size_t body_len = 0;
    if (r->status != 100) {
        assert_non_null(cl);
        body_len = strtoul(cl + 18, NULL, 10);
        assert_non_null(strstr(r->head, "\r\nDate: " DATE "\r\n"));
        assert_non_null(strstr(r->head, "\r\nServer: shootout/"));
    }
    if (head_only)
        body_len = 0;
    assert_true(blank + 4 + body_len <= end);
    assert_true(body_len < sizeof r->body);
    memcpy(r->body, blank + 4, body_len);
    r->body[body_len] = '\0';
    h->read_pos = (size_t)(blank + 4 + body_len - h->out);
}

static int expect_response(struct harness *h, int status, const char *body)
{
    struct response r;
    next_response(h, &r, false);
    if (r.status != status)
        fail_msg("status %d, want %d:\n%s\n\n%s", r.status, status, r.head, r.body);
    if (body)
        assert_string_equal(r.body, body);
    return r.status;
}

static void expect_no_more(struct harness *h) { assert_int_equal(h->read_pos, h->out_len); }

static bool has_field(const struct response *r, const char *line)
{
    char want[256];
    snprintf(want, sizeof want, "\r\n%s\r\n", line);
    char head[1100];
    snprintf(head, sizeof head, "%s\r\n", r->head);
    return strstr(head, want) != NULL;
}

/* The next response is the last: it says so, nothing follows, and the
 * machine has stopped. json: its body is a JSON object (the Car app's
 * errors), not text. */
static void expect_last(struct harness *h, int status, bool json)
{
    struct response r;
    next_response(h, &r, false);
    if (r.status != status)
        fail_msg("status %d, want %d:\n%s", r.status, status, r.head);
    assert_true(has_field(&r, "Connection: close"));
    if (json)
        assert_int_equal(r.body[0], '{');
    expect_no_more(h);
    assert_int_equal(h->last, HTTP_CLOSE);
}

static void expect_last_response(struct harness *h, int status) { expect_last(h, status, true); }

/* ---- The article's request ---------------------------------------------- */

static void test_create_exact_answer(void **state)
{
    struct harness *h = harness();
    feed(h, CREATE);
    assert_int_equal(h->last, HTTP_NEED_MORE);
    assert_string_equal(output(h), CREATED);
    assert_int_equal(h->in_len, 0);
    assert_int_equal(h->w.stats.rest_requests, 1);
    assert_int_equal(h->w.stats.rest_errors, 0);
    assert_false(http_proto_busy(&h->p, h->in_len));
    harness_free(h);
}

/* Split anywhere, or fed a byte at a time, the answer is the same. */
static void test_create_any_split(void **state)
{
    const char req[] = CREATE;
    for (size_t cut = 0; cut < sizeof req - 1; cut++) {
        struct harness *h = harness();
        feed_n(h, req, cut);
        assert_int_equal(h->out_len, 0);
        assert_int_equal(http_proto_busy(&h->p, h->in_len), cut > 0);
        feed_n(h, req + cut, sizeof req - 1 - cut);
        assert_string_equal(output(h), CREATED);
        harness_free(h);
    }
    struct harness *h = harness();
    for (size_t i = 0; i < sizeof req - 1; i++)
        feed_n(h, req + i, 1);
    assert_string_equal(output(h), CREATED);
    harness_free(h);
}

static void test_pipelined_in_order(void **state)
{
    struct harness *h = harness();
    feed(h, CREATE "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                   "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n" CREATE);
    expect_response(h, 201, "{\"status\":\"created\"}");
    expect_response(h, 200, "{\"status\":\"ok\"}");
    expect_response(h, 404, "{\"error\":\"not found\"}");
    expect_response(h, 201, NULL);
    expect_no_more(h);
    assert_int_equal(h->w.stats.rest_requests, 4);
    assert_int_equal(h->w.stats.rest_errors, 1);
    harness_free(h);
}

/* ---- Connection management ------------------------------------------------ */

static void test_connection_close(void **state)
{
    struct harness *h = harness();
    feed(h, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    expect_last_response(h, 200);
    assert_int_equal(h->in_len, 0);
    /* Everything later is ignored. */
    feed(h, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(h->last, HTTP_CLOSE);
    expect_no_more(h);
    harness_free(h);
}

static void test_http10(void **state)
{
    struct harness *h = harness();
    feed(h, "GET /healthz HTTP/1.0\r\n\r\n");
    expect_last_response(h, 200);
    harness_free(h);

    h = harness();
    feed(h, "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_int_equal(h->last, HTTP_NEED_MORE);
    struct response r;
    next_response(h, &r, false);
    assert_true(has_field(&r, "Connection: keep-alive"));
    harness_free(h);

    /* HTTP/1.1 keep-alive is the default and goes unsaid. */
    h = harness();
    feed(h, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    next_response(h, &r, false);
    assert_null(strstr(r.head, "Connection"));
    harness_free(h);
}

static void test_draining_closes(void **state)
{
    struct harness *h = harness();
    h->env.draining = true;
    feed(h, CREATE);
    expect_last_response(h, 201);
    harness_free(h);
}

/* ---- Bodies --------------------------------------------------------------- */

static void test_chunked_body(void **state)
{
    /* A well-framed body that is not a document: 400, and the connection
     * goes on. */
    struct harness *h = harness();
    feed(h, "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n7\r\n{\"car\":\r\n0\r\n\r\n" CREATE);
    expect_response(h, 400, "{\"error\":\"unexpected end of input\",\"offset\":7}");
    expect_response(h, 201, NULL);
    harness_free(h);

    static const char doc[] = DOC;
    char good[1024];
    snprintf(good, sizeof good,
             "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Transfer-Encoding: chunked\r\n\r\n7\r\n%.7s\r\nA8;ext=1\r\n%s\r\n0\r\n\r\n"
             "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
             doc, doc + 7);
    for (size_t cut = 0; cut < strlen(good); cut += 3) {
        h = harness();
        feed_n(h, good, cut);
        feed_n(h, good + cut, strlen(good) - cut);
        expect_response(h, 201, NULL);
        expect_response(h, 200, NULL);
        expect_no_more(h);
        assert_null(h->p.body); /* freed once the request is answered */
        harness_free(h);
    }
}

static void test_chunked_errors(void **state)
{
    struct harness *h = harness_new(8192, 100);
    feed(h, "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n65\r\n");
    expect_last_response(h, 413);
    harness_free(h);

    h = harness();
    feed(h, "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\nzz\r\n");
    expect_response(h, 400, "{\"error\":\"bad chunk size line\"}");
    assert_int_equal(h->last, HTTP_CLOSE);
    harness_free(h);
}

static void test_content_length_over_limit(void **state)
{
    struct harness *h = harness_new(8192, 174);
    feed(h, CREATE_HEAD "\r\n");
    expect_last_response(h, 413);
    harness_free(h);

    h = harness_new(8192, 175); /* exactly at the limit is fine */
    feed(h, CREATE);
    expect_response(h, 201, NULL);
    harness_free(h);
}

/* The body of a request answered from its head is skipped, and the next
 * request is served. */
static void test_skipped_bodies(void **state)
{
    struct harness *h = harness();
    feed(h, "POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab");
    expect_response(h, 404, NULL);
    assert_true(http_proto_busy(&h->p, h->in_len));
    feed(h, "cde" CREATE);
    expect_response(h, 201, NULL);
    feed(h, "PUT /v1/create HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            "3\r\nabc\r\n0\r\n\r\n" CREATE);
    struct response r;
    next_response(h, &r, false);
    assert_int_equal(r.status, 405);
    assert_true(has_field(&r, "Allow: POST"));
    expect_response(h, 201, NULL);
    expect_no_more(h);
    assert_int_equal(h->last, HTTP_NEED_MORE);
    harness_free(h);

    /* A skipped chunked body that turns out malformed closes quietly: its
     * request is answered already. */
    h = harness();
    feed(h, "POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n");
    expect_response(h, 404, NULL);
    expect_no_more(h);
    assert_int_equal(h->last, HTTP_CLOSE);
    harness_free(h);
}

/* ---- 100-continue --------------------------------------------------------- */

static void test_expect_continue(void **state)
{
    struct harness *h = harness();
    feed(h, CREATE_HEAD "Expect: 100-continue\r\n\r\n");
    assert_string_equal(output(h), CONTINUE);
    assert_true(http_proto_busy(&h->p, h->in_len));
    feed(h, DOC);
    assert_string_equal(output(h), CONTINUE CREATED);
    assert_int_equal(h->w.stats.rest_requests, 1);
    harness_free(h);

    /* The body came along: nobody waits for 100. */
    h = harness();
    feed(h, CREATE_HEAD "Expect: 100-Continue\r\n\r\n" DOC);
    assert_string_equal(output(h), CREATED);
    harness_free(h);

    /* Refused from the head: no 100, and the connection closes, since the
     * client may or may not send the body now. */
    h = harness();
    feed(h, "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
            "Content-Length: 175\r\nExpect: 100-continue\r\n\r\n");
    expect_last_response(h, 415);
    harness_free(h);

    h = harness_new(8192, 100);
    feed(h, CREATE_HEAD "Expect: 100-continue\r\n\r\n");
    expect_last_response(h, 413);
    harness_free(h);

    /* HTTP/1.0 expectations are ignored (RFC 9110 section 10.1.1). */
    h = harness();
    feed(h, "POST /v1/create HTTP/1.0\r\nContent-Type: application/json\r\n"
            "Content-Length: 175\r\nExpect: 100-continue\r\n\r\n");
    assert_int_equal(h->out_len, 0);
    feed(h, DOC);
    expect_response(h, 201, NULL);
    harness_free(h);
}

static void test_other_expectation(void **state)
{
    struct harness *h = harness();
    feed(h, "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n" CREATE);
    expect_response(h, 417, NULL);
    expect_response(h, 201, NULL); /* no body: the connection goes on */
    harness_free(h);

    h = harness();
    feed(h, CREATE_HEAD "Expect: 100-continue, teapot\r\n\r\n");
    expect_last_response(h, 417);
    harness_free(h);
}

/* ---- Errors ------------------------------------------------------------- */

static void test_json_errors_keep_the_connection(void **state)
{
    static const struct {
        const char *doc, *body;
    } cases[] = {
        {"{\"car\":", "{\"error\":\"unexpected end of input\",\"offset\":7}"},
        {"{\"car\":{}}", "{\"error\":\"missing field\",\"field\":\"car.make\",\"offset\":8}"},
        {"{\"car\":[]}", "{\"error\":\"wrong type\",\"field\":\"car\",\"offset\":7}"},
        {"", "{\"error\":\"unexpected end of input\",\"offset\":0}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct harness *h = harness();
        char req[512];
        snprintf(req, sizeof req,
                 "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n%s",
                 strlen(cases[i].doc), cases[i].doc);
        feed(h, req);
        feed(h, CREATE);
        expect_response(h, 400, cases[i].body);
        expect_response(h, 201, NULL);
        assert_int_equal(h->w.stats.rest_errors, 1);
        harness_free(h);
    }
    /* No body at all reads as an empty document. */
    struct harness *h = harness();
    feed(h, "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n");
    expect_response(h, 400, "{\"error\":\"unexpected end of input\",\"offset\":0}");
    harness_free(h);
}

static void test_content_type(void **state)
{
    static const char *const good[] = {"application/json", "Application/JSON",
                                       "application/json; charset=utf-8",
                                       "application/json ;charset=UTF-8"};
    static const char *const bad[] = {"text/plain", "application/jsonx", "application/x-json", ""};
    char req[1024];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct harness *h = harness();
        snprintf(req, sizeof req,
                 "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                 "Content-Length: 175\r\n\r\n" DOC,
                 good[i]);
        feed(h, req);
        expect_response(h, 201, NULL);
        harness_free(h);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct harness *h = harness();
        snprintf(req, sizeof req,
                 "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                 "Content-Length: 175\r\n\r\n" DOC CREATE,
                 bad[i]);
        feed(h, req);
        expect_response(h, 415, "{\"error\":\"content type must be application/json\"}");
        expect_response(h, 201, NULL);
        harness_free(h);
    }
    struct harness *h = harness();
    feed(h, "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Length: 175\r\n\r\n" DOC);
    expect_response(h, 415, NULL);
    harness_free(h);
}

static void test_routes_and_methods(void **state)
{
    static const struct {
        const char *line;
        int status;
        const char *allow;
    } cases[] = {
        {"GET /v1/create", 405, "Allow: POST"},
        {"post /v1/create", 405, "Allow: POST"}, /* methods are case-sensitive */
        {"DELETE /v1/create?x=1", 405, "Allow: POST"},
        {"POST /healthz", 405, "Allow: GET, HEAD"},
        {"GET /healthz?probe=1", 200, NULL},
        {"GET /", 404, NULL},
        {"GET /v1/create/", 404, NULL},
        {"GET /V1/CREATE", 404, NULL},
        {"OPTIONS *", 404, NULL},
        {"GET http://example.com/healthz", 200, NULL}, /* absolute form */
        {"GET HTTPS://example.com", 404, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct harness *h = harness();
        char req[256];
        snprintf(req, sizeof req, "%s HTTP/1.1\r\nHost: x\r\n\r\n", cases[i].line);
        feed(h, req);
        struct response r;
        next_response(h, &r, false);
        if (r.status != cases[i].status)
            fail_msg("%s: %d, want %d", cases[i].line, r.status, cases[i].status);
        if (cases[i].allow)
            assert_true(has_field(&r, cases[i].allow));
        else
            assert_null(strstr(r.head, "Allow:"));
        assert_int_equal(h->last, HTTP_NEED_MORE);
        harness_free(h);
    }
    struct harness *h = harness();
    feed(h, "POST http://example.com:8080/v1/create HTTP/1.1\r\nHost: x\r\n"
            "Content-Type: application/json\r\nContent-Length: 175\r\n\r\n" DOC);
    expect_response(h, 201, NULL);
    harness_free(h);
}

static void test_head_method(void **state)
{
    struct harness *h = harness();
    feed(h, "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nHEAD /nope HTTP/1.1\r\nHost: x\r\n\r\n"
            "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    struct response r;
    next_response(h, &r, true);
    assert_int_equal(r.status, 200);
    assert_true(has_field(&r, "Content-Length: 15"));
    next_response(h, &r, true);
    assert_int_equal(r.status, 404);
    expect_response(h, 200, "{\"status\":\"ok\"}");
    expect_no_more(h);
    harness_free(h);
}

/* Framing errors close: where the next request would start is unknown. */
static void test_protocol_errors_close(void **state)
{
    static const struct {
        const char *req;
        int status;
    } cases[] = {
        {"GET /healthz HTTP/2.0\r\n\r\n", 505},
        {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
        {"GET /healthz HTTP/1.1\r\n\r\n", 400}, /* no Host */
        {"GET /healthz HTTP/1.1\nHost: x\n\n", 400},
        {"GET /healthz HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400},
        {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400}, /* TLS ClientHello */
        {"POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
         400},
        {"POST /v1/create HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
        {"POST /v1/create HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
         "Content-Length: 3\r\n\r\n",
         400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct harness *h = harness();
        feed(h, cases[i].req);
        expect_last_response(h, cases[i].status);
        harness_free(h);
    }
}

static void test_head_limit(void **state)
{
    struct harness *h = harness_new(256, 1 << 20);
    char req[512];
    snprintf(req, sizeof req, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: %0300d\r\n\r\n", 0);
    feed(h, req);
    expect_last_response(h, 431);
    harness_free(h);

    /* Too many fields is a 431 too. */
    h = harness_new(65536, 1 << 20);
    char big[8192] = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 100; i++)
        strcat(big, "A: b\r\n");
    strcat(big, "\r\n");
    feed(h, big);
    expect_response(h, 431, NULL);
    harness_free(h);
}

/* ---- Timeouts and output room --------------------------------------------- */

static void test_timeout(void **state)
{
    char out[HTTP_PROTO_ROOM];
    struct outq spill = {0};
    struct http_out o = {out, 0, sizeof out, &spill};

    struct harness *h = harness();
    feed(h, "GET /heal");
    assert_true(http_proto_busy(&h->p, h->in_len));
    http_proto_timeout(&h->p, &o);
    assert_true(o.len > 0 && memcmp(out, "HTTP/1.1 408 ", 13) == 0);
    assert_non_null(memmem(out, o.len, "Connection: close\r\n", 19));
    assert_false(http_proto_busy(&h->p, 0));
    assert_int_equal(h->w.stats.rest_errors, 1);
    harness_free(h);

    /* Waiting for a body after 100 Continue. */
    h = harness();
    feed(h, CREATE_HEAD "Expect: 100-continue\r\n\r\n");
    o.len = 0;
    http_proto_timeout(&h->p, &o);
    assert_true(o.len > 0 && memcmp(out, "HTTP/1.1 408 ", 13) == 0);
    harness_free(h);

    /* A body being skipped belongs to a request answered already. */
    h = harness();
    feed(h, "POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab");
    o.len = 0;
    http_proto_timeout(&h->p, &o);
    assert_int_equal(o.len, 0);
    feed(h, "cde");
    assert_int_equal(h->last, HTTP_CLOSE);
    harness_free(h);
}

/* What the body of the request in progress has brought so far, which buys
 * it time at the engine's --min-body-rate: nothing before the head is
 * complete, then the body's bytes whether it is read, decoded or skipped. */
static void test_body_received(void **state)
{
    struct harness *h = harness();
    feed(h, "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Length: 175\r\n");
    assert_int_equal(http_proto_body_received(&h->p, h->in_len), 0);
    feed(h, "Content-Type: application/json\r\n\r\n{\"car\"");
    assert_int_equal(http_proto_body_received(&h->p, h->in_len), 6);
    harness_free(h);

    h = harness();
    feed(h, "POST /v1/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n7\r\n{\"car\":\r\n3\r\n{\"m");
    assert_int_equal(http_proto_body_received(&h->p, h->in_len), 10);
    harness_free(h);

    h = harness();
    feed(h, "POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabc");
    assert_int_equal(http_proto_body_received(&h->p, h->in_len), 3);
    feed(h, "de");
    assert_int_equal(http_proto_body_received(&h->p, h->in_len), 0);
    feed(h, "POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            "4\r\nabcd\r\n2\r\nx");
    assert_int_equal(http_proto_body_received(&h->p, h->in_len), 5);
    harness_free(h);
}

/* With less than HTTP_PROTO_ROOM of room nothing is handled; the
 * caller drains the output and feeds again, and the answers are the same
 * as with room to spare. */
static void test_output_room(void **state)
{
    struct harness *h = harness();
    char in[64 * (sizeof CREATE)];
    size_t len = 0;
    for (int i = 0; i < 60; i++) {
        memcpy(in + len, CREATE, sizeof CREATE - 1);
        len += sizeof CREATE - 1;
    }
    char small[HTTP_PROTO_ROOM + 100];
    size_t off = 0, total = 0;
    int rounds = 0;
    for (;;) {
        struct http_out o = {small, 0, sizeof small, &h->spill};
        size_t used;
        enum http_stop stop = http_proto_feed(&h->p, in + off, len - off, &used, &o);
        off += used;
        if (o.len)
            assert_memory_equal(small, CREATED, sizeof CREATED - 1);
        total += o.len;
        rounds++;
        if (stop == HTTP_NEED_MORE)
            break;
        assert_int_equal(stop, HTTP_OUT_FULL);
        assert_true(rounds < 100);
    }
    assert_int_equal(off, len);
    assert_int_equal(total, 60 * (sizeof CREATED - 1));
    assert_int_equal(h->w.stats.rest_requests, 60);

    struct http_out none = {small, 0, HTTP_PROTO_ROOM - 1, &h->spill};
    size_t used = 1;
    assert_int_equal(http_proto_feed(&h->p, CREATE, sizeof CREATE - 1, &used, &none),
                     HTTP_OUT_FULL);
    assert_int_equal(used, 0);
    assert_int_equal(none.len, 0);
    harness_free(h);
}

/* ---- An asynchronous app ---------------------------------------------------- */

/* Holds every request until the test answers it, or answers at once with
 * its path (or its body, for a POST) as the body. */
static struct {
    struct http_req *held[16];
    int n;
    bool answer_now;
    int ready_calls;
    size_t big; /* answer_now: a body of this many 'x' instead */
} A;

static void a_answer(struct http_req *req)
{
    assert_int_equal(strlen(req->method.ptr), req->method.len);
    assert_int_equal(strlen(req->path.ptr), req->path.len);
    if (A.big) {
        char *b = malloc(A.big);
        memset(b, 'x', A.big);
        http_respond(req, 200, "text/plain", b, A.big, NULL);
        free(b);
    } else if (req->body) {
        assert_int_equal(strlen(req->body), req->body_len);
        http_respond(req, 200, "text/plain", req->body, req->body_len, NULL);
    } else {
        http_respond(req, 200, "text/plain", req->path.ptr, req->path.len, NULL);
    }
}

static void a_handle(struct http_req *req)
{
    if (A.answer_now)
        a_answer(req);
    else
        A.held[A.n++] = req;
}

static void a_ready(struct http_proto *p) { A.ready_calls++; }

static const struct http_app async_app = {.async = true, .handle = a_handle};

static struct harness *async_harness(unsigned max_inflight)
{
    memset(&A, 0, sizeof A);
    struct harness *h = harness();
    h->env.app = &async_app;
    h->env.app_worker = NULL;
    h->env.max_inflight = max_inflight;
    h->env.ready = a_ready;
    h->env.log_name = "HTTP";
    return h;
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: x\r\n\r\n"

static void test_async_answers_in_request_order(void **state)
{
    struct harness *h = async_harness(16);
    feed(h, GET("/a") GET("/b?q=1") GET("/c"));
    assert_int_equal(A.n, 3);
    assert_int_equal(h->out_len, 0);
    assert_int_equal(h->last, HTTP_NEED_MORE);
    assert_string_equal(A.held[1]->query.ptr, "q=1");
    a_answer(A.held[2]);
    assert_int_equal(A.ready_calls, 0); /* not the head of the queue */
    feed(h, "");
    assert_int_equal(h->out_len, 0);
    a_answer(A.held[0]);
    assert_int_equal(A.ready_calls, 1);
    feed(h, "");
    expect_response(h, 200, "/a");
    expect_no_more(h);
    a_answer(A.held[1]);
    feed(h, "");
    expect_response(h, 200, "/b");
    expect_response(h, 200, "/c");
    expect_no_more(h);
    assert_false(http_proto_waiting(&h->p));
    harness_free(h);
}

static void test_async_inflight_bound(void **state)
{
    struct harness *h = async_harness(2);
    feed(h, GET("/a") GET("/b") GET("/c"));
    assert_int_equal(A.n, 2);
    assert_int_equal(h->last, HTTP_WAIT_APP);
    assert_int_equal(h->in_len, strlen(GET("/c"))); /* not read while two wait */
    assert_false(http_proto_busy(&h->p, h->in_len)); /* and not on the clock */
    a_answer(A.held[0]);
    feed(h, "");
    assert_int_equal(A.n, 3);
    assert_int_equal(h->in_len, 0);
    a_answer(A.held[1]);
    a_answer(A.held[2]);
    feed(h, "");
    expect_response(h, 200, "/a");
    expect_response(h, 200, "/b");
    expect_response(h, 200, "/c");
    harness_free(h);
}

/* The machine's own answers wait their turn too, and close. */
static void test_async_errors_and_timeouts_queue(void **state)
{
    struct harness *h = async_harness(16);
    feed(h, GET("/a") "GET /b HTTP/1.1\r\n\r\n"); /* no Host */
    assert_int_equal(h->out_len, 0);
    assert_int_equal(h->last, HTTP_WAIT_APP);
    a_answer(A.held[0]);
    feed(h, "");
    expect_response(h, 200, "/a");
    struct response r;
    next_response(h, &r, false);
    assert_int_equal(r.status, 400);
    assert_true(has_field(&r, "Connection: close"));
    assert_int_equal(h->last, HTTP_CLOSE);
    harness_free(h);

    h = async_harness(16);
    feed(h, GET("/a") "GET /b");
    assert_true(http_proto_busy(&h->p, h->in_len));
    char out[HTTP_PROTO_ROOM];
    struct http_out o = {out, 0, sizeof out, &h->spill};
    http_proto_timeout(&h->p, &o);
    assert_int_equal(o.len, 0); /* behind /a */
    a_answer(A.held[0]);
    feed(h, "");
    expect_response(h, 200, "/a");
    next_response(h, &r, false);
    assert_int_equal(r.status, 408);
    assert_true(has_field(&r, "Connection: close"));
    assert_int_equal(h->last, HTTP_CLOSE);
    harness_free(h);
}

static void test_async_bodies_are_copies(void **state)
{
    struct harness *h = async_harness(16);
    A.answer_now = true;
    feed(h, "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhel");
    feed(h, "lo" "POST /q HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n" GET("/r"));
    expect_response(h, 200, "hello");
    expect_response(h, 200, "abcde");
    expect_response(h, 200, "/r");
    expect_no_more(h);
    harness_free(h);

    /* Over the limit: 413, in order, closing. */
    h = async_harness(16);
    A.answer_now = true;
    h->env.max_body = 4;
    feed(h, GET("/a") "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
    expect_response(h, 200, "/a");
    expect_last(h, 413, false);
    harness_free(h);
}

/* A connection that goes while its requests wait leaves them to the app:
 * answering one then frees it. */
static void test_async_orphans(void **state)
{
    struct harness *h = async_harness(16);
    feed(h, GET("/a") GET("/b"));
    a_answer(A.held[1]);
    http_proto_free(&h->p);
    assert_non_null(h->env.orphans);
    a_answer(A.held[0]);
    assert_null(h->env.orphans);
    http_proto_init(&h->p, &h->env, 1);
    harness_free(h);

    h = async_harness(16);
    feed(h, GET("/a"));
    http_proto_free(&h->p);
    http_env_free_orphans(&h->env); /* the app stopped: nobody answers */
    assert_null(h->env.orphans);
    http_proto_init(&h->p, &h->env, 1);
    harness_free(h);
}

/* A bodiless answer (204) has no Content-Type nor Content-Length. */
static void test_async_bodiless(void **state)
{
    struct harness *h = async_harness(16);
    feed(h, GET("/a"));
    http_respond(A.held[0], 204, NULL, NULL, 0, NULL);
    feed(h, "");
    assert_string_equal(output(h), "HTTP/1.1 204 No Content\r\nDate: " DATE
                                   "\r\nServer: shootout/0.1.0\r\n\r\n");
    harness_free(h);
}

/* Draining: the last answer due closes, not the first. */
static void test_async_draining(void **state)
{
    struct harness *h = async_harness(16);
    feed(h, GET("/a") GET("/b"));
    h->env.draining = true;
    a_answer(A.held[0]);
    a_answer(A.held[1]);
    feed(h, "");
    struct response r;
    next_response(h, &r, false);
    assert_false(has_field(&r, "Connection: close"));
    next_response(h, &r, false);
    assert_true(has_field(&r, "Connection: close"));
    assert_int_equal(h->last, HTTP_CLOSE);
    harness_free(h);
}

/* Reads everything the spill queue holds. */
static size_t spill_take(struct outq *q, char *buf, size_t cap)
{
    size_t n = 0;
    while (outq_pending(q) > 0) {
        struct iovec iov[8];
        size_t bytes;
        int k = outq_iov(q, iov, 8, cap - n, &bytes);
        assert_true(k > 0);
        for (int i = 0; i < k; i++) {
            memcpy(buf + n, iov[i].iov_base, iov[i].iov_len);
            n += iov[i].iov_len;
        }
        outq_consumed(q, bytes);
    }
    return n;
}

/* An answer larger than the output buffer goes to the spill queue, after
 * what the buffer held, in order. */
static void test_large_answer_spills(void **state)
{
    struct harness *h = async_harness(16);
    A.answer_now = true;
    A.big = 5000;
    char small[HTTP_PROTO_ROOM + 100];
    struct http_out o = {small, 0, sizeof small, &h->spill};
    size_t used;
    static const char two[] = GET("/a") GET("/b");
    assert_int_equal(http_proto_feed(&h->p, two, sizeof two - 1, &used, &o), HTTP_NEED_MORE);
    assert_true(outq_pending(&h->spill) > 10000);
    static char got[1 << 15];
    size_t n = spill_take(&h->spill, got, sizeof got);
    memcpy(got + n, small, o.len);
    n += o.len;
    memcpy(h->out, got, n);
    h->out_len = n;
    struct response r;
    for (int i = 0; i < 2; i++) {
        next_response(h, &r, true);
        assert_int_equal(r.status, 200);
        assert_true(has_field(&r, "Content-Length: 5000"));
        assert_int_equal(h->out[h->read_pos], 'x');
        h->read_pos += 5000;
    }
    assert_int_equal(h->read_pos, n);
    harness_free(h);
}

static void test_gzip_when_accepted(void **state)
{
    struct harness *h = async_harness(16);
    A.answer_now = true;
    A.big = 2000;
    h->env.gzip = http_gzip_new();
    feed(h, "GET /z HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n" GET("/plain"));
    struct response r;
    next_response(h, &r, true);
    assert_true(has_field(&r, "Content-Encoding: gzip"));
    assert_true(has_field(&r, "Vary: Accept-Encoding"));
    size_t zlen = strtoul(strstr(r.head, "Content-Length: ") + 16, NULL, 10);
    assert_true(zlen > 0 && zlen < 200);
    h->read_pos += zlen;
    next_response(h, &r, true);
    assert_null(strstr(r.head, "Content-Encoding"));
    assert_true(has_field(&r, "Vary: Accept-Encoding"));
    assert_true(has_field(&r, "Content-Length: 2000"));
    http_gzip_free(h->env.gzip);
    harness_free(h);
}

/* ---- The pure helpers --------------------------------------------------- */

static bool accepts(const char *v) { return http_accepts_gzip((struct http1_str){v, strlen(v)}); }

static void test_accept_encoding(void **state)
{
    assert_false(http_accepts_gzip((struct http1_str){NULL, 0}));
    assert_true(accepts("gzip"));
    assert_true(accepts("gzip, deflate"));
    assert_true(accepts("deflate, GZIP;q=0.5"));
    assert_true(accepts("x-gzip"));
    assert_true(accepts("br;q=1.0, *;q=0.1"));
    assert_true(accepts(" deflate ,\tgzip ; q=1"));
    assert_false(accepts(""));
    assert_false(accepts("identity"));
    assert_false(accepts("deflate, br"));
    assert_false(accepts("gzip;q=0"));
    assert_false(accepts("gzip;q=0.000"));
    assert_false(accepts("gzip;q=0, *"));  /* refused by name: * does not bring it back */
    assert_false(accepts("*;q=0"));
    assert_false(accepts("gzip;q=x"));     /* malformed q: refused */
    assert_false(accepts("gzipper"));
    assert_true(accepts("gzip;level=1"));
}

static void test_gzip_round_trip(void **state)
{
    char in[4000];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = "{\"id\":1,\"name\":\"Minsk\"},"[i % 25];
    char *z = NULL;
    struct http_gzip *g = http_gzip_new();
    assert_non_null(g);
    /* the second use of the compressor must start afresh */
    size_t n = http_gzip(g, "warm-up", 7, &z);
    assert_true(n > 0);
    mem_free(z);
    n = http_gzip(g, in, sizeof in, &z);
    http_gzip_free(g);
    assert_true(n > 18 && n < sizeof in / 4);
    assert_int_equal((unsigned char)z[0], 0x1f); /* the gzip magic */
    assert_int_equal((unsigned char)z[1], 0x8b);
    char out[sizeof in + 16];
    z_stream s;
    memset(&s, 0, sizeof s);
    assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
    s.next_in = (Bytef *)z;
    s.avail_in = (uInt)n;
    s.next_out = (Bytef *)out;
    s.avail_out = sizeof out;
    assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
    assert_int_equal(s.total_out, sizeof in);
    inflateEnd(&s);
    assert_memory_equal(out, in, sizeof in);
    mem_free(z);
}

static void check_path(const char *target, const char *want)
{
    struct http1_str p = http_target_path((struct http1_str){target, strlen(target)});
    assert_int_equal(p.len, strlen(want));
    assert_memory_equal(p.ptr, want, p.len);
}

static void test_target_path(void **state)
{
    check_path("/api/v1/countries", "/api/v1/countries");
    check_path("http://host:8080/api/v1/countries", "/api/v1/countries");
    check_path("HTTPS://host", "/");
    check_path("*", "*");
}

static void test_reason_and_date(void **state)
{
    assert_string_equal(http_reason(404), "Not Found");
    assert_string_equal(http_reason(503), "Service Unavailable");
    assert_string_equal(http_reason(299), "Unknown");
    const char *d = http_date();
    assert_int_equal(strlen(d), HTTP_DATE_LEN);
    assert_true(strcmp(d + HTTP_DATE_LEN - 4, " GMT") == 0);
    assert_int_equal(d[3], ',');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_exact_answer),
        cmocka_unit_test(test_create_any_split),
        cmocka_unit_test(test_pipelined_in_order),
        cmocka_unit_test(test_connection_close),
        cmocka_unit_test(test_http10),
        cmocka_unit_test(test_draining_closes),
        cmocka_unit_test(test_chunked_body),
        cmocka_unit_test(test_chunked_errors),
        cmocka_unit_test(test_content_length_over_limit),
        cmocka_unit_test(test_skipped_bodies),
        cmocka_unit_test(test_expect_continue),
        cmocka_unit_test(test_other_expectation),
        cmocka_unit_test(test_json_errors_keep_the_connection),
        cmocka_unit_test(test_content_type),
        cmocka_unit_test(test_routes_and_methods),
        cmocka_unit_test(test_head_method),
        cmocka_unit_test(test_protocol_errors_close),
        cmocka_unit_test(test_head_limit),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_body_received),
        cmocka_unit_test(test_output_room),
        cmocka_unit_test(test_async_answers_in_request_order),
        cmocka_unit_test(test_async_inflight_bound),
        cmocka_unit_test(test_async_errors_and_timeouts_queue),
        cmocka_unit_test(test_async_bodies_are_copies),
        cmocka_unit_test(test_async_orphans),
        cmocka_unit_test(test_async_bodiless),
        cmocka_unit_test(test_async_draining),
        cmocka_unit_test(test_large_answer_spills),
        cmocka_unit_test(test_gzip_when_accepted),
        cmocka_unit_test(test_accept_encoding),
        cmocka_unit_test(test_gzip_round_trip),
        cmocka_unit_test(test_target_path),
        cmocka_unit_test(test_reason_and_date),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
