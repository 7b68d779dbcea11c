/* broker.h - the MQTT broker: configuration and entry point of
 * `shootout broker`.
 */
#ifndef SHOOTOUT_BROKER_H
#define SHOOTOUT_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/auth.h"
#include "broker/metrics.h"
/* Listeners: the default one (port, bind_address) and those a
 * configuration file adds with `listener PORT [ADDRESS]`. */
#define BROKER_LISTENERS_MAX 8
/* --threads at most (a loop per thread; more than the cores buys nothing). */
#define BROKER_THREADS_MAX 256
#define BROKER_PATH_MAX 256

/* How one listener's connections carry MQTT (mosquitto.conf's names). A
 * certfile makes it TLS. */
struct broker_listener {
    int port;                       /* unused for the default listener */
    char bind[256];                 /* "" = the default listener's address */
    bool websockets;                /* protocol websockets */
    bool require_certificate;
    bool use_identity_as_username;  /* the client certificate's CN is the username */
    char certfile[BROKER_PATH_MAX], keyfile[BROKER_PATH_MAX];
    char cafile[BROKER_PATH_MAX], capath[BROKER_PATH_MAX];
    char tls_version[16];           /* "" = tlsv1.2 */
};

struct broker_config {
    const char *bind;          /* listen address; default 127.0.0.1 */
    char bind_storage[256];    /* holds bind when it came from a flag or a file */
    int port;                  /* default 1883; 0 picks a free port */
    uint32_t threads;          /* event loops; 0 = one per online CPU (default 1) */
    uint32_t accept;           /* enum srv_accept: how connections reach the loops */
    uint32_t max_connections;  /* simultaneous clients */
    uint32_t max_per_address;  /* connections from one address; 0 = no limit (core/srv.h) */
    uint32_t max_packet_size;  /* whole packet, bytes, in either direction */
    uint32_t max_queued;       /* per session, QoS 1/2 waiting for the window */
    uint32_t max_inflight;     /* per session, unacknowledged QoS 1/2 out */
    size_t max_output;         /* per connection pending output, bytes */
    uint32_t max_subscriptions; /* per session; 0 = no limit */
    bool queue_qos0;           /* queue QoS 0 for offline persistent sessions */
    uint32_t connect_timeout_ms; /* time allowed between accept and CONNECT */
    uint32_t max_keepalive;    /* seconds a client's keep alive may be at most; 0 = no limit */
    uint32_t packet_timeout_ms; /* a packet's time from its first byte, before the rate applies */
    uint32_t min_packet_rate;  /* bytes a second a packet must come at after packet_timeout */
    uint32_t max_retained_messages; /* retained topics, all clients together */
    size_t max_retained_bytes; /* their topics and payloads, bytes */
    size_t max_partial_bytes;  /* input held for partial packets, all connections together */
    uint32_t sys_interval_s;   /* $SYS/broker/... update period; 0 = off */
    struct {                   /* docs/persistence.md */
        bool on;
        char location[1024];   /* data directory; default broker-data */
        uint32_t sync_interval_ms; /* 0: fdatasync every commit */
    } persistence;
    struct {                   /* docs/cluster.md; urls "" = no cluster */
        char urls[1024];       /* nats://HOST:PORT[,...] */
        char name[128];        /* cluster_name: in the NATS connection's name */
        char prefix[129];      /* cluster_prefix: the subjects' (SUBJECT_PREFIX_MAX) */
        char node[128];        /* node_name; "" = hostname and port, or a random id */
        uint32_t replicas;     /* cluster_replicas: of the KV buckets (kv_retain.h) */
    } cluster;
    struct broker_auth_config auth; /* password_file, acl_file, allow_anonymous */
    struct broker_obs_config obs;   /* metrics_port, connection_messages */
    struct {
        struct broker_listener v[BROKER_LISTENERS_MAX]; /* v[0]: the default listener */
        uint32_t n;                                     /* >= 1 */
    } listeners;
};

/* Fills in the defaults documented in docs/broker.md. */
void broker_config_defaults(struct broker_config *cfg);

/* Runs the broker until SIGTERM or SIGINT. Returns a process exit code:
 * 0 after a graceful shutdown, 1 if it could not start. */
int broker_run(const struct broker_config *cfg);

#endif
