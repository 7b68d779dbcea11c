/* mqtt_wire.h - internal helpers shared by the MQTT 3.1/3.1.1 and MQTT 5.0
 * packet codecs (mqtt_codec.c, mqtt5.c): fixed-header framing, a bounds-
 * checked read cursor, string and topic checks, and big-endian writers.
 *
 * Not a public interface: everything is static inline so each codec gets
 * its own copy and the shared rules live in one place.
 */
#ifndef SHOOTOUT_MQTT_WIRE_H
#define SHOOTOUT_MQTT_WIRE_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_topic.h"

/* The packet type MQTT 5 gives to AUTH; reserved in MQTT 3.1.1. */
#define WIRE_TYPE_AUTH 15

/* ---- Framing ------------------------------------------------------------ */

/* Fixed-header checks on the first byte alone, so garbage is refused before
 * any length arrives (2.2.2). level is the protocol's (3, 4 or 5). MQTT 5
 * admits AUTH, whose flags are 0. MQTT 3.1 has DUP, QoS and RETAIN bits in
 * every fixed header but gives them a meaning only in PUBLISH and no rule
 * for the others (a retried SUBSCRIBE or PUBREL carries DUP): there only
 * PUBLISH's are checked, as Mosquitto does. */
static inline int wire_check_first_byte(uint8_t b, uint8_t level)
{
    uint8_t type = b >> 4, flags = b & 0x0F;
    switch (type) {
    case 0:
        return MQTT_E_TYPE;
    case WIRE_TYPE_AUTH:
        if (level != 5)
            return MQTT_E_TYPE;
        return flags == 0 ? MQTT_OK : MQTT_E_FLAGS;
    case MQTT_PUBLISH:
        return (flags & 0x06) == 0x06 ? MQTT_E_QOS : MQTT_OK;
    case MQTT_PUBREL:
    case MQTT_SUBSCRIBE:
    case MQTT_UNSUBSCRIBE:
        return flags == 0x02 || level == 3 ? MQTT_OK : MQTT_E_FLAGS;
    default:
        return flags == 0 || level == 3 ? MQTT_OK : MQTT_E_FLAGS;
    }
}

/* mqtt_frame() for the protocol at level. MQTT 5 also refuses a Remaining
 * Length that is not minimally encoded [MQTT-1.5.5-1]; MQTT 3.1 and 3.1.1
 * do not say, so their codec keeps accepting it. */
static inline int wire_frame(const uint8_t *buf, size_t len, uint32_t max_packet, uint8_t level,
                             struct mqtt_header *h)
{
    if (len == 0)
        return 0;
    int rc = wire_check_first_byte(buf[0], level);
    if (rc != MQTT_OK)
        return rc;

    uint32_t body;
    bool non_minimal;
    int n = mqtt_decode_varint(buf + 1, len - 1, &body, &non_minimal);
    if (n <= 0)
        return n;
    if (level == 5 && non_minimal)
        return MQTT_E_MALFORMED;
    size_t i = 1 + (size_t)n;

    uint32_t whole = (uint32_t)i + body; /* at most 5 + MQTT_MAX_REMAINING */
    if (max_packet != 0 && whole > max_packet)
        return MQTT_E_TOO_LARGE;
    h->type = buf[0] >> 4;
    h->flags = buf[0] & 0x0F;
    h->header_len = (uint8_t)i;
    h->body_len = body;
    return len >= whole ? (int)whole : 0;
}

/* ---- Decoding ----------------------------------------------------------- */

struct cursor {
    const uint8_t *p, *end;
};

static inline size_t cur_left(const struct cursor *c) { return (size_t)(c->end - c->p); }

static inline bool cur_u8(struct cursor *c, uint8_t *v)
{
    if (c->p == c->end)
        return false;
    *v = *c->p++;
    return true;
}

static inline bool cur_u16(struct cursor *c, uint16_t *v)
{
    if (cur_left(c) < 2)
        return false;
    *v = (uint16_t)(c->p[0] << 8 | c->p[1]);
    c->p += 2;
    return true;
}

/* A two-byte length followed by that many bytes (1.5.3; also the binary
 * Will Message and Password fields). */
static inline bool cur_bytes(struct cursor *c, struct mqtt_bytes *b)
{
    uint16_t n;
    if (!cur_u16(c, &n) || cur_left(c) < n)
        return false;
    b->ptr = c->p;
    b->len = n;
    c->p += n;
    return true;
}

static inline int check_utf8(const struct mqtt_bytes *b)
{
    return mqtt_utf8_valid(b->ptr, b->len) ? MQTT_OK : MQTT_E_UTF8;
}

/* The combined validator is one pass; only a failure pays for a second pass
 * to tell bad UTF-8 from a topic-rule violation. */
static inline int check_topic_name(const struct mqtt_bytes *b)
{
    if (mqtt_topic_name_valid(b->ptr, b->len))
        return MQTT_OK;
    return mqtt_utf8_valid(b->ptr, b->len) ? MQTT_E_TOPIC : MQTT_E_UTF8;
}

static inline int check_topic_filter(const uint8_t *f, size_t len)
{
    if (mqtt_topic_filter_valid(f, len))
        return MQTT_OK;
    return mqtt_utf8_valid(f, len) ? MQTT_E_TOPIC : MQTT_E_UTF8;
}

/* ---- Encoding ----------------------------------------------------------- */

/* PUBLISH (3.3) up to what follows the packet id, the same in MQTT 3.1.1 and
 * 5.0: flags, topic name (not yet checked: 5.0 allows an empty one with a
 * Topic Alias) and packet id. */
static inline int wire_publish_head(struct cursor *cur, uint8_t flags, struct mqtt_bytes *topic,
                                    uint16_t *packet_id, uint8_t *qos, bool *retain, bool *dup)
{
    *dup = flags & 0x08;
    *qos = (flags >> 1) & 3;
    *retain = flags & 0x01;
    *packet_id = 0;
    if (*qos == 3)
        return MQTT_E_QOS; /* [MQTT-3.3.1-4] */
    if (*dup && *qos == 0)
        return MQTT_E_FLAGS; /* [MQTT-3.3.1-2] */
    if (!cur_bytes(cur, topic))
        return MQTT_E_MALFORMED;
    if (*qos > 0) {
        if (!cur_u16(cur, packet_id))
            return MQTT_E_MALFORMED;
        if (*packet_id == 0)
            return MQTT_E_PACKET_ID; /* 3.1.1 [MQTT-2.3.1-1], 5.0 [MQTT-2.2.1-3] */
    }
    return MQTT_OK;
}

/* The entries of a SUBSCRIBE or UNSUBSCRIBE (3.8.3, 3.10.3) from the cursor
 * to its end, the same in both versions but for what the byte after each
 * SUBSCRIBE filter may hold, which check_option judges (NULL: no such byte).
 * Sets f->list, list_len and count; "at least one entry" is the caller's,
 * as the two versions answer it differently. */
static inline int wire_filter_list(struct cursor *cur, int (*check_option)(uint8_t),
                                   struct mqtt_filters *f)
{
    int rc;
    f->with_qos = check_option != NULL;
    f->list = cur->p;
    f->list_len = cur_left(cur);
    f->count = 0;
    while (cur->p < cur->end) {
        struct mqtt_bytes filter;
        if (!cur_bytes(cur, &filter))
            return MQTT_E_MALFORMED;
        if ((rc = check_topic_filter(filter.ptr, filter.len)) != MQTT_OK)
            return rc;
        if (check_option) {
            uint8_t o;
            if (!cur_u8(cur, &o))
                return MQTT_E_MALFORMED;
            if ((rc = check_option(o)) != MQTT_OK)
                return rc;
        }
        f->count++;
    }
    return MQTT_OK;
}

/* The will topic and message of a CONNECT payload (3.1.3.2-3), the same in
 * both versions once MQTT 5's will properties are read. */
static inline int wire_connect_will(struct cursor *cur, struct mqtt_bytes *topic,
                                    struct mqtt_bytes *payload)
{
    if (!cur_bytes(cur, topic) || !cur_bytes(cur, payload))
        return MQTT_E_MALFORMED;
    return check_topic_name(topic);
}

/* The rest of a CONNECT payload, the same in both versions: the flagged
 * user name (UTF-8) and password (binary), and then nothing more. */
static inline int wire_connect_login(struct cursor *cur, bool has_username, struct mqtt_bytes *username,
                                     bool has_password, struct mqtt_bytes *password)
{
    int rc;
    if (has_username) {
        if (!cur_bytes(cur, username))
            return MQTT_E_MALFORMED;
        if ((rc = check_utf8(username)) != MQTT_OK)
            return rc;
    }
    if (has_password && !cur_bytes(cur, password))
        return MQTT_E_MALFORMED;
    return cur->p == cur->end ? MQTT_OK : MQTT_E_MALFORMED;
}

static inline uint8_t *put_u16(uint8_t *out, uint16_t v)
{
    out[0] = (uint8_t)(v >> 8);
    out[1] = (uint8_t)v;
    return out + 2;
}

static inline uint8_t *put_bytes(uint8_t *out, const uint8_t *p, size_t n)
{
    assert(n <= 0xFFFF);
    out = put_u16(out, (uint16_t)n);
    if (n)
        memcpy(out, p, n);
    return out + n;
}

static inline uint8_t *put_header(uint8_t *out, uint8_t first, size_t body)
{
    assert(body <= MQTT_MAX_REMAINING);
    *out++ = first;
    return out + mqtt_encode_varint(out, (uint32_t)body);
}

static inline size_t whole_size(size_t body) { return 1 + mqtt_varint_size((uint32_t)body) + body; }

/* ---- CONNECT (3.1.2 in both versions) ----------------------------------- */

#define CF_USERNAME 0x80
#define CF_PASSWORD 0x40
#define CF_WILL_RETAIN 0x20
#define CF_WILL_QOS 0x18
#define CF_WILL 0x04
#define CF_CLEAN 0x02 /* Clean Session in 3.1.1, Clean Start in 5.0 */
#define CF_RESERVED 0x01

/* The protocol a CONNECT's Protocol Name and Level ask for. A pair MQTT
 * defines gives its level: "MQIsdp" 3 (MQTT 3.1), "MQTT" 4 (3.1.1) and 5.
 * A known name with any other level is MQTT_E_VERSION, which deserves a
 * refusing CONNACK rather than a silent close (Mosquitto answers "MQTT" 3
 * and "MQIsdp" 4 or 5 with CONNACK 1 too); an unknown name is
 * MQTT_E_PROTOCOL. Each codec then takes the levels it decodes. */
static inline int wire_check_protocol(const struct mqtt_bytes *name, uint8_t level)
{
    if (name->len == 4 && memcmp(name->ptr, "MQTT", 4) == 0)
        return level == 4 || level == 5 ? level : MQTT_E_VERSION;
    if (name->len == 6 && memcmp(name->ptr, "MQIsdp", 6) == 0)
        return level == 3 ? level : MQTT_E_VERSION;
    return MQTT_E_PROTOCOL;
}

/* Connect Flags rules common to both versions (3.1.1 [MQTT-3.1.2-3, -13,
 * -14, -15]; 5.0 [MQTT-3.1.2-3, -11, -12, -13]). */
static inline int wire_check_connect_flags(uint8_t flags)
{
    bool will = flags & CF_WILL;
    uint8_t qos = (flags & CF_WILL_QOS) >> 3;
    if (flags & CF_RESERVED)
        return MQTT_E_FLAGS;
    if (qos == 3)
        return MQTT_E_QOS;
    if (!will && qos != 0)
        return MQTT_E_QOS;
    if (!will && (flags & CF_WILL_RETAIN))
        return MQTT_E_FLAGS;
    return MQTT_OK;
}

static inline uint8_t wire_connect_flags(bool clean, bool will, uint8_t will_qos, bool will_retain,
                                         bool username, bool password)
{
    uint8_t flags = 0;
    if (clean)
        flags |= CF_CLEAN;
    /* Will QoS and retain mean nothing without a will and must then be 0. */
    if (will)
        flags |= CF_WILL | (uint8_t)((will_qos & 3) << 3) | (will_retain ? CF_WILL_RETAIN : 0);
    if (username)
        flags |= CF_USERNAME;
    if (password)
        flags |= CF_PASSWORD;
    return flags;
}

#endif
