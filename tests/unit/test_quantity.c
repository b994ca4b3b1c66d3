/* Table-driven tests of lib/base: quantities, durations, RFC 3339 times,
 * buffers and the allocation-failure hook. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/duration.h"
#include "base/quantity.h"

struct qcase {
    const char *in;
    int rc;
    int64_t milli;
};

static void test_quantity_milli(void **state)
{
    (void)state;
    static const struct qcase cases[] = {
        {"0.5", 0, 500},       {"500m", 0, 500},     {"1.5", 0, 1500},   {"2", 0, 2000},
        {"0.25", 0, 250},      {".5", 0, 500},       {"5.", 0, 5000},    {"+1", 0, 1000},
        {"-1", 0, -1000},      {"1k", 0, 1000000},   {"1e3", 0, 1000000}, {"1E-3", 0, 1},
        {"0.0001", 0, 1},      {"1Ki", 0, 1024000},  {"0", 0, 0},        {"000.250", 0, 250},
        {"100m", 0, 100},      {"0.1m", 0, 1},       {"", FAIR_EINVAL, 0}, {"abc", FAIR_EINVAL, 0},
        {"1.2.3", FAIR_EINVAL, 0}, {"1Gb", FAIR_EINVAL, 0}, {"1 ", FAIR_EINVAL, 0},
        {"m", FAIR_EINVAL, 0}, {".", FAIR_EINVAL, 0}, {"1e", FAIR_EINVAL, 0},
        {"1Ei", FAIR_ERANGE, 0}, {"99999999999999999999", FAIR_ERANGE, 0},
        {"1e99999", FAIR_ERANGE, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = -42;
        struct fair_error err = {0};
        int rc = fair_quantity_parse_milli(cases[i].in, &v, &err);
        if (rc != cases[i].rc)
            fail_msg("quantity \"%s\": rc %d, want %d (%s)", cases[i].in, rc, cases[i].rc,
                     err.msg);
        if (rc == 0 && v != cases[i].milli)
            fail_msg("quantity \"%s\": %lld, want %lld", cases[i].in, (long long)v,
                     (long long)cases[i].milli);
        if (rc != 0)
            assert_true(strstr(err.msg, "quantity") != NULL);
    }
}

static void test_quantity_bytes(void **state)
{
    (void)state;
    static const struct qcase cases[] = {
        {"16Gi", 0, 17179869184LL}, {"1M", 0, 1000000}, {"1.5", 0, 2}, {"100m", 0, 1},
        {"1Ki", 0, 1024},           {"8Ei", FAIR_ERANGE, 0}, {"7Ei", 0, 8070450532247928832LL},
        {"0.5Gi", 0, 536870912},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = 0;
        int rc = fair_quantity_parse(cases[i].in, &v, NULL);
        assert_int_equal(rc, cases[i].rc);
        if (rc == 0)
            assert_int_equal(v, cases[i].milli);
    }
    char long_input[100];
    memset(long_input, '1', sizeof(long_input) - 1);
    long_input[99] = '\0';
    int64_t v;
    assert_int_equal(fair_quantity_parse(long_input, &v, NULL), FAIR_ERANGE);
    assert_int_equal(fair_quantity_parse(NULL, &v, NULL), FAIR_EINVAL);
}

static void test_format(void **state)
{
    (void)state;
    char b[32];
    fair_milli_format(2500, b, sizeof(b));
    assert_string_equal(b, "2.5");
    fair_milli_format(250, b, sizeof(b));
    assert_string_equal(b, "0.25");
    fair_milli_format(3000, b, sizeof(b));
    assert_string_equal(b, "3");
    fair_milli_format(1, b, sizeof(b));
    assert_string_equal(b, "0.001");
    fair_bytes_format(17179869184LL, b, sizeof(b));
    assert_string_equal(b, "16Gi");
    fair_bytes_format(1000, b, sizeof(b));
    assert_string_equal(b, "1000");
}

static void test_duration(void **state)
{
    (void)state;
    struct {
        const char *in;
        int rc;
        int64_t ms;
    } cases[] = {
        {"90s", 0, 90000}, {"5m", 0, 300000}, {"1h30m", 0, 5400000}, {"250ms", 0, 250},
        {"0", 0, 0},       {"1.5s", 0, 1500}, {"1us", 0, 1},          {"", FAIR_EINVAL, 0},
        {"5", FAIR_EINVAL, 0}, {"-5s", FAIR_EINVAL, 0}, {"5x", FAIR_EINVAL, 0},
        {"h", FAIR_EINVAL, 0}, {"9999999999h", FAIR_ERANGE, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t ms = -1;
        int rc = fair_duration_parse_ms(cases[i].in, &ms, NULL);
        if (rc != cases[i].rc)
            fail_msg("duration \"%s\": rc %d want %d", cases[i].in, rc, cases[i].rc);
        if (rc == 0)
            assert_int_equal(ms, cases[i].ms);
    }
}

static void test_rfc3339(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(fair_time_parse_rfc3339("1970-01-01T00:00:00Z", &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(fair_time_parse_rfc3339("2026-11-01T00:00:00Z", &ms), 0);
    assert_int_equal(ms, 1793491200000LL);
    assert_int_equal(fair_time_parse_rfc3339("2026-11-01T01:00:00.5+01:00", &ms), 0);
    assert_int_equal(ms, 1793491200500LL);
    assert_int_equal(fair_time_parse_rfc3339("2026-02-29T00:00:00Z", &ms), FAIR_EINVAL);
    assert_int_equal(fair_time_parse_rfc3339("2026-13-01T00:00:00Z", &ms), FAIR_EINVAL);
    assert_int_equal(fair_time_parse_rfc3339("garbage", &ms), FAIR_EINVAL);
    char out[32];
    fair_time_format_rfc3339(1793491200000LL, out, sizeof(out));
    assert_string_equal(out, "2026-11-01T00:00:00Z");
}

static void test_buf_and_alloc_failure(void **state)
{
    (void)state;
    struct fair_buf b;
    fair_buf_init(&b, 16);
    assert_int_equal(fair_buf_appends(&b, "hello "), 0);
    assert_int_equal(fair_buf_appendf(&b, "%d", 42), 0);
    assert_string_equal(fair_buf_str(&b), "hello 42");
    assert_int_equal(fair_buf_appends(&b, "this is too long"), FAIR_ERANGE);
    fair_buf_consume(&b, 6);
    assert_string_equal(fair_buf_str(&b), "42");
    fair_buf_release(&b);

    fair_buf_init(&b, 0);
    fair_alloc_fail_after(0);
    assert_int_equal(fair_buf_appends(&b, "x"), FAIR_ENOMEM);
    assert_int_equal(fair_buf_appends(&b, "x"), 0); /* the hook fires once */
    fair_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantity_milli), cmocka_unit_test(test_quantity_bytes),
        cmocka_unit_test(test_format),         cmocka_unit_test(test_duration),
        cmocka_unit_test(test_rfc3339),        cmocka_unit_test(test_buf_and_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
