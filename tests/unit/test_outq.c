/* test_outq.c - unit tests for the output queue (outq.c), flushed into a
 * non-blocking socketpair whose send buffer is made small so that writes are
 * partial: byte order across copied and shared pieces, merging of own
 * pieces, shared-block reference counts, resumed partial writes, write
 * errors, compaction of the own buffer, that a drained queue holds no
 * memory, and that a small first output takes small buffers.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/outq.h"
#include "test_rng.h"

#define SMALL_SNDBUF 4096
#define BLOCK_LEN 8192

static void fill_random(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd(256);
}

/* ---- A socketpair: the queue writes to w, the test reads from r --------- */

struct pair {
    int w, r;
};

static void pair_open(struct pair *p, int sndbuf)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    if (sndbuf > 0)
        assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
    p->w = sv[0];
    p->r = sv[1];
}

static void pair_close(struct pair *p)
{
    if (p->w >= 0)
        close(p->w);
    if (p->r >= 0)
        close(p->r);
    p->w = p->r = -1;
}

/* Bytes sitting in the socket, written but not yet read. */
static size_t in_flight(int fd)
{
    int n = 0;
    assert_int_equal(ioctl(fd, FIONREAD, &n), 0);
    assert_true(n >= 0);
    return (size_t)n;
}

/* ---- The stream the peer must receive, checked as it is read ------------ */

struct model {
    uint8_t *exp;
    size_t len, cap; /* bytes queued so far */
    size_t got;      /* bytes read back and checked */
};

static void model_add(struct model *m, const void *p, size_t n)
{
    if (m->len + n > m->cap) {
        m->cap = m->cap ? m->cap : 4096;
        while (m->cap < m->len + n)
            m->cap *= 2;
        m->exp = realloc(m->exp, m->cap);
        assert_non_null(m->exp);
    }
    memcpy(m->exp + m->len, p, n);
    m->len += n;
}

static void model_free(struct model *m)
{
    free(m->exp);
    memset(m, 0, sizeof *m);
}

/* Reads at most max bytes (until EAGAIN) and checks them against the model. */
static size_t model_read(struct model *m, int fd, size_t max)
{
    uint8_t buf[16384];
    size_t total = 0;
    while (total < max) {
        size_t want = max - total < sizeof buf ? max - total : sizeof buf;
        ssize_t n = read(fd, buf, want);
        if (n < 0) {
            assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        assert_true(n > 0);
        if (m->got + (size_t)n > m->len)
            fail_msg("peer received %zu bytes, only %zu were queued", m->got + (size_t)n, m->len);
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] != m->exp[m->got + (size_t)i])
                fail_msg("stream byte %zu is 0x%02x, want 0x%02x", m->got + (size_t)i, buf[i],
                         m->exp[m->got + (size_t)i]);
        m->got += (size_t)n;
        total += (size_t)n;
    }
    return total;
}

/* Every queued byte is exactly one of: pending, in the socket, or read. */
static void check_accounting(const struct outq *q, const struct model *m, const struct pair *p)
{
    assert_int_equal(outq_pending(q) + in_flight(p->r) + m->got, m->len);
}

static void assert_no_memory(const struct outq *q)
{
    assert_null(q->own);
    assert_null(q->ents);
    assert_int_equal(q->own_len, 0);
    assert_int_equal(q->own_cap, 0);
    assert_int_equal(q->head, 0);
    assert_int_equal(q->count, 0);
    assert_int_equal(q->cap, 0);
    assert_int_equal(q->head_sent, 0);
    assert_int_equal(outq_pending(q), 0);
}

/* Flushes and reads until the queue is empty and every byte was checked. */
static void flush_all(struct outq *q, struct pair *p, struct model *m)
{
    for (int rounds = 0;; rounds++) {
        int rc = outq_flush(q, p->w);
        check_accounting(q, m, p);
        if (rc == 0)
            break;
        assert_int_equal(rc, 1);
        assert_true(rounds < 100000);
        /* A full socket means the peer has something to read. */
        assert_true(model_read(m, p->r, SIZE_MAX) > 0);
    }
    model_read(m, p->r, SIZE_MAX);
    assert_int_equal(m->got, m->len);
    assert_no_memory(q);
}

/* ---- Shared blocks ------------------------------------------------------ */

struct block {
    struct outq_rc rc; /* first, so the release function can cast back */
    unsigned released;
    uint8_t data[BLOCK_LEN];
};

static void block_release(struct outq_rc *rc)
{
    struct block *b = (struct block *)rc;
    assert_int_equal(rc->refs, 0);
    b->released++;
}

/* One reference, held by the test. */
static void block_init(struct block *b)
{
    b->rc.refs = 1;
    b->rc.release = block_release;
    b->released = 0;
    fill_random(b->data, sizeof b->data);
}

static void q_copy(struct outq *q, struct model *m, const void *p, size_t n)
{
    outq_copy(q, p, n);
    model_add(m, p, n);
}

static void q_share(struct outq *q, struct model *m, struct block *b, size_t off, size_t n)
{
    outq_share(q, &b->rc, b->data + off, n);
    model_add(m, b->data + off, n);
}

static void q_copy_random(struct outq *q, struct model *m, size_t n)
{
    uint8_t buf[4096];
    assert_true(n <= sizeof buf);
    fill_random(buf, n);
    q_copy(q, m, buf, n);
}

static int setup(void **state)
{
    rng_state = 0x9E3779B97F4A7C15u;
    return 0;
}

/* ---- Tests -------------------------------------------------------------- */

static void test_empty_flush(void **state)
{
    struct pair p;
    pair_open(&p, 0);
    struct outq q = {0};
    assert_int_equal(outq_flush(&q, p.w), 0);
    assert_int_equal(in_flight(p.r), 0);
    assert_no_memory(&q);
    outq_clear(&q);
    assert_no_memory(&q);
    pair_close(&p);
}

static void test_copy_and_share_in_order(void **state)
{
    struct pair p;
    pair_open(&p, 0);
    static struct block b;
    block_init(&b);
    memcpy(b.data, " world", 6);
    struct outq q = {0};
    outq_copy(&q, "hello", 5);
    outq_share(&q, &b.rc, b.data, 6);
    outq_copy(&q, "!", 1);
    assert_int_equal(b.rc.refs, 2);
    assert_int_equal(outq_pending(&q), 12);
    assert_int_equal(q.count, 3);

    assert_int_equal(outq_flush(&q, p.w), 0);
    char got[32] = {0};
    assert_int_equal(read(p.r, got, sizeof got), 12);
    assert_string_equal(got, "hello world!");
    assert_int_equal(b.rc.refs, 1);
    assert_int_equal(b.released, 0);
    assert_no_memory(&q);
    pair_close(&p);
}

static void test_reserve_extends_last_own_piece(void **state)
{
    struct pair p;
    pair_open(&p, 0);
    static struct block b;
    block_init(&b);
    struct outq q = {0};

    outq_copy(&q, "ab", 2);
    uint8_t *r = outq_reserve(&q, 3);
    assert_ptr_equal(r, q.own + 2);
    memcpy(r, "cde", 3);
    assert_int_equal(q.count, 1);
    assert_int_equal(q.ents[q.head].off, 0);
    assert_int_equal(q.ents[q.head].len, 5);
    assert_null(q.ents[q.head].owner);

    /* A shared piece in between: the next own bytes start a new piece... */
    outq_share(&q, &b.rc, b.data, 10);
    assert_int_equal(q.count, 2);
    r = outq_reserve(&q, 4);
    memcpy(r, "fghi", 4);
    assert_int_equal(q.count, 3);
    assert_int_equal(q.ents[q.head + 2].off, 5);
    assert_int_equal(q.ents[q.head + 2].len, 4);
    /* ...which later own bytes extend again. */
    outq_copy(&q, "jk", 2);
    assert_int_equal(q.count, 3);
    assert_int_equal(q.ents[q.head + 2].len, 6);
    assert_int_equal(q.own_len, 11);
    assert_int_equal(outq_pending(&q), 21);

    assert_int_equal(outq_flush(&q, p.w), 0);
    uint8_t got[64];
    assert_int_equal(read(p.r, got, sizeof got), 21);
    assert_memory_equal(got, "abcde", 5);
    assert_memory_equal(got + 5, b.data, 10);
    assert_memory_equal(got + 15, "fghijk", 6);
    pair_close(&p);
}

/* A head piece that is partly written still grows in place. */
static void test_reserve_extends_partly_written_head(void **state)
{
    struct pair p;
    pair_open(&p, SMALL_SNDBUF);
    struct model m = {0};
    struct outq q = {0};

    q_copy_random(&q, &m, 4096);
    q_copy_random(&q, &m, 4096);
    q_copy_random(&q, &m, 4096);
    assert_int_equal(q.count, 1);
    assert_int_equal(outq_flush(&q, p.w), 1);
    assert_true(q.head_sent > 0);
    q_copy_random(&q, &m, 100);
    assert_int_equal(q.count, 1);
    flush_all(&q, &p, &m);
    model_free(&m);
    pair_close(&p);
}

/* Random copies, reserves and shares of slices of three blocks, with flushes
 * and partial reads in between; the stream must come out exact. */
static void test_interleaved_random(void **state)
{
    struct pair p;
    pair_open(&p, SMALL_SNDBUF);
    struct model m = {0};
    struct outq q = {0};
    static struct block blocks[3];
    for (int i = 0; i < 3; i++)
        block_init(&blocks[i]);

    int flushes_full = 0;
    for (int op = 0; op < 5000; op++) {
        uint32_t k = rnd(100);
        if (k < 40) {
            q_copy_random(&q, &m, 1 + rnd(300));
        } else if (k < 50) {
            size_t n = 1 + rnd(64);
            uint8_t *dst = outq_reserve(&q, n);
            fill_random(dst, n);
            model_add(&m, dst, n);
        } else if (k < 85) {
            struct block *b = &blocks[rnd(3)];
            size_t off = rnd(BLOCK_LEN);
            q_share(&q, &m, b, off, 1 + rnd((uint32_t)(BLOCK_LEN - off)));
        } else {
            int rc = outq_flush(&q, p.w);
            assert_true(rc == 0 || rc == 1);
            flushes_full += rc;
            check_accounting(&q, &m, &p);
            if (rc == 0)
                assert_no_memory(&q);
            model_read(&m, p.r, rnd(20000));
            check_accounting(&q, &m, &p);
        }
    }
    assert_true(flushes_full > 10); /* the small buffer did make writes partial */
    flush_all(&q, &p, &m);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(blocks[i].rc.refs, 1);
        assert_int_equal(blocks[i].released, 0);
        outq_rc_put(&blocks[i].rc);
        assert_int_equal(blocks[i].released, 1);
    }
    model_free(&m);
    pair_close(&p);
}

/* More pieces than one writev takes: a roomy socket takes them all in one
 * outq_flush call. */
static void test_many_pieces_one_flush(void **state)
{
    struct pair p;
    pair_open(&p, 0);
    struct model m = {0};
    struct outq q = {0};
    static struct block b;
    block_init(&b);

    for (int i = 0; i < 1000; i++) {
        q_share(&q, &m, &b, (size_t)i * 8, 8);
        q_copy_random(&q, &m, 3);
    }
    assert_int_equal(q.count, 2000);
    assert_int_equal(b.rc.refs, 1001);
    assert_int_equal(outq_flush(&q, p.w), 0);
    assert_no_memory(&q);
    assert_int_equal(b.rc.refs, 1);
    assert_int_equal(model_read(&m, p.r, SIZE_MAX), 11000);
    assert_int_equal(m.got, m.len);
    model_free(&m);
    pair_close(&p);
}

/* Shared by two queues: the release runs when the second one writes it. */
static void test_refcount_last_writer_releases(void **state)
{
    struct pair p1, p2;
    pair_open(&p1, SMALL_SNDBUF);
    pair_open(&p2, SMALL_SNDBUF);
    struct model m1 = {0}, m2 = {0};
    struct outq q1 = {0}, q2 = {0};
    static struct block b;
    block_init(&b);

    q_share(&q1, &m1, &b, 0, BLOCK_LEN);
    q_copy_random(&q2, &m2, 10);
    q_share(&q2, &m2, &b, 0, BLOCK_LEN);
    assert_int_equal(b.rc.refs, 3);
    outq_rc_put(&b.rc); /* the test lets go; the queues keep it alive */
    assert_int_equal(b.rc.refs, 2);
    assert_int_equal(b.released, 0);

    flush_all(&q1, &p1, &m1);
    assert_int_equal(b.rc.refs, 1);
    assert_int_equal(b.released, 0);

    int rc, rounds = 0;
    while ((rc = outq_flush(&q2, p2.w)) == 1) {
        /* Partly written is still referenced. */
        assert_int_equal(b.rc.refs, 1);
        assert_int_equal(b.released, 0);
        assert_true(model_read(&m2, p2.r, SIZE_MAX) > 0);
        rounds++;
    }
    assert_int_equal(rc, 0);
    assert_true(rounds > 0);
    assert_int_equal(b.released, 1);
    model_read(&m2, p2.r, SIZE_MAX);
    assert_int_equal(m2.got, m2.len);
    model_free(&m1);
    model_free(&m2);
    pair_close(&p1);
    pair_close(&p2);
}

/* outq_clear drops every reference, including a partly written head and
 * the same block queued twice. */
static void test_refcount_clear_releases(void **state)
{
    struct pair p;
    pair_open(&p, SMALL_SNDBUF);
    struct model m = {0};
    struct outq q = {0};
    static struct block b, c;
    block_init(&b);
    block_init(&c);

    q_share(&q, &m, &b, 0, BLOCK_LEN);
    q_copy_random(&q, &m, 100);
    q_share(&q, &m, &b, 100, 200);
    q_share(&q, &m, &c, 0, 50);
    assert_int_equal(b.rc.refs, 3);
    assert_int_equal(c.rc.refs, 2);
    outq_rc_put(&c.rc); /* only the queue holds c now */

    assert_int_equal(outq_flush(&q, p.w), 1);
    assert_true(q.head_sent > 0); /* b's first piece is partly written */
    assert_int_equal(b.rc.refs, 3);

    outq_clear(&q);
    assert_no_memory(&q);
    assert_int_equal(b.rc.refs, 1);
    assert_int_equal(b.released, 0);
    assert_int_equal(c.released, 1);
    outq_rc_put(&b.rc);
    assert_int_equal(b.released, 1);
    model_free(&m);
    pair_close(&p);
}

/* Partial writes resume where they stopped, however little the peer reads. */
static void test_partial_writes_resume(void **state)
{
    struct pair p;
    pair_open(&p, SMALL_SNDBUF);
    struct model m = {0};
    struct outq q = {0};
    static struct block b;
    block_init(&b);

    while (m.len < 100000) {
        q_copy_random(&q, &m, 1 + rnd(2000));
        q_share(&q, &m, &b, rnd(4096), 1 + rnd(4096));
    }
    size_t total = m.len;
    assert_int_equal(outq_pending(&q), total);

    assert_int_equal(outq_flush(&q, p.w), 1);
    size_t left = outq_pending(&q);
    assert_true(left > 0 && left < total);
    check_accounting(&q, &m, &p);
    /* Nothing was read, so nothing more fits. */
    assert_int_equal(outq_flush(&q, p.w), 1);
    assert_int_equal(outq_pending(&q), left);

    int rc, rounds = 0;
    do {
        model_read(&m, p.r, 1 + rnd(1500));
        rc = outq_flush(&q, p.w);
        assert_true(rc == 0 || rc == 1);
        if (rc == 1)
            assert_true(outq_pending(&q) > 0);
        check_accounting(&q, &m, &p);
        rounds++;
        assert_true(rounds < 100000);
    } while (rc == 1);
    assert_true(rounds > 20);
    assert_no_memory(&q);
    model_read(&m, p.r, SIZE_MAX);
    assert_int_equal(m.got, total);
    assert_int_equal(b.rc.refs, 1);
    model_free(&m);
    pair_close(&p);
}

static void test_write_error(void **state)
{
    struct pair p;
    pair_open(&p, SMALL_SNDBUF);
    struct model m = {0};
    struct outq q = {0};
    static struct block b;
    block_init(&b);

    q_copy_random(&q, &m, 100);
    q_share(&q, &m, &b, 0, 1000);
    close(p.r);
    p.r = -1;
    errno = 0;
    assert_int_equal(outq_flush(&q, p.w), -1);
    assert_int_equal(errno, EPIPE);
    /* Nothing was written; the queue still holds its reference. */
    assert_int_equal(outq_pending(&q), 1100);
    assert_int_equal(b.rc.refs, 2);
    outq_clear(&q);
    assert_int_equal(b.rc.refs, 1);
    pair_close(&p);

    /* The peer goes away after a partial write. */
    pair_open(&p, SMALL_SNDBUF);
    while (m.len < 50000)
        q_copy_random(&q, &m, 4000);
    q_share(&q, &m, &b, 0, BLOCK_LEN);
    assert_int_equal(outq_flush(&q, p.w), 1);
    close(p.r);
    p.r = -1;
    errno = 0;
    assert_int_equal(outq_flush(&q, p.w), -1);
    assert_true(errno == EPIPE || errno == ECONNRESET);
    outq_clear(&q);
    assert_int_equal(b.rc.refs, 1);
    model_free(&m);
    pair_close(&p);
}

/* A queue that never drains while megabytes of own bytes pass through it:
 * the written prefix must be reclaimed, so the own buffer stays small. */
static void test_compaction_own_bytes(void **state)
{
    struct pair p;
    pair_open(&p, SMALL_SNDBUF);
    struct model m = {0};
    struct outq q = {0};

    while (m.len < 48 * 1024)
        q_copy_random(&q, &m, 3000);
    uint32_t max_cap = 0;
    for (int round = 0; round < 2000; round++) {
        q_copy_random(&q, &m, 3000);
        assert_int_equal(outq_flush(&q, p.w), 1); /* never drains */
        check_accounting(&q, &m, &p);
        if (q.own_cap > max_cap)
            max_cap = q.own_cap;
        model_read(&m, p.r, 3000);
    }
    assert_true(m.len > 6000000);
    if (max_cap > 256 * 1024)
        fail_msg("own buffer grew to %u bytes for ~48 KiB pending", max_cap);
    flush_all(&q, &p, &m);
    model_free(&m);
    pair_close(&p);
}

/* The same with shared pieces between the own ones, so that the first
 * pending own piece is often not the head. */
static void test_compaction_with_shared(void **state)
{
    struct pair p;
    pair_open(&p, SMALL_SNDBUF);
    struct model m = {0};
    struct outq q = {0};
    static struct block b;
    block_init(&b);

    uint32_t max_cap = 0;
    for (int round = 0; round < 3060; round++) {
        q_copy_random(&q, &m, 100);
        q_share(&q, &m, &b, rnd(BLOCK_LEN - 700), 700);
        q_copy_random(&q, &m, 50);
        if (round < 60)
            continue; /* build a backlog first */
        assert_int_equal(outq_flush(&q, p.w), 1);
        check_accounting(&q, &m, &p);
        if (q.own_cap > max_cap)
            max_cap = q.own_cap;
        model_read(&m, p.r, 850);
    }
    if (max_cap > 128 * 1024)
        fail_msg("own buffer grew to %u bytes", max_cap);
    flush_all(&q, &p, &m);
    assert_int_equal(b.rc.refs, 1);
    model_free(&m);
    pair_close(&p);
}

/* A drained queue frees everything, and is usable again afterwards. */
static void test_drained_queue_holds_nothing(void **state)
{
    struct pair p;
    pair_open(&p, SMALL_SNDBUF);
    struct model m = {0};
    struct outq q = {0};
    static struct block b;
    block_init(&b);

    for (int i = 0; i < 40; i++) {
        q_copy_random(&q, &m, 1000);
        q_share(&q, &m, &b, 0, 100);
    }
    assert_non_null(q.own);
    assert_non_null(q.ents);
    flush_all(&q, &p, &m);

    q_copy_random(&q, &m, 10);
    assert_non_null(q.own);
    assert_int_equal(q.count, 1);
    flush_all(&q, &p, &m);
    assert_int_equal(b.rc.refs, 1);
    model_free(&m);
    pair_close(&p);
}

/* A small first output (a CONNACK, a PINGRESP) takes small buffers: 32
 * bytes and two pieces, whose holes among long-lived records the next small
 * outputs reuse; growing past them goes to the usual 256 bytes and 8
 * pieces, and the bytes still come out in order. */
static void test_small_first_output(void **state)
{
    struct pair p;
    pair_open(&p, SMALL_SNDBUF);
    struct model m = {0};
    struct outq q = {0};
    static struct block b;
    block_init(&b);

    q_copy_random(&q, &m, 4);
    assert_int_equal(q.own_cap, 32);
    assert_int_equal(q.cap, 2);
    q_copy_random(&q, &m, 28); /* fills it, still one piece */
    assert_int_equal(q.own_cap, 32);
    assert_int_equal(q.count, 1);
    q_copy_random(&q, &m, 1);
    assert_int_equal(q.own_cap, 256);
    q_share(&q, &m, &b, 0, 100);
    assert_int_equal(q.cap, 2);
    q_copy_random(&q, &m, 1);
    assert_int_equal(q.cap, 8);
    flush_all(&q, &p, &m);
    assert_null(q.own);

    /* A first output over 32 bytes starts at 256, as before. */
    q_copy_random(&q, &m, 33);
    assert_int_equal(q.own_cap, 256);
    flush_all(&q, &p, &m);
    assert_int_equal(b.rc.refs, 1);
    model_free(&m);
    pair_close(&p);
}

/* Runs fn in a child with a deadline; returns its wait status. */
static int run_bounded(void (*fn)(int fd), int fd)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(1);
        fn(fd);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void zero_copy_child(int fd)
{
    struct outq q = {0};
    outq_copy(&q, "", 0);
    _exit(outq_flush(&q, fd) == 0 && q.count == 0 ? 0 : 3);
}

static void zero_share_child(int fd)
{
    static struct block b;
    block_init(&b);
    struct outq q = {0};
    outq_copy(&q, "x", 1);
    outq_share(&q, &b.rc, b.data, 0);
    _exit(outq_flush(&q, fd) == 0 && b.rc.refs == 1 ? 0 : 3);
}

static void check_bounded(const char *what, int status)
{
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        fail_msg("%s: outq_flush never returned", what);
    if (WIFSIGNALED(status))
        fail_msg("%s: child killed by signal %d", what, WTERMSIG(status));
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 3)
        fail_msg("%s: outq_flush returned but left the queue wrong", what);
    if (WEXITSTATUS(status) != 0)
        fail_msg("%s: child exited with %d (a sanitizer report?)", what, WEXITSTATUS(status));
}

/* A zero-length copy or share is a legal call; flushing must not spin on
 * the empty piece it leaves (each runs in a child with a 1 s deadline). */
static void test_zero_length_copy(void **state)
{
    struct pair p;
    pair_open(&p, 0);
    check_bounded("outq_copy(q, \"\", 0)", run_bounded(zero_copy_child, p.w));
    pair_close(&p);
}

static void test_zero_length_share(void **state)
{
    struct pair p;
    pair_open(&p, 0);
    check_bounded("outq_share(q, owner, ptr, 0)", run_bounded(zero_share_child, p.w));
    pair_close(&p);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_empty_flush, setup),
        cmocka_unit_test_setup(test_copy_and_share_in_order, setup),
        cmocka_unit_test_setup(test_reserve_extends_last_own_piece, setup),
        cmocka_unit_test_setup(test_reserve_extends_partly_written_head, setup),
        cmocka_unit_test_setup(test_interleaved_random, setup),
        cmocka_unit_test_setup(test_many_pieces_one_flush, setup),
        cmocka_unit_test_setup(test_refcount_last_writer_releases, setup),
        cmocka_unit_test_setup(test_refcount_clear_releases, setup),
        cmocka_unit_test_setup(test_partial_writes_resume, setup),
        cmocka_unit_test_setup(test_write_error, setup),
        cmocka_unit_test_setup(test_compaction_own_bytes, setup),
        cmocka_unit_test_setup(test_compaction_with_shared, setup),
        cmocka_unit_test_setup(test_drained_queue_holds_nothing, setup),
        cmocka_unit_test_setup(test_small_first_output, setup),
        cmocka_unit_test_setup(test_zero_length_copy, setup),
        cmocka_unit_test_setup(test_zero_length_share, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
