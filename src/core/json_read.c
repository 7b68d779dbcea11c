/* json_read.c - the strict JSON reader (json_read.h). */
#include "core/json_read.h"

#include <string.h>

#include "core/hex.h"
#include "core/utf8.h"

/* Bytes of a string that stand for themselves and need no other look:
 * ASCII from the space up, but the quote and the backslash. Strings are
 * copied a run of these at a time; a table, because this is the loop every
 * byte of every string goes through. */
static const bool plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0_ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 1_ */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 2_ */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 3_ */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 4_ */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 5_ */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 6_ */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 7_ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 8_ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 9_ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* A_ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* B_ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* C_ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* D_ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* E_ */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* F_ */
};

static bool fail(struct jr *r, enum jr_err code, const unsigned char *at)
{
    if (r->err == JR_OK) {
        r->err = code;
        r->err_off = (size_t)(at - r->start);
    }
    return false;
}

/* An error found because the input ends. */
static bool cut(struct jr *r, enum jr_err code) { return fail(r, code, r->end); }

static const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

void jr_init(struct jr *r, const void *in, size_t len, unsigned max_depth)
{
    const unsigned char *s = in;
    *r = (struct jr){.p = s, .start = s, .end = s + len};
    r->max_depth = max_depth < JR_MAX_DEPTH ? max_depth : JR_MAX_DEPTH;
}

enum jr_type jr_peek(struct jr *r)
{
    r->p = skip_ws(r->p, r->end);
    if (r->p == r->end)
        return JR_NONE;
    switch (*r->p) {
    case '{': return JR_OBJECT;
    case '[': return JR_ARRAY;
    case '"': return JR_STRING;
    case 't': return JR_TRUE;
    case 'f': return JR_FALSE;
    case 'n': return JR_NULL;
    case '-': return JR_NUMBER;
    default: return is_digit(*r->p) ? JR_NUMBER : JR_NONE;
    }
}

bool jr_enter(struct jr *r)
{
    if (r->depth >= r->max_depth)
        return fail(r, JR_E_DEPTH, r->p);
    if (*r->p == '{')
        r->objects |= 1ull << r->depth;
    else
        r->objects &= ~(1ull << r->depth);
    r->depth++;
    r->p++;
    r->fresh = true;
    return true;
}

int jr_next(struct jr *r)
{
    const unsigned char close = r->objects >> (r->depth - 1) & 1 ? '}' : ']';
    const unsigned char *p = skip_ws(r->p, r->end);
    bool first = r->fresh;

    r->fresh = false;
    r->p = p;
    if (p < r->end && *p == close) {
        r->p++;
        r->depth--;
        return 0;
    }
    if (first)
        return 1; /* what follows must be an element; its reader checks that */
    if (p == r->end || *p != ',') {
        fail(r, JR_E_COMMA, p);
        return -1;
    }
    r->p = skip_ws(p + 1, r->end);
    return 1;
}

bool jr_key(struct jr *r, char *dst, size_t cap, size_t *len)
{
    if (r->p == r->end)
        return cut(r, JR_E_KEY);
    if (*r->p != '"')
        return fail(r, JR_E_KEY, r->p);
    return jr_string(r, dst, cap, len);
}

bool jr_colon(struct jr *r)
{
    r->p = skip_ws(r->p, r->end);
    if (r->p == r->end)
        return cut(r, JR_E_COLON);
    if (*r->p != ':')
        return fail(r, JR_E_COLON, r->p);
    r->p = skip_ws(r->p + 1, r->end);
    return true;
}

/* Appends src[0..k) to dst[0..cap) at *n, as much of it as fits, and
 * counts all of it. dst may be NULL when cap is 0. */
static void put(char *dst, size_t cap, size_t *n, const void *src, size_t k)
{
    if (*n < cap)
        memcpy(dst + *n, src, k < cap - *n ? k : cap - *n);
    *n += k;
}

/* Reads four hex digits at *pp into *v; errors are reported at esc, the
 * backslash of the escape. */
static bool hex4(struct jr *r, const unsigned char **pp, const unsigned char *esc, uint32_t *v)
{
    const unsigned char *p = *pp;
    *v = 0;
    for (int i = 0; i < 4; i++, p++) {
        if (p == r->end)
            return cut(r, JR_E_HEX);
        int d = hex_value(*p);
        if (d < 0)
            return fail(r, JR_E_HEX, esc);
        *v = *v << 4 | (uint32_t)d;
    }
    *pp = p;
    return true;
}

/* Reads the escape whose backslash is at *pp; out gets the *k bytes of
 * UTF-8 it stands for. A high surrogate must be followed by an escaped low
 * one. */
static bool escape(struct jr *r, const unsigned char **pp, uint8_t out[4], size_t *k)
{
    const unsigned char *esc = *pp, *p = esc + 1;
    uint32_t cp, low;

    if (p == r->end)
        return cut(r, JR_E_STRING);
    *k = 1;
    switch (*p++) {
    case '"': out[0] = '"'; break;
    case '\\': out[0] = '\\'; break;
    case '/': out[0] = '/'; break;
    case 'b': out[0] = '\b'; break;
    case 'f': out[0] = '\f'; break;
    case 'n': out[0] = '\n'; break;
    case 'r': out[0] = '\r'; break;
    case 't': out[0] = '\t'; break;
    case 'u':
        if (!hex4(r, &p, esc, &cp))
            return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return fail(r, JR_E_SURROGATE, esc);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            for (const char *want = "\\u"; *want; want++, p++) {
                if (p == r->end)
                    return cut(r, JR_E_SURROGATE);
                if (*p != (unsigned char)*want)
                    return fail(r, JR_E_SURROGATE, esc);
            }
            if (!hex4(r, &p, esc, &low))
                return false;
            if (low < 0xDC00 || low > 0xDFFF)
                return fail(r, JR_E_SURROGATE, esc);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp == 0) {
            r->nul = true;
            if (r->refuse_nul)
                return fail(r, JR_E_NUL, esc);
        }
        *k = utf8_encode(cp, out);
        break;
    default: return fail(r, JR_E_ESCAPE, esc);
    }
    *pp = p;
    return true;
}

/* The rest of a string from its first byte that is not plain: escapes,
 * UTF-8, and whatever runs of plain bytes follow them. Returns the closing
 * quote, or NULL on error. Kept apart so that the common string, plain
 * bytes alone, takes the short way through jr_string. */
__attribute__((noinline)) static const unsigned char *string_rest(struct jr *r,
                                                                  const unsigned char *p,
                                                                  char *dst, size_t cap, size_t *n)
{
    const unsigned char *end = r->end;
    uint8_t utf8[4];
    size_t k;

    for (;;) {
        if (p == end)
            return cut(r, JR_E_STRING), NULL;
        if (*p == '"')
            return p;
        if (*p < 0x20)
            return fail(r, JR_E_CONTROL, p), NULL;
        if (*p == '\\') {
            if (!escape(r, &p, utf8, &k))
                return NULL;
            put(dst, cap, n, utf8, k);
        } else if (*p >= 0x80) {
            int m = utf8_seq_len(p, (size_t)(end - p));
            if (m <= 0)
                return (m < 0 ? cut(r, JR_E_UTF8) : fail(r, JR_E_UTF8, p)), NULL;
            put(dst, cap, n, p, (size_t)m);
            p += m;
        }
        const unsigned char *run = p;
        while (p < end && plain_byte[*p])
            p++;
        put(dst, cap, n, run, (size_t)(p - run));
    }
}

bool jr_string(struct jr *r, char *dst, size_t cap, size_t *len)
{
    const unsigned char *p = r->p + 1, *end = r->end, *run = p;
    size_t n = 0;

    r->nul = false;
    r->text = (const char *)p;
    while (p < end && plain_byte[*p])
        p++;
    put(dst, cap, &n, run, (size_t)(p - run));
    if ((p == end || *p != '"') && !(p = string_rest(r, p, dst, cap, &n)))
        return false;
    r->text_len = (size_t)(p - (const unsigned char *)r->text);
    r->p = p + 1;
    *len = n;
    return true;
}

/* Reads the digits after a fraction's '.' or an exponent's 'e' (and sign). */
static bool digits(struct jr *r, const unsigned char **pp)
{
    const unsigned char *p = *pp;
    if (p == r->end)
        return cut(r, JR_E_FRACTION);
    if (!is_digit(*p))
        return fail(r, JR_E_FRACTION, p);
    while (p < r->end && is_digit(*p))
        p++;
    *pp = p;
    return true;
}

bool jr_number(struct jr *r, uint64_t *u, bool *plain)
{
    const unsigned char *p = r->p, *end = r->end;
    uint64_t v = 0;

    *plain = *p != '-';
    if (*p == '-')
        p++;
    if (p == end)
        return cut(r, JR_E_NUMBER);
    if (*p == '0') {
        p++;
    } else if (is_digit(*p)) {
        for (; p < end && is_digit(*p); p++) {
            unsigned d = (unsigned)(*p - '0');
            v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
        }
    } else {
        return fail(r, JR_E_NUMBER, p);
    }
    if (p < end && *p == '.') {
        *plain = false;
        p++;
        if (!digits(r, &p))
            return false;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *plain = false;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!digits(r, &p))
            return false;
    }
    *u = v;
    r->p = p;
    return true;
}

bool jr_literal(struct jr *r)
{
    const char *lit = *r->p == 't' ? "true" : *r->p == 'f' ? "false" : "null";
    const unsigned char *p = r->p;

    for (; *lit; lit++, p++) {
        if (p == r->end)
            return cut(r, JR_E_LITERAL);
        if (*p != (unsigned char)*lit)
            return fail(r, JR_E_LITERAL, p);
    }
    r->p = p;
    return true;
}

bool jr_skip(struct jr *r)
{
    const unsigned base = r->depth;
    uint64_t u;
    size_t n;
    bool b;

    for (;;) {
        switch (jr_peek(r)) {
        case JR_OBJECT:
        case JR_ARRAY:
            if (!jr_enter(r))
                return false;
            break;
        case JR_STRING:
            if (!jr_string(r, NULL, 0, &n))
                return false;
            break;
        case JR_NUMBER:
            if (!jr_number(r, &u, &b))
                return false;
            break;
        case JR_TRUE:
        case JR_FALSE:
        case JR_NULL:
            if (!jr_literal(r))
                return false;
            break;
        case JR_NONE: return r->p == r->end ? cut(r, JR_E_VALUE) : fail(r, JR_E_VALUE, r->p);
        }
        /* On to the next value to read, closing containers on the way. */
        for (;;) {
            if (r->depth == base)
                return true;
            int m = jr_next(r);
            if (m < 0)
                return false;
            if (m > 0) {
                if (r->objects >> (r->depth - 1) & 1 && !(jr_key(r, NULL, 0, &n) && jr_colon(r)))
                    return false;
                break;
            }
        }
    }
}

bool jr_end(struct jr *r)
{
    r->p = skip_ws(r->p, r->end);
    return r->p == r->end || fail(r, JR_E_TRAILING, r->p);
}

bool jr_truncated(const struct jr *r)
{
    return r->err != JR_OK && r->err_off == (size_t)(r->end - r->start);
}
