/* test_prom.c - the Prometheus text writer, byte for byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/prom.h"

static void test_family_and_samples(void **state)
{
    struct prom p;
    prom_init(&p);
    prom_family(&p, "mqtt_clients_connected", PROM_GAUGE, "Clients connected now");
    prom_sample(&p, "mqtt_clients_connected", NULL, 0, 42);
    struct prom_label l[] = {{"route", "/v1/create"}, {"status", "201"}};
    prom_family(&p, "http_requests_total", PROM_COUNTER, "Requests answered");
    prom_sample(&p, "http_requests_total", l, 2, 7);
    assert_string_equal(p.buf, "# HELP mqtt_clients_connected Clients connected now\n"
                               "# TYPE mqtt_clients_connected gauge\n"
                               "mqtt_clients_connected 42\n"
                               "# HELP http_requests_total Requests answered\n"
                               "# TYPE http_requests_total counter\n"
                               "http_requests_total{route=\"/v1/create\",status=\"201\"} 7\n");
    assert_int_equal(p.len, strlen(p.buf));
    prom_reset(&p);
    assert_string_equal(p.buf, "");
    prom_free(&p);
}

static void test_escaping_and_values(void **state)
{
    struct prom p;
    prom_init(&p);
    prom_family(&p, "x", PROM_GAUGE, "back\\slash\nnew \"quoted\"");
    struct prom_label l[] = {{"client", "a\"b\\c\nd"}};
    prom_sample(&p, "x", l, 1, 0.25);
    prom_sample(&p, "x", NULL, 0, INFINITY);
    prom_sample(&p, "x", NULL, 0, -INFINITY);
    prom_sample(&p, "x", NULL, 0, NAN);
    prom_sample(&p, "x", NULL, 0, 1e20);
    assert_string_equal(p.buf, "# HELP x back\\\\slash\\nnew \"quoted\"\n"
                               "# TYPE x gauge\n"
                               "x{client=\"a\\\"b\\\\c\\nd\"} 0.25\n"
                               "x +Inf\nx -Inf\nx NaN\nx 1e+20\n");
    prom_free(&p);
}

static void test_histogram_is_cumulative(void **state)
{
    struct prom p;
    prom_init(&p);
    double bounds[] = {0.005, 0.1, 1};
    uint64_t counts[] = {3, 0, 2};
    struct prom_label l[] = {{"route", "r"}};
    prom_histogram(&p, "lat_seconds", l, 1, bounds, counts, 3, 6, 2.5);
    prom_histogram(&p, "bare", NULL, 0, bounds, counts, 1, 3, 0.01);
    assert_string_equal(p.buf, "lat_seconds_bucket{route=\"r\",le=\"0.005\"} 3\n"
                               "lat_seconds_bucket{route=\"r\",le=\"0.1\"} 3\n"
                               "lat_seconds_bucket{route=\"r\",le=\"1\"} 5\n"
                               "lat_seconds_bucket{route=\"r\",le=\"+Inf\"} 6\n"
                               "lat_seconds_sum{route=\"r\"} 2.5\n"
                               "lat_seconds_count{route=\"r\"} 6\n"
                               "bare_bucket{le=\"0.005\"} 3\n"
                               "bare_bucket{le=\"+Inf\"} 3\n"
                               "bare_sum 0.01\n"
                               "bare_count 3\n");
    prom_free(&p);
}

static void test_grows_past_initial_capacity(void **state)
{
    struct prom p;
    prom_init(&p);
    char value[3000];
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    struct prom_label l[] = {{"k", value}};
    for (int i = 0; i < 10; i++)
        prom_sample(&p, "m", l, 1, i);
    assert_int_equal(p.len, 10 * (strlen("m{k=\"\"} 0\n") + sizeof value - 1));
    assert_int_equal(p.len, strlen(p.buf));
    assert_true(strstr(p.buf, "\"} 9\n") != NULL);
    prom_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_and_samples),
        cmocka_unit_test(test_escaping_and_values),
        cmocka_unit_test(test_histogram_is_cumulative),
        cmocka_unit_test(test_grows_past_initial_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
