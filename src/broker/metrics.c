/* metrics.c - the Prometheus endpoint and the connect/disconnect log lines
 * (metrics.h).
 *
 * The endpoint answers one request per connection and closes it
 * (Connection: close): scrapers open a connection per scrape anyway, and it
 * keeps the responder a few states long. Everything is non-blocking on the
 * broker's loop; connections are few (METRICS_MAX_CONNS) and bounded in
 * time (METRICS_TIMEOUT_MS), so a stuck scraper costs nothing else.
 */
#include "broker/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/retain.h"
#include "broker/router.h"
#include "broker/session.h"
#include "core/linger.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/net.h"
#include "http/http1.h"
#include "http/prom.h"
#include "mqtt/mqtt5.h"

#define METRICS_MAX_CONNS 16
#define METRICS_HEAD_MAX 4096
#define METRICS_MAX_HEADERS 32
#define METRICS_TIMEOUT_MS 5000

struct metrics_conn {
    struct ev_io io; /* io.data = the server */
    struct metrics_conn *prev, *next;
    uint64_t deadline_ms;
    char *out;       /* owned response, once there is one */
    size_t out_len, out_off;
    size_t in_len;
    uint32_t dropped; /* lingering: input dropped */
    char in[METRICS_HEAD_MAX];
};

struct metrics_server {
    struct broker *b;
    struct ev_io listener;
    struct ev_timer timeouts;
    struct metrics_conn *conns;
    unsigned nconns;
};

/* ---- the Prometheus text ------------------------------------------------- */

static void metric(struct prom *p, const char *name, enum prom_type type, const char *help,
                   double value)
{
    prom_family(p, name, type, help);
    prom_sample(p, name, NULL, 0, value);
}

/* One family with a single label key and one sample per value. */
static void metric_by(struct prom *p, const char *name, const char *help, const char *key,
                      const char *const *values, const uint64_t *counts, size_t n)
{
    prom_family(p, name, PROM_COUNTER, help);
    for (size_t i = 0; i < n; i++) {
        struct prom_label l = {key, values[i]};
        prom_sample(p, name, &l, 1, (double)counts[i]);
    }
}

/* The bound label values of shootout_broker_bounds_hit_total, by enum
 * metrics_bound, then core/srv.c's per-address refusals. */
static const char *const metrics_bounds[] = {"packet_timeout", "partial_packet_memory",
                                             "retained_messages", "retained_bytes",
                                             "connections_per_address"};
_Static_assert(sizeof metrics_bounds / sizeof metrics_bounds[0] == BOUND_N + 1, "one per bound");

void metrics_bound_hit(struct broker *b, enum metrics_bound bound, const char *who)
{
    uint64_t now = ev_now(b->loop);
    uint64_t n = ++b->obs.bound_hits[bound];
    if (n > 1 && now - b->obs.bound_logged_ms[bound] < 1000)
        return;
    b->obs.bound_logged_ms[bound] = now;
    log_warn("bound %s hit by %s; %llu hits so far", metrics_bounds[bound], who,
             (unsigned long long)n);
}

char *metrics_render(struct broker *b, size_t *len)
{
    const struct broker_stats *st = &b->stats;
    const struct broker_auth *a = &b->auth;
    struct prom p;
    prom_init(&p);

    metric(&p, "shootout_broker_uptime_seconds", PROM_GAUGE, "Seconds since the broker started.",
           (double)(ev_now(b->loop) - b->started_ms) / 1000.0);
    metric(&p, "shootout_broker_clients_connected", PROM_GAUGE,
           "Clients past CONNECT, connected now.", b->nclients);
    metric(&p, "shootout_broker_connections", PROM_GAUGE,
           "Open TCP connections, with or without CONNECT.", b->nconns);
    metric(&p, "shootout_broker_sessions", PROM_GAUGE,
           "Sessions, connected or persistent and offline.", hmap_count(&b->sessions));
    metric(&p, "shootout_broker_connections_total", PROM_COUNTER, "TCP connections accepted.",
           (double)b->obs.accepted);
    metric(&p, "shootout_broker_connections_refused_total", PROM_COUNTER,
           "Connections refused at max_connections or for want of file descriptors.",
           (double)broker_refused_connections(b));
    metric(&p, "shootout_broker_messages_received_total", PROM_COUNTER,
           "PUBLISH packets from clients, and wills.", (double)st->msgs_in);
    metric(&p, "shootout_broker_messages_sent_total", PROM_COUNTER, "PUBLISH packets to clients.",
           (double)st->msgs_out);
    metric(&p, "shootout_broker_bytes_received_total", PROM_COUNTER, "Bytes read from clients.",
           (double)st->bytes_in);
    metric(&p, "shootout_broker_bytes_sent_total", PROM_COUNTER, "Bytes written to clients.",
           (double)st->bytes_out);
    metric(&p, "shootout_broker_subscriptions", PROM_GAUGE,
           "Subscriptions over all sessions, shared ones included.",
           (double)(router_subscriptions(b) + router_shared_subscriptions(b)));
    metric(&p, "shootout_broker_retained_messages", PROM_GAUGE, "Retained topics.",
           (double)retain_count(b->retained));
    metric(&p, "shootout_broker_retained_bytes", PROM_GAUGE,
           "Topic and payload bytes of the retained messages.", (double)retain_bytes(b->retained));
    metric(&p, "shootout_broker_partial_packet_bytes", PROM_GAUGE,
           "Input memory held for packets not yet complete.", (double)b->partial_bytes);
    static const char *const drops[] = {"queue_full", "output_full", "offline_qos0", "expired",
                                        "too_large"};
    const uint64_t dropped[] = {st->dropped_queue_full, st->dropped_output_full,
                                st->dropped_offline_qos0, st->dropped_expired,
                                st->dropped_too_large};
    metric_by(&p, "shootout_broker_messages_dropped_total", "Messages dropped, by reason.",
              "reason", drops, dropped, 5);
    metric(&p, "shootout_broker_publisher_waits_total", PROM_COUNTER,
           "Times a publisher was paused for a congested subscriber.", (double)st->publisher_waits);
    metric(&p, "shootout_broker_slow_consumers_total", PROM_COUNTER,
           "Subscribers flagged slow consumers.", (double)st->slow_consumers);
    metric(&p, "shootout_broker_protocol_errors_total", PROM_COUNTER,
           "Connections closed for breaking the protocol.", (double)st->protocol_errors);
    uint64_t hits[BOUND_N + 1];
    memcpy(hits, b->obs.bound_hits, sizeof b->obs.bound_hits);
    hits[BOUND_N] = srv_refused_per_address();
    metric_by(&p, "shootout_broker_bounds_hit_total",
              "Times a bound on what one client may hold was hit (docs/broker.md, Bounds).",
              "bound", metrics_bounds, hits, BOUND_N + 1);
    static const char *const refusals[] = {"bad_password", "unknown_user", "anonymous"};
    const uint64_t refused[] = {a->refused_bad_password, a->refused_unknown_user,
                                a->refused_anonymous};
    metric_by(&p, "shootout_broker_auth_failures_total", "CONNECTs refused by authentication.",
              "reason", refusals, refused, 3);
    static const char *const actions[] = {"publish", "subscribe", "deliver", "will"};
    const uint64_t denied[] = {a->denied_publish, a->denied_subscribe, a->denied_deliver,
                               a->denied_will};
    metric_by(&p, "shootout_broker_acl_denials_total", "Operations the ACL denied.", "action",
              actions, denied, 4);
    *len = p.len;
    return p.buf;
}

/* ---- the HTTP responder --------------------------------------------------- */

static void mconn_close(struct metrics_server *srv, struct metrics_conn *mc)
{
    ev_io_stop(srv->b->loop, &mc->io);
    close(mc->io.fd);
    if (mc->prev)
        mc->prev->next = mc->next;
    else
        srv->conns = mc->next;
    if (mc->next)
        mc->next->prev = mc->prev;
    srv->nconns--;
    mem_free(mc->out);
    mem_free(mc);
}

/* Once the response is out: our side is shut and what the client still
 * sends is read and dropped until it closes (or the timeout), because
 * closing with unread input would reset the connection and could destroy
 * the response before the client read it (a 431 for an over-long head). */
static void mconn_drain(struct metrics_server *srv, struct metrics_conn *mc)
{
    enum linger_read r = linger_discard(mc->io.fd, &mc->dropped);
    if (r == LINGER_EOF)
        mconn_close(srv, mc);
    else if (r == LINGER_FULL)
        ev_io_stop(srv->b->loop, &mc->io); /* read no more: the timeout ends it */
}

/* Writes what the socket takes; drains once the response is out. */
static void mconn_write(struct metrics_server *srv, struct metrics_conn *mc)
{
    while (mc->out_off < mc->out_len) {
        ssize_t n = write(mc->io.fd, mc->out + mc->out_off, mc->out_len - mc->out_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0) {
            mconn_close(srv, mc);
            return;
        }
        mc->out_off += (size_t)n;
    }
    linger_shut(mc->io.fd);
    ev_io_modify(srv->b->loop, &mc->io, EV_READ);
    uint64_t linger_end = ev_now(srv->b->loop) + LINGER_MS;
    if (linger_end < mc->deadline_ms)
        mc->deadline_ms = linger_end;
    mconn_drain(srv, mc);
}

static void mconn_respond(struct metrics_server *srv, struct metrics_conn *mc, int status,
                          const char *extra_headers, const char *type, const char *body,
                          size_t body_len)
{
    static const struct {
        int status;
        const char *text;
    } reasons[] = {{200, "OK"}, {400, "Bad Request"}, {404, "Not Found"},
                   {405, "Method Not Allowed"}, {431, "Request Header Fields Too Large"},
                   {501, "Not Implemented"}, {505, "HTTP Version Not Supported"}};
    const char *reason = "Error";
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (reasons[i].status == status)
            reason = reasons[i].text;
    char head[512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                     "Connection: close\r\n\r\n",
                     status, reason, type, body_len, extra_headers);
    mc->out_len = (size_t)n + body_len;
    mc->out = mem_alloc(mc->out_len);
    memcpy(mc->out, head, (size_t)n);
    memcpy(mc->out + n, body, body_len);
    /* The request is read; only the answer matters now. */
    ev_io_modify(srv->b->loop, &mc->io, EV_WRITE);
    mconn_write(srv, mc);
}

static void mconn_error(struct metrics_server *srv, struct metrics_conn *mc, int status,
                        const char *extra_headers)
{
    char body[64];
    int n = snprintf(body, sizeof body, "%d\n", status);
    mconn_respond(srv, mc, status, extra_headers, "text/plain; charset=utf-8", body, (size_t)n);
}

static void mconn_request(struct metrics_server *srv, struct metrics_conn *mc)
{
    struct http1_request req;
    struct http1_header headers[METRICS_MAX_HEADERS];
    int rc = http1_parse_request(mc->in, mc->in_len, &req, headers, METRICS_MAX_HEADERS,
                                 sizeof mc->in);
    if (rc == 0 && mc->in_len == sizeof mc->in)
        rc = HTTP1_E_HEAD_TOO_LARGE;
    if (rc == 0)
        return;
    if (rc < 0) {
        mconn_error(srv, mc, http1_status(rc), "");
        return;
    }
    bool head = http1_str_eq(req.method, "HEAD");
    if (!http1_str_eq(req.path, "/metrics")) {
        mconn_error(srv, mc, 404, "");
    } else if (!head && !http1_str_eq(req.method, "GET")) {
        mconn_error(srv, mc, 405, "Allow: GET, HEAD\r\n");
    } else {
        size_t len;
        char *text = metrics_render(srv->b, &len);
        mconn_respond(srv, mc, 200, "", PROM_CONTENT_TYPE, text, head ? 0 : len);
        mem_free(text);
    }
}

static void mconn_on_io(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct metrics_server *srv = io->data;
    struct metrics_conn *mc = (struct metrics_conn *)io;
    if (mc->out) {
        if (mc->out_off < mc->out_len)
            mconn_write(srv, mc);
        else
            mconn_drain(srv, mc);
        return;
    }
    ssize_t n = read(io->fd, mc->in + mc->in_len, sizeof mc->in - mc->in_len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        mconn_close(srv, mc);
        return;
    }
    mc->in_len += (size_t)n;
    mconn_request(srv, mc);
}

static void metrics_on_timeouts(struct ev_loop *loop, struct ev_timer *t)
{
    struct metrics_server *srv = t->data;
    uint64_t now = ev_now(loop);
    struct metrics_conn *next;
    for (struct metrics_conn *mc = srv->conns; mc; mc = next) {
        next = mc->next;
        if (now >= mc->deadline_ms)
            mconn_close(srv, mc);
    }
    if (!srv->conns)
        ev_timer_stop(loop, t);
}

static void metrics_on_accept(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct metrics_server *srv = io->data;
    for (int i = 0; i < METRICS_MAX_CONNS; i++) {
        int fd = net_accept(io->fd, NULL);
        if (fd < 0)
            return;
        if (srv->nconns >= METRICS_MAX_CONNS) {
            close(fd);
            continue;
        }
        struct metrics_conn *mc = mem_calloc(1, sizeof *mc);
        mc->io.fd = fd;
        mc->io.cb = mconn_on_io;
        mc->io.data = srv;
        if (ev_io_start(loop, &mc->io, EV_READ) < 0) {
            close(fd);
            mem_free(mc);
            continue;
        }
        mc->deadline_ms = ev_now(loop) + METRICS_TIMEOUT_MS;
        mc->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = mc;
        srv->conns = mc;
        srv->nconns++;
        if (!ev_timer_active(&srv->timeouts))
            ev_timer_start(loop, &srv->timeouts, 1000, 1000);
    }
}

int metrics_start(struct broker *b)
{
    const struct broker_obs_config *cfg = &b->cfg->obs;
    if (cfg->metrics_port < 0)
        return 0;
    char err[NET_ERR_LEN];
    int fd = net_listen(b->cfg->bind, cfg->metrics_port, 64, 0, err, sizeof err);
    if (fd < 0) {
        log_error("metrics endpoint: %s", err);
        return -1;
    }
    struct metrics_server *srv = mem_calloc(1, sizeof *srv);
    srv->b = b;
    srv->listener.fd = fd;
    srv->listener.cb = metrics_on_accept;
    srv->listener.data = srv;
    ev_timer_init(&srv->timeouts, metrics_on_timeouts, srv);
    if (ev_io_start(b->loop, &srv->listener, EV_READ) < 0) {
        log_error("metrics endpoint: cannot watch its socket: %s", strerror(errno));
        close(fd);
        mem_free(srv);
        return -1;
    }
    b->obs.server = srv;
    bool v6 = strchr(b->cfg->bind, ':') != NULL;
    log_info("metrics on http://%s%s%s:%d/metrics", v6 ? "[" : "", b->cfg->bind, v6 ? "]" : "",
             net_local_port(fd));
    return 0;
}

void metrics_stop(struct broker *b)
{
    struct metrics_server *srv = b->obs.server;
    if (!srv)
        return;
    while (srv->conns)
        mconn_close(srv, srv->conns);
    ev_timer_stop(b->loop, &srv->timeouts);
    ev_io_stop(b->loop, &srv->listener);
    close(srv->listener.fd);
    mem_free(srv);
    b->obs.server = NULL;
}

/* ---- log lines ------------------------------------------------------------ */

const char *metrics_peer(const struct conn *c, char *buf, size_t len)
{
    struct sockaddr_storage addr;
    socklen_t alen = sizeof addr;
    if (getpeername(c->io.fd, (struct sockaddr *)&addr, &alen) < 0)
        return snprintf(buf, len, "-"), buf;
    return net_addr_str(&addr, buf, len);
}

const char *metrics_log_value(char *out, size_t outlen, const void *bytes, size_t len)
{
    const unsigned char *s = bytes;
    bool plain = len > 0;
    for (size_t i = 0; i < len && plain; i++)
        plain = s[i] > ' ' && s[i] < 0x7f && s[i] != '"' && s[i] != '=';
    if (plain && len < outlen) {
        memcpy(out, s, len);
        out[len] = '\0';
        return out;
    }
    size_t o = 0;
    out[o++] = '"';
    /* Room for the longest escape, the closing quote and the NUL. */
    for (size_t i = 0; i < len && o + 7 < outlen; i++) {
        if (s[i] == '"' || s[i] == '\\')
            o += (size_t)snprintf(out + o, outlen - o, "\\%c", s[i]);
        else if (s[i] < ' ' || s[i] == 0x7f)
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", s[i]);
        else
            out[o++] = (char)s[i];
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

void metrics_log_connect(struct broker *b, const struct conn *c, const struct mqtt5_connect *ci,
                         bool session_present)
{
    if (!b->cfg->obs.connection_messages || LOG_INFO > log_threshold)
        return;
    const struct session *s = c->session;
    char id[160], user[160], addr[80];
    log_info("event=connect client=%s addr=%s protocol=%s username=%s clean=%d keepalive=%u "
             "session_present=%d",
             metrics_log_value(id, sizeof id, s->client_id, s->client_id_len),
             metrics_peer(c, addr, sizeof addr), c->v5 ? "5.0" : c->v31 ? "3.1" : "3.1.1",
             ci->has_username
                 ? metrics_log_value(user, sizeof user, ci->username.ptr, ci->username.len)
                 : "-",
             ci->clean_start, ci->keepalive, session_present);
}

void metrics_log_connect_refused(struct broker *b, const struct conn *c,
                                 const struct mqtt5_connect *ci, const uint8_t *id, size_t id_len,
                                 const char *why)
{
    if (!b->cfg->obs.connection_messages || LOG_INFO > log_threshold)
        return;
    char idv[160], userv[160], addr[80];
    log_info("event=connect_refused client=%s addr=%s username=%s reason=%s",
             metrics_log_value(idv, sizeof idv, id, id_len), metrics_peer(c, addr, sizeof addr),
             ci->has_username
                 ? metrics_log_value(userv, sizeof userv, ci->username.ptr, ci->username.len)
                 : "-",
             why);
}

/* The stable reason word for a disconnect. */
static const char *metrics_reason(uint8_t kick, const char *why)
{
    switch (kick) {
    case 0:
        if (!strcmp(why, "DISCONNECT"))
            return "client_disconnect";
        if (!strcmp(why, "closed by client"))
            return "closed_by_peer";
        return "io_error";
    case MQTT5_RC_KEEP_ALIVE_TIMEOUT:
        return "keepalive_timeout";
    case MQTT5_RC_SESSION_TAKEN_OVER:
        return "taken_over";
    case MQTT5_RC_SERVER_SHUTTING_DOWN:
        return "shutdown";
    case MQTT5_RC_PACKET_TOO_LARGE:
        return "packet_too_large";
    case MQTT5_RC_UNSPECIFIED_ERROR:
        return "packet_timeout";
    case MQTT5_RC_QUOTA_EXCEEDED:
        return "bound";
    default:
        return "protocol_error";
    }
}

void metrics_log_disconnect(struct broker *b, const struct conn *c, const char *why)
{
    uint8_t kick = b->obs.kick_reason;
    b->obs.kick_reason = 0;
    if (!c->session) {
        log_debug("fd %d closed before CONNECT: %s", c->io.fd, why);
        return;
    }
    if (!b->cfg->obs.connection_messages || LOG_INFO > log_threshold)
        return;
    char id[160], detail[160];
    log_info("event=disconnect client=%s reason=%s detail=%s",
             metrics_log_value(id, sizeof id, c->session->client_id, c->session->client_id_len),
             metrics_reason(kick, why), metrics_log_value(detail, sizeof detail, why, strlen(why)));
}
