/* plog.h - the broker's durable state: an append-only, checksummed record
 * log in a data directory, with group commit, crash recovery and background
 * compaction. docs/persistence.md describes the files byte by byte.
 *
 * The broker describes every change to what must survive a restart as a
 * record (struct plog_rec) and appends it with plog_append() while it
 * handles packets; plog_commit(), once per loop iteration, writes the
 * iteration's records with one write() and makes them durable, and only
 * then may the broker acknowledge what they describe. A record the broker
 * marks lazy is written with the others but need not wait for the disk:
 * nothing sent depends on it surviving a power cut. At start, plog_open()
 * replays the log and hands the broker the live state, one record per live
 * object, to rebuild from.
 *
 * A message is stored once (PLOG_MSG, with an id plog assigns) and shared by
 * reference: each session's copy of it is a PLOG_ENTRY naming the message
 * id, and a retained topic is a PLOG_RETAIN naming it. A message lives while
 * something references it.
 *
 * plog keeps in memory only an index of where each live record is (no
 * payloads), so compaction copies live records out of files that no longer
 * change, in a thread, while new records go to a new file.
 *
 * Single-threaded API: call it from the broker's loop thread only.
 */
#ifndef SHOOTOUT_PLOG_H
#define SHOOTOUT_PLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum plog_type {
    PLOG_SESSION = 1,   /* create or replace a session (struct plog_session) */
    PLOG_SESSION_DEL,   /* session.client_id; drops its subscriptions and entries */
    PLOG_SUB,           /* add or replace a subscription (struct plog_sub) */
    PLOG_SUB_DEL,       /* sub.client_id, sub.filter */
    PLOG_MSG,           /* store a message (struct plog_msg) */
    PLOG_RETAIN,        /* retain.topic now holds message retain.msg_id */
    PLOG_RETAIN_CLEAR,  /* retain.topic */
    PLOG_ENTRY,         /* a session's message (struct plog_entry) */
    PLOG_ENTRY_STATE,   /* entry.id moves to entry.state, .dup, .packet_id */
    PLOG_ENTRY_DEL,     /* entry.id */
};

enum plog_dir { PLOG_OUT = 0, PLOG_IN = 1 };

enum plog_state {
    PLOG_QUEUED = 0,       /* out: waiting for the inflight window */
    PLOG_PUBLISH_SENT = 1, /* out: PUBLISH sent, waiting for PUBACK/PUBREC */
    PLOG_PUBREC_SENT = 2,  /* in: QoS 2 received and PUBREC sent, waiting for PUBREL */
    PLOG_PUBREL_SENT = 3,  /* out: PUBREL sent, waiting for PUBCOMP */
};

/* Bytes the caller owns (when appending) or plog owns (when recovering:
 * valid only during the callback). */
struct plog_bytes {
    const uint8_t *p;
    uint32_t len;
};

/* Strings (client ids, topics, filters) are at most 65535 bytes, as in
 * MQTT; blobs (payloads, encoded property lists) up to PLOG_BLOB_MAX. */
#define PLOG_BLOB_MAX (64u << 20)

struct plog_session {
    struct plog_bytes client_id;
    uint32_t expiry;   /* session expiry interval, seconds */
    /* Wall-clock (CLOCK_REALTIME) ms when the offline session expires;
     * 0 while connected or if it never does. */
    uint64_t expires_at_ms;
    uint8_t protocol;  /* MQTT protocol level: 3 (3.1), 4 (3.1.1) or 5 */
    bool has_will;
    bool will_retain;
    uint8_t will_qos;
    uint32_t will_delay; /* seconds: a connected session's Will Delay Interval */
    /* encoded MQTT 5 properties, its Message Expiry Interval included */
    struct plog_bytes will_topic, will_payload, will_props;
    /* Wall-clock ms an offline session's will is due; 0 while connected
     * (a will then counts its delay from the next start). */
    uint64_t will_at_ms;
};

struct plog_sub {
    struct plog_bytes client_id, filter;
    uint8_t options; /* SUBSCRIBE options byte: QoS, no-local, RAP, retain handling */
    uint32_t sub_id; /* subscription identifier, 0 = none */
};

struct plog_msg {
    uint64_t id;        /* assigned by plog_append() */
    uint8_t qos;
    bool retain;
    uint64_t expiry_ms; /* wall-clock (CLOCK_REALTIME) ms when it expires, 0 = never */
    struct plog_bytes topic, payload, props;
};

struct plog_retain {
    struct plog_bytes topic;
    uint64_t msg_id;
};

struct plog_entry {
    uint64_t id;         /* assigned by plog_append() */
    struct plog_bytes client_id;
    uint64_t msg_id;     /* 0 = none (an inbound QoS 2 id already delivered) */
    uint8_t dir;         /* enum plog_dir */
    uint8_t state;       /* enum plog_state */
    uint8_t qos;
    bool dup;
    uint16_t packet_id;  /* 0 while queued */
};

struct plog_rec {
    uint8_t type; /* enum plog_type; the member below that it names */
    /* When appending: nothing the broker sends depends on this record
     * being on stable storage, only on its being written (it must survive
     * kill -9, not a power cut), so plog_commit() does not wait for the
     * disk for it (docs/persistence.md, "What waits for the sync"). False
     * in what plog_open() delivers. */
    bool lazy;
    union {
        struct plog_session session;
        struct plog_sub sub;
        struct plog_msg msg;
        struct plog_retain retain;
        struct plog_entry entry;
    };
};

/* Called once per live object at plog_open(), in this order: sessions,
 * messages, retained topics, subscriptions, entries (so every reference
 * points to something already delivered). Types: PLOG_SESSION, PLOG_MSG,
 * PLOG_RETAIN, PLOG_SUB, PLOG_ENTRY (with its current state). A message
 * nothing references is not delivered. */
typedef void (*plog_apply_fn)(void *ctx, const struct plog_rec *rec);

/* Compaction steps, for tests that stop a compaction as if the process had
 * been killed there (struct plog_options.test_compact_stop). */
enum plog_compact_step {
    PLOG_STEP_NONE = 0,
    PLOG_STEP_PARTIAL_SNAPSHOT, /* half the snapshot written to log.N.tmp */
    PLOG_STEP_SNAPSHOT_SYNCED,  /* log.N.tmp complete and fdatasync'ed */
    PLOG_STEP_RENAMED,          /* renamed to log.N, directory not synced */
    PLOG_STEP_DIR_SYNCED,       /* directory synced, old files still there */
    PLOG_STEP_ONE_DELETED,      /* the first old file deleted */
};

struct plog_options {
    const char *dir;            /* data directory, created if missing */
    /* 0: plog_commit() fdatasyncs every batch before it returns, but for
     * one of lazy records only, which waits for the next sync (at most
     * until the next plog_maintain()).
     * N > 0: it fdatasyncs at most every N ms; a batch counts as committed
     * once written (it survives kill -9 but not a power cut within N ms). */
    uint32_t sync_interval_ms;
    /* Compact when live bytes / log bytes falls below compact_live_percent
     * (default 50) and the log holds at least compact_min_bytes (default
     * 4 MiB). 0 = default. */
    uint32_t compact_live_percent;
    uint64_t compact_min_bytes;
    uint8_t test_compact_stop;  /* enum plog_compact_step; tests only */
};

/* What plog_open() found. Damage is reported, never fatal: recovery skips
 * the bytes in which no record verifies, saves them aside, and goes on at
 * the next record that does (docs/persistence.md, "Recovery"). */
struct plog_report {
    uint32_t files;        /* log files replayed */
    uint32_t v1_files;     /* of them, in format 1 (rewritten: see rewrite) */
    uint64_t records;      /* intact records read */
    uint64_t bytes;        /* bytes in the log after recovery */
    uint32_t sessions, msgs, retained, subs, entries; /* live objects delivered */
    /* Bytes not read as records (torn tail and damaged ranges); 0 = none. */
    uint64_t dropped_bytes;
    /* The last file ended inside a record or its header, as a write cut
     * short by a crash leaves it: cut off, and not damage. */
    bool torn;
    /* Ranges in which no record verifies, each from where a record was due
     * to the next intact one (or the end of its file); each is logged and
     * saved aside. */
    uint32_t damaged_ranges;
    uint64_t damaged_bytes;
    /* The first damaged range, or the torn tail if there is none. */
    uint32_t damaged_file;   /* number N of the file log.N */
    uint64_t damaged_offset; /* byte offset in that file */
    char reason[48];
    char aside[64];          /* the file that range was saved to ("" if torn) */
    /* A compaction started at open rewrites the log, in format 2 and
     * without the damaged ranges left between intact records
     * (plog_compact_wait() waits for it). */
    bool rewrite;
};

struct plog;

/* Opens (creating if needed) and recovers the log in opt->dir, calling
 * apply for each live object, and fills rep. Returns NULL only if the
 * directory cannot be used at all (cannot create, lock, or write a new file
 * there; another process holds it), with a message in err: a damaged log
 * never fails the open. */
struct plog *plog_open(const struct plog_options *opt, plog_apply_fn apply, void *ctx,
                       struct plog_report *rep, char *err, size_t errlen);

/* Commits what is pending, waits for a running compaction, closes. */
void plog_close(struct plog *log);

/* Adds a record to the current batch (nothing is written until
 * plog_commit). For PLOG_MSG and PLOG_ENTRY, plog assigns the id and
 * returns it; 0 for the other types. A message must be referenced (by an
 * entry or a retained topic) in the batch that stores it, or it is dropped
 * at commit; references to unknown messages or sessions are ignored. */
uint64_t plog_append(struct plog *log, const struct plog_rec *rec);

/* Writes the batch with one write() and syncs it as sync_interval_ms says:
 * with 0, fdatasync() before returning if anything written since the last
 * sync is not lazy (a batch of lazy records only is synced by the next
 * commit that syncs, or by plog_maintain()); with N > 0, at most every N
 * ms. With nothing pending, just syncs if a sync is due: one that failed,
 * or a periodic one (call it from a timer too when sync_interval_ms > 0).
 * Returns 0, or -1 (logged) if the write failed, in which case the file is
 * cut back to before the batch and the next call writes it again, or if
 * the sync failed, in which case the next call syncs again; either way
 * plog_committed() does not advance. Linux may forget pages whose
 * writeback failed, so a broker should treat a sync that keeps failing as
 * fatal to persistence. */
int plog_commit(struct plog *log);

/* Batches are numbered from 1. A broker that defers acknowledgements notes
 * plog_batch() when it appends a message and sends PUBACK/PUBREC once
 * plog_committed() has reached that number: every batch up to it is as
 * durable as its records ask (written, and synced unless all lazy, or
 * with sync_interval_ms > 0 written). With the synchronous commit
 * implemented here that is as soon as plog_commit() returns 0; a commit
 * thread would advance plog_committed() later, and the broker's code would
 * not change. */
uint64_t plog_batch(const struct plog *log);
uint64_t plog_committed(const struct plog *log);
/* fdatasync() calls on the files appended to so far (the compaction's own
 * are not counted): for tests. */
uint64_t plog_syncs(const struct plog *log);

/* Loop upkeep, from a timer (the broker's runs every 250 ms): with
 * sync_interval_ms 0, syncs lazy records written since the last sync, so
 * that none waits longer than a period of the timer; finishes a compaction
 * whose thread is done, or starts one when the live fraction is below the
 * threshold. */
void plog_maintain(struct plog *log);
/* Starts a compaction now (commits the batch first). 0, or -1 if one is
 * running or the new file could not be created. */
int plog_compact_start(struct plog *log);
/* Blocks until a running compaction is done and finishes it. Returns 0 if
 * it succeeded (or none ran), -1 if it failed or was stopped by
 * test_compact_stop. */
int plog_compact_wait(struct plog *log);

/* Bytes of live records, and bytes of the log files (headers included). */
uint64_t plog_live_bytes(const struct plog *log);
uint64_t plog_disk_bytes(const struct plog *log);

#endif
