/* Allocation wrappers with an injectable failure for tests (see alloc.h). */
#include "base/alloc.h"
#include "base/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static long fail_countdown = -1;
static long alloc_count;

static int should_fail(void)
{
    alloc_count++;
    if (fail_countdown < 0)
        return 0;
    if (fail_countdown == 0) {
        fail_countdown = -1;
        return 1;
    }
    fail_countdown--;
    return 0;
}

void fair_alloc_fail_after(long countdown)
{
    fail_countdown = countdown;
    alloc_count = 0;
}

long fair_alloc_count(void)
{
    return alloc_count;
}

void *fair_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *fair_calloc(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *fair_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

int fair_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return FAIR_ENOMEM;
        ncap *= 2;
    }
    if (elem && ncap > SIZE_MAX / elem)
        return FAIR_ENOMEM;
    void *np = fair_realloc(*p, ncap * elem);
    if (!np)
        return FAIR_ENOMEM;
    *p = np;
    *cap = ncap;
    return 0;
}

char *fair_strndup(const char *s, size_t n)
{
    if (!s)
        return NULL;
    size_t len = strnlen(s, n);
    char *d = fair_malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *fair_strdup(const char *s)
{
    return s ? fair_strndup(s, SIZE_MAX) : NULL;
}

void fair_free(void *p)
{
    free(p);
}
