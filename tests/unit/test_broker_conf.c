/* test_broker_conf.c - broker settings by name: flags and mosquitto.conf
 * style files share one table of names, ranges and meanings; every entry
 * of that table, given as a flag on a command line and as its keyword in
 * a file, sets the same field to the same value. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/broker_conf.h"
#include "core/opt.h"

static struct broker_config cfg;
static char err[512];

static int setup(void **state)
{
    broker_config_defaults(&cfg);
    err[0] = '\0';
    return 0;
}

static void test_flag_and_keyword_names_set_the_same_field(void **state)
{
    assert_int_equal(broker_conf_set(&cfg, "max-connections", "7", err, sizeof err), 0);
    assert_int_equal(cfg.max_connections, 7);
    assert_int_equal(broker_conf_set(&cfg, "max_connections", "9", err, sizeof err), 0);
    assert_int_equal(cfg.max_connections, 9);
    assert_int_equal(broker_conf_set(&cfg, "queue-qos0", "true", err, sizeof err), 0);
    assert_true(cfg.queue_qos0);
    assert_int_equal(broker_conf_set(&cfg, "queue_qos0_messages", "false", err, sizeof err), 0);
    assert_false(cfg.queue_qos0);
    assert_int_equal(broker_conf_set(&cfg, "connect_timeout", "3", err, sizeof err), 0);
    assert_int_equal(cfg.connect_timeout_ms, 3000);
    assert_int_equal(broker_conf_set(&cfg, "max-output-bytes", "65536", err, sizeof err), 0);
    assert_int_equal(cfg.max_output, 65536);
    assert_int_equal(cfg.max_keepalive, 0); /* no limit unless asked */
    assert_int_equal(broker_conf_set(&cfg, "max_keepalive", "30", err, sizeof err), 0);
    assert_int_equal(cfg.max_keepalive, 30);
    assert_int_equal(broker_conf_set(&cfg, "max-keepalive", "65535", err, sizeof err), 0);
    assert_int_equal(cfg.max_keepalive, 65535);
    assert_int_equal(cfg.packet_timeout_ms, 10000);
    assert_int_equal(cfg.min_packet_rate, 4096);
    assert_int_equal(broker_conf_set(&cfg, "packet_timeout", "3", err, sizeof err), 0);
    assert_int_equal(cfg.packet_timeout_ms, 3000);
    assert_int_equal(broker_conf_set(&cfg, "min-packet-rate", "100", err, sizeof err), 0);
    assert_int_equal(cfg.min_packet_rate, 100);
    assert_int_equal(cfg.threads, 0); /* one loop per online CPU unless asked */
    assert_int_equal(broker_conf_set(&cfg, "threads", "1", err, sizeof err), 0);
    assert_int_equal(cfg.threads, 1);
    assert_int_equal(broker_conf_set(&cfg, "threads", "4", err, sizeof err), 0);
    assert_int_equal(cfg.threads, 4);
}

static void test_ranges_and_bad_values_refused(void **state)
{
    struct broker_config before = cfg;
    assert_int_equal(broker_conf_set(&cfg, "port", "65536", err, sizeof err), -1);
    assert_non_null(strstr(err, "port wants a whole number from 0 to 65535, not '65536'"));
    assert_int_equal(broker_conf_set(&cfg, "max_inflight_messages", "0", err, sizeof err), -1);
    assert_int_equal(broker_conf_set(&cfg, "max_packet_size", "-1", err, sizeof err), -1);
    assert_int_equal(broker_conf_set(&cfg, "max_keepalive", "65536", err, sizeof err), -1);
    assert_int_equal(broker_conf_set(&cfg, "packet_timeout", "0", err, sizeof err), -1);
    assert_int_equal(broker_conf_set(&cfg, "min_packet_rate", "0", err, sizeof err), -1);
    assert_int_equal(broker_conf_set(&cfg, "threads", "257", err, sizeof err), -1);
    assert_int_equal(broker_conf_set(&cfg, "queue_qos0_messages", "yes", err, sizeof err), -1);
    assert_non_null(strstr(err, "true or false"));
    assert_int_equal(broker_conf_set(&cfg, "no_such_thing", "1", err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown setting 'no_such_thing'"));
    assert_memory_equal(&cfg, &before, sizeof cfg);
}

static void test_bind_is_copied(void **state)
{
    char value[] = "::1";
    assert_int_equal(broker_conf_set(&cfg, "bind", value, err, sizeof err), 0);
    value[0] = 'x';
    assert_string_equal(cfg.bind, "::1");
}

static void test_file_with_mosquitto_keywords(void **state)
{
    const char *text = "# a migrated mosquitto.conf\n"
                       "\n"
                       "per_listener_settings false\n"
                       "listener 18999 127.0.0.2\n"
                       "allow_anonymous true\n"
                       "persistence false\n"
                       "log_dest stderr\n"
                       "log_type all\n"
                       "  max_connections 50\n"
                       "max_queued_messages\t30\r\n"
                       "max_inflight_messages 5\n"
                       "queue_qos0_messages true\n";
    assert_int_equal(broker_conf_parse(&cfg, text, "m.conf", err, sizeof err), 0);
    assert_int_equal(cfg.port, 18999);
    assert_string_equal(cfg.bind, "127.0.0.2");
    assert_int_equal(cfg.max_connections, 50);
    assert_int_equal(cfg.max_queued, 30);
    assert_int_equal(cfg.max_inflight, 5);
    assert_true(cfg.queue_qos0);
}

static void test_auth_and_metrics_keywords(void **state)
{
    const char *text = "password_file /etc/mosquitto/passwd\n"
                       "acl_file acl.txt\n"
                       "allow_anonymous false\n"
                       "metrics_port 9234\n"
                       "connection_messages false\n";
    assert_true(cfg.auth.allow_anonymous);
    assert_int_equal(cfg.obs.metrics_port, -1);
    assert_true(cfg.obs.connection_messages);
    assert_int_equal(broker_conf_parse(&cfg, text, "a.conf", err, sizeof err), 0);
    assert_string_equal(cfg.auth.password_file, "/etc/mosquitto/passwd");
    assert_string_equal(cfg.auth.acl_file, "acl.txt");
    assert_false(cfg.auth.allow_anonymous);
    assert_int_equal(cfg.obs.metrics_port, 9234);
    assert_false(cfg.obs.connection_messages);
    assert_int_equal(broker_conf_set(&cfg, "acl-file", "other", err, sizeof err), 0);
    assert_string_equal(cfg.auth.acl_file, "other");
    char longname[600];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(broker_conf_set(&cfg, "password-file", longname, err, sizeof err), -1);
    assert_non_null(strstr(err, "password-file wants a file name shorter than 512 bytes"));
}

static void test_listeners(void **state)
{
    const char *text = "certfile /d/ca.pem\n"
                       "listener 1883\n"
                       "listener 8883 ::1\n"
                       "certfile /c.pem\n"
                       "require_certificate true\n"
                       "use_identity_as_username true\n"
                       "tls_version tlsv1.3\n"
                       "listener 9001\n"
                       "protocol websockets\n"
                       "max_connections 7\n";
    assert_int_equal(broker_conf_parse(&cfg, text, "l.conf", err, sizeof err), 0);
    assert_int_equal(cfg.port, 1883);
    assert_int_equal(cfg.listeners.n, 3);
    assert_string_equal(cfg.listeners.v[0].certfile, "/d/ca.pem");
    assert_int_equal(cfg.listeners.v[1].port, 8883);
    assert_string_equal(cfg.listeners.v[1].bind, "::1");
    assert_string_equal(cfg.listeners.v[1].certfile, "/c.pem");
    assert_true(cfg.listeners.v[1].require_certificate);
    assert_true(cfg.listeners.v[1].use_identity_as_username);
    assert_string_equal(cfg.listeners.v[1].tls_version, "tlsv1.3");
    assert_false(cfg.listeners.v[1].websockets);
    assert_true(cfg.listeners.v[2].websockets);
    assert_string_equal(cfg.listeners.v[2].certfile, "");
    assert_int_equal(cfg.max_connections, 7);
}

static void test_file_errors_name_the_line(void **state)
{
    assert_int_equal(broker_conf_parse(&cfg, "port 1883\nmax_connections lots\n", "b.conf", err,
                                       sizeof err),
                     -1);
    assert_non_null(strstr(err, "b.conf:2: max_connections wants a whole number"));
    assert_int_equal(broker_conf_parse(&cfg, "allow_anonymous no\n", "c.conf", err, sizeof err), -1);
    assert_non_null(strstr(err, "c.conf:1: allow_anonymous wants true or false, not 'no'"));
    assert_int_equal(broker_conf_parse(&cfg, "persistence maybe\n", "d.conf", err, sizeof err), -1);
    assert_non_null(strstr(err, "d.conf:1: persistence wants true or false, not 'maybe'"));
    assert_int_equal(
        broker_conf_parse(&cfg, "listener 1\nlistener 2\nprotocol ws\n", "e.conf", err, sizeof err),
        -1);
    assert_non_null(strstr(err, "e.conf:3: protocol wants mqtt or websockets"));
    assert_int_equal(broker_conf_parse(&cfg, "max_connections 1 2\n", "f.conf", err, sizeof err), -1);
    assert_non_null(strstr(err, "f.conf:1: max_connections wants exactly one value"));
    assert_int_equal(broker_conf_parse(&cfg, "auth_plugin /etc/p\n", "g.conf", err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown setting 'auth_plugin'"));
}

/* A value other than the default for each setting. */
static const char *other_value(const struct opt *o, char *buf, size_t len)
{
    switch (o->kind) {
    case OPT_UINT:
        snprintf(buf, len, "%llu", (unsigned long long)o->max);
        return buf;
    case OPT_BOOL:
        return "false";
    case OPT_ENUM: /* the first choice that is not the default */
        for (const struct opt_choice *c = o->choices; c->name; c++)
            if (!o->def || strcmp(c->name, o->def))
                return c->name;
        return NULL;
    case OPT_CALL: /* an address or a file name; NATS tokens for the cluster's prefix */
        return strcmp(o->name, "cluster-prefix") ? "::1" : "site-1";
    default:
        return NULL; /* a flag: set on the command line without a value */
    }
}

static void test_every_flag_is_a_keyword_too(void **state)
{
    static struct broker_config by_flag, by_keyword, defaults;
    broker_config_defaults(&defaults);
    defaults.bind = NULL;
    for (const struct opt *o = broker_options; o->kind != OPT_END; o++) {
        char buf[32], argv_value[64];
        const char *value = other_value(o, buf, sizeof buf);
        assert_non_null(o->keyword);
        /* The command line, as the broker's main parses it. */
        broker_config_defaults(&by_flag);
        snprintf(argv_value, sizeof argv_value, "--%s", o->name);
        char *argv[] = {"broker", argv_value, (char *)value, NULL};
        const struct opt_table tables[] = {{broker_options, 0}, {NULL, 0}};
        const struct opt_cmd cmd = {.head = "", .tables = tables};
        struct opt_error e;
        assert_int_equal(opt_parse(&cmd, value ? 3 : 2, argv, &by_flag, &e), OPT_OK);
        /* The file. */
        char line[128];
        broker_config_defaults(&by_keyword);
        snprintf(line, sizeof line, "%s %s\n", o->keyword, value ? value : "true");
        if (broker_conf_parse(&by_keyword, line, "t.conf", err, sizeof err) < 0)
            fail_msg("%s: %s", line, err);
        /* bind points into its own struct: compared as text. */
        assert_string_equal(by_flag.bind, by_keyword.bind);
        by_flag.bind = by_keyword.bind = NULL;
        if (memcmp(&by_flag, &by_keyword, sizeof by_flag))
            fail_msg("--%s and %s set different values", o->name, o->keyword);
        if (!memcmp(&by_flag, &defaults, sizeof defaults))
            fail_msg("--%s %s left the default", o->name, value ? value : "");
    }
}

static void test_load_missing_file(void **state)
{
    assert_int_equal(broker_conf_load(&cfg, "/nonexistent/shootout.conf", err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read /nonexistent/shootout.conf"));
}

static void test_load_file(void **state)
{
    char path[] = "/tmp/shootout-conf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "port 0\nmax_packet_size 4096";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    int rc = broker_conf_load(&cfg, path, err, sizeof err);
    unlink(path);
    assert_int_equal(rc, 0);
    assert_int_equal(cfg.port, 0);
    assert_int_equal(cfg.max_packet_size, 4096);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_flag_and_keyword_names_set_the_same_field, setup),
        cmocka_unit_test_setup(test_ranges_and_bad_values_refused, setup),
        cmocka_unit_test_setup(test_bind_is_copied, setup),
        cmocka_unit_test_setup(test_file_with_mosquitto_keywords, setup),
        cmocka_unit_test_setup(test_auth_and_metrics_keywords, setup),
        cmocka_unit_test_setup(test_listeners, setup),
        cmocka_unit_test_setup(test_file_errors_name_the_line, setup),
        cmocka_unit_test_setup(test_every_flag_is_a_keyword_too, setup),
        cmocka_unit_test_setup(test_load_missing_file, setup),
        cmocka_unit_test_setup(test_load_file, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
