/* fuzz_a2b_body.c - libFuzzer target for the a2b request readers
 * (a2b_body.c). The input is read as a JSON body with three wanted fields,
 * and again as a query string. Checked: the body reader stays within the
 * store it is given (exactly the body's length, so ASan sees any overrun),
 * wanted strings are valid C strings inside that store, a failure leaves
 * every field NULL with a message, and the query parser's value fits its
 * buffer. Any broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "a2b/a2b_body.h"
#include "core/mem.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = mem_alloc(size ? size : 1);
    memcpy(body, data, size);
    char *store = mem_alloc(size ? size : 1);
    const char *a, *b, *c, *err = NULL;
    const struct a2b_field f[] = {{"description", &a}, {"state", &b}, {"firstName", &c}};
    if (a2b_body_parse(body, size, store, size, f, 3, &err) == 0) {
        const char *vals[] = {a, b, c};
        for (int i = 0; i < 3; i++)
            if (vals[i]) {
                check(vals[i] >= store && vals[i] < store + size);
                check(vals[i] + strlen(vals[i]) < store + size);
            }
    } else {
        check(err && !a && !b && !c);
    }
    mem_free(store);

    char *query = mem_strndup(data, size); /* a C string, as http_server gives it */
    char v[32];
    int r = a2b_query_get(query, "date", v, sizeof v);
    check(r >= -1 && r <= 1);
    if (r == 1)
        check(strlen(v) < sizeof v);
    mem_free(query);
    mem_free(body);
    return 0;
}
