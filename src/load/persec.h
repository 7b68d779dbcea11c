/* persec.h - a closed run's per-second series (report/result.h's
 * result_point), sampled from counters the run keeps anyway: the caller
 * hands in its count of completed operations at its watchdog ticks (every
 * 100 ms or so), and each second that has passed becomes a point. Nothing
 * happens per operation, so the hot path pays nothing; a run that wants
 * latency per second records its samples into lat as well (one more
 * hist_record per operation) and gets p50 and p99 for each second.
 *
 * A second's rate is the operations counted between the two ticks that
 * bound it, divided by the time between them: a tick late by some
 * milliseconds moves that time, not the rate.
 */
#ifndef SHOOTOUT_PERSEC_H
#define SHOOTOUT_PERSEC_H

#include <stdbool.h>
#include <stdint.h>

#include "report/hist.h"
#include "report/result.h"

struct persec {
    uint64_t mark_ns, mark_count; /* the current second's start */
    struct result_point *pts;
    unsigned n, cap;
    bool with_latency;
    struct hist lat; /* nanoseconds, the current second's; with_latency only */
};

/* Starts a series at now_ns with count operations done so far. */
void persec_start(struct persec *s, uint64_t now_ns, uint64_t count, bool with_latency);
/* Closes the second under way if one has passed since it began. */
void persec_tick(struct persec *s, uint64_t now_ns, uint64_t count);
/* Closes the last (partial, if at least 100 ms long) second, gives the
 * series to row (result_set_series) and frees s's. */
void persec_finish(struct persec *s, uint64_t now_ns, uint64_t count, struct result_row *row);

#endif
