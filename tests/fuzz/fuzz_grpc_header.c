/* fuzz_grpc_header.c - libFuzzer target for the gRPC header-value parsers
 * (grpc_frame.c): grpc-timeout, grpc-message percent-encoding and
 * decoding, content-type, grpc-encoding, grpc-accept-encoding and
 * grpc-status. The whole input is one header value. Checked on the way:
 *   - grpc-timeout accepts exactly 1 to 8 digits and a unit letter, and
 *     its value matches a plain recomputation; milliseconds never round
 *     down;
 *   - decoding never grows, leaves well-formed text alone, and undoes
 *     encoding exactly; encoding yields printable ASCII only, and a cut
 *     encoding is a prefix of the full one ending on a whole escape;
 *   - an accepted content-type starts with "application/grpc"; a token
 *     list contains each of its own items; grpc-status numbers are
 *     1 to 3 digits.
 * Any broken invariant abort()s.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_check.h"
#include "http/grpc_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_timeout(const char *s, size_t len)
{
    uint64_t ns;
    int rc = grpc_timeout_parse(s, len, &ns);
    bool form = len >= 2 && len <= 9 && strchr("HMSmun", s[len - 1]) && s[len - 1];
    for (size_t i = 0; form && i + 1 < len; i++)
        form = s[i] >= '0' && s[i] <= '9';
    check((rc == 0) == form);
    if (rc != 0)
        return;
    unsigned __int128 v = 0;
    for (size_t i = 0; i + 1 < len; i++)
        v = v * 10 + (unsigned)(s[i] - '0');
    const char *units = "numS";
    unsigned __int128 mult;
    switch (s[len - 1]) {
    case 'H':
        mult = 3600000000000ull;
        break;
    case 'M':
        mult = 60000000000ull;
        break;
    default:
        mult = 1;
        for (const char *u = units; *u != s[len - 1]; u++)
            mult *= 1000;
    }
    unsigned __int128 want = v * mult;
    check(ns == (want > UINT64_MAX ? UINT64_MAX : (uint64_t)want));
    check((unsigned __int128)grpc_timeout_ms(ns) * 1000000 >= ns);
}

static void check_percent(const char *s, size_t len)
{
    char *dec = malloc(len + 1), *enc = malloc(3 * len + 1), *back = malloc(3 * len + 1);
    check(dec && enc && back);
    size_t n = grpc_pct_decode(s, len, dec);
    check(n <= len);
    if (!memchr(s, '%', len))
        check(n == len && memcmp(dec, s, len) == 0);

    size_t e = grpc_pct_encode(s, len, enc, 3 * len + 1);
    check(e >= len && enc[e] == '\0');
    for (size_t i = 0; i < e; i++)
        check(enc[i] >= 0x20 && enc[i] <= 0x7e);
    check(grpc_pct_decode(enc, e, back) == len && memcmp(back, s, len) == 0);

    size_t cap = len % 7 + 1;
    char cut[8];
    size_t c = grpc_pct_encode(s, len, cut, cap);
    check(c < cap && cut[c] == '\0' && memcmp(cut, enc, c) == 0);
    /* The full encoding has '%' only where an escape starts. */
    check(c < 1 || enc[c - 1] != '%');
    check(c < 2 || enc[c - 2] != '%');
    free(dec);
    free(enc);
    free(back);
}

static void check_tokens(const char *s, size_t len)
{
    if (grpc_content_type_ok(s, len))
        check(len >= 16 && strncasecmp(s, "application/grpc", 16) == 0);
    enum grpc_encoding enc = grpc_encoding_parse(s, len);
    check(enc == GRPC_ENC_IDENTITY || enc == GRPC_ENC_GZIP || enc == GRPC_ENC_OTHER);
    if (enc == GRPC_ENC_GZIP)
        check(grpc_list_has(s, len, "gzip"));
    /* Every comma-separated item without spaces or NULs is found again. */
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ',')
            continue;
        size_t n = i - start;
        if (n > 0 && n < 32 && !memchr(s + start, ' ', n) && !memchr(s + start, '\t', n) &&
            !memchr(s + start, '\0', n)) {
            char item[32];
            for (size_t k = 0; k < n; k++) {
                char ch = s[start + k];
                item[k] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
            }
            item[n] = '\0';
            check(grpc_list_has(s, len, item));
        }
        start = i + 1;
    }
    int st = grpc_status_parse(s, len);
    check(st >= -1 && st <= 999);
    check(st < 0 || (len >= 1 && len <= 3));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    check_timeout(s, size);
    check_percent(s, size);
    check_tokens(s, size);
    return 0;
}
