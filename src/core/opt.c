/* opt.c - option value parsing. */
#include "core/opt.h"

#include <errno.h>
#include <stdlib.h>

int opt_parse_uint(const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-' || arg[0] == '+' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}
