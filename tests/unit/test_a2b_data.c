/* test_a2b_data.c - the a2b data set: sizes, determinism, the constraints
 * the schema relies on (unique emails, phones and bookings), real dates;
 * and the JSON writer's compact buffer output that the a2b bodies use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "a2b/a2b_api.h"
#include "a2b/a2b_data.h"
#include "core/json.h"
#include "core/mem.h"

static void test_sizes(void **state)
{
    struct a2b_data d;
    a2b_data_init(&d, 1, 1.0);
    assert_int_equal(d.transfers, 12000);
    assert_int_equal(d.users, 200000);
    assert_int_equal(d.bookings, 500000);
    a2b_data_init(&d, 1, 0.01);
    assert_int_equal(d.transfers, 120);
    assert_int_equal(d.users, 2000);
    assert_int_equal(d.bookings, 5000);
    /* Tiny scales keep one transfer and one user, and no more bookings
     * than unique pairs allow. */
    a2b_data_init(&d, 1, 1e-9);
    assert_int_equal(d.transfers, 1);
    assert_int_equal(d.users, 1);
    assert_int_equal(d.bookings, 0);
    a2b_data_init(&d, 1, 0.0001);
    assert_int_equal(d.transfers, 1);
    assert_int_equal(d.users, 20);
    assert_int_equal(d.bookings, 20);
}

static void test_deterministic(void **state)
{
    struct a2b_data a, b, c;
    a2b_data_init(&a, 42, 0.01);
    a2b_data_init(&b, 42, 0.01);
    a2b_data_init(&c, 43, 0.01);
    struct a2b_user_row ua, ub, uc;
    struct a2b_transfer_row ta, tb, tc;
    int differ = 0;
    for (int64_t id = 1; id <= 100; id++) {
        a2b_data_user(&a, id, &ua);
        a2b_data_user(&b, id, &ub);
        a2b_data_user(&c, id, &uc);
        assert_string_equal(ua.email, ub.email);
        assert_string_equal(ua.phone, ub.phone);
        assert_ptr_equal(ua.first_name, ub.first_name);
        assert_ptr_equal(ua.last_name, ub.last_name);
        differ += strcmp(ua.first_name, uc.first_name) != 0 || strcmp(ua.last_name, uc.last_name) != 0;
        a2b_data_transfer(&a, id, &ta);
        a2b_data_transfer(&b, id, &tb);
        a2b_data_transfer(&c, id, &tc);
        assert_true(ta.origin == tb.origin && ta.capacity == tb.capacity &&
                    ta.price_cents == tb.price_cents && ta.description == tb.description);
        assert_string_equal(ta.date, tb.date);
        assert_string_equal(ta.start, tb.start);
        assert_string_equal(ta.end, tb.end);
        differ += ta.origin != tc.origin;
    }
    assert_true(differ > 100);
    /* Pinned, so that a change of generator (which changes every data set
     * and every recorded result) is a decision, not an accident. */
    a2b_data_user(&a, 1, &ua);
    assert_string_equal(ua.email, "zmicier.lukashevich.1@example.com");
    assert_string_equal(ua.phone, "+375297368787");
}

static int cmp_str(const void *x, const void *y) { return strcmp(x, y); }

static void assert_unique(char *rows, size_t n, size_t width)
{
    qsort(rows, n, width, cmp_str);
    for (size_t i = 1; i < n; i++)
        assert_true(strcmp(rows + (i - 1) * width, rows + i * width) != 0);
}

static void test_users_unique(void **state)
{
    struct a2b_data d;
    a2b_data_init(&d, 7, 1.0);
    char(*emails)[64] = mem_alloc(d.users * sizeof *emails);
    char(*phones)[20] = mem_alloc(d.users * sizeof *phones);
    for (uint32_t i = 0; i < d.users; i++) {
        struct a2b_user_row u;
        a2b_data_user(&d, i + 1, &u);
        assert_int_equal(u.id, i + 1);
        assert_true(strlen(u.first_name) > 0 && strlen(u.first_name) <= A2B_NAME_MAX);
        assert_true(strlen(u.last_name) > 0 && strlen(u.last_name) <= A2B_NAME_MAX);
        assert_int_equal(strlen(u.phone), 13);
        memcpy(emails[i], u.email, sizeof u.email);
        memcpy(phones[i], u.phone, sizeof u.phone);
    }
    assert_unique(&emails[0][0], d.users, sizeof emails[0]);
    assert_unique(&phones[0][0], d.users, sizeof phones[0]);
    mem_free(emails);
    mem_free(phones);
}

static void test_bookings(void **state)
{
    struct a2b_data d;
    a2b_data_init(&d, 7, 1.0);
    uint64_t total = 0, booked = 0;
    for (int64_t u = 1; u <= d.users; u++) {
        struct a2b_booking_row b[A2B_DATA_MAX_USER_BOOKINGS];
        unsigned n = a2b_data_user_bookings(&d, u, b);
        assert_true(n == 2 || n == 3);
        for (unsigned i = 0; i < n; i++) {
            assert_int_equal(b[i].user_id, u);
            assert_true(b[i].transfer_id >= 1 && b[i].transfer_id <= d.transfers);
            /* Strictly increasing: unique (user, transfer) pairs, in key order. */
            if (i)
                assert_true(b[i].transfer_id > b[i - 1].transfer_id);
            assert_true(!strcmp(b[i].state, "BOOKED") || !strcmp(b[i].state, "COMPLETED"));
            booked += !strcmp(b[i].state, "BOOKED");
            assert_non_null(b[i].description);
        }
        total += n;
    }
    assert_int_equal(total, 500000);
    assert_true(booked > 240000 && booked < 260000);
}

static void test_transfers(void **state)
{
    struct a2b_data d;
    a2b_data_init(&d, 7, 1.0);
    int32_t first = INT32_MAX, last = 0;
    for (int64_t id = 1; id <= d.transfers; id++) {
        struct a2b_transfer_row t;
        a2b_data_transfer(&d, id, &t);
        assert_true(t.origin >= 1 && t.origin <= A2B_DATA_LOCATIONS);
        assert_int_equal(t.destination, A2B_DATA_LOCATIONS + 1 - t.origin);
        assert_true(t.capacity > 0);
        assert_true(t.price_cents >= 100 && t.price_cents <= 9999);
        int32_t day;
        assert_true(a2b_data_parse_day(t.date, &day));
        first = day < first ? day : first;
        last = day > last ? day : last;
        assert_true(strncmp(t.start, t.date, 10) == 0);
        assert_true(strcmp(t.start, t.end) < 0);
        assert_true(strncmp(t.date, "1970", 4) != 0);
    }
    assert_int_equal(first, A2B_DATA_FIRST_DAY);
    assert_int_equal(last, A2B_DATA_FIRST_DAY + A2B_DATA_DAYS - 1);
}

static void test_locations(void **state)
{
    struct a2b_data d;
    a2b_data_init(&d, 7, 1.0);
    int per_city[A2B_DATA_CITIES + 1] = {0};
    for (int64_t id = 1; id <= A2B_DATA_LOCATIONS; id++) {
        struct a2b_location_row l;
        struct a2b_city_row c;
        a2b_data_location(&d, id, &l);
        a2b_data_city(&d, l.city_id, &c);
        per_city[l.city_id]++;
        /* Belarus lies within 51-57 N, 23-33 E. */
        assert_true(l.latitude > 51 && l.latitude < 57);
        assert_true(l.longitude > 23 && l.longitude < 33);
    }
    for (int c = 1; c <= A2B_DATA_CITIES; c++)
        assert_true(per_city[c] > 0);
    struct a2b_city_row minsk;
    a2b_data_city(&d, 6, &minsk);
    assert_string_equal(minsk.name, "Minsk");
    assert_int_equal(minsk.country_id, 1);
}

static void test_days(void **state)
{
    char s[11];
    a2b_data_format_day(0, s);
    assert_string_equal(s, "1970-01-01");
    a2b_data_format_day(A2B_DATA_FIRST_DAY, s);
    assert_string_equal(s, "2025-01-01");
    int32_t day;
    for (int32_t d = -1000; d < 40000; d += 7) {
        a2b_data_format_day(d, s);
        assert_true(a2b_data_parse_day(s, &day));
        assert_int_equal(day, d);
    }
    assert_true(a2b_data_parse_day("2024-02-29", &day));
    static const char *const bad[] = {"2025-02-29", "1900-02-29", "2025-13-01", "2025-00-10",
                                      "2025-04-31", "2025-1-01",  "2025-01-01x", "2025/01/01",
                                      "",           "20250101"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(a2b_data_parse_day(bad[i], &day));
}

static void test_json_buf(void **state)
{
    struct json_buf b = {0};
    struct json j;
    json_init_buf(&j, &b);
    json_object_begin(&j);
    json_key(&j, "s");
    json_string(&j, "a\"b\\c\nd\te\x01 \xd0\x9c");
    json_key(&j, "n");
    json_array_begin(&j);
    json_int(&j, INT64_MIN);
    json_fixed(&j, 4217, 2);
    json_fixed(&j, 5, 2);
    json_fixed(&j, -5, 2);
    json_fixed(&j, 7, 0);
    json_number(&j, 53.9045);
    json_null(&j);
    json_array_end(&j);
    json_key(&j, "e");
    json_object_begin(&j);
    json_object_end(&j);
    json_object_end(&j);
    assert_string_equal(b.data, "{\"s\":\"a\\\"b\\\\c\\nd\\te\\u0001 \xd0\x9c\","
                                "\"n\":[-9223372036854775808,42.17,0.05,-0.05,7,53.9045,null],"
                                "\"e\":{}}");
    assert_int_equal(b.len, strlen(b.data));
    json_buf_free(&b);
    assert_null(b.data);
}

/* The FILE sink still writes what the result files always had. */
static void test_json_file_unchanged(void **state)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    struct json j;
    json_init(&j, f);
    json_object_begin(&j);
    json_key(&j, "a");
    json_array_begin(&j);
    json_number(&j, 0.1);
    json_string(&j, "x\"");
    json_array_end(&j);
    json_object_end(&j);
    fclose(f);
    assert_string_equal(text, "{\n  \"a\": [\n    0.1,\n    \"x\\\"\"\n  ]\n}\n");
    free(text);
}

static void test_error_body(void **state)
{
    struct a2b_result r = {0};
    a2b_result_error(&r, 404, "User not found");
    assert_int_equal(r.status, 404);
    assert_string_equal(r.body, "{\"status\":\"NOT_FOUND\",\"code\":404,\"message\":\"User not found\"}");
    a2b_result_error(&r, 503, "busy");
    assert_string_equal(r.body, "{\"status\":\"SERVICE_UNAVAILABLE\",\"code\":503,\"message\":\"busy\"}");
    a2b_result_empty(&r, 204);
    assert_null(r.body);
    assert_int_equal(r.status, 204);
    a2b_result_clear(&r);
}

static void test_args_check(void **state)
{
    struct a2b_result r = {0};
    struct a2b_args a = {.date = "2025-01-05", .state = "CANCELED", .description = "",
                         .first_name = "A", .last_name = "B"};
    for (int op = 0; op < A2B_OP_COUNT; op++)
        assert_true(a2b_args_check(op, &a, &r));
    assert_null(r.body);
    struct a2b_args bad = a;
    bad.date = "2025-02-30";
    assert_false(a2b_args_check(A2B_TRANSFERS, &bad, &r));
    assert_int_equal(r.status, 400);
    bad = a;
    bad.date = NULL;
    assert_false(a2b_args_check(A2B_TRANSFERS, &bad, &r));
    bad = a;
    bad.state = "booked";
    assert_false(a2b_args_check(A2B_UPDATE_BOOKING, &bad, &r));
    bad = a;
    bad.description = NULL;
    assert_false(a2b_args_check(A2B_UPDATE_BOOKING, &bad, &r));
    assert_false(a2b_args_check(A2B_BOOK, &bad, &r));
    bad = a;
    bad.first_name = "";
    assert_false(a2b_args_check(A2B_UPDATE_USER, &bad, &r));
    bad = a;
    bad.last_name = "0123456789012345678901234567890123456789012345678901";
    assert_false(a2b_args_check(A2B_UPDATE_USER, &bad, &r));
    bad.last_name = "01234567890123456789012345678901234567890123456789";
    assert_true(a2b_args_check(A2B_UPDATE_USER, &bad, &r));
    a2b_result_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_users_unique), cmocka_unit_test(test_bookings),
        cmocka_unit_test(test_transfers),    cmocka_unit_test(test_locations),
        cmocka_unit_test(test_days),         cmocka_unit_test(test_json_buf),
        cmocka_unit_test(test_json_file_unchanged), cmocka_unit_test(test_error_body),
        cmocka_unit_test(test_args_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
