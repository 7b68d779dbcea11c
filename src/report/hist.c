/* hist.c - log-linear histogram: exact sums, bucketed percentiles, and its
 * JSON form in full. */
#include "report/hist.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "report/result_read.h"

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

/* ---- JSON ---------------------------------------------------------------- */

#define HIST_U128_DIGITS 40 /* 2^128 has 39 decimal digits */

static void u128_format(unsigned __int128 v, char out[HIST_U128_DIGITS])
{
    char tmp[HIST_U128_DIGITS];
    unsigned n = 0;
    do {
        tmp[n++] = (char)('0' + (unsigned)(v % 10));
        v /= 10;
    } while (v);
    for (unsigned i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
}

/* Decimal digits alone, no leading zero, below 2^128. */
static bool u128_parse(const char *s, unsigned __int128 *out)
{
    const unsigned __int128 max = ~(unsigned __int128)0;
    unsigned __int128 v = 0;
    if (!*s || (s[0] == '0' && s[1]))
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

void hist_write_json(struct json *j, const struct hist *h)
{
    char num[HIST_U128_DIGITS];
    json_object_begin(j);
    json_kstr(j, "unit", "ns");
    json_key(j, "count");
    json_int(j, (int64_t)h->count);
    json_key(j, "min");
    json_int(j, (int64_t)(h->count ? h->min : 0));
    json_key(j, "max");
    json_int(j, (int64_t)(h->count ? h->max : 0));
    u128_format(h->sum, num);
    json_kstr(j, "sum", num);
    u128_format(h->sum_sq, num);
    json_kstr(j, "sum_sq", num);
    json_key(j, "buckets");
    json_flat(j, true);
    json_array_begin(j);
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        if (!h->buckets[i])
            continue;
        json_array_begin(j);
        json_int(j, i);
        json_int(j, (int64_t)h->buckets[i]);
        json_array_end(j);
    }
    json_array_end(j);
    json_flat(j, false);
    json_object_end(j);
}

static bool hist_read_sum(struct rr *ps, unsigned __int128 *out, const char *what)
{
    char buf[HIST_U128_DIGITS + 1];
    const unsigned char *at = ps->r.p;
    if (!rr_string(ps, buf, sizeof buf, what))
        return false;
    if (!u128_parse(buf, out)) {
        ps->r.p = at;
        return rr_fail(ps, "byte %zu: %s is not a decimal whole number below 2^128", what);
    }
    return true;
}

/* The buckets: [index, count] pairs by increasing index; the last index
 * and the total go to *last and *total. */
static bool hist_read_buckets(struct rr *ps, struct hist *h, unsigned *last, uint64_t *total,
                              unsigned *first)
{
    if (!rr_array(ps, "the histogram's buckets"))
        return false;
    int k;
    bool any = false;
    while ((k = jr_next(&ps->r)) == 1) {
        const unsigned char *at = ps->r.p;
        if (!rr_array(ps, "a bucket ([index, count])"))
            return false;
        uint64_t idx, n;
        if (jr_next(&ps->r) != 1)
            return ps->r.err ? rr_reader_failed(ps) : (ps->r.p = at, rr_fail(ps, "byte %zu: %s", "an empty bucket pair"));
        if (!rr_uint(ps, &idx, HIST_BUCKETS - 1, "a bucket's index"))
            return false;
        if (jr_next(&ps->r) != 1)
            return ps->r.err ? rr_reader_failed(ps) : (ps->r.p = at, rr_fail(ps, "byte %zu: %s", "a bucket without a count"));
        if (!rr_uint(ps, &n, INT64_MAX, "a bucket's count"))
            return false;
        int end = jr_next(&ps->r);
        if (end != 0)
            return end < 0 ? rr_reader_failed(ps)
                           : (ps->r.p = at, rr_fail(ps, "byte %zu: %s", "a bucket of more than two numbers"));
        if (n == 0 || (any && idx <= *last) || *total > (uint64_t)INT64_MAX - n) {
            ps->r.p = at;
            return rr_fail(ps, "byte %zu: %s", "a bucket out of order, empty, or past the count");
        }
        if (!any)
            *first = (unsigned)idx;
        any = true;
        *last = (unsigned)idx;
        *total += n;
        h->buckets[idx] = n;
    }
    return k == 0 || rr_reader_failed(ps);
}

bool hist_read_json(struct rr *ps, struct hist *h)
{
    enum { F_UNIT, F_COUNT, F_MIN, F_MAX, F_SUM, F_SUM_SQ, F_BUCKETS, F_N };
    static const char *const names[F_N] = {"unit", "count", "min", "max",
                                           "sum", "sum_sq", "buckets"};
    hist_reset(h);
    const unsigned char *start = ps->r.p;
    if (!rr_object(ps, "the histogram"))
        return false;
    unsigned seen = 0, first = 0, last = 0;
    uint64_t total = 0;
    char key[RR_KEY_CAP], unit[8];
    int k;
    while ((k = rr_next_key(ps, key)) == 1) {
        unsigned f = 0;
        while (f < F_N && strcmp(key, names[f]))
            f++;
        if (f == F_N) {
            if (!rr_skip(ps))
                return false;
            continue;
        }
        if (seen & 1u << f)
            return rr_fail(ps, "byte %zu: the histogram has %s twice", names[f]);
        seen |= 1u << f;
        bool ok = true;
        switch (f) {
        case F_UNIT:
            ok = rr_string(ps, unit, sizeof unit, "the histogram's unit");
            if (ok && strcmp(unit, "ns"))
                ok = rr_fail(ps, "byte %zu: %s", "the histogram's unit is not ns");
            break;
        case F_COUNT:
            ok = rr_uint(ps, &h->count, INT64_MAX, "the histogram's count");
            break;
        case F_MIN:
            ok = rr_uint(ps, &h->min, INT64_MAX, "the histogram's min");
            break;
        case F_MAX:
            ok = rr_uint(ps, &h->max, INT64_MAX, "the histogram's max");
            break;
        case F_SUM:
            ok = hist_read_sum(ps, &h->sum, "the histogram's sum");
            break;
        case F_SUM_SQ:
            ok = hist_read_sum(ps, &h->sum_sq, "the histogram's sum_sq");
            break;
        default:
            ok = hist_read_buckets(ps, h, &last, &total, &first);
        }
        if (!ok)
            return false;
    }
    if (k < 0)
        return false;
    const unsigned char *end = ps->r.p;
    ps->r.p = start;
    if (seen != (1u << F_N) - 1)
        return rr_fail(ps, "byte %zu: %s", "the histogram lacks one of unit, count, min, max, "
                                          "sum, sum_sq, buckets");
    bool consistent;
    if (h->count == 0)
        consistent = !h->min && !h->max && !h->sum && !h->sum_sq;
    else
        consistent = total == h->count && h->min <= h->max && hist_bucket(h->min) == first &&
                     hist_bucket(h->max) == last &&
                     h->sum >= (unsigned __int128)h->count * h->min &&
                     h->sum <= (unsigned __int128)h->count * h->max;
    if (total != h->count || !consistent)
        return rr_fail(ps, "byte %zu: %s", "the histogram's buckets, count, min, max and sum "
                                          "do not agree");
    ps->r.p = end;
    return true;
}
