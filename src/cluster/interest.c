/* interest.c - a node's filters counted over its subscribers (interest.h). */
#include "cluster/interest.h"

#include <string.h>

#include "core/mem.h"

struct interest_entry *interest_add(struct interest *t, const uint8_t *filter, size_t len,
                                    bool *first)
{
    struct interest_entry *e = hmap_get(&t->map, filter, len);
    *first = e == NULL;
    if (!e) {
        e = mem_calloc(1, sizeof *e + len);
        e->len = len;
        memcpy(e->filter, filter, len);
        hmap_put(&t->map, e->filter, len, e);
    }
    e->refs++;
    return e;
}

struct interest_entry *interest_remove(struct interest *t, const uint8_t *filter, size_t len)
{
    struct interest_entry *e = hmap_get(&t->map, filter, len);
    if (!e || --e->refs > 0)
        return NULL;
    hmap_del(&t->map, filter, len);
    return e;
}

void interest_entry_free(struct interest_entry *e) { mem_free(e); }

void interest_clear(struct interest *t, void (*done)(struct interest_entry *e, void *ctx),
                    void *ctx)
{
    size_t i = 0;
    struct hmap_slot *s;
    while ((s = hmap_next(&t->map, &i))) {
        struct interest_entry *e = s->val;
        hmap_del(&t->map, e->filter, e->len);
        done(e, ctx);
    }
    hmap_free(&t->map);
}
