/* car_rest_proto.h - the Car service's HTTP/1.1 protocol as a pure state
 * machine: the bytes a client sent go in, the bytes to answer with come
 * out. No sockets, no clock, no per-request allocation for the common
 * request; car_rest.c does the I/O around it and the fuzz target drives it
 * directly.
 *
 * Endpoints (docs/car_server.md):
 *   POST /v1/create  the article's JSON document -> 201 {"status":"created"}
 *   GET  /healthz    200 {"status":"ok"} (HEAD too)
 * and every answer the protocol calls for: 100 Continue, 400/413/431/505/501
 * for what http1_parse_request() refuses, 400 with car_json_error_body()
 * for a bad document, 404, 405 with Allow, 415, 417, and 408 on a timeout.
 *
 * Every response carries Content-Length, Date and Server. A response after
 * which the connection must close (the client asked for it, HTTP/1.0
 * without keep-alive, a framing error or a limit, draining) is the last:
 * the machine then ignores all further input.
 */
#ifndef SHOOTOUT_CAR_REST_PROTO_H
#define SHOOTOUT_CAR_REST_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http1.h"

struct car_stats;

/* The longest response one request can produce, 100 Continue included.
 * car_rest_proto_feed() handles a request only when this much room is left
 * in the output. */
#define CAR_REST_RESPONSE_MAX 1024

/* Length of an IMF-fixdate such as "Sun, 06 Nov 1994 08:49:37 GMT". */
#define CAR_REST_DATE_LEN 29

/* What the machine needs from its surroundings; the caller's, read only. */
struct car_rest_env {
    size_t max_header;      /* request head limit (431 over) */
    size_t max_body;        /* request body limit (413 over) */
    const char *date;       /* CAR_REST_DATE_LEN bytes for the Date header */
    bool draining;          /* the server is stopping: every answer closes */
    bool log_requests;      /* one debug line per request */
    struct car_stats *stats;/* rest_requests and rest_errors are counted here; may be NULL */
};

/* Where responses are appended: buf[0..cap), len bytes used. */
struct car_rest_out {
    char *buf;
    size_t len, cap;
};

enum car_rest_phase {
    CAR_REST_HEAD,         /* waiting for a request head */
    CAR_REST_BODY,         /* Content-Length body of a POST /v1/create, left in the input until complete */
    CAR_REST_CHUNKED,      /* chunked body of a POST /v1/create, decoded into body */
    CAR_REST_SKIP,         /* Content-Length body of a request already answered */
    CAR_REST_SKIP_CHUNKED, /* chunked body of a request already answered */
    CAR_REST_CLOSED,       /* the last response is out; input is ignored */
};

/* One connection's protocol state. Set up with car_rest_proto_init(),
 * released with car_rest_proto_free(). */
struct car_rest_proto {
    enum car_rest_phase phase;
    bool keep_alive;        /* of the request in progress */
    bool http10;            /* it is HTTP/1.0: keep-alive must be said explicitly */
    uint64_t body_left;     /* CAR_REST_BODY / CAR_REST_SKIP: body bytes still due */
    struct http1_chunked chunked;
    char *body;             /* CAR_REST_CHUNKED: decoded body, owned; NULL otherwise */
    size_t body_len, body_cap;
    uint64_t requests;      /* requests answered on this connection */
    int id;                 /* names the connection in log lines */
    char what[64];          /* "METHOD target" of the request in progress, for the log */
};

enum car_rest_stop {
    CAR_REST_NEED_MORE, /* every complete request is answered; feed again with more input */
    CAR_REST_OUT_FULL,  /* less than CAR_REST_RESPONSE_MAX room is left: drain out, feed again */
    CAR_REST_CLOSE,     /* the last response is in out: send it, then close */
};

void car_rest_proto_init(struct car_rest_proto *p, int id);
void car_rest_proto_free(struct car_rest_proto *p);

/* Handles the requests in data[0..len), appending their responses to out.
 *
 * *used is set to the bytes consumed; the caller keeps data[*used..len) and
 * offers it again, followed by whatever arrives next (a Content-Length body
 * stays there until it is complete, so the document can be parsed where it
 * lies). After CAR_REST_CLOSE everything is consumed, now and later. */
enum car_rest_stop car_rest_proto_feed(struct car_rest_proto *p, const struct car_rest_env *env,
                                       const char *data, size_t len, size_t *used,
                                       struct car_rest_out *out);

/* Whether a request has begun and not been answered in full, given that
 * the caller still holds `pending` unconsumed bytes: the slow-client
 * timeout applies, not the idle one. */
bool car_rest_proto_busy(const struct car_rest_proto *p, size_t pending);

/* The request in progress took too long. Appends 408 (unless the request
 * was answered already and only its body was being skipped) and enters
 * CAR_REST_CLOSED. out needs CAR_REST_RESPONSE_MAX bytes of room. Returns
 * whether a response was appended. */
bool car_rest_proto_timeout(struct car_rest_proto *p, const struct car_rest_env *env,
                            struct car_rest_out *out);

#endif
