/* test_stats.c - report/stats.c: the median, and Mann-Whitney U against
 * values worked out independently (scipy.stats.mannwhitneyu's documented
 * example, and counts over every arrangement of small samples). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report/stats.h"

#define TOL 1e-12

static void test_median(void **state)
{
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, one[] = {7};
    assert_float_equal(stats_median(odd, 3), 3, 0);
    assert_float_equal(stats_median(even, 4), 2.5, 0);
    assert_float_equal(stats_median(one, 1), 7, 0);
}

/* scipy's documentation: males against females, U1 = 17, exact p = 1/9,
 * asymptotic p = 0.11134688653314041. */
static void test_scipy_example(void **state)
{
    double males[] = {19, 22, 16, 29, 24}, females[] = {20, 11, 17, 12};
    struct stats_mwu r = stats_mann_whitney(males, 5, females, 4);
    assert_float_equal(r.u, 17, 0);
    assert_true(r.exact);
    assert_float_equal(r.p, 1.0 / 9, TOL);
    assert_float_equal(stats_mwu_p_normal(17, 5, 4, 0), 0.11134688653314041, 1e-9);
    /* Swapping the samples mirrors U and keeps p. */
    r = stats_mann_whitney(females, 4, males, 5);
    assert_float_equal(r.u, 3, 0);
    assert_float_equal(r.p, 1.0 / 9, TOL);
}

static void test_exact_small(void **state)
{
    double a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
    struct stats_mwu r = stats_mann_whitney(a, 4, b, 4);
    assert_float_equal(r.u, 0, 0);
    assert_float_equal(r.p, 2.0 / 70, TOL); /* the two extreme arrangements of C(8, 4) */
    /* 3 against 3 can never do better than 2 / C(6, 3). */
    r = stats_mann_whitney(a, 3, b, 3);
    assert_float_equal(r.p, 0.1, TOL);
    assert_float_equal(stats_min_p(3, 3), 0.1, TOL);
    assert_float_equal(stats_min_p(4, 4), 2.0 / 70, TOL);
    assert_float_equal(stats_min_p(1, 1), 1, 0);
    /* Counted over all C(9, 3) arrangements: U = 6, p = 46/84. */
    double c[] = {1.5, 2.5, 9}, d[] = {3, 4, 5, 6, 7, 8};
    r = stats_mann_whitney(c, 3, d, 6);
    assert_float_equal(r.u, 6, 0);
    assert_float_equal(r.p, 46.0 / 84, TOL);
    /* Identical single samples: nothing to tell. */
    r = stats_mann_whitney(a, 1, a, 1);
    assert_float_equal(r.p, 1, 0);
}

/* Ties: U counts them half, the variance shrinks by the tie term (here
 * 102 from groups of 3, 3, 2, 2 and 2). */
static void test_ties(void **state)
{
    double a[] = {1, 2, 2, 3, 3, 3, 4, 5}, b[] = {3, 4, 4, 5, 6, 6, 7};
    struct stats_mwu r = stats_mann_whitney(a, 8, b, 7);
    assert_false(r.exact);
    assert_float_equal(r.u, 7, 0);
    assert_float_equal(r.p, 0.01598468512519625, 1e-12);
    double same[] = {2, 2, 2};
    r = stats_mann_whitney(same, 3, same, 3);
    assert_float_equal(r.u, 4.5, 0);
    assert_float_equal(r.p, 1, 0);
}

/* Past STATS_EXACT_MAX the normal approximation; and the exact count at
 * the limit, against a recursion over (n, m, u) summed independently:
 * 20 against 20 with U = 120 gives p = 0.030411256038764864. */
static void test_large(void **state)
{
    double x[25], y[25];
    for (unsigned i = 0; i < 25; i++) {
        x[i] = i;
        y[i] = i + 6.5;
    }
    struct stats_mwu r = stats_mann_whitney(x, 25, y, 25);
    assert_false(r.exact);
    assert_float_equal(r.u, 171, 0);
    assert_float_equal(r.p, 0.006222848471189996, 1e-12);
    assert_float_equal(stats_mwu_p_exact(120, 20, 20), 0.030411256038764864, 1e-12);
    assert_float_equal(stats_mwu_p_exact(280, 20, 20), 0.030411256038764864, 1e-12);
    assert_float_equal(stats_mwu_p_exact(0, 20, 20), 2 / 137846528820.0, 1e-20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),      cmocka_unit_test(test_scipy_example),
        cmocka_unit_test(test_exact_small), cmocka_unit_test(test_ties),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
