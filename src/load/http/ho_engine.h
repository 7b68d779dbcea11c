/* ho_engine.h - the http-open engine: virtual users as small state
 * machines on per-thread event loops, each sending its scenario's requests
 * over its own keep-alive connection (or its thread's shared pool), and
 * the figures each thread records for the merge (ho_report.h).
 *
 * A user runs its steps until it must wait: for a pause (a timer), a
 * connect or an answer (http_client callbacks). Latency is measured from
 * the request's intended start: the arrival time the profile gave the user
 * for its first request, the end of the pause before it for the others. A
 * generator that falls behind its timers therefore adds its lateness to the
 * latencies instead of hiding it (coordinated omission, docs/http_open.md).
 */
#ifndef SHOOTOUT_HO_ENGINE_H
#define SHOOTOUT_HO_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/ev.h"
#include "load/http/ho_series.h"
#include "load/http/inject.h"
#include "load/http/scenario.h"
#include "report/hist.h"

/* Error classes. The generator's own are apart from the server's. */
enum ho_err {
    HO_ERR_STATUS,   /* an unexpected HTTP status */
    HO_ERR_CHECK,    /* expected status, but an extraction found nothing or the body is not JSON */
    HO_ERR_TIMEOUT,  /* no answer within --request-timeout */
    HO_ERR_CONNECT,  /* connect refused, unreachable or timed out */
    HO_ERR_CLOSED,   /* premature close: the connection ended before the answer */
    HO_ERR_PROTOCOL, /* an answer that is not HTTP/1.1, or a body that fails to decode */
    HO_ERR_GEN_FDS,  /* generator: out of descriptors, ports or buffers (EMFILE...) */
    HO_ERR_GEN_VAR,  /* generator: a variable the request needs was never set */
    HO_ERR_COUNT
};

/* Their names in the JSON report. */
extern const char *const ho_err_names[HO_ERR_COUNT];

static inline bool ho_err_is_generator(enum ho_err e)
{
    return e == HO_ERR_GEN_FDS || e == HO_ERR_GEN_VAR;
}

struct ho_stat {
    struct hist h; /* nanoseconds, OK and KO alike, as Gatling's "total" */
    uint64_t ok, ko;
};

/* A load level: a profile segment of positive length, or (the last) the
 * time after the profile. Requests belong to the level of their intended
 * send time, whenever they end; answers counts those that ended in it. */
struct ho_level {
    struct ho_stat st;
    uint64_t started, sent, answered, ko_gen; /* ko_gen: of st.ko, the generator's own */
};

/* The run's figures that only add up: what each thread counts, a run's
 * report sums of its threads', and `shootout merge` of its shards'
 * reports, all with ho_totals_add. */
struct ho_totals {
    struct ho_stat *by_name; /* scenario names */
    struct ho_stat all;
    uint64_t errs[HO_ERR_COUNT];
    uint64_t status_ko[600];
    uint64_t requests, users_started, users_done;
};

/* src's figures added to dst's, both of nnames request names. */
void ho_totals_add(struct ho_totals *dst, const struct ho_totals *src, unsigned nnames);
/* src's counts and latencies added to dst's: a level of another thread or
 * shard. */
void ho_level_add(struct ho_level *dst, const struct ho_level *src);

/* A run's settings, shared by its threads; only *kept changes while they run. */
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
    struct trace *trace; /* --trace, NULL: none */
    /* --shard I/N (count 1: the whole run): this process starts every
     * N-th arrival of the whole profile, from the I-th, and its share of a
     * closed profile's users; see docs/http_open.md, Shards. */
    unsigned shard_index, shard_count;
};

struct ho_user;
struct ho_conn;

/* One event-loop thread of a run: its users, its share of the arrivals,
 * its connection pool, and its figures. */
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
    struct ho_totals tot;
    struct ho_sec *secs;
    unsigned nsecs;
    struct ho_level *levels; /* cfg->nlevels + 1 */
    /* Guards levels, which the main thread reads during the run
     * (--until-saturated); everything else is the thread's alone. */
    pthread_mutex_t lock;
    _Atomic uint64_t answered_seen; /* all.h.count at the last tick, for the progress line */
    struct scn_buf head, body;
};

/* The segments of positive length of prof into cfg's levels. */
void ho_cfg_levels(struct ho_cfg *cfg, const struct inj_profile *prof);
/* When the profile ends: at its last segment's end, or where
 * --until-saturated stopped it. */
double ho_cfg_end_s(const struct ho_cfg *cfg);
/* The level of the instant t (seconds of the run): the last segment
 * starting at or before it, or (cfg->nlevels) the time after the profile. */
unsigned ho_cfg_level_at(const struct ho_cfg *cfg, double t);

/* Sets th up as thread index of a run of cfg that started at t0_ns and
 * starts it; it ends when its users have. 0, or -1 (th freed) when the
 * thread could not start. */
int ho_thread_start(struct ho_thread *th, const struct ho_cfg *cfg, unsigned index, uint64_t t0_ns);
/* Frees a joined thread's loop and figures. */
void ho_thread_free(struct ho_thread *th);

/* Level i of the n threads' levels, merged into m, as they are now (the
 * threads may still run). */
void ho_levels_merge(struct ho_level *m, struct ho_thread *ths, unsigned n, unsigned i);

#endif
