/* test_scenario.c - unit tests for scenarios (scenario.c): the built-in
 * a2b journey, the file parser's acceptance and refusals, templates with
 * ${var} and ${uuid}, and the JSONPath subset with its first and random
 * picks over valid and invalid JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bench/scenario.h"

static void parse_ok(const char *text, struct scenario *s)
{
    char err[256];
    if (scn_parse(text, strlen(text), s, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static void parse_bad(const char *text, const char *want)
{
    struct scenario s;
    char err[256] = "";
    if (scn_parse(text, strlen(text), &s, err, sizeof err) == 0)
        fail_msg("accepted: %s", text);
    if (!strstr(err, want))
        fail_msg("'%s' lacks '%s'", err, want);
}

static void test_a2b(void **state)
{
    struct scenario s;
    parse_ok(scn_a2b_text, &s);
    assert_int_equal(s.nrequests, 14);
    unsigned pauses = 0, exits = 0;
    double min = 0, max = 0;
    for (unsigned i = 0; i < s.nsteps; i++) {
        if (s.steps[i].kind == SCN_PAUSE) {
            pauses++;
            min += s.steps[i].pause_min;
            max += s.steps[i].pause_max;
        }
        exits += s.steps[i].kind == SCN_EXIT_IF_FAILED;
    }
    /* The reference: 14 pauses, 20 to 52 s in all; 6 exitHereIfFailed. */
    assert_int_equal(pauses, 14);
    assert_true(min == 20 && max == 52);
    assert_int_equal(exits, 6);
    assert_int_equal(s.nnames, 13); /* "cities" twice */
    assert_string_equal(s.headers, "Accept: application/json\r\nAccept-Encoding: gzip, deflate\r\n");
    assert_int_equal(s.nfeeders, 1);
    assert_true(s.feeders[0].min == 1 && s.feeders[0].max == 200000);
    const struct scn_request *book = &s.steps[17].req;
    assert_int_equal(s.steps[17].kind, SCN_REQUEST);
    assert_string_equal(book->method, "POST");
    assert_true(book->has_body && scn_status_ok(book, 201) && !scn_status_ok(book, 200));
    scn_free(&s);
}

static void test_parse_refusals(void **state)
{
    parse_bad("", "no request");
    parse_bad("request GET /a\nwarp 9\n", "line 2: unknown directive");
    parse_bad("request get /a\n", "upper-case");
    parse_bad("request GET a\n", "starts with '/'");
    parse_bad("request GET /${nope}\n", "neither fed nor saved");
    parse_bad("request GET /${x\n", "without '}'");
    parse_bad("expect 200\n", "before any request");
    parse_bad("request GET /a\n  expect 99\n", "100 to 599");
    parse_bad("request GET /a\n  save x $.a.b.c.d.e.f.g.h.i\n", "JSONPath");
    parse_bad("request GET /a\n  save x $..a\n", "JSONPath");
    parse_bad("request GET /a\n  save x $[0].a\n", "JSONPath");
    parse_bad("request GET /a\n  save x $.a sometimes\n", "first or random");
    parse_bad("request GET /a\npause 3 1\n", "MIN <= MAX");
    parse_bad("request GET /a\npause 1 2 3\n", "MIN <= MAX");
    parse_bad("request GET /a\npause -1\n", "seconds");
    parse_bad("feed u 5 1\nrequest GET /a\n", "MIN <= MAX");
    parse_bad("feed u 1 5\nfeed u 1 5\nrequest GET /a\n", "repeated");
    parse_bad("header Bad Name: x\nrequest GET /a\n", "bad header name");
    parse_bad("request GET /a\n\texpect 200\n", "tab");
    parse_bad("request GET /a\n  body x\n  body y\n", "second body");
    /* Saved before use is fine; used before saved is not. */
    parse_bad("request GET /${id}\nrequest GET /a\n  save id $.id\n", "neither fed");
}

static void test_render(void **state)
{
    struct scenario s;
    parse_ok("# comment\r\nfeed u 7 7\nrequest GET /a\n  save id $.id first\n"
             "request PUT /users/${u}/x/${id}?q=${u} put it\n  body {\"id\":\"${uuid}\"}\n",
             &s);
    const struct scn_request *r = &s.steps[1].req;
    assert_string_equal(s.names[r->name], "put it");
    assert_string_equal(s.names[s.steps[0].req.name], "GET /a");
    char *vals[SCN_MAX_VARS] = {0};
    uint64_t rng = 1;
    struct scn_buf b = {0};
    int id = (int)s.steps[0].req.extract[0].var;
    assert_int_equal(scn_render(&r->path, vals, &rng, &b), s.feeders[0].var);
    vals[s.feeders[0].var] = "7";
    vals[id] = "42";
    b.len = 0;
    assert_int_equal(scn_render(&r->path, vals, &rng, &b), 0);
    assert_string_equal(b.data, "/users/7/x/42?q=7");
    b.len = 0;
    assert_int_equal(scn_render(&r->body, vals, &rng, &b), 0);
    /* {"id":"xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"} */
    assert_int_equal(b.len, 9 + 36);
    assert_true(b.data[7 + 14] == '4');
    char first[64];
    memcpy(first, b.data, b.len + 1);
    b.len = 0;
    scn_render(&r->body, vals, &rng, &b);
    assert_string_not_equal(first, b.data); /* a fresh uuid each time */
    scn_buf_free(&b);
    scn_free(&s);
}

static int eval(const char *path, const char *json, enum scn_pick pick, uint64_t *rng, char *out)
{
    struct scn_path p;
    assert_int_equal(scn_path_parse(path, strlen(path), &p), 0);
    const char *v;
    size_t vl;
    int rc = scn_path_eval(&p, json, strlen(json), pick, rng, &v, &vl);
    if (rc == 1) {
        memcpy(out, v, vl);
        out[vl] = '\0';
    }
    scn_path_free(&p);
    return rc;
}

static void test_jsonpath(void **state)
{
    char out[64];
    uint64_t rng = 3;
    const char *list = " [ {\"countryId\":1,\"name\":\"A\"}, {\"name\":\"B\",\"countryId\":2},"
                       "{\"countryId\":3, \"x\":[1,{\"countryId\":9}]} ] ";
    assert_int_equal(eval("$[*].countryId", list, SCN_PICK_FIRST, &rng, out), 1);
    assert_string_equal(out, "1");
    assert_int_equal(eval("$[:].name", list, SCN_PICK_FIRST, &rng, out), 1);
    assert_string_equal(out, "A");
    /* Random picks cover every match, and only matches (never the nested 9). */
    unsigned seen[10] = {0};
    for (int i = 0; i < 300; i++) {
        assert_int_equal(eval("$[*].countryId", list, SCN_PICK_RANDOM, &rng, out), 1);
        assert_true(out[0] >= '1' && out[0] <= '3' && out[1] == '\0');
        seen[out[0] - '0']++;
    }
    assert_true(seen[1] > 50 && seen[2] > 50 && seen[3] > 50);
    /* Nested fields, strings with escapes kept as written. */
    const char *bookings = "[{\"user\":{\"id\":5},\"transfer\":{\"transferId\":77,\"d\":\"a\\\"b\"}}]";
    assert_int_equal(eval("$[*].transfer.transferId", bookings, SCN_PICK_RANDOM, &rng, out), 1);
    assert_string_equal(out, "77");
    assert_int_equal(eval("$[*].transfer.d", bookings, SCN_PICK_FIRST, &rng, out), 1);
    assert_string_equal(out, "a\\\"b");
    assert_int_equal(eval("$.id", "{\"id\":\"x\"}", SCN_PICK_FIRST, &rng, out), 1);
    assert_string_equal(out, "x");
    /* No match: an empty array, a missing field, an object value, null. */
    assert_int_equal(eval("$[*].transferId", "[]", SCN_PICK_RANDOM, &rng, out), 0);
    assert_int_equal(eval("$[*].nope", list, SCN_PICK_RANDOM, &rng, out), 0);
    assert_int_equal(eval("$[*].user", bookings, SCN_PICK_FIRST, &rng, out), 0);
    assert_int_equal(eval("$.id", "{\"id\":null}", SCN_PICK_FIRST, &rng, out), 0);
    assert_int_equal(eval("$[*].id", "{\"id\":1}", SCN_PICK_FIRST, &rng, out), 0);
    /* Not JSON. */
    assert_int_equal(eval("$[*].id", "[{\"id\":1}", SCN_PICK_FIRST, &rng, out), -1);
    assert_int_equal(eval("$[*].id", "[{\"id\":1}] x", SCN_PICK_FIRST, &rng, out), -1);
    assert_int_equal(eval("$[*].id", "[{\"id\":1,}]", SCN_PICK_FIRST, &rng, out), -1);
    assert_int_equal(eval("$[*].id", "[{id:1}]", SCN_PICK_FIRST, &rng, out), -1);
    assert_int_equal(eval("$[*].id", "", SCN_PICK_FIRST, &rng, out), -1);
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    assert_int_equal(eval("$.a", "[]", SCN_PICK_FIRST, &rng, out), 0);
    struct scn_path p;
    scn_path_parse("$", 1, &p);
    const char *v;
    size_t vl;
    assert_int_equal(scn_path_eval(&p, deep, sizeof deep, SCN_PICK_FIRST, &rng, &v, &vl), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a2b),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_jsonpath),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
