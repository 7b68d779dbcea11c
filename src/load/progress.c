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

/* "ETA 4.2s", or "ETA ?" before there is a rate to go by. */
static void progress_eta(char *out, size_t cap, double left_s, bool known)
{
    if (known)
        snprintf(out, cap, "%.1fs", left_s > 0 ? left_s : 0);
    else
        snprintf(out, cap, "?");
}

size_t progress_format(char *out, size_t cap, const struct progress *p, double elapsed_s)
{
    int n;
    double rate = elapsed_s > 0 ? (double)p->done / elapsed_s : 0;
    char r[32], eta[32];
    progress_si(r, sizeof r, rate);
    if (p->timed && elapsed_s < p->total_s) {
        progress_eta(eta, sizeof eta, p->total_s - elapsed_s, true);
        n = snprintf(out, cap, "%s: %llu %s, %s %s/s, elapsed %.1fs of %.1fs %3.0f%%, ETA %s",
                     p->label, (unsigned long long)p->done, p->unit, r, p->unit, elapsed_s,
                     p->total_s, 100 * elapsed_s / p->total_s, eta);
    } else if (p->timed) {
        n = snprintf(out, cap, "%s: %llu %s, %s %s/s, elapsed %.1fs, planned %.1fs", p->label,
                     (unsigned long long)p->done, p->unit, r, p->unit, elapsed_s, p->total_s);
    } else if (p->total == 0) {
        n = snprintf(out, cap, "%s: setting up, elapsed %.1fs", p->label, elapsed_s);
    } else {
        bool over = p->done >= p->total;
        progress_eta(eta, sizeof eta, over ? 0 : (double)(p->total - p->done) / rate,
                     over || rate > 0);
        n = snprintf(out, cap, "%s: %llu/%llu %s %3.0f%%, %s %s/s, elapsed %.1fs, ETA %s",
                     p->label, (unsigned long long)p->done, (unsigned long long)p->total, p->unit,
                     100.0 * (double)p->done / (double)p->total, r, p->unit, elapsed_s, eta);
    }
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static void progress_draw(struct progress *p, uint64_t now)
{
    char line[256];
    size_t n = progress_format(line, sizeof line, p, (double)(now - p->t0_ns) / 1e9);
    /* Back to the start of the line, the new text, then clear what a longer
     * line before left. */
    fprintf(p->f, "\r%.*s\033[K", (int)n, line);
    fflush(p->f);
    p->drawn = true;
    p->last_ns = now;
}

static void progress_maybe_draw(struct progress *p, bool final)
{
    uint64_t now = clock_now_ns();
    if (!final && now - p->last_ns >= PROGRESS_PERIOD_NS)
        progress_draw(p, now);
}

void progress_update(struct progress *p, uint64_t done, uint64_t total, bool final)
{
    if (!p || !p->on)
        return;
    p->done = done;
    p->total = total;
    p->timed = false;
    progress_maybe_draw(p, final);
}

void progress_update_timed(struct progress *p, uint64_t done, double total_s, bool final)
{
    if (!p || !p->on)
        return;
    p->done = done;
    p->timed = true;
    p->total_s = total_s;
    progress_maybe_draw(p, final);
}

void progress_end(struct progress *p)
{
    if (!p || !p->on)
        return;
    progress_draw(p, clock_now_ns());
    fputc('\n', p->f);
    p->on = false;
}
