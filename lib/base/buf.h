/* A growable byte buffer, always NUL-terminated, with a hard size cap.
 * Modelled on git's strbuf: init/release for caller-owned storage. */
#ifndef FAIR_BASE_BUF_H
#define FAIR_BASE_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct fair_buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
    size_t max; /* appends that would pass this fail with FAIR_ERANGE */
};

#define FAIR_BUF_DEFAULT_MAX ((size_t)64 << 20)

void fair_buf_init(struct fair_buf *b, size_t max);
void fair_buf_release(struct fair_buf *b);
void fair_buf_reset(struct fair_buf *b);
int fair_buf_append(struct fair_buf *b, const void *data, size_t n);
int fair_buf_appends(struct fair_buf *b, const char *s);
int fair_buf_appendf(struct fair_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int fair_buf_vappendf(struct fair_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Removes the first n bytes (n <= len). */
void fair_buf_consume(struct fair_buf *b, size_t n);
/* Hands the storage to the caller (never NULL on success: "" when empty)
 * and resets b. Returns NULL on allocation failure. */
char *fair_buf_detach(struct fair_buf *b);
/* The contents as a string; "" when empty. Borrowed. */
const char *fair_buf_str(const struct fair_buf *b);

#endif
