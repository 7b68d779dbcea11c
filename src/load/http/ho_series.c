/* ho_series.c - http-open's per-second series and its saturation rules
 * (see ho_series.h). */
#include "load/http/ho_series.h"

#include <math.h>

#include "core/mem.h"

void ho_sec_add(struct ho_sec *a, const struct ho_sec *b)
{
    a->started += b->started;
    a->ended += b->ended;
    a->sent += b->sent;
    a->ok += b->ok;
    a->ko += b->ko;
    a->ko_gen += b->ko_gen;
    for (unsigned k = 0; k < HO_SEC_BUCKETS; k++)
        a->lat[k] += b->lat[k];
}

void ho_series_points(const struct ho_sec *secs, unsigned n, struct result_point *points)
{
    double active = 0;
    for (unsigned s = 0; s < n; s++) {
        active += (double)secs[s].started - (s ? (double)secs[s - 1].ended : 0);
        points[s].active = active;
        points[s].responses = secs[s].ok + secs[s].ko;
        points[s].p95_ms = seclat_percentile_ms(secs[s].lat, 95);
        points[s].sent = secs[s].sent;
        points[s].ok = secs[s].ok;
        points[s].ko_server = secs[s].ko - secs[s].ko_gen;
    }
}

const char *ho_sat_cause_name(enum ho_sat_cause c)
{
    return c == HO_SAT_BACKLOG ? "backlog" : c == HO_SAT_FAILURES ? "failures" : "none";
}

/* The saturation rule's numbers; docs/http_open.md (Metrics) says why. */
#define SAT_SHORTFALL 0.05   /* of the demand (backlog) or of the answers (failures) */
#define SAT_MIN_REQUESTS 10  /* and at least this many requests */
#define SAT_LATENCY_RATIO 2  /* p95 at least doubled, */
#define SAT_LATENCY_MS 20    /* and rose by at least this */

/* Sums over a span of seconds of the series. */
struct sat_sums {
    double sent, responses, ok, ko, ok_p95; /* ok_p95: p95s weighted by OK answers */
};

static struct sat_sums sat_span(const struct sat_sums *pre, unsigned from, unsigned to)
{
    const struct sat_sums *a = &pre[from], *b = &pre[to];
    return (struct sat_sums){b->sent - a->sent, b->responses - a->responses, b->ok - a->ok,
                             b->ko - a->ko, b->ok_p95 - a->ok_p95};
}

static bool sat_excess(double excess, double of)
{
    return excess >= fmax(SAT_SHORTFALL * of, SAT_MIN_REQUESTS);
}

/* The share of KO in the server's answers of x. */
static double sat_ko_share(const struct sat_sums *x)
{
    return x->ok + x->ko > 0 ? x->ko / (x->ok + x->ko) : 0;
}

/* The backlog of unanswered requests grew in both windows, and the
 * answers of the second took twice as long as before s and 20 ms more
 * (a window without any OK answer, while its backlog grows, counts as
 * longer than any). Needs OK answers before s to compare with. */
static bool sat_backlog(const struct sat_sums *before, const struct sat_sums *w1,
                        const struct sat_sums *w2)
{
    if (!sat_excess(w1->sent - w1->responses, w1->sent) ||
        !sat_excess(w2->sent - w2->responses, w2->sent) || before->ok <= 0)
        return false;
    if (w2->ok <= 0)
        return true;
    double p0 = before->ok_p95 / before->ok, p = w2->ok_p95 / w2->ok;
    return p >= fmax(SAT_LATENCY_RATIO * p0, p0 + SAT_LATENCY_MS);
}

/* The server's KO answers in w exceed the share they had before s. */
static bool sat_failures(const struct sat_sums *before, const struct sat_sums *w)
{
    double answered = w->ok + w->ko;
    return sat_excess(w->ko - sat_ko_share(before) * answered, answered);
}

/* The first second of the window from t where the sign shows by itself
 * (the backlog grew, or KO passed their share before t, by 5 % of that
 * second's requests): a window can hold enough of a sudden change while it
 * starts up to w - 1 seconds before it. There is one, since the window as
 * a whole shows it. */
static unsigned sat_onset(const struct sat_sums *pre, unsigned t, unsigned w,
                          enum ho_sat_cause why)
{
    double share = sat_ko_share(&pre[t]);
    for (unsigned k = t; k + 1 < t + w; k++) {
        struct sat_sums x = sat_span(pre, k, k + 1);
        double excess = why == HO_SAT_BACKLOG ? x.sent - x.responses : x.ko - share * (x.ok + x.ko);
        double of = why == HO_SAT_BACKLOG ? x.sent : x.ok + x.ko;
        if (excess > 0 && excess >= SAT_SHORTFALL * of)
            return k;
    }
    return t + w - 1;
}

int ho_saturation(const struct result_point *s, unsigned n, unsigned w, enum ho_sat_cause *cause)
{
    enum ho_sat_cause why = HO_SAT_NONE;
    int found = -1;
    if (w > 0 && n >= 3 * w) {
        /* Prefix sums: pre[i] sums seconds 0 .. i-1. */
        struct sat_sums *pre = mem_calloc(n + 1, sizeof *pre);
        for (unsigned i = 0; i < n; i++)
            pre[i + 1] = (struct sat_sums){
                pre[i].sent + s[i].sent, pre[i].responses + s[i].responses, pre[i].ok + s[i].ok,
                pre[i].ko + s[i].ko_server, pre[i].ok_p95 + s[i].ok * s[i].p95_ms};
        /* The baseline is everything before t, at least w seconds of it. */
        for (unsigned t = w; t + 2 * w <= n && found < 0; t++) {
            struct sat_sums before = sat_span(pre, 0, t), w1 = sat_span(pre, t, t + w),
                            w2 = sat_span(pre, t + w, t + 2 * w);
            if (sat_backlog(&before, &w1, &w2))
                why = HO_SAT_BACKLOG;
            else if (sat_failures(&before, &w1) && sat_failures(&before, &w2))
                why = HO_SAT_FAILURES;
            if (why != HO_SAT_NONE)
                found = (int)sat_onset(pre, t, w, why);
        }
        mem_free(pre);
    }
    if (cause)
        *cause = why;
    return found;
}

/* A level the level rule judges: constant open load. */
bool ho_level_judged(const struct http_open_level *l)
{
    return l->step && !l->closed && l->load_from == l->load_to && l->requests > 0;
}

int ho_level_saturation(const struct http_open_level *levels, unsigned n, struct ho_level_verdict *v)
{
    *v = (struct ho_level_verdict){.level = -1, .cause = HO_SAT_NONE};
    /* B so far: requests, p95 weighted by them, the server's KO and answers. */
    double b_req = 0, b_p95 = 0, b_ko = 0, b_ans = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct http_open_level *l = &levels[i];
        if (!ho_level_judged(l))
            continue;
        double ko = l->ko - l->ko_generator, answered = l->ok + ko;
        if (b_req > 0) {
            double base = b_p95 / b_req, share = b_ans > 0 ? b_ko / b_ans : 0;
            double behind = l->requests - l->responses_per_s * l->dur_s;
            bool backlog = sat_excess(behind, l->requests) &&
                           l->p95_ms >= fmax(SAT_LATENCY_RATIO * base, base + SAT_LATENCY_MS);
            bool failures = sat_excess(ko - share * answered, answered);
            if (backlog || failures) {
                *v = (struct ho_level_verdict){
                    .level = (int)i,
                    .cause = backlog ? HO_SAT_BACKLOG : HO_SAT_FAILURES,
                    .behind_pct = 100 * behind / l->requests,
                    .p95_ms = l->p95_ms,
                    .base_p95_ms = base,
                    .ko_pct = answered > 0 ? 100 * ko / answered : 0,
                    .base_ko_pct = 100 * share,
                };
                break;
            }
        }
        b_req += l->requests;
        b_p95 += l->p95_ms * l->requests;
        b_ko += ko;
        b_ans += answered;
    }
    return v->level;
}
