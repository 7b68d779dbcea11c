/* child.h - the servers of `shootout run` as child processes: spawned with
 * their stderr in a memfd (so nothing lands on disk), waited for until they
 * accept connections or say they listen, watched for dying, and stopped
 * with SIGTERM (SIGKILL after a grace period).
 *
 * No child outlives the job: each gets PR_SET_PDEATHSIG before its exec,
 * and child_trap_signals() makes SIGINT, SIGTERM and SIGHUP stop every
 * running child before the job dies of the signal. A child in a group of
 * its own (a contender's start script) is signalled as a group, but the
 * parent-death signal reaches only its leader, which the contract
 * (docs/run.md, "Contenders") makes forward it.
 */
#ifndef SHOOTOUT_CHILD_H
#define SHOOTOUT_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The address every child listens on, and every part of the job sends
 * its load to. */
#define CHILD_HOST "127.0.0.1"

/* Children that may run at once (the signal handler's table). */
#define CHILD_MAX 8 /* a cluster's nodes and its NATS server (run --cluster) */

struct child {
    const char *name; /* static: "shootout", "mosquitto", "car-server" */
    pid_t pid;        /* 0: not running */
    int log_fd;       /* memfd holding the child's stderr, -1: none yet */
    int slot;         /* in the signal handler's table, -1: none */
    bool started;     /* it ran, so it has rows in the tables */
    bool lost;        /* could not start, or died during the job */
    /* Its own process group, signalled as a whole: a start script and
     * whatever it starts (a JVM, an Erlang node's epmd). */
    bool group;
    /* What child_stop sends first, 0: SIGTERM (nats-server exits 0 on
     * SIGINT only). */
    int stop_signal;
};

void child_init(struct child *c, const char *name);
/* Closes the log; the child must have been stopped. */
void child_free(struct child *c);

/* Installs the handlers for SIGINT, SIGTERM and SIGHUP. */
void child_trap_signals(void);

/* Forks and executes argv (argv[0] a path) with stdin and stdout on
 * /dev/null and stderr appended to the child's log; keep_fd (or -1) stays
 * open across the exec. 0, or -1 with a message in err. */
int child_spawn(struct child *c, char *const argv[], int keep_fd, char *err, size_t len);

/* Reaps c if it has exited; if it had started, says on stderr that it
 * died and marks it lost. Returns whether it runs. */
bool child_alive(struct child *c);

/* After a failed experiment: whether c still runs once it has had up to
 * 1 s to finish dying (a server exiting on its own, seen by the client
 * as a refused or reset connection just before). */
bool child_alive_after_failure(struct child *c);

/* Waits up to timeout_ns for c to exit by itself (a command that runs to
 * its end). Returns the wait status, or -1 if it still runs (or was not
 * running). */
int child_wait_exit(struct child *c, uint64_t timeout_ns);

/* SIGTERM (or c->stop_signal), then SIGKILL if it has not exited within 10 s (for a group,
 * SIGKILL to whatever of the group is left once it has). Returns the
 * wait status, or -1 if c was not running. */
int child_stop(struct child *c);

/* Waits up to 10 s until c accepts TCP connections on CHILD_HOST:port.
 * 0, or -1 with a message in err. */
int child_wait_port(struct child *c, int port, char *err, size_t len);

/* Polls http://CHILD_HOST:port/path with GET (Connection: close) until it
 * answers 200, at most timeout_s, while c runs: a server's boot-up time
 * up to its readiness. c is not reaped (child_alive does that, and learns
 * how it ended). Returns whether it answered 200. */
bool child_wait_http(const struct child *c, int port, const char *path, double timeout_s);

/* One exchange with the server on CHILD_HOST:port: connects, sends
 * req[0..n), and reads what the first second brings into resp[0..cap).
 * The bytes read, or -1 (refused, nothing came, closed). */
ssize_t child_exchange(int port, const void *req, size_t n, void *resp, size_t cap);

/* Waits up to 10 s until a line of c's stderr contains needle, and copies
 * that line to line[0..len). 0, or -1 with a message in err. */
int child_wait_line(struct child *c, const char *needle, char *line, size_t len, char *err,
                    size_t errlen);

/* A child that did not become ready: stops it, marks it lost and adds
 * its last words to the message in err. Returns -1. */
int child_give_up(struct child *c, char *err, size_t len);

/* Spawns c for port and waits until it is ready: 0, or -1 with err. */
typedef int (*child_launch_fn)(struct child *c, int port, void *arg, char *err, size_t len);

/* Starts c on a free port (child_free_port), trying three ports in case
 * one is taken meanwhile; a child that runs but is not ready is not tried
 * again. 0 with c started, or -1 with err (c given up). */
int child_start_on_free_port(struct child *c, child_launch_fn launch, void *arg, char *err,
                             size_t len);

/* Stops c if it started and says how it ended on out; with must_exit_0,
 * an end other than exit 0 is a failure, and its last words go to stderr.
 * 0, or -1 if it died earlier (child_alive said so) or failed so. */
int child_finish(struct child *c, bool must_exit_0, FILE *out);

/* The end of one of our servers, whose experiments all succeeded or not
 * (ok): stops it (it must exit 0), says how it ended on out and frees
 * its log. Returns the part's exit code for it: 1 if it died or did not
 * exit 0, else 3 if an experiment failed, else 0. */
int child_end_ours(struct child *c, bool ok, FILE *out);

/* Of two parts' (or servers') exit codes, the one to return: a server
 * lost (1) before an experiment failed (3). */
int child_rc_worse(int a, int b);

/* The last line c wrote to stderr ("" if none), for messages about it. */
void child_log_tail(const struct child *c, char *out, size_t len);

/* "exit 0", "killed by Terminated", ... */
void child_describe_status(int status, char *out, size_t len);

/* A free CHILD_HOST port: bind port 0, read it, close. Another process may
 * take it before the child binds it; callers retry then. -1 with err. */
int child_free_port(char *err, size_t len);

#endif
