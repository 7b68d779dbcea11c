/* stats.h - the statistics `shootout compare` judges two sets of
 * repetitions by: the median, and the two-sided Mann-Whitney U test (the
 * test benchstat uses: no assumption that run times are normal, only that
 * repetitions are independent). Exact for small samples without ties, the
 * normal approximation with tie and continuity corrections otherwise, the
 * same choices and figures as scipy.stats.mannwhitneyu.
 */
#ifndef SHOOTOUT_STATS_H
#define SHOOTOUT_STATS_H

#include <stdbool.h>

/* Samples up to this many in all (nx + ny) without ties get the exact
 * distribution of U; more, or any tie, the normal approximation. */
#define STATS_EXACT_MAX 40

struct stats_mwu {
    double u;   /* U of x: the pairs (x_i, y_j) with x_i > y_j, ties counting 1/2 */
    double p;   /* two-sided */
    bool exact; /* p from the exact distribution */
};

/* The median of v[0..n), n >= 1; sorts v in place. */
double stats_median(double *v, unsigned n);

/* Tests x[0..nx) against y[0..ny) (nx, ny >= 1). */
struct stats_mwu stats_mann_whitney(const double *x, unsigned nx, const double *y, unsigned ny);

/* The two-sided p of u from the exact distribution of U for nx against ny
 * samples without ties (nx + ny <= STATS_EXACT_MAX). */
double stats_mwu_p_exact(double u, unsigned nx, unsigned ny);

/* The same from the normal approximation with continuity correction;
 * tie_term is the sum of t^3 - t over the groups of t tied values. */
double stats_mwu_p_normal(double u, unsigned nx, unsigned ny, double tie_term);

/* The smallest two-sided p any outcome can give nx against ny samples:
 * 2 / C(nx + ny, nx), at most 1. Above alpha, no difference can be called
 * significant, however large (3 against 3 runs: 0.1). */
double stats_min_p(unsigned nx, unsigned ny);

#endif
