/* nats_match.h - NATS subject matching as nats-server does it, written
 * apart from the code under test so that test_subject.c and
 * fuzz_subject.c can check the subject mapping against NATS's rules:
 * tokens split on '.', '*' matches exactly one token, a final '>' one or
 * more. Both arguments are NUL-terminated. */
#ifndef SHOOTOUT_TEST_NATS_MATCH_H
#define SHOOTOUT_TEST_NATS_MATCH_H

#include <stdbool.h>
#include <string.h>

static inline bool nats_match(const char *sub, const char *subj)
{
    for (;;) {
        const char *se = strchr(sub, '.'), *te = strchr(subj, '.');
        size_t sn = se ? (size_t)(se - sub) : strlen(sub);
        size_t tn = te ? (size_t)(te - subj) : strlen(subj);
        if (sn == 1 && sub[0] == '>')
            return tn > 0; /* at least one token left */
        if (!(sn == 1 && sub[0] == '*') && (sn != tn || memcmp(sub, subj, sn) != 0))
            return false;
        if (!se || !te)
            return !se && !te;
        sub = se + 1;
        subj = te + 1;
    }
}

#endif
