/* texttab.h - the terminal tables of every report (shootout run's tables,
 * http-open's console report, shootout bench's run table, the lists in the
 * help texts): one column-sizing rule for all of them. A table gathers its
 * cells first; each column is then as wide as its widest cell, title
 * included, and at least TT_GAP spaces part it from the next, so no two
 * cells ever run together and every row lines up whatever the figures. A
 * table printed as it grows (a row per run, with progress in between)
 * keeps the widths it has printed with and widens a column only for a
 * later, wider cell.
 */
#ifndef SHOOTOUT_TEXTTAB_H
#define SHOOTOUT_TEXTTAB_H

#include <stdio.h>

#define TT_MAX_COLS 24
#define TT_GAP 2

struct tt_cell;

struct tt {
    unsigned ncols;
    const char *indent;          /* before every line; "" */
    char align[TT_MAX_COLS];     /* 'l' or 'r' per column */
    unsigned width[TT_MAX_COLS]; /* of the rows printed so far */
    struct tt_cell *cells;       /* row by row; a row ends after ncols columns */
    unsigned n, cap;
    unsigned printed; /* cells already printed */
    unsigned col;     /* the column the next cell goes to */
};

/* A table of strlen(align) columns (at most TT_MAX_COLS), each aligned
 * 'l'(eft) or 'r'(ight) as align says: "lrrr". */
void tt_init(struct tt *t, const char *align);
void tt_free(struct tt *t);

/* Appends a cell (printf format) to the current row; after the row's last
 * column the next cell starts a new row. */
void tt_cell(struct tt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, spanning span columns (a heading over a group of columns): it
 * widens the group's last column if the group is narrower than it. */
void tt_span(struct tt *t, unsigned span, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The row's last cell, from the current column to the end of the line
 * however long it is (a remark in place of figures): it widens no column. */
void tt_tail(struct tt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends the current row here, its columns left empty (none if the row is
 * already complete). */
void tt_end(struct tt *t);
/* Appends n cells from an array. */
void tt_cells(struct tt *t, unsigned n, const char *const cells[]);
/* A line of its own between the rows (a remark, a separator), printed as
 * it is: it neither takes nor sizes any column. The current row must be
 * complete. */
void tt_line(struct tt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Makes column col at least as wide as text: for a table printed as it
 * grows that knows some of its later cells (the aggregates' names). */
void tt_reserve(struct tt *t, unsigned col, const char *text);

/* Prints the rows added since the last call (all of them the first time),
 * each column as wide as the widest cell it has had. Trailing spaces are
 * never printed. */
void tt_print(FILE *f, struct tt *t);

/* Display width of a UTF-8 string: its code points. */
unsigned tt_width(const char *s);

#endif
