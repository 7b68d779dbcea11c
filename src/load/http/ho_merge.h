/* ho_merge.h - http-open's part of `shootout merge` (report/merge.h): the
 * "http_open" object of a shard's result row read back into a report
 * (ho_report.h), and the shards' reports put together into the report of
 * the whole run. Exact where the figures are counts and histograms: per
 * request name, errors by class and status, each second's counts and
 * latency buckets (summed by wall-clock second), each load level's counts
 * and histogram; recomputed from those where they are figures of them:
 * percentiles, rates, the series' active users and p95, and both
 * saturation rules. The server's figures are the most any shard saw, as
 * merge.c takes the row's.
 */
#ifndef SHOOTOUT_HO_MERGE_H
#define SHOOTOUT_HO_MERGE_H

#include <stddef.h>

struct rr;
struct ho_report;

/* The "http_open" object at ps's position into a new report (free it with
 * ho_merge_free), checked as far as the merge relies on it: counts whole
 * and not negative, histograms as hist_read_json checks them, buckets in
 * range. NULL with the message in ps. */
struct ho_report *ho_merge_read(struct rr *ps);

/* The report of the whole run from the shards' in[0..n): off[i] is the
 * merged window's second at which shard i's series begins, duration_s the
 * merged window. NULL with a message in err when they are not parts of one
 * run (another scenario, its request names, or other load levels). */
struct ho_report *ho_merge_reports(const struct ho_report *const *in, const unsigned *off,
                                   unsigned n, double duration_s, char *err, size_t errlen);

/* Frees a report of ho_merge_read or ho_merge_reports (and the names it
 * owns). */
void ho_merge_free(struct ho_report *rep);

#endif
