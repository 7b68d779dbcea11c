/* clock.h - the monotonic clock, in the units the code counts in: one
 * definition instead of a private now_ns() in every module that times
 * something. Inline, since event loops and per-request timing call it on
 * their hot paths. */
#ifndef SHOOTOUT_CLOCK_H
#define SHOOTOUT_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline uint64_t clock_now_ms(void) { return clock_now_ns() / 1000000u; }

#endif
