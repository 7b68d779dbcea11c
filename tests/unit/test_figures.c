/* test_figures.c - unit tests for a cluster node's figures
 * (cluster/figures.c): the line round-trips; anything but exactly that
 * line is refused; the table keeps one entry per node, expires a node
 * after three of its intervals, sums the live ones with the caller's own,
 * and holds at most FIGURES_MAX_NODES.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/figures.h"

static const struct figures sample = {
    .interval_ms = 1000, .published = 5, .received = 7, .duplicates = 1, .overflow = 2,
    .filters = 3, .queue_subs = 4, .reconnects = 6, .disconnects = 8, .connected = 1,
};

static void test_round_trip(void **state)
{
    char line[FIGURES_LINE_MAX];
    size_t n = figures_encode(&sample, line, sizeof line);
    assert_string_equal(line, "v1 1000 5 7 1 2 3 4 6 8 1");
    struct figures f;
    assert_true(figures_decode(line, n, &f));
    assert_memory_equal(&f, &sample, sizeof f);
    struct figures big = {.interval_ms = UINT64_MAX, .published = UINT64_MAX};
    n = figures_encode(&big, line, sizeof line);
    assert_true(figures_decode(line, n, &f));
    assert_true(f.published == UINT64_MAX);
}

static void test_malformed_refused(void **state)
{
    static const char *const bad[] = {
        "", "v1", "v2 1000 5 7 1 2 3 4 6 8 1", "v1 1000 5 7 1 2 3 4 6 8",
        "v1 1000 5 7 1 2 3 4 6 8 1 ", "v1 1000 5 7 1 2 3 4 6 8 1 9", "v1  1000 5 7 1 2 3 4 6 8 1",
        "v1 1000 5 7 1 2 3 4 6 8 x", "v1 1000 5 7 1 2 3 4 6 -8 1", "v1 0 5 7 1 2 3 4 6 8 1",
        "v1 1000 18446744073709551616 7 1 2 3 4 6 8 1", "v1 1000 5 7 1 2 3 4 6 8 1\n",
    };
    struct figures f = sample;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(figures_decode(bad[i], strlen(bad[i]), &f));
        assert_memory_equal(&f, &sample, sizeof f); /* untouched */
    }
}

static void test_table_expiry_and_sums(void **state)
{
    struct figures_table t;
    figures_table_init(&t);
    const char *line = "v1 1000 5 7 1 2 3 4 6 8 1";
    figures_table_put(&t, "b", 1, line, strlen(line), 100);
    figures_table_put(&t, "c", 1, line, strlen(line), 100);
    figures_table_put(&t, "c", 1, line, strlen(line), 2000); /* replaces, seen again */
    figures_table_put(&t, "d", 1, "junk", 4, 100);
    figures_table_put(&t, "", 0, line, strlen(line), 100);
    assert_int_equal(t.malformed, 2);
    struct figures_sum sum;
    figures_table_sum(&t, &sample, 3100, &sum); /* b: 3000 ms old, not more */
    assert_int_equal(sum.nodes, 3);
    assert_true(sum.total.published == 15 && sum.total.connected == 3);
    figures_table_sum(&t, &sample, 3101, &sum); /* b gone */
    assert_int_equal(sum.nodes, 2);
    assert_true(sum.total.received == 14);
    figures_table_sum(&t, &sample, 50, &sum); /* a clock behind what was seen: alive */
    assert_int_equal(sum.nodes, 2);
    figures_table_sum(&t, &sample, 5001, &sum);
    assert_int_equal(sum.nodes, 1);
    assert_true(sum.total.published == 5);
    figures_table_free(&t);
}

static void test_table_bounded(void **state)
{
    struct figures_table t;
    figures_table_init(&t);
    const char *line = "v1 1000 1 0 0 0 0 0 0 0 1";
    char key[16];
    for (int i = 0; i < FIGURES_MAX_NODES + 10; i++) {
        int n = snprintf(key, sizeof key, "n%d", i);
        figures_table_put(&t, key, (size_t)n, line, strlen(line), 0);
    }
    assert_int_equal(t.refused, 10);
    figures_table_put(&t, "n0", 2, line, strlen(line), 0); /* a known one still updates */
    assert_int_equal(t.refused, 10);
    struct figures_sum sum;
    struct figures none = {0};
    figures_table_sum(&t, &none, 0, &sum);
    assert_int_equal(sum.nodes, FIGURES_MAX_NODES + 1);
    figures_table_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_malformed_refused),
        cmocka_unit_test(test_table_expiry_and_sums),
        cmocka_unit_test(test_table_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
