/* shootout_run.c - `shootout run`: the brokers as child processes, the
 * article's grid against each, the comparison tables and one JSON file. */
#include "bench/shootout_run.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/mqtt_load.h"
#include "bench/mqtt_ping.h"
#include "core/net.h"
#include "core/opt.h"

/* Message counts, the same for every broker. The default job (3 runs of 7
 * grid points against 2 brokers) then takes two to three minutes on 2
 * cores; Mosquitto's loadtest (30 to 60 k msg/s there) is most of it. */
#define RUN_LOAD_TOTAL 200000.0 /* messages per loadtest run, over all publishers */
#define RUN_PING_MESSAGES 200.0 /* requests per pair */
#define RUN_QUICK_SCALE 0.5
#define RUN_DEFAULT_RUNS 3
#define RUN_START_TIMEOUT_NS 10000000000ull
#define RUN_STOP_TIMEOUT_NS 10000000000ull
#define RUN_HOST "127.0.0.1"
/* Descriptors the largest grid point needs in this process: connections
 * plus stdio, epoll and eventfds. */
#define RUN_FDS_NEEDED (1000 + 64)

static const char usage[] =
    "usage: shootout run [options]\n"
    "\n"
    "The main job: starts our MQTT broker and, if it is installed, Mosquitto, each\n"
    "on a free 127.0.0.1 port, and races them with the source article's two\n"
    "experiments, broker after broker at every grid point:\n"
    "  loadtest  100, 500, 750 and 1000 connections, QoS 0, 16-byte payloads\n"
    "  pingtest  400 pairs / 20 wildcard subscribers, 200 / 200, 100 / 400\n"
    "Prints the article's tables (thousands of msgs/s, mean +/- stddev) with a\n"
    "row per broker and their ratio, each broker's CPU time per message and the\n"
    "pingtest round-trip latency, and writes every run as JSON. The brokers are\n"
    "stopped at the end, and when this command is interrupted.\n"
    "\n"
    "options:\n"
    "  --runs R         runs per grid point and broker (default 3; 1 with --quick)\n"
    "  --quick          one run each and half the messages: about half a minute\n"
    "  --json FILE      where to write the results (default shootout-results.json;\n"
    "                   '-': stdout, and the tables go to stderr)\n"
    "  --threads T      client threads, one event loop each (default 1)\n"
    "  --no-peer        measure our broker alone, even if Mosquitto is installed\n"
    "  -h, --help       this text\n"
    "\n"
    "Exit codes: 0 ok, 1 a broker could not start or died, 2 usage error,\n"
    "3 an experiment failed (messages missing).\n";

enum { LOADTEST, PINGTEST, NEXPERIMENTS };
enum { OURS, PEER, NBROKERS };
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

struct broker_proc {
    const char *name; /* the results' target: "shootout", "mosquitto" */
    pid_t pid;        /* 0: not running */
    int port;
    int log_fd;   /* memfd holding the child's stderr, -1: none */
    bool started; /* it ran, so it has rows in the tables */
    bool lost;    /* could not start, or died during the job */
};

/* A grid point measured against one broker. */
struct cell {
    bool measured;
    int rc;            /* the experiment's exit code */
    unsigned first, n; /* its rows in run.rows: iterations, then any aggregates */
};

struct run {
    unsigned runs, threads;
    double scale;
    const char *json_path;
    bool no_peer;
    struct broker_proc brokers[NBROKERS];
    struct result_context ctx;
    struct result_set rows;
    struct cell cells[NEXPERIMENTS][MAX_POINTS][NBROKERS];
};

/* ---- child processes ----------------------------------------------------- */

/* The brokers' pids, for the signal handler. */
_Static_assert(sizeof(pid_t) <= sizeof(sig_atomic_t), "a pid must fit a sig_atomic_t");
static volatile sig_atomic_t child_pids[NBROKERS];

/* SIGINT or SIGTERM: stop the brokers, then die of the signal as usual. */
static void run_on_signal(int sig)
{
    for (int i = 0; i < NBROKERS; i++)
        if (child_pids[i] > 0)
            kill((pid_t)child_pids[i], SIGTERM);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* A free loopback port: bind port 0, read it, close. Another process may
 * take it before the broker binds it; broker_start retries then. */
static int free_port(char *err, size_t len)
{
    int fd = net_listen(RUN_HOST, 0, 1, 0, err, len);
    if (fd < 0)
        return -1;
    int port = net_local_port(fd);
    close(fd);
    return port;
}

/* Forks and executes argv with stdin and stdout on /dev/null and stderr
 * into log_fd; keep_fd (or -1) stays open across the exec. Returns the
 * child's pid or -1. */
static pid_t spawn(char *const argv[], int log_fd, int keep_fd)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The child dies with us however we end, SIGKILL included; the check
     * covers a parent that died before the prctl. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
        _exit(127);
    /* The mask and ignored signals survive exec: give the broker a clean
     * slate (the client engine ignores SIGPIPE). */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log_fd, 2) < 0)
        _exit(127);
    if (keep_fd >= 0)
        fcntl(keep_fd, F_SETFD, 0);
    execv(argv[0], argv);
    dprintf(2, "cannot execute %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* The last line the child wrote to stderr, for messages about it. */
static void log_tail(const struct broker_proc *b, char *out, size_t len)
{
    char buf[4096];
    struct stat st;
    out[0] = '\0';
    if (b->log_fd < 0 || fstat(b->log_fd, &st) < 0)
        return;
    off_t off = st.st_size > (off_t)sizeof buf - 1 ? st.st_size - ((off_t)sizeof buf - 1) : 0;
    ssize_t n = pread(b->log_fd, buf, sizeof buf - 1, off);
    if (n <= 0)
        return;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    const char *nl = strrchr(buf, '\n'), *last = nl ? nl + 1 : buf;
    size_t m = strlen(last) < len ? strlen(last) : len - 1;
    memcpy(out, last, m);
    out[m] = '\0';
}

static void describe_status(int status, char *out, size_t len)
{
    if (WIFEXITED(status))
        snprintf(out, len, "exit %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, len, "killed by %s", strsignal(WTERMSIG(status)));
    else
        snprintf(out, len, "status %d", status);
}

/* Reaps broker i if it has exited, saying so. Returns whether it runs. */
static bool broker_alive(struct run *r, int i)
{
    struct broker_proc *b = &r->brokers[i];
    int status;
    if (!b->pid)
        return false;
    if (waitpid(b->pid, &status, WNOHANG) != b->pid)
        return true;
    if (b->started) { /* broker_start reports failures to start */
        char how[64], tail[256];
        describe_status(status, how, sizeof how);
        log_tail(b, tail, sizeof tail);
        fprintf(stderr, "shootout run: %s (pid %d) died during the job (%s)%s%s\n", b->name,
                (int)b->pid, how, tail[0] ? ": " : "", tail);
        b->lost = true;
    }
    b->pid = 0;
    child_pids[i] = 0;
    return false;
}

/* SIGTERM, up to RUN_STOP_TIMEOUT_NS for the exit, then SIGKILL. Returns
 * the wait status, or -1 if broker i was not running. */
static int broker_stop(struct run *r, int i)
{
    struct broker_proc *b = &r->brokers[i];
    if (!broker_alive(r, i))
        return -1;
    kill(b->pid, SIGTERM);
    uint64_t deadline = mc_now_ns() + RUN_STOP_TIMEOUT_NS;
    int status = 0;
    pid_t w;
    while ((w = waitpid(b->pid, &status, WNOHANG)) == 0 && mc_now_ns() < deadline)
        sleep_ms(10);
    if (w == 0) {
        fprintf(stderr, "shootout run: %s (pid %d) did not stop within %llu s of SIGTERM: killing it\n",
                b->name, (int)b->pid, RUN_STOP_TIMEOUT_NS / 1000000000ull);
        kill(b->pid, SIGKILL);
        waitpid(b->pid, &status, 0);
    }
    b->pid = 0;
    child_pids[i] = 0;
    return status;
}

/* Waits until broker i accepts TCP connections. 0, or -1 with err. */
static int broker_wait_ready(struct run *r, int i, char *err, size_t len)
{
    struct broker_proc *b = &r->brokers[i];
    struct sockaddr_in a = {
        .sin_family = AF_INET,
        .sin_port = htons((uint16_t)b->port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    uint64_t deadline = mc_now_ns() + RUN_START_TIMEOUT_NS;
    for (;;) {
        if (!broker_alive(r, i)) {
            snprintf(err, len, "exited during startup");
            return -1;
        }
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(err, len, "socket: %s", strerror(errno));
            return -1;
        }
        int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
        close(fd);
        if (rc == 0)
            return 0;
        if (mc_now_ns() > deadline) {
            snprintf(err, len, "did not accept connections on port %d within %llu s", b->port,
                     RUN_START_TIMEOUT_NS / 1000000000ull);
            return -1;
        }
        sleep_ms(20);
    }
}

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

/* Starts broker i from exe on a free port and waits until it accepts
 * connections, trying a few ports in case one is taken meanwhile. 0, or -1
 * with err. */
static int broker_start(struct run *r, int i, const char *exe, char *err, size_t len)
{
    struct broker_proc *b = &r->brokers[i];
    b->log_fd = memfd_create(b->name, MFD_CLOEXEC);
    if (b->log_fd < 0) {
        snprintf(err, len, "memfd_create: %s", strerror(errno));
        return -1;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        b->port = free_port(err, len);
        if (b->port < 0)
            return -1;
        char port[16], conf_path[64];
        snprintf(port, sizeof port, "%d", b->port);
        int conf_fd = -1;
        if (i == PEER) {
            conf_fd = mosquitto_conf(b->port, err, len);
            if (conf_fd < 0)
                return -1;
            snprintf(conf_path, sizeof conf_path, "/proc/self/fd/%d", conf_fd);
        }
        char *ours[] = {(char *)exe, "broker", "--bind", RUN_HOST, "--port", port, NULL};
        char *peer[] = {(char *)exe, "-c", conf_path, NULL};
        b->pid = spawn(i == PEER ? peer : ours, b->log_fd, conf_fd);
        if (conf_fd >= 0)
            close(conf_fd);
        if (b->pid < 0) {
            b->pid = 0;
            snprintf(err, len, "fork: %s", strerror(errno));
            return -1;
        }
        child_pids[i] = b->pid;
        if (broker_wait_ready(r, i, err, len) == 0) {
            b->started = true;
            return 0;
        }
        if (b->pid) /* it runs but does not accept: no point in retrying */
            break;
    }
    broker_stop(r, i);
    b->lost = true;
    char tail[256];
    log_tail(b, tail, sizeof tail);
    if (tail[0]) {
        size_t n = strlen(err);
        snprintf(err + n, len - n, " (its last words: %s)", tail);
    }
    return -1;
}

/* Mosquitto on PATH, else Debian's /usr/sbin/mosquitto (sbin is often not
 * on a user's PATH). */
static bool find_mosquitto(char *path, size_t len)
{
    for (const char *p = getenv("PATH"); p && *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0) {
            snprintf(path, len, "%.*s/mosquitto", (int)n, p);
            if (access(path, X_OK) == 0)
                return true;
        }
        p += n + (p[n] == ':');
    }
    snprintf(path, len, "/usr/sbin/mosquitto");
    return access(path, X_OK) == 0;
}

/* ---- the experiments ----------------------------------------------------- */

static uint64_t point_messages(const struct run *r, int e, const struct point *p)
{
    double m = e == LOADTEST ? RUN_LOAD_TOTAL / (p->a / 2) : RUN_PING_MESSAGES;
    m = round(m * r->scale);
    return m < 1 ? 1 : (uint64_t)m;
}

/* Runs grid point p of experiment e against broker i. */
static void measure(struct run *r, int e, unsigned p, int i)
{
    struct broker_proc *b = &r->brokers[i];
    struct cell *cell = &r->cells[e][p][i];
    const struct point *pt = &experiments[e].points[p];
    if (!b->started)
        return;
    cell->measured = true;
    cell->first = r->rows.n;
    if (!broker_alive(r, i)) {
        cell->rc = BENCH_EXIT_RUNTIME;
        return;
    }
    struct bench_opts o;
    bench_opts_init(&o, e == LOADTEST ? "mqtt-load" : "mqtt-ping", NULL);
    snprintf(o.host, sizeof o.host, "%s", RUN_HOST);
    o.port = b->port;
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
        broker_alive(r, i); /* a failure may be the broker dying: say so */
}

/* ---- the tables ---------------------------------------------------------- */

/* Mean and stddev of one metric over a cell's iterations; false if the
 * cell has none to offer. */
static bool cell_stats(const struct run *r, const struct cell *c, unsigned metric, double *mean,
                       double *sd)
{
    if (!c->measured || c->rc != BENCH_EXIT_OK)
        return false;
    struct result_row agg[3];
    result_aggregate(&r->rows.rows[c->first], r->runs, agg);
    *mean = agg[0].metric[metric];
    *sd = agg[2].metric[metric];
    return true;
}

#define COL0 20
#define COLW 18

/* A table cell, padded unless it ends the line. */
static void put_cell(FILE *f, int width, const char *text, bool last)
{
    if (last)
        fprintf(f, "%s\n", text);
    else
        fprintf(f, "%-*s", width, text);
}

/* One of the article's tables: a row per broker that ran, then the ratio
 * of ours to Mosquitto's means. */
static void print_table(FILE *f, const struct run *r, int e, const char *title, unsigned metric,
                        double scale, int prec)
{
    const struct experiment *x = &experiments[e];
    char buf[64];
    fprintf(f, "\n%s\n", title);
    snprintf(buf, sizeof buf, "%s:", x->corner);
    put_cell(f, COL0, buf, false);
    for (unsigned p = 0; p < x->npoints; p++)
        put_cell(f, COLW, x->points[p].label, p + 1 == x->npoints);
    double mean[NBROKERS][MAX_POINTS];
    bool ok[NBROKERS][MAX_POINTS] = {{false}};
    for (int i = 0; i < NBROKERS; i++) {
        if (!r->brokers[i].started)
            continue;
        snprintf(buf, sizeof buf, "%s:", r->brokers[i].name);
        put_cell(f, COL0, buf, false);
        for (unsigned p = 0; p < x->npoints; p++) {
            double sd;
            ok[i][p] = cell_stats(r, &r->cells[e][p][i], metric, &mean[i][p], &sd);
            if (ok[i][p])
                snprintf(buf, sizeof buf, "%.*f +/- %.*f", prec, mean[i][p] * scale, prec,
                         sd * scale);
            else
                snprintf(buf, sizeof buf, "failed");
            put_cell(f, COLW, buf, p + 1 == x->npoints);
        }
    }
    if (!r->brokers[OURS].started || !r->brokers[PEER].started)
        return;
    snprintf(buf, sizeof buf, "%s/%s:", r->brokers[OURS].name, r->brokers[PEER].name);
    put_cell(f, COL0, buf, false);
    for (unsigned p = 0; p < x->npoints; p++) {
        if (ok[OURS][p] && ok[PEER][p] && mean[PEER][p] > 0)
            snprintf(buf, sizeof buf, "%.2fx", mean[OURS][p] / mean[PEER][p]);
        else
            snprintf(buf, sizeof buf, "-");
        put_cell(f, COLW, buf, p + 1 == x->npoints);
    }
}

/* A measured row of experiment e, for the definitions it carries. */
static const struct result_row *some_row(const struct run *r, int e)
{
    for (unsigned p = 0; p < experiments[e].npoints; p++)
        for (int i = 0; i < NBROKERS; i++) {
            const struct cell *c = &r->cells[e][p][i];
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
        double kb = 0;
        for (unsigned k = 0; k < r->rows.n; k++) {
            const struct result_row *row = &r->rows.rows[k];
            if (!row->aggregate_name && !strcmp(row->target, r->brokers[i].name) &&
                row->server_rss_max_kb > kb)
                kb = row->server_rss_max_kb;
        }
        fprintf(f, "%s %s %.1f MB", sep, r->brokers[i].name, kb / 1024);
        sep = ",";
    }
    fputc('\n', f);
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
    enum { OPT_RUNS = 1, OPT_QUICK, OPT_JSON, OPT_THREADS, OPT_NO_PEER, OPT_SCALE };
    static const struct option opts[] = {
        {"runs", required_argument, NULL, OPT_RUNS},
        {"quick", no_argument, NULL, OPT_QUICK},
        {"json", required_argument, NULL, OPT_JSON},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"no-peer", no_argument, NULL, OPT_NO_PEER},
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
        case OPT_JSON:
            r->json_path = optarg;
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
        case OPT_SCALE:
            errno = 0;
            r->scale = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(r->scale > 0 && r->scale <= 100))
                return run_usage_error("--scale wants a number above 0 and up to 100, not '%s'",
                                       optarg);
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
    r->runs = runs ? (unsigned)runs : quick ? 1 : RUN_DEFAULT_RUNS;
    if (quick)
        r->scale *= RUN_QUICK_SCALE;
    return -1;
}

/* Starts the brokers and says where they listen. 0, or the exit code. */
static int run_start(struct run *r, FILE *out)
{
    char exe[4096], err[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        snprintf(exe, sizeof exe, "/proc/self/exe");
    else
        exe[n] = '\0';
    if (broker_start(r, OURS, exe, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start our broker (%s broker): %s\n", exe, err);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: our broker %s, pid %d, on %s:%d\n", exe, (int)r->brokers[OURS].pid,
            RUN_HOST, r->brokers[OURS].port);
    if (r->no_peer) {
        fprintf(out, "shootout run: --no-peer: measuring our broker alone\n");
        return 0;
    }
    char mosq[4096];
    if (!find_mosquitto(mosq, sizeof mosq)) {
        fprintf(out, "shootout run: mosquitto is not installed (Debian package mosquitto): "
                     "measuring our broker alone\n");
        return 0;
    }
    if (broker_start(r, PEER, mosq, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start %s: %s; measuring our broker alone\n", mosq,
                err);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: mosquitto %s, pid %d, on %s:%d\n", mosq, (int)r->brokers[PEER].pid,
            RUN_HOST, r->brokers[PEER].port);
    return 0;
}

/* Stops the brokers; ours must exit 0. Returns 0 or BENCH_EXIT_RUNTIME. */
static int run_stop(struct run *r, FILE *out)
{
    int rc = 0;
    for (int i = 0; i < NBROKERS; i++) {
        struct broker_proc *b = &r->brokers[i];
        if (!b->started)
            continue;
        int pid = (int)b->pid;
        int status = broker_stop(r, i);
        if (status < 0) { /* it died earlier, as broker_alive said */
            rc = BENCH_EXIT_RUNTIME;
            continue;
        }
        char how[64];
        describe_status(status, how, sizeof how);
        fprintf(out, "shootout run: stopped %s (pid %d): %s\n", b->name, pid, how);
        if (i == OURS && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            char tail[256];
            log_tail(b, tail, sizeof tail);
            fprintf(stderr, "shootout run: our broker should exit 0 on SIGTERM; its last words: %s\n",
                    tail);
            rc = BENCH_EXIT_RUNTIME;
        }
    }
    return rc;
}

int shootout_run_main(int argc, char **argv, const char *version)
{
    struct run r = {
        .threads = 1,
        .scale = 1,
        .json_path = "shootout-results.json",
        .brokers = {{.name = "shootout", .log_fd = -1}, {.name = "mosquitto", .log_fd = -1}},
    };
    int rc = run_parse(&r, argc - 1, argv + 1);
    if (rc >= 0)
        return rc;

    uint64_t t0 = mc_now_ns();
    /* With JSON on stdout the tables move out of its way. */
    FILE *out = strcmp(r.json_path, "-") ? stdout : stderr;
    /* Raised before the brokers start, so that they inherit it too. */
    long fds = net_raise_fd_limit();
    if (fds >= 0 && fds < RUN_FDS_NEEDED) {
        fprintf(stderr, "shootout run: 1000 connections need about %d open files, but the limit "
                        "is %ld (raise it with ulimit -n)\n", RUN_FDS_NEEDED, fds);
        return BENCH_EXIT_RUNTIME;
    }
    struct sigaction sa = {.sa_handler = run_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    rc = run_start(&r, out);
    if (r.brokers[OURS].started) {
        result_context_init(&r.ctx, argc, argv, version);
        fprintf(out, "shootout run: %u run%s per grid point and broker, %u client thread%s; "
                     "progress on stderr\n",
                r.runs, r.runs > 1 ? "s" : "", r.threads, r.threads > 1 ? "s" : "");
        fflush(out);
        int failed = 0;
        for (int e = 0; e < NEXPERIMENTS; e++)
            for (unsigned p = 0; p < experiments[e].npoints; p++)
                for (int i = 0; i < NBROKERS; i++) {
                    measure(&r, e, p, i);
                    if (r.cells[e][p][i].measured && r.cells[e][p][i].rc != BENCH_EXIT_OK)
                        failed = 1;
                }
        int stop_rc = run_stop(&r, out);
        if (r.brokers[OURS].lost || r.brokers[PEER].lost || stop_rc)
            rc = BENCH_EXIT_RUNTIME;
        else if (!rc && failed)
            rc = BENCH_EXIT_MISSED;

        for (int e = 0; e < NEXPERIMENTS; e++)
            print_experiment(out, &r, e);
        print_memory(out, &r);
        char err[256];
        if (result_write_json(r.json_path, &r.ctx, r.rows.rows, r.rows.n, err, sizeof err) < 0) {
            fprintf(stderr, "shootout run: %s\n", err);
            if (!rc)
                rc = BENCH_EXIT_RUNTIME;
        } else if (strcmp(r.json_path, "-")) {
            fprintf(out, "results: %s (%u rows)\n", r.json_path, r.rows.n);
        }
        result_set_free(&r.rows);
        result_context_free(&r.ctx);
    }
    for (int i = 0; i < NBROKERS; i++)
        if (r.brokers[i].log_fd >= 0)
            close(r.brokers[i].log_fd);
    fprintf(out, "total time: %.1f s\n", (double)(mc_now_ns() - t0) / 1e9);
    return rc;
}
