/* handle.h - the packet handlers, one file per packet family
 * (handle_connect.c, handle_publish.c, handle_subscribe.c), which
 * conn_loop.c dispatches each framed packet to. Each returns 0, or a
 * negative mqtt_err / mqtt5_err after which the caller closes the
 * connection as a protocol violation (for MQTT 5 with DISCONNECT and
 * mqtt5_err_reason), or a positive MQTT 5 reason code to close it with.
 */
#ifndef SHOOTOUT_HANDLE_H
#define SHOOTOUT_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct broker;
struct broker_loop;
struct conn;
struct sub_job;

#define BROKER_SUB_SLICE 1024

int handle_connect(struct broker_loop *l, struct conn *c, const uint8_t *body, uint32_t len);
/* Cluster sessions (cluster/kv_sess.h), on l: c's claim was answered (its
 * CONNECT is read again); another node wrote epoch for the session of
 * client id[0..len), which l's session gives up if it claimed it before
 * (its client is closed as taken over, and the session dropped). */
void connect_claimed(struct broker_loop *l, struct conn *c);
void connect_taken(struct broker_loop *l, const uint8_t *id, size_t len, uint64_t epoch,
                   const char *node);
/* MQTT 5 DISCONNECT from the client (after which the connection is closed). */
int handle_disconnect(struct broker_loop *l, struct conn *c, const uint8_t *body, uint32_t len);
int handle_publish(struct broker_loop *l, struct conn *c, uint8_t flags, const uint8_t *body,
                   uint32_t len);
/* The answer to a QoS 1/2 PUBLISH of session s on its connection c (NULL:
 * that connection is gone), once the cluster's stream stored it or not
 * (cluster/js_msgs.h): stored, PUBACK/PUBREC with reason and why (MQTT 5);
 * not stored, MQTT 5 gets 0x80 and 3.1.1/3.1 the connection closed, and a
 * QoS 2 packet id is released (no PUBREL follows). */
void handle_publish_settled(struct broker_loop *l, struct session *s, struct conn *c, uint8_t qos,
                            uint16_t packet_id, bool stored, uint8_t reason, const char *why);
/* PUBACK, PUBREC, PUBREL and PUBCOMP (type). */
int handle_puback(struct broker_loop *l, struct conn *c, uint8_t type, const uint8_t *body,
                  uint32_t len);
/* A SUBSCRIBE or UNSUBSCRIBE with more than b->sub_slice filters
 * (BROKER_SUB_SLICE) is handled in slices, that many filters a loop
 * iteration (each retained-store node a filter's walk looks at, and each
 * retained message delivered, counts as one more), so that one client's
 * 80,000 filters cost everyone else a few milliseconds at a time: the
 * handler does the first, sets c->job and puts c on the read list; each
 * later iteration calls sub_job_resume, which does the next slice and
 * returns true once the packet is done (c->job NULL again). The connection
 * reads no further packet meanwhile. */
int handle_subscribe(struct broker_loop *l, struct conn *c, const uint8_t *body, uint32_t len);
int handle_unsubscribe(struct broker_loop *l, struct conn *c, const uint8_t *body, uint32_t len);
bool sub_job_resume(struct broker_loop *l, struct conn *c);
/* For a connection that ends with a job under way; NULL is a no-op. */
void sub_job_free(struct sub_job *j);

#endif
