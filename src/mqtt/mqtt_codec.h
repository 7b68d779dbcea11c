/* mqtt_codec.h - MQTT 3.1.1 and MQTT 3.1 packet codec: pure encode and
 * decode over byte ranges, used by the broker (server side) and by the load
 * generator (client side). The two versions have the same packets; 3.1
 * differs in the CONNECT's protocol name and in what it does not check
 * (see mqtt31_frame and mqtt_decode_connect).
 *
 * Decoding never allocates and never copies: decoded structs point into the
 * caller's buffer, which must outlive them. Framing is resumable: the caller
 * may offer any prefix of the stream and is told how many bytes one whole
 * packet needs. Every decoder validates the packet completely (flags,
 * lengths, UTF-8, topic rules), so code above the codec only sees packets
 * that are well formed.
 *
 * Encoders write into a caller-supplied buffer whose size the matching
 * *_size() function (or the fixed MQTT_*_LEN constant) gives; they return the
 * number of bytes written.
 */
#ifndef SHOOTOUT_MQTT_CODEC_H
#define SHOOTOUT_MQTT_CODEC_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mqtt_type {
    MQTT_CONNECT = 1,
    MQTT_CONNACK = 2,
    MQTT_PUBLISH = 3,
    MQTT_PUBACK = 4,
    MQTT_PUBREC = 5,
    MQTT_PUBREL = 6,
    MQTT_PUBCOMP = 7,
    MQTT_SUBSCRIBE = 8,
    MQTT_SUBACK = 9,
    MQTT_UNSUBSCRIBE = 10,
    MQTT_UNSUBACK = 11,
    MQTT_PINGREQ = 12,
    MQTT_PINGRESP = 13,
    MQTT_DISCONNECT = 14,
};

/* Errors are negative so that mqtt_frame() can return sizes and errors in
 * one int. MQTT_OK is 0. */
enum mqtt_err {
    MQTT_OK = 0,
    MQTT_E_MALFORMED = -1, /* lengths or structure do not add up */
    MQTT_E_FLAGS = -2,     /* reserved fixed-header or CONNECT flag bits */
    MQTT_E_TYPE = -3,      /* reserved packet type 0 or 15 */
    MQTT_E_TOO_LARGE = -4, /* packet exceeds the caller's maximum */
    MQTT_E_UTF8 = -5,      /* a string is not valid MQTT UTF-8 */
    MQTT_E_TOPIC = -6,     /* topic name or filter breaks the topic rules */
    MQTT_E_PROTOCOL = -7,  /* CONNECT protocol name is neither "MQTT" nor "MQIsdp" */
    MQTT_E_VERSION = -8,   /* CONNECT protocol level we do not speak */
    MQTT_E_QOS = -9,       /* QoS 3, or a QoS field where none may be */
    MQTT_E_PACKET_ID = -10 /* packet identifier 0 where one is required */
};

/* Short English description of an mqtt_err, for logs. Never NULL. */
const char *mqtt_strerror(int err);

/* A byte string inside some buffer; not NUL-terminated. */
struct mqtt_bytes {
    const uint8_t *ptr;
    size_t len;
};

/* Largest Remaining Length the 4-byte variable integer can carry. */
#define MQTT_MAX_REMAINING 268435455u
/* Fixed header of 1 type byte + at most 4 length bytes. */
#define MQTT_MAX_FIXED_HEADER 5
/* Sizes of the fixed-size packets. */
#define MQTT_CONNACK_LEN 4
#define MQTT_ACK_LEN 4 /* PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK */
#define MQTT_EMPTY_LEN 2 /* PINGREQ, PINGRESP, DISCONNECT */

/* CONNACK return codes (MQTT 3.1.1, 3.2.2.3; MQTT 3.1 has the same six). */
enum mqtt_connack_rc {
    MQTT_CONNACK_ACCEPTED = 0,
    MQTT_CONNACK_BAD_VERSION = 1,
    MQTT_CONNACK_ID_REJECTED = 2,
    MQTT_CONNACK_UNAVAILABLE = 3,
    MQTT_CONNACK_BAD_CREDENTIALS = 4,
    MQTT_CONNACK_NOT_AUTHORIZED = 5,
};

/* SUBACK return code for a refused subscription (MQTT 3.1.1; 3.1 has none:
 * a SUBACK there only grants QoS 0..2). */
#define MQTT_SUBACK_FAILURE 0x80

struct mqtt_header {
    uint8_t type;       /* enum mqtt_type */
    uint8_t flags;      /* low nibble of the first byte */
    uint8_t header_len; /* bytes of fixed header, 2..5 */
    uint32_t body_len;  /* Remaining Length */
};

/* Frames one packet at the start of buf[0..len).
 * Returns the whole packet's size (header_len + body_len, > 0) when it is all
 * in buf, 0 when more bytes are needed, or a negative mqtt_err. The header is
 * filled as soon as the Remaining Length is complete, so a packet larger than
 * max_packet (whole-packet bytes; 0 = no limit beyond the protocol's) is
 * refused with MQTT_E_TOO_LARGE before its body arrives. Checks the type and
 * the fixed-header flags each type requires (0x2 for PUBREL, SUBSCRIBE and
 * UNSUBSCRIBE, 0 for the others, QoS < 3 for PUBLISH). */
int mqtt_frame(const uint8_t *buf, size_t len, uint32_t max_packet, struct mqtt_header *h);
/* mqtt_frame() for the packets of an MQTT 3.1 connection after its CONNECT:
 * the flags are checked for PUBLISH alone (QoS < 3). 3.1 has DUP, QoS and
 * RETAIN bits in every fixed header, means them only in PUBLISH and sets no
 * rule for the others; a retried SUBSCRIBE or PUBREL carries DUP. */
int mqtt31_frame(const uint8_t *buf, size_t len, uint32_t max_packet, struct mqtt_header *h);

/* Variable-length Remaining Length encoding. mqtt_varint_size(v) is 1..4 for
 * v <= MQTT_MAX_REMAINING. mqtt_encode_varint writes that many bytes. */
/* Inline: every PUBLISH the broker takes and every copy it writes sizes
 * and writes one. */
static inline size_t mqtt_varint_size(uint32_t v)
{
    assert(v <= MQTT_MAX_REMAINING);
    return v < 128u ? 1 : v < 16384u ? 2 : v < 2097152u ? 3 : 4;
}

static inline size_t mqtt_encode_varint(uint8_t *out, uint32_t v)
{
    assert(v <= MQTT_MAX_REMAINING);
    size_t n = 0;
    do {
        uint8_t b = v & 0x7F;
        v >>= 7;
        out[n++] = v ? (uint8_t)(b | 0x80) : b;
    } while (v);
    return n;
}
/* Decodes one at buf[0..len). Returns the bytes it took (1..4), 0 when len
 * ends inside it, or MQTT_E_MALFORMED when a fifth byte would follow.
 * *non_minimal tells whether fewer bytes could have held the value (MQTT 5
 * refuses that; MQTT 3.1.1 does not say). */
int mqtt_decode_varint(const uint8_t *buf, size_t len, uint32_t *v, bool *non_minimal);

/* ---- CONNECT ----------------------------------------------------------- */

/* The protocol levels this codec speaks: 3.1's with protocol name "MQIsdp",
 * 3.1.1's with "MQTT". (MQTT 5 is mqtt5.h's.) */
#define MQTT31_PROTOCOL_LEVEL 3
#define MQTT311_PROTOCOL_LEVEL 4

struct mqtt_connect {
    uint8_t protocol_level; /* MQTT311_PROTOCOL_LEVEL or MQTT31_PROTOCOL_LEVEL */
    bool clean_session;
    uint16_t keepalive; /* seconds, 0 = off */
    struct mqtt_bytes client_id;
    bool has_will;
    uint8_t will_qos;
    bool will_retain;
    struct mqtt_bytes will_topic; /* valid topic name when has_will */
    struct mqtt_bytes will_payload;
    bool has_username;
    struct mqtt_bytes username;
    bool has_password;
    struct mqtt_bytes password;
};

/* Decodes a CONNECT body: "MQTT" level 4 or "MQIsdp" level 3 (3.1). On
 * MQTT_E_VERSION, c->protocol_level holds the level the client asked for, so
 * a server can answer CONNACK 1 as the spec requires; on every other error
 * the connection should just be closed. A 3.1 CONNECT is let off what 3.1
 * never required and Mosquitto does not check: the reserved Connect Flags
 * bit, and Will QoS and Will Retain without a Will Flag (read as 0). Client
 * identifier rules are the server's: the codec accepts any length. */
int mqtt_decode_connect(const uint8_t *body, size_t len, struct mqtt_connect *c);
size_t mqtt_connect_size(const struct mqtt_connect *c);
/* Writes the protocol name that goes with c->protocol_level. */
size_t mqtt_encode_connect(uint8_t *out, const struct mqtt_connect *c);

/* ---- CONNACK ------------------------------------------------------------ */

int mqtt_decode_connack(const uint8_t *body, size_t len, bool *session_present, uint8_t *rc);
size_t mqtt_encode_connack(uint8_t *out, bool session_present, uint8_t rc);

/* ---- PUBLISH ------------------------------------------------------------ */

struct mqtt_publish {
    struct mqtt_bytes topic; /* valid topic name: no wildcards, not empty */
    struct mqtt_bytes payload;
    uint16_t packet_id; /* 0 for QoS 0, non-zero otherwise */
    uint8_t qos;
    bool retain;
    bool dup;
};

/* flags is the fixed header's low nibble as returned by mqtt_frame(). */
int mqtt_decode_publish(const uint8_t *body, size_t len, uint8_t flags, struct mqtt_publish *p);
size_t mqtt_publish_size(size_t topic_len, size_t payload_len, uint8_t qos);
size_t mqtt_encode_publish(uint8_t *out, const struct mqtt_publish *p);

/* ---- PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK ------------------------- */

/* Body is exactly a non-zero packet identifier. */
int mqtt_decode_ack(const uint8_t *body, size_t len, uint16_t *packet_id);
/* type is one of the five above; PUBREL gets its mandatory 0x2 flags. */
size_t mqtt_encode_ack(uint8_t *out, enum mqtt_type type, uint16_t packet_id);

/* ---- PINGREQ, PINGRESP, DISCONNECT -------------------------------------- */

/* These have no body; mqtt_frame() has already checked flags, and the
 * caller need only check body_len == 0 (MQTT_E_MALFORMED otherwise). */
size_t mqtt_encode_empty(uint8_t *out, enum mqtt_type type);

/* ---- SUBSCRIBE, UNSUBSCRIBE, SUBACK -------------------------------------- */

/* A validated list of topic filters, each with a requested QoS for
 * SUBSCRIBE. Walk it with mqtt_filter_next(). */
struct mqtt_filters {
    uint16_t packet_id;
    bool with_qos; /* SUBSCRIBE: yes, UNSUBSCRIBE: no */
    const uint8_t *list; /* first entry */
    size_t list_len;
    unsigned count; /* number of entries, >= 1 */
};

struct mqtt_filter_iter {
    const uint8_t *pos, *end;
    bool with_qos;
};

/* Validate a whole SUBSCRIBE / UNSUBSCRIBE body: non-zero packet id, at
 * least one entry, every filter valid UTF-8 and a valid topic filter, every
 * requested QoS byte 0..2 with its upper six bits 0. */
int mqtt_decode_subscribe(const uint8_t *body, size_t len, struct mqtt_filters *f);
int mqtt_decode_unsubscribe(const uint8_t *body, size_t len, struct mqtt_filters *f);

void mqtt_filter_iter_init(struct mqtt_filter_iter *it, const struct mqtt_filters *f);
/* Returns true and fills *filter (and *qos for SUBSCRIBE; 0 otherwise) with
 * the next entry, false at the end. Only valid on a decoded list. */
bool mqtt_filter_next(struct mqtt_filter_iter *it, struct mqtt_bytes *filter, uint8_t *qos);

/* Encoders for the client side; qos is ignored (may be NULL) for
 * UNSUBSCRIBE. */
size_t mqtt_subscribe_size(const struct mqtt_bytes *filters, unsigned n);
size_t mqtt_encode_subscribe(uint8_t *out, uint16_t packet_id, const struct mqtt_bytes *filters,
                             const uint8_t *qos, unsigned n);
size_t mqtt_unsubscribe_size(const struct mqtt_bytes *filters, unsigned n);
size_t mqtt_encode_unsubscribe(uint8_t *out, uint16_t packet_id, const struct mqtt_bytes *filters,
                               unsigned n);

/* SUBACK: packet id then one return code per filter (0, 1, 2 or 0x80). */
struct mqtt_suback {
    uint16_t packet_id;
    const uint8_t *codes;
    unsigned count;
};
int mqtt_decode_suback(const uint8_t *body, size_t len, struct mqtt_suback *s);
size_t mqtt_suback_size(unsigned n);
size_t mqtt_encode_suback(uint8_t *out, uint16_t packet_id, const uint8_t *codes, unsigned n);

#endif
