/* outq.h - a connection's pending output: bytes copied into a private
 * buffer, interleaved with references to shared, reference-counted blocks
 * (a message encoded once and sent to many connections), written out with
 * writev in as few system calls as the kernel allows.
 *
 * Small pieces are cheaper to copy than to reference; callers decide which
 * to use. All memory is released when the queue drains, so an idle
 * connection holds none.
 */
#ifndef SHOOTOUT_OUTQ_H
#define SHOOTOUT_OUTQ_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

/* A shared block's reference count; embed it in the shared object and
 * give a release function that frees the object when the count is 0. A
 * block that threads share is made atomic (before another thread sees it):
 * its count then changes with atomic operations, which a block one thread
 * keeps does not pay for. */
struct outq_rc {
    uint32_t refs;
    bool atomic;
    void (*release)(struct outq_rc *rc);
};

static inline void outq_rc_get(struct outq_rc *rc)
{
    if (rc->atomic)
        __atomic_fetch_add(&rc->refs, 1, __ATOMIC_RELAXED);
    else
        rc->refs++;
}
static inline void outq_rc_put(struct outq_rc *rc)
{
    if (rc->atomic ? __atomic_sub_fetch(&rc->refs, 1, __ATOMIC_ACQ_REL) == 0 : --rc->refs == 0)
        rc->release(rc);
}

struct outq_ent {
    struct outq_rc *owner; /* NULL: bytes live in the queue's own buffer */
    const uint8_t *ptr;    /* shared bytes (owner != NULL) */
    uint32_t off;          /* own-buffer offset (owner == NULL) */
    uint32_t len;
};

struct outq {
    uint8_t *own;     /* copied bytes */
    uint32_t own_len, own_cap;
    struct outq_ent *ents;
    uint32_t head, count, cap; /* ents[head .. head + count) are pending */
    uint32_t head_sent;        /* bytes of ents[head] already written */
    size_t bytes;              /* pending bytes in total */
};

/* A zeroed struct outq is an empty queue. */

/* Returns space for n bytes at the end of the queue, to be filled at once
 * by the caller (before any other call on this queue). */
uint8_t *outq_reserve(struct outq *q, size_t n);
/* Appends a copy of data. */
void outq_copy(struct outq *q, const void *data, size_t n);
/* Appends a reference to shared bytes; takes a reference on owner, which
 * the queue drops once the bytes are written or the queue is cleared. */
void outq_share(struct outq *q, struct outq_rc *owner, const uint8_t *ptr, size_t n);

static inline size_t outq_pending(const struct outq *q) { return q->bytes; }

/* Writes as much as the socket takes. Returns 0 when everything was
 * written, 1 when the socket is full (wait for writability), -1 with errno
 * on a write error (the connection is dead). */
int outq_flush(struct outq *q, int fd);

struct iovec;

/* A transport's writev (TLS): the bytes taken, which may be fewer than
 * offered while it still has room, or -1 with errno (EAGAIN: full, wait
 * for what the transport says). */
typedef ssize_t (*outq_writev_fn)(void *arg, const struct iovec *iov, int iovcnt);
/* outq_flush through fn, with the same results; it goes on until fn fails
 * or everything is taken. */
int outq_flush_with(struct outq *q, outq_writev_fn fn, void *arg);
/* For writers other than writev (TLS, WebSocket framing): fills iov with
 * up to max pieces of the pending output, limit bytes at most, and returns
 * how many, with their total in *bytes; after writing some, the caller
 * drops the n bytes written with outq_consumed. */
int outq_iov(const struct outq *q, struct iovec *iov, int max, size_t limit, size_t *bytes);
void outq_consumed(struct outq *q, size_t n);

/* Drops everything pending and frees the queue's memory. */
void outq_clear(struct outq *q);

#endif
