/* persist.c - the broker's state to plog records and back (persist.h).
 *
 * Times: the broker's clocks are the loop's (monotonic), which restart with
 * the process, so the log holds wall-clock times (a message's expiry, an
 * offline session's end) and they are translated both ways through the
 * pair of clocks read at the moment.
 *
 * Received QoS 2 ids live in the session as bare packet ids; the log entry
 * of each, needed to delete it at PUBREL, is kept here in a map keyed by
 * session and packet id.
 */
#include "broker/persist.h"

#include <string.h>
#include <time.h>

#include "broker/plog.h"
#include "broker/retain.h"
#include "broker/router.h"
#include "core/log.h"
#include "core/mem.h"
#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_props.h"

#define QOS2_KEY_LEN (sizeof(struct session *) + 2)

struct qos2_in {
    uint8_t key[QOS2_KEY_LEN]; /* the session's address, then the packet id */
    uint64_t entry;
};

struct persist {
    struct plog *log;
    bool periodic_sync;
    struct hmap qos2;  /* key -> struct qos2_in */
    struct hmap msgs;  /* at start only: log message id -> struct msg */
};

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A loop time in the future as wall-clock time, and back. */
static uint64_t to_wall(const struct broker *b, uint64_t loop_ms)
{
    uint64_t now = ev_now(b->loop);
    return wall_ms() + (loop_ms > now ? loop_ms - now : 0);
}
static uint64_t to_loop(const struct broker *b, uint64_t at_ms)
{
    uint64_t wall = wall_ms();
    uint64_t t = ev_now(b->loop) + (at_ms > wall ? at_ms - wall : 0);
    return t ? t : 1; /* 0 means "never" */
}

static struct plog_bytes bytes(const void *p, size_t len)
{
    return (struct plog_bytes){p, (uint32_t)len};
}

static struct plog_bytes client_id(const struct session *s)
{
    return bytes(s->client_id, s->client_id_len);
}

static void qos2_key(uint8_t key[QOS2_KEY_LEN], const struct session *s, uint16_t packet_id)
{
    memcpy(key, &s, sizeof s);
    memcpy(key + sizeof s, &packet_id, 2);
}

/* ---- recording changes --------------------------------------------------- */

bool persist_commit_(struct broker *b) { return plog_commit(b->persist->log) == 0; }

/* The session's will, connected (its connection's, due its delay after
 * the connection ends) or offline (due at s->will_ms), into r. Returns
 * the buffer its properties were encoded in, to free after the append. */
static uint8_t *persist_will(const struct broker *b, const struct session *s,
                             struct plog_session *r)
{
    const struct msg *will = s->conn ? s->conn->will : s->will;
    if (!will)
        return NULL;
    r->has_will = true;
    r->will_retain = will->retain;
    r->will_qos = will->qos;
    r->will_topic = bytes(msg_topic(will), will->topic_len);
    r->will_payload = bytes(msg_payload(will), will->payload_len);
    if (s->conn)
        r->will_delay = s->conn->will_delay_s;
    else
        r->will_at_ms = to_wall(b, s->will_ms);
    /* The properties it passes on, and its Message Expiry Interval, which
     * starts when it is published (held in expires_ms until then). */
    uint8_t *props = mem_alloc(will->props_len + 5);
    memcpy(props, msg_props(will), will->props_len);
    size_t n = will->props_len;
    if (will->expires_ms) {
        uint32_t interval = (uint32_t)(will->expires_ms / 1000);
        props[n++] = MQTT_PROP_MESSAGE_EXPIRY;
        for (int i = 3; i >= 0; i--)
            props[n++] = (uint8_t)(interval >> (8 * i));
    }
    r->will_props = bytes(props, n);
    return props;
}

void persist_session_(struct broker *b, struct session *s)
{
    if (s->expiry_s == 0) {
        persist_session_del(b, s);
        return;
    }
    struct plog_rec r = {.type = PLOG_SESSION};
    r.session = (struct plog_session){
        .client_id = client_id(s),
        .expiry = s->expiry_s,
        .expires_at_ms = !s->conn && s->expiry_s != SESSION_NEVER ? to_wall(b, s->expires_ms) : 0,
        .protocol = s->v5 ? MQTT5_PROTOCOL_LEVEL : s->v31 ? MQTT31_PROTOCOL_LEVEL : MQTT311_PROTOCOL_LEVEL,
    };
    uint8_t *props = persist_will(b, s, &r.session);
    plog_append(b->persist->log, &r);
    mem_free(props);
    s->persisted = true;
}

void persist_session_del_(struct broker *b, struct session *s)
{
    s->persisted = false;
    struct persist *p = b->persist;
    if (!p)
        return; /* shutting down: the log is closed and keeps the session */
    struct plog_rec r = {.type = PLOG_SESSION_DEL};
    r.session.client_id = client_id(s);
    plog_append(p->log, &r);
    /* Its received QoS 2 ids went with it. */
    size_t i = 0;
    struct hmap_slot *slot;
    while ((slot = hmap_next(&p->qos2, &i))) {
        struct qos2_in *q = slot->val;
        if (memcmp(q->key, &s, sizeof s) == 0) {
            hmap_del(&p->qos2, q->key, QOS2_KEY_LEN);
            mem_free(q);
        }
    }
}

void persist_sub_(struct broker *b, struct session *s, const uint8_t *filter, size_t len,
                  uint8_t options, uint32_t sub_id, bool add)
{
    struct plog_rec r = {.type = add ? PLOG_SUB : PLOG_SUB_DEL};
    r.sub = (struct plog_sub){client_id(s), bytes(filter, len), options, sub_id};
    plog_append(b->persist->log, &r);
}

/* Stores m in the log once, whoever references it first. */
static uint64_t persist_msg(struct broker *b, struct msg *m)
{
    if (m->plog_id)
        return m->plog_id;
    /* As durable as what references it, appended after it. */
    struct plog_rec r = {.type = PLOG_MSG, .lazy = true};
    r.msg = (struct plog_msg){
        .qos = m->qos,
        .retain = m->retain,
        .expiry_ms = m->expires_ms ? to_wall(b, m->expires_ms) : 0,
        .topic = bytes(msg_topic(m), m->topic_len),
        .payload = bytes(msg_payload(m), m->payload_len),
        .props = bytes(msg_props(m), m->props_len),
    };
    m->plog_id = plog_append(b->persist->log, &r);
    return m->plog_id;
}

void persist_retain_(struct broker *b, struct msg *m)
{
    if (m->topic_len && msg_topic(m)[0] == '$')
        return; /* $SYS: the broker's own figures, published again at start */
    struct plog_rec r = {.type = m->payload_len ? PLOG_RETAIN : PLOG_RETAIN_CLEAR};
    r.retain.topic = bytes(msg_topic(m), m->topic_len);
    if (m->payload_len)
        r.retain.msg_id = persist_msg(b, m);
    plog_append(b->persist->log, &r);
}

uint64_t persist_out_(struct broker *b, struct session *s, struct msg *m,
                      const struct delivery *d, uint8_t state, uint16_t packet_id)
{
    if (!b->persist)
        return 0;
    if (d->entry) {
        /* Sent: a QoS 2 copy's packet id must be on disk before the
         * subscriber sees it; a QoS 1 copy whose record is lost is sent
         * again, as QoS 1 allows. */
        persist_entry_state_(b, d->entry, state, packet_id, d->qos < 2);
        return d->entry;
    }
    /* A QoS 0 copy may be lost (at most once); a QoS 1/2 one is owed to
     * the publisher its PUBACK/PUBREC went to. */
    struct plog_rec r = {.type = PLOG_ENTRY, .lazy = d->qos == 0};
    r.entry = (struct plog_entry){
        .client_id = client_id(s),
        .msg_id = persist_msg(b, m),
        .dir = PLOG_OUT,
        .state = state,
        .qos = d->qos,
        .packet_id = packet_id,
    };
    return plog_append(b->persist->log, &r);
}

void persist_entry_state_(struct broker *b, uint64_t entry, uint8_t state, uint16_t packet_id,
                          bool lazy)
{
    if (!b->persist)
        return;
    struct plog_rec r = {.type = PLOG_ENTRY_STATE, .lazy = lazy};
    r.entry = (struct plog_entry){.id = entry, .state = state, .packet_id = packet_id};
    plog_append(b->persist->log, &r);
}

void persist_entry_del_(struct broker *b, uint64_t entry, bool lazy)
{
    if (!b->persist)
        return;
    struct plog_rec r = {.type = PLOG_ENTRY_DEL, .lazy = lazy};
    r.entry.id = entry;
    plog_append(b->persist->log, &r);
}

static void qos2_remember(struct persist *p, struct session *s, uint16_t packet_id, uint64_t entry)
{
    struct qos2_in *q = mem_alloc(sizeof *q);
    qos2_key(q->key, s, packet_id);
    q->entry = entry;
    mem_free(hmap_put(&p->qos2, q->key, QOS2_KEY_LEN, q));
}

void persist_qos2_in_(struct broker *b, struct session *s, uint16_t packet_id, bool add)
{
    struct persist *p = b->persist;
    if (!p)
        return;
    if (add) {
        struct plog_rec r = {.type = PLOG_ENTRY};
        r.entry = (struct plog_entry){.client_id = client_id(s), .dir = PLOG_IN,
                                      .state = PLOG_PUBREC_SENT, .qos = 2, .packet_id = packet_id};
        qos2_remember(p, s, packet_id, plog_append(p->log, &r));
        return;
    }
    uint8_t key[QOS2_KEY_LEN];
    qos2_key(key, s, packet_id);
    struct qos2_in *q = hmap_del(&p->qos2, key, QOS2_KEY_LEN);
    if (q) {
        /* Not lazy: were it lost, the id would count as taken after a
         * restart, and the publisher's next message under it, already
         * answered with PUBCOMP, would be taken for a retransmission. */
        persist_entry_del_(b, q->entry, false);
        mem_free(q);
    }
}

/* ---- rebuilding at start ------------------------------------------------- */

struct rebuild {
    struct broker *b;
    struct persist *p;
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
    bool has_props = false;
    uint8_t *buf = NULL;
    if (props.len) {
        buf = mem_alloc(props.len + 4);
        size_t n = mqtt_encode_varint(buf, props.len), used;
        memcpy(buf + n, props.p, props.len);
        has_props = mqtt_props_decode(buf, n + props.len, MQTT_PUBLISH, &decoded, &used) ==
                    MQTT_PROPS_OK;
    }
    struct msg *m = msg_new(topic.p, topic.len, payload.p, payload.len, qos, retain,
                            has_props ? &decoded : NULL, now_ms);
    mem_free(buf);
    return m;
}

static void rebuild_session(struct broker *b, const struct plog_session *r)
{
    struct session *s = session_new(b, r->client_id.p, r->client_id.len);
    s->expiry_s = r->expiry;
    s->v5 = r->protocol == MQTT5_PROTOCOL_LEVEL;
    s->v31 = r->protocol == MQTT31_PROTOCOL_LEVEL;
    s->persisted = true;
    /* Offline now; a session that was connected when the broker stopped
     * starts its expiry clock, and its will's delay, at this start. */
    session_detach(b, s, NULL, 0);
    if (r->expires_at_ms && s->expiry_s != SESSION_NEVER)
        s->expires_ms = to_loop(b, r->expires_at_ms);
    if (r->has_will && hmap_get(&b->sessions, r->client_id.p, r->client_id.len)) {
        struct msg *will = rebuild_msg_new(r->will_topic, r->will_payload, r->will_qos,
                                           r->will_retain, r->will_props, 0);
        uint64_t due = r->will_at_ms ? to_loop(b, r->will_at_ms)
                                     : ev_now(b->loop) + (uint64_t)r->will_delay * 1000;
        session_owe_will(b, s, will, due);
    }
}

static void rebuild_msg(struct rebuild *x, const struct plog_msg *r)
{
    struct msg *m = rebuild_msg_new(r->topic, r->payload, r->qos, r->retain, r->props,
                                    ev_now(x->b->loop));
    m->plog_id = r->id;
    m->expires_ms = r->expiry_ms ? to_loop(x->b, r->expiry_ms) : 0;
    hmap_put(&x->p->msgs, &m->plog_id, sizeof m->plog_id, m);
}

static void rebuild_entry(struct rebuild *x, const struct plog_entry *r)
{
    struct session *s = rebuild_session_of(x->b, r->client_id);
    if (!s)
        return;
    if (r->dir == PLOG_IN) {
        session_qos2_seen(s, r->packet_id, UINT32_MAX);
        qos2_remember(x->p, s, r->packet_id, r->id);
        return;
    }
    struct msg *m = hmap_get(&x->p->msgs, &r->msg_id, sizeof r->msg_id);
    if (!m)
        return;
    /* Subscription identifiers and RETAIN flags of copies are not kept. */
    struct delivery d = {.qos = r->qos, .entry = r->id};
    session_restore(x->b, s, m, &d, r->state, r->packet_id);
}

static void rebuild_apply(void *ctx, const struct plog_rec *r)
{
    struct rebuild *x = ctx;
    struct broker *b = x->b;
    switch (r->type) {
    case PLOG_SESSION:
        rebuild_session(b, &r->session);
        break;
    case PLOG_MSG:
        rebuild_msg(x, &r->msg);
        break;
    case PLOG_RETAIN: {
        struct msg *m = hmap_get(&x->p->msgs, &r->retain.msg_id, sizeof r->retain.msg_id);
        if (m)
            retain_set(b->retained, r->retain.topic.p, r->retain.topic.len, msg_ref(m));
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

int persist_open(struct broker *b)
{
    const struct broker_config *cfg = b->cfg;
    struct persist *p = mem_calloc(1, sizeof *p);
    struct plog_options opt = {.dir = cfg->persistence.location,
                               .sync_interval_ms = cfg->persistence.sync_interval_ms};
    struct plog_report rep = {0};
    struct rebuild x = {b, p};
    char err[512];
    p->periodic_sync = cfg->persistence.sync_interval_ms > 0;
    p->log = plog_open(&opt, rebuild_apply, &x, &rep, err, sizeof err);
    /* The log holds its own copy of each message now. */
    size_t i = 0;
    struct hmap_slot *slot;
    while ((slot = hmap_next(&p->msgs, &i)))
        msg_unref(slot->val);
    hmap_free(&p->msgs);
    if (!p->log) {
        log_error("persistence: %s", err);
        hmap_free(&p->qos2);
        mem_free(p);
        return -1;
    }
    b->persist = p;
    /* What fell due while the broker was down (wills, ends of sessions)
     * happens before the first client comes in. */
    session_sweep(b);
    log_info("persistence: %s: %u sessions, %u subscriptions, %u retained, %u messages, "
             "%u queued or in flight, from %u files (%llu bytes)",
             cfg->persistence.location, rep.sessions, rep.subs, rep.retained, rep.msgs,
             rep.entries, rep.files, (unsigned long long)rep.bytes);
    if (rep.dropped_bytes)
        log_warn("persistence: recovered what preceded %s at byte %llu of log.%010u: %llu bytes "
                 "and %u later files dropped%s%s",
                 rep.reason, (unsigned long long)rep.damaged_offset, rep.damaged_file,
                 (unsigned long long)rep.dropped_bytes, rep.dropped_files,
                 rep.aside[0] ? ", saved in " : "", rep.aside);
    return 0;
}

void persist_close(struct broker *b)
{
    struct persist *p = b->persist;
    if (!p)
        return;
    plog_close(p->log);
    size_t i = 0;
    struct hmap_slot *slot;
    while ((slot = hmap_next(&p->qos2, &i)))
        mem_free(slot->val);
    hmap_free(&p->qos2);
    mem_free(p);
    b->persist = NULL;
}

void persist_tick(struct broker *b)
{
    struct persist *p = b->persist;
    if (!p)
        return;
    plog_maintain(p->log);
    if (p->periodic_sync)
        plog_commit(p->log);
}
