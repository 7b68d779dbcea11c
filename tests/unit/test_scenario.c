/* test_scenario.c - unit tests for scenarios (scenario.c): the built-in
 * a2b journey, the file parser's acceptance and refusals, templates with
 * ${var} and ${uuid}, the JSONPath subset with its first and random picks
 * over valid and invalid JSON, CSV files (quoting, errors with line
 * numbers), the random, circular and queue feeders over them, and the a2b
 * route feeder (every route it feeds has a transfer in the data set).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/mem.h"
#include "load/http/scenario.h"

static void parse_ok(const char *text, struct scenario *s)
{
    char err[256];
    if (scn_parse(text, strlen(text), s, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static void parse_bad(const char *text, const char *want)
{
    struct scenario s;
    char err[256] = "";
    if (scn_parse(text, strlen(text), &s, err, sizeof err) == 0)
        fail_msg("accepted: %s", text);
    if (!strstr(err, want))
        fail_msg("'%s' lacks '%s'", err, want);
}

static void test_a2b(void **state)
{
    struct scenario s;
    parse_ok(scn_a2b_text, &s);
    assert_int_equal(s.nrequests, 14);
    unsigned pauses = 0, exits = 0;
    double min = 0, max = 0;
    for (unsigned i = 0; i < s.nsteps; i++) {
        if (s.steps[i].kind == SCN_PAUSE) {
            pauses++;
            min += s.steps[i].pause_min;
            max += s.steps[i].pause_max;
        }
        exits += s.steps[i].kind == SCN_EXIT_IF_FAILED;
    }
    /* The reference: 14 pauses, 20 to 52 s in all; 6 exitHereIfFailed. */
    assert_int_equal(pauses, 14);
    assert_true(min == 20 && max == 52);
    assert_int_equal(exits, 6);
    assert_int_equal(s.nnames, 13); /* "cities" twice */
    assert_string_equal(s.headers, "Accept: application/json\r\nAccept-Encoding: gzip, deflate\r\n");
    assert_int_equal(s.nfeeders, 2);
    assert_true(s.feeders[0].kind == SCN_FEED_RANGE && s.feeders[0].min == 1 &&
                s.feeders[0].max == 200000);
    /* The search's origin, destination and date come from the route feeder
     * (scale 1, seed 1: a2b-server's defaults), not from the browsing. */
    const struct scn_feeder *routes = &s.feeders[1];
    assert_int_equal(routes->kind, SCN_FEED_A2B_ROUTES);
    assert_int_equal(routes->nvars, 3);
    assert_true(routes->routes.seed == 1 && routes->routes.transfers == 12000);
    const struct scn_request *search = &s.steps[14].req;
    assert_int_equal(s.steps[14].kind, SCN_REQUEST);
    assert_string_equal(s.names[search->name], "transfers");
    unsigned refs = 0;
    for (unsigned i = 0; i < search->path.nsegs; i++) {
        int v = search->path.segs[i].var;
        if (v >= 0) {
            assert_true((unsigned)v >= routes->var && (unsigned)v < routes->var + routes->nvars);
            refs++;
        }
    }
    assert_int_equal(refs, 3);
    const struct scn_request *book = &s.steps[17].req;
    assert_int_equal(s.steps[17].kind, SCN_REQUEST);
    assert_string_equal(book->method, "POST");
    /* 409: the user holds that booking already; still the journey's way. */
    assert_true(book->has_body && scn_status_ok(book, 201) && scn_status_ok(book, 409) &&
                !scn_status_ok(book, 200));
    scn_free(&s);
}

static void test_parse_refusals(void **state)
{
    parse_bad("", "no request");
    parse_bad("request GET /a\nwarp 9\n", "line 2: unknown directive");
    parse_bad("request get /a\n", "upper-case");
    parse_bad("request GET a\n", "starts with '/'");
    parse_bad("request GET /${nope}\n", "neither fed nor saved");
    parse_bad("request GET /${x\n", "without '}'");
    parse_bad("expect 200\n", "before any request");
    parse_bad("request GET /a\n  expect 99\n", "100 to 599");
    parse_bad("request GET /a\n  save x $.a.b.c.d.e.f.g.h.i\n", "JSONPath");
    parse_bad("request GET /a\n  save x $..a\n", "JSONPath");
    parse_bad("request GET /a\n  save x $[0].a\n", "JSONPath");
    parse_bad("request GET /a\n  save x $.a sometimes\n", "first or random");
    parse_bad("request GET /a\npause 3 1\n", "MIN <= MAX");
    parse_bad("request GET /a\npause 1 2 3\n", "MIN <= MAX");
    parse_bad("request GET /a\npause -1\n", "seconds");
    parse_bad("feed u 5 1\nrequest GET /a\n", "MIN <= MAX");
    parse_bad("feed u 1 5\nfeed u 1 5\nrequest GET /a\n", "'u' is already defined");
    parse_bad("feed uuid 1 5\nrequest GET /a\n", "'uuid' is already defined");
    parse_bad("header Bad Name: x\nrequest GET /a\n", "bad header name");
    parse_bad("request GET /a\n\texpect 200\n", "tab");
    parse_bad("request GET /a\n  body x\n  body y\n", "second body");
    /* Saved before use is fine; used before saved is not. */
    parse_bad("request GET /${id}\nrequest GET /a\n  save id $.id\n", "neither fed");
}

static void test_render(void **state)
{
    struct scenario s;
    parse_ok("# comment\r\nfeed u 7 7\nrequest GET /a\n  save id $.id first\n"
             "request PUT /users/${u}/x/${id}?q=${u} put it\n  body {\"id\":\"${uuid}\"}\n",
             &s);
    const struct scn_request *r = &s.steps[1].req;
    assert_string_equal(s.names[r->name], "put it");
    assert_string_equal(s.names[s.steps[0].req.name], "GET /a");
    char *vals[SCN_MAX_VARS] = {0};
    uint64_t rng = 1;
    struct scn_buf b = {0};
    int id = (int)s.steps[0].req.extract[0].var;
    assert_int_equal(scn_render(&r->path, vals, &rng, &b), s.feeders[0].var);
    vals[s.feeders[0].var] = "7";
    vals[id] = "42";
    b.len = 0;
    assert_int_equal(scn_render(&r->path, vals, &rng, &b), 0);
    assert_string_equal(b.data, "/users/7/x/42?q=7");
    b.len = 0;
    assert_int_equal(scn_render(&r->body, vals, &rng, &b), 0);
    /* {"id":"xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"} */
    assert_int_equal(b.len, 9 + 36);
    assert_true(b.data[7 + 14] == '4');
    char first[64];
    memcpy(first, b.data, b.len + 1);
    b.len = 0;
    scn_render(&r->body, vals, &rng, &b);
    assert_string_not_equal(first, b.data); /* a fresh uuid each time */
    scn_buf_free(&b);
    scn_free(&s);
}

static int eval(const char *path, const char *json, enum scn_pick pick, uint64_t *rng, char *out)
{
    struct scn_path p;
    assert_int_equal(scn_path_parse(path, strlen(path), &p), 0);
    const char *v;
    size_t vl;
    int rc = scn_path_eval(&p, json, strlen(json), pick, rng, &v, &vl);
    if (rc == 1) {
        memcpy(out, v, vl);
        out[vl] = '\0';
    }
    scn_path_free(&p);
    return rc;
}

static void test_jsonpath(void **state)
{
    char out[64];
    uint64_t rng = 3;
    const char *list = " [ {\"countryId\":1,\"name\":\"A\"}, {\"name\":\"B\",\"countryId\":2},"
                       "{\"countryId\":3, \"x\":[1,{\"countryId\":9}]} ] ";
    assert_int_equal(eval("$[*].countryId", list, SCN_PICK_FIRST, &rng, out), 1);
    assert_string_equal(out, "1");
    assert_int_equal(eval("$[:].name", list, SCN_PICK_FIRST, &rng, out), 1);
    assert_string_equal(out, "A");
    /* Random picks cover every match, and only matches (never the nested 9). */
    unsigned seen[10] = {0};
    for (int i = 0; i < 300; i++) {
        assert_int_equal(eval("$[*].countryId", list, SCN_PICK_RANDOM, &rng, out), 1);
        assert_true(out[0] >= '1' && out[0] <= '3' && out[1] == '\0');
        seen[out[0] - '0']++;
    }
    assert_true(seen[1] > 50 && seen[2] > 50 && seen[3] > 50);
    /* Nested fields, strings with escapes kept as written. */
    const char *bookings = "[{\"user\":{\"id\":5},\"transfer\":{\"transferId\":77,\"d\":\"a\\\"b\"}}]";
    assert_int_equal(eval("$[*].transfer.transferId", bookings, SCN_PICK_RANDOM, &rng, out), 1);
    assert_string_equal(out, "77");
    assert_int_equal(eval("$[*].transfer.d", bookings, SCN_PICK_FIRST, &rng, out), 1);
    assert_string_equal(out, "a\\\"b");
    assert_int_equal(eval("$.id", "{\"id\":\"x\"}", SCN_PICK_FIRST, &rng, out), 1);
    assert_string_equal(out, "x");
    /* No match: an empty array, a missing field, an object value, null. */
    assert_int_equal(eval("$[*].transferId", "[]", SCN_PICK_RANDOM, &rng, out), 0);
    assert_int_equal(eval("$[*].nope", list, SCN_PICK_RANDOM, &rng, out), 0);
    assert_int_equal(eval("$[*].user", bookings, SCN_PICK_FIRST, &rng, out), 0);
    assert_int_equal(eval("$.id", "{\"id\":null}", SCN_PICK_FIRST, &rng, out), 0);
    assert_int_equal(eval("$[*].id", "{\"id\":1}", SCN_PICK_FIRST, &rng, out), 0);
    /* Not JSON. */
    assert_int_equal(eval("$[*].id", "[{\"id\":1}", SCN_PICK_FIRST, &rng, out), -1);
    assert_int_equal(eval("$[*].id", "[{\"id\":1}] x", SCN_PICK_FIRST, &rng, out), -1);
    assert_int_equal(eval("$[*].id", "[{\"id\":1,}]", SCN_PICK_FIRST, &rng, out), -1);
    assert_int_equal(eval("$[*].id", "[{id:1}]", SCN_PICK_FIRST, &rng, out), -1);
    assert_int_equal(eval("$[*].id", "", SCN_PICK_FIRST, &rng, out), -1);
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    assert_int_equal(eval("$.a", "[]", SCN_PICK_FIRST, &rng, out), 0);
    struct scn_path p;
    scn_path_parse("$", 1, &p);
    const char *v;
    size_t vl;
    assert_int_equal(scn_path_eval(&p, deep, sizeof deep, SCN_PICK_FIRST, &rng, &v, &vl), -1);
}

/* ---- CSV files and feeders ------------------------------------------------ */

static void csv_ok(const char *text, struct scn_csv *c)
{
    char err[256];
    if (scn_csv_parse("t.csv", text, strlen(text), c, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static void csv_bad_len(const char *text, size_t len, const char *want)
{
    struct scn_csv c;
    char err[256] = "";
    if (scn_csv_parse("t.csv", text, len, &c, err, sizeof err) == 0)
        fail_msg("accepted: %s", text);
    if (!strstr(err, want))
        fail_msg("'%s' lacks '%s'", err, want);
    assert_null(c.data);
}

static void csv_bad(const char *text, const char *want) { csv_bad_len(text, strlen(text), want); }

static void test_csv_parse(void **state)
{
    struct scn_csv c;
    /* A BOM, CRLF, quoted commas and quotes, empty fields, a blank line. */
    csv_ok("\xef\xbb\xbf"
           "a,b_2,c-3\r\n1,\"x, \"\"y\"\"\",\r\n\r\n\"\",,\"z\"\n",
           &c);
    assert_int_equal(c.ncols, 3);
    assert_int_equal(c.nrows, 2);
    assert_string_equal(scn_csv_field(&c, 0, 0), "a");
    assert_string_equal(scn_csv_field(&c, 0, 1), "b_2");
    assert_string_equal(scn_csv_field(&c, 0, 2), "c-3");
    assert_string_equal(scn_csv_field(&c, 1, 0), "1");
    assert_string_equal(scn_csv_field(&c, 1, 1), "x, \"y\"");
    assert_string_equal(scn_csv_field(&c, 1, 2), "");
    assert_string_equal(scn_csv_field(&c, 2, 0), "");
    assert_string_equal(scn_csv_field(&c, 2, 1), "");
    assert_string_equal(scn_csv_field(&c, 2, 2), "z");
    scn_csv_free(&c);
    /* No final newline; a trailing comma is one more (empty) field; spaces
     * and non-ASCII text are data. */
    csv_bad("id,name\n7, Дзённы ,", "t.csv:2: 3 fields where the header has 2");
    csv_ok("id\n7", &c);
    assert_int_equal(c.nrows, 1);
    assert_string_equal(scn_csv_field(&c, 1, 0), "7");
    scn_csv_free(&c);
    csv_ok("id,name\n7, Дзённы \n\"8\",\"\"\"\"", &c);
    assert_string_equal(scn_csv_field(&c, 1, 1), " Дзённы ");
    assert_string_equal(scn_csv_field(&c, 2, 0), "8");
    assert_string_equal(scn_csv_field(&c, 2, 1), "\"");
    scn_csv_free(&c);
}

static void test_csv_refusals(void **state)
{
    csv_bad("", "t.csv:1: no header");
    csv_bad("\n\r\n", "t.csv:3: no header");
    csv_bad("a,b\n", "t.csv:2: no record after the header");
    csv_bad("a,b\n1,2\n\n3\n", "t.csv:4: 1 field where the header has 2");
    csv_bad("a,b\n1,2,3\n", "t.csv:2: 3 fields where the header has 2");
    csv_bad("a\nx\"y\n", "t.csv:2: a quote inside an unquoted field");
    csv_bad("a\n \"x\"\n", "t.csv:2: a quote inside an unquoted field");
    csv_bad("a\n\"x\"y\n", "t.csv:2: text after a closing quote");
    csv_bad("a\n\"x\" \n", "t.csv:2: text after a closing quote");
    csv_bad("a\n\"x\ny\"\n", "t.csv:2: a quoted field runs past the end of its line");
    csv_bad("a\n1\n\"x", "t.csv:3: a quoted field runs past the end of its line");
    csv_bad("a\nx\ty\n", "t.csv:2: control character in a field");
    csv_bad("a\nx\ry\n", "t.csv:2: control character in a field");
    csv_bad("a\n\"x\x7f\"\n", "t.csv:2: control character in a field");
    csv_bad_len("a\nx\0y\n", 6, "t.csv:2: control character in a field");
    csv_bad("a b\n1\n", "t.csv:1: column 1's name 'a b' is not a variable name");
    csv_bad("\n\nok,uuid\n1,2\n", "t.csv:3: column 2's name 'uuid' is not a variable name");
    csv_bad(",\n1,2\n", "t.csv:1: column 1's name ''");
    csv_bad("a,b,a\n1,2,3\n", "t.csv:1: column name 'a' repeats");
    csv_bad("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q\n", "t.csv:1: more than 16 fields");
    csv_bad_len("a", SCN_CSV_MAX_BYTES + 1, "t.csv: larger than");
    /* A field of SCN_CSV_MAX_FIELD bytes is fine, one more is not. */
    char *big = mem_alloc(SCN_CSV_MAX_FIELD + 8);
    memcpy(big, "a\n", 2);
    memset(big + 2, 'x', SCN_CSV_MAX_FIELD + 1);
    big[SCN_CSV_MAX_FIELD + 3] = '\0';
    csv_bad(big, "t.csv:2: a field longer than 4096 bytes");
    struct scn_csv c;
    big[SCN_CSV_MAX_FIELD + 2] = '\0';
    csv_ok(big, &c);
    assert_int_equal(strlen(scn_csv_field(&c, 1, 0)), SCN_CSV_MAX_FIELD);
    scn_csv_free(&c);
    mem_free(big);
    /* At most SCN_CSV_MAX_RECORDS records. */
    size_t n = 2 + 2 * (size_t)(SCN_CSV_MAX_RECORDS + 1);
    char *many = mem_alloc(n + 1);
    memcpy(many, "a\n", 2);
    for (size_t i = 2; i < n; i += 2)
        memcpy(many + i, "1\n", 2);
    many[n] = '\0';
    csv_bad(many, "t.csv:1000002: more than 1000000 records");
    many[n - 2] = '\0';
    csv_ok(many, &c);
    assert_int_equal(c.nrows, SCN_CSV_MAX_RECORDS);
    scn_csv_free(&c);
    mem_free(many);
}

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_scenario_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text into tmpdir/name; returns the path, valid until the next
 * call. */
static const char *write_file(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* Parses "feed u 5 5", then feed-csv of a three-record file with order
 * (NULL: none given), then a request using every variable. */
static void parse_kv(struct scenario *s, const char *order)
{
    const char *path = write_file("kv.csv", "k,v\n1,a\n2,b\n3,c\n");
    char text[512];
    snprintf(text, sizeof text, "feed u 5 5\nfeed-csv %s%s%s\nrequest GET /${k}/${v}/${u}\n", path,
             order ? " " : "", order ? order : "");
    parse_ok(text, s);
    assert_int_equal(s->nfeeders, 2);
    assert_int_equal(s->feeders[1].kind, SCN_FEED_CSV);
    assert_int_equal(s->feeders[1].nvars, 2);
    assert_string_equal(s->vars[s->feeders[1].var], "k");
    assert_string_equal(s->vars[s->feeders[1].var + 1], "v");
}

static void free_vals(char **vals)
{
    for (unsigned i = 0; i < SCN_MAX_VARS; i++) {
        mem_free(vals[i]);
        vals[i] = NULL;
    }
}

/* Feeds once and returns k's value's digit, checking v belongs with it. */
static int feed_k(const struct scenario *s, char **vals, uint64_t *rng)
{
    unsigned k = s->feeders[1].var;
    assert_int_equal(scn_feed(s, vals, rng), 0);
    assert_string_equal(vals[s->feeders[0].var], "5");
    assert_int_equal(strlen(vals[k]), 1);
    assert_int_equal(vals[k + 1][0], "abc"[vals[k][0] - '1']);
    return vals[k][0] - '0';
}

/* Column c's value in test_feed_csv_wide_record: lengths 0 to 4. */
static const char *wide_value(unsigned c, char out[8])
{
    static const char letters[] = "vwxyz";
    snprintf(out, 8, "%.*s", (int)(c % 5), &letters[c % 3]);
    return out;
}

/* A record as wide as allowed, its fields of different lengths and some
 * empty: each variable gets its own column's value. */
static void test_feed_csv_wide_record(void **state)
{
    char csv[1024], text[1400];
    size_t n = 0;
    for (unsigned c = 0; c < SCN_CSV_MAX_COLUMNS; c++)
        n += (size_t)snprintf(csv + n, sizeof csv - n, "%sc%u", c ? "," : "", c);
    char v[8];
    for (unsigned c = 0; c < SCN_CSV_MAX_COLUMNS; c++)
        n += (size_t)snprintf(csv + n, sizeof csv - n, "%s%s", c ? "," : "\n", wide_value(c, v));
    snprintf(csv + n, sizeof csv - n, "\n");
    struct scenario s;
    snprintf(text, sizeof text, "feed-csv %s\nrequest GET /${c0}/${c15}\n",
             write_file("wide.csv", csv));
    parse_ok(text, &s);
    char *vals[SCN_MAX_VARS] = {0};
    uint64_t rng = 3;
    assert_int_equal(scn_feed(&s, vals, &rng), 0);
    for (unsigned c = 0; c < SCN_CSV_MAX_COLUMNS; c++) {
        char name[8];
        snprintf(name, sizeof name, "c%u", c);
        assert_string_equal(s.vars[s.feeders[0].var + c], name);
        assert_string_equal(vals[s.feeders[0].var + c], wide_value(c, v));
    }
    free_vals(vals);
    scn_free(&s);
}

static void test_feed_csv_orders(void **state)
{
    struct scenario s;
    char *vals[SCN_MAX_VARS] = {0};
    uint64_t rng = 9;
    /* circular: 1 2 3 1 2 3 ...; a rewind starts again at 1. */
    parse_kv(&s, "circular");
    for (int i = 0; i < 7; i++)
        assert_int_equal(feed_k(&s, vals, &rng), 1 + i % 3);
    scn_feed_rewind(&s);
    assert_int_equal(feed_k(&s, vals, &rng), 1);
    assert_null(scn_feed_dry(&s));
    scn_free(&s);
    /* random: every record, uniformly enough, never a mixed one. */
    parse_kv(&s, "random");
    unsigned seen[4] = {0};
    for (int i = 0; i < 300; i++)
        seen[feed_k(&s, vals, &rng)]++;
    assert_true(seen[1] > 60 && seen[2] > 60 && seen[3] > 60);
    scn_free(&s);
    /* queue (also the default): each record once, then no more users; the
     * refused user is given nothing, the range feeder's value included. */
    for (int def = 0; def < 2; def++) {
        parse_kv(&s, def ? NULL : "queue");
        for (int i = 1; i <= 3; i++)
            assert_int_equal(feed_k(&s, vals, &rng), i);
        assert_null(scn_feed_dry(&s)); /* used up, but nobody refused yet */
        free_vals(vals);
        assert_int_equal(scn_feed(&s, vals, &rng), -1);
        for (unsigned i = 0; i < SCN_MAX_VARS; i++)
            assert_null(vals[i]);
        assert_non_null(scn_feed_dry(&s));
        assert_non_null(strstr(scn_feed_dry(&s), "/kv.csv"));
        scn_feed_rewind(&s); /* a new run */
        assert_null(scn_feed_dry(&s));
        assert_int_equal(feed_k(&s, vals, &rng), 1);
        scn_free(&s);
    }
    free_vals(vals);
}

struct drain {
    const struct scenario *s;
    unsigned counts[1001];
    uint64_t rng;
};

static void *drain_queue(void *arg)
{
    struct drain *d = arg;
    char *vals[SCN_MAX_VARS] = {0};
    while (scn_feed(d->s, vals, &d->rng) == 0)
        d->counts[atoi(vals[d->s->feeders[0].var])]++;
    free_vals(vals);
    return NULL;
}

/* Threads sharing a queue get every record exactly once between them. */
static void test_feed_queue_threads(void **state)
{
    char *text = mem_alloc(16 * 1024);
    size_t n = (size_t)sprintf(text, "n\n");
    for (int i = 1; i <= 1000; i++)
        n += (size_t)sprintf(text + n, "%d\n", i);
    char scn[256];
    snprintf(scn, sizeof scn, "feed-csv %s queue\nrequest GET /${n}\n", write_file("n.csv", text));
    mem_free(text);
    struct scenario s;
    parse_ok(scn, &s);
    struct drain d[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        memset(&d[i], 0, sizeof d[i]);
        d[i].s = &s;
        d[i].rng = (uint64_t)i + 1;
        assert_int_equal(pthread_create(&t[i], NULL, drain_queue, &d[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int r = 1; r <= 1000; r++)
        assert_int_equal(d[0].counts[r] + d[1].counts[r] + d[2].counts[r] + d[3].counts[r], 1);
    assert_non_null(scn_feed_dry(&s));
    scn_free(&s);
}

static void test_feed_csv_refusals(void **state)
{
    char text[512], good[128], bad[128], want[256];
    snprintf(good, sizeof good, "%s", write_file("good.csv", "k\n1\n"));
    snprintf(bad, sizeof bad, "%s", write_file("bad.csv", "k,v\n1,2\n3\n"));
    parse_bad("feed-csv\nrequest GET /a\n", "line 1: feed-csv wants PATH [random|circular|queue]");
    snprintf(text, sizeof text, "feed-csv %s sometimes\nrequest GET /a\n", good);
    parse_bad(text, "line 1: feed-csv: the order is random, circular or queue");
    snprintf(text, sizeof text, "feed-csv %s random twice\nrequest GET /a\n", good);
    parse_bad(text, "feed-csv wants PATH");
    parse_bad("feed-csv /nonexistent/r.csv\nrequest GET /a\n",
              "line 1: feed-csv: cannot read /nonexistent/r.csv");
    parse_bad("feed-csv /tmp\nrequest GET /a\n", "line 1: feed-csv: /tmp: not a regular file");
    /* The file's errors name its line, after the scenario's. */
    snprintf(text, sizeof text, "# routes\nfeed-csv %s\nrequest GET /a\n", bad);
    snprintf(want, sizeof want, "line 2: feed-csv: %s:3: 1 field where the header has 2", bad);
    parse_bad(text, want);
    /* Its columns are new variables. */
    snprintf(text, sizeof text, "feed k 1 2\nfeed-csv %s\nrequest GET /a\n", good);
    parse_bad(text, "line 2: variable 'k' is already defined");
    snprintf(text, sizeof text, "request GET /a\n  save k $.k\nfeed-csv %s\n", good);
    parse_bad(text, "line 3: variable 'k' is already defined");
    /* At most SCN_MAX_FEEDERS feeders, SCN_MAX_VARS variables. */
    parse_bad("feed a 1 1\nfeed b 1 1\nfeed c 1 1\nfeed d 1 1\nfeed e 1 1\nfeed f 1 1\n"
              "feed g 1 1\nfeed h 1 1\nfeed i 1 1\nrequest GET /a\n",
              "line 9: at most 8 feeders");
    write_file("wide.csv", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p\n1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n");
    write_file("wide2.csv", "A,B,C,D,E,F,G,H,I,J,K,L,M,N,O,P\n1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n");
    snprintf(text, sizeof text, "feed-csv %s/wide.csv\nfeed-csv %s/wide2.csv\nrequest GET /a\n", tmpdir,
             tmpdir);
    parse_bad(text, "line 2: more than 32 variables");
}

/* Whether the a2b data set d has a transfer on (origin, destination, date). */
static bool route_exists(const struct a2b_data *d, const char *origin, const char *destination,
                         const char *date)
{
    for (int64_t id = 1; id <= d->transfers; id++) {
        struct a2b_transfer_row t;
        a2b_data_transfer(d, id, &t);
        if (t.origin == atoll(origin) && t.destination == atoll(destination) && !strcmp(t.date, date))
            return true;
    }
    return false;
}

static void test_feed_a2b_routes(void **state)
{
    struct scenario s;
    char *vals[SCN_MAX_VARS] = {0};
    uint64_t rng = 5;
    parse_ok("feed-a2b-routes 0.01 7\n"
             "request GET /transfers?originId=${originId}&destinationId=${destinationId}&date=${date}\n",
             &s);
    const struct scn_feeder *f = &s.feeders[0];
    assert_int_equal(f->kind, SCN_FEED_A2B_ROUTES);
    assert_true(f->routes.seed == 7 && f->routes.transfers == 120);
    assert_string_equal(s.vars[f->var], "originId");
    assert_string_equal(s.vars[f->var + 1], "destinationId");
    assert_string_equal(s.vars[f->var + 2], "date");
    /* Every fed route has a transfer; the draws spread over the data set. */
    char seen[121] = {0};
    unsigned distinct = 0;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(scn_feed(&s, vals, &rng), 0);
        assert_true(route_exists(&f->routes, vals[f->var], vals[f->var + 1], vals[f->var + 2]));
        int origin = atoi(vals[f->var]);
        assert_true(origin >= 1 && origin <= 120 && atoi(vals[f->var + 1]) == 121 - origin);
        distinct += !seen[origin];
        seen[origin] = 1;
    }
    assert_true(distinct > 50);
    scn_free(&s);
    /* By default a2b-server's data set: scale 1, seed 1. */
    parse_ok("feed-a2b-routes\nrequest GET /${date}\n", &s);
    assert_true(s.feeders[0].routes.seed == 1 && s.feeders[0].routes.transfers == 12000);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(scn_feed(&s, vals, &rng), 0);
        assert_true(route_exists(&s.feeders[0].routes, vals[1], vals[2], vals[3]));
    }
    scn_free(&s);
    free_vals(vals);
    parse_bad("feed-a2b-routes 0\nrequest GET /a\n", "line 1: feed-a2b-routes wants [SCALE [SEED]]");
    parse_bad("feed-a2b-routes 101\nrequest GET /a\n", "wants [SCALE [SEED]]");
    parse_bad("feed-a2b-routes 1 x\nrequest GET /a\n", "wants [SCALE [SEED]]");
    parse_bad("feed-a2b-routes 1 2 3\nrequest GET /a\n", "wants [SCALE [SEED]]");
    parse_bad("feed date 1 2\nfeed-a2b-routes\nrequest GET /a\n", "line 2: variable 'date' is already defined");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a2b),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_jsonpath),
        cmocka_unit_test(test_csv_parse),
        cmocka_unit_test(test_csv_refusals),
        cmocka_unit_test(test_feed_csv_orders),
        cmocka_unit_test(test_feed_csv_wide_record),
        cmocka_unit_test(test_feed_queue_threads),
        cmocka_unit_test(test_feed_csv_refusals),
        cmocka_unit_test(test_feed_a2b_routes),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
