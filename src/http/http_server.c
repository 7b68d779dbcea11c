/* http_server.c - a standalone HTTP/1.1 server (http_server.h): core/srv.c's
 * workers, one http_engine.c engine on each.
 */
#include "http/http_server.h"

#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/srv.h"
#include "http/http_engine.h"

struct http_server {
    const struct http_server_config *cfg;
    const struct http_app *app;
};

struct http_worker {
    struct srv_worker *base;
    struct http_engine engine;
    void *app_worker;
};

void http_server_config_defaults(struct http_server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->name = "shootout";
    cfg->bind = "127.0.0.1";
    cfg->port = 8080;
    cfg->threads = 1;
    cfg->max_connections = 10000;
    cfg->max_inflight = 16;
    cfg->max_header = 8 * 1024;
    cfg->max_body = 1024 * 1024;
    cfg->idle_timeout_ms = 60000;
    cfg->request_timeout_ms = 10000;
    cfg->min_body_rate = 4096;
    cfg->drain_timeout_ms = 5000;
}

static void worker_conn_closed(void *ctx, int fd) { srv_worker_conn_closed(ctx, fd); }

static int http_worker_init(struct srv_worker *base, void *ctx)
{
    struct http_server *s = ctx;
    struct http_worker *w = mem_calloc(1, sizeof *w);
    w->base = base;
    base->data = w;
    if (s->app->worker_init) {
        w->app_worker = s->app->worker_init(base->loop, base->index, s->app->ctx);
        if (!w->app_worker)
            return -1;
    }
    const struct http_server_config *cfg = s->cfg;
    struct http_engine_config ec = {
        .log_name = "HTTP",
        .max_header = cfg->max_header,
        .max_body = cfg->max_body,
        .max_inflight = cfg->max_inflight,
        .idle_timeout_ms = cfg->idle_timeout_ms,
        .request_timeout_ms = cfg->request_timeout_ms,
        .min_body_rate = cfg->min_body_rate,
        .log_requests = cfg->log_requests,
        .gzip = true,
        .start_times = true,
    };
    http_engine_init(&w->engine, base->loop, &ec, s->app, w->app_worker, worker_conn_closed,
                     base);
    return 0;
}

static void http_accept(struct srv_worker *base, unsigned listener, int fd)
{
    struct http_worker *w = base->data;
    http_engine_accept(&w->engine, fd);
}

static bool http_prepare(struct srv_worker *base)
{
    struct http_worker *w = base->data;
    return http_engine_prepare(&w->engine);
}

static void http_drain(struct srv_worker *base)
{
    struct http_worker *w = base->data;
    http_engine_drain(&w->engine);
}

static void http_close_all(struct srv_worker *base)
{
    struct http_worker *w = base->data;
    http_engine_close_all(&w->engine);
}

static void http_worker_fini(struct srv_worker *base, void *ctx)
{
    struct http_server *s = ctx;
    struct http_worker *w = base->data;
    if (!w)
        return;
    /* The app has stopped (its stopped hook ran): nobody will answer what
     * the engine still holds. */
    if (w->engine.loop)
        http_engine_fini(&w->engine);
    if (w->app_worker && s->app->worker_fini)
        s->app->worker_fini(w->app_worker, s->app->ctx);
    mem_free(w);
    base->data = NULL;
}

static void http_listening(void *ctx, const int *ports)
{
    struct http_server *s = ctx;
    bool v6 = strchr(s->cfg->bind, ':') != NULL;
    log_info("%s: HTTP/1.1 on %s%s%s:%d, %u worker%s", s->cfg->name, v6 ? "[" : "", s->cfg->bind,
             v6 ? "]" : "", ports[0], s->cfg->threads, s->cfg->threads == 1 ? "" : "s");
}

static void http_stopped(void *ctx)
{
    struct http_server *s = ctx;
    if (s->app->stopped)
        s->app->stopped(s->app->ctx);
}

int http_server_run(const struct http_server_config *cfg, const struct http_app *app)
{
    static const struct srv_hooks hooks = {
        .worker_init = http_worker_init,
        .accept = http_accept,
        .prepare = http_prepare,
        .drain = http_drain,
        .close_all = http_close_all,
        .listening = http_listening,
        .stopped = http_stopped,
        .worker_fini = http_worker_fini,
    };
    struct srv_config sc = {
        .bind = cfg->bind,
        .ports = {cfg->port},
        .nports = 1,
        .threads = cfg->threads ? cfg->threads : 1,
        .max_connections = cfg->max_connections,
        .max_per_address = cfg->max_per_address,
        .drain_timeout_ms = cfg->drain_timeout_ms,
    };
    struct http_server s = {.cfg = cfg, .app = app};
    return srv_run(&sc, &hooks, &s);
}
