/* net.h - socket helpers: listening and connecting TCP sockets over IPv4
 * and IPv6, all non-blocking and close-on-exec, with TCP_NODELAY on every
 * connected socket (MQTT and RPC traffic is many small writes, each already
 * coalesced by the caller).
 *
 * Errors: functions return -1 and write a message into err[errlen].
 */
#ifndef SHOOTOUT_NET_H
#define SHOOTOUT_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define NET_ERR_LEN 256

/* net_listen flags. */
enum {
    /* SO_REUSEPORT: several sockets, one per worker thread, share the port
     * and the kernel spreads new connections over them. */
    NET_REUSEPORT = 1,
};

/* Listens on host:port (host may be a name, an IPv4 or an IPv6 literal;
 * port 0 picks a free port). SO_REUSEADDR is set; IPv6 sockets are v6-only
 * so that "::" and "0.0.0.0" can be bound side by side. flags: NET_*.
 * Returns the fd. */
int net_listen(const char *host, int port, int backlog, int flags, char *err, size_t errlen);

/* Accepts one connection, non-blocking with TCP_NODELAY. Returns the fd, or
 * -1 with errno set (EAGAIN when there is nothing to accept). addr may be
 * NULL. */
int net_accept(int listen_fd, struct sockaddr_storage *addr);

/* net_accept for servers that must survive running out of descriptors.
 * *spare_fd is a descriptor held in reserve (open /dev/null before the
 * first call; -1 disables the guard). On EMFILE/ENFILE the pending
 * connection would keep the listener readable forever, so the spare is
 * given up, the connection accepted and closed at once, and the spare
 * taken back; -1 is returned with errno still EMFILE/ENFILE so the caller
 * can count and log the refusal. */
int net_accept_guarded(int listen_fd, int *spare_fd, struct sockaddr_storage *addr);

/* Starts a non-blocking connect to host:port. Returns the fd; the connect
 * may still be in progress (wait for writability, then net_connect_result). */
int net_connect(const char *host, int port, char *err, size_t errlen);
/* 0 if the pending connect succeeded, else the errno it failed with. */
int net_connect_result(int fd);

/* The local port a socket is bound to, or -1. */
int net_local_port(int fd);

/* "1.2.3.4:5" or "[::1]:5" for a socket address, into buf; returns buf. */
const char *net_addr_str(const struct sockaddr_storage *addr, char *buf, size_t len);

/* Raises the soft open-files limit to the hard limit (servers and load
 * generators need many more than the usual 1024). Returns the new limit. */
long net_raise_fd_limit(void);

#endif
