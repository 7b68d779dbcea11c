/* conn_end.c - ending a connection: at once, or lingering after its last
 * output (conn_end.h).
 *
 * A connection the broker ends (conn_kick, a refused CONNECT) lingers
 * before its socket is closed: it is off its loop's list and its session
 * is detached at once, but it stays on l->closed, in CONN_LINGER, with its
 * output and transport, until that output is out, the write side shut and
 * the client gone, or LINGER_MS passed.
 */
#include "broker/conn_end.h"

#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/handle.h"
#include "broker/metrics.h"
#include "broker/msg.h"
#include "broker/session.h"
#include "broker/session_life.h"
#include "broker/transport.h"
#include "cluster/kv_sess.h"
#include "core/linger.h"
#include "core/mem.h"
#include "mqtt/mqtt_codec.h"


static void conn_free_aliases(struct topic_alias *a, unsigned n)
{
    if (!a)
        return;
    for (unsigned i = 0; i < n; i++)
        mem_free(a[i].topic);
    mem_free(a);
}

/* The MQTT side of ending a connection: off its loop's list, onto
 * l->closed, its session detached and its will published unless graceful. */
static void conn_end(struct broker_loop *l, struct conn *c, const char *reason, bool graceful)
{
    struct broker *b = l->b;
    metrics_log_disconnect(b, c, reason);
    STAT_ADD(l->nconns, -1);
    conn_unlink(l, c);
    c->next = l->closed;
    l->closed = c;
    inbuf_free(&c->in);
    conn_count_input(l, c);
    struct conn_cold *k = c->cold;
    struct msg *will = NULL;
    uint32_t will_delay_s = 0;
    if (k) {
        sub_job_free(k->job);
        k->job = NULL;
        session_forget_publisher(c);
        conn_free_aliases(k->alias_in, BROKER_TOPIC_ALIAS_MAX);
        conn_free_aliases(k->alias_out, k->alias_out_max);
        k->alias_in = k->alias_out = NULL;
        will = k->will;
        will_delay_s = k->will_delay_s;
        k->will = NULL;
        if (k->claim && !k->claiming) { /* else its answer ends it (connect_claimed) */
            kv_sess_claim_done(b->kv_sess, k->claim);
            k->claim = NULL;
        }
    }

    struct session *s = c->session;
    c->session = NULL;
    if (will && graceful) {
        msg_unref(will);
        will = NULL;
    }
    if (s) {
        STAT_ADD(l->nclients, -1);
        session_detach(l, s, will, will_delay_s);
    } else if (will) {
        msg_unref(will);
    }
}

/* Done with the socket: it is closed when the struct is freed, after this
 * iteration's commit (a client that sees its connection end, after its
 * DISCONNECT say, may take what that changed as durable). */
void conn_release(struct conn *c)
{
    if (conn_tp(c))
        transport_free(c);
    outq_clear(&c->out);
    c->state = CONN_CLOSED;
}

void conn_close(struct broker_loop *l, struct conn *c, const char *reason, bool graceful)
{
    if (c->state == CONN_CLOSED)
        return;
    if (c->state == CONN_LINGER) {
        conn_release(c);
        return;
    }
    c->state = CONN_CLOSED; /* nothing is read or sent from here on */
    conn_end(l, c, reason, graceful);
    conn_release(c);
}

/* Ends the connection but keeps the socket lingering (see the top). */
static void conn_linger(struct broker_loop *l, struct conn *c, const char *reason, bool graceful)
{
    if (c->state >= CONN_LINGER)
        return;
    c->state = CONN_LINGER;
    c->last_rx_ms = ev_now(l->ev) + LINGER_MS;
    conn_end(l, c, reason, graceful);
    conn_mark_dirty(l, c);
}

/* CONN_LINGER: drops what the client sends; it is done once it closed and
 * our output is out. */
void conn_linger_read(struct conn *c)
{
    if (c->peer_done || linger_discard(c->io.fd, &c->dropped) != LINGER_EOF)
        return; /* past LINGER_MAX_BYTES it waits for the time to run out */
    c->peer_done = true;
    if (c->shut)
        conn_release(c);
}

void conn_kick(struct broker_loop *l, struct conn *c, uint8_t reason, const char *why,
               bool graceful)
{
    if (c->state >= CONN_LINGER)
        return;
    if (c->v5 && c->state == CONN_ACTIVE)
        conn_write_reason(c, MQTT_DISCONNECT, 0, reason, why);
    l->kick_reason = reason;
    conn_linger(l, c, why, graceful);
}

void conn_close_after_flush(struct broker_loop *l, struct conn *c)
{
    conn_linger(l, c, "refused", true);
}

void conn_linger_flushed(struct conn *c, int r)
{
    if (r < 0) {
        conn_release(c);
    } else if (r == 1) {
        c->write_blocked = true;
    } else {
        if (conn_tp(c))
            transport_free(c);
        linger_shut(c->io.fd);
        c->shut = true;
        if (c->peer_done)
            conn_release(c); /* it closed already */
    }
}
