/* ho_series.h - what http-open reads from a run's figures: the per-second
 * series (requests sent, answers OK and KO, a latency histogram per second)
 * and the two saturation rules, the saturation point on the series and the
 * verdict by load level. Pure functions of the figures, no engine in sight:
 * the unit tests feed them synthetic series. docs/http_open.md (Metrics)
 * gives the reasons for every number.
 */
#ifndef SHOOTOUT_HO_SERIES_H
#define SHOOTOUT_HO_SERIES_H

#include <stdbool.h>
#include <stdint.h>

#include "report/result.h"
#include "report/seclat.h"

/* Per-second histograms (report/seclat.h): 8 buckets per power of two of
 * microseconds. */
#define HO_SEC_BUCKETS SECLAT_BUCKETS

/* One second of a run, as a thread counts it (and the merge adds up). */
struct ho_sec {
    uint32_t started, ended, sent, ok, ko, ko_gen; /* ko includes ko_gen */
    uint32_t lat[HO_SEC_BUCKETS]; /* OK responses, by end second */
};

/* Adds b's counts to a's. */
void ho_sec_add(struct ho_sec *a, const struct ho_sec *b);

/* The series of secs[0..n) into points[0..n): Gatling's active users
 * (alive before, plus started now, minus ended in the second before),
 * answers, the p95 of the OK answers, the demand and the server's KO. */
void ho_series_points(const struct ho_sec *secs, unsigned n, struct result_point *points);

enum ho_sat_cause { HO_SAT_NONE, HO_SAT_BACKLOG, HO_SAT_FAILURES };

/* "backlog", "failures" or "none". */
const char *ho_sat_cause_name(enum ho_sat_cause c);

/* The saturation point: where the server stopped keeping up with its
 * demand. The first second t, from w on, such that in each of the two
 * w-second windows from t either
 * - backlog: the requests sent but not answered grew by at least 5 % of
 *   those sent (and 10 requests), while in the second window the mean p95
 *   (weighted by OK answers) reached twice the one before t and 20 ms
 *   more; or
 * - failures: the server's KO answers exceeded the share they had before
 *   t by at least 5 % of its answers (and 10 requests).
 * Returns the first second of the window from t where that sign shows by
 * itself, or -1 (and HO_SAT_NONE) if the series never saturates; the
 * active users then are the saturation point's value. docs/http_open.md
 * gives the reasons for each number. cause may be NULL. */
int ho_saturation(const struct result_point *series, unsigned n, unsigned w, enum ho_sat_cause *cause);

/* One load level of a run (docs/http_open.md, Metrics): a segment of
 * the profile of positive length (a step, or a staircase's level or ramp),
 * or the time after the profile, when users that arrived in it still run.
 * Requests belong to the level of their intended send time, whenever they
 * end; responses_per_s counts the answers that ended inside the level. */
struct http_open_level {
    const char *kind;     /* the segment's step name (inject.h), or "after" */
    unsigned step, stair; /* the --inject step from 1 (0: after); a staircase's level from 1 */
    bool closed;          /* load in concurrent users, else in users/s */
    double load_from, load_to;
    double start_s, dur_s; /* seconds of the run (after --time-scale) */
    double users_started, requests, ok, ko, rps, responses_per_s;
    double ko_generator; /* of ko, the load generator's own failures */
    double mean_ms, p50_ms, p95_ms, p99_ms; /* over OK and KO, as the global figures */
};

/* A level the level rule judges: constant open load. */
bool ho_level_judged(const struct http_open_level *l);

/* The saturation point by level (docs/http_open.md, Metrics): the first
 * level of constant open load, after the first, at which the server no
 * longer kept up, judged from the level's own figures against those of the
 * constant levels before it (B), so that it reads the same at any time
 * scale:
 * - backlog: its requests minus the answers that ended in it reach
 *   max(5 % of its requests, 10), and its p95 reaches max(2 x P(B),
 *   P(B) + 20 ms), P(B) the mean of B's p95 weighted by their requests; or
 * - failures: the server's KO of its requests exceed B's share of KO by
 *   max(5 % of its answered requests, 10).
 * Ramps, closed levels and the time after the profile are never judged nor
 * part of B. */
struct ho_level_verdict {
    int level; /* its index in levels, -1: none */
    enum ho_sat_cause cause;
    double behind_pct;   /* requests not answered in the level, % of its requests */
    double p95_ms, base_p95_ms;
    double ko_pct, base_ko_pct; /* the server's KO, % of its answered requests */
};

/* The verdict on levels[0..n), into *v; returns v->level. */
int ho_level_saturation(const struct http_open_level *levels, unsigned n, struct ho_level_verdict *v);

#endif
