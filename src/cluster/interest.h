/* interest.h - a node's interest in the cluster (docs/cluster.md, "Routing
 * and interest aggregation"): the distinct topic filters its local
 * subscribers hold, each counted over those subscribers, so that a node
 * holds one set of NATS subscriptions per filter however many clients
 * share it. The table only counts; what a filter's first reference opens
 * and its last closes (link.c's NATS subscriptions) is the caller's, kept
 * in the entry. Not locked: the caller serialises.
 */
#ifndef SHOOTOUT_CLUSTER_INTEREST_H
#define SHOOTOUT_CLUSTER_INTEREST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hmap.h"

struct interest_entry {
    uint32_t refs;
    void *handle[2]; /* the caller's, set at the first reference */
    size_t len;
    uint8_t filter[]; /* the map's key */
};

struct interest {
    struct hmap map; /* filter -> struct interest_entry */
};

/* One more subscriber of filter; *first says it is the only one (the
 * caller then opens what the entry's handles hold). */
struct interest_entry *interest_add(struct interest *t, const uint8_t *filter, size_t len,
                                    bool *first);
/* One subscriber of filter less: its entry when that was the last one,
 * out of the table, for the caller to close and interest_entry_free;
 * NULL while others remain, or if the filter was not held. */
struct interest_entry *interest_remove(struct interest *t, const uint8_t *filter, size_t len);
void interest_entry_free(struct interest_entry *e);
/* Distinct filters held. */
static inline uint32_t interest_count(const struct interest *t) { return hmap_count(&t->map); }
/* Empties the table, handing each entry to done (which frees it). */
void interest_clear(struct interest *t, void (*done)(struct interest_entry *e, void *ctx),
                    void *ctx);

#endif
