/* session.c - what a session holds and sends (session.h): its outgoing
 * QoS 1/2 inflight window and queue, acknowledgements, back-pressure, the
 * received QoS 2 packet ids waiting for PUBREL, and the subscriptions it
 * remembers.
 *
 * The inflight window is small (max_inflight, 20 by default) and kept in
 * send order, so linear scans by packet id are the cheapest lookup and
 * redelivery after a reconnect keeps the original order.
 */
#include "broker/session.h"

#include <assert.h>
#include <string.h>

#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/plog.h"
#include "broker/session_life.h"
#include "broker/xloop.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/outq.h"
#include "mqtt/mqtt_codec.h"

/* An idle session costs its struct session up to its match stamps, the
 * stamps and its client id, in one malloc chunk: keep the stamps at byte
 * 140 on 64-bit targets (with one loop, a client id of up to 19 bytes then
 * fits a 176-byte chunk, one of up to 35 a 192-byte one). */
_Static_assert(sizeof(void *) != 8 || offsetof(struct session, match) <= 140,
               "struct session grew: idle sessions cost more");

/* A delivery the session keeps (queued, in flight) owns its identifier
 * array (session.h): copied when kept, freed when let go. Rarely there. */
__attribute__((cold, noinline)) static uint32_t *session_ids_dup(const uint32_t *ids)
{
    size_t size = (1 + (size_t)ids[0]) * sizeof *ids;
    return memcpy(mem_alloc(size), ids, size);
}
static inline void session_keep(struct delivery *k, const struct delivery *d)
{
    *k = *d;
    if (d->sub_ids)
        k->sub_ids = session_ids_dup(d->sub_ids);
}
static inline void session_let_go(struct delivery *d)
{
    if (d->sub_ids)
        mem_free(d->sub_ids);
}

void session_drop_messages(struct session *s)
{
    for (uint32_t i = 0; i < s->ninflight; i++) {
        if (s->inflight[i].msg)
            msg_unref(s->inflight[i].msg);
        session_let_go(&s->inflight[i].d);
    }
    for (uint32_t i = 0; i < s->qlen; i++) {
        struct queued *e = &s->queue[(s->qhead + i) % s->qcap];
        msg_unref(e->msg);
        session_let_go(&e->d);
    }
    s->ninflight = s->qlen = 0;
}

void session_free(struct session *s)
{
    for (uint32_t i = 0; i < s->nsubs; i++)
        mem_free(s->subs[i].filter);
    session_drop_messages(s);
    mem_free(s->subs);
    hmap_free(&s->sub_index);
    mem_free(s->inflight);
    mem_free(s->queue);
    if (s->cold)
        mem_free(s->cold->qos2_in);
    mem_free(s->cold);
    mem_free(s); /* its client id with it (session_life.c) */
}

const struct session_cold session_cold_none;

__attribute__((cold, noinline)) static struct session_cold *session_cold_new(struct session *s)
{
    s->cold = mem_calloc(1, sizeof *s->cold);
    return s->cold;
}

struct session_cold *session_cold(struct session *s)
{
    return s->cold ? s->cold : session_cold_new(s);
}

/* ---- outgoing messages --------------------------------------------------- */

/* Counts a message dropped at a bound, and says so in the log, at most once
 * a second so that a flood of drops cannot flood the log too. */
static void session_drop(struct broker_loop *l, struct session *s, uint64_t *counter,
                         const char *why)
{
    STAT_ADD(*counter, 1);
    if (!broker_log_due(&l->b->drop_logged_ms, ev_now(l->ev)))
        return;
    struct broker_stats st;
    broker_stats_sum(l->b, &st);
    log_warn("client %s: message dropped (%s); dropped so far: %llu queue full, %llu output full",
             s->client_id, why, (unsigned long long)st.dropped_queue_full,
             (unsigned long long)st.dropped_output_full);
}

static uint16_t session_next_packet_id(struct session *s)
{
    for (;;) {
        uint16_t id = ++s->next_packet_id;
        if (id == 0)
            continue;
        bool used = false;
        for (uint32_t i = 0; i < s->ninflight && !used; i++)
            used = s->inflight[i].packet_id == id;
        if (!used)
            return id;
    }
}

/* The inflight window towards the session's client: MQTT 5 clients may
 * ask for a smaller one (Receive Maximum). */
static uint32_t session_window(const struct broker_loop *l, const struct session *s)
{
    uint32_t max = l->cfg->max_inflight;
    return s->conn ? conn_inflight_max(s->conn, max) : max;
}

/* Picks the topic alias for a copy of m to an MQTT 5 client that takes
 * aliases: the topic's, or a new one while there are free ones. Once they
 * are all taken, other topics go out in full. */
static void session_alias_out(struct conn_cold *c, const struct msg *m, struct msg_copy5 *x)
{
    for (uint16_t i = 0; i < c->nalias_out; i++) {
        const struct topic_alias *a = &c->alias_out[i];
        if (a->len == m->topic_len && memcmp(a->topic, msg_topic(m), m->topic_len) == 0) {
            x->topic_alias = (uint16_t)(i + 1);
            x->alias_only = true;
            return;
        }
    }
    if (c->nalias_out == c->alias_out_max)
        return;
    if (!c->alias_out)
        c->alias_out = mem_calloc(c->alias_out_max, sizeof *c->alias_out);
    struct topic_alias *a = &c->alias_out[c->nalias_out++];
    a->topic = (uint8_t *)mem_strndup(msg_topic(m), m->topic_len);
    a->len = m->topic_len;
    x->topic_alias = c->nalias_out;
}


/* session_write for an MQTT 5 client. */
static bool session_write5(struct broker_loop *l, struct conn *c, struct msg *m,
                           const struct delivery *d, uint16_t packet_id, bool dup)
{
    struct msg_copy5 x = {.now_ms = m->expires_ms ? ev_now(l->ev) : 0};
    if (d->sub_ids) {
        x.sub_ids = d->sub_ids + 1;
        x.nsub_ids = d->sub_ids[0];
    } else if (d->sub_id) {
        x.sub_ids = &d->sub_id;
        x.nsub_ids = 1;
    }
    struct conn_cold *k = c->cold;
    if (k && k->max_packet_out) {
        /* The largest form: whole topic and an alias. */
        x.topic_alias = k->alias_out_max ? 1 : 0;
        if (msg_publish5_size(m, d->qos, &x) > k->max_packet_out) {
            STAT_ADD(l->stats.dropped_too_large, 1);
            return false;
        }
        x.topic_alias = 0;
    }
    if (k && k->alias_out_max)
        session_alias_out(k, m, &x);
    msg_write_publish5(m, &c->out, d->qos, packet_id, dup, d->retain, &x);
    conn_mark_dirty(l, c);
    return true;
}

/* Writes one PUBLISH of m to c in its protocol. Returns false, writing
 * nothing, when the packet would exceed the client's Maximum Packet Size:
 * the message is then dropped as if delivered [MQTT-3.1.2-25]. MQTT 3.1.1
 * is the short path, as it is the hot one. */
static inline bool session_write(struct broker_loop *l, struct conn *c, struct msg *m,
                                 const struct delivery *d, uint16_t packet_id, bool dup)
{
    if (c->v5)
        return session_write5(l, c, m, d, packet_id, dup);
    msg_write_publish(m, &c->out, d->qos, packet_id, dup, d->retain);
    conn_mark_dirty(l, c);
    return true;
}

static void session_send_qos0(struct broker_loop *l, struct conn *c, struct msg *m,
                              const struct delivery *d)
{
    if (session_write(l, c, m, d, 0, false))
        STAT_ADD(l->stats.msgs_out, 1);
}

/* A new slot at the end of the inflight window. */
static struct inflight *session_inflight_add(struct broker_loop *l, struct session *s)
{
    if (s->ninflight == s->inflight_cap) {
        s->inflight_cap = s->inflight_cap ? s->inflight_cap * 2 : 4;
        if (s->inflight_cap > l->cfg->max_inflight)
            s->inflight_cap = l->cfg->max_inflight;
        if (s->inflight_cap <= s->ninflight) /* restored beyond a smaller window */
            s->inflight_cap = s->ninflight + 1;
        s->inflight = mem_realloc(s->inflight, s->inflight_cap * sizeof *s->inflight);
    }
    return &s->inflight[s->ninflight++];
}

static void session_send_inflight(struct broker_loop *l, struct session *s, struct msg *m,
                                  const struct delivery *d)
{
    struct broker *b = l->b;
    uint16_t packet_id = session_next_packet_id(s);
    if (!session_write(l, s->conn, m, d, packet_id, false)) {
        persist_entry_del(b, d, false);
        return;
    }
    struct inflight *f = session_inflight_add(l, s);
    f->msg = msg_ref(m);
    session_keep(&f->d, d);
    f->d.entry = persist_out(b, s, m, d, PLOG_PUBLISH_SENT, packet_id);
    f->packet_id = packet_id;
    f->state = d->qos == 1 ? WAIT_PUBACK : WAIT_PUBREC;
    STAT_ADD(l->stats.msgs_out, 1);
}

static void session_enqueue(struct broker_loop *l, struct session *s, struct msg *m,
                            const struct delivery *d)
{
    struct broker *b = l->b;
    if (s->qlen >= l->cfg->max_queued) {
        session_drop(l, s, &l->stats.dropped_queue_full, "max-queued-messages reached");
        persist_entry_del(l->b, d, false); /* recorded by another loop (persist_remote) */
        return;
    }
    if (s->qlen == s->qcap) {
        uint32_t cap = s->qcap ? s->qcap * 2 : 8;
        struct queued *q = mem_alloc(cap * sizeof *q);
        for (uint32_t i = 0; i < s->qlen; i++)
            q[i] = s->queue[(s->qhead + i) % s->qcap];
        mem_free(s->queue);
        s->queue = q;
        s->qcap = cap;
        s->qhead = 0;
    }
    struct queued *e = &s->queue[(s->qhead + s->qlen++) % s->qcap];
    e->msg = msg_ref(m);
    session_keep(&e->d, d);
    if (!d->entry)
        e->d.entry = persist_out(b, s, m, d, PLOG_QUEUED, 0);
}

void session_restore(struct broker_loop *l, struct session *s, struct msg *m,
                     const struct delivery *d, uint8_t state, uint16_t packet_id)
{
    /* Sessions of other loops may hold m too: persist_load shares it, or
     * their releases race on its count (and only TSan, now and then, says so). */
    assert(l->b->nloops == 1 || m->rc.atomic);
    if (state == PLOG_QUEUED || (state == PLOG_PUBLISH_SENT && s->ninflight >= l->cfg->max_inflight)) {
        session_enqueue(l, s, m, d);
        return;
    }
    struct inflight *f = session_inflight_add(l, s);
    session_keep(&f->d, d);
    f->packet_id = packet_id;
    if (state == PLOG_PUBREL_SENT) {
        f->msg = NULL;
        f->state = WAIT_PUBCOMP;
    } else {
        f->msg = msg_ref(m);
        f->state = d->qos == 1 ? WAIT_PUBACK : WAIT_PUBREC;
    }
}

/* Moves queued messages into the inflight window while it has room. */
static void session_pump(struct broker_loop *l, struct session *s)
{
    struct broker *b = l->b;
    uint64_t now = s->qlen ? ev_now(l->ev) : 0;
    while (s->conn && s->qlen > 0 && s->ninflight < session_window(l, s)) {
        struct queued e = s->queue[s->qhead];
        s->qhead = (s->qhead + 1) % s->qcap;
        s->qlen--;
        if (e.msg->expires_ms && msg_expired(e.msg, now)) {
            STAT_ADD(l->stats.dropped_expired, 1); /* [MQTT-3.3.2-5] */
            persist_entry_del(b, &e.d, false);
        } else if (e.d.qos == 0) {
            session_send_qos0(l, s->conn, e.msg, &e.d);
            persist_entry_del(b, &e.d, false); /* sent: QoS 0 waits for nothing */
        } else
            session_send_inflight(l, s, e.msg, &e.d);
        msg_unref(e.msg);
        session_let_go(&e.d);
    }
    if (s->qlen == 0 && s->queue) {
        mem_free(s->queue);
        s->queue = NULL;
        s->qcap = s->qhead = 0;
    }
    if (session_holds_up(s))
        session_release_publishers(l, s, false);
}

/* ---- back-pressure ------------------------------------------------------- */

static bool session_above(const struct session *s, size_t out, uint32_t queued)
{
    return outq_pending(&s->conn->out) >= out || s->qlen >= queued;
}

/* p's wait begins, on the wait list at *head (its subscriber's waiters,
 * or its loop's remote_waiters): whether its subscriber is local or not,
 * one whose grace is spent is watched for stalls (l->stall). */
static void session_wait_begin(struct broker_loop *l, struct conn *p, const struct session *s,
                               struct conn **head)
{
    uint64_t now = ev_now(l->ev);
    struct conn_cold *k = conn_cold(p);
    k->blocked_since_ms = now;
    k->wait_began_slow = __atomic_load_n(&s->held, __ATOMIC_SEQ_CST) == SESSION_SLOW;
    if (session_grace_spent(p, now) && !ev_timer_active(&l->stall))
        ev_timer_start(l->ev, &l->stall, BROKER_STALL_MS, 0);
    k->wait_prev = NULL;
    k->wait_next = *head;
    if (*head)
        (*head)->cold->wait_prev = p;
    *head = p;
    STAT_ADD(l->stats.publisher_waits, 1);
}

static void session_push_back(struct broker_loop *l, struct session *s, struct conn *p)
{
    struct broker *b = l->b;
    /* Waits form chains, never cycles; and a subscriber that is itself a
     * waiting publisher is behind because we stopped reading it. */
    if (!p || p->session == s || session_cold_peek(s)->slow_consumer || conn_waiting(s->conn) ||
        !session_above(s, b->out_high, b->queue_high))
        return;
    struct session_cold *sk = session_cold(s);
    if (!sk->congested_ms)
        sk->congested_ms = ev_now(l->ev);
    /* A publisher closed while its packet was handled has nothing left to
     * pause; one already waiting waits for one subscriber at a time. */
    if (p->state >= CONN_LINGER || conn_waiting(p))
        return;
    conn_cold(p)->blocked_on = s;
    session_wait_begin(l, p, s, &sk->waiters);
}

/* Takes p off the wait list that starts at *head. A wait that s's flag
 * ended (session.held SLOW: local or remote alike) spends p's grace. */
static void session_wait_unlink(struct conn **head, struct conn *p, const struct session *s)
{
    struct conn_cold *k = p->cold;
    if (!k->wait_began_slow && __atomic_load_n(&s->held, __ATOMIC_SEQ_CST) == SESSION_SLOW)
        k->grace_spent_ms = ev_now(((struct broker_loop *)p->io.data)->ev);
    if (k->wait_prev)
        k->wait_prev->cold->wait_next = k->wait_next;
    else
        *head = k->wait_next;
    if (k->wait_next)
        k->wait_next->cold->wait_prev = k->wait_prev;
    k->wait_prev = k->wait_next = NULL;
}

static void session_unwait_remote(struct conn *p)
{
    struct broker_loop *l = p->io.data;
    struct session *s = p->cold->remote_on;
    session_wait_unlink(&l->remote_waiters, p, s);
    p->cold->remote_on = NULL;
    session_put(s);
}

void session_forget_publisher(struct conn *c)
{
    if (!c->cold)
        return; /* it never waited */
    if (c->cold->remote_on)
        session_unwait_remote(c);
    struct session *s = c->cold->blocked_on;
    if (!s)
        return;
    session_wait_unlink(&s->cold->waiters, c, s);
    c->cold->blocked_on = NULL;
}

void session_release_publishers(struct broker_loop *l, struct session *s, bool unconditionally)
{
    struct broker *b = l->b;
    if (!unconditionally && s->conn && session_above(s, b->out_low + 1, b->queue_low + 1))
        return;
    struct session_cold *k = s->cold;
    if (k && !unconditionally && k->slow_consumer) {
        k->slow_consumer = false;
        __atomic_store_n(&s->held, SESSION_FREE, __ATOMIC_SEQ_CST);
    }
    if (k)
        k->congested_ms = 0;
    while (k && k->waiters) {
        struct conn *p = k->waiters;
        session_forget_publisher(p);
        conn_read_later(l, p);
    }
    if (__atomic_load_n(&s->held, __ATOMIC_RELAXED) == SESSION_HELD)
        __atomic_store_n(&s->held, SESSION_FREE, __ATOMIC_SEQ_CST);
    session_wake_remote(l, s);
}

/* ---- back-pressure across loops (session.h) ------------------------------ */

/* Whether another loop's publisher should wait for s. Sequentially
 * consistent, with the stores of remote_waiting and the loads of
 * session_wake_remote: either the publisher sees s let go, or s's loop
 * sees it waits. */
static bool session_full_remote(const struct broker *b, const struct session *s)
{
    return __atomic_load_n(&s->held, __ATOMIC_SEQ_CST) == SESSION_HELD ||
           __atomic_load_n(&s->xpending, __ATOMIC_SEQ_CST) >= b->queue_high;
}

/* Whether a publisher of another loop is to wait, or wait on, for s:
 * told to s's loop first (remote_waiting), then checked again, so that
 * either this sees s let go or s's loop sees the wait and wakes us. Each
 * wake-up takes remote_waiting: one still waiting after it says so again,
 * else a wait for deliveries on their way (xpending), which outlasts s's
 * hold, would be woken only by the sweep. */
static bool session_keeps_waiting(const struct broker *b, struct session *s)
{
    if (!session_full_remote(b, s))
        return false;
    __atomic_store_n(&s->remote_waiting, true, __ATOMIC_SEQ_CST);
    return session_full_remote(b, s);
}

void session_wait_remote(struct broker_loop *l, struct session *s, struct conn *p)
{
    if (conn_waiting(p) || p->state >= CONN_LINGER || !session_keeps_waiting(l->b, s))
        return;
    /* s lives: the delivery just handed to its loop holds it. */
    __atomic_fetch_add(&s->refs, 1, __ATOMIC_RELAXED);
    conn_cold(p)->remote_on = s;
    session_wait_begin(l, p, s, &l->remote_waiters);
}

void session_push_back_remote(struct broker_loop *l, struct session *s)
{
    struct broker *b = l->b;
    if (!s->conn || session_cold_peek(s)->slow_consumer || conn_waiting(s->conn) ||
        !session_above(s, b->out_high, b->queue_high))
        return;
    struct session_cold *k = session_cold(s);
    if (!k->congested_ms)
        k->congested_ms = ev_now(l->ev);
    if (__atomic_load_n(&s->held, __ATOMIC_RELAXED) == SESSION_FREE)
        __atomic_store_n(&s->held, SESSION_HELD, __ATOMIC_SEQ_CST);
}

void session_wake_remote(struct broker_loop *l, struct session *s)
{
    if (!__atomic_load_n(&s->remote_waiting, __ATOMIC_SEQ_CST) ||
        __atomic_load_n(&s->held, __ATOMIC_RELAXED) == SESSION_HELD ||
        !__atomic_exchange_n(&s->remote_waiting, false, __ATOMIC_SEQ_CST))
        return;
    /* Which loops wait is not kept: every other one checks. */
    for (unsigned i = 0; i < l->b->nloops; i++) {
        if (i == l->index)
            continue;
        struct xloop_entry *e = xloop_push(&l->x, i);
        *e = (struct xloop_entry){.kind = XLOOP_RECHECK};
    }
}

void session_recheck_remote(struct broker_loop *l)
{
    struct conn *next;
    for (struct conn *p = l->remote_waiters; p; p = next) {
        next = p->cold->wait_next;
        if (session_keeps_waiting(l->b, p->cold->remote_on))
            continue;
        session_unwait_remote(p);
        conn_read_later(l, p);
    }
}

bool session_grace_spent(const struct conn *p, uint64_t now)
{
    uint64_t spent = conn_cold_peek(p)->grace_spent_ms;
    return spent && now - spent < BROKER_GRACE_RENEW_MS;
}

void session_flag_slow(struct broker_loop *l, struct session *s)
{
    struct session_cold *k = session_cold(s);
    k->slow_consumer = true;
    STAT_ADD(l->stats.slow_consumers, 1);
    log_warn("client %s is a slow consumer: publishers no longer wait for it, messages to it are "
             "dropped at its limits",
             s->client_id);
    /* Before its publishers go, here and on other loops: their grace is
     * spent (session_wait_unlink). */
    __atomic_store_n(&s->held, SESSION_SLOW, __ATOMIC_SEQ_CST);
    session_release_publishers(l, s, true);
}

/* On s's loop: flags s if a publisher whose grace is spent waited for it
 * since `since` and it made no progress for BROKER_STALL_MS of that;
 * returns when to look again, 0 if flagged. */
static uint64_t session_stall_due(struct broker_loop *l, struct session *s, uint64_t since)
{
    uint64_t progress = session_cold_peek(s)->progress_ms;
    uint64_t due = (progress > since ? progress : since) + BROKER_STALL_MS;
    if (ev_now(l->ev) < due)
        return due;
    session_flag_slow(l, s);
    return 0;
}

uint64_t session_check_stall(struct broker_loop *l, struct conn *p, struct session *s)
{
    uint64_t now = ev_now(l->ev), since = p->cold->blocked_since_ms;
    if (!session_grace_spent(p, now))
        return 0;
    if (s->loop == l)
        return session_stall_due(l, s, since);
    if (now < since + BROKER_STALL_MS)
        return since + BROKER_STALL_MS;
    /* Its progress is its loop's to read: asked again each BROKER_STALL_MS
     * while p waits, it flags s once it made none for that long. The
     * entry wakes that loop (xloop_flush), whose sweep is too far off. */
    __atomic_fetch_add(&s->refs, 1, __ATOMIC_RELAXED); /* p's wait holds it */
    struct xloop_entry *e = xloop_push(&l->x, s->loop->index);
    *e = (struct xloop_entry){.kind = XLOOP_STALL, .p = s};
    return now + BROKER_STALL_MS;
}

void session_stall_take(struct broker_loop *l, struct session *s)
{
    /* Only while s holds them: a wait for deliveries on their way
     * (xpending) is this loop's delay, not the subscriber's. */
    if (!s->gone && __atomic_load_n(&s->held, __ATOMIC_RELAXED) == SESSION_HELD)
        session_stall_due(l, s, ev_now(l->ev) - BROKER_STALL_MS);
    session_put(s);
}

void session_deliver(struct broker_loop *l, struct session *s, struct msg *m,
                     const struct delivery *d, struct conn *publisher)
{
    struct conn *c = s->conn;
    if (m->expires_ms && msg_expired(m, ev_now(l->ev))) {
        STAT_ADD(l->stats.dropped_expired, 1);
        persist_entry_del(l->b, d, false); /* recorded by another loop (persist_remote) */
        return;
    }
    if (d->qos == 0) {
        if (c) {
            if (outq_pending(&c->out) < l->cfg->max_output)
                session_send_qos0(l, c, m, d);
            else
                session_drop(l, s, &l->stats.dropped_output_full, "max-output-bytes reached");
            persist_entry_del(l->b, d, false); /* queued by another loop: it saw s offline */
            session_push_back(l, s, publisher);
        } else if (l->cfg->queue_qos0) {
            session_enqueue(l, s, m, d);
        } else {
            STAT_ADD(l->stats.dropped_offline_qos0, 1);
        }
        return;
    }
    if (c && s->qlen == 0 && s->ninflight < session_window(l, s))
        session_send_inflight(l, s, m, d);
    else
        session_enqueue(l, s, m, d);
    if (c)
        session_push_back(l, s, publisher);
}

/* Drops inflight entry i (acknowledged, or never to be sent). */
static void session_inflight_remove(struct broker_loop *l, struct session *s, uint32_t i)
{
    struct broker *b = l->b;
    struct inflight *f = &s->inflight[i];
    persist_entry_del(b, &f->d, f->state == WAIT_PUBCOMP);
    if (f->msg)
        msg_unref(f->msg);
    session_let_go(&f->d);
    memmove(f, f + 1, (s->ninflight - i - 1) * sizeof *f);
    s->ninflight--;
    if (s->ninflight == 0) {
        mem_free(s->inflight);
        s->inflight = NULL;
        s->inflight_cap = 0;
    }
}

void session_resume(struct broker_loop *l, struct session *s)
{
    struct conn *c = s->conn;
    uint32_t i = 0;
    while (i < s->ninflight) {
        struct inflight *f = &s->inflight[i];
        if (f->state == WAIT_PUBCOMP) {
            mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), MQTT_PUBREL, f->packet_id);
        } else if (!session_write(l, c, f->msg, &f->d, f->packet_id, true)) {
            session_inflight_remove(l, s, i);
            continue;
        }
        i++;
    }
    conn_mark_dirty(l, c);
    session_pump(l, s);
}

void session_hand_off(struct broker_loop *l, struct session *s, session_hand_off_fn fn, void *ctx)
{
    struct broker *b = l->b;
    uint32_t i = 0;
    while (i < s->ninflight) {
        struct inflight *f = &s->inflight[i];
        struct delivery d = f->d;
        d.entry = 0; /* the other member's copy is its own */
        if (d.shared && f->state != WAIT_PUBCOMP && fn(ctx, s, f->msg, &d))
            session_inflight_remove(l, s, i);
        else
            i++;
    }
    uint32_t kept = 0, n = s->qlen;
    for (uint32_t k = 0; k < n; k++) {
        struct queued e = s->queue[(s->qhead + k) % s->qcap];
        struct delivery d = e.d;
        d.entry = 0;
        if (e.d.shared && fn(ctx, s, e.msg, &d)) {
            persist_entry_del(b, &e.d, false);
            msg_unref(e.msg);
            session_let_go(&e.d);
        } else
            s->queue[(s->qhead + kept++) % s->qcap] = e;
    }
    s->qlen = kept;
}

void session_acked(struct broker_loop *l, struct session *s, uint8_t type, uint16_t packet_id,
                   uint8_t reason)
{
    struct broker *b = l->b;
    session_progress(s, ev_now(l->ev));
    uint32_t i = 0;
    while (i < s->ninflight && s->inflight[i].packet_id != packet_id)
        i++;
    if (i == s->ninflight)
        return; /* unknown or already acknowledged: nothing to do */
    struct inflight *f = &s->inflight[i];
    if (type == MQTT_PUBREC) {
        if (f->state == WAIT_PUBACK)
            return;
        if (reason >= 0x80) {
            /* MQTT 5: the receiver refused it; the flow ends here (4.3.3). */
            session_inflight_remove(l, s, i);
            session_pump(l, s);
            return;
        }
        if (f->msg) {
            msg_unref(f->msg);
            f->msg = NULL;
        }
        f->state = WAIT_PUBCOMP;
        persist_pubrel_sent(b, &f->d, packet_id);
        mqtt_encode_ack(outq_reserve(&s->conn->out, MQTT_ACK_LEN), MQTT_PUBREL, packet_id);
        conn_mark_dirty(l, s->conn);
        return;
    }
    if ((type == MQTT_PUBACK) != (f->state == WAIT_PUBACK) ||
        (type == MQTT_PUBCOMP && f->state != WAIT_PUBCOMP))
        return;
    session_inflight_remove(l, s, i);
    session_pump(l, s);
}

/* ---- received QoS 2 ------------------------------------------------------ */

int session_qos2_seen(struct session *s, uint16_t packet_id, uint32_t limit)
{
    const struct session_cold *r = session_cold_peek(s);
    for (uint32_t i = 0; i < r->nqos2_in; i++)
        if (r->qos2_in[i] == packet_id)
            return 1;
    if (r->nqos2_in >= limit)
        return -1;
    struct session_cold *k = session_cold(s);
    if (k->nqos2_in == k->qos2_in_cap) {
        k->qos2_in_cap = k->qos2_in_cap ? k->qos2_in_cap * 2 : 4;
        k->qos2_in = mem_realloc(k->qos2_in, k->qos2_in_cap * sizeof *k->qos2_in);
    }
    k->qos2_in[k->nqos2_in++] = packet_id;
    return 0;
}

bool session_qos2_release(struct session *s, uint16_t packet_id)
{
    struct session_cold *k = s->cold;
    if (!k)
        return false;
    bool found = false;
    for (uint32_t i = 0; i < k->nqos2_in; i++) {
        if (k->qos2_in[i] == packet_id) {
            k->qos2_in[i] = k->qos2_in[--k->nqos2_in];
            found = true;
            break;
        }
    }
    if (k->nqos2_in == 0) {
        mem_free(k->qos2_in);
        k->qos2_in = NULL;
        k->qos2_in_cap = 0;
    }
    return found;
}

/* ---- subscriptions ------------------------------------------------------- */

/* The index of the filter's entry in s->subs; the map holds index + 1, as
 * its values may not be NULL. */
static bool session_sub_index(const struct session *s, const uint8_t *filter, size_t len,
                              uint32_t *i)
{
    uintptr_t v = (uintptr_t)hmap_get(&s->sub_index, filter, len);
    *i = (uint32_t)(v - 1);
    return v != 0;
}

bool session_has_sub(const struct session *s, const uint8_t *filter, size_t len)
{
    uint32_t i;
    return session_sub_index(s, filter, len, &i);
}

bool session_add_sub(struct session *s, const uint8_t *filter, size_t len, subtree_opts opts)
{
    uint32_t i;
    if (session_sub_index(s, filter, len, &i)) {
        s->subs[i].opts = opts;
        return false;
    }
    if (s->nsubs == s->subs_cap) {
        s->subs_cap = s->subs_cap ? s->subs_cap * 2 : 2;
        s->subs = mem_realloc(s->subs, s->subs_cap * sizeof *s->subs);
    }
    struct session_sub *e = &s->subs[s->nsubs++];
    e->filter = (uint8_t *)mem_strndup(filter, len);
    e->len = (uint16_t)len;
    e->opts = opts;
    hmap_put(&s->sub_index, e->filter, len, (void *)(uintptr_t)s->nsubs);
    return true;
}

bool session_remove_sub(struct session *s, const uint8_t *filter, size_t len)
{
    uint32_t i;
    if (!session_sub_index(s, filter, len, &i))
        return false;
    hmap_del(&s->sub_index, filter, len);
    mem_free(s->subs[i].filter);
    s->subs[i] = s->subs[--s->nsubs];
    if (i < s->nsubs) /* the last entry moved into the hole */
        hmap_put(&s->sub_index, s->subs[i].filter, s->subs[i].len, (void *)(uintptr_t)(i + 1));
    if (s->nsubs == 0)
        hmap_free(&s->sub_index);
    return true;
}
