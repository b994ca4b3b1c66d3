/* The FGD paper's protocol (sim/paper.h): the arrival draw against the
 * order Go 1.19.8 draws with the simulator's own steps, the window metric
 * on hand-placed sequences, the bound on a prefix, the CSV order, the
 * published figures, and allocation failure at every site. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "sim/frag.h"
#include "sim/paper.h"
#include "sim/place.h"
#include "sim/trace.h"
#include "test_alloc_sweep.h"
#include "test_sim_fixture.h"

/* 8 GPUs; node and pod files deliberately not in name order. */
static const char NODES[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                            "n-c,32000,65536,4,G2\n"
                            "n-a,16000,32768,1,T4\n"
                            "n-b,32000,65536,3,G2\n";
static const char PODS[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                           "p-h,4000,1024,1,500,\n"
                           "p-a,8000,2048,1,1000,\n"
                           "p-c,2000,1024,0,0,\n"
                           "p-b,4000,1024,2,1000,\n"
                           "p-f,1000,512,1,250,\n"
                           "p-e,16000,4096,1,750,T4\n"
                           "p-d,6000,1024,1,300,\n"
                           "p-g,12000,2048,4,1000,\n";

static void assert_order(const struct fair_sim_arrivals *a, const char *const *want, size_t n)
{
    assert_int_equal(a->n, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(a->jobs[i]->name, want[i]);
}

static void test_draw_matches_go(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    load(&t, NODES, PODS);
    struct fair_error err = {0};
    struct fair_sim_arrivals a;
    /* Go 1.19.8: rand.Seed(s); rand.Int(); sort by name; rand.Shuffle;
     * rand.Intn copies up to 1.3 x 8000 milli-GPU; 10 x rand.Float64();
     * rand.Perm(3). */
    static const char *const want42[] = {"p-d", "p-g", "p-c", "p-f", "p-h",
                                         "p-b", "p-e", "p-a", "p-a", "p-d"};
    assert_int_equal(fair_sim_arrivals_paper(&a, &t, 42, &err), 0);
    assert_order(&a, want42, 10);
    /* After 10 rand.Float64(), Perm [2 0 1] over n-a, n-b, n-c; the trace
     * holds n-c, n-a, n-b. */
    assert_int_equal(a.node_rank[0], 1);
    assert_int_equal(a.node_rank[1], 2);
    assert_int_equal(a.node_rank[2], 0);
    fair_sim_arrivals_release(&a);
    static const char *const want7[] = {"p-c", "p-e", "p-g", "p-a", "p-d",
                                        "p-f", "p-h", "p-b", "p-a"};
    assert_int_equal(fair_sim_arrivals_paper(&a, &t, 7, &err), 0);
    assert_order(&a, want7, 9);
    assert_int_equal(a.node_rank[0], 1); /* Perm [2 0 1] again */
    assert_int_equal(a.node_rank[1], 2);
    assert_int_equal(a.node_rank[2], 0);
    fair_sim_arrivals_release(&a);
    static const char *const want0[] = {"p-c", "p-d", "p-f", "p-g", "p-h",
                                        "p-a", "p-e", "p-b", "p-a"};
    assert_int_equal(fair_sim_arrivals_paper(&a, &t, 0, &err), 0);
    assert_order(&a, want0, 9);
    fair_sim_arrivals_release(&a);
    fair_sim_arrivals_release(NULL);
    fair_sim_trace_release(&t);
}

static void test_draw_tunes_down(void **state)
{
    (void)state;
    /* 4 GPUs requested on 2: above 1.3 x capacity, so random pods are
     * dropped until the requests fit (the simulator's tuneDownPods). */
    struct fair_sim_trace t;
    load(&t, "sn,cpu_milli,memory_mib,gpu,model\nn,64000,65536,2,\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
         "a,1000,1,1,1000\nb,1000,1,1,1000\nc,1000,1,1,1000\nd,1000,1,1,1000\n");
    struct fair_error err = {0};
    struct fair_sim_arrivals a;
    assert_int_equal(fair_sim_arrivals_paper(&a, &t, 42, &err), 0);
    assert_int_equal(a.n, 2); /* 2000 <= 2600 < 3000 */
    assert_string_not_equal(a.jobs[0]->name, a.jobs[1]->name);
    fair_sim_arrivals_release(&a);
    fair_sim_trace_release(&t);
    /* No GPU pod: the draw would never end. */
    load(&t, "sn,cpu_milli,memory_mib,gpu,model\nn,64000,65536,2,\n",
         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1,0,0\n");
    assert_int_equal(fair_sim_arrivals_paper(&a, &t, 42, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "no pod asks for a GPU"));
    fair_sim_trace_release(&t);
}

static int parse_order(struct fair_sim_arrivals *a, const struct fair_sim_trace *t, const char *csv,
                       struct fair_error *err)
{
    return fair_sim_arrivals_parse_csv(a, t, "order.csv", csv, strlen(csv), NULL, err);
}

static void run_first_fit(const struct fair_sim_trace *t, const char *csv,
                          struct fair_sim_paper_result *res)
{
    struct fair_error err = {0};
    struct fair_sim_arrivals a;
    if (parse_order(&a, t, csv, &err))
        fail_msg("%s", err.msg);
    assert_null(a.node_rank);
    struct fair_sim_placer p;
    assert_int_equal(fair_sim_placer_init(&p, FAIR_SIM_POLICY_FIRST_FIT, 1, t, &err), 0);
    if (fair_sim_paper_run(t, &a, fair_sim_place_baseline, &p, res, &err))
        fail_msg("%s", err.msg);
    fair_sim_placer_release(&p);
    fair_sim_arrivals_release(&a);
}

static void test_window_metric(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    load(&t, NODES, PODS);
    struct fair_sim_paper_result r;
    /* First fit, nodes n-c, n-a, n-b: g -> n-c, b -> n-b 0-1, a -> n-a,
     * h -> n-b 2, h -> n-b 2 (8000 arrived, 8000 allocated: 100%), the CPU
     * pod (100% again), then d fails at 103.75%: the run stops there. */
    run_first_fit(&t, "name\np-g\np-b\np-a\np-h\np-h\np-c\np-d\np-f\n", &r);
    assert_int_equal(r.capacity_milli, 8000);
    assert_int_equal(r.window_half_width, 1);
    assert_int_equal(r.window_records, 2);
    assert_int_equal(r.window_end, 6);
    assert_true(r.unallocated_pct > -1e-9 && r.unallocated_pct < 1e-9);
    assert_int_equal(r.arrivals, 7);
    assert_int_equal(r.placed, 6);
    assert_int_equal(r.failed, 1);
    assert_int_equal(r.first_fail_arrived_milli, 8000);
    assert_int_equal(r.first_fail_unallocated_milli, 0);
    assert_int_equal(r.first_fail_index, 6);

    /* h, d on n-b 2 (200 left), the second d fails at 101.25% (outside
     * 99.5-100.5%), the CPU pod, f fails at 104.4%: only the fallback
     * window (98.5-101.5%) holds records, two at 7800 allocated. */
    run_first_fit(&t, "name\np-g\np-b\np-a\np-h\np-d\np-d\np-c\np-f\np-f\n", &r);
    assert_int_equal(r.window_half_width, 3);
    assert_int_equal(r.window_records, 2);
    assert_int_equal(r.window_end, 7);
    assert_true(r.unallocated_pct > 2.5 - 1e-9 && r.unallocated_pct < 2.5 + 1e-9);
    assert_int_equal(r.arrivals, 8);
    assert_int_equal(r.first_fail_arrived_milli, 7800);
    assert_int_equal(r.first_fail_unallocated_milli, 200);
    assert_int_equal(r.first_fail_index, 5);

    /* The bound after those 7 arrivals: 7 whole GPUs on 7 devices, and
     * {500, 300, 300} on the last one: at best 800, so 200 unallocated. */
    struct fair_error err = {0};
    struct fair_sim_arrivals a;
    assert_int_equal(parse_order(&a, &t, "name\np-g\np-b\np-a\np-h\np-d\np-d\np-c\n", &err), 0);
    struct fair_sim_frag_bound b;
    assert_int_equal(fair_sim_paper_bound(&t, &a, 7, 0, &b, &err), 0);
    assert_true(b.bound_milli >= 199 && b.bound_milli <= 200);
    assert_int_equal(b.arrived_milli, 8100);
    fair_sim_arrivals_release(&a);

    /* Held to place the first pods: e (750) and d (300) cannot share a
     * device. Free to turn them away, eight whole GPUs fill the cluster;
     * with e held its device keeps 250; with both held, two devices hold
     * 1050. The CPU pod c counts for nothing either way. */
    assert_int_equal(parse_order(&a, &t, "name\np-e\np-c\np-d\np-g\np-b\np-a\np-a\n", &err), 0);
    static const int64_t want_must[][2] = {{0, 0}, {1, 250}, {2, 250}, {3, 950}};
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(fair_sim_paper_bound(&t, &a, 7, (size_t)want_must[k][0], &b, &err), 0);
        if (b.bound_milli > want_must[k][1] || b.bound_milli < want_must[k][1] - 1)
            fail_msg("must %lld: bound %lld, expected %lld", (long long)want_must[k][0],
                     (long long)b.bound_milli, (long long)want_must[k][1]);
    }
    fair_sim_arrivals_release(&a);

    /* No failure at all: the index says so. */
    run_first_fit(&t, "name\np-h\n", &r);
    assert_int_equal(r.first_fail_index, SIZE_MAX);

    /* Arrivals that never get near 100%: no record. */
    run_first_fit(&t, "name\np-h\n", &r);
    assert_int_equal(r.window_records, 0);
    assert_true(r.unallocated_pct < 0);
    fair_sim_trace_release(&t);
}

static void test_csv_order(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    load(&t, NODES, PODS);
    struct fair_error err = {0};
    struct fair_sim_arrivals a;
    /* Other columns, quotes, blanks, CRLF, and the simulator's copy names. */
    assert_int_equal(
        parse_order(&a, &t, "i,name\r\n1,\"p-a\"\r\n\n2, p-b-tuned-17 \r\n3,p-c-clone-2\r\n", &err),
        0);
    static const char *const want[] = {"p-a", "p-b", "p-c"};
    assert_order(&a, want, 3);
    fair_sim_arrivals_release(&a);

    struct {
        const char *csv, *msg;
    } bad[] = {
        {"", "empty file"},
        {"pod\np-a\n", "order.csv:1: no \"name\" column"},
        {"name\n", "no arrivals"},
        {"name\np-z\n", "order.csv:2: name: no pod \"p-z\""},
        {"name\np-z-tuned-x\n", "no pod \"p-z-tuned-x\""},
        {"i,name\n1\n", "order.csv:2: name: missing"},
        {"name\np-a\0\n", "NUL byte"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t len = strlen(bad[i].csv);
        if (strstr(bad[i].msg, "NUL"))
            len = 10; /* "name\np-a", the NUL, "\n" */
        int rc = fair_sim_arrivals_parse_csv(&a, &t, "order.csv", bad[i].csv, len, NULL, &err);
        assert_true(rc < 0);
        if (!strstr(err.msg, bad[i].msg))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad[i].msg);
        assert_null(a.jobs);
    }
    /* Limits: rows and line length. */
    struct fair_sim_limits lim = {.max_rows = 2};
    const char *three = "name\np-a\np-b\np-c\n";
    assert_int_equal(fair_sim_arrivals_parse_csv(&a, &t, "o", three, strlen(three), &lim, &err),
                     FAIR_ERANGE);
    lim = (struct fair_sim_limits){.max_line = 3};
    assert_int_equal(fair_sim_arrivals_parse_csv(&a, &t, "o", three, strlen(three), &lim, &err),
                     FAIR_ERANGE);
    lim = (struct fair_sim_limits){.max_bytes = 4};
    assert_int_equal(fair_sim_arrivals_parse_csv(&a, &t, "o", three, strlen(three), &lim, &err),
                     FAIR_ERANGE);
    assert_int_equal(fair_sim_arrivals_load_csv(&a, &t, "/nonexistent/order.csv", NULL, &err),
                     FAIR_EIO);
    fair_sim_trace_release(&t);
}

static void test_published(void **state)
{
    (void)state;
    /* Spot values of the artifact's analysis_allo_discrete.csv, column 100. */
    const int32_t *fgd = fair_sim_paper_published("default", "FGD");
    assert_non_null(fgd);
    assert_int_equal(fgd[0], 9514); /* seed 42: 95.14% allocated, 4.86% not */
    const int32_t *bf = fair_sim_paper_published("gpushare100", "BestFit");
    assert_non_null(bf);
    assert_int_equal(bf[9], 8465); /* seed 51 */
    assert_non_null(fair_sim_paper_published("multigpu50", "GpuPacking"));
    assert_null(fair_sim_paper_published("gpushare20", "FGD")); /* not in the artifact */
    assert_null(fair_sim_paper_published("default", "Random"));
}

static int sweep_draw(void *ctx)
{
    const struct fair_sim_trace *t = ctx;
    struct fair_error err = {0};
    struct fair_sim_arrivals a;
    int rc = fair_sim_arrivals_paper(&a, t, 42, &err);
    if (rc)
        return rc;
    fair_sim_arrivals_release(&a);
    rc = parse_order(&a, t, "name\np-a\np-b\n", &err);
    if (!rc)
        fair_sim_arrivals_release(&a);
    return rc;
}

static void test_alloc_failures(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    load(&t, NODES, PODS);
    assert_true(fair_test_alloc_sweep(sweep_draw, &t, 50) >= 5);
    fair_sim_trace_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draw_matches_go), cmocka_unit_test(test_draw_tunes_down),
        cmocka_unit_test(test_window_metric),   cmocka_unit_test(test_csv_order),
        cmocka_unit_test(test_published),       cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
