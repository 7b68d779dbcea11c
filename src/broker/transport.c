/* transport.c - TLS, WebSocket and WebSocket-over-TLS connections for the
 * broker, and what each listener wants of them (see transport.h).
 */
#include "broker/transport.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "broker/conn.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/tls.h"
#include "http/http1.h"
#include "http/ws.h"

/* Bounds of the WebSocket upgrade request head. */
#define TP_HEAD_MAX 8192
#define TP_HEADERS_MAX 32
/* Pieces of output per write call. */
#define TP_IOV 64

struct transport_listener {
    struct tls_ctx *tls; /* NULL: plain TCP */
    const struct broker_listener *cfg;
};

struct transport_listeners {
    struct transport_listener v[BROKER_LISTENERS_MAX]; /* v[0]: the default listener */
    uint32_t n;
};

enum tp_state {
    TP_HANDSHAKE, /* TLS handshake under way */
    TP_UPGRADE,   /* waiting for the WebSocket upgrade request */
    TP_OPEN,      /* MQTT bytes flow */
};

struct transport {
    const struct transport_listener *l;
    struct tls_conn *tls; /* NULL: the socket itself */
    uint8_t state;        /* enum tp_state */
    bool ws;
    bool ws_closed;       /* the peer sent a close frame: nothing more to read */
    const char *error;    /* why the connection failed, for the log */
    /* WebSocket: the upgrade request so far, then the frame decoder. */
    char *head;
    size_t head_len;
    struct ws_decoder dec;
    /* Our own output (the 101 answer, pongs, close frames), sent between
     * data frames; and the data frame being sent: its header and the
     * payload bytes of c->out it still covers. */
    struct outq ctl;
    uint8_t fh[WS_HEADER_MAX];
    uint8_t fh_len, fh_sent;
    size_t frame_left;
    char *username; /* owned; use_identity_as_username */
};

/* ---- listeners ---- */

static int tp_listener_ctx(struct transport_listener *l, uint32_t i, char *err, size_t errlen)
{
    const struct broker_listener *lc = l->cfg;
    if (!lc->certfile[0]) {
        if (lc->keyfile[0] || lc->cafile[0] || lc->capath[0] || lc->require_certificate ||
            lc->use_identity_as_username) {
            snprintf(err, errlen, "listener %u: TLS settings without a certfile", i);
            return -1;
        }
        return 0;
    }
    if (lc->use_identity_as_username && !lc->require_certificate) {
        snprintf(err, errlen, "listener %u: use_identity_as_username needs require_certificate",
                 i);
        return -1;
    }
    struct tls_config tc = {
        .certfile = lc->certfile,
        .keyfile = lc->keyfile[0] ? lc->keyfile : NULL,
        .cafile = lc->cafile[0] ? lc->cafile : NULL,
        .capath = lc->capath[0] ? lc->capath : NULL,
        .require_certificate = lc->require_certificate,
        .tls_version = lc->tls_version[0] ? lc->tls_version : NULL,
    };
    char why[256];
    l->tls = tls_server_ctx_new(&tc, why, sizeof why);
    if (!l->tls) {
        snprintf(err, errlen, "listener %u: %s", i, why);
        return -1;
    }
    return 0;
}

int transport_setup(struct broker *b, char *err, size_t errlen)
{
    const struct broker_config *cfg = b->cfg;
    struct transport_listeners *ls = mem_calloc(1, sizeof *ls);
    b->transports = ls;
    for (uint32_t i = 0; i < cfg->listeners.n; i++) {
        struct transport_listener *l = &ls->v[i];
        l->cfg = &cfg->listeners.v[i];
        ls->n = i + 1;
        if (tp_listener_ctx(l, i, err, errlen) < 0)
            return -1;
    }
    return 0;
}

void transport_listening(const struct broker *b, const int *ports)
{
    const struct transport_listeners *ls = b->transports;
    for (uint32_t i = 0; i < ls->n; i++) {
        const struct transport_listener *l = &ls->v[i];
        const char *kind = l->cfg->websockets ? "MQTT over WebSockets" : "MQTT";
        const char *tls = l->tls ? " over TLS" : "";
        if (i > 0)
            log_info("listener %s:%d: %s%s", l->cfg->bind[0] ? l->cfg->bind : b->cfg->bind,
                     ports[i], kind, tls);
        else if (l->tls || l->cfg->websockets)
            log_info("default listener: %s%s", kind, tls);
    }
}

void transport_teardown(struct broker *b)
{
    struct transport_listeners *ls = b->transports;
    if (!ls)
        return;
    for (uint32_t i = 0; i < ls->n; i++)
        tls_ctx_free(ls->v[i].tls);
    mem_free(ls);
    b->transports = NULL;
}

/* ---- connections ---- */

int transport_attach(struct broker_loop *lp, struct conn *c, unsigned listener)
{
    struct transport_listeners *ls = lp->b->transports;
    if (!ls)
        return 0;
    const struct transport_listener *l = &ls->v[listener < ls->n ? listener : 0];
    if (!l->tls && !l->cfg->websockets)
        return 0;
    struct transport *t = mem_calloc(1, sizeof *t);
    t->l = l;
    t->ws = l->cfg->websockets;
    t->state = t->ws ? TP_UPGRADE : TP_OPEN;
    conn_cold(c)->tp = t;
    if (l->tls) {
        t->tls = tls_conn_new(l->tls, c->io.fd, NULL);
        if (!t->tls)
            return -1;
        t->state = TP_HANDSHAKE;
    }
    /* Messages are streamed through, never held whole: no limit. */
    ws_decoder_init(&t->dec, UINT64_MAX);
    return 0;
}

void transport_free(struct conn *c)
{
    struct transport *t = c->cold->tp;
    if (t->tls) {
        if (t->state != TP_HANDSHAKE)
            tls_shutdown(t->tls); /* close_notify if the socket takes it now */
        tls_conn_free(t->tls);
    }
    outq_clear(&t->ctl);
    mem_free(t->head);
    mem_free(t->username);
    mem_free(t);
    c->cold->tp = NULL;
}

const char *transport_error(const struct conn *c)
{
    const struct transport *t = conn_tp(c);
    return t && t->error ? t->error : "transport error";
}

const char *transport_username(const struct conn *c)
{
    const struct transport *t = conn_tp(c);
    return t ? t->username : NULL;
}

/* A tls_* call did not complete (status < 0): -1 with errno EAGAIN to
 * wait for readiness, or EPROTO after an error. */
static ssize_t tp_tls_failed(struct transport *t, int status)
{
    if (status == TLS_WANT_READ || status == TLS_WANT_WRITE) {
        errno = EAGAIN;
    } else {
        t->error = tls_conn_error(t->tls);
        errno = EPROTO;
    }
    return -1;
}

/* The layer under WebSocket: the socket or TLS. read()'s contract. */
static ssize_t tp_lower_read(struct transport *t, int fd, void *buf, size_t cap)
{
    if (!t->tls) {
        ssize_t n;
        do
            n = read(fd, buf, cap);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            t->error = strerror(errno);
        return n;
    }
    ssize_t n = tls_read(t->tls, buf, cap);
    if (n > 0)
        return n;
    return n == TLS_CLOSED ? 0 : tp_tls_failed(t, (int)n);
}

/* Returns bytes taken, or -1 with errno (EAGAIN: try again on readiness). */
static ssize_t tp_lower_writev(struct transport *t, int fd, const struct iovec *iov, int n)
{
    if (!t->tls) {
        ssize_t w;
        do
            w = writev(fd, iov, n);
        while (w < 0 && errno == EINTR);
        return w;
    }
    ssize_t w = tls_writev(t->tls, iov, n);
    return w > 0 ? w : tp_tls_failed(t, (int)w);
}

static int tp_handshake(struct broker_loop *l, struct conn *c)
{
    struct transport *t = c->cold->tp;
    int r = tls_handshake(t->tls);
    if (r != TLS_OK)
        return (int)tp_tls_failed(t, r);
    t->state = t->ws ? TP_UPGRADE : TP_OPEN;
    if (t->l->cfg->use_identity_as_username) {
        char cn[256];
        if (tls_peer_cn(t->tls, cn, sizeof cn) < 0) {
            t->error = "use_identity_as_username: no usable certificate CN";
            errno = EPROTO;
            return -1;
        }
        t->username = mem_strdup(cn);
        log_info("fd %d: %s, certificate CN '%s' is the username", c->io.fd,
                 tls_protocol(t->tls), cn);
    } else {
        log_debug("fd %d: %s", c->io.fd, tls_protocol(t->tls));
    }
    return 0;
}

/* Queues our own bytes and tries to send them at once. */
static void tp_send_ctl(struct broker_loop *l, struct conn *c, const void *data, size_t len)
{
    outq_copy(&c->cold->tp->ctl, data, len);
    conn_mark_dirty(l, c);
}

/* Fails the connection after sending what it owes the peer (a refusal,
 * a close frame) as far as the socket takes it now. */
static ssize_t tp_fail(struct broker_loop *l, struct conn *c, const char *why)
{
    transport_flush(l, c);
    c->cold->tp->error = why;
    errno = EPROTO;
    return -1;
}

/* Answers one control frame; returns false after a close frame. */
static bool tp_ws_control(struct broker_loop *l, struct conn *c)
{
    struct transport *t = c->cold->tp;
    uint8_t hdr[WS_HEADER_MAX];
    switch (t->dec.control_op) {
    case WS_OP_PING:
        tp_send_ctl(l, c, hdr, ws_frame_header(hdr, WS_OP_PONG, t->dec.control_len));
        tp_send_ctl(l, c, t->dec.control, t->dec.control_len);
        return true;
    case WS_OP_CLOSE: {
        uint16_t code = ws_close_code(&t->dec);
        tp_send_ctl(l, c, hdr, ws_close_frame(hdr, code == 1005 ? 1000 : code));
        t->ws_closed = true;
        return false;
    }
    default: /* pongs answer nothing */
        return true;
    }
}

/* Decodes buf[0..len) in place; returns the MQTT bytes now at buf's start,
 * or -1 with errno on a protocol error. */
static ssize_t tp_ws_decode(struct broker_loop *l, struct conn *c, uint8_t *buf, size_t len)
{
    struct transport *t = c->cold->tp;
    size_t off = 0, out = 0;
    while (off < len && !t->ws_closed) {
        size_t got, used;
        int r = ws_decode(&t->dec, buf + off, len - off, buf + out, &got, &used);
        out += got;
        off += used;
        if (r < 0) {
            uint8_t frame[4];
            tp_send_ctl(l, c, frame, ws_close_frame(frame, ws_error_close_code(r)));
            return tp_fail(l, c, ws_strerror(r));
        }
        if (r == WS_DECODE_CONTROL && !tp_ws_control(l, c))
            transport_flush(l, c);
    }
    return (ssize_t)out;
}

/* Reads the upgrade request and answers it. Returns how many bytes that
 * followed the head it left in buf, or -1 with errno. */
static ssize_t tp_upgrade(struct broker_loop *l, struct conn *c, uint8_t *buf, size_t cap)
{
    struct transport *t = c->cold->tp;
    if (!t->head)
        t->head = mem_alloc(TP_HEAD_MAX);
    struct http1_request req;
    struct http1_header headers[TP_HEADERS_MAX];
    int r;
    do {
        ssize_t n = tp_lower_read(t, c->io.fd, t->head + t->head_len, TP_HEAD_MAX - t->head_len);
        if (n == 0) {
            t->error = "closed by client during the upgrade";
            errno = ECONNRESET;
        }
        if (n <= 0)
            return -1;
        t->head_len += (size_t)n;
        r = http1_parse_request(t->head, t->head_len, &req, headers, TP_HEADERS_MAX, TP_HEAD_MAX);
    } while (r == 0 && t->head_len < TP_HEAD_MAX);
    struct ws_upgrade u;
    int err = r <= 0 ? WS_UPGRADE_E_HTTP : ws_upgrade_check(&req, headers, req.num_headers, &u);
    if (err < 0) {
        const char *refusal = ws_upgrade_refusal(err);
        tp_send_ctl(l, c, refusal, strlen(refusal));
        return tp_fail(l, c, r <= 0 ? "bad HTTP request" : ws_strerror(err));
    }
    char answer[WS_UPGRADE_RESPONSE_MAX];
    tp_send_ctl(l, c, answer, ws_upgrade_response(&u, answer, sizeof answer));
    t->state = TP_OPEN;
    /* A client may send frames right behind its request. */
    size_t rest = t->head_len - (size_t)r;
    rest = rest < cap ? rest : cap;
    memcpy(buf, t->head + r, rest);
    mem_free(t->head);
    t->head = NULL;
    return (ssize_t)rest;
}

ssize_t transport_read(struct broker_loop *l, struct conn *c, void *buf, size_t cap)
{
    struct transport *t = c->cold->tp;
    if (t->state == TP_HANDSHAKE && tp_handshake(l, c) < 0)
        return -1;
    if (!t->ws)
        return tp_lower_read(t, c->io.fd, buf, cap);
    /* Reads that carry only frame headers or control frames yield no MQTT
     * bytes: read on until some come or the socket is drained. */
    for (;;) {
        if (t->ws_closed)
            return 0;
        ssize_t n;
        if (t->state == TP_UPGRADE) {
            n = tp_upgrade(l, c, buf, cap);
            if (n < 0)
                return n;
        } else {
            n = tp_lower_read(t, c->io.fd, buf, cap);
            if (n <= 0)
                return n;
        }
        n = tp_ws_decode(l, c, buf, (size_t)n);
        if (n != 0 || t->ws_closed)
            return n;
    }
}

int transport_flush(struct broker_loop *l, struct conn *c)
{
    struct transport *t = c->cold->tp;
    for (;;) {
        struct iovec iov[TP_IOV];
        size_t offered, fh = 0;
        int n;
        struct outq *q = &c->out;
        if (t->frame_left == 0 && outq_pending(&t->ctl)) {
            q = &t->ctl;
            n = outq_iov(q, iov, TP_IOV, SIZE_MAX, &offered);
        } else if (!t->ws) {
            n = outq_iov(q, iov, TP_IOV, SIZE_MAX, &offered);
        } else {
            /* One binary frame for what is pending now; what is queued
             * while it is being sent goes in the next. */
            if (t->frame_left == 0) {
                t->frame_left = outq_pending(q);
                if (t->frame_left == 0)
                    return 0;
                t->fh_len = (uint8_t)ws_frame_header(t->fh, WS_OP_BINARY, t->frame_left);
                t->fh_sent = 0;
            }
            fh = (size_t)(t->fh_len - t->fh_sent);
            iov[0].iov_base = t->fh + t->fh_sent;
            iov[0].iov_len = fh;
            n = 1 + outq_iov(q, iov + 1, TP_IOV - 1, t->frame_left, &offered);
            offered += fh;
        }
        if (n == 0)
            return 0;
        ssize_t w = tp_lower_writev(t, c->io.fd, iov, n);
        if (w < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
        size_t header = (size_t)w < fh ? (size_t)w : fh;
        t->fh_sent = (uint8_t)(t->fh_sent + header);
        if (q == &c->out && t->ws)
            t->frame_left -= (size_t)w - header;
        outq_consumed(q, (size_t)w - header);
        if (!t->tls && (size_t)w < offered)
            return 1; /* the socket is full */
    }
}
