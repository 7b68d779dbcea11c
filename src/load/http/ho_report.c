/* ho_report.c - one http-open run's report (see ho_report.h). */
#include "load/http/ho_report.h"

#include <math.h>
#include <string.h>

#include "core/mem.h"
#include "load/http/inject.h"
#include "report/hist.h"
#include "report/texttab.h"

void ho_level_figures(const struct ho_cfg *cfg, const struct ho_level *lv, unsigned i,
                          double run_s, struct http_open_level *out)
{
    double end = ho_cfg_end_s(cfg);
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
        /* A shard's share of the load, so that the shards' add up. */
        out->load_from /= cfg->shard_count;
        out->load_to /= cfg->shard_count;
    }
    ho_level_stats(lv, out);
}

void ho_level_stats(const struct ho_level *lv, struct http_open_level *out)
{
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

/* The levels the run kept, then the time after the profile. */
static void report_levels(struct ho_report *rep, const struct ho_cfg *cfg, struct ho_thread *ths,
                          unsigned n)
{
    unsigned kept = atomic_load(cfg->kept);
    rep->nlevels = kept + 1;
    rep->levels = mem_calloc(rep->nlevels, sizeof *rep->levels);
    rep->level_counts = mem_calloc(rep->nlevels, sizeof *rep->level_counts);
    rep->until_saturated = cfg->until_saturated;
    rep->stopped_after = kept < cfg->nlevels ? (int)kept - 1 : -1;
    for (unsigned i = 0; i < rep->nlevels; i++) {
        unsigned from = i < kept ? i : cfg->nlevels; /* the threads keep "after" last */
        ho_levels_merge(&rep->level_counts[i], ths, n, from);
        ho_level_figures(cfg, &rep->level_counts[i], from, rep->duration_s, &rep->levels[i]);
    }
    ho_level_saturation(rep->levels, rep->nlevels, &rep->level_sat);
}

void ho_report_saturation(struct ho_report *rep, unsigned w)
{
    rep->sat_window = w;
    rep->saturation_s = ho_saturation(rep->points, rep->nsecs, w, &rep->saturation_cause);
    if (rep->saturation_s < 0)
        return;
    unsigned s = (unsigned)rep->saturation_s;
    double t = s + 0.5;
    /* The last level started by t: the time after the profile (last) from
     * the profile's end on. */
    unsigned i = 0;
    while (i + 1 < rep->nlevels && rep->levels[i + 1].start_s <= t)
        i++;
    rep->saturation_level = i;
    const struct http_open_level *l = &rep->levels[i];
    if (l->step && l->dur_s > 0) { /* along a ramp, where t is; 0 after the profile */
        double f = fmin(1, (t - l->start_s) / l->dur_s);
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
    rep->tot.by_name = mem_calloc(names, sizeof *rep->tot.by_name);
    for (unsigned t = 0; t < n; t++) {
        struct ho_thread *th = &ths[t];
        ho_totals_add(&rep->tot, &th->tot, names);
        if (th->nsecs > rep->nsecs) {
            rep->secs = mem_realloc(rep->secs, th->nsecs * sizeof *rep->secs);
            memset(rep->secs + rep->nsecs, 0, (th->nsecs - rep->nsecs) * sizeof *rep->secs);
            rep->nsecs = th->nsecs;
        }
        for (unsigned s = 0; s < th->nsecs; s++)
            ho_sec_add(&rep->secs[s], &th->secs[s]);
    }
    /* The series ends with the run's last second. */
    unsigned last = (unsigned)ceil(rep->duration_s);
    if (last < rep->nsecs)
        rep->nsecs = last;
    rep->points = mem_calloc(rep->nsecs ? rep->nsecs : 1, sizeof *rep->points);
    ho_series_points(rep->secs, rep->nsecs, rep->points);
}

struct ho_report *ho_report_new(const struct ho_cfg *cfg, struct ho_thread *ths, unsigned n,
                                double duration_s, unsigned sat_window)
{
    struct ho_report *rep = mem_calloc(1, sizeof *rep);
    rep->scn = cfg->scn;
    rep->duration_s = duration_s;
    report_merge(rep, ths, n);
    report_levels(rep, cfg, ths, n);
    rep->closed = inj_profile_closed(cfg->prof);
    ho_report_saturation(rep, sat_window);
    return rep;
}

void ho_report_free(struct ho_report *rep)
{
    mem_free(rep->tot.by_name);
    mem_free(rep->secs);
    mem_free(rep->points);
    mem_free(rep->levels);
    mem_free(rep->level_counts);
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
    json_key(j, "histogram");
    hist_write_json(j, h);
    json_object_end(j);
}

static void json_level(struct json *j, const struct http_open_level *l,
                       const struct ho_level *counts)
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
    json_key(j, "answered");
    json_int(j, (int64_t)counts->answered);
    json_key(j, "histogram");
    hist_write_json(j, &counts->st.h);
    json_object_end(j);
}

void ho_report_json(struct json *j, const void *arg)
{
    const struct ho_report *rep = arg;
    json_key(j, "http_open");
    json_object_begin(j);
    json_key(j, "scenario");
    json_string(j, rep->scn->name);
    json_key(j, "users_started");
    json_int(j, (int64_t)rep->tot.users_started);
    json_key(j, "users_done");
    json_int(j, (int64_t)rep->tot.users_done);
    json_key(j, "requests_sent");
    json_int(j, (int64_t)rep->tot.requests);
    json_kv(j, "saturation_window_s", rep->sat_window);
    json_key(j, "global");
    json_stat(j, "all", &rep->tot.all, rep->duration_s);
    json_key(j, "requests");
    json_array_begin(j);
    for (unsigned i = 0; i < rep->scn->nnames; i++)
        json_stat(j, rep->scn->names[i], &rep->tot.by_name[i], rep->duration_s);
    json_array_end(j);
    json_key(j, "errors");
    json_object_begin(j);
    uint64_t gen = 0;
    for (unsigned e = 0; e < HO_ERR_COUNT; e++) {
        json_key(j, ho_err_names[e]);
        json_int(j, (int64_t)rep->tot.errs[e]);
        if (ho_err_is_generator(e))
            gen += rep->tot.errs[e];
    }
    json_key(j, "generator_total");
    json_int(j, (int64_t)gen);
    json_key(j, "server_total");
    json_int(j, (int64_t)(rep->tot.all.ko - gen));
    json_key(j, "by_status");
    json_object_begin(j);
    for (unsigned s = 0; s < 600; s++) {
        if (!rep->tot.status_ko[s])
            continue;
        char k[8];
        snprintf(k, sizeof k, "%u", s);
        json_key(j, k);
        json_int(j, (int64_t)rep->tot.status_ko[s]);
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
        json_string(j, ho_sat_cause_name(rep->saturation_cause));
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
        json_string(j, ho_sat_cause_name(v->cause));
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
        json_level(j, &rep->levels[i], &rep->level_counts[i]);
    json_array_end(j);
    json_key(j, "after_levels");
    json_level(j, &rep->levels[rep->nlevels - 1], &rep->level_counts[rep->nlevels - 1]);
    json_key(j, "series");
    json_array_begin(j);
    for (unsigned s = 0; s < rep->nsecs; s++) {
        json_flat(j, true); /* a second a line */
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
        json_key(j, "ended");
        json_int(j, rep->secs[s].ended);
        json_key(j, "lat_us_buckets");
        seclat_write_json(j, rep->secs[s].lat);
        json_object_end(j);
        json_flat(j, false);
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
    for (unsigned e = 0; e < HO_ERR_COUNT; e++)
        if (rep->tot.errs[e]) {
            tt_cell(&tt, "> %s", ho_err_names[e]);
            tt_cell(&tt, "%llu", (unsigned long long)rep->tot.errs[e]);
            tt_cell(&tt, "(%.1f %%)", 100.0 * (double)rep->tot.errs[e] / (double)rep->tot.all.ko);
            tt_cell(&tt, "%s", ho_err_is_generator(e) ? "[load generator]" : "");
        }
    for (unsigned s = 0; s < 600; s++)
        if (rep->tot.status_ko[s]) {
            tt_cell(&tt, ">   status %u", s);
            tt_cell(&tt, "%llu", (unsigned long long)rep->tot.status_ko[s]);
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
        judged += ho_level_judged(&rep->levels[i]);
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

void ho_report_print(FILE *f, const struct ho_report *rep)
{
    static const char *const titles[] = {"request (ms)", "count", "ok", "ko", "min", "mean",
                                         "p50", "p75", "p95", "p99", "max", "req/s"};
    fprintf(f, "---- %s: %llu users started, %llu done, %.1f s ----\n", rep->scn->name,
            (unsigned long long)rep->tot.users_started, (unsigned long long)rep->tot.users_done,
            rep->duration_s);
    struct tt tt;
    tt_init(&tt, "lrrrrrrrrrrr");
    tt_cells(&tt, sizeof titles / sizeof titles[0], titles);
    stat_row(&tt, "Global", &rep->tot.all, rep->duration_s);
    for (unsigned i = 0; i < rep->scn->nnames; i++)
        stat_row(&tt, rep->scn->names[i], &rep->tot.by_name[i], rep->duration_s);
    tt_print(f, &tt);
    tt_free(&tt);
    if (rep->tot.all.ko)
        print_errors(f, rep);
    if (rep->nlevels > 2)
        print_levels(f, rep);
    if (rep->saturation_s >= 0) {
        const struct http_open_level *l = &rep->levels[rep->saturation_level];
        fprintf(f, "saturation point: %.0f active users at second %d (%s; load %g %s",
                rep->points[rep->saturation_s].active, rep->saturation_s,
                ho_sat_cause_name(rep->saturation_cause), rep->saturation_load,
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
