/* fuzz_http_proto.c - libFuzzer target for the HTTP/1.1 server machine
 * (http_proto.c), driven with the Car service's app (car_rest.c, which
 * answers synchronously) or with an asynchronous app that answers each
 * request at the next feeding (four in flight at most).
 *
 * The first three bytes set the head and body limits, draining, the app
 * (the top bit of the third) and where the rest is cut; the rest is what a
 * client sent on one connection. It is
 * fed whole, and again in pieces the way http_engine.c feeds it (unconsumed
 * bytes kept and offered again), both times through an output buffer just
 * big enough for the room rule, so HTTP_OUT_FULL is hit. Checked:
 *   - both feedings answer with the same bytes, apart from 100 Continue,
 *     which is only sent when the body has not arrived with the head;
 *   - every response is well-formed: a known status line, Date, Server,
 *     Content-Length matching its body (or no body, for HEAD), at most
 *     HTTP_PROTO_ROOM bytes; "Connection: close" only on the last;
 *   - the request counter matches the final responses, nothing consumed
 *     lies beyond the input, the body bytes counted for the request in
 *     progress (the engine's --min-body-rate) never exceed the bytes
 *     offered, and a request left incomplete at the end gets
 *     a 408 (appended to the answers) that fits the room rule.
 * Any broken invariant abort()s.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "car/car_rest.h"
#include "car/car_server.h"
#include "core/outq.h"
#include "http/http_proto.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *fixed_date(void) { return "Sun, 06 Nov 1994 08:49:37 GMT"; }

#define MAX_INPUT 8192
#define CONTINUE "HTTP/1.1 100 Continue\r\n\r\n"

/* Everything one feeding produced. */
struct transcript {
    char *buf;
    size_t len, cap;
    enum http_stop last;
    struct car_stats stats;
};

static void append(struct transcript *t, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2;
        t->buf = realloc(t->buf, t->cap);
        check(t->buf != NULL);
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

/* The asynchronous app: holds each request until the next feeding, then
 * answers 200 {} (errors {"error":"..."}), counting like the Car app. */
static struct http_req *held[64];
static size_t nheld;

static void async_handle(struct http_req *req)
{
    check(nheld < sizeof held / sizeof held[0]);
    held[nheld++] = req;
}

static void async_observe(const struct http_req *req, int status)
{
    struct car_worker *w = req->worker;
    w->stats.rest_requests++;
    if (status >= 400)
        w->stats.rest_errors++;
}

static void async_error(struct http_req *req, int status, const char *message)
{
    char body[160];
    int n = snprintf(body, sizeof body, "{\"error\":\"%s\"}", message);
    http_respond(req, status, "application/json", body, (size_t)n, NULL);
}

static const struct http_app async_app = {
    .async = true, .handle = async_handle, .observe = async_observe, .error = async_error};

static void answer_held(void)
{
    for (size_t i = 0; i < nheld; i++)
        http_respond(held[i], 200, "application/json", "{}", 2, NULL);
    nheld = 0;
}

/* Offers pending[0..*len) until the machine wants more input or stops,
 * draining the output buffer whenever it is full and answering what the
 * asynchronous app holds; keeps what is left. */
static void feed(struct http_proto *p, char *pending, size_t *len, struct transcript *t)
{
    char room[HTTP_PROTO_ROOM + 512];
    for (int rounds = 0;; rounds++) {
        check(rounds <= MAX_INPUT);
        bool answered = nheld > 0;
        answer_held();
        struct outq spill = {0};
        struct http_out out = {room, 0, sizeof room, &spill};
        size_t used = SIZE_MAX;
        t->last = http_proto_feed(p, pending, *len, &used, &out);
        check(used <= *len && out.len <= out.cap && outq_pending(&spill) == 0);
        append(t, room, out.len);
        memmove(pending, pending + used, *len - used);
        *len -= used;
        if (t->last == HTTP_WAIT_APP && (nheld > 0 || answered))
            continue;
        if (t->last != HTTP_OUT_FULL)
            break;
        check(out.cap - out.len < HTTP_PROTO_ROOM);
    }
}

static void run(const char *in, size_t size, const size_t *cuts, size_t ncuts, size_t max_header,
                size_t max_body, bool draining, bool async, struct transcript *t)
{
    struct car_server_config cfg = {.max_header = max_header, .max_body = max_body};
    struct car_worker w = {.cfg = &cfg};
    struct http_env env = {.app = async ? &async_app : &car_rest_app,
                           .max_inflight = 4,
                           .app_worker = &w,
                           .max_header = max_header,
                           .max_body = max_body,
                           .draining = draining,
                           .log_name = "REST",
                           .date = fixed_date};
    struct http_proto p;
    http_proto_init(&p, &env, 0);
    static char pending[MAX_INPUT];
    size_t len = 0, from = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : size;
        memcpy(pending + len, in + from, to - from);
        len += to - from;
        from = to;
        feed(&p, pending, &len, t);
        check(http_proto_body_received(&p, len) <= from);
    }
    /* Whatever the app still holds is answered. */
    while (nheld > 0)
        feed(&p, pending, &len, t);
    if (t->last == HTTP_CLOSE)
        check(len == 0);
    /* A request left incomplete gets 408 within the room rule. */
    if (http_proto_busy(&p, len)) {
        char room[HTTP_PROTO_ROOM];
        struct outq spill = {0};
        struct http_out out = {room, 0, sizeof room, &spill};
        http_proto_timeout(&p, &out);
        check(out.len == 0 || (out.len > 13 && memcmp(room, "HTTP/1.1 408 ", 13) == 0));
        check(p.phase == HTTP_CLOSED && outq_pending(&spill) == 0);
        append(t, room, out.len);
        t->last = HTTP_CLOSE;
    }
    http_proto_free(&p);
    t->stats = w.stats;
}

/* Removes every 100 Continue. */
static void strip_continues(struct transcript *t)
{
    size_t w = 0, n = sizeof CONTINUE - 1;
    for (size_t r = 0; r < t->len;) {
        if (t->len - r >= n && memcmp(t->buf + r, CONTINUE, n) == 0) {
            r += n;
            continue;
        }
        t->buf[w++] = t->buf[r++];
    }
    t->len = w;
}

static const char *find(const char *hay, size_t n, const char *needle)
{
    return memmem(hay, n, needle, strlen(needle));
}

/* Walks the final responses; returns how many there are. */
static uint64_t check_responses(const struct transcript *t)
{
    static const char *const lines[] = {"200 OK", "201 Created", "400 Bad Request",
                                        "404 Not Found", "405 Method Not Allowed",
                                        "408 Request Timeout", "413 Content Too Large",
                                        "415 Unsupported Media Type", "417 Expectation Failed",
                                        "431 Request Header Fields Too Large",
                                        "501 Not Implemented", "505 HTTP Version Not Supported"};
    if (t->len == 0)
        return 0;
    const char *p = t->buf, *end = t->buf + t->len;
    uint64_t n = 0;
    while (p < end) {
        check(end - p > 9 && memcmp(p, "HTTP/1.1 ", 9) == 0);
        const char *blank = find(p, (size_t)(end - p), "\r\n\r\n");
        check(blank != NULL);
        size_t head_len = (size_t)(blank - p) + 4;
        bool known = false;
        for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
            size_t k = strlen(lines[i]);
            known |= head_len > 9 + k + 2 && memcmp(p + 9, lines[i], k) == 0 &&
                     memcmp(p + 9 + k, "\r\n", 2) == 0;
        }
        check(known);
        check(find(p, head_len, "\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n") != NULL);
        check(find(p, head_len, "\r\nServer: shootout/") != NULL);
        const char *cl = find(p, head_len, "\r\nContent-Length: ");
        check(cl != NULL);
        size_t body_len = strtoul(cl + 18, NULL, 10);
        const char *next = blank + 4;
        /* Bodies are JSON objects; a HEAD answer has none. */
        if (next < end && *next == '{') {
            check((size_t)(end - next) >= body_len);
            next += body_len;
        }
        check((size_t)(next - p) <= HTTP_PROTO_ROOM);
        if (find(p, head_len, "\r\nConnection: close\r\n"))
            check(next == end && t->last == HTTP_CLOSE);
        p = next;
        n++;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || size - 3 > MAX_INPUT)
        return 0;
    size_t max_header = 256 + (size_t)data[0] * 16;
    size_t max_body = (size_t)data[1] * 8;
    bool draining = data[2] & 1;
    bool async = data[2] & 0x80;
    unsigned seed = (data[2] >> 1) & 0x3f;
    const char *in = (const char *)data + 3;
    size = size - 3;

    /* Cut points from a small generator seeded by the third byte. */
    size_t cuts[64], ncuts = 0, at = 0;
    uint32_t x = seed * 2654435761u + 1;
    while (ncuts < sizeof cuts / sizeof cuts[0]) {
        x = x * 1103515245u + 12345u;
        at += 1 + (x >> 16) % 97;
        if (at >= size)
            break;
        cuts[ncuts++] = at;
    }

    struct transcript whole = {0}, split = {0};
    run(in, size, NULL, 0, max_header, max_body, draining, async, &whole);
    run(in, size, cuts, ncuts, max_header, max_body, draining, async, &split);

    check(whole.last == split.last);
    check(whole.stats.rest_requests == split.stats.rest_requests);
    check(whole.stats.rest_errors == split.stats.rest_errors);
    strip_continues(&whole);
    strip_continues(&split);
    check(whole.len == split.len);
    check(whole.len == 0 || memcmp(whole.buf, split.buf, whole.len) == 0);
    check(check_responses(&whole) == whole.stats.rest_requests);

    free(whole.buf);
    free(split.buf);
    return 0;
}
