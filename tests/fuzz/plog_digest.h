/* plog_digest.h - what the state log's fuzz targets compare recoveries
 * by: an order-sensitive digest of every live object plog_open() delivers,
 * reading every byte delivered, so that an out-of-bounds pointer is caught
 * by ASan. on_record() is the apply callback; digest is reset by the
 * caller. */
#ifndef SHOOTOUT_PLOG_DIGEST_H
#define SHOOTOUT_PLOG_DIGEST_H

#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "broker/plog.h"

static uLong digest;

static void mix_bytes(struct plog_bytes b)
{
    digest = crc32(digest, (const Bytef *)&b.len, sizeof b.len);
    if (b.len)
        digest = crc32(digest, b.p, b.len);
}

static void mix_int(uint64_t v) { digest = crc32(digest, (const Bytef *)&v, sizeof v); }

static void on_record(void *ctx, const struct plog_rec *r)
{
    mix_int(r->type);
    switch (r->type) {
    case PLOG_SESSION:
        mix_bytes(r->session.client_id);
        mix_int(r->session.expiry ^ (uint64_t)r->session.protocol << 32);
        mix_int(r->session.has_will | r->session.will_retain << 1 | r->session.will_qos << 2);
        mix_int(r->session.will_delay);
        mix_bytes(r->session.will_topic);
        mix_bytes(r->session.will_payload);
        mix_bytes(r->session.will_props);
        mix_int(r->session.will_at_ms);
        break;
    case PLOG_SUB:
        mix_bytes(r->sub.client_id);
        mix_bytes(r->sub.filter);
        mix_int(r->sub.options ^ (uint64_t)r->sub.sub_id << 8);
        break;
    case PLOG_MSG:
        mix_int(r->msg.id);
        mix_int(r->msg.qos | r->msg.retain << 2);
        mix_int(r->msg.expiry_ms);
        mix_bytes(r->msg.topic);
        mix_bytes(r->msg.payload);
        mix_bytes(r->msg.props);
        break;
    case PLOG_RETAIN:
        mix_bytes(r->retain.topic);
        mix_int(r->retain.msg_id);
        break;
    case PLOG_ENTRY:
        mix_int(r->entry.id);
        mix_bytes(r->entry.client_id);
        mix_int(r->entry.msg_id);
        mix_int(r->entry.dir | r->entry.state << 1 | r->entry.qos << 3 | r->entry.dup << 5 |
                (uint64_t)r->entry.packet_id << 8);
        break;
    default:
        abort(); /* only live objects are delivered */
    }
}

#endif
