/* test_si.c - SI-prefixed numbers (report/si.c): prefixes from nano to
 * tera, three significant digits, rounding across a prefix, where the
 * prefix goes, zero and non-finite values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report/si.h"

static void expect(double v, const char *unit, const char *want)
{
    char buf[48];
    assert_string_equal(si_format(buf, sizeof buf, v, unit), want);
}

static void test_seconds_take_the_prefix(void **state)
{
    expect(250e-6, "s", "250 µs");
    expect(1.5e-3, "s", "1.5 ms");
    expect(2, "s", "2 s");
    expect(12.34e-9, "s", "12.3 ns");
    expect(0.1e-9, "s", "0.1 ns"); /* below nano: no smaller prefix */
    expect(4096, "B", "4.1 kB");
}

static void test_other_units_keep_the_prefix_on_the_number(void **state)
{
    expect(12345, "msg/s", "12.3k msg/s");
    expect(400000, "", "400k");
    expect(2.5e6, "", "2.5M");
    expect(7.2e9, "req/s", "7.2G req/s");
    expect(999, "", "999");
    expect(-1500, "", "-1.5k");
    expect(0.25, "", "250m");
}

static void test_rounding_moves_to_the_next_prefix(void **state)
{
    expect(999.7, "", "1k");
    expect(999.7e-6, "s", "1 ms");
    expect(999.4, "", "999");
}

static void test_zero_and_non_finite(void **state)
{
    expect(0, "s", "0 s");
    expect(0, "", "0");
    expect(NAN, "s", "–");
    expect(INFINITY, "", "–");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seconds_take_the_prefix),
        cmocka_unit_test(test_other_units_keep_the_prefix_on_the_number),
        cmocka_unit_test(test_rounding_moves_to_the_next_prefix),
        cmocka_unit_test(test_zero_and_non_finite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
