/* share_bench.c - how the broker's loops should share the subscription tree:
 * the read side's cost per match of four ways of sharing a read-mostly
 * structure between threads, on the broker's own tree (subtree.c) under a
 * loadtest-like match (one subscriber of 1000 per topic), with and without
 * a writer changing the tree meanwhile (SUBSCRIBE and UNSUBSCRIBE churn):
 *
 *   none      one thread, no sharing: the floor (what --threads 1 does)
 *   rwlock    a writer-preferring pthread_rwlock, read-locked per match
 *             (the router today)
 *   batch     the same lock, read-locked once per batch of matches (a loop
 *             holding it over one read of its connections)
 *   leftright two trees and a pointer: readers match the current one with
 *             no lock and say once per batch that they hold no reference
 *             (an epoch of their own, QSBR); the writer changes the idle
 *             tree, swaps, waits until every reader has passed a batch,
 *             then changes the other
 *   replicas  a tree per reader; the writer queues each change to every
 *             reader, which applies its queue between batches
 *
 *   make share-bench && build/perf/share_bench [seconds] [writer_gap_us]
 *
 * Prints the readers' CPU time per match (their own thread CPU clocks, so
 * that other jobs on the machine do not count, contention for the lock's
 * cache line does), their matches per second together, at 1 and 2
 * readers, and the writer's changes per second. Not a test; its output goes to docs/BENCHMARKS.md.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker/subtree.h"

#define SUBSCRIBERS 1000
#define BATCH 64 /* matches per batch: about one read of a busy loop's connections */
#define MAX_READERS 2
#define QUEUE_MAX 4096

enum mode { NONE, RWLOCK, BATCHED, LEFTRIGHT, REPLICAS, NMODES };
static const char *const mode_name[NMODES] = {"none", "rwlock", "batch", "leftright", "replicas"};

struct change {
    bool add;
    unsigned k;
};

/* A reader's queue of changes (replicas). */
struct queue {
    pthread_mutex_t lock;
    atomic_bool any;
    unsigned n;
    struct change v[QUEUE_MAX];
};

struct shared {
    enum mode mode;
    unsigned readers;
    atomic_bool stop;
    pthread_rwlock_t lock;
    struct subtree *trees[MAX_READERS > 2 ? MAX_READERS : 2]; /* leftright: 2; replicas: per reader */
    _Atomic(struct subtree *) current;                         /* leftright */
    /* leftright: each reader's count of batches done, on its own line. */
    struct {
        _Alignas(64) atomic_ulong batches;
    } epoch[MAX_READERS];
    struct queue *queue[MAX_READERS];
    uint64_t matches[MAX_READERS];
    uint64_t cpu_ns[MAX_READERS]; /* each reader's own CPU time */
    uint64_t changes;
    unsigned writer_gap_us;
};

struct reader {
    struct shared *s;
    unsigned index;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count(void *ctx, void *subscriber, subtree_opts o)
{
    (*(uint64_t *)ctx)++;
}

static size_t topic_of(char *buf, size_t cap, const char *prefix, unsigned i)
{
    return (size_t)snprintf(buf, cap, "%s/%u", prefix, i);
}

static void apply(struct subtree *t, const struct change *c)
{
    char f[32];
    size_t n = topic_of(f, sizeof f, "churn", c->k);
    static int subscriber;
    if (c->add)
        subtree_add(t, (const uint8_t *)f, n, &subscriber, 0);
    else
        subtree_remove(t, (const uint8_t *)f, n, &subscriber);
}

static struct subtree *tree_new(void)
{
    static int subs[SUBSCRIBERS];
    struct subtree *t = subtree_new();
    char f[32];
    for (unsigned i = 0; i < SUBSCRIBERS; i++) {
        size_t n = topic_of(f, sizeof f, "bench", i);
        subtree_add(t, (const uint8_t *)f, n, &subs[i], 0);
    }
    return t;
}

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    struct shared *s = r->s;
    char topics[SUBSCRIBERS][32];
    size_t lens[SUBSCRIBERS];
    for (unsigned i = 0; i < SUBSCRIBERS; i++)
        lens[i] = topic_of(topics[i], sizeof topics[i], "bench", i);
    uint64_t hits = 0, matches = 0;
    unsigned i = r->index * 37;
    struct subtree *own = s->mode == REPLICAS ? s->trees[r->index] : s->trees[0];
    uint64_t cpu0 = thread_cpu_ns();
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        if (s->mode == BATCHED)
            pthread_rwlock_rdlock(&s->lock);
        struct subtree *t = own;
        if (s->mode == LEFTRIGHT)
            t = atomic_load_explicit(&s->current, memory_order_acquire);
        for (unsigned b = 0; b < BATCH; b++) {
            i = i + 1 == SUBSCRIBERS ? 0 : i + 1;
            if (s->mode == RWLOCK)
                pthread_rwlock_rdlock(&s->lock);
            subtree_match(t, (const uint8_t *)topics[i], lens[i], count, &hits);
            if (s->mode == RWLOCK)
                pthread_rwlock_unlock(&s->lock);
        }
        matches += BATCH;
        if (s->mode == BATCHED)
            pthread_rwlock_unlock(&s->lock);
        if (s->mode == LEFTRIGHT)
            atomic_fetch_add_explicit(&s->epoch[r->index].batches, 1, memory_order_release);
        if (s->mode == REPLICAS && atomic_load_explicit(&s->queue[r->index]->any, memory_order_acquire)) {
            struct queue *q = s->queue[r->index];
            pthread_mutex_lock(&q->lock);
            for (unsigned k = 0; k < q->n; k++)
                apply(own, &q->v[k]);
            q->n = 0;
            atomic_store_explicit(&q->any, false, memory_order_relaxed);
            pthread_mutex_unlock(&q->lock);
        }
    }
    if (hits != matches) {
        fprintf(stderr, "share_bench: %llu hits for %llu matches\n", (unsigned long long)hits,
                (unsigned long long)matches);
        exit(1);
    }
    s->matches[r->index] = matches;
    s->cpu_ns[r->index] = thread_cpu_ns() - cpu0;
    return NULL;
}

/* leftright: until every reader has finished a batch begun after now. */
static void wait_readers(struct shared *s)
{
    unsigned long seen[MAX_READERS];
    for (unsigned r = 0; r < s->readers; r++)
        seen[r] = atomic_load_explicit(&s->epoch[r].batches, memory_order_acquire);
    for (unsigned r = 0; r < s->readers; r++)
        while (atomic_load_explicit(&s->epoch[r].batches, memory_order_acquire) < seen[r] + 2 &&
               !atomic_load_explicit(&s->stop, memory_order_relaxed))
            sched_yield(); /* two cores: leave them to the readers */
}

static void change(struct shared *s, const struct change *c)
{
    switch (s->mode) {
    case NONE:
        break;
    case RWLOCK:
    case BATCHED:
        pthread_rwlock_wrlock(&s->lock);
        apply(s->trees[0], c);
        pthread_rwlock_unlock(&s->lock);
        break;
    case LEFTRIGHT: {
        struct subtree *cur = atomic_load(&s->current);
        struct subtree *idle = cur == s->trees[0] ? s->trees[1] : s->trees[0];
        apply(idle, c);
        atomic_store_explicit(&s->current, idle, memory_order_release);
        wait_readers(s);
        apply(cur, c);
        break;
    }
    case REPLICAS:
        for (unsigned r = 0; r < s->readers; r++) {
            struct queue *q = s->queue[r];
            pthread_mutex_lock(&q->lock);
            if (q->n < QUEUE_MAX)
                q->v[q->n++] = *c;
            atomic_store_explicit(&q->any, true, memory_order_release);
            pthread_mutex_unlock(&q->lock);
        }
        break;
    case NMODES:
        break;
    }
}

static void *writer_main(void *arg)
{
    struct shared *s = arg;
    unsigned k = 0;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        struct timespec gap = {0, (long)s->writer_gap_us * 1000};
        nanosleep(&gap, NULL);
        struct change c = {k % 2 == 0, k / 2 % 64};
        change(s, &c);
        s->changes++;
        k++;
    }
    return NULL;
}

static void run(enum mode mode, unsigned readers, double seconds, unsigned gap_us)
{
    struct shared *s = calloc(1, sizeof *s);
    s->mode = mode;
    s->readers = readers;
    s->writer_gap_us = gap_us;
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->lock, &a);
    pthread_rwlockattr_destroy(&a);
    unsigned ntrees = mode == LEFTRIGHT ? 2 : mode == REPLICAS ? readers : 1;
    for (unsigned t = 0; t < ntrees; t++)
        s->trees[t] = tree_new();
    atomic_store(&s->current, s->trees[0]);
    for (unsigned r = 0; r < readers; r++) {
        s->queue[r] = calloc(1, sizeof *s->queue[r]);
        pthread_mutex_init(&s->queue[r]->lock, NULL);
    }
    pthread_t th[MAX_READERS], w;
    struct reader rd[MAX_READERS];
    uint64_t t0 = now_ns();
    for (unsigned r = 0; r < readers; r++) {
        rd[r] = (struct reader){s, r};
        pthread_create(&th[r], NULL, reader_main, &rd[r]);
    }
    bool writing = gap_us > 0 && mode != NONE;
    if (writing)
        pthread_create(&w, NULL, writer_main, s);
    struct timespec d = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&d, NULL);
    atomic_store(&s->stop, true);
    for (unsigned r = 0; r < readers; r++)
        pthread_join(th[r], NULL);
    if (writing)
        pthread_join(w, NULL);
    double elapsed = (double)(now_ns() - t0);
    uint64_t total = 0, cpu = 0;
    for (unsigned r = 0; r < readers; r++) {
        total += s->matches[r];
        cpu += s->cpu_ns[r];
    }
    printf("%-10s %7u %12.1f %14.2f %12.0f\n", mode_name[mode], readers, (double)cpu / (double)total,
           (double)total / elapsed * 1e3,
           writing ? (double)s->changes / elapsed * 1e9 : 0.0);
    fflush(stdout);
    for (unsigned t = 0; t < ntrees; t++)
        subtree_free(s->trees[t]);
    for (unsigned r = 0; r < readers; r++) {
        pthread_mutex_destroy(&s->queue[r]->lock);
        free(s->queue[r]);
    }
    pthread_rwlock_destroy(&s->lock);
    free(s);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    unsigned gap_us = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
    if (seconds <= 0 || seconds > 60) {
        fprintf(stderr, "usage: share_bench [seconds (0-60]] [writer_gap_us, 0: no writer]\n");
        return 2;
    }
    printf("%u subscribers, one match per topic, batches of %d; writer: %s\n", SUBSCRIBERS,
           BATCH, gap_us ? "a change every" : "none");
    if (gap_us)
        printf("  (%u us apart, then the change itself)\n", gap_us);
    printf("%-10s %7s %12s %14s %12s\n", "mode", "readers", "cpu ns/match", "M matches/s",
           "changes/s");
    run(NONE, 1, seconds, 0);
    for (unsigned readers = 1; readers <= MAX_READERS; readers++)
        for (enum mode m = RWLOCK; m < NMODES; m++)
            run(m, readers, seconds, gap_us);
    return 0;
}
