/* test_http_server.c - http_server's pure parts: Accept-Encoding, gzip,
 * the target path, reason phrases and the Date format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "core/mem.h"
#include "http/http_server.h"

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
        cmocka_unit_test(test_accept_encoding),
        cmocka_unit_test(test_gzip_round_trip),
        cmocka_unit_test(test_target_path),
        cmocka_unit_test(test_reason_and_date),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
