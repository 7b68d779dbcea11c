/* test_subject.c - unit tests for the MQTT <-> NATS subject mapping
 * (cluster/subject.c): tricky topics both ways, every escaped byte,
 * filters and their second subscription, the '$' rule, the limits, and two
 * property tests: random topics round-trip, and for random topic/filter
 * pairs MQTT's matcher (mqtt_topic_match) agrees with NATS's matching of
 * the mapped subject against the mapped subscription(s), by the small
 * NATS matcher below.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/subject.h"
#include "mqtt/mqtt_topic.h"
#include "nats_match.h"
#include "test_rng.h"

#define S(lit) (const uint8_t *)(lit), (sizeof(lit) - 1)

static subject_map M;

static int setup(void **state)
{
    return subject_map_init(&M, "mqtt");
}

static void test_nats_matcher(void **state)
{
    assert_true(nats_match("a.b", "a.b"));
    assert_false(nats_match("a.b", "a.b.c"));
    assert_false(nats_match("a.b.c", "a.b"));
    assert_true(nats_match("a.*", "a.b"));
    assert_false(nats_match("a.*", "a"));
    assert_false(nats_match("a.*", "a.b.c"));
    assert_true(nats_match("a.>", "a.b.c"));
    assert_false(nats_match("a.>", "a"));
    assert_true(nats_match("*.b", "a.b"));
    assert_false(nats_match("ab", "a"));
}

/* topic -> subject must be want, and back */
static void round_trip(const uint8_t *t, size_t tn, const char *want)
{
    char subj[SUBJECT_MAX + 1];
    size_t n = subject_from_topic(&M, t, tn, subj, sizeof subj);
    assert_int_not_equal(n, 0);
    assert_string_equal(subj, want);
    assert_int_equal(n, strlen(want));
    uint8_t back[4096];
    size_t bn = subject_to_topic(&M, subj, n, back, sizeof back);
    assert_int_equal(bn, tn);
    assert_memory_equal(back, t, tn);
}
#define RT(lit, want) round_trip(S(lit), want)

static void test_tricky_topics(void **state)
{
    RT("a", "mqtt.t.a");
    RT("a/b/c", "mqtt.t.a.b.c");
    RT("Sport-2_x/Tennis", "mqtt.t.Sport-2_x.Tennis");
    RT("a.b", "mqtt.t.a=2Eb");      /* NATS's separator */
    RT("a b", "mqtt.t.a=20b");      /* whitespace is NATS's field separator */
    RT("a\tb\r\n", "mqtt.t.a=09b=0D=0A");
    RT("*", "mqtt.t.=2A");          /* a whole-level '*' must not become a wildcard */
    RT(">", "mqtt.t.=3E");
    RT("a/*/>", "mqtt.t.a.=2A.=3E");
    RT("=", "mqtt.t.=3D");          /* the escape character itself */
    RT("=3D", "mqtt.t.=3D3D");
    RT("/", "mqtt.t.=.=");          /* empty levels */
    RT("/a", "mqtt.t.=.a");
    RT("a/", "mqtt.t.a.=");
    RT("a//b", "mqtt.t.a.=.b");
    RT("//", "mqtt.t.=.=.=");
    RT("x/$y", "mqtt.t.x.=24y");   /* '$' past the first level is ordinary */
    RT("caf\xc3\xa9", "mqtt.t.caf=C3=A9"); /* UTF-8, byte by byte */
    RT("\xf0\x9f\x98\x80", "mqtt.t.=F0=9F=98=80");
    RT("a%b~c", "mqtt.t.a=25b=7Ec");
}

static void test_dollar_topics(void **state)
{
    RT("$SYS/broker/uptime", "mqtt.d.SYS.broker.uptime");
    RT("$", "mqtt.d.=");
    RT("$/a", "mqtt.d.=.a");
    RT("$$x", "mqtt.d.=24x");
    RT("$share", "mqtt.d.share");
}

/* Every byte a topic can hold: the plain ones as they are, all others as
 * =XX, each of them in a level of its own and between other bytes. */
static void test_every_byte(void **state)
{
    for (unsigned c = 1; c < 128; c++) {
        if (c == '/' || c == '+' || c == '#')
            continue;
        uint8_t t[3] = {'x', (uint8_t)c, 'y'};
        char want[32];
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '_';
        if (plain)
            snprintf(want, sizeof want, "mqtt.t.x%cy", (char)c);
        else
            snprintf(want, sizeof want, "mqtt.t.x=%02Xy", c);
        round_trip(t, 3, want);
        if (c != '$') {
            if (plain)
                snprintf(want, sizeof want, "mqtt.t.%c", (char)c);
            else
                snprintf(want, sizeof want, "mqtt.t.=%02X", c);
            round_trip(t + 1, 1, want);
        }
    }
    /* every lead and continuation byte, in a two-byte character */
    for (unsigned c = 0x80; c < 0xc0; c++) {
        uint8_t t[2] = {0xc2, (uint8_t)c};
        char want[32];
        snprintf(want, sizeof want, "mqtt.t.=C2=%02X", c);
        round_trip(t, 2, want);
    }
}

static void test_invalid_topics(void **state)
{
    char subj[SUBJECT_MAX + 1];
    assert_int_equal(subject_from_topic(&M, S(""), subj, sizeof subj), 0);
    assert_int_equal(subject_from_topic(&M, S("a/+"), subj, sizeof subj), 0);
    assert_int_equal(subject_from_topic(&M, S("#"), subj, sizeof subj), 0);
    assert_int_equal(subject_from_topic(&M, S("a\0b"), subj, sizeof subj), 0);
    assert_int_equal(subject_from_topic(&M, S("\xc3"), subj, sizeof subj), 0);
}

static void test_decode_rejects(void **state)
{
    static const char *bad[] = {
        "mqtt", "mqtt.t", "mqtt.t.", "mqtt.x.a", "mqtt.ta", "mqt.t.a", "mqttt.t.a", "other.t.a",
        "mqtt.t.a..b",             /* empty token */
        "mqtt.t.a.",               /* trailing '.' */
        "mqtt.t.*", "mqtt.t.>", "mqtt.t.a.*",  /* wildcards are not topics */
        "mqtt.t.=2e",              /* lower-case hex */
        "mqtt.t.=61",              /* 'a' escaped: not canonical */
        "mqtt.t.=2",  "mqtt.t.a=", "mqtt.t.==", "mqtt.t.=G0",
        "mqtt.t.=24SYS",           /* a '$' topic in the ordinary class */
        "mqtt.t.=00",              /* NUL */
        "mqtt.t.=2B", "mqtt.t.=23", /* '+' and '#' cannot be in a name */
        "mqtt.t.=2F",              /* '/' inside a level */
        "mqtt.t.=C3",              /* half a UTF-8 character */
        "mqtt.t.a b", "mqtt.t.a$",
    };
    uint8_t back[64];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (subject_to_topic(&M, bad[i], strlen(bad[i]), back, sizeof back) != 0)
            fail_msg("decoded %s", bad[i]);
    }
    /* too small a buffer */
    assert_int_equal(subject_to_topic(&M, "mqtt.t.abc", 10, back, 2), 0);
    assert_int_equal(subject_to_topic(&M, "mqtt.t.abc", 10, back, 3), 3);
}

static void test_prefix(void **state)
{
    subject_map m;
    assert_int_equal(subject_map_init(&m, "shootout.site-1"), 0);
    char subj[64];
    assert_int_not_equal(subject_from_topic(&m, S("a/b"), subj, sizeof subj), 0);
    assert_string_equal(subj, "shootout.site-1.t.a.b");
    uint8_t back[8];
    assert_int_equal(subject_to_topic(&m, subj, strlen(subj), back, sizeof back), 3);
    assert_int_equal(subject_to_topic(&M, subj, strlen(subj), back, sizeof back), 0);
    static const char *bad[] = {"", ".", "a.", ".a", "a..b", "$SYS", "a.*", "a.>", "a b", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(subject_map_init(&m, bad[i]), -1);
    char longp[SUBJECT_PREFIX_MAX + 2];
    memset(longp, 'p', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(subject_map_init(&m, longp), -1);
    longp[SUBJECT_PREFIX_MAX] = '\0';
    assert_int_equal(subject_map_init(&m, longp), 0);
}

static void test_limits(void **state)
{
    static uint8_t t[SUBJECT_MAX];
    static char subj[SUBJECT_MAX + 8];
    /* "mqtt.t." is 7 bytes: SUBJECT_MAX - 7 plain bytes fit exactly */
    memset(t, 'a', sizeof t);
    assert_int_equal(subject_from_topic(&M, t, SUBJECT_MAX - 7, subj, sizeof subj), SUBJECT_MAX);
    assert_int_equal(subject_from_topic(&M, t, SUBJECT_MAX - 6, subj, sizeof subj), 0);
    /* escaping triples: a third as many spaces */
    memset(t, ' ', sizeof t);
    assert_int_equal(subject_from_topic(&M, t, (SUBJECT_MAX - 7) / 3, subj, sizeof subj),
                     7 + (SUBJECT_MAX - 7) / 3 * 3);
    assert_int_equal(subject_from_topic(&M, t, (SUBJECT_MAX - 7) / 3 + 1, subj, sizeof subj), 0);
    /* the caller's cap counts the NUL */
    assert_int_equal(subject_from_topic(&M, S("ab"), subj, 10), 9);
    assert_int_equal(subject_from_topic(&M, S("ab"), subj, 9), 0);
    assert_int_equal(subject_from_topic(&M, S("ab"), subj, 0), 0);
    /* a filter's subscription has the same limit */
    subject_subs subs;
    memset(t, 'a', sizeof t);
    assert_int_equal(subject_subs_from_filter(&M, t, SUBJECT_MAX - 7, &subs), 0);
    assert_int_equal(subject_subs_from_filter(&M, t, SUBJECT_MAX - 6, &subs), -1);
}

static void subs_are(const char *filter, const char *want0, const char *want1)
{
    subject_subs subs;
    assert_int_equal(subject_subs_from_filter(&M, (const uint8_t *)filter, strlen(filter), &subs), 0);
    assert_int_equal(subs.n, want1 ? 2 : 1);
    assert_string_equal(subs.subj[0], want0);
    assert_int_equal(subs.len[0], strlen(want0));
    if (want1) {
        assert_string_equal(subs.subj[1], want1);
        assert_int_equal(subs.len[1], strlen(want1));
    }
}

static void test_filters(void **state)
{
    subs_are("a/b", "mqtt.t.a.b", NULL);
    subs_are("+", "mqtt.t.*", NULL);
    subs_are("a/+/c", "mqtt.t.a.*.c", NULL);
    subs_are("+/+", "mqtt.t.*.*", NULL);
    subs_are("#", "mqtt.t.>", NULL);
    subs_are("a/#", "mqtt.t.a.>", "mqtt.t.a");
    subs_are("+/#", "mqtt.t.*.>", "mqtt.t.*");
    subs_are("/#", "mqtt.t.=.>", "mqtt.t.=");
    subs_are("a//+", "mqtt.t.a.=.*", NULL);
    subs_are("a.b/*/>", "mqtt.t.a=2Eb.=2A.=3E", NULL); /* literal, not wildcards */
    subs_are("$SYS/#", "mqtt.d.SYS.>", "mqtt.d.SYS");
    subs_are("$SYS/+/load", "mqtt.d.SYS.*.load", NULL);
    subs_are("$/#", "mqtt.d.=.>", "mqtt.d.=");
    subject_subs subs;
    assert_int_equal(subject_subs_from_filter(&M, S(""), &subs), -1);
    assert_int_equal(subject_subs_from_filter(&M, S("a+"), &subs), -1);
    assert_int_equal(subject_subs_from_filter(&M, S("a/#/b"), &subs), -1);
    assert_int_equal(subject_subs_from_filter(&M, S("a#"), &subs), -1);
}

static bool any_match(const subject_subs *subs, const char *subj)
{
    for (int i = 0; i < subs->n; i++)
        if (nats_match(subs->subj[i], subj))
            return true;
    return false;
}

/* Never more than one of a filter's subscriptions matches a subject, so a
 * subscriber holding both gets each message once. */
static int count_match(const subject_subs *subs, const char *subj)
{
    int n = 0;
    for (int i = 0; i < subs->n; i++)
        n += nats_match(subs->subj[i], subj);
    return n;
}

static bool maps_match(const char *filter, const char *topic)
{
    subject_subs subs;
    char subj[SUBJECT_MAX + 1];
    assert_int_equal(subject_subs_from_filter(&M, (const uint8_t *)filter, strlen(filter), &subs), 0);
    assert_int_not_equal(subject_from_topic(&M, (const uint8_t *)topic, strlen(topic), subj, sizeof subj),
                         0);
    assert_true(count_match(&subs, subj) <= 1);
    return any_match(&subs, subj);
}

/* The '$' rule: leading wildcards do not reach '$' topics; literal '$'
 * filters do. */
static void test_dollar_rule(void **state)
{
    assert_false(maps_match("#", "$SYS/x"));
    assert_false(maps_match("+/x", "$SYS/x"));
    assert_false(maps_match("+", "$SYS"));
    assert_false(maps_match("+/#", "$SYS/a/b"));
    assert_true(maps_match("$SYS/#", "$SYS/x"));
    assert_true(maps_match("$SYS/#", "$SYS"));
    assert_true(maps_match("$SYS/+", "$SYS/x"));
    assert_true(maps_match("#", "x/$SYS"));
    assert_true(maps_match("+/+", "x/$SYS"));
    assert_false(maps_match("$SYS/#", "SYS/x"));
    assert_false(maps_match("SYS/#", "$SYS/x"));
}

static void test_parent_rule(void **state)
{
    assert_true(maps_match("a/#", "a"));
    assert_true(maps_match("a/#", "a/b/c"));
    assert_true(maps_match("a/#", "a/"));
    assert_false(maps_match("a/#", "ab"));
    assert_true(maps_match("+/#", "a"));
    assert_true(maps_match("#", "/"));
    assert_true(maps_match("+", "x"));
    assert_true(maps_match("+/+", "/"));
    assert_false(maps_match("+", "/"));
}

/* A random topic over an alphabet heavy in what the mapping treats
 * specially; levels may be empty. */
static size_t random_topic(uint8_t *t, size_t cap)
{
    static const char *atoms[] = {"a", "b", "Z9", "-", "_", ".", " ", "\t", "*", ">", "=",
                                  "=3D", "$", "%", "\xc3\xa9", "\xf0\x9f\x98\x80", "/", "/", "/"};
    size_t n = 0, atoms_n = 1 + rnd(8);
    for (size_t i = 0; i < atoms_n; i++) {
        const char *a = atoms[rnd(sizeof atoms / sizeof atoms[0])];
        size_t an = strlen(a);
        if (n + an > cap)
            break;
        memcpy(t + n, a, an);
        n += an;
    }
    if (n == 0)
        t[n++] = 'a';
    return n;
}

static void test_property_round_trip(void **state)
{
    rng_state = 0x5ab1ec7ull;
    for (int i = 0; i < 20000; i++) {
        uint8_t t[128];
        size_t tn = random_topic(t, sizeof t);
        char subj[SUBJECT_MAX + 1];
        size_t sn = subject_from_topic(&M, t, tn, subj, sizeof subj);
        assert_int_not_equal(sn, 0);
        /* the subject is a literal NATS subject: no empty token, no wildcard,
         * no whitespace, ASCII only */
        assert_null(strstr(subj, ".."));
        assert_int_not_equal(subj[sn - 1], '.');
        for (size_t j = 0; j < sn; j++)
            assert_true(subj[j] > ' ' && subj[j] < 127 && subj[j] != '*' && subj[j] != '>');
        uint8_t back[128];
        assert_int_equal(subject_to_topic(&M, subj, sn, back, sizeof back), tn);
        assert_memory_equal(back, t, tn);
    }
}

/* A filter made from a topic by turning some levels into '+' and perhaps
 * cutting it with '#', or from another random topic, so that both matches
 * and misses are common. */
static size_t random_filter(const uint8_t *t, size_t tn, char *f, size_t cap)
{
    uint8_t other[64];
    if (rnd(4) == 0) {
        tn = random_topic(other, sizeof other);
        t = other;
    }
    size_t n = 0, pos = 0, lvn;
    const uint8_t *lv;
    bool first = true;
    while (mqtt_topic_next_level(t, tn, &pos, &lv, &lvn)) {
        if (!first)
            f[n++] = '/';
        first = false;
        uint32_t r = rnd(10);
        if (r < 3) {
            f[n++] = '+';
        } else if (r == 3) {
            f[n++] = '#';
            break;
        } else {
            memcpy(f + n, lv, lvn);
            n += lvn;
        }
        if (rnd(8) == 0)
            break; /* a shorter filter */
    }
    if (rnd(6) == 0) {
        memcpy(f + n, "/#", 2);
        n += 2;
    }
    assert_true(n < cap);
    f[n] = '\0';
    return n;
}

static void test_property_match(void **state)
{
    rng_state = 0xf117e25ull;
    int matched = 0, total = 0;
    for (int i = 0; i < 50000; i++) {
        uint8_t t[128];
        size_t tn = random_topic(t, sizeof t - 1);
        char f[512];
        size_t fn = random_filter(t, tn, f, sizeof f);
        if (!mqtt_topic_filter_valid((const uint8_t *)f, fn))
            continue; /* e.g. "#/#" from a cut after a cut */
        t[tn] = '\0';
        subject_subs subs;
        char subj[SUBJECT_MAX + 1];
        assert_int_equal(subject_subs_from_filter(&M, (const uint8_t *)f, fn, &subs), 0);
        assert_int_not_equal(subject_from_topic(&M, t, tn, subj, sizeof subj), 0);
        bool want = mqtt_topic_match((const uint8_t *)f, fn, t, tn);
        if (want != any_match(&subs, subj))
            fail_msg("filter '%s' topic '%s': MQTT %d, NATS %s / %s", f, (char *)t, want, subs.subj[0],
                     subs.n > 1 ? subs.subj[1] : "-");
        assert_true(count_match(&subs, subj) <= 1);
        matched += want;
        total++;
    }
    /* both outcomes must be well represented for the test to mean anything */
    assert_true(total > 40000);
    assert_true(matched > total / 10 && matched < total * 9 / 10);
}

static void test_queue_group(void **state)
{
    char q[64];
    assert_int_equal(subject_queue_group(S("workers"), q, sizeof q), 7);
    assert_string_equal(q, "workers");
    assert_int_not_equal(subject_queue_group(S("a b.c*>"), q, sizeof q), 0);
    assert_string_equal(q, "a=20b=2Ec=2A=3E");
    assert_int_equal(subject_queue_group(S(""), q, sizeof q), 0);
    assert_int_equal(subject_queue_group(S("abc"), q, 3), 0);
}

/* A group name or client id (the sessions' KV key) back from its token:
 * every byte string, '/' and '=' included, round-trips; what
 * subject_queue_group never writes is refused. */
static void test_token_decode(void **state)
{
    uint8_t in[64], out[64];
    char t[3 * 64 + 1];
    rng_state = 7;
    for (int i = 0; i < 20000; i++) {
        size_t n = 1 + rnd(sizeof in);
        for (size_t j = 0; j < n; j++)
            in[j] = rnd(4) ? (uint8_t)"a/=.Z-_ 9"[rnd(9)] : (uint8_t)rnd(256);
        size_t tn = subject_queue_group(in, n, t, sizeof t);
        assert_int_not_equal(tn, 0);
        assert_int_equal(subject_token_decode(t, tn, out, sizeof out), n);
        assert_memory_equal(out, in, n);
    }
    static const char *const bad[] = {"=", "=2", "=41", "=2f", "a.b", "a*", "=G0", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(subject_token_decode(bad[i], strlen(bad[i]), out, sizeof out), 0);
    assert_int_equal(subject_token_decode("abc", 3, out, 2), 0);
    assert_int_equal(subject_token_decode("a=2Fb", 5, out, sizeof out), 3);
    assert_memory_equal(out, "a/b", 3);
}

static void test_stream_class(void **state)
{
    (void)state;
    subject_map m;
    assert_int_equal(subject_map_init(&m, "a.b"), 0);
    char subj[64], js[64], back[64];
    size_t n = subject_from_topic(&m, (const uint8_t *)"x/y", 3, subj, sizeof subj);
    assert_string_equal(subj, "a.b.t.x.y");
    assert_int_equal(subject_to_stream(&m, subj, n, js, sizeof js), n + 2);
    assert_string_equal(js, "a.b.j.t.x.y");
    assert_int_equal(subject_from_stream(&m, js, n + 2, back, sizeof back), n);
    assert_string_equal(back, subj);
    /* Not the stream's class, not the prefix, or no room for the NUL. */
    assert_int_equal(subject_from_stream(&m, subj, n, back, sizeof back), 0);
    assert_int_equal(subject_from_stream(&m, "a.c.j.t.x", 9, back, sizeof back), 0);
    assert_int_equal(subject_to_stream(&m, "a.bt.x", 6, js, sizeof js), 0);
    assert_int_equal(subject_to_stream(&m, subj, n, js, n + 2), 0);
    assert_int_equal(subject_from_stream(&m, js, n + 2, back, n), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nats_matcher),      cmocka_unit_test(test_tricky_topics),
        cmocka_unit_test(test_dollar_topics),     cmocka_unit_test(test_every_byte),
        cmocka_unit_test(test_invalid_topics),    cmocka_unit_test(test_decode_rejects),
        cmocka_unit_test(test_prefix),            cmocka_unit_test(test_limits),
        cmocka_unit_test(test_filters),           cmocka_unit_test(test_dollar_rule),
        cmocka_unit_test(test_parent_rule),       cmocka_unit_test(test_property_round_trip),
        cmocka_unit_test(test_property_match),    cmocka_unit_test(test_queue_group),
        cmocka_unit_test(test_token_decode),      cmocka_unit_test(test_stream_class),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
