/* a2b_api.c - argument checks, results and JSON bodies of the a2b
 * operations, common to the backends. */
#include "a2b/a2b_api.h"

#include <stdio.h>
#include <string.h>

#include "a2b/a2b_data.h"
#include "core/mem.h"

const char *a2b_op_name(enum a2b_op op)
{
    static const char *const names[A2B_OP_COUNT] = {
        [A2B_COUNTRIES] = "countries",   [A2B_CITIES] = "cities",
        [A2B_LOCATIONS] = "locations",   [A2B_TRANSFERS] = "transfers",
        [A2B_BOOK] = "book",             [A2B_BOOKINGS] = "bookings",
        [A2B_BOOKING] = "booking",       [A2B_UPDATE_BOOKING] = "update_booking",
        [A2B_USER] = "user",             [A2B_UPDATE_USER] = "update_user",
        [A2B_READY] = "ready",
    };
    return (unsigned)op < A2B_OP_COUNT ? names[op] : "?";
}

struct a2b_request *a2b_request_new(size_t size, enum a2b_op op, const struct a2b_args *args,
                                    a2b_done_fn cb, void *ctx)
{
    struct a2b_request *r = mem_calloc(1, size);
    r->op = op;
    r->cb = cb;
    r->ctx = ctx;
    r->args = *args;
    const char **strs[] = {&r->args.date, &r->args.state, &r->args.description,
                           &r->args.first_name, &r->args.last_name};
    size_t n = sizeof strs / sizeof strs[0], total = 0;
    for (size_t i = 0; i < n; i++)
        if (*strs[i])
            total += strlen(*strs[i]) + 1;
    char *p = r->text = total ? mem_alloc(total) : NULL;
    for (size_t i = 0; i < n; i++)
        if (*strs[i]) {
            size_t len = strlen(*strs[i]) + 1;
            memcpy(p, *strs[i], len);
            *strs[i] = p;
            p += len;
        }
    return r;
}

void a2b_request_free(struct a2b_request *r)
{
    a2b_result_clear(&r->res);
    mem_free(r->text);
    mem_free(r);
}

void a2b_request_push(struct a2b_request_list *l, struct a2b_request *r)
{
    r->next = NULL;
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
}

struct a2b_request *a2b_request_pop(struct a2b_request_list *l)
{
    struct a2b_request *r = l->head;
    if (r && !(l->head = r->next))
        l->tail = NULL;
    return r;
}

void a2b_request_list_free(struct a2b_request_list *l)
{
    struct a2b_request *r;
    while ((r = a2b_request_pop(l)))
        a2b_request_free(r);
}

const char *a2b_op_not_found(enum a2b_op op)
{
    switch (op) {
    case A2B_CITIES:
        return "Country not found";
    case A2B_LOCATIONS:
        return "City not found in the country";
    case A2B_BOOK:
    case A2B_BOOKINGS:
    case A2B_USER:
    case A2B_UPDATE_USER:
        return "User not found";
    case A2B_BOOKING:
    case A2B_UPDATE_BOOKING:
        return "User's transfer not found";
    default:
        return NULL;
    }
}

void a2b_result_clear(struct a2b_result *res)
{
    mem_free(res->body);
    *res = (struct a2b_result){0};
}

/* Spring's HttpStatus names, which the reference's errors carry. */
static const char *status_name(int status)
{
    switch (status) {
    case 400:
        return "BAD_REQUEST";
    case 404:
        return "NOT_FOUND";
    case 405:
        return "METHOD_NOT_ALLOWED";
    case 408:
        return "REQUEST_TIMEOUT";
    case 413:
        return "PAYLOAD_TOO_LARGE";
    case 415:
        return "UNSUPPORTED_MEDIA_TYPE";
    case 417:
        return "EXPECTATION_FAILED";
    case 431:
        return "REQUEST_HEADER_FIELDS_TOO_LARGE";
    case 501:
        return "NOT_IMPLEMENTED";
    case 505:
        return "HTTP_VERSION_NOT_SUPPORTED";
    case 409:
        return "CONFLICT";
    case 503:
        return "SERVICE_UNAVAILABLE";
    default:
        return "INTERNAL_SERVER_ERROR";
    }
}

void a2b_result_error(struct a2b_result *res, int status, const char *message)
{
    struct json_buf b = {0};
    struct json j;
    json_init_buf(&j, &b);
    json_object_begin(&j);
    json_key(&j, "status");
    json_string(&j, status_name(status));
    json_key(&j, "code");
    json_int(&j, status);
    json_key(&j, "message");
    json_string(&j, message);
    json_object_end(&j);
    a2b_result_json(res, &b);
    res->status = status;
}

void a2b_result_empty(struct a2b_result *res, int status)
{
    a2b_result_clear(res);
    res->status = status;
}

void a2b_result_up(struct a2b_result *res)
{
    struct json_buf b = {0};
    struct json j;
    json_init_buf(&j, &b);
    json_object_begin(&j);
    json_key(&j, "status");
    json_string(&j, "UP");
    json_object_end(&j);
    a2b_result_json(res, &b);
}

void a2b_result_json(struct a2b_result *res, struct json_buf *b)
{
    mem_free(res->body);
    res->status = 200;
    res->body = b->data;
    res->len = b->len;
    *b = (struct json_buf){0};
}

static bool name_ok(const char *s) { return s && *s && strlen(s) <= A2B_NAME_MAX; }

bool a2b_args_check(enum a2b_op op, const struct a2b_args *a, struct a2b_result *res)
{
    int32_t day;
    switch (op) {
    case A2B_TRANSFERS:
        if (!a->date || !a2b_data_parse_day(a->date, &day)) {
            a2b_result_error(res, 400, "The date should be YYYY-MM-DD");
            return false;
        }
        return true;
    case A2B_BOOK:
        if (!a->description) {
            a2b_result_error(res, 400, "The description should not be null");
            return false;
        }
        return true;
    case A2B_UPDATE_BOOKING:
        if (!a->state || (strcmp(a->state, "BOOKED") && strcmp(a->state, "COMPLETED") &&
                          strcmp(a->state, "CANCELED"))) {
            a2b_result_error(res, 400, "The state should be BOOKED, COMPLETED or CANCELED");
            return false;
        }
        if (!a->description) {
            a2b_result_error(res, 400, "The description should not be null");
            return false;
        }
        return true;
    case A2B_UPDATE_USER:
        if (!name_ok(a->first_name) || !name_ok(a->last_name)) {
            a2b_result_error(res, 400, "The first and last names should have 1 to 50 bytes");
            return false;
        }
        return true;
    default:
        return true;
    }
}

/* Rows as read, strings borrowed from the backend's row. */
struct country_view {
    int64_t id;
    const char *name, *code;
};

struct city_view {
    int64_t id;
    const char *name, *code;
    struct country_view country;
};

struct location_view {
    int64_t id;
    double latitude, longitude;
    struct city_view city;
};

struct transfer_view {
    int64_t id;
    struct location_view origin, destination;
    int64_t capacity;
    const char *start, *end;
    int64_t price_cents;
    const char *description;
};

struct user_view {
    int64_t id;
    const char *first_name, *last_name, *email, *phone;
};

struct booking_view {
    struct user_view user;
    struct transfer_view transfer;
    const char *state, *description;
};

static const char *text(const struct a2b_row *r, int c) { return r->text(r, r->base + c); }
static int64_t integer(const struct a2b_row *r, int c) { return r->integer(r, r->base + c); }
static double real(const struct a2b_row *r, int c) { return r->real(r, r->base + c); }

/* Each reader takes the columns from c on and returns the next one. */
static int read_country(const struct a2b_row *r, int c, struct country_view *v)
{
    v->id = integer(r, c);
    v->name = text(r, c + 1);
    v->code = text(r, c + 2);
    return c + A2B_COLUMNS_COUNTRY;
}

static int read_city(const struct a2b_row *r, int c, struct city_view *v)
{
    v->id = integer(r, c);
    v->name = text(r, c + 1);
    v->code = text(r, c + 2);
    return read_country(r, c + 3, &v->country);
}

static int read_location(const struct a2b_row *r, int c, struct location_view *v)
{
    v->id = integer(r, c);
    v->latitude = real(r, c + 1);
    v->longitude = real(r, c + 2);
    return read_city(r, c + 3, &v->city);
}

static int read_transfer(const struct a2b_row *r, int c, struct transfer_view *v)
{
    v->id = integer(r, c);
    c = read_location(r, c + 1, &v->origin);
    c = read_location(r, c, &v->destination);
    v->capacity = integer(r, c);
    v->start = text(r, c + 1);
    v->end = text(r, c + 2);
    v->price_cents = integer(r, c + 3);
    v->description = text(r, c + 4);
    return c + 5;
}

static int read_user(const struct a2b_row *r, int c, struct user_view *v)
{
    v->id = integer(r, c);
    v->first_name = text(r, c + 1);
    v->last_name = text(r, c + 2);
    v->email = text(r, c + 3);
    v->phone = text(r, c + 4);
    return c + A2B_COLUMNS_USER;
}

static void json_country(struct json *j, const struct country_view *v)
{
    json_object_begin(j);
    json_key(j, "countryId");
    json_int(j, v->id);
    json_key(j, "name");
    json_string(j, v->name);
    json_key(j, "code");
    json_string(j, v->code);
    json_object_end(j);
}

static void json_city(struct json *j, const struct city_view *v)
{
    json_object_begin(j);
    json_key(j, "cityId");
    json_int(j, v->id);
    json_key(j, "country");
    json_country(j, &v->country);
    json_key(j, "name");
    json_string(j, v->name);
    json_key(j, "code");
    json_string(j, v->code);
    json_object_end(j);
}

static void json_location(struct json *j, const struct location_view *v)
{
    json_object_begin(j);
    json_key(j, "locationId");
    json_int(j, v->id);
    json_key(j, "city");
    json_city(j, &v->city);
    json_key(j, "latitude");
    json_number(j, v->latitude);
    json_key(j, "longitude");
    json_number(j, v->longitude);
    json_object_end(j);
}

static void json_transfer(struct json *j, const struct transfer_view *v)
{
    /* Timestamps are 19 bytes; the buffer holds longer ones, truncated. */
    char duration[96];
    snprintf(duration, sizeof duration, "[\"%.40s\",\"%.40s\")", v->start, v->end);
    json_object_begin(j);
    json_key(j, "transferId");
    json_int(j, v->id);
    json_key(j, "origin");
    json_location(j, &v->origin);
    json_key(j, "destination");
    json_location(j, &v->destination);
    json_key(j, "capacity");
    json_int(j, v->capacity);
    json_key(j, "duration");
    json_string(j, duration);
    json_key(j, "price");
    json_fixed(j, v->price_cents, 2);
    json_key(j, "description");
    json_string(j, v->description);
    json_object_end(j);
}

static void json_user(struct json *j, const struct user_view *v)
{
    /* Names are at most A2B_NAME_MAX bytes each (checked on update). */
    char name[2 * A2B_NAME_MAX + 2];
    snprintf(name, sizeof name, "%.50s %.50s", v->first_name, v->last_name);
    json_object_begin(j);
    json_key(j, "id");
    json_int(j, v->id);
    json_key(j, "name");
    json_string(j, name);
    json_key(j, "email");
    json_string(j, v->email);
    json_key(j, "phone");
    json_string(j, v->phone);
    json_object_end(j);
}

void a2b_json_row(struct json *j, enum a2b_op op, const struct a2b_row *r)
{
    switch (op) {
    case A2B_COUNTRIES: {
        struct country_view v;
        read_country(r, 0, &v);
        json_country(j, &v);
        break;
    }
    case A2B_CITIES: {
        struct city_view v;
        read_city(r, 0, &v);
        json_city(j, &v);
        break;
    }
    case A2B_LOCATIONS: {
        struct location_view v;
        read_location(r, 0, &v);
        json_location(j, &v);
        break;
    }
    case A2B_TRANSFERS: {
        struct transfer_view v;
        read_transfer(r, 0, &v);
        json_transfer(j, &v);
        break;
    }
    case A2B_BOOKINGS:
    case A2B_BOOKING: {
        struct booking_view v;
        int c = read_user(r, 0, &v.user);
        c = read_transfer(r, c, &v.transfer);
        v.state = text(r, c);
        v.description = text(r, c + 1);
        json_object_begin(j);
        json_key(j, "user");
        json_user(j, &v.user);
        json_key(j, "transfer");
        json_transfer(j, &v.transfer);
        json_key(j, "state");
        json_string(j, v.state);
        json_key(j, "description");
        json_string(j, v.description);
        json_object_end(j);
        break;
    }
    case A2B_USER: {
        struct user_view v;
        read_user(r, 0, &v);
        json_user(j, &v);
        break;
    }
    default:
        json_null(j);
    }
}
