/* addrcount.h - connections counted per peer address, against a limit:
 * what --max-connections-per-address needs (core/srv.c).
 *
 * An address is 16 bytes, IPv4 as IPv4-mapped IPv6 (addrcount_key), so
 * 127.0.0.1 counts the same over either socket family. Entries exist only
 * while their count is above zero. Not thread-safe: srv.c holds a lock.
 */
#ifndef SHOOTOUT_ADDRCOUNT_H
#define SHOOTOUT_ADDRCOUNT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/hmap.h"

#define ADDRCOUNT_KEY_LEN 16

/* A zeroed struct addrcount is empty. */
struct addrcount {
    struct hmap map; /* key -> struct addrcount_entry, which holds the key */
};

/* The address of sa (AF_INET or AF_INET6) as a key; false for other
 * families (Unix sockets), which are not counted. */
bool addrcount_key(const struct sockaddr_storage *sa, uint8_t key[ADDRCOUNT_KEY_LEN]);
/* Counts one more connection from key, unless it has limit already:
 * then returns false and counts nothing. */
bool addrcount_take(struct addrcount *t, const uint8_t key[ADDRCOUNT_KEY_LEN], unsigned limit);
/* One connection from key went away (one addrcount_take counted). */
void addrcount_give(struct addrcount *t, const uint8_t key[ADDRCOUNT_KEY_LEN]);
/* Connections counted for key now. */
unsigned addrcount_get(const struct addrcount *t, const uint8_t key[ADDRCOUNT_KEY_LEN]);
/* Addresses with a count above zero. */
static inline uint32_t addrcount_addresses(const struct addrcount *t)
{
    return hmap_count(&t->map);
}
void addrcount_free(struct addrcount *t);

#endif
