/* test_http1.c - unit tests for the HTTP/1.1 codec (http1.c): request and
 * response heads over every prefix, pipelining, every error code, limits,
 * the framing headers, and chunked bodies fed whole, in place and byte by
 * byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "http/http1.h"

#define NHDR 16
#define MAX_HEAD 8192

static struct http1_header hdrs[NHDR];

static int parse_n(const char *s, size_t n, struct http1_request *req)
{
    return http1_parse_request(s, n, req, hdrs, NHDR, MAX_HEAD);
}

static int parse(const char *s, struct http1_request *req) { return parse_n(s, strlen(s), req); }

static void assert_str(struct http1_str s, const char *want)
{
    assert_non_null(s.ptr);
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.ptr, want, s.len);
}

/* Fails, saying what was parsed and both answers, unless rc is want. */
static void expect_rc(const char *s, int rc, int want)
{
    if (rc != want)
        fail_msg("%s: got %d (%s), want %d (%s)", s, rc, rc < 0 ? http1_strerror(rc) : "length",
                 want, want < 0 ? http1_strerror(want) : "length");
}

/* Parses a complete request and checks it is all consumed. */
static void parse_ok(const char *s, struct http1_request *req)
{
    expect_rc(s, parse(s, req), (int)strlen(s));
}

static void parse_err(const char *s, int err)
{
    struct http1_request req;
    expect_rc(s, parse(s, &req), err);
}

/* ---- Request heads ------------------------------------------------------- */

static void test_get(void **state)
{
    struct http1_request req;
    parse_ok("GET /v1/cars?id=7&x=y HTTP/1.1\r\nHost: example.com\r\n"
             "Accept:  */* \r\nX-Empty:\r\n\r\n",
             &req);
    assert_str(req.method, "GET");
    assert_str(req.target, "/v1/cars?id=7&x=y");
    assert_str(req.path, "/v1/cars");
    assert_str(req.query, "id=7&x=y");
    assert_int_equal(req.minor_version, 1);
    assert_int_equal(req.num_headers, 3);
    assert_str(hdrs[0].name, "Host");
    assert_str(hdrs[0].value, "example.com");
    assert_str(hdrs[1].value, "*/*");
    assert_int_equal(hdrs[2].value.len, 0);
    assert_int_equal(req.body, HTTP1_BODY_NONE);
    assert_true(req.keep_alive);
    assert_false(req.expect_continue);
    assert_null(req.content_type.ptr);
}

static void test_target_forms(void **state)
{
    struct http1_request req;
    parse_ok("GET /a HTTP/1.1\r\nHost: h\r\n\r\n", &req);
    assert_str(req.path, "/a");
    assert_null(req.query.ptr);
    parse_ok("GET /a? HTTP/1.1\r\nHost: h\r\n\r\n", &req);
    assert_str(req.path, "/a");
    assert_non_null(req.query.ptr);
    assert_int_equal(req.query.len, 0);
    parse_ok("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", &req);
    assert_str(req.target, "*");
    parse_ok("GET http://h/x?q HTTP/1.1\r\nHost: h\r\n\r\n", &req);
    assert_str(req.path, "http://h/x");
    assert_str(req.query, "q");
    parse_ok("M-SEARCH /a?b?c HTTP/1.1\r\nHost: h\r\n\r\n", &req);
    assert_str(req.method, "M-SEARCH");
    assert_str(req.query, "b?c");
}

static const char *const valid[] = {
    "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
    ("POST /v1/create HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
     "Content-Length: 10\r\nExpect: 100-continue\r\n\r\n"),
    "\r\n\r\nPUT /x?y HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding-X: 1\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
    "GET / HTTP/1.0\r\n\r\n",
};

/* A head parser reduced to its answer, for checks that treat requests
 * and responses alike. */
typedef int (*head_parser)(const char *s, size_t n);

static int request_rc(const char *s, size_t n)
{
    struct http1_request req;
    return parse_n(s, n, &req);
}

/* Every proper prefix of each message needs more; the whole parses. */
static void every_prefix_needs_more(const char *const *msgs, size_t count, head_parser parse_rc)
{
    for (size_t k = 0; k < count; k++) {
        size_t n = strlen(msgs[k]);
        for (size_t i = 0; i < n; i++)
            if (parse_rc(msgs[k], i) != 0)
                fail_msg("message %zu prefix %zu did not need more", k, i);
        assert_int_equal(parse_rc(msgs[k], n), (int)n);
    }
}

static void test_every_prefix_needs_more(void **state)
{
    every_prefix_needs_more(valid, sizeof valid / sizeof valid[0], request_rc);
}

static void test_pipelined(void **state)
{
    const char *s = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
                    "GET /b HTTP/1.1\r\nHost: h\r\n\r\n"
                    "GET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    size_t n = strlen(s), off = 0;
    struct http1_request req;

    int rc = parse_n(s, n, &req);
    assert_true(rc > 0);
    assert_str(req.path, "/a");
    assert_int_equal(req.body, HTTP1_BODY_LENGTH);
    assert_int_equal(req.content_length, 5);
    off = (size_t)rc + 5;

    rc = parse_n(s + off, n - off, &req);
    assert_true(rc > 0);
    assert_str(req.path, "/b");
    assert_true(req.keep_alive);
    off += (size_t)rc;

    rc = parse_n(s + off, n - off, &req);
    assert_int_equal(rc, (int)(n - off));
    assert_str(req.path, "/c");
    assert_false(req.keep_alive);
}

static void test_versions(void **state)
{
    struct http1_request req;
    parse_ok("GET / HTTP/1.0\r\n\r\n", &req);
    assert_int_equal(req.minor_version, 0);
    parse_ok("GET / HTTP/1.9\r\nHost: h\r\n\r\n", &req);
    assert_int_equal(req.minor_version, 1);
    parse_err("GET / HTTP/2.0\r\n\r\n", HTTP1_E_VERSION);
    parse_err("GET / HTTP/0.9\r\n\r\n", HTTP1_E_VERSION);
    parse_err("GET / HTTP/1.10\r\n\r\n", HTTP1_E_REQUEST_LINE);
    parse_err("GET / http/1.1\r\n\r\n", HTTP1_E_REQUEST_LINE);
    parse_err("GET / HTTP/1,1\r\n\r\n", HTTP1_E_REQUEST_LINE);
    parse_err("GET / HTTP/1.1 \r\n\r\n", HTTP1_E_REQUEST_LINE);
}

static void test_request_line_errors(void **state)
{
    parse_err("GET /\r\n\r\n", HTTP1_E_REQUEST_LINE);
    parse_err("GET\r\n\r\n", HTTP1_E_REQUEST_LINE);
    parse_err("\rGET / HTTP/1.1\r\n\r\n", HTTP1_E_REQUEST_LINE);
    parse_err("GET / HTTP/1.1\rX\n\r\n", HTTP1_E_REQUEST_LINE);
    parse_err(" GET / HTTP/1.1\r\n\r\n", HTTP1_E_METHOD);
    parse_err("G(T / HTTP/1.1\r\n\r\n", HTTP1_E_METHOD);
    parse_err("GET\t/ HTTP/1.1\r\n\r\n", HTTP1_E_METHOD);
    parse_err("GET  / HTTP/1.1\r\n\r\n", HTTP1_E_TARGET);
    parse_err("GET /\x7f HTTP/1.1\r\n\r\n", HTTP1_E_TARGET);
    parse_err("GET /\xc3\xa9 HTTP/1.1\r\n\r\n", HTTP1_E_TARGET);
    parse_err("GET /a\tb HTTP/1.1\r\n\r\n", HTTP1_E_TARGET);
}

static void test_bare_lf_refused(void **state)
{
    parse_err("GET / HTTP/1.1\nHost: h\r\n\r\n", HTTP1_E_BARE_LF);
    parse_err("GET / HTTP/1.1\r\nHost: h\n\r\n", HTTP1_E_BARE_LF);
    parse_err("GET / HTTP/1.1\r\nHost: h\r\n\n", HTTP1_E_BARE_LF);
    parse_err("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", HTTP1_E_BARE_LF);
}

static void test_header_errors(void **state)
{
    parse_err("GET / HTTP/1.1\r\nHost : h\r\n\r\n", HTTP1_E_HEADER_NAME);
    parse_err("GET / HTTP/1.1\r\n: h\r\n\r\n", HTTP1_E_HEADER_NAME);
    parse_err("GET / HTTP/1.1\r\nHo(st: h\r\n\r\n", HTTP1_E_HEADER_NAME);
    parse_err("GET / HTTP/1.1\r\nHost\r\n\r\n", HTTP1_E_HEADER_NAME);
    parse_err("GET / HTTP/1.1\r\nHost: h\r\n\rX", HTTP1_E_HEADER_NAME);
    parse_err("GET / HTTP/1.1\r\nHost: a\x01b\r\n\r\n", HTTP1_E_HEADER_VALUE);
    parse_err("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", HTTP1_E_HEADER_VALUE);
    parse_err("GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n", HTTP1_E_HEADER_VALUE);
    parse_err("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", HTTP1_E_OBS_FOLD);
    parse_err("GET / HTTP/1.1\r\n\tHost: h\r\n\r\n", HTTP1_E_OBS_FOLD);

    /* NUL is a control character like any other. */
    static const char nul[] = "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n";
    struct http1_request req;
    assert_int_equal(parse_n(nul, sizeof nul - 1, &req), HTTP1_E_HEADER_VALUE);

    /* obs-text (bytes >= 0x80) is allowed in values. */
    parse_ok("GET / HTTP/1.1\r\nHost: h\r\nX: caf\xc3\xa9\r\n\r\n", &req);
}

static void test_errors_reported_early(void **state)
{
    /* An error in a complete line shows before the head is complete. */
    parse_err("GET / HTTP/1.1\r\nBad Name: x\r\n", HTTP1_E_HEADER_NAME);
    parse_err("BAD\x01", HTTP1_E_METHOD);
}

static void test_host(void **state)
{
    struct http1_request req;
    parse_err("GET / HTTP/1.1\r\n\r\n", HTTP1_E_HOST);
    parse_err("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", HTTP1_E_HOST);
    parse_ok("GET / HTTP/1.1\r\nHost:\r\n\r\n", &req);
    parse_ok("GET / HTTP/1.0\r\n\r\n", &req);
}

static void test_header_count_limit(void **state)
{
    struct http1_header two[2];
    struct http1_request req;
    const char *ok = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\n\r\n";
    const char *over = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n";
    assert_int_equal(http1_parse_request(ok, strlen(ok), &req, two, 2, MAX_HEAD), (int)strlen(ok));
    assert_int_equal(http1_parse_request(over, strlen(over), &req, two, 2, MAX_HEAD),
                     HTTP1_E_TOO_MANY_HEADERS);
    const char *none = "GET / HTTP/1.0\r\n\r\n";
    assert_int_equal(http1_parse_request(none, strlen(none), &req, NULL, 0, MAX_HEAD),
                     (int)strlen(none));
    assert_int_equal(http1_status(HTTP1_E_TOO_MANY_HEADERS), 431);
}

static void test_head_size_limit(void **state)
{
    const char *s = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    size_t n = strlen(s);
    struct http1_request req;
    /* Exactly at the limit fits; one byte less does not. */
    assert_int_equal(http1_parse_request(s, n, &req, hdrs, NHDR, n), (int)n);
    assert_int_equal(http1_parse_request(s, n, &req, hdrs, NHDR, n - 1), HTTP1_E_HEAD_TOO_LARGE);
    /* An unfinished head is refused once it reaches the limit. */
    assert_int_equal(http1_parse_request(s, 10, &req, hdrs, NHDR, 11), 0);
    assert_int_equal(http1_parse_request(s, 10, &req, hdrs, NHDR, 10), HTTP1_E_HEAD_TOO_LARGE);
    /* Leading empty lines count too. */
    const char *crlf = "\r\n\r\n\r\n\r\n";
    assert_int_equal(http1_parse_request(crlf, 8, &req, hdrs, NHDR, 8), HTTP1_E_HEAD_TOO_LARGE);
    assert_int_equal(http1_parse_request(crlf, 8, &req, hdrs, NHDR, 9), 0);
    assert_int_equal(http1_status(HTTP1_E_HEAD_TOO_LARGE), 431);
}

static void test_leading_empty_lines(void **state)
{
    struct http1_request req;
    parse_ok("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", &req);
    assert_str(req.method, "GET");
}

/* ---- Framing headers ------------------------------------------------------- */

static void parse_cl(const char *value, int want_rc, uint64_t want)
{
    char buf[256];
    snprintf(buf, sizeof buf, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %s\r\n\r\n", value);
    struct http1_request req;
    int rc = parse(buf, &req);
    if (want_rc < 0) {
        assert_int_equal(rc, want_rc);
        return;
    }
    assert_int_equal(rc, (int)strlen(buf));
    assert_int_equal(req.body, HTTP1_BODY_LENGTH);
    assert_true(req.content_length == want);
}

static void test_content_length(void **state)
{
    parse_cl("0", 0, 0);
    parse_cl("007", 0, 7);
    parse_cl("  42  ", 0, 42);
    parse_cl("18446744073709551615", 0, UINT64_MAX);
    parse_cl("18446744073709551616", HTTP1_E_CONTENT_LENGTH, 0);
    parse_cl("99999999999999999999999", HTTP1_E_CONTENT_LENGTH, 0);
    parse_cl("1,1", HTTP1_E_CONTENT_LENGTH, 0);
    parse_cl("1, 1", HTTP1_E_CONTENT_LENGTH, 0);
    parse_cl("", HTTP1_E_CONTENT_LENGTH, 0);
    parse_cl("+1", HTTP1_E_CONTENT_LENGTH, 0);
    parse_cl("-1", HTTP1_E_CONTENT_LENGTH, 0);
    parse_cl("0x10", HTTP1_E_CONTENT_LENGTH, 0);
    parse_cl("1 2", HTTP1_E_CONTENT_LENGTH, 0);

    struct http1_request req;
    parse_ok("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\ncontent-length: 005\r\n\r\n",
             &req);
    assert_int_equal(req.content_length, 5);
    parse_err("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
              HTTP1_E_CONTENT_LENGTH);
}

static void test_transfer_encoding(void **state)
{
    struct http1_request req;
    parse_ok("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", &req);
    assert_int_equal(req.body, HTTP1_BODY_CHUNKED);
    parse_ok("POST / HTTP/1.1\r\nHost: h\r\ntransfer-encoding: , CHUNKED ,\r\n\r\n", &req);
    assert_int_equal(req.body, HTTP1_BODY_CHUNKED);

    parse_err("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
              HTTP1_E_TE_UNSUPPORTED);
    parse_err("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n"
              "Transfer-Encoding: chunked\r\n\r\n",
              HTTP1_E_TE_UNSUPPORTED);
    assert_int_equal(http1_status(HTTP1_E_TE_UNSUPPORTED), 501);
    parse_err("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
              HTTP1_E_TRANSFER_ENCODING);
    parse_err("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n",
              HTTP1_E_TRANSFER_ENCODING);
    parse_err("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n",
              HTTP1_E_TRANSFER_ENCODING);
    parse_err("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
              "Transfer-Encoding: chunked\r\n\r\n",
              HTTP1_E_TRANSFER_ENCODING);
    parse_err("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
              HTTP1_E_TRANSFER_ENCODING);
    parse_err("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
              "Content-Length: 3\r\n\r\n",
              HTTP1_E_TE_AND_CL);
    parse_err("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
              "Transfer-Encoding: chunked\r\n\r\n",
              HTTP1_E_TE_AND_CL);
}

static void test_keep_alive(void **state)
{
    struct http1_request req;
    parse_ok("GET / HTTP/1.1\r\nHost: h\r\n\r\n", &req);
    assert_true(req.keep_alive);
    parse_ok("GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\n\r\n", &req);
    assert_false(req.keep_alive);
    parse_ok("GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade, close\r\n\r\n", &req);
    assert_false(req.keep_alive);
    parse_ok("GET / HTTP/1.0\r\n\r\n", &req);
    assert_false(req.keep_alive);
    parse_ok("GET / HTTP/1.0\r\nconnection: Keep-Alive\r\n\r\n", &req);
    assert_true(req.keep_alive);
    parse_ok("GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", &req);
    assert_false(req.keep_alive);
    parse_ok("GET / HTTP/1.0\r\nConnection: keep-alivex\r\n\r\n", &req);
    assert_false(req.keep_alive);
}

static void test_expect(void **state)
{
    struct http1_request req;
    parse_ok("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n",
             &req);
    assert_true(req.expect_continue);
    parse_ok("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n", &req);
    assert_false(req.expect_continue);
    parse_ok("POST / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n", &req);
    assert_false(req.expect_continue);
}

static void test_content_type(void **state)
{
    struct http1_request req;
    parse_ok("POST / HTTP/1.1\r\nHost: h\r\nCONTENT-TYPE: Application/JSON ; charset=utf-8\r\n"
             "\r\n",
             &req);
    assert_str(req.content_type, "Application/JSON ; charset=utf-8");
    assert_true(http1_media_type_is(req.content_type, "application/json"));
    assert_false(http1_media_type_is(req.content_type, "application/grpc"));
    parse_err("POST / HTTP/1.1\r\nHost: h\r\nContent-Type: a/b\r\nContent-Type: a/b\r\n\r\n",
              HTTP1_E_CONTENT_TYPE);

    struct http1_str absent = {0};
    assert_false(http1_media_type_is(absent, "application/json"));
    struct http1_str plain = {"application/json", 16};
    assert_true(http1_media_type_is(plain, "application/json"));
    struct http1_str longer = {"application/jsonx", 17};
    assert_false(http1_media_type_is(longer, "application/json"));
    struct http1_str shorter = {"application/jso;x", 17};
    assert_false(http1_media_type_is(shorter, "application/json"));
}

static void test_case_insensitive_names(void **state)
{
    struct http1_request req;
    parse_ok("POST / HTTP/1.1\r\nhOsT: h\r\ncOnTeNt-LeNgTh: 3\r\nX-Custom: v\r\n\r\n", &req);
    assert_int_equal(req.body, HTTP1_BODY_LENGTH);
    assert_int_equal(req.content_length, 3);
    const struct http1_header *h = http1_find_header(hdrs, req.num_headers, "x-CUSTOM");
    assert_non_null(h);
    assert_str(h->value, "v");
    assert_null(http1_find_header(hdrs, req.num_headers, "x-custo"));
    assert_true(http1_str_eq((struct http1_str){"AbC", 3}, "abc"));
    assert_false(http1_str_eq((struct http1_str){NULL, 0}, ""));
}

static void test_strerror_status(void **state)
{
    for (int e = HTTP1_E_STATUS_LINE; e <= HTTP1_E_REQUEST_LINE; e++) {
        assert_string_not_equal(http1_strerror(e), "unknown error");
        assert_true(http1_status(e) >= 400 && http1_status(e) <= 505);
    }
    assert_string_equal(http1_strerror(0), "unknown error");
    assert_string_equal(http1_strerror(-999), "unknown error");
    assert_int_equal(http1_status(HTTP1_E_VERSION), 505);
    assert_int_equal(http1_status(HTTP1_E_BODY_TOO_LARGE), 413);
    assert_int_equal(http1_status(HTTP1_E_METHOD), 400);
}

/* ---- Chunked bodies ------------------------------------------------------ */

struct decoded {
    int rc;
    size_t used;
    char out[512];
    size_t out_len;
};

static struct decoded decode_whole(const char *in, size_t n, uint64_t max_body)
{
    struct http1_chunked d;
    struct decoded r = {0};
    http1_chunked_init(&d, max_body);
    assert_true(n <= sizeof r.out);
    r.rc = http1_chunked_decode(&d, in, n, r.out, &r.out_len, &r.used);
    return r;
}

/* Feeds one byte per call, as a slow client would send it. */
static struct decoded decode_bytewise(const char *in, size_t n, uint64_t max_body)
{
    struct http1_chunked d;
    struct decoded r = {0};
    http1_chunked_init(&d, max_body);
    for (size_t i = 0; i < n; i++) {
        size_t used, out_len;
        r.rc = http1_chunked_decode(&d, in + i, 1, r.out + r.out_len, &out_len, &used);
        r.out_len += out_len;
        r.used += used;
        if (r.rc != 0)
            break;
        assert_int_equal(used, 1);
    }
    return r;
}

static void check_chunked(const char *in, int want_rc, const char *want_body, size_t want_used)
{
    size_t n = strlen(in);
    struct decoded a = decode_whole(in, n, 1 << 20);
    struct decoded b = decode_bytewise(in, n, 1 << 20);
    if (a.rc != want_rc)
        fail_msg("%s: got %d (%s)", in, a.rc, http1_strerror(a.rc));
    assert_int_equal(b.rc, want_rc);
    assert_int_equal(a.used, want_used);
    assert_int_equal(b.used, want_used);
    assert_int_equal(a.out_len, strlen(want_body));
    assert_int_equal(b.out_len, strlen(want_body));
    assert_memory_equal(a.out, want_body, a.out_len);
    assert_memory_equal(b.out, want_body, b.out_len);
}

static void test_chunked_basic(void **state)
{
    const char *s = "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
    check_chunked(s, 1, "hello, world", strlen(s));
    s = "1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n";
    check_chunked(s, 1, "abcdefghijklmnopqrstuvwxyz", strlen(s));
    s = "A\r\n0123456789\r\n0000\r\n\r\n";
    check_chunked(s, 1, "0123456789", strlen(s));
    s = "0\r\n\r\n";
    check_chunked(s, 1, "", strlen(s));
}

static void test_chunked_extensions_and_trailers(void **state)
{
    const char *s = "5;name=value;q=\"a b\"\r\nhello\r\n3 ; x\r\nabc\r\n"
                    "0;last\r\nX-Checksum: 1\r\nAnother: 2\r\n\r\n";
    check_chunked(s, 1, "helloabc", strlen(s));
}

static void test_chunked_stops_at_end(void **state)
{
    const char *s = "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
    check_chunked(s, 1, "abc", strlen("3\r\nabc\r\n0\r\n\r\n"));

    /* Once done, further input is left alone. */
    struct http1_chunked d;
    char out[64];
    size_t out_len, used;
    http1_chunked_init(&d, 100);
    assert_int_equal(http1_chunked_decode(&d, s, strlen(s), out, &out_len, &used), 1);
    assert_int_equal(http1_chunked_decode(&d, s, strlen(s), out, &out_len, &used), 1);
    assert_int_equal(used, 0);
    assert_int_equal(out_len, 0);
}

static void test_chunked_partial(void **state)
{
    const char *s = "5\r\nhel";
    check_chunked(s, 0, "hel", strlen(s));
    check_chunked("", 0, "", 0);
}

static void test_chunked_in_place(void **state)
{
    char buf[] = "4\r\nWiki\r\n5;e\r\npedia\r\n0\r\nT: 1\r\n\r\nNEXT";
    struct http1_chunked d;
    size_t out_len, used;
    http1_chunked_init(&d, 100);
    assert_int_equal(http1_chunked_decode(&d, buf, strlen(buf), buf, &out_len, &used), 1);
    assert_int_equal(out_len, 9);
    assert_memory_equal(buf, "Wikipedia", 9);
    assert_string_equal(buf + used, "NEXT");
}

static void test_chunked_errors(void **state)
{
    check_chunked("\r\n", HTTP1_E_CHUNK_SIZE, "", 0);
    check_chunked("g\r\n", HTTP1_E_CHUNK_SIZE, "", 0);
    check_chunked("-1\r\n", HTTP1_E_CHUNK_SIZE, "", 0);
    check_chunked("5x\r\n", HTTP1_E_CHUNK_SIZE, "", 1);
    check_chunked("5 \r\n", HTTP1_E_CHUNK_SIZE, "", 2);
    check_chunked("5\rx", HTTP1_E_CHUNK_SIZE, "", 2);
    check_chunked("5;a\x01\r\n", HTTP1_E_CHUNK_SIZE, "", 3);
    check_chunked("3\r\nabcX\r\n", HTTP1_E_CHUNK_DATA, "abc", 6);
    check_chunked("3\r\nabc\rX", HTTP1_E_CHUNK_DATA, "abc", 7);
    check_chunked("3\nabc\r\n", HTTP1_E_BARE_LF, "", 1);
    check_chunked("3\r\nabc\n", HTTP1_E_BARE_LF, "abc", 6);
    check_chunked("0\r\n\n", HTTP1_E_BARE_LF, "", 3);
    check_chunked("0\r\nX: 1\n", HTTP1_E_BARE_LF, "", 7);
    check_chunked("0\r\n X: 1\r\n\r\n", HTTP1_E_TRAILER, "", 3);
    check_chunked("0\r\nX: \x01\r\n\r\n", HTTP1_E_TRAILER, "", 6);
    check_chunked("0\r\nX: 1\rx", HTTP1_E_TRAILER, "", 8);
    check_chunked("0\r\n\rx", HTTP1_E_TRAILER, "", 4);
    assert_int_equal(http1_status(HTTP1_E_CHUNK_SIZE), 400);

    /* A failed decoder keeps failing. */
    struct http1_chunked d;
    char out[8];
    size_t out_len, used;
    http1_chunked_init(&d, 100);
    assert_int_equal(http1_chunked_decode(&d, "z", 1, out, &out_len, &used), HTTP1_E_CHUNK_SIZE);
    assert_int_equal(http1_chunked_decode(&d, "0\r\n\r\n", 5, out, &out_len, &used),
                     HTTP1_E_CHUNK_SIZE);
    assert_int_equal(used, 0);
}

static void test_chunked_body_limit(void **state)
{
    const char *s = "5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n";
    struct decoded r = decode_whole(s, strlen(s), 10);
    assert_int_equal(r.rc, 1);
    assert_int_equal(r.out_len, 10);
    r = decode_whole(s, strlen(s), 9);
    assert_int_equal(r.rc, HTTP1_E_BODY_TOO_LARGE);
    /* Refused at the size line, before any of the second chunk's data. */
    assert_int_equal(r.used, 10);
    assert_int_equal(r.out_len, 5);
    r = decode_bytewise(s, strlen(s), 9);
    assert_int_equal(r.rc, HTTP1_E_BODY_TOO_LARGE);
    assert_int_equal(http1_status(HTTP1_E_BODY_TOO_LARGE), 413);

    /* Leading zeros do not count against the limit. */
    s = "00000000000000000000000000000000000000005\r\nhello\r\n0\r\n\r\n";
    r = decode_whole(s, strlen(s), 5);
    assert_int_equal(r.rc, 1);
}

static void test_chunked_size_overflow(void **state)
{
    /* 2^64 and beyond overflow 64 bits: refused as too large, never wrapped. */
    const char *s = "10000000000000000\r\n";
    struct decoded r = decode_whole(s, strlen(s), UINT64_MAX);
    assert_int_equal(r.rc, HTTP1_E_BODY_TOO_LARGE);
    assert_int_equal(r.used, 16);
    s = "ffffffffffffffff\r\n";
    r = decode_whole(s, strlen(s), UINT64_MAX);
    assert_int_equal(r.rc, 0);
    r = decode_whole(s, strlen(s), UINT64_MAX - 1);
    assert_int_equal(r.rc, HTTP1_E_BODY_TOO_LARGE);
}

static void test_chunked_line_limits(void **state)
{
    static char buf[HTTP1_TRAILER_MAX + 64];
    struct decoded r;
    struct http1_chunked d;
    size_t out_len, used;

    /* A size line of exactly HTTP1_CHUNK_LINE_MAX bytes before CRLF is fine. */
    memset(buf, 0, sizeof buf);
    buf[0] = '1';
    buf[1] = ';';
    memset(buf + 2, 'e', HTTP1_CHUNK_LINE_MAX - 2);
    http1_chunked_init(&d, 100);
    assert_int_equal(http1_chunked_decode(&d, buf, HTTP1_CHUNK_LINE_MAX, buf, &out_len, &used), 0);
    http1_chunked_init(&d, 100);
    buf[HTTP1_CHUNK_LINE_MAX] = 'e';
    assert_int_equal(http1_chunked_decode(&d, buf, HTTP1_CHUNK_LINE_MAX + 1, buf, &out_len, &used),
                     HTTP1_E_CHUNK_SIZE);

    /* The trailer section is bounded as a whole. */
    memcpy(buf, "0\r\n", 3);
    memset(buf + 3, 'x', HTTP1_TRAILER_MAX + 8);
    http1_chunked_init(&d, 100);
    assert_int_equal(http1_chunked_decode(&d, buf, HTTP1_TRAILER_MAX + 8, buf, &out_len, &used),
                     HTTP1_E_TRAILER);
    assert_int_equal(used, 3 + HTTP1_TRAILER_MAX);

    r = decode_whole("0\r\nA: 1\r\nB: 2\r\n\r\n", 18, 0);
    assert_int_equal(r.rc, 1);
}

static void test_request_then_chunked_body(void **state)
{
    const char *s = "POST /v1/create HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "2\r\n{}\r\n0\r\n\r\n"
                    "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    size_t n = strlen(s);
    struct http1_request req;
    int rc = parse_n(s, n, &req);
    assert_true(rc > 0);
    assert_int_equal(req.body, HTTP1_BODY_CHUNKED);
    struct decoded r = decode_whole(s + rc, n - (size_t)rc, 1024);
    assert_int_equal(r.rc, 1);
    assert_memory_equal(r.out, "{}", 2);
    size_t off = (size_t)rc + r.used;
    assert_int_equal(parse_n(s + off, n - off, &req), (int)(n - off));
    assert_str(req.method, "GET");
}

/* ---- Response heads ------------------------------------------------------ */

static int parse_resp_n(const char *s, size_t n, struct http1_response *resp)
{
    return http1_parse_response(s, n, resp, hdrs, NHDR, MAX_HEAD);
}

static int response_rc(const char *s, size_t n)
{
    struct http1_response resp;
    return parse_resp_n(s, n, &resp);
}

static void resp_ok(const char *s, struct http1_response *resp)
{
    expect_rc(s, parse_resp_n(s, strlen(s), resp), (int)strlen(s));
}

static void resp_err(const char *s, int err) { expect_rc(s, response_rc(s, strlen(s)), err); }

static void test_response_basic(void **state)
{
    struct http1_response resp;
    resp_ok("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
            "Content-Length: 20\r\n\r\n",
            &resp);
    assert_int_equal(resp.status, 201);
    assert_int_equal(resp.minor_version, 1);
    assert_str(resp.reason, "Created");
    assert_int_equal(resp.num_headers, 2);
    assert_str(hdrs[1].name, "Content-Length");
    assert_int_equal(resp.body, HTTP1_BODY_LENGTH);
    assert_int_equal(resp.content_length, 20);
    assert_true(resp.keep_alive);
    assert_true(http1_media_type_is(resp.content_type, "application/json"));

    /* The reason may be empty, have spaces and obs-text, or go with its SP. */
    resp_ok("HTTP/1.1 500 \r\nContent-Length: 0\r\n\r\n", &resp);
    assert_int_equal(resp.status, 500);
    assert_non_null(resp.reason.ptr);
    assert_int_equal(resp.reason.len, 0);
    resp_ok("HTTP/1.1 404 Not \xc3\xa9 Found\r\nContent-Length: 0\r\n\r\n", &resp);
    assert_str(resp.reason, "Not \xc3\xa9 Found");
    resp_ok("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", &resp);
    assert_int_equal(resp.status, 200);
    assert_null(resp.reason.ptr);
    /* No Host is needed, and none is counted. */
    resp_ok("HTTP/1.1 200 OK\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\n\r\n", &resp);
}

static const char *const valid_responses[] = {
    "HTTP/1.1 201 Created\r\nContent-Length: 20\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    "HTTP/1.0 204\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\n",
};

static void test_response_every_prefix_needs_more(void **state)
{
    every_prefix_needs_more(valid_responses, sizeof valid_responses / sizeof valid_responses[0],
                            response_rc);
}

static void test_response_status_line_errors(void **state)
{
    resp_err("HTTP/1.1 20 OK\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1 2011 OK\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1 2x1 OK\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1 099 Low\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1 600 High\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1  200 OK\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1\t200 OK\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("http/1.1 200 OK\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1,1 200 OK\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/2 200 OK\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("\r\nHTTP/1.1 200 OK\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1 200 O\x01K\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1 200 OK\rX\r\n\r\n", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1 200\rX", HTTP1_E_STATUS_LINE);
    resp_err("HTTP/1.1 200 OK\n\r\n", HTTP1_E_BARE_LF);
    resp_err("HTTP/1.1 200\n\r\n", HTTP1_E_BARE_LF);
    /* Well-formed but not 1.x: reported once the line is complete. */
    resp_err("HTTP/2.0 200 OK\r\n\r\n", HTTP1_E_VERSION);
    struct http1_response resp;
    assert_int_equal(parse_resp_n("HTTP/2.0 200 OK", 15, &resp), 0);
    assert_int_equal(http1_status(HTTP1_E_STATUS_LINE), 502);
    /* An error in the status line shows before the head is complete. */
    assert_int_equal(parse_resp_n("HTTP/1.1 9", 10, &resp), 0);
    assert_int_equal(parse_resp_n("HTTP/1.1 9x", 11, &resp), HTTP1_E_STATUS_LINE);
}

static void test_response_field_errors(void **state)
{
    /* The very field reader of requests. */
    resp_err("HTTP/1.1 200 OK\r\nX : y\r\n\r\n", HTTP1_E_HEADER_NAME);
    resp_err("HTTP/1.1 200 OK\r\nX: a\x01\r\n\r\n", HTTP1_E_HEADER_VALUE);
    resp_err("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", HTTP1_E_OBS_FOLD);
    resp_err("HTTP/1.1 200 OK\r\nX: a\n\r\n", HTTP1_E_BARE_LF);
    resp_err("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
             HTTP1_E_CONTENT_LENGTH);
    resp_err("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", HTTP1_E_CONTENT_LENGTH);
    resp_err("HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nContent-Type: a/b\r\n\r\n",
             HTTP1_E_CONTENT_TYPE);

    struct http1_header two[2];
    struct http1_response resp;
    const char *three = "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    assert_int_equal(http1_parse_response(three, strlen(three), &resp, two, 2, MAX_HEAD),
                     HTTP1_E_TOO_MANY_HEADERS);
    size_t n = strlen(three);
    assert_int_equal(http1_parse_response(three, n, &resp, hdrs, NHDR, n), (int)n);
    assert_int_equal(http1_parse_response(three, n, &resp, hdrs, NHDR, n - 1),
                     HTTP1_E_HEAD_TOO_LARGE);
    assert_int_equal(http1_parse_response(three, 5, &resp, hdrs, NHDR, 5), HTTP1_E_HEAD_TOO_LARGE);
}

static void test_response_framing(void **state)
{
    struct http1_response resp;
    /* No body for 1xx, 204 and 304, whatever the fields say. */
    resp_ok("HTTP/1.1 100 Continue\r\n\r\n", &resp);
    assert_int_equal(resp.body, HTTP1_BODY_NONE);
    assert_true(resp.keep_alive);
    resp_ok("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", &resp);
    assert_int_equal(resp.body, HTTP1_BODY_NONE);
    resp_ok("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", &resp);
    assert_int_equal(resp.body, HTTP1_BODY_NONE);

    resp_ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &resp);
    assert_int_equal(resp.body, HTTP1_BODY_CHUNKED);
    assert_true(resp.keep_alive);
    resp_ok("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", &resp);
    assert_int_equal(resp.body, HTTP1_BODY_LENGTH);
    assert_int_equal(resp.content_length, 0);

    /* No framing: the body runs to the close. */
    resp_ok("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", &resp);
    assert_int_equal(resp.body, HTTP1_BODY_UNTIL_CLOSE);
    assert_false(resp.keep_alive);
    resp_ok("HTTP/1.1 500 Oops\r\n\r\n", &resp);
    assert_int_equal(resp.body, HTTP1_BODY_UNTIL_CLOSE);
    assert_false(resp.keep_alive);

    /* Keep-alive as for requests. */
    resp_ok("HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 2\r\n\r\n", &resp);
    assert_false(resp.keep_alive);
    resp_ok("HTTP/1.0 201 Created\r\nContent-Length: 2\r\n\r\n", &resp);
    assert_int_equal(resp.minor_version, 0);
    assert_false(resp.keep_alive);
    resp_ok("HTTP/1.0 201 Created\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\n", &resp);
    assert_true(resp.keep_alive);

    /* Transfer-Encoding is judged as for requests. */
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
             HTTP1_E_TE_AND_CL);
    resp_err("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP1_E_TRANSFER_ENCODING);
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", HTTP1_E_TRANSFER_ENCODING);
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
             HTTP1_E_TRANSFER_ENCODING);
    resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
             HTTP1_E_TE_UNSUPPORTED);
}

/* A client's stream: an interim 100, then a 201 with a body, then a
 * chunked 200 and a 500 that runs to the close. */
static void test_responses_pipelined(void **state)
{
    const char *s = "HTTP/1.1 100 Continue\r\n\r\n"
                    "HTTP/1.1 201 Created\r\nContent-Length: 20\r\n\r\n{\"status\":\"created\"}"
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                    "HTTP/1.1 500 Internal Server Error\r\n\r\nboom";
    size_t n = strlen(s), off = 0;
    struct http1_response resp;

    int rc = parse_resp_n(s, n, &resp);
    assert_true(rc > 0);
    assert_int_equal(resp.status, 100);
    off += (size_t)rc;

    rc = parse_resp_n(s + off, n - off, &resp);
    assert_true(rc > 0);
    assert_int_equal(resp.status, 201);
    assert_int_equal(resp.content_length, 20);
    off += (size_t)rc;
    assert_memory_equal(s + off, "{\"status\":\"created\"}", 20);
    off += 20;

    rc = parse_resp_n(s + off, n - off, &resp);
    assert_true(rc > 0);
    assert_int_equal(resp.body, HTTP1_BODY_CHUNKED);
    off += (size_t)rc;
    struct decoded r = decode_whole(s + off, n - off, 1024);
    assert_int_equal(r.rc, 1);
    assert_memory_equal(r.out, "abc", 3);
    off += r.used;

    rc = parse_resp_n(s + off, n - off, &resp);
    assert_int_equal(rc, (int)(n - off - 4));
    assert_int_equal(resp.status, 500);
    assert_int_equal(resp.body, HTTP1_BODY_UNTIL_CLOSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_target_forms),
        cmocka_unit_test(test_every_prefix_needs_more),
        cmocka_unit_test(test_pipelined),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_request_line_errors),
        cmocka_unit_test(test_bare_lf_refused),
        cmocka_unit_test(test_header_errors),
        cmocka_unit_test(test_errors_reported_early),
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_header_count_limit),
        cmocka_unit_test(test_head_size_limit),
        cmocka_unit_test(test_leading_empty_lines),
        cmocka_unit_test(test_content_length),
        cmocka_unit_test(test_transfer_encoding),
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_expect),
        cmocka_unit_test(test_content_type),
        cmocka_unit_test(test_case_insensitive_names),
        cmocka_unit_test(test_strerror_status),
        cmocka_unit_test(test_chunked_basic),
        cmocka_unit_test(test_chunked_extensions_and_trailers),
        cmocka_unit_test(test_chunked_stops_at_end),
        cmocka_unit_test(test_chunked_partial),
        cmocka_unit_test(test_chunked_in_place),
        cmocka_unit_test(test_chunked_errors),
        cmocka_unit_test(test_chunked_body_limit),
        cmocka_unit_test(test_chunked_size_overflow),
        cmocka_unit_test(test_chunked_line_limits),
        cmocka_unit_test(test_request_then_chunked_body),
        cmocka_unit_test(test_response_basic),
        cmocka_unit_test(test_response_every_prefix_needs_more),
        cmocka_unit_test(test_response_status_line_errors),
        cmocka_unit_test(test_response_field_errors),
        cmocka_unit_test(test_response_framing),
        cmocka_unit_test(test_responses_pipelined),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
