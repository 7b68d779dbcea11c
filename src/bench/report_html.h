/* report_html.h - the results as one self-contained HTML page: for every
 * experiment, bar charts (inline SVG, one bar per target at every grid
 * point, error bars of one standard deviation) of throughput, latency and
 * CPU per operation, and the table of the same figures. No script, no
 * external file: the page can be mailed or archived as it is.
 *
 * Built from the same rows as the JSON file (result.h): the "mean" and
 * "stddev" aggregate rows where an experiment has them, else its iteration
 * rows.
 */
#ifndef SHOOTOUT_REPORT_HTML_H
#define SHOOTOUT_REPORT_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "bench/result.h"

/* Writes the page to f. Returns 0, or -1 if writing failed. */
int report_html_print(FILE *f, const struct result_context *ctx, const struct result_row *rows,
                      unsigned n);

/* Writes the page to path. Returns 0, or -1 with a message in err. */
int report_html_write(const char *path, const struct result_context *ctx,
                      const struct result_row *rows, unsigned n, char *err, size_t errlen);

#endif
