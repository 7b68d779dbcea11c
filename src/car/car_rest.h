/* car_rest.h - the Car service over HTTP/1.1 + JSON: POST /v1/create with
 * the article's document, answered 201 {"status":"created"}; GET /healthz.
 * An app of http_proto.h, served by each worker's http_engine.h engine
 * (keep-alive, pipelining, Content-Length and chunked bodies, Expect:
 * 100-continue, limits, timeouts); this module routes and builds the Car
 * answers, 400/404/405/413/415 with JSON error bodies (docs/car_server.md).
 */
#ifndef SHOOTOUT_CAR_REST_H
#define SHOOTOUT_CAR_REST_H

#include "http/http_proto.h"

struct car_worker;

/* Synchronous: every request is answered before its handler returns,
 * without allocating. req->worker is the struct car_worker, whose cfg
 * (max_body) is read and whose stats count every answer. */
extern const struct http_app car_rest_app;

/* Sets w->rest up on w->loop. */
void car_rest_start(struct car_worker *w);

#endif
