/* ev.h - the event loop: epoll for file descriptors, a binary heap of
 * timers, signalfd for signals, and a hook that runs once per iteration
 * before the loop sleeps (where servers flush their output).
 *
 * One loop per thread; nothing here is thread-safe. Callbacks may start and
 * stop any watcher, including their own.
 */
#ifndef SHOOTOUT_EV_H
#define SHOOTOUT_EV_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EV_READ 0x1u
#define EV_WRITE 0x2u
/* Edge-triggered: report readiness once per change. The callback must then
 * read (or write) until EAGAIN, or remember that it stopped early. */
#define EV_EDGE 0x4u
/* Reported (with EV_READ) when the peer closed its side or the connection
 * failed. Without it, a short read means the socket is drained, so an
 * edge-triggered reader may stop there and save the read that would only
 * return EAGAIN; with it, the reader must go on to see the end. */
#define EV_HUP 0x8u

struct ev_loop;
struct ev_io;
struct ev_timer;

typedef void (*ev_io_fn)(struct ev_loop *loop, struct ev_io *io, uint32_t events);
typedef void (*ev_timer_fn)(struct ev_loop *loop, struct ev_timer *t);
typedef void (*ev_signal_fn)(struct ev_loop *loop, int signo, void *data);
/* Runs before each sleep. Returns true if it left work undone, in which case
 * the loop polls without blocking and calls it again soon. */
typedef bool (*ev_prepare_fn)(struct ev_loop *loop, void *data);

/* Caller-owned watcher of one fd; must stay valid while registered. Error
 * and hang-up conditions are reported as EV_READ | EV_WRITE, so that the
 * callback's next read or write sees the error itself. */
struct ev_io {
    int fd;
    uint32_t events;
    ev_io_fn cb;
    void *data;
};

/* Caller-owned timer; zero it (or ev_timer_init) before first use. */
struct ev_timer {
    uint64_t when_ms;   /* loop time at which it fires */
    uint64_t repeat_ms; /* 0 = one shot */
    ev_timer_fn cb;
    void *data;
    size_t heap_index; /* 0 = not scheduled, else position + 1 */
};

struct ev_loop *ev_loop_new(void);
/* Frees the loop (not the watchers) and closes its own descriptors. */
void ev_loop_free(struct ev_loop *loop);

/* Runs until ev_stop() is called. Returns 0, or -1 if epoll failed. */
int ev_run(struct ev_loop *loop);
void ev_stop(struct ev_loop *loop);
/* Runs one iteration, waiting at most max_wait_ms (0 = poll) for events.
 * For tests and harnesses that drive the loop step by step. */
int ev_run_once(struct ev_loop *loop, int max_wait_ms);

/* Monotonic milliseconds, read once per iteration. Inline, as the broker
 * reads it for every packet: the clock is the loop's first member (C11
 * lets a pointer to a struct point at its first member; ev.c asserts the
 * place). */
static inline uint64_t ev_now(const struct ev_loop *loop) { return *(const uint64_t *)(const void *)loop; }
/* Re-reads the clock now. */
uint64_t ev_update_now(struct ev_loop *loop);

/* Register io (io->fd, io->cb set by the caller) for events. 0 or -1/errno. */
int ev_io_start(struct ev_loop *loop, struct ev_io *io, uint32_t events);
int ev_io_modify(struct ev_loop *loop, struct ev_io *io, uint32_t events);
/* Closing the fd also unregisters it; ev_io_stop is for fds kept open. */
void ev_io_stop(struct ev_loop *loop, struct ev_io *io);

void ev_timer_init(struct ev_timer *t, ev_timer_fn cb, void *data);
void ev_timer_start(struct ev_loop *loop, struct ev_timer *t, uint64_t after_ms, uint64_t repeat_ms);
void ev_timer_stop(struct ev_loop *loop, struct ev_timer *t);
static inline bool ev_timer_active(const struct ev_timer *t) { return t->heap_index != 0; }

/* Blocks the signals in set for the calling thread and delivers them to fn
 * through the loop. Only one signal set per loop. 0 or -1/errno. */
int ev_signal_start(struct ev_loop *loop, const sigset_t *set, ev_signal_fn fn, void *data);

void ev_set_prepare(struct ev_loop *loop, ev_prepare_fn fn, void *data);

#endif
