/* share.h - shared subscriptions, $share/<name>/<filter> (MQTT 5 4.8.2,
 * which MQTT 3.1.1 clients may use too, as with Mosquitto): the groups,
 * and which member gets a group's next message. The router (router.c)
 * asks; nothing here delivers.
 *
 * Each group is one subscriber in a subscription tree of its own, so a
 * message costs one tree walk for all groups. A matching group sends it to
 * one member: the next connected one in round-robin order, or, when none
 * is connected, the next one at all (whose session queues it); a member
 * the ACL does not let read the topic is passed over. When a member's
 * connection ends, the QoS 1/2 messages it had not acknowledged go to
 * another connected member (share_hand_off).
 */
#ifndef SHOOTOUT_SHARE_H
#define SHOOTOUT_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/subtree.h"
#include "core/hmap.h"

struct msg;
struct session;

struct share {
    struct subtree *tree; /* <filter> -> struct share_group */
    struct hmap groups;   /* $share/<name>/<filter> -> struct share_group */
};

void share_init(struct share *sh);
/* Every member must be gone. */
void share_free(struct share *sh);

static inline bool share_any(const struct share *sh) { return hmap_count(&sh->groups) > 0; }

/* filter is the whole $share/<name>/<filter>, <filter> at inner_off
 * (mqtt_topic_shared): s joins its group, or changes its options. */
void share_add(struct share *sh, const uint8_t *filter, size_t len, size_t inner_off,
               struct session *s, subtree_opts opts);
void share_remove(struct share *sh, const uint8_t *filter, size_t len, struct session *s);

typedef void (*share_pick_fn)(void *ctx, struct session *s, subtree_opts opts);
/* Calls fn once for each group matching topic, with the member to send a
 * message on it to. Returns how many matching groups had no member that
 * may read the topic. */
uint64_t share_route(struct share *sh, const uint8_t *topic, size_t len, share_pick_fn fn,
                     void *ctx);

/* s's connection ended: the groups of s's that may take over what it had
 * not acknowledged, those with another connected member, gathered once so
 * that each message costs O(those groups), not O(s's subscriptions). */
struct share_hand_off {
    struct share_group **groups; /* owned array; the groups are sh's */
    uint32_t n;
};
void share_hand_off_begin(struct share *sh, const struct session *s, struct share_hand_off *h);
void share_hand_off_end(struct share_hand_off *h);
/* m came to s through a shared subscription: the connected member of a
 * group in h that matches m to hand it to (*opts its options), or NULL if
 * there is none. */
struct session *share_hand_off(const struct share_hand_off *h, const struct session *s,
                               const struct msg *m, subtree_opts *opts);

/* Whether the ACL lets s, a member, read topic; only a session with a
 * filtered subscription needs asking (docs/security.md, "Delivery"). Under
 * the router's lock, as a pick is (the cluster's members too). */
bool share_may_read(const struct session *s, const uint8_t *topic, size_t len);

/* Members over all groups: one subscription each. */
size_t share_members(const struct share *sh);

#endif
