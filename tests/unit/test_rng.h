/* test_rng.h - a deterministic xorshift generator for the unit tests, so a
 * randomised test that fails fails the same way again. Each test sets
 * rng_state (non-zero) before drawing. */
#ifndef SHOOTOUT_TEST_RNG_H
#define SHOOTOUT_TEST_RNG_H

#include <stdint.h>

static uint64_t rng_state = 88172645463325252ull;

static inline uint64_t rnd64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Uniform enough in [0, n) for tests; n > 0. */
static inline uint32_t rnd(uint32_t n) { return (uint32_t)(rnd64() % n); }

#endif
