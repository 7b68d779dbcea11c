/* run_table.c - the main job's comparison tables (see run_table.h). */
#include "bench/run_table.h"

#include <string.h>

#define RUN_TABLE_COL0_MIN 20

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

int run_table_col0(const char *const labels[], unsigned n)
{
    int w = RUN_TABLE_COL0_MIN;
    for (unsigned i = 0; i < n; i++)
        if ((int)strlen(labels[i]) + 2 > w)
            w = (int)strlen(labels[i]) + 2;
    return w;
}

void run_table_line(FILE *f, int col0, const char *label, unsigned n, const char *const cells[])
{
    char buf[96];
    snprintf(buf, sizeof buf, "%s:", label);
    fprintf(f, "%-*s", n ? col0 : 0, buf);
    for (unsigned i = 0; i < n; i++) {
        if (i + 1 < n)
            fprintf(f, "%-*s", RUN_TABLE_COLW, cells[i]);
        else
            fputs(cells[i], f);
    }
    fputc('\n', f);
}

void run_table_print(FILE *f, const struct result_set *rows, const struct run_table *t,
                     unsigned metric, double scale, int prec)
{
    const char *labels[RUN_TABLE_MAX + 2];
    unsigned nlabels = 0;
    labels[nlabels++] = t->corner;
    for (unsigned r = 0; r < t->nrows; r++)
        labels[nlabels++] = t->row[r];
    if (t->ratio)
        labels[nlabels++] = t->ratio;
    int col0 = run_table_col0(labels, nlabels);

    fprintf(f, "\n%s\n", t->title);
    run_table_line(f, col0, t->corner, t->ncols, t->col);
    char text[RUN_TABLE_MAX][RUN_TABLE_COLW + 16];
    const char *cells[RUN_TABLE_MAX];
    double mean[RUN_TABLE_MAX][RUN_TABLE_MAX];
    bool ok[RUN_TABLE_MAX][RUN_TABLE_MAX];
    for (unsigned r = 0; r < t->nrows; r++) {
        for (unsigned c = 0; c < t->ncols; c++) {
            double sd;
            ok[r][c] = run_cell_stats(rows, t->cell[r][c], metric, &mean[r][c], &sd);
            if (ok[r][c])
                snprintf(text[c], sizeof text[c], "%.*f +/- %.*f", prec, mean[r][c] * scale, prec,
                         sd * scale);
            else
                snprintf(text[c], sizeof text[c], "failed");
            cells[c] = text[c];
        }
        run_table_line(f, col0, t->row[r], t->ncols, cells);
    }
    if (!t->ratio)
        return;
    for (unsigned c = 0; c < t->ncols; c++) {
        unsigned a = t->ratio_num, b = t->ratio_den;
        if (ok[a][c] && ok[b][c] && mean[b][c] > 0)
            snprintf(text[c], sizeof text[c], "%.2fx", mean[a][c] / mean[b][c]);
        else
            snprintf(text[c], sizeof text[c], "-");
        cells[c] = text[c];
    }
    run_table_line(f, col0, t->ratio, t->ncols, cells);
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
