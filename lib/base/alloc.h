/* Allocation wrappers used by all of lib/. They behave like malloc & co.
 * and add one thing: a test hook that makes the Nth allocation fail, so
 * that the memory-failure path of every allocation site can be exercised.
 * The hook is process-wide test state, never set by production code. */
#ifndef FAIR_BASE_ALLOC_H
#define FAIR_BASE_ALLOC_H

#include <stddef.h>

void *fair_malloc(size_t n);
void *fair_calloc(size_t count, size_t size);
void *fair_realloc(void *p, size_t n);
/* Grows *p to hold at least need elements of size elem, doubling; returns 0
 * or FAIR_ENOMEM (then *p and *cap are unchanged). */
int fair_grow(void **p, size_t *cap, size_t need, size_t elem);
char *fair_strdup(const char *s);
char *fair_strndup(const char *s, size_t n);
void fair_free(void *p);

/* Test hook: after `countdown` more successful allocations, the next one
 * fails (returns NULL). A negative countdown disables failure. Returns the
 * number of allocations made since the hook was last set. */
void fair_alloc_fail_after(long countdown);
long fair_alloc_count(void);

#endif
