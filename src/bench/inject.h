/* inject.h - Gatling's injection profiles: when virtual users start.
 *
 * Open steps control the arrival rate (nothingFor, atOnceUsers, rampUsers,
 * constantUsersPerSec, rampUsersPerSec, optionally randomized); closed
 * steps control how many users are alive at once (constantConcurrentUsers,
 * rampConcurrentUsers). A profile is a sequence of steps of one model,
 * never both, as in Gatling.
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
};

struct inj_step {
    enum inj_kind kind;
    double n;        /* AT_ONCE, RAMP_USERS, CONSTANT_CONC: users */
    double r1, r2;   /* rates (users/s) or concurrencies */
    double dur_s;
    bool randomized; /* open rate steps: Poisson arrivals */
};

#define INJ_MAX_STEPS 32

struct inj_profile {
    struct inj_step steps[INJ_MAX_STEPS];
    unsigned n;
};

/* Whether a step belongs to the closed model. */
bool inj_step_closed(const struct inj_step *s);
/* Whether a profile is closed (its first step is; all are alike). */
bool inj_profile_closed(const struct inj_profile *p);

/* Parses one step, words separated by spaces, e.g.
 * "ramp-users-per-sec 100 200 1000s randomized". Durations need a unit
 * (ms, s, m, h). Returns 0, or -1 with a message in err. */
int inj_parse_step(const char *text, size_t len, struct inj_step *out, char *err, size_t errlen);

/* A duration with its unit ("500ms", "10s", "2m", "1h") into seconds;
 * true if it is one, up to 30 days. */
bool inj_parse_duration(const char *s, size_t len, double *out);

/* Appends a step; refuses a full profile and a mix of open and closed
 * steps. 0, or -1 with a message in err. */
int inj_profile_add(struct inj_profile *p, const struct inj_step *s, char *err, size_t errlen);

/* Divides every duration by scale (> 0) and keeps rates, so a scaled run
 * has the same arrival rate and shape in 1/scale of the time. */
void inj_profile_scale(struct inj_profile *p, double scale);

/* The profile's length in seconds (the sum of the step durations). */
double inj_profile_duration(const struct inj_profile *p);
/* The exact number of users an open profile starts when it has no
 * randomized step (the expected number otherwise). */
double inj_profile_users(const struct inj_profile *p);

/* Arrival times of an open profile, in seconds from its start. */
struct inj_gen {
    const struct inj_profile *p;
    unsigned step;
    double step_start; /* seconds */
    uint64_t k;        /* users started in this step so far */
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
