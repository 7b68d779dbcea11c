/* prom.c - Prometheus text exposition writer. */
#include "http/prom.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/mem.h"

void prom_init(struct prom *p)
{
    p->cap = 4096;
    p->buf = mem_alloc(p->cap);
    p->buf[0] = '\0';
    p->len = 0;
}

void prom_free(struct prom *p)
{
    mem_free(p->buf);
    p->buf = NULL;
    p->len = p->cap = 0;
}

void prom_reset(struct prom *p)
{
    p->len = 0;
    p->buf[0] = '\0';
}

static void prom_reserve(struct prom *p, size_t more)
{
    if (p->len + more + 1 <= p->cap)
        return;
    while (p->len + more + 1 > p->cap)
        p->cap *= 2;
    p->buf = mem_realloc(p->buf, p->cap);
}

__attribute__((format(printf, 2, 3))) static void prom_printf(struct prom *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p->buf + p->len, p->cap - p->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= p->cap - p->len) {
        prom_reserve(p, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(p->buf + p->len, p->cap - p->len, fmt, ap);
        va_end(ap);
    }
    p->len += (size_t)n;
}

static void prom_putc(struct prom *p, char c)
{
    prom_reserve(p, 1);
    p->buf[p->len++] = c;
    p->buf[p->len] = '\0';
}

/* HELP text escapes backslash and newline; label values also the quote. */
static void prom_escaped(struct prom *p, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\' || (quote && *s == '"')) {
            prom_putc(p, '\\');
            prom_putc(p, *s);
        } else if (*s == '\n') {
            prom_putc(p, '\\');
            prom_putc(p, 'n');
        } else {
            prom_putc(p, *s);
        }
    }
}

void prom_family(struct prom *p, const char *name, enum prom_type type, const char *help)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    prom_printf(p, "# HELP %s ", name);
    prom_escaped(p, help, false);
    prom_printf(p, "\n# TYPE %s %s\n", name, types[type]);
}

/* The value as Prometheus reads it: integers without exponent noise,
 * NaN and infinities by their names. */
static void prom_value(struct prom *p, double v)
{
    if (isnan(v))
        prom_printf(p, "NaN");
    else if (isinf(v))
        prom_printf(p, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        prom_printf(p, "%.0f", v);
    else
        prom_printf(p, "%.17g", v);
}

static void prom_labels(struct prom *p, const struct prom_label *labels, size_t n, const char *le)
{
    if (!n && !le)
        return;
    prom_putc(p, '{');
    for (size_t i = 0; i < n; i++) {
        prom_printf(p, "%s%s=\"", i ? "," : "", labels[i].key);
        prom_escaped(p, labels[i].value, true);
        prom_putc(p, '"');
    }
    if (le)
        prom_printf(p, "%sle=\"%s\"", n ? "," : "", le);
    prom_putc(p, '}');
}

void prom_sample(struct prom *p, const char *name, const struct prom_label *labels, size_t nlabels,
                 double value)
{
    prom_printf(p, "%s", name);
    prom_labels(p, labels, nlabels, NULL);
    prom_putc(p, ' ');
    prom_value(p, value);
    prom_putc(p, '\n');
}

void prom_histogram(struct prom *p, const char *name, const struct prom_label *labels, size_t nlabels,
                    const double *bounds, const uint64_t *counts, size_t n, uint64_t count, double sum)
{
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= n; i++) {
        char le[32];
        if (i < n) {
            cumulative += counts[i];
            snprintf(le, sizeof le, "%g", bounds[i]);
        } else {
            cumulative = count;
            strcpy(le, "+Inf");
        }
        prom_printf(p, "%s_bucket", name);
        prom_labels(p, labels, nlabels, le);
        prom_printf(p, " %llu\n", (unsigned long long)cumulative);
    }
    prom_printf(p, "%s_sum", name);
    prom_labels(p, labels, nlabels, NULL);
    prom_putc(p, ' ');
    prom_value(p, sum);
    prom_printf(p, "\n%s_count", name);
    prom_labels(p, labels, nlabels, NULL);
    prom_printf(p, " %llu\n", (unsigned long long)count);
}
