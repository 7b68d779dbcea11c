/* kv_sess.c - session ownership by compare-and-set in a JetStream KV
 * bucket (kv_sess.h).
 *
 * Threads: the loops call kv_sess_claim and kv_sess_claim_done; the
 * workers make the claims' requests (libnats's KV calls block); the watch
 * runs in libnats's delivery thread. All three meet under k->lock (the
 * queue, the claims under way) and each loop's mailbox lock. The watch is
 * a plain ordered consumer of the bucket's stream from its new messages
 * on, rather than kvStore_WatchAll, which would first read every key of
 * the bucket at each start.
 *
 * The epoch, not the revision, decides who lost: a node compares the
 * epoch it claimed a session with to the one another node wrote, so the
 * compare-and-set is what keeps two nodes from both owning one epoch (with
 * a blind put, two CONNECTs at once would both write e + 1 and neither
 * node would close its client).
 */
#include "cluster/kv_sess.h"

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

#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/handle.h"
#include "broker/session.h"
#include "cluster/kvbucket.h"
#include "cluster/link.h"
#include "cluster/subject.h"
#include "core/ev.h"
#include "core/hmap.h"
#include "core/log.h"
#include "core/mem.h"

/* How long the stop waits for the watch's last callback. */
#define KV_SESS_STOP_MS 5000

enum kv_note_kind {
    KV_NOTE_CLAIMED, /* a struct kv_claim, answered */
    KV_NOTE_TAKEN,   /* a struct kv_taken */
};

/* What a loop's mailbox holds, in order. */
struct kv_note {
    uint8_t kind;
    struct kv_note *next;
};

/* Claims of one key under way on this node, and the greatest epoch
 * another process wrote for it meanwhile (under k->lock). */
struct kv_pending {
    uint32_t refs;
    uint64_t seen;
    size_t key_len;
    char key[];
};

struct kv_claim {
    struct kv_note note; /* first: a mailbox holds it as a note */
    struct conn *c;
    unsigned loop;
    uint64_t epoch; /* the worker's, read by the loop after the mailbox's lock */
    struct kv_pending *pending;
    char key[]; /* NUL-terminated */
};

/* Another process's epoch for a session of this node's loop. */
struct kv_taken {
    struct kv_note note;
    uint64_t epoch;
    char node[128];
    size_t id_len;
    uint8_t id[];
};

struct kv_box {
    struct kv_sess *k;
    struct broker_loop *l;
    pthread_mutex_t lock;
    struct kv_note *head, *tail;
    int efd;
    struct ev_io io;
};

struct kv_sess {
    struct kvbucket kb; /* MQTT_SESS, on CLUSTER_NAME/NODE_NAME/sess */
    struct broker *b;
    char origin[CLUSTER_ORIGIN_LEN + 1];
    char node[128];
    char subject[SUBJECT_PREFIX_MAX + 24]; /* $KV.NAME. */
    size_t subject_len;

    pthread_mutex_t lock;
    pthread_cond_t cond;         /* work queued, or the stop; the watch's end */
    struct kv_claim **queue;     /* ring of claims for the workers */
    uint32_t qhead, qlen, qcap;
    struct hmap pending;         /* key -> struct kv_pending */
    bool stopping;
    bool watch_done;
    pthread_mutex_t watch_lock; /* watch, set at the start or by a worker */
    pthread_t workers[KV_SESS_WORKERS];
    unsigned nworkers;
    natsSubscription *watch;

    unsigned nboxes;
    struct kv_box *boxes; /* [b->nloops] */
};

/* ---- the record ------------------------------------------------------------ */

size_t kv_sess_encode(char *out, uint64_t epoch, const char *origin, const char *node)
{
    int n = snprintf(out, KV_SESS_VALUE_MAX, "%d %" PRIu64 " %s %s", KV_SESS_VERSION, epoch,
                     origin, node);
    return n > 0 && n < KV_SESS_VALUE_MAX ? (size_t)n : 0;
}

int kv_sess_decode(const char *v, size_t len, struct kv_sess_rec *r)
{
    char buf[KV_SESS_VALUE_MAX];
    if (len < 4 || len >= sizeof buf || memcmp(v, "1 ", 2) != 0)
        return -1;
    memcpy(buf, v, len);
    buf[len] = '\0';
    if (strlen(buf) != len)
        return -1; /* a NUL inside */
    char *p = buf + 2, *end;
    if (*p < '1' || *p > '9')
        return -1; /* epochs start at 1, written without leading zeros */
    errno = 0;
    unsigned long long e = strtoull(p, &end, 10);
    if (errno || *end != ' ')
        return -1;
    p = end + 1;
    size_t olen = strspn(p, "0123456789abcdef");
    if (olen != CLUSTER_ORIGIN_LEN || p[olen] != ' ')
        return -1;
    memcpy(r->origin, p, olen);
    r->origin[olen] = '\0';
    p += olen + 1;
    size_t nlen = strlen(p);
    if (nlen == 0 || nlen >= sizeof r->node || strpbrk(p, " \r\n\t"))
        return -1;
    memcpy(r->node, p, nlen + 1);
    r->epoch = e;
    return 0;
}

/* ---- the mailboxes: any thread, then the loop -------------------------------- */

static void kv_box_post(struct kv_sess *k, unsigned loop, struct kv_note *n)
{
    struct kv_box *x = &k->boxes[loop];
    n->next = NULL;
    pthread_mutex_lock(&x->lock);
    bool was_empty = !x->head;
    if (x->tail)
        x->tail->next = n;
    else
        x->head = n;
    x->tail = n;
    pthread_mutex_unlock(&x->lock);
    uint64_t one = 1;
    if (was_empty)
        (void)!write(x->efd, &one, sizeof one);
}

static void kv_box_on_wake(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct kv_box *x = io->data;
    uint64_t v;
    (void)!read(x->efd, &v, sizeof v);
    pthread_mutex_lock(&x->lock);
    struct kv_note *n = x->head;
    x->head = x->tail = NULL;
    pthread_mutex_unlock(&x->lock);
    while (n) {
        struct kv_note *next = n->next;
        if (n->kind == KV_NOTE_CLAIMED) {
            connect_claimed(x->l, ((struct kv_claim *)n)->c);
        } else {
            struct kv_taken *t = (struct kv_taken *)n;
            connect_taken(x->l, t->id, t->id_len, t->epoch, t->node);
            mem_free(t);
        }
        n = next;
    }
}

int kv_sess_attach(struct kv_sess *k, struct broker_loop *l)
{
    struct kv_box *x = &k->boxes[l->index];
    x->l = l;
    x->io.fd = x->efd;
    x->io.cb = kv_box_on_wake;
    x->io.data = x;
    return ev_io_start(l->ev, &x->io, EV_READ);
}

static natsStatus kv_sess_watch(struct kv_sess *k);

/* ---- claims: the loops, then a worker ---------------------------------------- */

bool kv_sess_claim(struct kv_sess *k, struct broker_loop *l, struct conn *c, const uint8_t *id,
                   size_t len)
{
    char key[SUBJECT_MAX + 1];
    size_t n = subject_queue_group(id, len, key, sizeof key);
    if (n == 0)
        return false;
    struct kv_claim *cl = mem_calloc(1, sizeof *cl + n + 1);
    cl->note.kind = KV_NOTE_CLAIMED;
    cl->c = c;
    cl->loop = l->index;
    memcpy(cl->key, key, n + 1);
    struct conn_cold *cc = conn_cold(c);
    cc->claim = cl;
    cc->claiming = true;
    pthread_mutex_lock(&k->lock);
    struct kv_pending *p = hmap_get(&k->pending, key, n);
    if (!p) {
        p = mem_calloc(1, sizeof *p + n);
        p->key_len = n;
        memcpy(p->key, key, n);
        hmap_put(&k->pending, p->key, n, p);
    }
    p->refs++;
    cl->pending = p;
    if (k->qlen == k->qcap) { /* grown, the ring unrolled */
        uint32_t cap = k->qcap ? k->qcap * 2 : 64;
        struct kv_claim **q = mem_alloc(cap * sizeof *q);
        for (uint32_t i = 0; i < k->qlen; i++)
            q[i] = k->queue[(k->qhead + i) % k->qcap];
        mem_free(k->queue);
        k->queue = q;
        k->qcap = cap;
        k->qhead = 0;
    }
    k->queue[(k->qhead + k->qlen++) % k->qcap] = cl;
    pthread_cond_signal(&k->cond);
    pthread_mutex_unlock(&k->lock);
    return true;
}

uint64_t kv_sess_claim_epoch(const struct kv_claim *cl) { return cl->epoch; }

/* Drops cl's hold on its pending entry; the greatest foreign epoch seen
 * (under k->lock). */
static uint64_t kv_pending_drop(struct kv_sess *k, struct kv_claim *cl)
{
    struct kv_pending *p = cl->pending;
    uint64_t seen = p->seen;
    if (--p->refs == 0) {
        hmap_del(&k->pending, p->key, p->key_len);
        mem_free(p);
    }
    return seen;
}

bool kv_sess_claim_done(struct kv_sess *k, struct kv_claim *cl)
{
    if (!cl)
        return false;
    bool lost = false;
    if (k) {
        pthread_mutex_lock(&k->lock);
        lost = kv_pending_drop(k, cl) > cl->epoch;
        pthread_mutex_unlock(&k->lock);
    }
    mem_free(cl);
    return lost;
}

/* Makes this node the key's owner at the next epoch; that epoch, or 0. */
static uint64_t kv_sess_settle(struct kv_sess *k, const char *key)
{
    kvStore *st = kvbucket_store(&k->kb);
    if (!st)
        return 0; /* logged */
    /* A bucket bound after the start is watched from its first claim on:
     * a claim without the watch would never learn that it was lost. */
    pthread_mutex_lock(&k->watch_lock);
    natsStatus ws = k->watch ? NATS_OK : kv_sess_watch(k);
    pthread_mutex_unlock(&k->watch_lock);
    if (ws != NATS_OK) {
        log_warn("cluster: watching %s: %s", k->kb.name, natsStatus_GetText(ws));
        return 0;
    }
    for (int i = 0; i < KV_SESS_TRIES; i++) {
        kvEntry *e = NULL;
        natsStatus s = kvStore_Get(&e, st, key);
        uint64_t rev = 0, epoch = 0;
        struct kv_sess_rec r;
        if (s == NATS_OK) {
            rev = kvEntry_Revision(e);
            if (kv_sess_decode(kvEntry_ValueString(e), (size_t)kvEntry_ValueLen(e), &r) != 0) {
                log_warn("cluster: session %s in %s has a record we did not write: refused",
                         key, k->kb.name);
                kvEntry_Destroy(e);
                return 0;
            }
            epoch = r.epoch;
        }
        kvEntry_Destroy(e);
        if (s != NATS_OK && s != NATS_NOT_FOUND) { /* a deleted key reads as not found */
            log_warn("cluster: reading session %s from %s: %s", key, k->kb.name,
                     natsStatus_GetText(s));
            return 0;
        }
        char val[KV_SESS_VALUE_MAX];
        size_t n = kv_sess_encode(val, epoch + 1, k->origin, k->node);
        uint64_t got = 0;
        s = rev ? kvStore_Update(&got, st, key, val, (int)n, rev)
                : kvStore_Create(&got, st, key, val, (int)n);
        if (s == NATS_OK)
            return epoch + 1;
        /* NATS_ERR: another write came first (wrong last sequence, or the
         * key exists); anything else is JetStream failing. */
        if (s != NATS_ERR) {
            log_warn("cluster: writing session %s to %s: %s", key, k->kb.name,
                     natsStatus_GetText(s));
            return 0;
        }
        log_debug("cluster: session %s: epoch %" PRIu64 " taken by another write; reading again",
                  key, epoch + 1);
    }
    log_warn("cluster: session %s: %d writes lost to others in a row", key, KV_SESS_TRIES);
    return 0;
}

static void *kv_sess_worker(void *arg)
{
    struct kv_sess *k = arg;
    pthread_mutex_lock(&k->lock);
    for (;;) {
        while (!k->qlen && !k->stopping)
            pthread_cond_wait(&k->cond, &k->lock);
        if (k->stopping)
            break;
        struct kv_claim *cl = k->queue[k->qhead];
        k->qhead = (k->qhead + 1) % k->qcap;
        k->qlen--;
        pthread_mutex_unlock(&k->lock);
        cl->epoch = kv_sess_settle(k, cl->key);
        kv_box_post(k, cl->loop, &cl->note);
        pthread_mutex_lock(&k->lock);
    }
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

/* ---- the watch: libnats's delivery thread ---------------------------------- */

static void kv_sess_on_update(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                              void *closure)
{
    struct kv_sess *k = closure;
    const char *subj = natsMsg_GetSubject(msg), *op = NULL;
    size_t slen = strlen(subj);
    struct kv_sess_rec r;
    if (slen <= k->subject_len || memcmp(subj, k->subject, k->subject_len) != 0 ||
        natsMsgHeader_Get(msg, "KV-Operation", &op) == NATS_OK || /* a delete or a purge */
        kv_sess_decode(natsMsg_GetData(msg), (size_t)natsMsg_GetDataLength(msg), &r) != 0 ||
        strcmp(r.origin, k->origin) == 0) {
        natsMsg_Destroy(msg);
        return;
    }
    const char *key = subj + k->subject_len;
    size_t klen = slen - k->subject_len;
    pthread_mutex_lock(&k->lock);
    struct kv_pending *p = hmap_get(&k->pending, key, klen);
    if (p && r.epoch > p->seen)
        p->seen = r.epoch;
    bool stopping = k->stopping;
    pthread_mutex_unlock(&k->lock);
    uint8_t id[SUBJECT_MAX];
    size_t idlen = stopping ? 0 : subject_token_decode(key, klen, id, sizeof id);
    int loop = -1;
    if (idlen) {
        struct broker *b = k->b;
        pthread_mutex_lock(&b->sessions_lock);
        struct session *s = hmap_get(&b->sessions, id, idlen);
        loop = s ? (int)s->loop->index : -1;
        pthread_mutex_unlock(&b->sessions_lock);
    }
    if (loop >= 0) {
        struct kv_taken *t = mem_calloc(1, sizeof *t + idlen);
        t->note.kind = KV_NOTE_TAKEN;
        t->epoch = r.epoch;
        snprintf(t->node, sizeof t->node, "%s", r.node);
        t->id_len = idlen;
        memcpy(t->id, id, idlen);
        kv_box_post(k, (unsigned)loop, &t->note);
    }
    natsMsg_Destroy(msg);
}

static void kv_sess_on_watch_done(void *closure)
{
    struct kv_sess *k = closure;
    pthread_mutex_lock(&k->lock);
    k->watch_done = true;
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
}

static natsStatus kv_sess_watch(struct kv_sess *k)
{
    char stream[sizeof k->kb.name + 4], all[sizeof k->subject + 2];
    snprintf(stream, sizeof stream, "KV_%s", k->kb.name);
    snprintf(all, sizeof all, "%s>", k->subject);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverNew;
    jsErrCode jerr = 0;
    sigset_t old;
    cluster_block_signals(&old);
    natsStatus s = js_Subscribe(&k->watch, k->kb.js, all, kv_sess_on_update, k, NULL, &so, &jerr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (s == NATS_OK && natsSubscription_SetOnCompleteCB(k->watch, kv_sess_on_watch_done, k) !=
                            NATS_OK) {
        pthread_mutex_lock(&k->lock);
        k->watch_done = true; /* closed already */
        pthread_mutex_unlock(&k->lock);
    }
    return s;
}

/* ---- start and stop ------------------------------------------------------------ */

struct kv_sess *kv_sess_start(struct cluster *c, const struct broker_config *cfg,
                              struct broker *b, uint64_t until_ms)
{
    struct kv_sess *k = mem_calloc(1, sizeof *k);
    enum kvbucket_open o = kvbucket_open(
        &k->kb, c, cfg, "MQTT_SESS", "sess",
        "shootout broker: which node owns each MQTT session (docs/cluster.md)", KV_SESS_WAIT_MS,
        until_ms);
    if (o == KVBUCKET_NONE) {
        log_warn("cluster: sessions stay each node's (a client connected to two nodes keeps "
                 "both connections)");
        mem_free(k);
        return NULL;
    }
    k->b = b;
    snprintf(k->origin, sizeof k->origin, "%s", cluster_origin(c));
    snprintf(k->node, sizeof k->node, "%s", cluster_node(c));
    for (char *p = k->node; *p; p++)
        if (*p <= ' ' || *p >= 0x7f) /* the record is one line of words */
            *p = '_';
    k->subject_len = (size_t)snprintf(k->subject, sizeof k->subject, "$KV.%s.", k->kb.name);
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->cond, NULL);
    pthread_mutex_init(&k->watch_lock, NULL);
    hmap_init(&k->pending);
    k->nboxes = b->nloops;
    k->boxes = mem_calloc(k->nboxes, sizeof *k->boxes);
    for (unsigned i = 0; i < k->nboxes; i++) {
        k->boxes[i].k = k;
        pthread_mutex_init(&k->boxes[i].lock, NULL);
        k->boxes[i].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (k->boxes[i].efd < 0) {
            log_error("cluster: cannot create an eventfd: %s", strerror(errno));
            kv_sess_stop(k);
            return NULL;
        }
    }
    /* A bucket not bound yet is watched once a claim binds it. */
    natsStatus s = o == KVBUCKET_BOUND ? kv_sess_watch(k) : NATS_OK;
    if (s != NATS_OK) {
        log_warn("cluster: watching %s: %s; sessions stay each node's", k->kb.name,
                 natsStatus_GetText(s));
        kv_sess_stop(k);
        return NULL;
    }
    sigset_t old;
    cluster_block_signals(&old);
    for (; k->nworkers < KV_SESS_WORKERS; k->nworkers++)
        if (pthread_create(&k->workers[k->nworkers], NULL, kv_sess_worker, k) != 0)
            break;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!k->nworkers) {
        log_error("cluster: cannot start a thread for %s", k->kb.name);
        kv_sess_stop(k);
        return NULL;
    }
    log_info("cluster: session owners in KV bucket %s", k->kb.name);
    return k;
}

/* A claim that will not be answered: its connection stops waiting. */
static void kv_sess_drop(struct kv_sess *k, struct kv_claim *cl)
{
    struct conn_cold *cc = cl->c->cold;
    cc->claim = NULL;
    cc->claiming = false;
    kv_pending_drop(k, cl);
    mem_free(cl);
}

void kv_sess_stop(struct kv_sess *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    k->stopping = true;
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
    for (unsigned i = 0; i < k->nworkers; i++)
        pthread_join(k->workers[i], NULL);
    if (k->watch) {
        natsSubscription_Unsubscribe(k->watch);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += KV_SESS_STOP_MS / 1000;
        pthread_mutex_lock(&k->lock);
        int err = 0;
        while (!k->watch_done && err != ETIMEDOUT)
            err = pthread_cond_timedwait(&k->cond, &k->lock, &until);
        pthread_mutex_unlock(&k->lock);
        natsSubscription_Destroy(k->watch);
    }
    for (; k->qlen; k->qlen--, k->qhead = (k->qhead + 1) % k->qcap)
        kv_sess_drop(k, k->queue[k->qhead]);
    for (unsigned i = 0; i < k->nboxes; i++) {
        struct kv_box *x = &k->boxes[i];
        for (struct kv_note *n = x->head, *next; n; n = next) {
            next = n->next;
            if (n->kind == KV_NOTE_CLAIMED)
                kv_sess_drop(k, (struct kv_claim *)n);
            else
                mem_free(n);
        }
        if (x->efd >= 0)
            close(x->efd);
        pthread_mutex_destroy(&x->lock);
    }
    /* What is left is held by connections whose claim was answered: they
     * free their claims without k (kv_sess_claim_done). */
    size_t i = 0;
    struct hmap_slot *slot;
    while ((slot = hmap_next(&k->pending, &i)))
        mem_free(slot->val);
    hmap_free(&k->pending);
    mem_free(k->queue);
    mem_free(k->boxes);
    kvbucket_close(&k->kb);
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->cond);
    pthread_mutex_destroy(&k->watch_lock);
    mem_free(k);
}
