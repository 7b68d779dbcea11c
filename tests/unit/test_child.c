/* test_child.c - unit tests for child.c's readiness poll
 * (child_wait_http) against a forked child: a server that answers 503
 * before 200, one that never answers 200 (the timeout), and a child that
 * dies before it listens, which the poll notices without reaping it.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "run/child.h"
#include "test_ready_server.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A struct child for a process we forked ourselves. */
static struct child child_of(pid_t pid)
{
    struct child c;
    child_init(&c, "test");
    c.pid = pid;
    return c;
}

static void test_ready_after_503(void **state)
{
    int port, status;
    pid_t pid = spawn_server(&port, 3);
    struct child c = child_of(pid);
    assert_true(child_wait_http(&c, port, READY_PATH, 30));
    /* Polled until the 200: three 503 first. */
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 4);
}

static void test_ready_timeout(void **state)
{
    int port;
    pid_t pid = spawn_server(&port, 1000000); /* never ready */
    struct child c = child_of(pid);
    double t0 = now_s();
    assert_false(child_wait_http(&c, port, READY_PATH, 0.3));
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
    struct child c = child_of(pid);
    double t0 = now_s();
    assert_false(child_wait_http(&c, port, READY_PATH, 30));
    assert_true(now_s() - t0 < 10); /* long before the timeout */
    close(fd);
    /* Not reaped by the poll: its parent learns how it ended. */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_after_503),
        cmocka_unit_test(test_ready_timeout),
        cmocka_unit_test(test_ready_child_died),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
