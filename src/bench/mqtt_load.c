/* mqtt_load.c - the loadtest experiment on the client engine. */
#include "bench/mqtt_load.h"

#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/mqtt_client.h"
#include "core/mem.h"

static const char usage[] =
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
    "options:\n"
    "  --conns C             connections, an even number (default 100)\n"
    "  --messages M          messages per publisher (default 1000)\n" BENCH_HELP;

#define LOAD_PAYLOAD "loadtest payload"

struct load {
    unsigned subs; /* subscribers = publishers */
    uint64_t messages;
    uint8_t qos;
    uint8_t *payload;
    size_t payload_len;
    char (*topic_names)[24];   /* loadtest/<i> */
    struct mqtt_bytes *topics; /* the same, as byte strings */
    /* Per connection, written only on its thread: messages received by a
     * subscriber, published by a publisher. Subscribers come first. */
    uint64_t *count;
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

static const struct mc_ops load_ops = {
    .start = load_start,
    .message = load_message,
    .fill = load_fill,
};

/* After a timeout in the messaging phase: which subscribers fell short. */
static void load_missing(const struct bench_opts *o, const struct load *l, struct result_row *row)
{
    unsigned behind = 0, first = 0;
    uint64_t missing = 0;
    for (unsigned i = 0; i < l->subs; i++) {
        if (l->count[i] >= l->messages)
            continue;
        if (behind++ == 0)
            first = i;
        missing += l->messages - l->count[i];
    }
    row->lost = (double)missing;
    snprintf(row->error, sizeof row->error,
             "%u of %u subscribers are missing messages: %llu of %llu messages not delivered "
             "after no progress for %u s (subscriber %u got %llu of %llu)",
             behind, l->subs, (unsigned long long)missing,
             (unsigned long long)(l->messages * l->subs), o->timeout_s, first,
             (unsigned long long)l->count[first], (unsigned long long)l->messages);
}

static int load_run(const struct bench_opts *o, void *arg, unsigned rep, struct result_row *row)
{
    struct load *l = arg;
    unsigned conns = 2 * l->subs;
    memset(l->count, 0, conns * sizeof *l->count);
    char prefix[32];
    struct mc_config cfg = bench_mc_config(o, "ld", rep, conns, l->subs, prefix);
    struct mc_run *run = mc_run_new(&cfg, &load_ops, l);
    for (unsigned i = 0; i < l->subs; i++)
        mc_set_filter(run, i, l->topic_names[i], l->qos);
    struct mc_stats st;
    int rc = bench_mqtt_exec(o, run, conns, row, &st);
    mc_run_free(run);
    if (rc < 0) {
        load_missing(o, l, row);
        return BENCH_EXIT_MISSED;
    }
    if (rc != BENCH_EXIT_OK)
        return rc;
    row->duration_s = (double)(st.t_end_ns - st.t_start_ns) / 1e9;
    row->throughput = row->received / row->duration_s;
    row->throughput_messaging = row->received / ((double)(st.t_end_ns - st.t_ready_ns) / 1e9);
    return BENCH_EXIT_OK;
}

int mqtt_load_main(int argc, char **argv, const struct result_context *ctx)
{
    enum { OPT_CONNS = 1 };
    static const struct option opts[] = {
        {"conns", required_argument, NULL, OPT_CONNS},
        BENCH_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    struct bench_opts o;
    bench_opts_init(&o, "mqtt-load", usage);
    uint64_t conns = 100;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == OPT_CONNS) {
            if (bench_parse_uint(&o, "--conns", optarg, 2, 1000000, &conns) < 0)
                return BENCH_EXIT_USAGE;
            continue;
        }
        int rc = bench_parse_option(&o, c, optarg);
        if (rc >= 0)
            return rc;
    }
    if (conns % 2)
        return bench_usage_error(&o, "--conns must be even: half subscribe, half publish");
    int rc = bench_finish_options(&o, argc, argv, (unsigned)conns);
    if (rc)
        return rc;
    struct result_set rows = {0};
    rc = mqtt_load_exec(&o, (unsigned)conns, ctx, &rows);
    return bench_finish(&o, ctx, &rows, rc);
}

int mqtt_load_exec(const struct bench_opts *o, unsigned conns, const struct result_context *ctx,
                   struct result_set *out)
{
    struct load l = {
        .subs = conns / 2,
        .messages = o->messages,
        .qos = (uint8_t)o->qos,
        .payload = bench_payload(LOAD_PAYLOAD, o->payload_size),
        .payload_len = o->payload_size,
    };
    l.topic_names = mem_alloc(l.subs * sizeof *l.topic_names);
    l.topics = mem_alloc(l.subs * sizeof *l.topics);
    l.count = mem_calloc(conns, sizeof *l.count);
    for (unsigned i = 0; i < l.subs; i++) {
        int n = snprintf(l.topic_names[i], sizeof l.topic_names[i], "loadtest/%u", i);
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
    snprintf(tmpl.name, sizeof tmpl.name, "mqtt-load/%s/%uc", o->target, conns);
    result_param(&tmpl, "conns", conns);
    result_param(&tmpl, "subscribers", l.subs);
    result_param(&tmpl, "publishers", l.subs);
    bench_common_params(&tmpl, o);

    int rc = bench_repeat(o, ctx, &tmpl, load_run, &l, out);
    mem_free(l.count);
    mem_free(l.topics);
    mem_free(l.topic_names);
    mem_free(l.payload);
    return rc;
}
