/* inbuf.h - input buffering for stream parsers on non-blocking sockets.
 *
 * Reads go into a buffer shared by all connections of a thread; only when a
 * read ends inside a packet is the incomplete tail copied into the
 * connection's own buffer, and that buffer is freed again as soon as it
 * empties. Idle connections therefore hold no input memory at all.
 *
 *     size_t cap;
 *     uint8_t *dst = inbuf_read_target(&c->in, scratch, sizeof scratch, &cap);
 *     ssize_t n = read(fd, dst, cap);
 *     size_t len;
 *     const uint8_t *data = inbuf_filled(&c->in, scratch, n, &len);
 *     size_t used = parse(data, len);
 *     inbuf_consumed(&c->in, data, len, used);
 */
#ifndef SHOOTOUT_INBUF_H
#define SHOOTOUT_INBUF_H

#include <stddef.h>
#include <stdint.h>

/* A zeroed struct inbuf is empty. */
struct inbuf {
    uint8_t *data; /* owned; NULL while empty */
    uint32_t len, cap;
};

/* Where the next read goes (scratch, or the end of the pending tail) and,
 * in *cap, how much it may read. */
uint8_t *inbuf_read_target(struct inbuf *in, uint8_t *scratch, size_t scratch_len, size_t *cap);
/* After n bytes were read into the target: the bytes to parse. */
const uint8_t *inbuf_filled(struct inbuf *in, const uint8_t *scratch, size_t n, size_t *len);
/* After the parser used `used` of data[0..len): keeps the rest. */
void inbuf_consumed(struct inbuf *in, const uint8_t *data, size_t len, size_t used);
void inbuf_free(struct inbuf *in);

#endif
