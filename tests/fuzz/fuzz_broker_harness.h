/* fuzz_broker_harness.h - what the fuzz targets that drive a real broker
 * over socket pairs share: the once-per-process setup, and one step of
 * letting the broker work while its clients drain what it answered. */
#ifndef SHOOTOUT_FUZZ_BROKER_HARNESS_H
#define SHOOTOUT_FUZZ_BROKER_HARNESS_H

#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "core/ev.h"
#include "core/log.h"

/* A dead peer is a write error, not a signal; only errors are logged. */
static inline void fuzz_broker_once(void)
{
    static int once;
    if (!once) {
        signal(SIGPIPE, SIG_IGN);
        log_set_level(LOG_ERROR);
        once = 1;
    }
}

/* Let the broker handle what arrived, and read what it answered to the
 * n peers (those still open, >= 0) so that its output never backs up. */
static inline void fuzz_broker_step(struct ev_loop *loop, const int *peers, int n)
{
    uint8_t sink[65536];
    for (int round = 0; round < 2; round++) {
        ev_run_once(loop, 0);
        for (int i = 0; i < n; i++)
            while (peers[i] >= 0 && read(peers[i], sink, sizeof sink) > 0) {
            }
    }
}

#endif
