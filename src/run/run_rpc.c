/* run_rpc.c - the RPC part of `shootout run` (see run_rpc.h): the servers
 * as child processes, the sweep and throughput cells through rpc_seq, and
 * the tables. */
#include "run/run_rpc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "load/bench.h"
#include "load/rpc/rpc_seq.h"
#include "report/run_table.h"
#include "run/child.h"
#include "run/contender.h"

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
#define MAX_ROWS 16

/* A row of the tables: a protocol against a server, and for a JVM server
 * its cold or its warm pass. */
struct rpc_row {
    char label[200];     /* "grpc-java gRPC, warm (grpc-java 1.26.1)" */
    char series[48];     /* its rows' target: "shootout", "grpc-java-warm" */
    const char *version; /* what the server says it is */
    char family[24];     /* the stack's language, pairing REST with gRPC rows */
    const struct rpc_protocol *proto;
    bool warm;
    bool ran;
    char note[320]; /* not measured: why */
    struct run_cell sweep[NPOINTS], tp[NCONC]; /* tp[0]: unused */
};

struct rpc_job {
    const struct run_rpc_opts *o;
    uint64_t sweep_calls[NPOINTS], tp_warmup;
    char sweep_label[NPOINTS][16], tp_label[NCONC][16];
    struct rpc_row rows[MAX_ROWS];
    unsigned nrows;
};

static uint64_t scaled(double n, double scale)
{
    double m = round(n * scale);
    return m < 1 ? 1 : (uint64_t)m;
}

static struct rpc_row *row_add(struct rpc_job *j, const char *name, const char *version,
                               const char *family, const struct rpc_protocol *proto, int pass)
{
    struct rpc_row *r = &j->rows[j->nrows++];
    bool rest = proto == &rpc_rest_protocol;
    int n = snprintf(r->label, sizeof r->label, "%s %s%s", name, rest ? "REST" : "gRPC",
                     pass < 0 ? "" : pass ? ", warm" : ", cold");
    if (version) /* NULL: not available */
        snprintf(r->label + n, sizeof r->label - (size_t)n, " (%s)", version);
    snprintf(r->series, sizeof r->series, "%s%s", name, pass > 0 ? "-warm" : "");
    r->version = version;
    snprintf(r->family, sizeof r->family, "%.*s", (int)strcspn(family, ","), family);
    r->proto = proto;
    r->warm = pass > 0;
    return r;
}

/* ---- ours ---------------------------------------------------------------- */

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
static int start_ours(struct child *c, const char *exe, int ports[2], char *err, size_t len)
{
    char *argv[] = {(char *)exe, "car-server", "--bind", CHILD_HOST, "--rest-port", "0",
                    "--grpc-port", "0", "--threads", "1", NULL};
    char line[512];
    if (child_spawn(c, argv, -1, err, len) < 0)
        return -1;
    if (child_wait_line(c, "REST (HTTP/1.1) on ", line, sizeof line, err, len) < 0)
        return child_give_up(c, err, len);
    ports[0] = port_after(line, "REST (HTTP/1.1) on ");
    ports[1] = port_after(line, "gRPC (h2c) on ");
    if (ports[0] < 0 || ports[1] < 0) {
        snprintf(err, len, "no REST and gRPC ports in \"%.200s\"", line);
        return child_give_up(c, err, len);
    }
    c->started = true;
    return 0;
}

/* ---- the cells ----------------------------------------------------------- */

/* calls calls (after warmup untimed ones), conc in flight, runs times,
 * against row r's server proc (its server process pid) on port. Returns
 * false if the cell failed. */
static bool measure(struct rpc_job *j, struct rpc_row *r, struct run_cell *cell,
                    struct child *proc, int pid, int port, uint64_t calls, uint64_t warmup,
                    unsigned conc)
{
    const struct run_rpc_opts *o = j->o;
    cell->measured = true;
    cell->first = o->rows->n;
    if (!child_alive(proc)) {
        cell->rc = BENCH_EXIT_RUNTIME;
        run_cell_fail(o->rows, cell, true);
        return false;
    }
    struct bench_opts b;
    bench_opts_init(&b, "rpc-seq");
    snprintf(b.host, sizeof b.host, "%s", CHILD_HOST);
    b.port = port;
    snprintf(b.target, sizeof b.target, "%s", r->series);
    bench_set_server(&b, &pid, 1);
    b.runs = o->runs;
    if (o->timeout_s)
        b.timeout_s = o->timeout_s;
    b.brief = true;
    struct rpc_seq_opts s = {
        .proto = r->proto,
        .requests = calls,
        .warmup = warmup,
        .concurrency = conc,
        .connections = 1,
        .seed = 1,
    };
    cell->rc = rpc_seq_exec(&b, &s, o->ctx, o->rows);
    cell->n = o->rows->n - cell->first;
    run_rows_version(o->rows, cell->first, r->version);
    if (cell->rc != BENCH_EXIT_OK)
        run_cell_fail(o->rows, cell, !child_alive_after_failure(proc)); /* it may be dying */
    return cell->rc == BENCH_EXIT_OK;
}

/* The sweep, then the throughput cells, against rows rs[0..n) of one
 * server proc (its server process pid), row k on ports[k]. Returns
 * whether every cell succeeded. */
static bool measure_rows(struct rpc_job *j, struct rpc_row **rs, unsigned n, struct child *proc,
                         int pid, const int *ports)
{
    bool ok = true;
    for (unsigned k = 0; k < n; k++)
        rs[k]->ran = true;
    for (unsigned p = 0; p < NPOINTS; p++)
        for (unsigned k = 0; k < n; k++)
            ok &= measure(j, rs[k], &rs[k]->sweep[p], proc, pid, ports[k], j->sweep_calls[p], 0,
                          1);
    for (unsigned c = 1; c < NCONC; c++)
        for (unsigned k = 0; k < n; k++)
            ok &= measure(j, rs[k], &rs[k]->tp[c], proc, pid, ports[k], j->sweep_calls[NPOINTS - 1],
                          j->tp_warmup, tp_conc[c]);
    return ok;
}

/* Our car-server, REST and gRPC: started, measured, stopped. Returns the
 * part's exit code for it. */
static int race_ours(struct rpc_job *j, FILE *out)
{
    const struct run_rpc_opts *o = j->o;
    struct rpc_row *rs[2] = {row_add(j, "shootout", o->version, "shootout", &rpc_rest_protocol, -1),
                             row_add(j, "shootout", o->version, "shootout", &rpc_grpc_protocol, -1)};
    struct child c;
    child_init(&c, "shootout");
    int ports[2];
    char err[512];
    if (start_ours(&c, o->exe, ports, err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot start our car-server (%s car-server): %s\n", o->exe,
                err);
        child_free(&c);
        return BENCH_EXIT_RUNTIME;
    }
    fprintf(out, "shootout run: our car-server %s, pid %d, REST on %s:%d, gRPC on %s:%d\n", o->exe,
            (int)c.pid, CHILD_HOST, ports[0], CHILD_HOST, ports[1]);
    fflush(out);
    return child_end_ours(&c, measure_rows(j, rs, 2, &c, c.pid, ports), out);
}

/* Contender i: skipped (a line, notes) if it cannot run or start, else
 * measured (a JVM server twice: cold, then warm after the same calls) and
 * stopped. Its failures are its cells'. */
static void race_contender(struct rpc_job *j, unsigned i, FILE *out)
{
    const struct run_rpc_opts *o = j->o;
    const struct contender_def *d = &contender_defs[i];
    const struct rpc_protocol *proto = d->kind == CK_REST ? &rpc_rest_protocol : &rpc_grpc_protocol;
    bool jvm = d->flags & CONTENDER_JVM;
    struct rpc_row *rs[2];
    unsigned n = jvm ? 2 : 1;
    for (unsigned k = 0; k < n; k++)
        rs[k] = row_add(j, d->name, contender_version(o->roster, i), d->stack, proto,
                        jvm ? (int)k : -1);
    struct contender_proc cp;
    char why[300];
    if (contender_enter(&cp, o->roster, i, NULL, why, sizeof why, out) < 0) {
        for (unsigned k = 0; k < n; k++)
            snprintf(rs[k]->note, sizeof rs[k]->note, "not measured: %s", why);
        return;
    }
    for (unsigned k = 0; k < n; k++)
        measure_rows(j, &rs[k], 1, &cp.proc, cp.server_pid, &cp.port);
    contender_stop(&cp, out);
}

/* ---- the tables ---------------------------------------------------------- */

/* The throughput table's cell for tp_conc[c] and row r. */
static const struct run_cell *tp_cell(const struct rpc_row *r, unsigned c)
{
    return tp_conc[c] == 1 ? &r->sweep[NPOINTS - 1] : &r->tp[c];
}

/* The mean of metric over a cell's runs; false if it failed. */
static bool cell_mean(const struct rpc_job *j, const struct run_cell *cell, unsigned metric,
                      double *mean)
{
    double sd;
    return run_cell_stats(j->o->rows, cell, metric, mean, &sd);
}

/* A grid table over the sweep (sweep true) or the concurrency levels, a
 * row per row, and ours over the best other row of each protocol. */
static void print_grid(FILE *f, const struct rpc_job *j, bool sweep, const char *title,
                       unsigned metric, double scale, int prec, bool smaller_better)
{
    struct run_table t = {
        .title = title,
        .corner = sweep ? "requests" : "in flight",
        .ncols = sweep ? NPOINTS : NCONC,
        .nrows = j->nrows,
        .smaller_better = smaller_better,
    };
    for (unsigned c = 0; c < t.ncols; c++)
        t.col[c] = sweep ? j->sweep_label[c] : j->tp_label[c];
    uint32_t others[2] = {0, 0}; /* REST, gRPC */
    for (unsigned r = 0; r < j->nrows; r++) {
        const struct rpc_row *row = &j->rows[r];
        t.row[r] = row->label;
        t.note[r] = row->ran ? NULL : row->note;
        for (unsigned c = 0; c < t.ncols; c++)
            t.cell[r][c] = sweep ? &row->sweep[c] : tp_cell(row, c);
        if (r >= 2 && row->ran)
            others[row->proto == &rpc_grpc_protocol] |= 1u << r;
    }
    static const char *const labels[2] = {"shootout REST/best other REST",
                                          "shootout gRPC/best other gRPC"};
    for (unsigned k = 0; k < 2; k++)
        if (j->rows[k].ran && others[k])
            t.ratio[t.nratios++] = (struct run_ratio){labels[k], k, others[k]};
    run_table_print(f, j->o->rows, &t, metric, scale, prec);
}

/* The article's second table: at each N, which of two rows took longer
 * and by how much. */
static void slower_row(struct tt *tt, const struct rpc_job *j, const struct rpc_row *a,
                       const struct rpc_row *b, const char *label)
{
    tt_cell(tt, "%s:", label);
    for (unsigned p = 0; p < NPOINTS; p++) {
        double ta, tb;
        if (!cell_mean(j, &a->sweep[p], RESULT_METRIC(duration_s), &ta) ||
            !cell_mean(j, &b->sweep[p], RESULT_METRIC(duration_s), &tb) || ta <= 0 || tb <= 0) {
            tt_cell(tt, "-");
            continue;
        }
        bool a_slower = ta > tb;
        const struct rpc_row *who = a_slower ? a : b;
        tt_cell(tt, "%s %.1f%% slower", who->proto == &rpc_rest_protocol ? "REST" : "gRPC",
                100 * ((a_slower ? ta / tb : tb / ta) - 1));
    }
}

/* The label of a row up to its version: "grpc-java gRPC, warm". */
static void short_label(const struct rpc_row *r, char *out, size_t len)
{
    const char *v = strstr(r->label, " (");
    snprintf(out, len, "%.*s", v ? (int)(v - r->label) : (int)strlen(r->label), r->label);
}

/* REST against gRPC within a stack: ours, and each REST contender against
 * each gRPC contender of its language in the same pass (Spring REST
 * against grpc-java is the article's own pair). */
static void print_slower(FILE *f, const struct rpc_job *j)
{
    struct tt tt;
    run_table_begin(&tt, NPOINTS);
    const char *cols[NPOINTS];
    for (unsigned p = 0; p < NPOINTS; p++)
        cols[p] = j->sweep_label[p];
    bool any = false;
    for (unsigned a = 0; a < j->nrows; a++)
        for (unsigned b = 0; b < j->nrows; b++) {
            const struct rpc_row *ra = &j->rows[a], *rb = &j->rows[b];
            if (!ra->ran || !rb->ran || ra->proto != &rpc_rest_protocol ||
                rb->proto != &rpc_grpc_protocol || strcmp(ra->family, rb->family) ||
                ra->warm != rb->warm)
                continue;
            if (!any) {
                fprintf(f, "\nHow much slower the slower protocol is (from the mean total "
                           "times)\n");
                run_table_row(&tt, "requests", NPOINTS, cols);
                any = true;
            }
            char la[200], lb[200], label[420];
            short_label(ra, la, sizeof la);
            short_label(rb, lb, sizeof lb);
            if (a < 2) /* ours, the same server */
                snprintf(label, sizeof label, "shootout: REST vs gRPC");
            else
                snprintf(label, sizeof label, "%s vs %s", la, lb);
            slower_row(&tt, j, ra, rb, label);
        }
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
        const struct rpc_row *row = &j->rows[r];
        if (!row->ran)
            continue;
        double prev = 0, cur;
        tt_cell(&tt, "%s:", row->label);
        for (unsigned p = 0; p < NPOINTS; p++) {
            bool ok = cell_mean(j, &row->sweep[p], RESULT_METRIC(duration_s), &cur);
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
        const struct rpc_row *row = &j->rows[r];
        if (!row->ran)
            continue;
        tt_cell(&tt, "%s:", row->label);
        const struct run_cell *cell = &row->sweep[NPOINTS - 1];
        for (unsigned c = 0; c < NCOLS; c++) {
            double mean, sd;
            if (run_cell_stats(j->o->rows, cell, cols[c].metric, &mean, &sd))
                tt_cell(&tt, "%.1f +/- %.1f", mean, sd);
            else
                tt_cell(&tt, "failed%s%s", cell->why[0] ? ": " : "", cell->why);
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
    print_grid(f, j, true, title, RESULT_METRIC(duration_s), 1e3, 1, true);

    print_slower(f, j);
    print_growth(f, j);
    print_per_call(f, j);

    snprintf(title, sizeof title,
             "Throughput with calls in flight (thousands of calls/s, mean +/- stddev over %u "
             "run%s - bigger is better)", runs, runs > 1 ? "s" : "");
    print_grid(f, j, false, title, RESULT_METRIC(throughput), 1e-3, 2, false);
    print_grid(f, j, false, "Server CPU time per call with calls in flight (us, user + system - "
                            "smaller is better)",
               RESULT_METRIC(server_cpu_us_per_op), 1, 2, true);

    fprintf(f, "\nRPC, as measured:\n"
               "  total time: first call sent to last answer received, per run, over a connection "
               "opened before\n"
               "  (no warm-up, as the article); each call carries a record generated inside that "
               "time\n"
               "  cold, warm: a JVM server's first pass over every cell just after it started, as "
               "the article, and\n"
               "  its second, after the first's calls as the warm-up\n"
               "  latency: call handed to the client to answer received; CPU: user + system time "
               "of the\n"
               "  server process (schedstat) and of this client over the timed calls, per call\n"
               "  in flight: REST C connections, one call at a time each; gRPC C streams on one "
               "connection;\n"
               "  %llu calls per run, after %llu untimed ones when more than one is in flight "
               "(one in flight:\n"
               "  the sweep's last point)\n"
               "  shootout X/best other X: our mean over the best other row's of that protocol "
               "in each cell, which is named\n",
            (unsigned long long)j->sweep_calls[NPOINTS - 1], (unsigned long long)j->tp_warmup);
    fprintf(f, "\nserver peak RSS:");
    const char *sep = "";
    for (unsigned r = 0; r < j->nrows; r++) {
        const struct rpc_row *row = &j->rows[r];
        if (!row->ran || (r > 0 && !strcmp(row->series, j->rows[r - 1].series)))
            continue;
        fprintf(f, "%s %s %.1f MB", sep, row->series,
                run_peak_rss_kb(j->o->rows, row->series, "rpc-") / 1024);
        sep = ",";
    }
    fputc('\n', f);
}

/* ---- the part ------------------------------------------------------------ */

int run_rpc(const struct run_rpc_opts *o)
{
    struct rpc_job *j = mem_calloc(1, sizeof *j);
    j->o = o;
    for (unsigned p = 0; p < NPOINTS; p++) {
        j->sweep_calls[p] = scaled(sweep_n[p], o->scale);
        snprintf(j->sweep_label[p], sizeof j->sweep_label[p], "%llu",
                 (unsigned long long)j->sweep_calls[p]);
    }
    for (unsigned c = 0; c < NCONC; c++)
        snprintf(j->tp_label[c], sizeof j->tp_label[c], "%u", tp_conc[c]);
    j->tp_warmup = scaled(RPC_TP_WARMUP, o->scale);

    fprintf(o->out, "shootout run: RPC, %u run%s per cell, one server at a time; progress on "
                    "stderr\n", o->runs, o->runs > 1 ? "s" : "");
    fflush(o->out);
    int rc = race_ours(j, o->out);
    for (unsigned i = 0; i < contender_count && j->nrows + 2 <= MAX_ROWS; i++) {
        const struct contender_def *d = &contender_defs[i];
        if ((d->kind == CK_GRPC || d->kind == CK_REST) && (o->roster->chosen >> i & 1))
            race_contender(j, i, o->out);
    }
    if (j->rows[0].ran)
        print_tables(o->out, j);
    fflush(o->out);
    mem_free(j);
    return rc;
}
