/* trace.c - the wire trace of the load generators: line formatting, the
 * sampling rules and the one buffered, locked output stream (trace.h). */
#include "load/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/mem.h"
#include "http/http_client.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"

/* Big enough that a fully traced run writes in large blocks. */
#define TRACE_BUF (1u << 20)
/* A line: a header field, or a body cut at --trace-body, escaped (4 bytes
 * per byte at worst); longer lines are cut. */
#define TRACE_LINE (4 * TRACE_BODY_MAX + 256)

struct trace {
    struct http_tracer http; /* first: trace_http's hooks get the trace back by a cast */
    FILE *f;
    bool own; /* not stdout */
    pthread_mutex_t lock;
    char *buf; /* f's buffer, when own */
    uint64_t t0_ns;
    unsigned sample, body_max;
    _Atomic unsigned next_conn;
    bool failed; /* a write failed: reported at the close */
    int err;
};

/* trace_http's hooks: the trace's own functions on the trace the tracer
 * is the first member of. */
static bool http_pick(const struct http_tracer *h, uint64_t seq)
{
    return trace_pick((const struct trace *)h, seq);
}

static unsigned http_conn_id(struct http_tracer *h) { return trace_conn_id((struct trace *)h); }

static unsigned http_body_max(const struct http_tracer *h) { return trace_body_max((const struct trace *)h); }

static void http_head(struct http_tracer *h, unsigned conn, char dir, const char *head, size_t len)
{
    trace_http_head((struct trace *)h, conn, dir, head, len);
}

static void http_body(struct http_tracer *h, unsigned conn, char dir, const void *data, size_t kept,
                      uint64_t total)
{
    trace_body((struct trace *)h, conn, dir, data, kept, total);
}

static const struct http_tracer trace_http_hooks = {http_pick, http_conn_id, http_body_max, http_head,
                                                    http_body};

struct http_tracer *trace_http(struct trace *t) { return t ? &t->http : NULL; }

struct trace *trace_open(const char *path, unsigned sample, unsigned body_max,
                         const char *command_line, char *err, size_t errlen)
{
    bool out = !strcmp(path, "-");
    FILE *f = out ? stdout : fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "--trace: cannot create %s: %s", path, strerror(errno));
        return NULL;
    }
    struct trace *t = mem_calloc(1, sizeof *t);
    t->f = f;
    t->own = !out;
    /* stdout keeps its own buffering: it may have been written to. */
    if (t->own) {
        t->buf = mem_alloc(TRACE_BUF);
        setvbuf(f, t->buf, _IOFBF, TRACE_BUF);
    }
    pthread_mutex_init(&t->lock, NULL);
    t->sample = sample ? sample : 1;
    t->body_max = body_max;
    t->t0_ns = clock_now_ns();
    t->http = trace_http_hooks;
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    fprintf(f, "# shootout trace 1: %s\n# started %s, sample 1/%u, bodies cut at %u bytes\n"
               "# seconds conn dir kind summary\n",
            command_line ? command_line : "", when, t->sample, t->body_max);
    return t;
}

int trace_close(struct trace *t, char *err, size_t errlen)
{
    if (!t)
        return 0;
    int rc = 0;
    if (fflush(t->f) != 0 && !t->failed) {
        t->failed = true;
        t->err = errno;
    }
    if (t->own && fclose(t->f) != 0 && !t->failed) {
        t->failed = true;
        t->err = errno;
    }
    if (t->failed) {
        snprintf(err, errlen, "--trace: writing the trace failed: %s", strerror(t->err));
        rc = -1;
    }
    pthread_mutex_destroy(&t->lock);
    mem_free(t->buf);
    mem_free(t);
    return rc;
}

bool trace_pick(const struct trace *t, uint64_t seq) { return seq % t->sample == 0; }

unsigned trace_conn_id(struct trace *t) { return atomic_fetch_add(&t->next_conn, 1); }

unsigned trace_body_max(const struct trace *t) { return t->body_max; }

static void trace_put(struct trace *t, const char *line, size_t len)
{
    pthread_mutex_lock(&t->lock);
    if (fwrite(line, 1, len, t->f) != len && !t->failed) {
        t->failed = true;
        t->err = errno;
    }
    pthread_mutex_unlock(&t->lock);
}

void trace_note(struct trace *t, const char *fmt, ...)
{
    char line[512];
    line[0] = '#';
    line[1] = ' ';
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + 2, sizeof line - 3, fmt, ap);
    va_end(ap);
    size_t len = 2 + (n < 0 ? 0 : (size_t)n < sizeof line - 3 ? (size_t)n : sizeof line - 4);
    line[len++] = '\n';
    trace_put(t, line, len);
}

/* The stamp and the line's first fields; returns their length. */
static size_t trace_stamp(const struct trace *t, char *line, size_t cap, unsigned conn, char dir,
                          const char *kind)
{
    uint64_t us = (clock_now_ns() - t->t0_ns) / 1000;
    int n = snprintf(line, cap, "%llu.%06llu %u %c %s ", (unsigned long long)(us / 1000000),
                     (unsigned long long)(us % 1000000), conn, dir, kind);
    return n < 0 ? 0 : (size_t)n;
}

/* Ends line[0..len) (cut to cap) with a newline and writes it. */
static void trace_end(struct trace *t, char *line, size_t len, size_t cap)
{
    if (len > cap - 1)
        len = cap - 1;
    line[len++] = '\n';
    trace_put(t, line, len);
}

void trace_line(struct trace *t, unsigned conn, char dir, const char *kind, const char *fmt, ...)
{
    char line[1024];
    size_t len = trace_stamp(t, line, sizeof line, conn, dir, kind);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + len, sizeof line - len, fmt, ap);
    va_end(ap);
    trace_end(t, line, len + (n < 0 ? 0 : (size_t)n), sizeof line);
}

size_t trace_escape(char *out, size_t cap, const void *data, size_t len, size_t max)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = data;
    size_t o = 0;
    if (len > max)
        len = max;
    for (size_t i = 0; i < len && o + 5 < cap; i++) {
        unsigned char ch = p[i];
        char esc = ch == '\n' ? 'n' : ch == '\r' ? 'r' : ch == '\t' ? 't' : ch == '\\' ? '\\' : 0;
        if (esc) {
            out[o++] = '\\';
            out[o++] = esc;
        } else if (ch >= 0x20 && ch < 0x7f) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    if (cap)
        out[o < cap ? o : cap - 1] = '\0';
    return o;
}

void trace_body(struct trace *t, unsigned conn, char dir, const void *data, size_t kept,
                uint64_t total)
{
    char line[TRACE_LINE];
    size_t len = trace_stamp(t, line, sizeof line, conn, dir, "body");
    len += (size_t)snprintf(line + len, sizeof line - len, "%llu ", (unsigned long long)total);
    len += trace_escape(line + len, sizeof line - len, data, kept, t->body_max);
    trace_end(t, line, len, sizeof line);
}

void trace_http_head(struct trace *t, unsigned conn, char dir, const char *head, size_t len)
{
    const char *p = head, *end = head + len;
    bool first = true;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *stop = eol ? eol : end;
        size_t n = (size_t)(stop - p);
        if (n && p[n - 1] == '\r')
            n--;
        if (n == 0) /* the empty line ends the head */
            break;
        char text[TRACE_LINE / 2];
        trace_escape(text, sizeof text, p, n, sizeof text / 4);
        trace_line(t, conn, dir, first ? "http" : "hdr", "%s", text);
        first = false;
        p = eol ? eol + 1 : end;
    }
}

/* ---- MQTT ---------------------------------------------------------------- */

static const char *const trace_mqtt_names[] = {
    [MQTT_CONNECT] = "CONNECT",         [MQTT_CONNACK] = "CONNACK",
    [MQTT_PUBLISH] = "PUBLISH",         [MQTT_PUBACK] = "PUBACK",
    [MQTT_PUBREC] = "PUBREC",           [MQTT_PUBREL] = "PUBREL",
    [MQTT_PUBCOMP] = "PUBCOMP",         [MQTT_SUBSCRIBE] = "SUBSCRIBE",
    [MQTT_SUBACK] = "SUBACK",           [MQTT_UNSUBSCRIBE] = "UNSUBSCRIBE",
    [MQTT_UNSUBACK] = "UNSUBACK",       [MQTT_PINGREQ] = "PINGREQ",
    [MQTT_PINGRESP] = "PINGRESP",       [MQTT_DISCONNECT] = "DISCONNECT",
};

/* The fixed header, leniently: the trace shows what was sent or received
 * even when the client is about to refuse it. */
static bool trace_mqtt_header(const uint8_t *pkt, size_t len, struct mqtt_header *h)
{
    if (len < 2)
        return false;
    uint32_t v;
    bool non_minimal;
    int n = mqtt_decode_varint(pkt + 1, len - 1, &v, &non_minimal);
    if (n <= 0 || 1 + (size_t)n + v > len)
        return false;
    h->type = pkt[0] >> 4;
    h->flags = pkt[0] & 15;
    h->header_len = (uint8_t)(1 + n);
    h->body_len = v;
    return true;
}

/* The packet id of a QoS 1/2 flow's packet, 0 if it has none. */
static uint16_t trace_mqtt_pid(const struct mqtt_header *h, const uint8_t *body)
{
    switch (h->type) {
    case MQTT_PUBLISH: {
        if (!(h->flags & 6) || h->body_len < 2)
            return 0;
        size_t tl = (size_t)body[0] << 8 | body[1];
        return h->body_len < tl + 4 ? 0 : (uint16_t)(body[2 + tl] << 8 | body[3 + tl]);
    }
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
        return h->body_len < 2 ? 0 : (uint16_t)(body[0] << 8 | body[1]);
    default:
        return 0;
    }
}

__attribute__((format(printf, 4, 5)))
static size_t trace_add(char *out, size_t cap, size_t o, const char *fmt, ...)
{
    if (o >= cap)
        return o;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + o, cap - o, fmt, ap);
    va_end(ap);
    if (n < 0)
        return o;
    return o + (size_t)n < cap ? o + (size_t)n : cap - 1;
}

static size_t trace_add_bytes(char *out, size_t cap, size_t o, const char *key,
                              struct mqtt_bytes b)
{
    o = trace_add(out, cap, o, " %s=", key);
    return o + trace_escape(out + o, cap - o, b.ptr, b.len, 128);
}

static size_t trace_fmt_publish(char *out, size_t cap, size_t o, bool v5,
                                const struct mqtt_header *h, const uint8_t *body)
{
    struct mqtt_publish p = {0};
    int err;
    if (v5) {
        struct mqtt5_publish p5 = {0};
        err = mqtt5_decode_publish(body, h->body_len, h->flags, &p5);
        p = (struct mqtt_publish){p5.topic, p5.payload, p5.packet_id, p5.qos, p5.retain, p5.dup};
    } else {
        err = mqtt_decode_publish(body, h->body_len, h->flags, &p);
    }
    if (err != MQTT_OK)
        return trace_add(out, cap, o, " malformed len=%u", (unsigned)h->body_len);
    o = trace_add(out, cap, o, " q%u", p.qos);
    if (p.qos)
        o = trace_add(out, cap, o, " pid=%u", p.packet_id);
    if (p.retain)
        o = trace_add(out, cap, o, " retain");
    if (p.dup)
        o = trace_add(out, cap, o, " dup");
    o = trace_add_bytes(out, cap, o, "topic", p.topic);
    return trace_add(out, cap, o, " len=%zu", p.payload.len);
}

static size_t trace_fmt_ack(char *out, size_t cap, size_t o, bool v5, const struct mqtt_header *h,
                            const uint8_t *body)
{
    struct mqtt5_ack a = {0};
    int err = v5 ? mqtt5_decode_ack(h->type, body, h->body_len, &a)
                 : mqtt_decode_ack(body, h->body_len, &a.packet_id);
    if (err != MQTT_OK)
        return trace_add(out, cap, o, " malformed");
    o = trace_add(out, cap, o, " pid=%u", a.packet_id);
    return v5 ? trace_add(out, cap, o, " rc=0x%02x", a.reason) : o;
}

static size_t trace_fmt_connect(char *out, size_t cap, size_t o, bool v5,
                                const struct mqtt_header *h, const uint8_t *body)
{
    struct mqtt_bytes id;
    unsigned level, keepalive;
    bool clean;
    if (v5) {
        struct mqtt5_connect c;
        if (mqtt5_decode_connect(body, h->body_len, &c) != MQTT_OK)
            return trace_add(out, cap, o, " malformed");
        id = c.client_id, level = c.protocol_level, keepalive = c.keepalive, clean = c.clean_start;
    } else {
        struct mqtt_connect c;
        if (mqtt_decode_connect(body, h->body_len, &c) != MQTT_OK)
            return trace_add(out, cap, o, " malformed");
        id = c.client_id, level = c.protocol_level, keepalive = c.keepalive,
        clean = c.clean_session;
    }
    o = trace_add(out, cap, o, " v%u", level);
    o = trace_add_bytes(out, cap, o, "id", id);
    return trace_add(out, cap, o, " clean=%d keepalive=%u", clean, keepalive);
}

static size_t trace_fmt_connack(char *out, size_t cap, size_t o, bool v5,
                                const struct mqtt_header *h, const uint8_t *body)
{
    bool sp = false;
    uint8_t rc = 0;
    int err;
    if (v5) {
        struct mqtt5_connack a = {0};
        err = mqtt5_decode_connack(body, h->body_len, &a);
        sp = a.session_present, rc = a.reason;
    } else {
        err = mqtt_decode_connack(body, h->body_len, &sp, &rc);
    }
    if (err != MQTT_OK)
        return trace_add(out, cap, o, " malformed");
    return trace_add(out, cap, o, " sp=%d rc=%u", sp, rc);
}

static size_t trace_fmt_subscribe(char *out, size_t cap, size_t o, bool v5,
                                  const struct mqtt_header *h, const uint8_t *body)
{
    struct mqtt_filters f;
    int err;
    if (v5) {
        struct mqtt5_subscribe s = {0};
        err = mqtt5_decode_subscribe(body, h->body_len, &s);
        f = s.filters;
    } else {
        err = mqtt_decode_subscribe(body, h->body_len, &f);
    }
    if (err != MQTT_OK)
        return trace_add(out, cap, o, " malformed");
    o = trace_add(out, cap, o, " pid=%u", f.packet_id);
    struct mqtt_filter_iter it;
    mqtt_filter_iter_init(&it, &f);
    struct mqtt_bytes filter;
    uint8_t qos;
    while (mqtt_filter_next(&it, &filter, &qos)) {
        o = trace_add_bytes(out, cap, o, "filter", filter);
        o = trace_add(out, cap, o, ":q%u", qos & 3);
    }
    return o;
}

static size_t trace_fmt_suback(char *out, size_t cap, size_t o, bool v5,
                               const struct mqtt_header *h, const uint8_t *body)
{
    struct mqtt_suback s;
    int err;
    if (v5) {
        struct mqtt5_suback s5 = {0};
        err = mqtt5_decode_suback(MQTT_SUBACK, body, h->body_len, &s5);
        s = (struct mqtt_suback){s5.packet_id, s5.codes, s5.count};
    } else {
        err = mqtt_decode_suback(body, h->body_len, &s);
    }
    if (err != MQTT_OK)
        return trace_add(out, cap, o, " malformed");
    o = trace_add(out, cap, o, " pid=%u codes=", s.packet_id);
    for (unsigned i = 0; i < s.count; i++)
        o = trace_add(out, cap, o, "%s0x%02x", i ? "," : "", s.codes[i]);
    return o;
}

size_t trace_mqtt_format(char *out, size_t cap, uint8_t version, const uint8_t *pkt, size_t len)
{
    struct mqtt_header h;
    if (!trace_mqtt_header(pkt, len, &h))
        return trace_add(out, cap, 0, "? bad fixed header, %zu bytes", len);
    const uint8_t *body = pkt + h.header_len;
    bool v5 = version == MQTT5_PROTOCOL_LEVEL;
    size_t o = h.type && h.type <= MQTT_DISCONNECT
                   ? trace_add(out, cap, 0, "%s", trace_mqtt_names[h.type])
                   : trace_add(out, cap, 0, "TYPE%u", h.type);
    switch (h.type) {
    case MQTT_CONNECT: return trace_fmt_connect(out, cap, o, v5, &h, body);
    case MQTT_CONNACK: return trace_fmt_connack(out, cap, o, v5, &h, body);
    case MQTT_PUBLISH: return trace_fmt_publish(out, cap, o, v5, &h, body);
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP: return trace_fmt_ack(out, cap, o, v5, &h, body);
    case MQTT_SUBSCRIBE: return trace_fmt_subscribe(out, cap, o, v5, &h, body);
    case MQTT_SUBACK: return trace_fmt_suback(out, cap, o, v5, &h, body);
    default: return h.body_len ? trace_add(out, cap, o, " len=%u", (unsigned)h.body_len) : o;
    }
}

void trace_mqtt(struct trace *t, unsigned conn, char dir, uint8_t version, const uint8_t *pkt,
                size_t len, uint64_t *q0_seq)
{
    struct mqtt_header h;
    if (trace_mqtt_header(pkt, len, &h)) {
        uint16_t pid = trace_mqtt_pid(&h, pkt + h.header_len);
        bool q0 = h.type == MQTT_PUBLISH && !(h.flags & 6);
        bool picked = pid ? pid % t->sample == 0 : q0 ? trace_pick(t, (*q0_seq)++)
                                                      : conn % t->sample == 0;
        if (!picked)
            return;
    }
    char line[1024];
    size_t o = trace_stamp(t, line, sizeof line, conn, dir, "mqtt");
    o += trace_mqtt_format(line + o, sizeof line - o, version, pkt, len);
    trace_end(t, line, o, sizeof line);
}
