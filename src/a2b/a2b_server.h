/* a2b_server.h - `shootout a2b-server`: the a2b transfer-booking service of
 * the Gatling article (docs/a2b.md) over HTTP/1.1 (http_server.h) on the
 * asynchronous store (a2b_store.h), SQLite or PostgreSQL.
 *
 * Routes: every endpoint of the reference under /api/v1, the OpenAPI
 * document at /api/v1/openapi.json, Spring's health probes at
 * /actuator/health/{liveness,readiness}, and Prometheus text on /metrics.
 */
#ifndef SHOOTOUT_A2B_SERVER_H
#define SHOOTOUT_A2B_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "http/http_server.h"

struct a2b_server_config {
    struct http_server_config http; /* port 8080 by default, like the reference */
    const char *db;       /* SQLite file (default a2b.db) or a postgres:// / postgresql:// URI */
    uint64_t seed;        /* data set of a new database */
    double scale;         /* 1.0 = the reference's sizes */
    unsigned workers;     /* SQLite threads; 0 = 2 */
    unsigned pool;        /* PostgreSQL connections per loop; 0 = 4 */
    unsigned queue_max;   /* store queue; 0 = 1024 */
    bool init_only;       /* create and fill the database, then exit */
};

void a2b_server_config_defaults(struct a2b_server_config *cfg);

/* Whether db names a PostgreSQL database rather than a SQLite file. */
bool a2b_server_db_is_pg(const char *db);

/* Runs until SIGTERM/SIGINT (or, with init_only, until the database is
 * built). 0 after a clean stop, 1 on failure (logged). */
int a2b_server_run(const struct a2b_server_config *cfg);

/* The OpenAPI 3 document of the service (a2b_openapi.c). */
extern const char a2b_openapi_json[];

#endif
