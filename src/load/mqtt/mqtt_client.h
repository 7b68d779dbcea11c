/* mqtt_client.h - the MQTT client engine of the load generators (MQTT
 * 3.1, 3.1.1 or 5.0, one version per run): many connections per thread on one
 * event loop each, built so that the client is never the bottleneck it
 * measures.
 *
 * A run owns `conns` connections, allocated up front and spread over
 * `threads` pthreads (connection i lives on thread i % threads). Each
 * connection walks connect -> CONNACK -> SUBSCRIBE -> SUBACK -> ready on its
 * own; once every connection of the run is ready, the measured phase starts
 * on every thread at once (mc_ops.start). The engine answers the QoS flows
 * itself (PUBACK for QoS 1, PUBREC -> PUBREL, PUBREL -> PUBCOMP), reads all
 * a socket has per wake-up, parses every packet in it, and flushes each
 * connection's output once per loop iteration with writev.
 *
 * The experiment drives traffic through callbacks and says when its work is
 * done: the run ends when mc_complete() has been called `work` times, when a
 * connection fails, or when nothing arrives for the timeout.
 *
 * MQTT 5 is spoken in its plainest form: no properties except a Session
 * Expiry Interval for kept sessions; the broker's Receive Maximum bounds
 * the inflight window; any reason code of 0x80 or more (CONNACK, SUBACK,
 * the acknowledgements, a DISCONNECT from the broker) fails the run.
 *
 * Threading: callbacks run on the connection's thread and may only touch
 * that connection (and state the experiment keeps per connection or per
 * thread); everything an experiment records is safe to read from the main
 * thread after mc_run_exec() returns.
 */
#ifndef SHOOTOUT_MQTT_CLIENT_H
#define SHOOTOUT_MQTT_CLIENT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqtt/mqtt_codec.h"

/* Bounds per connection: pending output beyond which a producer is not
 * asked for more (the socket buffer holds the rest), and unacknowledged
 * QoS 1/2 publishes. Packet ids go round in sequence, so with at most 256
 * outstanding an id comes back only 65535 publishes later, long after the
 * broker acknowledged it. */
#define MC_OUT_HIGH (64 * 1024)
#define MC_INFLIGHT 256

struct mc_conn;
struct mc_run;

struct mc_ops {
    /* The measured phase begins: called once for every connection, on its
     * thread, after all of the run's connections are ready. */
    void (*start)(struct mc_conn *c, void *user);
    /* A PUBLISH arrived; its acknowledgement is already queued. p points
     * into the read buffer and is valid during the call only. */
    void (*message)(struct mc_conn *c, const struct mqtt_publish *p, void *user);
    /* For producers (mc_produce): the connection has room (mc_room) to
     * publish more. Return false once it has nothing left to send. May be
     * NULL if the experiment makes no producers. */
    bool (*fill)(struct mc_conn *c, void *user);
    /* One of c's QoS 1/2 publishes is acknowledged (PUBACK; PUBCOMP for
     * QoS 2). May be NULL. */
    void (*acked)(struct mc_conn *c, void *user);
};

/* What happens to a connection's session (its subscriptions and the QoS 1/2
 * messages for it) when the connection ends. */
enum mc_session {
    /* Ends with the connection: clean session 1 (3.1.1), Clean Start 1 and
     * no Session Expiry Interval (5). A stored session of the same client
     * id is discarded. */
    MC_SESSION_CLEAN,
    /* Kept by the broker: clean session 0 (3.1.1), Clean Start 0 and
     * mc_config.session_expiry (5). */
    MC_SESSION_KEEP,
    /* As KEEP, and the broker must still have the session (CONNACK session
     * present 1), else the run fails as a check (its messages are lost). */
    MC_SESSION_RESUME,
};

struct mc_config {
    const char *host; /* not owned; a numeric address avoids a lookup per connection */
    int port;
    unsigned conns, threads;
    /* The run's connections are first .. first + conns - 1 (their mc_index
     * and client id), so that an experiment can run its connections in
     * groups (subscribers, then publishers) under fixed ids. */
    unsigned first;
    const char *client_id_prefix; /* ids are "<prefix>-<i>"; not owned */
    uint32_t max_packet;          /* largest packet accepted from the broker */
    uint64_t work;                /* mc_complete() calls that end the run */
    uint8_t version;              /* protocol level: 3 (MQTT 3.1), 4 (3.1.1) or 5 (5.0) */
    uint32_t session_expiry;      /* MQTT 5 Session Expiry Interval (s) of kept sessions */
    struct trace *trace;          /* --trace: every packet in and out; NULL: none */
    struct progress *progress;    /* the run's progress line; NULL: none */
    /* What the progress line counts to: PUBLISH packets received (0: the
     * units of work instead). */
    uint64_t progress_total;
};

enum mc_status {
    MC_DONE,    /* all work completed */
    MC_TIMEOUT, /* nothing arrived for the timeout */
    MC_FAILED,  /* a connection failed, or the experiment called mc_fail */
};

/* Why a run failed, counted by class for the result's errors fields. */
enum mc_fail_kind {
    MC_FAIL_CONNECT,  /* could not connect, refused CONNACK or SUBACK, closed or
                       * disconnected (MQTT 5 DISCONNECT) by the broker */
    MC_FAIL_PROTOCOL, /* the broker broke the protocol, or refused a publish
                       * (MQTT 5 reason code >= 0x80 in an acknowledgement) */
    MC_FAIL_CHECK,    /* the experiment's own check: e.g. a message too many; or a
                       * session to resume the broker no longer had */
};

struct mc_stats {
    /* CLOCK_MONOTONIC nanoseconds: before the first connect, when the last
     * connection became ready (0 if that never happened), and when the
     * last unit of work completed (0 unless MC_DONE). */
    uint64_t t_start_ns, t_ready_ns, t_end_ns;
    uint64_t published; /* PUBLISH packets sent */
    uint64_t received;  /* PUBLISH packets received */
    unsigned ready;     /* connections that reached ready */
    unsigned fail_connect, fail_protocol, fail_check;
    enum mc_fail_kind fail_kind;
    char error[256]; /* the first failure, if any */
};

/* ---- the run, driven from the main thread ------------------------------- */

struct mc_run *mc_run_new(const struct mc_config *cfg, const struct mc_ops *ops, void *user);
/* Connection i (first <= i < first + conns) subscribes to filter (copied)
 * at qos once connected; without a call it only connects. Before
 * mc_run_exec. */
void mc_set_filter(struct mc_run *run, unsigned i, const char *filter, uint8_t qos);
/* Connection i connects to host (numeric, not owned, lasting as long as
 * the run) and port instead of the run's cfg.host and cfg.port: how an
 * experiment spreads its connections over several brokers. Before
 * mc_run_exec. */
void mc_set_target(struct mc_run *run, unsigned i, const char *host, int port);
/* Connection i's session (default MC_SESSION_CLEAN). Before mc_run_exec. */
void mc_set_session(struct mc_run *run, unsigned i, enum mc_session s);
/* Runs the threads until the end (see enum mc_status), closing every
 * connection before it returns. tick, if not NULL, is called on this thread
 * about every 100 ms while the run goes on (for sampling). */
enum mc_status mc_run_exec(struct mc_run *run, unsigned timeout_s, void (*tick)(void *),
                           void *tick_arg);
/* PUBLISH packets received so far, as of each thread's last loop
 * iteration: for a tick to sample while the run goes on. */
uint64_t mc_run_received(struct mc_run *run);
/* Valid after mc_run_exec. */
void mc_run_stats(const struct mc_run *run, struct mc_stats *st);
void mc_run_free(struct mc_run *run);

/* ---- calls for the callbacks, on the connection's thread ---------------- */

unsigned mc_index(const struct mc_conn *c);
unsigned mc_thread(const struct mc_conn *c);

/* Queues a PUBLISH of payload[0..len) on topic at qos (a packet id and a
 * place in the inflight window for QoS 1 and 2). Returns where the copied
 * payload sits in the queued packet, so that the caller may patch it (a
 * sequence number, a timestamp) before its next call on c. */
uint8_t *mc_publish(struct mc_conn *c, struct mqtt_bytes topic, const void *payload, size_t len,
                    uint8_t qos);
/* True while c may queue another PUBLISH without passing its bounds:
 * MC_OUT_HIGH bytes of pending output and MC_INFLIGHT unacknowledged
 * QoS 1/2 messages (MQTT 5: or the broker's Receive Maximum, if lower). */
bool mc_room(const struct mc_conn *c);
/* Makes c a producer: fill() is called whenever c has room, until it
 * returns false. */
void mc_produce(struct mc_conn *c);
/* One unit of the run's work is done. */
void mc_complete(struct mc_conn *c);
/* Ends the run as failed, with a message naming the problem. */
void mc_fail(struct mc_conn *c, enum mc_fail_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


#endif
