/* hist.c - log-linear histogram: exact sums, bucketed percentiles. */
#include "report/hist.h"

#include <math.h>
#include <string.h>

#define HIST_SUB (UINT64_C(1) << HIST_SUB_BITS)

/* Below 2 * HIST_SUB every value has its own bucket. Above, a value with
 * its highest bit at position b is shifted right by e = b - HIST_SUB_BITS,
 * leaving a mantissa in [HIST_SUB, 2 * HIST_SUB); bucket e * HIST_SUB + mantissa
 * then continues the exact range without a gap. */
unsigned hist_bucket(uint64_t v)
{
    if (v > HIST_MAX)
        v = HIST_MAX;
    if (v < 2 * HIST_SUB)
        return (unsigned)v;
    unsigned e = (unsigned)(63 - __builtin_clzll(v)) - HIST_SUB_BITS;
    return (unsigned)(e * HIST_SUB + (v >> e));
}

uint64_t hist_bucket_low(unsigned bucket)
{
    if (bucket < 2 * HIST_SUB)
        return bucket;
    unsigned e = bucket / HIST_SUB - 1;
    return (HIST_SUB + bucket % HIST_SUB) << e;
}

uint64_t hist_bucket_width(unsigned bucket)
{
    if (bucket < 2 * HIST_SUB)
        return 1;
    return UINT64_C(1) << (bucket / HIST_SUB - 1);
}

void hist_reset(struct hist *h) { memset(h, 0, sizeof *h); }

void hist_record(struct hist *h, uint64_t v)
{
    if (h->count == 0 || v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->count++;
    h->sum += v;
    h->sum_sq += (unsigned __int128)v * v;
    h->buckets[hist_bucket(v)]++;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    if (src->count == 0)
        return;
    if (dst->count == 0 || src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    dst->count += src->count;
    dst->sum += src->sum;
    dst->sum_sq += src->sum_sq;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
}

uint64_t hist_percentile(const struct hist *h, double p)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    unsigned i = 0;
    for (; i < HIST_BUCKETS - 1; i++) {
        seen += h->buckets[i];
        if (seen >= rank)
            break;
    }
    /* The midpoint halves the worst-case error of either bucket edge. */
    uint64_t v = hist_bucket_low(i) + hist_bucket_width(i) / 2;
    if (v < h->min)
        v = h->min;
    if (v > h->max)
        v = h->max;
    return v;
}

double hist_mean(const struct hist *h)
{
    if (h->count == 0)
        return 0;
    return (double)((long double)h->sum / (long double)h->count);
}

double hist_stddev(const struct hist *h)
{
    if (h->count == 0)
        return 0;
    /* From the exact sums; long double keeps the cancellation in
     * sum_sq - sum^2/n harmless for latency-like data. */
    long double n = (long double)h->count, s = (long double)h->sum;
    long double var = ((long double)h->sum_sq - s * s / n) / n;
    return var > 0 ? (double)sqrtl(var) : 0;
}
