/* test_json_read.c - the shared JSON reader (core/json_read.c): a walk over
 * every kind of value, string decoding (escapes, surrogate pairs, UTF-8,
 * prefixes into a short buffer), numbers, each error code with its offset,
 * truncation at every cut of a document, and the depth limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/json_read.h"

/* Skips s as one document; the error code, JR_OK when it reads. */
static enum jr_err skip_doc(const char *s, size_t len, unsigned depth, size_t *off)
{
    struct jr r;
    jr_init(&r, s, len, depth);
    if (jr_skip(&r))
        jr_end(&r);
    if (off)
        *off = r.err_off;
    return r.err;
}

static enum jr_err skip_str(const char *s, size_t *off) { return skip_doc(s, strlen(s), 16, off); }

static void test_walk(void **state)
{
    const char *doc = " {\"a\" : [1, -2.5e3, true, false, null, \"x\"], \"b\":{}, \"c\":[]} ";
    struct jr r;
    char key[8];
    size_t n;
    uint64_t u;
    bool plain;

    jr_init(&r, doc, strlen(doc), 4);
    assert_int_equal(jr_peek(&r), JR_OBJECT);
    assert_true(jr_enter(&r));
    assert_int_equal(jr_next(&r), 1);
    assert_true(jr_key(&r, key, sizeof key, &n) && jr_colon(&r));
    assert_int_equal(n, 1);
    assert_memory_equal(key, "a", 1);
    assert_int_equal(jr_peek(&r), JR_ARRAY);
    assert_true(jr_enter(&r));
    assert_int_equal(r.depth, 2);
    assert_int_equal(jr_next(&r), 1);
    assert_int_equal(jr_peek(&r), JR_NUMBER);
    assert_true(jr_number(&r, &u, &plain));
    assert_true(plain);
    assert_int_equal(u, 1);
    assert_int_equal(jr_next(&r), 1);
    assert_true(jr_number(&r, &u, &plain));
    assert_false(plain);
    static const enum jr_type lits[] = {JR_TRUE, JR_FALSE, JR_NULL};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(jr_next(&r), 1);
        assert_int_equal(jr_peek(&r), lits[i]);
        assert_true(jr_literal(&r));
    }
    assert_int_equal(jr_next(&r), 1);
    assert_int_equal(jr_peek(&r), JR_STRING);
    assert_true(jr_string(&r, NULL, 0, &n));
    assert_int_equal(n, 1);
    assert_int_equal(r.text_len, 1);
    assert_memory_equal(r.text, "x", 1);
    assert_int_equal(jr_next(&r), 0);
    assert_int_equal(r.depth, 1);
    for (int i = 0; i < 2; i++) { /* "b":{} and "c":[] */
        assert_int_equal(jr_next(&r), 1);
        assert_true(jr_key(&r, NULL, 0, &n) && jr_colon(&r));
        assert_true(jr_skip(&r));
    }
    assert_int_equal(jr_next(&r), 0);
    assert_int_equal(r.depth, 0);
    assert_true(jr_end(&r));
    assert_int_equal(r.err, JR_OK);
}

static void test_strings(void **state)
{
    const char *s = "\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20AC\\ud83d\\ude00 \xd0\x9c\"";
    const char *want = "a\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \xd0\x9c";
    char out[64];
    size_t n;
    struct jr r;

    jr_init(&r, s, strlen(s), 1);
    assert_true(jr_string(&r, out, sizeof out, &n));
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n);
    assert_false(r.nul);
    assert_int_equal(r.text_len, strlen(s) - 2); /* as written, escapes and all */
    assert_true(jr_end(&r));

    /* A short buffer gets a prefix, and the whole length is told. */
    memset(out, '#', sizeof out);
    jr_init(&r, s, strlen(s), 1);
    assert_true(jr_string(&r, out, 3, &n));
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, "a\"\\", 3);
    assert_int_equal(out[3], '#');

    /* U+0000 is told, and refused on request. */
    jr_init(&r, "\"a\\u0000\"", 9, 1);
    assert_true(jr_string(&r, out, sizeof out, &n));
    assert_true(r.nul);
    assert_int_equal(n, 2);
    jr_init(&r, "\"a\\u0000\"", 9, 1);
    r.refuse_nul = true;
    assert_false(jr_string(&r, out, sizeof out, &n));
    assert_int_equal(r.err, JR_E_NUL);
    assert_int_equal(r.err_off, 2);
}

static void test_numbers(void **state)
{
    static const struct {
        const char *s;
        bool plain;
        uint64_t u;
    } ok[] = {
        {"0", true, 0},
        {"4294967295", true, 4294967295u},
        {"18446744073709551615", true, UINT64_MAX},
        {"18446744073709551616", true, UINT64_MAX}, /* saturates */
        {"99999999999999999999999", true, UINT64_MAX},
        {"-0", false, 0},
        {"1.5", false, 1},
        {"1e5", false, 1},
        {"1E+5", false, 1},
        {"1.0e-5", false, 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct jr r;
        uint64_t u;
        bool plain;
        jr_init(&r, ok[i].s, strlen(ok[i].s), 1);
        assert_int_equal(jr_peek(&r), JR_NUMBER);
        assert_true(jr_number(&r, &u, &plain));
        assert_int_equal(plain, ok[i].plain);
        if (plain)
            assert_true(u == ok[i].u);
        assert_true(jr_end(&r));
    }
    /* "01" reads as 0; what follows is the caller's to refuse. */
    struct jr r;
    uint64_t u;
    bool plain;
    jr_init(&r, "01", 2, 1);
    assert_true(jr_number(&r, &u, &plain));
    assert_false(jr_end(&r));
    assert_int_equal(r.err, JR_E_TRAILING);
    assert_int_equal(r.err_off, 1);
}

static void test_errors(void **state)
{
    static const struct {
        const char *s;
        enum jr_err err;
        size_t off;
    } cases[] = {
        {"x", JR_E_VALUE, 0},
        {"[1,]", JR_E_VALUE, 3},
        {"tru", JR_E_LITERAL, 3},
        {"nul1", JR_E_LITERAL, 3},
        {"-x", JR_E_NUMBER, 1},
        {"1.x", JR_E_FRACTION, 2},
        {"1e+", JR_E_FRACTION, 3},
        {"\"abc", JR_E_STRING, 4},
        {"\"a\\", JR_E_STRING, 3},
        {"\"a\nb\"", JR_E_CONTROL, 2},
        {"\"a\xc3(\"", JR_E_UTF8, 2},
        {"\"a\xed\xa0\x80\"", JR_E_UTF8, 2},
        {"\"a\xe2\x82", JR_E_UTF8, 4},
        {"\"a\\x\"", JR_E_ESCAPE, 2},
        {"\"a\\u12g4\"", JR_E_HEX, 2},
        {"\"a\\u12", JR_E_HEX, 6},
        {"\"a\\udc00\"", JR_E_SURROGATE, 2},
        {"\"a\\ud800\"", JR_E_SURROGATE, 2},
        {"\"a\\ud800\\u0041\"", JR_E_SURROGATE, 2},
        {"\"a\\ud800", JR_E_SURROGATE, 8},
        {"\"a\\ud800\\u00", JR_E_HEX, 12},
        {"{1:2}", JR_E_KEY, 1},
        {"{\"a\" 1}", JR_E_COLON, 5},
        {"{\"a\":1 \"b\"}", JR_E_COMMA, 7},
        {"[1 2]", JR_E_COMMA, 3},
        {"[1", JR_E_COMMA, 2},
        {"{", JR_E_KEY, 1},
        {"{} x", JR_E_TRAILING, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t off;
        enum jr_err e = skip_str(cases[i].s, &off);
        if (e != cases[i].err || off != cases[i].off)
            fail_msg("%s: error %d at %zu, want %d at %zu", cases[i].s, e, off, cases[i].err,
                     cases[i].off);
    }
}

/* Every cut of a valid document before its last byte is an error found
 * where the input ends. */
static void test_truncation(void **state)
{
    const char *doc = "{\"k\":[1.5e-3,-0,\"\\u00e9\\ud83d\\ude00\xc3\xa9\",true,{\"x\":null}]}";
    size_t len = strlen(doc);
    assert_int_equal(skip_doc(doc, len, 8, NULL), JR_OK);
    for (size_t cut = 0; cut < len; cut++) {
        struct jr r;
        jr_init(&r, doc, cut, 8);
        bool ok = jr_skip(&r) && jr_end(&r);
        if (ok || !jr_truncated(&r))
            fail_msg("cut at %zu: error %d at %zu", cut, r.err, r.err_off);
    }
}

static void test_depth(void **state)
{
    char doc[2 * JR_MAX_DEPTH + 2];
    for (unsigned depth = 1; depth <= JR_MAX_DEPTH; depth++) {
        /* depth containers pass; one more is refused at its bracket */
        for (unsigned extra = 0; extra < 2; extra++) {
            size_t n = depth + extra, off;
            memset(doc, '[', n);
            memset(doc + n, ']', n);
            enum jr_err e = skip_doc(doc, 2 * n, depth, &off);
            if (extra == 0) {
                assert_int_equal(e, JR_OK);
            } else {
                assert_int_equal(e, JR_E_DEPTH);
                assert_int_equal(off, depth);
            }
        }
    }
    /* Objects and arrays mixed close with their own brackets. */
    assert_int_equal(skip_str("[{\"a\":[{\"b\":[]}]}]", NULL), JR_OK);
    assert_int_equal(skip_str("[{\"a\":[{\"b\":[]]}]}]", NULL), JR_E_COMMA);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk),        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_numbers),     cmocka_unit_test(test_errors),
        cmocka_unit_test(test_truncation),  cmocka_unit_test(test_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
