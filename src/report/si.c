/* si.c - SI-prefixed numbers (see si.h). */
#include "report/si.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const prefixes[] = {"n", "µ", "m", "", "k", "M", "G", "T"};
#define PREFIX_UNIT 3 /* the index of "" */
#define NPREFIXES (sizeof prefixes / sizeof prefixes[0])

/* Units whose symbol takes the prefix: "µs", "kB". */
static bool prefix_on_unit(const char *unit) { return !strcmp(unit, "s") || !strcmp(unit, "B"); }

char *si_format(char *buf, size_t cap, double v, const char *unit)
{
    const char *sep = unit[0] ? " " : "";
    if (!isfinite(v)) {
        snprintf(buf, cap, "–");
        return buf;
    }
    if (v == 0) {
        snprintf(buf, cap, "0%s%s", sep, unit);
        return buf;
    }
    int k = (int)floor(log10(fabs(v)) / 3) + PREFIX_UNIT;
    if (k < 0)
        k = 0;
    if (k >= (int)NPREFIXES)
        k = NPREFIXES - 1;
    double m = v / pow(1000, k - PREFIX_UNIT);
    /* 999.7 rounds up to the next prefix's 1.00. */
    if (fabs(m) >= 999.5 && k + 1 < (int)NPREFIXES) {
        k++;
        m /= 1000;
    }
    char num[32];
    snprintf(num, sizeof num, "%.3g", m);
    if (prefix_on_unit(unit))
        snprintf(buf, cap, "%s %s%s", num, prefixes[k], unit);
    else
        snprintf(buf, cap, "%s%s%s%s", num, prefixes[k], sep, unit);
    return buf;
}
