/* ho_run.h - one run of an http-open test, as bench_repeat calls it:
 * starts the engine's threads (ho_engine.h), samples the server (and its
 * PostgreSQL server) while they run, stops the profile at the end of the
 * first saturated level under --until-saturated, and turns the threads'
 * figures into the run's report (ho_report.h) and its result row.
 */
#ifndef SHOOTOUT_HO_RUN_H
#define SHOOTOUT_HO_RUN_H

#include "load/bench.h"
#include "load/http/ho_engine.h"
#include "load/http/ho_report.h"
#include "report/result.h"

/* What every run of a test shares: the run_fn's arg. */
struct ho_run_args {
    struct ho_cfg cfg;
    int pg_postmaster; /* 0: no PostgreSQL to sample */
    unsigned sat_window;
    struct ho_report *reports; /* every run's, newest first */
};

/* Run rep of the test arg (a bench_run_fn): fills row and pushes the run's
 * report onto a->reports; prints the console summary (on stderr with
 * o->brief or JSON on stdout). Returns the exit code. */
int ho_run(const struct bench_opts *o, void *arg, unsigned rep, struct result_row *row);

#endif
