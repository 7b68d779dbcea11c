/* test_hex.c - hexadecimal digits (core/hex.c): every byte value read,
 * both cases, and the digit table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/hex.h"

static void test_value_every_byte(void **state)
{
    for (int c = 0; c < 256; c++) {
        int want = -1;
        if (c >= '0' && c <= '9')
            want = c - '0';
        else if (c >= 'a' && c <= 'f')
            want = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            want = c - 'A' + 10;
        assert_int_equal(hex_value((unsigned char)c), want);
    }
}

static void test_byte(void **state)
{
    assert_int_equal(hex_byte("00"), 0);
    assert_int_equal(hex_byte("fF"), 255);
    assert_int_equal(hex_byte("2d"), 0x2d);
    assert_int_equal(hex_byte("g0"), -1);
    assert_int_equal(hex_byte("0g"), -1);
    assert_int_equal(hex_byte("\0" "0"), -1); /* stops at the first non-digit */
    char two[3] = {0};
    for (int b = 0; b < 256; b++) {
        two[0] = hex_upper[b >> 4];
        two[1] = hex_upper[b & 15];
        assert_int_equal(hex_byte(two), b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_value_every_byte),
        cmocka_unit_test(test_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
