/* run_a2b.c - the a2b part of `shootout run` (see run_a2b.h): the data
 * sets, a temporary PostgreSQL server, the servers as child processes, the
 * load through http_open_exec, and the article's table. */
#include "run/run_a2b.h"

#include <errno.h>
#include <ftw.h>
#include <glob.h>
#include <math.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "a2b/a2b_data.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/textfile.h"
#include "load/bench.h"
#include "load/http/http_open.h"
#include "report/texttab.h"
#include "run/child.h"
#include "run/contender.h"

#define A2B_READY_PATH "/actuator/health/readiness"
#define A2B_BOOT_TIMEOUT_S 60.0
#define A2B_INIT_TIMEOUT_NS (600 * 1000000000ull) /* loading the full data set into PostgreSQL */
#define QUOTED_HOW "quoted: MacBook Pro i7 4-core, Gatling, unscaled profile"
/* The capacity race's users still on their journeys after the staircase:
 * at most this long (unscaled seconds) past its end. The journey's pauses
 * add up to 20 to 52 s. */
#define A2B_RACE_TAIL_S 300.0

/* Ours on SQLite and on PostgreSQL, then the a2b contenders (contender.h)
 * on PostgreSQL in the registry's order. */
#define MAX_PEERS 2
enum { T_SQLITE, T_PG, T_PEER, NTARGETS = T_PEER + MAX_PEERS };
enum { NCOLS = 12 };

/* One line of the article's table: ours as measured, or one of its rows.
 * NAN is "n/a". */
struct a2b_figures {
    const char *variant;
    double col[NCOLS]; /* build s, MB, boot s, requests, KO %, RPS, p95 ms, saturation,
                          RAM MB, CPU %, threads, PG CPU % */
    const char *quoted; /* NULL: measured here */
    const char *version; /* what the server says it is, NULL: quoted */
    double time_scale, data_load_s;
    bool raced; /* the capacity race's verdict, for the JSON */
    struct run_a2b_verdict race;
    double race_ceiling;
};

static const char *const col_title[NCOLS] = {
    "build s", "MB", "boot s", "requests", "KO %", "RPS", "p95 ms", "sat.users", "RAM MB",
    "CPU %", "threads", "PG CPU %",
};
static const char *const col_key[NCOLS] = {
    "build_s", "artifact_mb", "boot_s", "total_requests", "ko_pct", "rps", "p95_ms",
    "saturation_users", "ram_mb", "cpu_pct", "threads_max", "postgres_cpu_pct",
};
static const int col_prec[NCOLS] = {1, 1, 3, 0, 1, 1, 0, 0, 0, 1, 0, 1};

/* The article's combined table (performance-researches README), the rows
 * the brief compares against: its JVM and native champions. */
/* A quoted row: its figures, from an unscaled run with no data load apart. */
#define QUOTED(name, ...) \
    {.variant = name, .col = {__VA_ARGS__}, .quoted = QUOTED_HOW, .time_scale = 1, \
     .data_load_s = NAN}
static const struct a2b_figures quoted[] = {
    QUOTED("Spring Web jar", 5, 49.70, 3.59, 523756, 24, 381.127, 50977, 1611, 658, 11, 33, 99),
    QUOTED("Spring Web native build tools", 210, 116.20, 0.310, 480763, 29, 414.785, 32175, 1829,
           263, 8, 52, 99),
    QUOTED("Spring Reactive jar", 3.1, 40.6, 2.55, 1168782, 8, 1091.30, 10406, 4391, 1823, 8, 31,
           70),
    QUOTED("Spring Reactive native b.tools", 187, 71.7, 0.107, 1013549, 10, 934.147, 12591, 3038,
           634, 32, 23, 70),
    QUOTED("Quarkus native exe", 180, 49.3, 0.223, 768017, 15, 697.563, 16426, 1967, 646, 10, 15,
           99),
};
#define NQUOTED (sizeof quoted / sizeof quoted[0])

struct a2b_target {
    const char *label;
    char label_buf[200];
    const struct contender_def *def; /* a contender's, NULL: ours */
    const char *version;
    struct contender_proc cp;        /* ours: only its child */
    int port;
    bool ran;                /* the load ran against it */
    int rc;                  /* the load's exit code */
    char note[320];          /* why it was left out, or "" */
    struct http_open_test test; /* owns the reports the rows' JSON refers to */
    struct a2b_figures fig;
    struct http_open_test race; /* the capacity race, on PostgreSQL */
    bool raced;
    int race_rc;
};

struct run_a2b {
    const struct run_a2b_opts *o;
    char dir[256]; /* temporary, in $TMPDIR: the SQLite file */
    /* temporary, in $TMPDIR: the PostgreSQL cluster, "" if none; also its
     * socket's directory, and a socket's path holds 107 bytes, of which
     * "/.s.PGSQL.65535" takes 15 */
    char pg_dir[92];
    char pg_uri[256];
    struct child pg;
    double build_s, artifact_mb;
    char build_note[160];
    struct scenario scn;
    struct inj_profile prof;
    struct inj_profile race_prof; /* n == 0: no capacity race */
    double race_ceiling;          /* its highest load, users/s */
    struct a2b_target t[NTARGETS];
};

/* ---- helpers ------------------------------------------------------------- */

static double seconds_since(uint64_t t0) { return (double)(clock_now_ns() - t0) / 1e9; }

/* The number after the last " in " of line ("... loaded in 3.41 s"). */
static double seconds_in(const char *line)
{
    const char *p = NULL;
    for (const char *q = strstr(line, " in "); q; q = strstr(q + 1, " in "))
        p = q;
    return p ? strtod(p + 4, NULL) : NAN;
}

/* Runs argv to its end as a child named name (stderr kept). 0, or -1
 * with err naming how it ended and its last words. On success, if needle
 * is not NULL, *secs receives the seconds its log line with needle names
 * (NAN if none). */
static int run_command(const char *name, char *const argv[], const char *needle, double *secs,
                       char *err, size_t len)
{
    struct child c;
    child_init(&c, name);
    int rc = -1;
    if (child_spawn(&c, argv, -1, err, len) == 0) {
        int status = child_wait_exit(&c, A2B_INIT_TIMEOUT_NS);
        if (status < 0) {
            snprintf(err, len, "%s did not finish in time", argv[0]);
            child_give_up(&c, err, len);
        } else if (status != 0) {
            char how[64];
            child_describe_status(status, how, sizeof how);
            snprintf(err, len, "%s: %s", argv[0], how);
            child_give_up(&c, err, len);
        } else {
            char line[512], e[64];
            rc = 0;
            if (needle)
                *secs = child_wait_line(&c, needle, line, sizeof line, e, sizeof e) == 0
                            ? seconds_in(line)
                            : NAN;
        }
    }
    child_free(&c);
    return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void rm_tree(const char *dir)
{
    if (dir[0])
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Build time: written by the Makefile beside the binary when it built the
 * whole tree from clean (a `make` that compiles a few files says nothing
 * about the build); artifact: our binary, which is every server and load
 * generator of the project. */
static void build_figures(struct run_a2b *j)
{
    struct stat st;
    j->artifact_mb = stat(j->o->exe, &st) == 0 ? (double)st.st_size / (1024.0 * 1024.0) : NAN;
    char path[4200], err[128], *text;
    size_t len;
    const char *slash = strrchr(j->o->exe, '/');
    snprintf(path, sizeof path, "%.*s/.build-seconds", slash ? (int)(slash - j->o->exe) : 1,
             slash ? j->o->exe : ".");
    j->build_s = NAN;
    if (textfile_read(path, &text, &len, err, sizeof err) == 0) {
        j->build_s = strtod(text, NULL);
        const char *how = strchr(text, ' ');
        how = how ? how + 1 : "";
        snprintf(j->build_note, sizeof j->build_note,
                 "build s: wall time of the last %.*s (the Makefile's record)",
                 (int)strcspn(how, "\n"), how);
        mem_free(text);
    } else {
        snprintf(j->build_note, sizeof j->build_note,
                 "build s: n/a (no clean build recorded: the Makefile writes .build-seconds "
                 "beside the binary when it builds a clean tree)");
    }
}

/* ---- PostgreSQL ---------------------------------------------------------- */

/* The directory of the newest installed PostgreSQL's programs
 * ($SHOOTOUT_PG_BIN first, as the tests). false if there is none. */
static bool pg_bin(char *out, size_t len)
{
    const char *env = getenv("SHOOTOUT_PG_BIN");
    if (env) {
        snprintf(out, len, "%s", env);
    } else {
        glob_t g;
        if (glob("/usr/lib/postgresql/*/bin", 0, NULL, &g) != 0)
            return false;
        snprintf(out, len, "%s", g.gl_pathv[g.gl_pathc - 1]); /* sorted: the newest */
        globfree(&g);
    }
    char initdb[4200];
    snprintf(initdb, sizeof initdb, "%s/initdb", out);
    return access(initdb, X_OK) == 0;
}

/* argv for program prog of bin as the postgres user when we are root
 * (initdb refuses root), through runuser, which forwards our SIGTERM. */
static void pg_argv(char **argv, char *prog_path, size_t len, const char *bin, const char *prog)
{
    snprintf(prog_path, len, "%s/%s", bin, prog);
    int n = 0;
    if (geteuid() == 0) {
        argv[n++] = access("/usr/sbin/runuser", X_OK) == 0 ? "/usr/sbin/runuser" : "/sbin/runuser";
        argv[n++] = "-u";
        argv[n++] = "postgres";
        argv[n++] = "--";
    }
    argv[n++] = prog_path;
    argv[n] = NULL;
}

/* A throw-away cluster in a temporary directory, its server a child on a
 * free port (as the tests' pg_cluster). 0, or -1 with err. */
static int pg_start(struct run_a2b *j, const char *bin, char *err, size_t len)
{
    if (contender_mkdtemp(j->pg_dir, sizeof j->pg_dir, "pg", err, len) < 0)
        return -1;
    if (geteuid() == 0) {
        const struct passwd *pw = getpwnam("postgres");
        if (!pw || chown(j->pg_dir, pw->pw_uid, pw->pw_gid) < 0) {
            snprintf(err, len, "no postgres user to run PostgreSQL as");
            return -1;
        }
    }
    char data[128], prog[4200], *argv[24];
    snprintf(data, sizeof data, "%s/data", j->pg_dir);
    pg_argv(argv, prog, sizeof prog, bin, "initdb");
    char **a = argv;
    while (*a)
        a++;
    char *init_args[] = {"-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8",
                         "--locale=C", NULL};
    memcpy(a, init_args, sizeof init_args);
    if (run_command("initdb", argv, NULL, NULL, err, len) < 0)
        return -1;

    int port = child_free_port(err, len);
    if (port < 0)
        return -1;
    char port_s[16], sock[128];
    snprintf(port_s, sizeof port_s, "%d", port);
    snprintf(sock, sizeof sock, "unix_socket_directories=%s", j->pg_dir);
    pg_argv(argv, prog, sizeof prog, bin, "postgres");
    for (a = argv; *a; a++)
        ;
    char *srv_args[] = {"-D", data, "-p", port_s, "-c", sock, "-c", "listen_addresses=" CHILD_HOST,
                        "-c", "fsync=off", "-c", "max_connections=200", NULL};
    memcpy(a, srv_args, sizeof srv_args);
    char line[256];
    if (child_spawn(&j->pg, argv, -1, err, len) < 0 ||
        child_wait_line(&j->pg, "ready to accept connections", line, sizeof line, err, len) < 0)
        return child_give_up(&j->pg, err, len);
    j->pg.started = true;
    snprintf(j->pg_uri, sizeof j->pg_uri, "postgresql://postgres@" CHILD_HOST ":%d/postgres", port);
    return 0;
}

/* PostgreSQL for the PostgreSQL targets: the given server, or a temporary
 * one; then the data set loaded by `a2b-server --init`. false (with the
 * reason in the targets' notes) when there is none. */
static bool pg_prepare(struct run_a2b *j, bool *runtime)
{
    const struct run_a2b_opts *o = j->o;
    char err[512] = "", bin[4096];
    if (o->pg_uri && !strcmp(o->pg_uri, "none")) {
        snprintf(err, sizeof err, "--pg none");
    } else if (o->pg_uri) {
        snprintf(j->pg_uri, sizeof j->pg_uri, "%s", o->pg_uri);
    } else if (!pg_bin(bin, sizeof bin)) {
        snprintf(err, sizeof err, "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb;"
                                  " or give a server with --pg postgres://...)");
    } else if (pg_start(j, bin, err, sizeof err) == 0) {
        fprintf(o->out, "shootout run: temporary PostgreSQL %s/postgres, pid %d, on %s\n", bin,
                (int)j->pg.pid, j->pg_uri);
    } else {
        fprintf(stderr, "shootout run: cannot start PostgreSQL: %s\n", err);
        *runtime = true;
    }
    double load_s = NAN;
    if (!err[0]) {
        char scale[32];
        snprintf(scale, sizeof scale, "%g", o->data_scale);
        char *argv[] = {(char *)o->exe, "a2b-server", "--db", j->pg_uri, "--init", "--scale",
                        scale, NULL};
        fprintf(stderr, "shootout run: loading the a2b data set into PostgreSQL\n");
        if (run_command("a2b-init", argv, "PostgreSQL database loaded in ", &load_s, err,
                        sizeof err) < 0) {
            fprintf(stderr, "shootout run: cannot load the data set into PostgreSQL: %s\n", err);
            *runtime = true;
        }
    }
    for (int i = T_PG; i < NTARGETS; i++) {
        if (err[0])
            snprintf(j->t[i].note, sizeof j->t[i].note, "no PostgreSQL: %.280s", err);
        j->t[i].fig.data_load_s = load_s;
    }
    return !err[0];
}

/* ---- the servers --------------------------------------------------------- */

struct launch {
    struct run_a2b *j;
    int target;
};

/* Spawns our a2b-server for target on port and measures its boot-up: from
 * just before the fork to the first 200 from readiness (which runs a query). */
static int launch_ours(struct child *c, int port, void *arg, char *err, size_t len)
{
    const struct launch *l = arg;
    struct run_a2b *j = l->j;
    struct a2b_target *t = &j->t[l->target];
    char port_s[16], scale[32], db[300];
    snprintf(port_s, sizeof port_s, "%d", port);
    snprintf(scale, sizeof scale, "%g", j->o->data_scale);
    snprintf(db, sizeof db, "%s/a2b.db", j->dir);
    char *argv[] = {(char *)j->o->exe, "a2b-server", "--bind", CHILD_HOST, "--port", port_s,
                    "--db", l->target == T_SQLITE ? db : j->pg_uri, "--scale", scale, NULL};
    uint64_t t0 = clock_now_ns();
    if (child_spawn(c, argv, -1, err, len) < 0)
        return -1;
    if (!child_wait_http(c, port, A2B_READY_PATH, A2B_BOOT_TIMEOUT_S)) {
        snprintf(err, len, "not ready on port %d within %.0f s", port, A2B_BOOT_TIMEOUT_S);
        child_alive(c); /* reaped if it exited (the port was taken): try another */
        return -1;
    }
    t->fig.col[2] = seconds_since(t0);
    t->port = port;
    return 0;
}

/* ---- the load ------------------------------------------------------------ */

static void figures_from(struct a2b_figures *f, const struct http_open_summary *s)
{
    f->col[3] = s->requests;
    f->col[4] = s->requests > 0 ? 100 * s->ko / s->requests : NAN;
    f->col[5] = s->rps;
    f->col[6] = s->p95_ms;
    f->col[7] = s->saturation_users >= 0 ? s->saturation_users : NAN;
    f->col[8] = s->server_rss_kb / 1024;
    f->col[9] = s->server_cpu_pct;
    f->col[10] = s->server_threads;
    f->col[11] = s->pg ? s->pg_cpu_pct : NAN;
}

/* The journey under prof against target i, which runs, into test; the
 * rows are named after the target's label and suffix. Returns the load's
 * exit code. */
static int drive(struct run_a2b *j, int i, struct http_open_test *test,
                 const struct inj_profile *prof, const char *suffix)
{
    const struct run_a2b_opts *o = j->o;
    struct a2b_target *t = &j->t[i];
    struct bench_opts b;
    bench_opts_init(&b, "http-open");
    snprintf(b.host, sizeof b.host, "%s", CHILD_HOST);
    b.port = t->port;
    snprintf(b.target, sizeof b.target, "%s%s", t->label, suffix);
    int pid = t->def ? t->cp.server_pid : t->cp.proc.pid;
    bench_set_server(&b, &pid, 1);
    b.brief = true;
    test->scn = &j->scn;
    test->prof = prof;
    test->time_scale = o->time_scale;
    test->pg_sample = i != T_SQLITE ? j->pg_uri : NULL;
    test->pg_sample_optional = true; /* --pg may name a server elsewhere */
    fprintf(stderr, "shootout run: a2b journey%s against %s (port %d)\n", suffix, t->label,
            t->port);
    int rc = http_open_exec(&b, test, o->ctx, o->rows);
    if (rc != BENCH_EXIT_OK)
        child_alive(&t->cp.proc); /* a failure may be the server dying: say so */
    return rc;
}

/* The reference's journey against target i, then the capacity race on
 * PostgreSQL. Returns false if a load failed. */
static bool load(struct run_a2b *j, int i)
{
    struct a2b_target *t = &j->t[i];
    t->ran = true;
    t->rc = drive(j, i, &t->test, &j->prof, "");
    struct http_open_summary s;
    if (http_open_last_summary(&t->test, &s))
        figures_from(&t->fig, &s);
    if (i != T_SQLITE && j->race_prof.n && child_alive(&t->cp.proc)) {
        t->raced = true;
        /* Up the staircase until saturated, its users' journeys after. */
        t->race.until_saturated = true;
        t->race.max_duration_s = inj_profile_duration(&j->race_prof) + A2B_RACE_TAIL_S;
        t->race_rc = drive(j, i, &t->race, &j->race_prof, ", capacity");
        struct http_open_level *lv = mem_calloc(INJ_MAX_SEGMENTS + 1, sizeof *lv);
        unsigned n = http_open_last_levels(&t->race, lv, INJ_MAX_SEGMENTS + 1);
        run_a2b_race_verdict(lv, n, &t->fig.race);
        t->fig.raced = n > 0;
        t->fig.race_ceiling = j->race_ceiling;
        mem_free(lv);
    }
    return t->rc == BENCH_EXIT_OK && (!t->raced || t->race_rc == BENCH_EXIT_OK);
}

/* Starts target i, loads it and stops it, so that the targets never share
 * the cores. Returns the exit code for its part of the job. */
static int measure(struct run_a2b *j, int i)
{
    const struct run_a2b_opts *o = j->o;
    struct a2b_target *t = &j->t[i];
    char err[512];
    int rc = 0;
    if (t->def) { /* through its start script on the PostgreSQL data set */
        char *extra[] = {"--db", j->pg_uri, "--pool", "4", NULL};
        if (contender_enter(&t->cp, o->roster, (unsigned)(t->def - contender_defs), extra,
                            t->note, sizeof t->note, o->out) < 0)
            return BENCH_EXIT_OK; /* a contender's failure is its row's */
        t->port = t->cp.port;
        t->fig.col[2] = t->cp.boot_s;
    } else {
        struct launch l = {j, i};
        if (child_start_on_free_port(&t->cp.proc, launch_ours, &l, err, sizeof err) < 0) {
            fprintf(stderr, "shootout run: cannot start our a2b-server: %s\n", err);
            snprintf(t->note, sizeof t->note, "could not start: %.280s", err);
            return BENCH_EXIT_RUNTIME;
        }
    }
    if (!t->def) {
        fprintf(o->out, "shootout run: %s, pid %d, on %s:%d, ready after %.3f s\n", t->label,
                (int)t->cp.proc.pid, CHILD_HOST, t->port, t->fig.col[2]);
        fflush(o->out);
    }
    bool ok = load(j, i);
    if (t->def) { /* a contender is only stopped, and its failures are its row's */
        contender_stop(&t->cp, o->out);
        return BENCH_EXIT_OK;
    }
    /* Ours must exit 0 on SIGTERM. */
    if (child_finish(&t->cp.proc, true, o->out) < 0)
        rc = BENCH_EXIT_RUNTIME;
    else if (!ok)
        rc = BENCH_EXIT_MISSED;
    return rc;
}

/* ---- the table ----------------------------------------------------------- */

static void figures_row(struct tt *tt, const struct a2b_figures *fig)
{
    tt_cell(tt, "%s%s%s%s", fig->variant, fig->version ? " (" : "",
            fig->version ? fig->version : "", fig->version ? ")" : "");
    for (int c = 0; c < NCOLS; c++)
        if (isnan(fig->col[c]))
            tt_cell(tt, "n/a");
        else
            tt_cell(tt, "%.*f", col_prec[c], fig->col[c]);
}

static void print_table(FILE *f, const struct run_a2b *j)
{
    const struct run_a2b_opts *o = j->o;
    fprintf(f, "\nThe a2b service under the Gatling article's open-model journey (profile "
               "rampUsersPerSec(100).to(200).during(1000 s),\nmaxDuration 2000 s, time scale %g: "
               "durations and pauses / %g, same arrival rates; data set scale %g)\n",
            o->time_scale, o->time_scale, o->data_scale);
    struct tt tt;
    tt_init(&tt, "lrrrrrrrrrrrr");
    tt_cell(&tt, "%s", "");
    tt_cells(&tt, NCOLS, col_title);
    for (int i = 0; i < NTARGETS; i++) {
        const struct a2b_target *t = &j->t[i];
        if (i >= T_PEER && !t->def)
            continue;
        if (t->ran) {
            figures_row(&tt, &t->fig);
        } else {
            tt_cell(&tt, "%s", t->label);
            tt_tail(&tt, "not measured: %s", t->note);
        }
    }
    tt_line(&tt, "-- the article's published rows, %s; not comparable with the rows above --",
            QUOTED_HOW);
    for (unsigned q = 0; q < NQUOTED; q++)
        figures_row(&tt, &quoted[q]);
    tt_print(f, &tt);
    tt_free(&tt);

    fprintf(f, "\na2b, as measured:\n"
               "  %s\n"
               "  MB: size of the artifact, our one `shootout` binary (%s), which holds every "
               "server and load generator\n"
               "  boot s: fork+exec of the server to its first 200 from %s (a database query), "
               "on a data set that\n"
               "  already exists; the first start's data load is apart:",
            j->build_note, o->exe, A2B_READY_PATH);
    const char *sep = " ";
    for (int i = 0; i < T_PEER; i++)
        if (!isnan(j->t[i].fig.data_load_s)) {
            fprintf(f, "%s%s %.2f s", sep, i == T_SQLITE ? "SQLite file created and filled in" :
                                                          "PostgreSQL loaded in",
                    j->t[i].fig.data_load_s);
            sep = "; ";
        }
    fprintf(f, "\n  requests, KO %%, RPS, p95: Gatling's global statistics (KO includes the load "
               "generator's own failures;\n"
               "  RPS = requests / run time; p95 over OK and KO); sat.users: the active users at "
               "the saturation point\n"
               "  (docs/http_open.md); RAM: the server's peak RSS; CPU: its CPU time / run time "
               "(100 = one core);\n"
               "  threads: its peak thread count; PG CPU: the same for the PostgreSQL server the "
               "target uses (its postmaster\n"
               "  and children, exited backends included)\n"
               "  with a time scale above 1 each user lives 1/scale as long, so totals and active "
               "users are about 1/scale\n"
               "  of an unscaled run's while RPS stays comparable; `--full-profile` runs Gatling's "
               "own (about 35 min per target)\n");
}

/* The level of a race whose load is constant, at index k of levels[n]:
 * the race table's rows. */
static const struct http_open_level *race_level(const struct http_open_level *levels, unsigned n,
                                                unsigned k)
{
    if (k >= n || !levels[k].step || levels[k].load_from != levels[k].load_to)
        return NULL;
    return &levels[k];
}

void run_a2b_race_verdict(const struct http_open_level *levels, unsigned n,
                          struct run_a2b_verdict *v)
{
    *v = (struct run_a2b_verdict){0};
    struct ho_level_verdict lv;
    int sat = ho_level_saturation(levels, n, &lv);
    for (unsigned k = 0; k < n; k++) {
        const struct http_open_level *l = race_level(levels, n, k);
        if (!l)
            continue;
        v->rows++;
        v->last_users = l->load_from;
        if (!v->peak_row || l->responses_per_s > v->peak) {
            v->peak = l->responses_per_s;
            v->peak_row = v->rows;
            v->peak_users = l->load_from;
        }
        if (l->p95_ms > 1000 * l->dur_s && l->p95_ms > v->slow_p95_ms) {
            v->slow_p95_ms = l->p95_ms;
            v->slow_level_s = l->dur_s;
        }
        if ((int)k == sat) {
            v->row = v->rows;
            v->users = l->load_from;
            v->level = lv;
        }
    }
}

void run_a2b_race_text(const struct run_a2b_verdict *v, double ceiling, char *buf, size_t len)
{
    char peak[256];
    int n = snprintf(peak, sizeof peak, "peak %.0f responses/s at level %u (%g users/s)", v->peak,
                     v->peak_row, v->peak_users);
    if (v->slow_p95_ms > 0)
        snprintf(peak + n, sizeof peak - (size_t)n,
                 "; but a p95 of %.0f ms outlasts its levels of %g s, whose answers mostly end "
                 "after them: a smaller time scale reads it better", v->slow_p95_ms, v->slow_level_s);
    if (!v->rows)
        snprintf(buf, len, "no level of constant load");
    else if (v->row && v->level.cause == HO_SAT_BACKLOG)
        snprintf(buf, len, "saturated at level %u (%g users/s): answers %.1f %% behind the "
                           "requests sent in it and p95 %.1f ms against %.1f ms before "
                           "(backlog); %s", v->row, v->users, v->level.behind_pct,
                 v->level.p95_ms, v->level.base_p95_ms, peak);
    else if (v->row)
        snprintf(buf, len, "saturated at level %u (%g users/s): the server's KO %.1f %% of its "
                           "answers against %.1f %% before (failures); %s", v->row, v->users,
                 v->level.ko_pct, v->level.base_ko_pct, peak);
    else if (v->last_users >= ceiling)
        snprintf(buf, len, "not saturated up to the ceiling %g users/s; %s", ceiling, peak);
    else
        snprintf(buf, len, "not saturated up to level %u (%g users/s), below the ceiling %g "
                           "users/s; %s", v->rows, v->last_users, ceiling, peak);
}

/* One target's cells of a race row, or dashes where it has none. */
static void race_cells(struct tt *tt, const struct http_open_level *l)
{
    if (!l) {
        for (int c = 0; c < 4; c++)
            tt_cell(tt, "-");
        return;
    }
    tt_cell(tt, "%.0f", l->rps);
    tt_cell(tt, "%.0f", l->responses_per_s);
    tt_cell(tt, "%.1f", l->p95_ms);
    tt_cell(tt, "%.1f", l->requests > 0 ? 100 * l->ko / l->requests : 0.0);
}

static void print_race(FILE *f, const struct run_a2b *j)
{
    static struct http_open_level lv[NTARGETS][INJ_MAX_SEGMENTS + 1];
    /* Ours on PostgreSQL, then every contender that could run here. */
    int who[NTARGETS], nwho = 0;
    unsigned n[NTARGETS] = {0}, rows = 0;
    for (int i = T_PG; i < NTARGETS; i++) {
        const struct a2b_target *t = &j->t[i];
        if (i != T_PG && !t->version)
            continue;
        if (t->raced)
            n[nwho] = http_open_last_levels(&t->race, lv[nwho], INJ_MAX_SEGMENTS + 1);
        rows = n[nwho] > rows ? n[nwho] : rows;
        who[nwho++] = i;
    }
    if (!rows)
        return;
    fprintf(f, "\nThe capacity race on PostgreSQL: the same journey under %s, durations / %g,\n"
               "one target at a time, each climbing until the level rule finds it saturated or "
               "the ceiling (%g users/s)\nis reached; a request counts in the level it was sent "
               "in. req/s: requests sent per second (the demand),\nresp/s: answers per second, "
               "p95 over OK and KO; ratios against the best other target of the level, above 1 "
               "favour ours\n",
            j->o->capacity, j->o->time_scale, j->race_ceiling);
    char align[TT_MAX_COLS + 1];
    unsigned ncols = 2 + 4 * (unsigned)nwho + 2;
    memset(align, 'r', ncols);
    align[0] = 'l';
    align[ncols] = '\0';
    struct tt tt;
    tt_init(&tt, align);
    tt_cell(&tt, "%s", "");
    tt_cell(&tt, "%s", "");
    for (int w = 0; w < nwho; w++)
        tt_span(&tt, 4, "%s", w ? j->t[who[w]].def->name : "shootout a2b-server");
    tt_end(&tt);
    static const char *const titles[] = {"req/s", "resp/s", "p95 ms", "KO %"};
    tt_cell(&tt, "level");
    tt_cell(&tt, "users/s");
    for (int w = 0; w < nwho; w++)
        tt_cells(&tt, 4, titles);
    tt_cell(&tt, "p95 best/ours");
    tt_cell(&tt, "resp/s ours/best");
    unsigned row = 0;
    for (unsigned k = 0; k < rows; k++) {
        const struct http_open_level *l[NTARGETS], *any = NULL;
        const struct http_open_level *best_p95 = NULL, *best_resp = NULL;
        for (int w = 0; w < nwho; w++) {
            l[w] = race_level(lv[w], n[w], k);
            any = any ? any : l[w];
            if (w && l[w] && (!best_p95 || l[w]->p95_ms < best_p95->p95_ms))
                best_p95 = l[w];
            if (w && l[w] && (!best_resp || l[w]->responses_per_s > best_resp->responses_per_s))
                best_resp = l[w];
        }
        if (!any)
            continue;
        tt_cell(&tt, "%u", ++row);
        tt_cell(&tt, "%g", any->load_from);
        for (int w = 0; w < nwho; w++)
            race_cells(&tt, l[w]);
        if (l[0] && best_p95 && l[0]->p95_ms > 0 && best_resp->responses_per_s > 0) {
            tt_cell(&tt, "%.2fx", best_p95->p95_ms / l[0]->p95_ms);
            tt_cell(&tt, "%.2fx", l[0]->responses_per_s / best_resp->responses_per_s);
        }
        tt_end(&tt);
    }
    tt_print(f, &tt);
    tt_free(&tt);
    for (int i = T_PG; i < NTARGETS; i++) {
        const struct a2b_target *t = &j->t[i];
        if (i != T_PG && !t->def)
            continue;
        if (!t->raced) {
            fprintf(f, "  %s: not raced%s%s\n", t->label, t->note[0] ? ": " : "", t->note);
            continue;
        }
        char text[512];
        run_a2b_race_text(&t->fig.race, j->race_ceiling, text, sizeof text);
        fprintf(f, "  %s: %s\n", t->label, text);
    }
}

/* ---- the rows ------------------------------------------------------------ */

static void figures_json(struct json *jw, const void *arg)
{
    const struct a2b_figures *f = arg;
    json_key(jw, "a2b");
    json_object_begin(jw);
    json_key(jw, "variant");
    json_string(jw, f->variant);
    for (int c = 0; c < NCOLS; c++) {
        json_key(jw, col_key[c]);
        if (isnan(f->col[c]))
            json_null(jw);
        else
            json_number(jw, f->col[c]);
    }
    json_key(jw, "quoted");
    if (f->quoted)
        json_string(jw, f->quoted);
    else
        json_null(jw);
    json_key(jw, "time_scale");
    json_number(jw, f->time_scale);
    json_key(jw, "data_load_s");
    if (isnan(f->data_load_s))
        json_null(jw);
    else
        json_number(jw, f->data_load_s);
    json_key(jw, "capacity");
    if (f->raced) {
        const struct run_a2b_verdict *v = &f->race;
        json_object_begin(jw);
        json_key(jw, "saturated_level");
        if (v->row)
            json_int(jw, v->row);
        else
            json_null(jw);
        json_key(jw, "saturated_users_per_sec");
        if (v->row)
            json_number(jw, v->users);
        else
            json_null(jw);
        json_kstr(jw, "cause", v->row ? (v->level.cause == HO_SAT_BACKLOG ? "backlog" : "failures")
                                      : "none");
        json_kv(jw, "levels", v->rows);
        json_kv(jw, "last_users_per_sec", v->last_users);
        json_kv(jw, "ceiling_users_per_sec", f->race_ceiling);
        json_kv(jw, "peak_responses_per_sec", v->peak);
        json_kv(jw, "peak_level", v->peak_row);
        json_object_end(jw);
    } else {
        json_null(jw);
    }
    json_object_end(jw);
}

/* A row with the article's columns for fig, which must outlive the rows. */
static void append_figures(struct run_a2b *j, const struct a2b_figures *fig)
{
    struct result_row r = {0};
    r.experiment = fig->quoted ? "a2b-quoted" : "a2b";
    snprintf(r.name, sizeof r.name, "%s/%s", r.experiment, fig->variant);
    snprintf(r.target, sizeof r.target, "%s", fig->variant);
    r.throughput = isnan(fig->col[5]) ? 0 : fig->col[5];
    r.throughput_def = "the article's RPS: requests / run time";
    r.op_def = "one HTTP request";
    r.op_unit = "req";
    r.repetitions = 1;
    result_param(&r, "time_scale", fig->time_scale);
    r.target_version = fig->version;
    r.extra_json = figures_json;
    r.extra_arg = fig;
    result_set_append(j->o->rows, &r, 1);
}

/* ---- the part ------------------------------------------------------------ */

/* Notes a target's exit code: a server lost (1) or a load failed (3). */
static void tally(int rc, bool *runtime, bool *missed)
{
    if (rc == BENCH_EXIT_RUNTIME)
        *runtime = true;
    else if (rc)
        *missed = true;
}

/* The journey, its feeders drawing users and routes that exist in the data
 * set. */
static void scenario_init(struct run_a2b *j)
{
    char err[256];
    if (scn_parse(scn_a2b_text, strlen(scn_a2b_text), &j->scn, err, sizeof err) < 0)
        abort(); /* the built-in text is tested */
    struct a2b_data d;
    a2b_data_init(&d, 1, j->o->data_scale);
    for (unsigned i = 0; i < j->scn.nfeeders; i++) {
        struct scn_feeder *f = &j->scn.feeders[i];
        if (f->kind == SCN_FEED_A2B_ROUTES)
            f->routes = d;
        else if (f->max > d.users)
            f->max = d.users;
    }
    http_open_reference_profile(&j->prof);
    struct inj_step st;
    if (!j->o->capacity)
        return;
    if (inj_parse_step(j->o->capacity, strlen(j->o->capacity), &st, err, sizeof err) < 0)
        abort(); /* shootout run has checked it */
    if (j->o->ceiling > 0) /* a staircase, checked: its levels up to the ceiling */
        st.n = floor((j->o->ceiling - inj_stair_load(&st, 0)) / st.inc + 1e-9) + 1;
    if (inj_profile_add(&j->race_prof, &st, err, sizeof err) < 0)
        abort();
    struct inj_segment *seg = mem_calloc(INJ_MAX_SEGMENTS, sizeof *seg);
    unsigned n = inj_profile_segments(&j->race_prof, seg);
    for (unsigned i = 0; i < n; i++)
        j->race_ceiling = fmax(j->race_ceiling, fmax(seg[i].s.r1, seg[i].s.r2));
    mem_free(seg);
}

int run_a2b(const struct run_a2b_opts *o, struct run_a2b **job)
{
    static const char *const labels[T_PEER] = {"shootout a2b-server, SQLite",
                                               "shootout a2b-server, PostgreSQL"};
    struct run_a2b *j = mem_calloc(1, sizeof *j);
    *job = j;
    j->o = o;
    child_init(&j->pg, "postgres");
    int npeers = T_PEER;
    for (unsigned c = 0; c < contender_count && npeers < NTARGETS; c++)
        if (contender_defs[c].kind == CK_A2B && (o->roster->chosen >> c & 1)) {
            struct a2b_target *t = &j->t[npeers++];
            t->def = &contender_defs[c];
            t->version = contender_version(o->roster, c);
            snprintf(t->label_buf, sizeof t->label_buf, "%s, PostgreSQL", t->def->name);
        }
    for (int i = 0; i < NTARGETS; i++) {
        struct a2b_target *t = &j->t[i];
        t->label = i < T_PEER ? labels[i] : t->label_buf;
        child_init(&t->cp.proc, "shootout"); /* a contender's: contender_enter's */
        if (i < T_PEER)
            t->version = o->version;
        t->fig.version = t->version;
        http_open_test_init(&t->test);
        http_open_test_init(&t->race);
        t->fig.variant = t->label;
        t->fig.time_scale = o->time_scale;
        t->fig.data_load_s = NAN;
        for (int c = 0; c < NCOLS; c++)
            t->fig.col[c] = NAN;
    }
    scenario_init(j);
    build_figures(j);
    for (int i = 0; i < T_PEER; i++) {
        j->t[i].fig.col[0] = j->build_s;
        j->t[i].fig.col[1] = j->artifact_mb;
    }

    bool runtime = false, missed = false;
    char err[512], db[300], scale[32];
    if (contender_mkdtemp(j->dir, sizeof j->dir, "a2b", err, sizeof err) < 0) {
        fprintf(stderr, "shootout run: %s\n", err);
        return BENCH_EXIT_RUNTIME;
    }
    snprintf(db, sizeof db, "%s/a2b.db", j->dir);
    snprintf(scale, sizeof scale, "%g", o->data_scale);
    char *init[] = {(char *)o->exe, "a2b-server", "--db", db, "--init", "--scale", scale, NULL};
    fprintf(o->out, "shootout run: a2b, time scale %g, data set scale %g; progress on stderr\n",
            o->time_scale, o->data_scale);
    fflush(o->out);
    if (run_command("a2b-init", init, "a2b: created ", &j->t[T_SQLITE].fig.data_load_s, err,
                    sizeof err) < 0) {
        fprintf(stderr, "shootout run: cannot create the a2b SQLite file: %s\n", err);
        snprintf(j->t[T_SQLITE].note, sizeof j->t[T_SQLITE].note, "%.300s", err);
        runtime = true;
    } else {
        tally(measure(j, T_SQLITE), &runtime, &missed);
    }
    if (pg_prepare(j, &runtime)) {
        tally(measure(j, T_PG), &runtime, &missed);
        for (int i = T_PEER; i < npeers; i++)
            measure(j, i);
    }
    /* runuser dies of the SIGTERM it forwards: only a death before counts. */
    if (child_finish(&j->pg, false, o->out) < 0)
        runtime = true;
    rm_tree(j->dir);
    rm_tree(j->pg_dir);

    for (int i = 0; i < NTARGETS; i++)
        if (j->t[i].ran)
            append_figures(j, &j->t[i].fig);
    for (unsigned q = 0; q < NQUOTED; q++)
        append_figures(j, &quoted[q]);
    print_table(o->out, j);
    print_race(o->out, j);
    fflush(o->out);
    return runtime ? BENCH_EXIT_RUNTIME : missed ? BENCH_EXIT_MISSED : BENCH_EXIT_OK;
}

void run_a2b_free(struct run_a2b *j)
{
    if (!j)
        return;
    for (int i = 0; i < NTARGETS; i++) {
        http_open_test_free(&j->t[i].test);
        http_open_test_free(&j->t[i].race);
        child_free(&j->t[i].cp.proc);
    }
    child_free(&j->pg);
    scn_free(&j->scn);
    mem_free(j);
}
