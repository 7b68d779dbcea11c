/* a2b_store.h - the a2b service's storage for request handlers on event
 * loops: each operation of a2b_api.h is submitted from a loop, runs on a
 * small pool of worker threads that each own one SQLite connection, and
 * completes on the submitting loop's thread. The loop never touches the
 * disk, and a slow query never stalls network I/O.
 *
 * With pg_conninfo set, the same calls run on PostgreSQL instead: each
 * client then owns a pool of non-blocking libpq connections driven by its
 * loop (a2b_pg.h), and no thread is started.
 *
 *   store = a2b_store_open(&cfg, err, sizeof err);      -- once, at startup
 *   client = a2b_store_client_new(store, loop);         -- once per loop
 *   if (a2b_store_submit(client, A2B_USER, &args, done, ctx) < 0)
 *       answer 503;                                      -- queue full
 *   ...  done(&res, ctx) runs later on that loop's thread
 *
 * The queue of requests waiting for a worker is bounded (queue_max): past
 * it, submit refuses at once, and the refusal is counted. Completions are
 * handed to the loop through an eventfd; the loop runs each callback in
 * the order its requests finished.
 */
#ifndef SHOOTOUT_A2B_STORE_H
#define SHOOTOUT_A2B_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "a2b/a2b_api.h"

struct ev_loop;
struct a2b_store;
struct a2b_store_client;

struct a2b_store_config {
    const char *pg_conninfo; /* PostgreSQL (filled by a2b_pg_init), or NULL for SQLite */
    unsigned pg_conns;       /* connections per client; 0 = 4 */
    const char *path;    /* the SQLite file, created and filled if missing */
    uint64_t seed;       /* data set for a new file (a2b_data.h) */
    double scale;        /* 1.0 = the reference's sizes */
    unsigned workers;    /* threads and connections; 0 = 2 */
    unsigned queue_max;  /* requests waiting for a worker (per client on
                            PostgreSQL: for a connection); 0 = 1024 */
};

struct a2b_store_stats {
    uint64_t submitted; /* accepted by submit */
    uint64_t completed; /* callbacks run */
    uint64_t rejected;  /* refused because the queue was full */
    /* PostgreSQL: the clients' pools summed (a2b_pg_stats); 0 on SQLite. */
    uint64_t pg_conns, pg_connected, pg_busy; /* now */
    uint64_t pg_lost, pg_reconnects, pg_failures; /* since the start */
};

/* Creates the database if path does not exist (logging how long the load
 * took), opens the connections and starts the workers. NULL with a
 * message in err on failure. */
struct a2b_store *a2b_store_open(const struct a2b_store_config *cfg, char *err, size_t errlen);

/* Stops the workers (each finishes the request it is running) and frees
 * the store (what its clients still count into, once they are freed too).
 * Requests still queued are dropped without their callbacks.
 * Free the clients right after this, without running their loops in
 * between, or before it once they have nothing pending. */
void a2b_store_close(struct a2b_store *s);

/* A loop's handle on the store: its completion queue and eventfd,
 * registered with loop (or its PostgreSQL pool, connected now). NULL with a
 * message in err if the eventfd or a connection cannot be made. */
struct a2b_store_client *a2b_store_client_new(struct a2b_store *s, struct ev_loop *loop, char *err,
                                              size_t errlen);
/* Call on the loop's thread when no request of this client is pending,
 * or after a2b_store_close; completions not yet delivered are dropped. */
void a2b_store_client_free(struct a2b_store_client *c);
/* Requests submitted through c whose callback has not run yet. */
unsigned a2b_store_client_pending(const struct a2b_store_client *c);

/* Queues op with a copy of args (strings included), from the client's
 * loop thread. 0: cb(res, ctx) will run on that loop. -1: the queue is
 * full (or the store is closing); cb will never run, and the caller
 * answers 503. */
int a2b_store_submit(struct a2b_store_client *c, enum a2b_op op, const struct a2b_args *args,
                     a2b_done_fn cb, void *ctx);

void a2b_store_get_stats(struct a2b_store *s, struct a2b_store_stats *out);
/* Requests waiting for a worker now (not those running). */
unsigned a2b_store_queued(struct a2b_store *s);

#endif
