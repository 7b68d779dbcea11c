/* compare_print.c - the comparison written out (compare_print.h). Each
 * form draws its cells from the same few functions, so that the table, the
 * Markdown and the page never disagree about a figure. */
#include "report/compare_print.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/json.h"
#include "report/report_html.h"
#include "report/texttab.h"

/* The cells of one delta, as every form but JSON shows them. */
struct cells {
    char figure[40], old[24], new[24], ratio[16], delta[16], p[16], runs[24];
    const char *note; /* "better", "worse", "REGRESSION", "too few runs", "" */
};

/* Four significant digits, or whole numbers from 10000 up: never an
 * exponent in a table. */
static void fmt_value(char *buf, size_t cap, double v)
{
    snprintf(buf, cap, fabs(v) >= 1e4 ? "%.0f" : "%.4g", v);
}

static void delta_cells(const struct cmp_delta *d, struct cells *c)
{
    snprintf(c->figure, sizeof c->figure, "%s %s", cmp_figure_name(d->fig), cmp_figure_unit(d));
    fmt_value(c->old, sizeof c->old, d->old_median);
    fmt_value(c->new, sizeof c->new, d->new_median);
    if (isfinite(d->ratio))
        snprintf(c->ratio, sizeof c->ratio, "%.3f", d->ratio);
    else
        snprintf(c->ratio, sizeof c->ratio, "-");
    bool changed = d->verdict == CMP_BETTER || d->verdict == CMP_WORSE;
    if (changed)
        snprintf(c->delta, sizeof c->delta, "%+.2f%%", d->delta_pct);
    else
        snprintf(c->delta, sizeof c->delta, "~");
    snprintf(c->p, sizeof c->p, "p=%.3f", d->p);
    snprintf(c->runs, sizeof c->runs, "%u+%u", d->n_old, d->n_new);
    c->note = d->regression              ? "REGRESSION"
              : d->verdict == CMP_BETTER ? "better"
              : d->verdict == CMP_WORSE  ? "worse"
              : d->verdict == CMP_FEW    ? "too few runs"
                                         : "";
}

static const char *const titles[] = {"point", "figure", "old", "new", "ratio",
                                     "delta", "p",      "runs", ""};
#define NCOLS (sizeof titles / sizeof *titles)

/* What "~" and the notes mean, a sentence a line, into lines; how many. */
static unsigned legend(const struct cmp_result *r, char lines[3][320])
{
    unsigned n = 0;
    snprintf(lines[n++], sizeof lines[0],
             "old and new are medians over the runs; ratio is new/old; delta is shown when the "
             "difference is significant (Mann-Whitney U, p < %g) and at least %g%%, else ~.",
             r->opt.alpha, r->opt.noise_pct);
    if (r->few)
        snprintf(lines[n++], sizeof lines[0],
                 "too few runs: with this few runs no outcome can give p < %g, however large "
                 "the difference (3 and 3 runs cannot, 4 and 4 can: --runs 4).",
                 r->opt.alpha);
    if (r->opt.fail_pct >= 0)
        snprintf(lines[n++], sizeof lines[0], "%u regression%s worse than %g%% "
                 "(--fail-on-regression).", r->regressions, r->regressions == 1 ? "" : "s",
                 r->opt.fail_pct);
    return n;
}

static void put_legend(FILE *f, const struct cmp_result *r, const char *bullet)
{
    char lines[3][320];
    unsigned n = legend(r, lines);
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "%s%s\n", bullet, lines[i]);
}

static void put_file_line(FILE *f, const char *label, const char *path, const struct cmp_file *cf,
                          const char *code)
{
    fprintf(f, "%s: %s%s%s", label, code, path, code);
    if (cf->date[0] || cf->host[0])
        fprintf(f, " (%s%s%s%s%s)", cf->date, cf->host[0] ? ", " : "", cf->host,
                cf->version[0] ? ", shootout " : "", cf->version);
    fputc('\n', f);
}

/* The points in one file only, and those in both with nothing to judge,
 * a line each. */
static void put_lists(FILE *f, const struct cmp_result *r, const char *bullet, const char *code)
{
    for (unsigned i = 0; i < r->n_only_old; i++)
        fprintf(f, "%sonly in old: %s%s%s\n", bullet, code, r->only_old[i]->name, code);
    for (unsigned i = 0; i < r->n_only_new; i++)
        fprintf(f, "%sonly in new: %s%s%s\n", bullet, code, r->only_new[i]->name, code);
    for (unsigned i = 0; i < r->n_unjudged; i++) {
        const struct cmp_point *o = r->unjudged[2 * i], *n = r->unjudged[2 * i + 1];
        fprintf(f, "%sin both, no figure to compare: %s%s%s (failed runs: %u old, %u new)\n",
                bullet, code, o->name, code, o->failed, n->failed);
    }
}

static void put_text(FILE *f, const struct cmp_result *r)
{
    put_file_line(f, "old", r->old_path, r->old, "");
    put_file_line(f, "new", r->new_path, r->new, "");
    fputc('\n', f);
    struct tt tt;
    tt_init(&tt, "llrrrrrrl");
    tt_cells(&tt, NCOLS, titles);
    for (unsigned i = 0; i < r->n; i++) {
        const struct cmp_delta *d = &r->d[i];
        struct cells c;
        delta_cells(d, &c);
        bool first = i == 0 || r->d[i - 1].old != d->old;
        tt_cell(&tt, "%s", first ? d->old->name : "");
        const char *row[] = {c.figure, c.old, c.new, c.ratio, c.delta, c.p, c.runs, c.note};
        tt_cells(&tt, NCOLS - 1, row);
    }
    if (!r->n)
        tt_line(&tt, "(no point in both files)");
    tt_print(f, &tt);
    tt_free(&tt);
    fputc('\n', f);
    put_lists(f, r, "", "");
    if (r->n_only_old || r->n_only_new || r->n_unjudged)
        fputc('\n', f);
    put_legend(f, r, "");
}

/* A table cell's text with Markdown's column bar escaped. */
static void put_md_cell(FILE *f, const char *s)
{
    fputs("| ", f);
    for (; *s; s++) {
        if (*s == '|' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc(' ', f);
}

static void put_markdown(FILE *f, const struct cmp_result *r)
{
    fputs("## shootout compare\n\n", f);
    put_file_line(f, "- old", r->old_path, r->old, "`");
    put_file_line(f, "- new", r->new_path, r->new, "`");
    fputs("\n| point | figure | old | new | ratio | delta | p | runs | note |\n"
          "|---|---|--:|--:|--:|--:|--:|--:|---|\n",
          f);
    for (unsigned i = 0; i < r->n; i++) {
        struct cells c;
        delta_cells(&r->d[i], &c);
        const char *row[] = {r->d[i].old->name, c.figure, c.old, c.new, c.ratio,
                             c.delta, c.p, c.runs, c.note};
        for (unsigned k = 0; k < NCOLS; k++)
            put_md_cell(f, row[k]);
        fputs("|\n", f);
    }
    fputc('\n', f);
    put_lists(f, r, "- ", "`");
    put_legend(f, r, "- ");
}

static const char *const verdict_names[] = {"same", "better", "worse", "too_few_runs"};

static void json_samples(struct json *j, const char *key, double median,
                         const struct cmp_samples *s)
{
    json_key(j, key);
    json_object_begin(j);
    json_kv(j, "median", median);
    json_key(j, "values");
    json_array_begin(j);
    for (unsigned i = 0; i < s->n; i++)
        json_number(j, s->v[i]);
    json_array_end(j);
    json_object_end(j);
}

static void json_names(struct json *j, const char *key, const struct cmp_point *const *pts,
                       unsigned n)
{
    json_key(j, key);
    json_array_begin(j);
    for (unsigned i = 0; i < n; i++)
        json_string(j, pts[i]->name);
    json_array_end(j);
}

static void json_file(struct json *j, const char *key, const char *path, const struct cmp_file *f)
{
    json_key(j, key);
    json_object_begin(j);
    json_kstr(j, "path", path);
    json_kstr(j, "date", f->date);
    json_kstr(j, "host_name", f->host);
    json_kstr(j, "version", f->version);
    json_object_end(j);
}

static void put_json(FILE *f, const struct cmp_result *r)
{
    struct json j;
    json_init(&j, f);
    json_object_begin(&j);
    json_kv(&j, "schema_version", 1);
    json_file(&j, "old", r->old_path, r->old);
    json_file(&j, "new", r->new_path, r->new);
    json_kv(&j, "alpha", r->opt.alpha);
    json_kv(&j, "noise_pct", r->opt.noise_pct);
    json_key(&j, "fail_on_regression_pct");
    if (r->opt.fail_pct >= 0)
        json_number(&j, r->opt.fail_pct);
    else
        json_null(&j);
    json_kv(&j, "regressions", r->regressions);
    json_key(&j, "figures");
    json_array_begin(&j);
    for (unsigned i = 0; i < r->n; i++) {
        const struct cmp_delta *d = &r->d[i];
        json_object_begin(&j);
        json_kstr(&j, "name", d->old->name);
        json_kstr(&j, "figure", cmp_figure_name(d->fig));
        json_kstr(&j, "unit", cmp_figure_unit(d));
        json_kstr(&j, "better", d->fig == CMP_THROUGHPUT ? "higher" : "lower");
        json_samples(&j, "old", d->old_median, &d->old->fig[d->fig]);
        json_samples(&j, "new", d->new_median, &d->new->fig[d->fig]);
        json_kv(&j, "ratio", d->ratio);
        json_kv(&j, "delta_pct", d->delta_pct);
        json_kv(&j, "u", d->u);
        json_kv(&j, "p", d->p);
        json_kstr(&j, "verdict", verdict_names[d->verdict]);
        json_key(&j, "regression");
        json_bool(&j, d->regression);
        json_object_end(&j);
    }
    json_array_end(&j);
    json_names(&j, "only_old", r->only_old, r->n_only_old);
    json_names(&j, "only_new", r->only_new, r->n_only_new);
    json_key(&j, "not_compared");
    json_array_begin(&j);
    for (unsigned i = 0; i < r->n_unjudged; i++) {
        json_object_begin(&j);
        json_kstr(&j, "name", r->unjudged[2 * i]->name);
        json_kv(&j, "old_failed", r->unjudged[2 * i]->failed);
        json_kv(&j, "new_failed", r->unjudged[2 * i + 1]->failed);
        json_object_end(&j);
    }
    json_array_end(&j);
    json_object_end(&j);
    fputc('\n', f);
}

int cmp_print(FILE *f, enum cmp_format format, const struct cmp_result *r)
{
    switch (format) {
    case CMP_FORMAT_TEXT:
        put_text(f, r);
        break;
    case CMP_FORMAT_MARKDOWN:
        put_markdown(f, r);
        break;
    case CMP_FORMAT_JSON:
        put_json(f, r);
        break;
    }
    return ferror(f) ? -1 : 0;
}

/* ---- the HTML page ------------------------------------------------------------ */

static const char compare_style[] =
    "body{max-width:1200px}"
    ".better td:nth-child(6){background:#dff3df}.worse td:nth-child(6){background:#f8dcdc}"
    ".REGRESSION td{background:#f8dcdc}svg.d{vertical-align:middle}"
    ".dz{stroke:#888}.db{fill:#2ca02c}.dw{fill:#d62728}.ds{fill:#bbb}";

/* The delta as a bar from the middle of a 120-wide strip, half its width
 * for 50%: green when better, red when worse, grey when not significant. */
static void put_delta_bar(FILE *f, const struct cmp_delta *d)
{
    double pct = isfinite(d->delta_pct) ? fmax(-50, fmin(50, d->delta_pct)) : 0;
    double x = pct < 0 ? 60 + pct * 1.2 : 60, w = fabs(pct) * 1.2;
    const char *cls = d->verdict == CMP_BETTER ? "db" : d->verdict == CMP_WORSE ? "dw" : "ds";
    fprintf(f,
            "<svg class=\"d\" width=\"120\" height=\"12\" viewBox=\"0 0 120 12\">"
            "<rect class=\"%s\" x=\"%.1f\" y=\"2\" width=\"%.1f\" height=\"8\"/>"
            "<line class=\"dz\" x1=\"60\" y1=\"0\" x2=\"60\" y2=\"12\"/></svg>",
            cls, x, w);
}

static void put_html_file(FILE *f, const char *label, const char *path, const struct cmp_file *cf)
{
    fprintf(f, "<dt>%s</dt><dd><code>", label);
    report_html_escape(f, path);
    fputs("</code> ", f);
    report_html_escape(f, cf->date);
    fputs(" ", f);
    report_html_escape(f, cf->host);
    fputs("</dd>", f);
}

static void put_html_names(FILE *f, const char *label, const struct cmp_point *const *pts,
                           unsigned n)
{
    if (!n)
        return;
    fprintf(f, "<h2>Only in the %s file</h2>\n<ul>", label);
    for (unsigned i = 0; i < n; i++) {
        fputs("<li>", f);
        report_html_escape(f, pts[i]->name);
        fputs("</li>", f);
    }
    fputs("</ul>\n", f);
}

static int put_html(FILE *f, const struct cmp_result *r)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n" REPORT_HTML_CSP "\n"
               "<title>shootout compare</title>\n<style>%s%s</style></head><body>\n"
               "<h1>shootout compare</h1>\n<dl>",
            report_html_style, compare_style);
    put_html_file(f, "old", r->old_path, r->old);
    put_html_file(f, "new", r->new_path, r->new);
    fputs("</dl>\n<table><thead><tr>", f);
    for (unsigned k = 0; k < NCOLS; k++)
        fprintf(f, "<th>%s</th>", titles[k]);
    fputs("<th></th></tr></thead><tbody>\n", f);
    for (unsigned i = 0; i < r->n; i++) {
        const struct cmp_delta *d = &r->d[i];
        struct cells c;
        delta_cells(d, &c);
        fprintf(f, "<tr class=\"%s\">", d->regression              ? "REGRESSION"
                                        : d->verdict == CMP_BETTER ? "better"
                                        : d->verdict == CMP_WORSE  ? "worse"
                                                                   : "same");
        const char *row[] = {d->old->name, c.figure, c.old, c.new, c.ratio,
                             c.delta, c.p, c.runs, c.note};
        for (unsigned k = 0; k < NCOLS; k++) {
            fputs("<td>", f);
            report_html_escape(f, row[k]);
            fputs("</td>", f);
        }
        fputs("<td>", f);
        put_delta_bar(f, d);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    if (!r->n)
        fputs("<p>No point in both files.</p>\n", f);
    put_html_names(f, "old", r->only_old, r->n_only_old);
    put_html_names(f, "new", r->only_new, r->n_only_new);
    if (r->n_unjudged)
        fputs("<h2>In both files, no figure to compare</h2>\n<ul>", f);
    for (unsigned i = 0; i < r->n_unjudged; i++) {
        fputs("<li>", f);
        report_html_escape(f, r->unjudged[2 * i]->name);
        fprintf(f, " (failed runs: %u old, %u new)</li>", r->unjudged[2 * i]->failed,
                r->unjudged[2 * i + 1]->failed);
    }
    if (r->n_unjudged)
        fputs("</ul>\n", f);
    char lines[3][320];
    unsigned nl = legend(r, lines);
    for (unsigned i = 0; i < nl; i++) {
        fputs("<p class=\"def\">", f);
        report_html_escape(f, lines[i]);
        fputs("</p>\n", f);
    }
    fputs("</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}

static int print_page(FILE *f, const void *r) { return put_html(f, r); }

int cmp_html_write(const char *path, const struct cmp_result *r, char *err, size_t errlen)
{
    return report_html_write_page(path, print_page, r, err, errlen);
}
