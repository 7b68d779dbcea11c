/* persist_load.c - the broker's state rebuilt from the log at start
 * (persist_load.h): sessions, their subscriptions and messages, the
 * retained store.
 */
#include "broker/persist_load.h"

#include <string.h>

#include "broker/broker_int.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/plog.h"
#include "broker/retain.h"
#include "broker/router.h"
#include "broker/session.h"
#include "broker/session_life.h"
#include "core/log.h"
#include "core/mem.h"
#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_props.h"

/* A received QoS 2 id of a session, whose log entry persist.c keeps once
 * the log is open. */
struct rebuild_qos2 {
    struct session *s;
    uint16_t packet_id;
    uint64_t entry;
};

struct rebuild {
    struct broker *b;
    struct hmap msgs; /* log message id -> struct msg */
    struct rebuild_qos2 *qos2;
    size_t nqos2, qos2_cap;
    unsigned next_loop; /* restored sessions go round the loops */
};

static struct session *rebuild_session_of(struct broker *b, struct plog_bytes id)
{
    return hmap_get(&b->sessions, id.p, id.len);
}

/* A message from its fields in the log; props are encoded MQTT 5
 * properties without their length, as struct msg holds them. */
static struct msg *rebuild_msg_new(struct plog_bytes topic, struct plog_bytes payload, uint8_t qos,
                                   bool retain, struct plog_bytes props, uint64_t now_ms)
{
    struct mqtt_props decoded;
    uint8_t *buf;
    bool has_props = msg_props_decode(props.p, props.len, &decoded, &buf);
    struct msg *m = msg_new(topic.p, topic.len, payload.p, payload.len, qos, retain,
                            has_props ? &decoded : NULL, now_ms);
    mem_free(buf);
    return m;
}

/* Each restored session on the next loop: a client coming back is moved to
 * its session's loop, so sessions all on one loop would put every
 * returning client of a restart on one core. */
static void rebuild_session(struct rebuild *x, const struct plog_session *r)
{
    struct broker *b = x->b;
    struct broker_loop *owner, *l = &b->loops[x->next_loop++ % b->nloops];
    struct session *s = session_new(l, r->client_id.p, r->client_id.len, &owner);
    s->expiry_s = r->expiry;
    s->v5 = r->protocol == MQTT5_PROTOCOL_LEVEL;
    s->v31 = r->protocol == MQTT31_PROTOCOL_LEVEL;
    s->persisted = true;
    /* Offline now; a session that was connected when the broker stopped
     * starts its expiry clock, and its will's delay, at this start. */
    session_detach(l, s, NULL, 0);
    if (r->expires_at_ms && s->expiry_s != SESSION_NEVER)
        session_cold(s)->expires_ms = persist_to_loop(b, r->expires_at_ms);
    if (r->has_will && hmap_get(&b->sessions, r->client_id.p, r->client_id.len)) {
        struct msg *will = rebuild_msg_new(r->will_topic, r->will_payload, r->will_qos,
                                           r->will_retain, r->will_props, 0);
        uint64_t due = r->will_at_ms ? persist_to_loop(b, r->will_at_ms)
                                     : ev_now(l->ev) + (uint64_t)r->will_delay * 1000;
        session_owe_will(b, s, will, due);
    }
}

static void rebuild_msg(struct rebuild *x, const struct plog_msg *r)
{
    struct msg *m =
        rebuild_msg_new(r->topic, r->payload, r->qos, r->retain, r->props, ev_now(x->b->home->ev));
    m->plog_id = r->id;
    m->expires_ms = r->expiry_ms ? persist_to_loop(x->b, r->expiry_ms) : 0;
    /* With several loops it may be queued to sessions on different loops
     * (they go round the loops) and, retained, sent by any loop's
     * SUBSCRIBE: its count must be atomic as a routed message's is before
     * it leaves its loop (route_remote, route_retain). Only the restored
     * messages pay for it, and only at more than one loop. */
    if (x->b->nloops > 1)
        msg_share(m);
    hmap_put(&x->msgs, &m->plog_id, sizeof m->plog_id, m);
}

static void rebuild_entry(struct rebuild *x, const struct plog_entry *r)
{
    struct session *s = rebuild_session_of(x->b, r->client_id);
    if (!s)
        return;
    if (r->dir == PLOG_IN) {
        session_qos2_seen(s, r->packet_id, UINT32_MAX);
        if (x->nqos2 == x->qos2_cap) {
            x->qos2_cap = x->qos2_cap ? x->qos2_cap * 2 : 16;
            x->qos2 = mem_realloc(x->qos2, x->qos2_cap * sizeof *x->qos2);
        }
        x->qos2[x->nqos2++] = (struct rebuild_qos2){s, r->packet_id, r->id};
        return;
    }
    struct msg *m = hmap_get(&x->msgs, &r->msg_id, sizeof r->msg_id);
    if (!m)
        return;
    /* Subscription identifiers and RETAIN flags of copies are not kept. */
    struct delivery d = {.qos = r->qos, .entry = r->id};
    session_restore(s->loop, s, m, &d, r->state, r->packet_id);
}

static void rebuild_apply(void *ctx, const struct plog_rec *r)
{
    struct rebuild *x = ctx;
    struct broker *b = x->b;
    switch (r->type) {
    case PLOG_SESSION:
        rebuild_session(x, &r->session);
        break;
    case PLOG_MSG:
        rebuild_msg(x, &r->msg);
        break;
    case PLOG_RETAIN: {
        struct msg *m = hmap_get(&x->msgs, &r->retain.msg_id, sizeof r->retain.msg_id);
        if (m)
            retain_set(b->retained, r->retain.topic.p, r->retain.topic.len, msg_ref(m),
                       (size_t)m->topic_len + m->payload_len);
        break;
    }
    case PLOG_SUB: {
        struct session *s = rebuild_session_of(b, r->sub.client_id);
        if (s)
            router_subscribe(b, s, r->sub.filter.p, r->sub.filter.len,
                             sub_opts(r->sub.options, r->sub.sub_id));
        break;
    }
    case PLOG_ENTRY:
        rebuild_entry(x, &r->entry);
        break;
    default:
        break;
    }
}

int persist_load(struct broker *b)
{
    const struct broker_config *cfg = b->cfg;
    struct plog_options opt = {.dir = cfg->persistence.location,
                               .sync_interval_ms = cfg->persistence.sync_interval_ms};
    struct plog_report rep = {0};
    struct rebuild x = {.b = b};
    char err[512];
    struct plog *log = plog_open(&opt, rebuild_apply, &x, &rep, err, sizeof err);
    /* The log holds its own copy of each message now. */
    size_t i = 0;
    struct hmap_slot *slot;
    while ((slot = hmap_next(&x.msgs, &i)))
        msg_unref(slot->val);
    hmap_free(&x.msgs);
    if (log) {
        persist_start(b, log);
        for (size_t k = 0; k < x.nqos2; k++)
            persist_qos2_restored(b, x.qos2[k].s, x.qos2[k].packet_id, x.qos2[k].entry);
    }
    mem_free(x.qos2);
    if (!log) {
        log_error("persistence: %s", err);
        return -1;
    }
    /* What fell due while the broker was down (wills, ends of sessions)
     * happens before the first client comes in. */
    for (unsigned k = 0; k < b->nloops; k++)
        session_sweep(&b->loops[k]);
    log_info("persistence: %s: %u sessions, %u subscriptions, %u retained, %u messages, "
             "%u queued or in flight, from %u files (%llu bytes)",
             cfg->persistence.location, rep.sessions, rep.subs, rep.retained, rep.msgs,
             rep.entries, rep.files, (unsigned long long)rep.bytes);
    /* plog logged each damaged range with where it was saved; this says
     * what the state above is. */
    if (rep.damaged_ranges)
        log_warn("persistence: skipped %u damaged range%s (%llu bytes, saved aside, the first "
                 "at byte %llu of log.%010u: %s); every intact record before and after %s is "
                 "in the state above", rep.damaged_ranges, rep.damaged_ranges > 1 ? "s" : "",
                 (unsigned long long)rep.damaged_bytes, (unsigned long long)rep.damaged_offset,
                 rep.damaged_file, rep.reason, rep.damaged_ranges > 1 ? "them" : "it");
    if (rep.rewrite)
        log_info("persistence: rewriting the log%s in the background",
                 rep.v1_files ? " in format 2" : " without the damaged ranges");
    return 0;
}
