/* msg.h - an application message as the broker holds it, in a single
 * reference-counted allocation shared by every subscriber queue, inflight
 * window and the retained store that holds it, and written to sockets
 * straight from it.
 *
 * The allocation holds the MQTT 3.1.1 QoS 0 PUBLISH packet (enc[]) and,
 * after it, the message's MQTT 5 properties already encoded (those that
 * pass through unchanged to subscribers: payload format, content type,
 * response topic, correlation data, user properties). An MQTT 3.1.1
 * subscriber gets enc[] (copied whole at QoS 0, its head rebuilt at QoS
 * 1/2). The MQTT 5 QoS 0 packet is built once, when the first MQTT 5
 * subscriber needs it (enc5), and shared the same way by every MQTT 5
 * copy that adds nothing of its own; a copy with a topic alias,
 * subscription identifiers or a remaining expiry gets a head built for it
 * (topic or alias, packet id, property length, its properties, then the
 * stored ones) followed by the payload from enc[]. Large payloads are
 * referenced, never copied, in every case.
 */
#ifndef SHOOTOUT_MSG_H
#define SHOOTOUT_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/outq.h"

struct mqtt_props;

struct msg {
    struct outq_rc rc;    /* first: outq shares msg->enc through it */
    uint32_t enc_len;     /* bytes of enc[] */
    uint32_t payload_len;
    uint32_t props_len;   /* MQTT 5 properties at enc + enc_len, length excluded */
    uint16_t topic_len;
    uint8_t hdr_len;      /* fixed header bytes at the start of enc[] */
    uint8_t qos;          /* QoS it was published with */
    uint64_t expires_ms;  /* loop time its Message Expiry Interval ends; 0 = never */
    uint8_t *enc5;        /* owned: the MQTT 5 QoS 0 encoding, once a subscriber needed it */
    uint32_t enc5_len;
    uint8_t hdr5_len;
    bool retain;          /* RETAIN flag it was published with */
    uint64_t plog_id;     /* persist.c: its id in the log; 0 = not stored */
    union {
        struct msg_pool *pool; /* live: the loop's pool it came from; NULL: malloc'd alone */
        struct msg *next;      /* released into a pool: the next block of its list */
    };
    uint8_t enc[];        /* 0x30, Remaining Length, topic length, topic, payload */
};

/* New message with one reference. topic_len <= 65535 (the codec ensures).
 * props (NULL from an MQTT 3.1.1 publisher) are the PUBLISH or will
 * properties it came with: the passing-through ones are kept, and a Message
 * Expiry Interval counts from now_ms. */
struct msg *msg_new(const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                    size_t payload_len, uint8_t qos, bool retain, const struct mqtt_props *props,
                    uint64_t now_ms);

static inline struct msg *msg_ref(struct msg *m)
{
    outq_rc_get(&m->rc);
    return m;
}
static inline void msg_unref(struct msg *m) { outq_rc_put(&m->rc); }
/* Before m reaches another thread (another loop, the retained store with
 * several loops): its count becomes atomic and its lazily built MQTT 5
 * encoding safe to build from any thread. */
void msg_share(struct msg *m);

/* A loop's recycled message blocks, with more than one loop (docs/broker.md,
 * "Threads"). A small message routed to another loop is mostly released
 * there; freed there, glibc would keep it in that thread's cache while the
 * publisher's loop mallocs the next from its arena, both slow paths. In a
 * pool it goes back to the loop that made it (one atomic push), whose next
 * msg_new takes it. */
struct msg_pool {
    struct msg *free;     /* released on this loop */
    uint32_t nfree;
    struct msg *stash;    /* taken from `returned`, used first */
    struct msg *returned; /* released on other loops (atomic) */
};
/* The calling thread, a loop's, makes its messages from p and releases
 * those of any pool into their own. */
void msg_pool_enter(struct msg_pool *p);
/* Frees p's blocks, when no loop runs any more; the calling thread leaves
 * p, and its later releases free. */
void msg_pool_fini(struct msg_pool *p);

static inline const uint8_t *msg_topic(const struct msg *m) { return m->enc + m->hdr_len + 2; }
static inline const uint8_t *msg_payload(const struct msg *m)
{
    return msg_topic(m) + m->topic_len;
}
static inline const uint8_t *msg_props(const struct msg *m) { return m->enc + m->enc_len; }
static inline bool msg_expired(const struct msg *m, uint64_t now_ms)
{
    return m->expires_ms && now_ms >= m->expires_ms;
}

/* Properties as struct msg stores them (encoded, without their length:
 * msg_props(), or a log record's copy) decoded into *out, whose strings
 * point into *buf, for the caller to free. False, with *buf NULL, if there
 * are none or they do not decode. */
bool msg_props_decode(const uint8_t *props, uint32_t len, struct mqtt_props *out, uint8_t **buf);

/* Appends an MQTT 3.1.1 PUBLISH of m to q at the given QoS, packet id
 * (ignored for QoS 0), DUP and RETAIN flags. Small messages are copied;
 * large payloads are shared, not copied. */
void msg_write_publish(struct msg *m, struct outq *q, uint8_t qos, uint16_t packet_id, bool dup,
                       bool retain);

/* What one MQTT 5 subscriber's copy adds to the stored message. */
struct msg_copy5 {
    uint16_t topic_alias; /* 0: none */
    bool alias_only;      /* the client knows the alias: the topic is left out */
    /* Subscription Identifiers (several when overlapping subscriptions
     * share this one copy, MQTT 5 3.3.4); nsub_ids 0: none. */
    const uint32_t *sub_ids;
    uint32_t nsub_ids;
    uint64_t now_ms;      /* for the remaining Message Expiry Interval */
};

/* Size of the MQTT 5 PUBLISH msg_write_publish5 would write. */
size_t msg_publish5_size(const struct msg *m, uint8_t qos, const struct msg_copy5 *x);
/* Appends an MQTT 5 PUBLISH of m to q, as msg_write_publish. */
void msg_write_publish5(struct msg *m, struct outq *q, uint8_t qos, uint16_t packet_id, bool dup,
                        bool retain, const struct msg_copy5 *x);

#endif
