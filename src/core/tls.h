/* tls.h - TLS for the servers (and for the test and benchmark clients)
 * over OpenSSL, shaped for a non-blocking epoll loop.
 *
 * A struct tls_ctx holds what a listener's settings make of OpenSSL: the
 * certificate and key, the CAs that client certificates must chain to, the
 * lowest protocol version and the ALPN protocols. The settings are named
 * after mosquitto.conf's: certfile, keyfile, cafile, capath,
 * require_certificate, tls_version.
 *
 * A struct tls_conn wraps one connected, non-blocking socket. Every call
 * returns at once: TLS_WANT_READ or TLS_WANT_WRITE says which readiness to
 * wait for before calling the same function again. Note that a read can
 * want a write and a write a read (TLS renegotiates and updates keys under
 * the application), so the loop must watch for whichever is asked.
 */
#ifndef SHOOTOUT_TLS_H
#define SHOOTOUT_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct tls_config {
    const char *certfile;     /* PEM chain; the server's own (required), or a
                                 client's certificate to present (optional) */
    const char *keyfile;      /* PEM private key for certfile */
    const char *cafile;       /* PEM CAs: a server checks client certificates
                                 against them, a client the server's */
    const char *capath;       /* directory of hashed CA files, as cafile */
    bool require_certificate; /* server: clients must present a certificate
                                 that chains to cafile/capath */
    const char *tls_version;  /* lowest version: "tlsv1.2" (default) or "tlsv1.3" */
    const char *alpn;         /* comma-separated ALPN ids in preference order,
                                 e.g. "h2"; NULL for none */
};

struct tls_ctx;
struct tls_conn;

/* Build a context; NULL with a message in err on any bad setting or file.
 * A client context verifies the server only when cafile or capath is set
 * (benchmarks against self-signed servers leave both out). */
struct tls_ctx *tls_server_ctx_new(const struct tls_config *cfg, char *err, size_t errlen);
struct tls_ctx *tls_client_ctx_new(const struct tls_config *cfg, char *err, size_t errlen);
/* Frees a context; connections made from it may outlive it. NULL is a
 * no-op. */
void tls_ctx_free(struct tls_ctx *ctx);

enum tls_status {
    TLS_OK = 0,          /* tls_handshake, tls_shutdown: done */
    TLS_WANT_READ = -1,  /* call again once the socket is readable */
    TLS_WANT_WRITE = -2, /* call again once the socket is writable */
    TLS_CLOSED = -3,     /* the peer sent close_notify */
    TLS_ERROR = -4,      /* failed for good; tls_conn_error() says why */
};

/* A connection over fd (connected, non-blocking; not owned: the caller
 * closes it after tls_conn_free). server_name, client side only, is sent
 * as SNI and, when the context verifies, checked against the certificate. */
struct tls_conn *tls_conn_new(struct tls_ctx *ctx, int fd, const char *server_name);
void tls_conn_free(struct tls_conn *c);

/* Advances the handshake: TLS_OK when complete, or WANT_* / TLS_ERROR. */
int tls_handshake(struct tls_conn *c);

/* Reads up to len bytes of plaintext: > 0 bytes read, or a negative
 * tls_status. After a read, check tls_read_pending(): bytes OpenSSL holds
 * already decrypted do not make the socket readable again. */
ssize_t tls_read(struct tls_conn *c, void *buf, size_t len);
bool tls_read_pending(const struct tls_conn *c);

/* Writes a prefix of iov[0..iovcnt) as one record: small buffers are
 * coalesced, and at most 16 KiB go per call. Returns the bytes taken
 * (> 0), or a negative tls_status, in which case nothing was taken and the
 * next call must offer the same bytes first (more may follow them, split
 * any way), as SSL_write requires. */
ssize_t tls_writev(struct tls_conn *c, const struct iovec *iov, int iovcnt);
ssize_t tls_write(struct tls_conn *c, const void *buf, size_t len);

/* Sends close_notify: TLS_OK once sent, or WANT_* / TLS_ERROR. */
int tls_shutdown(struct tls_conn *c);

/* The ALPN protocol agreed on (*len bytes, not NUL-terminated), or NULL. */
const char *tls_alpn(const struct tls_conn *c, size_t *len);

/* The negotiated protocol version, e.g. "TLSv1.3". */
const char *tls_protocol(const struct tls_conn *c);

/* The peer's verified certificate: its subject's common name (for
 * use_identity_as_username), or its whole subject in RFC 2253 form. Write
 * a NUL-terminated string to buf and return 0, or return -1 when there is
 * no verified certificate, no CN, a CN with a NUL byte, or too little room. */
int tls_peer_cn(const struct tls_conn *c, char *buf, size_t len);
int tls_peer_subject(const struct tls_conn *c, char *buf, size_t len);

/* Why the last call returned TLS_ERROR, for logs. Never NULL. */
const char *tls_conn_error(const struct tls_conn *c);

#endif
