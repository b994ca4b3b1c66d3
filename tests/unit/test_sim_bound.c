/* The fragmentation lower bound (sim/bound.h): hand-computed LPs, a
 * brute-force check on tiny instances, agreement with the experiment's
 * arrivals, bad input and allocation failure at every site. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "sim/bound.h"
#include "sim/frag.h"
#include "sim/place.h"
#include "sim/trace.h"
#include "test_alloc_sweep.h"
#include "test_sim_fixture.h"

/* The bound when must[i] pods of sizes[i] and must_whole whole GPUs must be
 * placed (must NULL: none). */
static int64_t bound_must(const int64_t *sizes, const int64_t *counts, const int64_t *must,
                          size_t n, int64_t whole, int64_t must_whole, int64_t devices,
                          struct fair_sim_frag_bound *b)
{
    struct fair_error err = {0};
    struct fair_sim_frag_hist h = {.sizes = sizes,
                                   .counts = counts,
                                   .nsizes = n,
                                   .whole_gpus = whole,
                                   .devices = devices,
                                   .must_counts = must,
                                   .must_whole_gpus = must_whole};
    int rc = fair_sim_frag_bound_hist(&h, b, &err);
    if (rc)
        fail_msg("bound: %d %s", rc, err.msg);
    assert_true(b->optimal);
    return b->bound_milli;
}

static int64_t bound_of(const int64_t *sizes, const int64_t *counts, size_t n, int64_t whole,
                        int64_t devices, struct fair_sim_frag_bound *b)
{
    return bound_must(sizes, counts, NULL, n, whole, 0, devices, b);
}

/* The safe rounding may lose at most one milli-GPU against the exact LP. */
static void assert_bound(int64_t got, int64_t exact)
{
    if (got > exact || got < exact - 1)
        fail_msg("bound %lld, expected %lld (or 1 less)", (long long)got, (long long)exact);
}

static void test_hand_computed(void **state)
{
    (void)state;
    struct fair_sim_frag_bound b;
    /* 810 milli only, one per device at most: 190 lost on each device. */
    const int64_t s810[] = {810}, n7[] = {7};
    assert_bound(bound_of(s810, n7, 1, 0, 7, &b), 190 * 7);
    assert_int_equal(b.capacity_milli, 7000);
    assert_int_equal(b.arrived_milli, 810 * 7);
    assert_int_equal(b.patterns, 1);
    assert_int_equal(b.fraction_sizes, 1);
    assert_true(b.lp_milli > 810 * 7 - 1e-6 && b.lp_milli < 810 * 7 + 1e-6);

    /* 500 milli pairs up perfectly: nothing need be lost. */
    const int64_t s500[] = {500}, n6[] = {6};
    assert_int_equal(bound_of(s500, n6, 1, 0, 3, &b), 0);
    assert_int_equal(b.patterns, 2); /* {500}, {500, 500} */

    /* Whole GPUs only: more arrived than devices fills the cluster; fewer
     * leave the rest free. */
    assert_int_equal(bound_of(NULL, NULL, 0, 5, 3, &b), 0);
    assert_int_equal(bound_of(NULL, NULL, 0, 2, 3, &b), 1000);
    assert_int_equal(b.patterns, 0);

    /* Mixed: two 810s and one whole GPU on two devices: the whole GPU and
     * one 810 (1810); the other 810 is lost anyway. */
    const int64_t n2[] = {2};
    assert_bound(bound_of(s810, n2, 1, 1, 2, &b), 190);

    /* Fractional optimum: three 500s and three 300s on two devices. The LP
     * takes 1.5 devices of {500,500} and 0.5 of {300,300,300}: 1950, which
     * its dual proves (u_dev = 900, u_500 = 50, u_300 = 0: 2x900 + 3x50).
     * The integer optimum is 1900 (one device {500,500}, one {500,300}). */
    const int64_t s53[] = {300, 500}, n33[] = {3, 3};
    assert_bound(bound_of(s53, n33, 2, 0, 2, &b), 50);
    assert_true(b.lp_milli > 1950 - 1e-6 && b.lp_milli < 1950 + 1e-6);
    assert_int_equal(b.fraction_sizes, 2);

    /* Nothing arrived: everything is unallocated. */
    assert_int_equal(bound_of(NULL, NULL, 0, 0, 4, &b), 4000);
    const int64_t n0[] = {0};
    assert_int_equal(bound_of(s810, n0, 1, 0, 4, &b), 4000);
    assert_int_equal(b.fraction_sizes, 0);
}

/* Pods that must be placed: the LP may no longer turn them away. */
static void test_must(void **state)
{
    (void)state;
    struct fair_sim_frag_bound b;
    /* Three 810s and three whole GPUs on three devices: free to turn the
     * 810s away, the LP fills every device with a whole GPU. Each 810 that
     * must be placed takes a device and loses its 190. */
    const int64_t s810[] = {810}, n3[] = {3}, m0[] = {0}, m1[] = {1}, m3[] = {3};
    assert_int_equal(bound_of(s810, n3, 1, 3, 3, &b), 0);
    assert_int_equal(bound_must(s810, n3, m0, 1, 3, 0, 3, &b), 0);
    assert_bound(bound_must(s810, n3, m1, 1, 3, 0, 3, &b), 190);
    assert_true(b.lp_milli > 2810 - 1e-6 && b.lp_milli < 2810 + 1e-6); /* without the bonus */
    assert_bound(bound_must(s810, n3, m3, 1, 3, 0, 3, &b), 570);
    /* Whole GPUs that must be placed change nothing here (the LP places
     * them anyway), nor does a must row that is already met. */
    assert_bound(bound_must(s810, n3, m1, 1, 3, 2, 3, &b), 190);

    /* 750 and 300 cannot share a device: with both held, two devices hold
     * 1050 and four whole GPUs the rest of six; with only the 750 held,
     * its device keeps 250 that the 300 cannot use. */
    const int64_t s2[] = {750, 300}, n11[] = {1, 1}, m11[] = {1, 1}, m10[] = {1, 0};
    assert_int_equal(bound_of(s2, n11, 2, 8, 6, &b), 0);
    assert_bound(bound_must(s2, n11, m11, 2, 8, 0, 6, &b), 950);
    assert_bound(bound_must(s2, n11, m10, 2, 8, 0, 6, &b), 250);

    /* The fractional example of test_hand_computed (three 500s, three 300s,
     * two devices) with all three 300s held: {300,300,300} takes 900 of one
     * device and a {500,500} the other; the LP cannot do better (1900). */
    const int64_t s53[] = {300, 500}, n33[] = {3, 3}, m30[] = {3, 0};
    assert_bound(bound_must(s53, n33, m30, 2, 0, 0, 2, &b), 100);
    assert_int_equal(b.fraction_sizes, 2);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct fair_sim_frag_bound b;
    struct fair_error err = {0};
    const int64_t zero[] = {0}, full[] = {1000}, twice[] = {300, 300}, one[] = {1}, neg[] = {-1};
    const int64_t n1[] = {1}, n11[] = {1, 1};
    struct fair_sim_frag_hist h = {.sizes = zero, .counts = n1, .nsizes = 1, .devices = 2};
    assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "fraction size 0 (count 1) must be in 1..999"));
    h.sizes = full;
    assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), FAIR_EINVAL);
    h.sizes = one;
    h.counts = neg;
    assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), FAIR_EINVAL);
    h.sizes = twice;
    h.counts = n11;
    h.nsizes = 2;
    assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), FAIR_EINVAL);
    assert_string_equal(err.msg, "fragmentation bound: fraction size 300 is listed twice");
    h.nsizes = 1;
    h.devices = -1;
    assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), FAIR_ERANGE);
    h.devices = 2;
    h.whole_gpus = (int64_t)INT32_MAX + 1;
    assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), FAIR_ERANGE);
    h.whole_gpus = 0;
    const int64_t big[] = {INT32_MAX};
    h.counts = big;
    assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), 0); /* the limit itself */
    const int64_t big2[] = {INT32_MAX, 1}, two[] = {300, 301};
    h.sizes = two;
    h.counts = big2;
    h.nsizes = 2;
    assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), FAIR_ERANGE);

    /* Sizes 1..100, many of each: far more than the pattern cap. */
    int64_t sizes[100], counts[100];
    for (int i = 0; i < 100; i++) {
        sizes[i] = i + 1;
        counts[i] = 1000;
    }
    h.sizes = sizes;
    h.counts = counts;
    h.nsizes = 100;
    assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), FAIR_ERANGE);
    assert_non_null(strstr(err.msg, "more than 500000 packing patterns of the 100 fraction"));

    /* Must rows: more than arrived, negative, or with the duals wanted. */
    const int64_t s1[] = {400}, c2[] = {2}, m3[] = {3}, mneg[] = {-1}, m1[] = {1};
    struct fair_sim_frag_hist hm = {
        .sizes = s1, .counts = c2, .nsizes = 1, .whole_gpus = 1, .devices = 2, .must_counts = m3};
    assert_int_equal(fair_sim_frag_bound_hist(&hm, &b, &err), FAIR_EINVAL);
    assert_string_equal(err.msg, "fragmentation bound: 3 pods of 400 milli-GPU must be placed, "
                                 "of 2 arrived");
    hm.must_counts = mneg;
    assert_int_equal(fair_sim_frag_bound_hist(&hm, &b, &err), FAIR_EINVAL);
    hm.must_counts = m1;
    hm.must_whole_gpus = 2;
    assert_int_equal(fair_sim_frag_bound_hist(&hm, &b, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "2 whole GPUs must be placed of 1 arrived"));
    hm.must_whole_gpus = -1;
    assert_int_equal(fair_sim_frag_bound_hist(&hm, &b, &err), FAIR_EINVAL);
    hm.must_whole_gpus = 1;
    double duals[1001];
    hm.duals = duals;
    assert_int_equal(fair_sim_frag_bound_hist(&hm, &b, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "the duals are only for the bound without pods"));
    hm.duals = NULL;
    assert_int_equal(fair_sim_frag_bound_hist(&hm, &b, &err), 0);
}

/* ---- brute force on tiny instances -------------------------------------- */

static int64_t best;

/* Items (decreasing, 1000 = a whole GPU) into devices; loads[d] == 1000 for
 * a device taken whole. Empty devices are interchangeable, so an item goes
 * to the first empty one only. An item with must[i] may not fail (must
 * NULL: any may); best is then reached only with all of them placed (-1:
 * no such placement). */
static void brute(const int64_t *items, const bool *must, size_t n, size_t i, int64_t *loads,
                  size_t ndev, int64_t placed, int64_t left)
{
    if ((!must || i == n) && placed > best)
        best = placed;
    if (i == n || placed + left <= best)
        return;
    bool empty_tried = false;
    for (size_t d = 0; d < ndev; d++) {
        if (loads[d] == 0) {
            if (empty_tried)
                continue;
            empty_tried = true;
        }
        if (items[i] == 1000 ? loads[d] != 0 : loads[d] + items[i] > 1000)
            continue;
        loads[d] += items[i];
        brute(items, must, n, i + 1, loads, ndev, placed + items[i], left - items[i]);
        loads[d] -= items[i];
    }
    if (!must || !must[i])
        brute(items, must, n, i + 1, loads, ndev, placed, left - items[i]); /* fails */
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* A random tiny instance: 1-3 fraction sizes from a menu, 1-3 pods of
 * each, 0-2 whole GPUs, 2-4 devices; with held, a random number of each
 * kind held to be placed. items (decreasing) and held[] list the pods one
 * by one for brute(). */
struct tiny {
    int64_t sizes[3], counts[3], must[3], items[12];
    bool held[12];
    size_t k, n;
    int64_t whole, must_whole, devices, total;
};

static void tiny_random(uint64_t *rng, bool held, struct tiny *in)
{
    static const int64_t menu[] = {100, 150, 250, 300, 330, 400, 450, 500, 600, 650, 700, 810, 900};
    const size_t nmenu = sizeof(menu) / sizeof(menu[0]);
    memset(in, 0, sizeof(*in));
    in->k = 1 + lcg(rng) % 3;
    in->whole = (int64_t)(lcg(rng) % 3);
    in->devices = 2 + (int64_t)(lcg(rng) % 3);
    if (held && in->whole)
        in->must_whole = (int64_t)(lcg(rng) % (uint64_t)(in->whole + 1));
    in->total = in->whole * 1000;
    bool used[sizeof(menu) / sizeof(menu[0])] = {false};
    for (size_t i = 0; i < in->k; i++) {
        size_t pick;
        do
            pick = lcg(rng) % nmenu;
        while (used[pick]);
        used[pick] = true;
        in->sizes[i] = menu[pick];
        in->counts[i] = 1 + (int64_t)(lcg(rng) % 3);
        if (held)
            in->must[i] = (int64_t)(lcg(rng) % (uint64_t)(in->counts[i] + 1));
    }
    for (int64_t w = 0; w < in->whole; w++) {
        in->held[in->n] = w < in->must_whole;
        in->items[in->n++] = 1000;
    }
    for (size_t i = 0; i < in->k; i++)
        for (int64_t c = 0; c < in->counts[i]; c++) {
            in->held[in->n] = c < in->must[i];
            in->items[in->n++] = in->sizes[i];
            in->total += in->sizes[i];
        }
    /* Decreasing order prunes best. */
    for (size_t i = 1; i < in->n; i++)
        for (size_t j = i; j > 0 && in->items[j] > in->items[j - 1]; j--) {
            int64_t t = in->items[j];
            bool h = in->held[j];
            in->items[j] = in->items[j - 1];
            in->held[j] = in->held[j - 1];
            in->items[j - 1] = t;
            in->held[j - 1] = h;
        }
}

/* Stopped after 1-3 pivots, the duals are not optimal (nor even feasible);
 * the repair step must still give a valid bound. Counts the early stops. */
static size_t check_early_stops(const struct tiny *in, bool held, int64_t min_unalloc, int trial)
{
    size_t early = 0;
    for (size_t cap = 1; cap <= 3; cap++) {
        struct fair_error err = {0};
        struct fair_sim_frag_bound b;
        struct fair_sim_frag_hist h = {.sizes = in->sizes,
                                       .counts = in->counts,
                                       .nsizes = in->k,
                                       .whole_gpus = in->whole,
                                       .devices = in->devices,
                                       .max_pivots = cap,
                                       .must_counts = held ? in->must : NULL,
                                       .must_whole_gpus = held ? in->must_whole : 0};
        assert_int_equal(fair_sim_frag_bound_hist(&h, &b, &err), 0);
        if (b.bound_milli < 0 || b.bound_milli > min_unalloc)
            fail_msg("trial %d, %zu pivots: bound %lld but a placement leaves %lld", trial, cap,
                     (long long)b.bound_milli, (long long)min_unalloc);
        early += !b.optimal;
    }
    return early;
}

static void test_brute_force(void **state)
{
    (void)state;
    uint64_t rng = 7;
    size_t strict = 0, early = 0;
    for (int trial = 0; trial < 300; trial++) {
        struct tiny in;
        tiny_random(&rng, false, &in);
        int64_t loads[4] = {0};
        best = 0;
        brute(in.items, NULL, in.n, 0, loads, (size_t)in.devices, 0, in.total);
        const int64_t min_unalloc = in.devices * 1000 - best;
        struct fair_sim_frag_bound b;
        int64_t lb = bound_of(in.sizes, in.counts, in.k, in.whole, in.devices, &b);
        if (lb < 0 || lb > min_unalloc)
            fail_msg("trial %d: bound %lld but a placement leaves %lld unallocated", trial,
                     (long long)lb, (long long)min_unalloc);
        assert_int_equal(b.arrived_milli, in.total);
        strict += lb < min_unalloc;
        early += check_early_stops(&in, false, min_unalloc, trial);
    }
    /* The LP is a relaxation: on some instances it is strictly below. */
    assert_true(strict > 0);
    assert_true(early > 0);
}

/* The same with some pods held to be placed: the bound never exceeds what
 * the best placement that places them leaves, also when the simplex stops
 * early, and it is never below the bound without them. */
static void test_brute_force_must(void **state)
{
    (void)state;
    uint64_t rng = 11;
    size_t trials = 0, raised = 0;
    for (int trial = 0; trial < 400; trial++) {
        struct tiny in;
        tiny_random(&rng, true, &in);
        int64_t loads[4] = {0};
        best = -1;
        brute(in.items, in.held, in.n, 0, loads, (size_t)in.devices, 0, in.total);
        if (best < 0)
            continue; /* no placement places them all: nothing to check */
        trials++;
        const int64_t min_unalloc = in.devices * 1000 - best;
        struct fair_sim_frag_bound b, free_b;
        int64_t lb =
            bound_must(in.sizes, in.counts, in.must, in.k, in.whole, in.must_whole, in.devices, &b);
        int64_t lb0 = bound_of(in.sizes, in.counts, in.k, in.whole, in.devices, &free_b);
        if (lb > min_unalloc || lb < lb0 - 1)
            fail_msg("trial %d: bound %lld (without must rows %lld) but a placement leaves %lld",
                     trial, (long long)lb, (long long)lb0, (long long)min_unalloc);
        raised += lb > lb0;
        (void)check_early_stops(&in, true, min_unalloc, trial);
    }
    assert_true(trials > 100);
    assert_true(raised > 0); /* the must rows do bind on some instances */
}

/* ---- the experiment's arrivals ------------------------------------------ */

static const char *nodes = "sn,cpu_milli,memory_mib,gpu,model\n"
                           "n0,8000,1000,2,A\n"
                           "n1,16000,1000,4,B\n"
                           "n2,8000,1000,1,A\n"
                           "n3,64000,1000,0,\n";
static const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                          "a,1000,10,1,600\n"
                          "b,2000,10,1,300\n"
                          "c,1000,10,1,450\n"
                          "d,4000,10,2,1000\n"
                          "e,1000,10,0,0\n"
                          "f,1000,10,1,1000\n"
                          "g,500,10,1,810\n";

static void test_same_arrivals(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    struct fair_error err = {0};
    load(&t, nodes, pods);
    for (uint64_t seed = 1; seed <= 8; seed++) {
        for (int stop = 60; stop <= 140; stop += 40) {
            struct fair_sim_frag_opts o = {.seed = seed, .stop_percent = stop};
            struct fair_sim_frag_bound b;
            assert_int_equal(fair_sim_frag_bound(&t, &o, &b, &err), 0);
            assert_int_equal(b.capacity_milli, 7000);
            assert_true(b.bound_milli >= 0 && b.bound_milli <= b.capacity_milli);
            for (int pol = FAIR_SIM_POLICY_FIRST_FIT; pol < FAIR_SIM_POLICY_COUNT; pol++) {
                struct fair_sim_placer p;
                struct fair_sim_frag_result r;
                assert_int_equal(
                    fair_sim_placer_init(&p, (enum fair_sim_policy)pol, seed, &t, &err), 0);
                assert_int_equal(fair_sim_frag_run(&t, fair_sim_place_baseline, &p, &o, &r, &err),
                                 0);
                fair_sim_placer_release(&p);
                assert_int_equal(b.arrived_milli, r.arrived_milli);
                if (b.bound_milli > r.unallocated_milli)
                    fail_msg("seed %llu stop %d %s: bound %lld > unallocated %lld",
                             (unsigned long long)seed, stop,
                             fair_sim_policy_name((enum fair_sim_policy)pol),
                             (long long)b.bound_milli, (long long)r.unallocated_milli);
            }
        }
    }
    /* The draw's own errors come through. */
    struct fair_sim_frag_opts tiny = {.seed = 1, .max_pods = 2};
    struct fair_sim_frag_bound b;
    assert_int_equal(fair_sim_frag_bound(&t, &tiny, &b, &err), FAIR_ERANGE);
    assert_string_equal(err.msg, "fragmentation: more than 2 arrivals");
    fair_sim_trace_release(&t);
    load(&t, nodes, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0,0\n");
    assert_int_equal(fair_sim_frag_bound(&t, NULL, &b, &err), FAIR_EINVAL);
    assert_string_equal(err.msg, "fragmentation: no job in the trace asks for a GPU");
    fair_sim_trace_release(&t);

    /* A request that is neither a fraction nor whole GPUs (only possible
     * for a hand-built trace) is refused, not miscounted. */
    load(&t, nodes, pods);
    t.jobs[0].gpu_milli = 1500;
    for (size_t i = 1; i < t.njobs; i++)
        t.jobs[i].gpu_milli = 0;
    assert_int_equal(fair_sim_frag_bound(&t, NULL, &b, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "asks for 1500 milli-GPU"));
    fair_sim_trace_release(&t);
}

/* ---- allocation failure ------------------------------------------------- */

static int op_hist(void *ctx)
{
    (void)ctx;
    const int64_t sizes[] = {500, 300, 120}, counts[] = {3, 3, 4};
    struct fair_sim_frag_hist h = {
        .sizes = sizes, .counts = counts, .nsizes = 3, .whole_gpus = 1, .devices = 3};
    struct fair_sim_frag_bound b;
    return fair_sim_frag_bound_hist(&h, &b, NULL);
}

static int op_trace(void *ctx)
{
    struct fair_sim_frag_bound b;
    struct fair_sim_frag_opts o = {.seed = 3};
    return fair_sim_frag_bound(ctx, &o, &b, NULL);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    /* lp, the pattern arrays (grown several times), b/y/bi, the simplex's
     * arrays: well over ten sites. */
    assert_true(fair_test_alloc_sweep(op_hist, NULL, 10000) >= 10);
    struct fair_sim_trace t;
    load(&t, nodes, pods);
    assert_true(fair_test_alloc_sweep(op_trace, &t, 10000) >= 10);
    fair_sim_trace_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_computed), cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_brute_force),   cmocka_unit_test(test_same_arrivals),
        cmocka_unit_test(test_must),          cmocka_unit_test(test_brute_force_must),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
