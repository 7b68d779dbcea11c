/* contender.c - the contenders of `shootout run` (see contender.h): the
 * registry, their start scripts' --version, and their servers. */
#include "run/contender.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/json.h"

#define VERSION_TIMEOUT_MS 5000 /* the contract asks < 2 s: a slow one is broken */
#define BOOT_TIMEOUT_NS (60 * 1000000000ull) /* JVM and Erlang servers take 10-30 s */
#define EXIT_UNAVAILABLE 3                   /* start --version: cannot run here */

/* CONTENDERS.md's names and kinds; the tables list them in this order. */
const struct contender_def contender_defs[] = {
    {"mosquitto", CK_MQTT, "C, Mosquitto", 0},
    {"rabbitmq", CK_MQTT, "Erlang, RabbitMQ MQTT plugin", CONTENDER_HEAVY},
    {"activemq", CK_MQTT, "Java, ActiveMQ 5 MQTT transport", CONTENDER_HEAVY | CONTENDER_JVM},
    {"aedes", CK_MQTT, "Node.js, aedes", 0},
    {"grpc-cpp", CK_GRPC, "C++, gRPC C++", 0},
    {"grpc-java", CK_GRPC, "Java, grpc-java", CONTENDER_HEAVY | CONTENDER_JVM},
    {"node-grpc", CK_GRPC, "Node.js, @grpc/grpc-js", 0},
    {"spring-rest", CK_REST, "Java, Spring 4 MVC on Jetty 9", CONTENDER_HEAVY | CONTENDER_JVM},
    {"node-fastify", CK_REST, "Node.js, fastify", 0},
    {"a2b-node", CK_A2B, "Node.js, fastify + pg", 0},
    {"a2b-spring", CK_A2B, "Java, Spring MVC + JDBC", CONTENDER_HEAVY | CONTENDER_JVM},
};
const unsigned contender_count = sizeof contender_defs / sizeof contender_defs[0];
_Static_assert(sizeof contender_defs / sizeof contender_defs[0] < 32, "a contender_set is 32 bits");

const char *contender_kind_name(enum contender_kind k)
{
    static const char *const names[] = {"mqtt", "grpc", "rest", "a2b"};
    return names[k];
}

int contender_parse_list(const char *list, contender_set *set, char *err, size_t len)
{
    *set = 0;
    if (!strcmp(list, "none"))
        return 0;
    if (!strcmp(list, "all")) {
        *set = CONTENDER_ALL;
        return 0;
    }
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        unsigned i = 0;
        while (i < contender_count &&
               (strlen(contender_defs[i].name) != n || strncmp(contender_defs[i].name, p, n)))
            i++;
        if (i == contender_count) {
            snprintf(err, len, "no contender '%.*s' (see shootout peers)", (int)n, p);
            return -1;
        }
        *set |= 1u << i;
        p += n + (p[n] == ',');
    }
    return 0;
}

void contender_peers_dir(const char *exe, char *out, size_t len)
{
    const char *env = getenv("SHOOTOUT_PEERS_DIR");
    const char *slash = strrchr(exe, '/');
    char path[4200], *real;
    if (env && *env)
        snprintf(path, sizeof path, "%s", env);
    else
        snprintf(path, sizeof path, "%.*s/../../peers", slash ? (int)(slash - exe) : 1,
                 slash ? exe : ".");
    real = realpath(path, NULL); /* for the messages; a missing one stays as it is */
    snprintf(out, len, "%s", real ? real : path);
    free(real);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Runs argv with stdout into out[0..len) (its first line), stderr and
 * stdin on /dev/null, for at most VERSION_TIMEOUT_MS. The exit code, or
 * -1 (not run, killed, too slow). */
static int run_for_line(char *const argv[], char *out, size_t len)
{
    int pfd[2];
    out[0] = '\0';
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        if (null < 0 || dup2(null, 0) < 0 || dup2(pfd[1], 1) < 0 || dup2(null, 2) < 0)
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t got = 0;
    uint64_t deadline = clock_now_ns() + VERSION_TIMEOUT_MS * 1000000ull;
    bool timed_out = false;
    for (;;) {
        int64_t left = (int64_t)(deadline - clock_now_ns()) / 1000000;
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) == 0) {
            timed_out = true;
            break;
        }
        char buf[256];
        ssize_t n = read(pfd[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t m = (size_t)n < len - 1 - got ? (size_t)n : len - 1 - got;
        memcpy(out + got, buf, m);
        got += m;
    }
    close(pfd[0]);
    out[got] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    if (timed_out)
        kill(-pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (timed_out || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

void contender_probe(const char *peers_dir, const struct contender_def *d,
                     struct contender_probe *p)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/start", peers_dir, d->name);
    p->available = false;
    if (access(path, X_OK) < 0) {
        snprintf(p->line, sizeof p->line, "not installed: no %.160s/start (not in this tree)",
                 d->name);
        return;
    }
    char *argv[] = {path, "--version", NULL};
    char line[sizeof p->line];
    int rc = run_for_line(argv, line, sizeof line);
    if (rc == 0 && line[0]) {
        p->available = true;
        snprintf(p->line, sizeof p->line, "%s", line);
    } else if (rc == EXIT_UNAVAILABLE && line[0]) {
        snprintf(p->line, sizeof p->line, "%s", line);
    } else if (rc < 0) {
        snprintf(p->line, sizeof p->line, "broken: %.40s/start --version did not exit within %d s",
                 d->name, VERSION_TIMEOUT_MS / 1000);
    } else {
        snprintf(p->line, sizeof p->line, "broken: %.40s/start --version exited %d%s%.150s",
                 d->name, rc, line[0] ? ": " : " and said nothing", line);
    }
}

void contender_roster_probe(struct contender_roster *r)
{
    for (unsigned i = 0; i < contender_count; i++)
        if (r->chosen >> i & 1)
            contender_probe(r->peers_dir, &contender_defs[i], &r->probe[i]);
}

bool contender_usable(const struct contender_roster *r, unsigned i)
{
    return (r->chosen >> i & 1) && r->probe[i].available;
}

const char *contender_version(const struct contender_roster *r, unsigned i)
{
    return contender_usable(r, i) ? r->probe[i].line : NULL;
}

void contender_roster_json(struct json *j, const void *arg)
{
    const struct contender_roster *r = arg;
    json_key(j, "contenders");
    json_array_begin(j);
    for (unsigned i = 0; i < contender_count; i++) {
        if (!(r->chosen >> i & 1))
            continue;
        const struct contender_def *d = &contender_defs[i];
        json_object_begin(j);
        json_kstr(j, "name", d->name);
        json_kstr(j, "kind", contender_kind_name(d->kind));
        json_kstr(j, "stack", d->stack);
        json_key(j, "jvm");
        json_bool(j, d->flags & CONTENDER_JVM);
        json_key(j, "heavy");
        json_bool(j, d->flags & CONTENDER_HEAVY);
        json_key(j, "available");
        json_bool(j, r->probe[i].available);
        json_kstr(j, r->probe[i].available ? "version" : "unavailable", r->probe[i].line);
        json_object_end(j);
    }
    json_array_end(j);
}

void contender_proc_init(struct contender_proc *p, const struct contender_def *d)
{
    *p = (struct contender_proc){.def = d};
    child_init(&p->proc, d->name);
    p->proc.group = true;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void remove_dir(struct contender_proc *p)
{
    if (p->dir[0])
        nftw(p->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    p->dir[0] = '\0';
}

/* One exchange of kind k's protocol with CHILD_HOST:port: true when the
 * answer is that protocol's. */
static bool speaks(enum contender_kind k, int port)
{
    /* MQTT 3.1.1 CONNECT, clean session, keep-alive 60 s, client id "probe". */
    static const unsigned char mqtt[] = {0x10, 17, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 60,
                                         0, 5, 'p', 'r', 'o', 'b', 'e'};
    /* The HTTP/2 preface and an empty SETTINGS frame. */
    static const char h2[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
    static const char http[] = "GET /actuator/health/readiness HTTP/1.1\r\nHost: " CHILD_HOST
                               "\r\nConnection: close\r\n\r\n";
    unsigned char r[64];
    ssize_t n;
    switch (k) {
    case CK_MQTT:
        n = child_exchange(port, mqtt, sizeof mqtt, r, sizeof r);
        return n >= 4 && r[0] == 0x20 && r[1] == 2 && r[3] == 0; /* CONNACK, accepted */
    case CK_GRPC:
        n = child_exchange(port, h2, sizeof h2 - 1, r, sizeof r);
        return n >= 9 && r[3] == 4; /* the server's SETTINGS */
    case CK_REST:
        n = child_exchange(port, http, sizeof http - 1, r, sizeof r);
        return n >= 12 && !memcmp(r, "HTTP/1.", 7); /* any answer */
    case CK_A2B:
        n = child_exchange(port, http, sizeof http - 1, r, sizeof r);
        return n >= 12 && !memcmp(r, "HTTP/1.", 7) && !memcmp(r + 9, "200", 3); /* ready */
    }
    return false;
}

/* The member of process group pgid with the largest RSS (pgid itself if
 * none is larger): the server behind a wrapper that stays. */
static int largest_in_group(int pgid)
{
    DIR *d = opendir("/proc");
    int best = pgid;
    long best_rss = -1;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], buf[1024];
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* After the command's closing parenthesis: state, ppid, pgrp, ...,
         * rss is the 22nd field after it. */
        const char *p = strrchr(buf, ')');
        int pgrp;
        long rss = 0;
        if (!p || sscanf(p + 2, "%*c %*d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                                "%*d %*d %*d %*u %*u %ld", &pgrp, &rss) != 2 || pgrp != pgid)
            continue;
        if (rss > best_rss) {
            best_rss = rss;
            best = atoi(e->d_name);
        }
    }
    if (d)
        closedir(d);
    return best;
}

struct launch {
    struct contender_proc *p;
    const char *script;
    char *const *extra;
};

/* Spawns the start script on port and waits until it speaks its kind's
 * protocol there. */
static int launch(struct child *c, int port, void *arg, char *err, size_t len)
{
    const struct launch *l = arg;
    struct contender_proc *p = l->p;
    char *const *extra = l->extra;
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    char *argv[32] = {(char *)l->script, "--port", port_s, "--dir", p->dir};
    int n = 5;
    for (; extra && *extra && n < 31; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    uint64_t t0 = clock_now_ns();
    if (child_spawn(c, argv, -1, err, len) < 0)
        return -1;
    while (!speaks(p->def->kind, port)) {
        if (!child_alive(c)) {
            snprintf(err, len, "exited during startup");
            return -1;
        }
        if (clock_now_ns() - t0 > BOOT_TIMEOUT_NS) {
            snprintf(err, len, "no %s answer on port %d within %llu s",
                     contender_kind_name(p->def->kind), port, BOOT_TIMEOUT_NS / 1000000000ull);
            return -1;
        }
        sleep_ms(50);
    }
    p->boot_s = (double)(clock_now_ns() - t0) / 1e9;
    p->port = port;
    p->server_pid = largest_in_group(c->pid);
    return 0;
}

int contender_mkdtemp(char *dir, size_t size, const char *name, char *err, size_t len)
{
    /* In $TMPDIR: a test, or a user sharing the machine, can give the run a
     * /tmp of its own and see what is left. */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !tmp[0])
        tmp = "/tmp";
    int w = snprintf(dir, size, "%s/shootout-%s-XXXXXX", tmp, name);
    if (w < 0 || (size_t)w >= size) {
        snprintf(err, len, "TMPDIR too long: %s", tmp);
        dir[0] = '\0';
        return -1;
    }
    if (!mkdtemp(dir)) {
        snprintf(err, len, "mkdtemp %s: %s", dir, strerror(errno));
        dir[0] = '\0';
        return -1;
    }
    return 0;
}

int contender_start(struct contender_proc *p, const char *peers_dir, char *const extra[],
                    char *err, size_t len)
{
    char script[4200];
    snprintf(script, sizeof script, "%s/%s/start", peers_dir, p->def->name);
    if (contender_mkdtemp(p->dir, sizeof p->dir, p->def->name, err, len) < 0)
        return -1;
    struct launch l = {p, script, extra};
    if (child_start_on_free_port(&p->proc, launch, &l, err, len) < 0) {
        remove_dir(p);
        return -1;
    }
    return 0;
}

int contender_stop(struct contender_proc *p, FILE *out)
{
    int rc = child_finish(&p->proc, false, out);
    remove_dir(p);
    child_free(&p->proc);
    return rc;
}

int contender_enter(struct contender_proc *p, const struct contender_roster *r, unsigned i,
                    char *const extra[], char *note, size_t len, FILE *out)
{
    const struct contender_def *d = &contender_defs[i];
    const struct contender_probe *pr = &r->probe[i];
    contender_proc_init(p, d);
    char err[512];
    if (!pr->available) {
        snprintf(note, len, "%s", pr->line);
    } else if (contender_start(p, r->peers_dir, extra, err, sizeof err) < 0) {
        snprintf(note, len, "could not start: %s", err);
    } else {
        fprintf(out, "shootout run: %s (%s), pid %d, on %s:%d, ready after %.2f s\n", d->name,
                pr->line, (int)p->proc.pid, CHILD_HOST, p->port, p->boot_s);
        fflush(out);
        return 0;
    }
    fprintf(out, "shootout run: %s skipped: %s\n", d->name, note);
    fflush(out);
    return -1;
}
