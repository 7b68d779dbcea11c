/* http_open.c - the http-open engine: virtual users as small state machines
 * on per-thread event loops, the statistics they record, the per-second
 * series, the saturation point, the report (terminal, JSON through the
 * shared result model) and the CLI.
 *
 * A user runs its steps from user_run() until it must wait: for a pause
 * (a timer), a connect or an answer (http_client callbacks). Latency is
 * measured from the request's intended start: the arrival time the
 * profile gave the user for its first request, the end of the pause before
 * it for the others. A generator that falls behind its timers therefore
 * adds its lateness to the latencies instead of hiding it (coordinated
 * omission, docs/http_open.md).
 */
#include "load/http/http_open.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/ev.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/net.h"
#include "core/textfile.h"
#include "http/http_client.h"
#include "load/bench.h"
#include "load/http/inject.h"
#include "load/http/scenario.h"
#include "load/pg_probe.h"
#include "load/probe.h"
#include "report/hist.h"
#include "report/texttab.h"

static const char usage[] =
    "usage: shootout bench http-open [options]\n"
    "\n"
    "A Gatling-style HTTP load test. Virtual users walk a scenario (by default\n"
    "the a2b journey: 14 requests with pauses, ids picked from earlier answers),\n"
    "each over its own keep-alive HTTP/1.1 connection (or a shared pool), started\n"
    "by an injection profile: open (users arrive at a rate, whatever the server\n"
    "does) or closed (a number of users alive at once). See docs/http_open.md.\n"
    "\n"
    "Reported: per request name and overall, count, OK/KO, min/mean/max and\n"
    "p50/p75/p95/p99 response time, requests/s; errors by class (HTTP status,\n"
    "timeout, connect, premature close, protocol, check) with the generator's\n"
    "own failures (out of descriptors or ports, unset variables) counted apart;\n"
    "a per-second series (active users, requests/s, responses/s OK and KO, p95)\n"
    "and the saturation point read from it; statistics per load level (each\n"
    "step, and each level and ramp of a staircase); with --server-pid the\n"
    "server's CPU %, peak RSS and threads, with --pg-sample the CPU % and memory\n"
    "of the PostgreSQL server behind it.\n"
    "\n"
    "options:\n"
    "  --target URL          server, http://HOST:PORT (default http://127.0.0.1:8080)\n"
    "  --scenario a2b|FILE   the built-in a2b journey (default) or a scenario file\n"
    "  --inject STEP         an injection step; repeat for a sequence. Open steps:\n"
    "                          nothing-for D | at-once N | ramp-users N D |\n"
    "                          constant-users-per-sec R D [randomized] |\n"
    "                          ramp-users-per-sec R1 R2 D [randomized] |\n"
    "                          increment-users-per-sec INC LEVELS D [ramp D2]\n"
    "                            [from R0] [randomized]  (a staircase: LEVELS\n"
    "                            levels of D at R0, R0+INC, ... users/s, or INC,\n"
    "                            2*INC, ... without from; ramps of D2 between)\n"
    "                        closed steps (never mixed with open ones):\n"
    "                          constant-concurrent-users N D |\n"
    "                          ramp-concurrent-users N1 N2 D |\n"
    "                          increment-concurrent-users INC LEVELS D [ramp D2]\n"
    "                            [from N0]\n"
    "                        D is a duration with unit: 500ms, 10s, 2m, 1h\n"
    "                        (default: the reference's\n"
    "                        'ramp-users-per-sec 100 200 1000s randomized')\n"
    "  --time-scale F        divide every duration and pause by F (> 0) for a\n"
    "                        short run of the same rate and shape (default 1)\n"
    "  --max-duration D      stop users still running after D (default 2000s,\n"
    "                        divided by --time-scale)\n"
    "  --threads T           event-loop threads (default 1)\n"
    "  --request-timeout D   fail a request not answered within D (default 60s)\n"
    "  --connect-timeout D   fail a connect not done within D (default 10s)\n"
    "  --saturation-window S the saturation rule's window in seconds (default 5):\n"
    "                        the server counts as saturated once it falls behind\n"
    "                        its demand over two such windows in a row\n"
    "  --until-saturated     open profiles: stop arriving users at the end of the\n"
    "                        level after which the level rule finds the server\n"
    "                        saturated (answers behind arrivals and p95 doubled,\n"
    "                        or failures), so that a staircase climbs only as\n"
    "                        far as the server's capacity\n"
    "  --seed S              seed of arrivals, pauses, feeders and picks (default 1)\n"
    "  --share-connections N users share a pool of N keep-alive connections per\n"
    "                        thread (Gatling's shareConnections) instead of one\n"
    "                        each; a request waits in line for a free one, and\n"
    "                        its response time counts the wait\n"
    "  --pg-sample PID|URI   also sample the PostgreSQL server whose postmaster\n"
    "                        has pid PID, or that the libpq connection string\n"
    "                        or URI reaches (it must run on this machine): the\n"
    "                        postmaster and its children, exited ones included\n"
    BENCH_HELP_RUNS BENCH_HELP_JSON BENCH_HELP_SERVER
    "\n"
    "Exit codes: 0 the test ran (KOs are results, not failures), 1 it could not\n"
    "run (nothing answered at all) or a queue feeder ran dry, 2 usage error.\n";

#define HO_DEFAULT_PORT 8080
#define HO_TICK_MS 10
#define HO_BODY_KEEP (1u << 20)
#define HO_SAMPLE_MS 200
#define HO_MAX_SHARED 100000
/* Per-second histograms: 8 buckets per power of two of microseconds. */
#define SEC_BUCKETS 304

/* Error classes. The generator's own are apart from the server's. */
enum ho_err {
    ERR_STATUS,   /* an unexpected HTTP status */
    ERR_CHECK,    /* expected status, but an extraction found nothing or the body is not JSON */
    ERR_TIMEOUT,  /* no answer within --request-timeout */
    ERR_CONNECT,  /* connect refused, unreachable or timed out */
    ERR_CLOSED,   /* premature close: the connection ended before the answer */
    ERR_PROTOCOL, /* an answer that is not HTTP/1.1, or a body that fails to decode */
    ERR_GEN_FDS,  /* generator: out of descriptors, ports or buffers (EMFILE...) */
    ERR_GEN_VAR,  /* generator: a variable the request needs was never set */
    ERR_COUNT
};

static const char *const err_names[ERR_COUNT] = {
    "status", "check", "timeout", "connect", "closed", "protocol", "generator_fds",
    "generator_unset_variable",
};

static bool err_is_generator(enum ho_err e) { return e == ERR_GEN_FDS || e == ERR_GEN_VAR; }

struct ho_stat {
    struct hist h; /* nanoseconds, OK and KO alike, as Gatling's "total" */
    uint64_t ok, ko;
};

struct ho_sec {
    uint32_t started, ended, sent, ok, ko, ko_gen; /* ko includes ko_gen */
    uint32_t lat[SEC_BUCKETS]; /* OK responses, by end second */
};

/* A load level: a profile segment of positive length, or (the last) the
 * time after the profile. Requests belong to the level of their intended
 * send time, whenever they end; answers counts those that ended in it. */
struct ho_level {
    struct ho_stat st;
    uint64_t started, sent, answered, ko_gen; /* ko_gen: of st.ko, the generator's own */
};

struct ho_cfg {
    const struct scenario *scn;
    const struct inj_profile *prof;
    const char *host;
    int port;
    unsigned threads;
    double time_scale, max_duration_s;
    unsigned request_timeout_ms, connect_timeout_ms;
    uint64_t seed;
    unsigned share_connections; /* per thread; 0: a connection per user */
    bool keep_bodies;           /* some request extracts from its answer */
    /* The profile's segments of positive length, in time order; the run's
     * levels are these and the time after profile_end_s. */
    struct inj_segment levels[INJ_MAX_SEGMENTS];
    unsigned nlevels;
    double profile_end_s;
    bool until_saturated;
    /* The levels the run keeps: nlevels, or fewer once --until-saturated
     * has stopped the profile at the end of one (the time after the
     * profile then starts there). Set by the main thread while the loops
     * read it; it only ever shrinks, to a boundary still ahead of them. */
    _Atomic unsigned *kept;
};

struct ho_user;

/* A connection users send on (see "connections" below). */
struct ho_conn {
    struct http_conn *c;
    struct ho_user *user; /* whose request it carries or connects for; NULL: idle */
};

struct ho_thread {
    const struct ho_cfg *cfg;
    unsigned index;
    pthread_t tid;
    bool joined;
    struct ev_loop *loop;
    struct ev_timer arrival, tick;
    struct inj_gen gen;
    uint64_t next_k; /* arrivals seen by the generator */
    double next_t;   /* next arrival of ours, seconds; < 0 when none */
    bool injecting;
    uint64_t t0_ns;
    uint64_t rng;
    struct ho_user *users; /* alive, linked */
    unsigned alive;
    struct ho_conn *pool;                /* --share-connections, else NULL */
    struct ho_user *wait_head, *wait_tail; /* users in line for the pool */
    /* Results, merged after the run. */
    struct ho_stat *by_name; /* scenario names */
    struct ho_stat all;
    uint64_t errs[ERR_COUNT];
    uint64_t status_ko[600];
    uint64_t requests, users_started, users_done;
    struct ho_sec *secs;
    unsigned nsecs;
    struct ho_level *levels; /* cfg->nlevels + 1 */
    /* Guards levels, which the main thread reads during the run
     * (--until-saturated); everything else is the thread's alone. */
    pthread_mutex_t lock;
    struct scn_buf head, body;
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

/* ---- per-second series ---------------------------------------------------- */

static unsigned sec_bucket(uint64_t us)
{
    if (us < 16)
        return (unsigned)us;
    unsigned msb = 63u - (unsigned)__builtin_clzll(us);
    unsigned b = 16 + (msb - 4) * 8 + (unsigned)((us >> (msb - 3)) & 7);
    return b < SEC_BUCKETS ? b : SEC_BUCKETS - 1;
}

/* The midpoint of a bucket, in microseconds. */
static double sec_bucket_mid(unsigned b)
{
    if (b < 16)
        return b;
    unsigned msb = (b - 16) / 8 + 4, sub = (b - 16) % 8;
    double low = (double)((8u + sub) * (UINT64_C(1) << (msb - 3)));
    return low + (double)(UINT64_C(1) << (msb - 3)) / 2;
}

static double sec_p95_ms(const uint32_t *lat)
{
    uint64_t n = 0;
    for (unsigned b = 0; b < SEC_BUCKETS; b++)
        n += lat[b];
    if (!n)
        return 0;
    uint64_t rank = (uint64_t)ceil(0.95 * (double)n), seen = 0;
    for (unsigned b = 0; b < SEC_BUCKETS; b++) {
        seen += lat[b];
        if (seen >= rank)
            return sec_bucket_mid(b) / 1e3;
    }
    return 0;
}

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

/* When the profile ends: at its last segment's end, or at the cut. */
static double cfg_end_s(const struct ho_cfg *cfg)
{
    return fmin(cfg->profile_end_s, cfg_cut_s(cfg));
}

/* The level of the instant t (seconds of the run): the last segment
 * starting at or before it, or (cfg->nlevels) the time after the profile. */
static unsigned cfg_level_at(const struct ho_cfg *cfg, double t)
{
    if (t >= cfg_end_s(cfg))
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
    return cfg_level_at(th->cfg, t);
}

/* The saturation rule's numbers; docs/http_open.md (Metrics) says why. */
#define SAT_SHORTFALL 0.05   /* of the demand (backlog) or of the answers (failures) */
#define SAT_MIN_REQUESTS 10  /* and at least this many requests */
#define SAT_LATENCY_RATIO 2  /* p95 at least doubled, */
#define SAT_LATENCY_MS 20    /* and rose by at least this */

/* Sums over a span of seconds of the series. */
struct sat_sums {
    double sent, responses, ok, ko, ok_p95; /* ok_p95: p95s weighted by OK answers */
};

static struct sat_sums sat_span(const struct sat_sums *pre, unsigned from, unsigned to)
{
    const struct sat_sums *a = &pre[from], *b = &pre[to];
    return (struct sat_sums){b->sent - a->sent, b->responses - a->responses, b->ok - a->ok,
                             b->ko - a->ko, b->ok_p95 - a->ok_p95};
}

static bool sat_excess(double excess, double of)
{
    return excess >= fmax(SAT_SHORTFALL * of, SAT_MIN_REQUESTS);
}

/* The share of KO in the server's answers of x. */
static double sat_ko_share(const struct sat_sums *x)
{
    return x->ok + x->ko > 0 ? x->ko / (x->ok + x->ko) : 0;
}

/* The backlog of unanswered requests grew in both windows, and the
 * answers of the second took twice as long as before s and 20 ms more
 * (a window without any OK answer, while its backlog grows, counts as
 * longer than any). Needs OK answers before s to compare with. */
static bool sat_backlog(const struct sat_sums *before, const struct sat_sums *w1,
                        const struct sat_sums *w2)
{
    if (!sat_excess(w1->sent - w1->responses, w1->sent) ||
        !sat_excess(w2->sent - w2->responses, w2->sent) || before->ok <= 0)
        return false;
    if (w2->ok <= 0)
        return true;
    double p0 = before->ok_p95 / before->ok, p = w2->ok_p95 / w2->ok;
    return p >= fmax(SAT_LATENCY_RATIO * p0, p0 + SAT_LATENCY_MS);
}

/* The server's KO answers in w exceed the share they had before s. */
static bool sat_failures(const struct sat_sums *before, const struct sat_sums *w)
{
    double answered = w->ok + w->ko;
    return sat_excess(w->ko - sat_ko_share(before) * answered, answered);
}

/* The first second of the window from t where the sign shows by itself
 * (the backlog grew, or KO passed their share before t, by 5 % of that
 * second's requests): a window can hold enough of a sudden change while it
 * starts up to w - 1 seconds before it. There is one, since the window as
 * a whole shows it. */
static unsigned sat_onset(const struct sat_sums *pre, unsigned t, unsigned w,
                          enum ho_sat_cause why)
{
    double share = sat_ko_share(&pre[t]);
    for (unsigned k = t; k + 1 < t + w; k++) {
        struct sat_sums x = sat_span(pre, k, k + 1);
        double excess = why == HO_SAT_BACKLOG ? x.sent - x.responses : x.ko - share * (x.ok + x.ko);
        double of = why == HO_SAT_BACKLOG ? x.sent : x.ok + x.ko;
        if (excess > 0 && excess >= SAT_SHORTFALL * of)
            return k;
    }
    return t + w - 1;
}

int ho_saturation(const struct result_point *s, unsigned n, unsigned w, enum ho_sat_cause *cause)
{
    enum ho_sat_cause why = HO_SAT_NONE;
    int found = -1;
    if (w > 0 && n >= 3 * w) {
        /* Prefix sums: pre[i] sums seconds 0 .. i-1. */
        struct sat_sums *pre = mem_calloc(n + 1, sizeof *pre);
        for (unsigned i = 0; i < n; i++)
            pre[i + 1] = (struct sat_sums){
                pre[i].sent + s[i].sent, pre[i].responses + s[i].responses, pre[i].ok + s[i].ok,
                pre[i].ko + s[i].ko_server, pre[i].ok_p95 + s[i].ok * s[i].p95_ms};
        /* The baseline is everything before t, at least w seconds of it. */
        for (unsigned t = w; t + 2 * w <= n && found < 0; t++) {
            struct sat_sums before = sat_span(pre, 0, t), w1 = sat_span(pre, t, t + w),
                            w2 = sat_span(pre, t + w, t + 2 * w);
            if (sat_backlog(&before, &w1, &w2))
                why = HO_SAT_BACKLOG;
            else if (sat_failures(&before, &w1) && sat_failures(&before, &w2))
                why = HO_SAT_FAILURES;
            if (why != HO_SAT_NONE)
                found = (int)sat_onset(pre, t, w, why);
        }
        mem_free(pre);
    }
    if (cause)
        *cause = why;
    return found;
}

/* A level the level rule judges: constant open load. */
static bool level_judged(const struct http_open_level *l)
{
    return l->step && !l->closed && l->load_from == l->load_to && l->requests > 0;
}

int ho_level_saturation(const struct http_open_level *levels, unsigned n, struct ho_level_verdict *v)
{
    *v = (struct ho_level_verdict){.level = -1, .cause = HO_SAT_NONE};
    /* B so far: requests, p95 weighted by them, the server's KO and answers. */
    double b_req = 0, b_p95 = 0, b_ko = 0, b_ans = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct http_open_level *l = &levels[i];
        if (!level_judged(l))
            continue;
        double ko = l->ko - l->ko_generator, answered = l->ok + ko;
        if (b_req > 0) {
            double base = b_p95 / b_req, share = b_ans > 0 ? b_ko / b_ans : 0;
            double behind = l->requests - l->responses_per_s * l->dur_s;
            bool backlog = sat_excess(behind, l->requests) &&
                           l->p95_ms >= fmax(SAT_LATENCY_RATIO * base, base + SAT_LATENCY_MS);
            bool failures = sat_excess(ko - share * answered, answered);
            if (backlog || failures) {
                *v = (struct ho_level_verdict){
                    .level = (int)i,
                    .cause = backlog ? HO_SAT_BACKLOG : HO_SAT_FAILURES,
                    .behind_pct = 100 * behind / l->requests,
                    .p95_ms = l->p95_ms,
                    .base_p95_ms = base,
                    .ko_pct = answered > 0 ? 100 * ko / answered : 0,
                    .base_ko_pct = 100 * share,
                };
                break;
            }
        }
        b_req += l->requests;
        b_p95 += l->p95_ms * l->requests;
        b_ko += ko;
        b_ans += answered;
    }
    return v->level;
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
    th->users_done++;
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
    struct ho_stat *st = &th->by_name[r->name];
    struct ho_level *lv = &th->levels[u->level];
    hist_record(&st->h, lat);
    hist_record(&th->all.h, lat);
    pthread_mutex_lock(&th->lock);
    hist_record(&lv->st.h, lat);
    lv->st.ok += ok;
    lv->st.ko += !ok;
    lv->ko_gen += !ok && err_is_generator(err);
    th->levels[th_level(th, t)].answered++;
    pthread_mutex_unlock(&th->lock);
    struct ho_sec *sec = th_sec(th);
    if (ok) {
        st->ok++;
        th->all.ok++;
        sec->ok++;
        sec->lat[sec_bucket(lat / 1000)]++;
    } else {
        st->ko++;
        th->all.ko++;
        sec->ko++;
        sec->ko_gen += err_is_generator(err);
        th->errs[err]++;
        if (err == ERR_STATUS && status >= 100 && status < 600)
            th->status_ko[status]++;
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
    user_record(u, false, ERR_CLOSED, 0);
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
    };
    struct http_events ev = {.connected = conn_on_connected, .done = conn_on_done, .ctx = k};
    int err = 0;
    k->c = http_conn_connect(th->loop, &o, &ev, &err);
    if (!k->c) {
        user_record(u, false, errno_is_generator(err) ? ERR_GEN_FDS : ERR_CONNECT, 0);
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
        user_record(u, false, errno_is_generator(err) ? ERR_GEN_FDS : ERR_CONNECT, 0);
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
            user_record(u, false, ERR_STATUS, resp->status);
        else if (!user_extract(u, resp))
            user_record(u, false, ERR_CHECK, resp->status);
        else
            user_record(u, true, ERR_COUNT, resp->status);
    } else {
        user_record(u, false,
                    outcome == HTTP_E_TIMEOUT    ? ERR_TIMEOUT
                    : outcome == HTTP_E_PROTOCOL ? ERR_PROTOCOL
                                                 : ERR_CLOSED,
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
    th->requests++;
    th_sec(th)->sent++;
    u->level = th_level(th, u->intended_ns);
    pthread_mutex_lock(&th->lock);
    th->levels[u->level].sent++;
    pthread_mutex_unlock(&th->lock);
    if (user_render(u) < 0) {
        user_record(u, false, ERR_GEN_VAR, 0);
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
    th->users_started++;
    th_sec(th)->started++;
    pthread_mutex_lock(&th->lock);
    th->levels[th_level(th, intended_ns)].started++;
    pthread_mutex_unlock(&th->lock);
    user_run(u);
}

/* ---- threads ----------------------------------------------------------- */

/* Our share of the open profile's arrivals: every threads-th one, up to
 * the profile's end (which --until-saturated may bring forward). */
static void th_next_arrival(struct ho_thread *th)
{
    double t;
    th->next_t = -1;
    while (th->injecting && inj_gen_next(&th->gen, &t) && t < cfg_cut_s(th->cfg)) {
        if (th->next_k++ % th->cfg->threads == th->index) {
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
            /* Our share of the target, the remainder to the first threads. */
            unsigned total = (unsigned)target;
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

/* ---- the run ------------------------------------------------------------ */

/* The merged results of one run, kept for the JSON writer. */
struct ho_report {
    const struct scenario *scn;
    struct ho_stat *by_name;
    struct ho_stat all;
    uint64_t errs[ERR_COUNT];
    uint64_t status_ko[600];
    uint64_t requests, users_started, users_done;
    struct ho_sec *secs;
    struct result_point *points;
    unsigned nsecs;
    int saturation_s; /* -1: none */
    enum ho_sat_cause saturation_cause;
    unsigned saturation_level;        /* index into levels */
    double saturation_load;           /* the profile's load in the middle of that second */
    double saturation_rps, saturation_ok_ps; /* sent and OK per second in the window from it */
    unsigned sat_window;
    bool closed; /* the profile's model: its load is in concurrent users */
    double duration_s;
    struct http_open_level *levels; /* the time after the profile last */
    unsigned nlevels;
    struct ho_level_verdict level_sat; /* the level rule on levels */
    bool until_saturated;
    int stopped_after; /* the level --until-saturated stopped after, -1: none */
    double server_cpu_pct, server_rss_kb, server_threads, pg_cpu_pct, pg_rss_kb;
    int pg_postmaster;
    unsigned pg_procs;
    bool pg;
    struct ho_report *next; /* every run's, freed together */
};

struct ho_args {
    struct ho_cfg cfg;
    int pg_postmaster; /* 0: no PostgreSQL to sample */
    unsigned sat_window;
    struct ho_report *reports;
};

#define HO_REFERENCE_INJECT "ramp-users-per-sec 100 200 1000s randomized"

/* The figures of level i of the merged lv (i = cfg->nlevels: after the
 * profile) in a run of run_s seconds. */
static void level_figures(const struct ho_cfg *cfg, const struct ho_level *lv, unsigned i,
                          double run_s, struct http_open_level *out)
{
    double end = cfg_end_s(cfg);
    *out = (struct http_open_level){.kind = "after", .start_s = end, .dur_s = fmax(0, run_s - end)};
    if (i < cfg->nlevels) {
        const struct inj_segment *g = &cfg->levels[i];
        out->kind = inj_kind_name(g->s.kind);
        out->step = g->step + 1;
        out->stair = g->stair;
        out->closed = inj_step_closed(&g->s);
        out->start_s = g->start_s;
        /* the part the run lasted: it ends early when no arrival is left */
        out->dur_s = fmin(g->s.dur_s, fmax(0, run_s - g->start_s));
        /* ramp-users spreads its users evenly: a constant rate */
        out->load_from = g->s.kind == INJ_RAMP_USERS ? g->s.n / g->s.dur_s : g->s.r1;
        out->load_to = g->s.kind == INJ_RAMP_USERS ? out->load_from : g->s.r2;
    }
    const struct hist *h = &lv->st.h;
    out->users_started = (double)lv->started;
    out->requests = (double)lv->sent;
    out->ok = (double)lv->st.ok;
    out->ko = (double)lv->st.ko;
    out->ko_generator = (double)lv->ko_gen;
    out->rps = out->dur_s > 0 ? (double)lv->sent / out->dur_s : 0;
    out->responses_per_s = out->dur_s > 0 ? (double)lv->answered / out->dur_s : 0;
    out->mean_ms = hist_mean(h) / 1e6;
    out->p50_ms = (double)hist_percentile(h, 50) / 1e6;
    out->p95_ms = (double)hist_percentile(h, 95) / 1e6;
    out->p99_ms = (double)hist_percentile(h, 99) / 1e6;
}

/* Level i of the n threads' levels, merged into m, as they are now. */
static void levels_merge(struct ho_level *m, struct ho_thread *ths, unsigned n, unsigned i)
{
    memset(m, 0, sizeof *m);
    for (unsigned t = 0; t < n; t++) {
        pthread_mutex_lock(&ths[t].lock);
        const struct ho_level *l = &ths[t].levels[i];
        hist_merge(&m->st.h, &l->st.h);
        m->st.ok += l->st.ok;
        m->st.ko += l->st.ko;
        m->started += l->started;
        m->sent += l->sent;
        m->answered += l->answered;
        m->ko_gen += l->ko_gen;
        pthread_mutex_unlock(&ths[t].lock);
    }
}

/* The levels the run kept, then the time after the profile. */
static void report_levels(struct ho_report *rep, const struct ho_cfg *cfg, struct ho_thread *ths,
                          unsigned n)
{
    unsigned kept = atomic_load(cfg->kept);
    rep->nlevels = kept + 1;
    rep->levels = mem_calloc(rep->nlevels, sizeof *rep->levels);
    rep->until_saturated = cfg->until_saturated;
    rep->stopped_after = kept < cfg->nlevels ? (int)kept - 1 : -1;
    struct ho_level *m = mem_calloc(1, sizeof *m);
    for (unsigned i = 0; i < rep->nlevels; i++) {
        unsigned from = i < kept ? i : cfg->nlevels; /* the threads keep "after" last */
        levels_merge(m, ths, n, from);
        level_figures(cfg, m, from, rep->duration_s, &rep->levels[i]);
    }
    mem_free(m);
    ho_level_saturation(rep->levels, rep->nlevels, &rep->level_sat);
}

/* --until-saturated, on the main thread while the loops run: judges each
 * level of constant load once it is over, on the figures so far, and once
 * the level rule finds the server saturated, stops the profile at the next
 * boundary at least HO_CLIMB_MARGIN_S ahead, which no loop has reached.
 * The level's requests still unanswered count as answered now, the least
 * their latency can be, so that a verdict of saturation holds whenever
 * they end; one of no saturation waits until they have all ended, or as
 * long again as the level lasted. *next is the first level not yet
 * judged; m and figs are scratch (figs for INJ_MAX_SEGMENTS levels). */
#define HO_CLIMB_MARGIN_S 0.05

static void climb_check(const struct ho_cfg *cfg, struct ho_thread *ths, unsigned n, double now_s,
                        unsigned *next, struct ho_level *m, struct http_open_level *figs)
{
    unsigned kept = atomic_load(cfg->kept);
    /* The last level kept has nothing after it to leave out. */
    while (*next + 1 < kept) {
        unsigned k = *next;
        const struct inj_segment *g = &cfg->levels[k];
        double end = g->start_s + g->s.dur_s;
        if (end > now_s)
            return;
        for (unsigned i = 0; i < k; i++) {
            levels_merge(m, ths, n, i);
            level_figures(cfg, m, i, now_s, &figs[i]);
        }
        levels_merge(m, ths, n, k);
        uint64_t pending = m->sent - m->st.ok - m->st.ko;
        for (uint64_t p = 0; p < pending; p++)
            hist_record(&m->st.h, (uint64_t)((now_s - end) * 1e9));
        level_figures(cfg, m, k, now_s, &figs[k]);
        if (level_judged(&figs[k])) {
            struct ho_level_verdict v;
            if (ho_level_saturation(figs, k + 1, &v) >= 0) {
                unsigned stop = cfg_level_at(cfg, now_s + HO_CLIMB_MARGIN_S) + 1;
                if (stop < kept)
                    atomic_store(cfg->kept, stop);
                *next = kept;
                return;
            }
            if (pending > 0 && now_s < end + g->s.dur_s)
                return;
        }
        (*next)++;
    }
}

static const char *sat_cause_name(enum ho_sat_cause c)
{
    return c == HO_SAT_BACKLOG ? "backlog" : c == HO_SAT_FAILURES ? "failures" : "none";
}

/* The saturation point of the merged series, and the profile's load and
 * the demand at it. After report_levels. */
static void report_saturation(struct ho_report *rep, const struct ho_cfg *cfg, unsigned w)
{
    rep->sat_window = w;
    rep->closed = inj_profile_closed(cfg->prof);
    rep->saturation_s = ho_saturation(rep->points, rep->nsecs, w, &rep->saturation_cause);
    if (rep->saturation_s < 0)
        return;
    unsigned s = (unsigned)rep->saturation_s;
    double t = s + 0.5;
    unsigned i = cfg_level_at(cfg, t);
    rep->saturation_level = i < rep->nlevels - 1 ? i : rep->nlevels - 1;
    if (i < cfg->nlevels) { /* along a ramp, where t is; 0 after the profile */
        const struct http_open_level *l = &rep->levels[i];
        double f = (t - cfg->levels[i].start_s) / cfg->levels[i].s.dur_s;
        rep->saturation_load = l->load_from + (l->load_to - l->load_from) * f;
    }
    for (unsigned k = s; k < s + w; k++) {
        rep->saturation_rps += rep->points[k].sent / w;
        rep->saturation_ok_ps += rep->points[k].ok / w;
    }
}

static void report_merge(struct ho_report *rep, struct ho_thread *ths, unsigned n)
{
    unsigned names = rep->scn->nnames;
    rep->by_name = mem_calloc(names, sizeof *rep->by_name);
    for (unsigned t = 0; t < n; t++) {
        struct ho_thread *th = &ths[t];
        for (unsigned i = 0; i < names; i++) {
            hist_merge(&rep->by_name[i].h, &th->by_name[i].h);
            rep->by_name[i].ok += th->by_name[i].ok;
            rep->by_name[i].ko += th->by_name[i].ko;
        }
        hist_merge(&rep->all.h, &th->all.h);
        rep->all.ok += th->all.ok;
        rep->all.ko += th->all.ko;
        for (unsigned e = 0; e < ERR_COUNT; e++)
            rep->errs[e] += th->errs[e];
        for (unsigned s = 0; s < 600; s++)
            rep->status_ko[s] += th->status_ko[s];
        rep->requests += th->requests;
        rep->users_started += th->users_started;
        rep->users_done += th->users_done;
        if (th->nsecs > rep->nsecs) {
            rep->secs = mem_realloc(rep->secs, th->nsecs * sizeof *rep->secs);
            memset(rep->secs + rep->nsecs, 0, (th->nsecs - rep->nsecs) * sizeof *rep->secs);
            rep->nsecs = th->nsecs;
        }
        for (unsigned s = 0; s < th->nsecs; s++) {
            struct ho_sec *a = &rep->secs[s], *b = &th->secs[s];
            a->started += b->started;
            a->ended += b->ended;
            a->sent += b->sent;
            a->ok += b->ok;
            a->ko += b->ko;
            a->ko_gen += b->ko_gen;
            for (unsigned k = 0; k < SEC_BUCKETS; k++)
                a->lat[k] += b->lat[k];
        }
    }
    /* The series ends with the run's last second. */
    unsigned last = (unsigned)ceil(rep->duration_s);
    if (last < rep->nsecs)
        rep->nsecs = last;
    rep->points = mem_calloc(rep->nsecs ? rep->nsecs : 1, sizeof *rep->points);
    double active = 0;
    for (unsigned s = 0; s < rep->nsecs; s++) {
        /* Gatling: alive before + started now - ended in the second before. */
        active += (double)rep->secs[s].started - (s ? (double)rep->secs[s - 1].ended : 0);
        rep->points[s].active = active;
        rep->points[s].responses = rep->secs[s].ok + rep->secs[s].ko;
        rep->points[s].p95_ms = sec_p95_ms(rep->secs[s].lat);
        rep->points[s].sent = rep->secs[s].sent;
        rep->points[s].ok = rep->secs[s].ok;
        rep->points[s].ko_server = rep->secs[s].ko - rep->secs[s].ko_gen;
    }
}

static void report_free(struct ho_report *rep)
{
    mem_free(rep->by_name);
    mem_free(rep->secs);
    mem_free(rep->points);
    mem_free(rep->levels);
    mem_free(rep);
}

static void json_stat(struct json *j, const char *name, const struct ho_stat *st, double dur)
{
    json_object_begin(j);
    json_key(j, "name");
    json_string(j, name);
    const struct hist *h = &st->h;
    static const struct {
        const char *key;
        double p;
    } ps[] = {{"p50_ms", 50}, {"p75_ms", 75}, {"p95_ms", 95}, {"p99_ms", 99}};
    json_key(j, "count");
    json_int(j, (int64_t)h->count);
    json_key(j, "ok");
    json_int(j, (int64_t)st->ok);
    json_key(j, "ko");
    json_int(j, (int64_t)st->ko);
    json_key(j, "min_ms");
    json_number(j, h->count ? (double)h->min / 1e6 : 0);
    json_key(j, "mean_ms");
    json_number(j, hist_mean(h) / 1e6);
    json_key(j, "max_ms");
    json_number(j, h->count ? (double)h->max / 1e6 : 0);
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        json_key(j, ps[i].key);
        json_number(j, (double)hist_percentile(h, ps[i].p) / 1e6);
    }
    json_key(j, "rps");
    json_number(j, dur > 0 ? (double)h->count / dur : 0);
    json_object_end(j);
}

static void json_level(struct json *j, const struct http_open_level *l)
{
    json_object_begin(j);
    if (l->step) {
        json_key(j, "step");
        json_int(j, l->step);
        json_key(j, "stair");
        if (l->stair)
            json_int(j, l->stair);
        else
            json_null(j);
        json_key(j, "kind");
        json_string(j, l->kind);
        json_key(j, "load_unit");
        json_string(j, l->closed ? "concurrent users" : "users/s");
        json_kv(j, "load_from", l->load_from);
        json_kv(j, "load_to", l->load_to);
    }
    json_kv(j, "start_s", l->start_s);
    json_kv(j, "duration_s", l->dur_s);
    json_kv(j, "users_started", l->users_started);
    json_kv(j, "requests", l->requests);
    json_kv(j, "ok", l->ok);
    json_kv(j, "ko", l->ko);
    json_kv(j, "ko_generator", l->ko_generator);
    json_kv(j, "rps", l->rps);
    json_kv(j, "responses_per_sec", l->responses_per_s);
    json_kv(j, "mean_ms", l->mean_ms);
    json_kv(j, "p50_ms", l->p50_ms);
    json_kv(j, "p95_ms", l->p95_ms);
    json_kv(j, "p99_ms", l->p99_ms);
    json_object_end(j);
}

static void report_json(struct json *j, const void *arg)
{
    const struct ho_report *rep = arg;
    json_key(j, "http_open");
    json_object_begin(j);
    json_key(j, "scenario");
    json_string(j, rep->scn->name);
    json_key(j, "users_started");
    json_int(j, (int64_t)rep->users_started);
    json_key(j, "users_done");
    json_int(j, (int64_t)rep->users_done);
    json_key(j, "global");
    json_stat(j, "all", &rep->all, rep->duration_s);
    json_key(j, "requests");
    json_array_begin(j);
    for (unsigned i = 0; i < rep->scn->nnames; i++)
        json_stat(j, rep->scn->names[i], &rep->by_name[i], rep->duration_s);
    json_array_end(j);
    json_key(j, "errors");
    json_object_begin(j);
    uint64_t gen = 0;
    for (unsigned e = 0; e < ERR_COUNT; e++) {
        json_key(j, err_names[e]);
        json_int(j, (int64_t)rep->errs[e]);
        if (err_is_generator(e))
            gen += rep->errs[e];
    }
    json_key(j, "generator_total");
    json_int(j, (int64_t)gen);
    json_key(j, "server_total");
    json_int(j, (int64_t)(rep->all.ko - gen));
    json_key(j, "by_status");
    json_object_begin(j);
    for (unsigned s = 0; s < 600; s++) {
        if (!rep->status_ko[s])
            continue;
        char k[8];
        snprintf(k, sizeof k, "%u", s);
        json_key(j, k);
        json_int(j, (int64_t)rep->status_ko[s]);
    }
    json_object_end(j);
    json_object_end(j);
    json_key(j, "saturation");
    if (rep->saturation_s >= 0) {
        const struct http_open_level *l = &rep->levels[rep->saturation_level];
        json_object_begin(j);
        json_key(j, "second");
        json_int(j, rep->saturation_s);
        json_kv(j, "active_users", rep->points[rep->saturation_s].active);
        json_key(j, "cause");
        json_string(j, sat_cause_name(rep->saturation_cause));
        json_key(j, "level");
        if (l->step)
            json_int(j, rep->saturation_level + 1);
        else
            json_null(j);
        json_kv(j, "load", rep->saturation_load);
        json_key(j, "load_unit");
        json_string(j, rep->closed ? "concurrent users" : "users/s");
        json_kv(j, "window_s", rep->sat_window);
        json_kv(j, "requests_per_sec", rep->saturation_rps);
        json_kv(j, "ok_per_sec", rep->saturation_ok_ps);
        json_object_end(j);
    } else {
        json_null(j);
    }
    json_key(j, "level_saturation");
    const struct ho_level_verdict *v = &rep->level_sat;
    if (v->level >= 0) {
        json_object_begin(j);
        json_key(j, "level");
        json_int(j, v->level + 1);
        json_kv(j, "load", rep->levels[v->level].load_from);
        json_key(j, "cause");
        json_string(j, sat_cause_name(v->cause));
        json_kv(j, "behind_pct", v->behind_pct);
        json_kv(j, "p95_ms", v->p95_ms);
        json_kv(j, "base_p95_ms", v->base_p95_ms);
        json_kv(j, "ko_pct", v->ko_pct);
        json_kv(j, "base_ko_pct", v->base_ko_pct);
        json_object_end(j);
    } else {
        json_null(j);
    }
    json_key(j, "until_saturated");
    json_bool(j, rep->until_saturated);
    json_key(j, "stopped_after_level");
    if (rep->stopped_after >= 0)
        json_int(j, rep->stopped_after + 1);
    else
        json_null(j);
    json_key(j, "server_cpu_pct");
    json_number(j, rep->server_cpu_pct);
    if (rep->pg) {
        json_key(j, "postgres");
        json_object_begin(j);
        json_key(j, "postmaster");
        json_int(j, rep->pg_postmaster);
        json_key(j, "processes_max");
        json_int(j, rep->pg_procs);
        json_kv(j, "cpu_pct", rep->pg_cpu_pct);
        json_kv(j, "rss_max_kb", rep->pg_rss_kb);
        json_object_end(j);
    }
    json_key(j, "levels");
    json_array_begin(j);
    for (unsigned i = 0; i + 1 < rep->nlevels; i++)
        json_level(j, &rep->levels[i]);
    json_array_end(j);
    json_key(j, "after_levels");
    json_level(j, &rep->levels[rep->nlevels - 1]);
    json_key(j, "series");
    json_array_begin(j);
    for (unsigned s = 0; s < rep->nsecs; s++) {
        json_object_begin(j);
        json_key(j, "t");
        json_int(j, s);
        json_key(j, "active_users");
        json_number(j, rep->points[s].active);
        json_key(j, "started");
        json_int(j, rep->secs[s].started);
        json_key(j, "requests");
        json_int(j, rep->secs[s].sent);
        json_key(j, "responses_ok");
        json_int(j, rep->secs[s].ok);
        json_key(j, "responses_ko");
        json_int(j, rep->secs[s].ko);
        json_key(j, "responses_ko_generator");
        json_int(j, rep->secs[s].ko_gen);
        json_key(j, "p95_ms");
        json_number(j, rep->points[s].p95_ms);
        json_object_end(j);
    }
    json_array_end(j);
    json_object_end(j);
}

static void stat_row(struct tt *tt, const char *name, const struct ho_stat *st, double dur)
{
    const struct hist *h = &st->h;
    tt_cell(tt, "%s", name);
    tt_cell(tt, "%llu", (unsigned long long)h->count);
    tt_cell(tt, "%llu", (unsigned long long)st->ok);
    tt_cell(tt, "%llu", (unsigned long long)st->ko);
    const double ms[] = {h->count ? (double)h->min : 0, hist_mean(h),
                         (double)hist_percentile(h, 50), (double)hist_percentile(h, 75),
                         (double)hist_percentile(h, 95), (double)hist_percentile(h, 99),
                         h->count ? (double)h->max : 0};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        tt_cell(tt, "%.1f", ms[i] / 1e6);
    tt_cell(tt, "%.2f", dur > 0 ? (double)h->count / dur : 0);
}

/* The load levels, when the profile has more than one. */
static void print_levels(FILE *f, const struct ho_report *rep)
{
    static const char *const titles[] = {
        "level", "step", "load", "start s", "dur s", "users", "requests", "ok", "ko", "req/s",
        "resp/s", "mean", "p50", "p95", "p99"};
    struct tt tt;
    tt_init(&tt, "lllrrrrrrrrrrrr");
    tt_cells(&tt, sizeof titles / sizeof titles[0], titles);
    for (unsigned i = 0; i < rep->nlevels; i++) {
        const struct http_open_level *l = &rep->levels[i];
        if (!l->step) {
            tt_cell(&tt, "after");
            tt_cell(&tt, "%s", "");
            tt_cell(&tt, "%s", "");
        } else {
            tt_cell(&tt, "%u", i + 1);
            if (l->stair)
                tt_cell(&tt, "%u:%u", l->step, l->stair);
            else
                tt_cell(&tt, "%u", l->step);
            const char *unit = l->closed ? " users" : "/s";
            if (l->load_from == l->load_to)
                tt_cell(&tt, "%g%s", l->load_from, unit);
            else
                tt_cell(&tt, "%g->%g%s", l->load_from, l->load_to, unit);
        }
        const struct {
            double v;
            int prec;
        } figs[] = {{l->start_s, 1},        {l->dur_s, 1},           {l->users_started, 0},
                    {l->requests, 0},       {l->ok, 0},              {l->ko, 0},
                    {l->rps, 1},            {l->responses_per_s, 1}, {l->mean_ms, 1},
                    {l->p50_ms, 1},         {l->p95_ms, 1},          {l->p99_ms, 1}};
        for (size_t k = 0; k < sizeof figs / sizeof figs[0]; k++)
            tt_cell(&tt, "%.*f", figs[k].prec, figs[k].v);
    }
    fprintf(f, "---- load levels (requests by their intended send time) ----\n");
    tt_print(f, &tt);
    tt_free(&tt);
}

/* The errors by class, then the unexpected statuses. */
static void print_errors(FILE *f, const struct ho_report *rep)
{
    struct tt tt;
    tt_init(&tt, "lrrl");
    for (unsigned e = 0; e < ERR_COUNT; e++)
        if (rep->errs[e]) {
            tt_cell(&tt, "> %s", err_names[e]);
            tt_cell(&tt, "%llu", (unsigned long long)rep->errs[e]);
            tt_cell(&tt, "(%.1f %%)", 100.0 * (double)rep->errs[e] / (double)rep->all.ko);
            tt_cell(&tt, "%s", err_is_generator(e) ? "[load generator]" : "");
        }
    for (unsigned s = 0; s < 600; s++)
        if (rep->status_ko[s]) {
            tt_cell(&tt, ">   status %u", s);
            tt_cell(&tt, "%llu", (unsigned long long)rep->status_ko[s]);
            tt_cell(&tt, "%s", "");
            tt_cell(&tt, "%s", "");
        }
    fprintf(f, "---- errors ----\n");
    tt_print(f, &tt);
    tt_free(&tt);
}

/* The level rule's verdict, when there are levels to compare, and where
 * --until-saturated stopped the profile. */
static void print_level_verdict(FILE *f, const struct ho_report *rep)
{
    unsigned judged = 0;
    for (unsigned i = 0; i < rep->nlevels; i++)
        judged += level_judged(&rep->levels[i]);
    const struct ho_level_verdict *v = &rep->level_sat;
    if (v->level >= 0) {
        const struct http_open_level *l = &rep->levels[v->level];
        fprintf(f, "saturation by level: level %d (%g/s; ", v->level + 1, l->load_from);
        if (v->cause == HO_SAT_BACKLOG)
            fprintf(f, "backlog: %.1f %% of its requests unanswered in it, p95 %.1f ms against "
                       "%.1f ms before)\n", v->behind_pct, v->p95_ms, v->base_p95_ms);
        else
            fprintf(f, "failures: the server's KO %.1f %% of its answers against %.1f %% before)\n",
                    v->ko_pct, v->base_ko_pct);
    } else if (judged > 1) {
        fprintf(f, "saturation by level: not reached\n");
    }
    if (rep->stopped_after >= 0)
        fprintf(f, "--until-saturated: the profile stopped after level %d\n",
                rep->stopped_after + 1);
}

/* Gatling's console summary: global, per request, errors, load levels. */
static void report_print(FILE *f, const struct ho_report *rep)
{
    static const char *const titles[] = {"request (ms)", "count", "ok", "ko", "min", "mean",
                                         "p50", "p75", "p95", "p99", "max", "req/s"};
    fprintf(f, "---- %s: %llu users started, %llu done, %.1f s ----\n", rep->scn->name,
            (unsigned long long)rep->users_started, (unsigned long long)rep->users_done,
            rep->duration_s);
    struct tt tt;
    tt_init(&tt, "lrrrrrrrrrrr");
    tt_cells(&tt, sizeof titles / sizeof titles[0], titles);
    stat_row(&tt, "Global", &rep->all, rep->duration_s);
    for (unsigned i = 0; i < rep->scn->nnames; i++)
        stat_row(&tt, rep->scn->names[i], &rep->by_name[i], rep->duration_s);
    tt_print(f, &tt);
    tt_free(&tt);
    if (rep->all.ko)
        print_errors(f, rep);
    if (rep->nlevels > 2)
        print_levels(f, rep);
    if (rep->saturation_s >= 0) {
        const struct http_open_level *l = &rep->levels[rep->saturation_level];
        fprintf(f, "saturation point: %.0f active users at second %d (%s; load %g %s",
                rep->points[rep->saturation_s].active, rep->saturation_s,
                sat_cause_name(rep->saturation_cause), rep->saturation_load,
                rep->closed ? "users" : "users/s");
        if (l->step)
            fprintf(f, ", level %u", rep->saturation_level + 1);
        fprintf(f, "; %.1f requests/s sent, %.1f answered OK over %u s)\n", rep->saturation_rps,
                rep->saturation_ok_ps, rep->sat_window);
    } else {
        fprintf(f, "saturation point: not reached\n");
    }
    print_level_verdict(f, rep);
}

static int ho_run(const struct bench_opts *o, void *arg, unsigned rep_index,
                  struct result_row *row)
{
    struct ho_args *a = arg;
    struct ho_cfg cfg = a->cfg;
    cfg.seed += rep_index;
    _Atomic unsigned kept = cfg.nlevels;
    cfg.kept = &kept;
    struct ho_thread *ths = mem_calloc(cfg.threads, sizeof *ths);
    struct probe probe;
    struct pg_probe pg;
    probe_start(&probe, o->server_pid);
    if (a->pg_postmaster)
        pg_probe_start(&pg, "/proc", a->pg_postmaster);
    scn_feed_rewind(cfg.scn);
    uint64_t t0 = clock_now_ns();
    unsigned started = 0;
    for (unsigned i = 0; i < cfg.threads; i++) {
        struct ho_thread *th = &ths[i];
        th->cfg = &cfg;
        th->index = i;
        th->t0_ns = t0;
        th->rng = cfg.seed * 1000003u + i;
        th->loop = ev_loop_new();
        th->by_name = mem_calloc(cfg.scn->nnames, sizeof *th->by_name);
        th->levels = mem_calloc(cfg.nlevels + 1, sizeof *th->levels);
        pthread_mutex_init(&th->lock, NULL);
        if (pthread_create(&th->tid, NULL, th_main, th) != 0) {
            ev_loop_free(th->loop);
            mem_free(th->by_name);
            mem_free(th->levels);
            pthread_mutex_destroy(&th->lock);
            snprintf(row->error, sizeof row->error, "cannot start thread %u", i);
            break;
        }
        started++;
    }
    /* Sample while the threads run; each ends when its users have. */
    struct ho_level *scratch = NULL;
    struct http_open_level *figs = NULL;
    unsigned climb_next = 0;
    if (cfg.until_saturated && started == cfg.threads) {
        scratch = mem_calloc(1, sizeof *scratch);
        figs = mem_calloc(INJ_MAX_SEGMENTS, sizeof *figs);
    }
    for (unsigned done = 0; done < started;) {
        struct timespec ts = {0, HO_SAMPLE_MS * 1000000L};
        nanosleep(&ts, NULL);
        probe_sample(&probe);
        if (a->pg_postmaster)
            pg_probe_sample(&pg);
        if (scratch)
            climb_check(&cfg, ths, started, (double)(clock_now_ns() - t0) / 1e9, &climb_next, scratch,
                        figs);
        done = 0;
        for (unsigned i = 0; i < started; i++) {
            if (!ths[i].joined && pthread_tryjoin_np(ths[i].tid, NULL) == 0)
                ths[i].joined = true;
            done += ths[i].joined;
        }
    }
    struct ho_report *rep = mem_calloc(1, sizeof *rep);
    rep->scn = cfg.scn;
    rep->duration_s = (double)(clock_now_ns() - t0) / 1e9;
    mem_free(scratch);
    mem_free(figs);
    report_merge(rep, ths, started);
    report_levels(rep, &cfg, ths, started);
    for (unsigned i = 0; i < started; i++) {
        mem_free(ths[i].by_name);
        mem_free(ths[i].levels);
        pthread_mutex_destroy(&ths[i].lock);
        mem_free(ths[i].secs);
        scn_buf_free(&ths[i].head);
        scn_buf_free(&ths[i].body);
        ev_loop_free(ths[i].loop);
    }
    mem_free(ths);
    report_saturation(rep, &cfg, a->sat_window);
    probe_finish(&probe, (double)rep->all.h.count, row);
    if (o->server_pid && rep->duration_s > 0)
        rep->server_cpu_pct = 100 * row->server_cpu_s / rep->duration_s;
    rep->server_rss_kb = row->server_rss_max_kb;
    rep->server_threads = row->server_threads_max;
    if (a->pg_postmaster) {
        pg_probe_sample(&pg);
        if (pg.lost)
            fprintf(stderr, "shootout bench http-open: the PostgreSQL postmaster %d could not be "
                            "read at every sample: its figures end at the last good one\n",
                    a->pg_postmaster);
        rep->pg = true;
        rep->pg_postmaster = a->pg_postmaster;
        rep->pg_procs = pg.procs_max;
        rep->pg_rss_kb = pg.rss_max_kb;
        rep->pg_cpu_pct = rep->duration_s > 0 ? 100 * pg_probe_cpu_s(&pg) / rep->duration_s : 0;
    }
    rep->next = a->reports;
    a->reports = rep;

    row->duration_s = rep->duration_s;
    row->sent = (double)rep->requests;
    row->received = (double)rep->all.ok;
    row->lost = (double)rep->all.ko;
    row->throughput = rep->duration_s > 0 ? (double)rep->all.h.count / rep->duration_s : 0;
    result_set_latency(row, &rep->all.h);
    row->err_connect = (double)rep->errs[ERR_CONNECT];
    row->err_timeout = (double)rep->errs[ERR_TIMEOUT];
    row->err_protocol = (double)(rep->errs[ERR_PROTOCOL] + rep->errs[ERR_CHECK]);
    row->err_status = (double)rep->errs[ERR_STATUS];
    row->err_closed = (double)rep->errs[ERR_CLOSED];
    row->extra_json = report_json;
    row->extra_arg = rep;
    row->series = (struct result_series){rep->points, rep->nsecs, rep->saturation_s};
    /* A caller with its own tables (brief) keeps stdout for them. */
    FILE *tf = o->brief || (o->json_path && !strcmp(o->json_path, "-")) ? stderr : stdout;
    report_print(tf, rep);
    if (scn_feed_dry(cfg.scn)) /* Gatling stops the run there */
        snprintf(row->error, sizeof row->error, "the queue feeder %.200s ran out of records",
                 scn_feed_dry(cfg.scn));
    if (row->error[0])
        return BENCH_EXIT_RUNTIME;
    if (rep->all.h.count > 0 && rep->all.ok == 0 && rep->errs[ERR_CONNECT] == rep->all.ko) {
        snprintf(row->error, sizeof row->error, "no connection to %s:%d succeeded", cfg.host,
                 cfg.port);
        return BENCH_EXIT_RUNTIME;
    }
    return BENCH_EXIT_OK;
}

/* ---- the CLI ------------------------------------------------------------ */

enum {
    OPT_SCENARIO = 2000,
    OPT_INJECT,
    OPT_TIME_SCALE,
    OPT_MAX_DURATION,
    OPT_REQUEST_TIMEOUT,
    OPT_CONNECT_TIMEOUT,
    OPT_SAT_WINDOW,
    OPT_SEED,
    OPT_PG,
    OPT_SHARE,
    OPT_UNTIL_SATURATED,
};

static int parse_duration_opt(const struct bench_opts *o, const char *opt, const char *arg,
                              double *out)
{
    if (inj_parse_duration(arg, strlen(arg), out) && *out > 0)
        return 0;
    return bench_usage_error(o, "%s wants a duration above 0 with its unit (500ms, 10s, 2m), not '%s'",
                             opt, arg);
}

static int load_scenario(const struct bench_opts *o, const char *arg, struct scenario *scn)
{
    char err[256];
    if (!strcmp(arg, "a2b")) {
        if (scn_parse(scn_a2b_text, strlen(scn_a2b_text), scn, err, sizeof err) < 0)
            return bench_usage_error(o, "built-in scenario: %s", err);
        return 0;
    }
    char *text;
    size_t len;
    if (textfile_read(arg, &text, &len, err, sizeof err) < 0)
        return bench_usage_error(o, "--scenario: %s", err);
    int rc = scn_parse(text, len, scn, err, sizeof err);
    mem_free(text);
    if (rc < 0)
        return bench_usage_error(o, "%s: %s", arg, err);
    return 0;
}

int http_open_main(int argc, char **argv, const struct result_context *ctx)
{
    static const struct option longopts[] = {
        {"scenario", required_argument, NULL, OPT_SCENARIO},
        {"inject", required_argument, NULL, OPT_INJECT},
        {"time-scale", required_argument, NULL, OPT_TIME_SCALE},
        {"max-duration", required_argument, NULL, OPT_MAX_DURATION},
        {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
        {"saturation-window", required_argument, NULL, OPT_SAT_WINDOW},
        {"seed", required_argument, NULL, OPT_SEED},
        {"pg-sample", required_argument, NULL, OPT_PG},
        {"share-connections", required_argument, NULL, OPT_SHARE},
        {"until-saturated", no_argument, NULL, OPT_UNTIL_SATURATED},
        {"threads", required_argument, NULL, BENCH_OPT_THREADS},
        BENCH_LONGOPTS_COMMON,
        {NULL, 0, NULL, 0},
    };
    struct bench_opts o;
    bench_opts_init(&o, "http-open", usage);
    o.port = HO_DEFAULT_PORT;
    o.target_arg = "127.0.0.1";
    struct http_open_test t;
    http_open_test_init(&t);
    const char *scn_arg = "a2b";
    struct inj_profile prof = {0};
    struct scenario scn = {0};
    char err[256];
    uint64_t v;
    int c, rc = -1;
    optind = 1;
    while (rc < 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_SCENARIO:
            scn_arg = optarg;
            break;
        case OPT_INJECT: {
            struct inj_step st;
            if (inj_parse_step(optarg, strlen(optarg), &st, err, sizeof err) < 0 ||
                inj_profile_add(&prof, &st, err, sizeof err) < 0)
                rc = bench_usage_error(&o, "--inject: %s", err);
            break;
        }
        case OPT_TIME_SCALE: {
            char *end;
            errno = 0;
            t.time_scale = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(t.time_scale > 0) || t.time_scale > 1e6)
                rc = bench_usage_error(&o, "--time-scale wants a number above 0, not '%s'", optarg);
            break;
        }
        case OPT_MAX_DURATION:
            if (parse_duration_opt(&o, "--max-duration", optarg, &t.max_duration_s))
                rc = BENCH_EXIT_USAGE;
            break;
        case OPT_REQUEST_TIMEOUT:
            if (parse_duration_opt(&o, "--request-timeout", optarg, &t.request_timeout_s))
                rc = BENCH_EXIT_USAGE;
            break;
        case OPT_CONNECT_TIMEOUT:
            if (parse_duration_opt(&o, "--connect-timeout", optarg, &t.connect_timeout_s))
                rc = BENCH_EXIT_USAGE;
            break;
        case OPT_SAT_WINDOW:
            if (bench_parse_uint(&o, "--saturation-window", optarg, 1, 3600, &v))
                rc = BENCH_EXIT_USAGE;
            t.sat_window = (unsigned)v;
            break;
        case OPT_SEED:
            if (bench_parse_uint(&o, "--seed", optarg, 0, UINT64_MAX, &t.seed))
                rc = BENCH_EXIT_USAGE;
            break;
        case OPT_PG:
            t.pg_sample = optarg;
            break;
        case OPT_UNTIL_SATURATED:
            t.until_saturated = true;
            break;
        case OPT_SHARE:
            if (bench_parse_uint(&o, "--share-connections", optarg, 1, HO_MAX_SHARED, &v))
                rc = BENCH_EXIT_USAGE;
            t.share_connections = (unsigned)v;
            break;
        case BENCH_OPT_TARGET:
            /* http://host:port[/]: the scheme and a bare slash are optional. */
            o.target_arg = optarg;
            if (!strncmp(o.target_arg, "http://", 7))
                o.target_arg += 7;
            else if (strstr(o.target_arg, "://"))
                rc = bench_usage_error(&o, "--target: only http:// is supported");
            if (rc < 0 && o.target_arg[0] && o.target_arg[strlen(o.target_arg) - 1] == '/') {
                static char trimmed[256];
                snprintf(trimmed, sizeof trimmed, "%.*s", (int)strlen(o.target_arg) - 1,
                         o.target_arg);
                o.target_arg = trimmed;
            }
            break;
        default:
            rc = bench_parse_option(&o, c, optarg);
        }
    }
    if (rc >= 0)
        return rc;
    if (prof.n == 0)
        http_open_reference_profile(&prof);
    if (t.until_saturated && inj_profile_closed(&prof))
        return bench_usage_error(&o, "--until-saturated needs an open profile (users/s): "
                                     "the level rule reads arrival rates");
    rc = load_scenario(&o, scn_arg, &scn);
    if (rc)
        return rc;
    rc = bench_finish_options(&o, argc, argv, 1);
    if (rc) {
        scn_free(&scn);
        return rc;
    }
    t.scn = &scn;
    t.prof = &prof;
    struct result_set rows = {0};
    rc = http_open_exec(&o, &t, ctx, &rows);
    rc = bench_finish(&o, ctx, &rows, rc);
    http_open_test_free(&t);
    scn_free(&scn);
    return rc;
}

void http_open_reference_profile(struct inj_profile *p)
{
    struct inj_step st;
    char err[128];
    *p = (struct inj_profile){0};
    inj_parse_step(HO_REFERENCE_INJECT, strlen(HO_REFERENCE_INJECT), &st, err, sizeof err);
    inj_profile_add(p, &st, err, sizeof err);
}

void http_open_test_init(struct http_open_test *t)
{
    *t = (struct http_open_test){
        .time_scale = 1,
        .max_duration_s = 2000,
        .request_timeout_s = 60,
        .connect_timeout_s = 10,
        .seed = 1,
        .sat_window = 5,
    };
}

/* The segments of positive length of prof into cfg's levels. */
static void cfg_levels(struct ho_cfg *cfg, const struct inj_profile *prof)
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

int http_open_exec(const struct bench_opts *o, struct http_open_test *t,
                   const struct result_context *ctx, struct result_set *rows)
{
    struct inj_profile prof = *t->prof;
    inj_profile_scale(&prof, t->time_scale);
    struct ho_args a = {
        .cfg = {
            .scn = t->scn,
            .prof = &prof,
            .host = o->host,
            .port = o->port,
            .threads = o->threads,
            .time_scale = t->time_scale,
            .max_duration_s = t->max_duration_s / t->time_scale,
            .request_timeout_ms = (unsigned)ceil(t->request_timeout_s * 1000),
            .connect_timeout_ms = (unsigned)ceil(t->connect_timeout_s * 1000),
            .seed = t->seed,
            .share_connections = t->share_connections,
            .until_saturated = t->until_saturated && !inj_profile_closed(t->prof),
        },
        .sat_window = t->sat_window,
    };
    cfg_levels(&a.cfg, &prof);
    /* Any connection may carry a request that extracts. */
    for (unsigned i = 0; i < t->scn->nsteps; i++)
        a.cfg.keep_bodies |= t->scn->steps[i].kind == SCN_REQUEST && t->scn->steps[i].req.nextract;
    char err[512];
    if (t->pg_sample && pg_probe_find(t->pg_sample, "/proc", &a.pg_postmaster, err, sizeof err) < 0) {
        fprintf(stderr, "shootout bench http-open: --pg-sample %s: %s%s\n", t->pg_sample, err,
                t->pg_sample_optional ? " (measuring without it)" : "");
        if (!t->pg_sample_optional)
            return BENCH_EXIT_RUNTIME;
        a.pg_postmaster = 0;
    }
    signal(SIGPIPE, SIG_IGN);

    struct result_row tmpl = {0};
    tmpl.experiment = "http-open";
    snprintf(tmpl.name, sizeof tmpl.name, "http-open/%s/%s", o->target, t->scn->name);
    snprintf(tmpl.target, sizeof tmpl.target, "%s", o->target);
    tmpl.throughput_def = "requests answered (OK or KO) per second of the whole run";
    tmpl.op_def = "one HTTP request";
    tmpl.op_unit = "req";
    result_param(&tmpl, "threads", o->threads);
    result_param(&tmpl, "time_scale", t->time_scale);
    result_param(&tmpl, "users_planned", inj_profile_users(&prof));
    result_param(&tmpl, "profile_s", inj_profile_duration(&prof));
    result_param(&tmpl, "max_duration_s", a.cfg.max_duration_s);
    result_param(&tmpl, "closed_model", inj_profile_closed(&prof));
    result_param(&tmpl, "seed", (double)t->seed);
    result_param(&tmpl, "share_connections", t->share_connections);
    result_param(&tmpl, "until_saturated", a.cfg.until_saturated);

    int rc = bench_repeat(o, ctx, &tmpl, ho_run, &a, rows);
    /* Newest first, behind any earlier exec's. */
    struct ho_report **tail = &a.reports;
    while (*tail)
        tail = &(*tail)->next;
    *tail = t->reports;
    t->reports = a.reports;
    return rc;
}

bool http_open_last_summary(const struct http_open_test *t, struct http_open_summary *s)
{
    const struct ho_report *rep = t->reports;
    if (!rep)
        return false;
    uint64_t gen = 0;
    for (unsigned e = 0; e < ERR_COUNT; e++)
        if (err_is_generator(e))
            gen += rep->errs[e];
    double active_max = 0;
    for (unsigned i = 0; i < rep->nsecs; i++)
        active_max = fmax(active_max, rep->points[i].active);
    bool sat = rep->saturation_s >= 0;
    *s = (struct http_open_summary){
        .requests = (double)rep->all.h.count,
        .ko = (double)rep->all.ko,
        .ko_generator = (double)gen,
        .rps = rep->duration_s > 0 ? (double)rep->all.h.count / rep->duration_s : 0,
        .p95_ms = (double)hist_percentile(&rep->all.h, 95) / 1e6,
        .duration_s = rep->duration_s,
        .users_started = (double)rep->users_started,
        .users_done = (double)rep->users_done,
        .active_max = active_max,
        .saturation_users = sat ? rep->points[rep->saturation_s].active : -1,
        .saturation_s = sat ? rep->saturation_s : -1,
        .saturation_load = sat ? rep->saturation_load : -1,
        .saturation_rps = sat ? rep->saturation_rps : -1,
        .saturation_level = sat ? (int)rep->saturation_level : -1,
        .saturation_cause = sat ? sat_cause_name(rep->saturation_cause) : NULL,
        .level_saturation = rep->level_sat.level,
        .stopped_after_level = rep->stopped_after,
        .server_cpu_pct = rep->server_cpu_pct,
        .server_rss_kb = rep->server_rss_kb,
        .server_threads = rep->server_threads,
        .pg = rep->pg,
        .pg_cpu_pct = rep->pg_cpu_pct,
    };
    return true;
}

unsigned http_open_last_levels(const struct http_open_test *t, struct http_open_level *out,
                               unsigned max)
{
    const struct ho_report *rep = t->reports;
    if (!rep)
        return 0;
    for (unsigned i = 0; i < rep->nlevels && i < max; i++)
        out[i] = rep->levels[i];
    return rep->nlevels;
}

void http_open_test_free(struct http_open_test *t)
{
    while (t->reports) {
        struct ho_report *next = t->reports->next;
        report_free(t->reports);
        t->reports = next;
    }
}

/* ---- boot-up time --------------------------------------------------------- */

/* Waits up to ms for events on fd; true if they came. */
static bool wait_fd(int fd, short events, int ms)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    return poll(&pfd, 1, ms) == 1;
}

/* One GET with Connection: close; true on a 200 answer. */
static bool ready_once(const char *host, int port, const char *path)
{
    char err[NET_ERR_LEN], req[512], resp[16];
    int fd = net_connect(host, port, err, sizeof err);
    if (fd < 0)
        return false;
    bool ok = false;
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n",
                     path, host, port);
    if (wait_fd(fd, POLLOUT, 100) && net_connect_result(fd) == 0 &&
        send(fd, req, (size_t)n, MSG_NOSIGNAL) == n && wait_fd(fd, POLLIN, 1000)) {
        ssize_t r = recv(fd, resp, sizeof resp, 0);
        ok = r >= 12 && !memcmp(resp, "HTTP/1.", 7) && !memcmp(resp + 9, "200", 3);
    }
    close(fd);
    return ok;
}

/* Whether process pid has exited, without reaping it: its parent (a
 * caller's child.h, say) still reaps it and learns how it ended. */
static bool exited(int pid)
{
    siginfo_t si = {0};
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

bool http_open_wait_ready(const char *host, int port, const char *path, double timeout_s, int pid)
{
    uint64_t t0 = clock_now_ns();
    struct timespec ts = {0, 2000000};
    while ((double)(clock_now_ns() - t0) / 1e9 < timeout_s) {
        if (ready_once(host, port, path))
            return true;
        if (exited(pid))
            return false;
        nanosleep(&ts, NULL);
    }
    return false;
}
