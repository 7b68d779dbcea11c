/* hist.h - a log-linear histogram of non-negative integer samples (latencies
 * in nanoseconds, say), in the manner of HdrHistogram: exact below 256, and
 * above that 128 equal sub-buckets per power of two, so any recorded value is
 * known to within 1/256 of itself (better than 2 significant digits) up to
 * HIST_MAX (about 137 s in nanoseconds).
 *
 * Recording is O(1) with no allocation. Count, min, max, and the sums behind
 * mean and stddev are exact; percentiles come from the buckets. Histograms
 * merge by adding counts, so per-thread histograms combine into exactly the
 * histogram of all samples: merge them, never average their percentiles.
 *
 * Not thread-safe: one histogram per thread, merged after the threads end.
 */
#ifndef SHOOTOUT_HIST_H
#define SHOOTOUT_HIST_H

#include <stdbool.h>
#include <stdint.h>

struct json;
struct rr;

#define HIST_SUB_BITS 7 /* 128 sub-buckets per power of two */
#define HIST_MAX_BITS 37
/* Largest value kept apart; larger samples share the top bucket (their
 * exact value still counts in max, mean and stddev). */
#define HIST_MAX ((UINT64_C(1) << HIST_MAX_BITS) - 1)
#define HIST_BUCKETS (((HIST_MAX_BITS - HIST_SUB_BITS) + 1) << HIST_SUB_BITS)

struct hist {
    uint64_t count;
    uint64_t min, max; /* valid when count > 0 */
    /* Exact sums; 128 bits so that even 2^32 samples of HIST_MAX fit
     * (the squares need 106 bits). */
    unsigned __int128 sum, sum_sq;
    uint64_t buckets[HIST_BUCKETS];
};

/* Empties h (a zeroed struct hist is also empty). */
void hist_reset(struct hist *h);
void hist_record(struct hist *h, uint64_t v);
/* Adds every sample of src to dst. */
void hist_merge(struct hist *dst, const struct hist *src);

/* The value at percentile p (0 < p <= 100): the bucket holding the sample
 * of rank ceil(p/100 * count), reported as that bucket's midpoint and
 * clamped to [min, max]. 0 for an empty histogram. */
uint64_t hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);
/* Population standard deviation of the samples. */
double hist_stddev(const struct hist *h);

/* The histogram in full, as a JSON object for the results file, so that
 * results from several processes or machines merge exactly:
 *   {"unit": "ns", "count": N, "min": A, "max": B, "sum": "S", "sum_sq": "Q",
 *    "buckets": [[index, count], ...]}
 * sparse (only the buckets with samples, by increasing index, on one line)
 * and exact (the 128-bit sums as decimal strings, which a JSON number, read
 * as a double, would round). count, min and max must be below 2^63. */
void hist_write_json(struct json *j, const struct hist *h);
/* Reads what hist_write_json wrote, at ps's position, into h, checking it
 * is one the writer could have written: every field once, bucket indices
 * increasing and in range, counts adding up to count, min and max in the
 * first and last bucket, sum between count * min and count * max. Unknown
 * fields are skipped. false with the message in ps. */
bool hist_read_json(struct rr *ps, struct hist *h);

/* The bucket v falls in, and the smallest value of a bucket; exposed for
 * the tests of the precision bound. */
unsigned hist_bucket(uint64_t v);
uint64_t hist_bucket_low(unsigned bucket);
uint64_t hist_bucket_width(unsigned bucket);

#endif
