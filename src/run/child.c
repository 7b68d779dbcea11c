/* child.c - servers as child processes of `shootout run` (see child.h). */
#include "run/child.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/net.h"
#include "load/bench.h"

#define CHILD_START_TIMEOUT_NS 10000000000ull
#define CHILD_STOP_TIMEOUT_NS 10000000000ull

/* The running children's pids, for the signal handler; negative: a
 * process group. */
_Static_assert(sizeof(pid_t) <= sizeof(sig_atomic_t), "a pid must fit a sig_atomic_t");
static volatile sig_atomic_t child_pids[CHILD_MAX];

/* SIGINT, SIGTERM or SIGHUP: stop the children, then die of the signal as
 * usual. */
static void child_on_signal(int sig)
{
    for (int i = 0; i < CHILD_MAX; i++)
        if (child_pids[i] != 0)
            kill((pid_t)child_pids[i], SIGTERM);
    signal(sig, SIG_DFL);
    raise(sig);
}

void child_trap_signals(void)
{
    struct sigaction sa = {.sa_handler = child_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

void child_init(struct child *c, const char *name)
{
    *c = (struct child){.name = name, .log_fd = -1, .slot = -1};
}

void child_free(struct child *c)
{
    if (c->log_fd >= 0)
        close(c->log_fd);
    c->log_fd = -1;
}

/* Forgets c's process: it has been reaped. */
static void child_gone(struct child *c)
{
    if (c->group && c->pid)
        kill(-c->pid, SIGKILL); /* a straggler the leader left behind (ESRCH: none) */
    c->pid = 0;
    if (c->slot >= 0)
        child_pids[c->slot] = 0;
    c->slot = -1;
}

int child_spawn(struct child *c, char *const argv[], int keep_fd, char *err, size_t len)
{
    if (c->log_fd < 0) {
        c->log_fd = memfd_create(c->name, MFD_CLOEXEC);
        if (c->log_fd < 0) {
            snprintf(err, len, "memfd_create: %s", strerror(errno));
            return -1;
        }
    }
    int slot = 0;
    while (slot < CHILD_MAX && child_pids[slot] != 0)
        slot++;
    if (slot == CHILD_MAX) {
        snprintf(err, len, "more than %d children at once", CHILD_MAX);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, len, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid > 0) {
        if (c->group)
            setpgid(pid, pid); /* as the child does: whichever runs first */
        c->pid = pid;
        c->slot = slot;
        child_pids[slot] = c->group ? -pid : pid;
        return 0;
    }
    if (c->group)
        setpgid(0, 0);
    /* The child dies with us however we end, SIGKILL included; the check
     * covers a parent that died before the prctl. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
        _exit(127);
    /* The mask and ignored signals survive exec: give the server a clean
     * slate (the client engines ignore SIGPIPE). */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(c->log_fd, 2) < 0)
        _exit(127);
    if (keep_fd >= 0)
        fcntl(keep_fd, F_SETFD, 0);
    execv(argv[0], argv);
    dprintf(2, "cannot execute %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

void child_describe_status(int status, char *out, size_t len)
{
    if (WIFEXITED(status))
        snprintf(out, len, "exit %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, len, "killed by %s", strsignal(WTERMSIG(status)));
    else
        snprintf(out, len, "status %d", status);
}

void child_log_tail(const struct child *c, char *out, size_t len)
{
    char buf[4096];
    struct stat st;
    out[0] = '\0';
    if (c->log_fd < 0 || fstat(c->log_fd, &st) < 0)
        return;
    off_t off = st.st_size > (off_t)sizeof buf - 1 ? st.st_size - ((off_t)sizeof buf - 1) : 0;
    ssize_t n = pread(c->log_fd, buf, sizeof buf - 1, off);
    if (n <= 0)
        return;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    const char *nl = strrchr(buf, '\n'), *last = nl ? nl + 1 : buf;
    size_t m = strlen(last) < len ? strlen(last) : len - 1;
    memcpy(out, last, m);
    out[m] = '\0';
}

bool child_alive(struct child *c)
{
    int status;
    if (!c->pid)
        return false;
    if (waitpid(c->pid, &status, WNOHANG) != c->pid)
        return true;
    if (c->started) { /* failures to start are reported by the starter */
        char how[64], tail[256];
        child_describe_status(status, how, sizeof how);
        child_log_tail(c, tail, sizeof tail);
        fprintf(stderr, "shootout run: %s (pid %d) died during the job (%s)%s%s\n", c->name,
                (int)c->pid, how, tail[0] ? ": " : "", tail);
        c->lost = true;
    }
    child_gone(c);
    return false;
}

bool child_alive_after_failure(struct child *c)
{
    for (int i = 0; i < 100; i++) {
        if (!child_alive(c))
            return false;
        sleep_ms(10);
    }
    return true;
}

int child_wait_exit(struct child *c, uint64_t timeout_ns)
{
    if (!c->pid)
        return -1;
    uint64_t deadline = clock_now_ns() + timeout_ns;
    int status = 0;
    pid_t w;
    while ((w = waitpid(c->pid, &status, WNOHANG)) == 0 && clock_now_ns() < deadline)
        sleep_ms(10);
    if (w == 0)
        return -1;
    child_gone(c);
    return status;
}

int child_stop(struct child *c)
{
    if (!child_alive(c))
        return -1;
    pid_t pid = c->pid, whom = c->group ? -pid : pid;
    int sig = c->stop_signal ? c->stop_signal : SIGTERM;
    kill(whom, sig);
    int status = child_wait_exit(c, CHILD_STOP_TIMEOUT_NS);
    if (status < 0) {
        fprintf(stderr, "shootout run: %s (pid %d) did not stop within %llu s of SIG%s: killing it\n",
                c->name, (int)pid, CHILD_STOP_TIMEOUT_NS / 1000000000ull, sigabbrev_np(sig));
        kill(whom, SIGKILL);
        waitpid(pid, &status, 0);
        child_gone(c);
    }
    return status;
}

int child_give_up(struct child *c, char *err, size_t len)
{
    child_stop(c);
    c->lost = true;
    char tail[256];
    child_log_tail(c, tail, sizeof tail);
    if (tail[0]) {
        size_t n = strlen(err);
        snprintf(err + n, len - n, " (its last words: %s)", tail);
    }
    return -1;
}

int child_start_on_free_port(struct child *c, child_launch_fn launch, void *arg, char *err,
                             size_t len)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        int port = child_free_port(err, len);
        if (port < 0)
            return -1;
        if (launch(c, port, arg, err, len) == 0) {
            c->started = true;
            return 0;
        }
        if (c->pid) /* it runs but is not ready: no point in retrying */
            break;
    }
    return child_give_up(c, err, len);
}

int child_finish(struct child *c, bool must_exit_0, FILE *out)
{
    if (!c->started)
        return 0;
    int pid = (int)c->pid;
    int status = child_stop(c);
    if (status < 0) /* it died earlier, as child_alive said */
        return -1;
    char how[64];
    child_describe_status(status, how, sizeof how);
    fprintf(out, "shootout run: stopped %s (pid %d): %s\n", c->name, pid, how);
    if (must_exit_0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        char tail[256];
        child_log_tail(c, tail, sizeof tail);
        fprintf(stderr, "shootout run: %s should exit 0 on SIGTERM; its last words: %s\n", c->name,
                tail);
        return -1;
    }
    return 0;
}

int child_end_ours(struct child *c, bool ok, FILE *out)
{
    int rc = child_finish(c, true, out) < 0 || c->lost ? BENCH_EXIT_RUNTIME
             : ok                                      ? BENCH_EXIT_OK
                                                       : BENCH_EXIT_MISSED;
    child_free(c);
    return rc;
}

int child_wait_port(struct child *c, int port, char *err, size_t len)
{
    struct sockaddr_in a = {
        .sin_family = AF_INET,
        .sin_port = htons((uint16_t)port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    uint64_t deadline = clock_now_ns() + CHILD_START_TIMEOUT_NS;
    for (;;) {
        if (!child_alive(c)) {
            snprintf(err, len, "exited during startup");
            return -1;
        }
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(err, len, "socket: %s", strerror(errno));
            return -1;
        }
        int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
        close(fd);
        if (rc == 0)
            return 0;
        if (clock_now_ns() > deadline) {
            snprintf(err, len, "did not accept connections on port %d within %llu s", port,
                     CHILD_START_TIMEOUT_NS / 1000000000ull);
            return -1;
        }
        sleep_ms(20);
    }
}

/* Copies the first line of log[0..n) containing needle; false if none. */
static bool find_line(const char *log, size_t n, const char *needle, char *line, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (log[i] != '\n')
            continue;
        size_t k = i - start;
        if (memmem(log + start, k, needle, strlen(needle))) {
            size_t m = k < len ? k : len - 1;
            memcpy(line, log + start, m);
            line[m] = '\0';
            return true;
        }
        start = i + 1;
    }
    return false;
}

int child_wait_line(struct child *c, const char *needle, char *line, size_t len, char *err,
                    size_t errlen)
{
    char log[16384];
    uint64_t deadline = clock_now_ns() + CHILD_START_TIMEOUT_NS;
    for (;;) {
        ssize_t n = pread(c->log_fd, log, sizeof log, 0);
        if (n > 0 && find_line(log, (size_t)n, needle, line, len))
            return 0;
        if (!child_alive(c)) {
            snprintf(err, errlen, "exited during startup");
            return -1;
        }
        if (clock_now_ns() > deadline) {
            snprintf(err, errlen, "said nothing with \"%s\" within %llu s", needle,
                     CHILD_START_TIMEOUT_NS / 1000000000ull);
            return -1;
        }
        sleep_ms(20);
    }
}

int child_free_port(char *err, size_t len)
{
    int fd = net_listen(CHILD_HOST, 0, 1, 0, err, len);
    if (fd < 0)
        return -1;
    int port = net_local_port(fd);
    close(fd);
    return port;
}

/* Waits up to ms for events on fd; true if they came. */
static bool wait_fd(int fd, short events, int ms)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    return poll(&pfd, 1, ms) == 1;
}

ssize_t child_exchange(int port, const void *req, size_t n, void *resp, size_t cap)
{
    char err[NET_ERR_LEN];
    int fd = net_connect(CHILD_HOST, port, err, sizeof err);
    if (fd < 0)
        return -1;
    ssize_t r = -1;
    if (wait_fd(fd, POLLOUT, 100) && net_connect_result(fd) == 0 &&
        send(fd, req, n, MSG_NOSIGNAL) == (ssize_t)n && wait_fd(fd, POLLIN, 1000))
        r = recv(fd, resp, cap, 0);
    close(fd);
    return r;
}

/* One GET with Connection: close; true on a 200 answer. */
static bool ready_once(int port, const char *path)
{
    char req[512], resp[16];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n",
                     path, CHILD_HOST, port);
    ssize_t r = child_exchange(port, req, (size_t)n, resp, sizeof resp);
    return r >= 12 && !memcmp(resp, "HTTP/1.", 7) && !memcmp(resp + 9, "200", 3);
}

/* Whether process pid has exited, without reaping it: its parent (a
 * caller, through child_alive) still reaps it and learns how it ended. */
static bool exited(int pid)
{
    siginfo_t si = {0};
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

bool child_wait_http(const struct child *c, int port, const char *path, double timeout_s)
{
    uint64_t t0 = clock_now_ns();
    while ((double)(clock_now_ns() - t0) / 1e9 < timeout_s) {
        if (ready_once(port, path))
            return true;
        if (exited((int)c->pid))
            return false;
        sleep_ms(2);
    }
    return false;
}

int child_rc_worse(int a, int b)
{
    if (a == BENCH_EXIT_RUNTIME || b == BENCH_EXIT_RUNTIME)
        return BENCH_EXIT_RUNTIME;
    return a ? a : b;
}
