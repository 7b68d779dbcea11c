/* fuzz_plog_damage.c - libFuzzer target for recovery past damage (plog.c):
 * the input is a history, written through plog into log files (several
 * files, snapshots among them), and then damage done to those files
 * (flipped bits, overwritten, zeroed or copied ranges, files cut short).
 * Recovery must read every intact record exactly once and nothing else: a
 * record is intact if its bytes are still where they were written (and the
 * log id of its file can be read from some file's header). Checked:
 *   - the count of records recovered is the count of intact records;
 *   - the state delivered is the state of the intact records alone, which
 *     the format-1 reader (which never skips) replays from a conversion;
 *   - every byte of the files is an intact header, an intact record, or in
 *     a skipped range, and the damaged ranges were saved aside whole;
 *   - once the rewrite is done, the next start finds no damage and
 *     delivers the same state.
 *
 * Input: two bytes giving the length H of the history, H bytes of history
 * (ops, each with its operands and payload bytes), then damage ops of five
 * bytes each (kind, file, position 2 bytes, argument).
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../unit/plog_format.h"
#include "../unit/test_dir.h"
#include "broker/plog.h"
#include "core/log.h"
#include "fuzz_check.h"
#include "plog_digest.h"

#define MAXFILES 16
#define MAXREC PF_MAXREC
#define MAXENTRIES 64

static char dir[64], odir[80];

/* ---- the input ------------------------------------------------------------- */

struct input {
    const uint8_t *p, *end;
};

static uint8_t in_byte(struct input *in) { return in->p < in->end ? *in->p++ : 0; }

/* Up to n bytes of input (fewer at its end). */
static struct plog_bytes in_bytes(struct input *in, uint32_t n)
{
    uint32_t left = (uint32_t)(in->end - in->p);
    struct plog_bytes b = {in->p, n < left ? n : left};
    in->p += b.len;
    return b;
}

/* ---- the history ----------------------------------------------------------- */

static const char *const clients[] = {"c0", "c1", "c2", "c3"};
static const char *const topics[] = {"t/0", "t/1", "t/2"};

static struct plog_bytes S(const char *s)
{
    return (struct plog_bytes){(const uint8_t *)s, (uint32_t)strlen(s)};
}

static struct plog *open_log(plog_apply_fn apply, struct plog_report *rep)
{
    struct plog_options opt = {.dir = dir, .compact_min_bytes = 1ull << 40};
    char err[256];
    struct plog *l = plog_open(&opt, apply, NULL, rep, err, sizeof err);
    check(l);
    return l;
}

static void ignore(void *ctx, const struct plog_rec *r) {}

/* Writes the history the input describes through plog. */
static void write_history(struct input *in)
{
    struct plog_report rep;
    struct plog *l = open_log(ignore, &rep);
    uint64_t entries[MAXENTRIES];
    size_t nentries = 0;
    int files = 1;

    for (int ops = 0; in->p < in->end && ops < 300; ops++) {
        uint8_t op = in_byte(in), arg = in_byte(in);
        const char *cid = clients[arg % 4];
        struct plog_rec r = {.lazy = op & 0x80};
        switch (op % 10) {
        case 0:
            r.type = PLOG_SESSION;
            r.session = (struct plog_session){.client_id = S(cid), .expiry = arg, .protocol = 5};
            r.session.has_will = arg & 1;
            r.session.will_topic = S("w");
            r.session.will_payload = in_bytes(in, in_byte(in));
            plog_append(l, &r);
            break;
        case 1:
            r.type = PLOG_SESSION_DEL;
            r.session.client_id = S(cid);
            plog_append(l, &r);
            break;
        case 2:
            r.type = arg & 0x40 ? PLOG_SUB_DEL : PLOG_SUB;
            r.sub = (struct plog_sub){S(cid), S(topics[arg / 4 % 3]), arg & 3, arg};
            plog_append(l, &r);
            break;
        case 3: {
            r.type = PLOG_MSG;
            r.msg = (struct plog_msg){.qos = arg % 3, .topic = S(topics[arg % 3])};
            r.msg.payload = in_bytes(in, (uint32_t)in_byte(in) * (arg & 0x80 ? 8 : 1));
            uint64_t m = plog_append(l, &r);
            if (arg & 0x10) {
                r = (struct plog_rec){.type = PLOG_RETAIN, .retain = {S(topics[arg % 3]), m}};
                plog_append(l, &r);
            }
            r = (struct plog_rec){.type = PLOG_ENTRY};
            r.entry = (struct plog_entry){.client_id = S(clients[arg / 4 % 4]), .msg_id = m,
                                          .qos = 1};
            uint64_t e = plog_append(l, &r);
            if (nentries < MAXENTRIES)
                entries[nentries++] = e;
            break;
        }
        case 4:
        case 5:
            if (!nentries)
                break;
            r.type = op % 10 == 4 ? PLOG_ENTRY_STATE : PLOG_ENTRY_DEL;
            r.entry = (struct plog_entry){.id = entries[arg % nentries], .state = arg % 4,
                                          .packet_id = arg};
            plog_append(l, &r);
            break;
        case 6:
            r.type = PLOG_RETAIN_CLEAR;
            r.retain.topic = S(topics[arg % 3]);
            plog_append(l, &r);
            break;
        case 7:
            check(plog_commit(l) == 0);
            break;
        case 8:
            if (files < MAXFILES - 2) {
                plog_close(l);
                l = open_log(ignore, &rep);
                files++;
            }
            break;
        case 9:
            if (files < MAXFILES - 2 && plog_compact_start(l) == 0) {
                check(plog_compact_wait(l) == 0);
                files += 2;
            }
            break;
        }
    }
    plog_close(l);
}

/* ---- the files, as written and as damaged ---------------------------------- */

static struct pf_file lf[MAXFILES];
static size_t nlf;

static void path_of(char *out, const char *d, unsigned number)
{
    snprintf(out, 128, "%s/log.%010u", d, number);
}

static int number_cmp(const void *a, const void *b)
{
    const struct pf_file *x = a, *y = b;
    return x->number < y->number ? -1 : x->number > y->number;
}

/* Reads the log files plog left (numbers with gaps, after compactions). */
static void read_files(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[128];
    unsigned number;
    check(d);
    nlf = 0;
    while ((e = readdir(d)))
        if (strlen(e->d_name) == 14 && sscanf(e->d_name, "log.%10u", &number) == 1) {
            check(nlf < MAXFILES);
            lf[nlf++].number = number;
        }
    closedir(d);
    qsort(lf, nlf, sizeof lf[0], number_cmp);
    for (size_t i = 0; i < nlf; i++) {
        struct pf_file *f = &lf[i];
        path_of(path, dir, f->number);
        check((f->orig = read_whole(path, &f->len)));
        f->bytes = malloc(f->len ? f->len : 1);
        memcpy(f->bytes, f->orig, f->len);
        f->dlen = f->len;
        f->nrecs = pf_records(f->orig, f->len, f->recs, MAXREC);
        check(f->nrecs <= MAXREC);
        size_t end = f->nrecs ? f->recs[f->nrecs - 1].off + f->recs[f->nrecs - 1].size : PF_HDR;
        check(end == f->len); /* plog wrote what the document says */
    }
}

static void free_files(void)
{
    for (size_t i = 0; i < nlf; i++) {
        free(lf[i].orig);
        free(lf[i].bytes);
    }
    nlf = 0;
}

/* One damage op: kind, file, position, argument. */
static void damage(struct input *in)
{
    uint8_t kind = in_byte(in), which = in_byte(in);
    uint16_t at16 = (uint16_t)(in_byte(in) | in_byte(in) << 8);
    uint8_t arg = in_byte(in);
    struct pf_file *f = &lf[which % nlf], *g = &lf[arg % nlf];
    if (!f->dlen)
        return;
    size_t at = (size_t)at16 * f->dlen / 65536, n = 1 + arg % 64;
    if (n > f->dlen - at)
        n = f->dlen - at;
    switch (kind % 5) {
    case 0:
        f->bytes[at] ^= (uint8_t)(1u << (arg & 7));
        break;
    case 1:
        memset(f->bytes + at, kind & 0x80 ? 0 : arg, n);
        break;
    case 2: { /* bytes from elsewhere: this file or another, same place or not */
        size_t from = kind & 0x80 ? at : (size_t)arg * 97;
        if (g->dlen && from < g->dlen) {
            size_t m = n < g->dlen - from ? n : g->dlen - from;
            memmove(f->bytes + at, g->bytes + from, m);
        }
        break;
    }
    case 3: /* cut short: a torn tail in the last file, damage elsewhere */
        f->dlen = at;
        break;
    case 4: /* a whole record of another file over this place */
        if (g->nrecs) {
            const struct pf_rec *r = &g->recs[at16 % g->nrecs];
            size_t m = r->size < f->dlen - at ? r->size : f->dlen - at;
            memmove(f->bytes + at, g->orig + r->off, m);
        }
        break;
    }
}

static void write_damaged(void)
{
    char path[128];
    check(empty_dir(dir) == 0);
    for (size_t i = 0; i < nlf; i++) {
        path_of(path, dir, lf[i].number);
        check(write_whole(path, lf[i].bytes, lf[i].dlen) == 0);
    }
}

static bool header_intact(const struct pf_file *f)
{
    return f->dlen >= PF_HDR && memcmp(f->orig, f->bytes, PF_HDR) == 0;
}

/* Where each record is intact: its bytes where they were written, and the
 * seed of its file known (its header, or any other's, gives the log id). */
static size_t mark_intact(bool keep[MAXFILES][MAXREC], uint64_t *intact_bytes, size_t *headers)
{
    bool id_known = false;
    size_t n = 0;
    *intact_bytes = 0;
    *headers = 0;
    for (size_t i = 0; i < nlf; i++)
        id_known |= header_intact(&lf[i]);
    for (size_t i = 0; i < nlf; i++) {
        const struct pf_file *f = &lf[i];
        *headers += header_intact(f);
        for (size_t r = 0; r < f->nrecs; r++) {
            const struct pf_rec *rec = &f->recs[r];
            keep[i][r] = id_known && pf_intact(f, r);
            n += keep[i][r];
            *intact_bytes += keep[i][r] ? rec->size : 0;
        }
    }
    return n;
}

/* ---- the state delivered ------------------------------------------------- */

/* The state of the intact records alone: converted to format 1 in odir
 * and recovered there. */
static uLong expected_digest(bool keep[MAXFILES][MAXREC])
{
    char path[128];
    struct plog_report rep;
    char err[256];
    check(empty_dir(odir) == 0);
    for (size_t i = 0; i < nlf; i++) {
        uint8_t *v1 = malloc(lf[i].len ? lf[i].len : 1);
        size_t n = pf_to_v1(lf[i].orig, lf[i].len, keep[i], v1);
        path_of(path, odir, lf[i].number);
        check(write_whole(path, v1, n) == 0);
        free(v1);
    }
    struct plog_options opt = {.dir = odir};
    digest = 0;
    struct plog *l = plog_open(&opt, on_record, NULL, &rep, err, sizeof err);
    check(l && rep.dropped_bytes == 0);
    plog_close(l);
    return digest;
}

/* Bytes in the aside files. */
static uint64_t aside_bytes(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    struct stat st;
    char path[400];
    uint64_t n = 0;
    check(d);
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".corrupt-")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            check(stat(path, &st) == 0);
            n += (uint64_t)st.st_size;
        }
    closedir(d);
    return n;
}

static void remove_dirs(void)
{
    empty_dir(dir);
    rmdir(dir);
    empty_dir(odir);
    rmdir(odir);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/dev/shm/fuzz_plog_damage-XXXXXX");
    if (!mkdtemp(dir)) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_plog_damage-XXXXXX");
        check(mkdtemp(dir));
    }
    snprintf(odir, sizeof odir, "%s-v1", dir);
    check(mkdir(odir, 0700) == 0);
    atexit(remove_dirs);
    log_set_level(LOG_ERROR); /* damage is expected here, not news */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool keep[MAXFILES][MAXREC];
    struct plog_report rep;

    if (!dir[0])
        setup();
    if (size < 2)
        return 0;
    size_t hlen = (size_t)(data[0] | data[1] << 8);
    if (hlen > size - 2)
        hlen = size - 2;
    struct input hist = {data + 2, data + 2 + hlen}, dmg = {data + 2 + hlen, data + size};

    check(empty_dir(dir) == 0);
    write_history(&hist);
    read_files();
    for (int i = 0; dmg.p < dmg.end && i < 16; i++)
        damage(&dmg);
    uint64_t intact_bytes, total = 0;
    size_t headers, intact = mark_intact(keep, &intact_bytes, &headers);
    uLong want = expected_digest(keep);
    write_damaged();
    for (size_t i = 0; i < nlf; i++)
        total += lf[i].dlen;

    digest = 0;
    struct plog *l = open_log(on_record, &rep);
    check(rep.records == intact);
    check(digest == want);
    check(total == PF_HDR * headers + intact_bytes + rep.dropped_bytes);
    check(aside_bytes() == rep.damaged_bytes);
    check(!rep.damaged_ranges == !rep.damaged_bytes);
    check(plog_compact_wait(l) == 0);
    plog_close(l);

    digest = 0;
    l = open_log(on_record, &rep);
    check(rep.dropped_bytes == 0 && digest == want);
    plog_close(l);
    free_files();
    return 0;
}
