/* Scheduling constraints end to end against the fake API server: a
 * Job-like set of pods with a required node affinity is bound only to the
 * node labelled for it; a pod whose affinity no node matches says so in
 * its Event and condition, and is bound once a node is labelled to match.
 * Replicas with a required anti-affinity on the hostname spread one per
 * node, host ports are never given twice on a node, and a topology spread
 * constraint splits replicas over zones. Preferred terms choose among the
 * nodes GPU packing leaves equal. A namespaceSelector picks namespaces by
 * their labels, read again when they change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

static void label_node(struct fair_fake *f, const char *node, const char *key, const char *value)
{
    char path[128], body[256];
    long code = 0;
    char *resp = NULL;
    snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
    snprintf(body, sizeof body, "{\"metadata\":{\"labels\":{\"%s\":\"%s\"}}}", key, value);
    if (fair_fake_request_ct(f, "PATCH", path, "application/merge-patch+json", body, &code,
                             &resp) != 0 ||
        code != 200) {
        fprintf(stderr, "PATCH %s -> %ld %s\n", path, code, resp ? resp : "");
        free(resp);
        fail_msg("could not label node %s", node);
    }
    free(resp);
}

#define AFFINITY(pool)                                                                             \
    ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"        \
    "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\","         \
    "\"values\":[\"" pool "\"]}]}]}}}"

static void test_required_node_affinity(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 3, 8, "nodeaff");
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "24", "[\"team-a\"]", "qa");
    mk_queue(&fake, "qa", "a", "24", 1);
    label_node(&fake, "node-0001", "pool", "b");
    /* Six one-GPU workers of one job, all with pool In [b]. */
    char name[32];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "job-w%d", i);
        mk_pod_spec(&fake, "team-a", name, "qa", "1", NULL, NULL, NULL, AFFINITY("b"), 0);
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 6, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the job's pods were not bound");
    }
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "job-w%d", i);
        char *node = pod_node(&fake, "team-a", name, NULL);
        assert_string_equal(node, "node-0001");
        free(node);
    }
    /* No node has pool=c: the pod waits and says why. */
    mk_pod_spec(&fake, "team-a", "lonely", "qa", "1", NULL, NULL, NULL, AFFINITY("c"), 0);
    if (!WAIT_UNTIL(count_events(&fake, "FailedScheduling", "team-a", "lonely") >= 1, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("no FailedScheduling event");
    }
    char *msg = event_message(&fake, "FailedScheduling", "team-a", "lonely");
    assert_non_null(msg);
    assert_non_null(strstr(msg, "no node matches the pod's required node affinity"));
    free(msg);
    /* Within the queue's guarantee: a node that does not exist yet (one
     * with pool=c) would let it run, so the reason is the one cluster
     * autoscalers act on. */
    if (!WAIT_UNTIL(pod_condition_is(&fake, "team-a", "lonely", "PodScheduled", "Unschedulable"),
                    WAIT_MS)) {
        char *why = pod_condition(&fake, "team-a", "lonely", "PodScheduled", NULL);
        ctl_dump_log(&c, 40);
        fail_msg("PodScheduled reason %s, want Unschedulable", why ? why : "(none)");
    }
    char *node = pod_node(&fake, "team-a", "lonely", NULL);
    assert_string_equal(node, "");
    free(node);
    /* Label a node to match: the pod is bound there, and only there. */
    label_node(&fake, "node-0002", "pool", "c");
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 7, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the pod was not bound after the label");
    }
    node = pod_node(&fake, "team-a", "lonely", NULL);
    assert_string_equal(node, "node-0002");
    free(node);
    stop_all(&fake, &c);
}

#define ANTI_WEB                                                                                   \
    ",\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"    \
    "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"topologyKey\":"                       \
    "\"kubernetes.io/hostname\"}]}}"

static void test_anti_affinity_and_ports(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 3, 8, "antiaff");
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "24", "[\"team-a\"]", "qa");
    mk_queue(&fake, "qa", "a", "24", 1);
    /* Four replicas, three nodes: one each, the fourth waits. */
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "web-%d", i);
        mk_pod_spec(&fake, "team-a", name, "qa", "1", NULL, ",\"app\":\"web\"", NULL, ANTI_WEB, 0);
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 3, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("three replicas were not bound");
    }
    nap(1500);
    assert_int_equal(count_pods(&fake, "team-a", 1), 3);
    char seen[4][32];
    int nseen = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "web-%d", i);
        char *node = pod_node(&fake, "team-a", name, NULL);
        if (*node) {
            for (int k = 0; k < nseen; k++)
                assert_string_not_equal(seen[k], node);
            snprintf(seen[nseen++], sizeof seen[0], "%s", node);
        }
        free(node);
    }
    assert_int_equal(nseen, 3);
    /* Host port 9000: four pods, three nodes, one each. */
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "port-%d", i);
        char body[2048], path[128];
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                 "\"namespace\":\"team-a\",\"labels\":{\"fairshare.dev/queue\":\"qa\","
                 "\"app\":\"port\"}},\"spec\":{\"schedulerName\":\"fairshare\","
                 "\"terminationGracePeriodSeconds\":0,\"containers\":[{\"name\":\"main\","
                 "\"image\":\"busybox\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}},"
                 "\"ports\":[{\"containerPort\":9000,\"hostPort\":9000}]}]}}",
                 name);
        snprintf(path, sizeof path, "/api/v1/namespaces/team-a/pods");
        must_create(&fake, path, body);
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 6, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("three host-port pods were not bound");
    }
    nap(1500);
    assert_int_equal(count_pods(&fake, "team-a", 1), 6);
    nseen = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "port-%d", i);
        char *node = pod_node(&fake, "team-a", name, NULL);
        if (*node) {
            for (int k = 0; k < nseen; k++)
                assert_string_not_equal(seen[k], node);
            snprintf(seen[nseen++], sizeof seen[0], "%s", node);
        }
        free(node);
    }
    assert_int_equal(nseen, 3);
    stop_all(&fake, &c);
}

#define SPREAD_ZONE                                                                                \
    ",\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","                     \
    "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{\"matchLabels\":{\"app\":"         \
    "\"spread\"}}}]"

/* Two zones of one and two nodes: four replicas with maxSkew 1 on the
 * zone go two and two, although packing would fill one node. */
static void test_topology_spread(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 3, 8, "spread");
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "24", "[\"team-a\"]", "qa");
    mk_queue(&fake, "qa", "a", "24", 1);
    label_node(&fake, "node-0000", "zone", "z1");
    label_node(&fake, "node-0001", "zone", "z2");
    label_node(&fake, "node-0002", "zone", "z2");
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "spread-%d", i);
        mk_pod_spec(&fake, "team-a", name, "qa", "1", NULL, ",\"app\":\"spread\"", NULL,
                    SPREAD_ZONE, 0);
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 4, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the replicas were not bound");
    }
    int z1 = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "spread-%d", i);
        char *node = pod_node(&fake, "team-a", name, NULL);
        z1 += strcmp(node, "node-0000") == 0;
        free(node);
    }
    assert_int_equal(z1, 2);
    stop_all(&fake, &c);
}

#define PREFER_POOL_C                                                                              \
    ",\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"      \
    "\"weight\":50,\"preference\":{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\","   \
    "\"values\":[\"c\"]}]}}]}}"
#define AVOID_PREF                                                                                 \
    ",\"affinity\":{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"   \
    "\"weight\":100,\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"pref\"}},"  \
    "\"topologyKey\":\"kubernetes.io/hostname\"}}]}}"

/* Preferred terms score the nodes GPU packing leaves equal: on three empty
 * nodes a pod preferring pool=c goes to the one node labelled so (packing
 * alone takes the first); a second pod that prefers to avoid it still goes
 * to that now partly used node, because packing comes first. */
static void test_preferred_terms(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 3, 8, "prefer");
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "24", "[\"team-a\"]", "qa");
    mk_queue(&fake, "qa", "a", "24", 1);
    label_node(&fake, "node-0002", "pool", "c");
    mk_pod_spec(&fake, "team-a", "pref", "qa", "1", NULL, ",\"app\":\"pref\"", NULL, PREFER_POOL_C,
                0);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 1, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the pod was not bound");
    }
    char *node = pod_node(&fake, "team-a", "pref", NULL);
    assert_string_equal(node, "node-0002");
    free(node);
    mk_pod_spec(&fake, "team-a", "away", "qa", "1", NULL, NULL, NULL, AVOID_PREF, 0);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 2, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the second pod was not bound");
    }
    node = pod_node(&fake, "team-a", "away", NULL);
    assert_string_equal(node, "node-0002");
    free(node);
    stop_all(&fake, &c);
}

static void label_namespace(struct fair_fake *f, const char *ns, const char *labels_json)
{
    char path[128], body[256];
    long code = 0;
    char *resp = NULL;
    snprintf(path, sizeof path, "/api/v1/namespaces/%s", ns);
    snprintf(body, sizeof body, "{\"metadata\":{\"labels\":%s}}", labels_json);
    if (fair_fake_request_ct(f, "PATCH", path, "application/merge-patch+json", body, &code,
                             &resp) != 0 ||
        code != 200) {
        fprintf(stderr, "PATCH %s -> %ld %s\n", path, code, resp ? resp : "");
        free(resp);
        fail_msg("could not label namespace %s", ns);
    }
    free(resp);
}

/* The value of label key on namespace ns (NULL: none); the caller frees. */
static char *namespace_label(struct fair_fake *f, const char *ns, const char *key)
{
    char path[128];
    long code = 0;
    char *resp = NULL;
    snprintf(path, sizeof path, "/api/v1/namespaces/%s", ns);
    assert_int_equal(fair_fake_request(f, "GET", path, NULL, &code, &resp), 0);
    assert_int_equal(code, 200);
    json_t *j = json_loads(resp, 0, NULL);
    free(resp);
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(j, "metadata"), "labels"), key));
    char *out = v ? strdup(v) : NULL;
    json_decref(j);
    return out;
}

#define ANTI_TRAIN_IN(nsel)                                                                        \
    ",\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"    \
    "\"labelSelector\":{\"matchLabels\":{\"role\":\"train\"}},\"topologyKey\":"                    \
    "\"kubernetes.io/hostname\",\"namespaceSelector\":" nsel "}]}}"

/* namespaceSelector: a pod with anti-affinity against the pods of the
 * namespaces labelled team=x stays off their node (packing alone would put
 * it there); once the namespace's label changes, the next pod with the
 * same term may go there; the label the API server sets on every
 * namespace (kubernetes.io/metadata.name) selects one by name. */
static void test_namespace_selector(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 2, 8, "nssel");
    const char *ns[] = {"team-a", "team-x", NULL};
    mk_namespaces(&fake, ns);
    /* As the real server: the name label on create, and kept on update. */
    char *v = namespace_label(&fake, "team-x", "kubernetes.io/metadata.name");
    assert_non_null(v);
    assert_string_equal(v, "team-x");
    free(v);
    label_namespace(&fake, "team-x", "{\"team\":\"x\",\"kubernetes.io/metadata.name\":\"other\"}");
    v = namespace_label(&fake, "team-x", "kubernetes.io/metadata.name");
    assert_string_equal(v, "team-x");
    free(v);
    mk_project(&fake, "a", "16", "[\"team-a\",\"team-x\"]", "qa");
    mk_queue(&fake, "qa", "a", "16", 1);
    mk_pod_spec(&fake, "team-x", "train-0", "qa", "4", NULL, ",\"role\":\"train\"", NULL, NULL, 0);
    if (!WAIT_UNTIL(count_pods(&fake, "team-x", 1) == 1, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the training pod was not bound");
    }
    char *train = pod_node(&fake, "team-x", "train-0", NULL);
    assert_true(*train);
    mk_pod_spec(&fake, "team-a", "guard-1", "qa", "1", NULL, NULL, NULL,
                ANTI_TRAIN_IN("{\"matchLabels\":{\"team\":\"x\"}}"), 0);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 1, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("guard-1 was not bound (is it rejected?)");
    }
    char *node = pod_node(&fake, "team-a", "guard-1", NULL);
    assert_true(*node);
    assert_string_not_equal(node, train);
    free(node);
    /* team-x is no longer team=x: the same term leaves its node free. */
    label_namespace(&fake, "team-x", "{\"team\":\"y\"}");
    nap(500);
    mk_pod_spec(&fake, "team-a", "guard-2", "qa", "1", NULL, NULL, NULL,
                ANTI_TRAIN_IN("{\"matchLabels\":{\"team\":\"x\"}}"), 0);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 2, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("guard-2 was not bound");
    }
    node = pod_node(&fake, "team-a", "guard-2", NULL);
    assert_string_equal(node, train); /* packing: the fuller node */
    free(node);
    /* By name, through the label the API server keeps. */
    mk_pod_spec(&fake, "team-a", "guard-3", "qa", "1", NULL, NULL, NULL,
                ANTI_TRAIN_IN("{\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\","
                              "\"operator\":\"In\",\"values\":[\"team-x\"]}]}"),
                0);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 3, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("guard-3 was not bound");
    }
    node = pod_node(&fake, "team-a", "guard-3", NULL);
    assert_true(*node);
    assert_string_not_equal(node, train);
    free(node);
    free(train);
    stop_all(&fake, &c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_required_node_affinity, tc_teardown),
        cmocka_unit_test_teardown(test_anti_affinity_and_ports, tc_teardown),
        cmocka_unit_test_teardown(test_topology_spread, tc_teardown),
        cmocka_unit_test_teardown(test_preferred_terms, tc_teardown),
        cmocka_unit_test_teardown(test_namespace_selector, tc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
