/* fuzz_kv_sess.c - libFuzzer target for what a node reads of the cluster's
 * session bucket (cluster/kv_sess.c): the owner records, which any client
 * of the NATS server could have written, and the keys, client ids escaped
 * as one subject token (subject_token_decode in cluster/subject.c).
 *
 * Checks: neither decoder crashes or reads past the bytes (copied to an
 * exact-size buffer for ASan); a record it accepts has an epoch of at
 * least 1, an origin of 16 lower-case hex digits and a node name without
 * spaces, and encodes back to exactly the same bytes; a token it accepts
 * decodes to bytes whose escaping, where it fits, is that token again (one
 * key per client id, or two nodes could both own one session). Any
 * broken invariant abort()s.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/kv_sess.h"
#include "cluster/subject.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_record(const char *in, size_t size)
{
    struct kv_sess_rec r;
    if (kv_sess_decode(in, size, &r) != 0)
        return;
    check(r.epoch >= 1);
    check(strlen(r.origin) == 16);
    for (const char *p = r.origin; *p; p++)
        check((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'));
    check(r.node[0] && !strchr(r.node, ' '));
    char out[KV_SESS_VALUE_MAX];
    size_t n = kv_sess_encode(out, r.epoch, r.origin, r.node);
    check(n == size && memcmp(out, in, size) == 0);
}

static void check_token(const char *in, size_t size)
{
    uint8_t id[4096], again[4096];
    size_t n = subject_token_decode(in, size, id, sizeof id);
    if (n == 0)
        return;
    char tok[4 * sizeof id + 1];
    size_t t = subject_queue_group(id, n, tok, sizeof tok);
    if (t == 0)
        return; /* longer than the escaper writes (SUBJECT_MAX): no node's key */
    check(subject_token_decode(tok, t, again, sizeof again) == n);
    check(memcmp(again, id, n) == 0);
    check(t == size && memcmp(tok, in, size) == 0); /* one escaping per id */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size ? size : 1);
    memcpy(in, data, size);
    check_record(in, size);
    check_token(in, size);
    free(in);
    return 0;
}
