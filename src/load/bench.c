/* bench.c - what the experiments of `shootout bench` share: their common
 * options, the repeat driver that runs, prints and aggregates them, and the
 * JSON and HTML results at the end. */
#include "load/bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/mem.h"
#include "core/net.h"
#include "core/opt.h"
#include "load/probe.h"
#include "report/merge.h"
#include "report/report_html.h"
#include "report/texttab.h"

/* Descriptors beyond the connections: stdio, epoll and eventfds, JSON. */
#define BENCH_SPARE_FDS 64
/* A --trace-* option not given. */
#define BENCH_UNSET UINT_MAX

/* ---- options ------------------------------------------------------------- */

void bench_opts_init(struct bench_opts *o, const char *experiment)
{
    memset(o, 0, sizeof *o);
    o->experiment = experiment;
    o->threads = 1;
    o->runs = 1;
    o->timeout_s = 10;
    o->target_arg = "127.0.0.1";
    o->progress_mode = PROGRESS_AUTO;
    o->trace_sample = BENCH_UNSET;
    o->trace_body = BENCH_UNSET;
}

int bench_usage_error(const struct bench_opts *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "shootout bench %s: ", o->experiment);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see shootout bench %s --help)\n", o->experiment);
    return BENCH_EXIT_USAGE;
}

/* --label: short enough to name the target in every row. */
static int bench_set_label(const struct opt *opt, void *base, const char *name, const char *value,
                           char *err, size_t errlen)
{
    struct bench_opts *o = base;
    if (strlen(value) >= sizeof o->target || !value[0])
        return opt_fail(err, errlen, "%s wants 1 to %zu characters", name, sizeof o->target - 1);
    o->label = value;
    return 0;
}

void bench_set_server(struct bench_opts *o, const int *pids, unsigned n)
{
    o->nserver_pids = 0;
    for (unsigned i = 0; i < n && i < PROBE_MAX_PIDS; i++)
        if (pids[i] > 0)
            o->server_pids[o->nserver_pids++] = pids[i];
}

/* --server-pid PID[,PID...], which may repeat: every one is added. */
static int bench_set_server_pid(const struct opt *opt, void *base, const char *name,
                                const char *value, char *err, size_t errlen)
{
    struct bench_opts *o = base;
    const char *p = value;
    for (;;) {
        char *end;
        unsigned long pid = strtoul(p, &end, 10);
        if (end == p || *p < '1' || *p > '9' || pid > INT_MAX || (*end && *end != ','))
            return opt_fail(err, errlen, "%s wants process ids (PID[,PID...]), not '%s'", name,
                            value);
        if (o->nserver_pids == PROBE_MAX_PIDS)
            return opt_fail(err, errlen, "%s: at most %d processes", name, PROBE_MAX_PIDS);
        o->server_pids[o->nserver_pids++] = (int)pid;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* --shard I/N: part I of N, counted from 0 as a Kubernetes Indexed Job's
 * JOB_COMPLETION_INDEX is. */
static int bench_set_shard(const struct opt *opt, void *base, const char *name, const char *value,
                           char *err, size_t errlen)
{
    struct bench_opts *o = base;
    char *end;
    unsigned long i = strtoul(value, &end, 10), n = 0;
    bool ok = end != value && value[0] >= '0' && value[0] <= '9' && *end == '/' &&
              end[1] >= '0' && end[1] <= '9';
    if (ok)
        n = strtoul(end + 1, &end, 10);
    if (!ok || *end || n < 1 || n > MERGE_MAX_SHARDS || i >= n)
        return opt_fail(err, errlen, "%s wants I/N, 0 <= I < N <= %d, not '%s'", name,
                        MERGE_MAX_SHARDS, value);
    o->shard_index = (unsigned)i;
    o->shard_count = (unsigned)n;
    return 0;
}

/* --start-at: unix seconds, or an RFC 3339 time ("2026-12-02T07:30:00Z",
 * fractions and a +hh:mm offset allowed). */
static int bench_set_start_at(const struct opt *opt, void *base, const char *name,
                              const char *value, char *err, size_t errlen)
{
    struct bench_opts *o = base;
    char *end;
    double t = strtod(value, &end);
    if (end != value && !*end && value[0] >= '0' && value[0] <= '9' && t < 1e11) {
        o->start_at = t;
        return 0;
    }
    struct tm tm = {0};
    const char *p = strptime(value, "%Y-%m-%dT%H:%M:%S", &tm);
    double frac = 0;
    long off = 0;
    if (p && *p == '.') {
        frac = strtod(p, &end);
        p = end;
    }
    if (p && (*p == 'Z' || *p == 'z') && !p[1]) {
        p = "";
    } else if (p && (*p == '+' || *p == '-')) {
        unsigned hh, mm;
        int used = 0;
        if (sscanf(p + 1, "%2u:%2u%n", &hh, &mm, &used) == 2 && !p[1 + used] && hh < 24 &&
            mm < 60) {
            off = (*p == '-' ? -1 : 1) * (long)(hh * 3600 + mm * 60);
            p = "";
        }
    }
    if (!p || *p)
        return opt_fail(err, errlen, "%s wants unix seconds or an RFC 3339 time such as "
                                     "2026-12-02T07:30:00Z, not '%s'", name, value);
    o->start_at = (double)timegm(&tm) - (double)off + frac;
    return 0;
}

static const struct opt_choice bench_progress_modes[] = {
    {"auto", NULL, PROGRESS_AUTO},
    {"always", NULL, PROGRESS_ALWAYS},
    {"never", NULL, PROGRESS_NEVER},
    {NULL, NULL, 0},
};

const struct opt bench_options[] = {
    {"runs", 0, OPT_UINT, "R",
     "repetitions; with R > 1 the mean, median and stddev are reported too", "1", OPT_FIELD(struct bench_opts, runs), .min = 1, .max = 1000},
    {"json", 0, OPT_STRING, "FILE",
     "write the results as JSON to FILE ('-': stdout, and the table goes to stderr)", NULL,
     OPT_FIELD(struct bench_opts, json_path)},
    {"html", 0, OPT_STRING, "FILE",
     "write the results as a self-contained HTML page with charts to FILE", NULL,
     OPT_FIELD(struct bench_opts, html_path)},
    {"server-pid", 0, OPT_CALL, "PID[,PID...]",
     "sample the server process's CPU time, RSS and threads from /proc/PID over each run; "
     "several (a cluster's nodes and its NATS server, comma-separated or repeated) are summed",
     NULL, .set = bench_set_server_pid},
    {"label", 0, OPT_CALL, "NAME", "what to call the target in results",
     "its --server-pid process's name, else HOST:PORT", .set = bench_set_label},
    {"progress", 0, OPT_ENUM, "auto|always|never",
     "a progress line per run on stderr (done/total, rate, elapsed, ETA), redrawn in place; "
     "auto: only when stderr is a terminal",
     "auto", OPT_FIELD(struct bench_opts, progress_mode), .choices = bench_progress_modes},
    {"trace", 0, OPT_STRING, "FILE",
     "write what goes over the wire to FILE ('-': stdout), a line per packet, request, "
     "response, header or body (format: docs/bench.md)",
     NULL, OPT_FIELD(struct bench_opts, trace_path)},
    {"trace-sample", 0, OPT_UINT, "N",
     "trace one exchange in N (whole exchanges: a call and its answer, an MQTT packet id's "
     "flow)",
     "1", OPT_FIELD(struct bench_opts, trace_sample), .min = 1, .max = TRACE_SAMPLE_MAX},
    {"trace-body", 0, OPT_UINT, "BYTES", "bytes of each HTTP body the trace shows", "80",
     OPT_FIELD(struct bench_opts, trace_body), .min = 0, .max = TRACE_BODY_MAX},
    {"shard", 0, OPT_CALL, "I/N",
     "run part I (0 .. N-1) of the experiment the other options describe: its share of the "
     "connections, calls or users, with disjoint client ids and topics; merge the N --json "
     "files with `shootout merge` (docs/bench.md, \"Load from several machines\")",
     NULL, .set = bench_set_shard},
    {"start-at", 0, OPT_CALL, "TIME",
     "start the first run at TIME, unix seconds or RFC 3339 (2026-12-02T07:30:00Z), so that "
     "the shards start together; a TIME past by more than a second, or more than a day ahead, "
     "fails the run",
     NULL, .set = bench_set_start_at},
    {"start-every", 0, OPT_DURATION, "D",
     "with --start-at and --runs R > 1: start run k (from 0) at --start-at + k x D on every "
     "shard, so that the shards' repetitions run together too; D must cover a run and its "
     "setup (a run whose start has passed by more than a second fails)",
     NULL, OPT_FIELD(struct bench_opts, start_every), .dmax = 86400},
    {.kind = OPT_END},
};

int bench_parse(struct bench_opts *o, const struct opt_cmd *cmd, int argc, char **argv,
                void *base)
{
    struct opt_error e;
    switch (opt_parse(cmd, argc, argv, base, &e)) {
    case OPT_OK:
        /* Without a common slot each shard's later runs would start when
         * its own earlier ones ended, apart from the others'. */
        if (o->start_at > 0 && o->runs > 1 && !(o->start_every > 0))
            return bench_usage_error(o, "--runs %u with --start-at needs --start-every D (run k "
                                        "starts at --start-at + k x D on every shard)", o->runs);
        if (o->start_every > 0 && !(o->start_at > 0))
            return bench_usage_error(o, "--start-every needs --start-at");
        return -1;
    case OPT_HELP:
        return BENCH_EXIT_OK;
    case OPT_ERROR:
        break;
    }
    if (e.opt)
        return bench_usage_error(o, "%s", e.msg);
    /* getopt_long has said what was wrong */
    fprintf(stderr, "(see shootout bench %s --help)\n", o->experiment);
    return BENCH_EXIT_USAGE;
}

int bench_split_target(const struct bench_opts *o, const char *arg, char host[64], int *port_out)
{
    const char *t = arg, *port = NULL;
    size_t hlen;
    if (t[0] == '[') {
        const char *close = strchr(t, ']');
        if (!close || (close[1] && close[1] != ':'))
            return bench_usage_error(o, "--target wants HOST:PORT or [IPV6]:PORT, not '%s'", t);
        hlen = (size_t)(close - t - 1);
        t++;
        if (close[1] == ':')
            port = close + 2;
    } else {
        const char *colon = strrchr(t, ':');
        /* More than one colon without brackets: a bare IPv6 address. */
        if (colon && strchr(t, ':') == colon) {
            hlen = (size_t)(colon - t);
            port = colon + 1;
        } else {
            hlen = strlen(t);
        }
    }
    if (hlen == 0 || hlen >= sizeof o->host)
        return bench_usage_error(o, "--target has no usable host: '%s'", arg);
    memcpy(host, t, hlen);
    host[hlen] = '\0';
    if (port) {
        uint64_t v;
        if (opt_parse_uint(port, 1, 65535, &v) < 0)
            return bench_usage_error(o, "--target's port wants a whole number from 1 to 65535, "
                                        "not '%s'", port);
        *port_out = (int)v;
    }
    return 0;
}

int bench_resolve(const struct bench_opts *o, char host[64])
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "shootout bench %s: cannot resolve %s: %s\n", o->experiment, host,
                gai_strerror(rc));
        return BENCH_EXIT_RUNTIME;
    }
    const void *addr = res->ai_family == AF_INET6
                           ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
                           : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
    inet_ntop(res->ai_family, addr, host, 64);
    freeaddrinfo(res);
    return 0;
}

/* Checks the --trace options and opens the file. */
static int bench_open_trace(struct bench_opts *o, int argc, char **argv)
{
    if (!o->trace_path) {
        if (o->trace_sample != BENCH_UNSET)
            return bench_usage_error(o, "--trace-sample needs --trace FILE");
        if (o->trace_body != BENCH_UNSET)
            return bench_usage_error(o, "--trace-body needs --trace FILE");
        return 0;
    }
    if (!o->trace_path[0])
        return bench_usage_error(o, "--trace wants a file name");
    if (!strcmp(o->trace_path, "-") && o->json_path && !strcmp(o->json_path, "-"))
        return bench_usage_error(o, "--trace - and --json - cannot share stdout");
    /* The command line heads the trace, so that a trace says what made it. */
    char cmd[512];
    size_t n = 0;
    cmd[0] = '\0';
    for (int i = 0; i < argc && n + 1 < sizeof cmd; i++) {
        int w = snprintf(cmd + n, sizeof cmd - n, "%s%s", i ? " " : "", argv[i]);
        n = w < 0 ? n : n + (size_t)w < sizeof cmd ? n + (size_t)w : sizeof cmd - 1;
    }
    char err[256];
    o->trace = trace_open(o->trace_path, o->trace_sample == BENCH_UNSET ? 1 : o->trace_sample,
                          o->trace_body == BENCH_UNSET ? TRACE_BODY_DEFAULT : o->trace_body, cmd,
                          err, sizeof err);
    if (!o->trace) {
        fprintf(stderr, "shootout bench %s: %s\n", o->experiment, err);
        return BENCH_EXIT_RUNTIME;
    }
    return 0;
}

int bench_finish_options(struct bench_opts *o, int argc, char **argv, unsigned conns)
{
    if (optind < argc)
        return bench_usage_error(o, "unexpected argument '%s'", argv[optind]);
    int rc = bench_split_target(o, o->target_arg, o->host, &o->port);
    if (rc)
        return rc;
    char comm[64] = "", err[NET_ERR_LEN];
    for (unsigned i = o->nserver_pids; i-- > 0;) /* the first's name stays in comm */
        if (probe_server_name(o->server_pids[i], comm, sizeof comm, err, sizeof err) < 0)
            return bench_usage_error(o, "--server-pid: %s", err);
    if (o->label)
        snprintf(o->target, sizeof o->target, "%s", o->label);
    else if (comm[0])
        snprintf(o->target, sizeof o->target, "%s", comm);
    else if (strchr(o->host, ':'))
        snprintf(o->target, sizeof o->target, "[%s]:%d", o->host, o->port);
    else
        snprintf(o->target, sizeof o->target, "%s:%d", o->host, o->port);
    rc = bench_resolve(o, o->host);
    if (rc)
        return rc;
    long fds = net_raise_fd_limit();
    if (fds >= 0 && (unsigned long)fds < (unsigned long)conns + BENCH_SPARE_FDS) {
        fprintf(stderr,
                "shootout bench %s: %u connections need about %lu open files, but the limit is "
                "%ld (raise it with ulimit -n)\n",
                o->experiment, conns, (unsigned long)conns + BENCH_SPARE_FDS, fds);
        return BENCH_EXIT_RUNTIME;
    }
    return bench_open_trace(o, argc, argv);
}

/* ---- shards -------------------------------------------------------------- */

uint64_t bench_share(const struct bench_opts *o, uint64_t total, uint64_t *first)
{
    if (!o->shard_count) {
        *first = 0;
        return total;
    }
    /* 128 bits: total * N may not fit in 64. */
    unsigned __int128 t = total;
    *first = (uint64_t)(t * o->shard_index / o->shard_count);
    return (uint64_t)(t * (o->shard_index + 1) / o->shard_count) - *first;
}

int bench_share_check(const struct bench_opts *o, const char *what, uint64_t total)
{
    if (o->shard_count > total)
        return bench_usage_error(o, "%s %llu cannot be split over %u shards: each needs at "
                                    "least one", what, (unsigned long long)total, o->shard_count);
    return 0;
}

static double bench_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleeps until run rep's start, --start-at + rep x --start-every; 0, or -1
 * when it had passed by more than a second (the shards would not run
 * together) or is more than a day away (a mistyped time, which would hang
 * the run). */
static int bench_wait_start(const struct bench_opts *o, unsigned rep, struct result_row *row)
{
    double at_s = o->start_at + rep * o->start_every;
    double late = bench_wall_now() - at_s;
    if (late > 1 && rep == 0) {
        snprintf(row->error, sizeof row->error, "--start-at %.3f was %.1f s ago: this shard "
                 "would not run with the others", o->start_at, late);
        return -1;
    }
    if (late > 1) {
        snprintf(row->error, sizeof row->error, "run %u's start (--start-at + %u x "
                 "--start-every) was %.1f s ago: the run before it outlasted --start-every "
                 "%.3g s, and this shard would not run with the others", rep + 1, rep, late,
                 o->start_every);
        return -1;
    }
    if (late < -86400) {
        snprintf(row->error, sizeof row->error, "--start-at %.3f is %.0f s away, more than a "
                 "day: a mistyped time?", o->start_at, -late);
        return -1;
    }
    struct timespec at = {(time_t)at_s, (long)((at_s - floor(at_s)) * 1e9)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
    return 0;
}

/* ---- running ------------------------------------------------------------- */

/* One line per run for a caller that prints its own tables. */
static void bench_progress(const struct result_row *row, int rc)
{
    if (rc != BENCH_EXIT_OK) {
        fprintf(stderr, "  %s run %u/%u FAILED: %s\n", row->name, row->repetition_index + 1,
                row->repetitions, row->error);
        return;
    }
    const char *unit = result_unit(row);
    fprintf(stderr, "  %s run %u/%u: %.1f k %s/s", row->name, row->repetition_index + 1,
            row->repetitions, row->throughput / 1e3, unit);
    if (row->server_pid)
        fprintf(stderr, ", server %.2f us/%s", row->server_cpu_us_per_op, unit);
    fputc('\n', stderr);
}

int bench_repeat(const struct bench_opts *o, const struct result_context *ctx,
                 const struct result_row *tmpl, bench_run_fn run, void *arg,
                 struct result_set *out)
{
    /* With JSON on stdout the table moves out of its way. */
    FILE *tf = o->json_path && !strcmp(o->json_path, "-") ? stderr : stdout;
    struct result_row *rows = mem_calloc(o->runs + 3, sizeof *rows);
    unsigned n = 0;
    int rc = BENCH_EXIT_OK;
    struct tt table = {0};
    /* Each run sees the options with its progress line. */
    struct progress bar;
    struct bench_opts ro = *o;
    ro.progress = &bar;
    bool live = progress_wanted(o->progress_mode, stderr);
    for (unsigned rep = 0; rep < o->runs; rep++) {
        struct result_row *row = &rows[n++];
        *row = *tmpl;
        row->repetitions = o->runs;
        row->repetition_index = rep;
        char label[sizeof row->name + 32];
        snprintf(label, sizeof label, "%s run %u/%u", row->name, rep + 1, o->runs);
        progress_begin(&bar, stderr, live, label, result_unit(row));
        if (o->trace)
            trace_note(o->trace, "%s", label);
        if ((rep == 0 || o->start_every > 0) && o->start_at > 0 &&
            bench_wait_start(o, rep, row) < 0)
            rc = BENCH_EXIT_RUNTIME;
        double began = bench_wall_now();
        if (rc == BENCH_EXIT_OK)
            rc = run(&ro, arg, rep, row);
        progress_end(&bar);
        if (o->shard_count)
            row->shard = (struct result_shard){
                .index = o->shard_index,
                .count = o->shard_count,
                .threads = o->threads,
                .start_at = o->start_at,
                .window_start = began + row->setup_s,
                .window_end = began + row->setup_s + row->duration_s,
            };
        if (o->brief) {
            bench_progress(row, rc);
        } else {
            if (rep == 0) {
                fprintf(tf, "%s: %s\n", row->name, ctx->command_line);
                result_print_defs(tf, row);
                result_table_begin(&table, row);
            }
            result_table_row(&table, row);
            tt_print(tf, &table);
            fflush(tf);
            if (rc != BENCH_EXIT_OK)
                fprintf(stderr, "shootout bench %s: run %u FAILED: %s\n", o->experiment,
                        rep + 1, row->error);
        }
        if (rc != BENCH_EXIT_OK)
            break;
    }
    if (rc == BENCH_EXIT_OK && o->runs > 1) {
        result_aggregate(rows, o->runs, &rows[n]);
        if (!o->brief) {
            for (unsigned i = 0; i < 3; i++)
                result_table_row(&table, &rows[n + i]);
            tt_print(tf, &table);
            result_print_summary(tf, &rows[n], &rows[n + 2]);
        }
        n += 3;
    }
    tt_free(&table);
    result_set_append(out, rows, n);
    mem_free(rows);
    return rc;
}

int bench_finish(struct bench_opts *o, const struct result_context *ctx,
                 struct result_set *rows, int rc)
{
    char err[256];
    if (trace_close(o->trace, err, sizeof err) < 0) {
        fprintf(stderr, "shootout bench %s: %s\n", o->experiment, err);
        if (rc == BENCH_EXIT_OK)
            rc = BENCH_EXIT_RUNTIME;
    }
    o->trace = NULL;
    if (o->json_path && result_write_json(o->json_path, ctx, rows->rows, rows->n, err,
                                          sizeof err) < 0) {
        fprintf(stderr, "shootout bench %s: %s\n", o->experiment, err);
        if (rc == BENCH_EXIT_OK)
            rc = BENCH_EXIT_RUNTIME;
    }
    if (o->html_path && report_html_write(o->html_path, ctx, rows->rows, rows->n, err, sizeof err) < 0) {
        fprintf(stderr, "shootout bench %s: %s\n", o->experiment, err);
        if (rc == BENCH_EXIT_OK)
            rc = BENCH_EXIT_RUNTIME;
    }
    result_set_free(rows);
    return rc;
}
