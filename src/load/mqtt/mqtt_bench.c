/* mqtt_bench.c - what the MQTT experiments share (see mqtt_bench.h). */
#include "load/mqtt/mqtt_bench.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/mem.h"
#include "load/persec.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"

#define MQTT_BENCH_DEFAULT_PORT 1883

/* ---- options ------------------------------------------------------------- */

void mqtt_bench_init(struct bench_opts *o, struct mqtt_bench_opts *m, const char *experiment)
{
    bench_opts_init(o, experiment);
    o->port = MQTT_BENCH_DEFAULT_PORT;
    *m = (struct mqtt_bench_opts){.messages = 1000, .payload_size = 16, .version = 4};
    /* The pid tells processes that run at once apart, the clock those that
     * get the same pid at different times. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    uint64_t mix = ((uint64_t)getpid() << 40 ^ us) * UINT64_C(0x9E3779B97F4A7C15);
    m->id_token = (uint32_t)(mix >> 32);
}

static const struct opt_choice mqtt_versions[] = {
    {"3.1", "31", MQTT31_PROTOCOL_LEVEL},
    {"3.1.1", "311", MQTT311_PROTOCOL_LEVEL},
    {"5", NULL, MQTT5_PROTOCOL_LEVEL},
    {NULL, NULL, 0},
};

static const struct opt_choice mqtt_spreads[] = {
    {"cross", NULL, MQTT_SPREAD_CROSS},
    {"local", NULL, MQTT_SPREAD_LOCAL},
    {NULL, NULL, 0},
};

const struct opt mqtt_bench_options[] = {
    {"qos", 0, OPT_UINT, "0|1|2", "QoS of every publish and subscription", "0",
     OPT_FIELD(struct mqtt_bench_opts, qos), .min = 0, .max = 2},
    {"payload-size", 0, OPT_UINT, "BYTES", "message payload size", "16",
     OPT_FIELD(struct mqtt_bench_opts, payload_size), .min = 0, .max = 16 * 1024 * 1024},
    {"mqtt-version", 0, OPT_ENUM, "V",
     "3.1 (also 31), 3.1.1 (also 311) or 5: the protocol every client speaks", "3.1.1",
     OPT_FIELD(struct mqtt_bench_opts, version), .choices = mqtt_versions},
    {"spread", 0, OPT_ENUM, "cross|local",
     "with several --target: cross puts each publisher on the target after its subscriber's "
     "(every message crosses brokers), local puts both on one", "cross",
     OPT_FIELD(struct mqtt_bench_opts, spread), .choices = mqtt_spreads},
    {.kind = OPT_END},
};

const struct opt mqtt_bench_client_options[] = {
    {"target", 0, OPT_STRING, "HOST:PORT[,...]",
     "broker to measure; several (comma-separated, or --target again) get the connections "
     "round-robin (see --spread)", "127.0.0.1:1883",
     OPT_FIELD(struct bench_opts, target_arg)},
    {"threads", 0, OPT_UINT, "T", "client threads, one event loop each", "1",
     OPT_FIELD(struct bench_opts, threads), .min = 1, .max = 256},
    {"timeout", 0, OPT_UINT, "SECS", "fail when nothing arrives for SECS", "10",
     OPT_FIELD(struct bench_opts, timeout_s), .min = 1, .max = 3600},
    {.kind = OPT_END},
};

/* ---- several targets ------------------------------------------------------- */

/* Every --target's value, comma-separated ones split, in order. */
struct mqtt_bench_targets {
    char buf[MQTT_BENCH_MAX_TARGETS * 80];
    char *item[MQTT_BENCH_MAX_TARGETS + 1];
    size_t used;
    unsigned n;
    bool overflow;
};

static int mqtt_bench_collect(const char *value, void *ctx)
{
    struct mqtt_bench_targets *t = ctx;
    size_t len = strlen(value);
    if (len >= sizeof t->buf - t->used) {
        t->overflow = true;
        return 1;
    }
    char *copy = memcpy(t->buf + t->used, value, len + 1);
    t->used += len + 1;
    for (char *p = copy;; p++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (t->n == MQTT_BENCH_MAX_TARGETS) {
            t->overflow = true;
            return 1;
        }
        t->item[t->n++] = p;
        if (!comma)
            return 0;
        p = comma;
    }
}

int mqtt_bench_finish_options(struct bench_opts *o, struct mqtt_bench_opts *m,
                              const struct opt_cmd *cmd, int argc, char **argv, unsigned conns)
{
    struct mqtt_bench_targets t = {.n = 0};
    opt_each(cmd, argc, argv, "target", mqtt_bench_collect, &t);
    if (t.overflow)
        return bench_usage_error(o, "--target: at most %d targets", MQTT_BENCH_MAX_TARGETS);
    if (t.n <= 1)
        return bench_finish_options(o, argc, argv, conns);
    o->target_arg = t.item[0];
    int rc = bench_finish_options(o, argc, argv, conns);
    if (rc)
        return rc;
    bool named = o->label || o->nserver_pids; /* else o->target lists them */
    size_t tn = 0;
    for (unsigned i = 0; i < t.n; i++) {
        struct mqtt_bench_target *d = &m->targets[i];
        d->port = o->port; /* the first's, or the default, when one names none */
        if ((rc = bench_split_target(o, t.item[i], d->host, &d->port)))
            return rc;
        if (!named) {
            int w = snprintf(o->target + tn, sizeof o->target - tn, "%s%s%s%s:%d", i ? "," : "",
                             strchr(d->host, ':') ? "[" : "", d->host,
                             strchr(d->host, ':') ? "]" : "", d->port);
            tn = w < 0 || (size_t)w >= sizeof o->target - tn ? sizeof o->target : tn + (size_t)w;
        }
        if ((rc = bench_resolve(o, d->host)))
            return rc;
    }
    if (!named && tn >= sizeof o->target)
        snprintf(o->target, sizeof o->target, "%s:%d+%u", m->targets[0].host, m->targets[0].port,
                 t.n - 1); /* too long a list: the first and how many more */
    m->ntargets = t.n;
    return 0;
}

void mqtt_bench_place(const struct mqtt_bench_opts *m, struct mc_run *run, unsigned i,
                      unsigned slot)
{
    if (m->ntargets > 1) {
        const struct mqtt_bench_target *t = &m->targets[slot % m->ntargets];
        mc_set_target(run, i, t->host, t->port);
    }
}

/* ---- running ------------------------------------------------------------- */

/* What the run's watchdog ticks sample: the server (probe, NULL: none)
 * and, for a single-phase run, the messages received per second. */
struct mqtt_bench_tick {
    struct probe *probe;
    struct persec *sec;
    struct mc_run *run;
};

static void mqtt_bench_tick(void *arg)
{
    struct mqtt_bench_tick *t = arg;
    if (t->probe)
        probe_sample(t->probe);
    if (t->sec)
        persec_tick(t->sec, clock_now_ns(), mc_run_received(t->run));
}

static int mqtt_bench_run(const struct bench_opts *o, struct mc_run *run, unsigned conns,
                          struct mqtt_bench_tick *tick, struct result_row *row, struct mc_stats *st)
{
    enum mc_status status = mc_run_exec(run, o->timeout_s, mqtt_bench_tick, tick);
    mc_run_stats(run, st);
    row->sent += (double)st->published;
    row->received += (double)st->received;
    row->err_connect += st->fail_connect;
    row->err_protocol += st->fail_protocol;
    row->err_timeout += status == MC_TIMEOUT;
    switch (status) {
    case MC_DONE:
        return BENCH_EXIT_OK;
    case MC_FAILED:
        snprintf(row->error, sizeof row->error, "%s", st->error);
        return st->fail_kind == MC_FAIL_CHECK ? BENCH_EXIT_MISSED : BENCH_EXIT_RUNTIME;
    case MC_TIMEOUT:
        break;
    }
    if (st->t_ready_ns)
        return -1;
    snprintf(row->error, sizeof row->error,
             "no progress for %u s while connecting and subscribing: %u of %u connections ready",
             o->timeout_s, st->ready, conns);
    return BENCH_EXIT_RUNTIME;
}

int mqtt_bench_exec(const struct bench_opts *o, struct mc_run *run, unsigned conns,
                    struct result_row *row, struct mc_stats *st)
{
    struct persec sec;
    return mqtt_bench_exec_sec(o, run, conns, &sec, false, row, st);
}

int mqtt_bench_exec_sec(const struct bench_opts *o, struct mc_run *run, unsigned conns,
                        struct persec *sec, bool with_latency, struct result_row *row,
                        struct mc_stats *st)
{
    struct probe probe;
    struct mqtt_bench_tick tick = {&probe, sec, run};
    probe_start(&probe, o->server_pids, o->nserver_pids);
    persec_start(sec, clock_now_ns(), 0, with_latency);
    int rc = mqtt_bench_run(o, run, conns, &tick, row, st);
    persec_finish(sec, clock_now_ns(), st->received, row);
    probe_finish(&probe, (double)st->received, row);
    if (st->t_ready_ns)
        row->setup_s = (double)(st->t_ready_ns - st->t_start_ns) / 1e9;
    return rc;
}

int mqtt_bench_phase(const struct bench_opts *o, struct mc_run *run, unsigned conns,
                     struct probe *probe, struct result_row *row, struct mc_stats *st)
{
    struct mqtt_bench_tick tick = {probe, NULL, run};
    return mqtt_bench_run(o, run, conns, &tick, row, st);
}

/* ---- rows and settings ----------------------------------------------------- */

void mqtt_bench_params(struct result_row *tmpl, const struct bench_opts *o,
                       const struct mqtt_bench_opts *m)
{
    snprintf(tmpl->target, sizeof tmpl->target, "%s", o->target);
    result_param(tmpl, "messages", (double)m->messages);
    result_param(tmpl, "qos", m->qos);
    result_param(tmpl, "payload_size", m->payload_size);
    result_param(tmpl, "threads", o->threads);
    result_param(tmpl, "protocol_level", m->version);
}

void mqtt_bench_row_name(struct result_row *tmpl, const struct bench_opts *o,
                         const struct mqtt_bench_opts *m, const char *session, const char *point)
{
    const char *version = m->version == MQTT5_PROTOCOL_LEVEL    ? "mqtt5"
                          : m->version == MQTT31_PROTOCOL_LEVEL ? "mqtt31"
                                                                : "";
    char variant[32];
    snprintf(variant, sizeof variant, "%s%s%s", version, version[0] && session[0] ? "-" : "",
             session);
    snprintf(tmpl->name, sizeof tmpl->name, "%s/%s/%s%s%s", o->experiment, o->target, variant,
             variant[0] ? "/" : "", point);
}

struct mc_config mqtt_bench_mc_config(const struct bench_opts *o, const struct mqtt_bench_opts *m,
                                      const char *tag, unsigned rep, unsigned conns, uint64_t work,
                                      char prefix[32])
{
    /* Shards' client ids differ by their index, not by chance alone. */
    if (o->shard_count)
        snprintf(prefix, 32, "%s%08x.s%u.%u", tag, (unsigned)m->id_token, o->shard_index, rep);
    else
        snprintf(prefix, 32, "%s%08x.%u", tag, (unsigned)m->id_token, rep);
    return (struct mc_config){
        .host = o->host,
        .port = o->port,
        .conns = conns,
        .threads = o->threads,
        .client_id_prefix = prefix,
        .max_packet = m->payload_size + 64 * 1024,
        .work = work,
        .version = m->version,
        .trace = o->trace,
        .progress = o->progress,
    };
}

uint8_t *mqtt_bench_payload(const char *text, size_t len)
{
    uint8_t *p = mem_alloc(len);
    size_t tlen = strlen(text);
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)text[i % tlen];
    return p;
}
