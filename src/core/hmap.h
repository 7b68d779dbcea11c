/* hmap.h - open-addressing hash map from byte-string keys to pointers.
 *
 * The map does not copy keys: each key must stay valid, unchanged, for as
 * long as its entry is in the map (callers point it into the object the
 * value refers to). Values are never NULL. Lookup cost does not depend on
 * the number of entries; the table grows when an insert would take it past
 * 3/4 load, doubling up to 1024 slots and by half from there (so a large
 * table stays between 1/2 and 3/4 full), and never shrinks unless emptied
 * and freed.
 */
#ifndef SHOOTOUT_HMAP_H
#define SHOOTOUT_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap_slot {
    const void *key; /* NULL = empty slot */
    uint32_t klen;
    uint32_t hash;
    void *val;
};

struct hmap {
    struct hmap_slot *slots; /* NULL until the first put */
    uint32_t cap;            /* slots, any number (0 until the first put) */
    uint32_t count;
};

/* A zeroed struct hmap is a valid empty map; hmap_init() just zeroes it. */
void hmap_init(struct hmap *m);
/* Frees the table (not keys or values) and leaves an empty map. */
void hmap_free(struct hmap *m);

void *hmap_get(const struct hmap *m, const void *key, size_t klen);
/* Inserts or replaces; returns the previous value or NULL. val != NULL. */
void *hmap_put(struct hmap *m, const void *key, size_t klen, void *val);
/* Removes; returns the removed value or NULL if the key was absent. */
void *hmap_del(struct hmap *m, const void *key, size_t klen);

static inline uint32_t hmap_count(const struct hmap *m) { return m->count; }

/* Iteration: size_t i = 0; while ((s = hmap_next(m, &i))) use s->key, s->val.
 * The map must not be modified during iteration, except hmap_del() of the
 * entry just returned. */
struct hmap_slot *hmap_next(const struct hmap *m, size_t *iter);

/* The table size after cap's next growth (the first: cap 0). Exposed for
 * tests and for sizing estimates (slots at N entries). */
uint32_t hmap_grown_cap(uint32_t cap);

/* The hash function the map uses (exposed for tests and for callers that
 * want to shard by the same hash). */
uint32_t hmap_hash(const void *key, size_t klen);

#endif
