/* kv_sess.h - which node owns each session of the cluster: one JetStream
 * key-value bucket (docs/cluster.md, "Sessions"), MQTT_SESS (kvbucket.h
 * names it for another prefix), keyed by the client id escaped as one
 * subject token (subject_queue_group, reversed by subject_token_decode),
 * valued by a small versioned text record: "1 EPOCH ORIGIN NODE", the
 * session's epoch (one more at every CONNECT anywhere), the origin id of
 * the owning process and its node name.
 *
 * A CONNECT on a clustered node claims its session before the CONNACK
 * (kv_sess_claim): a worker thread reads the key (revision r, epoch e) and
 * writes epoch e + 1 with this node as owner by compare-and-set
 * (kvStore_Update on r, kvStore_Create when there is none), so that each
 * epoch has exactly one owner; a lost race reads again, KV_SESS_TRIES in
 * all, then the CONNECT is refused. The answer reaches the connection's
 * own loop through a mailbox of that loop (a mutex, a list and an eventfd:
 * the loop never waits for JetStream), which calls connect_claimed.
 *
 * Each node watches the bucket (one ordered consumer from the stream's
 * new messages on); an epoch written by another process for a session of
 * this node, greater than the epoch this node claimed it with, goes to the
 * session's loop (connect_taken), which closes its client and drops the
 * session: it lives on the other node now. A claim answered before its
 * session exists is checked at kv_sess_claim_done against what the watch
 * saw meanwhile.
 */
#ifndef SHOOTOUT_CLUSTER_KV_SESS_H
#define SHOOTOUT_CLUSTER_KV_SESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct broker;
struct broker_config;
struct broker_loop;
struct cluster;
struct conn;
struct kv_claim;
struct kv_sess;

/* The longest each JetStream request of a claim waits, how many reads and
 * writes a claim makes at most before its CONNECT is refused, and the
 * threads that make them. */
#define KV_SESS_WAIT_MS 1000
#define KV_SESS_TRIES 5
#define KV_SESS_WORKERS 2
/* The record's version, and its longest text. */
#define KV_SESS_VERSION 1
#define KV_SESS_VALUE_MAX 192

/* Binds (or creates) the bucket on a connection of its own (.../sess) and
 * starts the workers and the watch, with b->nloops mailboxes; on the main
 * thread, before any loop runs (until_ms: kvbucket_open). NULL, logged, without JetStream: sessions
 * then stay each node's, as before. */
struct kv_sess *kv_sess_start(struct cluster *c, const struct broker_config *cfg,
                              struct broker *b, uint64_t until_ms);
/* On loop l's thread, at its start: its mailbox is watched. */
int kv_sess_attach(struct kv_sess *k, struct broker_loop *l);
/* With every loop stopped and before the cluster's connection closes:
 * the claims still under way are dropped (their connections' claiming
 * cleared). NULL is a no-op. */
void kv_sess_stop(struct kv_sess *k);

/* Asks for the session of client id[0..len) for this node, on behalf of
 * c (CONNECT read, on loop l): sets conn_cold(c)->claim and ->claiming;
 * the answer comes to connect_claimed on l. False (nothing set) if the id
 * is too long for a key. */
bool kv_sess_claim(struct kv_sess *k, struct broker_loop *l, struct conn *c, const uint8_t *id,
                   size_t len);
/* The epoch a finished claim won; 0 if it was refused (JetStream
 * unreachable, races lost, a record of another version). */
uint64_t kv_sess_claim_epoch(const struct kv_claim *cl);
/* Done with a finished claim: its session has its epoch, or its
 * connection ended. True if another node claimed the session after it
 * (seen while it was under way). Frees cl; with k NULL (stopped) only
 * that. */
bool kv_sess_claim_done(struct kv_sess *k, struct kv_claim *cl);

/* The record, for the tests: writes it to out (KV_SESS_VALUE_MAX) and
 * returns its length; reads one (0, or -1 for anything else). */
size_t kv_sess_encode(char *out, uint64_t epoch, const char *origin, const char *node);
struct kv_sess_rec {
    uint64_t epoch;
    char origin[17];
    char node[128];
};
int kv_sess_decode(const char *v, size_t len, struct kv_sess_rec *r);

#endif
