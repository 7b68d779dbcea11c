/* test_hdr.c - unit tests for the NATS headers that carry RETAIN and the
 * MQTT 5 properties between cluster nodes (cluster/hdr.c): the exact
 * spelling of each header, round trips of every property (empty strings,
 * the encodings' special bytes, repeated user properties in order),
 * malformed and repeated headers ignored and counted while the rest is
 * kept, and a property test of random property sets round-tripping
 * through the MQTT encoding a subscriber gets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/hdr.h"
#include "mqtt/mqtt_props.h"
#include "test_rng.h"

#define B(lit) ((struct mqtt_bytes){(const uint8_t *)(lit), sizeof(lit) - 1})

/* What hdr_encode put, in order. */
struct got {
    char name[32][32];
    char *value[32];
    int n, fail_at;
};

static bool put(void *ctx, const char *name, const char *value)
{
    struct got *g = ctx;
    if (g->n == g->fail_at || g->n == 32)
        return false;
    snprintf(g->name[g->n], sizeof g->name[0], "%s", name);
    g->value[g->n++] = strdup(value);
    return true;
}

static void got_free(struct got *g)
{
    for (int i = 0; i < g->n; i++)
        free(g->value[i]);
    g->n = 0;
}

/* Encodes p and retain, then decodes what came out into h. */
static void round_trip(const struct mqtt_props *p, bool retain, struct got *g, struct hdr_in *h)
{
    *g = (struct got){.fail_at = -1};
    assert_true(hdr_encode(p, retain, put, g));
    hdr_in_init(h);
    for (int i = 0; i < g->n; i++)
        hdr_in_add(h, g->name[i], g->value[i]);
}

static bool same(struct mqtt_bytes a, struct mqtt_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static void test_spelling(void **state)
{
    const struct mqtt_user_prop users[] = {{B("k"), B("v")}, {B("a:b"), B("x\ny")}, {B(""), B("")},
                                           {B("k"), B("caf\xc3\xa9 100%")}};
    struct mqtt_props p = {
        .present = MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY) | MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) |
                   MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) | MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC) |
                   MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA) | MQTT_PROP_BIT(MQTT_PROP_USER) |
                   MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS),
        .message_expiry = 4294967295u,
        .payload_format = 1,
        .content_type = B("text/plain; a=b"),
        .response_topic = B("re/ply"),
        .correlation_data = B("\x00\xff"),
        .topic_alias = 7, /* the connection's: not carried */
        .user_count = 4,
        .user_list = users,
    };
    struct got g = {.fail_at = -1};
    assert_true(hdr_encode(&p, true, put, &g));
    const char *want[][2] = {
        {HDR_RETAIN, "1"},
        {HDR_EXPIRY, "4294967295"},
        {HDR_FORMAT, "1"},
        {HDR_CONTENT_TYPE, "text/plain;%20a=b"},
        {HDR_RESPONSE_TOPIC, "re/ply"},
        {HDR_CORRELATION, "AP8="},
        {HDR_USER, "k:v"},
        {HDR_USER, "a%3Ab:x%0Ay"},
        {HDR_USER, "%:%"},
        {HDR_USER, "k:caf%C3%A9%20100%25"},
    };
    assert_int_equal(g.n, sizeof want / sizeof *want);
    for (int i = 0; i < g.n; i++) {
        assert_string_equal(g.name[i], want[i][0]);
        assert_string_equal(g.value[i], want[i][1]);
    }
    got_free(&g);
    /* Nothing to carry: no header at all. */
    assert_true(hdr_encode(NULL, false, put, &g));
    struct mqtt_props none = {.present = MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID)};
    assert_true(hdr_encode(&none, false, put, &g));
    assert_int_equal(g.n, 0);
    /* Empty strings and data still make a header. */
    struct mqtt_props empty = {.present = MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) |
                                          MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA)};
    assert_true(hdr_encode(&empty, false, put, &g));
    assert_int_equal(g.n, 2);
    assert_string_equal(g.value[0], "%");
    assert_string_equal(g.value[1], "=");
    got_free(&g);
}

static void test_put_failure_stops(void **state)
{
    const struct mqtt_user_prop users[] = {{B("a"), B("1")}, {B("b"), B("2")}};
    struct mqtt_props p = {.present = MQTT_PROP_BIT(MQTT_PROP_USER), .user_count = 2,
                           .user_list = users};
    struct got g = {.fail_at = 1};
    assert_false(hdr_encode(&p, false, put, &g));
    assert_int_equal(g.n, 1);
    got_free(&g);
    g.fail_at = 0;
    assert_false(hdr_encode(&p, true, put, &g));
    assert_int_equal(g.n, 0);
}

static void test_round_trip(void **state)
{
    const struct mqtt_user_prop users[] = {{B("k"), B("1")}, {B("%41"), B(" =3D% ")},
                                           {B("k"), B("2")}, {B(""), B("")},
                                           {B("\xd0\xba"), B("\xe2\x98\x83\r\n")}};
    struct mqtt_props p = {
        .present = MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY) | MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) |
                   MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) | MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC) |
                   MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA) | MQTT_PROP_BIT(MQTT_PROP_USER),
        .message_expiry = 0,
        .payload_format = 0,
        .content_type = B(""),
        .response_topic = B("a b/$c/%"),
        .correlation_data = B(""),
        .user_count = 5,
        .user_list = users,
    };
    struct got g;
    struct hdr_in h;
    round_trip(&p, false, &g, &h);
    const struct mqtt_props *q = hdr_in_end(&h);
    assert_non_null(q);
    assert_int_equal(h.bad, 0);
    assert_false(h.retain);
    assert_int_equal(q->present, p.present);
    assert_int_equal(q->message_expiry, 0);
    assert_int_equal(q->payload_format, 0);
    assert_true(same(q->content_type, p.content_type));
    assert_true(same(q->response_topic, p.response_topic));
    assert_true(same(q->correlation_data, p.correlation_data));
    assert_int_equal(q->user_count, 5);
    for (int i = 0; i < 5; i++) {
        assert_true(same(q->user_list[i].name, users[i].name));
        assert_true(same(q->user_list[i].value, users[i].value));
    }
    hdr_in_free(&h);
    got_free(&g);
    /* Retain alone: no properties. */
    round_trip(NULL, true, &g, &h);
    assert_null(hdr_in_end(&h));
    assert_true(h.retain);
    hdr_in_free(&h);
    got_free(&g);
}

/* One header on its own: whether it was kept (and counted bad if not). */
static bool kept(const char *name, const char *value)
{
    struct hdr_in h;
    hdr_in_init(&h);
    hdr_in_add(&h, name, value);
    const struct mqtt_props *p = hdr_in_end(&h);
    bool ok = p != NULL || h.retain;
    assert_int_equal(h.bad, ok ? 0 : 1);
    hdr_in_free(&h);
    return ok;
}

static void test_malformed_ignored(void **state)
{
    assert_true(kept(HDR_RETAIN, "1"));
    assert_false(kept(HDR_RETAIN, "0"));
    assert_false(kept(HDR_RETAIN, ""));
    assert_true(kept(HDR_EXPIRY, "0"));
    assert_true(kept(HDR_EXPIRY, "4294967295"));
    assert_false(kept(HDR_EXPIRY, "4294967296"));
    assert_false(kept(HDR_EXPIRY, "99999999999999999999999"));
    assert_false(kept(HDR_EXPIRY, "01"));
    assert_false(kept(HDR_EXPIRY, "-1"));
    assert_false(kept(HDR_EXPIRY, "1 "));
    assert_false(kept(HDR_EXPIRY, ""));
    assert_false(kept(HDR_FORMAT, "2"));
    assert_false(kept(HDR_FORMAT, "10"));
    assert_true(kept(HDR_CONTENT_TYPE, "%"));
    assert_false(kept(HDR_CONTENT_TYPE, ""));
    assert_false(kept(HDR_CONTENT_TYPE, "a%2"));   /* truncated escape */
    assert_false(kept(HDR_CONTENT_TYPE, "a%2a"));  /* lower case */
    assert_false(kept(HDR_CONTENT_TYPE, "%41"));   /* 'A' needs no escape */
    assert_false(kept(HDR_CONTENT_TYPE, "a b"));   /* a space must be escaped */
    assert_false(kept(HDR_CONTENT_TYPE, "a:b"));   /* so must ':' */
    assert_false(kept(HDR_CONTENT_TYPE, "%C0%80")); /* overlong: not UTF-8 */
    assert_false(kept(HDR_CONTENT_TYPE, "%00"));   /* U+0000: not MQTT's UTF-8 */
    assert_false(kept(HDR_CONTENT_TYPE, "%ED%A0%80")); /* a surrogate */
    assert_false(kept(HDR_CONTENT_TYPE, "caf\xc3\xa9")); /* raw non-ASCII */
    assert_true(kept(HDR_RESPONSE_TOPIC, "a/b"));
    assert_false(kept(HDR_RESPONSE_TOPIC, "a/#"));
    assert_false(kept(HDR_RESPONSE_TOPIC, "a/+/b"));
    assert_false(kept(HDR_RESPONSE_TOPIC, "%"));  /* a topic cannot be empty */
    assert_true(kept(HDR_CORRELATION, "="));
    assert_true(kept(HDR_CORRELATION, "AA=="));
    assert_false(kept(HDR_CORRELATION, ""));
    assert_false(kept(HDR_CORRELATION, "AA"));   /* no padding */
    assert_false(kept(HDR_CORRELATION, "A A="));
    assert_false(kept(HDR_CORRELATION, "===="));
    assert_false(kept(HDR_USER, ":")); /* empty strings are "%" */
    assert_true(kept(HDR_USER, "%:%"));
    assert_false(kept(HDR_USER, "novalue"));
    assert_false(kept(HDR_USER, "a:b:c"));  /* a ':' in the value must be escaped */
    assert_false(kept(HDR_USER, "%00:v"));
    /* Values of 65535 bytes are MQTT's longest. */
    size_t n = 65536;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = '\0';
    assert_false(kept(HDR_CONTENT_TYPE, big));
    big[n - 1] = '\0';
    assert_true(kept(HDR_CONTENT_TYPE, big));
    free(big);
    /* Not ours: skipped, not counted. */
    struct hdr_in h;
    hdr_in_init(&h);
    hdr_in_add(&h, "Mqtt-Id", "x");
    hdr_in_add(&h, "Mqtt-Qos", "1");
    hdr_in_add(&h, "mqtt-retain", "1");
    assert_null(hdr_in_end(&h));
    assert_false(h.retain);
    assert_int_equal(h.bad, 0);
    hdr_in_free(&h);
}

static void test_repeats_and_mixtures(void **state)
{
    struct hdr_in h;
    hdr_in_init(&h);
    hdr_in_add(&h, HDR_FORMAT, "7");    /* bad */
    hdr_in_add(&h, HDR_FORMAT, "1");    /* the first good one counts */
    hdr_in_add(&h, HDR_FORMAT, "0");    /* a repeat: ignored */
    hdr_in_add(&h, HDR_RETAIN, "1");
    hdr_in_add(&h, HDR_RETAIN, "1");    /* a repeat */
    hdr_in_add(&h, HDR_USER, "a:1");
    hdr_in_add(&h, HDR_USER, "bad");
    hdr_in_add(&h, HDR_CONTENT_TYPE, "x");
    hdr_in_add(&h, HDR_CONTENT_TYPE, "y");
    hdr_in_add(&h, HDR_USER, "a:2");
    const struct mqtt_props *p = hdr_in_end(&h);
    assert_non_null(p);
    assert_int_equal(h.bad, 5);
    assert_true(h.retain);
    assert_int_equal(p->payload_format, 1);
    assert_true(same(p->content_type, B("x")));
    assert_int_equal(p->user_count, 2);
    assert_true(same(p->user_list[0].value, B("1")));
    assert_true(same(p->user_list[1].value, B("2")));
    assert_int_equal(p->present, MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) |
                                     MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) |
                                     MQTT_PROP_BIT(MQTT_PROP_USER));
    hdr_in_free(&h);
}

/* A random string of valid MQTT UTF-8, the encodings' special bytes often. */
static size_t rnd_utf8(uint8_t *out, size_t max)
{
    static const char *pieces[] = {"a", "Z", "%", ":", "=", " ", "\n", "\r", "\t", "\x7f",
                                   "\xc3\xa9", "\xe2\x98\x83", "\xf0\x9f\x98\x80", "/", "#", "."};
    size_t n = 0, want = rnd((uint32_t)max / 4 + 1);
    for (size_t i = 0; i < want; i++) {
        const char *s = pieces[rnd(sizeof pieces / sizeof *pieces)];
        memcpy(out + n, s, strlen(s));
        n += strlen(s);
    }
    return n;
}

/* Random property sets: the MQTT encoding a subscriber would get from the
 * decoded headers is the one made from the originals. */
static void test_property_round_trip(void **state)
{
    rng_state = 0x5eed0015u;
    static uint8_t pool[64][256];
    struct mqtt_user_prop users[16];
    for (int iter = 0; iter < 5000; iter++) {
        struct mqtt_props p = {0};
        int s = 0;
        if (rnd(2)) {
            p.present |= MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY);
            p.message_expiry = (uint32_t)rnd64();
        }
        if (rnd(2)) {
            p.present |= MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT);
            p.payload_format = (uint8_t)rnd(2);
        }
        if (rnd(2)) {
            p.present |= MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE);
            p.content_type = (struct mqtt_bytes){pool[s], rnd_utf8(pool[s], 200)};
            s++;
        }
        if (rnd(2)) {
            p.present |= MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC);
            pool[s][0] = 'r';
            size_t n = 1 + rnd_utf8(pool[s] + 1, 200);
            for (size_t i = 0; i < n; i++)
                if (pool[s][i] == '#')
                    pool[s][i] = ','; /* no wildcards in a topic name */
            p.response_topic = (struct mqtt_bytes){pool[s], n};
            s++;
        }
        if (rnd(2)) {
            p.present |= MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA);
            size_t n = rnd(40);
            for (size_t i = 0; i < n; i++)
                pool[s][i] = (uint8_t)rnd(256);
            p.correlation_data = (struct mqtt_bytes){pool[s], n};
            s++;
        }
        uint32_t nu = rnd(4) ? 0 : rnd(16) + 1;
        for (uint32_t i = 0; i < nu && s + 2 <= 64; i++, s += 2)
            users[i] = (struct mqtt_user_prop){{pool[s], rnd_utf8(pool[s], 40)},
                                               {pool[s + 1], rnd_utf8(pool[s + 1], 40)}};
        if (nu) {
            p.present |= MQTT_PROP_BIT(MQTT_PROP_USER);
            p.user_count = nu;
            p.user_list = users;
        }
        bool retain = rnd(2);
        struct got g;
        struct hdr_in h;
        round_trip(&p, retain, &g, &h);
        const struct mqtt_props *q = hdr_in_end(&h);
        assert_int_equal(h.bad, 0);
        assert_int_equal(h.retain, retain);
        if (!p.present) {
            assert_null(q);
        } else {
            assert_non_null(q);
            size_t n = mqtt_props_size(&p);
            assert_int_equal(mqtt_props_size(q), n);
            uint8_t *a = malloc(n), *b = malloc(n);
            mqtt_props_encode(a, &p);
            mqtt_props_encode(b, q);
            assert_memory_equal(a, b, n);
            free(a);
            free(b);
        }
        hdr_in_free(&h);
        got_free(&g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spelling),          cmocka_unit_test(test_put_failure_stops),
        cmocka_unit_test(test_round_trip),        cmocka_unit_test(test_malformed_ignored),
        cmocka_unit_test(test_repeats_and_mixtures), cmocka_unit_test(test_property_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
