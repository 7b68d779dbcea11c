/* hdr.h - the NATS headers that carry a PUBLISH's RETAIN flag and its
 * MQTT 5 properties from one broker node to the others (docs/cluster.md,
 * "A node"), so that a subscriber on another node sees what one on the
 * publisher's node sees.
 *
 * One header per property, readable with `nats sub`:
 *
 *   Mqtt-Retain          "1" (absent: 0)
 *   Mqtt-Expiry          the Message Expiry Interval left, decimal seconds
 *   Mqtt-Format          Payload Format Indicator, "0" or "1"
 *   Mqtt-Content-Type    percent-encoded UTF-8
 *   Mqtt-Response-Topic  percent-encoded topic name
 *   Mqtt-Correlation     correlation data, base64 (core/base64.h; "=" alone
 *                        for empty data, as a header value cannot be empty)
 *   Mqtt-User            one per User Property, in order (NATS keeps the
 *                        order of a header's values): percent-encoded name,
 *                        ':', percent-encoded value
 *
 * Percent-encoding writes the printable ASCII bytes 0x21..0x7E other than
 * '%' and ':' as they are and every other byte (space, controls, CR and
 * LF, which would end a header line, '%', ':', every byte of a non-ASCII
 * character) as '%' and two upper-case hex digits; an empty string is
 * written "%" alone, as a header value cannot be empty. Decoding takes only
 * that spelling, so encoding and decoding are inverse both ways.
 *
 * Subscription Identifiers and Topic Aliases are not carried: they belong
 * to the receiving subscription and connection.
 *
 * A node reads headers from any publisher on its prefix: a header that is
 * malformed, out of range, or a second copy of a single one is ignored
 * and counted, never fatal; the rest of the message is delivered.
 *
 * No libnats here: the caller hands headers over as name/value strings, so
 * the unit tests and the fuzz target exercise this without a server.
 */
#ifndef SHOOTOUT_CLUSTER_HDR_H
#define SHOOTOUT_CLUSTER_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqtt/mqtt_props.h"

#define HDR_RETAIN "Mqtt-Retain"
#define HDR_EXPIRY "Mqtt-Expiry"
#define HDR_FORMAT "Mqtt-Format"
#define HDR_CONTENT_TYPE "Mqtt-Content-Type"
#define HDR_RESPONSE_TOPIC "Mqtt-Response-Topic"
#define HDR_CORRELATION "Mqtt-Correlation"
#define HDR_USER "Mqtt-User"

/* Receives one header; false stops hdr_encode (the NATS message could not
 * take it). */
typedef bool (*hdr_put_fn)(void *ctx, const char *name, const char *value);

/* Calls put for each header of retain and the carried properties of props
 * (NULL: none), its Message Expiry Interval being what is left of it.
 * Returns false if a put did. */
bool hdr_encode(const struct mqtt_props *props, bool retain, hdr_put_fn put, void *ctx);

/* A byte range of struct hdr_in's buffer. */
struct hdr_span {
    uint32_t off, len;
};

/* What a message's headers said, built by hdr_in_add and read after
 * hdr_in_end. */
struct hdr_in {
    struct mqtt_props props; /* after hdr_in_end; strings point into buf */
    bool retain;
    uint32_t bad; /* headers ignored */
    /* Private: decoded bytes, and where each string is in them. */
    uint8_t *buf;
    size_t len, cap;
    struct hdr_span content_type, response_topic, correlation;
    struct hdr_span *users; /* name, value, name, value, ... */
    uint32_t nusers, users_cap;
    struct mqtt_user_prop *user_list;
};

void hdr_in_init(struct hdr_in *h);
/* One header of the message (any name: those not ours are skipped). A
 * header repeated is added once per value, in order. */
void hdr_in_add(struct hdr_in *h, const char *name, const char *value);
/* The properties, valid until hdr_in_free; NULL if there are none. */
const struct mqtt_props *hdr_in_end(struct hdr_in *h);
void hdr_in_free(struct hdr_in *h);

#endif
