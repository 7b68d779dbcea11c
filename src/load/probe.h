/* probe.h - CPU time and memory over a measured window: the load
 * generator's own (getrusage, so a reader can see it was not the
 * bottleneck) and, optionally, a server process's from /proc (user +
 * system time in nanoseconds from the scheduler's per-thread schedstat, or
 * /proc/PID/stat's 10 ms clock ticks where that is missing; and the peak of
 * RSS and thread count sampled while the window is open). Linux only.
 */
#ifndef SHOOTOUT_PROBE_H
#define SHOOTOUT_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "report/result.h"

struct probe {
    int pid; /* server, 0 = none */
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

/* Opens the window; pid 0 samples no server. */
void probe_start(struct probe *p, int pid);
/* Samples the server's RSS and threads; call it every few hundred ms. */
void probe_sample(struct probe *p);
/* Closes the window and fills row's client and server fields, per op. */
void probe_finish(struct probe *p, double ops, struct result_row *row);

#endif
