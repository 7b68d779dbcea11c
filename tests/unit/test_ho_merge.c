/* test_ho_merge.c - merging shards' results: http-open's report written
 * by ho_report_json and read back by ho_merge_read unchanged in what the
 * merge needs; two shards' reports merged (counts and histograms summed,
 * seconds by wall-clock offset, level loads summed, figures recomputed
 * from the sums), by the same sums a run's report makes of its threads'
 * (ho_totals_add, ho_level_add); reports of other runs and damaged
 * objects refused; and report/merge.c's per-second latency buckets summed
 * by second with each second's percentiles from the sum. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/json.h"
#include "core/mem.h"
#include "load/http/ho_merge.h"
#include "load/http/ho_report.h"
#include "report/merge.h"
#include "report/result_read.h"
#include "report/seclat.h"

#define MS 1000000u

static char *names[] = {"home", "search"};
static struct scenario scn = {.name = "journey", .nnames = 2, .names = names};

/* A shard's report: k users, each one "home" of 1 ms and one "search" of
 * 3 ms (or a KO status 503 for every fourth), over nsecs seconds. */
static struct ho_report *make_report(unsigned k, unsigned nsecs, double load)
{
    struct ho_report *r = mem_calloc(1, sizeof *r);
    r->scn = &scn;
    r->tot.by_name = mem_calloc(2, sizeof *r->tot.by_name);
    for (unsigned i = 0; i < k; i++) {
        hist_record(&r->tot.by_name[0].h, 1 * MS);
        r->tot.by_name[0].ok++;
        hist_record(&r->tot.by_name[1].h, 3 * MS);
        if (i % 4 == 3) {
            r->tot.by_name[1].ko++;
            r->tot.errs[HO_ERR_STATUS]++;
            r->tot.status_ko[503]++;
        } else {
            r->tot.by_name[1].ok++;
        }
    }
    for (unsigned i = 0; i < 2; i++) {
        hist_merge(&r->tot.all.h, &r->tot.by_name[i].h);
        r->tot.all.ok += r->tot.by_name[i].ok;
        r->tot.all.ko += r->tot.by_name[i].ko;
    }
    r->tot.requests = 2 * k;
    r->tot.users_started = r->tot.users_done = k;
    r->nsecs = nsecs;
    r->secs = mem_calloc(nsecs, sizeof *r->secs);
    for (unsigned s = 0; s < nsecs; s++) {
        r->secs[s].started = r->secs[s].ended = k / nsecs;
        r->secs[s].sent = r->secs[s].ok = 2 * k / nsecs;
        r->secs[s].lat[seclat_bucket(1000 * (s + 1))] = 2 * k / nsecs;
    }
    r->points = mem_calloc(nsecs, sizeof *r->points);
    ho_series_points(r->secs, nsecs, r->points);
    r->nlevels = 2;
    r->levels = mem_calloc(2, sizeof *r->levels);
    r->level_counts = mem_calloc(2, sizeof *r->level_counts);
    r->levels[0] = (struct http_open_level){.kind = "constant-users-per-sec", .step = 1,
                                            .load_from = load, .load_to = load, .dur_s = 2};
    r->levels[1] = (struct http_open_level){.kind = "after", .start_s = 2, .dur_s = 0.5};
    struct ho_level *c = &r->level_counts[0];
    c->st = r->tot.all;
    c->started = k;
    c->sent = c->answered = 2 * k;
    ho_level_stats(c, &r->levels[0]);
    ho_level_stats(&r->level_counts[1], &r->levels[1]);
    r->saturation_s = -1;
    r->level_sat.level = -1;
    r->stopped_after = -1;
    r->sat_window = 5;
    r->duration_s = nsecs;
    return r;
}

static void free_made(struct ho_report *r)
{
    ho_report_free(r); /* its scenario is static */
}

/* rep's "http_open" object as ho_report_json writes it, in a document. */
static char *write_report(const struct ho_report *rep)
{
    struct json_buf b = {0};
    struct json j;
    json_init_buf(&j, &b);
    json_object_begin(&j);
    ho_report_json(&j, rep);
    json_object_end(&j);
    return b.data;
}

static struct ho_report *read_report(const char *text, char *err)
{
    struct rr ps;
    rr_init(&ps, text, strlen(text), 32, err, 256);
    char key[RR_KEY_CAP];
    if (!rr_object(&ps, "doc") || rr_next_key(&ps, key) != 1)
        return NULL;
    return ho_merge_read(&ps);
}

static void test_round_trip(void **state)
{
    struct ho_report *a = make_report(40, 4, 10);
    char *text = write_report(a);
    char err[256] = "";
    struct ho_report *b = read_report(text, err);
    assert_non_null(b);
    assert_string_equal(err, "");
    assert_string_equal(b->scn->name, "journey");
    assert_int_equal(b->scn->nnames, 2);
    assert_string_equal(b->scn->names[1], "search");
    assert_int_equal(b->tot.all.h.count, 80);
    assert_memory_equal(b->tot.all.h.buckets, a->tot.all.h.buckets, sizeof a->tot.all.h.buckets);
    assert_int_equal(b->tot.by_name[1].ko, 10);
    assert_int_equal(b->tot.errs[HO_ERR_STATUS], 10);
    assert_int_equal(b->tot.status_ko[503], 10);
    assert_int_equal(b->tot.requests, 80);
    assert_int_equal(b->tot.users_started, 40);
    assert_int_equal(b->nsecs, 4);
    assert_memory_equal(b->secs, a->secs, 4 * sizeof *a->secs);
    assert_int_equal(b->nlevels, 2);
    assert_string_equal(b->levels[0].kind, "constant-users-per-sec");
    assert_string_equal(b->levels[1].kind, "after"); /* after the others, as kept */
    assert_int_equal(b->level_counts[0].answered, 80);
    assert_int_equal(b->level_counts[0].st.h.count, 80);
    assert_int_equal(b->sat_window, 5);
    mem_free(text);
    ho_merge_free(b);
    free_made(a);
}

static void test_merge_two_shards(void **state)
{
    struct ho_report *a = make_report(40, 4, 10), *b = make_report(20, 2, 10);
    const struct ho_report *in[2] = {a, b};
    const unsigned off[2] = {0, 3}; /* b started three seconds after a */
    char err[256] = "";
    struct ho_report *m = ho_merge_reports(in, off, 2, 5.0, err, sizeof err);
    assert_non_null(m);
    assert_int_equal(m->tot.all.h.count, 120);
    assert_int_equal(m->tot.by_name[0].h.count, 60);
    assert_int_equal(m->tot.by_name[1].ko, 15);
    assert_int_equal(m->tot.errs[HO_ERR_STATUS], 15);
    assert_int_equal(m->tot.status_ko[503], 15);
    assert_int_equal(m->tot.users_started, 60);
    /* a's seconds 0..3 and b's 0..1 at 3..4 */
    assert_int_equal(m->nsecs, 5);
    assert_int_equal(m->secs[2].sent, 20);
    assert_int_equal(m->secs[3].sent, 20 + 20);
    assert_int_equal(m->secs[4].sent, 20);
    assert_int_equal(m->secs[3].lat[seclat_bucket(4000)], 20);
    assert_int_equal(m->secs[3].lat[seclat_bucket(1000)], 20);
    assert_float_equal(m->points[3].responses, 40, 0);
    /* the p95 of second 3 from its summed buckets: half at 1 ms, half at 4 */
    assert_float_equal(m->points[3].p95_ms, seclat_percentile_ms(m->secs[3].lat, 95), 0);
    assert_true(m->points[3].p95_ms > 3.5 && m->points[3].p95_ms < 4.5);
    /* the level: loads summed, counts summed, figures recomputed */
    assert_float_equal(m->levels[0].load_from, 20, 0);
    assert_float_equal(m->levels[0].requests, 120, 0);
    assert_float_equal(m->levels[0].rps, 60, 1e-9);
    assert_float_equal(m->levels[0].p99_ms, (double)hist_percentile(&m->tot.all.h, 99) / 1e6, 1e-9);
    assert_int_equal(m->saturation_s, -1);
    assert_float_equal(m->duration_s, 5, 0);
    /* what it writes reads back */
    char *text = write_report(m);
    struct ho_report *again = read_report(text, err);
    assert_non_null(again);
    assert_int_equal(again->tot.all.h.count, 120);
    mem_free(text);
    ho_merge_free(again);
    ho_merge_free(m);
    free_made(a);
    free_made(b);
}

/* The sums a run's report makes of its threads' figures and a merge of
 * its shards': every figure of both added, none skipped. */
static void test_totals_and_level_add(void **state)
{
    struct ho_stat dn[2] = {{.ok = 1}, {.ko = 2}}, sn[2] = {{.ok = 10}, {.ko = 20}};
    struct ho_totals d = {.by_name = dn, .all = {.ok = 1, .ko = 2}, .requests = 3,
                          .users_started = 4, .users_done = 5};
    struct ho_totals s = {.by_name = sn, .all = {.ok = 10, .ko = 20}, .requests = 30,
                          .users_started = 40, .users_done = 50};
    d.errs[HO_ERR_COUNT - 1] = 1;
    s.errs[HO_ERR_COUNT - 1] = 2;
    s.errs[0] = 7;
    d.status_ko[599] = 3;
    s.status_ko[599] = 4;
    hist_record(&dn[1].h, 1 * MS);
    hist_record(&sn[1].h, 3 * MS);
    hist_record(&s.all.h, 3 * MS);
    ho_totals_add(&d, &s, 2);
    assert_int_equal(d.by_name[0].ok, 11);
    assert_int_equal(d.by_name[1].ko, 22);
    assert_int_equal(d.by_name[1].h.count, 2);
    assert_int_equal(d.all.ok, 11);
    assert_int_equal(d.all.ko, 22);
    assert_int_equal(d.all.h.count, 1);
    assert_int_equal(d.errs[0], 7);
    assert_int_equal(d.errs[HO_ERR_COUNT - 1], 3);
    assert_int_equal(d.status_ko[599], 7);
    assert_int_equal(d.requests, 33);
    assert_int_equal(d.users_started, 44);
    assert_int_equal(d.users_done, 55);
    /* src is left as it was */
    assert_int_equal(s.requests, 30);
    assert_int_equal(sn[1].h.count, 1);

    struct ho_level l = {.st = {.ok = 1, .ko = 2}, .started = 3, .sent = 4, .answered = 5, .ko_gen = 1};
    struct ho_level m = {.st = {.ok = 10, .ko = 20}, .started = 30, .sent = 40, .answered = 50,
                         .ko_gen = 10};
    hist_record(&m.st.h, 2 * MS);
    ho_level_add(&l, &m);
    assert_int_equal(l.st.ok, 11);
    assert_int_equal(l.st.ko, 22);
    assert_int_equal(l.st.h.count, 1);
    assert_int_equal(l.started, 33);
    assert_int_equal(l.sent, 44);
    assert_int_equal(l.answered, 55);
    assert_int_equal(l.ko_gen, 11);
}

static void test_merge_refuses_another_run(void **state)
{
    struct ho_report *a = make_report(40, 4, 10), *b = make_report(40, 4, 10);
    char *other[] = {"home", "checkout"};
    struct scenario scn2 = {.name = "journey", .nnames = 2, .names = other};
    b->scn = &scn2;
    const struct ho_report *in[2] = {a, b};
    const unsigned off[2] = {0, 0};
    char err[256] = "";
    assert_null(ho_merge_reports(in, off, 2, 4, err, sizeof err));
    assert_non_null(strstr(err, "not of one run"));
    b->scn = &scn;
    b->levels[0].start_s = 1; /* another profile */
    assert_null(ho_merge_reports(in, off, 2, 4, err, sizeof err));
    free_made(a);
    free_made(b);
}

/* The text with the first `from` replaced by `to` (one of the same
 * length or shorter, padded with spaces). */
static char *damage(const char *text, const char *from, const char *to)
{
    char *t = mem_strdup(text);
    char *at = strstr(t, from);
    assert_non_null(at);
    size_t n = strlen(from), m = strlen(to);
    assert_true(m <= n);
    memcpy(at, to, m);
    memset(at + m, ' ', n - m);
    return t;
}

static void test_damaged_objects_refused(void **state)
{
    struct ho_report *a = make_report(40, 4, 10);
    char *text = write_report(a);
    static const struct {
        const char *from, *to, *why;
    } cases[] = {
        {"\"ok\":40", "\"ok\":41", "ok + ko not its count"},
        {"\"users_started\":40", "\"users_started\":-4", "not a count"},
        {"\"lat_us_buckets\":[[", "\"lat_us_buckets\":[{", "latency bucket"},
        {"\"lat_us_buckets\":[[63,", "\"lat_us_buckets\":[[999", "bucket index"},
        {"\"saturation_window_s\":5", "\"saturation_window_s\":0", "saturation window"},
        {"\"scenario\"", "\"scenariX\"", "without its scenario"},
        {"\"kind\":\"constant-users-per-sec\"", "\"kind\":\"sometimes\"", "without its kind"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *bad = damage(text, cases[i].from, cases[i].to);
        char err[256] = "";
        struct ho_report *r = read_report(bad, err);
        if (r || !strstr(err, cases[i].why)) {
            print_error("case %zu: %s\n", i, err);
            fail();
        }
        mem_free(bad);
    }
    mem_free(text);
    free_made(a);
}

/* Two shards' documents for merge.c: a series of seconds with latency
 * buckets, shard 1 starting a second after shard 0. */
#define SHARD_DOC(index, start, points)                                                        \
    "{\"schema_version\":1,\"benchmarks\":[{\"name\":\"p\",\"experiment\":\"mqtt-ping\","       \
    "\"run_type\":\"iteration\",\"repetitions\":1,\"repetition_index\":0,\"duration_s\":2,"     \
    "\"throughput\":{\"value\":10,\"unit\":\"msg/s\",\"definition\":\"d\"},"                     \
    "\"series\":{\"points\":[" points "]},\"shard\":{\"count\":2,\"index\":" index               \
    ",\"threads\":1,\"start_at\":0,\"window_start\":" start ",\"window_end\":2000000002}}]}"

static void test_series_latency_merged_by_second(void **state)
{
    /* bucket 16 is 16..17 us (midpoint 17), bucket 100 about 1 ms */
    const char *d0 = SHARD_DOC("0", "2000000000",
                               "{\"throughput\":10,\"lat_us_buckets\":[[16,9],[100,1]]},"
                               "{\"throughput\":20,\"lat_us_buckets\":[[16,1]]}");
    const char *d1 = SHARD_DOC("1", "2000000001",
                               "{\"throughput\":5,\"lat_us_buckets\":[[100,9]]}");
    struct merge_file f[2];
    char err[256];
    assert_int_equal(merge_parse(&f[0], "a", d0, strlen(d0), err, sizeof err), 0);
    assert_int_equal(merge_parse(&f[1], "b", d1, strlen(d1), err, sizeof err), 0);
    assert_non_null(f[0].rows.rows[0].series_lat);
    struct result_set out;
    char warn[512];
    assert_int_equal(merge_combine(f, 2, &out, warn, sizeof warn, err, sizeof err), 0);
    const struct result_row *r = &out.rows[0];
    assert_int_equal(r->series.n, 2);
    assert_float_equal(r->series.points[1].responses, 25, 0);
    assert_int_equal(r->series_lat[1][16], 1);
    assert_int_equal(r->series_lat[1][100], 9);
    /* second 1's p50 from the sum (1 sample at 16 us, 9 near 1 ms), not
     * the mean of the shards' p50s */
    assert_float_equal(r->series.points[1].p50_ms, seclat_percentile_ms(r->series_lat[1], 50), 0);
    assert_true(r->series.points[1].p50_ms > 0.5);
    assert_float_equal(r->series.points[0].p50_ms, 0.017, 1e-9); /* 16..17 us: 17 */
    result_set_free(&out);
    merge_file_free(&f[0]);
    merge_file_free(&f[1]);

    /* buckets in some points only: refused */
    const char *bad = SHARD_DOC("0", "2000000000",
                                "{\"throughput\":10,\"lat_us_buckets\":[[16,9]]},"
                                "{\"throughput\":20}");
    assert_int_equal(merge_parse(&f[0], "c", bad, strlen(bad), err, sizeof err), -1);
    assert_non_null(strstr(err, "some points only"));
}

static void test_seclat_percentiles(void **state)
{
    uint32_t lat[SECLAT_BUCKETS] = {0};
    assert_float_equal(seclat_percentile_ms(lat, 50), 0, 0);
    for (uint64_t us = 1; us <= 100000; us *= 10)
        lat[seclat_bucket(us)]++;
    /* within 1/16 of each value */
    /* 1 us, 10 us ... 100 ms: ranks 1 .. 6 */
    assert_float_equal(seclat_percentile_ms(lat, 10), 0.001, 0);
    assert_float_equal(seclat_percentile_ms(lat, 60), 1, 1.0 / 16);
    assert_float_equal(seclat_percentile_ms(lat, 100), 100, 100.0 / 16);
    assert_int_equal(seclat_bucket(UINT64_MAX), SECLAT_BUCKETS - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_merge_two_shards),
        cmocka_unit_test(test_totals_and_level_add),
        cmocka_unit_test(test_merge_refuses_another_run),
        cmocka_unit_test(test_damaged_objects_refused),
        cmocka_unit_test(test_series_latency_merged_by_second),
        cmocka_unit_test(test_seclat_percentiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
