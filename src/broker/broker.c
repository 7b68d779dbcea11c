/* broker.c - the broker's lifetime on core/srv.c, which listens, accepts
 * with a guard against running out of file descriptors and routes the
 * signals: defaults, setting up the broker on the worker's loop, the
 * periodic sweep, SIGHUP's reload, and the graceful shutdown on SIGTERM or
 * SIGINT (every client sent DISCONNECT and given LINGER_MS to leave); with
 * --threads, the loops, their hand-offs and stopping them for a reload.
 */
#include "broker/broker.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/conn_end.h"
#include "broker/conn_loop.h"
#include "broker/handle.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/persist_load.h"
#include "broker/retain.h"
#include "broker/router.h"
#include "broker/session.h"
#include "broker/session_life.h"
#include "broker/sys_tree.h"
#include "broker/transport.h"
#include "broker/xloop.h"
#include "cluster/js_msgs.h"
#include "cluster/kv_retain.h"
#include "cluster/kv_sess.h"
#include "cluster/kvbucket.h"
#include "cluster/link.h"
#include "core/clock.h"
#include "core/linger.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/net.h"
#include "core/srv.h"

#define BROKER_SWEEP_MS 250

_Static_assert(BROKER_LISTENERS_MAX <= SRV_MAX_LISTENERS, "core/srv.c opens every listener");

void broker_config_defaults(struct broker_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->bind = "127.0.0.1";
    cfg->port = 1883;
    cfg->threads = 0;
    cfg->accept = SRV_ACCEPT_REUSEPORT;
    cfg->max_connections = 100000;
    cfg->max_packet_size = 1024 * 1024;
    cfg->max_queued = 1000;
    cfg->max_inflight = 20;
    cfg->max_output = 8 * 1024 * 1024;
    cfg->max_subscriptions = 10000;
    cfg->queue_qos0 = false;
    cfg->connect_timeout_ms = 10000;
    cfg->packet_timeout_ms = 10000;
    cfg->min_packet_rate = 4096;
    cfg->max_retained_messages = 100000;
    cfg->max_retained_bytes = 256u << 20;
    cfg->max_partial_bytes = 256u << 20;
    cfg->sys_interval_s = 10;
    snprintf(cfg->persistence.location, sizeof cfg->persistence.location, "broker-data");
    snprintf(cfg->cluster.name, sizeof cfg->cluster.name, "shootout");
    snprintf(cfg->cluster.prefix, sizeof cfg->cluster.prefix, "mqtt");
    cfg->cluster.replicas = 1;
    cfg->auth.allow_anonymous = true;
    cfg->obs.metrics_port = -1;
    cfg->obs.connection_messages = true;
    cfg->listeners.n = 1;
}

static void broker_on_sweep(struct ev_loop *loop, struct ev_timer *t)
{
    struct broker_loop *l = t->data;
    conn_sweep(l);
    if (l == l->b->home)
        persist_tick(l->b);
}

static void broker_on_sys(struct ev_loop *loop, struct ev_timer *t) { sys_tree_publish(t->data); }

static void broker_on_stall(struct ev_loop *loop, struct ev_timer *t) { conn_check_stalls(t->data); }

static void broker_release_retained(void *value) { msg_unref(value); }

void broker_init(struct broker *b, const struct broker_config *cfg, unsigned nloops)
{
    memset(b, 0, sizeof *b);
    b->cfg = cfg;
    b->nloops = nloops;
    b->loops = mem_calloc(nloops, sizeof *b->loops);
    b->xs = mem_calloc(nloops, sizeof *b->xs);
    for (unsigned i = 0; i < nloops; i++)
        b->xs[i] = &b->loops[i].x;
    b->home = &b->loops[0];
    pthread_mutex_init(&b->sessions_lock, NULL);
    pthread_mutex_init(&b->retained_lock, NULL);
    pthread_mutex_init(&b->world_lock, NULL);
    pthread_cond_init(&b->world_cond, NULL);
    b->router = router_new(nloops);
    b->sub_slice = BROKER_SUB_SLICE;
    b->retained = retain_new(broker_release_retained);
    /* Wait early enough that the hard limits, twice as high, are rarely
     * reached; small enough that many subscribers behind at once still fit
     * in memory. */
    b->out_high = cfg->max_output / 2 < 256 * 1024 ? cfg->max_output / 2 : 256 * 1024;
    b->out_low = b->out_high / 4;
    b->queue_high = cfg->max_queued / 2 ? cfg->max_queued / 2 : 1;
    b->queue_low = b->queue_high / 4;
}

static void broker_on_handoff(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct broker_loop *l = io->data;
    xloop_clear(&l->x);
    conn_take_handoffs(l);
}

/* With more than one loop: the loop's hand-offs and their eventfd. */
static int broker_loop_xloop(struct broker_loop *l)
{
    struct broker *b = l->b;
    if (b->nloops == 1)
        return 0;
    if (xloop_init(&l->x, l->index, b->nloops) < 0) {
        log_error("cannot create an eventfd: %s", strerror(errno));
        return -1;
    }
    l->x_wake.fd = l->x.efd;
    l->x_wake.cb = broker_on_handoff;
    l->x_wake.data = l;
    return ev_io_start(l->ev, &l->x_wake, EV_READ);
}

void broker_loop_init(struct broker_loop *l, struct broker *b, unsigned index, struct ev_loop *ev)
{
    const struct broker_config *cfg = b->cfg;
    l->b = b;
    l->cfg = cfg;
    l->ev = ev;
    l->index = index;
    ev_timer_init(&l->sweep, broker_on_sweep, l);
    ev_timer_start(ev, &l->sweep, BROKER_SWEEP_MS, BROKER_SWEEP_MS);
    ev_timer_init(&l->stall, broker_on_stall, l);
    if (index != 0)
        return;
    b->started_ms = ev_now(ev);
    ev_timer_init(&b->sys, broker_on_sys, l);
    if (cfg->sys_interval_s) {
        uint64_t every = (uint64_t)cfg->sys_interval_s * 1000;
        /* At once, so $SYS/broker/version is there for the first client. */
        sys_tree_publish(l);
        ev_timer_start(ev, &b->sys, every, every);
    }
}

void broker_drain(struct broker_loop *l)
{
    struct broker *b = l->b;
    if (l == b->home) {
        metrics_stop(b);
        ev_timer_stop(l->ev, &b->sys);
    }
    ev_timer_stop(l->ev, &l->sweep);
    ev_timer_stop(l->ev, &l->stall);
    if (b->persist) /* read by every loop's session_detach */
        __atomic_store_n(&b->defer_wills, true, __ATOMIC_RELAXED);
    pthread_mutex_lock(&b->world_lock);
    b->draining = true; /* a stop of the world waits no more */
    pthread_cond_broadcast(&b->world_cond);
    pthread_mutex_unlock(&b->world_lock);
    struct conn *c;
    while ((c = l->conns))
        conn_kick(l, c, MQTT5_RC_SERVER_SHUTTING_DOWN, "server shutting down",
                  !__atomic_load_n(&b->defer_wills, __ATOMIC_RELAXED));
}

void broker_close_all(struct broker_loop *l)
{
    broker_drain(l); /* a loop that failed did not drain */
    conn_prepare(l);
    for (struct conn *c = l->closed; c; c = c->next)
        conn_close(l, c, "", true);
    conn_prepare(l);
}

/* ---- stopping the world (broker_int.h) ---------------------------------- */

bool broker_stop_world(struct broker *b)
{
    if (b->nloops == 1)
        return true;
    pthread_mutex_lock(&b->world_lock);
    bool ok = !b->draining;
    unsigned gen = ++b->world_gen;
    b->world_parked = 0;
    b->world_stopped = ok;
    pthread_mutex_unlock(&b->world_lock);
    if (!ok)
        return false;
    for (unsigned i = 1; i < b->nloops; i++) {
        struct xloop_entry *e = xloop_push(&b->home->x, i);
        *e = (struct xloop_entry){.kind = XLOOP_PARK, .aux = (void *)(uintptr_t)gen};
    }
    xloop_flush(b->xs, 0);
    /* A loop that began its shutdown may never take the entry. */
    pthread_mutex_lock(&b->world_lock);
    while (b->world_parked < b->nloops - 1 && !b->draining)
        pthread_cond_wait(&b->world_cond, &b->world_lock);
    ok = b->world_parked == b->nloops - 1;
    if (!ok) {
        b->world_stopped = false;
        pthread_cond_broadcast(&b->world_cond);
    }
    pthread_mutex_unlock(&b->world_lock);
    return ok;
}

void broker_resume_world(struct broker *b)
{
    if (b->nloops == 1)
        return;
    pthread_mutex_lock(&b->world_lock);
    b->world_stopped = false;
    pthread_cond_broadcast(&b->world_cond);
    pthread_mutex_unlock(&b->world_lock);
}

void broker_park(struct broker *b, unsigned gen)
{
    pthread_mutex_lock(&b->world_lock);
    if (gen == b->world_gen && b->world_stopped) {
        b->world_parked++;
        pthread_cond_broadcast(&b->world_cond);
        while (gen == b->world_gen && b->world_stopped)
            pthread_cond_wait(&b->world_cond, &b->world_lock);
    }
    pthread_mutex_unlock(&b->world_lock);
}

/* ---- figures, every loop's together -------------------------------------- */

bool broker_log_due(uint64_t *last_ms, uint64_t now)
{
    uint64_t last = __atomic_load_n(last_ms, __ATOMIC_RELAXED);
    /* Another loop's clock may be a little ahead of ours. */
    if (now < last || now - last < 1000)
        return false;
    /* Two loops at once: one of them logs. */
    return __atomic_compare_exchange_n(last_ms, &last, now, false, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
}

uint32_t broker_nsessions(struct broker *b)
{
    pthread_mutex_lock(&b->sessions_lock);
    uint32_t n = (uint32_t)hmap_count(&b->sessions);
    pthread_mutex_unlock(&b->sessions_lock);
    return n;
}

uint32_t broker_nconns(const struct broker *b)
{
    uint32_t n = 0;
    for (unsigned i = 0; i < b->nloops; i++)
        n += STAT_GET(b->loops[i].nconns);
    return n;
}

uint32_t broker_nclients(const struct broker *b)
{
    uint32_t n = 0;
    for (unsigned i = 0; i < b->nloops; i++)
        n += STAT_GET(b->loops[i].nclients);
    return n;
}

void broker_stats_sum(const struct broker *b, struct broker_stats *st)
{
    memset(st, 0, sizeof *st);
    for (unsigned i = 0; i < b->nloops; i++) {
        const struct broker_stats *x = &b->loops[i].stats;
        st->msgs_in += STAT_GET(x->msgs_in);
        st->msgs_out += STAT_GET(x->msgs_out);
        st->bytes_in += STAT_GET(x->bytes_in);
        st->bytes_out += STAT_GET(x->bytes_out);
        st->dropped_queue_full += STAT_GET(x->dropped_queue_full);
        st->dropped_output_full += STAT_GET(x->dropped_output_full);
        st->dropped_offline_qos0 += STAT_GET(x->dropped_offline_qos0);
        st->dropped_expired += STAT_GET(x->dropped_expired);
        st->dropped_too_large += STAT_GET(x->dropped_too_large);
        st->refused_connections += STAT_GET(x->refused_connections);
        st->protocol_errors += STAT_GET(x->protocol_errors);
        st->publisher_waits += STAT_GET(x->publisher_waits);
        st->slow_consumers += STAT_GET(x->slow_consumers);
        st->subscriptions_refused += STAT_GET(x->subscriptions_refused);
    }
}

uint64_t broker_refused_connections(const struct broker *b)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < b->nloops; i++) {
        const struct broker_loop *l = &b->loops[i];
        n += STAT_GET(l->stats.refused_connections) +
             (l->srv ? STAT_GET(l->srv->refused_connections) : 0);
    }
    return n;
}

/* With the loops stopped: what they still hand each other (the wills of
 * the sessions that end, connections on their way) until nothing is left. */
static void broker_settle(struct broker *b)
{
    if (b->nloops == 1)
        return;
    for (bool any = true; any;) {
        any = false;
        for (unsigned i = 0; i < b->nloops; i++) {
            struct broker_loop *l = &b->loops[i];
            if (!l->b)
                continue; /* its worker never started */
            conn_prepare(l);
            for (struct conn *c = l->closed; c; c = c->next)
                conn_close(l, c, "", true);
            conn_prepare(l);
            any |= l->x_taken.n > 0 || l->conns != NULL;
        }
        for (unsigned i = 0; i < b->nloops && !any; i++) {
            pthread_mutex_lock(&b->loops[i].x.lock);
            any = b->loops[i].x.in.n > 0;
            pthread_mutex_unlock(&b->loops[i].x.lock);
        }
        for (unsigned i = 0; i < b->nloops; i++) {
            struct conn *c;
            while (b->loops[i].b && (c = b->loops[i].conns))
                conn_close(&b->loops[i], c, "server shutting down", true);
        }
    }
}

void broker_fini(struct broker *b)
{
    kv_sess_stop(b->kv_sess); /* before the connections it answers go */
    b->kv_sess = NULL;
    js_msgs_stop(b->js_msgs); /* before the link: it feeds the link's inbox */
    b->js_msgs = NULL;
    kv_retain_stop(b->kv_retain); /* before its connection goes */
    b->kv_retain = NULL;
    if (b->cluster) /* the sessions that end below leave NATS with it */
        cluster_stop(b->cluster);
    b->cluster = NULL;
    metrics_stop(b);
    transport_teardown(b);
    persist_close(b);
    /* Delayed wills would only reach sessions that are about to go too
     * (with persistence they are in the log, for the next start). */
    size_t i = 0;
    struct hmap_slot *slot;
    while ((slot = hmap_next(&b->sessions, &i))) {
        struct session *s = slot->val;
        if (s->cold && s->cold->will) {
            msg_unref(s->cold->will);
            s->cold->will = NULL;
        }
    }
    broker_settle(b);
    i = 0;
    while ((slot = hmap_next(&b->sessions, &i))) {
        struct session *s = slot->val;
        session_destroy(s->loop, s);
    }
    broker_settle(b);
    hmap_free(&b->sessions);
    auth_free(b);
    router_free(b->router);
    retain_free(b->retained);
    struct broker_stats st;
    broker_stats_sum(b, &st);
    log_info("stopped: %llu messages in, %llu out; dropped %llu (queue full), %llu (output full), "
             "%llu (QoS 0 to offline sessions), %llu (expired), %llu (over the client's maximum "
             "packet size); %llu publisher waits, %llu slow consumers; "
             "%llu protocol errors, %llu connections refused",
             (unsigned long long)st.msgs_in, (unsigned long long)st.msgs_out,
             (unsigned long long)st.dropped_queue_full, (unsigned long long)st.dropped_output_full,
             (unsigned long long)st.dropped_offline_qos0, (unsigned long long)st.dropped_expired,
             (unsigned long long)st.dropped_too_large, (unsigned long long)st.publisher_waits,
             (unsigned long long)st.slow_consumers, (unsigned long long)st.protocol_errors,
             (unsigned long long)broker_refused_connections(b));
    for (unsigned n = 0; n < b->nloops; n++) {
        route_scratch_free(&b->loops[n].route);
        xloop_fini(&b->loops[n].x);
        mem_free(b->loops[n].x_taken.v);
    }
    for (unsigned n = 0; n < b->nloops; n++)
        msg_pool_fini(&b->loops[n].msgs);
    mem_free(b->xs);
    mem_free(b->loops);
    b->loops = NULL;
    pthread_mutex_destroy(&b->sessions_lock);
    pthread_mutex_destroy(&b->retained_lock);
    pthread_mutex_destroy(&b->world_lock);
    pthread_cond_destroy(&b->world_cond);
}

/* ---- core/srv.c's hooks: a worker is a broker loop ------------------- */

/* broker_run's state: the settings and the broker, whose loops the
 * workers are. */
struct broker_proc {
    const struct broker_config *cfg;
    struct broker b;
};

static int broker_worker_init(struct srv_worker *w, void *ctx)
{
    struct broker_proc *p = ctx;
    struct broker *b = &p->b;
    struct broker_loop *l = &b->loops[w->index];
    broker_loop_init(l, b, w->index, w->loop);
    l->srv = w;
    w->data = l;
    if ((b->kv_sess && kv_sess_attach(b->kv_sess, l) < 0) ||
        (b->js_msgs && js_msgs_attach(b->js_msgs, l) < 0))
        return -1;
    return broker_loop_xloop(l);
}

/* After every loop exists: the persistence log spreads the sessions it
 * restores over all of them. A failure leaves the loops to srv_run, which
 * closes them and stops the broker. */
static int broker_workers_ready(void *ctx)
{
    struct broker_proc *p = ctx;
    struct broker *b = &p->b;
    char err[512] = "";
    if ((b->cluster && cluster_attach(b->cluster, b->home) < 0) ||
        (p->cfg->persistence.on && persist_load(b) < 0) || auth_init(b) < 0 ||
        metrics_start(b) < 0 || transport_setup(b, err, sizeof err) < 0) {
        if (err[0])
            log_error("%s", err);
        return -1;
    }
    return 0;
}

static void broker_accept(struct srv_worker *w, unsigned listener, int fd)
{
    struct broker_loop *l = w->data;
    struct conn *c = conn_accept(l, fd);
    if (!c)
        srv_worker_conn_closed(w, fd);
    else if (transport_attach(l, c, listener) < 0)
        conn_close(l, c, "cannot set up TLS", true);
}

static bool broker_prepare(struct srv_worker *w)
{
    struct broker_loop *l = w->data;
    bool busy = conn_prepare(l);
    return (l == l->b->home && metrics_prepare(l->b)) || busy;
}

static void broker_srv_drain(struct srv_worker *w) { broker_drain(w->data); }

static void broker_srv_close_all(struct srv_worker *w) { broker_close_all(w->data); }

/* Every loop stopped (their ev loops still exist): the broker goes, once,
 * unless a failed start took it down already. */
static void broker_stopped(void *ctx)
{
    struct broker *b = &((struct broker_proc *)ctx)->b;
    if (b->loops)
        broker_fini(b);
}

static void broker_listening(void *ctx, const int *ports)
{
    struct broker_proc *p = ctx;
    const struct broker_config *cfg = p->cfg;
    transport_listening(&p->b, ports);
    bool v6 = strchr(cfg->bind, ':') != NULL;
    /* srv_run raised the descriptor limit already: this reads it. */
    long fds = net_raise_fd_limit();
    log_info("shootout broker listening on %s%s%s:%d (MQTT 3.1, 3.1.1 and 5.0, max %u connections, "
             "%ld fds)",
             v6 ? "[" : "", cfg->bind, v6 ? "]" : "", ports[0], cfg->max_connections, fds);
}

/* As Mosquitto: the password file and the ACL are read again; the other
 * settings stay as they were read at start. Every session's ACL handle is
 * rebound, so the other loops stop meanwhile. */
static void broker_reload(void *ctx)
{
    struct broker *b = &((struct broker_proc *)ctx)->b;
    if (!broker_stop_world(b)) {
        log_info("SIGHUP received while shutting down: nothing reloaded");
        return;
    }
    auth_reload(b);
    broker_resume_world(b);
}

int broker_run(const struct broker_config *cfg)
{
    static const struct srv_hooks hooks = {
        .worker_init = broker_worker_init,
        .workers_ready = broker_workers_ready,
        .accept = broker_accept,
        .prepare = broker_prepare,
        .drain = broker_srv_drain,
        .close_all = broker_srv_close_all,
        .listening = broker_listening,
        .reload = broker_reload,
        .stopped = broker_stopped,
    };
    /* The broker refuses clients over max_connections itself, with a
     * CONNACK (docs/broker.md), so srv refuses none; connections still
     * lingering when LINGER_MS is up are closed. */
    unsigned threads = cfg->threads;
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n < 1 ? 1 : n > BROKER_THREADS_MAX ? BROKER_THREADS_MAX : (unsigned)n;
    }
    struct srv_config sc = {
        .bind = cfg->bind,
        .nports = cfg->listeners.n,
        .threads = threads,
        .accept = (enum srv_accept)cfg->accept,
        .max_connections = UINT_MAX,
        .max_per_address = cfg->max_per_address,
        .drain_timeout_ms = LINGER_MS,
    };
    sc.ports[0] = cfg->port;
    for (uint32_t i = 1; i < cfg->listeners.n; i++) {
        const struct broker_listener *l = &cfg->listeners.v[i];
        sc.ports[i] = l->port;
        sc.binds[i] = l->bind[0] ? l->bind : NULL;
    }
    struct broker_proc p = {.cfg = cfg};
    broker_init(&p.b, cfg, sc.threads);
    /* Before any loop runs: every loop reads b->cluster. */
    if (cfg->cluster.urls[0] && !(p.b.cluster = cluster_start(cfg, cfg->port))) {
        broker_fini(&p.b);
        return 1;
    }
    if (p.b.cluster) { /* the buckets ask JetStream for KVBUCKET_START_MS in all */
        uint64_t until = clock_now_ms() + KVBUCKET_START_MS;
        p.b.kv_retain = kv_retain_start(p.b.cluster, cfg, until);
        p.b.kv_sess = kv_sess_start(p.b.cluster, cfg, &p.b, until);
        p.b.js_msgs = js_msgs_start(p.b.cluster, cfg, sc.threads);
    }
    int rc = srv_run(&sc, &hooks, &p);
    /* srv_run failed before the loops started (else broker_fini did these) */
    kv_sess_stop(p.b.kv_sess);
    js_msgs_stop(p.b.js_msgs);
    kv_retain_stop(p.b.kv_retain);
    if (p.b.cluster)
        cluster_stop(p.b.cluster);
    return rc;
}
