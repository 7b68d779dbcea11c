/* bench.h - what the experiments of `shootout bench` share: the options
 * (target, runs, JSON, timeout, server sampling; and for the MQTT ones
 * messages, QoS, payload, threads and protocol version), and the driver
 * that repeats a measurement, prints each run and the aggregate, and writes
 * the JSON result.
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

#include "load/mqtt/mqtt_client.h"
#include "load/probe.h"
#include "report/result.h"

#define BENCH_EXIT_OK 0
#define BENCH_EXIT_RUNTIME 1
#define BENCH_EXIT_USAGE 2
#define BENCH_EXIT_MISSED 3

struct bench_opts {
    const char *experiment; /* "mqtt-load", "rpc-seq" */
    const char *usage;      /* the experiment's --help text */
    char host[64];          /* numeric address the target resolved to */
    int port;
    char target[80]; /* label: --label, else the server's process name, else host:port */
    unsigned threads, runs, timeout_s, qos;
    uint64_t messages;
    uint32_t payload_size;
    uint8_t mqtt_version; /* protocol level: 3 (MQTT 3.1), 4 (3.1.1, the default) or 5 */
    bool persistent;      /* mqtt-load --session persistent */
    bool offline;         /* mqtt-load --offline */
    /* Tells this process's client ids from any earlier run's, so that a
     * persistent session never resumes one a previous run left behind. */
    uint32_t id_token;
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
 * put BENCH_LONGOPTS in their table and BENCH_HELP in their usage. */
enum {
    BENCH_OPT_TARGET = 1000,
    BENCH_OPT_MESSAGES,
    BENCH_OPT_QOS,
    BENCH_OPT_PAYLOAD,
    BENCH_OPT_RUNS,
    BENCH_OPT_THREADS,
    BENCH_OPT_JSON,
    BENCH_OPT_TIMEOUT,
    BENCH_OPT_SERVER_PID,
    BENCH_OPT_LABEL,
    BENCH_OPT_HTML,
    BENCH_OPT_MQTT_VERSION,
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

/* Those of the MQTT experiments. */
#define BENCH_LONGOPTS                                               \
    {"messages", required_argument, NULL, BENCH_OPT_MESSAGES},       \
    {"qos", required_argument, NULL, BENCH_OPT_QOS},                 \
    {"payload-size", required_argument, NULL, BENCH_OPT_PAYLOAD},    \
    {"threads", required_argument, NULL, BENCH_OPT_THREADS},         \
    {"mqtt-version", required_argument, NULL, BENCH_OPT_MQTT_VERSION}, \
    BENCH_LONGOPTS_COMMON

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

/* The MQTT experiments' option help. */
#define BENCH_HELP                                                                       \
    "  --target HOST:PORT    broker to measure (default 127.0.0.1:1883)\n"               \
    "  --qos 0|1|2           QoS of every publish and subscription (default 0)\n"        \
    "  --payload-size BYTES  message payload size (default 16)\n"                        \
    "  --mqtt-version V      3.1 (also 31), 3.1.1 (also 311) or 5: the protocol every\n" \
    "                        client speaks (default 3.1.1)\n"                            \
    BENCH_HELP_RUNS                                                                      \
    "  --threads T           client threads, one event loop each (default 1)\n"          \
    BENCH_HELP_JSON                                                                      \
    "  --timeout SECS        fail when nothing arrives for SECS (default 10)\n"          \
    BENCH_HELP_SERVER                                                                    \
    "\n"                                                                                 \
    "Exit codes: 0 ok, 1 connection or protocol failure, 2 usage error,\n"               \
    "3 messages missing (or unexpected).\n"

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

/* Executes run (of conns connections) with the client's CPU time, and the
 * server's with --server-pid, measured around it, and fills the fields
 * every MQTT experiment fills alike: setup time, messages sent and
 * received, CPU per received message, error counts. *st receives the run's
 * statistics. Returns the exit code for the run's outcome, or -1 when it
 * timed out after setup: the experiment then writes which messages are
 * missing into row->error and returns BENCH_EXIT_MISSED. */
int bench_mqtt_exec(const struct bench_opts *o, struct mc_run *run, unsigned conns,
                    struct result_row *row, struct mc_stats *st);
/* One run of an experiment made of several (phases), for a caller that
 * opens and closes the probe window itself: executes run, sampling probe
 * (NULL: none), adds its messages and errors to row's and returns as
 * bench_mqtt_exec does. Leaves setup_s and the CPU fields to the caller. */
int bench_mqtt_phase(const struct bench_opts *o, struct mc_run *run, unsigned conns,
                     struct probe *probe, struct result_row *row, struct mc_stats *st);

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

/* Sets the result's target and the parameters every MQTT experiment shares
 * (messages, qos, payload_size, threads, protocol_level); the experiment
 * adds its own. */
void bench_common_params(struct result_row *tmpl, const struct bench_opts *o);

/* Names an MQTT experiment's rows "<experiment>/<target>/<point>", with the
 * protocol and session variant between target and point when they are not
 * the defaults ("mqtt-load/shootout/mqtt5-offline/20c"), so that each
 * variant is a series of its own. */
void bench_row_name(struct result_row *tmpl, const struct bench_opts *o, const char *point);

/* The client engine's settings for run rep of an experiment against o's
 * target. Client ids start with tag, o->id_token in hex and rep, written
 * into prefix (the caller's, as long as the run): "ld1f2e3d4c.0-17" is
 * connection 17 of mqtt-load's first run. */
struct mc_config bench_mc_config(const struct bench_opts *o, const char *tag, unsigned rep,
                                 unsigned conns, uint64_t work, char prefix[32]);

/* A payload of len bytes repeating text (the article's "loadtest payload"
 * style); the caller frees it with mem_free. */
uint8_t *bench_payload(const char *text, size_t len);

#endif
