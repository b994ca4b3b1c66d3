/* The simulator's Project/Queue config: manifests as admins write them,
 * errors that name the object, the default config, the queue-assignment
 * rule, and the CSV/HTML reports built from a hand-made run. */
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
#include "sim/metrics.h"
#include "sim/replay.h"
#include "sim/report.h"

/* issue 15: the bundled what-if files carry their model quotas and
 * lending limits into the engine's quotas. */
static void test_models_and_lending(void **state)
{
    (void)state;
    struct fair_sim_config c;
    struct fair_error err = {0};
    fair_sim_config_init(&c);
    if (fair_sim_config_load(&c, FAIR_TEST_DATA_DIR "/sim/bursty4_models.yaml", &err))
        fail_msg("%s", err.msg);
    assert_int_equal(c.nqueues, 4);
    assert_string_equal(c.queues[0].q.name, "day");
    assert_int_equal(c.queues[0].q.nmodels, 1);
    assert_string_equal(c.queues[0].q.models[0].model, "H100");
    assert_int_equal(c.queues[0].q.models[0].guaranteed, 32000);
    assert_int_equal(c.projects[1].q.nmodels, 1);
    assert_string_equal(c.projects[1].q.models[0].model, "A100");
    assert_int_equal(c.queues[2].q.nmodels, 0);
    assert_null(c.queues[2].q.models);
    fair_sim_config_release(&c);
    fair_sim_config_init(&c);
    if (fair_sim_config_load(&c, FAIR_TEST_DATA_DIR "/sim/bursty4_keep_half.yaml", &err))
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < c.nqueues; i++) {
        assert_int_equal(c.queues[i].q.lending_set, 1u << FAIR_RES_GPU);
        assert_int_equal(c.queues[i].q.lending_limit.v[FAIR_RES_GPU], 16000);
        assert_int_equal(c.projects[i].q.lending_limit.v[FAIR_RES_GPU], 16000);
    }
    fair_sim_config_release(&c);
}

static void test_load_file(void **state)
{
    (void)state;
    struct fair_sim_config c;
    struct fair_error err = {0};
    fair_sim_config_init(&c);
    int rc = fair_sim_config_load(&c, FAIR_TEST_DATA_DIR "/sim/projects.yaml", &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(c.nprojects, 2);
    assert_int_equal(c.nqueues, 2);
    assert_string_equal(c.projects[0].q.name, "research");
    assert_string_equal(c.projects[1].q.name, "product");
    assert_int_equal(c.projects[1].q.guaranteed.v[FAIR_RES_GPU], 8000);
    assert_string_equal(c.queues[1].q.name, "team-b");
    assert_int_equal(c.queues[1].project, 1);
    assert_string_equal(c.queues[1].project_name, "product");
    assert_int_equal(c.queues[0].q.guaranteed.v[FAIR_RES_GPU], 8000);
    assert_true(c.queues[0].q.limit.v[FAIR_RES_GPU] == FAIR_UNLIMITED);
    assert_int_equal(c.queues[0].q.over_quota_weight, 1);
    assert_int_equal(fair_sim_config_queue(&c, "team-b"), 1);
    assert_int_equal(fair_sim_config_queue(&c, "nope"), -1);
    fair_sim_config_release(&c);
}

static const char *P = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p}\n"
                       "spec: {guaranteed: {gpu: 4}}\n---\n";

struct bad {
    const char *yaml;
    const char *message;
};

static void test_errors(void **state)
{
    (void)state;
    char buf[6][512];
    snprintf(buf[0], sizeof(buf[0]), "%.*s", (int)(strlen(P) - 4), P); /* without "---" */
    snprintf(buf[1], sizeof(buf[1]),
             "%sapiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: q}\n"
             "spec: {project: other}\n",
             P);
    snprintf(buf[2], sizeof(buf[2]),
             "%sapiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: q}\n"
             "spec: {project: p}\n---\napiVersion: fairshare.dev/v1alpha1\nkind: Queue\n"
             "metadata: {name: q}\nspec: {project: p}\n",
             P);
    snprintf(buf[3], sizeof(buf[3]), "%sapiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", P);
    snprintf(buf[4], sizeof(buf[4]),
             "%sapiVersion: fairshare.dev/v1alpha1\nkind: Deployment\nmetadata: {name: x}\n", P);
    snprintf(buf[5], sizeof(buf[5]),
             "%sapiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: q}\n"
             "spec: {project: p, guaranteed: {gpu: lots}}\n",
             P);
    const struct bad cases[] = {
        {buf[0], "t.yaml: no Queue: define at least one"},
        {P, "t.yaml: no Queue: define at least one"},
        {buf[1], "t.yaml: Queue q: spec.project \"other\" is not a Project of this file"},
        {buf[2], "t.yaml: Queue q is defined twice"},
        {buf[3], "t.yaml: document 2: apiVersion must be fairshare.dev/v1alpha1"},
        {buf[4], "t.yaml: document 2: kind must be Project or Queue, not Deployment"},
        {buf[5], "t.yaml: Queue q: "},
        {"a: [unclosed\n", "t.yaml:"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fair_sim_config c;
        struct fair_error err = {0};
        fair_sim_config_init(&c);
        int rc = fair_sim_config_parse(&c, "t.yaml", cases[i].yaml, strlen(cases[i].yaml), &err);
        if (rc >= 0 || strstr(err.msg, cases[i].message) != err.msg)
            fail_msg("case %zu: rc=%d msg=\"%s\", expected \"%s\"", i, rc, err.msg,
                     cases[i].message);
        fair_sim_config_release(&c);
    }
}

static void test_default_and_assign(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    struct fair_sim_config c;
    struct fair_error err = {0};
    int32_t *map = NULL;
    fair_sim_trace_init(&t);
    assert_int_equal(
        fair_sim_trace_load_nodes(&t, FAIR_TEST_DATA_DIR "/sim/nodes_2x8_plain.csv", NULL, &err),
        0);
    assert_int_equal(
        fair_sim_trace_load_jobs(&t, FAIR_TEST_DATA_DIR "/sim/jobs_2x8.csv", NULL, &err), 0);
    /* Simple job list, no projects file: one queue per CSV queue. */
    fair_sim_config_init(&c);
    assert_int_equal(fair_sim_config_default(&c, &t, &err), 0);
    assert_int_equal(c.nprojects, 1);
    assert_int_equal(c.nqueues, 2);
    assert_string_equal(c.queues[0].q.name, "team-a");
    assert_string_equal(c.queues[1].q.name, "team-b");
    assert_int_equal(c.queues[0].q.guaranteed.v[FAIR_RES_GPU], 8000);
    assert_int_equal(c.queues[1].q.guaranteed.v[FAIR_RES_GPU], 8000);
    assert_int_equal(c.projects[0].q.guaranteed.v[FAIR_RES_GPU], 16000);
    assert_int_equal(fair_sim_config_assign(&c, &t, &map, &err), 0);
    /* jobs sorted by submit: a1 a2 b1 b2 a3 */
    const int32_t want[] = {0, 0, 1, 1, 0};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(map[i], want[i]);
    fair_free(map);
    fair_sim_config_release(&c);

    /* A projects file without the CSV's queue: an error naming the job. */
    const char *y = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p}\n"
                    "---\napiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: "
                    "team-a}\nspec: {project: p}\n";
    fair_sim_config_init(&c);
    assert_int_equal(fair_sim_config_parse(&c, "t.yaml", y, strlen(y), &err), 0);
    assert_int_equal(c.queues[0].aging_half_life_ms, 0); /* off unless set */
    assert_int_equal(fair_sim_config_assign(&c, &t, &map, &err), FAIR_EINVAL);
    assert_null(map);
    fair_sim_config_release(&c);
    /* agingHalfLife reaches the engine's queue. */
    const char *ya = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p}\n"
                     "---\napiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: "
                     "team-a}\nspec: {project: p, agingHalfLife: 30m}\n";
    fair_sim_config_init(&c);
    assert_int_equal(fair_sim_config_parse(&c, "t.yaml", ya, strlen(ya), &err), 0);
    assert_int_equal(c.queues[0].aging_half_life_ms, 1800000);
    assert_int_equal(fair_sim_config_assign(&c, &t, &map, &err), FAIR_EINVAL);
    assert_string_equal(err.msg,
                        "job b1 (line 4): queue \"team-b\" is not a Queue of the projects file");
    assert_null(map);
    fair_sim_config_release(&c);
    fair_sim_trace_release(&t);

    /* openb trace: FNV-1a of the pod name modulo the number of queues. */
    fair_sim_trace_init(&t);
    assert_int_equal(
        fair_sim_trace_load_jobs(&t, FAIR_TEST_DATA_DIR "/sim/pods_openb.csv", NULL, &err), 0);
    fair_sim_config_init(&c);
    assert_int_equal(fair_sim_config_load(&c, FAIR_TEST_DATA_DIR "/sim/projects.yaml", &err), 0);
    assert_int_equal(fair_sim_config_assign(&c, &t, &map, &err), 0);
    for (size_t i = 0; i < t.njobs; i++)
        assert_int_equal(map[i], (int32_t)(fair_sim_hash(t.jobs[i].name) % 2));
    /* Spelled out (computed independently), so that the rule cannot drift. */
    const int32_t want_openb[] = {0, 0, 1, 1, 1} /* pod-1 pod-3 pod-0 pod-2 pod-4 */;
    for (size_t i = 0; i < t.njobs; i++)
        assert_int_equal(map[i], want_openb[i]);
    fair_free(map);
    fair_sim_config_release(&c);
    /* No projects file with an openb trace: one queue "default". */
    fair_sim_config_init(&c);
    assert_int_equal(fair_sim_config_default(&c, &t, &err), 0);
    assert_int_equal(c.nqueues, 1);
    assert_string_equal(c.queues[0].q.name, "default");
    fair_sim_config_release(&c);
    fair_sim_trace_release(&t);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_reclaim_up_to(void **state)
{
    (void)state;
    /* q1 says Guarantee; q2 says nothing, its project p2 says FairShare;
     * q3 and its project say nothing: the default, which the caller sets. */
    const char *yaml = "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p1}\n"
                       "spec: {guaranteed: {gpu: 4}}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: p2}\n"
                       "spec: {guaranteed: {gpu: 4}, reclaimUpTo: FairShare}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: q1}\n"
                       "spec: {project: p1, reclaimUpTo: Guarantee}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: q2}\n"
                       "spec: {project: p2}\n---\n"
                       "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: q3}\n"
                       "spec: {project: p1}\n";
    struct fair_sim_config c;
    struct fair_error err = {0};
    fair_sim_config_init(&c);
    if (fair_sim_config_parse(&c, "p.yaml", yaml, strlen(yaml), &err))
        fail_msg("%s", err.msg);
    assert_int_equal(c.queues[0].reclaim_up_to, FAIR_RECLAIM_GUARANTEE);
    assert_int_equal(c.queues[1].reclaim_up_to, FAIR_RECLAIM_FAIR_SHARE);
    assert_int_equal(c.queues[2].reclaim_up_to, FAIR_RECLAIM_FAIR_SHARE);
    fair_sim_config_reclaim_default(&c, FAIR_RECLAIM_GUARANTEE);
    assert_int_equal(c.queues[0].reclaim_up_to, FAIR_RECLAIM_GUARANTEE);
    assert_int_equal(c.queues[1].reclaim_up_to, FAIR_RECLAIM_FAIR_SHARE);
    assert_int_equal(c.queues[2].reclaim_up_to, FAIR_RECLAIM_GUARANTEE);
    fair_sim_config_release(&c);
}

static void test_formats(void **state)
{
    (void)state;
    char b[64];
    /* Thousands apart, never an exponent, never "-0". */
    assert_string_equal(fair_sim_fmt_num(b, sizeof(b), 1110, 0), "1,110");
    assert_string_equal(fair_sim_fmt_num(b, sizeof(b), 1234567.891, 2), "1,234,567.89");
    assert_string_equal(fair_sim_fmt_num(b, sizeof(b), 999.5, 0), "1,000");
    assert_string_equal(fair_sim_fmt_num(b, sizeof(b), 0.5, 1), "0.5");
    assert_string_equal(fair_sim_fmt_num(b, sizeof(b), -0.001, 1), "0.0");
    assert_string_equal(fair_sim_fmt_num(b, sizeof(b), -0.0, 0), "0");
    assert_string_equal(fair_sim_fmt_num(b, sizeof(b), -72522.4, 0), "-72,522");
    assert_string_equal(fair_sim_fmt_num(b, sizeof(b), 100, 0), "100");
    /* Durations in the unit their size reads best in. */
    assert_string_equal(fair_sim_fmt_duration(b, sizeof(b), -1), "-");
    assert_string_equal(fair_sim_fmt_duration(b, sizeof(b), 0), "0 s");
    assert_string_equal(fair_sim_fmt_duration(b, sizeof(b), 2500), "2.5 s");
    assert_string_equal(fair_sim_fmt_duration(b, sizeof(b), 45000), "45 s");
    assert_string_equal(fair_sim_fmt_duration(b, sizeof(b), 119000), "119 s");
    assert_string_equal(fair_sim_fmt_duration(b, sizeof(b), 120000), "2.0 min");
    assert_string_equal(fair_sim_fmt_duration(b, sizeof(b), 35940000), "10.0 h");
    assert_string_equal(fair_sim_fmt_duration(b, sizeof(b), 55 * 3600000LL), "55.0 h");
    assert_string_equal(fair_sim_fmt_duration(b, sizeof(b), 4000LL * 3600000), "166.7 d");
}

static void test_reports(void **state)
{
    (void)state;
    /* A hand-made run: 2 samples, 2 queues, 3 jobs (one of them a 2-pod
     * job, one left out). */
    struct fair_sim_config c;
    struct fair_sim_trace t;
    struct fair_error err = {0};
    fair_sim_config_init(&c);
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_config_load(&c, FAIR_TEST_DATA_DIR "/sim/projects.yaml", &err), 0);
    const char *nodes = "sn,cpu_milli,memory_mib,gpu\nn0,64000,262144,8\n";
    const char *jobs = "name,queue,submit_s,duration_s,gpu,pods\na,team-a,0,50,8,\n"
                       "g,team-b,0,60,4,2\nhuge,team-a,0,1,16,\n";
    assert_int_equal(fair_sim_trace_parse_nodes(&t, "n", nodes, strlen(nodes), NULL, &err), 0);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "j", jobs, strlen(jobs), NULL, &err), 0);
    struct fair_sim_sample samples[2] = {{0, 8000, 0, 1, 0}, {60000, 16000, 4000, 3, 1}};
    struct fair_sim_qsample qs[4] = {
        {.allocated = 8000, .fair_share = 16000, .guaranteed = 8000, .demand = 8000, .running = 1},
        {.guaranteed = 8000},
        {.allocated = 8000,
         .fair_share = 8000,
         .guaranteed = 8000,
         .demand = 12000,
         .running = 1,
         .pending = 1},
        {.allocated = 8000, .fair_share = 8000, .guaranteed = 8000, .demand = 8000, .running = 2},
    };
    int64_t w[3] = {0, 70000, 70000};
    struct fair_sim_qstats st[3] = {
        {.jobs = 3,
         .started = 3,
         .completed = 2,
         .preemptions = 1,
         .max_restarts = 1,
         .lost_gpu_ms = 8000LL * 20000,
         .used_gpu_ms = 8000LL * 3600000,
         .guaranteed = 8000,
         .demand_ge_guar_ms = 30000,
         .guar_delivered_gpu_ms = 8000LL * 15000,
         .guar_owed_gpu_ms = 8000LL * 30000,
         .ttg_unfinished = 1},
        {.jobs = 2, .started = 2, .completed = 2},
        {.jobs = 5,
         .started = 5,
         .completed = 4,
         .unrunnable = 1,
         .preemptions = 1,
         .max_restarts = 1,
         .lost_gpu_ms = 8000LL * 20000,
         .used_gpu_ms = 8000LL * 3600000},
    };
    fair_sim_dist_of(w, 3, &st[0].wait);
    fair_sim_dist_of(w, 0, &st[0].jct);
    fair_sim_dist_of(w, 0, &st[1].wait);
    fair_sim_dist_of(w, 0, &st[1].jct);
    fair_sim_dist_of(w, 3, &st[2].wait);
    fair_sim_dist_of(w, 1, &st[2].jct);
    fair_sim_dist_of(w, 0, &st[0].ttg);
    fair_sim_dist_of(w, 0, &st[1].ttg);
    fair_sim_dist_of(w, 0, &st[2].ttg);
    int64_t ttg[2] = {10000, 20000};
    fair_sim_dist_of(ttg, 2, &st[0].ttg);
    struct fair_sim_jobrec recs[3] = {
        {.first = 0,
         .pods = 1,
         .queue = 0,
         .status = FAIR_SIM_JOB_COMPLETED,
         .gpu_milli = 8000,
         .submit_ms = 0,
         .first_start_ms = 0,
         .end_ms = 70000,
         .restarts = 1,
         .used_gpu_ms = 8000LL * 70000,
         .lost_gpu_ms = 8000LL * 20000},
        {.first = 1,
         .pods = 2,
         .queue = 1,
         .status = FAIR_SIM_JOB_RUNNING,
         .gpu_milli = 8000,
         .submit_ms = 0,
         .first_start_ms = 10000,
         .end_ms = -1,
         .used_gpu_ms = 8000LL * 50000},
        {.first = 3,
         .pods = 1,
         .queue = 0,
         .status = FAIR_SIM_JOB_NO_NODE,
         .gpu_milli = 16000,
         .first_start_ms = -1,
         .end_ms = -1},
    };
    struct fair_sim_run run = {
        .nqueues = 2,
        .samples = samples,
        .nsamples = 2,
        .qsamples = qs,
        .qstats = st,
        .jobs = recs,
        .njobs = 3,
        .gpu_capacity = 16000,
        .start_ms = 0,
        .end_ms = 60000,
        .first_fail_ms = 30000,
        .first_fail_unallocated = 500,
        .idle_fit = {.gpu_ms = 1000LL * 3600000, .episodes = 2, .longest_ms = 1800000},
        .idle_fit_admissible = {.gpu_ms = 0},
        .held_idle_gpu_ms = 250LL * 3600000,
        .peak_alloc_ratio = 1.0,
        .cycles = 4,
        .evictions = 1};
    /* Over a window of 10 h: 8 GPU-h used of 160 GPU-h. */
    fair_sim_opts_default(&run.opts);
    fair_sim_run_window(&run, 0, 36000000);
    assert_true(run.mean_alloc_ratio == 0.05);
    assert_true(fabs(run.useful_alloc_ratio - (8.0 - 8 * 20 / 3600.0) / 160) < 1e-12);
    struct fair_sim_labeled l[2] = {
        {"base", "a.yaml", "fairshare", &run, &c, &t},
        {"compare", "b<.yaml", "fairshare", &run, &c, &t},
    };
    struct fair_buf b;
    fair_buf_init(&b, FAIR_BUF_DEFAULT_MAX);
    assert_int_equal(fair_sim_csv_timeseries(&b, l, 2), 0);
    assert_string_equal(fair_buf_str(&b),
                        "config,t_s,gpu_capacity,gpu_allocated,alloc_ratio,running_pods,"
                        "pending_pods,pending_gpu\n"
                        "base,0.000,16.000,8.000,0.5000,1,0,0.000\n"
                        "base,60.000,16.000,16.000,1.0000,3,1,4.000\n"
                        "compare,0.000,16.000,8.000,0.5000,1,0,0.000\n"
                        "compare,60.000,16.000,16.000,1.0000,3,1,4.000\n");
    fair_buf_reset(&b);
    assert_int_equal(fair_sim_csv_queues(&b, l, 1), 0);
    assert_string_equal(fair_buf_str(&b),
                        "config,t_s,queue,project,allocated_gpu,fair_share_gpu,guaranteed_gpu,"
                        "running_pods,pending_pods,demand_gpu,effective_guaranteed_gpu,"
                        "window,project_window,budget_used_gpu_h,budget_remaining_gpu_h\n"
                        "base,0.000,team-a,research,8.000,16.000,8.000,1,0,8.000,8.000,,,,\n"
                        "base,0.000,team-b,product,0.000,0.000,8.000,0,0,0.000,8.000,,,,\n"
                        "base,60.000,team-a,research,8.000,8.000,8.000,1,1,12.000,8.000,,,,\n"
                        "base,60.000,team-b,product,8.000,8.000,8.000,2,0,8.000,8.000,,,,\n");
    fair_buf_reset(&b);
    assert_int_equal(fair_sim_csv_summary(&b, l, 1), 0);
    assert_string_equal(
        fair_buf_str(&b),
        "config,policy,queue,jobs,started,completed,never_started,unrunnable,wait_mean_s,"
        "wait_p50_s,wait_p95_s,wait_p99_s,wait_max_s,jct_mean_s,jct_p50_s,jct_p95_s,jct_p99_s,"
        "jct_max_s,preemptions,max_restarts,lost_gpu_hours,used_gpu_hours,useful_gpu_hours,"
        "guaranteed_gpu,demand_ge_guarantee_s,guarantee_delivered_ratio,ttg_episodes,"
        "ttg_unfinished,ttg_p50_s,ttg_p95_s,ttg_p99_s,ttg_max_s,mean_alloc_ratio,"
        "useful_alloc_ratio,peak_alloc_ratio,idle_fit_gpu_hours,idle_fit_episodes,"
        "idle_fit_longest_s,idle_fit_admissible_gpu_hours,idle_fit_admissible_episodes,"
        "idle_fit_admissible_longest_s,held_idle_gpu_hours,first_fail_s,"
        "unallocated_gpu_at_first_fail,window_start_s,window_s,duration_s,checkpoint_s,"
        "over_quota_threshold_pct,over_quota_min_runtime_s,max_evictions,node_hold_timeout_s,"
        "cycles,evictions\n"
        "base,fairshare,team-a,3,3,2,0,0,46.667,70.000,70.000,70.000,70.000,,,,,,1,1,0.044,"
        "8.000,7.956,8.000,30.000,0.5000,2,1,10.000,20.000,20.000,20.000"
        ",,,,,,,,,,,,,,,,,,,,,,\n"
        "base,fairshare,team-b,2,2,2,0,0,,,,,,,,,,,0,0,0.000,0.000,0.000,0.000,,,,,,,,"
        ",,,,,,,,,,,,,,,,,,,,,,\n"
        "base,fairshare,*,5,5,4,0,1,46.667,70.000,70.000,70.000,70.000,0.000,0.000,0.000,"
        "0.000,0.000,1,1,0.044,8.000,7.956,0.000,,,,,,,,"
        ",0.0500,0.0497,1.0000,1.000,2,1800.000,0.000,0,0.000,0.250,30.000,0.500,0.000,"
        "36000.000,60.000,0.000,10,60.000,3,600.000,4,1\n");
    /* Every row has as many fields as the header. */
    size_t want = 0;
    const char *csv = fair_buf_str(&b);
    for (const char *p = csv; *p != '\n'; p++)
        want += *p == ',';
    for (const char *line = strchr(csv, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        size_t got = 0;
        for (const char *p = line; *p != '\n'; p++)
            got += *p == ',';
        assert_int_equal(got, want);
    }
    fair_buf_reset(&b);
    assert_int_equal(fair_sim_csv_jobs(&b, l, 1), 0);
    assert_string_equal(fair_buf_str(&b),
                        "config,job,queue,pods,gpu,status,submit_s,first_start_s,end_s,wait_s,"
                        "jct_s,restarts,used_gpu_hours,lost_gpu_hours,useful_gpu_hours\n"
                        "base,a,team-a,1,8.000,completed,0.000,0.000,70.000,0.000,70.000,1,"
                        "0.155556,0.044444,0.111111\n"
                        "base,g,team-b,2,8.000,running,0.000,10.000,,10.000,,0,0.111111,"
                        "0.000000,0.111111\n"
                        "base,huge,team-a,1,16.000,no-node,0.000,,,,,0,0.000000,0.000000,"
                        "0.000000\n");
    fair_buf_reset(&b);
    assert_int_equal(fair_sim_html(&b, "Run <1>", l, 2), 0);
    const char *h = fair_buf_str(&b);
    assert_non_null(strstr(h, "<title>Run &lt;1&gt;</title>"));
    assert_non_null(strstr(h, "b&lt;.yaml"));
    assert_null(strstr(h, "<script"));
    /* Two cluster charts and one per queue. */
    size_t nsvg = 0;
    for (const char *p = h; (p = strstr(p, "<svg")); p++)
        nsvg++;
    assert_int_equal(nsvg, 4);
    assert_non_null(strstr(h, ">queue team-a</text>"));
    /* The headline: allocation next to useful allocation, lost and idle
     * GPU-hours, the longest idle episode in a readable unit. */
    assert_non_null(strstr(h, "<td class=\"big\">5.0%</td><td class=\"big\">5.0%</td>"
                              "<td>0.044</td><td>1.0</td><td>2</td><td>30.0 min</td>"
                              "<td>0.000</td><td>0.250</td><td>1</td><td>1</td>"));
    assert_non_null(strstr(h, "<td>fairshare</td><td>none</td><td>10%, 60 s</td><td>3</td>"
                              "<td>10.0 min</td><td>10.0 h</td><td>100.0%</td><td>30 s</td>"
                              "<td>0.5</td><td>60 s</td>"));
    /* Queue charts carry the guarantee and the demand. */
    assert_non_null(strstr(h, "base guarantee</text>"));
    assert_non_null(strstr(h, "base demand</text>"));
    /* Readable ticks: no exponents, no negative zero. */
    assert_null(strstr(h, "e+"));
    assert_null(strstr(h, ">-0"));
    assert_non_null(strstr(h, ">10 h</text>"));
    /* Waits in a unit that reads well; the job left out is named. */
    assert_non_null(strstr(h, "<td>47 s</td><td>70 s</td>"));
    assert_non_null(strstr(h, "1 job can never run and is left out: huge (no-node)"));
    /* The guarantee table: 50% delivered, two episodes (10 s, 20 s). */
    assert_non_null(strstr(h, "<td>8</td><td>30 s</td><td>50.0%</td><td>2</td><td>10 s</td>"
                              "<td>20 s</td><td>20 s</td><td>20 s</td><td>1</td>"));
    fair_buf_release(&b);
    fair_sim_trace_release(&t);

    struct fair_sim_frag_row rows[1] = {
        {"default", "best-fit", 3, 383.0, 380.5, 385.25, 385.6, 93.8, 425.0, 0.12}};
    fair_buf_init(&b, FAIR_BUF_DEFAULT_MAX);
    assert_int_equal(fair_sim_csv_frag(&b, rows, 1), 0);
    assert_int_equal(count_lines(fair_buf_str(&b)), 2);
    assert_non_null(strstr(fair_buf_str(&b), "\ndefault,best-fit,3,383.0,380.5,385.2,385.6,93.8,"
                                             "425.0,0.12\n"));
    fair_buf_release(&b);
    fair_sim_config_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_file),     cmocka_unit_test(test_models_and_lending),
        cmocka_unit_test(test_errors),        cmocka_unit_test(test_default_and_assign),
        cmocka_unit_test(test_reports),       cmocka_unit_test(test_formats),
        cmocka_unit_test(test_reclaim_up_to),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
