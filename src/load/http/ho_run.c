/* ho_run.c - one run of an http-open test (see ho_run.h). */
#include "load/http/ho_run.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/mem.h"
#include "load/pg_probe.h"
#include "load/probe.h"
#include "report/hist.h"

#define HO_SAMPLE_MS 200

/* --until-saturated, on the main thread while the loops run: judges each
 * level of constant load once it is over, on the figures so far, and once
 * the level rule finds the server saturated, stops the profile at the next
 * boundary at least HO_CLIMB_MARGIN_S ahead, which no loop has reached.
 * A level is judged once its requests have all been answered, or as long
 * again as it lasted; those still unanswered then count as answered now,
 * the least their latency can be. Judging sooner, on answers still on
 * their way, stopped climbs where the report, which judges every answer
 * and the levels before with theirs, found no saturation. *next is the
 * first level not yet judged; m and figs are scratch (figs for
 * INJ_MAX_SEGMENTS levels). */
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
            ho_levels_merge(m, ths, n, i);
            ho_level_figures(cfg, m, i, now_s, &figs[i]);
        }
        ho_levels_merge(m, ths, n, k);
        uint64_t pending = m->sent - m->st.ok - m->st.ko;
        for (uint64_t p = 0; p < pending; p++)
            hist_record(&m->st.h, (uint64_t)((now_s - end) * 1e9));
        ho_level_figures(cfg, m, k, now_s, &figs[k]);
        if (ho_level_judged(&figs[k])) {
            if (pending > 0 && now_s < end + g->s.dur_s)
                return;
            struct ho_level_verdict v;
            if (ho_level_saturation(figs, k + 1, &v) >= 0) {
                unsigned stop = ho_cfg_level_at(cfg, now_s + HO_CLIMB_MARGIN_S) + 1;
                if (stop < kept)
                    atomic_store(cfg->kept, stop);
                *next = kept;
                return;
            }
        }
        (*next)++;
    }
}

/* The progress line: requests answered, against the planned duration
 * (scaled, as the threads run it). */
static void ho_progress(const struct bench_opts *o, const struct ho_cfg *cfg,
                        struct ho_thread *ths, unsigned n)
{
    uint64_t answered = 0;
    for (unsigned i = 0; i < n; i++)
        answered += atomic_load_explicit(&ths[i].answered_seen, memory_order_relaxed);
    double end_s = ho_cfg_end_s(cfg);
    progress_update_timed(o->progress, answered,
                          end_s < cfg->max_duration_s ? end_s : cfg->max_duration_s, false);
}

int ho_run(const struct bench_opts *o, void *arg, unsigned rep_index, struct result_row *row)
{
    struct ho_run_args *a = arg;
    struct ho_cfg cfg = a->cfg;
    cfg.seed += rep_index;
    _Atomic unsigned kept = cfg.nlevels;
    cfg.kept = &kept;
    struct ho_thread *ths = mem_calloc(cfg.threads, sizeof *ths);
    struct probe probe;
    struct pg_probe pg;
    probe_start(&probe, o->server_pids, o->nserver_pids);
    if (a->pg_postmaster)
        pg_probe_start(&pg, "/proc", a->pg_postmaster);
    scn_feed_rewind(cfg.scn);
    uint64_t t0 = clock_now_ns();
    unsigned started = 0;
    for (unsigned i = 0; i < cfg.threads; i++) {
        if (ho_thread_start(&ths[i], &cfg, i, t0) < 0) {
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
            climb_check(&cfg, ths, started, (double)(clock_now_ns() - t0) / 1e9, &climb_next,
                        scratch, figs);
        done = 0;
        for (unsigned i = 0; i < started; i++) {
            if (!ths[i].joined && pthread_tryjoin_np(ths[i].tid, NULL) == 0)
                ths[i].joined = true;
            done += ths[i].joined;
        }
        ho_progress(o, &cfg, ths, started);
    }
    double duration_s = (double)(clock_now_ns() - t0) / 1e9;
    mem_free(scratch);
    mem_free(figs);
    struct ho_report *rep = ho_report_new(&cfg, ths, started, duration_s, a->sat_window);
    progress_update(o->progress, rep->tot.all.h.count, rep->tot.all.h.count, true);
    for (unsigned i = 0; i < started; i++)
        ho_thread_free(&ths[i]);
    mem_free(ths);
    probe_finish(&probe, (double)rep->tot.all.h.count, row);
    if (o->nserver_pids && rep->duration_s > 0)
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
    row->sent = (double)rep->tot.requests;
    row->received = (double)rep->tot.all.ok;
    row->lost = (double)rep->tot.all.ko;
    row->throughput = rep->duration_s > 0 ? (double)rep->tot.all.h.count / rep->duration_s : 0;
    result_set_latency(row, &rep->tot.all.h);
    row->err_connect = (double)rep->tot.errs[HO_ERR_CONNECT];
    row->err_timeout = (double)rep->tot.errs[HO_ERR_TIMEOUT];
    row->err_protocol = (double)(rep->tot.errs[HO_ERR_PROTOCOL] + rep->tot.errs[HO_ERR_CHECK]);
    row->err_status = (double)rep->tot.errs[HO_ERR_STATUS];
    row->err_closed = (double)rep->tot.errs[HO_ERR_CLOSED];
    row->extra_json = ho_report_json;
    row->extra_arg = rep;
    result_set_series(row, rep->points, rep->nsecs, rep->saturation_s);
    /* A caller with its own tables (brief) keeps stdout for them. */
    FILE *tf = o->brief || (o->json_path && !strcmp(o->json_path, "-")) ? stderr : stdout;
    ho_report_print(tf, rep);
    if (scn_feed_dry(cfg.scn)) /* Gatling stops the run there */
        snprintf(row->error, sizeof row->error, "the queue feeder %.200s ran out of records",
                 scn_feed_dry(cfg.scn));
    if (row->error[0])
        return BENCH_EXIT_RUNTIME;
    if (rep->tot.all.h.count > 0 && rep->tot.all.ok == 0 && rep->tot.errs[HO_ERR_CONNECT] == rep->tot.all.ko) {
        snprintf(row->error, sizeof row->error, "no connection to %s:%d succeeded", cfg.host,
                 cfg.port);
        return BENCH_EXIT_RUNTIME;
    }
    return BENCH_EXIT_OK;
}
