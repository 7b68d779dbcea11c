/* subtree.c - the subscription tree (see subtree.h).
 *
 * Every node points to its parent, so that subtree_match() can walk the
 * tree depth-first with neither a stack nor recursion: a topic may have
 * 65536 levels and a filter as many '+', and the walk runs on every PUBLISH,
 * where it must not allocate. The parent pointer also lets remove climb back
 * up freeing the nodes it leaves empty.
 */
#include "broker/subtree.h"

#include <assert.h>
#include <stdbool.h>
#include <string.h>

#include "core/hmap.h"
#include "core/mem.h"
#include "mqtt/mqtt_topic.h"

struct node {
    struct node *parent;  /* NULL for the root */
    struct hmap children; /* literal levels; keys point into the children's level[] */
    struct node *plus;    /* the '+' child */
    struct node *hash;    /* the '#' child: subscribers only, never children */
    void *subs;           /* see subs_who() */
    uint32_t nsubs;
    uint16_t len;         /* of level; an MQTT string has at most 65535 bytes */
    subtree_opts opt1;    /* options of a lone subscriber */
    char level[];
};

struct subtree {
    struct node *root; /* the level above the first, never freed */
    size_t count;
};

/* Most nodes with subscribers have exactly one (a client's own topic), and
 * it lives in the node: subs is the subscriber and opt1 its options. Two or
 * more live in one block of cap pointers then cap option words, cap being
 * nsubs rounded up to a power of two: twelve bytes a subscriber at full load,
 * and no capacity field. subs_who() and subs_opt() give the two arrays
 * either way. */
#define SUB_BYTES (sizeof(void *) + sizeof(subtree_opts))

static size_t subs_cap(uint32_t n)
{
    size_t cap = 2;
    while (cap < n)
        cap <<= 1;
    return cap;
}

static subtree_opts *opts_at(void *block, size_t cap)
{
    return (subtree_opts *)((char *)block + cap * sizeof(void *));
}

static void **subs_who(struct node *n) { return n->nsubs <= 1 ? &n->subs : n->subs; }

static subtree_opts *subs_opt(struct node *n)
{
    return n->nsubs <= 1 ? &n->opt1 : opts_at(n->subs, subs_cap(n->nsubs));
}

static void subs_push(struct node *n, void *who, subtree_opts opt)
{
    uint32_t k = n->nsubs;

    if (k == 0) {
        n->subs = who;
        n->opt1 = opt;
    } else {
        if (k == 1) {
            void *first = n->subs;
            n->subs = mem_alloc(2 * SUB_BYTES);
            ((void **)n->subs)[0] = first;
            opts_at(n->subs, 2)[0] = n->opt1;
        } else if (k == subs_cap(k)) {
            n->subs = mem_realloc(n->subs, 2 * k * SUB_BYTES);
            memmove(opts_at(n->subs, 2 * k), opts_at(n->subs, k), k * sizeof(subtree_opts));
        }
        ((void **)n->subs)[k] = who;
        opts_at(n->subs, subs_cap(k + 1))[k] = opt;
    }
    n->nsubs = k + 1;
}

static void subs_del(struct node *n, uint32_t i)
{
    uint32_t k = n->nsubs;

    if (k == 1) {
        n->subs = NULL;
    } else {
        void **who = n->subs;
        size_t cap = subs_cap(k);
        subtree_opts *opt = opts_at(who, cap);

        who[i] = who[k - 1];
        opt[i] = opt[k - 1];
        if (k == 2) {
            n->subs = who[0];
            n->opt1 = opt[0];
            mem_free(who);
        } else if (subs_cap(k - 1) < cap) {
            memmove(opts_at(who, cap / 2), opt, (k - 1) * sizeof(subtree_opts));
            n->subs = mem_realloc(who, cap / 2 * SUB_BYTES);
        }
    }
    n->nsubs = k - 1;
}

static bool is_level(const uint8_t *lv, size_t len, char c) { return len == 1 && lv[0] == c; }

/* Where n keeps a wildcard child for this level, or NULL for a literal. */
static struct node **wild_slot(struct node *n, const uint8_t *lv, size_t len)
{
    if (is_level(lv, len, '+'))
        return &n->plus;
    if (is_level(lv, len, '#'))
        return &n->hash;
    return NULL;
}

static struct node *child_find(struct node *n, const uint8_t *lv, size_t len)
{
    struct node **w = wild_slot(n, lv, len);
    return w ? *w : hmap_get(&n->children, lv, len);
}

static struct node *child_add(struct node *n, const uint8_t *lv, size_t len)
{
    assert(len <= UINT16_MAX);
    struct node *c = mem_calloc(1, sizeof *c + len);
    c->parent = n;
    c->len = (uint16_t)len;
    memcpy(c->level, lv, len);

    struct node **w = wild_slot(n, lv, len);
    if (w)
        *w = c;
    else
        hmap_put(&n->children, c->level, len, c);
    return c;
}

static bool node_unused(const struct node *n)
{
    return !n->nsubs && !hmap_count(&n->children) && !n->plus && !n->hash;
}

/* Unlinks n from its parent and frees it; n must be unused. */
static void node_drop(struct node *n)
{
    struct node *p = n->parent;
    if (p->plus == n) {
        p->plus = NULL;
    } else if (p->hash == n) {
        p->hash = NULL;
    } else {
        hmap_del(&p->children, n->level, n->len);
        if (!hmap_count(&p->children))
            hmap_free(&p->children);
    }
    hmap_free(&n->children);
    mem_free(n);
}

struct subtree *subtree_new(void)
{
    struct subtree *t = mem_calloc(1, sizeof *t);
    t->root = mem_calloc(1, sizeof *t->root);
    return t;
}

/* Pushes c (if any) on subtree_free()'s to-do list, linked through parent. */
static struct node *todo_push(struct node *todo, struct node *c)
{
    if (!c)
        return todo;
    c->parent = todo;
    return c;
}

void subtree_free(struct subtree *t)
{
    /* Nothing needs the parent links any more: they become a to-do list, so
     * that freeing a deep tree needs no recursion. */
    struct node *todo = t->root;
    while (todo) {
        struct node *n = todo;
        struct hmap_slot *s;
        size_t it = 0;

        todo = todo_push(todo_push(n->parent, n->plus), n->hash);
        while ((s = hmap_next(&n->children, &it)))
            todo = todo_push(todo, s->val);
        hmap_free(&n->children);
        if (n->nsubs > 1)
            mem_free(n->subs);
        mem_free(n);
    }
    mem_free(t);
}

/* Index of subscriber in n, or n->nsubs if absent. */
static uint32_t subs_find(struct node *n, const void *subscriber)
{
    void **who = subs_who(n);
    uint32_t i = 0;
    while (i < n->nsubs && who[i] != subscriber)
        i++;
    return i;
}

int subtree_add(struct subtree *t, const uint8_t *filter, size_t len, void *subscriber,
                subtree_opts options)
{
    struct node *n = t->root;
    const uint8_t *lv;
    size_t lvlen, pos = 0;

    while (mqtt_topic_next_level(filter, len, &pos, &lv, &lvlen)) {
        struct node *c = child_find(n, lv, lvlen);
        n = c ? c : child_add(n, lv, lvlen);
    }
    uint32_t i = subs_find(n, subscriber);
    if (i < n->nsubs) {
        subs_opt(n)[i] = options;
        return 0;
    }
    subs_push(n, subscriber, options);
    t->count++;
    return 1;
}

int subtree_remove(struct subtree *t, const uint8_t *filter, size_t len, void *subscriber)
{
    struct node *n = t->root;
    const uint8_t *lv;
    size_t lvlen, pos = 0;

    while (mqtt_topic_next_level(filter, len, &pos, &lv, &lvlen))
        if (!(n = child_find(n, lv, lvlen)))
            return 0;
    uint32_t i = subs_find(n, subscriber);
    if (i == n->nsubs)
        return 0;
    subs_del(n, i);
    t->count--;
    while (n->parent && node_unused(n)) {
        struct node *p = n->parent;
        node_drop(n);
        n = p;
    }
    return 1;
}

static void emit(struct node *n, subtree_match_fn fn, void *ctx)
{
    void **who = subs_who(n);
    const subtree_opts *opt = subs_opt(n);
    for (uint32_t i = 0; i < n->nsubs; i++)
        fn(ctx, who[i], opt[i]);
}

/* Start of the topic level that ends just before at (at = its end + 1). */
static size_t level_start(const uint8_t *topic, size_t at)
{
    size_t i = at - 1;
    while (i > 0 && topic[i - 1] != '/')
        i--;
    return i;
}

/* Depth-first over the nodes the topic reaches: from each node, first the
 * literal child for the next level, then '+'; '#' children are leaves and
 * are reported from their parent. The walk keeps only (node, offset of the
 * level below it) and climbs back through parent pointers, recomputing the
 * offset by scanning back to the previous '/'. mqtt_topic_next_level() is
 * not used because it only walks forwards. */
void subtree_match(const struct subtree *t, const uint8_t *topic, size_t len, subtree_match_fn fn,
                   void *ctx)
{
    /* [MQTT-4.7.2-1]: wildcards at the first level do not match "$" topics. */
    struct node *no_wild = len > 0 && topic[0] == '$' ? t->root : NULL;
    struct node *n = t->root;
    size_t at = 0; /* offset of the level below n; len + 1 once there is none */

    for (;;) {
        if (n->hash && n != no_wild)
            emit(n->hash, fn, ctx); /* '#' also matches the parent level */
        if (at > len) {
            emit(n, fn, ctx);
        } else {
            const uint8_t *slash = memchr(topic + at, '/', len - at);
            size_t end = slash ? (size_t)(slash - topic) : len;
            struct node *c = hmap_get(&n->children, topic + at, end - at);
            if (!c && n != no_wild)
                c = n->plus;
            if (c) {
                n = c;
                at = end + 1;
                continue;
            }
        }
        /* Climb until a parent has a '+' child not yet visited: one is
         * pending exactly when we come back from a literal sibling. */
        for (;;) {
            struct node *p = n->parent;
            if (!p)
                return;
            if (n != p->plus && p->plus && p != no_wild) {
                n = p->plus; /* same level, same offset */
                break;
            }
            n = p;
            at = level_start(topic, at);
        }
    }
}

size_t subtree_count(const struct subtree *t) { return t->count; }
