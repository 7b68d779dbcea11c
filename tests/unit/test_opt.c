/* test_opt.c - unit tests for option value parsing (opt.c): the spellings
 * opt_parse_uint accepts, the ones it must refuse (signs, blanks, trailing
 * text, overflow, out-of-range values), and that *out is left alone on
 * every refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/opt.h"

/* Written into *out before each refused parse; must survive it. */
#define SENTINEL UINT64_C(0xDEADBEEFCAFEF00D)

static void expect_ok(const char *arg, uint64_t min, uint64_t max, uint64_t want)
{
    uint64_t v = SENTINEL;
    if (opt_parse_uint(arg, min, max, &v) != 0)
        fail_msg("opt_parse_uint(\"%s\", %llu, %llu) refused a valid value", arg,
                 (unsigned long long)min, (unsigned long long)max);
    assert_int_equal(v, want);
}

static void expect_refused(const char *arg, uint64_t min, uint64_t max)
{
    uint64_t v = SENTINEL;
    int rc = opt_parse_uint(arg, min, max, &v);
    if (rc != -1)
        fail_msg("opt_parse_uint(\"%s\", %llu, %llu) returned %d (value %llu), want -1", arg,
                 (unsigned long long)min, (unsigned long long)max, rc, (unsigned long long)v);
    assert_true(v == SENTINEL);
}

static void test_accepts_plain_numbers(void **state)
{
    expect_ok("0", 0, 100, 0);
    expect_ok("1", 0, 100, 1);
    expect_ok("100", 0, 100, 100);
    expect_ok("65535", 0, 65535, 65535);
    expect_ok("1883", 1, 65535, 1883);
    /* Leading zeros are still a plain decimal number (not octal). */
    expect_ok("010", 0, 100, 10);
    expect_ok("0000", 0, 100, 0);
}

static void test_accepts_bounds(void **state)
{
    expect_ok("5", 5, 5, 5);
    expect_ok("7", 7, 9, 7);
    expect_ok("9", 7, 9, 9);
    expect_ok("4294967295", 0, UINT32_MAX, UINT32_MAX);
    expect_ok("4294967296", 0, UINT64_MAX, UINT64_C(4294967296));
    expect_ok("18446744073709551615", 0, UINT64_MAX, UINT64_MAX);
    expect_ok("18446744073709551615", UINT64_MAX, UINT64_MAX, UINT64_MAX);
}

static void test_refuses_out_of_range(void **state)
{
    expect_refused("65536", 0, 65535);
    expect_refused("0", 1, 65535);
    expect_refused("6", 7, 9);
    expect_refused("10", 7, 9);
    expect_refused("4294967296", 0, UINT32_MAX);
    /* One past UINT64_MAX overflows strtoull. */
    expect_refused("18446744073709551616", 0, UINT64_MAX);
    expect_refused("99999999999999999999999", 0, UINT64_MAX);
}

static void test_refuses_empty_and_garbage(void **state)
{
    expect_refused("", 0, 100);
    expect_refused("x", 0, 100);
    expect_refused("12x", 0, 100);
    expect_refused("1 ", 0, 100);
    expect_refused("1.0", 0, 100);
    expect_refused("0x10", 0, 100);
    expect_refused("1e2", 0, 1000);
}

static void test_refuses_signs(void **state)
{
    expect_refused("-1", 0, 100);
    expect_refused("+1", 0, 100);
    expect_refused("-0", 0, 100);
    /* strtoull would turn "-1" into UINT64_MAX: the widest range must refuse it too. */
    expect_refused("-1", 0, UINT64_MAX);
}

/* "No sign, no trailing text" means the whole argument is digits; strtoull
 * skips leading white space, which must not leak through. */
static void test_refuses_leading_space(void **state)
{
    expect_refused(" 1", 0, 100);
    expect_refused("\t1", 0, 100);
    expect_refused("\n1", 0, 100);
}

/* Worse: a blank hides the sign from a first-character check, and strtoull
 * negates " -1" to UINT64_MAX, which the widest range would then accept. */
static void test_refuses_blank_then_sign(void **state)
{
    expect_refused(" -1", 0, UINT64_MAX);
    expect_refused(" +1", 0, 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_plain_numbers),
        cmocka_unit_test(test_accepts_bounds),
        cmocka_unit_test(test_refuses_out_of_range),
        cmocka_unit_test(test_refuses_empty_and_garbage),
        cmocka_unit_test(test_refuses_signs),
        cmocka_unit_test(test_refuses_leading_space),
        cmocka_unit_test(test_refuses_blank_then_sign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
