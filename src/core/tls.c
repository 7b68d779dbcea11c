/* tls.c - OpenSSL contexts from listener settings, and non-blocking
 * connections that report what they wait for instead of blocking.
 *
 * Memory: SSL_MODE_RELEASE_BUFFERS frees each idle connection's record
 * buffers (about 34 KiB), which matters with 100k mostly idle MQTT clients;
 * tls_writev coalesces into a stack buffer, so a connection holds no
 * buffer of ours either.
 */
#include "core/tls.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/mem.h"

/* One TLS record's worth of plaintext. */
#define TLS_COALESCE_MAX 16384
#define ALPN_WIRE_MAX 256

struct tls_ctx {
    SSL_CTX *ssl_ctx;
    bool server;
    unsigned char alpn[ALPN_WIRE_MAX]; /* wire format: length-prefixed ids */
    unsigned alpn_len;
};

struct tls_conn {
    SSL *ssl;
    size_t retry_len; /* bytes a write that wanted I/O must offer again */
    char err[160];
};

static int ctx_error(char *err, size_t errlen, const char *what, const char *arg)
{
    unsigned long e = ERR_peek_last_error();
    char ssl_msg[120] = "";
    if (e)
        ERR_error_string_n(e, ssl_msg, sizeof ssl_msg);
    snprintf(err, errlen, "%s%s%s%s%s", what, arg ? " " : "", arg ? arg : "", e ? ": " : "",
             ssl_msg);
    ERR_clear_error();
    return -1;
}

/* "h2,http/1.1" -> "\x02h2\x08http/1.1". */
static int alpn_to_wire(const char *list, unsigned char *wire, unsigned *wire_len)
{
    size_t n = 0;
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len > 255 || n + 1 + len > ALPN_WIRE_MAX)
            return -1;
        wire[n++] = (unsigned char)len;
        memcpy(wire + n, p, len);
        n += len;
        p += len + (comma != NULL);
        if (comma && !*p)
            return -1;
    }
    *wire_len = (unsigned)n;
    return n ? 0 : -1;
}

/* Server side: the first of our protocols that the client offers. With no
 * overlap the handshake goes on without ALPN, so an MQTT client offering
 * "mqtt" still reaches an MQTT listener configured with other ids. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned inlen, void *arg)
{
    const struct tls_ctx *ctx = arg;
    for (unsigned i = 0; i < ctx->alpn_len; i += 1u + ctx->alpn[i]) {
        for (unsigned j = 0; j < inlen; j += 1u + in[j]) {
            if (j + 1u + in[j] > inlen)
                return SSL_TLSEXT_ERR_NOACK;
            if (in[j] == ctx->alpn[i] && !memcmp(in + j + 1, ctx->alpn + i + 1, in[j])) {
                *out = in + j + 1;
                *outlen = in[j];
                return SSL_TLSEXT_ERR_OK;
            }
        }
    }
    return SSL_TLSEXT_ERR_NOACK;
}

static struct tls_ctx *ctx_new(const struct tls_config *cfg, bool server, char *err, size_t errlen)
{
    int min_version = TLS1_2_VERSION;
    if (cfg->tls_version && !strcmp(cfg->tls_version, "tlsv1.3"))
        min_version = TLS1_3_VERSION;
    else if (cfg->tls_version && strcmp(cfg->tls_version, "tlsv1.2") != 0) {
        snprintf(err, errlen, "tls_version '%s': want tlsv1.2 or tlsv1.3", cfg->tls_version);
        return NULL;
    }
    if (server && (!cfg->certfile || !cfg->keyfile)) {
        snprintf(err, errlen, "a TLS listener needs certfile and keyfile");
        return NULL;
    }
    if (!cfg->certfile != !cfg->keyfile) {
        snprintf(err, errlen, "certfile and keyfile go together");
        return NULL;
    }
    if (server && cfg->require_certificate && !cfg->cafile && !cfg->capath) {
        snprintf(err, errlen, "require_certificate needs cafile or capath");
        return NULL;
    }
    struct tls_ctx *ctx = mem_calloc(1, sizeof *ctx);
    ctx->server = server;
    if (cfg->alpn && alpn_to_wire(cfg->alpn, ctx->alpn, &ctx->alpn_len) < 0) {
        snprintf(err, errlen, "ALPN list '%s': want comma-separated ids of 1-255 bytes", cfg->alpn);
        mem_free(ctx);
        return NULL;
    }
    ERR_clear_error();
    SSL_CTX *s = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    ctx->ssl_ctx = s;
    int rc = 0;
    if (!s)
        rc = ctx_error(err, errlen, "cannot create a TLS context", NULL);
    if (rc == 0 && !SSL_CTX_set_min_proto_version(s, min_version))
        rc = ctx_error(err, errlen, "cannot set tls_version", cfg->tls_version);
    if (rc == 0) {
        SSL_CTX_set_mode(s, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
        /* Renegotiation is a CPU lever for clients against the server. */
        SSL_CTX_set_options(s, SSL_OP_NO_RENEGOTIATION);
    }
    if (rc == 0 && cfg->certfile && SSL_CTX_use_certificate_chain_file(s, cfg->certfile) != 1)
        rc = ctx_error(err, errlen, "cannot load certfile", cfg->certfile);
    if (rc == 0 && cfg->keyfile &&
        SSL_CTX_use_PrivateKey_file(s, cfg->keyfile, SSL_FILETYPE_PEM) != 1)
        rc = ctx_error(err, errlen, "cannot load keyfile", cfg->keyfile);
    if (rc == 0 && cfg->keyfile && SSL_CTX_check_private_key(s) != 1)
        rc = ctx_error(err, errlen, "keyfile does not match certfile", cfg->keyfile);
    if (rc == 0 && (cfg->cafile || cfg->capath) &&
        SSL_CTX_load_verify_locations(s, cfg->cafile, cfg->capath) != 1)
        rc = ctx_error(err, errlen, "cannot load cafile/capath", cfg->cafile ? cfg->cafile : cfg->capath);
    if (rc == 0 && server) {
        if (cfg->require_certificate) {
            SSL_CTX_set_verify(s, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
            /* Tell clients which CAs we take, so they pick the right cert. */
            if (cfg->cafile) {
                STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->cafile);
                if (names)
                    SSL_CTX_set_client_CA_list(s, names);
            }
        }
        if (ctx->alpn_len)
            SSL_CTX_set_alpn_select_cb(s, alpn_select, ctx);
    } else if (rc == 0) {
        SSL_CTX_set_verify(s, cfg->cafile || cfg->capath ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
        if (ctx->alpn_len && SSL_CTX_set_alpn_protos(s, ctx->alpn, ctx->alpn_len) != 0)
            rc = ctx_error(err, errlen, "cannot set ALPN", cfg->alpn);
    }
    if (rc < 0) {
        tls_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

struct tls_ctx *tls_server_ctx_new(const struct tls_config *cfg, char *err, size_t errlen)
{
    return ctx_new(cfg, true, err, errlen);
}

struct tls_ctx *tls_client_ctx_new(const struct tls_config *cfg, char *err, size_t errlen)
{
    return ctx_new(cfg, false, err, errlen);
}

void tls_ctx_free(struct tls_ctx *ctx)
{
    if (!ctx)
        return;
    SSL_CTX_free(ctx->ssl_ctx); /* reference-counted: live SSLs keep it */
    mem_free(ctx);
}

struct tls_conn *tls_conn_new(struct tls_ctx *ctx, int fd, const char *server_name)
{
    struct tls_conn *c = mem_calloc(1, sizeof *c);
    ERR_clear_error();
    c->ssl = SSL_new(ctx->ssl_ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
        /* Only memory exhaustion gets here; treat it as the OOM policy. */
        fprintf(stderr, "shootout: out of memory creating a TLS connection\n");
        abort();
    }
    if (ctx->server) {
        SSL_set_accept_state(c->ssl);
    } else {
        SSL_set_connect_state(c->ssl);
        if (server_name) {
            SSL_set_tlsext_host_name(c->ssl, server_name);
            SSL_set1_host(c->ssl, server_name);
        }
    }
    return c;
}

void tls_conn_free(struct tls_conn *c)
{
    if (!c)
        return;
    SSL_free(c->ssl);
    mem_free(c);
}

/* Maps a failed SSL_* call's return value ret to a tls_status. */
static int status_of(struct tls_conn *c, int ret)
{
    int saved_errno = errno;
    switch (SSL_get_error(c->ssl, ret)) {
    case SSL_ERROR_WANT_READ:
        return TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        return TLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        snprintf(c->err, sizeof c->err, "socket error: %s",
                 saved_errno ? strerror(saved_errno) : "connection closed");
        break;
    default: {
        unsigned long e = ERR_peek_last_error();
        long verify = SSL_get_verify_result(c->ssl);
        if (verify != X509_V_OK)
            snprintf(c->err, sizeof c->err, "certificate verify failed: %s",
                     X509_verify_cert_error_string(verify));
        else if (e)
            ERR_error_string_n(e, c->err, sizeof c->err);
        else
            snprintf(c->err, sizeof c->err, "TLS protocol error");
    }
    }
    ERR_clear_error();
    return TLS_ERROR;
}

int tls_handshake(struct tls_conn *c)
{
    ERR_clear_error();
    int ret = SSL_do_handshake(c->ssl);
    return ret == 1 ? TLS_OK : status_of(c, ret);
}

ssize_t tls_read(struct tls_conn *c, void *buf, size_t len)
{
    ERR_clear_error();
    int ret = SSL_read(c->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
    return ret > 0 ? ret : status_of(c, ret);
}

bool tls_read_pending(const struct tls_conn *c)
{
    return SSL_pending(c->ssl) > 0;
}

ssize_t tls_writev(struct tls_conn *c, const struct iovec *iov, int iovcnt)
{
    unsigned char stage[TLS_COALESCE_MAX];
    const void *buf;
    size_t len = 0;
    int i = 0;
    while (i < iovcnt && iov[i].iov_len == 0)
        i++;
    if (i == iovcnt)
        return 0;
    /* One record per call: a retry can then always offer as many bytes as
     * the attempt it repeats, however the caller splits them. */
    if (iov[i].iov_len >= TLS_COALESCE_MAX || i + 1 == iovcnt) {
        /* A big or lone buffer goes out as it is: no copy. */
        buf = iov[i].iov_base;
        len = iov[i].iov_len < TLS_COALESCE_MAX ? iov[i].iov_len : TLS_COALESCE_MAX;
    } else {
        for (; i < iovcnt && len < TLS_COALESCE_MAX; i++) {
            size_t take = iov[i].iov_len < TLS_COALESCE_MAX - len ? iov[i].iov_len
                                                                   : TLS_COALESCE_MAX - len;
            memcpy(stage + len, iov[i].iov_base, take);
            len += take;
        }
        buf = stage;
    }
    /* OpenSSL resumes a write that wanted I/O from its own state and needs
     * at least as many bytes as before; fewer is a caller bug. */
    if (len < c->retry_len) {
        snprintf(c->err, sizeof c->err, "write retried with %zu bytes, fewer than the %zu pending",
                 len, c->retry_len);
        return TLS_ERROR;
    }
    ERR_clear_error();
    int ret = SSL_write(c->ssl, buf, (int)len);
    if (ret > 0) {
        c->retry_len = 0;
        return ret;
    }
    int st = status_of(c, ret);
    if (st == TLS_WANT_READ || st == TLS_WANT_WRITE)
        c->retry_len = len > c->retry_len ? len : c->retry_len;
    return st;
}

ssize_t tls_write(struct tls_conn *c, const void *buf, size_t len)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return tls_writev(c, &iov, 1);
}

int tls_shutdown(struct tls_conn *c)
{
    ERR_clear_error();
    int ret = SSL_shutdown(c->ssl);
    /* 0 = our close_notify is sent; we do not wait for the peer's. */
    return ret >= 0 ? TLS_OK : status_of(c, ret);
}

const char *tls_alpn(const struct tls_conn *c, size_t *len)
{
    const unsigned char *p = NULL;
    unsigned n = 0;
    SSL_get0_alpn_selected(c->ssl, &p, &n);
    *len = n;
    return n ? (const char *)p : NULL;
}

const char *tls_protocol(const struct tls_conn *c)
{
    return SSL_get_version(c->ssl);
}

static X509 *verified_peer(const struct tls_conn *c)
{
    X509 *cert = SSL_get0_peer_certificate(c->ssl);
    return cert && SSL_get_verify_result(c->ssl) == X509_V_OK ? cert : NULL;
}

int tls_peer_cn(const struct tls_conn *c, char *buf, size_t len)
{
    X509 *cert = verified_peer(c);
    if (!cert)
        return -1;
    X509_NAME *name = X509_get_subject_name(cert);
    int idx = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
    if (idx < 0)
        return -1;
    unsigned char *utf8 = NULL;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx)));
    int rc = -1;
    /* A NUL inside would let "admin\0.evil" pass as "admin". */
    if (n >= 0 && (size_t)n < len && !memchr(utf8, '\0', (size_t)n)) {
        memcpy(buf, utf8, (size_t)n);
        buf[n] = '\0';
        rc = 0;
    }
    OPENSSL_free(utf8);
    return rc;
}

int tls_peer_subject(const struct tls_conn *c, char *buf, size_t len)
{
    X509 *cert = verified_peer(c);
    BIO *bio = cert ? BIO_new(BIO_s_mem()) : NULL;
    if (!bio)
        return -1;
    int rc = -1;
    if (X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
        char *data;
        long n = BIO_get_mem_data(bio, &data);
        if (n >= 0 && (size_t)n < len && !memchr(data, '\0', (size_t)n)) {
            memcpy(buf, data, (size_t)n);
            buf[n] = '\0';
            rc = 0;
        }
    }
    BIO_free(bio);
    return rc;
}

const char *tls_conn_error(const struct tls_conn *c)
{
    return c->err[0] ? c->err : "no error";
}
