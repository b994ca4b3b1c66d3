/* Exact Kubernetes quantity parsing (see quantity.h). Everything is done in
 * 128-bit integers: mantissa x 10^e x 1024^k x scale, then rounded up. */
#include "base/quantity.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef __int128 i128;

static int parse(const char *s, int64_t scale, int64_t *out, struct fair_error *err)
{
    if (!s)
        return fair_error_set(err, FAIR_EINVAL, "quantity is missing");
    size_t len = strnlen(s, FAIR_QUANTITY_MAX_LEN + 1);
    if (len == 0)
        return fair_error_set(err, FAIR_EINVAL, "quantity is empty");
    if (len > FAIR_QUANTITY_MAX_LEN)
        return fair_error_set(err, FAIR_ERANGE, "quantity is longer than %d characters",
                              FAIR_QUANTITY_MAX_LEN);
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    i128 mant = 0;
    int ndigits = 0, frac = 0, seen_dot = 0, sig = 0;
    for (;; p++) {
        if (*p >= '0' && *p <= '9') {
            ndigits++;
            if (mant == 0 && *p == '0') {
                if (seen_dot)
                    frac++;
                continue; /* leading zeros carry no precision */
            }
            if (++sig > 30)
                goto bad_range;
            mant = mant * 10 + (*p - '0');
            if (seen_dot)
                frac++;
        } else if (*p == '.' && !seen_dot) {
            seen_dot = 1;
        } else {
            break;
        }
    }
    if (ndigits == 0)
        goto bad;

    int exp10 = -frac, pow1024 = 0;
    const char *suf = p;
    if (*suf == '\0') {
    } else if (suf[1] == 'i' && suf[2] == '\0') {
        const char *bin = "KMGTPE";
        const char *hit = strchr(bin, suf[0]);
        if (!hit)
            goto bad;
        pow1024 = (int)(hit - bin) + 1;
    } else if (suf[1] == '\0' && strchr("mkMGTPE", suf[0])) {
        switch (suf[0]) {
        case 'm': exp10 -= 3; break;
        case 'k': exp10 += 3; break;
        case 'M': exp10 += 6; break;
        case 'G': exp10 += 9; break;
        case 'T': exp10 += 12; break;
        case 'P': exp10 += 15; break;
        case 'E': exp10 += 18; break;
        }
    } else if (suf[0] == 'e' || suf[0] == 'E') {
        const char *q = suf + 1;
        int eneg = 0, e = 0, edig = 0;
        if (*q == '+' || *q == '-') {
            eneg = *q == '-';
            q++;
        }
        for (; *q >= '0' && *q <= '9'; q++) {
            if (++edig > 4)
                goto bad_range;
            e = e * 10 + (*q - '0');
        }
        if (edig == 0 || *q != '\0')
            goto bad;
        exp10 += eneg ? -e : e;
    } else {
        goto bad;
    }

    /* value = mant * 10^exp10 * 1024^pow1024 * scale */
    const i128 limit = (i128)INT64_MAX;
    i128 v = mant * scale;
    for (int i = 0; i < pow1024; i++) {
        if (v > limit)
            goto bad_range;
        v *= 1024;
    }
    if (v != 0) {
        for (; exp10 > 0; exp10--) {
            if (v > limit)
                goto bad_range;
            v *= 10;
        }
    }
    int roundup = 0;
    for (; exp10 < 0 && v != 0; exp10++) {
        if (v % 10)
            roundup = 1;
        v /= 10;
    }
    if (roundup)
        v += neg ? 0 : 1; /* round towards +infinity, as Kubernetes does */
    if (v > limit)
        goto bad_range;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
bad:
    return fair_error_set(err, FAIR_EINVAL,
                          "quantity \"%s\" is malformed (expected a number with an optional "
                          "suffix such as 500m, 2, 1.5, 16Gi or 1e3)",
                          s);
bad_range:
    return fair_error_set(err, FAIR_ERANGE, "quantity \"%s\" is out of range", s);
}

int fair_quantity_parse_milli(const char *s, int64_t *out, struct fair_error *err)
{
    return parse(s, 1000, out, err);
}

int fair_quantity_parse(const char *s, int64_t *out, struct fair_error *err)
{
    return parse(s, 1, out, err);
}

void fair_milli_format(int64_t milli, char *out, size_t n)
{
    const char *sign = milli < 0 ? "-" : "";
    uint64_t m = milli < 0 ? (uint64_t)0 - (uint64_t)milli : (uint64_t)milli;
    uint64_t whole = m / 1000, frac = m % 1000;
    if (frac == 0)
        snprintf(out, n, "%s%llu", sign, (unsigned long long)whole);
    else if (frac % 100 == 0)
        snprintf(out, n, "%s%llu.%01llu", sign, (unsigned long long)whole,
                 (unsigned long long)(frac / 100));
    else if (frac % 10 == 0)
        snprintf(out, n, "%s%llu.%02llu", sign, (unsigned long long)whole,
                 (unsigned long long)(frac / 10));
    else
        snprintf(out, n, "%s%llu.%03llu", sign, (unsigned long long)whole,
                 (unsigned long long)frac);
}

void fair_bytes_format(int64_t bytes, char *out, size_t n)
{
    static const char *suf[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int i = 0;
    int64_t v = bytes;
    while (i < 6 && v != 0 && v % 1024 == 0) {
        v /= 1024;
        i++;
    }
    snprintf(out, n, "%lld%s", (long long)v, suf[i]);
}
