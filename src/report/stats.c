/* stats.c - median and Mann-Whitney U (stats.h). */
#include "report/stats.h"

#include <math.h>
#include <stdlib.h>

#include "core/mem.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2; /* halves first: no overflow */
}

/* The number of arrangements of nx x's and ny y's by their U are the
 * coefficients of the Gaussian binomial [nx+ny choose nx] in q, the product
 * over i = 1..nx of (1 - q^(ny+i)) / (1 - q^i): every partial product is a
 * polynomial too, so multiplying and dividing in turn stays exact in
 * doubles (the counts are below C(40, 20) < 2^53). */
double stats_mwu_p_exact(double u, unsigned nx, unsigned ny)
{
    unsigned deg = nx * ny, len = deg + nx + 1;
    double *c = mem_calloc(len, sizeof *c);
    c[0] = 1;
    for (unsigned i = 1; i <= nx; i++) {
        unsigned a = ny + i;
        for (unsigned k = len - 1; k >= a; k--)
            c[k] -= c[k - a];
        for (unsigned k = i; k < len; k++)
            c[k] += c[k - i];
    }
    /* The distribution is symmetric about deg / 2: the tail below the
     * smaller of u and deg - u, twice. */
    double lo = fmin(u, deg - u), tail = 0, total = 0;
    for (unsigned k = 0; k <= deg; k++) {
        total += c[k];
        if (k <= lo)
            tail += c[k];
    }
    mem_free(c);
    return fmin(1, 2 * tail / total);
}

double stats_mwu_p_normal(double u, unsigned nx, unsigned ny, double tie_term)
{
    double n = (double)nx + ny, mu = (double)nx * ny / 2;
    double var = (double)nx * ny / 12 * ((n + 1) - tie_term / (n * (n - 1)));
    if (!(var > 0))
        return 1; /* every value tied: nothing tells the samples apart */
    double z = (fmax(u, nx * (double)ny - u) - mu - 0.5) / sqrt(var);
    return fmin(1, fmax(0, erfc(z / sqrt(2))));
}

struct ranked {
    double v;
    bool in_x;
};

static int cmp_ranked(const void *a, const void *b)
{
    return cmp_double(&((const struct ranked *)a)->v, &((const struct ranked *)b)->v);
}

struct stats_mwu stats_mann_whitney(const double *x, unsigned nx, const double *y, unsigned ny)
{
    unsigned n = nx + ny;
    struct ranked *all = mem_alloc(n * sizeof *all);
    for (unsigned i = 0; i < nx; i++)
        all[i] = (struct ranked){x[i], true};
    for (unsigned i = 0; i < ny; i++)
        all[nx + i] = (struct ranked){y[i], false};
    qsort(all, n, sizeof *all, cmp_ranked);

    /* Ranks from 1, a group of ties sharing the mean of its ranks. */
    double rank_x = 0, tie_term = 0;
    for (unsigned i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && all[j].v == all[i].v; j++)
            ;
        double t = j - i, mid = (i + 1 + j) / 2.0;
        tie_term += t * t * t - t;
        for (unsigned k = i; k < j; k++)
            if (all[k].in_x)
                rank_x += mid;
    }
    mem_free(all);

    struct stats_mwu r = {.u = rank_x - nx * (nx + 1.0) / 2};
    r.exact = tie_term == 0 && n <= STATS_EXACT_MAX;
    r.p = r.exact ? stats_mwu_p_exact(r.u, nx, ny) : stats_mwu_p_normal(r.u, nx, ny, tie_term);
    return r;
}

double stats_min_p(unsigned nx, unsigned ny)
{
    double c = 1; /* C(nx + ny, nx), built up as a product of ratios */
    for (unsigned i = 1; i <= nx; i++)
        c = c * (ny + i) / i;
    return fmin(1, 2 / c);
}
