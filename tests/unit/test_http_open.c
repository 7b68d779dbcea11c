/* test_http_open.c - unit tests for the saturation point (ho_series.c) on
 * synthetic series, most from a fluid queue model: a light steady load
 * with millisecond jitter, a ramp past the capacity, an overload from the
 * start, a server that fails the excess fast (503), failures at a
 * constant share, stalls and bursts that recover, a slow but steady
 * server, one that stops answering, one that loses requests, a light
 * load's few requests in flight, and series too short for the window. And
 * http_open_exec with a PostgreSQL server to sample that cannot be found:
 * an error, or left out when the caller says it is optional.
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "load/bench.h"
#include "load/http/http_open.h"
#include "test_ready_server.h"

#define N 300
#define W 5

static struct result_point s[N];

/* Second t of a server that keeps up: it answers each second what was
 * sent in it, all OK, with p95 p95_ms. */
static struct result_point kept_up(double sent, double p95_ms)
{
    return (struct result_point){.active = sent, .responses = sent, .p95_ms = p95_ms, .sent = sent,
                             .ok = sent};
}

/* A FIFO server of capacity cap/s and service time base_ms, sent
 * demand[t] requests in second t: it answers min(backlog + demand, cap),
 * and an answer waits for the backlog ahead of it (backlog / cap). The
 * fluid model of a server that queues what it cannot serve yet. */
static void queue_model(const double *demand, unsigned n, double cap, double base_ms)
{
    double backlog = 0;
    for (unsigned t = 0; t < n; t++) {
        double answered = fmin(backlog + demand[t], cap), before = backlog;
        backlog += demand[t] - answered;
        s[t] = (struct result_point){.active = 10.0 * (t + 1), .responses = answered,
                                 .p95_ms = base_ms + 1000 * (before + backlog) / 2 / cap,
                                 .sent = demand[t], .ok = answered};
    }
}

static double demand[N];

static void test_light_steady_load(void **state)
{
    /* A constant rate answered at once, p95 jittering between 2 and 3 ms:
     * flat responses/s and a p95 "rising" 50 % (the old rule's trap). */
    static const double jitter[] = {2, 2, 3, 2.5, 2, 3, 3, 2};
    for (unsigned i = 0; i < N; i++)
        s[i] = kept_up(100, jitter[(i / 7) % 8]);
    enum ho_sat_cause cause = HO_SAT_BACKLOG;
    assert_int_equal(ho_saturation(s, N, W, &cause), -1);
    assert_int_equal(cause, HO_SAT_NONE);
    /* Nor when latency jumps with the load, but every request is answered. */
    for (unsigned i = 0; i < N; i++)
        s[i] = kept_up(100 + i, i < 150 ? 3 : 40);
    assert_int_equal(ho_saturation(s, N, W, NULL), -1);
}

static void test_ramp_past_capacity(void **state)
{
    /* Demand rises 10 requests/s each second; the server answers 500/s:
     * the knee is at second 50. */
    for (unsigned t = 0; t < 120; t++)
        demand[t] = 10.0 * t;
    queue_model(demand, 120, 500, 5);
    enum ho_sat_cause cause;
    int sec = ho_saturation(s, 120, W, &cause);
    /* Read once the answers fall 5 % short of the demand (526/s, second
     * 53), a few seconds past the knee; the value is the active users then. */
    assert_true(sec >= 50 && sec <= 55);
    assert_int_equal(cause, HO_SAT_BACKLOG);
    /* A later knee is read later. */
    queue_model(demand, 120, 700, 5);
    int later = ho_saturation(s, 120, W, NULL);
    assert_true(later >= 70 && later <= 76);
    /* A slower server (1 s) passes its capacity the same way. */
    queue_model(demand, 120, 500, 1000);
    sec = ho_saturation(s, 120, W, &cause);
    assert_true(sec >= 50 && sec <= 58);
    assert_int_equal(cause, HO_SAT_BACKLOG);
}

static void test_overload_from_start(void **state)
{
    /* 600 requests/s at a server of 500/s from the first second: read at
     * the earliest second the rule can name, w. */
    for (unsigned t = 0; t < 60; t++)
        demand[t] = 600;
    queue_model(demand, 60, 500, 5);
    enum ho_sat_cause cause;
    assert_int_equal(ho_saturation(s, 60, W, &cause), W);
    assert_int_equal(cause, HO_SAT_BACKLOG);
    assert_int_equal(ho_saturation(s, 60, 3, NULL), 3);
    /* 2 % over the capacity is under the rule's 5 %, though the queue
     * grows (10 requests a second). */
    for (unsigned t = 0; t < 60; t++)
        demand[t] = 510;
    queue_model(demand, 60, 500, 5);
    assert_int_equal(ho_saturation(s, 60, W, NULL), -1);
}

static void test_fast_failing_server(void **state)
{
    /* Past 500/s the server answers the excess at once with 503: no
     * backlog, no latency, but fewer OK answers than demand. */
    for (unsigned t = 0; t < 120; t++) {
        double sent = 10.0 * t, ok = fmin(sent, 500);
        s[t] = (struct result_point){.active = t, .responses = sent, .p95_ms = 3, .sent = sent,
                                 .ok = ok, .ko_server = sent - ok};
    }
    enum ho_sat_cause cause;
    int sec = ho_saturation(s, 120, W, &cause);
    assert_true(sec >= 50 && sec <= 55);
    assert_int_equal(cause, HO_SAT_FAILURES);
    /* The generator's own failures (out of descriptors) are not the
     * server's: the same KOs counted as the generator's are no sign. */
    for (unsigned t = 0; t < 120; t++)
        s[t].ko_server = 0;
    assert_int_equal(ho_saturation(s, 120, W, NULL), -1);
}

static void test_constant_functional_failures(void **state)
{
    /* A request that fails 20 % of the time at any load (a broken
     * endpoint) is no saturation; a share that rises past it is. */
    for (unsigned i = 0; i < N; i++) {
        s[i] = kept_up(500, 3);
        s[i].ok = 400;
        s[i].ko_server = 100;
    }
    assert_int_equal(ho_saturation(s, N, W, NULL), -1);
    for (unsigned i = 100; i < N; i++) {
        s[i].ok = 350;
        s[i].ko_server = 150;
    }
    assert_int_equal(ho_saturation(s, N, W, NULL), 100);
}

static void test_short_stall_recovers(void **state)
{
    /* 300 requests/s at a server of 500/s that stalls 2 s at second 40:
     * the backlog it left drains 200/s faster than it grew, within w. */
    double backlog = 0;
    for (unsigned t = 0; t < 120; t++) {
        double cap = t == 40 || t == 41 ? 0 : 500, answered = fmin(backlog + 300, cap);
        s[t] = (struct result_point){.active = 300, .responses = answered,
                                 .p95_ms = backlog > 0 ? 2000 : 3, .sent = 300, .ok = answered};
        backlog += 300 - answered;
    }
    assert_int_equal(ho_saturation(s, 120, W, NULL), -1);
    /* A burst of twice the capacity for 2 s drains as quickly. */
    for (unsigned t = 0; t < 120; t++)
        demand[t] = t == 60 || t == 61 ? 1000 : 300;
    queue_model(demand, 120, 500, 3);
    assert_int_equal(ho_saturation(s, 120, W, NULL), -1);
    /* A longer stall leaves the server behind for more than two windows:
     * that counts (raise --saturation-window to ignore it). */
    for (unsigned t = 0; t < 120; t++)
        demand[t] = t >= 60 && t < 66 ? 1500 : 300;
    queue_model(demand, 120, 500, 3);
    assert_true(ho_saturation(s, 120, W, NULL) >= 55);
}

static void test_slow_stable_server(void **state)
{
    /* Every answer takes 1 s: answers trail a rising demand by a second,
     * which looks like a backlog, but the latency never climbs. */
    for (unsigned t = 0; t < 120; t++) {
        double sent = t < 60 ? 5.0 * t : 300, before = t ? s[t - 1].sent : 0;
        s[t] = (struct result_point){.active = sent, .responses = before, .p95_ms = 1100,
                                 .sent = sent, .ok = before};
    }
    assert_int_equal(ho_saturation(s, 120, W, NULL), -1);
    /* Nor when its p95 wanders between 0.9 and 1.3 s: a rise of 400 ms,
     * but not twice what it was. */
    for (unsigned t = 0; t < 120; t++)
        s[t].p95_ms = (t / 10) % 2 ? 1300 : 900;
    assert_int_equal(ho_saturation(s, 120, W, NULL), -1);
}

static void test_server_stops_answering(void **state)
{
    /* From second 30 nothing is answered at all: no latency to read, but
     * a backlog that grows by the whole demand. */
    for (unsigned t = 0; t < 60; t++) {
        s[t] = kept_up(100, 3);
        if (t >= 30)
            s[t].responses = s[t].ok = 0;
    }
    enum ho_sat_cause cause;
    assert_int_equal(ho_saturation(s, 60, W, &cause), 30);
    assert_int_equal(cause, HO_SAT_BACKLOG);
}

static void test_lost_requests(void **state)
{
    /* From second 100 a tenth of the requests are never answered (lost,
     * not queued: the answers do not wait behind them, p95 goes from 2 to
     * 5 ms); 60 s later they time out. Not a queue in front of the server,
     * so they count when they fail. */
    for (unsigned t = 0; t < 200; t++) {
        s[t] = kept_up(100, 2);
        if (t >= 100) {
            s[t].ok = 90;
            s[t].p95_ms = 5;
            s[t].ko_server = t >= 160 ? 10 : 0;
            s[t].responses = s[t].ok + s[t].ko_server;
        }
    }
    enum ho_sat_cause cause;
    assert_int_equal(ho_saturation(s, 200, W, &cause), 160);
    assert_int_equal(cause, HO_SAT_FAILURES);
}

static void test_light_load_counts(void **state)
{
    /* One request a second; a slow spell leaves one more in flight at
     * the end of each of two windows, then all are answered: 20 % of the
     * demand and 1.5 s answers, but 2 requests, not 10. */
    for (unsigned i = 0; i < N; i++)
        s[i] = kept_up(1, 5);
    s[104].responses = s[104].ok = 0;
    s[109].responses = s[109].ok = 0;
    s[110].responses = s[110].ok = 3;
    for (unsigned i = 105; i <= 110; i++)
        s[i].p95_ms = 1500;
    assert_int_equal(ho_saturation(s, N, W, NULL), -1);
}

static void test_short_series(void **state)
{
    for (unsigned t = 0; t < 30; t++)
        demand[t] = 600;
    queue_model(demand, 30, 500, 5);
    assert_int_equal(ho_saturation(s, 3 * W - 1, W, NULL), -1);
    assert_int_equal(ho_saturation(s, 3 * W, W, NULL), W);
    assert_int_equal(ho_saturation(s, 30, 0, NULL), -1);
}

/* ---- http_open_exec with --pg-sample --------------------------------------- */

/* A test of one user sending one request to READY_PATH. */
struct one_test {
    struct scenario scn;
    struct inj_profile prof;
    struct http_open_test t;
    struct result_set rows;
};

static void one_init(struct one_test *x)
{
    char err[256];
    const char *text = "request GET " READY_PATH " ready\n";
    struct inj_step st;
    *x = (struct one_test){0};
    assert_int_equal(scn_parse(text, strlen(text), &x->scn, err, sizeof err), 0);
    assert_int_equal(inj_parse_step("at-once 1", 9, &st, err, sizeof err), 0);
    assert_int_equal(inj_profile_add(&x->prof, &st, err, sizeof err), 0);
    http_open_test_init(&x->t);
    x->t.scn = &x->scn;
    x->t.prof = &x->prof;
}

static void one_free(struct one_test *x)
{
    result_set_free(&x->rows);
    http_open_test_free(&x->t);
    scn_free(&x->scn);
}

static int one_exec(struct one_test *x, int port)
{
    struct bench_opts o;
    bench_opts_init(&o, "http-open");
    snprintf(o.host, sizeof o.host, "127.0.0.1");
    o.port = port;
    snprintf(o.target, sizeof o.target, "test");
    o.brief = true;
    struct result_context ctx = {0};
    return http_open_exec(&o, &x->t, &ctx, &x->rows);
}

static void test_pg_sample_not_found(void **state)
{
    /* This process is no postmaster. */
    char self[16];
    snprintf(self, sizeof self, "%d", (int)getpid());
    struct one_test x;
    struct http_open_summary sum;
    one_init(&x);
    x.t.pg_sample = self;
    assert_int_equal(one_exec(&x, 1), BENCH_EXIT_RUNTIME);
    assert_int_equal(x.rows.n, 0);
    assert_false(http_open_last_summary(&x.t, &sum));
    one_free(&x);

    /* Optional: measured without it. */
    int port, status;
    pid_t pid = spawn_server(&port, 0);
    one_init(&x);
    x.t.pg_sample = self;
    x.t.pg_sample_optional = true;
    assert_int_equal(one_exec(&x, port), BENCH_EXIT_OK);
    assert_true(http_open_last_summary(&x.t, &sum));
    assert_true(sum.requests == 1 && sum.ko == 0 && !sum.pg);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    one_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_light_steady_load),
        cmocka_unit_test(test_ramp_past_capacity),
        cmocka_unit_test(test_overload_from_start),
        cmocka_unit_test(test_fast_failing_server),
        cmocka_unit_test(test_constant_functional_failures),
        cmocka_unit_test(test_short_stall_recovers),
        cmocka_unit_test(test_slow_stable_server),
        cmocka_unit_test(test_server_stops_answering),
        cmocka_unit_test(test_lost_requests),
        cmocka_unit_test(test_light_load_counts),
        cmocka_unit_test(test_short_series),
        cmocka_unit_test(test_pg_sample_not_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
