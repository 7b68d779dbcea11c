/* plog_format.h - the state log's file format (docs/persistence.md, "File
 * format"), written a second time from the document, for the tests and
 * fuzz targets that build, take apart, convert or damage log files byte by
 * byte: format 2's headers and framing, format 1's for the migration. */
#ifndef SHOOTOUT_PLOG_FORMAT_H
#define SHOOTOUT_PLOG_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#define PF_HDR 32    /* format 2 file header */
#define PF_HDR_V1 24 /* format 1 file header */
#define PF_REC 17    /* format 2 record header: marker, two checks, length, type */
#define PF_REC_V1 9  /* format 1 record header: crc, length, type */
#define PF_MARK "\xfe\x6c\x9a\x3d"

static inline void pf_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t pf_get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The file header of either format; 32 or 24 bytes written to h. */
static inline size_t pf_header(uint8_t *h, int version, uint32_t number, bool base,
                               uint64_t log_id)
{
    size_t n = version == 1 ? PF_HDR_V1 : PF_HDR;
    memcpy(h, "shootlog", 8);
    pf_le(h + 8, (uint32_t)version, 4);
    pf_le(h + 12, base, 4);
    pf_le(h + 16, number, 4);
    if (version != 1)
        pf_le(h + 20, log_id, 8);
    pf_le(h + n - 4, crc32(0, h, (uInt)n - 4), 4);
    return n;
}

static inline uint64_t pf_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ x >> 33;
}

/* What every format-2 check of file number of log log_id depends on. */
static inline uint64_t pf_key(uint64_t log_id, uint32_t number)
{
    return pf_mix(log_id ^ pf_mix(number));
}

/* A format-2 file's key, from its header. */
static inline uint64_t pf_file_key(const uint8_t *file)
{
    return pf_key(pf_get(file + 20, 8), (uint32_t)pf_get(file + 16, 4));
}

/* Sets the two checks of the format-2 record at rec, at offset off of a
 * file with key, from its length, type and body. */
static inline void pf_seal(uint8_t *rec, uint64_t off, uint64_t key)
{
    uint32_t len = (uint32_t)pf_get(rec + 12, 4);
    uint32_t hc = (uint32_t)pf_mix(pf_mix(key ^ off) ^ len ^ (uint64_t)rec[16] << 32);
    pf_le(rec + 4, hc, 4);
    pf_le(rec + 8, crc32(hc, rec + 12, len + 5), 4);
}

/* Writes a format-2 record of type and body at out (PF_REC + len bytes). */
static inline size_t pf_frame(uint8_t *out, uint64_t off, uint64_t key, uint8_t type,
                              const uint8_t *body, uint32_t len)
{
    memcpy(out, PF_MARK, 4);
    pf_le(out + 12, len, 4);
    out[16] = type;
    memcpy(out + PF_REC, body, len);
    pf_seal(out, off, key);
    return PF_REC + (size_t)len;
}

/* Writes a format-1 record at out (PF_REC_V1 + len bytes). */
static inline size_t pf_frame_v1(uint8_t *out, uint8_t type, const uint8_t *body, uint32_t len)
{
    pf_le(out + 4, len, 4);
    out[8] = type;
    memcpy(out + PF_REC_V1, body, len);
    pf_le(out, crc32(0, out + 4, len + 5), 4);
    return PF_REC_V1 + (size_t)len;
}

/* One record of an intact format-2 file. */
struct pf_rec {
    size_t off, size;
    uint8_t type;
};

/* Lists the records of an intact format-2 file, up to max; returns how
 * many there are (stops at anything that does not frame). */
static inline size_t pf_records(const uint8_t *file, size_t len, struct pf_rec *out, size_t max)
{
    size_t n = 0;
    for (size_t off = PF_HDR; off + PF_REC <= len && memcmp(file + off, PF_MARK, 4) == 0;) {
        size_t size = PF_REC + pf_get(file + off + 12, 4);
        if (size > len - off)
            break;
        if (n < max)
            out[n] = (struct pf_rec){off, size, file[off + 16]};
        n++;
        off += size;
    }
    return n;
}

#define PF_MAXREC 8192

/* A log file as written (orig, len, its records) and as a test damaged it
 * (bytes, dlen). */
struct pf_file {
    unsigned number;
    uint8_t *orig, *bytes;
    size_t len, dlen;
    struct pf_rec recs[PF_MAXREC];
    size_t nrecs;
};

/* Whether record r of f is intact: its bytes still where they were
 * written. */
static inline bool pf_intact(const struct pf_file *f, size_t r)
{
    const struct pf_rec *rec = &f->recs[r];
    return rec->off + rec->size <= f->dlen &&
           memcmp(f->orig + rec->off, f->bytes + rec->off, rec->size) == 0;
}

/* Converts an intact format-2 file to format 1, leaving out each record i
 * for which keep[i] is false (keep NULL: none). out must hold len bytes;
 * returns the new length. */
static inline size_t pf_to_v1(const uint8_t *file, size_t len, const bool *keep, uint8_t *out)
{
    static struct pf_rec recs[65536];
    size_t n = pf_records(file, len, recs, sizeof recs / sizeof recs[0]);
    size_t o = pf_header(out, 1, (uint32_t)pf_get(file + 16, 4), pf_get(file + 12, 4) & 1, 0);
    for (size_t i = 0; i < n && i < sizeof recs / sizeof recs[0]; i++)
        if (!keep || keep[i])
            o += pf_frame_v1(out + o, recs[i].type, file + recs[i].off + PF_REC,
                             (uint32_t)(recs[i].size - PF_REC));
    return o;
}

#endif
