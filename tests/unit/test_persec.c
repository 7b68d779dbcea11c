/* test_persec.c - the closed runs' per-second series (load/persec.c): a
 * point per second from the counts handed in at the ticks, the rate over
 * the time between the bounding ticks, the last partial second, and the
 * latency of each second. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "load/persec.h"

#define MS 1000000ull

static void test_a_point_per_second_from_the_ticks(void **state)
{
    static struct persec s;
    struct result_row row = {0};
    persec_start(&s, 5000 * MS, 100, false);
    /* Ticks every 100 ms; 1000 ops a tick the first second, 500 after. */
    uint64_t count = 100;
    for (unsigned t = 1; t <= 25; t++) {
        count += t <= 10 ? 1000 : 500;
        persec_tick(&s, (5000 + 100 * t) * MS, count);
    }
    assert_int_equal(s.n, 2); /* seconds 0 and 1 closed; 0.5 s under way */
    persec_finish(&s, 7550 * MS, count, &row);
    assert_int_equal(row.series.n, 3);
    assert_float_equal(row.series.points[0].responses, 10000, 1e-6);
    assert_float_equal(row.series.points[1].responses, 5000, 1e-6);
    /* The last 0.55 s: 2500 ops since the mark at 7 s. */
    assert_float_equal(row.series.points[2].responses, 2500 / 0.55, 1e-6);
    assert_int_equal(row.series.saturation_s, -1);
    assert_float_equal(row.series.points[0].p99_ms, 0, 0); /* no latency asked for */
    assert_null(row.series_lat);
    assert_null(s.pts);
    free(row.series.points);
}

static void test_a_late_tick_stretches_the_second_not_the_rate(void **state)
{
    static struct persec s;
    struct result_row row = {0};
    persec_start(&s, 0, 0, true);
    persec_tick(&s, 900 * MS, 900);
    persec_tick(&s, 1200 * MS, 1200); /* the tick that should have come at 1 s */
    persec_record(&s, 2 * MS);
    persec_record(&s, 3 * MS);
    persec_finish(&s, 1250 * MS, 1250, &row); /* 50 ms left: too short to keep */
    assert_int_equal(row.series.n, 1);
    assert_float_equal(row.series.points[0].responses, 1000, 1e-6);
    /* ... but its latencies are the second before's */
    assert_int_equal(row.series_lat[0][seclat_bucket(2000)], 1);
    assert_int_equal(row.series_lat[0][seclat_bucket(3000)], 1);
    free(row.series.points);
    free(row.series_lat);
}

static void test_latency_per_second(void **state)
{
    static struct persec s;
    struct result_row row = {0};
    persec_start(&s, 0, 0, true);
    for (unsigned i = 1; i <= 100; i++)
        persec_record(&s, i * 1000 * 1000); /* 1 .. 100 ms */
    persec_tick(&s, 1000 * MS, 100);
    persec_record(&s, 7 * MS);
    persec_finish(&s, 1500 * MS, 101, &row);
    assert_int_equal(row.series.n, 2);
    /* From the second's buckets: within 1/16 of the value. */
    assert_float_equal(row.series.points[0].p50_ms, 50, 50 / 16.0);
    assert_float_equal(row.series.points[0].p99_ms, 99, 99 / 16.0);
    assert_float_equal(row.series.points[1].p50_ms, 7, 7 / 16.0);
    /* The buckets are kept for the merge: every sample in its second. */
    assert_non_null(row.series_lat);
    uint64_t n0 = 0, n1 = 0;
    for (unsigned b = 0; b < SECLAT_BUCKETS; b++) {
        n0 += row.series_lat[0][b];
        n1 += row.series_lat[1][b];
    }
    assert_int_equal(n0, 100);
    assert_int_equal(n1, 1);
    assert_int_equal(row.series_lat[1][seclat_bucket(7000)], 1);
    /* The last half second: one op, two per second. */
    assert_float_equal(row.series.points[1].responses, 2, 1e-6);
    free(row.series.points);
    free(row.series_lat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_point_per_second_from_the_ticks),
        cmocka_unit_test(test_a_late_tick_stretches_the_second_not_the_rate),
        cmocka_unit_test(test_latency_per_second),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
