/* http_open.c - `shootout bench http-open`: the command line, and the test
 * as a caller sets it up (http_open_exec: the settings into the engine's,
 * o->runs runs through bench_repeat, each one's report kept for the rows'
 * JSON and for http_open_last_summary and http_open_last_levels).
 *
 * The rest of the tool: ho_engine.c (users, connections, threads),
 * ho_run.c (one run: threads, sampling, --until-saturated), ho_report.c
 * (the merged figures, the console summary, the JSON), ho_series.c (the
 * per-second series and the saturation rules), inject.c (the profiles)
 * and scenario.c (the scenarios).
 */
#include "load/http/http_open.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/textfile.h"
#include "load/http/ho_engine.h"
#include "load/http/ho_report.h"
#include "load/http/ho_run.h"
#include "load/pg_probe.h"
#include "report/hist.h"

static const char usage[] =
    "usage: shootout bench http-open [options]\n"
    "\n"
    "A Gatling-style HTTP load test. Virtual users walk a scenario (by default\n"
    "the a2b journey: 14 requests with pauses, ids picked from earlier answers),\n"
    "each over its own keep-alive HTTP/1.1 connection (or a shared pool), started\n"
    "by an injection profile: open (users arrive at a rate, whatever the server\n"
    "does) or closed (a number of users alive at once). See docs/http_open.md.\n"
    "\n"
    "Reported: per request name and overall, count, OK/KO, min/mean/max and\n"
    "p50/p75/p95/p99 response time, requests/s; errors by class (HTTP status,\n"
    "timeout, connect, premature close, protocol, check) with the generator's\n"
    "own failures (out of descriptors or ports, unset variables) counted apart;\n"
    "a per-second series (active users, requests/s, responses/s OK and KO, p95)\n"
    "and the saturation point read from it; statistics per load level (each\n"
    "step, and each level and ramp of a staircase); with --server-pid the\n"
    "server's CPU %, peak RSS and threads, with --pg-sample the CPU % and memory\n"
    "of the PostgreSQL server behind it.\n"
    "\n"
    "options:\n"
    "  --target URL          server, http://HOST:PORT (default http://127.0.0.1:8080)\n"
    "  --scenario a2b|FILE   the built-in a2b journey (default) or a scenario file\n"
    "  --inject STEP         an injection step; repeat for a sequence. Open steps:\n"
    "                          nothing-for D | at-once N | ramp-users N D |\n"
    "                          constant-users-per-sec R D [randomized] |\n"
    "                          ramp-users-per-sec R1 R2 D [randomized] |\n"
    "                          increment-users-per-sec INC LEVELS D [ramp D2]\n"
    "                            [from R0] [randomized]  (a staircase: LEVELS\n"
    "                            levels of D at R0, R0+INC, ... users/s, or INC,\n"
    "                            2*INC, ... without from; ramps of D2 between)\n"
    "                        closed steps (never mixed with open ones):\n"
    "                          constant-concurrent-users N D |\n"
    "                          ramp-concurrent-users N1 N2 D |\n"
    "                          increment-concurrent-users INC LEVELS D [ramp D2]\n"
    "                            [from N0]\n"
    "                        D is a duration with unit: 500ms, 10s, 2m, 1h\n"
    "                        (default: the reference's\n"
    "                        'ramp-users-per-sec 100 200 1000s randomized')\n"
    "  --time-scale F        divide every duration and pause by F (> 0) for a\n"
    "                        short run of the same rate and shape (default 1)\n"
    "  --max-duration D      stop users still running after D (default 2000s,\n"
    "                        divided by --time-scale)\n"
    "  --threads T           event-loop threads (default 1)\n"
    "  --request-timeout D   fail a request not answered within D (default 60s)\n"
    "  --connect-timeout D   fail a connect not done within D (default 10s)\n"
    "  --saturation-window S the saturation rule's window in seconds (default 5):\n"
    "                        the server counts as saturated once it falls behind\n"
    "                        its demand over two such windows in a row\n"
    "  --until-saturated     open profiles: stop arriving users at the end of the\n"
    "                        level after which the level rule finds the server\n"
    "                        saturated (answers behind arrivals and p95 doubled,\n"
    "                        or failures), so that a staircase climbs only as\n"
    "                        far as the server's capacity\n"
    "  --seed S              seed of arrivals, pauses, feeders and picks (default 1)\n"
    "  --share-connections N users share a pool of N keep-alive connections per\n"
    "                        thread (Gatling's shareConnections) instead of one\n"
    "                        each; a request waits in line for a free one, and\n"
    "                        its response time counts the wait\n"
    "  --pg-sample PID|URI   also sample the PostgreSQL server whose postmaster\n"
    "                        has pid PID, or that the libpq connection string\n"
    "                        or URI reaches (it must run on this machine): the\n"
    "                        postmaster and its children, exited ones included\n"
    BENCH_HELP_RUNS BENCH_HELP_JSON BENCH_HELP_SERVER
    "\n"
    "Exit codes: 0 the test ran (KOs are results, not failures), 1 it could not\n"
    "run (nothing answered at all) or a queue feeder ran dry, 2 usage error.\n";

#define HO_DEFAULT_PORT 8080
#define HO_MAX_SHARED 100000
#define HO_REFERENCE_INJECT "ramp-users-per-sec 100 200 1000s randomized"

/* ---- the CLI ------------------------------------------------------------ */

enum {
    OPT_SCENARIO = 2000,
    OPT_INJECT,
    OPT_TIME_SCALE,
    OPT_MAX_DURATION,
    OPT_REQUEST_TIMEOUT,
    OPT_CONNECT_TIMEOUT,
    OPT_SAT_WINDOW,
    OPT_SEED,
    OPT_PG,
    OPT_SHARE,
    OPT_UNTIL_SATURATED,
};

static int parse_duration_opt(const struct bench_opts *o, const char *opt, const char *arg,
                              double *out)
{
    if (inj_parse_duration(arg, strlen(arg), out) && *out > 0)
        return 0;
    return bench_usage_error(o, "%s wants a duration above 0 with its unit (500ms, 10s, 2m), not '%s'",
                             opt, arg);
}

static int load_scenario(const struct bench_opts *o, const char *arg, struct scenario *scn)
{
    char err[256];
    if (!strcmp(arg, "a2b")) {
        if (scn_parse(scn_a2b_text, strlen(scn_a2b_text), scn, err, sizeof err) < 0)
            return bench_usage_error(o, "built-in scenario: %s", err);
        return 0;
    }
    char *text;
    size_t len;
    if (textfile_read(arg, &text, &len, err, sizeof err) < 0)
        return bench_usage_error(o, "--scenario: %s", err);
    int rc = scn_parse(text, len, scn, err, sizeof err);
    mem_free(text);
    if (rc < 0)
        return bench_usage_error(o, "%s: %s", arg, err);
    return 0;
}

int http_open_main(int argc, char **argv, const struct result_context *ctx)
{
    static const struct option longopts[] = {
        {"scenario", required_argument, NULL, OPT_SCENARIO},
        {"inject", required_argument, NULL, OPT_INJECT},
        {"time-scale", required_argument, NULL, OPT_TIME_SCALE},
        {"max-duration", required_argument, NULL, OPT_MAX_DURATION},
        {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
        {"saturation-window", required_argument, NULL, OPT_SAT_WINDOW},
        {"seed", required_argument, NULL, OPT_SEED},
        {"pg-sample", required_argument, NULL, OPT_PG},
        {"share-connections", required_argument, NULL, OPT_SHARE},
        {"until-saturated", no_argument, NULL, OPT_UNTIL_SATURATED},
        {"threads", required_argument, NULL, BENCH_OPT_THREADS},
        BENCH_LONGOPTS_COMMON,
        {NULL, 0, NULL, 0},
    };
    struct bench_opts o;
    bench_opts_init(&o, "http-open", usage);
    o.port = HO_DEFAULT_PORT;
    o.target_arg = "127.0.0.1";
    struct http_open_test t;
    http_open_test_init(&t);
    const char *scn_arg = "a2b";
    struct inj_profile prof = {0};
    struct scenario scn = {0};
    char err[256];
    uint64_t v;
    int c, rc = -1;
    optind = 1;
    while (rc < 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_SCENARIO:
            scn_arg = optarg;
            break;
        case OPT_INJECT: {
            struct inj_step st;
            if (inj_parse_step(optarg, strlen(optarg), &st, err, sizeof err) < 0 ||
                inj_profile_add(&prof, &st, err, sizeof err) < 0)
                rc = bench_usage_error(&o, "--inject: %s", err);
            break;
        }
        case OPT_TIME_SCALE: {
            char *end;
            errno = 0;
            t.time_scale = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(t.time_scale > 0) || t.time_scale > 1e6)
                rc = bench_usage_error(&o, "--time-scale wants a number above 0, not '%s'", optarg);
            break;
        }
        case OPT_MAX_DURATION:
            if (parse_duration_opt(&o, "--max-duration", optarg, &t.max_duration_s))
                rc = BENCH_EXIT_USAGE;
            break;
        case OPT_REQUEST_TIMEOUT:
            if (parse_duration_opt(&o, "--request-timeout", optarg, &t.request_timeout_s))
                rc = BENCH_EXIT_USAGE;
            break;
        case OPT_CONNECT_TIMEOUT:
            if (parse_duration_opt(&o, "--connect-timeout", optarg, &t.connect_timeout_s))
                rc = BENCH_EXIT_USAGE;
            break;
        case OPT_SAT_WINDOW:
            if (bench_parse_uint(&o, "--saturation-window", optarg, 1, 3600, &v))
                rc = BENCH_EXIT_USAGE;
            t.sat_window = (unsigned)v;
            break;
        case OPT_SEED:
            if (bench_parse_uint(&o, "--seed", optarg, 0, UINT64_MAX, &t.seed))
                rc = BENCH_EXIT_USAGE;
            break;
        case OPT_PG:
            t.pg_sample = optarg;
            break;
        case OPT_UNTIL_SATURATED:
            t.until_saturated = true;
            break;
        case OPT_SHARE:
            if (bench_parse_uint(&o, "--share-connections", optarg, 1, HO_MAX_SHARED, &v))
                rc = BENCH_EXIT_USAGE;
            t.share_connections = (unsigned)v;
            break;
        case BENCH_OPT_TARGET:
            /* http://host:port[/]: the scheme and a bare slash are optional. */
            o.target_arg = optarg;
            if (!strncmp(o.target_arg, "http://", 7))
                o.target_arg += 7;
            else if (strstr(o.target_arg, "://"))
                rc = bench_usage_error(&o, "--target: only http:// is supported");
            if (rc < 0 && o.target_arg[0] && o.target_arg[strlen(o.target_arg) - 1] == '/') {
                static char trimmed[256];
                snprintf(trimmed, sizeof trimmed, "%.*s", (int)strlen(o.target_arg) - 1,
                         o.target_arg);
                o.target_arg = trimmed;
            }
            break;
        default:
            rc = bench_parse_option(&o, c, optarg);
        }
    }
    if (rc >= 0)
        return rc;
    if (prof.n == 0)
        http_open_reference_profile(&prof);
    if (t.until_saturated && inj_profile_closed(&prof))
        return bench_usage_error(&o, "--until-saturated needs an open profile (users/s): "
                                     "the level rule reads arrival rates");
    rc = load_scenario(&o, scn_arg, &scn);
    if (rc)
        return rc;
    rc = bench_finish_options(&o, argc, argv, 1);
    if (rc) {
        scn_free(&scn);
        return rc;
    }
    t.scn = &scn;
    t.prof = &prof;
    struct result_set rows = {0};
    rc = http_open_exec(&o, &t, ctx, &rows);
    rc = bench_finish(&o, ctx, &rows, rc);
    http_open_test_free(&t);
    scn_free(&scn);
    return rc;
}

void http_open_reference_profile(struct inj_profile *p)
{
    struct inj_step st;
    char err[128];
    *p = (struct inj_profile){0};
    inj_parse_step(HO_REFERENCE_INJECT, strlen(HO_REFERENCE_INJECT), &st, err, sizeof err);
    inj_profile_add(p, &st, err, sizeof err);
}

void http_open_test_init(struct http_open_test *t)
{
    *t = (struct http_open_test){
        .time_scale = 1,
        .max_duration_s = 2000,
        .request_timeout_s = 60,
        .connect_timeout_s = 10,
        .seed = 1,
        .sat_window = 5,
    };
}

int http_open_exec(const struct bench_opts *o, struct http_open_test *t,
                   const struct result_context *ctx, struct result_set *rows)
{
    struct inj_profile prof = *t->prof;
    inj_profile_scale(&prof, t->time_scale);
    struct ho_run_args a = {
        .cfg = {
            .scn = t->scn,
            .prof = &prof,
            .host = o->host,
            .port = o->port,
            .threads = o->threads,
            .time_scale = t->time_scale,
            .max_duration_s = t->max_duration_s / t->time_scale,
            .request_timeout_ms = (unsigned)ceil(t->request_timeout_s * 1000),
            .connect_timeout_ms = (unsigned)ceil(t->connect_timeout_s * 1000),
            .seed = t->seed,
            .share_connections = t->share_connections,
            .until_saturated = t->until_saturated && !inj_profile_closed(t->prof),
        },
        .sat_window = t->sat_window,
    };
    ho_cfg_levels(&a.cfg, &prof);
    /* Any connection may carry a request that extracts. */
    for (unsigned i = 0; i < t->scn->nsteps; i++)
        a.cfg.keep_bodies |= t->scn->steps[i].kind == SCN_REQUEST && t->scn->steps[i].req.nextract;
    char err[512];
    if (t->pg_sample && pg_probe_find(t->pg_sample, "/proc", &a.pg_postmaster, err, sizeof err) < 0) {
        fprintf(stderr, "shootout bench http-open: --pg-sample %s: %s%s\n", t->pg_sample, err,
                t->pg_sample_optional ? " (measuring without it)" : "");
        if (!t->pg_sample_optional)
            return BENCH_EXIT_RUNTIME;
        a.pg_postmaster = 0;
    }
    signal(SIGPIPE, SIG_IGN);

    struct result_row tmpl = {0};
    tmpl.experiment = "http-open";
    snprintf(tmpl.name, sizeof tmpl.name, "http-open/%s/%s", o->target, t->scn->name);
    snprintf(tmpl.target, sizeof tmpl.target, "%s", o->target);
    tmpl.throughput_def = "requests answered (OK or KO) per second of the whole run";
    tmpl.op_def = "one HTTP request";
    tmpl.op_unit = "req";
    result_param(&tmpl, "threads", o->threads);
    result_param(&tmpl, "time_scale", t->time_scale);
    result_param(&tmpl, "users_planned", inj_profile_users(&prof));
    result_param(&tmpl, "profile_s", inj_profile_duration(&prof));
    result_param(&tmpl, "max_duration_s", a.cfg.max_duration_s);
    result_param(&tmpl, "closed_model", inj_profile_closed(&prof));
    result_param(&tmpl, "seed", (double)t->seed);
    result_param(&tmpl, "share_connections", t->share_connections);
    result_param(&tmpl, "until_saturated", a.cfg.until_saturated);

    int rc = bench_repeat(o, ctx, &tmpl, ho_run, &a, rows);
    /* Newest first, behind any earlier exec's. */
    struct ho_report **tail = &a.reports;
    while (*tail)
        tail = &(*tail)->next;
    *tail = t->reports;
    t->reports = a.reports;
    return rc;
}

bool http_open_last_summary(const struct http_open_test *t, struct http_open_summary *s)
{
    const struct ho_report *rep = t->reports;
    if (!rep)
        return false;
    uint64_t gen = 0;
    for (unsigned e = 0; e < HO_ERR_COUNT; e++)
        if (ho_err_is_generator(e))
            gen += rep->errs[e];
    double active_max = 0;
    for (unsigned i = 0; i < rep->nsecs; i++)
        active_max = fmax(active_max, rep->points[i].active);
    bool sat = rep->saturation_s >= 0;
    *s = (struct http_open_summary){
        .requests = (double)rep->all.h.count,
        .ko = (double)rep->all.ko,
        .ko_generator = (double)gen,
        .rps = rep->duration_s > 0 ? (double)rep->all.h.count / rep->duration_s : 0,
        .p95_ms = (double)hist_percentile(&rep->all.h, 95) / 1e6,
        .duration_s = rep->duration_s,
        .users_started = (double)rep->users_started,
        .users_done = (double)rep->users_done,
        .active_max = active_max,
        .saturation_users = sat ? rep->points[rep->saturation_s].active : -1,
        .saturation_s = sat ? rep->saturation_s : -1,
        .saturation_load = sat ? rep->saturation_load : -1,
        .saturation_rps = sat ? rep->saturation_rps : -1,
        .saturation_level = sat ? (int)rep->saturation_level : -1,
        .saturation_cause = sat ? ho_sat_cause_name(rep->saturation_cause) : NULL,
        .level_saturation = rep->level_sat.level,
        .stopped_after_level = rep->stopped_after,
        .server_cpu_pct = rep->server_cpu_pct,
        .server_rss_kb = rep->server_rss_kb,
        .server_threads = rep->server_threads,
        .pg = rep->pg,
        .pg_cpu_pct = rep->pg_cpu_pct,
    };
    return true;
}

unsigned http_open_last_levels(const struct http_open_test *t, struct http_open_level *out,
                               unsigned max)
{
    const struct ho_report *rep = t->reports;
    if (!rep)
        return 0;
    for (unsigned i = 0; i < rep->nlevels && i < max; i++)
        out[i] = rep->levels[i];
    return rep->nlevels;
}

void http_open_test_free(struct http_open_test *t)
{
    while (t->reports) {
        struct ho_report *next = t->reports->next;
        ho_report_free(t->reports);
        t->reports = next;
    }
}
