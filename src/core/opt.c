/* opt.c - option tables: parsing argv with getopt_long, --help, and value
 * conversion (see opt.h). */
#include "core/opt.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

/* --help's lines: at most this wide, the help text from this column at
 * the most (a longer option gets a line of its own). */
#define OPT_HELP_WIDTH 79
#define OPT_HELP_MAX_COL 34
/* getopt_long's value for the k-th option of a command. */
#define OPT_VAL0 256

/* ---- values ---------------------------------------------------------------- */

int opt_parse_uint(const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
    /* strtoull would skip blanks and take a sign: only digits are a number. */
    if (!isdigit((unsigned char)arg[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

bool opt_parse_decimal(const char *s, size_t len, double *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return false;
    bool dot = false, digit = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.' && !dot)
            dot = true;
        else if (s[i] >= '0' && s[i] <= '9')
            digit = true;
        else
            return false;
    }
    if (!digit)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    *out = strtod(buf, NULL);
    return true;
}

bool opt_parse_duration(const char *s, size_t len, double *out)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        size_t ul = strlen(units[u].unit);
        double v;
        if (len > ul && !memcmp(s + len - ul, units[u].unit, ul) &&
            opt_parse_decimal(s, len - ul, &v)) {
            *out = v * units[u].scale;
            return true;
        }
    }
    return false;
}

/* ---- one option's value ------------------------------------------------------ */

int opt_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void *opt_field(const struct opt *o, void *base)
{
    return (char *)base + o->offset;
}

/* v into an unsigned (or int) field of size bytes. */
static void store_uint(void *field, size_t size, uint64_t v)
{
    uint8_t v8 = (uint8_t)v;
    uint16_t v16 = (uint16_t)v;
    uint32_t v32 = (uint32_t)v;
    switch (size) {
    case 1:
        memcpy(field, &v8, 1);
        break;
    case 2:
        memcpy(field, &v16, 2);
        break;
    case 4:
        memcpy(field, &v32, 4);
        break;
    default:
        memcpy(field, &v, sizeof v);
    }
}

static int set_bool(const struct opt *o, void *field, const char *name, const char *value,
                    char *err, size_t errlen)
{
    if (!strcmp(value, "true"))
        *(bool *)field = true;
    else if (!strcmp(value, "false"))
        *(bool *)field = false;
    else
        return opt_fail(err, errlen, "%s wants true or false, not '%s'", name, value);
    return 0;
}

static int set_double(const struct opt *o, void *field, const char *name, const char *value,
                      char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    bool above = o->dmin_open ? v > o->dmin : v >= o->dmin;
    if (errno || end == value || *end || !above || !(v <= o->dmax))
        return opt_fail(err, errlen, "%s wants %s, not '%s'", name, o->wants, value);
    *(double *)field = v;
    return 0;
}

static int set_enum(const struct opt *o, void *field, const char *name, const char *value,
                    char *err, size_t errlen)
{
    const struct opt_choice *c;
    for (c = o->choices; c->name; c++)
        if (!strcmp(value, c->name) || (c->alias && !strcmp(value, c->alias))) {
            store_uint(field, o->size, (uint64_t)(int64_t)c->value);
            return 0;
        }
    /* "--x wants a (or b), c or d, not 'v'" */
    char list[256] = "";
    size_t n = 0;
    for (c = o->choices; c->name && n < sizeof list; c++) {
        const char *sep = c == o->choices ? "" : c[1].name ? ", " : " or ";
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", sep, c->name);
        if (c->alias && n < sizeof list)
            n += (size_t)snprintf(list + n, sizeof list - n, " (or %s)", c->alias);
    }
    return opt_fail(err, errlen, "%s wants %s, not '%s'", name, list, value);
}

int opt_set(const struct opt *o, void *base, const char *name, const char *value, char *err,
            size_t errlen)
{
    void *field = opt_field(o, base);
    uint64_t v;
    double d;
    switch (o->kind) {
    case OPT_FLAG:
        if (!value) {
            *(bool *)field = true;
            return 0;
        }
        return set_bool(o, field, name, value, err, errlen);
    case OPT_BOOL:
        return set_bool(o, field, name, value, err, errlen);
    case OPT_UINT:
        if (opt_parse_uint(value, o->min, o->max, &v) < 0)
            return opt_fail(err, errlen, "%s wants a whole number from %llu to %llu, not '%s'",
                                 name, (unsigned long long)o->min, (unsigned long long)o->max,
                                 value);
        store_uint(field, o->size, v * (o->scale ? o->scale : 1));
        return 0;
    case OPT_DOUBLE:
        return set_double(o, field, name, value, err, errlen);
    case OPT_DURATION:
        if (!opt_parse_duration(value, strlen(value), &d) || !(d > 0) || d > o->dmax)
            return opt_fail(err, errlen,
                                 "%s wants a duration above 0 with its unit (500ms, 10s, 2m), "
                                 "not '%s'",
                                 name, value);
        *(double *)field = d;
        return 0;
    case OPT_STRING:
        *(const char **)field = value;
        return 0;
    case OPT_ENUM:
        return set_enum(o, field, name, value, err, errlen);
    case OPT_CALL:
        return o->set(o, base, name, value, err, errlen);
    case OPT_END:
        break;
    }
    return opt_fail(err, errlen, "%s cannot be set", name);
}

int opt_set_or_none(const struct opt *o, void *base, const char *name, const char *value,
                    char *err, size_t errlen)
{
    *(const char **)opt_field(o, base) = strcmp(value, "none") ? value : NULL;
    return 0;
}

const struct opt *opt_find(const struct opt *opts, const char *name)
{
    for (const struct opt *o = opts; o->kind != OPT_END; o++)
        if ((o->name && !strcmp(name, o->name)) || (o->keyword && !strcmp(name, o->keyword)))
            return o;
    return NULL;
}

/* ---- a command's argv ---------------------------------------------------------- */

/* A command's options in one list, each with its table's base. */
struct opt_flat {
    const struct opt *o;
    size_t base;
};

struct opt_getopt {
    struct opt_flat *all;
    size_t n;
    struct option *longopts;
    char *shortopts;
};

static bool takes_argument(const struct opt *o)
{
    return o->kind == OPT_CALL ? o->arg != NULL : o->kind != OPT_FLAG;
}

static void getopt_build(const struct opt_cmd *cmd, struct opt_getopt *g)
{
    g->n = 0;
    for (const struct opt_table *t = cmd->tables; t->opts; t++)
        for (const struct opt *o = t->opts; o->kind != OPT_END; o++)
            g->n++;
    g->all = mem_calloc(g->n + 1, sizeof *g->all);
    g->longopts = mem_calloc(g->n + 2, sizeof *g->longopts);
    g->shortopts = mem_alloc(2 * g->n + 4);
    size_t k = 0, nl = 0, ns = 0;
    if (cmd->stop_at_argument)
        g->shortopts[ns++] = '+';
    for (const struct opt_table *t = cmd->tables; t->opts; t++)
        for (const struct opt *o = t->opts; o->kind != OPT_END; o++, k++) {
            g->all[k] = (struct opt_flat){o, t->base};
            bool arg = takes_argument(o);
            if (o->name)
                g->longopts[nl++] = (struct option){o->name, arg ? required_argument : no_argument,
                                                    NULL, OPT_VAL0 + (int)k};
            if (o->letter) {
                g->shortopts[ns++] = o->letter;
                if (arg)
                    g->shortopts[ns++] = ':';
            }
        }
    g->longopts[nl++] = (struct option){"help", no_argument, NULL, 'h'};
    g->shortopts[ns++] = 'h';
    g->shortopts[ns] = '\0';
}

static void getopt_free(struct opt_getopt *g)
{
    mem_free(g->all);
    mem_free(g->longopts);
    mem_free(g->shortopts);
}

/* The option getopt_long returned as c, or NULL (help, or an error). */
static const struct opt_flat *getopt_which(const struct opt_getopt *g, int c)
{
    if (c >= OPT_VAL0 && (size_t)(c - OPT_VAL0) < g->n)
        return &g->all[c - OPT_VAL0];
    for (size_t k = 0; k < g->n && c != 'h'; k++)
        if (g->all[k].o->letter == c)
            return &g->all[k];
    return NULL;
}

enum opt_result opt_parse(const struct opt_cmd *cmd, int argc, char **argv, void *base,
                          struct opt_error *e)
{
    struct opt_getopt g;
    getopt_build(cmd, &g);
    enum opt_result rc = OPT_OK;
    *e = (struct opt_error){0};
    int c;
    optind = 0; /* glibc: start afresh, reading '+' again */
    while (rc == OPT_OK && (c = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
        const struct opt_flat *f = getopt_which(&g, c);
        if (c == 'h' && !f) {
            opt_help(stdout, cmd);
            rc = OPT_HELP;
        } else if (!f) { /* getopt_long has said what was wrong */
            rc = OPT_ERROR;
        } else {
            char name[64];
            if (f->o->name)
                snprintf(name, sizeof name, "--%s", f->o->name);
            else
                snprintf(name, sizeof name, "-%c", f->o->letter);
            const char *value = takes_argument(f->o) ? optarg : NULL;
            if (opt_set(f->o, (char *)base + f->base, name, value, e->msg, sizeof e->msg) < 0) {
                e->opt = f->o;
                e->value = value;
                rc = OPT_ERROR;
            }
        }
    }
    getopt_free(&g);
    return rc;
}

int opt_each(const struct opt_cmd *cmd, int argc, char **argv, const char *name,
             int (*fn)(const char *value, void *ctx), void *ctx)
{
    struct opt_getopt g;
    getopt_build(cmd, &g);
    int saved = opterr, rc = 0, c;
    opterr = 0;
    optind = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
        const struct opt_flat *f = getopt_which(&g, c);
        if (f && f->o->name && !strcmp(f->o->name, name))
            rc = fn(optarg, ctx);
    }
    opterr = saved;
    getopt_free(&g);
    return rc;
}

/* ---- --help --------------------------------------------------------------------- */

/* The option's side of its --help line: "  -b, --bind ADDR". letters: the
 * command has short options, so long-only ones are indented to match. */
static int help_left(const struct opt *o, bool letters, char *buf, size_t len)
{
    int n = snprintf(buf, len, "  ");
    if (o->letter)
        n += snprintf(buf + n, len - (size_t)n, "-%c%s", o->letter, o->name ? ", " : "");
    else if (letters)
        n += snprintf(buf + n, len - (size_t)n, "    ");
    if (o->name)
        n += snprintf(buf + n, len - (size_t)n, "--%s", o->name);
    if (o->arg)
        n += snprintf(buf + n, len - (size_t)n, " %s", o->arg);
    return n;
}

static void help_pad(FILE *f, int from, int to)
{
    for (; from < to; from++)
        fputc(' ', f);
}

/* Writes text from column col, the cursor at column at, wrapped at
 * OPT_HELP_WIDTH; each '\n' starts a line of its own, and a line's
 * leading blanks indent its continuations too. */
static void help_text(FILE *f, const char *text, int col, int at)
{
    for (const char *p = text;; p++) {
        const char *eol = strchr(p, '\n');
        size_t plen = eol ? (size_t)(eol - p) : strlen(p);
        int indent = 0;
        while ((size_t)indent < plen && p[indent] == ' ')
            indent++;
        help_pad(f, at, col + indent);
        int cur = col + indent, start = cur;
        for (size_t i = (size_t)indent; i < plen;) {
            size_t w = 0;
            while (i + w < plen && p[i + w] != ' ')
                w++;
            if (w) {
                if (cur > start && cur + 1 + (int)w > OPT_HELP_WIDTH) {
                    fputc('\n', f);
                    help_pad(f, 0, start);
                    cur = start;
                } else if (cur > start) {
                    fputc(' ', f);
                    cur++;
                }
                fwrite(p + i, 1, w, f);
                cur += (int)w;
            }
            i += w;
            while (i < plen && p[i] == ' ')
                i++;
        }
        fputc('\n', f);
        if (!eol)
            return;
        p = eol;
        at = 0;
    }
}

/* One option's lines of --help. */
static void help_option(FILE *f, const struct opt *o, bool letters, int col)
{
    char left[128], text[1024];
    int n = help_left(o, letters, left, sizeof left);
    fputs(left, f);
    if (n + 2 > col) {
        fputc('\n', f);
        n = 0;
    }
    if (o->def) /* after a help of several lines, on a line of its own */
        snprintf(text, sizeof text, "%s%s(default %s)", o->help,
                 strchr(o->help, '\n') ? "\n" : " ", o->def);
    else
        snprintf(text, sizeof text, "%s", o->help);
    help_text(f, text, col, n);
}

void opt_help(FILE *f, const struct opt_cmd *cmd)
{
    static const struct opt help = {
        .name = "help", .letter = 'h', .kind = OPT_FLAG, .help = "this text"};
    bool letters = false;
    char left[128];
    for (const struct opt_table *t = cmd->tables; t->opts; t++)
        for (const struct opt *o = t->opts; o->kind != OPT_END; o++)
            letters |= o->letter != 0;
    /* The help texts start after the longest option that fits. */
    int col = help_left(&help, letters, left, sizeof left) + 2;
    for (const struct opt_table *t = cmd->tables; t->opts; t++)
        for (const struct opt *o = t->opts; o->kind != OPT_END; o++) {
            int n = help_left(o, letters, left, sizeof left);
            if (!o->hidden && n + 2 <= OPT_HELP_MAX_COL && n + 2 > col)
                col = n + 2;
        }
    fputs(cmd->head, f);
    fputs("options:\n", f);
    for (const struct opt_table *t = cmd->tables; t->opts; t++)
        for (const struct opt *o = t->opts; o->kind != OPT_END; o++)
            if (!o->hidden)
                help_option(f, o, letters, col);
    help_option(f, &help, letters, col);
    if (cmd->tail)
        fputs(cmd->tail, f);
}
