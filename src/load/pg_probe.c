/* pg_probe.c - one PostgreSQL server's processes from /proc.
 *
 * The server's CPU time at an instant is the postmaster's own utime and
 * stime, plus its cutime and cstime (every child it has reaped, and their
 * reaped children), plus utime, stime, cutime and cstime of each child
 * alive. A child that exits moves from the last term to the second when
 * the postmaster reaps it, so the sum only grows, and its difference over
 * a window counts every process that ran in it, short-lived ones included.
 * The children are read between two reads of the postmaster; if a reap
 * happened in between (its cutime or cstime moved) the reading is taken
 * again, so that no child counts twice or not at all.
 */
#include "load/pg_probe.h"

#include <dirent.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "load/probe.h"

#define PG_COMM "postgres"
#define PG_READ_TRIES 4

static double own_ticks(const struct probe_stat *st)
{
    return (double)st->utime + (double)st->stime + (double)st->cutime + (double)st->cstime;
}

static double rss_kb(const struct probe_stat *st)
{
    return (double)st->rss_pages * (double)(sysconf(_SC_PAGESIZE) / 1024);
}

/* ---- finding the postmaster ---------------------------------------------- */

/* Checks that pid is a postmaster: named postgres, its parent not. */
static int check_postmaster(const char *proc, int pid, char *err, size_t errlen)
{
    struct probe_stat st, parent;
    if (probe_stat_read(proc, pid, &st) < 0) {
        snprintf(err, errlen, "no process %d (%s/%d/stat unreadable)", pid, proc, pid);
        return -1;
    }
    if (strcmp(st.comm, PG_COMM)) {
        snprintf(err, errlen, "process %d is '%s', not %s", pid, st.comm, PG_COMM);
        return -1;
    }
    if (probe_stat_read(proc, st.ppid, &parent) == 0 && !strcmp(parent.comm, PG_COMM)) {
        snprintf(err, errlen, "process %d is a backend of the postmaster %d: give the postmaster",
                 pid, st.ppid);
        return -1;
    }
    return 0;
}

/* The postmaster of the server conninfo connects to: the parent of our
 * backend, read while the connection holds it alive. */
static int find_by_conninfo(const char *conninfo, const char *proc, int *pid, char *err,
                            size_t errlen)
{
    const char *const keys[] = {"dbname", "connect_timeout", NULL};
    const char *const vals[] = {conninfo, "10", NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    int rc = -1;
    if (PQstatus(c) != CONNECTION_OK) {
        snprintf(err, errlen, "cannot connect: %s", PQerrorMessage(c));
        err[strcspn(err, "\n")] = '\0';
        PQfinish(c);
        return -1;
    }
    PGresult *r = PQexec(c, "SELECT pg_backend_pid()");
    int backend = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        snprintf(err, errlen, "SELECT pg_backend_pid(): %s", PQerrorMessage(c));
        err[strcspn(err, "\n")] = '\0';
    } else {
        backend = atoi(PQgetvalue(r, 0, 0));
        struct probe_stat st;
        if (probe_stat_read(proc, backend, &st) < 0 || strcmp(st.comm, PG_COMM) ||
            check_postmaster(proc, st.ppid, err, errlen) < 0) {
            snprintf(err, errlen,
                     "the server's backend %d is not a %s process here (another machine, or "
                     "another pid namespace): give the postmaster's pid as this machine sees it",
                     backend, PG_COMM);
        } else {
            *pid = st.ppid;
            rc = 0;
        }
    }
    PQclear(r);
    PQfinish(c);
    /* Our backend's CPU time is not the load's: wait (up to 1 s) until the
     * postmaster has reaped it, before any window opens. */
    struct probe_stat st;
    struct timespec ms = {0, 1000000};
    for (int i = 0; rc == 0 && i < 1000 && probe_stat_read(proc, backend, &st) == 0 &&
                    st.ppid == *pid;
         i++)
        nanosleep(&ms, NULL);
    return rc;
}

int pg_probe_find(const char *spec, const char *proc, int *pid, char *err, size_t errlen)
{
    if (spec[0] && strspn(spec, "0123456789") == strlen(spec)) {
        long v = strtol(spec, NULL, 10);
        if (v <= 0 || v > 0x3fffffff) {
            snprintf(err, errlen, "no process %s", spec);
            return -1;
        }
        *pid = (int)v;
        return check_postmaster(proc, *pid, err, errlen);
    }
    return find_by_conninfo(spec, proc, pid, err, errlen);
}

/* ---- sampling ------------------------------------------------------------- */

struct pg_reading {
    double ticks, rss_kb;
    unsigned procs;
};

/* The postmaster's children, summed into r. */
static void read_children(const char *proc, int postmaster, struct pg_reading *r)
{
    DIR *d = opendir(proc);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct probe_stat st;
        int pid = atoi(e->d_name);
        if (pid <= 0 || probe_stat_read(proc, pid, &st) < 0 || st.ppid != postmaster)
            continue;
        r->ticks += own_ticks(&st);
        r->rss_kb += rss_kb(&st);
        r->procs++;
    }
    closedir(d);
}

/* The server at this instant; false if the postmaster is gone. */
static bool read_server(const char *proc, int postmaster, struct pg_reading *r)
{
    struct probe_stat before, after;
    if (probe_stat_read(proc, postmaster, &before) < 0)
        return false;
    for (int i = 0; i < PG_READ_TRIES; i++) {
        *r = (struct pg_reading){0};
        read_children(proc, postmaster, r);
        if (probe_stat_read(proc, postmaster, &after) < 0)
            return false;
        bool reaped = after.cutime != before.cutime || after.cstime != before.cstime;
        before = after;
        if (!reaped)
            break;
    }
    r->ticks += own_ticks(&after);
    r->rss_kb += rss_kb(&after);
    r->procs++;
    return true;
}

void pg_probe_sample(struct pg_probe *p)
{
    struct pg_reading r;
    if (!read_server(p->proc, p->postmaster, &r)) {
        p->lost = true;
        return;
    }
    p->ticks = r.ticks;
    p->rss_max_kb = fmax(p->rss_max_kb, r.rss_kb);
    if (r.procs > p->procs_max)
        p->procs_max = r.procs;
}

void pg_probe_start(struct pg_probe *p, const char *proc, int postmaster)
{
    *p = (struct pg_probe){.proc = proc, .postmaster = postmaster};
    pg_probe_sample(p);
    p->ticks0 = p->ticks;
}

double pg_probe_cpu_s(const struct pg_probe *p)
{
    return (p->ticks - p->ticks0) / (double)sysconf(_SC_CLK_TCK);
}
