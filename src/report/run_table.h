/* run_table.h - the main job's comparison tables: a column per grid point,
 * a row per server (or server and protocol), each cell the mean +/- sample
 * stddev of one figure over the cell's runs, read back from the job's
 * result rows, and optionally a last row with the ratio of two rows' means.
 */
#ifndef SHOOTOUT_RUN_TABLE_H
#define SHOOTOUT_RUN_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#include "report/result.h"
#include "report/texttab.h"

#define RUN_TABLE_MAX 8 /* rows, and columns */

/* A grid point measured against one server: where its rows are. */
struct run_cell {
    bool measured;
    int rc;            /* the experiment's exit code */
    unsigned first, n; /* its rows in the result set: iterations, then any aggregates */
};

/* The mean and sample stddev of metric (a RESULT_METRIC index) over the
 * cell's iterations; false if the cell was not measured or failed. */
bool run_cell_stats(const struct result_set *rows, const struct run_cell *c, unsigned metric,
                    double *mean, double *sd);

struct run_table {
    const char *title;
    const char *corner; /* what the columns are: "connections" */
    unsigned ncols, nrows;
    const char *col[RUN_TABLE_MAX];
    const char *row[RUN_TABLE_MAX];
    const struct run_cell *cell[RUN_TABLE_MAX][RUN_TABLE_MAX]; /* [row][col] */
    /* A last row, labelled ratio, with row ratio_num's means divided by
     * row ratio_den's; none when ratio is NULL. */
    const char *ratio;
    unsigned ratio_num, ratio_den;
};

/* Prints t (a blank line, the title, the column line, the rows) with each
 * cell's metric multiplied by scale, shown with prec decimals; a cell
 * whose experiment failed reads "failed". Columns fit their cells
 * (texttab.h). */
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

#endif
