/* progress.h - the live progress line of a load generator's run on a
 * terminal: "NAME run R/N: DONE/TOTAL UNIT PCT, RATE UNIT/s, elapsed E, ETA
 * T", redrawn in place on stderr at most ten times a second, and left
 * there when the run ends, so the lines that follow (the table, or the
 * brief line per run of `shootout run`) come under it.
 *
 * --progress auto (the default) draws it only when stderr is a terminal;
 * always draws it anyway (for a pseudo-terminal logger, say); never does
 * not. Without it the output is what it was: plain lines, no '\r'.
 *
 * Drawing happens on the thread that calls progress_update (the runs'
 * watchdogs on the main thread); a NULL struct progress is a no-op.
 */
#ifndef SHOOTOUT_PROGRESS_H
#define SHOOTOUT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum progress_mode { PROGRESS_AUTO, PROGRESS_ALWAYS, PROGRESS_NEVER };

struct progress {
    FILE *f;
    bool on;    /* this run is drawn */
    bool drawn; /* something is on the line */
    char label[192];
    const char *unit;
    uint64_t t0_ns, last_ns;
    uint64_t done, total;
    bool timed;     /* planned by time (total_s), not by count */
    double total_s;
};

/* Whether mode draws on f (a terminal for auto). */
bool progress_wanted(enum progress_mode mode, FILE *f);

/* A run starts: label ("mqtt-load run 1/3") and the unit of its work
 * ("msgs"); on says whether to draw at all. */
void progress_begin(struct progress *p, FILE *f, bool on, const char *label, const char *unit);
/* done of total units so far (total 0: not begun, as while connecting;
 * a run planned by time ends with done of done);
 * redraws if the last draw is 100 ms old. final: the run's last figures,
 * kept for progress_end rather than drawn. */
void progress_update(struct progress *p, uint64_t done, uint64_t total, bool final);
/* The same for a run planned to last total_s seconds: done units so far,
 * and the share of the time gone (past total_s, as users finish, the line
 * says when the plan ended). */
void progress_update_timed(struct progress *p, uint64_t done, double total_s, bool final);
/* The run ended: draws the last figures and ends the line. */
void progress_end(struct progress *p);

/* The line for p's figures after elapsed_s, into out (for the unit
 * tests). Returns its length. */
size_t progress_format(char *out, size_t cap, const struct progress *p, double elapsed_s);

#endif
