/* test_interest.c - unit tests for a node's interest table
 * (cluster/interest.c): a filter's first subscriber opens, its last
 * closes, others in between change nothing; filters are told apart by
 * every byte; a random sequence of adds and removes agrees with a plain
 * count per filter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/interest.h"
#include "test_rng.h"

#define S(lit) (const uint8_t *)(lit), (sizeof(lit) - 1)

static void count_cleared(struct interest_entry *e, void *ctx)
{
    (*(unsigned *)ctx)++;
    interest_entry_free(e);
}

static void test_first_and_last(void **state)
{
    unsigned cleared = 0;
    struct interest t = {0};
    bool first;
    struct interest_entry *e = interest_add(&t, S("a/+"), &first);
    assert_true(first);
    assert_int_equal(e->refs, 1);
    e->handle[0] = &t; /* what the caller opened */
    assert_ptr_equal(interest_add(&t, S("a/+"), &first), e);
    assert_false(first);
    assert_ptr_equal(interest_add(&t, S("a/+"), &first)->handle[0], &t);
    assert_int_equal(interest_count(&t), 1);
    assert_null(interest_remove(&t, S("a/+")));
    assert_null(interest_remove(&t, S("a/+")));
    assert_ptr_equal(interest_remove(&t, S("a/+")), e); /* the last one: close */
    assert_int_equal(interest_count(&t), 0);
    interest_entry_free(e);
    assert_null(interest_remove(&t, S("a/+"))); /* not held */
    e = interest_add(&t, S("a/+"), &first);
    assert_true(first); /* opened again */
    assert_null(e->handle[0]);
    interest_clear(&t, count_cleared, &cleared);
}

static void test_distinct_filters(void **state)
{
    unsigned cleared = 0;
    struct interest t = {0};
    bool first;
    interest_add(&t, S("a/#"), &first);
    assert_true(first);
    interest_add(&t, S("a/#/"), &first);
    assert_true(first);
    interest_add(&t, S("a"), &first);
    assert_true(first);
    interest_add(&t, S("$share/g/a/#"), &first);
    assert_true(first);
    assert_int_equal(interest_count(&t), 4);
    struct interest_entry *e = interest_remove(&t, S("a"));
    assert_non_null(e);
    assert_memory_equal(e->filter, "a", 1);
    interest_entry_free(e);
    assert_int_equal(interest_count(&t), 3);
    interest_clear(&t, count_cleared, &cleared);
    assert_int_equal(cleared, 3);
    assert_int_equal(interest_count(&t), 0);
}

/* Adds and removes at random over a few filters: an entry comes back from
 * remove exactly when the model's count drops to 0, and add says first
 * exactly when it was 0. */
static void test_property_model(void **state)
{
    enum { FILTERS = 8, STEPS = 20000 };
    static const char *const names[FILTERS] = {"a", "a/b", "a/+", "a/#", "#", "+/+", "$x/#", "a//"};
    unsigned model[FILTERS] = {0};
    struct interest t = {0};
    for (int i = 0; i < STEPS; i++) {
        unsigned f = rnd(FILTERS);
        const uint8_t *p = (const uint8_t *)names[f];
        size_t len = strlen(names[f]);
        if (rnd(2)) {
            bool first;
            struct interest_entry *e = interest_add(&t, p, len, &first);
            assert_int_equal(first, model[f] == 0);
            assert_int_equal(e->refs, ++model[f]);
        } else {
            struct interest_entry *e = interest_remove(&t, p, len);
            if (model[f] == 0) {
                assert_null(e);
                continue;
            }
            model[f]--;
            assert_int_equal(e != NULL, model[f] == 0);
            if (e)
                interest_entry_free(e);
        }
        unsigned held = 0;
        for (unsigned k = 0; k < FILTERS; k++)
            held += model[k] > 0;
        assert_int_equal(interest_count(&t), held);
    }
    unsigned cleared = 0, held = 0;
    for (unsigned k = 0; k < FILTERS; k++)
        held += model[k] > 0;
    interest_clear(&t, count_cleared, &cleared);
    assert_int_equal(cleared, held);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_and_last),
        cmocka_unit_test(test_distinct_filters),
        cmocka_unit_test(test_property_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
