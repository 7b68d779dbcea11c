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

struct router;
struct session;
struct transport;
struct transport_listeners;

/* Topic aliases we accept from a client (CONNACK Topic Alias Maximum) and
 * use at most towards one: Mosquitto's default. */
#define BROKER_TOPIC_ALIAS_MAX 10

/* A Session Expiry Interval that never ends (MQTT 5's 0xFFFFFFFF, and
 * every MQTT 3.1.1 clean-session 0 session). */
#define SESSION_NEVER UINT32_MAX

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

/* One subscription as its session remembers it, so that the session can
 * remove it from the tree (or its shared group) when it ends. */
struct session_sub {
    uint8_t *filter; /* owned; the whole filter, $share/... included */
    uint16_t len;
    subtree_opts opts;
};

enum inflight_state { WAIT_PUBACK, WAIT_PUBREC, WAIT_PUBCOMP };

/* How one copy of a message goes to one session. */
struct delivery {
    uint32_t sub_id; /* MQTT 5 Subscription Identifier; 0 = none */
    uint8_t qos;
    bool retain;
    bool shared;     /* chosen through a shared subscription */
    /* Several identifiers (overlapping subscriptions of one MQTT 5 client
     * share one copy, 3.3.4): sub_ids[0] is their count, the identifiers
     * follow, and sub_id is 0. NULL otherwise. Borrowed in a delivery
     * handed to session_deliver; a copy the session keeps (queued, in
     * flight) owns its own array. */
    uint32_t *sub_ids;
    uint64_t entry;  /* persist.c: its log entry id; 0 = not in the log */
};

struct inflight {
    struct msg *msg; /* owned reference; NULL once only PUBREL is pending */
    struct delivery d;
    uint16_t packet_id;
    uint8_t state;   /* enum inflight_state */
};

struct queued {
    struct msg *msg; /* owned reference */
    struct delivery d;
};

struct session {
    char *client_id; /* owned, NUL-terminated; the sessions map key */
    uint16_t client_id_len;
    bool v5;           /* its latest connection spoke MQTT 5 */
    bool v31;          /* its latest connection spoke MQTT 3.1 */
    uint32_t expiry_s; /* Session Expiry Interval: 0 ends it with its connection */
    struct conn *conn; /* NULL while offline */
    /* Offline with an end in sight (b->timers): the session expires at
     * expires_ms unless SESSION_NEVER, and a delayed will is published at
     * will_ms (MQTT 5). */
    uint64_t expires_ms;
    struct msg *will;  /* owned */
    uint64_t will_ms;
    bool on_timers;
    struct session *timer_prev, *timer_next;
    struct session_sub *subs;
    uint32_t nsubs, subs_cap;
    struct inflight *inflight; /* oldest first */
    uint32_t ninflight, inflight_cap;
    struct queued *queue;      /* ring */
    uint32_t qhead, qlen, qcap;
    uint16_t *qos2_in;         /* received QoS 2 ids waiting for PUBREL */
    uint32_t nqos2_in, qos2_in_cap;
    uint16_t next_packet_id;
    struct conn *waiters; /* publishers paused until this session drains */
    bool slow_consumer;   /* made publishers wait too long: they no longer do */
    /* router.c's: the last match that met the session, and its entry in
     * that match, so that overlapping subscriptions merge into one copy. */
    uint32_t match_gen;
    uint32_t match_idx;
    bool persisted;     /* persist.c: its SESSION record is live in the log */
    struct session_auth auth; /* auth.c: its ACL handle */
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

/* session.c */
struct session *session_new(struct broker *b, const uint8_t *client_id, size_t len);
/* Removes the session's subscriptions, drops its messages, publishes a
 * will it still owes and frees it. */
void session_destroy(struct broker *b, struct session *s);
/* The session's connection ended: ends the session (expiry 0), or keeps it
 * with its timers (session expiry, will delay) started. will is the
 * connection's will to publish (owned), or NULL; with b->defer_wills even
 * one without a delay waits on the timers. */
void session_detach(struct broker *b, struct session *s, struct msg *will, uint32_t will_delay_s);
/* The offline session s owes will (owned) at loop time will_ms, which may
 * have passed: session_sweep publishes it then. A will's expires_ms holds
 * its Message Expiry Interval alone (msg_new with now_ms 0) until it is
 * published, when the interval starts. */
void session_owe_will(struct broker *b, struct session *s, struct msg *will, uint64_t will_ms);
/* A connection took the session up again: stops its timers (a delayed will
 * is dropped, [MQTT-3.1.3-9]). */
void session_attach(struct broker *b, struct session *s, struct conn *c);
/* Periodic: publishes delayed wills and ends expired sessions. */
void session_sweep(struct broker *b);
/* Delivers m to the session: now, into the inflight window or the queue,
 * or drops it (counted) when that is full or the message expired.
 * publisher is the connection whose PUBLISH m is, or NULL (see
 * back-pressure below). */
void session_deliver(struct broker *b, struct session *s, struct msg *m, const struct delivery *d,
                     struct conn *publisher);
/* For router_hand_off: offers fn each message s holds (in flight before its
 * PUBREC, or queued) that came through a shared subscription, as a copy
 * without its log entry; a message fn took (returning true) is dropped from
 * s. */
typedef bool (*session_hand_off_fn)(void *ctx, struct session *s, struct msg *m,
                                    const struct delivery *d);
void session_hand_off(struct broker *b, struct session *s, session_hand_off_fn fn, void *ctx);
/* After CONNACK on a resumed session: resend the inflight window with DUP
 * and fill it from the queue. */
void session_resume(struct broker *b, struct session *s);
/* persist.c, at start: puts back a copy of m that was queued or in flight
 * in state (enum plog_state) with packet_id. */
void session_restore(struct broker *b, struct session *s, struct msg *m, const struct delivery *d,
                     uint8_t state, uint16_t packet_id);
/* Acknowledgement flows for messages the broker sent; reason is the MQTT 5
 * reason code (0 from MQTT 3.1.1). */
void session_acked(struct broker *b, struct session *s, uint8_t type, uint16_t packet_id,
                   uint8_t reason);
/* Received QoS 2 ids: returns 1 if id was already waiting for PUBREL, 0
 * after recording it, -1 if limit ids are waiting already. */
int session_qos2_seen(struct session *s, uint16_t packet_id, uint32_t limit);
/* Returns false if the id was not waiting for PUBREL. */
bool session_qos2_release(struct session *s, uint16_t packet_id);
/* Back-pressure. session_deliver() pauses the publishing connection
 * (its publisher argument) while the online session s it delivered to is above the
 * watermarks, so that a fast publisher waits for a slower subscriber
 * instead of filling its queue until messages drop. A connection never
 * waits for itself or for a connection that is itself waiting, so waits
 * form chains, never cycles; a subscriber that keeps publishers waiting for
 * longer than BROKER_WAIT_LIMIT_MS is flagged a slow consumer, and then
 * messages to it are dropped at the hard limits instead. */
#define BROKER_WAIT_LIMIT_MS 1000
/* Resumes s's waiting publishers (and forgives a slow consumer) if s
 * drained below the low watermarks; or resumes them unconditionally (the
 * session went offline, ended, or is too slow). */
void session_release_publishers(struct broker *b, struct session *s, bool unconditionally);
/* Takes a closing connection off the wait list it is on. */
void session_forget_publisher(struct conn *c);
/* conn.c: a released publisher resumes reading next iteration. */
void conn_resume(struct broker *b, struct conn *c);

/* Remember / forget a subscription for cleanup; returns true if new. */
bool session_add_sub(struct session *s, const uint8_t *filter, size_t len, subtree_opts opts);
bool session_remove_sub(struct session *s, const uint8_t *filter, size_t len);

#endif
