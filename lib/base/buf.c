/* Growable, capped byte buffer (see buf.h). */
#include "base/buf.h"
#include "base/alloc.h"
#include "base/error.h"

#include <stdio.h>
#include <string.h>

void fair_buf_init(struct fair_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max ? max : FAIR_BUF_DEFAULT_MAX;
}

void fair_buf_release(struct fair_buf *b)
{
    fair_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void fair_buf_reset(struct fair_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int reserve(struct fair_buf *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra)
        return FAIR_ERANGE;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t ncap = b->cap ? b->cap : 64;
    while (ncap < need)
        ncap *= 2;
    char *nd = fair_realloc(b->data, ncap);
    if (!nd)
        return FAIR_ENOMEM;
    b->data = nd;
    b->cap = ncap;
    return 0;
}

int fair_buf_append(struct fair_buf *b, const void *data, size_t n)
{
    int rc = reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int fair_buf_appends(struct fair_buf *b, const char *s)
{
    return fair_buf_append(b, s, strlen(s));
}

int fair_buf_vappendf(struct fair_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return FAIR_EINVAL;
    int rc = reserve(b, (size_t)n);
    if (rc)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int fair_buf_appendf(struct fair_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = fair_buf_vappendf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void fair_buf_consume(struct fair_buf *b, size_t n)
{
    if (n >= b->len) {
        fair_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *fair_buf_detach(struct fair_buf *b)
{
    char *d = b->data;
    if (!d)
        d = fair_strdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

const char *fair_buf_str(const struct fair_buf *b)
{
    return b->data ? b->data : "";
}
