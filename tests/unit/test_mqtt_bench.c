/* test_mqtt_bench.c - unit tests for the MQTT experiments' protocol and
 * session options: --mqtt-version's spellings (mqtt_bench_options),
 * the row names of each variant (mqtt_load_row_name), the client id
 * prefix (mqtt_bench_mc_config), and
 * mqtt-load's refusals of --session / --offline combinations that cannot
 * work (before any connection is made).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "load/bench.h"
#include "load/mqtt/mqtt_bench.h"
#include "load/mqtt/mqtt_load.h"

/* --mqtt-version arg through the experiments' option table: 0, or -1
 * with the message in err. */
static int parse_version(struct mqtt_bench_opts *m, const char *arg, char err[256])
{
    struct bench_opts o;
    mqtt_bench_init(&o, m, "mqtt-load");
    const struct opt *v = opt_find(mqtt_bench_options, "mqtt-version");
    assert_non_null(v);
    return opt_set(v, m, "--mqtt-version", arg, err, 256);
}

static void test_version_default_is_311(void **state)
{
    struct bench_opts o;
    struct mqtt_bench_opts m;
    mqtt_bench_init(&o, &m, "mqtt-ping");
    assert_int_equal(m.version, 4);
    assert_int_equal(o.port, 1883);
}

static void test_version_spellings(void **state)
{
    struct mqtt_bench_opts o;
    char err[256];
    assert_int_equal(parse_version(&o, "5", err), 0);
    assert_int_equal(o.version, 5);
    assert_int_equal(parse_version(&o, "3.1.1", err), 0);
    assert_int_equal(o.version, 4);
    assert_int_equal(parse_version(&o, "311", err), 0);
    assert_int_equal(o.version, 4);
    assert_int_equal(parse_version(&o, "3.1", err), 0);
    assert_int_equal(o.version, 3);
    assert_int_equal(parse_version(&o, "31", err), 0);
    assert_int_equal(o.version, 3);
}

static void test_version_refusals(void **state)
{
    /* The protocol level and other near misses are refused, not guessed. */
    static const char *const bad[] = {"4", "3", "5.0", "3.1.0", "3.10", "", " 5", "5 ",
                                      "mqttv5", "mqttv31", "v5", "6"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct mqtt_bench_opts o;
        char err[256], want[256];
        if (parse_version(&o, bad[i], err) != -1)
            fail_msg("--mqtt-version '%s' was accepted", bad[i]);
        snprintf(want, sizeof want,
                 "--mqtt-version wants 3.1 (or 31), 3.1.1 (or 311) or 5, not '%s'", bad[i]);
        assert_string_equal(err, want);
        assert_int_equal(o.version, 4);
    }
}

static void expect_name(unsigned version, bool persistent, bool offline, const char *want)
{
    struct bench_opts o;
    struct mqtt_load_opts l = {.conns = 20, .persistent = persistent, .offline = offline};
    mqtt_bench_init(&o, &l.mqtt, "mqtt-load");
    snprintf(o.target, sizeof o.target, "shootout");
    l.mqtt.version = (uint8_t)version;
    struct result_row row = {0};
    mqtt_load_row_name(&row, &o, &l);
    assert_string_equal(row.name, want);
}

static void test_row_names(void **state)
{
    expect_name(4, false, false, "mqtt-load/shootout/20c");
    expect_name(5, false, false, "mqtt-load/shootout/mqtt5/20c");
    expect_name(4, true, false, "mqtt-load/shootout/persistent/20c");
    expect_name(4, true, true, "mqtt-load/shootout/offline/20c");
    expect_name(5, true, true, "mqtt-load/shootout/mqtt5-offline/20c");
    expect_name(5, true, false, "mqtt-load/shootout/mqtt5-persistent/20c");
    expect_name(3, false, false, "mqtt-load/shootout/mqtt31/20c");
    expect_name(3, true, true, "mqtt-load/shootout/mqtt31-offline/20c");
}

/* MQTT 3.1.1 servers must accept client ids of 1 to 23 characters
 * [MQTT-3.1.3-5] and may refuse longer ones, and MQTT 3.1 allows no
 * longer ones: the longest id, at the largest --conns and --runs, stays
 * within that. */
static void test_client_ids_fit_23_characters(void **state)
{
    struct bench_opts o;
    struct mqtt_bench_opts m;
    mqtt_bench_init(&o, &m, "mqtt-load");
    char prefix[32], want[32];
    struct mc_config cfg = mqtt_bench_mc_config(&o, &m, "ld", 999, 1000000, 1, prefix);
    snprintf(want, sizeof want, "ld%08x.999", (unsigned)m.id_token);
    assert_string_equal(cfg.client_id_prefix, want);
    assert_true(strlen(prefix) + strlen("-999999") <= 23);
    assert_int_equal(cfg.version, 4);
}

static int load_main(int argc, const char **argv)
{
    struct result_context ctx = {0};
    return mqtt_load_main(argc, (char **)argv, &ctx);
}

static void test_load_refuses_impossible_sessions(void **state)
{
    const char *offline_clean[] = {"mqtt-load", "--offline", "--qos", "1"};
    assert_int_equal(load_main(4, offline_clean), BENCH_EXIT_USAGE);
    const char *offline_qos0[] = {"mqtt-load", "--session", "persistent", "--offline"};
    assert_int_equal(load_main(4, offline_qos0), BENCH_EXIT_USAGE);
    const char *bad_session[] = {"mqtt-load", "--session", "Persistent"};
    assert_int_equal(load_main(3, bad_session), BENCH_EXIT_USAGE);
    const char *bad_version[] = {"mqtt-load", "--mqtt-version", "4"};
    assert_int_equal(load_main(3, bad_version), BENCH_EXIT_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_default_is_311),
        cmocka_unit_test(test_version_spellings),
        cmocka_unit_test(test_version_refusals),
        cmocka_unit_test(test_row_names),
        cmocka_unit_test(test_client_ids_fit_23_characters),
        cmocka_unit_test(test_load_refuses_impossible_sessions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
