/* probe.h - CPU time and memory over a measured window: the load
 * generator's own (getrusage, so a reader can see it was not the
 * bottleneck) and, optionally, a server's from /proc (user + system time in
 * nanoseconds from the scheduler's per-thread schedstat, or /proc/PID/stat's
 * 10 ms clock ticks where that is missing; and the peak of RSS and thread
 * count sampled while the window is open). A server may be several
 * processes (a cluster's nodes and its NATS server): their figures are
 * summed. Linux only.
 */
#ifndef SHOOTOUT_PROBE_H
#define SHOOTOUT_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "report/result.h"

/* The most processes one server is made of. */
#define PROBE_MAX_PIDS 8

struct probe {
    int pids[PROBE_MAX_PIDS]; /* the server's processes */
    unsigned npids;           /* 0: no server */
    double client_cpu0, server_cpu0;
    double server_cpu; /* at the latest good sample */
    long rss_max_kb, threads_max;
};

/* The fields of a process's stat file that the probes read. */
struct probe_stat {
    char comm[64];
    int ppid;
    unsigned long long utime, stime; /* clock ticks */
    long long cutime, cstime;        /* of its reaped children, clock ticks */
    long threads, rss_pages;
};

/* Reads root/PID/stat (root: "/proc", or a test's tree laid out like it).
 * 0, or -1 if there is no such process. */
int probe_stat_read(const char *root, int pid, struct probe_stat *st);

/* Checks that process pid exists and writes its command name (from
 * /proc/PID/comm) into name. 0, or -1 with a message in err. */
int probe_server_name(int pid, char *name, size_t len, char *err, size_t errlen);

/* Opens the window on the server made of pids[0..n) (at most
 * PROBE_MAX_PIDS; n 0: no server). */
void probe_start(struct probe *p, const int *pids, unsigned n);
/* Samples the server's RSS and threads (the sums over its processes);
 * call it every few hundred ms. */
void probe_sample(struct probe *p);
/* Closes the window and fills row's client and server fields, per op
 * (row->server_pid: the first process). */
void probe_finish(struct probe *p, double ops, struct result_row *row);

#endif
