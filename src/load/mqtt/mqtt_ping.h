/* mqtt_ping.h - `shootout bench mqtt-ping`, the source article's pingtest:
 * P pairs and W wildcard subscribers. In pair i a responder subscribes to
 * pingtest/<i>/request and answers every request on pingtest/<i>/reply; its
 * requester subscribes to the reply topic and sends M requests one at a
 * time, each after the previous reply arrived. Every wildcard subscriber,
 * on pingtest/0/#, must receive all 2M messages of pair 0.
 *
 * Throughput counts requests delivered to responders plus replies delivered
 * to requesters (2 M P, as the article), per second from all subscriptions
 * established to the last message. Round-trip latency, request queued to
 * reply received, goes into per-thread histograms merged at the end.
 */
#ifndef SHOOTOUT_MQTT_PING_H
#define SHOOTOUT_MQTT_PING_H

#include "load/bench.h"
#include "load/mqtt/mqtt_bench.h"

struct mqtt_ping_opts {
    struct mqtt_bench_opts mqtt; /* mqtt.payload_size at least 8 */
    unsigned pairs, wsubs;
};

/* argv[0] is "mqtt-ping". Returns the exit code (see bench.h). */
int mqtt_ping_main(int argc, char **argv, const struct result_context *ctx);

/* The experiment itself, for callers that set the options up themselves
 * (o->host numeric, o->target named, see bench_finish_options): o->runs
 * repetitions of p. Appends the rows to out and returns the exit code. */
int mqtt_ping_exec(const struct bench_opts *o, const struct mqtt_ping_opts *p,
                   const struct result_context *ctx, struct result_set *out);

#endif
