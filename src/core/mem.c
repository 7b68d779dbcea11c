/* mem.c - allocation wrappers that abort on out-of-memory. */
#include "core/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void mem_oom(size_t size)
{
    fprintf(stderr, "shootout: out of memory allocating %zu bytes\n", size);
    abort();
}

void *mem_alloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        mem_oom(size);
    return p;
}

void *mem_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        mem_oom(n * size);
    return p;
}

void *mem_realloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q)
        mem_oom(size);
    return q;
}

char *mem_strndup(const void *s, size_t len)
{
    char *p = mem_alloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *mem_strdup(const char *s) { return mem_strndup(s, strlen(s)); }

void mem_free(void *p) { free(p); }
