/* ho_merge.c - http-open's shards read back and put together (see
 * ho_merge.h). The reader takes what ho_report_json writes and the merge
 * needs, and skips the figures it recomputes. */
#include "load/http/ho_merge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "load/http/ho_report.h"
#include "load/http/inject.h"
#include "report/hist.h"
#include "report/result_read.h"
#include "report/seclat.h"

#define HO_MERGE_MAX_SECS (31u * 86400) /* longer than any run may last */
#define HO_MERGE_NAME 256

/* ---- reading ------------------------------------------------------------- */

/* A count: a whole number of at most 2^53 (exact in a double). */
static bool count(struct rr *ps, uint64_t *out, const char *what)
{
    double v;
    const unsigned char *at = ps->r.p;
    if (!rr_number(ps, &v, what))
        return false;
    if (!(v >= 0 && v <= 9007199254740992.0 && v == floor(v))) {
        ps->r.p = at;
        return rr_fail(ps, "byte %zu: %s is not a count", what);
    }
    *out = (uint64_t)v;
    return true;
}

static bool count32(struct rr *ps, uint32_t *out, const char *what)
{
    uint64_t v;
    if (!count(ps, &v, what))
        return false;
    if (v > UINT32_MAX)
        return rr_fail(ps, "byte %zu: %s is too large", what);
    *out = (uint32_t)v;
    return true;
}

/* A finite number. */
static bool real(struct rr *ps, double *out, const char *what)
{
    const unsigned char *at = ps->r.p;
    if (!rr_number(ps, out, what))
        return false;
    if (!isfinite(*out)) {
        ps->r.p = at;
        return rr_fail(ps, "byte %zu: %s is not a finite number", what);
    }
    return true;
}

/* A histogram, once. */
static bool histogram(struct rr *ps, struct hist *h, bool *seen)
{
    if (*seen)
        return rr_fail(ps, "byte %zu: %s", "a second histogram");
    *seen = true;
    return hist_read_json(ps, h);
}

/* {"name": ..., "ok": N, "ko": N, "histogram": {...}} (global and the
 * requests); the name into name when it is wanted. */
static bool read_stat(struct rr *ps, struct ho_stat *st, char *name, size_t cap)
{
    if (!rr_object(ps, "a request's statistics"))
        return false;
    char key[RR_KEY_CAP];
    int k;
    bool ok = true, seen = false, named = false;
    while (ok && (k = rr_next_key(ps, key)) == 1)
        ok = !strcmp(key, "ok")          ? count(ps, &st->ok, "ok")
             : !strcmp(key, "ko")        ? count(ps, &st->ko, "ko")
             : !strcmp(key, "histogram") ? histogram(ps, &st->h, &seen)
             : !strcmp(key, "name") && name ? (named = true, rr_string(ps, name, cap, "name"))
                                            : rr_skip(ps);
    if (!ok || k != 0)
        return false;
    if (!seen || (name && !named) || st->ok + st->ko != st->h.count)
        return rr_fail(ps, "byte %zu: %s", "request statistics without their name, histogram, "
                                           "or with ok + ko not its count");
    return true;
}

static bool read_requests(struct rr *ps, struct ho_report *rep, struct scenario *scn)
{
    if (!rr_array(ps, "requests"))
        return false;
    int e;
    unsigned cap = 0;
    while ((e = jr_next(&ps->r)) == 1) {
        if (scn->nnames == cap) {
            cap = cap ? 2 * cap : 16;
            scn->names = mem_realloc(scn->names, cap * sizeof *scn->names);
            rep->tot.by_name = mem_realloc(rep->tot.by_name, cap * sizeof *rep->tot.by_name);
        }
        char name[HO_MERGE_NAME] = "";
        struct ho_stat *st = &rep->tot.by_name[scn->nnames];
        memset(st, 0, sizeof *st);
        if (!read_stat(ps, st, name, sizeof name))
            return false;
        scn->names[scn->nnames++] = mem_strdup(name);
    }
    return e == 0 || rr_reader_failed(ps);
}

static bool read_by_status(struct rr *ps, struct ho_report *rep)
{
    if (!rr_object(ps, "errors.by_status"))
        return false;
    char key[RR_KEY_CAP];
    int k;
    while ((k = rr_next_key(ps, key)) == 1) {
        char *end;
        unsigned long s = strtoul(key, &end, 10);
        if (!key[0] || *end || s >= 600)
            return rr_fail(ps, "byte %zu: %s", "a status that is not one below 600");
        if (!count(ps, &rep->tot.status_ko[s], "a status's count"))
            return false;
    }
    return k == 0;
}

static bool read_errors(struct rr *ps, struct ho_report *rep)
{
    if (!rr_object(ps, "errors"))
        return false;
    char key[RR_KEY_CAP];
    int k;
    bool ok = true;
    while (ok && (k = rr_next_key(ps, key)) == 1) {
        unsigned e = 0;
        while (e < HO_ERR_COUNT && strcmp(key, ho_err_names[e]))
            e++;
        ok = e < HO_ERR_COUNT              ? count(ps, &rep->tot.errs[e], "an error class's count")
             : !strcmp(key, "by_status") ? read_by_status(ps, rep)
                                         : rr_skip(ps);
    }
    return ok && k == 0;
}

static bool read_postgres(struct rr *ps, struct ho_report *rep)
{
    double pm = NAN, procs = NAN;
    rep->pg_cpu_pct = rep->pg_rss_kb = NAN;
    const struct rr_field fs[] = {RR_NUM("postmaster", &pm), RR_NUM("processes_max", &procs),
                                  RR_NUM("cpu_pct", &rep->pg_cpu_pct),
                                  RR_NUM("rss_max_kb", &rep->pg_rss_kb)};
    if (!rr_fields(ps, "postgres", fs, 4))
        return false;
    if (!(pm >= 1 && pm < 1e9 && procs >= 0 && procs < 1e9 && isfinite(rep->pg_cpu_pct) &&
          isfinite(rep->pg_rss_kb)))
        return rr_fail(ps, "byte %zu: %s", "a postgres object without its figures");
    rep->pg = true;
    rep->pg_postmaster = (int)pm;
    rep->pg_procs = (unsigned)procs;
    return true;
}

/* A level's step kind as the report names it: a static text. */
static const char *kind_text(const char *kind)
{
    for (int k = INJ_NOTHING_FOR; k <= INJ_STAIRS_CONC; k++)
        if (!strcmp(kind, inj_kind_name((enum inj_kind)k)))
            return inj_kind_name((enum inj_kind)k);
    return NULL;
}

static bool read_level(struct rr *ps, struct http_open_level *l, struct ho_level *c, bool after)
{
    if (!rr_object(ps, "a level"))
        return false;
    char key[RR_KEY_CAP], kind[32] = "", unit[32] = "";
    double step = 0, stair = 0;
    int k;
    bool ok = true, seen = false;
    while (ok && (k = rr_next_key(ps, key)) == 1) {
        ok = !strcmp(key, "step")            ? real(ps, &step, "a level's step")
             : !strcmp(key, "stair")         ? rr_number(ps, &stair, "a level's stair")
             : !strcmp(key, "kind")          ? rr_string(ps, kind, sizeof kind, "a level's kind")
             : !strcmp(key, "load_unit")     ? rr_string(ps, unit, sizeof unit, "load_unit")
             : !strcmp(key, "load_from")     ? real(ps, &l->load_from, "load_from")
             : !strcmp(key, "load_to")       ? real(ps, &l->load_to, "load_to")
             : !strcmp(key, "start_s")       ? real(ps, &l->start_s, "start_s")
             : !strcmp(key, "duration_s")    ? real(ps, &l->dur_s, "a level's duration_s")
             : !strcmp(key, "users_started") ? count(ps, &c->started, "a level's users_started")
             : !strcmp(key, "requests")      ? count(ps, &c->sent, "a level's requests")
             : !strcmp(key, "ok")            ? count(ps, &c->st.ok, "a level's ok")
             : !strcmp(key, "ko")            ? count(ps, &c->st.ko, "a level's ko")
             : !strcmp(key, "ko_generator")  ? count(ps, &c->ko_gen, "a level's ko_generator")
             : !strcmp(key, "answered")      ? count(ps, &c->answered, "a level's answered")
             : !strcmp(key, "histogram")     ? histogram(ps, &c->st.h, &seen)
                                             : rr_skip(ps);
    }
    if (!ok || k != 0)
        return false;
    l->kind = after ? "after" : kind_text(kind);
    if (!seen || !l->kind || (!after && !(step >= 1 && step <= INJ_MAX_STEPS)) ||
        !(isnan(stair) || (stair >= 0 && stair <= INJ_MAX_LEVELS && stair == floor(stair))) ||
        !(l->dur_s >= 0) || c->st.ok + c->st.ko != c->st.h.count || c->ko_gen > c->st.ko)
        return rr_fail(ps, "byte %zu: %s", "a level without its kind, step, histogram, or with "
                                           "ok + ko not its count");
    l->step = after ? 0 : (unsigned)step;
    l->stair = isnan(stair) ? 0 : (unsigned)stair;
    l->closed = !strcmp(unit, "concurrent users");
    return true;
}

static void grow_levels(struct ho_report *rep, unsigned *cap)
{
    if (rep->nlevels < *cap)
        return;
    *cap = *cap ? 2 * *cap : 8;
    rep->levels = mem_realloc(rep->levels, *cap * sizeof *rep->levels);
    rep->level_counts = mem_realloc(rep->level_counts, *cap * sizeof *rep->level_counts);
    memset(rep->levels + rep->nlevels, 0, (*cap - rep->nlevels) * sizeof *rep->levels);
    memset(rep->level_counts + rep->nlevels, 0,
           (*cap - rep->nlevels) * sizeof *rep->level_counts);
}

static bool read_levels(struct rr *ps, struct ho_report *rep, unsigned *cap)
{
    if (!rr_array(ps, "levels"))
        return false;
    int e;
    while ((e = jr_next(&ps->r)) == 1) {
        if (rep->nlevels == INJ_MAX_SEGMENTS)
            return rr_fail(ps, "byte %zu: %s", "more levels than a profile has");
        grow_levels(rep, cap);
        if (!read_level(ps, &rep->levels[rep->nlevels], &rep->level_counts[rep->nlevels], false))
            return false;
        rep->nlevels++;
    }
    return e == 0 || rr_reader_failed(ps);
}

static bool read_sec(struct rr *ps, struct ho_sec *s)
{
    if (!rr_object(ps, "a second of the series"))
        return false;
    char key[RR_KEY_CAP];
    int k;
    bool ok = true;
    while (ok && (k = rr_next_key(ps, key)) == 1)
        ok = !strcmp(key, "started")                  ? count32(ps, &s->started, "started")
             : !strcmp(key, "ended")                  ? count32(ps, &s->ended, "ended")
             : !strcmp(key, "requests")               ? count32(ps, &s->sent, "requests")
             : !strcmp(key, "responses_ok")           ? count32(ps, &s->ok, "responses_ok")
             : !strcmp(key, "responses_ko")           ? count32(ps, &s->ko, "responses_ko")
             : !strcmp(key, "responses_ko_generator") ? count32(ps, &s->ko_gen, "ko_generator")
             : !strcmp(key, "lat_us_buckets")         ? seclat_read_json(ps, s->lat)
                                                      : rr_skip(ps);
    if (!ok || k != 0)
        return false;
    if (s->ko_gen > s->ko)
        return rr_fail(ps, "byte %zu: %s", "a second with more generator KO than KO");
    return true;
}

static bool read_series(struct rr *ps, struct ho_report *rep)
{
    if (!rr_array(ps, "http_open.series"))
        return false;
    int e;
    unsigned cap = 0;
    while ((e = jr_next(&ps->r)) == 1) {
        if (rep->nsecs == HO_MERGE_MAX_SECS)
            return rr_fail(ps, "byte %zu: %s", "a series longer than any run");
        if (rep->nsecs == cap) {
            cap = cap ? 2 * cap : 64;
            rep->secs = mem_realloc(rep->secs, cap * sizeof *rep->secs);
        }
        struct ho_sec *s = &rep->secs[rep->nsecs];
        memset(s, 0, sizeof *s);
        if (!read_sec(ps, s))
            return false;
        rep->nsecs++;
    }
    return e == 0 || rr_reader_failed(ps);
}

struct ho_report *ho_merge_read(struct rr *ps)
{
    struct ho_report *rep = mem_calloc(1, sizeof *rep);
    struct scenario *scn = mem_calloc(1, sizeof *scn);
    rep->scn = scn;
    rep->saturation_s = -1;
    rep->stopped_after = -1;
    char name[HO_MERGE_NAME] = "", key[RR_KEY_CAP];
    double window = NAN;
    unsigned cap = 0, after_at = 0;
    int k = 0;
    bool ok = rr_object(ps, "http_open"), global = false, after = false, requests = false;
    while (ok && (k = rr_next_key(ps, key)) == 1) {
        if (!strcmp(key, "global"))
            ok = global = read_stat(ps, &rep->tot.all, NULL, 0);
        else if (!strcmp(key, "after_levels")) {
            if (after) {
                ok = rr_fail(ps, "byte %zu: %s", "a second after_levels");
            } else {
                grow_levels(rep, &cap);
                ok = after = read_level(ps, &rep->levels[rep->nlevels],
                                        &rep->level_counts[rep->nlevels], true);
                after_at = rep->nlevels++;
            }
        } else if (!strcmp(key, "levels"))
            ok = read_levels(ps, rep, &cap);
        else if (!strcmp(key, "requests"))
            ok = requests = read_requests(ps, rep, scn);
        else if (!strcmp(key, "scenario"))
            ok = rr_string(ps, name, sizeof name, "scenario");
        else if (!strcmp(key, "users_started"))
            ok = count(ps, &rep->tot.users_started, "users_started");
        else if (!strcmp(key, "users_done"))
            ok = count(ps, &rep->tot.users_done, "users_done");
        else if (!strcmp(key, "requests_sent"))
            ok = count(ps, &rep->tot.requests, "requests_sent");
        else if (!strcmp(key, "saturation_window_s"))
            ok = real(ps, &window, "saturation_window_s");
        else if (!strcmp(key, "server_cpu_pct"))
            ok = real(ps, &rep->server_cpu_pct, "server_cpu_pct");
        else if (!strcmp(key, "errors"))
            ok = read_errors(ps, rep);
        else if (!strcmp(key, "postgres"))
            ok = read_postgres(ps, rep);
        else if (!strcmp(key, "series"))
            ok = read_series(ps, rep);
        else
            ok = rr_skip(ps);
    }
    ok = ok && k == 0;
    if (ok && (!name[0] || !global || !requests || !after || !(window >= 1 && window <= 3600)))
        ok = rr_fail(ps, "byte %zu: %s", "an http_open object without its scenario, global "
                                         "figures, requests, levels or saturation window "
                                         "(written by a shootout older than merge?)");
    if (!ok) {
        ho_merge_free(rep);
        return NULL;
    }
    /* The time after the profile goes last, as the report keeps it. */
    unsigned a = after_at, last = rep->nlevels - 1;
    struct http_open_level l = rep->levels[a];
    struct ho_level c = rep->level_counts[a];
    memmove(&rep->levels[a], &rep->levels[a + 1], (last - a) * sizeof l);
    memmove(&rep->level_counts[a], &rep->level_counts[a + 1], (last - a) * sizeof c);
    rep->levels[last] = l;
    rep->level_counts[last] = c;
    rep->sat_window = (unsigned)window;
    scn->name = mem_strdup(name);
    return rep;
}

/* ---- merging ------------------------------------------------------------- */

/* Whether b is a part of the run a is a part of. */
static bool same_run(const struct ho_report *a, const struct ho_report *b)
{
    if (strcmp(a->scn->name, b->scn->name) || a->scn->nnames != b->scn->nnames ||
        a->nlevels != b->nlevels || a->sat_window != b->sat_window)
        return false;
    for (unsigned i = 0; i < a->scn->nnames; i++)
        if (strcmp(a->scn->names[i], b->scn->names[i]))
            return false;
    for (unsigned i = 0; i < a->nlevels; i++) {
        const struct http_open_level *x = &a->levels[i], *y = &b->levels[i];
        if (strcmp(x->kind, y->kind) || x->step != y->step || x->stair != y->stair ||
            x->closed != y->closed || x->start_s != y->start_s)
            return false;
    }
    return true;
}

/* The levels summed: counts and histograms, the shards' shares of the
 * load, the longest duration; figures recomputed. */
static void merge_levels(struct ho_report *m, const struct ho_report *const *in, unsigned n)
{
    m->nlevels = in[0]->nlevels;
    m->levels = mem_calloc(m->nlevels, sizeof *m->levels);
    m->level_counts = mem_calloc(m->nlevels, sizeof *m->level_counts);
    for (unsigned i = 0; i < m->nlevels; i++) {
        struct http_open_level *l = &m->levels[i];
        struct ho_level *c = &m->level_counts[i];
        *l = in[0]->levels[i];
        l->load_from = l->load_to = l->dur_s = 0;
        for (unsigned s = 0; s < n; s++) {
            const struct http_open_level *x = &in[s]->levels[i];
            l->load_from += x->load_from;
            l->load_to += x->load_to;
            l->dur_s = fmax(l->dur_s, x->dur_s);
            ho_level_add(c, &in[s]->level_counts[i]);
        }
        ho_level_stats(c, l);
    }
    ho_level_saturation(m->levels, m->nlevels, &m->level_sat);
}

struct ho_report *ho_merge_reports(const struct ho_report *const *in, const unsigned *off,
                                   unsigned n, double duration_s, char *err, size_t errlen)
{
    for (unsigned i = 1; i < n; i++)
        if (!same_run(in[0], in[i])) {
            snprintf(err, errlen, "their http-open reports are not of one run (another "
                                  "scenario, request names or load levels)");
            return NULL;
        }
    struct ho_report *m = mem_calloc(1, sizeof *m);
    const struct scenario *s0 = in[0]->scn;
    struct scenario *scn = mem_calloc(1, sizeof *scn);
    scn->name = mem_strdup(s0->name);
    scn->nnames = s0->nnames;
    scn->names = mem_calloc(s0->nnames ? s0->nnames : 1, sizeof *scn->names);
    for (unsigned i = 0; i < s0->nnames; i++)
        scn->names[i] = mem_strdup(s0->names[i]);
    m->scn = scn;
    m->tot.by_name = mem_calloc(s0->nnames ? s0->nnames : 1, sizeof *m->tot.by_name);
    m->duration_s = duration_s;
    m->closed = in[0]->levels[0].closed;
    m->stopped_after = -1;
    for (unsigned s = 0; s < n; s++) {
        const struct ho_report *r = in[s];
        ho_totals_add(&m->tot, &r->tot, s0->nnames);
        /* One server seen by every shard: the most any saw. */
        m->server_cpu_pct = fmax(m->server_cpu_pct, r->server_cpu_pct);
        if (r->pg && (!m->pg || r->pg_cpu_pct > m->pg_cpu_pct)) {
            m->pg = true;
            m->pg_postmaster = r->pg_postmaster;
            m->pg_procs = r->pg_procs;
            m->pg_cpu_pct = r->pg_cpu_pct;
            m->pg_rss_kb = r->pg_rss_kb;
        }
        if (r->nsecs && off[s] + r->nsecs > m->nsecs)
            m->nsecs = off[s] + r->nsecs;
    }
    /* Each second by wall-clock second. */
    m->secs = mem_calloc(m->nsecs ? m->nsecs : 1, sizeof *m->secs);
    for (unsigned s = 0; s < n; s++)
        for (unsigned t = 0; t < in[s]->nsecs; t++)
            ho_sec_add(&m->secs[off[s] + t], &in[s]->secs[t]);
    m->points = mem_calloc(m->nsecs ? m->nsecs : 1, sizeof *m->points);
    ho_series_points(m->secs, m->nsecs, m->points);
    merge_levels(m, in, n);
    ho_report_saturation(m, in[0]->sat_window);
    return m;
}

void ho_merge_free(struct ho_report *rep)
{
    if (!rep)
        return;
    /* A report of ours owns its scenario, which has only names. */
    struct scenario *scn = (struct scenario *)rep->scn;
    scn_free(scn);
    mem_free(scn);
    ho_report_free(rep);
}
