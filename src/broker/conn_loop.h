/* conn_loop.h - connections on one of the broker's event loops: a new socket
 * becomes a connection; its input is read (through its transport, if any)
 * until drained or its budget is spent, framed, and each packet dispatched
 * to its handler (handle.h); the end of each loop iteration reads what was
 * left, commits what the packets changed (persist.h), flushes output and
 * frees closed connections; the periodic sweep ends connections that
 * timed out.
 *
 * Sockets are registered edge-triggered for both directions once, so the
 * hot path makes no epoll_ctl calls: a connection reads until the socket is
 * drained (or its per-iteration budget is spent, in which case it goes on
 * the read list and is resumed next iteration), and writes whenever it has
 * output, waiting for the next writability edge only when the socket is
 * full.
 */
#ifndef SHOOTOUT_CONN_LOOP_H
#define SHOOTOUT_CONN_LOOP_H

#include <stdbool.h>

struct broker;
struct broker_loop;
struct conn;

/* A new connection on fd, watched by the loop; NULL (fd closed) if the
 * loop cannot watch it. */
struct conn *conn_accept(struct broker_loop *l, int fd);
/* Loop-iteration work: what other loops handed us, pending reads, the
 * commit, flushes, connections to hand to another loop, what we hand the
 * others, frees. True if reads remain. */
bool conn_prepare(struct broker_loop *l);
/* What other loops handed l (xloop.h): deliveries, connections, a stop. */
void conn_take_handoffs(struct broker_loop *l);
/* Periodic: CONNECT and keep alive timeouts, publishers that waited too
 * long, the end of lingering of l's connections; then l's sessions'
 * timers. */
void conn_sweep(struct broker_loop *l);
/* l->stall's: flags the subscribers that publishers which spent their grace
 * wait for, once they made no progress for BROKER_STALL_MS (session.h);
 * again in BROKER_STALL_MS while such a publisher still waits. */
void conn_check_stalls(struct broker_loop *l);

#endif
