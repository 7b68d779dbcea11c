/* fuzz_subject.c - libFuzzer target for the MQTT <-> NATS subject mapping
 * (cluster/subject.c).
 *
 * The first input byte says where to split the rest into a filter and a
 * topic, as in fuzz_mqtt_topic.c. Checks: a valid topic's subject decodes
 * back to it; any bytes decoded as a subject either fail or give a topic
 * whose subject is exactly those bytes (the mapping is a bijection); a
 * valid filter's subscriptions match a valid topic's subject, by NATS's
 * rules, exactly when MQTT's matcher says the filter matches the topic,
 * and never more than one of them does; a topic's subject goes to the
 * stream's class and back unchanged. Any broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "../unit/nats_match.h"
#include "cluster/subject.h"
#include "fuzz_check.h"
#include "mqtt/mqtt_topic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static subject_map M;
static char subj[SUBJECT_MAX + 1], again[SUBJECT_MAX + 1];
static uint8_t topic[SUBJECT_MAX];

/* The bytes as a subject: decoding must not crash and must be the inverse
 * of encoding. Copied to an exact-size buffer so that ASan sees any read
 * past its end. */
static void check_decode(const uint8_t *data, size_t len)
{
    char *s = malloc(len ? len : 1);
    memcpy(s, data, len);
    size_t tn = subject_to_topic(&M, s, len, topic, sizeof topic);
    if (tn > 0) {
        check(mqtt_topic_name_valid(topic, tn));
        size_t n = subject_from_topic(&M, topic, tn, again, sizeof again);
        check(n == len && memcmp(again, s, len) == 0);
    }
    free(s);
}

/* Encodes a topic (or fails to, if it is not one) and decodes it back;
 * leaves its subject in subj and returns its length (0 if none). */
static size_t check_round_trip(const uint8_t *t, size_t len)
{
    size_t n = subject_from_topic(&M, t, len, subj, sizeof subj);
    if (!mqtt_topic_name_valid(t, len)) {
        check(n == 0);
        return 0;
    }
    /* Only too long a subject may fail: at most 3 bytes per topic byte. */
    check(n > 0 || M.prefix_len + 3 + 3 * len > SUBJECT_MAX);
    if (n == 0)
        return 0;
    check(strlen(subj) == n && !strchr(subj, '*') && !strchr(subj, '>') && !strchr(subj, ' '));
    uint8_t *back = malloc(len);
    check(subject_to_topic(&M, subj, n, back, len) == len && memcmp(back, t, len) == 0);
    free(back);
    /* And through the QoS 1/2 stream's class, the same subject again. */
    char js[SUBJECT_MAX + 3], core[SUBJECT_MAX + 1];
    check(subject_to_stream(&M, subj, n, js, sizeof js) == n + 2);
    check(subject_from_stream(&M, js, n + 2, core, sizeof core) == n && strcmp(core, subj) == 0);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (M.prefix_len == 0 && subject_map_init(&M, "mqtt") != 0)
        abort();
    if (size == 0)
        return 0;
    check_decode(data + 1, size - 1);
    size_t split = data[0] < size ? data[0] : size - 1;
    const uint8_t *f = data + 1, *t = data + 1 + split;
    size_t flen = split, tlen = size - 1 - split;
    check_decode(t, tlen);

    size_t n = check_round_trip(t, tlen);
    subject_subs subs;
    int r = subject_subs_from_filter(&M, f, flen, &subs);
    if (!mqtt_topic_filter_valid(f, flen)) {
        check(r == -1);
        return 0;
    }
    if (r != 0 || n == 0)
        return 0; /* too long */
    int hits = 0;
    for (int i = 0; i < subs.n; i++)
        hits += nats_match(subs.subj[i], subj);
    check(hits <= 1);
    check((hits == 1) == mqtt_topic_match(f, flen, t, tlen));
    return 0;
}
