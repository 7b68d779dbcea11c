/* shootout_run.c - `shootout run`: the options, then the parts in their
 * order, the MQTT part (run_mqtt.c), the RPC part (run_rpc.c) and the a2b
 * part (run_a2b.c), and one JSON file and one HTML page with every row. */
#include "run/shootout_run.h"

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/net.h"
#include "core/opt.h"
#include "load/awake.h"
#include "load/bench.h"
#include "load/http/inject.h"
#include "report/report_html.h"
#include "report/texttab.h"
#include "run/child.h"
#include "run/contender.h"
#include "run/run_a2b.h"
#include "run/run_mqtt.h"
#include "run/run_rpc.h"

/* Runs per grid point and server, as the articles; --quick halves the
 * messages and calls and runs fewer. */
#define RUN_QUICK_SCALE 0.5
#define RUN_MQTT_RUNS 3
#define RUN_RPC_RUNS 10 /* as the article */
#define RUN_RPC_QUICK_RUNS 2
/* The a2b profile's time scale: the reference's 1000 s ramp in 50 s, about
 * a minute per target with the users' tails; --quick: 25 s. 20 rather than
 * 10 keeps the whole job with every contender near 20 minutes on 2 cores
 * (docs/run.md, "Time budget"): four journeys and three staircases are
 * half the a2b part's time, and the rates, so RPS and p95, do not change
 * with the scale. */
#define RUN_A2B_TIME_SCALE 20.0
#define RUN_A2B_QUICK_TIME_SCALE 40.0
/* The capacity race: Gatling's staircase, levels of 100 s and ramps of
 * 10 s before the time scale (5 s per level at the default scale), from
 * 50 users/s (about 700 requests/s) by 50 up to the ceiling of 1000 users/s
 * (about 14,000 requests/s), each contender climbing only until it
 * saturates: on 2 cores the Node peer and ours do well below the ceiling. */
#define RUN_A2B_CAPACITY "increment-users-per-sec 50 20 100s ramp 10s from 50"

static const char run_head[] =
    "usage: shootout run [options]\n"
    "\n"
    "The main job, in three parts.\n"
    "\n"
    "Each part races ours against the contenders of its kind (--peers; the list,\n"
    "their versions and how to install them: shootout peers), one server at a\n"
    "time, each on a free 127.0.0.1 port and started through its\n"
    "peers/<name>/start. A contender that is not installed, does not start or\n"
    "dies is skipped with one line; a cell it fails says why; the job goes on.\n"
    "\n"
    "MQTT: our MQTT broker, Mosquitto, RabbitMQ, ActiveMQ and aedes, raced with\n"
    "the MQTT shootout article's two experiments:\n"
    "  loadtest  100, 500, 750 and 1000 connections, QoS 0, 16-byte payloads\n"
    "  pingtest  400 pairs / 20 wildcard subscribers, 200 / 200, 100 / 400\n"
    "Prints the article's tables (thousands of msgs/s, mean +/- stddev) with a\n"
    "row per broker, the ratio of ours to the best other, the article's figures\n"
    "for D + vibe.d, Go and C++ quoted beneath, each broker's CPU time per\n"
    "message and the pingtest round-trip latency.\n"
    "\n"
    "RPC: our car-server (REST and gRPC), grpc-cpp, grpc-java, node-grpc (gRPC),\n"
    "spring-rest and node-fastify (REST), with the gRPC-vs-REST article's test:\n"
    "1000 to 5000 sequential calls; JVM servers cold (as the article) and again\n"
    "warm, after the same calls. Prints the article's three tables (total time per N, how much slower\n"
    "the slower protocol is, growth per step), latency and CPU per call, and the\n"
    "throughput at 10 and 50 calls in flight.\n"
    "\n"
    "a2b: our a2b-server on SQLite and, when PostgreSQL is installed (a temporary\n"
    "server) or given (--pg), on PostgreSQL, then the a2b contenders (a2b-node,\n"
    "a2b-spring) on it: boot-up time, then the Gatling article's open-model journey with its\n"
    "durations and pauses divided by a time scale. Prints the article's table\n"
    "(build time, size, boot-up, requests, KO %, RPS, p95, saturation point, RAM,\n"
    "CPU, threads, PostgreSQL CPU) with its published rows quoted beneath.\n"
    "Then the capacity race on PostgreSQL: the same journey under a staircase of\n"
    "arrival rates against ours and the first a2b contender in turn, with p95, responses/s\n"
    "and KO per level, each one's saturation point and the ratios.\n"
    "\n"
    "Every run goes into one JSON file and a self-contained HTML page with the\n"
    "charts. The servers are stopped at the end, and when this command is\n"
    "interrupted.\n"
    "\n";

static const char run_tail[] =
    "\n"
    "Exit codes: 0 ok, 1 one of our servers could not start or died, 2 usage\n"
    "error, 3 an experiment against ours failed (messages missing, a call\n"
    "failed). A contender's failures never change the exit code.\n"
    "\n"
    "Environment: SHOOTOUT_PEERS_DIR, the contenders' directory (default: peers/\n"
    "of the tree this binary was built in).\n";

enum { PART_MQTT = 1, PART_RPC = 2, PART_A2B = 4 };

struct run {
    unsigned runs_opt; /* --runs, 0: the parts' own */
    bool quick;
    unsigned runs, rpc_runs, threads;
    unsigned cluster; /* --cluster: nodes, 0: none */
    double scale;
    double a2b_time_scale; /* 0: the default for --quick or not */
    const char *pg_uri;
    const char *a2b_capacity; /* an --inject step, or NULL for none */
    double a2b_ceiling;       /* users/s, 0: the staircase's own top */
    double test_scale;        /* the hidden --scale alone, without --quick's */
    const char *json_path;
    const char *html_path; /* NULL: no HTML report */
    bool no_peer;
    bool no_keep_awake; /* --no-keep-awake: let idle CPUs halt (load/awake.h) */
    const char *peers; /* --peers, NULL: all */
    unsigned timeout_s; /* hidden --timeout, 0: the experiments' own */
    double cell_cap_s;  /* --cell-cap, 0: none */
    int parts; /* PART_* */
    char exe[4096];
    char version[64]; /* ours, "shootout X" */
    struct contender_roster roster;
    struct result_context ctx;
    struct result_set rows;
};

/* ---- the job ------------------------------------------------------------- */

__attribute__((format(printf, 1, 2))) static int run_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("shootout run: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n(see shootout run --help)\n", stderr);
    return BENCH_EXIT_USAGE;
}

/* --full-profile: the a2b profile as Gatling ran it. */
static int run_set_full_profile(const struct opt *o, void *base, const char *name,
                                const char *value, char *err, size_t errlen)
{
    ((struct run *)base)->a2b_time_scale = 1;
    return 0;
}

static int run_set_pg(const struct opt *o, void *base, const char *name, const char *value,
                      char *err, size_t errlen)
{
    if (strcmp(value, "none") && strncmp(value, "postgres://", 11) &&
        strncmp(value, "postgresql://", 13))
        return opt_fail(err, errlen, "%s wants postgres://... or none, not '%s'", name, value);
    ((struct run *)base)->pg_uri = value;
    return 0;
}

static const struct opt_choice run_parts[] = {
    {"mqtt", NULL, PART_MQTT},
    {"rpc", NULL, PART_RPC},
    {"a2b", NULL, PART_A2B},
    {NULL, NULL, 0},
};

static const struct opt run_options[] = {
    {"runs", 0, OPT_UINT, "R", "runs per grid point and server",
     "3 for MQTT and 10 for RPC, as the articles; 1 and 2 with --quick",
     OPT_FIELD(struct run, runs_opt), .min = 1, .max = 1000},
    {"quick", 0, OPT_FLAG, NULL,
     "fewer runs, half the messages and calls, a2b time scale 40 (about 4 times shorter)", NULL,
     OPT_FIELD(struct run, quick)},
    {"only", 0, OPT_ENUM, "mqtt|rpc|a2b", "run one part", NULL, OPT_FIELD(struct run, parts),
     .choices = run_parts},
    {"a2b-time-scale", 0, OPT_DOUBLE, "F", "divide the a2b profile's durations and pauses by F",
     "20: about a minute per target", OPT_FIELD(struct run, a2b_time_scale), .dmin = 1,
     .dmax = 1e6, .wants = "a number from 1 up"},
    {"full-profile", 0, OPT_CALL, NULL,
     "the a2b profile unscaled, as Gatling ran it (about 35 minutes per target); the same as "
     "--a2b-time-scale 1", NULL, .set = run_set_full_profile},
    {"a2b-capacity", 0, OPT_CALL, "STEP|none",
     "the capacity race's profile, an open http-open --inject step, its durations divided by "
     "the time scale too, or none to skip the race; each contender stops climbing once it "
     "saturates", "'" RUN_A2B_CAPACITY "': 50 to 1000 users/s, levels of 5 s",
     OPT_FIELD(struct run, a2b_capacity), .set = opt_set_or_none},
    {"a2b-ceiling", 0, OPT_DOUBLE, "R",
     "the staircase's top level, R users/s: its levels go from its first by its increment up "
     "to R", "the STEP's own top, 1000 users/s", OPT_FIELD(struct run, a2b_ceiling), .dmin = 0,
     .dmin_open = true, .dmax = 1e6, .wants = "users/s above 0"},
    {"pg", 0, OPT_CALL, "URI|none",
     "the a2b part's PostgreSQL: an existing server (postgres://...; schema a2b is replaced), "
     "or none", "a temporary server when PostgreSQL is installed", .set = run_set_pg},
    {"json", 0, OPT_STRING, "FILE",
     "where to write the results ('-': stdout, and the tables go to stderr)",
     "shootout-results.json", OPT_FIELD(struct run, json_path)},
    {"html", 0, OPT_CALL, "FILE", "where to write the HTML report ('none' to skip it)",
     "shootout-report.html", OPT_FIELD(struct run, html_path), .set = opt_set_or_none},
    {"cell-cap", 0, OPT_DOUBLE, "S",
     "an MQTT contender's cell whose runs would take more than S seconds, by a run's time in "
     "its previous cell, gets as many runs as fit, 2 at least (each with the article's "
     "message count; the tables say which); 0: every cell gets --runs", "20",
     OPT_FIELD(struct run, cell_cap_s), .dmin = 0, .dmax = 1e6, .wants = "seconds, 0 or more"},
    {"threads", 0, OPT_UINT, "T", "MQTT client threads, one event loop each", "1",
     OPT_FIELD(struct run, threads), .min = 1, .max = 256},
    {"cluster", 0, OPT_UINT, "N",
     "also race N of our brokers clustered on one nats-server against one node, every message "
     "crossing nodes, CPU per message the nodes' and NATS's together (docs/cluster.md)",
     "0: no cluster", OPT_FIELD(struct run, cluster), .min = 0, .max = CHILD_MAX - 1},
    {"peers", 0, OPT_STRING, "LIST",
     "the contenders to race, comma-separated names (shootout peers lists them), all or none",
     "all: every one that is installed", OPT_FIELD(struct run, peers)},
    {"no-peer", 0, OPT_FLAG, NULL, "measure our servers alone: the same as --peers none", NULL,
     OPT_FIELD(struct run, no_peer)},
    {"no-keep-awake", 0, OPT_FLAG, NULL,
     "let idle CPUs halt between requests; by default a SCHED_IDLE spinner per CPU keeps them "
     "awake, so that one-at-a-time runs measure the servers, not a CPU's wake-up (a JVM's busy "
     "threads keep its CPUs awake by themselves)", NULL, OPT_FIELD(struct run, no_keep_awake)},
    /* For the tests, which need a job of seconds. */
    {"scale", 0, OPT_DOUBLE, "X", "multiply every message and call count by X", "1",
     OPT_FIELD(struct run, scale), .dmin = 0, .dmin_open = true, .dmax = 100,
     .wants = "a number above 0 and up to 100", .hidden = true},
    {"timeout", 0, OPT_UINT, "S", "seconds a run may take before its missing messages count",
     "the experiments' own", OPT_FIELD(struct run, timeout_s), .min = 1, .max = 3600,
     .hidden = true},
    {.kind = OPT_END},
};

static const struct opt_table run_tables[] = {{run_options, 0}, {NULL, 0}};

static const struct opt_cmd run_command = {.head = run_head, .tables = run_tables, .tail = run_tail};

/* 0 to go on, or the exit code to return at once. */
static int run_parse(struct run *r, int argc, char **argv)
{
    struct opt_error e;
    switch (opt_parse(&run_command, argc, argv, r, &e)) {
    case OPT_OK:
        break;
    case OPT_HELP:
        return BENCH_EXIT_OK;
    case OPT_ERROR:
        if (e.opt)
            return run_usage_error("%s", e.msg);
        fputs("(see shootout run --help)\n", stderr); /* getopt_long has said what was wrong */
        return BENCH_EXIT_USAGE;
    }
    r->test_scale = r->scale;
    char why[160];
    if (r->no_peer) {
        r->roster.chosen = 0;
    } else if (r->peers &&
               contender_parse_list(r->peers, &r->roster.chosen, why, sizeof why) < 0) {
        return run_usage_error("--peers: %s", why);
    }
    if (optind < argc)
        return run_usage_error("unexpected argument '%s'", argv[optind]);
    struct inj_step step;
    if (r->a2b_capacity &&
        inj_parse_step(r->a2b_capacity, strlen(r->a2b_capacity), &step, why, sizeof why) < 0)
        return run_usage_error("--a2b-capacity: %s", why);
    if (r->a2b_capacity && inj_step_closed(&step))
        return run_usage_error("--a2b-capacity: the race compares arrival rates: an open step, "
                               "not '%s'", r->a2b_capacity);
    if (r->a2b_ceiling > 0) {
        if (!r->a2b_capacity || step.kind != INJ_STAIRS_RATE)
            return run_usage_error("--a2b-ceiling needs a staircase (increment-users-per-sec) "
                                   "as --a2b-capacity");
        double first = inj_stair_load(&step, 0);
        double levels = floor((r->a2b_ceiling - first) / step.inc + 1e-9) + 1;
        if (r->a2b_ceiling < first || levels > INJ_MAX_LEVELS)
            return run_usage_error("--a2b-ceiling %g: the staircase from %g users/s by %g needs "
                                   "a ceiling from %g up to %g users/s", r->a2b_ceiling, first,
                                   step.inc, first, first + (INJ_MAX_LEVELS - 1) * step.inc);
    }
    r->runs = r->runs_opt ? r->runs_opt : r->quick ? 1 : RUN_MQTT_RUNS;
    r->rpc_runs = r->runs_opt ? r->runs_opt : r->quick ? RUN_RPC_QUICK_RUNS : RUN_RPC_RUNS;
    if (!r->a2b_time_scale)
        r->a2b_time_scale = r->quick ? RUN_A2B_QUICK_TIME_SCALE : RUN_A2B_TIME_SCALE;
    if (r->quick)
        r->scale *= RUN_QUICK_SCALE;
    return -1;
}

/* How long a part took, for the time budget (docs/run.md). */
static void part_took(FILE *out, const char *part, uint64_t t0)
{
    fprintf(out, "\nshootout run: the %s part took %.0f s\n", part,
            (double)(clock_now_ns() - t0) / 1e9);
    fflush(out);
}

int shootout_run_main(int argc, char **argv, const char *version)
{
    struct run r = {
        .threads = 1,
        .scale = 1,
        .cell_cap_s = RUN_MQTT_CELL_CAP_S,
        .test_scale = 1,
        .json_path = "shootout-results.json",
        .html_path = "shootout-report.html",
        .parts = PART_MQTT | PART_RPC | PART_A2B,
        .a2b_capacity = RUN_A2B_CAPACITY,
        .roster.chosen = CONTENDER_ALL,
    };
    int rc = run_parse(&r, argc - 1, argv + 1);
    if (rc >= 0)
        return rc;

    uint64_t t0 = clock_now_ns();
    /* With JSON on stdout the tables move out of its way. */
    FILE *out = strcmp(r.json_path, "-") ? stdout : stderr;
    /* Raised before the servers start, so that they inherit it too. */
    long fds = net_raise_fd_limit();
    if (fds >= 0 && fds < RUN_MQTT_FDS_NEEDED) {
        fprintf(stderr, "shootout run: 1000 connections need about %d open files, but the limit "
                        "is %ld (raise it with ulimit -n)\n", RUN_MQTT_FDS_NEEDED, fds);
        return BENCH_EXIT_RUNTIME;
    }
    child_trap_signals();
    ssize_t n = readlink("/proc/self/exe", r.exe, sizeof r.exe - 1);
    if (n <= 0)
        snprintf(r.exe, sizeof r.exe, "/proc/self/exe");
    else
        r.exe[n] = '\0';
    result_context_init(&r.ctx, argc, argv, version);
    snprintf(r.version, sizeof r.version, "shootout %s", version);
    contender_peers_dir(r.exe, r.roster.peers_dir, sizeof r.roster.peers_dir);
    contender_roster_probe(&r.roster);
    r.ctx.extra_json = contender_roster_json;
    r.ctx.extra_arg = &r.roster;
    if (!r.roster.chosen)
        fprintf(out, "shootout run: %s: measuring our servers alone\n",
                r.no_peer ? "--no-peer" : "--peers none");

    struct awake awake = {0};
    r.ctx.cpu_idle = "halting when idle (--no-keep-awake)";
    if (!r.no_keep_awake) {
        char why[256];
        if (awake_start(&awake, why, sizeof why) < 0) {
            fprintf(stderr, "shootout run: %s\n", why);
            return BENCH_EXIT_RUNTIME;
        }
        r.ctx.cpu_idle = "kept awake by a SCHED_IDLE spinner per CPU";
        fprintf(out, "shootout run: %u CPUs kept awake by SCHED_IDLE spinners (pid %d; "
                     "--no-keep-awake lets them halt)\n", awake.ncpus, (int)awake.pid);
    }

    rc = 0;
    if (r.parts & PART_MQTT) {
        struct run_mqtt_opts mo = {
            .runs = r.runs,
            .threads = r.threads,
            .cluster = r.cluster,
            .scale = r.scale,
            .timeout_s = r.timeout_s,
            .cell_cap_s = r.cell_cap_s,
            .exe = r.exe,
            .version = r.version,
            .roster = &r.roster,
            .out = out,
            .ctx = &r.ctx,
            .rows = &r.rows,
        };
        uint64_t t = clock_now_ns();
        rc = run_mqtt(&mo);
        part_took(out, "MQTT", t);
    }
    if (r.parts & PART_RPC) {
        struct run_rpc_opts ro = {
            .runs = r.rpc_runs,
            .scale = r.scale,
            .timeout_s = r.timeout_s,
            .exe = r.exe,
            .version = r.version,
            .roster = &r.roster,
            .out = out,
            .ctx = &r.ctx,
            .rows = &r.rows,
        };
        uint64_t t = clock_now_ns();
        rc = child_rc_worse(rc, run_rpc(&ro));
        part_took(out, "RPC", t);
    }
    struct run_a2b *a2b = NULL;
    if (r.parts & PART_A2B) {
        /* --scale (tests) shortens the profile and shrinks the data set;
         * --quick has its own time scale. */
        struct run_a2b_opts ao = {
            .time_scale = r.a2b_time_scale / r.test_scale,
            .data_scale = r.test_scale < 1 ? r.test_scale : 1,
            .exe = r.exe,
            .pg_uri = r.pg_uri,
            .capacity = r.a2b_capacity,
            .ceiling = r.a2b_ceiling,
            .version = r.version,
            .roster = &r.roster,
            .out = out,
            .ctx = &r.ctx,
            .rows = &r.rows,
        };
        uint64_t t = clock_now_ns();
        rc = child_rc_worse(rc, run_a2b(&ao, &a2b));
        part_took(out, "a2b", t);
    }

    awake_stop(&awake);
    char err[256];
    if (result_write_json(r.json_path, &r.ctx, r.rows.rows, r.rows.n, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: %s\n", err);
        if (!rc)
            rc = BENCH_EXIT_RUNTIME;
    } else if (strcmp(r.json_path, "-")) {
        fprintf(out, "results: %s (%u rows)\n", r.json_path, r.rows.n);
    }
    if (r.html_path) {
        if (report_html_write(r.html_path, &r.ctx, r.rows.rows, r.rows.n, err, sizeof err) < 0) {
            fprintf(stderr, "shootout run: %s\n", err);
            if (!rc)
                rc = BENCH_EXIT_RUNTIME;
        } else {
            fprintf(out, "report: %s\n", r.html_path);
        }
    }
    result_set_free(&r.rows);
    run_a2b_free(a2b);
    result_context_free(&r.ctx);
    fprintf(out, "total time: %.1f s\n", (double)(clock_now_ns() - t0) / 1e9);
    return rc;
}

/* ---- shootout peers ------------------------------------------------------ */

static const char peers_head[] =
    "usage: shootout peers\n"
    "\n"
    "Lists the contenders `shootout run` races ours against, in the order of its\n"
    "tables: each one's kind (mqtt, grpc, rest, a2b), stack, whether it is heavy\n"
    "(JDK- or Erlang-based: scripts/install-deps.sh --minimal leaves it out),\n"
    "whether it can run here, and its version, or why it cannot and how to\n"
    "install it (what its peers/<name>/start --version says).\n"
    "\n";

static const char peers_tail[] =
    "\n"
    "Exit codes: 0 listed (whether installed or not), 2 usage error.\n"
    "\n"
    "Environment: SHOOTOUT_PEERS_DIR, the contenders' directory (default: peers/\n"
    "of the tree this binary was built in).\n";

static const struct opt peers_options[] = {{.kind = OPT_END}};
static const struct opt_table peers_tables[] = {{peers_options, 0}, {NULL, 0}};
static const struct opt_cmd peers_command = {
    .head = peers_head, .tables = peers_tables, .tail = peers_tail};

int shootout_peers_main(int argc, char **argv)
{
    struct opt_error e;
    int dummy;
    switch (opt_parse(&peers_command, argc - 1, argv + 1, &dummy, &e)) {
    case OPT_OK:
        break;
    case OPT_HELP:
        return BENCH_EXIT_OK;
    case OPT_ERROR:
        fprintf(stderr, "shootout peers: %s\n(see shootout peers --help)\n", e.opt ? e.msg : "");
        return BENCH_EXIT_USAGE;
    }
    if (optind < argc - 1) {
        fprintf(stderr, "shootout peers: unexpected argument '%s'\n(see shootout peers --help)\n",
                argv[optind + 1]);
        return BENCH_EXIT_USAGE;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    snprintf(exe + (n > 0 ? n : 0), sizeof exe - (size_t)(n > 0 ? n : 0), "%s",
             n > 0 ? "" : "/proc/self/exe");
    struct contender_roster r = {.chosen = CONTENDER_ALL};
    contender_peers_dir(exe, r.peers_dir, sizeof r.peers_dir);
    contender_roster_probe(&r);
    printf("the contenders of shootout run, from %s:\n", r.peers_dir);
    struct tt tt;
    tt_init(&tt, "llllll");
    static const char *const titles[] = {"name", "kind", "stack", "heavy", "installed",
                                         "version, or how to install it"};
    tt_cells(&tt, 6, titles);
    for (unsigned i = 0; i < contender_count; i++) {
        const struct contender_def *d = &contender_defs[i];
        tt_cell(&tt, "%s", d->name);
        tt_cell(&tt, "%s", contender_kind_name(d->kind));
        tt_cell(&tt, "%s", d->stack);
        tt_cell(&tt, "%s", d->flags & CONTENDER_HEAVY ? "yes" : "no");
        tt_cell(&tt, "%s", r.probe[i].available ? "yes" : "no");
        tt_tail(&tt, "%s", r.probe[i].line);
    }
    tt_print(stdout, &tt);
    tt_free(&tt);
    return BENCH_EXIT_OK;
}
