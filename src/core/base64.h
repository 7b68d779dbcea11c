/* base64.h - standard base64 (RFC 4648 section 4, with '=' padding), as
 * Mosquitto password files and the WebSocket handshake use it.
 *
 * A thin, strict layer over OpenSSL's block coder: decoding refuses
 * whitespace, missing or misplaced padding and lengths that are not a
 * multiple of four, so that one spelling of each value is accepted.
 */
#ifndef SHOOTOUT_BASE64_H
#define SHOOTOUT_BASE64_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Characters base64_encode() writes for n input bytes, without the NUL. */
#define BASE64_ENCODED_LEN(n) ((((n) + 2) / 3) * 4)

/* Encodes in[0..len) into out, which must hold BASE64_ENCODED_LEN(len) + 1
 * bytes; out is NUL-terminated. Returns the encoded length. */
size_t base64_encode(char *out, const uint8_t *in, size_t len);

/* Decodes in[0..len) into out (room for cap bytes). Returns the decoded
 * length, or -1 if in is not canonical padded base64 or does not fit. */
ssize_t base64_decode(uint8_t *out, size_t cap, const char *in, size_t len);

#endif
