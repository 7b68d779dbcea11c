/* fuzz_scenario.c - libFuzzer target for scenario.c: the input is read as
 * a scenario file, and also, split at its first newline, as a JSONPath
 * and a JSON document. Checked: a parsed scenario has at least one request
 * and every template refers to a known variable; rendering never fails for
 * a full set of values; a match lies inside the document; a first match is
 * also one of the random picks' candidates (both find or neither does).
 */
#include <stdint.h>
#include <string.h>

#include "bench/scenario.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    scn_free(&s);
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
    fuzz_path((const char *)data, size);
    return 0;
}
