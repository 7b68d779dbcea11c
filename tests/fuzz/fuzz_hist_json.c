/* fuzz_hist_json.c - libFuzzer target for the histogram's JSON reader
 * (report/hist.c, hist_read_json), which `shootout merge` runs on results
 * files from other machines. Checked on the way:
 *   - a refusal says where, at a byte within the input;
 *   - what is accepted is a histogram the writer could have written: its
 *     buckets add up to count, and every percentile lies in [min, max];
 *   - written back and read again it is the same histogram, bit for bit.
 * Any broken invariant abort()s.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "fuzz_check.h"
#include "report/hist.h"
#include "report/result_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hist h, back;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    struct rr ps;
    rr_init(&ps, (const char *)data, size, 8, err, sizeof err);
    if (!hist_read_json(&ps, &h)) {
        unsigned long at;
        check(sscanf(err, "byte %lu:", &at) == 1 && at <= size);
        return 0;
    }
    uint64_t total = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        total += h.buckets[i];
    check(total == h.count);
    if (h.count) {
        static const double ps_[] = {0.001, 50, 99, 99.99, 100};
        for (unsigned i = 0; i < sizeof ps_ / sizeof ps_[0]; i++) {
            uint64_t v = hist_percentile(&h, ps_[i]);
            check(v >= h.min && v <= h.max);
        }
    }
    struct json_buf b = {0};
    struct json j;
    json_init_buf(&j, &b);
    hist_write_json(&j, &h);
    rr_init(&ps, b.data, b.len, 8, err, sizeof err);
    check(hist_read_json(&ps, &back) && jr_end(&ps.r));
    check(!memcmp(&h, &back, sizeof h));
    json_buf_free(&b);
    return 0;
}
