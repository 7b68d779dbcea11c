/* conn.c - client connections: accepting, reading and framing packets,
 * dispatching them to the handlers, flushing output once per loop
 * iteration, timeouts and closing.
 *
 * Sockets are registered edge-triggered for both directions once, so the
 * hot path makes no epoll_ctl calls: a connection reads until the socket is
 * drained (or its per-iteration budget is spent, in which case it goes on
 * the read list and is resumed next iteration), and writes whenever it has
 * output, waiting for the next writability edge only when the socket is
 * full.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "core/inbuf.h"
#include "core/log.h"
#include "core/mem.h"
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

void conn_mark_dirty(struct broker *b, struct conn *c)
{
    if (c->dirty || c->state == CONN_CLOSED)
        return;
    c->dirty = true;
    c->dirty_next = b->dirty;
    b->dirty = c;
}

static void conn_unlink(struct broker *b, struct conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        b->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

void conn_close(struct broker *b, struct conn *c, const char *reason, bool graceful)
{
    if (c->state == CONN_CLOSED)
        return;
    log_debug("client %s (fd %d) disconnected: %s", conn_name(c), c->io.fd, reason);
    close(c->io.fd);
    c->state = CONN_CLOSED;
    b->nconns--;
    conn_unlink(b, c);
    c->next = b->closed;
    b->closed = c;
    outq_clear(&c->out);
    inbuf_free(&c->in);
    session_forget_publisher(c);

    struct session *s = c->session;
    struct msg *will = c->will;
    c->session = NULL;
    c->will = NULL;
    if (s) {
        b->nclients--;
        s->conn = NULL;
        if (s->clean)
            session_destroy(b, s);
        else
            session_release_publishers(b, s, true);
    }
    if (will) {
        if (!graceful) {
            b->stats.msgs_in++;
            broker_publish(b, will);
        }
        msg_unref(will);
    }
}

void conn_close_after_flush(struct broker *b, struct conn *c)
{
    c->state = CONN_CLOSING;
    conn_mark_dirty(b, c);
}

/* Returns 0, or -1 when the packet broke the protocol. */
static int conn_dispatch(struct broker *b, struct conn *c, const struct mqtt_header *h,
                         const uint8_t *body)
{
    if (c->state == CONN_NEW)
        return h->type == MQTT_CONNECT ? handle_connect(b, c, body, h->body_len) : -1;
    switch (h->type) {
    case MQTT_PUBLISH:
        return handle_publish(b, c, h->flags, body, h->body_len);
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
        return handle_puback(b, c, h->type, body, h->body_len);
    case MQTT_SUBSCRIBE:
        return handle_subscribe(b, c, body, h->body_len);
    case MQTT_UNSUBSCRIBE:
        return handle_unsubscribe(b, c, body, h->body_len);
    case MQTT_PINGREQ:
        if (h->body_len != 0)
            return -1;
        mqtt_encode_empty(outq_reserve(&c->out, MQTT_EMPTY_LEN), MQTT_PINGRESP);
        conn_mark_dirty(b, c);
        return 0;
    case MQTT_DISCONNECT:
        if (h->body_len != 0)
            return -1;
        conn_close(b, c, "DISCONNECT", true);
        return 0;
    default: /* a second CONNECT, or a packet only servers send */
        return -1;
    }
}

/* Handles every complete packet in data[0..len). Returns the bytes
 * consumed, or -1 if the connection was closed. */
static long conn_parse(struct broker *b, struct conn *c, const uint8_t *data, size_t len)
{
    size_t off = 0;
    b->publisher = c;
    while (off < len && c->state <= CONN_ACTIVE && !c->blocked_on) {
        struct mqtt_header h;
        int n = mqtt_frame(data + off, len - off, b->cfg->max_packet_size, &h);
        if (n == 0)
            break;
        if (n < 0 || conn_dispatch(b, c, &h, data + off + h.header_len) < 0) {
            b->stats.protocol_errors++;
            log_info("client %s (fd %d): protocol error (%s), closing", conn_name(c), c->io.fd,
                     n < 0 ? mqtt_strerror(n) : "invalid packet");
            conn_close(b, c, "protocol error", false);
            b->publisher = NULL;
            return -1;
        }
        off += (size_t)n;
    }
    b->publisher = NULL;
    return c->state <= CONN_ACTIVE ? (long)off : -1;
}

static void conn_defer_read(struct broker *b, struct conn *c)
{
    if (c->read_pending)
        return;
    c->read_pending = true;
    c->read_next = b->read_list;
    b->read_list = c;
}

/* Reads and handles input until the socket is drained: until EAGAIN, or
 * until a short read unless the peer may have closed (hup), as the end of
 * the stream then follows the data with no further edge. */
static void conn_read(struct broker *b, struct conn *c, bool hup)
{
    size_t budget = CONN_READ_BUDGET;
    while (c->state <= CONN_ACTIVE && !c->blocked_on) {
        size_t cap;
        uint8_t *buf = inbuf_read_target(&c->in, conn_rbuf, sizeof conn_rbuf, &cap);
        ssize_t n = read(c->io.fd, buf, cap);
        if (n == 0) {
            conn_close(b, c, "closed by client", false);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_close(b, c, strerror(errno), false);
            return;
        }
        b->stats.bytes_in += (uint64_t)n;
        if (c->state == CONN_ACTIVE)
            c->last_rx_ms = ev_now(b->loop);
        size_t len;
        const uint8_t *data = inbuf_filled(&c->in, conn_rbuf, (size_t)n, &len);
        long used = conn_parse(b, c, data, len);
        if (used < 0)
            return;
        inbuf_consumed(&c->in, data, len, (size_t)used);
        if (c->blocked_on)
            return; /* conn_resume picks up where this stopped */
        if ((size_t)n < cap && !hup)
            return;
        if ((size_t)n >= budget) {
            conn_defer_read(b, c);
            return;
        }
        budget -= (size_t)n;
    }
}

void conn_resume(struct broker *b, struct conn *c) { conn_defer_read(b, c); }

/* Handles the complete packets a wait left unparsed, then reads on. */
static void conn_read_resumed(struct broker *b, struct conn *c)
{
    if (c->in.len) {
        long used = conn_parse(b, c, c->in.data, c->in.len);
        if (used < 0)
            return;
        if (used > 0)
            inbuf_consumed(&c->in, c->in.data, c->in.len, (size_t)used);
    }
    /* Whether the peer closed meanwhile is not known here: read to EAGAIN. */
    conn_read(b, c, true);
}

static void conn_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct broker *b = io->data;
    struct conn *c = (struct conn *)io;
    if (c->state == CONN_CLOSED)
        return;
    if ((events & EV_WRITE) && c->write_blocked) {
        c->write_blocked = false;
        conn_mark_dirty(b, c);
    }
    if (events & EV_READ)
        conn_read(b, c, events & EV_HUP);
}

void conn_accept(struct broker *b, int fd)
{
    struct conn *c = mem_calloc(1, sizeof *c);
    c->io.fd = fd;
    c->io.cb = conn_on_io;
    c->io.data = b;
    if (ev_io_start(b->loop, &c->io, EV_READ | EV_WRITE | EV_EDGE) < 0) {
        log_warn("cannot watch fd %d: %s", fd, strerror(errno));
        close(fd);
        mem_free(c);
        return;
    }
    c->state = CONN_NEW;
    c->over_limit = b->nconns >= b->cfg->max_connections;
    c->last_rx_ms = ev_now(b->loop);
    b->nconns++;
    c->next = b->conns;
    if (b->conns)
        b->conns->prev = c;
    b->conns = c;
}

static void conn_flush(struct broker *b, struct conn *c)
{
    size_t before = outq_pending(&c->out);
    int r = outq_flush(&c->out, c->io.fd);
    b->stats.bytes_out += before - outq_pending(&c->out);
    if (r < 0) {
        conn_close(b, c, strerror(errno), false);
    } else if (c->state == CONN_CLOSING) {
        /* Only refusals (a CONNACK of a few bytes) close this way; a socket
         * that cannot take them is not worth waiting for. */
        conn_close(b, c, "refused", true);
    } else if (r == 1) {
        c->write_blocked = true;
    }
    if (c->session && (c->session->waiters || c->session->slow_consumer))
        session_release_publishers(b, c->session, false);
}

bool conn_prepare(struct broker *b)
{
    struct conn *list = b->read_list;
    b->read_list = NULL;
    while (list) {
        struct conn *c = list;
        list = c->read_next;
        c->read_pending = false;
        if (c->state != CONN_CLOSED)
            conn_read_resumed(b, c);
    }
    while (b->dirty) {
        struct conn *c = b->dirty;
        b->dirty = c->dirty_next;
        c->dirty = false;
        if (c->state != CONN_CLOSED && !c->write_blocked)
            conn_flush(b, c);
    }
    /* Free closed connections no list still points to. */
    struct conn **pp = &b->closed;
    while (*pp) {
        struct conn *c = *pp;
        if (c->read_pending || c->dirty) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        mem_free(c);
    }
    return b->read_list != NULL;
}

void conn_sweep(struct broker *b)
{
    uint64_t now = ev_now(b->loop);
    struct conn *next;
    for (struct conn *c = b->conns; c; c = next) {
        next = c->next;
        if (c->state == CONN_NEW) {
            if (now - c->last_rx_ms >= b->cfg->connect_timeout_ms)
                conn_close(b, c, "no CONNECT in time", true);
        } else if (c->blocked_on) {
            /* Its silence is ours: we stopped reading it. */
            if (now - c->blocked_since_ms >= BROKER_WAIT_LIMIT_MS) {
                struct session *slow = c->blocked_on;
                slow->slow_consumer = true;
                b->stats.slow_consumers++;
                log_warn("client %s is a slow consumer: publishers no longer wait for it, messages "
                         "to it are dropped at its limits",
                         slow->client_id);
                session_release_publishers(b, slow, true);
            }
        } else if (c->state == CONN_ACTIVE && c->keepalive) {
            /* The spec allows one and a half keepalive periods of silence. */
            if (now - c->last_rx_ms > (uint64_t)c->keepalive * 1500u)
                conn_close(b, c, "keepalive timeout", false);
        }
    }
}
