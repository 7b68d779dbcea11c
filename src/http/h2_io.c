/* h2_io.c - socket <-> nghttp2 session; see h2_io.h. */
#include "http/h2_io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/linger.h"
#include "core/log.h"
#include "core/tls.h"

#define H2_IO_CHUNK (64 * 1024)

static _Thread_local uint8_t h2_io_rbuf[H2_IO_CHUNK];
static _Thread_local uint8_t h2_io_wbuf[H2_IO_CHUNK];

void h2_io_session(struct h2_io *x, bool server, const struct h2_io_callbacks *cb, void *user,
                   const nghttp2_settings_entry *settings, size_t n, int32_t window)
{
    nghttp2_session_callbacks *callbacks;
    nghttp2_option *opt;
    if (nghttp2_session_callbacks_new(&callbacks) != 0 || nghttp2_option_new(&opt) != 0) {
        log_error("out of memory (nghttp2)");
        abort();
    }
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, cb->on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, cb->on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, cb->on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, cb->on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, cb->on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, cb->on_stream_close);
    /* Closed streams are kept only for priority bookkeeping gRPC does not
     * use. */
    nghttp2_option_set_no_closed_streams(opt, 1);
    int rv = server ? nghttp2_session_server_new2(&x->h2, callbacks, user, opt)
                    : nghttp2_session_client_new2(&x->h2, callbacks, user, opt);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_option_del(opt);
    if (rv != 0) {
        log_error("out of memory (nghttp2 session)");
        abort();
    }
    nghttp2_submit_settings(x->h2, NGHTTP2_FLAG_NONE, settings, n);
    nghttp2_session_set_local_window_size(x->h2, NGHTTP2_FLAG_NONE, 0, window);
}

/* Hands n bytes of h2_io_rbuf to the session: 0 or -1 (see h2_io_read). */
static int h2_io_feed(struct h2_io *x, size_t n, const char **why)
{
    ssize_t rv = nghttp2_session_mem_recv(x->h2, h2_io_rbuf, n);
    if (rv < 0) {
        errno = 0;
        *why = nghttp2_strerror((int)rv);
        return -1;
    }
    return 0;
}

/* h2_io_read over TLS. A read returns one record's plaintext at most, so
 * it stops once OpenSSL holds nothing more: what is still in the socket
 * makes it readable again. */
static int h2_io_tls_read(struct h2_io *x, size_t budget, const char **why)
{
    size_t done = 0;
    x->read_wants_write = false;
    while (done < budget) {
        ssize_t n = tls_read(x->tls, h2_io_rbuf, sizeof h2_io_rbuf);
        if (n == TLS_WANT_READ)
            return 0;
        if (n == TLS_WANT_WRITE) {
            x->read_wants_write = true; /* h2_io_flush watches for it */
            return 0;
        }
        if (n < 0) {
            errno = 0;
            *why = n == TLS_CLOSED ? "closed by peer (TLS close_notify)" : tls_conn_error(x->tls);
            return -1;
        }
        if (h2_io_feed(x, (size_t)n, why) < 0)
            return -1;
        done += (size_t)n;
        if (!tls_read_pending(x->tls))
            return 0;
    }
    return 0;
}

int h2_io_read(struct h2_io *x, size_t budget, const char **why)
{
    if (x->tls)
        return h2_io_tls_read(x, budget, why);
    size_t done = 0;
    while (done < budget) {
        ssize_t n = read(x->io.fd, h2_io_rbuf, sizeof h2_io_rbuf);
        if (n == 0) {
            errno = 0;
            *why = "closed by peer";
            return -1;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            *why = strerror(errno);
            return -1;
        }
        if (h2_io_feed(x, (size_t)n, why) < 0)
            return -1;
        done += (size_t)n;
        if ((size_t)n < sizeof h2_io_rbuf)
            return 0;
    }
    return 0;
}

int h2_io_handshake(struct h2_io *x, struct ev_loop *loop, const char **why)
{
    int r = tls_handshake(x->tls);
    if (r == TLS_WANT_READ || r == TLS_WANT_WRITE) {
        ev_io_modify(loop, &x->io, r == TLS_WANT_READ ? EV_READ : EV_WRITE);
        return 1;
    }
    if (r != TLS_OK) {
        *why = r == TLS_CLOSED ? "closed by peer during the TLS handshake" : tls_conn_error(x->tls);
        return -1;
    }
    size_t len;
    const char *alpn = tls_alpn(x->tls, &len);
    if (!alpn || len != 2 || memcmp(alpn, "h2", 2) != 0) {
        *why = "the TLS peer did not negotiate HTTP/2 (ALPN h2)";
        return -1;
    }
    x->tls_ready = true;
    ev_io_modify(loop, &x->io, EV_READ);
    return 0;
}

/* writev through TLS, for outq_flush_with and h2_io_write: bytes taken,
 * or -1 with errno EAGAIN (x->write_wait says for what) or EPROTO
 * (tls_conn_error says why). */
static ssize_t h2_io_tls_writev(void *arg, const struct iovec *iov, int iovcnt)
{
    struct h2_io *x = arg;
    ssize_t w = tls_writev(x->tls, iov, iovcnt);
    if (w >= 0)
        return w;
    if (w == TLS_WANT_READ || w == TLS_WANT_WRITE) {
        x->write_wait = w == TLS_WANT_READ ? EV_READ : EV_WRITE;
        errno = EAGAIN;
    } else {
        errno = EPROTO;
    }
    return -1;
}

static const char *h2_io_write_error(const struct h2_io *x)
{
    return x->tls && errno == EPROTO ? tls_conn_error(x->tls) : strerror(errno);
}

/* Writes p[0..len) with out empty; what the socket does not take goes
 * into out. 0, 1 (socket full) or -1. */
static int h2_io_write(struct h2_io *x, const uint8_t *p, size_t len, const char **why)
{
    while (len > 0) {
        ssize_t w = x->tls ? h2_io_tls_writev(x, &(struct iovec){(void *)p, len}, 1)
                           : write(x->io.fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* TLS took nothing and must be offered these bytes
                 * first next time: they head out. */
                outq_copy(&x->out, p, len);
                return 1;
            }
            *why = h2_io_write_error(x);
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Writes what out kept, then what the session has: 0 (all written), 1
 * (socket full) or -1. */
static int h2_io_send(struct h2_io *x, const char **why)
{
    if (outq_pending(&x->out) > 0) {
        int r = x->tls ? outq_flush_with(&x->out, h2_io_tls_writev, x)
                       : outq_flush(&x->out, x->io.fd);
        if (r < 0)
            *why = h2_io_write_error(x);
        if (r != 0)
            return r;
    }
    size_t fill = 0;
    for (;;) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(x->h2, &p);
        if (n < 0) {
            errno = 0;
            *why = nghttp2_strerror((int)n);
            return -1;
        }
        if (n == 0)
            break;
        if (fill + (size_t)n > sizeof h2_io_wbuf && fill > 0) {
            int r = h2_io_write(x, h2_io_wbuf, fill, why);
            fill = 0;
            if (r > 0)
                outq_copy(&x->out, p, (size_t)n); /* p is gone at the next mem_send */
            if (r != 0)
                return r;
        }
        if ((size_t)n > sizeof h2_io_wbuf) {
            int r = h2_io_write(x, p, (size_t)n, why);
            if (r != 0)
                return r;
            continue;
        }
        memcpy(h2_io_wbuf + fill, p, (size_t)n);
        fill += (size_t)n;
    }
    return fill > 0 ? h2_io_write(x, h2_io_wbuf, fill, why) : 0;
}

enum h2_io_flushed h2_io_flush(struct h2_io *x, struct ev_loop *loop, const char **why)
{
    if (!h2_io_ready(x))
        return H2_IO_OPEN; /* the SETTINGS wait in the session */
    int r = h2_io_send(x, why);
    if (r < 0)
        return H2_IO_ERROR;
    x->write_blocked = r == 1;
    uint32_t watch = EV_READ;
    if (r == 1)
        watch = x->tls ? x->write_wait : EV_WRITE;
    else if (x->read_wants_write)
        watch = EV_WRITE;
    ev_io_modify(loop, &x->io, watch); /* no system call when unchanged */
    if (r == 0 && !nghttp2_session_want_read(x->h2) && !nghttp2_session_want_write(x->h2))
        return H2_IO_FINISHED;
    return H2_IO_OPEN;
}

/* Frees the session and the TLS connection, after TLS close_notify. */
static void h2_io_end(struct h2_io *x)
{
    if (x->h2)
        nghttp2_session_del(x->h2);
    x->h2 = NULL;
    if (x->tls) {
        if (x->tls_ready)
            tls_shutdown(x->tls); /* one try: the socket closes next anyway */
        tls_conn_free(x->tls);
        x->tls = NULL;
    }
}

void h2_io_linger(struct h2_io *x, struct ev_loop *loop)
{
    h2_io_end(x);
    linger_shut(x->io.fd);
    ev_io_modify(loop, &x->io, EV_READ);
}

void h2_io_close(struct h2_io *x, struct ev_loop *loop)
{
    ev_io_stop(loop, &x->io);
    h2_io_end(x);
    close(x->io.fd);
    x->io.fd = -1;
    outq_clear(&x->out);
}

ssize_t h2_io_body_read(struct h2_io_body *b, uint8_t *buf, size_t length, uint32_t *data_flags)
{
    size_t n = b->len - b->sent;
    if (n > length)
        n = length;
    memcpy(buf, b->data + b->sent, n);
    b->sent += n;
    if (b->sent == b->len)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}
