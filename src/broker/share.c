/* share.c - shared subscriptions' groups and the choice of a member
 * (share.h).
 *
 * Threads: members are picked under the router's read lock, by every loop
 * at once; the round-robin cursor is the one thing a pick changes, with
 * relaxed atomic loads and stores (two loops picking at once may pick the
 * same member: the turn is fair on average, not exact), and a member's
 * connection is asked through session_online.
 */
#include "broker/share.h"

#include "broker/acl.h"
#include "broker/msg.h"
#include "broker/session.h"
#include "core/mem.h"
#include "mqtt/mqtt_topic.h"

struct share_member {
    struct session *s;
    subtree_opts opts;
};

/* The sessions subscribed to $share/<name>/<filter>, one of which gets
 * each message. */
struct share_group {
    uint8_t *key;      /* owned: the whole $share/<name>/<filter> */
    uint16_t key_len;
    uint16_t filter_off; /* where <filter> starts in key */
    struct share_member *members;
    uint32_t n, cap;
    uint32_t next;     /* round robin: the member to try first */
};

void share_init(struct share *sh) { sh->tree = subtree_new(); }

void share_free(struct share *sh)
{
    hmap_free(&sh->groups);
    subtree_free(sh->tree);
}

static struct share_member *share_find(struct share_group *g, const struct session *s)
{
    for (uint32_t i = 0; i < g->n; i++)
        if (g->members[i].s == s)
            return &g->members[i];
    return NULL;
}

void share_add(struct share *sh, const uint8_t *filter, size_t len, size_t inner_off,
               struct session *s, subtree_opts opts)
{
    struct share_group *g = hmap_get(&sh->groups, filter, len);
    if (!g) {
        g = mem_calloc(1, sizeof *g);
        g->key = (uint8_t *)mem_strndup(filter, len);
        g->key_len = (uint16_t)len;
        g->filter_off = (uint16_t)inner_off;
        hmap_put(&sh->groups, g->key, len, g);
        subtree_add(sh->tree, g->key + inner_off, len - inner_off, g, 0);
    }
    struct share_member *m = share_find(g, s);
    if (m) {
        m->opts = opts;
        return;
    }
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 4;
        g->members = mem_realloc(g->members, g->cap * sizeof *g->members);
    }
    g->members[g->n++] = (struct share_member){s, opts};
}

static void share_group_free(struct share_group *g)
{
    mem_free(g->members);
    mem_free(g->key);
    mem_free(g);
}

void share_remove(struct share *sh, const uint8_t *filter, size_t len, struct session *s)
{
    struct share_group *g = hmap_get(&sh->groups, filter, len);
    struct share_member *m = g ? share_find(g, s) : NULL;
    if (!m)
        return;
    *m = g->members[--g->n];
    if (g->next >= g->n)
        g->next = 0; /* under the write lock: no pick runs */
    if (g->n > 0)
        return;
    subtree_remove(sh->tree, g->key + g->filter_off, g->key_len - g->filter_off, g);
    hmap_del(&sh->groups, g->key, g->key_len);
    share_group_free(g);
}

/* A topic a member is picked for. */
struct share_topic {
    const uint8_t *topic;
    size_t len;
};

bool share_may_read(const struct session *s, const uint8_t *topic, size_t len)
{
    return !s->auth_filtered || acl_client_check(s->auth.acl, topic, len, ACL_READ);
}

/* The member to send the group's next message on t to, never `except`, and
 * one that may read it: the next connected one in turn, or the next one at
 * all if none is connected (NULL if there is none). */
static struct share_member *share_pick(struct share_group *g, const struct session *except,
                                       bool connected_only, const struct share_topic *t)
{
    struct share_member *fallback = NULL;
    uint32_t next = __atomic_load_n(&g->next, __ATOMIC_RELAXED);
    for (uint32_t k = 0; k < g->n; k++) {
        uint32_t i = (next + k) % g->n;
        struct share_member *m = &g->members[i];
        if (m->s == except || !share_may_read(m->s, t->topic, t->len))
            continue;
        if (session_online(m->s)) {
            __atomic_store_n(&g->next, (i + 1) % g->n, __ATOMIC_RELAXED);
            return m;
        }
        if (!fallback)
            fallback = m;
    }
    if (connected_only || !fallback)
        return NULL;
    __atomic_store_n(&g->next, (uint32_t)(fallback - g->members + 1) % g->n, __ATOMIC_RELAXED);
    return fallback;
}

/* One walk of share_route. */
struct share_walk {
    struct share_topic t;
    share_pick_fn fn;
    void *ctx;
    uint64_t unread; /* matching groups no member may read */
};

static void share_match(void *ctx, void *subscriber, subtree_opts unused)
{
    struct share_walk *w = ctx;
    struct share_member *m = share_pick(subscriber, NULL, false, &w->t);
    if (m)
        w->fn(w->ctx, m->s, m->opts);
    else
        w->unread++;
}

uint64_t share_route(struct share *sh, const uint8_t *topic, size_t len, share_pick_fn fn,
                     void *ctx)
{
    struct share_walk w = {{topic, len}, fn, ctx, 0};
    subtree_match(sh->tree, topic, len, share_match, &w);
    return w.unread;
}

void share_hand_off_begin(struct share *sh, const struct session *s, struct share_hand_off *h)
{
    size_t inner;
    h->groups = NULL;
    h->n = 0;
    for (uint32_t i = 0; i < s->nsubs; i++) {
        const struct session_sub *sub = &s->subs[i];
        if (mqtt_topic_shared(sub->filter, sub->len, &inner) <= 0)
            continue;
        struct share_group *g = hmap_get(&sh->groups, sub->filter, sub->len);
        bool other = false;
        for (uint32_t k = 0; g && k < g->n && !other; k++)
            other = g->members[k].s != s && session_online(g->members[k].s);
        if (!other)
            continue;
        if (!h->groups)
            h->groups = mem_alloc((s->nsubs - i) * sizeof *h->groups);
        h->groups[h->n++] = g;
    }
}

void share_hand_off_end(struct share_hand_off *h)
{
    mem_free(h->groups);
    h->groups = NULL;
    h->n = 0;
}

struct session *share_hand_off(const struct share_hand_off *h, const struct session *s,
                               const struct msg *m, subtree_opts *opts)
{
    struct share_topic t = {msg_topic(m), m->topic_len};
    for (uint32_t i = 0; i < h->n; i++) {
        struct share_group *g = h->groups[i];
        if (!mqtt_topic_match(g->key + g->filter_off, g->key_len - g->filter_off, t.topic, t.len))
            continue;
        struct share_member *to = share_pick(g, s, true, &t);
        if (to) {
            *opts = to->opts;
            return to->s;
        }
    }
    return NULL;
}

size_t share_members(const struct share *sh)
{
    size_t n = 0, i = 0;
    struct hmap_slot *slot;
    while ((slot = hmap_next(&sh->groups, &i)))
        n += ((struct share_group *)slot->val)->n;
    return n;
}
