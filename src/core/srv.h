/* srv.h - the process skeleton every TCP server of shootout shares: N
 * worker threads, each with its own event loop and its own SO_REUSEPORT
 * listeners (or, with SRV_ACCEPT_HANDOFF, one set of listeners on worker 0
 * that hands each connection to the workers in turn), a global connection
 * limit, accepting with a guard against
 * running out of descriptors, signals on worker 0, and the graceful drain
 * (stop accepting, let the protocol finish what is in progress, close
 * within a timeout). The protocol plugs in through struct srv_hooks.
 *
 * Worker 0 runs on the calling thread and owns the signals; SIGTERM and
 * SIGINT make every worker drain; SIGHUP goes to the reload hook, or is
 * logged and ignored without one.
 */
#ifndef SHOOTOUT_SRV_H
#define SHOOTOUT_SRV_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/addrcount.h"
#include "core/ev.h"

#define SRV_MAX_LISTENERS 8

struct srv;

/* What an accepted descriptor was counted under, with max_per_address;
 * also the ticket of a connection moving to another worker. */
struct srv_fd_addr {
    uint8_t key[ADDRCOUNT_KEY_LEN];
    bool counted;
};

/* One event loop and what the skeleton keeps for it; the protocol keeps
 * its own per-worker state in data. */
struct srv_worker {
    struct srv *srv;
    struct ev_loop *loop;
    unsigned index;
    void *data;                /* the protocol's; set by hooks->worker_init */
    bool draining;
    unsigned nconns;
    /* Over max_connections or out of descriptors; other threads read it
     * (relaxed atomic). */
    uint64_t refused_connections;
    struct srv_fd_addr *fd_addrs; /* by fd: the address counted for it (max_per_address) */
    unsigned nfd_addrs;
    struct ev_io listeners[SRV_MAX_LISTENERS];
    struct ev_io wake;         /* eventfd: another thread asks us to drain */
    struct ev_timer drain_timer;
    int spare_fd;              /* reserve for running out of descriptors */
};

/* How connections reach the workers (docs/broker.md, "Threads"). */
enum srv_accept {
    SRV_ACCEPT_REUSEPORT, /* a listener per worker; the kernel picks by 4-tuple hash */
    SRV_ACCEPT_HANDOFF,   /* worker 0 accepts and hands them out round-robin */
};

struct srv_config {
    const char *bind;
    int ports[SRV_MAX_LISTENERS]; /* -1 = off; 0 = a free port (shared by all workers) */
    const char *binds[SRV_MAX_LISTENERS]; /* a listener's own address; NULL = bind */
    unsigned nports;
    unsigned threads;             /* 0 = 1 */
    enum srv_accept accept;       /* with threads > 1 */
    unsigned max_connections;     /* all workers together; UINT_MAX: the protocol limits them */
    unsigned max_per_address;     /* from one peer address, all workers together; 0 = no limit */
    uint32_t drain_timeout_ms;
};

/* Every hook is called on the worker's own thread, except listening,
 * stopped and worker_fini (on the calling thread, with no loop running).
 * Optional hooks may be NULL. */
struct srv_hooks {
    /* Sets w->data up, after w->loop exists. 0, or -1 (logged) to fail. Optional. */
    int (*worker_init)(struct srv_worker *w, void *ctx);
    /* A new connection on listener `listener` (index into ports), already
     * counted: the protocol calls srv_worker_conn_closed when it goes. */
    void (*accept)(struct srv_worker *w, unsigned listener, int fd);
    /* Runs before the loop sleeps; true if work was left undone. Optional. */
    bool (*prepare)(struct srv_worker *w);
    /* w->draining was just set: close what is idle, finish the rest. */
    void (*drain)(struct srv_worker *w);
    /* Close every connection now (drain timeout, or teardown). */
    void (*close_all)(struct srv_worker *w);
    /* Every worker_init has run, no port is open and no loop runs yet: what
     * needs all the loops at hand is set up here. 0, or -1 (logged) to
     * fail. Optional. */
    int (*workers_ready)(void *ctx);
    /* Every listener is bound; ports[i] holds the real port. Optional. */
    void (*listening)(void *ctx, const int *ports);
    /* SIGHUP, on worker 0's thread. Optional. */
    void (*reload)(void *ctx);
    /* All loops have stopped and every connection is closed; called once
     * before the workers are freed. Optional. */
    void (*stopped)(void *ctx);
    /* Frees w->data; called for every worker that worker_init set up. Optional. */
    void (*worker_fini)(struct srv_worker *w, void *ctx);
};

/* Runs until SIGTERM/SIGINT. Returns 0 after a clean stop, 1 if a listener
 * or worker could not be set up (logged). */
int srv_run(const struct srv_config *cfg, const struct srv_hooks *hooks, void *ctx);
/* The signals srv_run takes on its home loop (drain, reload), blocked in
 * every thread it starts; a thread started before it must block them too. */
void srv_signal_set(sigset_t *set);

/* Takes one connection slot for a connection the protocol opened itself;
 * false at max_connections. Accepted connections are counted already. */
bool srv_worker_conn_opened(struct srv_worker *w);
/* A connection went away: fd is the descriptor it was accepted as (closed
 * or not by now), -1 for one srv_worker_conn_opened counted. When draining
 * and none is left, the worker stops. */
void srv_worker_conn_closed(struct srv_worker *w, int fd);

/* A connection moves to another worker (the broker hands a client to the
 * loop of its session): srv_worker_conn_leave, on the thread of the worker
 * it leaves, takes it off that worker's count and fills *t (a drain that
 * waited for it alone ends); srv_worker_conn_join, on the thread of the
 * worker it joins, counts it there. The process-wide count is unchanged. */
void srv_worker_conn_leave(struct srv_worker *w, int fd, struct srv_fd_addr *t);
void srv_worker_conn_join(struct srv_worker *w, int fd, const struct srv_fd_addr *t);

/* Connections this process refused at max_per_address (each is closed at
 * once, and logged at most once a second). */
uint64_t srv_refused_per_address(void);

#endif
