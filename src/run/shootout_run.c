/* shootout_run.c - `shootout run`: the options, then the parts in their
 * order, the MQTT part (run_mqtt.c), the RPC part (run_rpc.c) and the a2b
 * part (run_a2b.c), and one JSON file and one HTML page with every row. */
#include "run/shootout_run.h"

#include <errno.h>
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
#include "load/bench.h"
#include "load/http/inject.h"
#include "report/report_html.h"
#include "run/child.h"
#include "run/run_a2b.h"
#include "run/run_mqtt.h"
#include "run/run_rpc.h"

/* Runs per grid point and server, as the articles; --quick halves the
 * messages and calls and runs fewer. */
#define RUN_QUICK_SCALE 0.5
#define RUN_MQTT_RUNS 3
#define RUN_RPC_RUNS 10 /* as the article */
#define RUN_RPC_QUICK_RUNS 2
/* The a2b profile's time scale: the reference's 1000 s ramp in 100 s, about
 * two minutes per target with the users' tails; --quick: 25 s. */
#define RUN_A2B_TIME_SCALE 10.0
#define RUN_A2B_QUICK_TIME_SCALE 40.0
/* The capacity race: Gatling's staircase, levels of 100 s and ramps of
 * 10 s before the time scale (10 s per level at the default scale), from
 * 50 users/s (about 700 requests/s) by 50 up to the ceiling of 1000 users/s
 * (about 14,000 requests/s), each contender climbing only until it
 * saturates: on 2 cores the Node peer and ours do well below the ceiling. */
#define RUN_A2B_CAPACITY "increment-users-per-sec 50 20 100s ramp 10s from 50"

static const char usage[] =
    "usage: shootout run [options]\n"
    "\n"
    "The main job, in three parts.\n"
    "\n"
    "MQTT: starts our MQTT broker and, if it is installed, Mosquitto, each on a\n"
    "free 127.0.0.1 port, and races them with the MQTT shootout article's two\n"
    "experiments, broker after broker at every grid point:\n"
    "  loadtest  100, 500, 750 and 1000 connections, QoS 0, 16-byte payloads\n"
    "  pingtest  400 pairs / 20 wildcard subscribers, 200 / 200, 100 / 400\n"
    "Prints the article's tables (thousands of msgs/s, mean +/- stddev) with a\n"
    "row per broker and their ratio, each broker's CPU time per message and the\n"
    "pingtest round-trip latency.\n"
    "\n"
    "RPC: starts our car-server and, if it is built, the gRPC C++ peer\n"
    "(build/peers/car-grpc-cpp-server), and runs the gRPC-vs-REST article's test:\n"
    "1000 to 5000 sequential calls over REST and gRPC to ours and over gRPC to the\n"
    "peer. Prints the article's three tables (total time per N, how much slower\n"
    "the slower protocol is, growth per step), latency and CPU per call, and the\n"
    "throughput at 10 and 50 calls in flight.\n"
    "\n"
    "a2b: our a2b-server on SQLite and, when PostgreSQL is installed (a temporary\n"
    "server) or given (--pg), on PostgreSQL, then the Node peer (peers/a2b-node)\n"
    "on it: boot-up time, then the Gatling article's open-model journey with its\n"
    "durations and pauses divided by a time scale. Prints the article's table\n"
    "(build time, size, boot-up, requests, KO %, RPS, p95, saturation point, RAM,\n"
    "CPU, threads, PostgreSQL CPU) with its published rows quoted beneath.\n"
    "Then the capacity race on PostgreSQL: the same journey under a staircase of\n"
    "arrival rates against ours and the Node peer in turn, with p95, responses/s\n"
    "and KO per level, each one's saturation point and the ratios.\n"
    "\n"
    "Every run goes into one JSON file and a self-contained HTML page with the\n"
    "charts. The servers are stopped at the end, and when this command is\n"
    "interrupted.\n"
    "\n"
    "options:\n"
    "  --runs R         runs per grid point and server (default 3 for MQTT and 10\n"
    "                   for RPC, as the articles; 1 and 2 with --quick)\n"
    "  --quick          fewer runs, half the messages and calls, a2b time scale 40\n"
    "                   (about 4 times shorter)\n"
    "  --only mqtt|rpc|a2b  run one part\n"
    "  --a2b-time-scale F  divide the a2b profile's durations and pauses by F\n"
    "                   (default 10: about 2 minutes per target)\n"
    "  --full-profile   the a2b profile unscaled, as Gatling ran it (about 35\n"
    "                   minutes per target); the same as --a2b-time-scale 1\n"
    "  --a2b-capacity STEP|none  the capacity race's profile, an open http-open\n"
    "                   --inject step, its durations divided by the time scale too\n"
    "                   (default '" RUN_A2B_CAPACITY "':\n"
    "                   50 to 1000 users/s, levels of 10 s), or none to skip the\n"
    "                   race; each contender stops climbing once it saturates\n"
    "  --a2b-ceiling R  the staircase's top level, R users/s: its levels go from\n"
    "                   its first by its increment up to R (default: the STEP's\n"
    "                   own top, 1000 users/s)\n"
    "  --pg URI|none    the a2b part's PostgreSQL: an existing server\n"
    "                   (postgres://...; schema a2b is replaced), or none\n"
    "                   (default: a temporary server when PostgreSQL is installed)\n"
    "  --json FILE      where to write the results (default shootout-results.json;\n"
    "                   '-': stdout, and the tables go to stderr)\n"
    "  --html FILE      where to write the HTML report (default\n"
    "                   shootout-report.html; 'none' to skip it)\n"
    "  --threads T      MQTT client threads, one event loop each (default 1)\n"
    "  --no-peer        measure our servers alone, even if the peers are there\n"
    "  -h, --help       this text\n"
    "\n"
    "Exit codes: 0 ok, 1 a server could not start or died, 2 usage error,\n"
    "3 an experiment failed (messages missing, a call failed).\n";

enum { PART_MQTT = 1, PART_RPC = 2, PART_A2B = 4 };

struct run {
    unsigned runs, rpc_runs, threads;
    double scale;
    double a2b_time_scale; /* 0: the default for --quick or not */
    const char *pg_uri;
    const char *a2b_capacity; /* an --inject step, or NULL for none */
    double a2b_ceiling;       /* users/s, 0: the staircase's own top */
    double test_scale;        /* the hidden --scale alone, without --quick's */
    const char *json_path;
    const char *html_path; /* NULL: no HTML report */
    bool no_peer;
    int parts; /* PART_* */
    char exe[4096];
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

/* 0 to go on, or the exit code to return at once. */
static int run_parse(struct run *r, int argc, char **argv)
{
    enum {
        OPT_RUNS = 1,
        OPT_QUICK,
        OPT_ONLY,
        OPT_JSON,
        OPT_HTML,
        OPT_THREADS,
        OPT_NO_PEER,
        OPT_SCALE,
        OPT_A2B_TIME_SCALE,
        OPT_FULL_PROFILE,
        OPT_PG,
        OPT_A2B_CAPACITY,
        OPT_A2B_CEILING,
    };
    static const struct option opts[] = {
        {"runs", required_argument, NULL, OPT_RUNS},
        {"quick", no_argument, NULL, OPT_QUICK},
        {"only", required_argument, NULL, OPT_ONLY},
        {"json", required_argument, NULL, OPT_JSON},
        {"html", required_argument, NULL, OPT_HTML},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"no-peer", no_argument, NULL, OPT_NO_PEER},
        {"a2b-time-scale", required_argument, NULL, OPT_A2B_TIME_SCALE},
        {"full-profile", no_argument, NULL, OPT_FULL_PROFILE},
        {"pg", required_argument, NULL, OPT_PG},
        {"a2b-capacity", required_argument, NULL, OPT_A2B_CAPACITY},
        {"a2b-ceiling", required_argument, NULL, OPT_A2B_CEILING},
        /* Not in --help: for the tests, which need a job of seconds. */
        {"scale", required_argument, NULL, OPT_SCALE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t runs = 0, v;
    bool quick = false;
    char *end;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_RUNS:
            if (opt_parse_uint(optarg, 1, 1000, &runs) < 0)
                return run_usage_error("--runs wants a whole number from 1 to 1000, not '%s'",
                                       optarg);
            break;
        case OPT_QUICK:
            quick = true;
            break;
        case OPT_ONLY:
            if (!strcmp(optarg, "mqtt"))
                r->parts = PART_MQTT;
            else if (!strcmp(optarg, "rpc"))
                r->parts = PART_RPC;
            else if (!strcmp(optarg, "a2b"))
                r->parts = PART_A2B;
            else
                return run_usage_error("--only wants mqtt, rpc or a2b, not '%s'", optarg);
            break;
        case OPT_JSON:
            r->json_path = optarg;
            break;
        case OPT_HTML:
            r->html_path = strcmp(optarg, "none") ? optarg : NULL;
            break;
        case OPT_THREADS:
            if (opt_parse_uint(optarg, 1, 256, &v) < 0)
                return run_usage_error("--threads wants a whole number from 1 to 256, not '%s'",
                                       optarg);
            r->threads = (unsigned)v;
            break;
        case OPT_NO_PEER:
            r->no_peer = true;
            break;
        case OPT_A2B_TIME_SCALE:
            errno = 0;
            r->a2b_time_scale = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(r->a2b_time_scale >= 1) ||
                r->a2b_time_scale > 1e6)
                return run_usage_error("--a2b-time-scale wants a number from 1 up, not '%s'",
                                       optarg);
            break;
        case OPT_FULL_PROFILE:
            r->a2b_time_scale = 1;
            break;
        case OPT_PG:
            if (strcmp(optarg, "none") && strncmp(optarg, "postgres://", 11) &&
                strncmp(optarg, "postgresql://", 13))
                return run_usage_error("--pg wants postgres://... or none, not '%s'", optarg);
            r->pg_uri = optarg;
            break;
        case OPT_A2B_CAPACITY:
            r->a2b_capacity = strcmp(optarg, "none") ? optarg : NULL;
            break;
        case OPT_A2B_CEILING:
            errno = 0;
            r->a2b_ceiling = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(r->a2b_ceiling > 0) || r->a2b_ceiling > 1e6)
                return run_usage_error("--a2b-ceiling wants users/s above 0, not '%s'", optarg);
            break;
        case OPT_SCALE:
            errno = 0;
            r->scale = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(r->scale > 0 && r->scale <= 100))
                return run_usage_error("--scale wants a number above 0 and up to 100, not '%s'",
                                       optarg);
            r->test_scale = r->scale;
            break;
        case 'h':
            fputs(usage, stdout);
            return BENCH_EXIT_OK;
        default: /* getopt_long has said what was wrong */
            fputs("(see shootout run --help)\n", stderr);
            return BENCH_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return run_usage_error("unexpected argument '%s'", argv[optind]);
    struct inj_step step;
    char why[160];
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
    r->runs = runs ? (unsigned)runs : quick ? 1 : RUN_MQTT_RUNS;
    r->rpc_runs = runs ? (unsigned)runs : quick ? RUN_RPC_QUICK_RUNS : RUN_RPC_RUNS;
    if (!r->a2b_time_scale)
        r->a2b_time_scale = quick ? RUN_A2B_QUICK_TIME_SCALE : RUN_A2B_TIME_SCALE;
    if (quick)
        r->scale *= RUN_QUICK_SCALE;
    return -1;
}

/* Of two parts' exit codes, the one to return: a server lost (1) before
 * an experiment failed (3). */
static int run_worse(int a, int b)
{
    if (a == BENCH_EXIT_RUNTIME || b == BENCH_EXIT_RUNTIME)
        return BENCH_EXIT_RUNTIME;
    return a ? a : b;
}

int shootout_run_main(int argc, char **argv, const char *version)
{
    struct run r = {
        .threads = 1,
        .scale = 1,
        .test_scale = 1,
        .json_path = "shootout-results.json",
        .html_path = "shootout-report.html",
        .parts = PART_MQTT | PART_RPC | PART_A2B,
        .a2b_capacity = RUN_A2B_CAPACITY,
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

    rc = 0;
    if (r.parts & PART_MQTT) {
        struct run_mqtt_opts mo = {
            .runs = r.runs,
            .threads = r.threads,
            .scale = r.scale,
            .exe = r.exe,
            .no_peer = r.no_peer,
            .out = out,
            .ctx = &r.ctx,
            .rows = &r.rows,
        };
        rc = run_mqtt(&mo);
    }
    if (r.parts & PART_RPC) {
        struct run_rpc_opts ro = {
            .runs = r.rpc_runs,
            .scale = r.scale,
            .exe = r.exe,
            .no_peer = r.no_peer,
            .out = out,
            .ctx = &r.ctx,
            .rows = &r.rows,
        };
        rc = run_worse(rc, run_rpc(&ro));
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
            .no_peer = r.no_peer,
            .out = out,
            .ctx = &r.ctx,
            .rows = &r.rows,
        };
        rc = run_worse(rc, run_a2b(&ao, &a2b));
    }

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
