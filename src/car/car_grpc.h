/* car_grpc.h - the Car service over gRPC (HTTP/2 cleartext with prior
 * knowledge, or TLS with ALPN h2; nghttp2):
 * /com.stevenpg.rvg.MessageService/send answered Result{status:"successful"}
 * as in the article, and /grpc.health.v1.Health/Check.
 */
#ifndef SHOOTOUT_CAR_GRPC_H
#define SHOOTOUT_CAR_GRPC_H

#include <stdbool.h>

struct car_worker;

/* Serves the accepted, non-blocking socket fd (ownership passes). */
void car_grpc_accept(struct car_worker *w, int fd);
/* Once per loop iteration before waiting. Each wake-up of a connection
 * writes what it produced itself (one write), so nothing is ever left for
 * this step: returns false. Kept so that the worker drives both protocol
 * modules the same way. */
bool car_grpc_prepare(struct car_worker *w);
/* Graceful shutdown: GOAWAY on every connection; each closes when its
 * streams in progress are done. */
void car_grpc_drain(struct car_worker *w);
/* Closes every connection at once. */
void car_grpc_close_all(struct car_worker *w);

#endif
