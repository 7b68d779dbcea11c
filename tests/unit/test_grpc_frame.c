/* test_grpc_frame.c - unit tests for the gRPC wire pieces (grpc_frame.c):
 * status names; the message reader fed whole, byte by byte, at random cuts
 * and with several messages per piece, its zero-copy path, its limit
 * (refused at the prefix, memory growing only with what arrives) and its
 * "partial" state; gzip round trips, a decompression bomb, the exact limit,
 * and corrupt, truncated and trailing input; grpc-timeout in every unit,
 * with its bounds and saturation; grpc-message percent-encoding both ways;
 * content-type, grpc-encoding and grpc-accept-encoding values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/mem.h"
#include "http/grpc_frame.h"
#include "test_rng.h"

static int setup(void **state)
{
    rng_state = 0x9E3779B97F4A7C15u;
    return 0;
}

/* ---- Status ---------------------------------------------------------------- */

static void test_status_names_and_text(void **state)
{
    assert_string_equal(grpc_status_name(GRPC_OK), "OK");
    assert_string_equal(grpc_status_name(GRPC_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
    assert_string_equal(grpc_status_name(GRPC_UNIMPLEMENTED), "UNIMPLEMENTED");
    assert_string_equal(grpc_status_name(GRPC_UNAUTHENTICATED), "UNAUTHENTICATED");
    assert_string_equal(grpc_status_name(17), "(invalid)");
    assert_string_equal(grpc_status_name(-1), "(invalid)");
    for (int i = 0; i <= GRPC_STATUS_MAX; i++) {
        char want[12];
        snprintf(want, sizeof want, "%d", i);
        assert_string_equal(grpc_status_text(i), want);
        assert_int_equal(grpc_status_parse(want, strlen(want)), i);
    }
    assert_null(grpc_status_text(17));
    assert_int_equal(grpc_status_parse("", 0), -1);
    assert_int_equal(grpc_status_parse("1a", 2), -1);
    assert_int_equal(grpc_status_parse("-1", 2), -1);
    assert_int_equal(grpc_status_parse("1234", 4), -1);
    assert_int_equal(grpc_status_parse("99", 2), 99);
}

/* ---- Reader ---------------------------------------------------------------- */

/* Appends prefix + body to out; returns the bytes written. */
static size_t put_msg(uint8_t *out, bool compressed, const uint8_t *body, size_t len)
{
    grpc_prefix_write(out, compressed, (uint32_t)len);
    if (len)
        memcpy(out + GRPC_PREFIX_LEN, body, len);
    return GRPC_PREFIX_LEN + len;
}

static void test_prefix_layout(void **state)
{
    uint8_t p[GRPC_PREFIX_LEN];
    grpc_prefix_write(p, true, 0x01020304);
    const uint8_t want[] = {1, 1, 2, 3, 4};
    assert_memory_equal(p, want, sizeof want);
    grpc_prefix_write(p, false, 66);
    const uint8_t want2[] = {0, 0, 0, 0, 66};
    assert_memory_equal(p, want2, sizeof want2);
}

struct got {
    uint8_t data[16][512];
    size_t len[16];
    bool compressed[16];
    int n;
};

/* Feeds data[0..len) in one call sequence, collecting messages. Returns the
 * last result (MORE or TOO_LARGE). */
static enum grpc_read feed_all(struct grpc_reader *r, const uint8_t *data, size_t len,
                               struct got *g)
{
    while (len > 0) {
        struct grpc_msg m;
        size_t used;
        enum grpc_read res = grpc_reader_feed(r, data, len, &used, &m);
        assert_true(used <= len);
        if (res == GRPC_READ_TOO_LARGE)
            return res;
        data += used;
        len -= used;
        if (res == GRPC_READ_MSG) {
            assert_true(g->n < 16);
            assert_true(m.len <= sizeof g->data[0]);
            memcpy(g->data[g->n], m.data, m.len);
            g->len[g->n] = m.len;
            g->compressed[g->n] = m.compressed;
            g->n++;
        } else {
            assert_int_equal(len, 0);
        }
    }
    return GRPC_READ_MORE;
}

static void test_reader_whole_message_in_place(void **state)
{
    uint8_t buf[64];
    size_t n = put_msg(buf, false, (const uint8_t *)"hello", 5);
    struct grpc_reader r;
    grpc_reader_init(&r, 100);
    struct grpc_msg m;
    size_t used;
    assert_int_equal(grpc_reader_feed(&r, buf, n, &used, &m), GRPC_READ_MSG);
    assert_int_equal(used, n);
    assert_ptr_equal(m.data, buf + GRPC_PREFIX_LEN); /* no copy */
    assert_int_equal(m.len, 5);
    assert_false(m.compressed);
    assert_null(r.buf);
    assert_false(grpc_reader_partial(&r));
    grpc_reader_free(&r);
}

static void test_reader_several_per_piece_and_empty(void **state)
{
    uint8_t buf[256];
    size_t n = 0;
    n += put_msg(buf + n, false, (const uint8_t *)"one", 3);
    n += put_msg(buf + n, true, NULL, 0);
    n += put_msg(buf + n, false, (const uint8_t *)"three!", 6);
    struct grpc_reader r;
    grpc_reader_init(&r, 100);
    struct got g = {0};
    assert_int_equal(feed_all(&r, buf, n, &g), GRPC_READ_MORE);
    assert_int_equal(g.n, 3);
    assert_int_equal(g.len[0], 3);
    assert_memory_equal(g.data[0], "one", 3);
    assert_int_equal(g.len[1], 0);
    assert_true(g.compressed[1]);
    assert_int_equal(g.len[2], 6);
    assert_memory_equal(g.data[2], "three!", 6);
    assert_false(grpc_reader_partial(&r));
    grpc_reader_free(&r);
}

static void test_reader_byte_by_byte(void **state)
{
    uint8_t body[300], buf[400];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 7);
    size_t n = put_msg(buf, false, body, sizeof body);
    struct grpc_reader r;
    grpc_reader_init(&r, sizeof body);
    struct got g = {0};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(g.n, 0);
        if (i > 0)
            assert_true(grpc_reader_partial(&r));
        feed_all(&r, buf + i, 1, &g);
    }
    assert_int_equal(g.n, 1);
    assert_int_equal(g.len[0], sizeof body);
    assert_memory_equal(g.data[0], body, sizeof body);
    assert_false(grpc_reader_partial(&r));
    grpc_reader_free(&r);
    assert_null(r.buf);
}

static void test_reader_random_cuts(void **state)
{
    for (int round = 0; round < 200; round++) {
        uint8_t stream[16 * 520];
        uint8_t bodies[16][512];
        size_t lens[16], n = 0;
        int count = 1 + (int)rnd(16);
        for (int i = 0; i < count; i++) {
            lens[i] = rnd(4) == 0 ? 0 : rnd(512);
            for (size_t j = 0; j < lens[i]; j++)
                bodies[i][j] = (uint8_t)rnd64();
            n += put_msg(stream + n, i & 1, bodies[i], lens[i]);
        }
        struct grpc_reader r;
        grpc_reader_init(&r, 511);
        struct got g = {0};
        size_t off = 0;
        while (off < n) {
            size_t piece = 1 + rnd(rnd(2) ? 8 : 700);
            if (piece > n - off)
                piece = n - off;
            assert_int_equal(feed_all(&r, stream + off, piece, &g), GRPC_READ_MORE);
            off += piece;
        }
        assert_int_equal(g.n, count);
        for (int i = 0; i < count; i++) {
            assert_int_equal(g.len[i], lens[i]);
            assert_int_equal(g.compressed[i], (bool)(i & 1));
            if (lens[i])
                assert_memory_equal(g.data[i], bodies[i], lens[i]);
        }
        assert_false(grpc_reader_partial(&r));
        grpc_reader_free(&r);
    }
}

static void test_reader_limit(void **state)
{
    uint8_t buf[64];
    struct grpc_reader r;
    struct grpc_msg m;
    size_t used;
    /* Exactly max is fine, max + 1 is refused at its prefix. */
    grpc_reader_init(&r, 4);
    size_t n = put_msg(buf, false, (const uint8_t *)"abcd", 4);
    assert_int_equal(grpc_reader_feed(&r, buf, n, &used, &m), GRPC_READ_MSG);
    n = put_msg(buf, false, (const uint8_t *)"abcde", 5);
    assert_int_equal(grpc_reader_feed(&r, buf, 3, &used, &m), GRPC_READ_MORE);
    assert_int_equal(grpc_reader_feed(&r, buf + 3, n - 3, &used, &m), GRPC_READ_TOO_LARGE);
    assert_int_equal(used, 2); /* the rest of the prefix, no body */
    assert_null(r.buf);
    /* Spent: it stays refused. */
    assert_int_equal(grpc_reader_feed(&r, buf + 5, 1, &used, &m), GRPC_READ_TOO_LARGE);
    assert_int_equal(used, 0);
    grpc_reader_free(&r);
    /* A zero limit takes empty messages only. */
    grpc_reader_init(&r, 0);
    n = put_msg(buf, false, NULL, 0);
    assert_int_equal(grpc_reader_feed(&r, buf, n, &used, &m), GRPC_READ_MSG);
    assert_int_equal(m.len, 0);
    grpc_reader_free(&r);
}

static void test_reader_grows_with_what_arrives(void **state)
{
    /* A prefix announcing 4 MiB followed by 10 bytes holds about 10 bytes,
     * not 4 MiB. */
    uint8_t buf[16] = {0};
    grpc_prefix_write(buf, false, 4u << 20);
    struct grpc_reader r;
    grpc_reader_init(&r, 4u << 20);
    struct grpc_msg m;
    size_t used;
    assert_int_equal(grpc_reader_feed(&r, buf, 15, &used, &m), GRPC_READ_MORE);
    assert_int_equal(used, 15);
    assert_true(r.cap <= 256);
    assert_true(grpc_reader_partial(&r));
    grpc_reader_free(&r);
    /* An empty piece changes nothing. */
    grpc_reader_init(&r, 10);
    assert_int_equal(grpc_reader_feed(&r, buf, 0, &used, &m), GRPC_READ_MORE);
    assert_int_equal(used, 0);
    assert_false(grpc_reader_partial(&r));
}

/* ---- gzip ------------------------------------------------------------------ */

static void test_gzip_round_trip_and_reuse(void **state)
{
    struct grpc_gzip z = {0};
    for (int round = 0; round < 20; round++) {
        size_t len = round == 0 ? 0 : rnd(5000);
        uint8_t *in = mem_alloc(len + 1);
        for (size_t i = 0; i < len; i++)
            in[i] = (uint8_t)(rnd(3) ? 'a' + rnd(4) : rnd64());
        uint8_t *packed, *plain;
        size_t plen, n;
        grpc_gzip_deflate(&z, in, len, GRPC_PREFIX_LEN, &packed, &plen);
        assert_true(plen > GRPC_PREFIX_LEN + 10);
        assert_int_equal(packed[GRPC_PREFIX_LEN], 0x1f); /* gzip magic */
        assert_int_equal(packed[GRPC_PREFIX_LEN + 1], 0x8b);
        assert_int_equal(grpc_gzip_inflate(&z, packed + GRPC_PREFIX_LEN, plen - GRPC_PREFIX_LEN,
                                           len, &plain, &n),
                         GRPC_OK);
        assert_int_equal(n, len);
        if (len)
            assert_memory_equal(plain, in, len);
        /* One byte under the size is over the limit. */
        if (len > 0) {
            uint8_t *none;
            assert_int_equal(grpc_gzip_inflate(&z, packed + GRPC_PREFIX_LEN, plen - GRPC_PREFIX_LEN,
                                               len - 1, &none, &n),
                             GRPC_RESOURCE_EXHAUSTED);
            assert_null(none);
        }
        mem_free(plain);
        mem_free(packed);
        mem_free(in);
    }
    grpc_gzip_free(&z);
    grpc_gzip_free(&z); /* idempotent */
}

static void test_gzip_bomb_is_bounded(void **state)
{
    /* 64 MiB of zeros packs into about 64 KiB; inflating with a 1 MiB limit
     * must fail without producing (or allocating) the 64 MiB. */
    size_t big = 64u << 20;
    uint8_t *zeros = calloc(1, big);
    assert_non_null(zeros);
    struct grpc_gzip z = {0};
    uint8_t *packed, *plain;
    size_t plen, n;
    grpc_gzip_deflate(&z, zeros, big, 0, &packed, &plen);
    free(zeros);
    assert_true(plen < big / 100);
    assert_int_equal(grpc_gzip_inflate(&z, packed, plen, 1u << 20, &plain, &n),
                     GRPC_RESOURCE_EXHAUSTED);
    assert_null(plain);
    assert_int_equal(n, 0);
    assert_true(z.inf.total_out <= (1u << 20) + 1);
    mem_free(packed);
    grpc_gzip_free(&z);
}

static void test_gzip_rejects_broken_input(void **state)
{
    struct grpc_gzip z = {0};
    const char text[] = "the same words, the same words, the same words again";
    uint8_t *packed, *plain;
    size_t plen, n;
    grpc_gzip_deflate(&z, (const uint8_t *)text, sizeof text, 0, &packed, &plen);
    /* Truncated anywhere. */
    for (size_t cut = 0; cut < plen; cut++)
        assert_int_equal(grpc_gzip_inflate(&z, packed, cut, 1000, &plain, &n), GRPC_INTERNAL);
    /* Trailing bytes after the member. */
    uint8_t *longer = mem_alloc(plen + 1);
    memcpy(longer, packed, plen);
    longer[plen] = 0;
    assert_int_equal(grpc_gzip_inflate(&z, longer, plen + 1, 1000, &plain, &n), GRPC_INTERNAL);
    /* A corrupted CRC. */
    memcpy(longer, packed, plen);
    longer[plen - 6] ^= 0x55;
    assert_int_equal(grpc_gzip_inflate(&z, longer, plen, 1000, &plain, &n), GRPC_INTERNAL);
    /* Not gzip at all (a zlib stream, plain text). */
    assert_int_equal(grpc_gzip_inflate(&z, (const uint8_t *)"\x78\x9c\x03\x00\x00\x00\x00\x01", 8,
                                       1000, &plain, &n),
                     GRPC_INTERNAL);
    assert_int_equal(grpc_gzip_inflate(&z, (const uint8_t *)text, sizeof text, 1000, &plain, &n),
                     GRPC_INTERNAL);
    /* And the context still works afterwards. */
    assert_int_equal(grpc_gzip_inflate(&z, packed, plen, sizeof text, &plain, &n), GRPC_OK);
    assert_int_equal(n, sizeof text);
    assert_memory_equal(plain, text, sizeof text);
    mem_free(plain);
    mem_free(longer);
    mem_free(packed);
    grpc_gzip_free(&z);
}

/* ---- grpc-timeout ---------------------------------------------------------- */

static uint64_t timeout_ok(const char *s)
{
    uint64_t ns = 12345;
    assert_int_equal(grpc_timeout_parse(s, strlen(s), &ns), 0);
    return ns;
}

static void timeout_bad(const char *s)
{
    uint64_t ns = 12345;
    assert_int_equal(grpc_timeout_parse(s, strlen(s), &ns), -1);
    assert_int_equal(ns, 12345);
}

static void test_timeout_units_and_bounds(void **state)
{
    assert_int_equal(timeout_ok("1H"), 3600ull * 1000000000ull);
    assert_int_equal(timeout_ok("2M"), 120ull * 1000000000ull);
    assert_int_equal(timeout_ok("3S"), 3000000000ull);
    assert_int_equal(timeout_ok("250m"), 250000000ull);
    assert_int_equal(timeout_ok("7u"), 7000ull);
    assert_int_equal(timeout_ok("99999999n"), 99999999ull);
    assert_int_equal(timeout_ok("0S"), 0);
    assert_int_equal(timeout_ok("00000001m"), 1000000ull);
    /* 99999999 hours does not fit in 64 bits of nanoseconds. */
    assert_int_equal(timeout_ok("99999999H"), UINT64_MAX);
    assert_int_equal(timeout_ok("99999999M"), 99999999ull * 60ull * 1000000000ull);
    timeout_bad("");
    timeout_bad("S");
    timeout_bad("5");
    timeout_bad("123456789S"); /* nine digits */
    timeout_bad("5s");
    timeout_bad("5h");
    timeout_bad("5x");
    timeout_bad("-5S");
    timeout_bad("+5S");
    timeout_bad(" 5S");
    timeout_bad("5 S");
    timeout_bad("5S ");
    timeout_bad("1.5S");
    timeout_bad("5SS");
}

static void test_timeout_ms_rounds_up(void **state)
{
    assert_int_equal(grpc_timeout_ms(0), 0);
    assert_int_equal(grpc_timeout_ms(1), 1);
    assert_int_equal(grpc_timeout_ms(999999), 1);
    assert_int_equal(grpc_timeout_ms(1000000), 1);
    assert_int_equal(grpc_timeout_ms(1000001), 2);
    assert_int_equal(grpc_timeout_ms(UINT64_MAX), UINT64_MAX / 1000000 + 1);
}

/* ---- grpc-message ---------------------------------------------------------- */

static void test_pct_encode(void **state)
{
    char out[64];
    assert_int_equal(grpc_pct_encode("plain text ~!", 13, out, sizeof out), 13);
    assert_string_equal(out, "plain text ~!");
    const char mixed[] = "50% \xc3\xa9t\xc3\xa9\n\t\x7f";
    size_t n = grpc_pct_encode(mixed, sizeof mixed - 1, out, sizeof out);
    assert_string_equal(out, "50%25 %C3%A9t%C3%A9%0A%09%7F");
    assert_int_equal(n, strlen(out));
    /* Cut between whole escapes only, always NUL-terminated. */
    assert_int_equal(grpc_pct_encode("a%b", 3, out, 3), 1);
    assert_string_equal(out, "a");
    assert_int_equal(grpc_pct_encode("a%b", 3, out, 5), 4);
    assert_string_equal(out, "a%25");
    assert_int_equal(grpc_pct_encode("abc", 3, out, 1), 0);
    assert_string_equal(out, "");
    assert_int_equal(grpc_pct_encode("abc", 3, out, 0), 0);
}

static void test_pct_decode(void **state)
{
    char out[64];
    const char *in = "50%25 %C3%A9t%c3%a9%0A";
    size_t n = grpc_pct_decode(in, strlen(in), out);
    assert_int_equal(n, 10);
    assert_memory_equal(out, "50% \xc3\xa9t\xc3\xa9\n", 10);
    /* Broken escapes stay as they are. */
    in = "100% sure %zz %4 %";
    n = grpc_pct_decode(in, strlen(in), out);
    assert_int_equal(n, strlen(in));
    assert_memory_equal(out, in, n);
    in = "%4";
    assert_int_equal(grpc_pct_decode(in, 2, out), 2);
    assert_memory_equal(out, "%4", 2);
}

static void test_pct_round_trip(void **state)
{
    for (int round = 0; round < 500; round++) {
        char in[40], enc[40 * 3 + 1], dec[40 * 3];
        size_t len = rnd(sizeof in);
        for (size_t i = 0; i < len; i++)
            in[i] = (char)rnd64();
        size_t n = grpc_pct_encode(in, len, enc, sizeof enc);
        for (size_t i = 0; i < n; i++)
            assert_true(enc[i] >= 0x20 && enc[i] <= 0x7e);
        assert_int_equal(grpc_pct_decode(enc, n, dec), len);
        if (len)
            assert_memory_equal(dec, in, len);
    }
}

/* ---- content-type, encodings -------------------------------------------- */

static bool ct(const char *s) { return grpc_content_type_ok(s, strlen(s)); }

static void test_content_type(void **state)
{
    assert_true(ct("application/grpc"));
    assert_true(ct("application/grpc+proto"));
    assert_true(ct("Application/GRPC+Proto"));
    assert_true(ct("application/grpc;charset=utf-8"));
    assert_true(ct("application/grpc+proto ; x=y"));
    assert_false(ct("application/grpc+json"));
    assert_false(ct("application/grpc-web"));
    assert_false(ct("application/grpcx"));
    assert_false(ct("application/grp"));
    assert_false(ct("application/json"));
    assert_false(ct("text/plain"));
    assert_false(ct(""));
    assert_false(ct("application/grpc+protobuf"));
}

static void test_encodings(void **state)
{
    assert_int_equal(grpc_encoding_parse("gzip", 4), GRPC_ENC_GZIP);
    assert_int_equal(grpc_encoding_parse(" GZip ", 6), GRPC_ENC_GZIP);
    assert_int_equal(grpc_encoding_parse("identity", 8), GRPC_ENC_IDENTITY);
    assert_int_equal(grpc_encoding_parse("", 0), GRPC_ENC_IDENTITY);
    assert_int_equal(grpc_encoding_parse("deflate", 7), GRPC_ENC_OTHER);
    assert_int_equal(grpc_encoding_parse("gzipx", 5), GRPC_ENC_OTHER);
    assert_int_equal(grpc_encoding_parse("snappy", 6), GRPC_ENC_OTHER);
    const char *l = "identity,deflate, gzip";
    assert_true(grpc_list_has(l, strlen(l), "gzip"));
    assert_true(grpc_list_has(l, strlen(l), "identity"));
    assert_true(grpc_list_has(l, strlen(l), "deflate"));
    assert_false(grpc_list_has(l, strlen(l), "snappy"));
    assert_false(grpc_list_has(l, strlen(l), "gzi"));
    assert_true(grpc_list_has("GZIP", 4, "gzip"));
    assert_false(grpc_list_has("", 0, "gzip"));
    assert_false(grpc_list_has("gzipped,zip", 11, "gzip"));
    assert_true(grpc_list_has(",,gzip,", 7, "gzip"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_names_and_text),
        cmocka_unit_test(test_prefix_layout),
        cmocka_unit_test(test_reader_whole_message_in_place),
        cmocka_unit_test(test_reader_several_per_piece_and_empty),
        cmocka_unit_test(test_reader_byte_by_byte),
        cmocka_unit_test_setup(test_reader_random_cuts, setup),
        cmocka_unit_test(test_reader_limit),
        cmocka_unit_test(test_reader_grows_with_what_arrives),
        cmocka_unit_test_setup(test_gzip_round_trip_and_reuse, setup),
        cmocka_unit_test(test_gzip_bomb_is_bounded),
        cmocka_unit_test(test_gzip_rejects_broken_input),
        cmocka_unit_test(test_timeout_units_and_bounds),
        cmocka_unit_test(test_timeout_ms_rounds_up),
        cmocka_unit_test(test_pct_encode),
        cmocka_unit_test(test_pct_decode),
        cmocka_unit_test_setup(test_pct_round_trip, setup),
        cmocka_unit_test(test_content_type),
        cmocka_unit_test(test_encodings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
