/* inject.c - injection step parsing and arrival-time generation.
 *
 * An open rate step with rate r(t) over [0, d] has the cumulative count
 * N(t) = r1 t + (r2 - r1) t^2 / (2d). User k (k = 0, 1, ...) arrives when
 * N(t) = k, as Gatling spaces them; randomized, it arrives when N(t) equals
 * the k-th partial sum of unit exponential draws, which is exactly a
 * Poisson process of rate r(t) (time-rescaling).
 *
 * A staircase is not a curve of its own: it is generated as the constant
 * and ramp segments it stands for, one after the other (Gatling expands
 * incrementUsersPerSec into constantUsersPerSec and rampUsersPerSec steps
 * alike), so each level and each ramp rounds its own count.
 */
#include "load/http/inject.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/opt.h"

uint64_t inj_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

double inj_rand_unit(uint64_t *state) { return (double)(inj_rand(state) >> 11) * 0x1p-53; }

bool inj_step_closed(const struct inj_step *s)
{
    return s->kind == INJ_CONSTANT_CONC || s->kind == INJ_RAMP_CONC || s->kind == INJ_STAIRS_CONC;
}

bool inj_profile_closed(const struct inj_profile *p)
{
    return p->n > 0 && inj_step_closed(&p->steps[0]);
}

/* ---- parsing ------------------------------------------------------------- */

static const struct {
    const char *name;
    enum inj_kind kind;
    /* n: user count, r: rate or concurrency, d: duration, t: a staircase's
     * levels, i: its increment (whole in the closed model) */
    const char *args;
    const char *usage;
} step_syntax[] = {
    {"nothing-for", INJ_NOTHING_FOR, "d", "DURATION"},
    {"at-once", INJ_AT_ONCE, "n", "USERS"},
    {"ramp-users", INJ_RAMP_USERS, "nd", "USERS DURATION"},
    {"constant-users-per-sec", INJ_CONSTANT_RATE, "rd", "RATE DURATION [randomized]"},
    {"ramp-users-per-sec", INJ_RAMP_RATE, "rrd", "FROM_RATE TO_RATE DURATION [randomized]"},
    {"increment-users-per-sec", INJ_STAIRS_RATE, "itd",
     "INCREMENT LEVELS LEVEL_DURATION [ramp DURATION] [from RATE] [randomized]"},
    {"constant-concurrent-users", INJ_CONSTANT_CONC, "nd", "USERS DURATION"},
    {"ramp-concurrent-users", INJ_RAMP_CONC, "rrd", "FROM TO DURATION"},
    {"increment-concurrent-users", INJ_STAIRS_CONC, "itd",
     "INCREMENT LEVELS LEVEL_DURATION [ramp DURATION] [from USERS]"},
};

const char *inj_kind_name(enum inj_kind kind)
{
    for (size_t k = 0; k < sizeof step_syntax / sizeof step_syntax[0]; k++)
        if (step_syntax[k].kind == kind)
            return step_syntax[k].name;
    return "?";
}

#define INJ_MAX_USERS 1e9
#define INJ_MAX_WORDS 9

/* A number up to INJ_MAX_USERS, whole if whole is set. */
static bool parse_amount(const char *s, size_t len, bool whole, double *out)
{
    return opt_parse_decimal(s, len, out) && *out <= INJ_MAX_USERS &&
           (!whole || *out == floor(*out));
}

bool inj_parse_duration(const char *s, size_t len, double *out)
{
    return opt_parse_duration(s, len, out) && *out <= INJ_MAX_DURATION_S;
}

static bool word_is(const char *w, size_t wl, const char *lit)
{
    return wl == strlen(lit) && !memcmp(w, lit, wl);
}

static bool stairs(const struct inj_step *s)
{
    return s->kind == INJ_STAIRS_RATE || s->kind == INJ_STAIRS_CONC;
}

/* The words after a step's arguments: "randomized" (rate steps), "ramp D"
 * and "from X" (staircases), each at most once. 0, or -1 with err. */
static int parse_options(const char *name, const char *const *w, const size_t *wl, size_t nw,
                         struct inj_step *out, char *err, size_t errlen)
{
    bool rate = out->kind == INJ_CONSTANT_RATE || out->kind == INJ_RAMP_RATE ||
                out->kind == INJ_STAIRS_RATE;
    bool ramp = false, from = false;
    for (size_t i = 0; i < nw; i++) {
        if (rate && !out->randomized && word_is(w[i], wl[i], "randomized")) {
            out->randomized = true;
            continue;
        }
        bool is_ramp = word_is(w[i], wl[i], "ramp"), is_from = word_is(w[i], wl[i], "from");
        if (!stairs(out) || !(is_ramp ? !ramp : is_from && !from) || i + 1 == nw)
            return -1;
        i++;
        if (is_ramp) {
            ramp = true;
            if (!inj_parse_duration(w[i], wl[i], &out->ramp_s)) {
                snprintf(err, errlen, "'%s': bad ramp duration '%.*s'", name, (int)wl[i], w[i]);
                return -1;
            }
        } else {
            from = true;
            if (!parse_amount(w[i], wl[i], out->kind == INJ_STAIRS_CONC, &out->r1)) {
                snprintf(err, errlen, "'%s': bad start '%.*s'", name, (int)wl[i], w[i]);
                return -1;
            }
        }
    }
    return 0;
}

int inj_parse_step(const char *text, size_t len, struct inj_step *out, char *err, size_t errlen)
{
    const char *w[INJ_MAX_WORDS];
    size_t wl[INJ_MAX_WORDS], nw = 0;
    for (size_t i = 0; i < len;) {
        if (text[i] == ' ') {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && text[j] != ' ')
            j++;
        if (nw == INJ_MAX_WORDS) {
            snprintf(err, errlen, "too many words in an injection step");
            return -1;
        }
        w[nw] = text + i;
        wl[nw++] = j - i;
        i = j;
    }
    if (nw == 0) {
        snprintf(err, errlen, "empty injection step");
        return -1;
    }
    size_t k;
    for (k = 0; k < sizeof step_syntax / sizeof step_syntax[0]; k++)
        if (word_is(w[0], wl[0], step_syntax[k].name))
            break;
    if (k == sizeof step_syntax / sizeof step_syntax[0]) {
        snprintf(err, errlen, "unknown injection step '%.*s'", (int)wl[0], w[0]);
        return -1;
    }
    const char *name = step_syntax[k].name, *args = step_syntax[k].args;
    memset(out, 0, sizeof *out);
    out->kind = step_syntax[k].kind;
    size_t nargs = strlen(args);
    err[0] = '\0';
    if (nw - 1 < nargs ||
        parse_options(name, w + 1 + nargs, wl + 1 + nargs, nw - 1 - nargs, out, err, errlen) < 0) {
        if (!err[0])
            snprintf(err, errlen, "'%s' wants %s", name, step_syntax[k].usage);
        return -1;
    }
    unsigned nr = 0;
    for (size_t a = 0; a < nargs; a++) {
        const char *s = w[1 + a];
        size_t sl = wl[1 + a];
        double v = 0;
        const char *bad = NULL;
        if (args[a] == 'd') {
            if (!inj_parse_duration(s, sl, &out->dur_s))
                bad = "duration (want e.g. 500ms, 10s, 2m, 1h)";
        } else if (args[a] == 't') {
            if (!parse_amount(s, sl, true, &v) || v < 1 || v > INJ_MAX_LEVELS) {
                snprintf(err, errlen, "'%s' wants 1 to %d levels, not '%.*s'", name,
                         INJ_MAX_LEVELS, (int)sl, s);
                return -1;
            }
        } else if (!parse_amount(s, sl, args[a] == 'n' || out->kind == INJ_STAIRS_CONC, &v)) {
            bad = "number"; /* a count of users is whole, and so is a closed increment */
        }
        if (bad) {
            snprintf(err, errlen, "'%s': bad %s '%.*s'", name, bad, (int)sl, s);
            return -1;
        }
        if (args[a] == 'n')
            out->n = out->r1 = out->r2 = v;
        else if (args[a] == 't')
            out->n = v;
        else if (args[a] == 'i')
            out->inc = v;
        else if (args[a] == 'r')
            *(nr++ == 0 ? &out->r1 : &out->r2) = v;
    }
    if (out->kind == INJ_CONSTANT_RATE)
        out->r2 = out->r1;
    if (stairs(out) && out->inc <= 0) {
        snprintf(err, errlen, "'%s' wants an increment above 0", name);
        return -1;
    }
    if (out->kind != INJ_AT_ONCE && out->kind != INJ_NOTHING_FOR && out->dur_s <= 0) {
        snprintf(err, errlen, "'%s' wants a duration above 0", name);
        return -1;
    }
    return 0;
}

/* Segments of a step: a staircase's levels and the ramps between them. */
static unsigned step_segments(const struct inj_step *s)
{
    if (!stairs(s))
        return 1;
    return s->ramp_s > 0 ? 2 * (unsigned)s->n - 1 : (unsigned)s->n;
}

int inj_profile_add(struct inj_profile *p, const struct inj_step *s, char *err, size_t errlen)
{
    unsigned segs = step_segments(s);
    for (unsigned i = 0; i < p->n; i++)
        segs += step_segments(&p->steps[i]);
    if (p->n == INJ_MAX_STEPS || segs > INJ_MAX_SEGMENTS) {
        snprintf(err, errlen, "at most %d injection steps and %d levels and ramps", INJ_MAX_STEPS,
                 INJ_MAX_SEGMENTS);
        return -1;
    }
    /* nothing-for fits either model, as Gatling's closed model has no
     * pause step of its own; a closed step after an open one does not. */
    for (unsigned i = 0; i < p->n; i++) {
        const struct inj_step *o = &p->steps[i];
        if (o->kind != INJ_NOTHING_FOR && s->kind != INJ_NOTHING_FOR &&
            inj_step_closed(o) != inj_step_closed(s)) {
            snprintf(err, errlen, "open and closed injection steps cannot be mixed");
            return -1;
        }
    }
    p->steps[p->n++] = *s;
    return 0;
}

void inj_profile_scale(struct inj_profile *p, double scale)
{
    for (unsigned i = 0; i < p->n; i++) {
        struct inj_step *s = &p->steps[i];
        s->dur_s /= scale;
        s->ramp_s /= scale;
        if (s->kind == INJ_RAMP_USERS) /* a count during d: keep its rate */
            s->n = floor(s->n / scale + 0.5);
    }
}

double inj_step_duration(const struct inj_step *s)
{
    if (!stairs(s))
        return s->dur_s;
    return s->n * s->dur_s + (s->n - 1) * s->ramp_s;
}

double inj_profile_duration(const struct inj_profile *p)
{
    double d = 0;
    for (unsigned i = 0; i < p->n; i++)
        d += inj_step_duration(&p->steps[i]);
    return d;
}

double inj_stair_load(const struct inj_step *s, unsigned level)
{
    return s->r1 > 0 ? s->r1 + level * s->inc : (level + 1) * s->inc;
}

/* Segment i of step s into *seg (of a staircase: its levels at even i,
 * when it has ramps, and the ramps at odd i); false past the last. */
static bool step_segment(const struct inj_step *s, unsigned i, struct inj_step *seg,
                         unsigned *stair)
{
    *stair = 0;
    if (i >= step_segments(s))
        return false;
    if (!stairs(s)) {
        *seg = *s;
        return true;
    }
    unsigned level = s->ramp_s > 0 ? i / 2 : i;
    bool ramp = s->ramp_s > 0 && i % 2;
    bool closed = s->kind == INJ_STAIRS_CONC;
    *seg = (struct inj_step){
        .kind = ramp ? (closed ? INJ_RAMP_CONC : INJ_RAMP_RATE)
                     : (closed ? INJ_CONSTANT_CONC : INJ_CONSTANT_RATE),
        .r1 = inj_stair_load(s, level),
        .r2 = inj_stair_load(s, ramp ? level + 1 : level),
        .dur_s = ramp ? s->ramp_s : s->dur_s,
        .randomized = s->randomized,
    };
    if (closed && !ramp)
        seg->n = seg->r1;
    *stair = level + 1;
    return true;
}

unsigned inj_profile_segments(const struct inj_profile *p, struct inj_segment *out)
{
    unsigned n = 0;
    double start = 0;
    for (unsigned i = 0; i < p->n; i++) {
        struct inj_step s;
        unsigned stair;
        for (unsigned k = 0; n < INJ_MAX_SEGMENTS && step_segment(&p->steps[i], k, &s, &stair);
             k++) {
            out[n++] = (struct inj_segment){.s = s, .start_s = start, .step = i, .stair = stair};
            start += s.dur_s;
        }
    }
    return n;
}

/* Users of an open rate step: the area under r(t), rounded as Gatling. */
static uint64_t rate_step_users(const struct inj_step *s)
{
    return (uint64_t)floor((s->r1 + s->r2) / 2 * s->dur_s + 0.5);
}

double inj_profile_users(const struct inj_profile *p)
{
    double n = 0;
    for (unsigned i = 0; i < p->n; i++) {
        struct inj_step s;
        unsigned stair;
        for (unsigned k = 0; step_segment(&p->steps[i], k, &s, &stair); k++) {
            if (s.kind == INJ_AT_ONCE || s.kind == INJ_RAMP_USERS)
                n += s.n;
            else if (s.kind == INJ_CONSTANT_RATE || s.kind == INJ_RAMP_RATE)
                n += (double)rate_step_users(&s);
        }
    }
    return n;
}

/* ---- arrivals ------------------------------------------------------------ */

void inj_gen_init(struct inj_gen *g, const struct inj_profile *p, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->p = p;
    g->rng = seed;
}

/* The time within a rate step at which N(t) = x: the positive root of
 * a t^2 + r1 t - x = 0 with a = (r2 - r1) / 2d, in the form that neither
 * cancels nor divides by zero when a is 0. Negative when never reached. */
static double rate_step_time(const struct inj_step *s, double x)
{
    if (x <= 0)
        return 0;
    double a = (s->r2 - s->r1) / (2 * s->dur_s), b = s->r1;
    double disc = b * b + 4 * a * x;
    if (disc < 0)
        return -1;
    double den = b + sqrt(disc);
    return den > 0 ? 2 * x / den : -1;
}

/* The next arrival's time within segment s, or -1 when it has no more. */
static double segment_next(struct inj_gen *g, const struct inj_step *s)
{
    double at = -1;
    switch (s->kind) {
    case INJ_AT_ONCE:
        if (g->k < (uint64_t)s->n)
            at = 0;
        break;
    case INJ_RAMP_USERS:
        if (g->k < (uint64_t)s->n)
            at = (double)g->k * s->dur_s / s->n;
        break;
    case INJ_CONSTANT_RATE:
    case INJ_RAMP_RATE:
        if (s->randomized) {
            g->cum += -log1p(-inj_rand_unit(&g->rng));
            at = rate_step_time(s, g->cum);
            if (at >= s->dur_s)
                at = -1;
        } else if (g->k < rate_step_users(s)) {
            at = rate_step_time(s, (double)g->k);
            if (at < 0 || at > s->dur_s)
                at = s->dur_s; /* rounding at the very end */
        }
        break;
    default: /* nothing-for, and closed steps have no arrivals */
        break;
    }
    return at;
}

bool inj_gen_next(struct inj_gen *g, double *t)
{
    while (g->step < g->p->n) {
        struct inj_step s;
        unsigned stair;
        if (!step_segment(&g->p->steps[g->step], g->seg, &s, &stair)) {
            g->step++;
            g->seg = 0;
            continue;
        }
        double at = segment_next(g, &s);
        if (at >= 0) {
            g->k++;
            *t = g->seg_start + at;
            return true;
        }
        g->seg_start += s.dur_s;
        g->seg++;
        g->k = 0;
        g->cum = 0;
    }
    return false;
}

bool inj_closed_target(const struct inj_profile *p, double t, double *users)
{
    double start = 0;
    for (unsigned i = 0; i < p->n; i++) {
        struct inj_step s;
        unsigned stair;
        for (unsigned k = 0; step_segment(&p->steps[i], k, &s, &stair); k++) {
            if (t < start + s.dur_s) {
                double f = (t - start) / s.dur_s;
                *users = s.kind == INJ_NOTHING_FOR ? 0 : floor(s.r1 + (s.r2 - s.r1) * f);
                return true;
            }
            start += s.dur_s;
        }
    }
    return false;
}
