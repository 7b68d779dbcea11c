/* mem.h - allocation wrappers with one out-of-memory policy: log and abort.
 *
 * Every allocation in shootout goes through these, so callers never check
 * for NULL. Bounded queues, not allocation failure, are how the servers
 * refuse work they cannot hold.
 */
#ifndef SHOOTOUT_MEM_H
#define SHOOTOUT_MEM_H

#include <stddef.h>

void *mem_alloc(size_t size);
void *mem_calloc(size_t n, size_t size);
void *mem_realloc(void *p, size_t size);
/* Copies len bytes and appends a NUL. */
char *mem_strndup(const void *s, size_t len);
char *mem_strdup(const char *s);
void mem_free(void *p);

#endif
