/* metrics.c - the Prometheus endpoint and the connect/disconnect log lines
 * (metrics.h).
 *
 * The endpoint is an app of the one HTTP/1.1 engine (http/http_engine.c) on
 * the broker's loop. It answers one request per connection, from its head,
 * and closes it (Connection: close): scrapers open a connection per scrape
 * anyway. Connections are few (METRICS_MAX_CONNS) and bounded in time
 * (METRICS_TIMEOUT_MS, idle or for a request), so a stuck scraper costs
 * nothing else.
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
#include "cluster/link.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/net.h"
#include "http/http_engine.h"
#include "http/prom.h"
#include "mqtt/mqtt5.h"

#define METRICS_MAX_CONNS 16
#define METRICS_HEAD_MAX 4096
#define METRICS_TIMEOUT_MS 5000

struct metrics_server {
    struct broker *b;
    struct ev_io listener;
    struct http_engine http; /* http/http_engine.c, on the broker's loop */
    unsigned nconns;
};

static bool str_is(struct http1_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

/* An answer whose body is its status, as text. */
static void metrics_http_answer(struct http_req *req, int status, const char *extra_headers)
{
    char body[16];
    int n = snprintf(body, sizeof body, "%d\n", status);
    http_respond(req, status, "text/plain; charset=utf-8", body, (size_t)n, extra_headers);
}

static void metrics_http_error(struct http_req *req, int status, const char *message)
{
    metrics_http_answer(req, status, NULL);
}

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
    /* Any loop hits a bound: its own clock, and atomics (two loops may
     * both log one second's first hit). */
    uint64_t now = clock_now_ms();
    uint64_t n = __atomic_add_fetch(&b->obs.bound_hits[bound], 1, __ATOMIC_RELAXED);
    if (n > 1 && now - __atomic_load_n(&b->obs.bound_logged_ms[bound], __ATOMIC_RELAXED) < 1000)
        return;
    __atomic_store_n(&b->obs.bound_logged_ms[bound], now, __ATOMIC_RELAXED);
    log_warn("bound %s hit by %s; %llu hits so far", metrics_bounds[bound], who,
             (unsigned long long)n);
}

/* With --cluster: this node's link and the cluster's live nodes
 * (docs/cluster.md, "Figures"). */
static void metrics_cluster(struct prom *p, struct cluster *c)
{
    struct cluster_status st;
    cluster_status_get(c, &st);
    const struct figures *f = &st.own, *all = &st.all.total;
    prom_family(p, "shootout_broker_cluster_info", PROM_GAUGE,
                "1, labelled with the node's name and the NATS server it is connected to.");
    const struct prom_label labels[] = {
        {"node", st.node}, {"server_url", st.server_url}, {"server_id", st.server_id}};
    prom_sample(p, "shootout_broker_cluster_info", labels, 3, 1);
    const struct {
        const char *name;
        enum prom_type type;
        const char *help;
        uint64_t value;
    } figures[] = {
        {"connected", PROM_GAUGE, "1 if the node is connected to a NATS server now.", f->connected},
        {"reconnects_total", PROM_COUNTER, "Reconnections to NATS after a loss.", f->reconnects},
        {"disconnects_total", PROM_COUNTER, "Losses of the NATS connection.", f->disconnects},
        {"messages_published_total", PROM_COUNTER, "Client messages published to the cluster.",
         f->published},
        {"messages_received_total", PROM_COUNTER,
         "Messages received from the cluster, routed to local subscribers.", f->received},
        {"duplicates_total", PROM_COUNTER,
         "Copies of a message from the cluster dropped (overlapping subscriptions).",
         f->duplicates},
        {"inbox_dropped_total", PROM_COUNTER, "Messages from the cluster dropped with the inbox full.",
         f->overflow},
        {"filters", PROM_GAUGE, "Distinct non-shared filters the node holds on NATS.", f->filters},
        {"queue_subscriptions", PROM_GAUGE, "NATS queue subscriptions held for shared subscriptions.",
         f->queue_subs},
        {"nodes", PROM_GAUGE,
         "Cluster nodes alive (heard within three of their intervals), this one included.",
         st.all.nodes},
        {"nodes_connected", PROM_GAUGE, "Of those, the nodes connected to NATS at their last report.",
         all->connected},
        {"all_messages_published", PROM_GAUGE,
         "Messages published to the cluster, summed over the live nodes.", all->published},
        {"all_messages_received", PROM_GAUGE,
         "Messages received from the cluster, summed over the live nodes.", all->received},
        {"figures_malformed_total", PROM_COUNTER, "Figures from other nodes ignored as malformed.",
         st.malformed},
        {"figures_refused_total", PROM_COUNTER,
         "Figures from nodes beyond the 1024 the table holds, ignored.", st.refused},
    };
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "shootout_broker_cluster_%s", figures[i].name);
        metric(p, name, figures[i].type, figures[i].help, (double)figures[i].value);
    }
}

char *metrics_render(struct broker *b, size_t *len)
{
    struct broker_stats sum;
    broker_stats_sum(b, &sum);
    const struct broker_stats *st = &sum;
    const struct broker_auth *a = &b->auth;
    struct prom p;
    prom_init(&p);

    metric(&p, "shootout_broker_uptime_seconds", PROM_GAUGE, "Seconds since the broker started.",
           (double)(ev_now(b->home->ev) - b->started_ms) / 1000.0);
    metric(&p, "shootout_broker_clients_connected", PROM_GAUGE,
           "Clients past CONNECT, connected now.", broker_nclients(b));
    metric(&p, "shootout_broker_connections", PROM_GAUGE,
           "Open TCP connections, with or without CONNECT.", broker_nconns(b));
    metric(&p, "shootout_broker_sessions", PROM_GAUGE,
           "Sessions, connected or persistent and offline.", broker_nsessions(b));
    metric(&p, "shootout_broker_connections_total", PROM_COUNTER, "TCP connections accepted.",
           (double)STAT_GET(b->obs.accepted));
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
    pthread_mutex_lock(&b->retained_lock);
    size_t retained = retain_count(b->retained), retained_bytes = retain_bytes(b->retained);
    pthread_mutex_unlock(&b->retained_lock);
    metric(&p, "shootout_broker_retained_messages", PROM_GAUGE, "Retained topics.",
           (double)retained);
    metric(&p, "shootout_broker_retained_bytes", PROM_GAUGE,
           "Topic and payload bytes of the retained messages.", (double)retained_bytes);
    metric(&p, "shootout_broker_partial_packet_bytes", PROM_GAUGE,
           "Input memory held for packets not yet complete.", (double)STAT_GET(b->partial_bytes));
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
    metric(&p, "shootout_broker_subscriptions_refused_total", PROM_COUNTER,
           "Subscriptions refused at max_subscriptions.", (double)st->subscriptions_refused);
    metric(&p, "shootout_broker_protocol_errors_total", PROM_COUNTER,
           "Connections closed for breaking the protocol.", (double)st->protocol_errors);
    uint64_t hits[BOUND_N + 1];
    for (int i = 0; i < BOUND_N; i++)
        hits[i] = STAT_GET(b->obs.bound_hits[i]);
    hits[BOUND_N] = srv_refused_per_address();
    metric_by(&p, "shootout_broker_bounds_hit_total",
              "Times a bound on what one client may hold was hit (docs/broker.md, Bounds).",
              "bound", metrics_bounds, hits, BOUND_N + 1);
    static const char *const refusals[] = {"bad_password", "unknown_user", "anonymous"};
    const uint64_t refused[] = {STAT_GET(a->refused_bad_password),
                                STAT_GET(a->refused_unknown_user), STAT_GET(a->refused_anonymous)};
    metric_by(&p, "shootout_broker_auth_failures_total", "CONNECTs refused by authentication.",
              "reason", refusals, refused, 3);
    static const char *const actions[] = {"publish", "subscribe", "deliver", "will"};
    const uint64_t denied[] = {STAT_GET(a->denied_publish), STAT_GET(a->denied_subscribe),
                               STAT_GET(a->denied_deliver), STAT_GET(a->denied_will)};
    metric_by(&p, "shootout_broker_acl_denials_total", "Operations the ACL denied.", "action",
              actions, denied, 4);
    if (b->cluster)
        metrics_cluster(&p, b->cluster);
    *len = p.len;
    return p.buf;
}

/* ---- the HTTP endpoint ---------------------------------------------------- */

/* Every request is answered from its head, and closes its connection. */
static void metrics_http_head(struct http_req *req)
{
    struct metrics_server *srv = req->worker;
    req->keep_alive = false;
    if (!str_is(req->path, "/metrics")) {
        metrics_http_error(req, 404, NULL);
    } else if (!req->head && !str_is(req->method, "GET")) {
        metrics_http_answer(req, 405, "Allow: GET, HEAD\r\n");
    } else {
        size_t len;
        char *text = metrics_render(srv->b, &len);
        http_respond(req, 200, PROM_CONTENT_TYPE, text, len, NULL);
        mem_free(text);
    }
}

static const struct http_app metrics_app = {
    .head = metrics_http_head,
    .handle = metrics_http_head, /* never reached: every head is answered */
    .error = metrics_http_error,
};

static void metrics_conn_closed(void *ctx, int fd)
{
    struct metrics_server *srv = ctx;
    srv->nconns--;
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
        srv->nconns++;
        http_engine_accept(&srv->http, fd);
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
    if (ev_io_start(b->home->ev, &srv->listener, EV_READ) < 0) {
        log_error("metrics endpoint: cannot watch its socket: %s", strerror(errno));
        close(fd);
        mem_free(srv);
        return -1;
    }
    struct http_engine_config ec = {
        .log_name = "metrics",
        .max_header = METRICS_HEAD_MAX,
        .idle_timeout_ms = METRICS_TIMEOUT_MS,
        .request_timeout_ms = METRICS_TIMEOUT_MS,
    };
    http_engine_init(&srv->http, b->home->ev, &ec, &metrics_app, srv, metrics_conn_closed, srv);
    b->obs.server = srv;
    bool v6 = strchr(b->cfg->bind, ':') != NULL;
    log_info("metrics on http://%s%s%s:%d/metrics", v6 ? "[" : "", b->cfg->bind, v6 ? "]" : "",
             net_local_port(fd));
    return 0;
}

bool metrics_prepare(struct broker *b)
{
    struct metrics_server *srv = b->obs.server;
    return srv && http_engine_prepare(&srv->http);
}

void metrics_stop(struct broker *b)
{
    struct metrics_server *srv = b->obs.server;
    if (!srv)
        return;
    http_engine_close_all(&srv->http);
    http_engine_fini(&srv->http);
    ev_io_stop(b->home->ev, &srv->listener);
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
    char id[160], user[160], addr[80], loop[24] = "";
    if (b->nloops > 1) /* which loop has the client (and its session) */
        snprintf(loop, sizeof loop, " loop=%u", s->loop->index);
    log_info("event=connect client=%s addr=%s protocol=%s username=%s clean=%d keepalive=%u "
             "session_present=%d%s",
             metrics_log_value(id, sizeof id, s->client_id, s->client_id_len),
             metrics_peer(c, addr, sizeof addr), c->v5 ? "5.0" : c->v31 ? "3.1" : "3.1.1",
             ci->has_username
                 ? metrics_log_value(user, sizeof user, ci->username.ptr, ci->username.len)
                 : "-",
             ci->clean_start, ci->keepalive, session_present, loop);
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
    struct broker_loop *l = c->io.data;
    uint8_t kick = l->kick_reason;
    l->kick_reason = 0;
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
