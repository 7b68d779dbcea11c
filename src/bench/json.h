/* json.h - a small streaming JSON writer for result files: it places the
 * commas, indents two spaces per level, escapes strings, and writes numbers
 * with 15 significant digits when that reads back as the same double, else
 * 17 (so 0.1 stays "0.1"); non-finite numbers, which JSON cannot hold,
 * become null.
 *
 * The caller nests begin/end calls correctly and writes a key before every
 * value inside an object; the writer does not check either.
 */
#ifndef SHOOTOUT_JSON_H
#define SHOOTOUT_JSON_H

#include <stdbool.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
    FILE *f;           /* not owned */
    unsigned depth;
    bool after_key;    /* the next value follows "key": on the same line */
    bool has_items[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f);
void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
void json_number(struct json *j, double v);
void json_null(struct json *j);

#endif
