/* texttab.c - terminal tables sized from their content (see texttab.h). */
#include "report/texttab.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

struct tt_cell {
    char *text;
    unsigned col, span; /* span 0: a line of its own */
    bool tail;          /* to the end of the line, sizing nothing */
};

void tt_init(struct tt *t, const char *align)
{
    size_t n = strlen(align);
    if (n == 0 || n > TT_MAX_COLS)
        abort(); /* a programming error: the tables are fixed in code */
    *t = (struct tt){.ncols = (unsigned)n, .indent = ""};
    memcpy(t->align, align, n);
}

void tt_free(struct tt *t)
{
    for (unsigned i = 0; i < t->n; i++)
        mem_free(t->cells[i].text);
    mem_free(t->cells);
    *t = (struct tt){0};
}

unsigned tt_width(const char *s)
{
    unsigned w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80; /* not a continuation byte */
    return w;
}

static void push(struct tt *t, char *text, unsigned span, bool tail)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->cells = mem_realloc(t->cells, t->cap * sizeof *t->cells);
    }
    if (tail || (span && t->col + span > t->ncols))
        span = t->ncols - t->col;
    t->cells[t->n++] = (struct tt_cell){text, t->col, span, tail};
    if (span)
        t->col = (t->col + span) % t->ncols;
}

static char *vformat(const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int len = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *s = mem_alloc(len > 0 ? (size_t)len + 1 : 1);
    if (len > 0)
        vsnprintf(s, (size_t)len + 1, fmt, ap);
    else
        s[0] = '\0';
    return s;
}

void tt_cell(struct tt *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    push(t, vformat(fmt, ap), 1, false);
    va_end(ap);
}

void tt_span(struct tt *t, unsigned span, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    push(t, vformat(fmt, ap), span ? span : 1, false);
    va_end(ap);
}

void tt_tail(struct tt *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    push(t, vformat(fmt, ap), 1, true);
    va_end(ap);
}

void tt_cells(struct tt *t, unsigned n, const char *const cells[])
{
    for (unsigned i = 0; i < n; i++)
        push(t, mem_strdup(cells[i]), 1, false);
}

void tt_end(struct tt *t)
{
    while (t->col)
        push(t, mem_strdup(""), 1, false);
}

void tt_line(struct tt *t, const char *fmt, ...)
{
    tt_end(t); /* the row before it */
    va_list ap;
    va_start(ap, fmt);
    push(t, vformat(fmt, ap), 0, false);
    va_end(ap);
}

void tt_reserve(struct tt *t, unsigned col, const char *text)
{
    if (col < t->ncols && tt_width(text) > t->width[col])
        t->width[col] = tt_width(text);
}

/* The width of columns col .. col+span-1 and the gaps between them. */
static unsigned span_width(const struct tt *t, unsigned col, unsigned span)
{
    unsigned w = TT_GAP * (span - 1);
    for (unsigned c = col; c < col + span; c++)
        w += t->width[c];
    return w;
}

static void pad(FILE *f, unsigned n)
{
    while (n--)
        fputc(' ', f);
}

void tt_print(FILE *f, struct tt *t)
{
    tt_end(t);
    /* One-column cells first, then the groups, which widen their last
     * column when they need more. */
    for (unsigned i = t->printed; i < t->n; i++) {
        const struct tt_cell *c = &t->cells[i];
        unsigned w = tt_width(c->text);
        if (c->span == 1 && !c->tail && w > t->width[c->col])
            t->width[c->col] = w;
    }
    for (unsigned i = t->printed; i < t->n; i++) {
        const struct tt_cell *c = &t->cells[i];
        unsigned w = tt_width(c->text);
        if (c->span > 1 && !c->tail && w > span_width(t, c->col, c->span))
            t->width[c->col + c->span - 1] += w - span_width(t, c->col, c->span);
    }
    /* A row's cells are printed up to its last non-empty one, so that no
     * line ends in spaces. */
    for (unsigned i = t->printed; i < t->n;) {
        const struct tt_cell *c = &t->cells[i];
        if (!c->span) {
            fprintf(f, "%s%s\n", t->indent, c->text);
            i++;
            continue;
        }
        unsigned end = i + 1;
        while (end < t->n && t->cells[end].span && t->cells[end].col)
            end++;
        unsigned last = end;
        while (last > i && !t->cells[last - 1].text[0])
            last--;
        fputs(t->indent, f);
        unsigned owed = 0; /* spaces not yet written before the next cell */
        for (unsigned k = i; k < last; k++) {
            const struct tt_cell *x = &t->cells[k];
            unsigned field = span_width(t, x->col, x->span), w = tt_width(x->text);
            if (w > field) /* a tail */
                field = w;
            bool right = x->span == 1 && !x->tail && t->align[x->col] == 'r';
            pad(f, owed + (right ? field - w : 0));
            fputs(x->text, f);
            owed = (right ? 0 : field - w) + TT_GAP;
        }
        fputc('\n', f);
        i = end;
    }
    t->printed = t->n;
}
