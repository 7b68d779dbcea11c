/* report_html.h - the results as one self-contained HTML page: for every
 * experiment, bar charts (inline SVG, one bar per target at every grid
 * point, error bars of one standard deviation) of throughput, latency and
 * CPU per operation, a failed run marked where its bar would be; the
 * latency spectrum of every grid point (p50 to p99.99, one line per
 * target); the table of the same figures; and the runs' per-second series
 * (an http-open run's timeline, the closed runs' throughput and p99 per
 * grid point). Every number has its unit and an SI prefix (report/si.h).
 * No script, no external file: the page can be mailed or archived as it
 * is.
 *
 * Built from the same rows as the JSON file (result.h): per grid point and
 * target, the "mean" and "stddev" aggregate rows where there are, else the
 * last iteration row (a failed one: its run stopped there); the series
 * from the iteration rows.
 */
#ifndef SHOOTOUT_REPORT_HTML_H
#define SHOOTOUT_REPORT_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "report/result.h"

/* Writes the page to f. Returns 0, or -1 if writing failed. */
int report_html_print(FILE *f, const struct result_context *ctx, const struct result_row *rows,
                      unsigned n);

/* Writes the timeline of one http-open run, headed by label: active users
 * and responses per second over its n seconds in one chart, p95 in a
 * second one below on the same time axis, and the saturation second (-1:
 * none) as a dashed line across both. */
void report_html_timeline(FILE *f, const char *label, const struct result_point *pts, unsigned n,
                          int saturation_s);

/* The pages' Content Security Policy: nothing may load or run but their
 * own style sheet, so that a page that tried (a script, a remote image)
 * shows it in the browser's console, where the tests look. */
#define REPORT_HTML_CSP \
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"

/* The page's style sheet, for other pages of the same look (compare's). */
extern const char report_html_style[];

/* Writes s to f with <, >, & and " escaped. */
void report_html_escape(FILE *f, const char *s);

/* Writes a page to path with print(f, arg) (0, or -1 if writing failed).
 * Returns 0, or -1 with a message in err. */
int report_html_write_page(const char *path, int (*print)(FILE *f, const void *arg),
                           const void *arg, char *err, size_t errlen);

/* Writes the page to path. Returns 0, or -1 with a message in err. */
int report_html_write(const char *path, const struct result_context *ctx,
                      const struct result_row *rows, unsigned n, char *err, size_t errlen);

#endif
