/* conn_engine.c - idle, established and storm MQTT connections on epoll
 * threads (see conn_engine.h).
 *
 * Level-triggered epoll: a connection waits for writability only while its
 * connect() is in progress, then for input alone. Everything it sends (a
 * CONNECT, a SUBSCRIBE, a PINGREQ, a DISCONNECT) is a few dozen bytes on a
 * socket with an empty send buffer, so a write that does not take it all
 * is a failure, not a reason to queue.
 */
#include "load/mqtt/conn_engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/mem.h"
#include "core/net.h"
#include "mqtt/mqtt_codec.h"

/* Handshakes in flight per thread while idle and established connections
 * open: enough to keep the broker busy, few enough for its listen backlog
 * (a dropped SYN costs a one-second retransmission). */
#define CE_WINDOW 128
#define CE_EVENTS 256
/* The most a broker sends us in one packet (SUBACK of one filter is 5). */
#define CE_PARTIAL 15
#define CE_SCAN_NS 1000000000ull

enum ce_group { G_IDLE, G_EST, G_STORM, G_N };

enum ce_state {
    S_NEW,
    S_CONNECTING, /* connect() in progress */
    S_CONNACK,    /* CONNECT sent */
    S_SUBACK,     /* SUBSCRIBE sent (storm --subscribe) */
    S_READY,      /* connected, nothing outstanding */
    S_PING,       /* an established client's PINGREQ is out */
    S_CLOSED,
};

struct ce_thread;

struct ce_conn {
    int fd;
    uint8_t state, group, rlen;
    uint8_t rbuf[CE_PARTIAL];
    uint32_t index; /* within its group, over all threads */
    /* Handshake start, the last PINGREQ or keepalive sent, or the last
     * round trip's end (an established client's gap starts there). */
    uint64_t t_ns;
};

struct ce_thread {
    struct ce_run *run;
    unsigned index;
    pthread_t tid;
    int ep;
    struct ce_conn *conns[G_N];
    unsigned n[G_N], next[G_N];
    unsigned handshakes; /* between connect() and CONNACK */
    struct ce_counts counts[G_N];
    struct hist connect_ns, storm_ns, rtt_ns[2];
    uint64_t storm_last_ns;
    /* counts as of the last loop iteration, for ce_progress */
    pthread_mutex_t lock;
    struct ce_counts pub[G_N];
};

struct ce_run {
    struct ce_config cfg;
    bool bind_source;
    struct sockaddr_storage dst;
    socklen_t dstlen;
    struct ce_thread *threads;
    _Atomic int phase;
    _Atomic uint64_t storm_t0_ns;
    pthread_mutex_t err_lock;
    char error[200];
};

/* ---- helpers the tests see ---------------------------------------------- */

void ce_source_addr(unsigned i, unsigned nsources, char out[16])
{
    unsigned n = nsources < 1 ? 1 : nsources > CE_MAX_SOURCES ? CE_MAX_SOURCES : nsources;
    snprintf(out, 16, "127.0.0.%u", (unsigned)(uint8_t)(1 + i % n));
}

unsigned ce_sources_for(uint64_t conns)
{
    uint64_t n = (conns + CE_PER_SOURCE - 1) / CE_PER_SOURCE;
    return n < 1 ? 1 : n > CE_MAX_SOURCES ? CE_MAX_SOURCES : (unsigned)n;
}

uint64_t ce_storm_due_ns(uint64_t g, double rate)
{
    return (uint64_t)((double)g * 1e9 / rate);
}

/* ---- connections -------------------------------------------------------- */

static void ce_note(struct ce_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ce_note(struct ce_run *run, const char *fmt, ...)
{
    pthread_mutex_lock(&run->err_lock);
    if (!run->error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(run->error, sizeof run->error, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&run->err_lock);
}

static bool ce_handshaking(const struct ce_conn *c)
{
    return c->state == S_CONNECTING || c->state == S_CONNACK;
}

static bool ce_connected(const struct ce_conn *c)
{
    return c->state == S_SUBACK || c->state == S_READY || c->state == S_PING;
}

static const char *const ce_group_names[G_N] = {"idle", "established", "storm"};

/* Ends c (not for a storm client's planned DISCONNECT). */
static void ce_fail(struct ce_thread *t, struct ce_conn *c, enum ce_fail kind, const char *what,
                    int err)
{
    if (ce_handshaking(c))
        t->handshakes--;
    if (ce_connected(c)) {
        t->counts[c->group].open--;
        t->counts[c->group].lost++;
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->state = S_CLOSED;
    t->counts[c->group].failed[kind]++;
    if (err)
        ce_note(t->run, "%s connection %u: %s: %s", ce_group_names[c->group], c->index, what,
                strerror(err));
    else
        ce_note(t->run, "%s connection %u: %s", ce_group_names[c->group], c->index, what);
}

static bool ce_send(struct ce_thread *t, struct ce_conn *c, const uint8_t *p, size_t len)
{
    ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
    if (n == (ssize_t)len)
        return true;
    int err = n < 0 ? errno : 0;
    ce_fail(t, c, err == EPIPE || err == ECONNRESET ? CE_CLOSED : CE_LOCAL,
            n < 0 ? "send" : "short send", err);
    return false;
}

static void ce_open(struct ce_thread *t, struct ce_conn *c, uint64_t now)
{
    struct ce_run *run = t->run;
    t->counts[c->group].started++;
    c->t_ns = now;
    int fd = socket(run->dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ce_fail(t, c, CE_LOCAL, "socket", errno);
        return;
    }
    c->fd = fd;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (run->bind_source) {
        /* The port is chosen at connect(), per destination, so each source
         * address has the whole ephemeral range towards the broker. */
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        unsigned global = c->index;
        if (c->group >= G_EST)
            global += run->cfg.idle;
        if (c->group >= G_STORM)
            global += run->cfg.established;
        char src[16];
        ce_source_addr(global, run->cfg.sources, src);
        struct sockaddr_in sa = {.sin_family = AF_INET};
        inet_pton(AF_INET, src, &sa.sin_addr);
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            ce_fail(t, c, CE_LOCAL, "bind", errno);
            return;
        }
    }
    if (connect(fd, (struct sockaddr *)&run->dst, run->dstlen) < 0 && errno != EINPROGRESS) {
        int err = errno;
        ce_fail(t, c, err == ECONNREFUSED ? CE_REFUSED : CE_LOCAL, "connect", err);
        return;
    }
    c->state = S_CONNECTING;
    t->handshakes++;
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
        ce_fail(t, c, CE_LOCAL, "epoll_ctl", errno);
}

static void ce_client_id(const struct ce_thread *t, const struct ce_conn *c, char *out, size_t n)
{
    snprintf(out, n, "%s-%c%u", t->run->cfg.id_prefix, "ies"[c->group], c->index);
}

/* The connect completed: send CONNECT. */
static void ce_connected_tcp(struct ce_thread *t, struct ce_conn *c)
{
    int err = net_connect_result(c->fd);
    if (err) {
        ce_fail(t, c, err == ECONNREFUSED ? CE_REFUSED : err == ECONNRESET ? CE_CLOSED : CE_LOCAL,
                "connect", err);
        return;
    }
    char id[64];
    ce_client_id(t, c, id, sizeof id);
    struct mqtt_connect m = {
        .protocol_level = MQTT311_PROTOCOL_LEVEL,
        .clean_session = true,
        .keepalive = t->run->cfg.keepalive_s,
        .client_id = {(const uint8_t *)id, strlen(id)},
    };
    uint8_t pkt[128];
    size_t len = mqtt_encode_connect(pkt, &m);
    if (!ce_send(t, c, pkt, len))
        return;
    c->state = S_CONNACK;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(t->ep, EPOLL_CTL_MOD, c->fd, &ev) < 0)
        ce_fail(t, c, CE_LOCAL, "epoll_ctl", errno);
}

/* Connected and subscribed, if asked: a storm client leaves, unless it
 * stays; the others idle or start their round trips. */
static void ce_ready(struct ce_thread *t, struct ce_conn *c, uint64_t now)
{
    if (c->group == G_STORM && !t->run->cfg.storm_stay) {
        uint8_t pkt[MQTT_EMPTY_LEN];
        mqtt_encode_empty(pkt, MQTT_DISCONNECT);
        if (!ce_send(t, c, pkt, sizeof pkt))
            return;
        close(c->fd);
        c->fd = -1;
        c->state = S_CLOSED;
        t->counts[c->group].open--;
        return;
    }
    c->state = S_READY;
    c->t_ns = now;
}

static void ce_connack(struct ce_thread *t, struct ce_conn *c, const uint8_t *body, size_t len,
                       uint64_t now)
{
    bool sp;
    uint8_t rc;
    if (mqtt_decode_connack(body, len, &sp, &rc) < 0) {
        ce_fail(t, c, CE_CLOSED, "malformed CONNACK", 0);
        return;
    }
    if (rc != MQTT_CONNACK_ACCEPTED) {
        char what[40];
        snprintf(what, sizeof what, "CONNACK refused, return code %u", rc);
        ce_fail(t, c, CE_REFUSED, what, 0);
        return;
    }
    uint64_t lat = now - c->t_ns;
    if (c->group != G_EST)
        hist_record(&t->connect_ns, lat);
    if (c->group == G_STORM) {
        hist_record(&t->storm_ns, lat);
        t->storm_last_ns = now;
    }
    t->handshakes--;
    t->counts[c->group].connected++;
    t->counts[c->group].open++;
    if (c->group == G_STORM && t->run->cfg.storm_subscribe) {
        char topic[80];
        int n = snprintf(topic, sizeof topic, "conns/%s/%u", t->run->cfg.id_prefix, c->index);
        struct mqtt_bytes f = {(const uint8_t *)topic, (size_t)n};
        uint8_t qos = 0, pkt[128];
        size_t plen = mqtt_encode_subscribe(pkt, 1, &f, &qos, 1);
        if (!ce_send(t, c, pkt, plen))
            return;
        c->state = S_SUBACK;
        return;
    }
    ce_ready(t, c, now);
}

/* One whole packet from the broker. */
static void ce_packet(struct ce_thread *t, struct ce_conn *c, const struct mqtt_header *h,
                      const uint8_t *body, uint64_t now)
{
    if (h->type == MQTT_CONNACK && c->state == S_CONNACK) {
        ce_connack(t, c, body, h->body_len, now);
    } else if (h->type == MQTT_SUBACK && c->state == S_SUBACK) {
        struct mqtt_suback s;
        if (mqtt_decode_suback(body, h->body_len, &s) < 0 || s.count != 1)
            ce_fail(t, c, CE_CLOSED, "malformed SUBACK", 0);
        else if (s.codes[0] == MQTT_SUBACK_FAILURE)
            ce_fail(t, c, CE_REFUSED, "SUBSCRIBE refused", 0);
        else
            ce_ready(t, c, now);
    } else if (h->type == MQTT_PINGRESP && c->state == S_PING) {
        int phase = atomic_load_explicit(&t->run->phase, memory_order_relaxed);
        if (phase == CE_BEFORE || phase == CE_STORM)
            hist_record(&t->rtt_ns[phase == CE_STORM], now - c->t_ns);
        c->state = S_READY;
        c->t_ns = now;
    } else if (h->type != MQTT_PINGRESP || c->state != S_READY) {
        /* A keepalive's PINGRESP is the only thing a ready client expects. */
        char what[48];
        snprintf(what, sizeof what, "unexpected packet type %u", h->type);
        ce_fail(t, c, CE_CLOSED, what, 0);
    }
}

static void ce_input(struct ce_thread *t, struct ce_conn *c, uint64_t now)
{
    uint8_t buf[CE_PARTIAL + 256];
    memcpy(buf, c->rbuf, c->rlen);
    ssize_t n = read(c->fd, buf + c->rlen, sizeof buf - c->rlen);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        ce_fail(t, c, CE_CLOSED, n == 0 ? "closed by the broker" : "read", n == 0 ? 0 : errno);
        return;
    }
    size_t len = c->rlen + (size_t)n, off = 0;
    while (c->state != S_CLOSED && off < len) {
        struct mqtt_header h;
        int r = mqtt_frame(buf + off, len - off, CE_PARTIAL, &h);
        if (r == 0)
            break;
        if (r < 0) {
            ce_fail(t, c, CE_CLOSED, mqtt_strerror(r), 0);
            return;
        }
        ce_packet(t, c, &h, buf + off + h.header_len, now);
        off += (size_t)r;
    }
    if (c->state == S_CLOSED)
        return;
    c->rlen = (uint8_t)(len - off);
    memmove(c->rbuf, buf + off, c->rlen);
}

static bool ce_ping(struct ce_thread *t, struct ce_conn *c, uint64_t now)
{
    uint8_t pkt[MQTT_EMPTY_LEN];
    mqtt_encode_empty(pkt, MQTT_PINGREQ);
    if (!ce_send(t, c, pkt, sizeof pkt))
        return false;
    c->t_ns = now;
    return true;
}

/* Once a second: handshakes past the timeout fail, and clients that sent
 * nothing for half the keepalive send a PINGREQ. */
static void ce_scan(struct ce_thread *t, uint64_t now)
{
    const struct ce_config *cfg = &t->run->cfg;
    uint64_t timeout = (uint64_t)cfg->timeout_s * 1000000000ull;
    uint64_t keep = (uint64_t)cfg->keepalive_s * 500000000ull;
    for (int g = 0; g < G_N; g++)
        for (unsigned i = 0; i < t->next[g]; i++) {
            struct ce_conn *c = &t->conns[g][i];
            if ((ce_handshaking(c) || c->state == S_SUBACK) && now - c->t_ns > timeout)
                ce_fail(t, c, CE_TIMEOUT, "no answer within the timeout", 0);
            else if (g != G_EST && c->state == S_READY && keep && now - c->t_ns >= keep)
                ce_ping(t, c, now);
        }
}

/* Opens what is due: idle and established connections within the window,
 * storm connections on their schedule. */
static void ce_open_due(struct ce_thread *t, int phase, uint64_t now)
{
    for (int g = G_EST; g >= G_IDLE; g--)
        while (t->next[g] < t->n[g] && t->handshakes < CE_WINDOW)
            ce_open(t, &t->conns[g][t->next[g]++], now);
    if (phase != CE_STORM)
        return;
    struct ce_run *run = t->run;
    uint64_t t0 = atomic_load(&run->storm_t0_ns);
    while (t->next[G_STORM] < t->n[G_STORM]) {
        struct ce_conn *c = &t->conns[G_STORM][t->next[G_STORM]];
        if (t0 + ce_storm_due_ns(c->index, run->cfg.storm_rate) > now)
            break;
        t->next[G_STORM]++;
        ce_open(t, c, now);
    }
}

static void ce_publish(struct ce_thread *t)
{
    pthread_mutex_lock(&t->lock);
    memcpy(t->pub, t->counts, sizeof t->pub);
    pthread_mutex_unlock(&t->lock);
}

static void ce_close_all(struct ce_thread *t)
{
    uint8_t pkt[MQTT_EMPTY_LEN];
    mqtt_encode_empty(pkt, MQTT_DISCONNECT);
    for (int g = 0; g < G_N; g++)
        for (unsigned i = 0; i < t->next[g]; i++) {
            struct ce_conn *c = &t->conns[g][i];
            if (c->fd < 0)
                continue;
            if (ce_connected(c))
                (void)!send(c->fd, pkt, sizeof pkt, MSG_NOSIGNAL);
            close(c->fd);
            c->fd = -1;
        }
}

static void *ce_thread_main(void *arg)
{
    struct ce_thread *t = arg;
    struct ce_run *run = t->run;
    uint64_t gap = (uint64_t)run->cfg.ping_gap_us * 1000u;
    uint64_t next_scan = clock_now_ns() + CE_SCAN_NS;
    struct epoll_event evs[CE_EVENTS];
    for (;;) {
        int phase = atomic_load(&run->phase);
        if (phase == CE_STOP)
            break;
        uint64_t now = clock_now_ns();
        ce_open_due(t, phase, now);
        for (unsigned i = 0; i < t->next[G_EST]; i++) {
            struct ce_conn *c = &t->conns[G_EST][i];
            if (c->state == S_READY && now - c->t_ns >= gap && ce_ping(t, c, now))
                c->state = S_PING;
        }
        if (now >= next_scan) {
            ce_scan(t, now);
            next_scan = now + CE_SCAN_NS;
        }
        bool busy = t->n[G_EST] || (phase == CE_STORM && t->next[G_STORM] < t->n[G_STORM]);
        int n = epoll_wait(t->ep, evs, CE_EVENTS, busy ? 1 : 20);
        now = clock_now_ns();
        for (int i = 0; i < n; i++) {
            struct ce_conn *c = evs[i].data.ptr;
            if (c->state == S_CLOSED)
                continue; /* failed earlier in this batch */
            if (c->state == S_CONNECTING)
                ce_connected_tcp(t, c);
            else
                ce_input(t, c, now);
        }
        ce_publish(t);
    }
    ce_close_all(t);
    ce_publish(t);
    return NULL;
}

/* ---- the run ------------------------------------------------------------ */

static void ce_free(struct ce_run *run, struct ce_result *r);

static int ce_resolve(struct ce_run *run, char *err, size_t errlen)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)&run->dst;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&run->dst;
    if (inet_pton(AF_INET, run->cfg.host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)run->cfg.port);
        run->dstlen = sizeof *v4;
        /* Every 127/8 address is this host's loopback. */
        run->bind_source = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
        return 0;
    }
    if (inet_pton(AF_INET6, run->cfg.host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)run->cfg.port);
        run->dstlen = sizeof *v6;
        return 0;
    }
    snprintf(err, errlen, "'%s' is not a numeric address", run->cfg.host);
    return -1;
}

/* Thread t's share of a group of n: connections t, t + T, t + 2T ... */
static void ce_share(struct ce_thread *t, int g, uint64_t n, unsigned threads)
{
    unsigned k = n > t->index ? (unsigned)((n - t->index + threads - 1) / threads) : 0;
    t->n[g] = k;
    t->conns[g] = mem_calloc(k ? k : 1, sizeof *t->conns[g]);
    for (unsigned i = 0; i < k; i++) {
        t->conns[g][i].fd = -1;
        t->conns[g][i].group = (uint8_t)g;
        t->conns[g][i].index = i * threads + t->index;
    }
}

struct ce_run *ce_start(const struct ce_config *cfg, char *err, size_t errlen)
{
    struct ce_run *run = mem_calloc(1, sizeof *run);
    run->cfg = *cfg;
    if (ce_resolve(run, err, errlen) < 0) {
        mem_free(run);
        return NULL;
    }
    pthread_mutex_init(&run->err_lock, NULL);
    atomic_store(&run->phase, CE_CONNECT);
    run->threads = mem_calloc(cfg->threads, sizeof *run->threads);
    for (unsigned i = 0; i < cfg->threads; i++) {
        struct ce_thread *t = &run->threads[i];
        t->run = run;
        t->index = i;
        pthread_mutex_init(&t->lock, NULL);
        ce_share(t, G_IDLE, cfg->idle, cfg->threads);
        ce_share(t, G_EST, cfg->established, cfg->threads);
        ce_share(t, G_STORM, cfg->storm, cfg->threads);
        t->ep = epoll_create1(EPOLL_CLOEXEC);
        if (t->ep < 0) {
            snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
            /* No thread runs yet: ce_finish only frees. */
            run->cfg.threads = i + 1;
            ce_free(run, NULL);
            return NULL;
        }
    }
    for (unsigned i = 0; i < cfg->threads; i++)
        pthread_create(&run->threads[i].tid, NULL, ce_thread_main, &run->threads[i]);
    return run;
}

void ce_set_phase(struct ce_run *run, enum ce_phase phase)
{
    if (phase == CE_STORM)
        atomic_store(&run->storm_t0_ns, clock_now_ns());
    atomic_store(&run->phase, phase);
}

static void ce_add(struct ce_counts *sum, const struct ce_counts *c)
{
    sum->started += c->started;
    sum->connected += c->connected;
    sum->open += c->open;
    sum->lost += c->lost;
    for (int k = 0; k < CE_NFAIL; k++)
        sum->failed[k] += c->failed[k];
}

void ce_progress(struct ce_run *run, struct ce_counts *idle, struct ce_counts *established,
                 struct ce_counts *storm)
{
    struct ce_counts *out[G_N] = {idle, established, storm};
    for (int g = 0; g < G_N; g++)
        memset(out[g], 0, sizeof *out[g]);
    for (unsigned i = 0; i < run->cfg.threads; i++) {
        struct ce_thread *t = &run->threads[i];
        pthread_mutex_lock(&t->lock);
        for (int g = 0; g < G_N; g++)
            ce_add(out[g], &t->pub[g]);
        pthread_mutex_unlock(&t->lock);
    }
}

/* Frees the run; r NULL: the threads never started (ce_start failed). */
static void ce_free(struct ce_run *run, struct ce_result *r)
{
    struct ce_counts *sums[G_N] = {NULL, NULL, NULL};
    if (r)
        sums[G_IDLE] = &r->idle, sums[G_EST] = &r->established, sums[G_STORM] = &r->storm;
    for (unsigned i = 0; i < run->cfg.threads; i++) {
        struct ce_thread *t = &run->threads[i];
        if (r) {
            pthread_join(t->tid, NULL);
            for (int g = 0; g < G_N; g++)
                ce_add(sums[g], &t->counts[g]);
            hist_merge(&r->connect_ns, &t->connect_ns);
            hist_merge(&r->storm_ns, &t->storm_ns);
            for (int k = 0; k < 2; k++)
                hist_merge(&r->rtt_ns[k], &t->rtt_ns[k]);
            if (t->storm_last_ns > r->t_storm_last_ns)
                r->t_storm_last_ns = t->storm_last_ns;
        }
        for (int g = 0; g < G_N; g++)
            mem_free(t->conns[g]);
        if (t->ep >= 0)
            close(t->ep);
        pthread_mutex_destroy(&t->lock);
    }
    if (r)
        snprintf(r->error, sizeof r->error, "%s", run->error);
    pthread_mutex_destroy(&run->err_lock);
    mem_free(run->threads);
    mem_free(run);
}

void ce_finish(struct ce_run *run, struct ce_result *r)
{
    ce_set_phase(run, CE_STOP);
    memset(r, 0, sizeof *r);
    r->t_storm_first_ns = atomic_load(&run->storm_t0_ns);
    ce_free(run, r);
}
