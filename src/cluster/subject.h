/* subject.h - MQTT topic names and filters as NATS subjects, for the broker
 * cluster on NATS (docs/cluster.md, "Subject mapping").
 *
 * A topic becomes PREFIX.CLASS.L1.L2...: PREFIX is configurable (one or
 * more literal tokens, "mqtt" by default), CLASS is "t" for ordinary topics
 * and "d" for topics starting with '$' (whose first level is written
 * without that '$'). Putting '$'-topics in a class of their own is what
 * keeps MQTT's rule that a filter starting with '+' or '#' does not match
 * them: such a filter maps to PREFIX.t.*... or PREFIX.t.>, which can never
 * match PREFIX.d.anything.
 *
 * Each MQTT level becomes one NATS token, escaped reversibly: the bytes
 * [A-Za-z0-9_-] pass through, every other byte (the NATS separator '.',
 * space and all whitespace, '*', '>', '$', the escape character '=' itself,
 * other punctuation, and each byte of a non-ASCII UTF-8 character) becomes
 * '=' and two upper-case hex digits, and an empty level (MQTT "a//b", "/a",
 * "a/") becomes the token "=". Non-ASCII is escaped rather than passed
 * through because the NATS documentation recommends ASCII subjects for
 * compatibility across clients, and because the tokens are then also valid
 * JetStream KV keys ([-/_=.a-zA-Z0-9]), which the retained-message and
 * session buckets need. Decoding accepts only what encoding produces, so
 * the mapping is a bijection between valid topic names and valid subjects.
 *
 * Pure functions over caller buffers; nothing here allocates.
 */
#ifndef SHOOTOUT_CLUSTER_SUBJECT_H
#define SHOOTOUT_CLUSTER_SUBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest subject this mapping writes, without its NUL. nats-server
 * reads a PUB/HPUB line of at most max_control_line bytes (4096 by
 * default): this leaves 1 KB of it for the verb, the reply subject and the
 * sizes. A topic whose subject would be longer cannot be clustered (an
 * MQTT topic may be 65535 bytes; escaping can triple it). */
#define SUBJECT_MAX 3072
/* The longest prefix (subject_map_init). */
#define SUBJECT_PREFIX_MAX 128
#define SUBJECT_DEFAULT_PREFIX "mqtt"

typedef struct subject_map {
    char prefix[SUBJECT_PREFIX_MAX + 1];
    size_t prefix_len;
} subject_map;

/* Sets the prefix: one or more '.'-separated tokens of [A-Za-z0-9_-] (so
 * it is literal and cannot start with the reserved '$'), e.g. "mqtt" or
 * "shootout.site1". 0, or -1 if it is not such a prefix. */
int subject_map_init(subject_map *m, const char *prefix);

/* Writes the subject of a topic name to out (NUL-terminated; cap counts
 * the NUL) and returns its length; 0 if the topic is not a valid MQTT
 * topic name (mqtt_topic_name_valid) or its subject does not fit in cap or
 * in SUBJECT_MAX. */
size_t subject_from_topic(const subject_map *m, const uint8_t *topic, size_t len, char *out,
                          size_t cap);

/* The topic name of a subject written by subject_from_topic, into out (not
 * NUL-terminated) and its length; 0 if the subject is not under m's prefix,
 * is not one subject_from_topic writes (a non-canonical escape, an unknown
 * class, a wildcard), or does not fit in cap. */
size_t subject_to_topic(const subject_map *m, const char *subj, size_t len, uint8_t *out, size_t cap);

/* A topic's subject in the QoS 1/2 stream's class (cluster/js_msgs.h),
 * which no core subscription matches: PREFIX.j.REST for the subject
 * PREFIX.REST that subject_from_topic wrote; and back. Into out
 * (NUL-terminated; cap counts the NUL), with its length; 0 if subj is not
 * such a subject under m's prefix or does not fit in cap. */
size_t subject_to_stream(const subject_map *m, const char *subj, size_t len, char *out,
                         size_t cap);
size_t subject_from_stream(const subject_map *m, const char *subj, size_t len, char *out,
                           size_t cap);

/* The NATS subscription(s) that together receive exactly the subjects of
 * the topics a filter matches: '+' becomes '*', a final '#' becomes '>'.
 * Because MQTT's "a/#" also matches "a" itself and NATS's "a.>" needs at
 * least one more token, a filter ending in "/#" needs two subscriptions,
 * "P.t.a" and "P.t.a.>"; every other filter needs one ("#" alone is
 * "P.t.>", since every topic has at least one level). A subscriber holding
 * both receives a message once from each that matches, and the two never
 * match the same subject, so there are no duplicates to remove. A shared
 * subscription's inner filter ($share/<group>/<filter>) is mapped the same
 * way; see subject_queue_group for its group. */
typedef struct subject_subs {
    int n; /* 1 or 2 */
    size_t len[2];
    char subj[2][SUBJECT_MAX + 1];
} subject_subs;

/* Fills subs for a filter; 0, or -1 if the filter is not a valid MQTT
 * topic filter or a subscription does not fit in SUBJECT_MAX. */
int subject_subs_from_filter(const subject_map *m, const uint8_t *filter, size_t len,
                             subject_subs *subs);

/* The NATS queue group of a shared subscription's group name (the
 * <group> of $share/<group>/<filter>): the name escaped as one level is,
 * so it holds no whitespace, '.', '*' or '>'. Written to out (NUL-terminated)
 * with its length returned; 0 if the name is empty or does not fit. */
size_t subject_queue_group(const uint8_t *name, size_t len, char *out, size_t cap);
/* The bytes of a token subject_queue_group wrote (a group name, or a
 * client id as the sessions' KV key: kv_sess.h), into out (not
 * NUL-terminated), and their length; 0 if it is not such a token or does
 * not fit in cap. */
size_t subject_token_decode(const char *t, size_t n, uint8_t *out, size_t cap);

#endif
