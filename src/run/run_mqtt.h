/* run_mqtt.h - the MQTT part of `shootout run`: our broker, then each
 * chosen MQTT contender (contender.h) that can run here, one at a time,
 * each a child process on a free loopback port; the MQTT article's
 * loadtest and pingtest grid against each; the article's tables
 * (thousands of msgs/s, mean +/- stddev, a row per broker in the
 * registry's order, the ratio of ours to the best other broker in each
 * cell, the article's figures for the brokers that cannot be had here
 * quoted beneath) with each broker's CPU time per message, the
 * pingtest's round trip and each broker's peak RSS; with a cluster, its
 * tables beside our single node's.
 */
#ifndef SHOOTOUT_RUN_MQTT_H
#define SHOOTOUT_RUN_MQTT_H

#include <stdbool.h>
#include <stdio.h>

#include "report/result.h"
#include "run/contender.h"

/* Descriptors the largest grid point needs in this process: connections
 * plus stdio, epoll and eventfds. The job raises its limit before any
 * server starts, so that they inherit it too. */
#define RUN_MQTT_FDS_NEEDED (1000 + 64)

#define RUN_MQTT_CELL_CAP_S 20.0 /* --cell-cap's default */
#define RUN_MQTT_MIN_RUNS 2u     /* a capped cell's runs, so that it keeps a stddev */

struct run_mqtt_opts {
    unsigned runs;    /* runs per grid point and broker */
    unsigned threads; /* client threads, one event loop each */
    double scale;     /* multiplies every message count */
    unsigned timeout_s; /* per run, 0: the experiments' own */
    /* A contender's cell (not ours) gets fewer runs, RUN_MQTT_MIN_RUNS at
     * least, when its runs would take longer than this by the time a run
     * took in its previous cell of the experiment; 0: no cap. */
    double cell_cap_s;
    /* --cluster: this many of our brokers on one nats-server, raced after
     * the contenders with every message crossing nodes; 0: none. */
    unsigned cluster;
    const char *exe;  /* our binary, which serves `broker` */
    const char *version; /* ours */
    const struct contender_roster *roster;
    FILE *out;        /* the tables; progress goes to stderr */
    const struct result_context *ctx;
    struct result_set *rows; /* the job's rows; this part's are appended */
};

/* Measures the brokers and prints the tables. Returns 0, 1 if our broker
 * could not start or died (or did not exit 0 on SIGTERM), or 3 if an
 * experiment against it failed with it up. A contender's failures are
 * only its cells' (and a line): they never change the exit code. */
int run_mqtt(const struct run_mqtt_opts *o);

#endif
