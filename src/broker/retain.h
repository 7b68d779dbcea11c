/* retain.h - the retained-message store: at most one value per topic name,
 * found again by topic filter when a client subscribes.
 *
 * Values are opaque pointers; the store takes ownership of a value on
 * retain_set() and gives it up through the release function given to
 * retain_new() when the value is replaced, cleared or the store is freed.
 * Topics are stored level by level with a hash map per node, so a filter
 * without wildcards costs one lookup per level.
 */
#ifndef SHOOTOUT_RETAIN_H
#define SHOOTOUT_RETAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct retain;

typedef void (*retain_release_fn)(void *value);

struct retain *retain_new(retain_release_fn release);
void retain_free(struct retain *r);

/* Stores value under the topic name (valid, no wildcards), replacing and
 * releasing any previous value; value NULL clears the topic. Nodes left
 * empty are freed. size is what the value counts in retain_bytes(). */
void retain_set(struct retain *r, const uint8_t *topic, size_t len, void *value, size_t size);
/* True if a value is retained under the topic name; its size in *size. */
bool retain_get(const struct retain *r, const uint8_t *topic, size_t len, size_t *size);

typedef void (*retain_match_fn)(void *ctx, const uint8_t *topic, size_t topic_len, void *value);
/* Calls fn for every retained value whose topic matches the valid filter,
 * following mqtt_topic_match()'s rules. The topic passed to fn is the full
 * topic name, valid only during the call. fn must not modify the store.
 * Returns the number of nodes the walk looked at, what it cost: a caller
 * matching many filters in slices counts it against its slice. */
size_t retain_match(const struct retain *r, const uint8_t *filter, size_t len, retain_match_fn fn,
                    void *ctx);

size_t retain_count(const struct retain *r);
/* The sizes of all values retained, as retain_set() was told them. */
size_t retain_bytes(const struct retain *r);

#endif
