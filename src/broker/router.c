/* router.c - who gets a message (router.h).
 *
 * Overlapping subscriptions: a session with several subscriptions matching
 * a message gets one copy, in either version (MQTT 3.1.1 3.3.5 and MQTT 5
 * 3.3.4 allow one copy or one per subscription): at the highest QoS among
 * them, carrying every Subscription Identifier they have, identical ones
 * included [MQTT-3.3.4-4], with RETAIN as published if any of them has
 * Retain As Published. A subscription whose No Local excludes the
 * publisher takes no part [MQTT-3.8.3-3]. A shared subscription's group
 * adds one copy, to one member, whatever else matched (4.8.2).
 *
 * Merging costs no lookup: each session carries, for each loop, the stamp
 * of the last match of that loop that met it (session.match) and its entry
 * in that match.
 *
 * Threads (docs/broker.md): the tree and the groups are read under a
 * read lock while a message is matched, and changed under the write lock;
 * so once SUBSCRIBE returns, every loop's next match sees the
 * subscription. A session another loop owns gets its copy through that
 * loop's inbox (xloop.h), holding a reference to the session taken under
 * the read lock, before the session can end.
 */
#include "broker/router.h"

#include <string.h>

#include "broker/auth.h"
#include "broker/broker_int.h"
#include "broker/metrics.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/retain.h"
#include "broker/session.h"
#include "broker/session_life.h"
#include "broker/share.h"
#include "broker/xloop.h"
#include "cluster/kv_retain.h"
#include "cluster/link.h"
#include "core/log.h"
#include "core/mem.h"
#include "mqtt/mqtt_props.h"
#include "mqtt/mqtt_topic.h"

/* One session a message is routed to, and how: every matching
 * subscription of the session merged into opts (the highest QoS, Retain As
 * Published if any asked for it, the first Subscription Identifier), the
 * further identifiers in router.ids. */
struct route_match {
    struct session *s;
    subtree_opts opts;
    /* 1 + index of the first further identifier in router.ids; 0 = none.
     * A bit field with shared so that an entry stays 16 bytes. */
    uint32_t more_ids : 31;
    uint32_t shared : 1;
};

/* A further Subscription Identifier of a route_match: a list through
 * router.ids, 0-terminated like route_match.more_ids. */
struct route_id {
    uint32_t id;
    uint32_t next;
};

struct router {
    struct subtree *subs; /* filter -> struct session */
    struct share shared;  /* the shared subscriptions' groups */
    /* Both, with more than one loop: one loop alone has nothing to share
     * and takes no lock (a test of `locked` per message). */
    bool locked;
    pthread_rwlock_t lock;
};

struct router *router_new(unsigned nloops)
{
    struct router *r = mem_calloc(1, sizeof *r);
    r->subs = subtree_new();
    share_init(&r->shared);
    r->locked = nloops > 1;
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    /* Routing never stops: a waiting SUBSCRIBE must not starve. */
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&r->lock, &a);
    pthread_rwlockattr_destroy(&a);
    return r;
}

void router_free(struct router *r)
{
    share_free(&r->shared);
    subtree_free(r->subs);
    pthread_rwlock_destroy(&r->lock);
    mem_free(r);
}

void router_read_lock(struct broker *b)
{
    if (b->router->locked)
        pthread_rwlock_rdlock(&b->router->lock);
}

void router_write_lock(struct broker *b)
{
    if (b->router->locked)
        pthread_rwlock_wrlock(&b->router->lock);
}

void router_unlock(struct broker *b)
{
    if (b->router->locked)
        pthread_rwlock_unlock(&b->router->lock);
}

void route_scratch_free(struct route_scratch *r)
{
    mem_free(r->matches);
    mem_free(r->ids);
    mem_free(r->copy_ids);
}

bool router_subscribe(struct broker *b, struct session *s, const uint8_t *filter, size_t len,
                      subtree_opts opts)
{
    size_t inner;
    bool is_new = session_add_sub(s, filter, len, opts);
    bool shared = mqtt_topic_shared(filter, len, &inner) > 0;
    router_write_lock(b);
    if (shared)
        share_add(&b->router->shared, filter, len, inner, s, opts);
    else
        subtree_add(b->router->subs, filter, len, s, opts);
    router_unlock(b);
    /* A shared member has its own queue subscriptions (docs/cluster.md). */
    if (b->cluster && shared)
        cluster_share_add(b->cluster, s, filter, len, inner, opts);
    else if (b->cluster && is_new)
        cluster_interest_add(b->cluster, filter, len);
    return is_new;
}

void router_unsubscribe(struct broker *b, struct session *s, const uint8_t *filter, size_t len)
{
    size_t inner;
    router_write_lock(b);
    bool shared = mqtt_topic_shared(filter, len, &inner) > 0;
    if (shared)
        share_remove(&b->router->shared, filter, len, s);
    else
        subtree_remove(b->router->subs, filter, len, s);
    router_unlock(b);
    if (b->cluster && shared)
        cluster_share_remove(b->cluster, s, filter, len);
    else if (b->cluster)
        cluster_interest_remove(b->cluster, filter, len);
}

/* ---- matching ------------------------------------------------------------ */

/* One walk of the tree for route_collect. */
struct route_walk {
    struct broker_loop *l;
    struct route_scratch *r;
    const struct session *origin;
};

static inline void route_push(struct route_walk *w, struct session *s, subtree_opts opts,
                              bool shared)
{
    struct route_scratch *r = w->r;
    /* Another loop's session: held until its loop has its copy. */
    if (s->loop != w->l)
        __atomic_fetch_add(&s->refs, 1, __ATOMIC_RELAXED);
    if (r->nmatches == r->matches_cap) {
        r->matches_cap = r->matches_cap ? r->matches_cap * 2 : 64;
        r->matches = mem_realloc(r->matches, r->matches_cap * sizeof *r->matches);
    }
    r->matches[r->nmatches++] = (struct route_match){s, opts, 0, shared};
}

/* A second (third, ...) subscription of the session already routed to in
 * m matched: one copy still, as the strongest of them asks. */
static void route_merge(struct route_scratch *r, struct route_match *m, subtree_opts opts)
{
    uint32_t id = sub_opts_id(opts);
    subtree_opts keep = m->opts;
    if (sub_opts_qos(opts) > sub_opts_qos(keep))
        keep = (keep & ~(subtree_opts)MQTT5_SUB_QOS) | sub_opts_qos(opts);
    keep |= opts & MQTT5_SUB_RETAIN_AS_PUBLISHED;
    if (id && !sub_opts_id(keep)) {
        keep |= (subtree_opts)id << SUB_OPT_ID_SHIFT;
    } else if (id) {
        if (r->nids == r->ids_cap) {
            r->ids_cap = r->ids_cap ? r->ids_cap * 2 : 16;
            r->ids = mem_realloc(r->ids, r->ids_cap * sizeof *r->ids);
        }
        r->ids[r->nids] = (struct route_id){id, m->more_ids};
        m->more_ids = ++r->nids;
    }
    m->opts = keep;
}

static void route_match(void *ctx, void *subscriber, subtree_opts opts)
{
    struct route_walk *w = ctx;
    struct route_scratch *r = w->r;
    struct session *s = subscriber;
    if ((opts & MQTT5_SUB_NO_LOCAL) && s == w->origin)
        return; /* [MQTT-3.8.3-3] */
    struct session_stamp *st = &s->match[w->l->index];
    if (st->gen == r->match_gen) {
        route_merge(r, &r->matches[st->idx], opts);
        return;
    }
    st->gen = r->match_gen;
    st->idx = r->nmatches;
    route_push(w, s, opts, false);
}

static void route_shared(void *ctx, struct session *s, subtree_opts opts)
{
    route_push(ctx, s, opts, true);
}

/* Collects the sessions a message on topic goes to in the scratch, the
 * shared groups' members too if shared; returns how many. */
static inline uint32_t route_collect(struct broker_loop *l, const uint8_t *topic, size_t len,
                                     const struct session *origin, bool shared)
{
    struct broker *b = l->b;
    struct route_scratch *r = &l->route;
    r->nmatches = 0;
    r->nids = 0;
    if (++r->match_gen == 0) {
        /* After 2^32 messages a stale stamp could collide: clear ours. */
        pthread_mutex_lock(&b->sessions_lock);
        size_t i = 0;
        struct hmap_slot *slot;
        while ((slot = hmap_next(&b->sessions, &i)))
            ((struct session *)slot->val)->match[l->index].gen = 0;
        pthread_mutex_unlock(&b->sessions_lock);
        r->match_gen = 1;
    }
    struct route_walk w = {l, r, origin};
    struct router *rt = b->router;
    if (rt->locked) /* router_read_lock, inline on the hot path */
        pthread_rwlock_rdlock(&rt->lock);
    subtree_match(rt->subs, topic, len, route_match, &w);
    if (shared && share_any(&rt->shared)) {
        uint64_t unread = share_route(&rt->shared, topic, len, route_shared, &w);
        if (unread)
            __atomic_fetch_add(&b->auth.denied_deliver, unread, __ATOMIC_RELAXED);
    }
    if (rt->locked)
        pthread_rwlock_unlock(&rt->lock);
    return r->nmatches;
}

/* ---- delivering ---------------------------------------------------------- */

/* The identifiers of a match with more than one, as delivery.sub_ids
 * wants them (in router.copy_ids, valid until the next match). Rare: kept
 * out of route_deliver's loop. */
__attribute__((cold, noinline)) static uint32_t *route_ids(struct route_scratch *r,
                                                           const struct route_match *m)
{
    uint32_t n = 1;
    for (uint32_t i = m->more_ids; i; i = r->ids[i - 1].next)
        n++;
    if (n + 1 > r->copy_ids_cap) {
        r->copy_ids_cap = n + 1 > 16 ? n + 1 : 16;
        r->copy_ids = mem_realloc(r->copy_ids, r->copy_ids_cap * sizeof *r->copy_ids);
    }
    uint32_t *ids = r->copy_ids;
    ids[0] = n;
    ids[1] = sub_opts_id(m->opts);
    n = 2;
    for (uint32_t i = m->more_ids; i; i = r->ids[i - 1].next)
        ids[n++] = r->ids[i - 1].id;
    return ids;
}

/* m to s, which loop l does not own, as d says: an entry for s's loop,
 * which takes over the reference to s its match took (route_push). */
static void route_remote(struct broker_loop *l, struct session *s, struct msg *m,
                         const struct delivery *d, bool publisher)
{
    msg_share(m);
    __atomic_fetch_add(&s->xpending, 1, __ATOMIC_SEQ_CST);
    struct xloop_entry *e = xloop_push(&l->x, s->loop->index);
    e->kind = XLOOP_DELIVER;
    e->p = s;
    e->m = msg_ref(m);
    e->d = *d;
    e->d.entry = persist_remote(l->b, s, m, d); /* before the PUBACK leaves this loop */
    e->publisher = publisher;
    e->aux = NULL;
    if (d->sub_ids) {
        size_t size = (d->sub_ids[0] + 1) * sizeof *d->sub_ids;
        e->d.sub_ids = memcpy(mem_alloc(size), d->sub_ids, size);
    }
}

void router_take(struct broker_loop *l, struct xloop_entry *e)
{
    struct session *s = e->p;
    struct msg *m = e->m;
    /* The ACL is asked here, by the loop that owns the session's handle;
     * a group's member was asked when it was picked. */
    if (!s->gone && !(s->auth_filtered && !e->d.shared &&
                      !auth_may_deliver(l->b, s, msg_topic(m), m->topic_len)))
        session_deliver(l, s, m, &e->d, NULL);
    else /* its record, if the routing loop made one, goes too */
        persist_entry_del(l->b, &e->d, false);
    __atomic_sub_fetch(&s->xpending, 1, __ATOMIC_SEQ_CST);
    if (!s->gone) {
        if (e->publisher)
            session_push_back_remote(l, s);
        session_wake_remote(l, s);
    }
    mem_free(e->d.sub_ids);
    msg_unref(m);
    session_put(s);
}

/* Delivers m to the sessions the last route_collect found, each as its
 * subscriptions ask and the ACL lets it read. */
static inline void route_deliver(struct broker_loop *l, struct msg *m, struct conn *publisher)
{
    struct broker *b = l->b;
    struct route_scratch *r = &l->route;
    for (uint32_t i = 0; i < r->nmatches; i++) {
        const struct route_match *rm = &r->matches[i];
        bool remote = rm->s->loop != l;
        /* A group's member was picked among those that may read it. */
        if (!remote && rm->s->auth_filtered && !rm->shared &&
            !auth_may_deliver(b, rm->s, msg_topic(m), m->topic_len))
            continue;
        uint8_t qos = sub_opts_qos(rm->opts);
        struct delivery d = {
            .sub_id = sub_opts_id(rm->opts),
            .qos = qos < m->qos ? qos : m->qos,
            /* Live deliveries carry RETAIN 0 unless the subscriber asked
             * for it as published (MQTT 5, Retain As Published). */
            .retain = (rm->opts & MQTT5_SUB_RETAIN_AS_PUBLISHED) && m->retain,
            .shared = rm->shared,
        };
        if (rm->more_ids) {
            d.sub_ids = route_ids(r, rm);
            d.sub_id = 0;
        }
        if (!remote) {
            session_deliver(l, rm->s, m, &d, publisher);
            continue;
        }
        route_remote(l, rm->s, m, &d, publisher != NULL);
        if (publisher)
            session_wait_remote(l, rm->s, publisher);
    }
}

bool router_retain_fits(struct broker *b, const uint8_t *topic, size_t len, size_t payload_len,
                        const char *who)
{
    if (payload_len == 0)
        return true;
    size_t old = 0;
    pthread_mutex_lock(&b->retained_lock);
    bool replaces = retain_get(b->retained, topic, len, &old);
    size_t count = retain_count(b->retained), now = retain_bytes(b->retained);
    pthread_mutex_unlock(&b->retained_lock);
    if (!replaces && count >= b->cfg->max_retained_messages) {
        metrics_bound_hit(b, BOUND_RETAINED_MESSAGES, who);
        return false;
    }
    /* What is stored already stays counted even past a lowered bound. */
    size_t size = len + payload_len;
    if (size > old && now - old + size > b->cfg->max_retained_bytes) {
        metrics_bound_hit(b, BOUND_RETAINED_BYTES, who);
        return false;
    }
    return true;
}

static void route_retain(struct broker *b, struct msg *m)
{
    persist_retain(b, m);
    /* Every loop's SUBSCRIBE may send it. */
    if (b->nloops > 1)
        msg_share(m);
    pthread_mutex_lock(&b->retained_lock);
    if (m->payload_len == 0)
        retain_set(b->retained, msg_topic(m), m->topic_len, NULL, 0);
    else
        retain_set(b->retained, msg_topic(m), m->topic_len, msg_ref(m),
                   (size_t)m->topic_len + m->payload_len);
    pthread_mutex_unlock(&b->retained_lock);
}

/* A client's retained m in a cluster with a bucket: there, not here
 * (kv_retain.h), and any copy here of its topic (from before the bucket
 * was) goes, so that a SUBSCRIBE sends it once. False if it was to go to
 * the bucket and did not. */
static bool route_retain_cluster(struct broker *b, struct msg *m, uint64_t now_ms)
{
    enum kv_retain_put kv = kv_retain_put(b->kv_retain, m, now_ms);
    if (kv == KV_RETAIN_LOCAL) {
        route_retain(b, m);
        return true;
    }
    size_t size;
    pthread_mutex_lock(&b->retained_lock);
    bool here = retain_get(b->retained, msg_topic(m), m->topic_len, &size);
    pthread_mutex_unlock(&b->retained_lock);
    if (here && kv == KV_RETAIN_STORED) {
        struct msg *clear = msg_new(msg_topic(m), m->topic_len, NULL, 0, 0, true, NULL, now_ms);
        route_retain(b, clear);
        msg_unref(clear);
    }
    return kv == KV_RETAIN_STORED;
}

uint32_t router_route(struct broker_loop *l, const struct router_in *in, uint64_t now_ms,
                      const struct session *origin, struct conn *publisher, bool *retain_failed)
{
    struct msg *m = NULL;
    *retain_failed = false;
    if (in->retain) {
        m = msg_new(in->topic.ptr, in->topic.len, in->payload.ptr, in->payload.len, in->qos, true,
                    in->props, now_ms);
        if (!l->b->kv_retain)
            route_retain(l->b, m);
        else
            *retain_failed = !route_retain_cluster(l->b, m, now_ms);
    }
    /* What went to the cluster reaches the shared groups, this node's
     * too, through NATS's queue groups only: one member in the cluster. */
    bool sent = l->b->cluster && cluster_publish(l->b->cluster, in->topic.ptr, in->topic.len,
                                                 in->payload.ptr, in->payload.len, in->qos,
                                                 in->retain, in->props,
                                                 in->qos && l->b->js_msgs);
    uint32_t n = route_collect(l, in->topic.ptr, in->topic.len, origin, !sent);
    /* Without subscribers a plain message needs no copy at all. */
    if (n > 0 && !m)
        m = msg_new(in->topic.ptr, in->topic.len, in->payload.ptr, in->payload.len, in->qos, false,
                    in->props, now_ms);
    if (n > 0)
        route_deliver(l, m, publisher);
    if (m)
        msg_unref(m);
    /* The other nodes' subscribers are not known here: one that went to
     * them counts as one (MQTT 5's 0x10 would not be sure). */
    if (sent && n == 0)
        n = 1;
    return n;
}

/* m to the other nodes as a client's PUBLISH goes: its properties as
 * they were, its expiry as what is left of it. */
static bool route_to_cluster(struct broker_loop *l, const struct msg *m)
{
    struct mqtt_props props = {0};
    uint8_t *buf;
    msg_props_decode(msg_props(m), m->props_len, &props, &buf);
    uint64_t now = ev_now(l->ev);
    if (m->expires_ms) {
        props.present |= MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY);
        props.message_expiry =
            m->expires_ms > now ? (uint32_t)((m->expires_ms - now + 999) / 1000) : 1;
    }
    /* Not through the stream: no publisher waits for its PubAck, so a
     * will crosses nodes at most once (docs/cluster.md, Routing). */
    bool sent = cluster_publish(l->b->cluster, msg_topic(m), m->topic_len, msg_payload(m),
                                m->payload_len, m->qos, m->retain,
                                props.present || m->props_len ? &props : NULL, false);
    mem_free(buf);
    return sent;
}

void router_publish(struct broker_loop *l, struct msg *m, bool cluster_wide)
{
    struct broker *b = l->b;
    if (m->retain &&
        router_retain_fits(b, msg_topic(m), m->topic_len, m->payload_len, "a will or $SYS"))
        route_retain(b, m);
    /* As router_route: what went to the cluster reaches shared groups
     * through NATS's queue groups only. */
    bool sent = cluster_wide && b->cluster && route_to_cluster(l, m);
    route_collect(l, msg_topic(m), m->topic_len, NULL, !sent);
    route_deliver(l, m, NULL);
}

uint64_t router_partitioned(const struct broker_loop *l)
{
    return l->b->cluster ? cluster_partitioned(l->b->cluster, ev_now(l->ev)) : 0;
}

void router_route_cluster(struct broker_loop *l, struct msg *m)
{
    /* Shared groups get theirs through their members' queue
     * subscriptions (router_deliver_member): a copy here too would be a
     * second one in the group. */
    if (route_collect(l, msg_topic(m), m->topic_len, NULL, false))
        route_deliver(l, m, NULL);
}

bool router_cluster_hold(struct broker_loop *l, struct ev_io *inbox)
{
    struct broker *b = l->b;
    if (b->nloops == 1 || !xloop_over(b->xs, l->index, ROUTER_CLUSTER_MARK))
        return false;
    ev_io_stop(l->ev, inbox);
    l->cluster_held = inbox;
    log_debug("cluster inbox held: %llu entries for other loops not taken yet",
              (unsigned long long)xloop_untaken(b->xs, l->index));
    return true;
}

void router_cluster_resume(struct broker_loop *l)
{
    if (!l->b->cluster) /* stopped (broker_fini): its watcher went with it */
        l->cluster_held = NULL;
    else if (!xloop_over(l->b->xs, l->index, ROUTER_CLUSTER_MARK / 2)) {
        ev_io_start(l->ev, l->cluster_held, EV_READ); /* its eventfd is still readable */
        l->cluster_held = NULL;
        log_debug("cluster inbox taken again");
    }
}

void router_deliver_member(struct broker_loop *l, struct session *s, struct msg *m,
                           subtree_opts opts)
{
    uint8_t granted = sub_opts_qos(opts);
    struct delivery d = {
        .sub_id = sub_opts_id(opts),
        .qos = m->qos < granted ? m->qos : granted,
        .retain = (opts & MQTT5_SUB_RETAIN_AS_PUBLISHED) && m->retain, /* as route_deliver */
        .shared = true,
    };
    if (s->loop != l) {
        route_remote(l, s, m, &d, false); /* its loop asks s->gone */
        return;
    }
    if (!s->gone)
        session_deliver(l, s, m, &d, NULL);
    session_put(s);
}

/* One hand-off: the loop, and the groups that may take the messages. */
struct route_hand_off_ctx {
    struct broker_loop *l;
    struct share_hand_off h;
};

/* session_hand_off's question for one message: another member to take it. */
static bool route_hand_off(void *ctx, struct session *s, struct msg *m, const struct delivery *d)
{
    struct route_hand_off_ctx *x = ctx;
    subtree_opts opts;
    struct session *to = share_hand_off(&x->h, s, m, &opts);
    if (!to)
        return false;
    bool remote = to->loop != x->l;
    if (remote)
        __atomic_fetch_add(&to->refs, 1, __ATOMIC_RELAXED);
    uint8_t granted = sub_opts_qos(opts);
    struct delivery copy = {
        .sub_id = sub_opts_id(opts),
        .qos = m->qos < granted ? m->qos : granted,
        .retain = d->retain,
        .shared = true,
    };
    if (remote)
        route_remote(x->l, to, m, &copy, false);
    else
        session_deliver(x->l, to, m, &copy, NULL);
    return true;
}

void router_hand_off(struct broker_loop *l, struct session *s)
{
    struct route_hand_off_ctx x = {.l = l};
    /* The groups and their members stay as they are while we pick. */
    router_read_lock(l->b);
    share_hand_off_begin(&l->b->router->shared, s, &x.h);
    if (x.h.n)
        session_hand_off(l, s, route_hand_off, &x);
    share_hand_off_end(&x.h);
    router_unlock(l->b);
}

size_t router_subscriptions(struct broker *b)
{
    router_read_lock(b);
    size_t n = subtree_count(b->router->subs);
    router_unlock(b);
    return n;
}

size_t router_shared_subscriptions(struct broker *b)
{
    router_read_lock(b);
    size_t n = share_members(&b->router->shared);
    router_unlock(b);
    return n;
}
