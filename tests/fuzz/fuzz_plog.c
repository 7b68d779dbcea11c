/* fuzz_plog.c - libFuzzer target for the state log's recovery (plog.c):
 * the input becomes log files in a data directory, which plog_open()
 * recovers. Recovery must not crash, leak or loop, whatever the bytes; and
 * what it leaves behind must be a clean log: compacting it and opening it
 * again reports no damage and delivers exactly the same state.
 *
 * Input: one flags byte, two bytes of split point, then file contents.
 *   bit 0: give each file a valid header (so mutations reach the records)
 *   bit 1: recompute every record's checks (so mutations reach decoding
 *          and the index, not only the checks)
 *   bit 2: split the contents into log.1 and log.2 at the split point
 *   bit 3: log.2's header (bit 0) marks it a snapshot that replaces log.1
 *   bit 4: format 2 (markers, checks bound to the file and offset: damage
 *          is skipped and recovery resyncs); else format 1, which a
 *          format-2 broker reads and rewrites
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../unit/plog_format.h"
#include "../unit/test_dir.h"
#include "plog_digest.h"
#include "broker/plog.h"
#include "core/log.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

#define LOG_ID 0x5eed5eed5eed5eedull

static char dir[64];

static void write_file(unsigned number, const uint8_t *data, size_t len, uint8_t flags, bool base)
{
    char path[128];
    uint8_t hdr[PF_HDR];
    bool v2 = flags & 16;
    size_t hlen = v2 ? PF_HDR : PF_HDR_V1, rec = v2 ? PF_REC : PF_REC_V1;
    uint64_t key = pf_key(LOG_ID, number);
    snprintf(path, sizeof path, "%s/log.%010u", dir, number);
    FILE *f = fopen(path, "wb");
    CHECK(f);
    if (flags & 1) {
        CHECK(pf_header(hdr, v2 ? 2 : 1, number, base, LOG_ID) == hlen);
        CHECK(fwrite(hdr, 1, hlen, f) == hlen);
    }
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, data, len);
    /* Records start after the header, wherever the header came from. */
    size_t start = flags & 1 ? 0 : hlen, shift = flags & 1 ? hlen : 0;
    for (size_t off = start; (flags & 2) && off + rec <= len;) {
        uint32_t body = (uint32_t)pf_get(copy + off + (v2 ? 12 : 4), 4);
        if (body > len - off - rec)
            break;
        if (v2) {
            memcpy(copy + off, PF_MARK, 4);
            pf_seal(copy + off, off + shift, key);
        } else {
            pf_le(copy + off, crc32(0, copy + off + 4, body + 5), 4);
        }
        off += rec + body;
    }
    CHECK(fwrite(copy, 1, len, f) == len);
    free(copy);
    fclose(f);
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
    CHECK(plog_compact_wait(l) == 0); /* the rewrite of format 1 or of damage, if any */
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
