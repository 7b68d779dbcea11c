/* figures.c - a node's figures as one line of text, and the table of the
 * other nodes' (figures.h).
 */
#include "cluster/figures.h"

#include <stdio.h>
#include <string.h>

#include "core/mem.h"

#define FIGURES_VERSION "v1"

/* The fields in their order on the line. */
static const size_t figures_fields[] = {
    offsetof(struct figures, interval_ms), offsetof(struct figures, published),
    offsetof(struct figures, received),    offsetof(struct figures, duplicates),
    offsetof(struct figures, overflow),    offsetof(struct figures, filters),
    offsetof(struct figures, queue_subs),  offsetof(struct figures, reconnects),
    offsetof(struct figures, disconnects), offsetof(struct figures, connected),
};
#define FIGURES_NFIELDS (sizeof figures_fields / sizeof figures_fields[0])

static uint64_t *figures_field(struct figures *f, size_t i)
{
    return (uint64_t *)((char *)f + figures_fields[i]);
}

struct figures_node {
    struct figures f;
    uint64_t seen_ms;
    size_t key_len;
    char key[];
};

size_t figures_encode(const struct figures *f, char *out, size_t cap)
{
    struct figures copy = *f;
    size_t n = (size_t)snprintf(out, cap, "%s", FIGURES_VERSION);
    for (size_t i = 0; i < FIGURES_NFIELDS && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, " %llu",
                              (unsigned long long)*figures_field(&copy, i));
    return n < cap ? n : 0;
}

bool figures_decode(const char *line, size_t len, struct figures *f)
{
    const size_t vlen = sizeof FIGURES_VERSION - 1;
    if (len < vlen || memcmp(line, FIGURES_VERSION, vlen) != 0)
        return false;
    struct figures out;
    size_t p = vlen;
    for (size_t i = 0; i < FIGURES_NFIELDS; i++) {
        if (p >= len || line[p++] != ' ' || p >= len || line[p] < '0' || line[p] > '9')
            return false;
        uint64_t v = 0;
        for (; p < len && line[p] >= '0' && line[p] <= '9'; p++) {
            unsigned d = (unsigned)(line[p] - '0');
            if (v > (UINT64_MAX - d) / 10)
                return false;
            v = v * 10 + d;
        }
        *figures_field(&out, i) = v;
    }
    if (p != len || out.interval_ms == 0)
        return false;
    *f = out;
    return true;
}

void figures_table_init(struct figures_table *t) { memset(t, 0, sizeof *t); }

void figures_table_free(struct figures_table *t)
{
    size_t i = 0;
    struct hmap_slot *s;
    while ((s = hmap_next(&t->nodes, &i)))
        mem_free(s->val);
    hmap_free(&t->nodes);
}

void figures_table_put(struct figures_table *t, const char *key, size_t key_len, const char *line,
                       size_t len, uint64_t now_ms)
{
    struct figures f;
    if (key_len == 0 || key_len >= FIGURES_KEY_MAX || !figures_decode(line, len, &f)) {
        t->malformed++;
        return;
    }
    struct figures_node *n = hmap_get(&t->nodes, key, key_len);
    if (!n) {
        if (hmap_count(&t->nodes) >= FIGURES_MAX_NODES) {
            t->refused++;
            return;
        }
        n = mem_calloc(1, sizeof *n + key_len);
        memcpy(n->key, key, key_len);
        n->key_len = key_len;
        hmap_put(&t->nodes, n->key, n->key_len, n);
    }
    n->f = f;
    n->seen_ms = now_ms;
}

static void figures_add(struct figures *total, const struct figures *f)
{
    struct figures copy = *f;
    for (size_t i = 1; i < FIGURES_NFIELDS; i++) /* not the interval */
        *figures_field(total, i) += *figures_field(&copy, i);
}

void figures_table_sum(struct figures_table *t, const struct figures *own, uint64_t now_ms,
                       struct figures_sum *sum)
{
    memset(sum, 0, sizeof *sum);
    sum->nodes = 1;
    figures_add(&sum->total, own);
    size_t i = 0;
    struct hmap_slot *s;
    while ((s = hmap_next(&t->nodes, &i))) {
        struct figures_node *n = s->val;
        /* An interval too large to triple never expires: it is a made-up one. */
        uint64_t life = n->f.interval_ms > UINT64_MAX / 3 ? UINT64_MAX : 3 * n->f.interval_ms;
        if (now_ms > n->seen_ms && now_ms - n->seen_ms > life) {
            hmap_del(&t->nodes, n->key, n->key_len); /* allowed while iterating */
            mem_free(n);
            continue;
        }
        sum->nodes++;
        figures_add(&sum->total, &n->f);
    }
}
