/* System and manual clocks, and RFC 3339 time conversion (see clock.h). */
#include "base/clock.h"
#include "base/tz.h"
#include "base/error.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t sys_now(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t sys_mono(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const struct fair_clock system_clock = {sys_now, sys_mono, NULL};

const struct fair_clock *fair_clock_system(void)
{
    return &system_clock;
}

static int64_t manual_now(void *ctx)
{
    return *(int64_t *)ctx;
}

void fair_clock_manual_init(struct fair_clock *c, int64_t *now_ms)
{
    c->now_ms = manual_now;
    c->monotonic_ms = manual_now;
    c->ctx = now_ms;
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int fair_time_parse_rfc3339(const char *s, int64_t *out_ms)
{
    int Y, M, D, h, mi, sec;
    if (!s || strnlen(s, 64) < 20 || strnlen(s, 64) >= 64)
        return FAIR_EINVAL;
    if (digits(s, 4, &Y) || s[4] != '-' || digits(s + 5, 2, &M) || s[7] != '-' ||
        digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
        digits(s + 17, 2, &sec))
        return FAIR_EINVAL;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || mi > 59 || sec > 60)
        return FAIR_EINVAL;
    if (M == 2 && D == 29 && !((Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0))
        return FAIR_EINVAL;
    const char *p = s + 19;
    int ms = 0;
    if (*p == '.') {
        int n = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, n++)
            if (n < 3)
                ms = ms * 10 + (*p - '0');
        if (n == 0)
            return FAIR_EINVAL;
        for (; n < 3; n++)
            ms *= 10;
    }
    int64_t offset_min = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return FAIR_EINVAL;
        offset_min = (oh * 60 + om) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return FAIR_EINVAL;
    }
    if (*p != '\0')
        return FAIR_EINVAL;
    int64_t days = fair_days_from_civil(Y, M, D);
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    *out_ms = secs * 1000 + ms;
    return 0;
}

void fair_time_format_rfc3339(int64_t ms, char *out, int n)
{
    if (!out || n <= 0)
        return;
    /* Floor division that cannot overflow (ms - 999 did near INT64_MIN). */
    time_t t = (time_t)(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        out[0] = '\0'; /* beyond the years struct tm can hold */
        return;
    }
    /* %04lld rather than strftime's %Y, which does not pad years before 1000
     * (found by tests/fuzz/fuzz_time.c: the text did not parse back). */
    snprintf(out, (size_t)n, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}
