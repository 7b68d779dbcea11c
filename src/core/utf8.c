/* utf8.c - the RFC 3629 validator and encoder (utf8.h). */
#include "core/utf8.h"

#include <string.h>

int utf8_seq_len(const uint8_t *s, size_t avail)
{
    uint8_t c = s[0], lo = 0x80, hi = 0xBF;
    size_t n;

    if (c < 0x80)
        return 1;
    /* The second-byte ranges of Unicode Table 3-7: they exclude overlong
     * forms (C0, C1, E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and code
     * points above U+10FFFF (F4 90.., F5..FF). */
    if (c < 0xC2) {
        return 0;
    } else if (c < 0xE0) {
        n = 2;
    } else if (c < 0xF0) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c < 0xF5) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (i >= avail)
            return -1;
        if (s[i] < lo || s[i] > hi)
            return 0;
        lo = 0x80;
        hi = 0xBF;
    }
    return (int)n;
}

bool utf8_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        /* Eight ASCII bytes at a time, the common case of every text. */
        if (len - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, sizeof w);
            if ((w & 0x8080808080808080ull) == 0) {
                i += 8;
                continue;
            }
        }
        int n = utf8_seq_len(s + i, len - i);
        if (n <= 0)
            return false;
        i += (size_t)n;
    }
    return true;
}

size_t utf8_encode(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}
