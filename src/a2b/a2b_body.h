/* a2b_body.h - what the a2b routes read from a request besides its path:
 * the JSON object bodies of POST and PUT ({"description":...},
 * {"state":...,"description":...}, {"firstName":...,"lastName":...}), the
 * query string of /transfers, and the numeric ids in paths. Pure and
 * non-allocating; fuzzed (tests/fuzz/fuzz_a2b_body.c).
 *
 * The body reader is strict JSON (RFC 8259): one object, nothing after
 * it; fields the caller names must be strings or null; other fields may
 * hold any value and are skipped, as Spring's Jackson does by default.
 */
#ifndef SHOOTOUT_A2B_BODY_H
#define SHOOTOUT_A2B_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A field to read: *value is set to its unescaped, NUL-terminated text, or
 * NULL when it is absent or null. A repeated field keeps its last value. */
struct a2b_field {
    const char *name;
    const char **value;
};

/* Nesting accepted inside skipped values. */
#define A2B_BODY_MAX_DEPTH 32

/* Parses body[0..len) as one JSON object, unescaping the wanted strings
 * into store, which needs len bytes (no string unescapes longer than it was
 * written). 0 on success; -1 with a static message in *err. */
int a2b_body_parse(const char *body, size_t len, char *store, size_t store_cap,
                   const struct a2b_field *fields, size_t nfields, const char **err);

/* Finds parameter name in a query string ("a=1&b=x%20y"), percent-decoding
 * names and values ('+' is a space). Returns 1 and the decoded value in
 * out[0..cap) (NUL-terminated), 0 when absent, -1 when malformed (a bad %
 * escape, a NUL, or a value longer than cap - 1). The first occurrence
 * wins. */
int a2b_query_get(const char *query, const char *name, char *out, size_t cap);

/* A path segment as an id: 1 to 18 ASCII digits, nothing else. */
bool a2b_parse_id(const char *s, size_t len, int64_t *out);

#endif
