/* mqtt_props.c - MQTT 5.0 property codec.
 *
 * One table describes every property (type, the packets it may appear in,
 * the value rule, where it lives in struct mqtt_props), so decoding, sizing
 * and encoding are each a single loop and a new property is one table row.
 * Section numbers and [MQTT-x.y.z-n] tags refer to the OASIS MQTT 5.0
 * standard.
 */
#include "mqtt/mqtt_props.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#include "mqtt/mqtt_topic.h"

const char *mqtt_props_strerror(int err)
{
    switch (err) {
    case MQTT_PROPS_OK:
        return "success";
    case MQTT_PROPS_E_MALFORMED:
        return "malformed properties";
    case MQTT_PROPS_E_PROTOCOL:
        return "properties break a protocol rule";
    default:
        return "unknown error";
    }
}

/* ---- The property table (2.2.2.2) --------------------------------------- */

enum prop_type { T_BYTE, T_U16, T_U32, T_VARINT, T_STRING, T_BINARY, T_PAIR };

enum prop_rule {
    R_ANY,
    R_BOOL,    /* 0 or 1 */
    R_NONZERO, /* 0 is a Protocol Error */
    R_TOPIC,   /* a topic name: no wildcards, not empty [MQTT-3.3.2-14] */
};

/* Packet masks: bit n for packet n (enum mqtt_type, AUTH, WILL). */
#define P(n) (UINT32_C(1) << (n))
#define CONNECT P(MQTT_CONNECT)
#define CONNACK P(MQTT_CONNACK)
#define PUBLISH P(MQTT_PUBLISH)
#define ACKS (P(MQTT_PUBACK) | P(MQTT_PUBREC) | P(MQTT_PUBREL) | P(MQTT_PUBCOMP))
#define SUBSCRIBE P(MQTT_SUBSCRIBE)
#define SUBACK P(MQTT_SUBACK)
#define UNSUBSCRIBE P(MQTT_UNSUBSCRIBE)
#define UNSUBACK P(MQTT_UNSUBACK)
#define DISCONNECT P(MQTT_DISCONNECT)
#define AUTH P(MQTT_PROPS_AUTH)
#define WILL P(MQTT_PROPS_WILL)
#define ANY_WITH_PROPS                                                                      \
    (CONNECT | CONNACK | PUBLISH | WILL | ACKS | SUBSCRIBE | SUBACK | UNSUBSCRIBE | UNSUBACK | \
     DISCONNECT | AUTH)

/* Offset of a field; the repeatable properties have none. */
#define F(field) offsetof(struct mqtt_props, field)
#define NO_FIELD 0

struct prop_def {
    uint8_t type, rule;
    uint32_t allowed; /* packets it may appear in; 0 = unknown identifier */
    uint32_t repeat;  /* packets it may appear in more than once */
    uint16_t field;
};

static const struct prop_def defs[MQTT_PROP_LAST + 1] = {
    [MQTT_PROP_PAYLOAD_FORMAT] = {T_BYTE, R_BOOL, PUBLISH | WILL, 0, F(payload_format)},
    [MQTT_PROP_MESSAGE_EXPIRY] = {T_U32, R_ANY, PUBLISH | WILL, 0, F(message_expiry)},
    [MQTT_PROP_CONTENT_TYPE] = {T_STRING, R_ANY, PUBLISH | WILL, 0, F(content_type)},
    [MQTT_PROP_RESPONSE_TOPIC] = {T_STRING, R_TOPIC, PUBLISH | WILL, 0, F(response_topic)},
    [MQTT_PROP_CORRELATION_DATA] = {T_BINARY, R_ANY, PUBLISH | WILL, 0, F(correlation_data)},
    /* A PUBLISH to a subscriber carries one per matching subscription
     * (3.3.2.3.8); a SUBSCRIBE sets at most one (3.8.2.1.2). */
    [MQTT_PROP_SUBSCRIPTION_ID] = {T_VARINT, R_NONZERO, PUBLISH | SUBSCRIBE, PUBLISH, NO_FIELD},
    [MQTT_PROP_SESSION_EXPIRY] = {T_U32, R_ANY, CONNECT | CONNACK | DISCONNECT, 0,
                                  F(session_expiry)},
    [MQTT_PROP_ASSIGNED_CLIENT_ID] = {T_STRING, R_ANY, CONNACK, 0, F(assigned_client_id)},
    [MQTT_PROP_SERVER_KEEP_ALIVE] = {T_U16, R_ANY, CONNACK, 0, F(server_keep_alive)},
    [MQTT_PROP_AUTH_METHOD] = {T_STRING, R_ANY, CONNECT | CONNACK | AUTH, 0, F(auth_method)},
    [MQTT_PROP_AUTH_DATA] = {T_BINARY, R_ANY, CONNECT | CONNACK | AUTH, 0, F(auth_data)},
    [MQTT_PROP_REQUEST_PROBLEM_INFO] = {T_BYTE, R_BOOL, CONNECT, 0, F(request_problem_info)},
    [MQTT_PROP_WILL_DELAY] = {T_U32, R_ANY, WILL, 0, F(will_delay)},
    [MQTT_PROP_REQUEST_RESPONSE_INFO] = {T_BYTE, R_BOOL, CONNECT, 0, F(request_response_info)},
    [MQTT_PROP_RESPONSE_INFO] = {T_STRING, R_ANY, CONNACK, 0, F(response_info)},
    [MQTT_PROP_SERVER_REFERENCE] = {T_STRING, R_ANY, CONNACK | DISCONNECT, 0,
                                    F(server_reference)},
    [MQTT_PROP_REASON_STRING] = {T_STRING, R_ANY,
                                 CONNACK | ACKS | SUBACK | UNSUBACK | DISCONNECT | AUTH, 0,
                                 F(reason_string)},
    [MQTT_PROP_RECEIVE_MAX] = {T_U16, R_NONZERO, CONNECT | CONNACK, 0, F(receive_max)},
    [MQTT_PROP_TOPIC_ALIAS_MAX] = {T_U16, R_ANY, CONNECT | CONNACK, 0, F(topic_alias_max)},
    [MQTT_PROP_TOPIC_ALIAS] = {T_U16, R_ANY, PUBLISH, 0, F(topic_alias)},
    [MQTT_PROP_MAX_QOS] = {T_BYTE, R_BOOL, CONNACK, 0, F(max_qos)},
    [MQTT_PROP_RETAIN_AVAILABLE] = {T_BYTE, R_BOOL, CONNACK, 0, F(retain_available)},
    [MQTT_PROP_USER] = {T_PAIR, R_ANY, ANY_WITH_PROPS, ANY_WITH_PROPS, NO_FIELD},
    [MQTT_PROP_MAX_PACKET_SIZE] = {T_U32, R_NONZERO, CONNECT | CONNACK, 0, F(max_packet_size)},
    [MQTT_PROP_WILDCARD_SUB_AVAILABLE] = {T_BYTE, R_BOOL, CONNACK, 0, F(wildcard_sub_available)},
    [MQTT_PROP_SUBSCRIPTION_ID_AVAILABLE] = {T_BYTE, R_BOOL, CONNACK, 0,
                                             F(subscription_id_available)},
    [MQTT_PROP_SHARED_SUB_AVAILABLE] = {T_BYTE, R_BOOL, CONNACK, 0, F(shared_sub_available)},
};

/* ---- Decoding ------------------------------------------------------------ */

/* A Variable Byte Integer (1.5.5). Non-minimal encodings are refused: the
 * spec says the minimum number of bytes MUST be used [MQTT-1.5.5-1], and
 * refusing them makes every valid block's encoding unique, so re-encoding a
 * decoded block gives back its exact size. */
static int get_varint(const uint8_t **pp, const uint8_t *end, uint32_t *v)
{
    bool non_minimal;
    int n = mqtt_decode_varint(*pp, (size_t)(end - *pp), v, &non_minimal);
    if (n <= 0 || non_minimal)
        return MQTT_PROPS_E_MALFORMED;
    *pp += n;
    return MQTT_PROPS_OK;
}

static bool get_fixed(const uint8_t **pp, const uint8_t *end, unsigned n, uint32_t *v)
{
    if ((size_t)(end - *pp) < n)
        return false;
    uint32_t x = 0;
    for (unsigned i = 0; i < n; i++)
        x = x << 8 | (*pp)[i];
    *pp += n;
    *v = x;
    return true;
}

/* A two-byte length then that many bytes (1.5.4, 1.5.6). */
static bool get_bytes(const uint8_t **pp, const uint8_t *end, struct mqtt_bytes *b)
{
    uint32_t n;
    if (!get_fixed(pp, end, 2, &n) || (size_t)(end - *pp) < n)
        return false;
    b->ptr = *pp;
    b->len = n;
    *pp += n;
    return true;
}

/* A UTF-8 Encoded String (1.5.4): ill-formed UTF-8 or U+0000 in it makes
 * the packet Malformed. */
static bool get_string(const uint8_t **pp, const uint8_t *end, struct mqtt_bytes *b)
{
    return get_bytes(pp, end, b) && mqtt_utf8_valid(b->ptr, b->len);
}

struct value {
    uint32_t num;
    struct mqtt_bytes a, b; /* string or binary; b is a pair's value */
};

/* Reads one value of the given type and checks its form; the ranges come
 * later, as they depend on the property rather than the type. */
static int get_value(const uint8_t **pp, const uint8_t *end, uint8_t type, struct value *v)
{
    static const uint8_t width[] = {[T_BYTE] = 1, [T_U16] = 2, [T_U32] = 4};
    bool ok;
    switch (type) {
    case T_BYTE:
    case T_U16:
    case T_U32:
        ok = get_fixed(pp, end, width[type], &v->num);
        break;
    case T_VARINT:
        return get_varint(pp, end, &v->num);
    case T_BINARY:
        ok = get_bytes(pp, end, &v->a);
        break;
    case T_STRING:
        ok = get_string(pp, end, &v->a);
        break;
    default: /* T_PAIR */
        ok = get_string(pp, end, &v->a) && get_string(pp, end, &v->b);
        break;
    }
    return ok ? MQTT_PROPS_OK : MQTT_PROPS_E_MALFORMED;
}

static bool value_in_range(uint8_t rule, const struct value *v)
{
    switch (rule) {
    case R_BOOL:
        return v->num <= 1;
    case R_NONZERO:
        return v->num != 0;
    case R_TOPIC:
        return mqtt_topic_name_valid(v->a.ptr, v->a.len);
    default:
        return true;
    }
}

static void store(struct mqtt_props *out, const struct prop_def *d, const struct value *v)
{
    void *f = (char *)out + d->field;
    switch (d->type) {
    case T_BYTE:
        *(uint8_t *)f = (uint8_t)v->num;
        break;
    case T_U16:
        *(uint16_t *)f = (uint16_t)v->num;
        break;
    case T_U32:
        *(uint32_t *)f = v->num;
        break;
    default: /* T_STRING, T_BINARY */
        *(struct mqtt_bytes *)f = v->a;
        break;
    }
}

/* Extends a repeatable property's raw range over one more occurrence. */
static void add_repeat(struct mqtt_bytes *raw, uint32_t *count, const uint8_t *start,
                       const uint8_t *end)
{
    if ((*count)++ == 0)
        raw->ptr = start;
    raw->len = (size_t)(end - raw->ptr);
}

int mqtt_props_decode(const uint8_t *buf, size_t len, uint8_t packet, struct mqtt_props *out,
                      size_t *consumed)
{
    memset(out, 0, sizeof *out);
    const uint8_t *p = buf, *end = buf + len;
    uint32_t block;
    int rc = get_varint(&p, end, &block);
    if (rc != MQTT_PROPS_OK)
        return rc;
    if ((size_t)(end - p) < block)
        return MQTT_PROPS_E_MALFORMED;
    end = p + block;
    uint32_t pkt = packet <= MQTT_PROPS_WILL ? P(packet) : 0;

    while (p < end) {
        const uint8_t *start = p;
        /* The identifier is a Variable Byte Integer, but every defined one
         * is below 128, so a byte with the continuation bit is unknown. */
        uint8_t id = *p++;
        const struct prop_def *d = id <= MQTT_PROP_LAST ? &defs[id] : NULL;
        if (d == NULL || !(d->allowed & pkt))
            return MQTT_PROPS_E_MALFORMED; /* 2.2.2.2: not valid for its packet */
        struct value v;
        rc = get_value(&p, end, d->type, &v);
        if (rc != MQTT_PROPS_OK)
            return rc;
        if ((out->present & MQTT_PROP_BIT(id)) && !(d->repeat & pkt))
            return MQTT_PROPS_E_PROTOCOL;
        if (!value_in_range(d->rule, &v))
            return MQTT_PROPS_E_PROTOCOL;
        out->present |= MQTT_PROP_BIT(id);
        if (id == MQTT_PROP_USER)
            add_repeat(&out->user_raw, &out->user_count, start, p);
        else if (id == MQTT_PROP_SUBSCRIPTION_ID)
            add_repeat(&out->subid_raw, &out->subid_count, start, p);
        else
            store(out, d, &v);
    }

    /* "It is a Protocol Error to include Authentication Data if there is no
     * Authentication Method" (3.1.2.11.10); CONNACK and AUTH likewise. */
    if ((out->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_DATA)) &&
        !(out->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD)))
        return MQTT_PROPS_E_PROTOCOL;
    *consumed = (size_t)(end - buf);
    return MQTT_PROPS_OK;
}

/* ---- Iterators ----------------------------------------------------------- */

static void iter_init(struct mqtt_props_iter *it, uint8_t id, const struct mqtt_bytes *raw,
                      const void *list, uint32_t count)
{
    it->pos = raw->ptr;
    it->end = raw->len ? raw->ptr + raw->len : raw->ptr; /* NULL + 0 is UB */
    it->list = list;
    it->left = count;
    it->id = id;
}

void mqtt_props_users(const struct mqtt_props *p, struct mqtt_props_iter *it)
{
    iter_init(it, MQTT_PROP_USER, &p->user_raw, p->user_list, p->user_count);
}

void mqtt_props_subids(const struct mqtt_props *p, struct mqtt_props_iter *it)
{
    iter_init(it, MQTT_PROP_SUBSCRIPTION_ID, &p->subid_raw, p->subid_list, p->subid_count);
}

/* Steps over a decoded range to the next occurrence of it->id. The range was
 * validated by mqtt_props_decode(), so every read succeeds. */
static void raw_next(struct mqtt_props_iter *it, struct value *v)
{
    for (;;) {
        uint8_t id = *it->pos++;
        (void)get_value(&it->pos, it->end, defs[id].type, v);
        if (id == it->id)
            return;
    }
}

bool mqtt_props_next_user(struct mqtt_props_iter *it, struct mqtt_user_prop *up)
{
    if (it->left == 0)
        return false;
    if (it->list) {
        const struct mqtt_user_prop *list = it->list;
        *up = *list;
        it->list = list + 1;
    } else {
        struct value v;
        raw_next(it, &v);
        up->name = v.a;
        up->value = v.b;
    }
    it->left--;
    return true;
}

bool mqtt_props_next_subid(struct mqtt_props_iter *it, uint32_t *id)
{
    if (it->left == 0)
        return false;
    if (it->list) {
        const uint32_t *list = it->list;
        *id = *list;
        it->list = list + 1;
    } else {
        struct value v;
        raw_next(it, &v);
        *id = v.num;
    }
    it->left--;
    return true;
}

/* ---- Encoding ------------------------------------------------------------ */

/* Loads a single-use property's value from the struct, the inverse of
 * store(). */
static void load(const struct mqtt_props *p, const struct prop_def *d, struct value *v)
{
    const void *f = (const char *)p + d->field;
    switch (d->type) {
    case T_BYTE:
        v->num = *(const uint8_t *)f;
        break;
    case T_U16:
        v->num = *(const uint16_t *)f;
        break;
    case T_U32:
        v->num = *(const uint32_t *)f;
        break;
    default:
        v->a = *(const struct mqtt_bytes *)f;
        break;
    }
}

static size_t value_size(uint8_t type, const struct value *v)
{
    switch (type) {
    case T_BYTE:
        return 1;
    case T_U16:
        return 2;
    case T_U32:
        return 4;
    case T_VARINT:
        return mqtt_varint_size(v->num);
    case T_PAIR:
        return 4 + v->a.len + v->b.len;
    default: /* T_STRING, T_BINARY */
        return 2 + v->a.len;
    }
}

static uint8_t *put_fixed(uint8_t *out, unsigned n, uint32_t x)
{
    for (unsigned i = n; i-- > 0; x >>= 8)
        out[i] = (uint8_t)x;
    return out + n;
}

static uint8_t *put_bytes(uint8_t *out, const struct mqtt_bytes *b)
{
    assert(b->len <= 0xFFFF);
    out = put_fixed(out, 2, (uint32_t)b->len);
    if (b->len)
        memcpy(out, b->ptr, b->len);
    return out + b->len;
}

static uint8_t *put_value(uint8_t *out, uint8_t type, const struct value *v)
{
    switch (type) {
    case T_BYTE:
        return put_fixed(out, 1, v->num);
    case T_U16:
        return put_fixed(out, 2, v->num);
    case T_U32:
        return put_fixed(out, 4, v->num);
    case T_VARINT:
        return out + mqtt_encode_varint(out, v->num);
    case T_PAIR:
        return put_bytes(put_bytes(out, &v->a), &v->b);
    default: /* T_STRING, T_BINARY */
        return put_bytes(out, &v->a);
    }
}

/* Counts one property and, unless *out is NULL, writes it there. */
static size_t emit(uint8_t **out, uint8_t id, uint8_t type, const struct value *v)
{
    if (*out) {
        **out = id;
        *out = put_value(*out + 1, type, v);
    }
    return 1 + value_size(type, v);
}

/* Visits every property of p in encoding order; sizing (out NULL) and
 * encoding are the same walk, so they cannot disagree. Returns the bytes of
 * the properties, the length varint excluded. */
static size_t walk(const struct mqtt_props *p, uint8_t *out)
{
    size_t n = 0;
    for (uint8_t id = 1; id <= MQTT_PROP_LAST; id++) {
        if (!(p->present & MQTT_PROP_BIT(id)))
            continue;
        const struct prop_def *d = &defs[id];
        struct value v = {0};
        struct mqtt_props_iter it;
        if (id == MQTT_PROP_USER) {
            struct mqtt_user_prop up;
            for (mqtt_props_users(p, &it); mqtt_props_next_user(&it, &up);) {
                v.a = up.name;
                v.b = up.value;
                n += emit(&out, id, d->type, &v);
            }
        } else if (id == MQTT_PROP_SUBSCRIPTION_ID) {
            for (mqtt_props_subids(p, &it); mqtt_props_next_subid(&it, &v.num);)
                n += emit(&out, id, d->type, &v);
        } else {
            load(p, d, &v);
            n += emit(&out, id, d->type, &v);
        }
    }
    return n;
}

size_t mqtt_props_size(const struct mqtt_props *p)
{
    size_t n = walk(p, NULL);
    return mqtt_varint_size((uint32_t)n) + n;
}

size_t mqtt_props_encode(uint8_t *out, const struct mqtt_props *p)
{
    size_t n = walk(p, NULL);
    size_t h = mqtt_encode_varint(out, (uint32_t)n);
    walk(p, out + h);
    return h + n;
}
