/* test_ev.c - unit tests for the event loop (ev.c): timer order, repeating,
 * stopping (from other callbacks and from their own) and restarting timers,
 * a thousand random timers against the heap; level- and edge-triggered io
 * watchers on pipes and socketpairs, hang-up reporting, watchers stopped by
 * another callback of the same batch; the prepare hook; ev_stop; signals.
 *
 * Every run is bounded by a guard timer that stops the loop; a test that
 * should end by itself asserts that the guard did not fire.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/ev.h"
#include "test_rng.h"

/* Same clock and truncation as the loop's, so the two can be compared. */
static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int setup(void **state)
{
    struct ev_loop *loop = ev_loop_new();
    if (!loop)
        return -1;
    rng_state = 0x2545F4914F6CDD1Du;
    *state = loop;
    return 0;
}

static int teardown(void **state)
{
    ev_loop_free(*state);
    return 0;
}

/* ---- Stoppers: a timer that ends ev_run ---------------------------------- */

struct stopper {
    struct ev_timer t;
    bool fired;
};

static void stopper_cb(struct ev_loop *loop, struct ev_timer *t)
{
    struct stopper *s = t->data;
    s->fired = true;
    ev_stop(loop);
}

static void stopper_start(struct ev_loop *loop, struct stopper *s, uint64_t ms)
{
    s->fired = false;
    ev_timer_init(&s->t, stopper_cb, s);
    ev_timer_start(loop, &s->t, ms, 0);
}

/* The guard bounds a test that is expected to stop the loop itself. */
#define GUARD_MS 3000

static void run_guarded(struct ev_loop *loop)
{
    struct stopper guard;
    stopper_start(loop, &guard, GUARD_MS);
    assert_int_equal(ev_run(loop), 0);
    ev_timer_stop(loop, &guard.t);
    if (guard.fired)
        fail_msg("the loop did not stop by itself within %d ms", GUARD_MS);
}

/* Runs until a stopper at ms ends the loop (nothing else should stop it). */
static void run_for(struct ev_loop *loop, uint64_t ms)
{
    struct stopper s;
    stopper_start(loop, &s, ms);
    assert_int_equal(ev_run(loop), 0);
    ev_timer_stop(loop, &s.t);
    assert_true(s.fired);
}

/* ---- Timers ------------------------------------------------------------- */

struct rec {
    struct ev_timer t;
    int id;
    int calls;
    uint64_t fired_now; /* ev_now() at the last call */
    uint64_t fired_at;  /* real clock at the last call */
    int *order, *norder;
    bool stop_loop;
};

static void rec_cb(struct ev_loop *loop, struct ev_timer *t)
{
    struct rec *r = t->data;
    r->calls++;
    r->fired_now = ev_now(loop);
    r->fired_at = mono_ms();
    if (r->order)
        r->order[(*r->norder)++] = r->id;
    if (r->stop_loop)
        ev_stop(loop);
}

static void rec_init(struct rec *r, int id, int *order, int *norder)
{
    memset(r, 0, sizeof *r);
    ev_timer_init(&r->t, rec_cb, r);
    r->id = id;
    r->order = order;
    r->norder = norder;
}

static void test_timers_fire_in_deadline_order(void **state)
{
    struct ev_loop *loop = *state;
    static const uint64_t after[] = {30, 10, 50, 0, 20, 40};
    enum { N = sizeof after / sizeof after[0] };
    struct rec r[N];
    int order[N * 2], norder = 0;

    uint64_t start = ev_update_now(loop);
    for (int i = 0; i < N; i++) {
        rec_init(&r[i], i, order, &norder);
        ev_timer_start(loop, &r[i].t, after[i], 0);
        assert_true(ev_timer_active(&r[i].t));
        assert_int_equal(r[i].t.when_ms, start + after[i]);
    }
    r[2].stop_loop = true; /* the latest one */
    run_guarded(loop);

    static const int want[N] = {3, 1, 4, 0, 5, 2};
    assert_int_equal(norder, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(order[i], want[i]);
        assert_int_equal(r[i].calls, 1);
        assert_false(ev_timer_active(&r[i].t));
        /* Never early. */
        assert_true(r[i].fired_at >= start + after[i]);
        assert_true(r[i].fired_now >= start + after[i]);
    }
}

struct repeater {
    struct ev_timer t;
    int calls, stop_after;
    uint64_t now[8];
    struct stopper *end;
};

static void repeater_cb(struct ev_loop *loop, struct ev_timer *t)
{
    struct repeater *r = t->data;
    assert_true(r->calls < 8);
    r->now[r->calls++] = ev_now(loop);
    if (r->calls == r->stop_after) {
        ev_timer_stop(loop, t); /* a repeating timer stops itself */
        stopper_start(loop, r->end, 30);
    }
}

static void test_repeat_timer_repeats(void **state)
{
    struct ev_loop *loop = *state;
    struct stopper end = {0};
    struct repeater r = {.stop_after = 5, .end = &end};
    ev_timer_init(&r.t, repeater_cb, &r);
    ev_update_now(loop);
    ev_timer_start(loop, &r.t, 5, 5);
    assert_int_equal(r.t.repeat_ms, 5);

    struct stopper guard;
    stopper_start(loop, &guard, GUARD_MS);
    assert_int_equal(ev_run(loop), 0);
    ev_timer_stop(loop, &guard.t);
    assert_false(guard.fired);
    assert_true(end.fired);

    /* Five calls, not one more in the 30 ms after it stopped itself. */
    assert_int_equal(r.calls, 5);
    assert_false(ev_timer_active(&r.t));
    for (int i = 1; i < 5; i++)
        assert_true(r.now[i] - r.now[i - 1] >= 5);
}

struct stopper_of {
    struct ev_timer t;
    struct ev_timer *victims[4];
    int calls;
};

static void stopper_of_cb(struct ev_loop *loop, struct ev_timer *t)
{
    struct stopper_of *s = t->data;
    s->calls++;
    for (int i = 0; i < 4 && s->victims[i]; i++) {
        assert_true(ev_timer_active(s->victims[i]));
        ev_timer_stop(loop, s->victims[i]);
        assert_false(ev_timer_active(s->victims[i]));
    }
}

/* A stops B, which is due in the same pass, and C, which is due later. */
static void test_stop_timer_from_other_callback(void **state)
{
    struct ev_loop *loop = *state;
    struct rec b, c, d;
    rec_init(&b, 1, NULL, NULL);
    rec_init(&c, 2, NULL, NULL);
    rec_init(&d, 3, NULL, NULL);
    struct stopper_of a = {.victims = {&b.t, &c.t}};
    ev_timer_init(&a.t, stopper_of_cb, &a);

    ev_update_now(loop);
    ev_timer_start(loop, &a.t, 10, 0);
    ev_timer_start(loop, &b.t, 11, 0);
    ev_timer_start(loop, &d.t, 12, 0);
    ev_timer_start(loop, &c.t, 40, 0);
    /* Make A, B and D all due when the loop first looks. */
    sleep_ms(30);
    run_for(loop, 80);

    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 0);
    assert_int_equal(c.calls, 0);
    assert_int_equal(d.calls, 1); /* the heap survived the removals */
}

struct self_stop {
    struct ev_timer t;
    int calls;
};

static void self_stop_cb(struct ev_loop *loop, struct ev_timer *t)
{
    struct self_stop *s = t->data;
    s->calls++;
    ev_timer_stop(loop, t);
    assert_false(ev_timer_active(t));
}

static void test_timer_stops_itself(void **state)
{
    struct ev_loop *loop = *state;
    struct self_stop once = {0}, rep = {0};
    ev_timer_init(&once.t, self_stop_cb, &once);
    ev_timer_init(&rep.t, self_stop_cb, &rep);
    ev_timer_start(loop, &once.t, 1, 0);
    ev_timer_start(loop, &rep.t, 1, 2);
    run_for(loop, 40);
    assert_int_equal(once.calls, 1);
    assert_int_equal(rep.calls, 1);
    assert_false(ev_timer_active(&rep.t));
}

struct rearm {
    struct ev_timer t;
    int calls;
};

static void rearm_cb(struct ev_loop *loop, struct ev_timer *t)
{
    struct rearm *r = t->data;
    if (++r->calls < 3)
        ev_timer_start(loop, t, 2, 0);
    else
        ev_stop(loop);
}

/* A one-shot timer may start itself again from its callback. */
static void test_timer_rearms_itself(void **state)
{
    struct ev_loop *loop = *state;
    struct rearm r = {0};
    ev_timer_init(&r.t, rearm_cb, &r);
    ev_timer_start(loop, &r.t, 2, 0);
    run_guarded(loop);
    assert_int_equal(r.calls, 3);
    assert_false(ev_timer_active(&r.t));
}

struct restarter {
    struct ev_timer t;
    struct ev_timer *target;
    uint64_t now;
};

static void restarter_cb(struct ev_loop *loop, struct ev_timer *t)
{
    struct restarter *r = t->data;
    assert_true(ev_timer_active(r->target));
    r->now = ev_now(loop);
    ev_timer_start(loop, r->target, 60, 0);
}

static void test_restart_active_timer(void **state)
{
    struct ev_loop *loop = *state;

    /* Before the loop runs: the second start replaces the first. */
    struct rec a;
    rec_init(&a, 0, NULL, NULL);
    uint64_t start = ev_update_now(loop);
    ev_timer_start(loop, &a.t, 10, 0);
    ev_timer_start(loop, &a.t, 60, 0);
    assert_int_equal(a.t.when_ms, start + 60);
    run_for(loop, 120);
    assert_int_equal(a.calls, 1);
    assert_true(a.fired_at >= start + 60);

    /* From another timer's callback, with more timers around it in the heap
     * (all due before t's new deadline; t then ends the loop). */
    struct rec t, others[8];
    rec_init(&t, 0, NULL, NULL);
    t.stop_loop = true;
    struct restarter r = {.target = &t.t};
    ev_timer_init(&r.t, restarter_cb, &r);
    start = ev_update_now(loop);
    for (int i = 0; i < 8; i++) {
        rec_init(&others[i], i, NULL, NULL);
        ev_timer_start(loop, &others[i].t, 15 + 5 * (uint64_t)i, 0);
    }
    ev_timer_start(loop, &t.t, 20, 0);
    ev_timer_start(loop, &r.t, 5, 0);
    run_guarded(loop);
    assert_true(r.now >= start + 5);
    assert_int_equal(t.calls, 1);
    assert_true(t.fired_now >= r.now + 60);
    for (int i = 0; i < 8; i++)
        assert_int_equal(others[i].calls, 1);
}

/* ---- Many timers against the heap --------------------------------------- */

#define NT 1000

struct many {
    struct ev_timer t[NT];
    int calls[NT];
    bool stopped[NT];
    uint64_t deadline[NT];
    int order[NT];
    int norder;
    uint64_t last_when;
    bool out_of_order;
};

static struct many many;

static void many_cb(struct ev_loop *loop, struct ev_timer *t)
{
    int i = (int)(t - many.t);
    assert_true(i >= 0 && i < NT);
    assert_false(many.stopped[i]);
    assert_true(ev_now(loop) >= many.deadline[i]);
    assert_int_equal(t->when_ms, many.deadline[i]);
    if (t->when_ms < many.last_when)
        many.out_of_order = true;
    many.last_when = t->when_ms;
    many.calls[i]++;
    many.order[many.norder++] = i;
    /* Some callbacks stop another timer, wherever it is in the heap. */
    if (i % 5 == 2) {
        int j = (i * 7 + 3) % NT;
        if (ev_timer_active(&many.t[j])) {
            ev_timer_stop(loop, &many.t[j]);
            many.stopped[j] = true;
        }
    }
}

static void test_many_random_timers(void **state)
{
    struct ev_loop *loop = *state;
    memset(&many, 0, sizeof many);
    uint64_t start = ev_update_now(loop);
    for (int i = 0; i < NT; i++) {
        ev_timer_init(&many.t[i], many_cb, NULL);
        uint64_t after = rnd(200);
        ev_timer_start(loop, &many.t[i], after, 0);
        many.deadline[i] = start + after;
    }
    /* Stop a quarter and move another quarter before running. */
    for (int i = 0; i < NT; i += 4) {
        ev_timer_stop(loop, &many.t[i]);
        many.stopped[i] = true;
    }
    for (int i = 1; i < NT; i += 4) {
        uint64_t after = rnd(200);
        ev_timer_start(loop, &many.t[i], after, 0);
        many.deadline[i] = start + after;
    }
    run_for(loop, 400);

    assert_false(many.out_of_order);
    int fired = 0;
    for (int i = 0; i < NT; i++) {
        assert_false(ev_timer_active(&many.t[i]));
        if (many.stopped[i] && many.calls[i] == 0)
            continue;
        if (many.calls[i] != 1)
            fail_msg("timer %d fired %d times", i, many.calls[i]);
        fired++;
    }
    assert_int_equal(fired, many.norder);
    assert_true(fired > NT / 2);
    for (int k = 1; k < many.norder; k++)
        assert_true(many.deadline[many.order[k - 1]] <= many.deadline[many.order[k]]);
}

/* ---- io watchers -------------------------------------------------------- */

struct watch {
    struct ev_io io;
    int calls;
    uint32_t events[16];
    bool drain, stop_loop;
    int stop_self_after;
    struct stopper *end_after_self_stop; /* started 20 ms after stopping itself */
    struct watch *stop_other;
};

static void watch_cb(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct watch *w = io->data;
    if (w->calls < 16)
        w->events[w->calls] = events;
    w->calls++;
    if (w->drain) {
        char buf[64];
        while (read(io->fd, buf, sizeof buf) > 0)
            ;
    }
    if (w->stop_other && w->stop_other->io.events) {
        ev_io_stop(loop, &w->stop_other->io);
        w->stop_other->stop_other = NULL;
    }
    if (w->stop_self_after && w->calls == w->stop_self_after) {
        ev_io_stop(loop, io);
        if (w->end_after_self_stop)
            stopper_start(loop, w->end_after_self_stop, 20);
    }
    if (w->stop_loop)
        ev_stop(loop);
}

static void watch_init(struct watch *w, int fd)
{
    memset(w, 0, sizeof *w);
    w->io.fd = fd;
    w->io.cb = watch_cb;
    w->io.data = w;
}

static void test_io_read_on_pipe(void **state)
{
    struct ev_loop *loop = *state;
    int fds[2];
    assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    struct watch w;
    watch_init(&w, fds[0]);
    w.drain = true;
    w.stop_loop = true;
    assert_int_equal(ev_io_start(loop, &w.io, EV_READ), 0);
    assert_int_equal(w.io.events, EV_READ);
    assert_int_equal(write(fds[1], "x", 1), 1);
    run_guarded(loop);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.events[0], EV_READ);
    ev_io_stop(loop, &w.io);
    assert_int_equal(w.io.events, 0);
    close(fds[0]);
    close(fds[1]);
}

/* EV_WRITE on a writable socket, then switched to EV_READ with ev_io_modify. */
static void test_io_write_then_modify(void **state)
{
    struct ev_loop *loop = *state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct watch w;
    watch_init(&w, sv[0]);
    w.stop_loop = true;
    assert_int_equal(ev_io_start(loop, &w.io, EV_WRITE), 0);
    run_guarded(loop);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.events[0], EV_WRITE);

    assert_int_equal(ev_io_modify(loop, &w.io, EV_READ), 0);
    assert_int_equal(w.io.events, EV_READ);
    assert_int_equal(write(sv[1], "y", 1), 1);
    w.drain = true;
    run_guarded(loop);
    assert_int_equal(w.calls, 2);
    assert_int_equal(w.events[1], EV_READ);
    ev_io_stop(loop, &w.io);
    close(sv[0]);
    close(sv[1]);
}

/* A hang-up is reported as EV_READ | EV_WRITE | EV_HUP, even to a read-only watcher. */
static void test_io_hangup_reports_read_write(void **state)
{
    struct ev_loop *loop = *state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct watch w;
    watch_init(&w, sv[0]);
    w.stop_loop = true;
    assert_int_equal(ev_io_start(loop, &w.io, EV_READ), 0);
    close(sv[1]);
    run_guarded(loop);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.events[0], EV_READ | EV_WRITE | EV_HUP);
    ev_io_stop(loop, &w.io);
    close(sv[0]);
}

static void test_io_bad_start(void **state)
{
    struct ev_loop *loop = *state;
    struct watch w;
    watch_init(&w, -1);
    errno = 0;
    assert_int_equal(ev_io_start(loop, &w.io, EV_READ), -1);
    assert_int_equal(errno, EBADF);

    int fds[2];
    assert_int_equal(pipe2(fds, O_NONBLOCK), 0);
    watch_init(&w, fds[0]);
    assert_int_equal(ev_io_start(loop, &w.io, EV_READ), 0);
    errno = 0;
    assert_int_equal(ev_io_start(loop, &w.io, EV_READ), -1);
    assert_int_equal(errno, EEXIST);
    ev_io_stop(loop, &w.io);
    close(fds[0]);
    close(fds[1]);
}

struct edge_ctx {
    struct ev_timer t;
    int fd;
    int calls_before;
    struct watch *w;
    struct stopper end;
};

/* Writes the second byte, and ends the loop 30 ms later. */
static void edge_write_cb(struct ev_loop *loop, struct ev_timer *t)
{
    struct edge_ctx *c = t->data;
    c->calls_before = c->w->calls;
    assert_int_equal(write(c->fd, "b", 1), 1);
    stopper_start(loop, &c->end, 30);
}

/* Unread data is reported once; new data is reported once more. */
static void test_io_edge_triggered_once_per_data(void **state)
{
    struct ev_loop *loop = *state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct watch w;
    watch_init(&w, sv[0]); /* does not read */
    assert_int_equal(ev_io_start(loop, &w.io, EV_READ | EV_EDGE), 0);
    assert_int_equal(write(sv[1], "a", 1), 1);

    struct edge_ctx c = {.fd = sv[1], .calls_before = -1, .w = &w};
    ev_timer_init(&c.t, edge_write_cb, &c);
    ev_timer_start(loop, &c.t, 30, 0);
    run_guarded(loop);
    assert_true(c.end.fired);
    assert_int_equal(c.calls_before, 1);
    assert_int_equal(w.calls, 2);
    assert_int_equal(w.events[0], EV_READ);
    assert_int_equal(w.events[1], EV_READ);
    ev_io_stop(loop, &w.io);
    close(sv[0]);
    close(sv[1]);
}

/* Level-triggered, by contrast, reports unread data again and again. */
static void test_io_level_triggered_repeats(void **state)
{
    struct ev_loop *loop = *state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct watch w;
    watch_init(&w, sv[0]);
    struct stopper end = {0};
    w.stop_self_after = 3;
    w.end_after_self_stop = &end;
    assert_int_equal(ev_io_start(loop, &w.io, EV_READ), 0);
    assert_int_equal(write(sv[1], "a", 1), 1);
    run_guarded(loop);
    assert_true(end.fired);
    assert_int_equal(w.calls, 3); /* and none after it stopped itself */
    assert_int_equal(w.io.events, 0);
    close(sv[0]);
    close(sv[1]);
}

/* Two fds are ready in the same epoll_wait batch; whichever callback runs
 * first stops the other watcher, which must then not be called (the header:
 * "Callbacks may start and stop any watcher"). */
static void test_io_stopped_by_other_in_same_batch(void **state)
{
    struct ev_loop *loop = *state;
    int a[2], b[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b), 0);
    struct watch wa, wb;
    watch_init(&wa, a[0]);
    watch_init(&wb, b[0]);
    wa.drain = wb.drain = true;
    wa.stop_other = &wb;
    wb.stop_other = &wa;
    assert_int_equal(ev_io_start(loop, &wa.io, EV_READ), 0);
    assert_int_equal(ev_io_start(loop, &wb.io, EV_READ), 0);
    assert_int_equal(write(a[1], "a", 1), 1);
    assert_int_equal(write(b[1], "b", 1), 1);
    run_for(loop, 50);
    if (wa.calls + wb.calls != 1)
        fail_msg("callbacks ran %d + %d times; the stopped watcher was still called", wa.calls,
                 wb.calls);
    ev_io_stop(loop, &wa.io);
    ev_io_stop(loop, &wb.io);
    close(a[0]);
    close(a[1]);
    close(b[0]);
    close(b[1]);
}

/* ---- prepare, ev_stop ---------------------------------------------------- */

struct prep {
    int calls, busy_calls;
};

static bool prep_cb(struct ev_loop *loop, void *data)
{
    struct prep *p = data;
    if (++p->calls == p->busy_calls)
        ev_stop(loop);
    return p->calls < p->busy_calls;
}

/* While the hook reports work left, the loop must not sleep until the next
 * timer (the guard, 3 s away). */
static void test_prepare_busy_polls_without_blocking(void **state)
{
    struct ev_loop *loop = *state;
    struct prep p = {.busy_calls = 1000};
    ev_set_prepare(loop, prep_cb, &p);
    uint64_t t0 = mono_ms();
    run_guarded(loop);
    uint64_t took = mono_ms() - t0;
    ev_set_prepare(loop, NULL, NULL);
    assert_int_equal(p.calls, 1000);
    if (took > 1000)
        fail_msg("1000 busy iterations took %llu ms", (unsigned long long)took);
}

static bool idle_cb(struct ev_loop *loop, void *data)
{
    ((struct prep *)data)->calls++;
    return false;
}

/* An idle hook lets the loop sleep: a handful of calls in 50 ms, not a spin. */
static void test_prepare_idle_blocks(void **state)
{
    struct ev_loop *loop = *state;
    struct prep p = {0};
    ev_set_prepare(loop, idle_cb, &p);
    run_for(loop, 50);
    ev_set_prepare(loop, NULL, NULL);
    assert_true(p.calls >= 1);
    if (p.calls > 5)
        fail_msg("idle prepare hook called %d times in 50 ms", p.calls);
}

/* ev_stop from a callback ends ev_run, which can then be entered again. */
static void test_stop_and_run_again(void **state)
{
    struct ev_loop *loop = *state;
    struct rec a, b;
    rec_init(&a, 0, NULL, NULL);
    rec_init(&b, 1, NULL, NULL);
    a.stop_loop = b.stop_loop = true;
    ev_timer_start(loop, &a.t, 5, 0);
    ev_timer_start(loop, &b.t, 40, 0);
    run_guarded(loop);
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 0);
    assert_true(ev_timer_active(&b.t));
    run_guarded(loop);
    assert_int_equal(b.calls, 1);
}

/* ---- signals ------------------------------------------------------------- */

struct sigs {
    int usr1, usr2, other;
    void *data_seen;
};

static void sig_cb(struct ev_loop *loop, int signo, void *data)
{
    struct sigs *s = data;
    s->data_seen = data;
    if (signo == SIGUSR1)
        s->usr1++;
    else if (signo == SIGUSR2)
        s->usr2++;
    else
        s->other++;
    if (s->usr1 && s->usr2)
        ev_stop(loop);
}

static void test_signal_delivered(void **state)
{
    struct ev_loop *loop = *state;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    struct sigs s = {0};
    assert_int_equal(ev_signal_start(loop, &set, sig_cb, &s), 0);

    /* Blocked now, so raising only marks them pending for the signalfd. */
    sigset_t cur;
    assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
    assert_true(sigismember(&cur, SIGUSR1));
    assert_int_equal(raise(SIGUSR1), 0);
    assert_int_equal(raise(SIGUSR2), 0);
    run_guarded(loop);

    assert_int_equal(s.usr1, 1);
    assert_int_equal(s.usr2, 1);
    assert_int_equal(s.other, 0);
    assert_ptr_equal(s.data_seen, &s);
    assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &set, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_timers_fire_in_deadline_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_repeat_timer_repeats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_timer_from_other_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timer_stops_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timer_rearms_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_active_timer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_random_timers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_read_on_pipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_write_then_modify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_hangup_reports_read_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_bad_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_edge_triggered_once_per_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_level_triggered_repeats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_stopped_by_other_in_same_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prepare_busy_polls_without_blocking, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prepare_idle_blocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_and_run_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal_delivered, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
