/* textfile.c - whole-file reads and a line iterator for hand-edited files. */
#include "core/textfile.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "core/mem.h"

int textfile_read(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > TEXTFILE_MAX) {
        snprintf(err, errlen, "%s: not a regular file of at most %u bytes", path, TEXTFILE_MAX);
        close(fd);
        return -1;
    }
    /* The size may change under us; read until EOF within the limit. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = mem_alloc(cap + 1);
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
            mem_free(buf);
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            if (cap > TEXTFILE_MAX) {
                snprintf(err, errlen, "%s: larger than %u bytes", path, TEXTFILE_MAX);
                mem_free(buf);
                close(fd);
                return -1;
            }
            cap *= 2;
            buf = mem_realloc(buf, cap + 1);
        }
    }
    close(fd);
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

bool textfile_next_line(const char *buf, size_t len, size_t *pos, struct textfile_line *line)
{
    if (*pos >= len)
        return false;
    const char *start = buf + *pos;
    const char *nl = memchr(start, '\n', len - *pos);
    size_t n = nl ? (size_t)(nl - start) : len - *pos;
    *pos += n + (nl != NULL);
    if (n > 0 && start[n - 1] == '\r')
        n--;
    line->ptr = start;
    line->len = n;
    line->lineno++;
    return true;
}

struct textfile_line textfile_trim(struct textfile_line line)
{
    while (line.len > 0 && (line.ptr[0] == ' ' || line.ptr[0] == '\t')) {
        line.ptr++;
        line.len--;
    }
    while (line.len > 0 && (line.ptr[line.len - 1] == ' ' || line.ptr[line.len - 1] == '\t'))
        line.len--;
    return line;
}

int textfile_error(char *err, size_t errlen, const char *name, unsigned lineno, const char *fmt,
                   ...)
{
    int n = snprintf(err, errlen, "%s:%u: ", name, lineno);
    if (n >= 0 && (size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int textfile_parse(const char *name, const char *buf, size_t len, textfile_line_fn fn, void *arg,
                   char *err, size_t errlen)
{
    char *text = NULL;
    if (!buf) {
        if (textfile_read(name, &text, &len, err, errlen) < 0)
            return -1;
        buf = text;
    }
    size_t pos = 0;
    struct textfile_line line = {.lineno = 0};
    int rc = 0;
    while (rc == 0 && textfile_next_line(buf, len, &pos, &line))
        rc = memchr(line.ptr, '\0', line.len)
                 ? textfile_error(err, errlen, name, line.lineno, "NUL byte in line")
                 : fn(arg, name, line, err, errlen);
    if (text) {
        OPENSSL_cleanse(text, len);
        mem_free(text);
    }
    return rc;
}
