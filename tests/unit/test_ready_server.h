/* test_ready_server.h - a tiny HTTP server in a forked child, for the
 * unit tests of code that waits for a server's readiness or sends it a
 * request: GET READY_PATH is answered 503 a given number of times, then
 * 200, after which the child exits with the number of requests it saw;
 * any other request gets 404. Needs cmocka included first. */
#ifndef SHOOTOUT_TEST_READY_SERVER_H
#define SHOOTOUT_TEST_READY_SERVER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define READY_PATH "/health/ready"

/* A loopback socket bound to a free port, listening if listen_too. */
static inline int bound_socket(int *port, bool listen_too)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    if (listen_too)
        assert_int_equal(listen(fd, 16), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* The child: answers each connection's request with 503 the first fails
 * times, then 200 and exits with the number of requests it saw. A request
 * for another path gets 404, never 200. */
static inline void serve(int lfd, unsigned fails)
{
    for (unsigned n = 1;; n++) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0)
            _exit(100);
        char req[1024];
        ssize_t r = recv(c, req, sizeof req - 1, 0);
        req[r > 0 ? r : 0] = '\0';
        bool right = !strncmp(req, "GET " READY_PATH " HTTP/1.1\r\n", strlen(READY_PATH) + 15);
        const char *status = !right ? "404 Not Found" : n <= fails ? "503 Service Unavailable" : "200 OK";
        char resp[128];
        int len = snprintf(resp, sizeof resp,
                           "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status);
        send(c, resp, (size_t)len, MSG_NOSIGNAL);
        close(c);
        if (right && n > fails)
            _exit((int)n);
    }
}

static inline pid_t spawn_server(int *port, unsigned fails)
{
    int lfd = bound_socket(port, true);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        serve(lfd, fails);
    close(lfd);
    return pid;
}

#endif
