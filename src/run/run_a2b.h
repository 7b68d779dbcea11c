/* run_a2b.h - the a2b part of `shootout run`: the Gatling article's
 * experiment (load-testing notes §1) against our a2b-server on SQLite and,
 * where PostgreSQL can run, on PostgreSQL and against each chosen a2b
 * contender (contender.h: a2b-node, a2b-spring) on the same database. For each: boot-up time, then
 * the reference's open-model journey (http_open.h) with its profile's
 * durations and pauses divided by a time scale; then the article's table
 * (build time, artifact size, boot-up, total requests, KO %, RPS, p95,
 * saturation point, RAM, CPU, threads, PostgreSQL CPU) with the article's
 * published Spring and Quarkus rows quoted beneath, marked as such. Then,
 * on PostgreSQL, the capacity race: the journey under a staircase of
 * arrival rates against ours and each contender in turn, each climbing it
 * until the level rule (ho_level_saturation) finds it saturated or the
 * staircase's top, the ceiling, is reached; compared level by level, with
 * each one's saturation level and peak.
 */
#ifndef SHOOTOUT_RUN_A2B_H
#define SHOOTOUT_RUN_A2B_H

#include <stdbool.h>
#include <stdio.h>

#include "load/http/http_open.h"
#include "report/result.h"
#include "run/contender.h"

struct run_a2b_opts {
    double time_scale; /* the profile's durations and pauses are divided by it; 1: Gatling's */
    double data_scale; /* the data set, 1 = the reference's 200,000 users */
    const char *exe;   /* our binary, which serves `a2b-server` */
    /* An existing PostgreSQL server (postgres://...), "none" for none, or
     * NULL: a temporary one when PostgreSQL is installed. */
    const char *pg_uri;
    /* The capacity race's profile, one open --inject step (inject.h)
     * scaled by time_scale like the journey's, or NULL: no race. */
    const char *capacity;
    /* A staircase's top level in users/s, which replaces its LEVELS (the
     * caller has checked that it is one and that it fits); 0: its own. */
    double ceiling;
    const char *version; /* ours */
    const struct contender_roster *roster; /* the a2b contenders */
    FILE *out;    /* the table; progress goes to stderr */
    const struct result_context *ctx;
    struct result_set *rows; /* the job's rows; this part's are appended */
};

struct run_a2b;

/* Measures, stops every server it started and prints the table. Returns
 * 0, 1 if a server (or PostgreSQL) could not start or died, or ours did
 * not exit 0 on SIGTERM, or 3 if a load test failed with the servers up.
 * *job receives what the appended rows' JSON refers to: free it with
 * run_a2b_free once the results are written. */
int run_a2b(const struct run_a2b_opts *o, struct run_a2b **job);
void run_a2b_free(struct run_a2b *job);

/* The capacity race's verdict on one contender, read from its levels
 * (http_open_last_levels) as the race table shows them: a row per level of
 * constant load, numbered from 1. */
struct run_a2b_verdict {
    unsigned rows;                /* 0: no level of constant load */
    unsigned row;                 /* the first saturated row, 0: none */
    double users, last_users;     /* its load, and the last row's (users/s) */
    struct ho_level_verdict level; /* the level rule's figures for it */
    double peak, peak_users;      /* the most responses/s of a row, and its load */
    unsigned peak_row;
    /* The largest p95 of a row longer than the row itself, and the row's
     * length (s); 0: none. Its answers then mostly end after it, and the
     * rows say little: the time scale is too high for that server. */
    double slow_p95_ms, slow_level_s;
};

void run_a2b_race_verdict(const struct http_open_level *levels, unsigned n,
                          struct run_a2b_verdict *v);
/* The verdict in words: "saturated at level N (X users/s): ...", or "not
 * saturated up to the ceiling X users/s" (when the last row is at the
 * ceiling, in users/s), each with the peak, and a warning when a row's
 * p95 outlasts the row. */
void run_a2b_race_text(const struct run_a2b_verdict *v, double ceiling, char *buf, size_t len);

#endif
