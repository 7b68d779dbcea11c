/* js_msgs.c - QoS 1/2 messages through a JetStream stream (js_msgs.h).
 *
 * A publish waiting for its PubAck is a pending entry, keyed by the
 * sequence in its Mqtt-Id ("NONCE:SEQ"; also its Nats-Msg-Id), holding a
 * reference to the publisher's session and its connection's serial (a
 * reconnected client's new connection must not get an old connection's
 * acknowledgement: its packet ids start again). libnats's thread settles
 * it on the PubAck (or its error), the consumer's thread when
 * JS_MSGS_WAIT_MS passed first (libnats 3.4 has no timeout of its own for
 * an asynchronous publish), whichever comes first; the other finds nothing.
 *
 * Order per publisher: one publisher's messages leave its loop in order on
 * one connection, the stream's leader stores and answers them in order,
 * and libnats calls the handler in the order the answers came, so the
 * acknowledgements reach the publisher's loop in order; a timeout settles
 * the oldest entries first.
 */
#include "cluster/js_msgs.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#include "broker/broker.h"
#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/handle.h"
#include "broker/router.h"
#include "broker/session.h"
#include "broker/session_life.h"
#include "cluster/kvbucket.h"
#include "cluster/link.h"
#include "cluster/subject.h"
#include "core/clock.h"
#include "core/ev.h"
#include "core/hmap.h"
#include "core/log.h"
#include "core/mem.h"

/* The origin node's name, on every message of the stream. */
#define JS_HDR_NODE "Mqtt-Node"
#define JS_HDR_ID "Mqtt-Id"
/* One fetch: at most this many messages, waiting at most this long (which
 * is also how often timeouts are looked for, and the stop's delay). */
#define JS_MSGS_BATCH 256
#define JS_MSGS_FETCH_MS 200
/* A message the node fetched and did not acknowledge (it stopped, or its
 * inbox was full) comes again after this; at most this many wait for
 * their acknowledgement at once. */
#define JS_MSGS_ACK_WAIT_MS 10000
#define JS_MSGS_MAX_ACK_PENDING 65536
/* Publishes waiting for their PubAck at most; past it a publish waits this
 * long on its loop and then fails. */
#define JS_MSGS_MAX_PENDING 65536
#define JS_MSGS_STALL_MS 50

/* A publish waiting for JetStream. */
struct js_pending {
    uint64_t seq;
    struct session *s; /* a reference */
    uint64_t serial;   /* its connection's (conn_cold.js_serial) */
    uint64_t deadline_ms;
    uint16_t packet_id;
    uint8_t qos, reason;
    const char *why;
    struct js_pending *prev, *next; /* oldest first */
};

/* A settled publish, for the publisher's loop. */
struct js_done {
    struct session *s;
    uint64_t serial;
    uint16_t packet_id;
    uint8_t qos, reason;
    bool stored;
    const char *why;
};

/* One loop's results: libnats's and the consumer's threads append, the
 * loop takes the whole box at once. */
struct js_box {
    pthread_mutex_t lock;
    struct js_done *v;
    uint32_t n, cap;
    struct js_done *taken; /* the loop's: the last batch's buffer */
    uint32_t taken_cap;
    int efd;
    struct ev_io wake;
    struct broker_loop *l;
};

struct js_msgs {
    struct cluster *c;
    natsConnection *nc; /* CLUSTER_NAME/NODE_NAME/js */
    jsCtx *js;
    char stream[SUBJECT_PREFIX_MAX + 16];
    char filter[SUBJECT_PREFIX_MAX + 8]; /* PREFIX.j.> */
    char durable[128];
    uint32_t replicas;

    /* The consumer's thread's. */
    pthread_t thread;
    bool stream_bound;
    natsSubscription *sub;
    bool stopping; /* atomic */

    pthread_mutex_t lock; /* the pending entries, seq */
    struct hmap pending;  /* seq -> struct js_pending */
    struct js_pending *head, *tail;
    uint64_t seq;
    uint64_t stored, failed, own; /* under lock; own: our own, dropped */
    uint64_t serials;             /* connections numbered so far (atomic) */

    unsigned nboxes;
    struct js_box *boxes; /* [nboxes], by loop index */
};

/* ---- results to the publishers' loops ---------------------------------------- */

static void js_box_push(struct js_msgs *j, const struct js_done *d)
{
    struct js_box *bx = &j->boxes[d->s->loop->index];
    pthread_mutex_lock(&bx->lock);
    if (bx->n == bx->cap) {
        bx->cap = bx->cap ? bx->cap * 2 : 64;
        bx->v = mem_realloc(bx->v, bx->cap * sizeof *bx->v);
    }
    bx->v[bx->n++] = *d;
    if (bx->n == 1) {
        uint64_t one = 1;
        (void)!write(bx->efd, &one, sizeof one);
    }
    pthread_mutex_unlock(&bx->lock);
}

/* p out of the table and the list (under lock). */
static void js_unlink(struct js_msgs *j, struct js_pending *p)
{
    hmap_del(&j->pending, &p->seq, sizeof p->seq);
    if (p->prev)
        p->prev->next = p->next;
    else
        j->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        j->tail = p->prev;
}

/* p settled (under lock): unlinked, its result to its loop. */
static void js_settle_locked(struct js_msgs *j, struct js_pending *p, bool stored)
{
    js_unlink(j, p);
    if (stored)
        j->stored++;
    else
        j->failed++;
    struct js_done d = {p->s, p->serial, p->packet_id, p->qos, p->reason, stored, p->why};
    js_box_push(j, &d);
    mem_free(p);
}

/* The publisher's loop: each result answered on its connection, if that
 * is still the one that sent the PUBLISH. */
static void js_on_box(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct js_box *bx = io->data;
    uint64_t v;
    (void)!read(bx->efd, &v, sizeof v);
    pthread_mutex_lock(&bx->lock);
    struct js_done *batch = bx->v;
    uint32_t n = bx->n, cap = bx->cap;
    bx->v = bx->taken;
    bx->cap = bx->taken_cap;
    bx->n = 0;
    pthread_mutex_unlock(&bx->lock);
    for (uint32_t i = 0; i < n; i++) {
        struct js_done *d = &batch[i];
        struct session *s = d->s;
        struct conn *c = s->gone ? NULL : s->conn;
        if (c && conn_cold_peek(c)->js_serial != d->serial)
            c = NULL; /* another connection now: the client sends it again */
        if (!s->gone)
            handle_publish_settled(bx->l, s, c, d->qos, d->packet_id, d->stored, d->reason,
                                   d->why);
        session_put(s);
    }
    bx->taken = batch;
    bx->taken_cap = cap;
}

int js_msgs_attach(struct js_msgs *j, struct broker_loop *l)
{
    struct js_box *bx = &j->boxes[l->index];
    bx->l = l;
    bx->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (bx->efd < 0) {
        log_error("cluster: cannot create an eventfd: %s", strerror(errno));
        return -1;
    }
    bx->wake.fd = bx->efd;
    bx->wake.cb = js_on_box;
    bx->wake.data = bx;
    return ev_io_start(l->ev, &bx->wake, EV_READ);
}

/* ---- publishing: any loop, then libnats's thread ------------------------------ */

/* The sequence of one of our messages, from its Mqtt-Id; 0 if none. */
static uint64_t js_msg_seq(natsMsg *msg)
{
    const char *id = NULL;
    if (!msg || natsMsgHeader_Get(msg, JS_HDR_ID, &id) != NATS_OK || !id)
        return 0;
    const char *colon = strchr(id, ':');
    return colon ? strtoull(colon + 1, NULL, 16) : 0;
}

static void js_settle(struct js_msgs *j, uint64_t seq, bool stored)
{
    pthread_mutex_lock(&j->lock);
    struct js_pending *p = seq ? hmap_get(&j->pending, &seq, sizeof seq) : NULL;
    if (p) /* else timed out already */
        js_settle_locked(j, p, stored);
    pthread_mutex_unlock(&j->lock);
}

/* libnats: JetStream's answer to one asynchronous publish. */
static void js_on_puback(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    struct js_msgs *j = closure;
    if (!pa)
        log_warn("cluster: stream %s did not take a message: %s", j->stream,
                 pae ? (pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err)) : "?");
    js_settle(j, js_msg_seq(msg), pa != NULL);
    natsMsg_Destroy(msg);
}

bool js_msgs_publish(struct js_msgs *j, struct broker_loop *l, struct conn *c,
                     const struct router_in *in, uint16_t packet_id, uint8_t reason,
                     const char *why)
{
    const subject_map *map = cluster_subjects(j->c);
    char core[SUBJECT_MAX + 1], subj[SUBJECT_MAX + 3];
    size_t n = subject_from_topic(map, in->topic.ptr, in->topic.len, core, sizeof core);
    if (n == 0 || subject_to_stream(map, core, n, subj, sizeof subj) == 0)
        return false; /* refused before: cluster_topic_fits */
    natsMsg *msg = NULL;
    natsStatus s = (natsStatus)cluster_msg_make(j->c, &msg, subj, in->payload.ptr, in->payload.len,
                                                in->qos, in->retain, in->props);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(msg, JS_HDR_NODE, cluster_node(j->c));
    if (s != NATS_OK) {
        natsMsg_Destroy(msg);
        return false;
    }
    struct conn_cold *k = conn_cold(c);
    if (!k->js_serial)
        k->js_serial = __atomic_add_fetch(&j->serials, 1, __ATOMIC_RELAXED);
    struct js_pending *p = mem_calloc(1, sizeof *p);
    p->s = c->session;
    p->serial = k->js_serial;
    p->deadline_ms = clock_now_ms() + JS_MSGS_WAIT_MS;
    p->packet_id = packet_id;
    p->qos = in->qos;
    p->reason = reason;
    p->why = why;
    __atomic_fetch_add(&p->s->refs, 1, __ATOMIC_RELAXED);
    char id[64];
    pthread_mutex_lock(&j->lock);
    p->seq = ++j->seq;
    hmap_put(&j->pending, &p->seq, sizeof p->seq, p);
    p->prev = j->tail;
    if (j->tail)
        j->tail->next = p;
    else
        j->head = p;
    j->tail = p;
    pthread_mutex_unlock(&j->lock);
    snprintf(id, sizeof id, "%s:%" PRIx64, cluster_origin(j->c), p->seq);
    uint64_t seq = p->seq; /* p may be settled and freed once it is sent */
    s = natsMsgHeader_Set(msg, JS_HDR_ID, id);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id; /* the stream's duplicate window */
    if (s == NATS_OK)
        s = js_PublishMsgAsync(j->js, &msg, &po);
    natsMsg_Destroy(msg); /* NULL once libnats took it */
    if (s == NATS_OK)
        return true;
    log_warn("cluster: publishing to stream %s: %s", j->stream, natsStatus_GetText(s));
    pthread_mutex_lock(&j->lock);
    p = hmap_get(&j->pending, &seq, sizeof seq);
    if (p) { /* not settled: taken back, the caller answers */
        js_unlink(j, p);
        j->failed++;
    }
    pthread_mutex_unlock(&j->lock);
    if (!p)
        return true; /* settled meanwhile (timed out): answered by the loop */
    session_put(p->s);
    mem_free(p);
    return false;
}

/* ---- the consumer: its own thread --------------------------------------------- */

/* Creates the stream if it is not there, else binds it as it is. */
static natsStatus js_stream_bind(struct js_msgs *j)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, j->js, j->stream, NULL, &jerr);
    if (s == NATS_NOT_FOUND) {
        const char *subjects[] = {j->filter};
        jsStreamConfig sc;
        jsStreamConfig_Init(&sc);
        sc.Name = j->stream;
        sc.Description = "shootout broker: QoS 1 and 2 MQTT messages (docs/cluster.md)";
        sc.Subjects = subjects;
        sc.SubjectsLen = 1;
        sc.Storage = js_FileStorage;
        sc.Replicas = (int64_t)j->replicas;
        /* Kept while some node's consumer has not acknowledged it. */
        sc.Retention = js_InterestPolicy;
        sc.MaxAge = (int64_t)JS_MSGS_MAX_AGE_S * 1000000000LL;
        sc.Duplicates = (int64_t)JS_MSGS_DUPLICATES_MS * 1000000LL;
        s = js_AddStream(&si, j->js, &sc, NULL, &jerr);
    }
    jsStreamInfo_Destroy(si);
    if (s == NATS_OK)
        j->stream_bound = true;
    return s;
}

/* Creates the node's durable consumer, or binds it where it stopped. */
static natsStatus js_consumer_bind(struct js_msgs *j)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = j->stream;
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.DeliverPolicy = js_DeliverNew; /* a new node starts from now */
    so.Config.AckWait = (int64_t)JS_MSGS_ACK_WAIT_MS * 1000000LL;
    so.Config.MaxAckPending = JS_MSGS_MAX_ACK_PENDING;
    jsErrCode jerr = 0;
    return js_PullSubscribe(&j->sub, j->js, j->filter, j->durable, NULL, &so, &jerr);
}

/* Publishes JetStream did not answer in time are refused. */
static void js_expire(struct js_msgs *j)
{
    uint64_t now = clock_now_ms();
    pthread_mutex_lock(&j->lock);
    uint64_t n = 0;
    while (j->head && j->head->deadline_ms <= now) {
        js_settle_locked(j, j->head, false);
        n++;
    }
    pthread_mutex_unlock(&j->lock);
    if (n)
        log_warn("cluster: %" PRIu64 " messages not acknowledged by stream %s within %d ms: "
                 "refused", n, j->stream, JS_MSGS_WAIT_MS);
}

/* Whether msg is one this node published (delivered here already). */
static bool js_own(struct js_msgs *j, natsMsg *msg)
{
    const char *node = NULL;
    return natsMsgHeader_Get(msg, JS_HDR_NODE, &node) == NATS_OK && node &&
           strcmp(node, cluster_node(j->c)) == 0;
}

static void js_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *js_consumer_main(void *arg)
{
    struct js_msgs *j = arg;
    uint64_t next_bind = 0;
    bool warned = false;
    while (!__atomic_load_n(&j->stopping, __ATOMIC_ACQUIRE)) {
        js_expire(j);
        if (!j->sub) {
            uint64_t now = clock_now_ms();
            natsStatus s = NATS_OK;
            if (now >= next_bind) {
                next_bind = now + 1000;
                s = j->stream_bound ? NATS_OK : js_stream_bind(j);
                if (s == NATS_OK)
                    s = js_consumer_bind(j);
                if (s == NATS_OK)
                    log_info("cluster: consuming stream %s as %s", j->stream, j->durable);
                else if (!warned)
                    log_warn("cluster: no consumer %s on stream %s yet: %s (asking again every "
                             "second)", j->durable, j->stream, natsStatus_GetText(s));
                warned = s != NATS_OK;
            }
            if (!j->sub)
                js_sleep_ms(JS_MSGS_FETCH_MS);
            continue;
        }
        natsMsgList list = {0};
        jsErrCode jerr = 0;
        natsStatus s = natsSubscription_Fetch(&list, j->sub, JS_MSGS_BATCH, JS_MSGS_FETCH_MS, &jerr);
        for (int i = 0; i < list.Count; i++) {
            natsMsg *msg = list.Msgs[i];
            list.Msgs[i] = NULL; /* ours now */
            if (js_own(j, msg)) {
                natsMsg_Ack(msg, NULL);
                natsMsg_Destroy(msg);
                pthread_mutex_lock(&j->lock);
                j->own++;
                pthread_mutex_unlock(&j->lock);
            } else {
                cluster_push_js(j->c, msg);
            }
        }
        natsMsgList_Destroy(&list);
        if (s != NATS_OK && s != NATS_TIMEOUT) {
            log_debug("cluster: fetching from %s: %s", j->stream, natsStatus_GetText(s));
            js_sleep_ms(JS_MSGS_FETCH_MS); /* the link down: not a busy loop */
        }
    }
    return NULL;
}

/* ---- start and stop ---------------------------------------------------------- */

static void js_free(struct js_msgs *j)
{
    natsSubscription_Destroy(j->sub);
    jsCtx_Destroy(j->js);
    natsConnection_Destroy(j->nc);
    for (unsigned i = 0; i < j->nboxes; i++) {
        struct js_box *bx = &j->boxes[i];
        for (uint32_t k = 0; k < bx->n; k++)
            session_put(bx->v[k].s);
        mem_free(bx->v);
        mem_free(bx->taken);
        if (bx->l) /* its loop is stopped, not freed yet (srv's stopped hook) */
            ev_io_stop(bx->l->ev, &bx->wake);
        if (bx->efd >= 0)
            close(bx->efd);
        pthread_mutex_destroy(&bx->lock);
    }
    mem_free(j->boxes);
    hmap_free(&j->pending);
    pthread_mutex_destroy(&j->lock);
    mem_free(j);
}

struct js_msgs *js_msgs_start(struct cluster *c, const struct broker_config *cfg,
                              unsigned nloops)
{
    struct js_msgs *j = mem_calloc(1, sizeof *j);
    j->c = c;
    j->replicas = cfg->cluster.replicas;
    pthread_mutex_init(&j->lock, NULL);
    hmap_init(&j->pending);
    j->nboxes = nloops;
    j->boxes = mem_calloc(nloops, sizeof *j->boxes);
    for (unsigned i = 0; i < nloops; i++) {
        pthread_mutex_init(&j->boxes[i].lock, NULL);
        j->boxes[i].efd = -1;
    }
    /* Named as the buckets are: two clusters on one NATS keep their
     * prefixes, and so their streams, apart. */
    kvbucket_name(j->stream, sizeof j->stream, "MQTT_MSGS", cfg->cluster.prefix);
    snprintf(j->filter, sizeof j->filter, "%s.j.>", cfg->cluster.prefix);
    /* A consumer's name takes no '.', '*', '>', '/' or whitespace. */
    snprintf(j->durable, sizeof j->durable, "%s", cluster_node(c));
    for (char *p = j->durable; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_'))
            *p = '_';
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = JS_MSGS_WAIT_MS;
    jo.PublishAsync.AckHandler = js_on_puback;
    jo.PublishAsync.AckHandlerClosure = j;
    jo.PublishAsync.MaxPending = JS_MSGS_MAX_PENDING;
    jo.PublishAsync.StallWait = JS_MSGS_STALL_MS;
    natsStatus s = (natsStatus)cluster_connect_more(c, cfg, "js", true, &j->nc);
    if (s == NATS_OK)
        s = natsConnection_JetStream(&j->js, j->nc, &jo);
    /* As kv_retain_start: a timeout is JetStream busy (asked again by the
     * consumer's thread), anything else (no responders) is final. */
    sigset_t old;
    cluster_block_signals(&old);
    if (s == NATS_OK)
        s = js_stream_bind(j);
    if (s != NATS_OK && s != NATS_TIMEOUT) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        log_warn("cluster: no stream %s (%s: %s); QoS 1 and 2 cross nodes at most once",
                 j->stream, natsStatus_GetText(s), nats_GetLastError(NULL));
        if (j->nc)
            natsConnection_Close(j->nc);
        js_free(j);
        return NULL;
    }
    int err = pthread_create(&j->thread, NULL, js_consumer_main, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        log_error("cluster: cannot start the stream's consumer: %s", strerror(err));
        natsConnection_Close(j->nc);
        js_free(j);
        return NULL;
    }
    log_info("cluster: QoS 1 and 2 messages through stream %s%s", j->stream,
             j->stream_bound ? "" : " (not bound yet: JetStream does not answer)");
    return j;
}

void js_msgs_stop(struct js_msgs *j)
{
    if (!j)
        return;
    __atomic_store_n(&j->stopping, true, __ATOMIC_RELEASE);
    pthread_join(j->thread, NULL);
    /* The publishes libnats still waits for, taken back: no handler runs
     * for them any more. (libnats 3.4 crashes here on a context that never
     * published asynchronously.) */
    natsMsgList mine = {0};
    if (j->seq && js_PublishAsyncGetPendingList(&mine, j->js) == NATS_OK)
        natsMsgList_Destroy(&mine);
    /* Closed before the subscription goes, so that nothing can delete the
     * durable consumer: the next start resumes it. */
    natsConnection_Close(j->nc);
    pthread_mutex_lock(&j->lock);
    uint64_t left = 0;
    while (j->head) { /* no loop runs any more: nobody to answer */
        struct js_pending *p = j->head;
        js_unlink(j, p);
        session_put(p->s);
        mem_free(p);
        left++;
    }
    log_info("cluster: stream %s: %" PRIu64 " messages stored, %" PRIu64 " refused, %" PRIu64
             " waiting at the stop; %" PRIu64 " of our own dropped by the consumer",
             j->stream, j->stored, j->failed, left, j->own);
    pthread_mutex_unlock(&j->lock);
    js_free(j);
}
