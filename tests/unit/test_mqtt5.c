/* test_mqtt5.c - unit tests for the MQTT 5.0 packet codec (mqtt5.c): each
 * packet checked against hand-built wire bytes, round trips with and without
 * properties, the short forms of the acknowledgements, DISCONNECT and AUTH,
 * and the error paths, including truncation at every length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mqtt/mqtt5.h"

/* ---- Packet builder ----------------------------------------------------- */

struct buf {
    uint8_t b[4096];
    size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
    assert_true(b->n + n <= sizeof b->b);
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

static void put8(struct buf *b, uint8_t v) { put(b, &v, 1); }

static void put16(struct buf *b, uint16_t v)
{
    put8(b, (uint8_t)(v >> 8));
    put8(b, (uint8_t)v);
}

static void put_var(struct buf *b, uint32_t v)
{
    do {
        uint8_t d = v & 0x7F;
        v >>= 7;
        put8(b, v ? (uint8_t)(d | 0x80) : d);
    } while (v);
}

#define PUT(b, lit) put((b), (lit), sizeof(lit) - 1)
#define PUT_STR(b, lit) (put16((b), sizeof(lit) - 1), PUT((b), (lit)))

/* A property block: Property Length then the given bytes. */
static void put_props(struct buf *b, const struct buf *props)
{
    put_var(b, (uint32_t)props->n);
    put(b, props->b, props->n);
}

/* Wraps body in a fixed header with a minimal Remaining Length. */
static void wrap(struct buf *pkt, uint8_t first, const struct buf *body)
{
    pkt->n = 0;
    put8(pkt, first);
    put_var(pkt, (uint32_t)body->n);
    put(pkt, body->b, body->n);
}

static bool bytes_eq(struct mqtt_bytes a, const char *s, size_t n)
{
    return a.len == n && (n == 0 || memcmp(a.ptr, s, n) == 0);
}

#define BYTES_EQ(a, lit) bytes_eq((a), (lit), sizeof(lit) - 1)
#define BYTES(lit) ((struct mqtt_bytes){(const uint8_t *)(lit), sizeof(lit) - 1})

/* Frames a whole packet and returns a pointer to its body. */
static const uint8_t *frame_whole(const uint8_t *pkt, size_t n, struct mqtt_header *h)
{
    assert_int_equal(mqtt5_frame(pkt, n, 0, h), (int)n);
    assert_int_equal(h->header_len + h->body_len, n);
    return pkt + h->header_len;
}

static void assert_same(const uint8_t *a, size_t an, const struct buf *b)
{
    assert_int_equal(an, b->n);
    assert_memory_equal(a, b->b, an);
}

/* One property block reused below: a Reason String and a User Property,
 * allowed in every acknowledgement, DISCONNECT and AUTH. */
static void reason_props(struct buf *p)
{
    p->n = 0;
    put8(p, MQTT_PROP_REASON_STRING);
    PUT_STR(p, "why");
    put8(p, MQTT_PROP_USER);
    PUT_STR(p, "k");
    PUT_STR(p, "v");
}

/* Every body prefix of the packet cut short at `from` or later, up to the
 * whole body, fails to decode; prefixes that are valid short forms are left
 * out by starting `from` past them. */
typedef int (*decoder)(const uint8_t *body, size_t len);

static void assert_truncations_fail(decoder dec, const struct buf *body, size_t from)
{
    for (size_t n = from; n < body->n; n++) {
        int rc = dec(body->b, n);
        if (rc == MQTT_OK)
            fail_msg("prefix of %zu bytes out of %zu decoded", n, body->n);
    }
    assert_int_equal(dec(body->b, body->n), MQTT_OK);
}

/* ---- Reason codes, errors, framing ---------------------------------------- */

static void test_reason_str(void **state)
{
    (void)state;
    assert_string_equal(mqtt5_reason_str(MQTT5_RC_SUCCESS), "Success");
    assert_string_equal(mqtt5_reason_str(MQTT5_RC_DISCONNECT_WITH_WILL),
                        "Disconnect with Will Message");
    assert_string_equal(mqtt5_reason_str(MQTT5_RC_PROTOCOL_ERROR), "Protocol Error");
    assert_string_equal(mqtt5_reason_str(MQTT5_RC_WILDCARD_SUBS_NOT_SUPPORTED),
                        "Wildcard Subscriptions not supported");
    assert_string_equal(mqtt5_reason_str(0x03), "unknown reason code");
    assert_string_equal(mqtt5_reason_str(0xFF), "unknown reason code");
    /* Every named code has a name. */
    static const uint8_t named[] = {0x00, 0x01, 0x02, 0x04, 0x10, 0x11, 0x18, 0x19};
    for (size_t i = 0; i < sizeof named; i++)
        assert_string_not_equal(mqtt5_reason_str(named[i]), "unknown reason code");
    for (unsigned rc = 0x80; rc <= 0xA2; rc++)
        assert_string_not_equal(mqtt5_reason_str((uint8_t)rc), "unknown reason code");
}

static void test_errors(void **state)
{
    (void)state;
    assert_string_equal(mqtt5_strerror(MQTT5_E_PROTOCOL_ERROR), "protocol error");
    assert_string_equal(mqtt5_strerror(MQTT5_E_REASON), "reason code not allowed in this packet");
    assert_string_equal(mqtt5_strerror(MQTT_E_MALFORMED), "malformed packet");
    assert_int_equal(mqtt5_err_reason(MQTT_OK), 0x00);
    assert_int_equal(mqtt5_err_reason(MQTT_E_MALFORMED), 0x81);
    assert_int_equal(mqtt5_err_reason(MQTT_E_UTF8), 0x81);
    assert_int_equal(mqtt5_err_reason(MQTT5_E_REASON), 0x81);
    assert_int_equal(mqtt5_err_reason(MQTT5_E_PROTOCOL_ERROR), 0x82);
    assert_int_equal(mqtt5_err_reason(MQTT_E_PACKET_ID), 0x82);
    assert_int_equal(mqtt5_err_reason(MQTT_E_TOO_LARGE), 0x95);
}

static void test_frame(void **state)
{
    (void)state;
    struct mqtt_header h;
    static const uint8_t auth[] = {0xF0, 0x00};
    static const uint8_t auth_flags[] = {0xF1, 0x00};
    static const uint8_t long_rl[] = {0xE0, 0x80, 0x00}; /* 0 in two bytes */
    static const uint8_t rl_128[] = {0x30, 0x80, 0x01};

    assert_int_equal(mqtt5_frame(auth, 2, 0, &h), 2);
    assert_int_equal(h.type, MQTT5_AUTH);
    assert_int_equal(mqtt5_frame(auth_flags, 2, 0, &h), MQTT_E_FLAGS);
    assert_int_equal(mqtt5_frame(long_rl, 3, 0, &h), MQTT_E_MALFORMED);
    assert_int_equal(mqtt5_frame(rl_128, 3, 0, &h), 0); /* needs 128 more */
    assert_int_equal(h.body_len, 128);
    assert_int_equal(mqtt5_frame(rl_128, 3, 100, &h), MQTT_E_TOO_LARGE);
    assert_int_equal(mqtt5_frame(auth, 0, 0, &h), 0);

    /* The 3.1.1 framing is unchanged: no AUTH, long lengths accepted. */
    assert_int_equal(mqtt_frame(auth, 2, 0, &h), MQTT_E_TYPE);
    assert_int_equal(mqtt_frame(long_rl, 3, 0, &h), 3);
}

/* ---- CONNECT -------------------------------------------------------------- */

static int dec_connect(const uint8_t *b, size_t n)
{
    struct mqtt5_connect c;
    return mqtt5_decode_connect(b, n, &c);
}

static void connect_head(struct buf *b, uint8_t level, uint8_t flags)
{
    b->n = 0;
    PUT_STR(b, "MQTT");
    put8(b, level);
    put8(b, flags);
    put16(b, 60);
}

static void test_connect_minimal(void **state)
{
    (void)state;
    struct buf body = {0}, pkt, empty = {0};
    connect_head(&body, 5, 0x02);
    put_props(&body, &empty);
    PUT_STR(&body, "c1");
    wrap(&pkt, 0x10, &body);

    struct mqtt_header h;
    struct mqtt5_connect c;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_connect(b, h.body_len, &c), MQTT_OK);
    assert_int_equal(c.protocol_level, 5);
    assert_true(c.clean_start);
    assert_int_equal(c.keepalive, 60);
    assert_int_equal(c.props.present, 0);
    assert_true(BYTES_EQ(c.client_id, "c1"));
    assert_false(c.has_will || c.has_username || c.has_password);

    uint8_t out[256];
    assert_int_equal(mqtt5_connect_size(&c), pkt.n);
    assert_same(out, mqtt5_encode_connect(out, &c), &pkt);
    assert_truncations_fail(dec_connect, &body, 0);
}

static void test_connect_full(void **state)
{
    (void)state;
    struct buf body = {0}, pkt, props = {0}, will = {0};
    put8(&props, MQTT_PROP_SESSION_EXPIRY);
    put(&props, "\x00\x00\x0e\x10", 4);
    put8(&props, MQTT_PROP_RECEIVE_MAX);
    put16(&props, 20);
    /* Properties in ascending identifier order, as the encoder writes them. */
    put8(&will, MQTT_PROP_PAYLOAD_FORMAT);
    put8(&will, 1);
    put8(&will, MQTT_PROP_WILL_DELAY);
    put(&will, "\x00\x00\x00\x05", 4);
    /* username, password, will retain, will QoS 1, will; no clean start */
    connect_head(&body, 5, 0x80 | 0x40 | 0x20 | 0x08 | 0x04);
    put_props(&body, &props);
    PUT_STR(&body, "dev");
    put_props(&body, &will);
    PUT_STR(&body, "last/will");
    PUT_STR(&body, "gone");
    PUT_STR(&body, "user");
    PUT_STR(&body, "pw");
    wrap(&pkt, 0x10, &body);

    struct mqtt_header h;
    struct mqtt5_connect c;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_connect(b, h.body_len, &c), MQTT_OK);
    assert_false(c.clean_start);
    assert_int_equal(c.props.session_expiry, 3600);
    assert_int_equal(c.props.receive_max, 20);
    assert_true(c.has_will);
    assert_int_equal(c.will_qos, 1);
    assert_true(c.will_retain);
    assert_int_equal(c.will_props.will_delay, 5);
    assert_int_equal(c.will_props.payload_format, 1);
    assert_true(BYTES_EQ(c.will_topic, "last/will"));
    assert_true(BYTES_EQ(c.will_payload, "gone"));
    assert_true(BYTES_EQ(c.username, "user"));
    assert_true(BYTES_EQ(c.password, "pw"));

    uint8_t out[256];
    assert_int_equal(mqtt5_connect_size(&c), pkt.n);
    assert_same(out, mqtt5_encode_connect(out, &c), &pkt);
    assert_truncations_fail(dec_connect, &body, 0);
}

static void test_connect_password_alone(void **state)
{
    (void)state;
    /* MQTT 5 drops 3.1.1's rule that a password needs a user name. */
    struct buf body = {0}, empty = {0};
    connect_head(&body, 5, 0x40);
    put_props(&body, &empty);
    PUT_STR(&body, "");
    PUT_STR(&body, "token");
    struct mqtt5_connect c;
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_OK);
    assert_false(c.has_username);
    assert_true(BYTES_EQ(c.password, "token"));
    assert_int_equal(c.client_id.len, 0);
}

static void test_connect_errors(void **state)
{
    (void)state;
    struct buf body, empty = {0}, props = {0};
    struct mqtt5_connect c;

    connect_head(&body, 4, 0x02); /* a 3.1.1 client */
    put_props(&body, &empty);
    PUT_STR(&body, "c");
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_VERSION);
    assert_int_equal(c.protocol_level, 4);

    body.n = 0;
    PUT_STR(&body, "MQTX");
    put8(&body, 5);
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_PROTOCOL);
    /* "MQIsdp" is MQTT 3.1 at level 3 (mqtt_codec's), at level 5 nothing:
     * neither is decoded as MQTT 5. */
    static const uint8_t mqisdp_levels[] = {3, 5};
    for (size_t i = 0; i < sizeof mqisdp_levels; i++) {
        body.n = 0;
        PUT_STR(&body, "MQIsdp");
        put8(&body, mqisdp_levels[i]);
        put8(&body, 0x02);
        put16(&body, 60);
        put_props(&body, &empty);
        PUT_STR(&body, "c");
        assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_VERSION);
        assert_int_equal(c.protocol_level, mqisdp_levels[i]);
    }

    connect_head(&body, 5, 0x01); /* reserved bit */
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_FLAGS);
    connect_head(&body, 5, 0x1C); /* will QoS 3 */
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_QOS);
    connect_head(&body, 5, 0x08); /* will QoS without a will */
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_QOS);
    connect_head(&body, 5, 0x20); /* will retain without a will */
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_FLAGS);

    /* A Topic Alias has no place in CONNECT. */
    put8(&props, MQTT_PROP_TOPIC_ALIAS);
    put16(&props, 1);
    connect_head(&body, 5, 0x02);
    put_props(&body, &props);
    PUT_STR(&body, "c");
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_MALFORMED);

    /* Nor a Session Expiry among the will properties. */
    props.n = 0;
    put8(&props, MQTT_PROP_SESSION_EXPIRY);
    put(&props, "\0\0\0\1", 4);
    connect_head(&body, 5, 0x04);
    put_props(&body, &empty);
    PUT_STR(&body, "c");
    put_props(&body, &props);
    PUT_STR(&body, "t");
    PUT_STR(&body, "m");
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_MALFORMED);

    /* Twice the same single-use property is a Protocol Error. */
    props.n = 0;
    put8(&props, MQTT_PROP_RECEIVE_MAX);
    put16(&props, 1);
    put8(&props, MQTT_PROP_RECEIVE_MAX);
    put16(&props, 2);
    connect_head(&body, 5, 0x02);
    put_props(&body, &props);
    PUT_STR(&body, "c");
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT5_E_PROTOCOL_ERROR);

    /* A wildcard in the will topic; trailing garbage. */
    connect_head(&body, 5, 0x04);
    put_props(&body, &empty);
    PUT_STR(&body, "c");
    put_props(&body, &empty);
    PUT_STR(&body, "a/#");
    PUT_STR(&body, "m");
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_TOPIC);
    connect_head(&body, 5, 0x02);
    put_props(&body, &empty);
    PUT_STR(&body, "c");
    put8(&body, 0);
    assert_int_equal(mqtt5_decode_connect(body.b, body.n, &c), MQTT_E_MALFORMED);
}

/* ---- CONNACK -------------------------------------------------------------- */

static int dec_connack(const uint8_t *b, size_t n)
{
    struct mqtt5_connack c;
    return mqtt5_decode_connack(b, n, &c);
}

static void test_connack(void **state)
{
    (void)state;
    struct buf body = {0}, pkt, props = {0};
    put8(&props, MQTT_PROP_ASSIGNED_CLIENT_ID);
    PUT_STR(&props, "auto-1");
    put8(&props, MQTT_PROP_TOPIC_ALIAS_MAX);
    put16(&props, 10);
    put8(&body, 1);
    put8(&body, 0);
    put_props(&body, &props);
    wrap(&pkt, 0x20, &body);

    struct mqtt_header h;
    struct mqtt5_connack c;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_connack(b, h.body_len, &c), MQTT_OK);
    assert_true(c.session_present);
    assert_int_equal(c.reason, 0);
    assert_int_equal(c.props.topic_alias_max, 10);
    assert_true(BYTES_EQ(c.props.assigned_client_id, "auto-1"));
    uint8_t out[64];
    assert_int_equal(mqtt5_connack_size(&c), pkt.n);
    assert_same(out, mqtt5_encode_connack(out, &c), &pkt);
    assert_truncations_fail(dec_connack, &body, 0);

    /* Without properties: flags, reason, a zero Property Length. */
    static const uint8_t refused[] = {0x20, 0x03, 0x00, 0x86, 0x00};
    struct mqtt5_connack r = {.reason = MQTT5_RC_BAD_USERNAME_OR_PASSWORD};
    assert_int_equal(mqtt5_encode_connack(out, &r), sizeof refused);
    assert_memory_equal(out, refused, sizeof refused);
    assert_int_equal(mqtt5_decode_connack(refused + 2, 3, &c), MQTT_OK);
    assert_int_equal(c.reason, 0x86);
    assert_false(c.session_present);
}

static void test_connack_errors(void **state)
{
    (void)state;
    struct mqtt5_connack c;
    static const uint8_t reserved[] = {0x02, 0x00, 0x00};
    static const uint8_t bad_reason[] = {0x00, 0x10, 0x00}; /* a PUBACK code */
    static const uint8_t present_refused[] = {0x01, 0x80, 0x00};
    static const uint8_t topic_alias[] = {0x00, 0x00, 0x03, 0x23, 0x00, 0x01};
    static const uint8_t trailing[] = {0x00, 0x00, 0x00, 0x00};
    assert_int_equal(mqtt5_decode_connack(reserved, 3, &c), MQTT_E_FLAGS);
    assert_int_equal(mqtt5_decode_connack(bad_reason, 3, &c), MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_connack(present_refused, 3, &c), MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_connack(topic_alias, 6, &c), MQTT_E_MALFORMED);
    assert_int_equal(mqtt5_decode_connack(trailing, 4, &c), MQTT_E_MALFORMED);
}

/* ---- PUBLISH -------------------------------------------------------------- */

static int dec_publish_q1(const uint8_t *b, size_t n)
{
    struct mqtt5_publish p;
    return mqtt5_decode_publish(b, n, 0x02, &p);
}

static void test_publish_no_props(void **state)
{
    (void)state;
    static const uint8_t pkt[] = {0x31, 0x07, 0x00, 0x03, 'a', '/', 'b', 0x00, 'x'};
    struct mqtt_header h;
    struct mqtt5_publish p;
    const uint8_t *b = frame_whole(pkt, sizeof pkt, &h);
    assert_int_equal(mqtt5_decode_publish(b, h.body_len, h.flags, &p), MQTT_OK);
    assert_true(p.retain);
    assert_int_equal(p.qos, 0);
    assert_true(BYTES_EQ(p.topic, "a/b"));
    assert_true(BYTES_EQ(p.payload, "x"));
    assert_int_equal(p.props.present, 0);
    uint8_t out[64];
    assert_int_equal(mqtt5_publish_size(&p), sizeof pkt);
    assert_int_equal(mqtt5_encode_publish(out, &p), sizeof pkt);
    assert_memory_equal(out, pkt, sizeof pkt);
}

static void test_publish_props(void **state)
{
    (void)state;
    struct buf body = {0}, pkt, props = {0};
    put8(&props, MQTT_PROP_PAYLOAD_FORMAT);
    put8(&props, 1);
    put8(&props, MQTT_PROP_RESPONSE_TOPIC);
    PUT_STR(&props, "re/ply");
    put8(&props, MQTT_PROP_SUBSCRIPTION_ID);
    put_var(&props, 300);
    put8(&props, MQTT_PROP_USER);
    PUT_STR(&props, "k");
    PUT_STR(&props, "v");
    PUT_STR(&body, "s/1");
    put16(&body, 7);
    put_props(&body, &props);
    PUT(&body, "hello");
    wrap(&pkt, 0x3C, &body); /* DUP, QoS 2 */

    struct mqtt_header h;
    struct mqtt5_publish p;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_publish(b, h.body_len, h.flags, &p), MQTT_OK);
    assert_true(p.dup);
    assert_int_equal(p.qos, 2);
    assert_int_equal(p.packet_id, 7);
    assert_int_equal(p.props.payload_format, 1);
    assert_true(BYTES_EQ(p.props.response_topic, "re/ply"));
    assert_int_equal(p.props.subid_count, 1);
    assert_int_equal(p.props.user_count, 1);
    assert_true(BYTES_EQ(p.payload, "hello"));
    uint8_t out[128];
    assert_int_equal(mqtt5_publish_size(&p), pkt.n);
    assert_same(out, mqtt5_encode_publish(out, &p), &pkt);

    /* Every cut before the payload fails; after it, the payload shrinks. */
    size_t payload_at = body.n - 5;
    for (size_t n = 0; n < payload_at; n++)
        assert_int_not_equal(mqtt5_decode_publish(body.b, n, 0x04, &p), MQTT_OK);
    assert_int_equal(mqtt5_decode_publish(body.b, payload_at, 0x04, &p), MQTT_OK);
    assert_int_equal(p.payload.len, 0);
}

static void test_publish_topic_alias(void **state)
{
    (void)state;
    struct buf body = {0}, props = {0};
    put8(&props, MQTT_PROP_TOPIC_ALIAS);
    put16(&props, 3);
    PUT_STR(&body, "");
    put16(&body, 1);
    put_props(&body, &props); /* and an empty payload */

    /* The empty topic stands for alias 3; resolving it is the caller's. */
    struct mqtt5_publish p;
    assert_int_equal(mqtt5_decode_publish(body.b, body.n, 0x02, &p), MQTT_OK);
    assert_int_equal(p.topic.len, 0);
    assert_int_equal(p.props.topic_alias, 3);
    uint8_t out[64];
    size_t n = mqtt5_encode_publish(out, &p);
    struct buf want;
    wrap(&want, 0x32, &body);
    assert_same(out, n, &want);
    assert_truncations_fail(dec_publish_q1, &body, 0);

    /* Without the alias an empty topic is a Protocol Error. */
    struct buf bare = {0}, empty = {0};
    PUT_STR(&bare, "");
    put_props(&bare, &empty);
    assert_int_equal(mqtt5_decode_publish(bare.b, bare.n, 0, &p), MQTT5_E_PROTOCOL_ERROR);
}

static void test_publish_errors(void **state)
{
    (void)state;
    struct mqtt5_publish p;
    struct buf body = {0}, props = {0}, empty = {0};

    PUT_STR(&body, "t");
    put_props(&body, &empty);
    assert_int_equal(mqtt5_decode_publish(body.b, body.n, 0x06, &p), MQTT_E_QOS);
    assert_int_equal(mqtt5_decode_publish(body.b, body.n, 0x08, &p), MQTT_E_FLAGS);

    body.n = 0;
    PUT_STR(&body, "t");
    put16(&body, 0);
    put_props(&body, &empty);
    assert_int_equal(mqtt5_decode_publish(body.b, body.n, 0x02, &p), MQTT_E_PACKET_ID);

    body.n = 0;
    PUT_STR(&body, "a/+");
    put_props(&body, &empty);
    assert_int_equal(mqtt5_decode_publish(body.b, body.n, 0, &p), MQTT_E_TOPIC);

    /* Session Expiry belongs to CONNECT, CONNACK and DISCONNECT. */
    put8(&props, MQTT_PROP_SESSION_EXPIRY);
    put(&props, "\0\0\0\1", 4);
    body.n = 0;
    PUT_STR(&body, "t");
    put_props(&body, &props);
    assert_int_equal(mqtt5_decode_publish(body.b, body.n, 0, &p), MQTT_E_MALFORMED);

    /* Topic Alias 0 decodes: the receiver answers it with DISCONNECT 0x94
     * Topic Alias invalid [MQTT-3.3.2-8], a connection-level rule. */
    props.n = 0;
    put8(&props, MQTT_PROP_TOPIC_ALIAS);
    put16(&props, 0);
    body.n = 0;
    PUT_STR(&body, "t");
    put_props(&body, &props);
    assert_int_equal(mqtt5_decode_publish(body.b, body.n, 0, &p), MQTT_OK);
    assert_int_equal(p.props.topic_alias, 0);
}

/* ---- PUBACK, PUBREC, PUBREL, PUBCOMP -------------------------------------- */

static int dec_puback(const uint8_t *b, size_t n)
{
    struct mqtt5_ack a;
    return mqtt5_decode_ack(MQTT_PUBACK, b, n, &a);
}

static void test_ack_short_forms(void **state)
{
    (void)state;
    static const enum mqtt_type types[] = {MQTT_PUBACK, MQTT_PUBREC, MQTT_PUBREL, MQTT_PUBCOMP};
    uint8_t out[64];
    struct mqtt5_ack a;
    for (size_t i = 0; i < 4; i++) {
        enum mqtt_type t = types[i];
        uint8_t first = (uint8_t)(t << 4 | (t == MQTT_PUBREL ? 2 : 0));

        /* Remaining Length 2: reason 0, no properties. */
        const uint8_t rl2[] = {first, 0x02, 0x12, 0x34};
        struct mqtt5_ack ok = {.packet_id = 0x1234};
        assert_int_equal(mqtt5_ack_size(&ok), 4);
        assert_int_equal(mqtt5_encode_ack(out, t, &ok), 4);
        assert_memory_equal(out, rl2, 4);
        assert_int_equal(mqtt5_decode_ack(t, rl2 + 2, 2, &a), MQTT_OK);
        assert_int_equal(a.packet_id, 0x1234);
        assert_int_equal(a.reason, 0);
        assert_int_equal(a.props.present, 0);

        /* Remaining Length 3: a reason, no properties. */
        uint8_t code = t <= MQTT_PUBREC ? MQTT5_RC_NO_MATCHING_SUBSCRIBERS
                                        : MQTT5_RC_PACKET_ID_NOT_FOUND;
        const uint8_t rl3[] = {first, 0x03, 0x00, 0x09, code};
        struct mqtt5_ack coded = {.packet_id = 9, .reason = code};
        assert_int_equal(mqtt5_encode_ack(out, t, &coded), 5);
        assert_memory_equal(out, rl3, 5);
        assert_int_equal(mqtt5_decode_ack(t, rl3 + 2, 3, &a), MQTT_OK);
        assert_int_equal(a.reason, code);

        /* Remaining Length 4 with an empty block is also valid; the encoder
         * writes the shorter form. */
        const uint8_t rl4[] = {0x00, 0x09, 0x00, 0x00};
        assert_int_equal(mqtt5_decode_ack(t, rl4, 4, &a), MQTT_OK);
        assert_int_equal(mqtt5_ack_size(&a), 4);
    }
}

static void test_ack_props(void **state)
{
    (void)state;
    struct buf body = {0}, pkt, props;
    reason_props(&props);
    put16(&body, 5);
    put8(&body, MQTT5_RC_PACKET_ID_NOT_FOUND);
    put_props(&body, &props);
    wrap(&pkt, 0x62, &body);

    struct mqtt_header h;
    struct mqtt5_ack a;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_ack(MQTT_PUBREL, b, h.body_len, &a), MQTT_OK);
    assert_int_equal(a.packet_id, 5);
    assert_int_equal(a.reason, 0x92);
    assert_true(BYTES_EQ(a.props.reason_string, "why"));
    assert_int_equal(a.props.user_count, 1);
    uint8_t out[64];
    assert_int_equal(mqtt5_ack_size(&a), pkt.n);
    assert_same(out, mqtt5_encode_ack(out, MQTT_PUBREL, &a), &pkt);

    /* Reason 0 with properties keeps the reason byte. */
    struct mqtt5_ack z = {.packet_id = 5, .props = a.props};
    assert_int_equal(mqtt5_ack_size(&z), pkt.n);

    /* Lengths 2 and 3 are valid short forms; every longer cut fails. */
    body.b[2] = 0x10; /* a PUBACK reason */
    assert_truncations_fail(dec_puback, &body, 4);
    assert_int_equal(dec_puback(body.b, 0), MQTT_E_MALFORMED);
    assert_int_equal(dec_puback(body.b, 1), MQTT_E_MALFORMED);
}

static void test_ack_errors(void **state)
{
    (void)state;
    struct mqtt5_ack a;
    static const uint8_t zero_id[] = {0x00, 0x00};
    static const uint8_t pubrel_bad[] = {0x00, 0x01, 0x10}; /* PUBACK-only code */
    static const uint8_t puback_bad[] = {0x00, 0x01, 0x92}; /* PUBREL-only code */
    static const uint8_t alias[] = {0x00, 0x01, 0x00, 0x03, 0x23, 0x00, 0x01};
    static const uint8_t trailing[] = {0x00, 0x01, 0x00, 0x00, 0xFF};
    assert_int_equal(mqtt5_decode_ack(MQTT_PUBACK, zero_id, 2, &a), MQTT_E_PACKET_ID);
    assert_int_equal(mqtt5_decode_ack(MQTT_PUBREL, pubrel_bad, 3, &a), MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_ack(MQTT_PUBCOMP, pubrel_bad, 3, &a), MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_ack(MQTT_PUBACK, puback_bad, 3, &a), MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_ack(MQTT_PUBREC, puback_bad, 3, &a), MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_ack(MQTT_PUBACK, alias, sizeof alias, &a), MQTT_E_MALFORMED);
    assert_int_equal(mqtt5_decode_ack(MQTT_PUBACK, trailing, sizeof trailing, &a),
                     MQTT_E_MALFORMED);
}

/* ---- SUBSCRIBE, UNSUBSCRIBE ------------------------------------------------ */

static int dec_subscribe(const uint8_t *b, size_t n)
{
    struct mqtt5_subscribe s;
    return mqtt5_decode_subscribe(b, n, &s);
}

static int dec_unsubscribe(const uint8_t *b, size_t n)
{
    struct mqtt5_subscribe s;
    return mqtt5_decode_unsubscribe(b, n, &s);
}

static void test_subscribe(void **state)
{
    (void)state;
    struct buf body = {0}, pkt, props = {0};
    put8(&props, MQTT_PROP_SUBSCRIPTION_ID);
    put_var(&props, 42);
    put16(&body, 11);
    put_props(&body, &props);
    PUT_STR(&body, "a/+");
    put8(&body, 0x01 | MQTT5_SUB_NO_LOCAL | MQTT5_SUB_RETAIN_AS_PUBLISHED | 0x20);
    PUT_STR(&body, "#");
    put8(&body, 0x12); /* QoS 2, Retain Handling 1 */
    wrap(&pkt, 0x82, &body);

    struct mqtt_header h;
    struct mqtt5_subscribe s;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_subscribe(b, h.body_len, &s), MQTT_OK);
    assert_int_equal(s.filters.packet_id, 11);
    assert_int_equal(s.filters.count, 2);
    assert_int_equal(s.props.subid_count, 1);

    struct mqtt_filter_iter it;
    struct mqtt_bytes f[2];
    uint8_t o[2];
    mqtt_filter_iter_init(&it, &s.filters);
    assert_true(mqtt_filter_next(&it, &f[0], &o[0]));
    assert_true(mqtt_filter_next(&it, &f[1], &o[1]));
    assert_false(mqtt_filter_next(&it, &f[1], NULL));
    assert_true(BYTES_EQ(f[0], "a/+"));
    assert_int_equal(o[0] & MQTT5_SUB_QOS, 1);
    assert_true(o[0] & MQTT5_SUB_NO_LOCAL);
    assert_true(o[0] & MQTT5_SUB_RETAIN_AS_PUBLISHED);
    assert_int_equal((o[0] & MQTT5_SUB_RETAIN_HANDLING) >> MQTT5_SUB_RETAIN_HANDLING_SHIFT, 2);
    assert_true(BYTES_EQ(f[1], "#"));
    assert_int_equal(o[1], 0x12);

    uint8_t out[64];
    assert_int_equal(mqtt5_subscribe_size(&s.props, f, 2), pkt.n);
    assert_same(out, mqtt5_encode_subscribe(out, 11, &s.props, f, o, 2), &pkt);

    /* Without properties. */
    struct mqtt_props none = {0};
    static const uint8_t bare[] = {0x82, 0x07, 0x00, 0x01, 0x00, 0x00, 0x01, 'x', 0x00};
    struct mqtt_bytes x = BYTES("x");
    uint8_t zero = 0;
    assert_int_equal(mqtt5_encode_subscribe(out, 1, &none, &x, &zero, 1), sizeof bare);
    assert_memory_equal(out, bare, sizeof bare);
    assert_int_equal(mqtt5_decode_subscribe(bare + 2, sizeof bare - 2, &s), MQTT_OK);

    /* A cut is valid only where an entry ends. */
    size_t first_end = 2 + 3 + 2 + 3 + 1;
    for (size_t n = 0; n < body.n; n++)
        assert_int_equal(dec_subscribe(body.b, n) == MQTT_OK, n == first_end);
}

static void test_subscribe_errors(void **state)
{
    (void)state;
    struct mqtt5_subscribe s;
    struct buf body, props = {0}, empty = {0};
    static const uint8_t bad_options[] = {0x40, 0x80, 0x30, 0x03};
    /* Reserved bit 6, reserved bit 7, Retain Handling 3, QoS 3. */
    static const int want[] = {MQTT_E_MALFORMED, MQTT_E_MALFORMED, MQTT5_E_PROTOCOL_ERROR,
                               MQTT5_E_PROTOCOL_ERROR};
    for (size_t i = 0; i < sizeof bad_options; i++) {
        body.n = 0;
        put16(&body, 1);
        put_props(&body, &empty);
        PUT_STR(&body, "t");
        put8(&body, bad_options[i]);
        assert_int_equal(mqtt5_decode_subscribe(body.b, body.n, &s), want[i]);
    }

    /* Two Subscription Identifiers. */
    put8(&props, MQTT_PROP_SUBSCRIPTION_ID);
    put8(&props, 1);
    put8(&props, MQTT_PROP_SUBSCRIPTION_ID);
    put8(&props, 2);
    body.n = 0;
    put16(&body, 1);
    put_props(&body, &props);
    PUT_STR(&body, "t");
    put8(&body, 0);
    assert_int_equal(mqtt5_decode_subscribe(body.b, body.n, &s), MQTT5_E_PROTOCOL_ERROR);

    /* A Subscription Identifier has no place in UNSUBSCRIBE. */
    props.n = 2;
    body.n = 0;
    put16(&body, 1);
    put_props(&body, &props);
    PUT_STR(&body, "t");
    assert_int_equal(mqtt5_decode_unsubscribe(body.b, body.n, &s), MQTT_E_MALFORMED);

    /* No filters; packet id 0; bad filter. */
    body.n = 0;
    put16(&body, 1);
    put_props(&body, &empty);
    assert_int_equal(mqtt5_decode_subscribe(body.b, body.n, &s), MQTT5_E_PROTOCOL_ERROR);
    assert_int_equal(mqtt5_decode_unsubscribe(body.b, body.n, &s), MQTT5_E_PROTOCOL_ERROR);
    body.b[1] = 0;
    assert_int_equal(mqtt5_decode_subscribe(body.b, body.n, &s), MQTT_E_PACKET_ID);
    body.n = 0;
    put16(&body, 1);
    put_props(&body, &empty);
    PUT_STR(&body, "a/#/b");
    assert_int_equal(mqtt5_decode_unsubscribe(body.b, body.n, &s), MQTT_E_TOPIC);
}

static void test_unsubscribe(void **state)
{
    (void)state;
    struct buf body = {0}, pkt, props = {0};
    put8(&props, MQTT_PROP_USER);
    PUT_STR(&props, "k");
    PUT_STR(&props, "v");
    put16(&body, 3);
    put_props(&body, &props);
    PUT_STR(&body, "a/b");
    PUT_STR(&body, "c/#");
    wrap(&pkt, 0xA2, &body);

    struct mqtt_header h;
    struct mqtt5_subscribe s;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_unsubscribe(b, h.body_len, &s), MQTT_OK);
    assert_int_equal(s.filters.count, 2);
    assert_int_equal(s.props.user_count, 1);
    struct mqtt_bytes f[2] = {BYTES("a/b"), BYTES("c/#")};
    uint8_t out[64];
    assert_int_equal(mqtt5_unsubscribe_size(&s.props, f, 2), pkt.n);
    assert_same(out, mqtt5_encode_unsubscribe(out, 3, &s.props, f, 2), &pkt);

    struct mqtt_props none = {0};
    static const uint8_t bare[] = {0xA2, 0x08, 0x00, 0x03, 0x00, 0x00, 0x03, 'a', '/', 'b'};
    assert_int_equal(mqtt5_encode_unsubscribe(out, 3, &none, f, 1), sizeof bare);
    assert_memory_equal(out, bare, sizeof bare);

    size_t first_end = 2 + 1 + 7 + 5;
    for (size_t n = 0; n < body.n; n++)
        assert_int_equal(dec_unsubscribe(body.b, n) == MQTT_OK, n == first_end);
}

/* ---- SUBACK, UNSUBACK ------------------------------------------------------ */

static int dec_suback(const uint8_t *b, size_t n)
{
    struct mqtt5_suback s;
    return mqtt5_decode_suback(MQTT_SUBACK, b, n, &s);
}

static void test_suback(void **state)
{
    (void)state;
    struct buf body = {0}, pkt, props;
    reason_props(&props);
    put16(&body, 11);
    put_props(&body, &props);
    PUT(&body, "\x01\x80\xA2");
    wrap(&pkt, 0x90, &body);

    struct mqtt_header h;
    struct mqtt5_suback s;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_suback(MQTT_SUBACK, b, h.body_len, &s), MQTT_OK);
    assert_int_equal(s.packet_id, 11);
    assert_int_equal(s.count, 3);
    assert_int_equal(s.codes[2], MQTT5_RC_WILDCARD_SUBS_NOT_SUPPORTED);
    assert_true(BYTES_EQ(s.props.reason_string, "why"));
    uint8_t out[64];
    assert_int_equal(mqtt5_suback_size(&s), pkt.n);
    assert_same(out, mqtt5_encode_suback(out, MQTT_SUBACK, &s), &pkt);
    /* Cuts before the first code fail; each later one is a valid shorter
     * SUBACK. */
    for (size_t n = 0; n < body.n - 2; n++)
        assert_int_not_equal(dec_suback(body.b, n), MQTT_OK);

    /* UNSUBACK without properties. */
    static const uint8_t unsuback[] = {0xB0, 0x05, 0x00, 0x03, 0x00, 0x00, 0x11};
    struct mqtt5_suback u = {.packet_id = 3, .codes = (const uint8_t *)"\x00\x11", .count = 2};
    assert_int_equal(mqtt5_suback_size(&u), sizeof unsuback);
    assert_int_equal(mqtt5_encode_suback(out, MQTT_UNSUBACK, &u), sizeof unsuback);
    assert_memory_equal(out, unsuback, sizeof unsuback);
    assert_int_equal(mqtt5_decode_suback(MQTT_UNSUBACK, unsuback + 2, 5, &s), MQTT_OK);
    assert_int_equal(s.codes[1], MQTT5_RC_NO_SUBSCRIPTION_EXISTED);
}

static void test_suback_errors(void **state)
{
    (void)state;
    struct mqtt5_suback s;
    static const uint8_t granted_in_unsuback[] = {0x00, 0x01, 0x00, 0x01};
    static const uint8_t none_existed_in_suback[] = {0x00, 0x01, 0x00, 0x11};
    static const uint8_t no_codes[] = {0x00, 0x01, 0x00};
    static const uint8_t zero_id[] = {0x00, 0x00, 0x00, 0x00};
    static const uint8_t server_ref[] = {0x00, 0x01, 0x04, 0x1C, 0x00, 0x01, 'h', 0x00};
    assert_int_equal(mqtt5_decode_suback(MQTT_UNSUBACK, granted_in_unsuback, 4, &s),
                     MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_suback(MQTT_SUBACK, none_existed_in_suback, 4, &s),
                     MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_suback(MQTT_SUBACK, no_codes, 3, &s), MQTT_E_MALFORMED);
    assert_int_equal(mqtt5_decode_suback(MQTT_SUBACK, zero_id, 4, &s), MQTT_E_PACKET_ID);
    assert_int_equal(mqtt5_decode_suback(MQTT_SUBACK, server_ref, 8, &s), MQTT_E_MALFORMED);
}

/* ---- DISCONNECT, AUTH ------------------------------------------------------ */

static int dec_disconnect(const uint8_t *b, size_t n)
{
    struct mqtt5_reason_props r;
    return mqtt5_decode_reason_props(MQTT_DISCONNECT, b, n, &r);
}

static int dec_auth(const uint8_t *b, size_t n)
{
    struct mqtt5_reason_props r;
    return mqtt5_decode_reason_props(MQTT5_AUTH, b, n, &r);
}

static void test_disconnect(void **state)
{
    (void)state;
    uint8_t out[64];
    struct mqtt5_reason_props r;

    /* Remaining Length 0: normal disconnection. */
    static const uint8_t rl0[] = {0xE0, 0x00};
    struct mqtt5_reason_props normal = {0};
    assert_int_equal(mqtt5_reason_props_size(MQTT_DISCONNECT, &normal), 2);
    assert_int_equal(mqtt5_encode_reason_props(out, MQTT_DISCONNECT, &normal), 2);
    assert_memory_equal(out, rl0, 2);
    assert_int_equal(mqtt5_decode_reason_props(MQTT_DISCONNECT, rl0 + 2, 0, &r), MQTT_OK);
    assert_int_equal(r.reason, 0);
    assert_int_equal(r.props.present, 0);

    /* Remaining Length 1: a reason alone. */
    static const uint8_t rl1[] = {0xE0, 0x01, 0x04};
    struct mqtt5_reason_props will = {.reason = MQTT5_RC_DISCONNECT_WITH_WILL};
    assert_int_equal(mqtt5_encode_reason_props(out, MQTT_DISCONNECT, &will), 3);
    assert_memory_equal(out, rl1, 3);
    assert_int_equal(mqtt5_decode_reason_props(MQTT_DISCONNECT, rl1 + 2, 1, &r), MQTT_OK);
    assert_int_equal(r.reason, 4);

    /* With properties. */
    struct buf body = {0}, pkt, props = {0};
    put8(&props, MQTT_PROP_SESSION_EXPIRY);
    put(&props, "\0\0\0\0", 4);
    put8(&props, MQTT_PROP_SERVER_REFERENCE);
    PUT_STR(&props, "other:1883");
    put8(&body, MQTT5_RC_USE_ANOTHER_SERVER);
    put_props(&body, &props);
    wrap(&pkt, 0xE0, &body);
    struct mqtt_header h;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_reason_props(MQTT_DISCONNECT, b, h.body_len, &r), MQTT_OK);
    assert_int_equal(r.reason, 0x9C);
    assert_true(BYTES_EQ(r.props.server_reference, "other:1883"));
    assert_int_equal(mqtt5_reason_props_size(MQTT_DISCONNECT, &r), pkt.n);
    assert_same(out, mqtt5_encode_reason_props(out, MQTT_DISCONNECT, &r), &pkt);
    assert_truncations_fail(dec_disconnect, &body, 2);
}

static void test_disconnect_errors(void **state)
{
    (void)state;
    struct mqtt5_reason_props r;
    static const uint8_t bad_reason[] = {0x10};              /* PUBACK code */
    static const uint8_t auth_method[] = {0x00, 0x04, 0x15, 0x00, 0x01, 'x'};
    static const uint8_t trailing[] = {0x00, 0x00, 0x00};
    assert_int_equal(mqtt5_decode_reason_props(MQTT_DISCONNECT, bad_reason, 1, &r),
                     MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_reason_props(MQTT_DISCONNECT, auth_method, 6, &r),
                     MQTT_E_MALFORMED);
    assert_int_equal(mqtt5_decode_reason_props(MQTT_DISCONNECT, trailing, 3, &r),
                     MQTT_E_MALFORMED);
}

static void test_auth(void **state)
{
    (void)state;
    uint8_t out[64];
    struct mqtt5_reason_props r;

    static const uint8_t rl0[] = {0xF0, 0x00};
    struct mqtt5_reason_props ok = {0};
    assert_int_equal(mqtt5_encode_reason_props(out, MQTT5_AUTH, &ok), 2);
    assert_memory_equal(out, rl0, 2);
    assert_int_equal(mqtt5_decode_reason_props(MQTT5_AUTH, rl0 + 2, 0, &r), MQTT_OK);
    assert_int_equal(r.reason, 0);

    /* A reason without properties keeps its empty block in AUTH. */
    static const uint8_t rl2[] = {0xF0, 0x02, 0x19, 0x00};
    struct mqtt5_reason_props re = {.reason = MQTT5_RC_REAUTHENTICATE};
    assert_int_equal(mqtt5_reason_props_size(MQTT5_AUTH, &re), 4);
    assert_int_equal(mqtt5_encode_reason_props(out, MQTT5_AUTH, &re), 4);
    assert_memory_equal(out, rl2, 4);
    /* ... but the one-byte form is accepted, as for DISCONNECT. */
    assert_int_equal(mqtt5_decode_reason_props(MQTT5_AUTH, rl2 + 2, 1, &r), MQTT_OK);
    assert_int_equal(r.reason, 0x19);

    struct buf body = {0}, pkt, props = {0};
    put8(&props, MQTT_PROP_AUTH_METHOD);
    PUT_STR(&props, "SCRAM-SHA-1");
    put8(&props, MQTT_PROP_AUTH_DATA);
    PUT_STR(&props, "\x01\x02\x03");
    put8(&body, MQTT5_RC_CONTINUE_AUTHENTICATION);
    put_props(&body, &props);
    wrap(&pkt, 0xF0, &body);
    struct mqtt_header h;
    const uint8_t *b = frame_whole(pkt.b, pkt.n, &h);
    assert_int_equal(mqtt5_decode_reason_props(MQTT5_AUTH, b, h.body_len, &r), MQTT_OK);
    assert_true(BYTES_EQ(r.props.auth_method, "SCRAM-SHA-1"));
    assert_true(BYTES_EQ(r.props.auth_data, "\x01\x02\x03"));
    assert_same(out, mqtt5_encode_reason_props(out, MQTT5_AUTH, &r), &pkt);
    assert_truncations_fail(dec_auth, &body, 2);

    /* Errors: a DISCONNECT code; a property AUTH cannot carry. */
    static const uint8_t bad_reason[] = {0x04};
    static const uint8_t expiry[] = {0x18, 0x05, 0x11, 0x00, 0x00, 0x00, 0x01};
    assert_int_equal(mqtt5_decode_reason_props(MQTT5_AUTH, bad_reason, 1, &r), MQTT5_E_REASON);
    assert_int_equal(mqtt5_decode_reason_props(MQTT5_AUTH, expiry, 7, &r), MQTT_E_MALFORMED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reason_str),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_frame),
        cmocka_unit_test(test_connect_minimal),
        cmocka_unit_test(test_connect_full),
        cmocka_unit_test(test_connect_password_alone),
        cmocka_unit_test(test_connect_errors),
        cmocka_unit_test(test_connack),
        cmocka_unit_test(test_connack_errors),
        cmocka_unit_test(test_publish_no_props),
        cmocka_unit_test(test_publish_props),
        cmocka_unit_test(test_publish_topic_alias),
        cmocka_unit_test(test_publish_errors),
        cmocka_unit_test(test_ack_short_forms),
        cmocka_unit_test(test_ack_props),
        cmocka_unit_test(test_ack_errors),
        cmocka_unit_test(test_subscribe),
        cmocka_unit_test(test_subscribe_errors),
        cmocka_unit_test(test_unsubscribe),
        cmocka_unit_test(test_suback),
        cmocka_unit_test(test_suback_errors),
        cmocka_unit_test(test_disconnect),
        cmocka_unit_test(test_disconnect_errors),
        cmocka_unit_test(test_auth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
