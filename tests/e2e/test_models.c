/* End to end on a real API server: GPU model pools and a lending limit
 * (issue 15, items 1-2). The second node is relabelled
 * nvidia.com/gpu.product=A100 for the scenario (and back afterwards), so
 * the cluster has 8 H100s and 8 A100s. Project a is guaranteed 8 GPUs, all
 * H100 (through a gpuModels alias, "hopper"), of which 4 may be lent;
 * project b names no model. b's 16 pods get the 8 A100s and the 4
 * lendable H100s; a's 4 pods, which name H100 with a nodeSelector as users
 * already do, start at once on the H100 node without an eviction; the
 * status (lendable, gpuModels) and the ledger's report by team and model
 * say so. The CRD keeps the gpu/<model> and lendingLimit keys.
 *
 * Node sizes: the first node is given 128 CPUs (the second keeps 64), so
 * the nodes differ by size and the bigger one sorts first by name. A
 * 4-GPU pod of 32 CPUs goes to the smaller node, and an 8-GPU pod of 100
 * CPUs, which only the bigger node holds, then starts there.
 *
 * Dead remainders: the first node is given 32.5 CPUs, so it sorts first.
 * A 0.81 and a 0.77 GPU pod and six 1-GPU pods, all at 4 CPUs per GPU, fill
 * it up to 0.19 and 0.23 free on two devices and 2.18 free CPUs. A 0.23
 * GPU pod of 2 CPUs then fills the 0.23 there: the 0.19 it leaves without
 * CPU is a dead remainder (no common size fits it), so balance does not
 * count it as stranded, and the pod does not break up a device of the
 * second node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2e.h"

static void relabel(int node, const char *model)
{
    char path[256], body[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", e2e_node(node));
    snprintf(body, sizeof body, "{\"metadata\":{\"labels\":{\"nvidia.com/gpu.product\":\"%s\"}}}",
             model);
    long code = e2e_req("PATCH", path, body, NULL);
    if (code != 200)
        fail_msg("relabelling %s: HTTP %ld", e2e_node(node), code);
}

/* How many of the n pods prefix-0 .. prefix-(n-1) of ns say reason. */
static int with_reason(const char *ns, const char *prefix, int n, const char *reason)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        char *r = e2e_pod_reason(ns, name);
        k += r && !strcmp(r, reason);
        free(r);
    }
    return k;
}

static int teardown(void **state)
{
    e2e_scenario_end();
    relabel(1, "H100"); /* as ../shared/k8s made it */
    (void)state;
    return 0;
}

static void set_cpus(int node, const char *cpus)
{
    char path[256], body[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s/status", e2e_node(node));
    snprintf(body, sizeof body,
             "{\"status\":{\"capacity\":{\"cpu\":\"%s\"},\"allocatable\":{\"cpu\":\"%s\"}}}", cpus,
             cpus);
    long code = e2e_req("PATCH", path, body, NULL);
    if (code != 200)
        fail_msg("patching the CPUs of %s: HTTP %ld", e2e_node(node), code);
}

static int teardown_sizes(void **state)
{
    e2e_scenario_end();
    set_cpus(0, "64"); /* as ../shared/k8s made it */
    (void)state;
    return 0;
}

static const char *status_str(const char *kind, const char *name, const char *dotted)
{
    static char out[128];
    char path[512];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/%s/%s", kind, name);
    json_t *o = e2e_get(path);
    const char *s = o ? e2e_str(o, dotted) : NULL;
    snprintf(out, sizeof out, "%s", s ? s : "");
    json_decref(o);
    return out;
}

/* Live bound pods of ns on node i. */
static int bound_on(const char *ns, int node)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    json_t *l = e2e_get(path);
    int n = 0;
    size_t k;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), k, p)
    {
        const char *nn = e2e_str(p, "spec.nodeName");
        const char *phase = e2e_str(p, "status.phase");
        if (nn && !strcmp(nn, e2e_node(node)) && !e2e_str(p, "metadata.deletionTimestamp") &&
            (!phase || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed"))))
            n++;
    }
    json_decref(l);
    return n;
}

static void test_model_pools_and_lending_limit(void **state)
{
    (void)state;
    char pre[128], nsa[160], nsb[160], pa[160], pb[160], qa[160], qb[160];
    e2e_scenario_begin("models", pre, sizeof pre);
    snprintf(nsa, sizeof nsa, "%s-a", pre);
    snprintf(nsb, sizeof nsb, "%s-b", pre);
    snprintf(pa, sizeof pa, "%s-pa", pre);
    snprintf(pb, sizeof pb, "%s-pb", pre);
    snprintf(qa, sizeof qa, "%s-qa", pre);
    snprintf(qb, sizeof qb, "%s-qb", pre);
    relabel(1, "A100");
    e2e_namespace(nsa);
    e2e_namespace(nsb);
    char path[512];
    e2e_create("/apis/fairshare.dev/v1alpha1/projects",
               "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\",\"metadata\":{"
               "\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"],\"guaranteed\":{\"gpu\":8,"
               "\"gpu/hopper\":8},\"lendingLimit\":{\"gpu\":4,\"gpu/hopper\":4}}}",
               pa, nsa);
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/projects/%s", pa);
    e2e_track(path);
    /* The API server kept the model keys and the lending limit. */
    json_t *p = e2e_get(path);
    assert_non_null(p);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(p, "spec"), "guaranteed"), "gpu/hopper")),
                     8);
    assert_non_null(json_object_get(json_object_get(p, "spec"), "lendingLimit"));
    json_decref(p);
    e2e_create("/apis/fairshare.dev/v1alpha1/queues",
               "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{"
               "\"name\":\"%s\"},\"spec\":{\"project\":\"%s\",\"guaranteed\":{\"gpu\":8,"
               "\"gpu/hopper\":8},\"lendingLimit\":{\"gpu\":4,\"gpu/hopper\":4}}}",
               qa, pa);
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/queues/%s", qa);
    e2e_track(path);
    e2e_project(pb, nsb, "8", NULL);
    e2e_queue(qb, pb, "8", 0);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "models", "gpuModels:\n  hopper: H100\n");

    e2e_pods(nsb, "b", 16, qb, "1", NULL);
    if (!E2E_WAIT(e2e_count(nsb, NULL).bound == 12, E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 40);
        fail_msg("b: %d bound, want 12", e2e_count(nsb, NULL).bound);
    }
    assert_int_equal(bound_on(nsb, 1), 8); /* every A100 */
    assert_int_equal(bound_on(nsb, 0), 4); /* the lendable H100s */
    assert_true(
        E2E_WAIT(!strcmp(status_str("queues", qa, "status.lendable.gpu"), "4"), E2E_WAIT_MS));
    assert_true(E2E_WAIT(!strcmp(status_str("queues", qa, "status.lent.gpu"), "4"), E2E_WAIT_MS));
    json_t *q = NULL;
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/queues/%s", qa);
    assert_true(E2E_WAIT(
        (json_decref(q),
         (q = e2e_get(path)) != NULL &&
             json_object_get(json_object_get(json_object_get(q, "status"), "gpuModels"), "H100")),
        E2E_WAIT_MS));
    json_t *h = json_object_get(json_object_get(json_object_get(q, "status"), "gpuModels"), "H100");
    assert_string_equal(json_string_value(json_object_get(h, "guaranteed")), "8");
    assert_string_equal(json_string_value(json_object_get(h, "lendable")), "4");
    json_decref(q);
    e2e_nap(1500);
    assert_int_equal(e2e_count(nsb, NULL).bound, 12);
    /* b's other 4 say why: a's kept H100s, not b's fair share. */
    if (!E2E_WAIT(with_reason(nsb, "b", 16, "LendingLimit") == 4, E2E_WAIT_MS)) {
        e2e_dump_pods(nsb);
        fail_msg("%d of b's pods say LendingLimit, want 4",
                 with_reason(nsb, "b", 16, "LendingLimit"));
    }

    /* a's pods name H100 the usual way: a nodeSelector. */
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", nsa);
        e2e_create(path,
                   "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a-%d\","
                   "\"labels\":{\"app\":\"e2e\",\"fairshare.dev/queue\":\"%s\"}},\"spec\":{"
                   "\"schedulerName\":\"%s\",\"terminationGracePeriodSeconds\":0,"
                   "\"nodeSelector\":{\"nvidia.com/gpu.product\":\"H100\"},\"containers\":[{"
                   "\"name\":\"main\",\"image\":\"registry.k8s.io/pause:3.7\",\"resources\":{"
                   "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
                   i, qa, e2e_scheduler());
    }
    if (!E2E_WAIT(e2e_count(nsa, NULL).bound == 4, E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 40);
        fail_msg("a: %d bound, want 4", e2e_count(nsa, NULL).bound);
    }
    assert_int_equal(bound_on(nsa, 0), 4);
    assert_int_equal(e2e_events(nsb, "Preempted"), 0);
    assert_int_equal(e2e_count(nsb, NULL).bound, 12);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);

    /* The ledger by team and model. */
    char cmd[1400];
    snprintf(cmd, sizeof cmd,
             "%s/fairsharectl report --db '%s' --from 2000-01-01 --to 2100-01-01 --by team,model "
             "--format csv",
             FAIR_BIN_DIR, ctl.ledger);
    FILE *rp = popen(cmd, "r");
    assert_non_null(rp);
    char line[512], want[3][256];
    snprintf(want[0], sizeof want[0], "%s,H100,", pa);
    snprintf(want[1], sizeof want[1], "%s,A100,", pb);
    snprintf(want[2], sizeof want[2], "%s,H100,", pb);
    int seen[3] = {0};
    while (fgets(line, sizeof line, rp))
        for (int i = 0; i < 3; i++)
            if (!strncmp(line, want[i], strlen(want[i])))
                seen[i]++;
    assert_int_equal(pclose(rp), 0);
    for (int i = 0; i < 3; i++)
        if (seen[i] != 1)
            fail_msg("report: no single row %s...", want[i]);
}

/* A pod of fraction (NULL: whole GPUs) or gpus whole GPUs, with cpu. */
static void cpu_pod(const char *ns, const char *name, const char *queue, const char *fraction,
                    int gpus, const char *cpu)
{
    char res[256], ann[128];
    if (fraction) {
        snprintf(res, sizeof res, "{\"requests\":{\"cpu\":\"%s\"}}", cpu);
        snprintf(ann, sizeof ann, ",\"fairshare.dev/gpu-fraction\":\"%s\"", fraction);
    } else {
        snprintf(res, sizeof res,
                 "{\"limits\":{\"nvidia.com/gpu\":\"%d\"},\"requests\":{\"cpu\":\"%s\"}}", gpus,
                 cpu);
    }
    e2e_pod_res(ns, name, queue, res, NULL, fraction ? ann : NULL);
}

/* Of pod name in ns, once bound: its node (annotation NULL) or that
 * annotation; "" before (static buffer). */
static const char *bound_field(const char *ns, const char *name, const char *annotation)
{
    static char out[256];
    char path[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    json_t *p = e2e_get(path);
    const char *n = p ? e2e_str(p, "spec.nodeName") : NULL;
    /* An annotation's key has dots: not a path for e2e_str. */
    if (n && annotation)
        n = json_string_value(json_object_get(
            json_object_get(json_object_get(p, "metadata"), "annotations"), annotation));
    snprintf(out, sizeof out, "%s", n ? n : "");
    json_decref(p);
    return out;
}

static const char *node_of(const char *ns, const char *name)
{
    return bound_field(ns, name, NULL);
}

/* The node of pod name in ns once bound (static buffer); if it does not
 * bind in time, the pods and the controller's log, and the test fails. */
static const char *wait_bound(struct e2e_ctl *ctl, const char *ns, const char *name)
{
    if (!E2E_WAIT(node_of(ns, name)[0], E2E_WAIT_MS)) {
        e2e_dump_pods(ns);
        e2e_ctl_dump(ctl, 40);
        fail_msg("%s is not bound", name);
    }
    return node_of(ns, name);
}

/* The scenario's last step: a fraction of cpu starts on node want, on the
 * device of pod beside, and nothing was evicted on the way. */
static void joins_device(struct e2e_ctl *ctl, const char *ns, const char *q, const char *name,
                         const char *fraction, const char *cpu, int want, const char *beside)
{
    char dev[128];
    snprintf(dev, sizeof dev, "%s", bound_field(ns, beside, "fairshare.dev/gpu-devices"));
    cpu_pod(ns, name, q, fraction, 0, cpu);
    assert_string_equal(wait_bound(ctl, ns, name), e2e_node(want));
    assert_string_equal(bound_field(ns, name, "fairshare.dev/gpu-devices"), dev);
    assert_int_equal(e2e_events(ns, "Preempted"), 0);
    assert_int_equal(e2e_ctl_stop(ctl), 0);
}

/* A scenario on both nodes, the first given cpus (teardown_sizes gives it
 * 64 again): namespace ns, a project guaranteed 16 GPUs, its queue q, and
 * the controller started. */
static struct e2e_ctl *cpu_scenario(const char *name, const char *cpus, char ns[160], char q[160])
{
    char pre[128], pj[160];
    e2e_scenario_begin(name, pre, sizeof pre);
    snprintf(ns, 160, "%s-a", pre);
    snprintf(pj, sizeof pj, "%s-p", pre);
    snprintf(q, 160, "%s-q", pre);
    set_cpus(0, cpus);
    e2e_namespace(ns);
    e2e_project(pj, ns, "16", NULL);
    e2e_queue(q, pj, "16", 0);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, name, NULL);
    return &ctl;
}

static void test_node_sizes(void **state)
{
    (void)state;
    char ns[160], q[160];
    struct e2e_ctl *ctl = cpu_scenario("sizes", "128", ns, q);

    cpu_pod(ns, "four", q, NULL, 4, "32");
    assert_string_equal(wait_bound(ctl, ns, "four"), e2e_node(1));
    cpu_pod(ns, "eight", q, NULL, 8, "100");
    assert_string_equal(wait_bound(ctl, ns, "eight"), e2e_node(0));
    assert_int_equal(e2e_events(ns, "Preempted"), 0);
    assert_int_equal(e2e_ctl_stop(ctl), 0);
}

static void test_dead_remainder(void **state)
{
    (void)state;
    char ns[160], q[160];
    struct e2e_ctl *ctl = cpu_scenario("dead", "32500m", ns, q);

    /* One at a time, so that each finds the one before it bound. */
    const struct {
        const char *name, *fraction, *cpu;
        int gpus;
    } fill[] = {{"f81", "0.81", "3240m", 0}, {"f77", "0.77", "3080m", 0}, {"w0", NULL, "4", 1},
                {"w1", NULL, "4", 1},        {"w2", NULL, "4", 1},        {"w3", NULL, "4", 1},
                {"w4", NULL, "4", 1},        {"w5", NULL, "4", 1}};
    for (size_t i = 0; i < sizeof fill / sizeof fill[0]; i++) {
        cpu_pod(ns, fill[i].name, q, fill[i].fraction, fill[i].gpus, fill[i].cpu);
        const char *on = wait_bound(ctl, ns, fill[i].name);
        if (strcmp(on, e2e_node(0)))
            fail_msg("%s went to %s, want %s", fill[i].name, on, e2e_node(0));
    }
    joins_device(ctl, ns, q, "f23", "0.23", "2", 0, "f77");
}

/* Fraction fill's node within a level (docs/engine.md): both nodes hold a
 * half-used device and 7.5 free GPUs. On the first in node order (12
 * cores) a 0.5-GPU pod of 3 cores would leave 1 core, too few for a pod
 * of its own shape, the cluster's most common but for the two of 8 cores
 * that already do not fit there; so it goes to the second. */
static void test_fill_node_shapes(void **state)
{
    (void)state;
    char ns[160], q[160];
    struct e2e_ctl *ctl = cpu_scenario("shapes", "12", ns, q);
    /* h0 takes the first node; h1 no longer fits there (4 cores left). */
    const char *half[] = {"h0", "h1"};
    for (int i = 0; i < 2; i++) {
        cpu_pod(ns, half[i], q, "0.5", 0, "8");
        assert_string_equal(wait_bound(ctl, ns, half[i]), e2e_node(i));
    }
    joins_device(ctl, ns, q, "t", "0.5", "3", 1, "h1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_model_pools_and_lending_limit, teardown),
        cmocka_unit_test_teardown(test_node_sizes, teardown_sizes),
        cmocka_unit_test_teardown(test_dead_remainder, teardown_sizes),
        cmocka_unit_test_teardown(test_fill_node_shapes, teardown_sizes),
    };
    return cmocka_run_group_tests(tests, e2e_setup, e2e_teardown);
}
