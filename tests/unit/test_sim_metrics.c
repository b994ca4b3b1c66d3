/* The simulator's figures, each on a hand-made case whose answer is
 * worked out in the comments: distributions and percentiles, work lost
 * with and without checkpoints, episodes, a queue's pending sizes, and
 * the idle GPU pending pods could use (one- and two-node clusters,
 * fractions, CPU, gangs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "sim/metrics.h"
#include "test_sim_fixture.h"

static void test_dist(void **state)
{
    (void)state;
    /* 1..100 shuffled: nearest rank p50 = 50, p95 = 95, p99 = 99. */
    int64_t v[100];
    for (int i = 0; i < 100; i++)
        v[i] = (int64_t)((i * 37) % 100) + 1;
    struct fair_sim_dist d;
    fair_sim_dist_of(v, 100, &d);
    assert_int_equal(d.n, 100);
    assert_true(d.mean_ms == 50.5);
    assert_int_equal(d.p50_ms, 50);
    assert_int_equal(d.p95_ms, 95);
    assert_int_equal(d.p99_ms, 99);
    assert_int_equal(d.max_ms, 100);
    /* Three values 0, 10, 70: mean 80/3; ranks ceil(1.5) = 2, ceil(2.85)
     * = 3, ceil(2.97) = 3. */
    int64_t w[3] = {70, 0, 10};
    fair_sim_dist_of(w, 3, &d);
    assert_true(d.mean_ms > 26.666 && d.mean_ms < 26.667);
    assert_int_equal(d.p50_ms, 10);
    assert_int_equal(d.p95_ms, 70);
    assert_int_equal(d.p99_ms, 70);
    /* None: every figure says so. */
    fair_sim_dist_of(w, 0, &d);
    assert_int_equal(d.n, 0);
    assert_true(d.mean_ms == -1);
    assert_int_equal(d.p50_ms, -1);
    assert_int_equal(d.p99_ms, -1);
    assert_int_equal(d.max_ms, -1);
    const int64_t one[1] = {7};
    assert_int_equal(fair_sim_percentile(one, 1, 99), 7);
}

static void test_lost_work(void **state)
{
    (void)state;
    int64_t saved = -1;
    /* No checkpoints: everything since the start is lost. */
    assert_int_equal(fair_sim_lost_ms(20000, 0, &saved), 20000);
    assert_int_equal(saved, 0);
    /* Every 15 s: after 20 s, the checkpoint at 15 s keeps 15 s. */
    assert_int_equal(fair_sim_lost_ms(20000, 15000, &saved), 5000);
    assert_int_equal(saved, 15000);
    /* Exactly at a checkpoint: nothing lost. */
    assert_int_equal(fair_sim_lost_ms(30000, 15000, &saved), 0);
    assert_int_equal(saved, 30000);
    /* Before the first checkpoint: all lost. */
    assert_int_equal(fair_sim_lost_ms(14999, 15000, &saved), 14999);
    assert_int_equal(saved, 0);
    assert_int_equal(fair_sim_lost_ms(95 * 60000, 30 * 60000, NULL), 5 * 60000);
    assert_int_equal(fair_sim_lost_ms(-5, 1000, &saved), 0);
}

static void test_spans(void **state)
{
    (void)state;
    struct fair_sim_spans s;
    fair_sim_spans_init(&s, true);
    /* on at 10, still on at 15, off at 30 (20); on and off at 40 (0); on
     * at 50 until the end at 100 (50, unfinished). */
    assert_int_equal(fair_sim_spans_note(&s, 0, false), 0);
    assert_int_equal(fair_sim_spans_note(&s, 10, true), 0);
    assert_int_equal(fair_sim_spans_note(&s, 15, true), 0);
    assert_int_equal(fair_sim_spans_note(&s, 30, false), 0);
    assert_int_equal(fair_sim_spans_note(&s, 40, true), 0);
    assert_int_equal(fair_sim_spans_note(&s, 40, false), 0);
    assert_int_equal(fair_sim_spans_note(&s, 50, true), 0);
    fair_sim_spans_end(&s, 100);
    assert_int_equal(s.count, 2);
    assert_int_equal(s.unfinished, 1);
    assert_int_equal(s.nlen, 2);
    assert_int_equal(s.len[0], 20);
    assert_int_equal(s.len[1], 0);
    assert_int_equal(s.longest_ms, 50);
    assert_int_equal(s.total_ms, 70);
    fair_sim_spans_release(&s);
    /* Out of memory keeping a length: an error, the span still counted. */
    fair_sim_spans_init(&s, true);
    fair_sim_spans_note(&s, 0, true);
    fair_alloc_fail_after(0);
    int rc = fair_sim_spans_note(&s, 5, false);
    fair_alloc_fail_after(-1);
    assert_int_equal(rc, FAIR_ENOMEM);
    assert_int_equal(s.count, 1);
    assert_int_equal(s.longest_ms, 5);
    fair_sim_spans_release(&s);
}

static void test_sizes(void **state)
{
    (void)state;
    struct fair_sim_sizes s;
    fair_sim_sizes_init(&s);
    assert_int_equal(fair_sim_sizes_min(&s), -1);
    assert_int_equal(fair_sim_sizes_add(&s, 4000), 0);
    assert_int_equal(fair_sim_sizes_add(&s, 500), 0);
    assert_int_equal(fair_sim_sizes_add(&s, 8000), 0);
    assert_int_equal(fair_sim_sizes_add(&s, 500), 0);
    assert_int_equal(fair_sim_sizes_min(&s), 500);
    fair_sim_sizes_del(&s, 500);
    assert_int_equal(fair_sim_sizes_min(&s), 500);
    fair_sim_sizes_del(&s, 500);
    assert_int_equal(fair_sim_sizes_min(&s), 4000);
    fair_sim_sizes_del(&s, 1234); /* not there: nothing */
    fair_sim_sizes_del(&s, 4000);
    assert_int_equal(fair_sim_sizes_min(&s), 8000);
    assert_int_equal(s.n, 1);
    fair_sim_sizes_release(&s);
}

/* Binds job j of the trace on node nd, on devices dev. */
static void take(struct fair_sim_cluster *c, size_t nd, uint64_t dev, const struct fair_sim_job *j)
{
    assert_int_equal(fair_sim_cluster_bind(c, nd, dev, j), 0);
}

static int64_t idle_of(struct fair_sim_cluster *c, const int32_t *pods, size_t n,
                       struct fair_sim_fit_scratch *s)
{
    int64_t idle = -1;
    assert_int_equal(fair_sim_idle_fit(c, pods, n, NULL, s, &idle), 0);
    return idle;
}

static void test_idle_fit_one_node(void **state)
{
    (void)state;
    /* One node, 8 GPUs, 32 CPUs. Jobs, by line: big (6 GPUs, running),
     * four (4), one (1), one2 (1), one3 (1), cpu-hog (1 GPU, 40 CPUs),
     * half (0.5), cpu (no GPU), gang (2 x 1 GPU), gang3 (3 x 1 GPU). */
    struct fair_sim_trace t;
    load(&t, "sn,cpu_milli,memory_mib,gpu\nn0,32000,65536,8\n",
         "name,queue,submit_s,duration_s,gpu,cpu,pods\n"
         "big,q,0,10,6,8,\nfour,q,0,10,4,1,\none,q,0,10,1,1,\none2,q,0,10,1,1,\n"
         "one3,q,0,10,1,1,\ncpu-hog,q,0,10,1,40,\nhalf,q,0,10,0.5,1,\ncpu,q,0,10,0,1,\n"
         "gang,q,0,10,1,1,2\ngang3,q,0,10,1,1,3\n");
    struct fair_sim_cluster c;
    struct fair_error err = {0};
    struct fair_sim_fit_scratch s;
    fair_sim_fit_scratch_init(&s);
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    /* Indexes: big 0, four 1, one 2, one2 3, one3 4, cpu-hog 5, half 6,
     * cpu 7, gang 8-9, gang3 10-12. */
    assert_string_equal(t.jobs[8].name, "gang-0");
    assert_string_equal(t.jobs[10].name, "gang3-0");
    take(&c, 0, 0x3f, &t.jobs[0]); /* 2 GPUs free */
    /* Nothing pending: nothing idle "while a pod fits". */
    assert_int_equal(idle_of(&c, NULL, 0, &s), 0);
    /* four does not fit in 2 GPUs: 0. */
    int32_t p1[] = {1};
    assert_int_equal(idle_of(&c, p1, 1, &s), 0);
    /* one fits: min(2 free, 1 asked) = 1 GPU. */
    int32_t p2[] = {1, 2};
    assert_int_equal(idle_of(&c, p2, 2, &s), 1000);
    /* one, one2, one3: min(2 free, 3 asked) = 2 GPUs. */
    int32_t p3[] = {2, 3, 4};
    assert_int_equal(idle_of(&c, p3, 3, &s), 2000);
    /* cpu-hog asks more CPU than the node has: it fits nowhere. */
    int32_t p4[] = {5};
    assert_int_equal(idle_of(&c, p4, 1, &s), 0);
    /* half: 0.5 GPU; pods without GPU never count. */
    int32_t p5[] = {6, 7};
    assert_int_equal(idle_of(&c, p5, 2, &s), 500);
    /* A gang of two 1-GPU pods fits the 2 free GPUs together: 2 GPUs; a
     * gang of three does not, although each of its pods would. */
    int32_t p6[] = {8};
    assert_int_equal(idle_of(&c, p6, 1, &s), 2000);
    int32_t p7[] = {10};
    assert_int_equal(idle_of(&c, p7, 1, &s), 0);
    assert_int_equal(fair_sim_job_fits(&c, 8, &s), 1);
    assert_int_equal(fair_sim_job_fits(&c, 10, &s), 0);
    assert_int_equal(fair_sim_job_fits(&c, 5, &s), 0);
    /* The trials left the cluster as it was. */
    assert_int_equal(c.gpu_allocated, 6000);
    assert_int_equal(c.n[0].cpu_free, 24000);
    /* Fractions: a 0.5 pod on one free device leaves 0.5 there; with a
     * whole GPU still free elsewhere a 1-GPU pod fits: min(1.5, 1). */
    take(&c, 0, 0x40, &t.jobs[6]);
    assert_int_equal(idle_of(&c, p2, 2, &s), 1000);
    fair_sim_cluster_release(&c);
    fair_sim_fit_scratch_release(&s);
    fair_sim_trace_release(&t);
}

static void test_idle_fit_two_nodes(void **state)
{
    (void)state;
    /* n0 has 2 free GPUs and CPU; n1 has 4 free GPUs but no CPU left:
     * ten pending 1-GPU pods can use only n0's 2 GPUs. */
    struct fair_sim_trace t;
    load(&t, "sn,cpu_milli,memory_mib,gpu\nn0,16000,65536,8\nn1,16000,65536,8\n",
         "name,queue,submit_s,duration_s,gpu,cpu,pods\n"
         "a,q,0,10,6,4,\nb,q,0,10,4,16,\np,q,0,10,1,1,10\n");
    struct fair_sim_cluster c;
    struct fair_error err = {0};
    struct fair_sim_fit_scratch s;
    fair_sim_fit_scratch_init(&s);
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    take(&c, 0, 0x3f, &t.jobs[0]);
    take(&c, 1, 0x0f, &t.jobs[1]);
    /* The same cluster with ten single 1-GPU pods instead of the gang. */
    struct fair_sim_trace t2;
    load(&t2, "sn,cpu_milli,memory_mib,gpu\nn0,16000,65536,8\nn1,16000,65536,8\n",
         "name,queue,submit_s,duration_s,gpu,cpu\na,q,0,10,6,4\nb,q,0,10,4,16\n"
         "p0,q,0,1,1,1\np1,q,0,1,1,1\np2,q,0,1,1,1\np3,q,0,1,1,1\np4,q,0,1,1,1\n"
         "p5,q,0,1,1,1\np6,q,0,1,1,1\np7,q,0,1,1,1\np8,q,0,1,1,1\np9,q,0,1,1,1\n");
    struct fair_sim_cluster c2;
    assert_int_equal(fair_sim_cluster_init(&c2, &t2, &err), 0);
    take(&c2, 0, 0x3f, &t2.jobs[0]);
    take(&c2, 1, 0x0f, &t2.jobs[1]);
    int32_t ten[10];
    for (int i = 0; i < 10; i++)
        ten[i] = 2 + i;
    assert_int_equal(idle_of(&c2, ten, 10, &s), 2000);
    /* One pod: min(2, 1). */
    assert_int_equal(idle_of(&c2, ten, 1, &s), 1000);
    /* The gang of ten 1-GPU pods does not fit (2 usable GPUs). */
    int32_t g[] = {2};
    assert_int_equal(idle_of(&c, g, 1, &s), 0);
    fair_sim_cluster_release(&c2);
    fair_sim_trace_release(&t2);
    fair_sim_cluster_release(&c);
    fair_sim_fit_scratch_release(&s);
    fair_sim_trace_release(&t);
}

/* Fraction tenancy: a fraction fits only a fully free device or one whose
 * fractions carry its key (the engine's rule), and whole GPUs ignore keys. */
static void test_idle_fit_tenancy(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    /* One node of 2 GPUs. Jobs: a0 (0.5, key 0, running on device 0),
     * w (1 GPU, running on device 1), b (0.5, key 1), a1 (0.5, key 0),
     * c (0.25, key 1). */
    load(&t, "sn,cpu_milli,memory_mib,gpu\nn0,32000,65536,2\n",
         "name,queue,submit_s,duration_s,gpu\na0,q,0,10,500m\nw,q,0,10,1\nb,q,0,10,500m\n"
         "a1,q,0,10,500m\nc,q,0,10,250m\n");
    struct fair_sim_cluster c;
    struct fair_error err = {0};
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    take(&c, 0, 1, &t.jobs[0]);
    take(&c, 0, 2, &t.jobs[1]);
    int32_t key[] = {0, 0, 1, 0, 1};
    int32_t dev[FAIR_MAX_GPUS_PER_NODE] = {0, FAIR_SIM_KEY_MIXED};
    struct fair_sim_fit_scratch s;
    fair_sim_fit_scratch_init(&s);
    int32_t b[] = {2}, a1[] = {3}, bc[] = {2, 4}, all[] = {2, 3, 4};
    /* Without tenancy, b fits device 0's free half. */
    assert_int_equal(idle_of(&c, b, 1, &s), 500);
    s.job_key = key;
    s.dev_key = dev;
    assert_int_equal(idle_of(&c, b, 1, &s), 0);
    assert_int_equal(idle_of(&c, bc, 2, &s), 0);
    assert_int_equal(idle_of(&c, a1, 1, &s), 500);
    assert_int_equal(idle_of(&c, all, 3, &s), 500);
    /* A device of several keys is closed to every fraction. */
    dev[0] = FAIR_SIM_KEY_MIXED;
    assert_int_equal(idle_of(&c, all, 3, &s), 0);
    /* Fully free again: any key. */
    fair_sim_cluster_unbind(&c, 0, 1, &t.jobs[0]);
    assert_int_equal(idle_of(&c, b, 1, &s), 500);
    assert_int_equal(idle_of(&c, all, 3, &s), 1000);
    fair_sim_fit_scratch_release(&s);
    fair_sim_cluster_release(&c);
    fair_sim_trace_release(&t);
}

static void test_idle_fit_alloc_failure(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    load(&t, "sn,cpu_milli,memory_mib,gpu\nn0,32000,65536,8\n",
         "name,queue,submit_s,duration_s,gpu,pods\none,q,0,10,1,\ng,q,0,10,1,2\n");
    struct fair_sim_cluster c;
    struct fair_error err = {0};
    assert_int_equal(fair_sim_cluster_init(&c, &t, &err), 0);
    int32_t p[] = {0, 1};
    for (long n = 0;; n++) {
        struct fair_sim_fit_scratch s;
        fair_sim_fit_scratch_init(&s);
        int64_t idle = -1;
        fair_alloc_fail_after(n);
        int rc = fair_sim_idle_fit(&c, p, 2, NULL, &s, &idle);
        fair_alloc_fail_after(-1);
        fair_sim_fit_scratch_release(&s);
        if (rc == 0) {
            assert_int_equal(idle, 3000);
            break;
        }
        assert_int_equal(rc, FAIR_ENOMEM);
        assert_int_equal(c.gpu_allocated, 0);
        assert_true(n < 100);
    }
    fair_sim_cluster_release(&c);
    fair_sim_trace_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist),
        cmocka_unit_test(test_lost_work),
        cmocka_unit_test(test_spans),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_idle_fit_one_node),
        cmocka_unit_test(test_idle_fit_two_nodes),
        cmocka_unit_test(test_idle_fit_tenancy),
        cmocka_unit_test(test_idle_fit_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
