/* http_open.h - `shootout bench http-open`: a Gatling-style HTTP load test.
 * Virtual users walk a scenario (scenario.h), started by an open or closed
 * injection profile (inject.h), each over its own keep-alive connection
 * (http_client.h), on --threads event loops. Reported: per-request-name
 * and global statistics, errors by class (the load generator's own
 * failures apart), a per-second series (active users, requests/s,
 * responses/s OK and KO, p95) and the saturation point computed from it,
 * and the server's (and optionally PostgreSQL's) CPU, RSS and threads.
 * docs/http_open.md defines every figure.
 */
#ifndef SHOOTOUT_HTTP_OPEN_H
#define SHOOTOUT_HTTP_OPEN_H

#include <stdint.h>

#include "bench/result.h"

int http_open_main(int argc, char **argv, const struct result_context *ctx);

/* One second of the series, as the saturation point reads it. */
struct ho_point {
    double active;    /* Gatling's active users in that second */
    double responses; /* responses per second, OK and KO */
    double p95_ms;    /* p95 of the OK responses that ended in that second */
};

/* The saturation point: the first second s at which, over the next w
 * seconds, the w-second trailing means of responses/s rose by less than
 * 5 % while those of p95 rose by more than 20 % (and by at least 1 ms).
 * Returns s, or -1 if the series never saturates; the active users at s are
 * the saturation point's value. */
int ho_saturation(const struct ho_point *series, unsigned n, unsigned w);

/* Boot-up time: execs argv[0] with argv (a server), then polls
 * http://host:port/path with GET until it answers 200, at most timeout_s.
 * Returns the seconds from just before the exec to that answer, or a
 * negative value on failure; *pid receives the server's pid (also on a
 * timeout, for the caller to stop it), or 0 if it could not start. */
double http_open_boot_time(char *const argv[], const char *host, int port, const char *path,
                           double timeout_s, int *pid);

#endif
