/* mqtt_props.h - MQTT 5.0 property codec (OASIS MQTT 5.0, section 2.2.2):
 * decodes and validates the Properties block of any MQTT 5 packet, and
 * encodes one. Groundwork for MQTT 5 support (issue 4).
 *
 * Like mqtt_codec, nothing here allocates or copies: decoded strings and
 * binary data point into the caller's buffer, which must outlive the struct.
 * The repeatable properties (User Property, and Subscription Identifier in
 * PUBLISH) are kept as a byte range of the decoded block and walked with an
 * iterator, so a block of any size decodes into a fixed-size struct.
 *
 * Decoding checks everything the specification lets a receiver check from the
 * block alone: identifier known and allowed in the packet, value well formed,
 * no duplicates of single-use properties, and the mandated value ranges.
 * Rules that need connection state (a Topic Alias of 0 or above the negotiated
 * maximum, which the receiver answers with DISCONNECT 0x94 rather than the
 * 0x82 of a value the block alone rules out, a Subscription Identifier in a PUBLISH sent by a client, the
 * Authentication Method an AUTH packet must carry) are the caller's.
 */
#ifndef SHOOTOUT_MQTT_PROPS_H
#define SHOOTOUT_MQTT_PROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqtt/mqtt_codec.h"

/* Where a property block sits: an enum mqtt_type value, or one of these two,
 * which MQTT 3.1.1's enum lacks. */
#define MQTT_PROPS_AUTH 15 /* the MQTT 5 AUTH packet */
#define MQTT_PROPS_WILL 16 /* Will Properties inside a CONNECT payload */

/* Results are MQTT 5 reason codes, so the caller can put one straight into a
 * CONNACK or DISCONNECT. */
enum mqtt_props_err {
    MQTT_PROPS_OK = 0x00,
    MQTT_PROPS_E_MALFORMED = 0x81, /* truncated, unknown or misplaced, bad UTF-8 */
    MQTT_PROPS_E_PROTOCOL = 0x82,  /* duplicate, or a value the spec forbids */
};

/* Short English description of a result, for logs. Never NULL. */
const char *mqtt_props_strerror(int err);

enum mqtt_prop_id {
    MQTT_PROP_PAYLOAD_FORMAT = 0x01,           /* byte 0/1 */
    MQTT_PROP_MESSAGE_EXPIRY = 0x02,           /* four-byte integer */
    MQTT_PROP_CONTENT_TYPE = 0x03,             /* UTF-8 string */
    MQTT_PROP_RESPONSE_TOPIC = 0x08,           /* UTF-8 topic name */
    MQTT_PROP_CORRELATION_DATA = 0x09,         /* binary data */
    MQTT_PROP_SUBSCRIPTION_ID = 0x0B,          /* variable byte integer 1.. */
    MQTT_PROP_SESSION_EXPIRY = 0x11,           /* four-byte integer */
    MQTT_PROP_ASSIGNED_CLIENT_ID = 0x12,       /* UTF-8 string */
    MQTT_PROP_SERVER_KEEP_ALIVE = 0x13,        /* two-byte integer */
    MQTT_PROP_AUTH_METHOD = 0x15,              /* UTF-8 string */
    MQTT_PROP_AUTH_DATA = 0x16,                /* binary data */
    MQTT_PROP_REQUEST_PROBLEM_INFO = 0x17,     /* byte 0/1 */
    MQTT_PROP_WILL_DELAY = 0x18,               /* four-byte integer */
    MQTT_PROP_REQUEST_RESPONSE_INFO = 0x19,    /* byte 0/1 */
    MQTT_PROP_RESPONSE_INFO = 0x1A,            /* UTF-8 string */
    MQTT_PROP_SERVER_REFERENCE = 0x1C,         /* UTF-8 string */
    MQTT_PROP_REASON_STRING = 0x1F,            /* UTF-8 string */
    MQTT_PROP_RECEIVE_MAX = 0x21,              /* two-byte integer 1.. */
    MQTT_PROP_TOPIC_ALIAS_MAX = 0x22,          /* two-byte integer */
    MQTT_PROP_TOPIC_ALIAS = 0x23,              /* two-byte integer; 0 is the caller's */
    MQTT_PROP_MAX_QOS = 0x24,                  /* byte 0/1 */
    MQTT_PROP_RETAIN_AVAILABLE = 0x25,         /* byte 0/1 */
    MQTT_PROP_USER = 0x26,                     /* UTF-8 string pair */
    MQTT_PROP_MAX_PACKET_SIZE = 0x27,          /* four-byte integer 1.. */
    MQTT_PROP_WILDCARD_SUB_AVAILABLE = 0x28,   /* byte 0/1 */
    MQTT_PROP_SUBSCRIPTION_ID_AVAILABLE = 0x29, /* byte 0/1 */
    MQTT_PROP_SHARED_SUB_AVAILABLE = 0x2A,     /* byte 0/1 */
};
#define MQTT_PROP_LAST 0x2A

#define MQTT_PROP_BIT(id) (UINT64_C(1) << (id))

struct mqtt_user_prop {
    struct mqtt_bytes name, value;
};

/* A property block. A property is there (decoded, or to be encoded) exactly
 * when its MQTT_PROP_BIT is in `present`; the field of an absent one is 0. */
struct mqtt_props {
    uint64_t present;

    uint8_t payload_format;
    uint32_t message_expiry;
    struct mqtt_bytes content_type;
    struct mqtt_bytes response_topic;
    struct mqtt_bytes correlation_data;
    uint32_t session_expiry;
    struct mqtt_bytes assigned_client_id;
    uint16_t server_keep_alive;
    struct mqtt_bytes auth_method;
    struct mqtt_bytes auth_data;
    uint8_t request_problem_info;
    uint32_t will_delay;
    uint8_t request_response_info;
    struct mqtt_bytes response_info;
    struct mqtt_bytes server_reference;
    struct mqtt_bytes reason_string;
    uint16_t receive_max;
    uint16_t topic_alias_max;
    uint16_t topic_alias;
    uint8_t max_qos;
    uint8_t retain_available;
    uint32_t max_packet_size;
    uint8_t wildcard_sub_available;
    uint8_t subscription_id_available;
    uint8_t shared_sub_available;

    /* Repeatable properties, in their order on the wire. The decoder sets
     * the count and the raw range (from the first occurrence's identifier to
     * the end of the last one, other properties possibly between) and leaves
     * the list NULL. To encode new ones, set count and list instead; a list,
     * when set, wins over the raw range. Either way, walk them with the
     * iterators below. */
    uint32_t user_count;
    struct mqtt_bytes user_raw;
    const struct mqtt_user_prop *user_list;
    uint32_t subid_count;
    struct mqtt_bytes subid_raw;
    const uint32_t *subid_list;
};

/* Decodes the Property Length and the properties that follow it at the start
 * of buf[0..len), for the packet given by `packet` (enum mqtt_type,
 * MQTT_PROPS_AUTH or MQTT_PROPS_WILL). On MQTT_PROPS_OK, *out holds the
 * properties and *consumed the bytes used (length varint included); bytes
 * after them are left alone, as the rest of the packet follows. On an error
 * *out is unspecified and *consumed untouched. A packet that carries no
 * properties (PINGREQ, or any value not named above) accepts only an empty
 * block. */
int mqtt_props_decode(const uint8_t *buf, size_t len, uint8_t packet, struct mqtt_props *out,
                      size_t *consumed);

/* Bytes mqtt_props_encode() writes for p: the Property Length varint plus
 * the properties. p must hold values the decoder would accept (strings up
 * to 65535 bytes, Subscription Identifiers up to MQTT_MAX_REMAINING). */
size_t mqtt_props_size(const struct mqtt_props *p);

/* Writes p in ascending identifier order, repeatable properties in their
 * list or wire order. Returns mqtt_props_size(p). */
size_t mqtt_props_encode(uint8_t *out, const struct mqtt_props *p);

/* Iterator over one kind of repeatable property; the props struct (and the
 * buffer it points into) must outlive it. */
struct mqtt_props_iter {
    const uint8_t *pos, *end; /* raw range still to walk */
    const void *list;         /* or the caller's list */
    uint32_t left;            /* occurrences not yet returned */
    uint8_t id;
};

void mqtt_props_users(const struct mqtt_props *p, struct mqtt_props_iter *it);
/* Returns true and fills *up with the next User Property, false at the end. */
bool mqtt_props_next_user(struct mqtt_props_iter *it, struct mqtt_user_prop *up);

void mqtt_props_subids(const struct mqtt_props *p, struct mqtt_props_iter *it);
bool mqtt_props_next_subid(struct mqtt_props_iter *it, uint32_t *id);

#endif
