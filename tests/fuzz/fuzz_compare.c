/* fuzz_compare.c - libFuzzer target for the results-file reader of
 * `shootout compare` (report/compare.c), which reads files users hand it.
 * Checked on the way:
 *   - a refusal leaves the file empty and says where, at a byte within
 *     the input;
 *   - whatever is read holds only finite samples and NUL-terminated names;
 *   - a file compared with itself has no point in one file only, and every
 *     figure judged p = 1, ratio 1 (or none, at 0), never better or worse;
 *   - every output form writes without failing.
 * Any broken invariant abort()s.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "report/compare.h"
#include "report/compare_print.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!sink)
        sink = fopen("/dev/null", "w");
    struct cmp_file f;
    char err[256] = "";
    if (cmp_parse(&f, (const char *)data, size, err, sizeof err) < 0) {
        unsigned long at;
        check(sscanf(err, "byte %lu:", &at) == 1 && at <= size);
        check(f.n == 0 && !f.pts);
        return 0;
    }
    for (unsigned i = 0; i < f.n; i++) {
        check(memchr(f.pts[i].name, '\0', sizeof f.pts[i].name));
        check(memchr(f.pts[i].unit, '\0', sizeof f.pts[i].unit));
        for (unsigned k = 0; k < CMP_NFIGURES; k++)
            for (unsigned s = 0; s < f.pts[i].fig[k].n; s++)
                check(isfinite(f.pts[i].fig[k].v[s]));
    }
    /* A file comes from the machine it comes from, whatever its context says. */
    char differ[512];
    check(!cmp_machines_differ(&f, &f, differ, sizeof differ) && differ[0] == '\0');
    check(memchr(f.cpu_model, '\0', sizeof f.cpu_model));
    struct cmp_options opt = {.alpha = 0.05, .noise_pct = 1, .fail_pct = 0};
    struct cmp_result r;
    cmp_compare(&r, &f, &f, &opt);
    r.old_path = r.new_path = "fuzz";
    check(r.n_only_old == 0 && r.n_only_new == 0 && r.regressions == 0);
    for (unsigned i = 0; i < r.n; i++) {
        const struct cmp_delta *d = &r.d[i];
        check(d->p == 1);
        check(d->verdict == CMP_SAME || d->verdict == CMP_FEW);
        check(isnan(d->ratio) || d->ratio == 1);
    }
    check(cmp_print(sink, CMP_FORMAT_TEXT, &r) == 0);
    check(cmp_print(sink, CMP_FORMAT_MARKDOWN, &r) == 0);
    check(cmp_print(sink, CMP_FORMAT_JSON, &r) == 0);
    cmp_result_free(&r);
    cmp_file_free(&f);
    return 0;
}
