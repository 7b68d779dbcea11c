/* outq.c - pending output with copied and shared pieces, flushed by writev. */
#include "core/outq.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "core/mem.h"

/* Enough iovecs to fill a socket buffer with small messages in one call,
 * far below IOV_MAX. */
#define OUTQ_IOV 256

/* A queue's first buffers are small when its first output is: a burst of
 * connects allocates each connection's CONNACK between the records that
 * stay (its connection and session) and frees it when flushed; 256 bytes
 * and 8 pieces made a 480-byte hole per connection that the next records
 * (176-byte chunks) only partly filled, about 75 bytes a connection lost
 * for good. Holes of 32 and 64 bytes are reused by the next connections'
 * small outputs. Past the small sizes a queue grows as before, so a busy
 * one reallocates its buffer and its pieces once more each per drain at
 * most. */
#define OUTQ_OWN_SMALL 32
#define OUTQ_OWN_FIRST 256
#define OUTQ_ENTS_SMALL 2
#define OUTQ_ENTS_FIRST 8

static struct outq_ent *outq_push(struct outq *q)
{
    if (q->head + q->count == q->cap) {
        if (q->head > q->cap / 2) {
            memmove(q->ents, q->ents + q->head, q->count * sizeof *q->ents);
            q->head = 0;
        } else {
            q->cap = !q->cap ? OUTQ_ENTS_SMALL : q->cap < OUTQ_ENTS_FIRST ? OUTQ_ENTS_FIRST : q->cap * 2;
            q->ents = mem_realloc(q->ents, q->cap * sizeof *q->ents);
        }
    }
    return &q->ents[q->head + q->count++];
}

uint8_t *outq_reserve(struct outq *q, size_t n)
{
    static uint8_t nothing[1];
    if (n == 0)
        return nothing; /* an empty piece would stall outq_flush */
    if (q->own_len + n > q->own_cap) {
        size_t need = q->own_len + n;
        size_t cap = need <= OUTQ_OWN_SMALL && !q->own_cap ? OUTQ_OWN_SMALL
                     : q->own_cap > OUTQ_OWN_FIRST        ? q->own_cap
                                                          : OUTQ_OWN_FIRST;
        while (cap < need)
            cap *= 2;
        q->own = mem_realloc(q->own, cap);
        q->own_cap = (uint32_t)cap;
    }
    /* Extend the last piece when it is also ours and ends here. */
    struct outq_ent *last = q->count ? &q->ents[q->head + q->count - 1] : NULL;
    if (last && !last->owner && last->off + last->len == q->own_len) {
        last->len += (uint32_t)n;
    } else {
        struct outq_ent *e = outq_push(q);
        e->owner = NULL;
        e->ptr = NULL;
        e->off = q->own_len;
        e->len = (uint32_t)n;
    }
    uint8_t *p = q->own + q->own_len;
    q->own_len += (uint32_t)n;
    q->bytes += n;
    return p;
}

void outq_copy(struct outq *q, const void *data, size_t n)
{
    if (n)
        memcpy(outq_reserve(q, n), data, n);
}

void outq_share(struct outq *q, struct outq_rc *owner, const uint8_t *ptr, size_t n)
{
    if (n == 0)
        return;
    outq_rc_get(owner);
    struct outq_ent *e = outq_push(q);
    e->owner = owner;
    e->ptr = ptr;
    e->off = 0;
    e->len = (uint32_t)n;
    q->bytes += n;
}

static void outq_release_memory(struct outq *q)
{
    mem_free(q->own);
    mem_free(q->ents);
    memset(q, 0, sizeof *q);
}

/* Own-buffer bytes before the first pending own piece are dead; move the
 * live ones down when the dead part is most of the buffer, so that a queue
 * that never quite drains does not grow without bound. */
static void outq_compact(struct outq *q)
{
    uint32_t first = q->own_len;
    for (uint32_t i = 0; i < q->count; i++) {
        struct outq_ent *e = &q->ents[q->head + i];
        if (!e->owner) {
            first = e->off + (i == 0 ? q->head_sent : 0);
            break;
        }
    }
    if (first < 65536 || first < q->own_len / 2)
        return;
    memmove(q->own, q->own + first, q->own_len - first);
    q->own_len -= first;
    for (uint32_t i = 0; i < q->count; i++) {
        struct outq_ent *e = &q->ents[q->head + i];
        if (!e->owner) {
            if (i == 0) {
                /* The head's written part is gone; fold it into the piece. */
                e->off = 0;
                e->len -= q->head_sent;
                q->head_sent = 0;
            } else {
                e->off -= first;
            }
        }
    }
}

int outq_iov(const struct outq *q, struct iovec *iov, int max, size_t limit, size_t *bytes)
{
    int n = 0;
    size_t offered = 0;
    for (uint32_t i = 0; i < q->count && n < max && offered < limit; i++) {
        const struct outq_ent *e = &q->ents[q->head + i];
        const uint8_t *base = e->owner ? e->ptr : q->own + e->off;
        uint32_t skip = i == 0 ? q->head_sent : 0;
        size_t len = e->len - skip;
        iov[n].iov_base = (void *)(base + skip);
        iov[n].iov_len = len < limit - offered ? len : limit - offered;
        offered += iov[n].iov_len;
        n++;
    }
    *bytes = offered;
    return n;
}

/* Drops n written bytes from the front. */
static void outq_drop(struct outq *q, size_t n)
{
    q->bytes -= n;
    while (n > 0) {
        struct outq_ent *e = &q->ents[q->head];
        uint32_t rest = e->len - q->head_sent;
        if (n < rest) {
            q->head_sent += (uint32_t)n;
            break;
        }
        n -= rest;
        if (e->owner)
            outq_rc_put(e->owner);
        q->head++;
        q->count--;
        q->head_sent = 0;
    }
}

void outq_consumed(struct outq *q, size_t n)
{
    outq_drop(q, n);
    if (q->count == 0)
        outq_release_memory(q);
    else
        outq_compact(q);
}

/* fn NULL: writev on fd, where a short write means the socket is full.
 * Otherwise fn, which may take less while having room (TLS takes one
 * record per call), so only EAGAIN stops it. */
static int outq_drain(struct outq *q, int fd, outq_writev_fn fn, void *arg)
{
    while (q->count > 0) {
        struct iovec iov[OUTQ_IOV];
        size_t offered;
        int n = outq_iov(q, iov, OUTQ_IOV, SIZE_MAX, &offered);
        ssize_t w = fn ? fn(arg, iov, n) : writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                outq_compact(q);
                return 1;
            }
            return -1;
        }
        outq_drop(q, (size_t)w);
        if (!fn && (size_t)w < offered) {
            /* Short write: the socket buffer is full. */
            outq_compact(q);
            return 1;
        }
    }
    outq_release_memory(q);
    return 0;
}

int outq_flush(struct outq *q, int fd)
{
    return outq_drain(q, fd, NULL, NULL);
}

int outq_flush_with(struct outq *q, outq_writev_fn fn, void *arg)
{
    return outq_drain(q, -1, fn, arg);
}

void outq_clear(struct outq *q)
{
    for (uint32_t i = 0; i < q->count; i++) {
        struct outq_ent *e = &q->ents[q->head + i];
        if (e->owner)
            outq_rc_put(e->owner);
    }
    outq_release_memory(q);
}
