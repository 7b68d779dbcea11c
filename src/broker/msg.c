/* msg.c - reference-counted, pre-encoded application messages. */
#include "broker/msg.h"

#include <string.h>

#include "core/mem.h"
#include "mqtt/mqtt_codec.h"

/* Below this a copy into the connection's buffer is cheaper than holding a
 * reference (an iovec entry, a refcount and a later release). */
#define MSG_SHARE_MIN 512

static void msg_release(struct outq_rc *rc) { mem_free((struct msg *)rc); }

struct msg *msg_new(const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                    size_t payload_len, uint8_t qos, bool retain)
{
    uint32_t rl = (uint32_t)(2 + topic_len + payload_len);
    size_t hdr = 1 + mqtt_varint_size(rl);
    struct msg *m = mem_alloc(sizeof *m + hdr + rl);
    m->rc.refs = 1;
    m->rc.release = msg_release;
    m->enc_len = (uint32_t)(hdr + rl);
    m->payload_len = (uint32_t)payload_len;
    m->topic_len = (uint16_t)topic_len;
    m->hdr_len = (uint8_t)hdr;
    m->qos = qos;
    m->retain = retain;
    uint8_t *p = m->enc;
    *p++ = MQTT_PUBLISH << 4;
    p += mqtt_encode_varint(p, rl);
    *p++ = (uint8_t)(topic_len >> 8);
    *p++ = (uint8_t)topic_len;
    memcpy(p, topic, topic_len);
    if (payload_len)
        memcpy(p + topic_len, payload, payload_len);
    return m;
}

void msg_write_publish(struct msg *m, struct outq *q, uint8_t qos, uint16_t packet_id, bool dup,
                       bool retain)
{
    /* DUP means nothing at QoS 0, and the spec forbids it there. */
    uint8_t first = (uint8_t)(MQTT_PUBLISH << 4 | (dup && qos ? 0x08 : 0) | qos << 1 | (retain ? 1 : 0));
    bool share = m->payload_len >= MSG_SHARE_MIN;
    if (qos == 0) {
        /* The stored encoding is this packet but for the first byte. */
        if (!share) {
            uint8_t *p = outq_reserve(q, m->enc_len);
            memcpy(p, m->enc, m->enc_len);
            p[0] = first;
        } else {
            *outq_reserve(q, 1) = first;
            outq_share(q, &m->rc, m->enc + 1, m->enc_len - 1);
        }
        return;
    }
    /* QoS 1 and 2 carry a packet id between topic and payload. */
    uint32_t rl = 2u + m->topic_len + 2u + m->payload_len;
    size_t head = 1 + mqtt_varint_size(rl) + 2 + m->topic_len + 2;
    size_t copy = share ? head : head + m->payload_len;
    uint8_t *p = outq_reserve(q, copy);
    *p++ = first;
    p += mqtt_encode_varint(p, rl);
    memcpy(p, m->enc + m->hdr_len, 2u + m->topic_len);
    p += 2u + m->topic_len;
    *p++ = (uint8_t)(packet_id >> 8);
    *p++ = (uint8_t)packet_id;
    if (share)
        outq_share(q, &m->rc, msg_payload(m), m->payload_len);
    else
        memcpy(p, msg_payload(m), m->payload_len);
}
