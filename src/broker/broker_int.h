/* broker_int.h - the broker's internal state shared by its modules: the
 * broker itself, client connections and sessions.
 *
 * Ownership: the broker owns every connection and session. A session lives
 * while its client is connected and then for its Session Expiry Interval
 * (MQTT 5; 0 unless the client asked for more), or, for an MQTT 3.1 or
 * 3.1.1 persistent session, until a clean CONNECT with its client id
 * discards it. MQTT 3.1 behaves as 3.1.1 wherever the two agree; the v31
 * flags mark where they do not (CONNACK, client ids, SUBACK, framing).
 * A connection points to its session
 * and the session back to its connection while both are live. Connections
 * are freed, and their sockets closed, only at the end of a loop iteration
 * after its commit (conn_prepare), never inside their own callbacks.
 */
#ifndef SHOOTOUT_BROKER_INT_H
#define SHOOTOUT_BROKER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/auth.h"
#include "broker/broker.h"
#include "broker/metrics.h"
#include "broker/msg.h"
#include "broker/subtree.h"
#include "core/ev.h"
#include "core/hmap.h"
#include "core/inbuf.h"
#include "core/outq.h"
#include "mqtt/mqtt5.h"
/* Until each module includes what it uses: */
#include "broker/session.h"
#include "broker/session_life.h"

struct router;
struct session;
struct transport;
struct transport_listeners;

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

struct conn {
    struct ev_io io;          /* io.data = this */
    uint8_t state;            /* enum conn_state */
    bool over_limit;          /* accepted beyond max_connections */
    bool dirty;               /* on the broker's flush list */
    bool read_pending;        /* stopped reading early; on the read list */
    bool write_blocked;       /* socket full; wait for EV_WRITE */
    bool v5;                  /* the client speaks MQTT 5.0 */
    bool v31;                 /* the client speaks MQTT 3.1 ("MQIsdp"); else 3.1.1 unless v5 */
    bool shut;                /* CONN_LINGER: all output out, write side shut */
    bool peer_done;           /* CONN_LINGER: the client closed */
    bool problem_info;        /* MQTT 5: it takes reason strings */
    uint16_t keepalive;       /* seconds, 0 = none */
    uint64_t last_rx_ms;      /* CONN_LINGER: when the linger time is up */
    uint32_t dropped;         /* CONN_LINGER: input bytes dropped */
    struct session *session;
    struct msg *will;         /* owned; published unless DISCONNECT (expiry: see session_owe_will) */
    uint32_t will_delay_s;    /* MQTT 5 Will Delay Interval */
    /* MQTT 5 limits the client set for what we send it. */
    uint32_t inflight_max;    /* min(--max-inflight-messages, its Receive Maximum) */
    uint16_t alias_out_max;   /* topic aliases we may use, min(its maximum, ours) */
    uint32_t max_packet_out;  /* its Maximum Packet Size; 0 = no limit */
    struct topic_alias *alias_in;  /* [BROKER_TOPIC_ALIAS_MAX], the client's; lazily */
    struct topic_alias *alias_out; /* [alias_out_max], ours; lazily, filled in order */
    uint16_t nalias_out;
    struct inbuf in;          /* partial packet left from earlier reads */
    struct outq out;
    struct conn *prev, *next; /* broker.conns */
    struct conn *dirty_next;  /* broker.dirty */
    struct conn *read_next;   /* broker.read_list */
    /* Back-pressure: while blocked_on a congested subscriber's session,
     * this connection's input is not read (see session_push_back). */
    struct session *blocked_on;
    struct conn *wait_prev, *wait_next; /* blocked_on->waiters */
    uint64_t blocked_since_ms;
    struct transport *tp;     /* TLS / WebSocket (transport.h); NULL: plain TCP */
};

struct broker_stats {
    uint64_t msgs_in, msgs_out;
    uint64_t bytes_in, bytes_out;
    uint64_t dropped_queue_full, dropped_output_full, dropped_offline_qos0;
    uint64_t dropped_expired, dropped_too_large;
    uint64_t refused_connections, protocol_errors;
    uint64_t publisher_waits, slow_consumers;
    uint64_t last_drop_log_ms; /* drops are logged at most once a second */
};

struct broker {
    const struct broker_config *cfg;
    struct ev_loop *loop;
    struct ev_io listener;
    int spare_fd;           /* released to shed connections at EMFILE */
    struct ev_timer sweep;  /* keepalive and connect timeouts */
    struct hmap sessions;   /* client id -> struct session */
    struct router *router;  /* router.c: the subscriptions, and its scratch */
    struct retain *retained;
    struct session *timers; /* offline sessions that expire or owe a will */
    struct conn *conns;     /* every connection not yet freed */
    uint32_t nconns;        /* open connections */
    uint32_t nclients;      /* connections past CONNECT, with a session */
    struct ev_timer sys;    /* publishes the $SYS tree */
    uint64_t started_ms;
    struct conn *dirty;     /* connections with output to flush */
    struct conn *read_list; /* connections with unread input */
    struct conn *closed;    /* lingering, or closed and to be freed */
    uint32_t next_auto_id;
    /* Back-pressure watermarks, from the limits: a publisher waits for a
     * subscriber above the high marks, until it is back under the low. */
    size_t out_high, out_low;
    uint32_t queue_high, queue_low;
    struct broker_stats stats;
    struct persist *persist; /* persist.c; NULL with persistence off */
    /* Shutting down with persistence: the wills of the connections it
     * closes wait in the log for the next start (MQTT 5 3.1.2.5 allows the
     * deferral) instead of being dropped. */
    bool defer_wills;
    struct broker_auth auth; /* auth.c: password file, ACL, their counters */
    struct broker_obs obs;   /* metrics.c: the /metrics endpoint, log state */
    struct transport_listeners *transports; /* transport.h */
};

/* Our MQTT 5 Receive Maximum: QoS 2 messages a client may have waiting for
 * PUBREL; the same bound as our inflight window towards clients (the
 * option stops at 65535). */
static inline uint16_t broker_receive_max(const struct broker *b)
{
    return (uint16_t)b->cfg->max_inflight;
}

/* broker.c: set up a broker on a loop, without a listener (broker_run adds
 * one; test harnesses hand connections to conn_accept themselves), and take
 * it down again, closing every connection. */
void broker_init(struct broker *b, const struct broker_config *cfg, struct ev_loop *loop);
void broker_shutdown(struct broker *b);

/* sys_tree.c: publishes the $SYS/broker/... figures as retained messages. */
void sys_tree_publish(struct broker *b);

/* conn.c */
struct conn *conn_accept(struct broker *b, int fd);
/* Queues the connection for a flush at the end of this loop iteration. */
void conn_mark_dirty(struct broker *b, struct conn *c);
/* Ends the connection (publishing the will unless graceful) and detaches
 * the session at once; drops what is queued for it, and the socket is
 * closed when the struct is freed, after this iteration's commit. reason is
 * for the log. */
void conn_close(struct broker *b, struct conn *c, const char *reason, bool graceful);
/* A refused CONNECT: the connection ends as conn_close, but lingers for its
 * CONNACK to reach the client (see conn_kick). */
void conn_close_after_flush(struct broker *b, struct conn *c);
/* Ends a connection the server's way: an MQTT 5 client is first sent a
 * DISCONNECT with the reason code (why as its Reason String, if it fits);
 * the MQTT side ends at once, as with conn_close, and the connection
 * lingers (core/linger.h): what is queued goes out after this iteration's
 * commit, then the write side is shut and input dropped until the client
 * closes, LINGER_MS at most, so that a client still sending reads the
 * DISCONNECT rather than a reset. */
void conn_kick(struct broker *b, struct conn *c, uint8_t reason, const char *why, bool graceful);
/* broker_shutdown: whether connections still linger. */
static inline bool conn_lingering(const struct broker *b) { return b->closed != NULL; }
/* Appends an MQTT 5 packet made of a reason code and properties (DISCONNECT,
 * the acks) with a Reason String when the client takes one and it fits its
 * Maximum Packet Size. type is the packet type, packet_id 0 for DISCONNECT. */
void conn_write_reason(struct conn *c, uint8_t type, uint16_t packet_id, uint8_t reason,
                       const char *why);
/* Loop-iteration work: pending reads, flushes, frees. True if reads remain. */
bool conn_prepare(struct broker *b);
void conn_sweep(struct broker *b);

/* handle_*.c: one per packet family; each returns 0, or a negative
 * mqtt_err / mqtt5_err after which the caller closes the connection as a
 * protocol violation (for MQTT 5 with DISCONNECT and mqtt5_err_reason), or
 * a positive MQTT 5 reason code to close it with. */
int handle_connect(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);
int handle_publish(struct broker *b, struct conn *c, uint8_t flags, const uint8_t *body,
                   uint32_t len);
int handle_puback(struct broker *b, struct conn *c, uint8_t type, const uint8_t *body,
                  uint32_t len);
int handle_subscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);
int handle_unsubscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);
/* MQTT 5 DISCONNECT from the client (after which the connection is closed). */
int handle_disconnect(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);

/* conn.c: a released publisher resumes reading next iteration. */
void conn_resume(struct broker *b, struct conn *c);

#endif
