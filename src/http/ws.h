/* ws.h - the server side of WebSocket (RFC 6455) for MQTT over WebSockets:
 * the opening handshake and a frame codec. Pure: no I/O, no allocation.
 *
 * Handshake: parse the request head with http1_parse_request(), then
 * ws_upgrade_check() validates it as a version 13 upgrade and picks the
 * subprotocol ("mqtt", or "mqttv3.1" for old clients); ws_upgrade_response()
 * writes the 101 answer, ws_upgrade_refusal() the error answer.
 *
 * Frames: a struct ws_decoder is fed whatever bytes arrived, in any split,
 * and unmasks the payload of binary data frames into the caller's buffer
 * (or in place) as one byte stream, which is what MQTT over WebSockets
 * needs: MQTT packets may span frames and frames may hold several packets.
 * Control frames (ping, pong, close) are collected whole and handed back
 * one at a time. Text frames are refused, as MQTT requires (MQTT 5.0
 * section 6). Frames the server sends are unmasked (ws_frame_header()).
 */
#ifndef SHOOTOUT_WS_H
#define SHOOTOUT_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http1.h"

/* ---- opening handshake ---- */

#define WS_ACCEPT_LEN 28 /* base64 of a SHA-1 */

enum ws_upgrade_err {
    WS_UPGRADE_E_METHOD = -1,     /* 405: not GET */
    WS_UPGRADE_E_HTTP = -2,       /* 400: HTTP/1.0 */
    WS_UPGRADE_E_UPGRADE = -3,    /* 400: no "Upgrade: websocket" */
    WS_UPGRADE_E_CONNECTION = -4, /* 400: no "Connection: upgrade" */
    WS_UPGRADE_E_VERSION = -5,    /* 426: Sec-WebSocket-Version missing or not 13 */
    WS_UPGRADE_E_KEY = -6,        /* 400: Sec-WebSocket-Key missing, repeated, or not 16 bytes */
    WS_UPGRADE_E_PROTOCOL = -7,   /* 400: subprotocols offered, none of them MQTT */
};

struct ws_upgrade {
    char accept[WS_ACCEPT_LEN + 1]; /* Sec-WebSocket-Accept value */
    const char *protocol;           /* "mqtt", "mqttv3.1", or NULL if none was offered */
};

/* Checks a parsed request head (req and its headers[0..num_headers), from
 * http1_parse_request()) as a WebSocket upgrade. Returns 0 and fills *out,
 * or a negative ws_upgrade_err. The request path is not checked. */
int ws_upgrade_check(const struct http1_request *req, const struct http1_header *headers,
                     size_t num_headers, struct ws_upgrade *out);

/* Sec-WebSocket-Accept for key[0..len): base64(SHA-1(key GUID)). */
void ws_accept_key(const char *key, size_t len, char out[WS_ACCEPT_LEN + 1]);

/* Writes the 101 response for u into buf; returns its length, or 0 if cap
 * is too small (WS_UPGRADE_RESPONSE_MAX always suffices). */
#define WS_UPGRADE_RESPONSE_MAX 192
size_t ws_upgrade_response(const struct ws_upgrade *u, char *buf, size_t cap);

/* The complete HTTP response refusing an upgrade that failed with err
 * (a ws_upgrade_err); the connection is to be closed after it. */
const char *ws_upgrade_refusal(int err);

/* ---- frames ---- */

enum ws_opcode {
    WS_OP_CONTINUATION = 0x0,
    WS_OP_TEXT = 0x1,
    WS_OP_BINARY = 0x2,
    WS_OP_CLOSE = 0x8,
    WS_OP_PING = 0x9,
    WS_OP_PONG = 0xa,
};

#define WS_CONTROL_MAX 125

/* Distinct from the ws_upgrade_err values, so ws_strerror() takes both. */
enum ws_frame_err {
    WS_E_RESERVED_BITS = -21, /* RSV1-3 set, but no extension was agreed */
    WS_E_OPCODE = -22,        /* reserved opcode */
    WS_E_UNMASKED = -23,      /* a client frame without a mask */
    WS_E_CONTROL = -24,       /* control frame fragmented or longer than 125 */
    WS_E_CONTINUATION = -25,  /* continuation with no message open */
    WS_E_INTERLEAVED = -26,   /* new data message before the last one ended */
    WS_E_LENGTH = -27,        /* 64-bit length with the top bit set */
    WS_E_TOO_LARGE = -28,     /* message longer than the decoder's limit */
    WS_E_TEXT = -29,          /* text frame; MQTT travels in binary frames */
    WS_E_CLOSE_PAYLOAD = -30 /* close frame with a bad length, code or reason */
};

/* Answers from ws_decode() that are not errors. */
enum ws_decode_result {
    WS_DECODE_MORE = 0,    /* every byte offered was used */
    WS_DECODE_CONTROL = 1, /* a control frame is complete; see control_* */
};

struct ws_decoder {
    /* The last complete control frame, valid after WS_DECODE_CONTROL. */
    enum ws_opcode control_op;
    uint8_t control[WS_CONTROL_MAX];
    size_t control_len;
    /* Private. */
    uint64_t max_message, message_len, payload_left;
    uint8_t hdr[14], hdr_len, mask[4], mask_pos, opcode;
    bool in_payload, in_message;
    int error;
};

/* max_message bounds a data message, all its fragments together. */
void ws_decoder_init(struct ws_decoder *d, uint64_t max_message);

/* Decodes in[0..len). Payload bytes of data frames are unmasked into out,
 * which has room for len bytes and may be in itself (output never runs
 * ahead of input); *out_len is set to how many. *used is set to the input
 * bytes consumed.
 *
 * Returns WS_DECODE_MORE when all len bytes were used, WS_DECODE_CONTROL
 * when a control frame ended at in[*used - 1] (call again with the rest),
 * or a negative ws_frame_err, which every later call returns again. After
 * a close frame the peer may send nothing more; the caller answers it and
 * stops reading. */
int ws_decode(struct ws_decoder *d, const uint8_t *in, size_t len, uint8_t *out,
              size_t *out_len, size_t *used);

/* The status code of the close frame in d->control: 1005 ("no status")
 * when it has no payload. */
uint16_t ws_close_code(const struct ws_decoder *d);

/* The status code to close the connection with after error err. */
uint16_t ws_error_close_code(int err);

/* Short English description of a ws_upgrade_err or ws_frame_err. */
const char *ws_strerror(int err);

/* Writes the header of one unmasked final frame with opcode op and len
 * payload bytes; returns its length (2, 4 or 10). */
#define WS_HEADER_MAX 10
size_t ws_frame_header(uint8_t out[WS_HEADER_MAX], enum ws_opcode op, uint64_t len);

/* Writes a whole close frame carrying code; returns its length (4). */
size_t ws_close_frame(uint8_t out[4], uint16_t code);

#endif
