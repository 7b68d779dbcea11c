/* session_life.h - how a session begins and ends: created at CONNECT (or
 * at start, from the log), taken up again by a later connection, kept
 * offline for its Session Expiry Interval, ended; and the will a client's
 * connection leaves, published when the connection ends or after its Will
 * Delay Interval (MQTT 5), whichever the session's end does not precede.
 * Offline sessions with an end or a will in sight wait on their loop's
 * timer list, which that loop's sweep walks.
 */
#ifndef SHOOTOUT_SESSION_LIFE_H
#define SHOOTOUT_SESSION_LIFE_H

#include <stddef.h>
#include <stdint.h>

struct broker;
struct broker_loop;
struct conn;
struct msg;
struct session;

/* The session of client_id if loop l owns it, else NULL; *owner is the
 * loop that owns it (NULL: there is none). */
struct session *session_find(struct broker_loop *l, const uint8_t *client_id, size_t len,
                             struct broker_loop **owner);
/* A new session of client_id owned by loop l (*owner = l); NULL if
 * another loop made one since session_find said there was none (*owner is
 * that loop). */
struct session *session_new(struct broker_loop *l, const uint8_t *client_id, size_t len,
                            struct broker_loop **owner);
/* Drops a reference to s: its owner's when it ends, or one another loop
 * held (xloop.h, a waiting publisher); the last one frees it, on any loop
 * (its messages went when it ended). */
void session_put(struct session *s);
/* Removes the session's subscriptions, drops its messages, publishes a
 * will it still owes and frees it. */
void session_destroy(struct broker_loop *l, struct session *s);
/* The session's connection ended: its shared messages go to other members
 * (router_hand_off), then it ends (expiry 0), or stays with its timers
 * (session expiry, will delay) started. will is the connection's will to
 * publish (owned), or NULL; with b->defer_wills even one without a delay
 * waits on the timers. */
void session_detach(struct broker_loop *l, struct session *s, struct msg *will,
                    uint32_t will_delay_s);
/* The offline session s owes will (owned) at loop time will_ms, which may
 * have passed: session_sweep publishes it then. A will's expires_ms holds
 * its Message Expiry Interval alone (msg_new with now_ms 0) until it is
 * published, when the interval starts. */
void session_owe_will(struct broker *b, struct session *s, struct msg *will, uint64_t will_ms);
/* A connection took the session up again: stops its timers (a delayed will
 * is dropped, [MQTT-3.1.3-9]). */
void session_attach(struct broker *b, struct session *s, struct conn *c);
/* Periodic: publishes delayed wills and ends expired sessions. */
void session_sweep(struct broker_loop *l);

#endif
