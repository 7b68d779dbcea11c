/* router.h - who gets a message: the subscription tree and the shared
 * subscriptions' groups (share.h), matching a message's topic against
 * both, merging a session's overlapping subscriptions into one copy, and
 * handing each copy to its session (session_deliver). The routing scratch
 * is the router's own; the rest of the broker sees only this interface.
 *
 * A subscription's options word in the tree (subtree_opts): MQTT 5's
 * Subscription Options byte less Retain Handling (QoS, No Local, Retain As
 * Published: the MQTT5_SUB_* bits) in the low four bits, the Subscription
 * Identifier (28 bits at most) above them. MQTT 3.1.1 uses the QoS alone.
 */
#ifndef SHOOTOUT_ROUTER_H
#define SHOOTOUT_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/subtree.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"

struct broker;
struct broker_loop;
struct conn;
struct msg;
struct router;
struct session;

#define SUB_OPT_ID_SHIFT 4
static inline subtree_opts sub_opts(uint8_t options, uint32_t sub_id)
{
    return (subtree_opts)(options & 0x0F) | (subtree_opts)sub_id << SUB_OPT_ID_SHIFT;
}
static inline uint8_t sub_opts_qos(subtree_opts o) { return o & MQTT5_SUB_QOS; }
static inline uint32_t sub_opts_id(subtree_opts o) { return o >> SUB_OPT_ID_SHIFT; }

/* A router for nloops loops (more than one: it locks). */
struct router *router_new(unsigned nloops);
/* Every subscription must be gone (their sessions destroyed). */
void router_free(struct router *r);
/* The lock of the tree and the groups (none with one loop): what other
 * loops read while they match, a session's ACL handle included
 * (share.c), is changed under the write lock. */
void router_read_lock(struct broker *b);
void router_write_lock(struct broker *b);
void router_unlock(struct broker *b);
/* A loop's scratch of the message it routes (router.c's): route_collect
 * fills it, route_deliver reads it. Zeroed is empty. */
struct route_match;
struct route_id;
struct route_scratch {
    uint32_t match_gen;
    struct route_match *matches;
    uint32_t nmatches, matches_cap;
    struct route_id *ids; /* identifiers beyond each match's first */
    uint32_t nids, ids_cap;
    uint32_t *copy_ids;   /* one copy's identifiers, as delivery.sub_ids */
    uint32_t copy_ids_cap;
};
void route_scratch_free(struct route_scratch *r);

/* s subscribes: the session remembers the subscription and it enters the
 * tree, or its shared group (filter must not be a malformed shared one);
 * returns true if it is new. */
bool router_subscribe(struct broker *b, struct session *s, const uint8_t *filter, size_t len,
                      subtree_opts opts);
/* Takes one of s's subscriptions out of the tree or its group (the
 * session's own list is the caller's). */
void router_unsubscribe(struct broker *b, struct session *s, const uint8_t *filter, size_t len);

/* A client's PUBLISH as the router takes it, before any message is
 * built. */
struct router_in {
    struct mqtt_bytes topic, payload;
    uint8_t qos;
    bool retain;
    const struct mqtt_props *props; /* NULL from MQTT 3.1.1 */
};

/* Whether a retained message of topic[0..len) and payload_len bytes may be
 * stored within max_retained_messages and max_retained_bytes: clearing
 * always may, a replacement counts only what it adds. If not, the hit is
 * counted and logged (metrics_bound_hit), by client who. */
bool router_retain_fits(struct broker *b, const uint8_t *topic, size_t len, size_t payload_len,
                        const char *who);

/* Routes a client's PUBLISH (the ACL has let it in, auth_may_publish): a
 * retained one (router_retain_fits said it may be) is stored and sent on;
 * a plain one is made a message (msg_new, its expiry counted from now_ms)
 * only if some session is to get it. Each session gets one copy however many of its subscriptions match,
 * and each matching shared group one copy for one member; origin is the
 * publisher's session, whose No Local subscriptions take no part, and
 * publisher its connection, which back-pressure may pause (see
 * session_deliver). In a cluster it also goes to the other nodes
 * (cluster_publish; a QoS 1/2 one, with the cluster's stream, is sent
 * there by handle_publish.c, js_msgs.h, and this copy is for the shared
 * groups' queue subscriptions only), and a retained one is stored in the cluster's
 * bucket instead of here when its topic has a subject (kv_retain.h):
 * *retain_failed says it was not stored (it is still delivered). Returns
 * how many sessions it went to, before the ACL was asked per subscriber;
 * at least 1 when it went to other nodes, whose subscribers this one does
 * not know. */
uint32_t router_route(struct broker_loop *l, const struct router_in *in, uint64_t now_ms,
                      const struct session *origin, struct conn *publisher, bool *retain_failed);
/* How long this node has been cut off from its cluster (cluster/link.h,
 * cluster_partitioned), at l's time; 0 when it is not, or has no cluster.
 * Meanwhile it takes no new client, subscription or QoS 1/2 message. */
uint64_t router_partitioned(const struct broker_loop *l);

/* A message the broker publishes itself (a will, $SYS): stored if
 * retained and it fits the bounds (else sent as if not retained), then
 * sent to every matching subscription, the other nodes' too if
 * cluster_wide (a will; $SYS is each node's own). Takes no ownership of m. */
void router_publish(struct broker_loop *l, struct msg *m, bool cluster_wide);

/* A message another node of the cluster published (cluster/link.c), on
 * the home loop: to the local non-shared subscriptions, never back to
 * the cluster. Takes no ownership of m. */
void router_route_cluster(struct broker_loop *l, struct msg *m);

/* The cluster inbox's mark (docs/broker.md, "Back-pressure across
 * loops"): the home loop routes the cluster's messages without waiting for
 * any subscriber, so while more than this many of its entries for other
 * loops are not taken yet it takes no more of the inbox, which fills and
 * drops (counted) meanwhile, as QoS 0 allows. */
#define ROUTER_CLUSTER_MARK 16384
/* cluster/link.c, before it takes its inbox (watched by inbox, on the home
 * loop l): true if l is over the mark, inbox then stopped until
 * router_cluster_resume starts it again. */
struct ev_io;
bool router_cluster_hold(struct broker_loop *l, struct ev_io *inbox);
/* conn_prepare, while l->cluster_held: starts the inbox's watcher again
 * once l's entries not taken are down to half the mark (xloop_over wakes
 * l when takers take them). */
void router_cluster_resume(struct broker_loop *l);

/* m came through s's own NATS queue subscription (cluster/link.c, on the
 * home loop): to s alone, as opts (its shared subscription's) grant, and
 * not to the rest of its group. Takes over a reference to s the caller
 * took, and none of m. */
void router_deliver_member(struct broker_loop *l, struct session *s, struct msg *m,
                           subtree_opts opts);

/* s's connection ended: the QoS 1/2 messages it had not acknowledged that
 * came through shared subscriptions go to other connected members of those
 * groups (MQTT 5, 4.8.2). A QoS 2 message past PUBREC was received and
 * stays. */
void router_hand_off(struct broker_loop *l, struct session *s);

/* Subscriptions in the tree; shared ones (a member each) apart. */
size_t router_subscriptions(struct broker *b);
size_t router_shared_subscriptions(struct broker *b);

/* On the loop that owns e's session: another loop's XLOOP_DELIVER entry
 * (xloop.h), delivered unless the session ended or the ACL says no, and
 * its references dropped. */
struct xloop_entry;
void router_take(struct broker_loop *l, struct xloop_entry *e);

#endif
