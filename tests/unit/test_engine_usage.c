/* Decayed usage (docs/engine.md, "Decayed usage"): Slurm's classic
 * fair-share factor 2^(-U/S) scales each project's over-quota weight, so a
 * project that used much recently gets less of the surplus, never less of
 * its guarantee. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/share.h"
#include "test_engine_fixture.h"

#define G 1000
#define ONE FAIR_USAGE_WEIGHT_ONE

static void test_factor_table(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        size_t n;
        int64_t w[3], u[3];
        int ret;
        int64_t out[3];
    } tab[] = {
        {"no usage: weights unchanged", 3, {1, 2, 3}, {0, 0, 0}, 0, {1, 2, 3}},
        {"negative usage counts as none", 2, {5, 7}, {-4, 0}, 0, {5, 7}},
        /* U = S = 1/2: F = 1/2 each. */
        {"equal usage, equal weight", 2, {1, 1}, {100, 100}, 1, {ONE / 2, ONE / 2}},
        /* b used nothing: F = 1; a used all (U = 1, S = 1/2): F = 1/4. */
        {"one used everything", 2, {1, 1}, {100, 0}, 1, {ONE / 4, ONE}},
        /* U = 3/4, S = 1/2: 2^-1.5; U = 1/4: 2^-0.5 (rounded). */
        {"three to one", 2, {1, 1}, {300, 100}, 1, {370728, 741455}},
        /* Weight 2 of 3 (S = 2/3) with U = 2/3: F = 1/2 of weight 2. */
        {"usage in line with weight", 2, {2, 1}, {200, 100}, 1, {ONE, ONE / 2}},
        /* U/S capped at 60: the weight never drops to 0. */
        {"tiny factor stays >= 1", 2, {1, 1000000}, {1, 0}, 1, {1, 1000000LL * ONE}},
        /* U = 1, S = 1/3: 2^-3. */
        {"three teams, one user", 3, {1, 1, 1}, {7, 0, 0}, 1, {ONE / 8, ONE, ONE}},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        int64_t out[3] = {0};
        int ret = fair_share_usage_weights(tab[i].w, tab[i].u, tab[i].n, out);
        assert_int_equal(ret, tab[i].ret);
        for (size_t j = 0; j < tab[i].n; j++) {
            int64_t d = out[j] - tab[i].out[j];
            if (d < -1 || d > 1)
                fail_msg("%s: child %zu: got %lld, want %lld", tab[i].what, j, (long long)out[j],
                         (long long)tab[i].out[j]);
        }
    }
}

static int64_t fs_of(const struct ts *t, int q)
{
    return t->res.queues[q].fair_share.v[FAIR_RES_GPU];
}

/* Two teams of weight 1 on 16 GPUs, both wanting everything: without
 * usage 8/8; a with three times b's usage gets 1/3 of the surplus
 * (2^-1.5 : 2^-0.5 = 1 : 2). */
static void test_surplus_follows_usage(void **state)
{
    (void)state;
    static const struct {
        int64_t ua, ub, want_a, want_b;
    } tab[] = {
        {0, 0, 8000, 8000},      {100, 100, 8000, 8000}, {300, 100, 5333, 10667},
        {100, 300, 10667, 5333}, {1, 0, 3200, 12800}, /* a: 2^-2 of weight 1, b: 1: 1/5 and 4/5 */
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int a = ts_team(t, "a", 0, 1), b = ts_team(t, "b", 0, 1);
        t->projects[0].usage = tab[i].ua;
        t->projects[1].usage = tab[i].ub;
        for (int k = 0; k < 16; k++) {
            ts_pod(t, a, G);
            ts_pod(t, b, G);
        }
        assert_int_equal(ts_run(t), 0);
        if (fs_of(t, a) != tab[i].want_a || fs_of(t, b) != tab[i].want_b)
            fail_msg("case %zu: fair shares %lld/%lld, want %lld/%lld", i, (long long)fs_of(t, a),
                     (long long)fs_of(t, b), (long long)tab[i].want_a, (long long)tab[i].want_b);
        ts_free(t);
    }
}

/* Usage weighs only the surplus: a team with a guarantee of 8 keeps it
 * however much it used, and the 8 idle GPUs go by the factor. */
static void test_guarantee_untouched(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    ts_node(t, "node-2", 8);
    int a = ts_team(t, "a", 8 * G, 1), b = ts_team(t, "b", 0, 1);
    t->projects[0].usage = 1000000000;
    t->projects[1].usage = 0;
    for (int k = 0; k < 24; k++) {
        ts_pod(t, a, G);
        ts_pod(t, b, G);
    }
    assert_int_equal(ts_run(t), 0);
    /* a: 8 + 16 * (1/4) / (1/4 + 1) = 8 + 3.2; b: 12.8. */
    assert_int_equal(fs_of(t, a), 11200);
    assert_int_equal(fs_of(t, b), 12800);
    ts_free(t);
}

/* Issue 15: decayed usage among a project's queues, the same rule one
 * level down. One project on 16 GPUs, no guarantees, two queues of weight
 * 1 wanting everything: the queues' usage splits the project's share as
 * project usage splits the cluster (before, queue usage was ignored:
 * 8000/8000 in every row); a queue's usage does not move its project's
 * share against another project. */
static void test_queue_usage(void **state)
{
    (void)state;
    static const struct {
        int64_t ua, ub, want_a, want_b;
    } tab[] = {
        {0, 0, 8000, 8000},      {100, 100, 8000, 8000}, {300, 100, 5333, 10667},
        {100, 300, 10667, 5333}, {1, 0, 3200, 12800},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int p = ts_project(t, "p", 0, 1);
        int a = ts_queue(t, "a", p, 0, 1), b = ts_queue(t, "b", p, 0, 1);
        t->queues[a].usage = tab[i].ua;
        t->queues[b].usage = tab[i].ub;
        for (int k = 0; k < 16; k++) {
            ts_pod(t, a, G);
            ts_pod(t, b, G);
        }
        assert_int_equal(ts_run(t), 0);
        if (fs_of(t, a) != tab[i].want_a || fs_of(t, b) != tab[i].want_b)
            fail_msg("case %zu: fair shares %lld/%lld, want %lld/%lld", i, (long long)fs_of(t, a),
                     (long long)fs_of(t, b), (long long)tab[i].want_a, (long long)tab[i].want_b);
        ts_free(t);
    }
    /* Two projects of one queue each: queue usage alone leaves the
     * projects at 8/8 (project usage decides between projects). */
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    ts_node(t, "node-1", 8);
    int a = ts_team(t, "a", 0, 1), b = ts_team(t, "b", 0, 1);
    t->queues[a].usage = 300;
    t->queues[b].usage = 100;
    for (int k = 0; k < 16; k++) {
        ts_pod(t, a, G);
        ts_pod(t, b, G);
    }
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(fs_of(t, a), 8000);
    assert_int_equal(fs_of(t, b), 8000);
    ts_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_factor_table),
        cmocka_unit_test(test_surplus_follows_usage),
        cmocka_unit_test(test_guarantee_untouched),
        cmocka_unit_test(test_queue_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
