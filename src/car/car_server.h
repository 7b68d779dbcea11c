/* car_server.h - `shootout car-server`: the Car service of the gRPC-vs-REST
 * article over REST (HTTP/1.1 + JSON, car_rest.c) and gRPC (HTTP/2 +
 * protobuf, car_grpc.c) from one process.
 *
 * Threading: --threads N runs N workers, each with its own event loop and
 * its own SO_REUSEPORT listeners, sharing nothing but the configuration and
 * the connection count. Worker 0 runs on the calling thread and owns the
 * signals; SIGTERM/SIGINT make every worker drain (stop accepting, finish
 * the calls in progress, GOAWAY on HTTP/2) and close within the drain
 * timeout.
 *
 * TLS: one OpenSSL context, configured before any worker starts and never
 * changed after, serves every worker's connections; OpenSSL allows an
 * SSL_CTX to be shared so (its session cache locks itself).
 */
#ifndef SHOOTOUT_CAR_SERVER_H
#define SHOOTOUT_CAR_SERVER_H

#include "car/car_worker.h"

void car_server_config_defaults(struct car_server_config *cfg);

/* Runs until SIGTERM/SIGINT. Returns 0 after a clean stop, 1 if a listener
 * or worker could not be set up (logged). */
int car_server_run(const struct car_server_config *cfg);

#endif
