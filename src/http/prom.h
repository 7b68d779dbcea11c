/* prom.h - the Prometheus text exposition format (version 0.0.4), written
 * into a growing buffer: metric families with HELP and TYPE, samples with
 * escaped label values, and cumulative histograms. Served on /metrics by
 * the broker and the services; pure, so it is unit-tested byte for byte.
 *
 * Usage: prom_family() once per metric name, then its samples. Names are
 * the caller's constants and are not checked; label values are arbitrary
 * text (client ids, routes) and are escaped.
 */
#ifndef SHOOTOUT_PROM_H
#define SHOOTOUT_PROM_H

#include <stddef.h>
#include <stdint.h>

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct prom {
    char *buf; /* owned; NUL-terminated */
    size_t len, cap;
};

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

/* A label: key is a constant name, value any text. */
struct prom_label {
    const char *key, *value;
};

void prom_init(struct prom *p);
void prom_free(struct prom *p);
/* Empties the buffer, keeping its memory for the next scrape. */
void prom_reset(struct prom *p);

void prom_family(struct prom *p, const char *name, enum prom_type type, const char *help);
/* name{labels} value. */
void prom_sample(struct prom *p, const char *name, const struct prom_label *labels, size_t nlabels,
                 double value);
/* A histogram's samples: name_bucket{...,le="b"} for every upper bound in
 * bounds[0..n) with the cumulative count of observations <= it, then
 * le="+Inf" (= count), name_sum and name_count. counts[i] is the number of
 * observations in (bounds[i-1], bounds[i]] - not cumulative. */
void prom_histogram(struct prom *p, const char *name, const struct prom_label *labels, size_t nlabels,
                    const double *bounds, const uint64_t *counts, size_t n, uint64_t count, double sum);

#endif
