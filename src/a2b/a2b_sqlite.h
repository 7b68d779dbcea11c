/* a2b_sqlite.h - the a2b service on SQLite: creating and filling the
 * database file, and one connection that runs the operations of a2b_api.h
 * synchronously. The connection is for one thread at a time; a2b_store
 * runs several of them on worker threads so that the event loop never waits
 * on the disk.
 *
 * The schema is the reference's (docs/a2b.md), with SQLite types: a
 * location's jsonb becomes latitude and longitude columns, a transfer's
 * tsrange two TEXT timestamps, money an INTEGER of cents.
 */
#ifndef SHOOTOUT_A2B_SQLITE_H
#define SHOOTOUT_A2B_SQLITE_H

#include <stddef.h>
#include <stdint.h>

#include "a2b/a2b_api.h"

struct a2b_sqlite;

/* Creates the database file at path with the data set of (seed, scale)
 * (a2b_data.h). It is built under path + ".loading" in one transaction with
 * the journal off, indexed after the load, synced, and renamed into place,
 * so a crash never leaves a half-filled file at path. Returns 0, or -1 with
 * a message in err. An existing file at path is replaced. */
int a2b_sqlite_create(const char *path, uint64_t seed, double scale, char *err, size_t errlen);

/* Opens an existing database (WAL, synchronous=NORMAL, foreign keys on)
 * and prepares every statement. NULL with a message in err if the file is
 * missing or not an a2b database. */
struct a2b_sqlite *a2b_sqlite_open(const char *path, char *err, size_t errlen);
void a2b_sqlite_close(struct a2b_sqlite *db);

/* Runs op. res is overwritten (its old body freed); the caller clears it.
 * Database failures are 500 (503 while another connection holds the write
 * lock for longer than the busy timeout), logged with SQLite's message. */
void a2b_sqlite_exec(struct a2b_sqlite *db, enum a2b_op op, const struct a2b_args *args,
                     struct a2b_result *res);

#endif
