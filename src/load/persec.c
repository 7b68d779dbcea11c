/* persec.c - a closed run's per-second series (see persec.h). */
#include "load/persec.h"

#include <stddef.h>
#include <string.h>

#include "core/mem.h"

#define PERSEC_NS 1000000000u
#define PERSEC_MIN_LAST_NS 100000000u /* a shorter last second says little */

void persec_start(struct persec *s, uint64_t now_ns, uint64_t count, bool with_latency)
{
    memset(s, 0, offsetof(struct persec, cur));
    s->mark_ns = now_ns;
    s->mark_count = count;
    s->with_latency = with_latency;
    for (unsigned b = 0; b < SECLAT_BUCKETS; b++)
        atomic_init(&s->cur[b], 0);
}

static void persec_close(struct persec *s, uint64_t now_ns, uint64_t count)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->pts = mem_realloc(s->pts, s->cap * sizeof *s->pts);
        if (s->with_latency)
            s->lat = mem_realloc(s->lat, s->cap * sizeof *s->lat);
    }
    s->pts[s->n] = (struct result_point){
        .responses = (double)(count - s->mark_count) * 1e9 / (double)(now_ns - s->mark_ns)};
    /* A sample recorded while this runs lands in this second or the
     * next; none is lost. */
    for (unsigned b = 0; s->with_latency && b < SECLAT_BUCKETS; b++)
        s->lat[s->n][b] = atomic_exchange_explicit(&s->cur[b], 0, memory_order_relaxed);
    s->n++;
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
    if (now_ns - s->mark_ns >= PERSEC_MIN_LAST_NS) {
        persec_close(s, now_ns, count);
    } else if (s->with_latency && s->n) {
        /* Too short to be a point of its own, but its latencies count:
         * the second before takes them, so that the buckets hold every
         * sample of the run. */
        for (unsigned b = 0; b < SECLAT_BUCKETS; b++)
            s->lat[s->n - 1][b] += atomic_exchange_explicit(&s->cur[b], 0, memory_order_relaxed);
    }
    result_set_series(row, s->pts, s->n, -1);
    if (s->with_latency)
        result_set_series_latency(row, (const uint32_t (*)[SECLAT_BUCKETS])s->lat);
    mem_free(s->pts);
    mem_free(s->lat);
    s->pts = NULL;
    s->lat = NULL;
    s->n = s->cap = 0;
}
