/* mqtt_topic.c - MQTT string, topic name and topic filter rules, wildcard
 * matching, and the form of shared subscriptions.
 *
 * These run on every PUBLISH a broker receives, so the validators scan eight
 * bytes at a time while the input is plain ASCII (nearly every real topic)
 * and drop to the byte-wise UTF-8 decoder (core/utf8.h) only around other
 * bytes.
 */
#include "mqtt/mqtt_topic.h"

#include <string.h>

#include "core/utf8.h"

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w); /* one unaligned load; byte order is irrelevant here */
    return w;
}

/* Non-zero iff some byte of w is zero. Exact as a boolean (the borrow can
 * only flag extra bytes above a real zero byte). */
static inline uint64_t has_zero(uint64_t w) { return (w - ONES) & ~w & HIGHS; }

static inline uint64_t has_byte(uint64_t w, uint8_t b) { return has_zero(w ^ (ONES * b)); }

bool mqtt_utf8_valid(const uint8_t *s, size_t len)
{
    return !memchr(s, 0, len) && utf8_valid(s, len);
}

/* Whether the eight bytes of w are plain in a topic name: ASCII, neither
 * U+0000 nor a wildcard. */
static inline bool name_word_plain(uint64_t w)
{
    return ((w & HIGHS) | has_zero(w) | has_byte(w, '+') | has_byte(w, '#')) == 0;
}

bool mqtt_topic_name_valid(const uint8_t *t, size_t len)
{
    if (len == 0)
        return false;
    size_t i = 0;
    if (len >= 8) {
        /* Whole words, then the last eight bytes (overlapping the word
         * before): a plain topic leaves no byte to the loop below. */
        while (i + 8 <= len && name_word_plain(load64(t + i)))
            i += 8;
        if (i + 8 > len && (i == len || name_word_plain(load64(t + len - 8))))
            return true;
    }
    while (i < len) {
        if (len - i >= 8 && name_word_plain(load64(t + i))) {
            i += 8;
            continue;
        }
        uint8_t c = t[i];
        if (c < 0x80) {
            if (c == 0 || c == '+' || c == '#')
                return false;
            i++;
            continue;
        }
        int n = utf8_seq_len(t + i, len - i);
        if (n <= 0)
            return false;
        i += (size_t)n;
    }
    return true;
}

bool mqtt_topic_filter_valid(const uint8_t *f, size_t len)
{
    if (len == 0)
        return false;
    size_t i = 0;
    while (i < len) {
        if (len - i >= 8) {
            uint64_t w = load64(f + i);
            if (((w & HIGHS) | has_zero(w) | has_byte(w, '+') | has_byte(w, '#')) == 0) {
                i += 8;
                continue;
            }
        }
        uint8_t c = f[i];
        if (c < 0x80) {
            if (c == 0)
                return false;
            /* A wildcard must fill its whole level; '#' must also be the
             * last level. Neighbours are looked at as bytes, which is safe
             * because '/' never occurs inside a multi-byte sequence. */
            if (c == '+' || c == '#') {
                if (i > 0 && f[i - 1] != '/')
                    return false;
                if (c == '#' ? i + 1 != len : i + 1 < len && f[i + 1] != '/')
                    return false;
            }
            i++;
            continue;
        }
        int n = utf8_seq_len(f + i, len - i);
        if (n <= 0)
            return false;
        i += (size_t)n;
    }
    return true;
}

bool mqtt_topic_match(const uint8_t *filter, size_t flen, const uint8_t *topic, size_t tlen)
{
    /* [MQTT-4.7.2-1]: "$" topics are the server's; wildcards at the first
     * level must not reach them. */
    if (tlen > 0 && topic[0] == '$' && flen > 0 && (filter[0] == '+' || filter[0] == '#'))
        return false;

    size_t i = 0, j = 0;
    for (;;) {
        /* Here i and j are both at the start of a level. */
        if (i < flen && filter[i] == '#')
            return true;
        if (i < flen && filter[i] == '+') {
            i++;
            while (j < tlen && topic[j] != '/')
                j++;
        } else {
            while (i < flen && filter[i] != '/') {
                if (j == tlen || topic[j] != filter[i])
                    return false;
                i++;
                j++;
            }
            if (j < tlen && topic[j] != '/')
                return false;
        }
        /* Both at the end of a level: at '/' or at the end. */
        if (i >= flen)
            return j == tlen;
        if (j == tlen)
            /* The topic ran out first; only a trailing "/#" still matches,
             * since '#' includes the parent level. */
            return flen - i == 2 && filter[i + 1] == '#';
        i++;
        j++;
    }
}

#define SHARE_PREFIX "$share/"
#define SHARE_PREFIX_LEN 7

int mqtt_topic_shared(const uint8_t *filter, size_t len, size_t *inner_off)
{
    if (len < SHARE_PREFIX_LEN || memcmp(filter, SHARE_PREFIX, SHARE_PREFIX_LEN) != 0)
        return 0;
    size_t i = SHARE_PREFIX_LEN;
    for (; i < len && filter[i] != '/'; i++)
        if (filter[i] == '+' || filter[i] == '#')
            return -1; /* [MQTT-4.8.2-2] */
    if (i == SHARE_PREFIX_LEN || i + 1 >= len)
        return -1; /* no name, or no filter [MQTT-4.8.2-1] */
    *inner_off = i + 1;
    return 1;
}

bool mqtt_topic_next_level(const uint8_t *s, size_t len, size_t *pos, const uint8_t **level,
                           size_t *level_len)
{
    size_t p = *pos;
    /* len + 1 marks "exhausted", so that a trailing '/' still yields its
     * empty last level at p == len. */
    if (p > len)
        return false;
    const uint8_t *slash = p < len ? memchr(s + p, '/', len - p) : NULL;
    size_t end = slash ? (size_t)(slash - s) : len;
    *level = s + p;
    *level_len = end - p;
    *pos = end + 1;
    return true;
}
