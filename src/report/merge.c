/* merge.c - shards' results files read back and put together (merge.h).
 * The reading is strict about the JSON (core/json_read.h, through
 * result_read.h) and about the fields it uses, and skips the rest. */
#include "report/merge.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/mem.h"
#include "load/http/ho_merge.h"
#include "load/http/ho_report.h"
#include "report/result_read.h"
#include "report/seclat.h"

#define MERGE_DEPTH 16
#define MERGE_TEXT 256 /* longest definition or name kept */

/* ---- reading --------------------------------------------------------------- */

struct mreader {
    struct rr ps;
    struct merge_file *f;
};

/* A copy of s that lives as long as the file; NULL for "". */
static const char *keep(struct merge_file *f, const char *s)
{
    if (!s[0])
        return NULL;
    if (f->nstrs == f->capstrs) {
        f->capstrs = f->capstrs ? 2 * f->capstrs : 32;
        f->strs = mem_realloc(f->strs, f->capstrs * sizeof *f->strs);
    }
    size_t len = strlen(s) + 1;
    f->strs[f->nstrs] = mem_alloc(len);
    memcpy(f->strs[f->nstrs], s, len);
    return f->strs[f->nstrs++];
}

/* The file keeps rep, to free it with itself. */
static void keep_report(struct merge_file *f, struct ho_report *rep)
{
    if (f->nreports == f->capreports) {
        f->capreports = f->capreports ? 2 * f->capreports : 8;
        f->reports = mem_realloc(f->reports, f->capreports * sizeof *f->reports);
    }
    f->reports[f->nreports++] = rep;
}

/* http-open's object, for ho_report_json to write once merged. */
static bool read_http_open(struct mreader *m, struct result_row *row)
{
    if (row->extra_arg)
        return rr_fail(&m->ps, "byte %zu: %s", "a second http_open object");
    struct ho_report *rep = ho_merge_read(&m->ps);
    if (!rep)
        return false;
    keep_report(m->f, rep);
    row->extra_json = ho_report_json;
    row->extra_arg = rep;
    return true;
}

/* A number that must be there and finite (null is the writer's NaN). */
static bool number(struct mreader *m, double *out, const char *what)
{
    const unsigned char *at = m->ps.r.p;
    if (!rr_number(&m->ps, out, what))
        return false;
    if (!isfinite(*out)) {
        m->ps.r.p = at;
        return rr_fail(&m->ps, "byte %zu: %s is not a finite number", what);
    }
    return true;
}

static bool read_config(struct mreader *m, struct result_row *row)
{
    if (!rr_object(&m->ps, "config"))
        return false;
    char key[RR_KEY_CAP];
    int k;
    while ((k = rr_next_key(&m->ps, key)) == 1) {
        double v;
        if (!key[0] || row->nconfig == RESULT_MAX_CONFIG)
            return rr_fail(&m->ps, "byte %zu: %s", "a config key too long, or too many of them");
        if (!number(m, &v, "a config value"))
            return false;
        row->config[row->nconfig++] = (struct result_param){keep(m->f, key), v};
    }
    return k == 0;
}

/* {"value": V, "unit": "msg/s", "definition": "..."}: *def is kept. */
static bool read_throughput(struct mreader *m, double *value, const char **def, char *unit,
                            size_t unit_cap, const char *what)
{
    char d[MERGE_TEXT] = "", u[16] = "";
    *value = NAN;
    const struct rr_field fs[] = {RR_NUM("value", value), RR_STR("unit", u),
                                  RR_STR("definition", d)};
    if (!rr_fields(&m->ps, what, fs, 3))
        return false;
    if (!isfinite(*value))
        return rr_fail(&m->ps, "byte %zu: %s has no finite value", what);
    *def = keep(m->f, d[0] ? d : "?");
    if (unit)
        snprintf(unit, unit_cap, "%s", u);
    return true;
}

static bool read_phase(struct mreader *m, double *duration, double *tp, const char **def,
                       const char *what)
{
    if (!rr_object(&m->ps, what))
        return false;
    char key[RR_KEY_CAP];
    int k;
    while ((k = rr_next_key(&m->ps, key)) == 1) {
        bool ok = !strcmp(key, "duration_s")   ? number(m, duration, "a phase's duration_s")
                  : !strcmp(key, "throughput") ? read_throughput(m, tp, def, NULL, 0, what)
                                               : rr_skip(&m->ps);
        if (!ok)
            return false;
    }
    return k == 0;
}

static bool read_phases(struct mreader *m, struct result_row *row)
{
    if (!rr_object(&m->ps, "phases"))
        return false;
    char key[RR_KEY_CAP];
    int k;
    while ((k = rr_next_key(&m->ps, key)) == 1) {
        bool ok = !strcmp(key, "publish") ? read_phase(m, &row->publish_s, &row->throughput_publish,
                                                       &row->publish_def, "the publish phase")
                  : !strcmp(key, "drain") ? read_phase(m, &row->drain_s, &row->throughput_drain,
                                                       &row->drain_def, "the drain phase")
                                          : rr_skip(&m->ps);
        if (!ok)
            return false;
    }
    return k == 0;
}

/* The latency object: only its histogram is needed, the rest is
 * recomputed from it. */
static bool read_latency(struct mreader *m, struct result_row *row)
{
    enum jr_type t = jr_peek(&m->ps.r);
    if (t == JR_NULL)
        return jr_literal(&m->ps.r) || rr_reader_failed(&m->ps);
    if (t != JR_OBJECT)
        return rr_fail(&m->ps, "byte %zu: %s is not an object", "latency");
    if (!jr_enter(&m->ps.r))
        return rr_reader_failed(&m->ps);
    row->has_latency = true;
    char key[RR_KEY_CAP];
    int k;
    while ((k = rr_next_key(&m->ps, key)) == 1) {
        if (strcmp(key, "histogram")) {
            if (!rr_skip(&m->ps))
                return false;
            continue;
        }
        if (row->lat_hist)
            return rr_fail(&m->ps, "byte %zu: %s", "a second latency histogram");
        row->lat_hist = mem_alloc(sizeof *row->lat_hist);
        if (!hist_read_json(&m->ps, row->lat_hist))
            return false;
    }
    return k == 0;
}

/* A point of the series: its throughput, and its latency buckets when
 * the series has them (every point or none). */
static bool read_point(struct mreader *m, struct result_row *row, unsigned cap)
{
    if (!rr_object(&m->ps, "a series point"))
        return false;
    struct result_series *sr = &row->series;
    unsigned i = sr->n;
    double v = NAN;
    bool ok = true, lat = false;
    char key[RR_KEY_CAP];
    int k;
    while (ok && (k = rr_next_key(&m->ps, key)) == 1) {
        if (!strcmp(key, "throughput")) {
            ok = rr_number(&m->ps, &v, "a series point's throughput");
        } else if (!strcmp(key, "lat_us_buckets")) {
            if (lat || (i > 0 && !row->series_lat)) {
                ok = rr_fail(&m->ps, "byte %zu: %s", "latency buckets twice, or in some points "
                                                     "only");
            } else {
                if (!row->series_lat)
                    row->series_lat = mem_calloc(cap, sizeof *row->series_lat);
                ok = lat = seclat_read_json(&m->ps, row->series_lat[i]);
            }
        } else {
            ok = rr_skip(&m->ps);
        }
    }
    if (!ok || k != 0)
        return false;
    if (!isfinite(v) || v < 0)
        return rr_fail(&m->ps, "byte %zu: %s", "a series point without its throughput");
    if (!lat && row->series_lat)
        return rr_fail(&m->ps, "byte %zu: %s", "latency buckets in some points only");
    sr->points[i] = (struct result_point){.responses = v};
    sr->n++;
    return true;
}

static bool read_series(struct mreader *m, struct result_row *row)
{
    if (!rr_object(&m->ps, "series"))
        return false;
    char key[RR_KEY_CAP];
    int k;
    unsigned cap = 0;
    struct result_series *sr = &row->series;
    while ((k = rr_next_key(&m->ps, key)) == 1) {
        if (strcmp(key, "points") || sr->n) {
            if (!rr_skip(&m->ps))
                return false;
            continue;
        }
        if (!rr_array(&m->ps, "series.points"))
            return false;
        int e;
        while ((e = jr_next(&m->ps.r)) == 1) {
            if (sr->n == cap) {
                cap = cap ? 2 * cap : 64;
                sr->points = mem_realloc(sr->points, cap * sizeof *sr->points);
                if (row->series_lat) {
                    row->series_lat = mem_realloc(row->series_lat, cap * sizeof *row->series_lat);
                    memset(row->series_lat + sr->n, 0, (cap - sr->n) * sizeof *row->series_lat);
                }
            }
            if (!read_point(m, row, cap))
                return false;
        }
        if (e < 0)
            return rr_reader_failed(&m->ps);
    }
    return k == 0;
}

static bool read_shard(struct mreader *m, struct result_row *row)
{
    double count = NAN, index = NAN, threads = NAN;
    struct result_shard *s = &row->shard;
    s->start_at = s->window_start = s->window_end = NAN;
    const struct rr_field fs[] = {RR_NUM("count", &count),
                                  RR_NUM("index", &index),
                                  RR_NUM("threads", &threads),
                                  RR_NUM("start_at", &s->start_at),
                                  RR_NUM("window_start", &s->window_start),
                                  RR_NUM("window_end", &s->window_end)};
    const unsigned char *at = m->ps.r.p;
    if (!rr_fields(&m->ps, "shard", fs, 6))
        return false;
    if (!(count >= 1 && count <= MERGE_MAX_SHARDS && count == floor(count) && index >= 0 &&
          index < count && index == floor(index) && threads >= 1 && threads < 1e6 &&
          isfinite(s->start_at) && s->window_start > 0 && s->window_end >= s->window_start)) {
        m->ps.r.p = at;
        return rr_fail(&m->ps, "byte %zu: %s", "a shard object without a valid index, count, "
                                               "threads, start_at and window");
    }
    s->count = (unsigned)count;
    s->index = (unsigned)index;
    s->threads = (unsigned)threads;
    return true;
}

/* One element of "benchmarks"; an iteration row is kept, others skipped. */
static bool read_row(struct mreader *m)
{
    struct result_row row = {.series.saturation_s = -1};
    char name[sizeof row.name] = "", experiment[64] = "", run_type[16] = "", unit[16] = "";
    char message[sizeof row.error] = "", op[MERGE_TEXT] = "";
    double reps = NAN, rep_index = NAN, pid = NAN;
    const struct rr_field messages[] = {RR_NUM("sent", &row.sent), RR_NUM("received", &row.received),
                                        RR_NUM("lost", &row.lost)};
    const struct rr_field server[] = {
        RR_NUM("pid", &pid), RR_NUM("cpu_s", &row.server_cpu_s),
        RR_NUM("cpu_us_per_op", &row.server_cpu_us_per_op),
        RR_NUM("rss_max_kb", &row.server_rss_max_kb), RR_NUM("threads_max", &row.server_threads_max)};
    const struct rr_field client[] = {RR_NUM("cpu_s", &row.client_cpu_s),
                                      RR_NUM("cpu_us_per_op", &row.client_cpu_us_per_op),
                                      RR_STR("op", op)};
    const struct rr_field errors[] = {
        RR_NUM("connect", &row.err_connect), RR_NUM("timeout", &row.err_timeout),
        RR_NUM("protocol", &row.err_protocol), RR_NUM("status", &row.err_status),
        RR_NUM("closed", &row.err_closed), RR_STR("message", message)};

    const unsigned char *at = m->ps.r.p;
    if (!rr_object(&m->ps, "a benchmark"))
        return false;
    char key[RR_KEY_CAP];
    int k;
    bool ok = true;
    while (ok && (k = rr_next_key(&m->ps, key)) == 1) {
        ok = !strcmp(key, "name")         ? rr_string(&m->ps, name, sizeof name, "name")
             : !strcmp(key, "experiment") ? rr_string(&m->ps, experiment, sizeof experiment, "experiment")
             : !strcmp(key, "target")     ? rr_string(&m->ps, row.target, sizeof row.target, "target")
             : !strcmp(key, "run_type")   ? rr_string(&m->ps, run_type, sizeof run_type, "run_type")
             : !strcmp(key, "repetitions") ? number(m, &reps, "repetitions")
             : !strcmp(key, "repetition_index") ? number(m, &rep_index, "repetition_index")
             : !strcmp(key, "config")     ? read_config(m, &row)
             : !strcmp(key, "duration_s") ? number(m, &row.duration_s, "duration_s")
             : !strcmp(key, "setup_s")    ? number(m, &row.setup_s, "setup_s")
             : !strcmp(key, "messages")   ? rr_fields(&m->ps, "messages", messages, 3)
             : !strcmp(key, "throughput") ? read_throughput(m, &row.throughput, &row.throughput_def,
                                                            unit, sizeof unit, "throughput")
             : !strcmp(key, "throughput_messaging")
                 ? read_throughput(m, &row.throughput_messaging, &row.throughput_messaging_def,
                                   NULL, 0, "throughput_messaging")
             : !strcmp(key, "phases")  ? read_phases(m, &row)
             : !strcmp(key, "latency") ? read_latency(m, &row)
             : !strcmp(key, "server")  ? rr_fields(&m->ps, "server", server, 5)
             : !strcmp(key, "client")  ? rr_fields(&m->ps, "client", client, 3)
             : !strcmp(key, "errors")  ? rr_fields(&m->ps, "errors", errors, 6)
             : !strcmp(key, "series")  ? read_series(m, &row)
             : !strcmp(key, "shard")   ? read_shard(m, &row)
             : !strcmp(key, "http_open") ? read_http_open(m, &row)
                                         : rr_skip(&m->ps);
    }
    ok = ok && k == 0;
    if (ok && strcmp(run_type, "iteration") && strcmp(run_type, "aggregate")) {
        m->ps.r.p = at;
        ok = rr_fail(&m->ps, "byte %zu: %s", "a benchmark without a name or a run_type");
    }
    if (ok && !strcmp(run_type, "iteration") &&
        (!name[0] || !experiment[0] || !row.throughput_def || !(reps >= 1 && reps <= 1000) ||
         !(rep_index >= 0 && rep_index < reps))) {
        m->ps.r.p = at;
        ok = rr_fail(&m->ps, "byte %zu: %s", "an iteration without its name, experiment, "
                                             "throughput or repetition");
    }
    if (ok && !strcmp(run_type, "iteration") && row.has_latency && !row.lat_hist) {
        m->ps.r.p = at;
        ok = rr_fail(&m->ps, "byte %zu: %s", "an iteration's latency without its histogram (a "
                                             "shard written by a shootout older than merge?)");
    }
    if (!ok || strcmp(run_type, "iteration")) {
        mem_free(row.lat_hist);
        mem_free(row.series.points);
        mem_free(row.series_lat);
        return ok;
    }
    snprintf(row.name, sizeof row.name, "%s", name);
    snprintf(row.error, sizeof row.error, "%s", message);
    row.experiment = keep(m->f, experiment);
    row.op_def = keep(m->f, op[0] ? op : "op");
    /* "msg/s" -> "msg" */
    char *slash = strstr(unit, "/s");
    if (slash)
        *slash = '\0';
    row.op_unit = unit[0] && strcmp(unit, "msg") ? keep(m->f, unit) : NULL;
    row.repetitions = (unsigned)reps;
    row.repetition_index = (unsigned)rep_index;
    row.server_pid = isfinite(pid) && pid >= 1 && pid < 1e9 ? (int)pid : 0;
    if (row.has_latency)
        result_set_latency(&row, row.lat_hist);
    result_set_append(&m->f->rows, &row, 1);
    return true;
}

static bool read_benchmarks(struct mreader *m)
{
    if (!rr_array(&m->ps, "benchmarks"))
        return false;
    int k;
    while ((k = jr_next(&m->ps.r)) == 1)
        if (!read_row(m))
            return false;
    return k == 0 || rr_reader_failed(&m->ps);
}

int merge_parse(struct merge_file *f, const char *path, const char *text, size_t len, char *err,
                size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    struct mreader m = {.f = f};
    rr_init(&m.ps, text, len, MERGE_DEPTH, err, errlen);
    double schema = NAN;
    bool benchmarks = false, ok = true;
    if (jr_peek(&m.ps.r) != JR_OBJECT)
        ok = rr_fail(&m.ps, "byte %zu: %s", "not a shootout results file (no JSON object)");
    ok = ok && (jr_enter(&m.ps.r) || rr_reader_failed(&m.ps));
    char key[RR_KEY_CAP];
    int k = 0;
    while (ok && (k = rr_next_key(&m.ps, key)) == 1) {
        if (!strcmp(key, "schema_version"))
            ok = rr_number(&m.ps, &schema, "schema_version");
        else if (!strcmp(key, "benchmarks"))
            ok = benchmarks = read_benchmarks(&m);
        else
            ok = rr_skip(&m.ps);
    }
    ok = ok && k == 0 && (jr_end(&m.ps.r) || rr_reader_failed(&m.ps));
    if (ok && (schema != 1 || !benchmarks))
        ok = rr_fail(&m.ps, "byte %zu: %s", "not a shootout results file of schema_version 1");
    if (!ok) {
        merge_file_free(f);
        return -1;
    }
    return 0;
}

/* merge_parse for rr_load. */
static int merge_parse_text(void *f, const char *text, size_t len, char *err, size_t errlen)
{
    return merge_parse(f, NULL, text, len, err, errlen);
}

int merge_load(struct merge_file *f, const char *path, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    int rc = rr_load(path, merge_parse_text, f, err, errlen);
    f->path = path;
    return rc;
}

void merge_file_free(struct merge_file *f)
{
    result_set_free(&f->rows);
    for (unsigned i = 0; i < f->nstrs; i++)
        mem_free(f->strs[i]);
    mem_free(f->strs);
    for (unsigned i = 0; i < f->nreports; i++)
        ho_merge_free(f->reports[i]);
    mem_free(f->reports);
    const char *path = f->path;
    memset(f, 0, sizeof *f);
    f->path = path;
}

/* ---- merging --------------------------------------------------------------- */

/* Whether two shards' rows describe the same point of the same run. */
static bool same_point(const struct result_row *a, const struct result_row *b)
{
    if (strcmp(a->name, b->name) || strcmp(a->experiment, b->experiment) ||
        a->repetitions != b->repetitions || a->repetition_index != b->repetition_index ||
        a->nconfig != b->nconfig || a->has_latency != b->has_latency ||
        !a->extra_arg != !b->extra_arg ||
        a->shard.start_at != b->shard.start_at)
        return false;
    for (unsigned i = 0; i < a->nconfig; i++)
        if (strcmp(a->config[i].key, b->config[i].key) || a->config[i].value != b->config[i].value)
            return false;
    return true;
}

/* The shard's operations of the CPU-per-op figures (op_def), which are
 * not always the throughput's. */
static double cpu_ops(const struct result_row *r)
{
    if (r->client_cpu_us_per_op > 0)
        return r->client_cpu_s * 1e6 / r->client_cpu_us_per_op;
    return r->throughput * r->duration_s;
}

/* Each shard's first second in the common window's seconds: a shard's
 * second t is the window's second t + its offset. */
static void series_offsets(const struct result_row *out, const struct result_row *const *in,
                           unsigned n, unsigned *off)
{
    for (unsigned i = 0; i < n; i++) {
        double d = floor(in[i]->shard.window_start - out->shard.window_start + 0.5);
        off[i] = d > 0 && d < 86400 ? (unsigned)d : 0;
    }
}

/* The shards' per-second throughput summed on the common window, and
 * their latency buckets where every shard has them, each second's p50 and
 * p99 then read from the sum. */
static void merge_series(struct result_row *out, const struct result_row *const *in, unsigned n,
                         const unsigned *off)
{
    unsigned len = 0;
    bool lat = true;
    for (unsigned i = 0; i < n; i++) {
        if (in[i]->series.n && off[i] + in[i]->series.n > len)
            len = off[i] + in[i]->series.n;
        lat &= in[i]->series_lat != NULL || !in[i]->series.n;
    }
    if (!len)
        return;
    struct result_point *pts = mem_calloc(len, sizeof *pts);
    uint32_t (*buckets)[SECLAT_BUCKETS] = lat ? mem_calloc(len, sizeof *buckets) : NULL;
    for (unsigned i = 0; i < n; i++)
        for (unsigned t = 0; t < in[i]->series.n; t++) {
            pts[off[i] + t].responses += in[i]->series.points[t].responses;
            for (unsigned b = 0; buckets && b < SECLAT_BUCKETS; b++)
                buckets[off[i] + t][b] += in[i]->series_lat[t][b];
        }
    result_set_series(out, pts, len, -1);
    if (buckets)
        result_set_series_latency(out, (const uint32_t (*)[SECLAT_BUCKETS])buckets);
    mem_free(pts);
    mem_free(buckets);
}

/* http-open's reports merged (ho_merge.h), kept by keeper; its series
 * is the row's. 0, or -1 with a message in err. */
static int merge_http_open(struct result_row *out, const struct result_row *const *in,
                           unsigned n, const unsigned *off, struct merge_file *keeper, char *err,
                           size_t errlen)
{
    const struct ho_report *reps[MERGE_MAX_SHARDS];
    for (unsigned i = 0; i < n; i++)
        reps[i] = in[i]->extra_arg;
    char why[200];
    struct ho_report *m = ho_merge_reports(reps, off, n, out->duration_s, why, sizeof why);
    if (!m) {
        snprintf(err, errlen, "%s run %u: %s", out->name, out->repetition_index + 1, why);
        return -1;
    }
    keep_report(keeper, m);
    m->server_rss_kb = out->server_rss_max_kb;
    m->server_threads = out->server_threads_max;
    out->extra_arg = m;
    result_set_series(out, m->points, m->nsecs, m->saturation_s);
    return 0;
}

static int merge_point(struct result_row *out, const struct result_row *const *in, unsigned n,
                       struct merge_file *const *by, char *warn, size_t warnlen, char *err,
                       size_t errlen)
{
    *out = *in[0];
    out->lat_hist = NULL;
    out->series = (struct result_series){.saturation_s = -1};
    out->series_lat = NULL;
    out->error[0] = '\0';
    struct result_shard *s = &out->shard;
    s->merged = true;
    s->index = 0;
    s->threads = 0;
    s->saturated = 0;
    double ops = 0, ops_msg = 0, ops_pub = 0, ops_drain = 0, ops_cpu = 0;
    static const unsigned summed[] = {
        RESULT_METRIC(sent),         RESULT_METRIC(received),     RESULT_METRIC(lost),
        RESULT_METRIC(client_cpu_s), RESULT_METRIC(err_connect),  RESULT_METRIC(err_timeout),
        RESULT_METRIC(err_protocol), RESULT_METRIC(err_status),   RESULT_METRIC(err_closed),
    };
    for (unsigned k = 0; k < sizeof summed / sizeof summed[0]; k++)
        out->metric[summed[k]] = 0;
    out->server_cpu_s = out->server_rss_max_kb = out->server_threads_max = 0;
    out->setup_s = out->publish_s = out->drain_s = 0;
    struct hist *h = in[0]->lat_hist ? mem_calloc(1, sizeof *h) : NULL;
    for (unsigned i = 0; i < n; i++) {
        const struct result_row *r = in[i];
        for (unsigned k = 0; k < sizeof summed / sizeof summed[0]; k++)
            out->metric[summed[k]] += r->metric[summed[k]];
        if (r->shard.window_start < s->window_start)
            s->window_start = r->shard.window_start;
        if (r->shard.window_end > s->window_end)
            s->window_end = r->shard.window_end;
        s->threads += r->shard.threads;
        ops += r->throughput * r->duration_s;
        ops_msg += r->throughput_messaging * r->duration_s;
        ops_pub += r->throughput_publish * r->publish_s;
        ops_drain += r->throughput_drain * r->drain_s;
        ops_cpu += cpu_ops(r);
        out->setup_s = fmax(out->setup_s, r->setup_s);
        out->publish_s = fmax(out->publish_s, r->publish_s);
        out->drain_s = fmax(out->drain_s, r->drain_s);
        /* One server seen from every shard: the most any saw, not a sum. */
        if (r->server_pid) {
            out->server_pid = out->server_pid ? out->server_pid : r->server_pid;
            out->server_cpu_s = fmax(out->server_cpu_s, r->server_cpu_s);
            out->server_rss_max_kb = fmax(out->server_rss_max_kb, r->server_rss_max_kb);
            out->server_threads_max = fmax(out->server_threads_max, r->server_threads_max);
        }
        if (h)
            hist_merge(h, r->lat_hist);
        if (r->error[0] && !out->error[0])
            snprintf(out->error, sizeof out->error, "shard %u: %.200s", r->shard.index, r->error);
        double busy = r->duration_s > 0 ? r->client_cpu_s / r->duration_s : 0;
        if (busy >= MERGE_SATURATED * r->shard.threads) {
            s->saturated |= UINT64_C(1) << r->shard.index;
            size_t used = strlen(warn);
            snprintf(warn + used, warnlen - used,
                     "shard %u/%u (%s) used %.2f cores with %u client thread%s in %s run %u: its "
                     "figures may be the client's limit, not the server's\n",
                     r->shard.index, n, by[i]->path, busy, r->shard.threads,
                     r->shard.threads == 1 ? "" : "s", r->name, r->repetition_index + 1);
        }
    }
    out->duration_s = s->window_end - s->window_start;
    double d = out->duration_s > 0 ? out->duration_s : 1;
    out->throughput = ops / d;
    out->throughput_messaging = ops_msg / d;
    out->throughput_publish = out->publish_s > 0 ? ops_pub / out->publish_s : 0;
    out->throughput_drain = out->drain_s > 0 ? ops_drain / out->drain_s : 0;
    out->client_cpu_us_per_op = ops_cpu > 0 ? out->client_cpu_s * 1e6 / ops_cpu : 0;
    out->server_cpu_us_per_op = ops_cpu > 0 ? out->server_cpu_s * 1e6 / ops_cpu : 0;
    if (h) {
        result_set_latency(out, h);
        mem_free(h);
    }
    unsigned off[MERGE_MAX_SHARDS];
    series_offsets(out, in, n, off);
    if (in[0]->extra_arg)
        return merge_http_open(out, in, n, off, by[0], err, errlen);
    merge_series(out, in, n, off);
    return 0;
}

/* Each file one shard of the same count, every index once. */
static int check_shards(struct merge_file *files, unsigned n, struct merge_file **by,
                        char *err, size_t errlen)
{
    unsigned count = 0;
    for (unsigned i = 0; i < n; i++) {
        struct merge_file *f = &files[i];
        if (!f->rows.n) {
            snprintf(err, errlen, "%s has no iteration rows to merge", f->path);
            return -1;
        }
        const struct result_shard *s = &f->rows.rows[0].shard;
        for (unsigned k = 0; k < f->rows.n; k++)
            if (!f->rows.rows[k].shard.count || f->rows.rows[k].shard.index != s->index ||
                f->rows.rows[k].shard.count != s->count) {
                snprintf(err, errlen, "%s is not one shard's results (run the load generator "
                                      "with --shard I/N)", f->path);
                return -1;
            }
        if (i == 0)
            count = s->count;
        if (s->count != count) {
            snprintf(err, errlen, "%s is shard %u/%u, but %s is of %u shards", f->path, s->index,
                     s->count, files[0].path, count);
            return -1;
        }
        if (by[s->index]) {
            snprintf(err, errlen, "shard %u/%u is given twice: %s and %s", s->index, count,
                     by[s->index]->path, f->path);
            return -1;
        }
        by[s->index] = f;
    }
    for (unsigned i = 0; i < count; i++)
        if (!by[i]) {
            snprintf(err, errlen, "shard %u/%u is missing (%u file%s given)", i, count, n,
                     n == 1 ? "" : "s");
            return -1;
        }
    return 0;
}

/* The aggregates of each point whose repetitions are all there and passed,
 * as `shootout bench` writes them after the iterations. */
static void merge_aggregates(struct result_set *out)
{
    unsigned n = out->n;
    for (unsigned i = 0; i < n;) {
        unsigned j = i;
        bool failed = false;
        while (j < n && !strcmp(out->rows[j].name, out->rows[i].name)) {
            failed |= out->rows[j].error[0] != '\0';
            j++;
        }
        if (j - i == out->rows[i].repetitions && j - i > 1 && !failed) {
            struct result_row agg[3];
            result_aggregate(&out->rows[i], j - i, agg);
            result_set_append(out, agg, 3);
        }
        i = j;
    }
}

int merge_combine(struct merge_file *files, unsigned n, struct result_set *out,
                  char *warn, size_t warnlen, char *err, size_t errlen)
{
    *out = (struct result_set){0};
    warn[0] = '\0';
    if (n == 0 || n > MERGE_MAX_SHARDS) {
        snprintf(err, errlen, "wants 1 to %d shards' files", MERGE_MAX_SHARDS);
        return -1;
    }
    struct merge_file *by[MERGE_MAX_SHARDS] = {0};
    if (check_shards(files, n, by, err, errlen) < 0)
        return -1;
    const struct merge_file *first = by[0];
    for (unsigned i = 1; i < n; i++) {
        const struct merge_file *f = by[i];
        bool same = f->rows.n == first->rows.n;
        for (unsigned k = 0; same && k < f->rows.n; k++)
            same = same_point(&f->rows.rows[k], &first->rows.rows[k]);
        if (!same) {
            snprintf(err, errlen, "%s and %s are not shards of one run (the experiment, its "
                                  "options, repetitions or --start-at differ)", first->path,
                     f->path);
            return -1;
        }
    }
    for (unsigned k = 0; k < first->rows.n; k++) {
        const struct result_row *in[MERGE_MAX_SHARDS];
        for (unsigned i = 0; i < n; i++)
            in[i] = &by[i]->rows.rows[k];
        struct result_row row;
        int rc = merge_point(&row, in, n, by, warn, warnlen, err, errlen);
        result_set_append(out, &row, 1);
        if (rc < 0) {
            result_set_free(out);
            return -1;
        }
    }
    merge_aggregates(out);
    return 0;
}
