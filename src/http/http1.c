/* http1.c - HTTP/1.1 request- and response-head parsers and chunked-body
 * decoder (RFC 9112), strict where leniency would let two parsers disagree
 * about where a message ends. */
#include "http/http1.h"

#include <limits.h>
#include <string.h>

#include "core/hex.h"

const char *http1_strerror(int err)
{
    switch (err) {
    case HTTP1_E_REQUEST_LINE: return "malformed request line";
    case HTTP1_E_METHOD: return "bad method token";
    case HTTP1_E_TARGET: return "bad request target";
    case HTTP1_E_VERSION: return "unsupported HTTP version";
    case HTTP1_E_BARE_LF: return "line ends in LF without CR";
    case HTTP1_E_HEADER_NAME: return "bad header name";
    case HTTP1_E_HEADER_VALUE: return "bad character in header value";
    case HTTP1_E_OBS_FOLD: return "obsolete line folding";
    case HTTP1_E_TOO_MANY_HEADERS: return "too many headers";
    case HTTP1_E_HEAD_TOO_LARGE: return "request header section too large";
    case HTTP1_E_HOST: return "missing or repeated Host";
    case HTTP1_E_CONTENT_LENGTH: return "invalid Content-Length";
    case HTTP1_E_TRANSFER_ENCODING: return "invalid Transfer-Encoding";
    case HTTP1_E_TE_UNSUPPORTED: return "unsupported transfer coding";
    case HTTP1_E_TE_AND_CL: return "both Transfer-Encoding and Content-Length";
    case HTTP1_E_CONTENT_TYPE: return "repeated Content-Type";
    case HTTP1_E_CHUNK_SIZE: return "bad chunk size line";
    case HTTP1_E_CHUNK_DATA: return "chunk data not followed by CRLF";
    case HTTP1_E_TRAILER: return "bad or oversized trailer section";
    case HTTP1_E_BODY_TOO_LARGE: return "body too large";
    case HTTP1_E_STATUS_LINE: return "malformed status line";
    default: return "unknown error";
    }
}

int http1_status(int err)
{
    switch (err) {
    case HTTP1_E_VERSION: return 505;
    case HTTP1_E_TOO_MANY_HEADERS:
    case HTTP1_E_HEAD_TOO_LARGE: return 431;
    case HTTP1_E_TE_UNSUPPORTED: return 501;
    case HTTP1_E_BODY_TOO_LARGE: return 413;
    case HTTP1_E_STATUS_LINE: return 502; /* a gateway's answer to a broken upstream */
    default: return 400;
    }
}

/* ---- Character classes and helpers ----------------------------------------- */

/* tchar of RFC 9110 section 5.6.2. */
static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_ows(unsigned char c) { return c == ' ' || c == '\t'; }

/* Controls other than HTAB may appear in no field value or chunk line. */
static bool is_bad_ctl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : c;
}

static bool mem_eq_ci(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return false;
    return true;
}

bool http1_str_eq(struct http1_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.ptr != NULL && s.len == n && mem_eq_ci(s.ptr, lit, n);
}

const struct http1_header *http1_find_header(const struct http1_header *headers,
                                             size_t num_headers, const char *name)
{
    for (size_t i = 0; i < num_headers; i++)
        if (http1_str_eq(headers[i].name, name))
            return &headers[i];
    return NULL;
}

static struct http1_str trim_ows(struct http1_str s)
{
    while (s.len > 0 && is_ows((unsigned char)s.ptr[0])) {
        s.ptr++;
        s.len--;
    }
    while (s.len > 0 && is_ows((unsigned char)s.ptr[s.len - 1]))
        s.len--;
    return s;
}

bool http1_media_type_is(struct http1_str content_type, const char *type)
{
    if (content_type.ptr == NULL)
        return false;
    const char *semi = memchr(content_type.ptr, ';', content_type.len);
    struct http1_str mt = content_type;
    if (semi != NULL)
        mt.len = (size_t)(semi - mt.ptr);
    return http1_str_eq(trim_ows(mt), type);
}

/* Calls fn on each non-empty element of a comma-separated list value;
 * empty elements are skipped as RFC 9110 section 5.6.1 requires. */
static void for_each_element(struct http1_str v, void (*fn)(struct http1_str, void *), void *arg)
{
    size_t start = 0;
    for (size_t i = 0; i <= v.len; i++) {
        if (i < v.len && v.ptr[i] != ',')
            continue;
        struct http1_str e = trim_ows((struct http1_str){v.ptr + start, i - start});
        if (e.len > 0)
            fn(e, arg);
        start = i + 1;
    }
}

/* ---- Framing headers ------------------------------------------------------ */

/* What the framing headers said, gathered while the fields are read and
 * judged once the whole section is in (RFC 9112 section 6.3). */
struct framing {
    bool cl_seen;
    uint64_t cl;
    bool te_seen;
    bool te_chunked;      /* chunked seen (so far the last coding) */
    bool te_after_chunked; /* a coding followed chunked */
    bool te_other;        /* a coding other than chunked */
    bool conn_close;
    bool conn_keep_alive;
    bool expect_continue;
    bool request; /* Host is only counted in requests */
    int hosts;
    struct http1_str content_type;
};

static void te_element(struct http1_str e, void *arg)
{
    struct framing *f = arg;
    if (f->te_chunked)
        f->te_after_chunked = true;
    if (http1_str_eq(e, "chunked"))
        f->te_chunked = true;
    else
        f->te_other = true;
}

static void conn_element(struct http1_str e, void *arg)
{
    struct framing *f = arg;
    if (http1_str_eq(e, "close"))
        f->conn_close = true;
    else if (http1_str_eq(e, "keep-alive"))
        f->conn_keep_alive = true;
}

/* Only the bare 1*DIGIT form: the "42, 42" list form that RFC 9110 section
 * 8.6 lets a recipient fold is refused, as a sender that repeats the value
 * is already off the rails. */
static int parse_content_length(struct http1_str v, uint64_t *out)
{
    if (v.len == 0)
        return HTTP1_E_CONTENT_LENGTH;
    uint64_t n = 0;
    for (size_t i = 0; i < v.len; i++) {
        unsigned char c = (unsigned char)v.ptr[i];
        if (c < '0' || c > '9')
            return HTTP1_E_CONTENT_LENGTH;
        unsigned d = c - '0';
        if (n > (UINT64_MAX - d) / 10)
            return HTTP1_E_CONTENT_LENGTH;
        n = n * 10 + d;
    }
    *out = n;
    return 0;
}

static int note_header(const struct http1_header *h, struct framing *f)
{
    if (http1_str_eq(h->name, "content-length")) {
        uint64_t n;
        int rc = parse_content_length(h->value, &n);
        if (rc < 0)
            return rc;
        /* Repeats with the same value are harmless (RFC 9110 section 8.6). */
        if (f->cl_seen && f->cl != n)
            return HTTP1_E_CONTENT_LENGTH;
        f->cl_seen = true;
        f->cl = n;
    } else if (http1_str_eq(h->name, "transfer-encoding")) {
        f->te_seen = true;
        for_each_element(h->value, te_element, f);
    } else if (http1_str_eq(h->name, "connection")) {
        for_each_element(h->value, conn_element, f);
    } else if (http1_str_eq(h->name, "expect")) {
        if (http1_str_eq(h->value, "100-continue"))
            f->expect_continue = true;
    } else if (f->request && http1_str_eq(h->name, "host")) {
        if (++f->hosts > 1)
            return HTTP1_E_HOST;
    } else if (http1_str_eq(h->name, "content-type")) {
        if (f->content_type.ptr != NULL)
            return HTTP1_E_CONTENT_TYPE;
        f->content_type = h->value;
    }
    return 0;
}

/* A Transfer-Encoding field, in a request or a response: chunked, once and
 * last, is the only coding taken. */
static int check_transfer_encoding(const struct framing *f, bool v11)
{
    /* RFC 9112 section 6.1: TE in HTTP/1.0 means faulty framing. */
    if (!v11)
        return HTTP1_E_TRANSFER_ENCODING;
    /* Section 6.3: TE with CL "ought to be handled as an error"; we do, as
     * the pair is the classic request-smuggling and response-splitting
     * vector. */
    if (f->cl_seen)
        return HTTP1_E_TE_AND_CL;
    /* Section 6.3: without chunked last the length is unknowable (a
     * response would run to the close, but in a coding we cannot decode). */
    if (!f->te_chunked || f->te_after_chunked)
        return HTTP1_E_TRANSFER_ENCODING;
    if (f->te_other)
        return HTTP1_E_TE_UNSUPPORTED;
    return 0;
}

/* Section 9.3: HTTP/1.1 stays open unless told to close; HTTP/1.0 closes
 * unless told to stay. */
static bool persistent(const struct framing *f, bool v11)
{
    return v11 ? !f->conn_close : f->conn_keep_alive && !f->conn_close;
}

static int settle_framing(const struct framing *f, struct http1_request *req)
{
    bool v11 = req->minor_version == 1;
    if (v11 && f->hosts == 0)
        return HTTP1_E_HOST;
    if (f->te_seen) {
        int rc = check_transfer_encoding(f, v11);
        if (rc < 0)
            return rc;
        req->body = HTTP1_BODY_CHUNKED;
    } else if (f->cl_seen) {
        req->body = HTTP1_BODY_LENGTH;
        req->content_length = f->cl;
    }
    req->keep_alive = persistent(f, v11);
    /* RFC 9110 section 10.1.1: ignore 100-continue from HTTP/1.0. */
    req->expect_continue = v11 && f->expect_continue;
    req->content_type = f->content_type;
    return 0;
}

/* RFC 9112 section 6.3 for responses (to anything but HEAD and CONNECT,
 * which we never send). */
static int settle_response_framing(const struct framing *f, struct http1_response *resp)
{
    bool v11 = resp->minor_version == 1;
    int s = resp->status;
    if (s < 200 || s == 204 || s == 304) {
        resp->body = HTTP1_BODY_NONE; /* whatever the fields say (item 1) */
    } else if (f->te_seen) {
        int rc = check_transfer_encoding(f, v11);
        if (rc < 0)
            return rc;
        resp->body = HTTP1_BODY_CHUNKED;
    } else if (f->cl_seen) {
        resp->body = HTTP1_BODY_LENGTH;
        resp->content_length = f->cl;
    } else {
        resp->body = HTTP1_BODY_UNTIL_CLOSE; /* item 8 */
    }
    resp->keep_alive = persistent(f, v11) && resp->body != HTTP1_BODY_UNTIL_CLOSE;
    resp->content_type = f->content_type;
    return 0;
}

/* ---- Heads --------------------------------------------------------------- */

/* The input of one head parse. end is min(len, max), so a prefix and the
 * whole input see the same bytes up to the prefix's end, which keeps their
 * answers consistent. */
struct head {
    const char *buf;
    const unsigned char *p; /* buf, as bytes */
    size_t len, max, end;
};

static struct head head_init(const char *buf, size_t len, size_t max_head)
{
    size_t max = max_head < INT_MAX ? max_head : INT_MAX;
    return (struct head){buf, (const unsigned char *)buf, len, max, len < max ? len : max};
}

/* Every read of p[i] goes through NEED(i). Running out of the buffer is
 * "need more" (0) unless the head limit is what ran out. */
#define NEED(i)                                                                                   \
    do {                                                                                          \
        if ((i) >= hd->end)                                                                       \
            return hd->len >= hd->max ? HTTP1_E_HEAD_TOO_LARGE : 0;                               \
    } while (0)

/* "HTTP/" DIGIT "." DIGIT, case-sensitive (RFC 9112 section 2.3), at *pos;
 * bad is the error for anything else. Returns 1 with the digits in v[0]
 * and v[2] and *pos after them, 0 for need more, or an error. */
static int parse_version(const struct head *hd, size_t *pos, int bad, unsigned char v[3])
{
    static const char proto[] = "HTTP/";
    const unsigned char *p = hd->p;
    size_t i = *pos;
    for (size_t k = 0; k < sizeof proto - 1; k++, i++) {
        NEED(i);
        if (p[i] != (unsigned char)proto[k])
            return bad;
    }
    for (size_t k = 0; k < 3; k++, i++) {
        NEED(i);
        v[k] = p[i];
    }
    if (v[0] < '0' || v[0] > '9' || v[1] != '.' || v[2] < '0' || v[2] > '9')
        return bad;
    *pos = i;
    return 1;
}

/* The field lines from *pos and the empty line that ends them (RFC 9112
 * section 5) into headers[0..*num) and f. Returns 1 with *pos after the
 * empty line, 0 for need more, or an error. */
static int parse_fields(const struct head *hd, size_t *pos, struct http1_header *headers,
                        size_t max_headers, size_t *num, struct framing *f)
{
    const unsigned char *p = hd->p;
    size_t i = *pos, n = 0;
    for (;;) {
        NEED(i);
        if (p[i] == '\r') {
            NEED(i + 1);
            if (p[i + 1] != '\n')
                return HTTP1_E_HEADER_NAME;
            i += 2;
            break;
        }
        if (p[i] == '\n')
            return HTTP1_E_BARE_LF;
        /* RFC 9112 section 5.2: a server may reject obs-fold with 400; we do,
         * because unfolding changes values that others would read unfolded. */
        if (is_ows(p[i]))
            return HTTP1_E_OBS_FOLD;

        size_t start = i;
        for (;;) {
            NEED(i);
            if (!is_tchar(p[i]))
                break;
            i++;
        }
        /* Whitespace before the colon must be refused (section 5.1). */
        if (p[i] != ':' || i == start)
            return HTTP1_E_HEADER_NAME;
        if (n == max_headers)
            return HTTP1_E_TOO_MANY_HEADERS;
        struct http1_header h = {.name = {hd->buf + start, i - start}};
        i++;

        for (;;) {
            NEED(i);
            if (!is_ows(p[i]))
                break;
            i++;
        }
        start = i;
        size_t vend = i;
        for (;;) {
            NEED(i);
            unsigned char c = p[i];
            if (c == '\r') {
                NEED(i + 1);
                if (p[i + 1] != '\n')
                    return HTTP1_E_HEADER_VALUE;
                break;
            }
            if (c == '\n')
                return HTTP1_E_BARE_LF;
            if (is_bad_ctl(c))
                return HTTP1_E_HEADER_VALUE;
            i++;
            if (!is_ows(c))
                vend = i;
        }
        i += 2;
        h.value = (struct http1_str){hd->buf + start, vend - start};
        headers[n++] = h;
        *num = n;
        int rc = note_header(&h, f);
        if (rc < 0)
            return rc;
    }
    *pos = i;
    return 1;
}

/* The rest of a head after its start line's version and before its CRLF,
 * *pos: the CRLF (bad is the error for anything else there), the major
 * version, then the fields into headers[0..*num) and f. Returns 1 with
 * *minor_version set and *pos after the head, 0 for need more, or an
 * error. */
static int parse_head_rest(const struct head *hd, size_t *pos, int bad, const unsigned char v[3],
                           int *minor_version, struct http1_header *headers, size_t max_headers,
                           size_t *num, struct framing *f)
{
    const unsigned char *p = hd->p;
    size_t i = *pos;
    NEED(i);
    if (p[i] == '\n')
        return HTTP1_E_BARE_LF;
    if (p[i] != '\r')
        return bad;
    NEED(i + 1);
    if (p[i + 1] != '\n')
        return bad;
    i += 2;
    if (v[0] != '1')
        return HTTP1_E_VERSION;
    /* RFC 9110 section 6.2: a higher minor version is read as ours. */
    *minor_version = v[2] == '0' ? 0 : 1;
    int rc = parse_fields(hd, &i, headers, max_headers, num, f);
    if (rc > 0)
        *pos = i;
    return rc;
}

int http1_parse_request(const char *buf, size_t len, struct http1_request *req,
                        struct http1_header *headers, size_t max_headers, size_t max_head)
{
    const struct head h0 = head_init(buf, len, max_head), *hd = &h0;
    const unsigned char *p = hd->p;
    size_t i = 0;

    memset(req, 0, sizeof *req);

    /* RFC 9112 section 2.2: ignore empty lines before the request line. */
    for (;;) {
        NEED(i);
        if (p[i] == '\n')
            return HTTP1_E_BARE_LF;
        if (p[i] != '\r')
            break;
        NEED(i + 1);
        if (p[i + 1] != '\n')
            return HTTP1_E_REQUEST_LINE;
        i += 2;
    }

    size_t start = i;
    for (;;) {
        NEED(i);
        if (!is_tchar(p[i]))
            break;
        i++;
    }
    if (p[i] != ' ')
        return i > start && (p[i] == '\r' || p[i] == '\n') ? HTTP1_E_REQUEST_LINE : HTTP1_E_METHOD;
    if (i == start)
        return HTTP1_E_METHOD;
    req->method = (struct http1_str){buf + start, i - start};
    i++;

    start = i;
    for (;;) {
        NEED(i);
        if (p[i] < 0x21 || p[i] > 0x7e)
            break;
        i++;
    }
    if (p[i] != ' ')
        return i > start && (p[i] == '\r' || p[i] == '\n') ? HTTP1_E_REQUEST_LINE : HTTP1_E_TARGET;
    if (i == start)
        return HTTP1_E_TARGET;
    req->target = (struct http1_str){buf + start, i - start};
    req->path = req->target;
    const char *q = memchr(req->target.ptr, '?', req->target.len);
    if (q != NULL) {
        req->path.len = (size_t)(q - req->target.ptr);
        req->query = (struct http1_str){q + 1, req->target.len - req->path.len - 1};
    }
    i++;

    unsigned char v[3];
    int rc = parse_version(hd, &i, HTTP1_E_REQUEST_LINE, v);
    if (rc <= 0)
        return rc;
    struct framing f = {.request = true};
    rc = parse_head_rest(hd, &i, HTTP1_E_REQUEST_LINE, v, &req->minor_version, headers,
                         max_headers, &req->num_headers, &f);
    if (rc <= 0)
        return rc;
    rc = settle_framing(&f, req);
    if (rc < 0)
        return rc;
    return (int)i;
}

int http1_parse_response(const char *buf, size_t len, struct http1_response *resp,
                         struct http1_header *headers, size_t max_headers, size_t max_head)
{
    const struct head h0 = head_init(buf, len, max_head), *hd = &h0;
    const unsigned char *p = hd->p;
    size_t i = 0;

    memset(resp, 0, sizeof *resp);

    /* status-line = HTTP-version SP status-code SP [ reason-phrase ]
     * (RFC 9112 section 4); no empty lines may come first. */
    unsigned char v[3];
    int rc = parse_version(hd, &i, HTTP1_E_STATUS_LINE, v);
    if (rc <= 0)
        return rc;
    NEED(i);
    if (p[i] != ' ')
        return HTTP1_E_STATUS_LINE;
    i++;
    int status = 0;
    for (int k = 0; k < 3; k++, i++) {
        NEED(i);
        if (p[i] < '0' || p[i] > '9')
            return HTTP1_E_STATUS_LINE;
        status = status * 10 + (p[i] - '0');
    }
    /* RFC 9110 section 15: codes outside 100..599 are invalid. */
    if (status < 100 || status > 599)
        return HTTP1_E_STATUS_LINE;
    NEED(i);
    /* The SP before an empty reason is often left out; nothing is lost by
     * taking the line without it. */
    if (p[i] == ' ') {
        size_t start = ++i;
        for (;;) {
            NEED(i);
            unsigned char c = p[i];
            if (c == '\r' || c == '\n')
                break;
            if (is_bad_ctl(c))
                return HTTP1_E_STATUS_LINE;
            i++;
        }
        resp->reason = (struct http1_str){buf + start, i - start};
    }
    resp->status = status;
    struct framing f = {0};
    rc = parse_head_rest(hd, &i, HTTP1_E_STATUS_LINE, v, &resp->minor_version, headers,
                         max_headers, &resp->num_headers, &f);
    if (rc <= 0)
        return rc;
    rc = settle_response_framing(&f, resp);
    if (rc < 0)
        return rc;
    return (int)i;
}

#undef NEED

/* ---- Chunked body --------------------------------------------------------- */

enum {
    CH_SIZE0,      /* first hex digit of a chunk size */
    CH_SIZE,       /* more hex digits */
    CH_BWS,        /* whitespace between size and ';' */
    CH_EXT,        /* chunk extensions, skipped */
    CH_SIZE_LF,    /* LF ending the size line */
    CH_DATA,
    CH_DATA_CR,
    CH_DATA_LF,
    CH_TRAILER0,   /* start of a trailer line, or the final CRLF */
    CH_TRAILER,    /* inside a trailer line, skipped */
    CH_TRAILER_LF,
    CH_END_LF,     /* LF of the final CRLF */
    CH_DONE,
};

void http1_chunked_init(struct http1_chunked *d, uint64_t max_body)
{
    memset(d, 0, sizeof *d);
    d->state = CH_SIZE0;
    d->max_body = max_body;
}

/* Adds hex digit x to the chunk size being read; the limit check doubles as
 * the overflow check, so a size too big for 64 bits is simply too large. */
static int add_hex_digit(struct http1_chunked *d, int x)
{
    uint64_t room = d->max_body - d->total;
    if ((uint64_t)x > room || d->chunk_left > (room - (uint64_t)x) / 16)
        return HTTP1_E_BODY_TOO_LARGE;
    d->chunk_left = d->chunk_left * 16 + (uint64_t)x;
    return 0;
}

/* Whitespace after the size is only allowed before an extension
 * (chunk-ext = *( BWS ";" ... ), RFC 9112 section 7.1.1). */
static int after_size(struct http1_chunked *d, unsigned char c)
{
    if (is_ows(c))
        d->state = CH_BWS;
    else if (c == ';')
        d->state = CH_EXT;
    else
        return HTTP1_E_CHUNK_SIZE;
    return 0;
}

/* One byte of everything but chunk data. Returns 0, or an http1_err. */
static int chunked_step(struct http1_chunked *d, unsigned char c)
{
    if (c == '\n' && d->state != CH_SIZE_LF && d->state != CH_DATA_LF &&
        d->state != CH_TRAILER_LF && d->state != CH_END_LF)
        return HTTP1_E_BARE_LF;

    switch (d->state) {
    case CH_SIZE0:
    case CH_SIZE:
    case CH_BWS:
    case CH_EXT:
        if (++d->line_len > HTTP1_CHUNK_LINE_MAX)
            return HTTP1_E_CHUNK_SIZE;
        break;
    case CH_TRAILER0:
    case CH_TRAILER:
    case CH_TRAILER_LF:
    case CH_END_LF:
        if (++d->trailer_len > HTTP1_TRAILER_MAX)
            return HTTP1_E_TRAILER;
        break;
    default:
        break;
    }

    int x;
    switch (d->state) {
    case CH_SIZE0:
        if ((x = hex_value(c)) < 0)
            return HTTP1_E_CHUNK_SIZE;
        d->state = CH_SIZE;
        return add_hex_digit(d, x);
    case CH_SIZE:
        if ((x = hex_value(c)) >= 0)
            return add_hex_digit(d, x);
        if (c == '\r') {
            d->state = CH_SIZE_LF;
            return 0;
        }
        return after_size(d, c);
    case CH_BWS:
        return after_size(d, c);
    case CH_EXT:
        if (c == '\r')
            d->state = CH_SIZE_LF;
        else if (is_bad_ctl(c))
            return HTTP1_E_CHUNK_SIZE;
        return 0;
    case CH_SIZE_LF:
        if (c != '\n')
            return HTTP1_E_CHUNK_SIZE;
        d->line_len = 0;
        d->state = d->chunk_left == 0 ? CH_TRAILER0 : CH_DATA;
        return 0;
    case CH_DATA_CR:
        if (c != '\r')
            return HTTP1_E_CHUNK_DATA;
        d->state = CH_DATA_LF;
        return 0;
    case CH_DATA_LF:
        if (c != '\n')
            return HTTP1_E_CHUNK_DATA;
        d->state = CH_SIZE0;
        return 0;
    case CH_TRAILER0:
        if (c == '\r')
            d->state = CH_END_LF;
        else if (is_tchar(c))
            d->state = CH_TRAILER;
        else
            return HTTP1_E_TRAILER;
        return 0;
    case CH_TRAILER:
        if (c == '\r')
            d->state = CH_TRAILER_LF;
        else if (is_bad_ctl(c))
            return HTTP1_E_TRAILER;
        return 0;
    case CH_TRAILER_LF:
        if (c != '\n')
            return HTTP1_E_TRAILER;
        d->state = CH_TRAILER0;
        return 0;
    case CH_END_LF:
        if (c != '\n')
            return HTTP1_E_TRAILER;
        d->state = CH_DONE;
        return 0;
    default: /* CH_DATA and CH_DONE are handled by the caller */
        return HTTP1_E_CHUNK_DATA;
    }
}

int http1_chunked_decode(struct http1_chunked *d, const char *in, size_t len, char *out,
                         size_t *out_len, size_t *used)
{
    size_t i = 0, o = 0;
    *out_len = 0;
    *used = 0;
    /* A failed decoder keeps its error in state, so it fails again. */
    if (d->state < 0)
        return d->state;
    while (i < len && d->state != CH_DONE) {
        if (d->state == CH_DATA) {
            size_t n = len - i;
            if (n > d->chunk_left)
                n = (size_t)d->chunk_left;
            memmove(out + o, in + i, n);
            i += n;
            o += n;
            d->chunk_left -= n;
            d->total += n;
            if (d->chunk_left == 0)
                d->state = CH_DATA_CR;
            continue;
        }
        int rc = chunked_step(d, (unsigned char)in[i]);
        if (rc < 0) {
            d->state = rc;
            *out_len = o;
            *used = i;
            return rc;
        }
        i++;
    }
    *out_len = o;
    *used = i;
    return d->state == CH_DONE ? 1 : 0;
}
