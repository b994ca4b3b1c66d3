/* The TZif and POSIX TZ reader (lib/base/tz.c) against glibc's own
 * localtime_r on the same zones: every hour from 1970 to 2050 and around
 * every change, the offset and the instant of the next change agree. This
 * test alone may setenv("TZ"): it has one thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/tz.h"

static int32_t glibc_off(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    assert_non_null(localtime_r(&tt, &tm));
    return (int32_t)tm.tm_gmtoff;
}

static void compare(const struct fair_tz *z, const char *tzenv)
{
    setenv("TZ", tzenv, 1);
    tzset();
    int64_t from = 0, to = fair_days_from_civil(2050, 1, 1) * 86400;
    size_t changes = 0;
    for (int64_t t = from; t < to; t += 3600) {
        int64_t next;
        int32_t off = fair_tz_offset(z, t * 1000, &next);
        if (off != glibc_off(t))
            fail_msg("%s at %lld: offset %d, glibc %d", tzenv, (long long)t, off, glibc_off(t));
        if (next != INT64_MAX && next / 1000 < to) {
            int64_t n = next / 1000;
            assert_true(n > t);
            /* Unchanged just before, changed at the instant. */
            if (glibc_off(n - 1) != off || glibc_off(n) == off)
                fail_msg("%s: change after %lld said %lld; glibc %d then %d (was %d)", tzenv,
                         (long long)t, (long long)n, glibc_off(n - 1), glibc_off(n), off);
            if (n - t <= 3600)
                changes++;
        }
    }
    if (strcmp(tzenv, ":Asia/Kolkata") && strcmp(tzenv, "UTC0"))
        assert_true(changes > 50);
}

static void test_zone_files(void **state)
{
    (void)state;
    static const char *zones[] = {"Europe/Berlin",   "America/New_York",  "Australia/Sydney",
                                  "Asia/Kolkata",    "Europe/Dublin",     "America/Sao_Paulo",
                                  "Pacific/Chatham", "Africa/Casablanca", "America/Santiago"};
    for (size_t i = 0; i < sizeof zones / sizeof zones[0]; i++) {
        struct fair_tz *z = NULL;
        struct fair_error err = {0};
        if (fair_tz_load(zones[i], &z, &err))
            fail_msg("%s: %s", zones[i], err.msg);
        char env[80];
        snprintf(env, sizeof env, ":%s", zones[i]);
        compare(z, env);
        fair_tz_free(z);
    }
}

/* A "slim" file (no transitions, everything in the footer), as tzdata
 * builds with ZFLAGS=-b slim, and bare POSIX strings. */
static void test_footer_only(void **state)
{
    (void)state;
    static const char *specs[] = {
        "CET-1CEST,M3.5.0,M10.5.0/3",       "AEST-10AEDT,M10.1.0,M4.1.0/3",
        "IST-1GMT0,M10.5.0,M3.5.0/1",       "PST8PDT,M3.2.0,M11.1.0",
        "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1", "UTC0"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        unsigned char f[200] = {0};
        size_t n = 0;
        for (int v = 0; v < 2; v++) {
            memcpy(f + n, "TZif2", 5);
            /* counts: isut, isstd, leap, time, type 1, char 4 */
            f[n + 20 + 4 * 4 + 3] = 1;
            f[n + 20 + 5 * 4 + 3] = 4;
            n += 44;
            f[n + 2] = 0x0e; /* 3600, whatever: the footer rules */
            f[n + 3] = 0x10;
            n += 6;
            memcpy(f + n, "XXX", 4);
            n += 4;
        }
        int k = snprintf((char *)f + n, sizeof f - n, "\n%s\n", specs[i]);
        n += (size_t)k;
        struct fair_tz *z = NULL;
        struct fair_error err = {0};
        if (fair_tz_parse("slim", f, n, &z, &err))
            fail_msg("%s: %s", specs[i], err.msg);
        compare(z, specs[i]);
        fair_tz_free(z);
        assert_int_equal(fair_tz_posix(specs[i], &z, &err), 0);
        compare(z, specs[i]);
        fair_tz_free(z);
    }
    /* No rule: the US one (glibc reads it from "posixrules" instead, so
     * compare with the explicit rule). */
    struct fair_tz *a = NULL, *b = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_tz_posix("EST5EDT", &a, &err), 0);
    assert_int_equal(fair_tz_posix("EST5EDT,M3.2.0,M11.1.0", &b, &err), 0);
    for (int64_t t = 0; t < 2500000000LL; t += 3599) {
        int64_t na, nb;
        assert_int_equal(fair_tz_offset(a, t * 1000, &na), fair_tz_offset(b, t * 1000, &nb));
        assert_int_equal(na, nb);
    }
    fair_tz_free(a);
    fair_tz_free(b);
}

static void test_bad_input(void **state)
{
    (void)state;
    static const char *names[] = {
        "",    "/etc/passwd",    "../../etc/passwd", "Europe/../x", "Europe/Nowhere",
        "a b", "Europe/Berlin\n"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct fair_tz *z = NULL;
        struct fair_error err = {0};
        assert_int_equal(fair_tz_load(names[i], &z, &err), FAIR_EINVAL);
        assert_null(z);
        assert_true(err.msg[0]);
    }
    static const char *specs[] = {"",
                                  "C",
                                  "CET",
                                  "CET-1CEST,M3.5",
                                  "CET-1CEST,M13.5.0,M10.5.0",
                                  "CET-99",
                                  "CET-1CEST,J0,J5",
                                  "<>1"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        struct fair_tz *z = NULL;
        struct fair_error err = {0};
        if (fair_tz_posix(specs[i], &z, &err) != FAIR_EINVAL)
            fail_msg("\"%s\" accepted", specs[i]);
    }
    /* Truncated and damaged files. */
    struct fair_tz *z = NULL;
    struct fair_error err = {0};
    FILE *fp = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb");
    assert_non_null(fp);
    unsigned char buf[8192];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    for (size_t cut = 0; cut < n; cut += 37) {
        int rc = fair_tz_parse("cut", buf, cut, &z, &err);
        if (rc == 0) { /* a v1 prefix can be whole */
            fair_tz_free(z);
            z = NULL;
        }
    }
    buf[4 + 16 + 4 * 4 + 3] ^= 0x40; /* a v1 count */
    assert_int_not_equal(fair_tz_parse("bad", buf, n, &z, &err), 0);
}

static void test_calendar(void **state)
{
    (void)state;
    assert_int_equal(fair_days_from_civil(1970, 1, 1), 0);
    assert_int_equal(fair_days_from_civil(2000, 3, 1), 11017);
    assert_int_equal(fair_weekday(fair_days_from_civil(2026, 11, 26)), 4); /* Thursday */
    for (int64_t d = -800000; d < 800000; d += 7919) {
        int64_t y;
        int m, dd;
        fair_civil_from_days(d, &y, &m, &dd);
        assert_int_equal(fair_days_from_civil(y, m, dd), d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zone_files),
        cmocka_unit_test(test_footer_only),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_calendar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
