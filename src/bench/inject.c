/* inject.c - injection step parsing and arrival-time generation.
 *
 * An open rate step with rate r(t) over [0, d] has the cumulative count
 * N(t) = r1 t + (r2 - r1) t^2 / (2d). User k (k = 0, 1, ...) arrives when
 * N(t) = k, as Gatling spaces them; randomized, it arrives when N(t) equals
 * the k-th partial sum of unit exponential draws, which is exactly a
 * Poisson process of rate r(t) (time-rescaling).
 */
#include "bench/inject.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return s->kind == INJ_CONSTANT_CONC || s->kind == INJ_RAMP_CONC;
}

bool inj_profile_closed(const struct inj_profile *p)
{
    return p->n > 0 && inj_step_closed(&p->steps[0]);
}

/* ---- parsing ------------------------------------------------------------- */

static const struct {
    const char *name;
    enum inj_kind kind;
    const char *args; /* n: user count, r: rate or concurrency, d: duration */
} step_syntax[] = {
    {"nothing-for", INJ_NOTHING_FOR, "d"},
    {"at-once", INJ_AT_ONCE, "n"},
    {"ramp-users", INJ_RAMP_USERS, "nd"},
    {"constant-users-per-sec", INJ_CONSTANT_RATE, "rd"},
    {"ramp-users-per-sec", INJ_RAMP_RATE, "rrd"},
    {"constant-concurrent-users", INJ_CONSTANT_CONC, "nd"},
    {"ramp-concurrent-users", INJ_RAMP_CONC, "rrd"},
};

#define INJ_MAX_USERS 1e9
#define INJ_MAX_DURATION_S (30.0 * 86400)

/* A non-negative decimal number, digits with at most one '.', no sign and
 * no exponent: what a person types. */
static bool parse_decimal(const char *s, size_t len, double *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return false;
    bool dot = false, digit = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.' && !dot)
            dot = true;
        else if (s[i] >= '0' && s[i] <= '9')
            digit = true;
        else
            return false;
    }
    if (!digit)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    *out = strtod(buf, NULL);
    return true;
}

bool inj_parse_duration(const char *s, size_t len, double *out)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        size_t ul = strlen(units[u].unit);
        double v;
        if (len > ul && !memcmp(s + len - ul, units[u].unit, ul) &&
            parse_decimal(s, len - ul, &v)) {
            *out = v * units[u].scale;
            return *out <= INJ_MAX_DURATION_S;
        }
    }
    return false;
}

int inj_parse_step(const char *text, size_t len, struct inj_step *out, char *err, size_t errlen)
{
    /* Split into at most 6 words. */
    const char *w[6];
    size_t wl[6], nw = 0;
    for (size_t i = 0; i < len;) {
        if (text[i] == ' ') {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && text[j] != ' ')
            j++;
        if (nw == 6) {
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
        if (strlen(step_syntax[k].name) == wl[0] && !memcmp(step_syntax[k].name, w[0], wl[0]))
            break;
    if (k == sizeof step_syntax / sizeof step_syntax[0]) {
        snprintf(err, errlen, "unknown injection step '%.*s'", (int)wl[0], w[0]);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->kind = step_syntax[k].kind;
    const char *args = step_syntax[k].args;
    size_t nargs = strlen(args);
    bool rate_step = out->kind == INJ_CONSTANT_RATE || out->kind == INJ_RAMP_RATE;
    size_t extra = nw - 1 - nargs;
    if (nw - 1 < nargs || extra > 1 ||
        (extra == 1 && !(rate_step && wl[nw - 1] == 10 && !memcmp(w[nw - 1], "randomized", 10)))) {
        snprintf(err, errlen, "'%s' wants %s%s", step_syntax[k].name,
                 !strcmp(args, "d")     ? "DURATION"
                 : !strcmp(args, "n")   ? "USERS"
                 : !strcmp(args, "nd")  ? "USERS DURATION"
                 : !strcmp(args, "rd")  ? "RATE DURATION"
                 : !strcmp(args, "rrd") ? (out->kind == INJ_RAMP_RATE ? "FROM_RATE TO_RATE DURATION"
                                                                      : "FROM TO DURATION")
                                        : "?",
                 rate_step ? " [randomized]" : "");
        return -1;
    }
    out->randomized = extra == 1;
    unsigned nr = 0;
    for (size_t a = 0; a < nargs; a++) {
        const char *s = w[1 + a];
        size_t sl = wl[1 + a];
        bool ok;
        double v = 0;
        if (args[a] == 'd') {
            ok = inj_parse_duration(s, sl, &out->dur_s);
        } else {
            ok = parse_decimal(s, sl, &v) && v <= INJ_MAX_USERS;
            if (args[a] == 'n') /* a count of users is whole */
                ok = ok && v == floor(v);
        }
        if (!ok) {
            snprintf(err, errlen, "'%s': bad %s '%.*s'", step_syntax[k].name,
                     args[a] == 'd' ? "duration (want e.g. 500ms, 10s, 2m, 1h)" : "number", (int)sl,
                     s);
            return -1;
        }
        if (args[a] == 'n')
            out->n = out->r1 = out->r2 = v;
        else if (args[a] == 'r')
            *(nr++ == 0 ? &out->r1 : &out->r2) = v;
    }
    if (out->kind == INJ_CONSTANT_RATE)
        out->r2 = out->r1;
    if (out->kind != INJ_AT_ONCE && out->kind != INJ_NOTHING_FOR && out->dur_s <= 0) {
        snprintf(err, errlen, "'%s' wants a duration above 0", step_syntax[k].name);
        return -1;
    }
    return 0;
}

int inj_profile_add(struct inj_profile *p, const struct inj_step *s, char *err, size_t errlen)
{
    if (p->n == INJ_MAX_STEPS) {
        snprintf(err, errlen, "at most %d injection steps", INJ_MAX_STEPS);
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
        if (s->kind == INJ_RAMP_USERS) /* a count during d: keep its rate */
            s->n = floor(s->n / scale + 0.5);
    }
}

double inj_profile_duration(const struct inj_profile *p)
{
    double d = 0;
    for (unsigned i = 0; i < p->n; i++)
        d += p->steps[i].dur_s;
    return d;
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
        const struct inj_step *s = &p->steps[i];
        if (s->kind == INJ_AT_ONCE || s->kind == INJ_RAMP_USERS)
            n += s->n;
        else if (s->kind == INJ_CONSTANT_RATE || s->kind == INJ_RAMP_RATE)
            n += (double)rate_step_users(s);
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

static void gen_next_step(struct inj_gen *g)
{
    g->step_start += g->p->steps[g->step].dur_s;
    g->step++;
    g->k = 0;
    g->cum = 0;
}

bool inj_gen_next(struct inj_gen *g, double *t)
{
    while (g->step < g->p->n) {
        const struct inj_step *s = &g->p->steps[g->step];
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
        if (at >= 0) {
            g->k++;
            *t = g->step_start + at;
            return true;
        }
        gen_next_step(g);
    }
    return false;
}

bool inj_closed_target(const struct inj_profile *p, double t, double *users)
{
    double start = 0;
    for (unsigned i = 0; i < p->n; i++) {
        const struct inj_step *s = &p->steps[i];
        if (t < start + s->dur_s) {
            double f = (t - start) / s->dur_s;
            *users = s->kind == INJ_NOTHING_FOR ? 0 : floor(s->r1 + (s->r2 - s->r1) * f);
            return true;
        }
        start += s->dur_s;
    }
    return false;
}
