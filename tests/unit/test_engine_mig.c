/* MIG (docs/fractions.md, "MIG"): profile names to GPU shares, and the
 * engine's handling of MIG pods: placed by their free instance counts,
 * taking no device, charged in the GPU figures at their profile's share,
 * and counted in the cluster's capacity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/mig.h"
#include "test_engine_fixture.h"

#define G 1000

struct mcase {
    const char *name;
    int rc;        /* 0 or FAIR_EINVAL */
    int64_t milli; /* share when rc == 0 */
};

static const struct mcase mig_cases[] = {
    /* A100-40GB, A100-80GB / H100-80GB, H100-94GB, H200, B200: 7 slices. */
    {"nvidia.com/mig-1g.5gb", 0, 143},
    {"nvidia.com/mig-1g.10gb", 0, 143},
    {"nvidia.com/mig-1g.20gb", 0, 143},
    {"nvidia.com/mig-2g.20gb", 0, 286},
    {"nvidia.com/mig-3g.40gb", 0, 429},
    {"nvidia.com/mig-4g.40gb", 0, 571},
    {"nvidia.com/mig-7g.80gb", 0, 1000},
    {"nvidia.com/mig-7g.40gb", 0, 1000},
    {"nvidia.com/mig-3g.47gb", 0, 429},
    {"nvidia.com/mig-1g.18gb", 0, 143},
    {"nvidia.com/mig-3g.71gb", 0, 429},
    {"nvidia.com/mig-7g.141gb", 0, 1000},
    {"nvidia.com/mig-4g.90gb", 0, 571},
    /* A30-24GB: 4 slices. */
    {"nvidia.com/mig-1g.6gb", 0, 250},
    {"nvidia.com/mig-2g.12gb", 0, 500},
    {"nvidia.com/mig-4g.24gb", 0, 1000},
    /* B300; RTX PRO 6000 Blackwell (4 slices) but for 1g.24gb, also a
     * Hopper name, counted 1/7. */
    {"nvidia.com/mig-1g.34gb", 0, 143},
    {"nvidia.com/mig-3g.135gb", 0, 429},
    {"nvidia.com/mig-7g.269gb", 0, 1000},
    {"nvidia.com/mig-2g.48gb", 0, 500},
    {"nvidia.com/mig-4g.96gb", 0, 1000},
    {"nvidia.com/mig-1g.24gb", 0, 143},
    /* Suffixes: media extensions, graphics. */
    {"nvidia.com/mig-1g.10gb+me", 0, 143},
    {"nvidia.com/mig-1g.6gb+me", 0, 250},
    {"nvidia.com/mig-2g.12gb+me", 0, 500},
    {"nvidia.com/mig-1g.18gb+me.all", 0, 143},
    {"nvidia.com/mig-1g.23gb-me", 0, 143},
    {"nvidia.com/mig-1g.24gb+gfx", 0, 143},
    /* Not profiles of any GPU, or malformed. */
    {"nvidia.com/mig-1g.11gb", FAIR_EINVAL, 0},
    {"nvidia.com/mig-5g.40gb", FAIR_EINVAL, 0},
    {"nvidia.com/mig-3g.24gb", FAIR_EINVAL, 0},
    {"nvidia.com/mig-1g.10gb+xx", FAIR_EINVAL, 0},
    {"nvidia.com/mig-1g.10gb+me+me", FAIR_EINVAL, 0},
    {"nvidia.com/mig-1g.10GB", FAIR_EINVAL, 0},
    {"nvidia.com/mig-1g.10gbx", FAIR_EINVAL, 0},
    {"nvidia.com/mig-", FAIR_EINVAL, 0},
    {"nvidia.com/mig-+me", FAIR_EINVAL, 0},
    {"nvidia.com/mig-1g", FAIR_EINVAL, 0},
    {"nvidia.com/gpu", FAIR_EINVAL, 0},
    {"nvidia.com/mig1g.10gb", FAIR_EINVAL, 0},
    {"", FAIR_EINVAL, 0},
};

static void test_profile_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(mig_cases) / sizeof(mig_cases[0]); i++) {
        const struct mcase *c = &mig_cases[i];
        struct fair_error err = {0};
        int64_t m = -1;
        int rc = fair_mig_share_milli(c->name, &m, &err);
        if (rc != c->rc || (rc == 0 && m != c->milli))
            fail_msg("\"%s\": rc %d share %lld, want rc %d share %lld", c->name, rc, (long long)m,
                     c->rc, (long long)c->milli);
        if (rc && !err.msg[0])
            fail_msg("\"%s\": no message", c->name);
        if (rc)
            assert_int_equal(m, 0);
    }
    /* Long names are refused before any table lookup, and NULL is no MIG. */
    char big[200];
    memset(big, 'x', sizeof big);
    memcpy(big, "nvidia.com/mig-1g.10gb", 22);
    big[sizeof big - 1] = '\0';
    int64_t m = 0;
    assert_int_equal(fair_mig_share_milli(big, &m, NULL), FAIR_EINVAL);
    assert_false(fair_mig_is_resource(NULL));
    assert_true(fair_mig_is_resource("nvidia.com/mig-anything"));
    assert_false(fair_mig_is_resource("nvidia.com/gpu"));
}

/* A node of the "mixed" strategy: no nvidia.com/gpu, 7 x 1g.10gb (one
 * GPU) and 2 x 3g.40gb (another). */
static struct fair_scalar mig_alloc[] = {{"nvidia.com/mig-1g.10gb", 7},
                                         {"nvidia.com/mig-3g.40gb", 2}};
static struct fair_scalar one_1g = {"nvidia.com/mig-1g.10gb", 1};
static struct fair_scalar one_3g = {"nvidia.com/mig-3g.40gb", 1};

static int mig_node(struct ts *t, const char *name)
{
    int n = ts_node(t, name, 0);
    t->nodes[n].scalars = mig_alloc;
    t->nodes[n].nscalars = 2;
    t->nodes[n].mig_milli = 7 * 143 + 2 * 429;
    return n;
}

static int mig_pod(struct ts *t, int q, const struct fair_scalar *sc, int64_t share)
{
    int p = ts_pod(t, q, share);
    t->pods[p].mig = true;
    t->pods[p].scalars = sc;
    t->pods[p].nscalars = 1;
    return p;
}

/* Placement by free instance count; no device; the charge is the share,
 * and the node's MIG GPUs are in the capacity. */
static void test_place_and_charge(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int n = mig_node(t, "mig0");
    ts_node(t, "whole0", 1);
    int a = ts_team(t, "a", 0, 1);
    for (int i = 0; i < 8; i++)
        mig_pod(t, a, &one_1g, 143);
    for (int i = 0; i < 3; i++)
        mig_pod(t, a, &one_3g, 429);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.capacity.v[FAIR_RES_GPU], 1000 + 7 * 143 + 2 * 429);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 9);
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *x = &t->res.actions[i];
        assert_int_equal(x->kind, FAIR_ACTION_BIND);
        assert_int_equal(x->node, n);
        assert_int_equal(x->gpu_devices, 0);
    }
    assert_int_equal(t->res.queues[a].allocated_after.v[FAIR_RES_GPU], 7 * 143 + 2 * 429);
    assert_int_equal(t->res.queues[a].demand.v[FAIR_RES_GPU], 8 * 143 + 3 * 429);
    ts_apply(t, false);
    /* Next cycle: the whole GPU is still free for a whole-GPU pod, the MIG
     * pods hold no room of it; the pending MIG pods stay pending. */
    int w = ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
    assert_int_equal(t->res.actions[0].pod, w);
    assert_int_equal(t->res.actions[0].gpu_devices, 1);
    assert_int_equal(t->res.queues[a].allocated.v[FAIR_RES_GPU], 7 * 143 + 2 * 429);
    ts_free(t);
}

/* A MIG pod that fits no node is not placed on a whole-GPU node, and one
 * that needs no GPU device is not held back by full devices. */
static void test_no_instance_no_place(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "whole0", 8);
    int a = ts_team(t, "a", 0, 1);
    int p = mig_pod(t, a, &one_1g, 143);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 0);
    assert_int_equal(t->res.pending_reasons[p] != FAIR_PENDING_NONE, 1);
    ts_free(t);

    t = ts_new();
    int n = mig_node(t, "mig0");
    a = ts_team(t, "a", 0, 1);
    /* A whole-GPU pod bound by another scheduler on the MIG node's
     * (absent) devices would be odd; a CPU-only pod there is not. */
    ts_bound(t, -1, 0, n, 0, 0);
    p = mig_pod(t, a, &one_3g, 429);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
    assert_int_equal(t->res.actions[0].pod, p);
    ts_free(t);
}

/* The charge counts against the queue's limit like any GPU request. */
static void test_limit(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    mig_node(t, "mig0");
    int a = ts_team(t, "a", 0, 1);
    t->queues[a].q.limit.v[FAIR_RES_GPU] = 300;
    for (int i = 0; i < 3; i++)
        mig_pod(t, a, &one_1g, 143);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 2);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_OVER_LIMIT), 1);
    ts_free(t);
}

/* A bound MIG pod with a share that is neither whole nor below one GPU
 * (three 3g.40gb: 1287 milli) is valid, and takes no device. */
static void test_odd_share_valid(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int n = mig_node(t, "mig0");
    int a = ts_team(t, "a", 0, 1);
    static struct fair_scalar two_3g = {"nvidia.com/mig-3g.40gb", 2};
    static struct fair_scalar mix[] = {{"nvidia.com/mig-1g.10gb", 3},
                                       {"nvidia.com/mig-3g.40gb", 2}};
    int p = mig_pod(t, a, mix, 3 * 143 + 2 * 429);
    t->pods[p].nscalars = 2;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nproblems, 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
    assert_int_equal(t->res.actions[0].node, n);
    assert_int_equal(t->res.queues[a].allocated_after.v[FAIR_RES_GPU], 3 * 143 + 2 * 429);
    ts_apply(t, false);
    /* Both 3g instances are taken: another 3g pod waits. */
    mig_pod(t, a, &two_3g, 2 * 429);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 0);
    ts_free(t);
}

/* A MIG borrower is a reclaim victim like any GPU pod: queue b borrows
 * every 1g.10gb instance of the cluster; queue a, owed a GPU, asks for one
 * instance, and gets it back from b: one of b's pods is evicted (only
 * one: a's fair share is the one instance), then a's pod is bound there. */
static void test_reclaimed_as_borrower(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int n = mig_node(t, "mig0");
    t->nodes[n].nscalars = 1; /* 7 x 1g.10gb only */
    t->nodes[n].mig_milli = 7 * 143;
    int a = ts_team(t, "a", G, 1);
    int b = ts_team(t, "b", 0, 1);
    for (int i = 0; i < 7; i++) {
        int p = ts_bound(t, b, 143, n, 0, 0);
        t->pods[p].mig = true;
        t->pods[p].scalars = &one_1g;
        t->pods[p].nscalars = 1;
    }
    int ap = mig_pod(t, a, &one_1g, 143);
    assert_int_equal(ts_run(t), 0);
    if (getenv("MIG_DUMP"))
        ts_dump(t);
    assert_int_equal(t->res.queues[b].allocated.v[FAIR_RES_GPU], 7 * 143);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_EVICT, b), 1);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 1);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 0);
    ts_apply(t, false);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
    /* ts_apply removed the evicted pod, one index below a's. */
    assert_int_equal(t->res.actions[0].pod, ap - 1);
    assert_int_equal(t->pods[ap - 1].queue, a);
    assert_int_equal(t->res.actions[0].node, n);
    assert_int_equal(t->res.queues[a].allocated_after.v[FAIR_RES_GPU], 143);
    assert_int_equal(t->res.queues[b].allocated_after.v[FAIR_RES_GPU], 6 * 143);
    ts_free(t);
}

/* MIG pods and fraction tenancy (docs/fractions.md, "Tenancy"): a MIG
 * pod's GPU figure is a charge, not a fraction of a device, so another
 * project's fraction on a device keeps no MIG pod out, while that
 * project's fractions still keep other projects' fractions off the
 * device. */
static void test_mig_not_a_fraction(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int n = mig_node(t, "mig0");
    int f = ts_node(t, "frac0", 1);
    int a = ts_team(t, "a", 0, 1);
    int b = ts_team(t, "b", 0, 1);
    ts_bound(t, a, 500, f, 1, 1000);
    int m = mig_pod(t, b, &one_1g, 143);
    int q = ts_pod(t, b, 250);
    assert_int_equal(ts_run(t), 0);
    bool mig_bound = false, frac_bound = false;
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *x = &t->res.actions[i];
        if (x->kind == FAIR_ACTION_BIND && x->pod == m) {
            mig_bound = true;
            assert_int_equal(x->node, n);
            assert_int_equal(x->gpu_devices, 0);
        }
        if (x->kind == FAIR_ACTION_BIND && x->pod == q)
            frac_bound = true;
    }
    assert_true(mig_bound);
    assert_false(frac_bound); /* a's fraction holds the only device */
    ts_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_table),        cmocka_unit_test(test_place_and_charge),
        cmocka_unit_test(test_no_instance_no_place), cmocka_unit_test(test_limit),
        cmocka_unit_test(test_odd_share_valid),      cmocka_unit_test(test_reclaimed_as_borrower),
        cmocka_unit_test(test_mig_not_a_fraction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
