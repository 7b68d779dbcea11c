/* grpc_frame.h - the pieces of the gRPC wire protocol (grpc/grpc
 * doc/PROTOCOL-HTTP2.md) that need no connection, shared by the server
 * (car_grpc.c) and the client (rpc_grpc.c):
 *
 *   - status codes and their names;
 *   - Length-Prefixed-Message framing: a 1-byte compressed flag, a 4-byte
 *     big-endian length, the message. A resumable reader reassembles
 *     messages from DATA payloads cut anywhere (a message split over many
 *     frames, several messages in one frame) and refuses one longer than
 *     its limit as soon as the 5-byte prefix announces it;
 *   - gzip (grpc-encoding: gzip) of one message with zlib, a fresh
 *     compression context per message as the protocol requires; inflating
 *     is bounded, so a decompression bomb fails with RESOURCE_EXHAUSTED
 *     after allocating at most the limit;
 *   - header values: grpc-timeout, grpc-message percent-encoding,
 *     content-type, grpc-encoding and grpc-accept-encoding.
 *
 * Everything here is a pure function of its arguments (plus the reader's
 * and the zlib context's own state), safe to fuzz. Errors are reported as
 * the gRPC status a server or client should fail the call with, so callers
 * pass them on unchanged.
 */
#ifndef SHOOTOUT_GRPC_FRAME_H
#define SHOOTOUT_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

/* grpc/status.h, codes 0..16. */
enum grpc_status {
    GRPC_OK = 0,
    GRPC_CANCELLED = 1,
    GRPC_UNKNOWN = 2,
    GRPC_INVALID_ARGUMENT = 3,
    GRPC_DEADLINE_EXCEEDED = 4,
    GRPC_NOT_FOUND = 5,
    GRPC_ALREADY_EXISTS = 6,
    GRPC_PERMISSION_DENIED = 7,
    GRPC_RESOURCE_EXHAUSTED = 8,
    GRPC_FAILED_PRECONDITION = 9,
    GRPC_ABORTED = 10,
    GRPC_OUT_OF_RANGE = 11,
    GRPC_UNIMPLEMENTED = 12,
    GRPC_INTERNAL = 13,
    GRPC_UNAVAILABLE = 14,
    GRPC_DATA_LOSS = 15,
    GRPC_UNAUTHENTICATED = 16,
};
#define GRPC_STATUS_MAX 16

/* "OK", "CANCELLED", ... "UNAUTHENTICATED"; "(invalid)" outside 0..16. */
const char *grpc_status_name(int code);
/* The decimal text of a grpc-status value (no leading zeros), for
 * headers: a static string, NULL outside 0..16. */
const char *grpc_status_text(int code);
/* Parses a received grpc-status value: 1 to 3 digits. Returns the code
 * (any non-negative number; codes above 16 are the caller's to treat as
 * UNKNOWN), or -1 if the text is not a number. */
int grpc_status_parse(const char *s, size_t len);

/* ---- Length-Prefixed-Message framing ---------------------------------- */

#define GRPC_PREFIX_LEN 5

/* Writes the 5-byte prefix of a message of len bytes. */
void grpc_prefix_write(uint8_t out[GRPC_PREFIX_LEN], bool compressed, uint32_t len);

/* One reassembled message. data points into the bytes given to
 * grpc_reader_feed when the message lay there whole (no copy), else into
 * the reader's own buffer; either way it is valid until the next
 * grpc_reader_feed or grpc_reader_free. */
struct grpc_msg {
    const uint8_t *data;
    size_t len;
    bool compressed;
};

/* Resumable reader. Initialise with grpc_reader_init; holds memory only
 * for a message split across calls (until the call after the one that
 * delivers it). */
struct grpc_reader {
    size_t max; /* longest message accepted */
    uint8_t prefix[GRPC_PREFIX_LEN];
    uint8_t prefix_have;
    bool compressed;
    uint32_t len; /* of the message being read */
    uint8_t *buf; /* its bytes so far (owned) */
    size_t have, cap;
};

enum grpc_read {
    GRPC_READ_MORE = 0,      /* all input consumed, no message completed */
    GRPC_READ_MSG = 1,       /* *msg is complete; feed the rest of the input again */
    GRPC_READ_TOO_LARGE = -1 /* a prefix announced more than max; the reader is spent */
};

void grpc_reader_init(struct grpc_reader *r, size_t max);
/* Consumes from data[0..len) and sets *used to the bytes taken. Returns
 * GRPC_READ_MSG as soon as one message is complete (the rest of the input
 * is left for the next call), GRPC_READ_MORE when everything was taken
 * without completing one, GRPC_READ_TOO_LARGE when a prefix announced a
 * message longer than max (before any of its body is buffered). The
 * buffer for a split message grows with the bytes that actually arrive,
 * never to the announced length up front. */
enum grpc_read grpc_reader_feed(struct grpc_reader *r, const uint8_t *data, size_t len,
                                size_t *used, struct grpc_msg *msg);
/* True in the middle of a message (prefix or body partly read): the
 * stream must not end here. */
bool grpc_reader_partial(const struct grpc_reader *r);
/* Frees the reader's buffer; the reader can be used again after
 * grpc_reader_init. */
void grpc_reader_free(struct grpc_reader *r);

/* ---- gzip (grpc-encoding: gzip) ----------------------------------------- */

/* zlib streams kept between messages (deflateInit allocates a few hundred
 * KiB; reset is cheap), each started on first use. A zeroed struct is
 * ready to use. */
struct grpc_gzip {
    z_stream def, inf;
    bool def_ready, inf_ready;
};

/* Compresses in[0..len) into a new buffer (mem_alloc; the caller frees)
 * that starts with `headroom` bytes left for the caller (room for the
 * message prefix). *out_len counts the headroom too. Aborts only when
 * memory runs out, like every allocation here. */
void grpc_gzip_deflate(struct grpc_gzip *z, const uint8_t *in, size_t len, size_t headroom,
                       uint8_t **out, size_t *out_len);
/* Decompresses one gzip member in[0..len) into a new buffer (mem_alloc;
 * the caller frees; NULL on error). Returns GRPC_OK, GRPC_RESOURCE_EXHAUSTED
 * if the result would exceed max bytes (found out after producing at most
 * max + 1), or GRPC_INTERNAL if in is not exactly one valid gzip member. */
int grpc_gzip_inflate(struct grpc_gzip *z, const uint8_t *in, size_t len, size_t max, uint8_t **out,
                      size_t *out_len);
void grpc_gzip_free(struct grpc_gzip *z);

/* ---- Header values ------------------------------------------------------ */

/* grpc-timeout: 1 to 8 ASCII digits, then H, M, S, m, u or n. Returns 0
 * with the timeout in nanoseconds (at most 99999999 hours fits), or -1. */
int grpc_timeout_parse(const char *s, size_t len, uint64_t *ns);
/* A timeout in whole milliseconds, rounded up so that a deadline is never
 * enforced early. */
uint64_t grpc_timeout_ms(uint64_t ns);

/* grpc-message percent-encoding: bytes outside 0x20..0x7E, and '%', become
 * "%XX". Writes at most cap - 1 bytes and a NUL (cutting only between
 * whole escapes) and returns the length written. */
size_t grpc_pct_encode(const char *in, size_t len, char *out, size_t cap);
/* The reverse, into out (at least len bytes; decoding never grows). A '%'
 * not followed by two hex digits is kept as it is: the protocol forbids
 * failing on a malformed message. Returns the decoded length. */
size_t grpc_pct_decode(const char *in, size_t len, char *out);

/* A request content-type we serve: application/grpc or
 * application/grpc+proto (type and subtype case-insensitive), optionally
 * followed by parameters (";..."). Other subtypes (+json, ...) are not
 * ours to decode. */
bool grpc_content_type_ok(const char *v, size_t len);

enum grpc_encoding { GRPC_ENC_IDENTITY, GRPC_ENC_GZIP, GRPC_ENC_OTHER };
/* A grpc-encoding value (case-insensitive; surrounding spaces ignored). */
enum grpc_encoding grpc_encoding_parse(const char *v, size_t len);
/* Whether a comma-separated list (grpc-accept-encoding) names `token`,
 * case-insensitively, ignoring spaces around items. */
bool grpc_list_has(const char *list, size_t len, const char *token);

#endif
