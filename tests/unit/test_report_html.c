/* test_report_html.c - the HTML report: grouping of rows into charts and
 * tables, escaping, which charts appear for which figures, and the line
 * charts of a per-second series with its saturation mark. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "load/http/http_open.h"
#include "report/report_html.h"

static struct result_row make_row(const char *experiment, const char *target, const char *agg,
                                  double conns, double throughput)
{
    struct result_row r;
    memset(&r, 0, sizeof r);
    r.experiment = experiment;
    snprintf(r.target, sizeof r.target, "%s", target);
    snprintf(r.name, sizeof r.name, "%s/%s/%.0fc", experiment, target, conns);
    r.aggregate_name = agg;
    r.throughput_def = "messages delivered per second";
    result_param(&r, "conns", conns);
    result_param(&r, "qos", 0);
    r.throughput = throughput;
    return r;
}

static char *render(const struct result_row *rows, unsigned n)
{
    struct result_context ctx = {.date = "2026-11-30T00:00:00Z", .host_name = "h<ost>", .num_cpus = 2,
                                 .command_line = "shootout run --quick", .version = "0.1.0",
                                 .build_type = "release"};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(report_html_print(f, &ctx, rows, n), 0);
    fclose(f);
    return text;
}

static unsigned count(const char *hay, const char *needle)
{
    unsigned c = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        c++;
    return c;
}

static void test_aggregates_become_bars_with_whiskers(void **state)
{
    struct result_row rows[] = {
        make_row("mqtt-load", "shootout", NULL, 100, 1000),  /* iterations are not drawn */
        make_row("mqtt-load", "shootout", "mean", 100, 2000),
        make_row("mqtt-load", "shootout", "stddev", 100, 100),
        make_row("mqtt-load", "shootout", "mean", 500, 3000),
        make_row("mqtt-load", "shootout", "stddev", 500, 0),
        make_row("mqtt-load", "mos<quitto>", "mean", 100, 500),
        make_row("mqtt-load", "mos<quitto>", "stddev", 100, 50),
        make_row("mqtt-load", "mos<quitto>", "mean", 500, 600),
        make_row("mqtt-load", "mos<quitto>", "stddev", 500, 60),
    };
    char *html = render(rows, sizeof rows / sizeof rows[0]);
    assert_int_equal(count(html, "<svg"), 1); /* throughput only: no latency, no CPU sampled */
    assert_int_equal(count(html, "class=\"bar\""), 4);
    assert_int_equal(count(html, "class=\"err\""), 3); /* a zero stddev draws no whisker */
    assert_non_null(strstr(html, "shootout, 100c: 2k msg/s ± 100</title>"));
    /* Points are labelled by the last part of the row name, as the tables. */
    assert_non_null(strstr(html, ">500c<"));
    /* Text from rows and context is escaped. */
    assert_non_null(strstr(html, "mos&lt;quitto&gt;"));
    assert_null(strstr(html, "<quitto>"));
    assert_null(strstr(html, "h<ost>"));
    assert_int_equal(count(html, "<tr><td>"), 4);
    assert_non_null(strstr(html, "mean over the runs"));
    assert_null(strstr(html, "timeline")); /* rows without a per-second series */
    free(html);
}

static void test_iterations_alone_are_drawn_and_latency_charts_appear(void **state)
{
    struct result_row rows[2] = {
        make_row("mqtt-ping", "shootout", NULL, 400, 9000),
        make_row("mqtt-ping", "mosquitto", NULL, 400, 4000),
    };
    rows[0].has_latency = rows[1].has_latency = true;
    rows[0].lat_p50 = 11;
    rows[0].lat_p99 = 42;
    rows[0].server_pid = 123; /* server CPU sampled for one target only */
    rows[0].server_cpu_us_per_op = 3.5;
    char *html = render(rows, 2);
    assert_int_equal(count(html, "<svg"), 4); /* throughput, p50, p99, server CPU */
    assert_int_equal(count(html, "class=\"err\""), 0);
    assert_non_null(strstr(html, "single runs"));
    assert_non_null(strstr(html, "Server CPU per operation"));
    assert_null(strstr(html, "Client CPU per operation"));
    assert_non_null(strstr(html, ">400c<"));
    /* The target without a server sample shows a dash, not a zero. */
    assert_non_null(strstr(html, "<td>–</td>"));
    free(html);
}

static void test_experiments_get_their_own_sections(void **state)
{
    struct result_row rows[] = {
        make_row("mqtt-load", "shootout", NULL, 100, 1),
        make_row("rpc-seq", "shootout-grpc", NULL, 1000, 2),
        make_row("mqtt-load", "shootout", NULL, 500, 3),
    };
    char *html = render(rows, 3);
    assert_int_equal(count(html, "<section>"), 2);
    char *load = strstr(html, "<h2>mqtt-load</h2>"), *rpc = strstr(html, "<h2>rpc-seq</h2>");
    assert_non_null(load);
    assert_non_null(rpc);
    assert_true(load < rpc);
    free(html);
}

/* The series is the middle of the name: one per target and protocol. */
static void test_series_and_points_come_from_row_names(void **state)
{
    struct result_row rows[] = {
        make_row("rpc-seq", "shootout", NULL, 1, 10),
        make_row("rpc-seq", "shootout", NULL, 1, 20),
        make_row("rpc-seq", "grpc-c++", NULL, 1, 30),
    };
    snprintf(rows[0].name, sizeof rows[0].name, "rpc-seq/shootout/rest/1000n1c");
    snprintf(rows[1].name, sizeof rows[1].name, "rpc-seq/shootout/grpc/1000n1c");
    snprintf(rows[2].name, sizeof rows[2].name, "rpc-seq/grpc-c++/grpc/1000n1c");
    char *html = render(rows, 3);
    assert_int_equal(count(html, "class=\"bar\""), 3); /* one point, three series */
    assert_int_equal(count(html, ">1000n1c<"), 1 + 3); /* the axis label and a table row each */
    assert_non_null(strstr(html, "shootout/rest, 1000n1c: 10 msg/s"));
    assert_non_null(strstr(html, "grpc-c++/grpc, 1000n1c: 30 msg/s"));
    /* A name without series and point falls back to the target. */
    snprintf(rows[0].name, sizeof rows[0].name, "plain");
    free(html);
    html = render(rows, 1);
    assert_non_null(strstr(html, "shootout, plain: 10 msg/s"));
    free(html);
}

/* Axis ticks and cells carry SI prefixes and units, not "2000000". */
static void test_axes_and_cells_are_si_prefixed(void **state)
{
    struct result_row rows[] = {
        make_row("mqtt-ping", "shootout", NULL, 100, 2.4e6),
        make_row("mqtt-ping", "mosquitto", NULL, 100, 1.1e6),
    };
    rows[0].has_latency = rows[1].has_latency = true;
    rows[0].lat_p50 = 250;
    rows[0].lat_p99 = 1500;
    rows[1].lat_p50 = 900;
    rows[1].lat_p99 = 4000;
    char *html = render(rows, 2);
    assert_non_null(strstr(html, ">2.5M</text>")); /* the throughput axis up to 2.5M */
    assert_null(strstr(html, ">2500000<"));
    assert_non_null(strstr(html, ">200 µs</text>"));  /* the p50 axis */
    assert_non_null(strstr(html, ">4 ms</text>"));    /* the p99 axis */
    assert_non_null(strstr(html, "<td>2.4M msg/s</td>"));
    assert_non_null(strstr(html, "<td>1.5 ms</td>"));
    assert_non_null(strstr(html, "Throughput (msg/s)"));
    free(html);
}

/* Contenders orders of magnitude apart: the bar axis turns logarithmic,
 * says so, and every bar carries its value. */
static void test_a_wide_spread_gets_a_log_axis(void **state)
{
    struct result_row rows[] = {
        make_row("mqtt-load", "shootout", NULL, 100, 1.7e6),
        make_row("mqtt-load", "mosquitto", NULL, 100, 400e3),
        make_row("mqtt-load", "activemq", NULL, 100, 35e3),
    };
    char *html = render(rows, 3);
    assert_non_null(strstr(html, "Throughput (msg/s, log scale)"));
    assert_non_null(strstr(html, ">log scale</text>"));
    assert_int_equal(count(html, "class=\"barval"), 3);
    assert_non_null(strstr(html, ">35k</text>"));
    assert_non_null(strstr(html, ">10k</text>")); /* the bottom decade */
    assert_non_null(strstr(html, ">10M</text>"));
    free(html);
    /* 1.7M against 400k alone: 4.25x, linear, no printed values. */
    html = render(rows, 2);
    assert_non_null(strstr(html, "Throughput (msg/s)</figcaption>"));
    assert_null(strstr(html, "log scale"));
    assert_null(strstr(html, "class=\"barval"));
    free(html);
}

/* Every latency row draws its spectrum: one line per series from p50 to
 * p99.99 on the 1/(1-p) axis. */
static void test_latency_spectrum_per_point(void **state)
{
    struct result_row rows[] = {
        make_row("rpc-seq", "shootout", NULL, 1, 10),
        make_row("rpc-seq", "grpc-go", NULL, 1, 10),
        make_row("rpc-seq", "shootout", NULL, 8, 10),
    };
    for (unsigned r = 0; r < 3; r++) {
        rows[r].has_latency = true;
        for (unsigned i = 0; i < RESULT_SPECTRUM_N; i++)
            rows[r].lat_spectrum[i] = 100 * (i + 1) * (r + 1);
    }
    rows[2].lat_spectrum[RESULT_SPECTRUM_N - 1] = 0; /* no spectrum kept: no chart */
    char *html = render(rows, 3);
    assert_int_equal(count(html, "Latency by percentile"), 1);
    assert_non_null(strstr(html, "Latency by percentile, 1c"));
    /* Ticks at p50, p90, p99, p99.9, p99.99: 50 at the left, 99.99 at the right. */
    assert_non_null(strstr(html, "x=\"72.0\" y=\"254.0\">p50</text>"));
    assert_non_null(strstr(html, "x=\"744.0\" y=\"254.0\">p99.99</text>"));
    assert_non_null(strstr(html, ">p99.9</text>"));
    /* p90: log10(10) = 1 of log10(2) .. 4 */
    assert_non_null(strstr(html, "x=\"199.0\" y=\"254.0\">p90</text>"));
    assert_int_equal(count(html, "<polyline"), 2);
    /* grpc-go's line ends at 12 * 200 us = 2.4 ms, the axis' top 2.5 ms. */
    assert_non_null(strstr(html, "grpc-go: p50 200 µs, p99.99 2.4 ms"));
    assert_non_null(strstr(html, ">2.5 ms</text>"));
    free(html);
}

/* A failed run shows as such: a mark where its bar would be, and its
 * error across its table row, never a zero bar. */
static void test_failed_runs_are_drawn_as_errors(void **state)
{
    struct result_row rows[] = {
        make_row("mqtt-load", "shootout", NULL, 100, 1000),
        make_row("mqtt-load", "shootout", "mean", 100, 1000),
        make_row("mqtt-load", "shootout", "stddev", 100, 10),
        make_row("mqtt-load", "bro<ken>", NULL, 100, 0),
    };
    snprintf(rows[3].error, sizeof rows[3].error, "no progress for 10 s & <gone>");
    char *html = render(rows, 4);
    assert_int_equal(count(html, "class=\"bar\""), 1);
    assert_int_equal(count(html, "<g class=\"failed\">"), 1);
    assert_non_null(strstr(html, "bro&lt;ken&gt;, 100c: failed: no progress for 10 s &amp; &lt;gone&gt;"));
    assert_non_null(strstr(html, "<td class=\"failed\" colspan=\"1\">failed: no progress"));
    free(html);
}

/* Every chart has the legend of every contender of the table, in the
 * table's order; one the chart has nothing of says why: its run failed,
 * or the figure was not measured (and "n/a" stands where its bar would). */
static void test_every_chart_accounts_for_every_contender(void **state)
{
    struct result_row rows[] = {
        make_row("mqtt-ping", "shootout", NULL, 100, 9000),
        make_row("mqtt-ping", "mosquitto", NULL, 100, 4000),
        make_row("mqtt-ping", "aedes", NULL, 100, 0),
        make_row("mqtt-ping", "shootout", NULL, 200, 9500), /* the others did not run there */
    };
    snprintf(rows[2].error, sizeof rows[2].error, "connection refused");
    for (unsigned r = 0; r < 4; r += r == 1 ? 2 : 1) {
        rows[r].has_latency = true;
        rows[r].lat_p50 = rows[r].lat_p99 = 10 * (r + 1);
        for (unsigned i = 0; i < RESULT_SPECTRUM_N; i++)
            rows[r].lat_spectrum[i] = 10 + i;
    }
    rows[0].lat_spectrum[RESULT_SPECTRUM_N - 1] = 0; /* no spectrum kept */
    rows[0].server_pid = 7;                          /* server CPU of ours only */
    rows[0].server_cpu_us_per_op = 2;
    char *html = render(rows, 4);
    /* One legend per chart: throughput, p50, p99, server CPU, a spectrum per point. */
    assert_int_equal(count(html, "<ul class=\"legend\">"), 6);
    for (char *fig = strstr(html, "<figure>"); fig; fig = strstr(fig + 1, "<figure>")) {
        char *a = strstr(fig, ">shootout"), *b = strstr(fig, ">mosquitto"), *c = strstr(fig, ">aedes");
        assert_non_null(a);
        assert_true(a < b && b < c);
    }
    assert_int_equal(count(html, "aedes <span class=\"note failed\">(failed)</span>"), 4 + 1);
    /* Server CPU: mosquitto's was not measured; the spectrum has none of ours. */
    char *cpu = strstr(html, "Server CPU per operation</figcaption>");
    assert_non_null(cpu);
    assert_non_null(strstr(cpu, "mosquitto <span class=\"note\">(not measured)</span>"));
    assert_non_null(strstr(cpu, "<title>mosquitto, 100c: not measured</title>"));
    /* n/a: mosquitto's and ours at 200c not measured, 200c not run by the
     * other two in each of the four bar charts. */
    assert_int_equal(count(html, ">n/a</text>"), 2 + 2 * 4);
    assert_int_equal(count(html, "<title>aedes, 200c: not run</title>"), 4);
    char *spectrum = strstr(html, "Latency by percentile, 100c");
    assert_non_null(strstr(spectrum, "shootout <span class=\"note\">(no spectrum)</span>"));
    spectrum = strstr(html, "Latency by percentile, 200c");
    assert_non_null(strstr(spectrum, "mosquitto <span class=\"note\">(not run)</span>"));
    /* A failed run is marked in every bar chart. */
    assert_int_equal(count(html, "<g class=\"failed\">"), 4);
    free(html);
}

/* Sixteen series get sixteen colours; lines past the tenth are dashed. */
static void test_many_series_stay_apart(void **state)
{
    struct result_row rows[16];
    for (unsigned i = 0; i < 16; i++) {
        char target[16];
        snprintf(target, sizeof target, "c%u", i);
        rows[i] = make_row("rpc-seq", target, NULL, 1, 100 + i);
        rows[i].has_latency = true;
        for (unsigned k = 0; k < RESULT_SPECTRUM_N; k++)
            rows[i].lat_spectrum[k] = 10 + k;
    }
    char *html = render(rows, 16);
    assert_int_equal(count(html, "class=\"bar\""), 16 * 3); /* throughput, p50, p99 */
    char *spectrum = strstr(html, "Latency by percentile");
    assert_non_null(spectrum);
    assert_int_equal(count(spectrum, "<polyline"), 16);
    assert_int_equal(count(spectrum, "stroke-dasharray"), 6);
    const char *colors[16];
    unsigned ncolors = 0;
    for (char *p = spectrum; (p = strstr(p, "stroke=\"#")); p += 8) {
        bool seen = false;
        for (unsigned k = 0; k < ncolors; k++)
            seen = seen || !strncmp(colors[k], p, 15);
        if (!seen && ncolors < 16)
            colors[ncolors++] = p;
    }
    assert_int_equal(ncolors, 16);
    assert_non_null(strstr(html, ">c15</li>")); /* in the legend */
    free(html);
}

/* A closed run's per-second throughput: one line per run, coloured by its
 * series, on a time axis as long as the longest run. */
static void test_closed_runs_draw_their_series(void **state)
{
    struct result_point a[3] = {{.responses = 1000}, {.responses = 2000}, {.responses = 1500}};
    struct result_point b[2] = {{.responses = 500, .p99_ms = 2}, {.responses = 800, .p99_ms = 4}};
    struct result_row rows[] = {
        make_row("mqtt-load", "shootout", NULL, 100, 1500),
        make_row("mqtt-load", "mosquitto", NULL, 100, 650),
    };
    rows[0].series = (struct result_series){a, 3, -1};
    rows[1].series = (struct result_series){b, 2, -1};
    char *html = render(rows, 2);
    assert_non_null(strstr(html, "Rate (msg/s), 100c, second by second"));
    assert_non_null(strstr(html, "Latency p99, 100c, second by second"));
    /* Throughput up to 2k: 72..744 over 3 seconds, 236 (0) to 16 (2k). */
    assert_non_null(strstr(html, "points=\"72.0,126.0 408.0,16.0 744.0,71.0\"><title>shootout, run 1"));
    assert_non_null(strstr(html, "points=\"72.0,181.0 408.0,148.0\"><title>mosquitto, run 1"));
    /* The p99 chart has mosquitto's line only, on an axis in ms. */
    char *p99 = strstr(html, "Latency p99, 100c");
    assert_int_equal(count(p99, "<polyline"), 2); /* one whose values are all zero is still drawn */
    assert_non_null(strstr(p99, ">4 ms</text>"));
    assert_null(strstr(html, "class=\"timeline\"")); /* no active users: not an open-model run */
    free(html);
}

/* Runs under a second have one point or none: the page says so instead
 * of drawing an empty chart; a one-point run beside longer ones is a dot. */
static void test_short_runs_say_they_have_no_series(void **state)
{
    struct result_point one[1] = {{.responses = 900, .p99_ms = 1}};
    struct result_point two[2] = {{.responses = 1000, .p99_ms = 2}, {.responses = 800, .p99_ms = 3}};
    struct result_row rows[] = {
        make_row("rpc-seq", "shootout", NULL, 1, 1500),
        make_row("rpc-seq", "grpc-java", NULL, 1, 600),
        make_row("rpc-seq", "shootout", NULL, 8, 1500),
        make_row("rpc-seq", "grpc-java", NULL, 8, 650),
    };
    rows[0].duration_s = 0.42;
    rows[1].duration_s = 0.05; /* too short even for one point */
    rows[0].series = (struct result_series){one, 1, -1};
    rows[2].duration_s = 0.9;
    rows[2].series = (struct result_series){one, 1, -1};
    rows[3].duration_s = 1.6;
    rows[3].series = (struct result_series){two, 2, -1};
    char *html = render(rows, 4);
    assert_non_null(strstr(html, "1c: the longest run took 420 ms, shorter than 1 s: no per-second series."));
    assert_null(strstr(html, "Rate (msg/s), 1c"));
    assert_null(strstr(html, "Latency p99, 1c"));
    /* At 8c grpc-java ran long enough: its line, and shootout's one second a dot. */
    char *rate = strstr(html, "Rate (msg/s), 8c, second by second");
    assert_non_null(rate);
    assert_null(strstr(html, "8c: the longest run"));
    assert_int_equal(count(rate, "<polyline"), 2); /* rate and p99 */
    assert_int_equal(count(rate, "<circle class=\"dot\""), 2);
    assert_non_null(strstr(rate, "r=\"3\"><title>shootout, run 1</title></circle>"));
    free(html);
}

static void test_no_rows(void **state)
{
    char *html = render(NULL, 0);
    assert_non_null(strstr(html, "No results."));
    assert_non_null(strstr(html, "</html>"));
    free(html);
}

static void test_write_to_unwritable_path_reports(void **state)
{
    struct result_context ctx = {.date = "d", .host_name = "h"};
    char err[256] = "";
    assert_int_equal(report_html_write("/nonexistent-dir/report.html", &ctx, NULL, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent-dir/report.html"));
}

static char *render_timeline(const struct result_point *pts, unsigned n, int saturation_s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    report_html_timeline(f, "target<1>, a2b: over time", pts, n, saturation_s);
    fclose(f);
    return text;
}

/* The plot spans x 72..744 and y 236 (zero) up to 16 (the axis maximum). */
static void test_timeline_draws_the_series_and_the_saturation(void **state)
{
    const struct result_point pts[] = {{.active = 0, .responses = 0, .p95_ms = 1},
                                   {.active = 10, .responses = 5, .p95_ms = 2},
                                   {.active = 20, .responses = 10, .p95_ms = 4}};
    char *html = render_timeline(pts, 3, 1);
    assert_int_equal(count(html, "class=\"timeline\""), 1);
    assert_int_equal(count(html, "<svg"), 2);
    assert_int_equal(count(html, "<polyline"), 3);
    /* Users and responses share an axis up to 20; p95 has its own, up to 4. */
    assert_non_null(strstr(html, "points=\"72.0,236.0 408.0,126.0 744.0,16.0\"><title>active users"));
    assert_non_null(strstr(html, "points=\"72.0,236.0 408.0,181.0 744.0,126.0\"><title>responses per second"));
    assert_non_null(strstr(html, "points=\"72.0,181.0 408.0,126.0 744.0,16.0\"><title>p95"));
    /* Seconds along the bottom, whole ones only. */
    assert_non_null(strstr(html, "x=\"408.0\" y=\"254.0\">1 s</text>"));
    assert_int_equal(count(html, "y=\"254.0\">"), 2 * 3);
    /* The p95 axis in SI-prefixed seconds. */
    assert_non_null(strstr(html, ">4 ms</text>"));
    /* The saturation second, across both charts, and in words. */
    assert_int_equal(count(html, "<line class=\"sat\" x1=\"408.0\" x2=\"408.0\" y1=\"16.0\" y2=\"236.0\"/>"), 2);
    assert_non_null(strstr(html, "Saturation point (dashed line): 10 active users at second 1."));
    assert_non_null(strstr(html, "<h3>target&lt;1&gt;, a2b: over time</h3>"));
    free(html);

    html = render_timeline(pts, 3, -1);
    assert_int_equal(count(html, "class=\"sat\""), 0);
    assert_non_null(strstr(html, "Saturation point: not reached."));
    free(html);
    /* One second: a single point at the left; a flat zero series keeps an axis. */
    const struct result_point one = {.active = 0};
    html = render_timeline(&one, 1, 0);
    assert_non_null(strstr(html, "points=\"72.0,236.0\""));
    assert_int_equal(count(html, "class=\"sat\""), 2);
    free(html);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggregates_become_bars_with_whiskers),
        cmocka_unit_test(test_iterations_alone_are_drawn_and_latency_charts_appear),
        cmocka_unit_test(test_experiments_get_their_own_sections),
        cmocka_unit_test(test_series_and_points_come_from_row_names),
        cmocka_unit_test(test_axes_and_cells_are_si_prefixed),
        cmocka_unit_test(test_a_wide_spread_gets_a_log_axis),
        cmocka_unit_test(test_latency_spectrum_per_point),
        cmocka_unit_test(test_failed_runs_are_drawn_as_errors),
        cmocka_unit_test(test_every_chart_accounts_for_every_contender),
        cmocka_unit_test(test_many_series_stay_apart),
        cmocka_unit_test(test_closed_runs_draw_their_series),
        cmocka_unit_test(test_short_runs_say_they_have_no_series),
        cmocka_unit_test(test_no_rows),
        cmocka_unit_test(test_write_to_unwritable_path_reports),
        cmocka_unit_test(test_timeline_draws_the_series_and_the_saturation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
