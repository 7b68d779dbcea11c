/* handle_publish.c - PUBLISH from clients and the acknowledgements of both
 * directions, and routing a message to its subscribers.
 *
 * Received QoS 2 messages are delivered on PUBLISH and their packet id is
 * kept until PUBREL, so a retransmitted PUBLISH is acknowledged again but not
 * delivered twice (the spec's "Method B").
 *
 * Overlapping subscriptions: a session with several subscriptions matching
 * a message gets one copy, in either version (MQTT 3.1.1 3.3.5 and MQTT 5
 * 3.3.4 allow one copy or one per subscription): at the highest QoS among
 * them, carrying every Subscription Identifier they have, identical ones
 * included [MQTT-3.3.4-4], with RETAIN as published if any of them has
 * Retain As Published. A subscription whose No Local excludes the
 * publisher takes no part [MQTT-3.8.3-3]. A shared subscription's group
 * adds one copy, to one member, whatever else matched (4.8.2).
 */
#include "broker/broker_int.h"
#include "broker/persist.h"
#include "broker/retain.h"
#include "broker/subtree.h"
#include "core/mem.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"

static inline void route_push(struct broker *b, struct session *s, subtree_opts opts, bool shared)
{
    if (b->nmatches == b->matches_cap) {
        b->matches_cap = b->matches_cap ? b->matches_cap * 2 : 64;
        b->matches = mem_realloc(b->matches, b->matches_cap * sizeof *b->matches);
    }
    b->matches[b->nmatches++] = (struct route_match){s, opts, 0, shared};
}

/* A second (third, ...) subscription of the session already routed to in
 * r matched: one copy still, as the strongest of them asks. */
static void route_merge(struct broker *b, struct route_match *r, subtree_opts opts)
{
    uint32_t id = sub_opts_id(opts);
    subtree_opts keep = r->opts;
    if (sub_opts_qos(opts) > sub_opts_qos(keep))
        keep = (keep & ~(subtree_opts)MQTT5_SUB_QOS) | sub_opts_qos(opts);
    keep |= opts & MQTT5_SUB_RETAIN_AS_PUBLISHED;
    if (id && !sub_opts_id(keep)) {
        keep |= (subtree_opts)id << SUB_OPT_ID_SHIFT;
    } else if (id) {
        if (b->nmatch_ids == b->match_ids_cap) {
            b->match_ids_cap = b->match_ids_cap ? b->match_ids_cap * 2 : 16;
            b->match_ids = mem_realloc(b->match_ids, b->match_ids_cap * sizeof *b->match_ids);
        }
        b->match_ids[b->nmatch_ids] = (struct route_id){id, r->more_ids};
        r->more_ids = ++b->nmatch_ids;
    }
    r->opts = keep;
}

static void route_match(void *ctx, void *subscriber, subtree_opts opts)
{
    struct broker *b = ctx;
    struct session *s = subscriber;
    if ((opts & MQTT5_SUB_NO_LOCAL) && s == b->route_origin)
        return; /* [MQTT-3.8.3-3] */
    if (s->match_gen == b->match_gen) {
        route_merge(b, &b->matches[s->match_idx], opts);
        return;
    }
    s->match_gen = b->match_gen;
    s->match_idx = b->nmatches;
    route_push(b, s, opts, false);
}

/* Collects the sessions subscribed to topic into b->matches. */
static void route_collect(struct broker *b, const uint8_t *topic, size_t len)
{
    b->nmatches = 0;
    b->nmatch_ids = 0;
    if (++b->match_gen == 0) {
        /* After 2^32 messages a stale stamp could collide: clear them. */
        size_t i = 0;
        struct hmap_slot *slot;
        while ((slot = hmap_next(&b->sessions, &i)))
            ((struct session *)slot->val)->match_gen = 0;
        b->match_gen = 1;
    }
    subtree_match(b->subs, topic, len, route_match, b);
    if (hmap_count(&b->share_groups))
        share_route(b, topic, len);
}

void share_route_push(struct broker *b, struct session *s, subtree_opts opts)
{
    route_push(b, s, opts, true);
}

/* The identifiers of a match with more than one, as delivery.sub_ids
 * wants them (in b->route_ids, valid until the next match). Rare: kept out
 * of route_deliver's loop. */
__attribute__((cold, noinline)) static uint32_t *route_ids(struct broker *b,
                                                          const struct route_match *r)
{
    uint32_t n = 1;
    for (uint32_t i = r->more_ids; i; i = b->match_ids[i - 1].next)
        n++;
    if (n + 1 > b->route_ids_cap) {
        b->route_ids_cap = n + 1 > 16 ? n + 1 : 16;
        b->route_ids = mem_realloc(b->route_ids, b->route_ids_cap * sizeof *b->route_ids);
    }
    uint32_t *ids = b->route_ids;
    ids[0] = n;
    ids[1] = sub_opts_id(r->opts);
    n = 2;
    for (uint32_t i = r->more_ids; i; i = b->match_ids[i - 1].next)
        ids[n++] = b->match_ids[i - 1].id;
    return ids;
}

static inline void route_deliver(struct broker *b, struct msg *m)
{
    for (uint32_t i = 0; i < b->nmatches; i++) {
        const struct route_match *r = &b->matches[i];
        /* A group's member was picked among those that may read it. */
        if (r->s->auth.filtered && !r->shared &&
            !auth_may_deliver(b, r->s, msg_topic(m), m->topic_len))
            continue;
        uint8_t qos = sub_opts_qos(r->opts);
        struct delivery d = {
            .sub_id = sub_opts_id(r->opts),
            .qos = qos < m->qos ? qos : m->qos,
            /* Live deliveries carry RETAIN 0 unless the subscriber asked
             * for it as published (MQTT 5, Retain As Published). */
            .retain = (r->opts & MQTT5_SUB_RETAIN_AS_PUBLISHED) && m->retain,
            .shared = r->shared,
        };
        if (r->more_ids) {
            d.sub_ids = route_ids(b, r);
            d.sub_id = 0;
        }
        session_deliver(b, r->s, m, &d);
    }
}

static void route_retain(struct broker *b, struct msg *m)
{
    persist_retain(b, m);
    if (m->payload_len == 0)
        retain_set(b->retained, msg_topic(m), m->topic_len, NULL);
    else
        retain_set(b->retained, msg_topic(m), m->topic_len, msg_ref(m));
}

void broker_publish(struct broker *b, struct msg *m, struct session *origin)
{
    if (m->retain)
        route_retain(b, m);
    b->route_origin = origin;
    route_collect(b, msg_topic(m), m->topic_len);
    route_deliver(b, m);
    b->route_origin = NULL;
}

/* MQTT 5 Topic Alias from a client (3.3.2.3.4): an alias with a topic sets
 * it, an alias with an empty topic stands for it. Returns 0, or an error
 * for handle_publish to return. */
static int publish_alias(struct conn *c, struct mqtt5_publish *p)
{
    if (!(p->props.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS)))
        return 0;
    uint16_t alias = p->props.topic_alias;
    if (alias == 0 || alias > BROKER_TOPIC_ALIAS_MAX)
        return MQTT5_RC_TOPIC_ALIAS_INVALID; /* [MQTT-3.3.2-8], [MQTT-3.3.2-9] */
    if (!c->alias_in)
        c->alias_in = mem_calloc(BROKER_TOPIC_ALIAS_MAX, sizeof *c->alias_in);
    struct topic_alias *a = &c->alias_in[alias - 1];
    if (p->topic.len == 0) {
        if (!a->topic)
            return MQTT5_E_PROTOCOL_ERROR; /* an alias never set */
        p->topic.ptr = a->topic;
        p->topic.len = a->len;
        return 0;
    }
    mem_free(a->topic);
    a->topic = (uint8_t *)mem_strndup(p->topic.ptr, p->topic.len);
    a->len = (uint16_t)p->topic.len;
    return 0;
}

/* A PUBLISH as the broker routes it, from either version. */
struct inbound {
    struct mqtt_bytes topic, payload;
    uint16_t packet_id;
    uint8_t qos;
    bool retain;
    const struct mqtt_props *props; /* NULL from MQTT 3.1.1 */
};

/* Decodes either version's PUBLISH into *in; an MQTT 5 one's properties
 * stay in *p5, which in->props points to. */
static int publish_decode(struct conn *c, uint8_t flags, const uint8_t *body, uint32_t len,
                          struct inbound *in, struct mqtt5_publish *p5)
{
    if (!c->v5) {
        struct mqtt_publish p;
        int rc = mqtt_decode_publish(body, len, flags, &p);
        *in = (struct inbound){p.topic, p.payload, p.packet_id, p.qos, p.retain, NULL};
        return rc;
    }
    int rc = mqtt5_decode_publish(body, len, flags, p5);
    if (rc < 0)
        return rc;
    if (p5->props.present & MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID))
        return MQTT5_E_PROTOCOL_ERROR; /* [MQTT-3.3.4-6] */
    if ((rc = publish_alias(c, p5)) != 0)
        return rc;
    *in = (struct inbound){p5->topic, p5->payload, p5->packet_id, p5->qos, p5->retain, &p5->props};
    return 0;
}

int handle_publish(struct broker *b, struct conn *c, uint8_t flags, const uint8_t *body,
                   uint32_t len)
{
    struct inbound p;
    struct mqtt5_publish p5;
    int rc = publish_decode(c, flags, body, len, &p, &p5);
    if (rc != 0)
        return rc;
    struct session *origin = c->session;
    uint64_t now = ev_now(b->loop);
    int seen = p.qos == 2 ? session_qos2_seen(origin, p.packet_id, c->v5 ? broker_receive_max(b) : UINT32_MAX) : 0;
    if (seen < 0)
        return MQTT5_RC_RECEIVE_MAXIMUM_EXCEEDED; /* [MQTT-3.3.4-9] */
    if (p.qos == 2 && !seen)
        persist_qos2_in(b, origin, p.packet_id, true);
    b->nmatches = 0;
    bool denied = !seen && origin->auth.acl && !auth_may_publish(b, origin, p.topic.ptr, p.topic.len);
    if (seen || denied) {
        /* A retransmission: acknowledge again, deliver nothing. A denied
         * message is acknowledged as Mosquitto does, and MQTT 5 says why. */
        if (denied && c->v5 && p.qos == 2)
            session_qos2_release(origin, p.packet_id); /* no PUBREL follows 0x87 */
    } else if (p.retain) {
        struct msg *m = msg_new(p.topic.ptr, p.topic.len, p.payload.ptr, p.payload.len, p.qos,
                                true, p.props, now);
        b->stats.msgs_in++;
        broker_publish(b, m, origin);
        msg_unref(m);
    } else {
        /* Without subscribers a plain message needs no copy at all. */
        b->stats.msgs_in++;
        b->route_origin = origin;
        route_collect(b, p.topic.ptr, p.topic.len);
        b->route_origin = NULL;
        if (b->nmatches > 0) {
            struct msg *m = msg_new(p.topic.ptr, p.topic.len, p.payload.ptr, p.payload.len,
                                    p.qos, false, p.props, now);
            route_deliver(b, m);
            msg_unref(m);
        }
    }
    if (p.qos > 0) {
        uint8_t type = p.qos == 1 ? MQTT_PUBACK : MQTT_PUBREC;
        if (!c->v5)
            mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), type, p.packet_id);
        else
            conn_write_reason(c, type, p.packet_id,
                              denied ? MQTT5_RC_NOT_AUTHORIZED
                              : b->nmatches || seen ? MQTT5_RC_SUCCESS
                                                    : MQTT5_RC_NO_MATCHING_SUBSCRIBERS,
                              NULL);
        conn_mark_dirty(b, c);
    }
    return 0;
}

int handle_puback(struct broker *b, struct conn *c, uint8_t type, const uint8_t *body, uint32_t len)
{
    uint16_t id;
    uint8_t reason = MQTT5_RC_SUCCESS;
    int rc;
    if (!c->v5) {
        rc = mqtt_decode_ack(body, len, &id);
    } else {
        struct mqtt5_ack a;
        rc = mqtt5_decode_ack(type, body, len, &a);
        id = a.packet_id;
        reason = a.reason;
    }
    if (rc < 0)
        return rc;
    if (type != MQTT_PUBREL) {
        session_acked(b, c->session, type, id, reason);
        return 0;
    }
    bool known = session_qos2_release(c->session, id);
    if (known)
        persist_qos2_in(b, c->session, id, false);
    if (!c->v5)
        mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), MQTT_PUBCOMP, id);
    else
        conn_write_reason(c, MQTT_PUBCOMP, id, known ? MQTT5_RC_SUCCESS : MQTT5_RC_PACKET_ID_NOT_FOUND,
                          known ? NULL : "no QoS 2 message with this packet identifier");
    conn_mark_dirty(b, c);
    return 0;
}
