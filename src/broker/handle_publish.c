/* handle_publish.c - PUBLISH from clients and the acknowledgements of both
 * directions, and routing a message to its subscribers.
 *
 * Received QoS 2 messages are delivered on PUBLISH and their packet id is
 * kept until PUBREL, so a retransmitted PUBLISH is acknowledged again but not
 * delivered twice (the spec's "Method B").
 */
#include "broker/broker_int.h"
#include "broker/retain.h"
#include "broker/subtree.h"
#include "core/mem.h"
#include "mqtt/mqtt_codec.h"

static void route_match(void *ctx, void *subscriber, uint8_t qos)
{
    struct broker *b = ctx;
    struct session *s = subscriber;
    if (s->match_gen == b->match_gen) {
        /* Overlapping subscriptions: one copy at the highest QoS. */
        if (qos > s->match_qos)
            s->match_qos = qos;
        return;
    }
    s->match_gen = b->match_gen;
    s->match_qos = qos;
    if (b->nmatches == b->matches_cap) {
        b->matches_cap = b->matches_cap ? b->matches_cap * 2 : 64;
        b->matches = mem_realloc(b->matches, b->matches_cap * sizeof *b->matches);
    }
    b->matches[b->nmatches++] = s;
}

/* Collects the sessions subscribed to topic into b->matches. */
static void route_collect(struct broker *b, const uint8_t *topic, size_t len)
{
    b->nmatches = 0;
    if (++b->match_gen == 0) {
        /* After 2^32 messages a stale stamp could collide: clear them. */
        size_t i = 0;
        struct hmap_slot *slot;
        while ((slot = hmap_next(&b->sessions, &i)))
            ((struct session *)slot->val)->match_gen = 0;
        b->match_gen = 1;
    }
    subtree_match(b->subs, topic, len, route_match, b);
}

static void route_deliver(struct broker *b, struct msg *m)
{
    for (uint32_t i = 0; i < b->nmatches; i++) {
        struct session *s = b->matches[i];
        uint8_t qos = s->match_qos < m->qos ? s->match_qos : m->qos;
        /* Live deliveries never carry RETAIN in MQTT 3.1.1. */
        session_deliver(b, s, m, qos, false);
    }
}

static void route_retain(struct broker *b, struct msg *m)
{
    if (m->payload_len == 0)
        retain_set(b->retained, msg_topic(m), m->topic_len, NULL);
    else
        retain_set(b->retained, msg_topic(m), m->topic_len, msg_ref(m));
}

void broker_publish(struct broker *b, struct msg *m)
{
    if (m->retain)
        route_retain(b, m);
    route_collect(b, msg_topic(m), m->topic_len);
    route_deliver(b, m);
}

int handle_publish(struct broker *b, struct conn *c, uint8_t flags, const uint8_t *body,
                   uint32_t len)
{
    struct mqtt_publish p;
    if (mqtt_decode_publish(body, len, flags, &p) < 0)
        return -1;
    if (p.qos == 2 && session_qos2_seen(c->session, p.packet_id)) {
        /* A retransmission: acknowledge again, deliver nothing. */
    } else if (p.retain) {
        struct msg *m = msg_new(p.topic.ptr, p.topic.len, p.payload.ptr, p.payload.len, p.qos, true);
        b->stats.msgs_in++;
        broker_publish(b, m);
        msg_unref(m);
    } else {
        /* Without subscribers a plain message needs no copy at all. */
        b->stats.msgs_in++;
        route_collect(b, p.topic.ptr, p.topic.len);
        if (b->nmatches > 0) {
            struct msg *m = msg_new(p.topic.ptr, p.topic.len, p.payload.ptr, p.payload.len, p.qos, false);
            route_deliver(b, m);
            msg_unref(m);
        }
    }
    if (p.qos > 0) {
        mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), p.qos == 1 ? MQTT_PUBACK : MQTT_PUBREC,
                        p.packet_id);
        conn_mark_dirty(b, c);
    }
    return 0;
}

int handle_puback(struct broker *b, struct conn *c, uint8_t type, const uint8_t *body, uint32_t len)
{
    uint16_t id;
    if (mqtt_decode_ack(body, len, &id) < 0)
        return -1;
    if (type == MQTT_PUBREL) {
        session_qos2_release(c->session, id);
        mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), MQTT_PUBCOMP, id);
        conn_mark_dirty(b, c);
    } else {
        session_acked(b, c->session, type, id);
    }
    return 0;
}
