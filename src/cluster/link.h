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

struct broker;
struct broker_config;
struct broker_loop;
struct cluster;
struct session;
typedef struct __natsConnection natsConnection;

/* Connects to cfg->cluster.urls (on the main thread, before any loop
 * runs); NULL, with the reason logged, if no NATS server answers. */
struct cluster *cluster_start(const struct broker_config *cfg, int port);
/* On the home loop, once it exists: what NATS delivers is routed there. */
int cluster_attach(struct cluster *c, struct broker_loop *home);
/* After every loop stopped: closes the connection and drops what is
 * still in the inbox. */
void cluster_stop(struct cluster *c);

/* One more connection of the node, with the link's options, named
 * CLUSTER_NAME/NODE_NAME/role (kv_retain.h's JetStream traffic keeps to its
 * own, off the interest's subscription list); on the main thread, before
 * any loop runs. A libnats status (NATS_OK is 0). */
int cluster_connect_more(struct cluster *c, const struct broker_config *cfg, const char *role,
                         natsConnection **nc);
/* Blocks srv's signals in the calling thread around a libnats call that
 * may start a thread (a connect, a first subscription), which inherits
 * the mask; restore with pthread_sigmask(SIG_SETMASK, old). */
void cluster_block_signals(sigset_t *old);

/* A local client's PUBLISH, on any loop: one NATS message on the topic's
 * subject; false if none (a topic whose subject is too long stays local). */
bool cluster_publish(struct cluster *c, const uint8_t *topic, size_t topic_len,
                     const uint8_t *payload, size_t payload_len, uint8_t qos);
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

#endif
