/* test_mqtt_topic.c - unit tests for the MQTT UTF-8, topic name, topic
 * filter and matching rules (mqtt_topic.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mqtt/mqtt_topic.h"

/* A string literal as (bytes, length); sizeof keeps embedded NULs. */
#define B(lit) (const uint8_t *)(lit), (sizeof(lit) - 1)

static void test_utf8_ascii(void **state)
{
    assert_true(mqtt_utf8_valid(B("")));
    assert_true(mqtt_utf8_valid(B("a")));
    assert_true(mqtt_utf8_valid(B("sport/tennis/player1")));
    assert_true(mqtt_utf8_valid(B("\x01\x1f\x7f"))); /* controls are only SHOULD NOT */
    assert_false(mqtt_utf8_valid(B("\0")));
    assert_false(mqtt_utf8_valid(B("abc\0")));
}

/* U+0000 and a bad byte must be found at every offset, both inside the
 * eight-byte fast path and in the byte-wise tail. */
static void test_utf8_every_offset(void **state)
{
    uint8_t s[40];
    for (size_t len = 1; len <= sizeof s; len++) {
        for (size_t at = 0; at < len; at++) {
            memset(s, 'a', len);
            assert_true(mqtt_utf8_valid(s, len));
            s[at] = 0;
            assert_false(mqtt_utf8_valid(s, len));
            s[at] = 0x80;
            assert_false(mqtt_utf8_valid(s, len));
            s[at] = 0xFF;
            assert_false(mqtt_utf8_valid(s, len));
            if (at + 1 < len) {
                s[at] = 0xC3; /* U+00E9 */
                s[at + 1] = 0xA9;
                assert_true(mqtt_utf8_valid(s, len));
                s[at + 1] = 'a'; /* lead byte without its continuation */
                assert_false(mqtt_utf8_valid(s, len));
            }
        }
    }
}

static void test_utf8_valid_multibyte(void **state)
{
    assert_true(mqtt_utf8_valid(B("\xc2\x80")));             /* U+0080 */
    assert_true(mqtt_utf8_valid(B("\xdf\xbf")));             /* U+07FF */
    assert_true(mqtt_utf8_valid(B("\xe0\xa0\x80")));         /* U+0800 */
    assert_true(mqtt_utf8_valid(B("\xed\x9f\xbf")));         /* U+D7FF */
    assert_true(mqtt_utf8_valid(B("\xee\x80\x80")));         /* U+E000 */
    assert_true(mqtt_utf8_valid(B("\xef\xbb\xbf")));         /* BOM, kept as is */
    assert_true(mqtt_utf8_valid(B("\xef\xbf\xbf")));         /* U+FFFF */
    assert_true(mqtt_utf8_valid(B("\xf0\x90\x80\x80")));     /* U+10000 */
    assert_true(mqtt_utf8_valid(B("\xf0\x9f\x98\x80")));     /* U+1F600 */
    assert_true(mqtt_utf8_valid(B("\xf4\x8f\xbf\xbf")));     /* U+10FFFF */
    assert_true(mqtt_utf8_valid(B("caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80/x")));
}

static void test_utf8_overlong(void **state)
{
    assert_false(mqtt_utf8_valid(B("\xc0\x80"))); /* overlong U+0000 */
    assert_false(mqtt_utf8_valid(B("\xc0\xaf"))); /* overlong '/' */
    assert_false(mqtt_utf8_valid(B("\xc1\xbf")));
    assert_false(mqtt_utf8_valid(B("\xe0\x80\x80")));
    assert_false(mqtt_utf8_valid(B("\xe0\x9f\xbf")));
    assert_false(mqtt_utf8_valid(B("\xf0\x80\x80\x80")));
    assert_false(mqtt_utf8_valid(B("\xf0\x8f\xbf\xbf")));
}

static void test_utf8_surrogates_and_range(void **state)
{
    assert_false(mqtt_utf8_valid(B("\xed\xa0\x80"))); /* U+D800 */
    assert_false(mqtt_utf8_valid(B("\xed\xbf\xbf"))); /* U+DFFF */
    assert_false(mqtt_utf8_valid(B("\xed\xa0\x80\xed\xb0\x80"))); /* CESU-8 pair */
    assert_false(mqtt_utf8_valid(B("\xf4\x90\x80\x80"))); /* U+110000 */
    assert_false(mqtt_utf8_valid(B("\xf5\x80\x80\x80")));
    assert_false(mqtt_utf8_valid(B("\xf8\x88\x80\x80\x80"))); /* 5-byte form */
    assert_false(mqtt_utf8_valid(B("\xfe")));
    assert_false(mqtt_utf8_valid(B("\xff")));
}

static void test_utf8_truncated(void **state)
{
    assert_false(mqtt_utf8_valid(B("\x80")));         /* lone continuation */
    assert_false(mqtt_utf8_valid(B("\xbf")));
    assert_false(mqtt_utf8_valid(B("\xc3")));
    assert_false(mqtt_utf8_valid(B("\xe0\xa0")));
    assert_false(mqtt_utf8_valid(B("\xf0\x90\x80")));
    assert_false(mqtt_utf8_valid(B("\xf0\x90\x80" "a")));
    assert_false(mqtt_utf8_valid(B("\xe2\x82" "a")));
    assert_false(mqtt_utf8_valid(B("\xc3\xa9\xa9"))); /* one continuation too many */
    /* The length bounds the read even when the bytes after it would
     * complete the sequence. */
    const uint8_t euro[] = {0xe2, 0x82, 0xac};
    assert_true(mqtt_utf8_valid(euro, 3));
    assert_false(mqtt_utf8_valid(euro, 2));
    assert_false(mqtt_utf8_valid(euro, 1));
}

static void test_topic_name_valid(void **state)
{
    assert_true(mqtt_topic_name_valid(B("a")));
    assert_true(mqtt_topic_name_valid(B("/")));
    assert_true(mqtt_topic_name_valid(B("a//b")));
    assert_true(mqtt_topic_name_valid(B("sport/tennis/player1")));
    assert_true(mqtt_topic_name_valid(B("$SYS/broker/load")));
    assert_true(mqtt_topic_name_valid(B(" ")));
    assert_true(mqtt_topic_name_valid(B("caf\xc3\xa9")));
    assert_false(mqtt_topic_name_valid(B("")));
    assert_false(mqtt_topic_name_valid(B("+")));
    assert_false(mqtt_topic_name_valid(B("#")));
    assert_false(mqtt_topic_name_valid(B("a/+/b")));
    assert_false(mqtt_topic_name_valid(B("sport/tennis#")));
    assert_false(mqtt_topic_name_valid(B("a\0b")));
    assert_false(mqtt_topic_name_valid(B("a\xc0\xaf" "b")));
    /* Wildcards past the first eight bytes go through the word-wise path. */
    assert_false(mqtt_topic_name_valid(B("abcdefghij+")));
    assert_false(mqtt_topic_name_valid(B("abcdefghijklmnopqrs#tu")));
    assert_true(mqtt_topic_name_valid(B("abcdefghijklmnopqrstu")));
}

static void test_topic_filter_valid(void **state)
{
    static const char *const good[] = {
        "+", "#", "/", "a", "a//b", "+/+", "/+", "+/", "/+/", "/#", "a/#", "+/#",
        "sport/#", "sport/tennis/+", "sport/+/player1", "$SYS/#", "+/+/+/+/#",
        "abcdefghijklmnop/+/qrstuvwxyz/#", "caf\xc3\xa9/+",
    };
    static const char *const bad[] = {
        "a/#/b", "a#", "#a", "a/#b", "#/", "##", "a/+b", "a+/b", "+a", "a+", "++", "+#", "#+",
        "sport/tennis#", "abcdefghijklmnop+", "abcdefghijklmnop/#/x", "a\xc0\xaf",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(mqtt_topic_filter_valid((const uint8_t *)good[i], strlen(good[i])));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(mqtt_topic_filter_valid((const uint8_t *)bad[i], strlen(bad[i])));
    assert_false(mqtt_topic_filter_valid(B("")));
    assert_false(mqtt_topic_filter_valid(B("a/\0")));
}

/* Wildcards, U+0000 and other bytes than ASCII at every offset, inside
 * the eight-byte fast path, in its last overlapping word and in the
 * byte-wise tail. */
static void test_wildcards_every_offset(void **state)
{
    uint8_t s[40];
    for (size_t len = 1; len <= sizeof s; len++) {
        for (size_t at = 0; at < len; at++) {
            memset(s, 'a', len);
            s[at] = '+';
            assert_false(mqtt_topic_name_valid(s, len));
            assert_int_equal(mqtt_topic_filter_valid(s, len), len == 1);
            s[at] = '#';
            assert_false(mqtt_topic_name_valid(s, len));
            assert_int_equal(mqtt_topic_filter_valid(s, len), len == 1);
            s[at] = '/';
            assert_true(mqtt_topic_name_valid(s, len));
            assert_true(mqtt_topic_filter_valid(s, len));
            s[at] = 0;
            assert_false(mqtt_topic_name_valid(s, len));
            assert_false(mqtt_topic_filter_valid(s, len));
            if (at + 2 < len) {
                s[at] = '/'; /* "aa/+/aa" */
                s[at + 1] = '+';
                s[at + 2] = '/';
                assert_true(mqtt_topic_filter_valid(s, len));
                s[at + 1] = '#'; /* "aa/#/aa" */
                assert_false(mqtt_topic_filter_valid(s, len));
                s[at + 2] = 'a'; /* "aa/#aa" */
                assert_false(mqtt_topic_filter_valid(s, len));
                s[at + 1] = '+'; /* "aa/+aa" */
                assert_false(mqtt_topic_filter_valid(s, len));
            }
            /* Not ASCII: in a whole word, in the last (overlapping) one. */
            memset(s, 'a', len);
            s[at] = 0x80;
            assert_false(mqtt_topic_name_valid(s, len));
            if (at + 1 < len) {
                s[at] = 0xC3; /* U+00E9 */
                s[at + 1] = 0xA9;
                assert_true(mqtt_topic_name_valid(s, len));
                s[at + 1] = 'a'; /* lead byte without its continuation */
                assert_false(mqtt_topic_name_valid(s, len));
            }
        }
    }
}

struct match_case {
    const char *filter, *topic;
    bool match;
};

static void test_topic_match(void **state)
{
    static const struct match_case cases[] = {
        /* Examples of MQTT 3.1.1 section 4.7.1. */
        {"sport/tennis/player1/#", "sport/tennis/player1", true},
        {"sport/tennis/player1/#", "sport/tennis/player1/ranking", true},
        {"sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", true},
        {"sport/#", "sport", true},
        {"sport/#", "sport/", true},
        {"sport/#", "sport/x", true},
        {"sport/#", "sports", false},
        {"sport/tennis/+", "sport/tennis/player1", true},
        {"sport/tennis/+", "sport/tennis/player2", true},
        {"sport/tennis/+", "sport/tennis/player1/ranking", false},
        {"sport/+", "sport", false},
        {"sport/+", "sport/", true},
        {"+/+", "/finance", true},
        {"/+", "/finance", true},
        {"+", "/finance", false},
        {"+", "sport", true},
        {"+", "sport/", false},
        {"+/+", "/", true},
        {"+", "", true},
        {"/", "/", true},
        {"//", "/", false},
        {"a//b", "a//b", true},
        {"a/+/b", "a//b", true},
        {"#", "a", true},
        {"#", "/", true},
        {"#", "a/b/c", true},
        {"a/+/#", "a/b", true},
        {"a/+/#", "a/", true},
        {"a/+/#", "a", false},
        {"a/#", "a", true},
        {"a/#", "ab", false},
        {"a/#", "b/a", false},
        /* Literal levels. */
        {"a/b", "a/b", true},
        {"a/b", "a/bc", false},
        {"a/bc", "a/b", false},
        {"a/b/c", "a/b", false},
        {"a/b", "a/b/c", false},
        {"a", "a/", false},
        {"a/", "a", false},
        {"a/", "a/", true},
        {"A", "a", false},
        {"caf\xc3\xa9/+", "caf\xc3\xa9/x", true},
        /* [MQTT-4.7.2-1]: no first-level wildcard reaches a "$" topic. */
        {"#", "$SYS", false},
        {"#", "$SYS/x", false},
        {"#", "$", false},
        {"+/x", "$SYS/x", false},
        {"+/monitor/Clients", "$SYS/monitor/Clients", false},
        {"+", "$SYS", false},
        {"$SYS/#", "$SYS/x", true},
        {"$SYS/#", "$SYS", true},
        {"$SYS/monitor/+", "$SYS/monitor/Clients", true},
        {"$SYS/+", "$SYS/x", true},
        {"a/#", "a/$x", true},
        {"+/+", "a/$x", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const struct match_case *c = &cases[i];
        bool got = mqtt_topic_match((const uint8_t *)c->filter, strlen(c->filter),
                                    (const uint8_t *)c->topic, strlen(c->topic));
        if (got != c->match)
            fail_msg("filter \"%s\" topic \"%s\": expected %d", c->filter, c->topic, c->match);
    }
}

/* Collects every level of s as "level|level|..." for easy comparison. */
static void test_shared(void **state)
{
    size_t inner = 0;
    assert_int_equal(mqtt_topic_shared(B("$share/g/a/b"), &inner), 1);
    assert_int_equal(inner, 9);
    assert_int_equal(mqtt_topic_shared(B("$share/group/#"), &inner), 1);
    assert_int_equal(inner, 13);
    assert_int_equal(mqtt_topic_shared(B("$share/g//"), &inner), 1); /* the filter "/" */
    assert_int_equal(inner, 9);
    /* Not shared: other prefixes, or the prefix alone without its slash. */
    assert_int_equal(mqtt_topic_shared(B("a/b"), &inner), 0);
    assert_int_equal(mqtt_topic_shared(B("$share"), &inner), 0);
    assert_int_equal(mqtt_topic_shared(B("$SHARE/g/a"), &inner), 0);
    assert_int_equal(mqtt_topic_shared(B("$sharex/g/a"), &inner), 0);
    /* Malformed: no name, a wildcard in the name, no filter. */
    assert_int_equal(mqtt_topic_shared(B("$share/"), &inner), -1);
    assert_int_equal(mqtt_topic_shared(B("$share//a"), &inner), -1);
    assert_int_equal(mqtt_topic_shared(B("$share/g+/a"), &inner), -1);
    assert_int_equal(mqtt_topic_shared(B("$share/#/a"), &inner), -1);
    assert_int_equal(mqtt_topic_shared(B("$share/g"), &inner), -1);
    assert_int_equal(mqtt_topic_shared(B("$share/g/"), &inner), -1);
}

static void levels(const char *s, char *out, size_t out_size)
{
    size_t pos = 0, n = 0, len = strlen(s);
    const uint8_t *lvl;
    size_t lvl_len;
    out[0] = 0;
    while (mqtt_topic_next_level((const uint8_t *)s, len, &pos, &lvl, &lvl_len)) {
        assert_true(lvl >= (const uint8_t *)s && lvl + lvl_len <= (const uint8_t *)s + len);
        n += (size_t)snprintf(out + n, out_size - n, "%s%.*s", n ? "|" : "", (int)lvl_len, lvl);
        if (lvl_len == 0)
            n += (size_t)snprintf(out + n, out_size - n, "<>");
    }
    /* Exhausted stays exhausted. */
    assert_false(mqtt_topic_next_level((const uint8_t *)s, len, &pos, &lvl, &lvl_len));
}

static void test_next_level(void **state)
{
    char out[128];
    levels("a/b/c", out, sizeof out);
    assert_string_equal(out, "a|b|c");
    levels("abc", out, sizeof out);
    assert_string_equal(out, "abc");
    levels("a/", out, sizeof out);
    assert_string_equal(out, "a|<>");
    levels("/a", out, sizeof out);
    assert_string_equal(out, "<>|a");
    levels("/", out, sizeof out);
    assert_string_equal(out, "<>|<>");
    levels("//", out, sizeof out);
    assert_string_equal(out, "<>|<>|<>");
    levels("", out, sizeof out);
    assert_string_equal(out, "<>");
    levels("sport/+/#", out, sizeof out);
    assert_string_equal(out, "sport|+|#");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_ascii),
        cmocka_unit_test(test_utf8_every_offset),
        cmocka_unit_test(test_utf8_valid_multibyte),
        cmocka_unit_test(test_utf8_overlong),
        cmocka_unit_test(test_utf8_surrogates_and_range),
        cmocka_unit_test(test_utf8_truncated),
        cmocka_unit_test(test_topic_name_valid),
        cmocka_unit_test(test_topic_filter_valid),
        cmocka_unit_test(test_wildcards_every_offset),
        cmocka_unit_test(test_topic_match),
        cmocka_unit_test(test_next_level),
        cmocka_unit_test(test_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
