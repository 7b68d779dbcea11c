/* h2_io.h - the I/O of one HTTP/2 connection driven by nghttp2 on our event
 * loop, shared by both ends of gRPC (car_grpc.c serves, rpc_grpc.c calls).
 * nghttp2 works on memory (nghttp2_session_mem_recv/_mem_send); these are
 * the only functions that touch the socket.
 *
 * Reading hands everything a read returns to the session at once, so a
 * wake-up's worth of frames is processed before anything is written.
 * Flushing gathers the frames the session has queued (a unary answer is
 * three: HEADERS, DATA, trailers) into one buffer and writes it with one
 * system call; only what the socket does not take is copied into the
 * connection's outq, which frees its memory as soon as it drains.
 *
 * The socket is watched level-triggered: for reading, or, while it is
 * full, for writability alone. Reading pauses meanwhile, so a peer that
 * does not read cannot make us queue without bound.
 *
 * Both use per-thread scratch buffers: one loop per thread, as everywhere.
 *
 * TLS (optional, core/tls.h): the caller sets x->tls right after the
 * connect or accept and drives h2_io_handshake until it is done; the
 * connection is HTTP/2 only if ALPN agreed on "h2" (RFC 9113 section 3.3).
 * Then reading and writing go through OpenSSL with the same shape: one
 * write per wake-up, the rest kept in out. Two differences: OpenSSL may
 * hold a decrypted record the socket no longer announces, so a read goes
 * on while it does; and a TLS write may wait for readability, or a read
 * for writability (key updates), so the socket is watched for whatever
 * TLS asked. Cleartext costs one branch more per call, nothing else.
 */
#ifndef SHOOTOUT_H2_IO_H
#define SHOOTOUT_H2_IO_H

#include <stdbool.h>
#include <stddef.h>

#include <nghttp2/nghttp2.h>

#include "core/ev.h"
#include "core/outq.h"

struct tls_conn;

struct h2_io {
    struct ev_io io; /* caller-set fd, cb and data; first, so io callbacks find us */
    nghttp2_session *h2;
    struct outq out; /* what the socket did not take */
    bool write_blocked;
    struct tls_conn *tls;  /* NULL: cleartext; owned (h2_io_close frees it) */
    bool tls_ready;        /* handshake done, h2 agreed */
    bool read_wants_write; /* TLS: a read must wait for writability */
    uint32_t write_wait;   /* TLS: what a blocked write waits for (EV_READ/EV_WRITE) */
};

/* Whether the connection speaks HTTP/2 yet: always in cleartext, after
 * h2_io_handshake with TLS. */
static inline bool h2_io_ready(const struct h2_io *x) { return !x->tls || x->tls_ready; }

/* Whether a wake-up with `events` should read: not while a write waits
 * (its retry comes first, and reading more would queue more answers), and
 * on writability for a TLS read that waits for it. */
static inline bool h2_io_may_read(const struct h2_io *x, uint32_t events)
{
    return !x->write_blocked && (events & (x->read_wants_write ? EV_WRITE : EV_READ));
}

/* The callbacks a session needs; NULL for those not wanted. */
struct h2_io_callbacks {
    nghttp2_on_begin_headers_callback on_begin_headers;
    nghttp2_on_header_callback on_header;
    nghttp2_on_frame_recv_callback on_frame_recv;
    nghttp2_on_data_chunk_recv_callback on_data_chunk_recv;
    nghttp2_on_frame_send_callback on_frame_send;
    nghttp2_on_stream_close_callback on_stream_close;
};

/* Sets x->h2 to a server or client session with user data `user`, its
 * SETTINGS (settings[0..n)) submitted and the connection's receive window
 * set to `window` (the streams' comes with SETTINGS_INITIAL_WINDOW_SIZE).
 * Aborts only when memory runs out. */
void h2_io_session(struct h2_io *x, bool server, const struct h2_io_callbacks *cb, void *user,
                   const nghttp2_settings_entry *settings, size_t n, int32_t window);

/* Reads until the socket has nothing more (a short read or EAGAIN) or
 * `budget` bytes were read, feeding the session as it goes; its callbacks
 * run inside. Returns 0, or -1 when the connection is over: the peer
 * closed it (errno 0), a read failed (errno), or the session failed on the
 * input (errno 0; nghttp2 queues a GOAWAY for protocol errors it can
 * report, so this is for input it cannot parse at all, such as a wrong
 * connection preface). *why says which, for logs. */
int h2_io_read(struct h2_io *x, size_t budget, const char **why);

/* Advances the TLS handshake and watches the socket for what it waits for.
 * Returns 1 while it goes on, 0 once done with ALPN "h2" agreed (the
 * socket is then watched for reading), or -1 with *why: the handshake
 * failed, or the peer did not negotiate h2. */
int h2_io_handshake(struct h2_io *x, struct ev_loop *loop, const char **why);

enum h2_io_flushed {
    H2_IO_ERROR = -1,   /* a write or session error (errno, *why) */
    H2_IO_OPEN = 0,     /* written, or waiting for writability */
    H2_IO_FINISHED = 1, /* all written and the session wants nothing more
                         * (a GOAWAY was sent or received and its streams
                         * are done): linger (h2_io_linger), then close */
};

/* Writes what out kept and what the session has to send, and watches the
 * socket for what comes next (see the top of this file). Before the TLS
 * handshake is done it writes nothing (H2_IO_OPEN). */
enum h2_io_flushed h2_io_flush(struct h2_io *x, struct ev_loop *loop, const char **why);

/* Stops watching the socket (so that the caller may free x at once, even
 * with events of this wake-up still to come), sends TLS close_notify if it
 * can at once, closes the socket, and frees the session, the TLS
 * connection and the pending output. */
void h2_io_close(struct h2_io *x, struct ev_loop *loop);

/* After H2_IO_FINISHED, for a lingering close (core/linger.h): frees the
 * session, sends TLS close_notify if it can at once and frees the TLS
 * connection, and shuts the socket's write side; the socket stays open
 * and watched for reading, for the caller to drop what still comes
 * (linger_discard on x->io.fd) until it calls h2_io_close. */
void h2_io_linger(struct h2_io *x, struct ev_loop *loop);

/* A DATA source of bytes held by the caller, for nghttp2_data_provider. */
struct h2_io_body {
    const uint8_t *data;
    size_t len, sent;
};

/* Copies the next piece of b into buf (at most length bytes) and sets
 * NGHTTP2_DATA_FLAG_EOF with the last one; returns the bytes copied. For
 * a read callback, which adds any flags of its own. */
ssize_t h2_io_body_read(struct h2_io_body *b, uint8_t *buf, size_t length, uint32_t *data_flags);

#endif
