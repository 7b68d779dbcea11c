/* test_compare.c - report/compare.c: results documents read back (which
 * rows count, fields skipped, every refusal with where it was found), and
 * the verdicts: better, worse and regression by each figure's direction,
 * "~" under the noise threshold or p >= alpha, too few runs, points in one
 * file only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "report/compare.h"

#define HEAD "{\"schema_version\":1,\"tool\":{\"name\":\"shootout\",\"version\":\"9.9\"},"
#define ROW(name, type, thr, p50, cpu)                                                    \
    "{\"name\":\"" name "\",\"run_type\":\"" type "\",\"throughput\":{\"value\":" thr       \
    ",\"unit\":\"call/s\",\"definition\":\"x\"},\"latency\":" p50 ",\"server\":" cpu        \
    ",\"errors\":{\"connect\":0}}"
#define LAT(v) "{\"unit\":\"us\",\"p50\":" v ",\"p90\":" v ",\"p99\":" v ",\"p99_9\":null}"
#define CPU(v) "{\"pid\":1,\"cpu_us_per_op\":" v "}"

static int parse(struct cmp_file *f, const char *doc, char *err)
{
    return cmp_parse(f, doc, strlen(doc), err, 256);
}

static void test_rows(void **state)
{
    const char *doc =
        HEAD "\"context\":{\"date\":\"2026-12-01T00:00:00Z\",\"host_name\":\"h\",\"x\":[1,{}]},"
             "\"extra\":{\"a\":[true,false,null]},\"benchmarks\":["
        ROW("a/t/1", "iteration", "100", LAT("10"), CPU("2.5")) ","
        ROW("a/t/1", "iteration", "1.5e2", LAT("12"), "null") ","
        ROW("a/t/1", "aggregate", "125", LAT("11"), CPU("2.5")) ","
        ROW("b/t/1", "iteration", "7", "null", CPU("1")) ","
        "{\"name\":\"a/t/1\",\"run_type\":\"iteration\",\"throughput\":{\"value\":1},"
        "\"errors\":{\"message\":\"connection refused\"}}]}";
    struct cmp_file f;
    char err[256] = "";
    assert_int_equal(parse(&f, doc, err), 0);
    assert_string_equal(f.date, "2026-12-01T00:00:00Z");
    assert_string_equal(f.host, "h");
    assert_string_equal(f.version, "9.9");
    assert_int_equal(f.n, 2);
    const struct cmp_point *a = &f.pts[0], *b = &f.pts[1];
    assert_string_equal(a->name, "a/t/1");
    assert_string_equal(a->unit, "call/s");
    /* Two iterations; the aggregate and the failed iteration are not samples. */
    assert_int_equal(a->fig[CMP_THROUGHPUT].n, 2);
    assert_float_equal(a->fig[CMP_THROUGHPUT].v[1], 150, 0);
    assert_int_equal(a->fig[CMP_P50].n, 2);
    assert_int_equal(a->fig[CMP_P99_9].n, 0); /* null: not a figure */
    assert_int_equal(a->fig[CMP_SERVER_CPU].n, 1);
    assert_string_equal(b->name, "b/t/1");
    assert_int_equal(b->fig[CMP_P50].n, 0);
    assert_int_equal(b->fig[CMP_SERVER_CPU].n, 1);
    assert_int_equal(a->failed, 1);
    assert_int_equal(b->failed, 0);
    cmp_file_free(&f);
}

/* Each refusal, with a word of its message and the byte it names. */
static void test_refusals(void **state)
{
    static const struct {
        const char *doc, *says, *at;
    } cases[] = {
        {"", "ends early", "byte 0:"},
        {"[1,2]", "not a shootout results file", "byte 0:"},
        {"{\"benchmarks\":[]}", "not a shootout results file", NULL},
        {"{\"schema_version\":2,\"benchmarks\":[]}", "schema_version is not 1", NULL},
        {"{\"schema_version\":1,\"benchmarks\":{}}", "benchmarks is not an array", "byte 33:"},
        {"{\"schema_version\":1,\"benchmarks\":[1]}", "a benchmark is not an object",
         "byte 34:"},
        {"{\"schema_version\":1,\"benchmarks\":[{\"run_type\":\"iteration\"}]}",
         "without a name", "byte 34:"},
        {"{\"schema_version\":1,\"benchmarks\":[{\"name\":5}]}", "name is not a string",
         "byte 42:"},
        {"{\"schema_version\":1,\"benchmarks\":[{\"name\":\"x\",\"throughput\":{\"value\":"
         "\"9\"}}]}",
         "value is not a number", NULL},
        {"{\"schema_version\":1,\"benchmarks\":[{\"name\":\"x\",\"latency\":3}]}",
         "latency is not an object", NULL},
        {"{\"schema_version\":1,\"benchmarks\":[{\"name\":\"x\" \"y\"}]}", "malformed JSON",
         "byte 46:"},
        {"{\"schema_version\":1,\"benchmarks\":[]} x", "text after the document", "byte 37:"},
        {"{\"schema_version\":1,\"benchmarks\":[{\"name\":\"x", "ends early", "byte 44:"},
        {"{\"schema_version\":1,\"benchmarks\":[{\"name\":\"\\u0000\"}]}", "malformed string",
         NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct cmp_file f;
        char err[256] = "";
        if (parse(&f, cases[i].doc, err) == 0) {
            fprintf(stderr, "accepted: %s\n", cases[i].doc);
            fail();
        }
        if (!strstr(err, cases[i].says) || (cases[i].at && strncmp(err, cases[i].at,
                                                                    strlen(cases[i].at)))) {
            fprintf(stderr, "%s\n  said: %s\n", cases[i].doc, err);
            fail();
        }
        assert_int_equal(f.n, 0);
        assert_null(f.pts);
    }
}

/* A file of iterations: throughput, p50 and CPU of point name, n runs,
 * each figure run i at base * (1 + i / 1000). */
static void build(struct cmp_file *f, const char *name, unsigned n, double thr, double p50,
                  double cpu)
{
    static char doc[16384];
    size_t len = (size_t)snprintf(doc, sizeof doc, HEAD "\"benchmarks\":[");
    for (unsigned i = 0; i < n; i++) {
        double k = 1 + i / 1000.0;
        len += (size_t)snprintf(doc + len, sizeof doc - len,
                                "%s{\"name\":\"%s\",\"run_type\":\"iteration\","
                                "\"throughput\":{\"value\":%.17g},\"latency\":{\"p50\":%.17g},"
                                "\"server\":{\"cpu_us_per_op\":%.17g}}",
                                i ? "," : "", name, thr * k, p50 * k, cpu * k);
    }
    snprintf(doc + len, sizeof doc - len, "]}");
    char err[256];
    assert_int_equal(parse(f, doc, err), 0);
}

static const struct cmp_delta *figure(const struct cmp_result *r, enum cmp_figure fig)
{
    for (unsigned i = 0; i < r->n; i++)
        if (r->d[i].fig == fig)
            return &r->d[i];
    fail();
    return NULL;
}

static void test_verdicts(void **state)
{
    struct cmp_file old, new;
    struct cmp_result r;
    struct cmp_options opt = {.alpha = 0.05, .noise_pct = 1, .fail_pct = 5};
    /* Throughput down 10%: worse, a regression past 5%; latency up 3%:
     * worse but within 5%; CPU down 0.5%: significant, but noise. */
    build(&old, "p", 5, 1000, 100, 10);
    build(&new, "p", 5, 900, 103, 9.95);
    cmp_compare(&r, &old, &new, &opt);
    assert_int_equal(r.n, 3); /* p90, p99, p99.9 are in neither */
    const struct cmp_delta *t = figure(&r, CMP_THROUGHPUT), *l = figure(&r, CMP_P50),
                           *c = figure(&r, CMP_SERVER_CPU);
    assert_int_equal(t->verdict, CMP_WORSE);
    assert_true(t->regression);
    assert_float_equal(t->old_median, 1000 * 1.002, 1e-9);
    assert_float_equal(t->ratio, 0.9, 1e-12);
    assert_float_equal(t->delta_pct, -10, 1e-9);
    assert_float_equal(t->p, 2.0 / 252, 1e-12); /* 2 / C(10, 5) */
    assert_float_equal(t->u, 0, 0);
    assert_int_equal(l->verdict, CMP_WORSE);
    assert_false(l->regression);
    assert_int_equal(c->verdict, CMP_SAME);
    assert_int_equal(r.regressions, 1);
    assert_false(r.few);
    cmp_result_free(&r);

    /* Without --fail-on-regression nothing is a regression. */
    opt.fail_pct = -1;
    cmp_compare(&r, &old, &new, &opt);
    assert_int_equal(r.regressions, 0);
    cmp_result_free(&r);
    cmp_file_free(&new);

    /* The other way round: throughput up, latency and CPU down, all better. */
    build(&new, "p", 5, 1100, 90, 9);
    cmp_compare(&r, &old, &new, &opt);
    for (unsigned i = 0; i < r.n; i++)
        assert_int_equal(r.d[i].verdict, CMP_BETTER);
    cmp_result_free(&r);
    cmp_file_free(&new);

    /* Overlapping runs: p >= alpha, "~" however far the medians. */
    build(&new, "p", 5, 1000.5, 100.05, 10.005);
    cmp_compare(&r, &old, &new, &opt);
    assert_int_equal(figure(&r, CMP_THROUGHPUT)->verdict, CMP_SAME);
    assert_true(figure(&r, CMP_THROUGHPUT)->p >= 0.05);
    cmp_result_free(&r);
    cmp_file_free(&new);
    cmp_file_free(&old);

    /* 3 against 3: too few, even halved. */
    build(&old, "p", 3, 1000, 100, 10);
    build(&new, "p", 3, 500, 200, 20);
    opt.fail_pct = 5;
    cmp_compare(&r, &old, &new, &opt);
    assert_int_equal(figure(&r, CMP_THROUGHPUT)->verdict, CMP_FEW);
    assert_float_equal(figure(&r, CMP_THROUGHPUT)->p, 0.1, 1e-12);
    assert_true(r.few);
    assert_int_equal(r.regressions, 0);
    cmp_result_free(&r);
    cmp_file_free(&new);
    cmp_file_free(&old);
}

static void test_only_in_one(void **state)
{
    const char *a = HEAD "\"benchmarks\":[" ROW("x/1", "iteration", "1", "null", "null") ","
                         ROW("both", "iteration", "1", "null", "null") "]}";
    const char *b = HEAD "\"benchmarks\":[" ROW("both", "iteration", "2", "null", "null") ","
                         ROW("y/1", "iteration", "1", "null", "null") ","
                         ROW("y/2", "aggregate", "1", "null", "null") ","
                         "{\"name\":\"x/1\",\"run_type\":\"iteration\","
                         "\"errors\":{\"message\":\"refused\"}}]}";
    struct cmp_file old, new;
    char err[256];
    assert_int_equal(parse(&old, a, err), 0);
    assert_int_equal(parse(&new, b, err), 0);
    struct cmp_result r;
    struct cmp_options opt = {.alpha = 0.05, .noise_pct = 1, .fail_pct = -1};
    cmp_compare(&r, &old, &new, &opt);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.d[0].old->name, "both");
    assert_int_equal(r.d[0].verdict, CMP_FEW);
    /* x/1 failed in new: in both, nothing to judge, not "only in old". */
    assert_int_equal(r.n_only_old, 0);
    assert_int_equal(r.n_unjudged, 1);
    assert_string_equal(r.unjudged[0]->name, "x/1");
    assert_int_equal(r.unjudged[0]->failed, 0);
    assert_int_equal(r.unjudged[1]->failed, 1);
    /* y/2 has only an aggregate: no point at all. */
    assert_int_equal(r.n_only_new, 1);
    assert_string_equal(r.only_new[0]->name, "y/1");
    cmp_result_free(&r);
    cmp_file_free(&old);
    cmp_file_free(&new);
}

/* The machines two files come from, by what both contexts say. */
static void test_machines_differ(void **state)
{
    struct cmp_file a, b;
    char err[256] = "", msg[256];
    const char *ctx_a = HEAD "\"context\":{\"host_name\":\"h1\",\"num_cpus\":2,\"cpu_model\":\"Xeon\"},"
                             "\"benchmarks\":[]}";
    const char *ctx_b = HEAD "\"context\":{\"host_name\":\"h2\",\"num_cpus\":8,\"cpu_model\":\"EPYC\"},"
                             "\"benchmarks\":[]}";
    const char *ctx_none = HEAD "\"benchmarks\":[]}";
    assert_int_equal(parse(&a, ctx_a, err), 0);
    assert_int_equal(parse(&b, ctx_b, err), 0);
    assert_true(cmp_machines_differ(&a, &b, msg, sizeof msg));
    assert_string_equal(msg, "host h1 vs h2; CPUs 2 vs 8; CPU Xeon vs EPYC");
    assert_false(cmp_machines_differ(&a, &a, msg, sizeof msg));
    assert_string_equal(msg, "");
    cmp_file_free(&b);
    /* A context that says nothing differs from nothing. */
    assert_int_equal(parse(&b, ctx_none, err), 0);
    assert_false(cmp_machines_differ(&a, &b, msg, sizeof msg));
    cmp_file_free(&a);
    cmp_file_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_machines_differ),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_verdicts),
        cmocka_unit_test(test_only_in_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
