/* mqtt_ping.c - the pingtest experiment on the client engine. */
#include "load/mqtt/mqtt_ping.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/mem.h"
#include "load/bench.h"
#include "load/mqtt/mqtt_bench.h"
#include "load/mqtt/mqtt_client.h"
#include "load/persec.h"
#include "report/hist.h"

static const char ping_head[] =
    "usage: shootout bench mqtt-ping [options]\n"
    "\n"
    "The MQTT pingtest of the source article: --pairs request/reply pairs and\n"
    "--wsubs wildcard subscribers. In pair i a responder subscribes to\n"
    "pingtest/<i>/request and answers each request on pingtest/<i>/reply; the\n"
    "requester sends --messages requests one at a time, each after the previous\n"
    "reply. Every wildcard subscriber (pingtest/0/#) must receive all of pair 0's\n"
    "requests and replies. All connections and subscriptions are established\n"
    "before the clock starts.\n"
    "\n"
    "Reported: messages per second, counting requests delivered to responders\n"
    "plus replies delivered to requesters (2 x messages x pairs, as the article),\n"
    "from all subscriptions established to the last message; the round-trip\n"
    "latency (request sent to reply received) with min, mean, stddev, max and\n"
    "percentiles; and the CPU time of this client, and of the broker with\n"
    "--server-pid, per message delivered to any client. The JSON's per-second\n"
    "series has each second's messages and the round trips that ended in it\n"
    "(their p50, p99 and latency buckets, which `shootout merge` adds up).\n"
    "\n";

#define PING_PAYLOAD "pingtest payload"
#define PING_SEQ_LEN sizeof(uint64_t)

struct ping {
    const struct mqtt_ping_opts *opts;
    unsigned first;  /* the index of the first pair in the whole run (--shard) */
    unsigned wfirst; /* and of the first wildcard subscriber */
    unsigned pairs, wsubs;
    uint64_t messages;
    uint8_t qos;
    uint8_t *payload; /* request template; the sequence number goes first */
    size_t payload_len;
    char (*names)[2][40]; /* per pair: request and reply topic */
    struct mqtt_bytes (*topics)[2];
    /* Per connection, written only on its thread: messages received.
     * Responders are 0..P-1, requesters P..2P-1, wildcard subscribers
     * after them. */
    uint64_t *count;
    uint64_t *sent_ns;  /* per pair: when the outstanding request was queued */
    struct hist *hists; /* per thread: round trips in nanoseconds */
    unsigned nhists;
    struct persec *sec; /* the run's per-second series: round trips by second too */
};

enum { PING_REQUEST, PING_REPLY };

static bool ping_topic_is(const struct mqtt_publish *p, struct mqtt_bytes t)
{
    return p->topic.len == t.len && !memcmp(p->topic.ptr, t.ptr, t.len);
}

static void ping_send(struct ping *g, struct mc_conn *c, unsigned pair, uint64_t seq)
{
    uint8_t *payload =
        mc_publish(c, g->topics[pair][PING_REQUEST], g->payload, g->payload_len, g->qos);
    memcpy(payload, &seq, PING_SEQ_LEN);
    g->sent_ns[pair] = clock_now_ns();
}

static void ping_start(struct mc_conn *c, void *user)
{
    struct ping *g = user;
    unsigned i = mc_index(c);
    if (i >= g->pairs && i < 2 * g->pairs)
        ping_send(g, c, i - g->pairs, 0);
}

static void ping_unexpected(struct mc_conn *c, const char *who, unsigned n,
                            const struct mqtt_publish *p)
{
    mc_fail(c, MC_FAIL_CHECK, "%s %u received an unexpected message on %.*s", who, n,
            (int)p->topic.len, (const char *)p->topic.ptr);
}

static void ping_responder(struct ping *g, struct mc_conn *c, unsigned pair,
                           const struct mqtt_publish *p)
{
    if (!ping_topic_is(p, g->topics[pair][PING_REQUEST])) {
        ping_unexpected(c, "responder", pair, p);
        return;
    }
    g->count[pair]++;
    mc_publish(c, g->topics[pair][PING_REPLY], p->payload.ptr, p->payload.len, g->qos);
}

static void ping_requester(struct ping *g, struct mc_conn *c, unsigned pair,
                           const struct mqtt_publish *p)
{
    uint64_t now = clock_now_ns();
    uint64_t *n = &g->count[g->pairs + pair], seq;
    if (!ping_topic_is(p, g->topics[pair][PING_REPLY]) || p->payload.len != g->payload_len) {
        ping_unexpected(c, "requester", pair, p);
        return;
    }
    memcpy(&seq, p->payload.ptr, PING_SEQ_LEN);
    if (seq != *n) {
        mc_fail(c, MC_FAIL_CHECK, "requester %u expected reply %llu, received reply %llu", pair,
                (unsigned long long)*n, (unsigned long long)seq);
        return;
    }
    hist_record(&g->hists[mc_thread(c)], now - g->sent_ns[pair]);
    persec_record(g->sec, now - g->sent_ns[pair]);
    if (++*n == g->messages)
        mc_complete(c);
    else
        ping_send(g, c, pair, *n);
}

static void ping_wildcard(struct ping *g, struct mc_conn *c, unsigned w,
                          const struct mqtt_publish *p)
{
    if (!ping_topic_is(p, g->topics[0][PING_REQUEST]) &&
        !ping_topic_is(p, g->topics[0][PING_REPLY])) {
        ping_unexpected(c, "wildcard subscriber", w, p);
        return;
    }
    uint64_t n = ++g->count[2 * g->pairs + w];
    if (n == 2 * g->messages)
        mc_complete(c);
    else if (n == 2 * g->messages + 1)
        mc_fail(c, MC_FAIL_CHECK,
                "wildcard subscriber %u received more than the %llu messages of pair 0", w,
                (unsigned long long)(2 * g->messages));
}

static void ping_message(struct mc_conn *c, const struct mqtt_publish *p, void *user)
{
    struct ping *g = user;
    unsigned i = mc_index(c);
    if (i < g->pairs)
        ping_responder(g, c, i, p);
    else if (i < 2 * g->pairs)
        ping_requester(g, c, i - g->pairs, p);
    else
        ping_wildcard(g, c, i - 2 * g->pairs, p);
}

static const struct mc_ops ping_ops = {
    .start = ping_start,
    .message = ping_message,
};

/* After a timeout in the measured phase: which pairs and wildcard
 * subscribers fell short. */
static void ping_missing(const struct bench_opts *o, const struct ping *g, struct result_row *row)
{
    unsigned pairs_behind = 0, wsubs_behind = 0;
    uint64_t trips = 0, wmissing = 0;
    for (unsigned i = 0; i < g->pairs; i++) {
        uint64_t done = g->count[g->pairs + i];
        if (done < g->messages) {
            pairs_behind++;
            trips += g->messages - done;
        }
    }
    for (unsigned i = 0; i < g->wsubs; i++) {
        uint64_t got = g->count[2 * g->pairs + i];
        if (got < 2 * g->messages) {
            wsubs_behind++;
            wmissing += 2 * g->messages - got;
        }
    }
    uint64_t expected = 2 * g->messages * (g->pairs + g->wsubs);
    row->lost = (double)expected - row->received;
    snprintf(row->error, sizeof row->error,
             "messages missing after no progress for %u s: %u of %u pairs are missing replies "
             "(%llu of %llu round trips not completed), %u of %u wildcard subscribers are "
             "missing messages (%llu not delivered)",
             o->timeout_s, pairs_behind, g->pairs, (unsigned long long)trips,
             (unsigned long long)(g->messages * g->pairs), wsubs_behind, g->wsubs,
             (unsigned long long)wmissing);
}

/* Several targets (docs/bench.md): pair j's responder on target j, its
 * requester on j + 1 (--spread cross: every request and reply crosses
 * brokers) or on j too (local); wildcard subscriber w on target w (cross)
 * or on the watched pair's (local). Indices in the whole run, so that
 * shards spread alike. */
static void ping_place(const struct ping *g, struct mc_run *run)
{
    const struct mqtt_bench_opts *m = &g->opts->mqtt;
    unsigned cross = m->spread == MQTT_SPREAD_CROSS;
    for (unsigned i = 0; i < g->pairs; i++) {
        mqtt_bench_place(m, run, i, g->first + i);
        mqtt_bench_place(m, run, g->pairs + i, g->first + i + cross);
    }
    for (unsigned w = 0; w < g->wsubs; w++)
        mqtt_bench_place(m, run, 2 * g->pairs + w, cross ? g->wfirst + w : g->first);
}

static int ping_run(const struct bench_opts *o, void *arg, unsigned rep, struct result_row *row)
{
    struct ping *g = arg;
    unsigned conns = 2 * g->pairs + g->wsubs;
    memset(g->count, 0, conns * sizeof *g->count);
    for (unsigned i = 0; i < g->nhists; i++)
        hist_reset(&g->hists[i]);
    char prefix[32];
    struct mc_config cfg =
        mqtt_bench_mc_config(o, &g->opts->mqtt, "pg", rep, conns, g->pairs + g->wsubs, prefix);
    cfg.progress_total = 2 * g->messages * (g->pairs + g->wsubs);
    struct mc_run *run = mc_run_new(&cfg, &ping_ops, g);
    for (unsigned i = 0; i < g->pairs; i++) {
        mc_set_filter(run, i, g->names[i][PING_REQUEST], g->qos);
        mc_set_filter(run, g->pairs + i, g->names[i][PING_REPLY], g->qos);
    }
    char watch[40];
    snprintf(watch, sizeof watch, "pingtest/%u/#", g->first);
    for (unsigned i = 0; i < g->wsubs; i++)
        mc_set_filter(run, 2 * g->pairs + i, watch, g->qos);
    ping_place(g, run);
    struct mc_stats st;
    struct persec sec;
    g->sec = &sec;
    int rc = mqtt_bench_exec_sec(o, run, conns, &sec, true, row, &st);
    g->sec = NULL;
    mc_run_free(run);

    struct hist *all = &g->hists[0];
    for (unsigned i = 1; i < g->nhists; i++)
        hist_merge(all, &g->hists[i]);
    result_set_latency(row, all);
    if (rc < 0) {
        ping_missing(o, g, row);
        return BENCH_EXIT_MISSED;
    }
    if (rc != BENCH_EXIT_OK)
        return rc;
    uint64_t pair_deliveries = 0;
    for (unsigned i = 0; i < 2 * g->pairs; i++)
        pair_deliveries += g->count[i];
    row->duration_s = (double)(st.t_end_ns - st.t_ready_ns) / 1e9;
    row->throughput = (double)pair_deliveries / row->duration_s;
    return BENCH_EXIT_OK;
}

/* The command's options: its own, then what it shares. */
struct ping_cmd {
    struct bench_opts b;
    struct mqtt_ping_opts p;
};

static const struct opt ping_options[] = {
    {"pairs", 0, OPT_UINT, "P", "request/reply pairs", "100", OPT_FIELD(struct ping_cmd, p.pairs),
     .min = 1, .max = 500000},
    {"wsubs", 0, OPT_UINT, "W", "wildcard subscribers on pingtest/0/#", "20",
     OPT_FIELD(struct ping_cmd, p.wsubs), .min = 0, .max = 500000},
    {"messages", 0, OPT_UINT, "M",
     "requests per pair; --payload-size must be at least 8, as requests carry their sequence "
     "number", "1000", OPT_FIELD(struct ping_cmd, p.mqtt.messages), .min = 1, .max = UINT32_MAX},
    {.kind = OPT_END},
};

static const struct opt_table ping_tables[] = {
    {ping_options, 0},
    {mqtt_bench_options, offsetof(struct ping_cmd, p.mqtt)},
    {mqtt_bench_client_options, offsetof(struct ping_cmd, b)},
    {bench_options, offsetof(struct ping_cmd, b)},
    {NULL, 0},
};

static const struct opt_cmd ping_command = {
    .head = ping_head, .tables = ping_tables, .tail = MQTT_BENCH_HELP_TAIL};

int mqtt_ping_main(int argc, char **argv, const struct result_context *ctx)
{
    struct ping_cmd c = {.p = {.pairs = 100, .wsubs = 20}};
    struct bench_opts *o = &c.b;
    struct mqtt_ping_opts *p = &c.p;
    mqtt_bench_init(o, &p->mqtt, "mqtt-ping");
    int rc = bench_parse(o, &ping_command, argc, argv, &c);
    if (rc >= 0)
        return rc;
    if (p->mqtt.payload_size < PING_SEQ_LEN)
        return bench_usage_error(o, "--payload-size must be at least %zu (the sequence number)",
                                 PING_SEQ_LEN);
    if ((rc = bench_share_check(o, "--pairs", p->pairs)))
        return rc;
    rc = mqtt_bench_finish_options(o, &p->mqtt, &ping_command, argc, argv, 2 * p->pairs + p->wsubs);
    if (rc)
        return rc;
    struct result_set rows = {0};
    rc = mqtt_ping_exec(o, p, ctx, &rows);
    return bench_finish(o, ctx, &rows, rc);
}

int mqtt_ping_exec(const struct bench_opts *o, const struct mqtt_ping_opts *p,
                   const struct result_context *ctx, struct result_set *out)
{
    /* A shard runs its part of the pairs, named by their index in the
     * whole run, and of the wildcard subscribers, which watch its first
     * pair as the whole run's watch pair 0. */
    uint64_t first, wfirst;
    unsigned pairs = (unsigned)bench_share(o, p->pairs, &first);
    unsigned wsubs = (unsigned)bench_share(o, p->wsubs, &wfirst);
    unsigned conns = 2 * pairs + wsubs;
    struct ping g = {
        .opts = p,
        .first = (unsigned)first,
        .wfirst = (unsigned)wfirst,
        .pairs = pairs,
        .wsubs = wsubs,
        .messages = p->mqtt.messages,
        .qos = (uint8_t)p->mqtt.qos,
        .payload = mqtt_bench_payload(PING_PAYLOAD, p->mqtt.payload_size),
        .payload_len = p->mqtt.payload_size,
        .nhists = o->threads,
    };
    g.names = mem_alloc(g.pairs * sizeof *g.names);
    g.topics = mem_alloc(g.pairs * sizeof *g.topics);
    g.count = mem_calloc(conns, sizeof *g.count);
    g.sent_ns = mem_calloc(g.pairs, sizeof *g.sent_ns);
    g.hists = mem_calloc(g.nhists, sizeof *g.hists);
    for (unsigned i = 0; i < g.pairs; i++) {
        static const char *const kinds[2] = {"request", "reply"};
        for (int k = 0; k < 2; k++) {
            int n = snprintf(g.names[i][k], sizeof g.names[i][k], "pingtest/%u/%s", g.first + i,
                             kinds[k]);
            g.topics[i][k] = (struct mqtt_bytes){(const uint8_t *)g.names[i][k], (size_t)n};
        }
    }

    struct result_row tmpl = {
        .experiment = "mqtt-ping",
        .throughput_def = "requests delivered to responders plus replies delivered to "
                          "requesters (2 x messages x pairs) per second, from all "
                          "subscriptions established to the last message",
        .op_def = "message delivered to any client (pairs and wildcard subscribers)",
    };
    char point[32];
    snprintf(point, sizeof point, "%up%uw", p->pairs, p->wsubs);
    mqtt_bench_row_name(&tmpl, o, &p->mqtt, "", point);
    result_param(&tmpl, "pairs", p->pairs);
    result_param(&tmpl, "wsubs", p->wsubs);
    result_param(&tmpl, "conns", 2 * p->pairs + p->wsubs);
    mqtt_bench_params(&tmpl, o, &p->mqtt);

    int rc = bench_repeat(o, ctx, &tmpl, ping_run, &g, out);
    mem_free(g.hists);
    mem_free(g.sent_ns);
    mem_free(g.count);
    mem_free(g.topics);
    mem_free(g.names);
    mem_free(g.payload);
    return rc;
}
