/* fuzz_merge.c - libFuzzer target for the shards' results-file reader of
 * `shootout merge` (report/merge.c), which reads files from other machines.
 * Checked on the way:
 *   - a refusal leaves the file empty and says where, at a byte within the
 *     input;
 *   - what is read are iteration rows with names, and histograms whose
 *     counts add up;
 *   - a file merged with itself is refused (its shard given twice), and a
 *     file merged alone either is refused or writes.
 * Any broken invariant abort()s.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_check.h"
#include "report/merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct merge_file f[2];
    char err[512] = "", warn[4096];
    if (merge_parse(&f[0], "a.json", (const char *)data, size, err, sizeof err) < 0) {
        unsigned long at;
        check(sscanf(err, "byte %lu:", &at) == 1 && at <= size);
        check(f[0].rows.n == 0);
        return 0;
    }
    for (unsigned i = 0; i < f[0].rows.n; i++) {
        const struct result_row *r = &f[0].rows.rows[i];
        check(r->name[0] && memchr(r->name, '\0', sizeof r->name) && !r->aggregate_name);
        check(!r->lat_hist || r->has_latency);
        if (r->lat_hist) {
            uint64_t total = 0;
            for (unsigned b = 0; b < HIST_BUCKETS; b++)
                total += r->lat_hist->buckets[b];
            check(total == r->lat_hist->count);
        }
    }
    struct result_set out;
    if (merge_combine(f, 1, &out, warn, sizeof warn, err, sizeof err) == 0) {
        struct result_context ctx = {.command_line = "fuzz", .version = "0", .build_type = "fuzz"};
        check(result_write_json("/dev/null", &ctx, out.rows, out.n, err, sizeof err) == 0);
        result_set_free(&out);
    }
    f[1] = f[0];
    check(merge_combine(f, 2, &out, warn, sizeof warn, err, sizeof err) < 0 && out.n == 0);
    merge_file_free(&f[0]);
    return 0;
}
