/* broker_int.h - the broker's internal state shared by its modules: the
 * broker itself, client connections and sessions.
 *
 * Ownership: the broker owns every connection and session. A session lives
 * while its client is connected or, for a persistent session, until a clean
 * CONNECT with its client id discards it. A connection points to its session
 * and the session back to its connection while both are live. Connections
 * are freed only between loop iterations (conn_free_closed), never inside
 * their own callbacks.
 */
#ifndef SHOOTOUT_BROKER_INT_H
#define SHOOTOUT_BROKER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/broker.h"
#include "broker/msg.h"
#include "core/ev.h"
#include "core/hmap.h"
#include "core/inbuf.h"
#include "core/outq.h"

struct session;

enum conn_state {
    CONN_NEW,      /* accepted, waiting for CONNECT */
    CONN_ACTIVE,   /* CONNACK 0 sent */
    CONN_CLOSING,  /* flushing a last answer, then closed */
    CONN_CLOSED,   /* fd closed, waiting to be freed */
};

struct conn {
    struct ev_io io;          /* io.data = this */
    uint8_t state;            /* enum conn_state */
    bool over_limit;          /* accepted beyond max_connections */
    bool dirty;               /* on the broker's flush list */
    bool read_pending;        /* stopped reading early; on the read list */
    bool write_blocked;       /* socket full; wait for EV_WRITE */
    uint16_t keepalive;       /* seconds, 0 = none */
    uint64_t last_rx_ms;
    struct session *session;
    struct msg *will;         /* owned; published unless DISCONNECT */
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
};

/* One subscription as its session remembers it, so that the session can
 * remove it from the tree when it ends. */
struct session_sub {
    uint8_t *filter; /* owned */
    uint16_t len;
    uint8_t qos;
};

enum inflight_state { WAIT_PUBACK, WAIT_PUBREC, WAIT_PUBCOMP };

struct inflight {
    struct msg *msg; /* owned reference; NULL once only PUBREL is pending */
    uint16_t packet_id;
    uint8_t qos;
    uint8_t state;   /* enum inflight_state */
    bool retain;
};

struct queued {
    struct msg *msg; /* owned reference */
    uint8_t qos;
    bool retain;
};

struct session {
    char *client_id; /* owned, NUL-terminated; the sessions map key */
    uint16_t client_id_len;
    bool clean;
    struct conn *conn; /* NULL while offline */
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
    /* Routing scratch: dedups overlapping subscriptions per message. */
    uint32_t match_gen;
    uint8_t match_qos;
};

struct broker_stats {
    uint64_t msgs_in, msgs_out;
    uint64_t bytes_in, bytes_out;
    uint64_t dropped_queue_full, dropped_output_full, dropped_offline_qos0;
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
    struct subtree *subs;
    struct retain *retained;
    struct conn *conns;     /* every connection not yet freed */
    uint32_t nconns;        /* open connections */
    uint32_t nclients;      /* connections past CONNECT, with a session */
    struct ev_timer sys;    /* publishes the $SYS tree */
    uint64_t started_ms;
    struct conn *dirty;     /* connections with output to flush */
    struct conn *read_list; /* connections with unread input */
    struct conn *closed;    /* closed, to be freed */
    uint32_t match_gen;
    struct session **matches; /* routing scratch */
    uint32_t nmatches, matches_cap;
    uint32_t next_auto_id;
    struct conn *publisher;   /* whose packet is being handled, if any */
    /* Back-pressure watermarks, from the limits: a publisher waits for a
     * subscriber above the high marks, until it is back under the low. */
    size_t out_high, out_low;
    uint32_t queue_high, queue_low;
    struct broker_stats stats;
};

/* broker.c: set up a broker on a loop, without a listener (broker_run adds
 * one; test harnesses hand connections to conn_accept themselves), and take
 * it down again, closing every connection. */
void broker_init(struct broker *b, const struct broker_config *cfg, struct ev_loop *loop);
void broker_shutdown(struct broker *b);

/* sys_tree.c: publishes the $SYS/broker/... figures as retained messages. */
void sys_tree_publish(struct broker *b);

/* conn.c */
void conn_accept(struct broker *b, int fd);
/* Queues the connection for a flush at the end of this loop iteration. */
void conn_mark_dirty(struct broker *b, struct conn *c);
/* Closes the socket now (publishing the will unless graceful) and detaches
 * the session; the struct is freed later. reason is for the log. */
void conn_close(struct broker *b, struct conn *c, const char *reason, bool graceful);
/* Sends what is queued, then closes. */
void conn_close_after_flush(struct broker *b, struct conn *c);
/* Loop-iteration work: pending reads, flushes, frees. True if reads remain. */
bool conn_prepare(struct broker *b);
void conn_sweep(struct broker *b);

/* handle_*.c: one per packet family; each returns 0, or -1 after which the
 * caller closes the connection as a protocol violation. */
int handle_connect(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);
int handle_publish(struct broker *b, struct conn *c, uint8_t flags, const uint8_t *body,
                   uint32_t len);
int handle_puback(struct broker *b, struct conn *c, uint8_t type, const uint8_t *body,
                  uint32_t len);
int handle_subscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);
int handle_unsubscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);

/* Routes a message to every matching subscription (and stores it if
 * retained). Takes no ownership of m. */
void broker_publish(struct broker *b, struct msg *m);

/* session.c */
struct session *session_new(struct broker *b, const uint8_t *client_id, size_t len, bool clean);
/* Removes the session's subscriptions, drops its messages and frees it. */
void session_destroy(struct broker *b, struct session *s);
/* Delivers m at QoS qos to the session: now, into the inflight window or
 * the queue, or drops it (counted) when that is full. */
void session_deliver(struct broker *b, struct session *s, struct msg *m, uint8_t qos, bool retain);
/* After CONNACK on a resumed session: resend the inflight window with DUP
 * and fill it from the queue. */
void session_resume(struct broker *b, struct session *s);
/* Acknowledgement flows for messages the broker sent; 0 or -1. */
void session_acked(struct broker *b, struct session *s, uint8_t type, uint16_t packet_id);
/* Received QoS 2 ids: returns true if id was already waiting for PUBREL,
 * else records it. */
bool session_qos2_seen(struct session *s, uint16_t packet_id);
void session_qos2_release(struct session *s, uint16_t packet_id);
/* Back-pressure. session_deliver() pauses the publishing connection
 * (b->publisher) while the online session s it delivered to is above the
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
bool session_add_sub(struct session *s, const uint8_t *filter, size_t len, uint8_t qos);
bool session_remove_sub(struct session *s, const uint8_t *filter, size_t len);

#endif
