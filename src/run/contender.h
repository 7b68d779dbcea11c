/* contender.h - the other implementations `shootout run` races ours
 * against (docs/run.md, "Contenders"): a registry of
 * their names, kinds and stacks in one stable order, which is the order of
 * every table's rows; their availability, asked of peers/<name>/start
 * --version; and their servers, only ever started through
 * peers/<name>/start --port P --dir D as child processes in a private
 * temporary directory, ready when the port takes one exchange of the
 * kind's protocol.
 */
#ifndef SHOOTOUT_CONTENDER_H
#define SHOOTOUT_CONTENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/child.h"

enum contender_kind { CK_MQTT, CK_GRPC, CK_REST, CK_A2B };

#define CONTENDER_JVM 1u   /* measured cold, then after a warm-up of the same size */
#define CONTENDER_HEAVY 2u /* JDK- or Erlang-based: left out by install-deps.sh --minimal */

struct contender_def {
    const char *name;  /* the directory peers/<name>/ and the rows' series */
    enum contender_kind kind;
    const char *stack; /* language and framework, for the tables */
    unsigned flags;    /* CONTENDER_* */
};

/* The registry, in the tables' order. */
extern const struct contender_def contender_defs[];
extern const unsigned contender_count;

/* A set of contenders: bit i for contender_defs[i]. */
typedef uint32_t contender_set;
#define CONTENDER_ALL ((contender_set)((1u << contender_count) - 1))

/* "mqtt", "grpc", "rest", "a2b". */
const char *contender_kind_name(enum contender_kind k);

/* The set a comma-separated list of names means ("all" and "none" too).
 * 0 with *set, or -1 with the unknown name in err. */
int contender_parse_list(const char *list, contender_set *set, char *err, size_t len);

/* The contenders' directory: $SHOOTOUT_PEERS_DIR, else peers/ of the
 * repository our binary was built in (two levels above it). */
void contender_peers_dir(const char *exe, char *out, size_t len);

/* What `start --version` said. */
struct contender_probe {
    bool available;    /* it exits 0: it can run here */
    char line[256];    /* its version line, or why it cannot run and how to fix that */
};

/* Asks peers_dir/<name>/start --version (a missing script is "not
 * installed"; at most a few seconds). */
void contender_probe(const char *peers_dir, const struct contender_def *d,
                     struct contender_probe *p);

/* The contenders a job was asked for (--peers) and what each said. */
struct contender_roster {
    char peers_dir[4096];
    contender_set chosen;
    struct contender_probe probe[32]; /* by registry index, for the chosen */
};

/* Probes the chosen contenders. */
void contender_roster_probe(struct contender_roster *r);
/* Whether contender i was chosen and can run here. */
bool contender_usable(const struct contender_roster *r, unsigned i);
/* Contender i's version line if it is usable, else NULL. */
const char *contender_version(const struct contender_roster *r, unsigned i);
/* The roster as the JSON context's "contenders" (a result_context
 * extra_json; arg: the roster). */
struct json;
void contender_roster_json(struct json *j, const void *roster);

/* A contender's server, running or not. */
struct contender_proc {
    const struct contender_def *def;
    struct child proc;
    char dir[4096]; /* the private temporary directory, "" if none */
    int port;
    double boot_s; /* spawn to ready */
    /* The process measured (CPU, RSS): the largest of the group at
     * readiness, the server itself even when a wrapper script stays
     * (RabbitMQ's beam.smp, a JVM). */
    int server_pid;
};

void contender_proc_init(struct contender_proc *p, const struct contender_def *d);

/* Makes the temporary directory, starts peers_dir/<name>/start --port P
 * --dir D [extra...] (extra NULL-terminated, or NULL) on a free port and
 * waits up to 60 s until the port accepts and answers one exchange of the
 * kind's protocol. 0, or -1 with err (the server stopped, its directory
 * removed). */
/* A new private directory shootout-NAME-XXXXXX in $TMPDIR (else /tmp), as
 * mktemp(1) would put it, written to dir (size bytes): 0, or -1 with err
 * and dir "". */
int contender_mkdtemp(char *dir, size_t size, const char *name, char *err, size_t len);

int contender_start(struct contender_proc *p, const char *peers_dir, char *const extra[],
                    char *err, size_t len);

/* A part's start of roster contender i: if it cannot run here or does
 * not start, one line on out saying it is skipped and why, the why in
 * note, and -1; else a line saying where it runs, and 0 with p running. */
int contender_enter(struct contender_proc *p, const struct contender_roster *r, unsigned i,
                    char *const extra[], char *note, size_t len, FILE *out);

/* Stops a started server (its process group), says how it ended on out,
 * removes its directory and frees its log. -1 if it had died earlier. */
int contender_stop(struct contender_proc *p, FILE *out);

#endif
