/* seclat.h - a second's latencies as a small histogram that merges: 8
 * buckets per power of two of microseconds (exact below 16 us), so a
 * bucket's midpoint is within 1/16 (6.25 %) of any latency in it, up to
 * about 2^41 us. The per-second series keep one per second (http-open's
 * ho_series.h, the closed runs' load/persec.h) and write it sparse in the
 * JSON, so that `shootout merge` adds the shards' seconds bucket by
 * bucket and takes each second's percentiles from the sum, never from
 * averaged percentiles.
 */
#ifndef SHOOTOUT_SECLAT_H
#define SHOOTOUT_SECLAT_H

#include <stdbool.h>
#include <stdint.h>

struct json;
struct rr;

#define SECLAT_BUCKETS 304

/* The bucket of a latency of us microseconds; inline, as every answer
 * lands in one. */
static inline unsigned seclat_bucket(uint64_t us)
{
    if (us < 16)
        return (unsigned)us;
    unsigned msb = 63u - (unsigned)__builtin_clzll(us);
    unsigned b = 16 + (msb - 4) * 8 + (unsigned)((us >> (msb - 3)) & 7);
    return b < SECLAT_BUCKETS ? b : SECLAT_BUCKETS - 1;
}

/* The percentile p (0 < p <= 100) of the buckets in milliseconds: the
 * midpoint of the bucket holding the sample of rank ceil(p/100 * count);
 * 0 when they are empty. */
double seclat_percentile_ms(const uint32_t *lat, double p);

/* The buckets sparse, on one line: [[bucket, count], ...]. */
void seclat_write_json(struct json *j, const uint32_t *lat);
/* Reads what seclat_write_json wrote, at ps's position, into lat (which
 * the caller zeroed): indices increasing and in range. false with the
 * message in ps. */
bool seclat_read_json(struct rr *ps, uint32_t *lat);

#endif
