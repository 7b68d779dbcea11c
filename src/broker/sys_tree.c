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
#include "core/version.h"

static void sys_put(struct broker_loop *l, const char *topic, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sys_put(struct broker_loop *l, const char *topic, const char *fmt, ...)
{
    char payload[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(payload, sizeof payload, fmt, ap);
    va_end(ap);
    struct msg *m = msg_new((const uint8_t *)topic, strlen(topic), (const uint8_t *)payload,
                            (size_t)n, 0, true, NULL, 0);
    router_publish(l, m);
    msg_unref(m);
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
}
