/* Time windows, budget periods and decay (ctl/timequota.h): window
 * boundaries to the millisecond, days past midnight, both DST changes of
 * Europe/Berlin, a midnight that does not exist (America/Santiago), and
 * the decayed integral against a plain sum. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/timequota.h"

static int64_t utc(int y, int mo, int d, int h, int mi, int s)
{
    return (fair_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) * 1000;
}

static struct fair_tz *zone(const char *name)
{
    struct fair_tz *z = NULL;
    struct fair_error err = {0};
    if (fair_tz_load(name, &z, &err))
        fail_msg("%s: %s", name, err.msg);
    return z;
}

#define MON (1 << 1)
#define FRI (1 << 5)
#define SAT (1 << 6)
#define SUN (1 << 0)
#define WEEKDAYS (0x3e)
#define ALL 0x7f

static struct fair_kwindow win(const char *name, uint8_t days, int start, int end)
{
    struct fair_kwindow w;
    memset(&w, 0, sizeof w);
    snprintf(w.name, sizeof w.name, "%s", name);
    w.days = days;
    w.start_min = (int16_t)start;
    w.end_min = (int16_t)end;
    return w;
}

#define H8 (8 * 60)
#define H20 (20 * 60)
#define HORIZON (8 * 86400000LL)

/* One row: the windows in force at t, and the next switch from t. */
struct row {
    const char *what;
    int64_t t;
    int active;
    int64_t next;
};

static void check_rows(const struct fair_kwindow *w, size_t n, const struct fair_tz *const *zs,
                       const struct row *rows, size_t nrows)
{
    for (size_t i = 0; i < nrows; i++) {
        const struct row *r = &rows[i];
        int a = fair_ctl_window_active(w, n, zs, r->t);
        int64_t nx = fair_ctl_window_next(w, n, zs, r->t, HORIZON);
        if (a != r->active || nx != r->next)
            fail_msg("%s: active %d next %lld, want %d %lld", r->what, a, (long long)nx, r->active,
                     (long long)r->next);
        if (nx) { /* the switch is exact: different at nx, the same just before */
            assert_int_equal(fair_ctl_window_active(w, n, zs, nx - 1), a);
            assert_int_not_equal(fair_ctl_window_active(w, n, zs, nx), a);
        }
    }
}

static void test_weekday_window(void **state)
{
    (void)state;
    struct fair_tz *z = zone("Europe/Berlin");
    const struct fair_tz *zs[1] = {z};
    struct fair_kwindow w[1] = {win("day", WEEKDAYS, H8, H20)};
    /* Thursday 2026-11-26, CET (UTC+1): 08:00 local is 07:00Z. */
    const struct row rows[] = {
        {"Thu 07:59:59.999", utc(2026, 11, 26, 6, 59, 59) + 999, -1, utc(2026, 11, 26, 7, 0, 0)},
        {"Thu 08:00:00.000", utc(2026, 11, 26, 7, 0, 0), 0, utc(2026, 11, 26, 19, 0, 0)},
        {"Thu 19:59:59.999", utc(2026, 11, 26, 18, 59, 59) + 999, 0, utc(2026, 11, 26, 19, 0, 0)},
        {"Thu 20:00", utc(2026, 11, 26, 19, 0, 0), -1, utc(2026, 11, 27, 7, 0, 0)},
        {"Fri 20:00 to Mon 08:00", utc(2026, 11, 27, 19, 0, 0), -1, utc(2026, 11, 30, 7, 0, 0)},
        {"Sat noon", utc(2026, 11, 28, 11, 0, 0), -1, utc(2026, 11, 30, 7, 0, 0)},
    };
    check_rows(w, 1, zs, rows, sizeof rows / sizeof rows[0]);
    fair_tz_free(z);
}

static void test_overnight_and_first_wins(void **state)
{
    (void)state;
    struct fair_tz *z = zone("Europe/Berlin");
    const struct fair_tz *zs[2] = {z, z};
    /* Nights of Mon-Fri (20:00 to 08:00 the next morning), then whole
     * weekends; the night of Friday runs into Saturday morning. */
    struct fair_kwindow w[2] = {win("night", WEEKDAYS, H20, H8),
                                win("weekend", SAT | SUN, 0, 1440)};
    const struct row rows[] = {
        {"Mon 07:00: Sunday's night is not listed", utc(2026, 11, 30, 6, 0, 0), -1,
         utc(2026, 11, 30, 19, 0, 0)},
        {"Sun 23:00: weekend", utc(2026, 11, 29, 22, 0, 0), 1, utc(2026, 11, 29, 23, 0, 0)},
        {"Mon 12:00: none", utc(2026, 11, 30, 11, 0, 0), -1, utc(2026, 11, 30, 19, 0, 0)},
        {"Fri 23:00: night", utc(2026, 12, 4, 22, 0, 0), 0, utc(2026, 12, 5, 7, 0, 0)},
        {"Sat 07:59: still Friday's night (listed first)", utc(2026, 12, 5, 6, 59, 0), 0,
         utc(2026, 12, 5, 7, 0, 0)},
        {"Sat 08:00: weekend", utc(2026, 12, 5, 7, 0, 0), 1, utc(2026, 12, 6, 23, 0, 0)},
    };
    check_rows(w, 2, zs, rows, sizeof rows / sizeof rows[0]);
    fair_tz_free(z);
}

static void test_dst_changes(void **state)
{
    (void)state;
    struct fair_tz *z = zone("Europe/Berlin");
    const struct fair_tz *zs[1] = {z};
    struct fair_kwindow w[1] = {win("early", ALL, 2 * 60 + 30, 4 * 60)};
    const struct row rows[] = {
        /* 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00Z; 02:30
         * never happens, so the window starts at the end of the gap and
         * ends at 04:00 CEST = 02:00Z. */
        {"spring: before", utc(2026, 3, 29, 0, 0, 0), -1, utc(2026, 3, 29, 1, 0, 0)},
        {"spring: 03:00 CEST", utc(2026, 3, 29, 1, 0, 0), 0, utc(2026, 3, 29, 2, 0, 0)},
        {"spring: the day after, 02:00 CEST", utc(2026, 3, 30, 0, 0, 0), -1,
         utc(2026, 3, 30, 0, 30, 0)},
        /* 2026-10-25: 03:00 CEST falls back to 02:00 CET at 01:00Z; 02:30
         * happens twice, the window runs twice. */
        {"fall: 02:30 CEST", utc(2026, 10, 25, 0, 30, 0), 0, utc(2026, 10, 25, 1, 0, 0)},
        {"fall: 02:00 CET", utc(2026, 10, 25, 1, 0, 0), -1, utc(2026, 10, 25, 1, 30, 0)},
        {"fall: 02:30 CET", utc(2026, 10, 25, 1, 30, 0), 0, utc(2026, 10, 25, 3, 0, 0)},
    };
    check_rows(w, 1, zs, rows, sizeof rows / sizeof rows[0]);
    fair_tz_free(z);
}

static void test_windows_in_two_zones(void **state)
{
    (void)state;
    struct fair_tz *b = zone("Europe/Berlin"), *ny = zone("America/New_York");
    const struct fair_tz *zs[2] = {b, ny};
    struct fair_kwindow w[2] = {win("eu", WEEKDAYS, 9 * 60, 17 * 60),
                                win("us", WEEKDAYS, 9 * 60, 17 * 60)};
    /* Thu 2026-11-26: Berlin 08:00-16:00Z, New York (EST) 14:00-22:00Z. */
    const struct row rows[] = {
        {"eu", utc(2026, 11, 26, 10, 0, 0), 0, utc(2026, 11, 26, 16, 0, 0)},
        {"us after eu", utc(2026, 11, 26, 16, 0, 0), 1, utc(2026, 11, 26, 22, 0, 0)},
    };
    check_rows(w, 2, zs, rows, sizeof rows / sizeof rows[0]);
    /* A window whose zone did not load is never active. */
    const struct fair_tz *none[2] = {NULL, ny};
    assert_int_equal(fair_ctl_window_active(w, 2, none, utc(2026, 11, 26, 10, 0, 0)), -1);
    fair_tz_free(b);
    fair_tz_free(ny);
}

static void test_apply(void **state)
{
    (void)state;
    struct fair_kquota spec = {.guaranteed = {{4000, 64000, 1 << 30}},
                               .limit = {{8000, INT64_MAX, INT64_MAX}},
                               .over_quota_weight = 2};
    struct fair_kwindow w = win("day", ALL, 0, 1440);
    w.guaranteed.v[FAIR_RES_GPU] = 16000;
    w.g_set = 1 << FAIR_RES_GPU;
    w.limit.v[FAIR_RES_CPU] = 100000;
    w.l_set = 1 << FAIR_RES_CPU;
    w.weight = 5;
    struct fair_kquota out;
    fair_ctl_window_apply(&spec, &w, &out);
    assert_int_equal(out.guaranteed.v[FAIR_RES_GPU], 16000);
    assert_int_equal(out.guaranteed.v[FAIR_RES_CPU], 64000);
    assert_int_equal(out.limit.v[FAIR_RES_GPU], 8000);
    assert_int_equal(out.limit.v[FAIR_RES_CPU], 100000);
    assert_int_equal(out.over_quota_weight, 5);
    fair_ctl_window_apply(&spec, NULL, &out);
    assert_memory_equal(&out, &spec, sizeof spec);
}

static void test_budget_periods(void **state)
{
    (void)state;
    struct fair_tz *b = zone("Europe/Berlin"), *u = zone("UTC"), *scl = zone("America/Santiago");
    const struct {
        const char *what;
        int zone; /* 0 Berlin, 1 UTC, 2 Santiago */
        enum fair_kbudget_period p;
        int64_t now, start, end;
    } tab[] = {
        {"day of spring forward: 23 h", 0, FAIR_KBUDGET_DAY, utc(2026, 3, 29, 12, 0, 0),
         utc(2026, 3, 28, 23, 0, 0), utc(2026, 3, 29, 22, 0, 0)},
        {"day of fall back: 25 h", 0, FAIR_KBUDGET_DAY, utc(2026, 10, 25, 12, 0, 0),
         utc(2026, 10, 24, 22, 0, 0), utc(2026, 10, 25, 23, 0, 0)},
        {"week from Monday", 0, FAIR_KBUDGET_WEEK, utc(2026, 11, 26, 12, 0, 0),
         utc(2026, 11, 22, 23, 0, 0), utc(2026, 11, 29, 23, 0, 0)},
        {"Monday 00:00 local starts the week", 0, FAIR_KBUDGET_WEEK, utc(2026, 11, 22, 23, 0, 0),
         utc(2026, 11, 22, 23, 0, 0), utc(2026, 11, 29, 23, 0, 0)},
        {"Sunday 23:59:59 local ends it", 0, FAIR_KBUDGET_WEEK, utc(2026, 11, 22, 22, 59, 59),
         utc(2026, 11, 15, 23, 0, 0), utc(2026, 11, 22, 23, 0, 0)},
        {"month across fall back", 0, FAIR_KBUDGET_MONTH, utc(2026, 10, 10, 0, 0, 0),
         utc(2026, 9, 30, 22, 0, 0), utc(2026, 10, 31, 23, 0, 0)},
        {"December to January", 1, FAIR_KBUDGET_MONTH, utc(2026, 12, 31, 23, 59, 59),
         utc(2026, 12, 1, 0, 0, 0), utc(2027, 1, 1, 0, 0, 0)},
        {"February of a leap year", 1, FAIR_KBUDGET_MONTH, utc(2028, 2, 29, 0, 0, 0),
         utc(2028, 2, 1, 0, 0, 0), utc(2028, 3, 1, 0, 0, 0)},
        /* Chile skips 2026-09-06 00:00 (-04 to -03 at 04:00Z): the day
         * starts at the end of the gap, 01:00 local. */
        {"a midnight that does not exist", 2, FAIR_KBUDGET_DAY, utc(2026, 9, 6, 12, 0, 0),
         utc(2026, 9, 6, 4, 0, 0), utc(2026, 9, 7, 3, 0, 0)},
    };
    const struct fair_tz *zs[3] = {b, u, scl};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        int64_t s, e;
        fair_ctl_budget_period(tab[i].p, zs[tab[i].zone], tab[i].now, &s, &e);
        if (s != tab[i].start || e != tab[i].end)
            fail_msg("%s: [%lld, %lld), want [%lld, %lld)", tab[i].what, (long long)s, (long long)e,
                     (long long)tab[i].start, (long long)tab[i].end);
    }
    fair_tz_free(b);
    fair_tz_free(u);
    fair_tz_free(scl);
}

static void test_budget_level_and_decay(void **state)
{
    (void)state;
    assert_int_equal(fair_ctl_budget_level(0, 100), 0);
    assert_int_equal(fair_ctl_budget_level(79, 100), 0);
    assert_int_equal(fair_ctl_budget_level(80, 100), 80);
    assert_int_equal(fair_ctl_budget_level(99, 100), 80);
    assert_int_equal(fair_ctl_budget_level(100, 100), 100);
    assert_int_equal(fair_ctl_budget_level(0, 0), 100);
    assert_int_equal(fair_ctl_budget_level(INT64_MAX - 1, INT64_MAX), 80);
    int64_t H = 7 * 86400000LL;
    assert_true(fabs(fair_ctl_decay_factor(H, H) - 0.5) < 1e-12);
    assert_true(fabs(fair_ctl_decay_factor(3 * H, H) - 0.125) < 1e-12);
    assert_true(fair_ctl_decay_factor(-5, H) == 1);
    /* 2 GPUs for 10 days ending 3 days ago: the integral against a sum of
     * one-minute steps. */
    int64_t now = utc(2026, 11, 26, 0, 0, 0), a = now - 13 * 86400000LL, b = now - 3 * 86400000LL;
    double exact = fair_ctl_decay_interval(2000, a, b, now, H);
    double sum = 0;
    for (int64_t t = a; t < b; t += 60000)
        sum += 2000.0 * 60000 * fair_ctl_decay_factor(now - (t + 30000), H);
    assert_true(fabs(exact - sum) / sum < 1e-6);
    /* No decay: plain GPU x time; nothing after now; nothing for b <= a. */
    assert_true(fair_ctl_decay_interval(2000, a, b, now, 0) == 2000.0 * (double)(b - a));
    assert_true(fair_ctl_decay_interval(2000, now, now + 1000, now, H) == 0);
    assert_true(fair_ctl_decay_interval(2000, b, a, now, H) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weekday_window),
        cmocka_unit_test(test_overnight_and_first_wins),
        cmocka_unit_test(test_dst_changes),
        cmocka_unit_test(test_windows_in_two_zones),
        cmocka_unit_test(test_apply),
        cmocka_unit_test(test_budget_periods),
        cmocka_unit_test(test_budget_level_and_decay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
