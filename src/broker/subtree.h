/* subtree.h - the subscription tree: topic filters to subscribers.
 *
 * One node per topic level; each node finds its literal children through a
 * hash map, and keeps its '+' and '#' children apart, so matching a topic
 * costs O(levels x matching wildcard branches) whatever the number of
 * unrelated subscriptions. Subscribers are opaque pointers owned by the
 * caller; the tree stores one options word per (filter, subscriber) that it
 * hands back on match (the broker keeps the granted QoS, the MQTT 5
 * subscription options and the subscription identifier in it).
 *
 * The tree does not deduplicate across filters: a subscriber with two
 * overlapping filters is reported once per matching filter, and the caller
 * merges (MQTT 3.1.1 lets the server deliver one copy at the highest QoS).
 */
#ifndef SHOOTOUT_SUBTREE_H
#define SHOOTOUT_SUBTREE_H

#include <stddef.h>
#include <stdint.h>

struct subtree;

typedef uint32_t subtree_opts;

struct subtree *subtree_new(void);
/* Frees every node; does not touch subscribers. */
void subtree_free(struct subtree *t);

/* Adds (filter, subscriber) or, if present, replaces its options.
 * The filter must be valid (mqtt_topic_filter_valid). Returns 1 if the
 * subscription is new, 0 if it replaced an existing one. */
int subtree_add(struct subtree *t, const uint8_t *filter, size_t len, void *subscriber,
                subtree_opts options);
/* Returns 1 if removed, 0 if there was no such subscription. Nodes left
 * empty are freed. */
int subtree_remove(struct subtree *t, const uint8_t *filter, size_t len, void *subscriber);

typedef void (*subtree_match_fn)(void *ctx, void *subscriber, subtree_opts options);
/* Calls fn once per (filter, subscriber) whose filter matches the topic
 * name, following mqtt_topic_match()'s rules ('$' topics are not matched
 * by a leading wildcard). fn must not modify the tree. */
void subtree_match(const struct subtree *t, const uint8_t *topic, size_t len, subtree_match_fn fn,
                   void *ctx);

/* Number of (filter, subscriber) pairs in the tree. */
size_t subtree_count(const struct subtree *t);

#endif
