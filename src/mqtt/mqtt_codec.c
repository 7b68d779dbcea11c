/* mqtt_codec.c - MQTT 3.1.1 and 3.1 packet framing, decoding and encoding.
 *
 * Decoders read through a small cursor (mqtt_wire.h, shared with the MQTT 5
 * codec) that checks every length against the bytes actually present, so no
 * input can make them read out of bounds.
 * Section numbers and [MQTT-x.y.z-n] tags refer to the OASIS MQTT 3.1.1
 * standard; "3.1" means IBM's MQTT V3.1 Protocol Specification, whose
 * packets 3.1.1 kept but for the CONNECT's protocol name and level.
 */
#include "mqtt/mqtt_codec.h"

#include <assert.h>
#include <string.h>

#include "mqtt/mqtt_wire.h"

const char *mqtt_strerror(int err)
{
    switch (err) {
    case MQTT_OK: return "ok";
    case MQTT_E_MALFORMED: return "malformed packet";
    case MQTT_E_FLAGS: return "reserved flag bits set";
    case MQTT_E_TYPE: return "reserved packet type";
    case MQTT_E_TOO_LARGE: return "packet too large";
    case MQTT_E_UTF8: return "invalid UTF-8 string";
    case MQTT_E_TOPIC: return "invalid topic name or filter";
    case MQTT_E_PROTOCOL: return "unknown protocol name";
    case MQTT_E_VERSION: return "unsupported protocol level";
    case MQTT_E_QOS: return "invalid QoS";
    case MQTT_E_PACKET_ID: return "packet identifier is zero";
    default: return "unknown error";
    }
}

/* ---- Framing ------------------------------------------------------------ */

int mqtt_frame(const uint8_t *buf, size_t len, uint32_t max_packet, struct mqtt_header *h)
{
    return wire_frame(buf, len, max_packet, MQTT311_PROTOCOL_LEVEL, h);
}

int mqtt31_frame(const uint8_t *buf, size_t len, uint32_t max_packet, struct mqtt_header *h)
{
    return wire_frame(buf, len, max_packet, MQTT31_PROTOCOL_LEVEL, h);
}

int mqtt_decode_varint(const uint8_t *buf, size_t len, uint32_t *v, bool *non_minimal)
{
    uint32_t x = 0;
    for (size_t i = 0; i < 4; i++) {
        if (i >= len)
            return 0;
        uint8_t b = buf[i];
        x |= (uint32_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            *non_minimal = b == 0 && i > 0;
            return (int)i + 1;
        }
    }
    return MQTT_E_MALFORMED;
}

/* ---- CONNECT (3.1) ------------------------------------------------------ */

int mqtt_decode_connect(const uint8_t *body, size_t len, struct mqtt_connect *c)
{
    struct cursor cur = {body, body + len};
    struct mqtt_bytes name;
    uint8_t flags;
    int rc;

    memset(c, 0, sizeof *c);
    if (!cur_bytes(&cur, &name) || !cur_u8(&cur, &c->protocol_level))
        return MQTT_E_MALFORMED;
    if ((rc = wire_check_protocol(&name, c->protocol_level)) < 0)
        return rc;
    if (rc != MQTT31_PROTOCOL_LEVEL && rc != MQTT311_PROTOCOL_LEVEL)
        return MQTT_E_VERSION; /* 5: the MQTT 5 codec's */

    if (!cur_u8(&cur, &flags) || !cur_u16(&cur, &c->keepalive))
        return MQTT_E_MALFORMED;
    if (c->protocol_level == MQTT31_PROTOCOL_LEVEL) {
        /* 3.1 leaves bit 0 unused and says nothing of Will QoS and Retain
         * without a will; Will QoS 3 stays an error, as in Mosquitto. */
        flags &= (uint8_t)~CF_RESERVED;
        if (!(flags & CF_WILL) && (flags & CF_WILL_QOS) != CF_WILL_QOS)
            flags &= (uint8_t)~(CF_WILL_QOS | CF_WILL_RETAIN);
    }
    if ((rc = wire_check_connect_flags(flags)) != MQTT_OK)
        return rc;
    c->clean_session = flags & CF_CLEAN;
    c->has_will = flags & CF_WILL;
    c->will_qos = (flags & CF_WILL_QOS) >> 3;
    c->will_retain = flags & CF_WILL_RETAIN;
    c->has_username = flags & CF_USERNAME;
    c->has_password = flags & CF_PASSWORD;
    if (c->has_password && !c->has_username)
        return MQTT_E_FLAGS; /* [MQTT-3.1.2-22] */

    /* Payload fields appear in this fixed order, each only if flagged
     * [MQTT-3.1.3-1]. */
    if (!cur_bytes(&cur, &c->client_id))
        return MQTT_E_MALFORMED;
    if ((rc = check_utf8(&c->client_id)) != MQTT_OK)
        return rc;
    if (c->has_will && (rc = wire_connect_will(&cur, &c->will_topic, &c->will_payload)) != MQTT_OK)
        return rc;
    return wire_connect_login(&cur, c->has_username, &c->username, c->has_password, &c->password);
}

static size_t connect_body_size(const struct mqtt_connect *c)
{
    size_t name = c->protocol_level == MQTT31_PROTOCOL_LEVEL ? 6 : 4;
    size_t n = 2 + name + 1 + 1 + 2 + 2 + c->client_id.len;
    if (c->has_will)
        n += 2 + c->will_topic.len + 2 + c->will_payload.len;
    if (c->has_username)
        n += 2 + c->username.len;
    if (c->has_password)
        n += 2 + c->password.len;
    return n;
}

size_t mqtt_connect_size(const struct mqtt_connect *c) { return whole_size(connect_body_size(c)); }

size_t mqtt_encode_connect(uint8_t *out, const struct mqtt_connect *c)
{
    uint8_t flags = wire_connect_flags(c->clean_session, c->has_will, c->will_qos, c->will_retain,
                                       c->has_username, c->has_password);

    uint8_t *p = put_header(out, MQTT_CONNECT << 4, connect_body_size(c));
    if (c->protocol_level == MQTT31_PROTOCOL_LEVEL)
        p = put_bytes(p, (const uint8_t *)"MQIsdp", 6);
    else
        p = put_bytes(p, (const uint8_t *)"MQTT", 4);
    *p++ = c->protocol_level;
    *p++ = flags;
    p = put_u16(p, c->keepalive);
    p = put_bytes(p, c->client_id.ptr, c->client_id.len);
    if (c->has_will) {
        p = put_bytes(p, c->will_topic.ptr, c->will_topic.len);
        p = put_bytes(p, c->will_payload.ptr, c->will_payload.len);
    }
    if (c->has_username)
        p = put_bytes(p, c->username.ptr, c->username.len);
    if (c->has_password)
        p = put_bytes(p, c->password.ptr, c->password.len);
    return (size_t)(p - out);
}

/* ---- CONNACK (3.2) ------------------------------------------------------ */

int mqtt_decode_connack(const uint8_t *body, size_t len, bool *session_present, uint8_t *rc)
{
    if (len != 2)
        return MQTT_E_MALFORMED;
    if (body[0] & 0xFE)
        return MQTT_E_FLAGS; /* Connect Acknowledge Flags bits 7-1 are reserved */
    if (body[1] > MQTT_CONNACK_NOT_AUTHORIZED)
        return MQTT_E_MALFORMED; /* 6-255 are reserved */
    if (body[0] && body[1] != MQTT_CONNACK_ACCEPTED)
        return MQTT_E_MALFORMED; /* [MQTT-3.2.2-4] */
    *session_present = body[0];
    *rc = body[1];
    return MQTT_OK;
}

size_t mqtt_encode_connack(uint8_t *out, bool session_present, uint8_t rc)
{
    out[0] = MQTT_CONNACK << 4;
    out[1] = 2;
    out[2] = session_present;
    out[3] = rc;
    return MQTT_CONNACK_LEN;
}

/* ---- PUBLISH (3.3) ------------------------------------------------------ */

int mqtt_decode_publish(const uint8_t *body, size_t len, uint8_t flags, struct mqtt_publish *p)
{
    struct cursor cur = {body, body + len};
    int rc;

    if ((rc = wire_publish_head(&cur, flags, &p->topic, &p->packet_id, &p->qos, &p->retain, &p->dup)) !=
        MQTT_OK)
        return rc;
    if ((rc = check_topic_name(&p->topic)) != MQTT_OK)
        return rc; /* [MQTT-3.3.2-1], [MQTT-3.3.2-2], [MQTT-4.7.3-1] */
    p->payload.ptr = cur.p;
    p->payload.len = cur_left(&cur);
    return MQTT_OK;
}

static size_t publish_body_size(size_t topic_len, size_t payload_len, uint8_t qos)
{
    return 2 + topic_len + (qos ? 2 : 0) + payload_len;
}

size_t mqtt_publish_size(size_t topic_len, size_t payload_len, uint8_t qos)
{
    return whole_size(publish_body_size(topic_len, payload_len, qos));
}

size_t mqtt_encode_publish(uint8_t *out, const struct mqtt_publish *p)
{
    uint8_t first = (uint8_t)(MQTT_PUBLISH << 4 | (p->dup ? 0x08 : 0) | (p->qos & 3) << 1 |
                              (p->retain ? 0x01 : 0));
    uint8_t *o = put_header(out, first, publish_body_size(p->topic.len, p->payload.len, p->qos));
    o = put_bytes(o, p->topic.ptr, p->topic.len);
    if (p->qos)
        o = put_u16(o, p->packet_id);
    if (p->payload.len)
        memcpy(o, p->payload.ptr, p->payload.len);
    return (size_t)(o + p->payload.len - out);
}

/* ---- PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK -------------------------- */

int mqtt_decode_ack(const uint8_t *body, size_t len, uint16_t *packet_id)
{
    if (len != 2)
        return MQTT_E_MALFORMED;
    *packet_id = (uint16_t)(body[0] << 8 | body[1]);
    return *packet_id ? MQTT_OK : MQTT_E_PACKET_ID;
}

size_t mqtt_encode_ack(uint8_t *out, enum mqtt_type type, uint16_t packet_id)
{
    out[0] = (uint8_t)(type << 4 | (type == MQTT_PUBREL ? 0x02 : 0));
    out[1] = 2;
    put_u16(out + 2, packet_id);
    return MQTT_ACK_LEN;
}

size_t mqtt_encode_empty(uint8_t *out, enum mqtt_type type)
{
    out[0] = (uint8_t)(type << 4);
    out[1] = 0;
    return MQTT_EMPTY_LEN;
}

/* ---- SUBSCRIBE (3.8), UNSUBSCRIBE (3.10) --------------------------------- */

/* MQTT 3.1.1's byte after a SUBSCRIBE filter: a requested QoS. */
static int check_requested_qos(uint8_t q)
{
    if (q & 0xFC)
        return MQTT_E_MALFORMED; /* [MQTT-3-8.3-4]: reserved bits */
    return q == 3 ? MQTT_E_QOS : MQTT_OK;
}

static int decode_filters(const uint8_t *body, size_t len, bool with_qos, struct mqtt_filters *f)
{
    struct cursor cur = {body, body + len};
    int rc;

    if (!cur_u16(&cur, &f->packet_id))
        return MQTT_E_MALFORMED;
    if (f->packet_id == 0)
        return MQTT_E_PACKET_ID; /* [MQTT-2.3.1-1] */
    if ((rc = wire_filter_list(&cur, with_qos ? check_requested_qos : NULL, f)) != MQTT_OK)
        return rc;
    /* [MQTT-3.8.3-3], [MQTT-3.10.3-2]: at least one entry. */
    return f->count ? MQTT_OK : MQTT_E_MALFORMED;
}

int mqtt_decode_subscribe(const uint8_t *body, size_t len, struct mqtt_filters *f)
{
    return decode_filters(body, len, true, f);
}

int mqtt_decode_unsubscribe(const uint8_t *body, size_t len, struct mqtt_filters *f)
{
    return decode_filters(body, len, false, f);
}

void mqtt_filter_iter_init(struct mqtt_filter_iter *it, const struct mqtt_filters *f)
{
    it->pos = f->list;
    it->end = f->list + f->list_len;
    it->with_qos = f->with_qos;
}

bool mqtt_filter_next(struct mqtt_filter_iter *it, struct mqtt_bytes *filter, uint8_t *qos)
{
    /* The list was validated by decode_filters(), so lengths are trusted. */
    if (it->pos >= it->end)
        return false;
    size_t n = (size_t)it->pos[0] << 8 | it->pos[1];
    filter->ptr = it->pos + 2;
    filter->len = n;
    it->pos += 2 + n;
    uint8_t q = it->with_qos ? *it->pos++ : 0;
    if (qos)
        *qos = q;
    return true;
}

static size_t filters_body_size(const struct mqtt_bytes *filters, unsigned n, bool with_qos)
{
    size_t size = 2;
    for (unsigned i = 0; i < n; i++)
        size += 2 + filters[i].len + with_qos;
    return size;
}

size_t mqtt_subscribe_size(const struct mqtt_bytes *filters, unsigned n)
{
    return whole_size(filters_body_size(filters, n, true));
}

size_t mqtt_unsubscribe_size(const struct mqtt_bytes *filters, unsigned n)
{
    return whole_size(filters_body_size(filters, n, false));
}

static size_t encode_filters(uint8_t *out, uint8_t first, uint16_t packet_id,
                             const struct mqtt_bytes *filters, const uint8_t *qos, unsigned n)
{
    uint8_t *p = put_header(out, first, filters_body_size(filters, n, qos != NULL));
    p = put_u16(p, packet_id);
    for (unsigned i = 0; i < n; i++) {
        p = put_bytes(p, filters[i].ptr, filters[i].len);
        if (qos)
            *p++ = qos[i];
    }
    return (size_t)(p - out);
}

size_t mqtt_encode_subscribe(uint8_t *out, uint16_t packet_id, const struct mqtt_bytes *filters,
                             const uint8_t *qos, unsigned n)
{
    assert(qos != NULL);
    return encode_filters(out, MQTT_SUBSCRIBE << 4 | 0x02, packet_id, filters, qos, n);
}

size_t mqtt_encode_unsubscribe(uint8_t *out, uint16_t packet_id, const struct mqtt_bytes *filters,
                               unsigned n)
{
    return encode_filters(out, MQTT_UNSUBSCRIBE << 4 | 0x02, packet_id, filters, NULL, n);
}

/* ---- SUBACK (3.9) ------------------------------------------------------- */

int mqtt_decode_suback(const uint8_t *body, size_t len, struct mqtt_suback *s)
{
    if (len < 3)
        return MQTT_E_MALFORMED; /* packet id and at least one code */
    s->packet_id = (uint16_t)(body[0] << 8 | body[1]);
    if (s->packet_id == 0)
        return MQTT_E_PACKET_ID;
    s->codes = body + 2;
    s->count = (unsigned)(len - 2);
    for (unsigned i = 0; i < s->count; i++) {
        uint8_t code = s->codes[i];
        if (code > 2 && code != MQTT_SUBACK_FAILURE)
            return MQTT_E_MALFORMED; /* [MQTT-3.9.3-2]: others are reserved */
    }
    return MQTT_OK;
}

size_t mqtt_suback_size(unsigned n) { return whole_size(2 + (size_t)n); }

size_t mqtt_encode_suback(uint8_t *out, uint16_t packet_id, const uint8_t *codes, unsigned n)
{
    uint8_t *p = put_header(out, MQTT_SUBACK << 4, 2 + (size_t)n);
    p = put_u16(p, packet_id);
    if (n)
        memcpy(p, codes, n);
    return (size_t)(p + n - out);
}
