/* pg_probe.h - CPU time and memory of one PostgreSQL server over a
 * measured window (`bench http-open --pg-sample`): its postmaster and the
 * processes it started (backends, background workers), found again at each
 * sample since backends come and go. Backends that exit inside the window
 * count too: the postmaster reaps them, and the kernel adds their CPU time
 * to its cutime and cstime, which the probe reads with its own.
 *
 * The postmaster is named by its pid, or found from a connection string:
 * the parent of the backend that answers `SELECT pg_backend_pid()`. The
 * probe reads /proc, or a tree laid out like it (the unit tests'). Linux
 * only; docs/http_open.md#metrics defines the figures.
 */
#ifndef SHOOTOUT_PG_PROBE_H
#define SHOOTOUT_PG_PROBE_H

#include <stdbool.h>
#include <stddef.h>

struct pg_probe {
    const char *proc; /* "/proc", or a test's tree; not owned */
    int postmaster;
    double ticks0, ticks; /* CPU clock ticks of the server, at the start and the latest sample */
    double rss_max_kb;    /* the peak of the processes' summed RSS at one sample */
    unsigned procs_max;   /* the peak of their number, the postmaster included */
    bool lost;            /* the postmaster could not be read at some sample */
};

/* The postmaster of spec into *pid: spec is a pid, which must be a
 * process named postgres whose parent is not (a backend is refused), or
 * else a libpq connection string or URI. 0, or -1 with a message in err. */
int pg_probe_find(const char *spec, const char *proc, int *pid, char *err, size_t errlen);

/* Opens the window on postmaster's server, reading the tree under proc. */
void pg_probe_start(struct pg_probe *p, const char *proc, int postmaster);
/* Samples the server; call it every few hundred ms and at the end. */
void pg_probe_sample(struct pg_probe *p);
/* The server's CPU seconds from the start to the latest good sample. */
double pg_probe_cpu_s(const struct pg_probe *p);

#endif
