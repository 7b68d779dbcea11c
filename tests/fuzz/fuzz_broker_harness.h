/* fuzz_broker_harness.h - what the fuzz targets that drive a real broker
 * over socket pairs share: the once-per-process setup, a broker on the
 * target's own loop, one step of letting it work while its clients drain
 * what it answered, and its shutdown as SIGTERM's. */
#ifndef SHOOTOUT_FUZZ_BROKER_HARNESS_H
#define SHOOTOUT_FUZZ_BROKER_HARNESS_H

#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "broker/conn_loop.h"
#include "core/ev.h"
#include "core/linger.h"
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

static inline bool fuzz_broker_prepare(struct ev_loop *loop, void *l) { return conn_prepare(l); }

/* A broker of one loop on loop, which runs the end of each iteration's
 * work as core/srv.c's worker would. */
static inline void fuzz_broker_start(struct broker *b, const struct broker_config *cfg,
                                     struct ev_loop *loop)
{
    broker_init(b, cfg, 1);
    broker_loop_init(b->home, b, 0, loop);
    ev_set_prepare(loop, fuzz_broker_prepare, b->home);
}

/* Shuts the broker down as a drain does: every client kicked, LINGER_MS
 * for them to leave, the rest closed, everything freed. */
static inline void fuzz_broker_stop(struct broker *b)
{
    struct broker_loop *l = b->home;
    broker_drain(l);
    uint64_t until = ev_now(l->ev) + LINGER_MS;
    conn_prepare(l);
    while (l->closed && ev_update_now(l->ev) < until)
        ev_run_once(l->ev, 50);
    broker_close_all(l);
    broker_fini(b);
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
