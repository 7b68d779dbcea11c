/* fuzz_grpc_frame.c - libFuzzer target for the gRPC message reader and
 * gzip decompression (grpc_frame.c), as a server meets them: DATA payloads
 * cut anywhere, then each compressed message inflated under the limit.
 *
 * Input: byte 0 sets the message limit (0..255 bytes, or unbounded-ish
 * 1 MiB when it is 255), byte 1 seeds the cuts; the rest is the stream.
 * Checked on the way:
 *   - the reader never takes more than it is given, never hands out a
 *     message longer than the limit, and gives the same messages (and the
 *     same refusal) fed whole as fed in pieces;
 *   - a message lies within the input when it came in one piece;
 *   - inflating succeeds only within the limit, fails with
 *     RESOURCE_EXHAUSTED or INTERNAL otherwise, never allocating for a
 *     bomb more than the limit; what inflates deflates and inflates back
 *     to the same bytes;
 *   - the whole stream, taken as one gzip member, obeys the same rules.
 * Any broken invariant abort()s.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "fuzz_check.h"
#include "http/grpc_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MSGS 64

struct seen {
    uint64_t hash[MAX_MSGS];
    size_t len[MAX_MSGS];
    bool compressed[MAX_MSGS];
    int n;
    bool too_large;
};

static uint64_t fnv(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static struct grpc_gzip gz; /* kept across inputs, as a connection keeps it */

/* Inflates one message and checks the outcome. */
static void inflate_checked(const uint8_t *p, size_t len, size_t max)
{
    uint8_t *out;
    size_t n;
    int st = grpc_gzip_inflate(&gz, p, len, max, &out, &n);
    check(st == GRPC_OK || st == GRPC_RESOURCE_EXHAUSTED || st == GRPC_INTERNAL);
    if (st != GRPC_OK) {
        check(out == NULL && n == 0);
        return;
    }
    check(n <= max);
    uint8_t *z, *back;
    size_t zlen, blen;
    grpc_gzip_deflate(&gz, out, n, 3, &z, &zlen);
    check(grpc_gzip_inflate(&gz, z + 3, zlen - 3, n, &back, &blen) == GRPC_OK);
    check(blen == n && (n == 0 || memcmp(back, out, n) == 0));
    mem_free(back);
    mem_free(z);
    mem_free(out);
}

/* Feeds stream[0..len) in pieces (whole when seed is 0). */
static void read_stream(const uint8_t *stream, size_t len, size_t max, uint32_t seed,
                        struct seen *s)
{
    struct grpc_reader r;
    grpc_reader_init(&r, max);
    memset(s, 0, sizeof *s);
    size_t off = 0;
    while (off < len && !s->too_large) {
        size_t piece = len - off;
        if (seed) {
            seed = seed * 1103515245u + 12345u;
            size_t cut = 1 + (seed >> 16) % 13;
            if (cut < piece)
                piece = cut;
        }
        const uint8_t *p = stream + off;
        size_t left = piece;
        while (left > 0) {
            struct grpc_msg m;
            size_t used;
            enum grpc_read res = grpc_reader_feed(&r, p, left, &used, &m);
            check(used <= left);
            if (res == GRPC_READ_TOO_LARGE) {
                s->too_large = true;
                break;
            }
            if (res == GRPC_READ_MORE) {
                check(used == left);
            } else {
                check(res == GRPC_READ_MSG);
                check(m.len <= max);
                if (!seed)
                    check(m.data >= stream && m.data + m.len <= stream + len);
                if (s->n < MAX_MSGS) {
                    s->hash[s->n] = fnv(m.data, m.len);
                    s->len[s->n] = m.len;
                    s->compressed[s->n] = m.compressed;
                }
                s->n++;
                if (!seed && m.compressed)
                    inflate_checked(m.data, m.len, max);
            }
            p += used;
            left -= used;
        }
        off += piece;
    }
    grpc_reader_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t max = data[0] == 255 ? 1u << 20 : data[0];
    uint32_t seed = data[1] | 1u;
    const uint8_t *stream = data + 2;
    size_t len = size - 2;

    struct seen whole, pieces;
    read_stream(stream, len, max, 0, &whole);
    read_stream(stream, len, max, seed, &pieces);
    check(whole.n == pieces.n && whole.too_large == pieces.too_large);
    for (int i = 0; i < whole.n && i < MAX_MSGS; i++)
        check(whole.hash[i] == pieces.hash[i] && whole.len[i] == pieces.len[i] &&
              whole.compressed[i] == pieces.compressed[i]);

    inflate_checked(stream, len, max);
    return 0;
}
