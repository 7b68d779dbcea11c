/* run_table.c - the main job's comparison tables (see run_table.h). */
#include "report/run_table.h"

#include <math.h>
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

void run_cell_fail(const struct result_set *rows, struct run_cell *c, bool died)
{
    const struct result_row *last = c->n ? &rows->rows[c->first + c->n - 1] : NULL;
    if (died)
        snprintf(c->why, sizeof c->why, "died");
    else if (!last)
        snprintf(c->why, sizeof c->why, "exit %d", c->rc);
    else if (last->lost > 0 && last->sent > 0)
        snprintf(c->why, sizeof c->why, "lost %.0f of %.0f msgs", last->lost,
                 last->lost + last->received);
    else if (last->err_timeout > 0)
        snprintf(c->why, sizeof c->why, "timed out");
    else if (last->err_connect > 0)
        snprintf(c->why, sizeof c->why, "refused");
    else if (last->error[0])
        snprintf(c->why, sizeof c->why, "%.40s", last->error);
    else
        snprintf(c->why, sizeof c->why, "exit %d", c->rc);
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

/* A ratio row: ours' mean over the best competing row's in each column. */
static void ratio_row(struct tt *tt, const struct run_table *t, const struct run_ratio *r,
                      double mean[][RUN_TABLE_MAX], bool ok[][RUN_TABLE_MAX])
{
    tt_cell(tt, "%s:", r->label);
    for (unsigned c = 0; c < t->ncols; c++) {
        int best = -1;
        for (unsigned k = 0; k < t->nrows; k++)
            if (k != r->ours && (r->others >> k & 1) && ok[k][c] && mean[k][c] > 0 &&
                (best < 0 || (t->smaller_better ? mean[k][c] < mean[best][c]
                                                : mean[k][c] > mean[best][c])))
                best = (int)k;
        if (best >= 0 && ok[r->ours][c]) {
            const char *name = t->row[best], *v = strstr(name, " (");
            tt_cell(tt, "%.2fx %.*s", mean[r->ours][c] / mean[best][c],
                    v ? (int)(v - name) : (int)strlen(name), name);
        } else {
            tt_cell(tt, "-");
        }
    }
}

void run_table_print(FILE *f, const struct result_set *rows, const struct run_table *t,
                     unsigned metric, double scale, int prec)
{
    struct tt tt;
    run_table_begin(&tt, t->ncols);
    fprintf(f, "\n%s\n", t->title);
    run_table_row(&tt, t->corner, t->ncols, t->col);
    double mean[RUN_TABLE_MAX][RUN_TABLE_MAX];
    bool ok[RUN_TABLE_MAX][RUN_TABLE_MAX] = {{false}};
    for (unsigned r = 0; r < t->nrows; r++) {
        tt_cell(&tt, "%s:", t->row[r]);
        if (t->note[r]) {
            tt_tail(&tt, "%s", t->note[r]);
            continue;
        }
        for (unsigned c = 0; c < t->ncols; c++) {
            double sd;
            const struct run_cell *cell = t->cell[r][c];
            ok[r][c] = run_cell_stats(rows, cell, metric, &mean[r][c], &sd);
            if (ok[r][c])
                tt_cell(&tt, "%.*f +/- %.*f", prec, mean[r][c] * scale, prec, sd * scale);
            else if (cell && cell->measured && cell->why[0])
                tt_cell(&tt, "failed: %s", cell->why);
            else
                tt_cell(&tt, "failed");
        }
    }
    for (unsigned k = 0; k < t->nratios; k++)
        ratio_row(&tt, t, &t->ratio[k], mean, ok);
    if (t->nquoted)
        tt_line(&tt, "-- %s --", t->quoted_how);
    for (unsigned q = 0; q < t->nquoted; q++) {
        const struct run_quoted *row = &t->quoted[q];
        tt_cell(&tt, "%s:", row->label);
        for (unsigned c = 0; c < t->ncols; c++)
            if (isnan(row->mean[c]))
                tt_cell(&tt, "n/a");
            else
                tt_cell(&tt, "%.*f +/- %.*f", prec, row->mean[c], prec, row->sd[c]);
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

void run_rows_version(struct result_set *rows, unsigned first, const char *version)
{
    for (unsigned k = first; k < rows->n; k++)
        rows->rows[k].target_version = version;
}
