/* a2b_api.h - the a2b service's operations, one per endpoint of the
 * reference: their arguments, their results (an HTTP status and a ready
 * JSON body), and the JSON shapes, shared by every storage backend so that
 * the backends answer byte for byte alike. docs/a2b.md lists each
 * operation's statuses and bodies.
 *
 * Bodies are compact JSON with the field names of the reference's Spring
 * code (countryId, cityId, locationId, transferId; id in users). Errors are
 * {"status":"NOT_FOUND","code":404,"message":"..."}, as the reference's
 * ExceptionInformation record serialises.
 */
#ifndef SHOOTOUT_A2B_API_H
#define SHOOTOUT_A2B_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/json.h"

enum a2b_op {
    A2B_COUNTRIES,       /* GET /countries */
    A2B_CITIES,          /* GET /countries/{country}/cities */
    A2B_LOCATIONS,       /* GET /countries/{country}/cities/{city}/locations */
    A2B_TRANSFERS,       /* GET /transfers?originId&destinationId&date */
    A2B_BOOK,            /* POST /users/{user}/transfers/{transfer} {description} */
    A2B_BOOKINGS,        /* GET /users/{user}/transfers */
    A2B_BOOKING,         /* GET /users/{user}/transfers/{transfer} */
    A2B_UPDATE_BOOKING,  /* PUT /users/{user}/transfers/{transfer} {state,description} */
    A2B_USER,            /* GET /users/{user} */
    A2B_UPDATE_USER,     /* PUT /users/{user} {firstName,lastName} */
    A2B_READY,           /* readiness: the database answers SELECT 1 */
    A2B_OP_COUNT
};

/* The longest first or last name (the schema's varchar(50)), in bytes. */
#define A2B_NAME_MAX 50

/* What an operation reads; each uses only its own fields. Strings are
 * NUL-terminated and not owned; a NULL string the operation needs is a 400
 * (the HTTP layer passes NULL for a missing or null JSON field). */
struct a2b_args {
    int64_t country_id, city_id, user_id, transfer_id;
    int64_t origin_id, destination_id;
    const char *date;        /* A2B_TRANSFERS: YYYY-MM-DD */
    const char *state;       /* A2B_UPDATE_BOOKING: BOOKED, COMPLETED or CANCELED */
    const char *description; /* A2B_BOOK, A2B_UPDATE_BOOKING */
    const char *first_name, *last_name; /* A2B_UPDATE_USER */
};

/* An operation's answer. body is compact JSON (NUL-terminated, len bytes
 * without the NUL) allocated with mem_alloc, or NULL for 201 and 204. */
struct a2b_result {
    int status;
    char *body;
    size_t len;
};

/* Static name of an op ("countries", "book", ...), for logs and tests. */
const char *a2b_op_name(enum a2b_op op);

/* Frees the body; the result may be reused. */
void a2b_result_clear(struct a2b_result *res);
/* Sets an error result: {"status":NAME,"code":status,"message":message}. */
void a2b_result_error(struct a2b_result *res, int status, const char *message);
/* Sets a bodiless result (201, 204). */
void a2b_result_empty(struct a2b_result *res, int status);
/* Takes a finished body from b (which is left empty) with status 200. */
void a2b_result_json(struct a2b_result *res, struct json_buf *b);

/* Checks what the database need not see: required strings present, the
 * date a real YYYY-MM-DD, the state one of the three, names at most
 * A2B_NAME_MAX bytes and not empty. On failure sets a 400 in res and
 * returns false. */
bool a2b_args_check(enum a2b_op op, const struct a2b_args *args, struct a2b_result *res);

/* Rows as a backend reads them, strings borrowed from the backend's row. */
struct a2b_country_view {
    int64_t id;
    const char *name, *code;
};

struct a2b_city_view {
    int64_t id;
    const char *name, *code;
    struct a2b_country_view country;
};

struct a2b_location_view {
    int64_t id;
    double latitude, longitude;
    struct a2b_city_view city;
};

struct a2b_transfer_view {
    int64_t id;
    struct a2b_location_view origin, destination;
    int capacity;
    const char *start, *end; /* the duration range, YYYY-MM-DD HH:MM:SS */
    int64_t price_cents;
    const char *description;
};

struct a2b_user_view {
    int64_t id;
    const char *first_name, *last_name, *email, *phone;
};

struct a2b_booking_view {
    struct a2b_user_view user;
    struct a2b_transfer_view transfer;
    const char *state, *description;
};

/* The reference's response objects. The transfer's duration is written
 * as PostgreSQL prints a tsrange, ["start","end"), and its price as a
 * decimal with two digits. */
void a2b_json_country(struct json *j, const struct a2b_country_view *v);
void a2b_json_city(struct json *j, const struct a2b_city_view *v);
void a2b_json_location(struct json *j, const struct a2b_location_view *v);
void a2b_json_transfer(struct json *j, const struct a2b_transfer_view *v);
void a2b_json_user(struct json *j, const struct a2b_user_view *v);
void a2b_json_booking(struct json *j, const struct a2b_booking_view *v);

#endif
