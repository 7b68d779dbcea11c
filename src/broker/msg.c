/* msg.c - reference-counted, pre-encoded application messages. */
#include "broker/msg.h"

#include <string.h>

#include "core/mem.h"
#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_props.h"

/* Below this a copy into the connection's buffer is cheaper than holding a
 * reference (an iovec entry, a refcount and a later release). */
#define MSG_SHARE_MIN 512

/* The properties a server forwards unaltered [MQTT-3.3.2-4, -15, -17, -20];
 * Message Expiry is rewritten per copy, Topic Alias and Subscription
 * Identifier belong to one connection. */
#define MSG_FORWARDED                                                                              \
    (MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) | MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) |             \
     MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC) | MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA) |         \
     MQTT_PROP_BIT(MQTT_PROP_USER))

/* Bytes of a pooled block: the struct and a small packet. Larger
 * messages are malloc'd alone. */
#define MSG_POOL_BLOCK 256
/* Blocks a pool keeps of its own loop's releases; beyond, free(). */
#define MSG_POOL_KEEP 1024

static _Thread_local struct msg_pool *msg_pool_here;

void msg_pool_enter(struct msg_pool *p) { msg_pool_here = p; }

void msg_pool_fini(struct msg_pool *p)
{
    struct msg *lists[] = {p->free, p->stash, __atomic_exchange_n(&p->returned, NULL, __ATOMIC_ACQUIRE)};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
        for (struct msg *m = lists[i], *next; m; m = next) {
            next = m->next;
            mem_free(m);
        }
    memset(p, 0, sizeof *p);
    if (msg_pool_here == p)
        msg_pool_here = NULL;
}

static struct msg *msg_alloc(size_t size)
{
    struct msg_pool *p = msg_pool_here;
    if (!p || size > MSG_POOL_BLOCK) {
        struct msg *m = mem_alloc(size);
        m->pool = NULL;
        return m;
    }
    if (!p->stash && __atomic_load_n(&p->returned, __ATOMIC_RELAXED))
        p->stash = __atomic_exchange_n(&p->returned, NULL, __ATOMIC_ACQUIRE);
    struct msg *m;
    if ((m = p->stash)) {
        p->stash = m->next;
    } else if ((m = p->free)) {
        p->free = m->next;
        p->nfree--;
    } else {
        m = mem_alloc(MSG_POOL_BLOCK);
    }
    m->pool = p;
    return m;
}

static void msg_release(struct outq_rc *rc)
{
    struct msg *m = (struct msg *)rc;
    if (m->enc5) /* most messages never meet an MQTT 5 subscriber */
        mem_free(m->enc5);
    struct msg_pool *p = m->pool, *here = msg_pool_here;
    if (!p || !here || (p == here && p->nfree >= MSG_POOL_KEEP)) {
        mem_free(m);
    } else if (p == here) {
        m->next = p->free;
        p->free = m;
        p->nfree++;
    } else {
        m->next = __atomic_load_n(&p->returned, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&p->returned, &m->next, m, true, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED))
            ;
    }
}

struct msg *msg_new(const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                    size_t payload_len, uint8_t qos, bool retain, const struct mqtt_props *props,
                    uint64_t now_ms)
{
    struct mqtt_props fwd;
    size_t props_size = 0; /* with the length varint */
    if (props) {
        fwd = *props;
        fwd.present &= MSG_FORWARDED;
        props_size = mqtt_props_size(&fwd);
    }
    uint32_t rl = (uint32_t)(2 + topic_len + payload_len);
    size_t hdr = 1 + mqtt_varint_size(rl);
    struct msg *m = msg_alloc(sizeof *m + hdr + rl + props_size);
    m->rc.refs = 1;
    m->rc.atomic = false;
    m->rc.release = msg_release;
    m->enc_len = (uint32_t)(hdr + rl);
    m->payload_len = (uint32_t)payload_len;
    m->props_len = 0;
    m->topic_len = (uint16_t)topic_len;
    m->hdr_len = (uint8_t)hdr;
    m->qos = qos;
    m->retain = retain;
    m->expires_ms = 0;
    m->enc5 = NULL;
    m->enc5_len = 0;
    m->hdr5_len = 0;
    m->plog_id = 0;
    uint8_t *p = m->enc;
    *p++ = MQTT_PUBLISH << 4;
    p += mqtt_encode_varint(p, rl);
    *p++ = (uint8_t)(topic_len >> 8);
    *p++ = (uint8_t)topic_len;
    memcpy(p, topic, topic_len);
    if (payload_len)
        memcpy(p + topic_len, payload, payload_len);
    if (props) {
        /* Stored without their length, which each copy writes anew. */
        uint8_t *at = m->enc + m->enc_len;
        mqtt_props_encode(at, &fwd);
        uint32_t n;
        bool non_minimal;
        int h = mqtt_decode_varint(at, props_size, &n, &non_minimal);
        memmove(at, at + h, n);
        m->props_len = n;
        if (props->present & MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY)) {
            m->expires_ms = now_ms + (uint64_t)props->message_expiry * 1000;
            if (m->expires_ms == 0)
                m->expires_ms = 1; /* 0 would mean "never" */
        }
    }
    return m;
}

bool msg_props_decode(const uint8_t *props, uint32_t len, struct mqtt_props *out, uint8_t **buf)
{
    *buf = NULL;
    if (!len)
        return false;
    /* The decoder reads the length first: put it back. */
    *buf = mem_alloc((size_t)len + 4);
    size_t n = mqtt_encode_varint(*buf, len), used;
    memcpy(*buf + n, props, len);
    if (mqtt_props_decode(*buf, n + len, MQTT_PUBLISH, out, &used) == MQTT_PROPS_OK)
        return true;
    mem_free(*buf);
    *buf = NULL;
    return false;
}

/* Appends a PUBLISH from a stored QoS 0 encoding of m: enc[0..enc_len) is
 * the fixed header (hdr_len bytes), the topic and the rest, the rest being
 * the payload (MQTT 3.1.1) or the property block and the payload (MQTT 5).
 * Always inlined: it is the MQTT 3.1.1 hot path, where a call passing nine
 * arguments cost a twentieth of a delivery. */
static inline __attribute__((always_inline)) void
msg_write_encoded(struct msg *m, const uint8_t *enc, uint32_t enc_len, uint8_t hdr_len, struct outq *q,
                  uint8_t qos, uint16_t packet_id, bool dup, bool retain)
{
    /* DUP means nothing at QoS 0, and the spec forbids it there. */
    uint8_t first = (uint8_t)(MQTT_PUBLISH << 4 | (dup && qos ? 0x08 : 0) | qos << 1 | (retain ? 1 : 0));
    bool share = m->payload_len >= MSG_SHARE_MIN;
    if (qos == 0) {
        /* The stored encoding is this packet but for the first byte. */
        if (!share) {
            uint8_t *p = outq_reserve(q, enc_len);
            memcpy(p, enc, enc_len);
            p[0] = first;
        } else {
            *outq_reserve(q, 1) = first;
            outq_share(q, &m->rc, enc + 1, enc_len - 1);
        }
        return;
    }
    /* QoS 1 and 2 carry a packet id between topic and the rest. */
    uint32_t topic_end = hdr_len + 2u + m->topic_len;
    uint32_t rest = enc_len - topic_end;
    uint32_t rl = 2u + m->topic_len + 2u + rest;
    size_t head = 1 + mqtt_varint_size(rl) + 2 + m->topic_len + 2;
    uint8_t *p = outq_reserve(q, share ? head : head + rest);
    *p++ = first;
    p += mqtt_encode_varint(p, rl);
    memcpy(p, enc + hdr_len, 2u + m->topic_len);
    p += 2u + m->topic_len;
    *p++ = (uint8_t)(packet_id >> 8);
    *p++ = (uint8_t)packet_id;
    if (share)
        outq_share(q, &m->rc, enc + topic_end, rest);
    else
        memcpy(p, enc + topic_end, rest);
}

void msg_write_publish(struct msg *m, struct outq *q, uint8_t qos, uint16_t packet_id, bool dup,
                       bool retain)
{
    msg_write_encoded(m, m->enc, m->enc_len, m->hdr_len, q, qos, packet_id, dup, retain);
}

/* ---- MQTT 5 ---------------------------------------------------------------- */

/* Seconds left of the Message Expiry Interval, rounded up. */
static uint32_t msg_expiry_left(const struct msg *m, uint64_t now_ms)
{
    return m->expires_ms > now_ms ? (uint32_t)((m->expires_ms - now_ms + 999) / 1000) : 0;
}

/* Bytes of the property block's content: the per-copy ones, then the
 * stored ones. */
static uint32_t msg_props5_len(const struct msg *m, const struct msg_copy5 *x)
{
    uint32_t n = m->props_len;
    if (x->topic_alias)
        n += 3;
    if (m->expires_ms)
        n += 5;
    for (uint32_t i = 0; i < x->nsub_ids; i++)
        n += 1 + (uint32_t)mqtt_varint_size(x->sub_ids[i]);
    return n;
}

/* Remaining Length of the PUBLISH up to the payload (topic, packet id and
 * properties), given the property block's content length. */
static uint32_t msg_head5_len(const struct msg *m, uint8_t qos, const struct msg_copy5 *x,
                              uint32_t props)
{
    return 2u + (x->alias_only ? 0u : m->topic_len) + (qos ? 2u : 0u) +
           (uint32_t)mqtt_varint_size(props) + props;
}

size_t msg_publish5_size(const struct msg *m, uint8_t qos, const struct msg_copy5 *x)
{
    uint32_t rl = msg_head5_len(m, qos, x, msg_props5_len(m, x)) + m->payload_len;
    return 1 + mqtt_varint_size(rl) + rl;
}

static uint8_t *put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return p + 2;
}

/* Writes an MQTT 5 PUBLISH of m up to its payload: the fixed header for
 * Remaining Length rl, topic (or none, for a known alias), packet id,
 * property length and properties, per-copy ones first. Returns the end. */
static uint8_t *msg_put_head5(uint8_t *p, const struct msg *m, uint8_t first, uint32_t rl,
                              uint8_t qos, uint16_t packet_id, uint32_t props,
                              const struct msg_copy5 *x)
{
    *p++ = first;
    p += mqtt_encode_varint(p, rl);
    if (x->alias_only) {
        p = put_u16(p, 0);
    } else {
        memcpy(p, m->enc + m->hdr_len, 2u + m->topic_len);
        p += 2u + m->topic_len;
    }
    if (qos)
        p = put_u16(p, packet_id);
    p += mqtt_encode_varint(p, props);
    if (x->topic_alias) {
        *p++ = MQTT_PROP_TOPIC_ALIAS;
        p = put_u16(p, x->topic_alias);
    }
    if (m->expires_ms) {
        uint32_t left = msg_expiry_left(m, x->now_ms);
        *p++ = MQTT_PROP_MESSAGE_EXPIRY;
        p = put_u16(put_u16(p, (uint16_t)(left >> 16)), (uint16_t)left);
    }
    for (uint32_t i = 0; i < x->nsub_ids; i++) {
        *p++ = MQTT_PROP_SUBSCRIPTION_ID;
        p += mqtt_encode_varint(p, x->sub_ids[i]);
    }
    memcpy(p, msg_props(m), m->props_len);
    return p + m->props_len;
}

/* The MQTT 5 QoS 0 encoding with nothing added per copy, built when the
 * first MQTT 5 subscriber needs it and shared by all such copies after,
 * as enc[] is by MQTT 3.1.1 ones. */
static const struct msg_copy5 msg_plain5;

/* enc5's sizes, set before it is built (by msg_share, before other
 * threads see m, for a shared message). */
static void msg_size_enc5(struct msg *m)
{
    uint32_t rl = msg_head5_len(m, 0, &msg_plain5, m->props_len) + m->payload_len;
    m->hdr5_len = (uint8_t)(1 + mqtt_varint_size(rl));
    m->enc5_len = m->hdr5_len + rl;
}

/* A shared message's enc5 may be built by two loops at once: the first
 * to publish its copy wins, the other frees its own. */
static uint8_t *msg_build_enc5(struct msg *m)
{
    if (!m->rc.atomic)
        msg_size_enc5(m);
    uint32_t rl = m->enc5_len - m->hdr5_len;
    uint8_t *e = mem_alloc(m->enc5_len);
    uint8_t *p = msg_put_head5(e, m, MQTT_PUBLISH << 4, rl, 0, 0, m->props_len, &msg_plain5);
    memcpy(p, msg_payload(m), m->payload_len);
    uint8_t *none = NULL;
    if (__atomic_compare_exchange_n(&m->enc5, &none, e, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
        return e;
    mem_free(e);
    return none;
}

void msg_share(struct msg *m)
{
    if (m->rc.atomic)
        return;
    if (!m->enc5)
        msg_size_enc5(m);
    m->rc.atomic = true;
}

void msg_write_publish5(struct msg *m, struct outq *q, uint8_t qos, uint16_t packet_id, bool dup,
                        bool retain, const struct msg_copy5 *x)
{
    if (!x->topic_alias && !x->nsub_ids && !m->expires_ms) {
        uint8_t *enc5 = __atomic_load_n(&m->enc5, __ATOMIC_ACQUIRE);
        if (!enc5)
            enc5 = msg_build_enc5(m);
        msg_write_encoded(m, enc5, m->enc5_len, m->hdr5_len, q, qos, packet_id, dup, retain);
        return;
    }
    uint8_t first = (uint8_t)(MQTT_PUBLISH << 4 | (dup && qos ? 0x08 : 0) | qos << 1 | (retain ? 1 : 0));
    bool share = m->payload_len >= MSG_SHARE_MIN;
    uint32_t props = msg_props5_len(m, x);
    uint32_t head_rl = msg_head5_len(m, qos, x, props);
    uint32_t rl = head_rl + m->payload_len;
    size_t head = 1 + mqtt_varint_size(rl) + head_rl;
    uint8_t *p = outq_reserve(q, share ? head : head + m->payload_len);
    p = msg_put_head5(p, m, first, rl, qos, packet_id, props, x);
    if (share)
        outq_share(q, &m->rc, msg_payload(m), m->payload_len);
    else
        memcpy(p, msg_payload(m), m->payload_len);
}
