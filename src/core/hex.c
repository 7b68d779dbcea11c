/* hex.c - hexadecimal digits (hex.h). */
#include "core/hex.h"

const char hex_upper[16] = "0123456789ABCDEF";

int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20; /* ASCII letters to lower case; no digit maps onto a-f */
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int hex_byte(const char *s)
{
    int hi = hex_value((unsigned char)s[0]);
    if (hi < 0)
        return -1;
    int lo = hex_value((unsigned char)s[1]);
    return lo < 0 ? -1 : hi << 4 | lo;
}
