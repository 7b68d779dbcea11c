/* session.h - an MQTT session: what it holds and sends while it lives.
 * Its subscriptions (remembered so that they can be taken out of the tree
 * when it ends), the outgoing QoS 1/2 inflight window and queue, the
 * received QoS 2 packet ids waiting for PUBREL, and the back-pressure it
 * puts on publishers. How a session begins and ends is session_life.h's.
 *
 * A session lives while its client is connected and then for its Session
 * Expiry Interval (MQTT 5; 0 unless the client asked for more), or, for an
 * MQTT 3.1 or 3.1.1 persistent session, until a clean CONNECT with its
 * client id discards it. A connection points to its session and the
 * session back to its connection while both are live.
 */
#ifndef SHOOTOUT_SESSION_H
#define SHOOTOUT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/subtree.h"
#include "core/hmap.h"

struct acl_client;
struct broker;
struct broker_loop;
struct conn;
struct msg;

/* A Session Expiry Interval that never ends (MQTT 5's 0xFFFFFFFF, and
 * every MQTT 3.1.1 clean-session 0 session). */
#define SESSION_NEVER UINT32_MAX

/* What auth.c keeps in a session (auth.h). The handle lives with the
 * session, not the connection, so that messages queued for an offline
 * session are checked with the rules of the client that owns it. */
struct session_auth {
    struct acl_client *acl; /* NULL without acl_file: nothing is checked */
    char *username;         /* owned; kept to rebind on reload; NULL = none */
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

/* What few sessions need, apart so that an idle one does not carry it:
 * the offline timers, a delayed will, back-pressure and received QoS 2
 * ids. Touched only by the session's own loop; allocated on the first
 * need (session_cold), freed with the session; a zeroed one holds the
 * defaults, which session_cold_peek reads without allocating. */
struct session_cold {
    /* Offline with an end in sight (b->timers): the session expires at
     * expires_ms unless SESSION_NEVER, and a delayed will is published at
     * will_ms (MQTT 5). */
    uint64_t expires_ms;
    struct msg *will;  /* owned */
    uint64_t will_ms;
    struct session *timer_prev, *timer_next;
    struct conn *waiters;  /* publishers paused until this session drains */
    uint64_t congested_ms; /* since when it holds up publishers; 0 = it does not */
    /* Its client last acknowledged or took output: kept only once the
     * cold part exists, as a publisher's wait (which needs it) begins
     * after that (the stall is measured from the later of the two). */
    uint64_t progress_ms;
    uint16_t *qos2_in;     /* received QoS 2 ids waiting for PUBREL */
    uint32_t nqos2_in, qos2_in_cap;
    bool on_timers;
    bool slow_consumer;    /* made publishers wait too long: they no longer do */
    /* In a cluster: the epoch this node claimed the session with
     * (cluster/kv_sess.h); 0 for one restored from the log, not claimed. */
    uint64_t cluster_epoch;
};

/* Laid out without holes, the plain flags in bits: what every session,
 * idle ones included, costs, with its match stamps and its client id in
 * the same allocation (session_life.c). */
struct session {
    char *client_id; /* NUL-terminated, after match[]; the sessions map key */
    struct conn *conn; /* NULL while offline */
    struct session_cold *cold; /* NULL until needed */
    struct session_sub *subs;
    struct hmap sub_index; /* filter -> 1 + its index in subs, so that a
                            * SUBSCRIBE costs O(its filters), not O(ours) */
    struct inflight *inflight; /* oldest first */
    struct queued *queue;      /* ring */
    /* Threads (broker_int.h): the loop that owns the session, for its whole
     * life; references other loops' deliveries hold, in their way to it
     * (xloop.h; atomic); whether it has a connection, for other loops'
     * shared groups (relaxed atomic); and whether it ended with some still
     * held, the last one freeing it. */
    struct broker_loop *loop;
    struct session_auth auth; /* auth.c: its ACL handle */
    uint32_t expiry_s; /* Session Expiry Interval: 0 ends it with its connection */
    uint32_t nsubs, subs_cap;
    uint32_t ninflight, inflight_cap;
    uint32_t qhead, qlen, qcap;
    uint16_t client_id_len;
    uint16_t next_packet_id;
    /* auth.c's, with auth (outside it, which would pad it by 5 bytes):
     * the username's length, and whether some subscription needs
     * acl_client_check(ACL_READ) per delivery (ACL_SUB_FILTERED, or no
     * longer granted after a reload). */
    uint16_t auth_username_len;
    bool auth_filtered;
    /* Only its own loop reads or writes these. */
    bool gone : 1;
    bool v5 : 1;        /* its latest connection spoke MQTT 5 */
    bool v31 : 1;       /* its latest connection spoke MQTT 3.1 */
    uint32_t refs;      /* 1, the owner's, until it ends; then the others' */
    /* Back-pressure across loops (atomic): deliveries other loops handed
     * it, not yet taken; whether it holds other loops' publishers (enum
     * session_hold); and whether a publisher of another loop waits for it. */
    uint32_t xpending;
    bool online;
    uint8_t held;
    bool remote_waiting;
    /* persist.c: its SESSION record is live in the log (atomic: other
     * loops read it when they route to it, persist_remote). */
    bool persisted;
    /* router.c's, one per loop: the last match on that loop that met the
     * session, and its entry in that match, so that overlapping
     * subscriptions merge into one copy. */
    struct session_stamp {
        uint32_t gen, idx;
    } match[];
};

/* session.held: what s's loop tells publishers of other loops. SLOW lets
 * them go as FREE does, and tells one whose wait it ends that its grace
 * is spent (session_grace_spent); it lasts while s is flagged. */
enum session_hold { SESSION_FREE, SESSION_HELD, SESSION_SLOW };

/* s's cold part, allocated (zeroed) if it has none yet: for writing. */
struct session_cold *session_cold(struct session *s);
/* s's cold part to read: the defaults (all zero) while it has none. */
extern const struct session_cold session_cold_none;
static inline const struct session_cold *session_cold_peek(const struct session *s)
{
    return s->cold ? s->cold : &session_cold_none;
}
/* Its client acknowledged or took output at now (see progress_ms). */
static inline void session_progress(struct session *s, uint64_t now)
{
    if (s->cold)
        s->cold->progress_ms = now;
}

/* Whether s has a connection, as other loops see it. */
static inline bool session_online(const struct session *s)
{
    return __atomic_load_n(&s->online, __ATOMIC_RELAXED);
}

/* Frees what the session holds (subscriptions, messages) and the session;
 * what others keep of it is session_destroy's (session_life.h). */
void session_free(struct session *s);
/* Drops the messages s holds (queued, in flight): before its last
 * reference goes, which another loop may hold (session_put). */
void session_drop_messages(struct session *s);

/* Delivers m to the session: now, into the inflight window or the queue,
 * or drops it (counted) when that is full or the message expired.
 * publisher is the connection whose PUBLISH m is, or NULL (see
 * back-pressure below). */
void session_deliver(struct broker_loop *l, struct session *s, struct msg *m,
                     const struct delivery *d, struct conn *publisher);
/* For router_hand_off: offers fn each message s holds (in flight before its
 * PUBREC, or queued) that came through a shared subscription, as a copy
 * without its log entry; a message fn took (returning true) is dropped from
 * s. */
typedef bool (*session_hand_off_fn)(void *ctx, struct session *s, struct msg *m,
                                    const struct delivery *d);
void session_hand_off(struct broker_loop *l, struct session *s, session_hand_off_fn fn, void *ctx);
/* After CONNACK on a resumed session: resend the inflight window with DUP
 * and fill it from the queue. */
void session_resume(struct broker_loop *l, struct session *s);
/* persist_load.c, at start: puts back a copy of m that was queued or in
 * flight in state (enum plog_state) with packet_id. */
void session_restore(struct broker_loop *l, struct session *s, struct msg *m,
                     const struct delivery *d, uint8_t state, uint16_t packet_id);
/* Acknowledgement flows for messages the broker sent; reason is the MQTT 5
 * reason code (0 from MQTT 3.1.1). */
void session_acked(struct broker_loop *l, struct session *s, uint8_t type, uint16_t packet_id,
                   uint8_t reason);

/* Received QoS 2 ids: returns 1 if id was already waiting for PUBREL, 0
 * after recording it, -1 if limit ids are waiting already. */
int session_qos2_seen(struct session *s, uint16_t packet_id, uint32_t limit);
/* Returns false if the id was not waiting for PUBREL. */
bool session_qos2_release(struct session *s, uint16_t packet_id);

/* Remember / forget a subscription for cleanup; returns true if new. Each
 * costs one hash lookup, whatever the number of subscriptions. */
bool session_add_sub(struct session *s, const uint8_t *filter, size_t len, subtree_opts opts);
bool session_remove_sub(struct session *s, const uint8_t *filter, size_t len);
/* Whether the session has a subscription with exactly this filter. */
bool session_has_sub(const struct session *s, const uint8_t *filter, size_t len);

/* Back-pressure. session_deliver() pauses the publishing connection (its
 * publisher argument) while the online session s it delivered to is above
 * the watermarks, so that a fast publisher waits for a slower subscriber
 * instead of filling its queue until messages drop. A connection never
 * waits for itself or for a connection that is itself waiting, so waits
 * form chains, never cycles.
 *
 * A subscriber above the marks when a publisher delivers to it is
 * congested from then until it is back under the low marks, whether that
 * publisher waits for it or, already waiting for another, would have.
 * Every subscriber congested for BROKER_WAIT_LIMIT_MS is flagged a slow
 * consumer at the next sweep, all of them at once: publishers stop waiting
 * for it, and messages to it are dropped at the hard limits instead. So N
 * subscribers that fall behind together cost a publisher one grace period,
 * not N. A publisher whose wait ended that way has spent its grace: for
 * BROKER_GRACE_RENEW_MS it waits for another subscriber only while that
 * one makes progress (acknowledges, or takes output): one that makes none
 * for BROKER_STALL_MS of the wait is flagged too (conn_check_stalls). So
 * subscribers that fall behind one after another, on topics the publisher
 * reaches in turn, cost it little more than one grace period, while a
 * healthy one, which answers within a round trip, is waited for as before:
 * when a subscriber first falls behind, nothing else tells the two apart. */
#define BROKER_WAIT_LIMIT_MS 1000
#define BROKER_GRACE_RENEW_MS (10 * BROKER_WAIT_LIMIT_MS)
#define BROKER_STALL_MS 100
/* Resumes s's waiting publishers (and forgives a slow consumer) if s
 * drained below the low watermarks; or resumes them unconditionally (the
 * session went offline, ended, or is too slow). */
void session_release_publishers(struct broker_loop *l, struct session *s, bool unconditionally);
/* Whether s keeps publishers waiting, is congested or flagged, and so
 * wants session_release_publishers when it drains. */
static inline bool session_holds_up(const struct session *s)
{
    const struct session_cold *k = s->cold;
    return (k && (k->waiters || k->congested_ms || k->slow_consumer)) ||
           __atomic_load_n(&s->held, __ATOMIC_RELAXED);
}
/* Flags s a slow consumer (logged) and resumes its publishers, on every
 * loop, whose grace is then spent. On s's loop. */
void session_flag_slow(struct broker_loop *l, struct session *s);
/* l->stall's check of one publisher p, whose grace is spent, waiting for s
 * (on any loop): flags s if it made no progress for BROKER_STALL_MS of the
 * wait; for a session of another loop, that loop is asked to
 * (XLOOP_STALL, session_stall_take). Returns when to look again, 0 if
 * never. */
uint64_t session_check_stall(struct broker_loop *l, struct conn *p, struct session *s);
/* On s's loop: another loop's XLOOP_STALL entry for s, whose reference it
 * drops; s is flagged if it still holds publishers and made no progress
 * for BROKER_STALL_MS. */
void session_stall_take(struct broker_loop *l, struct session *s);
/* Whether publisher p spent its grace within BROKER_GRACE_RENEW_MS. */
bool session_grace_spent(const struct conn *p, uint64_t now);
/* Takes a closing connection off the wait list it is on. */
void session_forget_publisher(struct conn *c);

/* Back-pressure across loops (docs/broker.md, "Threads"). A publisher of
 * loop A that delivered to a session s of loop B waits
 * (session_wait_remote, on A) while s is held (B found it above its high
 * marks after such a delivery: session_push_back_remote) or has
 * queue_high deliveries on their way to it; B wakes the loops whose
 * publishers wait (XLOOP_RECHECK) when s is no longer held or takes them,
 * and A resumes every publisher whose session let go
 * (session_recheck_remote; also at each sweep). Slow consumers are
 * flagged as on one loop, and then hold nobody; a remote publisher's grace
 * is spent and used as a local one's (session.held SLOW, XLOOP_STALL). */
void session_wait_remote(struct broker_loop *l, struct session *s, struct conn *p);
void session_push_back_remote(struct broker_loop *l, struct session *s);
void session_wake_remote(struct broker_loop *l, struct session *s);
void session_recheck_remote(struct broker_loop *l);

#endif
