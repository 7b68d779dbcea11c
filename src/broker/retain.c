/* retain.c - the retained-message store (see retain.h).
 *
 * Nodes have no parent pointer: clearing finds the chain of nodes to free on
 * its way down instead. Matching is not on the PUBLISH path (it runs once
 * per SUBSCRIBE filter), so it may allocate: it keeps an explicit stack of
 * the nodes whose children a wildcard is listing, since a recursive walk
 * could go 65536 levels deep.
 */
#include "broker/retain.h"

#include <assert.h>
#include <string.h>

#include "core/hmap.h"
#include "core/mem.h"
#include "mqtt/mqtt_topic.h"

struct rnode {
    struct hmap children; /* keys point into the children's level[] */
    void *value;          /* NULL if no message is retained here */
    size_t size;          /* value's, for retain_bytes() */
    uint16_t len;         /* of level; an MQTT string has at most 65535 bytes */
    char level[];
};

struct retain {
    struct rnode *root; /* the level above the first: never holds a value */
    retain_release_fn release;
    size_t count, bytes;
};

struct retain *retain_new(retain_release_fn release)
{
    assert(release);
    struct retain *r = mem_calloc(1, sizeof *r);
    r->root = mem_calloc(1, sizeof *r->root);
    r->release = release;
    return r;
}

void retain_free(struct retain *r)
{
    /* Values are released as their nodes are queued, which frees the value
     * field to serve as the to-do link: no recursion for deep trees. */
    struct rnode *todo = r->root;
    while (todo) {
        struct rnode *n = todo;
        struct hmap_slot *s;
        size_t it = 0;

        todo = n->value;
        while ((s = hmap_next(&n->children, &it))) {
            struct rnode *c = s->val;
            if (c->value)
                r->release(c->value);
            c->value = todo;
            todo = c;
        }
        hmap_free(&n->children);
        mem_free(n);
    }
    mem_free(r);
}

static struct rnode *child_add(struct rnode *n, const uint8_t *lv, size_t len)
{
    assert(len <= UINT16_MAX);
    struct rnode *c = mem_calloc(1, sizeof *c + len);
    c->len = (uint16_t)len;
    memcpy(c->level, lv, len);
    hmap_put(&n->children, c->level, len, c);
    return c;
}

static struct rnode *only_child(const struct rnode *n)
{
    size_t it = 0;
    return hmap_next(&n->children, &it)->val;
}

/* Clears the value at topic and frees the nodes that leaves unused: the
 * chain below the deepest ancestor that must stay (the root, or one with a
 * value or another child). */
static void clear(struct retain *r, const uint8_t *topic, size_t len)
{
    struct rnode *n = r->root, *keep = NULL, *top = NULL;
    const uint8_t *lv;
    size_t lvlen, pos = 0;

    while (mqtt_topic_next_level(topic, len, &pos, &lv, &lvlen)) {
        struct rnode *c = hmap_get(&n->children, lv, lvlen);
        if (!c)
            return;
        if (n == r->root || n->value || hmap_count(&n->children) > 1) {
            keep = n;
            top = c;
        }
        n = c;
    }
    if (!n->value)
        return;
    r->release(n->value);
    n->value = NULL;
    r->count--;
    r->bytes -= n->size;
    if (hmap_count(&n->children))
        return;

    hmap_del(&keep->children, top->level, top->len);
    if (!hmap_count(&keep->children))
        hmap_free(&keep->children);
    for (struct rnode *c = top, *next; c; c = next) {
        next = c == n ? NULL : only_child(c);
        hmap_free(&c->children);
        mem_free(c);
    }
}

bool retain_get(const struct retain *r, const uint8_t *topic, size_t len, size_t *size)
{
    const struct rnode *n = r->root;
    const uint8_t *lv;
    size_t lvlen, pos = 0;
    while (n && mqtt_topic_next_level(topic, len, &pos, &lv, &lvlen))
        n = hmap_get(&n->children, lv, lvlen);
    if (!n || !n->value)
        return false;
    *size = n->size;
    return true;
}

void retain_set(struct retain *r, const uint8_t *topic, size_t len, void *value, size_t size)
{
    if (!value) {
        clear(r, topic, len);
        return;
    }

    struct rnode *n = r->root;
    const uint8_t *lv;
    size_t lvlen, pos = 0;
    while (mqtt_topic_next_level(topic, len, &pos, &lv, &lvlen)) {
        struct rnode *c = hmap_get(&n->children, lv, lvlen);
        n = c ? c : child_add(n, lv, lvlen);
    }
    /* Even value == n->value is released: each set hands over a
     * reference (the broker stores counted references to messages). */
    if (n->value) {
        r->release(n->value);
        r->bytes -= n->size;
    } else {
        r->count++;
    }
    n->value = value;
    n->size = size;
    r->bytes += size;
}

/* A node whose children a wildcard is listing. */
struct frame {
    const struct rnode *n;
    size_t iter; /* hmap_next() position in n->children */
    size_t pos;  /* filter position for the children's level, or ALL */
    size_t tlen; /* length of n's topic name in the buffer */
};

#define ALL SIZE_MAX /* the frame is under '#': list the whole subtree */

struct walk {
    const struct retain *r;
    const uint8_t *filter;
    size_t flen;
    retain_match_fn fn;
    void *ctx;
    uint8_t *buf; /* topic name of the node being visited */
    size_t bufcap;
    struct frame *stack;
    size_t depth, cap;
    size_t visited; /* nodes looked at: the walk's cost */
};

static void push(struct walk *w, const struct rnode *n, size_t pos, size_t tlen)
{
    if (!hmap_count(&n->children))
        return;
    if (w->depth == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 8;
        w->stack = mem_realloc(w->stack, w->cap * sizeof *w->stack);
    }
    w->stack[w->depth++] = (struct frame){.n = n, .pos = pos, .tlen = tlen};
}

/* Appends child c's level to its parent's name buf[0..tlen); returns the
 * new length. */
static size_t append(struct walk *w, const struct rnode *parent, size_t tlen, const struct rnode *c)
{
    size_t need = tlen + 1 + c->len;
    if (need > w->bufcap) {
        w->bufcap = need > 2 * w->bufcap ? need : 2 * w->bufcap;
        w->buf = mem_realloc(w->buf, w->bufcap);
    }
    if (parent != w->r->root)
        w->buf[tlen++] = '/';
    memcpy(w->buf + tlen, c->level, c->len);
    return tlen + c->len;
}

static void emit(struct walk *w, const struct rnode *n, size_t tlen)
{
    if (n->value)
        w->fn(w->ctx, w->buf, tlen, n->value);
}

/* Follows the filter from n, whose name is buf[0..tlen), through literal
 * levels, until it ends, finds nothing, or meets a wildcard (which pushes a
 * frame for the main loop). */
static void follow(struct walk *w, const struct rnode *n, size_t pos, size_t tlen)
{
    const uint8_t *lv;
    size_t lvlen;

    while (mqtt_topic_next_level(w->filter, w->flen, &pos, &lv, &lvlen)) {
        if (lvlen == 1 && lv[0] == '#') {
            emit(w, n, tlen); /* '#' also matches the parent level */
            push(w, n, ALL, tlen);
            return;
        }
        if (lvlen == 1 && lv[0] == '+') {
            push(w, n, pos, tlen);
            return;
        }
        const struct rnode *c = hmap_get(&n->children, lv, lvlen);
        w->visited++;
        if (!c)
            return;
        tlen = append(w, n, tlen, c);
        n = c;
    }
    emit(w, n, tlen);
}

size_t retain_match(const struct retain *r, const uint8_t *filter, size_t len, retain_match_fn fn,
                    void *ctx)
{
    struct walk w = {.r = r, .filter = filter, .flen = len, .fn = fn, .ctx = ctx};

    follow(&w, r->root, 0, 0);
    while (w.depth) {
        struct frame *f = &w.stack[w.depth - 1];
        struct hmap_slot *s = hmap_next(&f->n->children, &f->iter);
        if (!s) {
            w.depth--;
            continue;
        }
        const struct rnode *c = s->val;
        w.visited++;
        /* [MQTT-4.7.2-1]: a frame at the root is a first-level wildcard,
         * which must not match "$" topics. */
        if (f->n == r->root && c->len && c->level[0] == '$')
            continue;
        size_t pos = f->pos; /* f dies if push() grows the stack */
        size_t tlen = append(&w, f->n, f->tlen, c);
        if (pos == ALL) {
            emit(&w, c, tlen);
            push(&w, c, ALL, tlen);
        } else {
            follow(&w, c, pos, tlen);
        }
    }
    mem_free(w.buf);
    mem_free(w.stack);
    return w.visited;
}

size_t retain_count(const struct retain *r) { return r->count; }

size_t retain_bytes(const struct retain *r) { return r->bytes; }
