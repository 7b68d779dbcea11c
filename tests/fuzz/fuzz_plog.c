/* fuzz_plog.c - libFuzzer target for the state log's recovery (plog.c):
 * the input becomes log files in a data directory, which plog_open()
 * recovers. Recovery must not crash, leak or loop, whatever the bytes; and
 * what it leaves behind must be a clean log: compacting it and opening it
 * again reports no damage and delivers exactly the same state.
 *
 * Input: one flags byte, two bytes of split point, then file contents.
 *   bit 0: give each file a valid header (so mutations reach the records)
 *   bit 1: recompute every record's checksum (so mutations reach decoding
 *          and the index, not only the checksum check)
 *   bit 2: split the contents into log.1 and log.2 at the split point
 *   bit 3: log.2's header (bit 0) marks it a snapshot that replaces log.1
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../unit/test_dir.h"
#include "broker/plog.h"
#include "core/log.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

#define FILE_HDR 24
#define REC_HDR 9

static char dir[64];

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void write_file(unsigned number, const uint8_t *data, size_t len, uint8_t flags, bool base)
{
    char path[128];
    uint8_t hdr[FILE_HDR];
    snprintf(path, sizeof path, "%s/log.%010u", dir, number);
    FILE *f = fopen(path, "wb");
    CHECK(f);
    if (flags & 1) {
        memcpy(hdr, "shootlog", 8);
        le32(hdr + 8, 1);
        le32(hdr + 12, base);
        le32(hdr + 16, number);
        le32(hdr + 20, (uint32_t)crc32(0, hdr, 20));
        CHECK(fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr);
    }
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, data, len);
    /* Records start after the header, wherever the header came from. */
    for (size_t off = flags & 1 ? 0 : FILE_HDR; (flags & 2) && off + REC_HDR <= len;) {
        uint32_t body = copy[off + 4] | copy[off + 5] << 8 | copy[off + 6] << 16 |
                        (uint32_t)copy[off + 7] << 24;
        if (body > len - off - REC_HDR)
            break;
        le32(copy + off, (uint32_t)crc32(0, copy + off + 4, body + 5));
        off += REC_HDR + body;
    }
    CHECK(fwrite(copy, 1, len, f) == len);
    free(copy);
    fclose(f);
}

/* An order-sensitive digest of the delivered state that reads every byte
 * delivered, so an out-of-bounds pointer is caught by ASan. */
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

static void remove_dir(void)
{
    empty_dir(dir);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct plog_options opt = {.dir = dir};
    struct plog_report rep;
    char err[256];

    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/dev/shm/fuzz_plog-XXXXXX");
        if (!mkdtemp(dir)) {
            snprintf(dir, sizeof dir, "/tmp/fuzz_plog-XXXXXX");
            CHECK(mkdtemp(dir));
        }
        atexit(remove_dir);
        log_set_level(LOG_ERROR); /* damage is expected here, not news */
    }
    if (size < 3)
        return 0;
    uint8_t flags = data[0];
    size_t split = (size_t)(data[1] | data[2] << 8);
    data += 3;
    size -= 3;
    CHECK(empty_dir(dir) == 0);
    if ((flags & 4) && split < size) {
        write_file(1, data, split, flags, false);
        write_file(2, data + split, size - split, flags, flags & 8);
    } else {
        write_file(1, data, size, flags, false);
    }

    digest = 0;
    struct plog *l = plog_open(&opt, on_record, NULL, &rep, err, sizeof err);
    CHECK(l);
    uLong first = digest;
    CHECK(plog_compact_start(l) == 0);
    CHECK(plog_compact_wait(l) == 0);
    plog_close(l);

    digest = 0;
    l = plog_open(&opt, on_record, NULL, &rep, err, sizeof err);
    CHECK(l);
    CHECK(rep.dropped_bytes == 0);
    CHECK(digest == first);
    plog_close(l);
    return 0;
}
