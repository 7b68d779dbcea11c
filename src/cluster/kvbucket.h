/* kvbucket.h - one JetStream key-value bucket of the cluster, on a NATS
 * connection of its own: what the retained messages' bucket (kv_retain.h)
 * and the sessions' (kv_sess.h) share. Its name is BASE for the default
 * subject prefix and BASE_<prefix> for another (two clusters on one NATS
 * keep their prefixes apart: their buckets too), with the configured
 * replicas, file storage and history 1 (an existing bucket keeps its own).
 *
 * A start whose JetStream does not answer (a leader being elected, no
 * quorum) asks again for KVBUCKET_START_MS, then leaves the bind to the
 * first use (kvbucket_store), from any thread.
 */
#ifndef SHOOTOUT_CLUSTER_KVBUCKET_H
#define SHOOTOUT_CLUSTER_KVBUCKET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/subject.h"

struct broker_config;
struct cluster;
typedef struct __natsConnection natsConnection;
typedef struct __jsCtx jsCtx;
typedef struct __kvStore kvStore;

/* How long a start asks JetStream for the node's buckets while it times
 * out (all of them together). */
#define KVBUCKET_START_MS 5000

struct kvbucket {
    natsConnection *nc; /* CLUSTER_NAME/NODE_NAME/role */
    jsCtx *js;
    kvStore *kv; /* set once (atomic): at the start, or by kvbucket_store */
    int replicas;
    const char *description;
    pthread_mutex_t bind_lock; /* a bind after the start's */
    char name[SUBJECT_PREFIX_MAX + 16];
};

enum kvbucket_open {
    KVBUCKET_BOUND,
    KVBUCKET_LATER, /* JetStream did not answer: bound at first use */
    KVBUCKET_NONE,  /* no JetStream, or the bucket refused: logged, kb closed */
};
/* BASE for the default subject prefix, else BASE_<prefix> with '.' as
 * '_', into out: a bucket's name, and the QoS 1/2 stream's (js_msgs.c). */
void kvbucket_name(char *out, size_t size, const char *base, const char *prefix);
/* Connects kb (zeroed) as role and binds (or creates) the bucket base,
 * each wait at most wait_ms, asking again until the monotonic time
 * until_ms (the node's buckets share one start: clock_now_ms() +
 * KVBUCKET_START_MS); on the main thread, before any loop runs. */
enum kvbucket_open kvbucket_open(struct kvbucket *kb, struct cluster *c,
                                 const struct broker_config *cfg, const char *base,
                                 const char *role, const char *description, int wait_ms,
                                 uint64_t until_ms);
/* The bucket, bound now if the start could not; NULL if it still cannot
 * be (logged). Any thread. */
kvStore *kvbucket_store(struct kvbucket *kb);
/* Closes the connection (kb as kvbucket_open took it). */
void kvbucket_close(struct kvbucket *kb);

#endif
