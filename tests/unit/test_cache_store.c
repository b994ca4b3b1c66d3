/* Unit tests of lib/cache/store.c (objects by uid and namespace/name,
 * replacement, removal, growth with tombstones) and lib/cache/workqueue.c
 * (dedup, processing, per-item backoff, max length) on a manual clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "cache/store.h"
#include "cache/workqueue.h"

static struct fair_kpod *mkpod(const char *uid, const char *ns, const char *name, const char *rv)
{
    struct fair_kpod *p = fair_calloc(1, sizeof *p);
    p->meta.uid = fair_strdup(uid);
    p->meta.namespace_ = ns ? fair_strdup(ns) : NULL;
    p->meta.name = fair_strdup(name);
    p->meta.resource_version = fair_strdup(rv);
    return p;
}

static void test_store_basic(void **state)
{
    (void)state;
    struct fair_store *s;
    assert_int_equal(fair_store_new(&fair_ktype_pod, &s), 0);
    void *old = (void *)1;
    assert_int_equal(fair_store_put_take(s, mkpod("u1", "a", "p1", "1"), &old), 0);
    assert_null(old);
    assert_int_equal(fair_store_put_take(s, mkpod("u2", "b", "p1", "1"), NULL), 0);
    assert_int_equal(fair_store_len(s), 2);
    struct fair_kpod *p = fair_store_get(s, "u1");
    assert_string_equal(p->meta.namespace_, "a");
    p = fair_store_get_by_name(s, "b", "p1");
    assert_string_equal(p->meta.uid, "u2");
    assert_null(fair_store_get_by_name(s, "c", "p1"));
    assert_null(fair_store_get(s, "u3"));
    /* Replace: the old version comes back to the caller. */
    assert_int_equal(fair_store_put_take(s, mkpod("u1", "a", "p1", "2"), &old), 0);
    assert_string_equal(((struct fair_kpod *)old)->meta.resource_version, "1");
    fair_kpod_free(old);
    assert_int_equal(fair_store_len(s), 2);
    p = fair_store_get_by_name(s, "a", "p1");
    assert_string_equal(p->meta.resource_version, "2");
    /* Remove. */
    p = fair_store_remove(s, "u1");
    assert_non_null(p);
    fair_kpod_free(p);
    assert_null(fair_store_remove(s, "u1"));
    assert_null(fair_store_get_by_name(s, "a", "p1"));
    assert_int_equal(fair_store_len(s), 1);
    /* No uid: refused (and freed). */
    struct fair_kpod *bad = mkpod("x", "a", "n", "1");
    fair_free(bad->meta.uid);
    bad->meta.uid = NULL;
    assert_int_equal(fair_store_put_take(s, bad, NULL), FAIR_EINVAL);
    /* Cluster-scoped objects: NULL and "" namespaces are the same. */
    assert_int_equal(fair_store_put_take(s, mkpod("n1", NULL, "node-1", "1"), NULL), 0);
    assert_non_null(fair_store_get_by_name(s, NULL, "node-1"));
    assert_non_null(fair_store_get_by_name(s, "", "node-1"));
    fair_store_free(s);
}

static void test_store_churn(void **state)
{
    (void)state;
    struct fair_store *s;
    assert_int_equal(fair_store_new(&fair_ktype_pod, &s), 0);
    char uid[32], name[32];
    /* Many inserts and removals: tombstones must not fill the tables. */
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 500; i++) {
            snprintf(uid, sizeof uid, "u-%d-%d", round, i);
            snprintf(name, sizeof name, "p-%d", i);
            assert_int_equal(fair_store_put_take(s, mkpod(uid, "ns", name, "1"), NULL), 0);
        }
        assert_int_equal(fair_store_len(s), 500);
        for (int i = 0; i < 500; i++) {
            snprintf(uid, sizeof uid, "u-%d-%d", round, i);
            snprintf(name, sizeof name, "p-%d", i);
            struct fair_kpod *p = fair_store_get_by_name(s, "ns", name);
            assert_non_null(p);
            assert_string_equal(p->meta.uid, uid);
            fair_kpod_free(fair_store_remove(s, uid));
        }
        assert_int_equal(fair_store_len(s), 0);
    }
    for (int i = 0; i < 3000; i++) {
        snprintf(uid, sizeof uid, "v-%d", i);
        assert_int_equal(fair_store_put_take(s, mkpod(uid, "ns", uid, "1"), NULL), 0);
    }
    size_t pos = 0, n = 0;
    while (fair_store_next(s, &pos))
        n++;
    assert_int_equal(n, 3000);
    /* at most 4 slots of 8 bytes per object in each of the two tables */
    assert_true(fair_store_overhead_bytes(s) <= 3000 * 2 * 8 * 4 * 2);
    fair_store_free(s);
}

static void test_workqueue_dedup(void **state)
{
    (void)state;
    int64_t now = 0;
    struct fair_clock clk;
    fair_clock_manual_init(&clk, &now);
    struct fair_workqueue_options o = {.max_len = 3, .clock = &clk};
    struct fair_workqueue *q;
    assert_int_equal(fair_workqueue_new(&o, &q), 0);
    assert_int_equal(fair_workqueue_add(q, "a"), 0);
    assert_int_equal(fair_workqueue_add(q, "b"), 0);
    assert_int_equal(fair_workqueue_add(q, "a"), 0);
    assert_int_equal(fair_workqueue_len(q), 2);
    char *k;
    assert_int_equal(fair_workqueue_get(q, &k), 0);
    assert_string_equal(k, "a");
    /* a is processing: adding it again does not hand it out twice... */
    assert_int_equal(fair_workqueue_add(q, "a"), 0);
    assert_int_equal(fair_workqueue_len(q), 1);
    char *k2;
    assert_int_equal(fair_workqueue_get(q, &k2), 0);
    assert_string_equal(k2, "b");
    char *k3;
    assert_int_equal(fair_workqueue_get(q, &k3), FAIR_ENOTFOUND);
    /* ...but it comes back at done(). */
    fair_workqueue_done(q, k);
    assert_int_equal(fair_workqueue_len(q), 1);
    fair_workqueue_done(q, k2);
    fair_free(k);
    fair_free(k2);
    assert_int_equal(fair_workqueue_get(q, &k), 0);
    assert_string_equal(k, "a");
    fair_workqueue_done(q, k);
    fair_free(k);
    assert_int_equal(fair_workqueue_len(q), 0);
    /* max_len: three keys, not four. */
    assert_int_equal(fair_workqueue_add(q, "x"), 0);
    assert_int_equal(fair_workqueue_add(q, "y"), 0);
    assert_int_equal(fair_workqueue_add(q, "z"), 0);
    assert_int_equal(fair_workqueue_add(q, "w"), FAIR_ERANGE);
    assert_int_equal(fair_workqueue_add(q, "x"), 0); /* dedup still works when full */
    char longkey[FAIR_WORKQUEUE_MAX_KEY + 2];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    assert_int_equal(fair_workqueue_add(q, longkey), FAIR_ERANGE);
    fair_workqueue_free(q);
}

static void test_workqueue_backoff(void **state)
{
    (void)state;
    int64_t now = 0;
    struct fair_clock clk;
    fair_clock_manual_init(&clk, &now);
    struct fair_workqueue_options o = {.base_delay_ms = 10, .max_delay_ms = 50, .clock = &clk};
    struct fair_workqueue *q;
    assert_int_equal(fair_workqueue_new(&o, &q), 0);
    assert_int_equal(fair_workqueue_next_delay_ms(q), -1);
    /* 10, 20, 40, 50 (cap), 50 */
    static const int64_t want[] = {10, 20, 40, 50, 50};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(fair_workqueue_add_rate_limited(q, "k"), 0);
        assert_int_equal(fair_workqueue_failures(q, "k"), i + 1);
        assert_int_equal(fair_workqueue_next_delay_ms(q), want[i]);
        char *k;
        now += want[i] - 1;
        assert_int_equal(fair_workqueue_get(q, &k), FAIR_ENOTFOUND);
        now += 1;
        assert_int_equal(fair_workqueue_get(q, &k), 0);
        assert_string_equal(k, "k");
        fair_workqueue_done(q, k);
        fair_free(k);
    }
    fair_workqueue_forget(q, "k");
    assert_int_equal(fair_workqueue_failures(q, "k"), 0);
    assert_int_equal(fair_workqueue_add_rate_limited(q, "k"), 0);
    assert_int_equal(fair_workqueue_next_delay_ms(q), 10);
    /* add_after with an earlier time wins; an immediate add makes it ready
     * now. */
    assert_int_equal(fair_workqueue_add_after(q, "k", 3), 0);
    assert_int_equal(fair_workqueue_next_delay_ms(q), 3);
    assert_int_equal(fair_workqueue_add(q, "k"), 0);
    assert_int_equal(fair_workqueue_next_delay_ms(q), 0);
    char *k;
    assert_int_equal(fair_workqueue_get(q, &k), 0);
    fair_workqueue_done(q, k);
    fair_free(k);
    /* As in client-go, the delayed add still fires later. */
    now += 100;
    assert_int_equal(fair_workqueue_get(q, &k), 0);
    fair_workqueue_done(q, k);
    fair_free(k);
    assert_int_equal(fair_workqueue_get(q, &k), FAIR_ENOTFOUND);
    assert_int_equal(fair_workqueue_len(q), 0);
    assert_int_equal(fair_workqueue_waiting(q), 0);
    fair_workqueue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_basic),
        cmocka_unit_test(test_store_churn),
        cmocka_unit_test(test_workqueue_dedup),
        cmocka_unit_test(test_workqueue_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
