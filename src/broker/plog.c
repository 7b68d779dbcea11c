/* plog.c - the broker's append-only state log (see plog.h and
 * docs/persistence.md).
 *
 * Files: DIR/log.N, numbered in one increasing sequence. The file with the
 * highest N whose header carries the BASE flag is a snapshot: it replaces
 * every lower-numbered file, which recovery deletes; the files above it are
 * replayed after it. Compaction writes a snapshot of the records live in
 * files <= A as log.(A+1).tmp while new records go to log.(A+2), then
 * renames it to log.(A+1), syncs the directory and deletes the files <= A.
 * A kill at any instant leaves either no log.(A+1) (the .tmp is deleted at
 * the next start, the old files are all still there) or a complete one
 * (the old files it replaces are ignored and deleted), so recovery always
 * sees one consistent history.
 *
 * Each record starts with a marker and carries two checks that depend on
 * its file and offset, so recovery that meets a record which does not
 * verify skips on to the next one that does: damage costs the records it
 * hit, which are saved aside, and nothing after them. Records that refer
 * to an object lost that way are ignored. Format-1 files (no marker) are
 * still read, and rewritten by a compaction at open.
 *
 * The in-memory index maps each live object to where its record is. While a
 * compaction runs, objects removed from the index are kept as "dead" nodes
 * until it ends, so that the compaction's list of records can point at
 * nodes and move each still-current one to its new place in O(1).
 */
#include "broker/plog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/hmap.h"
#include "core/log.h"
#include "core/mem.h"

#define FILE_MAGIC "shootlog"
#define FILE_VERSION 2u   /* written; format 1 is still read */
#define FILE_HDR 32       /* magic 8, version 4, flags 4, number 4, log id 8, crc 4 */
#define FILE_HDR_V1 24    /* magic 8, version 4, flags 4, number 4, crc 4 */
#define FLAG_BASE 0x1u    /* a snapshot replacing every lower-numbered file */
/* Format 2: marker 4, header check 4, check 4, body length 4, type 1. */
#define REC_HDR 17
#define REC_HDR_V1 9      /* crc 4, body length 4, type 1 */
/* Starts every format-2 record: 0xfe never occurs in UTF-8 text. */
#define REC_MARK "\xfe\x6c\x9a\x3d"
#define REC_MAX (PLOG_BLOB_MAX * 3u) /* a body can hold three blobs */
#define NAME_MAX_LEN 64
#define LOGGED_RANGES 32  /* damaged ranges logged one by one at a start */
#define WRITE_CHUNK (1u << 20)

/* ---- byte buffers and the record codec ----------------------------------- */

struct buf {
    uint8_t *p;
    size_t len, cap;
};

static void buf_reserve(struct buf *b, size_t n)
{
    if (b->cap - b->len >= n)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n)
        cap *= 2;
    b->p = mem_realloc(b->p, cap);
    b->cap = cap;
}

static void le_store(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le_load(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* One description of each record's fields serves both directions: with out
 * set, fields are appended to it; otherwise they are read from [p, end),
 * and running short sets bad. */
struct codec {
    struct buf *out;
    const uint8_t *p, *end;
    bool bad;
};

static uint64_t c_int(struct codec *c, uint64_t v, int n)
{
    if (c->out) {
        buf_reserve(c->out, (size_t)n);
        le_store(c->out->p + c->out->len, v, n);
        c->out->len += (size_t)n;
        return v;
    }
    if (c->end - c->p < n) {
        c->bad = true;
        c->p = c->end;
        return 0;
    }
    v = le_load(c->p, n);
    c->p += n;
    return v;
}

#define C_U8(c, x) ((x) = (uint8_t)c_int((c), (x), 1))
#define C_U16(c, x) ((x) = (uint16_t)c_int((c), (x), 2))
#define C_U32(c, x) ((x) = (uint32_t)c_int((c), (x), 4))
#define C_U64(c, x) ((x) = c_int((c), (x), 8))
#define C_BOOL(c, x) ((x) = c_int((c), (x), 1) != 0)

/* A string (2-byte length) or blob (4-byte length) and its bytes. */
static void c_bytes(struct codec *c, struct plog_bytes *s, int lenbytes)
{
    s->len = (uint32_t)c_int(c, s->len, lenbytes);
    if (c->out) {
        buf_reserve(c->out, s->len);
        if (s->len)
            memcpy(c->out->p + c->out->len, s->p, s->len);
        c->out->len += s->len;
    } else if ((size_t)(c->end - c->p) < s->len || (lenbytes == 4 && s->len > PLOG_BLOB_MAX)) {
        c->bad = true;
        c->p = c->end;
        s->len = 0;
        s->p = NULL;
    } else {
        s->p = c->p;
        c->p += s->len;
    }
}
#define C_STR(c, s) c_bytes((c), &(s), 2)
#define C_BLOB(c, s) c_bytes((c), &(s), 4)

/* Encodes r's body into c->out, or decodes one into r; false if the type
 * is unknown or a decoded field is out of range. */
static bool codec_rec(struct codec *c, struct plog_rec *r)
{
    switch (r->type) {
    case PLOG_SESSION: {
        struct plog_session *s = &r->session;
        C_STR(c, s->client_id);
        C_U32(c, s->expiry);
        C_U64(c, s->expires_at_ms);
        C_U8(c, s->protocol);
        C_BOOL(c, s->has_will);
        C_BOOL(c, s->will_retain);
        C_U8(c, s->will_qos);
        C_U32(c, s->will_delay);
        C_STR(c, s->will_topic);
        C_BLOB(c, s->will_payload);
        C_BLOB(c, s->will_props);
        /* will_at came later: a body that ends before it (as the first
         * brokers wrote them) has none. */
        if (c->out || c->p != c->end)
            C_U64(c, s->will_at_ms);
        return s->will_qos <= 2;
    }
    case PLOG_SESSION_DEL:
        C_STR(c, r->session.client_id);
        return true;
    case PLOG_SUB:
    case PLOG_SUB_DEL:
        C_STR(c, r->sub.client_id);
        C_STR(c, r->sub.filter);
        if (r->type == PLOG_SUB) {
            C_U8(c, r->sub.options);
            C_U32(c, r->sub.sub_id);
        }
        return true;
    case PLOG_MSG: {
        struct plog_msg *m = &r->msg;
        C_U64(c, m->id);
        C_U8(c, m->qos);
        C_BOOL(c, m->retain);
        C_U64(c, m->expiry_ms);
        C_STR(c, m->topic);
        C_BLOB(c, m->payload);
        C_BLOB(c, m->props);
        return m->qos <= 2 && m->id != 0;
    }
    case PLOG_RETAIN:
    case PLOG_RETAIN_CLEAR:
        C_STR(c, r->retain.topic);
        if (r->type == PLOG_RETAIN)
            C_U64(c, r->retain.msg_id);
        return true;
    case PLOG_ENTRY:
    case PLOG_ENTRY_STATE:
    case PLOG_ENTRY_DEL: {
        struct plog_entry *e = &r->entry;
        C_U64(c, e->id);
        if (r->type == PLOG_ENTRY) {
            C_STR(c, e->client_id);
            C_U64(c, e->msg_id);
            C_U8(c, e->dir);
            C_U8(c, e->qos);
        }
        if (r->type != PLOG_ENTRY_DEL) {
            C_U8(c, e->state);
            C_BOOL(c, e->dup);
            C_U16(c, e->packet_id);
        }
        return e->id != 0 && e->dir <= PLOG_IN && e->state <= PLOG_PUBREL_SENT && e->qos <= 2;
    }
    default:
        return false;
    }
}

/* One log file as recovery and compaction read it: a read-only mapping and
 * how its records are framed. */
struct mapped {
    uint32_t number;
    const uint8_t *p; /* NULL if empty */
    size_t size;
    uint8_t version;  /* format: 1, or 2 (also for a file whose header is damaged) */
    size_t hdr;       /* header length: where its records start */
    int64_t flags;    /* of a valid header; -1 if it does not verify */
    uint64_t key;     /* format 2: file_key() of its log id and number */
};

/* MurmurHash3's 64-bit finalizer: every input bit moves every output bit. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ x >> 33;
}

/* What the checks of every format-2 record of log.N depend on: the log id
 * and N, so that a record copied from another file, or from a log of
 * another directory or generation, does not verify. */
static uint64_t file_key(uint64_t log_id, uint32_t number)
{
    return mix64(log_id ^ mix64(number));
}

/* A format-2 record's header check, of the file's key, the record's offset
 * (so that a copy elsewhere in the same file does not verify either), its
 * length and its type. A hash rather than a CRC: it costs a few multiplies
 * for every record appended, and for every candidate a resync looks at. */
static uint32_t head_check(uint64_t key, uint64_t off, uint32_t len, uint8_t type)
{
    return (uint32_t)mix64(mix64(key ^ off) ^ len ^ (uint64_t)type << 32);
}

/* Appends r framed as a format-2 record of a file with key, the buffer's
 * first byte being at offset base of that file. The check is the CRC of
 * the length, type and body, started from the header check. */
static void frame_record(struct buf *b, const struct plog_rec *r, uint64_t key, uint64_t base)
{
    size_t start = b->len;
    struct plog_rec copy = *r;
    struct codec c = {.out = b};

    buf_reserve(b, REC_HDR);
    b->len += REC_HDR;
    codec_rec(&c, &copy);
    uint8_t *h = b->p + start;
    uint32_t len = (uint32_t)(b->len - start - REC_HDR);
    uint32_t hc = head_check(key, base + start, len, r->type);
    memcpy(h, REC_MARK, 4);
    le_store(h + 4, hc, 4);
    le_store(h + 12, len, 4);
    h[16] = r->type;
    le_store(h + 8, crc32(hc, h + 12, len + 5), 4);
}

enum rec_status { REC_OK, REC_TORN, REC_BAD };

static enum rec_status decode_body(uint8_t type, const uint8_t *body, uint32_t len,
                                   struct plog_rec *r, const char **why)
{
    memset(r, 0, sizeof *r);
    r->type = type;
    struct codec c = {.p = body, .end = body + len};
    if (!codec_rec(&c, r) || c.bad || c.p != c.end) {
        *why = "malformed record";
        return REC_BAD;
    }
    return REC_OK;
}

/* Format 1: crc 4 (of the rest, from 0), length 4, type 1, body. */
static enum rec_status read_v1(const uint8_t *p, size_t avail, struct plog_rec *r, size_t *size,
                               const char **why)
{
    if (avail < REC_HDR_V1)
        return REC_TORN;
    uint32_t len = (uint32_t)le_load(p + 4, 4);
    if (len > REC_MAX) {
        *why = "record length out of range";
        return REC_BAD;
    }
    if (avail - REC_HDR_V1 < len)
        return REC_TORN;
    if (le_load(p, 4) != crc32(0, p + 4, len + 5)) {
        *why = "checksum mismatch";
        return REC_BAD;
    }
    *size = REC_HDR_V1 + len;
    return decode_body(p[8], p + REC_HDR_V1, len, r, why);
}

/* Verifies and decodes the record at offset off of m. REC_TORN: the file
 * ends inside a record whose header verifies (or inside its header). Why
 * it is bad goes to *why. Decoded strings point into the mapping. */
static enum rec_status read_record(const struct mapped *m, uint64_t off, struct plog_rec *r,
                                   size_t *size, const char **why)
{
    const uint8_t *p = m->p + off;
    size_t avail = m->size - off;
    if (m->version == 1)
        return read_v1(p, avail, r, size, why);
    if (memcmp(p, REC_MARK, avail < 4 ? avail : 4) != 0) {
        *why = "no record marker";
        return REC_BAD;
    }
    if (avail < REC_HDR)
        return REC_TORN;
    uint32_t len = (uint32_t)le_load(p + 12, 4);
    uint32_t hc = head_check(m->key, off, len, p[16]);
    if (len > REC_MAX || le_load(p + 4, 4) != hc) {
        *why = "bad record header";
        return REC_BAD;
    }
    if (avail - REC_HDR < len)
        return REC_TORN;
    if (le_load(p + 8, 4) != crc32(hc, p + 12, len + 5)) {
        *why = "checksum mismatch";
        return REC_BAD;
    }
    *size = REC_HDR + len;
    return decode_body(p[16], p + REC_HDR, len, r, why);
}

/* Where recovery goes on after damage at from - 1: the first offset from
 * on where a record verifies, or the end of the file. A candidate costs a
 * header check, and a CRC of its body only if that verifies, so payload
 * bytes that look like records cannot make this quadratic. Format 1 has no marker to find
 * a record by: the damage runs to the end of its file. */
static uint64_t resync(const struct mapped *m, uint64_t from)
{
    const uint8_t *end = m->p + m->size;
    if (m->version == 1 || from >= m->size)
        return m->size;
    for (const uint8_t *q = m->p + from; (q = memmem(q, (size_t)(end - q), REC_MARK, 4)); q++) {
        struct plog_rec r;
        size_t size;
        const char *why;
        if (read_record(m, (uint64_t)(q - m->p), &r, &size, &why) == REC_OK)
            return (uint64_t)(q - m->p);
    }
    return m->size;
}

static void header_encode(uint8_t h[FILE_HDR], uint32_t number, uint32_t flags, uint64_t log_id)
{
    memcpy(h, FILE_MAGIC, 8);
    le_store(h + 8, FILE_VERSION, 4);
    le_store(h + 12, flags, 4);
    le_store(h + 16, number, 4);
    le_store(h + 20, log_id, 8);
    le_store(h + 28, crc32(0, h, 28), 4);
}

/* Reads m's header, of either format: sets its version, length and flags
 * if it verifies (and *log_id, if it has one), else flags -1. */
static void header_read(struct mapped *m, uint64_t *log_id)
{
    const uint8_t *p = m->p;
    m->flags = -1;
    if (m->size < FILE_HDR_V1 || memcmp(p, FILE_MAGIC, 8) != 0)
        return;
    uint32_t version = (uint32_t)le_load(p + 8, 4);
    size_t hdr = version == 1 ? FILE_HDR_V1 : FILE_HDR;
    if ((version != 1 && version != FILE_VERSION) || m->size < hdr ||
        le_load(p + 16, 4) != m->number || le_load(p + hdr - 4, 4) != crc32(0, p, (uInt)hdr - 4))
        return;
    m->version = (uint8_t)version;
    m->hdr = hdr;
    m->flags = (int64_t)le_load(p + 12, 4);
    if (version == FILE_VERSION)
        *log_id = le_load(p + 20, 8);
}

/* Sets m's format from its header. A file whose header does not verify is
 * read as format 2 of the directory's log id (the number is its name's),
 * so that its intact records are still found. */
static void map_format(struct mapped *m, uint64_t log_id)
{
    header_read(m, &log_id);
    if (m->flags < 0) {
        m->version = FILE_VERSION;
        m->hdr = FILE_HDR;
    }
    m->key = file_key(log_id, m->number);
}

/* ---- the index of live records ------------------------------------------- */

struct loc {
    uint64_t off;
    uint32_t file;
    uint32_t len;
};

/* Kinds double as the order of recovery and of a snapshot: referenced
 * objects come before what references them. */
enum kind { K_SESSION, K_MSG, K_RETAIN, K_SUB, K_ENTRY };

struct node {
    struct loc loc;
    uint8_t kind;
    bool dead;           /* removed during a compaction; freed when it ends */
    struct node *grave;  /* next dead node */
};

struct pentry;

struct psession {
    struct node n;
    uint8_t *id;
    uint16_t len;
    struct hmap subs;        /* filter -> struct psub */
    struct pentry *entries;  /* doubly linked through prev/next */
};

struct psub {
    struct node n;
    uint8_t *filter;
    uint16_t len;
};

struct pmsg {
    struct node n;
    uint64_t id; /* the map key points here */
    uint32_t refs;
};

struct pretain {
    struct node n;
    uint8_t *topic;
    uint16_t len;
    struct pmsg *msg;
};

struct pentry {
    struct node n;
    uint64_t id;
    struct psession *s;
    struct pmsg *msg; /* NULL if none */
    struct pentry *prev, *next;
    uint8_t state;
    bool dup;
    uint16_t packet_id;
};

struct index {
    struct hmap sessions, msgs, retained, entries;
    uint64_t live_bytes;
    uint64_t max_msg_id, max_entry_id;
    bool deferring;        /* a compaction holds pointers to nodes */
    struct node *graveyard;
};

static void node_set(struct index *x, struct node *n, struct loc loc)
{
    x->live_bytes += loc.len;
    x->live_bytes -= n->loc.len;
    n->loc = loc;
}

static void *node_new(struct index *x, size_t size, enum kind kind, struct loc loc)
{
    struct node *n = mem_calloc(1, size);
    n->kind = (uint8_t)kind;
    node_set(x, n, loc);
    return n;
}

/* The node's owned members are already freed; the node itself waits for
 * the compaction to end if one is running. */
static void node_drop(struct index *x, struct node *n)
{
    x->live_bytes -= n->loc.len;
    if (x->deferring) {
        n->dead = true;
        n->grave = x->graveyard;
        x->graveyard = n;
    } else {
        mem_free(n);
    }
}

static void msg_unref(struct index *x, struct pmsg *m)
{
    if (m && --m->refs == 0) {
        hmap_del(&x->msgs, &m->id, sizeof m->id);
        node_drop(x, &m->n);
    }
}

static void entry_drop(struct index *x, struct pentry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        e->s->entries = e->next;
    if (e->next)
        e->next->prev = e->prev;
    hmap_del(&x->entries, &e->id, sizeof e->id);
    msg_unref(x, e->msg);
    node_drop(x, &e->n);
}

static void sub_drop(struct index *x, struct psession *s, struct psub *sub)
{
    hmap_del(&s->subs, sub->filter, sub->len);
    mem_free(sub->filter);
    node_drop(x, &sub->n);
}

static void session_drop(struct index *x, struct psession *s)
{
    struct hmap_slot *slot;
    size_t it = 0;
    while ((slot = hmap_next(&s->subs, &it)))
        sub_drop(x, s, slot->val);
    hmap_free(&s->subs);
    while (s->entries)
        entry_drop(x, s->entries);
    hmap_del(&x->sessions, s->id, s->len);
    mem_free(s->id);
    node_drop(x, &s->n);
}

static void retain_drop(struct index *x, struct pretain *r)
{
    hmap_del(&x->retained, r->topic, r->len);
    msg_unref(x, r->msg);
    mem_free(r->topic);
    node_drop(x, &r->n);
}

static struct psession *session_find(struct index *x, struct plog_bytes id)
{
    return hmap_get(&x->sessions, id.p, id.len);
}

static struct pmsg *msg_find(struct index *x, uint64_t id)
{
    return hmap_get(&x->msgs, &id, sizeof id);
}

/* Ids any record names are never assigned again, also when the record
 * that stored the object was lost to damage. */
static void ids_seen(struct index *x, const struct plog_rec *r)
{
    uint64_t msg = 0, entry = 0;
    if (r->type == PLOG_MSG)
        msg = r->msg.id;
    else if (r->type == PLOG_RETAIN)
        msg = r->retain.msg_id;
    else if (r->type >= PLOG_ENTRY && r->type <= PLOG_ENTRY_DEL)
        entry = r->entry.id, msg = r->type == PLOG_ENTRY ? r->entry.msg_id : 0;
    if (msg > x->max_msg_id)
        x->max_msg_id = msg;
    if (entry > x->max_entry_id)
        x->max_entry_id = entry;
}

/* Applies one record at loc to the index. Records that refer to objects
 * the index does not hold are ignored: after damage, that is what makes a
 * record whose object was lost harmless. */
static void index_apply(struct index *x, const struct plog_rec *r, struct loc loc)
{
    ids_seen(x, r);
    switch (r->type) {
    case PLOG_SESSION: {
        struct psession *s = session_find(x, r->session.client_id);
        if (s) {
            node_set(x, &s->n, loc);
            break;
        }
        s = node_new(x, sizeof *s, K_SESSION, loc);
        s->id = (uint8_t *)mem_strndup(r->session.client_id.p, r->session.client_id.len);
        s->len = (uint16_t)r->session.client_id.len;
        hmap_put(&x->sessions, s->id, s->len, s);
        break;
    }
    case PLOG_SESSION_DEL: {
        struct psession *s = session_find(x, r->session.client_id);
        if (s)
            session_drop(x, s);
        break;
    }
    case PLOG_SUB:
    case PLOG_SUB_DEL: {
        struct psession *s = session_find(x, r->sub.client_id);
        if (!s)
            break;
        struct psub *sub = hmap_get(&s->subs, r->sub.filter.p, r->sub.filter.len);
        if (r->type == PLOG_SUB_DEL) {
            if (sub)
                sub_drop(x, s, sub);
        } else if (sub) {
            node_set(x, &sub->n, loc);
        } else {
            sub = node_new(x, sizeof *sub, K_SUB, loc);
            sub->filter = (uint8_t *)mem_strndup(r->sub.filter.p, r->sub.filter.len);
            sub->len = (uint16_t)r->sub.filter.len;
            hmap_put(&s->subs, sub->filter, sub->len, sub);
        }
        break;
    }
    case PLOG_MSG: {
        struct pmsg *m = msg_find(x, r->msg.id);
        if (m) {
            node_set(x, &m->n, loc);
            break;
        }
        m = node_new(x, sizeof *m, K_MSG, loc);
        m->id = r->msg.id;
        hmap_put(&x->msgs, &m->id, sizeof m->id, m);
        break;
    }
    case PLOG_RETAIN:
    case PLOG_RETAIN_CLEAR: {
        struct pretain *old = hmap_get(&x->retained, r->retain.topic.p, r->retain.topic.len);
        struct pmsg *m = r->type == PLOG_RETAIN ? msg_find(x, r->retain.msg_id) : NULL;
        if (m)
            m->refs++; /* before dropping old, which may hold the same message */
        if (old)
            retain_drop(x, old);
        if (!m)
            break;
        struct pretain *t = node_new(x, sizeof *t, K_RETAIN, loc);
        t->topic = (uint8_t *)mem_strndup(r->retain.topic.p, r->retain.topic.len);
        t->len = (uint16_t)r->retain.topic.len;
        t->msg = m;
        hmap_put(&x->retained, t->topic, t->len, t);
        break;
    }
    case PLOG_ENTRY: {
        struct psession *s = session_find(x, r->entry.client_id);
        struct pmsg *m = msg_find(x, r->entry.msg_id);
        if (!s || (r->entry.msg_id && !m))
            break;
        struct pentry *old = hmap_get(&x->entries, &r->entry.id, sizeof r->entry.id);
        if (m)
            m->refs++;
        if (old)
            entry_drop(x, old);
        struct pentry *e = node_new(x, sizeof *e, K_ENTRY, loc);
        e->id = r->entry.id;
        e->s = s;
        e->msg = m;
        e->state = r->entry.state;
        e->dup = r->entry.dup;
        e->packet_id = r->entry.packet_id;
        e->next = s->entries;
        if (s->entries)
            s->entries->prev = e;
        s->entries = e;
        hmap_put(&x->entries, &e->id, sizeof e->id, e);
        break;
    }
    case PLOG_ENTRY_STATE:
    case PLOG_ENTRY_DEL: {
        struct pentry *e = hmap_get(&x->entries, &r->entry.id, sizeof r->entry.id);
        if (!e)
            break;
        if (r->type == PLOG_ENTRY_DEL) {
            entry_drop(x, e);
        } else {
            e->state = r->entry.state;
            e->dup = r->entry.dup;
            e->packet_id = r->entry.packet_id;
        }
        break;
    }
    }
}

static void msg_drop_if_unreferenced(struct index *x, struct pmsg *m)
{
    if (m && m->refs == 0) {
        m->refs = 1;
        msg_unref(x, m);
    }
}

static void index_free(struct index *x)
{
    struct hmap_slot *slot;
    size_t it = 0;
    x->deferring = false;
    while ((slot = hmap_next(&x->sessions, &it)))
        session_drop(x, slot->val);
    it = 0;
    while ((slot = hmap_next(&x->retained, &it)))
        retain_drop(x, slot->val);
    it = 0;
    while ((slot = hmap_next(&x->msgs, &it)))
        msg_drop_if_unreferenced(x, slot->val);
    hmap_free(&x->sessions);
    hmap_free(&x->msgs);
    hmap_free(&x->retained);
    hmap_free(&x->entries);
}

/* ---- live records: what recovery delivers and compaction copies ---------- */

/* One live record: where it is now, and for an entry, the state to give it
 * (its latest PLOG_ENTRY_STATE folded in). */
struct item {
    struct node *node;
    struct loc loc;
    uint64_t new_off; /* set by compaction, with the size of the copy */
    uint32_t new_len;
    uint8_t kind, state;
    bool dup;
    uint16_t packet_id;
};

static void items_add(struct item **items, size_t *n, size_t *cap, struct node *node)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        *items = mem_realloc(*items, *cap * sizeof **items);
    }
    struct item *it = &(*items)[(*n)++];
    *it = (struct item){.node = node, .loc = node->loc, .kind = node->kind};
    if (node->kind == K_ENTRY) {
        const struct pentry *e = (const struct pentry *)node;
        it->state = e->state;
        it->dup = e->dup;
        it->packet_id = e->packet_id;
    }
}

/* Every live record, unsorted (see items_sort). */
static struct item *items_collect(const struct index *x, size_t *n)
{
    const struct hmap *maps[] = {&x->msgs, &x->retained, &x->entries};
    struct item *items = NULL;
    size_t cap = 0;
    struct hmap_slot *slot, *sub;
    size_t it = 0, jt;

    *n = 0;
    while ((slot = hmap_next(&x->sessions, &it))) {
        const struct psession *s = slot->val;
        items_add(&items, n, &cap, slot->val);
        jt = 0;
        while ((sub = hmap_next(&s->subs, &jt)))
            items_add(&items, n, &cap, sub->val);
    }
    for (size_t m = 0; m < sizeof maps / sizeof maps[0]; m++) {
        it = 0;
        while ((slot = hmap_next(maps[m], &it)))
            items_add(&items, n, &cap, slot->val);
    }
    return items;
}

static int item_cmp(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->loc.file != y->loc.file)
        return x->loc.file < y->loc.file ? -1 : 1;
    return x->loc.off < y->loc.off ? -1 : x->loc.off > y->loc.off;
}

/* Referenced objects first, and within a kind, log order. */
static void items_sort(struct item *items, size_t n)
{
    if (n)
        qsort(items, n, sizeof *items, item_cmp);
}

/* ---- files --------------------------------------------------------------- */

static void file_name(char *out, uint32_t number, const char *suffix)
{
    snprintf(out, NAME_MAX_LEN, "log.%010u%s", number, suffix);
}

/* Maps log.<number> and reads its format (map_format). */
static int map_file(int dirfd, uint32_t number, uint64_t log_id, struct mapped *m)
{
    char name[NAME_MAX_LEN];
    struct stat st;
    file_name(name, number, "");
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    *m = (struct mapped){.number = number};
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            m->p = p;
            m->size = (size_t)st.st_size;
        }
    }
    close(fd);
    map_format(m, log_id);
    return 0;
}

static void unmap_files(struct mapped *maps, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (maps[i].p)
            munmap((void *)maps[i].p, maps[i].size);
}

static const struct mapped *mapped_find(const struct mapped *maps, size_t n, uint32_t number)
{
    for (size_t i = 0; i < n; i++)
        if (maps[i].number == number)
            return &maps[i];
    return NULL;
}

/* Reads the item's record from the mapped files and folds an entry's
 * current state in. False if it no longer verifies. */
static bool item_read(const struct mapped *maps, size_t nmaps, const struct item *it,
                      struct plog_rec *r)
{
    const struct mapped *m = mapped_find(maps, nmaps, it->loc.file);
    const char *why = NULL;
    size_t size;
    if (!m || it->loc.off >= m->size || read_record(m, it->loc.off, r, &size, &why) != REC_OK ||
        size != it->loc.len)
        return false;
    if (r->type == PLOG_ENTRY) {
        r->entry.state = it->state;
        r->entry.dup = it->dup;
        r->entry.packet_id = it->packet_id;
    }
    return true;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Creates log.<number><suffix> with its header, synced. fd or -1. */
static int create_file(int dirfd, uint32_t number, const char *suffix, uint32_t flags,
                       uint64_t log_id)
{
    char name[NAME_MAX_LEN];
    uint8_t h[FILE_HDR];
    file_name(name, number, suffix);
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    header_encode(h, number, flags, log_id);
    if (write_all(fd, h, sizeof h) < 0 || fdatasync(fd) < 0) {
        close(fd);
        unlinkat(dirfd, name, 0);
        return -1;
    }
    return fd;
}

/* ---- compaction ------------------------------------------------------------ */

enum { COMPACT_RUNNING, COMPACT_DONE, COMPACT_FAILED, COMPACT_STOPPED };

/* What the compaction thread owns while it runs: only files that no longer
 * change, and its own copy of where the live records are. */
struct compaction {
    pthread_t thread;
    int dirfd;
    uint32_t *old;      /* files the snapshot replaces, ascending */
    size_t nold;
    uint32_t number;    /* of the snapshot */
    uint64_t log_id;
    struct item *items;
    size_t nitems;
    uint64_t size;      /* of the snapshot, when done */
    uint8_t stop;       /* enum plog_compact_step, tests only */
    atomic_int status;
};

/* Writes the snapshot as log.N.tmp; returns 0, or -1 (and logs). */
static int compact_write(struct compaction *c, const struct mapped *maps, int fd)
{
    struct buf out = {0};
    uint64_t off = FILE_HDR;
    uint64_t key = file_key(c->log_id, c->number);
    int rc = 0;

    for (size_t i = 0; i < c->nitems && rc == 0; i++) {
        struct item *it = &c->items[i];
        struct plog_rec r;
        if (!item_read(maps, c->nold, it, &r)) {
            log_error("persistence: compaction: record in log.%010u at %llu no longer verifies",
                      it->loc.file, (unsigned long long)it->loc.off);
            rc = -1;
            break;
        }
        size_t start = out.len;
        frame_record(&out, &r, key, off);
        it->new_off = off + start;
        it->new_len = (uint32_t)(out.len - start);
        if (out.len >= WRITE_CHUNK || i + 1 == c->nitems ||
            (c->stop == PLOG_STEP_PARTIAL_SNAPSHOT && i == c->nitems / 2)) {
            rc = write_all(fd, out.p, out.len);
            off += out.len;
            out.len = 0;
            if (c->stop == PLOG_STEP_PARTIAL_SNAPSHOT && i == c->nitems / 2)
                break;
        }
    }
    mem_free(out.p);
    c->size = off;
    return rc;
}

static bool compact_stop_at(struct compaction *c, enum plog_compact_step step)
{
    if (c->stop != step)
        return false;
    atomic_store(&c->status, COMPACT_STOPPED);
    return true;
}

static void *compact_thread(void *arg)
{
    struct compaction *c = arg;
    struct mapped *maps = mem_calloc(c->nold ? c->nold : 1, sizeof *maps);
    char tmp[NAME_MAX_LEN], name[NAME_MAX_LEN];
    size_t nmaps = 0;
    int status = COMPACT_FAILED;

    items_sort(c->items, c->nitems);
    file_name(tmp, c->number, ".tmp");
    file_name(name, c->number, "");
    for (; nmaps < c->nold; nmaps++)
        if (map_file(c->dirfd, c->old[nmaps], c->log_id, &maps[nmaps]) < 0)
            goto out;
    int fd = create_file(c->dirfd, c->number, ".tmp", FLAG_BASE, c->log_id);
    if (fd < 0)
        goto out;
    if (compact_write(c, maps, fd) < 0 || compact_stop_at(c, PLOG_STEP_PARTIAL_SNAPSHOT) ||
        fdatasync(fd) < 0 || compact_stop_at(c, PLOG_STEP_SNAPSHOT_SYNCED)) {
        close(fd);
        goto out;
    }
    close(fd);
    if (renameat(c->dirfd, tmp, c->dirfd, name) < 0 || compact_stop_at(c, PLOG_STEP_RENAMED) ||
        fsync(c->dirfd) < 0 || compact_stop_at(c, PLOG_STEP_DIR_SYNCED))
        goto out;
    status = COMPACT_DONE;
    for (size_t i = 0; i < c->nold; i++) {
        file_name(name, c->old[i], "");
        unlinkat(c->dirfd, name, 0);
        if (i == 0 && compact_stop_at(c, PLOG_STEP_ONE_DELETED))
            goto out;
    }
out:
    unmap_files(maps, nmaps);
    mem_free(maps);
    if (status == COMPACT_FAILED && atomic_load(&c->status) != COMPACT_STOPPED) {
        log_error("persistence: compaction into %s failed: %s", name, strerror(errno));
        unlinkat(c->dirfd, tmp, 0);
    }
    int expected = COMPACT_RUNNING;
    atomic_compare_exchange_strong(&c->status, &expected, status);
    return NULL;
}

/* ---- the log --------------------------------------------------------------- */

struct file_size {
    uint32_t number;
    uint64_t size;
};

struct plog {
    struct plog_options opt;
    int dirfd, lockfd;
    int fd;                /* the file being appended to */
    uint32_t number;       /* its number */
    uint64_t key;          /* of its records (file_key) */
    uint64_t size;         /* its size on disk */
    uint64_t log_id;       /* in every header this log writes */
    struct file_size *files; /* every file of the log, ascending, the current one last */
    size_t nfiles;
    struct index x;
    struct buf batch;
    uint64_t *fresh;       /* messages stored in this batch */
    size_t nfresh, fresh_cap;
    uint64_t batch_seq, written_seq, committed_seq;
    bool batch_gates;      /* the batch holds a record that is not lazy */
    bool unsynced;         /* written since the last sync */
    bool unsynced_gates;   /* ... and not all lazy: the next commit syncs */
    uint64_t last_sync_ms, syncs;
    struct compaction *compaction;
    /* After a failed compaction, the next waits until the log has grown
     * this large, so that a full disk is not hit once a second. */
    uint64_t compact_retry_bytes;
    /* Writes and syncs failed in a row (a full disk is retried at every
     * wake-up of the loop), and when that was last logged. */
    uint64_t failures, failure_logged_ms;
};

static void files_add(struct plog *l, uint32_t number, uint64_t size)
{
    l->files = mem_realloc(l->files, (l->nfiles + 1) * sizeof *l->files);
    l->files[l->nfiles++] = (struct file_size){number, size};
}

uint64_t plog_disk_bytes(const struct plog *l)
{
    uint64_t total = l->size;
    for (size_t i = 0; i + 1 < l->nfiles; i++)
        total += l->files[i].size;
    return total;
}

uint64_t plog_live_bytes(const struct plog *l) { return l->x.live_bytes; }
uint64_t plog_batch(const struct plog *l) { return l->batch_seq; }
uint64_t plog_committed(const struct plog *l) { return l->committed_seq; }
uint64_t plog_syncs(const struct plog *l) { return l->syncs; }

/* Starts a new file to append to, numbered number. */
static int open_segment(struct plog *l, uint32_t number)
{
    int fd = create_file(l->dirfd, number, "", 0, l->log_id);
    if (fd < 0 || fsync(l->dirfd) < 0) {
        log_error("persistence: cannot create log.%010u: %s", number, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (l->fd >= 0) {
        l->files[l->nfiles - 1].size = l->size;
        close(l->fd);
    }
    l->fd = fd;
    l->number = number;
    l->key = file_key(l->log_id, number);
    l->size = FILE_HDR;
    files_add(l, number, FILE_HDR);
    return 0;
}

uint64_t plog_append(struct plog *l, const struct plog_rec *rec)
{
    struct plog_rec r = *rec;
    uint64_t id = 0;

    if (r.type == PLOG_MSG) {
        id = r.msg.id = ++l->x.max_msg_id;
        if (l->nfresh == l->fresh_cap) {
            l->fresh_cap = l->fresh_cap ? l->fresh_cap * 2 : 64;
            l->fresh = mem_realloc(l->fresh, l->fresh_cap * sizeof *l->fresh);
        }
        l->fresh[l->nfresh++] = id;
    } else if (r.type == PLOG_ENTRY) {
        id = r.entry.id = ++l->x.max_entry_id;
    }
    l->batch_gates |= !r.lazy;
    size_t start = l->batch.len;
    frame_record(&l->batch, &r, l->key, l->size);
    struct loc loc = {l->size + start, l->number, (uint32_t)(l->batch.len - start)};
    index_apply(&l->x, &r, loc);
    return id;
}

/* Logs a failed write or sync of the current file: the first of a run of
 * failures, then one line every 10 s, so that a full disk, retried at
 * every wake-up of the loop, does not flood the log (often on that disk). */
static void log_failure(struct plog *l, const char *what, int err)
{
    uint64_t now = clock_now_ms();
    if (l->failures++ && now - l->failure_logged_ms < 10000)
        return;
    l->failure_logged_ms = now;
    log_error("persistence: %s log.%010u failed: %s (%llu attempts; acknowledgements wait, "
              "retrying)",
              what, l->number, strerror(err), (unsigned long long)l->failures);
}

static void log_recovered(struct plog *l)
{
    if (!l->failures)
        return;
    log_info("persistence: log.%010u committed again after %llu failed attempts", l->number,
             (unsigned long long)l->failures);
    l->failures = 0;
}

/* Makes everything written durable. 0, or -1 (logged). */
static int log_sync(struct plog *l, uint64_t now)
{
    if (fdatasync(l->fd) < 0) {
        log_failure(l, "fdatasync of", errno);
        return -1;
    }
    l->syncs++;
    l->unsynced = l->unsynced_gates = false;
    l->last_sync_ms = now;
    l->committed_seq = l->written_seq;
    return 0;
}

int plog_commit(struct plog *l)
{
    if (l->batch.len) {
        if (write_all(l->fd, l->batch.p, l->batch.len) < 0) {
            log_failure(l, "write to", errno);
            /* The file offset too: a retry written past a partial write
             * would leave a hole, which recovery takes for damage. */
            if (ftruncate(l->fd, (off_t)l->size) < 0 ||
                lseek(l->fd, (off_t)l->size, SEEK_SET) < 0)
                log_error("persistence: cannot cut log.%010u back: %s", l->number,
                          strerror(errno));
            return -1;
        }
        l->size += l->batch.len;
        l->batch.len = 0;
        l->written_seq = l->batch_seq++;
        l->unsynced = true;
        l->unsynced_gates |= l->batch_gates;
        l->batch_gates = false;
        for (size_t i = 0; i < l->nfresh; i++)
            msg_drop_if_unreferenced(&l->x, msg_find(&l->x, l->fresh[i]));
        l->nfresh = 0;
        /* Written is enough for every batch with a periodic sync, and for
         * lazy ones unless an earlier batch still waits for its sync. */
        if (l->opt.sync_interval_ms || !l->unsynced_gates)
            l->committed_seq = l->written_seq;
    }
    if (l->unsynced) {
        uint64_t now = clock_now_ms();
        bool due = l->opt.sync_interval_ms ? now - l->last_sync_ms >= l->opt.sync_interval_ms
                                           : l->unsynced_gates;
        if (due && log_sync(l, now) < 0)
            return -1;
    }
    log_recovered(l);
    return 0;
}

int plog_compact_start(struct plog *l)
{
    /* The current file's records are synced before the next file's can
     * be: after a power cut, recovery must find a prefix of the history,
     * not a later file's records without an earlier one's. */
    if (l->compaction || plog_commit(l) < 0 || (l->unsynced && log_sync(l, clock_now_ms()) < 0))
        return -1;
    struct compaction *c = mem_calloc(1, sizeof *c);
    uint32_t old_number = l->number;
    size_t nold = l->nfiles;
    if (open_segment(l, old_number + 2) < 0) {
        mem_free(c);
        return -1;
    }
    c->dirfd = l->dirfd;
    c->nold = nold;
    c->old = mem_alloc(nold * sizeof *c->old);
    for (size_t i = 0; i < nold; i++)
        c->old[i] = l->files[i].number;
    c->number = old_number + 1;
    c->log_id = l->log_id;
    c->items = items_collect(&l->x, &c->nitems);
    c->stop = l->opt.test_compact_stop;
    atomic_init(&c->status, COMPACT_RUNNING);
    l->x.deferring = true;
    if (pthread_create(&c->thread, NULL, compact_thread, c) != 0) {
        log_error("persistence: cannot start the compaction thread");
        l->x.deferring = false;
        mem_free(c->items);
        mem_free(c->old);
        mem_free(c);
        return -1;
    }
    l->compaction = c;
    log_info("persistence: compacting %zu files (%llu live of %llu bytes) into log.%010u", nold,
             (unsigned long long)l->x.live_bytes, (unsigned long long)plog_disk_bytes(l),
             c->number);
    return 0;
}

/* Joins the thread and, if the snapshot is in place, points every record
 * it copied that is still current at its copy. */
static int compact_finish(struct plog *l)
{
    struct compaction *c = l->compaction;
    pthread_join(c->thread, NULL);
    int status = atomic_load(&c->status);
    if (status == COMPACT_DONE) {
        for (size_t i = 0; i < c->nitems; i++) {
            struct item *it = &c->items[i];
            struct node *n = it->node;
            if (!n->dead && n->loc.file == it->loc.file && n->loc.off == it->loc.off)
                node_set(&l->x, n, (struct loc){it->new_off, c->number, it->new_len});
        }
        /* The snapshot takes the old files' place, before the current one. */
        size_t keep = l->nfiles - c->nold;
        memmove(l->files + 1, l->files + c->nold, keep * sizeof *l->files);
        l->files[0] = (struct file_size){c->number, c->size};
        l->nfiles = keep + 1;
        log_info("persistence: compaction done: log.%010u, %llu bytes", c->number,
                 (unsigned long long)c->size);
    }
    while (l->x.graveyard) {
        struct node *n = l->x.graveyard;
        l->x.graveyard = n->grave;
        mem_free(n);
    }
    l->x.deferring = false;
    mem_free(c->items);
    mem_free(c->old);
    mem_free(c);
    l->compaction = NULL;
    if (status != COMPACT_DONE)
        l->compact_retry_bytes = plog_disk_bytes(l) + l->opt.compact_min_bytes;
    return status == COMPACT_DONE ? 0 : -1;
}

int plog_compact_wait(struct plog *l)
{
    return l->compaction ? compact_finish(l) : 0;
}

void plog_maintain(struct plog *l)
{
    if (l->unsynced && !l->opt.sync_interval_ms)
        log_sync(l, clock_now_ms()); /* lazy records; a failure is logged, and retried */
    if (l->compaction) {
        if (atomic_load(&l->compaction->status) != COMPACT_RUNNING)
            compact_finish(l);
        return;
    }
    uint64_t disk = plog_disk_bytes(l);
    if (disk >= l->opt.compact_min_bytes && disk >= l->compact_retry_bytes &&
        l->x.live_bytes * 100 < disk * l->opt.compact_live_percent &&
        plog_compact_start(l) < 0)
        l->compact_retry_bytes = disk + l->opt.compact_min_bytes;
}

void plog_close(struct plog *l)
{
    if (!l)
        return;
    plog_commit(l);
    if (l->unsynced)
        log_sync(l, clock_now_ms());
    plog_compact_wait(l);
    index_free(&l->x);
    close(l->fd);
    close(l->lockfd);
    close(l->dirfd);
    mem_free(l->files);
    mem_free(l->batch.p);
    mem_free(l->fresh);
    mem_free(l);
}

/* ---- recovery -------------------------------------------------------------- */

/* A range of a file in which no record verifies: from where one was due to
 * the next intact record or the end of the file. */
struct damage {
    size_t file;       /* index in the mapped files */
    uint64_t start, end;
    bool torn;         /* the last file's unfinished last write, not damage */
    const char *why;
};

struct damages {
    struct damage *v;
    size_t n, cap;
};

static void damage_add(struct damages *d, struct damage dmg)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 8;
        d->v = mem_realloc(d->v, d->cap * sizeof *d->v);
    }
    d->v[d->n++] = dmg;
}

static int number_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Lists the log files (deleting leftover .tmp files) and the highest
 * number any name in the directory uses, aside files included. */
static uint32_t *list_files(int dirfd, size_t *n, uint32_t *max_seen)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    uint32_t *numbers = NULL;
    size_t cap = 0;
    struct dirent *e;

    *n = 0;
    *max_seen = 0;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    while ((e = readdir(d))) {
        unsigned number;
        int end = 0;
        if (strncmp(e->d_name, "log.", 4) != 0 || strspn(e->d_name + 4, "0123456789") != 10 ||
            sscanf(e->d_name + 4, "%10u%n", &number, &end) != 1)
            continue;
        end += 4;
        if (number > *max_seen)
            *max_seen = number;
        if (strcmp(e->d_name + end, ".tmp") == 0) {
            unlinkat(dirfd, e->d_name, 0);
        } else if (e->d_name[end] == '\0') {
            if (*n == cap) {
                cap = cap ? cap * 2 : 16;
                numbers = mem_realloc(numbers, cap * sizeof *numbers);
            }
            numbers[(*n)++] = number;
        }
    }
    closedir(d);
    if (*n)
        qsort(numbers, *n, sizeof *numbers, number_cmp);
    return numbers;
}

/* A file too short for a header, holding the start of one: a crash while
 * creating it. */
static bool header_unfinished(const struct mapped *m)
{
    return m->size < FILE_HDR && m->flags < 0 &&
           (m->size == 0 || memcmp(m->p, FILE_MAGIC, m->size < 8 ? m->size : 8) == 0);
}

/* Replays one mapped file (index i) into the index, recording the ranges
 * it skips: at a record that does not verify, recovery goes on at the next
 * one that does. Only in the last file, and only if nothing after it
 * verifies, is an unfinished record the end of the log (torn). */
static void replay_file(struct plog *l, const struct mapped *m, size_t i, bool last,
                        struct damages *d, struct plog_report *rep)
{
    uint64_t off = m->hdr;
    const char *why = "bad file header";

    if ((last || m->size == 0) && header_unfinished(m)) {
        damage_add(d, (struct damage){i, 0, m->size, true, "unfinished file header"});
        return;
    }
    if (m->flags < 0) {
        off = resync(m, FILE_HDR);
        damage_add(d, (struct damage){i, 0, off, false, why});
    }
    while (off < m->size) {
        struct plog_rec r;
        size_t size;
        enum rec_status st = read_record(m, off, &r, &size, &why);
        if (st == REC_OK) {
            index_apply(&l->x, &r, (struct loc){off, m->number, (uint32_t)size});
            rep->records++;
            off += size;
            continue;
        }
        uint64_t next = resync(m, off + 1);
        bool torn = last && st == REC_TORN && next == m->size;
        if (st == REC_TORN && !torn)
            why = "record cut short";
        damage_add(d, (struct damage){i, off, next, torn, torn ? "unfinished record" : why});
        off = next;
    }
}

/* Copies [start, end) of a damaged file to a new file beside it, named in
 * aside; *seq numbers the names, from one call to the next. 0 or -1. */
static int save_aside(int dirfd, const struct mapped *m, uint64_t start, uint64_t end,
                      char *aside, unsigned *seq)
{
    char suffix[32];
    for (int attempt = 0; attempt < 1000; attempt++) {
        snprintf(suffix, sizeof suffix, ".corrupt-%lld-%u", (long long)time(NULL), (*seq)++);
        file_name(aside, m->number, suffix);
        int fd = openat(dirfd, aside, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return -1;
        int rc = write_all(fd, m->p + start, end - start) < 0 || fsync(fd) < 0 ? -1 : 0;
        close(fd);
        return rc;
    }
    return -1;
}

static int truncate_at(int dirfd, const char *name, uint64_t size)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, (off_t)size) < 0 || fsync(fd) < 0 ? -1 : 0;
    close(fd);
    return rc;
}

/* Deals with one skipped range: a damaged one is saved aside and logged, a
 * torn tail only noted; one that runs to the end of its file is cut off
 * (the whole file, if no record of it is left), one followed by intact
 * records stays until the rewrite. Returns the file's new size. */
static uint64_t repair(struct plog *l, const struct mapped *m, const struct damage *d,
                       unsigned *seq, struct plog_report *rep)
{
    char name[NAME_MAX_LEN], aside[NAME_MAX_LEN] = "";
    uint64_t len = d->end - d->start;

    file_name(name, m->number, "");
    if (!rep->damaged_ranges && !rep->torn) {
        rep->damaged_file = m->number;
        rep->damaged_offset = d->start;
        snprintf(rep->reason, sizeof rep->reason, "%s", d->why);
    }
    rep->dropped_bytes += len;
    if (d->torn) {
        rep->torn = true;
        log_info("persistence: %s ends in an %s at byte %llu (%llu bytes, a write cut short by "
                 "a crash): cut off", name, d->why, (unsigned long long)d->start,
                 (unsigned long long)len);
    } else {
        if (save_aside(l->dirfd, m, d->start, d->end, aside, seq) < 0) {
            log_error("persistence: cannot save bytes %llu..%llu of %s aside: %s",
                      (unsigned long long)d->start, (unsigned long long)d->end - 1, name,
                      strerror(errno));
            snprintf(aside, sizeof aside, "nowhere (see above)");
        }
        if (!rep->damaged_ranges++)
            snprintf(rep->aside, sizeof rep->aside, "%s", aside);
        rep->damaged_bytes += len;
        /* A disk that damaged thousands of places must not flood the log:
         * the summary (persist_load.c) counts them all. */
        if (rep->damaged_ranges <= LOGGED_RANGES)
            log_warn("persistence: %s bytes %llu..%llu damaged (%s): %llu bytes skipped, saved as "
                     "%s; recovery went on %s", name, (unsigned long long)d->start,
                     (unsigned long long)d->end - 1, d->why, (unsigned long long)len, aside,
                     d->end < m->size ? "at the next intact record" : "with the next file");
        else if (rep->damaged_ranges == LOGGED_RANGES + 1)
            log_warn("persistence: more damaged ranges: saved aside, not logged one by one");
    }
    if (d->end < m->size) {
        rep->rewrite = true;
        return m->size;
    }
    if (d->start == 0)
        unlinkat(l->dirfd, name, 0);
    else if (truncate_at(l->dirfd, name, d->start) < 0)
        log_error("persistence: cannot truncate %s: %s", name, strerror(errno));
    return d->start;
}

static void deliver(struct plog *l, const struct mapped *maps, size_t nmaps, plog_apply_fn apply,
                    void *ctx, struct plog_report *rep)
{
    size_t n;
    struct item *items = items_collect(&l->x, &n);
    uint32_t *counts[] = {&rep->sessions, &rep->msgs, &rep->retained, &rep->subs, &rep->entries};

    items_sort(items, n);
    for (size_t i = 0; i < n; i++) {
        struct plog_rec r;
        /* Each was verified moments ago, from the same mapping. */
        if (item_read(maps, nmaps, &items[i], &r)) {
            (*counts[items[i].kind])++;
            apply(ctx, &r);
        }
    }
    mem_free(items);
}

/* The log id of the newest file whose format-2 header verifies, or a new
 * random one. */
static uint64_t find_log_id(struct mapped *maps, size_t n)
{
    uint64_t id = 0;
    for (size_t i = n; i-- > 0;) {
        header_read(&maps[i], &id);
        if (maps[i].flags >= 0 && maps[i].version == FILE_VERSION)
            return id;
    }
    if (getrandom(&id, sizeof id, 0) != sizeof id)
        id = (uint64_t)time(NULL) << 32 ^ (uint64_t)getpid() ^ clock_now_ms();
    return id;
}

/* Replays the files from the latest snapshot on, delivers the live state,
 * then deals with what it skipped and deletes the files the snapshot
 * replaced. */
static void recover(struct plog *l, uint32_t *numbers, size_t n, plog_apply_fn apply, void *ctx,
                    struct plog_report *rep)
{
    struct mapped *maps = mem_calloc(n ? n : 1, sizeof *maps);
    struct damages dmg = {0};
    size_t nmaps = 0, base = 0;
    char name[NAME_MAX_LEN];

    for (size_t i = 0; i < n; i++)
        if (map_file(l->dirfd, numbers[i], 0, &maps[nmaps]) == 0)
            nmaps++;
    l->log_id = find_log_id(maps, nmaps);
    for (size_t i = 0; i < nmaps; i++)
        map_format(&maps[i], l->log_id);
    for (size_t i = nmaps; i-- > 0;) {
        if (maps[i].flags >= 0 && (maps[i].flags & FLAG_BASE)) {
            base = i;
            break;
        }
    }
    for (size_t i = base; i < nmaps; i++) {
        replay_file(l, &maps[i], i, i + 1 == nmaps, &dmg, rep);
        rep->files++;
        rep->v1_files += maps[i].version == 1;
    }
    rep->rewrite = rep->v1_files > 0;
    struct hmap_slot *slot;
    size_t it = 0;
    while ((slot = hmap_next(&l->x.msgs, &it)))
        msg_drop_if_unreferenced(&l->x, slot->val);
    deliver(l, maps, nmaps, apply, ctx, rep);
    uint64_t *sizes = mem_alloc((nmaps ? nmaps : 1) * sizeof *sizes);
    unsigned seq = 0;
    for (size_t i = 0; i < nmaps; i++)
        sizes[i] = maps[i].size;
    for (size_t k = 0; k < dmg.n; k++)
        sizes[dmg.v[k].file] = repair(l, &maps[dmg.v[k].file], &dmg.v[k], &seq, rep);
    if (dmg.n && fsync(l->dirfd) < 0)
        log_error("persistence: cannot sync the data directory: %s", strerror(errno));
    for (size_t i = 0; i < nmaps; i++) {
        if (i < base) {
            file_name(name, maps[i].number, "");
            unlinkat(l->dirfd, name, 0);
        } else if (sizes[i] > 0) {
            files_add(l, maps[i].number, sizes[i]);
            rep->bytes += sizes[i];
        }
    }
    mem_free(sizes);
    mem_free(dmg.v);
    unmap_files(maps, nmaps);
    mem_free(maps);
}

struct plog *plog_open(const struct plog_options *opt, plog_apply_fn apply, void *ctx,
                       struct plog_report *rep, char *err, size_t errlen)
{
    struct plog *l = mem_calloc(1, sizeof *l);
    uint32_t max_seen;
    size_t n;

    memset(rep, 0, sizeof *rep);
    l->opt = *opt;
    if (!l->opt.compact_live_percent)
        l->opt.compact_live_percent = 50;
    if (!l->opt.compact_min_bytes)
        l->opt.compact_min_bytes = 4u << 20;
    l->fd = l->lockfd = -1;
    l->batch_seq = 1;
    if (mkdir(opt->dir, 0755) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", opt->dir, strerror(errno));
        goto fail;
    }
    l->dirfd = open(opt->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (l->dirfd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", opt->dir, strerror(errno));
        goto fail;
    }
    l->lockfd = openat(l->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (l->lockfd < 0 || flock(l->lockfd, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, errlen, "cannot lock %s/lock: %s", opt->dir,
                 errno == EWOULDBLOCK ? "another process uses this directory" : strerror(errno));
        goto fail;
    }
    uint32_t *numbers = list_files(l->dirfd, &n, &max_seen);
    recover(l, numbers, n, apply, ctx, rep);
    mem_free(numbers);
    if (open_segment(l, max_seen + 1) < 0) {
        snprintf(err, errlen, "cannot create a log file in %s: %s", opt->dir, strerror(errno));
        goto fail;
    }
    /* Format-1 files and damaged ranges left between intact records are
     * rewritten by a snapshot; until it is done, the next start would find
     * (and report) them again. */
    if (rep->rewrite && plog_compact_start(l) < 0)
        rep->rewrite = false;
    return l;
fail:
    index_free(&l->x);
    if (l->lockfd >= 0)
        close(l->lockfd);
    if (l->dirfd >= 0)
        close(l->dirfd);
    mem_free(l->files);
    mem_free(l);
    return NULL;
}
