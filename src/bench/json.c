/* json.c - streaming JSON writer with indentation. */
#include "bench/json.h"

#include <math.h>
#include <stdlib.h>

void json_init(struct json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->after_key = false;
    j->has_items[0] = false;
}

static void json_indent(struct json *j)
{
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
        fputc(',', j->f);
    j->has_items[j->depth] = true;
    json_indent(j);
}

static void json_open(struct json *j, char c)
{
    json_item(j);
    fputc(c, j->f);
    j->depth++;
    j->has_items[j->depth] = false;
}

static void json_close(struct json *j, char c)
{
    bool had = j->has_items[j->depth];
    j->depth--;
    if (had)
        json_indent(j);
    fputc(c, j->f);
    if (j->depth == 0)
        fputc('\n', j->f);
}

void json_object_begin(struct json *j) { json_open(j, '{'); }
void json_object_end(struct json *j) { json_close(j, '}'); }
void json_array_begin(struct json *j) { json_open(j, '['); }
void json_array_end(struct json *j) { json_close(j, ']'); }

static void json_escaped(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void json_key(struct json *j, const char *key)
{
    json_item(j);
    json_escaped(j->f, key);
    fputs(": ", j->f);
    j->after_key = true;
}

void json_string(struct json *j, const char *s)
{
    json_item(j);
    json_escaped(j->f, s);
}

void json_number(struct json *j, double v)
{
    json_item(j);
    if (!isfinite(v)) {
        fputs("null", j->f);
        return;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, j->f);
}

void json_null(struct json *j)
{
    json_item(j);
    fputs("null", j->f);
}
