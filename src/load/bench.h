/* bench.h - what the experiments of `shootout bench` share: the options
 * (target, runs, threads, JSON and HTML, timeout, server sampling), and the
 * driver that repeats a measurement, prints each run and the aggregate, and
 * writes the JSON and HTML results. What only the MQTT experiments share is
 * in mqtt/mqtt_bench.h.
 *
 * Exit codes of every experiment: 0 success, 1 runtime failure (cannot
 * resolve or connect, the server refused or broke the protocol, or answered
 * a call with an error), 2 usage error, 3 messages went missing (or arrived
 * where they should not; for RPC: calls unanswered within the timeout).
 */
#ifndef SHOOTOUT_BENCH_H
#define SHOOTOUT_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/opt.h"
#include "load/probe.h"
#include "load/progress.h"
#include "load/trace.h"
#include "report/result.h"

#define BENCH_EXIT_OK 0
#define BENCH_EXIT_RUNTIME 1
#define BENCH_EXIT_USAGE 2
#define BENCH_EXIT_MISSED 3

struct bench_opts {
    const char *experiment; /* "mqtt-load", "rpc-seq" */
    char host[64];          /* numeric address the target resolved to */
    int port;               /* the experiment's default until --target names one */
    char target[80]; /* label: --label, else the server's process name, else host:port */
    unsigned threads, runs, timeout_s;
    const char *json_path; /* NULL: no JSON */
    const char *html_path; /* NULL: no HTML report */
    /* --server-pid: the server's processes, sampled together (a cluster's
     * nodes and its NATS server); nserver_pids 0: no server sampling. */
    int server_pids[PROBE_MAX_PIDS];
    unsigned nserver_pids;
    const char *target_arg; /* --target as given */
    const char *label;      /* --label, or NULL */
    /* One progress line per run on stderr instead of the table, for a
     * caller that prints its own (shootout run). */
    bool brief;
    unsigned progress_mode; /* enum progress_mode: --progress */
    /* The run's progress line, set by bench_repeat on the copy of the
     * options each run gets; NULL outside a run. */
    struct progress *progress;
    const char *trace_path;             /* --trace, or NULL */
    unsigned trace_sample, trace_body; /* --trace-sample, --trace-body */
    struct trace *trace;                /* open while the experiment runs; NULL: no trace */
    /* --shard I/N: this process runs part I (0 .. N-1) of the experiment
     * its options describe; shard_count 0: the whole. */
    unsigned shard_index, shard_count;
    double start_at; /* --start-at, unix seconds; 0: start at once */
    /* --start-every, seconds: with --start-at, repetition k starts at
     * start_at + k * start_every on every shard; 0: not given. */
    double start_every;
};

/* The options every experiment takes, on a struct bench_opts (core/opt.h):
 * --runs, --json, --html, --server-pid, --label, --progress, --trace,
 * --trace-sample, --trace-body, --shard, --start-at, --start-every. Each experiment adds its
 * own, --target, --timeout and --threads among them, since what they mean
 * differs. */
extern const struct opt bench_options[];

/* Sets the shared defaults; experiment is static. */
void bench_opts_init(struct bench_opts *o, const char *experiment);
/* The server to sample, for a caller that sets the options itself: the
 * processes pids[0..n) (n 0: none; at most PROBE_MAX_PIDS are kept). */
void bench_set_server(struct bench_opts *o, const int *pids, unsigned n);
/* Parses argv with cmd into base (whose struct bench_opts is o): says
 * what was wrong on a usage error. Returns -1 to go on, or the exit code
 * to return at once (0 after --help, 2 after a usage error). */
int bench_parse(struct bench_opts *o, const struct opt_cmd *cmd, int argc, char **argv,
                void *base);
/* Prints a usage problem and returns BENCH_EXIT_USAGE. */
int bench_usage_error(const struct bench_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* After option parsing: rejects stray arguments, resolves the target,
 * names it, makes room for conns sockets and opens the --trace file.
 * Returns 0 or an exit code. */
int bench_finish_options(struct bench_opts *o, int argc, char **argv, unsigned conns);

/* The pieces of bench_finish_options for an experiment that takes several
 * targets (the MQTT ones: mqtt/mqtt_bench.h): splits one "host",
 * "host:port" or "[v6]:port" into host (still a name) and *port (left alone
 * without one), or says what is wrong and returns BENCH_EXIT_USAGE; and
 * resolves host, in place, once to a numeric address, so that thousands of
 * connects make no name lookups (0, or BENCH_EXIT_RUNTIME having said why). */
int bench_split_target(const struct bench_opts *o, const char *arg, char host[64], int *port);
int bench_resolve(const struct bench_opts *o, char host[64]);

/* This shard's part of total items (connections, calls, users): the
 * items [*first, *first + the result), total split as evenly as whole
 * items go; all of them when the run is not sharded. */
uint64_t bench_share(const struct bench_opts *o, uint64_t total, uint64_t *first);
/* A usage error when total (what: "--conns") leaves some shard nothing;
 * else 0. */
int bench_share_check(const struct bench_opts *o, const char *what, uint64_t total);

/* One measured repetition rep: fills row's metrics and returns 0, or an
 * exit code with the reason in row->error. */
typedef int (*bench_run_fn)(const struct bench_opts *o, void *arg, unsigned rep,
                            struct result_row *row);

/* Runs o->runs repetitions of run, each from a copy of tmpl (the first
 * at --start-at, if given); prints a table line per run, then the
 * aggregate; a sharded run's rows say which part they are and their
 * wall-clock window, for `shootout merge`; appends the iteration rows, then the
 * aggregate rows, to out. Stops at the first failed run (its row is still
 * appended, and no aggregate is). Returns the exit code. */
int bench_repeat(const struct bench_opts *o, const struct result_context *ctx,
                 const struct result_row *tmpl, bench_run_fn run, void *arg,
                 struct result_set *out);

/* The end of a `shootout bench` experiment: writes rows as JSON to
 * o->json_path, if any, and frees them; closes the trace. Returns rc, or BENCH_EXIT_RUNTIME
 * if rc was 0 and the JSON could not be written. */
int bench_finish(struct bench_opts *o, const struct result_context *ctx,
                 struct result_set *rows, int rc);

#endif
