/* handle_subscribe.c - SUBSCRIBE (with retained-message delivery) and
 * UNSUBSCRIBE.
 */
#include "broker/broker_int.h"
#include "broker/retain.h"
#include "broker/subtree.h"
#include "core/mem.h"
#include "mqtt/mqtt_codec.h"

struct retained_ctx {
    struct broker *b;
    struct session *s;
    uint8_t granted;
};

static void deliver_retained(void *ctx, const uint8_t *topic, size_t topic_len, void *value)
{
    struct retained_ctx *r = ctx;
    struct msg *m = value;
    uint8_t qos = m->qos < r->granted ? m->qos : r->granted;
    session_deliver(r->b, r->s, m, qos, true);
}

int handle_subscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len)
{
    struct mqtt_filters f;
    if (mqtt_decode_subscribe(body, len, &f) < 0)
        return -1;
    struct session *s = c->session;
    uint8_t *codes = mem_alloc(f.count);
    struct mqtt_filter_iter it;
    struct mqtt_bytes filter;
    uint8_t qos;
    unsigned n = 0;
    mqtt_filter_iter_init(&it, &f);
    while (mqtt_filter_next(&it, &filter, &qos)) {
        subtree_add(b->subs, filter.ptr, filter.len, s, qos);
        session_add_sub(s, filter.ptr, filter.len, qos);
        codes[n++] = qos;
    }
    mqtt_encode_suback(outq_reserve(&c->out, mqtt_suback_size(n)), f.packet_id, codes, n);
    mem_free(codes);
    conn_mark_dirty(b, c);

    /* Retained messages follow the SUBACK, for every filter, even one that
     * only replaced an existing subscription (MQTT-3.8.4-3). */
    mqtt_filter_iter_init(&it, &f);
    while (mqtt_filter_next(&it, &filter, &qos)) {
        struct retained_ctx r = {b, s, qos};
        retain_match(b->retained, filter.ptr, filter.len, deliver_retained, &r);
    }
    return 0;
}

int handle_unsubscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len)
{
    struct mqtt_filters f;
    if (mqtt_decode_unsubscribe(body, len, &f) < 0)
        return -1;
    struct mqtt_filter_iter it;
    struct mqtt_bytes filter;
    uint8_t qos;
    mqtt_filter_iter_init(&it, &f);
    while (mqtt_filter_next(&it, &filter, &qos)) {
        if (session_remove_sub(c->session, filter.ptr, filter.len))
            subtree_remove(b->subs, filter.ptr, filter.len, c->session);
    }
    mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), MQTT_UNSUBACK, f.packet_id);
    conn_mark_dirty(b, c);
    return 0;
}
