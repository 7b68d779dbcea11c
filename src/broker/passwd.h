/* passwd.h - the broker's password file: loading, checking a CONNECT's
 * username and password against it, and making new hashes.
 *
 * The format is Mosquitto 2.x's (mosquitto_passwd), so files move between
 * the two brokers unchanged: one "user:hash" per line, '#' comment lines,
 * where hash is
 *   $7$<iterations>$<base64 salt>$<base64 PBKDF2-HMAC-SHA512, 64 bytes>
 * or the older Mosquitto 1.x form
 *   $6$<base64 salt>$<base64 SHA-512(password || salt), 64 bytes>.
 * Plain-text passwords and argon2id hashes are refused with file:line.
 *
 * Checking costs one PBKDF2 run (iterations x 2 SHA-512 blocks) the first
 * time a user logs in after a load; after a success the table remembers a
 * keyed SHA-256 of that password for the user, so later checks of the same
 * user cost about a microsecond whether the password is right or wrong
 * (docs/security.md explains why a wrong one can be refused that fast, and
 * what a connect storm still costs). A table is never changed by a reload:
 * load a new one and swap it in, which also forgets what was remembered.
 */
#ifndef SHOOTOUT_PASSWD_H
#define SHOOTOUT_PASSWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What `shootout passwd` hashes new passwords with unless told otherwise:
 * about half a millisecond on one core, so an attacker needs some two
 * thousand wrong CONNECTs a second to keep the broker's loop busy.
 * Mosquitto 2.0 wrote 101; 2.1 writes 210000 (~0.2 s each). */
#define PASSWD_DEFAULT_ITERATIONS 1000
/* Entries asking for more are refused: one check would stall the loop for
 * seconds. */
#define PASSWD_MAX_ITERATIONS 10000000u
/* Salt bytes for new hashes: Mosquitto 2.0 reads 12 or 64. */
#define PASSWD_SALT_LEN 12
/* Longest hash passwd_hash_new() writes, without the NUL. */
#define PASSWD_HASH_MAX 120

struct passwd_table;

enum passwd_result {
    PASSWD_OK,             /* user known, password right */
    PASSWD_WRONG_PASSWORD, /* user known, password wrong */
    PASSWD_UNKNOWN_USER,   /* no such user in the file */
};

/* Parses a password file held in buf[0..len); name is used in error
 * messages ("name:line: ..."). On success *out is a new table (free with
 * passwd_free) and 0 is returned; otherwise -1 with the first error in err
 * and *out untouched. */
int passwd_parse(struct passwd_table **out, const char *name, const char *buf, size_t len,
                 char *err, size_t errlen);

/* passwd_parse() of the file at path. */
int passwd_load(struct passwd_table **out, const char *path, char *err, size_t errlen);

/* Frees a table; NULL is a no-op. */
void passwd_free(struct passwd_table *t);

/* Users in the table. */
size_t passwd_count(const struct passwd_table *t);

/* Checks user[0..ulen) and password pw[0..pwlen) (MQTT passwords are
 * binary; every byte counts). May remember a success in t, hence not
 * const; not thread-safe. */
enum passwd_result passwd_check(struct passwd_table *t, const char *user, size_t ulen,
                                const void *pw, size_t pwlen);

/* Writes a new $7$ hash of pw[0..pwlen) with a fresh random salt to out
 * (room for PASSWD_HASH_MAX + 1 bytes), NUL-terminated. iterations is in
 * [1, PASSWD_MAX_ITERATIONS]. Returns 0, or -1 if no random salt could be
 * had. */
int passwd_hash_new(char *out, const void *pw, size_t pwlen, unsigned iterations);

/* Whether a username can be written to and read back from the file: non-
 * empty valid UTF-8, no ':' and no control characters, no surrounding
 * blanks, not starting with '#'. */
bool passwd_username_valid(const char *user, size_t len);

/* The username of one line of a password file: sets *user and *ulen and
 * returns true, or returns false for blank and comment lines. Shared with
 * `shootout passwd` so that it edits exactly the lines the loader reads. */
bool passwd_line_user(const char *line, size_t len, const char **user, size_t *ulen);

#endif
