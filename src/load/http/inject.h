/* inject.h - Gatling's injection profiles: when virtual users start.
 *
 * Open steps control the arrival rate (nothingFor, atOnceUsers, rampUsers,
 * constantUsersPerSec, rampUsersPerSec, optionally randomized, and the
 * incrementUsersPerSec staircase); closed steps control how many users are
 * alive at once (constantConcurrentUsers, rampConcurrentUsers and the
 * incrementConcurrentUsers staircase). A profile is a sequence of steps of
 * one model, never both, as in Gatling.
 *
 * A staircase is a meta step: it stands for its levels and the ramps
 * between them, its segments. Every other step is one segment. The
 * generator and the closed target work segment by segment, and the report
 * gives statistics per segment (its load levels).
 *
 * Everything here is pure: the step parser reads one CLI step, and the
 * arrival generator computes the arrival times of an open profile one by
 * one (no array of all users), deterministic for a given seed. The syntax
 * and the arithmetic are documented in docs/http_open.md.
 */
#ifndef SHOOTOUT_INJECT_H
#define SHOOTOUT_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum inj_kind {
    INJ_NOTHING_FOR,       /* d */
    INJ_AT_ONCE,           /* n */
    INJ_RAMP_USERS,        /* n during d */
    INJ_CONSTANT_RATE,     /* r1 users/s during d */
    INJ_RAMP_RATE,         /* r1 to r2 users/s during d */
    INJ_CONSTANT_CONC,     /* closed: n concurrent users during d */
    INJ_RAMP_CONC,         /* closed: r1 to r2 concurrent users during d */
    INJ_STAIRS_RATE,       /* n levels of d at r1, r1 + inc, ... users/s, ramps of ramp_s between */
    INJ_STAIRS_CONC,       /* closed: the same in concurrent users */
};

struct inj_step {
    enum inj_kind kind;
    double n;        /* AT_ONCE, RAMP_USERS, CONSTANT_CONC: users; STAIRS_*: levels */
    double r1, r2;   /* rates (users/s) or concurrencies; STAIRS_*: r1 the first level (see
                        inj_stair_load) */
    double dur_s;    /* STAIRS_*: of each level; inj_step_duration is the whole step's */
    double inc, ramp_s; /* STAIRS_*: the increment, and the ramps' length (0: none) */
    bool randomized; /* open rate steps and STAIRS_RATE: Poisson arrivals */
};

#define INJ_MAX_STEPS 32
/* Levels of one staircase, and segments of a profile (a staircase of n
 * levels with ramps has 2n - 1): the report keeps statistics for each. */
#define INJ_MAX_LEVELS 100
#define INJ_MAX_SEGMENTS 256

struct inj_profile {
    struct inj_step steps[INJ_MAX_STEPS];
    unsigned n;
};

/* Whether a step belongs to the closed model. */
bool inj_step_closed(const struct inj_step *s);
/* Whether a profile is closed (its first step is; all are alike). */
bool inj_profile_closed(const struct inj_profile *p);

/* The CLI name of a step kind ("ramp-users-per-sec"). */
const char *inj_kind_name(enum inj_kind kind);

/* Parses one step, words separated by spaces, e.g.
 * "ramp-users-per-sec 100 200 1000s randomized" or
 * "increment-users-per-sec 10 5 30s ramp 10s from 20". Durations need a
 * unit (ms, s, m, h). Returns 0, or -1 with a message in err. */
int inj_parse_step(const char *text, size_t len, struct inj_step *out, char *err, size_t errlen);

/* The longest duration a step or an option may have. */
#define INJ_MAX_DURATION_S (30.0 * 86400)

/* A duration with its unit ("500ms", "10s", "2m", "1h") into seconds;
 * true if it is one, up to INJ_MAX_DURATION_S. */
bool inj_parse_duration(const char *s, size_t len, double *out);

/* Appends a step; refuses a full profile (INJ_MAX_STEPS steps or
 * INJ_MAX_SEGMENTS segments) and a mix of open and closed steps. 0, or -1
 * with a message in err. */
int inj_profile_add(struct inj_profile *p, const struct inj_step *s, char *err, size_t errlen);

/* Divides every duration by scale (> 0) and keeps rates, so a scaled run
 * has the same arrival rate and shape in 1/scale of the time. */
void inj_profile_scale(struct inj_profile *p, double scale);

/* A step's length in seconds, a staircase's levels and ramps included. */
double inj_step_duration(const struct inj_step *s);
/* The profile's length in seconds (the sum of the step durations). */
double inj_profile_duration(const struct inj_profile *p);

/* The rate or concurrency of a staircase's level (0-based), as Gatling's
 * startingFrom: r1 + level * inc, except that without a start (r1 = 0) the
 * first level is already inc. */
double inj_stair_load(const struct inj_step *s, unsigned level);

/* One stretch of a profile at a constant or linearly changing load: a
 * step, or one level or ramp of a staircase. */
struct inj_segment {
    struct inj_step s; /* of the first seven kinds, never a staircase */
    double start_s;    /* from the profile's start */
    unsigned step;     /* the profile step it belongs to */
    unsigned stair;    /* staircases: its level from 1 (a ramp: the level it leaves); else 0 */
};

/* The profile's segments, in time order, into out (room for
 * INJ_MAX_SEGMENTS); returns their number. */
unsigned inj_profile_segments(const struct inj_profile *p, struct inj_segment *out);
/* The exact number of users an open profile starts when it has no
 * randomized step (the expected number otherwise). */
double inj_profile_users(const struct inj_profile *p);

/* Arrival times of an open profile, in seconds from its start. */
struct inj_gen {
    const struct inj_profile *p;
    unsigned step, seg; /* the segment seg of step */
    double seg_start;   /* seconds */
    uint64_t k;         /* users started in this segment so far */
    double cum;        /* randomized: the running sum of Exp(1) draws */
    uint64_t rng;
};

void inj_gen_init(struct inj_gen *g, const struct inj_profile *p, uint64_t seed);
/* The next arrival time into *t; false when the profile has ended. Times
 * never decrease. */
bool inj_gen_next(struct inj_gen *g, double *t);

/* A closed profile's target of concurrent users at time t (seconds), and
 * false once t is past its end. */
bool inj_closed_target(const struct inj_profile *p, double t, double *users);

/* A small fast PRNG (splitmix64) shared by the generator and the users. */
uint64_t inj_rand(uint64_t *state);
/* Uniform in [0, 1). */
double inj_rand_unit(uint64_t *state);

#endif
