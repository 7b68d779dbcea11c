/* kvbucket.c - a cluster's JetStream KV bucket on its own connection
 * (kvbucket.h). */
#include "cluster/kvbucket.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <nats/nats.h>

#include "broker/broker.h"
#include "cluster/link.h"
#include "core/clock.h"
#include "core/log.h"

/* Binds the bucket, creating it if it is not there (under bind_lock, or
 * before any loop runs). A libnats status. */
static natsStatus kvbucket_bind(struct kvbucket *kb)
{
    kvStore *st = NULL;
    sigset_t old;
    cluster_block_signals(&old);
    natsStatus s = js_KeyValue(&st, kb->js, kb->name);
    if (s == NATS_NOT_FOUND) {
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = kb->name;
        kc.Description = kb->description;
        kc.History = 1;
        kc.StorageType = js_FileStorage;
        kc.Replicas = kb->replicas;
        s = js_CreateKeyValue(&st, kb->js, &kc);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (s == NATS_OK)
        __atomic_store_n(&kb->kv, st, __ATOMIC_RELEASE);
    return s;
}

kvStore *kvbucket_store(struct kvbucket *kb)
{
    kvStore *st = __atomic_load_n(&kb->kv, __ATOMIC_ACQUIRE);
    if (st)
        return st;
    pthread_mutex_lock(&kb->bind_lock);
    natsStatus s = kb->kv ? NATS_OK : kvbucket_bind(kb);
    st = kb->kv;
    pthread_mutex_unlock(&kb->bind_lock);
    if (s != NATS_OK)
        log_warn("cluster: KV bucket %s still not bound: %s", kb->name, natsStatus_GetText(s));
    return st;
}

void kvbucket_name(char *out, size_t size, const char *base, const char *prefix)
{
    if (strcmp(prefix, SUBJECT_DEFAULT_PREFIX) == 0) {
        snprintf(out, size, "%s", base);
        return;
    }
    snprintf(out, size, "%s_%s", base, prefix);
    for (char *p = out; *p; p++)
        if (*p == '.') /* not allowed in a JetStream name */
            *p = '_';
}

enum kvbucket_open kvbucket_open(struct kvbucket *kb, struct cluster *c,
                                 const struct broker_config *cfg, const char *base,
                                 const char *role, const char *description, int wait_ms,
                                 uint64_t until)
{
    pthread_mutex_init(&kb->bind_lock, NULL);
    kb->replicas = (int)cfg->cluster.replicas;
    kb->description = description;
    kvbucket_name(kb->name, sizeof kb->name, base, cfg->cluster.prefix);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = wait_ms;
    natsStatus s = (natsStatus)cluster_connect_more(c, cfg, role, false, &kb->nc);
    if (s == NATS_OK)
        s = natsConnection_JetStream(&kb->js, kb->nc, &jo);
    /* A timeout is JetStream busy (electing a leader after a server
     * died, say): asked again for a while, then at first use. Anything
     * else (no responders: a server without JetStream) is final. */
    if (s == NATS_OK)
        while ((s = kvbucket_bind(kb)) == NATS_TIMEOUT && clock_now_ms() < until)
            log_info("cluster: JetStream did not answer for bucket %s yet; asking again",
                     kb->name);
    if (s == NATS_TIMEOUT) {
        log_warn("cluster: KV bucket %s not bound yet (JetStream does not answer); bound at "
                 "first use", kb->name);
        return KVBUCKET_LATER;
    }
    if (s != NATS_OK) {
        log_warn("cluster: no KV bucket %s (%s: %s)", kb->name, natsStatus_GetText(s),
                 nats_GetLastError(NULL));
        kvbucket_close(kb);
        return KVBUCKET_NONE;
    }
    return KVBUCKET_BOUND;
}

void kvbucket_close(struct kvbucket *kb)
{
    kvStore_Destroy(kb->kv);
    jsCtx_Destroy(kb->js);
    natsConnection_Close(kb->nc);
    natsConnection_Destroy(kb->nc);
    pthread_mutex_destroy(&kb->bind_lock);
    kb->kv = NULL;
    kb->js = NULL;
    kb->nc = NULL;
}
