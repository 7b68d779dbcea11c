/* compare_print.h - the comparison of compare.h written out: a terminal
 * table (texttab.h), Markdown, JSON (core/json.h), or a self-contained HTML
 * page in the results page's style (report_html.h). Every form carries the
 * same figures, the points in only one file, and what "~" means.
 */
#ifndef SHOOTOUT_COMPARE_PRINT_H
#define SHOOTOUT_COMPARE_PRINT_H

#include <stddef.h>
#include <stdio.h>

#include "report/compare.h"

enum cmp_format { CMP_FORMAT_TEXT, CMP_FORMAT_MARKDOWN, CMP_FORMAT_JSON };

/* Writes r to f in format. Returns 0, or -1 if writing failed. */
int cmp_print(FILE *f, enum cmp_format format, const struct cmp_result *r);

/* Writes r as a self-contained HTML page to path. 0, or -1 with a message
 * in err. */
int cmp_html_write(const char *path, const struct cmp_result *r, char *err, size_t errlen);

#endif
