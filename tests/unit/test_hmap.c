/* test_hmap.c - unit tests for the open-addressing hash map (hmap.c):
 * put/get/replace/delete at scale, backward-shift deletion against a
 * reference model, iteration with deletion, the growth rule (doubling,
 * then by half: large tables between 1/2 and 3/4 full) and awkward keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/hmap.h"
#include "test_rng.h"

#define NKEYS 100000

/* An entry's home slot: its hash scaled to the table. */
static uint32_t home_of(const struct hmap *m, uint32_t hash)
{
    return (uint32_t)(((uint64_t)hash * m->cap) >> 32);
}

/* Every entry must be reachable from its home slot: no empty slot may lie
 * between the two, which is what backward-shift deletion has to preserve. */
static void check_invariants(const struct hmap *m)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->cap; i++) {
        const struct hmap_slot *s = &m->slots[i];
        if (!s->key)
            continue;
        n++;
        assert_int_equal(s->hash, hmap_hash(s->key, s->klen));
        for (uint32_t j = home_of(m, s->hash); j != i; j = j + 1 == m->cap ? 0 : j + 1)
            assert_non_null(m->slots[j].key);
    }
    assert_int_equal(n, m->count);
    assert_true((uint64_t)m->count * 4 <= (uint64_t)m->cap * 3);
}

static void test_empty(void **state)
{
    struct hmap m = {0};
    size_t it = 0;
    assert_null(hmap_get(&m, "a", 1));
    assert_null(hmap_del(&m, "a", 1));
    assert_null(hmap_next(&m, &it));
    assert_int_equal(hmap_count(&m), 0);
    hmap_free(&m);
    hmap_init(&m);
    assert_null(m.slots);
}

static char (*make_keys(void))[16]
{
    char (*keys)[16] = malloc(NKEYS * sizeof *keys);
    for (int i = 0; i < NKEYS; i++)
        snprintf(keys[i], sizeof keys[i], "key%d", i);
    return keys;
}

static void test_many_keys(void **state)
{
    char (*keys)[16] = make_keys();
    int *vals = malloc(NKEYS * sizeof *vals);
    struct hmap m = {0};

    for (int i = 0; i < NKEYS; i++) {
        vals[i] = i;
        assert_null(hmap_put(&m, keys[i], strlen(keys[i]), &vals[i]));
    }
    assert_int_equal(hmap_count(&m), NKEYS);
    check_invariants(&m);
    for (int i = 0; i < NKEYS; i++)
        assert_ptr_equal(hmap_get(&m, keys[i], strlen(keys[i])), &vals[i]);
    assert_null(hmap_get(&m, "key100000", 9));
    assert_null(hmap_get(&m, "key", 3));

    /* Replace every third value. */
    for (int i = 0; i < NKEYS; i += 3)
        assert_ptr_equal(hmap_put(&m, keys[i], strlen(keys[i]), &vals[(i + 1) % NKEYS]), &vals[i]);
    assert_int_equal(hmap_count(&m), NKEYS);

    /* Delete the even keys; the odd ones must all stay findable. */
    for (int i = 0; i < NKEYS; i += 2) {
        void *want = i % 3 == 0 ? &vals[(i + 1) % NKEYS] : &vals[i];
        assert_ptr_equal(hmap_del(&m, keys[i], strlen(keys[i])), want);
        assert_null(hmap_del(&m, keys[i], strlen(keys[i])));
    }
    assert_int_equal(hmap_count(&m), NKEYS / 2);
    check_invariants(&m);
    for (int i = 0; i < NKEYS; i++) {
        void *got = hmap_get(&m, keys[i], strlen(keys[i]));
        if (i % 2 == 0)
            assert_null(got);
        else
            assert_ptr_equal(got, i % 3 == 0 ? &vals[(i + 1) % NKEYS] : &vals[i]);
    }

    for (int i = 1; i < NKEYS; i += 2)
        assert_non_null(hmap_del(&m, keys[i], strlen(keys[i])));
    assert_int_equal(hmap_count(&m), 0);
    check_invariants(&m);
    hmap_free(&m);
    free(vals);
    free(keys);
}

/* Random puts and deletes over a small key space, against an array model,
 * so that tiny tables, wrap-around runs and long shifts all occur. */
static void test_random_vs_model(void **state)
{
    enum { NK = 48 };
    char keys[NK][12];
    int vals[NK];
    void *model[NK] = {0};
    struct hmap m = {0};

    rng_state = 88172645463325252ull;
    for (int i = 0; i < NK; i++) {
        snprintf(keys[i], sizeof keys[i], "%d", i);
        vals[i] = i;
    }
    for (int round = 0; round < 200000; round++) {
        int k = (int)rnd(NK);
        size_t kl = strlen(keys[k]);
        if (rnd(3) == 0) {
            assert_ptr_equal(hmap_del(&m, keys[k], kl), model[k]);
            model[k] = NULL;
        } else {
            void *v = &vals[rnd(NK)];
            assert_ptr_equal(hmap_put(&m, keys[k], kl, v), model[k]);
            model[k] = v;
        }
        if (round % 97 == 0) {
            check_invariants(&m);
            for (int i = 0; i < NK; i++)
                assert_ptr_equal(hmap_get(&m, keys[i], strlen(keys[i])), model[i]);
        }
        if (round % 5000 == 4999) { /* start again from nothing now and then */
            hmap_free(&m);
            memset(model, 0, sizeof model);
        }
    }
    hmap_free(&m);
}

/* Iterates m (keys[i] -> &vals[i] for i < n), deleting each entry that
 * del[] marks as soon as it is returned; every entry must be seen exactly
 * once and the marked ones must be gone afterwards. */
static void iterate_deleting(struct hmap *m, int n, char (*keys)[16], int *vals, const char *del)
{
    char *seen = calloc((size_t)n, 1);
    struct hmap_slot *s;
    size_t it = 0;
    int visits = 0, kept = 0;

    while ((s = hmap_next(m, &it))) {
        int i = *(int *)s->val;
        assert_true(i >= 0 && i < n);
        assert_int_equal(seen[i], 0);
        assert_ptr_equal(s->key, keys[i]);
        seen[i] = 1;
        visits++;
        if (del[i])
            assert_ptr_equal(hmap_del(m, keys[i], strlen(keys[i])), &vals[i]);
    }
    assert_null(hmap_next(m, &it)); /* stays finished */
    assert_int_equal(visits, n);
    check_invariants(m);
    for (int i = 0; i < n; i++) {
        assert_ptr_equal(hmap_get(m, keys[i], strlen(keys[i])), del[i] ? NULL : &vals[i]);
        kept += !del[i];
    }
    assert_int_equal(hmap_count(m), kept);
    free(seen);
}

/* Sizes from 1 up cover tables whose runs wrap around the end, where a
 * backward shift moves entries from the start of the table to its end. */
static void test_iterate_with_delete(void **state)
{
    enum { MAXN = 3000 };
    char (*keys)[16] = make_keys();
    int vals[MAXN];
    char del[MAXN];

    rng_state = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < MAXN; i++)
        vals[i] = i;
    for (int n = 1; n <= MAXN; n += n < 70 ? 1 : 97) {
        for (int mode = 0; mode < 3; mode++) {
            struct hmap m = {0};
            for (int i = 0; i < n; i++) {
                hmap_put(&m, keys[i], strlen(keys[i]), &vals[i]);
                del[i] = mode == 0 ? 0 : mode == 1 ? 1 : (char)rnd(2);
            }
            iterate_deleting(&m, n, keys, vals, del);
            if (mode == 0) { /* a plain walk first, then delete everything */
                memset(del, 1, (size_t)n);
                iterate_deleting(&m, n, keys, vals, del);
            }
            hmap_free(&m);
        }
    }
    free(keys);
}

static void test_binary_and_empty_keys(void **state)
{
    static const char zeros[64];
    static const uint8_t bin[][4] = {{'a', 0, 'b'}, {'a', 0, 'c'}, {0, 'a', 0}, {'a'}};
    int vals[128];
    struct hmap m = {0};

    /* Runs of NUL bytes differ only in length: 0..63 must be 64 keys. */
    for (int len = 0; len < 64; len++) {
        vals[len] = len;
        assert_null(hmap_put(&m, zeros, (size_t)len, &vals[len]));
    }
    for (int i = 0; i < 4; i++) {
        vals[64 + i] = 64 + i;
        assert_null(hmap_put(&m, bin[i], 3, &vals[64 + i]));
    }
    assert_null(hmap_put(&m, "a", 1, &vals[68]));
    assert_int_equal(hmap_count(&m), 69);
    for (int len = 0; len < 64; len++)
        assert_ptr_equal(hmap_get(&m, zeros, (size_t)len), &vals[len]);
    assert_ptr_equal(hmap_get(&m, "a\0b", 3), &vals[64]);
    assert_ptr_equal(hmap_get(&m, "a\0c", 3), &vals[65]);
    assert_ptr_equal(hmap_get(&m, "\0a\0", 3), &vals[66]);
    assert_ptr_equal(hmap_get(&m, "a\0\0", 3), &vals[67]);
    assert_ptr_equal(hmap_get(&m, "a", 1), &vals[68]);
    assert_null(hmap_get(&m, "a\0", 2));

    /* The empty key is an ordinary key. */
    assert_ptr_equal(hmap_get(&m, "", 0), &vals[0]);
    assert_ptr_equal(hmap_del(&m, "x", 0), &vals[0]);
    assert_null(hmap_get(&m, zeros, 0));
    assert_ptr_equal(hmap_get(&m, zeros, 1), &vals[1]);
    check_invariants(&m);
    hmap_free(&m);
}

/* Replacing also takes the new key pointer, so the old key's storage may
 * be freed with the old value. */
static void test_replace_takes_new_key(void **state)
{
    struct hmap m = {0};
    int a = 1, b = 2;
    char *k1 = strdup("topic"), *k2 = strdup("topic");

    hmap_put(&m, k1, 5, &a);
    assert_ptr_equal(hmap_put(&m, k2, 5, &b), &a);
    free(k1);
    assert_ptr_equal(hmap_get(&m, "topic", 5), &b);
    size_t it = 0;
    assert_ptr_equal(hmap_next(&m, &it)->key, k2);
    assert_ptr_equal(hmap_del(&m, "topic", 5), &b);
    free(k2);
    hmap_free(&m);
}

/* Small tables grow from two slots, doubling, and stay at or under 3/4
 * load. */
static void test_growth(void **state)
{
    char (*keys)[16] = make_keys();
    int v = 0;
    struct hmap m = {0};

    hmap_put(&m, keys[0], strlen(keys[0]), &v);
    assert_int_equal(m.cap, 2);
    hmap_put(&m, keys[1], strlen(keys[1]), &v);
    assert_int_equal(m.cap, 4);
    hmap_put(&m, keys[2], strlen(keys[2]), &v);
    assert_int_equal(m.cap, 4);
    hmap_put(&m, keys[3], strlen(keys[3]), &v);
    assert_int_equal(m.cap, 8);
    /* Replacing at the threshold does not grow. */
    hmap_put(&m, keys[4], strlen(keys[4]), &v);
    hmap_put(&m, keys[5], strlen(keys[5]), &v);
    hmap_put(&m, keys[5], strlen(keys[5]), &v);
    assert_int_equal(m.cap, 8);
    hmap_free(&m);
    free(keys);
}

/* From 1024 slots on, a table grows by half: 768 entries fill 1024 slots,
 * the 769th takes 1536, and from then on the table is between 1/2 and 3/4
 * full after every insert, at most 48 bytes of slots an entry, where
 * doubling left tables 3/8 full (64 bytes an entry). */
static void test_load_stays_between_half_and_three_quarters(void **state)
{
    char (*keys)[16] = make_keys();
    int v = 0;
    struct hmap m = {0};
    uint32_t growths = 0, cap = 0;

    for (int i = 0; i < NKEYS; i++) {
        hmap_put(&m, keys[i], strlen(keys[i]), &v);
        assert_true((uint64_t)m.count * 4 <= (uint64_t)m.cap * 3);
        if (m.cap != cap) {
            assert_int_equal(m.cap, hmap_grown_cap(cap)); /* one step at a time */
            cap = m.cap;
            growths++;
        }
        if (i == 767)
            assert_int_equal(m.cap, 1024);
        if (i == 768)
            assert_int_equal(m.cap, 1536);
        if (m.cap > 1024)
            assert_true((uint64_t)m.count * 2 >= (uint64_t)m.cap);
    }
    /* 100,000 entries land just past a growth: the figure docs/BENCHMARKS.md
     * uses, and near the worst case. */
    assert_int_equal(m.cap, 199288);
    assert_true(m.cap * sizeof(struct hmap_slot) <= 48u * NKEYS);
    assert_int_equal(growths, 23);
    check_invariants(&m);
    hmap_free(&m);
    free(keys);
}

/* Random puts and deletes over a key space large enough for the table to
 * grow through many sizes (past 1024, none a power of two) and shrink back
 * in count, against an array model, checking every entry now and then. */
static void test_random_growth_vs_model(void **state)
{
    enum { NK = 5000 };
    char (*keys)[16] = make_keys();
    int vals[8];
    void **model = calloc(NK, sizeof *model);
    struct hmap m = {0};
    uint32_t live = 0;

    rng_state = 0x2545f4914f6cdd1dull;
    for (int round = 0; round < 400000; round++) {
        int k = (int)rnd(NK);
        size_t kl = strlen(keys[k]);
        /* Phases of mostly inserts and mostly deletes. */
        bool filling = (round / 50000) % 2 == 0;
        if (rnd(10) < (filling ? 2u : 7u)) {
            assert_ptr_equal(hmap_del(&m, keys[k], kl), model[k]);
            live -= model[k] != NULL;
            model[k] = NULL;
        } else {
            void *v = &vals[rnd(8)];
            assert_ptr_equal(hmap_put(&m, keys[k], kl, v), model[k]);
            live += model[k] == NULL;
            model[k] = v;
        }
        assert_int_equal(hmap_count(&m), live);
        if (round % 9973 == 0) {
            check_invariants(&m);
            for (int i = 0; i < NK; i++)
                assert_ptr_equal(hmap_get(&m, keys[i], strlen(keys[i])), model[i]);
        }
    }
    check_invariants(&m);
    hmap_free(&m);
    free(model);
    free(keys);
}

/* A weak hash would pile sequential keys into long runs; require the mean
 * probe distance of a full table to stay small. */
static void test_hash_spread(void **state)
{
    char (*keys)[16] = make_keys();
    int v = 0;
    struct hmap m = {0};
    uint64_t dist = 0;

    for (int i = 0; i < NKEYS; i++)
        hmap_put(&m, keys[i], strlen(keys[i]), &v);
    for (uint32_t i = 0; i < m.cap; i++)
        if (m.slots[i].key)
            dist += (i + m.cap - home_of(&m, m.slots[i].hash)) % m.cap;
    assert_true(dist < 3 * (uint64_t)NKEYS);
    assert_int_not_equal(hmap_hash("a", 1), hmap_hash("b", 1));
    assert_int_equal(hmap_hash("abc", 3), hmap_hash("abcd", 3));
    hmap_free(&m);
    free(keys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_random_vs_model),
        cmocka_unit_test(test_iterate_with_delete),
        cmocka_unit_test(test_binary_and_empty_keys),
        cmocka_unit_test(test_replace_takes_new_key),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_load_stays_between_half_and_three_quarters),
        cmocka_unit_test(test_random_growth_vs_model),
        cmocka_unit_test(test_hash_spread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
