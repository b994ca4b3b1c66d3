/* Error codes and the error struct every lib/ function reports through.
 * Functions return 0 on success or a negative FAIR_E* code; when the caller
 * passes a struct fair_error, it also receives a message for the user. */
#ifndef FAIR_BASE_ERROR_H
#define FAIR_BASE_ERROR_H

#include <stddef.h>

enum {
    FAIR_OK = 0,
    FAIR_ENOMEM = -1,    /* allocation failed */
    FAIR_EINVAL = -2,    /* bad input: the message says which field and why */
    FAIR_ERANGE = -3,    /* a value or a size is out of bounds */
    FAIR_EIO = -4,       /* an I/O or system call failed */
    FAIR_ENOTFOUND = -5, /* Kubernetes 404, or a missing object */
    FAIR_ECONFLICT = -6, /* Kubernetes 409: stale resourceVersion or exists */
    FAIR_EGONE = -7,     /* Kubernetes 410: resourceVersion too old */
    FAIR_ETOOMANY = -8,  /* Kubernetes 429: throttled or blocked by a PDB */
    FAIR_EHTTP = -9,     /* another HTTP or transport failure */
    FAIR_ETLS = -10,     /* TLS setup or verification failed */
    FAIR_ETIMEDOUT = -11,
    FAIR_EDB = -12,      /* SQLite failed */
    FAIR_EBUSY = -13,    /* the resource is locked or in use */
    FAIR_EPARSE = -14,   /* malformed document (JSON, YAML, CSV, ...) */
};

#define FAIR_ERROR_MSG_MAX 512

/* Caller-owned; fair_error_set() overwrites, so the last failure wins. */
struct fair_error {
    int code;
    char msg[FAIR_ERROR_MSG_MAX];
};

/* Records code and a printf-style message in err (err may be NULL) and
 * returns code, so that callers can write `return fair_error_set(...)`. */
int fair_error_set(struct fair_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the existing message with context ("file x.yaml: " + msg). */
int fair_error_prefix(struct fair_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void fair_error_clear(struct fair_error *err);

/* A short constant name for a code, such as "EINVAL". */
const char *fair_strerror(int code);

#endif
