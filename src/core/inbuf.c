/* inbuf.c - shared-scratch input buffering with per-connection tails. */
#include "core/inbuf.h"

#include <string.h>

#include "core/mem.h"

/* Room made after a pending tail for the next read. */
#define INBUF_ROOM (16 * 1024)

static void inbuf_reserve(struct inbuf *in, size_t room)
{
    size_t want = (size_t)in->len + room;
    if (in->cap >= want)
        return;
    /* Doubling keeps a large packet arriving in many reads linear. */
    size_t cap = (size_t)in->cap * 2;
    in->cap = (uint32_t)(cap > want ? cap : want);
    in->data = mem_realloc(in->data, in->cap);
}

uint8_t *inbuf_read_target(struct inbuf *in, uint8_t *scratch, size_t scratch_len, size_t *cap)
{
    if (in->len == 0) {
        *cap = scratch_len;
        return scratch;
    }
    inbuf_reserve(in, INBUF_ROOM);
    *cap = in->cap - in->len;
    return in->data + in->len;
}

const uint8_t *inbuf_filled(struct inbuf *in, const uint8_t *scratch, size_t n, size_t *len)
{
    if (in->len == 0) {
        *len = n;
        return scratch;
    }
    in->len += (uint32_t)n;
    *len = in->len;
    return in->data;
}

void inbuf_consumed(struct inbuf *in, const uint8_t *data, size_t len, size_t used)
{
    size_t rest = len - used;
    if (rest == 0) {
        inbuf_free(in);
    } else if (in->len > 0) {
        /* data is our own buffer */
        memmove(in->data, in->data + used, rest);
        in->len = (uint32_t)rest;
    } else {
        inbuf_reserve(in, rest);
        memcpy(in->data, data + used, rest);
        in->len = (uint32_t)rest;
    }
}

void inbuf_free(struct inbuf *in)
{
    mem_free(in->data);
    in->data = NULL;
    in->len = in->cap = 0;
}
