/* test_xloop.c - unit tests for the hand-offs between broker loops
 * (xloop.c): entries keep their order per pair, a flush hands every
 * non-empty outbox over and wakes a loop only when its inbox was empty
 * (one wake-up per batch), a take empties the inbox and reuses its
 * buffer, outboxes grow past their first capacity, and two threads
 * flushing at one taker lose and reorder nothing; a producer sees how many
 * of its entries are not taken yet, and one over its mark is woken by the
 * take that brings it back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <poll.h>
#include <stdlib.h>

#include <cmocka.h>

#include "broker/xloop.h"

#define NLOOPS 3

static struct xloop loops[NLOOPS];
static struct xloop *all[NLOOPS];

static int setup(void **state)
{
    for (unsigned i = 0; i < NLOOPS; i++) {
        assert_int_equal(xloop_init(&loops[i], i, NLOOPS), 0);
        all[i] = &loops[i];
    }
    return 0;
}

static int teardown(void **state)
{
    for (unsigned i = 0; i < NLOOPS; i++)
        xloop_fini(&loops[i]);
    return 0;
}

static void push(unsigned from, unsigned to, uintptr_t tag)
{
    struct xloop_entry *e = xloop_push(&loops[from], to);
    *e = (struct xloop_entry){.kind = XLOOP_DELIVER, .aux = (void *)tag};
}

static bool readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1;
}

static void test_order_and_one_wake_per_batch(void **state)
{
    for (uintptr_t i = 0; i < 5; i++)
        push(0, 1, i);
    assert_int_equal(xloop_pending(&loops[0], 1), 5);
    assert_false(readable(loops[1].efd));
    assert_int_equal(xloop_flush(all, 0), 1);
    assert_int_equal(xloop_pending(&loops[0], 1), 0);
    assert_true(readable(loops[1].efd));
    /* A second batch before the taker ran: appended, no second wake. */
    for (uintptr_t i = 5; i < 8; i++)
        push(0, 1, i);
    assert_int_equal(xloop_flush(all, 0), 0);
    assert_int_equal(loops[1].wakes, 1);
    xloop_clear(&loops[1]);
    assert_false(readable(loops[1].efd));
    struct xloop_box box = {0};
    assert_true(xloop_take(all, 1, &box));
    assert_int_equal(box.n, 8);
    for (uint32_t i = 0; i < box.n; i++)
        assert_int_equal((uintptr_t)box.v[i].aux, i);
    /* Taken: nothing left, and the next batch is a new wake-up. */
    box.n = 0;
    assert_false(xloop_take(all, 1, &box));
    push(0, 1, 99);
    assert_int_equal(xloop_flush(all, 0), 1);
    assert_int_equal(loops[1].wakes, 2);
    assert_true(xloop_take(all, 1, &box));
    assert_int_equal(box.n, 1);
    assert_int_equal((uintptr_t)box.v[0].aux, 99);
    free(box.v);
    xloop_clear(&loops[1]);
}

static void test_flush_reaches_each_loop_and_nothing_else(void **state)
{
    push(1, 0, 10);
    push(1, 2, 20);
    push(1, 2, 21);
    assert_int_equal(xloop_flush(all, 1), 2);
    assert_int_equal(xloop_flush(all, 1), 0); /* nothing left to hand over */
    struct xloop_box box = {0};
    assert_true(xloop_take(all, 0, &box));
    assert_int_equal(box.n, 1);
    assert_int_equal((uintptr_t)box.v[0].aux, 10);
    box.n = 0;
    assert_true(xloop_take(all, 2, &box));
    assert_int_equal(box.n, 2);
    assert_int_equal((uintptr_t)box.v[1].aux, 21);
    box.n = 0;
    assert_false(xloop_take(all, 1, &box));
    free(box.v);
    for (unsigned i = 0; i < NLOOPS; i++)
        xloop_clear(&loops[i]);
}

static void test_outbox_grows(void **state)
{
    for (uintptr_t i = 0; i < 1000; i++)
        push(2, 0, i);
    assert_int_equal(xloop_pending(&loops[2], 0), 1000);
    xloop_flush(all, 2);
    struct xloop_box box = {0};
    assert_true(xloop_take(all, 0, &box));
    assert_int_equal(box.n, 1000);
    assert_int_equal((uintptr_t)box.v[999].aux, 999);
    free(box.v);
    xloop_clear(&loops[0]);
}

/* The model: loop 0 produces for loops 1 and 2 without waiting (the
 * cluster inbox); what it handed over counts until taken, what it holds
 * too, and only a take from it clears its mark and wakes it, once. */
static void test_mark_over_untaken_entries(void **state)
{
    for (uintptr_t i = 0; i < 6; i++)
        push(0, 1 + (unsigned)(i % 2), i);
    assert_int_equal(xloop_untaken(all, 0), 6); /* held, not handed yet */
    xloop_flush(all, 0);
    xloop_clear(&loops[1]);
    xloop_clear(&loops[2]);
    assert_int_equal(xloop_untaken(all, 0), 6);
    assert_false(xloop_over(all, 0, 6));
    assert_false(loops[0].over);
    assert_true(xloop_over(all, 0, 5));
    assert_false(readable(loops[0].efd));
    /* Another loop's entries for loop 1 count for that loop, not for 0. */
    push(2, 1, 100);
    xloop_flush(all, 2);
    assert_int_equal(xloop_untaken(all, 0), 6);
    assert_int_equal(xloop_untaken(all, 2), 1);
    struct xloop_box box = {0};
    assert_true(xloop_take(all, 1, &box)); /* 3 of loop 0's, 1 of loop 2's */
    assert_int_equal(box.n, 4);
    assert_int_equal(xloop_untaken(all, 0), 3);
    assert_int_equal(xloop_untaken(all, 2), 0);
    assert_true(readable(loops[0].efd)); /* woken: it checks again */
    assert_false(loops[0].over);
    assert_false(readable(loops[2].efd)); /* never over: never woken */
    xloop_clear(&loops[0]);
    box.n = 0;
    assert_true(xloop_take(all, 2, &box));
    assert_int_equal(xloop_untaken(all, 0), 0);
    assert_false(readable(loops[0].efd)); /* one wake per time over */
    free(box.v);
    for (unsigned i = 0; i < NLOOPS; i++)
        xloop_clear(&loops[i]);
}

#define PER_THREAD 20000

static void *producer(void *arg)
{
    unsigned from = (unsigned)(uintptr_t)arg;
    for (uintptr_t i = 0; i < PER_THREAD; i++) {
        push(from, 0, (uintptr_t)from << 24 | i);
        if (i % 7 == 0)
            xloop_flush(all, from);
    }
    xloop_flush(all, from);
    return NULL;
}

/* Loops 1 and 2 hand loop 0 their entries while it takes them: every entry
 * arrives once, each producer's in order. */
static void test_two_producers_one_taker(void **state)
{
    pthread_t t[2];
    pthread_create(&t[0], NULL, producer, (void *)(uintptr_t)1);
    pthread_create(&t[1], NULL, producer, (void *)(uintptr_t)2);
    uint32_t seen = 0, next[3] = {0, 0, 0};
    struct xloop_box box = {0};
    while (seen < 2 * PER_THREAD) {
        if (!xloop_take(all, 0, &box))
            continue;
        for (uint32_t i = 0; i < box.n; i++) {
            uintptr_t tag = (uintptr_t)box.v[i].aux;
            unsigned from = (unsigned)(tag >> 24);
            assert_true(from == 1 || from == 2);
            assert_int_equal(tag & 0xFFFFFF, next[from]);
            next[from]++;
        }
        seen += box.n;
        box.n = 0;
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_false(xloop_take(all, 0, &box));
    assert_int_equal(next[1], PER_THREAD);
    assert_int_equal(next[2], PER_THREAD);
    free(box.v);
    xloop_clear(&loops[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_one_wake_per_batch),
        cmocka_unit_test(test_flush_reaches_each_loop_and_nothing_else),
        cmocka_unit_test(test_outbox_grows),
        cmocka_unit_test(test_mark_over_untaken_entries),
        cmocka_unit_test(test_two_producers_one_taker),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
