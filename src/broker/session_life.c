/* session_life.c - a session's beginning and end, its offline timers and
 * its will (session_life.h).
 */
#include "broker/session_life.h"

#include <string.h>

#include "broker/auth.h"
#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/router.h"
#include "broker/session.h"
#include "core/log.h"
#include "core/mem.h"

/* Another loop's session may end as soon as the lock is let go: only its
 * loop is read, under the lock. */
struct session *session_find(struct broker_loop *l, const uint8_t *client_id, size_t len,
                             struct broker_loop **owner)
{
    struct broker *b = l->b;
    pthread_mutex_lock(&b->sessions_lock);
    struct session *s = hmap_get(&b->sessions, client_id, len);
    *owner = s ? s->loop : NULL;
    pthread_mutex_unlock(&b->sessions_lock);
    return *owner == l ? s : NULL;
}

struct session *session_new(struct broker_loop *l, const uint8_t *client_id, size_t len,
                            struct broker_loop **owner)
{
    struct broker *b = l->b;
    pthread_mutex_lock(&b->sessions_lock);
    struct session *s = hmap_get(&b->sessions, client_id, len);
    *owner = s ? s->loop : l;
    if (s) {
        s = NULL; /* another loop's, made since session_find */
    } else {
        /* One allocation: the session, its match stamps, its client id. */
        size_t stamps = offsetof(struct session, match) + b->nloops * sizeof s->match[0];
        s = mem_calloc(1, stamps + len + 1);
        s->client_id = memcpy((char *)s + stamps, client_id, len);
        s->client_id_len = (uint16_t)len;
        s->loop = l;
        s->refs = 1;
        hmap_put(&b->sessions, s->client_id, len, s);
    }
    pthread_mutex_unlock(&b->sessions_lock);
    return s;
}

void session_put(struct session *s)
{
    if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
        session_free(s);
}

static void timers_add(struct session *s)
{
    struct broker_loop *l = s->loop;
    struct session_cold *k = session_cold(s);
    if (k->on_timers)
        return;
    k->on_timers = true;
    k->timer_prev = NULL;
    k->timer_next = l->timers;
    if (l->timers)
        l->timers->cold->timer_prev = s;
    l->timers = s;
}

static void timers_remove(struct session *s)
{
    struct session_cold *k = s->cold;
    if (!k || !k->on_timers)
        return;
    if (k->timer_prev)
        k->timer_prev->cold->timer_next = k->timer_next;
    else
        s->loop->timers = k->timer_next;
    if (k->timer_next)
        k->timer_next->cold->timer_prev = k->timer_prev;
    k->on_timers = false;
}

static void session_publish_will(struct broker_loop *l, struct msg *will)
{
    /* Its Message Expiry Interval runs from now (3.1.3.2.4): until now
     * expires_ms held the interval alone. */
    if (will->expires_ms)
        will->expires_ms += ev_now(l->ev);
    STAT_ADD(l->stats.msgs_in, 1);
    router_publish(l, will, true);
    msg_unref(will);
}

void session_owe_will(struct broker *b, struct session *s, struct msg *will, uint64_t will_ms)
{
    struct session_cold *k = session_cold(s);
    k->will = will;
    k->will_ms = will_ms;
    timers_add(s);
}

void session_destroy(struct broker_loop *l, struct session *s)
{
    struct broker *b = l->b;
    struct msg *will = session_cold_peek(s)->will;
    persist_session_del(b, s);
    timers_remove(s);
    session_release_publishers(l, s, true);
    for (uint32_t i = 0; i < s->nsubs; i++)
        router_unsubscribe(b, s, s->subs[i].filter, s->subs[i].len);
    pthread_mutex_lock(&b->sessions_lock);
    hmap_del(&b->sessions, s->client_id, s->client_id_len);
    pthread_mutex_unlock(&b->sessions_lock);
    auth_session_free(s);
    /* Out of the tree now: no other loop can take a reference any more,
     * and those taken are counted (under the router's lock). Its messages
     * go now, on their loop; the last reference frees the rest. */
    s->gone = true;
    session_drop_messages(s);
    session_put(s);
    /* A will whose delay outlasted the session goes when the session ends
     * [MQTT-3.1.3-9]; last, so that it cannot reach the session itself. */
    if (will)
        session_publish_will(l, will);
}

void session_detach(struct broker_loop *l, struct session *s, struct msg *will,
                    uint32_t will_delay_s)
{
    struct broker *b = l->b;
    s->conn = NULL;
    __atomic_store_n(&s->online, false, __ATOMIC_RELAXED);
    router_hand_off(l, s);
    if (s->expiry_s == 0) {
        if (will)
            session_cold(s)->will = will;
        session_destroy(l, s);
        return;
    }
    session_release_publishers(l, s, true);
    uint64_t now = ev_now(l->ev);
    if (will && will_delay_s == 0 && !__atomic_load_n(&b->defer_wills, __ATOMIC_RELAXED))
        session_publish_will(l, will);
    else if (will)
        session_owe_will(b, s, will, now + (uint64_t)will_delay_s * 1000);
    if (s->expiry_s != SESSION_NEVER) {
        session_cold(s)->expires_ms = now + (uint64_t)s->expiry_s * 1000;
        timers_add(s);
    }
    persist_session(b, s);
}

void session_attach(struct broker *b, struct session *s, struct conn *c)
{
    timers_remove(s);
    if (s->cold && s->cold->will) {
        msg_unref(s->cold->will);
        s->cold->will = NULL;
    }
    s->conn = c;
    __atomic_store_n(&s->online, true, __ATOMIC_RELAXED);
    c->session = s;
    s->v5 = c->v5;
    s->v31 = c->v31;
}

void session_sweep(struct broker_loop *l)
{
    struct broker *b = l->b;
    uint64_t now = ev_now(l->ev);
    struct session *next;
    for (struct session *s = l->timers; s; s = next) {
        struct session_cold *k = s->cold; /* on the list: it has one */
        next = k->timer_next;
        bool will_due = k->will && now >= k->will_ms;
        if (will_due) {
            struct msg *will = k->will;
            k->will = NULL;
            session_publish_will(l, will);
        }
        if (s->expiry_s != SESSION_NEVER && now >= k->expires_ms) {
            log_debug("client %s: session expired", s->client_id);
            session_destroy(l, s);
            continue;
        }
        if (will_due)
            persist_session(b, s); /* it owes no will any more */
        if (!k->will && s->expiry_s == SESSION_NEVER)
            timers_remove(s);
    }
}

