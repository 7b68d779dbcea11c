/* srv.c - workers, listeners, accepting with a guard against running out
 * of descriptors, the accept hand-off, signals and the graceful drain, for
 * every server. */
#include "core/srv.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/addrcount.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/net.h"

#define SRV_ACCEPTS_PER_WAKE 256
/* Asked of listen(); the kernel caps it at net.core.somaxconn (4096 by
 * default since Linux 5.4). A full accept queue drops the SYN and the
 * client retries a second later: a 10,000-a-second storm overflowed 1024
 * while a busy loop was not accepting (docs/broker.md, "Threads"). */
#define SRV_LISTEN_BACKLOG 65535

/* A connection worker 0 accepted for another worker (SRV_ACCEPT_HANDOFF). */
struct srv_pending {
    int fd;
    unsigned listener;
    struct sockaddr_storage peer;
};

struct srv_pendings {
    struct srv_pending *v;
    size_t n, cap;
};

/* A worker's incoming connections with SRV_ACCEPT_HANDOFF. Worker 0 fills
 * batch during one wake-up of a listener, then moves it into queue under
 * lock, writing the eventfd only when queue was empty: one wake-up per
 * batch, as cross-loop deliveries do (broker/xloop.c). */
struct srv_handoff {
    struct srv_worker *w;
    pthread_mutex_t lock;
    struct srv_pendings queue;    /* under lock */
    struct srv_pendings batch;    /* worker 0's only */
    struct srv_pendings taken;    /* the worker's own: queue swapped out */
    struct ev_io wake;            /* eventfd */
};

struct srv {
    const struct srv_config *cfg;
    const struct srv_hooks *hooks;
    void *ctx;
    struct srv_worker *workers;
    unsigned nworkers;
    atomic_uint nconns;
    pthread_mutex_t addr_lock; /* for addrs, with max_per_address */
    struct addrcount addrs;
    uint64_t addr_logged_ms;   /* under addr_lock: the last refusal logged */
    struct srv_handoff *handoffs; /* by worker, with SRV_ACCEPT_HANDOFF and threads > 1 */
    unsigned handoff_next;     /* worker 0's: the worker the next connection goes to */
};


static atomic_uint_fast64_t srv_refused_addr;

uint64_t srv_refused_per_address(void) { return atomic_load(&srv_refused_addr); }

/* Records that fd's connection is counted under key. */
static void srv_fd_addr_set(struct srv_worker *w, int fd, const uint8_t *key)
{
    if ((unsigned)fd >= w->nfd_addrs) {
        unsigned n = w->nfd_addrs ? w->nfd_addrs : 1024;
        while (n <= (unsigned)fd)
            n *= 2;
        w->fd_addrs = mem_realloc(w->fd_addrs, n * sizeof *w->fd_addrs);
        memset(w->fd_addrs + w->nfd_addrs, 0, (n - w->nfd_addrs) * sizeof *w->fd_addrs);
        w->nfd_addrs = n;
    }
    memcpy(w->fd_addrs[fd].key, key, ADDRCOUNT_KEY_LEN);
    w->fd_addrs[fd].counted = true;
}

/* Counts fd's connection under its peer's address; false (counted as a
 * refusal, logged at most once a second) if that address has
 * max_per_address already. Addresses of other families are not limited. */
static bool srv_take_address(struct srv_worker *w, int fd, const struct sockaddr_storage *peer)
{
    struct srv *s = w->srv;
    uint8_t key[ADDRCOUNT_KEY_LEN];
    if (!addrcount_key(peer, key))
        return true;
    pthread_mutex_lock(&s->addr_lock);
    bool ok = addrcount_take(&s->addrs, key, s->cfg->max_per_address);
    uint64_t now = ev_now(w->loop);
    bool say = !ok && (s->addr_logged_ms == 0 || now - s->addr_logged_ms >= 1000);
    if (say)
        s->addr_logged_ms = now;
    pthread_mutex_unlock(&s->addr_lock);
    if (!ok) {
        uint64_t n = atomic_fetch_add(&srv_refused_addr, 1) + 1;
        char addr[64];
        if (say)
            log_warn("closed a connection from %s: its address has %u already "
                     "(max_connections_per_address); %llu refused so far",
                     net_addr_str(peer, addr, sizeof addr), s->cfg->max_per_address,
                     (unsigned long long)n);
        return false;
    }
    srv_fd_addr_set(w, fd, key);
    return true;
}

static void srv_give_address(struct srv_worker *w, int fd)
{
    if (fd < 0 || (unsigned)fd >= w->nfd_addrs || !w->fd_addrs[fd].counted)
        return;
    w->fd_addrs[fd].counted = false;
    pthread_mutex_lock(&w->srv->addr_lock);
    addrcount_give(&w->srv->addrs, w->fd_addrs[fd].key);
    pthread_mutex_unlock(&w->srv->addr_lock);
}

bool srv_worker_conn_opened(struct srv_worker *w)
{
    unsigned n = atomic_fetch_add(&w->srv->nconns, 1);
    if (n >= w->srv->cfg->max_connections) {
        atomic_fetch_sub(&w->srv->nconns, 1);
        return false;
    }
    w->nconns++;
    return true;
}

void srv_worker_conn_closed(struct srv_worker *w, int fd)
{
    srv_give_address(w, fd);
    atomic_fetch_sub(&w->srv->nconns, 1);
    w->nconns--;
    if (w->draining && w->nconns == 0)
        ev_stop(w->loop);
}

void srv_worker_conn_leave(struct srv_worker *w, int fd, struct srv_fd_addr *t)
{
    t->counted = fd >= 0 && (unsigned)fd < w->nfd_addrs && w->fd_addrs[fd].counted;
    if (t->counted) {
        *t = w->fd_addrs[fd];
        w->fd_addrs[fd].counted = false;
    }
    w->nconns--;
    if (w->draining && w->nconns == 0)
        ev_stop(w->loop);
}

void srv_worker_conn_join(struct srv_worker *w, int fd, const struct srv_fd_addr *t)
{
    w->nconns++;
    if (t->counted)
        srv_fd_addr_set(w, fd, t->key);
}

/* A connection fd just accepted (by w, or handed to it): counted under its
 * address and in the limit, then given to the protocol, or closed. */
static void srv_admit(struct srv_worker *w, unsigned listener, int fd,
                      const struct sockaddr_storage *peer)
{
    /* Refusing by closing is what a client can act on at once; reading a
     * request first would spend what the limit saves. */
    if (w->srv->cfg->max_per_address && !srv_take_address(w, fd, peer)) {
        close(fd);
        return;
    }
    if (!srv_worker_conn_opened(w)) {
        srv_give_address(w, fd);
        __atomic_store_n(&w->refused_connections, w->refused_connections + 1, __ATOMIC_RELAXED);
        close(fd);
        return;
    }
    w->srv->hooks->accept(w, listener, fd);
}

static void srv_pendings_push(struct srv_pendings *p, const struct srv_pending *e)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->v = mem_realloc(p->v, p->cap * sizeof *p->v);
    }
    p->v[p->n++] = *e;
}

/* Worker 0, at the end of a listener's wake-up: each worker's batch into
 * its queue. */
static void srv_handoff_flush(struct srv *s)
{
    uint64_t one = 1;
    for (unsigned i = 1; i < s->nworkers; i++) {
        struct srv_handoff *h = &s->handoffs[i];
        if (!h->batch.n)
            continue;
        pthread_mutex_lock(&h->lock);
        bool was_empty = h->queue.n == 0;
        for (size_t k = 0; k < h->batch.n; k++)
            srv_pendings_push(&h->queue, &h->batch.v[k]);
        pthread_mutex_unlock(&h->lock);
        h->batch.n = 0;
        if (was_empty && write(h->wake.fd, &one, sizeof one) < 0)
            log_warn("cannot wake worker %u: %s", i, strerror(errno));
    }
}

/* A worker's eventfd: take every connection handed to it. */
static void srv_on_handoff(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct srv_handoff *h = io->data;
    uint64_t v;
    while (read(io->fd, &v, sizeof v) == (ssize_t)sizeof v)
        ;
    pthread_mutex_lock(&h->lock);
    struct srv_pendings t = h->queue;
    h->queue = h->taken;
    pthread_mutex_unlock(&h->lock);
    for (size_t k = 0; k < t.n; k++) {
        if (h->w->draining)
            close(t.v[k].fd);
        else
            srv_admit(h->w, t.v[k].listener, t.v[k].fd, &t.v[k].peer);
    }
    t.n = 0;
    h->taken = t;
}

static void srv_on_accept(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct srv_worker *w = io->data;
    struct srv *s = w->srv;
    unsigned listener = (unsigned)(io - w->listeners);
    for (int i = 0; i < SRV_ACCEPTS_PER_WAKE; i++) {
        struct srv_pending e = {.listener = listener};
        e.fd = net_accept_guarded(io->fd, &w->spare_fd, &e.peer);
        if (e.fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                __atomic_store_n(&w->refused_connections, w->refused_connections + 1,
                                 __ATOMIC_RELAXED);
                log_warn("out of file descriptors at %u connections: dropped a new one", w->nconns);
            }
            break;
        }
        unsigned to = 0;
        if (s->handoffs) {
            to = s->handoff_next;
            s->handoff_next = (to + 1) % s->nworkers;
        }
        if (to == 0)
            srv_admit(w, listener, e.fd, &e.peer);
        else
            srv_pendings_push(&s->handoffs[to].batch, &e);
    }
    if (s->handoffs)
        srv_handoff_flush(s);
}

static bool srv_prepare(struct ev_loop *loop, void *data)
{
    struct srv_worker *w = data;
    return w->srv->hooks->prepare ? w->srv->hooks->prepare(w) : false;
}

static void srv_close_listener(struct srv_worker *w, struct ev_io *l)
{
    if (l->fd < 0)
        return;
    ev_io_stop(w->loop, l);
    close(l->fd);
    l->fd = -1;
}

static void srv_on_drain_timeout(struct ev_loop *loop, struct ev_timer *t)
{
    struct srv_worker *w = t->data;
    log_warn("worker %u: %u connections still busy after the drain timeout; closing them",
             w->index, w->nconns);
    w->srv->hooks->close_all(w);
    ev_stop(loop);
}

static void srv_worker_drain(struct srv_worker *w)
{
    if (w->draining)
        return;
    w->draining = true;
    for (unsigned i = 0; i < SRV_MAX_LISTENERS; i++)
        srv_close_listener(w, &w->listeners[i]);
    w->srv->hooks->drain(w);
    if (w->nconns == 0) {
        ev_stop(w->loop);
        return;
    }
    ev_timer_start(w->loop, &w->drain_timer, w->srv->cfg->drain_timeout_ms, 0);
}

static void srv_on_wake(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    uint64_t v;
    while (read(io->fd, &v, sizeof v) == (ssize_t)sizeof v)
        ;
    srv_worker_drain(io->data);
}

static void srv_on_signal(struct ev_loop *loop, int signo, void *data)
{
    struct srv *s = data;
    if (signo == SIGHUP) {
        if (s->hooks->reload)
            s->hooks->reload(s->ctx);
        else
            log_info("SIGHUP received: nothing to reload (settings are read at start)");
        return;
    }
    log_info("%s received, draining", strsignal(signo));
    uint64_t one = 1;
    for (unsigned i = 0; i < s->nworkers; i++)
        if (s->workers[i].wake.fd >= 0 && write(s->workers[i].wake.fd, &one, sizeof one) < 0)
            log_warn("cannot wake worker %u: %s", i, strerror(errno));
}

static int srv_worker_listen(struct srv_worker *w, unsigned i, int *port, int flags)
{
    char err[NET_ERR_LEN];
    if (*port < 0)
        return 0;
    const struct srv_config *cfg = w->srv->cfg;
    struct ev_io *l = &w->listeners[i];
    int fd = net_listen(cfg->binds[i] ? cfg->binds[i] : cfg->bind, *port, SRV_LISTEN_BACKLOG,
                        flags, err, sizeof err);
    if (fd < 0) {
        log_error("%s", err);
        return -1;
    }
    *port = net_local_port(fd); /* port 0: the others share what worker 0 got */
    l->fd = fd;
    l->cb = srv_on_accept;
    l->data = w;
    ev_io_start(w->loop, l, EV_READ);
    return 0;
}

static void srv_pendings_close(struct srv_pendings *p)
{
    for (size_t k = 0; k < p->n; k++)
        close(p->v[k].fd);
    mem_free(p->v);
}

/* A new eventfd in io, watched for reading by loop. */
static int srv_eventfd_watch(struct ev_loop *loop, struct ev_io *io, ev_io_fn cb, void *data)
{
    io->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (io->fd < 0) {
        log_error("cannot create an eventfd: %s", strerror(errno));
        return -1;
    }
    io->cb = cb;
    io->data = data;
    ev_io_start(loop, io, EV_READ);
    return 0;
}

/* Worker w's hand-off queue, with SRV_ACCEPT_HANDOFF (worker 0 has none:
 * what it keeps it admits at once). */
static int srv_handoff_init(struct srv *s, struct srv_worker *w)
{
    if (!s->handoffs || w->index == 0)
        return 0;
    struct srv_handoff *h = &s->handoffs[w->index];
    h->w = w;
    pthread_mutex_init(&h->lock, NULL);
    return srv_eventfd_watch(w->loop, &h->wake, srv_on_handoff, h);
}

/* Connections still queued when the loops stopped are closed unserved. */
static void srv_handoff_free(struct srv *s, struct srv_worker *w)
{
    if (!s->handoffs || !s->handoffs[w->index].w)
        return;
    struct srv_handoff *h = &s->handoffs[w->index];
    if (h->wake.fd >= 0) {
        ev_io_stop(w->loop, &h->wake);
        close(h->wake.fd);
    }
    srv_pendings_close(&h->queue);
    srv_pendings_close(&h->batch);
    srv_pendings_close(&h->taken);
    pthread_mutex_destroy(&h->lock);
}

static void srv_worker_free(struct srv *s, struct srv_worker *w, bool inited)
{
    if (!w->loop)
        return;
    srv_handoff_free(s, w);
    if (inited) {
        if (s->hooks->worker_fini)
            s->hooks->worker_fini(w, s->ctx);
    }
    for (unsigned i = 0; i < SRV_MAX_LISTENERS; i++)
        srv_close_listener(w, &w->listeners[i]);
    ev_timer_stop(w->loop, &w->drain_timer);
    if (w->wake.fd >= 0) {
        ev_io_stop(w->loop, &w->wake);
        close(w->wake.fd);
    }
    if (w->spare_fd >= 0)
        close(w->spare_fd);
    ev_loop_free(w->loop);
    w->loop = NULL;
    mem_free(w->fd_addrs);
}

static int srv_worker_init(struct srv *s, struct srv_worker *w, unsigned index, bool *inited)
{
    memset(w, 0, sizeof *w);
    w->srv = s;
    w->index = index;
    for (unsigned i = 0; i < SRV_MAX_LISTENERS; i++)
        w->listeners[i].fd = -1;
    w->wake.fd = w->spare_fd = -1;
    w->loop = ev_loop_new();
    if (!w->loop) {
        log_error("cannot create an event loop: %s", strerror(errno));
        return -1;
    }
    ev_set_prepare(w->loop, srv_prepare, w);
    ev_timer_init(&w->drain_timer, srv_on_drain_timeout, w);
    if (srv_eventfd_watch(w->loop, &w->wake, srv_on_wake, w) < 0)
        return -1;
    w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (srv_handoff_init(s, w) < 0)
        return -1;
    if (s->hooks->worker_init && s->hooks->worker_init(w, s->ctx) < 0)
        return -1;
    *inited = true;
    return 0;
}

static void *srv_worker_thread(void *arg)
{
    struct srv_worker *w = arg;
    if (ev_run(w->loop) < 0)
        log_error("worker %u: event loop failed: %s", w->index, strerror(errno));
    return NULL;
}

void srv_signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
}

int srv_run(const struct srv_config *cfg, const struct srv_hooks *hooks, void *ctx)
{
    signal(SIGPIPE, SIG_IGN);
    net_raise_fd_limit();
    struct srv s = {.cfg = cfg, .hooks = hooks, .ctx = ctx, .nworkers = cfg->threads ? cfg->threads : 1};
    atomic_init(&s.nconns, 0);
    pthread_mutex_init(&s.addr_lock, NULL);
    s.workers = mem_calloc(s.nworkers, sizeof *s.workers);
    bool handoff = cfg->accept == SRV_ACCEPT_HANDOFF && s.nworkers > 1;
    if (handoff)
        s.handoffs = mem_calloc(s.nworkers, sizeof *s.handoffs);
    bool *inited = mem_calloc(s.nworkers, sizeof *inited);
    int rc = 1;
    unsigned started = 0;
    pthread_t *threads = mem_calloc(s.nworkers, sizeof *threads);

    /* Signals reach worker 0's loop before any port opens, and threads
     * created afterwards inherit the blocked mask, so a SIGTERM sent as
     * soon as a port accepts is always a clean drain. */
    if (srv_worker_init(&s, &s.workers[0], 0, &inited[0]) < 0)
        goto out;
    sigset_t set;
    srv_signal_set(&set);
    if (ev_signal_start(s.workers[0].loop, &set, srv_on_signal, &s) < 0) {
        log_error("cannot set up signal handling: %s", strerror(errno));
        goto out;
    }
    /* With the hand-off, worker 0 alone listens. */
    int flags = s.nworkers > 1 && !handoff ? NET_REUSEPORT : 0;
    unsigned nlisten = handoff ? 1 : s.nworkers;
    int ports[SRV_MAX_LISTENERS];
    for (unsigned p = 0; p < SRV_MAX_LISTENERS; p++)
        ports[p] = p < cfg->nports ? cfg->ports[p] : -1;
    for (unsigned i = 1; i < s.nworkers; i++)
        if (srv_worker_init(&s, &s.workers[i], i, &inited[i]) < 0)
            goto out;
    /* Before any port opens: what it sets up (a persistence log, a
     * password file) can still refuse the start. */
    if (hooks->workers_ready && hooks->workers_ready(ctx) < 0)
        goto out;
    for (unsigned i = 0; i < nlisten; i++)
        for (unsigned p = 0; p < cfg->nports; p++)
            if (srv_worker_listen(&s.workers[i], p, &ports[p], flags) < 0)
                goto out;
    if (hooks->listening)
        hooks->listening(ctx, ports);
    for (started = 1; started < s.nworkers; started++) {
        int e = pthread_create(&threads[started], NULL, srv_worker_thread, &s.workers[started]);
        if (e != 0) {
            log_error("cannot start worker %u: %s", started, strerror(e));
            break;
        }
    }
    if (started < s.nworkers) {
        /* Stop the workers already running, then fail. */
        srv_on_signal(s.workers[0].loop, SIGTERM, &s);
        for (unsigned i = 1; i < started; i++)
            pthread_join(threads[i], NULL);
        started = 0;
        goto out;
    }
    rc = ev_run(s.workers[0].loop) < 0 ? 1 : 0;
    if (rc)
        log_error("event loop failed: %s", strerror(errno));
    for (unsigned i = 1; i < started; i++)
        pthread_join(threads[i], NULL);
out:
    for (unsigned i = 0; i < s.nworkers; i++)
        if (inited[i])
            hooks->close_all(&s.workers[i]);
    if (hooks->stopped)
        hooks->stopped(ctx);
    for (unsigned i = 0; i < s.nworkers; i++)
        srv_worker_free(&s, &s.workers[i], inited[i]);
    mem_free(inited);
    mem_free(threads);
    mem_free(s.workers);
    mem_free(s.handoffs);
    addrcount_free(&s.addrs);
    pthread_mutex_destroy(&s.addr_lock);
    return rc;
}
