/* Unit tests of lib/kube/jsonfilter.c: unfiltered parsing equals
 * jansson's, filters keep exactly the listed fields, malformed input is
 * rejected with an offset, and pods decoded through fair_ktype_pod.filter
 * equal pods decoded from the whole document. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/alloc.h"
#include "kube/decode.h"
#include "kube/jsonfilter.h"

static void test_unfiltered_equals_jansson(void **state)
{
    (void)state;
    static const char *docs[] = {
        "{}",
        "[]",
        "0",
        "-12",
        "1.5e3",
        "-0.25",
        "true",
        "false",
        "null",
        "\"\"",
        "{\"a\":[1,2,{\"b\":null}],\"c\":\"x\\\"y\\\\z\\/\\n\\t\\u00e9\\u20ac\\ud83d\\ude00\"}",
        " { \"k\" : [ true , false ] , \"n\" : 123456789012345 } ",
        "[\"\xc3\xa9\", 1e-2, 0.0]",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        json_t *mine = NULL;
        struct fair_error err = {0};
        if (fair_json_parse_filtered(docs[i], strlen(docs[i]), NULL, &mine, &err))
            fail_msg("doc %zu: %s", i, err.msg);
        json_t *ref = json_loads(docs[i], JSON_DECODE_ANY, NULL);
        assert_non_null(ref);
        if (!json_equal(mine, ref))
            fail_msg("doc %zu differs", i);
        json_decref(mine);
        json_decref(ref);
    }
}

static void test_big_integer_is_real(void **state)
{
    (void)state;
    const char *doc = "{\"big\":123456789012345678901234567890}";
    json_t *out = NULL;
    assert_int_equal(fair_json_parse_filtered(doc, strlen(doc), NULL, &out, NULL), 0);
    assert_true(json_is_real(json_object_get(out, "big")));
    json_decref(out);
}

static void test_filter_keeps_listed_fields(void **state)
{
    (void)state;
    static const struct fair_jfield inner[] = {{"keep", NULL}, {NULL, NULL}};
    static const struct fair_jfield top[] = {
        {"a", NULL}, {"list", inner}, {"obj", inner}, {NULL, NULL}};
    const char *doc = "{\"a\":{\"x\":[1,{\"y\":2}]},\"skip\":{\"deep\":[[[\"]\\\"}\"]]],\"s\":"
                      "\"\\\\\"},\"list\":[{\"keep\":1,\"drop\":[1,2]},{\"drop\":\"x\"},5],"
                      "\"obj\":{\"drop\":true,\"keep\":\"k\"},\"tail\":-1.5e-3}";
    json_t *out = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_json_parse_filtered(doc, strlen(doc), top, &out, &err), 0);
    json_t *want = json_loads("{\"a\":{\"x\":[1,{\"y\":2}]},\"list\":[{\"keep\":1},{},5],"
                              "\"obj\":{\"keep\":\"k\"}}",
                              0, NULL);
    char *got = json_dumps(out, JSON_SORT_KEYS | JSON_COMPACT);
    if (!json_equal(out, want))
        fail_msg("got %s", got);
    free(got);
    json_decref(out);
    json_decref(want);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct fair_jfield none[] = {{"k", NULL}, {NULL, NULL}};
    static const struct {
        const char *doc;
        int rc;
        const char *needle;
    } cases[] = {
        {"", FAIR_EPARSE, "value expected"},
        {"{\"k\":\"abc", FAIR_EPARSE, "unterminated string"},
        {"{\"k\":\"\\q\"}", FAIR_EPARSE, "bad escape"},
        {"{\"k\":\"\\ud800\"}", FAIR_EPARSE, "surrogate"},
        {"{\"k\":\"\\udc00\"}", FAIR_EPARSE, "lone surrogate"},
        {"{\"k\":\"\\u12\"}", FAIR_EPARSE, "\\u escape"},
        {"{\"k\":01}", FAIR_EPARSE, "',' or '}' expected"},
        {"{\"k\":-}", FAIR_EPARSE, "bad number"},
        {"{\"k\":1.}", FAIR_EPARSE, "bad number"},
        {"{\"k\":tru}", FAIR_EPARSE, "unexpected character"},
        {"{\"k\":1} x", FAIR_EPARSE, "trailing characters"},
        {"{\"k\" 1}", FAIR_EPARSE, "':' expected"},
        {"{k:1}", FAIR_EPARSE, "object key expected"},
        {"{\"k\":\"\xff\"}", FAIR_EPARSE, "UTF-8"},
        /* skipped values are checked for balance, not bracket types: the
         * error shows up where the structure breaks */
        {"{\"skipped\":[1,2}", FAIR_EPARSE, "expected"},
        {"{\"skipped\":\"abc}", FAIR_EPARSE, "unterminated string"},
        {"{\"skipped\":}", FAIR_EPARSE, "unexpected character"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *out = (void *)1;
        struct fair_error err = {0};
        int rc = fair_json_parse_filtered(cases[i].doc, strlen(cases[i].doc), none, &out, &err);
        if (rc != cases[i].rc || !strstr(err.msg, cases[i].needle))
            fail_msg("case %zu: rc %d msg \"%s\", want \"%s\"", i, rc, err.msg, cases[i].needle);
        assert_null(out);
        assert_non_null(strstr(err.msg, "at byte"));
    }
    /* Depth: 64 levels parse, 65 do not, kept or skipped. */
    char deep[200];
    for (int skipped = 0; skipped < 2; skipped++) {
        for (int levels = 64; levels <= 65; levels++) {
            size_t n = 0;
            if (skipped)
                n += (size_t)snprintf(deep, sizeof deep, "{\"s\":");
            int inner = skipped ? levels - 1 : levels;
            for (int i = 0; i < inner; i++)
                deep[n++] = '[';
            for (int i = 0; i < inner; i++)
                deep[n++] = ']';
            if (skipped)
                deep[n++] = '}';
            json_t *out = NULL;
            struct fair_error err = {0};
            int rc = fair_json_parse_filtered(deep, n, skipped ? none : NULL, &out, &err);
            assert_int_equal(rc, levels <= 64 ? 0 : FAIR_ERANGE);
            json_decref(out);
        }
    }
}

/* Pods decoded through the filter must equal pods decoded whole. */
static void same_pod(const struct fair_kpod *a, const struct fair_kpod *b)
{
#define SAME_STR(f)                                                                                \
    do {                                                                                           \
        if ((a->f == NULL) != (b->f == NULL) || (a->f && strcmp(a->f, b->f)))                      \
            fail_msg(#f " differs: %s / %s", a->f ? a->f : "(null)", b->f ? b->f : "(null)");      \
    } while (0)
    SAME_STR(meta.uid);
    SAME_STR(meta.namespace_);
    SAME_STR(meta.name);
    SAME_STR(meta.resource_version);
    SAME_STR(scheduler_name);
    SAME_STR(node_name);
    SAME_STR(queue);
    SAME_STR(gpu_devices);
    SAME_STR(gang);
    SAME_STR(gpu_model);
    SAME_STR(scheduled_reason);
    SAME_STR(disruption_reason);
    SAME_STR(problem);
    assert_int_equal(a->meta.creation_ms, b->meta.creation_ms);
    assert_int_equal(a->meta.deletion_ms, b->meta.deletion_ms);
    assert_int_equal(a->phase, b->phase);
    assert_int_equal(a->priority, b->priority);
    assert_memory_equal(&a->request, &b->request, sizeof a->request);
    assert_int_equal(a->preemptible, b->preemptible);
    assert_int_equal(a->gpu_fraction_milli, b->gpu_fraction_milli);
    assert_int_equal(a->gang_size, b->gang_size);
    assert_int_equal(a->sim_duration_s, b->sim_duration_s);
    assert_int_equal(a->start_ms, b->start_ms);
    assert_int_equal(a->scheduled_condition_false, b->scheduled_condition_false);
    assert_int_equal(a->disruption_target, b->disruption_target);
    assert_int_equal(a->disruption_since_ms, b->disruption_since_ms);
    assert_int_equal(a->nnode_selector, b->nnode_selector);
    assert_int_equal(a->nscalars, b->nscalars);
    for (size_t i = 0; i < a->nscalars; i++) {
        SAME_STR(scalars[i].name);
        assert_int_equal(a->scalars[i].value, b->scalars[i].value);
    }
    assert_int_equal(a->nhost_ports, b->nhost_ports);
    for (size_t i = 0; i < a->nhost_ports; i++) {
        SAME_STR(host_ports[i].host_ip);
        assert_int_equal(a->host_ports[i].port, b->host_ports[i].port);
        assert_int_equal(a->host_ports[i].protocol, b->host_ports[i].protocol);
    }
    assert_int_equal(a->nlabels, b->nlabels);
    for (size_t i = 0; i < a->nlabels; i++) {
        SAME_STR(labels[i].key);
        SAME_STR(labels[i].value);
    }
    assert_int_equal(a->pod_affinity != NULL, b->pod_affinity != NULL);
    if (a->pod_affinity) {
        assert_int_equal(a->pod_affinity->naffinity, b->pod_affinity->naffinity);
        assert_int_equal(a->pod_affinity->nanti, b->pod_affinity->nanti);
    }
    assert_int_equal(a->node_affinity != NULL, b->node_affinity != NULL);
    if (a->node_affinity) {
        assert_int_equal(a->node_affinity->nterms, b->node_affinity->nterms);
        assert_int_equal(a->node_affinity->npreferred, b->node_affinity->npreferred);
        for (size_t i = 0; i < a->node_affinity->nterms; i++)
            assert_int_equal(a->node_affinity->terms[i].nreqs, b->node_affinity->terms[i].nreqs);
    }
    assert_int_equal(a->ntolerations, b->ntolerations);
    for (size_t i = 0; i < a->ntolerations; i++) {
        SAME_STR(tolerations[i].key);
        SAME_STR(tolerations[i].value);
        assert_int_equal(a->tolerations[i].op, b->tolerations[i].op);
        assert_int_equal(a->tolerations[i].any_effect, b->tolerations[i].any_effect);
        assert_int_equal(a->tolerations[i].effect, b->tolerations[i].effect);
    }
#undef SAME_STR
}

static void test_pod_filter_matches_decoder(void **state)
{
    (void)state;
    static const char *pods[] = {
        "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\",\"resourceVersion\":"
        "\"7\",\"creationTimestamp\":\"2026-11-23T19:00:00Z\",\"deletionTimestamp\":"
        "\"2026-11-23T19:00:09Z\",\"labels\":{\"fairshare.dev/queue\":\"q\",\"fairshare.dev/"
        "preemptible\":\"maybe\",\"other\":\"x\"},\"annotations\":{\"fairshare.dev/gpu-fraction\":"
        "\"0.5\",\"fairshare.dev/gang\":\"g\",\"fairshare.dev/gang-size\":\"3\","
        "\"fairshare.dev/gpu-devices\":\"1\",\"sim.fairshare.dev/duration-seconds\":\"60\","
        "\"kubectl.kubernetes.io/last-applied-configuration\":\"{\\\"huge\\\":1}\"},"
        "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":{}}}]},"
        "\"spec\":{\"schedulerName\":\"fairshare\",\"nodeName\":\"n1\",\"priority\":5,"
        "\"nodeSelector\":{\"nvidia.com/gpu.product\":\"H100\"},\"containers\":[{\"name\":\"c\","
        "\"image\":\"i\",\"env\":[{\"name\":\"A\",\"value\":\"B\"}],\"resources\":{\"requests\":"
        "{\"cpu\":\"1\",\"memory\":\"1Gi\",\"rdma/ib\":\"1\"}},\"ports\":[{\"containerPort\":"
        "80,\"hostPort\":8080,\"hostIP\":\"1.2.3.4\",\"name\":\"http\"}]},{\"name\":\"d\",\"resources\":{\"limits\":{"
        "\"cpu\":\"bad\"}}}],\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{"
        "\"cpu\":\"4\"}}}],\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"},{\"key\":"
        "\"x\",\"effect\":\"Never\"}],\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],"
        "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
        "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":"
        "\"In\",\"values\":[\"b\"]}]}]}},\"podAntiAffinity\":{\"requiredDuringScheduling"
        "IgnoredDuringExecution\":[{\"labelSelector\":{\"matchLabels\":{\"other\":\"x\"}},"
        "\"topologyKey\":\"zone\"}]}}},"
        "\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-11-23T19:00:01Z\",\"podIP\":"
        "\"10.0.0.1\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
        "\"reason\":\"R\"},{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"reason\":"
        "\"PreemptionByScheduler\",\"lastTransitionTime\":\"2026-11-23T19:00:05Z\"}]}}",
        "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"containers\":[{\"resources\":{\"limits\":{"
        "\"nvidia.com/gpu\":\"2\"}}}]}}",
    };
    for (size_t i = 0; i < sizeof pods / sizeof pods[0]; i++) {
        json_t *whole = json_loads(pods[i], 0, NULL);
        json_t *part = NULL;
        assert_non_null(whole);
        assert_int_equal(
            fair_json_parse_filtered(pods[i], strlen(pods[i]), fair_ktype_pod.filter, &part, NULL),
            0);
        assert_null(json_object_get(part, "managedFields"));
        struct fair_kpod *a = NULL, *b = NULL;
        assert_int_equal(fair_kpod_decode(whole, &a, NULL), 0);
        assert_int_equal(fair_kpod_decode(part, &b, NULL), 0);
        same_pod(a, b);
        if (i == 0) {
            assert_non_null(a->node_affinity);
            assert_non_null(a->pod_affinity);
            assert_int_equal(a->nlabels, 3);
            assert_int_equal(a->nscalars, 1);
            assert_int_equal(a->nhost_ports, 1);
            assert_non_null(a->problem);
            assert_int_equal(a->ntolerations, 1);
        }
        fair_kpod_free(a);
        fair_kpod_free(b);
        json_decref(whole);
        json_decref(part);
    }
}

/* A Namespace: the filter keeps its name and labels, drops the rest. */
static void test_namespace_filter_matches_decoder(void **state)
{
    (void)state;
    const char *doc = "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-x\",\"uid\":\"u\","
                      "\"labels\":{\"team\":\"x\",\"kubernetes.io/metadata.name\":\"team-x\"},"
                      "\"annotations\":{\"big\":\"y\"}},\"spec\":{\"finalizers\":[\"kubernetes\"]},"
                      "\"status\":{\"phase\":\"Active\"}}";
    json_t *part = NULL;
    assert_int_equal(
        fair_json_parse_filtered(doc, strlen(doc), fair_ktype_namespace.filter, &part, NULL), 0);
    assert_null(json_object_get(part, "spec"));
    assert_null(json_object_get(json_object_get(part, "metadata"), "annotations"));
    struct fair_knamespace *n = NULL;
    assert_int_equal(fair_knamespace_decode(part, &n, NULL), 0);
    assert_string_equal(n->meta.name, "team-x");
    assert_int_equal(n->nlabels, 2);
    fair_knamespace_free(n);
    json_decref(part);
}

static void test_node_filter_matches_decoder(void **state)
{
    (void)state;
    const char *doc =
        "{\"metadata\":{\"name\":\"n\",\"uid\":\"u\",\"labels\":{\"a\":\"b\","
        "\"nvidia.com/gpu.product\":\"H100\"},\"annotations\":{\"x\":\"y\"}},"
        "\"spec\":{\"podCIDR\":\"10.0.0.0/24\",\"unschedulable\":true,\"taints\":[{"
        "\"key\":\"k\",\"effect\":\"NoSchedule\"}]},\"status\":{\"allocatable\":{"
        "\"nvidia.com/gpu\":\"8\",\"cpu\":\"96\",\"memory\":\"1Ti\",\"pods\":\"110\","
        "\"rdma/ib\":\"4\"},"
        "\"images\":[{\"names\":[\"a\"]}],\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"True\"}]}}";
    json_t *whole = json_loads(doc, 0, NULL), *part = NULL;
    assert_int_equal(
        fair_json_parse_filtered(doc, strlen(doc), fair_ktype_node.filter, &part, NULL), 0);
    assert_null(json_object_get(json_object_get(part, "status"), "images"));
    struct fair_knode *a = NULL, *b = NULL;
    assert_int_equal(fair_knode_decode(whole, &a, NULL), 0);
    assert_int_equal(fair_knode_decode(part, &b, NULL), 0);
    assert_memory_equal(&a->allocatable, &b->allocatable, sizeof a->allocatable);
    assert_int_equal(a->gpu_count, b->gpu_count);
    assert_int_equal(a->max_pods, b->max_pods);
    assert_int_equal(a->nlabels, b->nlabels);
    assert_int_equal(a->ntaints, b->ntaints);
    assert_int_equal(a->nscalars, 1);
    assert_int_equal(b->nscalars, 1);
    assert_int_equal(a->scalars[0].value, b->scalars[0].value);
    assert_int_equal(a->unschedulable, b->unschedulable);
    assert_int_equal(a->ready, b->ready);
    assert_string_equal(a->gpu_model, b->gpu_model);
    fair_knode_free(a);
    fair_knode_free(b);
    json_decref(whole);
    json_decref(part);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    const char *doc = "{\"a\":\"x\\ty\",\"b\":[1,2,{\"c\":\"\\u00e9\"}]}";
    for (long n = 0; n < 40; n++) {
        json_t *out = NULL;
        fair_alloc_fail_after(n);
        int rc = fair_json_parse_filtered(doc, strlen(doc), NULL, &out, NULL);
        fair_alloc_fail_after(-1);
        if (rc == 0)
            json_decref(out);
        else
            assert_null(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unfiltered_equals_jansson),
        cmocka_unit_test(test_big_integer_is_real),
        cmocka_unit_test(test_filter_keeps_listed_fields),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_pod_filter_matches_decoder),
        cmocka_unit_test(test_node_filter_matches_decoder),
        cmocka_unit_test(test_namespace_filter_matches_decoder),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
