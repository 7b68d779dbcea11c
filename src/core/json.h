/* json.h - a small streaming JSON writer: it places the commas, escapes
 * strings, and writes numbers with 15 significant digits when that reads
 * back as the same double, else 17 (so 0.1 stays "0.1"); non-finite numbers,
 * which JSON cannot hold, become null.
 *
 * Two sinks: a FILE, written indented two spaces per level for people to
 * read (result files), or a growable memory buffer, written compact with no
 * whitespace at all (HTTP response bodies).
 *
 * The caller nests begin/end calls correctly and writes a key before every
 * value inside an object; the writer does not check either.
 */
#ifndef SHOOTOUT_JSON_H
#define SHOOTOUT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

/* Growable output for the compact writer. Zero it before first use; data is
 * allocated with mem_alloc, owned by the buffer until the caller takes it,
 * and NUL-terminated after every write (len excludes the NUL). */
struct json_buf {
    char *data;
    size_t len, cap;
};

struct json {
    FILE *f;              /* indented output, or NULL; not owned */
    struct json_buf *buf; /* compact output when f is NULL; not owned */
    unsigned depth;
    bool after_key;    /* the next value follows "key": on the same line */
    unsigned flat;     /* json_flat nesting: > 0 writes on one line */
    bool has_items[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f);
void json_init_buf(struct json *j, struct json_buf *b);
void json_buf_free(struct json_buf *b);

void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
void json_number(struct json *j, double v);
void json_int(struct json *j, int64_t v);
/* A decimal fixed-point number: scaled / 10^decimals written with exactly
 * that many decimals, so money in cents (4217, 2) reads 42.17 with no
 * rounding through a double. decimals <= 18. */
void json_fixed(struct json *j, int64_t scaled, unsigned decimals);
void json_null(struct json *j);
void json_bool(struct json *j, bool v);
/* Between json_flat(j, true) and json_flat(j, false) (they nest) the
 * indented writer writes what comes on one line, for long arrays of small
 * values (a histogram's buckets) that would otherwise take a line each. */
void json_flat(struct json *j, bool on);
/* A key and its value, the most common pair. */
void json_kv(struct json *j, const char *key, double v);
void json_kstr(struct json *j, const char *key, const char *s);

#endif
