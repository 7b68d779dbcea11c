/* test_msg.c - unit tests for pre-encoded broker messages (msg.c): the
 * QoS 0 encoding msg_new stores, and the PUBLISH packets msg_write_publish
 * appends to an output queue for QoS 0, 1 and 2 with DUP, RETAIN and packet
 * ids, copied below 512 payload bytes and shared (reference-counted) from
 * 512 up. Every packet is checked byte for byte against the codec's own
 * encoder and decoded back with mqtt_frame + mqtt_decode_publish, including
 * Remaining Lengths on each side of the varint boundaries. MQTT 5 copies
 * (msg_write_publish5) are decoded back with mqtt5_frame +
 * mqtt5_decode_publish: forwarded properties, the per-copy ones (topic
 * alias, remaining expiry, subscription identifier) and the payload.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/msg.h"
#include "core/outq.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_props.h"
#include "test_rng.h"

#define SHARE_MIN 512 /* msg.c's threshold, as documented in its header */

static int setup(void **state)
{
    rng_state = 0x94D049BB133111EBu;
    return 0;
}

static uint8_t *random_bytes(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd(256);
    return p;
}

/* The pending bytes of q, in order, into a new buffer. */
static uint8_t *queue_bytes(const struct outq *q, size_t *len)
{
    size_t n = outq_pending(q);
    uint8_t *out = malloc(n ? n : 1);
    assert_non_null(out);
    size_t off = 0;
    for (uint32_t i = 0; i < q->count; i++) {
        const struct outq_ent *e = &q->ents[q->head + i];
        const uint8_t *base = e->owner ? e->ptr : q->own + e->off;
        uint32_t skip = i == 0 ? q->head_sent : 0;
        assert_true(off + e->len - skip <= n);
        memcpy(out + off, base + skip, e->len - skip);
        off += e->len - skip;
    }
    assert_int_equal(off, n);
    *len = n;
    return out;
}

/* Shared pieces of q that point at m. */
static int shared_pieces(const struct outq *q, const struct msg *m, const uint8_t **ptr)
{
    int n = 0;
    for (uint32_t i = 0; i < q->count; i++) {
        const struct outq_ent *e = &q->ents[q->head + i];
        if (e->owner) {
            assert_ptr_equal(e->owner, &m->rc);
            *ptr = e->ptr;
            n++;
        }
    }
    return n;
}

struct want {
    const uint8_t *topic;
    size_t topic_len;
    const uint8_t *payload;
    size_t payload_len;
    uint8_t qos;
    uint16_t packet_id;
    bool dup, retain;
};

/* The packet as the codec's encoder writes it. */
static uint8_t *reference(const struct want *w, size_t *len)
{
    struct mqtt_publish p = {
        .topic = {w->topic, w->topic_len},
        .payload = {w->payload, w->payload_len},
        .packet_id = w->qos ? w->packet_id : 0,
        .qos = w->qos,
        .retain = w->retain,
        .dup = w->dup,
    };
    size_t n = mqtt_publish_size(w->topic_len, w->payload_len, w->qos);
    uint8_t *out = malloc(n);
    assert_non_null(out);
    assert_int_equal(mqtt_encode_publish(out, &p), n);
    *len = n;
    return out;
}

/* buf[0..len) must be exactly one PUBLISH matching w; returns its header. */
static struct mqtt_header check_packet(const uint8_t *buf, size_t len, const struct want *w)
{
    struct mqtt_header h;
    int n = mqtt_frame(buf, len, 0, &h);
    assert_int_equal(n, (int)len);
    assert_int_equal(h.type, MQTT_PUBLISH);
    assert_int_equal(h.header_len + h.body_len, len);
    struct mqtt_publish p;
    assert_int_equal(mqtt_decode_publish(buf + h.header_len, h.body_len, h.flags, &p), MQTT_OK);
    assert_int_equal(p.qos, w->qos);
    assert_int_equal(p.dup, w->dup);
    assert_int_equal(p.retain, w->retain);
    assert_int_equal(p.packet_id, w->qos ? w->packet_id : 0);
    assert_int_equal(p.topic.len, w->topic_len);
    assert_memory_equal(p.topic.ptr, w->topic, w->topic_len);
    assert_int_equal(p.payload.len, w->payload_len);
    if (w->payload_len)
        assert_memory_equal(p.payload.ptr, w->payload, w->payload_len);

    size_t rlen;
    uint8_t *ref = reference(w, &rlen);
    assert_int_equal(rlen, len);
    assert_memory_equal(buf, ref, len);
    free(ref);
    return h;
}

/* Writes m into a fresh queue as w says and checks the queued packet. */
static struct mqtt_header write_and_check(struct msg *m, struct outq *q, const struct want *w)
{
    msg_write_publish(m, q, w->qos, w->packet_id, w->dup, w->retain);
    size_t len;
    uint8_t *bytes = queue_bytes(q, &len);
    struct mqtt_header h = check_packet(bytes, len, w);
    free(bytes);
    return h;
}

/* Header bytes for a Remaining Length. */
static size_t hdr_for(uint32_t rl)
{
    return rl < 128 ? 2 : rl < 16384 ? 3 : rl < 2097152 ? 4 : 5;
}

/* ---- Tests -------------------------------------------------------------- */

static void test_msg_new_encoding(void **state)
{
    static const uint8_t topic[] = "sensors/t1";
    static const uint8_t payload[] = "21.5";
    struct msg *m = msg_new(topic, 10, payload, 4, 1, true, NULL, 0);
    assert_non_null(m);
    assert_int_equal(m->rc.refs, 1);
    assert_non_null(m->rc.release);
    assert_int_equal(m->topic_len, 10);
    assert_int_equal(m->payload_len, 4);
    assert_int_equal(m->qos, 1);
    assert_true(m->retain);
    assert_int_equal(m->hdr_len, 2);
    assert_int_equal(m->enc_len, 2 + 2 + 10 + 4);
    static const uint8_t want[] = {0x30, 16, 0, 10, 's', 'e', 'n', 's', 'o',
                                   'r',  's', '/', 't', '1', '2', '1', '.', '5'};
    assert_int_equal(sizeof want, m->enc_len);
    assert_memory_equal(m->enc, want, sizeof want);
    assert_ptr_equal(msg_topic(m), m->enc + 4);
    assert_ptr_equal(msg_payload(m), m->enc + 14);

    /* The stored encoding is a plain QoS 0 PUBLISH, whatever m was published with. */
    struct want w = {topic, 10, payload, 4, 0, 0, false, false};
    check_packet(m->enc, m->enc_len, &w);

    assert_ptr_equal(msg_ref(m), m);
    assert_int_equal(m->rc.refs, 2);
    msg_unref(m);
    assert_int_equal(m->rc.refs, 1);
    msg_unref(m);
}

static void test_msg_new_empty_payload(void **state)
{
    struct msg *m = msg_new((const uint8_t *)"a", 1, NULL, 0, 0, false, NULL, 0);
    assert_int_equal(m->payload_len, 0);
    assert_int_equal(m->enc_len, 5);
    static const uint8_t want[] = {0x30, 3, 0, 1, 'a'};
    assert_memory_equal(m->enc, want, sizeof want);

    for (uint8_t qos = 0; qos <= 2; qos++) {
        struct outq q = {0};
        struct want w = {(const uint8_t *)"a", 1, NULL, 0, qos, 9, qos > 0, true};
        write_and_check(m, &q, &w);
        outq_clear(&q);
    }
    assert_int_equal(m->rc.refs, 1);
    msg_unref(m);
}

static void test_write_qos0_small(void **state)
{
    static const uint8_t topic[] = "a/b";
    uint8_t *payload = random_bytes(100);
    struct msg *m = msg_new(topic, 3, payload, 100, 2, true, NULL, 0);
    for (int retain = 0; retain <= 1; retain++) {
        struct outq q = {0};
        /* The packet id is ignored for QoS 0. */
        struct want w = {topic, 3, payload, 100, 0, 4242, false, retain};
        struct mqtt_header h = write_and_check(m, &q, &w);
        assert_int_equal(h.flags, retain ? 0x1 : 0x0);
        assert_int_equal(h.body_len, 2 + 3 + 100);
        const uint8_t *ptr;
        assert_int_equal(shared_pieces(&q, m, &ptr), 0);
        assert_int_equal(m->rc.refs, 1);
        outq_clear(&q);
    }
    /* Writing did not touch the stored encoding. */
    assert_int_equal(m->enc[0], 0x30);
    msg_unref(m);
    free(payload);
}

static void test_write_qos12_small(void **state)
{
    static const uint8_t topic[] = "devices/42/state";
    uint8_t *payload = random_bytes(200);
    struct msg *m = msg_new(topic, 16, payload, 200, 0, false, NULL, 0);
    static const uint16_t ids[] = {1, 0x1234, 0xFF00, 0xFFFF};
    for (uint8_t qos = 1; qos <= 2; qos++)
        for (int dup = 0; dup <= 1; dup++)
            for (int retain = 0; retain <= 1; retain++)
                for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
                    struct outq q = {0};
                    struct want w = {topic, 16, payload, 200, qos, ids[k], dup, retain};
                    struct mqtt_header h = write_and_check(m, &q, &w);
                    assert_int_equal(h.flags, (dup ? 0x8 : 0) | qos << 1 | (retain ? 1 : 0));
                    assert_int_equal(h.body_len, 2 + 16 + 2 + 200);
                    assert_int_equal(m->rc.refs, 1);
                    outq_clear(&q);
                }
    assert_int_equal(m->enc[0], 0x30);
    msg_unref(m);
    free(payload);
}

/* From 512 payload bytes on, the queue references the message instead of
 * copying it: the refcount goes up per queued packet and down on clear. */
static void test_write_large_is_shared(void **state)
{
    static const uint8_t topic[] = "big";
    static const size_t sizes[] = {SHARE_MIN - 1, SHARE_MIN, SHARE_MIN + 1, 4000, 70000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t plen = sizes[s];
        uint8_t *payload = random_bytes(plen);
        struct msg *m = msg_new(topic, 3, payload, plen, 1, false, NULL, 0);
        bool shared = plen >= SHARE_MIN;
        for (uint8_t qos = 0; qos <= 2; qos++) {
            struct outq q1 = {0}, q2 = {0};
            struct want w = {topic, 3, payload, plen, qos, 77, qos == 2, qos == 1};
            write_and_check(m, &q1, &w);
            const uint8_t *ptr = NULL;
            int pieces = shared_pieces(&q1, m, &ptr);
            if (!shared) {
                assert_int_equal(pieces, 0);
                assert_int_equal(m->rc.refs, 1);
                outq_clear(&q1);
                continue;
            }
            assert_int_equal(pieces, 1);
            /* QoS 0 shares all but the first byte; QoS 1 and 2 the payload. */
            assert_ptr_equal(ptr, qos == 0 ? m->enc + 1 : msg_payload(m));
            assert_int_equal(m->rc.refs, 2);
            /* Only the header is copied. */
            assert_true(q1.own_len <= 2 + 4 + 2 + 3 + 2);

            w.packet_id = 78;
            write_and_check(m, &q2, &w);
            assert_int_equal(m->rc.refs, 3);
            outq_clear(&q1);
            assert_int_equal(m->rc.refs, 2);
            outq_clear(&q2);
            assert_int_equal(m->rc.refs, 1);
        }
        msg_unref(m);
        free(payload);
    }
}

/* A shared packet written out through a socket drops its reference once the
 * last byte is written, and arrives intact. */
static void test_shared_released_after_flush(void **state)
{
    static const uint8_t topic[] = "flush/me";
    enum { PLEN = 100000 };
    uint8_t *payload = random_bytes(PLEN);
    struct msg *m = msg_new(topic, 8, payload, PLEN, 0, false, NULL, 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    int small = 4096;
    assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);

    for (uint8_t qos = 0; qos <= 2; qos++) {
        struct outq q = {0};
        struct want w = {topic, 8, payload, PLEN, qos, 0x0102, false, true};
        msg_write_publish(m, &q, qos, w.packet_id, w.dup, w.retain);
        assert_int_equal(m->rc.refs, 2);
        size_t total = outq_pending(&q);
        uint8_t *got = malloc(total);
        assert_non_null(got);
        size_t n = 0;
        int rc, rounds = 0;
        while ((rc = outq_flush(&q, sv[0])) == 1) {
            assert_int_equal(m->rc.refs, 2); /* still partly unsent */
            ssize_t r;
            while ((r = read(sv[1], got + n, total - n)) > 0)
                n += (size_t)r;
            assert_true(++rounds < 100000);
        }
        assert_int_equal(rc, 0);
        assert_true(rounds > 0);
        assert_int_equal(m->rc.refs, 1);
        ssize_t r;
        while (n < total && (r = read(sv[1], got + n, total - n)) > 0)
            n += (size_t)r;
        assert_int_equal(n, total);
        check_packet(got, n, &w);
        free(got);
    }
    close(sv[0]);
    close(sv[1]);
    msg_unref(m);
    free(payload);
}

/* Several publishes of two messages appended to one queue frame one after
 * the other. */
static void test_stream_of_publishes(void **state)
{
    static const uint8_t t1[] = "s", t2[] = "l/long/topic";
    uint8_t *p1 = random_bytes(20), *p2 = random_bytes(3000);
    struct msg *small = msg_new(t1, 1, p1, 20, 0, false, NULL, 0);
    struct msg *large = msg_new(t2, 12, p2, 3000, 0, false, NULL, 0);
    struct want seq[] = {
        {t1, 1, p1, 20, 0, 0, false, false},     {t2, 12, p2, 3000, 1, 1, false, false},
        {t1, 1, p1, 20, 2, 2, true, true},       {t2, 12, p2, 3000, 0, 0, false, true},
        {t1, 1, p1, 20, 1, 65535, false, false}, {t2, 12, p2, 3000, 2, 3, true, false},
    };
    enum { N = sizeof seq / sizeof seq[0] };
    struct outq q = {0};
    for (int i = 0; i < N; i++)
        msg_write_publish(i % 2 ? large : small, &q, seq[i].qos, seq[i].packet_id, seq[i].dup,
                          seq[i].retain);
    assert_int_equal(large->rc.refs, 1 + N / 2);
    assert_int_equal(small->rc.refs, 1);

    size_t len;
    uint8_t *bytes = queue_bytes(&q, &len);
    size_t off = 0;
    for (int i = 0; i < N; i++) {
        struct mqtt_header h;
        int n = mqtt_frame(bytes + off, len - off, 0, &h);
        assert_true(n > 0);
        check_packet(bytes + off, (size_t)n, &seq[i]);
        off += (size_t)n;
    }
    assert_int_equal(off, len);
    free(bytes);
    outq_clear(&q);
    assert_int_equal(large->rc.refs, 1);
    msg_unref(small);
    msg_unref(large);
    free(p1);
    free(p2);
}

/* Remaining Lengths on both sides of the 1/2, 2/3 and 3/4-byte varint
 * boundaries, for each QoS. QoS 1 and 2 add a packet id, so the stored QoS 0
 * encoding may sit on the other side of a boundary from the written packet. */
static void test_remaining_length_boundaries(void **state)
{
    static const uint8_t topic[] = "t/x";
    static const uint32_t rls[] = {126, 127, 128, 129, 16383, 16384, 2097151, 2097152};
    uint8_t *payload = random_bytes(2097152);
    for (size_t k = 0; k < sizeof rls / sizeof rls[0]; k++) {
        for (uint8_t qos = 0; qos <= 2; qos++) {
            uint32_t rl = rls[k];
            size_t plen = rl - 2 - 3 - (qos ? 2 : 0);
            struct msg *m = msg_new(topic, 3, payload, plen, 0, false, NULL, 0);
            uint32_t stored_rl = (uint32_t)(2 + 3 + plen);
            assert_int_equal(m->hdr_len, hdr_for(stored_rl));
            assert_int_equal(m->enc_len, hdr_for(stored_rl) + stored_rl);

            struct outq q = {0};
            struct want w = {topic, 3, payload, plen, qos, 0xBEEF, false, false};
            struct mqtt_header h = write_and_check(m, &q, &w);
            assert_int_equal(h.body_len, rl);
            assert_int_equal(h.header_len, hdr_for(rl));
            assert_int_equal(outq_pending(&q), hdr_for(rl) + rl);
            outq_clear(&q);
            assert_int_equal(m->rc.refs, 1);
            msg_unref(m);
        }
    }
    free(payload);
}

/* Random topics, payload sizes and flags. */
static void test_random_publishes(void **state)
{
    for (int i = 0; i < 300; i++) {
        size_t tlen = 1 + rnd(300);
        uint8_t *topic = malloc(tlen);
        assert_non_null(topic);
        for (size_t k = 0; k < tlen; k++)
            topic[k] = (uint8_t)('a' + rnd(26));
        size_t plen = rnd(3) == 0 ? rnd(20000) : rnd(1024);
        uint8_t *payload = random_bytes(plen);
        struct msg *m = msg_new(topic, tlen, payload, plen, (uint8_t)rnd(3), rnd(2), NULL, 0);
        uint8_t qos = (uint8_t)rnd(3);
        struct want w = {topic, tlen, payload, plen, qos, (uint16_t)(1 + rnd(65535)),
                         qos > 0 && rnd(2), rnd(2)};
        struct outq q = {0};
        write_and_check(m, &q, &w);
        assert_int_equal(m->rc.refs, plen >= SHARE_MIN ? 2 : 1);
        outq_clear(&q);
        assert_int_equal(m->rc.refs, 1);
        msg_unref(m);
        free(payload);
        free(topic);
    }
}

/* The MQTT 5 copy of a message published with properties, over random
 * topics, payloads, per-copy parts and flags. */
static void test_v5_copies(void **state)
{
    static const struct mqtt_user_prop users[] = {
        {{(const uint8_t *)"k", 1}, {(const uint8_t *)"v1", 2}},
        {{(const uint8_t *)"k", 1}, {(const uint8_t *)"v2", 2}},
    };
    for (int i = 0; i < 300; i++) {
        size_t tlen = 1 + rnd(40);
        uint8_t topic[64];
        for (size_t k = 0; k < tlen; k++)
            topic[k] = (uint8_t)('a' + rnd(26));
        size_t plen = rnd(3) == 0 ? rnd(5000) : rnd(600);
        uint8_t *payload = random_bytes(plen);
        struct mqtt_props in = {0};
        in.present = MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) | MQTT_PROP_BIT(MQTT_PROP_USER) |
                     MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS);
        in.content_type = (struct mqtt_bytes){(const uint8_t *)"text/plain", 10};
        in.user_count = 2;
        in.user_list = users;
        in.topic_alias = 9; /* the publisher's, never forwarded */
        bool expires = rnd(2);
        if (expires) {
            in.present |= MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY);
            in.message_expiry = 60;
        }
        struct msg *m = msg_new(topic, tlen, payload, plen, 2, false, &in, 1000);
        uint8_t qos = (uint8_t)rnd(3);
        uint16_t id = (uint16_t)(1 + rnd(65535));
        bool dup = qos && rnd(2), retain = rnd(2);
        /* None, one, or several identifiers (overlapping subscriptions),
         * repeated ones included. */
        uint32_t ids[3];
        struct msg_copy5 x = {.sub_ids = ids, .nsub_ids = (uint32_t)rnd(4),
                              .now_ms = 1000 + rnd(30000)};
        for (uint32_t k = 0; k < x.nsub_ids; k++)
            ids[k] = k && rnd(3) == 0 ? ids[k - 1] : (uint32_t)(1 + rnd(300000));
        if (rnd(2)) {
            x.topic_alias = (uint16_t)(1 + rnd(10));
            x.alias_only = rnd(2);
        }
        struct outq q = {0};
        msg_write_publish5(m, &q, qos, id, dup, retain, &x);
        size_t len;
        uint8_t *bytes = queue_bytes(&q, &len);
        assert_int_equal(len, msg_publish5_size(m, qos, &x));

        struct mqtt_header h;
        assert_int_equal(mqtt5_frame(bytes, len, 0, &h), (int)len);
        struct mqtt5_publish p;
        assert_int_equal(mqtt5_decode_publish(bytes + h.header_len, h.body_len, h.flags, &p), MQTT_OK);
        assert_int_equal(p.qos, qos);
        assert_int_equal(p.dup, dup);
        assert_int_equal(p.retain, retain);
        assert_int_equal(p.packet_id, qos ? id : 0);
        assert_int_equal(p.topic.len, x.alias_only ? 0 : tlen);
        if (!x.alias_only)
            assert_memory_equal(p.topic.ptr, topic, tlen);
        assert_int_equal(p.payload.len, plen);
        if (plen)
            assert_memory_equal(p.payload.ptr, payload, plen);
        const struct mqtt_props *o = &p.props;
        assert_true(o->present & MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE));
        assert_int_equal(o->content_type.len, 10);
        assert_int_equal(o->user_count, 2);
        struct mqtt_props_iter it;
        struct mqtt_user_prop up;
        mqtt_props_users(o, &it);
        for (int k = 0; k < 2; k++) {
            assert_true(mqtt_props_next_user(&it, &up));
            assert_memory_equal(up.value.ptr, users[k].value.ptr, 2);
        }
        assert_int_equal(!!(o->present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS)), x.topic_alias != 0);
        assert_int_equal(o->topic_alias, x.topic_alias);
        assert_int_equal(!!(o->present & MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY)), expires);
        if (expires) /* 60 s from 1000 ms, rounded up */
            assert_int_equal(o->message_expiry, (61000 - x.now_ms + 999) / 1000);
        assert_int_equal(o->subid_count, x.nsub_ids);
        mqtt_props_subids(o, &it);
        for (uint32_t k = 0; k < x.nsub_ids; k++) {
            uint32_t sid;
            assert_true(mqtt_props_next_subid(&it, &sid));
            assert_int_equal(sid, ids[k]);
        }
        free(bytes);
        outq_clear(&q);
        assert_int_equal(m->rc.refs, 1);
        msg_unref(m);
        free(payload);
    }
}

/* Another loop's thread, releasing the last reference. */
static void *release_on_loop_b(void *arg)
{
    struct msg_pool b = {0};
    msg_pool_enter(&b);
    msg_unref(arg);
    msg_pool_fini(&b);
    return NULL;
}

static void test_pool_returns_to_maker(void **state)
{
    struct msg_pool a = {0};
    msg_pool_enter(&a);
    struct msg *m = msg_new((const uint8_t *)"t", 1, (const uint8_t *)"p", 1, 0, false, NULL, 0);
    assert_ptr_equal(m->pool, &a);
    msg_share(m);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_on_loop_b, m), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    /* Back to loop a, not freed on b: a's next message is the same block. */
    assert_ptr_equal(a.returned, m);
    struct msg *again = msg_new((const uint8_t *)"u", 1, NULL, 0, 0, false, NULL, 0);
    assert_ptr_equal(again, m);
    assert_int_equal(again->rc.refs, 1);
    assert_false(again->rc.atomic);
    msg_unref(again); /* on its own loop: into a's list */
    assert_ptr_equal(a.free, m);
    assert_int_equal(a.nfree, 1);
    static uint8_t big[4096];
    struct msg *large = msg_new((const uint8_t *)"t", 1, big, sizeof big, 0, false, NULL, 0);
    assert_null(large->pool);
    msg_unref(large);
    msg_pool_fini(&a);
    /* Out of every pool: plain malloc and free. */
    struct msg *alone = msg_new((const uint8_t *)"t", 1, NULL, 0, 0, false, NULL, 0);
    assert_null(alone->pool);
    msg_unref(alone);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_msg_new_encoding, setup),
        cmocka_unit_test_setup(test_msg_new_empty_payload, setup),
        cmocka_unit_test_setup(test_write_qos0_small, setup),
        cmocka_unit_test_setup(test_write_qos12_small, setup),
        cmocka_unit_test_setup(test_write_large_is_shared, setup),
        cmocka_unit_test_setup(test_shared_released_after_flush, setup),
        cmocka_unit_test_setup(test_stream_of_publishes, setup),
        cmocka_unit_test_setup(test_remaining_length_boundaries, setup),
        cmocka_unit_test_setup(test_random_publishes, setup),
        cmocka_unit_test_setup(test_v5_copies, setup),
        cmocka_unit_test_setup(test_pool_returns_to_maker, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
