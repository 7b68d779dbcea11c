/* test_kv_sess.c - unit tests for the session-owner records of the
 * cluster's KV bucket (cluster/kv_sess.c): "1 EPOCH ORIGIN NODE" round
 * trips, and what kv_sess_encode never writes is refused (another
 * version, a zero or padded epoch, a short or upper-case origin, an empty
 * or spaced node, a NUL, a record too long).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/kv_sess.h"

#define ORIGIN "0123456789abcdef"

static void test_round_trip(void **state)
{
    char v[KV_SESS_VALUE_MAX];
    struct kv_sess_rec r;
    const uint64_t epochs[] = {1, 2, 99, UINT64_MAX};
    for (size_t i = 0; i < sizeof epochs / sizeof epochs[0]; i++) {
        size_t n = kv_sess_encode(v, epochs[i], ORIGIN, "host-a:1883");
        assert_int_not_equal(n, 0);
        assert_int_equal(kv_sess_decode(v, n, &r), 0);
        assert_true(r.epoch == epochs[i]);
        assert_string_equal(r.origin, ORIGIN);
        assert_string_equal(r.node, "host-a:1883");
    }
    assert_int_equal(kv_sess_encode(v, 7, ORIGIN, "n"), strlen("1 7 " ORIGIN " n"));
    assert_string_equal(v, "1 7 " ORIGIN " n");
}

static void test_refused(void **state)
{
    static const char *const bad[] = {
        "2 7 " ORIGIN " n",        /* another version */
        "1 0 " ORIGIN " n",        /* epochs start at 1 */
        "1 07 " ORIGIN " n",       /* leading zero */
        "1 -7 " ORIGIN " n",
        "1 18446744073709551616 " ORIGIN " n", /* over 64 bits */
        "1 7 0123456789abcde n",   /* short origin */
        "1 7 0123456789ABCDEF n",  /* upper case */
        "1 7 " ORIGIN " ",         /* no node */
        "1 7 " ORIGIN " a b",      /* a node of two words */
        ("1 7 " ORIGIN),           /* no node, no space before it */
        "1 7",
        "",
    };
    struct kv_sess_rec r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(kv_sess_decode(bad[i], strlen(bad[i]), &r), -1);
    const char nul[] = "1 7 " ORIGIN " a\0b";
    assert_int_equal(kv_sess_decode(nul, sizeof nul - 1, &r), -1);
    char longer[KV_SESS_VALUE_MAX + 8];
    memset(longer, 'n', sizeof longer);
    memcpy(longer, "1 7 " ORIGIN " ", 21);
    assert_int_equal(kv_sess_decode(longer, sizeof longer, &r), -1);
    char v[KV_SESS_VALUE_MAX];
    char node[KV_SESS_VALUE_MAX];
    memset(node, 'n', sizeof node - 1);
    node[sizeof node - 1] = '\0';
    assert_int_equal(kv_sess_encode(v, 7, ORIGIN, node), 0); /* does not fit */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
