/* awake.c - SCHED_IDLE spinners that keep the CPUs out of idle (awake.h). */
#include "load/awake.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* PAUSE leaves a hyperthread sibling (which a vCPU may be) its share of
 * the core while spinning. */
static void *awake_spin(void *arg)
{
    (void)arg;
    for (;;) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        atomic_signal_fence(memory_order_seq_cst);
#endif
    }
    return NULL;
}

/* The child: SCHED_IDLE first, so that the threads it creates inherit it
 * and never take a CPU from anything else. */
static _Noreturn void awake_child(unsigned ncpus)
{
    struct sched_param p = {0};
    if (sched_setscheduler(0, SCHED_IDLE, &p) < 0)
        _exit(1);
    for (unsigned i = 1; i < ncpus; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, awake_spin, NULL) != 0)
            break;
    }
    awake_spin(NULL);
    _exit(0);
}

int awake_start(struct awake *a, char *err, size_t len)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    a->ncpus = n > 0 ? (unsigned)n : 1;
    pid_t parent = getpid();
    a->pid = fork();
    if (a->pid < 0) {
        snprintf(err, len, "cannot start the CPU spinners: %s", strerror(errno));
        a->pid = 0;
        return -1;
    }
    if (a->pid == 0) {
        /* The parent's handlers (shootout run stops its servers on these)
         * are not the spinners' business. */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* the parent died before that */
            _exit(0);
        awake_child(a->ncpus);
    }
    return 0;
}

void awake_stop(struct awake *a)
{
    if (a->pid <= 0)
        return;
    kill(a->pid, SIGKILL);
    while (waitpid(a->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    a->pid = 0;
}
