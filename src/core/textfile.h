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

#endif
