/* fuzz_ws.c - libFuzzer target for the WebSocket codec (ws.c).
 *
 * First byte even: the rest is an HTTP request head; when it parses, it is
 * checked as an upgrade and the answer written. Checked: an accepted
 * upgrade names one of our subprotocols or none, and its 101 answer fits.
 *
 * First byte odd: the rest is a client byte stream for the frame decoder,
 * decoded once whole into a separate buffer and once in place in pieces
 * whose sizes come from the first byte. Checked: both give the same data
 * bytes, the same control frames and the same final answer; consumption
 * never passes the input; errors stick.
 */
#include <stdlib.h>
#include <string.h>

#include "http/http1.h"
#include "http/ws.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 65536

struct run {
    uint8_t data[MAX_INPUT];
    size_t data_len;
    uint8_t controls[MAX_INPUT]; /* opcode, length, payload, ... */
    size_t controls_len;
    int rc;
};

static void run_decoder(const uint8_t *in, size_t len, size_t step, bool in_place, struct run *r)
{
    static uint8_t copy[MAX_INPUT];
    struct ws_decoder d;
    ws_decoder_init(&d, 1000);
    memcpy(copy, in, len);
    r->data_len = r->controls_len = 0;
    r->rc = 0;
    size_t pos = 0;
    while (pos < len && r->rc >= 0) {
        size_t piece = len - pos < step ? len - pos : step, out_len, used;
        uint8_t *dst = in_place ? copy + pos : r->data + r->data_len;
        int rc = ws_decode(&d, copy + pos, piece, dst, &out_len, &used);
        check(used <= piece && out_len <= used);
        if (in_place)
            memmove(r->data + r->data_len, dst, out_len);
        r->data_len += out_len;
        pos += used;
        if (rc < 0) {
            r->rc = rc;
            check(ws_decode(&d, copy, len, copy, &out_len, &used) == rc && used == 0);
        } else if (rc == WS_DECODE_CONTROL) {
            check(d.control_len <= WS_CONTROL_MAX);
            r->controls[r->controls_len++] = (uint8_t)d.control_op;
            r->controls[r->controls_len++] = (uint8_t)d.control_len;
            memcpy(r->controls + r->controls_len, d.control, d.control_len);
            r->controls_len += d.control_len;
            if (d.control_op == WS_OP_CLOSE)
                (void)ws_close_code(&d);
        } else {
            check(used == piece);
        }
    }
}

static void fuzz_handshake(const char *buf, size_t len)
{
    struct http1_request req;
    struct http1_header h[16];
    if (http1_parse_request(buf, len, &req, h, 16, 8192) <= 0)
        return;
    struct ws_upgrade u;
    int rc = ws_upgrade_check(&req, h, req.num_headers, &u);
    if (rc < 0) {
        check(ws_upgrade_refusal(rc) != NULL && ws_strerror(rc) != NULL);
        return;
    }
    check(!u.protocol || !strcmp(u.protocol, "mqtt") || !strcmp(u.protocol, "mqttv3.1"));
    check(strlen(u.accept) == WS_ACCEPT_LEN);
    char resp[WS_UPGRADE_RESPONSE_MAX];
    check(ws_upgrade_response(&u, resp, sizeof resp) > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_INPUT)
        return 0;
    if (!(data[0] & 1)) {
        fuzz_handshake((const char *)data + 1, size - 1);
        return 0;
    }
    static struct run whole, pieces;
    run_decoder(data + 1, size - 1, size, false, &whole);
    run_decoder(data + 1, size - 1, 1 + (data[0] >> 1) % 17, true, &pieces);
    check(whole.rc == pieces.rc);
    check(whole.data_len == pieces.data_len && !memcmp(whole.data, pieces.data, whole.data_len));
    check(whole.controls_len == pieces.controls_len &&
          !memcmp(whole.controls, pieces.controls, whole.controls_len));
    if (whole.rc < 0)
        check(ws_error_close_code(whole.rc) >= 1002);
    return 0;
}
