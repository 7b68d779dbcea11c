/* http_engine.c - HTTP/1.1 connections on one event loop (http_engine.h),
 * around the protocol machine of http_proto.c.
 *
 * The hot path is one request in, one response out, in three system calls
 * (epoll_wait, read, write). Sockets are registered edge-triggered for both
 * directions once. A read lands in the thread's shared input buffer; every
 * complete request in it is answered into the thread's shared output
 * buffer, which is written with one write() when nothing is queued ahead
 * of it. Only what the socket does not take is copied into the
 * connection's outq, and only an incomplete request into its inbuf, so a
 * request that arrives whole allocates nothing (with a synchronous app)
 * and an idle connection holds no buffer.
 *
 * Connections that need the loop before it sleeps (one that used up its
 * read budget, whose output drained after a pause, whose app answered
 * later, that starts lingering, or that was closed and waits to be freed)
 * are moved to the front of the engine's list, so http_engine_prepare
 * finds them without scanning the rest. New connections enter there too,
 * which keeps that invariant for free.
 *
 * One timer per connection covers every wait (idle keep-alive, a slow
 * request, an app that does not answer, a client that does not read,
 * lingering); it is rearmed only when the deadline moves earlier, so
 * completing a request costs no timer work.
 */
#include "http/http_engine.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/ev.h"
#include "core/inbuf.h"
#include "core/linger.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/outq.h"

#define READ_CHUNK (64 * 1024)
/* Bytes read from one connection per loop iteration before the others get
 * their turn. */
#define READ_BUDGET (256 * 1024)
/* Responses produced per feed before they are written out. */
#define OUT_CHUNK (16 * 1024)

static _Thread_local uint8_t conn_rbuf[READ_CHUNK];
static _Thread_local char conn_obuf[OUT_CHUNK];

enum conn_state {
    C_OPEN,
    C_CLOSING, /* the last response is queued; linger once it is out */
    C_LINGER,  /* write side shut; dropping input until EOF (core/linger.h): a
                * reset could destroy the last response (a 413 sent while
                * the body is still coming, say) */
    C_CLOSED,  /* waiting in the front of the list to be freed */
};

/* What the connection's timer measures. */
enum conn_wait {
    WAIT_IDLE,    /* no request begun: idle_timeout_ms */
    WAIT_REQUEST, /* a request begun: request_timeout_ms from its first byte (and its
                   * body's bytes at min_body_rate), then 408 */
    WAIT_APP,     /* answers the app has not given yet: idle_timeout_ms */
    WAIT_WRITE,   /* output the client does not take: idle_timeout_ms */
    WAIT_LINGER,  /* LINGER_MS */
};

struct engine_conn {
    struct ev_io io;
    struct ev_timer timer;
    struct http_engine *e;
    struct engine_conn *prev, *next; /* e->conns */
    struct inbuf in;
    struct outq out;
    struct http_proto proto;
    uint64_t since_ms;      /* when the current wait began */
    uint64_t requests_seen; /* proto.requests when last looked at */
    enum conn_state state;
    enum conn_wait wait;
    bool attention;  /* in the front segment of the list */
    bool resume;     /* http_engine_prepare must feed and read it */
    bool paused;     /* input left unhandled until the output drains */
    bool waiting;    /* input left unhandled until the app answers */
    bool peer_done;  /* the client closed its side */
    uint32_t dropped; /* C_LINGER: input dropped */
    bool progress;   /* a request was complete or output written: the wait restarts */
};

/* ---- The engine's list ---------------------------------------------------- */

static void ec_unlink(struct engine_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        c->e->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void ec_push_front(struct engine_conn *c)
{
    c->next = c->e->conns;
    if (c->next)
        c->next->prev = c;
    c->e->conns = c;
}

/* Moves c to the front segment that http_engine_prepare visits. */
static void ec_attend(struct engine_conn *c)
{
    if (c->attention)
        return;
    c->attention = true;
    ec_unlink(c);
    ec_push_front(c);
}

static void ec_resume_later(struct engine_conn *c)
{
    c->resume = true;
    ec_attend(c);
}

/* Closes at once; the memory is freed by http_engine_prepare, as callers
 * up the stack (and events still pending in this loop iteration) may hold
 * c. */
static void ec_close(struct engine_conn *c, const char *why)
{
    if (c->state == C_CLOSED)
        return;
    log_debug("%s conn %d closed: %s", c->e->env.log_name, c->io.fd, why);
    close(c->io.fd);
    ev_timer_stop(c->e->loop, &c->timer);
    inbuf_free(&c->in);
    outq_clear(&c->out);
    http_proto_free(&c->proto);
    c->state = C_CLOSED;
    c->resume = false;
    ec_attend(c);
    c->e->closed(c->e->closed_ctx, c->io.fd);
}

/* ---- Output ------------------------------------------------------------- */

static void ec_flush(struct engine_conn *c)
{
    size_t before = outq_pending(&c->out);
    if (before == 0)
        return;
    if (outq_flush(&c->out, c->io.fd) < 0) {
        ec_close(c, strerror(errno));
        return;
    }
    if (outq_pending(&c->out) < before)
        c->progress = true;
}

/* Sends buf[0..n) now when nothing is queued ahead of it, and queues what
 * the socket does not take. spilled: the machine queued output of its own
 * ahead of buf just now, to be written at once. Returns false if the
 * connection died. */
static bool ec_send(struct engine_conn *c, const char *buf, size_t n, bool spilled)
{
    if (outq_pending(&c->out) > 0) {
        /* Waiting for writability already (the write event flushes), or
         * the machine's spill goes first. */
        outq_copy(&c->out, buf, n);
        if (spilled)
            ec_flush(c);
        return c->state != C_CLOSED;
    }
    if (n == 0)
        return true;
    ssize_t k;
    do
        k = write(c->io.fd, buf, n);
    while (k < 0 && errno == EINTR);
    if (k < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            ec_close(c, strerror(errno));
            return false;
        }
        k = 0;
    }
    if ((size_t)k < n)
        outq_copy(&c->out, buf + k, n - (size_t)k);
    return true;
}

/* ---- Input -------------------------------------------------------------- */

/* Answers what data[0..len) holds and keeps the rest in c->in (data is
 * either the shared read buffer or c->in's own). Returns false if the
 * connection died. */
static bool ec_handle(struct engine_conn *c, const uint8_t *data, size_t len)
{
    size_t off = 0;
    enum http_stop stop;
    do {
        struct http_out out = {conn_obuf, 0, sizeof conn_obuf, &c->out};
        size_t used, before = outq_pending(&c->out);
        stop = http_proto_feed(&c->proto, (const char *)data + off, len - off, &used, &out);
        off += used;
        if (!ec_send(c, out.buf, out.len, outq_pending(&c->out) > before))
            return false;
    } while (stop == HTTP_OUT_FULL && outq_pending(&c->out) == 0);
    inbuf_consumed(&c->in, data, len, off);
    if (c->proto.requests != c->requests_seen) {
        c->requests_seen = c->proto.requests;
        c->progress = true;
    }
    if (stop == HTTP_CLOSE)
        c->state = C_CLOSING;
    else if (stop == HTTP_OUT_FULL)
        c->paused = true; /* the client is not reading: neither do we */
    else if (stop == HTTP_WAIT_APP)
        c->waiting = true; /* env.ready resumes it */
    return true;
}

/* Reads until the socket is drained: until EAGAIN, or a short read unless
 * the peer may have closed (hup), since the end of the stream then follows
 * the data with no further edge. An open connection answers what it reads;
 * a lingering one drops it (LINGER_MAX_BYTES at most: past them it waits
 * for its timer). */
static void ec_read(struct engine_conn *c, bool hup)
{
    if (c->state == C_LINGER) {
        if (linger_discard(c->io.fd, &c->dropped) == LINGER_EOF)
            ec_close(c, "done");
        return;
    }
    size_t budget = READ_BUDGET;
    while (c->state == C_OPEN && !c->paused && !c->waiting) {
        size_t cap = sizeof conn_rbuf;
        uint8_t *buf = inbuf_read_target(&c->in, conn_rbuf, cap, &cap);
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
                ec_close(c, strerror(errno));
            return;
        }
        size_t len;
        const uint8_t *data = inbuf_filled(&c->in, conn_rbuf, (size_t)n, &len);
        if (!ec_handle(c, data, len))
            return;
        if ((size_t)n < cap && !hup)
            return;
        if ((size_t)n >= budget) {
            ec_resume_later(c);
            return;
        }
        budget -= (size_t)n;
    }
}

/* ---- Timeouts ------------------------------------------------------------- */

static enum conn_wait ec_wait_kind(const struct engine_conn *c)
{
    if (c->state == C_LINGER)
        return WAIT_LINGER;
    if (outq_pending(&c->out) > 0)
        return WAIT_WRITE;
    if (http_proto_busy(&c->proto, c->in.len))
        return WAIT_REQUEST;
    if (http_proto_waiting(&c->proto))
        return WAIT_APP;
    return WAIT_IDLE;
}

/* The body bytes received buy time at min_body_rate, as the broker's
 * --min-packet-rate does for a packet: a body of L bytes has at most
 * request_timeout_ms + L / min_body_rate, however its bytes trickle, and
 * one that stalls is cut soon after request_timeout_ms. The head has the
 * fixed deadline alone. Out of line: ec_wait_limit stays small enough to be
 * inlined where a request arriving whole passes it (ec_arm). */
__attribute__((noinline)) static uint64_t ec_request_limit(const struct engine_conn *c)
{
    const struct http_engine *e = c->e;
    if (e->min_body_rate == 0)
        return e->request_timeout_ms;
    return e->request_timeout_ms +
           http_proto_body_received(&c->proto, c->in.len) * 1000 / e->min_body_rate;
}

static uint64_t ec_wait_limit(const struct engine_conn *c)
{
    switch (c->wait) {
    case WAIT_REQUEST: return ec_request_limit(c);
    case WAIT_LINGER: return LINGER_MS;
    default: return c->e->idle_timeout_ms;
    }
}

/* Starts a new wait when the kind of wait changed or progress was made,
 * and brings the timer forward if the deadline is now earlier. A later
 * deadline is left for the timer to find when it fires. Bytes that do not
 * complete a request are no progress: a request's deadline runs from its
 * first byte however slowly the rest trickles in, and only grows by what
 * its body brought (ec_request_limit). */
static void ec_arm(struct engine_conn *c)
{
    struct ev_loop *loop = c->e->loop;
    uint64_t now = ev_now(loop);
    enum conn_wait kind = ec_wait_kind(c);
    if (kind != c->wait || c->progress) {
        c->wait = kind;
        c->since_ms = now;
        c->progress = false;
    }
    uint64_t deadline = c->since_ms + ec_wait_limit(c);
    if (!ev_timer_active(&c->timer) || c->timer.when_ms > deadline)
        ev_timer_start(loop, &c->timer, deadline > now ? deadline - now : 0, 0);
}

/* After any event: moves the connection on to what its state calls for
 * next, then arms its timer. */
static void ec_settle(struct engine_conn *c)
{
    if (c->state == C_CLOSED)
        return;
    if (outq_pending(&c->out) == 0) {
        bool waiting = http_proto_waiting(&c->proto);
        if (c->state == C_CLOSING) {
            if (c->peer_done) {
                ec_close(c, "closed by client");
                return;
            }
            linger_shut(c->io.fd);
            c->state = C_LINGER;
            ec_resume_later(c); /* the input's edge may have passed */
        } else if (c->paused) {
            c->paused = false;
            ec_resume_later(c);
        } else if (c->peer_done && !waiting) {
            ec_close(c, "closed by client");
            return;
        } else if (c->e->env.draining && !waiting && !http_proto_busy(&c->proto, c->in.len)) {
            ec_close(c, "server draining");
            return;
        }
    }
    ec_arm(c);
}

/* A request begun but not finished in time gets 408. */
static void ec_timeout(struct engine_conn *c)
{
    struct http_out out = {conn_obuf, 0, sizeof conn_obuf, &c->out};
    size_t before = outq_pending(&c->out);
    http_proto_timeout(&c->proto, &out);
    if (!ec_send(c, out.buf, out.len, outq_pending(&c->out) > before))
        return;
    c->waiting = false;
    /* What is left of the input is dropped by the machine, now closing. */
    ec_handle(c, c->in.data, c->in.len);
}

static void ec_on_timer(struct ev_loop *loop, struct ev_timer *t)
{
    struct engine_conn *c = t->data;
    uint64_t now = ev_now(loop), deadline = c->since_ms + ec_wait_limit(c);
    if (now < deadline) {
        ev_timer_start(loop, t, deadline - now, 0);
        return;
    }
    switch (c->wait) {
    case WAIT_REQUEST:
        ec_timeout(c);
        break;
    case WAIT_IDLE:
        ec_close(c, "idle timeout");
        break;
    case WAIT_APP:
        ec_close(c, "no answer in time");
        break;
    case WAIT_WRITE:
        ec_close(c, "client does not read its responses");
        break;
    case WAIT_LINGER:
        ec_close(c, "linger time over");
        break;
    }
    ec_settle(c);
}

/* ---- Events ------------------------------------------------------------- */

static void ec_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct engine_conn *c = io->data;
    if (c->state == C_CLOSED)
        return; /* an event of this iteration for a connection closed in it */
    if (events & EV_WRITE)
        ec_flush(c);
    if (events & EV_READ)
        ec_read(c, events & EV_HUP);
    ec_settle(c);
}

/* Picks up where a budget, a pause or the app stopped, or starts
 * lingering. */
static void ec_resume(struct engine_conn *c)
{
    if (c->state == C_OPEN && !c->paused && !c->waiting && !ec_handle(c, c->in.data, c->in.len))
        return;
    /* Whether the peer closed meanwhile is not known: read to EAGAIN. */
    ec_read(c, true);
    ec_settle(c);
}

/* The app answered the request at the head of p's queue. */
static void ec_ready(struct http_proto *p)
{
    struct engine_conn *c = (struct engine_conn *)((char *)p - offsetof(struct engine_conn, proto));
    c->waiting = false;
    ec_resume_later(c);
}

void http_engine_init(struct http_engine *e, struct ev_loop *loop,
                      const struct http_engine_config *cfg, const struct http_app *app,
                      void *app_worker, void (*closed)(void *ctx, int fd), void *closed_ctx)
{
    memset(e, 0, sizeof *e);
    e->loop = loop;
    e->idle_timeout_ms = cfg->idle_timeout_ms;
    e->request_timeout_ms = cfg->request_timeout_ms;
    e->min_body_rate = cfg->min_body_rate;
    e->closed = closed;
    e->closed_ctx = closed_ctx;
    struct http_env *env = &e->env;
    env->app = app;
    env->app_worker = app_worker;
    env->max_header = cfg->max_header;
    env->max_body = cfg->max_body;
    env->max_inflight = cfg->max_inflight ? cfg->max_inflight : 1;
    env->log_requests = cfg->log_requests;
    env->log_name = cfg->log_name;
    env->gzip = cfg->gzip ? http_gzip_new() : NULL;
    env->date = http_date;
    env->now_ns = cfg->start_times ? clock_now_ns : NULL;
    env->ready = ec_ready;
}

void http_engine_fini(struct http_engine *e)
{
    http_env_free_orphans(&e->env);
    http_gzip_free(e->env.gzip);
    e->env.gzip = NULL;
}

void http_engine_accept(struct http_engine *e, int fd)
{
    struct engine_conn *c = mem_calloc(1, sizeof *c);
    c->io.fd = fd;
    c->io.cb = ec_on_io;
    c->io.data = c;
    c->e = e;
    if (ev_io_start(e->loop, &c->io, EV_READ | EV_WRITE | EV_EDGE) < 0) {
        log_warn("cannot watch fd %d: %s", fd, strerror(errno));
        close(fd);
        mem_free(c);
        e->closed(e->closed_ctx, fd);
        return;
    }
    ev_timer_init(&c->timer, ec_on_timer, c);
    http_proto_init(&c->proto, &e->env, fd);
    c->state = C_OPEN;
    /* The front segment is where new connections may go without breaking
     * it: http_engine_prepare passes over one with nothing to resume. */
    c->attention = true;
    ec_push_front(c);
    c->wait = WAIT_IDLE;
    c->since_ms = ev_now(e->loop);
    ev_timer_start(e->loop, &c->timer, e->idle_timeout_ms, 0);
    log_debug("%s conn %d accepted", e->env.log_name, fd);
}

bool http_engine_prepare(struct http_engine *e)
{
    struct engine_conn *c = e->conns;
    /* Connections marked while this runs go to the front, behind the walk,
     * and are seen next time. */
    while (c && c->attention) {
        struct engine_conn *next = c->next;
        c->attention = false;
        if (c->state == C_CLOSED) {
            ec_unlink(c);
            mem_free(c);
        } else if (c->resume) {
            c->resume = false;
            ec_resume(c);
        }
        c = next;
    }
    return e->conns && e->conns->attention;
}

void http_engine_drain(struct http_engine *e)
{
    e->env.draining = true;
    struct engine_conn *next;
    for (struct engine_conn *c = e->conns; c; c = next) {
        next = c->next;
        /* A lingering one ends on its own, LINGER_MS at most. */
        if (c->state == C_OPEN && outq_pending(&c->out) == 0 &&
            !http_proto_busy(&c->proto, c->in.len) && !http_proto_waiting(&c->proto))
            ec_close(c, "server draining");
        /* The busy ones answer with Connection: close (env.draining) and
         * close from ec_settle. */
    }
}

void http_engine_close_all(struct http_engine *e)
{
    while (e->conns) {
        struct engine_conn *c = e->conns;
        ec_close(c, "server stopping");
        ec_unlink(c);
        mem_free(c);
    }
}
