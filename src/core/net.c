/* net.c - non-blocking TCP sockets for servers and clients. */
#include "core/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int net_resolve(const char *host, int port, bool passive, struct addrinfo **res, char *err,
                       size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    if (passive)
        hints.ai_flags = AI_PASSIVE;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    return 0;
}

int net_listen(const char *host, int port, int backlog, int flags, char *err, size_t errlen)
{
    struct addrinfo *res;
    if (net_resolve(host, port, true, &res, err, errlen) < 0)
        return -1;
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (flags & NET_REUSEPORT)
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        if (ai->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        bool v6 = strchr(host, ':') != NULL;
        snprintf(err, errlen, "cannot listen on %s%s%s:%d: %s", v6 ? "[" : "", host, v6 ? "]" : "",
                 port, strerror(saved));
    }
    return fd;
}

static void net_set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int net_accept(int listen_fd, struct sockaddr_storage *addr)
{
    socklen_t len = sizeof *addr;
    int fd = accept4(listen_fd, (struct sockaddr *)addr, addr ? &len : NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0)
        net_set_nodelay(fd);
    return fd;
}

int net_accept_guarded(int listen_fd, int *spare_fd, struct sockaddr_storage *addr)
{
    int fd = net_accept(listen_fd, addr);
    if (fd >= 0 || (errno != EMFILE && errno != ENFILE) || *spare_fd < 0)
        return fd;
    int saved = errno;
    close(*spare_fd);
    int dropped = accept(listen_fd, NULL, NULL);
    if (dropped >= 0)
        close(dropped);
    *spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    errno = saved;
    return -1;
}

int net_connect(const char *host, int port, char *err, size_t errlen)
{
    struct addrinfo *res;
    if (net_resolve(host, port, false, &res, err, errlen) < 0)
        return -1;
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        net_set_nodelay(fd);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        snprintf(err, errlen, "cannot connect to %s:%d: %s", host, port, strerror(saved));
    return fd;
}

int net_connect_result(int fd)
{
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
        return errno;
    return soerr;
}

int net_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

const char *net_addr_str(const struct sockaddr_storage *addr, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (addr->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)addr;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        snprintf(buf, len, "%s:%d", host, ntohs(a->sin_port));
    } else if (addr->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)addr;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        snprintf(buf, len, "[%s]:%d", host, ntohs(a->sin6_port));
    } else {
        snprintf(buf, len, "unknown");
    }
    return buf;
}

long net_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (long)rl.rlim_cur;
}
