/* ho_engine.c - the http-open engine (see ho_engine.h): users, the
 * connections they send on, and the event-loop threads that run them. */
#include "load/http/ho_engine.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/mem.h"
#include "http/http_client.h"
#include "load/trace.h"

#define HO_TICK_MS 10
#define HO_BODY_KEEP (1u << 20)

const char *const ho_err_names[HO_ERR_COUNT] = {
    "status", "check", "timeout", "connect", "closed", "protocol", "generator_fds",
    "generator_unset_variable",
};

/* A connection users send on (see "connections" below). */
struct ho_conn {
    struct http_conn *c;
    struct ho_user *user; /* whose request it carries or connects for; NULL: idle */
};

struct ho_user {
    struct ho_thread *th;
    struct ho_user *prev, *next;
    unsigned step;
    bool failed, waiting;
    struct ho_conn own;   /* without --share-connections */
    struct ho_conn *conn; /* the one it holds, NULL: none */
    struct ho_user *wait_prev, *wait_next;
    struct ev_timer timer;
    uint64_t intended_ns; /* when the current request should start */
    unsigned level;       /* the current request's, from its intended start */
    char *vals[SCN_MAX_VARS];
};

/* The counters of the second th is in, the series grown to it. */
static struct ho_sec *th_sec(struct ho_thread *th)
{
    unsigned s = (unsigned)((clock_now_ns() - th->t0_ns) / 1000000000u);
    if (s >= th->nsecs) {
        unsigned n = s + 16;
        th->secs = mem_realloc(th->secs, n * sizeof *th->secs);
        memset(th->secs + th->nsecs, 0, (n - th->nsecs) * sizeof *th->secs);
        th->nsecs = n;
    }
    return &th->secs[s];
}

/* Where --until-saturated stopped the profile: no arrival from then on;
 * infinite while it runs its course. */
static double cfg_cut_s(const struct ho_cfg *cfg)
{
    unsigned kept = atomic_load(cfg->kept);
    return kept < cfg->nlevels ? cfg->levels[kept].start_s : INFINITY;
}

double ho_cfg_end_s(const struct ho_cfg *cfg)
{
    return fmin(cfg->profile_end_s, cfg_cut_s(cfg));
}

unsigned ho_cfg_level_at(const struct ho_cfg *cfg, double t)
{
    if (t >= ho_cfg_end_s(cfg))
        return cfg->nlevels;
    unsigned lo = 0, hi = cfg->nlevels - 1;
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (cfg->levels[mid].start_s <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static unsigned th_level(const struct ho_thread *th, uint64_t ns)
{
    double t = ns > th->t0_ns ? (double)(ns - th->t0_ns) / 1e9 : 0;
    return ho_cfg_level_at(th->cfg, t);
}

/* ---- users ----------------------------------------------------------------- */

static void user_run(struct ho_user *u);
static void conn_close(struct ho_conn *k);
static void conn_release(struct ho_user *u);
static void wait_remove(struct ho_user *u);

static void user_end(struct ho_user *u)
{
    struct ho_thread *th = u->th;
    if (u->waiting)
        wait_remove(u);
    if (u->conn && u->conn != &u->own) { /* cut off by --max-duration mid-request */
        conn_close(u->conn);
        conn_release(u);
    }
    conn_close(&u->own);
    ev_timer_stop(th->loop, &u->timer);
    for (unsigned i = 0; i < SCN_MAX_VARS; i++)
        mem_free(u->vals[i]);
    if (u->prev)
        u->prev->next = u->next;
    else
        th->users = u->next;
    if (u->next)
        u->next->prev = u->prev;
    th->alive--;
    th->tot.users_done++;
    th_sec(th)->ended++;
    mem_free(u);
}

static const struct scn_request *user_req(const struct ho_user *u)
{
    return &u->th->cfg->scn->steps[u->step].req;
}

/* Records the end of the current request and moves past it. */
static void user_record(struct ho_user *u, bool ok, enum ho_err err, int status)
{
    struct ho_thread *th = u->th;
    const struct scn_request *r = user_req(u);
    uint64_t t = clock_now_ns(), lat = t > u->intended_ns ? t - u->intended_ns : 0;
    struct ho_stat *st = &th->tot.by_name[r->name];
    struct ho_level *lv = &th->levels[u->level];
    hist_record(&st->h, lat);
    hist_record(&th->tot.all.h, lat);
    pthread_mutex_lock(&th->lock);
    hist_record(&lv->st.h, lat);
    lv->st.ok += ok;
    lv->st.ko += !ok;
    lv->ko_gen += !ok && ho_err_is_generator(err);
    th->levels[th_level(th, t)].answered++;
    pthread_mutex_unlock(&th->lock);
    struct ho_sec *sec = th_sec(th);
    if (ok) {
        st->ok++;
        th->tot.all.ok++;
        sec->ok++;
        sec->lat[seclat_bucket(lat / 1000)]++;
    } else {
        st->ko++;
        th->tot.all.ko++;
        sec->ko++;
        sec->ko_gen += ho_err_is_generator(err);
        th->tot.errs[err]++;
        if (err == HO_ERR_STATUS && status >= 100 && status < 600)
            th->tot.status_ko[status]++;
        u->failed = true;
    }
    u->step++;
    /* The next request, if no pause comes first, is due now. */
    u->intended_ns = t;
}

/* Timers. ev counts whole milliseconds of CLOCK_MONOTONIC (clock_now_ns()'s
 * clock), truncated, from its reading when the loop last woke: a delay
 * computed from clock_now_ns() and added to that reading fires up to a
 * millisecond (and the callbacks run since the wake-up) early, and a
 * request sent before its intended start looks faster than it was (0 ms
 * against a fast server). So intended starts are put on ev's grid, rounded
 * up to the millisecond (a pause or an arrival up to 1 ms later than
 * drawn), and a timer is armed for that millisecond itself: it fires at
 * the first wake-up at or after it, so the request never leaves early,
 * and only the generator's real lateness counts in its response time. */
static uint64_t ms_ceil_ns(uint64_t ns)
{
    return (ns + 999999) / 1000000 * 1000000;
}

/* Arms t for at_ns, on the millisecond grid. */
static void timer_at(struct ev_loop *loop, struct ev_timer *t, uint64_t at_ns)
{
    uint64_t at_ms = at_ns / 1000000, now_ms = ev_now(loop);
    ev_timer_start(loop, t, at_ms > now_ms ? at_ms - now_ms : 0, 0);
}

static void user_on_timer(struct ev_loop *loop, struct ev_timer *t)
{
    struct ho_user *u = t->data;
    /* Early only if ev and clock_now_ns() ever read different clocks. */
    if (clock_now_ns() < u->intended_ns)
        timer_at(loop, t, u->intended_ns);
    else
        user_run(u);
}

/* Applies the request's extractions to an OK answer; false if one failed. */
static bool user_extract(struct ho_user *u, const struct http_resp *resp)
{
    const struct scn_request *r = user_req(u);
    for (unsigned i = 0; i < r->nextract; i++) {
        const struct scn_extract *ex = &r->extract[i];
        const char *v;
        size_t vl;
        if (resp->body_len > resp->body_kept ||
            scn_path_eval(&ex->path, resp->body, resp->body_kept, ex->pick, &u->th->rng, &v,
                          &vl) != 1)
            return false;
        mem_free(u->vals[ex->var]);
        u->vals[ex->var] = mem_strndup(v, vl);
    }
    return true;
}

static bool errno_is_generator(int err)
{
    return err == EMFILE || err == ENFILE || err == EADDRNOTAVAIL || err == ENOBUFS ||
           err == ENOMEM;
}

/* Renders the current request into th->head and th->body. Returns 0, or
 * -1 when a variable it needs is unset. */
static int user_render(struct ho_user *u)
{
    struct ho_thread *th = u->th;
    const struct scenario *scn = th->cfg->scn;
    const struct scn_request *r = user_req(u);
    th->head.len = th->body.len = 0;
    scn_buf_add(&th->head, r->method, strlen(r->method));
    scn_buf_add(&th->head, " ", 1);
    if (scn_render(&r->path, u->vals, &th->rng, &th->head))
        return -1;
    if (r->has_body && scn_render(&r->body, u->vals, &th->rng, &th->body))
        return -1;
    char line[128];
    int n = snprintf(line, sizeof line, " HTTP/1.1\r\nHost: %s%s%s:%d\r\n",
                     strchr(th->cfg->host, ':') ? "[" : "", th->cfg->host,
                     strchr(th->cfg->host, ':') ? "]" : "", th->cfg->port);
    scn_buf_add(&th->head, line, (size_t)n);
    if (scn->headers)
        scn_buf_add(&th->head, scn->headers, strlen(scn->headers));
    if (r->has_body) {
        n = snprintf(line, sizeof line, "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                     th->body.len);
        scn_buf_add(&th->head, line, (size_t)n);
    }
    scn_buf_add(&th->head, "\r\n", 2);
    return 0;
}

/* ---- connections ------------------------------------------------------------ */

/* A user's request goes out on a connection it holds: its own (kept
 * alive from request to request), or with --share-connections one of its
 * thread's pool, held from the request's start to its end; a user that
 * finds every pooled connection busy waits in line, its waiting counted in
 * the response time like any other delay. */

static void conn_on_connected(void *ctx, struct http_conn *c, int err);
static void conn_on_done(void *ctx, struct http_conn *c, void *req_ctx, enum http_outcome outcome,
                         const struct http_resp *resp, int code);

static void conn_close(struct ho_conn *k)
{
    if (k->c)
        http_conn_close(k->c);
    k->c = NULL;
}

/* Writes u's current request on its open connection. It is rendered again
 * here: while u was connecting or waiting, others used the thread's
 * buffers (rendering gives the same text, but a fresh ${uuid}). false if
 * the request ended at once (recorded). */
static bool conn_send(struct ho_user *u)
{
    struct ho_thread *th = u->th;
    user_render(u);
    if (http_conn_request(u->conn->c, th->head.data, th->head.len, th->body.data, th->body.len,
                          u) == 0)
        return true;
    user_record(u, false, HO_ERR_CLOSED, 0);
    conn_close(u->conn);
    return false;
}

/* Sends u's current request on the connection it holds, connecting first
 * if that is not open. false if the request ended at once (recorded). */
static bool conn_start(struct ho_user *u)
{
    struct ho_conn *k = u->conn;
    struct ho_thread *th = u->th;
    if (k->c && http_conn_is_open(k->c))
        return conn_send(u);
    conn_close(k);
    struct http_conn_opts o = {
        .host = th->cfg->host,
        .port = th->cfg->port,
        .body_keep = th->cfg->keep_bodies ? HO_BODY_KEEP : 0,
        .connect_timeout_ms = th->cfg->connect_timeout_ms,
        .timeout_ms = th->cfg->request_timeout_ms,
        .trace = trace_http(th->cfg->trace),
    };
    struct http_events ev = {.connected = conn_on_connected, .done = conn_on_done, .ctx = k};
    int err = 0;
    k->c = http_conn_connect(th->loop, &o, &ev, &err);
    if (!k->c) {
        user_record(u, false, errno_is_generator(err) ? HO_ERR_GEN_FDS : HO_ERR_CONNECT, 0);
        return false;
    }
    return true;
}

/* A connection for u's request: its own, or an idle pooled one (an open
 * one first), or NULL when u must wait in line. */
static struct ho_conn *conn_acquire(struct ho_user *u)
{
    struct ho_thread *th = u->th;
    if (!th->pool) {
        u->own.user = u;
        return u->conn = &u->own;
    }
    struct ho_conn *idle = NULL;
    for (unsigned i = 0; i < th->cfg->share_connections; i++) {
        struct ho_conn *k = &th->pool[i];
        if (!k->user && (!idle || (k->c && http_conn_is_open(k->c)))) {
            idle = k;
            if (k->c && http_conn_is_open(k->c))
                break;
        }
    }
    if (!idle) {
        u->wait_prev = th->wait_tail;
        *(th->wait_tail ? &th->wait_tail->wait_next : &th->wait_head) = u;
        th->wait_tail = u;
        u->waiting = true;
        return NULL;
    }
    idle->user = u;
    return u->conn = idle;
}

static void wait_remove(struct ho_user *u)
{
    struct ho_thread *th = u->th;
    *(u->wait_prev ? &u->wait_prev->wait_next : &th->wait_head) = u->wait_next;
    *(u->wait_next ? &u->wait_next->wait_prev : &th->wait_tail) = u->wait_prev;
    u->wait_prev = u->wait_next = NULL;
    u->waiting = false;
}

/* Ends u's hold on its connection: a pooled one goes to the users in line,
 * the first whose request does not end at once keeping it. Those that end
 * at once go on from the loop, so that no user runs inside another's
 * callback. */
static void conn_release(struct ho_user *u)
{
    struct ho_conn *k = u->conn;
    if (k == &u->own)
        return;
    struct ho_thread *th = u->th;
    u->conn = NULL;
    k->user = NULL;
    while (th->wait_head) {
        struct ho_user *w = th->wait_head;
        wait_remove(w);
        k->user = w;
        w->conn = k;
        if (conn_start(w))
            return;
        k->user = NULL;
        w->conn = NULL;
        ev_timer_start(th->loop, &w->timer, 0, 0);
    }
}

static void conn_on_connected(void *ctx, struct http_conn *c, int err)
{
    struct ho_conn *k = ctx;
    struct ho_user *u = k->user;
    if (!err && conn_send(u))
        return;
    if (err) {
        user_record(u, false, errno_is_generator(err) ? HO_ERR_GEN_FDS : HO_ERR_CONNECT, 0);
        conn_close(k);
    }
    conn_release(u);
    user_run(u);
}

static void conn_on_done(void *ctx, struct http_conn *c, void *req_ctx, enum http_outcome outcome,
                         const struct http_resp *resp, int code)
{
    struct ho_conn *k = ctx;
    struct ho_user *u = req_ctx;
    if (outcome == HTTP_DONE) {
        const struct scn_request *r = user_req(u);
        if (!scn_status_ok(r, resp->status))
            user_record(u, false, HO_ERR_STATUS, resp->status);
        else if (!user_extract(u, resp))
            user_record(u, false, HO_ERR_CHECK, resp->status);
        else
            user_record(u, true, HO_ERR_COUNT, resp->status);
    } else {
        user_record(u, false,
                    outcome == HTTP_E_TIMEOUT    ? HO_ERR_TIMEOUT
                    : outcome == HTTP_E_PROTOCOL ? HO_ERR_PROTOCOL
                                                 : HO_ERR_CLOSED,
                    0);
        conn_close(k);
    }
    conn_release(u);
    user_run(u);
}

/* Starts the current request step; false if it ended at once (recorded). */
static bool user_request(struct ho_user *u)
{
    struct ho_thread *th = u->th;
    th->tot.requests++;
    th_sec(th)->sent++;
    u->level = th_level(th, u->intended_ns);
    pthread_mutex_lock(&th->lock);
    th->levels[u->level].sent++;
    pthread_mutex_unlock(&th->lock);
    if (user_render(u) < 0) {
        user_record(u, false, HO_ERR_GEN_VAR, 0);
        return false;
    }
    if (!conn_acquire(u))
        return true; /* in line: conn_release starts it */
    if (conn_start(u))
        return true;
    conn_release(u);
    return false;
}

static void user_run(struct ho_user *u)
{
    const struct scenario *scn = u->th->cfg->scn;
    while (u->step < scn->nsteps) {
        const struct scn_step *st = &scn->steps[u->step];
        if (st->kind == SCN_EXIT_IF_FAILED) {
            if (u->failed)
                break;
            u->step++;
        } else if (st->kind == SCN_PAUSE) {
            double s = st->pause_min + (st->pause_max - st->pause_min) * inj_rand_unit(&u->th->rng);
            uint64_t ns = (uint64_t)(s / u->th->cfg->time_scale * 1e9);
            u->step++;
            u->intended_ns = ms_ceil_ns(u->intended_ns + ns);
            timer_at(u->th->loop, &u->timer, u->intended_ns);
            return;
        } else if (user_request(u)) {
            return;
        }
    }
    user_end(u);
}

static void user_start(struct ho_thread *th, uint64_t intended_ns)
{
    struct ho_user *u = mem_calloc(1, sizeof *u);
    if (scn_feed(th->cfg->scn, u->vals, &th->rng) < 0) {
        mem_free(u); /* a queue feeder ran dry: no user starts any more */
        th->injecting = false;
        return;
    }
    u->th = th;
    u->intended_ns = intended_ns;
    ev_timer_init(&u->timer, user_on_timer, u);
    u->next = th->users;
    if (th->users)
        th->users->prev = u;
    th->users = u;
    th->alive++;
    th->tot.users_started++;
    th_sec(th)->started++;
    pthread_mutex_lock(&th->lock);
    th->levels[th_level(th, intended_ns)].started++;
    pthread_mutex_unlock(&th->lock);
    user_run(u);
}

/* ---- threads ----------------------------------------------------------- */

/* Our share of the open profile's arrivals: of the whole profile's, every
 * shard_count-th one from our shard's index (so that the shards' arrivals
 * together are exactly an unsharded run's), and of those every threads-th
 * one, up to the profile's end (which --until-saturated may bring
 * forward). */
static void th_next_arrival(struct ho_thread *th)
{
    double t;
    th->next_t = -1;
    while (th->injecting && inj_gen_next(&th->gen, &t) && t < cfg_cut_s(th->cfg)) {
        uint64_t k = th->next_k++;
        unsigned shards = th->cfg->shard_count;
        if (k % shards == th->cfg->shard_index && k / shards % th->cfg->threads == th->index) {
            th->next_t = t;
            return;
        }
    }
    th->injecting = false;
}

/* When our next arrival is due, on the timers' grid. */
static uint64_t th_arrival_ns(const struct ho_thread *th)
{
    return ms_ceil_ns(th->t0_ns + (uint64_t)(th->next_t * 1e9));
}

static void th_schedule_arrival(struct ho_thread *th)
{
    if (th->next_t >= 0)
        timer_at(th->loop, &th->arrival, th_arrival_ns(th));
}

static void th_on_arrival(struct ev_loop *loop, struct ev_timer *t)
{
    struct ho_thread *th = t->data;
    uint64_t now = clock_now_ns();
    /* Everyone due by now starts, at the intended time each. */
    while (th->next_t >= 0 && th_arrival_ns(th) <= now) {
        if (th->next_t >= cfg_cut_s(th->cfg)) { /* drawn before the profile was stopped */
            th->next_t = -1;
            th->injecting = false;
            break;
        }
        user_start(th, th_arrival_ns(th));
        th_next_arrival(th);
    }
    th_schedule_arrival(th);
}

static void th_on_tick(struct ev_loop *loop, struct ev_timer *t)
{
    struct ho_thread *th = t->data;
    const struct ho_cfg *cfg = th->cfg;
    uint64_t now = clock_now_ns();
    double el = (double)(now - th->t0_ns) / 1e9;
    atomic_store_explicit(&th->answered_seen, th->tot.all.h.count, memory_order_relaxed);
    if (el >= cfg->max_duration_s) {
        while (th->users) /* Gatling's maxDuration: the rest are cut off */
            user_end(th->users);
        th->injecting = false;
    }
    if (th->injecting && !inj_profile_closed(cfg->prof) && th->next_t >= cfg_cut_s(cfg)) {
        /* --until-saturated stopped the profile before our next arrival */
        ev_timer_stop(loop, &th->arrival);
        th->next_t = -1;
        th->injecting = false;
    }
    if (th->injecting && inj_profile_closed(cfg->prof)) {
        double target;
        if (!inj_closed_target(cfg->prof, el, &target)) {
            th->injecting = false;
        } else {
            /* Our shard's share of the target, split as bench_share splits
             * (the shards' shares add up to it), then our thread's, the
             * remainder to the first threads. */
            uint64_t whole = (uint64_t)target, n = cfg->shard_count, i = cfg->shard_index;
            unsigned total = (unsigned)(whole * (i + 1) / n - whole * i / n);
            unsigned share = total / cfg->threads + (th->index < total % cfg->threads);
            while (th->injecting && th->alive < share)
                user_start(th, now);
        }
    }
    if (!th->injecting && th->alive == 0)
        ev_stop(loop);
}

static void *th_main(void *arg)
{
    struct ho_thread *th = arg;
    ev_timer_init(&th->arrival, th_on_arrival, th);
    ev_timer_init(&th->tick, th_on_tick, th);
    th->injecting = true;
    if (!inj_profile_closed(th->cfg->prof)) {
        inj_gen_init(&th->gen, th->cfg->prof, th->cfg->seed);
        th_next_arrival(th);
        th_schedule_arrival(th);
    }
    ev_timer_start(th->loop, &th->tick, 0, HO_TICK_MS);
    if (th->cfg->share_connections)
        th->pool = mem_calloc(th->cfg->share_connections, sizeof *th->pool);
    ev_run(th->loop);
    for (unsigned i = 0; th->pool && i < th->cfg->share_connections; i++)
        conn_close(&th->pool[i]);
    mem_free(th->pool);
    return NULL;
}

/* ---- a run's threads ---------------------------------------------------- */

int ho_thread_start(struct ho_thread *th, const struct ho_cfg *cfg, unsigned index, uint64_t t0_ns)
{
    th->cfg = cfg;
    th->index = index;
    th->t0_ns = t0_ns;
    /* Each shard's threads draw other numbers (pauses, ${uuid}, picks). */
    th->rng = cfg->seed * 1000003u + index + ((uint64_t)cfg->shard_index << 32);
    th->loop = ev_loop_new();
    th->tot.by_name = mem_calloc(cfg->scn->nnames, sizeof *th->tot.by_name);
    th->levels = mem_calloc(cfg->nlevels + 1, sizeof *th->levels);
    pthread_mutex_init(&th->lock, NULL);
    if (pthread_create(&th->tid, NULL, th_main, th) == 0)
        return 0;
    ev_loop_free(th->loop);
    mem_free(th->tot.by_name);
    mem_free(th->levels);
    pthread_mutex_destroy(&th->lock);
    return -1;
}

void ho_thread_free(struct ho_thread *th)
{
    mem_free(th->tot.by_name);
    mem_free(th->levels);
    pthread_mutex_destroy(&th->lock);
    mem_free(th->secs);
    scn_buf_free(&th->head);
    scn_buf_free(&th->body);
    ev_loop_free(th->loop);
}

static void stat_add(struct ho_stat *dst, const struct ho_stat *src)
{
    hist_merge(&dst->h, &src->h);
    dst->ok += src->ok;
    dst->ko += src->ko;
}

void ho_totals_add(struct ho_totals *dst, const struct ho_totals *src, unsigned nnames)
{
    for (unsigned i = 0; i < nnames; i++)
        stat_add(&dst->by_name[i], &src->by_name[i]);
    stat_add(&dst->all, &src->all);
    for (unsigned e = 0; e < HO_ERR_COUNT; e++)
        dst->errs[e] += src->errs[e];
    for (unsigned s = 0; s < 600; s++)
        dst->status_ko[s] += src->status_ko[s];
    dst->requests += src->requests;
    dst->users_started += src->users_started;
    dst->users_done += src->users_done;
}

void ho_level_add(struct ho_level *dst, const struct ho_level *src)
{
    stat_add(&dst->st, &src->st);
    dst->started += src->started;
    dst->sent += src->sent;
    dst->answered += src->answered;
    dst->ko_gen += src->ko_gen;
}

void ho_levels_merge(struct ho_level *m, struct ho_thread *ths, unsigned n, unsigned i)
{
    memset(m, 0, sizeof *m);
    for (unsigned t = 0; t < n; t++) {
        pthread_mutex_lock(&ths[t].lock);
        ho_level_add(m, &ths[t].levels[i]);
        pthread_mutex_unlock(&ths[t].lock);
    }
}

void ho_cfg_levels(struct ho_cfg *cfg, const struct inj_profile *prof)
{
    struct inj_segment *seg = mem_calloc(INJ_MAX_SEGMENTS, sizeof *seg);
    unsigned n = inj_profile_segments(prof, seg);
    cfg->nlevels = 0;
    cfg->profile_end_s = 0;
    for (unsigned i = 0; i < n; i++) {
        if (seg[i].s.dur_s > 0) {
            cfg->levels[cfg->nlevels++] = seg[i];
            cfg->profile_end_s = seg[i].start_s + seg[i].s.dur_s;
        }
    }
    mem_free(seg);
}
