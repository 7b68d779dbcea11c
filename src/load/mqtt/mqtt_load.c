/* mqtt_load.c - the loadtest experiment on the client engine, with clean
 * sessions (the article's), persistent ones, or persistent ones that are
 * offline while the publishers publish (the broker's durable path). */
#include "load/mqtt/mqtt_load.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/mem.h"
#include "load/bench.h"
#include "load/mqtt/mqtt_bench.h"
#include "load/mqtt/mqtt_client.h"

static const char load_head[] =
    "usage: shootout bench mqtt-load [options]\n"
    "\n"
    "The MQTT loadtest of the source article: --conns connections, half of them\n"
    "subscribers (subscriber i on topic loadtest/<i>), half publishers (publisher i\n"
    "publishes --messages messages to loadtest/<i> as fast as the broker takes\n"
    "them). Publishing starts once every subscription is established; the run\n"
    "ends when every subscriber has received its messages. A subscriber missing\n"
    "messages when nothing has arrived for --timeout seconds fails the run.\n"
    "\n"
    "Reported, in messages delivered to subscribers per second:\n"
    "  throughput            from the first connect to the last message (the\n"
    "                        article's definition)\n"
    "  msg-phase throughput  from all subscriptions established to the last\n"
    "                        message (connection setup excluded)\n"
    "and the CPU time of this client, and of the broker with --server-pid, per\n"
    "message delivered.\n"
    "\n"
    "With --offline the subscribers subscribe with persistent sessions and\n"
    "disconnect; the publishers then publish everything (the broker queues it for\n"
    "the offline sessions), and the subscribers come back and drain their queues.\n"
    "Reported apart: the publish phase (messages acknowledged to the publishers\n"
    "per second) and the drain phase (messages delivered per second, from the\n"
    "first reconnect). The broker must queue --messages messages per session:\n"
    "raise its max_queued_messages (Mosquitto's and ours default to 1000), or\n"
    "the messages it drops fail the run (exit 3).\n"
    "\n";

#define LOAD_PAYLOAD "loadtest payload"
/* Long enough for any publish phase; the sessions are ended at the end of
 * each run anyway, so this only bounds what a killed run leaves behind. */
#define LOAD_SESSION_EXPIRY_S 3600

struct load {
    const struct mqtt_load_opts *opts;
    unsigned subs;  /* subscribers = publishers */
    unsigned first; /* the index of the first pair in the whole run (--shard) */
    uint64_t messages;
    uint8_t qos;
    uint8_t *payload;
    size_t payload_len;
    char (*topic_names)[24];   /* loadtest/<i> */
    struct mqtt_bytes *topics; /* the same, as byte strings */
    /* Per connection, written only on its thread: messages received by a
     * subscriber, published by a publisher. Subscribers come first. */
    uint64_t *count;
    /* Per publisher (index - subs), --offline only: publishes acknowledged. */
    uint64_t *acked;
};

static void load_start(struct mc_conn *c, void *user)
{
    struct load *l = user;
    if (mc_index(c) >= l->subs)
        mc_produce(c);
}

static bool load_fill(struct mc_conn *c, void *user)
{
    struct load *l = user;
    unsigned i = mc_index(c);
    struct mqtt_bytes topic = l->topics[i - l->subs];
    uint64_t sent = l->count[i];
    while (sent < l->messages && mc_room(c)) {
        mc_publish(c, topic, l->payload, l->payload_len, l->qos);
        sent++;
    }
    l->count[i] = sent;
    return sent < l->messages;
}

static void load_message(struct mc_conn *c, const struct mqtt_publish *p, void *user)
{
    struct load *l = user;
    unsigned i = mc_index(c);
    if (i >= l->subs) {
        mc_fail(c, MC_FAIL_CHECK, "publisher %u, subscribed to nothing, received a message on %.*s",
                i - l->subs, (int)p->topic.len, (const char *)p->topic.ptr);
        return;
    }
    if (p->topic.len != l->topics[i].len || memcmp(p->topic.ptr, l->topics[i].ptr, p->topic.len)) {
        mc_fail(c, MC_FAIL_CHECK, "subscriber %u received a message on %.*s instead of %s", i,
                (int)p->topic.len, (const char *)p->topic.ptr, l->topic_names[i]);
        return;
    }
    uint64_t n = ++l->count[i];
    if (n == l->messages)
        mc_complete(c);
    else if (n == l->messages + 1)
        mc_fail(c, MC_FAIL_CHECK,
                "subscriber %u received more than the %llu messages published to it", i,
                (unsigned long long)l->messages);
}

/* The publish phase of --offline ends when the broker has taken every
 * message: each publisher's last acknowledgement. */
static void load_acked(struct mc_conn *c, void *user)
{
    struct load *l = user;
    if (++l->acked[mc_index(c) - l->subs] == l->messages)
        mc_complete(c);
}

static const struct mc_ops load_ops = {
    .start = load_start,
    .message = load_message,
    .fill = load_fill,
};

static const struct mc_ops load_publish_ops = {
    .start = load_start,
    .message = load_message,
    .fill = load_fill,
    .acked = load_acked,
};

/* Runs whose connections only connect (and subscribe) and leave: each is
 * done once every connection is ready. */
static void load_leave(struct mc_conn *c, void *user) { mc_complete(c); }

static void load_no_message(struct mc_conn *c, const struct mqtt_publish *p, void *user)
{
    mc_fail(c, MC_FAIL_CHECK, "subscriber %u received a message on %.*s before any was published",
            mc_index(c), (int)p->topic.len, (const char *)p->topic.ptr);
}

static const struct mc_ops load_leave_ops = {
    .start = load_leave,
    .message = load_no_message,
};

/* After a timeout: which of the l->subs counters (of subscribers or
 * publishers, the who) fell short of l->messages, and by how much; what
 * they were missing and had not been done to it go into the message. */
static void load_shortfall(const struct bench_opts *o, const struct load *l, const uint64_t *count,
                           const char *who, const char *what, const char *done, const char *hint,
                           struct result_row *row)
{
    unsigned behind = 0, first = 0;
    uint64_t missing = 0;
    for (unsigned i = 0; i < l->subs; i++) {
        if (count[i] >= l->messages)
            continue;
        if (behind++ == 0)
            first = i;
        missing += l->messages - count[i];
    }
    row->lost = (double)missing;
    snprintf(row->error, sizeof row->error,
             "%u of %u %ss are missing %s: %llu of %llu messages not %s after no progress for "
             "%u s (%s %u got %llu of %llu)%s",
             behind, l->subs, who, what, (unsigned long long)missing,
             (unsigned long long)(l->messages * l->subs), done, o->timeout_s, who, first,
             (unsigned long long)count[first], (unsigned long long)l->messages, hint);
}

/* In the messaging (or drain) phase. */
static void load_missing(const struct bench_opts *o, const struct load *l, struct result_row *row)
{
    load_shortfall(o, l, l->count, "subscriber", "messages", "delivered",
                   l->opts->offline ? "; a broker drops what it cannot queue for an offline session: "
                                "is its max_queued_messages at least --messages?"
                              : "",
                   row);
}

static double load_seconds(uint64_t from_ns, uint64_t to_ns) { return (double)(to_ns - from_ns) / 1e9; }

/* Several targets (docs/bench.md): the connections first .. first + n - 1
 * of a run, subscriber j (of pair j in the whole run, so that shards spread
 * alike) on target j, its publisher on j + 1 (--spread cross: every
 * message crosses brokers) or on j too (local). A subscriber's persistent
 * session is always on the same target. */
static void load_place(const struct load *l, struct mc_run *run, unsigned first, unsigned n)
{
    const struct mqtt_bench_opts *m = &l->opts->mqtt;
    unsigned cross = m->spread == MQTT_SPREAD_CROSS;
    for (unsigned i = first; i < first + n; i++)
        mqtt_bench_place(m, run, i, i < l->subs ? l->first + i : l->first + i - l->subs + cross);
}

/* Ends the subscribers' persistent sessions, whatever became of the run:
 * each connects once more with a clean session, which discards the stored
 * one, and leaves. A failure is reported, not counted against the run. */
static void load_end_sessions(const struct bench_opts *o, struct load *l, unsigned rep)
{
    char prefix[32];
    struct mc_config cfg =
        mqtt_bench_mc_config(o, &l->opts->mqtt, "ld", rep, l->subs, l->subs, prefix);
    struct mc_run *run = mc_run_new(&cfg, &load_leave_ops, l);
    load_place(l, run, 0, l->subs);
    enum mc_status status = mc_run_exec(run, o->timeout_s, NULL, NULL);
    if (status != MC_DONE) {
        struct mc_stats st;
        mc_run_stats(run, &st);
        fprintf(stderr,
                "shootout bench %s: could not end the persistent sessions %s-0 .. %s-%u on the "
                "broker: %s\n",
                o->experiment, prefix, prefix, l->subs - 1,
                status == MC_TIMEOUT ? "no progress" : st.error);
    }
    mc_run_free(run);
}

static int load_run(const struct bench_opts *o, void *arg, unsigned rep, struct result_row *row)
{
    struct load *l = arg;
    unsigned conns = 2 * l->subs;
    memset(l->count, 0, conns * sizeof *l->count);
    char prefix[32];
    struct mc_config cfg =
        mqtt_bench_mc_config(o, &l->opts->mqtt, "ld", rep, conns, l->subs, prefix);
    cfg.session_expiry = LOAD_SESSION_EXPIRY_S;
    cfg.progress_total = (uint64_t)l->subs * l->opts->mqtt.messages;
    struct mc_run *run = mc_run_new(&cfg, &load_ops, l);
    load_place(l, run, 0, conns);
    for (unsigned i = 0; i < l->subs; i++) {
        mc_set_filter(run, i, l->topic_names[i], l->qos);
        if (l->opts->persistent)
            mc_set_session(run, i, MC_SESSION_KEEP);
    }
    struct mc_stats st;
    int rc = mqtt_bench_exec(o, run, conns, row, &st);
    mc_run_free(run);
    if (l->opts->persistent)
        load_end_sessions(o, l, rep);
    if (rc < 0) {
        load_missing(o, l, row);
        return BENCH_EXIT_MISSED;
    }
    if (rc != BENCH_EXIT_OK)
        return rc;
    row->duration_s = load_seconds(st.t_start_ns, st.t_end_ns);
    row->throughput = row->received / row->duration_s;
    row->throughput_messaging = row->received / load_seconds(st.t_ready_ns, st.t_end_ns);
    return BENCH_EXIT_OK;
}

/* One phase of --offline on the connections first .. first + subs - 1: a
 * run of ops, each connection with session s (and subscribing when
 * subscribe). Returns as mqtt_bench_phase does. */
static int load_offline_phase(const struct bench_opts *o, struct load *l, unsigned rep,
                              unsigned first, const struct mc_ops *ops, enum mc_session s,
                              bool subscribe, struct probe *probe, struct result_row *row,
                              struct mc_stats *st)
{
    char prefix[32];
    struct mc_config cfg =
        mqtt_bench_mc_config(o, &l->opts->mqtt, "ld", rep, l->subs, l->subs, prefix);
    cfg.first = first;
    cfg.session_expiry = LOAD_SESSION_EXPIRY_S;
    struct mc_run *run = mc_run_new(&cfg, ops, l);
    load_place(l, run, first, l->subs);
    for (unsigned i = first; i < first + l->subs; i++) {
        if (subscribe)
            mc_set_filter(run, i, l->topic_names[i], l->qos);
        mc_set_session(run, i, s);
    }
    int rc = mqtt_bench_phase(o, run, l->subs, probe, row, st);
    mc_run_free(run);
    return rc;
}

/* --offline: subscribe and leave; publish into the queues; come back and
 * drain them. The probe window spans the publish and drain phases. */
static int load_offline_run(const struct bench_opts *o, void *arg, unsigned rep,
                            struct result_row *row)
{
    struct load *l = arg;
    memset(l->count, 0, 2 * l->subs * sizeof *l->count);
    memset(l->acked, 0, l->subs * sizeof *l->acked);
    struct mc_stats st;
    int rc = load_offline_phase(o, l, rep, 0, &load_leave_ops, MC_SESSION_KEEP, true, NULL, row,
                                &st);
    if (rc != BENCH_EXIT_OK) {
        /* Not -1: the run is done the moment every subscriber is ready. */
        load_end_sessions(o, l, rep);
        return rc;
    }
    row->setup_s = load_seconds(st.t_start_ns, st.t_ready_ns);

    struct probe probe;
    probe_start(&probe, o->server_pids, o->nserver_pids);
    rc = load_offline_phase(o, l, rep, l->subs, &load_publish_ops, MC_SESSION_CLEAN, false, &probe,
                            row, &st);
    if (st.t_ready_ns)
        row->setup_s += load_seconds(st.t_start_ns, st.t_ready_ns);
    if (rc < 0) {
        load_shortfall(o, l, l->acked, "publisher", "acknowledgements", "acknowledged", "", row);
        rc = BENCH_EXIT_MISSED;
    } else if (rc == BENCH_EXIT_OK) {
        row->publish_s = load_seconds(st.t_ready_ns, st.t_end_ns);
        row->throughput_publish = (double)(l->messages * l->subs) / row->publish_s;
        rc = load_offline_phase(o, l, rep, 0, &load_ops, MC_SESSION_RESUME, false, &probe, row,
                                &st);
        if (rc < 0) {
            load_missing(o, l, row);
            rc = BENCH_EXIT_MISSED;
        } else if (rc == BENCH_EXIT_OK) {
            row->drain_s = load_seconds(st.t_start_ns, st.t_end_ns);
            row->throughput_drain = row->received / row->drain_s;
            row->duration_s = row->publish_s + row->drain_s;
            row->throughput = row->received / row->duration_s;
        }
    }
    probe_finish(&probe, row->received, row);
    load_end_sessions(o, l, rep);
    return rc;
}

/* The command's options: its own, then what it shares. */
struct load_cmd {
    struct bench_opts b;
    struct mqtt_load_opts l;
};

static const struct opt_choice load_sessions[] = {
    {"clean", NULL, 0},
    {"persistent", NULL, 1},
    {NULL, NULL, 0},
};

static const struct opt load_options[] = {
    {"conns", 0, OPT_UINT, "C", "connections, an even number", "100",
     OPT_FIELD(struct load_cmd, l.conns), .min = 2, .max = 1000000},
    {"messages", 0, OPT_UINT, "M", "messages per publisher", "1000",
     OPT_FIELD(struct load_cmd, l.mqtt.messages), .min = 1, .max = UINT32_MAX},
    {"session", 0, OPT_ENUM, "S",
     "clean or persistent: subscribers connect with clean session 0 (MQTT 5: Clean Start 0 and "
     "a Session Expiry Interval of 3600 s); their sessions are ended at the end of each run",
     "clean", OPT_FIELD(struct load_cmd, l.persistent), .choices = load_sessions},
    {"offline", 0, OPT_FLAG, NULL,
     "with --session persistent and --qos 1 or 2: the subscribers are offline while the "
     "publishers publish", NULL, OPT_FIELD(struct load_cmd, l.offline)},
    {.kind = OPT_END},
};

static const struct opt_table load_tables[] = {
    {load_options, 0},
    {mqtt_bench_options, offsetof(struct load_cmd, l.mqtt)},
    {mqtt_bench_client_options, offsetof(struct load_cmd, b)},
    {bench_options, offsetof(struct load_cmd, b)},
    {NULL, 0},
};

static const struct opt_cmd load_command = {
    .head = load_head, .tables = load_tables, .tail = MQTT_BENCH_HELP_TAIL};

int mqtt_load_main(int argc, char **argv, const struct result_context *ctx)
{
    struct load_cmd c = {.l = {.conns = 100}};
    struct bench_opts *o = &c.b;
    struct mqtt_load_opts *l = &c.l;
    mqtt_bench_init(o, &l->mqtt, "mqtt-load");
    int rc = bench_parse(o, &load_command, argc, argv, &c);
    if (rc >= 0)
        return rc;
    if (l->conns % 2)
        return bench_usage_error(o, "--conns must be even: half subscribe, half publish");
    if (l->offline && !l->persistent)
        return bench_usage_error(o, "--offline needs --session persistent: only a persistent "
                                    "session has messages queued while it is offline");
    if (l->offline && l->mqtt.qos == 0)
        return bench_usage_error(o, "--offline needs --qos 1 or 2: brokers do not queue QoS 0 "
                                    "messages for offline sessions (by default)");
    if ((rc = bench_share_check(o, "--conns / 2 (the publishers)", l->conns / 2)))
        return rc;
    rc = mqtt_bench_finish_options(o, &l->mqtt, &load_command, argc, argv, l->conns);
    if (rc)
        return rc;
    struct result_set rows = {0};
    rc = mqtt_load_exec(o, l, ctx, &rows);
    return bench_finish(o, ctx, &rows, rc);
}

void mqtt_load_row_name(struct result_row *tmpl, const struct bench_opts *o,
                        const struct mqtt_load_opts *l)
{
    char point[16];
    snprintf(point, sizeof point, "%uc", l->conns);
    mqtt_bench_row_name(tmpl, o, &l->mqtt,
                        l->offline ? "offline" : l->persistent ? "persistent" : "", point);
}

int mqtt_load_exec(const struct bench_opts *o, const struct mqtt_load_opts *lo,
                   const struct result_context *ctx, struct result_set *out)
{
    /* A shard runs its part of the subscriber/publisher pairs, on the
     * topics of their index in the whole run. */
    uint64_t first;
    unsigned subs = (unsigned)bench_share(o, lo->conns / 2, &first), conns = 2 * subs;
    struct load l = {
        .opts = lo,
        .subs = subs,
        .first = (unsigned)first,
        .messages = lo->mqtt.messages,
        .qos = (uint8_t)lo->mqtt.qos,
        .payload = mqtt_bench_payload(LOAD_PAYLOAD, lo->mqtt.payload_size),
        .payload_len = lo->mqtt.payload_size,
    };
    l.topic_names = mem_alloc(l.subs * sizeof *l.topic_names);
    l.topics = mem_alloc(l.subs * sizeof *l.topics);
    l.count = mem_calloc(conns, sizeof *l.count);
    l.acked = mem_calloc(l.subs, sizeof *l.acked);
    for (unsigned i = 0; i < l.subs; i++) {
        int n = snprintf(l.topic_names[i], sizeof l.topic_names[i], "loadtest/%llu",
                         (unsigned long long)(first + i));
        l.topics[i] = (struct mqtt_bytes){(const uint8_t *)l.topic_names[i], (size_t)n};
    }

    struct result_row tmpl = {
        .experiment = "mqtt-load",
        .throughput_def = "messages delivered to subscribers per second, from the first "
                          "connect to the last message (the article's loadtest figure)",
        .throughput_messaging_def = "messages delivered to subscribers per second, from all "
                                    "subscriptions established to the last message",
        .op_def = "message delivered to a subscriber",
    };
    if (lo->offline) {
        tmpl.throughput_def = "messages delivered to subscribers per second over the publish "
                              "and drain phases together (connecting and subscribing excluded)";
        tmpl.throughput_messaging_def = NULL;
        tmpl.publish_def = "messages acknowledged to the publishers per second, from all "
                           "publishers connected to the last acknowledgement, every "
                           "subscriber's session offline";
        tmpl.drain_def = "messages delivered to subscribers per second, from the first "
                         "subscriber's reconnect to the last message";
    }
    mqtt_load_row_name(&tmpl, o, lo);
    result_param(&tmpl, "conns", lo->conns);
    result_param(&tmpl, "subscribers", lo->conns / 2);
    result_param(&tmpl, "publishers", lo->conns / 2);
    mqtt_bench_params(&tmpl, o, &lo->mqtt);
    result_param(&tmpl, "persistent", lo->persistent);
    result_param(&tmpl, "offline", lo->offline);

    int rc = bench_repeat(o, ctx, &tmpl, lo->offline ? load_offline_run : load_run, &l, out);
    mem_free(l.acked);
    mem_free(l.count);
    mem_free(l.topics);
    mem_free(l.topic_names);
    mem_free(l.payload);
    return rc;
}
