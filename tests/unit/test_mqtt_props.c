/* test_mqtt_props.c - unit tests for the MQTT 5.0 property codec
 * (mqtt_props.c): every property both ways, the spec's table of which
 * packet may carry which property, duplicates, value ranges, truncation and
 * variable byte integer edge cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mqtt/mqtt_props.h"

/* ---- Block builder ------------------------------------------------------- */

struct buf {
    uint8_t b[1024];
    size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
    assert_true(b->n + n <= sizeof b->b);
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

static void put8(struct buf *b, uint8_t v) { put(b, &v, 1); }

static void put_be(struct buf *b, uint32_t v, unsigned n)
{
    while (n--)
        put8(b, (uint8_t)(v >> (8 * n)));
}

static void put_var(struct buf *b, uint32_t v)
{
    do {
        uint8_t d = v & 0x7F;
        v >>= 7;
        put8(b, v ? (uint8_t)(d | 0x80) : d);
    } while (v);
}

static void put_str(struct buf *b, const char *s, size_t n)
{
    put_be(b, (uint32_t)n, 2);
    put(b, s, n);
}

#define PUT_STR(b, lit) put_str((b), (lit), sizeof(lit) - 1)

/* Prefixes body with a minimal Property Length. */
static void block(struct buf *out, const struct buf *body)
{
    out->n = 0;
    put_var(out, (uint32_t)body->n);
    put(out, body->b, body->n);
}

/* Decodes a block from an exactly sized heap copy, so that ASan sees any
 * read past its end. */
static int decode(const uint8_t *p, size_t n, uint8_t packet, struct mqtt_props *out,
                  size_t *used)
{
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    if (n)
        memcpy(copy, p, n);
    int rc = mqtt_props_decode(copy, n, packet, out, used);
    /* The slices in *out dangle from here on: callers of decode() look only
     * at the result, *used and counts; decode_body() keeps its buffer. */
    free(copy);
    return rc;
}

static int decode_body(const struct buf *body, uint8_t packet, struct mqtt_props *out)
{
    static struct buf blk;
    block(&blk, body);
    size_t used = 0;
    int rc = mqtt_props_decode(blk.b, blk.n, packet, out, &used);
    if (rc == MQTT_PROPS_OK)
        assert_int_equal(used, blk.n);
    return rc;
}

static bool bytes_eq(struct mqtt_bytes a, struct mqtt_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

#define LIT(s) ((struct mqtt_bytes){(const uint8_t *)(s), sizeof(s) - 1})

/* ---- The specification's table (2.2.2.2), written out independently ------ */

#define PK(n) (1u << (n))
#define ACKS (PK(MQTT_PUBACK) | PK(MQTT_PUBREC) | PK(MQTT_PUBREL) | PK(MQTT_PUBCOMP))
#define W PK(MQTT_PROPS_WILL)
#define A PK(MQTT_PROPS_AUTH)

enum kind { K_BYTE, K_U16, K_U32, K_VAR, K_STR, K_BIN, K_PAIR };

static const struct spec {
    uint8_t id;
    uint8_t kind;
    uint32_t packets;
} spec[] = {
    {0x01, K_BYTE, PK(MQTT_PUBLISH) | W},
    {0x02, K_U32, PK(MQTT_PUBLISH) | W},
    {0x03, K_STR, PK(MQTT_PUBLISH) | W},
    {0x08, K_STR, PK(MQTT_PUBLISH) | W},
    {0x09, K_BIN, PK(MQTT_PUBLISH) | W},
    {0x0B, K_VAR, PK(MQTT_PUBLISH) | PK(MQTT_SUBSCRIBE)},
    {0x11, K_U32, PK(MQTT_CONNECT) | PK(MQTT_CONNACK) | PK(MQTT_DISCONNECT)},
    {0x12, K_STR, PK(MQTT_CONNACK)},
    {0x13, K_U16, PK(MQTT_CONNACK)},
    {0x15, K_STR, PK(MQTT_CONNECT) | PK(MQTT_CONNACK) | A},
    {0x16, K_BIN, PK(MQTT_CONNECT) | PK(MQTT_CONNACK) | A},
    {0x17, K_BYTE, PK(MQTT_CONNECT)},
    {0x18, K_U32, W},
    {0x19, K_BYTE, PK(MQTT_CONNECT)},
    {0x1A, K_STR, PK(MQTT_CONNACK)},
    {0x1C, K_STR, PK(MQTT_CONNACK) | PK(MQTT_DISCONNECT)},
    {0x1F, K_STR,
     PK(MQTT_CONNACK) | ACKS | PK(MQTT_SUBACK) | PK(MQTT_UNSUBACK) | PK(MQTT_DISCONNECT) | A},
    {0x21, K_U16, PK(MQTT_CONNECT) | PK(MQTT_CONNACK)},
    {0x22, K_U16, PK(MQTT_CONNECT) | PK(MQTT_CONNACK)},
    {0x23, K_U16, PK(MQTT_PUBLISH)},
    {0x24, K_BYTE, PK(MQTT_CONNACK)},
    {0x25, K_BYTE, PK(MQTT_CONNACK)},
    {0x26, K_PAIR,
     PK(MQTT_CONNECT) | PK(MQTT_CONNACK) | PK(MQTT_PUBLISH) | W | ACKS | PK(MQTT_SUBSCRIBE) |
         PK(MQTT_SUBACK) | PK(MQTT_UNSUBSCRIBE) | PK(MQTT_UNSUBACK) | PK(MQTT_DISCONNECT) | A},
    {0x27, K_U32, PK(MQTT_CONNECT) | PK(MQTT_CONNACK)},
    {0x28, K_BYTE, PK(MQTT_CONNACK)},
    {0x29, K_BYTE, PK(MQTT_CONNACK)},
    {0x2A, K_BYTE, PK(MQTT_CONNACK)},
};
#define NSPEC (sizeof spec / sizeof spec[0])

static const struct spec *spec_of(uint8_t id)
{
    for (size_t i = 0; i < NSPEC; i++)
        if (spec[i].id == id)
            return &spec[i];
    return NULL;
}

/* Appends property id with a valid value v (a length for strings); the
 * Authentication Data gets the Method it needs in front of it. */
static void put_prop(struct buf *b, uint8_t id, uint32_t v)
{
    const struct spec *s = spec_of(id);
    if (id == MQTT_PROP_AUTH_DATA) {
        put8(b, MQTT_PROP_AUTH_METHOD);
        PUT_STR(b, "m");
    }
    put8(b, id);
    switch (s->kind) {
    case K_BYTE:
        put8(b, (uint8_t)v);
        break;
    case K_U16:
        put_be(b, v, 2);
        break;
    case K_U32:
        put_be(b, v, 4);
        break;
    case K_VAR:
        put_var(b, v);
        break;
    case K_PAIR:
        PUT_STR(b, "k");
        /* fall through */
    default:
        put_be(b, v, 2);
        for (uint32_t i = 0; i < v; i++)
            put8(b, 'a' + i % 26);
        break;
    }
}

static const uint8_t all_packets[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 255};

/* ---- Comparing ------------------------------------------------------------ */

static void assert_same(const struct mqtt_props *a, const struct mqtt_props *b)
{
    assert_int_equal(a->present, b->present);
    assert_int_equal(a->payload_format, b->payload_format);
    assert_int_equal(a->message_expiry, b->message_expiry);
    assert_true(bytes_eq(a->content_type, b->content_type));
    assert_true(bytes_eq(a->response_topic, b->response_topic));
    assert_true(bytes_eq(a->correlation_data, b->correlation_data));
    assert_int_equal(a->session_expiry, b->session_expiry);
    assert_true(bytes_eq(a->assigned_client_id, b->assigned_client_id));
    assert_int_equal(a->server_keep_alive, b->server_keep_alive);
    assert_true(bytes_eq(a->auth_method, b->auth_method));
    assert_true(bytes_eq(a->auth_data, b->auth_data));
    assert_int_equal(a->request_problem_info, b->request_problem_info);
    assert_int_equal(a->will_delay, b->will_delay);
    assert_int_equal(a->request_response_info, b->request_response_info);
    assert_true(bytes_eq(a->response_info, b->response_info));
    assert_true(bytes_eq(a->server_reference, b->server_reference));
    assert_true(bytes_eq(a->reason_string, b->reason_string));
    assert_int_equal(a->receive_max, b->receive_max);
    assert_int_equal(a->topic_alias_max, b->topic_alias_max);
    assert_int_equal(a->topic_alias, b->topic_alias);
    assert_int_equal(a->max_qos, b->max_qos);
    assert_int_equal(a->retain_available, b->retain_available);
    assert_int_equal(a->max_packet_size, b->max_packet_size);
    assert_int_equal(a->wildcard_sub_available, b->wildcard_sub_available);
    assert_int_equal(a->subscription_id_available, b->subscription_id_available);
    assert_int_equal(a->shared_sub_available, b->shared_sub_available);

    struct mqtt_props_iter ia, ib;
    struct mqtt_user_prop ua, ub;
    assert_int_equal(a->user_count, b->user_count);
    mqtt_props_users(a, &ia);
    mqtt_props_users(b, &ib);
    while (mqtt_props_next_user(&ia, &ua)) {
        assert_true(mqtt_props_next_user(&ib, &ub));
        assert_true(bytes_eq(ua.name, ub.name));
        assert_true(bytes_eq(ua.value, ub.value));
    }
    assert_false(mqtt_props_next_user(&ib, &ub));

    uint32_t sa, sb;
    assert_int_equal(a->subid_count, b->subid_count);
    mqtt_props_subids(a, &ia);
    mqtt_props_subids(b, &ib);
    while (mqtt_props_next_subid(&ia, &sa)) {
        assert_true(mqtt_props_next_subid(&ib, &sb));
        assert_int_equal(sa, sb);
    }
    assert_false(mqtt_props_next_subid(&ib, &sb));
}

/* ---- Tests ---------------------------------------------------------------- */

static void test_strerror(void **state)
{
    assert_string_equal(mqtt_props_strerror(MQTT_PROPS_OK), "success");
    assert_non_null(strstr(mqtt_props_strerror(MQTT_PROPS_E_MALFORMED), "malformed"));
    assert_non_null(strstr(mqtt_props_strerror(MQTT_PROPS_E_PROTOCOL), "protocol"));
    assert_string_equal(mqtt_props_strerror(-1), "unknown error");
}

static void test_empty_block(void **state)
{
    static const uint8_t empty[] = {0x00, 0xEE}; /* 0xEE: the packet goes on */
    for (size_t i = 0; i < sizeof all_packets; i++) {
        struct mqtt_props p;
        size_t used = 99;
        assert_int_equal(decode(empty, sizeof empty, all_packets[i], &p, &used), MQTT_PROPS_OK);
        assert_int_equal(used, 1);
        assert_int_equal(p.present, 0);
        assert_int_equal(p.user_count, 0);
        assert_int_equal(p.subid_count, 0);
    }
    struct mqtt_props none = {0};
    uint8_t out[4];
    assert_int_equal(mqtt_props_size(&none), 1);
    assert_int_equal(mqtt_props_encode(out, &none), 1);
    assert_int_equal(out[0], 0);
}

/* Every property with distinctive values; masked per packet below. */
static const struct mqtt_user_prop sample_users[] = {
    {LIT("region"), LIT("eu")},
    {LIT(""), LIT("")},
    {LIT("region"), LIT("us \xc3\xa9")},
};
static const uint32_t sample_subids[] = {1, 127, 128, 16383, 16384, 2097151, 2097152, 268435455};

static struct mqtt_props every_property(void)
{
    struct mqtt_props p = {
        .payload_format = 1,
        .message_expiry = 0xDEADBEEF,
        .content_type = LIT("text/plain; charset=\xe2\x82\xac"),
        .response_topic = LIT("reply/to/me"),
        .correlation_data = LIT("\x00\xff\x80id"),
        .session_expiry = 0xFFFFFFFF,
        .assigned_client_id = LIT("auto-1234"),
        .server_keep_alive = 0xFFFF,
        .auth_method = LIT("SCRAM-SHA-1"),
        .auth_data = LIT("\x00\x01\x02"),
        .request_problem_info = 0,
        .will_delay = 3600,
        .request_response_info = 1,
        .response_info = LIT("resp/"),
        .server_reference = LIT("other.example:1883"),
        .reason_string = LIT("because"),
        .receive_max = 1,
        .topic_alias_max = 0,
        .topic_alias = 0x1234,
        .max_qos = 1,
        .retain_available = 0,
        .max_packet_size = 1,
        .wildcard_sub_available = 1,
        .subscription_id_available = 0,
        .shared_sub_available = 1,
        .user_count = sizeof sample_users / sizeof sample_users[0],
        .user_list = sample_users,
        .subid_count = sizeof sample_subids / sizeof sample_subids[0],
        .subid_list = sample_subids,
    };
    for (size_t i = 0; i < NSPEC; i++)
        p.present |= MQTT_PROP_BIT(spec[i].id);
    return p;
}

/* Keeps only what packet may carry, zeroing the rest as a decoder would. */
static struct mqtt_props only_for(struct mqtt_props p, uint8_t packet)
{
    struct mqtt_props empty = {0};
    for (size_t i = 0; i < NSPEC; i++) {
        if (spec[i].packets & PK(packet))
            continue;
        p.present &= ~MQTT_PROP_BIT(spec[i].id);
    }
#define KEEP(id, field) \
    if (!(p.present & MQTT_PROP_BIT(id))) \
        p.field = empty.field
    KEEP(MQTT_PROP_PAYLOAD_FORMAT, payload_format);
    KEEP(MQTT_PROP_MESSAGE_EXPIRY, message_expiry);
    KEEP(MQTT_PROP_CONTENT_TYPE, content_type);
    KEEP(MQTT_PROP_RESPONSE_TOPIC, response_topic);
    KEEP(MQTT_PROP_CORRELATION_DATA, correlation_data);
    KEEP(MQTT_PROP_SESSION_EXPIRY, session_expiry);
    KEEP(MQTT_PROP_ASSIGNED_CLIENT_ID, assigned_client_id);
    KEEP(MQTT_PROP_SERVER_KEEP_ALIVE, server_keep_alive);
    KEEP(MQTT_PROP_AUTH_METHOD, auth_method);
    KEEP(MQTT_PROP_AUTH_DATA, auth_data);
    KEEP(MQTT_PROP_REQUEST_PROBLEM_INFO, request_problem_info);
    KEEP(MQTT_PROP_WILL_DELAY, will_delay);
    KEEP(MQTT_PROP_REQUEST_RESPONSE_INFO, request_response_info);
    KEEP(MQTT_PROP_RESPONSE_INFO, response_info);
    KEEP(MQTT_PROP_SERVER_REFERENCE, server_reference);
    KEEP(MQTT_PROP_REASON_STRING, reason_string);
    KEEP(MQTT_PROP_RECEIVE_MAX, receive_max);
    KEEP(MQTT_PROP_TOPIC_ALIAS_MAX, topic_alias_max);
    KEEP(MQTT_PROP_TOPIC_ALIAS, topic_alias);
    KEEP(MQTT_PROP_MAX_QOS, max_qos);
    KEEP(MQTT_PROP_RETAIN_AVAILABLE, retain_available);
    KEEP(MQTT_PROP_MAX_PACKET_SIZE, max_packet_size);
    KEEP(MQTT_PROP_WILDCARD_SUB_AVAILABLE, wildcard_sub_available);
    KEEP(MQTT_PROP_SUBSCRIPTION_ID_AVAILABLE, subscription_id_available);
    KEEP(MQTT_PROP_SHARED_SUB_AVAILABLE, shared_sub_available);
#undef KEEP
    if (!(p.present & MQTT_PROP_BIT(MQTT_PROP_USER)))
        p.user_count = 0;
    /* SUBSCRIBE takes one Subscription Identifier; PUBLISH takes them all. */
    if (packet == MQTT_SUBSCRIBE)
        p.subid_count = 1;
    else if (packet != MQTT_PUBLISH)
        p.subid_count = 0;
    return p;
}

/* Every property type round-trips: for each packet, all the properties it
 * may carry are encoded together and decode to the same values. */
static void test_round_trip_every_packet(void **state)
{
    for (uint8_t packet = 1; packet <= MQTT_PROPS_WILL; packet++) {
        struct mqtt_props want = only_for(every_property(), packet), got;
        uint8_t out[1024];
        size_t n = mqtt_props_size(&want);
        assert_true(n <= sizeof out);
        assert_int_equal(mqtt_props_encode(out, &want), n);
        size_t used = 0;
        assert_int_equal(mqtt_props_decode(out, n, packet, &got, &used), MQTT_PROPS_OK);
        assert_int_equal(used, n);
        assert_null(got.user_list);
        assert_same(&want, &got);

        /* Decoded raw ranges re-encode to the same bytes. */
        uint8_t again[1024];
        assert_int_equal(mqtt_props_encode(again, &got), n);
        assert_memory_equal(out, again, n);
    }
}

/* The wire format itself, byte by byte, against a hand-written block. */
static void test_exact_bytes(void **state)
{
    static const struct mqtt_user_prop up[] = {{LIT("a"), LIT("b")}};
    static const uint32_t ids[] = {200};
    struct mqtt_props p = {
        .present = MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) |
                   MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY) |
                   MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA) |
                   MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID) | MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS) |
                   MQTT_PROP_BIT(MQTT_PROP_USER),
        .payload_format = 1,
        .message_expiry = 0x01020304,
        .correlation_data = LIT("\x00"),
        .topic_alias = 0x0A0B,
        .user_count = 1,
        .user_list = up,
        .subid_count = 1,
        .subid_list = ids,
    };
    static const uint8_t want[] = {
        24,                                /* Property Length */
        0x01, 0x01,                        /* Payload Format Indicator */
        0x02, 0x01, 0x02, 0x03, 0x04,      /* Message Expiry Interval */
        0x09, 0x00, 0x01, 0x00,            /* Correlation Data */
        0x0B, 0xC8, 0x01,                  /* Subscription Identifier 200 */
        0x23, 0x0A, 0x0B,                  /* Topic Alias */
        0x26, 0x00, 0x01, 'a', 0x00, 0x01, 'b', /* User Property */
    };
    uint8_t out[64];
    assert_int_equal(mqtt_props_size(&p), sizeof want);
    assert_int_equal(mqtt_props_encode(out, &p), sizeof want);
    assert_memory_equal(out, want, sizeof want);
}

/* Every identifier 0..255 in every packet: accepted exactly where the
 * spec's table allows it, a Malformed Packet everywhere else. */
static void test_allowed_table(void **state)
{
    for (unsigned id = 0; id <= 0xFF; id++) {
        const struct spec *s = spec_of((uint8_t)id);
        for (size_t i = 0; i < sizeof all_packets; i++) {
            uint8_t packet = all_packets[i];
            struct buf body = {.n = 0};
            if (s) {
                put_prop(&body, (uint8_t)id, 1);
            } else {
                put8(&body, (uint8_t)id);
                put8(&body, 0);
            }
            struct mqtt_props p;
            bool ok = s && packet < 32 && (s->packets & PK(packet));
            int rc = decode_body(&body, packet, &p);
            if (rc != (ok ? MQTT_PROPS_OK : MQTT_PROPS_E_MALFORMED))
                fail_msg("property 0x%02x in packet %u: got 0x%x", id, packet, rc);
            if (ok)
                assert_true(p.present & MQTT_PROP_BIT(id));
        }
    }
}

/* A second occurrence is a Protocol Error except for User Property and
 * for Subscription Identifier in PUBLISH; a third, after another property,
 * too. */
static void test_duplicates(void **state)
{
    for (size_t i = 0; i < NSPEC; i++) {
        for (uint8_t packet = 1; packet <= MQTT_PROPS_WILL; packet++) {
            if (!(spec[i].packets & PK(packet)))
                continue;
            uint8_t id = spec[i].id;
            bool repeatable =
                id == MQTT_PROP_USER || (id == MQTT_PROP_SUBSCRIPTION_ID && packet == MQTT_PUBLISH);
            struct buf body = {.n = 0};
            put_prop(&body, id, 1);
            if (id == MQTT_PROP_AUTH_DATA) { /* not its Method again */
                put8(&body, id);
                PUT_STR(&body, "x");
            } else {
                put_prop(&body, id, 1);
            }
            struct mqtt_props p;
            int want = repeatable ? MQTT_PROPS_OK : MQTT_PROPS_E_PROTOCOL;
            if (decode_body(&body, packet, &p) != want)
                fail_msg("duplicate 0x%02x in packet %u", id, packet);
        }
    }

    struct buf body = {.n = 0};
    put_prop(&body, MQTT_PROP_RECEIVE_MAX, 5);
    put_prop(&body, MQTT_PROP_SESSION_EXPIRY, 5);
    put_prop(&body, MQTT_PROP_RECEIVE_MAX, 5);
    struct mqtt_props p;
    assert_int_equal(decode_body(&body, MQTT_CONNECT, &p), MQTT_PROPS_E_PROTOCOL);

    body.n = 0;
    for (uint32_t i = 1; i <= 3; i++)
        put_prop(&body, MQTT_PROP_SUBSCRIPTION_ID, i * 1000);
    assert_int_equal(decode_body(&body, MQTT_PUBLISH, &p), MQTT_PROPS_OK);
    assert_int_equal(p.subid_count, 3);
    struct mqtt_props_iter it;
    uint32_t id, k = 0;
    for (mqtt_props_subids(&p, &it); mqtt_props_next_subid(&it, &id);)
        assert_int_equal(id, ++k * 1000);
    assert_int_equal(k, 3);
}

struct range_case {
    uint8_t id, packet;
    uint32_t value;
    int want;
};

static void test_ranges(void **state)
{
    static const uint8_t bools[] = {
        MQTT_PROP_PAYLOAD_FORMAT,         MQTT_PROP_REQUEST_PROBLEM_INFO,
        MQTT_PROP_REQUEST_RESPONSE_INFO,  MQTT_PROP_MAX_QOS,
        MQTT_PROP_RETAIN_AVAILABLE,       MQTT_PROP_WILDCARD_SUB_AVAILABLE,
        MQTT_PROP_SUBSCRIPTION_ID_AVAILABLE, MQTT_PROP_SHARED_SUB_AVAILABLE,
    };
    struct mqtt_props p;
    for (size_t i = 0; i < sizeof bools; i++) {
        const struct spec *s = spec_of(bools[i]);
        uint8_t packet = (uint8_t)__builtin_ctz(s->packets);
        for (uint32_t v = 0; v <= 255; v++) {
            struct buf body = {.n = 0};
            put_prop(&body, bools[i], v);
            int want = v <= 1 ? MQTT_PROPS_OK : MQTT_PROPS_E_PROTOCOL;
            if (decode_body(&body, packet, &p) != want)
                fail_msg("property 0x%02x value %u", bools[i], v);
        }
    }

    static const struct range_case cases[] = {
        {MQTT_PROP_RECEIVE_MAX, MQTT_CONNECT, 0, MQTT_PROPS_E_PROTOCOL},
        {MQTT_PROP_RECEIVE_MAX, MQTT_CONNACK, 1, MQTT_PROPS_OK},
        {MQTT_PROP_RECEIVE_MAX, MQTT_CONNACK, 65535, MQTT_PROPS_OK},
        {MQTT_PROP_MAX_PACKET_SIZE, MQTT_CONNECT, 0, MQTT_PROPS_E_PROTOCOL},
        {MQTT_PROP_MAX_PACKET_SIZE, MQTT_CONNACK, 1, MQTT_PROPS_OK},
        {MQTT_PROP_MAX_PACKET_SIZE, MQTT_CONNACK, 0xFFFFFFFF, MQTT_PROPS_OK},
        /* 0 is refused by the receiver with DISCONNECT 0x94, not here. */
        {MQTT_PROP_TOPIC_ALIAS, MQTT_PUBLISH, 0, MQTT_PROPS_OK},
        {MQTT_PROP_TOPIC_ALIAS, MQTT_PUBLISH, 65535, MQTT_PROPS_OK},
        {MQTT_PROP_TOPIC_ALIAS_MAX, MQTT_CONNECT, 0, MQTT_PROPS_OK},
        {MQTT_PROP_SERVER_KEEP_ALIVE, MQTT_CONNACK, 0, MQTT_PROPS_OK},
        {MQTT_PROP_SESSION_EXPIRY, MQTT_DISCONNECT, 0, MQTT_PROPS_OK},
        {MQTT_PROP_MESSAGE_EXPIRY, MQTT_PROPS_WILL, 0, MQTT_PROPS_OK},
        {MQTT_PROP_WILL_DELAY, MQTT_PROPS_WILL, 0xFFFFFFFF, MQTT_PROPS_OK},
        {MQTT_PROP_SUBSCRIPTION_ID, MQTT_SUBSCRIBE, 0, MQTT_PROPS_E_PROTOCOL},
        {MQTT_PROP_SUBSCRIPTION_ID, MQTT_PUBLISH, 0, MQTT_PROPS_E_PROTOCOL},
        {MQTT_PROP_SUBSCRIPTION_ID, MQTT_SUBSCRIBE, 1, MQTT_PROPS_OK},
        {MQTT_PROP_SUBSCRIPTION_ID, MQTT_SUBSCRIBE, 268435455, MQTT_PROPS_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct buf body = {.n = 0};
        put_prop(&body, cases[i].id, cases[i].value);
        if (decode_body(&body, cases[i].packet, &p) != cases[i].want)
            fail_msg("case %zu: property 0x%02x value %u", i, cases[i].id, cases[i].value);
    }

    /* Above 268435455 a Subscription Identifier needs a fifth byte. */
    static const uint8_t five[] = {6, 0x0B, 0x80, 0x80, 0x80, 0x80, 0x01};
    size_t used;
    assert_int_equal(decode(five, sizeof five, MQTT_PUBLISH, &p, &used), MQTT_PROPS_E_MALFORMED);
}

/* Authentication Data means nothing without its Method. */
static void test_auth_data_needs_method(void **state)
{
    static const uint8_t alone[] = {4, 0x16, 0x00, 0x01, 'x'};
    static const uint8_t after[] = {8, 0x16, 0x00, 0x01, 'x', 0x15, 0x00, 0x01, 'm'};
    struct mqtt_props p;
    size_t used;
    assert_int_equal(decode(alone, sizeof alone, MQTT_CONNECT, &p, &used), MQTT_PROPS_E_PROTOCOL);
    assert_int_equal(decode(after, sizeof after, MQTT_PROPS_AUTH, &p, &used), MQTT_PROPS_OK);
}

static void test_strings(void **state)
{
    struct mqtt_props p;
    struct buf body = {.n = 0};
    size_t used;

    /* Ill-formed UTF-8 and U+0000 are Malformed in every string, and in
     * either half of a pair; binary data may hold anything. */
    static const char *const bad[] = {"\xff", "a\x00", "\xc0\x80", "\xed\xa0\x80"};
    static const size_t bad_len[] = {1, 2, 2, 3};
    static const uint8_t strings[] = {
        MQTT_PROP_CONTENT_TYPE, MQTT_PROP_RESPONSE_TOPIC, MQTT_PROP_ASSIGNED_CLIENT_ID,
        MQTT_PROP_AUTH_METHOD,  MQTT_PROP_RESPONSE_INFO,  MQTT_PROP_SERVER_REFERENCE,
        MQTT_PROP_REASON_STRING,
    };
    for (size_t i = 0; i < sizeof strings; i++) {
        uint8_t packet = (uint8_t)__builtin_ctz(spec_of(strings[i])->packets);
        for (size_t j = 0; j < 4; j++) {
            body.n = 0;
            put8(&body, strings[i]);
            put_str(&body, bad[j], bad_len[j]);
            assert_int_equal(decode_body(&body, packet, &p), MQTT_PROPS_E_MALFORMED);
        }
    }
    for (size_t j = 0; j < 4; j++) {
        body.n = 0;
        put8(&body, MQTT_PROP_USER);
        put_str(&body, bad[j], bad_len[j]);
        PUT_STR(&body, "v");
        assert_int_equal(decode_body(&body, MQTT_PUBACK, &p), MQTT_PROPS_E_MALFORMED);
        body.n = 0;
        put8(&body, MQTT_PROP_USER);
        PUT_STR(&body, "k");
        put_str(&body, bad[j], bad_len[j]);
        assert_int_equal(decode_body(&body, MQTT_PUBACK, &p), MQTT_PROPS_E_MALFORMED);
        body.n = 0;
        put8(&body, MQTT_PROP_CORRELATION_DATA);
        put_str(&body, bad[j], bad_len[j]);
        assert_int_equal(decode_body(&body, MQTT_PUBLISH, &p), MQTT_PROPS_OK);
        assert_int_equal(p.correlation_data.len, bad_len[j]);
    }

    /* The Response Topic is a topic name: no wildcards, not empty. */
    static const uint8_t wild[] = {5, 0x08, 0x00, 0x02, 'a', '+'};
    static const uint8_t hash[] = {4, 0x08, 0x00, 0x01, '#'};
    static const uint8_t empty[] = {3, 0x08, 0x00, 0x00};
    static const uint8_t plain[] = {6, 0x08, 0x00, 0x03, '/', 'a', '/'};
    assert_int_equal(decode(wild, sizeof wild, MQTT_PUBLISH, &p, &used), MQTT_PROPS_E_PROTOCOL);
    assert_int_equal(decode(hash, sizeof hash, MQTT_PUBLISH, &p, &used), MQTT_PROPS_E_PROTOCOL);
    assert_int_equal(decode(empty, sizeof empty, MQTT_PROPS_WILL, &p, &used),
                     MQTT_PROPS_E_PROTOCOL);
    assert_int_equal(decode(plain, sizeof plain, MQTT_PUBLISH, &p, &used), MQTT_PROPS_OK);

    /* Other strings may be empty, and as long as a two-byte length allows. */
    body.n = 0;
    put8(&body, MQTT_PROP_REASON_STRING);
    PUT_STR(&body, "");
    assert_int_equal(decode_body(&body, MQTT_SUBACK, &p), MQTT_PROPS_OK);
    assert_true(p.present & MQTT_PROP_BIT(MQTT_PROP_REASON_STRING));
    assert_int_equal(p.reason_string.len, 0);

    static uint8_t big[5 + 3 + 65535];
    size_t n = 0;
    big[n++] = 0x82, big[n++] = 0x80, big[n++] = 0x04; /* 65538 = 1 + 2 + 65535 */
    big[n++] = MQTT_PROP_CONTENT_TYPE, big[n++] = 0xFF, big[n++] = 0xFF;
    memset(big + n, 'z', 65535);
    n += 65535;
    assert_int_equal(mqtt_props_decode(big, n, MQTT_PUBLISH, &p, &used), MQTT_PROPS_OK);
    assert_int_equal(used, n);
    assert_int_equal(p.content_type.len, 65535);
    static uint8_t out[sizeof big];
    assert_int_equal(mqtt_props_encode(out, &p), n);
    assert_memory_equal(out, big, n);
}

/* A block in canonical order with every kind of value, for truncation;
 * ends[] gets where each property ends. Returns the number of properties. */
static size_t rich_block(struct buf *body, size_t *ends)
{
    size_t k = 0;
    body->n = 0;
    put_prop(body, MQTT_PROP_SESSION_EXPIRY, 0x10203);
    ends[k++] = body->n;
    put_prop(body, MQTT_PROP_ASSIGNED_CLIENT_ID, 5);
    ends[k++] = body->n;
    put_prop(body, MQTT_PROP_SERVER_KEEP_ALIVE, 30);
    ends[k++] = body->n;
    put_prop(body, MQTT_PROP_AUTH_METHOD, 1);
    ends[k++] = body->n;
    put8(body, MQTT_PROP_AUTH_DATA);
    PUT_STR(body, "\x00\x01");
    ends[k++] = body->n;
    put_prop(body, MQTT_PROP_RECEIVE_MAX, 10);
    ends[k++] = body->n;
    put_prop(body, MQTT_PROP_MAX_QOS, 1);
    ends[k++] = body->n;
    put_prop(body, MQTT_PROP_USER, 4);
    ends[k++] = body->n;
    put_prop(body, MQTT_PROP_USER, 0);
    ends[k++] = body->n;
    return k;
}

/* Every prefix of a valid block is Malformed; nothing is read past it. */
static void test_every_prefix(void **state)
{
    struct buf body, blk;
    size_t ends[16];
    rich_block(&body, ends);
    block(&blk, &body);
    struct mqtt_props p;
    size_t used = 77;
    for (size_t n = 0; n < blk.n; n++)
        assert_int_equal(decode(blk.b, n, MQTT_CONNACK, &p, &used), MQTT_PROPS_E_MALFORMED);
    assert_int_equal(used, 77);
    assert_int_equal(decode(blk.b, blk.n, MQTT_CONNACK, &p, &used), MQTT_PROPS_OK);
    assert_int_equal(used, blk.n);
}

/* The Property Length cut short at every byte: fine exactly at property
 * boundaries, Malformed inside a property (its value runs past the block). */
static void test_every_short_length(void **state)
{
    struct buf body;
    size_t ends[16];
    size_t count = rich_block(&body, ends);
    for (size_t k = 0; k <= body.n; k++) {
        struct buf cut = body, blk;
        cut.n = k;
        block(&blk, &cut);
        bool boundary = k == 0;
        for (size_t i = 0; i < count; i++)
            boundary |= ends[i] == k;
        struct mqtt_props p;
        size_t used = 0;
        int rc = decode(blk.b, blk.n, MQTT_CONNACK, &p, &used);
        if (rc != (boundary ? MQTT_PROPS_OK : MQTT_PROPS_E_MALFORMED))
            fail_msg("length %zu: 0x%x", k, rc);
        if (boundary)
            assert_int_equal(used, blk.n);
    }
}

static void test_length_varint(void **state)
{
    struct mqtt_props p;
    size_t used;
    /* Longer than the buffer, by one byte and by a lot. */
    static const uint8_t over1[] = {3, 0x01, 0x01};
    static const uint8_t over[] = {0xFF, 0xFF, 0xFF, 0x7F, 0x01, 0x01};
    /* The length itself cut off, or five bytes long. */
    static const uint8_t cut[] = {0x80};
    static const uint8_t cut3[] = {0x80, 0x80, 0x80};
    static const uint8_t five[] = {0x80, 0x80, 0x80, 0x80, 0x00};
    /* Non-minimal: 0 and 1 in two bytes, 127 in three, 0 in four. */
    static const uint8_t nm0[] = {0x80, 0x00};
    static const uint8_t nm1[] = {0x82, 0x00, 0x01, 0x01};
    static const uint8_t nm127[] = {0xFF, 0x80, 0x00};
    static const uint8_t nm4[] = {0x80, 0x80, 0x80, 0x00};
    const struct {
        const uint8_t *b;
        size_t n;
    } bad[] = {
        {over1, sizeof over1}, {over, sizeof over}, {cut, sizeof cut},   {cut3, sizeof cut3},
        {five, sizeof five},   {nm0, sizeof nm0},   {nm1, sizeof nm1},   {nm127, sizeof nm127},
        {nm4, sizeof nm4},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(decode(bad[i].b, bad[i].n, MQTT_PUBLISH, &p, &used),
                         MQTT_PROPS_E_MALFORMED);

    /* Non-minimal Subscription Identifier and identifier bytes. */
    static const uint8_t subid_nm[] = {3, 0x0B, 0x81, 0x00};
    static const uint8_t id_nm[] = {3, 0x81, 0x00, 0x01};
    assert_int_equal(decode(subid_nm, sizeof subid_nm, MQTT_PUBLISH, &p, &used),
                     MQTT_PROPS_E_MALFORMED);
    assert_int_equal(decode(id_nm, sizeof id_nm, MQTT_PUBLISH, &p, &used),
                     MQTT_PROPS_E_MALFORMED);

    /* A two-byte length: 128 bytes of properties. */
    struct buf body = {.n = 0}, blk;
    put_prop(&body, MQTT_PROP_REASON_STRING, 125);
    assert_int_equal(body.n, 128);
    block(&blk, &body);
    assert_int_equal(blk.n, 130);
    assert_int_equal(decode(blk.b, blk.n, MQTT_PUBACK, &p, &used), MQTT_PROPS_OK);
    assert_int_equal(used, 130);
}

/* Bytes after the block belong to the rest of the packet. */
static void test_trailing_bytes(void **state)
{
    static const uint8_t b[] = {2, 0x23, 0x00, 0x07, 0xAA, 0xBB};
    static const uint8_t c[] = {3, 0x23, 0x00, 0x07, 0xAA, 0xBB};
    struct mqtt_props p;
    size_t used = 0;
    assert_int_equal(decode(b, sizeof b, MQTT_PUBLISH, &p, &used), MQTT_PROPS_E_MALFORMED);
    assert_int_equal(decode(c, sizeof c, MQTT_PUBLISH, &p, &used), MQTT_PROPS_OK);
    assert_int_equal(used, 4);
}

/* User Properties come back in wire order, names repeated, other properties
 * between them; the raw range spans first to last. */
static void test_user_order(void **state)
{
    struct buf body = {.n = 0};
    put8(&body, MQTT_PROP_USER);
    PUT_STR(&body, "k");
    PUT_STR(&body, "1");
    put_prop(&body, MQTT_PROP_REASON_STRING, 2);
    put8(&body, MQTT_PROP_USER);
    PUT_STR(&body, "j");
    PUT_STR(&body, "2");
    put8(&body, MQTT_PROP_USER);
    PUT_STR(&body, "k");
    PUT_STR(&body, "3");

    struct mqtt_props p;
    assert_int_equal(decode_body(&body, MQTT_DISCONNECT, &p), MQTT_PROPS_OK);
    assert_int_equal(p.user_count, 3);
    assert_int_equal(p.user_raw.len, body.n);
    static const char names[] = "kjk", values[] = "123";
    struct mqtt_props_iter it;
    struct mqtt_user_prop up;
    size_t k = 0;
    for (mqtt_props_users(&p, &it); mqtt_props_next_user(&it, &up); k++) {
        assert_int_equal(up.name.len, 1);
        assert_int_equal(up.name.ptr[0], names[k]);
        assert_int_equal(up.value.len, 1);
        assert_int_equal(up.value.ptr[0], values[k]);
    }
    assert_int_equal(k, 3);
    assert_false(mqtt_props_next_user(&it, &up));
    assert_int_equal(p.reason_string.len, 2);

    /* Re-encoding gathers them after the Reason String, order kept. */
    uint8_t out[64];
    size_t n = mqtt_props_encode(out, &p);
    struct mqtt_props q;
    size_t used;
    assert_int_equal(mqtt_props_decode(out, n, MQTT_DISCONNECT, &q, &used), MQTT_PROPS_OK);
    assert_same(&p, &q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_empty_block),
        cmocka_unit_test(test_round_trip_every_packet),
        cmocka_unit_test(test_exact_bytes),
        cmocka_unit_test(test_allowed_table),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_auth_data_needs_method),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_every_prefix),
        cmocka_unit_test(test_every_short_length),
        cmocka_unit_test(test_length_varint),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_user_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
