/* run_table.c - the main job's comparison tables (see run_table.h). */
#include "report/run_table.h"

#include <string.h>

bool run_cell_stats(const struct result_set *rows, const struct run_cell *c, unsigned metric,
                    double *mean, double *sd)
{
    if (!c || !c->measured || c->rc != 0 || c->n == 0)
        return false;
    const struct result_row *iters = &rows->rows[c->first];
    struct result_row agg[3];
    result_aggregate(iters, iters->repetitions, agg);
    *mean = agg[0].metric[metric];
    *sd = agg[2].metric[metric];
    return true;
}

void run_table_begin(struct tt *tt, unsigned ncols)
{
    char align[RUN_TABLE_MAX + 2];
    memset(align, 'l', ncols + 1);
    align[ncols + 1] = '\0';
    tt_init(tt, align);
}

void run_table_row(struct tt *tt, const char *label, unsigned n, const char *const cells[])
{
    tt_cell(tt, "%s:", label);
    tt_cells(tt, n, cells);
}

void run_table_print(FILE *f, const struct result_set *rows, const struct run_table *t,
                     unsigned metric, double scale, int prec)
{
    struct tt tt;
    run_table_begin(&tt, t->ncols);
    fprintf(f, "\n%s\n", t->title);
    run_table_row(&tt, t->corner, t->ncols, t->col);
    double mean[RUN_TABLE_MAX][RUN_TABLE_MAX];
    bool ok[RUN_TABLE_MAX][RUN_TABLE_MAX];
    for (unsigned r = 0; r < t->nrows; r++) {
        tt_cell(&tt, "%s:", t->row[r]);
        for (unsigned c = 0; c < t->ncols; c++) {
            double sd;
            ok[r][c] = run_cell_stats(rows, t->cell[r][c], metric, &mean[r][c], &sd);
            if (ok[r][c])
                tt_cell(&tt, "%.*f +/- %.*f", prec, mean[r][c] * scale, prec, sd * scale);
            else
                tt_cell(&tt, "failed");
        }
    }
    if (t->ratio) {
        tt_cell(&tt, "%s:", t->ratio);
        for (unsigned c = 0; c < t->ncols; c++) {
            unsigned a = t->ratio_num, b = t->ratio_den;
            if (ok[a][c] && ok[b][c] && mean[b][c] > 0)
                tt_cell(&tt, "%.2fx", mean[a][c] / mean[b][c]);
            else
                tt_cell(&tt, "-");
        }
    }
    tt_print(f, &tt);
    tt_free(&tt);
}

double run_peak_rss_kb(const struct result_set *rows, const char *target, const char *prefix)
{
    double kb = 0;
    for (unsigned k = 0; k < rows->n; k++) {
        const struct result_row *row = &rows->rows[k];
        if (!row->aggregate_name && !strcmp(row->target, target) &&
            !strncmp(row->experiment, prefix, strlen(prefix)) && row->server_rss_max_kb > kb)
            kb = row->server_rss_max_kb;
    }
    return kb;
}
