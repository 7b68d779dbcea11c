/* mqtt_conns.h - `shootout bench mqtt-conns`: what a broker pays for
 * connections rather than messages (issue 14, "Connections at scale").
 *
 *   --idle N   opens N connections (CONNECT, CONNACK, then only the
 *              keepalive's PINGREQs), holds them --hold S seconds, and
 *              reports the broker's RSS before and after (from /proc with
 *              --server-pid) as bytes per idle connection, the connect
 *              rate and the failures;
 *   --storm R  connects R new clients a second for --duration S seconds
 *              while --established K clients run PINGREQ round trips, and
 *              reports refused and failed connects, the connect latency
 *              and the round trips before and during the storm (a stall
 *              shows as a max spike).
 * The engine is conn_engine.h's.
 */
#ifndef SHOOTOUT_MQTT_CONNS_H
#define SHOOTOUT_MQTT_CONNS_H

#include "report/result.h"

/* argv[0] is "mqtt-conns". Returns the exit code (see bench.h). */
int mqtt_conns_main(int argc, char **argv, const struct result_context *ctx);

#endif
