/* persist.h - the broker's state made durable: every change to a session
 * that outlives its connection (its subscriptions, its QoS 1/2 messages in
 * either direction) and to the retained messages becomes a plog record as
 * it happens, and at start the log rebuilds them (persist_load.h;
 * docs/persistence.md, "Wiring").
 *
 * Each record is appended lazy or not (struct plog_rec.lazy): lazy when
 * nothing the broker sends depends on its surviving a power cut, so that
 * output waits for fdatasync only when it must; docs/persistence.md ("What
 * waits for the sync") gives the argument for each.
 *
 * The hooks are inline tests ahead of the calls: of b->persist, of
 * s->persisted (true only for a session whose record is in the log) or of
 * an entry id (non-zero only for a copy in the log), so with persistence
 * off the broker pays one predictable branch per hook.
 *
 * Any loop may call them (one log for all, under a mutex with more than
 * one loop; persist.c); each loop calls persist_commit before it flushes.
 */
#ifndef SHOOTOUT_PERSIST_H
#define SHOOTOUT_PERSIST_H

#include "broker/broker_int.h"
#include "broker/session.h"

/* persist_load.c, once the log is open and replayed: persistence is on
 * with log; then the received QoS 2 ids it rebuilt, each with its entry. */
struct plog;
void persist_start(struct broker *b, struct plog *log);
void persist_qos2_restored(struct broker *b, struct session *s, uint16_t packet_id, uint64_t entry);
/* A wall-clock time from the log as a loop time (at least 1: 0 means never). */
uint64_t persist_to_loop(const struct broker *b, uint64_t at_ms);
/* Commits what is pending and closes the log; sessions destroyed after it
 * are not removed from the log. */
void persist_close(struct broker *b);
/* From the sweep timer (250 ms): the sync of lazy records (plog_maintain),
 * compaction upkeep, and the periodic sync. */
void persist_tick(struct broker *b);

/* conn_loop.c, before any output is flushed: makes the records appended so far
 * durable. False if that failed: nothing may be acknowledged yet. */
bool persist_commit_(struct broker *b);
static inline bool persist_commit(struct broker *b) { return !b->persist || persist_commit_(b); }

/* A session connected, or went offline (its expiry clock started): its
 * record, or its removal if it now ends with its connection. */
void persist_session_(struct broker *b, struct session *s);
static inline void persist_session(struct broker *b, struct session *s)
{
    if (b->persist)
        persist_session_(b, s);
}
void persist_session_del_(struct broker *b, struct session *s);
static inline void persist_session_del(struct broker *b, struct session *s)
{
    if (s->persisted)
        persist_session_del_(b, s);
}

void persist_sub_(struct broker *b, struct session *s, const uint8_t *filter, size_t len,
                  uint8_t options, uint32_t sub_id, bool add);
static inline void persist_sub(struct broker *b, struct session *s, const uint8_t *filter,
                               size_t len, uint8_t options, uint32_t sub_id, bool add)
{
    if (s->persisted)
        persist_sub_(b, s, filter, len, options, sub_id, add);
}

/* m became the retained message of its topic (or cleared it, if empty). */
void persist_retain_(struct broker *b, struct msg *m);
static inline void persist_retain(struct broker *b, struct msg *m)
{
    if (b->persist)
        persist_retain_(b, m);
}

/* A copy of m to s was queued (state PLOG_QUEUED: QoS 0 too, with
 * --queue-qos0) or sent (PLOG_PUBLISH_SENT with its packet id): records
 * it, or its new state if d->entry says it is in the log already. Returns
 * the entry id to keep in the delivery, 0 for a copy that is not persisted
 * (its session is not). */
uint64_t persist_out_(struct broker *b, struct session *s, struct msg *m,
                      const struct delivery *d, uint8_t state, uint16_t packet_id);
static inline uint64_t persist_out(struct broker *b, struct session *s, struct msg *m,
                                   const struct delivery *d, uint8_t state, uint16_t packet_id)
{
    return d->entry || s->persisted ? persist_out_(b, s, m, d, state, packet_id) : 0;
}
/* A QoS 1/2 copy of m to s, a persistent session of another loop, as the
 * publisher's loop routes it (or a QoS 0 one to queue for it offline, with
 * --queue-qos0): its ENTRY (queued) is appended here, so that the
 * publisher's PUBACK/PUBREC, which leaves from this loop, waits for it;
 * the entry id travels with the delivery, and s's loop records what
 * becomes of it. 0 if nothing was appended. */
uint64_t persist_remote_(struct broker *b, struct session *s, struct msg *m,
                         const struct delivery *d);
static inline uint64_t persist_remote(struct broker *b, struct session *s, struct msg *m,
                                      const struct delivery *d)
{
    return b->persist ? persist_remote_(b, s, m, d) : 0;
}
/* A sent QoS 2 copy got its PUBREC (PUBREL sent). Not lazy: were it lost,
 * the PUBLISH would go again after a restart, under a packet id the
 * subscriber has released, and be delivered twice. */
void persist_entry_state_(struct broker *b, uint64_t entry, uint8_t state, uint16_t packet_id,
                          bool lazy);
static inline void persist_pubrel_sent(struct broker *b, const struct delivery *d, uint16_t packet_id)
{
    if (d->entry)
        persist_entry_state_(b, d->entry, 3 /* PLOG_PUBREL_SENT */, packet_id, false);
}
/* The copy is done with: acknowledged, dropped, expired or handed on;
 * released: it is a QoS 2 copy whose PUBCOMP came. Lazy for QoS 1 (lost,
 * the message goes again, with DUP if it went before) and for a released
 * copy (lost, its PUBREL goes again, which the subscriber answers with
 * PUBCOMP). Not for a QoS 0 copy, which goes out once at most, nor for a
 * QoS 2 copy before its PUBREC: handed to another member of a shared
 * group, or refused by the subscriber, it must not come back. */
void persist_entry_del_(struct broker *b, uint64_t entry, bool lazy);
static inline void persist_entry_del(struct broker *b, const struct delivery *d, bool released)
{
    if (d->entry)
        persist_entry_del_(b, d->entry, d->qos == 1 || released);
}

/* A QoS 2 PUBLISH from s's client was taken (PUBREC to be sent) / its
 * PUBREL came. */
void persist_qos2_in_(struct broker *b, struct session *s, uint16_t packet_id, bool add);
static inline void persist_qos2_in(struct broker *b, struct session *s, uint16_t packet_id, bool add)
{
    if (s->persisted)
        persist_qos2_in_(b, s, packet_id, add);
}

#endif
