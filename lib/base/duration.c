/* Go-style duration parsing (see duration.h). Works in nanoseconds. */
#include "base/duration.h"

#include <stdio.h>
#include <string.h>

int fair_duration_parse_ms(const char *s, int64_t *out_ms, struct fair_error *err)
{
    if (!s || !*s)
        return fair_error_set(err, FAIR_EINVAL, "duration is empty");
    size_t len = strnlen(s, FAIR_DURATION_MAX_LEN + 1);
    if (len > FAIR_DURATION_MAX_LEN)
        return fair_error_set(err, FAIR_ERANGE, "duration is longer than %d characters",
                              FAIR_DURATION_MAX_LEN);
    const char *p = s;
    if (*p == '-')
        return fair_error_set(err, FAIR_EINVAL, "duration \"%s\" is negative", s);
    if (*p == '+')
        p++;
    if (strcmp(p, "0") == 0) {
        *out_ms = 0;
        return 0;
    }
    const long double max_ns = 9.2e18L;
    long double total_ns = 0;
    int parts = 0;
    while (*p) {
        long double v = 0, scale = 1;
        int digits = 0, dot = 0;
        for (; (*p >= '0' && *p <= '9') || (*p == '.' && !dot); p++) {
            if (*p == '.') {
                dot = 1;
                continue;
            }
            if (++digits > 19)
                goto range;
            if (dot) {
                scale /= 10;
                v += (*p - '0') * scale;
            } else {
                v = v * 10 + (*p - '0');
            }
        }
        if (digits == 0)
            goto bad;
        long double unit;
        if (strncmp(p, "ns", 2) == 0) {
            unit = 1;
            p += 2;
        } else if (strncmp(p, "us", 2) == 0) {
            unit = 1e3L;
            p += 2;
        } else if (strncmp(p, "\xc2\xb5s", 3) == 0) {
            unit = 1e3L;
            p += 3;
        } else if (strncmp(p, "ms", 2) == 0) {
            unit = 1e6L;
            p += 2;
        } else if (*p == 's') {
            unit = 1e9L;
            p++;
        } else if (*p == 'm') {
            unit = 60e9L;
            p++;
        } else if (*p == 'h') {
            unit = 3600e9L;
            p++;
        } else {
            goto bad;
        }
        total_ns += v * unit;
        if (total_ns > max_ns)
            goto range;
        parts++;
    }
    if (parts == 0)
        goto bad;
    int64_t ns = (int64_t)(total_ns + 0.5L);
    *out_ms = ns / 1000000 + (ns % 1000000 ? 1 : 0);
    return 0;
bad:
    return fair_error_set(err, FAIR_EINVAL,
                          "duration \"%s\" is malformed (expected e.g. 90s, 5m or 1h30m)", s);
range:
    return fair_error_set(err, FAIR_ERANGE, "duration \"%s\" is out of range", s);
}

void fair_duration_format_ms(int64_t ms, char *out, size_t n)
{
    int64_t h = ms / 3600000, m = (ms / 60000) % 60, sec = (ms / 1000) % 60, rest = ms % 1000;
    if (h)
        snprintf(out, n, "%lldh%lldm%llds", (long long)h, (long long)m, (long long)sec);
    else if (m)
        snprintf(out, n, "%lldm%llds", (long long)m, (long long)sec);
    else if (rest)
        snprintf(out, n, "%lld.%03llds", (long long)sec, (long long)rest);
    else
        snprintf(out, n, "%llds", (long long)sec);
}
