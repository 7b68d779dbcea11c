/* opt.h - one option mechanism for every command: each command describes
 * its options once, in tables (name, short letter, kind of argument, the
 * field it sets or a setter, help text, the default shown), and the same
 * tables parse its argv with getopt_long's rules, write its --help, and,
 * where a server has a configuration file, set a keyword's field through
 * the same conversion and checks as its flag. Also the strict parsing of
 * values that every command shares, so that all of them accept and refuse
 * the same spellings.
 */
#ifndef SHOOTOUT_OPT_H
#define SHOOTOUT_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Parses a whole decimal number in [min, max] (no sign, no trailing text).
 * Returns 0 and sets *out, or -1 leaving *out alone. */
int opt_parse_uint(const char *arg, uint64_t min, uint64_t max, uint64_t *out);

/* A non-negative decimal number of s[0..len): digits with at most one '.',
 * no sign and no exponent, what a person types. */
bool opt_parse_decimal(const char *s, size_t len, double *out);

/* A duration of s[0..len) with its unit ("500ms", "10s", "2m", "1h") into
 * seconds. */
bool opt_parse_duration(const char *s, size_t len, double *out);

enum opt_kind {
    OPT_END,      /* ends a table */
    OPT_FLAG,     /* no argument: sets a bool (in a file: true or false) */
    OPT_BOOL,     /* true or false, into a bool */
    OPT_UINT,     /* a whole number in [min, max], stored times scale (if
                   * set) into an unsigned or int field of 1 to 8 bytes */
    OPT_DOUBLE,   /* a number in [dmin, dmax] (above dmin with dmin_open),
                   * into a double; wants says what in messages */
    OPT_DURATION, /* a duration with its unit, above 0 and up to dmax
                   * seconds, into a double of seconds */
    OPT_STRING,   /* the argument itself, into a const char * */
    OPT_ENUM,     /* one of choices (or its alias), its value stored as
                   * OPT_UINT stores */
    OPT_CALL,     /* set(), at every occurrence (so the option may repeat);
                   * without arg the option takes no argument */
};

struct opt_choice {
    const char *name, *alias; /* alias may be NULL */
    int value;
};

struct opt;

/* A setter: applies value (NULL for an option without argument) to the
 * command's base; name is the option as given ("--label", a file's
 * keyword) for messages. 0, or -1 with the whole message in err. */
typedef int (*opt_setter)(const struct opt *o, void *base, const char *name, const char *value,
                          char *err, size_t errlen);

struct opt {
    const char *name; /* long name without the dashes; NULL: only the letter */
    char letter;      /* short option, 0: none */
    enum opt_kind kind;
    const char *arg;  /* the argument's name in --help ("N", "FILE"), NULL: none */
    const char *help; /* what it does; a '\n' starts a line of its own */
    const char *def;  /* the default --help shows, NULL: none */
    size_t offset, size; /* the field it sets (OPT_FIELD), from the table's base */
    const char *keyword; /* its name in a configuration file, NULL: none */
    uint64_t min, max;   /* OPT_UINT */
    uint32_t scale;      /* OPT_UINT: stored value = value * scale (0: 1) */
    double dmin, dmax;   /* OPT_DOUBLE, OPT_DURATION (dmax) */
    bool dmin_open;      /* OPT_DOUBLE: above dmin, not from it */
    const char *wants;   /* OPT_DOUBLE: "a number above 0" */
    const struct opt_choice *choices; /* OPT_ENUM, ended by a NULL name */
    opt_setter set;      /* OPT_CALL */
    bool hidden;         /* parsed, but not shown in --help */
};

/* The field of a struct of type T an option sets. */
#define OPT_FIELD(T, f) .offset = offsetof(T, f), .size = sizeof(((T *)0)->f)

/* A table and where its struct lies in the command's (offsetof). */
struct opt_table {
    const struct opt *opts; /* NULL ends a list of tables */
    size_t base;
};

/* A command: its tables, in --help's order, and the text around them. */
struct opt_cmd {
    const char *head;          /* usage line(s) and what it does, up to "options:" */
    const struct opt_table *tables;
    const char *tail;          /* after the options (exit codes), or NULL */
    bool stop_at_argument;     /* options end at the first argument (getopt's '+') */
};

/* What was wrong with argv. */
struct opt_error {
    const struct opt *opt; /* NULL: getopt_long refused it and has said why */
    const char *value;     /* the refused argument */
    char msg[512];         /* "--runs wants a whole number from 1 to 1000, not 'x'" */
};

enum opt_result { OPT_OK, OPT_HELP, OPT_ERROR };

/* Parses argv's options (argv[0] the command's name, for getopt_long's
 * messages) into base, in order, stopping at the first bad one. OPT_OK
 * leaves optind at the first argument, as getopt_long does; OPT_HELP: -h
 * or --help came first, and the help is on stdout; OPT_ERROR: *e says
 * why. */
enum opt_result opt_parse(const struct opt_cmd *cmd, int argc, char **argv, void *base,
                          struct opt_error *e);

/* Calls fn(value, ctx) for each occurrence of option name in argv, in
 * order, saying nothing about anything else (the rest is opt_parse's);
 * stops at the first fn that returns nonzero and returns that. */
int opt_each(const struct opt_cmd *cmd, int argc, char **argv, const char *name,
             int (*fn)(const char *value, void *ctx), void *ctx);

/* Writes cmd's --help to f: head, the options with their help and
 * defaults, -h/--help, tail. */
void opt_help(FILE *f, const struct opt_cmd *cmd);

/* The option of opts whose long name or keyword is name, or NULL. */
const struct opt *opt_find(const struct opt *opts, const char *name);

/* Applies value to o's field in base as opt_parse does (value NULL: an
 * OPT_FLAG or argument-less OPT_CALL given on the command line). name is
 * what the messages call it. 0, or -1 with the message in err. */
int opt_set(const struct opt *o, void *base, const char *name, const char *value, char *err,
            size_t errlen);

/* Writes a setter's message into err; returns -1. */
int opt_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The field o sets in base. */
void *opt_field(const struct opt *o, void *base);

/* A stock setter for an OPT_CALL: the argument into a const char *
 * field, or NULL when it is "none". */
int opt_set_or_none(const struct opt *o, void *base, const char *name, const char *value,
                    char *err, size_t errlen);

#endif
