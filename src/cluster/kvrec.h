/* kvrec.h - the value of a retained message in the cluster's KV bucket
 * (docs/cluster.md, "Retained messages"): a small versioned binary record
 * of what a retained message keeps, so that any node, started before or
 * after the publish, rebuilds the same message.
 *
 * Layout (version 1, integers big-endian):
 *   1 byte   version (KVREC_VERSION)
 *   1 byte   QoS it was published with (0..2)
 *   8 bytes  Message Expiry as an absolute deadline, milliseconds since
 *            the Unix epoch; 0 = never (an interval would restart on
 *            every node that reads it)
 *   n bytes  the MQTT 5 properties retained messages keep (payload format,
 *            content type, response topic, correlation data, user
 *            properties), as a PUBLISH property block: Property Length
 *            varint, then the properties (an empty block is one 0 byte)
 *   rest     the payload
 *
 * A reader refuses another version rather than guess: a node of an older
 * build then does not see a newer record (logged), it does not misread it.
 */
#ifndef SHOOTOUT_CLUSTER_KVREC_H
#define SHOOTOUT_CLUSTER_KVREC_H

#include <stddef.h>
#include <stdint.h>

#include "mqtt/mqtt_props.h"

#define KVREC_VERSION 1
/* Version, QoS and deadline: the bytes before the property block. */
#define KVREC_HEAD 10

struct kvrec {
    uint8_t qos;
    uint64_t deadline_ms; /* Unix time; 0 = never expires */
    /* Encoding: the property bytes without their length (as struct msg
     * stores them). Decoding: the same bytes, pointing into the record. */
    const uint8_t *props;
    uint32_t props_len;
    const uint8_t *payload;
    size_t payload_len;
};

/* Bytes kvrec_encode writes for r. */
size_t kvrec_size(const struct kvrec *r);
/* Writes r to out (kvrec_size(r) bytes); returns that size. */
size_t kvrec_encode(uint8_t *out, const struct kvrec *r);
/* Reads buf[0..len) into *r (pointing into buf) and its properties into
 * *props (Message Expiry, Topic Alias and Subscription Identifiers are
 * never kept: refused). 0, or -1 for anything kvrec_encode would not
 * have written. */
int kvrec_decode(const uint8_t *buf, size_t len, struct kvrec *r, struct mqtt_props *props);

#endif
