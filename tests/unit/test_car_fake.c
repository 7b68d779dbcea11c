/* test_car_fake.c - unit tests for the random Car/Driver records
 * (car_fake.c): ranges and formats, determinism per seed, no string cut
 * short, and every record valid UTF-8 that JSON-encodes and parses back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "car/car_fake.h"

#define RECORDS 100000

static struct car_fake_record r1, r2;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static unsigned num(const char *s, int n)
{
    unsigned v = 0;
    for (int i = 0; i < n; i++)
        v = v * 10 + (unsigned)(s[i] - '0');
    return v;
}

/* idNumber().valid(): ddd-dd-dddd, area 001-899 but not 666, group and
 * serial not zero. */
static void check_ssn(const char *id)
{
    assert_int_equal(strlen(id), 11);
    for (int i = 0; i < 11; i++) {
        if (i == 3 || i == 6)
            assert_int_equal(id[i], '-');
        else if (!is_digit(id[i]))
            fail_msg("driverId %s: not a digit at %d", id, i);
    }
    unsigned area = num(id, 3), group = num(id + 4, 2), serial = num(id + 7, 4);
    if (area == 0 || area == 666 || area >= 900 || group == 0 || serial == 0)
        fail_msg("driverId %s is not a valid SSN", id);
}

/* A string that fills its buffer to the last byte may have been cut. */
static void check_fits(const char *s, size_t cap)
{
    size_t n = strlen(s);
    assert_true(n > 0);
    if (n >= cap - 1)
        fail_msg("'%s' fills its %zu-byte buffer: may have been cut", s, cap);
}

static void test_ranges_and_formats(void **state)
{
    struct car_fake g;
    car_fake_seed(&g, 1);
    unsigned year_lo = UINT32_MAX, year_hi = 0, mile_lo = UINT32_MAX, mile_hi = 0;
    bool three_names = false, hyphen = false, suffix = false;
    for (int i = 0; i < RECORDS; i++) {
        const Com__Stevenpg__Rvg__Message *m = car_fake_next(&g, &r1);
        assert_ptr_equal(m, &r1.rec.msg);
        assert_ptr_equal(m->car, &r1.rec.car);
        assert_ptr_equal(m->driver, &r1.rec.driver);
        assert_ptr_equal(m->car->make, r1.make);
        assert_ptr_equal(m->driver->driverid, r1.driver_id);
        unsigned y = m->car->year, mi = m->car->mileage;
        if (y < 1990 || y > 2021 || mi < 10000 || mi > 200000)
            fail_msg("record %d: year %u, mileage %u out of range", i, y, mi);
        year_lo = y < year_lo ? y : year_lo;
        year_hi = y > year_hi ? y : year_hi;
        mile_lo = mi < mile_lo ? mi : mile_lo;
        mile_hi = mi > mile_hi ? mi : mile_hi;
        check_ssn(r1.driver_id);
        check_fits(r1.make, sizeof r1.make);
        check_fits(r1.model, sizeof r1.model);
        check_fits(r1.trim, sizeof r1.trim);
        check_fits(r1.color, sizeof r1.color);
        check_fits(r1.firstname, sizeof r1.firstname);
        check_fits(r1.lastname, sizeof r1.lastname);
        three_names |= strstr(r1.make, " and ") && strchr(r1.make, ',');
        hyphen |= strchr(r1.make, '-') != NULL;
        suffix |= strstr(r1.make, " LLC") != NULL;
        /* Product names are three words or more ("Heavy Duty ..."). */
        assert_non_null(strchr(strchr(r1.trim, ' ') + 1, ' '));
    }
    /* The whole range is reached, ends included. */
    assert_int_equal(year_lo, 1990);
    assert_int_equal(year_hi, 2021);
    assert_true(mile_lo < 10100 && mile_hi > 199900);
    assert_true(three_names && hyphen && suffix);
}

static void test_same_seed_same_records(void **state)
{
    struct car_fake a, b;
    car_fake_seed(&a, 42);
    car_fake_seed(&b, 42);
    char ja[512], jb[512];
    for (int i = 0; i < 1000; i++) {
        size_t la, lb;
        assert_int_equal(car_json_encode(car_fake_next(&a, &r1), ja, sizeof ja, &la), CAR_JSON_OK);
        assert_int_equal(car_json_encode(car_fake_next(&b, &r2), jb, sizeof jb, &lb), CAR_JSON_OK);
        assert_int_equal(la, lb);
        assert_memory_equal(ja, jb, la);
    }
}

static void test_seeds_differ(void **state)
{
    struct car_fake a, b;
    car_fake_seed(&a, 1);
    car_fake_seed(&b, 2);
    unsigned same = 0;
    for (int i = 0; i < 100; i++) {
        car_fake_next(&a, &r1);
        car_fake_next(&b, &r2);
        same += !strcmp(r1.driver_id, r2.driver_id) && r1.rec.car.mileage == r2.rec.car.mileage;
    }
    assert_int_equal(same, 0);
}

/* Successive records differ: the sequence moves on. */
static void test_records_vary(void **state)
{
    struct car_fake g;
    car_fake_seed(&g, 0);
    char seen_color[64][24];
    unsigned ncolors = 0, gray = 0;
    for (int i = 0; i < 10000; i++) {
        car_fake_next(&g, &r1);
        gray += !strcmp(r1.color, "gray");
        unsigned k = 0;
        while (k < ncolors && strcmp(seen_color[k], r1.color))
            k++;
        if (k == ncolors && ncolors < 64)
            strcpy(seen_color[ncolors++], r1.color);
    }
    assert_true(ncolors >= 20);
    assert_true(gray > 0);
}

/* car_json_encode checks UTF-8; what it writes must parse back to the
 * same record. */
static void test_json_round_trip(void **state)
{
    struct car_fake g;
    car_fake_seed(&g, 7);
    static char json[1024], strings[1024];
    bool non_ascii = false;
    for (int i = 0; i < RECORDS; i++) {
        const Com__Stevenpg__Rvg__Message *m = car_fake_next(&g, &r1);
        size_t len;
        enum car_json_err rc = car_json_encode(m, json, sizeof json, &len);
        if (rc != CAR_JSON_OK)
            fail_msg("record %d: %s", i, car_json_strerror(rc));
        for (size_t k = 0; k < len; k++)
            non_ascii |= (unsigned char)json[k] >= 0x80;
        struct car_record back;
        struct car_json_error err;
        rc = car_json_parse(json, len, &back, strings, sizeof strings, &err);
        if (rc != CAR_JSON_OK)
            fail_msg("record %d: %.*s: %s", i, (int)len, json, car_json_strerror(rc));
        assert_string_equal(back.car.make, r1.make);
        assert_string_equal(back.car.trim, r1.trim);
        assert_string_equal(back.driver.lastname, r1.lastname);
        assert_string_equal(back.driver.driverid, r1.driver_id);
        assert_int_equal(back.car.year, r1.rec.car.year);
        assert_int_equal(back.car.mileage, r1.rec.car.mileage);
    }
    assert_true(non_ascii); /* the UTF-8 check had something to check */
}

/* The record also packs as protobuf (the gRPC side) and back. */
static void test_protobuf_round_trip(void **state)
{
    struct car_fake g;
    car_fake_seed(&g, 9);
    uint8_t buf[512];
    for (int i = 0; i < 1000; i++) {
        const Com__Stevenpg__Rvg__Message *m = car_fake_next(&g, &r1);
        size_t n = com__stevenpg__rvg__message__get_packed_size(m);
        assert_true(n <= sizeof buf);
        assert_int_equal(com__stevenpg__rvg__message__pack(m, buf), n);
        Com__Stevenpg__Rvg__Message *back = com__stevenpg__rvg__message__unpack(NULL, n, buf);
        assert_non_null(back);
        assert_string_equal(back->car->model, r1.model);
        assert_string_equal(back->driver->firstname, r1.firstname);
        com__stevenpg__rvg__message__free_unpacked(back, NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranges_and_formats),
        cmocka_unit_test(test_same_seed_same_records),
        cmocka_unit_test(test_seeds_differ),
        cmocka_unit_test(test_records_vary),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_protobuf_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
