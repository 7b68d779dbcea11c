/* test_chart.c - the report's chart axes (report/chart.c): when a bar
 * chart's axis turns logarithmic, its decades and their SI labels, where
 * values land on it (zero and whiskers below its bottom clipped), and the
 * bars' printed values and cut whiskers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/chart.h"
#include "report/si.h"

/* The axis' tick labels joined by spaces, as the chart writes them. */
static const char *tick_labels(const struct chart_axis *a)
{
    static char out[512];
    double t[CHART_MAX_TICKS];
    unsigned n = chart_axis_ticks(a, t, CHART_MAX_TICKS);
    out[0] = 0;
    for (unsigned i = 0; i < n; i++) {
        char buf[48];
        si_format(buf, sizeof buf, t[i] * a->scale, a->unit);
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? " " : "", buf);
    }
    return out;
}

static void test_a_narrow_spread_stays_linear(void **state)
{
    /* 20x exactly is not more than 20x. */
    struct chart_axis a = chart_axis_bars(100e3, 2e6, 2.1e6, 1, "");
    assert_false(a.log);
    assert_string_equal(tick_labels(&a), "0 500k 1M 1.5M 2M 2.5M");
    /* Nothing non-zero, or one bar: linear too. */
    assert_false(chart_axis_bars(0, 5, 5, 1, "").log);
    assert_false(chart_axis_bars(5, 5, 5, 1, "").log);
    assert_false(chart_axis_bars(0, 0, 0, 1, "").log);
}

static void test_a_wide_spread_gets_decades(void **state)
{
    /* Ours at 1.7M msg/s, the slowest at 35k: 48x. */
    struct chart_axis a = chart_axis_bars(35e3, 1.7e6, 1.9e6, 1, "");
    assert_true(a.log);
    assert_float_equal(a.min, 10e3, 1e-6);
    assert_float_equal(a.max, 10e6, 1e-3);
    assert_string_equal(tick_labels(&a), "10k 100k 1M 10M");
    /* A bar on a decade, or less than twice it, gets the decade below, so that it shows. */
    a = chart_axis_bars(1000, 50e3, 55e3, 1, "");
    assert_string_equal(tick_labels(&a), "100 1k 10k 100k");
    a = chart_axis_bars(1.1, 29.3, 30, 1e-6, "s");
    assert_string_equal(tick_labels(&a), "100 ns 1 µs 10 µs 100 µs");
    a = chart_axis_bars(2000, 50e3, 55e3, 1, "");
    assert_string_equal(tick_labels(&a), "1k 10k 100k");
    /* Seconds from microseconds: decades of the unit read, with its prefix. */
    a = chart_axis_bars(3.5, 900, 950, 1e-6, "s");
    assert_true(a.log);
    assert_string_equal(tick_labels(&a), "1 µs 10 µs 100 µs 1 ms");
    /* A top exactly on a decade ends there. */
    a = chart_axis_bars(2e3, 1e6, 1e6, 1, "");
    assert_string_equal(tick_labels(&a), "1k 10k 100k 1M");
}

static void test_values_land_on_the_log_axis(void **state)
{
    struct chart_axis a = chart_axis_bars(35e3, 1.7e6, 1.9e6, 1, ""); /* 10k .. 10M: three decades */
    double bottom = CHART_TOP + CHART_PLOT_H;
    assert_float_equal(chart_y(&a, 10e3), bottom, 1e-9);
    assert_float_equal(chart_y(&a, 10e6), CHART_TOP, 1e-9);
    assert_float_equal(chart_y(&a, 100e3), bottom - CHART_PLOT_H / 3, 1e-9);
    /* Below the bottom, zero and negatives: clipped to it. */
    assert_float_equal(chart_y(&a, 5e3), bottom, 1e-9);
    assert_float_equal(chart_y(&a, 0), bottom, 1e-9);
    assert_float_equal(chart_y(&a, -1), bottom, 1e-9);
    /* The linear axis from zero. */
    struct chart_axis l = chart_axis_linear(2e6, 1, "");
    assert_float_equal(chart_y(&l, 0), bottom, 1e-9);
    assert_float_equal(chart_y(&l, 1e6), bottom - CHART_PLOT_H / 2, 1e-9);
}

static char *draw(void (*fn)(FILE *f, const struct chart_axis *a), const struct chart_axis *a)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    fn(f, a);
    fclose(f);
    return text;
}

static void bars(FILE *f, const struct chart_axis *a)
{
    chart_bar(f, a, chart_bar_slot(1, 0, 2, 0), "#000", 1.7e6, 0.1e6, "ours");
    /* 40k ± 35k: the whisker reaches below the 10k bottom. */
    chart_bar(f, a, chart_bar_slot(1, 0, 2, 1), "#111", 40e3, 35e3, "theirs");
}

static unsigned count(const char *hay, const char *needle)
{
    unsigned c = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        c++;
    return c;
}

static void test_log_bars_print_their_value_and_cut_whiskers(void **state)
{
    struct chart_axis a = chart_axis_bars(40e3, 1.7e6, 1.8e6, 1, "");
    char *svg = draw(bars, &a);
    assert_non_null(strstr(svg, ">1.7M</text>"));
    assert_non_null(strstr(svg, ">40k</text>"));
    /* Two whiskers, four caps less the one cut at the bottom: the cut one
     * ends on the bottom line without a cap. */
    assert_int_equal(count(svg, "class=\"err\""), 2);
    assert_int_equal(count(svg, "H"), 3);
    char bottom[32];
    snprintf(bottom, sizeof bottom, " %.1fV", CHART_TOP + CHART_PLOT_H);
    assert_non_null(strstr(svg, bottom));
    free(svg);
    /* On a linear axis: no printed values, every cap. */
    struct chart_axis l = chart_axis_linear(1.8e6, 1, "");
    svg = draw(bars, &l);
    assert_null(strstr(svg, "class=\"barval"));
    assert_int_equal(count(svg, "H"), 4);
    free(svg);
}

static void open_close(FILE *f, const struct chart_axis *a)
{
    chart_open(f, a);
    chart_close(f, a);
}

static void test_the_log_axis_says_so(void **state)
{
    struct chart_axis a = chart_axis_bars(35e3, 1.7e6, 1.9e6, 1, "");
    char *svg = draw(open_close, &a);
    assert_non_null(strstr(svg, ">log scale</text>"));
    assert_int_equal(count(svg, "<text class=\"tick\""), 4);
    assert_non_null(strstr(svg, ">100k</text>"));
    free(svg);
    struct chart_axis l = chart_axis_linear(1.9e6, 1, "");
    svg = draw(open_close, &l);
    assert_null(strstr(svg, "log scale"));
    free(svg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_narrow_spread_stays_linear),
        cmocka_unit_test(test_a_wide_spread_gets_decades),
        cmocka_unit_test(test_values_land_on_the_log_axis),
        cmocka_unit_test(test_log_bars_print_their_value_and_cut_whiskers),
        cmocka_unit_test(test_the_log_axis_says_so),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
