/* handle_connect.c - CONNECT: protocol checks, client identifiers, session
 * takeover and resumption, wills, and the CONNACK.
 */
#include <stdio.h>

#include "broker/broker_int.h"
#include "core/log.h"
#include "mqtt/mqtt_codec.h"

static void connack(struct broker *b, struct conn *c, bool session_present, uint8_t rc)
{
    mqtt_encode_connack(outq_reserve(&c->out, MQTT_CONNACK_LEN), session_present, rc);
    if (rc != MQTT_CONNACK_ACCEPTED)
        conn_close_after_flush(b, c);
    else
        conn_mark_dirty(b, c);
}

int handle_connect(struct broker *b, struct conn *c, const uint8_t *body, uint32_t len)
{
    struct mqtt_connect ci;
    int rc = mqtt_decode_connect(body, len, &ci);
    if (rc == MQTT_E_VERSION) {
        log_info("fd %d: refused protocol level %u", c->io.fd, ci.protocol_level);
        connack(b, c, false, MQTT_CONNACK_BAD_VERSION);
        return 0;
    }
    if (rc < 0)
        return -1;
    if (c->over_limit) {
        b->stats.refused_connections++;
        log_warn("connection limit (%u) reached: refusing a client", b->cfg->max_connections);
        connack(b, c, false, MQTT_CONNACK_UNAVAILABLE);
        return 0;
    }

    /* A client without an id gets one, but only for a clean session: the
     * id is how it would find a persistent session again. */
    char assigned[32];
    const uint8_t *id = ci.client_id.ptr;
    size_t id_len = ci.client_id.len;
    if (id_len == 0) {
        if (!ci.clean_session) {
            connack(b, c, false, MQTT_CONNACK_ID_REJECTED);
            return 0;
        }
        do {
            id_len = (size_t)snprintf(assigned, sizeof assigned, "auto-%08x", ++b->next_auto_id);
        } while (hmap_get(&b->sessions, assigned, id_len));
        id = (const uint8_t *)assigned;
    }

    struct session *s = hmap_get(&b->sessions, id, id_len);
    if (s && s->conn) {
        log_info("client %s: session taken over by a new connection", s->client_id);
        conn_close(b, s->conn, "session taken over", false);
        /* A clean session ended with its connection. */
        s = hmap_get(&b->sessions, id, id_len);
    }
    if (s && ci.clean_session) {
        session_destroy(b, s);
        s = NULL;
    }
    bool session_present = s != NULL;
    if (!s)
        s = session_new(b, id, id_len, ci.clean_session);

    s->conn = c;
    c->session = s;
    b->nclients++;
    c->keepalive = ci.keepalive;
    c->state = CONN_ACTIVE;
    c->last_rx_ms = ev_now(b->loop);
    if (ci.has_will)
        c->will = msg_new(ci.will_topic.ptr, ci.will_topic.len, ci.will_payload.ptr,
                          ci.will_payload.len, ci.will_qos, ci.will_retain);
    log_debug("client %s (fd %d) connected, clean=%d keepalive=%u%s", s->client_id, c->io.fd,
              ci.clean_session, ci.keepalive, session_present ? ", session resumed" : "");
    connack(b, c, session_present, MQTT_CONNACK_ACCEPTED);
    if (session_present)
        session_resume(b, s);
    return 0;
}
