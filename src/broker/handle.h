/* handle.h - the packet handlers, one file per packet family
 * (handle_connect.c, handle_publish.c, handle_subscribe.c), which
 * conn_loop.c dispatches each framed packet to. Each returns 0, or a
 * negative mqtt_err / mqtt5_err after which the caller closes the
 * connection as a protocol violation (for MQTT 5 with DISCONNECT and
 * mqtt5_err_reason), or a positive MQTT 5 reason code to close it with.
 */
#ifndef SHOOTOUT_HANDLE_H
#define SHOOTOUT_HANDLE_H

#include <stdint.h>

struct broker;
struct conn;

int handle_connect(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);
/* MQTT 5 DISCONNECT from the client (after which the connection is closed). */
int handle_disconnect(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);
int handle_publish(struct broker *b, struct conn *c, uint8_t flags, const uint8_t *body,
                   uint32_t len);
/* PUBACK, PUBREC, PUBREL and PUBCOMP (type). */
int handle_puback(struct broker *b, struct conn *c, uint8_t type, const uint8_t *body,
                  uint32_t len);
int handle_subscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);
int handle_unsubscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len);

#endif
