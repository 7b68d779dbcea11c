/* ev.c - epoll event loop with a timer heap and signalfd signals. */
#include "core/ev.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/mem.h"

#define EV_MAX_EVENTS 1024

struct ev_loop {
    uint64_t now_ms; /* first: ev_now (ev.h) reads it inline */
    int epfd;
    bool running;
    struct ev_timer **heap; /* min-heap on when_ms */
    size_t heap_len, heap_cap;
    ev_prepare_fn prepare;
    void *prepare_data;
    struct ev_io signal_io;
    ev_signal_fn signal_fn;
    void *signal_data;
    int batch_next, batch_len; /* events of the current epoll_wait not yet dispatched */
    struct epoll_event events[EV_MAX_EVENTS];
};

struct ev_loop *ev_loop_new(void)
{
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        return NULL;
    struct ev_loop *loop = mem_calloc(1, sizeof *loop);
    loop->epfd = epfd;
    loop->now_ms = clock_now_ms();
    loop->signal_io.fd = -1;
    return loop;
}

void ev_loop_free(struct ev_loop *loop)
{
    if (!loop)
        return;
    if (loop->signal_io.fd >= 0)
        close(loop->signal_io.fd);
    close(loop->epfd);
    mem_free(loop->heap);
    mem_free(loop);
}

_Static_assert(offsetof(struct ev_loop, now_ms) == 0, "ev_now reads the clock as the loop's first member");

uint64_t ev_update_now(struct ev_loop *loop) { return loop->now_ms = clock_now_ms(); }

void ev_stop(struct ev_loop *loop) { loop->running = false; }

void ev_set_prepare(struct ev_loop *loop, ev_prepare_fn fn, void *data)
{
    loop->prepare = fn;
    loop->prepare_data = data;
}

/* ---- fds ---------------------------------------------------------------- */

static uint32_t ev_to_epoll(uint32_t events)
{
    uint32_t e = 0;
    if (events & EV_READ)
        e |= EPOLLIN | EPOLLRDHUP;
    if (events & EV_WRITE)
        e |= EPOLLOUT;
    if (events & EV_EDGE)
        e |= EPOLLET;
    return e;
}

static int ev_io_ctl(struct ev_loop *loop, int op, struct ev_io *io, uint32_t events)
{
    struct epoll_event ee = {.events = ev_to_epoll(events), .data.ptr = io};
    if (epoll_ctl(loop->epfd, op, io->fd, &ee) < 0)
        return -1;
    io->events = events;
    return 0;
}

int ev_io_start(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    return ev_io_ctl(loop, EPOLL_CTL_ADD, io, events);
}

int ev_io_modify(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    if (events == io->events)
        return 0;
    return ev_io_ctl(loop, EPOLL_CTL_MOD, io, events);
}

void ev_io_stop(struct ev_loop *loop, struct ev_io *io)
{
    epoll_ctl(loop->epfd, EPOLL_CTL_DEL, io->fd, NULL);
    io->events = 0;
    /* A stopped watcher may be freed at once: forget its pending events. */
    for (int i = loop->batch_next; i < loop->batch_len; i++)
        if (loop->events[i].data.ptr == io)
            loop->events[i].data.ptr = NULL;
}

/* ---- timers: a binary min-heap; heap_index is position + 1 --------------- */

static void ev_heap_set(struct ev_loop *loop, size_t i, struct ev_timer *t)
{
    loop->heap[i] = t;
    t->heap_index = i + 1;
}

static void ev_heap_up(struct ev_loop *loop, size_t i)
{
    struct ev_timer *t = loop->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (loop->heap[parent]->when_ms <= t->when_ms)
            break;
        ev_heap_set(loop, i, loop->heap[parent]);
        i = parent;
    }
    ev_heap_set(loop, i, t);
}

static void ev_heap_down(struct ev_loop *loop, size_t i)
{
    struct ev_timer *t = loop->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= loop->heap_len)
            break;
        if (child + 1 < loop->heap_len && loop->heap[child + 1]->when_ms < loop->heap[child]->when_ms)
            child++;
        if (t->when_ms <= loop->heap[child]->when_ms)
            break;
        ev_heap_set(loop, i, loop->heap[child]);
        i = child;
    }
    ev_heap_set(loop, i, t);
}

void ev_timer_init(struct ev_timer *t, ev_timer_fn cb, void *data)
{
    memset(t, 0, sizeof *t);
    t->cb = cb;
    t->data = data;
}

void ev_timer_stop(struct ev_loop *loop, struct ev_timer *t)
{
    if (!t->heap_index)
        return;
    size_t i = t->heap_index - 1;
    t->heap_index = 0;
    struct ev_timer *last = loop->heap[--loop->heap_len];
    if (last == t)
        return;
    ev_heap_set(loop, i, last);
    ev_heap_up(loop, i);
    ev_heap_down(loop, last->heap_index - 1);
}

void ev_timer_start(struct ev_loop *loop, struct ev_timer *t, uint64_t after_ms, uint64_t repeat_ms)
{
    ev_timer_stop(loop, t);
    t->when_ms = loop->now_ms + after_ms;
    t->repeat_ms = repeat_ms;
    if (loop->heap_len == loop->heap_cap) {
        loop->heap_cap = loop->heap_cap ? loop->heap_cap * 2 : 16;
        loop->heap = mem_realloc(loop->heap, loop->heap_cap * sizeof *loop->heap);
    }
    loop->heap_len++;
    ev_heap_set(loop, loop->heap_len - 1, t);
    ev_heap_up(loop, loop->heap_len - 1);
}

static void ev_run_timers(struct ev_loop *loop)
{
    while (loop->heap_len > 0 && loop->heap[0]->when_ms <= loop->now_ms) {
        struct ev_timer *t = loop->heap[0];
        ev_timer_stop(loop, t);
        if (t->repeat_ms)
            ev_timer_start(loop, t, t->repeat_ms, t->repeat_ms);
        t->cb(loop, t);
    }
}

/* ---- signals ------------------------------------------------------------- */

static void ev_signal_read(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct signalfd_siginfo si;
    while (read(io->fd, &si, sizeof si) == (ssize_t)sizeof si)
        loop->signal_fn(loop, (int)si.ssi_signo, loop->signal_data);
}

int ev_signal_start(struct ev_loop *loop, const sigset_t *set, ev_signal_fn fn, void *data)
{
    if (pthread_sigmask(SIG_BLOCK, set, NULL) != 0)
        return -1;
    int fd = signalfd(-1, set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        return -1;
    loop->signal_fn = fn;
    loop->signal_data = data;
    loop->signal_io.fd = fd;
    loop->signal_io.cb = ev_signal_read;
    if (ev_io_start(loop, &loop->signal_io, EV_READ) < 0) {
        close(fd);
        loop->signal_io.fd = -1;
        return -1;
    }
    return 0;
}

/* ---- the loop ----------------------------------------------------------- */

/* One iteration: prepare, wait (at most max_wait_ms; -1 = until the next
 * timer), dispatch, timers. */
static int ev_iterate(struct ev_loop *loop, int max_wait_ms)
{
    bool busy = loop->prepare && loop->prepare(loop, loop->prepare_data);
    if (!loop->running)
        return 0;
    int timeout = max_wait_ms;
    if (busy) {
        timeout = 0;
    } else if (loop->heap_len > 0) {
        uint64_t when = loop->heap[0]->when_ms;
        uint64_t wait = when <= loop->now_ms ? 0 : when - loop->now_ms;
        int until = wait > INT_MAX ? INT_MAX : (int)wait;
        if (timeout < 0 || until < timeout)
            timeout = until;
    }
    int n = epoll_wait(loop->epfd, loop->events, EV_MAX_EVENTS, timeout);
    if (n < 0 && errno != EINTR)
        return -1;
    loop->now_ms = clock_now_ms();
    loop->batch_len = n;
    for (int i = 0; i < n; i++) {
        loop->batch_next = i + 1;
        struct ev_io *io = loop->events[i].data.ptr;
        if (!io)
            continue;
        uint32_t e = loop->events[i].events, got = 0;
        if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            got |= EV_READ;
        if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
            got |= EV_WRITE;
        if (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            got |= EV_HUP;
        io->cb(loop, io, got);
    }
    loop->batch_len = 0;
    ev_run_timers(loop);
    return 0;
}

int ev_run(struct ev_loop *loop)
{
    loop->running = true;
    while (loop->running)
        if (ev_iterate(loop, -1) < 0)
            return -1;
    return 0;
}

int ev_run_once(struct ev_loop *loop, int max_wait_ms)
{
    loop->running = true;
    return ev_iterate(loop, max_wait_ms);
}
