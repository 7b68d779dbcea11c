/* fuzz_json_read.c - libFuzzer target for the shared JSON reader
 * (core/json_read.c). The input is read twice: skipped whole (jr_skip),
 * and walked value by value with every string decoded. Checked:
 *   - both reads agree on the verdict, the error code and its offset, and
 *     the offset lies within the input;
 *   - a decoded string is valid UTF-8, no longer than it was written, and
 *     a decode into a short buffer is a prefix of the full one;
 *   - the depth never passes the limit and a successful walk ends at 0;
 *   - a cut before the document's last byte is reported as truncated.
 * Any broken invariant abort()s.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_read.h"
#include "core/utf8.h"
#include "fuzz_check.h"

#define DEPTH 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decodes the string at r->p fully and into a short buffer, and checks
 * both. */
static bool string_checked(struct jr *r)
{
    const unsigned char *at = r->p;
    size_t n, n2;
    char *out = malloc(r->end - at + 1), pre[3];

    check(out != NULL);
    bool ok = jr_string(r, out, (size_t)(r->end - at), &n);
    if (ok) {
        check(n <= r->text_len);
        check(r->text == (const char *)at + 1 && r->p == at + r->text_len + 2);
        check(utf8_valid((const uint8_t *)out, n));
        check(r->nul == (memchr(out, 0, n) != NULL));
        struct jr again = *r;
        again.p = at;
        check(jr_string(&again, pre, sizeof pre, &n2) && n2 == n);
        check(memcmp(pre, out, n < sizeof pre ? n : sizeof pre) == 0);
    }
    free(out);
    return ok;
}

/* Walks the value at r->p with the step-by-step calls. */
static bool walk(struct jr *r)
{
    uint64_t u;
    bool plain;
    size_t n;
    int more;

    switch (jr_peek(r)) {
    case JR_OBJECT:
    case JR_ARRAY: {
        bool object = *r->p == '{';
        unsigned depth = r->depth;
        if (!jr_enter(r))
            return false;
        check(r->depth == depth + 1 && r->depth <= DEPTH);
        while ((more = jr_next(r)) > 0) {
            if (object && !(jr_peek(r) == JR_STRING ? string_checked(r)
                                                    : jr_key(r, NULL, 0, &n)))
                return false;
            if (object && !jr_colon(r))
                return false;
            if (!walk(r))
                return false;
        }
        check(more < 0 || r->depth == depth);
        return more == 0;
    }
    case JR_STRING: return string_checked(r);
    case JR_NUMBER: return jr_number(r, &u, &plain);
    case JR_TRUE:
    case JR_FALSE:
    case JR_NULL: return jr_literal(r);
    case JR_NONE: return jr_skip(r); /* reports the missing value */
    }
    return false;
}

static bool read_skip(const uint8_t *data, size_t size, struct jr *r)
{
    jr_init(r, data, size, DEPTH);
    return jr_skip(r) && jr_end(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jr a, b;
    bool ok = read_skip(data, size, &a);

    jr_init(&b, data, size, DEPTH);
    bool ok2 = walk(&b) && jr_end(&b);
    check(ok == ok2 && a.err == b.err && a.err_off == b.err_off);
    check(a.err_off <= size);
    check(ok == (a.err == JR_OK));
    if (!ok)
        return 0;
    check(a.depth == 0 && b.depth == 0);

    /* A bare number cut short may still be a number: "12" -> "1". */
    jr_init(&b, data, size, DEPTH);
    bool number = jr_peek(&b) == JR_NUMBER;
    size_t end = size;
    while (end > 0 && memchr(" \t\n\r", data[end - 1], 4))
        end--;
    size_t cuts[] = {0, end / 2, end - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        struct jr c;
        if (read_skip(data, cuts[i], &c))
            check(number && cuts[i] > 0);
        else
            check(jr_truncated(&c));
    }
    return 0;
}
