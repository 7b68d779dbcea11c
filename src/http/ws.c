/* ws.c - RFC 6455 opening handshake checks and a resumable frame codec. */
#include "http/ws.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/base64.h"
#include "core/utf8.h"

/* RFC 6455 section 1.3. */
static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* ---- handshake ---- */

/* Calls fn on each element of the comma-separated lists in every header
 * named name, trimmed of blanks; stops early when fn returns true. */
static bool any_element(const struct http1_header *headers, size_t n, const char *name,
                        bool (*fn)(const char *s, size_t len, void *arg), void *arg)
{
    for (size_t i = 0; i < n; i++) {
        if (!http1_str_eq(headers[i].name, name))
            continue;
        const char *p = headers[i].value.ptr, *end = p + headers[i].value.len;
        while (p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *e = comma ? comma : end;
            const char *s = p;
            while (s < e && (*s == ' ' || *s == '\t'))
                s++;
            const char *t = e;
            while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
                t--;
            if (t > s && fn(s, (size_t)(t - s), arg))
                return true;
            p = comma ? comma + 1 : end;
        }
    }
    return false;
}

static bool token_is_ci(const char *s, size_t len, void *lit)
{
    return len == strlen(lit) && strncasecmp(s, lit, len) == 0;
}

static bool token_is(const char *s, size_t len, void *lit)
{
    return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

static bool any_token(const char *s, size_t len, void *arg)
{
    return true;
}

/* The only header value of name, or NULL if it is absent or repeated. */
static const struct http1_header *single(const struct http1_header *headers, size_t n,
                                         const char *name)
{
    const struct http1_header *found = NULL;
    for (size_t i = 0; i < n; i++) {
        if (http1_str_eq(headers[i].name, name)) {
            if (found)
                return NULL;
            found = &headers[i];
        }
    }
    return found;
}

void ws_accept_key(const char *key, size_t len, char out[WS_ACCEPT_LEN + 1])
{
    uint8_t digest[SHA_DIGEST_LENGTH] = {0};
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, key, len) != 1 ||
        EVP_DigestUpdate(ctx, ws_guid, sizeof ws_guid - 1) != 1 ||
        EVP_DigestFinal_ex(ctx, digest, NULL) != 1)
        memset(digest, 0, sizeof digest); /* no answer a client would accept */
    EVP_MD_CTX_free(ctx);
    base64_encode(out, digest, sizeof digest);
}

int ws_upgrade_check(const struct http1_request *req, const struct http1_header *headers,
                     size_t num_headers, struct ws_upgrade *out)
{
    if (!http1_str_eq(req->method, "GET"))
        return WS_UPGRADE_E_METHOD;
    if (req->minor_version < 1)
        return WS_UPGRADE_E_HTTP;
    if (!any_element(headers, num_headers, "upgrade", token_is_ci, "websocket"))
        return WS_UPGRADE_E_UPGRADE;
    if (!any_element(headers, num_headers, "connection", token_is_ci, "upgrade"))
        return WS_UPGRADE_E_CONNECTION;
    const struct http1_header *v = single(headers, num_headers, "sec-websocket-version");
    if (!v || !http1_str_eq(v->value, "13"))
        return WS_UPGRADE_E_VERSION;
    const struct http1_header *k = single(headers, num_headers, "sec-websocket-key");
    uint8_t nonce[18];
    if (!k || base64_decode(nonce, sizeof nonce, k->value.ptr, k->value.len) != 16)
        return WS_UPGRADE_E_KEY;
    /* Our preference, not the client's order: "mqtt" is the registered
     * name; "mqttv3.1" is what MQTT 3.1 era clients send. */
    static const char *const ours[] = {"mqtt", "mqttv3.1"};
    out->protocol = NULL;
    for (size_t i = 0; i < 2 && !out->protocol; i++)
        if (any_element(headers, num_headers, "sec-websocket-protocol", token_is, (void *)ours[i]))
            out->protocol = ours[i];
    /* Offered something else only: a browser would fail the connection
     * if we answered without one, so say no now. */
    if (!out->protocol && any_element(headers, num_headers, "sec-websocket-protocol", any_token, NULL))
        return WS_UPGRADE_E_PROTOCOL;
    ws_accept_key(k->value.ptr, k->value.len, out->accept);
    return 0;
}

size_t ws_upgrade_response(const struct ws_upgrade *u, char *buf, size_t cap)
{
    int n = snprintf(buf, cap,
                     "HTTP/1.1 101 Switching Protocols\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Accept: %s\r\n"
                     "%s%s%s"
                     "\r\n",
                     u->accept, u->protocol ? "Sec-WebSocket-Protocol: " : "",
                     u->protocol ? u->protocol : "", u->protocol ? "\r\n" : "");
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

const char *ws_upgrade_refusal(int err)
{
    switch (err) {
    case WS_UPGRADE_E_METHOD:
        return "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nContent-Length: 0\r\n"
               "Connection: close\r\n\r\n";
    case WS_UPGRADE_E_VERSION:
        /* RFC 6455 section 4.4: name the versions we speak. */
        return "HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\n"
               "Upgrade: websocket\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    default:
        return "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    }
}

/* ---- frames ---- */

void ws_decoder_init(struct ws_decoder *d, uint64_t max_message)
{
    memset(d, 0, sizeof *d);
    d->max_message = max_message;
}

/* Header bytes implied by its first two bytes. */
static size_t header_len(const uint8_t *h)
{
    uint8_t len7 = h[1] & 0x7f;
    return 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + ((h[1] & 0x80) ? 4 : 0);
}

/* Checks what the first two bytes say, before the rest has arrived. */
static int check_start(const struct ws_decoder *d, const uint8_t *h)
{
    bool fin = h[0] & 0x80;
    uint8_t op = h[0] & 0x0f, len7 = h[1] & 0x7f;
    if (h[0] & 0x70)
        return WS_E_RESERVED_BITS;
    if (!(h[1] & 0x80))
        return WS_E_UNMASKED;
    switch (op) {
    case WS_OP_CLOSE:
    case WS_OP_PING:
    case WS_OP_PONG:
        return !fin || len7 > WS_CONTROL_MAX ? WS_E_CONTROL : 0;
    case WS_OP_TEXT:
        return WS_E_TEXT;
    case WS_OP_BINARY:
        return d->in_message ? WS_E_INTERLEAVED : 0;
    case WS_OP_CONTINUATION:
        return d->in_message ? 0 : WS_E_CONTINUATION;
    default:
        return WS_E_OPCODE;
    }
}

/* Takes in the complete header in d->hdr. */
static int start_frame(struct ws_decoder *d)
{
    const uint8_t *h = d->hdr;
    uint8_t len7 = h[1] & 0x7f;
    uint64_t len = len7;
    size_t at = 2;
    if (len7 == 126) {
        len = (uint64_t)h[2] << 8 | h[3];
        at = 4;
    } else if (len7 == 127) {
        len = 0;
        for (size_t i = 2; i < 10; i++)
            len = len << 8 | h[i];
        if (len >> 63)
            return WS_E_LENGTH;
        at = 10;
    }
    memcpy(d->mask, h + at, 4);
    d->mask_pos = 0;
    d->opcode = h[0] & 0x0f;
    d->payload_left = len;
    bool fin = h[0] & 0x80;
    if (d->opcode & 0x8) {
        d->control_op = (enum ws_opcode)d->opcode;
        d->control_len = 0;
    } else {
        uint64_t so_far = d->opcode == WS_OP_CONTINUATION ? d->message_len : 0;
        if (len > d->max_message - so_far)
            return WS_E_TOO_LARGE;
        d->message_len = so_far + len;
        d->in_message = !fin;
    }
    d->in_payload = true;
    return 0;
}

static bool close_code_valid(uint16_t c)
{
    /* RFC 6455 section 7.4 plus the IANA registry: 1004-1006 and 1015 are
     * never sent on the wire; 3000-4999 are for libraries and apps. */
    return (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999);
}

static int check_close(const struct ws_decoder *d)
{
    if (d->control_len == 0)
        return 0;
    if (d->control_len == 1 || !close_code_valid(ws_close_code(d)))
        return WS_E_CLOSE_PAYLOAD;
    /* The reason must be UTF-8; U+0000 is refused too, as no client has a
     * reason to send it. */
    const uint8_t *reason = d->control + 2;
    size_t reason_len = d->control_len - 2;
    if (memchr(reason, 0, reason_len) || !utf8_valid(reason, reason_len))
        return WS_E_CLOSE_PAYLOAD;
    return 0;
}

int ws_decode(struct ws_decoder *d, const uint8_t *in, size_t len, uint8_t *out,
              size_t *out_len, size_t *used)
{
    size_t i = 0, o = 0;
    int rc = d->error;
    while (rc == 0 && i < len) {
        if (!d->in_payload) {
            size_t want = d->hdr_len < 2 ? 2 : header_len(d->hdr);
            size_t take = want - d->hdr_len < len - i ? want - d->hdr_len : len - i;
            memcpy(d->hdr + d->hdr_len, in + i, take);
            d->hdr_len = (uint8_t)(d->hdr_len + take);
            i += take;
            if (d->hdr_len == 2 && (rc = check_start(d, d->hdr)) != 0)
                break;
            if (d->hdr_len < 2 || d->hdr_len < header_len(d->hdr))
                continue;
            d->hdr_len = 0;
            if ((rc = start_frame(d)) != 0)
                break;
        } else {
            size_t take = d->payload_left < len - i ? (size_t)d->payload_left : len - i;
            bool control = d->opcode & 0x8;
            uint8_t *dst = control ? d->control + d->control_len : out + o;
            /* Forward byte order keeps in-place unmasking safe: o <= i. */
            for (size_t k = 0; k < take; k++)
                dst[k] = in[i + k] ^ d->mask[(d->mask_pos + k) & 3];
            d->mask_pos = (uint8_t)((d->mask_pos + take) & 3);
            d->payload_left -= take;
            i += take;
            if (control)
                d->control_len += take;
            else
                o += take;
        }
        if (d->in_payload && d->payload_left == 0) {
            d->in_payload = false;
            if (d->opcode & 0x8) {
                if (d->opcode == WS_OP_CLOSE && (rc = check_close(d)) != 0)
                    break;
                rc = WS_DECODE_CONTROL;
            }
        }
    }
    if (rc < 0)
        d->error = rc;
    *out_len = o;
    *used = i;
    return rc;
}

uint16_t ws_close_code(const struct ws_decoder *d)
{
    return d->control_len >= 2 ? (uint16_t)(d->control[0] << 8 | d->control[1]) : 1005;
}

uint16_t ws_error_close_code(int err)
{
    switch (err) {
    case WS_E_TOO_LARGE:
        return 1009; /* message too big */
    case WS_E_TEXT:
        return 1003; /* unsupported data */
    default:
        return 1002; /* protocol error */
    }
}

const char *ws_strerror(int err)
{
    switch (err) {
    case WS_UPGRADE_E_METHOD: return "upgrade request is not GET";
    case WS_UPGRADE_E_HTTP: return "upgrade request is not HTTP/1.1";
    case WS_UPGRADE_E_UPGRADE: return "no Upgrade: websocket";
    case WS_UPGRADE_E_CONNECTION: return "no Connection: upgrade";
    case WS_UPGRADE_E_VERSION: return "Sec-WebSocket-Version is not 13";
    case WS_UPGRADE_E_KEY: return "Sec-WebSocket-Key missing or not base64 of 16 bytes";
    case WS_UPGRADE_E_PROTOCOL: return "no MQTT subprotocol offered";
    case WS_E_RESERVED_BITS: return "reserved frame bits set";
    case WS_E_OPCODE: return "reserved opcode";
    case WS_E_UNMASKED: return "client frame not masked";
    case WS_E_CONTROL: return "control frame fragmented or over 125 bytes";
    case WS_E_CONTINUATION: return "continuation frame outside a message";
    case WS_E_INTERLEAVED: return "data frame inside a fragmented message";
    case WS_E_LENGTH: return "frame length over 2^63";
    case WS_E_TOO_LARGE: return "message over the size limit";
    case WS_E_TEXT: return "text frame (MQTT needs binary frames)";
    case WS_E_CLOSE_PAYLOAD: return "close frame with a bad code or reason";
    default: return "unknown WebSocket error";
    }
}

size_t ws_frame_header(uint8_t out[WS_HEADER_MAX], enum ws_opcode op, uint64_t len)
{
    out[0] = (uint8_t)(0x80 | op);
    if (len <= 125) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len <= 0xffff) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        return 4;
    }
    out[1] = 127;
    for (int i = 0; i < 8; i++)
        out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    return 10;
}

size_t ws_close_frame(uint8_t out[4], uint16_t code)
{
    out[0] = 0x80 | WS_OP_CLOSE;
    out[1] = 2;
    out[2] = (uint8_t)(code >> 8);
    out[3] = (uint8_t)code;
    return 4;
}
