/* opt.c - option value parsing. */
#include "core/opt.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

int opt_parse_uint(const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
    /* strtoull would skip blanks and take a sign: only digits are a number. */
    if (!isdigit((unsigned char)arg[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}
