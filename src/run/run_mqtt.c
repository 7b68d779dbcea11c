/* run_mqtt.c - the MQTT part of `shootout run` (see run_mqtt.h): the
 * brokers as child processes, the article's grid through mqtt_load and
 * mqtt_ping, and the tables. */
#include "run/run_mqtt.h"

#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/mem.h"
#include "load/bench.h"
#include "load/mqtt/mqtt_bench.h"
#include "load/mqtt/mqtt_load.h"
#include "load/mqtt/mqtt_ping.h"
#include "report/run_table.h"
#include "run/child.h"

/* Message counts, the same for every broker. The MQTT part (3 runs of 7
 * grid points against 2 brokers) then takes two to three minutes on 2
 * cores; Mosquitto's loadtest (30 to 60 k msg/s there) is most of it. */
#define RUN_LOAD_TOTAL 200000.0 /* messages per loadtest run, over all publishers */
#define RUN_PING_MESSAGES 200.0 /* requests per pair */

enum { LOADTEST, PINGTEST, NEXPERIMENTS };
enum { OURS, PEER, NBROKERS }; /* ours first, as child_finish_all wants */
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

struct mqtt_job {
    const struct run_mqtt_opts *o;
    struct child brokers[NBROKERS];
    int ports[NBROKERS];
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
            port, CHILD_HOST);
    /* As root Mosquitto switches to user mosquitto, and a change of user
     * clears PR_SET_PDEATHSIG: it stays who we are. Without root the
     * option has no effect. */
    const struct passwd *pw = getpwuid(geteuid());
    if (pw)
        dprintf(fd, "user %s\n", pw->pw_name);
    return fd;
}

struct broker_launch {
    struct mqtt_job *j;
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
    char *ours[] = {(char *)l->exe, "broker", "--bind", CHILD_HOST, "--port", port_s, NULL};
    char *peer[] = {(char *)l->exe, "-c", conf_path, NULL};
    int rc = child_spawn(b, l->i == PEER ? peer : ours, conf_fd, err, len);
    if (conf_fd >= 0)
        close(conf_fd);
    if (rc < 0)
        return -1;
    l->j->ports[l->i] = port;
    return child_wait_port(b, port, err, len);
}

/* Starts broker i from exe on a free port and waits until it accepts
 * connections. 0, or -1 with err. */
static int broker_start(struct mqtt_job *j, int i, const char *exe, char *err, size_t len)
{
    struct broker_launch l = {j, i, exe};
    return child_start_on_free_port(&j->brokers[i], broker_launch, &l, err, len);
}

/* Starts the brokers and says where they listen. 0, or the exit code. */
static int brokers_start(struct mqtt_job *j, FILE *out)
{
    char err[512];
    if (broker_start(j, OURS, j->o->exe, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start our broker (%s broker): %s\n", j->o->exe, err);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: our broker %s, pid %d, on %s:%d\n", j->o->exe,
            (int)j->brokers[OURS].pid, CHILD_HOST, j->ports[OURS]);
    if (j->o->no_peer) {
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
    if (broker_start(j, PEER, mosq, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start %s: %s; measuring our broker alone\n", mosq,
                err);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: mosquitto %s, pid %d, on %s:%d\n", mosq,
            (int)j->brokers[PEER].pid, CHILD_HOST, j->ports[PEER]);
    return 0;
}

/* ---- the MQTT experiments ------------------------------------------------ */

static uint64_t point_messages(const struct mqtt_job *j, int e, const struct point *p)
{
    double m = e == LOADTEST ? RUN_LOAD_TOTAL / (p->a / 2) : RUN_PING_MESSAGES;
    m = round(m * j->o->scale);
    return m < 1 ? 1 : (uint64_t)m;
}

/* Runs grid point p of experiment e against broker i. */
static void measure(struct mqtt_job *j, int e, unsigned p, int i)
{
    struct child *b = &j->brokers[i];
    struct run_cell *cell = &j->cells[e][p][i];
    const struct point *pt = &experiments[e].points[p];
    if (!b->started)
        return;
    cell->measured = true;
    cell->first = j->o->rows->n;
    if (!child_alive(b)) {
        cell->rc = BENCH_EXIT_RUNTIME;
        return;
    }
    struct bench_opts o;
    struct mqtt_bench_opts m;
    mqtt_bench_init(&o, &m, e == LOADTEST ? "mqtt-load" : "mqtt-ping");
    snprintf(o.host, sizeof o.host, "%s", CHILD_HOST);
    o.port = j->ports[i];
    snprintf(o.target, sizeof o.target, "%s", b->name);
    o.server_pid = b->pid;
    o.runs = j->o->runs;
    o.threads = j->o->threads;
    o.brief = true;
    m.messages = point_messages(j, e, pt);
    if (e == LOADTEST) {
        struct mqtt_load_opts l = {.mqtt = m, .conns = pt->a};
        cell->rc = mqtt_load_exec(&o, &l, j->o->ctx, j->o->rows);
    } else {
        struct mqtt_ping_opts g = {.mqtt = m, .pairs = pt->a, .wsubs = pt->b};
        cell->rc = mqtt_ping_exec(&o, &g, j->o->ctx, j->o->rows);
    }
    cell->n = j->o->rows->n - cell->first;
    if (cell->rc != BENCH_EXIT_OK)
        child_alive(b); /* a failure may be the broker dying: say so */
}

/* One of the article's tables: a row per broker that ran, then the ratio
 * of ours to Mosquitto's means. */
static void print_table(FILE *f, const struct mqtt_job *j, int e, const char *title, unsigned metric,
                        double scale, int prec)
{
    const struct experiment *x = &experiments[e];
    struct run_table t = {.title = title, .corner = x->corner, .ncols = x->npoints};
    for (unsigned p = 0; p < x->npoints; p++)
        t.col[p] = x->points[p].label;
    for (int i = 0; i < NBROKERS; i++) {
        if (!j->brokers[i].started)
            continue;
        t.row[t.nrows] = j->brokers[i].name;
        for (unsigned p = 0; p < x->npoints; p++)
            t.cell[t.nrows][p] = &j->cells[e][p][i];
        t.nrows++;
    }
    char ratio[64];
    if (t.nrows == NBROKERS) {
        snprintf(ratio, sizeof ratio, "%s/%s", j->brokers[OURS].name, j->brokers[PEER].name);
        t.ratio = ratio;
        t.ratio_num = OURS;
        t.ratio_den = PEER;
    }
    run_table_print(f, j->o->rows, &t, metric, scale, prec);
}

/* A measured row of experiment e, for the definitions it carries. */
static const struct result_row *some_row(const struct mqtt_job *j, int e)
{
    for (unsigned p = 0; p < experiments[e].npoints; p++)
        for (int i = 0; i < NBROKERS; i++) {
            const struct run_cell *c = &j->cells[e][p][i];
            if (c->measured && c->n > 0)
                return &j->o->rows->rows[c->first];
        }
    return NULL;
}

static void print_experiment(FILE *f, const struct mqtt_job *j, int e)
{
    const struct experiment *x = &experiments[e];
    char title[160];
    snprintf(title, sizeof title,
             "%s (%s, thousands of msgs/s, mean +/- stddev over %u run%s - bigger is better)",
             x->title, e == LOADTEST ? "throughput" : "throughput constrained by latency",
             j->o->runs, j->o->runs > 1 ? "s" : "");
    print_table(f, j, e, title, RESULT_METRIC(throughput), 1e-3, 1);
    snprintf(title, sizeof title, "%s: broker CPU time per message (us, user + system - smaller is "
             "better)", x->title);
    print_table(f, j, e, title, RESULT_METRIC(server_cpu_us_per_op), 1, 2);
    if (e == PINGTEST)
        print_table(f, j, e, "pingtest: mean round trip (us - smaller is better)",
                    RESULT_METRIC(lat_mean), 1, 0);

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
}

/* The largest RSS each broker reached while it was measured. */
static void print_memory(FILE *f, const struct mqtt_job *j)
{
    fprintf(f, "\nbroker peak RSS:");
    const char *sep = "";
    for (int i = 0; i < NBROKERS; i++) {
        if (!j->brokers[i].started)
            continue;
        double kb = run_peak_rss_kb(j->o->rows, j->brokers[i].name, "mqtt-");
        fprintf(f, "%s %s %.1f MB", sep, j->brokers[i].name, kb / 1024);
        sep = ",";
    }
    fputc('\n', f);
}

/* ---- the part ------------------------------------------------------------ */

int run_mqtt(const struct run_mqtt_opts *o)
{
    struct mqtt_job *j = mem_calloc(1, sizeof *j);
    j->o = o;
    child_init(&j->brokers[OURS], "shootout");
    child_init(&j->brokers[PEER], "mosquitto");
    FILE *out = o->out;
    int rc = brokers_start(j, out);
    if (j->brokers[OURS].started) {
        fprintf(out, "shootout run: %u run%s per grid point and broker, %u client thread%s; "
                     "progress on stderr\n",
                o->runs, o->runs > 1 ? "s" : "", o->threads, o->threads > 1 ? "s" : "");
        fflush(out);
        bool failed = false;
        for (int e = 0; e < NEXPERIMENTS; e++)
            for (unsigned p = 0; p < experiments[e].npoints; p++)
                for (int i = 0; i < NBROKERS; i++) {
                    measure(j, e, p, i);
                    if (j->cells[e][p][i].measured && j->cells[e][p][i].rc != BENCH_EXIT_OK)
                        failed = true;
                }
        int stop_rc = child_finish_all(j->brokers, NBROKERS, out);
        if (j->brokers[OURS].lost || j->brokers[PEER].lost || stop_rc)
            rc = BENCH_EXIT_RUNTIME;
        else if (!rc && failed)
            rc = BENCH_EXIT_MISSED;
        for (int e = 0; e < NEXPERIMENTS; e++)
            print_experiment(out, j, e);
        print_memory(out, j);
        fflush(out);
    }
    for (int i = 0; i < NBROKERS; i++)
        child_free(&j->brokers[i]);
    mem_free(j);
    return rc;
}
