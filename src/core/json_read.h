/* json_read.h - the one JSON reader (RFC 8259, strict): a cursor over one
 * buffer that the caller pulls values from, with no tree and no allocation.
 * The writer is json.h; this is its reading half.
 *
 * The caller walks the document: jr_peek says what value comes next,
 * jr_enter opens an object or array, jr_next steps to its next element (and
 * consumes the closing bracket), jr_key and jr_colon read a member's name
 * and its ':',
 * jr_string / jr_number / jr_literal read scalars, jr_skip checks and skips
 * any value. What the document means (which keys are known, whether a
 * repeated key is refused or the last one wins, which types a field takes)
 * is the caller's; the reader checks the grammar everywhere it passes:
 * nesting deeper than max_depth, escapes (\uXXXX, surrogate pairs made one
 * code point, lone surrogates refused), raw control characters and UTF-8
 * (utf8.h) in strings, the number grammar, and text after the document.
 *
 * The first error stops the reader; its code and byte offset stay in the
 * struct. An error found where the input ends (the document is cut short)
 * has the offset len (jr_truncated).
 */
#ifndef SHOOTOUT_JSON_READ_H
#define SHOOTOUT_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The deepest nesting any reader may ask for: open containers are kept in a
 * 64-bit mask. */
#define JR_MAX_DEPTH 64

enum jr_err {
    JR_OK = 0,
    JR_E_VALUE,     /* no value begins here (also: the input ends where one should) */
    JR_E_LITERAL,   /* not true, false or null, though it begins like one */
    JR_E_NUMBER,    /* '-' with no digit after it */
    JR_E_FRACTION,  /* '.', 'e' or 'E' with no digit after it */
    JR_E_STRING,    /* the input ends inside a string */
    JR_E_CONTROL,   /* a raw control character (below U+0020) in a string */
    JR_E_UTF8,      /* invalid UTF-8 in a string */
    JR_E_ESCAPE,    /* a backslash followed by none of "\/bfnrtu */
    JR_E_HEX,       /* \u not followed by four hex digits */
    JR_E_SURROGATE, /* a lone surrogate, high or low */
    JR_E_NUL,       /* \u0000, when the reader refuses it (refuse_nul) */
    JR_E_KEY,       /* an object's member does not begin with a string */
    JR_E_COLON,     /* no ':' after a member's name */
    JR_E_COMMA,     /* neither ',' nor the closing bracket after an element */
    JR_E_DEPTH,     /* containers nested deeper than max_depth */
    JR_E_TRAILING,  /* text after the document */
};

enum jr_type { JR_NONE, JR_OBJECT, JR_ARRAY, JR_STRING, JR_NUMBER, JR_TRUE, JR_FALSE, JR_NULL };

struct jr {
    const unsigned char *p; /* the next byte to read */
    const unsigned char *start, *end;
    /* The last string read (value or key) as written between its quotes,
     * escapes not decoded, pointing into the input; nul tells whether its
     * decoded text holds U+0000. */
    const char *text;
    size_t text_len;
    bool nul;
    bool refuse_nul; /* set by the caller: \u0000 anywhere is JR_E_NUL */
    bool fresh;      /* a container was just entered: it may close at once */
    unsigned depth, max_depth;
    uint64_t objects; /* bit d-1: the container open at depth d is an object */
    enum jr_err err;
    size_t err_off;
};

/* Starts reading in[0..len); containers may nest max_depth deep (at most
 * JR_MAX_DEPTH). in must outlive the reader. */
void jr_init(struct jr *r, const void *in, size_t len, unsigned max_depth);

/* Skips whitespace and tells what value begins at r->p, by its first byte:
 * JR_NONE at the end of the input or at a byte no value begins with. Reads
 * nothing else and sets no error. */
enum jr_type jr_peek(struct jr *r);

/* Opens the object or array at r->p (jr_peek said which). false on error
 * (JR_E_DEPTH). */
bool jr_enter(struct jr *r);

/* Steps to the next element of the innermost open container: 1 when one
 * follows (r->p at its key, or at its value in an array), 0 when the
 * container has ended (its bracket is consumed and the depth is one less),
 * -1 on error. Call it after jr_enter and after each element. */
int jr_next(struct jr *r);

/* Reads an object member's name into dst as jr_string does (JR_E_KEY when
 * it is not a string). jr_colon then reads the ':' after it, and r->p is at
 * the value: two calls, so that a caller may judge the name first. */
bool jr_key(struct jr *r, char *dst, size_t cap, size_t *len);
bool jr_colon(struct jr *r);

/* Reads the string at r->p (at its opening quote), checking all of it, and
 * decodes its text into dst[0..cap): its first min(*len, cap) bytes, where
 * *len gets the whole decoded length (so *len > cap means dst holds only a
 * prefix, which may end inside a UTF-8 sequence). dst may be NULL with cap
 * 0 to check only. No NUL is added. Sets r->text and r->nul. */
bool jr_string(struct jr *r, char *dst, size_t cap, size_t *len);

/* Reads the number at r->p. *plain tells whether it is written as digits
 * alone (no sign, fraction or exponent), and *u is then its value,
 * UINT64_MAX when it is larger. The byte after the number is not looked
 * at: "01" reads as 0, and the caller finds the 1. */
bool jr_number(struct jr *r, uint64_t *u, bool *plain);

/* Reads the true, false or null at r->p. */
bool jr_literal(struct jr *r);

/* Checks and skips the value at r->p, containers whole. */
bool jr_skip(struct jr *r);

/* Checks that only whitespace is left (JR_E_TRAILING otherwise). */
bool jr_end(struct jr *r);

/* Whether the error was found where the input ends. */
bool jr_truncated(const struct jr *r);

#endif
