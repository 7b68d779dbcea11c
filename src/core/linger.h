/* linger.h - the lingering close every server of shootout uses once it has
 * written its last answer on a connection (an error response, a DISCONNECT,
 * a GOAWAY, a refusal) while the client may still be sending.
 *
 * Closing a socket with unread input makes the kernel send a reset, which
 * throws away what was still in our send buffer and may destroy what the
 * client has not read yet: the very answer that says why. So the server
 * writes its answer, shuts the write side (the client reads the answer,
 * then the end of the stream), and reads and drops what still comes, until
 * the client closes too, for LINGER_MS at most. A client flooding all that
 * time costs at most LINGER_MAX_BYTES of reading: past it the server reads
 * no more and waits for the time to run out.
 */
#ifndef SHOOTOUT_LINGER_H
#define SHOOTOUT_LINGER_H

#include <stdint.h>

/* How long a closing connection is kept: for its last output to go out and
 * for the client to see it and close. */
#define LINGER_MS 2000
/* Input read and dropped per lingering connection at most. */
#define LINGER_MAX_BYTES (1u << 20)

enum linger_read {
    LINGER_AGAIN, /* nothing more to read now: wait for readability */
    LINGER_EOF,   /* the client closed (or the connection failed): close now */
    LINGER_FULL,  /* LINGER_MAX_BYTES dropped: read no more, close when the time is up */
};

/* Reads and drops what fd holds, counting it in *dropped (which starts at
 * 0), until EAGAIN, the end of the stream or the byte bound. */
enum linger_read linger_discard(int fd, uint32_t *dropped);

/* Shuts the write side: after what was written, the client reads the end
 * of the stream. */
void linger_shut(int fd);

#endif
