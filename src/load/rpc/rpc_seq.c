/* rpc_seq.c - the gRPC-vs-REST article's experiment on one event loop:
 * connections, then calls handed out to "slots" (one call in flight each),
 * a warm-up phase and a timed phase, a watchdog. */
#include "load/rpc/rpc_seq.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "car/car_fake.h"
#include "core/clock.h"
#include "core/mem.h"
#include "core/tls.h"
#include "load/persec.h"
#include "load/probe.h"
#include "report/hist.h"

static const char seq_head[] =
    "usage: shootout bench rpc-seq [options]\n"
    "\n"
    "The gRPC-vs-REST article's test against the Car service: --requests calls,\n"
    "each carrying a freshly generated Car/Driver record, by default strictly one\n"
    "at a time over one keep-alive connection, as the article's blocking clients.\n"
    "REST is POST /v1/create with the JSON document, answered 201\n"
    "{\"status\":\"created\"}; gRPC is /com.stevenpg.rvg.MessageService/send with\n"
    "the protobuf Message. Any other answer fails the run.\n"
    "\n"
    "Reported per run: the total wall time of the calls (the article's figure:\n"
    "first call sent to last answer received), calls per second, the latency of\n"
    "each call (sent to answered: min, mean, stddev, max, percentiles), and the\n"
    "CPU time per call of this client and, with --server-pid, of the server.\n"
    "Connecting and the --warmup calls happen before the clock starts; making a\n"
    "record happens inside the wall time but outside the call's latency.\n"
    "\n";

static const char seq_tail[] =
    "\n"
    "Exit codes: 0 ok, 1 cannot connect, or a call failed (error status, broken\n"
    "protocol, connection closed), 2 usage error, 3 calls unanswered for --timeout.\n";

#define SEQ_TICK_MS 100

enum seq_phase { SEQ_CONNECT, SEQ_WARMUP, SEQ_TIMED, SEQ_DONE };

/* Why a run failed; one counter each in the result's errors. */
enum seq_fail { FAIL_CONNECT, FAIL_STATUS, FAIL_PROTOCOL, FAIL_CLOSED, FAIL_TIMEOUT };

/* One call in flight at a time: a REST connection, or a gRPC stream. */
struct seq_slot {
    unsigned conn;
    uint64_t call;    /* index of its call in flight, in the phase */
    uint64_t sent_ns; /* when that call was handed to the transport */
};

struct seq_run {
    const struct bench_opts *o;
    const struct rpc_seq_opts *s;
    struct ev_loop *loop;
    struct rpc_conn **conns;
    unsigned nconns, connected;
    struct seq_slot *slots;
    unsigned nslots;
    struct car_fake fake;
    struct car_fake_record rec;
    int phase;               /* enum seq_phase */
    uint64_t total;          /* calls of the phase */
    uint64_t issued, answered; /* in the phase */
    struct hist *lat;        /* timed calls, nanoseconds */
    struct persec sec;       /* the timed phase, second by second */
    uint64_t t_start_ns, t_ready_ns, t_timed_ns, t_end_ns;
    struct probe probe;
    bool probing;
    struct ev_timer tick;
    uint64_t events;      /* connections and answers so far, for the watchdog */
    uint64_t progress, progress_ms; /* events at the last tick that saw a change, and when */
    bool failed;
    enum seq_fail fail;
    char error[256];
};

__attribute__((format(printf, 3, 4)))
static void seq_fail(struct seq_run *r, enum seq_fail kind, const char *fmt, ...)
{
    if (r->failed)
        return;
    r->failed = true;
    r->fail = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    ev_stop(r->loop);
}

static const char *seq_phase_name(const struct seq_run *r)
{
    return r->phase == SEQ_WARMUP ? "warm-up call" : "call";
}

/* Hands slot its next call: a fresh record, sent now. */
static void seq_issue(struct seq_run *r, struct seq_slot *slot)
{
    const Com__Stevenpg__Rvg__Message *msg = car_fake_next(&r->fake, &r->rec);
    slot->call = r->issued++;
    slot->sent_ns = clock_now_ns();
    if (r->s->proto->call(r->conns[slot->conn], msg, slot) < 0)
        seq_fail(r, FAIL_CLOSED, "%s %llu: connection %u is closed (the server closed it)",
                 seq_phase_name(r), (unsigned long long)slot->call + 1, slot->conn);
}

/* Starts the warm-up, or the timed phase, or ends the run. */
static void seq_next_phase(struct seq_run *r)
{
    r->phase++;
    if (r->phase == SEQ_WARMUP && r->s->warmup == 0)
        r->phase++;
    r->total = r->phase == SEQ_WARMUP ? r->s->warmup : r->s->requests;
    if (r->phase == SEQ_TIMED) {
        probe_start(&r->probe, r->o->server_pids, r->o->nserver_pids);
        r->probing = true;
        r->t_timed_ns = clock_now_ns();
        persec_start(&r->sec, r->t_timed_ns, 0, true);
    } else if (r->phase == SEQ_DONE) {
        ev_stop(r->loop);
        return;
    }
    r->issued = r->answered = 0;
    for (unsigned i = 0; i < r->nslots && r->issued < r->total && !r->failed; i++)
        seq_issue(r, &r->slots[i]);
}

static void seq_connected(void *ctx, struct rpc_conn *c, int err)
{
    struct seq_run *r = ctx;
    r->events++;
    if (r->failed)
        return;
    if (err) {
        bool v6 = strchr(r->o->host, ':') != NULL;
        seq_fail(r, FAIL_CONNECT, "cannot connect to %s%s%s:%d: %s", v6 ? "[" : "", r->o->host,
                 v6 ? "]" : "", r->o->port, strerror(err));
        return;
    }
    if (++r->connected == r->nconns) {
        r->t_ready_ns = clock_now_ns();
        seq_next_phase(r);
    }
}

static void seq_done(void *ctx, struct rpc_conn *c, void *call_ctx, enum rpc_outcome outcome,
                     int code)
{
    uint64_t now = clock_now_ns();
    struct seq_run *r = ctx;
    struct seq_slot *slot = call_ctx;
    r->events++;
    if (r->failed)
        return;
    unsigned long long n = (unsigned long long)slot->call + 1;
    const char *what = seq_phase_name(r), *proto = r->s->proto->name;
    switch (outcome) {
    case RPC_OK:
        break;
    case RPC_E_STATUS:
        seq_fail(r, FAIL_STATUS, "%s %llu: the server answered %s %d", what, n,
                 !strcmp(proto, "rest") ? "HTTP status" : "grpc-status", code);
        return;
    case RPC_E_PROTOCOL:
        seq_fail(r, FAIL_PROTOCOL, "%s %llu: malformed or unexpected answer (%s, code %d)", what,
                 n, proto, code);
        return;
    case RPC_E_CLOSED:
        seq_fail(r, FAIL_CLOSED, "%s %llu: connection %u closed before the answer%s%s", what, n,
                 slot->conn, code ? ": " : "", code ? strerror(code) : "");
        return;
    }
    if (r->phase == SEQ_TIMED) {
        hist_record(r->lat, now - slot->sent_ns);
        persec_record(&r->sec, now - slot->sent_ns);
    }
    if (++r->answered == r->total) {
        if (r->phase == SEQ_TIMED)
            r->t_end_ns = now;
        seq_next_phase(r);
    } else if (r->issued < r->total) {
        seq_issue(r, slot);
    }
}

/* The progress line counts the timed calls answered; before them it says
 * the run is setting up. final: keep the figures for the last line. */
static void seq_progress(struct seq_run *r, bool final)
{
    bool timed = r->phase >= SEQ_TIMED;
    uint64_t done = timed ? r->answered : 0, total = timed ? r->s->requests : 0;
    progress_update(r->o->progress, done, total, final);
}

/* Every SEQ_TICK_MS: sample the server, and give up on a run that has
 * made no progress for the timeout. */
static void seq_tick(struct ev_loop *loop, struct ev_timer *t)
{
    struct seq_run *r = t->data;
    if (r->probing)
        probe_sample(&r->probe);
    seq_progress(r, false);
    if (r->phase == SEQ_TIMED)
        persec_tick(&r->sec, clock_now_ns(), r->answered);
    uint64_t now = ev_now(loop);
    if (r->events != r->progress) {
        r->progress = r->events;
        r->progress_ms = now;
        return;
    }
    if (now - r->progress_ms < (uint64_t)r->o->timeout_s * 1000)
        return;
    if (r->phase == SEQ_CONNECT)
        seq_fail(r, FAIL_CONNECT, "%u of %u connections not established after %u s",
                 r->nconns - r->connected, r->nconns, r->o->timeout_s);
    else
        seq_fail(r, FAIL_TIMEOUT, "%llu of %llu %ss unanswered after no answer for %u s",
                 (unsigned long long)(r->issued - r->answered), (unsigned long long)r->total,
                 seq_phase_name(r), r->o->timeout_s);
}

/* Connections and slots: REST one slot per connection; gRPC the streams
 * dealt round-robin over the connections. */
static void seq_layout(struct seq_run *r)
{
    const struct rpc_seq_opts *s = r->s;
    bool rest = !strcmp(s->proto->name, "rest");
    r->nslots = s->concurrency;
    r->nconns = rest ? s->concurrency : s->connections;
    r->conns = mem_calloc(r->nconns, sizeof *r->conns);
    r->slots = mem_calloc(r->nslots, sizeof *r->slots);
    for (unsigned i = 0; i < r->nslots; i++)
        r->slots[i].conn = i % r->nconns;
}

static void seq_fill_row(struct seq_run *r, struct result_row *row)
{
    if (r->probing)
        probe_finish(&r->probe, (double)r->answered, row);
    if (r->t_ready_ns)
        row->setup_s = (double)(r->t_ready_ns - r->t_start_ns) / 1e9;
    if (r->phase >= SEQ_TIMED) {
        row->sent = (double)r->issued;
        row->received = (double)r->answered;
        row->lost = (double)(r->issued - r->answered);
    }
    if (r->phase == SEQ_DONE) {
        row->duration_s = (double)(r->t_end_ns - r->t_timed_ns) / 1e9;
        row->throughput = row->duration_s > 0 ? row->received / row->duration_s : 0;
    }
    if (r->lat->count)
        result_set_latency(row, r->lat);
    if (r->phase >= SEQ_TIMED)
        persec_finish(&r->sec, r->phase == SEQ_DONE ? r->t_end_ns : clock_now_ns(), r->answered, row);
    if (!r->failed)
        return;
    double *counter[] = {
        [FAIL_CONNECT] = &row->err_connect, [FAIL_STATUS] = &row->err_status,
        [FAIL_PROTOCOL] = &row->err_protocol, [FAIL_CLOSED] = &row->err_closed,
        [FAIL_TIMEOUT] = &row->err_timeout,
    };
    *counter[r->fail] = 1;
    snprintf(row->error, sizeof row->error, "%s", r->error);
}

static int seq_run(const struct bench_opts *o, void *arg, unsigned rep, struct result_row *row)
{
    const struct rpc_seq_opts *s = arg;
    struct seq_run *r = mem_calloc(1, sizeof *r);
    r->o = o;
    r->s = s;
    r->lat = mem_calloc(1, sizeof *r->lat);
    car_fake_seed(&r->fake, s->seed + rep);
    seq_layout(r);
    r->loop = ev_loop_new();
    if (!r->loop) {
        snprintf(row->error, sizeof row->error, "cannot create an event loop: %s", strerror(errno));
        mem_free(r->slots);
        mem_free(r->conns);
        mem_free(r->lat);
        mem_free(r);
        return BENCH_EXIT_RUNTIME;
    }

    struct rpc_conn_opts co = {
        .host = o->host,
        .port = o->port,
        .max_in_flight = (s->concurrency + r->nconns - 1) / r->nconns,
        .gzip = s->gzip,
        .trace = o->trace,
    };
    char tls_err[200];
    if (s->tls && !(co.tls = tls_client_ctx_new(
                        &(struct tls_config){.cafile = s->tls_ca, .alpn = s->proto->alpn},
                        tls_err, sizeof tls_err)))
        seq_fail(r, FAIL_CONNECT, "TLS: %s", tls_err);
    struct rpc_events ev = {.connected = seq_connected, .done = seq_done, .ctx = r};
    r->t_start_ns = clock_now_ns();
    for (unsigned i = 0; i < r->nconns && !r->failed; i++) {
        int err = 0;
        r->conns[i] = s->proto->connect(r->loop, &co, &ev, &err);
        if (!r->conns[i])
            seq_fail(r, FAIL_CONNECT, "cannot connect to %s port %d over %s: %s", o->host,
                     o->port, s->proto->name,
                     err == ENOTSUP ? "this build's client does not support the protocol yet"
                                    : strerror(err));
    }
    ev_timer_init(&r->tick, seq_tick, r);
    r->progress_ms = ev_now(r->loop);
    ev_timer_start(r->loop, &r->tick, SEQ_TICK_MS, SEQ_TICK_MS);
    if (!r->failed)
        ev_run(r->loop);
    ev_timer_stop(r->loop, &r->tick);
    seq_progress(r, true);

    seq_fill_row(r, row);
    for (unsigned i = 0; i < r->nconns; i++)
        if (r->conns[i])
            s->proto->close(r->conns[i]);
    tls_ctx_free(co.tls);
    ev_loop_free(r->loop);
    int rc = !r->failed                  ? BENCH_EXIT_OK
             : r->fail == FAIL_TIMEOUT ? BENCH_EXIT_MISSED
                                       : BENCH_EXIT_RUNTIME;
    mem_free(r->slots);
    mem_free(r->conns);
    mem_free(r->lat);
    mem_free(r);
    return rc;
}

int rpc_seq_exec(const struct bench_opts *o, const struct rpc_seq_opts *s,
                 const struct result_context *ctx, struct result_set *out)
{
    struct result_row tmpl = {
        .experiment = "rpc-seq",
        .throughput_def = "calls answered per second over the timed calls: from the first "
                          "call sent to the last answer received",
        .op_def = "call",
        .op_unit = "call",
    };
    bool rest = !strcmp(s->proto->name, "rest");
    snprintf(tmpl.name, sizeof tmpl.name, "rpc-seq/%s/%s/%llun%uc", o->target, s->proto->name,
             (unsigned long long)s->requests, s->concurrency);
    snprintf(tmpl.target, sizeof tmpl.target, "%s", o->target);
    result_param(&tmpl, "requests", (double)s->requests);
    result_param(&tmpl, "warmup", (double)s->warmup);
    result_param(&tmpl, "concurrency", s->concurrency);
    result_param(&tmpl, "connections", rest ? s->concurrency : s->connections);
    result_param(&tmpl, "grpc", !rest);
    result_param(&tmpl, "gzip", s->gzip);
    result_param(&tmpl, "tls", s->tls);
    result_param(&tmpl, "seed", (double)s->seed);
    /* A shard makes its part of the calls over its part of the
     * connections; the rows keep the whole run's name and options. */
    struct rpc_seq_opts part = *s;
    uint64_t first;
    part.requests = bench_share(o, s->requests, &first);
    part.warmup = bench_share(o, s->warmup, &first);
    part.concurrency = (unsigned)bench_share(o, s->concurrency, &first);
    part.connections = (unsigned)bench_share(o, s->connections, &first);
    if (part.connections > part.concurrency || !part.connections)
        part.connections = part.concurrency;
    return bench_repeat(o, ctx, &tmpl, seq_run, &part, out);
}

/* The command's options: its own, then what every experiment takes. */
struct seq_cmd {
    struct bench_opts b;
    struct rpc_seq_opts s;
    int grpc; /* --protocol */
};

static const struct opt_choice seq_protocols[] = {
    {"rest", NULL, 0},
    {"grpc", NULL, 1},
    {NULL, NULL, 0},
};

static const struct opt seq_options[] = {
    {"protocol", 0, OPT_ENUM, "rest|grpc",
     "REST (HTTP/1.1 + JSON) or gRPC (HTTP/2 + protobuf)", "rest",
     OPT_FIELD(struct seq_cmd, grpc), .choices = seq_protocols},
    {"target", 0, OPT_STRING, "HOST:PORT", "server",
     "127.0.0.1:8080 for rest, 127.0.0.1:50051 for grpc", OPT_FIELD(struct seq_cmd, b.target_arg)},
    {"requests", 0, OPT_UINT, "N", "timed calls per run", "5000",
     OPT_FIELD(struct seq_cmd, s.requests), .min = 1, .max = UINT32_MAX},
    {"warmup", 0, OPT_UINT, "N", "calls per run before the clock starts", "0, as the article",
     OPT_FIELD(struct seq_cmd, s.warmup), .min = 0, .max = UINT32_MAX},
    {"concurrency", 0, OPT_UINT, "C",
     "calls in flight at once: REST uses C connections, one call at a time each; gRPC C "
     "concurrent streams over --connections", "1",
     OPT_FIELD(struct seq_cmd, s.concurrency), .min = 1, .max = 10000},
    {"connections", 0, OPT_UINT, "K", "gRPC: connections the streams spread over", "1",
     OPT_FIELD(struct seq_cmd, s.connections), .min = 1, .max = 10000},
    {"gzip", 0, OPT_FLAG, NULL, "gRPC: compress the requests (grpc-encoding: gzip)", NULL,
     OPT_FIELD(struct seq_cmd, s.gzip)},
    {"tls", 0, OPT_FLAG, NULL, "gRPC over TLS with ALPN h2 (car-server --tls-cert)", NULL,
     OPT_FIELD(struct seq_cmd, s.tls)},
    {"tls-ca", 0, OPT_STRING, "FILE",
     "with --tls: verify the server's certificate against these PEM CAs and the target's host",
     "none", OPT_FIELD(struct seq_cmd, s.tls_ca)},
    {"seed", 0, OPT_UINT, "S", "records come from seed S + run index", "1",
     OPT_FIELD(struct seq_cmd, s.seed), .min = 0, .max = UINT32_MAX},
    {"timeout", 0, OPT_UINT, "SECS", "fail when no call is answered for SECS", "10",
     OPT_FIELD(struct seq_cmd, b.timeout_s), .min = 1, .max = 3600},
    {.kind = OPT_END},
};

static const struct opt_table seq_tables[] = {
    {seq_options, 0},
    {bench_options, offsetof(struct seq_cmd, b)},
    {NULL, 0},
};

static const struct opt_cmd seq_command = {
    .head = seq_head, .tables = seq_tables, .tail = seq_tail};

int rpc_seq_main(int argc, char **argv, const struct result_context *ctx)
{
    struct seq_cmd c = {.s = {.requests = 5000, .seed = 1, .concurrency = 1}};
    struct bench_opts *o = &c.b;
    struct rpc_seq_opts *s = &c.s;
    bench_opts_init(o, "rpc-seq");
    int rc = bench_parse(o, &seq_command, argc, argv, &c);
    if (rc >= 0)
        return rc;
    s->proto = c.grpc ? &rpc_grpc_protocol : &rpc_rest_protocol;
    bool rest = !c.grpc;
    if (rest && (s->connections || s->gzip))
        return bench_usage_error(o, "%s is for grpc: REST opens one connection per concurrent "
                                    "call and sends JSON as it is",
                                 s->connections ? "--connections" : "--gzip");
    if (s->tls_ca && !s->tls)
        return bench_usage_error(o, "--tls-ca goes with --tls");
    if (s->tls && !s->proto->alpn)
        return bench_usage_error(o, "--tls is for grpc: the REST client speaks cleartext only");
    if (!s->connections)
        s->connections = 1;
    if (s->connections > s->concurrency)
        return bench_usage_error(o, "--connections %u exceeds --concurrency %u: every "
                                    "connection needs a call to carry",
                                 s->connections, s->concurrency);
    if ((rc = bench_share_check(o, "--requests", s->requests)) ||
        (rc = bench_share_check(o, "--concurrency", s->concurrency)) ||
        (!rest && (rc = bench_share_check(o, "--connections", s->connections))))
        return rc;
    o->port = s->proto->default_port;
    rc = bench_finish_options(o, argc, argv, rest ? s->concurrency : s->connections);
    if (rc)
        return rc;
    struct result_set rows = {0};
    rc = rpc_seq_exec(o, s, ctx, &rows);
    return bench_finish(o, ctx, &rows, rc);
}
