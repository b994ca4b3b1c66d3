/* Unit tests of lib/kube/decode.c: Pods, Nodes, Projects, Queues and
 * Status objects from JSON, including bad values reported in `problem`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/yaml.h"
#include "engine/constraints.h"
#include "kube/decode.h"
#include "kube/jsonfilter.h"

static json_t *load(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s: %s", je.text, text);
    return j;
}

static struct fair_kpod *pod_ok(const char *text)
{
    json_t *j = load(text);
    struct fair_kpod *p = NULL;
    struct fair_error err = {0};
    int rc = fair_kpod_decode(j, &p, &err);
    json_decref(j);
    if (rc)
        fail_msg("decode failed: %s", err.msg);
    return p;
}

#define POD_HEAD                                                                                   \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-1\",\"namespace\":"    \
    "\"team-a\",\"uid\":\"u-1\",\"resourceVersion\":\"42\",\"creationTimestamp\":"                 \
    "\"2026-11-23T19:00:00Z\""

static void test_pod_whole_gpus(void **state)
{
    (void)state;
    struct fair_kpod *p = pod_ok(
        POD_HEAD ",\"labels\":{\"fairshare.dev/queue\":\"research\"}},"
                 "\"spec\":{\"schedulerName\":\"fairshare\",\"priority\":100,"
                 "\"nodeSelector\":{\"nvidia.com/gpu.product\":\"A100\"},"
                 "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
                 "\"2\",\"cpu\":\"4\",\"memory\":\"16Gi\"},\"requests\":{\"cpu\":\"500m\"}}},"
                 "{\"name\":\"b\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":1,\"memory\":"
                 "\"1Gi\"}}}],"
                 "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"8\""
                 "}}}],"
                 "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":"
                 "\"NoSchedule\"},{\"key\":\"x\",\"value\":\"y\"}]},"
                 "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
                 "\"status\":\"False\",\"reason\":\"OverQuota\"}]}}");
    assert_string_equal(p->meta.name, "train-1");
    assert_string_equal(p->meta.namespace_, "team-a");
    assert_string_equal(p->meta.uid, "u-1");
    assert_string_equal(p->meta.resource_version, "42");
    assert_int_equal(p->meta.creation_ms, 1795460400000LL);
    assert_string_equal(p->queue, "research");
    assert_string_equal(p->scheduler_name, "fairshare");
    assert_null(p->node_name);
    assert_int_equal(p->priority, 100);
    assert_int_equal(p->request.v[FAIR_RES_GPU], 3000);
    /* containers: 500m + 0 = 500m; the init container's 8 is larger */
    assert_int_equal(p->request.v[FAIR_RES_CPU], 8000);
    assert_int_equal(p->request.v[FAIR_RES_MEM], 17LL << 30);
    assert_true(p->preemptible);
    assert_string_equal(p->gpu_model, "A100");
    assert_int_equal(p->nnode_selector, 1);
    assert_int_equal(p->ntolerations, 2);
    assert_string_equal(p->tolerations[0].key, "gpu");
    assert_int_equal(p->tolerations[0].op, FAIR_TOLERATE_EXISTS);
    assert_false(p->tolerations[0].any_effect);
    assert_int_equal(p->tolerations[0].effect, FAIR_TAINT_NO_SCHEDULE);
    assert_int_equal(p->tolerations[1].op, FAIR_TOLERATE_EQUAL);
    assert_string_equal(p->tolerations[1].value, "y");
    assert_true(p->tolerations[1].any_effect);
    assert_int_equal(p->phase, FAIR_KPOD_PENDING);
    assert_true(p->scheduled_condition_false);
    assert_string_equal(p->scheduled_reason, "OverQuota");
    assert_null(p->problem);
    fair_kpod_free(p);
}

static void test_pod_fraction_gang(void **state)
{
    (void)state;
    struct fair_kpod *p =
        pod_ok(POD_HEAD ",\"labels\":{\"fairshare.dev/queue\":\"q\",\"fairshare.dev/preemptible\":"
                        "\"false\"},\"annotations\":{\"fairshare.dev/gpu-fraction\":\"0.25\","
                        "\"fairshare.dev/gang\":\"g1\",\"fairshare.dev/gang-size\":\"4\","
                        "\"fairshare.dev/checkpoint-interval\":\"30m\","
                        "\"fairshare.dev/preemption-notice\":\"90s\","
                        "\"fairshare.dev/requeue-count\":\"2\","
                        "\"fairshare.dev/gpu-devices\":\"0,3\"},\"deletionTimestamp\":"
                        "\"2026-11-23T19:00:01Z\",\"ownerReferences\":[{\"kind\":\"Foo\","
                        "\"uid\":\"not-controller\"},{\"kind\":\"Job\",\"name\":\"train\","
                        "\"uid\":\"job-7\",\"controller\":true}]},"
                        "\"spec\":{\"nodeName\":\"n1\",\"terminationGracePeriodSeconds\":45,"
                        "\"containers\":[{\"name\":\"a\"}]},"
                        "\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-11-23T19:00:00Z\","
                        "\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\","
                        "\"lastTransitionTime\":\"2026-11-23T19:00:05Z\"}]}}");
    assert_int_equal(p->gpu_fraction_milli, 250);
    assert_int_equal(p->request.v[FAIR_RES_GPU], 250);
    assert_string_equal(p->gang, "g1");
    assert_int_equal(p->gang_size, 4);
    assert_string_equal(p->gpu_devices, "0,3");
    assert_false(p->preemptible);
    assert_string_equal(p->node_name, "n1");
    assert_int_equal(p->phase, FAIR_KPOD_RUNNING);
    assert_int_equal(p->start_ms, 1795460400000LL);
    assert_int_equal(p->meta.deletion_ms, 1795460401000LL);
    assert_true(p->disruption_target);
    assert_int_equal(p->disruption_since_ms, 1795460405000LL);
    assert_false(p->scheduled_condition_false);
    assert_int_equal(p->checkpoint_interval_ms, 30 * 60 * 1000);
    assert_string_equal(p->owner_uid, "job-7"); /* the controller owner, not the first */
    assert_string_equal(p->owner_kind, "Job");
    assert_string_equal(p->owner_name, "train");
    assert_int_equal(p->preemption_notice_ms, 90 * 1000);
    assert_int_equal(p->requeue_count, 2);
    assert_false(p->requeue_opt_out);
    assert_int_equal(p->grace_s, 45);
    assert_null(p->problem);
    fair_kpod_free(p);
}

/* Reservation pods and fractions' slots (docs/fractions.md): the label,
 * the slot (0..63 without leading zeros; anything else reads as none) and
 * the reported device (a name of [A-Za-z0-9_.:-], else none). */
static void test_pod_reservation(void **state)
{
    (void)state;
    struct fair_kpod *p = pod_ok(
        POD_HEAD ",\"labels\":{\"fairshare.dev/reservation\":\"true\"},\"annotations\":{"
                 "\"fairshare.dev/gpu-slot\":\"63\","
                 "\"fairshare.dev/reserved-device\":\"GPU-8f6c2a1e-0000-4000-8000-000000000001\"}},"
                 "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
    assert_true(p->reservation);
    assert_int_equal(p->gpu_slot1, 64);
    assert_string_equal(p->reserved_device, "GPU-8f6c2a1e-0000-4000-8000-000000000001");
    fair_kpod_free(p);
    static const char *const bad_slots[] = {"64", "07", "-1", "", "a", "1x", "100"};
    for (size_t i = 0; i < sizeof bad_slots / sizeof *bad_slots; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 POD_HEAD ",\"labels\":{\"fairshare.dev/reservation\":\"yes\"},"
                          "\"annotations\":{\"fairshare.dev/gpu-slot\":\"%s\","
                          "\"fairshare.dev/reserved-device\":\"GPU 1; rm\"}},"
                          "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
                 bad_slots[i]);
        p = pod_ok(text);
        assert_false(p->reservation);
        assert_int_equal(p->gpu_slot1, 0);
        assert_null(p->reserved_device);
        fair_kpod_free(p);
    }
    p = pod_ok(POD_HEAD ",\"annotations\":{\"fairshare.dev/gpu-slot\":\"0\"}},"
                        "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
    assert_int_equal(p->gpu_slot1, 1);
    assert_false(p->reservation);
    fair_kpod_free(p);
}

/* fairshare.dev/gpu-memory: bytes; not with a fraction; not 0. */
static void test_pod_gpu_memory(void **state)
{
    (void)state;
    struct fair_kpod *p =
        pod_ok(POD_HEAD ",\"annotations\":{\"fairshare.dev/gpu-memory\":\"10Gi\"}},"
                        "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
    assert_int_equal(p->gpu_memory_bytes, 10LL << 30);
    assert_int_equal(p->request.v[FAIR_RES_GPU], 0);
    assert_null(p->problem);
    fair_kpod_free(p);
    static const char *const bad[] = {"\"0\"", "\"lots\"", "\"-1Gi\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 POD_HEAD ",\"annotations\":{\"fairshare.dev/gpu-memory\":%s}},"
                          "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
                 bad[i]);
        p = pod_ok(text);
        assert_int_equal(p->gpu_memory_bytes, 0);
        assert_non_null(p->problem);
        assert_non_null(strstr(p->problem, "fairshare.dev/gpu-memory"));
        fair_kpod_free(p);
    }
    p = pod_ok(POD_HEAD ",\"annotations\":{\"fairshare.dev/gpu-memory\":\"1Gi\","
                        "\"fairshare.dev/gpu-fraction\":\"0.5\"}},"
                        "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
    assert_int_equal(p->gpu_memory_bytes, 0);
    assert_non_null(p->problem);
    fair_kpod_free(p);
}

/* The requeue opt-out, as a label or an annotation; a requeue count that
 * is not the controller's number counts as none; no grace period given. */
static void test_pod_requeue_fields(void **state)
{
    (void)state;
    struct fair_kpod *p = pod_ok(POD_HEAD ",\"labels\":{\"fairshare.dev/requeue\":\"false\"}},"
                                          "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
    assert_true(p->requeue_opt_out);
    assert_int_equal(p->grace_s, -1);
    assert_null(p->owner_uid);
    assert_null(p->owner_kind);
    fair_kpod_free(p);
    p = pod_ok(POD_HEAD ",\"annotations\":{\"fairshare.dev/requeue\":\"false\","
                        "\"fairshare.dev/requeue-count\":\"-3\"}},"
                        "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
    assert_true(p->requeue_opt_out);
    assert_int_equal(p->requeue_count, 0);
    assert_null(p->problem);
    fair_kpod_free(p);
    p = pod_ok(POD_HEAD ",\"annotations\":{\"fairshare.dev/requeue\":\"true\"}},"
                        "\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
    assert_false(p->requeue_opt_out);
    assert_null(p->problem);
    fair_kpod_free(p);
}

/* PodGroup membership: the scheduler-plugins label, else Volcano's
 * annotation; a value that cannot name an object is a problem. Decoded
 * the same through the watch filter (fair_ktype_pod.filter). */
static void test_pod_group(void **state)
{
    (void)state;
    static const struct {
        const char *meta;
        const char *group;
        int flavor;
        const char *problem;
    } rows[] = {
        {",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"pg-1\"}", "pg-1", FAIR_KPG_COSCHED,
         NULL},
        {",\"annotations\":{\"scheduling.k8s.io/group-name\":\"vc.1\"}", "vc.1", FAIR_KPG_VOLCANO,
         NULL},
        {",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"a\"},\"annotations\":{"
         "\"scheduling.k8s.io/group-name\":\"b\"}",
         "a", FAIR_KPG_COSCHED, NULL},
        {",\"annotations\":{\"scheduling.k8s.io/group-name\":\"Bad/Name\"}", NULL, FAIR_KPG_VOLCANO,
         "is not a PodGroup name"},
        {"", NULL, 0, NULL},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        char doc[1024];
        snprintf(doc, sizeof doc, POD_HEAD "%s},\"spec\":{\"containers\":[{\"name\":\"a\"}]}}",
                 rows[r].meta);
        for (int filtered = 0; filtered < 2; filtered++) {
            json_t *j = NULL;
            struct fair_error err = {0};
            assert_int_equal(fair_json_parse_filtered(doc, strlen(doc),
                                                      filtered ? fair_ktype_pod.filter : NULL, &j,
                                                      &err),
                             0);
            struct fair_kpod *p = NULL;
            assert_int_equal(fair_kpod_decode(j, &p, &err), 0);
            json_decref(j);
            if (rows[r].group) {
                assert_non_null(p->pod_group);
                assert_string_equal(p->pod_group, rows[r].group);
                assert_int_equal(p->pod_group_flavor, rows[r].flavor);
            } else {
                assert_null(p->pod_group);
            }
            if (rows[r].problem)
                assert_non_null(strstr(p->problem ? p->problem : "", rows[r].problem));
            else
                assert_null(p->problem);
            fair_kpod_free(p);
        }
    }
}

/* PodGroups of both flavors: spec, status, and what cannot be used. */
static void test_podgroup(void **state)
{
    (void)state;
    json_t *j = load("{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
                     "\"metadata\":{\"name\":\"pg\",\"namespace\":\"team-a\",\"uid\":\"u\"},"
                     "\"spec\":{\"minMember\":8,\"scheduleTimeoutSeconds\":600,"
                     "\"minResources\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"16\",\"pods\":\"8\"}},"
                     "\"status\":{\"phase\":\"Running\",\"running\":8,\"succeeded\":1}}");
    struct fair_kpodgroup *g = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_kpodgroup_decode(j, FAIR_KPG_COSCHED, &g, &err), 0);
    json_decref(j);
    assert_string_equal(g->meta.name, "pg");
    assert_int_equal(g->min_member, 8);
    assert_int_equal(g->schedule_timeout_s, 600);
    assert_int_equal(g->min_resources.v[FAIR_RES_GPU], 8000);
    assert_int_equal(g->min_resources.v[FAIR_RES_CPU], 16000);
    assert_string_equal(g->phase, "Running");
    assert_int_equal(g->running, 8);
    assert_int_equal(g->succeeded, 1);
    assert_null(g->problem);
    fair_kpodgroup_free(g);
    j = load("{\"metadata\":{\"name\":\"v\",\"namespace\":\"n\"},\"spec\":{\"minMember\":-1,"
             "\"queue\":\"default\"},\"status\":{\"phase\":\"Pending\",\"conditions\":[{"
             "\"type\":\"Unschedulable\",\"status\":\"True\",\"reason\":\"NotEnoughTasks\"}]}}");
    assert_int_equal(fair_kpodgroup_decode(j, FAIR_KPG_VOLCANO, &g, &err), 0);
    json_decref(j);
    assert_int_equal(g->flavor, FAIR_KPG_VOLCANO);
    assert_int_equal(g->min_member, 1); /* unusable: the problem says so */
    assert_non_null(strstr(g->problem, "spec.minMember"));
    assert_string_equal(g->condition_reason, "NotEnoughTasks");
    fair_kpodgroup_free(g);
    j = load("{\"metadata\":{\"namespace\":\"n\"}}"); /* no name */
    assert_int_not_equal(fair_kpodgroup_decode(j, FAIR_KPG_VOLCANO, &g, &err), 0);
    assert_null(g);
    json_decref(j);
}

/* finished_ms: the latest containerStatuses[].state.terminated.finishedAt
 * when every container has terminated (the shape the real plane's
 * kubelet writes, checked on Kubernetes 1.24), else 0; a malformed status
 * never fails the pod. Each case is decoded whole and through the pod
 * filter (what the informer keeps), with the same result. */
static void test_pod_finished(void **state)
{
    (void)state;
    static const struct {
        const char *statuses; /* status.containerStatuses, or NULL: absent */
        int64_t want;
    } cases[] = {
        {"[{\"name\":\"m\",\"state\":{\"terminated\":{\"exitCode\":0,\"finishedAt\":"
         "\"2026-11-26T19:46:55Z\",\"reason\":\"Completed\",\"startedAt\":"
         "\"2026-11-26T19:46:53Z\"}}}]",
         1795722415000LL},
        {"[{\"name\":\"a\",\"state\":{\"terminated\":{\"finishedAt\":\"2026-11-26T19:46:57Z\"}}},"
         "{\"name\":\"b\",\"state\":{\"terminated\":{\"finishedAt\":\"2026-11-26T19:46:55Z\"}}}]",
         1795722417000LL},
        {"[{\"name\":\"a\",\"state\":{\"terminated\":{\"finishedAt\":\"2026-11-26T19:46:57Z\"}}},"
         "{\"name\":\"b\",\"state\":{\"running\":{\"startedAt\":\"2026-11-26T19:46:53Z\"}}}]",
         0},
        {"[{\"name\":\"m\",\"state\":{\"running\":{\"startedAt\":\"2026-11-26T19:46:53Z\"}}}]", 0},
        {"[{\"name\":\"m\",\"state\":{\"terminated\":{\"exitCode\":1}}}]", 0},
        {"[{\"name\":\"m\",\"state\":{\"terminated\":{\"finishedAt\":\"yesterday\"}}}]", 0},
        {"[{\"name\":\"m\",\"state\":{\"terminated\":{\"finishedAt\":7}}}]", 0},
        {"[{\"name\":\"m\",\"state\":\"terminated\"}]", 0},
        {"[]", 0},
        {"\"not a list\"", 0},
        {NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 POD_HEAD "},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"m\"}]},"
                          "\"status\":{\"phase\":\"Succeeded\"%s%s}}",
                 cases[i].statuses ? ",\"containerStatuses\":" : "",
                 cases[i].statuses ? cases[i].statuses : "");
        struct fair_kpod *p = pod_ok(text);
        if (p->finished_ms != cases[i].want)
            fail_msg("case %zu: finished_ms %lld, want %lld", i, (long long)p->finished_ms,
                     (long long)cases[i].want);
        fair_kpod_free(p);
        json_t *filtered = NULL;
        struct fair_error err = {0};
        assert_int_equal(
            fair_json_parse_filtered(text, strlen(text), fair_ktype_pod.filter, &filtered, &err),
            0);
        assert_int_equal(fair_kpod_decode(filtered, &p, &err), 0);
        json_decref(filtered);
        if (p->finished_ms != cases[i].want)
            fail_msg("case %zu (filtered): finished_ms %lld, want %lld", i,
                     (long long)p->finished_ms, (long long)cases[i].want);
        fair_kpod_free(p);
    }
}

struct problem_case {
    const char *labels_ann; /* inserted into metadata */
    const char *resources;  /* the container's resources */
    const char *needle;     /* expected in problem */
};

static void test_pod_problems(void **state)
{
    (void)state;
    static const struct problem_case cases[] = {
        {"\"annotations\":{\"fairshare.dev/gpu-fraction\":\"1.5\"}", "{}",
         "must be between 0 and 1"},
        {"\"annotations\":{\"fairshare.dev/gpu-fraction\":\"half\"}", "{}",
         "annotation fairshare.dev/gpu-fraction"},
        {"\"annotations\":{\"fairshare.dev/gang\":\"g\",\"fairshare.dev/gang-size\":\"0\"}", "{}",
         "gang-size: \"0\" must be an integer from 1"},
        {"\"annotations\":{\"fairshare.dev/gang\":\"g\",\"fairshare.dev/gang-size\":\"4x\"}", "{}",
         "must be an integer"},
        {"\"annotations\":{\"fairshare.dev/gang-size\":\"2\"}", "{}", "without fairshare.dev/gang"},
        {"\"labels\":{\"fairshare.dev/preemptible\":\"maybe\"}", "{}",
         "must be \"true\" or \"false\""},
        {"\"labels\":{}", "{\"limits\":{\"nvidia.com/gpu\":\"1.5\"}}", "whole number of GPUs"},
        {"\"labels\":{}", "{\"requests\":{\"cpu\":\"lots\"}}",
         "spec.containers[0].resources.requests[\"cpu\"]"},
        {"\"labels\":{}", "{\"requests\":{\"memory\":\"-1Gi\"}}", "negative"},
        {"\"annotations\":{\"fairshare.dev/gpu-fraction\":\"0.5\"}",
         "{\"limits\":{\"nvidia.com/gpu\":\"1\"}}", "are both set"},
        {"\"annotations\":{\"fairshare.dev/checkpoint-interval\":\"often\"}", "{}",
         "checkpoint-interval: \"often\" must be a positive duration"},
        {"\"annotations\":{\"fairshare.dev/checkpoint-interval\":\"0s\"}", "{}",
         "must be a positive duration"},
        {"\"annotations\":{\"fairshare.dev/preemption-notice\":\"soon\"}", "{}",
         "preemption-notice: \"soon\" must be a duration from 0 to 24h"},
        {"\"annotations\":{\"fairshare.dev/preemption-notice\":\"25h\"}", "{}",
         "must be a duration from 0 to 24h"},
        {"\"annotations\":{\"fairshare.dev/requeue\":\"no\"}", "{}",
         "annotation fairshare.dev/requeue: \"no\" must be \"true\" or \"false\""},
        {"\"labels\":{\"fairshare.dev/requeue\":\"0\"}", "{}",
         "label fairshare.dev/requeue: \"0\" must be"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 POD_HEAD ",%s},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":%s}]}}",
                 cases[i].labels_ann, cases[i].resources);
        struct fair_kpod *p = pod_ok(text);
        if (!p->problem || !strstr(p->problem, cases[i].needle))
            fail_msg("case %zu: problem \"%s\" lacks \"%s\"", i, p->problem ? p->problem : "(null)",
                     cases[i].needle);
        fair_kpod_free(p);
    }
}

/* spec.activeDeadlineSeconds: the declared maximum run time, in ms; a
 * longer one than FAIR_MAX_DEADLINE_S counts as that; not a positive
 * integer: a problem (the API server rejects such pods anyway). */
static void test_pod_active_deadline(void **state)
{
    (void)state;
    static const struct {
        const char *field;
        int64_t ms;
        const char *problem;
    } rows[] = {
        {"", 0, NULL},
        {"\"activeDeadlineSeconds\":null,", 0, NULL},
        {"\"activeDeadlineSeconds\":3600,", 3600000, NULL},
        {"\"activeDeadlineSeconds\":1,", 1000, NULL},
        {"\"activeDeadlineSeconds\":9223372036854775807,", FAIR_MAX_DEADLINE_S * 1000, NULL},
        {"\"activeDeadlineSeconds\":0,", 0, "spec.activeDeadlineSeconds: want a positive integer"},
        {"\"activeDeadlineSeconds\":-60,", 0, "spec.activeDeadlineSeconds"},
        {"\"activeDeadlineSeconds\":\"3600\",", 0, "spec.activeDeadlineSeconds"},
        {"\"activeDeadlineSeconds\":1.5,", 0, "spec.activeDeadlineSeconds"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 POD_HEAD "},\"spec\":{%s\"containers\":[{\"name\":\"c\"}]}}", rows[i].field);
        struct fair_kpod *p = pod_ok(text);
        if (p->active_deadline_ms != rows[i].ms)
            fail_msg("row %zu: %lld ms", i, (long long)p->active_deadline_ms);
        if (!rows[i].problem)
            assert_null(p->problem);
        else if (!p->problem || !strstr(p->problem, rows[i].problem))
            fail_msg("row %zu: problem \"%s\"", i, p->problem ? p->problem : "(null)");
        fair_kpod_free(p);
    }
}

static void test_pod_structural_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *needle;
    } cases[] = {
        {"[]", "want a JSON object"},
        {"{\"metadata\":{}}", "metadata.name: missing"},
        {"{\"metadata\":5}", "metadata: want an object"},
        {"{\"metadata\":{\"name\":7}}", "metadata.name: want a string"},
        {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":{}}}",
         "spec.containers: want an array"},
        {"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"tolerations\":[3]}}",
         "spec.tolerations[0]: want an object"},
        {"{\"metadata\":{\"name\":\"p\",\"labels\":{\"fairshare.dev/queue\":1}}}",
         "label fairshare.dev/queue: want a string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = load(cases[i].text);
        struct fair_kpod *p = (void *)1;
        struct fair_error err = {0};
        int rc = fair_kpod_decode(j, &p, &err);
        json_decref(j);
        assert_int_equal(rc, FAIR_EINVAL);
        assert_null(p);
        if (!strstr(err.msg, cases[i].needle))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].needle);
    }
}

static void test_pod_alloc_failures(void **state)
{
    (void)state;
    json_t *j =
        load(POD_HEAD ",\"labels\":{\"fairshare.dev/queue\":\"q\"},\"annotations\":{"
                      "\"fairshare.dev/gang\":\"g\"}},\"spec\":{\"nodeName\":\"n\","
                      "\"nodeSelector\":{\"a\":\"b\"},\"tolerations\":[{\"key\":\"k\"}],"
                      "\"affinity\":{\"nodeAffinity\":{\"requiredDuringScheduling"
                      "IgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions"
                      "\":[{\"key\":\"pool\",\"operator\":\"In\",\"values\":[\"b\"]}]}]}}},"
                      "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
                      "\"nvidia.com/gpu\":\"x\"}}}]},\"status\":{\"conditions\":[{"
                      "\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"r\"}]}}");
    /* Every allocation site fails once; nothing leaks, nothing crashes. */
    for (long n = 0; n < 200; n++) {
        struct fair_kpod *p = NULL;
        fair_alloc_fail_after(n);
        int rc = fair_kpod_decode(j, &p, NULL);
        fair_alloc_fail_after(-1);
        if (rc == 0) {
            fair_kpod_free(p);
            if (n > 10)
                break;
        } else {
            assert_null(p);
        }
    }
    json_decref(j);
}

#define AFF_POD(aff)                                                                               \
    POD_HEAD "},\"spec\":{\"affinity\":{\"nodeAffinity\":" aff "},\"containers\":[{\"name\":"     \
             "\"c\"}]}}"

/* spec.affinity.nodeAffinity: terms, requirements, values and the parse
 * errors Kubernetes turns into a term that matches nothing. */
static void test_pod_node_affinity(void **state)
{
    (void)state;
    struct fair_kpod *p = pod_ok(AFF_POD(
        "{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
        "{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]},"
        "{\"key\":\"gen\",\"operator\":\"Gt\",\"values\":[\"3\"]}],\"matchFields\":[{\"key\":"
        "\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"n9\"]}]},"
        "{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"Near\",\"values\":[\"y\"]}]},"
        "{}]},"
        "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":7,\"preference\":{"
        "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}]}}]}"));
    const struct fair_node_affinity *a = p->node_affinity;
    assert_null(p->problem);
    assert_non_null(a);
    assert_true(a->required);
    assert_int_equal(a->nterms, 3);
    assert_int_equal(a->terms[0].nreqs, 3);
    assert_false(a->terms[0].invalid);
    assert_string_equal(a->terms[0].reqs[0].key, "pool");
    assert_int_equal(a->terms[0].reqs[0].op, FAIR_SEL_IN);
    assert_int_equal(a->terms[0].reqs[0].nvalues, 2);
    assert_string_equal(a->terms[0].reqs[0].values[1], "b");
    assert_int_equal(a->terms[0].reqs[1].op, FAIR_SEL_GT);
    assert_true(a->terms[0].reqs[2].field);
    assert_int_equal(a->terms[0].reqs[2].op, FAIR_SEL_NOT_IN);
    assert_string_equal(a->terms[0].reqs[2].values[0], "n9");
    assert_true(a->terms[1].invalid); /* unknown operator */
    assert_int_equal(a->terms[2].nreqs, 0);
    assert_int_equal(a->npreferred, 1);
    assert_int_equal(a->preferred[0].weight, 7);
    assert_int_equal(a->preferred[0].reqs[0].op, FAIR_SEL_EXISTS);
    fair_kpod_free(p);

    /* Required but no terms: present, matches nothing. */
    p = pod_ok(AFF_POD("{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
                       "\"nodeSelectorTerms\":[]}}"));
    assert_non_null(p->node_affinity);
    assert_true(p->node_affinity->required);
    assert_int_equal(p->node_affinity->nterms, 0);
    fair_kpod_free(p);
    /* Nothing required nor preferred: none kept. */
    p = pod_ok(AFF_POD("{}"));
    assert_null(p->node_affinity);
    assert_null(p->problem);
    fair_kpod_free(p);

    /* Shapes and sizes the API server would not produce: a problem, the
     * pod is not scheduled, and nothing is kept. */
    static const struct {
        const char *aff;
        const char *needle;
    } bad[] = {
        {"[]", "spec.affinity.nodeAffinity: want an object"},
        {"{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[3]}}",
         "want an object"},
        {"{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
         "\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\",\"values\":[1]}]}]}}",
         "values must be strings"},
        {"{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":101,"
         "\"preference\":{}}]}",
         "weight: 0..100"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 POD_HEAD "},\"spec\":{\"affinity\":{\"nodeAffinity\":%s},\"containers\":[{"
                          "\"name\":\"c\"}]}}",
                 bad[i].aff);
        p = pod_ok(text);
        if (!p->problem || !strstr(p->problem, bad[i].needle))
            fail_msg("case %zu: problem \"%s\" lacks \"%s\"", i, p->problem ? p->problem : "(null)",
                     bad[i].needle);
        assert_null(p->node_affinity);
        fair_kpod_free(p);
    }
    /* Limits: terms, requirements per term, values per requirement. */
    for (int which = 0; which < 3; which++) {
        struct fair_buf b;
        fair_buf_init(&b, 1 << 20);
        assert_int_equal(fair_buf_appends(&b, POD_HEAD "},\"spec\":{\"affinity\":{\"nodeAffinity\":{"
                                                       "\"requiredDuringSchedulingIgnoredDuring"
                                                       "Execution\":{\"nodeSelectorTerms\":["),
                         0);
        int terms = which == 0 ? FAIR_AFFINITY_MAX_TERMS + 1 : 1;
        int reqs = which == 1 ? FAIR_AFFINITY_MAX_REQS + 1 : 1;
        int vals = which == 2 ? FAIR_AFFINITY_MAX_VALUES + 1 : 1;
        for (int t = 0; t < terms; t++) {
            fair_buf_appends(&b, t ? ",{\"matchExpressions\":[" : "{\"matchExpressions\":[");
            for (int r = 0; r < reqs; r++) {
                fair_buf_appendf(&b, "%s{\"key\":\"k%d\",\"operator\":\"In\",\"values\":[",
                                 r ? "," : "", r);
                for (int v = 0; v < vals; v++)
                    fair_buf_appendf(&b, "%s\"v%d\"", v ? "," : "", v);
                fair_buf_appends(&b, "]}");
            }
            fair_buf_appends(&b, "]}");
        }
        fair_buf_appends(&b, "]}}},\"containers\":[{\"name\":\"c\"}]}}");
        p = pod_ok(b.data);
        fair_buf_release(&b);
        assert_non_null(p->problem);
        assert_non_null(strstr(p->problem, "too many"));
        assert_null(p->node_affinity);
        fair_kpod_free(p);
    }
}

/* Other resources: containers summed, init containers' maximum, limits
 * where no request; host ports with their defaults; nodes' allocatable. */
static void test_pod_scalars_ports(void **state)
{
    (void)state;
    struct fair_kpod *p = pod_ok(
        POD_HEAD "},\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{"
                 "\"cpu\":\"1\",\"rdma/ib\":\"2\",\"hugepages-2Mi\":\"4Mi\"},\"limits\":{"
                 "\"rdma/ib\":\"2\",\"example.com/x\":\"1\"}},\"ports\":[{\"containerPort\":80,"
                 "\"hostPort\":8080},{\"containerPort\":81},{\"containerPort\":53,\"hostPort\":53,"
                 "\"protocol\":\"UDP\",\"hostIP\":\"10.0.0.1\"}]},{\"name\":\"b\",\"resources\":"
                 "{\"requests\":{\"rdma/ib\":\"1\"}}}],\"initContainers\":[{\"name\":\"i\","
                 "\"resources\":{\"requests\":{\"rdma/ib\":\"5\",\"example.com/x\":\"0.5\"}}}]}}");
    assert_null(p->problem);
    assert_int_equal(p->request.v[FAIR_RES_CPU], 1000);
    assert_int_equal(p->nscalars, 3);
    int64_t rdma = -1, huge = -1, x = -1;
    for (size_t i = 0; i < p->nscalars; i++) {
        if (!strcmp(p->scalars[i].name, "rdma/ib"))
            rdma = p->scalars[i].value;
        if (!strcmp(p->scalars[i].name, "hugepages-2Mi"))
            huge = p->scalars[i].value;
        if (!strcmp(p->scalars[i].name, "example.com/x"))
            x = p->scalars[i].value;
    }
    assert_int_equal(rdma, 5); /* max(2 + 1, 5) */
    assert_int_equal(huge, 4 << 20);
    assert_int_equal(x, 1); /* the limit, and 0.5 rounded up */
    assert_int_equal(p->nhost_ports, 2);
    assert_int_equal(p->host_ports[0].port, 8080);
    assert_int_equal(p->host_ports[0].protocol, FAIR_PROTO_TCP);
    assert_null(p->host_ports[0].host_ip);
    assert_int_equal(p->host_ports[1].port, 53);
    assert_int_equal(p->host_ports[1].protocol, FAIR_PROTO_UDP);
    assert_string_equal(p->host_ports[1].host_ip, "10.0.0.1");
    fair_kpod_free(p);
    /* Too many distinct resources: a problem, nothing kept. */
    struct fair_buf b;
    fair_buf_init(&b, 1 << 16);
    fair_buf_appends(&b, POD_HEAD "},\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{"
                                  "\"requests\":{");
    for (int i = 0; i <= FAIR_POD_MAX_SCALARS; i++)
        fair_buf_appendf(&b, "%s\"example.com/r%d\":\"1\"", i ? "," : "", i);
    fair_buf_appends(&b, "}}}]}}");
    p = pod_ok(b.data);
    fair_buf_release(&b);
    assert_non_null(p->problem);
    assert_non_null(strstr(p->problem, "more than"));
    assert_int_equal(p->nscalars, 0);
    fair_kpod_free(p);

    json_t *j = load("{\"metadata\":{\"name\":\"n1\",\"uid\":\"nu\"},\"status\":{\"allocatable\":{"
                     "\"cpu\":\"8\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"8\",\"pods\":\"110\","
                     "\"rdma/ib\":\"4\",\"hugepages-1Gi\":\"2Gi\",\"bad\":\"x\"}}}");
    struct fair_knode *n = NULL;
    assert_int_equal(fair_knode_decode(j, &n, NULL), 0);
    json_decref(j);
    assert_int_equal(n->nscalars, 3);
    assert_string_equal(n->scalars[0].name, "rdma/ib");
    assert_int_equal(n->scalars[0].value, 4);
    assert_int_equal(n->scalars[1].value, (int64_t)2 << 30);
    assert_int_equal(n->scalars[2].value, 0); /* does not parse: nothing fits */
    fair_knode_free(n);
}

/* A Namespace: its name and labels; labels over the limit are an error. */
static void test_namespace_decode(void **state)
{
    (void)state;
    struct fair_error err = {0};
    struct fair_knamespace *n = NULL;
    json_t *j = json_loads("{\"metadata\":{\"name\":\"team-x\",\"uid\":\"u\",\"labels\":{"
                           "\"team\":\"x\",\"kubernetes.io/metadata.name\":\"team-x\"}},"
                           "\"status\":{\"phase\":\"Active\"}}",
                           0, NULL);
    assert_non_null(j);
    assert_int_equal(fair_knamespace_decode(j, &n, &err), 0);
    json_decref(j);
    assert_string_equal(n->meta.name, "team-x");
    assert_int_equal(n->nlabels, 2);
    fair_knamespace_free(n);

    json_t *labels = json_object();
    for (int i = 0; i <= FAIR_DECODE_MAX_ITEMS; i++) {
        char k[32];
        snprintf(k, sizeof k, "k%d", i);
        json_object_set_new(labels, k, json_string("v"));
    }
    j = json_pack("{s:{s:s,s:o}}", "metadata", "name", "big", "labels", labels);
    n = NULL;
    assert_int_not_equal(fair_knamespace_decode(j, &n, &err), 0);
    assert_null(n);
    assert_non_null(strstr(err.msg, "more than"));
    json_decref(j);
    /* Through the generic table, as the informer decodes. */
    j = json_loads("{\"metadata\":{\"name\":\"plain\"}}", 0, NULL);
    void *o = NULL;
    assert_int_equal(fair_ktype_namespace.decode(j, &o, &err), 0);
    assert_int_equal(((struct fair_knamespace *)o)->nlabels, 0);
    fair_ktype_namespace.free(o);
    json_decref(j);
}

/* All labels, and the required pod (anti-)affinity terms. */
static void test_pod_pod_affinity(void **state)
{
    (void)state;
    struct fair_kpod *p =
        pod_ok(POD_HEAD
               ",\"labels\":{\"app\":\"web\",\"fairshare.dev/queue\":\"q\"}},\"spec\":{"
               "\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution"
               "\":[{\"labelSelector\":{\"matchLabels\":{\"app\":\"db\"}},\"topologyKey\":"
               "\"zone\",\"namespaces\":[\"a\",\"b\"]}]},\"podAntiAffinity\":{"
               "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":{"
               "\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\",\"values\":[\"web\"]}]},"
               "\"topologyKey\":\"kubernetes.io/hostname\",\"namespaceSelector\":{}},{"
               "\"topologyKey\":\"zone\"}],\"preferredDuringSchedulingIgnoredDuringExecution\":"
               "[{\"weight\":1,\"podAffinityTerm\":{\"topologyKey\":\"zone\"}}]}},"
               "\"containers\":[{\"name\":\"c\"}]}}");
    assert_null(p->problem);
    assert_int_equal(p->nlabels, 2);
    assert_string_equal(p->queue, "q");
    const struct fair_pod_affinity *a = p->pod_affinity;
    assert_non_null(a);
    assert_int_equal(a->naffinity, 1);
    assert_string_equal(a->affinity[0].topology_key, "zone");
    assert_int_equal(a->affinity[0].selector.nmatch_labels, 1);
    assert_string_equal(a->affinity[0].selector.match_labels[0].value, "db");
    assert_int_equal(a->affinity[0].nnamespaces, 2);
    assert_string_equal(a->affinity[0].namespaces[1], "b");
    assert_false(a->affinity[0].all_namespaces);
    assert_int_equal(a->nanti, 2);
    assert_true(a->anti[0].all_namespaces);
    assert_int_equal(a->anti[0].selector.nexprs, 1);
    assert_string_equal(a->anti[0].selector.exprs[0].values[0], "web");
    assert_true(a->anti[1].selector.nothing); /* no labelSelector: matches nothing */
    assert_int_equal(a->npref_anti, 1);
    assert_false(a->anti[0].ns_by_labels);
    fair_kpod_free(p);

    /* A namespaceSelector with requirements: the term's namespaces are
     * those listed and those whose labels it matches; no problem. */
    p = pod_ok(POD_HEAD "},\"spec\":{\"affinity\":{\"podAntiAffinity\":{"
                        "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":{"
                        "\"matchLabels\":{\"app\":\"db\"}},\"topologyKey\":\"zone\","
                        "\"namespaces\":[\"x\"],\"namespaceSelector\":{\"matchLabels\":{"
                        "\"team\":\"a\"},\"matchExpressions\":[{\"key\":\"tier\",\"operator\":"
                        "\"NotIn\",\"values\":[\"b\",\"c\"]}]}}]},\"podAffinity\":{"
                        "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":3,"
                        "\"podAffinityTerm\":{\"topologyKey\":\"zone\",\"namespaceSelector\":"
                        "{\"matchLabels\":{}}}}]}},\"containers\":[{\"name\":\"c\"}]}}");
    assert_null(p->problem);
    a = p->pod_affinity;
    assert_non_null(a);
    assert_int_equal(a->nanti, 1);
    assert_true(a->anti[0].ns_by_labels);
    assert_false(a->anti[0].all_namespaces);
    assert_int_equal(a->anti[0].nnamespaces, 1);
    assert_string_equal(a->anti[0].namespaces[0], "x");
    assert_int_equal(a->anti[0].selector.nmatch_labels, 1);
    assert_string_equal(a->anti[0].selector.match_labels[0].value, "db");
    assert_int_equal(a->anti[0].ns_selector.nmatch_labels, 1);
    assert_string_equal(a->anti[0].ns_selector.match_labels[0].key, "team");
    assert_int_equal(a->anti[0].ns_selector.nexprs, 1);
    assert_int_equal(a->anti[0].ns_selector.exprs[0].op, FAIR_SEL_NOT_IN);
    assert_int_equal(a->anti[0].ns_selector.exprs[0].nvalues, 2);
    assert_string_equal(a->anti[0].ns_selector.exprs[0].values[1], "c");
    assert_false(a->anti[0].ns_selector.invalid);
    /* {matchLabels: {}} is empty: every namespace. */
    assert_int_equal(a->npref_affinity, 1);
    assert_true(a->pref_affinity[0].all_namespaces);
    assert_false(a->pref_affinity[0].ns_by_labels);
    fair_kpod_free(p);

    /* Preferred terms: {weight, podAffinityTerm}, after the required ones. */
    p = pod_ok(POD_HEAD
               "},\"spec\":{\"affinity\":{\"podAffinity\":{"
               "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":7,"
               "\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
               "\"topologyKey\":\"zone\"}}]},\"podAntiAffinity\":{"
               "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"h\"}],"
               "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,"
               "\"podAffinityTerm\":{\"labelSelector\":{},\"topologyKey\":\"node\"}}]}},"
               "\"containers\":[{\"name\":\"c\"}]}}");
    assert_null(p->problem);
    a = p->pod_affinity;
    assert_non_null(a);
    assert_int_equal(a->naffinity, 0);
    assert_int_equal(a->nanti, 1);
    assert_string_equal(a->anti[0].topology_key, "h");
    assert_int_equal(a->npref_affinity, 1);
    assert_int_equal(a->pref_affinity[0].weight, 7);
    assert_string_equal(a->pref_affinity[0].topology_key, "zone");
    assert_string_equal(a->pref_affinity[0].selector.match_labels[0].value, "db");
    assert_int_equal(a->npref_anti, 1);
    assert_int_equal(a->pref_anti[0].weight, 100);
    assert_string_equal(a->pref_anti[0].topology_key, "node");
    assert_false(a->pref_anti[0].selector.nothing);
    fair_kpod_free(p);

    /* Topology spread: DoNotSchedule first, then ScheduleAnyway. */
    p = pod_ok(POD_HEAD "},\"spec\":{\"topologySpreadConstraints\":[{\"maxSkew\":2,"
                        "\"topologyKey\":\"zone\",\"whenUnsatisfiable\":\"DoNotSchedule\","
                        "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}}},{\"maxSkew\":1,"
                        "\"topologyKey\":\"node\",\"whenUnsatisfiable\":\"ScheduleAnyway\"}],"
                        "\"containers\":[{\"name\":\"c\"}]}}");
    assert_null(p->problem);
    assert_int_equal(p->nspread, 1);
    assert_string_equal(p->spread[0].topology_key, "zone");
    assert_int_equal(p->spread[0].max_skew, 2);
    assert_string_equal(p->spread[0].selector.match_labels[0].value, "web");
    assert_int_equal(p->nspread_soft, 1);
    assert_string_equal(p->spread[1].topology_key, "node");
    assert_int_equal(p->spread[1].max_skew, 1);
    fair_kpod_free(p);
    p = pod_ok(POD_HEAD "},\"spec\":{\"topologySpreadConstraints\":[{\"maxSkew\":1,"
                        "\"minDomains\":3,\"topologyKey\":\"zone\",\"whenUnsatisfiable\":"
                        "\"DoNotSchedule\"}],\"containers\":[{\"name\":\"c\"}]}}");
    assert_null(p->problem);
    assert_int_equal(p->nspread, 1);
    assert_int_equal(p->spread[0].min_domains, 3);
    fair_kpod_free(p);
    p = pod_ok(POD_HEAD "},\"spec\":{\"topologySpreadConstraints\":[{\"maxSkew\":1,"
                        "\"minDomains\":2,\"topologyKey\":\"zone\",\"whenUnsatisfiable\":"
                        "\"ScheduleAnyway\"}],\"containers\":[{\"name\":\"c\"}]}}");
    assert_non_null(p->problem);
    assert_non_null(strstr(p->problem, "minDomains must be 1 or more, with whenUnsatisfiable"));
    fair_kpod_free(p);
    p = pod_ok(POD_HEAD "},\"spec\":{\"topologySpreadConstraints\":[{\"maxSkew\":0,"
                        "\"topologyKey\":\"zone\",\"whenUnsatisfiable\":\"DoNotSchedule\"}],"
                        "\"containers\":[{\"name\":\"c\"}]}}");
    assert_non_null(p->problem);
    assert_non_null(strstr(p->problem, "maxSkew must be 1 or more"));
    assert_int_equal(p->nspread, 0);
    fair_kpod_free(p);

    static const struct {
        const char *aff;
        const char *needle;
    } bad[] = {
        {"{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
         "\"labelSelector\":{},\"topologyKey\":\"zone\",\"namespaceSelector\":{"
         "\"matchExpressions\":{}}}]}}",
         "bad matchLabels or matchExpressions"},
        {"{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
         "\"labelSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\","
         "\"values\":[\"1\"]}]},\"topologyKey\":\"zone\"}]}}",
         "does not parse"},
        {"{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{}}}",
         "want an array"},
        {"{\"podAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
         "\"weight\":101,\"podAffinityTerm\":{\"topologyKey\":\"zone\"}}]}}",
         "weight must be 1 to 100"},
        {"{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
         "\"weight\":1}]}}",
         "podAffinityTerm"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 POD_HEAD "},\"spec\":{\"affinity\":%s,\"containers\":[{\"name\":\"c\"}]}}",
                 bad[i].aff);
        p = pod_ok(text);
        if (!p->problem || !strstr(p->problem, bad[i].needle))
            fail_msg("case %zu: problem \"%s\" lacks \"%s\"", i, p->problem ? p->problem : "(null)",
                     bad[i].needle);
        fair_kpod_free(p);
    }
}

static void test_node(void **state)
{
    (void)state;
    json_t *j =
        load("{\"metadata\":{\"name\":\"gpu-1\",\"uid\":\"n-1\",\"labels\":{"
             "\"nvidia.com/gpu.product\":\"H100\",\"zone\":\"a\"}},"
             "\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"gpu\",\"value\":"
             "\"yes\",\"effect\":\"NoSchedule\"},{\"key\":\"t\",\"effect\":\"NoExecute\"}]},"
             "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"95500m\","
             "\"memory\":\"1Ti\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"True\"}]}}");
    struct fair_knode *n = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_knode_decode(j, &n, &err), 0);
    json_decref(j);
    assert_string_equal(n->meta.name, "gpu-1");
    assert_null(n->meta.namespace_);
    assert_int_equal(n->gpu_count, 8);
    assert_int_equal(n->allocatable.v[FAIR_RES_GPU], 8000);
    assert_int_equal(n->allocatable.v[FAIR_RES_CPU], 95500);
    assert_int_equal(n->allocatable.v[FAIR_RES_MEM], 1LL << 40);
    assert_int_equal(n->max_pods, 110);
    assert_string_equal(n->gpu_model, "H100");
    assert_true(n->unschedulable);
    assert_true(n->ready);
    assert_int_equal(n->nlabels, 2);
    assert_int_equal(n->ntaints, 2);
    assert_string_equal(n->taints[0].key, "gpu");
    assert_string_equal(n->taints[0].value, "yes");
    assert_int_equal(n->taints[0].effect, FAIR_TAINT_NO_SCHEDULE);
    assert_null(n->taints[1].value);
    assert_int_equal(n->taints[1].effect, FAIR_TAINT_NO_EXECUTE);
    fair_knode_free(n);

    j = load("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"taints\":[{\"key\":\"k\",\"effect\":"
             "\"Sometimes\"}]}}");
    assert_int_equal(fair_knode_decode(j, &n, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "node x: spec.taints[0]"));
    json_decref(j);
}

static void test_project(void **state)
{
    (void)state;
    json_t *j =
        load("{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\","
             "\"metadata\":{\"name\":\"vision\",\"uid\":\"p-1\"},\"spec\":{"
             "\"guaranteed\":{\"gpu\":2.5,\"cpu\":\"8\",\"memory\":\"16Gi\"},"
             "\"limit\":{\"gpu\":8},\"overQuotaWeight\":3,\"overQuotaPriority\":2,"
             "\"costCenter\":\"CC-1\",\"namespaces\":[\"a\",\"b\"],\"defaultQueue\":\"d\"}}");
    struct fair_kproject *p = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_kproject_decode(j, &p, &err), 0);
    json_decref(j);
    assert_int_equal(p->quota.guaranteed.v[FAIR_RES_GPU], 2500);
    assert_int_equal(p->quota.guaranteed.v[FAIR_RES_CPU], 8000);
    assert_int_equal(p->quota.guaranteed.v[FAIR_RES_MEM], 16LL << 30);
    assert_int_equal(p->quota.limit.v[FAIR_RES_GPU], 8000);
    assert_true(p->quota.limit.v[FAIR_RES_CPU] == FAIR_UNLIMITED);
    assert_int_equal(p->quota.over_quota_weight, 3);
    assert_int_equal(p->quota.over_quota_priority, 2);
    assert_string_equal(p->team, "vision");
    assert_string_equal(p->cost_center, "CC-1");
    assert_string_equal(p->default_queue, "d");
    assert_int_equal(p->nnamespaces, 2);
    assert_string_equal(p->namespaces[1], "b");
    assert_null(p->problem);
    fair_kproject_free(p);

    /* Defaults. */
    j = load("{\"metadata\":{\"name\":\"bare\"}}");
    assert_int_equal(fair_kproject_decode(j, &p, &err), 0);
    json_decref(j);
    assert_int_equal(p->quota.over_quota_weight, 1);
    assert_int_equal(p->quota.over_quota_priority, 0);
    assert_int_equal(p->quota.guaranteed.v[FAIR_RES_GPU], 0);
    assert_true(p->quota.limit.v[FAIR_RES_GPU] == FAIR_UNLIMITED);
    assert_string_equal(p->team, "bare");
    assert_false(p->share_fractions);
    assert_null(p->problem);
    fair_kproject_free(p);

    /* spec.fractions.shareAcrossProjects: true, false, absent, or bad. */
    static const struct {
        const char *fr;
        bool share, bad;
    } frs[] = {
        {"{\"shareAcrossProjects\":true}", true, false},
        {"{\"shareAcrossProjects\":false}", false, false},
        {"{}", false, false},
        {"{\"shareAcrossProjects\":\"yes\"}", false, true},
        {"\"shared\"", false, true},
    };
    for (size_t i = 0; i < sizeof frs / sizeof *frs; i++) {
        char b[256];
        snprintf(b, sizeof b, "{\"metadata\":{\"name\":\"f\"},\"spec\":{\"fractions\":%s}}",
                 frs[i].fr);
        j = load(b);
        assert_int_equal(fair_kproject_decode(j, &p, &err), 0);
        json_decref(j);
        assert_int_equal(p->share_fractions, frs[i].share);
        if (frs[i].bad)
            assert_non_null(strstr(p->problem, "spec.fractions"));
        else
            assert_null(p->problem);
        fair_kproject_free(p);
    }

    /* Bad values: readable, with problems. */
    static const struct {
        const char *spec;
        const char *needle;
    } bad[] = {
        {"{\"guaranteed\":{\"gpu\":\"two\"}}", "spec.guaranteed.gpu"},
        {"{\"guaranteed\":{\"gpu\":-1}}", "must not be negative"},
        {"{\"guaranteed\":{\"gpu\":4},\"limit\":{\"gpu\":2}}", "spec.limit.gpu is below"},
        {"{\"overQuotaWeight\":0}", "spec.overQuotaWeight"},
        {"{\"overQuotaWeight\":\"heavy\"}", "spec.overQuotaWeight"},
        {"{\"overQuotaPriority\":\"high\"}", "spec.overQuotaPriority"},
        {"{\"guaranteed\":{\"tpu\":1}}", "unknown resource"},
        {"{\"namespaces\":\"a\"}", "spec.namespaces"},
        {"{\"team\":5}", "spec.team: want a string"},
        {"{\"team\":\"\"}", "spec.team: want 1 to 63"},
        {"{\"overQuotaPriority\":1001}", "spec.overQuotaPriority"},
        {"{\"namespaces\":[\"Team_A\"]}", "spec.namespaces[0]: want a namespace name"},
        {"{\"namespaces\":[\"a\",\"a\"]}", "spec.namespaces[1]: \"a\" is listed twice"},
        {"[1]", "spec: want an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"metadata\":{\"name\":\"p\"},\"spec\":%s}", bad[i].spec);
        j = load(text);
        assert_int_equal(fair_kproject_decode(j, &p, &err), 0);
        json_decref(j);
        if (!p->problem || !strstr(p->problem, bad[i].needle))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, p->problem ? p->problem : "(null)",
                     bad[i].needle);
        fair_kproject_free(p);
    }
}

/* issue 15: gpu/<model> keys of guaranteed, limit and lendingLimit, the
 * plain lendingLimit, and what is refused. */
static void test_quota_models_and_lending(void **state)
{
    (void)state;
    struct fair_error err = {0};
    struct fair_kproject *p = NULL;
    json_t *j = load("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"guaranteed\":{\"gpu\":16,"
                     "\"gpu/H100\":8,\"gpu/NVIDIA-A100-SXM4-80GB\":\"4\"},\"limit\":{\"gpu/H100\":"
                     "12},\"lendingLimit\":{\"gpu\":\"6\",\"gpu/H100\":2}}}");
    assert_int_equal(fair_kproject_decode(j, &p, &err), 0);
    json_decref(j);
    assert_null(p->problem);
    assert_int_equal(p->quota.guaranteed.v[FAIR_RES_GPU], 16000);
    assert_int_equal(p->quota.nmodels, 2);
    const struct fair_kmodel_quota *h = NULL, *a = NULL;
    for (size_t i = 0; i < p->quota.nmodels; i++) {
        if (!strcmp(p->quota.models[i].model, "H100"))
            h = &p->quota.models[i];
        if (!strcmp(p->quota.models[i].model, "NVIDIA-A100-SXM4-80GB"))
            a = &p->quota.models[i];
    }
    assert_non_null(h);
    assert_non_null(a);
    assert_int_equal(h->guaranteed, 8000);
    assert_true(h->has_limit);
    assert_int_equal(h->limit, 12000);
    assert_true(h->has_lending_limit);
    assert_int_equal(h->lending_limit, 2000);
    assert_int_equal(a->guaranteed, 4000);
    assert_false(a->has_limit);
    assert_false(a->has_lending_limit);
    assert_int_equal(p->quota.lending_set, 1u << FAIR_RES_GPU);
    assert_int_equal(p->quota.lending_limit.v[FAIR_RES_GPU], 6000);
    fair_kproject_free(p);

    static const struct {
        const char *spec;
        const char *needle;
    } bad[] = {
        {"{\"guaranteed\":{\"gpu/\":1}}", "spec.guaranteed.gpu/: want gpu/<model>"},
        {"{\"guaranteed\":{\"gpu/H 100\":1}}", "want gpu/<model>"},
        {"{\"guaranteed\":{\"gpu/-H100\":1}}", "want gpu/<model>"},
        {"{\"guaranteed\":{\"gpu/H100\":-1}}", "must not be negative"},
        {"{\"guaranteed\":{\"gpu/H100\":\"lots\"}}", "spec.guaranteed.gpu/H100"},
        {"{\"guaranteed\":{\"gpu/H100\":4},\"limit\":{\"gpu/H100\":2}}",
         "spec.limit.gpu/H100 is below"},
        {"{\"guaranteed\":{\"gpu/H100\":4},\"limit\":{\"gpu\":2}}", "above spec.limit.gpu"},
        {"{\"lendingLimit\":{\"tpu\":1}}", "spec.lendingLimit.tpu: unknown resource"},
        {"{\"lendingLimit\":{\"gpu\":-2}}", "must not be negative"},
        {"{\"lendingLimit\":4}", "spec.lendingLimit: want an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"metadata\":{\"name\":\"p\"},\"spec\":%s}", bad[i].spec);
        j = load(text);
        assert_int_equal(fair_kproject_decode(j, &p, &err), 0);
        json_decref(j);
        if (!p->problem || !strstr(p->problem, bad[i].needle))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, p->problem ? p->problem : "(null)",
                     bad[i].needle);
        fair_kproject_free(p);
    }
    /* More models than fit: a problem, no crash. */
    char big[4096] = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"guaranteed\":{";
    for (int i = 0; i < FAIR_KQUOTA_MAX_MODELS + 3; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s\"gpu/M%d\":1", i ? "," : "", i);
    snprintf(big + strlen(big), sizeof big - strlen(big), "}}}");
    j = load(big);
    assert_int_equal(fair_kproject_decode(j, &p, &err), 0);
    json_decref(j);
    assert_non_null(p->problem);
    assert_non_null(strstr(p->problem, "GPU models"));
    assert_int_equal(p->quota.nmodels, FAIR_KQUOTA_MAX_MODELS);
    fair_kproject_free(p);
}

/* issue 15: how a pod names a GPU model. */
static void test_pod_gpu_model(void **state)
{
    (void)state;
    static const struct {
        const char *meta, *spec;
        const char *model; /* NULL: none */
    } cases[] = {
        {"", "\"nodeSelector\":{\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"}",
         "NVIDIA-H100-80GB-HBM3"},
        {",\"annotations\":{\"fairshare.dev/gpu-model\":\"H100\"}", "", "H100"},
        /* The selector wins over the annotation. */
        {",\"annotations\":{\"fairshare.dev/gpu-model\":\"H100\"}",
         "\"nodeSelector\":{\"nvidia.com/gpu.product\":\"A100\"}", "A100"},
        {"",
         "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
         "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.product\","
         "\"operator\":\"In\",\"values\":[\"H100\"]}]}]}}}",
         "H100"},
        /* Two models allowed: names none (the pod may use either). */
        {"",
         "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
         "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.product\","
         "\"operator\":\"In\",\"values\":[\"H100\",\"A100\"]}]}]}}}",
         NULL},
        {"",
         "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
         "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"nvidia.com/gpu.product\","
         "\"operator\":\"In\",\"values\":[\"H100\"]}]},{\"matchExpressions\":[{\"key\":\"zone\","
         "\"operator\":\"Exists\"}]}]}}}",
         NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 POD_HEAD "%s},\"spec\":{%s%s\"containers\":[{\"name\":\"c\"}]}}", cases[i].meta,
                 cases[i].spec, cases[i].spec[0] ? "," : "");
        for (int way = 0; way < 2; way++) {
            /* Decoded whole, and through the informer's field filter. */
            struct fair_kpod *p = NULL;
            if (way == 0) {
                p = pod_ok(text);
            } else {
                json_t *filtered = NULL;
                struct fair_error err = {0};
                assert_int_equal(fair_json_parse_filtered(text, strlen(text), fair_ktype_pod.filter,
                                                          &filtered, &err),
                                 0);
                assert_int_equal(fair_kpod_decode(filtered, &p, &err), 0);
                json_decref(filtered);
            }
            if (cases[i].model && (!p->gpu_model || strcmp(p->gpu_model, cases[i].model)))
                fail_msg("case %zu (way %d): model %s, want %s", i, way,
                         p->gpu_model ? p->gpu_model : "(none)", cases[i].model);
            else if (!cases[i].model && p->gpu_model)
                fail_msg("case %zu (way %d): model %s, want none", i, way, p->gpu_model);
            fair_kpod_free(p);
        }
    }
    struct fair_kpod *p =
        pod_ok(POD_HEAD ",\"annotations\":{\"fairshare.dev/gpu-model\":\"not a model\"}},"
                        "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    assert_null(p->gpu_model);
    assert_non_null(p->problem);
    assert_non_null(strstr(p->problem, "fairshare.dev/gpu-model"));
    fair_kpod_free(p);
}

static void test_queue_from_yaml(void **state)
{
    (void)state;
    const char *yaml = "apiVersion: fairshare.dev/v1alpha1\n"
                       "kind: Queue\n"
                       "metadata: {name: research}\n"
                       "spec:\n"
                       "  project: vision\n"
                       "  guaranteed: {gpu: 1.5, memory: 8Gi}\n"
                       "  limit: {gpu: \"4\"}\n"
                       "  overQuotaWeight: \"2\"\n"
                       "  overQuotaPriority: 5\n"
                       "  reclaimUpTo: Guarantee\n"
                       "  reclaimMinRuntime: 10m\n"
                       "  agingHalfLife: 1h\n"
                       "  fractions: {isolation: required}\n";
    json_t *docs = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_yaml_parse("q.yaml", yaml, strlen(yaml), NULL, &docs, &err), 0);
    struct fair_kqueue *q = NULL;
    assert_int_equal(fair_kqueue_decode(json_array_get(docs, 0), &q, &err), 0);
    json_decref(docs);
    assert_string_equal(q->meta.name, "research");
    assert_string_equal(q->project, "vision");
    assert_int_equal(q->quota.guaranteed.v[FAIR_RES_GPU], 1500);
    assert_int_equal(q->quota.guaranteed.v[FAIR_RES_MEM], 8LL << 30);
    assert_int_equal(q->quota.limit.v[FAIR_RES_GPU], 4000);
    assert_int_equal(q->quota.over_quota_weight, 2);
    assert_int_equal(q->quota.over_quota_priority, 5);
    assert_int_equal(q->reclaim_min_runtime_ms, 600000);
    assert_int_equal(q->aging_half_life_ms, 3600000);
    assert_int_equal(q->quota.reclaim_up_to, FAIR_KRECLAIM_GUARANTEE);
    assert_true(q->fractions_isolated);
    assert_null(q->problem);
    fair_kqueue_free(q);
    /* spec.fractions.isolation: none, absent, or a bad value. */
    static const char *const fr[] = {"{isolation: none}", "{}", "{isolation: strict}", "isolated"};
    for (size_t i = 0; i < 4; i++) {
        char y[512];
        snprintf(y, sizeof y,
                 "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: r}\n"
                 "spec:\n  project: vision\n  fractions: %s\n",
                 fr[i]);
        assert_int_equal(fair_yaml_parse("q.yaml", y, strlen(y), NULL, &docs, &err), 0);
        assert_int_equal(fair_kqueue_decode(json_array_get(docs, 0), &q, &err), 0);
        json_decref(docs);
        assert_false(q->fractions_isolated);
        if (i < 2)
            assert_null(q->problem);
        else
            assert_non_null(strstr(q->problem, "spec.fractions"));
        fair_kqueue_free(q);
    }

    json_t *j = load("{\"metadata\":{\"name\":\"q\"},\"spec\":{\"reclaimMinRuntime\":\"soon\","
                     "\"reclaimUpTo\":\"Everything\",\"agingHalfLife\":60}}");
    assert_int_equal(fair_kqueue_decode(j, &q, &err), 0);
    json_decref(j);
    assert_non_null(strstr(q->problem, "spec.project: missing"));
    assert_non_null(strstr(q->problem, "spec.reclaimMinRuntime"));
    assert_non_null(strstr(q->problem, "spec.agingHalfLife: want a duration"));
    assert_int_equal(q->aging_half_life_ms, 0);
    assert_non_null(strstr(q->problem, "spec.reclaimUpTo: want \"FairShare\" or \"Guarantee\""));
    assert_int_equal(q->quota.reclaim_up_to, FAIR_KRECLAIM_UNSET);
    assert_int_equal(q->quota.over_quota_weight, 1);
    assert_int_equal(q->nconds, 0);
    fair_kqueue_free(q);

    /* status.conditions as the server holds them: those that parse, the
     * rest skipped (a bad time, status or type), never a problem. */
    j = load("{\"metadata\":{\"name\":\"q\"},\"spec\":{\"project\":\"p\"},\"status\":{"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
             "\"lastTransitionTime\":\"2026-11-01T10:00:00Z\"},{\"type\":\"Invalid\","
             "\"status\":\"False\",\"lastTransitionTime\":\"yesterday\"},{\"type\":"
             "\"Overcommitted\",\"status\":\"Maybe\",\"lastTransitionTime\":"
             "\"2026-11-01T10:00:00Z\"},{\"type\":\"AVeryLongConditionTypeName\",\"status\":"
             "\"True\",\"lastTransitionTime\":\"2026-11-01T10:00:00Z\"},{\"type\":"
             "\"Overcommitted\",\"status\":\"False\",\"lastTransitionTime\":"
             "\"2026-11-02T10:00:00Z\"}]}}");
    assert_int_equal(fair_kqueue_decode(j, &q, &err), 0);
    json_decref(j);
    assert_null(q->problem);
    assert_int_equal(q->nconds, 2);
    assert_string_equal(q->conds[0].type, "Ready");
    assert_true(q->conds[0].status);
    assert_int_equal(q->conds[0].since_ms, 1793527200000LL);
    assert_string_equal(q->conds[1].type, "Overcommitted");
    assert_false(q->conds[1].status);
    assert_int_equal(q->conds[1].since_ms, 1793527200000LL + 86400000LL);
    fair_kqueue_free(q);

    /* A Project's status.budget: the alert level its state stands for and
     * its periodStart; anything else 0, never a problem. */
    static const struct {
        const char *budget;
        int level;
        int64_t from_ms;
    } budgets[] = {
        {"{\"state\":\"Warning\",\"periodStart\":\"2026-11-01T00:00:00Z\"}", 80,
         1793491200000LL},
        {"{\"state\":\"Exhausted\",\"periodStart\":\"2026-11-01T00:00:00Z\"}", 100,
         1793491200000LL},
        {"{\"state\":\"Ok\",\"periodStart\":\"2026-11-01T00:00:00Z\"}", 0, 1793491200000LL},
        {"{\"state\":\"exhausted\",\"periodStart\":\"last month\"}", 0, 0},
        {"{\"state\":7,\"periodStart\":[]}", 0, 0},
        {"\"Exhausted\"", 0, 0},
    };
    for (size_t i = 0; i < sizeof budgets / sizeof *budgets; i++) {
        char doc[512];
        snprintf(doc, sizeof doc,
                 "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"namespaces\":[\"n\"]},"
                 "\"status\":{\"budget\":%s}}",
                 budgets[i].budget);
        struct fair_kproject *p = NULL;
        j = load(doc);
        assert_int_equal(fair_kproject_decode(j, &p, &err), 0);
        json_decref(j);
        assert_null(p->problem);
        assert_int_equal(p->budget_level_seen, budgets[i].level);
        assert_int_equal(p->budget_from_seen_ms, budgets[i].from_ms);
        fair_kproject_free(p);
    }
}

static void test_status_and_codes(void **state)
{
    (void)state;
    json_t *j = load("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                     "\"message\":\"pods \\\"x\\\" not found\",\"reason\":\"NotFound\","
                     "\"code\":404}");
    struct fair_kstatus st;
    assert_int_equal(fair_kstatus_decode(j, &st), 0);
    assert_int_equal(st.code, 404);
    assert_string_equal(st.reason, "NotFound");
    assert_string_equal(st.message, "pods \"x\" not found");
    json_decref(j);
    j = load("{\"kind\":\"Pod\"}");
    assert_int_equal(fair_kstatus_decode(j, &st), FAIR_EINVAL);
    json_decref(j);
    assert_int_equal(fair_khttp_code(200), 0);
    assert_int_equal(fair_khttp_code(201), 0);
    assert_int_equal(fair_khttp_code(404), FAIR_ENOTFOUND);
    assert_int_equal(fair_khttp_code(409), FAIR_ECONFLICT);
    assert_int_equal(fair_khttp_code(410), FAIR_EGONE);
    assert_int_equal(fair_khttp_code(429), FAIR_ETOOMANY);
    assert_int_equal(fair_khttp_code(500), FAIR_EHTTP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_whole_gpus),
        cmocka_unit_test(test_pod_group),
        cmocka_unit_test(test_podgroup),
        cmocka_unit_test(test_pod_fraction_gang),
        cmocka_unit_test(test_pod_reservation),
        cmocka_unit_test(test_pod_gpu_memory),
        cmocka_unit_test(test_pod_requeue_fields),
        cmocka_unit_test(test_pod_finished),
        cmocka_unit_test(test_pod_problems),
        cmocka_unit_test(test_pod_active_deadline),
        cmocka_unit_test(test_pod_structural_errors),
        cmocka_unit_test(test_pod_alloc_failures),
        cmocka_unit_test(test_pod_node_affinity),
        cmocka_unit_test(test_pod_scalars_ports),
        cmocka_unit_test(test_namespace_decode),
        cmocka_unit_test(test_pod_pod_affinity),
        cmocka_unit_test(test_node),
        cmocka_unit_test(test_project),
        cmocka_unit_test(test_queue_from_yaml),
        cmocka_unit_test(test_quota_models_and_lending),
        cmocka_unit_test(test_pod_gpu_model),
        cmocka_unit_test(test_status_and_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
