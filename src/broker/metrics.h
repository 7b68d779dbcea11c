/* metrics.h - what the broker tells its operator: the Prometheus endpoint
 * (GET /metrics on metrics_port, a tiny HTTP/1.1 responder on the broker's
 * loop) and the connect and disconnect log lines, in a stable key=value
 * format that docs/broker.md describes.
 */
#ifndef SHOOTOUT_METRICS_H
#define SHOOTOUT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct broker;
struct conn;
struct mqtt5_connect;
struct metrics_server;

/* The broker's settings (struct broker_config.obs). */
struct broker_obs_config {
    int metrics_port;         /* -1 = no endpoint (default); 0 picks a free port */
    bool connection_messages; /* log connects and disconnects (default true) */
};

/* The bounds that keep one client from hurting the others (docs/broker.md,
 * "Bounds"): each hit is counted, and logged at most once a second. */
enum metrics_bound {
    BOUND_PACKET_TIMEOUT,   /* a packet came slower than packet_timeout/min_packet_rate */
    BOUND_PARTIAL_MEMORY,   /* max_partial_packet_bytes, over all connections */
    BOUND_RETAINED_MESSAGES, /* max_retained_messages */
    BOUND_RETAINED_BYTES,   /* max_retained_bytes */
    BOUND_N,
};

/* The broker's state (struct broker.obs). */
struct broker_obs {
    /* Every loop's (atomic). */
    uint64_t bound_hits[BOUND_N];
    uint64_t bound_logged_ms[BOUND_N]; /* when each was last logged (clock_now_ms) */
    struct metrics_server *server; /* NULL while there is no endpoint */
    uint64_t accepted;             /* TCP connections accepted */
};

/* Opens the endpoint if one is configured. Returns 0, or -1 after logging
 * why it could not listen. */
int metrics_start(struct broker *b);
/* Closes the endpoint and its connections. */
void metrics_stop(struct broker *b);
/* The endpoint's work before the loop sleeps; true if some is left over. */
bool metrics_prepare(struct broker *b);

/* Writes the broker's figures in the Prometheus text format into a new
 * NUL-terminated string (mem_free it); *len is its length. */
char *metrics_render(struct broker *b, size_t *len);

/* Counts a hit of a bound, by the client who (its id, or a description),
 * and logs it unless that bound was logged less than a second ago. */
void metrics_bound_hit(struct broker *b, enum metrics_bound bound, const char *who);

/* "ADDR:PORT" of the connection's peer, into buf. */
const char *metrics_peer(const struct conn *c, char *buf, size_t len);
/* Writes bytes[0..len) as a log value: as they are when they are printable
 * and hold no blank, '"' or '=', else quoted with "\" and \xNN escapes;
 * truncated to fit out (room for at least 8 bytes). */
const char *metrics_log_value(char *out, size_t outlen, const void *bytes, size_t len);

/* event=connect ... for a client let in. */
void metrics_log_connect(struct broker *b, const struct conn *c, const struct mqtt5_connect *ci,
                         bool session_present);
/* event=connect_refused ... for a CONNECT that auth_connect refused for
 * the reason why; id is the client id it would have had. */
void metrics_log_connect_refused(struct broker *b, const struct conn *c,
                                 const struct mqtt5_connect *ci, const uint8_t *id, size_t id_len,
                                 const char *why);
/* event=disconnect ... for a client that was let in; why is conn_close's
 * reason text. */
void metrics_log_disconnect(struct broker *b, const struct conn *c, const char *why);

#endif
