/* test_utf8.c - the RFC 3629 validator and encoder (core/utf8.c): every
 * boundary of Unicode Table 3-7, truncation told apart from ill-formed
 * bytes, the ASCII fast path at every alignment, and encode/decode round
 * trips over all code points. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/utf8.h"

static int seq(const char *s) { return utf8_seq_len((const uint8_t *)s, strlen(s)); }

static bool valid(const char *s, size_t n) { return utf8_valid((const uint8_t *)s, n); }

static void test_seq_boundaries(void **state)
{
    assert_int_equal(seq("a"), 1);
    assert_int_equal(utf8_seq_len((const uint8_t *)"\0", 1), 1);
    assert_int_equal(seq("\x7f"), 1);
    assert_int_equal(seq("\xc2\x80"), 2);  /* U+0080 */
    assert_int_equal(seq("\xdf\xbf"), 2);  /* U+07FF */
    assert_int_equal(seq("\xe0\xa0\x80"), 3);
    assert_int_equal(seq("\xed\x9f\xbf"), 3);  /* U+D7FF */
    assert_int_equal(seq("\xee\x80\x80"), 3);  /* U+E000 */
    assert_int_equal(seq("\xef\xbf\xbf"), 3);
    assert_int_equal(seq("\xf0\x90\x80\x80"), 4);
    assert_int_equal(seq("\xf4\x8f\xbf\xbf"), 4); /* U+10FFFF */

    static const char *const bad[] = {
        "\x80", "\xbf", "\xc0\x80", "\xc1\xbf", /* lone continuation, overlong 2-byte */
        "\xe0\x9f\xbf",                         /* overlong 3-byte */
        "\xed\xa0\x80", "\xed\xbf\xbf",         /* surrogates */
        "\xf0\x8f\xbf\xbf",                     /* overlong 4-byte */
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", /* above U+10FFFF */
        "\xff", "\xc2\x41", "\xe1\x80\x41", "\xf1\x80\x80\x41",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(seq(bad[i]), 0);
}

static void test_seq_truncated(void **state)
{
    /* A well-formed beginning cut short is -1, a bad byte before the cut 0. */
    assert_int_equal(utf8_seq_len((const uint8_t *)"\xc3", 1), -1);
    assert_int_equal(utf8_seq_len((const uint8_t *)"\xe2\x82", 2), -1);
    assert_int_equal(utf8_seq_len((const uint8_t *)"\xf0\x9f\x98", 3), -1);
    assert_int_equal(utf8_seq_len((const uint8_t *)"\xe0\x80", 2), 0);
    assert_int_equal(utf8_seq_len((const uint8_t *)"\xf0\x9f\x41", 3), 0);
    /* A NUL-terminated string is safe with avail 4: the NUL is a bad byte. */
    assert_int_equal(utf8_seq_len((const uint8_t *)"\xe2\x82", 4), 0);
}

static void test_valid(void **state)
{
    const char *text = "plain ASCII text, long enough for the fast path; Мінск € 😀 end";
    assert_true(valid(text, strlen(text)));
    assert_true(valid("", 0));
    assert_true(valid("a\0b", 3)); /* U+0000 is UTF-8; refusing it is a protocol's rule */
    assert_false(valid("\xc3", 1));

    /* One bad byte at every position of a run longer than a word. */
    char buf[40];
    for (size_t at = 0; at < sizeof buf; at++) {
        memset(buf, 'x', sizeof buf);
        buf[at] = (char)0x80;
        assert_false(valid(buf, sizeof buf));
        buf[at] = (char)0xc3; /* a lead byte cut short by the end, or followed by 'x' */
        assert_false(valid(buf, sizeof buf));
        if (at + 1 < sizeof buf) {
            buf[at + 1] = (char)0xa9;
            assert_true(valid(buf, sizeof buf));
        }
    }
}

static void test_encode_round_trip(void **state)
{
    uint8_t out[4];
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        size_t n = utf8_encode(cp, out);
        assert_int_equal(n, cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);
        assert_int_equal(utf8_seq_len(out, n), (int)n);
        assert_true(utf8_valid(out, n));
    }
    assert_int_equal(utf8_encode(0x20AC, out), 3);
    assert_memory_equal(out, "\xe2\x82\xac", 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_boundaries),
        cmocka_unit_test(test_seq_truncated),
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_encode_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
