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

#include "core/json.h"

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

/* Delivers an operation's result on the submitting loop. The callback may
 * take the body (set res->body to NULL and mem_free it later); otherwise it
 * is freed when the callback returns. */
typedef void (*a2b_done_fn)(struct a2b_result *res, void *ctx);

/* A submitted operation on its way through an asynchronous backend, which
 * may embed it first in a larger struct of its own. The arguments are
 * copied (strings included), so the submitter's may change at once. */
struct a2b_request {
    struct a2b_request *next;
    enum a2b_op op;
    struct a2b_args args; /* strings point into text */
    char *text;
    a2b_done_fn cb;
    void *ctx;
    struct a2b_result res;
};

/* A FIFO of requests; zero it to make it empty. */
struct a2b_request_list {
    struct a2b_request *head, *tail;
};

/* Allocates size bytes (at least sizeof(struct a2b_request), zeroed) with
 * the request at the start, and copies args. */
struct a2b_request *a2b_request_new(size_t size, enum a2b_op op, const struct a2b_args *args,
                                    a2b_done_fn cb, void *ctx);
/* Frees the request, its strings and its result (not the callback's). */
void a2b_request_free(struct a2b_request *r);
void a2b_request_push(struct a2b_request_list *l, struct a2b_request *r);
/* The oldest request, or NULL. */
struct a2b_request *a2b_request_pop(struct a2b_request_list *l);
/* Frees every request of the list (no callbacks) and empties it. */
void a2b_request_list_free(struct a2b_request_list *l);

/* Static name of an op ("countries", "book", ...), for logs and tests. */
const char *a2b_op_name(enum a2b_op op);

/* The 404 message of op (book: the user's; its transfer's is
 * A2B_TRANSFER_NOT_FOUND), or NULL for ops without a 404. */
const char *a2b_op_not_found(enum a2b_op op);
#define A2B_TRANSFER_NOT_FOUND "Transfer not found"
#define A2B_ALREADY_BOOKED "The transfer is already booked by the user"

/* Frees the body; the result may be reused. */
void a2b_result_clear(struct a2b_result *res);
/* Sets an error result: {"status":NAME,"code":status,"message":message}. */
void a2b_result_error(struct a2b_result *res, int status, const char *message);
/* Sets a bodiless result (201, 204). */
void a2b_result_empty(struct a2b_result *res, int status);
/* Sets the readiness answer: 200 {"status":"UP"}. */
void a2b_result_up(struct a2b_result *res);
/* Takes a finished body from b (which is left empty) with status 200. */
void a2b_result_json(struct a2b_result *res, struct json_buf *b);

/* Checks what the database need not see: required strings present, the
 * date a real YYYY-MM-DD, the state one of the three, names at most
 * A2B_NAME_MAX bytes and not empty. On failure sets a 400 in res and
 * returns false. */
bool a2b_args_check(enum a2b_op op, const struct a2b_args *args, struct a2b_result *res);

/* One row of a backend's result, read column by column: the backend's
 * cursor and its accessors. Columns are numbered from base, so a query may
 * put columns of its own first. A string stays valid until the cursor
 * moves. */
struct a2b_row {
    const void *cursor;
    int index; /* row number, for backends that need one */
    int base;
    const char *(*text)(const struct a2b_row *row, int col);
    int64_t (*integer)(const struct a2b_row *row, int col);
    double (*real)(const struct a2b_row *row, int col);
};

/* The row shapes, in the column order every backend's SELECT lists:
 *   country   id, name, code                                         3
 *   city      id, name, code, <country>                              6
 *   location  id, latitude, longitude, <city>                        9
 *   transfer  id, <origin location>, <destination location>,
 *             capacity, duration start, duration end,
 *             price in cents, description                           24
 *   user      id, first_name, last_name, email, phone                5
 *   booking   <user>, <transfer>, state, description                31
 * Countries list countries, cities cities, locations locations,
 * transfers transfers, bookings and booking bookings, user a user. */
#define A2B_COLUMNS_COUNTRY 3
#define A2B_COLUMNS_CITY 6
#define A2B_COLUMNS_LOCATION 9
#define A2B_COLUMNS_TRANSFER 24
#define A2B_COLUMNS_USER 5
#define A2B_COLUMNS_BOOKING 31

/* Writes the row as op's JSON object, in the reference's shape: the
 * transfer's duration as PostgreSQL prints a tsrange, ["start","end"),
 * its price as a decimal with two digits, a user's name as "first last". */
void a2b_json_row(struct json *j, enum a2b_op op, const struct a2b_row *row);

#endif
