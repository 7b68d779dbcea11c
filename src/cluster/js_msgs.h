/* js_msgs.h - QoS 1 and 2 messages across the cluster through one
 * JetStream stream (docs/cluster.md, "QoS 1 and 2: JetStream"), so that a
 * message a node acknowledged to its publisher survives that node.
 *
 * A local client's QoS 1/2 PUBLISH is delivered to the node's own
 * subscribers as any other, and published asynchronously to the stream on
 * PREFIX.j.CLASS.L1... (the topic's subject with a class "j" put after the
 * prefix: no core subscription of any node, PREFIX.t... or PREFIX.d...,
 * matches it). The PUBACK or PUBREC goes to the publisher only once
 * JetStream's PubAck came back: libnats's thread hands the result to the
 * publisher's session's loop (a mutex and an eventfd per loop, one wake-up
 * per batch, as link.h's inbox), which answers there (handle.h,
 * handle_publish_settled). A refusal or no answer within JS_MSGS_WAIT_MS
 * refuses the message: MQTT 5 with 0x80, 3.1.1 and 3.1 by closing the
 * connection.
 *
 * Each node reads the stream through one durable pull consumer named
 * after the node (never one per session), on a thread of its own, and
 * hands what it fetches to the link's inbox (cluster_push_js): the home
 * loop routes it to local subscribers and then acknowledges it. Messages
 * this node published itself (header Mqtt-Node) are acknowledged and
 * dropped at once: they were delivered here already.
 *
 * Everything runs on a connection of its own, CLUSTER_NAME/NODE_NAME/js.
 */
#ifndef SHOOTOUT_CLUSTER_JS_MSGS_H
#define SHOOTOUT_CLUSTER_JS_MSGS_H

#include <stdbool.h>
#include <stdint.h>

struct broker_config;
struct broker_loop;
struct cluster;
struct conn;
struct js_msgs;
struct router_in;

/* How long a publish waits for JetStream's PubAck before the message is
 * refused; how long the stream remembers a Nats-Msg-Id (its duplicate
 * window); how long it keeps a message no node acknowledged. */
#define JS_MSGS_WAIT_MS 2000
#define JS_MSGS_DUPLICATES_MS 120000
#define JS_MSGS_MAX_AGE_S (24 * 3600)

/* Binds (or creates) the stream, MQTT_MSGS or MQTT_MSGS_<prefix> for a
 * prefix other than the default, file storage, cfg->cluster.replicas
 * replicas, interest retention, and starts the consumer's thread (which
 * creates or binds the node's durable consumer, and keeps trying while it
 * cannot). NULL, logged, when the server has no JetStream: QoS 1/2 then
 * cross nodes as QoS 0 does (at most once), as before this module. On the
 * main thread, before any loop runs; nloops: the loops that will attach. */
struct js_msgs *js_msgs_start(struct cluster *c, const struct broker_config *cfg,
                              unsigned nloops);
/* Loop l takes its publishers' results from now on: on l's thread, before
 * it runs. -1 if its eventfd cannot be made. */
int js_msgs_attach(struct js_msgs *js, struct broker_loop *l);
/* After every loop stopped, before the cluster's connection closes: the
 * consumer's thread ends, publishes still waiting are forgotten (their
 * clients are gone), and the consumer stays on the server for the next
 * start. NULL is a no-op. */
void js_msgs_stop(struct js_msgs *js);

/* Publishes c's QoS 1/2 PUBLISH in (already delivered locally) to the
 * stream, on l (c's loop); when JetStream answers, l calls
 * handle_publish_settled with packet_id and, if it was stored, the reason
 * code and string why (a static string, or NULL) decided now. False if it
 * could not even be sent: the caller answers as for a refusal. */
bool js_msgs_publish(struct js_msgs *js, struct broker_loop *l, struct conn *c,
                     const struct router_in *in, uint16_t packet_id, uint8_t reason,
                     const char *why);

#endif
