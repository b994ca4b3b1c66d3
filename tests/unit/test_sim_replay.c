/* Trace replay through the real engine on the virtual clock: exact small
 * scenarios (2 nodes x 8 GPUs), event and cycle ordering, waits,
 * allocation ratios, reclaim with requeue and lost GPU-time, speedup and
 * horizon, a baseline placement inside the replay, and the engine as a
 * placement policy in the fragmentation experiment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "sim/config.h"
#include "sim/engine_place.h"
#include "sim/frag.h"
#include "sim/replay.h"

static const char *nodes_2x8 = "sn,cpu_milli,memory_mib,gpu\n"
                               "n0,64000,262144,8\n"
                               "n1,64000,262144,8\n";

/* One queue: nothing but capacity decides. j3/j4 wait for j2 (done at
 * 50 s), j5 for j3/j4 (done at 80 s). */
static const char *jobs_fifo = "name,queue,submit_s,duration_s,gpu,cpu,memory\n"
                               "j1,q,0,100,8,8,32Gi\n"
                               "j2,q,0,50,8,8,32Gi\n"
                               "j3,q,5,30,4,4,16Gi\n"
                               "j4,q,5,30,4,4,16Gi\n"
                               "j5,q,60,10,0.5,1,1Gi\n";

struct world {
    struct fair_sim_trace t;
    struct fair_sim_config c;
    int32_t *queue_of;
    struct fair_sim_run run;
};

static void world_load(struct world *w, const char *nodes, const char *jobs, const char *yaml)
{
    struct fair_error err = {0};
    memset(w, 0, sizeof(*w));
    fair_sim_trace_init(&w->t);
    fair_sim_config_init(&w->c);
    if (fair_sim_trace_parse_nodes(&w->t, "nodes.csv", nodes, strlen(nodes), NULL, &err) ||
        fair_sim_trace_parse_jobs(&w->t, "jobs.csv", jobs, strlen(jobs), NULL, &err) ||
        (yaml ? fair_sim_config_parse(&w->c, "p.yaml", yaml, strlen(yaml), &err)
              : fair_sim_config_default(&w->c, &w->t, &err)) ||
        fair_sim_config_assign(&w->c, &w->t, &w->queue_of, &err))
        fail_msg("%s", err.msg);
}

static void world_run(struct world *w, const struct fair_sim_opts *o)
{
    struct fair_error err = {0};
    if (fair_sim_replay(&w->t, &w->c, w->queue_of, o, &w->run, &err))
        fail_msg("replay: %s", err.msg);
}

static void world_free(struct world *w)
{
    fair_sim_run_release(&w->run);
    fair_free(w->queue_of);
    fair_sim_config_release(&w->c);
    fair_sim_trace_release(&w->t);
}

static void check_fifo(const struct fair_sim_run *r)
{
    assert_int_equal(r->start_ms, 0);
    assert_int_equal(r->end_ms, 100000);
    assert_int_equal(r->gpu_capacity, 16000);
    /* Cycles at 0, 10 (j3/j4 do not fit), 50 (they start), 60 (j5 does
     * not fit), 80 (it starts), 90 (it ended; j1 still runs). None at 100:
     * nothing is left. */
    assert_int_equal(r->cycles, 6);
    assert_int_equal(r->binds, 5);
    assert_int_equal(r->evictions, 0);
    assert_int_equal(r->first_fail_ms, 10000);
    assert_int_equal(r->first_fail_unallocated, 0);
    /* [0,80): 16 GPUs, [80,90): 8.5, [90,100): 8. */
    assert_true(r->mean_alloc_ratio > 0.903124 && r->mean_alloc_ratio < 0.903126);
    assert_true(r->peak_alloc_ratio == 1.0);
    /* One sample per 10 s, plus the end. */
    assert_int_equal(r->nsamples, 11);
    const int64_t alloc[11] = {16000, 16000, 16000, 16000, 16000, 16000,
                               16000, 16000, 8500,  8000,  0};
    const int32_t pending[11] = {0, 2, 2, 2, 2, 0, 1, 1, 0, 0, 0};
    for (size_t i = 0; i < 11; i++) {
        assert_int_equal(r->samples[i].t_ms, (int64_t)i * 10000);
        assert_int_equal(r->samples[i].gpu_allocated, alloc[i]);
        assert_int_equal(r->samples[i].pending, pending[i]);
    }
    assert_int_equal(r->samples[1].pending_gpu, 8000);
    assert_int_equal(r->samples[6].pending_gpu, 500);
    const struct fair_sim_qstats *s = &r->qstats[0];
    assert_int_equal(s->jobs, 5);
    assert_int_equal(s->started, 5);
    assert_int_equal(s->completed, 5);
    assert_int_equal(s->never_started, 0);
    /* Waits 0, 0, 20, 45, 45 s. */
    assert_int_equal(s->wait_p50_ms, 20000);
    assert_int_equal(s->wait_p95_ms, 45000);
    assert_int_equal(s->wait_max_ms, 45000);
    assert_int_equal(s->preemptions, 0);
    /* 8x100 + 8x50 + 2 x 4x30 + 0.5x10 GPU-s. */
    assert_int_equal(s->used_gpu_ms,
                     (8000LL * 100 + 8000LL * 50 + 2 * 4000LL * 30 + 500LL * 10) * 1000);
    assert_int_equal(r->qstats[1].jobs, 5); /* the total */
    assert_int_equal(r->qstats[1].wait_p50_ms, 20000);
}

static void test_fifo_exact(void **state)
{
    (void)state;
    struct world w;
    world_load(&w, nodes_2x8, jobs_fifo, NULL);
    struct fair_sim_opts o = {.policy = FAIR_SIM_POLICY_ENGINE};
    world_run(&w, &o);
    check_fifo(&w.run);
    /* The queue's fair share, as the engine computed it: all 16 GPUs. */
    assert_int_equal(w.run.qsamples[0].fair_share, 16000);
    world_free(&w);
}

static void test_fifo_baselines(void **state)
{
    (void)state;
    /* The nodes are alike, so every baseline gives the same run. */
    for (int p = FAIR_SIM_POLICY_FIRST_FIT; p < FAIR_SIM_POLICY_COUNT; p++) {
        struct world w;
        world_load(&w, nodes_2x8, jobs_fifo, NULL);
        struct fair_sim_opts o = {.policy = (enum fair_sim_policy)p, .seed = 3};
        world_run(&w, &o);
        check_fifo(&w.run);
        world_free(&w);
    }
}

static void test_speedup_and_horizon(void **state)
{
    (void)state;
    struct world w;
    world_load(&w, nodes_2x8, jobs_fifo, NULL);
    /* Arrivals 5x sooner: j3/j4 at 1 s, j5 at 12 s; run times unchanged. */
    struct fair_sim_opts o = {.speedup = 5};
    world_run(&w, &o);
    const struct fair_sim_qstats *s = &w.run.qstats[0];
    assert_int_equal(s->wait_p50_ms, 49000); /* waits 0, 0, 49, 49, 68 */
    assert_int_equal(s->wait_max_ms, 68000);
    assert_int_equal(w.run.end_ms, 100000);
    /* Cycles at 0, 10, 20 (j5 arrived at 12), 50, 60, 80, 90. */
    assert_int_equal(w.run.cycles, 7);
    fair_sim_run_release(&w.run);

    /* Stop at 60 s: only j2 has completed; j1, j3, j4 still run. */
    struct fair_sim_opts h = {.horizon_ms = 60000};
    world_run(&w, &h);
    assert_int_equal(w.run.end_ms, 60000);
    assert_int_equal(w.run.qstats[0].completed, 1);
    assert_int_equal(w.run.qstats[0].started, 4);
    assert_int_equal(w.run.qstats[0].never_started, 1);
    assert_int_equal(w.run.samples[w.run.nsamples - 1].t_ms, 60000);
    assert_int_equal(w.run.samples[w.run.nsamples - 1].gpu_allocated, 16000);
    /* 8x60 + 8x50 + 2 x 4x10 GPU-s, charged up to the horizon. */
    assert_int_equal(w.run.qstats[0].used_gpu_ms,
                     (8000LL * 60 + 8000LL * 50 + 2 * 4000LL * 10) * 1000);
    world_free(&w);
}

static void test_cycle_period(void **state)
{
    (void)state;
    struct world w;
    world_load(&w, nodes_2x8, jobs_fifo, NULL);
    /* 30 s cycles: j3/j4 start at 60 (first cycle after 50), j5 arrives at
     * 60 and starts at 90 (they end at 90). */
    struct fair_sim_opts o = {.cycle_ms = 30000};
    world_run(&w, &o);
    const struct fair_sim_qstats *s = &w.run.qstats[0];
    assert_int_equal(s->wait_max_ms, 55000); /* j3/j4: 5 -> 60 */
    assert_int_equal(s->wait_p50_ms, 30000); /* j5: 60 -> 90 */
    assert_int_equal(w.run.end_ms, 100000);
    world_free(&w);
}

static const char *jobs_2x8 = "name,queue,submit_s,duration_s,gpu,cpu,memory\n"
                              "a1,team-a,0,100,8,8,32Gi\n"
                              "a2,team-a,0,100,8,8,32Gi\n"
                              "b1,team-b,20,50,4,4,16Gi\n"
                              "b2,team-b,20,50,4,4,16Gi\n"
                              "a3,team-a,30,10,0.5,1,1Gi\n";

static char *read_fixture(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/sim/%s", FAIR_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_reclaim_exact(void **state)
{
    (void)state;
    /* team-a (guaranteed 8) borrows team-b's 8 GPUs at 0 s. At 20 s team-b
     * wants them back: the engine evicts one 8-GPU pod of team-a (it loses
     * 20 s of 8 GPUs and goes back to pending); b1 and b2 start at the next
     * cycle (30 s). a3 (0.5 GPU) finds no room until a1 ends at 100 s;
     * the evicted pod restarts when b1/b2 end (80 s) and runs 100 s more. */
    struct world w;
    world_load(&w, nodes_2x8, jobs_2x8, read_fixture("projects.yaml"));
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    const struct fair_sim_run *r = &w.run;
    assert_int_equal(r->evictions, 1);
    assert_int_equal(r->end_ms, 180000);
    assert_int_equal(r->first_fail_ms, 30000);
    assert_int_equal(r->first_fail_unallocated, 0);
    const struct fair_sim_qstats *a = &r->qstats[0], *b = &r->qstats[1];
    assert_int_equal(a->preemptions, 1);
    assert_int_equal(a->lost_gpu_ms, 8000LL * 20000);
    assert_int_equal(a->completed, 3);
    assert_int_equal(a->wait_max_ms, 70000); /* a3: 30 -> 100 */
    assert_int_equal(a->wait_p50_ms, 0);     /* a1, a2 started at once */
    assert_int_equal(b->preemptions, 0);
    assert_int_equal(b->wait_p50_ms, 10000); /* 20 -> 30 */
    assert_int_equal(b->wait_max_ms, 10000);
    /* used: a1 100 s + a2 20 s then 100 s, x 8 GPUs; a3 0.5 x 10 s;
     * b 2 x 4 x 50 s. */
    assert_int_equal(a->used_gpu_ms, (8000LL * 220 + 500LL * 10) * 1000);
    assert_int_equal(b->used_gpu_ms, 2 * 4000LL * 50 * 1000);
    /* Queue samples: at 20 s team-b's fair share is its 8 GPUs. */
    assert_int_equal(r->samples[2].t_ms, 20000);
    assert_int_equal(r->qsamples[2 * 2 + 0].allocated, 8000);
    assert_int_equal(r->qsamples[2 * 2 + 1].fair_share, 8000);
    assert_int_equal(r->qsamples[2 * 2 + 1].pending, 2);
    assert_int_equal(r->qsamples[3 * 2 + 1].allocated, 8000);
    world_free(&w);
}

static void test_what_if(void **state)
{
    (void)state;
    /* The same trace when team-b guarantees nothing: no reclaim, team-b
     * waits for team-a's pods to end at 100 s. */
    const char *yaml = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p}\n"
                       "spec: {guaranteed: {gpu: 16}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\n"
                       "spec: {project: p, guaranteed: {gpu: 16}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-b}\n"
                       "spec: {project: p}\n";
    struct world w;
    world_load(&w, nodes_2x8, jobs_2x8, yaml);
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    assert_int_equal(w.run.evictions, 0);
    assert_int_equal(w.run.qstats[0].preemptions, 0);
    assert_int_equal(w.run.qstats[1].wait_p50_ms, 80000);
    assert_int_equal(w.run.qstats[0].wait_max_ms, 70000);
    assert_int_equal(w.run.end_ms, 150000);
    world_free(&w);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    /* Every allocation of a replay failing in turn: an error, no crash,
     * no leak (the sanitizer build checks the last two). */
    struct world w;
    world_load(&w, nodes_2x8, jobs_2x8, read_fixture("projects.yaml"));
    for (long n = 0;; n++) {
        struct fair_error err = {0};
        struct fair_sim_opts o = {0};
        fair_alloc_fail_after(n);
        int rc = fair_sim_replay(&w.t, &w.c, w.queue_of, &o, &w.run, &err);
        fair_alloc_fail_after(-1);
        if (rc == 0)
            break;
        assert_int_equal(rc, FAIR_ENOMEM);
        assert_null(w.run.samples);
        assert_true(n < 100000);
    }
    assert_int_equal(w.run.evictions, 1);
    world_free(&w);
}

static void test_percentile(void **state)
{
    (void)state;
    const int64_t v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    assert_int_equal(fair_sim_percentile(v, 10, 50), 5);
    assert_int_equal(fair_sim_percentile(v, 10, 95), 10);
    assert_int_equal(fair_sim_percentile(v, 10, 0), 1);
    assert_int_equal(fair_sim_percentile(v, 1, 95), 1);
    assert_int_equal(fair_sim_percentile(v, 0, 50), -1);
}

static void test_engine_as_placement(void **state)
{
    (void)state;
    /* The known-answer inflation case with the engine placing. */
    struct fair_sim_trace t;
    struct fair_error err = {0};
    fair_sim_trace_init(&t);
    const char *nodes = "sn,cpu_milli,memory_mib,gpu\nn,64000,1000,2\n";
    const char *jobs = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,600\n";
    assert_int_equal(fair_sim_trace_parse_nodes(&t, "n", nodes, strlen(nodes), NULL, &err), 0);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "j", jobs, strlen(jobs), NULL, &err), 0);
    struct fair_sim_engine_placer ep;
    assert_int_equal(fair_sim_engine_placer_init(&ep, &t, &err), 0);
    struct fair_sim_frag_opts o = {.seed = 9};
    struct fair_sim_frag_result r;
    int rc = fair_sim_frag_run(&t, fair_sim_place_engine, &ep, &o, &r, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(r.pods_arrived, 4);
    assert_int_equal(r.pods_placed, 2);
    assert_int_equal(r.unallocated_milli, 800);
    assert_int_equal(ep.cycles, 4);
    fair_sim_engine_placer_release(&ep);
    fair_sim_trace_release(&t);
}

static void test_model_sets_become_selectors(void **state)
{
    (void)state;
    /* A pod that may run on "B|C" only fits the B node; the engine sees
     * one node selector, satisfied by the B and C nodes' labels. */
    struct world w;
    world_load(&w,
               "sn,cpu_milli,memory_mib,gpu,model\nna,8000,1000,1,A\nnb,8000,1000,1,B\n"
               "nc,8000,1000,1,C\n",
               "name,queue,submit_s,duration_s,gpu,gpu_model\n"
               "x,q,0,10,1,B|C\ny,q,0,10,1,B|C\nz,q,0,10,1,B|C\nw,q,0,10,1,A\n",
               NULL);
    struct fair_sim_enodes en;
    struct fair_error err = {0};
    assert_int_equal(fair_sim_enodes_init(&en, &w.t, &err), 0);
    assert_int_equal(en.nodes[0].nlabels, 1); /* spec "A" */
    assert_int_equal(en.nodes[1].nlabels, 1); /* spec "B|C" */
    assert_string_equal(en.nodes[1].labels[0].key, FAIR_SIM_SPEC_LABEL "0");
    assert_string_equal(en.nodes[2].labels[0].key, FAIR_SIM_SPEC_LABEL "0");
    assert_string_equal(en.nodes[0].labels[0].key, FAIR_SIM_SPEC_LABEL "1");
    fair_sim_enodes_release(&en);
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    /* x and y run at once on nb and nc; z waits 10 s; w runs on na. */
    assert_int_equal(w.run.qstats[0].started, 4);
    assert_int_equal(w.run.qstats[0].wait_max_ms, 10000);
    assert_int_equal(w.run.qstats[0].wait_p50_ms, 0);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_exact),
        cmocka_unit_test(test_fifo_baselines),
        cmocka_unit_test(test_speedup_and_horizon),
        cmocka_unit_test(test_cycle_period),
        cmocka_unit_test(test_percentile),
        cmocka_unit_test(test_reclaim_exact),
        cmocka_unit_test(test_what_if),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_engine_as_placement),
        cmocka_unit_test(test_model_sets_become_selectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
