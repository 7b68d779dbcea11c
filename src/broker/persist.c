/* persist.c - the broker's state to plog records as it changes
 * (persist.h); persist_load.c reads them back at start.
 *
 * Times: the broker's clocks are the loop's (monotonic), which restart with
 * the process, so the log holds wall-clock times (a message's expiry, an
 * offline session's end) and they are translated both ways through the
 * pair of clocks read at the moment.
 *
 * Received QoS 2 ids live in the session as bare packet ids; the log entry
 * of each, needed to delete it at PUBREL, is kept here in a map keyed by
 * session and packet id.
 *
 * Loops (--threads): one log for every loop, under one mutex (taken only
 * with more than one loop). Every hook appends under it, and a hook that
 * appends several records (a message and its entry) holds it across them
 * all, so that no other loop's commit comes between. The commit is group
 * commit across loops: a loop about to flush makes everything appended so
 * far durable with one write and one fdatasync under the mutex, whoever
 * appended it, and a loop whose records another loop's commit already
 * covered finds nothing left to do (docs/persistence.md, "Loops").
 */
#include "broker/persist.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "broker/conn.h"
#include "broker/msg.h"
#include "broker/plog.h"
#include "broker/session.h"
#include "core/clock.h"
#include "core/mem.h"
#include "mqtt/mqtt5.h"
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
    bool shared;       /* more than one loop: the mutex is taken */
    pthread_mutex_t lock; /* the log, qos2 and the counts below */
    struct hmap qos2;  /* key -> struct qos2_in */
    /* Records appended, and how many of them the last commit made durable:
     * written under the lock, read without it by a loop that asks whether
     * it has anything to commit. */
    uint64_t appended, committed;
};

static void persist_lock(struct persist *p)
{
    if (p->shared)
        pthread_mutex_lock(&p->lock);
}
static void persist_unlock(struct persist *p)
{
    if (p->shared)
        pthread_mutex_unlock(&p->lock);
}

/* Every append goes through here, under the lock. */
static uint64_t append(struct persist *p, const struct plog_rec *r)
{
    __atomic_store_n(&p->appended, p->appended + 1, __ATOMIC_RELEASE);
    return plog_append(p->log, r);
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A loop time in the future as wall-clock time (and back: persist_to_loop).
 * Every loop's time is clock_now_ms() as its iteration began, so the clock
 * itself is read: any loop's thread may ask. */
static uint64_t to_wall(const struct broker *b, uint64_t loop_ms)
{
    uint64_t now = clock_now_ms();
    return wall_ms() + (loop_ms > now ? loop_ms - now : 0);
}
uint64_t persist_to_loop(const struct broker *b, uint64_t at_ms)
{
    uint64_t wall = wall_ms();
    uint64_t t = clock_now_ms() + (at_ms > wall ? at_ms - wall : 0);
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

bool persist_commit_(struct broker *b)
{
    struct persist *p = b->persist;
    /* Nothing appended since the last commit (by any loop whose appends
     * this loop's output may depend on: they happened before what this
     * loop read of them); a periodic sync is due whether or not. */
    if (!p->periodic_sync &&
        __atomic_load_n(&p->committed, __ATOMIC_ACQUIRE) ==
            __atomic_load_n(&p->appended, __ATOMIC_ACQUIRE))
        return true;
    persist_lock(p);
    uint64_t upto = p->appended;
    bool ok = plog_commit(p->log) == 0;
    if (ok)
        __atomic_store_n(&p->committed, upto, __ATOMIC_RELEASE);
    persist_unlock(p);
    return ok;
}

/* The session's will, connected (its connection's, due its delay after
 * the connection ends) or offline (due at its will_ms), into r. Returns
 * the buffer its properties were encoded in, to free after the append. */
static uint8_t *persist_will(const struct broker *b, const struct session *s,
                             struct plog_session *r)
{
    const struct msg *will =
        s->conn ? conn_cold_peek(s->conn)->will : session_cold_peek(s)->will;
    if (!will)
        return NULL;
    r->has_will = true;
    r->will_retain = will->retain;
    r->will_qos = will->qos;
    r->will_topic = bytes(msg_topic(will), will->topic_len);
    r->will_payload = bytes(msg_payload(will), will->payload_len);
    if (s->conn)
        r->will_delay = conn_cold_peek(s->conn)->will_delay_s;
    else
        r->will_at_ms = to_wall(b, session_cold_peek(s)->will_ms);
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

/* The records, appended under the lock (persist_lock), and the hooks
 * that take it around them. */

static void session_del_rec(struct persist *p, struct session *s)
{
    /* Other loops read it when they route to s (persist_remote). */
    __atomic_store_n(&s->persisted, false, __ATOMIC_RELAXED);
    struct plog_rec r = {.type = PLOG_SESSION_DEL};
    r.session.client_id = client_id(s);
    append(p, &r);
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

void persist_session_(struct broker *b, struct session *s)
{
    struct persist *p = b->persist;
    if (s->expiry_s == 0) {
        persist_session_del(b, s);
        return;
    }
    struct plog_rec r = {.type = PLOG_SESSION};
    r.session = (struct plog_session){
        .client_id = client_id(s),
        .expiry = s->expiry_s,
        .expires_at_ms = !s->conn && s->expiry_s != SESSION_NEVER ? to_wall(b, session_cold_peek(s)->expires_ms) : 0,
        .protocol = s->v5 ? MQTT5_PROTOCOL_LEVEL : s->v31 ? MQTT31_PROTOCOL_LEVEL : MQTT311_PROTOCOL_LEVEL,
    };
    uint8_t *props = persist_will(b, s, &r.session);
    persist_lock(p);
    append(p, &r);
    __atomic_store_n(&s->persisted, true, __ATOMIC_RELAXED);
    persist_unlock(p);
    mem_free(props);
}

void persist_session_del_(struct broker *b, struct session *s)
{
    struct persist *p = b->persist;
    if (!p) {
        s->persisted = false;
        return; /* shutting down: the log is closed and keeps the session */
    }
    persist_lock(p);
    session_del_rec(p, s);
    persist_unlock(p);
}

void persist_sub_(struct broker *b, struct session *s, const uint8_t *filter, size_t len,
                  uint8_t options, uint32_t sub_id, bool add)
{
    struct persist *p = b->persist;
    struct plog_rec r = {.type = add ? PLOG_SUB : PLOG_SUB_DEL};
    r.sub = (struct plog_sub){client_id(s), bytes(filter, len), options, sub_id};
    persist_lock(p);
    append(p, &r);
    persist_unlock(p);
}

/* Stores m in the log once, whoever references it first (on whichever
 * loop: m->plog_id is read and written under the lock). */
static uint64_t msg_rec(struct broker *b, struct msg *m)
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
    m->plog_id = append(b->persist, &r);
    return m->plog_id;
}

void persist_retain_(struct broker *b, struct msg *m)
{
    struct persist *p = b->persist;
    if (m->topic_len && msg_topic(m)[0] == '$')
        return; /* $SYS: the broker's own figures, published again at start */
    struct plog_rec r = {.type = m->payload_len ? PLOG_RETAIN : PLOG_RETAIN_CLEAR};
    r.retain.topic = bytes(msg_topic(m), m->topic_len);
    persist_lock(p);
    if (m->payload_len)
        r.retain.msg_id = msg_rec(b, m);
    append(p, &r);
    persist_unlock(p);
}

static void entry_state_rec(struct persist *p, uint64_t entry, uint8_t state, uint16_t packet_id,
                            bool lazy)
{
    struct plog_rec r = {.type = PLOG_ENTRY_STATE, .lazy = lazy};
    r.entry = (struct plog_entry){.id = entry, .state = state, .packet_id = packet_id};
    append(p, &r);
}

static void entry_del_rec(struct persist *p, uint64_t entry, bool lazy)
{
    struct plog_rec r = {.type = PLOG_ENTRY_DEL, .lazy = lazy};
    r.entry.id = entry;
    append(p, &r);
}

uint64_t persist_out_(struct broker *b, struct session *s, struct msg *m,
                      const struct delivery *d, uint8_t state, uint16_t packet_id)
{
    struct persist *p = b->persist;
    if (!p)
        return 0;
    if (d->entry) {
        /* Sent: a QoS 2 copy's packet id must be on disk before the
         * subscriber sees it; a QoS 1 copy whose record is lost is sent
         * again, as QoS 1 allows. */
        persist_lock(p);
        entry_state_rec(p, d->entry, state, packet_id, d->qos < 2);
        persist_unlock(p);
        return d->entry;
    }
    /* A QoS 0 copy may be lost (at most once); a QoS 1/2 one is owed to
     * the publisher its PUBACK/PUBREC went to. */
    struct plog_rec r = {.type = PLOG_ENTRY, .lazy = d->qos == 0};
    r.entry = (struct plog_entry){
        .client_id = client_id(s),
        .dir = PLOG_OUT,
        .state = state,
        .qos = d->qos,
        .packet_id = packet_id,
    };
    persist_lock(p);
    r.entry.msg_id = msg_rec(b, m);
    uint64_t id = append(p, &r);
    persist_unlock(p);
    return id;
}

uint64_t persist_remote_(struct broker *b, struct session *s, struct msg *m,
                         const struct delivery *d)
{
    /* A QoS 0 copy too if it is to be queued (the session offline), so
     * that the session's copies are in the log in the order they reach
     * it, as they are restored. */
    if (!__atomic_load_n(&s->persisted, __ATOMIC_RELAXED) ||
        (d->qos == 0 && (!b->cfg->queue_qos0 || __atomic_load_n(&s->online, __ATOMIC_RELAXED))))
        return 0;
    return persist_out_(b, s, m, d, PLOG_QUEUED, 0);
}

void persist_entry_state_(struct broker *b, uint64_t entry, uint8_t state, uint16_t packet_id,
                          bool lazy)
{
    struct persist *p = b->persist;
    if (!p)
        return;
    persist_lock(p);
    entry_state_rec(p, entry, state, packet_id, lazy);
    persist_unlock(p);
}

void persist_entry_del_(struct broker *b, uint64_t entry, bool lazy)
{
    struct persist *p = b->persist;
    if (!p)
        return;
    persist_lock(p);
    entry_del_rec(p, entry, lazy);
    persist_unlock(p);
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
    persist_lock(p);
    if (add) {
        struct plog_rec r = {.type = PLOG_ENTRY};
        r.entry = (struct plog_entry){.client_id = client_id(s), .dir = PLOG_IN,
                                      .state = PLOG_PUBREC_SENT, .qos = 2, .packet_id = packet_id};
        qos2_remember(p, s, packet_id, append(p, &r));
    } else {
        uint8_t key[QOS2_KEY_LEN];
        qos2_key(key, s, packet_id);
        struct qos2_in *q = hmap_del(&p->qos2, key, QOS2_KEY_LEN);
        if (q) {
            /* Not lazy: were it lost, the id would count as taken after a
             * restart, and the publisher's next message under it, already
             * answered with PUBCOMP, would be taken for a retransmission. */
            entry_del_rec(p, q->entry, false);
            mem_free(q);
        }
    }
    persist_unlock(p);
}

void persist_start(struct broker *b, struct plog *log)
{
    struct persist *p = mem_calloc(1, sizeof *p);
    p->log = log;
    p->periodic_sync = b->cfg->persistence.sync_interval_ms > 0;
    p->shared = b->nloops > 1;
    pthread_mutex_init(&p->lock, NULL);
    b->persist = p;
}

void persist_qos2_restored(struct broker *b, struct session *s, uint16_t packet_id, uint64_t entry)
{
    qos2_remember(b->persist, s, packet_id, entry);
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
    pthread_mutex_destroy(&p->lock);
    mem_free(p);
    b->persist = NULL;
}

void persist_tick(struct broker *b)
{
    struct persist *p = b->persist;
    if (!p)
        return;
    persist_lock(p);
    plog_maintain(p->log);
    if (p->periodic_sync)
        plog_commit(p->log);
    persist_unlock(p);
}
