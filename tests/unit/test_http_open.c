/* test_http_open.c - unit tests for the saturation point (http_open.c) on
 * synthetic series: a knee where responses/s flatten while p95 climbs, a
 * series that keeps scaling, a plateau with steady latency, noise below
 * the thresholds, and series too short for the window. And the readiness
 * poll (http_open_wait_ready) against a forked child: a server that
 * answers 503 before 200, one that never answers 200 (the timeout), and a
 * child that dies before it listens. And http_open_exec with a
 * PostgreSQL server to sample that cannot be found: an error, or left out
 * when the caller says it is optional.
 */
#include <arpa/inet.h>
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

#include "bench/bench.h"
#include "bench/http_open.h"

#define N 60

static struct ho_point s[N];

/* Offered load rises 10 users/s; the server answers up to cap/s, after
 * which p95 grows 300 ms a second (the reference's raw logs). */
static void knee(double cap, unsigned at)
{
    for (unsigned i = 0; i < N; i++) {
        s[i].active = 10.0 * (i + 1);
        s[i].responses = i < at ? cap * (i + 1) / at : cap;
        s[i].p95_ms = i < at ? 20 : 20 + 300.0 * (i - at + 1);
    }
}

static void test_knee(void **state)
{
    knee(300, 20);
    int sec = ho_saturation(s, N, 5);
    /* The first second whose next 5 s no longer scale, read from 5 s
     * trailing means: within one window of the knee. */
    assert_true(sec >= 15 && sec <= 25);
    assert_true(s[sec].active >= 160 && s[sec].active <= 260);
    knee(300, 40);
    int later = ho_saturation(s, N, 5);
    assert_true(later > sec);
}

static void test_scaling_never_saturates(void **state)
{
    for (unsigned i = 0; i < N; i++)
        s[i] = (struct ho_point){.active = i + 1, .responses = 10.0 * (i + 1), .p95_ms = 20 + i % 3};
    assert_int_equal(ho_saturation(s, N, 5), -1);
}

static void test_plateau_steady_latency(void **state)
{
    /* A constant rate the server keeps up with: flat throughput, flat p95. */
    for (unsigned i = 0; i < N; i++)
        s[i] = (struct ho_point){.active = 50, .responses = 100, .p95_ms = 40};
    assert_int_equal(ho_saturation(s, N, 5), -1);
    /* p95 creeping up by less than a millisecond is noise. */
    for (unsigned i = 0; i < N; i++)
        s[i].p95_ms = 1 + 0.05 * i;
    assert_int_equal(ho_saturation(s, N, 5), -1);
    /* A rise of 10 % in 5 s is under the 20 % rule. */
    for (unsigned i = 0; i < N; i++)
        s[i].p95_ms = 200 + 4.0 * i;
    assert_int_equal(ho_saturation(s, N, 5), -1);
}

static void test_short_series(void **state)
{
    knee(300, 3);
    assert_int_equal(ho_saturation(s, 9, 5), -1);
    assert_true(ho_saturation(s, 12, 5) >= 0);
    assert_int_equal(ho_saturation(s, N, 0), -1);
}

/* ---- http_open_wait_ready ------------------------------------------------ */

#define READY_PATH "/health/ready"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A loopback socket bound to a free port, listening if listen_too. */
static int bound_socket(int *port, bool listen_too)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    if (listen_too)
        assert_int_equal(listen(fd, 16), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* The child: answers each connection's request with 503 the first fails
 * times, then 200 and exits with the number of requests it saw. A request
 * for another path gets 404, never 200. */
static void serve(int lfd, unsigned fails)
{
    for (unsigned n = 1;; n++) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0)
            _exit(100);
        char req[1024];
        ssize_t r = recv(c, req, sizeof req - 1, 0);
        req[r > 0 ? r : 0] = '\0';
        bool right = !strncmp(req, "GET " READY_PATH " HTTP/1.1\r\n", strlen(READY_PATH) + 15);
        const char *status = !right ? "404 Not Found" : n <= fails ? "503 Service Unavailable" : "200 OK";
        char resp[128];
        int len = snprintf(resp, sizeof resp,
                           "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status);
        send(c, resp, (size_t)len, MSG_NOSIGNAL);
        close(c);
        if (right && n > fails)
            _exit((int)n);
    }
}

static pid_t spawn_server(int *port, unsigned fails)
{
    int lfd = bound_socket(port, true);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        serve(lfd, fails);
    close(lfd);
    return pid;
}

static void test_ready_after_503(void **state)
{
    int port, status;
    pid_t pid = spawn_server(&port, 3);
    assert_true(http_open_wait_ready("127.0.0.1", port, READY_PATH, 30, pid));
    /* Polled until the 200: three 503 first. */
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 4);
}

static void test_ready_timeout(void **state)
{
    int port;
    pid_t pid = spawn_server(&port, 1000000); /* never ready */
    double t0 = now_s();
    assert_false(http_open_wait_ready("127.0.0.1", port, READY_PATH, 0.3, pid));
    double took = now_s() - t0;
    assert_true(took >= 0.3 && took < 10);
    /* It gave up on a child that still runs: not reaped. */
    assert_int_equal(waitpid(pid, NULL, WNOHANG), 0);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
}

static void test_ready_child_died(void **state)
{
    /* A port nobody listens on, and a child that exits at once. */
    int port, fd = bound_socket(&port, false);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(3);
    double t0 = now_s();
    assert_false(http_open_wait_ready("127.0.0.1", port, READY_PATH, 30, pid));
    assert_true(now_s() - t0 < 10); /* long before the timeout */
    close(fd);
    /* Not reaped by the poll: its parent learns how it ended. */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
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
    bench_opts_init(&o, "http-open", NULL);
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
        cmocka_unit_test(test_knee),
        cmocka_unit_test(test_scaling_never_saturates),
        cmocka_unit_test(test_plateau_steady_latency),
        cmocka_unit_test(test_short_series),
        cmocka_unit_test(test_ready_after_503),
        cmocka_unit_test(test_ready_timeout),
        cmocka_unit_test(test_ready_child_died),
        cmocka_unit_test(test_pg_sample_not_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
