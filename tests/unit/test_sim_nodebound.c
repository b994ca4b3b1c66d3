/* The node-structured fragmentation bound and the offline packing
 * (sim/nodebound.h): CPU and node boundaries that the LP forgets, the bound
 * never above what an explicit packing leaves (random instances), the
 * packing's bookkeeping, bad input and allocation failure at every site. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "sim/nodebound.h"
#include "sim/place.h"
#include "sim/trace.h"
#include "test_alloc_sweep.h"
#include "test_sim_fixture.h"

#define POD_HEADER "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
#define NODE_HEADER "sn,cpu_milli,memory_mib,gpu,model\n"

/* Every job of t, in file order, as the arrivals. */
static void all_jobs(const struct fair_sim_trace *t, struct fair_sim_arrivals *a)
{
    a->jobs = calloc(t->njobs + 1, sizeof(*a->jobs));
    assert_non_null(a->jobs);
    for (size_t i = 0; i < t->njobs; i++)
        a->jobs[i] = &t->jobs[i];
    a->n = t->njobs;
    a->node_rank = NULL;
}

/* The exact optimum by brute force: every pod failed or on every node and
 * device set that takes it (tiny instances only). */
static int64_t best_of(struct fair_sim_cluster *c, const struct fair_sim_arrivals *a, size_t i)
{
    if (i == a->n)
        return c->gpu_allocated;
    int64_t best = best_of(c, a, i + 1);
    const struct fair_sim_job *job = a->jobs[i];
    int want = job->gpu_milli == 0 ? 0 : job->gpu_milli < 1000 ? 1 : (int)(job->gpu_milli / 1000);
    for (size_t n = 0; n < c->nnodes; n++) {
        int ng = c->trace->nodes[n].gpu_count;
        for (uint64_t m = 0; m < (1ull << ng); m++) {
            if (__builtin_popcountll(m) != want)
                continue;
            if (fair_sim_cluster_bind(c, n, m, job))
                continue;
            int64_t v = best_of(c, a, i + 1);
            if (v > best)
                best = v;
            fair_sim_cluster_unbind(c, n, m, job);
        }
    }
    return best;
}

static int64_t brute_force(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a)
{
    struct fair_sim_cluster c;
    struct fair_error err = {0};
    if (fair_sim_cluster_init(&c, t, &err))
        fail_msg("%s", err.msg);
    int64_t v = best_of(&c, a, 0);
    fair_sim_cluster_release(&c);
    return v;
}

static int64_t last_opt = -1; /* the brute-force optimum of the last bounds() call, or -1 */

static void bounds(const char *nodes, const char *pods, struct fair_sim_node_bound *b,
                   int64_t *packed)
{
    struct fair_sim_trace t;
    load(&t, nodes, pods);
    struct fair_sim_arrivals a;
    all_jobs(&t, &a);
    struct fair_error err = {0};
    int rc = fair_sim_node_bound(&t, &a, a.n, NULL, b, &err);
    if (rc)
        fail_msg("node bound: %d %s", rc, err.msg);
    bool *placed = calloc(a.n + 1, sizeof(*placed));
    assert_non_null(placed);
    struct fair_sim_spot *spot = calloc(a.n + 1, sizeof(*spot));
    assert_non_null(spot);
    rc = fair_sim_node_pack(&t, &a, a.n, a.n, placed, spot, packed, &err);
    if (rc)
        fail_msg("node pack: %d %s", rc, err.msg);
    /* The clairvoyant policy is legal: each placed arrival, in order, binds
     * at its spot on a fresh cluster. */
    struct fair_sim_cluster c;
    if (fair_sim_cluster_init(&c, &t, &err))
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < a.n; i++)
        if (placed[i])
            assert_int_equal(
                fair_sim_cluster_bind(&c, (size_t)spot[i].node, spot[i].devices, a.jobs[i]), 0);
    assert_int_equal(c.gpu_allocated, *packed);
    fair_sim_cluster_release(&c);
    free(spot);
    int64_t sum = 0;
    for (size_t i = 0; i < a.n; i++)
        if (placed[i])
            sum += a.jobs[i]->gpu_milli;
    assert_int_equal(sum, *packed); /* placed[] is what was allocated */
    last_opt = a.n <= 6 ? brute_force(&t, &a) : -1;
    free(placed);
    free(a.jobs);
    fair_sim_trace_release(&t);
}

static void test_cpu_binds(void **state)
{
    (void)state;
    struct fair_sim_node_bound b;
    int64_t packed;
    /* Two 1-GPU pods of 6 CPUs on one 2-GPU node with 8 CPUs: the LP
     * (no CPU) places both, but only one fits. */
    bounds(NODE_HEADER "n0,8000,1000,2,A\n", POD_HEADER "a,6000,10,1,1000\nb,6000,10,1,1000\n", &b,
           &packed);
    assert_int_equal(b.capacity_milli, 2000);
    assert_int_equal(b.arrived_milli, 2000);
    assert_int_equal(b.lp_bound_milli, 0);
    assert_int_equal(b.bound_milli, 1000);
    assert_int_equal(packed, 1000);
    /* Two 0.6 fractions, each with 5 CPUs, on a node with 8: the same. */
    bounds(NODE_HEADER "n0,8000,1000,2,A\n", POD_HEADER "a,5000,10,1,600\nb,5000,10,1,600\n", &b,
           &packed);
    assert_int_equal(b.lp_bound_milli, 2000 - 1200);
    assert_int_equal(b.bound_milli, 2000 - 600);
    assert_int_equal(packed, 600);
}

static void test_node_boundaries(void **state)
{
    (void)state;
    struct fair_sim_node_bound b;
    int64_t packed;
    /* A 4-GPU pod on two 2-GPU nodes: the LP counts four free devices. */
    bounds(NODE_HEADER "n0,8000,1000,2,A\nn1,8000,1000,2,A\n", POD_HEADER "a,1000,10,4,1000\n", &b,
           &packed);
    assert_int_equal(b.lp_bound_milli, 0);
    assert_int_equal(b.bound_milli, 4000);
    assert_int_equal(packed, 0);
    /* Two 2-GPU pods and one of 1 GPU on nodes of 3 and 2 devices: the
     * two pairs cannot both go with the single; 4 of 5 GPUs at most. The
     * LP sees 5 GPUs for 5 devices. */
    bounds(NODE_HEADER "n0,8000,1000,3,A\nn1,8000,1000,2,A\n",
           POD_HEADER "a,1000,10,2,1000\nb,1000,10,2,1000\nc,1000,10,1,1000\n", &b, &packed);
    assert_int_equal(b.lp_bound_milli, 0);
    assert_int_equal(packed, 5000); /* 2 + 1 on n0, 2 on n1: it does fit */
    assert_int_equal(b.bound_milli, 0);
    /* Fractions only: nothing the LP did not already see. */
    bounds(NODE_HEADER "n0,64000,1000,2,A\n",
           POD_HEADER "a,1000,10,1,810\nb,1000,10,1,810\nc,1000,10,1,810\n", &b, &packed);
    assert_int_equal(b.lp_bound_milli, 2000 - 1620);
    assert_int_equal(b.bound_milli, 2000 - 1620);
    assert_int_equal(packed, 1620);
}

/* Random small clusters and pods: the proven bound never exceeds what the
 * exact optimum (brute force) leaves, nor what the packing leaves, and
 * never falls below the LP's; it is above the LP somewhere. */
static void test_random_consistent(void **state)
{
    (void)state;
    unsigned seed = 12345;
    int stronger = 0, exact = 0;
    const int64_t gpus[] = {150, 250, 300, 470, 500, 810, 1000, 2000, 4000};
    for (int round = 0; round < 120; round++) {
        char nodes[2048], pods[8192];
        size_t off = (size_t)snprintf(nodes, sizeof(nodes), NODE_HEADER);
        int nn = 1 + (int)(rand_r(&seed) % 4);
        for (int i = 0; i < nn; i++)
            off += (size_t)snprintf(nodes + off, sizeof(nodes) - off, "n%d,%d,100000,%d,A\n", i,
                                    4000 + 2000 * (int)(rand_r(&seed) % 8),
                                    1 + (int)(rand_r(&seed) % 4));
        off = (size_t)snprintf(pods, sizeof(pods), POD_HEADER);
        int np = 1 + (int)(rand_r(&seed) % 6);
        for (int i = 0; i < np; i++) {
            int64_t g = gpus[rand_r(&seed) % (sizeof(gpus) / sizeof(gpus[0]))];
            off += (size_t)snprintf(pods + off, sizeof(pods) - off, "p%d,%d,10,%lld,%lld\n", i,
                                    1000 * (1 + (int)(rand_r(&seed) % 6)),
                                    (long long)(g < 1000 ? 1 : g / 1000),
                                    (long long)(g < 1000 ? g : 1000));
        }
        struct fair_sim_node_bound b;
        int64_t packed;
        bounds(nodes, pods, &b, &packed);
        assert_true(last_opt >= packed);
        if (b.bound_milli > b.capacity_milli - last_opt || b.bound_milli < b.lp_bound_milli)
            fail_msg("round %d: bound %lld, LP %lld, the optimum leaves %lld\n%s%s", round,
                     (long long)b.bound_milli, (long long)b.lp_bound_milli,
                     (long long)(b.capacity_milli - last_opt), nodes, pods);
        stronger += b.bound_milli > b.lp_bound_milli;
        exact += b.bound_milli == b.capacity_milli - last_opt;
    }
    print_message("node bound above the LP on %d of 120 instances, exact on %d\n", stronger, exact);
    assert_true(stronger > 0);
    assert_true(exact > 0);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    load(&t, NODE_HEADER "n0,8000,1000,2,A\n", POD_HEADER "a,1000,10,1,500\n");
    struct fair_sim_arrivals a;
    all_jobs(&t, &a);
    struct fair_error err = {0};
    struct fair_sim_node_bound b;
    struct fair_sim_node_bound_opts o = {.cpu_unit_milli = -5};
    assert_int_equal(fair_sim_node_bound(&t, &a, 1, &o, &b, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "CPU unit"));
    o.cpu_unit_milli = 1; /* 8000 units: past the table's limit */
    assert_int_equal(fair_sim_node_bound(&t, &a, 1, &o, &b, &err), FAIR_ERANGE);
    assert_non_null(strstr(err.msg, "n0"));
    /* A prefix past the arrivals is clamped. */
    assert_int_equal(fair_sim_node_bound(&t, &a, 99, NULL, &b, &err), 0);
    assert_int_equal(b.arrived_milli, 500);
    assert_int_equal(b.bound_milli, 1500);
    free(a.jobs);
    fair_sim_trace_release(&t);
}

static struct fair_sim_trace *sweep_t;

static int op_bound(void *ctx)
{
    (void)ctx;
    struct fair_sim_arrivals a = {.jobs = NULL, .n = 0};
    const struct fair_sim_job *jobs[16];
    for (size_t i = 0; i < sweep_t->njobs && i < 16; i++)
        jobs[i] = &sweep_t->jobs[i];
    a.jobs = jobs;
    a.n = sweep_t->njobs < 16 ? sweep_t->njobs : 16;
    struct fair_error err = {0};
    struct fair_sim_node_bound b;
    int rc = fair_sim_node_bound(sweep_t, &a, a.n, NULL, &b, &err);
    if (rc)
        return rc;
    bool placed[16];
    struct fair_sim_spot spot[16];
    int64_t alloc;
    return fair_sim_node_pack(sweep_t, &a, a.n, a.n, placed, spot, &alloc, &err);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    load(&t, NODE_HEADER "n0,8000,1000,2,A\nn1,16000,1000,4,B\n",
         POD_HEADER "a,1000,10,1,600\nb,2000,10,1,300\nc,1000,10,2,1000\nd,1000,10,0,0\n");
    sweep_t = &t;
    assert_true(fair_test_alloc_sweep(op_bound, NULL, 10000) >= 10);
    fair_sim_trace_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_binds),         cmocka_unit_test(test_node_boundaries),
        cmocka_unit_test(test_random_consistent), cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
