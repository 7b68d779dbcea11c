/* chart.c - the report's inline SVG charts (see chart.h). */
#include "report/chart.h"

#include <math.h>
#include <string.h>

#include "report/si.h"

/* Tableau's ten, then six darker ones: told apart at a glance. */
static const char *const colors[CHART_COLORS] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
};

const char *chart_color(unsigned s) { return colors[s % CHART_COLORS]; }

const char *chart_dash(unsigned s) { return s % CHART_COLORS >= 10 ? " stroke-dasharray=\"6 3\"" : ""; }

/* A round step: 1, 2, 2.5 or 5 times a power of ten, at least max / ticks. */
static double nice_step(double max, unsigned ticks)
{
    double raw = max / ticks, mag = pow(10, floor(log10(raw))), steps[] = {1, 2, 2.5, 5, 10};
    for (unsigned i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] * mag >= raw)
            return steps[i] * mag;
    return 10 * mag;
}

struct chart_axis chart_axis_linear(double top, double scale, const char *unit)
{
    if (!(top > 0))
        top = 1;
    double step = nice_step(top, 5);
    return (struct chart_axis){.max = step * ceil(top / step), .step = step, .scale = scale, .unit = unit};
}

struct chart_axis chart_axis_bars(double smallest, double largest, double top, double scale,
                                  const char *unit)
{
    if (!(smallest > 0) || !(largest > CHART_LOG_RATIO * smallest) || !(scale > 0))
        return chart_axis_linear(top, scale, unit);
    /* Decades of the unit the ticks are read in, not of the figures. */
    double lo = floor(log10(smallest * scale)), hi = ceil(log10(top * scale) - 1e-9);
    if (smallest * scale < 2 * pow(10, lo) * (1 - 1e-9))
        lo--; /* a bar on or just above the bottom line would hardly show */
    if (hi - lo > CHART_MAX_TICKS - 1)
        lo = hi - (CHART_MAX_TICKS - 1);
    return (struct chart_axis){.min = pow(10, lo) / scale, .max = pow(10, hi) / scale, .step = 10,
                               .scale = scale, .unit = unit, .log = true};
}

unsigned chart_axis_ticks(const struct chart_axis *a, double *out, unsigned cap)
{
    unsigned n = 0;
    if (a->log) {
        double lo = round(log10(a->min * a->scale)), hi = round(log10(a->max * a->scale));
        for (double e = lo; e <= hi && n < cap; e++)
            out[n++] = pow(10, e) / a->scale;
    } else {
        for (double t = 0; t <= a->max * 1.0001 && n < cap; t += a->step)
            out[n++] = t;
    }
    return n;
}

double chart_y(const struct chart_axis *a, double v)
{
    double share = v / a->max;
    if (a->log)
        share = v > a->min ? log10(v / a->min) / log10(a->max / a->min) : 0;
    return CHART_TOP + CHART_PLOT_H - share * CHART_PLOT_H;
}

void chart_escape(FILE *f, const char *s)
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

void chart_put_si(FILE *f, double v, const char *unit)
{
    char buf[48];
    fputs(si_format(buf, sizeof buf, v, unit), f);
}

void chart_legend_item(FILE *f, const char *color, const char *name, const char *note)
{
    fprintf(f, "<li><span class=\"swatch\" style=\"background:%s\"></span>", color);
    chart_escape(f, name);
    if (note) {
        fprintf(f, " <span class=\"note%s\">(", strcmp(note, "failed") ? "" : " failed");
        chart_escape(f, note);
        fputs(")</span>", f);
    }
    fputs("</li>", f);
}

void chart_begin(FILE *f, const char *caption)
{
    fputs("<figure><figcaption>", f);
    chart_escape(f, caption);
    fputs("</figcaption>\n", f);
}

static void put_hline(FILE *f, const char *cls, double y)
{
    fprintf(f, "<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", cls, CHART_LEFT,
            CHART_W - CHART_RIGHT, y, y);
}

static void put_vline(FILE *f, const char *cls, double x, const struct chart_axis *a)
{
    fprintf(f, "<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", cls, x, x, CHART_TOP,
            chart_y(a, 0));
}

void chart_open(FILE *f, const struct chart_axis *a)
{
    fprintf(f, "<svg viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", CHART_W,
            CHART_H, CHART_W, CHART_H);
    double ticks[CHART_MAX_TICKS];
    unsigned n = chart_axis_ticks(a, ticks, CHART_MAX_TICKS);
    for (unsigned i = 0; i < n; i++) {
        put_hline(f, "grid", chart_y(a, ticks[i]));
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\">", CHART_LEFT - 6, chart_y(a, ticks[i]) + 4);
        chart_put_si(f, ticks[i] * a->scale, a->unit);
        fputs("</text>\n", f);
    }
    if (a->log) {
        double x = 12, y = CHART_TOP + CHART_PLOT_H / 2;
        fprintf(f,
                "<text class=\"axislabel\" transform=\"rotate(-90 %.1f %.1f)\" x=\"%.1f\" y=\"%.1f\">"
                "log scale</text>\n",
                x, y, x, y);
    }
}

void chart_close(FILE *f, const struct chart_axis *a)
{
    put_hline(f, "axis", chart_y(a, 0));
    fputs("\n</svg></figure>\n", f);
}

struct chart_slot chart_bar_slot(unsigned ngroups, unsigned p, unsigned nbars, unsigned s)
{
    double gw = CHART_PLOT_W / ngroups, bw = gw * 0.8 / nbars;
    return (struct chart_slot){CHART_LEFT + p * gw + gw * 0.1 + s * bw, bw * 0.92};
}

double chart_group_x(unsigned ngroups, unsigned p)
{
    double gw = CHART_PLOT_W / ngroups;
    return CHART_LEFT + p * gw + gw / 2;
}

/* Writes a bar's value v above it (its top, whisker included, at y):
 * across a bar wide enough, else upwards, or downwards inside the bar
 * when there is no room above it. */
static void put_bar_value(FILE *f, const struct chart_axis *a, struct chart_slot at, double v, double y)
{
    char buf[48];
    si_format(buf, sizeof buf, v * a->scale, a->unit);
    double cx = at.x + at.w / 2, need = 6.0 * (double)strlen(buf); /* about 6 units a character */
    if (at.w >= need) {
        fprintf(f, "<text class=\"barval\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", cx, y - 3, buf);
        return;
    }
    bool above = y - 3 >= need;
    double ty = above ? y - 3 : y + 3;
    fprintf(f, "<text class=\"barval %s\" transform=\"rotate(-90 %.1f %.1f)\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
            above ? "up" : "in", cx + 3.5, ty, cx + 3.5, ty, buf);
}

void chart_bar(FILE *f, const struct chart_axis *a, struct chart_slot at, const char *color, double val,
               double dev, const char *title)
{
    fprintf(f, "<rect class=\"bar\" fill=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>",
            color, at.x, chart_y(a, val), at.w, chart_y(a, 0) - chart_y(a, val));
    chart_escape(f, title);
    fputs("</title></rect>\n", f);
    if (dev > 0) {
        double cx = at.x + at.w / 2, lo = chart_y(a, val - dev > 0 ? val - dev : 0), hi = chart_y(a, val + dev);
        /* Cut at a log axis' bottom: no cap there, the whisker goes on. */
        bool cut = a->log && val - dev <= a->min;
        fprintf(f, "<path class=\"err\" d=\"M%.1f %.1fV%.1f", cx, lo, hi);
        if (!cut)
            fprintf(f, "M%.1f %.1fH%.1f", cx - 3, lo, cx + 3);
        fprintf(f, "M%.1f %.1fH%.1f\"/>\n", cx - 3, hi, cx + 3);
    }
    if (a->log)
        put_bar_value(f, a, at, val, chart_y(a, val + (dev > 0 ? dev : 0)));
}

void chart_error_mark(FILE *f, const struct chart_axis *a, struct chart_slot at, const char *title)
{
    double y0 = chart_y(a, 0), h = fmin(CHART_PLOT_H / 4, 28);
    fprintf(f, "<g class=\"failed\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", at.x,
            y0 - h, at.w, h);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">✕</text><title>", at.x + at.w / 2, y0 - h / 2 + 5);
    chart_escape(f, title);
    fputs("</title></g>\n", f);
}

void chart_missing_mark(FILE *f, const struct chart_axis *a, struct chart_slot at, const char *title)
{
    fprintf(f, "<g class=\"na\"><text x=\"%.1f\" y=\"%.1f\">n/a</text><title>", at.x + at.w / 2,
            chart_y(a, 0) - 4);
    chart_escape(f, title);
    fputs("</title></g>\n", f);
}

void chart_x_label(FILE *f, double x, const char *text, bool end)
{
    fprintf(f, "<text class=\"point%s\" x=\"%.1f\" y=\"%.1f\">", end ? " end" : "", x,
            CHART_H - CHART_BOTTOM + 18);
    chart_escape(f, text);
    fputs("</text>\n", f);
}

void chart_line_begin(FILE *f, const char *color, const char *dash)
{
    fprintf(f, "<polyline class=\"line\" stroke=\"%s\"%s points=\"", color, dash);
}

void chart_line_point(FILE *f, bool first, double x, const struct chart_axis *a, double v)
{
    fprintf(f, "%s%.1f,%.1f", first ? "" : " ", x, chart_y(a, v));
}

void chart_line_end(FILE *f, const char *title)
{
    fputs("\"><title>", f);
    chart_escape(f, title);
    fputs("</title></polyline>\n", f);
}

void chart_dot(FILE *f, double x, const struct chart_axis *a, double v, const char *color, const char *title)
{
    fprintf(f, "<circle class=\"dot\" fill=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>", color, x,
            chart_y(a, v));
    chart_escape(f, title);
    fputs("</title></circle>\n", f);
}

double chart_time_x(double t, unsigned n) { return CHART_LEFT + (n > 1 ? t / (n - 1) : 0) * CHART_PLOT_W; }

void chart_time_ticks(FILE *f, unsigned n)
{
    double last = n > 1 ? n - 1 : 0;
    double step = ceil(fmax(1, chart_axis_linear(n > 1 ? n - 1 : 1, 1, "").step)); /* whole seconds */
    for (double t = 0; t <= last + 1e-9; t += step) {
        char buf[48];
        chart_x_label(f, chart_time_x(t, n), si_format(buf, sizeof buf, t, "s"), false);
    }
}

double chart_percentile_x(double p)
{
    double lo = log10(2), hi = 4;
    return CHART_LEFT + (log10(100 / (100 - p)) - lo) / (hi - lo) * CHART_PLOT_W;
}

void chart_percentile_ticks(FILE *f, const struct chart_axis *a)
{
    static const double ticks[] = {50, 90, 99, 99.9, 99.99};
    const size_t nticks = sizeof ticks / sizeof ticks[0];
    for (size_t t = 0; t < nticks; t++) {
        char label[16];
        snprintf(label, sizeof label, "p%g", ticks[t]);
        put_vline(f, "grid", chart_percentile_x(ticks[t]), a);
        /* The last one ends at the plot's edge, not past it. */
        chart_x_label(f, chart_percentile_x(ticks[t]), label, t + 1 == nticks);
    }
    fprintf(f, "<text class=\"point\" x=\"%.1f\" y=\"%.1f\">percentile (logarithmic in 1/(1 − p))</text>\n",
            CHART_LEFT + CHART_PLOT_W / 2, CHART_H - 6);
}

void chart_vmark(FILE *f, const struct chart_axis *a, double x, const char *label)
{
    put_vline(f, "sat", x, a);
    fprintf(f, "<text class=\"satlabel\" x=\"%.1f\" y=\"%.1f\">", x + 4, CHART_TOP + 10);
    chart_escape(f, label);
    fputs("</text>\n", f);
}
