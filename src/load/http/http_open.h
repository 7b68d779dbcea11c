/* http_open.h - `shootout bench http-open`: a Gatling-style HTTP load test.
 * Virtual users walk a scenario (scenario.h), started by an open or closed
 * injection profile (inject.h), each over its own keep-alive connection
 * (http_client.h) or a pool its thread shares, on --threads event loops.
 * Reported: per-request-name and global statistics, errors by class (the
 * load generator's own failures apart), a per-second series (active users,
 * requests/s, responses/s OK and KO, p95) and the saturation point
 * computed from it, statistics per load level, and the server's (and
 * optionally its PostgreSQL server's) CPU, RSS and threads.
 * docs/http_open.md defines every figure.
 */
#ifndef SHOOTOUT_HTTP_OPEN_H
#define SHOOTOUT_HTTP_OPEN_H

#include <stdbool.h>
#include <stdint.h>

#include "load/bench.h"
#include "load/http/inject.h"
#include "load/http/scenario.h"
#include "report/result.h"

int http_open_main(int argc, char **argv, const struct result_context *ctx);

/* A test as the CLI runs it, for a caller that sets it up itself
 * (shootout run). http_open_test_init sets the CLI's defaults; the caller
 * sets scn and prof, which must outlive the test. */
struct ho_report;
struct http_open_test {
    const struct scenario *scn;
    const struct inj_profile *prof; /* unscaled: durations are divided by time_scale */
    double time_scale;              /* > 0 */
    double max_duration_s;          /* before time_scale (default 2000) */
    double request_timeout_s, connect_timeout_s;
    uint64_t seed;
    unsigned sat_window; /* seconds, the saturation rule's w */
    unsigned share_connections; /* per thread (--share-connections); 0: one per user */
    /* --until-saturated: an open profile stops at the end of the level
     * after which the level rule (ho_level_saturation) finds the server
     * saturated; its later levels never run. */
    bool until_saturated;
    /* --pg-sample: also sample this PostgreSQL server, named by its
     * postmaster's pid or a connection string (pg_probe.h); NULL: none */
    const char *pg_sample;
    bool pg_sample_optional; /* a server pg_sample cannot find is left out, not an error */
    /* Every run's merged results, newest first: the rows' JSON refers to
     * them, so http_open_test_free comes after the rows are written. */
    struct ho_report *reports;
};

void http_open_test_init(struct http_open_test *t);
/* The reference's `rampUsersPerSec(100).to(200).during(1000 s).randomized()`. */
void http_open_reference_profile(struct inj_profile *p);

/* Runs t o->runs times against o's host and port on o->threads loops,
 * sampling o->server_pid, and appends the rows (named after o->target) to
 * rows; with o->brief the console report goes to stderr. Returns the exit
 * code, as `shootout bench http-open`. */
int http_open_exec(const struct bench_opts *o, struct http_open_test *t,
                   const struct result_context *ctx, struct result_set *rows);

/* The last run's global figures, in the terms of the reference's table
 * (docs/http_open.md defines each). */
struct http_open_summary {
    double requests, ko, ko_generator; /* ko includes ko_generator */
    double rps, p95_ms, duration_s;
    double users_started, users_done, active_max;
    /* The saturation point (docs/http_open.md, Metrics): the active users
     * at its second (the reference's reading), the second, the profile's
     * load then (users/s, or concurrent users in a closed profile), the
     * level it falls in (an index into http_open_last_levels' levels; the
     * last is the time after the profile), the requests sent per second
     * in the window from it, and what showed it: "backlog" or "failures".
     * All -1 (the cause NULL) when not reached. */
    double saturation_users, saturation_s, saturation_load, saturation_rps;
    int saturation_level;
    const char *saturation_cause;
    /* The level rule's verdict (ho_level_saturation) on the levels: the
     * index of the first saturated level in http_open_last_levels' levels,
     * or -1; and the level --until-saturated stopped the profile after
     * (-1: it ran to its end). */
    int level_saturation, stopped_after_level;
    double server_cpu_pct, server_rss_kb, server_threads;
    bool pg;
    double pg_cpu_pct;
};

/* false if t has not run. */
bool http_open_last_summary(const struct http_open_test *t, struct http_open_summary *s);

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

/* The last run's levels, the time after the profile last, into out (up to
 * max of them); returns how many it has (0 if t has not run). */
unsigned http_open_last_levels(const struct http_open_test *t, struct http_open_level *out,
                               unsigned max);
void http_open_test_free(struct http_open_test *t);

enum ho_sat_cause { HO_SAT_NONE, HO_SAT_BACKLOG, HO_SAT_FAILURES };

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


/* Polls http://host:port/path with GET until it answers 200, at most
 * timeout_s, while process pid (our child) runs; it is not reaped. Returns
 * whether it answered 200. */
bool http_open_wait_ready(const char *host, int port, const char *path, double timeout_s, int pid);

#endif
