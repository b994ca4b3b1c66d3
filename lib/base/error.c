/* Error reporting: fills the caller's struct fair_error with a code and a
 * message that says what failed and on which object. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int fair_error_set(struct fair_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}

int fair_error_prefix(struct fair_error *err, const char *fmt, ...)
{
    if (!err)
        return 0;
    char prefix[FAIR_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    size_t plen = strlen(prefix), mlen = strnlen(err->msg, sizeof(err->msg) - 1);
    if (plen > sizeof(err->msg) - 1)
        plen = sizeof(err->msg) - 1;
    if (mlen > sizeof(err->msg) - 1 - plen)
        mlen = sizeof(err->msg) - 1 - plen;
    memmove(err->msg + plen, err->msg, mlen);
    memcpy(err->msg, prefix, plen);
    err->msg[plen + mlen] = '\0';
    return err->code;
}

void fair_error_clear(struct fair_error *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}

const char *fair_strerror(int code)
{
    switch (code) {
    case FAIR_OK: return "OK";
    case FAIR_ENOMEM: return "ENOMEM";
    case FAIR_EINVAL: return "EINVAL";
    case FAIR_ERANGE: return "ERANGE";
    case FAIR_EIO: return "EIO";
    case FAIR_ENOTFOUND: return "ENOTFOUND";
    case FAIR_ECONFLICT: return "ECONFLICT";
    case FAIR_EGONE: return "EGONE";
    case FAIR_ETOOMANY: return "ETOOMANY";
    case FAIR_EHTTP: return "EHTTP";
    case FAIR_ETLS: return "ETLS";
    case FAIR_ETIMEDOUT: return "ETIMEDOUT";
    case FAIR_EDB: return "EDB";
    case FAIR_EBUSY: return "EBUSY";
    case FAIR_EPARSE: return "EPARSE";
    default: return "EUNKNOWN";
    }
}
