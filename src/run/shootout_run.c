/* shootout_run.c - `shootout run`: the options, the MQTT part (the brokers
 * as child processes, the article's grid against each, its tables), then
 * the RPC part (run_rpc.c) and the a2b part (run_a2b.c), and one JSON file
 * with every row. */
#include "run/shootout_run.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/net.h"
#include "core/opt.h"
#include "load/bench.h"
#include "load/http/inject.h"
#include "load/mqtt/mqtt_load.h"
#include "load/mqtt/mqtt_ping.h"
#include "report/report_html.h"
#include "report/run_table.h"
#include "run/child.h"
#include "run/run_a2b.h"
#include "run/run_rpc.h"

/* Message counts, the same for every broker. The MQTT part (3 runs of 7
 * grid points against 2 brokers) then takes two to three minutes on 2
 * cores; Mosquitto's loadtest (30 to 60 k msg/s there) is most of it. */
#define RUN_LOAD_TOTAL 200000.0 /* messages per loadtest run, over all publishers */
#define RUN_PING_MESSAGES 200.0 /* requests per pair */
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
#define RUN_HOST "127.0.0.1"
/* Descriptors the largest grid point needs in this process: connections
 * plus stdio, epoll and eventfds. */
#define RUN_FDS_NEEDED (1000 + 64)

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

enum { LOADTEST, PINGTEST, NEXPERIMENTS };
enum { OURS, PEER, NBROKERS }; /* ours first, as child_finish_all wants */
enum { PART_MQTT = 1, PART_RPC = 2, PART_A2B = 4 };
#define MAX_POINTS 4

/* The article's grid. For the loadtest a is the connection count; for the
 * pingtest a and b are the pairs and the wildcard subscribers. */
static const struct experiment {
    const char *title, *corner;
    unsigned npoints;
    struct point {
        unsigned a, b;
        const char *label;
    } points[MAX_POINTS];
} experiments[NEXPERIMENTS] = {
    {"loadtest", "connections", 4, {{100, 0, "100"}, {500, 0, "500"}, {750, 0, "750"}, {1000, 0, "1000"}}},
    {"pingtest", "parameters", 3, {{400, 20, "400p 20w"}, {200, 200, "200p 200w"}, {100, 400, "100p 400w"}}},
};

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
    struct child brokers[NBROKERS];
    int ports[NBROKERS];
    struct result_context ctx;
    struct result_set rows;
    struct run_cell cells[NEXPERIMENTS][MAX_POINTS][NBROKERS];
};

/* ---- the brokers --------------------------------------------------------- */

/* Mosquitto's configuration, in a memfd it reads through /proc/self/fd, so
 * that nothing is left on disk whatever happens to us. */
static int mosquitto_conf(int port, char *err, size_t len)
{
    int fd = memfd_create("mosquitto.conf", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(err, len, "memfd_create: %s", strerror(errno));
        return -1;
    }
    dprintf(fd,
            "listener %d %s\n"
            "allow_anonymous true\n"
            "persistence false\n"
            "log_dest none\n"
            "max_queued_messages 1000\n",
            port, RUN_HOST);
    /* As root Mosquitto switches to user mosquitto, and a change of user
     * clears PR_SET_PDEATHSIG: it stays who we are. Without root the
     * option has no effect. */
    const struct passwd *pw = getpwuid(geteuid());
    if (pw)
        dprintf(fd, "user %s\n", pw->pw_name);
    return fd;
}

struct broker_launch {
    struct run *r;
    int i;
    const char *exe;
};

/* Spawns broker i from exe on port and waits until it accepts. */
static int broker_launch(struct child *b, int port, void *arg, char *err, size_t len)
{
    const struct broker_launch *l = arg;
    char port_s[16], conf_path[64];
    snprintf(port_s, sizeof port_s, "%d", port);
    int conf_fd = -1;
    if (l->i == PEER) {
        conf_fd = mosquitto_conf(port, err, len);
        if (conf_fd < 0)
            return -1;
        snprintf(conf_path, sizeof conf_path, "/proc/self/fd/%d", conf_fd);
    }
    char *ours[] = {(char *)l->exe, "broker", "--bind", RUN_HOST, "--port", port_s, NULL};
    char *peer[] = {(char *)l->exe, "-c", conf_path, NULL};
    int rc = child_spawn(b, l->i == PEER ? peer : ours, conf_fd, err, len);
    if (conf_fd >= 0)
        close(conf_fd);
    if (rc < 0)
        return -1;
    l->r->ports[l->i] = port;
    return child_wait_port(b, port, err, len);
}

/* Starts broker i from exe on a free port and waits until it accepts
 * connections. 0, or -1 with err. */
static int broker_start(struct run *r, int i, const char *exe, char *err, size_t len)
{
    struct broker_launch l = {r, i, exe};
    return child_start_on_free_port(&r->brokers[i], broker_launch, &l, err, len);
}

/* Starts the brokers and says where they listen. 0, or the exit code. */
static int brokers_start(struct run *r, FILE *out)
{
    char err[512];
    if (broker_start(r, OURS, r->exe, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start our broker (%s broker): %s\n", r->exe, err);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: our broker %s, pid %d, on %s:%d\n", r->exe,
            (int)r->brokers[OURS].pid, RUN_HOST, r->ports[OURS]);
    if (r->no_peer) {
        fprintf(out, "shootout run: --no-peer: measuring our broker alone\n");
        return 0;
    }
    char mosq[4096];
    /* Debian's is in /usr/sbin, often not on a user's PATH. */
    if (!child_find_program("mosquitto", "/usr/sbin/mosquitto", mosq, sizeof mosq)) {
        fprintf(out, "shootout run: mosquitto is not installed (Debian package mosquitto): "
                     "measuring our broker alone\n");
        return 0;
    }
    if (broker_start(r, PEER, mosq, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start %s: %s; measuring our broker alone\n", mosq,
                err);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: mosquitto %s, pid %d, on %s:%d\n", mosq,
            (int)r->brokers[PEER].pid, RUN_HOST, r->ports[PEER]);
    return 0;
}

/* ---- the MQTT experiments ------------------------------------------------ */

static uint64_t point_messages(const struct run *r, int e, const struct point *p)
{
    double m = e == LOADTEST ? RUN_LOAD_TOTAL / (p->a / 2) : RUN_PING_MESSAGES;
    m = round(m * r->scale);
    return m < 1 ? 1 : (uint64_t)m;
}

/* Runs grid point p of experiment e against broker i. */
static void measure(struct run *r, int e, unsigned p, int i)
{
    struct child *b = &r->brokers[i];
    struct run_cell *cell = &r->cells[e][p][i];
    const struct point *pt = &experiments[e].points[p];
    if (!b->started)
        return;
    cell->measured = true;
    cell->first = r->rows.n;
    if (!child_alive(b)) {
        cell->rc = BENCH_EXIT_RUNTIME;
        return;
    }
    struct bench_opts o;
    bench_opts_init(&o, e == LOADTEST ? "mqtt-load" : "mqtt-ping", NULL);
    snprintf(o.host, sizeof o.host, "%s", RUN_HOST);
    o.port = r->ports[i];
    snprintf(o.target, sizeof o.target, "%s", b->name);
    o.server_pid = b->pid;
    o.runs = r->runs;
    o.threads = r->threads;
    o.messages = point_messages(r, e, pt);
    o.brief = true;
    if (e == LOADTEST)
        cell->rc = mqtt_load_exec(&o, pt->a, &r->ctx, &r->rows);
    else
        cell->rc = mqtt_ping_exec(&o, pt->a, pt->b, &r->ctx, &r->rows);
    cell->n = r->rows.n - cell->first;
    if (cell->rc != BENCH_EXIT_OK)
        child_alive(b); /* a failure may be the broker dying: say so */
}

/* One of the article's tables: a row per broker that ran, then the ratio
 * of ours to Mosquitto's means. */
static void print_table(FILE *f, const struct run *r, int e, const char *title, unsigned metric,
                        double scale, int prec)
{
    const struct experiment *x = &experiments[e];
    struct run_table t = {.title = title, .corner = x->corner, .ncols = x->npoints};
    for (unsigned p = 0; p < x->npoints; p++)
        t.col[p] = x->points[p].label;
    for (int i = 0; i < NBROKERS; i++) {
        if (!r->brokers[i].started)
            continue;
        t.row[t.nrows] = r->brokers[i].name;
        for (unsigned p = 0; p < x->npoints; p++)
            t.cell[t.nrows][p] = &r->cells[e][p][i];
        t.nrows++;
    }
    char ratio[64];
    if (t.nrows == NBROKERS) {
        snprintf(ratio, sizeof ratio, "%s/%s", r->brokers[OURS].name, r->brokers[PEER].name);
        t.ratio = ratio;
        t.ratio_num = OURS;
        t.ratio_den = PEER;
    }
    run_table_print(f, &r->rows, &t, metric, scale, prec);
}

/* A measured row of experiment e, for the definitions it carries. */
static const struct result_row *some_row(const struct run *r, int e)
{
    for (unsigned p = 0; p < experiments[e].npoints; p++)
        for (int i = 0; i < NBROKERS; i++) {
            const struct run_cell *c = &r->cells[e][p][i];
            if (c->measured && c->n > 0)
                return &r->rows.rows[c->first];
        }
    return NULL;
}

static void print_experiment(FILE *f, const struct run *r, int e)
{
    const struct experiment *x = &experiments[e];
    char title[160];
    snprintf(title, sizeof title,
             "%s (%s, thousands of msgs/s, mean +/- stddev over %u run%s - bigger is better)",
             x->title, e == LOADTEST ? "throughput" : "throughput constrained by latency",
             r->runs, r->runs > 1 ? "s" : "");
    print_table(f, r, e, title, RESULT_METRIC(throughput), 1e-3, 1);
    snprintf(title, sizeof title, "%s: broker CPU time per message (us, user + system - smaller is "
             "better)", x->title);
    print_table(f, r, e, title, RESULT_METRIC(server_cpu_us_per_op), 1, 2);
    if (e == PINGTEST)
        print_table(f, r, e, "pingtest: mean round trip (us - smaller is better)",
                    RESULT_METRIC(lat_mean), 1, 0);

    const struct result_row *row = some_row(r, e);
    if (!row)
        return;
    fprintf(f, "\n%s, as measured:\n", x->title);
    fprintf(f, "  msgs/s: %s\n", row->throughput_def);
    fprintf(f, "  CPU: the broker process's user + system time (the scheduler's nanosecond "
               "count, /proc/PID/task/*/schedstat) over the run, per %s\n", row->op_def);
    if (e == LOADTEST) {
        fprintf(f, "  messages per publisher:");
        for (unsigned p = 0; p < x->npoints; p++)
            fprintf(f, "%s %llu at %u connections", p ? "," : "",
                    (unsigned long long)point_messages(r, e, &x->points[p]), x->points[p].a);
        fprintf(f, "\n  (half the connections publish, half subscribe; QoS 0, 16-byte payload)\n");
    } else {
        fprintf(f, "  requests per pair: %llu, one at a time; round trip: request queued to "
                   "reply received\n",
                (unsigned long long)point_messages(r, e, &x->points[0]));
    }
}

/* The largest RSS each broker reached while it was measured. */
static void print_memory(FILE *f, const struct run *r)
{
    fprintf(f, "\nbroker peak RSS:");
    const char *sep = "";
    for (int i = 0; i < NBROKERS; i++) {
        if (!r->brokers[i].started)
            continue;
        double kb = run_peak_rss_kb(&r->rows, r->brokers[i].name, "mqtt-");
        fprintf(f, "%s %s %.1f MB", sep, r->brokers[i].name, kb / 1024);
        sep = ",";
    }
    fputc('\n', f);
}

/* The MQTT part: brokers, grid, tables. Returns the exit code. */
static int run_mqtt(struct run *r, FILE *out)
{
    int rc = brokers_start(r, out);
    if (!r->brokers[OURS].started)
        return rc;
    fprintf(out, "shootout run: %u run%s per grid point and broker, %u client thread%s; "
                 "progress on stderr\n",
            r->runs, r->runs > 1 ? "s" : "", r->threads, r->threads > 1 ? "s" : "");
    fflush(out);
    bool failed = false;
    for (int e = 0; e < NEXPERIMENTS; e++)
        for (unsigned p = 0; p < experiments[e].npoints; p++)
            for (int i = 0; i < NBROKERS; i++) {
                measure(r, e, p, i);
                if (r->cells[e][p][i].measured && r->cells[e][p][i].rc != BENCH_EXIT_OK)
                    failed = true;
            }
    int stop_rc = child_finish_all(r->brokers, NBROKERS, out);
    if (r->brokers[OURS].lost || r->brokers[PEER].lost || stop_rc)
        rc = BENCH_EXIT_RUNTIME;
    else if (!rc && failed)
        rc = BENCH_EXIT_MISSED;
    for (int e = 0; e < NEXPERIMENTS; e++)
        print_experiment(out, r, e);
    print_memory(out, r);
    fflush(out);
    return rc;
}

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
    child_init(&r.brokers[OURS], "shootout");
    child_init(&r.brokers[PEER], "mosquitto");
    int rc = run_parse(&r, argc - 1, argv + 1);
    if (rc >= 0)
        return rc;

    uint64_t t0 = clock_now_ns();
    /* With JSON on stdout the tables move out of its way. */
    FILE *out = strcmp(r.json_path, "-") ? stdout : stderr;
    /* Raised before the servers start, so that they inherit it too. */
    long fds = net_raise_fd_limit();
    if (fds >= 0 && fds < RUN_FDS_NEEDED) {
        fprintf(stderr, "shootout run: 1000 connections need about %d open files, but the limit "
                        "is %ld (raise it with ulimit -n)\n", RUN_FDS_NEEDED, fds);
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
    if (r.parts & PART_MQTT)
        rc = run_mqtt(&r, out);
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
    for (int i = 0; i < NBROKERS; i++)
        child_free(&r.brokers[i]);
    fprintf(out, "total time: %.1f s\n", (double)(clock_now_ns() - t0) / 1e9);
    return rc;
}
