/* report_html.c - the self-contained HTML report: rows grouped by
 * experiment, grid point and target, drawn as inline SVG bar charts and
 * latency spectra, and the runs' per-second series as line charts. */
#include "report/report_html.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "report/chart.h"
#include "report/si.h"

#define REPORT_MAX_POINTS 32
#define REPORT_MAX_SERIES CHART_COLORS
#define REPORT_MAX_EXPERIMENTS 16

/* A figure worth a chart, and when a row has it. */
enum metric_need { NEED_ALWAYS, NEED_LATENCY, NEED_SERVER, NEED_CLIENT };

static const struct report_metric {
    size_t index;
    const char *title;
    double scale;     /* from the row's figure to unit */
    const char *unit; /* NULL: the row's operations per second */
    enum metric_need need;
} report_metrics[] = {
    {RESULT_METRIC(throughput), "Throughput", 1, NULL, NEED_ALWAYS},
    {RESULT_METRIC(lat_p50), "Latency p50", 1e-6, "s", NEED_LATENCY},
    {RESULT_METRIC(lat_p99), "Latency p99", 1e-6, "s", NEED_LATENCY},
    {RESULT_METRIC(server_cpu_us_per_op), "Server CPU per operation", 1e-6, "s", NEED_SERVER},
    {RESULT_METRIC(client_cpu_us_per_op), "Client CPU per operation", 1e-6, "s", NEED_CLIENT},
};

#define NMETRICS (sizeof report_metrics / sizeof report_metrics[0])

/* One experiment's rows arranged as points x series. Row names read
 * "<experiment>/<series>/<point>", e.g. "rpc-seq/shootout/grpc/1000n1c":
 * the series is what was measured (target and, where the experiment has
 * one, protocol), the point where on the grid, labelled as in the tables. */
struct report_group {
    const char *experiment;
    bool aggregated; /* some cell is a mean over runs */
    unsigned npoints, nseries;
    const char *point[REPORT_MAX_POINTS]; /* into a row's name */
    char series[REPORT_MAX_SERIES][128];
    /* The mean row where the runs were aggregated, else the last run (the
     * failed one, when one failed: a run stops there). */
    const struct result_row *value[REPORT_MAX_POINTS][REPORT_MAX_SERIES];
    const struct result_row *spread[REPORT_MAX_POINTS][REPORT_MAX_SERIES]; /* stddev rows */
};

void report_html_escape(FILE *f, const char *s) { chart_escape(f, s); }

/* The unit m's figures are shown in, for rows shaped like r. */
static const char *metric_unit(const struct report_metric *m, const struct result_row *r, char *buf,
                               size_t cap)
{
    if (m->unit)
        return m->unit;
    snprintf(buf, cap, "%s/s", result_unit(r));
    return buf;
}

/* A figure of row r with its unit, and " ± " its spread when sd is set,
 * into buf. Returns buf. */
static char *format_metric_value(char *buf, size_t cap, const struct report_metric *m,
                                 const struct result_row *r, const struct result_row *sd)
{
    char ubuf[48], v[48], dev[48];
    const char *unit = metric_unit(m, r, ubuf, sizeof ubuf);
    si_format(v, sizeof v, r->metric[m->index] * m->scale, unit);
    /* "1.7M msg/s ± 239k", "603 ns ± 54 ns": the unit once, but where it carries the prefix. */
    if (sd)
        snprintf(buf, cap, "%s ± %s", v,
                 si_format(dev, sizeof dev, sd->metric[m->index] * m->scale, m->unit ? unit : ""));
    else
        snprintf(buf, cap, "%s", v);
    return buf;
}

/* Splits a row's name into its series and point (see report_group); a
 * name without both falls back to the target and the whole name. */
static void row_name_parts(const struct result_row *r, char *series, size_t cap, const char **point)
{
    const char *first = strchr(r->name, '/'), *last = strrchr(r->name, '/');
    if (!first || first == last) {
        snprintf(series, cap, "%s", r->target);
        *point = r->name;
        return;
    }
    snprintf(series, cap, "%.*s", (int)(last - first - 1), first + 1);
    *point = last + 1;
}

static bool is_aggregate(const struct result_row *r, const char *name)
{
    return r->aggregate_name && !strcmp(r->aggregate_name, name);
}

static const struct result_row *find_stddev(const struct result_row *rows, unsigned n,
                                            const struct result_row *mean)
{
    for (unsigned i = 0; i < n; i++)
        if (is_aggregate(&rows[i], "stddev") && !strcmp(rows[i].name, mean->name))
            return &rows[i];
    return NULL;
}

static unsigned group_point(struct report_group *g, const char *point)
{
    for (unsigned p = 0; p < g->npoints; p++)
        if (!strcmp(g->point[p], point))
            return p;
    if (g->npoints == REPORT_MAX_POINTS)
        return REPORT_MAX_POINTS;
    g->point[g->npoints] = point;
    return g->npoints++;
}

/* The index of series in g, or g->nseries when it has none of that name. */
static unsigned group_find_series(const struct report_group *g, const char *series)
{
    unsigned s = 0;
    while (s < g->nseries && strcmp(g->series[s], series))
        s++;
    return s;
}

static unsigned group_series(struct report_group *g, const char *series)
{
    unsigned s = group_find_series(g, series);
    if (s < g->nseries)
        return s;
    if (g->nseries == REPORT_MAX_SERIES)
        return REPORT_MAX_SERIES;
    snprintf(g->series[g->nseries], sizeof g->series[0], "%s", series);
    return g->nseries++;
}

/* The point and series of row r in g (REPORT_MAX_* when g is full). */
static void group_place(struct report_group *g, const struct result_row *r, unsigned *p, unsigned *s)
{
    char series[sizeof g->series[0]];
    const char *point;
    row_name_parts(r, series, sizeof series, &point);
    *p = group_point(g, point);
    *s = group_series(g, series);
}

static void group_build(struct report_group *g, const char *experiment, const struct result_row *rows,
                        unsigned n)
{
    memset(g, 0, sizeof *g);
    g->experiment = experiment;
    for (unsigned i = 0; i < n; i++) {
        const struct result_row *r = &rows[i];
        bool mean = is_aggregate(r, "mean");
        if (strcmp(r->experiment, experiment) || (r->aggregate_name && !mean))
            continue;
        unsigned p, s;
        group_place(g, r, &p, &s);
        if (p == REPORT_MAX_POINTS || s == REPORT_MAX_SERIES)
            continue;
        const struct result_row *had = g->value[p][s];
        if (!mean && had && (had->aggregate_name || had->error[0]))
            continue;
        g->value[p][s] = r;
        if (mean) {
            g->spread[p][s] = find_stddev(rows, n, r);
            g->aggregated = true;
        }
    }
}

static bool row_has(const struct result_row *r, enum metric_need need)
{
    if (r->error[0])
        return false;
    switch (need) {
    case NEED_LATENCY:
        return r->has_latency;
    case NEED_SERVER:
        return r->server_pid != 0;
    case NEED_CLIENT:
        return r->client_cpu_s > 0;
    default:
        return true;
    }
}

/* Whether g has a chart and a column of figures that need need; the
 * throughput's has them as soon as a run failed, to show where. */
static bool group_has(const struct report_group *g, enum metric_need need)
{
    for (unsigned p = 0; p < g->npoints; p++)
        for (unsigned s = 0; s < g->nseries; s++) {
            const struct result_row *v = g->value[p][s];
            if (v && (row_has(v, need) || (need == NEED_ALWAYS && v->error[0])))
                return true;
        }
    return false;
}

/* The legend of every series of g, in g's order, each with its note
 * (notes NULL: none; see legend_notes). */
static void put_legend(FILE *f, const struct report_group *g, const char *const *notes)
{
    fputs("<ul class=\"legend\">", f);
    for (unsigned s = 0; s < g->nseries; s++)
        chart_legend_item(f, chart_color(s), g->series[s], notes ? notes[s] : NULL);
    fputs("</ul>\n", f);
}

/* What a chart's legend says of each series of g that the chart draws
 * nothing for, so that every contender of the table is accounted for in
 * every chart: "failed" where a run of it failed, "not run" where it has
 * no row (shootout run skips a contender's remaining cells once it died),
 * else absent; NULL where shown[s]. Points p0 .. p1 - 1 are the chart's. */
static void legend_notes(const struct report_group *g, unsigned p0, unsigned p1, const bool *shown,
                         const char *absent, const char **notes)
{
    for (unsigned s = 0; s < g->nseries; s++) {
        bool failed = false, ran = false;
        for (unsigned p = p0; p < p1; p++) {
            ran = ran || g->value[p][s];
            failed = failed || (g->value[p][s] && g->value[p][s]->error[0]);
        }
        notes[s] = shown[s] ? NULL : failed ? "failed" : ran ? absent : "not run";
    }
}

/* Opens a figure with its caption, the legend of g (unless NULL) with
 * notes, and its SVG on axis a. */
static void put_figure_open(FILE *f, const char *caption, const struct report_group *legend,
                            const char *const *notes, const struct chart_axis *a)
{
    chart_begin(f, caption);
    if (legend)
        put_legend(f, legend, notes);
    chart_open(f, a);
}

/* "series, point: what" for a mark's tooltip, into buf. */
static char *mark_title(char *buf, size_t cap, const struct report_group *g, unsigned p, unsigned s,
                        const char *what)
{
    snprintf(buf, cap, "%s, %s: %s", g->series[s], g->point[p], what);
    return buf;
}

static void put_chart(FILE *f, const struct report_group *g, const struct report_metric *m)
{
    double top = 0, smallest = 0, largest = 0;
    const struct result_row *shape = NULL;
    bool shown[REPORT_MAX_SERIES] = {false};
    const char *notes[REPORT_MAX_SERIES];
    for (unsigned p = 0; p < g->npoints; p++)
        for (unsigned s = 0; s < g->nseries; s++) {
            const struct result_row *v = g->value[p][s], *sd = g->spread[p][s];
            shape = shape ? shape : v;
            if (!v || !row_has(v, m->need))
                continue;
            shown[s] = true;
            double val = v->metric[m->index];
            top = fmax(top, val + (sd ? sd->metric[m->index] : 0));
            largest = fmax(largest, val);
            if (val > 0 && (smallest == 0 || val < smallest))
                smallest = val;
        }
    char buf[48], caption[128];
    const char *unit = metric_unit(m, shape, buf, sizeof buf);
    struct chart_axis a = chart_axis_bars(smallest, largest, top, m->scale, m->unit ? m->unit : "");
    /* Ticks in seconds say their unit; a derived unit goes in the caption. */
    if (m->unit)
        snprintf(caption, sizeof caption, a.log ? "%s (log scale)" : "%s", m->title);
    else
        snprintf(caption, sizeof caption, a.log ? "%s (%s, log scale)" : "%s (%s)", m->title, unit);
    legend_notes(g, 0, g->npoints, shown, "not measured", notes);
    put_figure_open(f, caption, g, notes, &a);
    for (unsigned p = 0; p < g->npoints; p++) {
        for (unsigned s = 0; s < g->nseries; s++) {
            const struct result_row *v = g->value[p][s], *sd = g->spread[p][s];
            struct chart_slot at = chart_bar_slot(g->npoints, p, g->nseries, s);
            char what[sizeof v->error + 64], title[sizeof what + 300];
            if (v && v->error[0]) {
                snprintf(what, sizeof what, "failed: %s", v->error);
                chart_error_mark(f, &a, at, mark_title(title, sizeof title, g, p, s, what));
            }
            if (!v || (!v->error[0] && !row_has(v, m->need)))
                chart_missing_mark(f, &a, at,
                                   mark_title(title, sizeof title, g, p, s, v ? "not measured" : "not run"));
            if (!v || !row_has(v, m->need))
                continue;
            format_metric_value(what, sizeof what, m, v, sd);
            chart_bar(f, &a, at, chart_color(s), v->metric[m->index], sd ? sd->metric[m->index] : 0,
                      mark_title(title, sizeof title, g, p, s, what));
        }
        chart_x_label(f, chart_group_x(g->npoints, p), g->point[p], false);
    }
    chart_close(f, &a);
}

/* ---- latency spectrum ------------------------------------------------------ */

static bool row_has_spectrum(const struct result_row *r)
{
    return r && row_has(r, NEED_LATENCY) && r->lat_spectrum[RESULT_SPECTRUM_N - 1] > 0;
}

/* For every point of g: the latency at each percentile, one line per
 * series, from p50 to p99.99. */
static void put_spectra(FILE *f, const struct report_group *g)
{
    for (unsigned p = 0; p < g->npoints; p++) {
        double top = 0;
        for (unsigned s = 0; s < g->nseries; s++)
            if (row_has_spectrum(g->value[p][s]))
                top = fmax(top, g->value[p][s]->lat_spectrum[RESULT_SPECTRUM_N - 1]);
        if (top == 0)
            continue;
        struct chart_axis a = chart_axis_linear(top, 1e-6, "s");
        char caption[200];
        snprintf(caption, sizeof caption, "Latency by percentile, %s%s", g->point[p],
                 g->aggregated ? " (mean over the runs of each percentile)" : "");
        bool shown[REPORT_MAX_SERIES];
        const char *notes[REPORT_MAX_SERIES];
        for (unsigned s = 0; s < g->nseries; s++)
            shown[s] = row_has_spectrum(g->value[p][s]);
        legend_notes(g, p, p + 1, shown, "no spectrum", notes);
        put_figure_open(f, caption, g, notes, &a);
        chart_percentile_ticks(f, &a);
        for (unsigned s = 0; s < g->nseries; s++) {
            const struct result_row *v = g->value[p][s];
            if (!row_has_spectrum(v))
                continue;
            chart_line_begin(f, chart_color(s), chart_dash(s));
            for (unsigned i = 0; i < RESULT_SPECTRUM_N; i++)
                chart_line_point(f, i == 0, chart_percentile_x(result_spectrum_p[i]), &a, v->lat_spectrum[i]);
            char lo[48], hi[48], title[300];
            snprintf(title, sizeof title, "%s: p50 %s, p99.99 %s", g->series[s],
                     si_format(lo, sizeof lo, v->lat_spectrum[0] * 1e-6, "s"),
                     si_format(hi, sizeof hi, v->lat_spectrum[RESULT_SPECTRUM_N - 1] * 1e-6, "s"));
            chart_line_end(f, title);
        }
        chart_close(f, &a);
    }
}

/* ---- time series ----------------------------------------------------------- */

/* The field of struct result_point at offset off, second by second, over
 * an axis of nx seconds; dash: an attribute or "". */
static void put_polyline(FILE *f, const struct result_point *pts, unsigned n, unsigned nx, size_t off,
                         const struct chart_axis *a, const char *color, const char *dash, const char *name)
{
    chart_line_begin(f, color, dash);
    for (unsigned i = 0; i < n; i++) {
        double v;
        memcpy(&v, (const char *)&pts[i] + off, sizeof v);
        chart_line_point(f, i == 0, chart_time_x(i, nx), a, v);
    }
    chart_line_end(f, name);
}

static void put_saturation(FILE *f, unsigned n, int second, const struct chart_axis *a)
{
    if (second >= 0 && (unsigned)second < n)
        chart_vmark(f, a, chart_time_x(second, n), "saturation");
}

void report_html_timeline(FILE *f, const char *label, const struct result_point *pts, unsigned n,
                          int saturation_s)
{
    static const char *const active_name = "active users", *const responses_name = "responses per second",
                      *const p95_name = "p95 of OK responses";
    const char *active_color = chart_color(0), *responses_color = chart_color(2), *p95_color = chart_color(3);
    double top = 0, top_ms = 0;
    for (unsigned i = 0; i < n; i++) {
        top = fmax(top, fmax(pts[i].active, pts[i].responses));
        top_ms = fmax(top_ms, pts[i].p95_ms);
    }
    struct chart_axis counts = chart_axis_linear(top, 1, ""), ms = chart_axis_linear(top_ms, 1e-3, "s");
    bool sat = saturation_s >= 0 && (unsigned)saturation_s < n;
    fputs("<div class=\"timeline\"><h3>", f);
    chart_escape(f, label);
    fputs("</h3>\n<p class=\"def\">", f);
    if (sat)
        fprintf(f, "Saturation point (dashed line): %.0f active users at second %d.", pts[saturation_s].active,
                saturation_s);
    else
        fputs("Saturation point: not reached.", f);
    fputs("</p>\n<ul class=\"legend\">", f);
    chart_legend_item(f, active_color, active_name, NULL);
    chart_legend_item(f, responses_color, responses_name, NULL);
    chart_legend_item(f, p95_color, p95_name, NULL);
    fputs("</ul>\n", f);
    put_figure_open(f, "Active users and responses per second", NULL, NULL, &counts);
    chart_time_ticks(f, n);
    put_polyline(f, pts, n, n, offsetof(struct result_point, active), &counts, active_color, "", active_name);
    put_polyline(f, pts, n, n, offsetof(struct result_point, responses), &counts, responses_color, "",
                 responses_name);
    put_saturation(f, n, saturation_s, &counts);
    chart_close(f, &counts);
    put_figure_open(f, "p95 per second (OK responses that ended in that second)", NULL, NULL, &ms);
    chart_time_ticks(f, n);
    put_polyline(f, pts, n, n, offsetof(struct result_point, p95_ms), &ms, p95_color, "", p95_name);
    put_saturation(f, n, saturation_s, &ms);
    chart_close(f, &ms);
    fputs("</div>\n", f);
}

/* An open-model run's series (active users): drawn as its own timeline. */
static bool series_is_open(const struct result_series *sr)
{
    for (unsigned i = 0; i < sr->n; i++)
        if (sr->points[i].active > 0)
            return true;
    return false;
}

/* A timeline for every open-model run of the experiment (report_html_timeline). */
static void put_timelines(FILE *f, const char *experiment, const struct result_row *rows, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const struct result_row *r = &rows[i];
        if (strcmp(r->experiment, experiment) || r->aggregate_name || !series_is_open(&r->series))
            continue;
        char series[128], label[200];
        const char *point;
        row_name_parts(r, series, sizeof series, &point);
        if (r->repetitions > 1)
            snprintf(label, sizeof label, "%s, %s, run %u: over time", series, point, r->repetition_index + 1);
        else
            snprintf(label, sizeof label, "%s, %s: over time", series, point);
        report_html_timeline(f, label, r->series.points, r->series.n, r->series.saturation_s);
    }
}

/* Whether r is a run of g's point p with a closed run's series; its
 * series' name into series. */
static bool closed_run_at(const struct report_group *g, unsigned p, const struct result_row *r, char *series,
                          size_t cap)
{
    const char *point;
    if (strcmp(r->experiment, g->experiment) || r->aggregate_name || !r->series.n || series_is_open(&r->series))
        return false;
    row_name_parts(r, series, cap, &point);
    return !strcmp(point, g->point[p]);
}

/* The closed runs' rows of g's point p that have a series, and the longest
 * series' length and largest value of the field at off. */
static unsigned rate_runs_extent(const struct report_group *g, unsigned p, const struct result_row *rows,
                                 unsigned n, size_t off, double *top)
{
    unsigned nx = 0;
    *top = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct result_row *r = &rows[i];
        char series[128];
        if (!closed_run_at(g, p, r, series, sizeof series))
            continue;
        nx = r->series.n > nx ? r->series.n : nx;
        for (unsigned k = 0; k < r->series.n; k++) {
            double v;
            memcpy(&v, (const char *)&r->series.points[k] + off, sizeof v);
            *top = fmax(*top, v);
        }
    }
    return nx;
}

/* The field at off of every closed run's series at g's point p over
 * time, one line per run in its series' colour (a run of one second, one
 * dot), on an axis of unit (scale: from the field to it); op_def, unless
 * NULL, says what one op is. Nothing when no run has a non-zero value. */
static void put_rate_chart(FILE *f, const struct report_group *g, unsigned p, const struct result_row *rows,
                           unsigned n, const char *what, const char *op_def, size_t off, double scale,
                           const char *unit)
{
    double top;
    unsigned nx = rate_runs_extent(g, p, rows, n, off, &top);
    if (!nx || top == 0)
        return;
    struct chart_axis a = chart_axis_linear(top, scale, unit);
    char caption[200];
    snprintf(caption, sizeof caption, "%s, %s, second by second (one line per run)", what, g->point[p]);
    if (op_def) {
        /* What the CPU per op counts: for mqtt-ping more than the throughput does. */
        fputs("<p class=\"def\">Counted each second: ", f);
        report_html_escape(f, op_def);
        fputs(".</p>\n", f);
    }
    bool shown[REPORT_MAX_SERIES] = {false};
    const char *notes[REPORT_MAX_SERIES];
    for (unsigned i = 0; i < n; i++) {
        char series[128];
        if (closed_run_at(g, p, &rows[i], series, sizeof series) && group_find_series(g, series) < g->nseries)
            shown[group_find_series(g, series)] = true;
    }
    legend_notes(g, p, p + 1, shown, "no series", notes);
    put_figure_open(f, caption, g, notes, &a);
    chart_time_ticks(f, nx);
    for (unsigned i = 0; i < n; i++) {
        const struct result_row *r = &rows[i];
        char series[128], name[200];
        if (!closed_run_at(g, p, r, series, sizeof series))
            continue;
        unsigned s = group_find_series(g, series);
        if (s == g->nseries)
            continue;
        snprintf(name, sizeof name, "%s, run %u", series, r->repetition_index + 1);
        if (r->series.n == 1 && nx > 1) { /* a polyline of one point draws nothing */
            double v;
            memcpy(&v, (const char *)&r->series.points[0] + off, sizeof v);
            chart_dot(f, chart_time_x(0, nx), &a, v, chart_color(s), name);
        } else {
            put_polyline(f, r->series.points, r->series.n, nx, off, &a, chart_color(s), chart_dash(s), name);
        }
    }
    chart_close(f, &a);
}

/* Whether every run at g's point p that completed was too short for a
 * per-second series (under about a second: one point or none; persec.c
 * keeps a last part second only from 0.1 s), and there was such a run;
 * the longest one's duration into longest_s. */
static bool runs_too_short(const struct report_group *g, unsigned p, const struct result_row *rows, unsigned n,
                           double *longest_s)
{
    bool any = false;
    *longest_s = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct result_row *r = &rows[i];
        char series[128];
        const char *point;
        if (strcmp(r->experiment, g->experiment) || r->aggregate_name || r->error[0] || series_is_open(&r->series))
            continue;
        row_name_parts(r, series, sizeof series, &point);
        if (strcmp(point, g->point[p]))
            continue;
        /* Longer runs without a series (a file from before series were
         * kept), or of no known length, say nothing of it. */
        if (r->series.n >= 2 || r->duration_s >= 2 || !(r->duration_s > 0))
            return false;
        any = true;
        *longest_s = fmax(*longest_s, r->duration_s);
    }
    return any;
}

/* Per point of g, its closed runs' rate and p99 second by second, or
 * where the runs were too short for that, a line saying so instead of an
 * empty chart. */
static void put_rate_charts(FILE *f, const struct report_group *g, const struct result_row *rows, unsigned n)
{
    const struct result_row *any = NULL;
    for (unsigned p = 0; p < g->npoints && !any; p++)
        for (unsigned s = 0; s < g->nseries && !any; s++)
            any = g->value[p][s];
    char what[64];
    snprintf(what, sizeof what, "Rate (%s/s)", result_unit(any));
    for (unsigned p = 0; p < g->npoints; p++) {
        double longest;
        if (runs_too_short(g, p, rows, n, &longest)) {
            char buf[48];
            fputs("<p class=\"def short\">", f);
            report_html_escape(f, g->point[p]);
            fprintf(f, ": the longest run took %s, shorter than 1 s: no per-second series.</p>\n",
                    si_format(buf, sizeof buf, longest, "s"));
            continue;
        }
        put_rate_chart(f, g, p, rows, n, what, any->op_def, offsetof(struct result_point, responses), 1, "");
        put_rate_chart(f, g, p, rows, n, "Latency p99", NULL, offsetof(struct result_point, p99_ms), 1e-3, "s");
    }
}

static void put_cell(FILE *f, const struct report_metric *m, const struct result_row *v,
                     const struct result_row *sd, bool shown)
{
    char buf[128];
    fprintf(f, "<td>%s</td>", shown ? format_metric_value(buf, sizeof buf, m, v, sd) : "–");
}

static void put_table(FILE *f, const struct report_group *g)
{
    unsigned ncols = 0;
    fputs("<table><thead><tr><th>point</th><th>target</th>", f);
    for (size_t i = 0; i < NMETRICS; i++)
        if (group_has(g, report_metrics[i].need)) {
            fprintf(f, "<th>%s</th>", report_metrics[i].title);
            ncols++;
        }
    fputs("</tr></thead><tbody>\n", f);
    for (unsigned p = 0; p < g->npoints; p++)
        for (unsigned s = 0; s < g->nseries; s++) {
            const struct result_row *v = g->value[p][s];
            if (!v)
                continue;
            fputs("<tr><td>", f);
            report_html_escape(f, g->point[p]);
            fprintf(f, "</td><td><span class=\"swatch\" style=\"background:%s\"></span>", chart_color(s));
            report_html_escape(f, g->series[s]);
            fputs("</td>", f);
            if (v->error[0]) {
                fprintf(f, "<td class=\"failed\" colspan=\"%u\">failed: ", ncols ? ncols : 1);
                report_html_escape(f, v->error);
                fputs("</td>", f);
            } else {
                for (size_t i = 0; i < NMETRICS; i++)
                    if (group_has(g, report_metrics[i].need))
                        put_cell(f, &report_metrics[i], v, g->spread[p][s], row_has(v, report_metrics[i].need));
            }
            fputs("</tr>\n", f);
        }
    fputs("</tbody></table>\n", f);
}

static void put_group(FILE *f, const struct report_group *g, const struct result_row *rows, unsigned n)
{
    fputs("<section><h2>", f);
    report_html_escape(f, g->experiment);
    fputs("</h2>\n", f);
    const struct result_row *any = NULL;
    for (unsigned s = 0; s < g->nseries && !any; s++)
        any = g->value[0][s];
    if (any->throughput_def) {
        fputs("<p class=\"def\">Throughput: ", f);
        report_html_escape(f, any->throughput_def);
        fputs(".", f);
        if (any->op_def) {
            fputs(" One operation: ", f);
            report_html_escape(f, any->op_def);
            fputs(".", f);
        }
        fputs("</p>\n", f);
    }
    fprintf(f, "<p class=\"def\">%s</p>\n",
            g->aggregated ? "Bars: mean over the runs; whiskers: one standard deviation."
                          : "Bars: single runs (no repetitions).");
    for (size_t i = 0; i < NMETRICS; i++)
        if (group_has(g, report_metrics[i].need))
            put_chart(f, g, &report_metrics[i]);
    put_spectra(f, g);
    put_table(f, g);
    put_rate_charts(f, g, rows, n);
    put_timelines(f, g->experiment, rows, n);
    fputs("</section>\n", f);
}

const char report_html_style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:800px;color:#222}"
    "h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}"
    ".def{color:#555;margin:.3em 0}figure{margin:1em 0}figcaption{font-weight:600}"
    "svg{max-width:100%;height:auto}.grid{stroke:#e4e4e4}.axis{stroke:#444}"
    ".err{stroke:#222;fill:none}.tick{font-size:11px;text-anchor:end;fill:#555}"
    ".point{font-size:11px;text-anchor:middle;fill:#333}.point.end{text-anchor:end}"
    ".legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:1.2em}"
    ".swatch{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-1px}"
    "table{border-collapse:collapse;font-size:12px;margin-top:1em}"
    "th,td{border:1px solid #ddd;padding:3px 6px;text-align:right}"
    "th:nth-child(-n+2),td:nth-child(-n+2){text-align:left}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:.1em 1em;color:#444}dd{margin:0}"
    ".barval{font-size:10px;text-anchor:middle;fill:#222}.barval.up{text-anchor:start}"
    ".barval.in{text-anchor:end;fill:#fff}.axislabel{font-size:11px;text-anchor:middle;fill:#555}"
    "h3{font-size:1em;margin:1.6em 0 .3em}.line{fill:none;stroke-width:1.5}"
    ".sat{stroke:#d62728;stroke-dasharray:5 4}.satlabel{font-size:11px;fill:#d62728}"
    ".failed rect{fill:#fde2e2;stroke:#d62728}.failed text{fill:#d62728;font-size:16px;text-anchor:middle}"
    "td.failed{background:#fde2e2;color:#a51d1d;text-align:left}"
    ".legend .note{color:#777;font-style:italic}.legend .note.failed{color:#a51d1d}"
    ".na text{font-size:10px;text-anchor:middle;fill:#888}";

int report_html_print(FILE *f, const struct result_context *ctx, const struct result_row *rows, unsigned n)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n" REPORT_HTML_CSP "\n"
               "<title>shootout results %s</title>\n<style>%s</style></head><body>\n",
            ctx->date, report_html_style);
    fputs("<h1>shootout results</h1>\n<dl>", f);
    fputs("<dt>date</dt><dd>", f);
    report_html_escape(f, ctx->date);
    fputs("</dd><dt>host</dt><dd>", f);
    report_html_escape(f, ctx->host_name);
    fprintf(f, " (%ld CPUs)</dd><dt>version</dt><dd>", ctx->num_cpus);
    report_html_escape(f, ctx->version ? ctx->version : "?");
    fputs(" (", f);
    report_html_escape(f, ctx->build_type ? ctx->build_type : "?");
    fputs(" build)</dd><dt>command</dt><dd><code>", f);
    report_html_escape(f, ctx->command_line ? ctx->command_line : "");
    fputs("</code></dd></dl>\n", f);

    const char *seen[REPORT_MAX_EXPERIMENTS];
    unsigned nseen = 0;
    struct report_group g;
    for (unsigned i = 0; i < n && nseen < REPORT_MAX_EXPERIMENTS; i++) {
        bool known = false;
        for (unsigned k = 0; k < nseen && !known; k++)
            known = !strcmp(seen[k], rows[i].experiment);
        if (known)
            continue;
        seen[nseen++] = rows[i].experiment;
        group_build(&g, rows[i].experiment, rows, n);
        if (g.npoints)
            put_group(f, &g, rows, n);
    }
    if (!n)
        fputs("<p>No results.</p>\n", f);
    fputs("</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}

int report_html_write_page(const char *path, int (*print)(FILE *f, const void *arg),
                           const void *arg, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    int failed = print(f, arg);
    if (fclose(f) != 0)
        failed = -1;
    if (failed) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

struct results_page {
    const struct result_context *ctx;
    const struct result_row *rows;
    unsigned n;
};

static int print_results(FILE *f, const void *arg)
{
    const struct results_page *pg = arg;
    return report_html_print(f, pg->ctx, pg->rows, pg->n);
}

int report_html_write(const char *path, const struct result_context *ctx,
                      const struct result_row *rows, unsigned n, char *err, size_t errlen)
{
    struct results_page pg = {ctx, rows, n};
    return report_html_write_page(path, print_results, &pg, err, errlen);
}
