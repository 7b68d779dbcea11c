/* test_a2b_body.c - the a2b request body reader, the query string and
 * path ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "a2b/a2b_body.h"

static const char *desc, *state_;

static int parse(const char *body, const char **err)
{
    static char store[1024];
    const struct a2b_field f[] = {{"description", &desc}, {"state", &state_}};
    return a2b_body_parse(body, strlen(body), store, strlen(body), f, 2, err);
}

static void test_body_fields(void **state)
{
    const char *err;
    assert_int_equal(parse("{\"description\":\"a seat\",\"state\":\"BOOKED\"}", &err), 0);
    assert_string_equal(desc, "a seat");
    assert_string_equal(state_, "BOOKED");
    assert_int_equal(parse(" {\n\"state\" : null , \"x\":[1,{\"y\":[true,false,null,-1.5e3]}],"
                           "\"description\":\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\t\"} ", &err), 0);
    assert_null(state_);
    assert_string_equal(desc, "\xc3\xa9\xf0\x9f\x98\x80\"\\/\t");
    assert_int_equal(parse("{}", &err), 0);
    assert_null(desc);
    assert_int_equal(parse("{\"description\":\"a\",\"description\":\"b\"}", &err), 0);
    assert_string_equal(desc, "b");
    assert_int_equal(parse("{\"description\":\"Мінск\"}", &err), 0);
    assert_string_equal(desc, "Мінск");
}

static void test_body_refused(void **state)
{
    static const char *const bad[] = {
        "", "[]", "{", "{\"description\"}", "{\"description\":}", "{\"description\":1}",
        "{\"description\":\"x\"} 1", "{\"description\":\"x\",}", "{'a':1}", "{\"a\":01}",
        "{\"a\":1.}", "{\"a\":tru}", "{\"description\":\"\\x\"}", "{\"description\":\"\\ud800\"}",
        "{\"description\":\"\\udc00\"}", "{\"description\":\"\\u0000\"}", "{\"description\":\"a\nb\"}",
        "{\"description\":\"\xc3\"}", "{\"description\":\"\xed\xa0\x80\"}", "{\"description\":\"\xc0\xaf\"}",
        "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
        "{\"description\":\"x\"", "{\"a\":[1 2]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *err = NULL;
        desc = "unchanged";
        assert_int_equal(parse(bad[i], &err), -1);
        assert_non_null(err);
        assert_null(desc); /* nothing half-read survives a failure */
    }
}

static void test_query(void **state)
{
    char v[16];
    assert_int_equal(a2b_query_get("originId=1&destinationId=120&date=2025-01-05", "date", v, sizeof v), 1);
    assert_string_equal(v, "2025-01-05");
    assert_int_equal(a2b_query_get("a=1&%64ate=2025%2D01%2d05", "date", v, sizeof v), 1);
    assert_string_equal(v, "2025-01-05");
    assert_int_equal(a2b_query_get("q=a+b%20c", "q", v, sizeof v), 1);
    assert_string_equal(v, "a b c");
    assert_int_equal(a2b_query_get("x=1&x=2", "x", v, sizeof v), 1);
    assert_string_equal(v, "1");
    assert_int_equal(a2b_query_get("flag&x=", "flag", v, sizeof v), 1);
    assert_string_equal(v, "");
    assert_int_equal(a2b_query_get("dates=1", "date", v, sizeof v), 0);
    assert_int_equal(a2b_query_get("", "date", v, sizeof v), 0);
    assert_int_equal(a2b_query_get(NULL, "date", v, sizeof v), 0);
    assert_int_equal(a2b_query_get("date=%2", "date", v, sizeof v), -1);
    assert_int_equal(a2b_query_get("date=%zz", "date", v, sizeof v), -1);
    assert_int_equal(a2b_query_get("date=%00", "date", v, sizeof v), -1);
    assert_int_equal(a2b_query_get("date=0123456789abcdef", "date", v, sizeof v), -1);
    assert_int_equal(a2b_query_get("%zz=1", "date", v, sizeof v), -1);
}

static void test_ids(void **state)
{
    int64_t id = -1;
    assert_true(a2b_parse_id("0", 1, &id) && id == 0);
    assert_true(a2b_parse_id("120", 3, &id) && id == 120);
    assert_true(a2b_parse_id("999999999999999999", 18, &id) && id == 999999999999999999LL);
    assert_false(a2b_parse_id("", 0, &id));
    assert_false(a2b_parse_id("-1", 2, &id));
    assert_false(a2b_parse_id("+1", 2, &id));
    assert_false(a2b_parse_id("1x", 2, &id));
    assert_false(a2b_parse_id(" 1", 2, &id));
    assert_false(a2b_parse_id("9999999999999999999", 19, &id));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body_fields),
        cmocka_unit_test(test_body_refused),
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
