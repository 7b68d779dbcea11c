/* compare.c - results files read back and judged old against new
 * (compare.h). The reading is strict about the JSON (core/json_read.h) and
 * about the few fields it uses, and skips everything else, so that a newer
 * writer's extra fields never break an older compare. */
#include "report/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "report/result_read.h"
#include "report/stats.h"

#define CMP_DEPTH 16

static struct cmp_point *point_of(struct cmp_file *f, const char *name)
{
    for (unsigned i = 0; i < f->n; i++)
        if (!strcmp(f->pts[i].name, name))
            return &f->pts[i];
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->pts = mem_realloc(f->pts, f->cap * sizeof *f->pts);
    }
    struct cmp_point *p = &f->pts[f->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    return p;
}

static void sample_add(struct cmp_samples *s, double v)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->v = mem_realloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = v;
}

/* One element of "benchmarks": an iteration's figures go to its point's
 * samples; a failed one is only counted. */
static bool parse_row(struct rr *ps, struct cmp_file *f)
{
    char name[sizeof f->pts->name] = "", run_type[16] = "", unit[16] = "", message[2] = "";
    double fig[CMP_NFIGURES];
    for (unsigned i = 0; i < CMP_NFIGURES; i++)
        fig[i] = NAN;
    const struct rr_field throughput[] = {RR_NUM("value", &fig[CMP_THROUGHPUT]), RR_STR("unit", unit)};
    const struct rr_field latency[] = {RR_NUM("p50", &fig[CMP_P50]), RR_NUM("p90", &fig[CMP_P90]),
                                    RR_NUM("p99", &fig[CMP_P99]), RR_NUM("p99_9", &fig[CMP_P99_9])};
    const struct rr_field server[] = {RR_NUM("cpu_us_per_op", &fig[CMP_SERVER_CPU])};
    const struct rr_field errors[] = {RR_STR("message", message)};

    const unsigned char *at = ps->r.p;
    if (!rr_object(ps, "a benchmark"))
        return false;
    char key[RR_KEY_CAP];
    int k;
    while ((k = rr_next_key(ps, key)) == 1) {
        bool ok = !strcmp(key, "name")       ? rr_string(ps, name, sizeof name, "name")
                  : !strcmp(key, "run_type") ? rr_string(ps, run_type, sizeof run_type,
                                                           "run_type")
                  : !strcmp(key, "throughput") ? rr_fields(ps, "throughput", throughput, 2)
                  : !strcmp(key, "latency")    ? rr_fields(ps, "latency", latency, 4)
                  : !strcmp(key, "server")     ? rr_fields(ps, "server", server, 1)
                  : !strcmp(key, "errors")     ? rr_fields(ps, "errors", errors, 1)
                                               : rr_skip(ps);
        if (!ok)
            return false;
    }
    if (k < 0)
        return false;
    if (!name[0] || !run_type[0]) {
        ps->r.p = at;
        return rr_fail(ps, "byte %zu: %s", "a benchmark without a name or a run_type");
    }
    if (strcmp(run_type, "iteration"))
        return true;
    struct cmp_point *p = point_of(f, name);
    if (message[0]) {
        p->failed++;
        return true;
    }
    if (!p->unit[0])
        snprintf(p->unit, sizeof p->unit, "%s", unit[0] ? unit : "/s");
    for (unsigned i = 0; i < CMP_NFIGURES; i++)
        if (isfinite(fig[i]))
            sample_add(&p->fig[i], fig[i]);
    return true;
}

static bool parse_benchmarks(struct rr *ps, struct cmp_file *f)
{
    if (!rr_array(ps, "benchmarks"))
        return false;
    int k;
    while ((k = jr_next(&ps->r)) == 1)
        if (!parse_row(ps, f))
            return false;
    return k == 0 || rr_reader_failed(ps);
}

int cmp_parse(struct cmp_file *f, const char *text, size_t len, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    struct rr ps;
    rr_init(&ps, text, len, CMP_DEPTH, err, errlen);
    double schema = NAN;
    bool benchmarks = false;
    const struct rr_field tool[] = {RR_STR("version", f->version)};
    f->num_cpus = NAN;
    const struct rr_field context[] = {RR_STR("date", f->date), RR_STR("host_name", f->host),
                                    RR_NUM("num_cpus", &f->num_cpus), RR_STR("cpu_model", f->cpu_model)};

    if (jr_peek(&ps.r) != JR_OBJECT) {
        const unsigned char *at = ps.r.p;
        if (jr_skip(&ps.r)) {
            ps.r.p = at;
            rr_fail(&ps, "byte %zu: %s", "not a shootout results file (no JSON object)");
        } else {
            rr_reader_failed(&ps);
        }
        return -1;
    }
    bool ok = jr_enter(&ps.r) || rr_reader_failed(&ps);
    char key[RR_KEY_CAP];
    int k = 0;
    while (ok && (k = rr_next_key(&ps, key)) == 1) {
        if (!strcmp(key, "schema_version"))
            ok = rr_number(&ps, &schema, "schema_version");
        else if (!strcmp(key, "benchmarks"))
            ok = benchmarks = parse_benchmarks(&ps, f);
        else if (!strcmp(key, "tool"))
            ok = rr_fields(&ps, "tool", tool, 1);
        else if (!strcmp(key, "context"))
            ok = rr_fields(&ps, "context", context, sizeof context / sizeof context[0]);
        else
            ok = rr_skip(&ps);
    }
    ok = ok && k == 0 && (jr_end(&ps.r) || rr_reader_failed(&ps));
    if (ok && (schema != 1 || !benchmarks)) {
        if (isnan(schema) || !benchmarks)
            rr_fail(&ps, "byte %zu: %s", "not a shootout results file (no schema_version or "
                                      "no benchmarks)");
        else
            rr_fail(&ps, "byte %zu: %s", "schema_version is not 1, the one this shootout reads");
        ok = false;
    }
    if (!ok) {
        cmp_file_free(f);
        return -1;
    }
    return 0;
}

/* cmp_parse for rr_load. */
static int cmp_parse_text(void *f, const char *text, size_t len, char *err, size_t errlen)
{
    return cmp_parse(f, text, len, err, errlen);
}

int cmp_load(struct cmp_file *f, const char *path, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    return rr_load(path, cmp_parse_text, f, err, errlen);
}

void cmp_file_free(struct cmp_file *f)
{
    for (unsigned i = 0; i < f->n; i++)
        for (unsigned k = 0; k < CMP_NFIGURES; k++)
            mem_free(f->pts[i].fig[k].v);
    mem_free(f->pts);
    memset(f, 0, sizeof *f);
}

/* ---- judging ------------------------------------------------------------------ */

static const char *const figure_names[CMP_NFIGURES] = {
    "throughput", "p50", "p90", "p99", "p99.9", "server CPU",
};

const char *cmp_figure_name(enum cmp_figure fig) { return figure_names[fig]; }

const char *cmp_figure_unit(const struct cmp_delta *d)
{
    return d->fig == CMP_THROUGHPUT ? d->old->unit : d->fig == CMP_SERVER_CPU ? "us/op" : "us";
}

static double median_of(const struct cmp_samples *s)
{
    double *v = mem_alloc(s->n * sizeof *v);
    memcpy(v, s->v, s->n * sizeof *v);
    double m = stats_median(v, s->n);
    mem_free(v);
    return m;
}

static void judge(struct cmp_delta *d, const struct cmp_samples *o, const struct cmp_samples *n,
                  const struct cmp_options *opt)
{
    d->n_old = o->n;
    d->n_new = n->n;
    d->old_median = median_of(o);
    d->new_median = median_of(n);
    d->ratio = d->old_median != 0 ? d->new_median / d->old_median : NAN;
    d->delta_pct = (d->ratio - 1) * 100;
    struct stats_mwu t = stats_mann_whitney(n->v, n->n, o->v, o->n);
    d->u = t.u;
    d->p = t.p;
    bool higher_better = d->fig == CMP_THROUGHPUT;
    if (stats_min_p(o->n, n->n) > opt->alpha)
        d->verdict = CMP_FEW;
    else if (!(t.p < opt->alpha) || !(fabs(d->delta_pct) >= opt->noise_pct))
        d->verdict = CMP_SAME; /* also when old is 0: no ratio to judge */
    else
        d->verdict = (d->new_median > d->old_median) == higher_better ? CMP_BETTER : CMP_WORSE;
    d->regression =
        d->verdict == CMP_WORSE && opt->fail_pct >= 0 && fabs(d->delta_pct) > opt->fail_pct;
}

static const struct cmp_point *find_point(const struct cmp_file *f, const char *name)
{
    for (unsigned i = 0; i < f->n; i++)
        if (!strcmp(f->pts[i].name, name))
            return &f->pts[i];
    return NULL;
}

/* The points of a missing from b, into a new array. */
static const struct cmp_point **only_in(const struct cmp_file *a, const struct cmp_file *b,
                                        unsigned *n)
{
    const struct cmp_point **list = mem_alloc((a->n + 1) * sizeof *list);
    *n = 0;
    for (unsigned i = 0; i < a->n; i++)
        if (!find_point(b, a->pts[i].name))
            list[(*n)++] = &a->pts[i];
    return list;
}

/* Appends "what: a vs b" to msg when both are known and differ. */
static void differ_str(char *msg, size_t len, const char *what, const char *a, const char *b)
{
    size_t at = strlen(msg);
    if (a[0] && b[0] && strcmp(a, b) && at < len)
        snprintf(msg + at, len - at, "%s%s %s vs %s", at ? "; " : "", what, a, b);
}

bool cmp_machines_differ(const struct cmp_file *a, const struct cmp_file *b, char *msg, size_t len)
{
    msg[0] = '\0';
    differ_str(msg, len, "host", a->host, b->host);
    if (!isnan(a->num_cpus) && !isnan(b->num_cpus) && a->num_cpus != b->num_cpus) {
        char na[24], nb[24];
        snprintf(na, sizeof na, "%.0f", a->num_cpus);
        snprintf(nb, sizeof nb, "%.0f", b->num_cpus);
        differ_str(msg, len, "CPUs", na, nb);
    }
    differ_str(msg, len, "CPU", a->cpu_model, b->cpu_model);
    return msg[0] != '\0';
}

void cmp_compare(struct cmp_result *r, const struct cmp_file *old, const struct cmp_file *new,
                 const struct cmp_options *opt)
{
    memset(r, 0, sizeof *r);
    r->old = old;
    r->new = new;
    r->opt = *opt;
    r->unjudged = mem_alloc((2 * old->n + 1) * sizeof *r->unjudged);
    for (unsigned i = 0; i < old->n; i++) {
        const struct cmp_point *o = &old->pts[i], *n = find_point(new, o->name);
        unsigned before = r->n;
        for (unsigned k = 0; n && k < CMP_NFIGURES; k++) {
            if (!o->fig[k].n || !n->fig[k].n)
                continue; /* a figure the point has on one side only: nothing to judge */
            if (r->n == r->cap) {
                r->cap = r->cap ? 2 * r->cap : 32;
                r->d = mem_realloc(r->d, r->cap * sizeof *r->d);
            }
            struct cmp_delta *d = &r->d[r->n++];
            *d = (struct cmp_delta){.old = o, .new = n, .fig = k};
            judge(d, &o->fig[k], &n->fig[k], opt);
            r->regressions += d->regression;
            r->few |= d->verdict == CMP_FEW;
        }
        if (n && r->n == before) {
            r->unjudged[2 * r->n_unjudged] = o;
            r->unjudged[2 * r->n_unjudged++ + 1] = n;
        }
    }
    r->only_old = only_in(old, new, &r->n_only_old);
    r->only_new = only_in(new, old, &r->n_only_new);
}

void cmp_result_free(struct cmp_result *r)
{
    mem_free(r->d);
    mem_free(r->only_old);
    mem_free(r->only_new);
    mem_free(r->unjudged);
    memset(r, 0, sizeof *r);
}
