/* http_open.h - `shootout bench http-open`: a Gatling-style HTTP load test.
 * Virtual users walk a scenario (scenario.h), started by an open or closed
 * injection profile (inject.h), each over its own keep-alive connection
 * (http_client.h) or a pool its thread shares, on --threads event loops.
 * Reported: per-request-name and global statistics, errors by class (the
 * load generator's own failures apart), a per-second series (active users,
 * requests/s, responses/s OK and KO, p95) and the saturation point
 * computed from it, statistics per load level, and the server's (and
 * optionally its PostgreSQL server's) CPU, RSS and threads.
 * docs/http_open.md defines every figure. This is the tool's interface;
 * http_open.c says which file holds which part.
 */
#ifndef SHOOTOUT_HTTP_OPEN_H
#define SHOOTOUT_HTTP_OPEN_H

#include <stdbool.h>
#include <stdint.h>

#include "load/bench.h"
#include "load/http/ho_series.h"
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

/* The last run's levels, the time after the profile last, into out (up to
 * max of them); returns how many it has (0 if t has not run). */
unsigned http_open_last_levels(const struct http_open_test *t, struct http_open_level *out,
                               unsigned max);
void http_open_test_free(struct http_open_test *t);

#endif
