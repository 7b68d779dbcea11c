/* run_mqtt.h - the MQTT part of `shootout run`: starts our broker and,
 * where installed, Mosquitto, each as a child process on a free loopback
 * port; runs the MQTT article's loadtest and pingtest grid against both,
 * broker after broker at every grid point; prints the article's tables
 * (thousands of msgs/s, mean +/- stddev, a row per broker and their ratio)
 * with each broker's CPU time per message, the pingtest's round trip and
 * each broker's peak RSS.
 */
#ifndef SHOOTOUT_RUN_MQTT_H
#define SHOOTOUT_RUN_MQTT_H

#include <stdbool.h>
#include <stdio.h>

#include "report/result.h"

/* Descriptors the largest grid point needs in this process: connections
 * plus stdio, epoll and eventfds. The job raises its limit before any
 * server starts, so that they inherit it too. */
#define RUN_MQTT_FDS_NEEDED (1000 + 64)

struct run_mqtt_opts {
    unsigned runs;    /* runs per grid point and broker */
    unsigned threads; /* client threads, one event loop each */
    double scale;     /* multiplies every message count */
    const char *exe;  /* our binary, which serves `broker` */
    bool no_peer;     /* measure our broker alone */
    FILE *out;        /* the tables; progress goes to stderr */
    const struct result_context *ctx;
    struct result_set *rows; /* the job's rows; this part's are appended */
};

/* Starts the brokers, measures, stops them and prints the tables. Returns
 * 0, 1 if a broker could not start or died (or ours did not exit 0 on
 * SIGTERM), or 3 if an experiment failed with the brokers up. */
int run_mqtt(const struct run_mqtt_opts *o);

#endif
