/* sys_tree.c - the $SYS/broker/... topics: the broker's own figures,
 * published as retained messages every sys_interval seconds under the names
 * Mosquitto uses, so existing dashboards and `mosquitto_sub -t '$SYS/#'`
 * work unchanged. Wildcard subscriptions never see them ('$' rule).
 */
#include "broker/sys_tree.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "broker/broker_int.h"
#include "broker/msg.h"
#include "broker/retain.h"
#include "broker/router.h"
#include "cluster/link.h"
#include "core/version.h"

static void sys_put(struct broker_loop *l, const char *topic, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sys_put(struct broker_loop *l, const char *topic, const char *fmt, ...)
{
    char payload[320]; /* a NATS server URL, 255 bytes at most, fits */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(payload, sizeof payload, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof payload) /* cut, not read past the end */
        n = (int)sizeof payload - 1;
    struct msg *m = msg_new((const uint8_t *)topic, strlen(topic), (const uint8_t *)payload,
                            (size_t)n, 0, true, NULL, 0);
    router_publish(l, m, false);
    msg_unref(m);
}

/* With --cluster: this node's link, and the sums over the cluster's live
 * nodes (docs/cluster.md, "Figures"). */
static void sys_tree_cluster(struct broker_loop *l, struct cluster *c)
{
    struct cluster_status st;
    cluster_status_get(c, &st);
    const struct figures *f = &st.own, *all = &st.all.total;
    sys_put(l, "$SYS/broker/cluster/node", "%s", st.node);
    sys_put(l, "$SYS/broker/cluster/connected", "%" PRIu64, f->connected);
    sys_put(l, "$SYS/broker/cluster/server/url", "%s", st.server_url);
    sys_put(l, "$SYS/broker/cluster/server/id", "%s", st.server_id);
    sys_put(l, "$SYS/broker/cluster/reconnects", "%" PRIu64, f->reconnects);
    sys_put(l, "$SYS/broker/cluster/disconnects", "%" PRIu64, f->disconnects);
    sys_put(l, "$SYS/broker/cluster/messages/published", "%" PRIu64, f->published);
    sys_put(l, "$SYS/broker/cluster/messages/received", "%" PRIu64, f->received);
    sys_put(l, "$SYS/broker/cluster/messages/duplicates", "%" PRIu64, f->duplicates);
    sys_put(l, "$SYS/broker/cluster/messages/dropped", "%" PRIu64, f->overflow);
    sys_put(l, "$SYS/broker/cluster/subscriptions/count", "%" PRIu64, f->filters);
    sys_put(l, "$SYS/broker/cluster/subscriptions/queue", "%" PRIu64, f->queue_subs);
    sys_put(l, "$SYS/broker/cluster/nodes", "%u", st.all.nodes);
    sys_put(l, "$SYS/broker/cluster/nodes/connected", "%" PRIu64, all->connected);
    sys_put(l, "$SYS/broker/cluster/all/messages/published", "%" PRIu64, all->published);
    sys_put(l, "$SYS/broker/cluster/all/messages/received", "%" PRIu64, all->received);
    sys_put(l, "$SYS/broker/cluster/all/reconnects", "%" PRIu64, all->reconnects);
    sys_put(l, "$SYS/broker/cluster/figures/malformed", "%" PRIu64, st.malformed);
    sys_put(l, "$SYS/broker/cluster/figures/refused", "%" PRIu64, st.refused);
}

void sys_tree_publish(struct broker_loop *l)
{
    struct broker *b = l->b;
    struct broker_stats sum;
    broker_stats_sum(b, &sum);
    const struct broker_stats *st = &sum;
    uint64_t dropped = st->dropped_queue_full + st->dropped_output_full + st->dropped_offline_qos0 +
                       st->dropped_expired + st->dropped_too_large;
    sys_put(l, "$SYS/broker/version", "shootout %s", SHOOTOUT_VERSION);
    sys_put(l, "$SYS/broker/uptime", "%" PRIu64 " seconds", (ev_now(l->ev) - b->started_ms) / 1000);
    sys_put(l, "$SYS/broker/clients/connected", "%u", broker_nclients(b));
    sys_put(l, "$SYS/broker/clients/total", "%u", broker_nsessions(b));
    sys_put(l, "$SYS/broker/messages/received", "%" PRIu64, st->msgs_in);
    sys_put(l, "$SYS/broker/messages/sent", "%" PRIu64, st->msgs_out);
    sys_put(l, "$SYS/broker/messages/dropped", "%" PRIu64, dropped);
    sys_put(l, "$SYS/broker/bytes/received", "%" PRIu64, st->bytes_in);
    sys_put(l, "$SYS/broker/bytes/sent", "%" PRIu64, st->bytes_out);
    sys_put(l, "$SYS/broker/subscriptions/count", "%zu", router_subscriptions(b));
    /* Includes the $SYS topics themselves from the second round on. */
    pthread_mutex_lock(&b->retained_lock);
    size_t retained = retain_count(b->retained);
    pthread_mutex_unlock(&b->retained_lock);
    sys_put(l, "$SYS/broker/retained messages/count", "%zu", retained);
    if (b->cluster)
        sys_tree_cluster(l, b->cluster);
}
