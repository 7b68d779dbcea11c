/* test_kvrec.c - unit tests for the retained-message records of the
 * cluster's KV bucket (cluster/kvrec.c): a record with every kept
 * property round-trips byte for byte, the deadline and QoS survive, and
 * what kvrec_encode never writes is refused (another version, QoS 3, a
 * property a retained copy does not keep, a truncated or non-minimal
 * property block); plus a random round trip of payloads and blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/kvrec.h"
#include "mqtt/mqtt_codec.h"
#include "test_rng.h"

#define B(lit) ((struct mqtt_bytes){(const uint8_t *)(lit), sizeof(lit) - 1})

/* p's property bytes without their length, as struct msg keeps them, in
 * out; their count. */
static uint32_t props_bytes(const struct mqtt_props *p, uint8_t *out)
{
    uint8_t block[1024];
    size_t n = mqtt_props_encode(block, p);
    uint32_t len;
    bool non_minimal;
    int h = mqtt_decode_varint(block, n, &len, &non_minimal);
    assert_true(h > 0);
    memcpy(out, block + h, len);
    return len;
}

/* Encodes r, checks the size, decodes it back into *d and *props. */
static size_t encode_decode(const struct kvrec *r, uint8_t *buf, struct kvrec *d,
                            struct mqtt_props *props)
{
    size_t n = kvrec_encode(buf, r);
    assert_int_equal(n, kvrec_size(r));
    assert_int_equal(kvrec_decode(buf, n, d, props), 0);
    assert_int_equal(d->qos, r->qos);
    assert_true(d->deadline_ms == r->deadline_ms);
    assert_int_equal(d->props_len, r->props_len);
    if (r->props_len)
        assert_memory_equal(d->props, r->props, r->props_len);
    assert_int_equal(d->payload_len, r->payload_len);
    if (r->payload_len)
        assert_memory_equal(d->payload, r->payload, r->payload_len);
    return n;
}

static void test_every_kept_property(void **state)
{
    const struct mqtt_user_prop users[] = {{B("k1"), B("v1")}, {B("k2"), B("")}, {B("k1"), B("again")}};
    struct mqtt_props p = {
        .present = MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) | MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) |
                   MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC) |
                   MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA) | MQTT_PROP_BIT(MQTT_PROP_USER),
        .payload_format = 1,
        .content_type = B("text/plain"),
        .response_topic = B("reply/to"),
        .correlation_data = B("\x00\x01\xff"),
        .user_count = 3,
        .user_list = users,
    };
    uint8_t props[1024], buf[2048];
    struct kvrec r = {.qos = 2, .deadline_ms = 0x0123456789abcdefull, .props = props,
                      .props_len = props_bytes(&p, props), .payload = (const uint8_t *)"hello",
                      .payload_len = 5};
    struct kvrec d;
    struct mqtt_props q;
    size_t n = encode_decode(&r, buf, &d, &q);
    assert_int_equal(buf[0], KVREC_VERSION);
    assert_int_equal(buf[2], 0x01); /* big-endian deadline */
    assert_int_equal(buf[9], 0xef);
    assert_true(q.present == p.present);
    assert_int_equal(q.payload_format, 1);
    assert_int_equal(q.content_type.len, 10);
    assert_memory_equal(q.content_type.ptr, "text/plain", 10);
    assert_memory_equal(q.response_topic.ptr, "reply/to", 8);
    assert_int_equal(q.correlation_data.len, 3);
    assert_int_equal(q.user_count, 3);
    struct mqtt_props_iter it;
    struct mqtt_user_prop up;
    mqtt_props_users(&q, &it);
    for (int i = 0; i < 3; i++) {
        assert_true(mqtt_props_next_user(&it, &up));
        assert_int_equal(up.value.len, users[i].value.len);
        assert_memory_equal(up.name.ptr, users[i].name.ptr, users[i].name.len);
    }
    assert_false(mqtt_props_next_user(&it, &up));
    /* Every shorter record is refused, or reads as a shorter payload. */
    for (size_t k = 0; k < n; k++) {
        int rc = kvrec_decode(buf, k, &d, &q);
        if (k >= n - r.payload_len)
            assert_int_equal(rc, 0);
        else
            assert_int_equal(rc, -1);
    }
}

static void test_empty(void **state)
{
    uint8_t buf[64];
    struct kvrec r = {.qos = 0}, d;
    struct mqtt_props q;
    assert_int_equal(encode_decode(&r, buf, &d, &q), KVREC_HEAD + 1);
    assert_true(q.present == 0);
}

static void test_refused(void **state)
{
    uint8_t buf[64];
    struct kvrec r = {.qos = 1, .payload = (const uint8_t *)"x", .payload_len = 1}, d;
    struct mqtt_props q;
    size_t n = kvrec_encode(buf, &r);
    assert_int_equal(kvrec_decode(buf, n, &d, &q), 0);
    buf[0] = KVREC_VERSION + 1; /* another version: not guessed at */
    assert_int_equal(kvrec_decode(buf, n, &d, &q), -1);
    buf[0] = KVREC_VERSION;
    buf[1] = 3;
    assert_int_equal(kvrec_decode(buf, n, &d, &q), -1);
    buf[1] = 1;
    /* A non-minimal property length (0x80 0x00 for 0). */
    uint8_t nm[] = {KVREC_VERSION, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00};
    assert_int_equal(kvrec_decode(nm, sizeof nm, &d, &q), -1);
    /* Properties a retained copy never keeps: Message Expiry (the deadline
     * is), Topic Alias, Subscription Identifier. */
    const uint8_t not_kept[][8] = {
        {5, MQTT_PROP_MESSAGE_EXPIRY, 0, 0, 0, 9},
        {3, MQTT_PROP_TOPIC_ALIAS, 0, 1},
        {2, MQTT_PROP_SUBSCRIPTION_ID, 1},
    };
    for (size_t i = 0; i < sizeof not_kept / sizeof *not_kept; i++) {
        uint8_t rec[32] = {KVREC_VERSION, 0};
        size_t len = (size_t)not_kept[i][0] + 1;
        memcpy(rec + KVREC_HEAD, not_kept[i], len);
        assert_int_equal(kvrec_decode(rec, KVREC_HEAD + len, &d, &q), -1);
    }
    /* A property block longer than the record. */
    uint8_t trunc[] = {KVREC_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, MQTT_PROP_PAYLOAD_FORMAT, 1};
    assert_int_equal(kvrec_decode(trunc, sizeof trunc, &d, &q), -1);
}

static void test_random_round_trip(void **state)
{
    rng_state = 0x5eed;
    static uint8_t payload[4096], props[1024], buf[8192];
    static struct mqtt_user_prop users[8];
    static uint8_t text[8][16];
    for (int iter = 0; iter < 5000; iter++) {
        struct mqtt_props p = {0};
        if (rnd(2)) {
            p.present |= MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT);
            p.payload_format = (uint8_t)rnd(2);
        }
        if (rnd(2)) {
            p.present |= MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA);
            p.correlation_data = (struct mqtt_bytes){payload, rnd(64)};
        }
        uint32_t nu = rnd(9);
        for (uint32_t i = 0; i < nu; i++) {
            for (int k = 0; k < 16; k++)
                text[i][k] = (uint8_t)('a' + rnd(26));
            users[i] = (struct mqtt_user_prop){{text[i], rnd(16)}, {text[i], rnd(16)}};
        }
        if (nu) {
            p.present |= MQTT_PROP_BIT(MQTT_PROP_USER);
            p.user_count = nu;
            p.user_list = users;
        }
        for (size_t i = 0; i < sizeof payload; i++)
            payload[i] = (uint8_t)rnd64();
        struct kvrec r = {.qos = (uint8_t)rnd(3), .deadline_ms = rnd(2) ? rnd64() : 0,
                          .props = props, .props_len = props_bytes(&p, props),
                          .payload = payload, .payload_len = rnd(sizeof payload)};
        struct kvrec d;
        struct mqtt_props q;
        size_t n = encode_decode(&r, buf, &d, &q);
        /* Re-encoding what was read gives the same bytes. */
        static uint8_t again[8192];
        assert_int_equal(kvrec_encode(again, &d), n);
        assert_memory_equal(again, buf, n);
        assert_true(q.present == p.present);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kept_property),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_random_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
