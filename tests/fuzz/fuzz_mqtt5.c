/* fuzz_mqtt5.c - libFuzzer target for the MQTT 5.0 packet codec (mqtt5.c).
 *
 * The input is a stream of packets: each is framed with mqtt5_frame() and
 * decoded by its type. Whatever decodes must encode to exactly the size its
 * *_size() function gives, no larger than the original (the same size for
 * every packet without short forms, as minimal varints leave only property
 * order free), must decode again, and that must encode to the very same
 * bytes. Any broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "mqtt/mqtt5.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)          \
    do {                     \
        if (!(cond))         \
            abort();         \
    } while (0)

/* Inputs are capped by libFuzzer's -max_len; larger ones are skipped. */
#define MAX_INPUT 65536

static uint8_t out1[MAX_INPUT], out2[MAX_INPUT];
static struct mqtt_bytes filters[MAX_INPUT / 2];
static uint8_t options[MAX_INPUT / 2];

union msg {
    struct mqtt5_connect connect;
    struct mqtt5_connack connack;
    struct mqtt5_publish publish;
    struct mqtt5_ack ack;
    struct mqtt5_subscribe sub;
    struct mqtt5_suback suback;
    struct mqtt5_reason_props rp;
};

/* Decodes one whole packet (fixed header included) by its type; returns
 * MQTT_OK or a negative error. */
static int decode(const uint8_t *pkt, size_t len, union msg *m, struct mqtt_header *h)
{
    CHECK(mqtt5_frame(pkt, len, 0, h) == (int)len);
    const uint8_t *body = pkt + h->header_len;
    size_t n = h->body_len;
    switch (h->type) {
    case MQTT_CONNECT: return mqtt5_decode_connect(body, n, &m->connect);
    case MQTT_CONNACK: return mqtt5_decode_connack(body, n, &m->connack);
    case MQTT_PUBLISH: return mqtt5_decode_publish(body, n, h->flags, &m->publish);
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP: return mqtt5_decode_ack(h->type, body, n, &m->ack);
    case MQTT_SUBSCRIBE: return mqtt5_decode_subscribe(body, n, &m->sub);
    case MQTT_UNSUBSCRIBE: return mqtt5_decode_unsubscribe(body, n, &m->sub);
    case MQTT_SUBACK:
    case MQTT_UNSUBACK: return mqtt5_decode_suback(h->type, body, n, &m->suback);
    case MQTT_DISCONNECT:
    case MQTT5_AUTH: return mqtt5_decode_reason_props(h->type, body, n, &m->rp);
    default: return MQTT_E_TYPE; /* PINGREQ, PINGRESP: nothing to decode */
    }
}

/* Lays a decoded filter list out as the encoder's arrays. */
static unsigned unpack_filters(const struct mqtt_filters *f)
{
    struct mqtt_filter_iter it;
    unsigned k = 0;
    mqtt_filter_iter_init(&it, f);
    while (mqtt_filter_next(&it, &filters[k], &options[k]))
        k++;
    CHECK(k == f->count);
    return k;
}

/* Encodes a decoded packet into out; returns its size. */
static size_t encode(uint8_t *out, const union msg *m, const struct mqtt_header *h)
{
    size_t size, n;
    unsigned k;
    switch (h->type) {
    case MQTT_CONNECT:
        size = mqtt5_connect_size(&m->connect);
        n = mqtt5_encode_connect(out, &m->connect);
        break;
    case MQTT_CONNACK:
        size = mqtt5_connack_size(&m->connack);
        n = mqtt5_encode_connack(out, &m->connack);
        break;
    case MQTT_PUBLISH:
        size = mqtt5_publish_size(&m->publish);
        n = mqtt5_encode_publish(out, &m->publish);
        break;
    case MQTT_SUBSCRIBE:
        k = unpack_filters(&m->sub.filters);
        size = mqtt5_subscribe_size(&m->sub.props, filters, k);
        n = mqtt5_encode_subscribe(out, m->sub.filters.packet_id, &m->sub.props, filters, options,
                                   k);
        break;
    case MQTT_UNSUBSCRIBE:
        k = unpack_filters(&m->sub.filters);
        size = mqtt5_unsubscribe_size(&m->sub.props, filters, k);
        n = mqtt5_encode_unsubscribe(out, m->sub.filters.packet_id, &m->sub.props, filters, k);
        break;
    case MQTT_SUBACK:
    case MQTT_UNSUBACK:
        size = mqtt5_suback_size(&m->suback);
        n = mqtt5_encode_suback(out, h->type, &m->suback);
        break;
    case MQTT_DISCONNECT:
    case MQTT5_AUTH:
        size = mqtt5_reason_props_size(h->type, &m->rp);
        n = mqtt5_encode_reason_props(out, h->type, &m->rp);
        break;
    default:
        size = mqtt5_ack_size(&m->ack);
        n = mqtt5_encode_ack(out, h->type, &m->ack);
        break;
    }
    CHECK(n == size);
    return n;
}

static bool has_short_forms(uint8_t type)
{
    return (type >= MQTT_PUBACK && type <= MQTT_PUBCOMP) || type == MQTT_DISCONNECT ||
           type == MQTT5_AUTH;
}

static void check_packet(const uint8_t *pkt, size_t len)
{
    union msg m, m2;
    struct mqtt_header h, h2;
    if (decode(pkt, len, &m, &h) != MQTT_OK)
        return;
    size_t n1 = encode(out1, &m, &h);
    /* An AUTH of a reason code alone is accepted but written with its empty
     * property block, one byte longer. */
    if (h.type == MQTT5_AUTH)
        CHECK(n1 <= len + 1);
    else
        CHECK(has_short_forms(h.type) ? n1 <= len : n1 == len);

    CHECK(decode(out1, n1, &m2, &h2) == MQTT_OK);
    CHECK(h2.type == h.type && h2.flags == h.flags);
    CHECK(encode(out2, &m2, &h2) == n1);
    CHECK(memcmp(out1, out2, n1) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        return 0;
    struct mqtt_header h;
    int n;
    while ((n = mqtt5_frame(data, size, MAX_INPUT, &h)) > 0) {
        check_packet(data, (size_t)n);
        data += n;
        size -= (size_t)n;
    }
    return 0;
}
