/* car_rest.c - the REST side of car-server: HTTP/1.1 connections on a
 * worker's event loop, around the protocol machine of car_rest_proto.c.
 *
 * The hot path is one request in, one response out, in three system calls
 * (epoll_wait, read, write). Sockets are registered edge-triggered for both
 * directions once. A read lands in the thread's shared input buffer; every
 * complete request in it is answered into the thread's shared output
 * buffer, which is written with one write() when nothing is queued ahead
 * of it. Only what the socket does not take is copied into the
 * connection's outq, and only an incomplete request into its inbuf, so a
 * request that arrives whole allocates nothing and an idle connection holds
 * no buffer.
 *
 * Connections that need the loop before it sleeps (one that used up its
 * read budget, whose output drained after a pause, that starts lingering,
 * or that was closed and waits to be freed) are moved to the front of the
 * worker's list, so car_rest_prepare finds them without scanning the rest.
 * New connections enter there too, which keeps that invariant for free.
 *
 * One timer per connection covers every wait (idle keep-alive, a slow
 * request, a client that does not read, lingering); it is rearmed only when
 * the deadline moves earlier, so completing a request costs no timer work.
 */
#include "car/car_rest.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "car/car_rest_proto.h"
#include "car/car_server.h"
#include "core/inbuf.h"
#include "core/linger.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/outq.h"
#include "http/http_server.h"

#define REST_READ_CHUNK (64 * 1024)
/* Bytes read from one connection per loop iteration before the others get
 * their turn. */
#define REST_READ_BUDGET (256 * 1024)
/* Responses produced per feed before they are written out. */
#define REST_OUT_CHUNK (16 * 1024)

static _Thread_local uint8_t rest_rbuf[REST_READ_CHUNK];
static _Thread_local char rest_obuf[REST_OUT_CHUNK];

enum rest_state {
    REST_OPEN,
    REST_CLOSING, /* the last response is queued; linger once it is out */
    REST_LINGER,  /* write side shut; dropping input until EOF (core/linger.h): a
                   * reset could destroy the last response (a 413 sent while
                   * the body is still coming, say) */
    REST_CLOSED,  /* waiting in the front of the list to be freed */
};

/* What the connection's timer measures. */
enum rest_wait {
    WAIT_IDLE,    /* no request begun: idle_timeout_ms */
    WAIT_REQUEST, /* a request begun: request_timeout_ms, then 408 */
    WAIT_WRITE,   /* output the client does not take: idle_timeout_ms */
    WAIT_LINGER,  /* LINGER_MS */
};

struct car_rest_conn {
    struct ev_io io;
    struct ev_timer timer;
    struct car_worker *w;
    struct car_rest_conn *prev, *next; /* w->rest_conns */
    struct inbuf in;
    struct outq out;
    struct car_rest_proto proto;
    uint64_t since_ms;      /* when the current wait began */
    uint64_t requests_seen; /* proto.requests when last looked at */
    enum rest_state state;
    enum rest_wait wait;
    bool attention;  /* in the front segment of the list */
    bool resume;     /* car_rest_prepare must read it */
    bool paused;     /* input left unhandled until the output drains */
    bool peer_done;  /* the client closed its side */
    uint32_t dropped; /* REST_LINGER: input dropped */
    bool progress;   /* a request was answered or output written: the wait restarts */
};

static void rest_env(struct car_worker *w, struct car_rest_env *env)
{
    env->max_header = w->cfg->max_header;
    env->max_body = w->cfg->max_body;
    env->date = http_date();
    env->draining = w->draining;
    env->log_requests = w->cfg->log_requests;
    env->stats = &w->stats;
}

/* ---- The worker's list ---------------------------------------------------- */

static void rest_unlink(struct car_rest_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        c->w->rest_conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void rest_push_front(struct car_rest_conn *c)
{
    c->next = c->w->rest_conns;
    if (c->next)
        c->next->prev = c;
    c->w->rest_conns = c;
}

/* Moves c to the front segment that car_rest_prepare visits. */
static void rest_attend(struct car_rest_conn *c)
{
    if (c->attention)
        return;
    c->attention = true;
    rest_unlink(c);
    rest_push_front(c);
}

static void rest_resume_later(struct car_rest_conn *c)
{
    c->resume = true;
    rest_attend(c);
}

/* Closes at once; the memory is freed by car_rest_prepare, as callers up
 * the stack (and events still pending in this loop iteration) may hold c. */
static void rest_close(struct car_rest_conn *c, const char *why)
{
    if (c->state == REST_CLOSED)
        return;
    log_debug("REST conn %d closed: %s", c->io.fd, why);
    close(c->io.fd);
    ev_timer_stop(c->w->loop, &c->timer);
    inbuf_free(&c->in);
    outq_clear(&c->out);
    car_rest_proto_free(&c->proto);
    c->state = REST_CLOSED;
    c->resume = false;
    rest_attend(c);
    car_worker_conn_closed(c->w, c->io.fd);
}

/* ---- Output ------------------------------------------------------------- */

/* Sends buf[0..n) now when nothing is queued ahead of it, and queues what
 * the socket does not take. Returns false if the connection died. */
static bool rest_send(struct car_rest_conn *c, const char *buf, size_t n)
{
    if (outq_pending(&c->out) > 0) {
        /* Waiting for writability already: the write event flushes. */
        outq_copy(&c->out, buf, n);
        return true;
    }
    ssize_t k;
    do
        k = write(c->io.fd, buf, n);
    while (k < 0 && errno == EINTR);
    if (k < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            rest_close(c, strerror(errno));
            return false;
        }
        k = 0;
    }
    if ((size_t)k < n)
        outq_copy(&c->out, buf + k, n - (size_t)k);
    return true;
}

static void rest_flush(struct car_rest_conn *c)
{
    size_t before = outq_pending(&c->out);
    if (before == 0)
        return;
    if (outq_flush(&c->out, c->io.fd) < 0) {
        rest_close(c, strerror(errno));
        return;
    }
    if (outq_pending(&c->out) < before)
        c->progress = true;
}

/* ---- Input -------------------------------------------------------------- */

/* Answers what data[0..len) holds and keeps the rest in c->in (data is
 * either the shared read buffer or c->in's own). Returns false if the
 * connection died. */
static bool rest_handle(struct car_rest_conn *c, const uint8_t *data, size_t len)
{
    struct car_rest_env env;
    rest_env(c->w, &env);
    size_t off = 0;
    enum car_rest_stop stop;
    do {
        struct car_rest_out out = {rest_obuf, 0, sizeof rest_obuf};
        size_t used;
        stop = car_rest_proto_feed(&c->proto, &env, (const char *)data + off, len - off, &used,
                                   &out);
        off += used;
        if (out.len > 0 && !rest_send(c, out.buf, out.len))
            return false;
    } while (stop == CAR_REST_OUT_FULL && outq_pending(&c->out) == 0);
    inbuf_consumed(&c->in, data, len, off);
    if (c->proto.requests != c->requests_seen) {
        c->requests_seen = c->proto.requests;
        c->progress = true;
    }
    if (stop == CAR_REST_CLOSE)
        c->state = REST_CLOSING;
    else if (stop == CAR_REST_OUT_FULL)
        c->paused = true; /* the client is not reading: neither do we */
    return true;
}

/* Reads until the socket is drained: until EAGAIN, or a short read unless
 * the peer may have closed (hup), since the end of the stream then follows
 * the data with no further edge. An open connection answers what it reads;
 * a lingering one drops it (LINGER_MAX_BYTES at most: past them it waits
 * for its timer). */
static void rest_read(struct car_rest_conn *c, bool hup)
{
    if (c->state == REST_LINGER) {
        if (linger_discard(c->io.fd, &c->dropped) == LINGER_EOF)
            rest_close(c, "done");
        return;
    }
    size_t budget = REST_READ_BUDGET;
    while (c->state == REST_OPEN && !c->paused) {
        size_t cap = sizeof rest_rbuf;
        uint8_t *buf = inbuf_read_target(&c->in, rest_rbuf, cap, &cap);
        ssize_t n = read(c->io.fd, buf, cap);
        if (n == 0) {
            /* An open connection answers what came, then closes; an
             * unfinished request never will be. */
            c->peer_done = true;
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                rest_close(c, strerror(errno));
            return;
        }
        size_t len;
        const uint8_t *data = inbuf_filled(&c->in, rest_rbuf, (size_t)n, &len);
        if (!rest_handle(c, data, len))
            return;
        if ((size_t)n < cap && !hup)
            return;
        if ((size_t)n >= budget) {
            rest_resume_later(c);
            return;
        }
        budget -= (size_t)n;
    }
}

/* ---- Timeouts ------------------------------------------------------------- */

static enum rest_wait rest_wait_kind(const struct car_rest_conn *c)
{
    if (c->state == REST_LINGER)
        return WAIT_LINGER;
    if (outq_pending(&c->out) > 0)
        return WAIT_WRITE;
    if (car_rest_proto_busy(&c->proto, c->in.len))
        return WAIT_REQUEST;
    return WAIT_IDLE;
}

static uint64_t rest_wait_limit(const struct car_rest_conn *c)
{
    switch (c->wait) {
    case WAIT_REQUEST: return c->w->cfg->request_timeout_ms;
    case WAIT_LINGER: return LINGER_MS;
    default: return c->w->cfg->idle_timeout_ms;
    }
}

/* Starts a new wait when the kind of wait changed or progress was made,
 * and brings the timer forward if the deadline is now earlier. A later
 * deadline is left for the timer to find when it fires. */
static void rest_arm(struct car_rest_conn *c)
{
    struct ev_loop *loop = c->w->loop;
    uint64_t now = ev_now(loop);
    enum rest_wait kind = rest_wait_kind(c);
    if (kind != c->wait || c->progress) {
        c->wait = kind;
        c->since_ms = now;
        c->progress = false;
    }
    uint64_t deadline = c->since_ms + rest_wait_limit(c);
    if (!ev_timer_active(&c->timer) || c->timer.when_ms > deadline)
        ev_timer_start(loop, &c->timer, deadline > now ? deadline - now : 0, 0);
}

/* After any event: moves the connection on to what its state calls for
 * next, then arms its timer. */
static void rest_settle(struct car_rest_conn *c)
{
    if (c->state == REST_CLOSED)
        return;
    if (outq_pending(&c->out) == 0) {
        if (c->state == REST_CLOSING) {
            if (c->peer_done) {
                rest_close(c, "closed by client");
                return;
            }
            linger_shut(c->io.fd);
            c->state = REST_LINGER;
            rest_resume_later(c); /* the input's edge may have passed */
        } else if (c->paused) {
            c->paused = false;
            rest_resume_later(c);
        } else if (c->peer_done) {
            rest_close(c, "closed by client");
            return;
        } else if (c->w->draining && !car_rest_proto_busy(&c->proto, c->in.len)) {
            rest_close(c, "server draining");
            return;
        }
    }
    rest_arm(c);
}

/* A request begun but not finished in time gets 408. */
static void rest_timeout(struct car_rest_conn *c)
{
    struct car_rest_env env;
    rest_env(c->w, &env);
    struct car_rest_out out = {rest_obuf, 0, sizeof rest_obuf};
    car_rest_proto_timeout(&c->proto, &env, &out);
    if (out.len > 0 && !rest_send(c, out.buf, out.len))
        return;
    inbuf_free(&c->in);
    c->state = REST_CLOSING;
}

static void rest_on_timer(struct ev_loop *loop, struct ev_timer *t)
{
    struct car_rest_conn *c = t->data;
    uint64_t now = ev_now(loop), deadline = c->since_ms + rest_wait_limit(c);
    if (now < deadline) {
        ev_timer_start(loop, t, deadline - now, 0);
        return;
    }
    switch (c->wait) {
    case WAIT_REQUEST:
        rest_timeout(c);
        break;
    case WAIT_IDLE:
        rest_close(c, "idle timeout");
        break;
    case WAIT_WRITE:
        rest_close(c, "client does not read its responses");
        break;
    case WAIT_LINGER:
        rest_close(c, "linger time over");
        break;
    }
    rest_settle(c);
}

/* ---- Events ------------------------------------------------------------- */

static void rest_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct car_rest_conn *c = io->data;
    if (c->state == REST_CLOSED)
        return; /* an event of this iteration for a connection closed in it */
    if (events & EV_WRITE)
        rest_flush(c);
    if (events & EV_READ)
        rest_read(c, events & EV_HUP);
    rest_settle(c);
}

/* Picks up where a budget or a pause stopped, or starts lingering. */
static void rest_resume(struct car_rest_conn *c)
{
    if (c->state == REST_OPEN && !c->paused && c->in.len > 0 &&
        !rest_handle(c, c->in.data, c->in.len))
        return;
    /* Whether the peer closed meanwhile is not known: read to EAGAIN. */
    rest_read(c, true);
    rest_settle(c);
}

void car_rest_accept(struct car_worker *w, int fd)
{
    struct car_rest_conn *c = mem_calloc(1, sizeof *c);
    c->io.fd = fd;
    c->io.cb = rest_on_io;
    c->io.data = c;
    c->w = w;
    if (ev_io_start(w->loop, &c->io, EV_READ | EV_WRITE | EV_EDGE) < 0) {
        log_warn("cannot watch fd %d: %s", fd, strerror(errno));
        close(fd);
        mem_free(c);
        car_worker_conn_closed(w, fd);
        return;
    }
    ev_timer_init(&c->timer, rest_on_timer, c);
    car_rest_proto_init(&c->proto, fd);
    c->state = REST_OPEN;
    /* The front segment is where new connections may go without breaking
     * it: car_rest_prepare passes over one with nothing to resume. */
    c->attention = true;
    rest_push_front(c);
    c->wait = WAIT_IDLE;
    c->since_ms = ev_now(w->loop);
    ev_timer_start(w->loop, &c->timer, w->cfg->idle_timeout_ms, 0);
    log_debug("REST conn %d accepted", fd);
}

bool car_rest_prepare(struct car_worker *w)
{
    struct car_rest_conn *c = w->rest_conns;
    /* Connections marked while this runs go to the front, behind the walk,
     * and are seen next time. */
    while (c && c->attention) {
        struct car_rest_conn *next = c->next;
        c->attention = false;
        if (c->state == REST_CLOSED) {
            rest_unlink(c);
            mem_free(c);
        } else if (c->resume) {
            c->resume = false;
            rest_resume(c);
        }
        c = next;
    }
    return w->rest_conns && w->rest_conns->attention;
}

void car_rest_drain(struct car_worker *w)
{
    struct car_rest_conn *next;
    for (struct car_rest_conn *c = w->rest_conns; c; c = next) {
        next = c->next;
        /* A lingering one ends on its own, LINGER_MS at most. */
        if (c->state == REST_OPEN && outq_pending(&c->out) == 0 &&
            !car_rest_proto_busy(&c->proto, c->in.len))
            rest_close(c, "server draining");
        /* The busy ones answer with Connection: close (env.draining) and
         * close from rest_settle. */
    }
}

void car_rest_close_all(struct car_worker *w)
{
    while (w->rest_conns) {
        struct car_rest_conn *c = w->rest_conns;
        rest_close(c, "server stopping");
        rest_unlink(c);
        mem_free(c);
    }
}
