/* test_ws.c - WebSocket handshake (RFC 6455 section 4) and frame decoding
 * (section 5): the RFC's own examples, every split of the input, in-place
 * unmasking, and each protocol violation the decoder must refuse. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/http1.h"
#include "http/ws.h"

/* ---- handshake ---- */

/* RFC 6455 section 1.3 (also MDN, and Python hashlib agrees). */
static void test_rfc_example_accept_key(void **state)
{
    char out[WS_ACCEPT_LEN + 1];
    ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", 24, out);
    assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static int upgrade(const char *head, struct ws_upgrade *u)
{
    struct http1_request req;
    struct http1_header h[32];
    int n = http1_parse_request(head, strlen(head), &req, h, 32, 8192);
    assert_true(n > 0);
    return ws_upgrade_check(&req, h, req.num_headers, u);
}

#define KEY "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
#define BASE "GET /mqtt HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
             "Sec-WebSocket-Version: 13\r\n"

static void test_upgrade_accepted_with_mqtt_subprotocol(void **state)
{
    struct ws_upgrade u;
    assert_int_equal(upgrade(BASE KEY "Sec-WebSocket-Protocol: mqtt\r\n\r\n", &u), 0);
    assert_string_equal(u.protocol, "mqtt");
    char buf[WS_UPGRADE_RESPONSE_MAX];
    size_t n = ws_upgrade_response(&u, buf, sizeof buf);
    assert_string_equal(buf, "HTTP/1.1 101 Switching Protocols\r\n"
                             "Upgrade: websocket\r\n"
                             "Connection: Upgrade\r\n"
                             "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                             "Sec-WebSocket-Protocol: mqtt\r\n"
                             "\r\n");
    assert_int_equal(n, strlen(buf));
    assert_int_equal(ws_upgrade_response(&u, buf, 20), 0);
    /* Our preference wins over the client's order; lists may be split
     * over several lines; header names and the Upgrade/Connection tokens
     * are case-insensitive. */
    const char *h = "GET / HTTP/1.1\r\nHost: x\r\nupgrade: WebSocket\r\n"
                    "connection: keep-alive, UPGRADE\r\nsec-websocket-version: 13\r\n" KEY
                    "Sec-WebSocket-Protocol: chat, mqttv3.1\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n";
    assert_int_equal(upgrade(h, &u), 0);
    assert_string_equal(u.protocol, "mqtt");
    assert_int_equal(upgrade(BASE KEY "Sec-WebSocket-Protocol: mqttv3.1\r\n\r\n", &u), 0);
    assert_string_equal(u.protocol, "mqttv3.1");
    /* Nothing offered: accepted without a protocol header. */
    assert_int_equal(upgrade(BASE KEY "\r\n", &u), 0);
    assert_null(u.protocol);
    ws_upgrade_response(&u, buf, sizeof buf);
    assert_null(strstr(buf, "Sec-WebSocket-Protocol"));
}

static void test_upgrade_refusals(void **state)
{
    struct ws_upgrade u;
    assert_int_equal(upgrade(BASE KEY "Sec-WebSocket-Protocol: chat, MQTT\r\n\r\n", &u),
                     WS_UPGRADE_E_PROTOCOL);
    assert_int_equal(upgrade("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", &u),
                     WS_UPGRADE_E_METHOD);
    assert_int_equal(upgrade("GET / HTTP/1.0\r\nUpgrade: websocket\r\n\r\n", &u), WS_UPGRADE_E_HTTP);
    assert_int_equal(upgrade("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n\r\n", &u),
                     WS_UPGRADE_E_UPGRADE);
    assert_int_equal(upgrade("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                             "Connection: keep-alive\r\n\r\n", &u),
                     WS_UPGRADE_E_CONNECTION);
    const char *v12 = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Version: 12\r\n" KEY "\r\n";
    assert_int_equal(upgrade(v12, &u), WS_UPGRADE_E_VERSION);
    assert_non_null(strstr(ws_upgrade_refusal(WS_UPGRADE_E_VERSION), "426"));
    assert_non_null(strstr(ws_upgrade_refusal(WS_UPGRADE_E_VERSION), "Sec-WebSocket-Version: 13"));
    assert_non_null(strstr(ws_upgrade_refusal(WS_UPGRADE_E_KEY), "400 Bad Request"));
    assert_int_equal(upgrade(BASE "\r\n", &u), WS_UPGRADE_E_KEY);
    assert_int_equal(upgrade(BASE KEY KEY "\r\n", &u), WS_UPGRADE_E_KEY);
    assert_int_equal(upgrade(BASE "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ\r\n\r\n", &u),
                     WS_UPGRADE_E_KEY);
    assert_int_equal(upgrade(BASE "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZWU=\r\n\r\n", &u),
                     WS_UPGRADE_E_KEY); /* 17 bytes */
    assert_string_equal(ws_strerror(WS_UPGRADE_E_KEY),
                        "Sec-WebSocket-Key missing or not base64 of 16 bytes");
}

/* ---- frames ---- */

static const uint8_t mask_key[4] = {0x37, 0xfa, 0x21, 0x3d};

/* A client frame: b0 is FIN/RSV/opcode; masked with mask_key. */
static size_t client_frame(uint8_t *out, uint8_t b0, const void *payload, size_t len)
{
    size_t n = ws_frame_header(out, (enum ws_opcode)(b0 & 0x0f), len);
    out[0] = b0;
    out[1] |= 0x80;
    memcpy(out + n, mask_key, 4);
    n += 4;
    for (size_t i = 0; i < len; i++)
        out[n + i] = ((const uint8_t *)payload)[i] ^ mask_key[i & 3];
    return n + len;
}

struct decoded {
    uint8_t data[70000];
    size_t data_len;
    char controls[64]; /* opcodes of control frames, as letters */
    size_t ncontrols;
    int rc; /* final answer: 0 or an error */
};

/* Feeds in[0..len) in pieces of at most step bytes (each piece also split
 * again at every control frame), collecting data and controls. */
static void decode_all(const uint8_t *in, size_t len, size_t step, bool in_place,
                       uint64_t max, struct decoded *r)
{
    static uint8_t copy[70100];
    struct ws_decoder d;
    ws_decoder_init(&d, max);
    memcpy(copy, in, len);
    r->data_len = r->ncontrols = 0;
    r->rc = 0;
    for (size_t pos = 0; pos < len && r->rc >= 0;) {
        size_t piece = len - pos < step ? len - pos : step;
        while (piece > 0) {
            size_t out_len, used;
            uint8_t *src = copy + pos;
            uint8_t *dst = in_place ? src : r->data + r->data_len;
            int rc = ws_decode(&d, src, piece, dst, &out_len, &used);
            if (in_place)
                memmove(r->data + r->data_len, dst, out_len);
            r->data_len += out_len;
            pos += used;
            piece -= used;
            if (rc < 0) {
                r->rc = rc;
                /* Errors stick. */
                assert_int_equal(ws_decode(&d, src, 1, dst, &out_len, &used), rc);
                assert_int_equal(used, 0);
                break;
            }
            if (rc == WS_DECODE_CONTROL)
                r->controls[r->ncontrols++] = d.control_op == WS_OP_PING    ? 'i'
                                              : d.control_op == WS_OP_PONG ? 'o'
                                                                           : 'c';
            else
                assert_int_equal(piece, 0); /* MORE means all used */
        }
    }
    r->controls[r->ncontrols] = '\0';
}

static struct decoded a, b;

/* The same bytes must decode identically however they are split. */
static void expect_same_every_way(const uint8_t *in, size_t len, uint64_t max)
{
    decode_all(in, len, len, false, max, &a);
    static const size_t steps[] = {1, 2, 3, 7, 13, 100};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            decode_all(in, len, steps[s], in_place, max, &b);
            assert_int_equal(b.rc, a.rc);
            assert_int_equal(b.data_len, a.data_len);
            assert_memory_equal(b.data, a.data, a.data_len);
            assert_string_equal(b.controls, a.controls);
        }
    }
}

static void test_rfc_masked_hello_as_binary(void **state)
{
    /* RFC 6455 section 5.7, "a single-frame masked text message", with
     * the opcode made binary. */
    static const uint8_t frame[] = {0x82, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    expect_same_every_way(frame, sizeof frame, 1000);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.data_len, 5);
    assert_memory_equal(a.data, "Hello", 5);
    /* The text original is refused: MQTT uses binary frames. */
    uint8_t text[sizeof frame];
    memcpy(text, frame, sizeof frame);
    text[0] = 0x81;
    decode_all(text, sizeof text, sizeof text, false, 1000, &a);
    assert_int_equal(a.rc, WS_E_TEXT);
    assert_int_equal(ws_error_close_code(WS_E_TEXT), 1003);
}

static void test_fragments_controls_and_long_lengths(void **state)
{
    static uint8_t in[70100], big[65536];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7);
    size_t n = 0;
    n += client_frame(in + n, 0x02, "Hel", 3);           /* binary, not final */
    n += client_frame(in + n, 0x89, "ping!", 5);         /* ping between fragments */
    n += client_frame(in + n, 0x00, "", 0);              /* empty continuation */
    n += client_frame(in + n, 0x80, "lo", 2);            /* final continuation */
    n += client_frame(in + n, 0x82, big, 200);           /* 16-bit length */
    n += client_frame(in + n, 0x8a, "", 0);              /* empty pong */
    n += client_frame(in + n, 0x82, big, sizeof big);    /* 64-bit length */
    n += client_frame(in + n, 0x82, "", 0);              /* empty message */
    n += client_frame(in + n, 0x88, "\x03\xe8" "bye", 5); /* close 1000 "bye" */
    expect_same_every_way(in, n, 65536);
    assert_int_equal(a.rc, 0);
    assert_string_equal(a.controls, "ioc");
    assert_int_equal(a.data_len, 5 + 200 + sizeof big);
    assert_memory_equal(a.data, "Hello", 5);
    assert_memory_equal(a.data + 5, big, 200);
    assert_memory_equal(a.data + 205, big, sizeof big);
}

static void test_control_frame_payload_and_close_code(void **state)
{
    struct ws_decoder d;
    ws_decoder_init(&d, 100);
    uint8_t in[64], out[64];
    size_t n = client_frame(in, 0x89, "abc", 3), out_len, used;
    n += client_frame(in + n, 0x82, "xy", 2);
    assert_int_equal(ws_decode(&d, in, n, out, &out_len, &used), WS_DECODE_CONTROL);
    assert_int_equal(used, 9);
    assert_int_equal(d.control_op, WS_OP_PING);
    assert_int_equal(d.control_len, 3);
    assert_memory_equal(d.control, "abc", 3);
    assert_int_equal(ws_decode(&d, in + used, n - used, out, &out_len, &used), WS_DECODE_MORE);
    assert_int_equal(out_len, 2);
    n = client_frame(in, 0x88, "", 0);
    assert_int_equal(ws_decode(&d, in, n, out, &out_len, &used), WS_DECODE_CONTROL);
    assert_int_equal(ws_close_code(&d), 1005);
    n = client_frame(in, 0x88, "\x0f\xa0", 2);
    assert_int_equal(ws_decode(&d, in, n, out, &out_len, &used), WS_DECODE_CONTROL);
    assert_int_equal(ws_close_code(&d), 4000);
}

static void expect_error(const uint8_t *in, size_t len, uint64_t max, int err)
{
    expect_same_every_way(in, len, max);
    if (a.rc != err)
        fail_msg("wanted %s, got %d (%s)", ws_strerror(err), a.rc, ws_strerror(a.rc));
}

static void test_protocol_violations_refused(void **state)
{
    uint8_t in[300], payload[200] = {0};
    size_t n;
    static const uint8_t unmasked[] = {0x82, 0x02, 'h', 'i'};
    expect_error(unmasked, sizeof unmasked, 100, WS_E_UNMASKED);
    n = client_frame(in, 0xc2, "x", 1); /* RSV1 */
    expect_error(in, n, 100, WS_E_RESERVED_BITS);
    n = client_frame(in, 0x83, "x", 1);
    expect_error(in, n, 100, WS_E_OPCODE);
    n = client_frame(in, 0x8b, "x", 1);
    expect_error(in, n, 100, WS_E_OPCODE);
    n = client_frame(in, 0x09, "x", 1); /* fragmented ping */
    expect_error(in, n, 100, WS_E_CONTROL);
    n = client_frame(in, 0x89, payload, 126);
    expect_error(in, n, 200, WS_E_CONTROL);
    n = client_frame(in, 0x80, "x", 1);
    expect_error(in, n, 100, WS_E_CONTINUATION);
    n = client_frame(in, 0x02, "x", 1);
    n += client_frame(in + n, 0x82, "y", 1);
    expect_error(in, n, 100, WS_E_INTERLEAVED);
    /* The limit is per message: 60 + 41 fragments over 100. */
    n = client_frame(in, 0x82, payload, 100);
    expect_error(in, n, 100, 0);
    assert_int_equal(a.data_len, 100);
    n = client_frame(in, 0x82, payload, 101);
    expect_error(in, n, 100, WS_E_TOO_LARGE);
    n = client_frame(in, 0x02, payload, 60);
    n += client_frame(in + n, 0x80, payload, 41);
    expect_error(in, n, 100, WS_E_TOO_LARGE);
    assert_int_equal(a.data_len, 60);
    assert_int_equal(ws_error_close_code(WS_E_TOO_LARGE), 1009);
    static const uint8_t huge[] = {0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
    expect_error(huge, sizeof huge, UINT64_MAX, WS_E_LENGTH);
    n = client_frame(in, 0x88, "\x03", 1);
    expect_error(in, n, 100, WS_E_CLOSE_PAYLOAD);
    n = client_frame(in, 0x88, "\x03\xed", 2); /* 1005 may not be sent */
    expect_error(in, n, 100, WS_E_CLOSE_PAYLOAD);
    n = client_frame(in, 0x88, "\x03\xe8\xc3", 3); /* reason not UTF-8 */
    expect_error(in, n, 100, WS_E_CLOSE_PAYLOAD);
    assert_int_equal(ws_error_close_code(WS_E_CLOSE_PAYLOAD), 1002);
}

static void test_encoder_lengths(void **state)
{
    uint8_t h[WS_HEADER_MAX];
    assert_int_equal(ws_frame_header(h, WS_OP_BINARY, 0), 2);
    assert_memory_equal(h, "\x82\x00", 2);
    assert_int_equal(ws_frame_header(h, WS_OP_PONG, 125), 2);
    assert_memory_equal(h, "\x8a\x7d", 2);
    assert_int_equal(ws_frame_header(h, WS_OP_BINARY, 126), 4);
    assert_memory_equal(h, "\x82\x7e\x00\x7e", 4);
    assert_int_equal(ws_frame_header(h, WS_OP_BINARY, 65535), 4);
    assert_memory_equal(h, "\x82\x7e\xff\xff", 4);
    assert_int_equal(ws_frame_header(h, WS_OP_BINARY, 65536), 10);
    assert_memory_equal(h, "\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10);
    uint8_t c[4];
    assert_int_equal(ws_close_frame(c, 1002), 4);
    assert_memory_equal(c, "\x88\x02\x03\xea", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc_example_accept_key),
        cmocka_unit_test(test_upgrade_accepted_with_mqtt_subprotocol),
        cmocka_unit_test(test_upgrade_refusals),
        cmocka_unit_test(test_rfc_masked_hello_as_binary),
        cmocka_unit_test(test_fragments_controls_and_long_lengths),
        cmocka_unit_test(test_control_frame_payload_and_close_code),
        cmocka_unit_test(test_protocol_violations_refused),
        cmocka_unit_test(test_encoder_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
