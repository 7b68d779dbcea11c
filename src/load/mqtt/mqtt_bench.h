/* mqtt_bench.h - what the MQTT experiments (mqtt-load, mqtt-ping) share on
 * top of bench.h: their options (messages, QoS, payload size, protocol
 * version), client ids that tell one process's runs from another's, the
 * client engine's settings made from them, a run of the engine with the
 * server sampled around it, and the rows' names and parameters.
 */
#ifndef SHOOTOUT_MQTT_BENCH_H
#define SHOOTOUT_MQTT_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "load/bench.h"
#include "load/mqtt/mqtt_client.h"
#include "load/probe.h"
#include "report/result.h"

/* The most brokers one run spreads its connections over. */
#define MQTT_BENCH_MAX_TARGETS 16

/* How a run places the two ends of a message on several targets
 * (--spread). */
enum mqtt_bench_spread {
    /* The publisher on the target after its subscriber's, so that every
     * message crosses from one broker of a cluster to another. */
    MQTT_SPREAD_CROSS,
    /* Both ends on the same target: independent brokers, or a cluster
     * measured without cross-node traffic. */
    MQTT_SPREAD_LOCAL,
};

struct mqtt_bench_target {
    char host[64]; /* numeric */
    int port;
};

/* The options of every MQTT experiment; each experiment's own embed them. */
struct mqtt_bench_opts {
    uint64_t messages;
    unsigned qos;
    uint32_t payload_size;
    uint8_t version; /* protocol level: 3 (MQTT 3.1), 4 (3.1.1, the default) or 5 */
    /* Tells this process's client ids from any earlier run's, so that a
     * persistent session never resumes one a previous run left behind. */
    uint32_t id_token;
    /* Every --target, resolved, when there are several (mqtt_bench_finish_options);
     * ntargets 0: the one in struct bench_opts. */
    struct mqtt_bench_target targets[MQTT_BENCH_MAX_TARGETS];
    unsigned ntargets;
    unsigned spread; /* enum mqtt_bench_spread */
};

/* The options of both MQTT experiments: on a struct mqtt_bench_opts
 * --qos, --payload-size, --mqtt-version and --spread; on a struct bench_opts
 * --target, --threads and --timeout, as they mean them. Each experiment's
 * command puts its own first and bench_options last. */
extern const struct opt mqtt_bench_options[];
extern const struct opt mqtt_bench_client_options[];

/* The end of their --help. */
#define MQTT_BENCH_HELP_TAIL                                                     \
    "\n"                                                                         \
    "Exit codes: 0 ok, 1 connection or protocol failure, 2 usage error,\n"       \
    "3 messages missing (or unexpected).\n"

/* bench_opts_init, the MQTT port (1883) and the MQTT options' defaults,
 * with a fresh id token. */
void mqtt_bench_init(struct bench_opts *o, struct mqtt_bench_opts *m, const char *experiment);

/* bench_finish_options for an MQTT experiment, which may have several
 * targets: --target may repeat and each may list several, comma-separated
 * ("a:1883,b:1883"). With more than one, every one is resolved into
 * m->targets and o names them all (unless --label or --server-pid does);
 * o->host and o->port are the first. cmd: the command's options, to find
 * every --target. Returns 0 or an exit code. */
int mqtt_bench_finish_options(struct bench_opts *o, struct mqtt_bench_opts *m,
                              const struct opt_cmd *cmd, int argc, char **argv, unsigned conns);

/* Connects connection i of run to target slot % ntargets, when there are
 * several targets: the experiments number the slots so that their
 * connections go round-robin over the targets (docs/bench.md). */
void mqtt_bench_place(const struct mqtt_bench_opts *m, struct mc_run *run, unsigned i,
                      unsigned slot);

/* Executes run (of conns connections) with the client's CPU time, and the
 * server's with --server-pid, measured around it, and fills the fields
 * every MQTT experiment fills alike: setup time, messages sent and
 * received, CPU per received message, error counts. *st receives the run's
 * statistics. Returns the exit code for the run's outcome, or -1 when it
 * timed out after setup: the experiment then writes which messages are
 * missing into row->error and returns BENCH_EXIT_MISSED. */
int mqtt_bench_exec(const struct bench_opts *o, struct mc_run *run, unsigned conns,
                    struct result_row *row, struct mc_stats *st);
/* mqtt_bench_exec with the caller's per-second series (load/persec.h),
 * started here; with_latency: the caller's threads persec_record each
 * operation's latency into *sec while the run goes, and the series
 * carries each second's. */
struct persec;
int mqtt_bench_exec_sec(const struct bench_opts *o, struct mc_run *run, unsigned conns,
                        struct persec *sec, bool with_latency, struct result_row *row,
                        struct mc_stats *st);
/* One run of an experiment made of several (phases), for a caller that
 * opens and closes the probe window itself: executes run, sampling probe
 * (NULL: none), adds its messages and errors to row's and returns as
 * mqtt_bench_exec does. Leaves setup_s and the CPU fields to the caller. */
int mqtt_bench_phase(const struct bench_opts *o, struct mc_run *run, unsigned conns,
                     struct probe *probe, struct result_row *row, struct mc_stats *st);

/* Sets the result's target and the parameters every MQTT experiment shares
 * (messages, qos, payload_size, threads, protocol_level); the experiment
 * adds its own. */
void mqtt_bench_params(struct result_row *tmpl, const struct bench_opts *o,
                       const struct mqtt_bench_opts *m);

/* Names an MQTT experiment's rows "<experiment>/<target>/<point>", with the
 * protocol and the session variant (session: "" for the default) between
 * target and point when they are not the defaults
 * ("mqtt-load/shootout/mqtt5-offline/20c"), so that each variant is a
 * series of its own. */
void mqtt_bench_row_name(struct result_row *tmpl, const struct bench_opts *o,
                         const struct mqtt_bench_opts *m, const char *session, const char *point);

/* The client engine's settings for run rep of an experiment against o's
 * target. Client ids start with tag, m->id_token in hex and rep, written
 * into prefix (the caller's, as long as the run): "ld1f2e3d4c.0-17" is
 * connection 17 of mqtt-load's first run. */
struct mc_config mqtt_bench_mc_config(const struct bench_opts *o, const struct mqtt_bench_opts *m,
                                      const char *tag, unsigned rep, unsigned conns, uint64_t work,
                                      char prefix[32]);

/* A payload of len bytes repeating text (the article's "loadtest payload"
 * style); the caller frees it with mem_free. */
uint8_t *mqtt_bench_payload(const char *text, size_t len);

#endif
