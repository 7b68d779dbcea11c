/* json.c - streaming JSON writer, indented to a FILE or compact to memory. */
#include "core/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

void json_init(struct json *j, FILE *f)
{
    j->f = f;
    j->buf = NULL;
    j->depth = 0;
    j->after_key = false;
    j->flat = 0;
    j->has_items[0] = false;
}

void json_init_buf(struct json *j, struct json_buf *b)
{
    json_init(j, NULL);
    j->buf = b;
}

void json_buf_free(struct json_buf *b)
{
    mem_free(b->data);
    *b = (struct json_buf){0};
}

static void json_write(struct json *j, const char *s, size_t n)
{
    if (j->f) {
        fwrite(s, 1, n, j->f);
        return;
    }
    struct json_buf *b = j->buf;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = mem_realloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void json_puts(struct json *j, const char *s) { json_write(j, s, strlen(s)); }
static void json_putc(struct json *j, char c) { json_write(j, &c, 1); }

static void json_indent(struct json *j)
{
    if (!j->f || j->flat)
        return;
    fputc('\n', j->f);
    for (unsigned i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

/* Separates a new value (or key) from the previous item of its container. */
static void json_item(struct json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth == 0)
        return;
    if (j->has_items[j->depth])
        json_putc(j, ',');
    j->has_items[j->depth] = true;
    json_indent(j);
}

static void json_open(struct json *j, char c)
{
    json_item(j);
    json_putc(j, c);
    j->depth++;
    j->has_items[j->depth] = false;
}

static void json_close(struct json *j, char c)
{
    bool had = j->has_items[j->depth];
    j->depth--;
    if (had)
        json_indent(j);
    json_putc(j, c);
    if (j->depth == 0 && j->f)
        fputc('\n', j->f);
}

void json_flat(struct json *j, bool on)
{
    if (on)
        j->flat++;
    else if (j->flat)
        j->flat--;
}

void json_object_begin(struct json *j) { json_open(j, '{'); }
void json_object_end(struct json *j) { json_close(j, '}'); }
void json_array_begin(struct json *j) { json_open(j, '['); }
void json_array_end(struct json *j) { json_close(j, ']'); }

/* Copies runs of plain bytes in one write; only quotes, backslashes and
 * control characters need escapes (UTF-8 passes through as it is). */
static void json_escaped(struct json *j, const char *s)
{
    json_putc(j, '"');
    const char *run = s;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p >= 0x20 && *p != '"' && *p != '\\')
            continue;
        json_write(j, run, (size_t)((const char *)p - run));
        run = (const char *)p + 1;
        switch (*p) {
        case '"':
            json_puts(j, "\\\"");
            break;
        case '\\':
            json_puts(j, "\\\\");
            break;
        case '\n':
            json_puts(j, "\\n");
            break;
        case '\t':
            json_puts(j, "\\t");
            break;
        default: {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            json_puts(j, esc);
        }
        }
    }
    json_puts(j, run);
    json_putc(j, '"');
}

void json_key(struct json *j, const char *key)
{
    json_item(j);
    json_escaped(j, key);
    json_puts(j, j->f ? ": " : ":");
    j->after_key = true;
}

void json_string(struct json *j, const char *s)
{
    json_item(j);
    json_escaped(j, s);
}

void json_number(struct json *j, double v)
{
    json_item(j);
    if (!isfinite(v)) {
        json_puts(j, "null");
        return;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    json_puts(j, buf);
}

void json_int(struct json *j, int64_t v)
{
    json_item(j);
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    json_puts(j, buf);
}

void json_fixed(struct json *j, int64_t scaled, unsigned decimals)
{
    json_item(j);
    uint64_t unit = 1;
    for (unsigned i = 0; i < decimals; i++)
        unit *= 10;
    /* Magnitude in unsigned arithmetic, so INT64_MIN has one too. */
    uint64_t mag = scaled < 0 ? 0 - (uint64_t)scaled : (uint64_t)scaled;
    char buf[48];
    if (decimals == 0)
        snprintf(buf, sizeof buf, "%s%" PRIu64, scaled < 0 ? "-" : "", mag);
    else
        snprintf(buf, sizeof buf, "%s%" PRIu64 ".%0*" PRIu64, scaled < 0 ? "-" : "", mag / unit,
                 (int)decimals, mag % unit);
    json_puts(j, buf);
}

void json_null(struct json *j)
{
    json_item(j);
    json_puts(j, "null");
}

void json_bool(struct json *j, bool v)
{
    json_item(j);
    json_puts(j, v ? "true" : "false");
}

void json_kv(struct json *j, const char *key, double v)
{
    json_key(j, key);
    json_number(j, v);
}

void json_kstr(struct json *j, const char *key, const char *s)
{
    json_key(j, key);
    json_string(j, s);
}
