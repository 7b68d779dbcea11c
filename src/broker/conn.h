/* conn.h - a client connection as every broker module sees it: its state,
 * the limits its client set, its output queue, and the two lists the end of
 * each loop iteration works through, of connections with output to flush
 * (conn_mark_dirty) and with input left to read (conn_read_later).
 * conn_loop.h reads, frames and dispatches its packets; conn_end.h ends it.
 *
 * A connection is freed, and its socket closed, only at the end of a loop
 * iteration after its commit (conn_prepare), never inside its own
 * callbacks. MQTT 3.1 behaves as 3.1.1 wherever the two agree; the v31
 * flags mark where they do not (CONNACK, client ids, SUBACK, framing).
 */
#ifndef SHOOTOUT_CONN_H
#define SHOOTOUT_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/ev.h"
#include "core/inbuf.h"
#include "core/outq.h"

struct broker;
struct broker_loop;
struct kv_claim;
struct msg;
struct session;
struct sub_job;
struct transport;

/* Topic aliases we accept from a client (CONNACK Topic Alias Maximum) and
 * use at most towards one: Mosquitto's default. */
#define BROKER_TOPIC_ALIAS_MAX 10

/* One topic alias: a topic the connection's peer and we both know by a
 * number. */
struct topic_alias {
    uint8_t *topic; /* owned; NULL while unset */
    uint16_t len;
};

enum conn_state {
    CONN_NEW,      /* accepted, waiting for CONNECT */
    CONN_ACTIVE,   /* CONNACK 0 sent */
    CONN_LINGER,   /* ended by us: its last output goes out, its input is dropped (core/linger.h) */
    CONN_CLOSED,   /* done with, waiting to be freed (and its fd closed) */
};

/* What few connections need, apart so that an idle one does not carry it
 * (docs/broker.md, "Memory per idle client"): MQTT 5 limits and topic
 * aliases, a will, a transport, a wait for a subscriber, a sliced
 * SUBSCRIBE, a move to another loop. Allocated on the first need
 * (conn_cold) and freed with the connection (conn_free); a zeroed one
 * holds the defaults, which conn_cold_peek reads without allocating. */
struct conn_cold {
    struct transport *tp;     /* TLS / WebSocket (transport.h); NULL: plain TCP */
    struct msg *will;         /* owned; published unless DISCONNECT (expiry: see session_owe_will) */
    uint32_t will_delay_s;    /* MQTT 5 Will Delay Interval */
    /* MQTT 5 limits the client set for what we send it. */
    uint32_t max_packet_out;  /* its Maximum Packet Size; 0 = no limit */
    uint16_t inflight_max;    /* its Receive Maximum when below --max-inflight-messages; 0 = that */
    uint16_t alias_out_max;   /* topic aliases we may use, min(its maximum, ours) */
    uint16_t nalias_out;
    struct topic_alias *alias_in;  /* [BROKER_TOPIC_ALIAS_MAX], the client's; lazily */
    struct topic_alias *alias_out; /* [alias_out_max], ours; lazily, filled in order */
    /* Back-pressure: while blocked_on a congested subscriber's session,
     * this connection's input is not read (session.h). */
    struct session *blocked_on;
    struct conn *wait_prev, *wait_next; /* blocked_on->waiters */
    uint64_t blocked_since_ms;
    /* When a wait of this publisher last ended with its subscriber flagged
     * a slow consumer; 0 = never (session.h). */
    uint64_t grace_spent_ms;
    /* Back-pressure across loops (session.h): waiting for another loop's
     * session (a reference held), on its loop's remote_waiters list
     * through wait_prev/wait_next. */
    struct session *remote_on;
    /* The session it waits for was a slow consumer already when the wait
     * began (a remote wait for deliveries on their way, xpending): that
     * the wait ends with it flagged says nothing of this one's grace. */
    bool wait_began_slow;
    /* A large SUBSCRIBE or UNSUBSCRIBE under way (handle.h): owned; input
     * is not read until it is done. */
    struct sub_job *job;
    /* cluster/js_msgs.c's number for it, once it sent a QoS 1/2 message to
     * the stream (0 before): an acknowledgement comes back to this
     * connection only, not to a later one of its session. */
    uint64_t js_serial;
    /* Its CONNECT names a session another loop owns: at the end of this
     * iteration it goes to that loop, which reads the CONNECT again; the
     * input is not read meanwhile (broker_int.h, "moving"). */
    struct broker_loop *move_to;
    struct conn *move_next;
    /* A clustered node's CONNECT claims its session first (cluster/kv_sess.h):
     * the claim, owned; while claiming (not answered yet) the input is not
     * read and the CONNECT stays in it, read again once the answer is back
     * (connect_claimed), when it takes the claim. */
    struct kv_claim *claim;
    bool claiming;
};

/* Laid out without holes, the rarer flags in bits, to fit a 176-byte malloc
 * chunk (checked in conn.c): what every connection, idle ones included,
 * costs. */
struct conn {
    struct ev_io io;          /* io.data = its loop (struct broker_loop) */
    struct outq out;
    struct inbuf in;          /* partial packet left from earlier reads */
    uint64_t in_since_ms;     /* when the first byte of the partial packet in `in` came */
    uint64_t last_rx_ms;      /* CONN_LINGER: when the linger time is up */
    struct session *session;
    struct conn *prev, *next; /* broker_loop.conns */
    struct conn *dirty_next;  /* broker_loop.dirty */
    struct conn *read_next;   /* broker_loop.read_list */
    struct conn_cold *cold;   /* NULL until needed */
    uint32_t in_counted;      /* in.cap as counted in broker.partial_bytes */
    uint32_t dropped;         /* CONN_LINGER: input bytes dropped */
    uint16_t keepalive;       /* seconds, 0 = none */
    uint8_t state;            /* enum conn_state */
    /* The flags the hot path sets or tests per packet are whole bytes. */
    bool dirty;               /* on its loop's flush list */
    bool read_pending;        /* stopped reading early; on the read list */
    bool write_blocked;       /* socket full; wait for EV_WRITE */
    bool v5;                  /* the client speaks MQTT 5.0 */
    bool over_limit : 1;      /* accepted beyond max_connections */
    bool v31 : 1;             /* the client speaks MQTT 3.1 ("MQIsdp"); else 3.1.1 unless v5 */
    bool shut : 1;            /* CONN_LINGER: all output out, write side shut */
    bool peer_done : 1;       /* CONN_LINGER: the client closed */
    bool problem_info : 1;    /* MQTT 5: it takes reason strings */
};

/* c's cold part, allocated (zeroed) if it has none yet: for writing. */
struct conn_cold *conn_cold(struct conn *c);
/* c's cold part to read: the defaults (all zero) while it has none. */
extern const struct conn_cold conn_cold_none;
static inline const struct conn_cold *conn_cold_peek(const struct conn *c)
{
    return c->cold ? c->cold : &conn_cold_none;
}
/* On the loop a connection moved to, before its CONNECT is read again:
 * the move is over, and its cold part, which held only the move, its
 * transport and its claim, goes unless it has one of the two. */
void conn_cold_moved(struct conn *c);
/* Frees c and its cold part (the socket is closed by then). */
void conn_free(struct conn *c);

static inline struct transport *conn_tp(const struct conn *c)
{
    return c->cold ? c->cold->tp : NULL;
}

/* Our inflight window towards c's client: min(max_inflight, its Receive
 * Maximum). */
static inline uint32_t conn_inflight_max(const struct conn *c, uint32_t max_inflight)
{
    return c->cold && c->cold->inflight_max ? c->cold->inflight_max : max_inflight;
}

/* Whether c, a publisher, waits for a subscriber (session.h). */
static inline bool conn_waiting(const struct conn *c)
{
    const struct conn_cold *k = c->cold;
    return k && (k->blocked_on || k->remote_on);
}

/* Whether c's input waits: for a subscriber, a sliced SUBSCRIBE, a move
 * to another loop, or its session's claim in the cluster. */
static inline bool conn_paused(const struct conn *c)
{
    const struct conn_cold *k = c->cold;
    return k && (k->blocked_on || k->remote_on || k->job || k->move_to || k->claiming);
}

/* Queues the connection for a flush at the end of this loop iteration. */
void conn_mark_dirty(struct broker_loop *l, struct conn *c);
/* Queues the connection to be read again at the end of this loop
 * iteration: its read budget was spent, or a publisher it waited for
 * released it. */
void conn_read_later(struct broker_loop *l, struct conn *c);
/* Puts c on / takes c off its loop's list of connections (l->conns). */
void conn_link(struct broker_loop *l, struct conn *c);
void conn_unlink(struct broker_loop *l, struct conn *c);
/* Brings the broker's count of input memory held for partial packets up
 * to date with c's input buffer; true if that total is now over
 * max_partial_packet_bytes. */
bool conn_count_input(struct broker_loop *l, struct conn *c);
/* Appends an MQTT 5 packet made of a reason code and properties (DISCONNECT,
 * the acks) with a Reason String when the client takes one and it fits its
 * Maximum Packet Size. type is the packet type, packet_id 0 for DISCONNECT. */
void conn_write_reason(struct conn *c, uint8_t type, uint16_t packet_id, uint8_t reason,
                       const char *why);

#endif
