/* run_mqtt.c - the MQTT part of `shootout run` (see run_mqtt.h): the
 * brokers one at a time, ours as a child process and the contenders
 * through contender.h, the article's grid through mqtt_load and
 * mqtt_ping, and the tables. */
#include "run/run_mqtt.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/mem.h"
#include "load/bench.h"
#include "load/mqtt/mqtt_bench.h"
#include "load/mqtt/mqtt_load.h"
#include "load/mqtt/mqtt_ping.h"
#include "report/run_table.h"
#include "run/child.h"
#include "run/contender.h"

/* Message counts, the same for every broker. Each broker takes 30 to 60 s
 * of the MQTT part on 2 cores at these counts (Mosquitto's loadtest, 30
 * to 60 k msg/s there, is most of it; docs/run.md has the budget). */
#define RUN_LOAD_TOTAL 200000.0 /* messages per loadtest run, over all publishers */
#define RUN_PING_MESSAGES 200.0 /* requests per pair */

enum { LOADTEST, PINGTEST, NEXPERIMENTS };
#define MAX_POINTS 4
#define MAX_BROKERS 8 /* ours and the MQTT contenders */

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

/* The article's figures for the brokers that cannot be had here
 * (../shared/seeds: its first post's tables, and for C++ its follow-up's,
 * whose loadtest made 1000 messages only, as it says). */
#define QUOTED_HOW "the article's published figures, 2013 hardware (Lenovo W530 laptop), not " \
                   "measured here: not comparable with the rows above"
static const struct run_quoted quoted[NEXPERIMENTS][3] = {
    {{"D + vibe.d", {121.7, 166.9, 171.1, 167.9}, {1.5, 1.5, 3.3, 1.3}},
     {"Go", {90.9, 100.1, 99.3, 98.8}, {11, 0.1, 0.2, 0.3}},
     {"C++11 + boost::asio", {NAN, 109.6, 107.8, 108.5}, {NAN, 2.0, 1.1, 2.6}}},
    {{"D + vibe.d", {50.9, 38.3, 20.1}, {0.3, 0.2, 0.1}},
     {"Go", {45.2, 27.5, 16.0}, {0.2, 0.1, 0.1}},
     {"C++11 + boost::asio", {50.8, 44.2, 21.5}, {0.9, 0.2, 0.4}}},
};

/* A row of the tables: ours, or a contender. */
struct broker {
    const char *name;    /* the rows' series: "shootout", "mosquitto" */
    const char *version; /* what it says it is */
    char label[160];     /* "mosquitto (Mosquitto 2.0.11)" */
    char note[320];      /* not measured: why; "" if it was */
    bool ran;
    struct run_cell cells[NEXPERIMENTS][MAX_POINTS];
    unsigned runs[NEXPERIMENTS][MAX_POINTS]; /* each cell's: --runs, or fewer by the cap */
    double run_s[NEXPERIMENTS]; /* a run's wall time in its last cell that ran, 0: none yet */
};

struct mqtt_job {
    const struct run_mqtt_opts *o;
    struct broker b[MAX_BROKERS];
    unsigned n;
    struct broker cluster; /* --cluster: our nodes on one NATS server */
};

/* What one row is measured on: a broker's process, or a cluster's nodes
 * and its NATS server, each watched for dying and sampled together. */
struct servers {
    unsigned n;
    struct server {
        struct child *proc;
        int pid;  /* sampled: the server process (a contender's may be a child of proc) */
        int port; /* an MQTT target the connections are spread over; 0: none (NATS) */
    } s[CHILD_MAX];
};

/* ---- ours ---------------------------------------------------------------- */

struct ours_launch {
    const char *exe;
    int port;
    const char *cluster; /* a node's NATS URL, or NULL */
};

/* Spawns our broker on port and waits until it accepts. */
static int ours_launch(struct child *c, int port, void *arg, char *err, size_t len)
{
    struct ours_launch *l = arg;
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    /* One loop: the article ran every broker on one thread. */
    char *argv[] = {(char *)l->exe, "broker", "--bind", CHILD_HOST, "--port", port_s,
                    "--threads", "1", NULL, NULL, NULL};
    if (l->cluster) {
        argv[8] = "--cluster";
        argv[9] = (char *)l->cluster;
    }
    if (child_spawn(c, argv, -1, err, len) < 0)
        return -1;
    l->port = port;
    return child_wait_port(c, port, err, len);
}

/* ---- the MQTT experiments ------------------------------------------------ */

static uint64_t point_messages(const struct mqtt_job *j, int e, const struct point *p)
{
    double m = e == LOADTEST ? RUN_LOAD_TOTAL / (p->a / 2) : RUN_PING_MESSAGES;
    m = round(m * j->o->scale);
    return m < 1 ? 1 : (uint64_t)m;
}

/* The runs of b's next cell of experiment e: --runs, or for a contender
 * whose runs in its previous cell took so long that --runs of them would
 * pass the cell's time cap, as many as fit, RUN_MQTT_MIN_RUNS at least.
 * Every run keeps the article's message count; only the repetitions are
 * fewer (docs/run.md, "Time budget"). */
static unsigned cell_runs(const struct mqtt_job *j, const struct broker *b, int e)
{
    unsigned runs = j->o->runs;
    double cap = j->o->cell_cap_s, t = b->run_s[e];
    if (b == &j->b[0] || cap <= 0 || t <= 0 || runs <= RUN_MQTT_MIN_RUNS || runs * t <= cap)
        return runs;
    double fit = floor(cap / t);
    return fit < RUN_MQTT_MIN_RUNS ? RUN_MQTT_MIN_RUNS : (unsigned)fit;
}

/* Whether every process of sv runs; after a failed experiment
 * (after_failure), once each has had its second to finish dying. */
static bool servers_alive(const struct servers *sv, bool after_failure)
{
    for (unsigned i = 0; i < sv->n; i++)
        if (!(after_failure ? child_alive_after_failure(sv->s[i].proc) : child_alive(sv->s[i].proc)))
            return false;
    return true;
}

/* Runs grid point p of experiment e against broker b, which runs as sv.
 * Returns the cell's exit code. */
static int measure(struct mqtt_job *j, struct broker *b, const struct servers *sv, int e,
                   unsigned p)
{
    struct run_cell *cell = &b->cells[e][p];
    const struct point *pt = &experiments[e].points[p];
    struct result_set *rows = j->o->rows;
    cell->measured = true;
    cell->first = rows->n;
    if (!servers_alive(sv, false)) {
        cell->rc = BENCH_EXIT_RUNTIME;
        run_cell_fail(rows, cell, true);
        return cell->rc;
    }
    struct bench_opts o;
    struct mqtt_bench_opts m;
    mqtt_bench_init(&o, &m, e == LOADTEST ? "mqtt-load" : "mqtt-ping");
    snprintf(o.host, sizeof o.host, "%s", CHILD_HOST);
    snprintf(o.target, sizeof o.target, "%s", b->name);
    int pids[CHILD_MAX];
    for (unsigned i = 0; i < sv->n; i++) {
        pids[i] = sv->s[i].pid;
        if (!sv->s[i].port)
            continue;
        struct mqtt_bench_target *t = &m.targets[m.ntargets++];
        snprintf(t->host, sizeof t->host, "%s", CHILD_HOST);
        t->port = sv->s[i].port;
    }
    o.port = m.targets[0].port;
    if (m.ntargets == 1)
        m.ntargets = 0; /* one broker: o's own */
    bench_set_server(&o, pids, sv->n);
    o.runs = b->runs[e][p] = cell_runs(j, b, e);
    if (o.runs < j->o->runs)
        fprintf(stderr, "  %s, %s %s: %u runs of %u: a run took %.1f s in its previous cell, "
                        "and %u would pass the cell's time cap of %g s\n",
                b->name, experiments[e].title, pt->label, o.runs, j->o->runs, b->run_s[e],
                j->o->runs, j->o->cell_cap_s);
    o.threads = j->o->threads;
    if (j->o->timeout_s)
        o.timeout_s = j->o->timeout_s;
    o.brief = true;
    m.messages = point_messages(j, e, pt);
    uint64_t t0 = clock_now_ns();
    if (e == LOADTEST) {
        struct mqtt_load_opts l = {.mqtt = m, .conns = pt->a};
        cell->rc = mqtt_load_exec(&o, &l, j->o->ctx, rows);
    } else {
        struct mqtt_ping_opts g = {.mqtt = m, .pairs = pt->a, .wsubs = pt->b};
        cell->rc = mqtt_ping_exec(&o, &g, j->o->ctx, rows);
    }
    if (cell->rc == BENCH_EXIT_OK)
        b->run_s[e] = (double)(clock_now_ns() - t0) / 1e9 / o.runs;
    cell->n = rows->n - cell->first;
    run_rows_version(rows, cell->first, b->version);
    if (cell->rc != BENCH_EXIT_OK)
        run_cell_fail(rows, cell, !servers_alive(sv, true)); /* it may be dying */
    return cell->rc;
}

/* The whole grid against b. Returns whether every cell succeeded. */
static bool measure_all(struct mqtt_job *j, struct broker *b, const struct servers *sv)
{
    bool ok = true;
    b->ran = true;
    for (int e = 0; e < NEXPERIMENTS; e++)
        for (unsigned p = 0; p < experiments[e].npoints; p++)
            ok &= measure(j, b, sv, e, p) == BENCH_EXIT_OK;
    return ok;
}

/* Names b (version NULL: not available). */
static void broker_name(struct broker *b, const char *name, const char *version)
{
    b->name = name;
    b->version = version;
    if (version) /* NULL: not available */
        snprintf(b->label, sizeof b->label, "%s (%s)", name, version);
    else
        snprintf(b->label, sizeof b->label, "%s", name);
}

static struct broker *broker_add(struct mqtt_job *j, const char *name, const char *version)
{
    struct broker *b = &j->b[j->n++];
    broker_name(b, name, version);
    return b;
}

/* Our broker: started, measured, stopped. Returns the part's exit code
 * for it. */
static int race_ours(struct mqtt_job *j, FILE *out)
{
    const struct run_mqtt_opts *o = j->o;
    struct broker *b = broker_add(j, "shootout", o->version);
    struct child c;
    child_init(&c, "shootout");
    struct ours_launch l = {o->exe, 0, NULL};
    char err[512];
    if (child_start_on_free_port(&c, ours_launch, &l, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start our broker (%s broker): %s\n", o->exe, err);
        child_free(&c);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: our broker %s, pid %d, on %s:%d\n", o->exe, (int)c.pid,
            CHILD_HOST, l.port);
    fflush(out);
    struct servers sv = {1, {{&c, c.pid, l.port}}};
    return child_end_ours(&c, measure_all(j, b, &sv), out);
}

/* Contender i: skipped (a line, a note) if it cannot run or start, else
 * measured and stopped. Its failures are its cells'. */
static void race_contender(struct mqtt_job *j, unsigned i, FILE *out)
{
    const struct run_mqtt_opts *o = j->o;
    struct broker *b = broker_add(j, contender_defs[i].name, contender_version(o->roster, i));
    struct contender_proc cp;
    char why[300];
    if (contender_enter(&cp, o->roster, i, NULL, why, sizeof why, out) < 0) {
        snprintf(b->note, sizeof b->note, "not measured: %s", why);
        return;
    }
    struct servers sv = {1, {{&cp.proc, cp.server_pid, cp.port}}};
    measure_all(j, b, &sv);
    contender_stop(&cp, out);
}

/* ---- a cluster of ours on NATS ------------------------------------------- */

/* nats-server: $SHOOTOUT_NATS_SERVER, else on PATH, else /usr/sbin (where
 * Debian's package puts it, off a normal user's PATH), as the tests find
 * it. Whether there is one. */
static bool nats_server_path(char *out, size_t len)
{
    const char *env = getenv("SHOOTOUT_NATS_SERVER");
    if (env && env[0]) {
        snprintf(out, len, "%s", env);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, len, "%.*s/nats-server", (int)n, p);
        if (n && access(out, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    snprintf(out, len, "/usr/sbin/nats-server");
    return access(out, X_OK) == 0;
}

struct nats_launch {
    const char *exe;
    int port;
};

/* Spawns nats-server on port, without JetStream (the cluster routes QoS 0
 * through plain subjects), and waits until it accepts. */
static int nats_launch(struct child *c, int port, void *arg, char *err, size_t len)
{
    struct nats_launch *l = arg;
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    char *argv[] = {(char *)l->exe, "-a", CHILD_HOST, "-p", port_s, NULL};
    if (child_spawn(c, argv, -1, err, len) < 0)
        return -1;
    l->port = port;
    return child_wait_port(c, port, err, len);
}

/* "nats-server 2.9.11" from its start-up lines, or "nats-server". */
static void nats_version(struct child *c, char *out, size_t len)
{
    char line[256], err[64];
    snprintf(out, len, "nats-server");
    if (child_wait_line(c, "Version:", line, sizeof line, err, sizeof err) < 0)
        return;
    const char *v = strstr(line, "Version:") + strlen("Version:");
    v += strspn(v, " \t");
    snprintf(out, len, "nats-server %.*s", (int)strcspn(v, " \r\n"), v);
}

/* o->cluster of our brokers on one NATS server, every message published on
 * one node for a subscriber of another (the bench's --spread cross): the
 * cross-node path's throughput and its CPU, the nodes' and NATS's
 * together. Returns the part's exit code for it (our nodes' ends; a
 * missing nats-server is a note, not a failure). */
static int race_cluster(struct mqtt_job *j, FILE *out)
{
    const struct run_mqtt_opts *o = j->o;
    struct broker *b = &j->cluster;
    static char name[32], version[96];
    snprintf(name, sizeof name, "shootout-cluster%u", o->cluster);
    char nats_exe[4096], err[512];
    if (!nats_server_path(nats_exe, sizeof nats_exe)) {
        broker_name(b, name, NULL);
        snprintf(b->note, sizeof b->note, "not measured: no nats-server (%.200s; install the "
                 "nats-server package, or set SHOOTOUT_NATS_SERVER)", nats_exe);
        fprintf(out, "shootout run: the cluster is %s\n", b->note);
        return BENCH_EXIT_OK;
    }
    struct child nats, nodes[CHILD_MAX - 1];
    child_init(&nats, "nats-server");
    nats.stop_signal = SIGINT;
    struct nats_launch nl = {nats_exe, 0};
    if (child_start_on_free_port(&nats, nats_launch, &nl, err, sizeof err) < 0) {
        broker_name(b, name, NULL);
        snprintf(b->note, sizeof b->note, "not measured: nats-server did not start: %.200s", err);
        fprintf(out, "shootout run: the cluster is %s\n", b->note);
        child_free(&nats);
        return BENCH_EXIT_OK;
    }
    char nats_v[64], url[64];
    nats_version(&nats, nats_v, sizeof nats_v);
    snprintf(version, sizeof version, "%s, %u nodes on %s", o->version, o->cluster, nats_v);
    broker_name(b, name, version);
    struct servers sv = {0};
    snprintf(url, sizeof url, "nats://%s:%d", CHILD_HOST, nl.port);
    int rc = BENCH_EXIT_OK;
    unsigned started = 0;
    for (; started < o->cluster; started++) {
        struct child *c = &nodes[started];
        child_init(c, "shootout");
        struct ours_launch l = {o->exe, 0, url};
        if (child_start_on_free_port(c, ours_launch, &l, err, sizeof err) < 0) {
            fprintf(stderr, "shootout run: cannot start cluster node %u (%s broker --cluster "
                            "%s): %s\n", started + 1, o->exe, url, err);
            child_free(c);
            snprintf(b->note, sizeof b->note, "not measured: node %u did not start", started + 1);
            rc = BENCH_EXIT_RUNTIME;
            break;
        }
        sv.s[sv.n++] = (struct server){c, c->pid, l.port};
        fprintf(out, "shootout run: cluster node %u, pid %d, on %s:%d, on %s (pid %d)\n",
                started + 1, (int)c->pid, CHILD_HOST, l.port, url, (int)nats.pid);
    }
    sv.s[sv.n++] = (struct server){&nats, nats.pid, 0}; /* last: the rows' pid is node 1's */
    fflush(out);
    bool ok = rc == BENCH_EXIT_OK && measure_all(j, b, &sv);
    for (unsigned i = 0; i < started; i++)
        rc = child_rc_worse(rc, child_end_ours(&nodes[i], ok, out));
    child_finish(&nats, false, out);
    child_free(&nats);
    return rc;
}

/* ---- the tables ---------------------------------------------------------- */

/* One table of experiment e: a row per broker of bs[0..n), the ratio of
 * the first (ratio names it) to the best of the others that ran, and, with
 * quotes, the article's rows for the brokers that cannot be had here. */
static void print_table(FILE *f, const struct mqtt_job *j, const struct broker *const *bs,
                        unsigned n, const char *ratio, int e, const char *title, unsigned metric,
                        double scale, int prec, bool smaller_better, bool quotes)
{
    const struct experiment *x = &experiments[e];
    struct run_table t = {.title = title, .corner = x->corner, .ncols = x->npoints,
                          .smaller_better = smaller_better};
    for (unsigned p = 0; p < x->npoints; p++)
        t.col[p] = x->points[p].label;
    uint32_t others = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct broker *b = bs[i];
        t.row[t.nrows] = b->label;
        t.note[t.nrows] = b->ran ? NULL : b->note;
        for (unsigned p = 0; p < x->npoints; p++)
            t.cell[t.nrows][p] = &b->cells[e][p];
        if (i > 0 && b->ran)
            others |= 1u << t.nrows;
        t.nrows++;
    }
    if (bs[0]->ran && others) {
        t.ratio[0] = (struct run_ratio){ratio, 0, others};
        t.nratios = 1;
    }
    if (quotes) {
        t.quoted_how = QUOTED_HOW;
        t.quoted = quoted[e];
        t.nquoted = sizeof quoted[e] / sizeof quoted[e][0];
    }
    run_table_print(f, j->o->rows, &t, metric, scale, prec);
}

/* Beneath experiment e's first table: the cells the time cap gave fewer
 * runs than the tables' titles say, which hold for all its tables. */
static void print_capped(FILE *f, const struct mqtt_job *j, int e)
{
    const struct experiment *x = &experiments[e];
    bool any = false;
    for (unsigned i = 1; i < j->n; i++) {
        const struct broker *b = &j->b[i];
        bool named = false;
        for (unsigned p = 0; p < x->npoints; p++) {
            const struct run_cell *c = &b->cells[e][p];
            if (!c->measured || c->rc != BENCH_EXIT_OK || b->runs[e][p] >= j->o->runs)
                continue;
            if (!any)
                fprintf(f, "(fewer runs in these %s cells, by the time cap of %g s a cell "
                           "(--cell-cap):", x->title, j->o->cell_cap_s);
            if (named)
                fputc(',', f);
            else
                fprintf(f, "%s %s:", any ? ";" : "", b->name);
            fprintf(f, " %u at %s", b->runs[e][p], x->points[p].label);
            any = named = true;
        }
    }
    if (any)
        fputs(")\n", f);
}

/* Experiment e's tables of bs[0..n): throughput (the title's head given),
 * CPU per message (whose CPU: cpu_whose) and, for the pingtest, the round
 * trip. */
static void print_tables(FILE *f, const struct mqtt_job *j, const struct broker *const *bs,
                         unsigned n, const char *ratio, int e, const char *head,
                         const char *cpu_whose, bool quotes)
{
    const struct experiment *x = &experiments[e];
    char title[240];
    snprintf(title, sizeof title,
             "%s (%s, thousands of msgs/s, mean +/- stddev over %u run%s - bigger is better)",
             head, e == LOADTEST ? "throughput" : "throughput constrained by latency",
             j->o->runs, j->o->runs > 1 ? "s" : "");
    print_table(f, j, bs, n, ratio, e, title, RESULT_METRIC(throughput), 1e-3, 1, false, quotes);
    if (quotes)
        print_capped(f, j, e);
    snprintf(title, sizeof title, "%s: %s CPU time per message (us, user + system - smaller is "
             "better)", x->title, cpu_whose);
    print_table(f, j, bs, n, ratio, e, title, RESULT_METRIC(server_cpu_us_per_op), 1, 2, true,
                false);
    if (e == PINGTEST) {
        snprintf(title, sizeof title, "%s: mean round trip (us - smaller is better)", head);
        print_table(f, j, bs, n, ratio, e, title, RESULT_METRIC(lat_mean), 1, 0, true, false);
    }
}

/* A measured row of experiment e, for the definitions it carries. */
static const struct result_row *some_row(const struct mqtt_job *j, int e)
{
    for (unsigned p = 0; p < experiments[e].npoints; p++)
        for (unsigned i = 0; i < j->n; i++) {
            const struct run_cell *c = &j->b[i].cells[e][p];
            if (c->measured && c->n > 0)
                return &j->o->rows->rows[c->first];
        }
    return NULL;
}

static void print_experiment(FILE *f, const struct mqtt_job *j, int e)
{
    const struct experiment *x = &experiments[e];
    const struct broker *bs[MAX_BROKERS];
    for (unsigned i = 0; i < j->n; i++)
        bs[i] = &j->b[i];
    print_tables(f, j, bs, j->n, "shootout/best other", e, x->title, "broker", true);

    const struct result_row *row = some_row(j, e);
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
                    (unsigned long long)point_messages(j, e, &x->points[p]), x->points[p].a);
        fprintf(f, "\n  (half the connections publish, half subscribe; QoS 0, 16-byte payload)\n");
    } else {
        fprintf(f, "  requests per pair: %llu, one at a time; round trip: request queued to "
                   "reply received\n",
                (unsigned long long)point_messages(j, e, &x->points[0]));
    }
    for (unsigned i = 1; i < j->n; i++)
        if (j->b[i].ran) {
            fprintf(f, "  shootout/best other: our mean over the best other broker's in each "
                       "cell, which is named\n");
            break;
        }
}

/* The largest RSS each broker reached while it was measured (a
 * cluster's: its processes' together). */
static void print_memory(FILE *f, const struct mqtt_job *j)
{
    fprintf(f, "\nbroker peak RSS:");
    const char *sep = "";
    for (unsigned i = 0; i <= j->n; i++) {
        const struct broker *b = i < j->n ? &j->b[i] : &j->cluster;
        if (!b->ran)
            continue;
        double kb = run_peak_rss_kb(j->o->rows, b->name, "mqtt-");
        fprintf(f, "%s %s %.1f MB", sep, b->name, kb / 1024);
        sep = ",";
    }
    fputc('\n', f);
}

/* --cluster: the cluster's tables beside our single node's. */
static void print_cluster(FILE *f, const struct mqtt_job *j)
{
    const struct broker *bs[2] = {&j->cluster, &j->b[0]};
    char head[160];
    for (int e = 0; e < NEXPERIMENTS; e++) {
        snprintf(head, sizeof head, "%s, %u nodes on NATS against one node", experiments[e].title,
                 j->o->cluster);
        print_tables(f, j, bs, 2, "cluster/one node", e, head, "broker (the nodes and NATS "
                     "together)", false);
    }
    fprintf(f, "\nthe cluster, as measured: %u of our brokers (one loop each) on one nats-server, "
               "all on this machine's loopback; each message published on one node for a "
               "subscriber of another (the connections go round-robin over the nodes, each "
               "publisher on the node after its subscriber's); CPU: the nodes' and nats-server's "
               "processes together\n", j->o->cluster);
}

/* ---- the part ------------------------------------------------------------ */

int run_mqtt(const struct run_mqtt_opts *o)
{
    struct mqtt_job *j = mem_calloc(1, sizeof *j);
    j->o = o;
    FILE *out = o->out;
    fprintf(out, "shootout run: MQTT, %u run%s per grid point and broker, %u client thread%s, "
                 "one broker at a time; progress on stderr\n",
            o->runs, o->runs > 1 ? "s" : "", o->threads, o->threads > 1 ? "s" : "");
    fflush(out);
    int rc = race_ours(j, out);
    for (unsigned i = 0; i < contender_count && j->n < MAX_BROKERS; i++)
        if (contender_defs[i].kind == CK_MQTT && (o->roster->chosen >> i & 1))
            race_contender(j, i, out);
    if (o->cluster && j->b[0].ran) {
        rc = child_rc_worse(rc, race_cluster(j, out));
    }
    if (j->b[0].ran) {
        for (int e = 0; e < NEXPERIMENTS; e++)
            print_experiment(out, j, e);
        if (o->cluster)
            print_cluster(out, j);
        print_memory(out, j);
    }
    fflush(out);
    mem_free(j);
    return rc;
}
