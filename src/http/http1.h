/* http1.h - HTTP/1.1 codec for the Car service's REST side: a request-head
 * parser (the server), a response-head parser (the load generator's
 * client) and a chunked-body decoder (both), all pure and non-allocating,
 * in the spirit of picohttpparser.
 *
 * http1_parse_request() and http1_parse_response() keep no state between
 * calls: the caller offers everything received so far and calls again with
 * more bytes after a "need more" answer. Parsed slices point into the
 * caller's buffer, which must outlive them. The parsers also settle message
 * framing (RFC 9112 section 6), so the caller learns whether a body
 * follows, how long it is and whether the connection stays open, from one
 * place that refuses every ambiguous combination a request smuggler (or a
 * response splitter) could exploit.
 *
 * http1_chunked_decode() does keep state (struct http1_chunked), because a
 * chunked body may be far larger than any buffer; it consumes every byte it
 * is offered until the body ends. docs/http1.md lists what is accepted and
 * refused, and why.
 */
#ifndef SHOOTOUT_HTTP1_H
#define SHOOTOUT_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Negative so that byte counts and errors share one int. The comment names
 * the status a server should answer with (http1_status() returns it). */
enum http1_err {
    HTTP1_E_REQUEST_LINE = -1,       /* 400: request line is not method SP target SP version */
    HTTP1_E_METHOD = -2,             /* 400: method is empty or not a token */
    HTTP1_E_TARGET = -3,             /* 400: target is empty or has bytes outside VCHAR */
    HTTP1_E_VERSION = -4,            /* 505: well-formed version other than HTTP/1.x */
    HTTP1_E_BARE_LF = -5,            /* 400: a line ends in LF without CR */
    HTTP1_E_HEADER_NAME = -6,        /* 400: field name empty, not a token, or space before ':' */
    HTTP1_E_HEADER_VALUE = -7,       /* 400: control character (or bare CR) in a field value */
    HTTP1_E_OBS_FOLD = -8,           /* 400: field line continued by leading whitespace */
    HTTP1_E_TOO_MANY_HEADERS = -9,   /* 431: more fields than the caller's array holds */
    HTTP1_E_HEAD_TOO_LARGE = -10,    /* 431: head longer than the caller's limit */
    HTTP1_E_HOST = -11,              /* 400: HTTP/1.1 without Host, or Host twice */
    HTTP1_E_CONTENT_LENGTH = -12,    /* 400: Content-Length not digits, conflicting, or overflowing */
    HTTP1_E_TRANSFER_ENCODING = -13, /* 400: chunked not last, repeated, or TE in HTTP/1.0 */
    HTTP1_E_TE_UNSUPPORTED = -14,    /* 501: a transfer coding other than chunked */
    HTTP1_E_TE_AND_CL = -15,         /* 400: both Transfer-Encoding and Content-Length */
    HTTP1_E_CONTENT_TYPE = -16,      /* 400: Content-Type twice */
    HTTP1_E_CHUNK_SIZE = -17,        /* 400: chunk size line malformed or too long */
    HTTP1_E_CHUNK_DATA = -18,        /* 400: chunk data not followed by CRLF */
    HTTP1_E_TRAILER = -19,           /* 400: trailer section malformed or too long */
    HTTP1_E_BODY_TOO_LARGE = -20,    /* 413: chunked body over the caller's limit */
    HTTP1_E_STATUS_LINE = -21,       /* 502: response status line malformed, or code outside 100..599 */
};

/* Short English description of an http1_err, for logs. Never NULL. */
const char *http1_strerror(int err);

/* The HTTP status code a server should answer an http1_err with. */
int http1_status(int err);

/* Bytes inside some buffer; not NUL-terminated. ptr is NULL when absent. */
struct http1_str {
    const char *ptr;
    size_t len;
};

struct http1_header {
    struct http1_str name;
    struct http1_str value; /* without surrounding whitespace */
};

enum http1_body {
    HTTP1_BODY_NONE,    /* no body: neither Content-Length nor Transfer-Encoding */
    HTTP1_BODY_LENGTH,  /* content_length bytes follow (possibly 0) */
    HTTP1_BODY_CHUNKED, /* feed what follows to http1_chunked_decode() */
    HTTP1_BODY_UNTIL_CLOSE, /* responses only: the body is everything up to the close */
};

struct http1_request {
    struct http1_str method;
    struct http1_str target; /* as sent: path plus "?query" */
    struct http1_str path;   /* target up to the first '?' */
    struct http1_str query;  /* after the first '?'; ptr NULL if there is no '?' */
    int minor_version;       /* 0 or 1; HTTP/1.2..1.9 are read as 1.1 */
    size_t num_headers;      /* headers[0..num_headers) are filled in */

    enum http1_body body;
    uint64_t content_length; /* valid when body == HTTP1_BODY_LENGTH */
    bool keep_alive;         /* the connection may carry another request */
    bool expect_continue;    /* HTTP/1.1 "Expect: 100-continue" */
    struct http1_str content_type; /* field value; ptr NULL when absent */
};

/* Parses one request head from buf[0..len).
 *
 * headers is the caller's array of max_headers entries; it and *req are
 * filled in (and only meaningful) on success. max_head bounds the head,
 * from the first byte up to and including the empty line, and must be at
 * most INT_MAX.
 *
 * Returns the head's length in bytes (> 0) when it is complete, 0 when buf
 * is a valid prefix that needs more bytes, or a negative http1_err. Any
 * error in the first len bytes is reported as soon as those bytes are
 * offered, so a prefix never returns an error that the whole would not. */
int http1_parse_request(const char *buf, size_t len, struct http1_request *req,
                        struct http1_header *headers, size_t max_headers, size_t max_head);

struct http1_response {
    int minor_version;         /* 0 or 1, as for requests */
    int status;                /* 100..599 */
    struct http1_str reason;   /* ptr NULL when the line has no SP after the code */
    size_t num_headers;        /* headers[0..num_headers) are filled in */

    enum http1_body body;      /* NONE for 1xx, 204 and 304 whatever the fields say */
    uint64_t content_length;   /* valid when body == HTTP1_BODY_LENGTH */
    bool keep_alive;           /* another response may follow on the connection */
    struct http1_str content_type; /* field value; ptr NULL when absent */
};

/* Parses one response head from buf[0..len), for a client that sends
 * neither HEAD nor CONNECT. Same contract as http1_parse_request: returns
 * the head's length (> 0), 0 for "need more", or a negative http1_err, and
 * a prefix never returns an error that the whole would not.
 *
 * The fields are read exactly as in requests (the same errors for names,
 * values, folding, Content-Length, Transfer-Encoding and a repeated
 * Content-Type); Host and Expect mean nothing here. A 1xx head is interim:
 * the final response follows it, so parse again after it. A response
 * without Content-Length or Transfer-Encoding runs until the connection
 * closes (HTTP1_BODY_UNTIL_CLOSE, never keep_alive). */
int http1_parse_response(const char *buf, size_t len, struct http1_response *resp,
                         struct http1_header *headers, size_t max_headers, size_t max_head);

/* Case-insensitive (ASCII) comparison of s with the C string lit. */
bool http1_str_eq(struct http1_str s, const char *lit);

/* The first header named name (case-insensitive), or NULL. */
const struct http1_header *http1_find_header(const struct http1_header *headers,
                                             size_t num_headers, const char *name);

/* Whether content_type (a Content-Type value) names media type type, e.g.
 * "application/json", compared case-insensitively and ignoring parameters
 * such as "; charset=utf-8". False when content_type is absent. */
bool http1_media_type_is(struct http1_str content_type, const char *type);

/* Decoder state for one chunked body. Set up with http1_chunked_init(). */
struct http1_chunked {
    int state;
    uint64_t chunk_left; /* data bytes still due in the current chunk */
    uint64_t total;      /* data bytes decoded so far */
    uint64_t max_body;
    size_t line_len;     /* bytes of the current size or trailer line */
    size_t trailer_len;  /* bytes of the trailer section so far */
};

/* Longest chunk size line (size and extensions) and trailer section we
 * accept; both exist only to bound what an attacker can make us skip. */
#define HTTP1_CHUNK_LINE_MAX 1024
#define HTTP1_TRAILER_MAX 8192

/* max_body bounds the decoded body; a chunk that would cross it is refused
 * as soon as its size line is read. */
void http1_chunked_init(struct http1_chunked *d, uint64_t max_body);

/* Decodes in[0..len) and writes the body bytes it carries to out, which
 * must have room for len bytes and may be in itself (decoding in place:
 * output never runs ahead of input). *out_len is set to the bytes written
 * and *used to the input bytes consumed.
 *
 * Returns 1 when the body (last chunk and trailers) has ended; *used then
 * stops right after it, and what follows belongs to the next request.
 * Returns 0 when all len bytes were consumed and the body goes on, or a
 * negative http1_err, which every later call returns again. */
int http1_chunked_decode(struct http1_chunked *d, const char *in, size_t len, char *out,
                         size_t *out_len, size_t *used);

#endif
