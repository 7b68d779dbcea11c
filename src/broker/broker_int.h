/* broker_int.h - struct broker: the state the broker's modules share,
 * grouped by the module that owns each part (the types are in conn.h,
 * session.h, router.h and the others; the router's are its own), and the
 * counters every module adds to.
 *
 * Ownership: the broker owns every connection and session.
 */
#ifndef SHOOTOUT_BROKER_INT_H
#define SHOOTOUT_BROKER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/auth.h"
#include "broker/broker.h"
#include "broker/metrics.h"
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

struct broker {
    /* What every module reads. */
    const struct broker_config *cfg;
    struct ev_loop *loop;
    uint64_t started_ms;
    struct broker_stats stats;
    struct ev_timer sweep;  /* timeouts, session expiry, persistence upkeep */
    struct ev_timer sys;    /* publishes the $SYS tree (sys_tree.h) */
    struct ev_timer stall;  /* conn_check_stalls, while a publisher that
                             * spent its grace waits (session.h) */
    struct srv_worker *srv; /* core/srv.c's worker the broker runs on; NULL in test harnesses */

    /* Connections (conn.h): */
    struct conn *conns;     /* every connection not yet ended */
    uint32_t nconns;        /* open connections */
    uint32_t nclients;      /* connections past CONNECT, with a session */
    struct conn *dirty;     /* connections with output to flush */
    struct conn *read_list; /* connections with unread input */
    struct conn *closed;    /* lingering, or closed and to be freed */
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
    struct router *router;  /* the subscriptions, and the routing scratch */
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

/* broker.c: the broker on a loop, as core/srv.c's worker runs it and as
 * test harnesses (tests/fuzz) drive it on a loop of their own, handing it
 * connections through conn_accept and calling conn_prepare before each
 * wait. broker_init sets it up (no listener, no persistence, no files);
 * broker_drain starts the shutdown: no more timers, every client sent
 * DISCONNECT 0x8B, lingering; broker_close_all closes what is left and
 * frees what is closed; broker_fini takes the rest down, after the loop. */
void broker_init(struct broker *b, const struct broker_config *cfg, struct ev_loop *loop);
void broker_drain(struct broker *b);
void broker_close_all(struct broker *b);
void broker_fini(struct broker *b);

/* Connections refused: at CONNECT over max_connections, and by srv for
 * want of file descriptors. */
static inline uint64_t broker_refused_connections(const struct broker *b)
{
    return b->stats.refused_connections + (b->srv ? b->srv->refused_connections : 0);
}

#endif
