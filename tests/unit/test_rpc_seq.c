/* test_rpc_seq.c - unit tests for the rpc-seq driver (rpc_seq.c) over a
 * fake transport that answers from the event loop: how calls spread over
 * connections and streams, warm-up and timed counts, and how each kind of
 * failure ends a run (exit code, error counter, message).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/mem.h"
#include "load/rpc/rpc_seq.h"

#define MAX_CONNS 8

/* What the fake does, and what it saw. */
static struct {
    int connect_err;           /* connect's synchronous error */
    int connected_err;         /* reported through connected() */
    uint64_t fail_at;          /* call number (from 1) to fail; 0 never */
    enum rpc_outcome fail_how; /* RPC_E_* outcome; RPC_OK: call() returns -1 */
    bool silent;               /* never answer */
    unsigned conns, max_in_flight, peak_in_flight;
    uint64_t calls;
    bool bad_message;
} fake;

struct pending {
    void *call_ctx;
    enum rpc_outcome outcome;
};

struct rpc_conn {
    struct ev_loop *loop;
    struct rpc_events ev;
    struct ev_timer timer; /* answers, or reports the connect */
    bool connected;
    unsigned in_flight;
    struct pending q[64];
};

/* Answers everything in flight; a connection's calls finish in order. */
static void fake_tick(struct ev_loop *loop, struct ev_timer *t)
{
    struct rpc_conn *c = t->data;
    if (!c->connected) {
        c->connected = true;
        c->ev.connected(c->ev.ctx, c, fake.connected_err);
        return;
    }
    unsigned n = c->in_flight;
    struct pending q[64];
    memcpy(q, c->q, n * sizeof q[0]);
    c->in_flight = 0;
    for (unsigned i = 0; i < n; i++)
        c->ev.done(c->ev.ctx, c, q[i].call_ctx, q[i].outcome,
                   q[i].outcome == RPC_E_STATUS ? 14 : 0);
}

static struct rpc_conn *fake_connect(struct ev_loop *loop, const struct rpc_conn_opts *opts,
                                     const struct rpc_events *events, int *err)
{
    if (fake.connect_err) {
        *err = fake.connect_err;
        return NULL;
    }
    assert_string_equal(opts->host, "127.0.0.1");
    assert_int_equal(opts->port, 9);
    struct rpc_conn *c = mem_calloc(1, sizeof *c);
    c->loop = loop;
    c->ev = *events;
    fake.conns++;
    fake.max_in_flight = opts->max_in_flight;
    ev_timer_init(&c->timer, fake_tick, c);
    ev_timer_start(loop, &c->timer, 0, 0);
    return c;
}

static int fake_call(struct rpc_conn *c, const Com__Stevenpg__Rvg__Message *msg, void *call_ctx)
{
    assert_true(c->connected);
    if (!msg->car || !msg->driver || !msg->car->make || msg->car->year < 1990)
        fake.bad_message = true;
    uint64_t n = ++fake.calls;
    if (n == fake.fail_at && fake.fail_how == RPC_OK)
        return -1;
    assert_true(c->in_flight < fake.max_in_flight);
    c->q[c->in_flight++] = (struct pending){call_ctx, n == fake.fail_at ? fake.fail_how : RPC_OK};
    if (c->in_flight > fake.peak_in_flight)
        fake.peak_in_flight = c->in_flight;
    if (!fake.silent && !ev_timer_active(&c->timer))
        ev_timer_start(c->loop, &c->timer, 0, 0);
    return 0;
}

static void fake_close(struct rpc_conn *c)
{
    ev_timer_stop(c->loop, &c->timer);
    mem_free(c);
}

static const struct rpc_protocol fake_proto = {
    .name = "grpc",
    .default_port = 9,
    .connect = fake_connect,
    .call = fake_call,
    .close = fake_close,
};

static struct result_context ctx;

static int setup(void **state)
{
    memset(&fake, 0, sizeof fake);
    char *argv[] = {"test"};
    result_context_init(&ctx, 1, argv, "test");
    return 0;
}

static int teardown(void **state)
{
    result_context_free(&ctx);
    return 0;
}

static int exec(unsigned runs, struct rpc_seq_opts *s, struct result_set *rows)
{
    struct bench_opts o;
    bench_opts_init(&o, "rpc-seq");
    strcpy(o.host, "127.0.0.1");
    o.port = 9;
    strcpy(o.target, "fake");
    o.runs = runs;
    o.timeout_s = 1;
    o.brief = true;
    s->proto = &fake_proto;
    return rpc_seq_exec(&o, s, &ctx, rows);
}

static void test_sequential_with_warmup(void **state)
{
    struct rpc_seq_opts s = {.requests = 100, .warmup = 7, .concurrency = 1, .connections = 1};
    struct result_set rows = {0};
    assert_int_equal(exec(3, &s, &rows), BENCH_EXIT_OK);
    assert_int_equal(fake.calls, 3 * 107);
    assert_int_equal(fake.conns, 3); /* a connection per run */
    assert_int_equal(fake.peak_in_flight, 1);
    assert_false(fake.bad_message);
    assert_int_equal(rows.n, 3 + 3); /* iterations, then mean, median, stddev */
    const struct result_row *r = &rows.rows[0];
    assert_string_equal(r->name, "rpc-seq/fake/grpc/100n1c");
    assert_int_equal((int)r->sent, 100);
    assert_int_equal((int)r->received, 100);
    assert_true(r->has_latency && r->lat_max >= r->lat_min);
    assert_true(r->duration_s > 0 && r->throughput > 0);
    assert_string_equal(result_unit(r), "call");
    result_set_free(&rows);
}

/* gRPC: C streams dealt over K connections, never more in flight on one
 * than its share. */
static void test_streams_spread_over_connections(void **state)
{
    struct rpc_seq_opts s = {.requests = 500, .concurrency = 7, .connections = 3};
    struct result_set rows = {0};
    assert_int_equal(exec(1, &s, &rows), BENCH_EXIT_OK);
    assert_int_equal(fake.conns, 3);
    assert_int_equal(fake.max_in_flight, 3); /* ceil(7 / 3) */
    assert_int_equal(fake.peak_in_flight, 3);
    assert_int_equal(fake.calls, 500);
    assert_int_equal((int)rows.rows[0].received, 500);
    result_set_free(&rows);
}

static void check_failure(int rc_want, size_t counter, const char *words)
{
    struct rpc_seq_opts s = {.requests = 50, .concurrency = 1, .connections = 1};
    struct result_set rows = {0};
    assert_int_equal(exec(2, &s, &rows), rc_want);
    assert_int_equal(rows.n, 1); /* the failed run, and no more */
    const struct result_row *r = &rows.rows[0];
    assert_int_equal(r->metric[counter], 1);
    if (!strstr(r->error, words))
        fail_msg("'%s' does not say '%s'", r->error, words);
    result_set_free(&rows);
}

static void test_error_status(void **state)
{
    fake.fail_at = 5;
    fake.fail_how = RPC_E_STATUS;
    check_failure(BENCH_EXIT_RUNTIME, RESULT_METRIC(err_status), "call 5: the server answered grpc-status 14");
}

static void test_protocol_error(void **state)
{
    fake.fail_at = 1;
    fake.fail_how = RPC_E_PROTOCOL;
    check_failure(BENCH_EXIT_RUNTIME, RESULT_METRIC(err_protocol), "call 1: malformed");
}

static void test_closed(void **state)
{
    fake.fail_at = 3;
    fake.fail_how = RPC_E_CLOSED;
    check_failure(BENCH_EXIT_RUNTIME, RESULT_METRIC(err_closed), "call 3: connection 0 closed");
    memset(&fake, 0, sizeof fake);
    fake.fail_at = 2;
    fake.fail_how = RPC_OK; /* call() refuses */
    check_failure(BENCH_EXIT_RUNTIME, RESULT_METRIC(err_closed), "call 2: connection 0 is closed");
}

static void test_connect_errors(void **state)
{
    fake.connect_err = ENOTSUP;
    check_failure(BENCH_EXIT_RUNTIME, RESULT_METRIC(err_connect), "does not support the protocol");
    memset(&fake, 0, sizeof fake);
    fake.connected_err = ECONNREFUSED;
    check_failure(BENCH_EXIT_RUNTIME, RESULT_METRIC(err_connect), "cannot connect to 127.0.0.1:9");
}

static void test_unanswered_calls_time_out(void **state)
{
    fake.silent = true;
    check_failure(BENCH_EXIT_MISSED, RESULT_METRIC(err_timeout), "1 of 50 calls unanswered");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sequential_with_warmup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streams_spread_over_connections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protocol_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unanswered_calls_time_out, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
