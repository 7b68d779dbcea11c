/* fuzz_subtree.c - libFuzzer target for the subscription tree and the
 * retained store: the input is a program of add / remove / match /
 * retain_set / retain_match operations on strings taken from the input, and
 * every answer is checked against a brute-force scan of a model using
 * mqtt_topic_match(). Any difference aborts.
 *
 * Encoding, repeated until the input runs out:
 *   op byte, then for ops that take a string: length byte (bit 7 set maps
 *   each string byte onto "ab/+#$", so wildcards and levels are cheap to
 *   reach; clear passes the bytes through), the bytes, then one argument
 *   byte (subscriber and options, or retained value).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/allocator_interface.h>

#include "broker/retain.h"
#include "broker/subtree.h"
#include "mqtt/mqtt_topic.h"

#define MAXMODEL 128
#define MAXSTR 128
#define NSUBSCRIBERS 4

struct str {
    uint8_t b[MAXSTR];
    size_t len;
};

static struct {
    struct str filter;
    void *sub;
    uint8_t opt;
} subs[MAXMODEL];
static size_t nsubs;

static struct {
    struct str topic;
    void *value;
} kept[MAXMODEL];
static size_t nkept;

static char subscribers[NSUBSCRIBERS];

struct hit {
    void *who; /* subscriber, or retained value */
    uint8_t opt;
};

static struct hit got[MAXMODEL], want[MAXMODEL];
static size_t ngot, nwant;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

static void release(void *v) { free(v); }

static void on_sub(void *ctx, void *who, subtree_opts opt)
{
    CHECK(ngot < MAXMODEL);
    got[ngot++] = (struct hit){who, opt};
}

static void on_retained(void *ctx, const uint8_t *topic, size_t len, void *value)
{
    size_t i = 0;
    while (i < nkept && kept[i].value != value)
        i++;
    CHECK(i < nkept);
    CHECK(len == kept[i].topic.len && memcmp(topic, kept[i].topic.b, len) == 0);
    CHECK(ngot < MAXMODEL);
    got[ngot++] = (struct hit){value, 0};
}

static int hit_cmp(const void *a, const void *b)
{
    const struct hit *x = a, *y = b;
    if (x->who != y->who)
        return (uintptr_t)x->who < (uintptr_t)y->who ? -1 : 1;
    return (int)x->opt - (int)y->opt;
}

static void check_hits(void)
{
    CHECK(ngot == nwant);
    qsort(got, ngot, sizeof got[0], hit_cmp);
    qsort(want, nwant, sizeof want[0], hit_cmp);
    for (size_t i = 0; i < ngot; i++)
        CHECK(hit_cmp(&got[i], &want[i]) == 0);
}

static int same(const struct str *a, const struct str *b)
{
    return a->len == b->len && memcmp(a->b, b->b, a->len) == 0;
}

/* Reads a string at *p; returns 0 when the input is too short. */
static int take_str(const uint8_t **p, const uint8_t *end, struct str *s)
{
    static const char alphabet[] = "ab/+#$";
    if (*p == end)
        return 0;
    uint8_t hdr = *(*p)++;
    s->len = hdr & 0x7f;
    if ((size_t)(end - *p) < s->len)
        return 0;
    for (size_t i = 0; i < s->len; i++)
        s->b[i] = hdr & 0x80 ? (uint8_t)alphabet[(*p)[i] % 6] : (*p)[i];
    *p += s->len;
    return 1;
}

static void op_add(struct subtree *t, const struct str *f, uint8_t arg)
{
    void *who = &subscribers[arg % NSUBSCRIBERS];
    uint8_t opt = arg >> 2;
    size_t i = 0;
    if (!mqtt_topic_filter_valid(f->b, f->len))
        return;
    while (i < nsubs && !(subs[i].sub == who && same(&subs[i].filter, f)))
        i++;
    if (i == MAXMODEL)
        return;
    CHECK(subtree_add(t, f->b, f->len, who, opt) == (i == nsubs));
    subs[i].filter = *f;
    subs[i].sub = who;
    subs[i].opt = opt;
    nsubs += i == nsubs;
}

static void op_remove(struct subtree *t, const struct str *f, uint8_t arg)
{
    void *who = &subscribers[arg % NSUBSCRIBERS];
    size_t i = 0;
    /* A short argument picks an existing subscription, so removals hit. */
    if (f->len == 0 && arg / NSUBSCRIBERS < nsubs) {
        i = arg / NSUBSCRIBERS;
        f = &subs[i].filter;
        who = subs[i].sub;
    }
    while (i < nsubs && !(subs[i].sub == who && same(&subs[i].filter, f)))
        i++;
    /* Invalid filters are never in the tree: removing one must be a no-op. */
    CHECK(subtree_remove(t, f->b, f->len, who) == (i < nsubs));
    if (i < nsubs)
        subs[i] = subs[--nsubs];
}

static void op_match(const struct subtree *t, const struct str *topic)
{
    ngot = nwant = 0;
    subtree_match(t, topic->b, topic->len, on_sub, NULL);
    if (!mqtt_topic_name_valid(topic->b, topic->len))
        return; /* must not crash, but has no defined answer */
    for (size_t i = 0; i < nsubs; i++)
        if (mqtt_topic_match(subs[i].filter.b, subs[i].filter.len, topic->b, topic->len))
            want[nwant++] = (struct hit){subs[i].sub, subs[i].opt};
    check_hits();
}

static void op_retain_set(struct retain *r, const struct str *topic, uint8_t arg)
{
    size_t i = 0;
    if (!mqtt_topic_name_valid(topic->b, topic->len))
        return;
    while (i < nkept && !same(&kept[i].topic, topic))
        i++;
    if (arg & 1) {
        if (i == MAXMODEL)
            return;
        void *v = malloc(1);
        retain_set(r, topic->b, topic->len, v, arg);
        kept[i].topic = *topic;
        kept[i].value = v;
        nkept += i == nkept;
    } else {
        retain_set(r, topic->b, topic->len, NULL, 0);
        if (i < nkept)
            kept[i] = kept[--nkept];
    }
    CHECK(retain_count(r) == nkept);
}

static void op_retain_match(const struct retain *r, const struct str *f)
{
    if (!mqtt_topic_filter_valid(f->b, f->len))
        return;
    ngot = nwant = 0;
    retain_match(r, f->b, f->len, on_retained, NULL);
    for (size_t i = 0; i < nkept; i++)
        if (mqtt_topic_match(f->b, f->len, kept[i].topic.b, kept[i].topic.len))
            want[nwant++] = (struct hit){kept[i].value, 0};
    check_hits();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    struct subtree *t = subtree_new();
    struct retain *r = retain_new(release);
    struct str s;
    size_t empty_bytes = __sanitizer_get_current_allocated_bytes();

    nsubs = nkept = 0;
    while (p < end) {
        uint8_t op = *p++ % 5;
        if (!take_str(&p, end, &s) || p == end)
            break;
        uint8_t arg = *p++;
        switch (op) {
        case 0: op_add(t, &s, arg); break;
        case 1: op_remove(t, &s, arg); break;
        case 2: op_match(t, &s); break;
        case 3: op_retain_set(r, &s, arg); break;
        case 4: op_retain_match(r, &s); break;
        }
        CHECK(subtree_count(t) == nsubs);
    }
    /* Emptied, both must be back to the memory they started with: every
     * node and table freed as it became unused. */
    while (nsubs > 0) {
        nsubs--;
        CHECK(subtree_remove(t, subs[nsubs].filter.b, subs[nsubs].filter.len, subs[nsubs].sub) == 1);
    }
    while (nkept > 0) {
        nkept--;
        retain_set(r, kept[nkept].topic.b, kept[nkept].topic.len, NULL, 0);
    }
    CHECK(subtree_count(t) == 0 && retain_count(r) == 0 && retain_bytes(r) == 0);
    CHECK(__sanitizer_get_current_allocated_bytes() == empty_bytes);
    subtree_free(t);
    retain_free(r);
    return 0;
}
