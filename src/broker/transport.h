/* transport.h - how a broker connection's bytes travel when not over a
 * plain TCP socket: TLS, WebSocket, or WebSocket over TLS; and what each
 * listener carries.
 *
 * core/srv.c opens the listeners, the default one (index 0) and those a
 * configuration file adds; this module knows what each one carries.
 *
 * A plain TCP connection has no transport (conn_tp(c) is NULL) and
 * conn_loop.c reads and writes its socket directly. Otherwise it calls
 * transport_read instead of read() and transport_flush instead of
 * outq_flush, and the transport drives the TLS handshake, the WebSocket
 * upgrade, framing and control frames underneath. Such connections are
 * read until the transport reports EAGAIN, because TLS holds decrypted
 * bytes the socket's readiness does not announce, and are offered both
 * readiness edges, because a TLS read may wait for writability and a
 * write for readability.
 */
#ifndef SHOOTOUT_BROKER_TRANSPORT_H
#define SHOOTOUT_BROKER_TRANSPORT_H

#include <stddef.h>
#include <sys/types.h>

struct broker;
struct broker_loop;
struct conn;

/* Checks every listener's settings and builds its TLS context. Returns 0,
 * or -1 with a message naming the listener and file in err. */
int transport_setup(struct broker *b, char *err, size_t errlen);
/* Logs what each listener carries, now listening on ports[i]. */
void transport_listening(const struct broker *b, const int *ports);
/* Frees the contexts; idempotent. */
void transport_teardown(struct broker *b);

/* Gives a connection accepted on listener (an index into the listeners)
 * the transport that listener wants (none for plain MQTT). Returns -1 if
 * out of resources. */
int transport_attach(struct broker_loop *l, struct conn *c, unsigned listener);

/* read()'s contract: bytes of the MQTT stream (> 0), 0 when the peer closed,
 * or -1 with errno: EAGAIN when nothing more can be read now, otherwise the
 * connection failed (transport_error says why). */
ssize_t transport_read(struct broker_loop *l, struct conn *c, void *buf, size_t cap);
/* outq_flush's contract for c->out (and the transport's own output). */
int transport_flush(struct broker_loop *l, struct conn *c);
const char *transport_error(const struct conn *c);
/* Before the socket is closed. */
void transport_free(struct conn *c);

/* The username the transport vouches for (use_identity_as_username: the
 * client certificate's CN), or NULL. Set before CONNECT is read. */
const char *transport_username(const struct conn *c);

#endif
