/* test_trace.c - the wire trace's line formatting (load/trace.c): MQTT
 * packets of each version decoded from the codec's own encodings, body
 * escaping and cutting, HTTP heads split into lines, the sampling rules,
 * and the progress line's text (load/progress.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "load/progress.h"
#include "load/trace.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"

static const char *fmt_mqtt(uint8_t version, const uint8_t *pkt, size_t len)
{
    static char out[512];
    size_t n = trace_mqtt_format(out, sizeof out, version, pkt, len);
    assert_int_equal(n, strlen(out));
    return out;
}

#define BYTES(s) ((struct mqtt_bytes){(const uint8_t *)(s), strlen(s)})

static void test_mqtt_connect_and_connack(void **state)
{
    uint8_t buf[128];
    struct mqtt_connect c = {.protocol_level = 4, .clean_session = true, .keepalive = 60,
                             .client_id = BYTES("ld-7")};
    size_t n = mqtt_encode_connect(buf, &c);
    assert_string_equal(fmt_mqtt(4, buf, n), "CONNECT v4 id=ld-7 clean=1 keepalive=60");
    struct mqtt5_connect c5 = {.protocol_level = 5, .keepalive = 10, .client_id = BYTES("x")};
    n = mqtt5_encode_connect(buf, &c5);
    assert_string_equal(fmt_mqtt(5, buf, n), "CONNECT v5 id=x clean=0 keepalive=10");
    n = mqtt_encode_connack(buf, true, 0);
    assert_string_equal(fmt_mqtt(4, buf, n), "CONNACK sp=1 rc=0");
    struct mqtt5_connack a5 = {.reason = 0x87};
    n = mqtt5_encode_connack(buf, &a5);
    assert_string_equal(fmt_mqtt(5, buf, n), "CONNACK sp=0 rc=135");
}

static void test_mqtt_publish_and_acks(void **state)
{
    uint8_t buf[128];
    struct mqtt_publish p = {.topic = BYTES("loadtest/3"), .payload = {(const uint8_t *)"hello", 5},
                             .qos = 1, .packet_id = 42, .retain = true};
    size_t n = mqtt_encode_publish(buf, &p);
    assert_string_equal(fmt_mqtt(4, buf, n), "PUBLISH q1 pid=42 retain topic=loadtest/3 len=5");
    p.qos = 0;
    p.retain = false;
    n = mqtt_encode_publish(buf, &p);
    assert_string_equal(fmt_mqtt(4, buf, n), "PUBLISH q0 topic=loadtest/3 len=5");
    struct mqtt5_publish p5 = {.topic = BYTES("a/b"), .payload = {(const uint8_t *)"xy", 2},
                               .qos = 2, .packet_id = 7};
    n = mqtt5_encode_publish(buf, &p5);
    assert_string_equal(fmt_mqtt(5, buf, n), "PUBLISH q2 pid=7 topic=a/b len=2");
    n = mqtt_encode_ack(buf, MQTT_PUBREL, 65535);
    assert_string_equal(fmt_mqtt(4, buf, n), "PUBREL pid=65535");
    struct mqtt5_ack a = {.packet_id = 9, .reason = 0x10};
    n = mqtt5_encode_ack(buf, MQTT_PUBACK, &a);
    assert_string_equal(fmt_mqtt(5, buf, n), "PUBACK pid=9 rc=0x10");
    n = mqtt_encode_empty(buf, MQTT_DISCONNECT);
    assert_string_equal(fmt_mqtt(4, buf, n), "DISCONNECT");
}

static void test_mqtt_subscribe_and_suback(void **state)
{
    uint8_t buf[128];
    struct mqtt_bytes f[2] = {BYTES("pingtest/0/#"), BYTES("x")};
    uint8_t qos[2] = {1, 2};
    size_t n = mqtt_encode_subscribe(buf, 1, f, qos, 2);
    assert_string_equal(fmt_mqtt(4, buf, n), "SUBSCRIBE pid=1 filter=pingtest/0/#:q1 filter=x:q2");
    uint8_t codes[2] = {1, 0x80};
    n = mqtt_encode_suback(buf, 1, codes, 2);
    assert_string_equal(fmt_mqtt(4, buf, n), "SUBACK pid=1 codes=0x01,0x80");
}

static void test_mqtt_broken(void **state)
{
    /* Short, truncated and malformed packets are shown, not trusted. */
    const uint8_t one[] = {0x30};
    assert_string_equal(fmt_mqtt(4, one, 1), "? bad fixed header, 1 bytes");
    const uint8_t cut[] = {0x30, 10, 0, 3};
    assert_string_equal(fmt_mqtt(4, cut, sizeof cut), "? bad fixed header, 4 bytes");
    const uint8_t bad_topic[] = {0x30, 4, 0, 9, 'a', 'b'};
    assert_string_equal(fmt_mqtt(4, bad_topic, sizeof bad_topic), "PUBLISH malformed len=4");
    const uint8_t odd[] = {0xf0, 0};
    assert_string_equal(fmt_mqtt(4, odd, sizeof odd), "TYPE15");
}

static void test_escape(void **state)
{
    char out[64];
    assert_int_equal(trace_escape(out, sizeof out, "a\r\n\t\\\x01\xff" "b", 8, 100), 18);
    assert_string_equal(out, "a\\r\\n\\t\\\\\\x01\\xffb");
    /* Cut at max bytes of input, and never past the buffer. */
    trace_escape(out, sizeof out, "abcdef", 6, 3);
    assert_string_equal(out, "abc");
    char small[8];
    trace_escape(small, sizeof small, "\x01\x02\x03", 3, 3);
    assert_true(strlen(small) < sizeof small);
    assert_string_equal(small, "\\x01");
}

/* Reads back what a trace wrote to a temporary file. */
static char *trace_text(struct trace *t, const char *path)
{
    char err[128];
    assert_int_equal(trace_close(t, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    return buf;
}

/* The lines of text without their stamps, comments dropped. */
static const char *unstamped(const char *text)
{
    static char out[8192];
    size_t o = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (*p != '#') {
            const char *sp = memchr(p, ' ', n);
            assert_non_null(sp);
            memcpy(out + o, sp + 1, n - (size_t)(sp + 1 - p));
            o += n - (size_t)(sp + 1 - p);
            out[o++] = '\n';
        }
        p += n + (eol != NULL);
    }
    out[o] = '\0';
    return out;
}

static struct trace *trace_tmp(char *path, unsigned sample, unsigned body)
{
    strcpy(path, "/tmp/test_trace.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[128];
    struct trace *t = trace_open(path, sample, body, "bench x", err, sizeof err);
    assert_non_null(t);
    return t;
}

static void test_http_lines(void **state)
{
    char path[64];
    struct trace *t = trace_tmp(path, 1, 8);
    const char head[] = "POST /v1/create HTTP/1.1\r\nHost: h:1\r\nContent-Length: 11\r\n\r\n";
    trace_http_head(t, 3, '>', head, sizeof head - 1);
    trace_body(t, 3, '>', "hello\nworld", 11, 11);
    trace_http_head(t, 3, '<', "HTTP/1.1 201 Created\r\n\r\n", 24);
    trace_line(t, 4, '<', "grpc", "stream=%d", 1);
    trace_note(t, "run %u", 2);
    const char *text = trace_text(t, path);
    assert_non_null(strstr(text, "# shootout trace 1: bench x\n"));
    assert_non_null(strstr(text, "\n# run 2\n"));
    assert_string_equal(unstamped(text), "3 > http POST /v1/create HTTP/1.1\n"
                                         "3 > hdr Host: h:1\n"
                                         "3 > hdr Content-Length: 11\n"
                                         "3 > body 11 hello\\nwo\n"
                                         "3 < http HTTP/1.1 201 Created\n"
                                         "4 < grpc stream=1\n");
    /* The stamp: seconds with six decimals. */
    const char *first = strstr(text, "summary\n") + strlen("summary\n");
    char *end;
    strtod(first, &end);
    assert_int_equal(*end, ' ');
    assert_int_equal(end - strchr(first, '.'), 7);
}

static void test_sampling(void **state)
{
    char path[64];
    struct trace *t = trace_tmp(path, 3, 80);
    assert_true(trace_pick(t, 0));
    assert_false(trace_pick(t, 1));
    assert_false(trace_pick(t, 2));
    assert_true(trace_pick(t, 3));
    assert_int_equal(trace_conn_id(t), 0);
    assert_int_equal(trace_conn_id(t), 1);
    uint8_t buf[64];
    uint64_t q0 = 0;
    /* QoS 1/2 flows by packet id, QoS 0 publishes by count, the rest by
     * connection. */
    for (uint16_t id = 1; id <= 7; id++) {
        struct mqtt_publish p = {.topic = BYTES("t"), .qos = 1, .packet_id = id};
        trace_mqtt(t, 1, '>', 4, buf, mqtt_encode_publish(buf, &p), &q0);
        trace_mqtt(t, 1, '<', 4, buf, mqtt_encode_ack(buf, MQTT_PUBACK, id), &q0);
    }
    for (int i = 0; i < 7; i++) {
        struct mqtt_publish p = {.topic = BYTES("z")};
        trace_mqtt(t, 1, '>', 4, buf, mqtt_encode_publish(buf, &p), &q0);
    }
    assert_int_equal(q0, 7);
    trace_mqtt(t, 1, '>', 4, buf, mqtt_encode_empty(buf, MQTT_DISCONNECT), &q0);
    trace_mqtt(t, 6, '>', 4, buf, mqtt_encode_empty(buf, MQTT_DISCONNECT), &q0);
    assert_string_equal(unstamped(trace_text(t, path)), "1 > mqtt PUBLISH q1 pid=3 topic=t len=0\n"
                                                        "1 < mqtt PUBACK pid=3\n"
                                                        "1 > mqtt PUBLISH q1 pid=6 topic=t len=0\n"
                                                        "1 < mqtt PUBACK pid=6\n"
                                                        "1 > mqtt PUBLISH q0 topic=z len=0\n"
                                                        "1 > mqtt PUBLISH q0 topic=z len=0\n"
                                                        "1 > mqtt PUBLISH q0 topic=z len=0\n"
                                                        "6 > mqtt DISCONNECT\n");
}

static void test_open_fails(void **state)
{
    char err[128];
    assert_null(trace_open("/nonexistent-dir/x", 1, 80, NULL, err, sizeof err));
    assert_non_null(strstr(err, "cannot create /nonexistent-dir/x"));
    assert_int_equal(trace_close(NULL, err, sizeof err), 0);
}

static void test_progress_line(void **state)
{
    struct progress p;
    char out[256];
    progress_begin(&p, stderr, false, "mqtt-load/b/10c run 1/3", "msg");
    progress_format(out, sizeof out, &p, 0.25);
    assert_string_equal(out, "mqtt-load/b/10c run 1/3: setting up, elapsed 0.2s");
    p.total = 10000;
    p.done = 2500;
    progress_format(out, sizeof out, &p, 2.0);
    assert_string_equal(out, "mqtt-load/b/10c run 1/3: 2500/10000 msg  25%, 1.25 k msg/s, "
                             "elapsed 2.0s, ETA 6.0s");
    p.done = 0;
    progress_format(out, sizeof out, &p, 2.0);
    assert_string_equal(out, "mqtt-load/b/10c run 1/3: 0/10000 msg   0%, 0 msg/s, elapsed 2.0s, "
                             "ETA ?");
    p.done = 10000;
    progress_format(out, sizeof out, &p, 0.004);
    assert_string_equal(out, "mqtt-load/b/10c run 1/3: 10000/10000 msg 100%, 2.5 M msg/s, "
                             "elapsed 0.0s, ETA 0.0s");
    progress_begin(&p, stderr, true, "http-open/x/s run 1/1", "req");
    progress_update_timed(&p, 300, 4, true);
    progress_format(out, sizeof out, &p, 1.0);
    assert_string_equal(out, "http-open/x/s run 1/1: 300 req, 300 req/s, elapsed 1.0s of 4.0s  "
                             "25%, ETA 3.0s");
    progress_format(out, sizeof out, &p, 5.0);
    assert_string_equal(out, "http-open/x/s run 1/1: 300 req, 60 req/s, elapsed 5.0s, planned 4.0s");
}

/* Off, nothing is drawn and the figures are not kept; on, the first
 * update draws and the next ones within 100 ms do not. */
static void test_progress_draws(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct progress p;
    progress_begin(&p, f, false, "x", "msg");
    progress_update(&p, 1, 2, false);
    progress_end(&p);
    fflush(f);
    assert_int_equal(len, 0);
    progress_update(NULL, 1, 2, false);
    progress_begin(&p, f, true, "x", "msg");
    progress_update(&p, 1, 2, false);
    progress_update(&p, 2, 2, false);
    progress_update(&p, 2, 2, true);
    progress_end(&p);
    fclose(f);
    assert_non_null(strstr(buf, "\rx: 1/2 msg  50%"));
    /* The last line is drawn at the end (and at most once more if this
     * thread stalled for 100 ms between the updates). */
    unsigned draws = 0;
    for (const char *q = buf; (q = strstr(q, "\rx: ")); q++)
        draws++;
    assert_true(draws == 2 || draws == 3);
    assert_non_null(strstr(buf, "\rx: 2/2 msg 100%"));
    assert_int_equal(buf[len - 1], '\n');
    assert_false(progress_wanted(PROGRESS_NEVER, stderr));
    assert_true(progress_wanted(PROGRESS_ALWAYS, stderr));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mqtt_connect_and_connack),
        cmocka_unit_test(test_mqtt_publish_and_acks),
        cmocka_unit_test(test_mqtt_subscribe_and_suback),
        cmocka_unit_test(test_mqtt_broken),
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_http_lines),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_open_fails),
        cmocka_unit_test(test_progress_line),
        cmocka_unit_test(test_progress_draws),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
