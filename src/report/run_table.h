/* run_table.h - the main job's comparison tables: a column per grid point,
 * a row per contender (or contender and protocol) in the registry's order,
 * each cell the mean +/- sample stddev of one figure over the cell's runs,
 * read back from the job's result rows, or why the cell failed; ratio rows
 * of ours to the best other row in each cell, naming it; and the article's
 * published figures quoted beneath, marked as such.
 */
#ifndef SHOOTOUT_RUN_TABLE_H
#define SHOOTOUT_RUN_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report/result.h"
#include "report/texttab.h"

#define RUN_TABLE_MAX 16 /* rows, and columns */
#define RUN_TABLE_RATIOS 2

/* A grid point measured against one server: where its rows are. */
struct run_cell {
    bool measured;
    int rc;            /* the experiment's exit code */
    unsigned first, n; /* its rows in the result set: iterations, then any aggregates */
    char why[64];      /* a failed cell: why, in a few words (run_cell_fail) */
};

/* The mean and sample stddev of metric (a RESULT_METRIC index) over the
 * cell's iterations; false if the cell was not measured or failed. */
bool run_cell_stats(const struct result_set *rows, const struct run_cell *c, unsigned metric,
                    double *mean, double *sd);

/* Says in c->why why a measured cell with rc != 0 failed, from its rows:
 * "died" when the server is gone (died), else "lost N of M msgs", "timed
 * out", "refused", the run's own error, or its exit code. */
void run_cell_fail(const struct result_set *rows, struct run_cell *c, bool died);

/* Ours against the best of the other rows in each cell. */
struct run_ratio {
    const char *label; /* "shootout/best" */
    unsigned ours;     /* its row */
    uint32_t others;   /* bit r: row r competes */
};

/* A published row: a mean and stddev per column, NAN where it has none. */
struct run_quoted {
    const char *label;
    double mean[RUN_TABLE_MAX], sd[RUN_TABLE_MAX];
};

struct run_table {
    const char *title;
    const char *corner; /* what the columns are: "connections" */
    unsigned ncols, nrows;
    const char *col[RUN_TABLE_MAX];
    const char *row[RUN_TABLE_MAX];
    /* A row with a note in place of figures (a contender not measured,
     * and why); NULL: its cells. */
    const char *note[RUN_TABLE_MAX];
    const struct run_cell *cell[RUN_TABLE_MAX][RUN_TABLE_MAX]; /* [row][col] */
    bool smaller_better; /* the best other row is the smallest mean */
    unsigned nratios;
    struct run_ratio ratio[RUN_TABLE_RATIOS];
    /* Quoted rows beneath, in the table's units already, after a line
     * saying quoted_how; none when nquoted is 0. */
    const char *quoted_how;
    const struct run_quoted *quoted;
    unsigned nquoted;
};

/* Prints t (a blank line, the title, the column line, the rows, the
 * ratios, the quoted rows) with each cell's metric multiplied by scale,
 * shown with prec decimals; a failed cell reads "failed: why". A ratio
 * cell is ours' mean over the best other row's, with that row's label up
 * to its version, " (...)". Columns fit their cells (texttab.h). */
void run_table_print(FILE *f, const struct result_set *rows, const struct run_table *t,
                     unsigned metric, double scale, int prec);

/* Starts tt as the job's tables are laid out, for tables of other shapes:
 * ncols columns of figures after the row labels, all left-aligned. */
void run_table_begin(struct tt *tt, unsigned ncols);
/* One row of such a table: label and ':', then the n cells. */
void run_table_row(struct tt *tt, const char *label, unsigned n, const char *const cells[]);

/* The largest server RSS (kB) of the iteration rows of target whose
 * experiment starts with prefix ("mqtt-"); 0 if none. */
double run_peak_rss_kb(const struct result_set *rows, const char *target, const char *prefix);

/* Sets version (static, or outliving the rows) on rows[first..n). */
void run_rows_version(struct result_set *rows, unsigned first, const char *version);

#endif
