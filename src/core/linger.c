/* linger.c - reading and dropping a closing connection's input (linger.h). */
#include "core/linger.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

enum linger_read linger_discard(int fd, uint32_t *dropped)
{
    char sink[16384];
    while (*dropped < LINGER_MAX_BYTES) {
        size_t want = LINGER_MAX_BYTES - *dropped;
        ssize_t n = read(fd, sink, want < sizeof sink ? want : sizeof sink);
        if (n > 0) {
            *dropped += (uint32_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return LINGER_AGAIN;
        return LINGER_EOF;
    }
    return LINGER_FULL;
}

void linger_shut(int fd) { shutdown(fd, SHUT_WR); }
