/* a2b_body.c - the a2b request bodies, read with the shared JSON reader
 * (core/json_read.h) and worded in a2b's own messages; the query string
 * and path ids. */
#include "a2b/a2b_body.h"

#include <string.h>

#include "core/hex.h"
#include "core/json_read.h"

/* The reader's error in our words. top: it was found in the body's own
 * object, not inside a skipped value. */
static const char *reader_msg(const struct jr *r, bool top)
{
    switch (r->err) {
    case JR_E_VALUE: return jr_truncated(r) ? "unexpected end of the body" : "invalid value";
    case JR_E_LITERAL:
    case JR_E_NUMBER: return "invalid value";
    case JR_E_FRACTION: return "invalid number";
    case JR_E_STRING: return "unterminated string";
    case JR_E_CONTROL: return "control character in a string";
    case JR_E_UTF8: return "invalid UTF-8";
    case JR_E_ESCAPE: return "bad escape";
    case JR_E_HEX: return "bad \\u escape";
    case JR_E_SURROGATE: return "unpaired surrogate";
    case JR_E_NUL: return "NUL in a string"; /* C strings all the way to the database */
    case JR_E_KEY: return top ? "expected a field name" : "expected a string";
    case JR_E_COLON: return "expected ':'";
    case JR_E_COMMA: return top ? "expected ',' or '}'" : "expected ',' or the end of a container";
    case JR_E_DEPTH: return "nested too deeply";
    case JR_E_TRAILING: return "text after the JSON object";
    case JR_OK: break;
    }
    return "invalid JSON";
}

/* The field a key names, or -1. Keys are compared as written: names with
 * escapes never match ours, which have none. */
static int field_index(const struct jr *r, const struct a2b_field *fields, size_t nfields)
{
    for (size_t i = 0; i < nfields; i++)
        if (strlen(fields[i].name) == r->text_len && !memcmp(fields[i].name, r->text, r->text_len))
            return (int)i;
    return -1;
}

/* Reads the members of the body's object, just entered. NULL, or what is
 * wrong. */
static const char *members(struct jr *r, char *store, size_t store_cap,
                           const struct a2b_field *fields, size_t nfields)
{
    char *o = store;
    size_t n;
    int more;

    while ((more = jr_next(r)) > 0) {
        if (!jr_key(r, NULL, 0, &n) || !jr_colon(r))
            return reader_msg(r, true);
        int f = field_index(r, fields, nfields);
        enum jr_type t = jr_peek(r);
        if (f < 0) {
            if (!jr_skip(r))
                return reader_msg(r, false);
        } else if (t == JR_STRING) {
            /* The escaped text is at least as long as the result. */
            if (store_cap - (size_t)(o - store) < (size_t)(r->end - r->p))
                return "no room for the body's strings";
            if (!jr_string(r, o, (size_t)(r->end - r->p), &n))
                return reader_msg(r, true);
            o[n] = '\0';
            *fields[f].value = o;
            o += n + 1;
        } else if (t == JR_NULL) {
            if (!jr_literal(r))
                return reader_msg(r, true);
            *fields[f].value = NULL;
        } else {
            return "a field must be a string or null";
        }
    }
    return more < 0 ? reader_msg(r, true) : NULL;
}

int a2b_body_parse(const char *body, size_t len, char *store, size_t store_cap,
                   const struct a2b_field *fields, size_t nfields, const char **err)
{
    struct jr r;
    const char *msg = "the body must be a JSON object";

    jr_init(&r, body, len, A2B_BODY_MAX_DEPTH);
    r.refuse_nul = true;
    for (size_t i = 0; i < nfields; i++)
        *fields[i].value = NULL;
    if (jr_peek(&r) == JR_OBJECT && jr_enter(&r)) {
        msg = members(&r, store, store_cap, fields, nfields);
        if (!msg && !jr_end(&r))
            msg = reader_msg(&r, true);
    }
    if (msg) {
        for (size_t i = 0; i < nfields; i++)
            *fields[i].value = NULL;
        *err = msg;
        return -1;
    }
    return 0;
}

/* Percent-decodes s[0..n) into out[0..cap) with a NUL; the length, or -1. */
static long decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            int b = i + 2 < n ? hex_byte(s + i + 1) : -1;
            if (b < 0)
                return -1;
            c = (char)b;
            i += 2;
        }
        if (c == 0 || o + 1 >= cap)
            return -1;
        out[o++] = c;
    }
    out[o] = 0;
    return (long)o;
}

int a2b_query_get(const char *query, const char *name, char *out, size_t cap)
{
    if (!query || cap == 0)
        return 0;
    const char *p = query;
    size_t name_len = strlen(name);
    while (*p) {
        const char *amp = strchr(p, '&');
        const char *end = amp ? amp : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        const char *key_end = eq ? eq : end;
        char key[64];
        long k = decode(p, (size_t)(key_end - p), key, sizeof key);
        if (k < 0 && key_end - p < (long)sizeof key)
            return -1; /* a malformed name; an over-long one is just not ours */
        if (k == (long)name_len && memcmp(key, name, name_len) == 0) {
            const char *v = eq ? eq + 1 : end;
            return decode(v, (size_t)(end - v), out, cap) < 0 ? -1 : 1;
        }
        p = amp ? amp + 1 : end;
    }
    return 0;
}

bool a2b_parse_id(const char *s, size_t len, int64_t *out)
{
    if (len == 0 || len > 18)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}
