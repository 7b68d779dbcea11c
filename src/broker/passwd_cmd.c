/* passwd_cmd.c - `shootout passwd [-c] [-b] [-D] [-I n] FILE USER [PASSWORD]`.
 *
 * The file is edited, never rewritten from a parse: comments, blank lines
 * and other users' lines stay byte for byte, and only the named user's
 * line changes. A file the broker would refuse is refused here too, before
 * anything is written. The new file replaces the old by rename(2), so the
 * broker (or a reload) never reads half a file.
 */
#include "broker/passwd_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "broker/passwd.h"
#include "core/mem.h"
#include "core/opt.h"
#include "core/textfile.h"

#define EXIT_USAGE 2
/* An MQTT password is a two-byte-length binary field. */
#define PASSWORD_MAX 65535

static const char usage[] =
    "usage: shootout passwd [-c] [-I iterations] FILE USER\n"
    "       shootout passwd [-c] [-I iterations] -b FILE USER PASSWORD\n"
    "       shootout passwd -D FILE USER\n"
    "\n"
    "Adds a user to, or changes a user's password in, a Mosquitto-format\n"
    "password file (the broker's password_file). Passwords are stored as\n"
    "PBKDF2-HMAC-SHA512 ($7$), which Mosquitto 2.x also reads. Without -b the\n"
    "password is asked for twice on the terminal, or read as one line from\n"
    "standard input when that is not a terminal.\n"
    "\n";

static const char tail[] = "\nexit status: 0 done, 1 failure, 2 usage error\n";

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports a failure; returns exit status 1. */
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "shootout passwd: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* Reads one line (without its line ending) from f into buf[PASSWORD_MAX+2].
 * Returns its length, or -1 at end of input or if it is too long. */
static ssize_t read_line(FILE *f, char *buf)
{
    if (!fgets(buf, PASSWORD_MAX + 2, f))
        return -1;
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    else if (n == PASSWORD_MAX + 1)
        return -1;
    if (n > 0 && buf[n - 1] == '\r')
        buf[--n] = '\0';
    return (ssize_t)n;
}

/* Prompts on the terminal with echo off. Echo goes off (discarding
 * typeahead) before the prompt shows, so nothing typed after it is lost. */
static ssize_t prompt(const char *text, char *buf)
{
    struct termios old, quiet;
    bool restore = tcgetattr(STDIN_FILENO, &old) == 0;
    if (restore) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    fputs(text, stderr);
    fflush(stderr);
    ssize_t n = read_line(stdin, buf);
    if (restore)
        tcsetattr(STDIN_FILENO, TCSANOW, &old);
    fputc('\n', stderr);
    return n;
}

/* Gets the new password into buf; returns its length or -1 (reported). */
static ssize_t get_password(char *buf)
{
    if (!isatty(STDIN_FILENO)) {
        ssize_t n = read_line(stdin, buf);
        if (n < 0)
            fail("no password on standard input (or longer than 65535 bytes)");
        return n;
    }
    char *again = mem_alloc(PASSWORD_MAX + 2);
    ssize_t n = prompt("Password: ", buf);
    ssize_t m = n < 0 ? -1 : prompt("Reenter password: ", again);
    bool same = n >= 0 && m == n && memcmp(buf, again, (size_t)n) == 0;
    OPENSSL_cleanse(again, PASSWORD_MAX + 2);
    mem_free(again);
    if (n < 0 || !same) {
        fail(n < 0 ? "no password read" : "passwords do not match");
        return -1;
    }
    return n;
}

/* Writes text[0..len) to path through a temporary file in the same
 * directory and rename(2), mode 0600. */
static int write_atomically(const char *path, const char *text, size_t len)
{
    size_t plen = strlen(path);
    char *tmp = mem_alloc(plen + 16);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fail("cannot create a temporary file next to %s: %s", path, strerror(errno));
        mem_free(tmp);
        return -1;
    }
    bool ok = fchmod(fd, 0600) == 0;
    for (size_t off = 0; ok && off < len;) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    ok = ok && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        fail("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    mem_free(tmp);
    return ok ? 0 : -1;
}

/* The file's new text: old with user's line replaced by new_line (or
 * removed when new_line is NULL), or new_line appended if user had none.
 * Sets *found. */
static char *edit(const char *old, size_t old_len, const char *user, const char *new_line,
                  bool *found, size_t *out_len)
{
    size_t nlen = new_line ? strlen(new_line) : 0, ulen = strlen(user);
    char *out = mem_alloc(old_len + nlen + 2);
    size_t n = 0, pos = 0, start = 0;
    struct textfile_line line = {.lineno = 0};
    *found = false;
    while (textfile_next_line(old, old_len, &pos, &line)) {
        const char *u;
        size_t len;
        if (passwd_line_user(line.ptr, line.len, &u, &len) && len == ulen &&
            !memcmp(u, user, ulen)) {
            *found = true;
            if (new_line) {
                memcpy(out + n, new_line, nlen);
                n += nlen;
            }
        } else {
            memcpy(out + n, old + start, pos - start);
            n += pos - start;
        }
        start = pos;
    }
    if (!*found && new_line) {
        if (n > 0 && out[n - 1] != '\n')
            out[n++] = '\n';
        memcpy(out + n, new_line, nlen);
        n += nlen;
    }
    *out_len = n;
    return out;
}

static int update_file(const char *path, const char *user, const char *new_line, bool create)
{
    char err[512];
    char *old = NULL;
    size_t old_len = 0;
    if (!create) {
        struct passwd_table *t;
        if (textfile_read(path, &old, &old_len, err, sizeof err) < 0 ||
            passwd_parse(&t, path, old, old_len, err, sizeof err) < 0) {
            mem_free(old);
            fprintf(stderr, "shootout passwd: %s\n", err);
            return 1;
        }
        passwd_free(t);
    }
    bool found;
    size_t len;
    char *text = edit(old ? old : "", old_len, user, new_line, &found, &len);
    int rc = 0;
    if (!new_line && !found)
        rc = fail("user '%s' is not in %s", user, path);
    else if (write_atomically(path, text, len) < 0)
        rc = 1;
    mem_free(text);
    mem_free(old);
    return rc;
}

/* The file line "user:hash\n" for the password given (batch_pw) or asked
 * for; NULL after reporting why there is none. */
static char *make_line(const char *user, const char *batch_pw, unsigned iterations)
{
    char *pw = mem_alloc(PASSWORD_MAX + 2);
    ssize_t pwlen;
    if (!batch_pw)
        pwlen = get_password(pw);
    else if (strlen(batch_pw) > PASSWORD_MAX)
        pwlen = -1;
    else {
        pwlen = (ssize_t)strlen(batch_pw);
        memcpy(pw, batch_pw, (size_t)pwlen);
    }
    char hash[PASSWD_HASH_MAX + 1];
    char *line = NULL;
    if (batch_pw && pwlen < 0)
        fail("password longer than 65535 bytes");
    else if (pwlen == 0)
        fail("empty password refused");
    else if (pwlen > 0 && passwd_hash_new(hash, pw, (size_t)pwlen, iterations) < 0)
        fail("cannot hash the password (no random salt)");
    else if (pwlen > 0) {
        size_t n = strlen(user) + strlen(hash) + 3;
        line = mem_alloc(n);
        snprintf(line, n, "%s:%s\n", user, hash);
    }
    OPENSSL_cleanse(pw, PASSWORD_MAX + 2);
    mem_free(pw);
    return line;
}

/* What the options ask for. */
struct passwd_args {
    bool create, batch, delete, iter_set;
    uint64_t iterations;
};

static int set_iterations(const struct opt *o, void *base, const char *name, const char *value,
                          char *err, size_t errlen)
{
    struct passwd_args *a = base;
    a->iter_set = true;
    if (opt_parse_uint(value, 1, PASSWD_MAX_ITERATIONS, &a->iterations) < 0)
        return opt_fail(err, errlen, "%s wants a whole number from 1 to %u", name,
                        PASSWD_MAX_ITERATIONS);
    return 0;
}

static const struct opt options[] = {
    {NULL, 'c', OPT_FLAG, NULL, "create FILE, overwriting it if it exists", NULL,
     OPT_FIELD(struct passwd_args, create)},
    {NULL, 'b', OPT_FLAG, NULL,
     "take the password from the command line (it will show in the process list and shell "
     "history)", NULL, OPT_FIELD(struct passwd_args, batch)},
    {NULL, 'D', OPT_FLAG, NULL, "delete USER", NULL, OPT_FIELD(struct passwd_args, delete)},
    {NULL, 'I', OPT_CALL, "ITERATIONS",
     "PBKDF2 iterations; see docs/security.md for the cost to the broker of raising it", "1000",
     .set = set_iterations},
    {.kind = OPT_END},
};

static const struct opt_table tables[] = {{options, 0}, {NULL, 0}};

/* '+': options end at FILE, so a password may start with '-'. */
static const struct opt_cmd command = {
    .head = usage, .tables = tables, .tail = tail, .stop_at_argument = true};

int passwd_main(int argc, char **argv)
{
    struct passwd_args a = {.iterations = PASSWD_DEFAULT_ITERATIONS};
    struct opt_error e;
    switch (opt_parse(&command, argc, argv, &a, &e)) {
    case OPT_OK:
        break;
    case OPT_HELP:
        return 0;
    case OPT_ERROR:
        if (e.opt)
            fprintf(stderr, "shootout passwd: %s\n", e.msg);
        else
            opt_help(stderr, &command);
        return EXIT_USAGE;
    }
    int want = a.batch ? 3 : 2;
    if (argc - optind != want || (a.delete && (a.create || a.batch || a.iter_set))) {
        opt_help(stderr, &command);
        return EXIT_USAGE;
    }
    const char *path = argv[optind], *user = argv[optind + 1];
    if (!passwd_username_valid(user, strlen(user))) {
        fprintf(stderr, "shootout passwd: invalid username '%s' (no ':', control characters, "
                        "surrounding blanks or leading '#')\n", user);
        return EXIT_USAGE;
    }
    if (a.delete)
        return update_file(path, user, NULL, false);

    char *line = make_line(user, a.batch ? argv[optind + 2] : NULL, (unsigned)a.iterations);
    if (!line)
        return 1;
    int rc = update_file(path, user, line, a.create);
    mem_free(line);
    return rc;
}
