/* xloop.h - what one broker loop hands another (docs/broker.md,
 * "Threads"): deliveries to sessions the other loop owns, connections whose
 * session it owns, and requests to park. A loop appends to its own outbox
 * for each other loop while it works, with no lock; at the end of its
 * iteration (xloop_flush) each non-empty outbox is handed over with one
 * lock of the target's inbox and at most one eventfd write, when that
 * inbox was empty: one wake-up per batch, not per message. The target takes
 * its whole inbox at once (xloop_take). Entries keep their order per pair
 * of loops, so a publisher's messages reach a subscriber in order.
 *
 * Each loop counts the entries it handed each other loop and each loop
 * those it took from each, so a producer that never waits for a session
 * (the cluster inbox, on the home loop) can see how many of its entries
 * wait to be taken and stop producing above a mark (xloop_over); the
 * taker wakes it once it took some.
 */
#ifndef SHOOTOUT_XLOOP_H
#define SHOOTOUT_XLOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "broker/session.h"

enum xloop_kind {
    XLOOP_DELIVER, /* m to session p, as d says (session_deliver) */
    XLOOP_CONN,    /* connection p, before CONNECT, for the session it names */
    XLOOP_RECHECK, /* a session another loop's publishers wait for drained */
    XLOOP_STALL,   /* session p (a reference) stalls a publisher whose grace is spent */
    XLOOP_PARK,    /* stop until the world resumes (broker_stop_world) */
};

struct xloop_entry {
    uint8_t kind;      /* enum xloop_kind */
    void *p;           /* XLOOP_DELIVER, _STALL: a session reference; XLOOP_CONN: the connection */
    struct msg *m;     /* XLOOP_DELIVER: a message reference */
    struct delivery d; /* XLOOP_DELIVER: sub_ids owned (mem_free) */
    void *aux;         /* XLOOP_CONN: its srv ticket (owned); XLOOP_PARK: the stop's number */
    bool publisher;    /* XLOOP_DELIVER: from a client's PUBLISH, which may be held */
};

struct xloop_box {
    struct xloop_entry *v;
    uint32_t n, cap;
};

struct xloop {
    unsigned self, n;     /* this loop's index, and how many there are */
    struct xloop_box *out; /* [n]: this iteration's entries for each loop */
    uint64_t *sent;       /* [n]: entries handed to each loop (this loop's alone) */
    uint64_t *took;       /* [n]: entries taken from each loop (atomic: that loop reads it) */
    pthread_mutex_t lock; /* in, in_from, wakes */
    struct xloop_box in;  /* handed to this loop, not yet taken */
    uint32_t *in_from;    /* [2n]: of `in`, how many from each loop; then the take's copy */
    int efd;              /* eventfd, written when `in` turns non-empty */
    uint64_t wakes;       /* eventfd writes to this loop */
    bool over;            /* atomic: above its mark, it waits for takers (xloop_over) */
};

/* Sets x up as loop self of n; -1 (errno) if no eventfd. */
int xloop_init(struct xloop *x, unsigned self, unsigned n);
/* Frees x (its boxes must be empty: taken and handled). */
void xloop_fini(struct xloop *x);

/* xloop_push's growth, out of line. */
void xloop_grow(struct xloop_box *o);

/* A new entry at the end of x's outbox to loop `to` (not x->self), for
 * the caller to fill. */
static inline struct xloop_entry *xloop_push(struct xloop *x, unsigned to)
{
    struct xloop_box *o = &x->out[to];
    if (__builtin_expect(o->n == o->cap, 0))
        xloop_grow(o);
    return &o->v[o->n++];
}

/* Hands each non-empty outbox of *all[self] to its loop's inbox; returns
 * how many loops it woke (their inbox was empty). */
unsigned xloop_flush(struct xloop *const *all, unsigned self);
/* Moves the inbox of *all[self] into *box, which must be empty (its buffer
 * is reused), counts what it took from each loop, and wakes (eventfd) a
 * loop that waits above its mark; false if there was nothing. */
bool xloop_take(struct xloop *const *all, unsigned self, struct xloop_box *box);
/* Entries *all[self] holds or handed over that their loops did not take
 * yet. */
uint64_t xloop_untaken(struct xloop *const *all, unsigned self);
/* Whether *all[self] has more than mark entries not taken; if so, the
 * next take of some of them wakes it (so it checks again after its next
 * iteration). */
bool xloop_over(struct xloop *const *all, unsigned self, uint64_t mark);
/* Clears x's eventfd, readable since a batch was handed over; the loop
 * then takes its inbox. */
void xloop_clear(struct xloop *x);
/* Entries x holds for loop `to`, not yet handed over. */
static inline uint32_t xloop_pending(const struct xloop *x, unsigned to) { return x->out[to].n; }

#endif
