/* hdr.c - a PUBLISH's RETAIN flag and MQTT 5 properties as NATS headers
 * (hdr.h has the headers and their encodings). */
#include "cluster/hdr.h"

#include <stdio.h>
#include <string.h>

#include "core/base64.h"
#include "core/mem.h"
#include "mqtt/mqtt_topic.h"

static const char HEX[] = "0123456789ABCDEF";

/* The longest MQTT string or binary value (a two-byte length). */
#define HDR_VALUE_MAX 65535

/* ---- encoding ---------------------------------------------------------------- */

/* Bytes percent-encoding passes through (hdr.h). */
static bool hdr_plain(uint8_t c)
{
    return c >= 0x21 && c <= 0x7E && c != '%' && c != ':';
}

/* s percent-encoded at out (room for 3 * n + 1 bytes); returns the end
 * (not NUL-terminated). */
static char *hdr_pct(char *out, const uint8_t *s, size_t n)
{
    if (n == 0) {
        *out++ = '%'; /* a header value cannot be empty */
        return out;
    }
    for (size_t i = 0; i < n; i++) {
        if (hdr_plain(s[i])) {
            *out++ = (char)s[i];
        } else {
            *out++ = '%';
            *out++ = HEX[s[i] >> 4];
            *out++ = HEX[s[i] & 15];
        }
    }
    return out;
}

/* A buffer for one value at a time, grown as needed. */
struct hdr_out {
    char *p;
    size_t cap;
};

static char *hdr_room(struct hdr_out *o, size_t n)
{
    if (n > o->cap) {
        o->cap = n;
        o->p = mem_realloc(o->p, n);
    }
    return o->p;
}

static bool hdr_put_pct(struct hdr_out *o, hdr_put_fn put, void *ctx, const char *name,
                        struct mqtt_bytes s)
{
    char *end = hdr_pct(hdr_room(o, 3 * (size_t)s.len + 2), s.ptr, s.len);
    *end = '\0';
    return put(ctx, name, o->p);
}

bool hdr_encode(const struct mqtt_props *props, bool retain, hdr_put_fn put, void *ctx)
{
    bool ok = !retain || put(ctx, HDR_RETAIN, "1");
    if (!props || !ok)
        return ok;
    uint64_t has = props->present;
    char num[16];
    struct hdr_out o = {0};
    if (ok && (has & MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY))) {
        snprintf(num, sizeof num, "%u", (unsigned)props->message_expiry);
        ok = put(ctx, HDR_EXPIRY, num);
    }
    if (ok && (has & MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT)))
        ok = put(ctx, HDR_FORMAT, props->payload_format ? "1" : "0");
    if (ok && (has & MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE)))
        ok = hdr_put_pct(&o, put, ctx, HDR_CONTENT_TYPE, props->content_type);
    if (ok && (has & MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC)))
        ok = hdr_put_pct(&o, put, ctx, HDR_RESPONSE_TOPIC, props->response_topic);
    if (ok && (has & MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA))) {
        const struct mqtt_bytes *d = &props->correlation_data;
        char *v = hdr_room(&o, BASE64_ENCODED_LEN((size_t)d->len) + 2);
        if (d->len == 0)
            strcpy(v, "="); /* a header value cannot be empty */
        else
            base64_encode(v, d->ptr, d->len);
        ok = put(ctx, HDR_CORRELATION, v);
    }
    if (ok && (has & MQTT_PROP_BIT(MQTT_PROP_USER))) {
        struct mqtt_props_iter it;
        struct mqtt_user_prop up;
        mqtt_props_users(props, &it);
        while (ok && mqtt_props_next_user(&it, &up)) {
            char *v = hdr_room(&o, 3 * ((size_t)up.name.len + up.value.len) + 4);
            char *end = hdr_pct(v, up.name.ptr, up.name.len);
            *end++ = ':';
            end = hdr_pct(end, up.value.ptr, up.value.len);
            *end = '\0';
            ok = put(ctx, HDR_USER, v);
        }
    }
    mem_free(o.p);
    return ok;
}

/* ---- decoding ------------------------------------------------------------------ */

void hdr_in_init(struct hdr_in *h)
{
    memset(h, 0, sizeof *h);
}

void hdr_in_free(struct hdr_in *h)
{
    mem_free(h->buf);
    mem_free(h->users);
    mem_free(h->user_list);
    memset(h, 0, sizeof *h);
}

static int hdr_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1; /* lower case is not what encoding writes */
}

/* Room for n more decoded bytes at h->buf + h->len. */
static uint8_t *hdr_reserve(struct hdr_in *h, size_t n)
{
    if (n > h->cap - h->len) {
        size_t cap = h->cap ? h->cap : 256;
        while (cap - h->len < n)
            cap *= 2;
        h->buf = mem_realloc(h->buf, cap);
        h->cap = cap;
    }
    return h->buf + h->len;
}

/* Decodes the percent-encoded v[0..n) into the buffer as *out; false if it
 * is not exactly what hdr_pct writes, is longer than an MQTT string, or
 * is not MQTT's UTF-8 (the receivers are MQTT clients). */
static bool hdr_unpct(struct hdr_in *h, const char *v, size_t n, struct hdr_span *out)
{
    if (n == 1 && v[0] == '%') {
        *out = (struct hdr_span){(uint32_t)h->len, 0};
        return true;
    }
    if (n == 0)
        return false;
    uint8_t *p = hdr_reserve(h, n), *start = p;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)v[i];
        if (c != '%') {
            if (!hdr_plain(c))
                return false;
            *p++ = c;
            continue;
        }
        int hi = i + 2 < n ? hdr_hexval(v[i + 1]) : -1;
        int lo = hi >= 0 ? hdr_hexval(v[i + 2]) : -1;
        if (lo < 0 || hdr_plain((uint8_t)(hi << 4 | lo)))
            return false; /* an escape encoding does not write */
        *p++ = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    size_t len = (size_t)(p - start);
    if (len > HDR_VALUE_MAX || !mqtt_utf8_valid(start, len))
        return false;
    *out = (struct hdr_span){(uint32_t)h->len, (uint32_t)len};
    h->len += len;
    return true;
}

/* "0" or "1". */
static bool hdr_flag(const char *v, uint8_t *out)
{
    if ((v[0] != '0' && v[0] != '1') || v[1])
        return false;
    *out = (uint8_t)(v[0] - '0');
    return true;
}

/* A decimal uint32_t without leading zeros. */
static bool hdr_u32(const char *v, uint32_t *out)
{
    uint64_t n = 0;
    size_t i = 0;
    for (; v[i] >= '0' && v[i] <= '9'; i++) {
        n = n * 10 + (uint64_t)(v[i] - '0');
        if (n > UINT32_MAX)
            return false;
    }
    if (i == 0 || v[i] || (v[0] == '0' && i > 1))
        return false;
    *out = (uint32_t)n;
    return true;
}

static bool hdr_correlation(struct hdr_in *h, const char *v)
{
    size_t n = strlen(v);
    if (n == 1 && v[0] == '=') {
        h->correlation = (struct hdr_span){(uint32_t)h->len, 0};
        return true;
    }
    if (n == 0 || n > BASE64_ENCODED_LEN(HDR_VALUE_MAX))
        return false;
    ssize_t len = base64_decode(hdr_reserve(h, n), n, v, n);
    if (len <= 0) /* empty data is "=" alone */
        return false;
    h->correlation = (struct hdr_span){(uint32_t)h->len, (uint32_t)len};
    h->len += (size_t)len;
    return true;
}

static bool hdr_user(struct hdr_in *h, const char *v)
{
    const char *colon = strchr(v, ':');
    if (!colon)
        return false;
    struct hdr_span name, value;
    size_t mark = h->len;
    if (!hdr_unpct(h, v, (size_t)(colon - v), &name) ||
        !hdr_unpct(h, colon + 1, strlen(colon + 1), &value)) {
        h->len = mark;
        return false;
    }
    if (h->nusers + 2 > h->users_cap) {
        h->users_cap = h->users_cap ? h->users_cap * 2 : 8;
        h->users = mem_realloc(h->users, h->users_cap * sizeof *h->users);
    }
    h->users[h->nusers++] = name;
    h->users[h->nusers++] = value;
    return true;
}

/* The property bit a single-valued header sets, 0 for a name not ours. */
static uint64_t hdr_single_bit(const char *name)
{
    static const struct {
        const char *name;
        uint64_t bit;
    } single[] = {
        {HDR_EXPIRY, MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY)},
        {HDR_FORMAT, MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT)},
        {HDR_CONTENT_TYPE, MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE)},
        {HDR_RESPONSE_TOPIC, MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC)},
        {HDR_CORRELATION, MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA)},
    };
    for (size_t i = 0; i < sizeof single / sizeof *single; i++)
        if (strcmp(name, single[i].name) == 0)
            return single[i].bit;
    return 0;
}

void hdr_in_add(struct hdr_in *h, const char *name, const char *value)
{
    bool ok;
    if (strcmp(name, HDR_USER) == 0) {
        ok = hdr_user(h, value);
    } else if (strcmp(name, HDR_RETAIN) == 0) {
        ok = !h->retain && strcmp(value, "1") == 0; /* a second one is counted */
        h->retain |= ok;
    } else {
        uint64_t bit = hdr_single_bit(name);
        if (!bit)
            return; /* Mqtt-Id, Mqtt-Qos (link.c's) or a foreign header */
        struct mqtt_props *p = &h->props;
        ok = !(p->present & bit); /* the first of a repeated header counts */
        if (ok && bit == MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY))
            ok = hdr_u32(value, &p->message_expiry);
        else if (ok && bit == MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT))
            ok = hdr_flag(value, &p->payload_format);
        else if (ok && bit == MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE))
            ok = hdr_unpct(h, value, strlen(value), &h->content_type);
        else if (ok && bit == MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC))
            ok = hdr_unpct(h, value, strlen(value), &h->response_topic) &&
                 h->response_topic.len > 0 && /* a topic is never empty; buf may be NULL */
                 mqtt_topic_name_valid(h->buf + h->response_topic.off, h->response_topic.len);
        else if (ok)
            ok = hdr_correlation(h, value);
        if (ok)
            p->present |= bit;
    }
    if (!ok)
        h->bad++;
}

static struct mqtt_bytes hdr_bytes(const struct hdr_in *h, struct hdr_span s)
{
    return (struct mqtt_bytes){h->buf ? h->buf + s.off : (const uint8_t *)"", s.len};
}

const struct mqtt_props *hdr_in_end(struct hdr_in *h)
{
    struct mqtt_props *p = &h->props;
    if (h->nusers) {
        uint32_t n = h->nusers / 2;
        h->user_list = mem_alloc(n * sizeof *h->user_list);
        for (uint32_t i = 0; i < n; i++)
            h->user_list[i] = (struct mqtt_user_prop){hdr_bytes(h, h->users[2 * i]),
                                                      hdr_bytes(h, h->users[2 * i + 1])};
        p->user_count = n;
        p->user_list = h->user_list;
        p->present |= MQTT_PROP_BIT(MQTT_PROP_USER);
    }
    p->content_type = hdr_bytes(h, h->content_type);
    p->response_topic = hdr_bytes(h, h->response_topic);
    p->correlation_data = hdr_bytes(h, h->correlation);
    return p->present ? p : NULL;
}
