/* progress.c - the live progress line of a run (progress.h). */
#include "load/progress.h"

#include <string.h>
#include <unistd.h>

#include "core/clock.h"

/* At most ten redraws a second: enough to look live, too few to cost. */
#define PROGRESS_PERIOD_NS 100000000u

bool progress_wanted(enum progress_mode mode, FILE *f)
{
    return mode == PROGRESS_ALWAYS || (mode == PROGRESS_AUTO && isatty(fileno(f)));
}

void progress_begin(struct progress *p, FILE *f, bool on, const char *label, const char *unit)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    p->on = on;
    snprintf(p->label, sizeof p->label, "%s", label);
    p->unit = unit;
    p->t0_ns = clock_now_ns();
}

/* 12.3 k, 4.56 M: three figures at most, as a line that must stay short. */
static void progress_si(char *out, size_t cap, double v)
{
    if (v >= 1e6)
        snprintf(out, cap, "%.3g M", v / 1e6);
    else if (v >= 1e3)
        snprintf(out, cap, "%.3g k", v / 1e3);
    else
        snprintf(out, cap, "%.0f", v);
}

size_t progress_format(char *out, size_t cap, const char *label, const char *unit, uint64_t done,
                       uint64_t total, double elapsed_s)
{
    int n;
    double rate = elapsed_s > 0 ? (double)done / elapsed_s : 0;
    char r[32];
    progress_si(r, sizeof r, rate);
    if (total == 0) {
        n = snprintf(out, cap, "%s: connecting, elapsed %.1fs", label, elapsed_s);
    } else {
        double left = done < total && rate > 0 ? (double)(total - done) / rate : 0;
        char eta[32];
        if (done >= total || rate > 0)
            snprintf(eta, sizeof eta, "%.1fs", left);
        else
            snprintf(eta, sizeof eta, "?");
        n = snprintf(out, cap, "%s: %llu/%llu %s %3.0f%%, %s %s/s, elapsed %.1fs, ETA %s", label,
                     (unsigned long long)done, (unsigned long long)total, unit,
                     100.0 * (double)done / (double)total, r, unit, elapsed_s, eta);
    }
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static void progress_draw(struct progress *p, uint64_t now)
{
    char line[256];
    size_t n = progress_format(line, sizeof line, p->label, p->unit, p->done, p->total,
                               (double)(now - p->t0_ns) / 1e9);
    /* Back to the start of the line, the new text, then clear what a longer
     * line before left. */
    fprintf(p->f, "\r%.*s\033[K", (int)n, line);
    fflush(p->f);
    p->drawn = true;
    p->last_ns = now;
}

void progress_note(struct progress *p, uint64_t done, uint64_t total)
{
    if (!p)
        return;
    p->done = done;
    p->total = total;
}

void progress_update(struct progress *p, uint64_t done, uint64_t total)
{
    if (!p || !p->on)
        return;
    progress_note(p, done, total);
    uint64_t now = clock_now_ns();
    if (now - p->last_ns >= PROGRESS_PERIOD_NS)
        progress_draw(p, now);
}

void progress_end(struct progress *p)
{
    if (!p || !p->on)
        return;
    progress_draw(p, clock_now_ns());
    fputc('\n', p->f);
    p->on = false;
}
