/* scenario.c - the scenario file parser, templates, the JSONPath subset,
 * and the built-in a2b journey. */
#include "load/http/scenario.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_read.h"
#include "core/mem.h"
#include "core/textfile.h"
#include "load/http/inject.h"

/* The reference's A2BSimulation.java, step by step: the same requests,
 * statuses, extractions, exitHereIfFailed() and pauses. Request names are
 * short; Gatling's long names are in docs/http_open.md. One deviation: the
 * transfer search takes its origin, destination and date from a route of
 * our data set (feed-a2b-routes) instead of the browsed locations and
 * 1970-01-01, which find nothing here, so that the journey goes on to the
 * write endpoints. The browsing requests still run and pick at random. */
const char scn_a2b_text[] =
    "scenario a2b\n"
    "header Accept: application/json\n"
    "header Accept-Encoding: gzip, deflate\n"
    "feed userId 1 200000\n"
    "feed-a2b-routes\n"
    "request GET /api/v1/countries countries\n"
    "  save countryId $[*].countryId random\n"
    "exit-if-failed\n"
    "pause 1 3\n"
    "request GET /api/v1/countries/${countryId}/cities cities\n"
    "  save cityOriginId $[*].cityId random\n"
    "exit-if-failed\n"
    "pause 1 3\n"
    "request GET /api/v1/countries/${countryId}/cities/${cityOriginId}/locations origins\n"
    "  save browsedOriginId $[*].locationId random\n"
    "pause 3 5\n"
    "request GET /api/v1/countries/${countryId}/cities cities\n"
    "  save cityDestinationId $[*].cityId random\n"
    "exit-if-failed\n"
    "pause 1 3\n"
    "request GET /api/v1/countries/${countryId}/cities/${cityDestinationId}/locations destinations\n"
    "  save browsedDestinationId $[*].locationId random\n"
    "exit-if-failed\n"
    "pause 3 5\n"
    "request GET /api/v1/transfers?originId=${originId}&destinationId=${destinationId}&date=${date} transfers\n"
    "  expect 200 404\n"
    "  save transferId $[*].transferId random\n"
    "exit-if-failed\n"
    "pause 3 5\n"
    /* 409: this user holds that booking already (docs/http_open.md). */
    "request POST /api/v1/users/${userId}/transfers/${transferId} book\n"
    "  body {\"description\":\"My internal uuid is ${uuid}\"}\n"
    "  expect 201 409\n"
    "pause 1 3\n"
    "request GET /api/v1/users/${userId}/transfers my-transfers\n"
    "  save selectedUserTransferId $[*].transfer.transferId random\n"
    "exit-if-failed\n"
    "pause 1 3\n"
    "request GET /api/v1/users/${userId}/transfers/${selectedUserTransferId} my-transfer\n"
    "pause 1 5\n"
    "request PUT /api/v1/users/${userId}/transfers/${selectedUserTransferId} describe\n"
    "  body {\"state\":\"BOOKED\",\"description\":\"My new internal UUID ${uuid}\"}\n"
    "  expect 204\n"
    "pause 1 3\n"
    "request PUT /api/v1/users/${userId}/transfers/${selectedUserTransferId} cancel\n"
    "  body {\"state\":\"CANCELED\",\"description\":\"My new internal UUID for canceled transfer ${uuid}\"}\n"
    "  expect 204\n"
    "pause 1 3\n"
    "request PUT /api/v1/users/${userId}/transfers/${selectedUserTransferId} complete\n"
    "  body {\"state\":\"COMPLETED\",\"description\":\"My new internal UUID for completed transfer ${uuid}\"}\n"
    "  expect 204\n"
    "pause 1 3\n"
    "request GET /api/v1/users/${userId} user\n"
    "pause 1 3\n"
    "request PUT /api/v1/users/${userId} update-user\n"
    "  body {\"firstName\":\" NewFirstName${userId} \",\"lastName\":\"NewLastName${userId}\"}\n"
    "  expect 204\n"
    "pause 1 5\n";

#define SCN_MAX_LINE 4096
#define SCN_MAX_JSON_DEPTH 64

/* ---- buffers and templates ------------------------------------------------ */

void scn_buf_add(struct scn_buf *b, const void *data, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + len + 1)
            cap *= 2;
        b->data = mem_realloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void scn_buf_free(struct scn_buf *b)
{
    mem_free(b->data);
    *b = (struct scn_buf){0};
}

int scn_render(const struct scn_tpl *t, char *const *vals, uint64_t *rng, struct scn_buf *b)
{
    for (unsigned i = 0; i < t->nsegs; i++) {
        const struct scn_seg *s = &t->segs[i];
        if (s->var < 0) {
            scn_buf_add(b, s->text, s->len);
        } else if (s->var == SCN_VAR_UUID) {
            uint64_t hi = inj_rand(rng), lo = inj_rand(rng);
            char u[40];
            /* Version 4, variant 10xx. */
            snprintf(u, sizeof u, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(hi >> 32),
                     (unsigned)(hi >> 16) & 0xffff, (unsigned)hi & 0xfff,
                     (unsigned)(0x8000 | ((lo >> 48) & 0x3fff)),
                     (unsigned long long)(lo & 0xffffffffffffULL));
            scn_buf_add(b, u, strlen(u));
        } else if (!vals[s->var]) {
            return s->var;
        } else {
            scn_buf_add(b, vals[s->var], strlen(vals[s->var]));
        }
    }
    return 0;
}

static void tpl_free(struct scn_tpl *t)
{
    mem_free(t->text);
    mem_free(t->segs);
    *t = (struct scn_tpl){0};
}

/* ---- JSONPath ------------------------------------------------------------- */

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static bool valid_name(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_name_char(s[i]))
            return false;
    return true;
}

void scn_path_free(struct scn_path *p)
{
    for (unsigned i = 0; i < p->nfields; i++)
        mem_free(p->fields[i]);
    *p = (struct scn_path){0};
}

int scn_path_parse(const char *s, size_t len, struct scn_path *out)
{
    memset(out, 0, sizeof *out);
    if (len == 0 || s[0] != '$')
        return -1;
    size_t i = 1;
    if (len - i >= 3 && (!memcmp(s + i, "[*]", 3) || !memcmp(s + i, "[:]", 3))) {
        out->each = true;
        i += 3;
    }
    while (i < len) {
        if (s[i] != '.' || out->nfields == SCN_MAX_FIELDS)
            goto bad;
        size_t j = ++i;
        while (j < len && is_name_char(s[j]))
            j++;
        if (j == i)
            goto bad;
        out->fields[out->nfields++] = mem_strndup(s + i, j - i);
        i = j;
    }
    return 0;
bad:
    scn_path_free(out);
    return -1;
}

struct pick_state {
    enum scn_pick pick;
    uint64_t *rng;
    uint64_t seen;
    const char *val;
    size_t len;
};

static void pick_offer(struct pick_state *ps, const char *v, size_t len)
{
    ps->seen++;
    /* Reservoir sampling of one: the k-th match replaces with chance 1/k. */
    if (ps->seen == 1 || (ps->pick == SCN_PICK_RANDOM && inj_rand(ps->rng) % ps->seen == 0)) {
        ps->val = v;
        ps->len = len;
    }
}

/* Follows fields[0..n) from the value at r->p and offers what it reaches.
 * false if the text is not JSON. */
static bool path_follow(struct jr *r, char *const *fields, unsigned n, struct pick_state *ps)
{
    enum jr_type t = jr_peek(r);
    const char *v = (const char *)r->p;
    size_t k;
    int more;

    if (n == 0) {
        if (!jr_skip(r))
            return false;
        if (t == JR_STRING)
            pick_offer(ps, r->text, r->text_len);
        else if (t == JR_NUMBER)
            pick_offer(ps, v, (size_t)((const char *)r->p - v));
        return true;
    }
    if (t != JR_OBJECT)
        return jr_skip(r);
    if (!jr_enter(r))
        return false;
    /* Walk the object; descend into every member named fields[0]. */
    size_t flen = strlen(fields[0]);
    while ((more = jr_next(r)) > 0) {
        if (!jr_key(r, NULL, 0, &k) || !jr_colon(r))
            return false;
        bool match = r->text_len == flen && !memcmp(r->text, fields[0], flen);
        if (!(match ? path_follow(r, fields + 1, n - 1, ps) : jr_skip(r)))
            return false;
    }
    return more == 0;
}

int scn_path_eval(const struct scn_path *path, const char *json, size_t len, enum scn_pick pick,
                  uint64_t *rng, const char **out, size_t *out_len)
{
    struct pick_state ps = {.pick = pick, .rng = rng};
    struct jr r;
    bool ok;

    jr_init(&r, json, len, SCN_MAX_JSON_DEPTH);
    if (!path->each) {
        ok = path_follow(&r, path->fields, path->nfields, &ps);
    } else if (jr_peek(&r) == JR_ARRAY) {
        int more = 0;
        ok = jr_enter(&r);
        while (ok && (more = jr_next(&r)) > 0)
            ok = path_follow(&r, path->fields, path->nfields, &ps);
        ok = ok && more == 0;
    } else {
        ok = jr_skip(&r); /* not an array: valid JSON, no match */
    }
    if (!ok || !jr_end(&r))
        return -1;
    if (!ps.seen)
        return 0;
    *out = ps.val;
    *out_len = ps.len;
    return 1;
}

/* ---- CSV feeder files ---------------------------------------------------- */

static bool is_control(char c) { return (unsigned char)c < 0x20 || c == 0x7f; }

/* Whether p is at the end of a record: LF, CRLF, or the end of the text. */
static size_t record_end_len(const char *p, const char *end)
{
    if (p < end && *p == '\n')
        return 1;
    if (end - p >= 2 && p[0] == '\r' && p[1] == '\n')
        return 2;
    return 0;
}

/* Reads the field at *pp (quoted or not) into *out, NUL-terminated, and
 * leaves *pp at what follows it: ',', the end of the record or the text.
 * Returns 0, or -1 after writing the error. */
static int csv_field(const char *name, unsigned line, const char **pp, const char *end, char **out,
                     char *err, size_t errlen)
{
    const char *p = *pp;
    char *o = *out, *start = *out;
    if (p < end && *p == '"') {
        for (p++;; p++) {
            if (p == end || record_end_len(p, end))
                return textfile_error(err, errlen, name, line,
                                      "a quoted field runs past the end of its line (no closing quote?)");
            if (*p == '"' && (end - p < 2 || p[1] != '"'))
                break;
            if (is_control(*p))
                return textfile_error(err, errlen, name, line, "control character in a field");
            p += *p == '"'; /* "" is one quote */
            *o++ = *p;
        }
        p++;
        if (p < end && *p != ',' && !record_end_len(p, end))
            return textfile_error(err, errlen, name, line, "text after a closing quote");
    } else {
        for (; p < end && *p != ',' && !record_end_len(p, end); p++) {
            if (*p == '"')
                return textfile_error(err, errlen, name, line,
                                      "a quote inside an unquoted field (quote the field and "
                                      "double the quote)");
            if (is_control(*p))
                return textfile_error(err, errlen, name, line, "control character in a field");
            *o++ = *p;
        }
    }
    if ((size_t)(o - start) > SCN_CSV_MAX_FIELD)
        return textfile_error(err, errlen, name, line, "a field longer than %u bytes",
                              SCN_CSV_MAX_FIELD);
    *o++ = '\0';
    *pp = p;
    *out = o;
    return 0;
}

/* The header (at line) names variables: each a valid name, not uuid, not
 * repeated. */
static int csv_check_header(const char *name, unsigned line, const struct scn_csv *c, char *err,
                            size_t errlen)
{
    for (unsigned i = 0; i < c->ncols; i++) {
        const char *h = scn_csv_field(c, 0, i);
        if (!valid_name(h, strlen(h)) || !strcmp(h, "uuid"))
            return textfile_error(err, errlen, name, line,
                                  "column %u's name '%.40s' is not a variable name (letters, "
                                  "digits, '_', '-'; not uuid)",
                                  i + 1, h);
        for (unsigned k = 0; k < i; k++)
            if (!strcmp(h, scn_csv_field(c, 0, k)))
                return textfile_error(err, errlen, name, line, "column name '%s' repeats", h);
    }
    return 0;
}

int scn_csv_parse(const char *name, const char *text, size_t len, struct scn_csv *out, char *err,
                  size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len > SCN_CSV_MAX_BYTES) {
        snprintf(err, errlen, "%s: larger than %u bytes", name, SCN_CSV_MAX_BYTES);
        return -1;
    }
    const char *p = text, *end = text + len;
    if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
        p += 3;
    /* Unescaping never grows a field, and each field's separator pays for
     * its NUL, except the last field of the text. */
    char *o = out->data = mem_alloc(len + 1);
    uint32_t cap = 0, rows = 0;
    unsigned line = 1, header_line = 0;
    while (p < end) {
        size_t nl = record_end_len(p, end);
        if (nl) { /* an empty line */
            p += nl;
            line++;
            continue;
        }
        if (rows > SCN_CSV_MAX_RECORDS) {
            textfile_error(err, errlen, name, line, "more than %u records", SCN_CSV_MAX_RECORDS);
            goto fail;
        }
        if (rows == cap) {
            cap = cap ? cap * 2 : 64;
            out->row = mem_realloc(out->row, cap * sizeof *out->row);
        }
        out->row[rows] = (uint32_t)(o - out->data);
        unsigned fields = 0;
        for (;;) {
            if (fields == SCN_CSV_MAX_COLUMNS) {
                textfile_error(err, errlen, name, line, "more than %u fields", SCN_CSV_MAX_COLUMNS);
                goto fail;
            }
            if (csv_field(name, line, &p, end, &o, err, errlen) < 0)
                goto fail;
            fields++;
            if (p == end || *p != ',')
                break;
            p++;
        }
        if (rows == 0) {
            out->ncols = fields;
            header_line = line;
        } else if (fields != out->ncols) {
            textfile_error(err, errlen, name, line, "%u field%s where the header has %u", fields,
                           fields == 1 ? "" : "s", out->ncols);
            goto fail;
        }
        rows++;
        nl = record_end_len(p, end);
        p += nl;
        line += nl > 0;
    }
    if (rows == 0) {
        textfile_error(err, errlen, name, line, "no header");
        goto fail;
    }
    out->nrows = rows - 1;
    if (csv_check_header(name, header_line, out, err, errlen) < 0)
        goto fail;
    if (out->nrows == 0) {
        textfile_error(err, errlen, name, line, "no record after the header");
        goto fail;
    }
    return 0;
fail:
    scn_csv_free(out);
    return -1;
}

void scn_csv_free(struct scn_csv *c)
{
    mem_free(c->data);
    mem_free(c->row);
    memset(c, 0, sizeof *c);
}

const char *scn_csv_field(const struct scn_csv *c, uint32_t row, unsigned col)
{
    const char *v = c->data + c->row[row];
    while (col--)
        v += strlen(v) + 1;
    return v;
}

/* ---- the scenario parser --------------------------------------------------- */

struct parser {
    struct scenario *s;
    unsigned line;
    char *err;
    size_t errlen;
    struct scn_request *req; /* the request that expect/save/body lines extend */
};

static int perr(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct parser *ps, const char *fmt, ...)
{
    int n = snprintf(ps->err, ps->errlen, "line %u: ", ps->line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < ps->errlen)
        vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* The index of variable name[0..len), added when define is set; -1 when
 * unknown (or the table is full). */
static int var_index(struct scenario *s, const char *name, size_t len, bool define)
{
    for (unsigned i = 0; i < s->nvars; i++)
        if (strlen(s->vars[i]) == len && !memcmp(s->vars[i], name, len))
            return (int)i;
    if (!define || s->nvars == SCN_MAX_VARS)
        return -1;
    s->vars[s->nvars] = mem_strndup(name, len);
    return (int)s->nvars++;
}

/* Compiles text[0..len) into t. Every ${var} must name a defined variable. */
static int tpl_compile(struct parser *ps, const char *text, size_t len, struct scn_tpl *t)
{
    t->text = mem_strndup(text, len);
    t->segs = NULL;
    t->nsegs = 0;
    unsigned cap = 0;
    size_t i = 0;
    while (i < len) {
        struct scn_seg seg = {.var = -1, .text = t->text + i};
        const char *ref = memmem(text + i, len - i, "${", 2);
        if (ref == text + i) {
            const char *close = memchr(ref, '}', (size_t)(text + len - ref));
            if (!close)
                return perr(ps, "'${' without '}'");
            size_t nlen = (size_t)(close - ref - 2);
            if (!valid_name(ref + 2, nlen))
                return perr(ps, "bad variable name in '%.*s'", (int)(close - ref + 1), ref);
            seg.var = var_index(ps->s, ref + 2, nlen, false);
            if (seg.var < 0)
                return perr(ps, "variable '%.*s' is neither fed nor saved before", (int)nlen,
                            ref + 2);
            i = (size_t)(close - text) + 1;
        } else {
            size_t stop = ref ? (size_t)(ref - text) : len;
            seg.len = stop - i;
            i = stop;
        }
        if (t->nsegs == cap) {
            cap = cap ? cap * 2 : 4;
            t->segs = mem_realloc(t->segs, cap * sizeof *t->segs);
        }
        t->segs[t->nsegs++] = seg;
    }
    return 0;
}

static int name_index(struct scenario *s, const char *name, size_t len)
{
    for (unsigned i = 0; i < s->nnames; i++)
        if (strlen(s->names[i]) == len && !memcmp(s->names[i], name, len))
            return (int)i;
    s->names = mem_realloc(s->names, (s->nnames + 1) * sizeof *s->names);
    s->names[s->nnames] = mem_strndup(name, len);
    return (int)s->nnames++;
}

/* Splits off the next space-separated word of *p..end. */
static bool next_word(const char **p, const char *end, const char **w, size_t *wl)
{
    const char *q = *p;
    while (q < end && *q == ' ')
        q++;
    if (q == end)
        return false;
    *w = q;
    while (q < end && *q != ' ')
        q++;
    *wl = (size_t)(q - *w);
    *p = q;
    return true;
}

static bool word_is(const char *w, size_t wl, const char *lit)
{
    return strlen(lit) == wl && !memcmp(w, lit, wl);
}

static bool parse_uint_word(const char *w, size_t wl, uint64_t max, uint64_t *out)
{
    if (wl == 0 || wl > 19)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < wl; i++) {
        if (w[i] < '0' || w[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(w[i] - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* A plain decimal: digits with at most one '.' inside, up to max. */
static bool parse_decimal(const char *w, size_t wl, double max, double *out)
{
    char buf[24];
    if (wl == 0 || wl >= sizeof buf)
        return false;
    bool dot = false;
    for (size_t i = 0; i < wl; i++) {
        if (w[i] == '.' && !dot)
            dot = true;
        else if (w[i] < '0' || w[i] > '9')
            return false;
    }
    if (w[0] == '.' || w[wl - 1] == '.')
        return false;
    memcpy(buf, w, wl);
    buf[wl] = '\0';
    *out = strtod(buf, NULL);
    return *out <= max;
}

static struct scn_step *add_step(struct parser *ps, enum scn_step_kind kind)
{
    struct scenario *s = ps->s;
    if (s->nsteps == SCN_MAX_STEPS) {
        perr(ps, "more than %d steps", SCN_MAX_STEPS);
        return NULL;
    }
    s->steps = mem_realloc(s->steps, (s->nsteps + 1) * sizeof *s->steps);
    struct scn_step *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof *st);
    st->kind = kind;
    return st;
}

/* ---- feeders --------------------------------------------------------------- */

struct scn_csv_feed {
    struct scn_csv csv;
    char *path;
    enum scn_order order;
    atomic_uint_fast64_t next; /* circular and queue: records handed out since the rewind */
    /* This shard's records (scn_set_shard): the record i (from 0) such
     * that i mod stride is offset, nown of them; 1, 0 and all unsharded. */
    uint32_t stride, offset, nown;
};

static const char *const a2b_route_vars[] = {"originId", "destinationId", "date"};

static struct scn_feeder *add_feeder(struct parser *ps, enum scn_feed_kind kind)
{
    struct scenario *s = ps->s;
    if (s->nfeeders == SCN_MAX_FEEDERS) {
        perr(ps, "at most %d feeders", SCN_MAX_FEEDERS);
        return NULL;
    }
    struct scn_feeder *f = &s->feeders[s->nfeeders++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->var = s->nvars;
    return f;
}

/* Defines f's next variable, name[0..len), which must be new: a feeder's
 * variables are consecutive. */
static int feeder_var(struct parser *ps, struct scn_feeder *f, const char *name, size_t len)
{
    if (var_index(ps->s, name, len, false) >= 0)
        return perr(ps, "variable '%.*s' is already defined", (int)len, name);
    if (var_index(ps->s, name, len, true) < 0)
        return perr(ps, "more than %d variables", SCN_MAX_VARS);
    f->nvars++;
    return 0;
}

static int feed_csv(struct parser *ps, const char *path, size_t pl, enum scn_order order)
{
    struct scn_feeder *f = add_feeder(ps, SCN_FEED_CSV);
    if (!f)
        return -1;
    struct scn_csv_feed *cf = f->csv = mem_calloc(1, sizeof *cf);
    cf->path = mem_strndup(path, pl);
    cf->order = order;
    cf->stride = 1;
    atomic_init(&cf->next, 0);
    char *text, err[256];
    size_t len;
    if (textfile_read(cf->path, &text, &len, err, sizeof err) < 0)
        return perr(ps, "feed-csv: %s", err);
    int rc = scn_csv_parse(cf->path, text, len, &cf->csv, err, sizeof err);
    mem_free(text);
    if (rc < 0)
        return perr(ps, "feed-csv: %s", err);
    cf->nown = cf->csv.nrows;
    for (unsigned i = 0; i < cf->csv.ncols; i++) {
        const char *h = scn_csv_field(&cf->csv, 0, i);
        if (feeder_var(ps, f, h, strlen(h)) < 0)
            return -1;
    }
    return 0;
}

static int feed_a2b_routes(struct parser *ps, const char *p, const char *end)
{
    const char *w;
    size_t wl;
    double scale = 1;
    uint64_t seed = 1;
    if ((next_word(&p, end, &w, &wl) && (!parse_decimal(w, wl, 100, &scale) || !(scale > 0))) ||
        (next_word(&p, end, &w, &wl) && !parse_uint_word(w, wl, UINT64_MAX, &seed)) ||
        next_word(&p, end, &w, &wl))
        return perr(ps, "feed-a2b-routes wants [SCALE [SEED]], the data set's as a2b-server's "
                        "--scale (above 0, up to 100) and --seed");
    struct scn_feeder *f = add_feeder(ps, SCN_FEED_A2B_ROUTES);
    if (!f)
        return -1;
    a2b_data_init(&f->routes, seed, scale);
    for (size_t i = 0; i < sizeof a2b_route_vars / sizeof a2b_route_vars[0]; i++)
        if (feeder_var(ps, f, a2b_route_vars[i], strlen(a2b_route_vars[i])) < 0)
            return -1;
    return 0;
}

static void feed_set(char **vals, unsigned var, const char *v)
{
    mem_free(vals[var]);
    vals[var] = mem_strdup(v);
}

static void feed_clear(const struct scenario *s, char **vals)
{
    for (unsigned i = 0; i < s->nfeeders; i++)
        for (unsigned k = s->feeders[i].var; k < s->feeders[i].var + s->feeders[i].nvars; k++) {
            mem_free(vals[k]);
            vals[k] = NULL;
        }
}

int scn_feed(const struct scenario *s, char **vals, uint64_t *rng)
{
    char v[24];
    for (unsigned i = 0; i < s->nfeeders; i++) {
        const struct scn_feeder *f = &s->feeders[i];
        if (f->kind == SCN_FEED_RANGE) {
            snprintf(v, sizeof v, "%llu",
                     (unsigned long long)(f->min + inj_rand(rng) % (f->max - f->min + 1)));
            feed_set(vals, f->var, v);
        } else if (f->kind == SCN_FEED_A2B_ROUTES) {
            struct a2b_transfer_row t;
            a2b_data_transfer(&f->routes, 1 + (int64_t)(inj_rand(rng) % f->routes.transfers), &t);
            snprintf(v, sizeof v, "%lld", (long long)t.origin);
            feed_set(vals, f->var, v);
            snprintf(v, sizeof v, "%lld", (long long)t.destination);
            feed_set(vals, f->var + 1, v);
            feed_set(vals, f->var + 2, t.date);
        } else {
            struct scn_csv_feed *cf = f->csv;
            uint64_t r = cf->order == SCN_ORDER_RANDOM ? inj_rand(rng) : atomic_fetch_add(&cf->next, 1);
            if (cf->order == SCN_ORDER_QUEUE && r >= cf->nown) {
                feed_clear(s, vals); /* dry: the user gets nothing */
                return -1;
            }
            r = cf->offset + (r % cf->nown) * cf->stride;
            /* One walk along the record: looking each field up from the
             * first would cost columns times the record's length. */
            const char *field = scn_csv_field(&cf->csv, (uint32_t)r + 1, 0);
            for (unsigned c = 0; c < cf->csv.ncols; c++, field += strlen(field) + 1)
                feed_set(vals, f->var + c, field);
        }
    }
    return 0;
}

void scn_feed_rewind(const struct scenario *s)
{
    for (unsigned i = 0; i < s->nfeeders; i++)
        if (s->feeders[i].kind == SCN_FEED_CSV)
            atomic_store(&s->feeders[i].csv->next, 0);
}

const char *scn_feed_dry(const struct scenario *s)
{
    for (unsigned i = 0; i < s->nfeeders; i++) {
        const struct scn_csv_feed *cf = s->feeders[i].csv;
        if (cf && cf->order == SCN_ORDER_QUEUE && atomic_load(&cf->next) > cf->nown)
            return cf->path;
    }
    return NULL;
}

int scn_set_shard(struct scenario *s, unsigned index, unsigned count, char *err, size_t errlen)
{
    for (unsigned i = 0; i < s->nfeeders; i++) {
        struct scn_feeder *f = &s->feeders[i];
        if (f->kind == SCN_FEED_RANGE) {
            /* Contiguous blocks, as bench_share splits items. */
            uint64_t width = f->max - f->min + 1; /* max <= UINT64_MAX / 2: no overflow */
            if (width < count) {
                snprintf(err, errlen, "feed %s %llu %llu has fewer values than the %u shards",
                         s->vars[f->var], (unsigned long long)f->min,
                         (unsigned long long)f->max, count);
                return -1;
            }
            unsigned __int128 w = width;
            uint64_t lo = f->min + (uint64_t)(w * index / count);
            f->max = f->min + (uint64_t)(w * (index + 1) / count) - 1;
            f->min = lo;
        } else if (f->kind == SCN_FEED_CSV) {
            struct scn_csv_feed *cf = f->csv;
            if (cf->csv.nrows < count) {
                snprintf(err, errlen, "feed-csv %s has %u records, fewer than the %u shards",
                         cf->path, (unsigned)cf->csv.nrows, count);
                return -1;
            }
            cf->stride = count;
            cf->offset = index;
            cf->nown = (uint32_t)((cf->csv.nrows - index + count - 1) / count);
        }
    }
    return 0;
}

static void feeder_free(struct scn_feeder *f)
{
    if (!f->csv)
        return;
    scn_csv_free(&f->csv->csv);
    mem_free(f->csv->path);
    mem_free(f->csv);
    f->csv = NULL;
}

static bool is_token_char(char c)
{
    return c > ' ' && c < 0x7f && !strchr("()<>@,;:\\\"/[]?={}", c);
}

static int parse_line(struct parser *ps, const char *p, const char *end)
{
    struct scenario *s = ps->s;
    const char *w, *rest;
    size_t wl;
    if (!next_word(&p, end, &w, &wl) || w[0] == '#')
        return 0;
    rest = p;
    while (rest < end && *rest == ' ')
        rest++;
    size_t rlen = (size_t)(end - rest);
    while (rlen > 0 && rest[rlen - 1] == ' ')
        rlen--;

    if (word_is(w, wl, "scenario")) {
        if (!rlen)
            return perr(ps, "scenario wants a name");
        mem_free(s->name);
        s->name = mem_strndup(rest, rlen);
    } else if (word_is(w, wl, "header")) {
        const char *colon = memchr(rest, ':', rlen);
        if (!colon || colon == rest)
            return perr(ps, "header wants 'Name: value'");
        for (const char *c = rest; c < colon; c++)
            if (!is_token_char(*c))
                return perr(ps, "bad header name");
        for (const char *c = colon; c < rest + rlen; c++)
            if ((unsigned char)*c < 0x20 && *c != '\t')
                return perr(ps, "control character in a header");
        struct scn_buf b = {s->headers, s->headers ? strlen(s->headers) : 0,
                            s->headers ? strlen(s->headers) + 1 : 0};
        scn_buf_add(&b, rest, rlen);
        scn_buf_add(&b, "\r\n", 2);
        s->headers = b.data;
    } else if (word_is(w, wl, "feed")) {
        const char *v, *a, *z;
        size_t vl, al, zl;
        uint64_t lo, hi;
        if (!next_word(&p, end, &v, &vl) || !next_word(&p, end, &a, &al) ||
            !next_word(&p, end, &z, &zl) || next_word(&p, end, &w, &wl))
            return perr(ps, "feed wants VAR MIN MAX");
        if (!valid_name(v, vl))
            return perr(ps, "feed: bad variable name");
        if (!parse_uint_word(a, al, UINT64_MAX / 2, &lo) ||
            !parse_uint_word(z, zl, UINT64_MAX / 2, &hi) || hi < lo)
            return perr(ps, "feed wants whole numbers MIN <= MAX");
        struct scn_feeder *f = add_feeder(ps, SCN_FEED_RANGE);
        if (!f || feeder_var(ps, f, v, vl) < 0)
            return -1;
        f->min = lo;
        f->max = hi;
    } else if (word_is(w, wl, "feed-csv")) {
        const char *path, *ord = NULL;
        size_t pl, ol = 0;
        if (!next_word(&p, end, &path, &pl) ||
            (next_word(&p, end, &ord, &ol) && next_word(&p, end, &w, &wl)))
            return perr(ps, "feed-csv wants PATH [random|circular|queue]");
        enum scn_order order = SCN_ORDER_QUEUE; /* Gatling's default */
        if (ord && word_is(ord, ol, "random"))
            order = SCN_ORDER_RANDOM;
        else if (ord && word_is(ord, ol, "circular"))
            order = SCN_ORDER_CIRCULAR;
        else if (ord && !word_is(ord, ol, "queue"))
            return perr(ps, "feed-csv: the order is random, circular or queue");
        return feed_csv(ps, path, pl, order);
    } else if (word_is(w, wl, "feed-a2b-routes")) {
        return feed_a2b_routes(ps, p, end);
    } else if (word_is(w, wl, "request")) {
        const char *m, *path;
        size_t ml, pl;
        if (!next_word(&p, end, &m, &ml) || !next_word(&p, end, &path, &pl))
            return perr(ps, "request wants METHOD PATH [NAME]");
        for (size_t i = 0; i < ml; i++)
            if (m[i] < 'A' || m[i] > 'Z')
                return perr(ps, "request: the method is upper-case letters");
        if (path[0] != '/')
            return perr(ps, "request: the path starts with '/'");
        for (size_t i = 0; i < pl; i++)
            if ((unsigned char)path[i] <= ' ' || path[i] == 0x7f)
                return perr(ps, "request: control character in the path");
        struct scn_step *st = add_step(ps, SCN_REQUEST);
        if (!st)
            return -1;
        struct scn_request *r = &st->req;
        r->method = mem_strndup(m, ml);
        if (tpl_compile(ps, path, pl, &r->path) < 0)
            return -1;
        while (p < end && *p == ' ')
            p++;
        size_t nl = (size_t)(end - p);
        while (nl > 0 && p[nl - 1] == ' ')
            nl--;
        char defname[SCN_MAX_LINE];
        if (nl == 0) { /* default name: METHOD PATH as written */
            nl = (size_t)snprintf(defname, sizeof defname, "%.*s %.*s", (int)ml, m, (int)pl, path);
            p = defname;
        }
        r->name = (unsigned)name_index(s, p, nl);
        s->nrequests++;
        ps->req = r;
    } else if (word_is(w, wl, "expect") || word_is(w, wl, "save") || word_is(w, wl, "body")) {
        struct scn_request *r = ps->req;
        if (!r)
            return perr(ps, "'%.*s' before any request", (int)wl, w);
        if (word_is(w, wl, "body")) {
            if (r->has_body)
                return perr(ps, "a second body");
            r->has_body = true;
            return tpl_compile(ps, rest, rlen, &r->body);
        }
        if (word_is(w, wl, "expect")) {
            uint64_t st;
            while (next_word(&p, end, &w, &wl)) {
                if (!parse_uint_word(w, wl, 599, &st) || st < 100)
                    return perr(ps, "expect wants statuses from 100 to 599");
                if (r->nexpect == SCN_MAX_EXPECT)
                    return perr(ps, "at most %d expected statuses", SCN_MAX_EXPECT);
                r->expect[r->nexpect++] = (int)st;
            }
            if (!r->nexpect)
                return perr(ps, "expect wants statuses");
            return 0;
        }
        const char *v, *path, *pick = NULL;
        size_t vl, pl, pkl = 0;
        if (!next_word(&p, end, &v, &vl) || !next_word(&p, end, &path, &pl))
            return perr(ps, "save wants VAR JSONPATH [first|random]");
        if (next_word(&p, end, &pick, &pkl) && next_word(&p, end, &w, &wl))
            return perr(ps, "save: too many words");
        if (pick && !word_is(pick, pkl, "first") && !word_is(pick, pkl, "random"))
            return perr(ps, "save: the pick is first or random");
        if (!valid_name(v, vl) || word_is(v, vl, "uuid"))
            return perr(ps, "save: bad variable name");
        if (r->nextract == SCN_MAX_EXTRACT)
            return perr(ps, "at most %d saves per request", SCN_MAX_EXTRACT);
        struct scn_extract *ex = &r->extract[r->nextract];
        if (scn_path_parse(path, pl, &ex->path) < 0)
            return perr(ps, "save: '%.*s' is not in the JSONPath subset ($, [*], .field)",
                        (int)pl, path);
        r->nextract++;
        ex->pick = pick && word_is(pick, pkl, "random") ? SCN_PICK_RANDOM : SCN_PICK_FIRST;
        int var = var_index(s, v, vl, true);
        if (var < 0)
            return perr(ps, "more than %d variables", SCN_MAX_VARS);
        ex->var = (unsigned)var;
    } else if (word_is(w, wl, "pause")) {
        const char *a, *z = NULL;
        size_t al, zl = 0;
        double lo, hi;
        if (!next_word(&p, end, &a, &al) || !parse_decimal(a, al, 3600, &lo))
            return perr(ps, "pause wants MIN [MAX] seconds (up to 3600)");
        hi = lo;
        if (next_word(&p, end, &z, &zl) && !parse_decimal(z, zl, 3600, &hi))
            return perr(ps, "pause wants MIN [MAX] seconds (up to 3600)");
        if (hi < lo || next_word(&p, end, &w, &wl))
            return perr(ps, "pause wants MIN [MAX] with MIN <= MAX");
        struct scn_step *st = add_step(ps, SCN_PAUSE);
        if (!st)
            return -1;
        st->pause_min = lo;
        st->pause_max = hi;
        ps->req = NULL;
    } else if (word_is(w, wl, "exit-if-failed")) {
        if (rlen)
            return perr(ps, "exit-if-failed takes nothing");
        if (!add_step(ps, SCN_EXIT_IF_FAILED))
            return -1;
        ps->req = NULL;
    } else {
        return perr(ps, "unknown directive '%.*s'", (int)wl, w);
    }
    return 0;
}

int scn_parse(const char *text, size_t len, struct scenario *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    var_index(out, "uuid", 4, true);
    struct parser ps = {.s = out, .err = err, .errlen = errlen};
    size_t i = 0;
    while (i < len) {
        ps.line++;
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t e = end;
        if (e > i && text[e - 1] == '\r')
            e--;
        int rc = 0;
        if (e - i > SCN_MAX_LINE)
            rc = perr(&ps, "longer than %d bytes", SCN_MAX_LINE);
        for (size_t k = i; rc == 0 && k < e; k++)
            if (text[k] == '\t' || text[k] == '\0' || text[k] == '\r')
                rc = perr(&ps, "tab, NUL or CR inside a line");
        if (rc == 0)
            rc = parse_line(&ps, text + i, text + e);
        if (rc < 0) {
            scn_free(out);
            return -1;
        }
        i = end + 1;
    }
    if (out->nrequests == 0) {
        snprintf(err, errlen, "the scenario has no request");
        scn_free(out);
        return -1;
    }
    if (!out->name)
        out->name = mem_strdup("scenario");
    return 0;
}

void scn_free(struct scenario *s)
{
    for (unsigned i = 0; i < s->nsteps; i++) {
        struct scn_request *r = &s->steps[i].req;
        if (s->steps[i].kind != SCN_REQUEST)
            continue;
        mem_free(r->method);
        tpl_free(&r->path);
        tpl_free(&r->body);
        for (unsigned k = 0; k < r->nextract; k++)
            scn_path_free(&r->extract[k].path);
    }
    mem_free(s->steps);
    for (unsigned i = 0; i < s->nfeeders; i++)
        feeder_free(&s->feeders[i]);
    for (unsigned i = 0; i < s->nvars; i++)
        mem_free(s->vars[i]);
    for (unsigned i = 0; i < s->nnames; i++)
        mem_free(s->names[i]);
    mem_free(s->names);
    mem_free(s->name);
    mem_free(s->headers);
    memset(s, 0, sizeof *s);
}

bool scn_status_ok(const struct scn_request *r, int status)
{
    if (r->nexpect == 0)
        return (status >= 200 && status < 300) || status == 304;
    for (unsigned i = 0; i < r->nexpect; i++)
        if (r->expect[i] == status)
            return true;
    return false;
}
