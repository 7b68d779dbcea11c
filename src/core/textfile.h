/* textfile.h - reading small configuration-like text files whole, and
 * walking them line by line with line numbers for error messages.
 *
 * Shared by the password and ACL file loaders so that both accept the same
 * line endings and report errors as "file:line: message".
 */
#ifndef SHOOTOUT_TEXTFILE_H
#define SHOOTOUT_TEXTFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Largest file textfile_read() accepts; these files are edited by hand. */
#define TEXTFILE_MAX (64u * 1024 * 1024)

/* Reads the whole of path into a new NUL-terminated buffer (*text, freed
 * with mem_free) of *len bytes. Returns 0, or -1 with a message in err. */
int textfile_read(const char *path, char **text, size_t *len, char *err, size_t errlen);

struct textfile_line {
    const char *ptr; /* into the buffer; not NUL-terminated */
    size_t len;      /* without the "\n" or "\r\n" that ends it */
    unsigned lineno; /* 1-based */
};

/* Iterates over buf[0..len): start with *pos = 0 and line->lineno = 0.
 * Returns false after the last line. A final line without "\n" counts. */
bool textfile_next_line(const char *buf, size_t len, size_t *pos, struct textfile_line *line);

/* line without leading and trailing spaces and tabs. */
struct textfile_line textfile_trim(struct textfile_line line);

/* Called for each line; returns 0, or -1 after writing an error to err. */
typedef int (*textfile_line_fn)(void *arg, const char *name, struct textfile_line line,
                                char *err, size_t errlen);

/* Runs fn over every line of buf[0..len), or of the file named name when
 * buf is NULL (its text is wiped before it is freed: it may hold
 * secrets). A line holding a NUL byte is an error. Returns 0, or -1 with
 * the first error in err. */
int textfile_parse(const char *name, const char *buf, size_t len, textfile_line_fn fn, void *arg,
                   char *err, size_t errlen);

/* Writes "name:lineno: " and the message to err; returns -1. */
int textfile_error(char *err, size_t errlen, const char *name, unsigned lineno, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));

#endif
