/* handle_publish.c - PUBLISH from clients (topic aliases, the QoS 2
 * duplicate check, the ACL) and the acknowledgements of both directions;
 * who gets the message is the router's (router.h).
 *
 * Received QoS 2 messages are delivered on PUBLISH and their packet id is
 * kept until PUBREL, so a retransmitted PUBLISH is acknowledged again but not
 * delivered twice (the spec's "Method B").
 */
#include "broker/auth.h"
#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/conn_end.h"
#include "broker/handle.h"
#include "broker/persist.h"
#include "broker/router.h"
#include "broker/session.h"
#include "cluster/js_msgs.h"
#include "cluster/link.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/outq.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"

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
    struct conn_cold *k = conn_cold(c);
    if (!k->alias_in)
        k->alias_in = mem_calloc(BROKER_TOPIC_ALIAS_MAX, sizeof *k->alias_in);
    struct topic_alias *a = &k->alias_in[alias - 1];
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

/* Decodes either version's PUBLISH into *in and *packet_id; an MQTT 5
 * one's properties stay in *p5, which in->props points to. */
static int publish_decode(struct conn *c, uint8_t flags, const uint8_t *body, uint32_t len,
                          struct router_in *in, uint16_t *packet_id, struct mqtt5_publish *p5)
{
    if (!c->v5) {
        struct mqtt_publish p;
        int rc = mqtt_decode_publish(body, len, flags, &p);
        *in = (struct router_in){p.topic, p.payload, p.qos, p.retain, NULL};
        *packet_id = p.packet_id;
        return rc;
    }
    int rc = mqtt5_decode_publish(body, len, flags, p5);
    if (rc < 0)
        return rc;
    if (p5->props.present & MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID))
        return MQTT5_E_PROTOCOL_ERROR; /* [MQTT-3.3.4-6] */
    if ((rc = publish_alias(c, p5)) != 0)
        return rc;
    *in = (struct router_in){p5->topic, p5->payload, p5->qos, p5->retain, &p5->props};
    *packet_id = p5->packet_id;
    return 0;
}

/* A QoS 1 or 2 message while the node is cut off from its cluster: not
 * taken, since the other nodes would never see it. MQTT 5 is told so in
 * its PUBACK or PUBREC (0x80, with no PUBREL to follow); MQTT 3.1.1 and
 * 3.1 have no way to refuse a message but to close the connection, and
 * the client's reconnect is refused with "server unavailable" until the
 * node is back. */
static int publish_refuse_cut_off(struct broker_loop *l, struct conn *c, uint8_t qos,
                                  uint16_t packet_id)
{
    if (qos == 2)
        session_qos2_release(c->session, packet_id);
    if (!c->v5) {
        log_info("client %s (fd %d): QoS %u PUBLISH while cut off from the cluster, closing",
                 c->session->client_id, c->io.fd, qos);
        conn_kick(l, c, MQTT5_RC_UNSPECIFIED_ERROR, "cut off from the cluster", false);
        return 0;
    }
    conn_write_reason(c, qos == 1 ? MQTT_PUBACK : MQTT_PUBREC, packet_id,
                      MQTT5_RC_UNSPECIFIED_ERROR,
                      "the node is cut off from its cluster: message not accepted");
    conn_mark_dirty(l, c);
    return 0;
}

/* A clustered node's answer to a topic whose subject would not fit
 * (cluster_topic_fits): delivered nowhere, as a node that kept it local
 * would diverge from the others unseen. MQTT 5 acknowledges QoS 1/2 with
 * 0x90 Topic Name invalid; QoS 0 has no acknowledgement, and MQTT 3.1.1
 * no such code: the connection is closed (DISCONNECT 0x90 in MQTT 5). */
static int publish_unfit(struct broker_loop *l, struct conn *c, const struct router_in *p,
                         uint16_t packet_id)
{
    log_debug("client %s: PUBLISH refused: a topic of %zu bytes is too long for a cluster subject",
              c->session->client_id, p->topic.len);
    if (!c->v5 || p->qos == 0)
        return MQTT5_RC_TOPIC_NAME_INVALID;
    conn_write_reason(c, p->qos == 1 ? MQTT_PUBACK : MQTT_PUBREC, packet_id,
                      MQTT5_RC_TOPIC_NAME_INVALID, "topic too long for the cluster");
    conn_mark_dirty(l, c);
    return 0;
}

int handle_publish(struct broker_loop *l, struct conn *c, uint8_t flags, const uint8_t *body,
                   uint32_t len)
{
    struct broker *b = l->b;
    struct router_in p;
    uint16_t packet_id;
    struct mqtt5_publish p5;
    int rc = publish_decode(c, flags, body, len, &p, &packet_id, &p5);
    if (rc != 0)
        return rc;
    if (b->cluster && !cluster_topic_fits(b->cluster, p.topic.ptr, p.topic.len))
        return publish_unfit(l, c, &p, packet_id);
    struct session *origin = c->session;
    int seen = p.qos == 2 ? session_qos2_seen(origin, packet_id, c->v5 ? broker_receive_max(b) : UINT32_MAX) : 0;
    if (seen < 0)
        return MQTT5_RC_RECEIVE_MAXIMUM_EXCEEDED; /* [MQTT-3.3.4-9] */
    if (p.qos > 0 && !seen && router_partitioned(l))
        return publish_refuse_cut_off(l, c, p.qos, packet_id);
    if (p.qos == 2 && !seen)
        persist_qos2_in(b, origin, packet_id, true);
    uint32_t matched = 0;
    bool over = false; /* a retained message over the bounds: sent on, not stored */
    bool lost = false; /* a retained message the cluster's bucket did not take: sent on */
    bool denied = !seen && origin->auth.acl && !auth_may_publish(b, origin, p.topic.ptr, p.topic.len);
    if (seen || denied) {
        /* A retransmission: acknowledge again, deliver nothing. A denied
         * message is acknowledged as Mosquitto does, and MQTT 5 says why. */
        if (denied && c->v5 && p.qos == 2)
            session_qos2_release(origin, packet_id); /* no PUBREL follows 0x87 */
    } else {
        STAT_ADD(l->stats.msgs_in, 1);
        if (p.retain && !router_retain_fits(b, p.topic.ptr, p.topic.len, p.payload.len,
                                            origin->client_id))
            p.retain = false, over = true;
        if (over && c->v5 && p.qos == 2)
            session_qos2_release(origin, packet_id); /* no PUBREL follows 0x97 */
        matched = router_route(l, &p, ev_now(l->ev), origin, c, &lost);
        if (lost && c->v5 && p.qos == 2)
            session_qos2_release(origin, packet_id); /* no PUBREL follows 0x80 */
    }
    if (p.qos == 0)
        return 0;
    uint8_t reason = denied ? MQTT5_RC_NOT_AUTHORIZED
                     : over ? MQTT5_RC_QUOTA_EXCEEDED
                     : lost ? MQTT5_RC_UNSPECIFIED_ERROR
                     : matched || seen ? MQTT5_RC_SUCCESS
                                       : MQTT5_RC_NO_MATCHING_SUBSCRIBERS;
    const char *why = over   ? "retained messages are at their bound; not retained"
                      : lost ? "the cluster did not store the retained message; delivered, "
                               "not retained"
                             : NULL;
    /* In a cluster with its stream, a new message is acknowledged once the
     * stream has it (cluster/js_msgs.h): its loop answers then. */
    bool stored = true;
    if (b->js_msgs && !seen && !denied) {
        if (js_msgs_publish(b->js_msgs, l, c, &p, packet_id, reason, why))
            return 0;
        stored = false;
    }
    handle_publish_settled(l, origin, c, p.qos, packet_id, stored, reason, why);
    return 0;
}

void handle_publish_settled(struct broker_loop *l, struct session *s, struct conn *c, uint8_t qos,
                            uint16_t packet_id, bool stored, uint8_t reason, const char *why)
{
    if (!stored && qos == 2 && session_qos2_release(s, packet_id))
        persist_qos2_in(l->b, s, packet_id, false); /* no PUBREL follows */
    if (!c)
        return;
    if (!stored && !c->v5) { /* 3.1.1 and 3.1 cannot refuse a message */
        log_info("client %s (fd %d): the cluster's stream did not take a QoS %u PUBLISH, closing",
                 s->client_id, c->io.fd, qos);
        conn_kick(l, c, MQTT5_RC_UNSPECIFIED_ERROR, "the cluster's stream did not take a message",
                  false);
        return;
    }
    uint8_t type = qos == 1 ? MQTT_PUBACK : MQTT_PUBREC;
    if (!c->v5)
        mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), type, packet_id);
    else if (stored)
        conn_write_reason(c, type, packet_id, reason, why);
    else
        conn_write_reason(c, type, packet_id, MQTT5_RC_UNSPECIFIED_ERROR,
                          "the cluster's stream did not take the message (delivered on this "
                          "node only)");
    conn_mark_dirty(l, c);
}

int handle_puback(struct broker_loop *l, struct conn *c, uint8_t type, const uint8_t *body,
                  uint32_t len)
{
    struct broker *b = l->b;
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
        session_acked(l, c->session, type, id, reason);
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
    conn_mark_dirty(l, c);
    return 0;
}
