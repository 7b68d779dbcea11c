/* handle_subscribe.c - SUBSCRIBE (with retained-message delivery) and
 * UNSUBSCRIBE, in every protocol version. Granting a subscription
 * (sub_grant) is the one place a subscription enters the broker, where the
 * ACL is asked (auth_subscribe).
 */
#include "broker/auth.h"
#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/handle.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/retain.h"
#include "broker/router.h"
#include "broker/session.h"
#include "core/mem.h"
#include "core/outq.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_topic.h"

struct retained_ctx {
    struct broker *b;
    struct session *s;
    subtree_opts opts;
};

static void deliver_retained(void *ctx, const uint8_t *topic, size_t topic_len, void *value)
{
    struct retained_ctx *r = ctx;
    struct msg *m = value;
    if (r->s->auth.filtered && !auth_may_deliver(r->b, r->s, topic, topic_len))
        return;
    uint8_t granted = sub_opts_qos(r->opts);
    struct delivery d = {
        .sub_id = sub_opts_id(r->opts),
        .qos = m->qos < granted ? m->qos : granted,
        .retain = true,
    };
    session_deliver(r->b, r->s, m, &d, NULL);
}

/* The SUBACK code of a refused subscription: MQTT 5's reason, 3.1.1's
 * failure code, or, as MQTT 3.1 has none, the QoS asked for while nothing
 * is subscribed (what Mosquitto answers a 3.1 client the ACL denies). */
static uint8_t sub_refused(const struct session *s, uint8_t reason5, uint8_t options)
{
    if (s->v5)
        return reason5;
    return s->v31 ? options & MQTT5_SUB_QOS : MQTT_SUBACK_FAILURE;
}

/* Grants one subscription: returns its SUBACK code and whether retained
 * messages are to follow. options is the MQTT 5 Subscription Options byte
 * (just the QoS from MQTT 3.1 and 3.1.1). */
static uint8_t sub_grant(struct broker *b, struct session *s, struct mqtt_bytes filter,
                         uint8_t options, uint32_t sub_id, bool *send_retained)
{
    size_t inner;
    int shared = mqtt_topic_shared(filter.ptr, filter.len, &inner);
    *send_retained = false;
    if (shared < 0)
        return sub_refused(s, MQTT5_RC_TOPIC_FILTER_INVALID, options);
    if (auth_subscribe(b, s, filter.ptr, filter.len) == ACL_SUB_DENIED)
        return sub_refused(s, MQTT5_RC_NOT_AUTHORIZED, options);
    bool is_new = router_subscribe(b, s, filter.ptr, filter.len, sub_opts(options, sub_id));
    persist_sub(b, s, filter.ptr, filter.len, options, sub_id, true);
    /* Retained messages follow the SUBACK, for every filter, even one that
     * only replaced an existing subscription (MQTT-3.8.4-3), unless MQTT 5's
     * Retain Handling says otherwise; never for a shared one (4.8.2). */
    unsigned handling = (options & MQTT5_SUB_RETAIN_HANDLING) >> MQTT5_SUB_RETAIN_HANDLING_SHIFT;
    *send_retained = !shared && (handling == 0 || (handling == 1 && is_new));
    return options & MQTT5_SUB_QOS;
}

/* The filter list and Subscription Identifier of any version's SUBSCRIBE;
 * MQTT 3.1's and 3.1.1's options byte is its QoS, which the MQTT 5 masks
 * read the same way. */
static int subscribe_decode(struct conn *c, const uint8_t *body, uint32_t len,
                            struct mqtt_filters *f, uint32_t *sub_id)
{
    *sub_id = 0;
    if (!c->v5)
        return mqtt_decode_subscribe(body, len, f);
    struct mqtt5_subscribe sub;
    int rc = mqtt5_decode_subscribe(body, len, &sub);
    if (rc < 0)
        return rc;
    struct mqtt_props_iter it;
    mqtt_props_subids(&sub.props, &it);
    mqtt_props_next_subid(&it, sub_id);
    *f = sub.filters;
    /* No Local on a shared subscription is a Protocol Error [MQTT-3.8.3-4]. */
    struct mqtt_filter_iter fi;
    struct mqtt_bytes filter;
    uint8_t options;
    size_t inner;
    mqtt_filter_iter_init(&fi, f);
    while (mqtt_filter_next(&fi, &filter, &options))
        if ((options & MQTT5_SUB_NO_LOCAL) && mqtt_topic_shared(filter.ptr, filter.len, &inner) > 0)
            return MQTT5_E_PROTOCOL_ERROR;
    return 0;
}

int handle_subscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len)
{
    struct mqtt_filters f;
    uint32_t sub_id;
    int rc = subscribe_decode(c, body, len, &f, &sub_id);
    if (rc < 0)
        return rc;
    struct session *s = c->session;
    uint8_t *codes = mem_alloc(f.count);
    bool *retained = mem_alloc(f.count * sizeof *retained);
    struct mqtt_filter_iter it;
    struct mqtt_bytes filter;
    uint8_t options;
    unsigned n = 0;
    mqtt_filter_iter_init(&it, &f);
    while (mqtt_filter_next(&it, &filter, &options)) {
        codes[n] = sub_grant(b, s, filter, options, sub_id, &retained[n]);
        n++;
    }
    if (!c->v5) {
        mqtt_encode_suback(outq_reserve(&c->out, mqtt_suback_size(n)), f.packet_id, codes, n);
    } else {
        struct mqtt5_suback ack = {.packet_id = f.packet_id, .codes = codes, .count = n};
        mqtt5_encode_suback(outq_reserve(&c->out, mqtt5_suback_size(&ack)), MQTT_SUBACK, &ack);
    }
    conn_mark_dirty(b, c);

    n = 0;
    mqtt_filter_iter_init(&it, &f);
    while (mqtt_filter_next(&it, &filter, &options)) {
        if (retained[n++]) {
            struct retained_ctx r = {b, s, sub_opts(options, sub_id)};
            retain_match(b->retained, filter.ptr, filter.len, deliver_retained, &r);
        }
    }
    mem_free(codes);
    mem_free(retained);
    return 0;
}

int handle_unsubscribe(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len)
{
    struct mqtt_filters f;
    struct mqtt5_subscribe unsub;
    int rc = c->v5 ? mqtt5_decode_unsubscribe(body, len, &unsub) : mqtt_decode_unsubscribe(body, len, &f);
    if (rc < 0)
        return rc;
    if (c->v5)
        f = unsub.filters;
    uint8_t *codes = mem_alloc(f.count);
    struct mqtt_filter_iter it;
    struct mqtt_bytes filter;
    uint8_t unused;
    unsigned n = 0;
    mqtt_filter_iter_init(&it, &f);
    while (mqtt_filter_next(&it, &filter, &unused)) {
        bool had = session_remove_sub(c->session, filter.ptr, filter.len);
        if (had) {
            router_unsubscribe(b, c->session, filter.ptr, filter.len);
            persist_sub(b, c->session, filter.ptr, filter.len, 0, 0, false);
        }
        codes[n++] = had ? MQTT5_RC_SUCCESS : MQTT5_RC_NO_SUBSCRIPTION_EXISTED;
    }
    if (!c->v5) {
        mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), MQTT_UNSUBACK, f.packet_id);
    } else {
        struct mqtt5_suback ack = {.packet_id = f.packet_id, .codes = codes, .count = n};
        mqtt5_encode_suback(outq_reserve(&c->out, mqtt5_suback_size(&ack)), MQTT_UNSUBACK, &ack);
    }
    mem_free(codes);
    conn_mark_dirty(b, c);
    return 0;
}
