/* broker_int.h - the broker's state, in two parts: struct broker_loop,
 * what one event loop owns (its connections, the per-iteration read and
 * flush lists that batch their work, its timers, its counters, its routing
 * scratch), and struct broker, what every loop shares (subscriptions,
 * retained messages, sessions, wills, ACL and passwords, limits,
 * persistence, $SYS, metrics), grouped by the module that owns each part
 * (the types are in conn.h, session.h, router.h and the others). The code
 * of a connection takes its loop explicitly; the broker is l->b.
 *
 * Ownership (docs/broker.md, "Threads"): a loop owns its connections and
 * the sessions created on it (session.loop, for the session's whole life);
 * only the owner touches a session's queue, window, waiters and connection.
 * What other loops route to a session reaches it through xloop.h.
 */
#ifndef SHOOTOUT_BROKER_INT_H
#define SHOOTOUT_BROKER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/auth.h"
#include "broker/broker.h"
#include "broker/metrics.h"
#include "broker/msg.h"
#include "broker/router.h"
#include "broker/xloop.h"
#include "core/ev.h"
#include "core/hmap.h"
#include "core/srv.h"

struct cluster;
struct conn;
struct persist;
struct retain;
struct router;
struct session;
struct transport_listeners;

/* A counter one loop writes and other threads read ($SYS, /metrics, the
 * connection limit): relaxed atomic accesses keep those reads free of data
 * races and cost a plain load, add and store on x86 (no locked
 * instruction), as the single writer needs no read-modify-write. */
#define STAT_ADD(x, n)                                                                      \
    __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define STAT_GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

struct broker_stats {
    uint64_t msgs_in, msgs_out;
    uint64_t bytes_in, bytes_out;
    uint64_t dropped_queue_full, dropped_output_full, dropped_offline_qos0;
    uint64_t dropped_expired, dropped_too_large;
    uint64_t refused_connections, protocol_errors;
    uint64_t publisher_waits, slow_consumers;
    uint64_t subscriptions_refused; /* at max_subscriptions */
};

/* What one event loop owns: its connections and the per-iteration lists
 * that batch their reads and flushes, its timers, its counters and its
 * routing scratch. Only code running on that loop touches it; everything
 * in struct broker is shared by every loop. */
struct broker_loop {
    struct broker *b;       /* the broker-wide state */
    const struct broker_config *cfg; /* b->cfg, one load nearer on the hot path */
    struct ev_loop *ev;
    unsigned index;         /* 0: the home loop, which also runs the
                             * broker-wide timers (sys, session expiry,
                             * persistence upkeep) */
    struct srv_worker *srv; /* core/srv.c's worker; NULL in test harnesses */
    struct broker_stats stats;
    struct ev_timer sweep;  /* timeouts; on the home loop also session
                             * expiry and persistence upkeep */
    struct ev_timer stall;  /* conn_check_stalls, while a publisher that
                             * spent its grace waits (session.h) */

    /* Connections (conn.h): */
    struct conn *conns;     /* every connection of this loop not yet ended */
    uint32_t nconns;        /* open connections */
    uint32_t nclients;      /* connections past CONNECT, with a session */
    struct conn *dirty;     /* connections with output to flush */
    struct conn *read_list; /* connections with unread input */
    struct conn *closed;    /* lingering, or closed and to be freed */

    struct route_scratch route; /* router.h: the message being routed */
    /* The MQTT 5 reason code conn_kick is closing a connection with, for
     * the disconnect line conn_close then writes; 0 outside conn_kick. */
    uint8_t kick_reason;

    /* Sessions (session_life.h): the offline ones of this loop that expire
     * or owe a will; each loop sweeps its own. */
    struct session *timers;

    /* Other loops (xloop.h): what this loop hands them and they it. */
    struct xloop x;
    struct xloop_box x_taken; /* the inbox being handled (conn_take_handoffs) */
    struct msg_pool msgs;   /* msg.h: the messages this loop makes */
    struct ev_io x_wake;    /* x.efd: another loop handed us a batch */
    struct conn *moving;    /* connections to hand to their session's loop */
    struct conn *remote_waiters; /* publishers waiting for other loops' sessions */
    /* The home loop's, in a cluster: the inbox's watcher while it is over
     * ROUTER_CLUSTER_MARK (router.h). */
    struct ev_io *cluster_held;
};

struct broker {
    /* What every module reads. */
    const struct broker_config *cfg;
    struct broker_loop *home; /* loops[0] */
    struct broker_loop *loops;
    unsigned nloops;
    struct xloop **xs;      /* [nloops]: &loops[i].x, as xloop_flush takes them */
    uint64_t started_ms;
    struct ev_timer sys;    /* on the home loop: publishes the $SYS tree (sys_tree.h) */

    /* Connections (conn.h): */
    size_t partial_bytes;   /* input buffers of partial packets, all connections
                             * (atomic: every loop adds its own) */
    struct transport_listeners *transports; /* transport.h */

    /* Sessions (session.h, session_life.h): */
    /* client id -> struct session, under sessions_lock with more than one
     * loop (looked up at CONNECT, changed when a session begins or ends) */
    struct hmap sessions;
    pthread_mutex_t sessions_lock;
    uint32_t next_auto_id;  /* for client ids the broker assigns; under sessions_lock */
    /* Back-pressure watermarks, from the limits: a publisher waits for a
     * subscriber above the high marks, until it is back under the low. */
    size_t out_high, out_low;
    uint32_t queue_high, queue_low;
    /* Shutting down with persistence: the wills of the connections it
     * closes wait in the log for the next start (MQTT 5 3.1.2.5 allows the
     * deferral) instead of being dropped. */
    bool defer_wills;

    /* Messages (router.h, retain.h): */
    struct router *router;  /* the subscriptions */
    /* Filters per slice of a large SUBSCRIBE (handle.h): BROKER_SUB_SLICE;
     * test harnesses make it small, so that short inputs reach slicing. */
    uint32_t sub_slice;
    struct retain *retained;
    pthread_mutex_t retained_lock; /* the retained store, every loop's */

    /* Stopping the other loops for a change no lock covers (SIGHUP's
     * reload, broker_stop_world): under world_lock. */
    pthread_mutex_t world_lock;
    pthread_cond_t world_cond;
    unsigned world_parked;  /* loops parked in stop number world_gen */
    unsigned world_gen;     /* stops so far */
    bool world_stopped;
    bool draining;          /* some loop began the shutdown: no more stops */

    /* Drops and refused subscriptions are logged at most once a second,
     * whichever loop they happen on (broker_log_due). */
    uint64_t drop_logged_ms, sub_refused_logged_ms;

    /* The other concerns, each its module's. */
    struct persist *persist; /* persist.h; NULL with persistence off */
    struct cluster *cluster; /* cluster/link.h; NULL without --cluster */
    /* cluster/kv_retain.h; NULL without --cluster or without JetStream */
    struct kv_retain *kv_retain;
    /* cluster/kv_sess.h: which node owns each session; NULL as kv_retain */
    struct kv_sess *kv_sess;
    /* cluster/js_msgs.h; NULL without --cluster or without JetStream */
    struct js_msgs *js_msgs;
    struct broker_auth auth; /* auth.h: password file, ACL, their counters */
    struct broker_obs obs;   /* metrics.h: the /metrics endpoint, log state */
};

/* Our MQTT 5 Receive Maximum: QoS 2 messages a client may have waiting for
 * PUBREL; the same bound as our inflight window towards clients (the
 * option stops at 65535). */
static inline uint16_t broker_receive_max(const struct broker *b)
{
    return (uint16_t)b->cfg->max_inflight;
}

/* broker.c: the broker on its loops, as core/srv.c's workers run it and
 * as test harnesses (tests/fuzz) drive it on a loop of their own, handing
 * it connections through conn_accept and calling conn_prepare before each
 * wait. broker_init sets up the broker-wide state (no listener, no
 * persistence, no files) with nloops loops, whose broker_loop_init each
 * loop calls on its own ev loop, the home loop (index 0) first;
 * broker_drain starts one loop's shutdown: no more timers, every client
 * sent DISCONNECT 0x8B, lingering; broker_close_all closes what is left
 * and frees what is closed; broker_fini takes the rest down, after every
 * loop stopped. */
void broker_init(struct broker *b, const struct broker_config *cfg, unsigned nloops);
void broker_loop_init(struct broker_loop *l, struct broker *b, unsigned index, struct ev_loop *ev);
void broker_drain(struct broker_loop *l);
void broker_close_all(struct broker_loop *l);
void broker_fini(struct broker *b);

/* Stops every other loop at a safe point (between two iterations), for a
 * change of state no lock covers (SIGHUP's reload); on the home loop.
 * False, and nothing stopped, once the shutdown began. broker_park is what
 * a loop does on the XLOOP_PARK entry of stop number gen. */
bool broker_stop_world(struct broker *b);
void broker_resume_world(struct broker *b);
void broker_park(struct broker *b, unsigned gen);

/* Whether a line throttled to once a second, last logged at *last_ms,
 * may be logged at loop time now (and then *last_ms = now); any loop may
 * ask (atomic). */
bool broker_log_due(uint64_t *last_ms, uint64_t now);
/* Sessions, every loop's. */
uint32_t broker_nsessions(struct broker *b);
/* Open connections and connected clients, every loop's together. */
uint32_t broker_nconns(const struct broker *b);
uint32_t broker_nclients(const struct broker *b);
/* Every loop's counters added up into st. */
void broker_stats_sum(const struct broker *b, struct broker_stats *st);
/* Connections refused: at CONNECT over max_connections, and by srv for
 * want of file descriptors. */
uint64_t broker_refused_connections(const struct broker *b);

#endif
