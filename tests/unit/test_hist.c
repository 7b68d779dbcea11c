/* test_hist.c - unit tests for the log-linear histogram (hist.c): bucket
 * layout, the precision bound against exact order statistics, known
 * distributions, exact mean and stddev, merging per-thread histograms, and
 * the JSON form read back exactly and refused when it does not add up.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/json.h"
#include "core/mem.h"
#include "report/hist.h"
#include "report/result_read.h"
#include "test_rng.h"

/* Log-uniform over [0, HIST_MAX], so every power of two gets samples. */
static uint64_t rnd_value(void)
{
    unsigned bits = (unsigned)(rnd64() % (HIST_MAX_BITS + 1));
    return bits == 0 ? 0 : rnd64() & ((UINT64_C(1) << bits) - 1);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The exact sample of rank ceil(p/100 * n) in a sorted array. */
static uint64_t exact_percentile(const uint64_t *sorted, size_t n, double p)
{
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

static struct hist *hist_new(void)
{
    struct hist *h = calloc(1, sizeof *h);
    assert_non_null(h);
    return h;
}

static void test_bucket_layout(void **state)
{
    /* Buckets tile [0, HIST_MAX] without gaps or overlaps. */
    assert_int_equal(hist_bucket_low(0), 0);
    for (unsigned b = 0; b + 1 < HIST_BUCKETS; b++)
        assert_int_equal(hist_bucket_low(b) + hist_bucket_width(b), hist_bucket_low(b + 1));
    unsigned top = HIST_BUCKETS - 1;
    assert_int_equal(hist_bucket_low(top) + hist_bucket_width(top) - 1, HIST_MAX);
    assert_int_equal(hist_bucket(HIST_MAX), top);
    assert_int_equal(hist_bucket(UINT64_MAX), top);
    /* Exact below 256. */
    for (uint64_t v = 0; v < 256; v++) {
        assert_int_equal(hist_bucket(v), v);
        assert_int_equal(hist_bucket_width(hist_bucket(v)), 1);
    }
}

static void test_precision_bound(void **state)
{
    /* Every value lies in its bucket, and the bucket is at most 1/128 of
     * the value wide: the midpoint is within 1/256 of anything in it. */
    rng_state = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 1000000; i++) {
        uint64_t v = rnd_value();
        unsigned b = hist_bucket(v);
        uint64_t low = hist_bucket_low(b), w = hist_bucket_width(b);
        assert_true(low <= v && v - low < w);
        if (v >= 256)
            assert_true(w * 128 <= low);
    }
}

static void test_percentiles_against_exact(void **state)
{
    enum { N = 200000 };
    static const double ps[] = {0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
    uint64_t *v = malloc(N * sizeof *v);
    assert_non_null(v);
    struct hist *h = hist_new();
    rng_state = 12345;
    for (size_t i = 0; i < N; i++) {
        v[i] = rnd_value();
        hist_record(h, v[i]);
    }
    qsort(v, N, sizeof *v, cmp_u64);
    assert_int_equal(h->min, v[0]);
    assert_int_equal(h->max, v[N - 1]);
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        uint64_t want = exact_percentile(v, N, ps[i]);
        uint64_t got = hist_percentile(h, ps[i]);
        uint64_t err = got > want ? got - want : want - got;
        assert_true(err * 256 <= want);
    }
    free(h);
    free(v);
}

static void test_empty(void **state)
{
    struct hist *h = hist_new();
    assert_int_equal(hist_percentile(h, 50), 0);
    assert_true(hist_mean(h) == 0);
    assert_true(hist_stddev(h) == 0);
    free(h);
}

static void test_uniform_exact_range(void **state)
{
    /* 1..100 once each: every statistic is exact. */
    struct hist *h = hist_new();
    for (uint64_t v = 1; v <= 100; v++)
        hist_record(h, v);
    assert_int_equal(h->count, 100);
    assert_int_equal(h->min, 1);
    assert_int_equal(h->max, 100);
    assert_int_equal(hist_percentile(h, 50), 50);
    assert_int_equal(hist_percentile(h, 90), 90);
    assert_int_equal(hist_percentile(h, 99), 99);
    assert_int_equal(hist_percentile(h, 99.9), 100);
    assert_int_equal(hist_percentile(h, 100), 100);
    assert_float_equal(hist_mean(h), 50.5, 1e-12);
    assert_float_equal(hist_stddev(h), sqrt((100.0 * 100.0 - 1) / 12), 1e-9);
    free(h);
}

static void test_uniform_large(void **state)
{
    /* 1..1e6 microseconds as nanoseconds. */
    struct hist *h = hist_new();
    for (uint64_t v = 1; v <= 1000000; v++)
        hist_record(h, v * 1000);
    static const double ps[] = {50, 90, 99, 99.9};
    for (size_t i = 0; i < 4; i++) {
        double want = ps[i] / 100 * 1e9;
        double got = (double)hist_percentile(h, ps[i]);
        assert_true(fabs(got - want) <= want / 256);
    }
    assert_float_equal(hist_mean(h), 500000.5 * 1000, 1e-3);
    assert_float_equal(hist_stddev(h), sqrt((1e12 - 1) / 12) * 1000, 1);
    free(h);
}

static void test_constant(void **state)
{
    struct hist *h = hist_new();
    for (int i = 0; i < 1000; i++)
        hist_record(h, 123457);
    /* Clamping to [min, max] makes a constant exact despite its bucket. */
    assert_int_equal(hist_percentile(h, 0.1), 123457);
    assert_int_equal(hist_percentile(h, 50), 123457);
    assert_int_equal(hist_percentile(h, 100), 123457);
    assert_float_equal(hist_mean(h), 123457, 1e-9);
    assert_true(hist_stddev(h) == 0);
    free(h);
}

static void test_two_point(void **state)
{
    /* A tail: 1000 fast samples and 10 slow ones. */
    struct hist *h = hist_new();
    for (int i = 0; i < 1000; i++)
        hist_record(h, 100);
    for (int i = 0; i < 10; i++)
        hist_record(h, 1000000);
    assert_int_equal(hist_percentile(h, 50), 100);
    assert_int_equal(hist_percentile(h, 99), 100); /* rank 1000 */
    uint64_t tail = hist_percentile(h, 99.9);      /* rank 1009 */
    assert_true(tail * 256 >= 1000000 * 255 && tail <= 1000000);
    double mean = (1000.0 * 100 + 10.0 * 1e6) / 1010;
    double var = (1000.0 * (100 - mean) * (100 - mean) + 10.0 * (1e6 - mean) * (1e6 - mean)) / 1010;
    assert_float_equal(hist_mean(h), mean, 1e-6);
    assert_float_equal(hist_stddev(h), sqrt(var), 1e-6);
    free(h);
}

static void test_beyond_max(void **state)
{
    struct hist *h = hist_new();
    uint64_t big = HIST_MAX * 4;
    hist_record(h, big);
    assert_int_equal(h->max, big);
    assert_int_equal(h->buckets[HIST_BUCKETS - 1], 1);
    assert_int_equal(hist_percentile(h, 50), big);
    free(h);
}

static void test_sums_do_not_overflow(void **state)
{
    /* 2^20 samples of HIST_MAX: the sum of squares needs ~94 bits. */
    struct hist *h = hist_new();
    for (int i = 0; i < (1 << 20); i++)
        hist_record(h, HIST_MAX);
    assert_float_equal(hist_mean(h), (double)HIST_MAX, 1);
    assert_true(hist_stddev(h) == 0);
    free(h);
}

static void test_merge_equals_single(void **state)
{
    enum { N = 100000, PARTS = 4 };
    struct hist *all = hist_new(), *merged = hist_new();
    struct hist *part[PARTS];
    for (int i = 0; i < PARTS; i++)
        part[i] = hist_new();
    rng_state = 777;
    for (int i = 0; i < N; i++) {
        uint64_t v = rnd_value();
        hist_record(all, v);
        hist_record(part[rnd64() % PARTS], v);
    }
    for (int i = 0; i < PARTS; i++)
        hist_merge(merged, part[i]);
    /* The same samples in any split give the identical histogram. */
    assert_memory_equal(merged, all, sizeof *all);

    /* Merging an empty histogram changes nothing, either way round. */
    struct hist *empty = hist_new();
    hist_merge(merged, empty);
    assert_memory_equal(merged, all, sizeof *all);
    hist_merge(empty, all);
    assert_memory_equal(empty, all, sizeof *all);

    hist_reset(merged);
    assert_int_equal(merged->count, 0);
    for (int i = 0; i < PARTS; i++)
        free(part[i]);
    free(empty);
    free(merged);
    free(all);
}

/* h written as JSON, compact (json_buf) when flat is false, else indented
 * through a memory stream. mem_free the result. */
static char *hist_json(const struct hist *h, bool indented)
{
    if (indented) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        struct json j;
        json_init(&j, f);
        hist_write_json(&j, h);
        fclose(f);
        char *copy = mem_alloc(len + 1);
        memcpy(copy, text, len + 1);
        free(text);
        return copy;
    }
    struct json_buf b = {0};
    struct json j;
    json_init_buf(&j, &b);
    hist_write_json(&j, h);
    return b.data;
}

/* Reads text as one histogram document; the error, if any, in err. */
static bool hist_parse(const char *text, struct hist *h, char *err, size_t errlen)
{
    struct rr ps;
    rr_init(&ps, text, strlen(text), 8, err, errlen);
    return hist_read_json(&ps, h) && (jr_end(&ps.r) || rr_reader_failed(&ps));
}

static void test_json_round_trip(void **state)
{
    struct hist *h = hist_new(), *back = hist_new();
    char err[128];
    /* Empty, then a log-uniform spread with huge squares, then past HIST_MAX. */
    for (int round = 0; round < 3; round++) {
        if (round == 1) {
            rng_state = 4242;
            for (int i = 0; i < 50000; i++)
                hist_record(h, rnd_value());
        }
        if (round == 2)
            hist_record(h, HIST_MAX * 4);
        for (int indented = 0; indented < 2; indented++) {
            char *text = hist_json(h, indented);
            assert_true(hist_parse(text, back, err, sizeof err));
            assert_memory_equal(back, h, sizeof *h);
            mem_free(text);
        }
    }
    /* Sparse, and the buckets on one line even in the indented form. */
    char *text = hist_json(h, true);
    assert_true(strlen(text) < 40 * HIST_BUCKETS);
    assert_non_null(strstr(text, "\"buckets\": [[0,"));
    mem_free(text);
    free(h);
    free(back);
}

static void test_json_refused(void **state)
{
    static const char *const bad[] = {
        "[]",
        "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"25\"}",
        "{\"unit\":\"us\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"25\",\"buckets\":[[5,1]]}",
        /* the counts do not add up to count */
        "{\"unit\":\"ns\",\"count\":2,\"min\":5,\"max\":5,\"sum\":\"10\",\"sum_sq\":\"50\",\"buckets\":[[5,1]]}",
        /* out of order, duplicate, empty, out of range */
        "{\"unit\":\"ns\",\"count\":2,\"min\":5,\"max\":6,\"sum\":\"11\",\"sum_sq\":\"61\",\"buckets\":[[6,1],[5,1]]}",
        "{\"unit\":\"ns\",\"count\":2,\"min\":5,\"max\":5,\"sum\":\"10\",\"sum_sq\":\"50\",\"buckets\":[[5,1],[5,1]]}",
        "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"25\",\"buckets\":[[5,1],[6,0]]}",
        "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"25\",\"buckets\":[[3968,1]]}",
        /* min outside the first bucket; sum past count * max */
        "{\"unit\":\"ns\",\"count\":1,\"min\":4,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"25\",\"buckets\":[[5,1]]}",
        "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"6\",\"sum_sq\":\"25\",\"buckets\":[[5,1]]}",
        /* a field twice; a sum as a number, with a sign, past 2^128 */
        "{\"unit\":\"ns\",\"count\":1,\"count\":1,\"min\":5,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"25\",\"buckets\":[[5,1]]}",
        "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":5,\"sum_sq\":\"25\",\"buckets\":[[5,1]]}",
        "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"+5\",\"sum_sq\":\"25\",\"buckets\":[[5,1]]}",
        "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"340282366920938463463374607431768211456\",\"buckets\":[[5,1]]}",
        /* a pair of three, a negative count, a fraction */
        "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"25\",\"buckets\":[[5,1,1]]}",
        "{\"unit\":\"ns\",\"count\":-1,\"min\":5,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"25\",\"buckets\":[[5,1]]}",
        "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"5\",\"sum_sq\":\"25\",\"buckets\":[[5,1.0]]}",
        /* empty but with a min */
        "{\"unit\":\"ns\",\"count\":0,\"min\":5,\"max\":0,\"sum\":\"0\",\"sum_sq\":\"0\",\"buckets\":[]}",
    };
    const char *good = "{\"unit\":\"ns\",\"count\":1,\"min\":5,\"max\":5,\"sum\":\"5\","
                       "\"sum_sq\":\"25\",\"buckets\":[[5,1]],\"later\":[1]}";
    struct hist *h = hist_new();
    char err[128];
    assert_true(hist_parse(good, h, err, sizeof err));
    assert_int_equal(h->count, 1);
    assert_int_equal(hist_percentile(h, 50), 5);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (hist_parse(bad[i], h, err, sizeof err))
            fail_msg("accepted: %s", bad[i]);
        assert_true(!strncmp(err, "byte ", 5));
    }
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_layout),
        cmocka_unit_test(test_precision_bound),
        cmocka_unit_test(test_percentiles_against_exact),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_uniform_exact_range),
        cmocka_unit_test(test_uniform_large),
        cmocka_unit_test(test_constant),
        cmocka_unit_test(test_two_point),
        cmocka_unit_test(test_beyond_max),
        cmocka_unit_test(test_sums_do_not_overflow),
        cmocka_unit_test(test_merge_equals_single),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_json_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
