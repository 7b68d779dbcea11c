/* fuzz_scenario.c - libFuzzer target for scenario.c: the input is read as
 * a scenario file, as a CSV feeder file, and, split at its first newline,
 * as a JSONPath and a JSON document. Checked: a parsed scenario has at
 * least one request and every template refers to a known variable;
 * rendering never fails for a full set of values; feeding sets every fed
 * variable (a queue may run dry, and then sets none); a parsed CSV has a
 * header of variable names and records of as many fields without control
 * characters; a match lies inside the document; a first match is also one
 * of the random picks' candidates (both find or neither does).
 *
 * At start it writes /tmp/fuzz_scenario_r.csv and /tmp/fuzz_scenario_q.csv
 * (always the same text, renamed into place, so that fuzzers running side
 * by side agree), so that `feed-csv` in an input has files to read; the
 * seeds name them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "core/mem.h"
#include "fuzz_check.h"
#include "load/http/scenario.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put_file(const char *path, const char *text)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    check(f && fputs(text, f) >= 0 && fclose(f) == 0 && rename(tmp, path) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    put_file("/tmp/fuzz_scenario_r.csv",
             "origin,destination,day\n1,120,2025-01-01\n\"2\",\"1\"\"9\",x\n");
    put_file("/tmp/fuzz_scenario_q.csv", "k\n1\n");
    return 0;
}

static void check_tpl(const struct scenario *s, const struct scn_tpl *t)
{
    for (unsigned i = 0; i < t->nsegs; i++)
        check(t->segs[i].var < (int)s->nvars);
}

static void fuzz_file(const char *text, size_t size)
{
    struct scenario s;
    char err[256];
    if (scn_parse(text, size, &s, err, sizeof err) < 0) {
        check(err[0] != '\0');
        return;
    }
    check(s.nrequests > 0 && s.nvars >= 1);
    char *vals[SCN_MAX_VARS];
    for (unsigned i = 0; i < SCN_MAX_VARS; i++)
        vals[i] = "v";
    uint64_t rng = 1;
    struct scn_buf b = {0};
    for (unsigned i = 0; i < s.nsteps; i++) {
        const struct scn_step *st = &s.steps[i];
        if (st->kind == SCN_PAUSE)
            check(st->pause_min <= st->pause_max);
        if (st->kind != SCN_REQUEST)
            continue;
        check(st->req.name < s.nnames);
        check_tpl(&s, &st->req.path);
        check(scn_render(&st->req.path, vals, &rng, &b) == 0);
        if (st->req.has_body) {
            check_tpl(&s, &st->req.body);
            check(scn_render(&st->req.body, vals, &rng, &b) == 0);
        }
    }
    scn_buf_free(&b);
    char *fed[SCN_MAX_VARS] = {0};
    for (int round = 0; round < 3; round++) {
        int rc = scn_feed(&s, fed, &rng);
        for (unsigned i = 0; i < s.nfeeders; i++)
            for (unsigned k = 0; k < s.feeders[i].nvars; k++)
                check(s.feeders[i].var + k < s.nvars && (rc == 0) == (fed[s.feeders[i].var + k] != NULL));
        check(rc == 0 || scn_feed_dry(&s));
    }
    for (unsigned i = 0; i < SCN_MAX_VARS; i++)
        mem_free(fed[i]);
    scn_free(&s);
}

static void fuzz_csv(const char *text, size_t size)
{
    struct scn_csv c;
    char err[256];
    if (scn_csv_parse("f.csv", text, size, &c, err, sizeof err) < 0) {
        check(!strncmp(err, "f.csv:", 6));
        return;
    }
    check(c.ncols >= 1 && c.ncols <= SCN_CSV_MAX_COLUMNS && c.nrows >= 1);
    for (uint32_t r = 0; r <= c.nrows; r++)
        for (unsigned k = 0; k < c.ncols; k++) {
            const char *v = scn_csv_field(&c, r, k);
            check(strlen(v) <= SCN_CSV_MAX_FIELD && (r > 0 || v[0]));
            for (; *v; v++)
                check((unsigned char)*v >= 0x20 && *v != 0x7f);
        }
    scn_csv_free(&c);
}

static void fuzz_path(const char *text, size_t size)
{
    const char *nl = memchr(text, '\n', size);
    if (!nl)
        return;
    struct scn_path p;
    if (scn_path_parse(text, (size_t)(nl - text), &p) < 0)
        return;
    const char *json = nl + 1, *v1 = NULL, *v2 = NULL;
    size_t len = size - (size_t)(json - text), l1 = 0, l2 = 0;
    uint64_t rng = 7;
    int first = scn_path_eval(&p, json, len, SCN_PICK_FIRST, &rng, &v1, &l1);
    int random = scn_path_eval(&p, json, len, SCN_PICK_RANDOM, &rng, &v2, &l2);
    check(first == random);
    if (first == 1) {
        check(v1 >= json && l1 <= (size_t)(json + len - v1));
        check(v2 >= json && l2 <= (size_t)(json + len - v2));
    }
    scn_path_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_file((const char *)data, size);
    fuzz_csv((const char *)data, size);
    fuzz_path((const char *)data, size);
    return 0;
}
