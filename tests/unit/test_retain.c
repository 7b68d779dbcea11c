/* test_retain.c - unit tests for the retained-message store (retain.c):
 * set/replace/clear with release accounting, node pruning, matching with
 * wildcards and '$' topics against mqtt_topic_match(), and deep topics.
 *
 * The .c file is included so that the tests can count the nodes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broker/retain.c"
#include "test_rng.h"

#define S(str) (const uint8_t *)(str), strlen(str)

/* Values are slots of this array; release counts per slot. */
#define NVALUES 200000
static unsigned char released[NVALUES];
static size_t nreleased;

static void *value(size_t i)
{
    assert_true(i < NVALUES);
    return &released[i];
}

static void on_release(void *v)
{
    unsigned char *p = v;
    assert_true(p >= released && p < released + NVALUES);
    (*p)++;
    nreleased++;
}

static void reset_released(void)
{
    memset(released, 0, sizeof released);
    nreleased = 0;
}

/* Node count below n; every node but the root holds a value or children. */
static size_t count_nodes(const struct rnode *n, int is_root)
{
    size_t count = 1, it = 0;
    struct hmap_slot *s;

    if (!is_root)
        assert_true(n->value || hmap_count(&n->children));
    else
        assert_null(n->value);
    if (!hmap_count(&n->children))
        assert_null(n->children.slots);
    while ((s = hmap_next(&n->children, &it))) {
        const struct rnode *c = s->val;
        assert_ptr_equal(s->key, c->level);
        count += count_nodes(c, 0);
    }
    return count;
}

static size_t store_nodes(const struct retain *r) { return count_nodes(r->root, 1); }

struct found {
    void *value;
    char topic[64];
};

struct finds {
    struct found *v;
    size_t n, cap;
};

static void on_match(void *ctx, const uint8_t *topic, size_t len, void *v)
{
    struct finds *f = ctx;
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 16;
        f->v = realloc(f->v, f->cap * sizeof *f->v);
    }
    assert_true(len < sizeof f->v[0].topic);
    f->v[f->n].value = v;
    memcpy(f->v[f->n].topic, topic, len);
    f->v[f->n].topic[len] = '\0';
    f->n++;
}

static int found_cmp(const void *a, const void *b)
{
    const struct found *x = a, *y = b;
    return strcmp(x->topic, y->topic);
}

static void match_into(const struct retain *r, const char *filter, struct finds *f)
{
    f->n = 0;
    retain_match(r, S(filter), on_match, f);
    if (f->n) /* else v may be NULL, which qsort() must not see */
        qsort(f->v, f->n, sizeof *f->v, found_cmp);
}

static void test_set_replace_clear(void **state)
{
    struct retain *r = retain_new(on_release);
    reset_released();

    retain_set(r, S("a/b"), value(1), 1);
    assert_int_equal(retain_count(r), 1);
    retain_set(r, S("a/b"), value(2), 1);
    assert_int_equal(released[1], 1);
    assert_int_equal(released[2], 0);
    /* Setting the same value again hands over a second reference, and the
     * first is given back. */
    retain_set(r, S("a/b"), value(2), 1);
    assert_int_equal(released[2], 1);
    assert_int_equal(retain_count(r), 1);
    assert_int_equal(store_nodes(r), 3);
    retain_set(r, S("a/b"), NULL, 0);
    assert_int_equal(released[2], 2);
    assert_int_equal(retain_count(r), 0);
    assert_int_equal(store_nodes(r), 1);

    retain_set(r, S("a/b/c"), NULL, 0); /* clearing what is not there */
    retain_set(r, S("x"), NULL, 0);
    assert_int_equal(nreleased, 3);

    retain_set(r, S("a"), value(3), 1);
    retain_set(r, S("a/b/c"), value(4), 1);
    assert_int_equal(store_nodes(r), 4);
    retain_set(r, S("a/b"), NULL, 0); /* a node without a value */
    assert_int_equal(store_nodes(r), 4);
    assert_int_equal(nreleased, 3);
    retain_set(r, S("a/b/c"), NULL, 0);
    assert_int_equal(store_nodes(r), 2); /* b and c freed, a keeps its value */
    retain_set(r, S("a/b/d"), value(5), 1);
    retain_set(r, S("a/b/e"), value(6), 1);
    retain_set(r, S("a"), NULL, 0);
    assert_int_equal(store_nodes(r), 5); /* a stays for its children */
    retain_set(r, S("a/b/d"), NULL, 0);
    assert_int_equal(store_nodes(r), 4); /* b has another child */
    retain_set(r, S("a/b/e"), NULL, 0);
    assert_int_equal(store_nodes(r), 1);
    assert_int_equal(retain_count(r), 0);
    assert_int_equal(nreleased, 7);

    retain_set(r, S("p/q"), value(7), 1);
    retain_set(r, S("p"), value(8), 1);
    retain_free(r); /* releases what is left */
    assert_int_equal(nreleased, 9);
    for (size_t i = 1; i <= 8; i++)
        assert_int_equal(released[i], i == 2 ? 2 : 1);
}

/* retain_bytes follows sets, replacements and clears; retain_get finds
 * exactly the topics that hold a value. */
static void test_bytes_and_get(void **state)
{
    struct retain *r = retain_new(on_release);
    size_t size = 0;
    reset_released();

    assert_false(retain_get(r, S("a"), &size));
    retain_set(r, S("a/b"), value(1), 100);
    retain_set(r, S("a"), value(2), 20);
    assert_int_equal(retain_bytes(r), 120);
    assert_true(retain_get(r, S("a/b"), &size));
    assert_int_equal(size, 100);
    assert_false(retain_get(r, S("a/b/c"), &size));
    assert_false(retain_get(r, S("a/c"), &size));
    retain_set(r, S("a/b"), value(3), 7); /* a smaller replacement */
    assert_int_equal(retain_bytes(r), 27);
    assert_true(retain_get(r, S("a/b"), &size));
    assert_int_equal(size, 7);
    retain_set(r, S("a/b"), NULL, 0);
    assert_int_equal(retain_bytes(r), 20);
    assert_false(retain_get(r, S("a/b"), &size));
    retain_set(r, S("x"), NULL, 0); /* clearing nothing changes nothing */
    assert_int_equal(retain_bytes(r), 20);
    retain_set(r, S("a"), NULL, 0);
    assert_int_equal(retain_bytes(r), 0);
    assert_int_equal(retain_count(r), 0);
    retain_free(r);
    assert_int_equal(nreleased, 3);
}

static const char *const topics[] = {
    "a", "a/b", "a/b/c", "a/c", "b", "/", "//", "/a", "a/", "a//c", "$SYS", "$SYS/x",
    "$SYS/x/y", "$", "x$", "a/$b", "sport/tennis/player1", "sport/tennis/player1/ranking",
    "sport/tennis/player1/score/wimbledon", "\xc3\xa9/\xc3\xbc",
};
#define NTOPICS (sizeof topics / sizeof topics[0])

static const char *const filters[] = {
    "#", "+", "a", "a/#", "a/+", "a/+/c", "+/+", "+/#", "/#", "/+", "+/", "//", "$SYS/#",
    "$SYS/+", "$SYS", "+/x", "$", "a/$b", "+/$b", "sport/tennis/player1/#", "sport/+",
    "+/+/+", "+/+/#", "a//+", "+//c", "\xc3\xa9/+", "nothing", "a/b/c/d", "x$",
};
#define NFILTERS (sizeof filters / sizeof filters[0])

/* Every filter against a store of every topic: the matches are exactly the
 * topics mqtt_topic_match() accepts, each with its own full name. */
static void test_match_table(void **state)
{
    struct retain *r = retain_new(on_release);
    struct finds f = {0};
    reset_released();

    for (size_t i = 0; i < NTOPICS; i++)
        retain_set(r, S(topics[i]), value(i), 1);
    assert_int_equal(retain_count(r), NTOPICS);
    for (size_t i = 0; i < NFILTERS; i++) {
        assert_true(mqtt_topic_filter_valid(S(filters[i])));
        match_into(r, filters[i], &f);
        size_t want = 0;
        for (size_t j = 0; j < NTOPICS; j++)
            want += mqtt_topic_match(S(filters[i]), S(topics[j]));
        if (f.n != want)
            fail_msg("filter \"%s\": %zu matches, want %zu", filters[i], f.n, want);
        for (size_t k = 0; k < f.n; k++) {
            size_t j = (size_t)((unsigned char *)f.v[k].value - released);
            assert_string_equal(f.v[k].topic, topics[j]);
            assert_true(mqtt_topic_match(S(filters[i]), S(topics[j])));
        }
    }
    match_into(r, "#", &f);
    assert_int_equal(f.n, NTOPICS - 4); /* not the three "$SYS" ones and "$" */
    match_into(r, "$SYS/#", &f);
    assert_int_equal(f.n, 3);
    assert_string_equal(f.v[0].topic, "$SYS");
    retain_free(r);
    assert_int_equal(nreleased, NTOPICS);
    free(f.v);
}

/* Random topics set and cleared over a small alphabet with '$' and empty
 * levels, and random filters, against a brute-force scan of a model. */
static void random_string(char *out, int wild)
{
    static const char *const lits[] = {"a", "b", "", "$a", "ab"};
    size_t len = 0;
    while (len == 0) {
        int levels = 1 + (int)rnd(4);
        for (int i = 0; i < levels; i++) {
            const char *lv = lits[rnd(5)];
            if (i)
                out[len++] = '/';
            if (wild && i == levels - 1 && rnd(4) == 0)
                lv = "#";
            else if (wild && rnd(3) == 0)
                lv = "+";
            memcpy(out + len, lv, strlen(lv));
            len += strlen(lv);
        }
    }
    out[len] = '\0';
}

static void test_random_vs_brute_force(void **state)
{
    enum { MAXT = 400 };
    struct {
        char topic[24];
        void *value;
    } model[MAXT];
    struct finds f = {0};
    char s[24];
    size_t next_value = 0;

    rng_state = 0x853c49e6748fea9bull;
    reset_released();
    for (int round = 0; round < 10; round++) {
        struct retain *r = retain_new(on_release);
        size_t n = 0;
        for (int op = 0; op < 3000; op++) {
            random_string(s, 0);
            size_t i = 0;
            while (i < n && strcmp(model[i].topic, s) != 0)
                i++;
            if (rnd(100) < 60) {
                void *v = value(next_value++);
                retain_set(r, S(s), v, 1);
                if (i == n)
                    memcpy(model[n++].topic, s, sizeof s);
                model[i].value = v;
            } else {
                retain_set(r, S(s), NULL, 0);
                if (i < n)
                    model[i] = model[--n];
            }
            assert_int_equal(retain_count(r), n);
            assert_int_equal(retain_bytes(r), n);
            assert_int_equal(nreleased, next_value - n);

            random_string(s, 1);
            match_into(r, s, &f);
            size_t want = 0;
            for (size_t j = 0; j < n; j++) {
                if (!mqtt_topic_match(S(s), S(model[j].topic)))
                    continue;
                want++;
                size_t k = 0;
                while (k < f.n && f.v[k].value != model[j].value)
                    k++;
                if (k == f.n)
                    fail_msg("filter \"%s\" missed \"%s\"", s, model[j].topic);
                assert_string_equal(f.v[k].topic, model[j].topic);
            }
            assert_int_equal(f.n, want);
            if (op % 100 == 0)
                store_nodes(r);
        }
        while (n > 0) {
            n--;
            retain_set(r, S(model[n].topic), NULL, 0);
        }
        assert_int_equal(store_nodes(r), 1);
        retain_free(r);
        assert_int_equal(nreleased, next_value);
    }
    for (size_t i = 0; i < next_value; i++)
        assert_int_equal(released[i], 1);
    free(f.v);
}

static uint8_t *repeat_levels(const char *lv, size_t n, size_t *len)
{
    size_t ll = strlen(lv);
    uint8_t *s = malloc(n * (ll + 1));
    *len = 0;
    for (size_t i = 0; i < n; i++) {
        if (i)
            s[(*len)++] = '/';
        memcpy(s + *len, lv, ll);
        *len += ll;
    }
    return s;
}

struct deep_find {
    size_t n, len;
};

static void on_deep(void *ctx, const uint8_t *topic, size_t len, void *v)
{
    struct deep_find *d = ctx;
    d->n++;
    d->len = len;
}

/* Wildcard walks over a 30000-level topic and a 65536-level one use the
 * heap, not the C stack, and rebuild the full names. */
static void test_deep(void **state)
{
    enum { DEPTH = 30000 };
    struct retain *r = retain_new(on_release);
    size_t alen, plen, slen;
    uint8_t *as = repeat_levels("a", DEPTH, &alen);
    uint8_t *plus = repeat_levels("+", DEPTH, &plen);
    uint8_t *slashes = repeat_levels("", 65536, &slen);
    struct deep_find d;
    reset_released();

    retain_set(r, as, alen, value(1), 1);
    retain_set(r, slashes, slen, value(2), 1);
    retain_set(r, as, 1, value(3), 1); /* "a" */

    d = (struct deep_find){0};
    retain_match(r, S("#"), on_deep, &d);
    assert_int_equal(d.n, 3);
    d = (struct deep_find){0};
    retain_match(r, plus, plen, on_deep, &d);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.len, alen);
    d = (struct deep_find){0};
    retain_match(r, as, alen, on_deep, &d);
    assert_int_equal(d.n, 1);
    d = (struct deep_find){0};
    retain_match(r, slashes, slen, on_deep, &d);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.len, slen);
    d = (struct deep_find){0};
    retain_match(r, S("/#"), on_deep, &d);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.len, slen);

    retain_set(r, as, alen, NULL, 0); /* prunes back to "a" */
    assert_int_equal(retain_count(r), 2);
    d = (struct deep_find){0};
    retain_match(r, S("a/#"), on_deep, &d);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.len, 1);
    retain_free(r);
    assert_int_equal(nreleased, 3);
    free(as);
    free(plus);
    free(slashes);
}

/* A wildcard level lists every child; a literal one finds one of 100000. */
static void test_many(void **state)
{
    enum { N = 100000 };
    struct retain *r = retain_new(on_release);
    struct finds f = {0};
    char t[48];
    reset_released();

    for (int i = 0; i < N; i++) {
        snprintf(t, sizeof t, "bench/%d/data", i);
        retain_set(r, S(t), value((size_t)i), 1);
    }
    match_into(r, "bench/+/data", &f);
    assert_int_equal(f.n, N);
    match_into(r, "bench/77777/data", &f);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.v[0].topic, "bench/77777/data");
    match_into(r, "bench/77777", &f);
    assert_int_equal(f.n, 0);
    match_into(r, "bench/#", &f);
    assert_int_equal(f.n, N);
    retain_free(r);
    assert_int_equal(nreleased, N);
    free(f.v);
}

/* retain_match's cost: the nodes its walk looked at, wildcards listing
 * children and literals looked up, found or not. */
static void test_match_cost(void **state)
{
    struct retain *r = retain_new(on_release);
    struct finds f = {0};
    char t[16];
    reset_released();

    for (int i = 0; i < 100; i++) {
        snprintf(t, sizeof t, "a/%d", i);
        retain_set(r, S(t), value((size_t)i), 1);
    }
    retain_set(r, S("b/x"), value(100), 1);
    assert_int_equal(retain_match(r, S("a/5"), on_match, &f), 2);       /* a, 5 */
    assert_int_equal(retain_match(r, S("a/none"), on_match, &f), 2);    /* a, none */
    assert_int_equal(retain_match(r, S("a/+"), on_match, &f), 1 + 100); /* a, its children */
    assert_int_equal(retain_match(r, S("+/x"), on_match, &f), 4);       /* a, a/x, b, b/x */
    assert_int_equal(retain_match(r, S("#"), on_match, &f), 103);       /* every node */
    assert_int_equal(retain_match(r, S("c/#"), on_match, &f), 1);
    assert_int_equal(f.n, 1 + 100 + 1 + 101);
    retain_free(r);
    free(f.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_replace_clear),
        cmocka_unit_test(test_bytes_and_get),
        cmocka_unit_test(test_match_table),
        cmocka_unit_test(test_random_vs_brute_force),
        cmocka_unit_test(test_deep),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_match_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
