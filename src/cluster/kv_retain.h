/* kv_retain.h - retained messages shared by the cluster: one JetStream
 * key-value bucket (docs/cluster.md, "Retained messages"), keyed by a
 * topic's subject without the prefix, valued by a kvrec.h record.
 *
 * A clustered node's retained PUBLISH whose topic has a subject goes to
 * the bucket (kv_retain_put) instead of the node's own store, before the
 * PUBACK; a SUBSCRIBE reads what matches its filter from the bucket
 * (kv_retain_match) besides the node's own store, which keeps the rest:
 * what the broker publishes itself (wills, $SYS) and topics too long for a
 * subject. Both calls are synchronous, on the loop that took the packet,
 * and thread-safe (libnats is).
 */
#ifndef SHOOTOUT_CLUSTER_KV_RETAIN_H
#define SHOOTOUT_CLUSTER_KV_RETAIN_H

#include <stddef.h>
#include <stdint.h>

struct broker_config;
struct cluster;
struct kv_retain;
struct msg;

/* The longest a put, or a SUBSCRIBE's read of one filter, waits for
 * JetStream, and the most retained messages one filter reads. */
#define KV_RETAIN_WAIT_MS 1000
#define KV_RETAIN_MATCH_MAX 10000

/* Binds (or creates) the bucket MQTT_RETAIN (kvbucket.h: its name with
 * another prefix, its replicas), over a connection of its own (named
 * .../kv) with c's options. NULL, logged as a warning, when the server
 * has no JetStream (or refuses the bucket): the node's retained messages
 * then stay its own, as without --cluster. When JetStream does not answer
 * by until_ms (kvbucket_open), the first put or read binds it, and each
 * fails (KV_RETAIN_FAILED, nothing read) until one can. */
struct kv_retain *kv_retain_start(struct cluster *c, const struct broker_config *cfg,
                                  uint64_t until_ms);
/* Before the cluster's connection closes. */
void kv_retain_stop(struct kv_retain *kv);

enum kv_retain_put {
    KV_RETAIN_LOCAL,  /* no subject for its topic: the node's own store */
    KV_RETAIN_STORED, /* in the bucket (or, empty, deleted from it) */
    KV_RETAIN_FAILED, /* JetStream refused or did not answer in time */
};
/* Stores the retained message m (now_ms: the loop clock m's expiry counts
 * on), or deletes its topic's key when its payload is empty. */
enum kv_retain_put kv_retain_put(struct kv_retain *kv, const struct msg *m, uint64_t now_ms);

typedef void (*kv_retain_fn)(void *ctx, struct msg *m);
/* Calls fn with each unexpired retained message of the bucket whose topic
 * the valid filter matches (a message with one reference, which fn may
 * take more of; dropped after the call), at most KV_RETAIN_MATCH_MAX and
 * for at most KV_RETAIN_WAIT_MS in all. Returns how many. */
size_t kv_retain_match(struct kv_retain *kv, const uint8_t *filter, size_t len, uint64_t now_ms,
                       kv_retain_fn fn, void *ctx);

#endif
