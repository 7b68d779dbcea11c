/* report_html.c - the self-contained HTML report: rows grouped by
 * experiment, grid point and target, drawn as inline SVG bar charts and
 * latency spectra, and the runs' per-second series as line charts. */
#include "report/report_html.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "report/si.h"

#define REPORT_MAX_POINTS 32
#define REPORT_MAX_SERIES 16
#define REPORT_MAX_EXPERIMENTS 16

/* Chart geometry, in SVG user units. */
#define CHART_W 760.0
#define CHART_H 280.0
#define CHART_LEFT 72.0
#define CHART_RIGHT 16.0
#define CHART_TOP 16.0
#define CHART_BOTTOM 44.0
#define PLOT_W (CHART_W - CHART_LEFT - CHART_RIGHT)
#define PLOT_H (CHART_H - CHART_TOP - CHART_BOTTOM)

/* Sixteen colours told apart at a glance (Tableau's ten, then six darker
 * ones); lines past the tenth are dashed as well, for readers who confuse
 * two hues. */
static const char *const series_colors[REPORT_MAX_SERIES] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
};

static const char *series_dash(unsigned s) { return s >= 10 ? " stroke-dasharray=\"6 3\"" : ""; }

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

void report_html_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

static void put_si(FILE *f, double v, const char *unit)
{
    char buf[48];
    fputs(si_format(buf, sizeof buf, v, unit), f);
}

/* The unit m's figures are shown in, for rows shaped like r. */
static const char *metric_unit(const struct report_metric *m, const struct result_row *r, char *buf,
                               size_t cap)
{
    if (m->unit)
        return m->unit;
    snprintf(buf, cap, "%s/s", result_unit(r));
    return buf;
}

/* A figure of row r with its unit, and " ± " its spread when sd is set. */
static void put_metric_value(FILE *f, const struct report_metric *m, const struct result_row *r,
                             const struct result_row *sd)
{
    char buf[48];
    const char *unit = metric_unit(m, r, buf, sizeof buf);
    put_si(f, r->metric[m->index] * m->scale, unit);
    if (sd) {
        /* "1.7M msg/s ± 239k", "603 ns ± 54 ns": the unit once, but where
         * it carries the prefix. */
        fputs(" ± ", f);
        put_si(f, sd->metric[m->index] * m->scale, m->unit ? unit : "");
    }
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

static unsigned group_series(struct report_group *g, const char *series)
{
    for (unsigned s = 0; s < g->nseries; s++)
        if (!strcmp(g->series[s], series))
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

/* A round axis maximum: 1, 2, 2.5 or 5 times a power of ten per tick. */
static double nice_step(double max, unsigned ticks)
{
    double raw = max / ticks, mag = pow(10, floor(log10(raw))), steps[] = {1, 2, 2.5, 5, 10};
    for (unsigned i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] * mag >= raw)
            return steps[i] * mag;
    return 10 * mag;
}

/* A value axis from 0 up to max, in round steps of step, its ticks
 * labelled in unit (scale: from the plotted figures to it). */
struct axis {
    double max, step, scale;
    const char *unit;
};

static struct axis axis_for(double top, double scale, const char *unit)
{
    if (!(top > 0))
        top = 1;
    double step = nice_step(top, 5);
    return (struct axis){step * ceil(top / step), step, scale, unit};
}

static double axis_y(const struct axis *a, double v) { return CHART_TOP + PLOT_H - v / a->max * PLOT_H; }

static void put_legend_item(FILE *f, const char *color, const char *name)
{
    fprintf(f, "<li><span class=\"swatch\" style=\"background:%s\"></span>", color);
    report_html_escape(f, name);
    fputs("</li>", f);
}

static void put_legend(FILE *f, const struct report_group *g)
{
    fputs("<ul class=\"legend\">", f);
    for (unsigned s = 0; s < g->nseries; s++)
        put_legend_item(f, series_colors[s], g->series[s]);
    fputs("</ul>\n", f);
}

/* Opens a figure (its caption escaped; with the legend of g unless NULL)
 * and its SVG, and draws the value grid with each step's value at the
 * left. */
static void put_figure_open(FILE *f, const char *caption, const struct report_group *legend,
                            const struct axis *a)
{
    fputs("<figure><figcaption>", f);
    report_html_escape(f, caption);
    fputs("</figcaption>\n", f);
    if (legend)
        put_legend(f, legend);
    fprintf(f, "<svg viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", CHART_W,
            CHART_H, CHART_W, CHART_H);
    for (double t = 0; t <= a->max * 1.0001; t += a->step) {
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", CHART_LEFT,
                CHART_W - CHART_RIGHT, axis_y(a, t), axis_y(a, t));
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\">", CHART_LEFT - 6, axis_y(a, t) + 4);
        put_si(f, t * a->scale, a->unit);
        fputs("</text>\n", f);
    }
}

/* Draws the baseline and closes what put_figure_open opened. */
static void put_figure_close(FILE *f, const struct axis *a)
{
    fprintf(f, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", CHART_LEFT,
            CHART_W - CHART_RIGHT, axis_y(a, 0), axis_y(a, 0));
    fputs("</svg></figure>\n", f);
}

/* A failed run where its bar would stand: a red box on the baseline with
 * a cross, the error in its tooltip. */
static void put_error_mark(FILE *f, double x, double w, const struct axis *a, const char *series,
                           const char *point, const char *error)
{
    double y0 = axis_y(a, 0), h = fmin(PLOT_H / 4, 28);
    fprintf(f, "<g class=\"failed\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", x, y0 - h,
            w, h);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">✕</text><title>", x + w / 2, y0 - h / 2 + 5);
    report_html_escape(f, series);
    fputs(", ", f);
    report_html_escape(f, point);
    fputs(": failed: ", f);
    report_html_escape(f, error);
    fputs("</title></g>\n", f);
}

static void put_chart(FILE *f, const struct report_group *g, const struct report_metric *m)
{
    double top = 0;
    const struct result_row *shape = NULL;
    for (unsigned p = 0; p < g->npoints; p++)
        for (unsigned s = 0; s < g->nseries; s++) {
            const struct result_row *v = g->value[p][s], *sd = g->spread[p][s];
            shape = shape ? shape : v;
            if (!v || !row_has(v, m->need))
                continue;
            top = fmax(top, v->metric[m->index] + (sd ? sd->metric[m->index] : 0));
        }
    char buf[48], caption[128];
    const char *unit = metric_unit(m, shape, buf, sizeof buf);
    struct axis a = axis_for(top, m->scale, m->unit ? m->unit : "");
    double gw = PLOT_W / g->npoints, bw = gw * 0.8 / g->nseries;
    /* Ticks in seconds say their unit; a derived unit goes in the caption. */
    snprintf(caption, sizeof caption, m->unit ? "%s" : "%s (%s)", m->title, unit);
    put_figure_open(f, caption, NULL, &a);
    for (unsigned p = 0; p < g->npoints; p++) {
        double gx = CHART_LEFT + p * gw + gw * 0.1;
        for (unsigned s = 0; s < g->nseries; s++) {
            const struct result_row *v = g->value[p][s], *sd = g->spread[p][s];
            double x = gx + s * bw;
            if (v && v->error[0])
                put_error_mark(f, x, bw * 0.92, &a, g->series[s], g->point[p], v->error);
            if (!v || !row_has(v, m->need))
                continue;
            double val = v->metric[m->index], dev = sd ? sd->metric[m->index] : 0;
            fprintf(f, "<rect class=\"bar\" fill=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">",
                    series_colors[s], x, axis_y(&a, val), bw * 0.92, axis_y(&a, 0) - axis_y(&a, val));
            fputs("<title>", f);
            report_html_escape(f, g->series[s]);
            fputs(", ", f);
            report_html_escape(f, g->point[p]);
            fputs(": ", f);
            put_metric_value(f, m, v, sd);
            fputs("</title></rect>\n", f);
            if (dev > 0) {
                double cx = x + bw * 0.46;
                double lo = val - dev > 0 ? val - dev : 0;
                fprintf(f, "<path class=\"err\" d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\"/>\n", cx,
                        axis_y(&a, lo), axis_y(&a, val + dev), cx - 3, axis_y(&a, lo), cx + 3, cx - 3,
                        axis_y(&a, val + dev), cx + 3);
            }
        }
        fprintf(f, "<text class=\"point\" x=\"%.1f\" y=\"%.1f\">", CHART_LEFT + p * gw + gw / 2,
                CHART_H - CHART_BOTTOM + 18);
        report_html_escape(f, g->point[p]);
        fputs("</text>\n", f);
    }
    put_figure_close(f, &a);
}

/* ---- latency spectrum ------------------------------------------------------ */

/* Percentile p (50 .. 99.99) on the logarithmic 1/(1-p) axis. */
static double spectrum_x(double p)
{
    double lo = log10(2), hi = 4;
    return CHART_LEFT + (log10(100 / (100 - p)) - lo) / (hi - lo) * PLOT_W;
}

static bool row_has_spectrum(const struct result_row *r)
{
    return r && row_has(r, NEED_LATENCY) && r->lat_spectrum[RESULT_SPECTRUM_N - 1] > 0;
}

/* For every point of g: the latency at each percentile, one line per
 * series, from p50 to p99.99. */
static void put_spectra(FILE *f, const struct report_group *g)
{
    static const double ticks[] = {50, 90, 99, 99.9, 99.99};
    for (unsigned p = 0; p < g->npoints; p++) {
        double top = 0;
        for (unsigned s = 0; s < g->nseries; s++)
            if (row_has_spectrum(g->value[p][s]))
                top = fmax(top, g->value[p][s]->lat_spectrum[RESULT_SPECTRUM_N - 1]);
        if (top == 0)
            continue;
        struct axis a = axis_for(top, 1e-6, "s");
        char caption[200];
        snprintf(caption, sizeof caption, "Latency by percentile, %s%s", g->point[p],
                 g->aggregated ? " (mean over the runs of each percentile)" : "");
        put_figure_open(f, caption, g, &a);
        for (size_t t = 0; t < sizeof ticks / sizeof ticks[0]; t++) {
            double x = spectrum_x(ticks[t]);
            fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x, x,
                    CHART_TOP, axis_y(&a, 0));
            /* The last one ends at the plot's edge, not past it. */
            fprintf(f, "<text class=\"point%s\" x=\"%.1f\" y=\"%.1f\">p%g</text>\n",
                    t + 1 == sizeof ticks / sizeof ticks[0] ? " end" : "", x, CHART_H - CHART_BOTTOM + 18, ticks[t]);
        }
        for (unsigned s = 0; s < g->nseries; s++) {
            const struct result_row *v = g->value[p][s];
            if (!row_has_spectrum(v))
                continue;
            fprintf(f, "<polyline class=\"line\" stroke=\"%s\"%s points=\"", series_colors[s], series_dash(s));
            for (unsigned i = 0; i < RESULT_SPECTRUM_N; i++)
                fprintf(f, "%s%.1f,%.1f", i ? " " : "", spectrum_x(result_spectrum_p[i]),
                        axis_y(&a, v->lat_spectrum[i]));
            fputs("\"><title>", f);
            report_html_escape(f, g->series[s]);
            fputs(": p50 ", f);
            put_si(f, v->lat_spectrum[0] * 1e-6, "s");
            fputs(", p99.99 ", f);
            put_si(f, v->lat_spectrum[RESULT_SPECTRUM_N - 1] * 1e-6, "s");
            fputs("</title></polyline>\n", f);
        }
        fprintf(f, "<text class=\"point\" x=\"%.1f\" y=\"%.1f\">percentile (logarithmic in 1/(1 − p))</text>\n",
                CHART_LEFT + PLOT_W / 2, CHART_H - 6);
        put_figure_close(f, &a);
    }
}

/* ---- time series ----------------------------------------------------------- */

/* Second t of an n-second series across the plot's width. */
static double time_x(double t, unsigned n) { return CHART_LEFT + (n > 1 ? t / (n - 1) : 0) * PLOT_W; }

static void put_time_ticks(FILE *f, unsigned n)
{
    double step = ceil(fmax(1, axis_for(n > 1 ? n - 1 : 1, 1, "").step)); /* whole seconds */
    for (double t = 0; t <= (n > 1 ? n - 1 : 0) + 1e-9; t += step) {
        fprintf(f, "<text class=\"point\" x=\"%.1f\" y=\"%.1f\">", time_x(t, n), CHART_H - CHART_BOTTOM + 18);
        put_si(f, t, "s");
        fputs("</text>\n", f);
    }
}

/* The field of struct result_point at offset off, second by second, over
 * an axis of nx seconds; dash: an attribute or "". */
static void put_polyline(FILE *f, const struct result_point *pts, unsigned n, unsigned nx, size_t off,
                         const struct axis *a, const char *color, const char *dash, const char *name)
{
    fprintf(f, "<polyline class=\"line\" stroke=\"%s\"%s points=\"", color, dash);
    for (unsigned i = 0; i < n; i++) {
        double v;
        memcpy(&v, (const char *)&pts[i] + off, sizeof v);
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", time_x(i, nx), axis_y(a, v));
    }
    fputs("\"><title>", f);
    report_html_escape(f, name);
    fputs("</title></polyline>\n", f);
}

static void put_saturation(FILE *f, unsigned n, int second, const struct axis *a)
{
    if (second < 0 || (unsigned)second >= n)
        return;
    double x = time_x(second, n);
    fprintf(f, "<line class=\"sat\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x, x, CHART_TOP,
            axis_y(a, 0));
    fprintf(f, "<text class=\"satlabel\" x=\"%.1f\" y=\"%.1f\">saturation</text>\n", x + 4, CHART_TOP + 10);
}

void report_html_timeline(FILE *f, const char *label, const struct result_point *pts, unsigned n,
                          int saturation_s)
{
    static const char *const active_name = "active users", *const responses_name = "responses per second",
                      *const p95_name = "p95 of OK responses";
    const char *active_color = series_colors[0], *responses_color = series_colors[2],
               *p95_color = series_colors[3];
    double top = 0, top_ms = 0;
    for (unsigned i = 0; i < n; i++) {
        top = fmax(top, fmax(pts[i].active, pts[i].responses));
        top_ms = fmax(top_ms, pts[i].p95_ms);
    }
    struct axis counts = axis_for(top, 1, ""), ms = axis_for(top_ms, 1e-3, "s");
    bool sat = saturation_s >= 0 && (unsigned)saturation_s < n;
    fputs("<div class=\"timeline\"><h3>", f);
    report_html_escape(f, label);
    fputs("</h3>\n<p class=\"def\">", f);
    if (sat)
        fprintf(f, "Saturation point (dashed line): %.0f active users at second %d.", pts[saturation_s].active,
                saturation_s);
    else
        fputs("Saturation point: not reached.", f);
    fputs("</p>\n<ul class=\"legend\">", f);
    put_legend_item(f, active_color, active_name);
    put_legend_item(f, responses_color, responses_name);
    put_legend_item(f, p95_color, p95_name);
    fputs("</ul>\n", f);
    put_figure_open(f, "Active users and responses per second", NULL, &counts);
    put_time_ticks(f, n);
    put_polyline(f, pts, n, n, offsetof(struct result_point, active), &counts, active_color, "", active_name);
    put_polyline(f, pts, n, n, offsetof(struct result_point, responses), &counts, responses_color, "",
                 responses_name);
    put_saturation(f, n, saturation_s, &counts);
    put_figure_close(f, &counts);
    put_figure_open(f, "p95 per second (OK responses that ended in that second)", NULL, &ms);
    put_time_ticks(f, n);
    put_polyline(f, pts, n, n, offsetof(struct result_point, p95_ms), &ms, p95_color, "", p95_name);
    put_saturation(f, n, saturation_s, &ms);
    put_figure_close(f, &ms);
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

/* For every point of g: the field at off of every run's series over time,
 * one line per run in its series' colour, on an axis of unit (scale:
 * from the field to it); op_def, unless NULL, says what one op is. */
static void put_rate_chart(FILE *f, const struct report_group *g, const struct result_row *rows, unsigned n,
                           const char *what, const char *op_def, size_t off, double scale, const char *unit)
{
    for (unsigned p = 0; p < g->npoints; p++) {
        double top;
        unsigned nx = rate_runs_extent(g, p, rows, n, off, &top);
        if (!nx || top == 0)
            continue;
        struct axis a = axis_for(top, scale, unit);
        char caption[200];
        snprintf(caption, sizeof caption, "%s, %s, second by second (one line per run)", what, g->point[p]);
        if (op_def) {
            /* What the CPU per op counts: for mqtt-ping more than the throughput does. */
            fputs("<p class=\"def\">Counted each second: ", f);
            report_html_escape(f, op_def);
            fputs(".</p>\n", f);
        }
        put_figure_open(f, caption, g, &a);
        put_time_ticks(f, nx);
        for (unsigned i = 0; i < n; i++) {
            const struct result_row *r = &rows[i];
            char series[128], name[200];
            if (!closed_run_at(g, p, r, series, sizeof series))
                continue;
            unsigned s = 0;
            while (s < g->nseries && strcmp(g->series[s], series))
                s++;
            if (s == g->nseries)
                continue;
            snprintf(name, sizeof name, "%s, run %u", series, r->repetition_index + 1);
            put_polyline(f, r->series.points, r->series.n, nx, off, &a, series_colors[s], series_dash(s), name);
        }
        put_figure_close(f, &a);
    }
}

static void put_rate_charts(FILE *f, const struct report_group *g, const struct result_row *rows, unsigned n)
{
    const struct result_row *any = NULL;
    for (unsigned p = 0; p < g->npoints && !any; p++)
        for (unsigned s = 0; s < g->nseries && !any; s++)
            any = g->value[p][s];
    char what[64];
    snprintf(what, sizeof what, "Rate (%s/s)", result_unit(any));
    put_rate_chart(f, g, rows, n, what, any->op_def, offsetof(struct result_point, responses), 1, "");
    put_rate_chart(f, g, rows, n, "Latency p99", NULL, offsetof(struct result_point, p99_ms), 1e-3, "s");
}

static void put_cell(FILE *f, const struct report_metric *m, const struct result_row *v,
                     const struct result_row *sd, bool shown)
{
    fputs("<td>", f);
    if (shown)
        put_metric_value(f, m, v, sd);
    else
        fputs("–", f);
    fputs("</td>", f);
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
            fprintf(f, "</td><td><span class=\"swatch\" style=\"background:%s\"></span>", series_colors[s]);
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
    put_legend(f, g);
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
    "h3{font-size:1em;margin:1.6em 0 .3em}.line{fill:none;stroke-width:1.5}"
    ".sat{stroke:#d62728;stroke-dasharray:5 4}.satlabel{font-size:11px;fill:#d62728}"
    ".failed rect{fill:#fde2e2;stroke:#d62728}.failed text{fill:#d62728;font-size:16px;text-anchor:middle}"
    "td.failed{background:#fde2e2;color:#a51d1d;text-align:left}";

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
