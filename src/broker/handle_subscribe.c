/* handle_subscribe.c - SUBSCRIBE (with retained-message delivery) and
 * UNSUBSCRIBE, in every protocol version, a large one in slices across
 * loop iterations. Granting a subscription (sub_grant) is the one place a
 * subscription enters the broker, where the ACL is asked (auth_subscribe)
 * and max_subscriptions enforced.
 */
#include <limits.h>
#include <string.h>

#include "broker/auth.h"
#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/handle.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/retain.h"
#include "broker/router.h"
#include "broker/session.h"
#include "cluster/kv_retain.h"
#include "cluster/link.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/outq.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_topic.h"

/* A SUBSCRIBE or UNSUBSCRIBE under way (conn.job while it spans loop
 * iterations). A SUBSCRIBE grants every filter, sends its SUBACK, then
 * delivers the retained messages; an UNSUBSCRIBE removes and acknowledges. */
struct sub_job {
    uint8_t type;       /* MQTT_SUBSCRIBE or MQTT_UNSUBSCRIBE */
    bool acked;         /* SUBSCRIBE: SUBACK sent, retained messages follow */
    uint8_t *body;      /* owned copy the filters point into; NULL within one call */
    struct mqtt_filters f;
    struct mqtt_filter_iter it;
    uint32_t sub_id;
    unsigned n;         /* filters done in this phase */
    long budget;        /* of this slice */
    uint8_t *codes;     /* [f.count] */
    bool *retained;     /* SUBSCRIBE: [f.count], whether retained messages follow */
};

struct retained_ctx {
    struct broker_loop *l;
    struct session *s;
    subtree_opts opts;
    struct sub_job *job;
};

static void deliver_retained(void *ctx, const uint8_t *topic, size_t topic_len, void *value)
{
    struct retained_ctx *r = ctx;
    struct msg *m = value;
    if (r->s->auth_filtered && !auth_may_deliver(r->l->b, r->s, topic, topic_len))
        return;
    uint8_t granted = sub_opts_qos(r->opts);
    struct delivery d = {
        .sub_id = sub_opts_id(r->opts),
        .qos = m->qos < granted ? m->qos : granted,
        .retain = true,
    };
    session_deliver(r->l, r->s, m, &d, NULL);
    r->job->budget--;
}

/* One from the cluster's bucket (kv_retain.h), unless the node's own store
 * has its topic (a will of this node, say), which was sent already. */
static void deliver_retained_kv(void *ctx, struct msg *m)
{
    struct retained_ctx *r = ctx;
    struct broker *b = r->l->b;
    size_t size;
    pthread_mutex_lock(&b->retained_lock);
    bool here = retain_get(b->retained, msg_topic(m), m->topic_len, &size);
    pthread_mutex_unlock(&b->retained_lock);
    if (!here)
        deliver_retained(ctx, msg_topic(m), m->topic_len, m);
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

/* A subscription refused at max_subscriptions: counted, and logged at most
 * once a second, as one client can ask for thousands at a time. */
static void sub_over_quota(struct broker_loop *l, const struct session *s)
{
    struct broker *b = l->b;
    STAT_ADD(l->stats.subscriptions_refused, 1);
    if (!broker_log_due(&b->sub_refused_logged_ms, ev_now(l->ev)))
        return;
    struct broker_stats st;
    broker_stats_sum(b, &st);
    log_warn("client %s: subscription refused (max-subscriptions %u reached); refused so far: %llu",
             s->client_id, b->cfg->max_subscriptions, (unsigned long long)st.subscriptions_refused);
}

/* Grants one subscription: returns its SUBACK code and whether retained
 * messages are to follow. options is the MQTT 5 Subscription Options byte
 * (just the QoS from MQTT 3.1 and 3.1.1). */
static uint8_t sub_grant(struct broker_loop *l, struct session *s, struct mqtt_bytes filter,
                         uint8_t options, uint32_t sub_id, bool *send_retained)
{
    struct broker *b = l->b;
    size_t inner;
    int shared = mqtt_topic_shared(filter.ptr, filter.len, &inner);
    *send_retained = false;
    if (shared < 0)
        return sub_refused(s, MQTT5_RC_TOPIC_FILTER_INVALID, options);
    /* Cut off from the cluster, a SUBACK would promise what the other
     * nodes do not know. */
    if (router_partitioned(l))
        return sub_refused(s, MQTT5_RC_UNSPECIFIED_ERROR, options);
    if (b->cluster && !cluster_filter_fits(b->cluster, filter.ptr, filter.len)) {
        /* Kept local, it would miss the other nodes' messages unseen. */
        log_debug("client %s: SUBSCRIBE refused: a filter of %zu bytes is too long for cluster "
                  "subjects", s->client_id, filter.len);
        return sub_refused(s, MQTT5_RC_TOPIC_FILTER_INVALID, options);
    }
    if (auth_subscribe(b, s, filter.ptr, filter.len) == ACL_SUB_DENIED)
        return sub_refused(s, MQTT5_RC_NOT_AUTHORIZED, options);
    uint32_t max = b->cfg->max_subscriptions;
    if (max && s->nsubs >= max && !session_has_sub(s, filter.ptr, filter.len)) {
        sub_over_quota(l, s);
        return sub_refused(s, MQTT5_RC_QUOTA_EXCEEDED, options);
    }
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

/* Writes the SUBACK or UNSUBACK of the whole packet. */
static void sub_job_ack(struct broker_loop *l, struct conn *c, const struct sub_job *j)
{
    if (c->v5) {
        struct mqtt5_suback ack = {.packet_id = j->f.packet_id, .codes = j->codes, .count = j->n};
        uint8_t type = j->type == MQTT_SUBSCRIBE ? MQTT_SUBACK : MQTT_UNSUBACK;
        mqtt5_encode_suback(outq_reserve(&c->out, mqtt5_suback_size(&ack)), type, &ack);
    } else if (j->type == MQTT_SUBSCRIBE) {
        mqtt_encode_suback(outq_reserve(&c->out, mqtt_suback_size(j->n)), j->f.packet_id,
                           j->codes, j->n);
    } else {
        mqtt_encode_ack(outq_reserve(&c->out, MQTT_ACK_LEN), MQTT_UNSUBACK, j->f.packet_id);
    }
    conn_mark_dirty(l, c);
}

/* One filter of the current phase. */
static void sub_job_step(struct broker_loop *l, struct session *s, struct sub_job *j,
                         struct mqtt_bytes filter, uint8_t options)
{
    struct broker *b = l->b;
    if (j->type == MQTT_UNSUBSCRIBE) {
        bool had = session_remove_sub(s, filter.ptr, filter.len);
        if (had) {
            router_unsubscribe(b, s, filter.ptr, filter.len);
            persist_sub(b, s, filter.ptr, filter.len, 0, 0, false);
        }
        j->codes[j->n] = had ? MQTT5_RC_SUCCESS : MQTT5_RC_NO_SUBSCRIPTION_EXISTED;
    } else if (!j->acked) {
        j->codes[j->n] = sub_grant(l, s, filter, options, j->sub_id, &j->retained[j->n]);
    } else if (j->retained[j->n]) {
        struct retained_ctx r = {l, s, sub_opts(options, j->sub_id), j};
        /* Held while the session takes them: it is ours, and routes nothing. */
        pthread_mutex_lock(&b->retained_lock);
        j->budget -= (long)retain_match(b->retained, filter.ptr, filter.len, deliver_retained, &r);
        pthread_mutex_unlock(&b->retained_lock);
        if (b->kv_retain)
            kv_retain_match(b->kv_retain, filter.ptr, filter.len, ev_now(l->ev),
                            deliver_retained_kv, &r);
    }
    j->n++;
    j->budget--;
}

/* Works through the job until it is done (true) or its slice is spent. */
static bool sub_job_run(struct broker_loop *l, struct conn *c, struct sub_job *j, long budget)
{
    struct mqtt_bytes filter;
    uint8_t options;
    j->budget = budget;
    for (;;) {
        while (j->budget > 0 && mqtt_filter_next(&j->it, &filter, &options))
            sub_job_step(l, c->session, j, filter, options);
        if (j->n < j->f.count)
            return false;
        if (j->acked || j->type == MQTT_UNSUBSCRIBE) {
            if (j->type == MQTT_UNSUBSCRIBE)
                sub_job_ack(l, c, j);
            return true;
        }
        /* Every filter granted: the SUBACK, then the retained messages. */
        sub_job_ack(l, c, j);
        j->acked = true;
        j->n = 0;
        mqtt_filter_iter_init(&j->it, &j->f);
    }
}

static void sub_job_clear(struct sub_job *j)
{
    mem_free(j->codes);
    mem_free(j->retained);
    mem_free(j->body);
}

void sub_job_free(struct sub_job *j)
{
    if (!j)
        return;
    sub_job_clear(j);
    mem_free(j);
}

/* Starts the job for a decoded packet whose filters point into body: done
 * at once when it is small, else its first slice now and the rest on later
 * iterations (sub_job_resume). */
static void sub_job_start(struct broker_loop *l, struct conn *c, struct sub_job *j,
                          const uint8_t *body, uint32_t len)
{
    struct broker *b = l->b;
    j->codes = mem_alloc(j->f.count);
    if (j->type == MQTT_SUBSCRIBE)
        j->retained = mem_alloc(j->f.count * sizeof *j->retained);
    if (j->f.count <= b->sub_slice) {
        mqtt_filter_iter_init(&j->it, &j->f);
        sub_job_run(l, c, j, LONG_MAX);
        sub_job_clear(j);
        return;
    }
    /* The input buffer will not keep the packet: the job keeps a copy. */
    struct sub_job *kept = mem_alloc(sizeof *kept);
    *kept = *j;
    kept->body = memcpy(mem_alloc(len), body, len);
    kept->f.list = kept->body + (j->f.list - body);
    mqtt_filter_iter_init(&kept->it, &kept->f);
    if (sub_job_run(l, c, kept, b->sub_slice)) {
        sub_job_free(kept);
        return;
    }
    conn_cold(c)->job = kept;
    conn_read_later(l, c);
}

bool sub_job_resume(struct broker_loop *l, struct conn *c)
{
    struct broker *b = l->b;
    if (!sub_job_run(l, c, c->cold->job, b->sub_slice)) {
        conn_read_later(l, c);
        return false;
    }
    sub_job_free(c->cold->job);
    c->cold->job = NULL;
    return true;
}

int handle_subscribe(struct broker_loop *l, struct conn *c, const uint8_t *body, uint32_t len)
{
    struct sub_job j = {.type = MQTT_SUBSCRIBE};
    int rc = subscribe_decode(c, body, len, &j.f, &j.sub_id);
    if (rc < 0)
        return rc;
    sub_job_start(l, c, &j, body, len);
    return 0;
}

int handle_unsubscribe(struct broker_loop *l, struct conn *c, const uint8_t *body, uint32_t len)
{
    struct sub_job j = {.type = MQTT_UNSUBSCRIBE};
    struct mqtt5_subscribe unsub;
    int rc = c->v5 ? mqtt5_decode_unsubscribe(body, len, &unsub)
                   : mqtt_decode_unsubscribe(body, len, &j.f);
    if (rc < 0)
        return rc;
    if (c->v5)
        j.f = unsub.filters;
    sub_job_start(l, c, &j, body, len);
    return 0;
}
