/* a2b_server.c - the a2b service's routes on http_server.c: each request's
 * path, query and body become a2b_args, the operation goes to the store,
 * and its completion (later, on the same loop) answers. Counters for
 * /metrics are shared by every worker (relaxed atomics).
 */
#include "a2b/a2b_server.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "a2b/a2b_api.h"
#include "a2b/a2b_body.h"
#include "a2b/a2b_pg.h"
#include "a2b/a2b_store.h"
#include "core/clock.h"
#include "core/ev.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/srv.h"
#include "http/prom.h"

#define JSON_TYPE "application/json"

/* Routes, for metrics: the store operations first (route == op), then the
 * rest. */
enum {
    R_LIVENESS = A2B_OP_COUNT,
    R_METRICS,
    R_OPENAPI,
    R_NONE, /* no route: 404, 405, or the request could not be read */
    R_COUNT
};

static const char *const route_names[R_COUNT] = {
    [A2B_COUNTRIES] = "countries",     [A2B_CITIES] = "cities",
    [A2B_LOCATIONS] = "locations",     [A2B_TRANSFERS] = "transfers",
    [A2B_BOOK] = "book",               [A2B_BOOKINGS] = "bookings",
    [A2B_BOOKING] = "booking",         [A2B_UPDATE_BOOKING] = "update_booking",
    [A2B_USER] = "user",               [A2B_UPDATE_USER] = "update_user",
    [A2B_READY] = "readiness",         [R_LIVENESS] = "liveness",
    [R_METRICS] = "metrics",           [R_OPENAPI] = "openapi",
    [R_NONE] = "none",
};

static const int status_codes[] = {200, 201, 204, 400, 404, 405, 408, 409,
                                   413, 415, 417, 431, 500, 501, 503, 505};
#define NSTATUS (sizeof status_codes / sizeof status_codes[0])

/* Latency bucket bounds, seconds. */
static const double latency_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                        0.1,    0.25,  0.5,    1,     2.5,  5,    10};
#define NBOUNDS (sizeof latency_bounds / sizeof latency_bounds[0])

struct a2b_metrics {
    atomic_uint_fast64_t requests[R_COUNT][NSTATUS + 1]; /* last: other statuses */
    atomic_uint_fast64_t latency[R_COUNT][NBOUNDS + 1];  /* last: over the top bound */
    atomic_uint_fast64_t latency_ns[R_COUNT];
};

struct a2b_server {
    const struct a2b_server_config *cfg;
    struct a2b_store *store;
    struct a2b_metrics metrics;
    time_t started;
};

struct a2b_worker {
    struct a2b_server *srv;
    struct a2b_store_client *client;
    struct prom prom; /* the /metrics buffer, reused */
};

void a2b_server_config_defaults(struct a2b_server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    http_server_config_defaults(&cfg->http);
    cfg->http.name = "shootout a2b-server";
    cfg->db = "a2b.db";
    cfg->seed = 1;
    cfg->scale = 1.0;
}

bool a2b_server_db_is_pg(const char *db)
{
    return strncmp(db, "postgres://", 11) == 0 || strncmp(db, "postgresql://", 13) == 0;
}

/* ---- Answers ------------------------------------------------------------ */

static void respond_error(struct http_req *req, int status, const char *message)
{
    struct a2b_result res = {0};
    a2b_result_error(&res, status, message);
    http_respond(req, status, JSON_TYPE, res.body, res.len, NULL);
    a2b_result_clear(&res);
}

static void respond_405(struct http_req *req, const char *allow)
{
    char hdr[96];
    snprintf(hdr, sizeof hdr, "Allow: %s\r\n", allow);
    struct a2b_result res = {0};
    a2b_result_error(&res, 405, "Method not allowed");
    http_respond(req, 405, JSON_TYPE, res.body, res.len, hdr);
    a2b_result_clear(&res);
}

static void on_done(struct a2b_result *res, void *ctx)
{
    struct http_req *req = ctx;
    if (req->route == A2B_READY) {
        /* Spring's health shape, whatever the store said. */
        if (res->status == 200)
            http_respond(req, 200, JSON_TYPE, "{\"status\":\"UP\"}", 15, NULL);
        else
            http_respond(req, 503, JSON_TYPE, "{\"status\":\"DOWN\"}", 17, NULL);
        return;
    }
    http_respond(req, res->status, res->body ? JSON_TYPE : NULL, res->body, res->len, NULL);
}

static void submit(struct http_req *req, enum a2b_op op, const struct a2b_args *args)
{
    struct a2b_worker *w = req->worker;
    req->route = (int)op;
    if (a2b_store_submit(w->client, op, args, on_done, req) < 0) {
        if (op == A2B_READY)
            http_respond(req, 503, JSON_TYPE, "{\"status\":\"DOWN\"}", 17, NULL);
        else
            respond_error(req, 503, "The server is busy");
    }
}

/* ---- /metrics ----------------------------------------------------------- */

static void observe(const struct http_req *req, int status)
{
    struct a2b_worker *w = req->worker;
    struct a2b_metrics *m = &w->srv->metrics;
    int route = req->route >= 0 && req->route < R_COUNT ? req->route : R_NONE;
    size_t s = 0;
    while (s < NSTATUS && status_codes[s] != status)
        s++;
    atomic_fetch_add_explicit(&m->requests[route][s], 1, memory_order_relaxed);
    uint64_t now = clock_now_ns();
    uint64_t ns = now > req->start_ns ? now - req->start_ns : 0;
    size_t b = 0;
    while (b < NBOUNDS && (double)ns / 1e9 > latency_bounds[b])
        b++;
    atomic_fetch_add_explicit(&m->latency[route][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->latency_ns[route], ns, memory_order_relaxed);
}

static void write_metrics(struct a2b_worker *w, struct prom *p)
{
    struct a2b_server *s = w->srv;
    struct a2b_metrics *m = &s->metrics;
    prom_reset(p);
    prom_family(p, "a2b_http_requests_total", PROM_COUNTER, "HTTP requests answered, by route and status");
    for (int r = 0; r < R_COUNT; r++)
        for (size_t i = 0; i <= NSTATUS; i++) {
            uint64_t n = atomic_load_explicit(&m->requests[r][i], memory_order_relaxed);
            if (n == 0)
                continue;
            char code[16];
            snprintf(code, sizeof code, "%d", i < NSTATUS ? status_codes[i] : 0);
            struct prom_label l[2] = {{"route", route_names[r]}, {"status", i < NSTATUS ? code : "other"}};
            prom_sample(p, "a2b_http_requests_total", l, 2, (double)n);
        }
    prom_family(p, "a2b_http_request_duration_seconds", PROM_HISTOGRAM,
                "Time from a complete request head to its answer, by route");
    for (int r = 0; r < R_COUNT; r++) {
        uint64_t counts[NBOUNDS + 1], total = 0;
        for (size_t i = 0; i <= NBOUNDS; i++)
            total += counts[i] = atomic_load_explicit(&m->latency[r][i], memory_order_relaxed);
        if (total == 0)
            continue;
        struct prom_label l = {"route", route_names[r]};
        double sum = (double)atomic_load_explicit(&m->latency_ns[r], memory_order_relaxed) / 1e9;
        prom_histogram(p, "a2b_http_request_duration_seconds", &l, 1, latency_bounds, counts, NBOUNDS,
                       total, sum);
    }
    struct a2b_store_stats st;
    a2b_store_get_stats(s->store, &st);
    prom_family(p, "a2b_store_submitted_total", PROM_COUNTER, "Operations accepted by the store");
    prom_sample(p, "a2b_store_submitted_total", NULL, 0, (double)st.submitted);
    prom_family(p, "a2b_store_completed_total", PROM_COUNTER, "Operations completed by the store");
    prom_sample(p, "a2b_store_completed_total", NULL, 0, (double)st.completed);
    prom_family(p, "a2b_store_rejected_total", PROM_COUNTER,
                "Operations refused because the store's queue was full (answered 503)");
    prom_sample(p, "a2b_store_rejected_total", NULL, 0, (double)st.rejected);
    prom_family(p, "a2b_connections_refused_per_address_total", PROM_COUNTER,
                "Connections closed at once for max_connections_per_address");
    prom_sample(p, "a2b_connections_refused_per_address_total", NULL, 0,
                (double)srv_refused_per_address());
    prom_family(p, "a2b_store_in_flight", PROM_GAUGE, "Operations accepted and not completed");
    prom_sample(p, "a2b_store_in_flight", NULL, 0, (double)(st.submitted - st.completed));
    prom_family(p, "a2b_store_queued", PROM_GAUGE, "Operations waiting for a worker (SQLite)");
    prom_sample(p, "a2b_store_queued", NULL, 0, (double)a2b_store_queued(s->store));
    if (st.pg_conns) {
        const struct {
            const char *name;
            enum prom_type type;
            const char *help;
            uint64_t value;
        } pool[] = {
            {"a2b_pg_connections", PROM_GAUGE, "PostgreSQL connections in the pools", st.pg_conns},
            {"a2b_pg_connected", PROM_GAUGE, "PostgreSQL connections ready to serve", st.pg_connected},
            {"a2b_pg_busy", PROM_GAUGE, "PostgreSQL connections running a request", st.pg_busy},
            {"a2b_pg_lost_total", PROM_COUNTER, "PostgreSQL connections that broke", st.pg_lost},
            {"a2b_pg_reconnects_total", PROM_COUNTER, "PostgreSQL connections re-made after a loss",
             st.pg_reconnects},
            {"a2b_pg_reconnect_failures_total", PROM_COUNTER,
             "Attempts to re-make a PostgreSQL connection that failed", st.pg_failures},
        };
        for (size_t i = 0; i < sizeof pool / sizeof pool[0]; i++) {
            prom_family(p, pool[i].name, pool[i].type, pool[i].help);
            prom_sample(p, pool[i].name, NULL, 0, (double)pool[i].value);
        }
    }
    prom_family(p, "process_uptime_seconds", PROM_GAUGE, "Seconds since the server started");
    prom_sample(p, "process_uptime_seconds", NULL, 0, difftime(time(NULL), s->started));
    prom_family(p, "process_start_time_seconds", PROM_GAUGE, "Start time, seconds since the epoch");
    prom_sample(p, "process_start_time_seconds", NULL, 0, (double)s->started);
}

/* ---- Routing ------------------------------------------------------------ */

#define MAX_SEGMENTS 8

struct segs {
    struct {
        const char *p;
        size_t len;
    } s[MAX_SEGMENTS];
    int n; /* -1: too many, or an empty segment */
};

static void split(const char *path, struct segs *sg)
{
    sg->n = 0;
    const char *p = path;
    while (*p == '/') {
        p++;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || sg->n == MAX_SEGMENTS) {
            sg->n = -1;
            return;
        }
        sg->s[sg->n].p = p;
        sg->s[sg->n].len = len;
        sg->n++;
        p += len;
    }
}

static bool seg_is(const struct segs *sg, int i, const char *lit)
{
    return sg->s[i].len == strlen(lit) && memcmp(sg->s[i].p, lit, sg->s[i].len) == 0;
}

/* The request's strings are NUL-terminated (an asynchronous app's). */
static bool method_is(const struct http_req *req, const char *m)
{
    return strcmp(req->method.ptr, m) == 0;
}
static bool is_get(const struct http_req *req) { return method_is(req, "GET") || req->head; }

/* Reads ids from the segments at idx[0..n) into out; answers 400 if one is
 * not an id. */
static bool ids(struct http_req *req, const struct segs *sg, const int *idx, int64_t *const *out, int n)
{
    for (int i = 0; i < n; i++) {
        if (!a2b_parse_id(sg->s[idx[i]].p, sg->s[idx[i]].len, out[i])) {
            char msg[96];
            snprintf(msg, sizeof msg, "Invalid id '%.*s': an id is a number",
                     (int)(sg->s[idx[i]].len > 40 ? 40 : sg->s[idx[i]].len), sg->s[idx[i]].p);
            respond_error(req, 400, msg);
            return false;
        }
    }
    return true;
}

/* The body of a POST or PUT as a JSON object; answers 400/415 on failure.
 * store must hold req->body_len bytes. */
static bool read_body(struct http_req *req, char *store, const struct a2b_field *f, size_t nf)
{
    if (req->content_type.ptr && !http1_media_type_is(req->content_type, JSON_TYPE)) {
        respond_error(req, 415, "The body must be application/json");
        return false;
    }
    if (!req->body) {
        respond_error(req, 400, "Required request body is missing");
        return false;
    }
    const char *err;
    if (a2b_body_parse(req->body, req->body_len, store, req->body_len, f, nf, &err) < 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "Malformed JSON body: %s", err);
        respond_error(req, 400, msg);
        return false;
    }
    return true;
}

static void route_transfers(struct http_req *req)
{
    char origin[32], dest[32], date[32];
    struct a2b_args a = {0};
    int ro = a2b_query_get(req->query.ptr, "originId", origin, sizeof origin);
    int rd = a2b_query_get(req->query.ptr, "destinationId", dest, sizeof dest);
    int rt = a2b_query_get(req->query.ptr, "date", date, sizeof date);
    if (ro < 0 || rd < 0 || rt < 0) {
        respond_error(req, 400, "Malformed query string");
        return;
    }
    if (ro == 0 || rd == 0) {
        respond_error(req, 400, ro == 0 ? "Required parameter 'originId' is not present"
                                        : "Required parameter 'destinationId' is not present");
        return;
    }
    if (!a2b_parse_id(origin, strlen(origin), &a.origin_id) ||
        !a2b_parse_id(dest, strlen(dest), &a.destination_id)) {
        respond_error(req, 400, "originId and destinationId must be numbers");
        return;
    }
    a.date = rt ? date : NULL; /* a missing date is the store's 400 */
    submit(req, A2B_TRANSFERS, &a);
}

static void route_users(struct http_req *req, const struct segs *sg)
{
    struct a2b_args a = {0};
    if (sg->n == 2) { /* /users/{u} */
        bool put = method_is(req, "PUT");
        if (!is_get(req) && !put) {
            respond_405(req, "GET, HEAD, PUT");
            return;
        }
        if (!ids(req, sg, (const int[]){1}, (int64_t *const[]){&a.user_id}, 1))
            return;
        if (!put) {
            submit(req, A2B_USER, &a);
            return;
        }
        char *store = mem_alloc(req->body_len + 1);
        const struct a2b_field f[] = {{"firstName", &a.first_name}, {"lastName", &a.last_name}};
        if (read_body(req, store, f, 2))
            submit(req, A2B_UPDATE_USER, &a); /* the store copies the strings */
        mem_free(store);
        return;
    }
    if (!seg_is(sg, 2, "transfers")) {
        respond_error(req, 404, "No such resource");
        return;
    }
    if (sg->n == 3) { /* /users/{u}/transfers */
        if (!is_get(req)) {
            respond_405(req, "GET, HEAD");
            return;
        }
        if (ids(req, sg, (const int[]){1}, (int64_t *const[]){&a.user_id}, 1))
            submit(req, A2B_BOOKINGS, &a);
        return;
    }
    /* /users/{u}/transfers/{t} */
    bool post = method_is(req, "POST"), put = method_is(req, "PUT");
    if (!is_get(req) && !post && !put) {
        respond_405(req, "GET, HEAD, POST, PUT");
        return;
    }
    if (!ids(req, sg, (const int[]){1, 3}, (int64_t *const[]){&a.user_id, &a.transfer_id}, 2))
        return;
    if (!post && !put) {
        submit(req, A2B_BOOKING, &a);
        return;
    }
    char *store = mem_alloc(req->body_len + 1);
    const struct a2b_field f[] = {{"description", &a.description}, {"state", &a.state}};
    if (read_body(req, store, f, post ? 1 : 2))
        submit(req, post ? A2B_BOOK : A2B_UPDATE_BOOKING, &a);
    mem_free(store);
}

static void route_api(struct http_req *req, const struct segs *sg)
{
    struct a2b_args a = {0};
    /* sg->s[0..1] are "api", "v1". */
    struct segs rest = {.n = sg->n - 2};
    memcpy(rest.s, sg->s + 2, sizeof rest.s[0] * (size_t)(rest.n > 0 ? rest.n : 0));
    const struct segs *r = &rest;
    if (r->n == 1 && seg_is(r, 0, "openapi.json")) {
        req->route = R_OPENAPI;
        if (!is_get(req))
            respond_405(req, "GET, HEAD");
        else
            http_respond(req, 200, JSON_TYPE, a2b_openapi_json, strlen(a2b_openapi_json), NULL);
        return;
    }
    if (r->n >= 1 && seg_is(r, 0, "countries") &&
        (r->n == 1 || (r->n == 3 && seg_is(r, 2, "cities")) ||
         (r->n == 5 && seg_is(r, 2, "cities") && seg_is(r, 4, "locations")))) {
        if (!is_get(req)) {
            respond_405(req, "GET, HEAD");
            return;
        }
        if (r->n == 1)
            submit(req, A2B_COUNTRIES, &a);
        else if (r->n == 3 && ids(req, r, (const int[]){1}, (int64_t *const[]){&a.country_id}, 1))
            submit(req, A2B_CITIES, &a);
        else if (r->n == 5 &&
                 ids(req, r, (const int[]){1, 3}, (int64_t *const[]){&a.country_id, &a.city_id}, 2))
            submit(req, A2B_LOCATIONS, &a);
        return;
    }
    if (r->n == 1 && seg_is(r, 0, "transfers")) {
        if (!is_get(req))
            respond_405(req, "GET, HEAD");
        else
            route_transfers(req);
        return;
    }
    if (r->n >= 2 && r->n <= 4 && seg_is(r, 0, "users")) {
        route_users(req, r);
        return;
    }
    respond_error(req, 404, "No such resource");
}

static void handle(struct http_req *req)
{
    struct a2b_worker *w = req->worker;
    struct segs sg;
    split(req->path.ptr, &sg);
    if (sg.n >= 2 && seg_is(&sg, 0, "api") && seg_is(&sg, 1, "v1")) {
        route_api(req, &sg);
        return;
    }
    if (sg.n == 3 && seg_is(&sg, 0, "actuator") && seg_is(&sg, 1, "health") &&
        (seg_is(&sg, 2, "liveness") || seg_is(&sg, 2, "readiness"))) {
        bool live = seg_is(&sg, 2, "liveness");
        req->route = live ? R_LIVENESS : A2B_READY;
        if (!is_get(req))
            respond_405(req, "GET, HEAD");
        else if (live)
            http_respond(req, 200, JSON_TYPE, "{\"status\":\"UP\"}", 15, NULL);
        else
            submit(req, A2B_READY, &(struct a2b_args){0});
        return;
    }
    if (sg.n == 1 && seg_is(&sg, 0, "metrics")) {
        req->route = R_METRICS;
        if (!is_get(req)) {
            respond_405(req, "GET, HEAD");
            return;
        }
        write_metrics(w, &w->prom);
        http_respond(req, 200, PROM_CONTENT_TYPE, w->prom.buf, w->prom.len, NULL);
        return;
    }
    respond_error(req, 404, "No such resource");
}

/* ---- Workers and the process ------------------------------------------- */

static void *worker_init(struct ev_loop *loop, unsigned index, void *ctx)
{
    struct a2b_server *s = ctx;
    char err[256];
    struct a2b_store_client *client = a2b_store_client_new(s->store, loop, err, sizeof err);
    if (!client) {
        log_error("worker %u: %s", index, err);
        return NULL;
    }
    struct a2b_worker *w = mem_calloc(1, sizeof *w);
    w->srv = s;
    w->client = client;
    prom_init(&w->prom);
    return w;
}

static void stopped(void *ctx)
{
    struct a2b_server *s = ctx;
    /* Requests still in the store never complete; the clients go next. */
    a2b_store_close(s->store);
    s->store = NULL;
}

static void worker_fini(void *worker, void *ctx)
{
    struct a2b_worker *w = worker;
    a2b_store_client_free(w->client);
    prom_free(&w->prom);
    mem_free(w);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

int a2b_server_run(const struct a2b_server_config *cfg)
{
    bool pg = a2b_server_db_is_pg(cfg->db);
    char err[512];
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (cfg->init_only && pg) {
        log_warn("a2b: creating schema a2b in PostgreSQL and loading the data set (seed %llu, "
                 "scale %g); this replaces what is there",
                 (unsigned long long)cfg->seed, cfg->scale);
        if (a2b_pg_init(cfg->db, cfg->seed, cfg->scale, err, sizeof err) < 0) {
            log_error("a2b: %s", err);
            return 1;
        }
        log_warn("a2b: PostgreSQL database loaded in %.2f s", seconds_since(&t0));
        return 0;
    }
    struct stat st;
    if (!pg && stat(cfg->db, &st) != 0)
        log_warn("a2b: %s does not exist: creating it and loading the data set (seed %llu, scale "
                 "%g) now; this takes a few seconds at scale 1",
                 cfg->db, (unsigned long long)cfg->seed, cfg->scale);
    struct a2b_store_config sc = {
        .pg_conninfo = pg ? cfg->db : NULL,
        .pg_conns = cfg->pool,
        .path = pg ? NULL : cfg->db,
        .seed = cfg->seed,
        .scale = cfg->scale,
        .workers = cfg->workers,
        .queue_max = cfg->queue_max,
    };
    struct a2b_server s = {.cfg = cfg, .started = time(NULL)};
    s.store = a2b_store_open(&sc, err, sizeof err);
    if (!s.store) {
        log_error("a2b: %s", err);
        return 1;
    }
    log_info("a2b: database %s ready after %.2f s", pg ? "(PostgreSQL)" : cfg->db,
             seconds_since(&t0));
    if (cfg->init_only) {
        a2b_store_close(s.store);
        return 0;
    }
    struct http_app app = {
        .async = true,
        .worker_init = worker_init,
        .handle = handle,
        .observe = observe,
        .error = respond_error,
        .stopped = stopped,
        .worker_fini = worker_fini,
        .ctx = &s,
    };
    int rc = http_server_run(&cfg->http, &app);
    if (s.store)
        a2b_store_close(s.store);
    return rc;
}
