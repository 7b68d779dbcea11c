/* a2b_store.c - a2b operations on worker threads, completed on the loops. */
#include "a2b/a2b_store.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "a2b/a2b_pg.h"
#include "a2b/a2b_sqlite.h"
#include "core/ev.h"
#include "core/log.h"
#include "core/mem.h"

/* A request and the client it returns to. */
struct store_req {
    struct a2b_request base;
    struct a2b_store_client *client;
};

struct a2b_store_client {
    struct a2b_store *store;
    struct ev_loop *loop;
    struct a2b_pg *pg; /* PostgreSQL: the rest is unused */
    struct ev_io wake; /* eventfd: a worker finished a request of ours */
    pthread_mutex_t lock;
    struct a2b_request_list done; /* under lock */
    unsigned pending;                      /* loop thread only */
};

struct a2b_worker {
    struct a2b_store *store;
    struct a2b_sqlite *db;
    pthread_t thread;
    bool started;
};

struct a2b_store {
    char *pg_conninfo; /* NULL: SQLite */
    unsigned pg_conns;
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct a2b_request_list queue; /* waiting for a worker, under lock */
    unsigned queued, queue_max;  /* under lock */
    bool stopping;               /* under lock */
    unsigned nworkers;
    struct a2b_worker *workers;
    atomic_uint_fast64_t submitted, completed, rejected;
    struct a2b_pg_stats pg_stats; /* the clients' pools, summed */
    /* The owner's reference and each client's: a PostgreSQL pool counts
     * into pg_stats until it closes, which may be after a2b_store_close. */
    atomic_uint refs;
};

static struct a2b_store *store_new(void)
{
    struct a2b_store *s = mem_calloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work, NULL);
    atomic_init(&s->refs, 1);
    return s;
}

static void store_unref(struct a2b_store *s)
{
    if (atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->lock);
    mem_free(s);
}

static void deliver(struct store_req *r)
{
    struct a2b_store_client *c = r->client;
    pthread_mutex_lock(&c->lock);
    bool was_empty = !c->done.head;
    a2b_request_push(&c->done, &r->base);
    pthread_mutex_unlock(&c->lock);
    /* One wake-up per batch: the loop takes the whole list at once. */
    if (was_empty) {
        uint64_t one = 1;
        if (write(c->wake.fd, &one, sizeof one) < 0)
            log_error("a2b store: eventfd write: %s", strerror(errno));
    }
}

static void *worker_main(void *arg)
{
    struct a2b_worker *w = arg;
    struct a2b_store *s = w->store;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (!s->stopping && !s->queue.head)
            pthread_cond_wait(&s->work, &s->lock);
        if (s->stopping) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        struct a2b_request *r = a2b_request_pop(&s->queue);
        s->queued--;
        pthread_mutex_unlock(&s->lock);
        a2b_sqlite_exec(w->db, r->op, &r->args, &r->res);
        deliver((struct store_req *)r);
    }
}

static void store_stop_workers(struct a2b_store *s)
{
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
    for (unsigned i = 0; i < s->nworkers; i++)
        if (s->workers[i].started)
            pthread_join(s->workers[i].thread, NULL);
}

struct a2b_store *a2b_store_open(const struct a2b_store_config *cfg, char *err, size_t errlen)
{
    if (cfg->pg_conninfo) {
        struct a2b_store *s = store_new();
        s->pg_conninfo = mem_strdup(cfg->pg_conninfo);
        s->pg_conns = cfg->pg_conns;
        s->queue_max = cfg->queue_max;
        return s;
    }
    if (access(cfg->path, F_OK) != 0) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (a2b_sqlite_create(cfg->path, cfg->seed, cfg->scale, err, errlen))
            return NULL;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        log_info("a2b: created %s (seed %llu, scale %g) in %.2f s", cfg->path,
                 (unsigned long long)cfg->seed, cfg->scale,
                 (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    }
    struct a2b_store *s = store_new();
    s->queue_max = cfg->queue_max ? cfg->queue_max : 1024;
    s->nworkers = cfg->workers ? cfg->workers : 2;
    s->workers = mem_calloc(s->nworkers, sizeof *s->workers);
    for (unsigned i = 0; i < s->nworkers; i++) {
        s->workers[i].store = s;
        if (!(s->workers[i].db = a2b_sqlite_open(cfg->path, err, errlen)))
            goto fail;
    }
    /* Workers block every signal, so that signals reach the loop threads
     * (ev_signal_start's signalfd needs that). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (unsigned i = 0; i < s->nworkers; i++) {
        int rc = pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]);
        if (rc) {
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            snprintf(err, errlen, "a2b store: pthread_create: %s", strerror(rc));
            goto fail;
        }
        s->workers[i].started = true;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return s;
fail:
    a2b_store_close(s);
    return NULL;
}

void a2b_store_close(struct a2b_store *s)
{
    if (!s)
        return;
    store_stop_workers(s);
    a2b_request_list_free(&s->queue);
    for (unsigned i = 0; i < s->nworkers; i++)
        a2b_sqlite_close(s->workers[i].db);
    mem_free(s->workers);
    mem_free(s->pg_conninfo);
    s->pg_conninfo = NULL;
    store_unref(s);
}

static void client_on_wake(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct a2b_store_client *c = io->data;
    uint64_t n;
    if (read(io->fd, &n, sizeof n) < 0 && errno != EAGAIN)
        log_error("a2b store: eventfd read: %s", strerror(errno));
    pthread_mutex_lock(&c->lock);
    struct a2b_request_list done = c->done;
    c->done = (struct a2b_request_list){0};
    pthread_mutex_unlock(&c->lock);
    /* The store outlives its clients' deliveries (see a2b_store_close). */
    struct a2b_store *s = c->store;
    struct a2b_request *r;
    while ((r = a2b_request_pop(&done))) {
        c->pending--;
        atomic_fetch_add_explicit(&s->completed, 1, memory_order_relaxed);
        r->cb(&r->res, r->ctx);
        a2b_request_free(r);
    }
}

static void count_completed(void *owner)
{
    struct a2b_store *s = owner;
    atomic_fetch_add_explicit(&s->completed, 1, memory_order_relaxed);
}

struct a2b_store_client *a2b_store_client_new(struct a2b_store *s, struct ev_loop *loop, char *err,
                                              size_t errlen)
{
    struct a2b_store_client *c = mem_calloc(1, sizeof *c);
    c->store = s;
    c->loop = loop;
    c->wake.fd = -1;
    pthread_mutex_init(&c->lock, NULL);
    if (s->pg_conninfo) {
        struct a2b_pg_config pc = {.conninfo = s->pg_conninfo, .conns = s->pg_conns,
                                   .queue_max = s->queue_max, .stats = &s->pg_stats,
                                   .completed = count_completed, .owner = s};
        if (!(c->pg = a2b_pg_open(loop, &pc, err, errlen)))
            goto fail;
        atomic_fetch_add(&s->refs, 1);
        return c;
    }
    c->wake = (struct ev_io){.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), .cb = client_on_wake, .data = c};
    if (c->wake.fd < 0 || ev_io_start(loop, &c->wake, EV_READ) < 0) {
        snprintf(err, errlen, "a2b store: eventfd: %s", strerror(errno));
        goto fail;
    }
    atomic_fetch_add(&s->refs, 1);
    return c;
fail:
    if (c->wake.fd >= 0)
        close(c->wake.fd);
    pthread_mutex_destroy(&c->lock);
    mem_free(c);
    return NULL;
}

void a2b_store_client_free(struct a2b_store_client *c)
{
    if (!c)
        return;
    a2b_pg_close(c->pg);
    if (c->wake.fd >= 0) {
        ev_io_stop(c->loop, &c->wake);
        close(c->wake.fd);
    }
    a2b_request_list_free(&c->done);
    pthread_mutex_destroy(&c->lock);
    store_unref(c->store);
    mem_free(c);
}

unsigned a2b_store_client_pending(const struct a2b_store_client *c)
{
    return c->pg ? a2b_pg_pending(c->pg) : c->pending;
}

int a2b_store_submit(struct a2b_store_client *c, enum a2b_op op, const struct a2b_args *args,
                     a2b_done_fn cb, void *ctx)
{
    struct a2b_store *s = c->store;
    if (c->pg) {
        bool queued = a2b_pg_submit(c->pg, op, args, cb, ctx) == 0;
        atomic_fetch_add_explicit(queued ? &s->submitted : &s->rejected, 1, memory_order_relaxed);
        return queued ? 0 : -1;
    }
    struct store_req *r = (struct store_req *)a2b_request_new(sizeof *r, op, args, cb, ctx);
    r->client = c;
    pthread_mutex_lock(&s->lock);
    if (s->stopping || s->queued >= s->queue_max) {
        pthread_mutex_unlock(&s->lock);
        a2b_request_free(&r->base);
        atomic_fetch_add_explicit(&s->rejected, 1, memory_order_relaxed);
        return -1;
    }
    s->queued++;
    a2b_request_push(&s->queue, &r->base);
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    c->pending++;
    atomic_fetch_add_explicit(&s->submitted, 1, memory_order_relaxed);
    return 0;
}

void a2b_store_get_stats(struct a2b_store *s, struct a2b_store_stats *out)
{
    out->submitted = atomic_load_explicit(&s->submitted, memory_order_relaxed);
    out->completed = atomic_load_explicit(&s->completed, memory_order_relaxed);
    out->rejected = atomic_load_explicit(&s->rejected, memory_order_relaxed);
    const struct a2b_pg_stats *p = &s->pg_stats;
    out->pg_conns = atomic_load_explicit(&p->conns, memory_order_relaxed);
    out->pg_connected = atomic_load_explicit(&p->connected, memory_order_relaxed);
    out->pg_busy = atomic_load_explicit(&p->busy, memory_order_relaxed);
    out->pg_lost = atomic_load_explicit(&p->lost, memory_order_relaxed);
    out->pg_reconnects = atomic_load_explicit(&p->reconnects, memory_order_relaxed);
    out->pg_failures = atomic_load_explicit(&p->failures, memory_order_relaxed);
}

unsigned a2b_store_queued(struct a2b_store *s)
{
    pthread_mutex_lock(&s->lock);
    unsigned n = s->queued;
    pthread_mutex_unlock(&s->lock);
    return n;
}
