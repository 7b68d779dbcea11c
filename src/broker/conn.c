/* conn.c - the output side of a connection every module writes to, and
 * the loop iteration's lists of connections to flush and to read
 * (conn.h).
 */
#include "broker/conn.h"

#include <string.h>

#include "broker/broker_int.h"
#include "core/mem.h"
#include "mqtt/mqtt5.h"

/* An idle connection costs its struct conn, in one malloc chunk: keep it
 * within 176 bytes (168 usable) on 64-bit targets. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct conn) <= 168,
               "struct conn outgrew its 176-byte malloc chunk");

const struct conn_cold conn_cold_none;

__attribute__((cold, noinline)) static struct conn_cold *conn_cold_new(struct conn *c)
{
    c->cold = mem_calloc(1, sizeof *c->cold);
    return c->cold;
}

struct conn_cold *conn_cold(struct conn *c)
{
    return c->cold ? c->cold : conn_cold_new(c);
}

void conn_cold_moved(struct conn *c)
{
    struct conn_cold *k = c->cold;
    k->move_to = NULL;
    k->move_next = NULL;
    if (!k->tp && !k->claim) {
        mem_free(k);
        c->cold = NULL;
    }
}

void conn_free(struct conn *c)
{
    mem_free(c->cold);
    mem_free(c);
}

void conn_mark_dirty(struct broker_loop *l, struct conn *c)
{
    if (c->dirty || c->state == CONN_CLOSED)
        return;
    c->dirty = true;
    c->dirty_next = l->dirty;
    l->dirty = c;
}

void conn_read_later(struct broker_loop *l, struct conn *c)
{
    if (c->read_pending)
        return;
    c->read_pending = true;
    c->read_next = l->read_list;
    l->read_list = c;
}

void conn_unlink(struct broker_loop *l, struct conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        l->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

void conn_link(struct broker_loop *l, struct conn *c)
{
    c->prev = NULL;
    c->next = l->conns;
    if (l->conns)
        l->conns->prev = c;
    l->conns = c;
}

bool conn_count_input(struct broker_loop *l, struct conn *c)
{
    struct broker *b = l->b;
    /* Every loop adds to the total: an atomic add, only when it changed
     * (most reads leave no partial packet, before as after). */
    if (c->in.cap != c->in_counted) {
        __atomic_fetch_add(&b->partial_bytes, (size_t)c->in.cap - c->in_counted, __ATOMIC_RELAXED);
        c->in_counted = c->in.cap;
    }
    return c->in.cap && __atomic_load_n(&b->partial_bytes, __ATOMIC_RELAXED) > b->cfg->max_partial_bytes;
}

void conn_write_reason(struct conn *c, uint8_t type, uint16_t packet_id, uint8_t reason,
                       const char *why)
{
    struct mqtt_props props = {0};
    /* Reason strings go on DISCONNECT always, elsewhere only when asked for
     * [MQTT-3.1.2-29], and never past the client's maximum [MQTT-3.14.2-3]. */
    if (why && (type == MQTT_DISCONNECT || c->problem_info)) {
        props.present = MQTT_PROP_BIT(MQTT_PROP_REASON_STRING);
        props.reason_string.ptr = (const uint8_t *)why;
        props.reason_string.len = strlen(why);
    }
    for (;;) {
        struct mqtt5_reason_props r = {reason, props};
        struct mqtt5_ack a = {packet_id, reason, props};
        size_t n = type == MQTT_DISCONNECT ? mqtt5_reason_props_size(type, &r) : mqtt5_ack_size(&a);
        uint32_t max = conn_cold_peek(c)->max_packet_out;
        if (props.present && max && n > max) {
            props.present = 0;
            continue;
        }
        uint8_t *out = outq_reserve(&c->out, n);
        if (type == MQTT_DISCONNECT)
            mqtt5_encode_reason_props(out, type, &r);
        else
            mqtt5_encode_ack(out, type, &a);
        return;
    }
}
