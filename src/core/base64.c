/* base64.c - strict standard base64 over OpenSSL's EVP block coder. */
#include "core/base64.h"

#include <openssl/evp.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

size_t base64_encode(char *out, const uint8_t *in, size_t len)
{
    if (len > INT_MAX / 4 * 3) {
        out[0] = '\0';
        return 0;
    }
    return (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

/* The 6-bit value of a base64 character, or -1. */
static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

ssize_t base64_decode(uint8_t *out, size_t cap, const char *in, size_t len)
{
    if (len % 4 != 0 || len > INT_MAX)
        return -1;
    /* EVP_DecodeBlock skips surrounding whitespace and counts padding as
     * zero bytes; checking the alphabet first makes it exact. */
    size_t pad = 0;
    if (len > 0 && in[len - 1] == '=')
        pad = (len > 1 && in[len - 2] == '=') ? 2 : 1;
    for (size_t i = 0; i < len - pad; i++)
        if (b64_value(in[i]) < 0)
            return -1;
    /* Bits below the last whole byte must be zero, or two spellings would
     * decode to the same bytes. */
    if (pad && (b64_value(in[len - pad - 1]) & (pad == 2 ? 0x0f : 0x03)))
        return -1;
    size_t n = len / 4 * 3 - pad;
    if (n > cap)
        return -1;
    uint8_t tmp[3];
    /* OpenSSL writes whole groups of three, padding included, so the last
     * group goes through a scratch buffer to keep writes within cap. */
    size_t body = len - (pad ? 4 : 0);
    if (body > 0 && EVP_DecodeBlock(out, (const unsigned char *)in, (int)body) < 0)
        return -1;
    if (pad) {
        if (EVP_DecodeBlock(tmp, (const unsigned char *)in + body, 4) < 0)
            return -1;
        memcpy(out + body / 4 * 3, tmp, 3 - pad);
    }
    return (ssize_t)n;
}
