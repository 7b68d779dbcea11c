/* hmap.c - open-addressing hash map: linear probing, with backward-shift
 * deletion instead of tombstones so that probe runs stay as short after a
 * million deletions as after none.
 *
 * Every table keeps at least one empty slot (load <= 3/4), which ends each
 * probe loop and anchors iteration.
 *
 * From 1024 slots on the table grows by half (not doubling) when an insert
 * would take it past 3/4: a table just past a doubling is 3/8 full, 64
 * bytes an entry, and the broker's client-id map is one entry per
 * connection (at 100,000 sessions it would be 262,144 slots). Growing by
 * half keeps the load between 1/2 and 3/4 (at most 48 bytes an entry) with
 * the same probe lengths; a slot's home is the hash scaled to the table
 * (multiply and shift), which any table size allows.
 */
#include "core/hmap.h"

#include <string.h>

#include "core/mem.h"

/* Two slots hold one entry: most subscription-tree nodes have a single
 * child, and the smallest table keeps those nodes cheap. */
#define HMAP_MIN_CAP 2

void hmap_init(struct hmap *m) { memset(m, 0, sizeof *m); }

/* Tables up to this many slots double as before: most (subscription-tree
 * nodes, a session's filters) stay small, where the bytes do not matter and
 * the lower load keeps their probes (a tenth of the loadtest's lookups)
 * as short as they were. */
#define HMAP_HALF_GROWTH_CAP 1024

uint32_t hmap_grown_cap(uint32_t cap)
{
    if (!cap)
        return HMAP_MIN_CAP;
    return cap < HMAP_HALF_GROWTH_CAP ? cap * 2 : cap + cap / 2;
}

void hmap_free(struct hmap *m)
{
    mem_free(m->slots);
    hmap_init(m);
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint64_t load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x9fb21c651e98df25ull;
    return h ^ (h >> 29);
}

/* Eight bytes per multiply, in the manner of wyhash: keys are topic levels
 * and client ids, mostly short, so the tail is read with at most two
 * overlapping loads rather than byte by byte. The length seeds the state,
 * which keeps keys that differ only in trailing zero bytes apart. */
uint32_t hmap_hash(const void *key, size_t klen)
{
    const uint8_t *p = key;
    size_t n = klen;
    uint64_t h = 0x243f6a8885a308d3ull ^ klen;
    uint64_t tail = 0;

    for (; n > 8; n -= 8, p += 8)
        h = mix(h, load64(p));
    if (n >= 4)
        tail = load32(p) << 32 | load32(p + n - 4);
    else if (n > 0)
        tail = (uint64_t)p[0] << 16 | (uint64_t)p[n / 2] << 8 | p[n - 1];
    h = mix(h, tail);
    h *= 0xff51afd7ed558ccdull;
    return (uint32_t)(h ^ (h >> 32));
}

/* The slot where a probe for hash starts. */
static inline uint32_t home(const struct hmap *m, uint32_t hash)
{
    return (uint32_t)(((uint64_t)hash * m->cap) >> 32);
}

static inline uint32_t next_slot(const struct hmap *m, uint32_t i)
{
    return i + 1 == m->cap ? 0 : i + 1;
}

/* How far slot i lies after slot from, cyclically. */
static inline uint32_t dist(const struct hmap *m, uint32_t from, uint32_t i)
{
    return i >= from ? i - from : i + m->cap - from;
}

/* The slot holding key, or the empty slot where it would go. */
static struct hmap_slot *probe(const struct hmap *m, const void *key, size_t klen, uint32_t hash)
{
    for (uint32_t i = home(m, hash);; i = next_slot(m, i)) {
        struct hmap_slot *s = &m->slots[i];
        if (!s->key || (s->hash == hash && s->klen == klen && memcmp(s->key, key, klen) == 0))
            return s;
    }
}

static void grow(struct hmap *m)
{
    struct hmap old = *m;
    m->cap = hmap_grown_cap(old.cap);
    m->slots = mem_calloc(m->cap, sizeof *m->slots);
    for (uint32_t i = 0; i < old.cap; i++) {
        struct hmap_slot *s = &old.slots[i];
        if (s->key)
            *probe(m, s->key, s->klen, s->hash) = *s;
    }
    mem_free(old.slots);
}

void *hmap_get(const struct hmap *m, const void *key, size_t klen)
{
    if (!m->count)
        return NULL;
    struct hmap_slot *s = probe(m, key, klen, hmap_hash(key, klen));
    return s->key ? s->val : NULL;
}

void *hmap_put(struct hmap *m, const void *key, size_t klen, void *val)
{
    uint32_t hash = hmap_hash(key, klen);
    struct hmap_slot *s = m->cap ? probe(m, key, klen, hash) : NULL;

    if (s && s->key) {
        void *old = s->val;
        s->key = key; /* the old key may die with the old value */
        s->val = val;
        return old;
    }
    if (((uint64_t)m->count + 1) * 4 > (uint64_t)m->cap * 3) {
        grow(m);
        s = probe(m, key, klen, hash);
    }
    *s = (struct hmap_slot){.key = key, .klen = (uint32_t)klen, .hash = hash, .val = val};
    m->count++;
    return NULL;
}

void *hmap_del(struct hmap *m, const void *key, size_t klen)
{
    if (!m->count)
        return NULL;
    struct hmap_slot *s = probe(m, key, klen, hmap_hash(key, klen));
    if (!s->key)
        return NULL;

    void *val = s->val;
    uint32_t hole = (uint32_t)(s - m->slots);
    /* Pull later entries of the run back into the hole, but only those whose
     * home slot is not after the hole (cyclically), so that each stays
     * reachable from its home. */
    for (uint32_t i = next_slot(m, hole); m->slots[i].key; i = next_slot(m, i)) {
        if (dist(m, home(m, m->slots[i].hash), i) >= dist(m, hole, i)) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole].key = NULL;
    m->count--;
    return val;
}

/* Iteration goes downwards, starting below the highest empty slot H,
 * wrapping from slot 0 to the top and stopping at H. Deleting the entry just
 * returned shifts only entries of its own run, which lies above it and below
 * the next empty slot (cyclically), so every entry it moves has already been
 * visited and lands in visited territory: nothing is skipped or seen twice.
 * Slots above H stay full until the wrap reaches them, which is why the
 * second lap can stop at the first empty slot.
 *
 * *iter = ((next << 1) | wrapped) + 1, where next - 1 is the next slot to
 * look at; 0 means not started. */
struct hmap_slot *hmap_next(const struct hmap *m, size_t *iter)
{
    size_t next, wrapped;

    if (!m->count)
        return NULL;
    if (*iter == 0) {
        for (next = m->cap - 1; m->slots[next].key; next--)
            ;
        wrapped = 0;
    } else {
        next = (*iter - 1) >> 1;
        wrapped = (*iter - 1) & 1;
    }
    for (;;) {
        if (next == 0 && !wrapped) {
            next = m->cap;
            wrapped = 1;
        }
        struct hmap_slot *s = &m->slots[--next];
        if (s->key) {
            *iter = ((next << 1) | wrapped) + 1;
            return s;
        }
        if (wrapped)
            return NULL;
    }
}
