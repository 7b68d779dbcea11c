/* mqtt_client.c - MQTT client connections on per-thread event loops, and
 * the main thread's watchdog over them.
 *
 * Sockets are registered edge-triggered for both directions once, so the
 * hot path makes no epoll_ctl calls: a connection reads until EAGAIN on
 * every readable edge, and its output is flushed from the loop's prepare
 * hook; when the socket is full it waits for the next writable edge.
 */
#include "load/mqtt/mqtt_client.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/ev.h"
#include "core/inbuf.h"
#include "core/mem.h"
#include "core/net.h"
#include "core/outq.h"
#include "load/progress.h"
#include "load/trace.h"
#include "mqtt/mqtt5.h"

#define MC_READ_CHUNK (64 * 1024)
/* Connections per thread between connect() and CONNACK: enough to keep the
 * broker busy, few enough not to overflow its listen backlog (a dropped SYN
 * costs a one-second retransmission and distorts the setup time). */
#define MC_CONNECT_WINDOW 64
/* Long enough that no run needs PINGREQs, short of any broker's maximum. */
#define MC_KEEPALIVE_S 3600
#define MC_TICK_MS 100

enum mc_state {
    MC_IDLE,         /* not connected yet */
    MC_CONNECTING,   /* connect() in progress */
    MC_WAIT_CONNACK,
    MC_WAIT_SUBACK,
    MC_READY,
    MC_CLOSED,
};

struct mc_thread;

struct mc_conn {
    struct ev_io io; /* io.data = this */
    struct mc_thread *t;
    unsigned index;
    uint8_t state; /* enum mc_state */
    uint8_t sub_qos;
    uint8_t session; /* enum mc_session */
    bool dirty;     /* on the thread's flush list */
    bool blocked;   /* socket full: wait for a writable edge */
    bool producing; /* fill() wants to be called when there is room */
    uint16_t next_pid;
    uint32_t inflight;     /* our QoS 1/2 publishes not yet acknowledged */
    uint32_t inflight_max; /* MC_INFLIGHT, or the broker's Receive Maximum if lower */
    char *filter;      /* owned; NULL = no subscription */
    const char *host;  /* mc_set_target's, NULL: the run's cfg.host and cfg.port */
    int port;
    struct inbuf in;   /* partial packet left from earlier reads */
    struct outq out;
    struct mc_conn *dirty_next;
    uint64_t trace_q0; /* QoS 0 PUBLISH packets, for --trace-sample */
};

struct mc_thread {
    struct mc_run *run;
    unsigned index;
    pthread_t tid;
    struct ev_loop *loop;
    struct ev_io wake; /* eventfd: the run's phase changed */
    bool started;
    unsigned next_connect; /* index of this thread's next connection to open */
    unsigned handshakes;   /* connections between connect() and CONNACK */
    struct mc_conn *dirty;
    uint64_t packets, published, received;
    _Atomic uint64_t progress; /* packets, published for the watchdog */
    _Atomic uint64_t received_seen; /* received, published for mc_run_received */
    uint8_t rbuf[MC_READ_CHUNK];
};

enum mc_phase { PHASE_SETUP, PHASE_MEASURE, PHASE_STOP };

struct mc_run {
    struct mc_config cfg;
    const struct mc_ops *ops;
    void *user;
    struct mc_conn *conns;
    struct mc_thread *threads;
    int done_fd; /* eventfd: wakes the main thread on completion or failure */
    _Atomic int phase;
    _Atomic unsigned ready;
    _Atomic uint64_t work_left;
    _Atomic bool failed;
    _Atomic unsigned fail_counts[3];
    /* Written by the one thread that completes the barrier, the work or the
     * first failure; read by the main thread after joining. */
    enum mc_fail_kind fail_kind;
    char error[256];
    uint64_t t_start_ns, t_ready_ns, t_end_ns;
};

static void mc_signal(int fd)
{
    uint64_t one = 1;
    while (write(fd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

unsigned mc_index(const struct mc_conn *c) { return c->index; }
unsigned mc_thread(const struct mc_conn *c) { return c->t->index; }

static void mc_mark_dirty(struct mc_conn *c)
{
    if (c->dirty || c->state == MC_CLOSED)
        return;
    c->dirty = true;
    c->dirty_next = c->t->dirty;
    c->t->dirty = c;
}

static void mc_close(struct mc_conn *c)
{
    if (c->state == MC_CLOSED)
        return;
    if (c->state == MC_CONNECTING || c->state == MC_WAIT_CONNACK)
        c->t->handshakes--;
    if (c->state != MC_IDLE)
        close(c->io.fd);
    c->state = MC_CLOSED;
    outq_clear(&c->out);
    inbuf_free(&c->in);
}

static void mc_vfail(struct mc_run *run, enum mc_fail_kind kind, const char *fmt, va_list ap)
{
    atomic_fetch_add(&run->fail_counts[kind], 1);
    bool first = false;
    if (!atomic_compare_exchange_strong(&run->failed, &first, true))
        return;
    run->fail_kind = kind;
    vsnprintf(run->error, sizeof run->error, fmt, ap);
    mc_signal(run->done_fd);
}

/* A failure of the run as a whole, not of one connection. */
__attribute__((format(printf, 3, 4)))
static void mc_run_fail(struct mc_run *run, enum mc_fail_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mc_vfail(run, kind, fmt, ap);
    va_end(ap);
}

void mc_fail(struct mc_conn *c, enum mc_fail_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mc_vfail(c->t->run, kind, fmt, ap);
    va_end(ap);
    /* The experiment's own checks leave the connection as it is. */
    if (kind != MC_FAIL_CHECK)
        mc_close(c);
}

void mc_complete(struct mc_conn *c)
{
    struct mc_run *run = c->t->run;
    if (atomic_fetch_sub(&run->work_left, 1) == 1) {
        run->t_end_ns = clock_now_ns();
        mc_signal(run->done_fd);
    }
}

/* ---- output -------------------------------------------------------------- */

bool mc_room(const struct mc_conn *c)
{
    return c->state == MC_READY && !c->blocked && outq_pending(&c->out) < MC_OUT_HIGH &&
           c->inflight < c->inflight_max;
}

void mc_produce(struct mc_conn *c)
{
    c->producing = true;
    mc_mark_dirty(c);
}

static bool mc_v5(const struct mc_conn *c) { return c->t->run->cfg.version == MQTT5_PROTOCOL_LEVEL; }

/* --trace: a packet queued ('>') or received ('<'); without a trace, one
 * test of a pointer. */
static void mc_trace(struct mc_conn *c, char dir, const uint8_t *pkt, size_t len)
{
    const struct mc_config *cfg = &c->t->run->cfg;
    if (cfg->trace)
        trace_mqtt(cfg->trace, c->index, dir, cfg->version, pkt, len, &c->trace_q0);
}

uint8_t *mc_publish(struct mc_conn *c, struct mqtt_bytes topic, const void *payload, size_t len,
                    uint8_t qos)
{
    uint16_t packet_id = 0;
    if (qos) {
        c->next_pid = c->next_pid == UINT16_MAX ? 1 : c->next_pid + 1;
        packet_id = c->next_pid;
        c->inflight++;
    }
    uint8_t *out;
    size_t n;
    if (mc_v5(c)) {
        struct mqtt5_publish p = {
            .topic = topic, .payload = {payload, len}, .qos = qos, .packet_id = packet_id};
        out = outq_reserve(&c->out, mqtt5_publish_size(&p));
        n = mqtt5_encode_publish(out, &p);
    } else {
        struct mqtt_publish p = {
            .topic = topic, .payload = {payload, len}, .qos = qos, .packet_id = packet_id};
        out = outq_reserve(&c->out, mqtt_publish_size(topic.len, len, qos));
        n = mqtt_encode_publish(out, &p);
    }
    c->t->published++;
    mc_trace(c, '>', out, n);
    mc_mark_dirty(c);
    /* The payload ends the packet. */
    return out + n - len;
}

/* MQTT 5's form of an acknowledgement with reason code 0 and no properties
 * is the MQTT 3.1.1 packet (3.4.2.1), so one encoder serves both. */
static void mc_queue_ack(struct mc_conn *c, enum mqtt_type type, uint16_t id)
{
    uint8_t *out = outq_reserve(&c->out, MQTT_ACK_LEN);
    mqtt_encode_ack(out, type, id);
    mc_trace(c, '>', out, MQTT_ACK_LEN);
    mc_mark_dirty(c);
}

static void mc_send_connect(struct mc_conn *c)
{
    const struct mc_config *cfg = &c->t->run->cfg;
    char id[64];
    int n = snprintf(id, sizeof id, "%s-%u", cfg->client_id_prefix, c->index);
    struct mqtt_bytes client_id = {(const uint8_t *)id, (size_t)n};
    bool clean = c->session == MC_SESSION_CLEAN;
    uint8_t *out;
    size_t len;
    if (mc_v5(c)) {
        struct mqtt5_connect m = {
            .protocol_level = MQTT5_PROTOCOL_LEVEL,
            .clean_start = clean,
            .keepalive = MC_KEEPALIVE_S,
            .client_id = client_id,
        };
        if (!clean) {
            m.props.present = MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY);
            m.props.session_expiry = cfg->session_expiry;
        }
        out = outq_reserve(&c->out, mqtt5_connect_size(&m));
        len = mqtt5_encode_connect(out, &m);
    } else {
        struct mqtt_connect m = {
            .protocol_level = cfg->version,
            .clean_session = clean,
            .keepalive = MC_KEEPALIVE_S,
            .client_id = client_id,
        };
        out = outq_reserve(&c->out, mqtt_connect_size(&m));
        len = mqtt_encode_connect(out, &m);
    }
    mc_trace(c, '>', out, len);
    mc_mark_dirty(c);
}

/* SUBSCRIBE packet id 1 for the one filter; MQTT 5's options byte is the
 * QoS alone (no No Local, retained messages sent as usual). */
static void mc_send_subscribe(struct mc_conn *c)
{
    struct mqtt_bytes f = {(const uint8_t *)c->filter, strlen(c->filter)};
    uint8_t *out;
    size_t len;
    if (mc_v5(c)) {
        struct mqtt_props none = {0};
        out = outq_reserve(&c->out, mqtt5_subscribe_size(&none, &f, 1));
        len = mqtt5_encode_subscribe(out, 1, &none, &f, &c->sub_qos, 1);
    } else {
        out = outq_reserve(&c->out, mqtt_subscribe_size(&f, 1));
        len = mqtt_encode_subscribe(out, 1, &f, &c->sub_qos, 1);
    }
    mc_trace(c, '>', out, len);
    mc_mark_dirty(c);
}

/* Fills a producer and writes what c has. True if c could go on at once. */
static bool mc_service(struct mc_conn *c)
{
    struct mc_run *run = c->t->run;
    if (c->producing && mc_room(c))
        c->producing = run->ops->fill(c, run->user);
    if (c->state == MC_CLOSED)
        return false;
    if (!c->blocked && outq_pending(&c->out) > 0) {
        int rc = outq_flush(&c->out, c->io.fd);
        if (rc < 0) {
            mc_fail(c, MC_FAIL_CONNECT, "connection %u: write failed: %s", c->index,
                    strerror(errno));
            return false;
        }
        c->blocked = rc == 1;
    }
    if (c->producing && mc_room(c)) {
        mc_mark_dirty(c);
        return true;
    }
    return false;
}

/* ---- input --------------------------------------------------------------- */

static int mc_protocol_error(struct mc_conn *c, const char *what)
{
    mc_fail(c, MC_FAIL_PROTOCOL, "connection %u: %s from the broker", c->index, what);
    return -1;
}

static void mc_ready(struct mc_conn *c)
{
    struct mc_run *run = c->t->run;
    c->state = MC_READY;
    if (atomic_fetch_add(&run->ready, 1) + 1 == run->cfg.conns) {
        run->t_ready_ns = clock_now_ns();
        atomic_store(&run->phase, PHASE_MEASURE);
        for (unsigned i = 0; i < run->cfg.threads; i++)
            mc_signal(run->threads[i].wake.fd);
    }
}

static const char *mc_connack_reason(uint8_t rc)
{
    static const char *const reasons[] = {
        "accepted", "unacceptable protocol version", "identifier rejected",
        "server unavailable", "bad user name or password", "not authorized",
    };
    return rc < sizeof reasons / sizeof reasons[0] ? reasons[rc] : "unknown return code";
}

static const char *const mc_ack_names[] = {
    [MQTT_PUBACK] = "PUBACK", [MQTT_PUBREC] = "PUBREC", [MQTT_PUBREL] = "PUBREL",
    [MQTT_PUBCOMP] = "PUBCOMP",
};

static int mc_on_connack(struct mc_conn *c, const uint8_t *body, uint32_t len)
{
    bool session_present;
    uint8_t rc;
    int err;
    if (mc_v5(c)) {
        struct mqtt5_connack a = {0};
        err = mqtt5_decode_connack(body, len, &a);
        session_present = a.session_present;
        rc = a.reason;
        /* Sending more unacknowledged QoS 1/2 publishes than this is a
         * protocol error the broker answers with DISCONNECT 0x93. */
        if (err == MQTT_OK && (a.props.present & MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAX)) &&
            a.props.receive_max < c->inflight_max)
            c->inflight_max = a.props.receive_max;
    } else {
        err = mqtt_decode_connack(body, len, &session_present, &rc);
    }
    if (c->state != MC_WAIT_CONNACK || err != MQTT_OK)
        return mc_protocol_error(c, "unexpected or malformed CONNACK");
    if (rc != MQTT_CONNACK_ACCEPTED) {
        if (mc_v5(c))
            mc_fail(c, MC_FAIL_CONNECT, "connection %u refused by the broker: CONNACK 0x%02x (%s)",
                    c->index, rc, mqtt5_reason_str(rc));
        else
            mc_fail(c, MC_FAIL_CONNECT, "connection %u refused by the broker: CONNACK %u (%s)",
                    c->index, rc, mc_connack_reason(rc));
        return -1;
    }
    /* MQTT 3.1 has no Session Present flag: a lost session shows as
     * missing messages instead. */
    if (c->session == MC_SESSION_RESUME && !session_present &&
        c->t->run->cfg.version != MQTT31_PROTOCOL_LEVEL) {
        mc_fail(c, MC_FAIL_CHECK,
                "connection %u: the broker kept no session for client %s-%u (CONNACK session "
                "present 0), so the messages queued for it are lost",
                c->index, c->t->run->cfg.client_id_prefix, c->index);
        return -1;
    }
    c->t->handshakes--;
    if (c->filter) {
        c->state = MC_WAIT_SUBACK;
        mc_send_subscribe(c);
    } else {
        mc_ready(c);
    }
    return 0;
}

static int mc_on_suback(struct mc_conn *c, const uint8_t *body, uint32_t len)
{
    uint16_t packet_id;
    const uint8_t *codes;
    unsigned count;
    int err;
    if (mc_v5(c)) {
        struct mqtt5_suback s;
        err = mqtt5_decode_suback(MQTT_SUBACK, body, len, &s);
        packet_id = s.packet_id, codes = s.codes, count = s.count;
    } else {
        struct mqtt_suback s;
        err = mqtt_decode_suback(body, len, &s);
        packet_id = s.packet_id, codes = s.codes, count = s.count;
    }
    if (c->state != MC_WAIT_SUBACK || err != MQTT_OK || count != 1 || packet_id != 1)
        return mc_protocol_error(c, "unexpected or malformed SUBACK");
    /* 0x80 in MQTT 3.1.1; every reason code from 0x80 up in MQTT 5. */
    if (codes[0] >= MQTT_SUBACK_FAILURE) {
        mc_fail(c, MC_FAIL_CONNECT,
                "connection %u: the broker refused the subscription to %s: SUBACK 0x%02x (%s)",
                c->index, c->filter, codes[0],
                mc_v5(c) ? mqtt5_reason_str(codes[0]) : "failure");
        return -1;
    }
    mc_ready(c);
    return 0;
}

static int mc_decode_publish(struct mc_conn *c, const struct mqtt_header *h, const uint8_t *body,
                             struct mqtt_publish *p)
{
    if (!mc_v5(c))
        return mqtt_decode_publish(body, h->body_len, h->flags, p);
    struct mqtt5_publish p5;
    int err = mqtt5_decode_publish(body, h->body_len, h->flags, &p5);
    if (err != MQTT_OK)
        return err;
    /* An empty topic stands for a Topic Alias, which a client that gave no
     * Topic Alias Maximum must never receive. */
    if (p5.topic.len == 0)
        return MQTT5_E_PROTOCOL_ERROR;
    *p = (struct mqtt_publish){p5.topic, p5.payload, p5.packet_id, p5.qos, p5.retain, p5.dup};
    return MQTT_OK;
}

/* An acknowledgement of either version; an MQTT 5 reason code from 0x80 up
 * means the broker did not take the message, which fails the run. 0 or -1. */
static int mc_decode_ack(struct mc_conn *c, const struct mqtt_header *h, const uint8_t *body,
                         uint16_t *id)
{
    const char *name = mc_ack_names[h->type];
    struct mqtt5_ack a = {0};
    int err = mc_v5(c) ? mqtt5_decode_ack(h->type, body, h->body_len, &a)
                       : mqtt_decode_ack(body, h->body_len, &a.packet_id);
    if (err != MQTT_OK) {
        mc_fail(c, MC_FAIL_PROTOCOL, "connection %u: malformed %s from the broker (%s)", c->index,
                name, mqtt5_strerror(err));
        return -1;
    }
    *id = a.packet_id;
    if (a.reason < 0x80)
        return 0;
    mc_fail(c, MC_FAIL_PROTOCOL, "connection %u: the broker answered with %s 0x%02x (%s)%s%.*s%s",
            c->index, name, a.reason, mqtt5_reason_str(a.reason),
            a.props.reason_string.len ? ": \"" : "", (int)a.props.reason_string.len,
            (const char *)a.props.reason_string.ptr, a.props.reason_string.len ? "\"" : "");
    return -1;
}

/* MQTT 5 only: the broker closes with a reason. */
static int mc_on_disconnect(struct mc_conn *c, const uint8_t *body, uint32_t len)
{
    struct mqtt5_reason_props r;
    if (mqtt5_decode_reason_props(MQTT_DISCONNECT, body, len, &r) != MQTT_OK)
        return mc_protocol_error(c, "malformed DISCONNECT");
    mc_fail(c, MC_FAIL_CONNECT, "connection %u disconnected by the broker: reason 0x%02x (%s)%s%.*s%s",
            c->index, r.reason, mqtt5_reason_str(r.reason), r.props.reason_string.len ? ": \"" : "",
            (int)r.props.reason_string.len, (const char *)r.props.reason_string.ptr,
            r.props.reason_string.len ? "\"" : "");
    return -1;
}

/* Returns 0, or -1 once the connection or the run has failed. */
static int mc_dispatch(struct mc_conn *c, const struct mqtt_header *h, const uint8_t *body)
{
    struct mc_run *run = c->t->run;
    uint16_t id;
    switch (h->type) {
    case MQTT_CONNACK:
        return mc_on_connack(c, body, h->body_len);
    case MQTT_SUBACK:
        return mc_on_suback(c, body, h->body_len);
    case MQTT_PUBLISH: {
        struct mqtt_publish p;
        /* A broker may deliver before its SUBACK. */
        if (c->state < MC_WAIT_SUBACK || mc_decode_publish(c, h, body, &p) != MQTT_OK)
            return mc_protocol_error(c, "unexpected or malformed PUBLISH");
        if (p.qos)
            mc_queue_ack(c, p.qos == 1 ? MQTT_PUBACK : MQTT_PUBREC, p.packet_id);
        c->t->received++;
        run->ops->message(c, &p, run->user);
        return 0;
    }
    case MQTT_PUBACK:
    case MQTT_PUBCOMP:
        if (mc_decode_ack(c, h, body, &id) < 0)
            return -1;
        if (c->inflight == 0)
            return mc_protocol_error(c, "unexpected PUBACK/PUBCOMP");
        c->inflight--;
        if (c->producing)
            mc_mark_dirty(c);
        if (run->ops->acked)
            run->ops->acked(c, run->user);
        return 0;
    case MQTT_PUBREC:
        if (mc_decode_ack(c, h, body, &id) < 0)
            return -1;
        if (c->inflight == 0)
            return mc_protocol_error(c, "unexpected PUBREC");
        mc_queue_ack(c, MQTT_PUBREL, id);
        return 0;
    case MQTT_PUBREL:
        if (mc_decode_ack(c, h, body, &id) < 0)
            return -1;
        mc_queue_ack(c, MQTT_PUBCOMP, id);
        return 0;
    case MQTT_PINGRESP:
        return 0;
    default:
        if (h->type == MQTT_DISCONNECT && mc_v5(c))
            return mc_on_disconnect(c, body, h->body_len);
        return mc_protocol_error(c, "a packet only clients send");
    }
}

/* Frames one packet the way the run's protocol version does. */
static int mc_frame(const struct mc_conn *c, const uint8_t *buf, size_t len, struct mqtt_header *h)
{
    uint32_t max = c->t->run->cfg.max_packet;
    switch (c->t->run->cfg.version) {
    case MQTT5_PROTOCOL_LEVEL: return mqtt5_frame(buf, len, max, h);
    case MQTT31_PROTOCOL_LEVEL: return mqtt31_frame(buf, len, max, h);
    default: return mqtt_frame(buf, len, max, h);
    }
}

/* Handles every whole packet in data[0..len). Returns the bytes consumed,
 * or -1 if the connection was closed. */
static long mc_parse(struct mc_conn *c, const uint8_t *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        struct mqtt_header h;
        int n = mc_frame(c, data + off, len - off, &h);
        if (n == 0)
            break;
        if (n < 0) {
            mc_fail(c, MC_FAIL_PROTOCOL, "connection %u: bad packet from the broker (%s)", c->index,
                    mqtt5_strerror(n));
            return -1;
        }
        c->t->packets++;
        mc_trace(c, '<', data + off, (size_t)n);
        if (mc_dispatch(c, &h, data + off + h.header_len) < 0 || c->state == MC_CLOSED)
            return -1;
        off += (size_t)n;
    }
    return (long)off;
}

/* Reads until the socket is drained, as the edge-triggered registration
 * requires: a short read is enough unless the broker may have closed (hup),
 * in which case reading goes on to see the end. Input goes to the thread's
 * buffer first and is copied to the connection only when a packet is left
 * incomplete. */
static void mc_read(struct mc_conn *c, bool hup)
{
    struct mc_thread *t = c->t;
    while (c->state != MC_CLOSED) {
        size_t cap;
        uint8_t *buf = inbuf_read_target(&c->in, t->rbuf, sizeof t->rbuf, &cap);
        ssize_t n = read(c->io.fd, buf, cap);
        if (n == 0) {
            mc_fail(c, MC_FAIL_CONNECT, "connection %u closed by the broker", c->index);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                mc_fail(c, MC_FAIL_CONNECT, "connection %u: read failed: %s", c->index,
                        strerror(errno));
            return;
        }
        size_t len;
        const uint8_t *data = inbuf_filled(&c->in, t->rbuf, (size_t)n, &len);
        long used = mc_parse(c, data, len);
        if (used < 0)
            return;
        inbuf_consumed(&c->in, data, len, (size_t)used);
        if ((size_t)n < cap && !hup)
            return;
    }
}

/* Where c connects: its own target, or the run's. */
static const char *mc_host(const struct mc_conn *c)
{
    return c->host ? c->host : c->t->run->cfg.host;
}

static int mc_port(const struct mc_conn *c)
{
    return c->host ? c->port : c->t->run->cfg.port;
}

static void mc_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct mc_conn *c = io->data;
    if (c->state == MC_CONNECTING) {
        if (!(events & EV_WRITE))
            return;
        int err = net_connect_result(io->fd);
        if (err) {
            const char *host = mc_host(c);
            bool v6 = strchr(host, ':') != NULL;
            mc_fail(c, MC_FAIL_CONNECT, "cannot connect to %s%s%s:%d: %s", v6 ? "[" : "", host,
                    v6 ? "]" : "", mc_port(c), strerror(err));
            return;
        }
        c->state = MC_WAIT_CONNACK;
        mc_send_connect(c);
    } else if ((events & EV_WRITE) && c->blocked) {
        c->blocked = false;
        mc_mark_dirty(c);
    }
    if (events & EV_READ)
        mc_read(c, events & EV_HUP);
}

/* ---- the thread ---------------------------------------------------------- */

static void mc_connect_more(struct mc_thread *t)
{
    struct mc_run *run = t->run;
    while (t->handshakes < MC_CONNECT_WINDOW && t->next_connect < run->cfg.conns &&
           !atomic_load_explicit(&run->failed, memory_order_relaxed)) {
        struct mc_conn *c = &run->conns[t->next_connect];
        t->next_connect += run->cfg.threads;
        char err[NET_ERR_LEN];
        int fd = net_connect(mc_host(c), mc_port(c), err, sizeof err);
        if (fd < 0) {
            mc_fail(c, MC_FAIL_CONNECT, "connection %u: %s", c->index, err);
            return;
        }
        c->io.fd = fd;
        c->io.cb = mc_on_io;
        c->io.data = c;
        c->state = MC_CONNECTING;
        t->handshakes++;
        if (ev_io_start(t->loop, &c->io, EV_READ | EV_WRITE | EV_EDGE) < 0) {
            mc_fail(c, MC_FAIL_CONNECT, "connection %u: epoll: %s", c->index, strerror(errno));
            return;
        }
    }
}

static bool mc_prepare(struct ev_loop *loop, void *data)
{
    struct mc_thread *t = data;
    mc_connect_more(t);
    bool busy = false;
    struct mc_conn *c = t->dirty;
    t->dirty = NULL;
    while (c) {
        struct mc_conn *next = c->dirty_next;
        c->dirty = false;
        if (mc_service(c))
            busy = true;
        c = next;
    }
    atomic_store_explicit(&t->progress, t->packets, memory_order_relaxed);
    atomic_store_explicit(&t->received_seen, t->received, memory_order_relaxed);
    return busy;
}

static void mc_on_wake(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct mc_thread *t = io->data;
    struct mc_run *run = t->run;
    uint64_t v;
    while (read(io->fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
    int phase = atomic_load(&run->phase);
    if (phase == PHASE_STOP) {
        ev_stop(loop);
    } else if (phase == PHASE_MEASURE && !t->started) {
        t->started = true;
        for (unsigned i = t->index; i < run->cfg.conns; i += run->cfg.threads)
            if (run->conns[i].state == MC_READY)
                run->ops->start(&run->conns[i], run->user);
    }
}

static void *mc_thread_main(void *arg)
{
    struct mc_thread *t = arg;
    struct mc_run *run = t->run;
    ev_run(t->loop);
    /* Say goodbye where the stream allows it; the broker then needs no
     * read error to notice. (MQTT 5's DISCONNECT with reason 0 and no
     * properties is the MQTT 3.1.1 packet.) */
    for (unsigned i = t->index; i < run->cfg.conns; i += run->cfg.threads) {
        struct mc_conn *c = &run->conns[i];
        if (c->state == MC_READY && !c->blocked) {
            uint8_t *out = outq_reserve(&c->out, MQTT_EMPTY_LEN);
            mqtt_encode_empty(out, MQTT_DISCONNECT);
            mc_trace(c, '>', out, MQTT_EMPTY_LEN);
            outq_flush(&c->out, c->io.fd);
        }
        mc_close(c);
    }
    return NULL;
}

/* ---- the run ------------------------------------------------------------- */

struct mc_run *mc_run_new(const struct mc_config *cfg, const struct mc_ops *ops, void *user)
{
    struct mc_run *run = mem_calloc(1, sizeof *run);
    run->cfg = *cfg;
    run->ops = ops;
    run->user = user;
    run->done_fd = -1;
    run->conns = mem_calloc(cfg->conns, sizeof *run->conns);
    run->threads = mem_calloc(cfg->threads, sizeof *run->threads);
    for (unsigned i = 0; i < cfg->threads; i++) {
        struct mc_thread *t = &run->threads[i];
        t->run = run;
        t->index = i;
        t->next_connect = i;
        t->wake.fd = -1;
    }
    for (unsigned i = 0; i < cfg->conns; i++) {
        run->conns[i].index = cfg->first + i;
        run->conns[i].t = &run->threads[i % cfg->threads];
        run->conns[i].inflight_max = MC_INFLIGHT;
    }
    atomic_store(&run->work_left, cfg->work);
    return run;
}

void mc_set_filter(struct mc_run *run, unsigned i, const char *filter, uint8_t qos)
{
    struct mc_conn *c = &run->conns[i - run->cfg.first];
    mem_free(c->filter);
    c->filter = mem_strdup(filter);
    c->sub_qos = qos;
}

void mc_set_target(struct mc_run *run, unsigned i, const char *host, int port)
{
    struct mc_conn *c = &run->conns[i - run->cfg.first];
    c->host = host;
    c->port = port;
}

void mc_set_session(struct mc_run *run, unsigned i, enum mc_session s)
{
    run->conns[i - run->cfg.first].session = (uint8_t)s;
}

/* Creates the loops and wake-up descriptors. 0, or -1 with errno. */
static int mc_run_prepare(struct mc_run *run)
{
    run->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (run->done_fd < 0)
        return -1;
    for (unsigned i = 0; i < run->cfg.threads; i++) {
        struct mc_thread *t = &run->threads[i];
        t->loop = ev_loop_new();
        if (!t->loop)
            return -1;
        t->wake.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (t->wake.fd < 0)
            return -1;
        t->wake.cb = mc_on_wake;
        t->wake.data = t;
        if (ev_io_start(t->loop, &t->wake, EV_READ) < 0)
            return -1;
        ev_set_prepare(t->loop, mc_prepare, t);
    }
    return 0;
}

static uint64_t mc_progress(struct mc_run *run)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < run->cfg.threads; i++)
        sum += atomic_load_explicit(&run->threads[i].progress, memory_order_relaxed);
    return sum;
}

uint64_t mc_run_received(struct mc_run *run)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < run->cfg.threads; i++)
        sum += atomic_load_explicit(&run->threads[i].received_seen, memory_order_relaxed);
    return sum;
}

/* Messages received of those expected, or units of work, once the
 * measured phase has begun (before it, the line says it is connecting);
 * final: the threads are joined, so the figures are kept for the last
 * line rather than drawn. */
static void mc_progress_line(struct mc_run *run, bool final)
{
    if (!run->cfg.progress)
        return;
    bool setup = atomic_load(&run->phase) == PHASE_SETUP;
    uint64_t done = run->cfg.work - atomic_load(&run->work_left), total = run->cfg.work;
    if (run->cfg.progress_total) {
        total = run->cfg.progress_total;
        done = mc_run_received(run);
    }
    progress_update(run->cfg.progress, done, setup ? 0 : total, final);
}

enum mc_status mc_run_exec(struct mc_run *run, unsigned timeout_s, void (*tick)(void *),
                           void *tick_arg)
{
    /* A broker that closes first must not kill us with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    run->t_start_ns = clock_now_ns();
    if (mc_run_prepare(run) < 0) {
        mc_run_fail(run, MC_FAIL_CONNECT, "cannot set up the client threads: %s", strerror(errno));
        return MC_FAILED;
    }
    unsigned started = 0;
    for (; started < run->cfg.threads; started++) {
        int err = pthread_create(&run->threads[started].tid, NULL, mc_thread_main,
                                 &run->threads[started]);
        if (err) {
            mc_run_fail(run, MC_FAIL_CONNECT, "cannot start a client thread: %s", strerror(err));
            break;
        }
    }

    /* Watchdog: the run makes progress while packets keep arriving. */
    enum mc_status status;
    uint64_t last = 0, last_change = clock_now_ns();
    for (;;) {
        struct pollfd pfd = {.fd = run->done_fd, .events = POLLIN};
        if (poll(&pfd, 1, MC_TICK_MS) > 0) {
            status = atomic_load(&run->failed) ? MC_FAILED : MC_DONE;
            break;
        }
        if (tick)
            tick(tick_arg);
        mc_progress_line(run, false);
        uint64_t now = clock_now_ns(), progress = mc_progress(run);
        if (progress != last) {
            last = progress;
            last_change = now;
        } else if (now - last_change >= (uint64_t)timeout_s * 1000000000u) {
            status = MC_TIMEOUT;
            break;
        }
    }

    atomic_store(&run->phase, PHASE_STOP);
    for (unsigned i = 0; i < started; i++)
        mc_signal(run->threads[i].wake.fd);
    for (unsigned i = 0; i < started; i++)
        pthread_join(run->threads[i].tid, NULL);
    mc_progress_line(run, true);
    return status;
}

void mc_run_stats(const struct mc_run *run, struct mc_stats *st)
{
    memset(st, 0, sizeof *st);
    st->t_start_ns = run->t_start_ns;
    st->t_ready_ns = run->t_ready_ns;
    st->t_end_ns = run->t_end_ns;
    for (unsigned i = 0; i < run->cfg.threads; i++) {
        st->published += run->threads[i].published;
        st->received += run->threads[i].received;
    }
    st->ready = atomic_load(&run->ready);
    st->fail_connect = atomic_load(&run->fail_counts[MC_FAIL_CONNECT]);
    st->fail_protocol = atomic_load(&run->fail_counts[MC_FAIL_PROTOCOL]);
    st->fail_check = atomic_load(&run->fail_counts[MC_FAIL_CHECK]);
    st->fail_kind = run->fail_kind;
    memcpy(st->error, run->error, sizeof st->error);
}

void mc_run_free(struct mc_run *run)
{
    if (!run)
        return;
    for (unsigned i = 0; i < run->cfg.conns; i++) {
        mc_close(&run->conns[i]);
        mem_free(run->conns[i].filter);
    }
    for (unsigned i = 0; i < run->cfg.threads; i++) {
        struct mc_thread *t = &run->threads[i];
        if (t->wake.fd >= 0)
            close(t->wake.fd);
        ev_loop_free(t->loop);
    }
    if (run->done_fd >= 0)
        close(run->done_fd);
    mem_free(run->threads);
    mem_free(run->conns);
    mem_free(run);
}
