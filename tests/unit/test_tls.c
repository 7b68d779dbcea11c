/* test_tls.c - TLS contexts and non-blocking connections over socket
 * pairs, with a CA, server and client certificates (and a second, wrong
 * CA) made at test time: handshakes that must succeed and must fail, ALPN,
 * client identities, writes that outgrow the socket buffer, and closes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "core/tls.h"

static char dir[] = "/tmp/test_tls_XXXXXX";
static char path_buf[16][256];
static int npaths;

static const char *path(const char *name)
{
    assert_true(npaths < 16);
    char *p = path_buf[npaths++];
    snprintf(p, sizeof path_buf[0], "%s/%s", dir, name);
    return p;
}

static EVP_PKEY *write_key(const char *file)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    assert_non_null(k);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
    return k;
}

/* A certificate for key with common name cn, signed by issuer (itself when
 * issuer is NULL), written to file. */
static X509 *write_cert(const char *file, const char *cn, EVP_PKEY *key, X509 *issuer,
                        EVP_PKEY *issuer_key, bool ca)
{
    static long serial = 1;
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"shootout test", -1, -1, 0);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints,
                                            ca ? "critical,CA:TRUE" : "CA:FALSE");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    if (!ca) {
        e = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "DNS:localhost");
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    assert_true(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    PEM_write_X509(f, x);
    fclose(f);
    return x;
}

static const char *ca_pem, *other_ca_pem, *server_pem, *server_key, *client_pem, *client_key,
    *rogue_pem, *rogue_key;

static int make_pki(void **state)
{
    assert_non_null(mkdtemp(dir));
    ca_pem = path("ca.pem");
    other_ca_pem = path("other.pem");
    server_pem = path("server.pem");
    server_key = path("server.key");
    client_pem = path("client.pem");
    client_key = path("client.key");
    rogue_pem = path("rogue.pem");
    rogue_key = path("rogue.key");
    EVP_PKEY *cak = write_key(path("ca.key")), *ok = write_key(path("other.key"));
    X509 *ca = write_cert(ca_pem, "Test CA", cak, NULL, NULL, true);
    X509 *other = write_cert(other_ca_pem, "Other CA", ok, NULL, NULL, true);
    EVP_PKEY *sk = write_key(server_key), *ck = write_key(client_key), *rk = write_key(rogue_key);
    X509_free(write_cert(server_pem, "localhost", sk, ca, cak, false));
    X509_free(write_cert(client_pem, "client-7", ck, ca, cak, false));
    X509_free(write_cert(rogue_pem, "client-7", rk, other, ok, false));
    X509_free(ca);
    X509_free(other);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(ok);
    EVP_PKEY_free(sk);
    EVP_PKEY_free(ck);
    EVP_PKEY_free(rk);
    return 0;
}

static int remove_pki(void **state)
{
    for (int i = 0; i < npaths; i++)
        unlink(path_buf[i]);
    rmdir(dir);
    return 0;
}

struct pair {
    struct tls_ctx *sctx, *cctx;
    struct tls_conn *s, *c;
    int fds[2];
    int srv_rc, cli_rc;
};

static char err[512];

static void pair_open(struct pair *p, const struct tls_config *scfg, const struct tls_config *ccfg,
                      const char *server_name)
{
    p->sctx = tls_server_ctx_new(scfg, err, sizeof err);
    if (!p->sctx)
        fail_msg("server ctx: %s", err);
    p->cctx = tls_client_ctx_new(ccfg, err, sizeof err);
    if (!p->cctx)
        fail_msg("client ctx: %s", err);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p->fds), 0);
    p->s = tls_conn_new(p->sctx, p->fds[0], NULL);
    p->c = tls_conn_new(p->cctx, p->fds[1], server_name);
}

/* Drives both handshakes until neither wants more I/O (bounded). */
static void pair_handshake(struct pair *p)
{
    p->srv_rc = p->cli_rc = TLS_WANT_READ;
    for (int i = 0; i < 100; i++) {
        if (p->cli_rc == TLS_WANT_READ || p->cli_rc == TLS_WANT_WRITE)
            p->cli_rc = tls_handshake(p->c);
        if (p->srv_rc == TLS_WANT_READ || p->srv_rc == TLS_WANT_WRITE)
            p->srv_rc = tls_handshake(p->s);
        bool srv_done = p->srv_rc == TLS_OK || p->srv_rc == TLS_ERROR;
        bool cli_done = p->cli_rc == TLS_OK || p->cli_rc == TLS_ERROR;
        if (srv_done && cli_done)
            return;
        if ((p->srv_rc == TLS_ERROR || p->cli_rc == TLS_ERROR) && i > 10)
            return;
    }
}

static void pair_close(struct pair *p)
{
    tls_conn_free(p->s);
    tls_conn_free(p->c);
    close(p->fds[0]);
    close(p->fds[1]);
    tls_ctx_free(p->sctx);
    tls_ctx_free(p->cctx);
}

/* After a failed handshake the client learns it at once or on its first
 * read (in TLS 1.3 the client finishes before the server checks it). */
static void expect_client_sees_failure(struct pair *p)
{
    if (p->cli_rc == TLS_ERROR)
        return;
    char buf[16];
    ssize_t n = TLS_WANT_READ;
    for (int i = 0; i < 10 && n == TLS_WANT_READ; i++)
        n = tls_read(p->c, buf, sizeof buf);
    assert_true(n == TLS_ERROR || n == TLS_CLOSED);
}

static void test_handshake_and_echo(void **state)
{
    struct tls_config scfg = {.certfile = server_pem, .keyfile = server_key};
    struct tls_config ccfg = {.cafile = ca_pem};
    struct pair p;
    pair_open(&p, &scfg, &ccfg, "localhost");
    pair_handshake(&p);
    assert_int_equal(p.srv_rc, TLS_OK);
    assert_int_equal(p.cli_rc, TLS_OK);
    assert_string_equal(tls_protocol(p.s), "TLSv1.3");
    char buf[64];
    assert_int_equal(tls_read(p.s, buf, sizeof buf), TLS_WANT_READ);
    assert_int_equal(tls_write(p.c, "hello", 5), 5);
    assert_int_equal(tls_read(p.s, buf, sizeof buf), 5);
    assert_memory_equal(buf, "hello", 5);
    /* No client certificate was asked for. */
    assert_int_equal(tls_peer_cn(p.s, buf, sizeof buf), -1);
    /* The client did verify the server. */
    assert_int_equal(tls_peer_cn(p.c, buf, sizeof buf), 0);
    assert_string_equal(buf, "localhost");
    /* close_notify reads as TLS_CLOSED. */
    assert_int_equal(tls_shutdown(p.c), TLS_OK);
    assert_int_equal(tls_read(p.s, buf, sizeof buf), TLS_CLOSED);
    pair_close(&p);
}

static void test_client_certificate_required_and_read(void **state)
{
    struct tls_config scfg = {.certfile = server_pem, .keyfile = server_key, .cafile = ca_pem,
                              .require_certificate = true};
    struct tls_config ccfg = {.cafile = ca_pem, .certfile = client_pem, .keyfile = client_key};
    struct pair p;
    pair_open(&p, &scfg, &ccfg, "localhost");
    pair_handshake(&p);
    assert_int_equal(p.srv_rc, TLS_OK);
    assert_int_equal(p.cli_rc, TLS_OK);
    char buf[256];
    assert_int_equal(tls_peer_cn(p.s, buf, sizeof buf), 0);
    assert_string_equal(buf, "client-7");
    assert_int_equal(tls_peer_cn(p.s, buf, 8), -1); /* no room for the NUL */
    assert_int_equal(tls_peer_subject(p.s, buf, sizeof buf), 0);
    assert_string_equal(buf, "CN=client-7,O=shootout test");
    pair_close(&p);
}

static void test_missing_client_certificate_fails(void **state)
{
    struct tls_config scfg = {.certfile = server_pem, .keyfile = server_key, .cafile = ca_pem,
                              .require_certificate = true};
    struct tls_config ccfg = {.cafile = ca_pem};
    struct pair p;
    pair_open(&p, &scfg, &ccfg, "localhost");
    pair_handshake(&p);
    assert_int_equal(p.srv_rc, TLS_ERROR);
    assert_non_null(strstr(tls_conn_error(p.s), "certificate"));
    expect_client_sees_failure(&p);
    pair_close(&p);
}

static void test_wrong_ca_fails_both_ways(void **state)
{
    /* The client trusts another CA than the server's. */
    struct tls_config scfg = {.certfile = server_pem, .keyfile = server_key};
    struct tls_config ccfg = {.cafile = other_ca_pem};
    struct pair p;
    pair_open(&p, &scfg, &ccfg, "localhost");
    pair_handshake(&p);
    assert_int_equal(p.cli_rc, TLS_ERROR);
    assert_non_null(strstr(tls_conn_error(p.c), "certificate verify failed"));
    pair_close(&p);
    /* The client's certificate comes from another CA than the server takes. */
    struct tls_config scfg2 = {.certfile = server_pem, .keyfile = server_key, .cafile = ca_pem,
                               .require_certificate = true};
    struct tls_config ccfg2 = {.cafile = ca_pem, .certfile = rogue_pem, .keyfile = rogue_key};
    pair_open(&p, &scfg2, &ccfg2, "localhost");
    pair_handshake(&p);
    assert_int_equal(p.srv_rc, TLS_ERROR);
    assert_non_null(strstr(tls_conn_error(p.s), "certificate verify failed"));
    expect_client_sees_failure(&p);
    pair_close(&p);
    /* Right CA, wrong name. */
    pair_open(&p, &scfg, &(struct tls_config){.cafile = ca_pem}, "example.com");
    pair_handshake(&p);
    assert_int_equal(p.cli_rc, TLS_ERROR);
    pair_close(&p);
}

static void test_alpn(void **state)
{
    struct tls_config scfg = {.certfile = server_pem, .keyfile = server_key, .alpn = "h2,http/1.1"};
    struct tls_config ccfg = {.alpn = "foo,h2"};
    struct pair p;
    pair_open(&p, &scfg, &ccfg, NULL);
    pair_handshake(&p);
    assert_int_equal(p.srv_rc, TLS_OK);
    size_t n;
    const char *proto = tls_alpn(p.s, &n);
    assert_non_null(proto);
    assert_int_equal(n, 2);
    assert_memory_equal(proto, "h2", 2);
    proto = tls_alpn(p.c, &n);
    assert_int_equal(n, 2);
    assert_memory_equal(proto, "h2", 2);
    pair_close(&p);
    /* No common protocol: the handshake still succeeds, without ALPN. */
    pair_open(&p, &scfg, &(struct tls_config){.alpn = "mqtt"}, NULL);
    pair_handshake(&p);
    assert_int_equal(p.srv_rc, TLS_OK);
    assert_null(tls_alpn(p.s, &n));
    pair_close(&p);
}

static void test_large_writev_and_pending_reads(void **state)
{
    struct tls_config scfg = {.certfile = server_pem, .keyfile = server_key, .tls_version = "tlsv1.2"};
    struct tls_config ccfg = {0};
    struct pair p;
    pair_open(&p, &scfg, &ccfg, NULL);
    pair_handshake(&p);
    assert_int_equal(p.srv_rc, TLS_OK);
    /* 4 MiB in pieces of mixed sizes, so writes coalesce, go out whole,
     * and outgrow the socket buffer. */
    enum { TOTAL = 4 << 20 };
    uint8_t *src = malloc(TOTAL), *dst = malloc(TOTAL);
    for (size_t i = 0; i < TOTAL; i++)
        src[i] = (uint8_t)(i * 131 + (i >> 12));
    size_t sent = 0, got = 0;
    int wants = 0, pending_seen = 0;
    for (int rounds = 0; rounds < 10000 && got < TOTAL; rounds++) {
        /* Write until the socket is full, then drain some. */
        for (int k = 0; k < 1000 && sent < TOTAL; k++) {
            struct iovec iov[4];
            size_t sizes[4] = {7, 300, 20000, 5}, off = sent;
            int cnt = 0;
            for (int m = 0; m < 4 && off < TOTAL; m++) {
                size_t len = sizes[(m + k) % 4];
                len = len < TOTAL - off ? len : TOTAL - off;
                iov[cnt++] = (struct iovec){.iov_base = src + off, .iov_len = len};
                off += len;
            }
            ssize_t n = tls_writev(p.c, iov, cnt);
            if (n < 0) {
                assert_int_equal(n, TLS_WANT_WRITE);
                wants++;
                break;
            }
            sent += (size_t)n;
        }
        /* Small reads leave decrypted bytes inside OpenSSL. */
        ssize_t n = 0;
        for (int k = 0; k < 64 && got < TOTAL; k++) {
            n = tls_read(p.s, dst + got, TOTAL - got < 1000 ? TOTAL - got : 1000);
            if (n <= 0)
                break;
            got += (size_t)n;
            pending_seen += tls_read_pending(p.s);
        }
        assert_true(n > 0 || n == TLS_WANT_READ);
    }
    assert_int_equal(got, TOTAL);
    assert_memory_equal(dst, src, TOTAL);
    assert_true(wants > 0);
    assert_true(pending_seen > 0);
    assert_string_equal(tls_protocol(p.s), "TLSv1.3"); /* tls_version is a minimum */
    free(src);
    free(dst);
    /* A hang-up without close_notify is an error, not a clean close. */
    close(p.fds[1]);
    char buf[8];
    assert_int_equal(tls_read(p.s, buf, sizeof buf), TLS_ERROR);
    p.fds[1] = dup(p.fds[0]);
    pair_close(&p);
}

static void test_bad_settings_refused(void **state)
{
    struct tls_config cfg = {.certfile = server_pem, .keyfile = server_key};
    struct tls_ctx *ctx;
    cfg.tls_version = "tlsv1.1";
    assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "tls_version"));
    cfg.tls_version = NULL;
    cfg.alpn = "h2,";
    assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    cfg.alpn = NULL;
    cfg.require_certificate = true;
    assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "cafile"));
    cfg.require_certificate = false;
    cfg.keyfile = client_key;
    assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "mismatch"));
    cfg.certfile = "/nonexistent.pem";
    assert_null(tls_server_ctx_new(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent.pem"));
    assert_null(tls_server_ctx_new(&(struct tls_config){0}, err, sizeof err));
    ctx = tls_client_ctx_new(&(struct tls_config){.tls_version = "tlsv1.3"}, err, sizeof err);
    assert_non_null(ctx);
    tls_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_and_echo),
        cmocka_unit_test(test_client_certificate_required_and_read),
        cmocka_unit_test(test_missing_client_certificate_fails),
        cmocka_unit_test(test_wrong_ca_fails_both_ways),
        cmocka_unit_test(test_alpn),
        cmocka_unit_test(test_large_writev_and_pending_reads),
        cmocka_unit_test(test_bad_settings_refused),
    };
    return cmocka_run_group_tests(tests, make_pki, remove_pki);
}
