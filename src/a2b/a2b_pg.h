/* a2b_pg.h - the a2b service on PostgreSQL: the schema and data set loaded
 * with COPY (for `shootout a2b-server --init`), and a pool of non-blocking
 * libpq connections driven by one event loop, running the operations of
 * a2b_api.h with the same statuses and bodies as the SQLite backend.
 *
 * Every operation is one prepared statement and one round trip; existence
 * checks for 404s ride along in the same statement. Connections are made
 * (blocking) when the pool opens, before the loop serves anything; from
 * then on the loop only ever sends, flushes and reads when the socket is
 * ready. A request waits in a bounded queue while every connection is busy.
 *
 * A connection that breaks fails its request with 503, is closed, and is
 * re-made in the background (PQconnectStart/PQconnectPoll on the loop,
 * statements prepared again before it serves), retried after 100 ms, then
 * twice as long after each failure, up to 5 s. While no connection is
 * ready, requests fail at once with 503 rather than wait.
 *
 * The schema is the reference's in schema a2b: jsonb locations, a tsrange
 * duration, money prices, and the phone index on phone.
 */
#ifndef SHOOTOUT_A2B_PG_H
#define SHOOTOUT_A2B_PG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "a2b/a2b_api.h"

struct ev_loop;
struct a2b_pg;

/* Drops and recreates schema a2b with the data set of (seed, scale), in one
 * transaction, indexes after the load, then ANALYZE. Blocking. 0, or -1
 * with a message in err. */
int a2b_pg_init(const char *conninfo, uint64_t seed, double scale, char *err, size_t errlen);

/* Pool usage, for /metrics: shared by the pools of a store (one per
 * loop), so relaxed atomics, summed over them. */
struct a2b_pg_stats {
    atomic_uint_fast64_t conns;      /* connections of the open pools */
    atomic_uint_fast64_t connected;  /* of those, ready to serve */
    atomic_uint_fast64_t busy;       /* of those, running a request */
    atomic_uint_fast64_t lost;       /* ready connections that broke */
    atomic_uint_fast64_t reconnects; /* connections re-made after a loss */
    atomic_uint_fast64_t failures;   /* attempts to re-make one that failed */
};

struct a2b_pg_config {
    const char *conninfo;
    unsigned conns;     /* connections; 0 = 4 */
    unsigned queue_max; /* requests waiting for a connection; 0 = 1024 */
    struct a2b_pg_stats *stats; /* required; outlives the pool */
    /* Called on the loop after each callback, for the owner's counters. */
    void (*completed)(void *owner);
    void *owner;
};

/* Connects every connection and prepares the statements. NULL with a
 * message in err. */
struct a2b_pg *a2b_pg_open(struct ev_loop *loop, const struct a2b_pg_config *cfg, char *err,
                           size_t errlen);
/* Closes the connections; requests not completed are dropped without
 * their callbacks. Not from inside a callback. */
void a2b_pg_close(struct a2b_pg *pg);

/* Queues op (arguments copied). 0: cb(res, ctx) will run on the loop. -1:
 * every connection is busy and queue_max requests already wait; cb will
 * never run. A lost connection fails its request with 503, and so does
 * every request while no connection is ready. */
int a2b_pg_submit(struct a2b_pg *pg, enum a2b_op op, const struct a2b_args *args, a2b_done_fn cb,
                  void *ctx);

/* Requests submitted whose callback has not run yet. */
unsigned a2b_pg_pending(const struct a2b_pg *pg);

#endif
