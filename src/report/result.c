/* result.c - result rows: aggregates, the JSON file and the terminal table. */
#include "report/result.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/json.h"
#include "core/mem.h"

_Static_assert(offsetof(struct result_row, own) + sizeof(double) * RESULT_OWN_N ==
                   offsetof(struct result_row, metric) + sizeof(double) * RESULT_NMETRICS,
               "RESULT_NMETRICS must count every metric field");


#if defined(__SANITIZE_ADDRESS__)
#define RESULT_BUILD_TYPE "asan"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RESULT_BUILD_TYPE "asan"
#endif
#endif
#ifndef RESULT_BUILD_TYPE
#ifdef __OPTIMIZE__
#define RESULT_BUILD_TYPE "release"
#else
#define RESULT_BUILD_TYPE "debug"
#endif
#endif

const double result_spectrum_p[RESULT_SPECTRUM_N] = {50,   75,    90,    95,     97.5,   99,
                                                      99.5, 99.75, 99.9,  99.95,  99.975, 99.99};

/* The CPU's name, so that results from two machines can be told apart. */
static void read_cpu_model(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon)
            continue;
        colon += 1 + (colon[1] == ' ');
        snprintf(buf, cap, "%.*s", (int)strcspn(colon, "\n"), colon);
        break;
    }
    if (f)
        fclose(f);
}

void result_context_init(struct result_context *ctx, int argc, char **argv, const char *version)
{
    memset(ctx, 0, sizeof *ctx);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ctx->date, sizeof ctx->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gethostname(ctx->host_name, sizeof ctx->host_name - 1) < 0)
        strcpy(ctx->host_name, "unknown");
    ctx->num_cpus = sysconf(_SC_NPROCESSORS_ONLN);
    read_cpu_model(ctx->cpu_model, sizeof ctx->cpu_model);
    size_t len = 1;
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    ctx->command_line = mem_alloc(len);
    ctx->command_line[0] = '\0';
    for (int i = 0; i < argc; i++) {
        if (i)
            strcat(ctx->command_line, " ");
        strcat(ctx->command_line, argv[i]);
    }
    ctx->version = version;
    ctx->build_type = RESULT_BUILD_TYPE;
}

void result_context_free(struct result_context *ctx)
{
    mem_free(ctx->command_line);
    ctx->command_line = NULL;
}

const char *result_unit(const struct result_row *row)
{
    return row->op_unit ? row->op_unit : "msg";
}

void result_param(struct result_row *row, const char *key, double value)
{
    if (row->nconfig < RESULT_MAX_CONFIG)
        row->config[row->nconfig++] = (struct result_param){key, value};
}

void result_set_latency(struct result_row *row, const struct hist *ns)
{
    row->has_latency = true;
    if (!row->lat_hist)
        row->lat_hist = mem_alloc(sizeof *row->lat_hist);
    *row->lat_hist = *ns;
    row->lat_min = (ns->count ? (double)ns->min : 0) / 1e3;
    row->lat_max = (double)ns->max / 1e3;
    row->lat_mean = hist_mean(ns) / 1e3;
    row->lat_stddev = hist_stddev(ns) / 1e3;
    row->lat_p50 = (double)hist_percentile(ns, 50) / 1e3;
    row->lat_p90 = (double)hist_percentile(ns, 90) / 1e3;
    row->lat_p99 = (double)hist_percentile(ns, 99) / 1e3;
    row->lat_p99_9 = (double)hist_percentile(ns, 99.9) / 1e3;
    for (unsigned i = 0; i < RESULT_SPECTRUM_N; i++)
        row->lat_spectrum[i] = (double)hist_percentile(ns, result_spectrum_p[i]) / 1e3;
}

void result_set_series(struct result_row *row, const struct result_point *pts, unsigned n,
                       int saturation_s)
{
    mem_free(row->series.points);
    mem_free(row->series_lat);
    row->series = (struct result_series){NULL, n, saturation_s};
    row->series_lat = NULL;
    if (n) {
        row->series.points = mem_alloc(n * sizeof *pts);
        memcpy(row->series.points, pts, n * sizeof *pts);
    }
}

void result_set_series_latency(struct result_row *row, const uint32_t (*lat)[SECLAT_BUCKETS])
{
    struct result_series *s = &row->series;
    mem_free(row->series_lat);
    row->series_lat = NULL;
    if (!s->n)
        return;
    row->series_lat = mem_alloc(s->n * sizeof *row->series_lat);
    memcpy(row->series_lat, lat, s->n * sizeof *row->series_lat);
    for (unsigned i = 0; i < s->n; i++) {
        s->points[i].p50_ms = seclat_percentile_ms(row->series_lat[i], 50);
        s->points[i].p99_ms = seclat_percentile_ms(row->series_lat[i], 99);
    }
}

void result_set_append(struct result_set *set, const struct result_row *rows, unsigned n)
{
    if (set->n + n > set->cap) {
        set->cap = (set->n + n) * 2;
        set->rows = mem_realloc(set->rows, set->cap * sizeof *set->rows);
    }
    memcpy(&set->rows[set->n], rows, n * sizeof *rows);
    set->n += n;
}

void result_set_free(struct result_set *set)
{
    for (unsigned i = 0; i < set->n; i++) {
        mem_free(set->rows[i].series.points);
        mem_free(set->rows[i].series_lat);
        mem_free(set->rows[i].lat_hist);
    }
    mem_free(set->rows);
    *set = (struct result_set){0};
}

/* ---- aggregates ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void result_aggregate(const struct result_row *iters, unsigned n, struct result_row out[3])
{
    static const char *const names[3] = {"mean", "median", "stddev"};
    for (int k = 0; k < 3; k++) {
        out[k] = iters[0];
        out[k].aggregate_name = names[k];
        out[k].repetition_index = 0;
        out[k].error[0] = '\0';
        out[k].series = (struct result_series){.saturation_s = -1};
        out[k].series_lat = NULL;
        out[k].lat_hist = NULL;
    }
    double *v = mem_alloc(n * sizeof *v);
    for (unsigned m = 0; m < RESULT_NMETRICS; m++) {
        double sum = 0;
        for (unsigned i = 0; i < n; i++) {
            v[i] = iters[i].metric[m];
            sum += v[i];
        }
        double mean = sum / n, ss = 0;
        for (unsigned i = 0; i < n; i++)
            ss += (v[i] - mean) * (v[i] - mean);
        qsort(v, n, sizeof *v, cmp_double);
        out[0].metric[m] = mean;
        out[1].metric[m] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        out[2].metric[m] = n > 1 ? sqrt(ss / (n - 1)) : 0;
    }
    mem_free(v);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_throughput(struct json *j, const char *key, double v, const char *def,
                            const char *unit)
{
    char per_s[32];
    snprintf(per_s, sizeof per_s, "%s/s", unit);
    json_key(j, key);
    json_object_begin(j);
    json_kv(j, "value", v);
    json_kstr(j, "unit", per_s);
    json_kstr(j, "definition", def);
    json_object_end(j);
}

static void json_phase(struct json *j, const char *key, double duration_s, double v,
                       const char *def, const char *unit)
{
    json_key(j, key);
    json_object_begin(j);
    json_kv(j, "duration_s", duration_s);
    json_throughput(j, "throughput", v, def, unit);
    json_object_end(j);
}

/* The run's figures second by second; the open-model runs write their
 * fuller series in their own object as well. */
static void json_series(struct json *j, const struct result_row *r)
{
    char per_s[32];
    snprintf(per_s, sizeof per_s, "%s/s", result_unit(r));
    json_key(j, "series");
    json_object_begin(j);
    json_kstr(j, "unit", per_s);
    json_kstr(j, "definition", "every op (see client.op) per second, and the latency of the ops "
                               "that ended in that second where measured (p50 and p99 from "
                               "lat_us_buckets: 8 per power of two of microseconds)");
    json_key(j, "points");
    json_array_begin(j);
    for (unsigned i = 0; i < r->series.n; i++) {
        const struct result_point *pt = &r->series.points[i];
        json_flat(j, true); /* a second a line */
        json_object_begin(j);
        json_kv(j, "t", i);
        json_kv(j, "throughput", pt->responses);
        if (pt->p50_ms > 0 || pt->p99_ms > 0) {
            json_kv(j, "p50_ms", pt->p50_ms);
            json_kv(j, "p99_ms", pt->p99_ms);
        }
        if (r->series_lat) {
            json_key(j, "lat_us_buckets");
            seclat_write_json(j, r->series_lat[i]);
        }
        json_object_end(j);
        json_flat(j, false);
    }
    json_array_end(j);
    json_object_end(j);
}

/* Where a sharded run's part sits (docs/bench.md, "Load from several
 * machines"), or which parts a merged row was made of. */
static void json_shard(struct json *j, const struct result_shard *s)
{
    json_key(j, "shard");
    json_object_begin(j);
    json_kv(j, "count", s->count);
    if (s->merged) {
        json_key(j, "saturated");
        json_array_begin(j);
        for (unsigned i = 0; i < s->count && i < 64; i++)
            if (s->saturated >> i & 1)
                json_int(j, i);
        json_array_end(j);
    } else {
        json_kv(j, "index", s->index);
    }
    json_kv(j, "threads", s->threads);
    json_kv(j, "start_at", s->start_at);
    json_kv(j, "window_start", s->window_start);
    json_kv(j, "window_end", s->window_end);
    json_object_end(j);
}

static void json_row(struct json *j, const struct result_row *r)
{
    json_object_begin(j);
    json_kstr(j, "name", r->name);
    json_kstr(j, "experiment", r->experiment);
    json_kstr(j, "target", r->target);
    if (r->target_version)
        json_kstr(j, "target_version", r->target_version);
    json_kstr(j, "run_type", r->aggregate_name ? "aggregate" : "iteration");
    if (r->aggregate_name)
        json_kstr(j, "aggregate_name", r->aggregate_name);
    json_kv(j, "repetitions", r->repetitions);
    if (!r->aggregate_name)
        json_kv(j, "repetition_index", r->repetition_index);

    json_key(j, "config");
    json_object_begin(j);
    for (unsigned i = 0; i < r->nconfig; i++)
        json_kv(j, r->config[i].key, r->config[i].value);
    json_object_end(j);

    json_kv(j, "duration_s", r->duration_s);
    json_kv(j, "setup_s", r->setup_s);
    if (!r->cols) {
        json_key(j, "messages");
        json_object_begin(j);
        json_kv(j, "sent", r->sent);
        json_kv(j, "received", r->received);
        json_kv(j, "lost", r->lost);
        json_object_end(j);
    }
    json_throughput(j, "throughput", r->throughput, r->throughput_def, result_unit(r));
    if (r->throughput_messaging_def)
        json_throughput(j, "throughput_messaging", r->throughput_messaging,
                        r->throughput_messaging_def, result_unit(r));
    if (r->publish_def) {
        json_key(j, "phases");
        json_object_begin(j);
        json_phase(j, "publish", r->publish_s, r->throughput_publish, r->publish_def, result_unit(r));
        json_phase(j, "drain", r->drain_s, r->throughput_drain, r->drain_def, result_unit(r));
        json_object_end(j);
    }

    json_key(j, "latency");
    if (r->has_latency) {
        json_object_begin(j);
        json_kstr(j, "unit", "us");
        json_kv(j, "min", r->lat_min);
        json_kv(j, "mean", r->lat_mean);
        json_kv(j, "stddev", r->lat_stddev);
        json_kv(j, "max", r->lat_max);
        json_kv(j, "p50", r->lat_p50);
        json_kv(j, "p90", r->lat_p90);
        json_kv(j, "p99", r->lat_p99);
        json_kv(j, "p99_9", r->lat_p99_9);
        json_key(j, "spectrum");
        json_array_begin(j);
        for (unsigned i = 0; i < RESULT_SPECTRUM_N; i++) {
            json_object_begin(j);
            json_kv(j, "p", result_spectrum_p[i]);
            json_kv(j, "us", r->lat_spectrum[i]);
            json_object_end(j);
        }
        json_array_end(j);
        if (r->lat_hist) {
            json_key(j, "histogram");
            hist_write_json(j, r->lat_hist);
        }
        json_object_end(j);
    } else {
        json_null(j);
    }

    json_key(j, "server");
    if (r->server_pid) {
        json_object_begin(j);
        json_kv(j, "pid", r->server_pid);
        if (r->server_processes > 1)
            json_kv(j, "processes", r->server_processes);
        json_kv(j, "cpu_s", r->server_cpu_s);
        json_kv(j, "cpu_us_per_op", r->server_cpu_us_per_op);
        json_kv(j, "rss_max_kb", r->server_rss_max_kb);
        json_kv(j, "threads_max", r->server_threads_max);
        json_kstr(j, "op", r->op_def);
        json_object_end(j);
    } else {
        json_null(j);
    }

    json_key(j, "client");
    json_object_begin(j);
    json_kv(j, "cpu_s", r->client_cpu_s);
    json_kv(j, "cpu_us_per_op", r->client_cpu_us_per_op);
    json_kstr(j, "op", r->op_def);
    json_object_end(j);

    json_key(j, "errors");
    json_object_begin(j);
    json_kv(j, "connect", r->err_connect);
    json_kv(j, "timeout", r->err_timeout);
    json_kv(j, "protocol", r->err_protocol);
    json_kv(j, "status", r->err_status);
    json_kv(j, "closed", r->err_closed);
    if (r->error[0])
        json_kstr(j, "message", r->error);
    json_object_end(j);
    if (r->series.n)
        json_series(j, r);
    if (r->shard.count)
        json_shard(j, &r->shard);
    if (r->extra_json && !r->aggregate_name)
        r->extra_json(j, r->extra_arg);
    json_object_end(j);
}

int result_write_json(const char *path, const struct result_context *ctx,
                      const struct result_row *rows, unsigned n, char *err, size_t errlen)
{
    bool to_stdout = !strcmp(path, "-");
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    struct json j;
    json_init(&j, f);
    json_object_begin(&j);
    json_kv(&j, "schema_version", 1);
    json_key(&j, "tool");
    json_object_begin(&j);
    json_kstr(&j, "name", "shootout");
    json_kstr(&j, "version", ctx->version);
    json_object_end(&j);
    json_key(&j, "context");
    json_object_begin(&j);
    json_kstr(&j, "date", ctx->date);
    json_kstr(&j, "host_name", ctx->host_name);
    json_kv(&j, "num_cpus", (double)ctx->num_cpus);
    json_kstr(&j, "cpu_model", ctx->cpu_model);
    json_kstr(&j, "command_line", ctx->command_line);
    json_kstr(&j, "build_type", ctx->build_type);
    if (ctx->cpu_idle)
        json_kstr(&j, "cpu_idle", ctx->cpu_idle);
    if (ctx->extra_json)
        ctx->extra_json(&j, ctx->extra_arg);
    json_object_end(&j);
    json_key(&j, "benchmarks");
    json_array_begin(&j);
    for (unsigned i = 0; i < n; i++)
        json_row(&j, &rows[i]);
    json_array_end(&j);
    json_object_end(&j);
    int failed = ferror(f);
    if (to_stdout ? fflush(f) != 0 : fclose(f) != 0)
        failed = 1;
    if (failed) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- terminal table ---------------------------------------------------------- */

enum col_need { NEED_ALWAYS, NEED_MESSAGING, NEED_PHASES, NEED_LATENCY, NEED_SERVER };

/* The message experiments' columns, each shown for the rows that have
 * its figure. */
struct col {
    struct result_col c;
    enum col_need need;
};

static const struct col cols[] = {
    {{"setup s", RESULT_METRIC(setup_s), 1, 3, NULL}, NEED_ALWAYS},
    {{"time s", RESULT_METRIC(duration_s), 1, 3, NULL}, NEED_ALWAYS},
    {{"received", RESULT_METRIC(received), 1, 0, NULL}, NEED_ALWAYS},
    {{"lost", RESULT_METRIC(lost), 1, 0, NULL}, NEED_ALWAYS},
    {{"k %s/s", RESULT_METRIC(throughput), 1e-3, 1, NULL}, NEED_ALWAYS},
    {{"msg-phase k %s/s", RESULT_METRIC(throughput_messaging), 1e-3, 1, NULL}, NEED_MESSAGING},
    {{"publish k %s/s", RESULT_METRIC(throughput_publish), 1e-3, 2, NULL}, NEED_PHASES},
    {{"drain k %s/s", RESULT_METRIC(throughput_drain), 1e-3, 2, NULL}, NEED_PHASES},
    {{"p50 us", RESULT_METRIC(lat_p50), 1, 1, NULL}, NEED_LATENCY},
    {{"p99 us", RESULT_METRIC(lat_p99), 1, 1, NULL}, NEED_LATENCY},
    {{"max us", RESULT_METRIC(lat_max), 1, 1, NULL}, NEED_LATENCY},
    {{"client us/%s", RESULT_METRIC(client_cpu_us_per_op), 1, 2, NULL}, NEED_ALWAYS},
    {{"server us/%s", RESULT_METRIC(server_cpu_us_per_op), 1, 2, NULL}, NEED_SERVER},
    {{"server MB", RESULT_METRIC(server_rss_max_kb), 1.0 / 1024, 1, NULL}, NEED_SERVER},
};

static bool col_shown(const struct col *c, const struct result_row *r)
{
    switch (c->need) {
    case NEED_MESSAGING:
        return r->throughput_messaging_def != NULL;
    case NEED_PHASES:
        return r->publish_def != NULL;
    case NEED_LATENCY:
        return r->has_latency;
    case NEED_SERVER:
        return r->server_pid != 0;
    default:
        return true;
    }
}

#define NCOLS (sizeof cols / sizeof cols[0])
_Static_assert(NCOLS <= RESULT_TABLE_COLS, "RESULT_TABLE_COLS must hold the standard columns");

/* The columns of rows shaped like r into out (RESULT_TABLE_COLS at most);
 * how many. */
static unsigned table_cols(const struct result_row *r, const struct result_col **out)
{
    if (r->cols) {
        unsigned n = r->ncols < RESULT_TABLE_COLS ? r->ncols : RESULT_TABLE_COLS;
        for (unsigned i = 0; i < n; i++)
            out[i] = &r->cols[i];
        return n;
    }
    unsigned n = 0;
    for (size_t i = 0; i < NCOLS; i++)
        if (col_shown(&cols[i], r))
            out[n++] = &cols[i].c;
    return n;
}

void result_print_defs(FILE *f, const struct result_row *r)
{
    const char *unit = result_unit(r);
    fprintf(f, "k %s/s: %s\n", unit, r->throughput_def);
    const struct result_col *tc[RESULT_TABLE_COLS];
    unsigned n = table_cols(r, tc);
    for (unsigned i = 0; i < n; i++)
        if (tc[i]->def) {
            char title[32];
            snprintf(title, sizeof title, tc[i]->title, unit);
            fprintf(f, "%s: %s\n", title, tc[i]->def);
        }
    if (r->throughput_messaging_def)
        fprintf(f, "msg-phase k %s/s: %s\n", unit, r->throughput_messaging_def);
    if (r->publish_def)
        fprintf(f, "publish k %s/s: %s\ndrain k %s/s: %s\n", unit, r->publish_def, unit,
                r->drain_def);
    fprintf(f, "us/%s: CPU time (user + system) per %s\n", unit, r->op_def);
}

void result_table_begin(struct tt *tt, const struct result_row *r)
{
    const struct result_col *tc[RESULT_TABLE_COLS];
    unsigned n = table_cols(r, tc);
    char align[RESULT_TABLE_COLS + 2] = "l";
    memset(align + 1, 'r', n);
    align[n + 1] = '\0';
    tt_init(tt, align);
    tt_reserve(tt, 0, "median"); /* the longest aggregate's name, printed last */
    tt_cell(tt, "run");
    for (unsigned i = 0; i < n; i++) {
        char title[32];
        snprintf(title, sizeof title, tc[i]->title, result_unit(r));
        tt_cell(tt, "%s", title);
    }
}

void result_table_row(struct tt *tt, const struct result_row *r)
{
    const struct result_col *tc[RESULT_TABLE_COLS];
    unsigned n = table_cols(r, tc);
    if (r->aggregate_name)
        tt_cell(tt, "%s", r->aggregate_name);
    else
        tt_cell(tt, "%u", r->repetition_index + 1);
    for (unsigned i = 0; i < n; i++)
        tt_cell(tt, "%.*f", tc[i]->precision, r->metric[tc[i]->metric] * tc[i]->scale);
}

void result_print_summary(FILE *f, const struct result_row *mean, const struct result_row *stddev)
{
    const char *unit = result_unit(mean);
    struct tt tt;
    tt_init(&tt, "ll");
    tt.indent = "  ";
    tt_cell(&tt, "throughput");
    tt_cell(&tt, "%.1f +/- %.1f thousand %s/s", mean->throughput / 1e3, stddev->throughput / 1e3,
            unit);
    if (mean->throughput_messaging_def) {
        tt_cell(&tt, "msg-phase throughput");
        tt_cell(&tt, "%.1f +/- %.1f thousand %s/s", mean->throughput_messaging / 1e3,
                stddev->throughput_messaging / 1e3, unit);
    }
    if (mean->publish_def) {
        tt_cell(&tt, "publish phase");
        tt_cell(&tt, "%.2f +/- %.2f thousand %s/s", mean->throughput_publish / 1e3,
                stddev->throughput_publish / 1e3, unit);
        tt_cell(&tt, "drain phase");
        tt_cell(&tt, "%.2f +/- %.2f thousand %s/s", mean->throughput_drain / 1e3,
                stddev->throughput_drain / 1e3, unit);
    }
    tt_cell(&tt, "wall time");
    tt_cell(&tt, "%.1f +/- %.1f ms", mean->duration_s * 1e3, stddev->duration_s * 1e3);
    if (mean->has_latency) {
        tt_cell(&tt, "round trip");
        tt_cell(&tt, "mean %.1f +/- %.1f us, p99 %.1f +/- %.1f us", mean->lat_mean,
                stddev->lat_mean, mean->lat_p99, stddev->lat_p99);
    }
    tt_cell(&tt, "client CPU");
    tt_cell(&tt, "%.3f +/- %.3f us per %s", mean->client_cpu_us_per_op,
            stddev->client_cpu_us_per_op, mean->op_def);
    if (mean->server_pid) {
        tt_cell(&tt, "server CPU");
        tt_cell(&tt, "%.3f +/- %.3f us per %s", mean->server_cpu_us_per_op,
                stddev->server_cpu_us_per_op, mean->op_def);
    }
    fprintf(f, "%s over %u runs (mean +/- stddev):\n", mean->name, mean->repetitions);
    tt_print(f, &tt);
    tt_free(&tt);
    fflush(f);
}
