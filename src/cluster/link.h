/* link.h - a broker node's link to the cluster (docs/cluster.md): its NATS
 * connection (libnats), the node's interest as NATS subscriptions
 * (one set per distinct filter, counted over local subscribers:
 * interest.h), every local client PUBLISH sent on to NATS, and what NATS
 * delivers handed to the broker's home loop, which routes it to local
 * subscribers only.
 *
 * Threads: libnats runs its own (reading, flushing, delivering); its
 * message callback touches no broker state. It appends each message to the
 * link's inbox (a mutex and an eventfd, written when the inbox turns
 * non-empty: one wake-up per batch) and the home loop takes the whole
 * inbox at once, as xloop.h's loops do. cluster_publish and the interest
 * calls may come from any loop.
 *
 * Shared subscriptions ($share/<group>/<filter>) go through a second
 * connection, without no_echo, that holds one NATS queue subscription set
 * per local member in the queue group of <group>: NATS picks one member of
 * the whole cluster per message, the publishing node's own members
 * included, and what a member's queue subscription receives is delivered
 * to that member alone.
 */
#ifndef SHOOTOUT_CLUSTER_LINK_H
#define SHOOTOUT_CLUSTER_LINK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/figures.h"
#include "cluster/subject.h"

struct broker;
struct broker_config;
struct broker_loop;
struct cluster;
struct mqtt_props;
struct session;
typedef struct __natsConnection natsConnection;
typedef struct __natsMsg natsMsg;

/* Connects to cfg->cluster.urls (on the main thread, before any loop
 * runs); NULL, with the reason logged, if no NATS server answers. */
struct cluster *cluster_start(const struct broker_config *cfg, int port);
/* On the home loop, once it exists: what NATS delivers is routed there. */
int cluster_attach(struct cluster *c, struct broker_loop *home);
/* After every loop stopped: closes the connections, waits (5 s at most)
 * until libnats calls back no more, and drops what is still in the inbox
 * before libnats itself is closed. */
void cluster_stop(struct cluster *c);

/* One more connection of the node, with the link's options, named
 * CLUSTER_NAME/NODE_NAME/role (kv_retain.h's JetStream traffic keeps to its
 * own, off the interest's subscription list); on the main thread, before
 * any loop runs. asap: each publish is written at once by the caller
 * rather than by libnats's flusher thread, which waits about 1 ms to
 * batch (a PUBACK waiting for JetStream would wait that too). A libnats
 * status (NATS_OK is 0). */
int cluster_connect_more(struct cluster *c, const struct broker_config *cfg, const char *role,
                         bool asap, natsConnection **nc);
/* Blocks srv's signals in the calling thread around a libnats call that
 * may start a thread (a connect, a first subscription), which inherits
 * the mask; restore with pthread_sigmask(SIG_SETMASK, old). */
void cluster_block_signals(sigset_t *old);

/* A local client's PUBLISH, on any loop: one NATS message on the topic's
 * subject, its QoS, retain and the carried properties of props (NULL from
 * MQTT 3.1.1; Message Expiry as what is left of it) in headers (hdr.h);
 * false if none was sent (a failed publish, or a subject too long, which
 * the handlers refuse first: cluster_topic_fits). in_stream: a QoS 1/2
 * message that goes to the JetStream stream too (js_msgs.h): this copy is
 * marked for the shared subscriptions' queue groups alone, which the
 * stream does not serve, and the other nodes' non-shared subscribers
 * drop it (counted as duplicates). */
bool cluster_publish(struct cluster *c, const uint8_t *topic, size_t topic_len,
                     const uint8_t *payload, size_t payload_len, uint8_t qos, bool retain,
                     const struct mqtt_props *props, bool in_stream);
/* The message cluster_publish sends, without its Mqtt-Id: the payload,
 * Mqtt-Qos and the headers of hdr.h, on subj. A libnats status; *out is
 * NULL unless NATS_OK. */
int cluster_msg_make(struct cluster *c, natsMsg **out, const char *subj, const uint8_t *payload,
                     size_t payload_len, uint8_t qos, bool retain,
                     const struct mqtt_props *props);
/* A message of the stream's consumer (js_msgs.c's thread) into the inbox:
 * the home loop routes it as any other (no Mqtt-Id dedupe: the stream has
 * one copy) and acknowledges it to JetStream at cluster_ack_committed.
 * Not acknowledged if the inbox is full or stopping: JetStream sends it
 * again. */
#define CLUSTER_SID_JS (-1)
void cluster_push_js(struct cluster *c, natsMsg *msg);
/* On the home loop, once its iteration's persistence records are
 * committed (conn_loop.c, after persist_commit): acknowledges the stream's
 * messages routed since, which every local session has now, in the log
 * too with persistence on. */
void cluster_ack_committed(struct cluster *c);
/* The node's name, this process's origin id (CLUSTER_ORIGIN_LEN hex
 * digits, drawn at every start: Mqtt-Id's, and the one kv_sess.h names a
 * session's owner by), and its subject map. */
#define CLUSTER_ORIGIN_LEN 16
const char *cluster_node(const struct cluster *c);
const char *cluster_origin(const struct cluster *c);
const subject_map *cluster_subjects(const struct cluster *c);
/* Whether a valid topic name, or a valid filter (a shared one's group and
 * inner filter), maps to NATS subjects within SUBJECT_MAX: a clustered
 * node refuses what does not, rather than keep it local unseen. */
bool cluster_topic_fits(const struct cluster *c, const uint8_t *topic, size_t len);
bool cluster_filter_fits(const struct cluster *c, const uint8_t *filter, size_t len);
/* A local subscriber took (or dropped) a non-shared filter: the first
 * subscribes the node on NATS and returns once its server has the
 * interest (a flush, at most CLUSTER_FLUSH_MS), so that the SUBACK which
 * follows means what it says; the last unsubscribes. */
void cluster_interest_add(struct cluster *c, const uint8_t *filter, size_t len);
void cluster_interest_remove(struct cluster *c, const uint8_t *filter, size_t len);
/* s subscribed to the shared filter $share/<group>/<filter> (<filter> at
 * inner_off) with the options opts (subtree_opts): its first SUBSCRIBE
 * opens s's queue subscriptions and returns once the server has them (as
 * cluster_interest_add does), a repeated one changes the options only.
 * cluster_share_remove closes them (its UNSUBSCRIBE or its session's
 * end), before s's ACL handle goes. */
void cluster_share_add(struct cluster *c, struct session *s, const uint8_t *filter, size_t len,
                       size_t inner_off, uint32_t opts);
void cluster_share_remove(struct cluster *c, struct session *s, const uint8_t *filter, size_t len);
/* Whether the node is cut off from the cluster at now_ms (monotonic, as
 * ev_now): how long its NATS link has been down, once that is over the
 * partition grace (2 s), else 0. Meanwhile it refuses new work rather than
 * diverge from the other nodes (docs/cluster.md, "Failure behaviour"). */
uint64_t cluster_partitioned(const struct cluster *c, uint64_t now_ms);

/* The link's figures now (docs/cluster.md, "Figures"), for $SYS and
 * /metrics: this node's, the sums over the nodes alive (this one
 * included), and the NATS server it is connected to ("" when it is not).
 * On the home loop. */
struct cluster_status {
    struct figures own;
    struct figures_sum all;
    uint64_t malformed; /* figures from other nodes that did not decode */
    uint64_t refused;   /* nodes beyond FIGURES_MAX_NODES */
    char node[128];
    char server_url[256];
    char server_id[64];
};
void cluster_status_get(struct cluster *c, struct cluster_status *st);

#endif
