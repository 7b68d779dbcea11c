/* test_inbuf.c - unit tests for shared-scratch input buffering (inbuf.c),
 * driven through the usage cycle its header documents (read target, read,
 * filled, parse, consumed) with a toy length-prefixed parser: whole packets
 * leave nothing owned, a partial tail is kept and appended to, consuming
 * from the owned buffer shifts the rest, the buffer is freed when empty and
 * grows (by doubling) for large packets, and any split of the stream
 * reassembles the same packets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/inbuf.h"
#include "test_rng.h"

static int setup(void **state)
{
    rng_state = 0xD1B54A32D192ED03u;
    return 0;
}

/* ---- A toy protocol: 4-byte big-endian length, then that many bytes ----- */

#define MAXPKT 64

struct pkt {
    const uint8_t *body;
    size_t len;
};

struct parsed {
    uint8_t *bodies[MAXPKT];
    size_t lens[MAXPKT];
    int n;
};

static size_t put_packet(uint8_t *out, const uint8_t *body, size_t len)
{
    out[0] = (uint8_t)(len >> 24);
    out[1] = (uint8_t)(len >> 16);
    out[2] = (uint8_t)(len >> 8);
    out[3] = (uint8_t)len;
    memcpy(out + 4, body, len);
    return 4 + len;
}

/* Consumes every whole packet at the start of data; returns bytes used.
 * Bodies are copied out, since data is only valid until inbuf_consumed. */
static size_t parse(struct parsed *out, const uint8_t *data, size_t len)
{
    size_t used = 0;
    while (len - used >= 4) {
        const uint8_t *p = data + used;
        size_t n = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
        if (len - used - 4 < n)
            break;
        assert_true(out->n < MAXPKT);
        out->bodies[out->n] = malloc(n ? n : 1);
        assert_non_null(out->bodies[out->n]);
        memcpy(out->bodies[out->n], p + 4, n);
        out->lens[out->n] = n;
        out->n++;
        used += 4 + n;
    }
    return used;
}

static void parsed_free(struct parsed *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->bodies[i]);
    p->n = 0;
}

/* One turn of the documented cycle, "reading" up to want bytes of src.
 * Returns bytes read. */
static size_t cycle(struct inbuf *in, uint8_t *scratch, size_t scratch_len, const uint8_t *src,
                    size_t want, struct parsed *out)
{
    size_t cap;
    uint8_t *dst = inbuf_read_target(in, scratch, scratch_len, &cap);
    assert_non_null(dst);
    assert_true(cap > 0);
    size_t n = want < cap ? want : cap;
    memcpy(dst, src, n);
    size_t len;
    const uint8_t *data = inbuf_filled(in, scratch, n, &len);
    size_t used = parse(out, data, len);
    inbuf_consumed(in, data, len, used);
    return n;
}

static void assert_empty(const struct inbuf *in)
{
    assert_null(in->data);
    assert_int_equal(in->len, 0);
    assert_int_equal(in->cap, 0);
}

/* ---- Tests -------------------------------------------------------------- */

static void test_whole_packets_from_scratch(void **state)
{
    uint8_t scratch[4096], stream[512];
    size_t n = put_packet(stream, (const uint8_t *)"one", 3);
    n += put_packet(stream + n, (const uint8_t *)"", 0);
    n += put_packet(stream + n, (const uint8_t *)"three", 5);

    struct inbuf in = {0};
    size_t cap;
    uint8_t *dst = inbuf_read_target(&in, scratch, sizeof scratch, &cap);
    assert_ptr_equal(dst, scratch);
    assert_int_equal(cap, sizeof scratch);
    memcpy(dst, stream, n);
    size_t len;
    const uint8_t *data = inbuf_filled(&in, scratch, n, &len);
    assert_ptr_equal(data, scratch);
    assert_int_equal(len, n);

    struct parsed out = {0};
    size_t used = parse(&out, data, len);
    assert_int_equal(used, n);
    inbuf_consumed(&in, data, len, used);
    assert_empty(&in);
    assert_int_equal(out.n, 3);
    assert_int_equal(out.lens[0], 3);
    assert_memory_equal(out.bodies[0], "one", 3);
    assert_int_equal(out.lens[1], 0);
    assert_int_equal(out.lens[2], 5);
    assert_memory_equal(out.bodies[2], "three", 5);
    parsed_free(&out);
}

/* A read that ends inside a packet: the tail is copied out of scratch, the
 * next read appends to it, and consuming part of the owned buffer shifts
 * the rest down. */
static void test_tail_kept_appended_and_shifted(void **state)
{
    uint8_t scratch[4096], stream[1024], body[300];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 7 + 1);
    size_t p1 = put_packet(stream, body, 10);
    size_t p2 = put_packet(stream + p1, body, 100);
    size_t p3 = put_packet(stream + p1 + p2, body + 50, 200);
    size_t total = p1 + p2 + p3;

    struct inbuf in = {0};
    struct parsed out = {0};
    size_t cap, len;

    /* Read 1: packet 1 and 5 bytes of packet 2. */
    uint8_t *dst = inbuf_read_target(&in, scratch, sizeof scratch, &cap);
    assert_ptr_equal(dst, scratch);
    memcpy(dst, stream, p1 + 5);
    const uint8_t *data = inbuf_filled(&in, scratch, p1 + 5, &len);
    size_t used = parse(&out, data, len);
    assert_int_equal(used, p1);
    inbuf_consumed(&in, data, len, used);
    assert_int_equal(out.n, 1);
    assert_int_equal(in.len, 5);
    assert_non_null(in.data);
    assert_true(in.cap >= 5);
    assert_memory_equal(in.data, stream + p1, 5);
    /* Scratch is the next connection's now: the tail must not live there. */
    memset(scratch, 0xEE, sizeof scratch);
    assert_memory_equal(in.data, stream + p1, 5);

    /* Read 2 goes after the tail, with room for a full read. */
    dst = inbuf_read_target(&in, scratch, sizeof scratch, &cap);
    assert_ptr_equal(dst, in.data + 5);
    assert_int_equal(cap, in.cap - 5);
    assert_true(cap >= 16 * 1024);
    uint8_t *owned = in.data;
    size_t rest2 = p2 - 5;
    memcpy(dst, stream + p1 + 5, rest2 + 7); /* packet 2's rest, 7 of packet 3 */
    data = inbuf_filled(&in, scratch, rest2 + 7, &len);
    assert_ptr_equal(data, owned);
    assert_int_equal(len, p2 + 7);
    used = parse(&out, data, len);
    assert_int_equal(used, p2);
    uint32_t cap_before = in.cap;
    inbuf_consumed(&in, data, len, used);
    assert_int_equal(out.n, 2);
    assert_int_equal(in.len, 7);
    assert_ptr_equal(in.data, owned);
    assert_int_equal(in.cap, cap_before);
    assert_memory_equal(in.data, stream + p1 + p2, 7);

    /* Read 3 completes packet 3 exactly: the buffer is freed. */
    dst = inbuf_read_target(&in, scratch, sizeof scratch, &cap);
    assert_ptr_equal(dst, in.data + 7);
    memcpy(dst, stream + p1 + p2 + 7, total - p1 - p2 - 7);
    data = inbuf_filled(&in, scratch, total - p1 - p2 - 7, &len);
    assert_int_equal(len, p3);
    used = parse(&out, data, len);
    assert_int_equal(used, p3);
    inbuf_consumed(&in, data, len, used);
    assert_empty(&in);

    assert_int_equal(out.n, 3);
    assert_int_equal(out.lens[1], 100);
    assert_memory_equal(out.bodies[1], body, 100);
    assert_int_equal(out.lens[2], 200);
    assert_memory_equal(out.bodies[2], body + 50, 200);

    /* Empty again: the next read goes to scratch. */
    dst = inbuf_read_target(&in, scratch, sizeof scratch, &cap);
    assert_ptr_equal(dst, scratch);
    parsed_free(&out);
}

/* Even a tail of a few header bytes, and a read that adds nothing. */
static void test_tiny_tail_and_empty_read(void **state)
{
    uint8_t scratch[64];
    uint8_t stream[16];
    size_t n = put_packet(stream, (const uint8_t *)"abcd", 4);
    struct inbuf in = {0};
    struct parsed out = {0};

    assert_int_equal(cycle(&in, scratch, sizeof scratch, stream, 2, &out), 2);
    assert_int_equal(in.len, 2);
    assert_int_equal(out.n, 0);
    assert_int_equal(cycle(&in, scratch, sizeof scratch, stream + 2, 0, &out), 0);
    assert_int_equal(in.len, 2);
    assert_memory_equal(in.data, stream, 2);
    assert_int_equal(cycle(&in, scratch, sizeof scratch, stream + 2, n - 2, &out), n - 2);
    assert_empty(&in);
    assert_int_equal(out.n, 1);
    assert_memory_equal(out.bodies[0], "abcd", 4);
    parsed_free(&out);
}

/* A packet far larger than scratch: the owned buffer grows, by doubling, so
 * a 1 MiB packet in 16 KiB reads takes a handful of reallocations. */
static void test_large_packet_grows_buffer(void **state)
{
    enum { BODY = 1 << 20 };
    uint8_t *body = malloc(BODY);
    uint8_t *stream = malloc(BODY + 4);
    assert_non_null(body);
    assert_non_null(stream);
    for (size_t i = 0; i < BODY; i++)
        body[i] = (uint8_t)rnd(256);
    size_t total = put_packet(stream, body, BODY);

    static uint8_t scratch[16 * 1024];
    struct inbuf in = {0};
    struct parsed out = {0};
    size_t off = 0;
    int reads = 0, grows = 0;
    uint32_t last_cap = 0;
    while (off < total) {
        off += cycle(&in, scratch, sizeof scratch, stream + off, total - off, &out);
        reads++;
        if (off < total) {
            assert_int_equal(in.len, off); /* nothing consumed yet */
            assert_true(in.cap >= in.len);
            if (in.cap != last_cap) {
                assert_true(in.cap > last_cap);
                grows++;
                last_cap = in.cap;
            }
        }
    }
    assert_empty(&in);
    assert_int_equal(out.n, 1);
    assert_int_equal(out.lens[0], BODY);
    assert_memory_equal(out.bodies[0], body, BODY);
    assert_true(reads >= 2);
    if (grows > 12)
        fail_msg("%d reallocations for a 1 MiB packet: growth is not geometric", grows);
    parsed_free(&out);
    free(stream);
    free(body);
}

/* A tail longer than the next read's room: it is copied whole. */
static void test_large_tail_from_scratch(void **state)
{
    enum { BODY = 100000 };
    uint8_t *stream = malloc(BODY + 4 + 8);
    assert_non_null(stream);
    uint8_t *body = malloc(BODY);
    assert_non_null(body);
    for (size_t i = 0; i < BODY; i++)
        body[i] = (uint8_t)rnd(256);
    size_t n = put_packet(stream, (const uint8_t *)"hi", 2);
    size_t total = n + put_packet(stream + n, body, BODY);

    static uint8_t scratch[80000];
    struct inbuf in = {0};
    struct parsed out = {0};
    size_t got = cycle(&in, scratch, sizeof scratch, stream, total, &out);
    assert_int_equal(got, sizeof scratch);
    assert_int_equal(out.n, 1);
    assert_int_equal(in.len, sizeof scratch - n);
    assert_true(in.cap >= in.len);
    assert_memory_equal(in.data, stream + n, in.len);
    while (got < total)
        got += cycle(&in, scratch, sizeof scratch, stream + got, total - got, &out);
    assert_empty(&in);
    assert_int_equal(out.n, 2);
    assert_int_equal(out.lens[1], BODY);
    assert_memory_equal(out.bodies[1], body, BODY);
    parsed_free(&out);
    free(body);
    free(stream);
}

/* Builds a stream of n packets of random sizes into *stream. */
static size_t make_stream(uint8_t **stream, uint8_t **bodies, size_t *lens, int n, uint32_t maxlen)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        lens[i] = rnd(maxlen + 1);
        bodies[i] = malloc(lens[i] + 1);
        assert_non_null(bodies[i]);
        for (size_t k = 0; k < lens[i]; k++)
            bodies[i][k] = (uint8_t)rnd(256);
        total += 4 + lens[i];
    }
    *stream = malloc(total);
    assert_non_null(*stream);
    size_t off = 0;
    for (int i = 0; i < n; i++)
        off += put_packet(*stream + off, bodies[i], lens[i]);
    return total;
}

static void check_reassembled(const struct parsed *out, uint8_t **bodies, const size_t *lens, int n)
{
    assert_int_equal(out->n, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(out->lens[i], lens[i]);
        assert_memory_equal(out->bodies[i], bodies[i], lens[i]);
    }
}

/* One byte per read: every packet is assembled in the owned buffer. */
static void test_byte_by_byte(void **state)
{
    enum { N = 50 };
    uint8_t *bodies[N], *stream;
    size_t lens[N];
    size_t total = make_stream(&stream, bodies, lens, N, 300);

    uint8_t scratch[1024];
    struct inbuf in = {0};
    struct parsed out = {0};
    int empties = 0;
    for (size_t off = 0; off < total; off++) {
        assert_int_equal(cycle(&in, scratch, sizeof scratch, stream + off, 1, &out), 1);
        if (in.len == 0) {
            assert_empty(&in);
            empties++;
        }
    }
    assert_empty(&in);
    assert_int_equal(empties, N); /* freed after every packet */
    check_reassembled(&out, bodies, lens, N);
    parsed_free(&out);
    for (int i = 0; i < N; i++)
        free(bodies[i]);
    free(stream);
}

/* Random read sizes with a small scratch, many times over. */
static void test_random_splits(void **state)
{
    enum { N = 60 };
    for (int round = 0; round < 200; round++) {
        uint8_t *bodies[N], *stream;
        size_t lens[N];
        size_t total = make_stream(&stream, bodies, lens, N, round % 2 ? 100 : 3000);
        uint8_t scratch[512];
        struct inbuf in = {0};
        struct parsed out = {0};
        size_t off = 0;
        while (off < total) {
            size_t want = 1 + rnd(700);
            if (want > total - off)
                want = total - off;
            off += cycle(&in, scratch, sizeof scratch, stream + off, want, &out);
        }
        assert_empty(&in);
        check_reassembled(&out, bodies, lens, N);
        parsed_free(&out);
        for (int i = 0; i < N; i++)
            free(bodies[i]);
        free(stream);
    }
}

static void test_free_is_idempotent(void **state)
{
    struct inbuf in = {0};
    inbuf_free(&in);
    assert_empty(&in);
    uint8_t scratch[16], stream[8];
    struct parsed out = {0};
    put_packet(stream, (const uint8_t *)"zz", 2);
    cycle(&in, scratch, sizeof scratch, stream, 3, &out);
    assert_non_null(in.data);
    inbuf_free(&in);
    assert_empty(&in);
    inbuf_free(&in);
    assert_empty(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_whole_packets_from_scratch, setup),
        cmocka_unit_test_setup(test_tail_kept_appended_and_shifted, setup),
        cmocka_unit_test_setup(test_tiny_tail_and_empty_read, setup),
        cmocka_unit_test_setup(test_large_packet_grows_buffer, setup),
        cmocka_unit_test_setup(test_large_tail_from_scratch, setup),
        cmocka_unit_test_setup(test_byte_by_byte, setup),
        cmocka_unit_test_setup(test_random_splits, setup),
        cmocka_unit_test_setup(test_free_is_idempotent, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
