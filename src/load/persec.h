/* persec.h - a closed run's per-second series (report/result.h's
 * result_point), sampled from counters the run keeps anyway: the caller
 * hands in its count of completed operations at its watchdog ticks (every
 * 100 ms or so), and each second that has passed becomes a point. Nothing
 * happens per operation, so the hot path pays nothing; a run that wants
 * latency per second records its samples with persec_record as well (one
 * relaxed atomic add per operation, from any thread) and gets each
 * second's latency buckets (report/seclat.h: within 1/16 of the value),
 * their p50 and p99, which `shootout merge` can add up across shards.
 *
 * A second's rate is the operations counted between the two ticks that
 * bound it, divided by the time between them: a tick late by some
 * milliseconds moves that time, not the rate. Its latency is of the
 * operations recorded between those ticks.
 */
#ifndef SHOOTOUT_PERSEC_H
#define SHOOTOUT_PERSEC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "report/result.h"
#include "report/seclat.h"

struct persec {
    uint64_t mark_ns, mark_count; /* the current second's start */
    struct result_point *pts;
    uint32_t (*lat)[SECLAT_BUCKETS]; /* with_latency: the closed seconds' */
    unsigned n, cap;
    bool with_latency;
    /* The current second's latencies, added to by any thread, taken at
     * each close by the ticking one. */
    _Atomic uint32_t cur[SECLAT_BUCKETS];
};

/* Starts a series at now_ns with count operations done so far. */
void persec_start(struct persec *s, uint64_t now_ns, uint64_t count, bool with_latency);
/* Records an operation's latency in nanoseconds in the second under way;
 * safe from any thread while the series runs (with_latency only). */
static inline void persec_record(struct persec *s, uint64_t ns)
{
    atomic_fetch_add_explicit(&s->cur[seclat_bucket(ns / 1000)], 1, memory_order_relaxed);
}
/* Closes the second under way if one has passed since it began. */
void persec_tick(struct persec *s, uint64_t now_ns, uint64_t count);
/* Closes the last (partial, if at least 100 ms long; a shorter one's
 * latencies go to the second before) second, gives the series to row (result_set_series, and result_set_series_latency with
 * latency) and frees s's. */
void persec_finish(struct persec *s, uint64_t now_ns, uint64_t count, struct result_row *row);

#endif
