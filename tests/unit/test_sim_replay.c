/* Trace replay through the real engine on the virtual clock: exact small
 * scenarios (2 nodes x 8 GPUs), event and cycle ordering, waits,
 * allocation ratios, reclaim with requeue and lost GPU-time, speedup and
 * horizon, a baseline placement inside the replay, and the engine as a
 * placement policy in the fragmentation experiment. */
#include <math.h>
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
#include "sim/report.h"

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
    assert_int_equal(s->wait.p50_ms, 20000);
    assert_int_equal(s->wait.p95_ms, 45000);
    assert_int_equal(s->wait.max_ms, 45000);
    assert_int_equal(s->preemptions, 0);
    /* 8x100 + 8x50 + 2 x 4x30 + 0.5x10 GPU-s. */
    assert_int_equal(s->used_gpu_ms,
                     (8000LL * 100 + 8000LL * 50 + 2 * 4000LL * 30 + 500LL * 10) * 1000);
    assert_int_equal(r->qstats[1].jobs, 5); /* the total */
    assert_int_equal(r->qstats[1].wait.p50_ms, 20000);
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
    assert_int_equal(s->wait.p50_ms, 49000); /* waits 0, 0, 49, 49, 68 */
    assert_int_equal(s->wait.max_ms, 68000);
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
    assert_int_equal(s->wait.max_ms, 55000); /* j3/j4: 5 -> 60 */
    assert_int_equal(s->wait.p50_ms, 30000); /* j5: 60 -> 90 */
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
    assert_int_equal(a->wait.max_ms, 70000); /* a3: 30 -> 100 */
    assert_int_equal(a->wait.p50_ms, 0);     /* a1, a2 started at once */
    assert_int_equal(b->preemptions, 0);
    assert_int_equal(b->wait.p50_ms, 10000); /* 20 -> 30 */
    assert_int_equal(b->wait.max_ms, 10000);
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
    assert_int_equal(w.run.qstats[1].wait.p50_ms, 80000);
    assert_int_equal(w.run.qstats[0].wait.max_ms, 70000);
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
    assert_int_equal(w.run.qstats[0].wait.max_ms, 10000);
    assert_int_equal(w.run.qstats[0].wait.p50_ms, 0);
    world_free(&w);
}

/* The job record of the job named name (its pod's or gang's name). */
static const struct fair_sim_jobrec *job_named(const struct world *w, const char *name)
{
    for (size_t i = 0; i < w->run.njobs; i++) {
        const struct fair_sim_job *p = &w->t.jobs[w->run.jobs[i].first];
        if (strcmp(p->gang ? p->gang : p->name, name) == 0)
            return &w->run.jobs[i];
    }
    fail_msg("no job %s", name);
    return NULL;
}

static void test_lost_work_and_checkpoints(void **state)
{
    (void)state;
    /* test_reclaim_exact's trace: one of a1 and a2 (8 GPUs each, started
     * at 0 s) is evicted at 20 s; call it a2. */
    struct world w;
    world_load(&w, nodes_2x8, jobs_2x8, read_fixture("projects.yaml"));
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    const char *evicted = job_named(&w, "a1")->restarts ? "a1" : "a2";
    const struct fair_sim_jobrec *a2 = job_named(&w, evicted);
    assert_int_equal(a2->restarts, 1);
    assert_int_equal(a2->lost_gpu_ms, 8000LL * 20000);
    assert_int_equal(a2->used_gpu_ms, 8000LL * 120000);
    assert_int_equal(a2->first_start_ms, 0);
    assert_int_equal(a2->end_ms, 180000);
    assert_int_equal(a2->status, FAIR_SIM_JOB_COMPLETED);
    const struct fair_sim_qstats *tot = &w.run.qstats[2];
    assert_int_equal(tot->max_restarts, 1);
    /* used: 8x100 + 8x120 + 0.5x10 + 2 x 4x50 GPU-s over 180 s of 16 GPUs;
     * useful: minus 8x20. */
    int64_t used = (8000LL * 100 + 8000LL * 120 + 500LL * 10 + 2 * 4000LL * 50) * 1000;
    assert_int_equal(tot->used_gpu_ms, used);
    assert_int_equal(tot->lost_gpu_ms, 8000LL * 20000);
    assert_true(fabs(w.run.mean_alloc_ratio - (double)used / (16000.0 * 180000)) < 1e-12);
    assert_true(fabs(w.run.useful_alloc_ratio -
                     (double)(used - 8000LL * 20000) / (16000.0 * 180000)) < 1e-12);
    /* JCT: a1 100, a2 180, a3 (30 -> 110) 80; b1, b2 (20 -> 80) 60. */
    assert_int_equal(tot->jct.n, 5);
    assert_int_equal(tot->jct.p50_ms, 80000);
    assert_int_equal(tot->jct.max_ms, 180000);
    assert_true(tot->jct.mean_ms == (100 + 180 + 80 + 60 + 60) * 1000 / 5.0);
    fair_sim_run_release(&w.run);

    /* Checkpoints every 15 s: a2 loses 5 s, resumes at 80 s with 85 s to
     * go and ends at 165 s. */
    struct fair_sim_opts c = {.checkpoint_ms = 15000};
    world_run(&w, &c);
    a2 = job_named(&w, evicted);
    assert_int_equal(a2->restarts, 1);
    assert_int_equal(a2->lost_gpu_ms, 8000LL * 5000);
    assert_int_equal(a2->used_gpu_ms, 8000LL * (20000 + 85000));
    assert_int_equal(a2->end_ms, 165000);
    assert_int_equal(w.run.end_ms, 165000);
    assert_int_equal(w.run.opts.checkpoint_ms, 15000);
    tot = &w.run.qstats[2];
    assert_int_equal(tot->lost_gpu_ms, 8000LL * 5000);
    assert_true(fabs(w.run.useful_alloc_ratio -
                     (double)(tot->used_gpu_ms - tot->lost_gpu_ms) / (16000.0 * 165000)) < 1e-12);
    world_free(&w);
}

/* Declared run times (--declared-runtime) and lending only to pods
 * declared short (--lend-max-runtime), on test_reclaim_exact's trace:
 * team-a's a1 and a2 (8 GPUs, 100 s each) start at 0 s on 16 GPUs, one of
 * them borrowing team-b's 8, and b1/b2 take those back at 20 s. */
static void test_declared_runtime_lending(void **state)
{
    (void)state;
    struct world w;
    world_load(&w, nodes_2x8, jobs_2x8, read_fixture("projects.yaml"));
    /* 100 s: to a minute, 120 s; x1.5 = 150 s: 180 s; bucketed: 15 min;
     * everyone "declares none" at 100%; the default declares nothing. */
    struct fair_sim_opts d = {.declared_pct = 100};
    assert_int_equal(fair_sim_declared_ms(&w.t, 0, &d), 120000);
    d.declared_pct = 150;
    assert_int_equal(fair_sim_declared_ms(&w.t, 0, &d), 180000);
    d.declared_buckets = true;
    assert_int_equal(fair_sim_declared_ms(&w.t, 0, &d), 15 * 60000);
    d.declared_none_pct = 100;
    assert_int_equal(fair_sim_declared_ms(&w.t, 0, &d), 0);
    struct fair_sim_opts none = {0};
    assert_int_equal(fair_sim_declared_ms(&w.t, 0, &none), 0);
    /* Lending up to 60 s: a 120 s job may not borrow; the second 8-GPU
     * job waits for the first, nothing is evicted, nothing lost. */
    struct fair_sim_opts o = {.declared_pct = 100, .lend_max_runtime_ms = 60000};
    world_run(&w, &o);
    assert_int_equal(w.run.evictions, 0);
    assert_int_equal(w.run.qstats[2].lost_gpu_ms, 0);
    fair_sim_run_release(&w.run);
    /* Up to 120 s: it borrows and is evicted as without the rule. */
    o.lend_max_runtime_ms = 120000;
    world_run(&w, &o);
    assert_int_equal(w.run.evictions, 1);
    assert_int_equal(w.run.qstats[2].lost_gpu_ms, 8000LL * 20000);
    fair_sim_run_release(&w.run);
    /* Without declared run times no job may borrow under the rule. */
    o.declared_pct = 0;
    world_run(&w, &o);
    assert_int_equal(w.run.evictions, 0);
    world_free(&w);
}

static void test_guarantee_figures(void **state)
{
    (void)state;
    /* The same trace. team-b (guarantee 8) wants 8 GPUs from 20 s to 80 s:
     * it is owed from 20 s (arrival) to 30 s (its pods start after the
     * eviction): one 10 s episode; it holds 0 GPUs for 10 s and 8 for
     * 50 s of its 60 s at demand >= guarantee: 50/60 delivered. team-a
     * (guarantee 8) is at demand >= 8 from 0 to 180 s and always holds at
     * least 8: all delivered; owed only at 0 s, until the cycle at 0 s. */
    struct world w;
    world_load(&w, nodes_2x8, jobs_2x8, read_fixture("projects.yaml"));
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    const struct fair_sim_qstats *a = &w.run.qstats[0], *b = &w.run.qstats[1];
    assert_int_equal(b->guaranteed, 8000);
    assert_int_equal(b->demand_ge_guar_ms, 60000);
    assert_int_equal(b->guar_owed_gpu_ms, 8000LL * 60000);
    assert_int_equal(b->guar_delivered_gpu_ms, 8000LL * 50000);
    assert_int_equal(b->ttg.n, 1);
    assert_int_equal(b->ttg.p50_ms, 10000);
    assert_int_equal(b->ttg_unfinished, 0);
    assert_int_equal(a->demand_ge_guar_ms, 180000);
    assert_int_equal(a->guar_delivered_gpu_ms, a->guar_owed_gpu_ms);
    assert_int_equal(a->ttg.n, 1);
    assert_int_equal(a->ttg.max_ms, 0);
    const struct fair_sim_qstats *tot = &w.run.qstats[2];
    assert_int_equal(tot->ttg.n, 2);
    assert_int_equal(tot->ttg.max_ms, 10000);
    /* The queue samples carry the guarantee and the demand: at 20 s
     * team-b demands 8 GPUs and holds none. */
    assert_int_equal(w.run.samples[2].t_ms, 20000);
    assert_int_equal(w.run.qsamples[2 * 2 + 1].demand, 8000);
    assert_int_equal(w.run.qsamples[2 * 2 + 1].guaranteed, 8000);
    assert_int_equal(w.run.qsamples[2 * 2 + 1].allocated, 0);
    /* The evicted pod and the pods it makes room for are the eviction's
     * own latency: no GPU counts as idle while a pod fits. */
    assert_int_equal(w.run.idle_fit.gpu_ms, 0);
    assert_int_equal(w.run.idle_fit.episodes, 0);
    world_free(&w);
}

static void test_idle_while_fits_tenancy(void **state)
{
    (void)state;
    /* One GPU; two Projects, whose fractions never share a device (the
     * engine's default). a1 and b1 ask for half of it each at 0 s: one
     * runs, the other waits for the device to be empty, which is the
     * engine's rule, not idle capacity it failed to hand out. With pb
     * opted in to sharing alone, nothing changes; with both, they share. */
    const char *head = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: pa}\n"
                       "spec: {fractions: {shareAcrossProjects: ";
    const char *tail = "}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: pb}\n"
                       "spec: {fractions: {shareAcrossProjects: true}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\n"
                       "spec: {project: pa}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: b}\n"
                       "spec: {project: pb}\n";
    for (int both = 0; both < 2; both++) {
        char yaml[1024];
        snprintf(yaml, sizeof(yaml), "%s%s%s", head, both ? "true" : "false", tail);
        struct world w;
        world_load(&w, "sn,cpu_milli,memory_mib,gpu\nn0,64000,262144,1\n",
                   "name,queue,submit_s,duration_s,gpu\na1,a,0,100,500m\nb1,b,0,100,500m\n", yaml);
        struct fair_sim_opts o = {0};
        world_run(&w, &o);
        assert_int_equal(w.run.end_ms, both ? 100000 : 200000);
        assert_int_equal(w.run.idle_fit.gpu_ms, 0);
        assert_int_equal(w.run.idle_fit_admissible.gpu_ms, 0);
        world_free(&w);
    }
}

static void test_idle_while_fits_reclaim(void **state)
{
    (void)state;
    /* One node of 2 GPUs; queues a and b guaranteed one each. b runs b1
     * and b2 from 0 s (b2 borrows a's GPU). At 100 s a1 (owed) and b3
     * arrive: the engine evicts b2 for a1, and a1 binds at the next cycle
     * (10 s later), once the room is free. That room is a1's: b3, which
     * would fit it, does not make it idle capacity. */
    const char *yaml = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p}\n"
                       "spec: {guaranteed: {gpu: 2}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\n"
                       "spec: {project: p, guaranteed: {gpu: 1}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: b}\n"
                       "spec: {project: p, guaranteed: {gpu: 1}}\n";
    struct world w;
    world_load(&w, "sn,cpu_milli,memory_mib,gpu\nn0,64000,262144,2\n",
               "name,queue,submit_s,duration_s,gpu\nb1,b,0,1000,1\nb2,b,0,1000,1\n"
               "a1,a,100,100,1\nb3,b,100,100,1\n",
               yaml);
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    assert_int_equal(w.run.evictions, 1);
    assert_int_equal(w.run.jobs[2].first_start_ms, 110000);
    assert_true(w.run.idle_fit.gpu_ms > 0); /* b3, while a1 waits for b2's room */
    assert_int_equal(w.run.idle_fit_admissible.gpu_ms, 0);
    world_free(&w);
}

static void test_idle_while_fits_lending_limit(void **state)
{
    (void)state;
    /* One node of 8 GPUs; a is guaranteed all 8 but lends only 4 of them
     * and wants none; b (no guarantee) submits 8 one-GPU pods of 100 s at
     * 0 s. 4 run, 4 wait for a's keep (LendingLimit): idle while a pod
     * fits, 4 GPUs x 100 s, but not idle the engine failed to hand out. */
    const char *yaml = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: pa}\n"
                       "spec: {guaranteed: {gpu: 8}, lendingLimit: {gpu: 4}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\n"
                       "spec: {project: pa, guaranteed: {gpu: 8}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: pb}\n"
                       "spec: {}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: b}\n"
                       "spec: {project: pb}\n";
    char jobs[512] = "name,queue,submit_s,duration_s,gpu\n";
    for (int i = 0; i < 8; i++) {
        size_t len = strlen(jobs);
        snprintf(jobs + len, sizeof jobs - len, "b%d,b,0,100,1\n", i);
    }
    struct world w;
    world_load(&w, "sn,cpu_milli,memory_mib,gpu\nn0,64000,262144,8\n", jobs, yaml);
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    assert_int_equal(w.run.end_ms, 200000);
    assert_int_equal(w.run.idle_fit.gpu_ms, 4000LL * 100000);
    assert_int_equal(w.run.idle_fit_admissible.gpu_ms, 0);
    world_free(&w);
}

static void test_idle_while_fits(void **state)
{
    (void)state;
    /* One node of 8 GPUs; queue a may use 4 (limit = guarantee, a static
     * partition). Two 4-GPU pods at 0 s: one runs, the other waits for
     * the limit until the first ends at 100 s, while 4 GPUs it fits sit
     * idle: 4 GPUs x 100 s, one episode of 100 s. The engine held it for
     * a limit, so the "admissible" figure is 0. */
    const char *yaml = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p}\n"
                       "spec: {guaranteed: {gpu: 8}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\n"
                       "spec: {project: p, guaranteed: {gpu: 4}, limit: {gpu: 4}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: b}\n"
                       "spec: {project: p, guaranteed: {gpu: 4}, limit: {gpu: 4}}\n";
    struct world w;
    world_load(&w, "sn,cpu_milli,memory_mib,gpu\nn0,64000,262144,8\n",
               "name,queue,submit_s,duration_s,gpu\np1,a,0,100,4\np2,a,0,100,4\n", yaml);
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    assert_int_equal(w.run.end_ms, 200000);
    assert_int_equal(w.run.idle_fit.gpu_ms, 4000LL * 100000);
    assert_int_equal(w.run.idle_fit.episodes, 1);
    assert_int_equal(w.run.idle_fit.longest_ms, 100000);
    assert_int_equal(w.run.idle_fit_admissible.gpu_ms, 0);
    assert_int_equal(w.run.idle_fit_admissible.episodes, 0);
    /* Queue a is owed its guarantee twice, for no time: at 0 s and at
     * 100 s (p1 ended, p2 waits), each time until the cycle at the same
     * instant. */
    assert_int_equal(w.run.qstats[0].ttg.n, 2);
    assert_int_equal(w.run.qstats[0].ttg.max_ms, 0);
    assert_int_equal(w.run.qstats[0].demand_ge_guar_ms, 200000);
    world_free(&w);
}

static void test_gang_jobs(void **state)
{
    (void)state;
    /* One node of 8 GPUs. j (4 GPUs, 0-50 s) runs first; g, two 4-GPU
     * pods arriving at 1 s, must start together: it waits for j to end
     * and starts at 50 s, ending at 80 s. While it waits, 4 GPUs are free
     * and each of its pods would fit them alone, but the job does not:
     * nothing counts as idle while a pod fits. */
    struct world w;
    world_load(&w, "sn,cpu_milli,memory_mib,gpu\nn0,64000,262144,8\n",
               "name,queue,submit_s,duration_s,gpu,pods\nj,q,0,50,4,\ng,q,1,30,4,2\n", NULL);
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    assert_int_equal(w.run.njobs, 2);
    const struct fair_sim_jobrec *g = job_named(&w, "g");
    assert_int_equal(g->pods, 2);
    assert_int_equal(g->gpu_milli, 8000);
    assert_int_equal(g->submit_ms, 1000);
    assert_int_equal(g->first_start_ms, 50000);
    assert_int_equal(g->end_ms, 80000);
    assert_int_equal(g->used_gpu_ms, 8000LL * 30000);
    const struct fair_sim_qstats *q = &w.run.qstats[0];
    assert_int_equal(q->jobs, 2);
    assert_int_equal(q->completed, 2);
    assert_int_equal(q->wait.max_ms, 49000);
    assert_int_equal(q->jct.max_ms, 79000);
    assert_int_equal(w.run.idle_fit.gpu_ms, 0);
    world_free(&w);

    /* Eviction of a gang: team-a's two 8-GPU pods borrow team-b's
     * guarantee; at 20 s team-b wants 8 GPUs back. One pod is evicted,
     * and the job stops whole: both pods lose 20 s; it waits until b1 ends
     * at 80 s and runs 100 s again. */
    world_load(&w, nodes_2x8,
               "name,queue,submit_s,duration_s,gpu,pods\nga,team-a,0,100,8,2\n"
               "b1,team-b,20,50,8,\n",
               read_fixture("projects.yaml"));
    world_run(&w, &o);
    const struct fair_sim_jobrec *ga = job_named(&w, "ga");
    assert_int_equal(ga->restarts, 1);
    assert_int_equal(ga->lost_gpu_ms, 2 * 8000LL * 20000);
    assert_int_equal(ga->first_start_ms, 0);
    assert_int_equal(ga->end_ms, 180000);
    assert_int_equal(ga->used_gpu_ms, 2 * 8000LL * 120000);
    assert_int_equal(w.run.qstats[0].preemptions, 1);
    assert_int_equal(job_named(&w, "b1")->first_start_ms, 30000);
    world_free(&w);
}

static void test_unrunnable_jobs(void **state)
{
    (void)state;
    /* On 2 x 8 GPUs, with team-a limited to 8 GPUs and team-b guaranteeing
     * 4: huge (16 GPUs in one pod) fits no node; wide (3 pods of 8 GPUs)
     * fits no empty cluster either; greedy (team-a, 2 pods of 8) asks
     * more than team-a's limit; np (team-b, 8 GPUs, not preemptible)
     * more than team-b's guarantee. They are left out; ok runs. */
    const char *yaml = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p}\n"
                       "spec: {guaranteed: {gpu: 16}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\n"
                       "spec: {project: p, guaranteed: {gpu: 8}, limit: {gpu: 8}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-b}\n"
                       "spec: {project: p, guaranteed: {gpu: 4}}\n";
    struct world w;
    world_load(&w, nodes_2x8,
               "name,queue,submit_s,duration_s,gpu,preemptible,pods\n"
               "huge,team-a,0,10,16,,\nwide,team-b,0,10,8,,3\ngreedy,team-a,0,10,8,,2\n"
               "np,team-b,0,10,8,false,\nok,team-a,5,10,8,,\n",
               yaml);
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    assert_int_equal(job_named(&w, "huge")->status, FAIR_SIM_JOB_NO_NODE);
    assert_int_equal(job_named(&w, "wide")->status, FAIR_SIM_JOB_NO_NODE);
    assert_int_equal(job_named(&w, "greedy")->status, FAIR_SIM_JOB_OVER_LIMIT);
    assert_int_equal(job_named(&w, "np")->status, FAIR_SIM_JOB_OVER_GUARANTEE);
    assert_int_equal(job_named(&w, "ok")->status, FAIR_SIM_JOB_COMPLETED);
    assert_int_equal(job_named(&w, "huge")->first_start_ms, -1);
    assert_int_equal(w.run.qstats[0].jobs, 3);
    assert_int_equal(w.run.qstats[0].unrunnable, 2);
    assert_int_equal(w.run.qstats[0].never_started, 0);
    assert_int_equal(w.run.qstats[1].unrunnable, 2);
    assert_int_equal(w.run.qstats[2].unrunnable, 4);
    assert_int_equal(w.run.qstats[2].started, 1);
    /* They never arrive: ok waits for nothing, and nothing was pending. */
    assert_int_equal(w.run.qstats[0].wait.max_ms, 5000);
    for (size_t i = 0; i < w.run.nsamples; i++)
        assert_int_equal(w.run.samples[i].pending, 0);
    assert_string_equal(fair_sim_job_status_name(FAIR_SIM_JOB_OVER_GUARANTEE), "over-guarantee");
    world_free(&w);
}

static void test_common_window(void **state)
{
    (void)state;
    /* Two runs of different lengths on one window: the shorter one's
     * allocation is spread over the longer span. */
    struct world w;
    world_load(&w, nodes_2x8, jobs_fifo, NULL);
    struct fair_sim_opts o = {0};
    world_run(&w, &o);
    double own = w.run.mean_alloc_ratio;
    assert_int_equal(w.run.window_start_ms, 0);
    assert_int_equal(w.run.window_end_ms, 100000);
    fair_sim_run_window(&w.run, 0, 200000);
    assert_true(fabs(w.run.mean_alloc_ratio - own / 2) < 1e-12);
    assert_true(fabs(w.run.useful_alloc_ratio - own / 2) < 1e-12);
    world_free(&w);
}

static void test_node_holds(void **state)
{
    (void)state;
    /* Queue a (no guarantee) fills both nodes with 1-GPU pods, too young
     * to be reclaimed for 1000 s, and keeps sending more; queue b is owed
     * 8 GPUs from 20 s on. With holds the engine keeps a node for b1: a's
     * new pods go elsewhere, the node drains as a's first pods end (all by
     * 180 s) and b1 starts there; the held node's free GPUs are counted
     * apart and not as idle while a pod fits. The replay passes each hold
     * back with its start, so a 60 s timeout really ends it (then a
     * cooldown): a's new pods refill the node and b1 starts later. */
    const char *yaml = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p}\n"
                       "spec: {guaranteed: {gpu: 16}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: a}\n"
                       "spec: {project: p, reclaimMinRuntime: 1000s}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: b}\n"
                       "spec: {project: p, guaranteed: {gpu: 8}}\n";
    char jobs[8192] = "name,queue,submit_s,duration_s,gpu\nb1,b,20,100,8\n";
    size_t len = strlen(jobs);
    for (int i = 0; i < 16; i++)
        len += (size_t)snprintf(jobs + len, sizeof(jobs) - len, "a%d,a,0,%d,1\n", i, 30 + 10 * i);
    for (int k = 0; k < 40; k++)
        len += (size_t)snprintf(jobs + len, sizeof(jobs) - len, "s%d,a,%d,300,1\n", k, 35 + 10 * k);
    struct world w;
    world_load(&w, nodes_2x8, jobs, yaml);
    int64_t start[3];
    const int64_t timeout[3] = {600000, 0, 60000};
    for (int i = 0; i < 3; i++) {
        struct fair_sim_opts o = {.hold_timeout_ms = timeout[i]};
        world_run(&w, &o);
        start[i] = job_named(&w, "b1")->first_start_ms;
        if (i == 0) {
            assert_true(start[0] > 20000 && start[0] <= 180000);
            assert_true(w.run.held_idle_gpu_ms > 0);
            assert_int_equal(w.run.idle_fit_admissible.gpu_ms, 0);
        } else if (i == 1) {
            assert_int_equal(w.run.held_idle_gpu_ms, 0);
        }
        fair_sim_run_release(&w.run);
    }
    assert_true(start[1] > start[0]);
    assert_true(start[2] > start[0]);
    world_free(&w);
}

/* A whole data file (the bursty traces are larger than read_fixture's
 * buffer); the caller frees it. */
static char *read_data(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/sim/%s", FAIR_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t n = fread(buf, 1, cap - 1, f);
    assert_true(n < cap - 1);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The bursty trace of scripts/gen-bursty.sh (four teams, 250% of their
 * guarantees offered while on, 36 hours): lending loses work to
 * evictions, but no job is evicted more than max_evictions times (one was
 * evicted 4 times with a bound of 3 before the bound held in pass 1), and
 * it still does more useful work than static partitions on the same
 * window (89.3% against 82.0% when written). */
/* ---- Time windows and budgets (issue 15 items 4-5) ---- */

/* The allocation of queue q at the last sample at or before t_ms. */
static int64_t alloc_at(const struct fair_sim_run *r, size_t q, int64_t t_ms)
{
    size_t k = 0;
    for (size_t i = 0; i < r->nsamples && r->samples[i].t_ms <= t_ms; i++)
        k = i;
    return r->qsamples[k * r->nqueues + q].allocated;
}

static void test_schedule_window(void **state)
{
    (void)state;
    /* 16 GPUs, both queues always want 16 one-GPU pods. team-a is
     * guaranteed 4 GPUs, 12 on weekdays 08:00-20:00 (UTC); team-b the
     * rest. The trace starts on Monday 07:00Z: team-a holds 4 until 08:00,
     * then takes 12 (the engine reclaims team-b's pods), and 4 again after
     * 20:00. */
    static const char *yaml =
        "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: a}\n"
        "spec:\n  guaranteed: {gpu: 4}\n  schedule:\n"
        "  - {name: day, days: [Mon, Tue, Wed, Thu, Fri], start: \"08:00\", end: \"20:00\","
        " guaranteed: {gpu: 12}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\n"
        "spec:\n  project: a\n  guaranteed: {gpu: 4}\n  schedule:\n"
        "  - {name: day, days: [Mon, Tue, Wed, Thu, Fri], start: \"08:00\", end: \"20:00\","
        " guaranteed: {gpu: 12}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: b}\n"
        "spec:\n  guaranteed: {gpu: 12}\n  schedule:\n"
        "  - {name: day, days: [Mon, Tue, Wed, Thu, Fri], start: \"08:00\", end: \"20:00\","
        " guaranteed: {gpu: 4}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-b}\n"
        "spec:\n  project: b\n  guaranteed: {gpu: 12}\n  schedule:\n"
        "  - {name: day, days: [Mon, Tue, Wed, Thu, Fri], start: \"08:00\", end: \"20:00\","
        " guaranteed: {gpu: 4}}\n";
    char jobs[4096];
    size_t n =
        (size_t)snprintf(jobs, sizeof jobs, "name,queue,submit_s,duration_s,gpu,cpu,memory\n");
    for (int i = 0; i < 32; i++)
        n += (size_t)snprintf(jobs + n, sizeof jobs - n, "j%d,team-%c,0,86400,1,1,1Gi\n", i,
                              i < 16 ? 'a' : 'b');
    struct world w;
    world_load(&w, nodes_2x8, jobs, yaml);
    struct fair_sim_opts o;
    fair_sim_opts_default(&o);
    o.over_quota_min_runtime_ms = 0;
    o.horizon_ms = 16 * 3600000LL;
    o.start_wall_ms = 1767596400000LL; /* 2026-01-05T07:00:00Z, a Monday */
    world_run(&w, &o);
    const int64_t H = 3600000;
    assert_int_equal(alloc_at(&w.run, 0, H / 2), 4000);
    assert_int_equal(alloc_at(&w.run, 1, H / 2), 12000);
    assert_int_equal(alloc_at(&w.run, 0, 2 * H), 12000);
    assert_int_equal(alloc_at(&w.run, 1, 2 * H), 4000);
    assert_int_equal(alloc_at(&w.run, 0, 14 * H), 4000);
    assert_int_equal(alloc_at(&w.run, 1, 14 * H), 12000);
    /* The guarantee the engine used follows the window too. */
    size_t k = 0;
    for (size_t i = 0; i < w.run.nsamples && w.run.samples[i].t_ms <= 2 * H; i++)
        k = i;
    assert_int_equal(w.run.qsamples[k * 2].guaranteed, 12000);
    assert_int_equal(w.run.evictions, 16); /* 8 at 08:00, 8 at 20:00 */
    /* At the switch itself: the cycle at 08:00:00 evicts team-b's 8 pods,
     * the next one (10 s later) starts team-a's 8 more. */
    int64_t last = 0;
    for (size_t j = 0; j < 16; j++)
        if (w.run.jobs[j].first_start_ms > last)
            last = w.run.jobs[j].first_start_ms;
    assert_int_equal(last, H + 10000);
    world_free(&w);

    /* On a Saturday the window never opens. */
    world_load(&w, nodes_2x8, jobs, yaml);
    o.start_wall_ms += 5 * 86400000LL;
    world_run(&w, &o);
    assert_int_equal(alloc_at(&w.run, 0, 2 * H), 4000);
    assert_int_equal(w.run.evictions, 0);
    world_free(&w);
    /* An unknown zone stops the replay with a message naming it. */
    static const char *bad =
        "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: a}\n"
        "spec:\n  schedule:\n  - {start: \"08:00\", end: \"20:00\", timeZone: "
        "Mars/Olympus, guaranteed: {gpu: 12}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\n"
        "spec: {project: a}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-b}\n"
        "spec: {project: a}\n";
    world_load(&w, nodes_2x8, jobs, bad);
    struct fair_error err = {0};
    assert_int_not_equal(fair_sim_replay(&w.t, &w.c, w.queue_of, &o, &w.run, &err), 0);
    assert_non_null(strstr(err.msg, "Mars/Olympus"));
    world_free(&w);
    /* So does an unknown --time-zone once a budget or window needs it. */
    world_load(&w, nodes_2x8, jobs, yaml);
    snprintf(o.time_zone, sizeof o.time_zone, "%s", "Nowhere/Land");
    assert_int_not_equal(fair_sim_replay(&w.t, &w.c, w.queue_of, &o, &w.run, &err), 0);
    assert_non_null(strstr(err.msg, "Nowhere/Land"));
    world_free(&w);
}

static void test_budget_block(void **state)
{
    (void)state;
    /* Budget of 1 GPU-hour a day, action block. j1 (4 GPUs, 30 min) spends
     * it at 15 min; j2, submitted at 10 min, starts at once; j3, at 20 min,
     * waits for the next day (period from the start's midnight UTC). */
    static const char *yaml =
        "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: a}\n"
        "spec:\n  budget: {gpuHours: 1, period: day, action: block}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: q}\n"
        "spec: {project: a}\n";
    static const char *jobs = "name,queue,submit_s,duration_s,gpu,cpu,memory\n"
                              "j1,q,0,1800,4,1,1Gi\n"
                              "j2,q,600,60,1,1,1Gi\n"
                              "j3,q,1200,60,1,1,1Gi\n";
    struct world w;
    world_load(&w, nodes_2x8, jobs, yaml);
    struct fair_sim_opts o;
    fair_sim_opts_default(&o);
    world_run(&w, &o); /* starts 2026-01-05T00:00:00Z */
    assert_int_equal(w.run.jobs[0].first_start_ms, 0);
    assert_int_equal(w.run.jobs[1].first_start_ms, 600000);
    assert_int_equal(w.run.jobs[2].first_start_ms, 86400000);
    assert_int_equal(w.run.jobs[2].status, FAIR_SIM_JOB_COMPLETED);
    /* The alerts, at the exact instants: 4 GPUs over [0, 600 s), 5 until
     * j2 ends at 660 s (45 GPU-minutes), then 4: 80% (48 GPU-minutes) at
     * 705 s, 100% (60) at 885 s; the next day's 1 GPU-minute none. */
    assert_int_equal(w.run.nalerts, 2);
    assert_int_equal(w.run.alerts[0].level, 80);
    assert_int_equal(w.run.alerts[0].t_ms, 705000);
    assert_int_equal(w.run.alerts[1].level, 100);
    assert_int_equal(w.run.alerts[1].t_ms, 885000);
    assert_int_equal(w.run.alerts[1].project, 0);
    assert_int_equal(w.run.alerts[1].budget_mms, 3600000000LL);
    assert_int_equal(w.run.alerts[1].period_start_wall_ms, o.start_wall_ms);
    /* The samples carry the project's use of its budget: block stops no
     * running pod, so j1 runs on to 2 GPU-hours and j2's minute (5 GPU
     * minutes in all over 4 x 30 min); the next day starts again at 0. */
    int64_t used_max = -1;
    for (size_t i = 0; i < w.run.nsamples; i++) {
        const struct fair_sim_qsample *q = &w.run.qsamples[i * w.run.nqueues];
        assert_true(q->budget_used >= 0 && q->budget_used <= 7200000000LL + 60000000LL);
        if (w.run.samples[i].t_ms >= 86400000)
            assert_true(q->budget_used <= 60000000LL);
        assert_int_equal(q->window, -2);
        if (q->budget_used > used_max)
            used_max = q->budget_used;
    }
    assert_true(used_max >= 3600000000LL);
    world_free(&w);

    /* Starting at 23:50 the period ends 10 minutes in: j3 waits only
     * until then. */
    world_load(&w, nodes_2x8, jobs, yaml);
    o.start_wall_ms += 86400000LL - 600000;
    world_run(&w, &o);
    assert_int_equal(w.run.jobs[2].first_start_ms, 1200000);
    world_free(&w);
}

/* The report answers what-ifs with a budget and with a schedule: the
 * HTML names each window with the time it was in force and each alert in
 * the controller's words; queues.csv and timequota.csv carry the window
 * and the budget columns. */
static void test_timequota_report(void **state)
{
    (void)state;
    static const char *yaml =
        "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: a}\n"
        "spec:\n  guaranteed: {gpu: 4}\n  budget: {gpuHours: 10, period: day, action: "
        "overQuotaOnly}\n  schedule:\n"
        "  - {name: office-hours, days: [Mon, Tue, Wed, Thu, Fri], start: \"08:00\", end: "
        "\"20:00\", guaranteed: {gpu: 12}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\n"
        "spec: {project: a}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: b}\n"
        "spec: {guaranteed: {gpu: 12}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-b}\n"
        "spec: {project: b}\n";
    static const char *jobs = "name,queue,submit_s,duration_s,gpu,cpu,memory\n"
                              "j1,team-a,0,86400,4,1,1Gi\n"
                              "j2,team-b,0,86400,1,1,1Gi\n";
    struct world w;
    world_load(&w, nodes_2x8, jobs, yaml);
    struct fair_sim_opts o;
    fair_sim_opts_default(&o);
    o.horizon_ms = 16 * 3600000LL;
    o.start_wall_ms = 1767596400000LL; /* 2026-01-05T07:00:00Z, a Monday */
    world_run(&w, &o);
    /* 4 GPUs from 07:00: 8 GPU-hours (80%) at 09:00, 10 at 09:30. */
    assert_int_equal(w.run.nalerts, 2);
    assert_int_equal(w.run.alerts[0].t_ms, 2 * 3600000LL);
    assert_int_equal(w.run.alerts[1].t_ms, 2 * 3600000LL + 1800000);
    /* The window: the spec until 08:00, office-hours until 20:00, then the
     * spec; the project's switches only (the queue has no schedule). */
    assert_int_equal(w.run.nswitches, 3);
    assert_int_equal(w.run.switches[0].window, -1);
    assert_int_equal(w.run.switches[1].window, 0);
    assert_int_equal(w.run.switches[1].t_ms, 3600000LL);
    assert_int_equal(w.run.switches[1].project, 0);
    assert_int_equal(w.run.switches[1].queue, -1);
    assert_int_equal(w.run.switches[2].window, -1);
    assert_int_equal(w.run.switches[2].t_ms, 13 * 3600000LL);
    struct fair_sim_labeled l = {"what-if", "teams.yaml", "fairshare", &w.run, &w.c, &w.t};
    struct fair_buf b;
    fair_buf_init(&b, 1 << 24);
    assert_int_equal(fair_sim_html(&b, "t", &l, 1), 0);
    const char *h = fair_buf_str(&b);
    assert_non_null(strstr(h, "<h2>Time windows and budgets</h2>"));
    /* office-hours: 12 of the 16 hours in force (75%), entered once. */
    assert_non_null(strstr(h, "Project a</td><td style=\"text-align:left\">office-hours</td>"
                              "<td>12.0 h</td><td>75.0%</td><td>1</td>"));
    assert_non_null(strstr(h, "(spec: no window)</td><td>4.0 h</td><td>25.0%</td><td>2</td>"));
    assert_non_null(strstr(h, "project a used 80% of its 10.0 GPU-hour budget for this day; at "
                              "100% it is enforced"));
    assert_non_null(strstr(h, "<td>2026-01-05T09:00:00Z</td>"));
    assert_non_null(strstr(h, "project a used 100% of its 10.0 GPU-hour budget for this day; "
                              "action overQuotaOnly: it borrows nothing until the period ends"));
    fair_buf_release(&b);
    fair_buf_init(&b, 1 << 24);
    assert_int_equal(fair_sim_csv_timequota(&b, &l, 1), 0);
    h = fair_buf_str(&b);
    assert_non_null(
        strstr(h, "what-if,3600.000,2026-01-05T08:00:00Z,window,a,,office-hours,,,,\n"));
    assert_non_null(strstr(h, "what-if,7200.000,2026-01-05T09:00:00Z,budget,a,,,80,10.000,day,"
                              "2026-01-05T00:00:00Z\n"));
    fair_buf_release(&b);
    fair_buf_init(&b, 1 << 24);
    assert_int_equal(fair_sim_csv_queues(&b, &l, 1), 0);
    h = fair_buf_str(&b);
    assert_non_null(strstr(h, ",window,project_window,budget_used_gpu_h,budget_remaining_gpu_h\n"));
    /* team-a's rows: no window of its own, its project's window, and
     * the project's budget (10 GPU-hours, spent by 09:30 at 4 GPUs). */
    assert_non_null(strstr(h, ",,office-hours,"));
    assert_non_null(strstr(h, ",,(spec),"));
    assert_non_null(strstr(h, ",,(spec),0.000,10.000\n"));
    assert_non_null(strstr(h, ",,office-hours,10.000,0.000\n"));
    fair_buf_release(&b);
    world_free(&w);
}

/* Decayed usage among a project's queues (issue 15): qa runs 16 GPUs
 * alone from 0 to 3 h; when qb wants 16 too at 2 h, qb (no usage) gets
 * 4/5 of the project's 16 GPUs as its fair share and qa 1/5 (weight x
 * 2^(-U/S) = 1/4 against 1), where weights alone split 8/8. (The replay
 * counts the pods running at each cycle: qa's usage is the 2 hours
 * between the cycles at 0 and at 2 h.) */
static void test_queue_usage_decay(void **state)
{
    (void)state;
    static const char *yaml =
        "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p}\n"
        "spec: {usageHalfLife: 1h}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: qa}\n"
        "spec: {project: p}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: qb}\n"
        "spec: {project: p}\n";
    char jobs[8192];
    size_t n =
        (size_t)snprintf(jobs, sizeof jobs, "name,queue,submit_s,duration_s,gpu,cpu,memory\n");
    for (int i = 0; i < 16; i++)
        n += (size_t)snprintf(jobs + n, sizeof jobs - n, "a%d,qa,0,10800,1,1,1Gi\n", i);
    for (int i = 0; i < 16; i++)
        n += (size_t)snprintf(jobs + n, sizeof jobs - n, "b%d,qb,7200,3600,1,1,1Gi\n", i);
    for (int run = 0; run < 2; run++) {
        struct world w;
        world_load(&w, nodes_2x8, jobs,
                   run ? yaml
                       : "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: "
                         "p}\nspec: {usageHalfLife: \"0\"}\n---\n"
                         "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: "
                         "qa}\nspec: {project: p}\n---\n"
                         "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: "
                         "qb}\nspec: {project: p}\n");
        struct fair_sim_opts o;
        fair_sim_opts_default(&o);
        o.horizon_ms = 3 * 3600000LL;
        world_run(&w, &o);
        size_t k = 0;
        for (size_t i = 0; i < w.run.nsamples && w.run.samples[i].t_ms <= 7200000 + 60000; i++)
            k = i;
        assert_true(w.run.samples[k].t_ms > 7200000);
        int64_t fa = w.run.qsamples[k * 2].fair_share, fb = w.run.qsamples[k * 2 + 1].fair_share;
        if (run == 0) {
            assert_int_equal(fa, 8000);
            assert_int_equal(fb, 8000);
        } else {
            /* 3200/12800 at 2 h; qb's own usage since then moves it a
             * little by the sample. */
            assert_true(fa >= 3200 && fa < 3500);
            assert_int_equal(fa + fb, 16000);
        }
        world_free(&w);
    }
}

static void test_bursty_lending_pays(void **state)
{
    (void)state;
    char *nodes = read_data("nodes_16x8.csv"), *jobs = read_data("bursty4_heavy_jobs.csv");
    const char *cfg[2] = {"bursty4_static.yaml", "bursty4_lending.yaml"};
    int64_t useful[2];
    for (int i = 0; i < 2; i++) {
        char *yaml = read_data(cfg[i]);
        struct world w;
        world_load(&w, nodes, jobs, yaml);
        struct fair_sim_opts o;
        fair_sim_opts_default(&o);
        o.horizon_ms = 36 * 3600000LL;
        world_run(&w, &o);
        const struct fair_sim_qstats *tot = &w.run.qstats[w.run.nqueues];
        useful[i] = tot->used_gpu_ms - tot->lost_gpu_ms;
        assert_true(tot->max_restarts <= o.max_evictions);
        if (i == 0)
            assert_int_equal(w.run.evictions, 0);
        else
            assert_true(w.run.evictions > 0 && tot->lost_gpu_ms > 0);
        world_free(&w);
        free(yaml);
    }
    assert_true(useful[1] > useful[0]);
    free(nodes);
    free(jobs);
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
        cmocka_unit_test(test_lost_work_and_checkpoints),
        cmocka_unit_test(test_declared_runtime_lending),
        cmocka_unit_test(test_guarantee_figures),
        cmocka_unit_test(test_idle_while_fits),
        cmocka_unit_test(test_idle_while_fits_tenancy),
        cmocka_unit_test(test_idle_while_fits_reclaim),
        cmocka_unit_test(test_idle_while_fits_lending_limit),
        cmocka_unit_test(test_gang_jobs),
        cmocka_unit_test(test_unrunnable_jobs),
        cmocka_unit_test(test_common_window),
        cmocka_unit_test(test_node_holds),
        cmocka_unit_test(test_bursty_lending_pays),
        cmocka_unit_test(test_schedule_window),
        cmocka_unit_test(test_budget_block),
        cmocka_unit_test(test_timequota_report),
        cmocka_unit_test(test_queue_usage_decay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
