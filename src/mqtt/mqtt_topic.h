/* mqtt_topic.h - the MQTT specification's rules for strings, topic names and
 * topic filters (MQTT 3.1.1 sections 1.5.3 and 4.7), wildcard matching, and
 * the form of MQTT 5's shared subscriptions (4.8.2).
 *
 * Pure functions over byte ranges; nothing here allocates.
 */
#ifndef SHOOTOUT_MQTT_TOPIC_H
#define SHOOTOUT_MQTT_TOPIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Well-formed UTF-8 as MQTT requires: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF, and no U+0000. */
bool mqtt_utf8_valid(const uint8_t *s, size_t len);

/* A topic name (PUBLISH, will topic): at least one byte, valid UTF-8, no
 * '+' or '#'. */
bool mqtt_topic_name_valid(const uint8_t *t, size_t len);

/* A topic filter (SUBSCRIBE, UNSUBSCRIBE): at least one byte, valid UTF-8,
 * '+' only as a whole level, '#' only as the whole last level. */
bool mqtt_topic_filter_valid(const uint8_t *f, size_t len);

/* Does a valid filter match a valid topic name? Implements '+' (one level,
 * possibly empty), '#' (this level and all below, including the parent:
 * "a/#" matches "a"), and the rule that a filter starting with a wildcard
 * does not match a topic starting with '$'. */
bool mqtt_topic_match(const uint8_t *filter, size_t flen, const uint8_t *topic, size_t tlen);

/* A shared subscription's filter, $share/<name>/<filter> (MQTT 5 4.8.2):
 * 1 with *inner_off set to where <filter> starts, 0 if the filter is not
 * a shared one, -1 if it is a malformed one (no name, a name with a
 * wildcard, no filter). */
int mqtt_topic_shared(const uint8_t *filter, size_t len, size_t *inner_off);

/* Splits a topic or filter into levels. Start with *pos = 0; each call
 * stores the next level (possibly empty) in *level and *level_len and returns
 * true, or returns false when the string is exhausted. A string of n '/'
 * has n + 1 levels. */
bool mqtt_topic_next_level(const uint8_t *s, size_t len, size_t *pos, const uint8_t **level,
                           size_t *level_len);

#endif
