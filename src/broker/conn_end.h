/* conn_end.h - how a connection ends: its MQTT side at once (off the
 * loop's list, its session detached, its will published unless the end
 * is graceful), and its socket either at once (conn_close) or after its
 * last output, lingering (core/linger.h): what is queued goes out after
 * this iteration's commit, then the write side is shut and input dropped
 * until the client closes, LINGER_MS at most, so that a client still
 * sending reads the last packet rather than a reset. The socket is closed
 * when the struct is freed, after the iteration's commit (conn_prepare).
 */
#ifndef SHOOTOUT_CONN_END_H
#define SHOOTOUT_CONN_END_H

#include <stdbool.h>
#include <stdint.h>

struct broker;
struct broker_loop;
struct conn;

/* Ends the connection and drops what is queued for it. reason is for the
 * log. */
void conn_close(struct broker_loop *l, struct conn *c, const char *reason, bool graceful);
/* A refused CONNECT: the connection ends as conn_close, but lingers for its
 * CONNACK to reach the client. */
void conn_close_after_flush(struct broker_loop *l, struct conn *c);
/* Ends a connection the server's way: an MQTT 5 client is first sent a
 * DISCONNECT with the reason code (why as its Reason String, if it fits),
 * then the connection lingers. */
void conn_kick(struct broker_loop *l, struct conn *c, uint8_t reason, const char *why,
               bool graceful);

/* conn_loop.c, for a lingering connection: what the client sent is
 * dropped (conn_linger_read); a flush attempt returned r (outq_flush's
 * result: once everything is out, TLS's close_notify and our end of the
 * stream follow); its time ran out (conn_release: done with the socket). */
void conn_linger_read(struct conn *c);
void conn_linger_flushed(struct conn *c, int r);
void conn_release(struct conn *c);

#endif
