/* compare.h - `shootout compare`: two results files (result.h's JSON)
 * read back, their benchmark points matched by name, and each figure's
 * repetitions judged old against new as benchstat does: the medians, their
 * ratio, and whether the difference is significant (Mann-Whitney U, stats.h,
 * at alpha, and at least the noise threshold); points in only one file are
 * listed. compare_print.h writes the comparison.
 *
 * Only the "iteration" rows are read: the aggregates are figures of them,
 * and a test needs the repetitions themselves. An iteration that failed
 * (errors.message) is left out of its point's samples, and counted.
 */
#ifndef SHOOTOUT_COMPARE_H
#define SHOOTOUT_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The figures compared, each with the direction that is better. */
enum cmp_figure {
    CMP_THROUGHPUT, /* higher is better */
    CMP_P50,        /* latency percentiles, µs: lower is better */
    CMP_P90,
    CMP_P99,
    CMP_P99_9,
    CMP_SERVER_CPU, /* server CPU µs per operation: lower is better */
    CMP_NFIGURES
};

struct cmp_samples {
    double *v; /* owned */
    unsigned n, cap;
};

/* One benchmark point: the repetitions of one row name. */
struct cmp_point {
    char name[128];
    char unit[16]; /* the throughput's, "msg/s" */
    struct cmp_samples fig[CMP_NFIGURES];
    unsigned failed; /* iterations with errors.message, not among the samples */
};

/* One results file as compare reads it. */
struct cmp_file {
    char date[32], host[64], version[32]; /* from its context; "" when absent */
    char cpu_model[128];                  /* likewise */
    double num_cpus;                      /* NaN when absent */
    struct cmp_point *pts;                /* owned, in the file's order */
    unsigned n, cap;
};

/* Reads a results document text[0..len) into f (zeroed first). 0, or -1
 * with a message in err that says where ("byte 123: ..."). */
int cmp_parse(struct cmp_file *f, const char *text, size_t len, char *err, size_t errlen);
/* The same from the file path; the message names the file. */
int cmp_load(struct cmp_file *f, const char *path, char *err, size_t errlen);
void cmp_file_free(struct cmp_file *f);

enum cmp_verdict {
    CMP_SAME,   /* "~": not significant, or under the noise threshold */
    CMP_BETTER, /* significant, in the figure's good direction */
    CMP_WORSE,  /* significant, in its bad direction */
    CMP_FEW,    /* too few repetitions for p < alpha whatever the figures */
};

/* One figure of one point, old against new. */
struct cmp_delta {
    const struct cmp_point *old, *new; /* into the two files */
    enum cmp_figure fig;
    unsigned n_old, n_new;
    double old_median, new_median;
    double ratio;     /* new / old; NaN when old is 0 */
    double delta_pct; /* (new - old) / old in percent; NaN when old is 0 */
    double u, p;      /* Mann-Whitney's U of the new samples, and p */
    enum cmp_verdict verdict;
    bool regression; /* worse by more than fail_pct */
};

struct cmp_options {
    double alpha;     /* 0.05 */
    double noise_pct; /* differences under it are "~": 1 */
    double fail_pct;  /* a worse figure past it is a regression; < 0: none */
};

struct cmp_result {
    const char *old_path, *new_path; /* as given; not owned */
    const struct cmp_file *old, *new;
    struct cmp_options opt;
    struct cmp_delta *d; /* owned, point by point in the old file's order */
    unsigned n, cap;
    const struct cmp_point **only_old, **only_new; /* owned arrays */
    unsigned n_only_old, n_only_new;
    /* Points in both files with no figure in both (every run failed on a
     * side, say): the old file's point and the new's, in turn. */
    const struct cmp_point **unjudged; /* owned array of 2 * n_unjudged */
    unsigned n_unjudged;
    unsigned regressions; /* deltas with regression set */
    bool few;             /* some figure had too few repetitions to judge */
};

/* Whether a and b come from different machines, by what their contexts
 * both say (host name, CPU count, CPU model): if so, writes what differs
 * into msg and returns true. */
bool cmp_machines_differ(const struct cmp_file *a, const struct cmp_file *b, char *msg, size_t len);

/* Compares every point of old with the point of new of the same name.
 * old and new must outlive r. */
void cmp_compare(struct cmp_result *r, const struct cmp_file *old, const struct cmp_file *new,
                 const struct cmp_options *opt);
void cmp_result_free(struct cmp_result *r);

/* The figure's name in tables and JSON ("throughput", "p99.9"), and its
 * unit (the point's throughput unit, "us", "us/op"). */
const char *cmp_figure_name(enum cmp_figure fig);
const char *cmp_figure_unit(const struct cmp_delta *d);

#endif
