/* xloop.c - hand-offs between broker loops (xloop.h). */
#include "broker/xloop.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/mem.h"

int xloop_init(struct xloop *x, unsigned self, unsigned n)
{
    memset(x, 0, sizeof *x);
    x->self = self;
    x->n = n;
    x->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (x->efd < 0)
        return -1;
    x->out = mem_calloc(n, sizeof *x->out);
    x->sent = mem_calloc(n, sizeof *x->sent);
    x->took = mem_calloc(n, sizeof *x->took);
    x->in_from = mem_calloc(2 * (size_t)n, sizeof *x->in_from);
    pthread_mutex_init(&x->lock, NULL);
    return 0;
}

void xloop_fini(struct xloop *x)
{
    if (!x->out)
        return;
    for (unsigned i = 0; i < x->n; i++)
        mem_free(x->out[i].v);
    mem_free(x->out);
    mem_free(x->sent);
    mem_free(x->took);
    mem_free(x->in_from);
    mem_free(x->in.v);
    close(x->efd);
    pthread_mutex_destroy(&x->lock);
    x->out = NULL;
}

void xloop_grow(struct xloop_box *o)
{
    o->cap = o->cap ? o->cap * 2 : 64;
    o->v = mem_realloc(o->v, o->cap * sizeof *o->v);
}

static void xloop_wake(struct xloop *x)
{
    uint64_t one = 1;
    /* Cannot fail but for an overflow of 2^64 - 1 pending wakes. */
    (void)!write(x->efd, &one, sizeof one);
}

unsigned xloop_flush(struct xloop *const *all, unsigned self)
{
    struct xloop *x = all[self];
    unsigned woke = 0;
    for (unsigned to = 0; to < x->n; to++) {
        struct xloop_box *o = &x->out[to];
        if (o->n == 0)
            continue;
        struct xloop *t = all[to];
        x->sent[to] += o->n;
        pthread_mutex_lock(&t->lock);
        t->in_from[self] += o->n;
        bool was_empty = t->in.n == 0;
        if (was_empty) {
            /* The common case: the batch becomes the inbox, no copy. */
            struct xloop_box spare = t->in;
            t->in = *o;
            *o = spare;
        } else {
            while (t->in.cap < t->in.n + o->n)
                xloop_grow(&t->in);
            memcpy(t->in.v + t->in.n, o->v, o->n * sizeof *o->v);
            t->in.n += o->n;
            o->n = 0;
        }
        if (was_empty)
            t->wakes++;
        pthread_mutex_unlock(&t->lock);
        if (was_empty) {
            xloop_wake(t);
            woke++;
        }
    }
    return woke;
}

void xloop_clear(struct xloop *x)
{
    uint64_t v;
    (void)!read(x->efd, &v, sizeof v);
}

bool xloop_take(struct xloop *const *all, unsigned self, struct xloop_box *box)
{
    struct xloop *x = all[self];
    uint32_t *from = x->in_from + x->n; /* the take's copy, this loop's */
    pthread_mutex_lock(&x->lock);
    bool any = x->in.n > 0;
    if (any) {
        struct xloop_box spare = *box;
        *box = x->in;
        x->in = spare;
        memcpy(from, x->in_from, x->n * sizeof *from);
        memset(x->in_from, 0, x->n * sizeof *from);
    }
    pthread_mutex_unlock(&x->lock);
    if (!any)
        return false;
    for (unsigned i = 0; i < x->n; i++) {
        if (from[i] == 0)
            continue;
        /* Sequentially consistent with xloop_over's: either it sees these
         * taken, or this sees it waits. */
        __atomic_store_n(&x->took[i], x->took[i] + from[i], __ATOMIC_SEQ_CST);
        struct xloop *p = all[i];
        if (__atomic_load_n(&p->over, __ATOMIC_SEQ_CST) &&
            __atomic_exchange_n(&p->over, false, __ATOMIC_SEQ_CST))
            xloop_wake(p);
    }
    return true;
}

uint64_t xloop_untaken(struct xloop *const *all, unsigned self)
{
    const struct xloop *x = all[self];
    uint64_t n = 0;
    for (unsigned to = 0; to < x->n; to++)
        if (to != self)
            n += x->out[to].n + x->sent[to] -
                 __atomic_load_n(&all[to]->took[self], __ATOMIC_SEQ_CST);
    return n;
}

bool xloop_over(struct xloop *const *all, unsigned self, uint64_t mark)
{
    if (xloop_untaken(all, self) <= mark)
        return false;
    __atomic_store_n(&all[self]->over, true, __ATOMIC_SEQ_CST);
    return xloop_untaken(all, self) > mark;
}
