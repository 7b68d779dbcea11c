/* awake.h - keeping every CPU out of its idle states while an experiment
 * runs, so that a latency-bound run measures the servers and not how long
 * an idle CPU takes to wake up.
 *
 * On a virtual machine an idle vCPU halts and the hypervisor deschedules
 * it; waking it for the next request costs tens of microseconds, more than
 * a loopback call itself. A server whose runtime keeps threads busy (a JVM's
 * JIT and GC threads, a spinning selector) keeps its vCPUs from halting and
 * so wins one-at-a-time experiments for a reason that has nothing to do
 * with it. One spinning thread per online CPU at SCHED_IDLE priority,
 * which runs only when nothing else wants that CPU, takes the artefact
 * away for every contender alike: measured on this project's 2-vCPU
 * machines, our car-server's sequential REST calls went from 11.5 to 42.1
 * thousand a second (docs/BENCHMARKS.md).
 *
 * The spinners live in a child process of their own, so that they count
 * neither in the load generator's CPU nor in any server's; the child dies
 * with its parent (PR_SET_PDEATHSIG).
 */
#ifndef SHOOTOUT_AWAKE_H
#define SHOOTOUT_AWAKE_H

#include <stddef.h>
#include <sys/types.h>

struct awake {
    pid_t pid; /* the spinners' process; 0 = none */
    unsigned ncpus;
};

/* Starts one SCHED_IDLE spinner per online CPU. 0, or -1 with err set. */
int awake_start(struct awake *a, char *err, size_t len);
/* Stops them (SIGKILL, reaped); a no-op when none were started. */
void awake_stop(struct awake *a);

#endif
