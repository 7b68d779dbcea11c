/* kv_retain.c - retained messages in a JetStream KV bucket (kv_retain.h).
 *
 * A SUBSCRIBE reads a filter without wildcards with one kvStore_Get, and
 * a filter with wildcards through a KV watch of its mapped subscription
 * (KV keys take '*' and '>' like subjects; a/# is a get of a and a watch
 * of a.>) with deletes ignored, taking values until libnats posts the
 * NULL entry that ends the initial values, then drops the watch: no node
 * ever loads the whole bucket. A watch is an ordered consumer, created
 * and deleted by request, several times a get's cost (measured in
 * docs/cluster.md).
 */
#include "cluster/kv_retain.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <nats/nats.h>

#include "broker/broker.h"
#include "broker/msg.h"
#include "cluster/kvrec.h"
#include "cluster/link.h"
#include "cluster/subject.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"

struct kv_retain {
    subject_map map;
    natsConnection *nc; /* CLUSTER_NAME/NODE_NAME/kv */
    jsCtx *js;
    kvStore *kv; /* set once (atomic): at start, or by kv_store */
    uint32_t replicas;
    pthread_mutex_t bind_lock; /* a bind after the start's */
    char bucket[SUBJECT_PREFIX_MAX + 16];
};

/* Milliseconds since the Unix epoch: expiry deadlines must mean the same
 * on every node, unlike the loops' monotonic clock. */
static uint64_t kv_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Binds the bucket, creating it if it is not there (under bind_lock, or
 * before any loop runs). A libnats status. */
static natsStatus kv_bind(struct kv_retain *kv)
{
    kvStore *st = NULL;
    sigset_t old;
    cluster_block_signals(&old);
    natsStatus s = js_KeyValue(&st, kv->js, kv->bucket);
    if (s == NATS_NOT_FOUND) {
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = kv->bucket;
        kc.Description = "shootout broker: retained MQTT messages (docs/cluster.md)";
        kc.History = 1;
        kc.StorageType = js_FileStorage;
        kc.Replicas = (int)kv->replicas;
        s = js_CreateKeyValue(&st, kv->js, &kc);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (s == NATS_OK)
        __atomic_store_n(&kv->kv, st, __ATOMIC_RELEASE);
    return s;
}

/* The bucket, bound now if the start could not (JetStream did not
 * answer in time); NULL if it still cannot be. Any loop. */
static kvStore *kv_store(struct kv_retain *kv)
{
    kvStore *st = __atomic_load_n(&kv->kv, __ATOMIC_ACQUIRE);
    if (st)
        return st;
    pthread_mutex_lock(&kv->bind_lock);
    natsStatus s = kv->kv ? NATS_OK : kv_bind(kv);
    st = kv->kv;
    pthread_mutex_unlock(&kv->bind_lock);
    if (s != NATS_OK)
        log_warn("cluster: KV bucket %s still not bound: %s", kv->bucket, natsStatus_GetText(s));
    return st;
}

struct kv_retain *kv_retain_start(struct cluster *c, const struct broker_config *cfg)
{
    struct kv_retain *kv = mem_calloc(1, sizeof *kv);
    pthread_mutex_init(&kv->bind_lock, NULL);
    kv->replicas = cfg->cluster.replicas;
    subject_map_init(&kv->map, cfg->cluster.prefix); /* checked by broker_conf.c */
    /* Two clusters on one NATS keep their prefixes apart: their buckets too. */
    if (strcmp(cfg->cluster.prefix, SUBJECT_DEFAULT_PREFIX) == 0) {
        snprintf(kv->bucket, sizeof kv->bucket, "MQTT_RETAIN");
    } else {
        snprintf(kv->bucket, sizeof kv->bucket, "MQTT_RETAIN_%s", cfg->cluster.prefix);
        for (char *p = kv->bucket; *p; p++)
            if (*p == '.') /* not allowed in a bucket name */
                *p = '_';
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = KV_RETAIN_WAIT_MS;
    natsStatus s = (natsStatus)cluster_connect_more(c, cfg, "kv", false, &kv->nc);
    if (s == NATS_OK)
        s = natsConnection_JetStream(&kv->js, kv->nc, &jo);
    /* A timeout is JetStream busy (electing a leader after a server
     * died, say): asked again for a while, then at first use. Anything
     * else (no responders: a server without JetStream) is final. */
    uint64_t until = clock_now_ms() + KV_RETAIN_START_MS;
    if (s == NATS_OK)
        while ((s = kv_bind(kv)) == NATS_TIMEOUT && clock_now_ms() < until)
            log_info("cluster: JetStream did not answer for bucket %s yet; asking again",
                     kv->bucket);
    if (s == NATS_TIMEOUT) {
        log_warn("cluster: KV bucket %s not bound yet (JetStream does not answer); bound at "
                 "first use", kv->bucket);
        return kv;
    }
    if (s != NATS_OK) {
        log_warn("cluster: no KV bucket %s (%s: %s); retained messages stay on each node",
                 kv->bucket, natsStatus_GetText(s), nats_GetLastError(NULL));
        kv_retain_stop(kv);
        return NULL;
    }
    log_info("cluster: retained messages in KV bucket %s", kv->bucket);
    return kv;
}

void kv_retain_stop(struct kv_retain *kv)
{
    if (!kv)
        return;
    kvStore_Destroy(kv->kv);
    jsCtx_Destroy(kv->js);
    natsConnection_Close(kv->nc);
    natsConnection_Destroy(kv->nc);
    pthread_mutex_destroy(&kv->bind_lock);
    mem_free(kv);
}

/* The bucket's key of a subject: the subject without "PREFIX.". */
static const char *kv_key(const struct kv_retain *kv, const char *subj)
{
    return subj + kv->map.prefix_len + 1;
}

enum kv_retain_put kv_retain_put(struct kv_retain *kv, const struct msg *m, uint64_t now_ms)
{
    char subj[SUBJECT_MAX + 1];
    if (subject_from_topic(&kv->map, msg_topic(m), m->topic_len, subj, sizeof subj) == 0)
        return KV_RETAIN_LOCAL;
    const char *key = kv_key(kv, subj);
    kvStore *st = kv_store(kv);
    natsStatus s;
    if (!st) {
        s = NATS_TIMEOUT;
    } else if (m->payload_len == 0) {
        s = kvStore_Delete(st, key);
    } else {
        struct kvrec r = {
            .qos = m->qos,
            .props = msg_props(m),
            .props_len = m->props_len,
            .payload = msg_payload(m),
            .payload_len = m->payload_len,
        };
        if (m->expires_ms) /* an expired one still replaces: readers skip it */
            r.deadline_ms = kv_wall_ms() + (m->expires_ms > now_ms ? m->expires_ms - now_ms : 0);
        size_t n = kvrec_size(&r);
        uint8_t *val = mem_alloc(n);
        kvrec_encode(val, &r);
        s = kvStore_Put(NULL, st, key, val, (int)n);
        mem_free(val);
    }
    if (s != NATS_OK) {
        log_warn("cluster: retained message on %s not stored in %s: %s", subj, kv->bucket,
                 natsStatus_GetText(s));
        return KV_RETAIN_FAILED;
    }
    return KV_RETAIN_STORED;
}

/* One entry of a watch as a message to fn; whether it was one. */
static bool kv_deliver(struct kv_retain *kv, kvEntry *e, uint64_t now_ms, uint64_t wall_ms,
                       kv_retain_fn fn, void *ctx)
{
    char subj[SUBJECT_MAX + 1];
    uint8_t topic[SUBJECT_MAX];
    int n = snprintf(subj, sizeof subj, "%s.%s", kv->map.prefix, kvEntry_Key(e));
    size_t tlen = n > 0 && (size_t)n < sizeof subj
                      ? subject_to_topic(&kv->map, subj, (size_t)n, topic, sizeof topic)
                      : 0;
    struct kvrec r;
    struct mqtt_props props;
    if (tlen == 0 || kvrec_decode(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), &r, &props) != 0) {
        log_debug("cluster: %s: a key or value we did not write: %s", kv->bucket, kvEntry_Key(e));
        return false;
    }
    if (r.deadline_ms) {
        if (r.deadline_ms <= wall_ms)
            return false; /* expired: MQTT 5 3.3.2.3.3 */
        /* What is left of it, in whole seconds, rounded up. */
        props.message_expiry = (uint32_t)((r.deadline_ms - wall_ms + 999) / 1000);
        props.present |= MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY);
    }
    struct msg *m = msg_new(topic, tlen, r.payload, r.payload_len, r.qos, true, &props, now_ms);
    fn(ctx, m);
    msg_unref(m);
    return true;
}

size_t kv_retain_match(struct kv_retain *kv, const uint8_t *filter, size_t len, uint64_t now_ms,
                       kv_retain_fn fn, void *ctx)
{
    kvStore *st = kv_store(kv);
    if (!st)
        return 0; /* logged */
    subject_subs *subs = mem_alloc(sizeof *subs);
    size_t got = 0;
    if (subject_subs_from_filter(&kv->map, filter, len, subs) != 0) {
        mem_free(subs); /* no subject: nothing of it is in the bucket */
        return 0;
    }
    uint64_t wall = kv_wall_ms(), deadline = clock_now_ms() + KV_RETAIN_WAIT_MS;
    kvWatchOptions wo;
    kvWatchOptions_Init(&wo);
    wo.IgnoreDeletes = true;
    wo.Timeout = KV_RETAIN_WAIT_MS;
    for (int i = 0; i < subs->n && got < KV_RETAIN_MATCH_MAX; i++) {
        const char *key = kv_key(kv, subs->subj[i]);
        /* No wildcard ('*' and '>' in a subject are wildcards: escaped
         * bytes are "=2A" and "=3E"): one get, a tenth of a watch. */
        if (!strpbrk(key, "*>")) {
            kvEntry *e = NULL;
            natsStatus s = kvStore_Get(&e, st, key);
            if (s == NATS_OK)
                got += kv_deliver(kv, e, now_ms, wall, fn, ctx);
            else if (s != NATS_NOT_FOUND) /* deleted reads as not found too */
                log_warn("cluster: reading the retained message of %s from %s: %s",
                         subs->subj[i], kv->bucket, natsStatus_GetText(s));
            kvEntry_Destroy(e);
            continue;
        }
        kvWatcher *w = NULL;
        sigset_t old;
        cluster_block_signals(&old);
        natsStatus s = kvStore_Watch(&w, st, key, &wo);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        while (s == NATS_OK && got < KV_RETAIN_MATCH_MAX) {
            uint64_t now = clock_now_ms();
            kvEntry *e = NULL;
            s = now < deadline ? kvWatcher_Next(&e, w, (int64_t)(deadline - now)) : NATS_TIMEOUT;
            if (s != NATS_OK || !e)
                break; /* NULL: the initial values are all in */
            got += kv_deliver(kv, e, now_ms, wall, fn, ctx);
            kvEntry_Destroy(e);
        }
        if (s != NATS_OK)
            log_warn("cluster: reading retained messages of %s from %s: %s (%zu sent)",
                     subs->subj[i], kv->bucket, natsStatus_GetText(s), got);
        kvWatcher_Destroy(w);
    }
    mem_free(subs);
    return got;
}
