/* The simulator's trace loaders: openb pod and node lists, the simple job
 * list and its multi-pod jobs, malformed rows reported with their line,
 * limits, and allocation failures at every step without a crash or a
 * leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "sim/trace.h"

static const struct fair_sim_job *job_named(const struct fair_sim_trace *t, const char *name)
{
    for (size_t i = 0; i < t->njobs; i++)
        if (strcmp(t->jobs[i].name, name) == 0)
            return &t->jobs[i];
    fail_msg("no job %s", name);
    return NULL;
}

static void test_openb_files(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    struct fair_error err = {0};
    fair_sim_trace_init(&t);
    int rc = fair_sim_trace_load_nodes(&t, FAIR_TEST_DATA_DIR "/sim/nodes_2x8.csv", NULL, &err);
    assert_int_equal(rc, 0);
    rc = fair_sim_trace_load_jobs(&t, FAIR_TEST_DATA_DIR "/sim/pods_openb.csv", NULL, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(t.nnodes, 2);
    assert_string_equal(t.nodes[0].name, "node-a");
    assert_int_equal(t.nodes[0].cpu_milli, 64000);
    assert_int_equal(t.nodes[0].memory_bytes, (int64_t)262144 << 20);
    assert_int_equal(t.nodes[1].gpu_count, 8);
    assert_string_equal(t.models[t.nodes[0].model], "V100M16");
    assert_string_equal(t.models[t.nodes[1].model], "T4");
    assert_int_equal(fair_sim_trace_gpu_capacity(&t), 16000);
    assert_false(t.simple_format);
    assert_true(t.has_times);

    assert_int_equal(t.njobs, 5);
    /* Sorted by creation time, ties in file order. */
    const char *order[] = {"pod-1", "pod-3", "pod-0", "pod-2", "pod-4"};
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(t.jobs[i].name, order[i]);

    const struct fair_sim_job *j = job_named(&t, "pod-0");
    assert_int_equal(j->gpu_milli, 1000);
    assert_int_equal(j->cpu_milli, 8000);
    assert_int_equal(j->memory_bytes, (int64_t)16384 << 20);
    assert_int_equal(j->submit_ms, 100000);
    assert_int_equal(j->duration_ms, 290000); /* deletion - scheduled */
    assert_int_equal(j->queue, -1);
    assert_true(j->preemptible);
    assert_string_equal(j->qos, "LS");
    assert_int_equal(j->model_mask, 0);

    j = job_named(&t, "pod-1");
    assert_int_equal(j->gpu_milli, 500);
    /* V100M16 is model 0 (from the nodes); V100M32 is interned as 2. */
    assert_int_equal(t.nmodels, 3);
    assert_string_equal(t.models[2], "V100M32");
    assert_int_equal(j->model_mask, 0x5);
    assert_string_equal(t.specs[j->spec], "V100M16|V100M32");

    j = job_named(&t, "pod-2");
    assert_int_equal(j->gpu_milli, 4000);
    assert_int_equal(j->duration_ms, 900000);
    j = job_named(&t, "pod-3"); /* never scheduled: lives deletion - creation */
    assert_int_equal(j->gpu_milli, 0);
    assert_int_equal(j->duration_ms, 60000);
    j = job_named(&t, "pod-4"); /* no deletion: runs to the end */
    assert_int_equal(j->duration_ms, FAIR_SIM_FOREVER);
    assert_int_equal(j->gpu_milli, 250);
    assert_int_equal(j->model_mask, 0x2);
    fair_sim_trace_release(&t);
}

static void test_simple_file(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    struct fair_error err = {0};
    fair_sim_trace_init(&t);
    int rc = fair_sim_trace_load_jobs(&t, FAIR_TEST_DATA_DIR "/sim/jobs_simple.csv", NULL, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_true(t.simple_format);
    assert_int_equal(t.njobs, 4);
    assert_int_equal(t.nqueue_names, 2);
    assert_string_equal(t.queue_names[0], "research");
    assert_string_equal(t.queue_names[1], "prod");
    const struct fair_sim_job *j = job_named(&t, "train-2");
    assert_int_equal(j->queue, 0);
    assert_int_equal(j->gpu_milli, 8000);
    assert_int_equal(j->cpu_milli, 32000);
    assert_int_equal(j->memory_bytes, (int64_t)128 << 30);
    assert_int_equal(j->duration_ms, 100000);
    j = job_named(&t, "infer-1");
    assert_int_equal(j->queue, 1);
    assert_int_equal(j->gpu_milli, 500);
    assert_int_equal(j->priority, 100);
    assert_false(j->preemptible);
    assert_int_equal(j->submit_ms, 10000);
    assert_string_equal(t.models[0], "T4");
    assert_int_equal(j->model_mask, 1);
    j = job_named(&t, "tune-1");
    assert_int_equal(j->submit_ms, 10500);
    assert_int_equal(j->duration_ms, FAIR_SIM_FOREVER);
    assert_int_equal(j->priority, 0);
    assert_true(j->preemptible);
    assert_int_equal(j->gpu_milli, 2000);
    fair_sim_trace_release(&t);
}

static void test_no_times(void **state)
{
    (void)state;
    /* The multigpu variants carry no times: everything arrives at 0 and
     * never ends. */
    const char *csv = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                      "p0,1000,100,8,1000\n"
                      "p1,1000,100,1,300\n";
    struct fair_sim_trace t;
    struct fair_error err = {0};
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "m.csv", csv, strlen(csv), NULL, &err), 0);
    assert_false(t.has_times);
    assert_int_equal(t.jobs[0].gpu_milli, 8000);
    assert_int_equal(t.jobs[1].gpu_milli, 300);
    assert_int_equal(t.jobs[1].submit_ms, 0);
    assert_int_equal(t.jobs[1].duration_ms, FAIR_SIM_FOREVER);
    fair_sim_trace_release(&t);
}

struct bad_case {
    const char *csv;
    bool nodes;
    const char *message;
};

static const struct bad_case bad_cases[] = {
    {"", false, "t.csv: empty file: expected a header line"},
    {"name,foo\n", false, "t.csv:1: unknown job list"},
    {"queue,submit_s\n", false, "t.csv:1: header has no \"name\" column"},
    {"name,queue,gpu\n", false, "t.csv:1: a simple job list needs the columns"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", false, "t.csv: no jobs after the header"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,100\n\np,x,1,1,100\n", false,
     "t.csv:4: cpu_milli: \"x\" is not a count >= 0"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,65,1000\n", false,
     "t.csv:2: num_gpu: \"65\" is not a count in 0..64"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n", false,
     "t.csv:2: gpu_milli: 500 with num_gpu 2: only single-GPU pods may share a GPU"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1001\n", false,
     "t.csv:2: gpu_milli: \"1001\" is not in 0..1000"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1\n", false,
     "t.csv:2: 4 fields, the header has 5"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\n,1,1,1,1\n", false, "t.csv:2: name: empty"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
     "p,1,1,1,1,10,5,\n",
     false, "t.csv:2: deletion_time before creation_time"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
     "p,1,1,1,1,10,50,5\n",
     false, "t.csv:2: scheduled_time before creation_time"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\np,1,1,1,1,-3\n", false,
     "t.csv:2: creation_time: \"-3\" is not a time in seconds >= 0"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,1,1,1,A||B\n", false,
     "t.csv:2: gpu_spec: \"A||B\": malformed model list"},
    {"name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\"p,1,1,1,1\n", false,
     "t.csv:2: unterminated quote"},
    {"name,queue,submit_s,gpu\nj,q,1,1.5\n", false,
     "t.csv:2: gpu: \"1.5\" must be whole GPUs (at most 64) or a fraction below 1"},
    {"name,queue,submit_s,gpu\nj,q,-1,1\n", false,
     "t.csv:2: submit_s: \"-1\" is not a number of seconds >= 0"},
    {"name,queue,submit_s,gpu,preemptible\nj,q,1,1,yes\n", false,
     "t.csv:2: preemptible: \"yes\" is not true or false"},
    {"name,queue,submit_s,gpu,duration_s\nj,q,1,1,soon\n", false,
     "t.csv:2: duration_s: \"soon\" is not a number of seconds"},
    {"name,queue,submit_s,gpu\nj,,1,1\n", false, "t.csv:2: queue: empty"},
    {"name,queue,submit_s,gpu,memory\nj,q,1,1,lots\n", false,
     "t.csv:2: memory: \"lots\" is not a quantity >= 0"},
    {"name,queue,submit_s,gpu,priority\nj,q,1,1,99999999999\n", false,
     "t.csv:2: priority: \"99999999999\" is not an int32"},
    {"name,queue,submit_s,gpu,pods\nj,q,1,1,0\n", false,
     "t.csv:2: pods: \"0\" is not a count of pods in 1..4096"},
    {"name,queue,submit_s,gpu,pods\nj,q,1,1,two\n", false,
     "t.csv:2: pods: \"two\" is not a count of pods in 1..4096"},
    {"name,queue,submit_s,gpu,pods\nj,q,1,1,4097\n", false,
     "t.csv:2: pods: \"4097\" is not a count of pods in 1..4096"},
    {"name,queue,submit_s,gpu\nj,q,1,1\nk,q,0,1\nj,q,2,1\n", false,
     "t.csv:4: name: \"j\" is already the name of a pod (line 2)"},
    {"name,queue,submit_s,gpu,pods\ng,q,0,1,2\ng-1,q,5,1,\n", false,
     "t.csv:3: name: \"g-1\" is already the name of a pod (line 2)"},
    {"sn,cpu_milli,memory_mib\n", true, "t.csv:1: header must name the columns sn"},
    {"sn,cpu_milli,memory_mib,gpu\nn,1,1,65\n", true,
     "t.csv:2: gpu: \"65\" is not a count in 0..64"},
    {"sn,cpu_milli,memory_mib,gpu\nn,1,-1,1\n", true,
     "t.csv:2: memory_mib: \"-1\" is not a count of MiB >= 0"},
    {"sn,cpu_milli,memory_mib,gpu\n", true, "t.csv: no nodes after the header"},
};

static void test_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const struct bad_case *c = &bad_cases[i];
        struct fair_sim_trace t;
        struct fair_error err = {0};
        fair_sim_trace_init(&t);
        int rc = c->nodes
                     ? fair_sim_trace_parse_nodes(&t, "t.csv", c->csv, strlen(c->csv), NULL, &err)
                     : fair_sim_trace_parse_jobs(&t, "t.csv", c->csv, strlen(c->csv), NULL, &err);
        if (rc >= 0 || strstr(err.msg, c->message) != err.msg)
            fail_msg("case %zu: rc=%d msg=\"%s\", expected \"%s\"", i, rc, err.msg, c->message);
        fair_sim_trace_release(&t);
    }
}

static void test_limits(void **state)
{
    (void)state;
    struct fair_sim_trace t;
    struct fair_error err = {0};
    const char *csv = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                      "p0,1,1,1,100\np1,1,1,1,100\np2,1,1,1,100\n";
    struct fair_sim_limits rows = {.max_rows = 2};
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "t.csv", csv, strlen(csv), &rows, &err),
                     FAIR_ERANGE);
    assert_string_equal(err.msg, "t.csv:4: more than 2 jobs");
    fair_sim_trace_release(&t);

    struct fair_sim_limits line = {.max_line = 20};
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "t.csv", csv, strlen(csv), &line, &err),
                     FAIR_ERANGE);
    assert_string_equal(err.msg, "t.csv:1: line longer than 20 bytes");
    fair_sim_trace_release(&t);

    struct fair_sim_limits bytes = {.max_bytes = 10};
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "t.csv", csv, strlen(csv), &bytes, &err),
                     FAIR_ERANGE);
    assert_string_equal(err.msg, "t.csv: larger than 10 bytes");
    fair_sim_trace_release(&t);

    /* Too many fields. */
    char wide[400] = "name";
    for (int i = 0; i < 40; i++)
        strncat(wide, ",x", sizeof(wide) - strlen(wide) - 1);
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "t.csv", wide, strlen(wide), NULL, &err),
                     FAIR_EPARSE);
    assert_string_equal(err.msg, "t.csv:1: more than 32 fields");
    fair_sim_trace_release(&t);

    /* A missing file names itself. */
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_trace_load_jobs(&t, "/nonexistent/x.csv", NULL, &err), FAIR_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/x.csv"));
    fair_sim_trace_release(&t);
}

static void test_quotes_crlf_and_hash(void **state)
{
    (void)state;
    const char *csv = "name,queue,submit_s,gpu\r\n\"a,b\",\"q \"\"1\"\"\",5,0.25\r\n";
    struct fair_sim_trace t;
    struct fair_error err = {0};
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "t.csv", csv, strlen(csv), NULL, &err), 0);
    assert_string_equal(t.jobs[0].name, "a,b");
    assert_string_equal(t.queue_names[0], "q \"1\"");
    assert_int_equal(t.jobs[0].gpu_milli, 250);
    fair_sim_trace_release(&t);
    /* FNV-1a 64, the documented queue-assignment hash. */
    assert_true(fair_sim_hash("") == 0xcbf29ce484222325ULL);
    assert_true(fair_sim_hash("a") == 0xaf63dc4c8601ec8cULL);
}

static void test_multi_pod_jobs(void **state)
{
    (void)state;
    /* pods = 3: three pods named g-0..g-2, consecutive in member order,
     * sharing the job's name as their gang; a job at the same time on an
     * earlier line comes first. */
    const char *csv = "name,queue,submit_s,duration_s,gpu,cpu,pods\n"
                      "g,q,10,60,2,4,3\nfirst,q,10,5,1,1,\nsolo,q,0,5,1,1,1\n";
    struct fair_sim_trace t;
    struct fair_error err = {0};
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "t.csv", csv, strlen(csv), NULL, &err), 0);
    assert_int_equal(t.njobs, 5);
    const char *order[] = {"solo", "g-0", "g-1", "g-2", "first"};
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(t.jobs[i].name, order[i]);
    assert_null(t.jobs[0].gang);
    assert_int_equal(t.jobs[0].gang_size, 1);
    for (int i = 0; i < 3; i++) {
        const struct fair_sim_job *m = &t.jobs[1 + i];
        assert_string_equal(m->gang, "g");
        assert_true(m->gang == t.jobs[1].gang); /* one string, owned by member 0 */
        assert_int_equal(m->gang_size, 3);
        assert_int_equal(m->member, i);
        assert_int_equal(m->gpu_milli, 2000);
        assert_int_equal(m->cpu_milli, 4000);
        assert_int_equal(m->duration_ms, 60000);
        assert_int_equal(m->submit_ms, 10000);
    }
    fair_sim_trace_release(&t);
    /* The row limit counts pods: 1 + 3 > 3. */
    const char *big = "name,queue,submit_s,gpu,pods\na,q,0,1,\ng,q,0,1,3\n";
    struct fair_sim_limits lim = {.max_rows = 3};
    fair_sim_trace_init(&t);
    assert_int_equal(fair_sim_trace_parse_jobs(&t, "t.csv", big, strlen(big), &lim, &err),
                     FAIR_ERANGE);
    assert_string_equal(err.msg, "t.csv:3: more than 3 pods");
    fair_sim_trace_release(&t);
    /* Allocation failures at every step, gangs included: no crash, no
     * leak. */
    for (long n = 0;; n++) {
        fair_sim_trace_init(&t);
        fair_alloc_fail_after(n);
        int rc = fair_sim_trace_parse_jobs(&t, "t.csv", csv, strlen(csv), NULL, &err);
        fair_alloc_fail_after(-1);
        fair_sim_trace_release(&t);
        if (rc == 0)
            break;
        assert_int_equal(rc, FAIR_ENOMEM);
        assert_true(n < 1000);
    }
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (long n = 0;; n++) {
        struct fair_sim_trace t;
        struct fair_error err = {0};
        fair_sim_trace_init(&t);
        fair_alloc_fail_after(n);
        int rc = fair_sim_trace_load_nodes(&t, FAIR_TEST_DATA_DIR "/sim/nodes_2x8.csv", NULL, &err);
        if (!rc)
            rc = fair_sim_trace_load_jobs(&t, FAIR_TEST_DATA_DIR "/sim/pods_openb.csv", NULL, &err);
        fair_alloc_fail_after(-1);
        fair_sim_trace_release(&t);
        if (rc == 0)
            break;
        assert_int_equal(rc, FAIR_ENOMEM);
        assert_true(n < 1000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openb_files),    cmocka_unit_test(test_simple_file),
        cmocka_unit_test(test_no_times),       cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_limits),         cmocka_unit_test(test_quotes_crlf_and_hash),
        cmocka_unit_test(test_alloc_failures), cmocka_unit_test(test_multi_pod_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
