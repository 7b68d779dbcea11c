/* test_pg_probe.c - unit tests for the PostgreSQL probe (pg_probe.c) on a
 * fake /proc tree: only the chosen postmaster and its children count (a
 * second cluster and other processes do not), CPU time over a window
 * includes a backend that exited in it (through the postmaster's cutime and
 * cstime) and one that started in it, command names with spaces and
 * parentheses parse, peaks of RSS and processes, a postmaster that
 * vanishes; and finding the postmaster by pid (a backend, another program
 * or no process refused) or by a connection string that reaches nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "load/pg_probe.h"

static char root[64];

struct fake {
    int pid, ppid;
    const char *comm;
    long long utime, stime, cutime, cstime, rss_pages;
};

static void put(const struct fake *p)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%d", root, p->pid);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%d/stat", root, p->pid);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    /* pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime cutime cstime priority nice threads
     * itrealvalue starttime vsize rss ... */
    fprintf(f, "%d (%s) S %d %d %d 0 -1 4194560 0 0 0 0 %lld %lld %lld %lld 20 0 1 0 100 1000000 %lld 0 0\n",
            p->pid, p->comm, p->ppid, p->ppid, p->ppid, p->utime, p->stime, p->cutime, p->cstime,
            p->rss_pages);
    fclose(f);
}

static void drop(int pid)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%d/stat", root, pid);
    unlink(path);
    snprintf(path, sizeof path, "%s/%d", root, pid);
    rmdir(path);
}

static const int all_pids[] = {1, 100, 101, 102, 103, 104, 105, 200, 201};

static int setup(void **state)
{
    snprintf(root, sizeof root, "/tmp/test_pg_probe.XXXXXX");
    assert_non_null(mkdtemp(root));
    static const struct fake tree[] = {
        {1, 0, "init", 900, 900, 9000, 9000, 50},
        {100, 1, "postgres", 50, 10, 200, 40, 1000}, /* our postmaster */
        {101, 100, "postgres", 30, 5, 0, 0, 500},    /* a backend */
        {102, 100, "postgres", 7, 3, 0, 0, 300},
        {103, 100, "sh -c (x) y)", 1, 1, 0, 0, 10}, /* an odd name */
        {200, 1, "postgres", 1000, 100, 500, 50, 4000}, /* another cluster */
        {201, 200, "postgres", 5000, 500, 0, 0, 2000},
    };
    for (size_t i = 0; i < sizeof tree / sizeof tree[0]; i++)
        put(&tree[i]);
    char self[128];
    snprintf(self, sizeof self, "%s/self", root);
    mkdir(self, 0755);
    return 0;
}

static int teardown(void **state)
{
    for (size_t i = 0; i < sizeof all_pids / sizeof all_pids[0]; i++)
        drop(all_pids[i]);
    char self[128];
    snprintf(self, sizeof self, "%s/self", root);
    rmdir(self);
    rmdir(root);
    return 0;
}

static void test_window(void **state)
{
    double page_kb = (double)(sysconf(_SC_PAGESIZE) / 1024), tck = (double)sysconf(_SC_CLK_TCK);
    struct pg_probe p;
    pg_probe_start(&p, root, 100);
    assert_false(p.lost);
    /* 100, 101, 102 and 103: not the other cluster, not init. */
    assert_int_equal(p.procs_max, 4);
    assert_true(p.rss_max_kb == (1000 + 500 + 300 + 10) * page_kb);
    assert_true(pg_probe_cpu_s(&p) == 0);

    /* Then: the postmaster runs 2 ticks; backend 101 runs 5 more and
     * exits, and the postmaster reaps it (its 35 + 5 ticks move to cutime
     * and cstime); 102 runs 10; 104 and 105 start, 104 runs 4. The other
     * cluster runs plenty. */
    drop(101);
    put(&(struct fake){100, 1, "postgres", 52, 10, 200 + 35, 40 + 5, 1600});
    put(&(struct fake){102, 100, "postgres", 17, 3, 0, 0, 300});
    put(&(struct fake){104, 100, "postgres", 4, 0, 0, 0, 100});
    put(&(struct fake){105, 100, "postgres", 0, 0, 0, 0, 100});
    put(&(struct fake){201, 200, "postgres", 9000, 900, 0, 0, 2000});
    pg_probe_sample(&p);
    assert_false(p.lost);
    assert_true(pg_probe_cpu_s(&p) * tck > 21 - 1e-9 && pg_probe_cpu_s(&p) * tck < 21 + 1e-9);
    assert_int_equal(p.procs_max, 5);
    assert_true(p.rss_max_kb == (1600 + 300 + 10 + 100 + 100) * page_kb);

    /* Fewer and smaller: the peaks stay. */
    drop(104);
    drop(105);
    put(&(struct fake){100, 1, "postgres", 52, 10, 200 + 35 + 4, 40 + 5, 900});
    pg_probe_sample(&p);
    assert_true(pg_probe_cpu_s(&p) * tck > 21 - 1e-9 && pg_probe_cpu_s(&p) * tck < 21 + 1e-9);
    assert_int_equal(p.procs_max, 5);
    assert_true(p.rss_max_kb == (1600 + 300 + 10 + 100 + 100) * page_kb);

    /* A postmaster that is gone keeps its last figures. */
    drop(100);
    pg_probe_sample(&p);
    assert_true(p.lost);
    assert_true(pg_probe_cpu_s(&p) * tck > 21 - 1e-9 && pg_probe_cpu_s(&p) * tck < 21 + 1e-9);
}

static void find_bad(const char *spec, const char *why)
{
    char err[512] = "";
    int pid = -7;
    assert_int_equal(pg_probe_find(spec, root, &pid, err, sizeof err), -1);
    if (!strstr(err, why))
        fail_msg("'%s': '%s' does not say '%s'", spec, err, why);
}

static void test_find(void **state)
{
    char err[512];
    int pid = 0;
    assert_int_equal(pg_probe_find("100", root, &pid, err, sizeof err), 0);
    assert_int_equal(pid, 100);
    assert_int_equal(pg_probe_find("200", root, &pid, err, sizeof err), 0);
    assert_int_equal(pid, 200);
    find_bad("101", "backend of the postmaster 100");
    find_bad("1", "'init', not postgres");
    find_bad("999", "no process 999");
    find_bad("0", "no process 0");
    find_bad("99999999999", "no process");
    /* Not a number: a connection string, here to a port nobody serves. */
    find_bad("host=127.0.0.1 port=1 connect_timeout=2", "cannot connect");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
