/* figures.h - a cluster node's own figures, and the table of every node's
 * (docs/cluster.md, "Figures").
 *
 * Each node publishes its figures every interval on PREFIX.n.<node name
 * escaped as one level> (class "n": outside the topics' "t" and "d", so no
 * MQTT filter can match it) and keeps the last figures heard from every
 * other node, with when it heard them. A node not heard for three of its
 * own intervals is gone. The encoding is one line of text,
 *
 *     v1 INTERVAL_MS PUBLISHED RECEIVED DUPLICATES OVERFLOW FILTERS QUEUE_SUBS
 *        RECONNECTS DISCONNECTS CONNECTED
 *
 * (unsigned decimals, one space apart, no line break); a later version
 * changes the first word, and what does not parse as v1 is ignored and
 * counted.
 *
 * Not thread-safe: the caller locks (link.c: libnats's thread writes, the
 * home loop reads).
 */
#ifndef SHOOTOUT_CLUSTER_FIGURES_H
#define SHOOTOUT_CLUSTER_FIGURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hmap.h"

/* Nodes the table holds at most: figures from more are ignored (and
 * counted as refused), so a flood of made-up names costs bounded memory. */
#define FIGURES_MAX_NODES 1024
/* The longest encoded line, NUL included. */
#define FIGURES_LINE_MAX 256
/* The longest key (a node's escaped name), NUL included. */
#define FIGURES_KEY_MAX 400

/* One node's figures, as link.c counts them (cluster_figures). */
struct figures {
    uint64_t interval_ms; /* how often the node publishes them */
    uint64_t published;   /* messages published to the cluster */
    uint64_t received;    /* messages received from it, routed locally */
    uint64_t duplicates;  /* copies dropped by the dedupe */
    uint64_t overflow;    /* dropped with the inbox full */
    uint64_t filters;     /* distinct non-shared filters subscribed on NATS */
    uint64_t queue_subs;  /* queue subscriptions held (shared members) */
    uint64_t reconnects;  /* NATS reconnections */
    uint64_t disconnects; /* NATS connection losses */
    uint64_t connected;   /* 1 if connected now */
};

/* f as one line into out (cap >= FIGURES_LINE_MAX); its length. */
size_t figures_encode(const struct figures *f, char *out, size_t cap);
/* A line into f; false if it is not exactly what figures_encode writes
 * (another version, a missing or extra field, a non-digit, an overflow, an
 * interval of 0). */
bool figures_decode(const char *line, size_t len, struct figures *f);

/* The other nodes' last figures, by key (their escaped names). */
struct figures_table {
    struct hmap nodes; /* key -> struct figures_node */
    uint64_t malformed; /* lines figures_decode refused */
    uint64_t refused;   /* new nodes beyond FIGURES_MAX_NODES */
};

/* A table's sums over the nodes alive at a time, the caller's own figures
 * included. */
struct figures_sum {
    uint32_t nodes;
    struct figures total; /* interval_ms unused; connected: how many are */
};

void figures_table_init(struct figures_table *t);
void figures_table_free(struct figures_table *t);
/* A line heard from node key at now_ms: kept (replacing that node's
 * previous one) if it decodes, counted in malformed if not. */
void figures_table_put(struct figures_table *t, const char *key, size_t key_len, const char *line,
                       size_t len, uint64_t now_ms);
/* Drops the nodes gone at now_ms (not heard for three of their intervals)
 * and sums the others with own. */
void figures_table_sum(struct figures_table *t, const struct figures *own, uint64_t now_ms,
                       struct figures_sum *sum);

#endif
