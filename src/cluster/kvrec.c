/* kvrec.c - retained-message records for the KV bucket (kvrec.h). */
#include "cluster/kvrec.h"

#include <stdbool.h>
#include <string.h>

#include "mqtt/mqtt_codec.h"

/* What a record may carry: the properties a retained copy forwards
 * unaltered (msg.c's list); the expiry is the deadline field. */
#define KVREC_PROPS                                                                                \
    (MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) | MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) |             \
     MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC) | MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA) |         \
     MQTT_PROP_BIT(MQTT_PROP_USER))

size_t kvrec_size(const struct kvrec *r)
{
    return KVREC_HEAD + mqtt_varint_size(r->props_len) + r->props_len + r->payload_len;
}

size_t kvrec_encode(uint8_t *out, const struct kvrec *r)
{
    uint8_t *p = out;
    *p++ = KVREC_VERSION;
    *p++ = r->qos;
    for (int i = 7; i >= 0; i--)
        *p++ = (uint8_t)(r->deadline_ms >> (8 * i));
    p += mqtt_encode_varint(p, r->props_len);
    if (r->props_len)
        memcpy(p, r->props, r->props_len);
    p += r->props_len;
    if (r->payload_len)
        memcpy(p, r->payload, r->payload_len);
    return (size_t)(p - out) + r->payload_len;
}

int kvrec_decode(const uint8_t *buf, size_t len, struct kvrec *r, struct mqtt_props *props)
{
    if (len < KVREC_HEAD + 1 || buf[0] != KVREC_VERSION || buf[1] > 2)
        return -1;
    r->qos = buf[1];
    r->deadline_ms = 0;
    for (int i = 2; i < KVREC_HEAD; i++)
        r->deadline_ms = r->deadline_ms << 8 | buf[i];
    const uint8_t *block = buf + KVREC_HEAD;
    size_t rest = len - KVREC_HEAD, used = 0;
    uint32_t n;
    bool non_minimal;
    /* The decoder takes any PUBLISH property; a record holds fewer. */
    int h = mqtt_decode_varint(block, rest, &n, &non_minimal);
    if (h <= 0 || non_minimal ||
        mqtt_props_decode(block, rest, MQTT_PUBLISH, props, &used) != MQTT_PROPS_OK ||
        (props->present & ~(uint64_t)KVREC_PROPS))
        return -1;
    r->props = block + h;
    r->props_len = n;
    r->payload = block + used;
    r->payload_len = rest - used;
    return 0;
}
