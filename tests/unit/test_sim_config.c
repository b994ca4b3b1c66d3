/* The simulator's Project/Queue config: manifests as admins write them,
 * errors that name the object, the default config, the queue-assignment
 * rule, and the CSV/HTML reports built from a hand-made run. */
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
#include "sim/report.h"

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

static void test_reports(void **state)
{
    (void)state;
    /* A hand-made run: 2 samples, 2 queues. */
    struct fair_sim_config c;
    struct fair_error err = {0};
    fair_sim_config_init(&c);
    assert_int_equal(fair_sim_config_load(&c, FAIR_TEST_DATA_DIR "/sim/projects.yaml", &err), 0);
    struct fair_sim_sample samples[2] = {{0, 8000, 0, 1, 0}, {60000, 16000, 4000, 3, 1}};
    struct fair_sim_qsample qs[4] = {
        {8000, 16000, 1, 0}, {0, 0, 0, 0}, {8000, 8000, 1, 1}, {8000, 8000, 2, 0}};
    struct fair_sim_qstats st[3] = {
        {.jobs = 3,
         .started = 3,
         .completed = 2,
         .wait_p50_ms = 0,
         .wait_p95_ms = 70000,
         .wait_max_ms = 70000,
         .preemptions = 1,
         .lost_gpu_ms = 8000LL * 20000},
        {.jobs = 2,
         .started = 2,
         .completed = 2,
         .wait_p50_ms = 10000,
         .wait_p95_ms = 10000,
         .wait_max_ms = 10000},
        {.jobs = 5,
         .started = 5,
         .completed = 4,
         .wait_p50_ms = 10000,
         .wait_p95_ms = 70000,
         .wait_max_ms = 70000,
         .preemptions = 1,
         .lost_gpu_ms = 8000LL * 20000},
    };
    struct fair_sim_run run = {.nqueues = 2,
                               .samples = samples,
                               .nsamples = 2,
                               .qsamples = qs,
                               .qstats = st,
                               .gpu_capacity = 16000,
                               .start_ms = 0,
                               .end_ms = 60000,
                               .first_fail_ms = 30000,
                               .first_fail_unallocated = 500,
                               .mean_alloc_ratio = 0.75,
                               .peak_alloc_ratio = 1.0,
                               .cycles = 4,
                               .evictions = 1};
    struct fair_sim_labeled l[2] = {
        {"base", "a.yaml", "fairshare", &run, &c},
        {"compare", "b<.yaml", "fairshare", &run, &c},
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
                        "running_pods,pending_pods\n"
                        "base,0.000,team-a,research,8.000,16.000,8.000,1,0\n"
                        "base,0.000,team-b,product,0.000,0.000,8.000,0,0\n"
                        "base,60.000,team-a,research,8.000,8.000,8.000,1,1\n"
                        "base,60.000,team-b,product,8.000,8.000,8.000,2,0\n");
    fair_buf_reset(&b);
    assert_int_equal(fair_sim_csv_summary(&b, l, 1), 0);
    assert_string_equal(
        fair_buf_str(&b),
        "config,policy,queue,jobs,started,completed,never_started,wait_p50_s,wait_p95_s,"
        "wait_max_s,preemptions,lost_gpu_hours,used_gpu_hours,mean_alloc_ratio,"
        "peak_alloc_ratio,first_fail_s,unallocated_gpu_at_first_fail,duration_s,cycles,"
        "evictions\n"
        "base,fairshare,team-a,3,3,2,0,0.000,70.000,70.000,1,0.044,0.000,,,,,,,\n"
        "base,fairshare,team-b,2,2,2,0,10.000,10.000,10.000,0,0.000,0.000,,,,,,,\n"
        "base,fairshare,*,5,5,4,0,10.000,70.000,70.000,1,0.044,0.000,0.7500,1.0000,30.000,"
        "0.500,60.000,4,1\n");
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
    assert_non_null(strstr(h, "<td>75.0%</td><td>100.0%</td><td>0.01h</td><td>0.5</td>"));
    fair_buf_release(&b);

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
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_default_and_assign),
        cmocka_unit_test(test_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
