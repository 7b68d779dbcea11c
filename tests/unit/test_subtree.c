/* test_subtree.c - unit tests for the subscription tree (subtree.c): a table
 * of filter/topic cases, randomized comparison with mqtt_topic_match() over
 * every subscription, counts, node pruning, and very deep topics.
 *
 * The .c file is included so that the tests can walk the nodes and check
 * that removal frees exactly the nodes it leaves unused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "broker/subtree.c"
#include "test_rng.h"

#define S(str) (const uint8_t *)(str), strlen(str)

/* Checks the links below n and that no node other than the root is kept
 * unused; returns the number of nodes. */
static size_t check_nodes(const struct node *n)
{
    size_t count = 1;
    struct hmap_slot *s;
    size_t it = 0;

    if (n->parent)
        assert_false(node_unused(n));
    if (n->plus) {
        assert_ptr_equal(n->plus->parent, n);
        assert_true(n->plus->len == 1 && n->plus->level[0] == '+');
        count += check_nodes(n->plus);
    }
    if (n->hash) {
        assert_ptr_equal(n->hash->parent, n);
        assert_true(n->hash->len == 1 && n->hash->level[0] == '#');
        assert_int_equal(hmap_count(&n->hash->children), 0);
        assert_null(n->hash->plus);
        assert_null(n->hash->hash);
        count += check_nodes(n->hash);
    }
    if (!hmap_count(&n->children))
        assert_null(n->children.slots); /* emptied tables are given back */
    while ((s = hmap_next(&n->children, &it))) {
        const struct node *c = s->val;
        assert_ptr_equal(c->parent, n);
        assert_ptr_equal(s->key, c->level);
        assert_int_equal(s->klen, c->len);
        count += check_nodes(c);
    }
    return count;
}

static size_t tree_nodes(const struct subtree *t) { return check_nodes(t->root); }

struct hit {
    void *sub;
    uint8_t opt;
};

struct hits {
    struct hit *v;
    size_t n, cap;
};

static void hits_add(struct hits *h, void *sub, uint8_t opt)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->v = realloc(h->v, h->cap * sizeof *h->v);
    }
    h->v[h->n++] = (struct hit){sub, opt};
}

static void on_match(void *ctx, void *sub, subtree_opts opt) { hits_add(ctx, sub, opt); }

static int hit_cmp(const void *a, const void *b)
{
    const struct hit *x = a, *y = b;
    if (x->sub != y->sub)
        return (uintptr_t)x->sub < (uintptr_t)y->sub ? -1 : 1;
    return (int)x->opt - (int)y->opt;
}

/* Sorts both sets of hits and asserts they are equal. */
static void assert_same_hits(struct hits *got, struct hits *want)
{
    assert_int_equal(got->n, want->n);
    if (!got->n)
        return; /* v may be NULL, which qsort() must not see */
    qsort(got->v, got->n, sizeof *got->v, hit_cmp);
    qsort(want->v, want->n, sizeof *want->v, hit_cmp);
    for (size_t i = 0; i < got->n; i++) {
        assert_ptr_equal(got->v[i].sub, want->v[i].sub);
        assert_int_equal(got->v[i].opt, want->v[i].opt);
    }
}

static void match_into(const struct subtree *t, const char *topic, struct hits *h)
{
    h->n = 0;
    subtree_match(t, S(topic), on_match, h);
}

static const struct {
    const char *filter, *topic;
    int match;
} cases[] = {
    {"a", "a", 1},
    {"a", "b", 0},
    {"a", "a/b", 0},
    {"a/b", "a", 0},
    {"a", "A", 0},
    {"a/b/c", "a/b/c", 1},
    {"a/b/c", "a/b/c/", 0},
    {"+", "a", 1},
    {"+", "/", 0},
    {"+", "a/b", 0},
    {"+/+", "/", 1},
    {"/+", "/", 1},
    {"+/", "/", 1},
    {"a/+", "a/", 1},
    {"a/+", "a", 0},
    {"a/+", "a/b/c", 0},
    {"+/+", "a/b", 1},
    {"+/b", "a/b", 1},
    {"+/b", "a/c", 0},
    {"a/+/c", "a/b/c", 1},
    {"a/+/c", "a/b/d", 0},
    {"a/+/c", "a//c", 1},
    {"+/+/+", "a/b/c", 1},
    {"+/+/+", "a/b", 0},
    {"#", "a", 1},
    {"#", "a/b/c", 1},
    {"#", "/", 1},
    {"#", "//", 1},
    {"a/#", "a", 1},
    {"a/#", "a/", 1},
    {"a/#", "a/b/c", 1},
    {"a/#", "b", 0},
    {"a/#", "ab", 0},
    {"a/#", "ab/c", 0},
    {"a/b/#", "a", 0},
    {"a/+/#", "a/b", 1},
    {"a/+/#", "a", 0},
    {"+/#", "a", 1},
    {"+/#", "a/b", 1},
    {"+/+/#", "a", 0},
    {"/#", "/", 1},
    {"/#", "a", 0},
    {"/#", "/a/b", 1},
    {"//", "//", 1},
    {"//", "/", 0},
    {"/", "/", 1},
    {"/", "//", 0},
    {"#", "$SYS", 0},
    {"#", "$SYS/x", 0},
    {"#", "$", 0},
    {"+", "$SYS", 0},
    {"+/x", "$SYS/x", 0},
    {"+/#", "$SYS/x", 0},
    {"$SYS", "$SYS", 1},
    {"$SYS/#", "$SYS", 1},
    {"$SYS/#", "$SYS/a/b", 1},
    {"$SYS/+", "$SYS/a", 1},
    {"$SYS/+", "$SYS", 0},
    {"a/$x", "a/$x", 1},
    {"a/+", "a/$x", 1},
    {"a/#", "a/$x", 1},
    {"+/$x", "a/$x", 1},
    {"$", "$", 1},
    {"+", "x$", 1},
    {"#", "x$/a", 1},
    {"+", "a$", 1},
    {"/+", "/$", 1},
    {"sport/tennis/player1/#", "sport/tennis/player1", 1},
    {"sport/tennis/player1/#", "sport/tennis/player1/ranking", 1},
    {"sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", 1},
    {"sport/+", "sport", 0},
    {"sport/+", "sport/", 1},
    {"+/+", "/finance", 1},
    {"/+", "/finance", 1},
    {"+", "/finance", 0},
    {"\xc3\xa9/+", "\xc3\xa9/\xc3\xbc", 1},
    {"\xc3\xa9/+", "\xc3\xa8/\xc3\xbc", 0},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Each case alone in a tree; the expectation is also checked against
 * mqtt_topic_match(), the brute-force reference of the other tests. */
static void test_cases_alone(void **state)
{
    struct hits h = {0};
    int sub;

    for (size_t i = 0; i < NCASES; i++) {
        struct subtree *t = subtree_new();
        assert_true(mqtt_topic_filter_valid(S(cases[i].filter)));
        assert_true(mqtt_topic_name_valid(S(cases[i].topic)));
        assert_int_equal(mqtt_topic_match(S(cases[i].filter), S(cases[i].topic)), cases[i].match);
        assert_int_equal(subtree_add(t, S(cases[i].filter), &sub, 7), 1);
        match_into(t, cases[i].topic, &h);
        if (h.n != (size_t)cases[i].match)
            fail_msg("filter \"%s\" topic \"%s\": %zu matches", cases[i].filter, cases[i].topic, h.n);
        if (h.n) {
            assert_ptr_equal(h.v[0].sub, &sub);
            assert_int_equal(h.v[0].opt, 7);
        }
        subtree_free(t);
    }
    free(h.v);
}

/* All cases' filters in one tree, each with its own subscriber: every
 * topic must find exactly the filters that match it. */
static void test_cases_together(void **state)
{
    struct subtree *t = subtree_new();
    static char subs[NCASES];
    struct hits got = {0}, want = {0};

    for (size_t i = 0; i < NCASES; i++)
        assert_int_equal(subtree_add(t, S(cases[i].filter), &subs[i], (uint8_t)i), 1);
    assert_int_equal(subtree_count(t), NCASES);
    tree_nodes(t);
    for (size_t i = 0; i < NCASES; i++) {
        match_into(t, cases[i].topic, &got);
        want.n = 0;
        for (size_t j = 0; j < NCASES; j++)
            if (mqtt_topic_match(S(cases[j].filter), S(cases[i].topic)))
                hits_add(&want, &subs[j], (uint8_t)j);
        assert_same_hits(&got, &want);
    }
    for (size_t i = 0; i < NCASES; i++)
        assert_int_equal(subtree_remove(t, S(cases[i].filter), &subs[i]), 1);
    assert_int_equal(subtree_count(t), 0);
    assert_int_equal(tree_nodes(t), 1);
    subtree_free(t);
    free(got.v);
    free(want.v);
}

static void test_add_replace_remove(void **state)
{
    struct subtree *t = subtree_new();
    struct hits h = {0};
    int a, b;

    assert_int_equal(subtree_add(t, S("x/y/z"), &a, 1), 1);
    assert_int_equal(subtree_add(t, S("x/y/z"), &a, 2), 0); /* replaces options */
    assert_int_equal(subtree_add(t, S("x/y/z"), &b, 3), 1);
    assert_int_equal(subtree_add(t, S("x/y"), &a, 4), 1);
    assert_int_equal(subtree_add(t, S("x/+/z"), &a, 5), 1);
    assert_int_equal(subtree_add(t, S("x/#"), &b, 6), 1);
    assert_int_equal(subtree_count(t), 5);
    assert_int_equal(tree_nodes(t), 7); /* root x y z + z # */

    match_into(t, "x/y/z", &h);
    struct hit want1[] = {{&a, 2}, {&b, 3}, {&a, 5}, {&b, 6}};
    struct hits w = {want1, 4, 4};
    assert_same_hits(&h, &w);

    assert_int_equal(subtree_remove(t, S("x/y/z"), &a), 1);
    assert_int_equal(subtree_remove(t, S("x/y/z"), &a), 0);
    assert_int_equal(subtree_remove(t, S("x/y/q"), &a), 0);   /* no such node */
    assert_int_equal(subtree_remove(t, S("x"), &a), 0);       /* node without subscribers */
    assert_int_equal(subtree_remove(t, S("x/+"), &a), 0);     /* '+' node without subscribers */
    assert_int_equal(subtree_remove(t, S("x/#"), &a), 0);     /* other subscriber */
    assert_int_equal(subtree_remove(t, S("x/y/z/w"), &b), 0); /* below a leaf */
    assert_int_equal(subtree_count(t), 4);
    assert_int_equal(tree_nodes(t), 7);

    assert_int_equal(subtree_remove(t, S("x/y/z"), &b), 1);
    assert_int_equal(tree_nodes(t), 6); /* z freed, y kept for "x/y" */
    assert_int_equal(subtree_remove(t, S("x/+/z"), &a), 1);
    assert_int_equal(tree_nodes(t), 4); /* + and its z freed */
    assert_int_equal(subtree_remove(t, S("x/y"), &a), 1);
    assert_int_equal(tree_nodes(t), 3); /* root x # */
    assert_int_equal(subtree_remove(t, S("x/#"), &b), 1);
    assert_int_equal(tree_nodes(t), 1);
    assert_int_equal(subtree_count(t), 0);
    match_into(t, "x/y/z", &h);
    assert_int_equal(h.n, 0);

    /* The tree is still usable once emptied, and frees shared nodes. */
    assert_int_equal(subtree_add(t, S("x"), &a, 9), 1);
    assert_int_equal(subtree_add(t, S("x"), &b, 9), 1);
    match_into(t, "x", &h);
    assert_int_equal(h.n, 2);
    subtree_free(t);
    free(h.v);
}

/* Many subscribers on one filter cross every power-of-two size of the
 * subscriber block, growing and shrinking, with options kept in step. */
static void test_many_subscribers(void **state)
{
    enum { N = 1000 };
    static char subs[N];
    int order[N];
    struct subtree *t = subtree_new();
    struct hits got = {0}, want = {0};

    rng_state = 12345;
    for (int i = 0; i < N; i++) {
        assert_int_equal(subtree_add(t, S("f/+"), &subs[i], (uint8_t)(i * 7)), 1);
        order[i] = i;
    }
    for (int i = N - 1; i > 0; i--) {
        int j = (int)rnd((uint32_t)i + 1), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    for (int k = 0; k < N; k++) {
        if (k % 37 == 0 || k > N - 20) {
            match_into(t, "f/g", &got);
            want.n = 0;
            for (int j = k; j < N; j++)
                hits_add(&want, &subs[order[j]], (uint8_t)(order[j] * 7));
            assert_same_hits(&got, &want);
        }
        assert_int_equal(subtree_remove(t, S("f/+"), &subs[order[k]]), 1);
    }
    assert_int_equal(tree_nodes(t), 1);
    subtree_free(t);
    free(got.v);
    free(want.v);
}

/* Random filters and topics over a small alphabet with '+', '#', '$' and
 * empty levels, checked against mqtt_topic_match() over every
 * subscription after each change. */
struct model_sub {
    char filter[24];
    void *sub;
    uint8_t opt;
};

static void random_level(char *out, size_t *len, int wild)
{
    static const char *const lits[] = {"a", "b", "", "$a", "ab"};
    const char *lv = wild && rnd(3) == 0 ? "+" : lits[rnd(5)];
    size_t n = strlen(lv);
    memcpy(out + *len, lv, n);
    *len += n;
}

/* A random filter (wild) or topic name: 1 to 4 levels, never empty. */
static void random_string(char *out, int wild)
{
    size_t len = 0;
    while (len == 0) {
        int levels = 1 + (int)rnd(4);
        for (int i = 0; i < levels; i++) {
            if (i)
                out[len++] = '/';
            if (wild && i == levels - 1 && rnd(4) == 0)
                out[len++] = '#';
            else
                random_level(out, &len, wild);
        }
    }
    out[len] = '\0';
}

static void test_random_vs_brute_force(void **state)
{
    enum { MAXSUBS = 300, NSUBSCRIBERS = 6 };
    static char subscribers[NSUBSCRIBERS];
    struct model_sub *model = calloc(MAXSUBS, sizeof *model);
    struct hits got = {0}, want = {0};
    char topic[24];

    rng_state = 0x2545f4914f6cdd1dull;
    for (int round = 0; round < 20; round++) {
        struct subtree *t = subtree_new();
        size_t n = 0;
        for (int op = 0; op < 2000; op++) {
            struct model_sub m = {.sub = &subscribers[rnd(NSUBSCRIBERS)], .opt = (uint8_t)rnd(256)};
            random_string(m.filter, 1);
            if (!mqtt_topic_filter_valid(S(m.filter)))
                fail_msg("invalid filter \"%s\"", m.filter);
            size_t i = 0;
            while (i < n && !(model[i].sub == m.sub && strcmp(model[i].filter, m.filter) == 0))
                i++;
            if (rnd(100) < 55 && n < MAXSUBS) {
                assert_int_equal(subtree_add(t, S(m.filter), m.sub, m.opt), i == n);
                model[i] = m;
                n += i == n;
            } else {
                assert_int_equal(subtree_remove(t, S(m.filter), m.sub), i < n);
                if (i < n)
                    model[i] = model[--n];
            }
            assert_int_equal(subtree_count(t), n);

            random_string(topic, 0);
            match_into(t, topic, &got);
            want.n = 0;
            for (size_t j = 0; j < n; j++)
                if (mqtt_topic_match(S(model[j].filter), S(topic)))
                    hits_add(&want, model[j].sub, model[j].opt);
            assert_same_hits(&got, &want);
            if (op % 50 == 0)
                tree_nodes(t);
        }
        while (n > 0) {
            n--;
            assert_int_equal(subtree_remove(t, S(model[n].filter), model[n].sub), 1);
        }
        assert_int_equal(tree_nodes(t), 1);
        subtree_free(t);
    }
    free(model);
    free(got.v);
    free(want.v);
}

/* Builds "x/x/.../x" with n levels of the given text into a new buffer. */
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

/* Depth costs neither stack nor recursion: 30000-level filters and a
 * 65536-level topic. */
static void test_deep(void **state)
{
    enum { DEPTH = 30000 };
    struct subtree *t = subtree_new();
    struct hits h = {0};
    size_t plen, alen, a1len, slen;
    uint8_t *plus = repeat_levels("+", DEPTH, &plen);
    uint8_t *as = repeat_levels("a", DEPTH, &alen);
    uint8_t *as1 = repeat_levels("a", DEPTH + 1, &a1len);
    uint8_t *slashes = repeat_levels("", 65536, &slen);
    int s1, s2, s3, s4;

    assert_int_equal(subtree_add(t, plus, plen, &s1, 1), 1);
    assert_int_equal(subtree_add(t, as, alen, &s2, 2), 1);
    as1[a1len - 1] = '#';
    assert_int_equal(subtree_add(t, as1, a1len, &s3, 3), 1); /* a/a/.../a/# */
    assert_int_equal(subtree_add(t, S("#"), &s4, 4), 1);

    h.n = 0;
    subtree_match(t, as, alen, on_match, &h);
    assert_int_equal(h.n, 4);
    h.n = 0;
    subtree_match(t, as, alen - 2, on_match, &h); /* one level short */
    assert_int_equal(h.n, 1);
    h.n = 0;
    subtree_match(t, slashes, slen, on_match, &h);
    assert_int_equal(h.n, 1);

    assert_int_equal(subtree_add(t, slashes, slen, &s1, 5), 1);
    h.n = 0;
    subtree_match(t, slashes, slen, on_match, &h);
    assert_int_equal(h.n, 2);
    assert_int_equal(subtree_remove(t, as, alen, &s2), 1);
    assert_int_equal(subtree_remove(t, plus, plen, &s1), 1);
    assert_int_equal(subtree_count(t), 3);
    subtree_free(t); /* frees the remaining deep chains without recursion */
    free(plus);
    free(as);
    free(as1);
    free(slashes);
    free(h.v);
}

/* Unrelated subscriptions are not visited: with 100000 of them, a topic
 * still finds exactly its own subscribers. */
static void test_many_unrelated(void **state)
{
    enum { N = 100000 };
    struct subtree *t = subtree_new();
    static char subs[N];
    struct hits h = {0};
    char f[48];

    for (int i = 0; i < N; i++) {
        snprintf(f, sizeof f, "bench/%d/data", i);
        assert_int_equal(subtree_add(t, S(f), &subs[i], 1), 1);
    }
    assert_int_equal(subtree_add(t, S("bench/+/data"), &subs[0], 2), 1);
    match_into(t, "bench/4242/data", &h);
    assert_int_equal(h.n, 2);
    match_into(t, "bench/4242", &h);
    assert_int_equal(h.n, 0);
    for (int i = 0; i < N; i += 2) {
        snprintf(f, sizeof f, "bench/%d/data", i);
        assert_int_equal(subtree_remove(t, S(f), &subs[i]), 1);
    }
    assert_int_equal(tree_nodes(t), 4 + 2 * (N / 2)); /* root bench + data, then i/data */
    match_into(t, "bench/4243/data", &h);
    assert_int_equal(h.n, 2);
    subtree_free(t);
    free(h.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases_alone),
        cmocka_unit_test(test_cases_together),
        cmocka_unit_test(test_add_replace_remove),
        cmocka_unit_test(test_many_subscribers),
        cmocka_unit_test(test_random_vs_brute_force),
        cmocka_unit_test(test_deep),
        cmocka_unit_test(test_many_unrelated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
