/* h2_io.h - moving bytes between a non-blocking socket and an nghttp2
 * session, shared by both ends of gRPC (car_grpc.c serves, rpc_grpc.c
 * calls): nghttp2 works on memory (nghttp2_session_mem_recv/_mem_send), and
 * these two functions are the only places that touch the socket.
 *
 * Reading hands everything a read returns to the session at once, so a
 * wake-up's worth of frames is processed before anything is written.
 * Flushing gathers the frames the session has queued (a unary reply is
 * three: HEADERS, DATA, trailers) into one buffer and writes it with one
 * system call; only what the socket does not take is copied into the
 * connection's outq, which frees its memory as soon as it drains.
 *
 * Both use per-thread scratch buffers: one loop per thread, as everywhere.
 */
#ifndef SHOOTOUT_H2_IO_H
#define SHOOTOUT_H2_IO_H

#include <stddef.h>

#include <nghttp2/nghttp2.h>

#include "core/outq.h"

/* Reads until the socket has nothing more (a short read or EAGAIN) or
 * `budget` bytes were read, feeding the session as it goes; its callbacks
 * run inside. Returns 0, or -1 when the connection is over: the peer
 * closed it (errno 0), a read failed (errno), or the session failed on the
 * input (errno 0; nghttp2 queues a GOAWAY for protocol errors it can
 * report, so this is for input it cannot parse at all, such as a wrong
 * connection preface). *why says which, for logs. */
int h2_io_read(nghttp2_session *s, int fd, size_t budget, const char **why);

/* Writes what the session has to send (and first what out kept from
 * before). Returns 0 when everything is written, 1 when the socket is full
 * (the rest is in out, or still in the session: call again once the socket
 * is writable), -1 on a write or session error (errno, *why). */
int h2_io_flush(nghttp2_session *s, int fd, struct outq *out, const char **why);

#endif
