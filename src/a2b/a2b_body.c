/* a2b_body.c - a strict reader for the a2b request bodies, the query
 * string and path ids. */
#include "a2b/a2b_body.h"

#include <string.h>

struct rd {
    const char *p, *end;
    const char *err;
};

static void ws(struct rd *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static int fail(struct rd *r, const char *msg)
{
    if (!r->err)
        r->err = msg;
    return -1;
}

static int hex4(struct rd *r, unsigned *out)
{
    if (r->end - r->p < 4)
        return fail(r, "bad \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *r->p++;
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return fail(r, "bad \\u escape");
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* Bytes of the UTF-8 sequence starting with lead byte c whose continuation
 * bytes follow in p[1..), checked per RFC 3629 (no overlongs, surrogates or
 * code points over U+10FFFF); 0 if invalid. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if ((size_t)(end - p) < n)
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | cp >> 6);
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | cp >> 12);
        *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | cp >> 18);
        *o++ = (char)(0x80 | (cp >> 12 & 0x3F));
        *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* A string at r->p (the opening quote). With out, writes its unescaped
 * bytes there and a NUL, and sets *out_end past the NUL. */
static int string(struct rd *r, char *out, char **out_end)
{
    if (r->p >= r->end || *r->p != '"')
        return fail(r, "expected a string");
    r->p++;
    char *o = out;
    while (r->p < r->end) {
        unsigned char c = (unsigned char)*r->p;
        if (c == '"') {
            r->p++;
            if (out) {
                *o++ = 0;
                *out_end = o;
            }
            return 0;
        }
        if (c < 0x20)
            return fail(r, "control character in a string");
        if (c == '\\') {
            r->p++;
            if (r->p >= r->end)
                break;
            char e = *r->p++;
            unsigned cp;
            switch (e) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                if (hex4(r, &cp) < 0)
                    return -1;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
                        return fail(r, "unpaired surrogate");
                    r->p += 2;
                    if (hex4(r, &lo) < 0)
                        return -1;
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return fail(r, "unpaired surrogate");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return fail(r, "unpaired surrogate");
                } else if (cp == 0) {
                    /* The strings are C strings all the way to the database. */
                    return fail(r, "NUL in a string");
                }
                break;
            default: return fail(r, "bad escape");
            }
            if (out)
                o = put_utf8(o, cp);
            continue;
        }
        size_t n = utf8_len((const unsigned char *)r->p, (const unsigned char *)r->end);
        if (n == 0)
            return fail(r, "invalid UTF-8");
        if (out) {
            memcpy(o, r->p, n);
            o += n;
        }
        r->p += n;
    }
    return fail(r, "unterminated string");
}

static int literal(struct rd *r, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, lit, n) != 0)
        return fail(r, "invalid value");
    r->p += n;
    return 0;
}

static int number(struct rd *r)
{
    const char *p = r->p;
    if (p < r->end && *p == '-')
        p++;
    if (p >= r->end || *p < '0' || *p > '9')
        return fail(r, "invalid value");
    if (*p == '0')
        p++;
    else
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    if (p < r->end && *p == '.') {
        p++;
        if (p >= r->end || *p < '0' || *p > '9')
            return fail(r, "invalid number");
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < r->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < r->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= r->end || *p < '0' || *p > '9')
            return fail(r, "invalid number");
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    r->p = p;
    return 0;
}

/* Skips any value (ws already skipped). */
static int skip_value(struct rd *r, int depth)
{
    if (depth > A2B_BODY_MAX_DEPTH)
        return fail(r, "nested too deeply");
    if (r->p >= r->end)
        return fail(r, "unexpected end of the body");
    char c = *r->p;
    if (c == '"')
        return string(r, NULL, NULL);
    if (c == 't')
        return literal(r, "true");
    if (c == 'f')
        return literal(r, "false");
    if (c == 'n')
        return literal(r, "null");
    if (c != '{' && c != '[')
        return number(r);
    char close = c == '{' ? '}' : ']';
    r->p++;
    ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return 0;
    }
    for (;;) {
        if (c == '{') {
            if (string(r, NULL, NULL) < 0)
                return -1;
            ws(r);
            if (r->p >= r->end || *r->p != ':')
                return fail(r, "expected ':'");
            r->p++;
            ws(r);
        }
        if (skip_value(r, depth + 1) < 0)
            return -1;
        ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            ws(r);
            continue;
        }
        if (r->p < r->end && *r->p == close) {
            r->p++;
            return 0;
        }
        return fail(r, "expected ',' or the end of a container");
    }
}

/* The field a key names, or -1. The key is compared unescaped. */
static int field_index(struct rd *r, const struct a2b_field *fields, size_t nfields)
{
    const char *start = r->p + 1;
    if (string(r, NULL, NULL) < 0)
        return -2;
    size_t n = (size_t)(r->p - 1 - start);
    for (size_t i = 0; i < nfields; i++)
        if (strlen(fields[i].name) == n && memcmp(fields[i].name, start, n) == 0)
            return (int)i;
    return -1; /* names with escapes never match ours, which have none */
}

int a2b_body_parse(const char *body, size_t len, char *store, size_t store_cap,
                   const struct a2b_field *fields, size_t nfields, const char **err)
{
    struct rd r = {body, body + len, NULL};
    for (size_t i = 0; i < nfields; i++)
        *fields[i].value = NULL;
    char *o = store, *store_end = store + store_cap;
    ws(&r);
    if (r.p >= r.end || *r.p != '{') {
        *err = "the body must be a JSON object";
        return -1;
    }
    r.p++;
    ws(&r);
    if (r.p < r.end && *r.p == '}') {
        r.p++;
    } else {
        for (;;) {
            if (r.p >= r.end || *r.p != '"') {
                fail(&r, "expected a field name");
                break;
            }
            int f = field_index(&r, fields, nfields);
            if (f == -2)
                break;
            ws(&r);
            if (r.p >= r.end || *r.p != ':') {
                fail(&r, "expected ':'");
                break;
            }
            r.p++;
            ws(&r);
            if (f >= 0 && r.p < r.end && *r.p == '"') {
                /* The escaped text is at least as long as the result. */
                if ((size_t)(store_end - o) < (size_t)(r.end - r.p)) {
                    fail(&r, "no room for the body's strings");
                    break;
                }
                char *start = o;
                if (string(&r, o, &o) < 0)
                    break;
                *fields[f].value = start;
            } else if (f >= 0 && r.p < r.end && *r.p == 'n') {
                if (literal(&r, "null") < 0)
                    break;
                *fields[f].value = NULL;
            } else if (f >= 0) {
                fail(&r, "a field must be a string or null");
                break;
            } else if (skip_value(&r, 1) < 0) {
                break;
            }
            ws(&r);
            if (r.p < r.end && *r.p == ',') {
                r.p++;
                ws(&r);
                continue;
            }
            if (r.p < r.end && *r.p == '}') {
                r.p++;
                break;
            }
            fail(&r, "expected ',' or '}'");
            break;
        }
    }
    if (!r.err) {
        ws(&r);
        if (r.p != r.end)
            fail(&r, "text after the JSON object");
    }
    if (r.err) {
        for (size_t i = 0; i < nfields; i++)
            *fields[i].value = NULL;
        *err = r.err;
        return -1;
    }
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
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
            if (i + 2 >= n)
                return -1;
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = (char)(hi << 4 | lo);
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
