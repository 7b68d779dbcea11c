/* h2_io.c - socket <-> nghttp2 session; see h2_io.h. */
#include "http/h2_io.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#define H2_IO_CHUNK (64 * 1024)

static _Thread_local uint8_t h2_io_rbuf[H2_IO_CHUNK];
static _Thread_local uint8_t h2_io_wbuf[H2_IO_CHUNK];

int h2_io_read(nghttp2_session *s, int fd, size_t budget, const char **why)
{
    size_t done = 0;
    while (done < budget) {
        ssize_t n = read(fd, h2_io_rbuf, sizeof h2_io_rbuf);
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
        ssize_t rv = nghttp2_session_mem_recv(s, h2_io_rbuf, (size_t)n);
        if (rv < 0) {
            errno = 0;
            *why = nghttp2_strerror((int)rv);
            return -1;
        }
        done += (size_t)n;
        if ((size_t)n < sizeof h2_io_rbuf)
            return 0;
    }
    return 0;
}

/* Writes p[0..len) with out empty; what the socket does not take goes
 * into out. 0, 1 (socket full) or -1. */
static int h2_io_write(int fd, const uint8_t *p, size_t len, struct outq *out, const char **why)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                outq_copy(out, p, len);
                return 1;
            }
            *why = strerror(errno);
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int h2_io_flush(nghttp2_session *s, int fd, struct outq *out, const char **why)
{
    if (outq_pending(out) > 0) {
        int r = outq_flush(out, fd);
        if (r < 0)
            *why = strerror(errno);
        if (r != 0)
            return r;
    }
    size_t fill = 0;
    for (;;) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(s, &p);
        if (n < 0) {
            errno = 0;
            *why = nghttp2_strerror((int)n);
            return -1;
        }
        if (n == 0)
            break;
        if (fill + (size_t)n > sizeof h2_io_wbuf && fill > 0) {
            int r = h2_io_write(fd, h2_io_wbuf, fill, out, why);
            fill = 0;
            if (r > 0)
                outq_copy(out, p, (size_t)n); /* p is gone at the next mem_send */
            if (r != 0)
                return r;
        }
        if ((size_t)n > sizeof h2_io_wbuf) {
            int r = h2_io_write(fd, p, (size_t)n, out, why);
            if (r != 0)
                return r;
            continue;
        }
        memcpy(h2_io_wbuf + fill, p, (size_t)n);
        fill += (size_t)n;
    }
    return fill > 0 ? h2_io_write(fd, h2_io_wbuf, fill, out, why) : 0;
}
