/* test_capacity.c - the capacity race's verdict on recorded runs: the
 * level rule (ho_level_saturation) and the race's reading of it
 * (run_a2b_race_verdict, run_a2b_race_text) on synthetic level statistics
 * shaped like `shootout run --quick`'s, where the race printed "never
 * saturated (peak 2618 responses/s)" beside levels of 4768 responses/s,
 * and for the Node peer while its p95 went from 44 to 265 ms at its last
 * level with its answers behind the arrivals. The per-second rule could
 * not see that run at all (too short for its windows); the level rule
 * reads the same at every time scale, the peak is the table's, ramps and
 * the time after the profile never count, nor do failures present from
 * the start or the load generator's own.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "load/http/http_open.h"
#include "run/run_a2b.h"

/* One level of a recorded staircase, as the race table prints it. */
struct row {
    double users, rps, resp, p95, ko_pct;
};

#define MAXL 64

/* The levels of a staircase of rows, each lasting level_s with ramps of
 * ramp_s between (whose p95 spikes, to show they never count), then the
 * time after the profile (slower still). Returns how many. */
static unsigned staircase(struct http_open_level *out, const struct row *rows, unsigned n,
                          double level_s, double ramp_s)
{
    unsigned k = 0;
    double t = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        double req = r->rps * level_s, ko = req * r->ko_pct / 100;
        out[k++] = (struct http_open_level){
            .kind = "constant-users-per-sec", .step = 1, .stair = i + 1,
            .load_from = r->users, .load_to = r->users, .start_s = t, .dur_s = level_s,
            .users_started = r->users * level_s, .requests = req, .ok = req - ko, .ko = ko,
            .rps = r->rps, .responses_per_s = r->resp, .p95_ms = r->p95};
        t += level_s;
        if (i + 1 < n && ramp_s > 0) {
            double rps = (r->rps + rows[i + 1].rps) / 2;
            out[k++] = (struct http_open_level){
                .kind = "ramp-users-per-sec", .step = 1, .stair = i + 1,
                .load_from = r->users, .load_to = rows[i + 1].users, .start_s = t,
                .dur_s = ramp_s, .requests = rps * ramp_s, .ok = rps * ramp_s, .rps = rps,
                .responses_per_s = rps / 2, .p95_ms = 50 * rows[i + 1].p95};
            t += ramp_s;
        }
    }
    out[k++] = (struct http_open_level){.kind = "after", .start_s = t, .dur_s = 1,
                                        .requests = 100, .ok = 100, .rps = 100,
                                        .responses_per_s = 1000, .p95_ms = 1e4};
    return k;
}

/* `--quick`: ours kept up at every level while its p95 rose, up to 4768
 * responses/s at the last (350 users/s). */
static const struct row ours[] = {
    {50, 700, 700, 3.2, 0},      {100, 1400, 1398, 4.2, 0},   {150, 2100, 2096, 5.9, 0},
    {200, 2800, 2795, 7.6, 0},   {250, 3500, 3497, 9.1, 0},   {300, 4100, 4090, 12.5, 0},
    {350, 4800, 4768, 16.0, 0},
};

/* The Node peer: p95 44 ms, then 265 ms at its last level, where its
 * answers fell 14 % behind the requests sent. */
static const struct row node[] = {
    {50, 281, 281, 10.7, 0},     {100, 587, 586, 9.9, 0},     {150, 890, 893, 27.7, 0},
    {200, 1162, 1167, 28.9, 0},  {250, 1249, 1230, 38.0, 0},  {300, 1500, 1489, 44.0, 0},
    {350, 1750, 1500, 265.0, 0},
};

static void test_saturated_at_its_last_level(void **state)
{
    /* At --quick's scale (levels of 1.25 s) and the default's (10 s). */
    static const double level_s[] = {1.25, 10}, ramp_s[] = {0.125, 1};
    for (unsigned s = 0; s < 2; s++) {
        struct http_open_level lv[MAXL];
        unsigned n = staircase(lv, node, 7, level_s[s], ramp_s[s]);
        struct ho_level_verdict v;
        assert_int_equal(ho_level_saturation(lv, n, &v), 12); /* level 7 of 7 and 6 ramps */
        assert_int_equal(v.level, 12);
        assert_int_equal(v.cause, HO_SAT_BACKLOG);
        assert_true(fabs(v.behind_pct - 100 * 250.0 / 1750) < 1e-9);
        assert_true(v.p95_ms == 265.0);
        assert_true(v.base_p95_ms > 9.9 && v.base_p95_ms < 44.0);

        struct run_a2b_verdict rv;
        run_a2b_race_verdict(lv, n, &rv);
        assert_int_equal(rv.rows, 7);
        assert_int_equal(rv.row, 7);
        assert_true(rv.users == 350 && rv.last_users == 350);
        char text[400];
        run_a2b_race_text(&rv, 350, text, sizeof text);
        assert_non_null(strstr(text, "saturated at level 7 (350 users/s): answers 14.3 % behind"));
        assert_non_null(strstr(text, "p95 265.0 ms against"));
        assert_non_null(strstr(text, "(backlog); peak 1500 responses/s at level 7 (350 users/s)"));
        assert_null(strstr(text, "not saturated"));
    }
}

static void test_peak_is_the_tables(void **state)
{
    struct http_open_level lv[MAXL];
    unsigned n = staircase(lv, ours, 7, 1.25, 0.125);
    struct ho_level_verdict v;
    assert_int_equal(ho_level_saturation(lv, n, &v), -1);
    assert_int_equal(v.cause, HO_SAT_NONE);
    struct run_a2b_verdict rv;
    run_a2b_race_verdict(lv, n, &rv);
    /* The most responses/s of a row, not the ramps' nor the tail's 1000,
     * nor the run's mean. */
    assert_true(rv.peak == 4768 && rv.peak_row == 7 && rv.peak_users == 350);
    assert_int_equal(rv.row, 0);
    char text[400];
    run_a2b_race_text(&rv, 350, text, sizeof text);
    assert_string_equal(text, "not saturated up to the ceiling 350 users/s; peak 4768 responses/s "
                              "at level 7 (350 users/s)");
    /* Stopped below the ceiling it names (a run cut short). */
    run_a2b_race_text(&rv, 1000, text, sizeof text);
    assert_string_equal(text, "not saturated up to level 7 (350 users/s), below the ceiling 1000 "
                              "users/s; peak 4768 responses/s at level 7 (350 users/s)");
    /* The peak before the last level, where the answers fell. */
    struct row fell[7];
    memcpy(fell, ours, sizeof fell);
    fell[6].resp = 3000;
    fell[6].p95 = 900;
    n = staircase(lv, fell, 7, 1.25, 0.125);
    run_a2b_race_verdict(lv, n, &rv);
    assert_true(rv.row == 7 && rv.peak == 4090 && rv.peak_row == 6 && rv.peak_users == 300);
}

static void test_the_series_could_not_see_it(void **state)
{
    /* The same run as a per-second series at --quick's scale: 12 s, too
     * short for two 5 s windows after a 5 s baseline, so the old verdict
     * ("never saturated") came from a rule that could not fire. */
    struct result_point s[12];
    for (unsigned t = 0; t < 12; t++) {
        double sent = 280 + 130 * t, ok = t < 9 ? sent : 0.85 * sent;
        s[t] = (struct result_point){.active = sent, .responses = ok, .p95_ms = t < 9 ? 30 : 265,
                                 .sent = sent, .ok = ok};
    }
    assert_int_equal(ho_saturation(s, 12, 5, NULL), -1);
}

static void test_latency_alone_or_backlog_alone_is_no_saturation(void **state)
{
    struct http_open_level lv[MAXL];
    struct ho_level_verdict v;
    /* p95 x 10 while every request is answered in its level. */
    struct row slow[3] = {{10, 100, 100, 5, 0}, {20, 200, 200, 5, 0}, {30, 300, 299, 50, 0}};
    unsigned n = staircase(lv, slow, 3, 10, 1);
    assert_int_equal(ho_level_saturation(lv, n, &v), -1);
    /* Answers behind (latency growing with the level) by a steady 100 ms. */
    struct row steady[3] = {{10, 100, 100, 100, 0}, {20, 200, 180, 110, 0}, {30, 300, 270, 115, 0}};
    n = staircase(lv, steady, 3, 10, 1);
    assert_int_equal(ho_level_saturation(lv, n, &v), -1);
    /* Both at once: the second level. */
    steady[1].p95 = 250;
    n = staircase(lv, steady, 3, 10, 1);
    assert_int_equal(ho_level_saturation(lv, n, &v), 2);
    /* 10 requests at least: a level of 5 requests 40 % behind is noise. */
    struct row tiny[2] = {{1, 5, 5, 5, 0}, {2, 5, 3, 500, 0}};
    n = staircase(lv, tiny, 2, 1, 0);
    assert_int_equal(ho_level_saturation(lv, n, &v), -1);
    /* The first level is the baseline, never judged. */
    struct row first[1] = {{600, 600, 100, 9000, 50}};
    n = staircase(lv, first, 1, 10, 0);
    assert_int_equal(ho_level_saturation(lv, n, &v), -1);
}

static void test_failures(void **state)
{
    struct http_open_level lv[MAXL];
    struct ho_level_verdict v;
    /* A server that answers its excess fast with 503: KO jumps to 30 %. */
    struct row fast[3] = {{10, 100, 100, 5, 0.5}, {20, 200, 200, 5, 0.5}, {30, 300, 300, 5, 30}};
    unsigned n = staircase(lv, fast, 3, 10, 1);
    assert_int_equal(ho_level_saturation(lv, n, &v), 4);
    assert_int_equal(v.cause, HO_SAT_FAILURES);
    assert_true(fabs(v.ko_pct - 30) < 1e-9 && fabs(v.base_ko_pct - 0.5) < 1e-9);
    struct run_a2b_verdict rv;
    char text[400];
    run_a2b_race_verdict(lv, n, &rv);
    run_a2b_race_text(&rv, 30, text, sizeof text);
    assert_non_null(strstr(text, "saturated at level 3 (30 users/s): the server's KO 30.0 % of its "
                                 "answers against 0.5 % before (failures)"));
    /* A share there from the start (a request that always fails). */
    struct row constant[3] = {{10, 100, 100, 5, 16}, {20, 200, 200, 5, 16.5}, {30, 300, 300, 5, 16}};
    n = staircase(lv, constant, 3, 10, 1);
    assert_int_equal(ho_level_saturation(lv, n, &v), -1);
    /* The load generator's own failures are not the server's. */
    n = staircase(lv, fast, 3, 10, 1);
    lv[4].ko_generator = lv[4].ko;
    assert_int_equal(ho_level_saturation(lv, n, &v), -1);
}

static void test_levels_shorter_than_the_answers(void **state)
{
    /* A server stalled through levels of 0.5 s: none of their answers end
     * in them. The rows say so, and the verdict warns. */
    struct row stalled[3] = {{20, 20, 0, 1958.7, 0}, {30, 30, 0, 1368.8, 0}, {40, 40, 0, 761.3, 0}};
    struct http_open_level lv[MAXL];
    unsigned n = staircase(lv, stalled, 3, 0.5, 0.1);
    struct run_a2b_verdict rv;
    run_a2b_race_verdict(lv, n, &rv);
    assert_true(rv.slow_p95_ms == 1958.7 && rv.slow_level_s == 0.5);
    char text[400];
    run_a2b_race_text(&rv, 40, text, sizeof text);
    assert_string_equal(text, "not saturated up to the ceiling 40 users/s; peak 0 responses/s at "
                              "level 1 (20 users/s); but a p95 of 1959 ms outlasts its levels of "
                              "0.5 s, whose answers mostly end after them: a smaller time scale "
                              "reads it better");
    /* Levels long enough: no warning. */
    n = staircase(lv, node, 7, 1.25, 0.125);
    run_a2b_race_verdict(lv, n, &rv);
    assert_true(rv.slow_p95_ms == 0);
}

static void test_no_levels(void **state)
{
    struct http_open_level lv[MAXL];
    unsigned n = staircase(lv, ours, 0, 1, 0); /* only the time after */
    struct run_a2b_verdict rv;
    run_a2b_race_verdict(lv, n, &rv);
    assert_int_equal(rv.rows, 0);
    char text[64];
    run_a2b_race_text(&rv, 350, text, sizeof text);
    assert_string_equal(text, "no level of constant load");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_saturated_at_its_last_level),
        cmocka_unit_test(test_peak_is_the_tables),
        cmocka_unit_test(test_the_series_could_not_see_it),
        cmocka_unit_test(test_latency_alone_or_backlog_alone_is_no_saturation),
        cmocka_unit_test(test_failures),
        cmocka_unit_test(test_levels_shorter_than_the_answers),
        cmocka_unit_test(test_no_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
