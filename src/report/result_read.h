/* result_read.h - the small reading layer over core/json_read.h that the
 * readers of results files share (compare.c, merge.c, the histogram in
 * hist.c): one message for the first error, saying at which byte, and
 * helpers for the shapes results files have (an object of known numeric
 * and string fields, the rest skipped, so that a newer writer's extra
 * fields never break an older reader).
 */
#ifndef SHOOTOUT_RESULT_READ_H
#define SHOOTOUT_RESULT_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/json_read.h"

/* Longest member name the readers look for, plus one. */
#define RR_KEY_CAP 32

struct rr {
    struct jr r;
    char *err; /* the first error: "byte 123: ..." */
    size_t errlen;
    bool failed;
};

/* Reads text[0..len) (max_depth as jr_init), refusing \u0000. */
void rr_init(struct rr *ps, const char *text, size_t len, unsigned max_depth, char *err,
             size_t errlen);

/* Records fmt (with "%zu" for the byte offset of r.p first, then "%s"
 * for what) as the error unless one is already there. Returns false. */
bool rr_fail(struct rr *ps, const char *fmt, const char *what);
/* Records the JSON reader's own error. Returns false. */
bool rr_reader_failed(struct rr *ps);

/* The next member of the open object: 1 with its name in key (empty when
 * longer than any name this reads) and r.p at its value, 0 at the end, -1
 * on error. */
int rr_next_key(struct rr *ps, char key[RR_KEY_CAP]);
/* A string into dst[0..cap), cut to fit and NUL-terminated. */
bool rr_string(struct rr *ps, char *dst, size_t cap, const char *what);
/* A number, or null (NaN: the writer's non-finite figures, and figures a
 * row does not have). */
bool rr_number(struct rr *ps, double *out, const char *what);
/* A whole number written as digits alone, at most max. */
bool rr_uint(struct rr *ps, uint64_t *out, uint64_t max, const char *what);
/* Skips the value at r.p. */
bool rr_skip(struct rr *ps);

/* Opens the object (or array, for rr_array) at r.p; what names it in the
 * message when it is something else. */
bool rr_object(struct rr *ps, const char *what);
bool rr_array(struct rr *ps, const char *what);

/* Reads the file at path whole and hands its text to parse (dst, text,
 * len, err, errlen: 0 or -1 with a message); the message then names the
 * file. */
int rr_load(const char *path, int (*parse)(void *dst, const char *text, size_t len, char *err,
                                           size_t errlen),
            void *dst, char *err, size_t errlen);

/* A field of an object that rr_fields stores: a number or a string. */
struct rr_field {
    const char *key;
    double *num;
    char *str;
    size_t cap;
};

#define RR_NUM(key, p) {key, p, NULL, 0}
#define RR_STR(key, buf) {key, NULL, buf, sizeof buf}

/* Reads the object (or null) at r.p, storing the fields of fs[0..n) it
 * has and skipping the rest. what names it in messages. */
bool rr_fields(struct rr *ps, const char *what, const struct rr_field *fs, unsigned n);

#endif
