/* persec.c - a closed run's per-second series (see persec.h). */
#include "load/persec.h"

#include <stddef.h>
#include <string.h>

#include "core/mem.h"

#define PERSEC_NS 1000000000u
#define PERSEC_MIN_LAST_NS 100000000u /* a shorter last second says little */

void persec_start(struct persec *s, uint64_t now_ns, uint64_t count, bool with_latency)
{
    memset(s, 0, offsetof(struct persec, lat));
    s->mark_ns = now_ns;
    s->mark_count = count;
    s->with_latency = with_latency;
    if (with_latency)
        hist_reset(&s->lat);
}

static void persec_close(struct persec *s, uint64_t now_ns, uint64_t count)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->pts = mem_realloc(s->pts, s->cap * sizeof *s->pts);
    }
    struct result_point *pt = &s->pts[s->n++];
    *pt = (struct result_point){
        .responses = (double)(count - s->mark_count) * 1e9 / (double)(now_ns - s->mark_ns)};
    if (s->with_latency && s->lat.count) {
        pt->p50_ms = (double)hist_percentile(&s->lat, 50) / 1e6;
        pt->p99_ms = (double)hist_percentile(&s->lat, 99) / 1e6;
        hist_reset(&s->lat);
    }
    s->mark_ns = now_ns;
    s->mark_count = count;
}

void persec_tick(struct persec *s, uint64_t now_ns, uint64_t count)
{
    if (now_ns - s->mark_ns >= PERSEC_NS)
        persec_close(s, now_ns, count);
}

void persec_finish(struct persec *s, uint64_t now_ns, uint64_t count, struct result_row *row)
{
    if (now_ns - s->mark_ns >= PERSEC_MIN_LAST_NS)
        persec_close(s, now_ns, count);
    result_set_series(row, s->pts, s->n, -1);
    mem_free(s->pts);
    s->pts = NULL;
    s->n = s->cap = 0;
}
