/* conn_engine.h - the client engine of `shootout bench mqtt-conns`: many
 * MQTT 3.1.1 connections that do little but exist, on several epoll
 * threads, so that what is measured is the broker's cost of holding and
 * accepting connections, not the client's.
 *
 * Unlike mqtt_client.h's engine, built for traffic, a connection here is a
 * few dozen bytes (a descriptor, a state and a partial packet of at most
 * 15 bytes: only CONNACK, SUBACK and PINGRESP ever come back), and each
 * binds to one of several loopback source addresses (127.0.0.1 ..
 * 127.0.0.S), because one source address has only the ephemeral port range
 * (about 28,000 ports) towards one broker port.
 *
 * Three groups of connections, each split evenly over the threads:
 *   idle        connect as fast as a window of handshakes per thread
 *               allows, then stay, sending PINGREQ every keepalive / 2;
 *   established connect like the idle ones, then run a ping loop: PINGREQ,
 *               PINGRESP, a gap, the next PINGREQ; the round trips go into
 *               a "before" or a "during" histogram by the phase;
 *   storm       connect at a fixed rate once the storm phase starts
 *               (connection g at storm start + g / rate), optionally
 *               SUBSCRIBE, then DISCONNECT and close, or stay.
 * The main thread moves the run through its phases (ce_set_phase) and
 * reads the counters while it runs (ce_progress).
 */
#ifndef SHOOTOUT_CONN_ENGINE_H
#define SHOOTOUT_CONN_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/hist.h"

/* The most source addresses (127.0.0.1 .. 127.0.0.254). */
#define CE_MAX_SOURCES 254
/* Connections per source address the automatic choice plans for: below the
 * default ephemeral range (32768-60999, 28,232 ports), with room for
 * TIME_WAIT sockets of closed storm connections. */
#define CE_PER_SOURCE 16000

struct ce_config {
    const char *host; /* numeric; 127.x.y.z spreads over sources, anything else binds none */
    int port;
    unsigned threads;
    unsigned sources;   /* 1 .. CE_MAX_SOURCES */
    unsigned idle;      /* idle connections */
    unsigned established;
    uint64_t storm;     /* storm connections in all */
    double storm_rate;  /* storm connections per second */
    bool storm_stay;    /* storm connections stay connected */
    bool storm_subscribe;
    uint16_t keepalive_s;
    uint32_t ping_gap_us;  /* between an established client's round trips */
    unsigned timeout_s;    /* a handshake not answered within it fails */
    const char *id_prefix; /* client ids "<prefix>-<i>"; not owned */
};

enum ce_phase {
    CE_CONNECT, /* idle and established connections connect */
    CE_BEFORE,  /* established round trips count as "before" */
    CE_STORM,   /* storm connections connect; round trips count as "during" */
    CE_STOP,    /* every thread closes its connections and ends */
};

/* Why connections failed. */
enum ce_fail {
    CE_REFUSED, /* connect() refused, or CONNACK / SUBACK refused */
    CE_CLOSED,  /* the broker closed or reset the connection */
    CE_TIMEOUT, /* no answer within the timeout */
    CE_LOCAL,   /* the client could not make the connection: no port, no descriptor */
    CE_NFAIL
};

/* A group's figures, summed over the threads. */
struct ce_counts {
    uint64_t started, connected, failed[CE_NFAIL];
    uint64_t open; /* connected and not lost since */
    uint64_t lost; /* of failed[]: connected first, then lost */
};

struct ce_result {
    struct ce_counts idle, established, storm;
    struct hist connect_ns;     /* connect() to CONNACK, idle and storm connections */
    struct hist storm_ns;       /* of the storm connections alone */
    struct hist rtt_ns[2];      /* established round trips before / during the storm */
    uint64_t t_storm_first_ns, t_storm_last_ns; /* first connect started, last answered */
    char error[200];            /* the first failure, for the report */
};

struct ce_run;

/* The source address of connection i among n sources, "127.0.0.<1 + i % n>". */
void ce_source_addr(unsigned i, unsigned nsources, char out[16]);
/* How many sources conns connections need (CE_PER_SOURCE each). */
unsigned ce_sources_for(uint64_t conns);
/* When storm connection g is due, nanoseconds after the storm starts. */
uint64_t ce_storm_due_ns(uint64_t g, double rate);

/* Starts the threads, in phase CE_CONNECT. NULL with the reason in err. */
struct ce_run *ce_start(const struct ce_config *cfg, char *err, size_t errlen);
void ce_set_phase(struct ce_run *run, enum ce_phase phase);
/* The figures so far (from counters each thread publishes once per loop
 * iteration); the histograms are filled only after ce_finish. */
void ce_progress(struct ce_run *run, struct ce_counts *idle, struct ce_counts *established,
                 struct ce_counts *storm);
/* Moves to CE_STOP, joins the threads and merges their figures into r.
 * Frees the run. */
void ce_finish(struct ce_run *run, struct ce_result *r);

#endif
