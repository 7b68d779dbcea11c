/* share.c - shared subscriptions ($share/<name>/<filter>, MQTT 5 4.8.2,
 * which MQTT 3.1.1 clients may use too, as with Mosquitto).
 *
 * Each group is one subscriber in its own subscription tree (b->shared),
 * so a message costs one tree walk for all groups. A matching group sends
 * it to one member: the next connected one in round-robin order, or, when
 * none is connected, the next one at all (whose session queues it); a
 * member the ACL does not let read the topic is passed over. When a
 * member's connection ends, the QoS 1/2 messages it had not acknowledged
 * go to another connected member (session.c calls share_redeliver).
 */
#include <string.h>

#include "broker/broker_int.h"
#include "broker/subtree.h"
#include "core/mem.h"
#include "mqtt/mqtt_topic.h"

static struct share_member *share_find(struct share_group *g, const struct session *s)
{
    for (uint32_t i = 0; i < g->n; i++)
        if (g->members[i].s == s)
            return &g->members[i];
    return NULL;
}

void share_add(struct broker *b, const uint8_t *filter, size_t len, size_t inner_off,
               struct session *s, subtree_opts opts)
{
    struct share_group *g = hmap_get(&b->share_groups, filter, len);
    if (!g) {
        g = mem_calloc(1, sizeof *g);
        g->key = (uint8_t *)mem_strndup(filter, len);
        g->key_len = (uint16_t)len;
        g->filter_off = (uint16_t)inner_off;
        hmap_put(&b->share_groups, g->key, len, g);
        subtree_add(b->shared, g->key + inner_off, len - inner_off, g, 0);
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

void share_remove(struct broker *b, const uint8_t *filter, size_t len, struct session *s)
{
    struct share_group *g = hmap_get(&b->share_groups, filter, len);
    struct share_member *m = g ? share_find(g, s) : NULL;
    if (!m)
        return;
    *m = g->members[--g->n];
    if (g->next >= g->n)
        g->next = 0;
    if (g->n > 0)
        return;
    subtree_remove(b->shared, g->key + g->filter_off, g->key_len - g->filter_off, g);
    hmap_del(&b->share_groups, g->key, g->key_len);
    share_group_free(g);
}

/* A topic being routed to the groups. */
struct share_topic {
    struct broker *b;
    const uint8_t *topic;
    size_t len;
};

/* Whether the ACL lets s read the topic; only a session with a filtered
 * subscription needs asking (docs/security.md, "Delivery"). */
static bool share_may_read(const struct session *s, const struct share_topic *t)
{
    return !s->auth.filtered || acl_client_check(s->auth.acl, t->topic, t->len, ACL_READ);
}

/* The member to send the group's next message on t to, never `except`, and
 * one that may read it: the next connected one in turn, or the next one at
 * all if none is connected (NULL if there is none). */
static struct share_member *share_pick(struct share_group *g, const struct session *except,
                                       bool connected_only, const struct share_topic *t)
{
    struct share_member *fallback = NULL;
    for (uint32_t k = 0; k < g->n; k++) {
        uint32_t i = (g->next + k) % g->n;
        struct share_member *m = &g->members[i];
        if (m->s == except || !share_may_read(m->s, t))
            continue;
        if (m->s->conn) {
            g->next = (i + 1) % g->n;
            return m;
        }
        if (!fallback)
            fallback = m;
    }
    if (connected_only || !fallback)
        return NULL;
    g->next = (uint32_t)(fallback - g->members + 1) % g->n;
    return fallback;
}

static void share_match(void *ctx, void *subscriber, subtree_opts unused)
{
    struct share_topic *t = ctx;
    struct share_member *m = share_pick(subscriber, NULL, false, t);
    if (m)
        share_route_push(t->b, m->s, m->opts);
    else
        t->b->auth.denied_deliver++; /* no member may read it */
}

void share_route(struct broker *b, const uint8_t *topic, size_t len)
{
    struct share_topic t = {b, topic, len};
    subtree_match(b->shared, topic, len, share_match, &t);
}

bool share_redeliver(struct broker *b, struct session *s, struct msg *m, const struct delivery *d)
{
    size_t inner;
    struct share_topic t = {b, msg_topic(m), m->topic_len};
    for (uint32_t i = 0; i < s->nsubs; i++) {
        const struct session_sub *sub = &s->subs[i];
        if (mqtt_topic_shared(sub->filter, sub->len, &inner) <= 0 ||
            !mqtt_topic_match(sub->filter + inner, sub->len - inner, msg_topic(m), m->topic_len))
            continue;
        struct share_group *g = hmap_get(&b->share_groups, sub->filter, sub->len);
        struct share_member *to = g ? share_pick(g, s, true, &t) : NULL;
        if (!to)
            continue;
        uint8_t granted = sub_opts_qos(to->opts);
        struct delivery copy = {
            .sub_id = sub_opts_id(to->opts),
            .qos = m->qos < granted ? m->qos : granted,
            .retain = d->retain,
            .shared = true,
        };
        session_deliver(b, to->s, m, &copy);
        return true;
    }
    return false;
}
