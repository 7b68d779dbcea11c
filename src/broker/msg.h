/* msg.h - an application message as the broker holds it: encoded once as a
 * QoS 0 PUBLISH packet in a single reference-counted allocation, shared by
 * every subscriber queue, inflight window and the retained store that holds
 * it, and written to sockets straight from that encoding.
 */
#ifndef SHOOTOUT_MSG_H
#define SHOOTOUT_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/outq.h"

struct msg {
    struct outq_rc rc;    /* first: outq shares msg->enc through it */
    uint32_t enc_len;     /* bytes of enc[] */
    uint32_t payload_len;
    uint16_t topic_len;
    uint8_t hdr_len;      /* fixed header bytes at the start of enc[] */
    uint8_t qos;          /* QoS it was published with */
    bool retain;          /* RETAIN flag it was published with */
    uint8_t enc[];        /* 0x30, Remaining Length, topic length, topic, payload */
};

/* New message with one reference. topic_len <= 65535 (the codec ensures). */
struct msg *msg_new(const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                    size_t payload_len, uint8_t qos, bool retain);

static inline struct msg *msg_ref(struct msg *m)
{
    outq_rc_get(&m->rc);
    return m;
}
static inline void msg_unref(struct msg *m) { outq_rc_put(&m->rc); }

static inline const uint8_t *msg_topic(const struct msg *m) { return m->enc + m->hdr_len + 2; }
static inline const uint8_t *msg_payload(const struct msg *m)
{
    return msg_topic(m) + m->topic_len;
}

/* Appends a PUBLISH of m to q at the given QoS, packet id (ignored for QoS
 * 0), DUP and RETAIN flags. Small messages are copied; large payloads are
 * shared, not copied. */
void msg_write_publish(struct msg *m, struct outq *q, uint8_t qos, uint16_t packet_id, bool dup,
                       bool retain);

#endif
