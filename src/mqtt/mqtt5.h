/* mqtt5.h - MQTT 5.0 packet codec: the v5 forms of every packet (variable
 * header, properties, payload), decoded and encoded, for the broker and the
 * load generator once they speak MQTT 5 (issue 4).
 *
 * It follows mqtt_codec's contract: nothing allocates or copies, decoded
 * structs point into the caller's buffer (which must outlive them), every
 * decoder validates the whole body, and every encoder writes exactly the
 * matching *_size() bytes, fixed header included. Property blocks go through
 * mqtt_props; strings and topics through mqtt_topic.
 *
 * PINGREQ and PINGRESP are the same in both versions: mqtt_encode_empty().
 *
 * Decoders return MQTT_OK or a negative error: an mqtt_err, or one of the
 * mqtt5_err values below. Rules that need connection state (a Topic Alias
 * the connection does not know, an AUTH without the CONNECT's method, No
 * Local on a shared subscription) are the caller's.
 */
#ifndef SHOOTOUT_MQTT5_H
#define SHOOTOUT_MQTT5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_props.h"

#define MQTT5_AUTH 15 /* packet type; reserved in MQTT 3.1.1 */
#define MQTT5_PROTOCOL_LEVEL 5

/* Errors beyond enum mqtt_err; each maps to a Reason Code for DISCONNECT
 * (mqtt5_err_reason). */
enum mqtt5_err {
    MQTT5_E_PROTOCOL_ERROR = -20, /* a rule whose breach is a Protocol Error (0x82):
                                   * properties, empty topic without alias,
                                   * no filters, subscription option 3 */
    MQTT5_E_REASON = -21,         /* reason code not allowed in this packet */
};

/* Short English description of an mqtt_err or mqtt5_err. Never NULL. */
const char *mqtt5_strerror(int err);

/* Reason Codes (2.4). Several codes share a value and mean different things
 * in different packets (0x00 is Success, Normal disconnection or Granted
 * QoS 0); the aliases name them. */
enum mqtt5_reason {
    MQTT5_RC_SUCCESS = 0x00,
    MQTT5_RC_NORMAL_DISCONNECTION = 0x00,
    MQTT5_RC_GRANTED_QOS_0 = 0x00,
    MQTT5_RC_GRANTED_QOS_1 = 0x01,
    MQTT5_RC_GRANTED_QOS_2 = 0x02,
    MQTT5_RC_DISCONNECT_WITH_WILL = 0x04,
    MQTT5_RC_NO_MATCHING_SUBSCRIBERS = 0x10,
    MQTT5_RC_NO_SUBSCRIPTION_EXISTED = 0x11,
    MQTT5_RC_CONTINUE_AUTHENTICATION = 0x18,
    MQTT5_RC_REAUTHENTICATE = 0x19,
    MQTT5_RC_UNSPECIFIED_ERROR = 0x80,
    MQTT5_RC_MALFORMED_PACKET = 0x81,
    MQTT5_RC_PROTOCOL_ERROR = 0x82,
    MQTT5_RC_IMPLEMENTATION_SPECIFIC = 0x83,
    MQTT5_RC_UNSUPPORTED_PROTOCOL_VERSION = 0x84,
    MQTT5_RC_CLIENT_ID_NOT_VALID = 0x85,
    MQTT5_RC_BAD_USERNAME_OR_PASSWORD = 0x86,
    MQTT5_RC_NOT_AUTHORIZED = 0x87,
    MQTT5_RC_SERVER_UNAVAILABLE = 0x88,
    MQTT5_RC_SERVER_BUSY = 0x89,
    MQTT5_RC_BANNED = 0x8A,
    MQTT5_RC_SERVER_SHUTTING_DOWN = 0x8B,
    MQTT5_RC_BAD_AUTHENTICATION_METHOD = 0x8C,
    MQTT5_RC_KEEP_ALIVE_TIMEOUT = 0x8D,
    MQTT5_RC_SESSION_TAKEN_OVER = 0x8E,
    MQTT5_RC_TOPIC_FILTER_INVALID = 0x8F,
    MQTT5_RC_TOPIC_NAME_INVALID = 0x90,
    MQTT5_RC_PACKET_ID_IN_USE = 0x91,
    MQTT5_RC_PACKET_ID_NOT_FOUND = 0x92,
    MQTT5_RC_RECEIVE_MAXIMUM_EXCEEDED = 0x93,
    MQTT5_RC_TOPIC_ALIAS_INVALID = 0x94,
    MQTT5_RC_PACKET_TOO_LARGE = 0x95,
    MQTT5_RC_MESSAGE_RATE_TOO_HIGH = 0x96,
    MQTT5_RC_QUOTA_EXCEEDED = 0x97,
    MQTT5_RC_ADMINISTRATIVE_ACTION = 0x98,
    MQTT5_RC_PAYLOAD_FORMAT_INVALID = 0x99,
    MQTT5_RC_RETAIN_NOT_SUPPORTED = 0x9A,
    MQTT5_RC_QOS_NOT_SUPPORTED = 0x9B,
    MQTT5_RC_USE_ANOTHER_SERVER = 0x9C,
    MQTT5_RC_SERVER_MOVED = 0x9D,
    MQTT5_RC_SHARED_SUBS_NOT_SUPPORTED = 0x9E,
    MQTT5_RC_CONNECTION_RATE_EXCEEDED = 0x9F,
    MQTT5_RC_MAXIMUM_CONNECT_TIME = 0xA0,
    MQTT5_RC_SUBSCRIPTION_IDS_NOT_SUPPORTED = 0xA1,
    MQTT5_RC_WILDCARD_SUBS_NOT_SUPPORTED = 0xA2,
};

/* The spec's name of a reason code ("Success" for 0x00, whatever the
 * packet), or "unknown reason code". Never NULL. */
const char *mqtt5_reason_str(uint8_t rc);

/* The Reason Code to close a connection with after a decoder or framing
 * error: 0x82 Protocol Error for MQTT5_E_PROTOCOL_ERROR and MQTT_E_PACKET_ID,
 * 0x95 Packet too large for MQTT_E_TOO_LARGE, 0x81 Malformed Packet for
 * every other error (0x00 for MQTT_OK). */
uint8_t mqtt5_err_reason(int err);

/* mqtt_frame() for MQTT 5: also admits AUTH (type 15, flags 0) and refuses
 * a Remaining Length that is not minimally encoded [MQTT-1.5.5-1]. */
int mqtt5_frame(const uint8_t *buf, size_t len, uint32_t max_packet, struct mqtt_header *h);

/* ---- CONNECT (3.1) ------------------------------------------------------ */

struct mqtt5_connect {
    uint8_t protocol_level; /* 5 */
    bool clean_start;
    uint16_t keepalive; /* seconds, 0 = off */
    struct mqtt_props props;
    struct mqtt_bytes client_id;
    bool has_will;
    uint8_t will_qos;
    bool will_retain;
    struct mqtt_props will_props;
    struct mqtt_bytes will_topic; /* valid topic name when has_will */
    struct mqtt_bytes will_payload;
    bool has_username; /* unlike 3.1.1, a password may come without one */
    struct mqtt_bytes username;
    bool has_password;
    struct mqtt_bytes password;
};

/* On MQTT_E_VERSION, c->protocol_level holds the level asked for, so a
 * server can answer with 0x84 (or hand a level 3 or 4 CONNECT to
 * mqtt_codec). */
int mqtt5_decode_connect(const uint8_t *body, size_t len, struct mqtt5_connect *c);
size_t mqtt5_connect_size(const struct mqtt5_connect *c);
size_t mqtt5_encode_connect(uint8_t *out, const struct mqtt5_connect *c);

/* ---- CONNACK (3.2) ------------------------------------------------------ */

struct mqtt5_connack {
    bool session_present;
    uint8_t reason;
    struct mqtt_props props;
};

int mqtt5_decode_connack(const uint8_t *body, size_t len, struct mqtt5_connack *c);
size_t mqtt5_connack_size(const struct mqtt5_connack *c);
size_t mqtt5_encode_connack(uint8_t *out, const struct mqtt5_connack *c);

/* ---- PUBLISH (3.3) ------------------------------------------------------ */

struct mqtt5_publish {
    /* A valid topic name, or empty when props carries a Topic Alias: the
     * caller then looks the alias up. */
    struct mqtt_bytes topic;
    struct mqtt_bytes payload;
    uint16_t packet_id; /* 0 for QoS 0, non-zero otherwise */
    uint8_t qos;
    bool retain;
    bool dup;
    struct mqtt_props props;
};

/* flags is the fixed header's low nibble as returned by mqtt5_frame(). */
int mqtt5_decode_publish(const uint8_t *body, size_t len, uint8_t flags, struct mqtt5_publish *p);
size_t mqtt5_publish_size(const struct mqtt5_publish *p);
size_t mqtt5_encode_publish(uint8_t *out, const struct mqtt5_publish *p);

/* ---- PUBACK, PUBREC, PUBREL, PUBCOMP (3.4-3.7) --------------------------- */

struct mqtt5_ack {
    uint16_t packet_id;
    uint8_t reason;
    struct mqtt_props props;
};

/* type is one of the four. Accepts every form the spec allows: Remaining
 * Length 2 (reason 0, no properties), 3 (no properties) or more. */
int mqtt5_decode_ack(enum mqtt_type type, const uint8_t *body, size_t len, struct mqtt5_ack *a);
/* The encoder writes the shortest of those forms that carries a. */
size_t mqtt5_ack_size(const struct mqtt5_ack *a);
size_t mqtt5_encode_ack(uint8_t *out, enum mqtt_type type, const struct mqtt5_ack *a);

/* ---- SUBSCRIBE (3.8), UNSUBSCRIBE (3.10) --------------------------------- */

/* Subscription Options byte (3.8.3.1). */
#define MQTT5_SUB_QOS 0x03
#define MQTT5_SUB_NO_LOCAL 0x04
#define MQTT5_SUB_RETAIN_AS_PUBLISHED 0x08
#define MQTT5_SUB_RETAIN_HANDLING 0x30 /* 0 send, 1 send if new, 2 never */
#define MQTT5_SUB_RETAIN_HANDLING_SHIFT 4

/* The filter list is an mqtt_filters, walked with mqtt_filter_next(), which
 * for SUBSCRIBE returns each entry's whole Subscription Options byte (test
 * it with the MQTT5_SUB_* masks) where MQTT 3.1.1 had the QoS byte. */
struct mqtt5_subscribe {
    struct mqtt_props props;
    struct mqtt_filters filters; /* filters.packet_id is the packet id */
};

/* SUBSCRIBE: every options byte has bits 6-7 zero (else MQTT_E_MALFORMED),
 * QoS 0..2 and Retain Handling 0..2 (else MQTT5_E_PROTOCOL_ERROR). At most
 * one Subscription Identifier (mqtt_props). */
int mqtt5_decode_subscribe(const uint8_t *body, size_t len, struct mqtt5_subscribe *s);
int mqtt5_decode_unsubscribe(const uint8_t *body, size_t len, struct mqtt5_subscribe *s);

/* Encoders take the filters and, for SUBSCRIBE, one options byte each. */
size_t mqtt5_subscribe_size(const struct mqtt_props *props, const struct mqtt_bytes *filters,
                            unsigned n);
size_t mqtt5_encode_subscribe(uint8_t *out, uint16_t packet_id, const struct mqtt_props *props,
                              const struct mqtt_bytes *filters, const uint8_t *options,
                              unsigned n);
size_t mqtt5_unsubscribe_size(const struct mqtt_props *props, const struct mqtt_bytes *filters,
                              unsigned n);
size_t mqtt5_encode_unsubscribe(uint8_t *out, uint16_t packet_id, const struct mqtt_props *props,
                                const struct mqtt_bytes *filters, unsigned n);

/* ---- SUBACK (3.9), UNSUBACK (3.11) --------------------------------------- */

struct mqtt5_suback {
    uint16_t packet_id;
    struct mqtt_props props;
    const uint8_t *codes; /* one reason code per filter */
    unsigned count;       /* >= 1 */
};

/* type is MQTT_SUBACK or MQTT_UNSUBACK; each has its own reason codes. */
int mqtt5_decode_suback(enum mqtt_type type, const uint8_t *body, size_t len,
                        struct mqtt5_suback *s);
size_t mqtt5_suback_size(const struct mqtt5_suback *s);
size_t mqtt5_encode_suback(uint8_t *out, enum mqtt_type type, const struct mqtt5_suback *s);

/* ---- DISCONNECT (3.14), AUTH (3.15) -------------------------------------- */

/* Both are a reason code and properties, omitted when the reason is 0 and
 * there are no properties (Remaining Length 0). */
struct mqtt5_reason_props {
    uint8_t reason;
    struct mqtt_props props;
};

/* type is MQTT_DISCONNECT or MQTT5_AUTH. Remaining Length 1 (a reason, no
 * properties) is accepted for both, as the spec defines it for DISCONNECT. */
int mqtt5_decode_reason_props(uint8_t type, const uint8_t *body, size_t len,
                              struct mqtt5_reason_props *r);
/* Writes Remaining Length 0 when it can; otherwise DISCONNECT drops an
 * empty property block and AUTH, whose section defines no such form, keeps
 * it. */
size_t mqtt5_reason_props_size(uint8_t type, const struct mqtt5_reason_props *r);
size_t mqtt5_encode_reason_props(uint8_t *out, uint8_t type, const struct mqtt5_reason_props *r);

#endif
