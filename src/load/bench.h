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

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "report/result.h"

#define BENCH_EXIT_OK 0
#define BENCH_EXIT_RUNTIME 1
#define BENCH_EXIT_USAGE 2
#define BENCH_EXIT_MISSED 3

struct bench_opts {
    const char *experiment; /* "mqtt-load", "rpc-seq" */
    const char *usage;      /* the experiment's --help text */
    char host[64];          /* numeric address the target resolved to */
    int port;               /* the experiment's default until --target names one */
    char target[80]; /* label: --label, else the server's process name, else host:port */
    unsigned threads, runs, timeout_s;
    const char *json_path; /* NULL: no JSON */
    const char *html_path; /* NULL: no HTML report */
    int server_pid;        /* 0: no server sampling */
    const char *target_arg; /* --target as given */
    const char *label;      /* --label, or NULL */
    /* One progress line per run on stderr instead of the table, for a
     * caller that prints its own (shootout run). */
    bool brief;
};

/* getopt_long entries and help lines of the shared options; experiments
 * put BENCH_LONGOPTS_COMMON in their table and the BENCH_HELP_ lines in
 * their usage. */
enum {
    BENCH_OPT_TARGET = 1000,
    BENCH_OPT_RUNS,
    BENCH_OPT_THREADS,
    BENCH_OPT_JSON,
    BENCH_OPT_TIMEOUT,
    BENCH_OPT_SERVER_PID,
    BENCH_OPT_LABEL,
    BENCH_OPT_HTML,
};

/* The options of every experiment. */
#define BENCH_LONGOPTS_COMMON                                        \
    {"target", required_argument, NULL, BENCH_OPT_TARGET},           \
    {"runs", required_argument, NULL, BENCH_OPT_RUNS},               \
    {"json", required_argument, NULL, BENCH_OPT_JSON},               \
    {"html", required_argument, NULL, BENCH_OPT_HTML},               \
    {"timeout", required_argument, NULL, BENCH_OPT_TIMEOUT},         \
    {"server-pid", required_argument, NULL, BENCH_OPT_SERVER_PID},   \
    {"label", required_argument, NULL, BENCH_OPT_LABEL},             \
    {"help", no_argument, NULL, 'h'}

/* Help lines of the common options, for each experiment's usage. */
#define BENCH_HELP_RUNS                                                                  \
    "  --runs R              repetitions; with R > 1 the mean, median and stddev\n"      \
    "                        are reported too (default 1)\n"
#define BENCH_HELP_JSON                                                                  \
    "  --json FILE           write the results as JSON to FILE ('-': stdout, and\n"      \
    "                        the table goes to stderr)\n"                           \
    "  --html FILE           write the results as a self-contained HTML page with\n"  \
    "                        charts to FILE\n"
#define BENCH_HELP_SERVER                                                                \
    "  --server-pid PID      sample the server process's CPU time, RSS and threads\n"    \
    "                        from /proc/PID over each run\n"                             \
    "  --label NAME          what to call the target in results (default: the\n"        \
    "                        --server-pid process's name, else HOST:PORT)\n"             \
    "  -h, --help            this text\n"

/* Sets the shared defaults; experiment and usage are static. */
void bench_opts_init(struct bench_opts *o, const char *experiment, const char *usage);
/* Handles every getopt_long result c the experiment does not handle
 * itself: the shared options, --help and unknown options. Returns -1 to go
 * on parsing, or the exit code to return at once (0 after --help, 2 after a
 * usage error). */
int bench_parse_option(struct bench_opts *o, int c, const char *arg);
/* Parses a whole number option in [min, max]. 0, or prints the problem
 * and returns -1. */
int bench_parse_uint(const struct bench_opts *o, const char *opt, const char *arg, uint64_t min,
                     uint64_t max, uint64_t *out);
/* Prints a usage problem and returns BENCH_EXIT_USAGE. */
int bench_usage_error(const struct bench_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* After option parsing: rejects stray arguments, resolves the target,
 * names it, and makes room for conns sockets. Returns 0 or an exit code. */
int bench_finish_options(struct bench_opts *o, int argc, char **argv, unsigned conns);

/* One measured repetition rep: fills row's metrics and returns 0, or an
 * exit code with the reason in row->error. */
typedef int (*bench_run_fn)(const struct bench_opts *o, void *arg, unsigned rep,
                            struct result_row *row);

/* Runs o->runs repetitions of run, each from a copy of tmpl; prints a table
 * line per run, then the aggregate; appends the iteration rows, then the
 * aggregate rows, to out. Stops at the first failed run (its row is still
 * appended, and no aggregate is). Returns the exit code. */
int bench_repeat(const struct bench_opts *o, const struct result_context *ctx,
                 const struct result_row *tmpl, bench_run_fn run, void *arg,
                 struct result_set *out);

/* The end of a `shootout bench` experiment: writes rows as JSON to
 * o->json_path, if any, and frees them. Returns rc, or BENCH_EXIT_RUNTIME
 * if rc was 0 and the JSON could not be written. */
int bench_finish(const struct bench_opts *o, const struct result_context *ctx,
                 struct result_set *rows, int rc);

#endif
