/* car_json.c - the Car service's JSON document to the protobuf-c Message
 * and back. car_json.h says what is accepted and refused.
 *
 * Both directions walk the same field tables, so the document's shape is
 * written down once. The parser is a recursive descent over one buffer;
 * the recursion is bounded by CAR_JSON_MAX_DEPTH.
 */
#include "car/car_json.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef Com__Stevenpg__Rvg__Message Message;
typedef Com__Stevenpg__Rvg__Message__Car Car;
typedef Com__Stevenpg__Rvg__Message__Driver Driver;

enum kind { K_STR, K_U32, K_OBJ };

struct object_desc;

struct field {
    const char *name;
    const char *path; /* reported in errors */
    enum kind kind;
    size_t off;                    /* of the member in its protobuf-c struct */
    const struct object_desc *sub; /* K_OBJ: the nested object */
};

struct object_desc {
    const struct field *fields;
    size_t n; /* at most 32: fields seen are kept in a bit mask */
};

static const struct field car_fields[] = {
    {"make", "car.make", K_STR, offsetof(Car, make), NULL},
    {"model", "car.model", K_STR, offsetof(Car, model), NULL},
    {"trim", "car.trim", K_STR, offsetof(Car, trim), NULL},
    {"color", "car.color", K_STR, offsetof(Car, color), NULL},
    {"year", "car.year", K_U32, offsetof(Car, year), NULL},
    {"mileage", "car.mileage", K_U32, offsetof(Car, mileage), NULL},
};
static const struct object_desc car_desc = {car_fields, sizeof car_fields / sizeof car_fields[0]};

static const struct field driver_fields[] = {
    {"firstname", "driver.firstname", K_STR, offsetof(Driver, firstname), NULL},
    {"lastname", "driver.lastname", K_STR, offsetof(Driver, lastname), NULL},
    {"driverId", "driver.driverId", K_STR, offsetof(Driver, driverid), NULL},
};
static const struct object_desc driver_desc = {driver_fields,
                                               sizeof driver_fields / sizeof driver_fields[0]};

static const struct field message_fields[] = {
    {"car", "car", K_OBJ, offsetof(Message, car), &car_desc},
    {"driver", "driver", K_OBJ, offsetof(Message, driver), &driver_desc},
};
static const struct object_desc message_desc = {message_fields,
                                                sizeof message_fields / sizeof message_fields[0]};

/* Longest key worth decoding: any longer one names no field. */
#define KEY_MAX 16

/* Members are reached by offset and copied with memcpy, since the tables
 * cannot name their types. Pointer members (char *, Car *, Driver *) go
 * through void *: every object pointer has the same representation on the
 * platforms we build for. */
static void *ptr_at(const void *base, size_t off)
{
    void *p;
    memcpy(&p, (const char *)base + off, sizeof p);
    return p;
}

static uint32_t u32_at(const void *base, size_t off)
{
    uint32_t v;
    memcpy(&v, (const char *)base + off, sizeof v);
    return v;
}

const char *car_json_strerror(enum car_json_err code)
{
    static const char *const msg[] = {
        [CAR_JSON_OK] = "ok",
        [CAR_JSON_E_TRUNCATED] = "unexpected end of input",
        [CAR_JSON_E_SYNTAX] = "malformed JSON",
        [CAR_JSON_E_DEPTH] = "nested too deeply",
        [CAR_JSON_E_ESCAPE] = "invalid escape sequence",
        [CAR_JSON_E_UTF8] = "invalid UTF-8",
        [CAR_JSON_E_NUL] = "string contains U+0000",
        [CAR_JSON_E_TYPE] = "wrong type",
        [CAR_JSON_E_RANGE] = "not an integer in 0..4294967295",
        [CAR_JSON_E_MISSING] = "missing field",
        [CAR_JSON_E_DUPLICATE] = "duplicate field",
        [CAR_JSON_E_NOSPACE] = "buffer too small",
    };
    if ((unsigned)code < sizeof msg / sizeof msg[0])
        return msg[code];
    return "unknown error";
}

/* Appends src[0..k) to dst[0..cap) at *n if it fits, and counts it either
 * way. Once something did not fit, *n > cap and nothing later fits, so dst
 * never holds a gap. dst may be NULL when cap is 0. */
static void append(char *dst, size_t cap, size_t *n, const void *src, size_t k)
{
    if (k <= cap && *n <= cap - k)
        memcpy(dst + *n, src, k);
    *n += k;
}

/* Length of the UTF-8 sequence starting p[0..avail) (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 with *code set. The
 * code is CAR_JSON_E_TRUNCATED when the bytes there are a valid beginning
 * that avail cuts short. Stops at the first bad byte, so a NUL-terminated
 * string may be checked with avail 4. */
static size_t utf8_len(const unsigned char *p, size_t avail, enum car_json_err *code)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    size_t n;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong below U+0800 */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates U+D800..U+DFFF */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong below U+10000 */
        else if (c == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else {
        *code = CAR_JSON_E_UTF8;
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (i >= avail) {
            *code = CAR_JSON_E_TRUNCATED;
            return 0;
        }
        if (p[i] < lo || p[i] > hi) {
            *code = CAR_JSON_E_UTF8;
            return 0;
        }
        lo = 0x80;
        hi = 0xbf;
    }
    return n;
}

static size_t utf8_encode(uint32_t cp, unsigned char out[4])
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

struct parser {
    const unsigned char *p, *start, *end;
    char *buf; /* the caller's, for stored strings */
    size_t buf_len, buf_used;
    struct car_json_error *err;
};

static enum car_json_err fail(struct parser *ps, enum car_json_err code, const unsigned char *at,
                              const char *field)
{
    if (code == CAR_JSON_E_TRUNCATED)
        at = ps->end; /* found where the input ends, whatever was being read */
    ps->err->code = code;
    ps->err->offset = (size_t)(at - ps->start);
    ps->err->field = field;
    return code;
}

static bool at_end(const struct parser *ps) { return ps->p == ps->end; }

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static void skip_ws(struct parser *ps)
{
    while (!at_end(ps) && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int hex_value(unsigned char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads the four hex digits of a \u escape whose backslash is at esc. */
static enum car_json_err read_hex4(struct parser *ps, const unsigned char *esc, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        if (at_end(ps))
            return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
        int d = hex_value(*ps->p);
        if (d < 0)
            return fail(ps, CAR_JSON_E_ESCAPE, esc, NULL);
        *v = *v << 4 | (uint32_t)d;
        ps->p++;
    }
    return CAR_JSON_OK;
}

/* Reads the escape at ps->p (its backslash); out gets the *k bytes of UTF-8
 * it stands for. A high surrogate must be followed by an escaped low one. */
static enum car_json_err parse_escape(struct parser *ps, unsigned char out[4], size_t *k)
{
    static const char simple[][2] = {{'"', '"'},  {'\\', '\\'}, {'/', '/'},  {'b', '\b'},
                                     {'f', '\f'}, {'n', '\n'},  {'r', '\r'}, {'t', '\t'}};
    const unsigned char *esc = ps->p++;
    uint32_t cp, low;
    enum car_json_err rc;

    if (at_end(ps))
        return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
    unsigned char c = *ps->p++;
    if (c != 'u') {
        for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
            if (c == (unsigned char)simple[i][0]) {
                out[0] = (unsigned char)simple[i][1];
                *k = 1;
                return CAR_JSON_OK;
            }
        }
        return fail(ps, CAR_JSON_E_ESCAPE, esc, NULL);
    }
    if ((rc = read_hex4(ps, esc, &cp)) != CAR_JSON_OK)
        return rc;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return fail(ps, CAR_JSON_E_ESCAPE, esc, NULL);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        for (const char *want = "\\u"; *want; want++) {
            if (at_end(ps))
                return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
            if (*ps->p++ != (unsigned char)*want)
                return fail(ps, CAR_JSON_E_ESCAPE, esc, NULL);
        }
        if ((rc = read_hex4(ps, esc, &low)) != CAR_JSON_OK)
            return rc;
        if (low < 0xdc00 || low > 0xdfff)
            return fail(ps, CAR_JSON_E_ESCAPE, esc, NULL);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    *k = utf8_encode(cp, out);
    return CAR_JSON_OK;
}

/* Reads the string at ps->p (its opening quote), checking all of it, and
 * decodes its text into dst[0..cap) as far as it fits. *len gets the full
 * decoded length, so *len > cap means dst holds only a prefix; dst may be
 * NULL with cap 0 to check only. *nul is set if the text has U+0000. */
static enum car_json_err parse_string(struct parser *ps, char *dst, size_t cap, size_t *len,
                                      bool *nul)
{
    enum car_json_err rc;
    unsigned char utf8[4];
    size_t n = 0, k;

    *nul = false;
    ps->p++;
    for (;;) {
        if (at_end(ps))
            return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
        unsigned char c = *ps->p;
        if (c == '"') {
            ps->p++;
            *len = n;
            return CAR_JSON_OK;
        }
        if (c < 0x20)
            return fail(ps, CAR_JSON_E_SYNTAX, ps->p, NULL);
        if (c == '\\') {
            if ((rc = parse_escape(ps, utf8, &k)) != CAR_JSON_OK)
                return rc;
            if (utf8[0] == 0)
                *nul = true;
            append(dst, cap, &n, utf8, k);
        } else {
            if ((k = utf8_len(ps->p, (size_t)(ps->end - ps->p), &rc)) == 0)
                return fail(ps, rc, ps->p, NULL);
            append(dst, cap, &n, ps->p, k);
            ps->p += k;
        }
    }
}

/* Reads the number at ps->p (RFC 8259 grammar). *is_u32 tells whether it
 * is written as a plain integer in 0..UINT32_MAX, and *u32 is then its
 * value. */
static enum car_json_err parse_number(struct parser *ps, uint32_t *u32, bool *is_u32)
{
    bool plain = true;
    uint64_t v = 0;

    if (*ps->p == '-') {
        plain = false;
        ps->p++;
    }
    if (at_end(ps))
        return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
    if (*ps->p == '0') {
        ps->p++;
    } else if (is_digit(*ps->p)) {
        for (; !at_end(ps) && is_digit(*ps->p); ps->p++) {
            if (v <= UINT32_MAX) /* stops before it could overflow */
                v = v * 10 + (uint64_t)(*ps->p - '0');
        }
    } else {
        return fail(ps, CAR_JSON_E_SYNTAX, ps->p, NULL);
    }
    /* The fraction and the exponent: a marker, then digits; an exponent's
     * digits may be signed. */
    for (const char *mark = ".eE"; *mark; mark++) {
        if (at_end(ps) || *ps->p != (unsigned char)*mark)
            continue;
        plain = false;
        ps->p++;
        if (*mark != '.' && !at_end(ps) && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (at_end(ps))
            return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
        if (!is_digit(*ps->p))
            return fail(ps, CAR_JSON_E_SYNTAX, ps->p, NULL);
        while (!at_end(ps) && is_digit(*ps->p))
            ps->p++;
        if (*mark == 'e')
            break; /* "1e5E5" must not read as one number */
    }
    /* Only whitespace or a delimiter may follow, so that "1.2.3" or "01"
     * is malformed JSON rather than a number out of range. */
    if (!at_end(ps) && !memchr(" \t\n\r,]}", *ps->p, 7))
        return fail(ps, CAR_JSON_E_SYNTAX, ps->p, NULL);
    *is_u32 = plain && v <= UINT32_MAX;
    *u32 = (uint32_t)v;
    return CAR_JSON_OK;
}

static enum car_json_err parse_literal(struct parser *ps)
{
    const char *lit = *ps->p == 't' ? "true" : *ps->p == 'f' ? "false" : "null";

    for (; *lit; lit++, ps->p++) {
        if (at_end(ps))
            return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
        if (*ps->p != (unsigned char)*lit)
            return fail(ps, CAR_JSON_E_SYNTAX, ps->p, NULL);
    }
    return CAR_JSON_OK;
}

static enum car_json_err parse_container(struct parser *ps, const struct object_desc *desc,
                                         void *base, int depth);

/* Whether c can begin a JSON value. Where one value kind is wanted, a byte
 * that begins another is the wrong type; any other byte is not JSON. */
static bool starts_value(unsigned char c) { return memchr("{[\"-0123456789tfn", c, 17) != NULL; }

/* Checks and skips any value, as unknown fields are skipped. */
static enum car_json_err skip_value(struct parser *ps, int depth)
{
    uint32_t u32;
    bool b;
    size_t n;

    if (at_end(ps))
        return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
    switch (*ps->p) {
    case '{':
    case '[':
        return parse_container(ps, NULL, NULL, depth + 1);
    case '"':
        return parse_string(ps, NULL, 0, &n, &b);
    case 't':
    case 'f':
    case 'n':
        return parse_literal(ps);
    default:
        if (*ps->p == '-' || is_digit(*ps->p))
            return parse_number(ps, &u32, &b);
        return fail(ps, CAR_JSON_E_SYNTAX, ps->p, NULL);
    }
}

/* Reads the value of known field f into its member of base. */
static enum car_json_err parse_field(struct parser *ps, const struct field *f, void *base,
                                     int depth)
{
    const unsigned char *at = ps->p;
    enum car_json_err rc;
    uint32_t u32;
    bool ok, nul;

    if (at_end(ps))
        return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
    if (!starts_value(*at))
        return fail(ps, CAR_JSON_E_SYNTAX, at, NULL);
    switch (f->kind) {
    case K_STR: {
        if (*at != '"')
            return fail(ps, CAR_JSON_E_TYPE, at, f->path);
        size_t cap = ps->buf_len - ps->buf_used, n;
        char *dst = cap ? ps->buf + ps->buf_used : NULL;
        if ((rc = parse_string(ps, dst, cap, &n, &nul)) != CAR_JSON_OK)
            return rc;
        if (nul)
            return fail(ps, CAR_JSON_E_NUL, at, f->path);
        if (n >= cap)
            return fail(ps, CAR_JSON_E_NOSPACE, at, f->path);
        dst[n] = '\0';
        ps->buf_used += n + 1;
        memcpy((char *)base + f->off, &dst, sizeof dst);
        return CAR_JSON_OK;
    }
    case K_U32:
        if (*at != '-' && !is_digit(*at))
            return fail(ps, CAR_JSON_E_TYPE, at, f->path);
        if ((rc = parse_number(ps, &u32, &ok)) != CAR_JSON_OK)
            return rc;
        if (!ok)
            return fail(ps, CAR_JSON_E_RANGE, at, f->path);
        memcpy((char *)base + f->off, &u32, sizeof u32);
        return CAR_JSON_OK;
    case K_OBJ:
        if (*at != '{')
            return fail(ps, CAR_JSON_E_TYPE, at, f->path);
        return parse_container(ps, f->sub, ptr_at(base, f->off), depth + 1);
    }
    return fail(ps, CAR_JSON_E_SYNTAX, at, f->path); /* not reached: every kind returns above */
}

/* Reads the object or array at ps->p, which is at nesting level depth.
 * With desc, it is an object whose known fields are stored into base; with
 * desc NULL, it is only checked. */
static enum car_json_err parse_container(struct parser *ps, const struct object_desc *desc,
                                         void *base, int depth)
{
    const unsigned char close = *ps->p == '{' ? '}' : ']';
    enum car_json_err rc;
    uint32_t seen = 0;

    if (depth > CAR_JSON_MAX_DEPTH)
        return fail(ps, CAR_JSON_E_DEPTH, ps->p, NULL);
    ps->p++;
    skip_ws(ps);
    bool more = at_end(ps) || *ps->p != close;
    while (more) {
        const struct field *f = NULL;
        if (close == '}') {
            const unsigned char *key_at = ps->p;
            char key[KEY_MAX];
            size_t klen;
            bool nul;
            if (at_end(ps))
                return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
            if (*ps->p != '"')
                return fail(ps, CAR_JSON_E_SYNTAX, ps->p, NULL);
            if ((rc = parse_string(ps, key, sizeof key, &klen, &nul)) != CAR_JSON_OK)
                return rc;
            for (size_t i = 0; desc && i < desc->n && klen <= sizeof key; i++) {
                if (strlen(desc->fields[i].name) == klen &&
                    memcmp(desc->fields[i].name, key, klen) == 0) {
                    if (seen & 1u << i)
                        return fail(ps, CAR_JSON_E_DUPLICATE, key_at, desc->fields[i].path);
                    seen |= 1u << i;
                    f = &desc->fields[i];
                }
            }
            skip_ws(ps);
            if (at_end(ps))
                return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
            if (*ps->p != ':')
                return fail(ps, CAR_JSON_E_SYNTAX, ps->p, NULL);
            ps->p++;
            skip_ws(ps);
        }
        rc = f ? parse_field(ps, f, base, depth) : skip_value(ps, depth);
        if (rc != CAR_JSON_OK)
            return rc;
        skip_ws(ps);
        if (at_end(ps))
            return fail(ps, CAR_JSON_E_TRUNCATED, ps->p, NULL);
        if (*ps->p != ',' && *ps->p != close)
            return fail(ps, CAR_JSON_E_SYNTAX, ps->p, NULL);
        more = *ps->p == ',';
        if (more) {
            ps->p++;
            skip_ws(ps);
        }
    }
    for (size_t i = 0; desc && i < desc->n; i++) {
        if (!(seen & 1u << i))
            return fail(ps, CAR_JSON_E_MISSING, ps->p, desc->fields[i].path);
    }
    ps->p++;
    return CAR_JSON_OK;
}

enum car_json_err car_json_parse(const char *in, size_t len, struct car_record *rec, char *buf,
                                 size_t buf_len, struct car_json_error *err)
{
    struct car_json_error ignored;
    struct parser ps = {
        .p = (const unsigned char *)in,
        .start = (const unsigned char *)in,
        .end = (const unsigned char *)in + len,
        .buf = buf,
        .buf_len = buf_len,
        .err = err ? err : &ignored,
    };
    enum car_json_err rc;

    *ps.err = (struct car_json_error){CAR_JSON_OK, 0, NULL};
    rec->msg = (Message)COM__STEVENPG__RVG__MESSAGE__INIT;
    rec->car = (Car)COM__STEVENPG__RVG__MESSAGE__CAR__INIT;
    rec->driver = (Driver)COM__STEVENPG__RVG__MESSAGE__DRIVER__INIT;
    rec->msg.car = &rec->car;
    rec->msg.driver = &rec->driver;

    skip_ws(&ps);
    if (at_end(&ps))
        return fail(&ps, CAR_JSON_E_TRUNCATED, ps.p, NULL);
    if (*ps.p != '{')
        return fail(&ps, starts_value(*ps.p) ? CAR_JSON_E_TYPE : CAR_JSON_E_SYNTAX, ps.p, NULL);
    if ((rc = parse_container(&ps, &message_desc, &rec->msg, 1)) != CAR_JSON_OK)
        return rc;
    skip_ws(&ps);
    if (!at_end(&ps))
        return fail(&ps, CAR_JSON_E_SYNTAX, ps.p, NULL);
    return CAR_JSON_OK;
}

struct writer {
    char *out;
    size_t cap, n;
};

static void emit(struct writer *w, const char *s, size_t k) { append(w->out, w->cap, &w->n, s, k); }

static void emit_str(struct writer *w, const char *s) { emit(w, s, strlen(s)); }

static enum car_json_err encode_string(struct writer *w, const char *s)
{
    static const char short_escape[] = {
        ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
    enum car_json_err rc;
    char esc[8];

    emit(w, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p++;
            emit(w, esc, 2);
        } else if (*p < 0x20) {
            if (*p < sizeof short_escape && short_escape[*p])
                emit(w, esc, (size_t)snprintf(esc, sizeof esc, "\\%c", short_escape[*p]));
            else
                emit(w, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", (unsigned)*p));
            p++;
        } else {
            size_t k = utf8_len(p, 4, &rc);
            if (k == 0)
                return CAR_JSON_E_UTF8;
            emit(w, (const char *)p, k);
            p += k;
        }
    }
    emit(w, "\"", 1);
    return CAR_JSON_OK;
}

static enum car_json_err encode_object(struct writer *w, const struct object_desc *desc,
                                       const void *base)
{
    enum car_json_err rc;
    char num[16];

    emit(w, "{", 1);
    for (size_t i = 0; i < desc->n; i++) {
        const struct field *f = &desc->fields[i];
        emit_str(w, i ? ",\"" : "\"");
        emit_str(w, f->name);
        emit(w, "\":", 2);
        switch (f->kind) {
        case K_STR: {
            const char *s = ptr_at(base, f->off);
            if (s == NULL)
                return CAR_JSON_E_MISSING;
            if ((rc = encode_string(w, s)) != CAR_JSON_OK)
                return rc;
            break;
        }
        case K_U32:
            emit(w, num, (size_t)snprintf(num, sizeof num, "%" PRIu32, u32_at(base, f->off)));
            break;
        case K_OBJ: {
            const void *sub = ptr_at(base, f->off);
            if (sub == NULL)
                return CAR_JSON_E_MISSING;
            if ((rc = encode_object(w, f->sub, sub)) != CAR_JSON_OK)
                return rc;
            break;
        }
        }
    }
    emit(w, "}", 1);
    return CAR_JSON_OK;
}

enum car_json_err car_json_encode(const Message *msg, char *out, size_t cap, size_t *out_len)
{
    struct writer w = {out, cap, 0};
    enum car_json_err rc = encode_object(&w, &message_desc, msg);

    *out_len = w.n;
    if (rc != CAR_JSON_OK)
        return rc;
    return w.n > cap ? CAR_JSON_E_NOSPACE : CAR_JSON_OK;
}

size_t car_json_error_body(const struct car_json_error *err, char *out, size_t cap)
{
    const char *f = err->field;
    int n =
        snprintf(out, cap, "{\"error\":\"%s\"%s%s%s,\"offset\":%zu}", car_json_strerror(err->code),
                 f ? ",\"field\":\"" : "", f ? f : "", f ? "\"" : "", err->offset);
    return n < 0 ? 0 : (size_t)n;
}
