/* mqtt5.c - MQTT 5.0 packet decoding and encoding.
 *
 * Each packet is its MQTT 3.1.1 layout with a property block inserted after
 * the variable header's fixed fields, plus reason codes on the
 * acknowledgements; the shared cursor and writers come from mqtt_wire.h and
 * the property block from mqtt_props. Section numbers and [MQTT-x.y.z-n]
 * tags refer to the OASIS MQTT 5.0 standard.
 */
#include "mqtt/mqtt5.h"

#include <assert.h>
#include <string.h>

#include "mqtt/mqtt_wire.h"

const char *mqtt5_strerror(int err)
{
    switch (err) {
    case MQTT5_E_PROTOCOL_ERROR: return "protocol error";
    case MQTT5_E_REASON: return "reason code not allowed in this packet";
    default: return mqtt_strerror(err);
    }
}

const char *mqtt5_reason_str(uint8_t rc)
{
    switch (rc) {
    case 0x00: return "Success";
    case 0x01: return "Granted QoS 1";
    case 0x02: return "Granted QoS 2";
    case 0x04: return "Disconnect with Will Message";
    case 0x10: return "No matching subscribers";
    case 0x11: return "No subscription existed";
    case 0x18: return "Continue authentication";
    case 0x19: return "Re-authenticate";
    case 0x80: return "Unspecified error";
    case 0x81: return "Malformed Packet";
    case 0x82: return "Protocol Error";
    case 0x83: return "Implementation specific error";
    case 0x84: return "Unsupported Protocol Version";
    case 0x85: return "Client Identifier not valid";
    case 0x86: return "Bad User Name or Password";
    case 0x87: return "Not authorized";
    case 0x88: return "Server unavailable";
    case 0x89: return "Server busy";
    case 0x8A: return "Banned";
    case 0x8B: return "Server shutting down";
    case 0x8C: return "Bad authentication method";
    case 0x8D: return "Keep Alive timeout";
    case 0x8E: return "Session taken over";
    case 0x8F: return "Topic Filter invalid";
    case 0x90: return "Topic Name invalid";
    case 0x91: return "Packet Identifier in use";
    case 0x92: return "Packet Identifier not found";
    case 0x93: return "Receive Maximum exceeded";
    case 0x94: return "Topic Alias invalid";
    case 0x95: return "Packet too large";
    case 0x96: return "Message rate too high";
    case 0x97: return "Quota exceeded";
    case 0x98: return "Administrative action";
    case 0x99: return "Payload format invalid";
    case 0x9A: return "Retain not supported";
    case 0x9B: return "QoS not supported";
    case 0x9C: return "Use another server";
    case 0x9D: return "Server moved";
    case 0x9E: return "Shared Subscriptions not supported";
    case 0x9F: return "Connection rate exceeded";
    case 0xA0: return "Maximum connect time";
    case 0xA1: return "Subscription Identifiers not supported";
    case 0xA2: return "Wildcard Subscriptions not supported";
    default: return "unknown reason code";
    }
}

uint8_t mqtt5_err_reason(int err)
{
    switch (err) {
    case MQTT_OK: return MQTT5_RC_SUCCESS;
    case MQTT5_E_PROTOCOL_ERROR:
    case MQTT_E_PACKET_ID: /* [MQTT-2.2.1-3]: not a malformation */
        return MQTT5_RC_PROTOCOL_ERROR;
    case MQTT_E_TOO_LARGE: return MQTT5_RC_PACKET_TOO_LARGE;
    default: return MQTT5_RC_MALFORMED_PACKET;
    }
}

int mqtt5_frame(const uint8_t *buf, size_t len, uint32_t max_packet, struct mqtt_header *h)
{
    return wire_frame(buf, len, max_packet, MQTT5_PROTOCOL_LEVEL, h);
}

/* ---- Reason codes each packet may carry ---------------------------------- */

static const uint8_t connack_reasons[] = {0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86,
                                          0x87, 0x88, 0x89, 0x8A, 0x8C, 0x90, 0x95, 0x97,
                                          0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F};
static const uint8_t puback_reasons[] = {0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99};
static const uint8_t pubrel_reasons[] = {0x00, 0x92};
static const uint8_t suback_reasons[] = {0x00, 0x01, 0x02, 0x80, 0x83, 0x87,
                                         0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2};
static const uint8_t unsuback_reasons[] = {0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91};
static const uint8_t disconnect_reasons[] = {
    0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F, 0x90, 0x93, 0x94,
    0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2};
static const uint8_t auth_reasons[] = {0x00, 0x18, 0x19};

struct reason_set {
    const uint8_t *codes;
    size_t n;
};

#define SET(a) {a, sizeof a}

/* Indexed by packet type: CONNACK 3.2.2.2, PUBACK 3.4.2.1, PUBREC 3.5.2.1,
 * PUBREL 3.6.2.1, PUBCOMP 3.7.2.1, SUBACK 3.9.3, UNSUBACK 3.11.3,
 * DISCONNECT 3.14.2.1, AUTH 3.15.2.1. */
static const struct reason_set reasons[MQTT5_AUTH + 1] = {
    [MQTT_CONNACK] = SET(connack_reasons),     [MQTT_PUBACK] = SET(puback_reasons),
    [MQTT_PUBREC] = SET(puback_reasons),       [MQTT_PUBREL] = SET(pubrel_reasons),
    [MQTT_PUBCOMP] = SET(pubrel_reasons),      [MQTT_SUBACK] = SET(suback_reasons),
    [MQTT_UNSUBACK] = SET(unsuback_reasons),   [MQTT_DISCONNECT] = SET(disconnect_reasons),
    [MQTT5_AUTH] = SET(auth_reasons),
};

static int check_reason(uint8_t type, uint8_t rc)
{
    const struct reason_set *s = &reasons[type];
    return memchr(s->codes, rc, s->n) ? MQTT_OK : MQTT5_E_REASON;
}

/* ---- Property blocks ------------------------------------------------------ */

static int cur_props(struct cursor *c, uint8_t packet, struct mqtt_props *p)
{
    size_t used;
    int rc = mqtt_props_decode(c->p, cur_left(c), packet, p, &used);
    if (rc == MQTT_PROPS_E_PROTOCOL)
        return MQTT5_E_PROTOCOL_ERROR;
    if (rc != MQTT_PROPS_OK)
        return MQTT_E_MALFORMED;
    c->p += used;
    return MQTT_OK;
}

/* A block with no properties encodes as its single zero length byte. */
static bool props_empty(const struct mqtt_props *p) { return mqtt_props_size(p) == 1; }

static uint8_t *put_props(uint8_t *out, const struct mqtt_props *p)
{
    return out + mqtt_props_encode(out, p);
}

static int done(const struct cursor *c)
{
    return c->p == c->end ? MQTT_OK : MQTT_E_MALFORMED;
}

/* ---- CONNECT (3.1) ------------------------------------------------------ */

int mqtt5_decode_connect(const uint8_t *body, size_t len, struct mqtt5_connect *c)
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
    if (rc != MQTT5_PROTOCOL_LEVEL)
        return MQTT_E_VERSION; /* MQTT 3.1 and 3.1.1 are the other codec's */
    if (!cur_u8(&cur, &flags) || !cur_u16(&cur, &c->keepalive))
        return MQTT_E_MALFORMED;
    if ((rc = wire_check_connect_flags(flags)) != MQTT_OK)
        return rc;
    c->clean_start = flags & CF_CLEAN;
    c->has_will = flags & CF_WILL;
    c->will_qos = (flags & CF_WILL_QOS) >> 3;
    c->will_retain = flags & CF_WILL_RETAIN;
    c->has_username = flags & CF_USERNAME;
    c->has_password = flags & CF_PASSWORD;
    if ((rc = cur_props(&cur, MQTT_CONNECT, &c->props)) != MQTT_OK)
        return rc;

    /* Payload order is fixed, each field only if flagged (3.1.3). */
    if (!cur_bytes(&cur, &c->client_id))
        return MQTT_E_MALFORMED;
    if ((rc = check_utf8(&c->client_id)) != MQTT_OK)
        return rc;
    if (c->has_will) {
        if ((rc = cur_props(&cur, MQTT_PROPS_WILL, &c->will_props)) != MQTT_OK)
            return rc;
        if ((rc = wire_connect_will(&cur, &c->will_topic, &c->will_payload)) != MQTT_OK)
            return rc;
    }
    return wire_connect_login(&cur, c->has_username, &c->username, c->has_password, &c->password);
}

static size_t connect_body_size(const struct mqtt5_connect *c)
{
    size_t n = 2 + 4 + 1 + 1 + 2 + mqtt_props_size(&c->props) + 2 + c->client_id.len;
    if (c->has_will)
        n += mqtt_props_size(&c->will_props) + 2 + c->will_topic.len + 2 + c->will_payload.len;
    if (c->has_username)
        n += 2 + c->username.len;
    if (c->has_password)
        n += 2 + c->password.len;
    return n;
}

size_t mqtt5_connect_size(const struct mqtt5_connect *c) { return whole_size(connect_body_size(c)); }

size_t mqtt5_encode_connect(uint8_t *out, const struct mqtt5_connect *c)
{
    uint8_t *p = put_header(out, MQTT_CONNECT << 4, connect_body_size(c));
    p = put_bytes(p, (const uint8_t *)"MQTT", 4);
    *p++ = MQTT5_PROTOCOL_LEVEL;
    *p++ = wire_connect_flags(c->clean_start, c->has_will, c->will_qos, c->will_retain,
                              c->has_username, c->has_password);
    p = put_u16(p, c->keepalive);
    p = put_props(p, &c->props);
    p = put_bytes(p, c->client_id.ptr, c->client_id.len);
    if (c->has_will) {
        p = put_props(p, &c->will_props);
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

int mqtt5_decode_connack(const uint8_t *body, size_t len, struct mqtt5_connack *c)
{
    struct cursor cur = {body, body + len};
    uint8_t ack_flags;
    int rc;

    if (!cur_u8(&cur, &ack_flags) || !cur_u8(&cur, &c->reason))
        return MQTT_E_MALFORMED;
    if (ack_flags & 0xFE)
        return MQTT_E_FLAGS; /* Connect Acknowledge Flags bits 7-1 are reserved */
    c->session_present = ack_flags;
    if ((rc = check_reason(MQTT_CONNACK, c->reason)) != MQTT_OK)
        return rc;
    if (c->session_present && c->reason != MQTT5_RC_SUCCESS)
        return MQTT5_E_REASON; /* [MQTT-3.2.2-6] */
    if ((rc = cur_props(&cur, MQTT_CONNACK, &c->props)) != MQTT_OK)
        return rc;
    return done(&cur);
}

static size_t connack_body_size(const struct mqtt5_connack *c)
{
    return 2 + mqtt_props_size(&c->props);
}

size_t mqtt5_connack_size(const struct mqtt5_connack *c) { return whole_size(connack_body_size(c)); }

size_t mqtt5_encode_connack(uint8_t *out, const struct mqtt5_connack *c)
{
    uint8_t *p = put_header(out, MQTT_CONNACK << 4, connack_body_size(c));
    *p++ = c->session_present;
    *p++ = c->reason;
    p = put_props(p, &c->props);
    return (size_t)(p - out);
}

/* ---- PUBLISH (3.3) ------------------------------------------------------ */

int mqtt5_decode_publish(const uint8_t *body, size_t len, uint8_t flags, struct mqtt5_publish *p)
{
    struct cursor cur = {body, body + len};
    int rc;

    if ((rc = wire_publish_head(&cur, flags, &p->topic, &p->packet_id, &p->qos, &p->retain, &p->dup)) !=
        MQTT_OK)
        return rc;
    if ((rc = cur_props(&cur, MQTT_PUBLISH, &p->props)) != MQTT_OK)
        return rc;
    /* An empty topic stands for the one its Topic Alias maps to (3.3.2.3.4);
     * without an alias it is a Protocol Error. */
    bool aliased = p->props.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS);
    if (p->topic.len == 0)
        rc = aliased ? MQTT_OK : MQTT5_E_PROTOCOL_ERROR;
    else
        rc = check_topic_name(&p->topic);
    if (rc != MQTT_OK)
        return rc;
    p->payload.ptr = cur.p;
    p->payload.len = cur_left(&cur);
    return MQTT_OK;
}

static size_t publish_body_size(const struct mqtt5_publish *p)
{
    return 2 + p->topic.len + (p->qos ? 2 : 0) + mqtt_props_size(&p->props) + p->payload.len;
}

size_t mqtt5_publish_size(const struct mqtt5_publish *p) { return whole_size(publish_body_size(p)); }

size_t mqtt5_encode_publish(uint8_t *out, const struct mqtt5_publish *p)
{
    uint8_t first = (uint8_t)(MQTT_PUBLISH << 4 | (p->dup ? 0x08 : 0) | (p->qos & 3) << 1 |
                              (p->retain ? 0x01 : 0));
    uint8_t *o = put_header(out, first, publish_body_size(p));
    o = put_bytes(o, p->topic.ptr, p->topic.len);
    if (p->qos)
        o = put_u16(o, p->packet_id);
    o = put_props(o, &p->props);
    if (p->payload.len)
        memcpy(o, p->payload.ptr, p->payload.len);
    return (size_t)(o + p->payload.len - out);
}

/* ---- PUBACK, PUBREC, PUBREL, PUBCOMP (3.4-3.7) --------------------------- */

/* The reason code and the property block after it may each be left off the
 * end of the packet when it would be 0 / empty (3.4.2.1, 3.14.2.1, 3.15.2.1).
 * The cursor is at the reason code; the acks have their packet id before it,
 * DISCONNECT and AUTH nothing. */
static int decode_reason_tail(uint8_t type, struct cursor *cur, uint8_t *reason,
                              struct mqtt_props *props)
{
    int rc;

    memset(props, 0, sizeof *props);
    *reason = MQTT5_RC_SUCCESS;
    if (cur->p == cur->end)
        return MQTT_OK;
    *reason = *cur->p++;
    if ((rc = check_reason(type, *reason)) != MQTT_OK)
        return rc;
    if (cur->p == cur->end)
        return MQTT_OK;
    if ((rc = cur_props(cur, type, props)) != MQTT_OK)
        return rc;
    return done(cur);
}

/* Bytes of reason code and properties the encoder writes: none, the code
 * alone, or both. keep_props forces the property block once there is a
 * reason code, for packets whose section defines no shorter form. */
static size_t reason_tail_size(uint8_t reason, const struct mqtt_props *props, bool keep_props)
{
    bool empty = props_empty(props);
    if (reason == MQTT5_RC_SUCCESS && empty)
        return 0;
    return empty && !keep_props ? 1 : 1 + mqtt_props_size(props);
}

static uint8_t *put_reason_tail(uint8_t *out, size_t tail, uint8_t reason,
                                const struct mqtt_props *props)
{
    if (tail == 0)
        return out;
    *out++ = reason;
    return tail == 1 ? out : put_props(out, props);
}

int mqtt5_decode_ack(enum mqtt_type type, const uint8_t *body, size_t len, struct mqtt5_ack *a)
{
    assert(type >= MQTT_PUBACK && type <= MQTT_PUBCOMP);
    struct cursor cur = {body, body + len};
    if (!cur_u16(&cur, &a->packet_id))
        return MQTT_E_MALFORMED;
    if (a->packet_id == 0)
        return MQTT_E_PACKET_ID;
    return decode_reason_tail((uint8_t)type, &cur, &a->reason, &a->props);
}

size_t mqtt5_ack_size(const struct mqtt5_ack *a)
{
    return whole_size(2 + reason_tail_size(a->reason, &a->props, false));
}

size_t mqtt5_encode_ack(uint8_t *out, enum mqtt_type type, const struct mqtt5_ack *a)
{
    assert(type >= MQTT_PUBACK && type <= MQTT_PUBCOMP);
    size_t tail = reason_tail_size(a->reason, &a->props, false);
    uint8_t *p = put_header(out, (uint8_t)(type << 4 | (type == MQTT_PUBREL ? 0x02 : 0)), 2 + tail);
    p = put_u16(p, a->packet_id);
    p = put_reason_tail(p, tail, a->reason, &a->props);
    return (size_t)(p - out);
}

/* ---- DISCONNECT (3.14), AUTH (3.15) -------------------------------------- */

int mqtt5_decode_reason_props(uint8_t type, const uint8_t *body, size_t len,
                              struct mqtt5_reason_props *r)
{
    assert(type == MQTT_DISCONNECT || type == MQTT5_AUTH);
    struct cursor cur = {body, body + len};
    return decode_reason_tail(type, &cur, &r->reason, &r->props);
}

size_t mqtt5_reason_props_size(uint8_t type, const struct mqtt5_reason_props *r)
{
    return whole_size(reason_tail_size(r->reason, &r->props, type == MQTT5_AUTH));
}

size_t mqtt5_encode_reason_props(uint8_t *out, uint8_t type, const struct mqtt5_reason_props *r)
{
    assert(type == MQTT_DISCONNECT || type == MQTT5_AUTH);
    size_t tail = reason_tail_size(r->reason, &r->props, type == MQTT5_AUTH);
    uint8_t *p = put_header(out, (uint8_t)(type << 4), tail);
    p = put_reason_tail(p, tail, r->reason, &r->props);
    return (size_t)(p - out);
}

/* ---- SUBSCRIBE (3.8), UNSUBSCRIBE (3.10) --------------------------------- */

/* Subscription Options (3.8.3.1): set reserved bits 6-7 make the packet
 * malformed [MQTT-3.8.3-5]; a QoS or Retain Handling of 3 is, in the spec's
 * words, a Protocol Error. */
static int check_options(uint8_t o)
{
    if (o & 0xC0)
        return MQTT_E_MALFORMED;
    if ((o & MQTT5_SUB_QOS) == 3 ||
        (o & MQTT5_SUB_RETAIN_HANDLING) >> MQTT5_SUB_RETAIN_HANDLING_SHIFT == 3)
        return MQTT5_E_PROTOCOL_ERROR;
    return MQTT_OK;
}

static int decode_filters(uint8_t type, const uint8_t *body, size_t len, struct mqtt5_subscribe *s)
{
    struct cursor cur = {body, body + len};
    struct mqtt_filters *f = &s->filters;
    int rc;

    if (!cur_u16(&cur, &f->packet_id))
        return MQTT_E_MALFORMED;
    if (f->packet_id == 0)
        return MQTT_E_PACKET_ID;
    if ((rc = cur_props(&cur, type, &s->props)) != MQTT_OK)
        return rc;
    if ((rc = wire_filter_list(&cur, type == MQTT_SUBSCRIBE ? check_options : NULL, f)) != MQTT_OK)
        return rc;
    /* [MQTT-3.8.3-2], [MQTT-3.10.3-2]: at least one entry. */
    return f->count ? MQTT_OK : MQTT5_E_PROTOCOL_ERROR;
}

int mqtt5_decode_subscribe(const uint8_t *body, size_t len, struct mqtt5_subscribe *s)
{
    return decode_filters(MQTT_SUBSCRIBE, body, len, s);
}

int mqtt5_decode_unsubscribe(const uint8_t *body, size_t len, struct mqtt5_subscribe *s)
{
    return decode_filters(MQTT_UNSUBSCRIBE, body, len, s);
}

static size_t filters_body_size(const struct mqtt_props *props, const struct mqtt_bytes *filters,
                                unsigned n, bool with_options)
{
    size_t size = 2 + mqtt_props_size(props);
    for (unsigned i = 0; i < n; i++)
        size += 2 + filters[i].len + with_options;
    return size;
}

size_t mqtt5_subscribe_size(const struct mqtt_props *props, const struct mqtt_bytes *filters,
                            unsigned n)
{
    return whole_size(filters_body_size(props, filters, n, true));
}

size_t mqtt5_unsubscribe_size(const struct mqtt_props *props, const struct mqtt_bytes *filters,
                              unsigned n)
{
    return whole_size(filters_body_size(props, filters, n, false));
}

static size_t encode_filters(uint8_t *out, uint8_t first, uint16_t packet_id,
                             const struct mqtt_props *props, const struct mqtt_bytes *filters,
                             const uint8_t *options, unsigned n)
{
    uint8_t *p = put_header(out, first, filters_body_size(props, filters, n, options != NULL));
    p = put_u16(p, packet_id);
    p = put_props(p, props);
    for (unsigned i = 0; i < n; i++) {
        p = put_bytes(p, filters[i].ptr, filters[i].len);
        if (options)
            *p++ = options[i];
    }
    return (size_t)(p - out);
}

size_t mqtt5_encode_subscribe(uint8_t *out, uint16_t packet_id, const struct mqtt_props *props,
                              const struct mqtt_bytes *filters, const uint8_t *options,
                              unsigned n)
{
    assert(options != NULL);
    return encode_filters(out, MQTT_SUBSCRIBE << 4 | 0x02, packet_id, props, filters, options, n);
}

size_t mqtt5_encode_unsubscribe(uint8_t *out, uint16_t packet_id, const struct mqtt_props *props,
                                const struct mqtt_bytes *filters, unsigned n)
{
    return encode_filters(out, MQTT_UNSUBSCRIBE << 4 | 0x02, packet_id, props, filters, NULL, n);
}

/* ---- SUBACK (3.9), UNSUBACK (3.11) --------------------------------------- */

int mqtt5_decode_suback(enum mqtt_type type, const uint8_t *body, size_t len,
                        struct mqtt5_suback *s)
{
    assert(type == MQTT_SUBACK || type == MQTT_UNSUBACK);
    struct cursor cur = {body, body + len};
    int rc;

    if (!cur_u16(&cur, &s->packet_id))
        return MQTT_E_MALFORMED;
    if (s->packet_id == 0)
        return MQTT_E_PACKET_ID;
    if ((rc = cur_props(&cur, (uint8_t)type, &s->props)) != MQTT_OK)
        return rc;
    s->codes = cur.p;
    s->count = (unsigned)cur_left(&cur);
    if (s->count == 0)
        return MQTT_E_MALFORMED; /* one code per filter, and there was one */
    for (unsigned i = 0; i < s->count; i++)
        if ((rc = check_reason((uint8_t)type, s->codes[i])) != MQTT_OK)
            return rc;
    return MQTT_OK;
}

static size_t suback_body_size(const struct mqtt5_suback *s)
{
    return 2 + mqtt_props_size(&s->props) + s->count;
}

size_t mqtt5_suback_size(const struct mqtt5_suback *s) { return whole_size(suback_body_size(s)); }

size_t mqtt5_encode_suback(uint8_t *out, enum mqtt_type type, const struct mqtt5_suback *s)
{
    assert(type == MQTT_SUBACK || type == MQTT_UNSUBACK);
    uint8_t *p = put_header(out, (uint8_t)(type << 4), suback_body_size(s));
    p = put_u16(p, s->packet_id);
    p = put_props(p, &s->props);
    if (s->count)
        memcpy(p, s->codes, s->count);
    return (size_t)(p + s->count - out);
}
