/* handle_connect.c - CONNECT in MQTT 3.1, 3.1.1 and 5.0: protocol checks, client
 * identifiers, session takeover and resumption, wills, the limits an MQTT 5
 * client sets, and the CONNACK; and the client's DISCONNECT.
 *
 * connect_accept() is the one place a client is let in; auth_connect()
 * decides before it whether the client may come in.
 */
#include <stdio.h>
#include <string.h>

#include <inttypes.h>

#include "broker/auth.h"
#include "broker/broker_int.h"
#include "broker/conn.h"
#include "broker/conn_end.h"
#include "broker/handle.h"
#include "broker/metrics.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/router.h"
#include "broker/session.h"
#include "broker/session_life.h"
#include "broker/transport.h"
#include "cluster/kv_sess.h"
#include "cluster/link.h"
#include "core/hmap.h"
#include "core/log.h"
#include "core/outq.h"
#include "mqtt/mqtt5.h"
#include "mqtt/mqtt_codec.h"

/* Refuses the CONNECT with a CONNACK in the client's protocol (the return
 * code rc3 in MQTT 3.1 and 3.1.1, reason in MQTT 5), then closes. */
static int refuse(struct broker_loop *l, struct conn *c, uint8_t rc3, uint8_t reason)
{
    if (!c->v5) {
        mqtt_encode_connack(outq_reserve(&c->out, MQTT_CONNACK_LEN), false, rc3);
    } else {
        struct mqtt5_connack ack = {.reason = reason};
        mqtt5_encode_connack(outq_reserve(&c->out, mqtt5_connack_size(&ack)), &ack);
    }
    conn_close_after_flush(l, c);
    return 0;
}

/* Any version's CONNECT in the MQTT 5 form; sets c->v5 or c->v31. A level
 * 3 or 4 CONNECT has no properties, and its Clean Session is the Clean
 * Start of a session that ends with its connection or never. */
static int connect_decode(struct conn *c, const uint8_t *body, uint32_t len, struct mqtt5_connect *ci)
{
    struct mqtt_connect c3;
    int rc = mqtt_decode_connect(body, len, &c3);
    if (rc == MQTT_E_VERSION && c3.protocol_level == MQTT5_PROTOCOL_LEVEL) {
        rc = mqtt5_decode_connect(body, len, ci);
        /* Only "MQTT" is MQTT 5: "MQIsdp" 5 is refused in the 3.1.1 form,
         * as Mosquitto does. */
        c->v5 = rc != MQTT_E_VERSION;
        return rc;
    }
    c->v31 = rc == MQTT_OK && c3.protocol_level == MQTT31_PROTOCOL_LEVEL;
    *ci = (struct mqtt5_connect){
        .protocol_level = c3.protocol_level, .clean_start = c3.clean_session,
        .keepalive = c3.keepalive, .client_id = c3.client_id, .has_will = c3.has_will,
        .will_qos = c3.will_qos, .will_retain = c3.will_retain, .will_topic = c3.will_topic,
        .will_payload = c3.will_payload, .has_username = c3.has_username,
        .username = c3.username, .has_password = c3.has_password, .password = c3.password,
    };
    return rc;
}

static bool has_prop(const struct mqtt_props *p, uint8_t id) { return p->present & MQTT_PROP_BIT(id); }

/* The limits an MQTT 5 client puts on what we send it. */
static void connect_limits(struct broker *b, struct conn *c, const struct mqtt_props *p)
{
    c->problem_info = true;
    if (!c->v5)
        return;
    /* Only a limit that differs from the default takes the cold part. */
    if (has_prop(p, MQTT_PROP_RECEIVE_MAX) && p->receive_max < b->cfg->max_inflight)
        conn_cold(c)->inflight_max = p->receive_max;
    if (has_prop(p, MQTT_PROP_MAX_PACKET_SIZE))
        conn_cold(c)->max_packet_out = p->max_packet_size;
    if (has_prop(p, MQTT_PROP_TOPIC_ALIAS_MAX) && p->topic_alias_max)
        conn_cold(c)->alias_out_max = p->topic_alias_max < BROKER_TOPIC_ALIAS_MAX
                                          ? p->topic_alias_max
                                          : BROKER_TOPIC_ALIAS_MAX;
    if (has_prop(p, MQTT_PROP_REQUEST_PROBLEM_INFO))
        c->problem_info = p->request_problem_info;
}

/* max_keepalive, as Mosquitto's: the keep alive the broker holds the
 * client to. One longer than the maximum, or none (0, no limit at all), is
 * cut to the maximum. */
static uint16_t connect_keepalive(const struct broker *b, uint16_t asked)
{
    uint32_t max = b->cfg->max_keepalive;
    return max && (asked == 0 || asked > max) ? (uint16_t)max : asked;
}

/* The MQTT 5 CONNACK accepting the client (session_present aside, which
 * changes no size), within max_packet (the client's Maximum Packet Size, 0
 * for none): the server must not send a larger packet [MQTT-3.1.2-24].
 * Properties that repeat the default (the four "available" ones) go first,
 * then Topic Alias Maximum, whose absence only keeps the client from using
 * aliases; Receive Maximum, Maximum Packet Size, Server Keep Alive and the
 * Assigned Client Identifier carry limits and names the client must know.
 * Returns false when even that is too large. server_keepalive: c->keepalive
 * is not what the client asked for, and it must be told [MQTT-3.2.2-21]. */
static bool connack5_build(const struct broker *b, const struct conn *c, uint32_t max_packet,
                           const char *assigned_id, bool server_keepalive,
                           struct mqtt5_connack *ack)
{
    *ack = (struct mqtt5_connack){0};
    /* Maximum QoS is left out: absent means 2, and the property may only
     * say 0 or 1 [MQTT-3.2.2-9]. */
    struct mqtt_props *p = &ack->props;
    uint64_t defaults = MQTT_PROP_BIT(MQTT_PROP_RETAIN_AVAILABLE) |
                        MQTT_PROP_BIT(MQTT_PROP_WILDCARD_SUB_AVAILABLE) |
                        MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID_AVAILABLE) |
                        MQTT_PROP_BIT(MQTT_PROP_SHARED_SUB_AVAILABLE);
    p->present = MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAX) | MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAX) |
                 defaults;
    p->receive_max = broker_receive_max(b);
    p->topic_alias_max = BROKER_TOPIC_ALIAS_MAX;
    p->retain_available = p->wildcard_sub_available = 1;
    p->subscription_id_available = p->shared_sub_available = 1;
    if (b->cfg->max_packet_size) {
        p->present |= MQTT_PROP_BIT(MQTT_PROP_MAX_PACKET_SIZE);
        p->max_packet_size = b->cfg->max_packet_size;
    }
    if (server_keepalive) {
        p->present |= MQTT_PROP_BIT(MQTT_PROP_SERVER_KEEP_ALIVE);
        p->server_keep_alive = c->keepalive;
    }
    if (assigned_id) {
        p->present |= MQTT_PROP_BIT(MQTT_PROP_ASSIGNED_CLIENT_ID);
        p->assigned_client_id.ptr = (const uint8_t *)assigned_id;
        p->assigned_client_id.len = strlen(assigned_id);
    }
    const uint64_t optional[] = {defaults, MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAX)};
    for (size_t i = 0; max_packet && mqtt5_connack_size(ack) > max_packet; i++) {
        if (i == sizeof optional / sizeof optional[0])
            return false;
        p->present &= ~optional[i];
    }
    return true;
}

static void connack(struct broker_loop *l, struct conn *c, bool session_present,
                    const char *assigned_id, bool server_keepalive)
{
    struct broker *b = l->b;
    if (!c->v5) {
        /* MQTT 3.1 has no Session Present flag: its first byte is unused
         * (Mosquitto sends 0 there too). */
        mqtt_encode_connack(outq_reserve(&c->out, MQTT_CONNACK_LEN), session_present && !c->v31,
                            MQTT_CONNACK_ACCEPTED);
        conn_mark_dirty(l, c);
        return;
    }
    struct mqtt5_connack ack;
    connack5_build(b, c, conn_cold_peek(c)->max_packet_out, assigned_id, server_keepalive, &ack);
    ack.session_present = session_present;
    mqtt5_encode_connack(outq_reserve(&c->out, mqtt5_connack_size(&ack)), &ack);
    conn_mark_dirty(l, c);
}

/* The session s is another loop's: c goes to that loop, which reads this
 * CONNECT again (conn_prepare hands it over). Returns true if so. */
static bool connect_elsewhere(struct broker_loop *l, struct conn *c, struct broker_loop *owner)
{
    if (!owner || owner == l)
        return false;
    conn_cold(c)->move_to = owner;
    return true;
}

/* Lets the client in: takes over or discards an older session, attaches
 * one, keeps its will and answers CONNACK. Returns false, having done
 * nothing, if the session turned out to be another loop's. *lost: its
 * cluster claim was overtaken by another node's meanwhile (kv_sess.h). */
static bool connect_accept(struct broker_loop *l, struct conn *c, const struct mqtt5_connect *ci,
                           const uint8_t *id, size_t id_len, const char *assigned_id, bool *lost)
{
    struct broker *b = l->b;
    struct broker_loop *owner;
    struct session *s = session_find(l, id, id_len, &owner);
    if (connect_elsewhere(l, c, owner))
        return false;
    if (s && s->conn) {
        log_info("client %s: session taken over by a new connection", s->client_id);
        conn_kick(l, s->conn, MQTT5_RC_SESSION_TAKEN_OVER, "session taken over", false);
        /* A session ending with its connection is gone now. */
        s = session_find(l, id, id_len, &owner);
    }
    if (s && ci->clean_start) {
        session_destroy(l, s);
        s = NULL;
    }
    bool session_present = s != NULL;
    if (!s) {
        s = session_new(l, id, id_len, &owner);
        /* Another loop's connection made it meanwhile: that loop's. */
        if (connect_elsewhere(l, c, owner))
            return false;
    }
    if (c->v5)
        s->expiry_s = has_prop(&ci->props, MQTT_PROP_SESSION_EXPIRY) ? ci->props.session_expiry : 0;
    else
        s->expiry_s = ci->clean_start ? 0 : SESSION_NEVER;
    session_attach(b, s, c);
    struct kv_claim *claim = c->cold ? c->cold->claim : NULL;
    if (claim) {
        /* Once the session is in b->sessions with its epoch, the watch
         * finds it; what the watch saw before, the claim tells. */
        session_cold(s)->cluster_epoch = kv_sess_claim_epoch(claim);
        c->cold->claim = NULL;
        *lost = kv_sess_claim_done(b->kv_sess, claim);
    }
    STAT_ADD(l->nclients, 1);
    c->keepalive = connect_keepalive(b, ci->keepalive);
    c->state = CONN_ACTIVE;
    c->last_rx_ms = ev_now(l->ev);
    connect_limits(b, c, &ci->props);
    if (ci->has_will) {
        struct conn_cold *k = conn_cold(c);
        k->will = msg_new(ci->will_topic.ptr, ci->will_topic.len, ci->will_payload.ptr,
                          ci->will_payload.len, ci->will_qos, ci->will_retain,
                          c->v5 ? &ci->will_props : NULL, 0);
        k->will_delay_s = ci->will_props.will_delay;
    }
    persist_session(b, s);
    metrics_log_connect(b, c, ci, session_present);
    connack(l, c, session_present, assigned_id, c->keepalive != ci->keepalive);
    if (session_present)
        session_resume(l, s);
    return true;
}

int handle_connect(struct broker_loop *l, struct conn *c, const uint8_t *body, uint32_t len)
{
    struct broker *b = l->b;
    struct mqtt5_connect ci;
    int rc = connect_decode(c, body, len, &ci);
    if (rc == MQTT_E_VERSION) {
        log_info("fd %d: refused protocol level %u", c->io.fd, ci.protocol_level);
        return refuse(l, c, MQTT_CONNACK_BAD_VERSION, 0);
    }
    if (rc < 0) {
        if (!c->v5)
            return rc;
        /* MQTT 5 can say what was wrong [MQTT-3.1.4-1]. */
        STAT_ADD(l->stats.protocol_errors, 1);
        log_info("fd %d: invalid CONNECT (%s)", c->io.fd, mqtt5_strerror(rc));
        return refuse(l, c, 0, mqtt5_err_reason(rc));
    }
    if (c->over_limit) {
        STAT_ADD(l->stats.refused_connections, 1);
        log_warn("connection limit (%u) reached: refusing a client", b->cfg->max_connections);
        return refuse(l, c, MQTT_CONNACK_UNAVAILABLE, MQTT5_RC_SERVER_UNAVAILABLE);
    }
    uint64_t cut_off = router_partitioned(l);
    if (cut_off) {
        STAT_ADD(l->stats.refused_connections, 1);
        log_info("fd %d: refused: cut off from the cluster for %" PRIu64 " ms", c->io.fd, cut_off);
        return refuse(l, c, MQTT_CONNACK_UNAVAILABLE, MQTT5_RC_SERVER_UNAVAILABLE);
    }
    if (has_prop(&ci.props, MQTT_PROP_AUTH_METHOD)) {
        /* No enhanced authentication method is configured (4.12). */
        log_info("fd %d: refused authentication method", c->io.fd);
        return refuse(l, c, 0, MQTT5_RC_BAD_AUTHENTICATION_METHOD);
    }
    if (ci.has_will && b->cluster &&
        !cluster_topic_fits(b->cluster, ci.will_topic.ptr, ci.will_topic.len)) {
        /* As a PUBLISH on it would be (handle_publish.c). MQTT 3.1.1 has
         * no CONNACK code for it: closed without one. */
        log_debug("fd %d: CONNECT refused: a will topic of %zu bytes is too long for a cluster "
                  "subject", c->io.fd, (size_t)ci.will_topic.len);
        if (c->v5)
            return refuse(l, c, 0, MQTT5_RC_TOPIC_NAME_INVALID);
        conn_close(l, c, "will topic too long for the cluster", true);
        return 0;
    }

    /* A client without an id gets one. In MQTT 3.1.1 only for a clean
     * session: the id is how it would find a persistent session again; MQTT
     * 5 tells it the id (Assigned Client Identifier). MQTT 3.1 requires an
     * id of 1 to 23 bytes; an empty one is refused, as Mosquitto does, and
     * so is a longer one by the letter of 3.1, but Mosquitto lets that in,
     * and so do we (3.1.1 allowed it). */
    char assigned[32];
    const uint8_t *id = ci.client_id.ptr;
    size_t id_len = ci.client_id.len;
    if (id_len == 0) {
        if (c->v31 || (!c->v5 && !ci.clean_start))
            return refuse(l, c, MQTT_CONNACK_ID_REJECTED, 0);
        pthread_mutex_lock(&b->sessions_lock);
        do {
            id_len = (size_t)snprintf(assigned, sizeof assigned, "auto-%08x", ++b->next_auto_id);
        } while (hmap_get(&b->sessions, assigned, id_len));
        pthread_mutex_unlock(&b->sessions_lock);
        id = (const uint8_t *)assigned;
    } else {
        struct broker_loop *owner;
        session_find(l, id, id_len, &owner);
        /* Its session's loop answers it, and asks for a password then. */
        if (connect_elsewhere(l, c, owner))
            return 0;
    }
    /* use_identity_as_username: the verified client certificate names the
     * user, whatever CONNECT says (auth_connect then asks no password). */
    const char *cert_user = transport_username(c);
    if (cert_user) {
        ci.has_username = true;
        ci.username.ptr = (const uint8_t *)cert_user;
        ci.username.len = (uint32_t)strlen(cert_user);
    }
    if (!c->v5 && connect_keepalive(b, ci.keepalive) != ci.keepalive) {
        /* MQTT 3.1.1 cannot be told another keep alive: refused as
         * Mosquitto does, with "identifier rejected". */
        log_info("fd %d: refused keep alive %u (max_keepalive %u)", c->io.fd, ci.keepalive,
                 b->cfg->max_keepalive);
        return refuse(l, c, MQTT_CONNACK_ID_REJECTED, 0);
    }
    struct acl_client *acl;
    const char *why;
    uint8_t denied = auth_connect(b, &ci, cert_user != NULL, id, id_len, &acl, &why);
    if (denied) {
        metrics_log_connect_refused(b, c, &ci, id, id_len, why);
        return refuse(l, c, MQTT_CONNACK_NOT_AUTHORIZED, denied);
    }
    const char *assigned_id = id == (const uint8_t *)assigned && c->v5 ? assigned : NULL;
    struct mqtt5_connack ack;
    if (c->v5 && has_prop(&ci.props, MQTT_PROP_MAX_PACKET_SIZE) &&
        !connack5_build(b, c, ci.props.max_packet_size, assigned_id,
                        connect_keepalive(b, ci.keepalive) != ci.keepalive, &ack)) {
        /* Not even a CONNACK may reach it, and nothing may come before one
         * [MQTT-3.14.0-1]: closed before it takes over any session. */
        acl_client_free(acl);
        log_info("fd %d: Maximum Packet Size %u is smaller than the CONNACK, closing", c->io.fd,
                 ci.props.max_packet_size);
        conn_close(l, c, "maximum packet size below the CONNACK", true);
        return 0;
    }
    /* A clustered node makes the session its own first (kv_sess.h): the
     * CONNECT is read again once that is settled, and checked again
     * meanwhile. An id the broker assigned is this node's alone. */
    struct kv_claim *claim = c->cold ? c->cold->claim : NULL;
    if (b->kv_sess && !claim && id != (const uint8_t *)assigned) {
        acl_client_free(acl);
        if (kv_sess_claim(b->kv_sess, l, c, id, id_len))
            return 0;
        log_info("fd %d: refused: a client id of %zu bytes is too long for the cluster",
                 c->io.fd, id_len);
        return refuse(l, c, MQTT_CONNACK_ID_REJECTED, MQTT5_RC_CLIENT_ID_NOT_VALID);
    }
    if (claim && kv_sess_claim_epoch(claim) == 0) {
        acl_client_free(acl);
        STAT_ADD(l->stats.refused_connections, 1);
        log_info("fd %d: refused: the cluster did not give this node the session", c->io.fd);
        return refuse(l, c, MQTT_CONNACK_UNAVAILABLE, MQTT5_RC_SERVER_BUSY);
    }
    bool lost = false;
    if (!connect_accept(l, c, &ci, id, id_len, assigned_id, &lost)) {
        acl_client_free(acl);
        return 0;
    }
    /* Other loops read the handle when they pick a group's member. */
    router_write_lock(b);
    auth_session_bind(b, c->session, acl, &ci);
    router_unlock(b);
    if (lost) {
        log_info("client %s: session taken over by another node while connecting",
                 c->session->client_id);
        conn_kick(l, c, MQTT5_RC_SESSION_TAKEN_OVER, "session taken over by another node", false);
    }
    return 0;
}

void connect_claimed(struct broker_loop *l, struct conn *c)
{
    struct conn_cold *k = c->cold;
    k->claiming = false;
    if (c->state != CONN_NEW) { /* it ended meanwhile: done with the claim */
        kv_sess_claim_done(l->b->kv_sess, k->claim);
        k->claim = NULL;
        return;
    }
    conn_read_later(l, c);
}

void connect_taken(struct broker_loop *l, const uint8_t *id, size_t len, uint64_t epoch,
                   const char *node)
{
    struct broker_loop *owner;
    struct session *s = session_find(l, id, len, &owner);
    if (!s || session_cold_peek(s)->cluster_epoch >= epoch)
        return; /* gone, or claimed here since */
    log_info("client %s: session taken over by node %s (epoch %" PRIu64 ")", s->client_id, node,
             epoch);
    if (s->conn) {
        conn_kick(l, s->conn, MQTT5_RC_SESSION_TAKEN_OVER, "session taken over by another node",
                  false);
        /* A session ending with its connection is gone now. */
        s = session_find(l, id, len, &owner);
    }
    /* It lives on the other node now (its offline queue stays here, lost:
     * docs/cluster.md, "Sessions"). */
    if (s)
        session_destroy(l, s);
}

int handle_disconnect(struct broker_loop *l, struct conn *c, const uint8_t *body, uint32_t len)
{
    struct mqtt5_reason_props r;
    int rc = mqtt5_decode_reason_props(MQTT_DISCONNECT, body, len, &r);
    if (rc < 0)
        return rc;
    struct session *s = c->session;
    if (has_prop(&r.props, MQTT_PROP_SESSION_EXPIRY)) {
        /* A session that was to end with its connection cannot be given a
         * future now [MQTT-3.14.2-2]. */
        if (s->expiry_s == 0 && r.props.session_expiry != 0)
            return MQTT5_E_PROTOCOL_ERROR;
        s->expiry_s = r.props.session_expiry;
    }
    /* Reason 0x04 asks for the will all the same [MQTT-3.14.4-3]. */
    conn_close(l, c, "DISCONNECT", r.reason != MQTT5_RC_DISCONNECT_WITH_WILL);
    return 0;
}
