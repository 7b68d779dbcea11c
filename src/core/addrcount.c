/* addrcount.c - connections counted per peer address (addrcount.h). */
#include "core/addrcount.h"

#include <assert.h>
#include <netinet/in.h>
#include <string.h>

#include "core/mem.h"

struct addrcount_entry {
    uint8_t key[ADDRCOUNT_KEY_LEN];
    unsigned n;
};

bool addrcount_key(const struct sockaddr_storage *sa, uint8_t key[ADDRCOUNT_KEY_LEN])
{
    if (sa->ss_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, ADDRCOUNT_KEY_LEN);
        return true;
    }
    if (sa->ss_family != AF_INET)
        return false;
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memcpy(key, mapped, sizeof mapped);
    memcpy(key + sizeof mapped, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    return true;
}

bool addrcount_take(struct addrcount *t, const uint8_t key[ADDRCOUNT_KEY_LEN], unsigned limit)
{
    struct addrcount_entry *e = hmap_get(&t->map, key, ADDRCOUNT_KEY_LEN);
    if ((e ? e->n : 0) >= limit)
        return false;
    if (!e) {
        e = mem_calloc(1, sizeof *e);
        memcpy(e->key, key, ADDRCOUNT_KEY_LEN);
        hmap_put(&t->map, e->key, ADDRCOUNT_KEY_LEN, e);
    }
    e->n++;
    return true;
}

void addrcount_give(struct addrcount *t, const uint8_t key[ADDRCOUNT_KEY_LEN])
{
    struct addrcount_entry *e = hmap_get(&t->map, key, ADDRCOUNT_KEY_LEN);
    assert(e && e->n > 0);
    if (--e->n == 0) {
        hmap_del(&t->map, e->key, ADDRCOUNT_KEY_LEN);
        mem_free(e);
    }
}

unsigned addrcount_get(const struct addrcount *t, const uint8_t key[ADDRCOUNT_KEY_LEN])
{
    const struct addrcount_entry *e = hmap_get(&t->map, key, ADDRCOUNT_KEY_LEN);
    return e ? e->n : 0;
}

void addrcount_free(struct addrcount *t)
{
    struct hmap_slot *s;
    size_t it = 0;
    while ((s = hmap_next(&t->map, &it)))
        mem_free(s->val);
    hmap_free(&t->map);
}
