/* persist_load.h - at start, the broker's state rebuilt from its log
 * (persist.h writes it): sessions with their subscriptions, wills and
 * messages queued or in flight, received QoS 2 ids, the retained store.
 */
#ifndef SHOOTOUT_PERSIST_LOAD_H
#define SHOOTOUT_PERSIST_LOAD_H

struct broker;

/* broker.c: opens the log in cfg->persistence.location, rebuilds the
 * broker's state from it and turns persistence on (b->persist). What fell
 * due while the broker was down (wills, ends of sessions) happens before it
 * returns. Returns -1 (logged) if the directory cannot be used at all,
 * e.g. another broker holds it; a damaged log is reported, never fatal. */
int persist_load(struct broker *b);

#endif
