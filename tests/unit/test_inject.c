/* test_inject.c - unit tests for the injection profiles (inject.c): the
 * strict step parser, the arrival times of every open step against the
 * profile (exact totals and per-second counts without randomization, a
 * Poisson-like count and spacing with it), staircases (their levels and
 * ramps, arrival times equal to the steps they stand for, segments), time
 * scaling, and the closed model's target curve.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "load/http/inject.h"

#define MAX_SECONDS 64

static struct inj_step parse_ok(const char *s)
{
    struct inj_step st;
    char err[128];
    int rc = inj_parse_step(s, strlen(s), &st, err, sizeof err);
    if (rc != 0)
        fail_msg("'%s': %s", s, err);
    return st;
}

static void parse_bad(const char *s)
{
    struct inj_step st;
    char err[128] = "";
    if (inj_parse_step(s, strlen(s), &st, err, sizeof err) == 0)
        fail_msg("'%s' was accepted", s);
    assert_true(err[0] != '\0');
}

static struct inj_profile profile(const char *const *steps, unsigned n)
{
    struct inj_profile p = {0};
    char err[128];
    for (unsigned i = 0; i < n; i++) {
        struct inj_step st = parse_ok(steps[i]);
        assert_int_equal(inj_profile_add(&p, &st, err, sizeof err), 0);
    }
    return p;
}

/* Arrivals per second into per_s[], the total as the result; checks that
 * times never decrease. */
static uint64_t count_arrivals(const struct inj_profile *p, uint64_t seed, unsigned per_s[MAX_SECONDS])
{
    struct inj_gen g;
    inj_gen_init(&g, p, seed);
    memset(per_s, 0, MAX_SECONDS * sizeof *per_s);
    double t, last = 0;
    uint64_t n = 0;
    while (inj_gen_next(&g, &t)) {
        assert_true(t >= last);
        last = t;
        assert_true(t < MAX_SECONDS);
        per_s[(unsigned)t]++;
        assert_true(++n < 10000000);
    }
    return n;
}

static void test_parse(void **state)
{
    struct inj_step s = parse_ok("ramp-users-per-sec 100 200 1000s randomized");
    assert_int_equal(s.kind, INJ_RAMP_RATE);
    assert_true(s.r1 == 100 && s.r2 == 200 && s.dur_s == 1000 && s.randomized);
    s = parse_ok("constant-users-per-sec 2.5 500ms");
    assert_true(s.kind == INJ_CONSTANT_RATE && s.r1 == 2.5 && s.r2 == 2.5 && s.dur_s == 0.5);
    assert_false(s.randomized);
    s = parse_ok("  at-once   7 ");
    assert_true(s.kind == INJ_AT_ONCE && s.n == 7);
    s = parse_ok("ramp-users 10 2m");
    assert_true(s.kind == INJ_RAMP_USERS && s.n == 10 && s.dur_s == 120);
    s = parse_ok("nothing-for 1h");
    assert_true(s.kind == INJ_NOTHING_FOR && s.dur_s == 3600);
    s = parse_ok("constant-concurrent-users 5 10s");
    assert_true(s.kind == INJ_CONSTANT_CONC && s.n == 5);
    s = parse_ok("ramp-concurrent-users 1 9 10s");
    assert_true(s.kind == INJ_RAMP_CONC && s.r1 == 1 && s.r2 == 9);

    parse_bad("");
    parse_bad("ramp-users-per-sec 100 200");      /* no duration */
    parse_bad("ramp-users-per-sec 100 200 1000"); /* no unit */
    parse_bad("constant-users-per-sec 10 10s random");
    parse_bad("at-once 7 randomized");       /* not a rate step */
    parse_bad("at-once 2.5");                /* users are whole */
    parse_bad("at-once -1");
    parse_bad("at-once 1e3");
    parse_bad("ramp-users 10 0s");
    parse_bad("constant-users-per-sec 10 10s randomized x");
    parse_bad("warp 10");
    parse_bad("nothing-for 10q");
    parse_bad("nothing-for 1..5s");
}

static void test_parse_increment(void **state)
{
    struct inj_step s = parse_ok("increment-users-per-sec 10 5 30s ramp 10s from 20 randomized");
    assert_int_equal(s.kind, INJ_STAIRS_RATE);
    assert_true(s.inc == 10 && s.n == 5 && s.dur_s == 30 && s.ramp_s == 10 && s.r1 == 20);
    assert_true(s.randomized);
    assert_true(inj_step_duration(&s) == 5 * 30 + 4 * 10);
    /* Options in any order; without them no ramps and Gatling's start. */
    s = parse_ok("increment-users-per-sec 2.5 3 1m from 1.5 ramp 500ms");
    assert_true(s.inc == 2.5 && s.r1 == 1.5 && s.ramp_s == 0.5 && !s.randomized);
    s = parse_ok("increment-users-per-sec 1 100 1s");
    assert_true(s.n == 100 && s.r1 == 0 && s.ramp_s == 0 && inj_step_duration(&s) == 100);
    s = parse_ok("increment-concurrent-users 5 3 10s ramp 2s from 10");
    assert_int_equal(s.kind, INJ_STAIRS_CONC);
    assert_true(inj_step_closed(&s) && s.inc == 5 && s.n == 3 && s.r1 == 10 && s.ramp_s == 2);

    parse_bad("increment-users-per-sec 10 5");          /* no level duration */
    parse_bad("increment-users-per-sec 0 5 10s");       /* no climb */
    parse_bad("increment-users-per-sec 10 0 10s");      /* no level */
    parse_bad("increment-users-per-sec 10 101 10s");    /* too many */
    parse_bad("increment-users-per-sec 10 2.5 10s");    /* levels are whole */
    parse_bad("increment-users-per-sec 10 5 0s");
    parse_bad("increment-users-per-sec 10 5 10s ramp"); /* ramp of what */
    parse_bad("increment-users-per-sec 10 5 10s ramp 10");
    parse_bad("increment-users-per-sec 10 5 10s ramp 1s ramp 2s");
    parse_bad("increment-users-per-sec 10 5 10s from 1 from 2");
    parse_bad("increment-users-per-sec 10 5 10s from -1");
    parse_bad("increment-users-per-sec 10 5 10s randomized randomized");
    parse_bad("increment-users-per-sec 10 5 10s steps 2");
    parse_bad("increment-concurrent-users 10 5 10s randomized"); /* closed */
    parse_bad("increment-concurrent-users 2.5 5 10s");           /* users are whole */
    parse_bad("increment-concurrent-users 2 5 10s from 1.5");
    parse_bad("constant-users-per-sec 10 10s ramp 1s"); /* staircases only */
    parse_bad("at-once 5 from 1");
}

/* Arrival times of two profiles, equal one by one. */
static void assert_same_arrivals(const struct inj_profile *a, const struct inj_profile *b,
                                 uint64_t seed)
{
    struct inj_gen ga, gb;
    inj_gen_init(&ga, a, seed);
    inj_gen_init(&gb, b, seed);
    double ta, tb;
    uint64_t n = 0;
    for (;;) {
        bool more = inj_gen_next(&ga, &ta);
        assert_int_equal(more, inj_gen_next(&gb, &tb));
        if (!more)
            break;
        assert_true(fabs(ta - tb) < 1e-9);
        assert_true(++n < 1000000);
    }
    assert_true(n > 0);
}

static void test_stairs_arrivals(void **state)
{
    static const char *const steps[] = {"increment-users-per-sec 10 3 2s ramp 1s from 20"};
    struct inj_profile p = profile(steps, 1);
    /* Levels 20, 30 and 40 users/s for 2 s each, ramps of 1 s between:
     * 40 + 25 + 60 + 35 + 80 users over 8 s. */
    assert_true(inj_profile_duration(&p) == 8);
    assert_true(inj_profile_users(&p) == 240);
    unsigned per_s[MAX_SECONDS];
    assert_int_equal(count_arrivals(&p, 1, per_s), 240);
    static const unsigned want[8] = {20, 20, 25, 30, 30, 35, 40, 40};
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(per_s[i], want[i]);
    /* Exact times: user 40 opens the first ramp at 2 s, user 66 is the
     * second of the 30/s level (3 s + 1/30 s), user 64 the ramp's last at
     * N(t) = 24: 20 t + 5 t^2 = 24, t = 2 + 0.966.. s. */
    struct inj_gen g;
    inj_gen_init(&g, &p, 1);
    double t[67];
    for (unsigned i = 0; i < 67; i++)
        assert_true(inj_gen_next(&g, &t[i]));
    assert_true(fabs(t[39] - 39 / 20.0) < 1e-9);
    assert_true(fabs(t[40] - 2.0) < 1e-9);
    assert_true(fabs(t[64] - (2 + (-20 + sqrt(400 + 4 * 5 * 24)) / 10)) < 1e-9);
    assert_true(fabs(t[65] - 3.0) < 1e-9);
    assert_true(fabs(t[66] - (3 + 1 / 30.0)) < 1e-9);

    /* Gatling without startingFrom: the first level is the increment. */
    static const char *const bare[] = {"increment-users-per-sec 5 3 1s"};
    p = profile(bare, 1);
    assert_int_equal(count_arrivals(&p, 1, per_s), 30);
    assert_true(per_s[0] == 5 && per_s[1] == 10 && per_s[2] == 15);
}

static void test_stairs_equal_their_steps(void **state)
{
    /* A staircase gives the very arrival times of the steps it stands for,
     * randomized (the same draws in the same order) or not. */
    static const char *const stairs[] = {"nothing-for 1s",
                                         "increment-users-per-sec 4 3 2s ramp 500ms from 6",
                                         "at-once 2"};
    static const char *const expanded[] = {
        "nothing-for 1s",        "constant-users-per-sec 6 2s",  "ramp-users-per-sec 6 10 500ms",
        "constant-users-per-sec 10 2s", "ramp-users-per-sec 10 14 500ms",
        "constant-users-per-sec 14 2s", "at-once 2"};
    struct inj_profile a = profile(stairs, 3), b = profile(expanded, 7);
    assert_true(inj_profile_users(&a) == inj_profile_users(&b));
    assert_true(fabs(inj_profile_duration(&a) - inj_profile_duration(&b)) < 1e-9);
    assert_same_arrivals(&a, &b, 1);
    static const char *const rstairs[] = {"increment-users-per-sec 50 2 3s ramp 1s randomized"};
    static const char *const rexpanded[] = {"constant-users-per-sec 50 3s randomized",
                                            "ramp-users-per-sec 50 100 1s randomized",
                                            "constant-users-per-sec 100 3s randomized"};
    a = profile(rstairs, 1);
    b = profile(rexpanded, 3);
    assert_same_arrivals(&a, &b, 9);
}

static void test_segments(void **state)
{
    static const char *const steps[] = {"nothing-for 1s", "increment-users-per-sec 10 3 2s ramp 1s",
                                        "at-once 3", "ramp-users 10 5s"};
    struct inj_profile p = profile(steps, 4);
    struct inj_segment seg[INJ_MAX_SEGMENTS];
    unsigned n = inj_profile_segments(&p, seg);
    assert_int_equal(n, 1 + 5 + 1 + 1);
    static const struct {
        enum inj_kind kind;
        double start, dur, r1, r2;
        unsigned step, stair;
    } want[] = {
        {INJ_NOTHING_FOR, 0, 1, 0, 0, 0, 0},    {INJ_CONSTANT_RATE, 1, 2, 10, 10, 1, 1},
        {INJ_RAMP_RATE, 3, 1, 10, 20, 1, 1},    {INJ_CONSTANT_RATE, 4, 2, 20, 20, 1, 2},
        {INJ_RAMP_RATE, 6, 1, 20, 30, 1, 2},    {INJ_CONSTANT_RATE, 7, 2, 30, 30, 1, 3},
        {INJ_AT_ONCE, 9, 0, 3, 3, 2, 0},        {INJ_RAMP_USERS, 9, 5, 10, 10, 3, 0},
    };
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(seg[i].s.kind, want[i].kind);
        assert_true(fabs(seg[i].start_s - want[i].start) < 1e-9);
        assert_true(seg[i].s.dur_s == want[i].dur);
        assert_true(seg[i].s.r1 == want[i].r1 && seg[i].s.r2 == want[i].r2);
        assert_int_equal(seg[i].step, want[i].step);
        assert_int_equal(seg[i].stair, want[i].stair);
    }
    /* A profile holds at most INJ_MAX_SEGMENTS of them. */
    struct inj_profile big = {0};
    struct inj_step st = parse_ok("increment-users-per-sec 1 100 1s ramp 1s");
    char err[128];
    assert_int_equal(inj_profile_add(&big, &st, err, sizeof err), 0);
    st = parse_ok("increment-users-per-sec 1 29 1s ramp 1s"); /* 199 + 57 = 256 */
    assert_int_equal(inj_profile_add(&big, &st, err, sizeof err), 0);
    st = parse_ok("nothing-for 1s");
    assert_int_equal(inj_profile_add(&big, &st, err, sizeof err), -1);
    assert_int_equal(inj_profile_segments(&big, seg), INJ_MAX_SEGMENTS);
}

static void test_no_mixing(void **state)
{
    struct inj_profile p = {0};
    char err[128];
    struct inj_step open = parse_ok("at-once 1"), closed = parse_ok("constant-concurrent-users 1 1s"),
                    pause = parse_ok("nothing-for 1s");
    assert_int_equal(inj_profile_add(&p, &pause, err, sizeof err), 0);
    assert_int_equal(inj_profile_add(&p, &open, err, sizeof err), 0);
    assert_int_equal(inj_profile_add(&p, &closed, err, sizeof err), -1);
    assert_false(inj_profile_closed(&p));
}

static void test_at_once_and_ramp_users(void **state)
{
    static const char *const steps[] = {"at-once 5", "nothing-for 2s", "ramp-users 10 5s"};
    struct inj_profile p = profile(steps, 3);
    unsigned per_s[MAX_SECONDS];
    assert_int_equal(count_arrivals(&p, 1, per_s), 15);
    assert_int_equal(per_s[0], 5);
    assert_int_equal(per_s[1], 0);
    for (unsigned s = 2; s < 7; s++) /* 10 users over 5 s: 2 a second */
        assert_int_equal(per_s[s], 2);
    assert_true(inj_profile_users(&p) == 15);
    assert_true(inj_profile_duration(&p) == 7);
}

static void test_constant_rate(void **state)
{
    static const char *const steps[] = {"constant-users-per-sec 20 10s"};
    struct inj_profile p = profile(steps, 1);
    unsigned per_s[MAX_SECONDS];
    assert_int_equal(count_arrivals(&p, 1, per_s), 200);
    for (unsigned s = 0; s < 10; s++)
        assert_int_equal(per_s[s], 20);
    /* Evenly spaced: the 3rd user at 2/20 s. */
    struct inj_gen g;
    inj_gen_init(&g, &p, 1);
    double t;
    for (int i = 0; i < 3; i++)
        assert_true(inj_gen_next(&g, &t));
    assert_true(fabs(t - 0.1) < 1e-9);
}

static void test_ramp_rate(void **state)
{
    static const char *const steps[] = {"ramp-users-per-sec 10 50 20s"};
    struct inj_profile p = profile(steps, 1);
    unsigned per_s[MAX_SECONDS];
    /* (10 + 50) / 2 * 20 = 600 users, exactly. */
    assert_int_equal(count_arrivals(&p, 1, per_s), 600);
    for (unsigned s = 0; s < 20; s++) {
        /* The rate at mid-second: 10 + 2 (s + 0.5); counts agree within one. */
        double want = 10 + 2 * (s + 0.5);
        assert_true(fabs(per_s[s] - want) <= 1.0);
    }
    /* A ramp down works alike. */
    static const char *const down[] = {"ramp-users-per-sec 50 0 10s"};
    p = profile(down, 1);
    assert_int_equal(count_arrivals(&p, 1, per_s), 250);
    assert_true(per_s[0] > per_s[9]);
}

static void test_randomized_is_poisson_like(void **state)
{
    static const char *const steps[] = {"constant-users-per-sec 100 50s randomized"};
    struct inj_profile p = profile(steps, 1);
    unsigned per_s[MAX_SECONDS];
    uint64_t n = count_arrivals(&p, 42, per_s);
    /* 5000 expected, sd 71: within 5 sd. */
    assert_true(n > 5000 - 355 && n < 5000 + 355);
    /* Per-second counts vary like Poisson(100): variance near the mean,
     * unlike the evenly spaced profile's zero. */
    double mean = (double)n / 50, var = 0;
    for (unsigned s = 0; s < 50; s++)
        var += (per_s[s] - mean) * (per_s[s] - mean);
    var /= 49;
    assert_true(var > 40 && var < 200);
    /* Another seed gives other times; the same seed the same. */
    unsigned again[MAX_SECONDS];
    assert_int_equal(count_arrivals(&p, 42, again), n);
    assert_memory_equal(per_s, again, sizeof again);
    assert_true(count_arrivals(&p, 43, again) != n || memcmp(per_s, again, sizeof again));

    static const char *const ramp[] = {"ramp-users-per-sec 0 200 40s randomized"};
    p = profile(ramp, 1);
    n = count_arrivals(&p, 7, per_s);
    assert_true(n > 4000 - 320 && n < 4000 + 320);
    unsigned first = 0, last = 0;
    for (unsigned s = 0; s < 10; s++) {
        first += per_s[s];
        last += per_s[30 + s];
    }
    /* Expected 250 and 1750. */
    assert_true(first > 150 && first < 350 && last > 1550 && last < 1950);
}

static void test_scale(void **state)
{
    static const char *const steps[] = {"constant-users-per-sec 10 100s", "ramp-users 50 10s",
                                        "increment-users-per-sec 10 2 100s ramp 100s"};
    struct inj_profile p = profile(steps, 3);
    inj_profile_scale(&p, 10);
    assert_true(fabs(inj_profile_duration(&p) - 41) < 1e-9);
    unsigned per_s[MAX_SECONDS];
    /* Same rates, a tenth of the users: 100 + 5, then 100 + 150 + 200. */
    assert_int_equal(count_arrivals(&p, 1, per_s), 555);
    assert_int_equal(per_s[0], 10);
    assert_int_equal(per_s[11], 10);
    assert_int_equal(per_s[40], 20);
}

static void test_closed_target(void **state)
{
    static const char *const steps[] = {"constant-concurrent-users 5 2s",
                                        "ramp-concurrent-users 10 20 10s"};
    struct inj_profile p = profile(steps, 2);
    assert_true(inj_profile_closed(&p));
    double u;
    assert_true(inj_closed_target(&p, 1.5, &u) && u == 5);
    assert_true(inj_closed_target(&p, 2, &u) && u == 10);
    assert_true(inj_closed_target(&p, 7, &u) && u == 15);
    assert_false(inj_closed_target(&p, 12, &u));
    /* A closed staircase: 5, 10 and 15 users, 2 s ramps between. */
    static const char *const stairs[] = {"increment-concurrent-users 5 3 2s ramp 2s"};
    struct inj_profile q = profile(stairs, 1);
    assert_true(inj_profile_closed(&q));
    assert_true(inj_closed_target(&q, 1, &u) && u == 5);
    assert_true(inj_closed_target(&q, 2.5, &u) && u == 6);
    assert_true(inj_closed_target(&q, 4.5, &u) && u == 10);
    assert_true(inj_closed_target(&q, 9.9, &u) && u == 15);
    assert_false(inj_closed_target(&q, 10, &u));
    /* An open profile has no arrivals from closed steps and vice versa. */
    struct inj_gen g;
    double t;
    inj_gen_init(&g, &p, 1);
    assert_false(inj_gen_next(&g, &t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_increment),
        cmocka_unit_test(test_stairs_arrivals),
        cmocka_unit_test(test_stairs_equal_their_steps),
        cmocka_unit_test(test_segments),
        cmocka_unit_test(test_no_mixing),
        cmocka_unit_test(test_at_once_and_ramp_users),
        cmocka_unit_test(test_constant_rate),
        cmocka_unit_test(test_ramp_rate),
        cmocka_unit_test(test_randomized_is_poisson_like),
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_closed_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
