/* broker_int.h - the broker's state, in two parts: struct broker_loop,
 * what one event loop owns (its connections, the per-iteration read and
 * flush lists that batch their work, its timers, its counters, its routing
 * scratch), and struct broker, what every loop shares (subscriptions,
 * retained messages, sessions, wills, ACL and passwords, limits,
 * persistence, $SYS, metrics), grouped by the module that owns each part
 * (the types are in conn.h, session.h, router.h and the others). The code
 * of a connection takes its loop explicitly; the broker is l->b.
 *
 * Ownership: a loop owns its connections; the broker owns every session.
 */
#ifndef SHOOTOUT_BROKER_INT_H
#define SHOOTOUT_BROKER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/auth.h"
#include "broker/broker.h"
#include "broker/metrics.h"
#include "broker/router.h"
#include "core/ev.h"
#include "core/hmap.h"
#include "core/srv.h"

struct conn;
struct persist;
struct retain;
struct router;
struct session;
struct transport_listeners;

struct broker_stats {
    uint64_t msgs_in, msgs_out;
    uint64_t bytes_in, bytes_out;
    uint64_t dropped_queue_full, dropped_output_full, dropped_offline_qos0;
    uint64_t dropped_expired, dropped_too_large;
    uint64_t refused_connections, protocol_errors;
    uint64_t publisher_waits, slow_consumers;
    uint64_t subscriptions_refused; /* at max_subscriptions */
    /* Drops and refused subscriptions are logged at most once a second. */
    uint64_t last_drop_log_ms, last_sub_refused_log_ms;
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
};

struct broker {
    /* What every module reads. */
    const struct broker_config *cfg;
    struct broker_loop *home; /* loops[0] */
    struct broker_loop *loops;
    unsigned nloops;
    uint64_t started_ms;
    struct ev_timer sys;    /* on the home loop: publishes the $SYS tree (sys_tree.h) */

    /* Connections (conn.h): */
    size_t partial_bytes;   /* input buffers of partial packets, all connections */
    struct transport_listeners *transports; /* transport.h */

    /* Sessions (session.h, session_life.h): */
    struct hmap sessions;   /* client id -> struct session */
    struct session *timers; /* offline sessions that expire or owe a will */
    uint32_t next_auto_id;  /* for client ids the broker assigns */
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

    /* The other concerns, each its module's. */
    struct persist *persist; /* persist.h; NULL with persistence off */
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

/* Open connections and connected clients, every loop's together. */
uint32_t broker_nconns(const struct broker *b);
uint32_t broker_nclients(const struct broker *b);
/* Every loop's counters added up into st. */
void broker_stats_sum(const struct broker *b, struct broker_stats *st);
/* Connections refused: at CONNECT over max_connections, and by srv for
 * want of file descriptors. */
uint64_t broker_refused_connections(const struct broker *b);

#endif
