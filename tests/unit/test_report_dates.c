/* Report dates: relative names (today, yesterday, -Nd, this-month,
 * last-month) resolved at a given "now" in fixed offsets and in zones with
 * daylight-saving changes (given as tables, so that the test does not
 * depend on the machine's tz database), month and year ends, leap days,
 * midnight in a DST gap or overlap; the unit and share columns; the
 * prices parameter and the HTTP form's new parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "ledger/report.h"

static int64_t T(const char *s)
{
    int64_t ms = 0;
    if (fair_time_parse_rfc3339(s, &ms))
        fail_msg("bad time %s", s);
    return ms;
}

/* A zone as a table: offset[i] holds from change[i-1] (inclusive) to
 * change[i]; offset[0] before change[0]. */
struct table_zone {
    size_t n;
    int64_t change[4];
    int offset[5];
};

static int table_offset(void *ctx, int64_t utc_ms, int *min_east)
{
    const struct table_zone *z = ctx;
    size_t i = 0;
    while (i < z->n && utc_ms >= z->change[i])
        i++;
    *min_east = z->offset[i];
    return 0;
}

/* Europe/Berlin in 2026: CEST from 03-29 01:00Z to 10-25 01:00Z. */
static struct table_zone berlin;
/* A zone whose clocks jump at local midnight (as America/Santiago's do):
 * -04:00 until 2026-09-06 04:00Z (local midnight), then -03:00; and back
 * at 2027-04-04 04:00Z (local 01:00 becomes 00:00: midnight happens twice). */
static struct table_zone santiago;

static void zones(struct fair_report_zone *b, struct fair_report_zone *s)
{
    berlin.n = 2;
    berlin.change[0] = T("2026-03-29T01:00:00Z");
    berlin.change[1] = T("2026-10-25T01:00:00Z");
    berlin.offset[0] = 60;
    berlin.offset[1] = 120;
    berlin.offset[2] = 60;
    santiago.n = 2;
    santiago.change[0] = T("2026-09-06T04:00:00Z");
    santiago.change[1] = T("2027-04-04T04:00:00Z");
    santiago.offset[0] = -240;
    santiago.offset[1] = -180;
    santiago.offset[2] = -240;
    *b = (struct fair_report_zone){.offset_at = table_offset, .ctx = &berlin};
    *s = (struct fair_report_zone){.offset_at = table_offset, .ctx = &santiago};
}

struct rcase {
    const char *date, *now;
    const char *start, *end; /* end NULL: no implied end */
};

static void check(const struct fair_report_zone *z, const struct rcase *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct fair_error err = {0};
        int64_t start = 0, end = 0;
        if (fair_report_date_resolve(c[i].date, z, T(c[i].now), &start, &end, &err))
            fail_msg("%s at %s: %s", c[i].date, c[i].now, err.msg);
        char got[48];
        fair_time_format_rfc3339(start, got, sizeof got);
        if (start != T(c[i].start))
            fail_msg("%s at %s: start %s, want %s", c[i].date, c[i].now, got, c[i].start);
        if (!c[i].end) {
            assert_true(end == INT64_MIN);
            continue;
        }
        fair_time_format_rfc3339(end, got, sizeof got);
        if (end != T(c[i].end))
            fail_msg("%s at %s: end %s, want %s", c[i].date, c[i].now, got, c[i].end);
    }
}

static void test_utc(void **state)
{
    (void)state;
    struct fair_report_zone utc = {0};
    static const struct rcase c[] = {
        {"today", "2026-03-01T02:00:00Z", "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"},
        {"yesterday", "2026-03-01T02:00:00Z", "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z"},
        {"-7d", "2026-03-01T02:00:00Z", "2026-02-22T00:00:00Z", "2026-03-01T00:00:00Z"},
        {"-1d", "2026-03-01T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z"},
        {"this-month", "2026-03-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
        {"last-month", "2026-03-31T23:59:59Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"},
        /* leap day; year ends */
        {"yesterday", "2028-03-01T12:00:00Z", "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z"},
        {"last-month", "2027-01-15T00:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
        {"this-month", "2026-12-31T23:59:59Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
        {"-366d", "2029-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z"},
        /* absolute forms keep their meaning, with no implied end */
        {"2026-11-01", "2026-03-01T00:00:00Z", "2026-11-01T00:00:00Z", NULL},
        {"2026-11-01T06:30:00+02:00", "2026-03-01T00:00:00Z", "2026-11-01T04:30:00Z", NULL},
    };
    check(&utc, c, sizeof c / sizeof *c);
}

static void test_fixed_offsets(void **state)
{
    (void)state;
    /* -05:00 at 02:00Z on March 1 is still February 28, 21:00. */
    struct fair_report_zone west = {.fixed_min = -300};
    static const struct rcase w[] = {
        {"today", "2026-03-01T02:00:00Z", "2026-02-28T05:00:00Z", "2026-03-01T05:00:00Z"},
        {"yesterday", "2026-03-01T02:00:00Z", "2026-02-27T05:00:00Z", "2026-02-28T05:00:00Z"},
        {"this-month", "2026-03-01T02:00:00Z", "2026-02-01T05:00:00Z", "2026-03-01T05:00:00Z"},
        {"last-month", "2026-03-01T02:00:00Z", "2026-01-01T05:00:00Z", "2026-02-01T05:00:00Z"},
        {"2026-11-01", "2026-03-01T02:00:00Z", "2026-11-01T05:00:00Z", NULL},
    };
    check(&west, w, sizeof w / sizeof *w);
    /* +14:00 (the largest there is): 2026-12-31T10:00Z is already 2027. */
    struct fair_report_zone east = {.fixed_min = 14 * 60};
    static const struct rcase e[] = {
        {"today", "2026-12-31T10:00:00Z", "2026-12-31T10:00:00Z", "2027-01-01T10:00:00Z"},
        {"this-month", "2026-12-31T10:00:00Z", "2026-12-31T10:00:00Z", "2027-01-31T10:00:00Z"},
        {"last-month", "2026-12-31T10:00:00Z", "2026-11-30T10:00:00Z", "2026-12-31T10:00:00Z"},
        {"yesterday", "2026-12-31T09:59:59Z", "2026-12-29T10:00:00Z", "2026-12-30T10:00:00Z"},
    };
    check(&east, e, sizeof e / sizeof *e);
}

static void test_dst(void **state)
{
    (void)state;
    struct fair_report_zone b, s;
    zones(&b, &s);
    static const struct rcase bc[] = {
        /* The spring day has 23 hours, the autumn day 25. */
        {"yesterday", "2026-03-30T10:00:00Z", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"},
        {"yesterday", "2026-10-26T10:00:00Z", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"},
        {"this-month", "2026-10-26T10:00:00Z", "2026-09-30T22:00:00Z", "2026-10-31T23:00:00Z"},
        {"last-month", "2026-04-02T00:00:00Z", "2026-02-28T23:00:00Z", "2026-03-31T22:00:00Z"},
        /* -7d across the change: 7 calendar days, 167 hours. */
        {"-7d", "2026-04-01T12:00:00Z", "2026-03-24T23:00:00Z", "2026-03-31T22:00:00Z"},
        {"2026-07-01", "2026-01-01T00:00:00Z", "2026-06-30T22:00:00Z", NULL},
        {"2026-01-01", "2026-07-01T00:00:00Z", "2025-12-31T23:00:00Z", NULL},
        /* Between 01:00Z and 02:00Z on the autumn day, local time repeats
         * 02:00-03:00; "today" is still the 25th. */
        {"today", "2026-10-25T01:30:00Z", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"},
    };
    check(&b, bc, sizeof bc / sizeof *bc);
    static const struct rcase sc[] = {
        /* Midnight of 09-06 does not exist: the day starts at 01:00
         * local, when the gap ends (04:00Z), and lasts 23 hours. */
        {"today", "2026-09-06T12:00:00Z", "2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"},
        {"yesterday", "2026-09-06T12:00:00Z", "2026-09-05T04:00:00Z", "2026-09-06T04:00:00Z"},
        /* Midnight of 2027-04-04 happens twice: the day starts at the first
         * and lasts 25 hours. */
        {"today", "2027-04-04T12:00:00Z", "2027-04-04T03:00:00Z", "2027-04-05T04:00:00Z"},
        {"yesterday", "2027-04-05T12:00:00Z", "2027-04-04T03:00:00Z", "2027-04-05T04:00:00Z"},
    };
    check(&s, sc, sizeof sc / sizeof *sc);
}

static void test_bad_dates(void **state)
{
    (void)state;
    struct fair_report_zone utc = {0};
    static const char *const bad[] = {
        "",
        "-0d",
        "-36601d",
        "-7",
        "-7days",
        "7d",
        "-d",
        "next-month",
        "Yesterday",
        "tomorrow",
        "2026-02-29",
        "2026-13-01",
        "2026-11-1",
        "-99999999999999999999d",
        "this-month ",
        NULL,
    };
    for (size_t i = 0; bad[i]; i++) {
        struct fair_error err = {0};
        int64_t start, end;
        if (fair_report_date_resolve(bad[i], &utc, T("2026-11-26T00:00:00Z"), &start, &end, &err) !=
            FAIR_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_true(err.msg[0] != '\0');
    }
    char longer[100];
    memset(longer, '1', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    struct fair_error err = {0};
    int64_t start, end;
    assert_int_equal(fair_report_date_resolve(longer, &utc, 0, &start, &end, &err), FAIR_EINVAL);
    assert_int_equal(fair_report_date_resolve(NULL, &utc, 0, &start, &end, &err), FAIR_EINVAL);
    /* -36600d (100 years) is the most. */
    assert_int_equal(
        fair_report_date_resolve("-36600d", &utc, T("2026-11-26T00:00:00Z"), &start, &end, &err),
        0);
    /* A zone that answers an offset beyond 18 hours is refused. */
    struct fair_report_zone odd = {.fixed_min = 19 * 60};
    assert_int_equal(fair_report_date_resolve("today", &odd, 0, &start, &end, &err), FAIR_EINVAL);
}

/* A report with rows alpha (3 GPU-days) and beta (1), by hand. */
static void two_rows(struct fair_report *r, struct fair_report_row *rows, char *a, char *b,
                     char *tot)
{
    memset(r, 0, sizeof *r);
    memset(rows, 0, 2 * sizeof *rows);
    rows[0].key = a;
    rows[0].gpu_mms = 3 * 24 * 3600000000LL;
    rows[0].inquota_mms = rows[0].gpu_mms;
    rows[1].key = b;
    rows[1].gpu_mms = 24 * 3600000000LL;
    rows[1].borrowed_mms = rows[1].gpu_mms;
    r->n = 2;
    r->rows = rows;
    r->total.key = tot;
    r->total.gpu_mms = rows[0].gpu_mms + rows[1].gpu_mms;
    r->params.from_ms = T("2026-11-01T00:00:00Z");
    r->params.to_ms = T("2026-11-02T00:00:00Z");
    r->exact = 1;
}

static void test_unit_and_share(void **state)
{
    (void)state;
    struct fair_report r;
    struct fair_report_row rows[2];
    char a[] = "alpha", b[] = "beta", tot[] = "TOTAL";
    two_rows(&r, rows, a, b, tot);
    struct fair_buf out;
    struct fair_error err = {0};
    fair_buf_init(&out, 0);
    struct fair_report_style st = {
        .format = FAIR_REPORT_CSV, .unit = FAIR_REPORT_DAYS, .percent = 1};
    assert_int_equal(fair_report_render_style(&r, &st, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out),
                        "team,gpu_days,in_quota_gpu_days,borrowed_gpu_days,preempted_gpu_days,"
                        "lent_gpu_days,avg_gpus,pods,share_percent\n"
                        "alpha,3.000,3.000,0.000,0.000,,3.000,0,75.0\n"
                        "beta,1.000,0.000,1.000,0.000,,1.000,0,25.0\n"
                        "TOTAL,4.000,0.000,0.000,0.000,,4.000,0,100.0\n");
    fair_buf_reset(&out);
    st.format = FAIR_REPORT_JSON;
    assert_int_equal(fair_report_render_style(&r, &st, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "\"unit\":\"days\""));
    assert_non_null(strstr(fair_buf_str(&out), "{\"team\":\"beta\",\"gpu_days\":1.000,"));
    assert_non_null(strstr(fair_buf_str(&out), "\"share_percent\":25.0}"));
    /* Nothing used: no share to give (not a division by zero). */
    rows[0].gpu_mms = rows[1].gpu_mms = r.total.gpu_mms = 0;
    fair_buf_reset(&out);
    assert_int_equal(fair_report_render_style(&r, &st, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "\"share_percent\":null}"));
    fair_buf_reset(&out);
    st.format = FAIR_REPORT_TABLE;
    assert_int_equal(fair_report_render_style(&r, &st, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "GPU-days from 2026-11-01T00:00:00Z"));
    assert_non_null(strstr(fair_buf_str(&out), "      -%\n"));
    /* The defaults print what fair_report_render() prints. */
    two_rows(&r, rows, a, b, tot);
    struct fair_buf plain;
    fair_buf_init(&plain, 0);
    for (int f = FAIR_REPORT_TABLE; f <= FAIR_REPORT_JSON; f++) {
        struct fair_report_style d = {.format = (enum fair_report_format)f};
        fair_buf_reset(&out);
        fair_buf_reset(&plain);
        assert_int_equal(fair_report_render_style(&r, &d, &out, &err), 0);
        assert_int_equal(fair_report_render(&r, (enum fair_report_format)f, NULL, &plain, &err), 0);
        assert_string_equal(fair_buf_str(&out), fair_buf_str(&plain));
        assert_null(strstr(fair_buf_str(&out), "share"));
        assert_null(strstr(fair_buf_str(&out), "days"));
    }
    fair_buf_release(&plain);
    fair_buf_release(&out);
}

static void test_prices_param(void **state)
{
    (void)state;
    struct fair_prices p, q;
    struct fair_error err = {0};
    struct fair_buf b;
    fair_prices_init(&p);
    fair_prices_init(&q);
    fair_buf_init(&b, 0);
    assert_int_equal(fair_prices_from_param(&p, "A100:2.5,H100:4.1,*:1", &err), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.default_micro, 1000000);
    assert_string_equal(p.e[1].model, "H100");
    assert_int_equal(p.e[1].micro, 4100000);
    assert_int_equal(fair_prices_to_param(&p, &b, &err), 0);
    assert_string_equal(fair_buf_str(&b), "A100:2.500000,H100:4.100000,*:1.000000");
    assert_int_equal(fair_prices_from_param(&q, fair_buf_str(&b), &err), 0);
    assert_int_equal(q.n, 2);
    assert_int_equal(q.e[0].micro, 2500000);
    static const char *const bad[] = {"",        "A100",        "A100:",    ":2", "A100:-1",
                                      "A100:2,", "A100:2,,B:1", "A100:1e3", NULL};
    for (size_t i = 0; bad[i]; i++) {
        struct fair_prices x;
        fair_prices_init(&x);
        if (fair_prices_from_param(&x, bad[i], &err) == 0)
            fail_msg("\"%s\" was accepted", bad[i]);
        fair_prices_release(&x);
    }
    /* A model name that the parameter cannot carry. */
    struct fair_prices c;
    fair_prices_init(&c);
    assert_int_equal(fair_prices_from_param(&c, "A100:1", &err), 0);
    c.e[0].model[1] = ':';
    fair_buf_reset(&b);
    assert_int_equal(fair_prices_to_param(&c, &b, &err), FAIR_EINVAL);
    fair_prices_release(&c);
    fair_prices_release(&p);
    fair_prices_release(&q);
    fair_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utc),
        cmocka_unit_test(test_fixed_offsets),
        cmocka_unit_test(test_dst),
        cmocka_unit_test(test_bad_dates),
        cmocka_unit_test(test_unit_and_share),
        cmocka_unit_test(test_prices_param),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
