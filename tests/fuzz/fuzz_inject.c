/* fuzz_inject.c - libFuzzer target for the --inject step parser and the
 * arrival generator (inject.c): every line of the input is a step. Checked:
 * a refusal says why; an accepted profile never mixes open and closed
 * steps; its segments (staircases' levels and ramps) follow each other
 * without a gap and fill the profile's duration; arrival times never
 * decrease and stay inside the profile; a profile without randomized steps
 * starts exactly the users it promises. Generation is cut off after a
 * bounded number of arrivals.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "load/http/inject.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARRIVALS 100000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct inj_profile p = {0};
    const char *text = (const char *)data;
    bool randomized = false;
    for (size_t i = 0; i < size;) {
        const char *nl = memchr(text + i, '\n', size - i);
        size_t end = nl ? (size_t)(nl - text) : size;
        struct inj_step st;
        char err[128] = "";
        if (inj_parse_step(text + i, end - i, &st, err, sizeof err) < 0) {
            check(err[0] != '\0');
        } else {
            check(st.dur_s >= 0 && st.r1 >= 0 && st.r2 >= 0 && st.inc >= 0 && st.ramp_s >= 0);
            if (inj_profile_add(&p, &st, err, sizeof err) == 0)
                randomized |= st.randomized;
        }
        i = end + 1;
    }
    for (unsigned i = 1; i < p.n; i++)
        check(p.steps[i].kind == INJ_NOTHING_FOR || p.steps[0].kind == INJ_NOTHING_FOR ||
              inj_step_closed(&p.steps[i]) == inj_step_closed(&p.steps[0]));
    double dur = inj_profile_duration(&p);
    struct inj_segment seg[INJ_MAX_SEGMENTS];
    unsigned nseg = inj_profile_segments(&p, seg);
    check(nseg >= p.n);
    double end = 0;
    for (unsigned i = 0; i < nseg; i++) {
        check(seg[i].step < p.n && seg[i].start_s == end && seg[i].s.dur_s >= 0);
        check(seg[i].s.kind != INJ_STAIRS_RATE && seg[i].s.kind != INJ_STAIRS_CONC);
        check(inj_step_closed(&seg[i].s) == inj_step_closed(&p.steps[seg[i].step]));
        end += seg[i].s.dur_s;
    }
    check(fabs(end - dur) <= 1e-9 * (dur + 1));
    struct inj_gen g;
    inj_gen_init(&g, &p, 1);
    double t, last = 0;
    uint64_t n = 0;
    while (n < MAX_ARRIVALS && inj_gen_next(&g, &t)) {
        check(t >= last && t <= dur + 1e-6 * (dur + 1));
        last = t;
        n++;
    }
    if (!randomized && n < MAX_ARRIVALS)
        check((double)n == inj_profile_users(&p));
    return 0;
}
