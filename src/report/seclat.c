/* seclat.c - a second's latency buckets (see seclat.h). */
#include "report/seclat.h"

#include <math.h>

#include "core/json.h"
#include "report/result_read.h"

/* The midpoint of a bucket, in microseconds. */
static double bucket_mid(unsigned b)
{
    if (b < 16)
        return b;
    unsigned msb = (b - 16) / 8 + 4, sub = (b - 16) % 8;
    double low = (double)((8u + sub) * (UINT64_C(1) << (msb - 3)));
    return low + (double)(UINT64_C(1) << (msb - 3)) / 2;
}

double seclat_percentile_ms(const uint32_t *lat, double p)
{
    uint64_t n = 0;
    for (unsigned b = 0; b < SECLAT_BUCKETS; b++)
        n += lat[b];
    if (!n)
        return 0;
    uint64_t rank = (uint64_t)ceil(p / 100 * (double)n), seen = 0;
    if (rank < 1)
        rank = 1;
    for (unsigned b = 0; b < SECLAT_BUCKETS; b++) {
        seen += lat[b];
        if (seen >= rank)
            return bucket_mid(b) / 1e3;
    }
    return 0;
}

void seclat_write_json(struct json *j, const uint32_t *lat)
{
    json_flat(j, true);
    json_array_begin(j);
    for (unsigned b = 0; b < SECLAT_BUCKETS; b++)
        if (lat[b]) {
            json_array_begin(j);
            json_int(j, b);
            json_int(j, lat[b]);
            json_array_end(j);
        }
    json_array_end(j);
    json_flat(j, false);
}

bool seclat_read_json(struct rr *ps, uint32_t *lat)
{
    if (!rr_array(ps, "lat_us_buckets"))
        return false;
    int e;
    int64_t last = -1;
    while ((e = jr_next(&ps->r)) == 1) {
        uint64_t b = 0, n = 0;
        if (!rr_array(ps, "a latency bucket") || jr_next(&ps->r) != 1 ||
            !rr_uint(ps, &b, SECLAT_BUCKETS - 1, "a bucket index") || jr_next(&ps->r) != 1 ||
            !rr_uint(ps, &n, UINT32_MAX, "a bucket's count") || jr_next(&ps->r) != 0)
            return rr_fail(ps, "byte %zu: %s", "a latency bucket that is not [index, count]");
        if ((int64_t)b <= last)
            return rr_fail(ps, "byte %zu: %s", "latency buckets out of order");
        last = (int64_t)b;
        lat[b] = (uint32_t)n;
    }
    return e == 0 || rr_reader_failed(ps);
}
