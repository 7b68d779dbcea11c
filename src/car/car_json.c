/* car_json.c - the Car service's JSON document to the protobuf-c Message
 * and back. car_json.h says what is accepted and refused.
 *
 * Both directions walk the same field tables, so the document's shape is
 * written down once. The parser walks the document with the shared reader
 * (core/json_read.h), which checks the grammar; what is here is the
 * mapping: known fields, their types, repeats and absences.
 */
#include "car/car_json.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/json_read.h"
#include "core/utf8.h"

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

struct parser {
    struct jr r;
    char *buf; /* the caller's, for stored strings */
    size_t buf_len, buf_used;
    struct car_json_error *err;
};

static enum car_json_err fail(struct parser *ps, enum car_json_err code, size_t at,
                              const char *field)
{
    if (code == CAR_JSON_E_TRUNCATED)
        at = (size_t)(ps->r.end - ps->r.start); /* where the input ends, whatever was read */
    ps->err->code = code;
    ps->err->offset = at;
    ps->err->field = field;
    return code;
}

/* The reader's error as ours: every error found where the input ends is a
 * truncation, the escapes' are ours too, the rest is malformed JSON. */
static enum car_json_err reader_fail(struct parser *ps)
{
    enum car_json_err code = CAR_JSON_E_SYNTAX;

    if (jr_truncated(&ps->r))
        code = CAR_JSON_E_TRUNCATED;
    else if (ps->r.err == JR_E_UTF8)
        code = CAR_JSON_E_UTF8;
    else if (ps->r.err == JR_E_ESCAPE || ps->r.err == JR_E_HEX || ps->r.err == JR_E_SURROGATE)
        code = CAR_JSON_E_ESCAPE;
    else if (ps->r.err == JR_E_DEPTH)
        code = CAR_JSON_E_DEPTH;
    return fail(ps, code, ps->r.err_off, NULL);
}

static size_t offset(const struct parser *ps) { return (size_t)(ps->r.p - ps->r.start); }

static enum car_json_err parse_object(struct parser *ps, const struct object_desc *desc,
                                      void *base);

/* Reads the value of known field f into its member of base. */
static enum car_json_err parse_field(struct parser *ps, const struct field *f, void *base)
{
    struct jr *r = &ps->r;
    enum jr_type t = jr_peek(r);
    size_t at = offset(ps);
    uint64_t u;
    bool plain;

    /* Where one value kind is wanted, a byte that begins another is the
     * wrong type; any other byte is not JSON. */
    if (t == JR_NONE)
        return fail(ps, r->p == r->end ? CAR_JSON_E_TRUNCATED : CAR_JSON_E_SYNTAX, at, NULL);
    switch (f->kind) {
    case K_STR: {
        if (t != JR_STRING)
            return fail(ps, CAR_JSON_E_TYPE, at, f->path);
        size_t cap = ps->buf_len - ps->buf_used, n;
        char *dst = cap ? ps->buf + ps->buf_used : NULL;
        if (!jr_string(r, dst, cap, &n))
            return reader_fail(ps);
        if (r->nul)
            return fail(ps, CAR_JSON_E_NUL, at, f->path);
        if (n >= cap)
            return fail(ps, CAR_JSON_E_NOSPACE, at, f->path);
        dst[n] = '\0';
        ps->buf_used += n + 1;
        memcpy((char *)base + f->off, &dst, sizeof dst);
        return CAR_JSON_OK;
    }
    case K_U32:
        if (t != JR_NUMBER)
            return fail(ps, CAR_JSON_E_TYPE, at, f->path);
        if (!jr_number(r, &u, &plain))
            return reader_fail(ps);
        /* Only whitespace or a delimiter may follow, so that "1.2.3" or
         * "01" is malformed JSON rather than a number out of range. */
        if (r->p < r->end && !memchr(" \t\n\r,]}", *r->p, 7))
            return fail(ps, CAR_JSON_E_SYNTAX, offset(ps), NULL);
        if (!plain || u > UINT32_MAX)
            return fail(ps, CAR_JSON_E_RANGE, at, f->path);
        uint32_t u32 = (uint32_t)u;
        memcpy((char *)base + f->off, &u32, sizeof u32);
        return CAR_JSON_OK;
    case K_OBJ:
        if (t != JR_OBJECT)
            return fail(ps, CAR_JSON_E_TYPE, at, f->path);
        return parse_object(ps, f->sub, ptr_at(base, f->off));
    }
    return fail(ps, CAR_JSON_E_SYNTAX, at, f->path); /* not reached: every kind returns above */
}

/* Reads the object at r.p, storing its known fields into base; unknown
 * ones are checked and skipped. */
static enum car_json_err parse_object(struct parser *ps, const struct object_desc *desc,
                                      void *base)
{
    struct jr *r = &ps->r;
    enum car_json_err rc;
    uint32_t seen = 0;
    int more;

    if (!jr_enter(r))
        return reader_fail(ps);
    while ((more = jr_next(r)) > 0) {
        const struct field *f = NULL;
        size_t key_at = offset(ps), klen;
        char key[KEY_MAX];
        if (!jr_key(r, key, sizeof key, &klen))
            return reader_fail(ps);
        for (size_t i = 0; i < desc->n && klen <= sizeof key; i++) {
            if (strlen(desc->fields[i].name) == klen &&
                memcmp(desc->fields[i].name, key, klen) == 0) {
                if (seen & 1u << i)
                    return fail(ps, CAR_JSON_E_DUPLICATE, key_at, desc->fields[i].path);
                seen |= 1u << i;
                f = &desc->fields[i];
            }
        }
        if (!jr_colon(r))
            return reader_fail(ps);
        if (f)
            rc = parse_field(ps, f, base);
        else
            rc = jr_skip(r) ? CAR_JSON_OK : reader_fail(ps);
        if (rc != CAR_JSON_OK)
            return rc;
    }
    if (more < 0)
        return reader_fail(ps);
    for (size_t i = 0; i < desc->n; i++) {
        if (!(seen & 1u << i)) /* reported at the closing brace */
            return fail(ps, CAR_JSON_E_MISSING, offset(ps) - 1, desc->fields[i].path);
    }
    return CAR_JSON_OK;
}

enum car_json_err car_json_parse(const char *in, size_t len, struct car_record *rec, char *buf,
                                 size_t buf_len, struct car_json_error *err)
{
    struct car_json_error ignored;
    struct parser ps = {.buf = buf, .buf_len = buf_len, .err = err ? err : &ignored};
    enum car_json_err rc;

    jr_init(&ps.r, in, len, CAR_JSON_MAX_DEPTH);
    *ps.err = (struct car_json_error){CAR_JSON_OK, 0, NULL};
    rec->msg = (Message)COM__STEVENPG__RVG__MESSAGE__INIT;
    rec->car = (Car)COM__STEVENPG__RVG__MESSAGE__CAR__INIT;
    rec->driver = (Driver)COM__STEVENPG__RVG__MESSAGE__DRIVER__INIT;
    rec->msg.car = &rec->car;
    rec->msg.driver = &rec->driver;

    enum jr_type t = jr_peek(&ps.r);
    if (t == JR_NONE)
        return fail(&ps, ps.r.p == ps.r.end ? CAR_JSON_E_TRUNCATED : CAR_JSON_E_SYNTAX,
                    offset(&ps), NULL);
    if (t != JR_OBJECT)
        return fail(&ps, CAR_JSON_E_TYPE, offset(&ps), NULL);
    if ((rc = parse_object(&ps, &message_desc, &rec->msg)) != CAR_JSON_OK)
        return rc;
    if (!jr_end(&ps.r))
        return reader_fail(&ps);
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
        } else if (*p < 0x80) { /* a run of bytes that stand for themselves */
            const unsigned char *run = p;
            while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
                p++;
            emit(w, (const char *)run, (size_t)(p - run));
        } else {
            int k = utf8_seq_len(p, 4);
            if (k <= 0)
                return CAR_JSON_E_UTF8;
            emit(w, (const char *)p, (size_t)k);
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
