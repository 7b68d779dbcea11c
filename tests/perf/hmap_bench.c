/* hmap_bench.c - what the hash map (core/hmap.c) costs per operation and
 * per entry: inserts N client-id-like keys ("idle-N", as
 * `shootout bench mqtt-conns` names its clients), then looks each up
 * (hits) and as many absent keys (misses, as a new client's id is), and
 * deletes them all; prints nanoseconds per operation, the table's slots and
 * its bytes per entry at N. The growth rule decides the last two; the
 * probe lengths it allows decide the first.
 *
 *   make hmap-bench && build/perf/hmap_bench [N...]
 *
 * Not a test; its output goes to docs/BENCHMARKS.md ("Idle memory").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hmap.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Repeats the whole cycle until it has run for a while, so that small N
 * are timed over many rounds; returns the best round's ns per operation in
 * ns[0..3] (insert, hit, miss, delete). */
static void bench(unsigned n, char (*keys)[24], char (*absent)[24], double ns[4], struct hmap *last)
{
    static int val;
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    double start = now_s();

    for (int round = 0; round < 3 || now_s() - start < 0.5; round++) {
        struct hmap m = {0};
        unsigned long hits = 0;
        double t0 = now_s();
        for (unsigned i = 0; i < n; i++)
            hmap_put(&m, keys[i], strlen(keys[i]), &val);
        double t1 = now_s();
        for (unsigned i = 0; i < n; i++)
            hits += hmap_get(&m, keys[i], strlen(keys[i])) != NULL;
        double t2 = now_s();
        for (unsigned i = 0; i < n; i++)
            hits += hmap_get(&m, absent[i], strlen(absent[i])) != NULL;
        double t3 = now_s();
        *last = m;
        last->slots = NULL; /* keep the figures, not the table */
        for (unsigned i = 0; i < n; i++)
            hmap_del(&m, keys[i], strlen(keys[i]));
        double t4 = now_s();
        hmap_free(&m);
        if (hits != n) /* also keeps the lookups from being optimised away */
            fprintf(stderr, "hmap_bench: %lu hits, expected %u\n", hits, n);
        double t[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
        for (int k = 0; k < 4; k++)
            if (t[k] < best[k])
                best[k] = t[k];
    }
    for (int k = 0; k < 4; k++)
        ns[k] = best[k] * 1e9 / n;
}

int main(int argc, char **argv)
{
    static const unsigned defaults[] = {100, 1000, 19000, 50000, 100000, 1000000};
    unsigned ns_n = argc > 1 ? (unsigned)(argc - 1) : sizeof defaults / sizeof defaults[0];

    printf("%9s %9s %12s %10s %8s %8s %8s %8s\n", "entries", "slots", "bytes/entry",
           "load", "put ns", "hit ns", "miss ns", "del ns");
    for (unsigned a = 0; a < ns_n; a++) {
        unsigned n = argc > 1 ? (unsigned)strtoul(argv[a + 1], NULL, 10) : defaults[a];
        char (*keys)[24] = malloc((size_t)n * sizeof *keys);
        char (*absent)[24] = malloc((size_t)n * sizeof *absent);
        if (!n || !keys || !absent)
            return 1;
        for (unsigned i = 0; i < n; i++) {
            snprintf(keys[i], sizeof keys[i], "idle-%u", i);
            snprintf(absent[i], sizeof absent[i], "idle-%u", n + i);
        }
        double ns[4];
        struct hmap m;
        bench(n, keys, absent, ns, &m);
        printf("%9u %9u %12.1f %10.3f %8.1f %8.1f %8.1f %8.1f\n", n, m.cap,
               (double)m.cap * sizeof(struct hmap_slot) / n, (double)n / m.cap, ns[0], ns[1],
               ns[2], ns[3]);
        free(keys);
        free(absent);
    }
    return 0;
}
