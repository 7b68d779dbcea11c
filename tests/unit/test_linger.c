/* test_linger.c - unit tests for dropping a closing connection's input
 * (linger.c) over a non-blocking socket pair: what is there is dropped and
 * counted, an empty socket is AGAIN, the peer's close is EOF (after what
 * it sent, and with nothing sent), the byte bound stops reading exactly at
 * LINGER_MAX_BYTES and leaves the rest unread, and a shut write side still
 * lets the peer read what came before and then the end of the stream.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/linger.h"

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(fcntl(sv[i], F_SETFL, O_NONBLOCK), 0);
    int big = 4 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
}

static void test_drops_and_counts(void **state)
{
    int sv[2];
    pair(sv);
    uint32_t dropped = 0;
    assert_int_equal(linger_discard(sv[0], &dropped), LINGER_AGAIN);
    assert_int_equal(dropped, 0);
    assert_int_equal(write(sv[1], "0123456789", 10), 10);
    assert_int_equal(linger_discard(sv[0], &dropped), LINGER_AGAIN);
    assert_int_equal(dropped, 10);
    assert_int_equal(write(sv[1], "abc", 3), 3);
    close(sv[1]);
    assert_int_equal(linger_discard(sv[0], &dropped), LINGER_EOF);
    assert_int_equal(dropped, 13);
    close(sv[0]);
}

static void test_stops_at_the_byte_bound(void **state)
{
    int sv[2];
    pair(sv);
    static char chunk[65536];
    uint32_t dropped = 0;
    size_t sent = 0;
    while (sent < LINGER_MAX_BYTES + sizeof chunk) {
        ssize_t n = write(sv[1], chunk, sizeof chunk);
        if (n < 0) {
            /* The pair's buffer is full: drop some to make room. */
            assert_int_equal(linger_discard(sv[0], &dropped), LINGER_AGAIN);
            continue;
        }
        sent += (size_t)n;
    }
    assert_int_equal(linger_discard(sv[0], &dropped), LINGER_FULL);
    assert_int_equal(dropped, LINGER_MAX_BYTES);
    /* Past the bound nothing more is read, even at the end of the stream. */
    close(sv[1]);
    assert_int_equal(linger_discard(sv[0], &dropped), LINGER_FULL);
    char c;
    assert_true(read(sv[0], &c, 1) == 1);
    close(sv[0]);
}

static void test_shut_write_side_ends_the_peer_stream(void **state)
{
    int sv[2];
    pair(sv);
    assert_int_equal(write(sv[0], "bye", 3), 3);
    linger_shut(sv[0]);
    char buf[8];
    assert_int_equal(read(sv[1], buf, sizeof buf), 3);
    assert_memory_equal(buf, "bye", 3);
    assert_int_equal(read(sv[1], buf, sizeof buf), 0);
    /* The other direction still flows, and is dropped. */
    assert_int_equal(write(sv[1], "more", 4), 4);
    uint32_t dropped = 0;
    assert_int_equal(linger_discard(sv[0], &dropped), LINGER_AGAIN);
    assert_int_equal(dropped, 4);
    close(sv[1]);
    close(sv[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drops_and_counts),
        cmocka_unit_test(test_stops_at_the_byte_bound),
        cmocka_unit_test(test_shut_write_side_ends_the_peer_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
