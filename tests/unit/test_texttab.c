/* test_texttab.c - the terminal tables sized from their content: cells
 * wider than any fixed width stay apart and aligned (the RPC table once
 * printed "gRPC 122.6% slowergRPC 125.6% slower"), right alignment,
 * headings over groups of columns, remarks that size nothing, tables
 * printed as they grow, and the job's tables through run_table_print. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/run_table.h"
#include "report/texttab.h"

static char *printed(struct tt *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    tt_print(f, t);
    fclose(f);
    return text;
}

/* Line i of text (from 0), copied into buf. */
static const char *line(const char *text, unsigned i, char *buf, size_t len)
{
    for (; i > 0; i--) {
        text = strchr(text, '\n');
        assert_non_null(text);
        text++;
    }
    size_t n = strcspn(text, "\n");
    assert_true(n < len);
    memcpy(buf, text, n);
    buf[n] = '\0';
    return buf;
}

static unsigned nlines(const char *text)
{
    unsigned n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

/* The column where needle starts in l, which must hold it. */
static long at(const char *l, const char *needle)
{
    const char *p = strstr(l, needle);
    assert_non_null(p);
    return p - l;
}

/* Each cell starts at least TT_GAP past the end of the one before. */
static void assert_apart(const char *l, const char *left, const char *right)
{
    long end = at(l, left) + (long)strlen(left);
    assert_true(at(l, right) >= end + TT_GAP);
    for (long k = end; k < at(l, right); k++)
        assert_int_equal(l[k], ' ');
}

static void test_wide_cells_stay_apart_and_aligned(void **state)
{
    /* Wider than the 18 characters the tables used to give every cell. */
    const char *head[] = {"requests:", "1000", "2000", "3000"};
    const char *r1[] = {"shootout: REST vs gRPC:", "gRPC 122.6% slower", "gRPC 125.6% slower",
                        "REST 1234567.8% slower than ever"};
    const char *r2[] = {"REST vs grpc-c++ gRPC:", "-", "gRPC 9.1% slower", "x"};
    struct tt t;
    tt_init(&t, "llll");
    tt_cells(&t, 4, head);
    tt_cells(&t, 4, r1);
    tt_cells(&t, 4, r2);
    char *text = printed(&t);
    assert_int_equal(nlines(text), 3);
    char a[256], b[256], c[256];
    line(text, 0, a, sizeof a);
    line(text, 1, b, sizeof b);
    line(text, 2, c, sizeof c);
    assert_apart(b, "gRPC 122.6% slower", "gRPC 125.6% slower");
    assert_apart(b, "gRPC 125.6% slower", "REST 1234567.8%");
    assert_apart(b, "shootout: REST vs gRPC:", "gRPC 122.6%");
    /* Every column starts where its title does. */
    assert_int_equal(at(a, "1000"), at(b, "gRPC 122.6%"));
    assert_int_equal(at(a, "1000"), at(c, " - ") + 1);
    assert_int_equal(at(a, "2000"), at(b, "gRPC 125.6%"));
    assert_int_equal(at(a, "2000"), at(c, "gRPC 9.1%"));
    assert_int_equal(at(a, "3000"), at(b, "REST 1234567.8%"));
    assert_int_equal(at(a, "3000"), at(c, "x"));
    /* As wide as the widest cell and the gap, no wider. */
    assert_int_equal(at(a, "2000") - at(a, "1000"), (long)strlen("gRPC 122.6% slower") + TT_GAP);
    assert_int_equal(at(a, "1000"), (long)strlen("shootout: REST vs gRPC:") + TT_GAP);
    assert_null(strstr(text, " \n")); /* no trailing spaces */
    free(text);
    tt_free(&t);
}

static void test_right_aligned_figures_end_together(void **state)
{
    struct tt t;
    tt_init(&t, "lrr");
    tt_cells(&t, 3, (const char *[]){"request (ms)", "count", "p95"});
    tt_cells(&t, 3, (const char *[]){"Global", "123456789012", "1.5"});
    tt_cells(&t, 3, (const char *[]){"a-much-longer-request-name-than-24", "7", "123456.7"});
    char *text = printed(&t);
    char a[256], b[256], c[256];
    line(text, 0, a, sizeof a);
    line(text, 1, b, sizeof b);
    line(text, 2, c, sizeof c);
    long end_count = at(b, "123456789012") + 12;
    assert_int_equal(at(a, "count") + 5, end_count);
    assert_int_equal(at(c, " 7 ") + 2, end_count);
    assert_int_equal(at(a, "p95") + 3, (long)strlen(c));
    assert_int_equal(at(b, "1.5") + 3, (long)strlen(c));
    assert_apart(c, "a-much-longer-request-name-than-24", "7");
    assert_apart(b, "123456789012", "1.5");
    free(text);
    tt_free(&t);
}

static void test_headings_widen_their_group_and_remarks_size_nothing(void **state)
{
    struct tt t;
    tt_init(&t, "lrrrr");
    tt_cell(&t, "%s", "");
    tt_span(&t, 2, "a heading wider than its two columns");
    tt_span(&t, 2, "peer");
    tt_cells(&t, 5, (const char *[]){"users/s", "a", "b", "c", "d"});
    tt_cells(&t, 5, (const char *[]){"50", "1", "2", "3", "4"});
    tt_cell(&t, "left out");
    tt_tail(&t, "not measured: a reason much longer than all the columns together, %d", 42);
    tt_cell(&t, "short");
    tt_end(&t); /* a row that stops early: the next one starts a line */
    tt_line(&t, "-- a remark --");
    tt_cells(&t, 5, (const char *[]){"100", "10", "20", "30", "40"});
    char *text = printed(&t);
    assert_int_equal(nlines(text), 7);
    char h[256], a[256], r[256], e[256], m[256], z[256];
    line(text, 0, h, sizeof h);
    line(text, 1, a, sizeof a);
    line(text, 3, r, sizeof r);
    line(text, 4, e, sizeof e);
    line(text, 5, m, sizeof m);
    line(text, 6, z, sizeof z);
    assert_string_equal(e, "short");
    /* The group's columns take the heading; the next group starts after it.
     * The first column is as wide as "left out", the tail's label. */
    long col1 = (long)strlen("left out") + TT_GAP;
    assert_int_equal(at(h, "a heading"), col1);
    assert_true(at(a, "b") + 1 == at(h, "a heading") + (long)strlen("a heading wider than its two columns"));
    assert_apart(h, "columns", "peer");
    assert_true(at(a, "c") > at(h, "peer"));
    /* The remark and the tail left the widths alone. */
    assert_string_equal(m, "-- a remark --");
    assert_int_equal(at(r, "not measured"), col1);
    assert_int_equal(at(z, "40") + 2, (long)strlen(a));
    free(text);
    tt_free(&t);
}

static void test_a_growing_table_keeps_its_columns(void **state)
{
    struct tt t;
    tt_init(&t, "lrr");
    t.indent = "  ";
    tt_cells(&t, 3, (const char *[]){"run", "time s", "k msg/s"});
    tt_cells(&t, 3, (const char *[]){"1", "0.100", "12.5"});
    char *first = printed(&t);
    tt_cells(&t, 3, (const char *[]){"mean", "12345678.123", "12.5"});
    char *second = printed(&t);
    assert_int_equal(nlines(first), 2);
    assert_int_equal(nlines(second), 1); /* only what is new */
    char a[256], b[256], c[256];
    line(first, 0, a, sizeof a);
    line(first, 1, b, sizeof b);
    line(second, 0, c, sizeof c);
    assert_int_equal(strncmp(a, "  run", 5), 0);
    assert_int_equal(at(a, "time s") + 6, at(b, "0.100") + 5);
    /* Wider than anything before: its column grows and the cells stay apart. */
    assert_apart(c, "mean", "12345678.123");
    assert_apart(c, "12345678.123", "12.5");
    free(first);
    free(second);
    tt_free(&t);

    /* A column kept for the names to come lines those rows up too. */
    tt_init(&t, "lr");
    tt_reserve(&t, 0, "median");
    tt_cells(&t, 2, (const char *[]){"run", "k msg/s"});
    tt_cells(&t, 2, (const char *[]){"1", "12.5"});
    first = printed(&t);
    tt_cells(&t, 2, (const char *[]){"median", "12.5"});
    second = printed(&t);
    line(first, 1, a, sizeof a);
    assert_string_equal(a, "1          12.5");
    assert_string_equal(second, "median     12.5\n");
    free(first);
    free(second);
    tt_free(&t);
}

static void test_width_counts_code_points(void **state)
{
    assert_int_equal(tt_width(""), 0);
    assert_int_equal(tt_width("abc"), 3);
    assert_int_equal(tt_width("\xc2\xb1" "1 \xc2\xb5s"), 5); /* "±1 µs" */
    struct tt t;
    tt_init(&t, "ll");
    tt_cells(&t, 2, (const char *[]){"\xc2\xb5s", "x"});
    tt_cells(&t, 2, (const char *[]){"ab", "y"});
    char *text = printed(&t);
    assert_string_equal(text, "\xc2\xb5s  x\nab  y\n");
    free(text);
    tt_free(&t);
}

/* The job's grid tables: figures far wider than the old fixed 18
 * characters per cell. */
static void test_run_table_sizes_its_columns_from_the_figures(void **state)
{
    struct result_set rows = {0};
    struct run_cell cells[2][2];
    const double secs[2][2] = {{123456.789, 2.0}, {3.0, 98765.4321}};
    for (unsigned r = 0; r < 2; r++)
        for (unsigned c = 0; c < 2; c++) {
            struct result_row it[2];
            memset(it, 0, sizeof it);
            for (unsigned k = 0; k < 2; k++) {
                snprintf(it[k].name, sizeof it[k].name, "x/%u/%u", r, c);
                it[k].repetitions = 2;
                it[k].repetition_index = k;
                it[k].duration_s = secs[r][c] * (k ? 1.5 : 0.5);
            }
            cells[r][c] = (struct run_cell){.measured = true, .first = rows.n, .n = 2};
            result_set_append(&rows, it, 2);
        }
    struct run_table t = {.title = "total time (ms)", .corner = "requests", .ncols = 2,
                          .nrows = 2, .col = {"1000", "2000"},
                          .row = {"shootout REST", "grpc-c++ gRPC"}, .smaller_better = true,
                          .nratios = 1, .ratio = {{"shootout/best other", 0, 1u << 1}}};
    for (unsigned r = 0; r < 2; r++)
        for (unsigned c = 0; c < 2; c++)
            t.cell[r][c] = &cells[r][c];
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    run_table_print(f, &rows, &t, RESULT_METRIC(duration_s), 1e3, 1);
    fclose(f);
    char a[256], b[256], c[256], d[256];
    line(text, 2, a, sizeof a);
    line(text, 3, b, sizeof b);
    line(text, 4, c, sizeof c);
    line(text, 5, d, sizeof d);
    /* mean 123456789.0 ms, sample stddev 87297132.7 ms */
    assert_apart(b, "123456789.0 +/- 87297132.7", "2000.0 +/- 1414.2");
    assert_apart(c, "3000.0 +/- 2121.3", "98765432.1 +/- 69837706.8");
    assert_int_equal(at(a, "1000"), at(b, "123456789.0"));
    assert_int_equal(at(a, "1000"), at(c, "3000.0"));
    assert_int_equal(at(a, "1000"), at(d, "41152.26x"));
    assert_int_equal(at(a, "2000"), at(b, "2000.0"));
    assert_int_equal(at(a, "2000"), at(c, "98765432.1"));
    assert_int_equal(at(a, "2000"), at(d, "0.00x"));
    assert_int_equal(at(a, "requests:"), 0);
    free(text);
    result_set_free(&rows);
}

/* N rows: the ratio row names the best other row of each column (the
 * largest throughput), never a failed one, whose cell says why it failed;
 * a row with a note has no cells; quoted rows come after a marked line. */
static void test_run_table_ratio_names_the_best_other_and_failures_say_why(void **state)
{
    struct result_set rows = {0};
    struct run_cell cells[3][2];
    const double tput[3][2] = {{900, 800}, {100, 400}, {300, 0}};
    for (unsigned r = 0; r < 3; r++)
        for (unsigned c = 0; c < 2; c++) {
            struct result_row it = {.repetitions = 1, .throughput = tput[r][c]};
            snprintf(it.name, sizeof it.name, "x/%u/%u", r, c);
            cells[r][c] = (struct run_cell){.measured = true, .first = rows.n, .n = 1};
            if (r == 2 && c == 1) { /* lost messages */
                it.sent = 10, it.received = 7, it.lost = 3;
                cells[r][c].rc = 3;
            }
            result_set_append(&rows, &it, 1);
            if (cells[r][c].rc)
                run_cell_fail(&rows, &cells[r][c], false);
        }
    static const struct run_quoted quoted[] = {{"Go", {90.9, NAN}, {11, NAN}}};
    struct run_table t = {.title = "t", .corner = "c", .ncols = 2, .nrows = 4,
                          .col = {"a", "b"}, .row = {"ours (v1)", "alpha (A 1.0)", "beta (B 2.0)",
                                                     "gamma"},
                          .note = {NULL, NULL, NULL, "not measured: not installed"},
                          .nratios = 1, .ratio = {{"ours/best other", 0, 0xe}},
                          .quoted_how = "quoted", .quoted = quoted, .nquoted = 1};
    for (unsigned r = 0; r < 3; r++)
        for (unsigned c = 0; c < 2; c++)
            t.cell[r][c] = &cells[r][c];
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    run_table_print(f, &rows, &t, RESULT_METRIC(throughput), 1, 0);
    fclose(f);
    char beta[256], gamma[256], ratio[256], mark[256], go[256];
    line(text, 5, beta, sizeof beta);
    line(text, 6, gamma, sizeof gamma);
    line(text, 7, ratio, sizeof ratio);
    line(text, 8, mark, sizeof mark);
    line(text, 9, go, sizeof go);
    assert_non_null(strstr(beta, "failed: lost 3 of 10 msgs"));
    assert_non_null(strstr(gamma, "gamma:"));
    assert_non_null(strstr(gamma, "not measured: not installed"));
    assert_apart(ratio, "3.00x beta", "2.00x alpha");
    assert_string_equal(mark, "-- quoted --");
    assert_apart(go, "91 +/- 11", "n/a");
    free(text);
    result_set_free(&rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide_cells_stay_apart_and_aligned),
        cmocka_unit_test(test_right_aligned_figures_end_together),
        cmocka_unit_test(test_headings_widen_their_group_and_remarks_size_nothing),
        cmocka_unit_test(test_a_growing_table_keeps_its_columns),
        cmocka_unit_test(test_width_counts_code_points),
        cmocka_unit_test(test_run_table_sizes_its_columns_from_the_figures),
        cmocka_unit_test(test_run_table_ratio_names_the_best_other_and_failures_say_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
