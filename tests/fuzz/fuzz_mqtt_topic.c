/* fuzz_mqtt_topic.c - libFuzzer target for the MQTT string and topic rules.
 *
 * The first input byte says where to split the rest into a filter and a
 * topic. Every function is checked against a slow reference written here
 * from the specification's wording, and matching against invariants that
 * must hold for any valid topic. Any broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "mqtt/mqtt_topic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)          \
    do {                     \
        if (!(cond))         \
            abort();         \
    } while (0)

/* Decodes code points one by one and rejects what MQTT 1.5.3 forbids:
 * ill-formed UTF-8 (bad continuation, overlong, surrogate, above U+10FFFF)
 * and U+0000. */
static bool ref_utf8(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t n;
        uint32_t cp, min;
        if (c < 0x80) {
            n = 1, cp = c, min = 0;
        } else if ((c & 0xE0) == 0xC0) {
            n = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (len - i < n)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp == 0 || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n;
    }
    return true;
}

static bool has_wildcard(const uint8_t *s, size_t len)
{
    return memchr(s, '+', len) || memchr(s, '#', len);
}

/* Walks the levels, checks they tile the string exactly, and returns how
 * many there are. */
static size_t check_levels(const uint8_t *s, size_t len)
{
    size_t pos = 0, n = 0, expect = 0, lvl_len;
    const uint8_t *lvl;
    while (mqtt_topic_next_level(s, len, &pos, &lvl, &lvl_len)) {
        CHECK(lvl == s + expect && expect + lvl_len <= len);
        CHECK(!memchr(lvl, '/', lvl_len));
        expect += lvl_len;
        CHECK(expect == len || s[expect] == '/');
        expect++;
        n++;
    }
    CHECK(expect == len + 1);
    CHECK(!mqtt_topic_next_level(s, len, &pos, &lvl, &lvl_len));
    return n;
}

static bool ref_filter_valid(const uint8_t *f, size_t len)
{
    if (len == 0 || !ref_utf8(f, len))
        return false;
    size_t pos = 0, lvl_len;
    const uint8_t *lvl;
    while (mqtt_topic_next_level(f, len, &pos, &lvl, &lvl_len)) {
        if (!has_wildcard(lvl, lvl_len))
            continue;
        if (lvl_len != 1)
            return false;
        if (lvl[0] == '#' && pos <= len)
            return false; /* '#' with more levels after it */
    }
    return true;
}

static bool ref_match(const uint8_t *f, size_t flen, const uint8_t *t, size_t tlen)
{
    if (tlen && t[0] == '$' && (f[0] == '+' || f[0] == '#'))
        return false;
    size_t fp = 0, tp = 0, fl_len, tl_len;
    const uint8_t *fl, *tl;
    for (;;) {
        bool more_f = mqtt_topic_next_level(f, flen, &fp, &fl, &fl_len);
        bool more_t = mqtt_topic_next_level(t, tlen, &tp, &tl, &tl_len);
        if (!more_f)
            return !more_t;
        if (fl_len == 1 && fl[0] == '#')
            return true;
        if (!more_t)
            return false;
        if (fl_len == 1 && fl[0] == '+')
            continue;
        if (fl_len != tl_len || memcmp(fl, tl, fl_len) != 0)
            return false;
    }
}

/* Checks one string in every role. Copied to an exact-size buffer so that
 * ASan sees any read past its end. */
static void check_string(const uint8_t *data, size_t len)
{
    uint8_t *s = malloc(len ? len : 1);
    memcpy(s, data, len);

    bool utf8 = mqtt_utf8_valid(s, len);
    CHECK(utf8 == ref_utf8(s, len));
    bool name = mqtt_topic_name_valid(s, len);
    CHECK(name == (len > 0 && utf8 && !has_wildcard(s, len)));
    bool filter = mqtt_topic_filter_valid(s, len);
    CHECK(filter == ref_filter_valid(s, len));
    CHECK(!name || filter);

    size_t slashes = 0;
    for (size_t i = 0; i < len; i++)
        slashes += s[i] == '/';
    CHECK(check_levels(s, len) == slashes + 1);

    if (name) {
        CHECK(mqtt_topic_match(s, len, s, len));
        CHECK(mqtt_topic_match((const uint8_t *)"#", 1, s, len) == (s[0] != '$'));
        CHECK(mqtt_topic_match((const uint8_t *)"+", 1, s, len) == (s[0] != '$' && slashes == 0));
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t split = data[0] < size ? data[0] : size - 1;
    const uint8_t *rest = data + 1;
    size_t flen = split, tlen = size - 1 - split;

    check_string(rest, size - 1);
    check_string(rest, flen);
    check_string(rest + flen, tlen);

    uint8_t *f = malloc(flen ? flen : 1), *t = malloc(tlen ? tlen : 1);
    memcpy(f, rest, flen);
    memcpy(t, rest + flen, tlen);
    /* Defined for valid input only, but must stay in bounds on any. */
    bool m = mqtt_topic_match(f, flen, t, tlen);
    if (mqtt_topic_filter_valid(f, flen) && mqtt_topic_name_valid(t, tlen))
        CHECK(m == ref_match(f, flen, t, tlen));
    free(f);
    free(t);
    return 0;
}
