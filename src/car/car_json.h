/* car_json.h - the Car service's REST body: the article's JSON document
 *
 *   {"car":{"make":"toyota","model":"corolla","trim":"4DR Sedan","color":"gray",
 *           "year":2012,"mileage":120000},
 *    "driver":{"firstname":"John","lastname":"Smith","driverId":"someId"}}
 *
 * mapped to the protobuf-c Message generated from car.proto, and back.
 *
 * Both directions are pure and never allocate. The parser is our own and
 * reads exactly this document: objects, arrays (only inside unknown fields,
 * which are checked and skipped), strings with every escape (\uXXXX and
 * surrogate pairs become UTF-8), numbers, true/false/null. What it refuses,
 * with the field it concerns where there is one:
 *   - anything that is not RFC 8259 JSON, including invalid UTF-8 anywhere,
 *     lone surrogates and trailing bytes after the document;
 *   - nesting deeper than CAR_JSON_MAX_DEPTH;
 *   - a known field of the wrong type; null counts as a wrong type;
 *   - year or mileage that is not an integer in 0..4294967295 (no fraction,
 *     exponent or minus sign, even where the value would be integral);
 *   - a missing field: all nine fields, and car and driver, are required,
 *     because every client of the article sends them all;
 *   - a known field given twice: refused rather than "last wins", so that no
 *     two JSON readers can disagree about what we stored;
 *   - U+0000 in a stored string, because protobuf-c strings are C strings.
 * Unknown fields are ignored at every level, as the article's Jackson POJOs
 * do; key names are compared after unescaping.
 */
#ifndef SHOOTOUT_CAR_JSON_H
#define SHOOTOUT_CAR_JSON_H

#include <stddef.h>

#include "car.pb-c.h"

/* Objects and arrays nested deeper than this are refused. The document
 * itself needs 2; the margin is for unknown fields. */
#define CAR_JSON_MAX_DEPTH 32

enum car_json_err {
    CAR_JSON_OK = 0,
    CAR_JSON_E_TRUNCATED, /* input ends inside the document */
    CAR_JSON_E_SYNTAX,    /* not JSON: unexpected byte, bad number or literal, raw control char */
    CAR_JSON_E_DEPTH,     /* nesting deeper than CAR_JSON_MAX_DEPTH */
    CAR_JSON_E_ESCAPE,    /* unknown escape, bad hex digit, or lone surrogate */
    CAR_JSON_E_UTF8,      /* invalid UTF-8 */
    CAR_JSON_E_NUL,       /* a stored string contains U+0000 (field set) */
    CAR_JSON_E_TYPE,      /* wrong type (field set; NULL when the document is not an object) */
    CAR_JSON_E_RANGE,     /* year or mileage not an integer in 0..4294967295 (field set) */
    CAR_JSON_E_MISSING,   /* a required field is absent (field set) */
    CAR_JSON_E_DUPLICATE, /* a known field appears twice (field set) */
    CAR_JSON_E_NOSPACE,   /* the caller's buffer is too small (field set when parsing) */
};

struct car_json_error {
    enum car_json_err code;
    size_t offset;     /* byte of the input where the error was found */
    const char *field; /* static path such as "car.year", or NULL */
};

/* Short English description of a car_json_err. Never NULL. */
const char *car_json_strerror(enum car_json_err code);

/* One parsed record. msg.car and msg.driver point at car and driver, so a
 * record must not be copied by value once parsed. */
struct car_record {
    Com__Stevenpg__Rvg__Message msg;
    Com__Stevenpg__Rvg__Message__Car car;
    Com__Stevenpg__Rvg__Message__Driver driver;
};

/* Parses the document in in[0..len) into *rec.
 *
 * The record's strings are unescaped, NUL-terminated, and written into the
 * caller's buf[0..buf_len), which must outlive rec; buf_len >= len always
 * suffices, because every stored string is at least two bytes (its quotes)
 * longer in the input than its text.
 *
 * Returns CAR_JSON_OK, or an error code that is also stored in *err with its
 * offset and field (err may be NULL). *rec is only meaningful on success. */
enum car_json_err car_json_parse(const char *in, size_t len, struct car_record *rec, char *buf,
                                 size_t buf_len, struct car_json_error *err);

/* Writes msg as minified JSON, in the article's field order, to
 * out[0..cap); no NUL is added. *out_len is set to the document's length,
 * also when it does not fit.
 *
 * Returns CAR_JSON_OK, CAR_JSON_E_NOSPACE when cap < *out_len,
 * CAR_JSON_E_MISSING when msg->car, msg->driver or one of their strings is
 * NULL, or CAR_JSON_E_UTF8 when a string is not valid UTF-8 (protobuf-c
 * does not check what it unpacks). */
enum car_json_err car_json_encode(const Com__Stevenpg__Rvg__Message *msg, char *out, size_t cap,
                                  size_t *out_len);

/* Writes the body of a 400 answer for err, e.g.
 *   {"error":"wrong type","field":"car.year","offset":83}
 * ("field" only when err->field is set) to out[0..cap), NUL-terminated and
 * truncated to fit as snprintf does. Returns the body's full length. */
size_t car_json_error_body(const struct car_json_error *err, char *out, size_t cap);

#endif
