/* a2b_data.h - the a2b service's data set, generated deterministically from
 * a seed: the reference's 1 country, 6 cities, 120 locations, 12,000
 * transfers, 200,000 users and 500,000 bookings, or those last three scaled
 * down for tests.
 *
 * Every row is a pure function of (seed, table, id), computed on demand and
 * never stored, so a loader streams it straight into a database and a test
 * can recompute any row to compare. Strings point at static tables or into
 * the row itself; nothing allocates.
 *
 * Fixed with respect to the reference generator (docs/a2b.md):
 *   - transfer dates fall on the A2B_DATA_DAYS days from A2B_DATA_FIRST_DAY,
 *     not all on 1970-01-01;
 *   - phones are unique (the reference indexed email twice);
 *   - (user, transfer) pairs are unique by construction, where the
 *     reference drew random pairs and let duplicates merge.
 */
#ifndef SHOOTOUT_A2B_DATA_H
#define SHOOTOUT_A2B_DATA_H

#include <stdbool.h>
#include <stdint.h>

#define A2B_DATA_COUNTRIES 1
#define A2B_DATA_CITIES 6
/* A transfer's destination is 121 - origin, so locations stay at 120 at
 * every scale. */
#define A2B_DATA_LOCATIONS 120
#define A2B_DATA_TRANSFERS 12000
#define A2B_DATA_USERS 200000
#define A2B_DATA_BOOKINGS 500000

/* Transfer dates: the 30 days from 2025-01-01, as days since 1970-01-01. A
 * fixed epoch rather than "today" keeps a seed's data set the same forever. */
#define A2B_DATA_FIRST_DAY 20089
#define A2B_DATA_DAYS 30

/* At most this many bookings per user, whatever the scale. */
#define A2B_DATA_MAX_USER_BOOKINGS 8

struct a2b_data {
    uint64_t seed;
    uint32_t transfers, users, bookings;
    uint32_t stride; /* coprime with transfers: spreads a user's bookings */
};

struct a2b_country_row {
    int64_t id;
    const char *name, *code;
};

struct a2b_city_row {
    int64_t id, country_id;
    const char *name, *code;
};

struct a2b_location_row {
    int64_t id, city_id;
    double latitude, longitude; /* whole micro-degrees, so they print short */
};

struct a2b_transfer_row {
    int64_t id, origin, destination;
    int capacity;
    char date[11];           /* YYYY-MM-DD */
    char start[20], end[20]; /* the duration, YYYY-MM-DD HH:MM:SS, end > start */
    int64_t price_cents;
    const char *description;
};

struct a2b_user_row {
    int64_t id;
    const char *first_name, *last_name;
    char email[64];
    char phone[20];
};

struct a2b_booking_row {
    int64_t user_id, transfer_id;
    const char *state; /* BOOKED or COMPLETED */
    const char *description;
};

/* Sizes: transfers, users and bookings are the reference's times scale
 * (at least 1 transfer and 1 user; bookings capped so that pairs stay
 * unique). scale 1.0 is the reference data set. */
void a2b_data_init(struct a2b_data *d, uint64_t seed, double scale);

/* Rows by id, 1-based, id within the table's size. */
void a2b_data_country(const struct a2b_data *d, int64_t id, struct a2b_country_row *out);
void a2b_data_city(const struct a2b_data *d, int64_t id, struct a2b_city_row *out);
void a2b_data_location(const struct a2b_data *d, int64_t id, struct a2b_location_row *out);
void a2b_data_transfer(const struct a2b_data *d, int64_t id, struct a2b_transfer_row *out);
void a2b_data_user(const struct a2b_data *d, int64_t id, struct a2b_user_row *out);
/* The bookings of one user, in increasing transfer order (the order a
 * primary key on (user_id, transfer_id) wants them). Returns how many were
 * written to out[0 .. A2B_DATA_MAX_USER_BOOKINGS). Over all users they add
 * up to d->bookings. */
unsigned a2b_data_user_bookings(const struct a2b_data *d, int64_t user_id, struct a2b_booking_row *out);

/* Days since 1970-01-01 <-> YYYY-MM-DD. Parsing is strict: exactly that
 * form, a real calendar date. */
void a2b_data_format_day(int32_t day, char out[11]);
bool a2b_data_parse_day(const char *s, int32_t *day);

#endif
