/* test_opt.c - unit tests for opt.c: the spellings opt_parse_uint accepts,
 * the ones it must refuse (signs, blanks, trailing text, overflow,
 * out-of-range values), and that *out is left alone on every refusal;
 * durations; and the option tables: every kind of option parsed from argv
 * with getopt_long's rules (long and short forms, permutation, "--", a
 * repeated option), the messages of refused values, the first bad option
 * stopping the parse, an unknown option, --help, opt_each, values from a
 * file (opt_set), and the --help text the table writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <getopt.h>

#include "core/opt.h"

/* Written into *out before each refused parse; must survive it. */
#define SENTINEL UINT64_C(0xDEADBEEFCAFEF00D)

static void expect_ok(const char *arg, uint64_t min, uint64_t max, uint64_t want)
{
    uint64_t v = SENTINEL;
    if (opt_parse_uint(arg, min, max, &v) != 0)
        fail_msg("opt_parse_uint(\"%s\", %llu, %llu) refused a valid value", arg,
                 (unsigned long long)min, (unsigned long long)max);
    assert_int_equal(v, want);
}

static void expect_refused(const char *arg, uint64_t min, uint64_t max)
{
    uint64_t v = SENTINEL;
    int rc = opt_parse_uint(arg, min, max, &v);
    if (rc != -1)
        fail_msg("opt_parse_uint(\"%s\", %llu, %llu) returned %d (value %llu), want -1", arg,
                 (unsigned long long)min, (unsigned long long)max, rc, (unsigned long long)v);
    assert_true(v == SENTINEL);
}

static void test_accepts_plain_numbers(void **state)
{
    expect_ok("0", 0, 100, 0);
    expect_ok("1", 0, 100, 1);
    expect_ok("100", 0, 100, 100);
    expect_ok("65535", 0, 65535, 65535);
    expect_ok("1883", 1, 65535, 1883);
    /* Leading zeros are still a plain decimal number (not octal). */
    expect_ok("010", 0, 100, 10);
    expect_ok("0000", 0, 100, 0);
}

static void test_accepts_bounds(void **state)
{
    expect_ok("5", 5, 5, 5);
    expect_ok("7", 7, 9, 7);
    expect_ok("9", 7, 9, 9);
    expect_ok("4294967295", 0, UINT32_MAX, UINT32_MAX);
    expect_ok("4294967296", 0, UINT64_MAX, UINT64_C(4294967296));
    expect_ok("18446744073709551615", 0, UINT64_MAX, UINT64_MAX);
    expect_ok("18446744073709551615", UINT64_MAX, UINT64_MAX, UINT64_MAX);
}

static void test_refuses_out_of_range(void **state)
{
    expect_refused("65536", 0, 65535);
    expect_refused("0", 1, 65535);
    expect_refused("6", 7, 9);
    expect_refused("10", 7, 9);
    expect_refused("4294967296", 0, UINT32_MAX);
    /* One past UINT64_MAX overflows strtoull. */
    expect_refused("18446744073709551616", 0, UINT64_MAX);
    expect_refused("99999999999999999999999", 0, UINT64_MAX);
}

static void test_refuses_empty_and_garbage(void **state)
{
    expect_refused("", 0, 100);
    expect_refused("x", 0, 100);
    expect_refused("12x", 0, 100);
    expect_refused("1 ", 0, 100);
    expect_refused("1.0", 0, 100);
    expect_refused("0x10", 0, 100);
    expect_refused("1e2", 0, 1000);
}

static void test_refuses_signs(void **state)
{
    expect_refused("-1", 0, 100);
    expect_refused("+1", 0, 100);
    expect_refused("-0", 0, 100);
    /* strtoull would turn "-1" into UINT64_MAX: the widest range must refuse it too. */
    expect_refused("-1", 0, UINT64_MAX);
}

/* "No sign, no trailing text" means the whole argument is digits; strtoull
 * skips leading white space, which must not leak through. */
static void test_refuses_leading_space(void **state)
{
    expect_refused(" 1", 0, 100);
    expect_refused("\t1", 0, 100);
    expect_refused("\n1", 0, 100);
}

/* Worse: a blank hides the sign from a first-character check, and strtoull
 * negates " -1" to UINT64_MAX, which the widest range would then accept. */
static void test_refuses_blank_then_sign(void **state)
{
    expect_refused(" -1", 0, UINT64_MAX);
    expect_refused(" +1", 0, 100);
}

static void test_durations(void **state)
{
    double d;
    assert_true(opt_parse_duration("500ms", 5, &d) && d == 0.5);
    assert_true(opt_parse_duration("10s", 3, &d) && d == 10);
    assert_true(opt_parse_duration("2m", 2, &d) && d == 120);
    assert_true(opt_parse_duration("1.5h", 4, &d) && d == 5400);
    /* A unit is needed, and a number a person types before it. */
    static const char *const bad[] = {"10", "s", "-1s", "1e3s", "1.2.3s", "10 s", "10d", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (opt_parse_duration(bad[i], strlen(bad[i]), &d))
            fail_msg("duration '%s' was accepted", bad[i]);
}

/* ---- option tables ------------------------------------------------------- */

struct args {
    bool flag, yes;
    unsigned count;
    uint32_t ms;
    int port;
    uint8_t level;
    double scale, dur;
    const char *name;
    unsigned calls;
    char seen[64];
};

/* Repeatable: appends each value. */
static int add_seen(const struct opt *o, void *base, const char *name, const char *value,
                    char *err, size_t errlen)
{
    struct args *a = base;
    if (!strcmp(value, "bad")) {
        snprintf(err, errlen, "%s: bad is bad", name);
        return -1;
    }
    a->calls++;
    strncat(a->seen, value, sizeof a->seen - strlen(a->seen) - 1);
    return 0;
}

static const struct opt_choice levels[] = {
    {"low", "1", 1},
    {"mid", NULL, 2},
    {"high", "3", 3},
    {NULL, NULL, 0},
};

#define A(f) OPT_FIELD(struct args, f)

static const struct opt test_options[] = {
    {"flag", 'f', OPT_FLAG, NULL, "a flag", NULL, A(flag), .keyword = "flag_kw"},
    {"yes", 0, OPT_BOOL, "true|false", "a bool", "false", A(yes)},
    {"count", 'n', OPT_UINT, "N", "a count", "3", A(count), .min = 1, .max = 10},
    {"wait", 0, OPT_UINT, "SECS", "seconds, kept in ms", "1", A(ms), .min = 1, .max = 60,
     .scale = 1000, .keyword = "wait_seconds"},
    {"port", 'p', OPT_UINT, "N", "a port", NULL, A(port), .min = 0, .max = 65535},
    {"level", 0, OPT_ENUM, "L", "how much", "mid", A(level), .choices = levels},
    {"scale", 0, OPT_DOUBLE, "X", "a scale", "1", A(scale), .dmin = 0, .dmin_open = true,
     .dmax = 100, .wants = "a number above 0 and up to 100"},
    {"for", 0, OPT_DURATION, "D", "a duration", NULL, A(dur), .dmax = 60},
    {"name", 0, OPT_STRING, "S", "a name", NULL, A(name)},
    {"see", 's', OPT_CALL, "V", "repeatable", NULL, .set = add_seen},
    {"secret", 0, OPT_FLAG, NULL, "not shown", NULL, A(yes), .hidden = true},
    {.kind = OPT_END},
};

static const struct opt_table test_tables[] = {{test_options, 0}, {NULL, 0}};

static const struct opt_cmd test_cmd = {.head = "usage: t [options] ARGS\n\n",
                                        .tables = test_tables,
                                        .tail = "\nthe end\n"};

/* The last parse's argv, as getopt_long left it. */
static char *argv[32];
static int argc;

/* Parses the NULL-terminated words (after argv[0]) into *a. */
static enum opt_result parse(const struct opt_cmd *cmd, struct args *a, struct opt_error *e,
                             const char **words)
{
    argv[0] = "t";
    for (argc = 1; words[argc - 1]; argc++)
        argv[argc] = (char *)words[argc - 1];
    argv[argc] = NULL;
    *a = (struct args){.count = 3};
    return opt_parse(cmd, argc, argv, a, e);
}

static void test_table_parses_every_kind(void **state)
{
    struct args a;
    struct opt_error e;
    const char *w[] = {"-f", "--yes", "true", "-n7", "--wait=2", "-p", "8080", "--level", "3",
                       "--scale", "0.5", "--for", "1.5s", "--name", "x", "first", "-s", "a",
                       "--see", "b", "--", "-n", NULL};
    assert_int_equal(parse(&test_cmd, &a, &e, w), OPT_OK);
    assert_true(a.flag && a.yes);
    assert_int_equal(a.count, 7);
    assert_int_equal(a.ms, 2000);
    assert_int_equal(a.port, 8080);
    assert_int_equal(a.level, 3);
    assert_true(a.scale == 0.5 && a.dur == 1.5);
    assert_string_equal(a.name, "x");
    assert_int_equal(a.calls, 2);
    assert_string_equal(a.seen, "ab");
    /* getopt_long's permutation: the arguments come last, "--" ends the
     * options. */
    assert_int_equal(argc - optind, 2);
    assert_string_equal(argv[optind], "first");
    assert_string_equal(argv[optind + 1], "-n");
}

static void test_table_stops_at_argument(void **state)
{
    static const struct opt_cmd cmd = {.head = "", .tables = test_tables,
                                       .stop_at_argument = true};
    struct args a;
    struct opt_error e;
    const char *w[] = {"-f", "file", "-n", "5", NULL};
    assert_int_equal(parse(&cmd, &a, &e, w), OPT_OK);
    assert_true(a.flag);
    assert_int_equal(a.count, 3);
    assert_int_equal(argc - optind, 3);
    assert_string_equal(argv[optind], "file");
}

/* The first bad option stops the parse, with its message. */
static void expect_refusal(const char *opt, const char *value, const char *msg)
{
    struct args a;
    struct opt_error e;
    const char *w[] = {opt, value, "-n", "9", NULL};
    assert_int_equal(parse(&test_cmd, &a, &e, w), OPT_ERROR);
    assert_non_null(e.opt);
    assert_string_equal(e.value, value);
    assert_string_equal(e.msg, msg);
    assert_int_equal(a.count, 3);
}

static void test_table_refusals(void **state)
{
    expect_refusal("--count", "11", "--count wants a whole number from 1 to 10, not '11'");
    expect_refusal("-n", "x", "--count wants a whole number from 1 to 10, not 'x'");
    expect_refusal("--yes", "yes", "--yes wants true or false, not 'yes'");
    expect_refusal("--level", "4", "--level wants low (or 1), mid or high (or 3), not '4'");
    expect_refusal("--scale", "0", "--scale wants a number above 0 and up to 100, not '0'");
    expect_refusal("--scale", "1x", "--scale wants a number above 0 and up to 100, not '1x'");
    expect_refusal("--for", "61s",
                   "--for wants a duration above 0 with its unit (500ms, 10s, 2m), not '61s'");
    expect_refusal("--for", "0s",
                   "--for wants a duration above 0 with its unit (500ms, 10s, 2m), not '0s'");
    expect_refusal("--see", "bad", "--see: bad is bad");
}

static void test_table_unknown_and_help(void **state)
{
    struct args a;
    struct opt_error e;
    const char *unknown[] = {"--bogus", NULL};
    opterr = 0; /* getopt_long's own message is not the point here */
    assert_int_equal(parse(&test_cmd, &a, &e, unknown), OPT_ERROR);
    assert_null(e.opt);
    const char *missing[] = {"--count", NULL};
    assert_int_equal(parse(&test_cmd, &a, &e, missing), OPT_ERROR);
    assert_null(e.opt);
    opterr = 1;
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    const char *help[] = {"-f", "-h", "--bogus", NULL};
    assert_int_equal(parse(&test_cmd, &a, &e, help), OPT_HELP);
    fclose(stdout);
    stdout = saved;
}

static int collect(const char *value, void *ctx)
{
    strcat(ctx, value);
    return strcmp(value, "stop") ? 0 : 7;
}

static void test_table_each(void **state)
{
    char got[64] = "";
    char *words[] = {"t", "--bogus", "-s", "1", "--count", "x", "--see=2", "-s3", NULL};
    assert_int_equal(opt_each(&test_cmd, 8, words, "see", collect, got), 0);
    assert_string_equal(got, "123");
    char *stop[] = {"t", "-s", "stop", "-s", "4", NULL};
    got[0] = '\0';
    assert_int_equal(opt_each(&test_cmd, 5, stop, "see", collect, got), 7);
    assert_string_equal(got, "stop");
}

/* What a configuration file gives: a keyword (or the long name) and its
 * value, the flags' true or false spelled out. */
static void test_table_from_a_file(void **state)
{
    struct args a = {0};
    char err[256];
    const struct opt *f = opt_find(test_options, "flag_kw");
    assert_ptr_equal(f, opt_find(test_options, "flag"));
    assert_int_equal(opt_set(f, &a, "flag_kw", "true", err, sizeof err), 0);
    assert_true(a.flag);
    assert_int_equal(opt_set(f, &a, "flag_kw", "false", err, sizeof err), 0);
    assert_false(a.flag);
    assert_int_equal(opt_set(f, &a, "flag_kw", "yes", err, sizeof err), -1);
    assert_string_equal(err, "flag_kw wants true or false, not 'yes'");
    const struct opt *w = opt_find(test_options, "wait_seconds");
    assert_int_equal(opt_set(w, &a, "wait_seconds", "61", err, sizeof err), -1);
    assert_string_equal(err, "wait_seconds wants a whole number from 1 to 60, not '61'");
    assert_int_equal(opt_set(w, &a, "wait_seconds", "60", err, sizeof err), 0);
    assert_int_equal(a.ms, 60000);
    assert_null(opt_find(test_options, "nothing"));
}

/* cmd's --help, for the caller to free. */
static char *help_of(const struct opt_cmd *cmd)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    opt_help(f, cmd);
    fclose(f);
    return text;
}

static void test_table_help_text(void **state)
{
    char *text = help_of(&test_cmd);
    assert_string_equal(text,
                        "usage: t [options] ARGS\n"
                        "\n"
                        "options:\n"
                        "  -f, --flag            a flag\n"
                        "      --yes true|false  a bool (default false)\n"
                        "  -n, --count N         a count (default 3)\n"
                        "      --wait SECS       seconds, kept in ms (default 1)\n"
                        "  -p, --port N          a port\n"
                        "      --level L         how much (default mid)\n"
                        "      --scale X         a scale (default 1)\n"
                        "      --for D           a duration\n"
                        "      --name S          a name\n"
                        "  -s, --see V           repeatable\n"
                        "  -h, --help            this text\n"
                        "\n"
                        "the end\n");
    free(text);
}

static void test_table_help_wraps(void **state)
{
    static const struct opt long_help[] = {
        {"x", 0, OPT_FLAG, NULL,
         "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
         "fifteen\n  an indented line that is long enough to be wrapped at the width of the "
         "help", "none", OPT_FIELD(struct args, flag)},
        {"a-very-long-option-name-indeed", 0, OPT_STRING, "VALUE", "short", NULL,
         OPT_FIELD(struct args, name)},
        {.kind = OPT_END},
    };
    static const struct opt_table tables[] = {{long_help, 0}, {NULL, 0}};
    static const struct opt_cmd cmd = {.head = "", .tables = tables};
    char *text = help_of(&cmd);
    assert_string_equal(text,
                        "options:\n"
                        "  --x         one two three four five six seven eight nine ten eleven "
                        "twelve\n"
                        "              thirteen fourteen fifteen\n"
                        "                an indented line that is long enough to be wrapped at the "
                        "width\n"
                        "                of the help\n"
                        "              (default none)\n"
                        "  --a-very-long-option-name-indeed VALUE\n"
                        "              short\n"
                        "  -h, --help  this text\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_plain_numbers),
        cmocka_unit_test(test_accepts_bounds),
        cmocka_unit_test(test_refuses_out_of_range),
        cmocka_unit_test(test_refuses_empty_and_garbage),
        cmocka_unit_test(test_refuses_signs),
        cmocka_unit_test(test_refuses_leading_space),
        cmocka_unit_test(test_refuses_blank_then_sign),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_table_parses_every_kind),
        cmocka_unit_test(test_table_stops_at_argument),
        cmocka_unit_test(test_table_refusals),
        cmocka_unit_test(test_table_unknown_and_help),
        cmocka_unit_test(test_table_each),
        cmocka_unit_test(test_table_from_a_file),
        cmocka_unit_test(test_table_help_text),
        cmocka_unit_test(test_table_help_wraps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
