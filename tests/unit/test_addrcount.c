/* test_addrcount.c - unit tests for the per-address connection counts
 * (addrcount.c): keys of both families, the limit, entries freed at zero,
 * and many addresses against a model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cmocka.h>

#include "core/addrcount.h"
#include "test_rng.h"

static void key4(const char *ip, uint8_t key[ADDRCOUNT_KEY_LEN])
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_port = htons(1234);
    assert_int_equal(inet_pton(AF_INET, ip, &in->sin_addr), 1);
    assert_true(addrcount_key(&ss, key));
}

static void key6(const char *ip, uint8_t key[ADDRCOUNT_KEY_LEN])
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;
    in->sin6_family = AF_INET6;
    in->sin6_port = htons(99);
    assert_int_equal(inet_pton(AF_INET6, ip, &in->sin6_addr), 1);
    assert_true(addrcount_key(&ss, key));
}

static void test_keys(void **state)
{
    uint8_t a[ADDRCOUNT_KEY_LEN], b[ADDRCOUNT_KEY_LEN];
    key4("127.0.0.1", a);
    key6("::ffff:127.0.0.1", b); /* the same address over an IPv6 socket */
    assert_memory_equal(a, b, ADDRCOUNT_KEY_LEN);
    key4("127.0.0.2", b);
    assert_memory_not_equal(a, b, ADDRCOUNT_KEY_LEN);
    key6("::1", b);
    assert_memory_not_equal(a, b, ADDRCOUNT_KEY_LEN);
    struct sockaddr_storage un = {.ss_family = AF_UNIX};
    assert_false(addrcount_key(&un, a));
}

static void test_limit_and_release(void **state)
{
    struct addrcount t = {0};
    uint8_t a[ADDRCOUNT_KEY_LEN], b[ADDRCOUNT_KEY_LEN];
    key4("10.0.0.1", a);
    key4("10.0.0.2", b);
    assert_true(addrcount_take(&t, a, 2));
    assert_true(addrcount_take(&t, a, 2));
    assert_false(addrcount_take(&t, a, 2)); /* at the limit: nothing counted */
    assert_int_equal(addrcount_get(&t, a), 2);
    assert_true(addrcount_take(&t, b, 2)); /* others are not affected */
    assert_int_equal(addrcount_addresses(&t), 2);
    addrcount_give(&t, a);
    assert_true(addrcount_take(&t, a, 2)); /* a slot came free */
    addrcount_give(&t, a);
    addrcount_give(&t, a);
    assert_int_equal(addrcount_get(&t, a), 0);
    assert_int_equal(addrcount_addresses(&t), 1); /* freed at zero */
    assert_false(addrcount_take(&t, a, 0));
    assert_int_equal(addrcount_addresses(&t), 1);
    addrcount_free(&t); /* b's entry is still there */
    assert_int_equal(addrcount_addresses(&t), 0);
}

/* Random takes and gives over a few hundred addresses against an array. */
static void test_against_model(void **state)
{
    enum { NADDR = 300, LIMIT = 5, STEPS = 200000 };
    static unsigned model[NADDR];
    struct addrcount t = {0};
    rng_state = 42;
    for (int i = 0; i < STEPS; i++) {
        unsigned a = rnd(NADDR);
        uint8_t key[ADDRCOUNT_KEY_LEN] = {0};
        memcpy(key, &a, sizeof a);
        if (rnd(2)) {
            assert_int_equal(addrcount_take(&t, key, LIMIT), model[a] < LIMIT);
            model[a] += model[a] < LIMIT;
        } else if (model[a]) {
            addrcount_give(&t, key);
            model[a]--;
        }
        assert_int_equal(addrcount_get(&t, key), model[a]);
    }
    uint32_t live = 0;
    for (unsigned a = 0; a < NADDR; a++)
        live += model[a] > 0;
    assert_int_equal(addrcount_addresses(&t), live);
    addrcount_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_limit_and_release),
        cmocka_unit_test(test_against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
