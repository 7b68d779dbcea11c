/* test_mqtt_codec.c - unit tests for MQTT 3.1.1 and 3.1 framing, decoding
 * and encoding (mqtt_codec.c): every packet type both ways, every error
 * code, framing over partial input, and where 3.1 differs (the CONNECT's
 * protocol name and level, what a 3.1 CONNECT and framer do not check).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mqtt/mqtt_codec.h"

/* ---- Packet builder ----------------------------------------------------- */

struct buf {
    uint8_t b[70000];
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

/* A length-prefixed string; n given so that embedded NULs survive. */
static void put_str(struct buf *b, const char *s, size_t n)
{
    put16(b, (uint16_t)n);
    put(b, s, n);
}

#define PUT_STR(b, lit) put_str((b), (lit), sizeof(lit) - 1)

/* Wraps body in a fixed header with a minimal Remaining Length. */
static void wrap(struct buf *pkt, uint8_t first, const struct buf *body)
{
    pkt->n = 0;
    put8(pkt, first);
    uint32_t v = (uint32_t)body->n;
    do {
        uint8_t d = v & 0x7F;
        v >>= 7;
        put8(pkt, v ? (uint8_t)(d | 0x80) : d);
    } while (v);
    put(pkt, body->b, body->n);
}

static bool bytes_eq(struct mqtt_bytes a, const char *s, size_t n)
{
    return a.len == n && (n == 0 || memcmp(a.ptr, s, n) == 0);
}

#define BYTES_EQ(a, lit) bytes_eq((a), (lit), sizeof(lit) - 1)

/* Frames a whole encoded packet and returns a pointer to its body. */
static const uint8_t *frame_whole(const uint8_t *pkt, size_t n, struct mqtt_header *h)
{
    assert_int_equal(mqtt_frame(pkt, n, 0, h), (int)n);
    assert_int_equal(h->header_len + h->body_len, n);
    return pkt + h->header_len;
}

/* ---- Framing ------------------------------------------------------------ */

static void test_frame_every_prefix(void **state)
{
    static const uint8_t pkt[] = {0x30, 0x08, 0x00, 0x03, 'a', '/', 'b', 'x', 'y', 'z'};
    struct mqtt_header h;
    for (size_t n = 0; n < sizeof pkt; n++)
        assert_int_equal(mqtt_frame(pkt, n, 0, &h), 0);
    memset(&h, 0xAA, sizeof h);
    assert_int_equal(mqtt_frame(pkt, sizeof pkt, 0, &h), (int)sizeof pkt);
    assert_int_equal(h.type, MQTT_PUBLISH);
    assert_int_equal(h.flags, 0);
    assert_int_equal(h.header_len, 2);
    assert_int_equal(h.body_len, 8);
}

/* A stream of several packets read one byte at a time, as a broker sees a
 * slow client: each packet is framed exactly when its last byte arrives. */
static void test_frame_stream(void **state)
{
    struct buf s = {.n = 0};
    uint8_t tmp[64];
    size_t ends[4], k = 0;
    put(&s, tmp, mqtt_encode_empty(tmp, MQTT_PINGREQ));
    ends[k++] = s.n;
    put(&s, tmp, mqtt_encode_ack(tmp, MQTT_PUBREL, 7));
    ends[k++] = s.n;
    put(&s, tmp, mqtt_encode_connack(tmp, true, 0));
    ends[k++] = s.n;
    put(&s, tmp, mqtt_encode_empty(tmp, MQTT_DISCONNECT));
    ends[k++] = s.n;

    size_t start = 0, next = 0;
    struct mqtt_header h;
    for (size_t have = start; have <= s.n; have++) {
        int r = mqtt_frame(s.b + start, have - start, 0, &h);
        if (have < ends[next]) {
            assert_int_equal(r, 0);
        } else {
            assert_int_equal(r, (int)(ends[next] - start));
            start = ends[next++];
        }
    }
    assert_int_equal(next, k);
}

static void test_frame_trailing_bytes(void **state)
{
    static const uint8_t two[] = {0xC0, 0x00, 0xD0, 0x00};
    struct mqtt_header h;
    assert_int_equal(mqtt_frame(two, sizeof two, 0, &h), 2);
    assert_int_equal(h.type, MQTT_PINGREQ);
    assert_int_equal(mqtt_frame(two + 2, 2, 0, &h), 2);
    assert_int_equal(h.type, MQTT_PINGRESP);
}

static void test_frame_reserved_types(void **state)
{
    struct mqtt_header h;
    for (unsigned flags = 0; flags < 16; flags++) {
        uint8_t t0[] = {(uint8_t)flags, 0x00};
        uint8_t t15[] = {(uint8_t)(0xF0 | flags), 0x00};
        /* Refused on the first byte, before any length arrives. */
        assert_int_equal(mqtt_frame(t0, 1, 0, &h), MQTT_E_TYPE);
        assert_int_equal(mqtt_frame(t0, 2, 0, &h), MQTT_E_TYPE);
        assert_int_equal(mqtt_frame(t15, 1, 0, &h), MQTT_E_TYPE);
    }
}

/* MQTT 3.1.1 table 2.2: which fixed-header flags each type allows. */
static void test_frame_flags(void **state)
{
    struct mqtt_header h;
    for (unsigned type = 1; type <= 14; type++) {
        for (unsigned flags = 0; flags < 16; flags++) {
            uint8_t pkt[] = {(uint8_t)(type << 4 | flags), 0x00};
            int want;
            if (type == MQTT_PUBLISH)
                want = (flags & 6) == 6 ? MQTT_E_QOS : (int)sizeof pkt;
            else if (type == MQTT_PUBREL || type == MQTT_SUBSCRIBE || type == MQTT_UNSUBSCRIBE)
                want = flags == 2 ? (int)sizeof pkt : MQTT_E_FLAGS;
            else
                want = flags == 0 ? (int)sizeof pkt : MQTT_E_FLAGS;
            if (mqtt_frame(pkt, sizeof pkt, 0, &h) != want)
                fail_msg("type %u flags %u: expected %d", type, flags, want);
            if (want > 0)
                assert_int_equal(h.flags, flags);
        }
    }
}

/* MQTT 3.1: DUP, QoS and RETAIN bits are in every fixed header, and only
 * PUBLISH's mean anything (QoS 3 is still no QoS); the reserved types stay
 * refused. */
static void test_frame_flags_v31(void **state)
{
    struct mqtt_header h;
    for (unsigned type = 0; type <= 15; type++) {
        for (unsigned flags = 0; flags < 16; flags++) {
            uint8_t pkt[] = {(uint8_t)(type << 4 | flags), 0x00};
            int want = (int)sizeof pkt;
            if (type == 0 || type == 15)
                want = MQTT_E_TYPE;
            else if (type == MQTT_PUBLISH && (flags & 6) == 6)
                want = MQTT_E_QOS;
            if (mqtt31_frame(pkt, sizeof pkt, 0, &h) != want)
                fail_msg("type %u flags %u: expected %d", type, flags, want);
            if (want > 0)
                assert_int_equal(h.flags, flags);
        }
    }
    /* A retried SUBSCRIBE and PUBREL (DUP set) are 3.1 alone. */
    static const uint8_t dup_sub[] = {0x8A, 0x00}, dup_rel[] = {0x6A, 0x00};
    assert_int_equal(mqtt31_frame(dup_sub, 2, 0, &h), 2);
    assert_int_equal(mqtt_frame(dup_sub, 2, 0, &h), MQTT_E_FLAGS);
    assert_int_equal(mqtt31_frame(dup_rel, 2, 0, &h), 2);
    assert_int_equal(mqtt_frame(dup_rel, 2, 0, &h), MQTT_E_FLAGS);
    /* The rest of framing is 3.1.1's: lengths, limits, partial input. */
    static const uint8_t big[] = {0x30, 0x80, 0x01};
    assert_int_equal(mqtt31_frame(big, 1, 0, &h), 0);
    assert_int_equal(mqtt31_frame(big, sizeof big, 100, &h), MQTT_E_TOO_LARGE);
    static const uint8_t five[] = {0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F};
    assert_int_equal(mqtt31_frame(five, sizeof five, 0, &h), MQTT_E_MALFORMED);
}

struct varint_case {
    uint32_t value;
    uint8_t bytes[4];
    size_t n;
};

static const struct varint_case varints[] = {
    {0, {0x00}, 1},
    {127, {0x7F}, 1},
    {128, {0x80, 0x01}, 2},
    {321, {0xC1, 0x02}, 2},
    {16383, {0xFF, 0x7F}, 2},
    {16384, {0x80, 0x80, 0x01}, 3},
    {2097151, {0xFF, 0xFF, 0x7F}, 3},
    {2097152, {0x80, 0x80, 0x80, 0x01}, 4},
    {268435455, {0xFF, 0xFF, 0xFF, 0x7F}, 4},
};

static void test_varint_encode(void **state)
{
    for (size_t i = 0; i < sizeof varints / sizeof *varints; i++) {
        const struct varint_case *c = &varints[i];
        uint8_t out[4];
        assert_int_equal(mqtt_varint_size(c->value), c->n);
        assert_int_equal(mqtt_encode_varint(out, c->value), c->n);
        assert_memory_equal(out, c->bytes, c->n);
    }
}

/* Remaining Length edges: the header is filled as soon as the length is
 * complete, even though the body has not arrived. */
static void test_frame_remaining_length(void **state)
{
    for (size_t i = 0; i < sizeof varints / sizeof *varints; i++) {
        const struct varint_case *c = &varints[i];
        uint8_t pkt[5] = {0x30};
        memcpy(pkt + 1, c->bytes, c->n);
        struct mqtt_header h;
        memset(&h, 0, sizeof h);
        /* Length still incomplete: nothing known yet. */
        for (size_t n = 0; n <= c->n; n++)
            assert_int_equal(mqtt_frame(pkt, n, 0, &h), 0);
        int r = mqtt_frame(pkt, 1 + c->n, 0, &h);
        assert_int_equal(r, c->value == 0 ? 2 : 0);
        assert_int_equal(h.header_len, 1 + c->n);
        assert_int_equal(h.body_len, c->value);
        assert_int_equal(h.type, MQTT_PUBLISH);
    }
}

static void test_frame_length_too_long(void **state)
{
    static const uint8_t five[] = {0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
    static const uint8_t five0[] = {0x30, 0x80, 0x80, 0x80, 0x80, 0x00};
    struct mqtt_header h;
    for (size_t n = 0; n < 5; n++)
        assert_int_equal(mqtt_frame(five, n, 0, &h), 0);
    /* Known bad at the fourth length byte, without waiting for a fifth. */
    assert_int_equal(mqtt_frame(five, 5, 0, &h), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_frame(five, sizeof five, 0, &h), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_frame(five0, sizeof five0, 0, &h), MQTT_E_MALFORMED);
}

/* MQTT 3.1.1 does not require the shortest length encoding; a padded zero
 * still frames. */
static void test_frame_non_minimal_length(void **state)
{
    static const uint8_t pkt[] = {0xC0, 0x80, 0x80, 0x00};
    struct mqtt_header h;
    assert_int_equal(mqtt_frame(pkt, sizeof pkt, 0, &h), 4);
    assert_int_equal(h.header_len, 4);
    assert_int_equal(h.body_len, 0);
}

static void test_frame_max_packet(void **state)
{
    /* A 16384-byte body is refused from its 4-byte prefix. */
    static const uint8_t big[] = {0x30, 0x80, 0x80, 0x01};
    struct mqtt_header h;
    assert_int_equal(mqtt_frame(big, 3, 100, &h), 0);
    assert_int_equal(mqtt_frame(big, 4, 100, &h), MQTT_E_TOO_LARGE);
    assert_int_equal(mqtt_frame(big, 4, 16387, &h), MQTT_E_TOO_LARGE);
    assert_int_equal(mqtt_frame(big, 4, 16388, &h), 0);
    assert_int_equal(mqtt_frame(big, 4, 0, &h), 0);

    /* The limit counts the whole packet, header included. */
    static const uint8_t ack[] = {0x40, 0x02, 0x00, 0x01};
    assert_int_equal(mqtt_frame(ack, 4, 4, &h), 4);
    assert_int_equal(mqtt_frame(ack, 4, 3, &h), MQTT_E_TOO_LARGE);
    assert_int_equal(mqtt_frame(ack, 2, 3, &h), MQTT_E_TOO_LARGE);

    static const uint8_t max[] = {0x30, 0xFF, 0xFF, 0xFF, 0x7F};
    assert_int_equal(mqtt_frame(max, 5, 0, &h), 0);
    assert_int_equal(h.body_len, MQTT_MAX_REMAINING);
    assert_int_equal(mqtt_frame(max, 5, MQTT_MAX_REMAINING + 4, &h), MQTT_E_TOO_LARGE);
    assert_int_equal(mqtt_frame(max, 5, MQTT_MAX_REMAINING + 5, &h), 0);
}

static void test_strerror(void **state)
{
    for (int e = MQTT_OK; e >= MQTT_E_PACKET_ID; e--) {
        const char *s = mqtt_strerror(e);
        assert_non_null(s);
        for (int f = MQTT_OK; f > e; f--)
            assert_string_not_equal(s, mqtt_strerror(f));
    }
    assert_string_equal(mqtt_strerror(-1000), "unknown error");
    assert_string_equal(mqtt_strerror(1), "unknown error");
}

/* ---- CONNECT ------------------------------------------------------------ */

/* Variable header of a CONNECT body with keepalive 60. */
static void connect_head(struct buf *b, const char *name, size_t name_len, uint8_t level,
                         uint8_t flags)
{
    b->n = 0;
    put_str(b, name, name_len);
    put8(b, level);
    put8(b, flags);
    put16(b, 60);
}

static void test_connect_minimal(void **state)
{
    struct buf b;
    struct mqtt_connect c;
    connect_head(&b, "MQTT", 4, 4, 0x02);
    PUT_STR(&b, "client-1");
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_OK);
    assert_int_equal(c.protocol_level, 4);
    assert_true(c.clean_session);
    assert_int_equal(c.keepalive, 60);
    assert_true(BYTES_EQ(c.client_id, "client-1"));
    assert_false(c.has_will);
    assert_false(c.has_username);
    assert_false(c.has_password);
    /* Zero-copy: the decoded string points into the body. */
    assert_ptr_equal(c.client_id.ptr, b.b + 12);
}

static void test_connect_empty_client_id(void **state)
{
    struct buf b;
    struct mqtt_connect c;
    connect_head(&b, "MQTT", 4, 4, 0x00);
    PUT_STR(&b, "");
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_OK);
    assert_int_equal(c.client_id.len, 0);
    assert_false(c.clean_session);
}

/* CONNECT with every optional field; binary will payload and password. */
static void full_connect(struct buf *b)
{
    connect_head(b, "MQTT", 4, 4, 0x80 | 0x40 | 0x20 | 0x10 | 0x04 | 0x02);
    PUT_STR(b, "id");
    PUT_STR(b, "will/topic");
    PUT_STR(b, "\0\xff\xc0 bye");
    PUT_STR(b, "user");
    PUT_STR(b, "\xff\0pw");
}

static void test_connect_full(void **state)
{
    struct buf b, pkt;
    struct mqtt_connect c;
    full_connect(&b);
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_OK);
    assert_true(c.has_will);
    assert_int_equal(c.will_qos, 2);
    assert_true(c.will_retain);
    assert_true(BYTES_EQ(c.will_topic, "will/topic"));
    assert_true(BYTES_EQ(c.will_payload, "\0\xff\xc0 bye"));
    assert_true(c.has_username);
    assert_true(BYTES_EQ(c.username, "user"));
    assert_true(c.has_password);
    assert_true(BYTES_EQ(c.password, "\xff\0pw"));

    /* Re-encoding gives back the very same bytes. */
    wrap(&pkt, 0x10, &b);
    uint8_t out[256];
    assert_int_equal(mqtt_connect_size(&c), pkt.n);
    assert_int_equal(mqtt_encode_connect(out, &c), pkt.n);
    assert_memory_equal(out, pkt.b, pkt.n);
}

static void test_connect_every_prefix(void **state)
{
    struct buf b;
    struct mqtt_connect c;
    full_connect(&b);
    for (size_t n = 0; n < b.n; n++)
        assert_int_equal(mqtt_decode_connect(b.b, n, &c), MQTT_E_MALFORMED);
}

static void test_connect_trailing(void **state)
{
    struct buf b;
    struct mqtt_connect c;
    full_connect(&b);
    put8(&b, 0);
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_MALFORMED);
    connect_head(&b, "MQTT", 4, 4, 0x02);
    PUT_STR(&b, "id");
    PUT_STR(&b, "x"); /* a username nobody flagged */
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_MALFORMED);
}

static void test_connect_round_trips(void **state)
{
    static const struct mqtt_bytes none = {NULL, 0};
    struct mqtt_bytes id = {(const uint8_t *)"c", 1};
    struct mqtt_bytes wt = {(const uint8_t *)"w", 1}, wp = {(const uint8_t *)"\0", 1};
    struct mqtt_bytes user = {(const uint8_t *)"u\xc3\xa9", 3};
    char long_pw[300];
    memset(long_pw, 'p', sizeof long_pw);
    struct mqtt_bytes pw = {(const uint8_t *)long_pw, sizeof long_pw};

    struct mqtt_connect in[] = {
        {.protocol_level = 4, .clean_session = true, .client_id = id},
        {.protocol_level = 4, .keepalive = 65535, .client_id = none},
        {.protocol_level = 4, .client_id = id, .has_will = true, .will_qos = 1, .will_topic = wt,
         .will_payload = none},
        {.protocol_level = 4, .client_id = id, .has_will = true, .will_retain = true,
         .will_topic = wt, .will_payload = wp, .has_username = true, .username = user},
        {.protocol_level = 4, .client_id = id, .has_username = true, .username = none,
         .has_password = true, .password = pw},
        {.protocol_level = 3, .clean_session = true, .client_id = id},
        {.protocol_level = 3, .client_id = id, .has_will = true, .will_qos = 2, .will_retain = true,
         .will_topic = wt, .will_payload = wp, .has_username = true, .username = user,
         .has_password = true, .password = pw},
    };
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        uint8_t out[512];
        struct mqtt_header h;
        struct mqtt_connect c;
        size_t n = mqtt_encode_connect(out, &in[i]);
        assert_int_equal(n, mqtt_connect_size(&in[i]));
        const uint8_t *body = frame_whole(out, n, &h);
        assert_int_equal(h.type, MQTT_CONNECT);
        assert_int_equal(mqtt_decode_connect(body, h.body_len, &c), MQTT_OK);
        assert_int_equal(c.protocol_level, in[i].protocol_level);
        /* The protocol name goes with the level. */
        if (in[i].protocol_level == MQTT31_PROTOCOL_LEVEL)
            assert_memory_equal(body, "\0\6MQIsdp\3", 9);
        else
            assert_memory_equal(body, "\0\4MQTT\4", 7);
        assert_int_equal(c.clean_session, in[i].clean_session);
        assert_int_equal(c.keepalive, in[i].keepalive);
        assert_true(bytes_eq(c.client_id, (const char *)in[i].client_id.ptr, in[i].client_id.len));
        assert_int_equal(c.has_will, in[i].has_will);
        assert_int_equal(c.will_qos, in[i].will_qos);
        assert_int_equal(c.will_retain, in[i].will_retain);
        assert_true(bytes_eq(c.will_topic, (const char *)in[i].will_topic.ptr, in[i].will_topic.len));
        assert_true(
            bytes_eq(c.will_payload, (const char *)in[i].will_payload.ptr, in[i].will_payload.len));
        assert_int_equal(c.has_username, in[i].has_username);
        assert_true(bytes_eq(c.username, (const char *)in[i].username.ptr, in[i].username.len));
        assert_int_equal(c.has_password, in[i].has_password);
        assert_true(bytes_eq(c.password, (const char *)in[i].password.ptr, in[i].password.len));
    }
}

static void test_connect_protocol(void **state)
{
    struct buf b;
    struct mqtt_connect c;
    static const char *const names[] = {"MQTX", "mqtt", "MQT", "MQTTT", "", "MQIsdP"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        connect_head(&b, names[i], strlen(names[i]), 4, 0x02);
        PUT_STR(&b, "id");
        assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_PROTOCOL);
    }
}

static void test_connect_version(void **state)
{
    struct buf b;
    struct mqtt_connect c;
    /* Each name with a level that is not its own is CONNACK 1, not a silent
     * close, as Mosquitto answers: "MQTT" is 3.1.1 (and 5, the other
     * codec's), "MQIsdp" 3.1 alone; the rest of the packet is not looked at. */
    static const uint8_t mqtt_levels[] = {0, 3, 5, 6, 0x84, 255};
    for (size_t i = 0; i < sizeof mqtt_levels; i++) {
        connect_head(&b, "MQTT", 4, mqtt_levels[i], 0xFF);
        assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_VERSION);
        assert_int_equal(c.protocol_level, mqtt_levels[i]);
    }
    static const uint8_t mqisdp_levels[] = {0, 2, 4, 5, 0x83, 255};
    for (size_t i = 0; i < sizeof mqisdp_levels; i++) {
        connect_head(&b, "MQIsdp", 6, mqisdp_levels[i], 0xFF);
        assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_VERSION);
        assert_int_equal(c.protocol_level, mqisdp_levels[i]);
    }
    /* Without the level byte there is nothing to answer. */
    connect_head(&b, "MQTT", 4, 4, 0);
    assert_int_equal(mqtt_decode_connect(b.b, 6, &c), MQTT_E_MALFORMED);
}

static void test_connect_flags(void **state)
{
    static const struct {
        uint8_t flags;
        int want;
    } cases[] = {
        {0x01, MQTT_E_FLAGS},        /* reserved bit [MQTT-3.1.2-3] */
        {0x03, MQTT_E_FLAGS},
        {0x08, MQTT_E_QOS},          /* will QoS 1 without will [MQTT-3.1.2-13] */
        {0x10, MQTT_E_QOS},          /* will QoS 2 without will */
        {0x04 | 0x18, MQTT_E_QOS},   /* will QoS 3 [MQTT-3.1.2-14] */
        {0x20, MQTT_E_FLAGS},        /* will retain without will [MQTT-3.1.2-15] */
        {0x40, MQTT_E_FLAGS},        /* password without user name [MQTT-3.1.2-22] */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct buf b;
        struct mqtt_connect c;
        connect_head(&b, "MQTT", 4, 4, cases[i].flags);
        PUT_STR(&b, "id");
        PUT_STR(&b, "w");
        PUT_STR(&b, "m");
        PUT_STR(&b, "u");
        PUT_STR(&b, "p");
        if (mqtt_decode_connect(b.b, b.n, &c) != cases[i].want)
            fail_msg("flags 0x%02x: expected %d", cases[i].flags, cases[i].want);
    }
}

static void test_connect_v31(void **state)
{
    struct buf b;
    struct mqtt_connect c;
    connect_head(&b, "MQIsdp", 6, 3, 0x80 | 0x40 | 0x08 | 0x04 | 0x02);
    PUT_STR(&b, "a-3.1-client");
    PUT_STR(&b, "will/31");
    PUT_STR(&b, "gone");
    PUT_STR(&b, "user");
    PUT_STR(&b, "pw");
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_OK);
    assert_int_equal(c.protocol_level, MQTT31_PROTOCOL_LEVEL);
    assert_true(c.clean_session);
    assert_true(BYTES_EQ(c.client_id, "a-3.1-client"));
    assert_true(c.has_will);
    assert_int_equal(c.will_qos, 1);
    assert_false(c.will_retain);
    assert_true(BYTES_EQ(c.will_topic, "will/31"));
    assert_true(BYTES_EQ(c.will_payload, "gone"));
    assert_true(BYTES_EQ(c.username, "user"));
    assert_true(BYTES_EQ(c.password, "pw"));

    /* Client identifier rules are the server's: the codec takes an empty
     * one and one past 3.1's 23 bytes. */
    char long_id[65535];
    memset(long_id, 'i', sizeof long_id);
    static const size_t lens[] = {0, 23, 24, 65535};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        connect_head(&b, "MQIsdp", 6, 3, 0x02);
        put_str(&b, long_id, lens[i]);
        assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_OK);
        assert_int_equal(c.client_id.len, lens[i]);
    }
    /* Everything else about the payload is checked as in 3.1.1. */
    connect_head(&b, "MQIsdp", 6, 3, 0x02);
    PUT_STR(&b, "bad\xc0\x80");
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_UTF8);
    connect_head(&b, "MQIsdp", 6, 3, 0x04);
    PUT_STR(&b, "id");
    PUT_STR(&b, "a/#");
    PUT_STR(&b, "m");
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_TOPIC);
    connect_head(&b, "MQIsdp", 6, 3, 0x02);
    PUT_STR(&b, "id");
    put8(&b, 0);
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_MALFORMED);
}

/* What 3.1 never required of the Connect Flags, and Mosquitto lets a 3.1
 * client off: the reserved bit, and Will QoS and Retain without a will (read
 * as 0). Will QoS 3 and a password without a user name stay errors. */
static void test_connect_v31_flags(void **state)
{
    static const struct {
        uint8_t flags;
        int want;
        uint8_t will_qos;
        bool will_retain;
    } cases[] = {
        {0x01 | 0x02, MQTT_OK, 0, false},
        {0x08, MQTT_OK, 0, false},
        {0x10 | 0x20, MQTT_OK, 0, false},
        {0x01 | 0x04 | 0x10 | 0x20, MQTT_OK, 2, true},
        {0x18, MQTT_E_QOS, 0, false},
        {0x04 | 0x18, MQTT_E_QOS, 0, false},
        {0x40, MQTT_E_FLAGS, 0, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct buf b;
        struct mqtt_connect c;
        connect_head(&b, "MQIsdp", 6, 3, cases[i].flags);
        PUT_STR(&b, "id");
        if (cases[i].flags & 0x04) {
            PUT_STR(&b, "w");
            PUT_STR(&b, "m");
        }
        if (cases[i].flags & 0x40)
            PUT_STR(&b, "p");
        int rc = mqtt_decode_connect(b.b, b.n, &c);
        if (rc != cases[i].want)
            fail_msg("flags 0x%02x: got %d, expected %d", cases[i].flags, rc, cases[i].want);
        if (rc == MQTT_OK) {
            assert_int_equal(c.has_will, (cases[i].flags & 0x04) != 0);
            assert_int_equal(c.will_qos, cases[i].will_qos);
            assert_int_equal(c.will_retain, cases[i].will_retain);
        }
    }
}

static void test_connect_strings(void **state)
{
    struct buf b;
    struct mqtt_connect c;

    connect_head(&b, "MQTT", 4, 4, 0x02);
    PUT_STR(&b, "bad\xc0\x80");
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_UTF8);

    connect_head(&b, "MQTT", 4, 4, 0x02);
    PUT_STR(&b, "nul\0");
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_UTF8);

    connect_head(&b, "MQTT", 4, 4, 0x80);
    PUT_STR(&b, "id");
    PUT_STR(&b, "\xed\xa0\x80"); /* surrogate user name */
    assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), MQTT_E_UTF8);

    static const struct {
        const char *topic;
        size_t len;
        int want;
    } wills[] = {
        {"a/+", 3, MQTT_E_TOPIC}, {"#", 1, MQTT_E_TOPIC}, {"", 0, MQTT_E_TOPIC},
        {"\xff", 1, MQTT_E_UTF8}, {"a/b", 3, MQTT_OK},
    };
    for (size_t i = 0; i < sizeof wills / sizeof *wills; i++) {
        connect_head(&b, "MQTT", 4, 4, 0x04);
        PUT_STR(&b, "id");
        put_str(&b, wills[i].topic, wills[i].len);
        PUT_STR(&b, "\xff\xfe"); /* will payload is binary */
        assert_int_equal(mqtt_decode_connect(b.b, b.n, &c), wills[i].want);
    }
}

/* ---- CONNACK ------------------------------------------------------------ */

static void test_connack(void **state)
{
    uint8_t out[MQTT_CONNACK_LEN];
    struct mqtt_header h;
    bool sp;
    uint8_t rc;

    assert_int_equal(mqtt_encode_connack(out, true, 0), MQTT_CONNACK_LEN);
    static const uint8_t want[] = {0x20, 0x02, 0x01, 0x00};
    assert_memory_equal(out, want, sizeof want);
    const uint8_t *body = frame_whole(out, sizeof out, &h);
    assert_int_equal(h.type, MQTT_CONNACK);
    assert_int_equal(mqtt_decode_connack(body, h.body_len, &sp, &rc), MQTT_OK);
    assert_true(sp);
    assert_int_equal(rc, 0);

    for (uint8_t code = 0; code <= MQTT_CONNACK_NOT_AUTHORIZED; code++) {
        mqtt_encode_connack(out, false, code);
        assert_int_equal(mqtt_decode_connack(out + 2, 2, &sp, &rc), MQTT_OK);
        assert_false(sp);
        assert_int_equal(rc, code);
    }
}

static void test_connack_errors(void **state)
{
    bool sp;
    uint8_t rc;
    static const uint8_t ok[] = {0x00, 0x00, 0x00};
    assert_int_equal(mqtt_decode_connack(ok, 1, &sp, &rc), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_connack(ok, 3, &sp, &rc), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_connack(ok, 0, &sp, &rc), MQTT_E_MALFORMED);
    static const uint8_t reserved[] = {0x02, 0x00};
    assert_int_equal(mqtt_decode_connack(reserved, 2, &sp, &rc), MQTT_E_FLAGS);
    static const uint8_t bad_rc[] = {0x00, 0x06};
    assert_int_equal(mqtt_decode_connack(bad_rc, 2, &sp, &rc), MQTT_E_MALFORMED);
    /* [MQTT-3.2.2-4]: a refusal never claims a session. */
    static const uint8_t sp_refused[] = {0x01, 0x02};
    assert_int_equal(mqtt_decode_connack(sp_refused, 2, &sp, &rc), MQTT_E_MALFORMED);
}

/* ---- PUBLISH ------------------------------------------------------------ */

static void test_publish_decode(void **state)
{
    struct buf b;
    struct mqtt_publish p;

    b.n = 0;
    PUT_STR(&b, "a/b");
    put(&b, "hi", 2);
    assert_int_equal(mqtt_decode_publish(b.b, b.n, 0x01, &p), MQTT_OK);
    assert_true(BYTES_EQ(p.topic, "a/b"));
    assert_true(BYTES_EQ(p.payload, "hi"));
    assert_int_equal(p.qos, 0);
    assert_int_equal(p.packet_id, 0);
    assert_true(p.retain);
    assert_false(p.dup);

    b.n = 0;
    PUT_STR(&b, "t");
    put16(&b, 0xBEEF);
    assert_int_equal(mqtt_decode_publish(b.b, b.n, 0x08 | 0x04, &p), MQTT_OK);
    assert_int_equal(p.qos, 2);
    assert_true(p.dup);
    assert_false(p.retain);
    assert_int_equal(p.packet_id, 0xBEEF);
    assert_int_equal(p.payload.len, 0);

    /* The payload is opaque: any bytes at all. */
    b.n = 0;
    PUT_STR(&b, "t");
    put16(&b, 1);
    put(&b, "\0\xff\xc0", 3);
    assert_int_equal(mqtt_decode_publish(b.b, b.n, 0x02, &p), MQTT_OK);
    assert_true(BYTES_EQ(p.payload, "\0\xff\xc0"));
}

static void test_publish_errors(void **state)
{
    struct buf b;
    struct mqtt_publish p;

    b.n = 0;
    PUT_STR(&b, "a/b");
    assert_int_equal(mqtt_decode_publish(b.b, 0, 0, &p), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_publish(b.b, 1, 0, &p), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_publish(b.b, 4, 0, &p), MQTT_E_MALFORMED); /* topic cut */
    assert_int_equal(mqtt_decode_publish(b.b, b.n, 0x06, &p), MQTT_E_QOS);
    assert_int_equal(mqtt_decode_publish(b.b, b.n, 0x08, &p), MQTT_E_FLAGS); /* DUP at QoS 0 */
    /* QoS 1 without room for the packet id. */
    assert_int_equal(mqtt_decode_publish(b.b, b.n, 0x02, &p), MQTT_E_MALFORMED);
    put8(&b, 0x00);
    assert_int_equal(mqtt_decode_publish(b.b, b.n, 0x02, &p), MQTT_E_MALFORMED);
    put8(&b, 0x00);
    assert_int_equal(mqtt_decode_publish(b.b, b.n, 0x02, &p), MQTT_E_PACKET_ID);
    assert_int_equal(mqtt_decode_publish(b.b, b.n, 0x04, &p), MQTT_E_PACKET_ID);

    static const struct {
        const char *topic;
        size_t len;
        int want;
    } topics[] = {
        {"", 0, MQTT_E_TOPIC},        {"a/+", 3, MQTT_E_TOPIC},      {"#", 1, MQTT_E_TOPIC},
        {"a#", 2, MQTT_E_TOPIC},      {"a\0", 2, MQTT_E_UTF8},       {"\xc3", 1, MQTT_E_UTF8},
        {"\xed\xbf\xbf", 3, MQTT_E_UTF8}, {"$SYS/x", 6, MQTT_OK},
    };
    for (size_t i = 0; i < sizeof topics / sizeof *topics; i++) {
        b.n = 0;
        put_str(&b, topics[i].topic, topics[i].len);
        put(&b, "payload", 7);
        assert_int_equal(mqtt_decode_publish(b.b, b.n, 0, &p), topics[i].want);
    }
}

static void test_publish_round_trips(void **state)
{
    static uint8_t payload[20000], out[20100];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7);
    /* Payload sizes around the 1/2/3-byte Remaining Length boundaries. */
    static const size_t sizes[] = {0, 1, 120, 121, 122, 123, 124, 16376, 16377, 16378, 20000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        for (uint8_t qos = 0; qos <= 2; qos++) {
            struct mqtt_publish in = {
                .topic = {(const uint8_t *)"a/b", 3},
                .payload = {payload, sizes[s]},
                .packet_id = qos ? (uint16_t)(1000 + s) : 0,
                .qos = qos,
                .retain = s & 1,
                .dup = qos && (s & 2),
            };
            struct mqtt_header h;
            struct mqtt_publish p;
            size_t n = mqtt_encode_publish(out, &in);
            assert_int_equal(n, mqtt_publish_size(3, sizes[s], qos));
            const uint8_t *body = frame_whole(out, n, &h);
            assert_int_equal(h.type, MQTT_PUBLISH);
            assert_int_equal(h.header_len, 1 + mqtt_varint_size(h.body_len));
            assert_int_equal(mqtt_decode_publish(body, h.body_len, h.flags, &p), MQTT_OK);
            assert_true(BYTES_EQ(p.topic, "a/b"));
            assert_int_equal(p.payload.len, sizes[s]);
            if (sizes[s])
                assert_memory_equal(p.payload.ptr, payload, sizes[s]);
            assert_int_equal(p.qos, qos);
            assert_int_equal(p.packet_id, in.packet_id);
            assert_int_equal(p.retain, in.retain);
            assert_int_equal(p.dup, in.dup);
        }
    }
    /* 2 + 3 + 122 = 127 is the largest one-byte length. */
    assert_int_equal(mqtt_publish_size(3, 122, 0), 2 + 127);
    assert_int_equal(mqtt_publish_size(3, 123, 0), 3 + 128);
}

static void test_publish_exact_bytes(void **state)
{
    static const uint8_t want[] = {0x3B, 0x07, 0x00, 0x01, 'x', 0x12, 0x34, 'h', 'i'};
    struct mqtt_publish in = {
        .topic = {(const uint8_t *)"x", 1},
        .payload = {(const uint8_t *)"hi", 2},
        .packet_id = 0x1234,
        .qos = 1,
        .retain = true,
        .dup = true,
    };
    uint8_t out[16];
    assert_int_equal(mqtt_encode_publish(out, &in), sizeof want);
    assert_memory_equal(out, want, sizeof want);
}

/* ---- Acknowledgements and empty packets ---------------------------------- */

static void test_acks(void **state)
{
    static const struct {
        enum mqtt_type type;
        uint8_t first;
    } acks[] = {
        {MQTT_PUBACK, 0x40}, {MQTT_PUBREC, 0x50}, {MQTT_PUBREL, 0x62},
        {MQTT_PUBCOMP, 0x70}, {MQTT_UNSUBACK, 0xB0},
    };
    for (size_t i = 0; i < sizeof acks / sizeof *acks; i++) {
        uint8_t out[MQTT_ACK_LEN];
        struct mqtt_header h;
        uint16_t id = 0;
        assert_int_equal(mqtt_encode_ack(out, acks[i].type, 0xA5C3), MQTT_ACK_LEN);
        const uint8_t want[] = {acks[i].first, 0x02, 0xA5, 0xC3};
        assert_memory_equal(out, want, sizeof want);
        const uint8_t *body = frame_whole(out, sizeof out, &h);
        assert_int_equal(h.type, acks[i].type);
        assert_int_equal(mqtt_decode_ack(body, h.body_len, &id), MQTT_OK);
        assert_int_equal(id, 0xA5C3);
    }
}

static void test_ack_errors(void **state)
{
    static const uint8_t b[] = {0x00, 0x01, 0x02};
    static const uint8_t zero[] = {0x00, 0x00};
    uint16_t id;
    assert_int_equal(mqtt_decode_ack(b, 0, &id), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_ack(b, 1, &id), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_ack(b, 3, &id), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_ack(b, 2, &id), MQTT_OK);
    assert_int_equal(id, 1);
    assert_int_equal(mqtt_decode_ack(zero, 2, &id), MQTT_E_PACKET_ID);
}

static void test_empty_packets(void **state)
{
    static const struct {
        enum mqtt_type type;
        uint8_t first;
    } empties[] = {{MQTT_PINGREQ, 0xC0}, {MQTT_PINGRESP, 0xD0}, {MQTT_DISCONNECT, 0xE0}};
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++) {
        uint8_t out[MQTT_EMPTY_LEN];
        struct mqtt_header h;
        assert_int_equal(mqtt_encode_empty(out, empties[i].type), MQTT_EMPTY_LEN);
        assert_int_equal(out[0], empties[i].first);
        assert_int_equal(out[1], 0);
        frame_whole(out, sizeof out, &h);
        assert_int_equal(h.type, empties[i].type);
        assert_int_equal(h.body_len, 0);
    }
}

/* ---- SUBSCRIBE and UNSUBSCRIBE ------------------------------------------ */

static void test_subscribe_decode(void **state)
{
    struct buf b = {.n = 0};
    struct mqtt_filters f;
    struct mqtt_filter_iter it;
    struct mqtt_bytes filter;
    uint8_t qos;

    put16(&b, 10);
    PUT_STR(&b, "sport/#");
    put8(&b, 2);
    PUT_STR(&b, "+/x");
    put8(&b, 0);
    PUT_STR(&b, "a");
    put8(&b, 1);
    assert_int_equal(mqtt_decode_subscribe(b.b, b.n, &f), MQTT_OK);
    assert_int_equal(f.packet_id, 10);
    assert_int_equal(f.count, 3);
    assert_true(f.with_qos);

    mqtt_filter_iter_init(&it, &f);
    assert_true(mqtt_filter_next(&it, &filter, &qos));
    assert_true(BYTES_EQ(filter, "sport/#"));
    assert_int_equal(qos, 2);
    assert_true(mqtt_filter_next(&it, &filter, &qos));
    assert_true(BYTES_EQ(filter, "+/x"));
    assert_int_equal(qos, 0);
    assert_true(mqtt_filter_next(&it, &filter, &qos));
    assert_true(BYTES_EQ(filter, "a"));
    assert_int_equal(qos, 1);
    assert_false(mqtt_filter_next(&it, &filter, &qos));
}

static void test_subscribe_errors(void **state)
{
    struct buf b = {.n = 0};
    struct mqtt_filters f;

    put16(&b, 1);
    assert_int_equal(mqtt_decode_subscribe(b.b, 0, &f), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_subscribe(b.b, 1, &f), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_subscribe(b.b, 2, &f), MQTT_E_MALFORMED); /* no entries */
    PUT_STR(&b, "a/b");
    assert_int_equal(mqtt_decode_subscribe(b.b, b.n, &f), MQTT_E_MALFORMED); /* no QoS */
    assert_int_equal(mqtt_decode_subscribe(b.b, b.n - 1, &f), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_subscribe(b.b, 3, &f), MQTT_E_MALFORMED);

    static const struct {
        const char *filter;
        size_t len;
        uint8_t qos;
        int want;
    } cases[] = {
        {"a/b", 3, 3, MQTT_E_QOS},
        {"a/b", 3, 0x04, MQTT_E_MALFORMED}, /* reserved bits [MQTT-3-8.3-4] */
        {"a/b", 3, 0x81, MQTT_E_MALFORMED},
        {"a/#/b", 5, 0, MQTT_E_TOPIC},
        {"a+", 2, 0, MQTT_E_TOPIC},
        {"", 0, 0, MQTT_E_TOPIC},
        {"\xc0\x80", 2, 0, MQTT_E_UTF8},
        {"+/+/#", 5, 2, MQTT_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        b.n = 0;
        put16(&b, 5);
        PUT_STR(&b, "ok");
        put8(&b, 0);
        put_str(&b, cases[i].filter, cases[i].len);
        put8(&b, cases[i].qos);
        assert_int_equal(mqtt_decode_subscribe(b.b, b.n, &f), cases[i].want);
    }

    b.n = 0;
    put16(&b, 0);
    PUT_STR(&b, "a");
    put8(&b, 0);
    assert_int_equal(mqtt_decode_subscribe(b.b, b.n, &f), MQTT_E_PACKET_ID);
}

static void test_subscribe_round_trip(void **state)
{
    enum { N = 300 };
    static char names[N][8];
    struct mqtt_bytes filters[N];
    uint8_t qos[N];
    for (unsigned i = 0; i < N; i++) {
        int len = snprintf(names[i], sizeof names[i], i % 3 ? "t/%u" : "+/%u/#", i);
        filters[i] = (struct mqtt_bytes){(const uint8_t *)names[i], (size_t)len};
        qos[i] = (uint8_t)(i % 3);
    }
    static uint8_t out[8192];
    size_t n = mqtt_encode_subscribe(out, 0x7777, filters, qos, N);
    assert_int_equal(n, mqtt_subscribe_size(filters, N));
    assert_int_equal(out[0], 0x82);

    struct mqtt_header h;
    struct mqtt_filters f;
    const uint8_t *body = frame_whole(out, n, &h);
    assert_int_equal(mqtt_decode_subscribe(body, h.body_len, &f), MQTT_OK);
    assert_int_equal(f.packet_id, 0x7777);
    assert_int_equal(f.count, N);

    struct mqtt_filter_iter it;
    struct mqtt_bytes got;
    uint8_t q;
    unsigned i = 0;
    mqtt_filter_iter_init(&it, &f);
    while (mqtt_filter_next(&it, &got, &q)) {
        assert_true(i < N);
        assert_true(bytes_eq(got, names[i], filters[i].len));
        assert_int_equal(q, qos[i]);
        i++;
    }
    assert_int_equal(i, N);
}

static void test_unsubscribe(void **state)
{
    struct mqtt_bytes filters[] = {{(const uint8_t *)"a/+", 3}, {(const uint8_t *)"#", 1}};
    uint8_t out[64];
    size_t n = mqtt_encode_unsubscribe(out, 42, filters, 2);
    static const uint8_t want[] = {0xA2, 0x0A, 0x00, 0x2A, 0x00, 0x03, 'a',
                                   '/',  '+',  0x00, 0x01, '#'};
    assert_int_equal(n, sizeof want);
    assert_int_equal(mqtt_unsubscribe_size(filters, 2), sizeof want);
    assert_memory_equal(out, want, sizeof want);

    struct mqtt_header h;
    struct mqtt_filters f;
    const uint8_t *body = frame_whole(out, n, &h);
    assert_int_equal(mqtt_decode_unsubscribe(body, h.body_len, &f), MQTT_OK);
    assert_int_equal(f.packet_id, 42);
    assert_int_equal(f.count, 2);
    assert_false(f.with_qos);

    struct mqtt_filter_iter it;
    struct mqtt_bytes got;
    uint8_t q = 99;
    mqtt_filter_iter_init(&it, &f);
    assert_true(mqtt_filter_next(&it, &got, &q));
    assert_true(BYTES_EQ(got, "a/+"));
    assert_int_equal(q, 0);
    assert_true(mqtt_filter_next(&it, &got, NULL));
    assert_true(BYTES_EQ(got, "#"));
    assert_false(mqtt_filter_next(&it, &got, &q));

    /* The same body as a SUBSCRIBE lacks its QoS bytes. */
    assert_int_equal(mqtt_decode_subscribe(body, h.body_len, &f), MQTT_E_MALFORMED);
}

static void test_unsubscribe_errors(void **state)
{
    struct buf b = {.n = 0};
    struct mqtt_filters f;
    put16(&b, 3);
    assert_int_equal(mqtt_decode_unsubscribe(b.b, b.n, &f), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_unsubscribe(b.b, 1, &f), MQTT_E_MALFORMED);
    PUT_STR(&b, "a");
    assert_int_equal(mqtt_decode_unsubscribe(b.b, b.n, &f), MQTT_OK);
    put8(&b, 0); /* one stray byte: a truncated length */
    assert_int_equal(mqtt_decode_unsubscribe(b.b, b.n, &f), MQTT_E_MALFORMED);
    b.n = 0;
    put16(&b, 3);
    PUT_STR(&b, "a/#/b");
    assert_int_equal(mqtt_decode_unsubscribe(b.b, b.n, &f), MQTT_E_TOPIC);
    b.n = 0;
    put16(&b, 3);
    PUT_STR(&b, "\xf4\x90\x80\x80");
    assert_int_equal(mqtt_decode_unsubscribe(b.b, b.n, &f), MQTT_E_UTF8);
    b.n = 0;
    put16(&b, 0);
    PUT_STR(&b, "a");
    assert_int_equal(mqtt_decode_unsubscribe(b.b, b.n, &f), MQTT_E_PACKET_ID);
}

/* ---- SUBACK ------------------------------------------------------------- */

static void test_suback(void **state)
{
    static const uint8_t codes[] = {0, 1, 2, MQTT_SUBACK_FAILURE};
    uint8_t out[16];
    size_t n = mqtt_encode_suback(out, 9, codes, 4);
    static const uint8_t want[] = {0x90, 0x06, 0x00, 0x09, 0x00, 0x01, 0x02, 0x80};
    assert_int_equal(n, sizeof want);
    assert_int_equal(mqtt_suback_size(4), sizeof want);
    assert_memory_equal(out, want, sizeof want);

    struct mqtt_header h;
    struct mqtt_suback s;
    const uint8_t *body = frame_whole(out, n, &h);
    assert_int_equal(mqtt_decode_suback(body, h.body_len, &s), MQTT_OK);
    assert_int_equal(s.packet_id, 9);
    assert_int_equal(s.count, 4);
    assert_memory_equal(s.codes, codes, 4);

    /* 125 codes make the largest one-byte length. */
    assert_int_equal(mqtt_suback_size(125), 2 + 127);
    assert_int_equal(mqtt_suback_size(126), 3 + 128);
}

static void test_suback_errors(void **state)
{
    struct mqtt_suback s;
    static const uint8_t no_codes[] = {0x00, 0x01};
    assert_int_equal(mqtt_decode_suback(no_codes, 0, &s), MQTT_E_MALFORMED);
    assert_int_equal(mqtt_decode_suback(no_codes, 2, &s), MQTT_E_MALFORMED);
    static const uint8_t zero_id[] = {0x00, 0x00, 0x00};
    assert_int_equal(mqtt_decode_suback(zero_id, 3, &s), MQTT_E_PACKET_ID);
    static const uint8_t bad[] = {0x03, 0x04, 0x7F, 0x81, 0xFF};
    for (size_t i = 0; i < sizeof bad; i++) {
        uint8_t body[] = {0x00, 0x01, 0x00, bad[i]};
        assert_int_equal(mqtt_decode_suback(body, sizeof body, &s), MQTT_E_MALFORMED);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_every_prefix),
        cmocka_unit_test(test_frame_stream),
        cmocka_unit_test(test_frame_trailing_bytes),
        cmocka_unit_test(test_frame_reserved_types),
        cmocka_unit_test(test_frame_flags),
        cmocka_unit_test(test_frame_flags_v31),
        cmocka_unit_test(test_varint_encode),
        cmocka_unit_test(test_frame_remaining_length),
        cmocka_unit_test(test_frame_length_too_long),
        cmocka_unit_test(test_frame_non_minimal_length),
        cmocka_unit_test(test_frame_max_packet),
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_connect_minimal),
        cmocka_unit_test(test_connect_empty_client_id),
        cmocka_unit_test(test_connect_full),
        cmocka_unit_test(test_connect_every_prefix),
        cmocka_unit_test(test_connect_trailing),
        cmocka_unit_test(test_connect_round_trips),
        cmocka_unit_test(test_connect_protocol),
        cmocka_unit_test(test_connect_version),
        cmocka_unit_test(test_connect_flags),
        cmocka_unit_test(test_connect_v31),
        cmocka_unit_test(test_connect_v31_flags),
        cmocka_unit_test(test_connect_strings),
        cmocka_unit_test(test_connack),
        cmocka_unit_test(test_connack_errors),
        cmocka_unit_test(test_publish_decode),
        cmocka_unit_test(test_publish_errors),
        cmocka_unit_test(test_publish_round_trips),
        cmocka_unit_test(test_publish_exact_bytes),
        cmocka_unit_test(test_acks),
        cmocka_unit_test(test_ack_errors),
        cmocka_unit_test(test_empty_packets),
        cmocka_unit_test(test_subscribe_decode),
        cmocka_unit_test(test_subscribe_errors),
        cmocka_unit_test(test_subscribe_round_trip),
        cmocka_unit_test(test_unsubscribe),
        cmocka_unit_test(test_unsubscribe_errors),
        cmocka_unit_test(test_suback),
        cmocka_unit_test(test_suback_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
