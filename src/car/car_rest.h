/* car_rest.h - the Car service over HTTP/1.1 + JSON: POST /v1/create with
 * the article's document, answered 201 {"status":"created"}. Keep-alive,
 * pipelining, Content-Length and chunked bodies, Expect: 100-continue,
 * header/body limits (431/413), 400/404/405/415 with JSON error bodies,
 * idle and slow-client timeouts.
 */
#ifndef SHOOTOUT_CAR_REST_H
#define SHOOTOUT_CAR_REST_H

#include <stdbool.h>

struct car_worker;

/* Serves the accepted, non-blocking socket fd (ownership passes). */
void car_rest_accept(struct car_worker *w, int fd);
/* Called once per loop iteration before waiting: flushes output. Returns
 * true if work is left over for the next iteration (the loop then does not
 * sleep). */
bool car_rest_prepare(struct car_worker *w);
/* Graceful shutdown: idle connections close now, busy ones after the
 * response in progress (sent with Connection: close). */
void car_rest_drain(struct car_worker *w);
/* Closes every connection at once (the drain timeout expired, or exit). */
void car_rest_close_all(struct car_worker *w);

#endif
