/* fuzz_http1.c - libFuzzer target for the HTTP/1.1 codec (http1.c).
 *
 * The first two bytes set the limits (header count, head size, body size)
 * so that every bound gets hit; the rest is read twice: as a server reads a
 * connection (request head, then its Content-Length or chunked body, then
 * the next pipelined request), and as a client reads one (the same with
 * response heads, and a body that may run to the end). Checked on the way:
 *   - nothing consumed lies beyond the input, and every slice lies within
 *     the head it came from; header names are tokens, values are trimmed;
 *   - the framing agrees with the status: no body for 1xx, 204 and 304, and
 *     a body that runs to the close never keeps the connection;
 *   - a prefix of the input answers "need more" or exactly what the whole
 *     answers (several split points for heads and for chunked bodies);
 *   - chunked decoding in place, into a separate buffer and in two pieces
 *     gives the same bytes, the same consumption and the same result.
 * Any broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "http/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADERS 16

static void check_in(struct http1_str s, const char *lo, const char *hi)
{
    if (s.ptr == NULL) {
        check(s.len == 0);
        return;
    }
    check(s.ptr >= lo && s.ptr <= hi && s.len <= (size_t)(hi - s.ptr));
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }

static void check_headers(const char *buf, const char *hi, const struct http1_header *h, size_t n)
{
    check(n <= MAX_HEADERS);
    for (size_t k = 0; k < n; k++) {
        check_in(h[k].name, buf, hi);
        check_in(h[k].value, buf, hi);
        check(h[k].name.len > 0 && memchr(h[k].name.ptr, ':', h[k].name.len) == NULL);
        if (h[k].value.len > 0) {
            check(!is_space(h[k].value.ptr[0]) && !is_space(h[k].value.ptr[h[k].value.len - 1]));
            check(memchr(h[k].value.ptr, '\r', h[k].value.len) == NULL);
            check(memchr(h[k].value.ptr, '\n', h[k].value.len) == NULL);
        }
    }
}

static void check_request(const char *buf, int rc, const struct http1_request *req,
                          const struct http1_header *h)
{
    const char *hi = buf + rc;
    check_in(req->method, buf, hi);
    check_in(req->target, buf, hi);
    check_in(req->path, buf, hi);
    check_in(req->query, buf, hi);
    check_in(req->content_type, buf, hi);
    check(req->method.len > 0 && req->target.len > 0);
    check(req->minor_version == 0 || req->minor_version == 1);
    check_headers(buf, hi, h, req->num_headers);
    check(!req->expect_continue || req->minor_version == 1);
    check(req->body != HTTP1_BODY_CHUNKED || req->minor_version == 1);
    check(req->body != HTTP1_BODY_UNTIL_CLOSE);
}

struct chunk_result {
    int rc;
    size_t used, out_len;
};

static struct chunk_result decode(const char *in, size_t len, char *out, uint64_t max_body,
                                  size_t split)
{
    struct http1_chunked d;
    http1_chunked_init(&d, max_body);
    struct chunk_result r = {0};
    size_t used, out_len;
    r.rc = http1_chunked_decode(&d, in, split, out, &out_len, &used);
    check(used <= split && out_len <= used);
    r.used = used;
    r.out_len = out_len;
    if (r.rc == 0 && split < len) {
        check(used == split);
        r.rc = http1_chunked_decode(&d, in + split, len - split, out + out_len, &out_len, &used);
        check(used <= len - split && out_len <= used);
        r.used += used;
        r.out_len += out_len;
    }
    check(d.total == r.out_len && d.total <= max_body);
    check(r.rc >= HTTP1_E_BODY_TOO_LARGE && r.rc <= 1);
    check(r.rc >= 0 || http1_status(r.rc) >= 400);
    if (r.rc == 0)
        check(r.used == len);
    return r;
}

/* Decodes a chunked body every way there is and checks they agree. */
static struct chunk_result check_chunked(const char *in, size_t len, uint64_t max_body)
{
    char *out = malloc(len + 1);
    char *out2 = malloc(len + 1);
    char *inplace = malloc(len + 1);
    check(out && out2 && inplace);
    struct chunk_result whole = decode(in, len, out, max_body, len);

    memcpy(inplace, in, len);
    struct chunk_result r = decode(inplace, len, inplace, max_body, len);
    check(r.rc == whole.rc && r.used == whole.used && r.out_len == whole.out_len);
    check(memcmp(inplace, out, whole.out_len) == 0);

    size_t splits[] = {1, len / 3, len / 2, len - 1};
    for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
        if (splits[k] == 0 || splits[k] >= len)
            continue;
        r = decode(in, len, out2, max_body, splits[k]);
        check(r.rc == whole.rc && r.used == whole.used && r.out_len == whole.out_len);
        check(memcmp(out2, out, whole.out_len) == 0);
    }
    free(out);
    free(out2);
    free(inplace);
    return whole;
}

static void check_response(const char *buf, int rc, const struct http1_response *resp,
                           const struct http1_header *h)
{
    const char *hi = buf + rc;
    check_in(resp->reason, buf, hi);
    check_in(resp->content_type, buf, hi);
    check(resp->status >= 100 && resp->status <= 599);
    check(resp->minor_version == 0 || resp->minor_version == 1);
    check_headers(buf, hi, h, resp->num_headers);
    int s = resp->status;
    if (s < 200 || s == 204 || s == 304)
        check(resp->body == HTTP1_BODY_NONE);
    else
        check(resp->body != HTTP1_BODY_NONE);
    check(resp->body != HTTP1_BODY_UNTIL_CLOSE || !resp->keep_alive);
    check(resp->body != HTTP1_BODY_CHUNKED || resp->minor_version == 1);
}

/* What the walk needs of a request or response head. */
struct head {
    int rc;
    enum http1_body body;
    uint64_t content_length;
    bool keep_alive;
    size_t num_headers;
};

static struct head parse_head(bool response, const char *p, size_t n, struct http1_header *h,
                              size_t max_headers, size_t max_head)
{
    struct head r;
    if (response) {
        struct http1_response resp;
        r.rc = http1_parse_response(p, n, &resp, h, max_headers, max_head);
        if (r.rc > 0)
            check_response(p, r.rc, &resp, h);
        r.body = resp.body;
        r.content_length = resp.content_length;
        r.keep_alive = resp.keep_alive;
        r.num_headers = resp.num_headers;
    } else {
        struct http1_request req;
        r.rc = http1_parse_request(p, n, &req, h, max_headers, max_head);
        if (r.rc > 0) {
            check_request(p, r.rc, &req, h);
            (void)http1_media_type_is(req.content_type, "application/json");
        }
        r.body = req.body;
        r.content_length = req.content_length;
        r.keep_alive = req.keep_alive;
        r.num_headers = req.num_headers;
    }
    return r;
}

/* Reads buf[0..len) as a stream of requests or of responses. */
static void walk(bool response, const char *buf, size_t len, size_t max_headers, size_t max_head,
                 uint64_t max_body)
{
    struct http1_header h[MAX_HEADERS], h2[MAX_HEADERS];
    size_t off = 0;
    while (off < len) {
        const char *p = buf + off;
        size_t n = len - off;
        struct head hd = parse_head(response, p, n, h, max_headers, max_head);
        int rc = hd.rc;
        check(rc <= 0 || ((size_t)rc <= n && (size_t)rc <= max_head));

        /* Prefixes: "need more" or the same answer as the whole. */
        size_t splits[] = {1, n / 2, n - 1, rc > 0 ? (size_t)rc - 1 : 0};
        for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
            if (splits[k] == 0 || splits[k] >= n)
                continue;
            int prc = parse_head(response, p, splits[k], h2, max_headers, max_head).rc;
            check(prc == 0 || prc == rc);
            if (rc > 0 && splits[k] < (size_t)rc)
                check(prc == 0);
        }
        if (rc <= 0) {
            check(http1_status(rc) >= 400 || rc == 0);
            check(http1_strerror(rc) != NULL);
            break;
        }
        /* The same head offered with nothing after it parses the same. */
        struct head again = parse_head(response, p, (size_t)rc, h2, max_headers, max_head);
        check(again.rc == rc && again.num_headers == hd.num_headers && again.body == hd.body &&
              again.keep_alive == hd.keep_alive);
        if (hd.body == HTTP1_BODY_LENGTH)
            check(http1_find_header(h, hd.num_headers, "content-length") != NULL);
        off += (size_t)rc;

        if (hd.body == HTTP1_BODY_LENGTH) {
            if (hd.content_length > len - off)
                break;
            off += (size_t)hd.content_length;
        } else if (hd.body == HTTP1_BODY_CHUNKED) {
            struct chunk_result r = check_chunked(buf + off, len - off, max_body);
            if (r.rc != 1)
                break;
            off += r.used;
        } else if (hd.body == HTTP1_BODY_UNTIL_CLOSE) {
            break; /* the rest of the input is the body */
        }
        if (!hd.keep_alive)
            break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t max_headers = data[0] % (MAX_HEADERS + 1);
    size_t max_head = data[1] < 128 ? 8192 : (size_t)(data[1] - 128) * 4;
    uint64_t max_body = data[0] >= 128 ? 1u << 20 : (uint64_t)(data[0] % 64) * 16;
    const char *buf = (const char *)data + 2;
    walk(false, buf, size - 2, max_headers, max_head, max_body);
    walk(true, buf, size - 2, max_headers, max_head, max_body);
    return 0;
}
