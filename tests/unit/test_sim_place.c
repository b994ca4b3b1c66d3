/* The simulator's cluster state and baseline placement policies: exact
 * placements on tiny clusters, FGD's fragmentation measure, and the
 * workload-inflation experiment on a case with a known answer. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/frag.h"
#include "sim/place.h"
#include "sim/trace.h"
#include "test_sim_fixture.h"

static const char *three_nodes = "sn,cpu_milli,memory_mib,gpu,model\n"
                                 "n0,8000,1000,2,A\n"
                                 "n1,8000,1000,4,B\n"
                                 "n2,8000,1000,1,A\n";

static struct fair_sim_job job(int64_t gpu, int64_t cpu)
{
    struct fair_sim_job j = {.name = "j", .gpu_milli = gpu, .cpu_milli = cpu, .spec = -1};
    return j;
}

struct step {
    int64_t gpu;
    int32_t node;
    uint64_t devices;
};

static void run_steps(enum fair_sim_policy policy, const struct step *steps, size_t n)
{
    struct fair_sim_trace t;
    struct fair_sim_cluster c;
    struct fair_sim_placer p;
    struct fair_error err = {0};
    load(&t, three_nodes, NULL);
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    assert_int_equal(fair_sim_placer_init(&p, policy, 1, &t, &err), 0);
    for (size_t i = 0; i < n; i++) {
        struct fair_sim_job j = job(steps[i].gpu, 1000);
        int32_t node = -1;
        uint64_t dev = 0;
        int rc = fair_sim_place(&p, &c, &j, &node, &dev);
        if (steps[i].node < 0) {
            assert_int_equal(rc, FAIR_ENOTFOUND);
            continue;
        }
        assert_int_equal(rc, 0);
        if (node != steps[i].node || dev != steps[i].devices)
            fail_msg("%s step %zu: got node %d devices %#llx, expected node %d devices %#llx",
                     fair_sim_policy_name(policy), i, node, (unsigned long long)dev, steps[i].node,
                     (unsigned long long)steps[i].devices);
        assert_int_equal(fair_sim_cluster_bind(&c, (size_t)node, dev, &j), 0);
    }
    fair_sim_placer_release(&p);
    fair_sim_cluster_release(&c);
    fair_sim_trace_release(&t);
}

static void test_first_fit(void **state)
{
    (void)state;
    const struct step steps[] = {
        {500, 0, 0x1},  /* n0 device 0 */
        {2000, 1, 0x3}, /* n0 has one whole device left: n1 */
        {700, 0, 0x2},  /* device 0 has 500 left: device 1 */
        {1000, 1, 0x4}, /* no whole device on n0 */
        {300, 0, 0x1},  /* back to n0's first device with room */
        {4000, -1, 0},  /* nothing has four whole devices now */
        {1000, 1, 0x8}, {1000, 2, 0x1}, {1000, -1, 0},
    };
    run_steps(FAIR_SIM_POLICY_FIRST_FIT, steps, sizeof(steps) / sizeof(steps[0]));
}

static void test_best_fit(void **state)
{
    (void)state;
    const struct step steps[] = {
        {1000, 2, 0x1}, /* n2 is left with 0 GPU */
        {500, 0, 0x1},  /* n0: 1500 left, n1 would keep 3500 */
        {400, 0, 0x1},  /* tightest device of n0: device 0 (500 free) */
        {200, 0, 0x2},  /* device 0 has 100 left: device 1 */
        {150, 0, 0x2},  /* n0 keeps 750 (n1 would keep 3850); device 1 */
    };
    run_steps(FAIR_SIM_POLICY_GPU_BEST_FIT, steps, sizeof(steps) / sizeof(steps[0]));
}

static void test_constraints_and_bind(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    struct fair_sim_cluster c;
    struct fair_sim_placer p;
    struct fair_error err = {0};
    load(&t, three_nodes, NULL);
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    assert_int_equal(fair_sim_placer_init(&p, FAIR_SIM_POLICY_FIRST_FIT, 1, &t, &err), 0);
    assert_int_equal(c.gpu_capacity, 7000);
    int32_t node;
    uint64_t dev;
    /* Model B only: n1. */
    struct fair_sim_job j = job(500, 100);
    j.model_mask = (uint64_t)1 << 1;
    assert_int_equal(fair_sim_place(&p, &c, &j, &node, &dev), 0);
    assert_int_equal(node, 1);
    /* Too much CPU, too much memory. */
    j = job(0, 9000);
    assert_int_equal(fair_sim_place(&p, &c, &j, &node, &dev), FAIR_ENOTFOUND);
    j = job(0, 100);
    j.memory_bytes = (int64_t)1001 << 20;
    assert_int_equal(fair_sim_place(&p, &c, &j, &node, &dev), FAIR_ENOTFOUND);
    /* A CPU-only pod ignores a model constraint and needs no device. */
    j = job(0, 100);
    j.model_mask = (uint64_t)1 << 1;
    assert_int_equal(fair_sim_place(&p, &c, &j, &node, &dev), 0);
    assert_int_equal(node, 0);
    assert_int_equal(dev, 0);
    /* Binds that do not fit are refused and change nothing. */
    j = job(2000, 100);
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x1, &j), FAIR_EINVAL); /* one device */
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x7, &j), FAIR_EINVAL); /* no device 2 */
    assert_int_equal(fair_sim_cluster_bind(&c, 9, 0x3, &j), FAIR_EINVAL);
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x3, &j), 0);
    assert_int_equal(c.gpu_allocated, 2000);
    assert_int_equal(c.n[0].cpu_free, 7900);
    struct fair_sim_job half = job(500, 0);
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x1, &half), FAIR_EINVAL); /* device full */
    fair_sim_cluster_unbind(&c, 0, 0x3, &j);
    assert_int_equal(c.gpu_allocated, 0);
    assert_int_equal(c.n[0].gpu_free[0], 1000);
    assert_int_equal(c.n[0].gpu_free_total, 2000);
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x1, &half), 0);
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x1, &half), 0);
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x1, &half), FAIR_EINVAL);
    assert_int_equal(fair_sim_cluster_unallocated(&c), 6000);
    fair_sim_placer_release(&p);
    fair_sim_cluster_release(&c);
    fair_sim_trace_release(&t);

    enum fair_sim_policy pol;
    assert_int_equal(fair_sim_policy_parse("gpu-best-fit", &pol), 0);
    assert_int_equal(pol, FAIR_SIM_POLICY_GPU_BEST_FIT);
    assert_int_equal(fair_sim_policy_parse("fairshare", &pol), 0);
    assert_int_equal(pol, FAIR_SIM_POLICY_ENGINE);
    assert_int_equal(fair_sim_policy_parse("worst-fit", &pol), FAIR_EINVAL);
    assert_string_equal(fair_sim_policy_name(FAIR_SIM_POLICY_FGD), "fgd");
}

static void test_random_fit(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    struct fair_sim_cluster c;
    struct fair_sim_placer p, q;
    struct fair_error err = {0};
    load(&t, three_nodes, NULL);
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    assert_int_equal(fair_sim_placer_init(&p, FAIR_SIM_POLICY_RANDOM_FIT, 7, &t, &err), 0);
    assert_int_equal(fair_sim_placer_init(&q, FAIR_SIM_POLICY_RANDOM_FIT, 7, &t, &err), 0);
    int hits[3] = {0};
    for (int i = 0; i < 300; i++) {
        struct fair_sim_job j = job(0, 10);
        int32_t a, b;
        uint64_t da, db;
        assert_int_equal(fair_sim_place(&p, &c, &j, &a, &da), 0);
        assert_int_equal(fair_sim_place(&q, &c, &j, &b, &db), 0);
        assert_int_equal(a, b); /* same seed, same choices */
        hits[a]++;
    }
    /* Each of the three nodes is chosen (300 draws, p = 1/3 each). */
    assert_true(hits[0] > 50 && hits[1] > 50 && hits[2] > 50);
    /* Only fitting nodes: four whole GPUs exist on n1 alone. */
    for (int i = 0; i < 20; i++) {
        struct fair_sim_job j = job(4000, 10);
        int32_t a;
        uint64_t da;
        assert_int_equal(fair_sim_place(&p, &c, &j, &a, &da), 0);
        assert_int_equal(a, 1);
        assert_int_equal(da, 0xf);
    }
    fair_sim_placer_release(&p);
    fair_sim_placer_release(&q);
    fair_sim_cluster_release(&c);
    fair_sim_trace_release(&t);
}

static void test_fgd(void **state)
{
    (void)state;
    /* Target workload: one 0.5-GPU type and one 1-GPU type, once each. */
    struct fair_sim_trace t;
    struct fair_sim_cluster c;
    struct fair_sim_placer p;
    struct fair_error err = {0};
    load(&t, three_nodes,
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
         "p0,1000,1,1,500\n"
         "p1,1000,1,1,1000\n");
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    assert_int_equal(fair_sim_placer_init(&p, FAIR_SIM_POLICY_FGD, 1, &t, &err), 0);
    assert_int_equal(p.ntypes, 2);
    assert_int_equal(fair_sim_node_frag(&p, &c, 0), 0);
    struct fair_sim_job j300 = job(300, 0), j400 = job(400, 0), j500 = job(500, 0);
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x1, &j300), 0);
    /* Device 0 keeps 700: too small for the 1-GPU type only. */
    assert_int_equal(fair_sim_node_frag(&p, &c, 0), 700);
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x1, &j400), 0);
    /* 300 left: too small for both types. */
    assert_int_equal(fair_sim_node_frag(&p, &c, 0), 600);
    /* A node too small in CPU for every type: all its free GPU counts. */
    struct fair_sim_job cpu = job(0, 7500);
    assert_int_equal(fair_sim_cluster_bind(&c, 2, 0, &cpu), 0);
    assert_int_equal(fair_sim_node_frag(&p, &c, 2), 2000);
    fair_sim_cluster_reset(&c);

    /* n0 with device 1 half used: first fit takes device 0 (leaving two
     * half devices); FGD fills device 1 and keeps device 0 whole. */
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x2, &j500), 0);
    int32_t node;
    uint64_t dev;
    assert_int_equal(fair_sim_place(&p, &c, &j500, &node, &dev), 0);
    assert_int_equal(node, 0);
    assert_int_equal(dev, 0x2);
    struct fair_sim_placer ff;
    assert_int_equal(fair_sim_placer_init(&ff, FAIR_SIM_POLICY_FIRST_FIT, 1, &t, &err), 0);
    assert_int_equal(fair_sim_place(&ff, &c, &j500, &node, &dev), 0);
    assert_int_equal(node, 0);
    assert_int_equal(dev, 0x1);
    fair_sim_placer_release(&ff);
    /* FGD online knows only what it was asked to place: after one 0.5-GPU
     * pod, nothing tells it to keep a device whole (device 0, like first
     * fit); once a 1-GPU pod was seen, it keeps device 0 whole. */
    struct fair_sim_placer on;
    struct fair_sim_job o500 = job(500, 1000), o1000 = job(1000, 1000); /* the trace's shapes */
    assert_int_equal(fair_sim_placer_init(&on, FAIR_SIM_POLICY_FGD_ONLINE, 1, &t, &err), 0);
    assert_int_equal(fair_sim_place(&on, &c, &o500, &node, &dev), 0);
    assert_int_equal(node, 0);
    assert_int_equal(dev, 0x1);
    assert_int_equal(fair_sim_place(&on, &c, &o1000, &node, &dev), 0);
    assert_int_equal(node, 0);
    assert_int_equal(dev, 0x1);
    assert_int_equal(fair_sim_place(&on, &c, &o500, &node, &dev), 0);
    assert_int_equal(node, 0);
    assert_int_equal(dev, 0x2);
    assert_int_equal(on.observed, 3);
    assert_int_equal(on.types[0].count, 1); /* weights as of the 2nd pod */
    assert_int_equal(on.types[1].count, 1);
    fair_sim_placer_release(&on);
    fair_sim_placer_release(&p);
    fair_sim_cluster_release(&c);
    fair_sim_trace_release(&t);
}

/* The FGD paper's BestFit and GpuPacking, scored by hand from its
 * simulator's formulas, and the bind's GPU-model check. */
static void test_paper_baselines(void **state)
{
    (void)state;
    static const char nodes[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                                "a,64000,100000,8,G2\n"
                                "b,16000,100000,2,G2\n"
                                "c,128000,100000,4,T4\n";
    struct fair_sim_trace t;
    struct fair_sim_cluster c;
    struct fair_sim_placer p;
    struct fair_error err = {0};
    int32_t node;
    uint64_t dev;
    load(&t, nodes, NULL);
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    /* BestFit, 1 GPU and 4 CPUs: (1 - (cpu left / 128 + gpu left / 8) / 2)
     * x 100 truncated: a 32 (32.8), b 89 (89.06), c 32. */
    assert_int_equal(fair_sim_placer_init(&p, FAIR_SIM_POLICY_PAPER_BESTFIT, 1, &t, &err), 0);
    struct fair_sim_job j = job(1000, 4000);
    assert_int_equal(fair_sim_place(&p, &c, &j, &node, &dev), 0);
    assert_int_equal(node, 1);
    assert_int_equal(dev, 0x1);
    /* With b full of CPU, a and c tie at 32: the lowest tie rank wins. */
    struct fair_sim_job cpu = job(0, 16000);
    assert_int_equal(fair_sim_cluster_bind(&c, 1, 0, &cpu), 0);
    int32_t rank[3] = {5, 9, 2};
    p.tie_rank = rank;
    assert_int_equal(fair_sim_place(&p, &c, &j, &node, &dev), 0);
    assert_int_equal(node, 2);
    rank[0] = 1;
    assert_int_equal(fair_sim_place(&p, &c, &j, &node, &dev), 0);
    assert_int_equal(node, 0);
    fair_sim_placer_release(&p);
    fair_sim_cluster_reset(&c);

    /* GpuPacking: empty nodes score max(33 - free GPUs, free GPUs): a 25,
     * b 31, c 29. */
    assert_int_equal(fair_sim_placer_init(&p, FAIR_SIM_POLICY_PAPER_GPUPACKING, 1, &t, &err), 0);
    assert_int_equal(fair_sim_place(&p, &c, &j, &node, &dev), 0);
    assert_int_equal(node, 1);
    assert_int_equal(fair_sim_cluster_bind(&c, (size_t)node, dev, &j), 0);
    /* Half a GPU: on b it needs a free device of a used node, 49. */
    struct fair_sim_job half = job(500, 1000);
    assert_int_equal(fair_sim_place(&p, &c, &half, &node, &dev), 0);
    assert_int_equal(node, 1);
    assert_int_equal(dev, 0x2);
    assert_int_equal(fair_sim_cluster_bind(&c, (size_t)node, dev, &half), 0);
    /* 0.3 GPU: b's shared device (50% free): 100 - 50 / 10 = 95. */
    struct fair_sim_job third = job(300, 1000);
    assert_int_equal(fair_sim_place(&p, &c, &third, &node, &dev), 0);
    assert_int_equal(node, 1);
    assert_int_equal(dev, 0x2);
    /* 2 whole GPUs: b has none left; a 25 against c 29. */
    struct fair_sim_job two = job(2000, 1000);
    assert_int_equal(fair_sim_place(&p, &c, &two, &node, &dev), 0);
    assert_int_equal(node, 2);
    assert_int_equal(dev, 0x3);
    fair_sim_placer_release(&p);

    /* A bind on a node of another GPU model is refused. */
    fair_sim_cluster_reset(&c);
    struct fair_sim_job t4 = job(500, 1000);
    t4.model_mask = (uint64_t)1 << 1; /* T4, the trace's second model */
    assert_int_equal(fair_sim_cluster_bind(&c, 0, 0x1, &t4), FAIR_EINVAL);
    assert_int_equal(c.gpu_allocated, 0);
    assert_int_equal(fair_sim_cluster_bind(&c, 2, 0x1, &t4), 0);
    assert_string_equal(fair_sim_policy_name(FAIR_SIM_POLICY_PAPER_BESTFIT), "BestFit");
    assert_string_equal(fair_sim_policy_name(FAIR_SIM_POLICY_PAPER_GPUPACKING), "GpuPacking");
    fair_sim_cluster_release(&c);
    fair_sim_trace_release(&t);
}

/* The paper's FGD: its typical pods (95% of the pods, renormalised) and
 * its sigmoid score, worked by hand. */
static void test_paper_fgd(void **state)
{
    (void)state;
    /* 10 pods of 4 CPUs and 0.5 GPU, 9 of 2 CPUs and 1 GPU, 1 CPU-only:
     * the first two types cover 19 of 20 pods (95%): 10/19 and 9/19. */
    char jobs[2048] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
    size_t len = strlen(jobs);
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(jobs + len, sizeof(jobs) - len, "p%02d,%s\n", i,
                                i < 10   ? "4000,1,1,500"
                                : i < 19 ? "2000,1,1,1000"
                                         : "1000,1,0,0");
    struct fair_sim_trace t;
    struct fair_sim_cluster c;
    struct fair_sim_placer p;
    struct fair_error err = {0};
    load(&t, "sn,cpu_milli,memory_mib,gpu,model\na,16000,1000,2,G2\nb,16000,1000,2,G2\n", jobs);
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    assert_int_equal(fair_sim_placer_init(&p, FAIR_SIM_POLICY_PAPER_FGD, 1, &t, &err), 0);
    assert_int_equal(p.nptypes, 2);
    assert_int_equal(p.ptypes[0].count, 10);
    assert_true(fabs(p.ptypes[0].freq - 10.0 / 19) < 1e-12);
    assert_true(fabs(p.ptypes[1].freq - 9.0 / 19) < 1e-12);
    /* b holds 0.4 on device 0: [600, 1000]. A 0.3 pod: on a (either
     * device: [700, 1000]) fragmentation goes 0 -> 9/19 x 700, score
     * sigmoid(-0.332) = 41; on b device 0 ([300, 1000]) 9/19 x 600 ->
     * 10/19 x 300 + 9/19 x 300, score sigmoid(-0.016) = 49; on b device 1
     * ([600, 700]) 9/19 x 1300, 41. So b, device 0. */
    struct fair_sim_job four = job(400, 1000), three = job(300, 1000);
    assert_int_equal(fair_sim_cluster_bind(&c, 1, 0x1, &four), 0);
    int32_t node;
    uint64_t dev;
    assert_int_equal(fair_sim_place(&p, &c, &three, &node, &dev), 0);
    assert_int_equal(node, 1);
    assert_int_equal(dev, 0x1);
    assert_string_equal(fair_sim_policy_name(FAIR_SIM_POLICY_PAPER_FGD), "FGD");
    fair_sim_placer_release(&p);
    fair_sim_cluster_release(&c);
    fair_sim_trace_release(&t);
}

static void test_inflation_known_answer(void **state)
{
    (void)state;
    /* One node with two GPUs; every pod asks for 0.6 GPU. Two pods fit
     * (one per device); the third and fourth arrivals fail; at 2400 milli
     * arrived (>= 100%), 2 x 400 milli is left unallocated. */
    struct fair_sim_trace t;
    struct fair_sim_placer p;
    struct fair_error err = {0};
    load(&t, "sn,cpu_milli,memory_mib,gpu\nn,64000,1000,2\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,600\n");
    for (int pol = FAIR_SIM_POLICY_FIRST_FIT; pol < FAIR_SIM_POLICY_COUNT; pol++) {
        assert_int_equal(fair_sim_placer_init(&p, (enum fair_sim_policy)pol, 3, &t, &err), 0);
        struct fair_sim_frag_opts o = {.seed = 42};
        struct fair_sim_frag_result r;
        assert_int_equal(fair_sim_frag_run(&t, fair_sim_place_baseline, &p, &o, &r, &err), 0);
        assert_int_equal(r.capacity_milli, 2000);
        assert_int_equal(r.arrived_milli, 2400);
        assert_int_equal(r.pods_arrived, 4);
        assert_int_equal(r.pods_placed, 2);
        assert_int_equal(r.pods_failed, 2);
        assert_int_equal(r.gpu_failed_milli, 1200);
        assert_int_equal(r.allocated_milli, 1200);
        assert_int_equal(r.unallocated_milli, 800);
        assert_int_equal(r.first_fail_unallocated_milli, 800);
        assert_int_equal(r.first_fail_arrived_milli, 1200);
        const int64_t curve[FAIR_SIM_FRAG_CURVE] = {2000, 1400, 1400, 1400, 1400, 1400, 1400,
                                                    800,  800,  800,  800,  800,  800,  800,
                                                    800,  800,  800,  800,  800,  800,  800};
        for (int i = 0; i < FAIR_SIM_FRAG_CURVE; i++)
            assert_int_equal(r.curve_unallocated[i], curve[i]);
        fair_sim_placer_release(&p);
    }
    /* Stop ratio: 50% = 1000 milli; two arrivals reach it, both fit. */
    assert_int_equal(fair_sim_placer_init(&p, FAIR_SIM_POLICY_GPU_BEST_FIT, 3, &t, &err), 0);
    struct fair_sim_frag_opts half = {.seed = 1, .stop_percent = 50};
    struct fair_sim_frag_result r;
    assert_int_equal(fair_sim_frag_run(&t, fair_sim_place_baseline, &p, &half, &r, &err), 0);
    assert_int_equal(r.pods_arrived, 2);
    assert_int_equal(r.pods_failed, 0);
    assert_int_equal(r.first_fail_unallocated_milli, -1);
    assert_int_equal(r.unallocated_milli, 800);
    fair_sim_placer_release(&p);
    fair_sim_trace_release(&t);

    /* No GPU job at all: refused with a message. */
    load(&t, "sn,cpu_milli,memory_mib,gpu\nn,64000,1000,2\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0,0\n");
    assert_int_equal(fair_sim_placer_init(&p, FAIR_SIM_POLICY_GPU_BEST_FIT, 3, &t, &err), 0);
    assert_int_equal(fair_sim_frag_run(&t, fair_sim_place_baseline, &p, NULL, &r, &err),
                     FAIR_EINVAL);
    assert_string_equal(err.msg, "fragmentation: no job in the trace asks for a GPU");
    fair_sim_placer_release(&p);
    fair_sim_trace_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_fit),
        cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_constraints_and_bind),
        cmocka_unit_test(test_random_fit),
        cmocka_unit_test(test_fgd),
        cmocka_unit_test(test_paper_baselines),
        cmocka_unit_test(test_paper_fgd),
        cmocka_unit_test(test_inflation_known_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
