/* ho_report.h - one http-open run's report: the threads' figures merged
 * (per request name and overall, errors by class, the per-second series,
 * the load levels), the saturation point and the level rule's verdict read
 * from them, and the report's two forms: Gatling's console summary and the
 * "http_open" object of the result row's JSON. docs/http_open.md defines
 * every figure.
 */
#ifndef SHOOTOUT_HO_REPORT_H
#define SHOOTOUT_HO_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/json.h"
#include "load/http/ho_engine.h"
#include "load/http/ho_series.h"
#include "report/result.h"

/* The merged results of one run, kept for the JSON writer. */
struct ho_report {
    const struct scenario *scn;
    struct ho_totals tot;
    struct ho_sec *secs;
    struct result_point *points;
    unsigned nsecs;
    int saturation_s; /* -1: none */
    enum ho_sat_cause saturation_cause;
    unsigned saturation_level;        /* index into levels */
    double saturation_load;           /* the profile's load in the middle of that second */
    double saturation_rps, saturation_ok_ps; /* sent and OK per second in the window from it */
    unsigned sat_window;
    bool closed; /* the profile's model: its load is in concurrent users */
    double duration_s;
    struct http_open_level *levels; /* the time after the profile last */
    /* The levels' counts and histograms behind their figures, written in
     * the JSON for `shootout merge`. */
    struct ho_level *level_counts;
    unsigned nlevels;
    struct ho_level_verdict level_sat; /* the level rule on levels */
    bool until_saturated;
    int stopped_after; /* the level --until-saturated stopped after, -1: none */
    double server_cpu_pct, server_rss_kb, server_threads, pg_cpu_pct, pg_rss_kb;
    int pg_postmaster;
    unsigned pg_procs;
    bool pg;
    struct ho_report *next; /* every run's, freed together */
};

/* The report of a run of cfg that lasted duration_s, merged from its n
 * threads (which have all ended), with the saturation rule's window of
 * sat_window seconds. The server figures are the caller's to fill in. */
struct ho_report *ho_report_new(const struct ho_cfg *cfg, struct ho_thread *ths, unsigned n,
                                double duration_s, unsigned sat_window);
void ho_report_free(struct ho_report *rep);

/* The figures of level i of the merged lv (i = cfg->nlevels: after the
 * profile) in a run of run_s seconds. */
void ho_level_figures(const struct ho_cfg *cfg, const struct ho_level *lv, unsigned i,
                      double run_s, struct http_open_level *out);

/* The figures of a level's counts and latencies into out (the rest of
 * ho_level_figures, without the profile: what a merge of shards can
 * recompute). */
void ho_level_stats(const struct ho_level *lv, struct http_open_level *out);

/* The saturation point of rep's series (points, nsecs) with the rule's
 * window of w seconds, and the level and load at it from rep's levels
 * (rep->closed set). */
void ho_report_saturation(struct ho_report *rep, unsigned w);

/* The "http_open" member of a row's JSON (a result_row's extra_json; arg
 * is the report). */
void ho_report_json(struct json *j, const void *arg);

/* Gatling's console summary: global, per request, errors, load levels,
 * the saturation point and the level rule's verdict. */
void ho_report_print(FILE *f, const struct ho_report *rep);

#endif
