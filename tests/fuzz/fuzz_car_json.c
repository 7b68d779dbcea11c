/* fuzz_car_json.c - libFuzzer target for the Car service's JSON mapping
 * (car_json.c).
 *
 * The input is parsed as a REST body, into a buffer as long as the input
 * (which car_json.h promises is always enough). Checked on the way:
 *   - an error lies within the input and names a field exactly when its
 *     kind concerns one (a document that is not an object has none);
 *   - whatever parses re-encodes, and the encoding parses to the same
 *     record and encodes to the same bytes again;
 *   - the record survives a protobuf-c pack/unpack unchanged;
 *   - a cut before the document's last byte is reported as truncated.
 * Any broken invariant abort()s.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "car/car_json.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_str(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static bool same(const Com__Stevenpg__Rvg__Message *a, const Com__Stevenpg__Rvg__Message *b)
{
    return a->car && b->car && a->driver && b->driver && same_str(a->car->make, b->car->make) &&
           same_str(a->car->model, b->car->model) && same_str(a->car->trim, b->car->trim) &&
           same_str(a->car->color, b->car->color) && a->car->year == b->car->year &&
           a->car->mileage == b->car->mileage &&
           same_str(a->driver->firstname, b->driver->firstname) &&
           same_str(a->driver->lastname, b->driver->lastname) &&
           same_str(a->driver->driverid, b->driver->driverid);
}

static bool has_field(enum car_json_err code)
{
    return code == CAR_JSON_E_NUL || code == CAR_JSON_E_TYPE || code == CAR_JSON_E_RANGE ||
           code == CAR_JSON_E_MISSING || code == CAR_JSON_E_DUPLICATE || code == CAR_JSON_E_NOSPACE;
}

static bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Checks what every parse result must satisfy, and returns its code. */
static enum car_json_err parse_checked(const char *in, size_t len, struct car_record *rec,
                                       char *buf, size_t buf_len)
{
    struct car_json_error err;
    enum car_json_err rc = car_json_parse(in, len, rec, buf, buf_len, &err);

    check(rc == err.code);
    check(err.offset <= len);
    /* Only a wrong type at the top, the document itself, has no field. */
    check(err.field ? has_field(rc) : !has_field(rc) || rc == CAR_JSON_E_TYPE);
    check(rc != CAR_JSON_E_NOSPACE || buf_len < len);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    struct car_record rec, again;
    char *buf = malloc(size + 1);
    check(buf != NULL);

    if (parse_checked(in, size, &rec, buf, size) != CAR_JSON_OK) {
        free(buf);
        return 0;
    }

    /* Re-encode; the encoding is canonical, so it reproduces itself. */
    size_t n, n2;
    check(car_json_encode(&rec.msg, NULL, 0, &n) == CAR_JSON_E_NOSPACE);
    char *json = malloc(n), *json2 = malloc(n), *buf2 = malloc(n);
    check(json && json2 && buf2);
    check(car_json_encode(&rec.msg, json, n, &n2) == CAR_JSON_OK && n2 == n);
    check(parse_checked(json, n, &again, buf2, n) == CAR_JSON_OK);
    check(same(&rec.msg, &again.msg));
    check(car_json_encode(&again.msg, json2, n, &n2) == CAR_JSON_OK && n2 == n);
    check(memcmp(json, json2, n) == 0);

    /* Through protobuf and back. */
    size_t packed_len = com__stevenpg__rvg__message__get_packed_size(&rec.msg);
    uint8_t *packed = malloc(packed_len + 1);
    check(packed != NULL);
    check(com__stevenpg__rvg__message__pack(&rec.msg, packed) == packed_len);
    Com__Stevenpg__Rvg__Message *back =
        com__stevenpg__rvg__message__unpack(NULL, packed_len, packed);
    check(back != NULL && same(back, &rec.msg));
    com__stevenpg__rvg__message__free_unpacked(back, NULL);

    /* Cuts before the last byte of the document. */
    size_t end = size;
    while (end > 0 && is_ws(data[end - 1]))
        end--;
    size_t cuts[] = {0, end / 2, end - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        check(parse_checked(in, cuts[i], &again, buf, size) == CAR_JSON_E_TRUNCATED);

    free(packed);
    free(buf2);
    free(json2);
    free(json);
    free(buf);
    return 0;
}
