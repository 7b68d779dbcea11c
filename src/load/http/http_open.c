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

#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/mem.h"
#include "core/textfile.h"
#include "load/http/ho_engine.h"
#include "load/http/ho_report.h"
#include "load/http/ho_run.h"
#include "load/pg_probe.h"
#include "report/hist.h"

static const char ho_head[] =
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
    "\n";

static const char ho_tail[] =
    "\n"
    "Exit codes: 0 the test ran (KOs are results, not failures), 1 it could not\n"
    "run (nothing answered at all) or a queue feeder ran dry, 2 usage error.\n";

#define HO_DEFAULT_PORT 8080
#define HO_MAX_SHARED 100000
#define HO_REFERENCE_INJECT "ramp-users-per-sec 100 200 1000s randomized"

/* ---- the CLI ------------------------------------------------------------ */

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

/* The command's options: its own, then what every experiment takes. */
struct ho_cmd {
    struct bench_opts b;
    struct http_open_test t;
    const char *scenario;
    struct inj_profile prof;
};

/* --target http://host:port[/]: the scheme and a bare slash are optional. */
static int ho_set_target(const struct opt *opt, void *base, const char *name, const char *value,
                         char *err, size_t errlen)
{
    struct ho_cmd *c = base;
    const char *t = value;
    if (!strncmp(t, "http://", 7)) {
        t += 7;
    } else if (strstr(t, "://")) {
        return opt_fail(err, errlen, "%s: only http:// is supported", name);
    }
    if (t[0] && t[strlen(t) - 1] == '/') {
        static char trimmed[256];
        snprintf(trimmed, sizeof trimmed, "%.*s", (int)strlen(t) - 1, t);
        t = trimmed;
    }
    c->b.target_arg = t;
    return 0;
}

/* --inject STEP, once per step. */
static int ho_set_inject(const struct opt *opt, void *base, const char *name, const char *value,
                         char *err, size_t errlen)
{
    struct ho_cmd *c = base;
    struct inj_step st;
    char why[256];
    if (inj_parse_step(value, strlen(value), &st, why, sizeof why) < 0 ||
        inj_profile_add(&c->prof, &st, why, sizeof why) < 0)
        return opt_fail(err, errlen, "%s: %s", name, why);
    return 0;
}

#define HO_DURATION(nm, field, h, d)                                                        \
    {nm, 0, OPT_DURATION, "D", h, d, OPT_FIELD(struct ho_cmd, field), .dmax = INJ_MAX_DURATION_S}

static const struct opt ho_options[] = {
    {"target", 0, OPT_CALL, "URL", "server, http://HOST:PORT", "http://127.0.0.1:8080",
     .set = ho_set_target},
    {"scenario", 0, OPT_STRING, "a2b|FILE", "the built-in a2b journey or a scenario file", "a2b",
     OPT_FIELD(struct ho_cmd, scenario)},
    {"inject", 0, OPT_CALL, "STEP",
     "an injection step; repeat for a sequence. Open steps:\n"
     "  nothing-for D | at-once N | ramp-users N D |\n"
     "  constant-users-per-sec R D [randomized] |\n"
     "  ramp-users-per-sec R1 R2 D [randomized] |\n"
     "  increment-users-per-sec INC LEVELS D [ramp D2]\n"
     "    [from R0] [randomized]  (a staircase: LEVELS levels of D at R0, R0+INC, ... users/s, "
     "or INC, 2*INC, ... without from; ramps of D2 between)\n"
     "closed steps (never mixed with open ones):\n"
     "  constant-concurrent-users N D |\n"
     "  ramp-concurrent-users N1 N2 D |\n"
     "  increment-concurrent-users INC LEVELS D [ramp D2]\n"
     "    [from N0]\n"
     "D is a duration with unit: 500ms, 10s, 2m, 1h",
     "the reference's '" HO_REFERENCE_INJECT "'", .set = ho_set_inject},
    {"time-scale", 0, OPT_DOUBLE, "F",
     "divide every duration and pause by F (> 0) for a short run of the same rate and shape", "1",
     OPT_FIELD(struct ho_cmd, t.time_scale), .dmin = 0, .dmin_open = true, .dmax = 1e6,
     .wants = "a number above 0"},
    HO_DURATION("max-duration", t.max_duration_s, "stop users still running after D",
                "2000s, divided by --time-scale"),
    {"threads", 0, OPT_UINT, "T", "event-loop threads", "1", OPT_FIELD(struct ho_cmd, b.threads),
     .min = 1, .max = 256},
    HO_DURATION("request-timeout", t.request_timeout_s, "fail a request not answered within D",
                "60s"),
    HO_DURATION("connect-timeout", t.connect_timeout_s, "fail a connect not done within D", "10s"),
    {"saturation-window", 0, OPT_UINT, "S",
     "the saturation rule's window in seconds: the server counts as saturated once it falls "
     "behind its demand over two such windows in a row", "5",
     OPT_FIELD(struct ho_cmd, t.sat_window), .min = 1, .max = 3600},
    {"until-saturated", 0, OPT_FLAG, NULL,
     "open profiles: stop arriving users at the end of the level after which the level rule "
     "finds the server saturated (answers behind arrivals and p95 doubled, or failures), so "
     "that a staircase climbs only as far as the server's capacity", NULL,
     OPT_FIELD(struct ho_cmd, t.until_saturated)},
    {"seed", 0, OPT_UINT, "S", "seed of arrivals, pauses, feeders and picks", "1",
     OPT_FIELD(struct ho_cmd, t.seed), .min = 0, .max = UINT64_MAX},
    {"share-connections", 0, OPT_UINT, "N",
     "users share a pool of N keep-alive connections per thread (Gatling's shareConnections) "
     "instead of one each; a request waits in line for a free one, and its response time "
     "counts the wait", NULL, OPT_FIELD(struct ho_cmd, t.share_connections), .min = 1,
     .max = HO_MAX_SHARED},
    {"pg-sample", 0, OPT_STRING, "PID|URI",
     "also sample the PostgreSQL server whose postmaster has pid PID, or that the libpq "
     "connection string or URI reaches (it must run on this machine): the postmaster and its "
     "children, exited ones included", NULL, OPT_FIELD(struct ho_cmd, t.pg_sample)},
    {"timeout", 0, OPT_UINT, "SECS",
     "not used here, where --request-timeout and --connect-timeout bound the waits; taken as "
     "every experiment takes it", "10", OPT_FIELD(struct ho_cmd, b.timeout_s), .min = 1,
     .max = 3600},
    {.kind = OPT_END},
};

static const struct opt_table ho_tables[] = {
    {ho_options, 0},
    {bench_options, offsetof(struct ho_cmd, b)},
    {NULL, 0},
};

static const struct opt_cmd ho_command = {.head = ho_head, .tables = ho_tables, .tail = ho_tail};

int http_open_main(int argc, char **argv, const struct result_context *ctx)
{
    struct ho_cmd c = {.scenario = "a2b"};
    struct bench_opts *o = &c.b;
    bench_opts_init(o, "http-open");
    o->port = HO_DEFAULT_PORT;
    http_open_test_init(&c.t);
    int rc = bench_parse(o, &ho_command, argc, argv, &c);
    if (rc >= 0)
        return rc;
    if (c.prof.n == 0)
        http_open_reference_profile(&c.prof);
    if (c.t.until_saturated && inj_profile_closed(&c.prof))
        return bench_usage_error(o, "--until-saturated needs an open profile (users/s): "
                                    "the level rule reads arrival rates");
    /* Each shard would stop on its own verdict, at levels of its own. */
    if (c.t.until_saturated && o->shard_count)
        return bench_usage_error(o, "--until-saturated cannot be sharded: each shard would stop "
                                    "its profile on its own figures");
    struct scenario scn = {0};
    rc = load_scenario(o, c.scenario, &scn);
    if (rc)
        return rc;
    char err[256];
    if (o->shard_count && scn_set_shard(&scn, o->shard_index, o->shard_count, err, sizeof err) < 0)
        rc = bench_usage_error(o, "--shard: %s", err);
    if (!rc)
        rc = bench_finish_options(o, argc, argv, 1);
    if (rc) {
        scn_free(&scn);
        return rc;
    }
    c.t.scn = &scn;
    c.t.prof = &c.prof;
    struct result_set rows = {0};
    rc = http_open_exec(o, &c.t, ctx, &rows);
    rc = bench_finish(o, ctx, &rows, rc);
    http_open_test_free(&c.t);
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
            .trace = o->trace,
            .shard_index = o->shard_index,
            .shard_count = o->shard_count ? o->shard_count : 1,
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
            gen += rep->tot.errs[e];
    double active_max = 0;
    for (unsigned i = 0; i < rep->nsecs; i++)
        active_max = fmax(active_max, rep->points[i].active);
    bool sat = rep->saturation_s >= 0;
    *s = (struct http_open_summary){
        .requests = (double)rep->tot.all.h.count,
        .ko = (double)rep->tot.all.ko,
        .ko_generator = (double)gen,
        .rps = rep->duration_s > 0 ? (double)rep->tot.all.h.count / rep->duration_s : 0,
        .p95_ms = (double)hist_percentile(&rep->tot.all.h, 95) / 1e6,
        .duration_s = rep->duration_s,
        .users_started = (double)rep->tot.users_started,
        .users_done = (double)rep->tot.users_done,
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
