/* result_read.c - the reading layer shared by the results-file readers. */
#include "report/result_read.h"

#include "core/mem.h"
#include "core/textfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rr_init(struct rr *ps, const char *text, size_t len, unsigned max_depth, char *err,
             size_t errlen)
{
    *ps = (struct rr){.err = err, .errlen = errlen};
    jr_init(&ps->r, text, len, max_depth);
    ps->r.refuse_nul = true;
}

bool rr_fail(struct rr *ps, const char *fmt, const char *what)
{
    if (!ps->failed)
        snprintf(ps->err, ps->errlen, fmt, (size_t)(ps->r.p - ps->r.start), what);
    ps->failed = true;
    return false;
}

/* What the reader found wrong, in a few words. */
static const char *jr_what(enum jr_err e)
{
    switch (e) {
    case JR_E_STRING:
    case JR_E_CONTROL:
    case JR_E_UTF8:
    case JR_E_ESCAPE:
    case JR_E_HEX:
    case JR_E_SURROGATE:
    case JR_E_NUL:
        return "a malformed string";
    case JR_E_KEY:
    case JR_E_COLON:
        return "a malformed object member";
    case JR_E_COMMA:
        return "no ',' or closing bracket where one belongs";
    case JR_E_DEPTH:
        return "nesting too deep";
    case JR_E_TRAILING:
        return "text after the document";
    default:
        return "no valid JSON value";
    }
}

bool rr_reader_failed(struct rr *ps)
{
    if (ps->failed)
        return false;
    ps->failed = true;
    if (jr_truncated(&ps->r))
        snprintf(ps->err, ps->errlen, "byte %zu: the JSON ends early (a cut-off file?)",
                 ps->r.err_off);
    else
        snprintf(ps->err, ps->errlen, "byte %zu: malformed JSON: %s", ps->r.err_off,
                 jr_what(ps->r.err));
    return false;
}

int rr_next_key(struct rr *ps, char key[RR_KEY_CAP])
{
    int k = jr_next(&ps->r);
    if (k <= 0)
        return k < 0 ? (rr_reader_failed(ps), -1) : 0;
    size_t len;
    if (!jr_key(&ps->r, key, RR_KEY_CAP - 1, &len) || !jr_colon(&ps->r))
        return rr_reader_failed(ps), -1;
    key[len < RR_KEY_CAP - 1 ? len : 0] = '\0';
    return 1;
}

bool rr_string(struct rr *ps, char *dst, size_t cap, const char *what)
{
    if (jr_peek(&ps->r) != JR_STRING)
        return rr_fail(ps, "byte %zu: %s is not a string", what);
    size_t len;
    if (!jr_string(&ps->r, dst, cap - 1, &len))
        return rr_reader_failed(ps);
    dst[len < cap - 1 ? len : cap - 1] = '\0';
    return true;
}

bool rr_number(struct rr *ps, double *out, const char *what)
{
    enum jr_type t = jr_peek(&ps->r);
    if (t == JR_NULL) {
        *out = NAN;
        return jr_literal(&ps->r) || rr_reader_failed(ps);
    }
    if (t != JR_NUMBER)
        return rr_fail(ps, "byte %zu: %s is not a number", what);
    const unsigned char *at = ps->r.p;
    uint64_t u;
    bool plain;
    if (!jr_number(&ps->r, &u, &plain))
        return rr_reader_failed(ps);
    char buf[64];
    size_t len = (size_t)(ps->r.p - at);
    if (len >= sizeof buf)
        return rr_fail(ps, "byte %zu: %s has too many digits", what);
    memcpy(buf, at, len);
    buf[len] = '\0';
    *out = strtod(buf, NULL);
    return true;
}

bool rr_uint(struct rr *ps, uint64_t *out, uint64_t max, const char *what)
{
    if (jr_peek(&ps->r) != JR_NUMBER)
        return rr_fail(ps, "byte %zu: %s is not a whole number", what);
    const unsigned char *at = ps->r.p;
    bool plain;
    if (!jr_number(&ps->r, out, &plain))
        return rr_reader_failed(ps);
    if (!plain || *out > max) {
        ps->r.p = at;
        return rr_fail(ps, "byte %zu: %s is not a whole number in range", what);
    }
    return true;
}

bool rr_skip(struct rr *ps) { return jr_skip(&ps->r) || rr_reader_failed(ps); }

static bool rr_container(struct rr *ps, enum jr_type t, const char *fmt, const char *what)
{
    if (jr_peek(&ps->r) != t)
        return rr_fail(ps, fmt, what);
    return jr_enter(&ps->r) || rr_reader_failed(ps);
}

bool rr_object(struct rr *ps, const char *what)
{
    return rr_container(ps, JR_OBJECT, "byte %zu: %s is not an object", what);
}

bool rr_array(struct rr *ps, const char *what)
{
    return rr_container(ps, JR_ARRAY, "byte %zu: %s is not an array", what);
}

int rr_load(const char *path, int (*parse)(void *dst, const char *text, size_t len, char *err,
                                           size_t errlen),
            void *dst, char *err, size_t errlen)
{
    char *text, msg[256];
    size_t len;
    if (textfile_read(path, &text, &len, msg, sizeof msg) < 0) {
        snprintf(err, errlen, "%s", msg);
        return -1;
    }
    int rc = parse(dst, text, len, msg, sizeof msg);
    mem_free(text);
    if (rc < 0)
        snprintf(err, errlen, "%s: %s", path, msg);
    return rc;
}

bool rr_fields(struct rr *ps, const char *what, const struct rr_field *fs, unsigned n)
{
    enum jr_type t = jr_peek(&ps->r);
    if (t == JR_NULL)
        return jr_literal(&ps->r) || rr_reader_failed(ps);
    if (!rr_object(ps, what))
        return false;
    char key[RR_KEY_CAP];
    int k;
    while ((k = rr_next_key(ps, key)) == 1) {
        const struct rr_field *f = NULL;
        for (unsigned i = 0; i < n && !f; i++)
            if (!strcmp(fs[i].key, key))
                f = &fs[i];
        bool ok = !f       ? rr_skip(ps)
                  : f->num ? rr_number(ps, f->num, f->key)
                           : rr_string(ps, f->str, f->cap, f->key);
        if (!ok)
            return false;
    }
    return k == 0;
}
