/* mqtt_conns.c - `shootout bench mqtt-conns`: idle connections and connect
 * storms (see mqtt_conns.h) on conn_engine.h's engine, with the broker's
 * RSS and CPU read around them. */
#include "load/mqtt/mqtt_conns.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/json.h"
#include "core/mem.h"
#include "load/bench.h"
#include "load/mqtt/conn_engine.h"
#include "load/mqtt/mqtt_bench.h"
#include "load/probe.h"
#include "report/hist.h"

#define CONNS_TICK_NS 100000000ull
/* Descriptors a storm whose clients leave holds at once, at most: those
 * between connect() and their DISCONNECT, for the fd-limit check. */
#define CONNS_STORM_INFLIGHT 4096

static const char conns_head[] =
    "usage: shootout bench mqtt-conns (--idle N | --storm R) [options]\n"
    "\n"
    "What a broker pays for connections rather than messages, with MQTT 3.1.1\n"
    "clients spread over --sources loopback source addresses (127.0.0.1 ..\n"
    "127.0.0.S; one address has only the ephemeral port range, about 28,000\n"
    "ports, towards one broker port) and over --threads epoll threads.\n"
    "\n"
    "--idle N: opens N connections (CONNECT, CONNACK, then a PINGREQ every\n"
    "--keepalive / 2 seconds), holds them --hold seconds and reports the\n"
    "broker's RSS before and after (--server-pid) as bytes per idle connection,\n"
    "the connect rate and the failures.\n"
    "\n"
    "--storm R: --established clients connect and run PINGREQ round trips\n"
    "(--ping-gap apart); after --before seconds R new clients a second connect\n"
    "for --duration seconds, each CONNECT, CONNACK, optionally SUBSCRIBE, then\n"
    "DISCONNECT (or --stay). Reports refused and failed connects, connect\n"
    "latency percentiles, and the round trips before and during the storm.\n"
    "\n"
    "This process raises its open-files limit to the hard limit; the broker\n"
    "needs its own raised too (ulimit -n in the shell that starts it).\n"
    "\n";

static const char conns_tail[] =
    "\n"
    "Exit codes: 0 ok, 1 a connection failed (refused, closed, timed out, or no\n"
    "port or descriptor for it), or an idle connection or established client was\n"
    "lost, 2 usage error.\n";

struct conns_opts {
    unsigned idle, hold_s;
    unsigned storm, duration_s, established, before_s;
    bool stay, subscribe;
    unsigned sources, keepalive_s, ping_gap_us;
};

/* One run's figures, for its JSON and its lines. */
struct conns_figs {
    bool storm;
    struct ce_counts idle, established, storm_c;
    double connect_s, rate;
    double rss_before_kb, rss_connected_kb, rss_after_kb, rss_per_conn_bytes;
    double lat_us[4];              /* connect latency p50, p99, p99.9, max */
    double rtt_us[2][3];           /* before / during: p50, p99, max */
    uint64_t rtt_count[2];
    unsigned sources;
    bool rss; /* --server-pid: the RSS figures were read */
};

/* The row's own[] figures, which the table shows and aggregates. */
enum { OWN_CONNECTED, OWN_RSS_PER_CONN, OWN_RTT_BEFORE_P99, OWN_RTT_DURING_P99, OWN_RTT_DURING_MAX };

struct conns {
    const struct conns_opts *c;
    const struct mqtt_bench_opts *m;
    struct conns_figs *figs; /* one per run */
    struct result_col cols[RESULT_TABLE_COLS]; /* the table's, for this mode */
    unsigned ncols;
};

static uint64_t conns_failed(const struct ce_counts *c)
{
    uint64_t n = 0;
    for (int k = 0; k < CE_NFAIL; k++)
        n += c->failed[k];
    return n;
}

/* The broker's RSS now, kB; 0 without --server-pid. */
/* The server's RSS, summed over its processes (0 if one cannot be read). */
static double conns_rss_kb(const struct bench_opts *o)
{
    double kb = 0;
    for (unsigned i = 0; i < o->nserver_pids; i++) {
        struct probe_stat st;
        if (probe_stat_read("/proc", o->server_pids[i], &st) < 0)
            return 0;
        kb += (double)st.rss_pages * (double)sysconf(_SC_PAGESIZE) / 1024.0;
    }
    return kb;
}

static void conns_sleep_tick(void)
{
    struct timespec ts = {0, (long)CONNS_TICK_NS};
    nanosleep(&ts, NULL);
}

/* ---- JSON and lines ------------------------------------------------------ */

static void conns_json_counts(struct json *j, const char *key, const struct ce_counts *c)
{
    json_key(j, key);
    json_object_begin(j);
    json_kv(j, "started", (double)c->started);
    json_kv(j, "connected", (double)c->connected);
    json_kv(j, "refused", (double)c->failed[CE_REFUSED]);
    json_kv(j, "closed", (double)c->failed[CE_CLOSED]);
    json_kv(j, "timeout", (double)c->failed[CE_TIMEOUT]);
    json_kv(j, "local", (double)c->failed[CE_LOCAL]);
    json_kv(j, "open_at_end", (double)c->open);
    json_kv(j, "lost", (double)c->lost);
    json_object_end(j);
}

static void conns_json_trio(struct json *j, const char *key, const double v[3], uint64_t n)
{
    json_key(j, key);
    json_object_begin(j);
    json_kv(j, "count", (double)n);
    json_kv(j, "p50", v[0]);
    json_kv(j, "p99", v[1]);
    json_kv(j, "max", v[2]);
    json_object_end(j);
}

static void conns_json(struct json *j, const void *arg)
{
    const struct conns_figs *f = arg;
    json_key(j, "conns");
    json_object_begin(j);
    json_kstr(j, "mode", f->storm ? "storm" : "idle");
    json_kv(j, "sources", f->sources);
    json_kv(j, "connect_s", f->connect_s);
    json_kv(j, "connect_rate", f->rate);
    if (f->rss) {
        json_kv(j, "rss_before_kb", f->rss_before_kb);
        if (!f->storm)
            json_kv(j, "rss_connected_kb", f->rss_connected_kb);
        json_kv(j, "rss_after_kb", f->rss_after_kb);
    }
    if (f->storm) {
        conns_json_counts(j, "storm", &f->storm_c);
        conns_json_counts(j, "established", &f->established);
        json_key(j, "connect_latency_us");
        json_object_begin(j);
        json_kv(j, "p50", f->lat_us[0]);
        json_kv(j, "p99", f->lat_us[1]);
        json_kv(j, "p99_9", f->lat_us[2]);
        json_kv(j, "max", f->lat_us[3]);
        json_object_end(j);
        conns_json_trio(j, "rtt_before_us", f->rtt_us[0], f->rtt_count[0]);
        conns_json_trio(j, "rtt_during_us", f->rtt_us[1], f->rtt_count[1]);
    } else {
        conns_json_counts(j, "idle", &f->idle);
        if (f->rss)
            json_kv(j, "rss_per_conn_bytes", f->rss_per_conn_bytes);
    }
    json_object_end(j);
}

static void conns_print_counts(FILE *f, const char *what, const struct ce_counts *c)
{
    fprintf(f, "  %s: %llu of %llu connected, refused %llu, closed %llu, timed out %llu, "
               "local failures %llu, open at the end %llu\n",
            what, (unsigned long long)c->connected, (unsigned long long)c->started,
            (unsigned long long)c->failed[CE_REFUSED], (unsigned long long)c->failed[CE_CLOSED],
            (unsigned long long)c->failed[CE_TIMEOUT], (unsigned long long)c->failed[CE_LOCAL],
            (unsigned long long)c->open);
}

static void conns_print(FILE *f, const struct conns_figs *g, bool sampled)
{
    if (!g->storm) {
        conns_print_counts(f, "idle", &g->idle);
        fprintf(f, "  connect: %.2f s, %.0f conn/s from %u source address%s\n", g->connect_s,
                g->rate, g->sources, g->sources == 1 ? "" : "es");
        if (sampled)
            fprintf(f, "  broker RSS: %.0f kB before, %.0f kB connected, %.0f kB after the "
                       "hold: %.0f bytes per idle connection\n",
                    g->rss_before_kb, g->rss_connected_kb, g->rss_after_kb,
                    g->rss_per_conn_bytes);
        return;
    }
    conns_print_counts(f, "storm", &g->storm_c);
    conns_print_counts(f, "established", &g->established);
    fprintf(f, "  storm: %.0f conn/s over %.2f s; connect latency p50 %.0f us, p99 %.0f us, "
               "p99.9 %.0f us, max %.0f us\n",
            g->rate, g->connect_s, g->lat_us[0], g->lat_us[1], g->lat_us[2], g->lat_us[3]);
    static const char *const when[2] = {"before", "during"};
    for (int k = 0; k < 2; k++)
        fprintf(f, "  round trip %s the storm: %llu, p50 %.0f us, p99 %.0f us, max %.0f us\n",
                when[k], (unsigned long long)g->rtt_count[k], g->rtt_us[k][0], g->rtt_us[k][1],
                g->rtt_us[k][2]);
    if (sampled)
        fprintf(f, "  broker RSS: %.0f kB before, %.0f kB after\n", g->rss_before_kb,
                g->rss_after_kb);
}

/* The table's columns for the mode: what it measures and nothing of the
 * message experiments (received, lost); the broker's with --server-pid. */
static void conns_cols(struct conns *s, bool storm, bool server)
{
    const struct result_col
        common[] = {
            {"connected", RESULT_METRIC(own[OWN_CONNECTED]), 1, 0, NULL},
            {"failed", RESULT_METRIC(err_connect), 1, 0,
             "connections refused, closed, timed out or failed locally"},
            {"dropped", RESULT_METRIC(err_closed), 1, 0,
             storm ? "established clients lost" : "idle connections closed during the hold"},
            {storm ? "storm s" : "connect s", storm ? RESULT_METRIC(duration_s)
                                                    : RESULT_METRIC(setup_s), 1, 3, NULL},
            {"k %s/s", RESULT_METRIC(throughput), 1e-3, 2, NULL},
            {"p50 us", RESULT_METRIC(lat_p50), 1, 1, "connect latency, connect() to CONNACK"},
            {"p99 us", RESULT_METRIC(lat_p99), 1, 1, NULL},
            {"p99.9 us", RESULT_METRIC(lat_p99_9), 1, 1, NULL},
            {"max us", RESULT_METRIC(lat_max), 1, 1, NULL},
        },
        rtt[] = {
            {"rtt p99 before us", RESULT_METRIC(own[OWN_RTT_BEFORE_P99]), 1, 1,
             "the established clients' PINGREQ round trips before and during the storm: a "
             "stall shows as a jump"},
            {"rtt p99 during us", RESULT_METRIC(own[OWN_RTT_DURING_P99]), 1, 1, NULL},
            {"rtt max during us", RESULT_METRIC(own[OWN_RTT_DURING_MAX]), 1, 1, NULL},
        },
        client[] = {{"client us/%s", RESULT_METRIC(client_cpu_us_per_op), 1, 2, NULL}},
        broker[] = {
            {"server us/%s", RESULT_METRIC(server_cpu_us_per_op), 1, 2, NULL},
            {"server MB", RESULT_METRIC(server_rss_max_kb), 1.0 / 1024, 1, NULL},
        },
        per_conn[] = {{"B/%s", RESULT_METRIC(own[OWN_RSS_PER_CONN]), 1, 0,
                       "the broker's RSS per idle connection: (after the hold - before) / "
                       "connected"}};
    struct {
        const struct result_col *c;
        unsigned n;
        bool shown;
    } parts[] = {
        {common, sizeof common / sizeof common[0], true},
        {rtt, sizeof rtt / sizeof rtt[0], storm},
        {client, 1, true},
        {broker, sizeof broker / sizeof broker[0], server},
        {per_conn, 1, server && !storm},
    };
    s->ncols = 0;
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++)
        for (unsigned i = 0; parts[p].shown && i < parts[p].n; i++)
            s->cols[s->ncols++] = parts[p].c[i];
}

/* ---- runs ----------------------------------------------------------------- */

/* Samples and draws the progress line every tick until done() of the
 * group has its total, or nothing moves for the timeout. false on a
 * timeout. */
static bool conns_wait(const struct bench_opts *o, struct ce_run *run, struct probe *probe,
                       int group, uint64_t total, uint64_t not_before_ns)
{
    uint64_t last = ~0ull, moved = clock_now_ns();
    for (;;) {
        struct ce_counts c[3];
        ce_progress(run, &c[0], &c[1], &c[2]);
        /* Every connection once: connected, or failed before it was. */
        uint64_t done = c[group].connected + conns_failed(&c[group]) - c[group].lost;
        uint64_t now = clock_now_ns();
        progress_update(o->progress, done, total, false);
        probe_sample(probe);
        if (done >= total && now >= not_before_ns)
            return true;
        if (done != last) {
            last = done;
            moved = now;
        } else if (now - moved > (uint64_t)o->timeout_s * 1000000000ull && now >= not_before_ns) {
            return false;
        }
        conns_sleep_tick();
    }
}

static void conns_hold(const struct bench_opts *o, struct probe *probe, double seconds)
{
    uint64_t end = clock_now_ns() + (uint64_t)(seconds * 1e9);
    while (clock_now_ns() < end) {
        probe_sample(probe);
        conns_sleep_tick();
    }
}

/* The percentiles ps[0..n) of h, then its exact max, in microseconds:
 * out has n + 1 places. */
static void conns_hist_us(const struct hist *h, const double *ps, unsigned n, double *out)
{
    for (unsigned i = 0; i < n; i++)
        out[i] = (double)hist_percentile(h, ps[i]) / 1e3;
    out[n] = (double)h->max / 1e3;
}

static int conns_run(const struct bench_opts *o, void *arg, unsigned rep, struct result_row *row)
{
    struct conns *s = arg;
    const struct conns_opts *c = s->c;
    struct conns_figs *g = &s->figs[rep];
    memset(g, 0, sizeof *g);
    g->storm = c->storm > 0;
    g->rss = o->nserver_pids != 0;
    uint64_t storm_total = (uint64_t)c->storm * c->duration_s;
    uint64_t conns = g->storm ? c->established + storm_total : c->idle;
    g->sources = c->sources ? c->sources : ce_sources_for(conns);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "cn%08x.%u", (unsigned)s->m->id_token, rep);
    struct ce_config cfg = {
        .host = o->host,
        .port = o->port,
        .threads = o->threads,
        .sources = g->sources,
        .idle = g->storm ? 0 : c->idle,
        .established = g->storm ? c->established : 0,
        .storm = g->storm ? storm_total : 0,
        .storm_rate = c->storm,
        .storm_stay = c->stay,
        .storm_subscribe = c->subscribe,
        .keepalive_s = (uint16_t)c->keepalive_s,
        .ping_gap_us = c->ping_gap_us,
        .timeout_s = o->timeout_s,
        .id_prefix = prefix,
    };
    struct probe probe;
    probe_start(&probe, o->server_pids, o->nserver_pids);
    g->rss_before_kb = conns_rss_kb(o);
    char err[200];
    struct ce_run *run = ce_start(&cfg, err, sizeof err);
    if (!run) {
        snprintf(row->error, sizeof row->error, "%s", err);
        return BENCH_EXIT_RUNTIME;
    }
    uint64_t t0 = clock_now_ns();
    bool ok;
    if (!g->storm) {
        ok = conns_wait(o, run, &probe, 0, c->idle, 0);
        g->connect_s = (double)(clock_now_ns() - t0) / 1e9;
        g->rss_connected_kb = conns_rss_kb(o);
        if (ok)
            conns_hold(o, &probe, c->hold_s);
    } else {
        ok = conns_wait(o, run, &probe, 1, c->established, 0);
        if (ok) {
            ce_set_phase(run, CE_BEFORE);
            conns_hold(o, &probe, c->before_s);
            /* The CPU figures are the storm's: from its start on. */
            probe_start(&probe, o->server_pids, o->nserver_pids);
            ce_set_phase(run, CE_STORM);
            ok = conns_wait(o, run, &probe, 2, storm_total,
                            clock_now_ns() + (uint64_t)c->duration_s * 1000000000ull);
        }
    }
    g->rss_after_kb = conns_rss_kb(o);
    struct ce_counts now[3];
    ce_progress(run, &now[0], &now[1], &now[2]);
    struct ce_result *r = mem_alloc(sizeof *r);
    ce_finish(run, r);
    /* What was still open before the threads closed everything. */
    r->idle.open = now[0].open;
    r->established.open = now[1].open;
    r->storm.open = now[2].open;
    g->idle = r->idle;
    g->established = r->established;
    g->storm_c = r->storm;

    const struct ce_counts *main_group = g->storm ? &r->storm : &r->idle;
    double connected = (double)main_group->connected;
    probe_finish(&probe, connected, row);
    row->setup_s = g->storm ? 0 : g->connect_s;
    row->err_connect = (double)conns_failed(main_group);
    row->err_closed = (double)(r->established.connected - r->established.open);
    row->err_timeout = (double)main_group->failed[CE_TIMEOUT];
    static const double lat_p[3] = {50, 99, 99.9};
    if (g->storm) {
        g->connect_s = r->t_storm_last_ns > r->t_storm_first_ns
                           ? (double)(r->t_storm_last_ns - r->t_storm_first_ns) / 1e9
                           : 0;
        conns_hist_us(&r->storm_ns, lat_p, 3, g->lat_us);
        static const double rtt_p[2] = {50, 99};
        for (int k = 0; k < 2; k++) {
            conns_hist_us(&r->rtt_ns[k], rtt_p, 2, g->rtt_us[k]);
            g->rtt_count[k] = r->rtt_ns[k].count;
        }
        row->own[OWN_RTT_BEFORE_P99] = g->rtt_us[0][1];
        row->own[OWN_RTT_DURING_P99] = g->rtt_us[1][1];
        row->own[OWN_RTT_DURING_MAX] = g->rtt_us[1][2];
        result_set_latency(row, &r->storm_ns);
    } else {
        result_set_latency(row, &r->connect_ns);
        if (connected > 0 && o->nserver_pids)
            g->rss_per_conn_bytes = (g->rss_after_kb - g->rss_before_kb) * 1024 / connected;
        row->own[OWN_RSS_PER_CONN] = g->rss_per_conn_bytes;
    }
    row->own[OWN_CONNECTED] = connected;
    g->rate = g->connect_s > 0 ? connected / g->connect_s : 0;
    row->duration_s = g->storm ? g->connect_s : c->hold_s;
    row->throughput = g->rate;
    row->extra_json = conns_json;
    row->extra_arg = g;
    FILE *tf = o->brief || (o->json_path && !strcmp(o->json_path, "-")) ? stderr : stdout;
    conns_print(tf, g, o->nserver_pids != 0);

    uint64_t want = g->storm ? storm_total : c->idle;
    /* An idle connection the broker dropped during the hold counts as a
     * failure too: it broke the keepalive contract. */
    if (!g->storm)
        row->err_closed = (double)(r->idle.connected - r->idle.open);
    if (main_group->connected < want || row->err_closed > 0 ||
        r->established.connected < (g->storm ? c->established : 0)) {
        int n = snprintf(row->error, sizeof row->error,
                         "%llu of %llu %s connections connected, %.0f %s lost",
                         (unsigned long long)main_group->connected, (unsigned long long)want,
                         g->storm ? "storm" : "idle", row->err_closed,
                         g->storm ? "established clients" : "idle connections");
        if (r->error[0] && n > 0 && (size_t)n < sizeof row->error)
            snprintf(row->error + n, sizeof row->error - (size_t)n, "; first failure: %s",
                     r->error);
        if (!ok && n > 0 && !r->error[0] && (size_t)n < sizeof row->error)
            snprintf(row->error + n, sizeof row->error - (size_t)n, "; no progress for %u s",
                     o->timeout_s);
        mem_free(r);
        return BENCH_EXIT_RUNTIME;
    }
    mem_free(r);
    return BENCH_EXIT_OK;
}

/* ---- the command ----------------------------------------------------------- */

struct conns_cmd {
    struct bench_opts b;
    struct conns_opts c;
};

static const struct opt conns_options[] = {
    {"idle", 0, OPT_UINT, "N", "idle mode: open N connections and hold them", NULL,
     OPT_FIELD(struct conns_cmd, c.idle), .min = 1, .max = 4000000},
    {"hold", 0, OPT_UINT, "SECS", "idle mode: how long to hold them before reading the RSS",
     "5", OPT_FIELD(struct conns_cmd, c.hold_s), .min = 0, .max = 3600},
    {"storm", 0, OPT_UINT, "R", "storm mode: R new connections per second", NULL,
     OPT_FIELD(struct conns_cmd, c.storm), .min = 1, .max = 1000000},
    {"duration", 0, OPT_UINT, "SECS", "storm mode: how long the storm lasts", "1",
     OPT_FIELD(struct conns_cmd, c.duration_s), .min = 1, .max = 600},
    {"established", 0, OPT_UINT, "K",
     "storm mode: clients connected before the storm, running PINGREQ round trips", "10",
     OPT_FIELD(struct conns_cmd, c.established), .min = 0, .max = 100000},
    {"before", 0, OPT_UINT, "SECS",
     "storm mode: round trips measured this long before the storm starts", "1",
     OPT_FIELD(struct conns_cmd, c.before_s), .min = 1, .max = 600},
    {"ping-gap", 0, OPT_UINT, "US",
     "storm mode: microseconds between an established client's round trips", "1000",
     OPT_FIELD(struct conns_cmd, c.ping_gap_us), .min = 0, .max = 10000000},
    {"stay", 0, OPT_FLAG, NULL, "storm mode: new clients stay connected (default: DISCONNECT)",
     NULL, OPT_FIELD(struct conns_cmd, c.stay)},
    {"subscribe", 0, OPT_FLAG, NULL,
     "storm mode: new clients SUBSCRIBE to a topic of their own after CONNACK", NULL,
     OPT_FIELD(struct conns_cmd, c.subscribe)},
    {"sources", 0, OPT_UINT, "S",
     "loopback source addresses 127.0.0.1 .. 127.0.0.S (for a 127/8 target); 0: one per "
     "16000 connections",
     "0", OPT_FIELD(struct conns_cmd, c.sources), .min = 0, .max = CE_MAX_SOURCES},
    {"keepalive", 0, OPT_UINT, "SECS", "the CONNECT's keepalive; a PINGREQ goes every SECS / 2",
     "60", OPT_FIELD(struct conns_cmd, c.keepalive_s), .min = 2, .max = 65535},
    {.kind = OPT_END},
};

static const struct opt_table conns_tables[] = {
    {conns_options, 0},
    {mqtt_bench_client_options, offsetof(struct conns_cmd, b)},
    {bench_options, offsetof(struct conns_cmd, b)},
    {NULL, 0},
};

static const struct opt_cmd conns_command = {
    .head = conns_head, .tables = conns_tables, .tail = conns_tail};

int mqtt_conns_main(int argc, char **argv, const struct result_context *ctx)
{
    struct conns_cmd cmd = {.c = {.hold_s = 5, .duration_s = 1, .established = 10,
                                  .before_s = 1, .keepalive_s = 60, .ping_gap_us = 1000}};
    struct bench_opts *o = &cmd.b;
    const struct conns_opts *c = &cmd.c;
    struct mqtt_bench_opts m;
    mqtt_bench_init(o, &m, "mqtt-conns");
    int rc = bench_parse(o, &conns_command, argc, argv, &cmd);
    if (rc >= 0)
        return rc;
    if (!c->idle == !c->storm)
        return bench_usage_error(o, "give one of --idle N or --storm R");
    if (o->shard_count)
        return bench_usage_error(o, "--shard is not supported: run several processes with "
                                    "their own --sources instead");
    if (o->trace_path)
        return bench_usage_error(o, "--trace is not supported (nothing but handshakes and "
                                    "pings goes over the wire)");
    uint64_t storm_total = (uint64_t)c->storm * c->duration_s;
    uint64_t fds = c->idle + (c->storm ? c->established +
                                             (c->stay ? storm_total : CONNS_STORM_INFLIGHT)
                                       : 0);
    if (fds > UINT32_MAX)
        return bench_usage_error(o, "%llu connections are too many", (unsigned long long)fds);
    rc = bench_finish_options(o, argc, argv, (unsigned)fds);
    if (rc)
        return rc;

    struct conns s = {.c = c, .m = &m, .figs = mem_calloc(o->runs, sizeof *s.figs)};
    conns_cols(&s, c->storm > 0, o->nserver_pids != 0);
    struct result_row tmpl = {
        .experiment = "mqtt-conns",
        .cols = s.cols,
        .ncols = s.ncols,
        .op_unit = "conn",
        .op_def = "connection made (CONNECT answered by CONNACK)",
        .throughput_def = c->idle ? "idle connections made per second, first connect() to "
                                    "the last CONNACK"
                                  : "storm connections made per second, the storm's start "
                                    "to its last CONNACK",
    };
    char point[48];
    if (c->idle)
        snprintf(point, sizeof point, "idle%u", c->idle);
    else
        snprintf(point, sizeof point, "storm%ux%us+%ue%s", c->storm, c->duration_s,
                 c->established, c->stay ? "-stay" : "");
    mqtt_bench_row_name(&tmpl, o, &m, "", point);
    snprintf(tmpl.target, sizeof tmpl.target, "%s", o->target);
    result_param(&tmpl, "threads", o->threads);
    if (c->idle) {
        result_param(&tmpl, "idle", c->idle);
        result_param(&tmpl, "hold_s", c->hold_s);
    } else {
        result_param(&tmpl, "storm_rate", c->storm);
        result_param(&tmpl, "duration_s", c->duration_s);
        result_param(&tmpl, "established", c->established);
        result_param(&tmpl, "stay", c->stay);
        result_param(&tmpl, "subscribe", c->subscribe);
    }
    result_param(&tmpl, "keepalive_s", c->keepalive_s);

    struct result_set rows = {0};
    rc = bench_repeat(o, ctx, &tmpl, conns_run, &s, &rows);
    rc = bench_finish(o, ctx, &rows, rc);
    mem_free(s.figs);
    return rc;
}
