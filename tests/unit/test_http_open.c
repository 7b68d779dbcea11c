/* test_http_open.c - unit tests for the saturation point (http_open.c) on
 * synthetic series: a knee where responses/s flatten while p95 climbs, a
 * series that keeps scaling, a plateau with steady latency, noise below
 * the thresholds, and series too short for the window.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_knee),
        cmocka_unit_test(test_scaling_never_saturates),
        cmocka_unit_test(test_plateau_steady_latency),
        cmocka_unit_test(test_short_series),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
