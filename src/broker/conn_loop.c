/* conn_loop.c - connections on the event loop: accepting, reading,
 * framing, dispatching to the handlers, the end of each loop iteration and
 * timeouts (conn_loop.h).
 */
#include "broker/conn_loop.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/conn_end.h"
#include "broker/handle.h"
#include "broker/metrics.h"
#include "broker/persist.h"
#include "broker/session.h"
#include "broker/session_life.h"
#include "broker/router.h"
#include "broker/transport.h"
#include "broker/xloop.h"
#include "cluster/link.h"
#include "core/inbuf.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/srv.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"

/* Bytes read per connection per loop iteration before yielding to others. */
#define CONN_READ_BUDGET (256 * 1024)
#define CONN_READ_CHUNK (64 * 1024)

/* Input is read here first and copied to the connection only when a packet
 * is left incomplete, so idle connections hold no input buffer. */
static _Thread_local uint8_t conn_rbuf[CONN_READ_CHUNK];

static const char *conn_name(const struct conn *c)
{
    return c->session ? c->session->client_id : "(not connected)";
}

/* Writes what the socket takes now; outq_flush's result. */
static int conn_write_out(struct broker_loop *l, struct conn *c)
{
    size_t before = outq_pending(&c->out);
    int r = conn_tp(c) ? transport_flush(l, c) : outq_flush(&c->out, c->io.fd);
    size_t sent = before - outq_pending(&c->out);
    STAT_ADD(l->stats.bytes_out, sent);
    if (sent && c->session)
        session_progress(c->session, ev_now(l->ev)); /* its client takes output */
    return r;
}

/* Returns 0, or an error as the handlers do (handle.h). */
static int conn_dispatch(struct broker_loop *l, struct conn *c, const struct mqtt_header *h,
                         const uint8_t *body)
{
    if (c->state == CONN_NEW)
        return h->type == MQTT_CONNECT ? handle_connect(l, c, body, h->body_len) : MQTT_E_TYPE;
    switch (h->type) {
    case MQTT_PUBLISH:
        return handle_publish(l, c, h->flags, body, h->body_len);
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
        return handle_puback(l, c, h->type, body, h->body_len);
    case MQTT_SUBSCRIBE:
        return handle_subscribe(l, c, body, h->body_len);
    case MQTT_UNSUBSCRIBE:
        return handle_unsubscribe(l, c, body, h->body_len);
    case MQTT_PINGREQ:
        if (h->body_len != 0)
            return MQTT_E_MALFORMED;
        mqtt_encode_empty(outq_reserve(&c->out, MQTT_EMPTY_LEN), MQTT_PINGRESP);
        conn_mark_dirty(l, c);
        return 0;
    case MQTT_DISCONNECT:
        if (c->v5)
            return handle_disconnect(l, c, body, h->body_len);
        if (h->body_len != 0)
            return MQTT_E_MALFORMED;
        conn_close(l, c, "DISCONNECT", true);
        return 0;
    case MQTT5_AUTH:
        /* Only after a CONNECT with an Authentication Method, which is
         * refused as no method is configured [MQTT-4.12.0-1]. */
        return MQTT5_E_PROTOCOL_ERROR;
    default: /* a second CONNECT, or a packet only servers send */
        return c->v5 ? MQTT5_E_PROTOCOL_ERROR : MQTT_E_TYPE;
    }
}

/* Closes a connection whose packet broke the protocol: err is the framing
 * or handler error (negative) or an MQTT 5 reason code (positive). */
static void conn_protocol_error(struct broker_loop *l, struct conn *c, int err)
{
    uint8_t reason = err < 0 ? mqtt5_err_reason(err) : (uint8_t)err;
    const char *why = err < 0 ? mqtt5_strerror(err) : mqtt5_reason_str(reason);
    STAT_ADD(l->stats.protocol_errors, 1);
    log_info("client %s (fd %d): protocol error (%s), closing", conn_name(c), c->io.fd, why);
    conn_kick(l, c, reason, why, false);
}

/* Closes c, whose input buffer took the partial packets' total over
 * max_partial_packet_bytes. */
static void conn_over_partial(struct broker_loop *l, struct conn *c)
{
    struct broker *b = l->b;
    metrics_bound_hit(b, BOUND_PARTIAL_MEMORY, conn_name(c));
    conn_kick(l, c, MQTT5_RC_QUOTA_EXCEEDED, "partial packets at their memory bound", false);
}

/* Handles every complete packet in data[0..len). Returns the bytes
 * consumed, or -1 if the connection was closed. */
static long conn_parse(struct broker_loop *l, struct conn *c, const uint8_t *data, size_t len)
{
    size_t off = 0;
    /* A move (move_to) is set by a CONNECT, which breaks out below. */
    while (off < len && c->state <= CONN_ACTIVE && !conn_paused(c)) {
        struct mqtt_header h;
        int n = c->v5    ? mqtt5_frame(data + off, len - off, l->cfg->max_packet_size, &h)
                : c->v31 ? mqtt31_frame(data + off, len - off, l->cfg->max_packet_size, &h)
                         : mqtt_frame(data + off, len - off, l->cfg->max_packet_size, &h);
        if (n == 0)
            break;
        int err = n < 0 ? n : conn_dispatch(l, c, &h, data + off + h.header_len);
        if (err != 0) {
            conn_protocol_error(l, c, err);
            return -1;
        }
        if (c->cold && c->cold->move_to) {
            /* The CONNECT stays in the input, for the session's loop. */
            c->cold->move_next = l->moving;
            l->moving = c;
            break;
        }
        if (c->cold && c->cold->claiming)
            break; /* the CONNECT stays in the input, read again once claimed */
        off += (size_t)n;
    }
    return c->state <= CONN_ACTIVE ? (long)off : -1;
}

/* Reads and handles input until the socket is drained: until EAGAIN, or
 * until a short read unless the peer may have closed (hup), as the end of
 * the stream then follows the data with no further edge. */
static void conn_read(struct broker_loop *l, struct conn *c, bool hup)
{
    size_t budget = CONN_READ_BUDGET;
    while (c->state <= CONN_ACTIVE && !conn_paused(c)) {
        size_t cap;
        uint8_t *buf = inbuf_read_target(&c->in, conn_rbuf, sizeof conn_rbuf, &cap);
        if (conn_count_input(l, c)) {
            conn_over_partial(l, c);
            return;
        }
        ssize_t n = conn_tp(c) ? transport_read(l, c, buf, cap) : read(c->io.fd, buf, cap);
        if (n == 0) {
            conn_close(l, c, "closed by client", false);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_close(l, c, conn_tp(c) ? transport_error(c) : strerror(errno), false);
            return;
        }
        STAT_ADD(l->stats.bytes_in, (uint64_t)n);
        if (c->state == CONN_ACTIVE)
            c->last_rx_ms = ev_now(l->ev);
        bool fresh = c->in.len == 0;
        size_t len;
        const uint8_t *data = inbuf_filled(&c->in, conn_rbuf, (size_t)n, &len);
        long used = conn_parse(l, c, data, len);
        if (used < 0)
            return;
        inbuf_consumed(&c->in, data, len, (size_t)used);
        if (conn_count_input(l, c)) {
            conn_over_partial(l, c);
            return;
        }
        /* A tail after a complete packet is a packet begun in this read. */
        if (c->in.len && (fresh || used > 0))
            c->in_since_ms = ev_now(l->ev);
        if (conn_paused(c))
            return; /* released or done, it is read again where this stopped */
        if ((size_t)n < cap && !hup && !conn_tp(c))
            return; /* a transport is read until EAGAIN (transport.h) */
        if ((size_t)n >= budget) {
            conn_read_later(l, c);
            return;
        }
        budget -= (size_t)n;
    }
}

/* Handles the complete packets a wait left unparsed, then reads on. */
static void conn_read_resumed(struct broker_loop *l, struct conn *c)
{
    if (c->state == CONN_LINGER) {
        conn_linger_read(c);
        return;
    }
    if (conn_cold_peek(c)->job && !sub_job_resume(l, c))
        return;
    if (c->in.len) {
        long used = conn_parse(l, c, c->in.data, c->in.len);
        if (used < 0)
            return;
        if (used > 0)
            inbuf_consumed(&c->in, c->in.data, c->in.len, (size_t)used);
        conn_count_input(l, c); /* it only shrank */
        /* The wait was ours: the partial packet's time starts again. */
        c->in_since_ms = ev_now(l->ev);
    }
    /* Whether the peer closed meanwhile is not known here: read to EAGAIN. */
    conn_read(l, c, true);
}

static void conn_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct broker_loop *l = io->data;
    struct conn *c = (struct conn *)io;
    if (c->state == CONN_CLOSED)
        return;
    /* Under TLS a write may wait for readability and a read for
     * writability: a transport takes either edge for both. */
    if ((events & EV_WRITE || conn_tp(c)) && c->write_blocked) {
        c->write_blocked = false;
        conn_mark_dirty(l, c);
    }
    if (c->state == CONN_LINGER)
        conn_linger_read(c);
    else if (events & EV_READ || conn_tp(c))
        conn_read(l, c, events & EV_HUP);
}

/* With several loops, at debug level: which loop has connection c now
 * (what the tests spread their clients by). */
static void conn_log_loop(struct broker_loop *l, const struct conn *c, const char *how)
{
    char addr[80];
    if (l->b->nloops > 1 && LOG_DEBUG <= log_threshold)
        log_debug("connection %s %s loop %u", metrics_peer(c, addr, sizeof addr), how, l->index);
}

struct conn *conn_accept(struct broker_loop *l, int fd)
{
    struct broker *b = l->b;
    struct conn *c = mem_calloc(1, sizeof *c);
    c->io.fd = fd;
    c->io.cb = conn_on_io;
    c->io.data = l;
    if (ev_io_start(l->ev, &c->io, EV_READ | EV_WRITE | EV_EDGE) < 0) {
        log_warn("cannot watch fd %d: %s", fd, strerror(errno));
        close(fd);
        conn_free(c);
        return NULL;
    }
    c->state = CONN_NEW;
    c->over_limit = broker_nconns(b) >= l->cfg->max_connections;
    c->last_rx_ms = ev_now(l->ev);
    STAT_ADD(l->nconns, 1);
    __atomic_fetch_add(&b->obs.accepted, 1, __ATOMIC_RELAXED);
    conn_link(l, c);
    conn_log_loop(l, c, "accepted on");
    return c;
}

static void conn_flush(struct broker_loop *l, struct conn *c)
{
    int r = conn_write_out(l, c);
    if (c->state == CONN_LINGER) {
        conn_linger_flushed(c, r);
        return;
    }
    if (r < 0)
        conn_close(l, c, strerror(errno), false);
    else if (r == 1)
        c->write_blocked = true;
    if (c->session && session_holds_up(c->session))
        session_release_publishers(l, c->session, false);
}

/* A connection another loop handed us, whose session is ours (as far as
 * that loop knew): watched by our loop now, and its CONNECT read again at
 * once. */
static void conn_adopt(struct broker_loop *l, struct conn *c, struct srv_fd_addr *ticket)
{
    c->io.data = l;
    conn_cold_moved(c);
    conn_link(l, c);
    STAT_ADD(l->nconns, 1);
    if (l->srv)
        srv_worker_conn_join(l->srv, c->io.fd, ticket);
    mem_free(ticket);
    if (ev_io_start(l->ev, &c->io, EV_READ | EV_WRITE | EV_EDGE) < 0) {
        conn_close(l, c, strerror(errno), true);
        return;
    }
    if (l->srv && l->srv->draining) {
        conn_close(l, c, "server shutting down", true);
        return;
    }
    conn_log_loop(l, c, "handed to its session's");
    conn_read_later(l, c);
}

/* Hands each connection on l->moving to its session's loop. */
static void conn_hand_over(struct broker_loop *l)
{
    while (l->moving) {
        struct conn *c = l->moving;
        l->moving = c->cold->move_next;
        if (c->state != CONN_NEW) /* closed meanwhile (a timeout, a drain) */
            continue;
        ev_io_stop(l->ev, &c->io);
        conn_unlink(l, c);
        STAT_ADD(l->nconns, -1);
        struct srv_fd_addr *ticket = mem_calloc(1, sizeof *ticket);
        if (l->srv)
            srv_worker_conn_leave(l->srv, c->io.fd, ticket);
        struct xloop_entry *e = xloop_push(&l->x, c->cold->move_to->index);
        *e = (struct xloop_entry){.kind = XLOOP_CONN, .p = c, .aux = ticket};
    }
}

void conn_take_handoffs(struct broker_loop *l)
{
    if (!xloop_take(l->b->xs, l->index, &l->x_taken))
        return;
    struct xloop_box *box = &l->x_taken;
    for (uint32_t i = 0; i < box->n; i++) {
        struct xloop_entry *e = &box->v[i];
        switch (e->kind) {
        case XLOOP_DELIVER:
            router_take(l, e);
            break;
        case XLOOP_CONN:
            conn_adopt(l, e->p, e->aux);
            break;
        case XLOOP_RECHECK:
            session_recheck_remote(l);
            break;
        case XLOOP_STALL:
            session_stall_take(l, e->p);
            break;
        case XLOOP_PARK:
            broker_park(l->b, (unsigned)(uintptr_t)e->aux);
            break;
        }
    }
    box->n = 0;
}

bool conn_prepare(struct broker_loop *l)
{
    struct broker *b = l->b;
    if (b->nloops > 1) {
        /* Here, on the loop's thread, before its first event. */
        msg_pool_enter(&l->msgs);
        conn_take_handoffs(l);
    }
    struct conn *list = l->read_list;
    l->read_list = NULL;
    while (list) {
        struct conn *c = list;
        list = c->read_next;
        c->read_pending = false;
        if (c->state != CONN_CLOSED)
            conn_read_resumed(l, c);
    }
    /* Group commit: what this iteration's packets changed is durable
     * before any acknowledgement of them leaves; else retry at the next
     * wake-up (an event, or the sweep timer), not in a busy loop: a full
     * disk stays full for a while. */
    if (!persist_commit(b))
        return false;
    if (b->cluster && l == b->home)
        cluster_ack_committed(b->cluster);
    while (l->dirty) {
        struct conn *c = l->dirty;
        l->dirty = c->dirty_next;
        c->dirty = false;
        if (c->state != CONN_CLOSED && !c->write_blocked && !c->shut)
            conn_flush(l, c);
    }
    if (b->nloops > 1) {
        conn_hand_over(l);
        xloop_flush(b->xs, l->index);
        if (l->cluster_held)
            router_cluster_resume(l);
    }
    /* Free closed connections no list still points to. */
    struct conn **pp = &l->closed;
    while (*pp) {
        struct conn *c = *pp;
        /* A claim's answer will name it (cluster/kv_sess.h). */
        if (c->read_pending || c->dirty || c->state == CONN_LINGER ||
            (c->cold && c->cold->claiming)) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        int fd = c->io.fd;
        close(fd);
        conn_free(c);
        if (l->srv)
            srv_worker_conn_closed(l->srv, fd); /* the last one ends a drain */
    }
    return l->read_list != NULL;
}

/* True if the partial packet in c->in took longer than --packet-timeout
 * and came slower than --min-packet-rate since: a packet of L bytes has at
 * most packet_timeout + L / min_packet_rate, however its bytes trickle. */
static bool conn_packet_late(const struct broker *b, const struct conn *c, uint64_t now)
{
    uint64_t age = now - c->in_since_ms;
    /* Input we are not reading (back-pressure, a sliced SUBSCRIBE, the
     * read budget) is our delay, not the client's. */
    if (c->in.len == 0 || conn_paused(c) || c->read_pending ||
        age <= b->cfg->packet_timeout_ms)
        return false;
    return (uint64_t)c->in.len * 1000 < (uint64_t)b->cfg->min_packet_rate *
                                             (age - b->cfg->packet_timeout_ms);
}

void conn_check_stalls(struct broker_loop *l)
{
    uint64_t now = ev_now(l->ev);
    uint64_t next = UINT64_MAX; /* the earliest a waiting one may stall */
    for (struct conn *c = l->conns; c; c = c->next) {
        const struct conn_cold *k = c->cold;
        struct session *s = !k ? NULL : k->blocked_on ? k->blocked_on : k->remote_on;
        uint64_t at = s ? session_check_stall(l, c, s) : 0;
        if (at && at < next)
            next = at;
    }
    if (next != UINT64_MAX)
        ev_timer_start(l->ev, &l->stall, next > now ? next - now : 0, 0);
}

void conn_sweep(struct broker_loop *l)
{
    struct broker *b = l->b;
    uint64_t now = ev_now(l->ev);
    struct conn *next;
    for (struct conn *c = l->conns; c; c = next) {
        next = c->next;
        struct session *s = c->session;
        /* Every subscriber congested too long, in this one sweep. */
        uint64_t congested = s ? session_cold_peek(s)->congested_ms : 0;
        if (congested && now - congested >= BROKER_WAIT_LIMIT_MS)
            session_flag_slow(l, s);
        if (c->state == CONN_NEW) {
            if (now - c->last_rx_ms >= l->cfg->connect_timeout_ms)
                conn_close(l, c, "no CONNECT in time", true);
        } else if (c->state == CONN_ACTIVE && conn_packet_late(b, c, now)) {
            /* No reason code says "too slow"; 0x80 is for none applying. */
            metrics_bound_hit(b, BOUND_PACKET_TIMEOUT, conn_name(c));
            conn_kick(l, c, MQTT5_RC_UNSPECIFIED_ERROR, "packet not received in time", false);
        } else if (c->state == CONN_ACTIVE && c->keepalive && !conn_waiting(c)) {
            /* The spec allows one and a half keepalive periods of silence;
             * a waiting publisher's silence is ours: we stopped reading it. */
            if (now - c->last_rx_ms > (uint64_t)c->keepalive * 1500u)
                conn_kick(l, c, MQTT5_RC_KEEP_ALIVE_TIMEOUT, "keep alive timeout", false);
        }
    }
    for (struct conn *c = l->closed; c; c = c->next)
        if (c->state == CONN_LINGER && now >= c->last_rx_ms)
            conn_release(c);
    session_sweep(l); /* this loop's offline sessions */
    if (l->remote_waiters) /* a wake-up lost is a quarter second late */
        session_recheck_remote(l);
}
