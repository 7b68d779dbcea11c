/* test_conn_engine.c - the pure helpers of the mqtt-conns engine
 * (load/mqtt/conn_engine.c): which loopback source address a connection
 * binds to, how many sources a run needs, and when a storm connection is
 * due. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "load/mqtt/conn_engine.h"

static void test_sources_go_round_from_127_0_0_1(void **state)
{
    char a[16];
    ce_source_addr(0, 4, a);
    assert_string_equal(a, "127.0.0.1");
    ce_source_addr(3, 4, a);
    assert_string_equal(a, "127.0.0.4");
    ce_source_addr(4, 4, a);
    assert_string_equal(a, "127.0.0.1");
    /* 0 sources means one; more than the maximum are clamped, so the last
     * octet never reaches 255 (broadcast) or wraps. */
    ce_source_addr(7, 0, a);
    assert_string_equal(a, "127.0.0.1");
    ce_source_addr(253, 1000, a);
    assert_string_equal(a, "127.0.0.254");
    ce_source_addr(254, 1000, a);
    assert_string_equal(a, "127.0.0.1");
}

static void test_one_source_per_16000_connections(void **state)
{
    assert_int_equal(ce_sources_for(0), 1);
    assert_int_equal(ce_sources_for(1), 1);
    assert_int_equal(ce_sources_for(CE_PER_SOURCE), 1);
    assert_int_equal(ce_sources_for(CE_PER_SOURCE + 1), 2);
    assert_int_equal(ce_sources_for(100000), 7);
    assert_int_equal(ce_sources_for(UINT64_C(1) << 40), CE_MAX_SOURCES);
}

static void test_storm_schedule_is_even(void **state)
{
    assert_int_equal(ce_storm_due_ns(0, 10000), 0);
    assert_int_equal(ce_storm_due_ns(1, 10000), 100000);
    assert_int_equal(ce_storm_due_ns(10000, 10000), 1000000000);
    assert_int_equal(ce_storm_due_ns(3, 500), 6000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sources_go_round_from_127_0_0_1),
        cmocka_unit_test(test_one_source_per_16000_connections),
        cmocka_unit_test(test_storm_schedule_is_even),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
