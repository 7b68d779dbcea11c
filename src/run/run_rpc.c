/* run_rpc.c - the RPC part of `shootout run` (see run_rpc.h): the servers
 * as child processes, the sweep and throughput cells through rpc_seq, and
 * the tables. */
#include "run/run_rpc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/mem.h"
#include "load/bench.h"
#include "load/rpc/rpc_seq.h"
#include "report/run_table.h"
#include "run/child.h"

/* The article's sweep, and the calls in flight of the throughput table.
 * Its cells make as many calls as the sweep's last point, whose runs are
 * the column for one call in flight. */
static const unsigned sweep_n[] = {1000, 2000, 3000, 4000, 5000};
static const unsigned tp_conc[] = {1, 10, 50};
#define NPOINTS (sizeof sweep_n / sizeof sweep_n[0])
#define NCONC (sizeof tp_conc / sizeof tp_conc[0])
/* Calls before the clock starts in a throughput cell, so that all
 * connections and streams are in use when it does. The sweep has none,
 * as the article. */
#define RPC_TP_WARMUP 200.0
#define PEER_PATH "../peers/car-grpc-cpp-server" /* from our binary's directory */

enum { OURS, PEER, NSERVERS }; /* ours first, as child_finish_all wants */
enum { OURS_REST, OURS_GRPC, PEER_GRPC, NTARGETS };

/* What a table row measures: a protocol against a server. */
static const struct target {
    const char *label;
    int server;
    const struct rpc_protocol *proto;
} targets[NTARGETS] = {
    {"shootout REST", OURS, &rpc_rest_protocol},
    {"shootout gRPC", OURS, &rpc_grpc_protocol},
    {"grpc-c++ gRPC", PEER, &rpc_grpc_protocol},
};

struct rpc_job {
    const struct run_rpc_opts *o;
    struct child servers[NSERVERS];
    int rest_port, grpc_port[NSERVERS];
    uint64_t sweep_calls[NPOINTS], tp_warmup;
    char sweep_label[NPOINTS][16], tp_label[NCONC][16];
    struct run_cell sweep[NPOINTS][NTARGETS], tp[NCONC][NTARGETS]; /* tp[0]: unused */
    /* The targets whose server runs, in table order. */
    unsigned nrows;
    int row_target[NTARGETS];
};

static uint64_t scaled(double n, double scale)
{
    double m = round(n * scale);
    return m < 1 ? 1 : (uint64_t)m;
}

/* ---- the servers --------------------------------------------------------- */

/* The port after the last ':' of the address that follows key in line,
 * e.g. key "REST (HTTP/1.1) on " in "... on 127.0.0.1:41234, ...". -1 if
 * there is none ("off"). */
static int port_after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p)
        return -1;
    p += strlen(key);
    size_t n = strcspn(p, ", ");
    const char *colon = NULL;
    for (const char *q = p; q < p + n; q++)
        if (*q == ':')
            colon = q;
    if (!colon)
        return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return end > colon + 1 && port > 0 && port < 65536 ? (int)port : -1;
}

/* Our car-server on ports it picks itself and names in its start-up line.
 * 0, or -1 with err. */
static int start_ours(struct rpc_job *j, char *err, size_t len)
{
    struct child *c = &j->servers[OURS];
    char *argv[] = {(char *)j->o->exe, "car-server", "--bind", CHILD_HOST, "--rest-port", "0",
                    "--grpc-port", "0", "--threads", "1", NULL};
    char line[512];
    if (child_spawn(c, argv, -1, err, len) < 0)
        return -1;
    if (child_wait_line(c, "REST (HTTP/1.1) on ", line, sizeof line, err, len) < 0)
        return child_give_up(c, err, len);
    j->rest_port = port_after(line, "REST (HTTP/1.1) on ");
    j->grpc_port[OURS] = port_after(line, "gRPC (h2c) on ");
    if (j->rest_port < 0 || j->grpc_port[OURS] < 0) {
        snprintf(err, len, "no REST and gRPC ports in \"%.200s\"", line);
        return child_give_up(c, err, len);
    }
    c->started = true;
    return 0;
}

struct peer_launch {
    struct rpc_job *j;
    const char *path;
};

/* Spawns the gRPC C++ peer on port; it is ready when it says "listening",
 * with its address (the port after the line's last ':', if it names one). */
static int peer_launch(struct child *c, int port, void *arg, char *err, size_t len)
{
    const struct peer_launch *l = arg;
    char port_s[16], line[512];
    snprintf(port_s, sizeof port_s, "%d", port);
    char *argv[] = {(char *)l->path, "--port", port_s, "--threads", "1", NULL};
    if (child_spawn(c, argv, -1, err, len) < 0 ||
        child_wait_line(c, "listening", line, sizeof line, err, len) < 0)
        return -1;
    const char *colon = strrchr(line, ':');
    int said = colon ? atoi(colon + 1) : 0;
    l->j->grpc_port[PEER] = said > 0 && said < 65536 ? said : port;
    return 0;
}

/* Starts the servers and says where they listen. 0, or the exit code. */
static int servers_start(struct rpc_job *j, FILE *out)
{
    const struct run_rpc_opts *o = j->o;
    char err[512];
    if (start_ours(j, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start our car-server (%s car-server): %s\n", o->exe,
                err);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: our car-server %s, pid %d, REST on %s:%d, gRPC on %s:%d\n", o->exe,
            (int)j->servers[OURS].pid, CHILD_HOST, j->rest_port, CHILD_HOST, j->grpc_port[OURS]);
    if (o->no_peer) {
        fprintf(out, "shootout run: --no-peer: measuring our car-server alone\n");
        return 0;
    }
    char path[4096];
    const char *slash = strrchr(o->exe, '/');
    snprintf(path, sizeof path, "%.*s/%s", slash ? (int)(slash - o->exe) : 1,
             slash ? o->exe : ".", PEER_PATH);
    if (access(path, X_OK) < 0) {
        fprintf(out, "shootout run: the gRPC C++ peer is not built (%s): measuring our "
                     "car-server alone\n", path);
        return 0;
    }
    struct peer_launch l = {j, path};
    if (child_start_on_free_port(&j->servers[PEER], peer_launch, &l, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start %s: %s; measuring our car-server alone\n",
                path, err);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: grpc-c++ %s, pid %d, gRPC on %s:%d\n", path,
            (int)j->servers[PEER].pid, CHILD_HOST, j->grpc_port[PEER]);
    return 0;
}

/* ---- the cells ----------------------------------------------------------- */

/* calls calls (after warmup untimed ones), conc in flight, runs times,
 * against target t. Returns false if the cell failed. */
static bool measure(struct rpc_job *j, struct run_cell *cell, int t, uint64_t calls,
                    uint64_t warmup, unsigned conc)
{
    const struct run_rpc_opts *o = j->o;
    const struct target *tg = &targets[t];
    struct child *srv = &j->servers[tg->server];
    if (!srv->started)
        return true;
    cell->measured = true;
    cell->first = o->rows->n;
    if (!child_alive(srv)) {
        cell->rc = BENCH_EXIT_RUNTIME;
        return false;
    }
    struct bench_opts b;
    bench_opts_init(&b, "rpc-seq");
    snprintf(b.host, sizeof b.host, "%s", CHILD_HOST);
    b.port = tg->proto == &rpc_rest_protocol ? j->rest_port : j->grpc_port[tg->server];
    snprintf(b.target, sizeof b.target, "%s", srv->name);
    b.server_pid = srv->pid;
    b.runs = o->runs;
    b.brief = true;
    struct rpc_seq_opts s = {
        .proto = tg->proto,
        .requests = calls,
        .warmup = warmup,
        .concurrency = conc,
        .connections = 1,
        .seed = 1,
    };
    cell->rc = rpc_seq_exec(&b, &s, o->ctx, o->rows);
    cell->n = o->rows->n - cell->first;
    if (cell->rc != BENCH_EXIT_OK)
        child_alive(srv); /* a failure may be the server dying: say so */
    return cell->rc == BENCH_EXIT_OK;
}

/* ---- the tables ---------------------------------------------------------- */

/* The throughput table's cell for tp_conc[c] and target t. */
static const struct run_cell *tp_cell(const struct rpc_job *j, unsigned c, int t)
{
    return tp_conc[c] == 1 ? &j->sweep[NPOINTS - 1][t] : &j->tp[c][t];
}

/* The mean of metric over a cell's runs; false if it failed. */
static bool cell_mean(const struct rpc_job *j, const struct run_cell *cell, unsigned metric,
                      double *mean)
{
    double sd;
    return run_cell_stats(j->o->rows, cell, metric, mean, &sd);
}

static int row_of(const struct rpc_job *j, int target)
{
    for (unsigned r = 0; r < j->nrows; r++)
        if (j->row_target[r] == target)
            return (int)r;
    return -1;
}

/* A grid table over the sweep (sweep true) or the concurrency levels, a
 * row per target, and ours/peer over gRPC when both ran. */
static void print_grid(FILE *f, const struct rpc_job *j, bool sweep, const char *title,
                       unsigned metric, double scale, int prec)
{
    struct run_table t = {
        .title = title,
        .corner = sweep ? "requests" : "in flight",
        .ncols = sweep ? NPOINTS : NCONC,
        .nrows = j->nrows,
    };
    for (unsigned c = 0; c < t.ncols; c++)
        t.col[c] = sweep ? j->sweep_label[c] : j->tp_label[c];
    for (unsigned r = 0; r < j->nrows; r++) {
        int tg = j->row_target[r];
        t.row[r] = targets[tg].label;
        for (unsigned c = 0; c < t.ncols; c++)
            t.cell[r][c] = sweep ? &j->sweep[c][tg] : tp_cell(j, c, tg);
    }
    int ours = row_of(j, OURS_GRPC), peer = row_of(j, PEER_GRPC);
    if (ours >= 0 && peer >= 0) {
        t.ratio = "shootout/grpc-c++ gRPC";
        t.ratio_num = (unsigned)ours;
        t.ratio_den = (unsigned)peer;
    }
    run_table_print(f, j->o->rows, &t, metric, scale, prec);
}

/* The article's second table: at each N, which of two targets took longer
 * and by how much. */
static void slower_row(struct tt *tt, const struct rpc_job *j, int a, int b, const char *label)
{
    tt_cell(tt, "%s:", label);
    for (unsigned p = 0; p < NPOINTS; p++) {
        double ta, tb;
        if (!cell_mean(j, &j->sweep[p][a], RESULT_METRIC(duration_s), &ta) ||
            !cell_mean(j, &j->sweep[p][b], RESULT_METRIC(duration_s), &tb) || ta <= 0 || tb <= 0) {
            tt_cell(tt, "-");
            continue;
        }
        bool a_slower = ta > tb;
        const char *who = targets[a_slower ? a : b].label;
        who = strchr(who, ' ') ? strchr(who, ' ') + 1 : who; /* the protocol */
        tt_cell(tt, "%s %.1f%% slower", who, 100 * ((a_slower ? ta / tb : tb / ta) - 1));
    }
}

static void print_slower(FILE *f, const struct rpc_job *j)
{
    int rest = row_of(j, OURS_REST), ours = row_of(j, OURS_GRPC), peer = row_of(j, PEER_GRPC);
    if (rest < 0 || (ours < 0 && peer < 0))
        return;
    struct tt tt;
    run_table_begin(&tt, NPOINTS);
    const char *cols[NPOINTS];
    for (unsigned p = 0; p < NPOINTS; p++)
        cols[p] = j->sweep_label[p];
    fprintf(f, "\nHow much slower the slower protocol is (from the mean total times)\n");
    run_table_row(&tt, "requests", NPOINTS, cols);
    if (ours >= 0)
        slower_row(&tt, j, OURS_REST, OURS_GRPC, "shootout: REST vs gRPC");
    if (peer >= 0)
        slower_row(&tt, j, OURS_REST, PEER_GRPC, "REST vs grpc-c++ gRPC");
    tt_print(f, &tt);
    tt_free(&tt);
}

/* The article's third table: how much longer each step of the sweep took
 * than the one before, against how many more requests it made. */
static void print_growth(FILE *f, const struct rpc_job *j)
{
    struct tt tt;
    run_table_begin(&tt, NPOINTS);
    fprintf(f, "\nGrowth of the total time per step against the increase in requests (from the "
               "means)\n");
    tt_cell(&tt, "requests:");
    for (unsigned p = 0; p < NPOINTS; p++)
        tt_cell(&tt, "%llu-%llu", p ? (unsigned long long)j->sweep_calls[p - 1] : 0ull,
                (unsigned long long)j->sweep_calls[p]);
    for (unsigned r = 0; r < j->nrows; r++) {
        int tg = j->row_target[r];
        double prev = 0, cur;
        tt_cell(&tt, "%s:", targets[tg].label);
        for (unsigned p = 0; p < NPOINTS; p++) {
            bool ok = cell_mean(j, &j->sweep[p][tg], RESULT_METRIC(duration_s), &cur);
            if (p == 0)
                tt_cell(&tt, "%s", ok ? "baseline" : "-");
            else if (ok && prev > 0)
                tt_cell(&tt, "%.0f%% longer", 100 * (cur / prev - 1));
            else
                tt_cell(&tt, "-");
            prev = ok ? cur : 0;
        }
    }
    tt_cell(&tt, "request increase:");
    for (unsigned p = 0; p < NPOINTS; p++)
        if (p == 0)
            tt_cell(&tt, "0");
        else
            tt_cell(&tt, "%.0f%% more",
                    100 * ((double)j->sweep_calls[p] / (double)j->sweep_calls[p - 1] - 1));
    tt_print(f, &tt);
    tt_free(&tt);
}

/* Latency and CPU per call at the sweep's largest N. */
static void print_per_call(FILE *f, const struct rpc_job *j)
{
    static const struct {
        const char *title;
        unsigned metric;
    } cols[] = {
        {"p50 latency", RESULT_METRIC(lat_p50)},
        {"p99 latency", RESULT_METRIC(lat_p99)},
        {"server CPU", RESULT_METRIC(server_cpu_us_per_op)},
        {"client CPU", RESULT_METRIC(client_cpu_us_per_op)},
    };
    enum { NCOLS = sizeof cols / sizeof cols[0] };
    struct tt tt;
    run_table_begin(&tt, NCOLS);
    fprintf(f, "\nPer call at %llu sequential calls (us, mean +/- stddev over %u run%s - smaller "
               "is better)\n",
            (unsigned long long)j->sweep_calls[NPOINTS - 1], j->o->runs, j->o->runs > 1 ? "s" : "");
    tt_cell(&tt, "per call:");
    for (unsigned c = 0; c < NCOLS; c++)
        tt_cell(&tt, "%s", cols[c].title);
    for (unsigned r = 0; r < j->nrows; r++) {
        int tg = j->row_target[r];
        tt_cell(&tt, "%s:", targets[tg].label);
        for (unsigned c = 0; c < NCOLS; c++) {
            double mean, sd;
            if (run_cell_stats(j->o->rows, &j->sweep[NPOINTS - 1][tg], cols[c].metric, &mean, &sd))
                tt_cell(&tt, "%.1f +/- %.1f", mean, sd);
            else
                tt_cell(&tt, "failed");
        }
    }
    tt_print(f, &tt);
    tt_free(&tt);
}

static void print_tables(FILE *f, const struct rpc_job *j)
{
    unsigned runs = j->o->runs;
    char title[200];
    snprintf(title, sizeof title,
             "gRPC vs REST: total time of N sequential calls (ms, mean +/- stddev over %u run%s - "
             "smaller is better)", runs, runs > 1 ? "s" : "");
    print_grid(f, j, true, title, RESULT_METRIC(duration_s), 1e3, 1);

    print_slower(f, j);
    print_growth(f, j);
    print_per_call(f, j);

    snprintf(title, sizeof title,
             "Throughput with calls in flight (thousands of calls/s, mean +/- stddev over %u "
             "run%s - bigger is better)", runs, runs > 1 ? "s" : "");
    print_grid(f, j, false, title, RESULT_METRIC(throughput), 1e-3, 2);
    print_grid(f, j, false, "Server CPU time per call with calls in flight (us, user + system - "
                            "smaller is better)",
               RESULT_METRIC(server_cpu_us_per_op), 1, 2);

    fprintf(f, "\nRPC, as measured:\n"
               "  total time: first call sent to last answer received, per run, over a connection "
               "opened before\n"
               "  (no warm-up, as the article); each call carries a record generated inside that "
               "time\n"
               "  latency: call handed to the client to answer received; CPU: user + system time "
               "of the\n"
               "  server process (schedstat) and of this client over the timed calls, per call\n"
               "  in flight: REST C connections, one call at a time each; gRPC C streams on one "
               "connection;\n"
               "  %llu calls per run, after %llu untimed ones when more than one is in flight "
               "(one in flight:\n"
               "  the sweep's last point)\n",
            (unsigned long long)j->sweep_calls[NPOINTS - 1], (unsigned long long)j->tp_warmup);
    fprintf(f, "\nserver peak RSS:");
    for (int i = 0; i < NSERVERS; i++)
        if (j->servers[i].started)
            fprintf(f, "%s %s %.1f MB", i ? "," : "", j->servers[i].name,
                    run_peak_rss_kb(j->o->rows, j->servers[i].name, "rpc-") / 1024);
    fputc('\n', f);
}

/* ---- the part ------------------------------------------------------------ */

int run_rpc(const struct run_rpc_opts *o)
{
    struct rpc_job *j = mem_calloc(1, sizeof *j);
    j->o = o;
    child_init(&j->servers[OURS], "shootout");
    child_init(&j->servers[PEER], "grpc-c++");
    for (unsigned p = 0; p < NPOINTS; p++) {
        j->sweep_calls[p] = scaled(sweep_n[p], o->scale);
        snprintf(j->sweep_label[p], sizeof j->sweep_label[p], "%llu",
                 (unsigned long long)j->sweep_calls[p]);
    }
    for (unsigned c = 0; c < NCONC; c++)
        snprintf(j->tp_label[c], sizeof j->tp_label[c], "%u", tp_conc[c]);
    j->tp_warmup = scaled(RPC_TP_WARMUP, o->scale);

    int rc = servers_start(j, o->out);
    if (j->servers[OURS].started) {
        for (int t = 0; t < NTARGETS; t++)
            if (j->servers[targets[t].server].started)
                j->row_target[j->nrows++] = t;
        fprintf(o->out, "shootout run: RPC, %u run%s per cell; progress on stderr\n", o->runs,
                o->runs > 1 ? "s" : "");
        fflush(o->out);
        bool failed = false;
        for (unsigned p = 0; p < NPOINTS; p++)
            for (int t = 0; t < NTARGETS; t++)
                failed |= !measure(j, &j->sweep[p][t], t, j->sweep_calls[p], 0, 1);
        for (unsigned c = 0; c < NCONC; c++)
            for (int t = 0; t < NTARGETS && tp_conc[c] > 1; t++)
                failed |= !measure(j, &j->tp[c][t], t, j->sweep_calls[NPOINTS - 1], j->tp_warmup,
                                   tp_conc[c]);
        int stop_rc = child_finish_all(j->servers, NSERVERS, o->out);
        if (j->servers[OURS].lost || j->servers[PEER].lost || stop_rc)
            rc = BENCH_EXIT_RUNTIME;
        else if (!rc && failed)
            rc = BENCH_EXIT_MISSED;
        print_tables(o->out, j);
        fflush(o->out);
    }
    for (int i = 0; i < NSERVERS; i++)
        child_free(&j->servers[i]);
    mem_free(j);
    return rc;
}
