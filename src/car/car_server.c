/* car_server.c - the car-server process: core/srv.c's workers, listeners,
 * signals and drain, with the REST (car_rest.c) and gRPC (car_grpc.c)
 * protocols plugged in.
 */
#include "car/car_server.h"

#include <stdio.h>
#include <string.h>

#include "car/car_grpc.h"
#include "car/car_rest.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/tls.h"

struct car_server {
    const struct car_server_config *cfg;
    struct tls_ctx *grpc_tls;
    struct car_worker *workers;
};

enum { CAR_LISTENER_REST, CAR_LISTENER_GRPC };

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
    cfg->min_body_rate = 4096;
    cfg->drain_timeout_ms = 5000;
}

static int car_worker_init(struct srv_worker *base, void *ctx)
{
    struct car_server *s = ctx;
    struct car_worker *w = &s->workers[base->index];
    w->base = base;
    w->cfg = s->cfg;
    w->grpc_tls = s->grpc_tls;
    w->loop = base->loop;
    base->data = w;
    car_rest_start(w);
    return 0;
}

static void car_accept(struct srv_worker *base, unsigned listener, int fd)
{
    struct car_worker *w = base->data;
    if (listener == CAR_LISTENER_REST)
        http_engine_accept(&w->rest, fd);
    else
        car_grpc_accept(w, fd);
}

static bool car_prepare(struct srv_worker *base)
{
    struct car_worker *w = base->data;
    bool rest_busy = http_engine_prepare(&w->rest);
    bool grpc_busy = car_grpc_prepare(w);
    return rest_busy || grpc_busy;
}

static void car_drain(struct srv_worker *base)
{
    struct car_worker *w = base->data;
    w->draining = true;
    http_engine_drain(&w->rest);
    car_grpc_drain(w);
}

static void car_close_all(struct srv_worker *base)
{
    struct car_worker *w = base->data;
    http_engine_close_all(&w->rest);
    car_grpc_close_all(w);
}

static void car_worker_fini(struct srv_worker *base, void *ctx)
{
    struct car_worker *w = base->data;
    http_engine_fini(&w->rest);
    w->stats.refused_connections += base->refused_connections;
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

static void car_listening(void *ctx, const int *ports)
{
    struct car_server *s = ctx;
    car_log_listening(s->cfg, ports[CAR_LISTENER_REST], ports[CAR_LISTENER_GRPC]);
}

int car_server_run(const struct car_server_config *cfg)
{
    static const struct srv_hooks hooks = {
        .worker_init = car_worker_init,
        .accept = car_accept,
        .prepare = car_prepare,
        .drain = car_drain,
        .close_all = car_close_all,
        .listening = car_listening,
        .worker_fini = car_worker_fini,
    };
    struct srv_config sc = {
        .bind = cfg->bind,
        .ports = {[CAR_LISTENER_REST] = cfg->rest_port, [CAR_LISTENER_GRPC] = cfg->grpc_port},
        .nports = 2,
        .threads = cfg->threads ? cfg->threads : 1,
        .max_connections = cfg->max_connections,
        .max_per_address = cfg->max_per_address,
        .drain_timeout_ms = cfg->drain_timeout_ms,
    };
    struct car_server s = {.cfg = cfg};
    /* Built once, before any worker starts, and only read after: every
     * worker's connections share it, as OpenSSL allows for a configured
     * SSL_CTX. */
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
            return 1;
        }
    }
    s.workers = mem_calloc(sc.threads, sizeof *s.workers);
    int rc = srv_run(&sc, &hooks, &s);
    if (rc == 0) {
        struct car_stats total = {0};
        for (unsigned i = 0; i < sc.threads; i++) {
            const struct car_stats *st = &s.workers[i].stats;
            total.rest_requests += st->rest_requests;
            total.rest_errors += st->rest_errors;
            total.grpc_calls += st->grpc_calls;
            total.grpc_errors += st->grpc_errors;
            total.refused_connections += st->refused_connections;
        }
        log_info("stopped: %llu REST requests (%llu errors), %llu gRPC calls (%llu errors), "
                 "%llu connections refused (%llu at max_connections_per_address)",
                 (unsigned long long)total.rest_requests, (unsigned long long)total.rest_errors,
                 (unsigned long long)total.grpc_calls, (unsigned long long)total.grpc_errors,
                 (unsigned long long)(total.refused_connections + srv_refused_per_address()),
                 (unsigned long long)srv_refused_per_address());
    }
    mem_free(s.workers);
    tls_ctx_free(s.grpc_tls);
    return rc;
}
