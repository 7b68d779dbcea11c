/* merge.h - `shootout merge`: the results files of a run split over
 * several processes or machines (`shootout bench ... --shard I/N`) put
 * together into the results file of the whole run, exactly where it can
 * be: counters and CPU times summed, latency histograms added bucket by
 * bucket and the percentiles computed again from the sum (never averaged),
 * throughput as all the shards' operations over the common wall-clock
 * window (the earliest start to the latest end), the per-second series
 * summed second by second on that window (their latency buckets too,
 * report/seclat.h, each second's p50 and p99 read from the sum), and
 * http-open's own object merged by load/http/ho_merge.h. The output has the
 * schema the shards were written in (result.h), aggregates recomputed over
 * the merged repetitions.
 *
 * What cannot be merged exactly is said, not guessed: a server sampled by
 * several shards counts once (the most any shard saw); a shard's series is
 * placed by its window's start rounded to the second.
 *
 * A shard whose own CPU time over its window is at least MERGE_SATURATED of
 * one core per client thread is flagged: its figures may be the client's
 * limit rather than the server's.
 */
#ifndef SHOOTOUT_MERGE_H
#define SHOOTOUT_MERGE_H

#include <stddef.h>

#include "report/result.h"

#define MERGE_SATURATED 0.9
#define MERGE_MAX_SHARDS 64

/* One shard's results file as merge reads it: its iteration rows (the
 * aggregates are figures of them, recomputed after the merge). */
struct merge_file {
    const char *path; /* as given; not owned */
    struct result_set rows;
    /* The texts the rows point at (names of config keys, definitions),
     * owned here. */
    char **strs;
    unsigned nstrs, capstrs;
    /* The http-open reports its rows' "http_open" objects were read into
     * (load/http/ho_merge.h; a row's extra_arg), and the merged ones that
     * merge_combine hangs on the first shard's file; owned here. */
    struct ho_report **reports;
    unsigned nreports, capreports;
};

/* Reads a results document text[0..len) into f (zeroed first, path set).
 * 0, or -1 with a message in err that says where ("byte 123: ..."). */
int merge_parse(struct merge_file *f, const char *path, const char *text, size_t len, char *err,
                size_t errlen);
/* The same from the file; the message names the file. */
int merge_load(struct merge_file *f, const char *path, char *err, size_t errlen);
void merge_file_free(struct merge_file *f);

/* Merges the n shards' files into out (iteration rows, then the
 * aggregates of each point with more than one repetition). The rows of out
 * point at the files' texts and reports: free out before the files. Refuses files that
 * are not shards, shards of different runs (another experiment, command
 * or count of shards, or a different --start-at), an index given twice or
 * one missing. 0, or -1 with a message in err. A saturated shard is
 * flagged in the merged rows' shard.saturated, and said in warn (one line
 * each, "" for none). */
int merge_combine(struct merge_file *files, unsigned n, struct result_set *out,
                  char *warn, size_t warnlen, char *err, size_t errlen);

#endif
