/* fuzz_mqtt_codec.c - libFuzzer target for the MQTT 3.1.1 and 3.1 codec.
 *
 * Reads the input as a broker reads a socket: frames packet after packet
 * under a size limit (as MQTT 3.1 does, which checks fewer flags, and
 * checks that 3.1.1's framer agrees but for flags), and hands every body to
 * every decoder. Whatever
 * decodes must re-encode to bytes that decode to the same values, and to the
 * very same bytes when the original was minimally encoded. Decoded topics
 * and filters are then cross-matched against a level-by-level reference.
 * Any broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_topic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)          \
    do {                     \
        if (!(cond))         \
            abort();         \
    } while (0)

#define MAX_PACKET 65536u
#define MAX_KEPT 16

/* Bodies outlive their packet so that topics from one packet can be matched
 * against filters from another. */
struct state {
    void *bodies[2048];
    size_t n_bodies;
    struct mqtt_bytes topics[MAX_KEPT], filters[MAX_KEPT];
    size_t n_topics, n_filters;
};

static bool bytes_same(struct mqtt_bytes a, struct mqtt_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static void keep(struct mqtt_bytes *list, size_t *n, struct mqtt_bytes b)
{
    if (*n < MAX_KEPT)
        list[(*n)++] = b;
}

/* Frames a freshly encoded packet and returns its body. When orig is given
 * (the decoded packet was minimally encoded and of this type), the bytes
 * must be identical too. */
static const uint8_t *reframe(const uint8_t *out, size_t n, size_t size_fn, uint8_t type,
                              const uint8_t *orig, size_t orig_len, struct mqtt_header *h)
{
    CHECK(n == size_fn);
    CHECK(mqtt_frame(out, n, 0, h) == (int)n);
    CHECK(h->type == type);
    CHECK(h->header_len == 1 + mqtt_varint_size(h->body_len));
    if (orig)
        CHECK(orig_len == n && memcmp(orig, out, n) == 0);
    return out + h->header_len;
}

static void round_trip_connect(const struct mqtt_connect *c, const uint8_t *orig, size_t orig_len)
{
    size_t size = mqtt_connect_size(c);
    uint8_t *out = malloc(size);
    uint8_t *canon = NULL;
    if (orig && c->protocol_level == MQTT31_PROTOCOL_LEVEL) {
        /* A 3.1 CONNECT re-encodes without the Connect Flags it ignores:
         * the reserved bit, and Will QoS and Retain without a will. */
        uint32_t body_len;
        bool non_minimal;
        int n = mqtt_decode_varint(orig + 1, orig_len - 1, &body_len, &non_minimal);
        CHECK(n > 0);
        canon = malloc(orig_len);
        memcpy(canon, orig, orig_len);
        uint8_t *flags = canon + 1 + n + 9; /* after "\0\6MQIsdp" and the level */
        *flags &= 0xFE;
        if (!(*flags & 0x04))
            *flags &= (uint8_t)~0x38;
        orig = canon;
    }
    struct mqtt_header h;
    struct mqtt_connect d;
    const uint8_t *body = reframe(out, mqtt_encode_connect(out, c), size, MQTT_CONNECT, orig,
                                  orig_len, &h);
    free(canon);
    CHECK(mqtt_decode_connect(body, h.body_len, &d) == MQTT_OK);
    CHECK(d.protocol_level == c->protocol_level && d.clean_session == c->clean_session);
    CHECK(d.keepalive == c->keepalive && bytes_same(d.client_id, c->client_id));
    CHECK(d.has_will == c->has_will && d.will_qos == c->will_qos);
    CHECK(d.will_retain == c->will_retain && bytes_same(d.will_topic, c->will_topic));
    CHECK(bytes_same(d.will_payload, c->will_payload));
    CHECK(d.has_username == c->has_username && bytes_same(d.username, c->username));
    CHECK(d.has_password == c->has_password && bytes_same(d.password, c->password));
    free(out);
}

static void round_trip_publish(const struct mqtt_publish *p, const uint8_t *orig, size_t orig_len)
{
    size_t size = mqtt_publish_size(p->topic.len, p->payload.len, p->qos);
    uint8_t *out = malloc(size);
    struct mqtt_header h;
    struct mqtt_publish d;
    const uint8_t *body = reframe(out, mqtt_encode_publish(out, p), size, MQTT_PUBLISH, orig,
                                  orig_len, &h);
    CHECK(mqtt_decode_publish(body, h.body_len, h.flags, &d) == MQTT_OK);
    CHECK(bytes_same(d.topic, p->topic) && bytes_same(d.payload, p->payload));
    CHECK(d.packet_id == p->packet_id && d.qos == p->qos);
    CHECK(d.retain == p->retain && d.dup == p->dup);
    free(out);
}

/* Walks a decoded filter list, checks it, re-encodes it and decodes it
 * again. */
static void round_trip_filters(struct state *st, const struct mqtt_filters *f, uint8_t type,
                               const uint8_t *orig, size_t orig_len)
{
    struct mqtt_bytes *list = malloc(f->count * sizeof *list);
    uint8_t *qos = malloc(f->count);
    struct mqtt_filter_iter it;
    struct mqtt_bytes filter;
    unsigned n = 0;
    uint8_t q;

    CHECK(f->count >= 1);
    mqtt_filter_iter_init(&it, f);
    while (mqtt_filter_next(&it, &filter, &q)) {
        CHECK(n < f->count);
        CHECK(filter.ptr >= f->list && filter.ptr + filter.len <= f->list + f->list_len);
        CHECK(mqtt_topic_filter_valid(filter.ptr, filter.len));
        CHECK(f->with_qos ? q <= 2 : q == 0);
        list[n] = filter;
        qos[n] = q;
        keep(st->filters, &st->n_filters, filter);
        n++;
    }
    CHECK(n == f->count);

    bool sub = type == MQTT_SUBSCRIBE;
    size_t size = sub ? mqtt_subscribe_size(list, n) : mqtt_unsubscribe_size(list, n);
    uint8_t *out = malloc(size);
    size_t len = sub ? mqtt_encode_subscribe(out, f->packet_id, list, qos, n)
                     : mqtt_encode_unsubscribe(out, f->packet_id, list, n);
    struct mqtt_header h;
    struct mqtt_filters d;
    const uint8_t *body = reframe(out, len, size, type, orig, orig_len, &h);
    int rc = sub ? mqtt_decode_subscribe(body, h.body_len, &d)
                 : mqtt_decode_unsubscribe(body, h.body_len, &d);
    CHECK(rc == MQTT_OK);
    CHECK(d.packet_id == f->packet_id && d.count == n && d.with_qos == sub);
    mqtt_filter_iter_init(&it, &d);
    for (unsigned i = 0; i < n; i++) {
        CHECK(mqtt_filter_next(&it, &filter, &q));
        CHECK(bytes_same(filter, list[i]) && q == qos[i]);
    }
    CHECK(!mqtt_filter_next(&it, &filter, &q));
    free(out);
    free(qos);
    free(list);
}

/* Runs every decoder over one body. type and flags come from its fixed
 * header; pkt is the whole packet when it was minimally encoded, for the
 * byte-exact checks. */
static void decode_all(struct state *st, const uint8_t *body, size_t len, uint8_t type,
                       uint8_t flags, const uint8_t *pkt, size_t pkt_len)
{
    struct mqtt_header h;
    uint8_t out[MQTT_ACK_LEN];
#define ORIG(t) (type == (t) ? pkt : NULL)

    struct mqtt_connect c;
    int rc = mqtt_decode_connect(body, len, &c);
    if (rc == MQTT_OK) {
        CHECK(mqtt_utf8_valid(c.client_id.ptr, c.client_id.len));
        CHECK(!c.has_will || mqtt_topic_name_valid(c.will_topic.ptr, c.will_topic.len));
        if (c.has_will)
            keep(st->topics, &st->n_topics, c.will_topic);
        round_trip_connect(&c, ORIG(MQTT_CONNECT), pkt_len);
        CHECK(c.protocol_level == (len >= 8 && body[1] == 6 ? MQTT31_PROTOCOL_LEVEL
                                                            : MQTT311_PROTOCOL_LEVEL));
    } else if (rc == MQTT_E_VERSION) {
        /* Only a known protocol name earns CONNACK 1, with the level it
         * asked for when that is not the name's own. */
        if (len >= 9 && memcmp(body, "\0\6MQIsdp", 8) == 0)
            CHECK(c.protocol_level == body[8] && c.protocol_level != MQTT31_PROTOCOL_LEVEL);
        else
            CHECK(len >= 7 && memcmp(body, "\0\4MQTT", 6) == 0 && c.protocol_level == body[6] &&
                  c.protocol_level != MQTT311_PROTOCOL_LEVEL);
    }

    bool sp;
    uint8_t code;
    if (mqtt_decode_connack(body, len, &sp, &code) == MQTT_OK) {
        CHECK(code <= MQTT_CONNACK_NOT_AUTHORIZED && (!sp || code == 0));
        const uint8_t *b = reframe(out, mqtt_encode_connack(out, sp, code), MQTT_CONNACK_LEN,
                                   MQTT_CONNACK, ORIG(MQTT_CONNACK), pkt_len, &h);
        bool sp2;
        uint8_t code2;
        CHECK(mqtt_decode_connack(b, h.body_len, &sp2, &code2) == MQTT_OK);
        CHECK(sp2 == sp && code2 == code);
    }

    /* PUBLISH is tried with this packet's flags, and with every flag value
     * when it is not a PUBLISH, to reach each QoS branch. */
    for (uint8_t fl = 0; fl < 16; fl++) {
        uint8_t try_flags = type == MQTT_PUBLISH ? flags : fl;
        struct mqtt_publish p;
        if (mqtt_decode_publish(body, len, try_flags, &p) == MQTT_OK) {
            CHECK(p.qos <= 2 && (p.qos == 0) == (p.packet_id == 0) && !(p.dup && p.qos == 0));
            CHECK(mqtt_topic_name_valid(p.topic.ptr, p.topic.len));
            CHECK(p.payload.ptr + p.payload.len == body + len);
            keep(st->topics, &st->n_topics, p.topic);
            round_trip_publish(&p, ORIG(MQTT_PUBLISH), pkt_len);
        }
        if (type == MQTT_PUBLISH)
            break;
    }

    uint16_t id;
    if (mqtt_decode_ack(body, len, &id) == MQTT_OK) {
        static const uint8_t acks[] = {MQTT_PUBACK, MQTT_PUBREC, MQTT_PUBREL, MQTT_PUBCOMP,
                                       MQTT_UNSUBACK};
        CHECK(id != 0 && len == 2);
        for (size_t i = 0; i < sizeof acks; i++) {
            const uint8_t *b = reframe(out, mqtt_encode_ack(out, acks[i], id), MQTT_ACK_LEN,
                                       acks[i], ORIG(acks[i]), pkt_len, &h);
            uint16_t id2;
            CHECK(mqtt_decode_ack(b, h.body_len, &id2) == MQTT_OK && id2 == id);
        }
    }

    struct mqtt_filters f;
    if (mqtt_decode_subscribe(body, len, &f) == MQTT_OK)
        round_trip_filters(st, &f, MQTT_SUBSCRIBE, ORIG(MQTT_SUBSCRIBE), pkt_len);
    if (mqtt_decode_unsubscribe(body, len, &f) == MQTT_OK)
        round_trip_filters(st, &f, MQTT_UNSUBSCRIBE, ORIG(MQTT_UNSUBSCRIBE), pkt_len);

    struct mqtt_suback s;
    if (mqtt_decode_suback(body, len, &s) == MQTT_OK) {
        CHECK(s.count >= 1 && s.packet_id != 0 && s.count == len - 2);
        size_t size = mqtt_suback_size(s.count);
        uint8_t *o = malloc(size);
        const uint8_t *b = reframe(o, mqtt_encode_suback(o, s.packet_id, s.codes, s.count), size,
                                   MQTT_SUBACK, ORIG(MQTT_SUBACK), pkt_len, &h);
        struct mqtt_suback s2;
        CHECK(mqtt_decode_suback(b, h.body_len, &s2) == MQTT_OK);
        CHECK(s2.packet_id == s.packet_id && s2.count == s.count);
        CHECK(memcmp(s2.codes, s.codes, s.count) == 0);
        free(o);
    }

    if ((type == MQTT_PINGREQ || type == MQTT_PINGRESP || type == MQTT_DISCONNECT) && len == 0)
        reframe(out, mqtt_encode_empty(out, type), MQTT_EMPTY_LEN, type, pkt, pkt_len, &h);
#undef ORIG
}

/* Level-by-level matcher, written apart from mqtt_topic_match() on purpose,
 * to check it. */
static bool ref_match(struct mqtt_bytes f, struct mqtt_bytes t)
{
    if (t.len && t.ptr[0] == '$' && (f.ptr[0] == '+' || f.ptr[0] == '#'))
        return false;
    size_t fp = 0, tp = 0, fl_len, tl_len;
    const uint8_t *fl, *tl;
    for (;;) {
        bool more_f = mqtt_topic_next_level(f.ptr, f.len, &fp, &fl, &fl_len);
        bool more_t = mqtt_topic_next_level(t.ptr, t.len, &tp, &tl, &tl_len);
        if (!more_f)
            return !more_t;
        if (fl_len == 1 && fl[0] == '#')
            return true;
        if (!more_t)
            return false;
        if (fl_len == 1 && fl[0] == '+')
            continue;
        if (fl_len != tl_len || memcmp(fl, tl, fl_len) != 0)
            return false;
    }
}

static void cross_match(const struct state *st)
{
    for (size_t i = 0; i < st->n_topics; i++) {
        struct mqtt_bytes t = st->topics[i];
        CHECK(mqtt_topic_match(t.ptr, t.len, t.ptr, t.len));
        CHECK(mqtt_topic_match((const uint8_t *)"#", 1, t.ptr, t.len) == (t.ptr[0] != '$'));
        for (size_t j = 0; j < st->n_filters; j++) {
            struct mqtt_bytes f = st->filters[j];
            CHECK(mqtt_topic_match(f.ptr, f.len, t.ptr, t.len) == ref_match(f, t));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct state st;
    st.n_bodies = st.n_topics = st.n_filters = 0;
    size_t off = 0;
    while (off < size && st.n_bodies < sizeof st.bodies / sizeof *st.bodies) {
        struct mqtt_header h, h311;
        const uint8_t *pkt = data + off;
        int r = mqtt31_frame(pkt, size - off, MAX_PACKET, &h);
        /* 3.1.1 frames the same, or refuses flags 3.1 does not check. */
        int r311 = mqtt_frame(pkt, size - off, MAX_PACKET, &h311);
        CHECK(r311 == r || (r311 == MQTT_E_FLAGS && r != MQTT_E_FLAGS));
        if (r311 > 0)
            CHECK(h311.type == h.type && h311.flags == h.flags && h311.body_len == h.body_len);
        if (r <= 0)
            break;
        CHECK((size_t)r == h.header_len + (size_t)h.body_len && (size_t)r <= MAX_PACKET);
        CHECK(h.type == pkt[0] >> 4 && h.flags == (pkt[0] & 0x0F));
        CHECK(h.header_len >= 2 && h.header_len <= MQTT_MAX_FIXED_HEADER);
        /* Any shorter prefix of a packet that frames is "need more". */
        struct mqtt_header h2;
        CHECK(mqtt31_frame(pkt, (size_t)r - 1, MAX_PACKET, &h2) == 0);

        /* An exact-size copy, so that ASan sees any read past the body. */
        uint8_t *body = malloc(h.body_len ? h.body_len : 1);
        memcpy(body, pkt + h.header_len, h.body_len);
        st.bodies[st.n_bodies++] = body;
        /* Byte-exact re-encoding only for what 3.1.1 frames too: the
         * encoders write 3.1.1's flags. */
        bool minimal = h.header_len == 1 + mqtt_varint_size(h.body_len) && r311 == r;
        decode_all(&st, body, h.body_len, h.type, h.flags, minimal ? pkt : NULL, (size_t)r);
        off += (size_t)r;
    }
    cross_match(&st);
    for (size_t i = 0; i < st.n_bodies; i++)
        free(st.bodies[i]);
    return 0;
}
