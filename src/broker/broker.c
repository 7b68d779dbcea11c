/* broker.c - the broker's lifetime: defaults, listening, accepting with a
 * guard against running out of file descriptors, the periodic sweep, and a
 * graceful shutdown on SIGTERM or SIGINT.
 */
#include "broker/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/conn_end.h"
#include "broker/conn_loop.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/persist_load.h"
#include "broker/retain.h"
#include "broker/router.h"
#include "broker/session.h"
#include "broker/session_life.h"
#include "broker/sys_tree.h"
#include "broker/transport.h"
#include "core/linger.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/net.h"

#define BROKER_SWEEP_MS 250
#define BROKER_ACCEPTS_PER_WAKE 256

void broker_config_defaults(struct broker_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->bind = "127.0.0.1";
    cfg->port = 1883;
    cfg->max_connections = 100000;
    cfg->max_packet_size = 1024 * 1024;
    cfg->max_queued = 1000;
    cfg->max_inflight = 20;
    cfg->max_output = 8 * 1024 * 1024;
    cfg->queue_qos0 = false;
    cfg->connect_timeout_ms = 10000;
    cfg->sys_interval_s = 10;
    snprintf(cfg->persistence.location, sizeof cfg->persistence.location, "broker-data");
    cfg->auth.allow_anonymous = true;
    cfg->obs.metrics_port = -1;
    cfg->obs.connection_messages = true;
    cfg->listeners.n = 1;
}

static void broker_on_accept(struct ev_loop *loop, struct ev_io *io, uint32_t events)
{
    struct broker *b = io->data;
    for (int i = 0; i < BROKER_ACCEPTS_PER_WAKE; i++) {
        int fd = net_accept_guarded(io->fd, &b->spare_fd, NULL);
        if (fd >= 0) {
            struct conn *c = conn_accept(b, fd);
            if (c && transport_attach(b, c, io) < 0)
                conn_close(b, c, "cannot set up TLS", true);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EMFILE || errno == ENFILE) {
            b->stats.refused_connections++;
            log_warn("out of file descriptors at %u connections: dropped a new one", b->nconns);
        }
        break;
    }
}

static void broker_on_sweep(struct ev_loop *loop, struct ev_timer *t)
{
    conn_sweep(t->data);
    persist_tick(t->data);
}

static void broker_on_sys(struct ev_loop *loop, struct ev_timer *t) { sys_tree_publish(t->data); }

static bool broker_prepare(struct ev_loop *loop, void *data) { return conn_prepare(data); }

static void broker_on_signal(struct ev_loop *loop, int signo, void *data)
{
    if (signo == SIGHUP) {
        /* As Mosquitto: the password file and the ACL are read again; the
         * other settings stay as they were read at start. */
        auth_reload(data);
        return;
    }
    log_info("%s received, shutting down", strsignal(signo));
    ev_stop(loop);
}

static void broker_release_retained(void *value) { msg_unref(value); }

void broker_init(struct broker *b, const struct broker_config *cfg, struct ev_loop *loop)
{
    memset(b, 0, sizeof *b);
    b->cfg = cfg;
    b->loop = loop;
    b->listener.fd = -1;
    b->spare_fd = -1;
    b->router = router_new();
    b->retained = retain_new(broker_release_retained);
    /* Wait early enough that the hard limits, twice as high, are rarely
     * reached; small enough that many subscribers behind at once still fit
     * in memory. */
    b->out_high = cfg->max_output / 2 < 256 * 1024 ? cfg->max_output / 2 : 256 * 1024;
    b->out_low = b->out_high / 4;
    b->queue_high = cfg->max_queued / 2 ? cfg->max_queued / 2 : 1;
    b->queue_low = b->queue_high / 4;
    ev_set_prepare(loop, broker_prepare, b);
    ev_timer_init(&b->sweep, broker_on_sweep, b);
    ev_timer_start(loop, &b->sweep, BROKER_SWEEP_MS, BROKER_SWEEP_MS);
    b->started_ms = ev_now(loop);
    ev_timer_init(&b->sys, broker_on_sys, b);
    if (cfg->sys_interval_s) {
        uint64_t every = (uint64_t)cfg->sys_interval_s * 1000;
        /* At once, so $SYS/broker/version is there for the first client. */
        sys_tree_publish(b);
        ev_timer_start(loop, &b->sys, every, every);
    }
}

/* Stop accepting, give every client its pending output, close them all. */
void broker_shutdown(struct broker *b)
{
    if (b->listener.fd >= 0)
        close(b->listener.fd);
    metrics_stop(b);
    transport_close_listeners(b);
    ev_timer_stop(b->loop, &b->sweep);
    ev_timer_stop(b->loop, &b->sys);
    struct conn *c;
    b->defer_wills = b->persist != NULL;
    while ((c = b->conns))
        conn_kick(b, c, MQTT5_RC_SERVER_SHUTTING_DOWN, "server shutting down", !b->defer_wills);
    /* They linger: each reads its DISCONNECT and closes, or is closed when
     * LINGER_MS have passed. */
    uint64_t until = ev_now(b->loop) + LINGER_MS;
    conn_prepare(b);
    while (b->closed && ev_update_now(b->loop) < until)
        ev_run_once(b->loop, 50);
    for (c = b->closed; c; c = c->next)
        conn_close(b, c, "", true);
    conn_prepare(b);
    persist_close(b);
    /* Delayed wills would only reach sessions that are about to go too
     * (with persistence they are in the log, for the next start). */
    size_t i = 0;
    struct hmap_slot *slot;
    while ((slot = hmap_next(&b->sessions, &i))) {
        struct session *s = slot->val;
        if (s->will)
            msg_unref(s->will);
        s->will = NULL;
    }
    i = 0;
    while ((slot = hmap_next(&b->sessions, &i)))
        session_destroy(b, slot->val);
    hmap_free(&b->sessions);
    auth_free(b);
    router_free(b->router);
    retain_free(b->retained);
    if (b->spare_fd >= 0)
        close(b->spare_fd);
    const struct broker_stats *st = &b->stats;
    log_info("stopped: %llu messages in, %llu out; dropped %llu (queue full), %llu (output full), "
             "%llu (QoS 0 to offline sessions), %llu (expired), %llu (over the client's maximum "
             "packet size); %llu publisher waits, %llu slow consumers; "
             "%llu protocol errors, %llu connections refused",
             (unsigned long long)st->msgs_in, (unsigned long long)st->msgs_out,
             (unsigned long long)st->dropped_queue_full, (unsigned long long)st->dropped_output_full,
             (unsigned long long)st->dropped_offline_qos0, (unsigned long long)st->dropped_expired,
             (unsigned long long)st->dropped_too_large, (unsigned long long)st->publisher_waits,
             (unsigned long long)st->slow_consumers, (unsigned long long)st->protocol_errors,
             (unsigned long long)st->refused_connections);
}

int broker_run(const struct broker_config *cfg)
{
    char err[NET_ERR_LEN] = "";
    signal(SIGPIPE, SIG_IGN);
    long fds = net_raise_fd_limit();
    struct ev_loop *loop = ev_loop_new();
    if (!loop) {
        log_error("cannot create the event loop: %s", strerror(errno));
        return 1;
    }
    /* Signals are routed to the loop before the port opens: whoever sees
     * the port accept may send SIGTERM at once and must get a clean stop. */
    struct broker b;
    broker_init(&b, cfg, loop);
    int lfd = -1;
    if ((cfg->persistence.on && persist_load(&b) < 0) || auth_init(&b) < 0 || metrics_start(&b) < 0 ||
        transport_listen(&b, broker_on_accept, err, sizeof err) < 0 ||
        (lfd = net_listen(cfg->bind, cfg->port, 1024, 0, err, sizeof err)) < 0) {
        if (err[0])
            log_error("%s", err);
        broker_shutdown(&b);
        ev_loop_free(loop);
        return 1;
    }
    b.listener.fd = lfd;
    b.listener.cb = broker_on_accept;
    b.listener.data = &b;
    ev_io_start(loop, &b.listener, EV_READ);
    b.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    ev_signal_start(loop, &set, broker_on_signal, &b);

    bool v6 = strchr(cfg->bind, ':') != NULL;
    log_info("shootout broker listening on %s%s%s:%d (MQTT 3.1, 3.1.1 and 5.0, max %u connections, "
             "%ld fds)",
             v6 ? "[" : "", cfg->bind, v6 ? "]" : "", net_local_port(lfd), cfg->max_connections, fds);
    int rc = ev_run(loop);
    if (rc < 0)
        log_error("event loop failed: %s", strerror(errno));
    broker_shutdown(&b);
    ev_loop_free(loop);
    return rc < 0 ? 1 : 0;
}
