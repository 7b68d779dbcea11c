/* test_inject.c - unit tests for the injection profiles (inject.c): the
 * strict step parser, the arrival times of every open step against the
 * profile (exact totals and per-second counts without randomization, a
 * Poisson-like count and spacing with it), time scaling, and the closed
 * model's target curve.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bench/inject.h"

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
    static const char *const steps[] = {"constant-users-per-sec 10 100s", "ramp-users 50 10s"};
    struct inj_profile p = profile(steps, 2);
    inj_profile_scale(&p, 10);
    assert_true(fabs(inj_profile_duration(&p) - 11) < 1e-9);
    unsigned per_s[MAX_SECONDS];
    /* Same rate, a tenth of the users. */
    assert_int_equal(count_arrivals(&p, 1, per_s), 105);
    assert_int_equal(per_s[0], 10);
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
