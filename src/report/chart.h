/* chart.h - the inline SVG charts of the HTML report (report_html.h): one
 * fixed geometry, a value axis with its grid and SI-prefixed ticks, bars
 * with one-stddev whiskers, a failed run's mark where its bar would be,
 * lines over time or over percentiles, vertical marks, and the legend's
 * colours. What to draw and in which order is the page's business; this
 * module only knows how.
 *
 * A figure is written as: chart_begin (figure and caption), the caller's
 * legend (chart_legend_item), chart_open (the SVG and its value grid),
 * the marks, chart_close (the baseline; closes both).
 */
#ifndef SHOOTOUT_CHART_H
#define SHOOTOUT_CHART_H

#include <stdbool.h>
#include <stdio.h>

/* Geometry, in SVG user units: the plot spans x CHART_LEFT .. CHART_LEFT +
 * CHART_PLOT_W and y CHART_TOP .. CHART_TOP + CHART_PLOT_H. */
#define CHART_W 760.0
#define CHART_H 280.0
#define CHART_LEFT 72.0
#define CHART_RIGHT 16.0
#define CHART_TOP 16.0
#define CHART_BOTTOM 44.0
#define CHART_PLOT_W (CHART_W - CHART_LEFT - CHART_RIGHT)
#define CHART_PLOT_H (CHART_H - CHART_TOP - CHART_BOTTOM)

/* Colours there are; series s >= this one reuse s % CHART_COLORS. */
#define CHART_COLORS 16

/* Series s's colour, and its line's dash attribute ("" or one with a
 * leading space): lines past the tenth are dashed as well, for readers
 * who confuse two hues. */
const char *chart_color(unsigned s);
const char *chart_dash(unsigned s);

/* A value axis in the plotted figures' units, its ticks labelled in unit
 * after multiplying by scale: linear from 0 to max in steps of step, or
 * logarithmic from min to max (both whole decades in unit), a tick at
 * every decade. */
struct chart_axis {
    double min, max, step, scale;
    const char *unit;
    bool log;
};

/* Bars whose largest is more than this many times their smallest non-zero
 * one are drawn on a logarithmic axis: on a linear one the small ones
 * would be a line or nothing. */
#define CHART_LOG_RATIO 20.0

/* Most ticks an axis has (chart_axis_ticks). */
#define CHART_MAX_TICKS 24

/* An axis from 0 to a round maximum at or above top (1 when top is not
 * positive), in five or so steps of 1, 2, 2.5 or 5 times a power of ten. */
struct chart_axis chart_axis_linear(double top, double scale, const char *unit);

/* The axis of a bar chart whose bars go from smallest (the smallest
 * non-zero bar; 0: none) to largest, whiskers up to top: linear, or
 * logarithmic when largest > CHART_LOG_RATIO * smallest, from the highest
 * decade at most half of smallest (so that its bar shows) to the decade at
 * or above top. */
struct chart_axis chart_axis_bars(double smallest, double largest, double top, double scale,
                                  const char *unit);

/* The axis' tick values, bottom up, into out[0..cap); returns how many. */
unsigned chart_axis_ticks(const struct chart_axis *a, double *out, unsigned cap);

/* The plot's y of value v; on a logarithmic axis a value at or below its
 * bottom (zero too) is at the bottom. */
double chart_y(const struct chart_axis *a, double v);

/* Writes s with <, >, & and " escaped. */
void chart_escape(FILE *f, const char *s);

/* Writes v with unit, SI-prefixed (si.h). */
void chart_put_si(FILE *f, double v, const char *unit);

/* One legend entry (an <li> of a <ul class="legend">): a swatch of color
 * and name, escaped, and, unless NULL, a note in brackets saying why the
 * chart has nothing of it ("failed" is shown as a failure). */
void chart_legend_item(FILE *f, const char *color, const char *name, const char *note);

/* Opens a figure with its caption (escaped). */
void chart_begin(FILE *f, const char *caption);
/* Opens the SVG and draws a's grid with each tick's value at the left,
 * and "log scale" along a logarithmic axis. */
void chart_open(FILE *f, const struct chart_axis *a);
/* Draws the baseline and closes what chart_begin and chart_open opened. */
void chart_close(FILE *f, const struct chart_axis *a);

/* Where a bar stands: its left edge and width. */
struct chart_slot {
    double x, w;
};

/* Bar s of nbars in group p of ngroups, side by side across the plot. */
struct chart_slot chart_bar_slot(unsigned ngroups, unsigned p, unsigned nbars, unsigned s);
/* The middle of group p of ngroups, where its label goes. */
double chart_group_x(unsigned ngroups, unsigned p);

/* A bar of value val in color with its tooltip title (escaped), and a
 * whisker of dev either side when dev > 0, cut at zero or, on a
 * logarithmic axis, at its bottom (without the cap there, to show it goes
 * on). On a logarithmic axis the bar's value is written above it, so
 * that reading it does not depend on judging a log scale by eye. */
void chart_bar(FILE *f, const struct chart_axis *a, struct chart_slot at, const char *color, double val,
               double dev, const char *title);
/* A failed run where its bar would stand: a red box on the baseline with
 * a cross, title (escaped: who failed and why) in its tooltip. */
void chart_error_mark(FILE *f, const struct chart_axis *a, struct chart_slot at, const char *title);

/* A bar that has no figure (not measured or not run; not failed): "n/a"
 * on the baseline where it would stand, title (escaped) in its tooltip. */
void chart_missing_mark(FILE *f, const struct chart_axis *a, struct chart_slot at, const char *title);

/* A label below the plot at x (escaped); end: it ends there instead of
 * being centred, for the last label at the plot's right edge. */
void chart_x_label(FILE *f, double x, const char *text, bool end);

/* A line through points: chart_line_begin, then chart_line_point for each
 * in order (x on the plot, v on axis a), then chart_line_end with its
 * tooltip title (escaped). */
void chart_line_begin(FILE *f, const char *color, const char *dash);
void chart_line_point(FILE *f, bool first, double x, const struct chart_axis *a, double v);
void chart_line_end(FILE *f, const char *title);
/* A dot at x and v on axis a, in color, with its tooltip title (escaped):
 * a line of a single point. */
void chart_dot(FILE *f, double x, const struct chart_axis *a, double v, const char *color, const char *title);

/* Second t of a series n seconds long across the plot's width (all at the
 * left when n < 2). */
double chart_time_x(double t, unsigned n);
/* Whole seconds along the bottom of an n-second time axis. */
void chart_time_ticks(FILE *f, unsigned n);

/* Percentile p (50 .. 99.99) across the plot on a logarithmic 1/(1 - p)
 * axis; chart_percentile_ticks draws the grid at p50, p90, p99, p99.9 and
 * p99.99 and says what the axis is. */
double chart_percentile_x(double p);
void chart_percentile_ticks(FILE *f, const struct chart_axis *a);

/* A dashed vertical line across the plot at x with label beside its top. */
void chart_vmark(FILE *f, const struct chart_axis *a, double x, const char *label);

#endif
