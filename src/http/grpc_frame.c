/* grpc_frame.c - gRPC framing, gzip and header values; see grpc_frame.h. */
#include "http/grpc_frame.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/hex.h"
#include "core/log.h"
#include "core/mem.h"

static const char *const grpc_status_names[GRPC_STATUS_MAX + 1] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

static const char *const grpc_status_texts[GRPC_STATUS_MAX + 1] = {
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
};

const char *grpc_status_name(int code)
{
    return code >= 0 && code <= GRPC_STATUS_MAX ? grpc_status_names[code] : "(invalid)";
}

const char *grpc_status_text(int code)
{
    return code >= 0 && code <= GRPC_STATUS_MAX ? grpc_status_texts[code] : NULL;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

int grpc_status_parse(const char *s, size_t len)
{
    if (len == 0 || len > 3)
        return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* ---- Length-Prefixed-Message framing ------------------------------------ */

void grpc_prefix_write(uint8_t out[GRPC_PREFIX_LEN], bool compressed, uint32_t len)
{
    out[0] = compressed ? 1 : 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}

void grpc_reader_init(struct grpc_reader *r, size_t max)
{
    memset(r, 0, sizeof *r);
    r->max = max;
}

bool grpc_reader_partial(const struct grpc_reader *r) { return r->prefix_have > 0; }

void grpc_reader_free(struct grpc_reader *r)
{
    mem_free(r->buf);
    r->buf = NULL;
    r->have = r->cap = 0;
}

/* Ready for the next prefix; a message just delivered from buf keeps buf
 * until the next call (its data must stay valid until then). */
static void grpc_reader_next(struct grpc_reader *r)
{
    r->prefix_have = 0;
    r->have = 0;
}

enum grpc_read grpc_reader_feed(struct grpc_reader *r, const uint8_t *data, size_t len,
                                size_t *used, struct grpc_msg *msg)
{
    size_t off = 0;
    *used = 0;
    if (r->prefix_have == GRPC_PREFIX_LEN && r->len > r->max)
        return GRPC_READ_TOO_LARGE;
    if (r->prefix_have == 0 && r->buf)
        grpc_reader_free(r); /* the last message was delivered from it */
    if (len == 0)
        return GRPC_READ_MORE; /* a prefix never stays complete without its (empty) body */
    if (r->prefix_have < GRPC_PREFIX_LEN) {
        size_t take = GRPC_PREFIX_LEN - r->prefix_have;
        if (take > len)
            take = len;
        memcpy(r->prefix + r->prefix_have, data, take);
        r->prefix_have += (uint8_t)take;
        off = take;
        if (r->prefix_have < GRPC_PREFIX_LEN) {
            *used = off;
            return GRPC_READ_MORE;
        }
        /* Any non-zero flag means compressed: the protocol defines 0 and
         * 1 only, and the caller rejects a compressed message it cannot
         * decode either way. */
        r->compressed = r->prefix[0] != 0;
        r->len = (uint32_t)r->prefix[1] << 24 | (uint32_t)r->prefix[2] << 16 |
                 (uint32_t)r->prefix[3] << 8 | r->prefix[4];
        if (r->len > r->max) {
            *used = off;
            return GRPC_READ_TOO_LARGE;
        }
    }
    size_t need = r->len - r->have, avail = len - off;
    if (r->have == 0 && avail >= need) {
        /* The whole body is here: hand it out in place. */
        msg->data = data + off;
        msg->len = r->len;
        msg->compressed = r->compressed;
        *used = off + need;
        grpc_reader_next(r);
        return GRPC_READ_MSG;
    }
    size_t take = avail < need ? avail : need;
    if (take == 0) { /* the input ended with the prefix */
        *used = off;
        return GRPC_READ_MORE;
    }
    if (r->have + take > r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap < r->have + take)
            cap *= 2;
        if (cap > r->len)
            cap = r->len;
        r->buf = mem_realloc(r->buf, cap);
        r->cap = cap;
    }
    memcpy(r->buf + r->have, data + off, take);
    r->have += take;
    *used = off + take;
    if (r->have < r->len)
        return GRPC_READ_MORE;
    msg->data = r->buf;
    msg->len = r->len;
    msg->compressed = r->compressed;
    grpc_reader_next(r);
    return GRPC_READ_MSG;
}

/* ---- gzip ---------------------------------------------------------------- */

/* gzip (RFC 1952) framing around deflate, as grpc-encoding: gzip means. */
#define GRPC_GZIP_WBITS (16 + MAX_WBITS)

void grpc_gzip_deflate(struct grpc_gzip *z, const uint8_t *in, size_t len, size_t headroom,
                       uint8_t **out, size_t *out_len)
{
    if (!z->def_ready) {
        memset(&z->def, 0, sizeof z->def);
        if (deflateInit2(&z->def, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GRPC_GZIP_WBITS, 8,
                         Z_DEFAULT_STRATEGY) != Z_OK) {
            log_error("out of memory (zlib deflateInit2)");
            abort();
        }
        z->def_ready = true;
    } else {
        deflateReset(&z->def);
    }
    /* Messages are bounded far below 4 GiB (the prefix's 32-bit length). */
    uLong bound = deflateBound(&z->def, (uLong)len);
    uint8_t *buf = mem_alloc(headroom + bound);
    z->def.next_in = (Bytef *)in;
    z->def.avail_in = (uInt)len;
    z->def.next_out = buf + headroom;
    z->def.avail_out = (uInt)bound;
    if (deflate(&z->def, Z_FINISH) != Z_STREAM_END) {
        /* deflateBound guarantees room for all of it in one call. */
        log_error("zlib deflate did not finish within deflateBound");
        abort();
    }
    *out = buf;
    *out_len = headroom + (size_t)(bound - z->def.avail_out);
}

int grpc_gzip_inflate(struct grpc_gzip *z, const uint8_t *in, size_t len, size_t max, uint8_t **out,
                      size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (len > UINT_MAX)
        return GRPC_RESOURCE_EXHAUSTED;
    if (!z->inf_ready) {
        memset(&z->inf, 0, sizeof z->inf);
        if (inflateInit2(&z->inf, GRPC_GZIP_WBITS) != Z_OK) {
            log_error("out of memory (zlib inflateInit2)");
            abort();
        }
        z->inf_ready = true;
    } else {
        inflateReset(&z->inf);
    }
    /* Room for max + 1 bytes at most: producing that one extra byte is how
     * an oversized result is told from one of exactly max bytes. */
    size_t limit = max + 1, cap = len < limit / 4 ? len * 4 : limit;
    if (cap < 256)
        cap = limit < 256 ? limit : 256;
    if (cap > UINT_MAX)
        cap = UINT_MAX;
    uint8_t *buf = mem_alloc(cap);
    size_t total = 0;
    int status = GRPC_INTERNAL;
    z->inf.next_in = (Bytef *)in;
    z->inf.avail_in = (uInt)len;
    for (;;) {
        z->inf.next_out = buf + total;
        z->inf.avail_out = (uInt)(cap - total);
        int rc = inflate(&z->inf, Z_NO_FLUSH);
        total = (size_t)(z->inf.next_out - buf);
        if (total > max) {
            status = GRPC_RESOURCE_EXHAUSTED;
            break;
        }
        if (rc == Z_STREAM_END) {
            /* Another member or trailing bytes: not one gzip message. */
            if (z->inf.avail_in == 0)
                status = GRPC_OK;
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            break; /* corrupt data */
        if (z->inf.avail_out > 0)
            break; /* all input used and still not at the end: truncated */
        size_t grown = cap * 2 < limit ? cap * 2 : limit;
        if (grown > UINT_MAX)
            grown = UINT_MAX;
        if (grown == cap)
            break; /* cannot happen below 4 GiB: total > max caught it */
        buf = mem_realloc(buf, grown);
        cap = grown;
    }
    if (status != GRPC_OK) {
        mem_free(buf);
        return status;
    }
    *out = buf;
    *out_len = total;
    return GRPC_OK;
}

void grpc_gzip_free(struct grpc_gzip *z)
{
    if (z->def_ready)
        deflateEnd(&z->def);
    if (z->inf_ready)
        inflateEnd(&z->inf);
    z->def_ready = z->inf_ready = false;
}

/* ---- Header values ------------------------------------------------------ */

int grpc_timeout_parse(const char *s, size_t len, uint64_t *ns)
{
    if (len < 2 || len > 9)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (!is_digit(s[i]))
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    uint64_t unit;
    switch (s[len - 1]) {
    case 'H':
        unit = 3600ull * 1000000000ull;
        break;
    case 'M':
        unit = 60ull * 1000000000ull;
        break;
    case 'S':
        unit = 1000000000ull;
        break;
    case 'm':
        unit = 1000000ull;
        break;
    case 'u':
        unit = 1000ull;
        break;
    case 'n':
        unit = 1;
        break;
    default:
        return -1;
    }
    /* 99999999 hours is more nanoseconds than 64 bits hold; any such
     * timeout (over 500 years) is as good as none. */
    *ns = v > UINT64_MAX / unit ? UINT64_MAX : v * unit;
    return 0;
}

uint64_t grpc_timeout_ms(uint64_t ns) { return ns / 1000000u + (ns % 1000000u != 0); }

size_t grpc_pct_encode(const char *in, size_t len, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c >= 0x20 && c <= 0x7E && c != '%') {
            if (o + 1 >= cap)
                break;
            out[o++] = (char)c;
        } else {
            if (o + 3 >= cap)
                break;
            out[o++] = '%';
            out[o++] = hex_upper[c >> 4];
            out[o++] = hex_upper[c & 15];
        }
    }
    out[o] = '\0';
    return o;
}

size_t grpc_pct_decode(const char *in, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int b;
        if (in[i] == '%' && i + 2 < len && (b = hex_byte(in + i + 1)) >= 0) {
            out[o++] = (char)b;
            i += 2;
        } else {
            out[o++] = in[i];
        }
    }
    return o;
}

static char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* Whether v[0..len) starts with the lower-case ASCII word w, ignoring case. */
static bool starts_with_nocase(const char *v, size_t len, const char *w)
{
    size_t n = strlen(w);
    if (len < n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (ascii_lower(v[i]) != w[i])
            return false;
    return true;
}

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

bool grpc_content_type_ok(const char *v, size_t len)
{
    static const char base[] = "application/grpc", proto[] = "+proto";
    if (!starts_with_nocase(v, len, base))
        return false;
    size_t i = sizeof base - 1;
    if (starts_with_nocase(v + i, len - i, proto))
        i += sizeof proto - 1;
    while (i < len && is_ows(v[i]))
        i++;
    return i == len || v[i] == ';';
}

/* Trims spaces and tabs around v[0..*len); returns the new start. */
static const char *trim(const char *v, size_t *len)
{
    size_t n = *len;
    while (n > 0 && is_ows(*v)) {
        v++;
        n--;
    }
    while (n > 0 && is_ows(v[n - 1]))
        n--;
    *len = n;
    return v;
}

static bool equals_nocase(const char *v, size_t len, const char *w)
{
    return strlen(w) == len && starts_with_nocase(v, len, w);
}

enum grpc_encoding grpc_encoding_parse(const char *v, size_t len)
{
    v = trim(v, &len);
    if (len == 0 || equals_nocase(v, len, "identity"))
        return GRPC_ENC_IDENTITY;
    if (equals_nocase(v, len, "gzip"))
        return GRPC_ENC_GZIP;
    return GRPC_ENC_OTHER;
}

bool grpc_list_has(const char *list, size_t len, const char *token)
{
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && list[i] != ',')
            continue;
        size_t n = i - start;
        const char *item = trim(list + start, &n);
        if (equals_nocase(item, n, token))
            return true;
        start = i + 1;
    }
    return false;
}
