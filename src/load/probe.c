/* probe.c - getrusage for ourselves, /proc/PID/stat and schedstat for a server's processes. */
#include "load/probe.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct proc_stat {
    double cpu_s;
    long rss_kb, threads;
};

/* CPU time of every thread of pid in seconds, from the scheduler's
 * nanosecond accounting (/proc/pid/task/TID/schedstat, first field: time on
 * a CPU, user and system alike). /proc/pid/stat counts the same time in
 * clock ticks (10 ms), too coarse for runs that last a fraction of a second.
 * Returns a negative value if schedstat is not available. */
static double proc_cpu_precise_s(int pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    unsigned long long total = 0;
    bool any = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char file[320];
        snprintf(file, sizeof file, "/proc/%d/task/%s/schedstat", pid, e->d_name);
        FILE *f = fopen(file, "r");
        unsigned long long ns;
        if (f && fscanf(f, "%llu", &ns) == 1) {
            total += ns;
            any = true;
        }
        if (f)
            fclose(f);
    }
    closedir(d);
    return any ? (double)total / 1e9 : -1;
}

int probe_stat_read(const char *root, int pid, struct probe_stat *st)
{
    char path[4200], buf[1024];
    snprintf(path, sizeof path, "%s/%d/stat", root, pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: it ends at the
     * last ')'. */
    const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close || close < open)
        return -1;
    snprintf(st->comm, sizeof st->comm, "%.*s", (int)(close - open - 1), open + 1);
    /* Fields 3.. of proc(5): ppid is 4, utime 14, stime 15, cutime 16,
     * cstime 17, num_threads 20, rss 24. */
    return sscanf(close + 1,
                  " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u" /* state .. cmajflt */
                  " %llu %llu %lld %lld %*d %*d %ld %*d %*u %*u %ld",
                  &st->ppid, &st->utime, &st->stime, &st->cutime, &st->cstime, &st->threads,
                  &st->rss_pages) == 7
               ? 0
               : -1;
}

static int proc_stat_read(int pid, struct proc_stat *st)
{
    struct probe_stat ps;
    if (probe_stat_read("/proc", pid, &ps) < 0)
        return -1;
    double precise = proc_cpu_precise_s(pid);
    st->cpu_s = precise >= 0 ? precise
                             : (double)(ps.utime + ps.stime) / (double)sysconf(_SC_CLK_TCK);
    st->threads = ps.threads;
    st->rss_kb = ps.rss_pages * (sysconf(_SC_PAGESIZE) / 1024);
    return 0;
}

static double self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int probe_server_name(int pid, char *name, size_t len, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(name, (int)len, f)) {
        snprintf(err, errlen, "no process %d to sample (/proc/%d/comm unreadable)", pid, pid);
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    name[strcspn(name, "\n")] = '\0';
    return 0;
}

/* The sums over p's processes, or -1 if one of them cannot be read (a
 * sample then keeps the last good one rather than drop a process). */
static int probe_read(const struct probe *p, struct proc_stat *sum)
{
    memset(sum, 0, sizeof *sum);
    for (unsigned i = 0; i < p->npids; i++) {
        struct proc_stat st;
        if (proc_stat_read(p->pids[i], &st) < 0)
            return -1;
        sum->cpu_s += st.cpu_s;
        sum->rss_kb += st.rss_kb;
        sum->threads += st.threads;
    }
    return 0;
}

void probe_start(struct probe *p, const int *pids, unsigned n)
{
    memset(p, 0, sizeof *p);
    p->npids = n < PROBE_MAX_PIDS ? n : PROBE_MAX_PIDS;
    memcpy(p->pids, pids, p->npids * sizeof *pids);
    p->client_cpu0 = self_cpu_s();
    struct proc_stat st;
    if (p->npids && probe_read(p, &st) == 0) {
        p->server_cpu0 = p->server_cpu = st.cpu_s;
        p->rss_max_kb = st.rss_kb;
        p->threads_max = st.threads;
    }
}

void probe_sample(struct probe *p)
{
    struct proc_stat st;
    if (!p->npids || probe_read(p, &st) < 0)
        return;
    p->server_cpu = st.cpu_s;
    if (st.rss_kb > p->rss_max_kb)
        p->rss_max_kb = st.rss_kb;
    if (st.threads > p->threads_max)
        p->threads_max = st.threads;
}

void probe_finish(struct probe *p, double ops, struct result_row *row)
{
    probe_sample(p);
    double per = ops > 0 ? 1e6 / ops : 0;
    row->client_cpu_s = self_cpu_s() - p->client_cpu0;
    row->client_cpu_us_per_op = row->client_cpu_s * per;
    row->server_pid = p->npids ? p->pids[0] : 0;
    row->server_processes = p->npids;
    if (!p->npids)
        return;
    row->server_cpu_s = p->server_cpu - p->server_cpu0;
    row->server_cpu_us_per_op = row->server_cpu_s * per;
    row->server_rss_max_kb = (double)p->rss_max_kb;
    row->server_threads_max = (double)p->threads_max;
}
