/* test_net.c - unit tests for the socket helpers (net.c), on loopback only:
 * listening on 127.0.0.1 and ::1 with port 0, connecting and accepting
 * (non-blocking, close-on-exec, TCP_NODELAY), a port already in use, a
 * refused connect reported through net_connect_result, address formatting,
 * and unresolvable hosts. IPv6 cases are skipped when ::1 is unavailable.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/net.h"

#define POLL_MS 2000

static void assert_nonblocking_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    assert_true(fl >= 0);
    assert_true(fl & O_NONBLOCK);
    int fdfl = fcntl(fd, F_GETFD);
    assert_true(fdfl >= 0);
    assert_true(fdfl & FD_CLOEXEC);
}

static int get_int_opt(int fd, int level, int name)
{
    int v = -1;
    socklen_t len = sizeof v;
    assert_int_equal(getsockopt(fd, level, name, &v, &len), 0);
    return v;
}

static short wait_for(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, POLL_MS);
    if (n != 1)
        fail_msg("fd %d not ready for 0x%x within %d ms", fd, events, POLL_MS);
    return p.revents;
}

/* Listens on host with port 0; returns the fd and the bound port. */
static int listen_any(const char *host, int *port)
{
    char err[NET_ERR_LEN] = "";
    int fd = net_listen(host, 0, 16, 0, err, sizeof err);
    if (fd < 0)
        return -1;
    assert_string_equal(err, "");
    *port = net_local_port(fd);
    assert_true(*port > 0 && *port <= 65535);
    return fd;
}

/* Listener, client and accepted server socket talking over host. */
static void connect_accept(const char *host, int family, const char *want_peer_prefix)
{
    int port;
    int lfd = listen_any(host, &port);
    assert_true(lfd >= 0);
    assert_nonblocking_cloexec(lfd);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&ss, &sl), 0);
    assert_int_equal(ss.ss_family, family);
    assert_int_equal(get_int_opt(lfd, SOL_SOCKET, SO_REUSEADDR), 1);
    /* IPV6_V6ONLY is not checked: Linux sets it on any socket bound to a
     * specific IPv6 address such as ::1, and a wildcard bind would leave
     * loopback. */

    /* Nothing to accept yet. */
    errno = 0;
    assert_int_equal(net_accept(lfd, NULL), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);

    char err[NET_ERR_LEN] = "";
    int cfd = net_connect(host, port, err, sizeof err);
    if (cfd < 0)
        fail_msg("net_connect(%s, %d): %s", host, port, err);
    assert_nonblocking_cloexec(cfd);
    assert_int_equal(get_int_opt(cfd, IPPROTO_TCP, TCP_NODELAY), 1);
    assert_true(wait_for(cfd, POLLOUT) & POLLOUT);
    assert_int_equal(net_connect_result(cfd), 0);

    assert_true(wait_for(lfd, POLLIN) & POLLIN);
    struct sockaddr_storage peer;
    memset(&peer, 0xAB, sizeof peer);
    int sfd = net_accept(lfd, &peer);
    assert_true(sfd >= 0);
    assert_nonblocking_cloexec(sfd);
    assert_int_equal(get_int_opt(sfd, IPPROTO_TCP, TCP_NODELAY), 1);
    assert_int_equal(peer.ss_family, family);
    assert_int_equal(net_local_port(sfd), port);

    /* The accepted peer address is the client's. */
    char want[64], got[64];
    snprintf(want, sizeof want, "%s%d", want_peer_prefix, net_local_port(cfd));
    assert_string_equal(net_addr_str(&peer, got, sizeof got), want);

    /* And bytes flow both ways. */
    char buf[8] = {0};
    assert_int_equal(write(cfd, "ping", 4), 4);
    wait_for(sfd, POLLIN);
    assert_int_equal(read(sfd, buf, sizeof buf), 4);
    assert_memory_equal(buf, "ping", 4);
    assert_int_equal(write(sfd, "pong", 4), 4);
    wait_for(cfd, POLLIN);
    assert_int_equal(read(cfd, buf, sizeof buf), 4);
    assert_memory_equal(buf, "pong", 4);

    /* The backlog is empty again. */
    errno = 0;
    assert_int_equal(net_accept(lfd, NULL), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    close(sfd);
    close(cfd);
    close(lfd);
}

static bool have_ipv6(void)
{
    int port;
    int fd = listen_any("::1", &port);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* ---- Tests -------------------------------------------------------------- */

static void test_listen_port0_ipv4(void **state)
{
    int p1, p2;
    int a = listen_any("127.0.0.1", &p1);
    int b = listen_any("127.0.0.1", &p2);
    assert_true(a >= 0 && b >= 0);
    assert_int_not_equal(p1, p2); /* each gets its own free port */
    close(a);
    close(b);
}

static void test_connect_accept_ipv4(void **state)
{
    connect_accept("127.0.0.1", AF_INET, "127.0.0.1:");
}

static void test_connect_accept_ipv6(void **state)
{
    if (!have_ipv6())
        skip();
    connect_accept("::1", AF_INET6, "[::1]:");
}

static void test_accept_without_addr(void **state)
{
    int port;
    int lfd = listen_any("127.0.0.1", &port);
    assert_true(lfd >= 0);
    char err[NET_ERR_LEN];
    int cfd = net_connect("127.0.0.1", port, err, sizeof err);
    assert_true(cfd >= 0);
    wait_for(lfd, POLLIN);
    int sfd = net_accept(lfd, NULL);
    assert_true(sfd >= 0);
    assert_int_equal(get_int_opt(sfd, IPPROTO_TCP, TCP_NODELAY), 1);
    close(sfd);
    close(cfd);
    close(lfd);
}

static void test_listen_port_in_use(void **state)
{
    int port;
    int lfd = listen_any("127.0.0.1", &port);
    assert_true(lfd >= 0);
    char err[NET_ERR_LEN] = "";
    assert_int_equal(net_listen("127.0.0.1", port, 16, 0, err, sizeof err), -1);
    char want[32];
    snprintf(want, sizeof want, "127.0.0.1:%d", port);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not name %s", err, want);
    if (!strstr(err, strerror(EADDRINUSE)))
        fail_msg("error \"%s\" does not give the cause", err);
    close(lfd);
}

static void test_listen_port_in_use_ipv6(void **state)
{
    if (!have_ipv6())
        skip();
    int port;
    int lfd = listen_any("::1", &port);
    assert_true(lfd >= 0);
    char err[NET_ERR_LEN] = "";
    assert_int_equal(net_listen("::1", port, 16, 0, err, sizeof err), -1);
    char want[16];
    snprintf(want, sizeof want, "%d", port);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not name port %d", err, port);
    close(lfd);
}

/* A port nobody listens on: the refusal arrives through net_connect_result. */
static void test_connect_refused(void **state)
{
    int port;
    int lfd = listen_any("127.0.0.1", &port);
    assert_true(lfd >= 0);
    close(lfd);

    char err[NET_ERR_LEN] = "";
    int cfd = net_connect("127.0.0.1", port, err, sizeof err);
    if (cfd < 0)
        fail_msg("net_connect failed at once (%s); it should report through the fd", err);
    short re = wait_for(cfd, POLLOUT);
    assert_true(re & (POLLOUT | POLLERR | POLLHUP));
    assert_int_equal(net_connect_result(cfd), ECONNREFUSED);
    close(cfd);
}

static void test_connect_result_bad_fd(void **state)
{
    assert_int_equal(net_connect_result(-1), EBADF);
}

static void test_local_port_not_inet(void **state)
{
    assert_int_equal(net_local_port(-1), -1);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(net_local_port(fds[0]), -1);
    close(fds[0]);
    close(fds[1]);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(net_local_port(sv[0]), -1);
    close(sv[0]);
    close(sv[1]);
}

static void test_addr_str(void **state)
{
    struct sockaddr_storage ss;
    char buf[64];

    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons(1883);
    assert_int_equal(inet_pton(AF_INET, "127.0.0.1", &a4->sin_addr), 1);
    assert_ptr_equal(net_addr_str(&ss, buf, sizeof buf), buf);
    assert_string_equal(buf, "127.0.0.1:1883");
    a4->sin_port = htons(65535);
    assert_int_equal(inet_pton(AF_INET, "255.255.255.255", &a4->sin_addr), 1);
    assert_string_equal(net_addr_str(&ss, buf, sizeof buf), "255.255.255.255:65535");

    memset(&ss, 0, sizeof ss);
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(8080);
    a6->sin6_addr = in6addr_loopback;
    assert_string_equal(net_addr_str(&ss, buf, sizeof buf), "[::1]:8080");
    assert_int_equal(inet_pton(AF_INET6, "::ffff:1.2.3.4", &a6->sin6_addr), 1);
    a6->sin6_port = htons(5);
    assert_string_equal(net_addr_str(&ss, buf, sizeof buf), "[::ffff:1.2.3.4]:5");
    assert_int_equal(inet_pton(AF_INET6, "2001:db8:0:0:1:0:0:1", &a6->sin6_addr), 1);
    assert_string_equal(net_addr_str(&ss, buf, sizeof buf), "[2001:db8::1:0:0:1]:5");

    memset(&ss, 0, sizeof ss);
    ss.ss_family = AF_UNIX;
    assert_string_equal(net_addr_str(&ss, buf, sizeof buf), "unknown");

    /* A short buffer truncates and stays terminated. */
    memset(&ss, 0, sizeof ss);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(1883);
    assert_int_equal(inet_pton(AF_INET, "127.0.0.1", &a4->sin_addr), 1);
    char small[6];
    memset(small, 'X', sizeof small);
    assert_string_equal(net_addr_str(&ss, small, sizeof small), "127.0");
}

/* The name has an empty label, so the resolver refuses it without asking
 * the network. */
#define BAD_HOST "bad..host.invalid"

static void test_unresolvable_host(void **state)
{
    char err[NET_ERR_LEN] = "";
    assert_int_equal(net_listen(BAD_HOST, 0, 16, 0, err, sizeof err), -1);
    if (!strstr(err, BAD_HOST))
        fail_msg("listen error \"%s\" does not name the host", err);
    memset(err, 0, sizeof err);
    assert_int_equal(net_connect(BAD_HOST, 1883, err, sizeof err), -1);
    if (!strstr(err, BAD_HOST))
        fail_msg("connect error \"%s\" does not name the host", err);
    assert_true(strlen(err) > strlen(BAD_HOST));
}

/* The error message is cut to the caller's buffer. */
static void test_error_truncated_to_errlen(void **state)
{
    char err[16];
    memset(err, 'X', sizeof err);
    assert_int_equal(net_connect(BAD_HOST, 1, err, 10), -1);
    assert_int_equal(strlen(err), 9);
    assert_int_equal(err[10], 'X');
}

static void test_raise_fd_limit(void **state)
{
    struct rlimit before, after;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &before), 0);
    long n = net_raise_fd_limit();
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &after), 0);
    assert_int_equal(n, (long)after.rlim_cur);
    assert_true(after.rlim_cur >= before.rlim_cur);
    assert_true(after.rlim_cur == after.rlim_max || after.rlim_cur == before.rlim_cur);
}

static void test_listen_reuseport_shares_port(void **state)
{
    char err[NET_ERR_LEN];
    int a = net_listen("127.0.0.1", 0, 16, NET_REUSEPORT, err, sizeof err);
    assert_true(a >= 0);
    int port = net_local_port(a);
    int b = net_listen("127.0.0.1", port, 16, NET_REUSEPORT, err, sizeof err);
    if (b < 0)
        fail_msg("second SO_REUSEPORT listener refused: %s", err);
    assert_int_equal(get_int_opt(b, SOL_SOCKET, SO_REUSEPORT), 1);
    /* Without the flag the port stays exclusive. */
    assert_int_equal(net_listen("127.0.0.1", port, 16, 0, err, sizeof err), -1);
    close(a);
    close(b);
}

/* Out of descriptors, the guarded accept drops the pending connection
 * (the client sees it closed) instead of leaving the listener readable. */
static void test_accept_guarded_sheds_when_out_of_fds(void **state)
{
    int port;
    int lfd = listen_any("127.0.0.1", &port);
    assert_true(lfd >= 0);
    char err[NET_ERR_LEN];
    int cfd = net_connect("127.0.0.1", port, err, sizeof err);
    assert_true(cfd >= 0);
    int spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(spare >= 0);

    struct rlimit saved, tight;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    tight = saved;
    tight.rlim_cur = (rlim_t)spare + 1; /* every descriptor up to the spare is in use */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &tight), 0);
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 2000), 1);
    errno = 0;
    int got = net_accept_guarded(lfd, &spare, NULL);
    int e = errno;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    assert_int_equal(got, -1);
    assert_true(e == EMFILE || e == ENFILE);
    assert_true(spare >= 0); /* the spare was taken back */
    /* Nothing is left pending, and the client's connection was closed. */
    assert_int_equal(net_accept(lfd, NULL), -1);
    assert_int_equal(errno, EAGAIN);
    struct pollfd c = {.fd = cfd, .events = POLLIN};
    assert_int_equal(poll(&c, 1, 2000), 1);
    char byte;
    assert_true(read(cfd, &byte, 1) <= 0);
    close(spare);
    close(cfd);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listen_port0_ipv4),
        cmocka_unit_test(test_connect_accept_ipv4),
        cmocka_unit_test(test_connect_accept_ipv6),
        cmocka_unit_test(test_accept_without_addr),
        cmocka_unit_test(test_listen_port_in_use),
        cmocka_unit_test(test_listen_port_in_use_ipv6),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_connect_result_bad_fd),
        cmocka_unit_test(test_local_port_not_inet),
        cmocka_unit_test(test_addr_str),
        cmocka_unit_test(test_unresolvable_host),
        cmocka_unit_test(test_error_truncated_to_errlen),
        cmocka_unit_test(test_raise_fd_limit),
        cmocka_unit_test(test_listen_reuseport_shares_port),
        cmocka_unit_test(test_accept_guarded_sheds_when_out_of_fds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
