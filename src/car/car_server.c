/* car_server.c - the car-server process: workers, listeners, accepting with
 * a guard against running out of descriptors, signals and the graceful
 * drain. The protocols themselves live in car_rest.c and car_grpc.c.
 */
#include "car/car_server.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "car/car_grpc.h"
#include "car/car_rest.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/net.h"
#include "core/tls.h"

#define CAR_ACCEPTS_PER_WAKE 256

struct car_server {
    const struct car_server_config *cfg;
    struct tls_ctx *grpc_tls;
    struct car_worker *workers;
    unsigned nworkers;
    atomic_uint nconns;
};

void car_server_config_defaults(struct car_server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->bind = "127.0.0.1";
    cfg->rest_port = 8080;
    cfg->grpc_port = 50051;
    cfg->threads = 1;
    cfg->max_connections = 10000;
    cfg->max_header = 8 * 1024;
    cfg->max_body = 1024 * 1024;
    cfg->max_message = 4 * 1024 * 1024;
    cfg->idle_timeout_ms = 60000;
    cfg->request_timeout_ms = 10000;
    cfg->drain_timeout_ms = 5000;
}

bool car_worker_conn_opened(struct car_worker *w)
{
    unsigned n = atomic_fetch_add(&w->srv->nconns, 1);
    if (n >= w->cfg->max_connections) {
        atomic_fetch_sub(&w->srv->nconns, 1);
        return false;
    }
    w->nconns++;
    return true;
}

void car_worker_conn_closed(struct car_worker *w)
{
    atomic_fetch_sub(&w->srv->nconns, 1);
    w->nconns--;
    if (w->draining && w->nconns == 0)
        ev_stop(w->loop);
}

static void car_on_accept(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct car_worker *w = io->data;
    bool rest = io == &w->rest_listener;
    for (int i = 0; i < CAR_ACCEPTS_PER_WAKE; i++) {
        int fd = net_accept_guarded(io->fd, &w->spare_fd, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                w->stats.refused_connections++;
                log_warn("out of file descriptors at %u connections: dropped a new one", w->nconns);
            }
            return;
        }
        if (!car_worker_conn_opened(w)) {
            /* Refusing by closing is what a client can act on at once;
             * reading a request first would spend what the limit saves. */
            w->stats.refused_connections++;
            close(fd);
            continue;
        }
        if (rest)
            car_rest_accept(w, fd);
        else
            car_grpc_accept(w, fd);
    }
}

static bool car_prepare(struct ev_loop *loop, void *data)
{
    struct car_worker *w = data;
    bool rest_busy = car_rest_prepare(w);
    bool grpc_busy = car_grpc_prepare(w);
    return rest_busy || grpc_busy;
}

static void car_close_listener(struct car_worker *w, struct ev_io *l)
{
    if (l->fd < 0)
        return;
    ev_io_stop(w->loop, l);
    close(l->fd);
    l->fd = -1;
}

static void car_on_drain_timeout(struct ev_loop *loop, struct ev_timer *t)
{
    struct car_worker *w = t->data;
    log_warn("worker %u: %u connections still busy after the drain timeout; closing them",
             w->index, w->nconns);
    car_rest_close_all(w);
    car_grpc_close_all(w);
    ev_stop(loop);
}

static void car_worker_drain(struct car_worker *w)
{
    if (w->draining)
        return;
    w->draining = true;
    car_close_listener(w, &w->rest_listener);
    car_close_listener(w, &w->grpc_listener);
    car_rest_drain(w);
    car_grpc_drain(w);
    if (w->nconns == 0) {
        ev_stop(w->loop);
        return;
    }
    ev_timer_start(w->loop, &w->drain_timer, w->cfg->drain_timeout_ms, 0);
}

static void car_on_wake(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    uint64_t v;
    while (read(io->fd, &v, sizeof v) == (ssize_t)sizeof v)
        ;
    car_worker_drain(io->data);
}

static void car_on_signal(struct ev_loop *loop, int signo, void *data)
{
    struct car_server *s = data;
    if (signo == SIGHUP) {
        log_info("SIGHUP received: nothing to reload (settings are read at start)");
        return;
    }
    log_info("%s received, draining", strsignal(signo));
    uint64_t one = 1;
    for (unsigned i = 0; i < s->nworkers; i++)
        if (write(s->workers[i].wake.fd, &one, sizeof one) < 0)
            log_warn("cannot wake worker %u: %s", i, strerror(errno));
}

static int car_worker_listen(struct car_worker *w, struct ev_io *l, int *port, int flags)
{
    char err[NET_ERR_LEN];
    l->fd = -1;
    if (*port < 0)
        return 0;
    int fd = net_listen(w->cfg->bind, *port, 1024, flags, err, sizeof err);
    if (fd < 0) {
        log_error("%s", err);
        return -1;
    }
    *port = net_local_port(fd); /* port 0: the others share what worker 0 got */
    l->fd = fd;
    l->cb = car_on_accept;
    l->data = w;
    ev_io_start(w->loop, l, EV_READ);
    return 0;
}

static void car_worker_free(struct car_worker *w)
{
    if (!w->loop)
        return;
    car_rest_close_all(w);
    car_grpc_close_all(w);
    car_close_listener(w, &w->rest_listener);
    car_close_listener(w, &w->grpc_listener);
    ev_timer_stop(w->loop, &w->drain_timer);
    if (w->wake.fd >= 0) {
        ev_io_stop(w->loop, &w->wake);
        close(w->wake.fd);
    }
    if (w->spare_fd >= 0)
        close(w->spare_fd);
    ev_loop_free(w->loop);
    w->loop = NULL;
}

static int car_worker_init(struct car_server *s, struct car_worker *w, unsigned index)
{
    memset(w, 0, sizeof *w);
    w->srv = s;
    w->cfg = s->cfg;
    w->grpc_tls = s->grpc_tls;
    w->index = index;
    w->rest_listener.fd = w->grpc_listener.fd = w->wake.fd = w->spare_fd = -1;
    w->loop = ev_loop_new();
    if (!w->loop) {
        log_error("cannot create an event loop: %s", strerror(errno));
        return -1;
    }
    ev_set_prepare(w->loop, car_prepare, w);
    ev_timer_init(&w->drain_timer, car_on_drain_timeout, w);
    w->wake.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->wake.fd < 0) {
        log_error("cannot create an eventfd: %s", strerror(errno));
        return -1;
    }
    w->wake.cb = car_on_wake;
    w->wake.data = w;
    ev_io_start(w->loop, &w->wake, EV_READ);
    w->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return 0;
}

static void *car_worker_thread(void *arg)
{
    struct car_worker *w = arg;
    if (ev_run(w->loop) < 0)
        log_error("worker %u: event loop failed: %s", w->index, strerror(errno));
    return NULL;
}

static void car_log_listening(const struct car_server_config *cfg, int rest_port, int grpc_port)
{
    bool v6 = strchr(cfg->bind, ':') != NULL;
    const char *l = v6 ? "[" : "", *r = v6 ? "]" : "";
    char rest[128] = "off", grpc[128] = "off";
    if (rest_port >= 0)
        snprintf(rest, sizeof rest, "%s%s%s:%d", l, cfg->bind, r, rest_port);
    if (grpc_port >= 0)
        snprintf(grpc, sizeof grpc, "%s%s%s:%d", l, cfg->bind, r, grpc_port);
    log_info("shootout car-server: REST (HTTP/1.1) on %s, gRPC (%s) on %s, %u worker%s", rest,
             cfg->tls_cert ? cfg->tls_require_client_cert ? "h2, mutual TLS" : "h2, TLS" : "h2c",
             grpc, cfg->threads, cfg->threads == 1 ? "" : "s");
}

int car_server_run(const struct car_server_config *cfg)
{
    signal(SIGPIPE, SIG_IGN);
    net_raise_fd_limit();
    struct car_server s = {.cfg = cfg, .nworkers = cfg->threads ? cfg->threads : 1};
    atomic_init(&s.nconns, 0);
    s.workers = mem_calloc(s.nworkers, sizeof *s.workers);
    int rc = 1;
    unsigned started = 0;
    pthread_t *threads = mem_calloc(s.nworkers, sizeof *threads);

    if (cfg->tls_cert && cfg->grpc_port >= 0) {
        struct tls_config tc = {
            .certfile = cfg->tls_cert,
            .keyfile = cfg->tls_key,
            .cafile = cfg->tls_ca,
            .require_certificate = cfg->tls_require_client_cert,
            .alpn = "h2",
        };
        char err[512];
        s.grpc_tls = tls_server_ctx_new(&tc, err, sizeof err);
        if (!s.grpc_tls) {
            log_error("gRPC TLS: %s", err);
            goto out;
        }
    }

    /* Signals reach worker 0's loop before any port opens, and threads
     * created afterwards inherit the blocked mask, so a SIGTERM sent as
     * soon as a port accepts is always a clean drain. */
    if (car_worker_init(&s, &s.workers[0], 0) < 0)
        goto out;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (ev_signal_start(s.workers[0].loop, &set, car_on_signal, &s) < 0) {
        log_error("cannot set up signal handling: %s", strerror(errno));
        goto out;
    }
    int flags = s.nworkers > 1 ? NET_REUSEPORT : 0;
    int rest_port = cfg->rest_port, grpc_port = cfg->grpc_port;
    for (unsigned i = 0; i < s.nworkers; i++) {
        struct car_worker *w = &s.workers[i];
        if (i > 0 && car_worker_init(&s, w, i) < 0)
            goto out;
        if (car_worker_listen(w, &w->rest_listener, &rest_port, flags) < 0 ||
            car_worker_listen(w, &w->grpc_listener, &grpc_port, flags) < 0)
            goto out;
    }
    car_log_listening(cfg, rest_port, grpc_port);
    for (started = 1; started < s.nworkers; started++) {
        int e = pthread_create(&threads[started], NULL, car_worker_thread, &s.workers[started]);
        if (e != 0) {
            log_error("cannot start worker %u: %s", started, strerror(e));
            break;
        }
    }
    if (started < s.nworkers) {
        /* Stop the workers already running, then fail. */
        car_on_signal(s.workers[0].loop, SIGTERM, &s);
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

    struct car_stats total = {0};
    for (unsigned i = 0; i < s.nworkers; i++) {
        const struct car_stats *st = &s.workers[i].stats;
        total.rest_requests += st->rest_requests;
        total.rest_errors += st->rest_errors;
        total.grpc_calls += st->grpc_calls;
        total.grpc_errors += st->grpc_errors;
        total.refused_connections += st->refused_connections;
    }
    log_info("stopped: %llu REST requests (%llu errors), %llu gRPC calls (%llu errors), "
             "%llu connections refused",
             (unsigned long long)total.rest_requests, (unsigned long long)total.rest_errors,
             (unsigned long long)total.grpc_calls, (unsigned long long)total.grpc_errors,
             (unsigned long long)total.refused_connections);
out:
    for (unsigned i = 0; i < s.nworkers; i++)
        car_worker_free(&s.workers[i]);
    mem_free(threads);
    mem_free(s.workers);
    tls_ctx_free(s.grpc_tls);
    return rc;
}
