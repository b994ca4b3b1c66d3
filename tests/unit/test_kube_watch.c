/* Unit tests of watch framing (every chunk split of a multi-event stream,
 * the event size limit), watch event parsing, and the client's token
 * bucket driven by a manual clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "kube/ratelimit.h"
#include "kube/watch.h"

static const char *stream =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"10\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"11\"}}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":"
    "\"12\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"13\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
    "\"message\":\"too old resource version: 5 (12)\"}}\n";

struct collected {
    char types[16];
    char rvs[64];
    int n;
    int code;
};

static int on_line(const char *line, size_t len, void *ctx)
{
    struct collected *c = ctx;
    struct fair_kwatch_event ev;
    json_t *root;
    struct fair_error err = {0};
    if (fair_kwatch_event_parse(line, len, &ev, &root, &err))
        fail_msg("parse failed: %s: %.*s", err.msg, (int)len, line);
    c->types[c->n++] = fair_kwatch_type_name(ev.type)[0];
    if (ev.resource_version) {
        size_t l = strlen(c->rvs);
        snprintf(c->rvs + l, sizeof c->rvs - l, "%s,", ev.resource_version);
    }
    if (ev.type == FAIR_KWATCH_ERROR) {
        c->code = ev.code;
        assert_string_equal(ev.reason, "Expired");
    }
    json_decref(root);
    return 0;
}

static void check(const struct collected *c)
{
    assert_int_equal(c->n, 5);
    assert_string_equal(c->types, "AMBDE");
    assert_string_equal(c->rvs, "10,11,12,13,");
    assert_int_equal(c->code, 410);
}

static void test_every_split(void **state)
{
    (void)state;
    size_t n = strlen(stream);
    /* Two and three chunks, at every pair of cut points. */
    for (size_t i = 0; i <= n; i++) {
        for (size_t j = i; j <= n; j += (i % 7 == 0) ? 1 : 13) {
            struct fair_kframer f;
            struct collected c = {0};
            fair_kframer_init(&f, 1024);
            assert_int_equal(fair_kframer_feed(&f, stream, i, on_line, &c, NULL), 0);
            assert_int_equal(fair_kframer_feed(&f, stream + i, j - i, on_line, &c, NULL), 0);
            assert_int_equal(fair_kframer_feed(&f, stream + j, n - j, on_line, &c, NULL), 0);
            check(&c);
            assert_int_equal(fair_kframer_pending(&f), 0);
            fair_kframer_release(&f);
        }
    }
    /* One byte at a time. */
    struct fair_kframer f;
    struct collected c = {0};
    fair_kframer_init(&f, 1024);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(fair_kframer_feed(&f, stream + i, 1, on_line, &c, NULL), 0);
    check(&c);
    fair_kframer_release(&f);
}

static int count_line(const char *line, size_t len, void *ctx)
{
    (void)line;
    *(size_t *)ctx += len;
    return 0;
}

static void test_event_size_limit(void **state)
{
    (void)state;
    char big[200];
    memset(big, 'x', sizeof big);
    big[100] = '\n'; /* a 100-byte line, then 99 bytes without end */
    struct fair_kframer f;
    struct fair_error err = {0};
    size_t total = 0;
    fair_kframer_init(&f, 100);
    assert_int_equal(fair_kframer_feed(&f, big, 101, count_line, &total, &err), 0);
    assert_int_equal(total, 100);
    assert_int_equal(fair_kframer_feed(&f, big + 101, 99, count_line, &total, &err), 0);
    assert_int_equal(fair_kframer_pending(&f), 99);
    /* The 101st byte of the partial line crosses the limit. */
    assert_int_equal(fair_kframer_feed(&f, "yy", 2, count_line, &total, &err), FAIR_ERANGE);
    assert_non_null(strstr(err.msg, "larger than 100 bytes"));
    fair_kframer_release(&f);
    /* In a single chunk too. */
    fair_kframer_init(&f, 50);
    assert_int_equal(fair_kframer_feed(&f, big, 101, count_line, &total, &err), FAIR_ERANGE);
    fair_kframer_release(&f);
}

static int stop_line(const char *line, size_t len, void *ctx)
{
    (void)line;
    (void)len;
    (void)ctx;
    return 77;
}

static void test_callback_stops(void **state)
{
    (void)state;
    struct fair_kframer f;
    fair_kframer_init(&f, 0);
    assert_int_equal(fair_kframer_feed(&f, "a\nb\n", 4, stop_line, NULL, NULL), 77);
    fair_kframer_release(&f);
}

static void test_event_parse_errors(void **state)
{
    (void)state;
    static const char *bad[] = {
        "{",
        "[]",
        "{\"type\":\"ADDED\"}",
        "{\"type\":\"RENAMED\",\"object\":{}}",
        "{\"type\":5,\"object\":{}}",
        "{\"type\":\"ADDED\",\"object\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct fair_kwatch_event ev;
        json_t *root = (void *)1;
        struct fair_error err = {0};
        assert_int_equal(fair_kwatch_event_parse(bad[i], strlen(bad[i]), &ev, &root, &err),
                         FAIR_EPARSE);
        assert_null(root);
        assert_non_null(strstr(err.msg, "watch event"));
    }
}

static void test_token_bucket(void **state)
{
    (void)state;
    int64_t now = 1000;
    struct fair_clock clk;
    fair_clock_manual_init(&clk, &now);
    struct fair_tokenbucket tb;
    fair_tokenbucket_init(&tb, 10.0, 3, &clk);
    /* The burst goes at once. */
    assert_true(fair_tokenbucket_try(&tb));
    assert_true(fair_tokenbucket_try(&tb));
    assert_true(fair_tokenbucket_try(&tb));
    assert_false(fair_tokenbucket_try(&tb));
    /* 10 QPS: one token per 100 ms. */
    now += 99;
    assert_false(fair_tokenbucket_try(&tb));
    now += 1;
    assert_true(fair_tokenbucket_try(&tb));
    /* Reservations queue up: 100 ms, 200 ms, 300 ms. */
    assert_int_equal(fair_tokenbucket_reserve(&tb), 100);
    assert_int_equal(fair_tokenbucket_reserve(&tb), 200);
    assert_int_equal(fair_tokenbucket_reserve(&tb), 300);
    now += 300;
    assert_false(fair_tokenbucket_try(&tb));
    /* A long idle time refills only up to the burst. */
    now += 100000;
    for (int i = 0; i < 3; i++)
        assert_int_equal(fair_tokenbucket_reserve(&tb), 0);
    assert_int_equal(fair_tokenbucket_reserve(&tb), 100);
    /* qps <= 0: unlimited. */
    fair_tokenbucket_init(&tb, 0, 1, &clk);
    for (int i = 0; i < 1000; i++)
        assert_true(fair_tokenbucket_try(&tb));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_split),    cmocka_unit_test(test_event_size_limit),
        cmocka_unit_test(test_callback_stops), cmocka_unit_test(test_event_parse_errors),
        cmocka_unit_test(test_token_bucket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
