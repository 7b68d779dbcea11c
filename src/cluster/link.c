/* link.c - a broker node's NATS connection (link.h).
 *
 * Duplicates: a message matching two of a node's NATS subscriptions (a/+
 * and a/#) arrives once per subscription, and routing each copy through
 * the local tree would deliver it twice. Every message we publish carries
 * its origin's boot nonce and a sequence number (CLUSTER_HDR_ID); the
 * callback keeps, per origin, the last sequence it took and drops any copy
 * at or below it. That is exact because one origin's messages reach a
 * node in the order they were published (one connection to one NATS
 * server, routes that keep order) and the connection delivers every
 * subscription's messages in one thread of libnats's global pool, in the
 * order they were read. (Subscribing the whole prefix once a wildcard is
 * present would avoid duplicates too, but would pull every message of the
 * cluster to every node.) A node that reconnects to another NATS server
 * may see a later message overtake an earlier one still in flight on the
 * old route: the earlier one is then dropped, which QoS 0 allows.
 *
 * Shared subscriptions: each local member of $share/<group>/<filter> has
 * its own queue subscriptions (two for a/#, as above) on a second
 * connection, qnc, in the queue group of <group>, so that NATS is fair per
 * member across the cluster, and a node publishes no shared message to
 * its own groups: it hears it back on qnc when NATS picks one of its
 * members (no_echo keeps a connection from its own publishes only, and
 * qnc publishes nothing; nc, which carries the non-shared interest, still
 * hears none of its own, so non-shared subscribers get one copy). A queue
 * message names its member by the subscription's NATS id, looked up on
 * the home loop: a member gone meanwhile gets nothing, as QoS 0 allows.
 * Queue messages skip the Mqtt-Id dedupe: they are not copies of what nc
 * brings, and NATS sends a message once per queue group name however
 * many of the group's subscriptions match it.
 */
#include "cluster/link.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#include "broker/broker_int.h"
#include "broker/msg.h"
#include "broker/router.h"
#include "broker/session.h"
#include "broker/share.h"
#include "cluster/hdr.h"
#include "cluster/interest.h"
#include "cluster/subject.h"
#include "core/clock.h"
#include "core/ev.h"
#include "core/hmap.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/srv.h"
#include "mqtt/mqtt_topic.h"

/* The origin and sequence of a message ("NONCE:SEQ", both hex), and its
 * MQTT QoS when not 0. */
#define CLUSTER_HDR_ID "Mqtt-Id"
#define CLUSTER_HDR_QOS "Mqtt-Qos"
/* On the core copy of a QoS 1/2 message that went to the JetStream stream
 * too (js_msgs.h): only shared subscriptions' queue groups take it; the
 * node's non-shared subscribers get the stream's copy. */
#define CLUSTER_HDR_JS "Mqtt-Js"
/* The longest a SUBSCRIBE waits for its NATS server to confirm the
 * interest (natsConnection_FlushTimeout), on the loop that took it. */
#define CLUSTER_FLUSH_MS 1000
/* Messages the inbox holds at most, while the home loop does not take
 * them (a stop of the world, a long SUBSCRIBE): more are dropped and
 * counted, so a stalled loop costs bounded memory. */
#define CLUSTER_INBOX_MAX 65536
/* How long the link may be down before the node counts as cut off from
 * the cluster and refuses new work (cluster_partitioned): a NATS server's
 * restart or a failover to another, which libnats rides out (it buffers
 * what is published meanwhile and replays the subscriptions), takes less. */
#define CLUSTER_PARTITION_MS 2000
/* libnats's PING every CLUSTER_PING_MS, and a connection whose server
 * answers CLUSTER_PINGS_OUT of them in a row is dropped: a partition
 * without a reset (a cable, a firewall) is noticed in about 3 s rather
 * than libnats's default of 4 minutes. */
#define CLUSTER_PING_MS 1000
#define CLUSTER_PINGS_OUT 2
/* How long the stop waits for libnats to be done with the subscriptions
 * (cluster_stop), and then for its threads to end (nats_CloseAndWait). */
#define CLUSTER_STOP_MS 5000

/* The last sequence taken from one origin (the delivery thread's). */
struct cluster_origin {
    char nonce[CLUSTER_ORIGIN_LEN];
    uint64_t last;
};

/* One message in the inbox: sid is the queue subscription it came on
 * (qnc's), 0 for nc's, CLUSTER_SID_JS for the stream's consumer. */
struct cluster_in {
    natsMsg *msg;
    int64_t sid;
};

/* A local member of a shared subscription: its queue subscriptions, keyed
 * in members by the session's address and the whole $share filter, and in
 * member_sids by each subscription's NATS id. */
struct cluster_member {
    struct session *s;
    uint32_t opts;            /* subtree_opts, as router.h reads them */
    natsSubscription *sub[2];
    int64_t sid[2];
    size_t key_len;
    uint8_t key[];
};

struct cluster {
    subject_map map;
    natsOptions *opts;
    natsConnection *nc;
    natsConnection *qnc; /* shared subscriptions' queue subscriptions */
    char node[128];
    char nonce[CLUSTER_ORIGIN_LEN + 1]; /* this process's origin */
    /* Routing connections (nc, qnc) down now, and since when (monotonic
     * ms; 0 while none is): written by libnats's callbacks, read by every
     * loop. */
    unsigned down;
    uint64_t down_since_ms;
    pthread_mutex_t publish_lock;      /* seq, and the send of its message */
    uint64_t seq;                      /* published so far */

    pthread_mutex_t interest_lock; /* interest, from any loop */
    struct interest interest;

    pthread_mutex_t share_lock; /* the members, from any loop */
    struct hmap members;        /* s + filter -> struct cluster_member */
    struct hmap member_sids;    /* NATS sid -> struct cluster_member */

    /* The inbox: libnats's delivery thread appends, the home loop takes. */
    pthread_mutex_t in_lock;
    struct cluster_in *in;
    uint32_t nin, in_cap;
    struct hmap origins; /* nonce -> struct cluster_origin, under in_lock */
    uint64_t duplicates; /* under in_lock */
    uint64_t overflow;   /* dropped at CLUSTER_INBOX_MAX, under in_lock */
    /* The stop (cluster_stop), under in_lock: once stopping, the callbacks
     * destroy what comes instead of appending it; live_subs counts the
     * subscriptions libnats may still call back for (each one's completion
     * callback, after its last message, takes it off and signals subs_done). */
    bool stopping;
    uint64_t stop_dropped; /* destroyed by the callbacks while stopping */
    unsigned live_subs;
    pthread_cond_t subs_done;
    int efd;

    /* The home loop's. */
    struct broker_loop *home;
    struct ev_io wake;
    struct cluster_in *taken;
    uint32_t taken_cap;
    /* The stream's messages routed, to acknowledge once the log has what
     * they left in it (cluster_ack_committed). */
    natsMsg **acks;
    uint32_t nacks, acks_cap;
    uint64_t received;
    uint64_t bad_headers; /* property headers ignored (hdr.h) */
    uint8_t topic[SUBJECT_MAX]; /* the topic of the message being routed */

    /* Figures (cluster_status_get, docs/cluster.md "Figures"). */
    uint64_t reconnects, disconnects; /* nc's, atomics: libnats's threads count */
    pthread_mutex_t nodes_lock;       /* nodes: libnats's delivery thread writes */
    struct figures_table nodes;
    natsConnection *fnc;                 /* the figures' own, NODE/figures (or NULL) */
    natsSubscription *nodes_sub;         /* PREFIX.n.*, on fnc */
    char figures_subj[SUBJECT_PREFIX_MAX + 4 + FIGURES_KEY_MAX]; /* PREFIX.n.KEY */
    uint64_t figures_ms;                 /* how often this node publishes its own */
    struct ev_timer figures_timer;       /* the home loop's */
};

/* ---- from NATS: libnats's thread, then the home loop ---------------------- */

/* Whether msg repeats one already taken (under in_lock). */
static bool cluster_repeat(struct cluster *c, natsMsg *msg)
{
    const char *id = NULL;
    if (natsMsgHeader_Get(msg, CLUSTER_HDR_ID, &id) != NATS_OK || !id ||
        strlen(id) <= CLUSTER_ORIGIN_LEN || id[CLUSTER_ORIGIN_LEN] != ':')
        return false; /* not one of ours: nothing to compare */
    uint64_t seq = strtoull(id + CLUSTER_ORIGIN_LEN + 1, NULL, 16);
    struct cluster_origin *o = hmap_get(&c->origins, id, CLUSTER_ORIGIN_LEN);
    if (!o) {
        o = mem_calloc(1, sizeof *o);
        memcpy(o->nonce, id, CLUSTER_ORIGIN_LEN);
        hmap_put(&c->origins, o->nonce, CLUSTER_ORIGIN_LEN, o);
    } else if (seq <= o->last) {
        return true;
    }
    o->last = seq;
    return false;
}

/* msg into the inbox; sid as struct cluster_in says. */
static void cluster_push(struct cluster *c, natsMsg *msg, int64_t sid)
{
    pthread_mutex_lock(&c->in_lock);
    if (c->stopping) { /* the home loop takes no more: destroyed here, once */
        c->stop_dropped++;
        pthread_mutex_unlock(&c->in_lock);
        natsMsg_Destroy(msg);
        return;
    }
    /* A core copy of a message in the stream is the queue groups' alone:
     * the node's non-shared subscribers get it from the stream. */
    const char *js = NULL;
    if (!sid && (cluster_repeat(c, msg) ||
                 (natsMsgHeader_Get(msg, CLUSTER_HDR_JS, &js) == NATS_OK && js))) {
        c->duplicates++;
        pthread_mutex_unlock(&c->in_lock);
        natsMsg_Destroy(msg);
        return;
    }
    /* The home loop is stuck: QoS 0 may go; the stream's, not acknowledged,
     * comes again (its consumer's AckWait). */
    if (c->nin >= CLUSTER_INBOX_MAX) {
        c->overflow++;
        pthread_mutex_unlock(&c->in_lock);
        natsMsg_Destroy(msg);
        return;
    }
    if (c->nin == c->in_cap) {
        c->in_cap = c->in_cap ? c->in_cap * 2 : 64;
        c->in = mem_realloc(c->in, c->in_cap * sizeof *c->in);
    }
    bool wake = c->nin == 0;
    c->in[c->nin++] = (struct cluster_in){msg, sid};
    pthread_mutex_unlock(&c->in_lock);
    if (wake) {
        uint64_t one = 1;
        (void)!write(c->efd, &one, sizeof one);
    }
}

static void cluster_on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    cluster_push(closure, msg, 0);
}

static void cluster_on_share_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                                 void *closure)
{
    cluster_push(closure, msg, natsSubscription_GetID(sub));
}

/* libnats's delivery thread, once a closed subscription's last message was
 * dealt with (delivered or, once it was closed, destroyed by libnats). */
static void cluster_on_sub_done(void *closure)
{
    struct cluster *c = closure;
    pthread_mutex_lock(&c->in_lock);
    if (--c->live_subs == 0)
        pthread_cond_broadcast(&c->subs_done);
    pthread_mutex_unlock(&c->in_lock);
}

/* sub, just made, into live_subs: the stop waits for its completion. */
static void cluster_track(struct cluster *c, natsSubscription *sub)
{
    pthread_mutex_lock(&c->in_lock);
    c->live_subs++; /* before the callback can run: it may, once closed */
    pthread_mutex_unlock(&c->in_lock);
    if (natsSubscription_SetOnCompleteCB(sub, cluster_on_sub_done, c) != NATS_OK) {
        pthread_mutex_lock(&c->in_lock); /* closed already: nothing to wait for */
        c->live_subs--;
        pthread_mutex_unlock(&c->in_lock);
    }
}

/* m to the member whose queue subscription sid received it, if it is
 * still subscribed and may read the topic: looked up, asked and held
 * under share_lock, which cluster_share_remove takes before the session's
 * ACL handle may go; delivered after. */
static void cluster_route_member(struct cluster *c, int64_t sid, struct msg *m)
{
    struct broker_loop *l = c->home;
    struct session *s = NULL;
    uint32_t opts = 0;
    pthread_mutex_lock(&c->share_lock);
    struct cluster_member *mb = hmap_get(&c->member_sids, &sid, sizeof sid);
    if (mb) {
        router_read_lock(l->b); /* the ACL handle changes under the write lock */
        if (share_may_read(mb->s, msg_topic(m), m->topic_len)) {
            s = mb->s;
            opts = mb->opts;
            __atomic_fetch_add(&s->refs, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_fetch_add(&l->b->auth.denied_deliver, 1, __ATOMIC_RELAXED);
        }
        router_unlock(l->b);
    }
    pthread_mutex_unlock(&c->share_lock);
    if (s)
        router_deliver_member(l, s, m, opts);
}

/* msg's headers into h (hdr.h skips the names that are not its own). */
static void cluster_read_headers(natsMsg *msg, struct hdr_in *h)
{
    const char **keys = NULL;
    int nkeys = 0;
    if (natsMsgHeader_Keys(msg, &keys, &nkeys) != NATS_OK)
        return; /* no headers at all: a foreign publisher's plain message */
    for (int i = 0; i < nkeys; i++) {
        const char **vals = NULL;
        int nvals = 0;
        /* Ours, read elsewhere, on nearly every message: no array for them. */
        if (strcmp(keys[i], CLUSTER_HDR_ID) == 0 || strcmp(keys[i], CLUSTER_HDR_QOS) == 0 ||
            natsMsgHeader_Values(msg, keys[i], &vals, &nvals) != NATS_OK)
            continue;
        for (int j = 0; j < nvals; j++)
            hdr_in_add(h, keys[i], vals[j]);
        free(vals); /* libnats's array; the strings are the message's */
    }
    free(keys);
}

/* One message from NATS to the local subscribers, never back to NATS. */
static void cluster_route_in(struct cluster *c, natsMsg *msg, int64_t sid)
{
    const char *subj = natsMsg_GetSubject(msg);
    char core[SUBJECT_MAX + 1];
    size_t slen = strlen(subj);
    if (sid == CLUSTER_SID_JS) { /* the stream's subject: the topic's core one first */
        slen = subject_from_stream(&c->map, subj, slen, core, sizeof core);
        if (slen == 0)
            return; /* not one js_msgs.c writes */
        subj = core;
    }
    size_t tlen = subject_to_topic(&c->map, subj, slen, c->topic, sizeof c->topic);
    if (tlen == 0)
        return; /* on our prefix, but no topic's subject */
    const char *q = NULL;
    uint8_t qos = 0;
    if (natsMsgHeader_Get(msg, CLUSTER_HDR_QOS, &q) == NATS_OK && q && (q[0] == '1' || q[0] == '2'))
        qos = (uint8_t)(q[0] - '0');
    struct broker_loop *l = c->home;
    struct hdr_in h;
    hdr_in_init(&h);
    cluster_read_headers(msg, &h);
    const struct mqtt_props *props = hdr_in_end(&h);
    if (h.bad) {
        c->bad_headers += h.bad;
        log_debug("cluster: %u malformed property header(s) ignored on %s", h.bad, subj);
    }
    /* The expiry header is what was left when sent: it counts from now. */
    struct msg *m = msg_new(c->topic, tlen, (const uint8_t *)natsMsg_GetData(msg),
                            (size_t)natsMsg_GetDataLength(msg), qos, h.retain, props, ev_now(l->ev));
    hdr_in_free(&h);
    if (sid > 0)
        cluster_route_member(c, sid, m);
    else
        router_route_cluster(l, m);
    msg_unref(m);
    c->received++;
}

/* The home loop takes the whole inbox. */
static void cluster_on_wake(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct cluster *c = io->data;
    if (router_cluster_hold(c->home, io))
        return; /* the other loops are behind: the inbox waits (router.h) */
    uint64_t v;
    (void)!read(c->efd, &v, sizeof v);
    pthread_mutex_lock(&c->in_lock);
    struct cluster_in *batch = c->in;
    uint32_t n = c->nin, cap = c->in_cap;
    c->in = c->taken;
    c->in_cap = c->taken_cap;
    c->nin = 0;
    pthread_mutex_unlock(&c->in_lock);
    for (uint32_t i = 0; i < n; i++) {
        cluster_route_in(c, batch[i].msg, batch[i].sid);
        if (batch[i].sid != CLUSTER_SID_JS) {
            natsMsg_Destroy(batch[i].msg);
            continue;
        }
        if (c->nacks == c->acks_cap) {
            c->acks_cap = c->acks_cap ? c->acks_cap * 2 : 64;
            c->acks = mem_realloc(c->acks, c->acks_cap * sizeof *c->acks);
        }
        c->acks[c->nacks++] = batch[i].msg;
    }
    c->taken = batch; /* the next batch's buffer */
    c->taken_cap = cap;
}

/* link.h: libnats's threads (started by the connect, and its delivery
 * thread by the first subscription) must leave srv's signals to the home
 * loop (core/srv.c), which blocks them only after the home loop's set-up,
 * where restored sessions subscribe: they inherit the mask they are
 * created with. */
void cluster_block_signals(sigset_t *old)
{
    sigset_t block;
    srv_signal_set(&block);
    pthread_sigmask(SIG_BLOCK, &block, old);
}

/* ---- to NATS: any loop ------------------------------------------------------ */

/* hdr_encode's put: one header onto the natsMsg ctx. */
static bool cluster_put_header(void *ctx, const char *name, const char *value)
{
    return natsMsgHeader_Add(ctx, name, value) == NATS_OK;
}

bool cluster_topic_fits(const struct cluster *c, const uint8_t *topic, size_t len)
{
    /* Escaping writes at most three bytes a topic byte, and the class and
     * the dots at most four more: most topics need no closer look. */
    if (c->map.prefix_len + 4 + 3 * len <= SUBJECT_MAX)
        return true;
    char subj[SUBJECT_MAX + 1];
    return subject_from_topic(&c->map, topic, len, subj, sizeof subj) != 0;
}

bool cluster_filter_fits(const struct cluster *c, const uint8_t *filter, size_t len)
{
    size_t inner = 0;
    bool shared = mqtt_topic_shared(filter, len, &inner) > 0;
    const size_t prefix = sizeof "$share/" - 1;
    char queue[SUBJECT_MAX + 1];
    subject_subs *subs = mem_alloc(sizeof *subs);
    bool fits = subject_subs_from_filter(&c->map, filter + inner, len - inner, subs) == 0 &&
                (!shared || subject_queue_group(filter + prefix, inner - 1 - prefix, queue,
                                                sizeof queue) != 0);
    mem_free(subs);
    return fits;
}

int cluster_msg_make(struct cluster *c, natsMsg **out, const char *subj, const uint8_t *payload,
                     size_t payload_len, uint8_t qos, bool retain,
                     const struct mqtt_props *props)
{
    natsMsg *msg = NULL;
    natsStatus s = natsMsg_Create(&msg, subj, NULL, (const char *)payload, (int)payload_len);
    if (s == NATS_OK && qos)
        s = natsMsgHeader_Set(msg, CLUSTER_HDR_QOS, qos == 1 ? "1" : "2");
    if (s == NATS_OK && !hdr_encode(props, retain, cluster_put_header, msg))
        s = NATS_NO_MEMORY; /* what natsMsgHeader_Add fails with */
    if (s != NATS_OK) {
        natsMsg_Destroy(msg);
        msg = NULL;
    }
    *out = msg;
    return s;
}

bool cluster_publish(struct cluster *c, const uint8_t *topic, size_t topic_len,
                     const uint8_t *payload, size_t payload_len, uint8_t qos, bool retain,
                     const struct mqtt_props *props, bool in_stream)
{
    char subj[SUBJECT_MAX + 1];
    if (subject_from_topic(&c->map, topic, topic_len, subj, sizeof subj) == 0)
        return false;
    char id[CLUSTER_ORIGIN_LEN + 20];
    natsMsg *msg = NULL;
    natsStatus s = cluster_msg_make(c, &msg, subj, payload, payload_len, qos, retain, props);
    if (s == NATS_OK && in_stream)
        s = natsMsgHeader_Set(msg, CLUSTER_HDR_JS, "1");
    /* Sequence numbers must reach NATS in order (the receivers drop what
     * is not above the last they took), and loops publish at once:
     * numbered and sent under one lock, as libnats's own connection lock
     * would serialise the sends anyway. */
    pthread_mutex_lock(&c->publish_lock);
    snprintf(id, sizeof id, "%s:%" PRIx64, c->nonce, ++c->seq);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(msg, CLUSTER_HDR_ID, id);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(c->nc, msg);
    pthread_mutex_unlock(&c->publish_lock);
    if (s != NATS_OK)
        log_debug("cluster: publish on %s: %s", subj, natsStatus_GetText(s));
    natsMsg_Destroy(msg);
    return s == NATS_OK;
}

static void cluster_close_subs(struct interest_entry *e, void *ctx)
{
    for (int i = 0; i < 2; i++) {
        if (e->handle[i] && ctx)
            natsSubscription_Unsubscribe(e->handle[i]);
        natsSubscription_Destroy(e->handle[i]);
    }
    interest_entry_free(e);
}

void cluster_interest_add(struct cluster *c, const uint8_t *filter, size_t len)
{
    subject_subs *subs = mem_alloc(sizeof *subs);
    if (subject_subs_from_filter(&c->map, filter, len, subs) != 0) {
        mem_free(subs); /* too long for a subject: local only */
        return;
    }
    bool first;
    pthread_mutex_lock(&c->interest_lock);
    struct interest_entry *e = interest_add(&c->interest, filter, len, &first);
    if (first) {
        natsStatus s = NATS_OK;
        sigset_t old;
        cluster_block_signals(&old);
        for (int i = 0; i < subs->n && s == NATS_OK; i++) {
            s = natsConnection_Subscribe((natsSubscription **)&e->handle[i], c->nc, subs->subj[i],
                                         cluster_on_msg, c);
            if (s == NATS_OK)
                cluster_track(c, e->handle[i]);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        /* Held meanwhile: a second subscriber of the filter on another
         * loop must not be acknowledged before the first one's flush. */
        if (s == NATS_OK)
            s = natsConnection_FlushTimeout(c->nc, CLUSTER_FLUSH_MS);
        if (s != NATS_OK)
            log_warn("cluster: subscribing %s: %s (the interest reaches NATS when it can)",
                     subs->subj[0], natsStatus_GetText(s));
    }
    pthread_mutex_unlock(&c->interest_lock);
    mem_free(subs);
}

void cluster_interest_remove(struct cluster *c, const uint8_t *filter, size_t len)
{
    pthread_mutex_lock(&c->interest_lock);
    struct interest_entry *e = interest_remove(&c->interest, filter, len);
    if (e)
        cluster_close_subs(e, c);
    pthread_mutex_unlock(&c->interest_lock);
}

/* The members key of s's filter: s's address, then the filter. */
static size_t cluster_member_key(uint8_t *key, const struct session *s, const uint8_t *filter,
                                 size_t len)
{
    memcpy(key, &s, sizeof s);
    memcpy(key + sizeof s, filter, len);
    return sizeof s + len;
}

/* Unsubscribes (if unsub) and frees a member out of both tables. */
static void cluster_member_close(struct cluster *c, struct cluster_member *mb, bool unsub)
{
    hmap_del(&c->members, mb->key, mb->key_len);
    for (int i = 0; i < 2; i++) {
        if (!mb->sub[i])
            continue;
        hmap_del(&c->member_sids, &mb->sid[i], sizeof mb->sid[i]);
        if (unsub)
            natsSubscription_Unsubscribe(mb->sub[i]);
        natsSubscription_Destroy(mb->sub[i]);
    }
    mem_free(mb);
}

void cluster_share_add(struct cluster *c, struct session *s, const uint8_t *filter, size_t len,
                       size_t inner_off, uint32_t opts)
{
    subject_subs *subs = mem_alloc(sizeof *subs);
    /* The group name: <group> of $share/<group>/<filter>, between the
     * prefix and the '/' before inner_off. */
    const size_t prefix = sizeof "$share/" - 1;
    char queue[SUBJECT_MAX + 1];
    if (subject_subs_from_filter(&c->map, filter + inner_off, len - inner_off, subs) != 0 ||
        subject_queue_group(filter + prefix, inner_off - 1 - prefix, queue, sizeof queue) == 0) {
        mem_free(subs); /* too long for a subject: local only */
        return;
    }
    struct cluster_member *mb = mem_calloc(1, sizeof *mb + sizeof s + len);
    mb->key_len = cluster_member_key(mb->key, s, filter, len);
    pthread_mutex_lock(&c->share_lock);
    struct cluster_member *had = hmap_get(&c->members, mb->key, mb->key_len);
    if (had) { /* a repeated SUBSCRIBE: new options, same subscriptions */
        had->opts = opts;
        pthread_mutex_unlock(&c->share_lock);
        mem_free(mb);
        mem_free(subs);
        return;
    }
    mb->s = s;
    mb->opts = opts;
    hmap_put(&c->members, mb->key, mb->key_len, mb);
    natsStatus st = NATS_OK;
    sigset_t old;
    cluster_block_signals(&old);
    for (int i = 0; i < subs->n && st == NATS_OK; i++) {
        st = natsConnection_QueueSubscribe(&mb->sub[i], c->qnc, subs->subj[i], queue,
                                           cluster_on_share_msg, c);
        if (st == NATS_OK) {
            cluster_track(c, mb->sub[i]);
            mb->sid[i] = natsSubscription_GetID(mb->sub[i]);
            hmap_put(&c->member_sids, &mb->sid[i], sizeof mb->sid[i], mb);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_mutex_unlock(&c->share_lock);
    /* Each member has subscriptions of its own: nobody else waits for
     * this flush, so it runs outside the lock. */
    if (st == NATS_OK)
        st = natsConnection_FlushTimeout(c->qnc, CLUSTER_FLUSH_MS);
    if (st != NATS_OK)
        log_warn("cluster: queue subscribing %s in %s: %s (it reaches NATS when it can)",
                 subs->subj[0], queue, natsStatus_GetText(st));
    mem_free(subs);
}

void cluster_share_remove(struct cluster *c, struct session *s, const uint8_t *filter, size_t len)
{
    uint8_t *key = mem_alloc(sizeof s + len);
    size_t key_len = cluster_member_key(key, s, filter, len);
    pthread_mutex_lock(&c->share_lock);
    struct cluster_member *mb = hmap_get(&c->members, key, key_len);
    if (mb)
        cluster_member_close(c, mb, true);
    pthread_mutex_unlock(&c->share_lock);
    mem_free(key);
}

/* ---- figures (docs/cluster.md, "Figures") ------------------------------------ */

/* A reconnection (or a loss) of nc, the link's own connection: qnc and
 * fnc share its options, so their callbacks come here too and are not
 * counted (they follow nc to the same servers). */
static void cluster_count_event(struct cluster *c, natsConnection *nc, bool reconnected)
{
    if (nc == c->nc)
        __atomic_fetch_add(reconnected ? &c->reconnects : &c->disconnects, 1, __ATOMIC_RELAXED);
}

/* This node's figures, each read as its writer guards it. On the home loop
 * (received is its own); interest_lock may make it wait for a SUBSCRIBE's
 * flush on another loop, CLUSTER_FLUSH_MS at most. */
static void cluster_own_figures(struct cluster *c, struct figures *f)
{
    memset(f, 0, sizeof *f);
    f->interval_ms = c->figures_ms;
    pthread_mutex_lock(&c->publish_lock);
    f->published = c->seq;
    pthread_mutex_unlock(&c->publish_lock);
    pthread_mutex_lock(&c->in_lock);
    f->duplicates = c->duplicates;
    f->overflow = c->overflow;
    pthread_mutex_unlock(&c->in_lock);
    f->received = c->received;
    pthread_mutex_lock(&c->interest_lock);
    f->filters = interest_count(&c->interest);
    pthread_mutex_unlock(&c->interest_lock);
    pthread_mutex_lock(&c->share_lock);
    f->queue_subs = hmap_count(&c->member_sids);
    pthread_mutex_unlock(&c->share_lock);
    f->reconnects = __atomic_load_n(&c->reconnects, __ATOMIC_RELAXED);
    f->disconnects = __atomic_load_n(&c->disconnects, __ATOMIC_RELAXED);
    f->connected = natsConnection_Status(c->nc) == NATS_CONN_STATUS_CONNECTED;
}

void cluster_status_get(struct cluster *c, struct cluster_status *st)
{
    memset(st, 0, sizeof *st);
    cluster_own_figures(c, &st->own);
    snprintf(st->node, sizeof st->node, "%s", c->node);
    if (st->own.connected) {
        natsConnection_GetConnectedUrl(c->nc, st->server_url, sizeof st->server_url);
        natsConnection_GetConnectedServerId(c->nc, st->server_id, sizeof st->server_id);
    }
    pthread_mutex_lock(&c->nodes_lock);
    figures_table_sum(&c->nodes, &st->own, clock_now_ms(), &st->all);
    st->malformed = c->nodes.malformed;
    st->refused = c->nodes.refused;
    pthread_mutex_unlock(&c->nodes_lock);
}

/* Another node's figures, on PREFIX.n.KEY (libnats's delivery thread). */
static void cluster_on_figures(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                               void *closure)
{
    struct cluster *c = closure;
    const char *subj = natsMsg_GetSubject(msg);
    size_t skip = c->map.prefix_len + 3; /* "PREFIX.n." */
    size_t len = strlen(subj);
    pthread_mutex_lock(&c->nodes_lock);
    figures_table_put(&c->nodes, len > skip ? subj + skip : subj, len > skip ? len - skip : 0,
                      natsMsg_GetData(msg),
                      (size_t)natsMsg_GetDataLength(msg), clock_now_ms());
    pthread_mutex_unlock(&c->nodes_lock);
    natsMsg_Destroy(msg);
}

/* The figures' subject and period: the $SYS interval, or 5 s without one. */
static void cluster_figures_init(struct cluster *c, const struct broker_config *cfg)
{
    pthread_mutex_init(&c->nodes_lock, NULL);
    figures_table_init(&c->nodes);
    c->figures_ms = cfg->sys_interval_s ? (uint64_t)cfg->sys_interval_s * 1000 : 5000;
    char key[FIGURES_KEY_MAX];
    if (subject_queue_group((const uint8_t *)c->node, strlen(c->node), key, sizeof key) == 0)
        snprintf(key, sizeof key, "%s", c->nonce); /* an empty name */
    snprintf(c->figures_subj, sizeof c->figures_subj, "%s.n.%s", c->map.prefix, key);
}

/* Once connected: a third connection, CLUSTER_NAME/NODE_NAME/figures,
 * for the figures alone, so that nc and qnc hold the node's interest and
 * nothing else (what /connz shows of them is the routing), and no_echo
 * keeps the node's own figures from it. A failure is logged, and leaves
 * this node counting itself alone. */
static void cluster_figures_connect(struct cluster *c, const struct broker_config *cfg)
{
    char name[sizeof cfg->cluster.name + sizeof c->node + 16];
    snprintf(name, sizeof name, "%s/%s/figures", cfg->cluster.name, c->node);
    char all[SUBJECT_PREFIX_MAX + 8];
    snprintf(all, sizeof all, "%s.n.*", c->map.prefix);
    sigset_t old;
    cluster_block_signals(&old);
    natsStatus s = natsOptions_SetName(c->opts, name);
    if (s == NATS_OK)
        s = natsConnection_Connect(&c->fnc, c->opts);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(&c->nodes_sub, c->fnc, all, cluster_on_figures, c);
    if (s == NATS_OK)
        cluster_track(c, c->nodes_sub);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (s != NATS_OK)
        log_warn("cluster: subscribing %s: %s (the other nodes' figures stay unknown)", all,
                 natsStatus_GetText(s));
}

static void cluster_figures_publish(struct cluster *c)
{
    if (!c->fnc)
        return;
    struct figures f;
    char line[FIGURES_LINE_MAX];
    cluster_own_figures(c, &f);
    size_t n = figures_encode(&f, line, sizeof line);
    natsStatus s = natsConnection_Publish(c->fnc, c->figures_subj, line, (int)n);
    if (s != NATS_OK)
        log_debug("cluster: publish on %s: %s", c->figures_subj, natsStatus_GetText(s));
}

static void cluster_on_figures_timer(struct ev_loop *loop, struct ev_timer *t)
{
    cluster_figures_publish(t->data);
}

/* On the home loop: this node's figures now, then every figures_ms. */
static void cluster_figures_attach(struct cluster *c)
{
    cluster_figures_publish(c);
    ev_timer_init(&c->figures_timer, cluster_on_figures_timer, c);
    ev_timer_start(c->home->ev, &c->figures_timer, c->figures_ms, c->figures_ms);
}

/* After the connection closed. */
static void cluster_figures_free(struct cluster *c)
{
    figures_table_free(&c->nodes);
    pthread_mutex_destroy(&c->nodes_lock);
}

/* A node name kept in the data directory dir, read, or made (hostname and
 * a random suffix) and written once, atomically (a temporary file renamed):
 * the node keeps its name across restarts. False, with the reason logged,
 * if neither works. */
static bool cluster_node_name_stored(struct cluster *c, const char *dir, const char *host)
{
    char path[1100], tmp[1120], name[sizeof c->node] = "";
    snprintf(path, sizeof path, "%s/node-name", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        bool got = fgets(name, sizeof name, f) != NULL;
        fclose(f);
        name[strcspn(name, "\n")] = '\0';
        bool word = got && name[0];
        for (const char *p = name; *p && word; p++)
            word = *p > ' ' && *p < 0x7f;
        if (!word) {
            log_warn("cluster: %s holds no node name (one word): ignored", path);
            return false;
        }
        snprintf(c->node, sizeof c->node, "%s", name);
        return true;
    }
    if (errno != ENOENT) {
        log_warn("cluster: cannot read %s: %s", path, strerror(errno));
        return false;
    }
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, 0) != sizeof r)
        r = (uint32_t)strtoul(c->nonce + 8, NULL, 16);
    snprintf(name, sizeof name, "%s-%08" PRIx32, host, r);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) /* as the persistence log makes it */
        goto fail;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto fail;
    size_t n = strlen(name);
    name[n] = '\n';
    bool ok = write(fd, name, n + 1) == (ssize_t)(n + 1) && fsync(fd) == 0;
    name[n] = '\0';
    if (close(fd) < 0 || !ok || rename(tmp, path) < 0) {
        unlink(tmp);
        goto fail;
    }
    snprintf(c->node, sizeof c->node, "%s", name);
    log_info("cluster: node name %s, kept in %s", name, path);
    return true;
fail:
    log_warn("cluster: cannot keep a node name in %s: %s", path, strerror(errno));
    return false;
}

/* ---- the connection ---------------------------------------------------------- */

/* Whether nc carries the routing (the interest's or the shared
 * subscriptions' connection): only their loss cuts the node off; the
 * figures' and the buckets' connections follow the same server. */
static bool cluster_routing(const struct cluster *c, const natsConnection *nc)
{
    return nc == c->nc || nc == c->qnc;
}

static void cluster_on_disconnected(natsConnection *nc, void *closure)
{
    struct cluster *c = closure;
    if (natsConnection_IsClosed(nc))
        return; /* cluster_stop */
    cluster_count_event(closure, nc, false);
    if (!cluster_routing(c, nc))
        return;
    if (__atomic_fetch_add(&c->down, 1, __ATOMIC_ACQ_REL) == 0)
        __atomic_store_n(&c->down_since_ms, clock_now_ms(), __ATOMIC_RELEASE);
    log_warn("cluster: lost the NATS connection; reconnecting (messages from and to other nodes "
             "are lost meanwhile; after %d ms the node refuses new clients, subscriptions and "
             "QoS 1 and 2 messages until it is back)", CLUSTER_PARTITION_MS);
}

static void cluster_on_reconnected(natsConnection *nc, void *closure)
{
    struct cluster *c = closure;
    cluster_count_event(closure, nc, true);
    if (!cluster_routing(c, nc))
        return;
    if (__atomic_sub_fetch(&c->down, 1, __ATOMIC_ACQ_REL) == 0)
        __atomic_store_n(&c->down_since_ms, 0, __ATOMIC_RELEASE);
    char url[256] = "";
    natsConnection_GetConnectedUrl(nc, url, sizeof url);
    log_info("cluster: reconnected to %s", url);
}

uint64_t cluster_partitioned(const struct cluster *c, uint64_t now_ms)
{
    if (!__atomic_load_n(&c->down, __ATOMIC_ACQUIRE))
        return 0;
    uint64_t since = __atomic_load_n(&c->down_since_ms, __ATOMIC_ACQUIRE);
    /* 0: the callback has not stored its time yet; a wait of 0 is none. */
    return since && now_ms >= since + CLUSTER_PARTITION_MS ? now_ms - since : 0;
}

static void cluster_on_error(natsConnection *nc, natsSubscription *sub, natsStatus err,
                             void *closure)
{
    log_warn("cluster: %s", natsStatus_GetText(err));
}

/* The node's name: the configured one, else hostname:port, or with port 0
 * (a port the kernel picks, not known yet) hostname-NONCE. */
static void cluster_node_name(struct cluster *c, const struct broker_config *cfg, int port)
{
    char host[64] = "localhost";
    gethostname(host, sizeof host - 1);
    if (cfg->cluster.node[0])
        snprintf(c->node, sizeof c->node, "%s", cfg->cluster.node);
    else if (cfg->persistence.on && cluster_node_name_stored(c, cfg->persistence.location, host))
        ; /* the data directory's */
    else if (port)
        snprintf(c->node, sizeof c->node, "%s:%d", host, port);
    else
        snprintf(c->node, sizeof c->node, "%s-%s", host, c->nonce);
}

/* opts from the configuration; a libnats status. */
static natsStatus cluster_options(struct cluster *c, const struct broker_config *cfg)
{
    char urls[sizeof cfg->cluster.urls];
    snprintf(urls, sizeof urls, "%s", cfg->cluster.urls);
    const char *list[64];
    int n = 0;
    for (char *save, *u = strtok_r(urls, ",", &save); u && n < 64; u = strtok_r(NULL, ",", &save))
        list[n++] = u;
    char name[sizeof cfg->cluster.name + sizeof c->node + 1];
    snprintf(name, sizeof name, "%s/%s", cfg->cluster.name, c->node);
    natsStatus s = natsOptions_Create(&c->opts);
    if (s == NATS_OK)
        s = natsOptions_SetServers(c->opts, list, n);
    if (s == NATS_OK)
        s = natsOptions_SetName(c->opts, name);
    if (s == NATS_OK) /* a node never hears its own messages: delivered locally already */
        s = natsOptions_SetNoEcho(c->opts, true);
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(c->opts, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(c->opts, 250);
    if (s == NATS_OK)
        s = natsOptions_SetPingInterval(c->opts, CLUSTER_PING_MS);
    if (s == NATS_OK)
        s = natsOptions_SetMaxPingsOut(c->opts, CLUSTER_PINGS_OUT);
    if (s == NATS_OK) /* one delivery thread for every subscription: see the top */
        s = natsOptions_UseGlobalMessageDelivery(c->opts, true);
    if (s == NATS_OK)
        s = natsOptions_SetDisconnectedCB(c->opts, cluster_on_disconnected, c);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectedCB(c->opts, cluster_on_reconnected, c);
    if (s == NATS_OK)
        s = natsOptions_SetErrorHandler(c->opts, cluster_on_error, c);
    return s;
}

/* report: log the link's figures (its connection was up). No callback
 * runs any more (cluster_stop, or a start that failed before any could):
 * what the inbox holds is destroyed while libnats is alive, as its
 * natsMsg_Destroy needs, and libnats is closed last. */
static void cluster_free(struct cluster *c, bool report)
{
    uint32_t filters = interest_count(&c->interest);
    uint32_t left = c->nin;
    for (uint32_t i = 0; i < c->nin; i++)
        natsMsg_Destroy(c->in[i].msg);
    c->nin = 0;
    for (uint32_t i = 0; i < c->nacks; i++) /* not acknowledged: they come again */
        natsMsg_Destroy(c->acks[i]);
    mem_free(c->acks);
    interest_clear(&c->interest, cluster_close_subs, NULL);
    size_t mi = 0;
    struct hmap_slot *ms;
    while ((ms = hmap_next(&c->members, &mi))) /* sessions the stop kept */
        cluster_member_close(c, ms->val, false);
    hmap_free(&c->members);
    hmap_free(&c->member_sids);
    natsSubscription_Destroy(c->nodes_sub);
    natsConnection_Destroy(c->fnc);
    natsConnection_Destroy(c->qnc);
    natsConnection_Destroy(c->nc);
    natsOptions_Destroy(c->opts);
    natsStatus closed = nats_CloseAndWait(CLUSTER_STOP_MS);
    if (closed != NATS_OK)
        log_warn("cluster: closing libnats: %s", natsStatus_GetText(closed));
    if (report)
        log_info("cluster: %" PRIu64 " messages published to the cluster, %" PRIu64
                 " received from them, %" PRIu64 " duplicates dropped, %" PRIu64
                 " dropped with the inbox full; %u filters subscribed",
                 c->seq, c->received, c->duplicates, c->overflow, filters);
    if (report && c->bad_headers)
        log_info("cluster: %" PRIu64 " malformed property headers from the cluster ignored",
                 c->bad_headers);
    if (report && (left || c->stop_dropped))
        log_info("cluster: %" PRIu32 " messages left in the inbox at the stop, %" PRIu64
                 " more dropped as they came, not delivered", left, c->stop_dropped);
    size_t i = 0;
    struct hmap_slot *s;
    while ((s = hmap_next(&c->origins, &i)))
        mem_free(s->val);
    hmap_free(&c->origins);
    mem_free(c->in);
    mem_free(c->taken);
    if (c->efd >= 0)
        close(c->efd);
    pthread_mutex_destroy(&c->in_lock);
    pthread_mutex_destroy(&c->publish_lock);
    pthread_mutex_destroy(&c->interest_lock);
    pthread_mutex_destroy(&c->share_lock);
    pthread_cond_destroy(&c->subs_done);
    cluster_figures_free(c);
    mem_free(c);
}

struct cluster *cluster_start(const struct broker_config *cfg, int port)
{
    struct cluster *c = mem_calloc(1, sizeof *c);
    pthread_mutex_init(&c->in_lock, NULL);
    pthread_mutex_init(&c->publish_lock, NULL);
    pthread_mutex_init(&c->interest_lock, NULL);
    pthread_mutex_init(&c->share_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->subs_done, &ca);
    pthread_condattr_destroy(&ca);
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof nonce, 0) != sizeof nonce)
        nonce ^= (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)c;
    snprintf(c->nonce, sizeof c->nonce, "%016" PRIx64, nonce);
    cluster_node_name(c, cfg, port);
    subject_map_init(&c->map, cfg->cluster.prefix); /* checked by broker_conf.c */
    cluster_figures_init(c, cfg);
    if (c->efd < 0) {
        log_error("cluster: cannot create an eventfd: %s", strerror(errno));
        cluster_free(c, false);
        return NULL;
    }
    sigset_t old;
    cluster_block_signals(&old);
    natsStatus s = cluster_options(c, cfg);
    if (s == NATS_OK)
        s = natsConnection_Connect(&c->nc, c->opts);
    /* The queue subscriptions' connection: no_echo keeps a connection
     * from its own publishes only, so it hears what nc sends (libnats
     * copies the options at each connect; only the name changes). */
    char qname[sizeof cfg->cluster.name + sizeof c->node + 8];
    snprintf(qname, sizeof qname, "%s/%s/share", cfg->cluster.name, c->node);
    if (s == NATS_OK)
        s = natsOptions_SetName(c->opts, qname);
    if (s == NATS_OK)
        s = natsConnection_Connect(&c->qnc, c->opts);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (s != NATS_OK) {
        log_error("cluster: cannot connect to %s: %s", cfg->cluster.urls, natsStatus_GetText(s));
        cluster_free(c, false);
        return NULL;
    }
    cluster_figures_connect(c, cfg);
    char url[256] = "";
    natsConnection_GetConnectedUrl(c->nc, url, sizeof url);
    log_info("cluster: node %s (origin %s) connected to %s, subjects %s.*", c->node, c->nonce, url,
             cfg->cluster.prefix);
    return c;
}

int cluster_connect_more(struct cluster *c, const struct broker_config *cfg, const char *role,
                         bool asap, natsConnection **nc)
{
    char name[sizeof cfg->cluster.name + sizeof c->node + 32];
    snprintf(name, sizeof name, "%s/%s/%s", cfg->cluster.name, c->node, role);
    sigset_t old;
    cluster_block_signals(&old);
    natsStatus s = natsOptions_SetName(c->opts, name);
    if (s == NATS_OK)
        s = natsOptions_SetSendAsap(c->opts, asap);
    if (s == NATS_OK)
        s = natsConnection_Connect(nc, c->opts);
    if (asap) /* the options' default again, for the next connection */
        natsOptions_SetSendAsap(c->opts, false);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return s;
}

void cluster_ack_committed(struct cluster *c)
{
    for (uint32_t i = 0; i < c->nacks; i++) {
        natsMsg_Ack(c->acks[i], NULL);
        natsMsg_Destroy(c->acks[i]);
    }
    c->nacks = 0;
}

void cluster_push_js(struct cluster *c, natsMsg *msg)
{
    cluster_push(c, msg, CLUSTER_SID_JS);
}

const char *cluster_node(const struct cluster *c) { return c->node; }

const char *cluster_origin(const struct cluster *c) { return c->nonce; }

const subject_map *cluster_subjects(const struct cluster *c) { return &c->map; }

int cluster_attach(struct cluster *c, struct broker_loop *home)
{
    c->home = home;
    c->wake.fd = c->efd;
    c->wake.cb = cluster_on_wake;
    c->wake.data = c;
    cluster_figures_attach(c);
    return ev_io_start(home->ev, &c->wake, EV_READ);
}

/* libnats 3.4 keeps calling a subscription back after its connection's
 * close returned (a message being delivered, others queued for the
 * delivery thread, which destroys those itself once it sees the close),
 * and natsMsg_Destroy needs the library alive: so the callbacks stop
 * appending first, the connections close, and the stop waits for every
 * subscription's completion callback before cluster_free destroys the
 * inbox and then libnats. */
void cluster_stop(struct cluster *c)
{
    pthread_mutex_lock(&c->in_lock);
    c->stopping = true;
    pthread_mutex_unlock(&c->in_lock);
    natsConnection_Close(c->qnc);
    natsConnection_Close(c->nc);
    natsConnection_Close(c->fnc);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += CLUSTER_STOP_MS / 1000;
    pthread_mutex_lock(&c->in_lock);
    int err = 0;
    while (c->live_subs && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&c->subs_done, &c->in_lock, &until);
    unsigned live = c->live_subs;
    pthread_mutex_unlock(&c->in_lock);
    if (live)
        log_warn("cluster: %u NATS subscriptions still delivering after %d ms: stopping anyway",
                 live, CLUSTER_STOP_MS);
    cluster_free(c, true);
}
