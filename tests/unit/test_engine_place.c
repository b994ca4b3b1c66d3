/* Engine placement tests: GPU fractions packed on devices, whole GPUs on
 * the nodes already in use, node filters (selectors, taints, unschedulable,
 * GPU model, CPU, memory, pod count) and gangs (all or nothing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "engine/placement.h"
#include "test_engine_fixture.h"

#define G 1000

static int popcount(uint64_t m)
{
    return __builtin_popcountll(m);
}

/* Four half-GPU pods fill two devices, not four. */
static void test_fractions_packed(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 8);
    int a = ts_team(t, "a", 0, 1);
    for (int i = 0; i < 4; i++)
        ts_pod(t, a, 500);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 4);
    uint64_t used = 0;
    for (size_t i = 0; i < t->res.nactions; i++) {
        assert_int_equal(popcount(t->res.actions[i].gpu_devices), 1);
        used |= t->res.actions[i].gpu_devices;
    }
    assert_int_equal(used, 0x3);

    /* The spread baseline uses four devices for the same pods. */
    t->policy = FAIR_PLACE_SPREAD;
    assert_int_equal(ts_run(t), 0);
    used = 0;
    for (size_t i = 0; i < t->res.nactions; i++)
        used |= t->res.actions[i].gpu_devices;
    assert_int_equal(popcount(used), 4);
    ts_free(t);
}

/* Best fit: a fraction goes to the fullest device that still fits. */
static void test_fraction_best_fit(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 4);
    int a = ts_team(t, "a", 0, 1);
    ts_bound(t, a, 500, 0, 0x1, 0); /* device 0: 500 free */
    ts_bound(t, a, 250, 0, 0x2, 0); /* device 1: 750 free */
    int p1 = ts_pod(t, a, 700);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 1);
    assert_int_equal(t->res.actions[0].pod, p1);
    assert_int_equal(t->res.actions[0].gpu_devices, 0x2);
    ts_apply(t, false);
    int p2 = ts_pod(t, a, 250);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.actions[0].pod, p2);
    assert_int_equal(t->res.actions[0].gpu_devices, 0x1);
    ts_free(t);
}

/* The node of the only bind action; fails the test when there is not
 * exactly one. */
static int only_bind_node(const struct ts *t, int pod)
{
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 1);
    assert_int_equal(t->res.actions[0].pod, pod);
    return t->res.actions[0].node;
}

/* Fraction fill: a 0.32 GPU pod beside a 0.47 one would leave 0.21, which
 * none of the sizes in use (0.47, 0.32, 0.65) fills; on a fully free
 * device it leaves 0.68, which a 0.65 pod fills. It takes the free device.
 * When 0.21 pods are common, the 0.21 can be filled, and best fit's choice
 * (the 0.47's device) stands. So it does while a whole-GPU pod is pending
 * (here one of 2 GPUs, which fits no node): the free device stays whole. */
static void test_fraction_fill(void **state)
{
    (void)state;
    const int64_t third[3] = {650, 210, 650};
    for (int k = 0; k < 3; k++) {
        struct ts *t = ts_new();
        int half = ts_node(t, "a-half", 1);
        int empty = ts_node(t, "b-empty", 1);
        int full = ts_node(t, "c-full", 1);
        t->nodes[full].max_pods = 1; /* nothing more goes there */
        int a = ts_team(t, "a", 0, 1);
        ts_bound(t, a, 470, half, 0x1, 0);
        ts_bound(t, a, third[k], full, 0x1, 0);
        if (k == 2)
            ts_pod(t, a, 2 * G);
        int p = ts_pod(t, a, 320);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(only_bind_node(t, p), k == 0 ? empty : half);
        assert_int_equal(t->res.actions[0].gpu_devices, 0x1);
        ts_free(t);
    }
}

/* Whole GPUs go to the node already in use; a full node stays for a big
 * request. */
static void test_whole_gpus_most_allocated(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "empty", 8);
    int used = ts_node(t, "used", 8);
    int a = ts_team(t, "a", 0, 1);
    ts_bound(t, a, 6 * G, used, 0x3f, 0);
    int p2 = ts_pod(t, a, 2 * G);
    int p8 = ts_pod(t, a, 8 * G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 2);
    for (size_t i = 0; i < 2; i++) {
        const struct fair_action *x = &t->res.actions[i];
        if (x->pod == p2) {
            assert_int_equal(x->node, used);
            assert_int_equal(x->gpu_devices, 0xc0);
        } else {
            assert_int_equal(x->pod, p8);
            assert_int_equal(x->node, 0);
            assert_int_equal(x->gpu_devices, 0xff);
        }
    }
    ts_free(t);
}

/* Among nodes that pack a pod equally well, the smallest (GPUs, then CPU,
 * then memory) comes first, whatever the names: the big node stays whole
 * for the 8-GPU pod of 100 cores that only it holds. */
static void test_small_node_first(void **state)
{
    (void)state;
    for (int by_mem = 0; by_mem <= 1; by_mem++) {
        struct ts *t = ts_new();
        int big = ts_node(t, "a-big", 8);
        if (by_mem)
            t->nodes[big].allocatable.v[FAIR_RES_MEM] = 1024 * GI;
        else
            t->nodes[big].allocatable.v[FAIR_RES_CPU] = 128000;
        int small = ts_node(t, "b-small", 8);
        int a = ts_team(t, "a", 0, 1);
        int p4 = ts_pod(t, a, 4 * G);
        t->pods[p4].request.v[FAIR_RES_CPU] = 32000;
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(only_bind_node(t, p4), small);
        ts_apply(t, false);
        int p8 = ts_pod(t, a, 8 * G);
        if (by_mem)
            t->pods[p8].request.v[FAIR_RES_MEM] = 600 * GI;
        else
            t->pods[p8].request.v[FAIR_RES_CPU] = 100000;
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(only_bind_node(t, p8), big);
        ts_free(t);
    }
}

/* Balance: a CPU-heavy GPU pod goes where it strands no GPUs, not to the
 * fuller node whose last CPU it would take (plain packing's choice). */
static void test_balance_cpu_heavy_pod(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int dense = ts_node(t, "a-dense", 8);
    t->nodes[dense].allocatable.v[FAIR_RES_CPU] = 16000;
    int roomy = ts_node(t, "b-roomy", 8);
    int a = ts_team(t, "a", 0, 1);
    ts_bound(t, a, 4 * G, dense, 0x0f, 0); /* 4 GPUs, 1 core */
    ts_bound(t, a, 2 * G, roomy, 0x03, 0); /* 2 GPUs, 1 core */
    int p = ts_pod(t, a, G);
    t->pods[p].request.v[FAIR_RES_CPU] = 15000;
    assert_int_equal(ts_run(t), 0);
    /* On a-dense it would leave 3 GPUs with no CPU at all. */
    assert_int_equal(only_bind_node(t, p), roomy);

    /* Without CPU requests there is nothing to balance: packing decides. */
    t->pods[p].request.v[FAIR_RES_CPU] = 0;
    for (size_t i = 0; i < t->npods; i++)
        t->pods[i].request.v[FAIR_RES_CPU] = 0;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(only_bind_node(t, p), dense);
    ts_free(t);
}

/* Balance: GPUs left without CPU by a CPU-only pod are given to a GPU pod
 * that needs little CPU, rather than opening up another node. */
static void test_balance_uses_stranded_gpus(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int starved = ts_node(t, "a-starved", 8);
    int used = ts_node(t, "b-used", 8);
    int a = ts_team(t, "a", 0, 1);
    int cpu = ts_bound(t, a, 0, starved, 0, 0);
    t->pods[cpu].request.v[FAIR_RES_CPU] = 62000; /* 8 GPUs, 2 cores free */
    int b = ts_bound(t, a, 4 * G, used, 0x0f, 0);
    t->pods[b].request.v[FAIR_RES_CPU] = 8000; /* the ratio: 2 cores per GPU */
    int p = ts_pod(t, a, G);
    t->pods[p].request.v[FAIR_RES_CPU] = 500;
    assert_int_equal(ts_run(t), 0);
    /* a-starved can use 1 of its 8 free GPUs; this pod adds a second. */
    assert_int_equal(only_bind_node(t, p), starved);

    /* A pod at that ratio rescues nothing: plain packing (the node
     * with the fewest whole free devices) decides again. */
    t->pods[p].request.v[FAIR_RES_CPU] = 2000;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(only_bind_node(t, p), used);
    ts_free(t);
}

/* Balance leaves dead remainders out: the 0.19 beside a 0.81 pod, which
 * no common size (0.23, 0.77, 0.81) fits, is not GPU that the node's CPU
 * could strand. A CPU-heavy 0.23 pod fills the 0.23 left on a-tight,
 * though it takes the node's last CPU; counted as usable, the 0.19 would
 * look stranded, and the pod would break up b-roomy's free device. Where
 * 0.19 pods are common, the 0.19 is usable, and it does. */
static void test_balance_dead_remainder(void **state)
{
    (void)state;
    for (int common19 = 0; common19 <= 1; common19++) {
        struct ts *t = ts_new();
        int tight = ts_node(t, "a-tight", 2);
        int roomy = ts_node(t, "b-roomy", 1);
        int a = ts_team(t, "a", 0, 1);
        int x = ts_bound(t, a, 810, tight, 0x1, 0);
        t->pods[x].request.v[FAIR_RES_CPU] = 3240; /* 4 cores per GPU */
        int y = ts_bound(t, a, 770, tight, 0x2, 0);
        t->pods[y].request.v[FAIR_RES_CPU] = 3080;
        t->nodes[tight].allocatable.v[FAIR_RES_CPU] = 3240 + 3080 + 2000;
        if (common19) {
            int full = ts_node(t, "c-full", 1);
            t->nodes[full].max_pods = 1; /* nothing more goes there */
            int z = ts_bound(t, a, 190, full, 0x1, 0);
            t->pods[z].request.v[FAIR_RES_CPU] = 760;
        }
        int p = ts_pod(t, a, 230);
        t->pods[p].request.v[FAIR_RES_CPU] = 2000;
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(only_bind_node(t, p), common19 ? roomy : tight);
        assert_int_equal(t->res.actions[0].gpu_devices, common19 ? 0x1 : 0x2);
        ts_free(t);
    }
}

/* Every allocation of a cycle failing in turn: FAIR_ENOMEM and no leak
 * (the sanitizer build checks), then pod p binds on node want as before. */
static void check_alloc_failures(struct ts *t, int p, int want)
{
    long failures = 0;
    for (long k = 0; k < 10000; k++) {
        fair_alloc_fail_after(k);
        int rc = ts_run(t);
        fair_alloc_fail_after(-1);
        if (rc == 0) {
            assert_int_equal(only_bind_node(t, p), want);
            break;
        }
        assert_int_equal(rc, FAIR_ENOMEM);
        failures++;
    }
    assert_true(failures > 3);
}

/* Within a fill level, a fraction goes where the common fraction shapes
 * can still use the rest: on a-tight, the first of two equally full
 * nodes, its 8 cores would leave 4, and the free device there would wait
 * for a pod of 8 cores, the common shape. Balance does not see it: the
 * lighter third of the GPU pods ask for 2 cores per GPU. */
static void test_fill_node_by_shapes(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int tight = ts_node(t, "a-tight", 2);
    int roomy = ts_node(t, "b-roomy", 2);
    int full = ts_node(t, "c-full", 2);
    int a = ts_team(t, "a", 0, 1);
    int on[4] = {tight, roomy, full, full};
    for (int i = 0; i < 4; i++) { /* the common shape: 0.5 GPU, 8 cores */
        int b = ts_bound(t, a, 500, on[i], i == 3 ? 0x2 : 0x1, 0);
        t->pods[b].request.v[FAIR_RES_CPU] = 8000;
    }
    for (int i = 0; i < 2; i++) /* the light ones: 0.5 GPU, 1 core */
        ts_bound(t, a, 500, full, 0x1 << i, 0);
    t->nodes[tight].allocatable.v[FAIR_RES_CPU] = 20000;
    int p = ts_pod(t, a, 500);
    t->pods[p].request.v[FAIR_RES_CPU] = 8000;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(only_bind_node(t, p), roomy);
    assert_int_equal(t->res.actions[0].gpu_devices, 0x1);

    check_alloc_failures(t, p, roomy);

    /* Under model contention (a T4 pod wants more than the one T4 GPU's
     * share) the fullest node of the level, as before: the shapes do not
     * say which pods need the scarce nodes' CPU. */
    int t4 = ts_node(t, "d-t4", 1);
    t->nodes[t4].gpu_model = "T4";
    int w = ts_bound(t, a, G, t4, 0x1, 0);
    t->pods[w].gpu_model = "T4";
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(only_bind_node(t, p), tight);
    ts_free(t);
}

/* Balance: a CPU-only pod takes CPU where it strands no GPU. */
static void test_balance_cpu_only_pod(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int tight = ts_node(t, "a-tight", 8);
    t->nodes[tight].allocatable.v[FAIR_RES_CPU] = 8000;
    int rich = ts_node(t, "b-rich", 2);
    int a = ts_team(t, "a", 0, 1);
    for (int d = 0; d < 8; d++) { /* every device half used: 0 whole free */
        int b = ts_bound(t, a, 500, tight, (uint64_t)1 << d, 0);
        t->pods[b].request.v[FAIR_RES_CPU] = 500;
    }
    ts_bound(t, a, G, rich, 0x1, 0);
    int p = ts_pod(t, a, 0);
    t->pods[p].request.v[FAIR_RES_CPU] = 3000;
    assert_int_equal(ts_run(t), 0);
    /* a-tight comes first in packing order, but 3 of its 4 free GPUs
     * would be left with 1 core. */
    assert_int_equal(only_bind_node(t, p), rich);
    ts_free(t);
}

/* Balance uses the CPU per GPU of the lighter third of the GPU pods, not
 * the mean: one CPU-hungry pod does not make every 8-GPU node look short of
 * CPU (which would send small pods to break up the empty node kept for an
 * 8-GPU request). */
static void test_balance_light_ratio(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int empty = ts_node(t, "a-empty", 8);
    int used = ts_node(t, "b-used", 8);
    int fat = ts_node(t, "c-fat", 1);
    int a = ts_team(t, "a", 0, 1);
    for (int d = 0; d < 6; d++)
        ts_bound(t, a, G, used, (uint64_t)1 << d, 0);
    int hungry = ts_bound(t, a, G, fat, 0x1, 0);
    t->pods[hungry].request.v[FAIR_RES_CPU] = 60000;
    int p = ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(only_bind_node(t, p), used);
    (void)empty;
    ts_free(t);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The quickselect agrees with sorting, with many equal ratios too. */
static void test_weighted_quantile(void **state)
{
    (void)state;
    struct fair_ratio_w v[200];
    int64_t sorted[200];
    uint64_t rng = 42;
    assert_int_equal(fair_place_weighted_quantile(v, 0, 1, 3), 0);
    for (int round = 0; round < 500; round++) {
        size_t n = 1 + (size_t)(round % 200);
        int64_t span = round % 3 == 0 ? 4 : 100000;
        int64_t total = 0;
        for (size_t i = 0; i < n; i++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            v[i].ratio = (int64_t)((rng >> 33) % (uint64_t)span);
            v[i].weight = 1 + (int64_t)((rng >> 13) % 8000);
            total += v[i].weight;
        }
        for (int k = 0; k < 3; k++) {
            int num = k == 0 ? 1 : (k == 1 ? 1 : 2), den = k == 0 ? 3 : (k == 1 ? 2 : 2);
            /* Reference: sort the ratios, walk until num/den of the weight. */
            for (size_t i = 0; i < n; i++)
                sorted[i] = v[i].ratio;
            qsort(sorted, n, sizeof(sorted[0]), cmp_i64);
            int64_t want = -1;
            for (size_t i = 0; i < n && want < 0; i++) {
                int64_t acc = 0;
                for (size_t j = 0; j < n; j++)
                    if (v[j].ratio <= sorted[i])
                        acc += v[j].weight;
                if (acc * den >= total * num)
                    want = sorted[i];
            }
            assert_int_equal(fair_place_weighted_quantile(v, n, num, den), want);
        }
    }
}

enum tweak {
    T_NONE,
    T_SELECTOR_MATCH,
    T_SELECTOR_MISS,
    T_TAINT,
    T_TAINT_TOLERATED,
    T_TAINT_EXISTS_ALL,
    T_TAINT_OTHER_EFFECT,
    T_TAINT_NOEXECUTE,
    T_TAINT_PREFER,
    T_UNSCHEDULABLE,
    T_MODEL_MATCH,
    T_MODEL_MISS,
    T_CPU_FULL,
    T_MEM_FULL,
    T_MAX_PODS,
    T_TOO_MANY_GPUS,
};

static const struct fair_label lbl_zone = {"zone", "a"};
static const struct fair_label lbl_zone_b = {"zone", "b"};
static const struct fair_taint taint_ns = {"gpu", "big", FAIR_TAINT_NO_SCHEDULE};
static const struct fair_taint taint_nx = {"gpu", "big", FAIR_TAINT_NO_EXECUTE};
static const struct fair_taint taint_pref = {"gpu", "big", FAIR_TAINT_PREFER_NO_SCHEDULE};
static const struct fair_toleration tol_eq = {"gpu", FAIR_TOLERATE_EQUAL, "big", false,
                                              FAIR_TAINT_NO_SCHEDULE};
static const struct fair_toleration tol_all = {NULL, FAIR_TOLERATE_EXISTS, NULL, true, 0};

/* Model contention: a GPU pod that may run anywhere leaves the GPUs of a
 * model that restricted pods ask for more than their share of (here T4:
 * 20% of the GPUs, half of the requests) and takes another model, even
 * though packing alone would take the T4 node's last free GPU. When only
 * the T4 node has room, it still goes there. */
static void test_contention_scarce_model(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    int t4 = ts_node(t, "a-t4", 2);
    int g2 = ts_node(t, "b-g2", 8);
    t->nodes[t4].gpu_model = "T4";
    t->nodes[g2].gpu_model = "G2";
    int a = ts_team(t, "a", 0, 1);
    int b = ts_bound(t, a, G, t4, 0x1, 0);
    t->pods[b].gpu_model = ts_str(t, "T4"); /* equal strings, not the same */
    int p = ts_pod(t, a, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(only_bind_node(t, p), g2);

    /* A pod that asks for T4 gets it. */
    t->pods[p].gpu_model = "T4";
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(only_bind_node(t, p), t4);

    /* The other model full: the free pod takes the T4 GPU after all. */
    t->pods[p].gpu_model = NULL;
    int full = ts_bound(t, a, 8 * G, g2, 0xff, 0);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(only_bind_node(t, p), t4);

    /* Every allocation failing in turn, with the tiers in use: FAIR_ENOMEM
     * and no leak (the sanitizer build checks), then the same choice. */
    t->pods[full].request.v[FAIR_RES_GPU] = 4 * G; /* G2 half free again */
    t->pods[full].gpu_devices = 0xf;
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(only_bind_node(t, p), g2);
    check_alloc_failures(t, p, g2);
    ts_free(t);
}

static void test_node_filters(void **state)
{
    (void)state;
    static const struct {
        const char *title;
        enum tweak tweak;
        bool binds;
        enum fair_pending_reason reason;
    } cases[] = {
        {"no constraint", T_NONE, true, 0},
        {"selector matches", T_SELECTOR_MATCH, true, 0},
        {"selector misses", T_SELECTOR_MISS, false, FAIR_PENDING_NO_NODE_FITS},
        {"NoSchedule taint", T_TAINT, false, FAIR_PENDING_NO_NODE_FITS},
        {"taint tolerated (Equal)", T_TAINT_TOLERATED, true, 0},
        {"taint tolerated (Exists, any key)", T_TAINT_EXISTS_ALL, true, 0},
        {"toleration for another effect", T_TAINT_OTHER_EFFECT, false, FAIR_PENDING_NO_NODE_FITS},
        {"NoExecute taint", T_TAINT_NOEXECUTE, false, FAIR_PENDING_NO_NODE_FITS},
        {"PreferNoSchedule only prefers", T_TAINT_PREFER, true, 0},
        /* No schedulable node: no capacity, so no fair share either. */
        {"unschedulable", T_UNSCHEDULABLE, false, FAIR_PENDING_FAIR_SHARE},
        {"gpu model matches", T_MODEL_MATCH, true, 0},
        {"gpu model differs", T_MODEL_MISS, false, FAIR_PENDING_NO_NODE_FITS},
        {"cpu full", T_CPU_FULL, false, FAIR_PENDING_NO_NODE_FITS},
        {"memory full", T_MEM_FULL, false, FAIR_PENDING_NO_NODE_FITS},
        {"pod count", T_MAX_PODS, false, FAIR_PENDING_NO_NODE_FITS},
        /* 16 GPUs in a cluster of 8: beyond any fair share. */
        {"more GPUs than the cluster has", T_TOO_MANY_GPUS, false, FAIR_PENDING_FAIR_SHARE},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct ts *t = ts_new();
        int n = ts_node(t, "n0", 8);
        /* A CPU-only node keeps CPU and memory capacity above the request,
         * so that the GPU node's own room is what is tested. */
        ts_node(t, "cpu-only", 0);
        struct fair_node *node = &t->nodes[n];
        node->labels = &lbl_zone;
        node->nlabels = 1;
        int a = ts_team(t, "a", 0, 1);
        if (cases[c].tweak == T_MAX_PODS) {
            node->max_pods = 1;
            ts_bound(t, a, 0, n, 0, 0);
        }
        int p = ts_pod(t, a, cases[c].tweak == T_TOO_MANY_GPUS ? 16 * G : G);
        struct fair_pod *pod = &t->pods[p];
        switch (cases[c].tweak) {
        case T_SELECTOR_MATCH:
            pod->node_selector = &lbl_zone;
            pod->nnode_selector = 1;
            break;
        case T_SELECTOR_MISS:
            pod->node_selector = &lbl_zone_b;
            pod->nnode_selector = 1;
            break;
        case T_TAINT:
            node->taints = &taint_ns;
            node->ntaints = 1;
            break;
        case T_TAINT_TOLERATED:
            node->taints = &taint_ns;
            node->ntaints = 1;
            pod->tolerations = &tol_eq;
            pod->ntolerations = 1;
            break;
        case T_TAINT_EXISTS_ALL:
            node->taints = &taint_nx;
            node->ntaints = 1;
            pod->tolerations = &tol_all;
            pod->ntolerations = 1;
            break;
        case T_TAINT_OTHER_EFFECT:
            node->taints = &taint_nx;
            node->ntaints = 1;
            pod->tolerations = &tol_eq;
            pod->ntolerations = 1;
            break;
        case T_TAINT_NOEXECUTE:
            node->taints = &taint_nx;
            node->ntaints = 1;
            break;
        case T_TAINT_PREFER:
            node->taints = &taint_pref;
            node->ntaints = 1;
            break;
        case T_UNSCHEDULABLE:
            node->unschedulable = true;
            break;
        case T_MODEL_MATCH:
            pod->gpu_model = "A100";
            break;
        case T_MODEL_MISS:
            pod->gpu_model = "H100";
            break;
        case T_CPU_FULL:
            pod->request.v[FAIR_RES_CPU] = 64001;
            break;
        case T_MEM_FULL:
            pod->request.v[FAIR_RES_MEM] = 513 * GI;
            break;
        default:
            break;
        }
        assert_int_equal(ts_run(t), 0);
        bool bound = ts_count(t, FAIR_ACTION_BIND) == 1;
        if (bound != cases[c].binds)
            fail_msg("%s: bound=%d, want %d (reason %s)", cases[c].title, bound, cases[c].binds,
                     fair_pending_reason_str(t->res.pending_reasons[p]));
        if (!bound && t->res.pending_reasons[p] != cases[c].reason)
            fail_msg("%s: reason %s, want %s", cases[c].title,
                     fair_pending_reason_str(t->res.pending_reasons[p]),
                     fair_pending_reason_str(cases[c].reason));
        ts_free(t);
    }
}

static int gang_pod(struct ts *t, int q, int64_t gpu, const char *gang, int size)
{
    int p = ts_pod(t, q, gpu);
    t->pods[p].gang = gang;
    t->pods[p].gang_size = size;
    return p;
}

/* Gangs: all together or not at all. */
static void test_gangs(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 8);
    ts_node(t, "n1", 8);
    int a = ts_team(t, "a", 0, 1);
    /* Three 5-GPU pods cannot all fit on 2 nodes of 8: none is placed. */
    for (int i = 0; i < 3; i++)
        gang_pod(t, a, 5 * G, "big", 3);
    /* Only 3 of 4 members exist. */
    for (int i = 0; i < 3; i++)
        gang_pod(t, a, 1 * G, "partial", 4);
    /* Two 4-GPU pods of a complete gang fit. */
    int g1 = gang_pod(t, a, 4 * G, "pair", 2);
    int g2 = gang_pod(t, a, 4 * G, "pair", 2);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_GANG_NO_FIT), 3);
    assert_int_equal(ts_reason_count(t, FAIR_PENDING_GANG_INCOMPLETE), 3);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 2);
    assert_int_equal(t->res.pending_reasons[g1], FAIR_PENDING_NONE);
    assert_int_equal(t->res.pending_reasons[g2], FAIR_PENDING_NONE);
    ts_apply(t, false);
    /* The fourth member arrives: the partial gang is now complete. */
    gang_pod(t, a, 1 * G, "partial", 4);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 4);
    ts_apply(t, false);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nactions, 0);
    ts_free(t);

    /* Members already bound count towards the gang's size. */
    t = ts_new();
    ts_node(t, "n0", 8);
    a = ts_team(t, "a", 0, 1);
    int b = ts_bound(t, a, G, 0, 0x1, 0);
    t->pods[b].gang = "job";
    t->pods[b].gang_size = 3;
    gang_pod(t, a, G, "job", 3);
    gang_pod(t, a, G, "job", 3);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 2);
    ts_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fractions_packed),
        cmocka_unit_test(test_fraction_best_fit),
        cmocka_unit_test(test_fraction_fill),
        cmocka_unit_test(test_whole_gpus_most_allocated),
        cmocka_unit_test(test_small_node_first),
        cmocka_unit_test(test_weighted_quantile),
        cmocka_unit_test(test_balance_cpu_heavy_pod),
        cmocka_unit_test(test_balance_uses_stranded_gpus),
        cmocka_unit_test(test_balance_dead_remainder),
        cmocka_unit_test(test_fill_node_by_shapes),
        cmocka_unit_test(test_balance_cpu_only_pod),
        cmocka_unit_test(test_balance_light_ratio),
        cmocka_unit_test(test_contention_scarce_model),
        cmocka_unit_test(test_node_filters),
        cmocka_unit_test(test_gangs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
