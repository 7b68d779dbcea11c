/* session.c - MQTT sessions: subscriptions remembered for cleanup, the
 * outgoing QoS 1/2 inflight window and queue, and the received QoS 2
 * packet ids waiting for PUBREL.
 *
 * The inflight window is small (max_inflight, 20 by default) and kept in
 * send order, so linear scans by packet id are the cheapest lookup and
 * redelivery after a reconnect keeps the original order.
 */
#include <string.h>

#include "broker/broker_int.h"
#include "broker/subtree.h"
#include "core/log.h"
#include "core/mem.h"
#include "mqtt/mqtt_codec.h"

struct session *session_new(struct broker *b, const uint8_t *client_id, size_t len, bool clean)
{
    struct session *s = mem_calloc(1, sizeof *s);
    s->client_id = mem_strndup(client_id, len);
    s->client_id_len = (uint16_t)len;
    s->clean = clean;
    hmap_put(&b->sessions, s->client_id, len, s);
    return s;
}

void session_destroy(struct broker *b, struct session *s)
{
    session_release_publishers(b, s, true);
    for (uint32_t i = 0; i < s->nsubs; i++) {
        subtree_remove(b->subs, s->subs[i].filter, s->subs[i].len, s);
        mem_free(s->subs[i].filter);
    }
    for (uint32_t i = 0; i < s->ninflight; i++)
        if (s->inflight[i].msg)
            msg_unref(s->inflight[i].msg);
    for (uint32_t i = 0; i < s->qlen; i++)
        msg_unref(s->queue[(s->qhead + i) % s->qcap].msg);
    hmap_del(&b->sessions, s->client_id, s->client_id_len);
    mem_free(s->subs);
    mem_free(s->inflight);
    mem_free(s->queue);
    mem_free(s->qos2_in);
    mem_free(s->client_id);
    mem_free(s);
}

/* ---- outgoing messages --------------------------------------------------- */

/* Counts a message dropped at a bound, and says so in the log, at most once
 * a second so that a flood of drops cannot flood the log too. */
static void session_drop(struct broker *b, struct session *s, uint64_t *counter, const char *why)
{
    (*counter)++;
    uint64_t now = ev_now(b->loop);
    if (now - b->stats.last_drop_log_ms < 1000)
        return;
    b->stats.last_drop_log_ms = now;
    log_warn("client %s: message dropped (%s); dropped so far: %llu queue full, %llu output full",
             s->client_id, why, (unsigned long long)b->stats.dropped_queue_full,
             (unsigned long long)b->stats.dropped_output_full);
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

static void session_send_qos0(struct broker *b, struct conn *c, struct msg *m, bool retain)
{
    msg_write_publish(m, &c->out, 0, 0, false, retain);
    conn_mark_dirty(b, c);
    b->stats.msgs_out++;
}

static void session_send_inflight(struct broker *b, struct session *s, struct msg *m, uint8_t qos,
                                  bool retain)
{
    if (s->ninflight == s->inflight_cap) {
        s->inflight_cap = s->inflight_cap ? s->inflight_cap * 2 : 4;
        if (s->inflight_cap > b->cfg->max_inflight)
            s->inflight_cap = b->cfg->max_inflight;
        s->inflight = mem_realloc(s->inflight, s->inflight_cap * sizeof *s->inflight);
    }
    struct inflight *f = &s->inflight[s->ninflight++];
    f->msg = msg_ref(m);
    f->packet_id = session_next_packet_id(s);
    f->qos = qos;
    f->state = qos == 1 ? WAIT_PUBACK : WAIT_PUBREC;
    f->retain = retain;
    msg_write_publish(m, &s->conn->out, qos, f->packet_id, false, retain);
    conn_mark_dirty(b, s->conn);
    b->stats.msgs_out++;
}

static void session_enqueue(struct broker *b, struct session *s, struct msg *m, uint8_t qos, bool retain)
{
    if (s->qlen >= b->cfg->max_queued) {
        session_drop(b, s, &b->stats.dropped_queue_full, "max-queued-messages reached");
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
    e->qos = qos;
    e->retain = retain;
}

/* Moves queued messages into the inflight window while it has room. */
static void session_pump(struct broker *b, struct session *s)
{
    while (s->conn && s->qlen > 0 && s->ninflight < b->cfg->max_inflight) {
        struct queued e = s->queue[s->qhead];
        s->qhead = (s->qhead + 1) % s->qcap;
        s->qlen--;
        if (e.qos == 0)
            session_send_qos0(b, s->conn, e.msg, e.retain);
        else
            session_send_inflight(b, s, e.msg, e.qos, e.retain);
        msg_unref(e.msg);
    }
    if (s->qlen == 0 && s->queue) {
        mem_free(s->queue);
        s->queue = NULL;
        s->qcap = s->qhead = 0;
    }
    if (s->waiters || s->slow_consumer)
        session_release_publishers(b, s, false);
}

/* ---- back-pressure ------------------------------------------------------- */

static bool session_above(const struct session *s, size_t out, uint32_t queued)
{
    return outq_pending(&s->conn->out) >= out || s->qlen >= queued;
}

static void session_push_back(struct broker *b, struct session *s)
{
    struct conn *p = b->publisher;
    if (!p || p->blocked_on || p->session == s || s->slow_consumer || s->conn->blocked_on ||
        !session_above(s, b->out_high, b->queue_high))
        return;
    p->blocked_on = s;
    p->blocked_since_ms = ev_now(b->loop);
    p->wait_prev = NULL;
    p->wait_next = s->waiters;
    if (s->waiters)
        s->waiters->wait_prev = p;
    s->waiters = p;
    b->stats.publisher_waits++;
}

void session_forget_publisher(struct conn *c)
{
    struct session *s = c->blocked_on;
    if (!s)
        return;
    if (c->wait_prev)
        c->wait_prev->wait_next = c->wait_next;
    else
        s->waiters = c->wait_next;
    if (c->wait_next)
        c->wait_next->wait_prev = c->wait_prev;
    c->blocked_on = NULL;
    c->wait_prev = c->wait_next = NULL;
}

void session_release_publishers(struct broker *b, struct session *s, bool unconditionally)
{
    if (!unconditionally && s->conn && session_above(s, b->out_low + 1, b->queue_low + 1))
        return;
    if (!unconditionally)
        s->slow_consumer = false;
    while (s->waiters) {
        struct conn *p = s->waiters;
        session_forget_publisher(p);
        conn_resume(b, p);
    }
}

void session_deliver(struct broker *b, struct session *s, struct msg *m, uint8_t qos, bool retain)
{
    struct conn *c = s->conn;
    if (qos == 0) {
        if (c) {
            if (outq_pending(&c->out) < b->cfg->max_output)
                session_send_qos0(b, c, m, retain);
            else
                session_drop(b, s, &b->stats.dropped_output_full, "max-output-bytes reached");
            session_push_back(b, s);
        } else if (b->cfg->queue_qos0) {
            session_enqueue(b, s, m, 0, retain);
        } else {
            b->stats.dropped_offline_qos0++;
        }
        return;
    }
    if (c && s->qlen == 0 && s->ninflight < b->cfg->max_inflight)
        session_send_inflight(b, s, m, qos, retain);
    else
        session_enqueue(b, s, m, qos, retain);
    if (c)
        session_push_back(b, s);
}

void session_resume(struct broker *b, struct session *s)
{
    struct conn *c = s->conn;
    for (uint32_t i = 0; i < s->ninflight; i++) {
        struct inflight *f = &s->inflight[i];
        if (f->state == WAIT_PUBCOMP)
            mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), MQTT_PUBREL, f->packet_id);
        else
            msg_write_publish(f->msg, &c->out, f->qos, f->packet_id, true, f->retain);
    }
    conn_mark_dirty(b, c);
    session_pump(b, s);
}

void session_acked(struct broker *b, struct session *s, uint8_t type, uint16_t packet_id)
{
    uint32_t i = 0;
    while (i < s->ninflight && s->inflight[i].packet_id != packet_id)
        i++;
    if (i == s->ninflight)
        return; /* unknown or already acknowledged: nothing to do */
    struct inflight *f = &s->inflight[i];
    if (type == MQTT_PUBREC) {
        if (f->state == WAIT_PUBACK)
            return;
        if (f->msg) {
            msg_unref(f->msg);
            f->msg = NULL;
        }
        f->state = WAIT_PUBCOMP;
        mqtt_encode_ack(outq_reserve(&s->conn->out, MQTT_ACK_LEN), MQTT_PUBREL, packet_id);
        conn_mark_dirty(b, s->conn);
        return;
    }
    if ((type == MQTT_PUBACK) != (f->state == WAIT_PUBACK) ||
        (type == MQTT_PUBCOMP && f->state != WAIT_PUBCOMP))
        return;
    if (f->msg)
        msg_unref(f->msg);
    memmove(f, f + 1, (s->ninflight - i - 1) * sizeof *f);
    s->ninflight--;
    if (s->ninflight == 0) {
        mem_free(s->inflight);
        s->inflight = NULL;
        s->inflight_cap = 0;
    }
    session_pump(b, s);
}

/* ---- received QoS 2 ------------------------------------------------------ */

bool session_qos2_seen(struct session *s, uint16_t packet_id)
{
    for (uint32_t i = 0; i < s->nqos2_in; i++)
        if (s->qos2_in[i] == packet_id)
            return true;
    if (s->nqos2_in == s->qos2_in_cap) {
        s->qos2_in_cap = s->qos2_in_cap ? s->qos2_in_cap * 2 : 4;
        s->qos2_in = mem_realloc(s->qos2_in, s->qos2_in_cap * sizeof *s->qos2_in);
    }
    s->qos2_in[s->nqos2_in++] = packet_id;
    return false;
}

void session_qos2_release(struct session *s, uint16_t packet_id)
{
    for (uint32_t i = 0; i < s->nqos2_in; i++) {
        if (s->qos2_in[i] == packet_id) {
            s->qos2_in[i] = s->qos2_in[--s->nqos2_in];
            break;
        }
    }
    if (s->nqos2_in == 0) {
        mem_free(s->qos2_in);
        s->qos2_in = NULL;
        s->qos2_in_cap = 0;
    }
}

/* ---- subscriptions ------------------------------------------------------- */

bool session_add_sub(struct session *s, const uint8_t *filter, size_t len, uint8_t qos)
{
    for (uint32_t i = 0; i < s->nsubs; i++) {
        if (s->subs[i].len == len && memcmp(s->subs[i].filter, filter, len) == 0) {
            s->subs[i].qos = qos;
            return false;
        }
    }
    if (s->nsubs == s->subs_cap) {
        s->subs_cap = s->subs_cap ? s->subs_cap * 2 : 2;
        s->subs = mem_realloc(s->subs, s->subs_cap * sizeof *s->subs);
    }
    struct session_sub *e = &s->subs[s->nsubs++];
    e->filter = (uint8_t *)mem_strndup(filter, len);
    e->len = (uint16_t)len;
    e->qos = qos;
    return true;
}

bool session_remove_sub(struct session *s, const uint8_t *filter, size_t len)
{
    for (uint32_t i = 0; i < s->nsubs; i++) {
        if (s->subs[i].len == len && memcmp(s->subs[i].filter, filter, len) == 0) {
            mem_free(s->subs[i].filter);
            s->subs[i] = s->subs[--s->nsubs];
            return true;
        }
    }
    return false;
}
