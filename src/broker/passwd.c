/* passwd.c - Mosquitto-compatible password file: parse, check, hash.
 *
 * Each entry keeps the decoded salt and digest, so a check never parses
 * text. The "remembered" tag is HMAC-SHA256 under a key drawn when the
 * table is built: it lets a repeat login skip PBKDF2, and being keyed and
 * per-table it says nothing useful to someone who reads memory dumps of an
 * old table or tries to precompute it.
 */
#include "broker/passwd.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/base64.h"
#include "core/hmap.h"
#include "core/mem.h"
#include "core/textfile.h"
#include "mqtt/mqtt_topic.h"

#define DIGEST_LEN 64 /* SHA-512 */
#define SALT_MAX 64
#define TAG_LEN 32 /* HMAC-SHA256 */

enum passwd_kind { KIND_SHA512 = 6, KIND_PBKDF2 = 7 };

struct passwd_entry {
    char *user; /* NUL-terminated copy; also the hmap key */
    size_t ulen;
    unsigned lineno;
    enum passwd_kind kind;
    unsigned iterations; /* KIND_PBKDF2 only */
    size_t salt_len;
    uint8_t salt[SALT_MAX];
    uint8_t digest[DIGEST_LEN];
    bool remembered; /* remembered_tag holds a password that passed */
    uint8_t remembered_tag[TAG_LEN];
};

struct passwd_table {
    struct hmap users; /* user -> struct passwd_entry */
    uint8_t tag_key[TAG_LEN];
};

bool passwd_username_valid(const char *user, size_t len)
{
    if (len == 0 || user[0] == '#' || user[0] == ' ' || user[0] == '\t' ||
        user[len - 1] == ' ' || user[len - 1] == '\t')
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)user[i];
        if (c < 0x20 || c == 0x7f || c == ':')
            return false;
    }
    return mqtt_utf8_valid((const uint8_t *)user, len);
}

bool passwd_line_user(const char *line, size_t len, const char **user, size_t *ulen)
{
    struct textfile_line l = textfile_trim((struct textfile_line){.ptr = line, .len = len});
    if (l.len == 0 || l.ptr[0] == '#')
        return false;
    const char *colon = memchr(l.ptr, ':', l.len);
    struct textfile_line u = {.ptr = l.ptr, .len = colon ? (size_t)(colon - l.ptr) : l.len};
    u = textfile_trim(u);
    *user = u.ptr;
    *ulen = u.len;
    return true;
}

/* Splits s[0..len) at the first '$': the field before it is returned in
 * *field; s advances past the '$' (or to the end if there is none). */
static void next_field(const char **s, size_t *len, const char **field, size_t *flen)
{
    const char *d = memchr(*s, '$', *len);
    size_t n = d ? (size_t)(d - *s) : *len;
    *field = *s;
    *flen = n;
    *s += n + (d != NULL);
    *len -= n + (d != NULL);
}

static bool parse_iterations(const char *s, size_t len, unsigned *out)
{
    if (len == 0 || len > 8 || s[0] == '0')
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > PASSWD_MAX_ITERATIONS)
        return false;
    *out = v;
    return true;
}

/* Decodes the hash field h[0..len) into e. Returns NULL or what is wrong. */
static const char *parse_hash(const char *h, size_t len, struct passwd_entry *e)
{
    if (len >= 3 && h[0] == '$' && h[1] == '7' && h[2] == '$')
        e->kind = KIND_PBKDF2;
    else if (len >= 3 && h[0] == '$' && h[1] == '6' && h[2] == '$')
        e->kind = KIND_SHA512;
    else if (len >= 10 && !memcmp(h, "$argon2id$", 10))
        return "argon2id hashes are not supported; re-create this user with shootout passwd";
    else if (len > 0 && h[0] == '$')
        return "unknown hash type (want $7$ or $6$)";
    else
        return "password is not hashed; set it with shootout passwd";
    h += 3;
    len -= 3;
    const char *f;
    size_t flen;
    if (e->kind == KIND_PBKDF2) {
        next_field(&h, &len, &f, &flen);
        if (!parse_iterations(f, flen, &e->iterations))
            return "iteration count must be a whole number from 1 to 10000000";
    }
    next_field(&h, &len, &f, &flen);
    ssize_t n = base64_decode(e->salt, sizeof e->salt, f, flen);
    if (n <= 0)
        return "salt is not base64 of 1 to 64 bytes";
    e->salt_len = (size_t)n;
    if (memchr(h, '$', len) || base64_decode(e->digest, sizeof e->digest, h, len) != DIGEST_LEN)
        return "hash is not base64 of 64 bytes";
    return NULL;
}

void passwd_free(struct passwd_table *t)
{
    if (!t)
        return;
    size_t it = 0;
    struct hmap_slot *s;
    while ((s = hmap_next(&t->users, &it))) {
        struct passwd_entry *e = s->val;
        mem_free(e->user);
        OPENSSL_cleanse(e, sizeof *e);
        mem_free(e);
    }
    hmap_free(&t->users);
    OPENSSL_cleanse(t->tag_key, sizeof t->tag_key);
    mem_free(t);
}

static int parse_line(void *arg, const char *name, struct textfile_line line, char *err,
                      size_t errlen)
{
    struct passwd_table *t = arg;
    const char *user;
    size_t ulen;
    if (!passwd_line_user(line.ptr, line.len, &user, &ulen))
        return 0;
    struct textfile_line l = textfile_trim(line);
    const char *colon = memchr(l.ptr, ':', l.len);
    if (!colon)
        return textfile_error(err, errlen, name, line.lineno, "expected user:hash");
    if (!passwd_username_valid(user, ulen))
        return textfile_error(err, errlen, name, line.lineno, "invalid username");
    struct passwd_entry *dup = hmap_get(&t->users, user, ulen);
    if (dup)
        return textfile_error(err, errlen, name, line.lineno, "user '%.*s' already defined on line %u",
                           (int)ulen, user, dup->lineno);
    struct textfile_line h = {.ptr = colon + 1, .len = (size_t)(l.ptr + l.len - colon - 1)};
    h = textfile_trim(h);
    struct passwd_entry *e = mem_calloc(1, sizeof *e);
    const char *why = parse_hash(h.ptr, h.len, e);
    if (why) {
        mem_free(e);
        return textfile_error(err, errlen, name, line.lineno, "%s", why);
    }
    e->user = mem_strndup(user, ulen);
    e->ulen = ulen;
    e->lineno = line.lineno;
    hmap_put(&t->users, e->user, e->ulen, e);
    return 0;
}

/* passwd_parse() of buf, or passwd_load() of the file name when buf is
 * NULL. */
static int build(struct passwd_table **out, const char *name, const char *buf, size_t len,
                 char *err, size_t errlen)
{
    struct passwd_table *t = mem_calloc(1, sizeof *t);
    if (RAND_bytes(t->tag_key, sizeof t->tag_key) != 1) {
        mem_free(t);
        snprintf(err, errlen, "%s: no random bytes for the login cache", name);
        return -1;
    }
    if (textfile_parse(name, buf, len, parse_line, t, err, errlen) < 0) {
        passwd_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int passwd_parse(struct passwd_table **out, const char *name, const char *buf, size_t len,
                 char *err, size_t errlen)
{
    return build(out, name, buf ? buf : "", len, err, errlen);
}

int passwd_load(struct passwd_table **out, const char *path, char *err, size_t errlen)
{
    return build(out, path, NULL, 0, err, errlen);
}

size_t passwd_count(const struct passwd_table *t)
{
    return hmap_count(&t->users);
}

/* The digest that e's scheme gives password pw. */
static bool entry_digest(const struct passwd_entry *e, const void *pw, size_t pwlen,
                         uint8_t out[DIGEST_LEN])
{
    if (pwlen > INT_MAX)
        return false;
    if (e->kind == KIND_PBKDF2)
        return PKCS5_PBKDF2_HMAC(pw, (int)pwlen, e->salt, (int)e->salt_len, (int)e->iterations,
                                 EVP_sha512(), DIGEST_LEN, out) == 1;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha512(), NULL) == 1 &&
              EVP_DigestUpdate(ctx, pw, pwlen) == 1 &&
              EVP_DigestUpdate(ctx, e->salt, e->salt_len) == 1 &&
              EVP_DigestFinal_ex(ctx, out, NULL) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

enum passwd_result passwd_check(struct passwd_table *t, const char *user, size_t ulen,
                                const void *pw, size_t pwlen)
{
    struct passwd_entry *e = hmap_get(&t->users, user, ulen);
    if (!e)
        return PASSWD_UNKNOWN_USER;
    uint8_t tag[TAG_LEN];
    unsigned tag_len = 0;
    if (!HMAC(EVP_sha256(), t->tag_key, sizeof t->tag_key, pw, pwlen, tag, &tag_len))
        return PASSWD_WRONG_PASSWORD;
    /* Only one password hashes to the stored digest (a second would be a
     * SHA-512 collision), so once one has passed, any other tag is wrong. */
    if (e->remembered)
        return CRYPTO_memcmp(tag, e->remembered_tag, TAG_LEN) == 0 ? PASSWD_OK
                                                                   : PASSWD_WRONG_PASSWORD;
    uint8_t digest[DIGEST_LEN];
    bool ok = entry_digest(e, pw, pwlen, digest) && CRYPTO_memcmp(digest, e->digest, DIGEST_LEN) == 0;
    OPENSSL_cleanse(digest, sizeof digest);
    if (!ok)
        return PASSWD_WRONG_PASSWORD;
    memcpy(e->remembered_tag, tag, TAG_LEN);
    e->remembered = true;
    return PASSWD_OK;
}

int passwd_hash_new(char *out, const void *pw, size_t pwlen, unsigned iterations)
{
    struct passwd_entry e = {.kind = KIND_PBKDF2, .iterations = iterations,
                             .salt_len = PASSWD_SALT_LEN};
    if (iterations < 1 || iterations > PASSWD_MAX_ITERATIONS ||
        RAND_bytes(e.salt, PASSWD_SALT_LEN) != 1 || !entry_digest(&e, pw, pwlen, e.digest))
        return -1;
    char salt64[BASE64_ENCODED_LEN(PASSWD_SALT_LEN) + 1];
    char digest64[BASE64_ENCODED_LEN(DIGEST_LEN) + 1];
    base64_encode(salt64, e.salt, e.salt_len);
    base64_encode(digest64, e.digest, DIGEST_LEN);
    snprintf(out, PASSWD_HASH_MAX + 1, "$7$%u$%s$%s", iterations, salt64, digest64);
    OPENSSL_cleanse(&e, sizeof e);
    return 0;
}
