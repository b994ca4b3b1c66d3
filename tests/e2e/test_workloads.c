/* e2e, workloads on a real API server with its own controllers: a Job's
 * pods evicted by reclaim are recreated by the real Job controller and
 * wait their turn; a pod placed by kube-scheduler holds GPUs that the
 * controller counts and never gives away twice; scheduler-plugins
 * PodGroups (CRD from tests/data/crds) are gangs: minMember 20 on 16 GPUs
 * binds none, and a running 8-pod PodGroup is preempted whole;
 * and a Job whose pods require a node label goes only to the node that has it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/yaml.h"
#include "base/buf.h"
#include "e2e.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *get_job(const char *ns, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/batch/v1/namespaces/%s/jobs/%s", ns, name);
    return e2e_get(path);
}

static long job_status(const char *ns, const char *name, const char *field)
{
    json_t *j = get_job(ns, name);
    long v = (long)json_integer_value(json_object_get(json_object_get(j, "status"), field));
    json_decref(j);
    return v;
}

/* Unbound pods of ns matching sel whose PodScheduled reason is reason. */
static int pending_with_reason(const char *ns, const char *sel, const char *reason)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods?labelSelector=%s", ns, sel);
    json_t *l = e2e_get(path);
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        if (e2e_str(p, "spec.nodeName"))
            continue;
        size_t k;
        json_t *cond;
        json_array_foreach(json_object_get(json_object_get(p, "status"), "conditions"), k, cond)
        {
            if (!strcmp(e2e_str(cond, "type") ?: "", "PodScheduled") &&
                !strcmp(e2e_str(cond, "reason") ?: "", reason))
                n++;
        }
    }
    json_decref(l);
    return n;
}

static bool counts_are(const char *ns, const char *sel, int bound, int pending)
{
    struct e2e_counts c = e2e_count(ns, sel);
    return c.bound == bound && c.pending == pending && c.terminating == 0;
}

/* Preempted Events of ns that say the pod's Job recreates it. */
static int owner_events(const char *ns)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/events", ns);
    json_t *l = e2e_get(path);
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(l, "items"), i, e)
    {
        if (!strcmp(e2e_str(e, "reason") ?: "", "Preempted") &&
            strstr(e2e_str(e, "message") ?: "", "; its owner Job/train recreates it"))
            n++;
    }
    json_decref(l);
    return n;
}

/* A Job of 16 one-GPU pods in team b borrows team a's 8 GPUs. When team a
 * submits 8 pods, 8 of the Job's pods are evicted; the Job controller
 * counts them failed and makes 8 new ones, which stay pending (their queue
 * is at its fair share) instead of taking the GPUs back. */
static void test_job_pods_recreated(void **state)
{
    (void)state;
    char pre[128], a[160], b[160];
    e2e_scenario_begin("job", pre, sizeof pre);
    snprintf(a, sizeof a, "%s-a", pre);
    snprintf(b, sizeof b, "%s-b", pre);
    e2e_namespace(a);
    e2e_namespace(b);
    e2e_project(a, a, "8", a);
    e2e_project(b, b, "8", b);
    e2e_queue(a, a, "8", 0);
    e2e_queue(b, b, "8", 0);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "job", NULL);
    e2e_job(b, "train", 16, NULL, NULL);
    if (!E2E_WAIT(counts_are(b, "job-name=train", 16, 0), E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 400);
        fail_msg("the Job's 16 pods were not all bound");
    }
    e2e_pods(a, "a", 8, NULL, "1", NULL);
    if (!E2E_WAIT(counts_are(a, NULL, 8, 0), E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 400);
        e2e_dump_pods(a);
        e2e_dump_pods(b);
        fail_msg("team a did not get its 8 GPUs back");
    }
    /* 8 evicted, 8 made again by the Job controller, and those wait. */
    if (!E2E_WAIT(counts_are(b, "job-name=train", 8, 8), E2E_WAIT_MS)) {
        struct e2e_counts c = e2e_count(b, "job-name=train");
        e2e_ctl_dump(&ctl, 400);
        fail_msg("the Job has %d bound, %d pending, %d terminating pods; want 8, 8, 0", c.bound,
                 c.pending, c.terminating);
    }
    if (!E2E_WAIT(job_status(b, "train", "active") == 16, E2E_WAIT_MS))
        fail_msg("the Job reports %ld active pods, want 16", job_status(b, "train", "active"));
    if (!E2E_WAIT(e2e_events(b, "Preempted") == 8, E2E_WAIT_MS))
        fail_msg("%d Preempted Events, want 8", e2e_events(b, "Preempted"));
    /* The Job's pods are the Job's to recreate: none was requeued, and the
     * Events say who recreates them. */
    assert_int_equal(e2e_count(b, NULL).total, 16);
    assert_int_equal(owner_events(b), 8);
    /* The recreated pods are told why they wait. */
    if (!E2E_WAIT(pending_with_reason(b, "job-name=train", "FairShare") == 8, E2E_WAIT_MS))
        fail_msg("the Job's pending pods do not say they wait for their fair share");
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

/* kube-scheduler places a pod of the default scheduler that asks for 4
 * GPUs. The controller counts them: of 16 pods of its own it binds 12, no
 * node has more than 8 GPUs given out, and the other 4 wait. */
static void test_other_scheduler_counted(void **state)
{
    (void)state;
    char pre[128];
    e2e_scenario_begin("other", pre, sizeof pre);
    e2e_namespace(pre);
    e2e_project(pre, pre, "16", pre);
    e2e_queue(pre, pre, "16", 0);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", pre);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"foreign\"},"
               "\"spec\":{\"terminationGracePeriodSeconds\":0,\"containers\":[{\"name\":\"main\","
               "\"image\":\"registry.k8s.io/pause:3.7\",\"resources\":{\"limits\":"
               "{\"nvidia.com/gpu\":\"4\"}}}]}}");
    if (!E2E_WAIT(e2e_count(pre, NULL).bound == 1, E2E_WAIT_MS))
        fail_msg("kube-scheduler did not place the default-scheduler pod");
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "other", NULL);
    e2e_pods(pre, "w", 16, NULL, "1", NULL);
    if (!E2E_WAIT(e2e_count(pre, "app=e2e").bound == 12, E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("%d of our pods bound, want 12", e2e_count(pre, "app=e2e").bound);
    }
    /* A moment later nothing more has been bound, and no node is over. */
    e2e_nap(2000);
    struct e2e_counts c = e2e_count(pre, "app=e2e");
    assert_int_equal(c.bound, 12);
    assert_int_equal(c.pending, 4);
    int gpus[E2E_NODES];
    e2e_node_gpus(gpus);
    for (int i = 0; i < E2E_NODES; i++)
        if (gpus[i] > E2E_GPUS_PER_NODE)
            fail_msg("node %s has %d GPUs given out", e2e_node(i), gpus[i]);
    assert_int_equal(gpus[0] + gpus[1], 16);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

#define PG_API "/apis/scheduling.x-k8s.io/v1alpha1"
#define PG_LABEL "scheduling.x-k8s.io/pod-group"

/* The scheduler-plugins PodGroup CRD (the minimal copy in tests/data/crds)
 * installed through our client when missing, and served; before the
 * controller starts, since it looks for the CRD when it starts. */
static void ensure_podgroup_crd(void)
{
    json_t *crd = e2e_get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                          "podgroups.scheduling.x-k8s.io");
    if (!crd) {
        const char *p = FAIR_SOURCE_DIR "/tests/data/crds/scheduling.x-k8s.io_podgroups.yaml";
        json_t *docs = NULL, *resp = NULL;
        struct fair_error err = {0};
        if (fair_yaml_load_file(p, NULL, &docs, &err))
            fail_msg("%s: %s", p, err.msg);
        char *body = json_dumps(json_array_get(docs, 0), JSON_COMPACT);
        long code =
            e2e_req("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body, &resp);
        free(body);
        json_decref(docs);
        json_decref(resp);
        if (code != 201 && code != 409)
            fail_msg("creating the PodGroup CRD: HTTP %ld", code);
    }
    json_decref(crd);
    json_t *l = NULL;
    if (!E2E_WAIT((json_decref(l), (l = e2e_get(PG_API "/podgroups")) != NULL), E2E_WAIT_MS))
        fail_msg("the API server does not serve scheduling.x-k8s.io/v1alpha1 podgroups");
    json_decref(l);
}

static void mk_podgroup(const char *ns, const char *name, int min_member)
{
    char path[256];
    snprintf(path, sizeof path, PG_API "/namespaces/%s/podgroups", ns);
    e2e_create(path,
               "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
               "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"minMember\":%d}}",
               name, min_member);
}

static bool podgroup_phase_is(const char *ns, const char *name, const char *want)
{
    char path[256];
    snprintf(path, sizeof path, PG_API "/namespaces/%s/podgroups/%s", ns, name);
    json_t *g = e2e_get(path);
    bool ok = !strcmp(e2e_str(g, "status.phase") ?: "", want);
    json_decref(g);
    return ok;
}

/* The message of pod ns/name's PodScheduled condition (malloc'd; "" when none). */
static char *scheduled_message(const char *ns, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    json_t *p = e2e_get(path);
    char *out = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(p, "status"), "conditions"), i, c)
    {
        if (!strcmp(e2e_str(c, "type") ?: "", "PodScheduled"))
            out = strdup(e2e_str(c, "message") ?: "");
    }
    json_decref(p);
    return out ? out : strdup("");
}

/* A PodGroup with minMember 20 whose 20 one-GPU pods cannot all fit on
 * the 16 GPUs: none is bound (the issue saw 16), and they say why. */
static void test_podgroup_min_member_20(void **state)
{
    (void)state;
    char pre[128], sel[160];
    e2e_scenario_begin("pg20", pre, sizeof pre);
    ensure_podgroup_crd();
    e2e_namespace(pre);
    e2e_project(pre, pre, "16", pre);
    e2e_queue(pre, pre, "16", 0);
    mk_podgroup(pre, "big", 20);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "pg20", NULL);
    e2e_pods(pre, "big", 20, NULL, "1", ",\"" PG_LABEL "\":\"big\"");
    snprintf(sel, sizeof sel, "%s=big", PG_LABEL);
    char *msg = NULL;
    if (!E2E_WAIT((free(msg), msg = scheduled_message(pre, "big-19"),
                   strstr(msg, "gang too large") != NULL),
                  E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("big-19 does not say the gang is too large: \"%s\"", msg);
    }
    free(msg);
    if (!E2E_WAIT(podgroup_phase_is(pre, "big", "Pending"), E2E_WAIT_MS))
        fail_msg("the PodGroup's phase is not Pending");
    e2e_nap(2000);
    struct e2e_counts c = e2e_count(pre, sel);
    assert_int_equal(c.total, 20);
    assert_int_equal(c.bound, 0);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

/* Team b runs two 8-pod PodGroups on the 16 GPUs, 8 of them borrowed from
 * team a. When a submits 8 pods, one PodGroup is preempted whole (its 8
 * bare pods evicted, and requeued pending) and the other keeps all 8. */
static void test_podgroup_preempted_whole(void **state)
{
    (void)state;
    char pre[128], a[160], b[160], sel[2][160];
    e2e_scenario_begin("pgwhole", pre, sizeof pre);
    ensure_podgroup_crd();
    snprintf(a, sizeof a, "%s-a", pre);
    snprintf(b, sizeof b, "%s-b", pre);
    e2e_namespace(a);
    e2e_namespace(b);
    e2e_project(a, a, "8", a);
    e2e_project(b, b, "0", b);
    e2e_queue(a, a, "8", 0);
    e2e_queue(b, b, "0", 0);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "pgwhole", NULL);
    for (int g = 0; g < 2; g++) {
        char name[16], lab[128];
        snprintf(name, sizeof name, "g%d", g);
        mk_podgroup(b, name, 8);
        snprintf(lab, sizeof lab, ",\"" PG_LABEL "\":\"%s\"", name);
        e2e_pods(b, name, 8, NULL, "1", lab);
        snprintf(sel[g], sizeof sel[g], "%s=%s", PG_LABEL, name);
    }
    if (!E2E_WAIT(counts_are(b, NULL, 16, 0), E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("b's two PodGroups were not bound");
    }
    if (!E2E_WAIT(podgroup_phase_is(b, "g0", "Running") && podgroup_phase_is(b, "g1", "Running"),
                  E2E_WAIT_MS))
        fail_msg("the PodGroups' phase is not Running");
    e2e_pods(a, "a", 8, NULL, "1", NULL);
    if (!E2E_WAIT(counts_are(a, NULL, 8, 0), E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("team a did not get its 8 GPUs back");
    }
    /* One group evicted whole, the other whole and running. The evicted
     * group's bare pods come back as requeued copies ("-rq1", same
     * PodGroup label), pending: there is no room for a second gang. */
    if (!E2E_WAIT(e2e_count(b, NULL).bound == 8 && e2e_count(b, NULL).total == 16, E2E_WAIT_MS))
        fail_msg("b has %d pods (%d bound), want 16 (8 bound, 8 requeued)",
                 e2e_count(b, NULL).total, e2e_count(b, NULL).bound);
    struct e2e_counts c0 = e2e_count(b, sel[0]), c1 = e2e_count(b, sel[1]);
    if (!((c0.total == 8 && c0.bound == 8 && c1.total == 8 && c1.bound == 0) ||
          (c1.total == 8 && c1.bound == 8 && c0.total == 8 && c0.bound == 0)))
        fail_msg("g0 has %d pods (%d bound), g1 %d (%d bound): want one group 8 of 8 bound, "
                 "the other's 8 requeued and pending",
                 c0.total, c0.bound, c1.total, c1.bound);
    assert_int_equal(e2e_events(b, "Preempted"), 8);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

static void label_node(int i, const char *label)
{
    struct fair_buf out;
    fair_buf_init(&out, 1 << 16);
    int rc = e2e_kubectl(
        &out, (const char *[]){"label", "node", e2e_node(i), label, "--overwrite", NULL});
    if (rc != 0)
        fail_msg("kubectl label node %s %s: %s", e2e_node(i), label, out.data ? out.data : "");
    fair_buf_release(&out);
}

/* Pods of ns matching sel bound to node. */
static int bound_to(const char *ns, const char *sel, const char *node)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods?labelSelector=%s", ns, sel);
    json_t *l = e2e_get(path);
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *nn = e2e_str(p, "spec.nodeName");
        if (nn && !strcmp(nn, node))
            n++;
    }
    json_decref(l);
    return n;
}

/* Issue 13's report: a Job of 4 one-GPU pods with a required nodeAffinity
 * pool In [b], where only the second node has pool=b, had all 4 pods bound
 * to the first node (which a kubelet rejects). They go to the second. */
static void test_job_node_affinity(void **state)
{
    (void)state;
    if (!e2e_have_kubectl()) {
        fprintf(stderr, "e2e: SKIPPED %s: no kubectl found (set KUBECTL)\n", __func__);
        skip();
    }
    char pre[128];
    e2e_scenario_begin("nodeaff", pre, sizeof pre);
    e2e_namespace(pre);
    e2e_project(pre, pre, "16", pre);
    e2e_queue(pre, pre, "16", 0);
    label_node(1, "pool=b");
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "nodeaff", NULL);
    e2e_job(pre, "pinned", 4, NULL,
            ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
            "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\","
            "\"values\":[\"b\"]}]}]}}}");
    bool ok = E2E_WAIT(counts_are(pre, "job-name=pinned", 4, 0), E2E_WAIT_MS);
    int on_b = bound_to(pre, "job-name=pinned", e2e_node(1));
    int on_a = bound_to(pre, "job-name=pinned", e2e_node(0));
    label_node(1, "pool-");
    if (!ok) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("the Job's 4 pods were not all bound");
    }
    if (on_b != 4 || on_a != 0)
        fail_msg("%d pods on %s (pool=b), %d on %s; want 4 and 0", on_b, e2e_node(1), on_a,
                 e2e_node(0));
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

static bool reason_is(const char *ns, const char *name, const char *want)
{
    char *r = e2e_pod_reason(ns, name);
    bool ok = r && !strcmp(r, want);
    free(r);
    return ok;
}

/* Preferred terms and the autoscaler-facing reason on the real API
 * server: a Job of 2 one-GPU pods that prefers pool=b (only the second
 * node has it) runs there, although packing alone takes the first node;
 * a pod whose required affinity no node matches, within its queue's
 * guarantee, gets PodScheduled=False reason Unschedulable (docs/
 * operations.md, "Cluster autoscalers"). */
static void test_preferred_and_unschedulable(void **state)
{
    (void)state;
    if (!e2e_have_kubectl()) {
        fprintf(stderr, "e2e: SKIPPED %s: no kubectl found (set KUBECTL)\n", __func__);
        skip();
    }
    char pre[128];
    e2e_scenario_begin("prefer", pre, sizeof pre);
    e2e_namespace(pre);
    e2e_project(pre, pre, "16", pre);
    e2e_queue(pre, pre, "16", 0);
    label_node(1, "pool=b");
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "prefer", NULL);
    e2e_job(
        pre, "prefers", 2, NULL,
        ",\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
        "\"weight\":50,\"preference\":{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":"
        "\"In\",\"values\":[\"b\"]}]}}]}}");
    bool ok = E2E_WAIT(counts_are(pre, "job-name=prefers", 2, 0), E2E_WAIT_MS);
    int on_b = bound_to(pre, "job-name=prefers", e2e_node(1));
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", pre);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nowhere\","
               "\"labels\":{\"fairshare.dev/queue\":\"%s\"}},\"spec\":{\"schedulerName\":\"%s\","
               "\"terminationGracePeriodSeconds\":0,\"affinity\":{\"nodeAffinity\":{"
               "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
               "\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\",\"values\":"
               "[\"nowhere\"]}]}]}}},\"containers\":[{\"name\":\"main\",\"image\":"
               "\"registry.k8s.io/pause:3.7\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
               "\"1\"}}}]}}",
               pre, e2e_scheduler());
    bool told = E2E_WAIT(reason_is(pre, "nowhere", "Unschedulable"), E2E_WAIT_MS);
    label_node(1, "pool-");
    if (!ok) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("the Job's 2 pods were not both bound");
    }
    if (on_b != 2)
        fail_msg("%d of the 2 pods on %s (pool=b), want 2", on_b, e2e_node(1));
    if (!told) {
        char *r = e2e_pod_reason(pre, "nowhere");
        e2e_ctl_dump(&ctl, 30);
        fail_msg("pod nowhere: PodScheduled reason %s, want Unschedulable", r ? r : "(none)");
    }
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

/* A cluster-scoped object, tracked for deletion. */
static void create_tracked(const char *coll, const char *name, const char *body)
{
    e2e_create(coll, "%s", body);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", coll, name);
    e2e_track(path);
}

/* A static local PersistentVolume of class cls on node, of size, claimed
 * by nobody (the admin's local NVMe). */
/* A static local volume of class cls on node; labels: "" or a JSON
 * fragment such as "\"disk\":\"nvme\"". */
static void mk_static_pv(const char *name, const char *cls, const char *node, const char *size,
                         const char *labels)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{%s}},\"spec\":{\"capacity\":{\"storage\":\"%s\"},\"accessModes\":["
             "\"ReadWriteOnce\"],\"storageClassName\":\"%s\",\"local\":{\"path\":\"/mnt/e2e\"},"
             "\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
             "\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}}",
             name, labels, size, cls, node);
    create_tracked("/api/v1/persistentvolumes", name, body);
}

/* The name in the volume's spec.claimRef (malloc'd, "" if none). */
static char *pv_claim(const char *pv)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/persistentvolumes/%s", pv);
    json_t *v = e2e_get(path);
    const char *s = v ? e2e_str(v, "spec.claimRef.name") : NULL;
    char *out = strdup(s ? s : "");
    json_decref(v);
    return out;
}

static bool pv_claimed_by(const char *pv, const char *claim)
{
    char *s = pv_claim(pv);
    bool ok = !strcmp(s, claim);
    free(s);
    return ok;
}

/* A local PersistentVolume of class cls on node, bound ahead to claim
 * ns/claim (claimRef), as an admin or a provisioner makes it. */
static void mk_local_pv(const char *name, const char *cls, const char *node, const char *ns,
                        const char *claim)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"%s\"},"
             "\"spec\":{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\"],"
             "\"storageClassName\":\"%s\",\"claimRef\":{\"namespace\":\"%s\",\"name\":\"%s\"},"
             "\"local\":{\"path\":\"/mnt/e2e\"},\"nodeAffinity\":{\"required\":{"
             "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
             "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}}",
             name, cls, ns, claim, node);
    create_tracked("/api/v1/persistentvolumes", name, body);
}

/* A claim of 1Gi of class cls; more: "" or JSON members of its spec,
 * each after a comma. */
static void mk_claim_spec(const char *ns, const char *name, const char *cls, const char *more)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/persistentvolumeclaims", ns);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{"
               "\"name\":\"%s\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{"
               "\"requests\":{\"storage\":\"1Gi\"}},\"storageClassName\":\"%s\"%s}}",
               name, cls, more);
}

/* The same, bound ahead to volume (NULL: none). */
static void mk_claim(const char *ns, const char *name, const char *cls, const char *volume)
{
    char more[256] = "";
    if (volume)
        snprintf(more, sizeof more, ",\"volumeName\":\"%s\"", volume);
    mk_claim_spec(ns, name, cls, more);
}

/* A pod of gpus GPUs in queue, pinned to node by its nodeSelector. */
static void mk_node_pod(const char *ns, const char *name, const char *queue, int gpus,
                        const char *node)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
               "\"labels\":{\"fairshare.dev/queue\":\"%s\"}},\"spec\":{\"schedulerName\":\"%s\","
               "\"terminationGracePeriodSeconds\":0,\"nodeSelector\":{\"kubernetes.io/hostname\":"
               "\"%s\"},\"containers\":[{\"name\":\"main\",\"image\":\"registry.k8s.io/pause:3.7\","
               "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"%d\"}}}]}}",
               name, queue, e2e_scheduler(), node, gpus);
}

static void mk_claim_pod(const char *ns, const char *name, const char *queue, const char *claim)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
               "\"labels\":{\"fairshare.dev/queue\":\"%s\"}},\"spec\":{\"schedulerName\":\"%s\","
               "\"terminationGracePeriodSeconds\":0,\"volumes\":[{\"name\":\"data\","
               "\"persistentVolumeClaim\":{\"claimName\":\"%s\"}}],\"containers\":[{\"name\":"
               "\"main\",\"image\":\"registry.k8s.io/pause:3.7\",\"resources\":{\"limits\":{"
               "\"nvidia.com/gpu\":\"1\"}}}]}}",
               name, queue, e2e_scheduler(), claim);
}

static void label_namespace(const char *ns, const char *label)
{
    struct fair_buf out;
    fair_buf_init(&out, 1 << 16);
    int rc =
        e2e_kubectl(&out, (const char *[]){"label", "namespace", ns, label, "--overwrite", NULL});
    if (rc != 0)
        fail_msg("kubectl label namespace %s %s: %s", ns, label, out.data ? out.data : "");
    fair_buf_release(&out);
}

static char *pod_node_of(const char *ns, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    json_t *p = e2e_get(path);
    const char *n = p ? e2e_str(p, "spec.nodeName") : NULL;
    char *out = strdup(n ? n : "");
    json_decref(p);
    return out;
}

static bool pod_on(const char *ns, const char *name, const char *node)
{
    char *n = pod_node_of(ns, name);
    bool ok = !strcmp(n, node);
    free(n);
    return ok;
}

/* The claim's volume.kubernetes.io/selected-node (malloc'd, "" if none). */
static char *claim_selected(const char *ns, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/persistentvolumeclaims/%s", ns, name);
    json_t *c = e2e_get(path);
    const char *s = c ? json_string_value(json_object_get(
                            json_object_get(json_object_get(c, "metadata"), "annotations"),
                            "volume.kubernetes.io/selected-node"))
                      : NULL;
    char *out = strdup(s ? s : "");
    json_decref(c);
    return out;
}

static bool claim_has_selected(const char *ns, const char *name)
{
    char *s = claim_selected(ns, name);
    bool ok = *s != 0;
    free(s);
    return ok;
}

/* The room held on node for pod while the volume of its claim is made: a
 * pod "grab" pinned there that asks for the free GPUs the node would have
 * without the hold waits. The test then plays the provisioner (volume pv
 * of class cls on node, bound ahead to the claim, which the PV controller
 * binds), pod is bound there, and grab is deleted. */
static void held_then_bound(struct e2e_ctl *ctl, const char *ns, const char *node, int gpus,
                            const char *pod, const char *claim, const char *cls, const char *pv,
                            const char *when)
{
    mk_node_pod(ns, "grab", ns, gpus, node);
    e2e_nap(2000);
    if (!pod_on(ns, "grab", "")) {
        e2e_dump_pods(ns);
        e2e_ctl_dump(ctl, 30);
        fail_msg("%sa pod took the room held on %s while the volume of claim %s was made", when,
                 node, claim);
    }
    mk_local_pv(pv, cls, node, ns, claim);
    if (!E2E_WAIT(pod_on(ns, pod, node), E2E_WAIT_MS)) {
        e2e_dump_pods(ns);
        e2e_ctl_dump(ctl, 30);
        fail_msg("%sthe pod was not bound on %s, where its provisioned volume is", when, node);
    }
    assert_true(pod_on(ns, "grab", ""));
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/grab", ns);
    assert_int_equal(e2e_req("DELETE", path, "{\"gracePeriodSeconds\":0}", NULL), 200);
}

/* Volumes on the real API server and its PV controller (docs/engine.md,
 * "Volumes"): a pod whose claim is bound to a local volume on the second
 * node goes there, although packing alone takes the first; a claim of a
 * WaitForFirstConsumer class gets selected-node before its pod is bound,
 * the pod's room there is held meanwhile (a pod pinned to that node that
 * needs the room waits), the test plays the provisioner (a volume on that
 * node, bound ahead to the claim, which the PV controller then binds), and
 * the pod is bound where the volume is; a missing claim keeps its pod waiting with
 * VolumeNotReady; a claim of a class without provisioner gets the smaller
 * of two static local volumes on the second node prebound, the real PV
 * controller binds it, and the pod goes there; claims whose selectors use
 * matchExpressions get the volume they select, on either node; after a
 * restart of the controller, a claim that names its node holds its pod's
 * room there again; a claim whose selected-node the provisioner clears
 * gets a node again at once. */
static void test_volumes(void **state)
{
    (void)state;
    char pre[128];
    e2e_scenario_begin("vol", pre, sizeof pre);
    e2e_namespace(pre);
    e2e_project(pre, pre, "16", pre);
    e2e_queue(pre, pre, "16", 0);
    char cls[160], pv1[160], pv2[160], body[1024];
    snprintf(cls, sizeof cls, "%s-wffc", pre);
    snprintf(pv1, sizeof pv1, "%s-local", pre);
    snprintf(pv2, sizeof pv2, "%s-made", pre);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{"
             "\"name\":\"%s\"},\"provisioner\":\"example.com/e2e\","
             "\"volumeBindingMode\":\"WaitForFirstConsumer\"}",
             cls);
    create_tracked("/apis/storage.k8s.io/v1/storageclasses", cls, body);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "vol", NULL);

    mk_local_pv(pv1, "", e2e_node(1), pre, "data");
    mk_claim(pre, "data", "", pv1);
    mk_claim_pod(pre, "local", pre, "data");
    mk_claim_pod(pre, "orphan", pre, "no-such-claim");
    bool placed = E2E_WAIT(pod_on(pre, "local", e2e_node(1)), E2E_WAIT_MS);
    bool told = E2E_WAIT(reason_is(pre, "orphan", "VolumeNotReady"), E2E_WAIT_MS);
    if (!placed || !told) {
        e2e_dump_pods(pre);
        e2e_ctl_dump(&ctl, 30);
        fail_msg("local volume: pod on %s (want %s); missing claim told: %d",
                 pod_node_of(pre, "local"), e2e_node(1), told);
    }

    mk_claim(pre, "wdata", cls, NULL);
    mk_claim_pod(pre, "wffc", pre, "wdata");
    if (!E2E_WAIT(claim_has_selected(pre, "wdata"), E2E_WAIT_MS)) {
        e2e_dump_pods(pre);
        e2e_ctl_dump(&ctl, 30);
        fail_msg("the WaitForFirstConsumer claim got no selected-node");
    }
    char *node = claim_selected(pre, "wdata");
    e2e_nap(1000);
    assert_true(pod_on(pre, "wffc", "")); /* not bound before its volume exists */
    /* Its room there is held meanwhile, as kube-scheduler assumes the pod
     * on the node: a pod pinned there that asks for all the GPUs the node
     * would have free without the hold waits ("local" has one of the
     * second node's). */
    held_then_bound(&ctl, pre, node, strcmp(node, e2e_node(1)) ? 8 : 7, "wffc", "wdata", cls, pv2,
                    "");
    free(node);
    assert_true(pod_on(pre, "orphan", ""));

    /* Static local volumes (kubernetes.io/no-provisioner): two on the
     * second node, 50Gi and 2Gi. The claim of 1Gi gets the smaller one
     * prebound (its claimRef), the real PV controller binds the claim,
     * and the pod is bound on the second node. The small one is made
     * first: the controller's PersistentVolume watch may still lag the
     * pod's, and one watch brings its events in order, so whenever it has
     * seen the big one it has seen the small one too (made the other way
     * round, it prebound the big one in one CI run, as kube-scheduler would
     * with the same view). */
    char scls[160], sbig[160], ssmall[160];
    snprintf(scls, sizeof scls, "%s-static", pre);
    snprintf(sbig, sizeof sbig, "%s-s-big", pre);
    snprintf(ssmall, sizeof ssmall, "%s-s-small", pre);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{"
             "\"name\":\"%s\"},\"provisioner\":\"kubernetes.io/no-provisioner\","
             "\"volumeBindingMode\":\"WaitForFirstConsumer\"}",
             scls);
    create_tracked("/apis/storage.k8s.io/v1/storageclasses", scls, body);
    mk_static_pv(ssmall, scls, e2e_node(1), "2Gi", "");
    mk_static_pv(sbig, scls, e2e_node(1), "50Gi", "");
    mk_claim(pre, "sdata", scls, NULL);
    mk_claim_pod(pre, "static", pre, "sdata");
    if (!E2E_WAIT(pv_claimed_by(ssmall, "sdata"), E2E_WAIT_MS)) {
        e2e_dump_pods(pre);
        e2e_ctl_dump(&ctl, 30);
        fail_msg("the 2Gi static volume was not prebound to the claim");
    }
    if (!E2E_WAIT(pod_on(pre, "static", e2e_node(1)), E2E_WAIT_MS)) {
        e2e_dump_pods(pre);
        e2e_ctl_dump(&ctl, 30);
        fail_msg("the pod of the static claim is on \"%s\", want %s", pod_node_of(pre, "static"),
                 e2e_node(1));
    }
    assert_true(pv_claimed_by(sbig, ""));
    assert_false(claim_has_selected(pre, "sdata"));

    /* Claim selectors with matchExpressions: a 5Gi volume labelled
     * disk=hdd on the first node, one labelled disk=nvme on the second
     * (and the unlabelled 50Gi one still free there). "In [nvme, ssd]"
     * gets the nvme one; "Exists, NotIn [nvme]" the hdd one, and its pod
     * goes to the first node. */
    char shdd[160], snvme[160];
    snprintf(shdd, sizeof shdd, "%s-s-hdd", pre);
    snprintf(snvme, sizeof snvme, "%s-s-nvme", pre);
    mk_static_pv(shdd, scls, e2e_node(0), "5Gi", "\"disk\":\"hdd\"");
    mk_static_pv(snvme, scls, e2e_node(1), "5Gi", "\"disk\":\"nvme\"");
    mk_claim_spec(pre, "fast", scls,
                  ",\"selector\":{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\","
                  "\"values\":[\"nvme\",\"ssd\"]}]}");
    mk_claim_pod(pre, "fast", pre, "fast");
    mk_claim_spec(pre, "slow", scls,
                  ",\"selector\":{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":"
                  "\"Exists\"},{\"key\":\"disk\",\"operator\":\"NotIn\",\"values\":[\"nvme\"]}]}");
    mk_claim_pod(pre, "slow", pre, "slow");
    bool fast =
        E2E_WAIT(pv_claimed_by(snvme, "fast") && pod_on(pre, "fast", e2e_node(1)), E2E_WAIT_MS);
    bool slow =
        E2E_WAIT(pv_claimed_by(shdd, "slow") && pod_on(pre, "slow", e2e_node(0)), E2E_WAIT_MS);
    if (!fast || !slow) {
        e2e_dump_pods(pre);
        e2e_ctl_dump(&ctl, 30);
        fail_msg("claim selectors: fast (nvme, %s) %d, slow (hdd, %s) %d", e2e_node(1), fast,
                 e2e_node(0), slow);
    }
    assert_true(pv_claimed_by(sbig, ""));

    /* A restart while a volume is made: the new controller finds the
     * claim naming its node and holds the pod's room there again, as
     * kube-scheduler's FindPodVolumes keeps such a pod to that node. A
     * pod pinned there that asks for all the GPUs the node has free
     * without the hold waits. */
    char pv3[160];
    snprintf(pv3, sizeof pv3, "%s-made2", pre);
    mk_claim(pre, "rdata", cls, NULL);
    mk_claim_pod(pre, "again", pre, "rdata");
    if (!E2E_WAIT(claim_has_selected(pre, "rdata"), E2E_WAIT_MS)) {
        e2e_dump_pods(pre);
        e2e_ctl_dump(&ctl, 30);
        fail_msg("the second WaitForFirstConsumer claim got no selected-node");
    }
    node = claim_selected(pre, "rdata");
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_ctl_start(&ctl, "vol-restart", NULL);
    int used = 0;
    const char *ones[] = {"local", "wffc", "static", "fast", "slow"};
    for (size_t i = 0; i < sizeof ones / sizeof *ones; i++)
        used += pod_on(pre, ones[i], node);
    e2e_nap(2000);
    held_then_bound(&ctl, pre, node, 8 - used, "again", "rdata", cls, pv3, "after a restart: ");
    free(node);

    /* A provisioner that fails on the node clears selected-node for a new
     * choice: the hold ends then (kube-scheduler's PreBind fails at once),
     * and the claim gets a node again long before volumeBindTimeout
     * (10m). */
    mk_claim(pre, "fdata", cls, NULL);
    mk_claim_pod(pre, "retry", pre, "fdata");
    if (!E2E_WAIT(claim_has_selected(pre, "fdata"), E2E_WAIT_MS)) {
        e2e_dump_pods(pre);
        e2e_ctl_dump(&ctl, 30);
        fail_msg("the third WaitForFirstConsumer claim got no selected-node");
    }
    e2e_nap(1000);
    char cpath[256];
    snprintf(cpath, sizeof cpath, "/api/v1/namespaces/%s/persistentvolumeclaims/fdata", pre);
    json_t *after = NULL;
    assert_int_equal(e2e_req("PATCH", cpath,
                             "{\"metadata\":{\"annotations\":{"
                             "\"volume.kubernetes.io/selected-node\":null}}}",
                             &after),
                     200);
    assert_null(json_object_get(json_object_get(json_object_get(after, "metadata"), "annotations"),
                                "volume.kubernetes.io/selected-node"));
    json_decref(after);
    if (!E2E_WAIT(claim_has_selected(pre, "fdata"), E2E_WAIT_MS)) {
        e2e_dump_pods(pre);
        e2e_ctl_dump(&ctl, 30);
        fail_msg("the claim got no node again after its provisioner cleared selected-node");
    }
    assert_true(pod_on(pre, "retry", ""));
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

static void guard_pod(const char *ns, const char *name, const char *team)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
               "\"labels\":{\"fairshare.dev/queue\":\"%s\"}},\"spec\":{\"schedulerName\":\"%s\","
               "\"terminationGracePeriodSeconds\":0,\"affinity\":{\"podAntiAffinity\":{"
               "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":{"
               "\"matchLabels\":{\"role\":\"train\"}},\"topologyKey\":\"kubernetes.io/hostname\","
               "\"namespaceSelector\":{\"matchLabels\":{\"e2e-team\":\"%s\"}}}]}},"
               "\"containers\":[{\"name\":\"main\",\"image\":\"registry.k8s.io/pause:3.7\","
               "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
               name, ns, e2e_scheduler(), team);
}

/* Pod anti-affinity with a namespaceSelector on the real API server: a
 * 4-GPU pod labelled role=train (kube-scheduler's) runs in a namespace
 * labelled e2e-team=T; a one-GPU pod of ours with anti-affinity against
 * role=train pods in the namespaces labelled e2e-team=T stays off that
 * node, which packing alone would choose. Once the namespace is
 * relabelled, the next such pod goes there. */
static void test_namespace_selector_anti_affinity(void **state)
{
    (void)state;
    if (!e2e_have_kubectl()) {
        fprintf(stderr, "e2e: SKIPPED %s: no kubectl found (set KUBECTL)\n", __func__);
        skip();
    }
    char pre[128], xns[160], team[200];
    e2e_scenario_begin("nssel", pre, sizeof pre);
    e2e_namespace(pre);
    e2e_project(pre, pre, "16", pre);
    e2e_queue(pre, pre, "16", 0);
    snprintf(xns, sizeof xns, "%s-x", pre);
    e2e_namespace(xns);
    snprintf(team, sizeof team, "e2e-team=%s", pre);
    label_namespace(xns, team);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", xns);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train\","
               "\"labels\":{\"role\":\"train\"}},\"spec\":{\"terminationGracePeriodSeconds\":0,"
               "\"containers\":[{\"name\":\"main\",\"image\":\"registry.k8s.io/pause:3.7\","
               "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}}");
    if (!E2E_WAIT(e2e_count(xns, NULL).bound == 1, E2E_WAIT_MS))
        fail_msg("kube-scheduler did not place the role=train pod");
    char *train = pod_node_of(xns, "train");
    assert_non_null(train);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "nssel", NULL);
    guard_pod(pre, "guard-1", pre);
    if (!E2E_WAIT(e2e_count(pre, NULL).bound == 1, E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("guard-1 was not bound");
    }
    char *node = pod_node_of(pre, "guard-1");
    assert_non_null(node);
    if (!strcmp(node, train))
        fail_msg("guard-1 is on %s with the role=train pod of a selected namespace", node);
    free(node);
    /* The namespace is no longer selected: the same term lets the next
     * pod go to the fuller node. */
    label_namespace(xns, "e2e-team=none");
    e2e_nap(1500);
    guard_pod(pre, "guard-2", pre);
    if (!E2E_WAIT(e2e_count(pre, NULL).bound == 2, E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("guard-2 was not bound");
    }
    node = pod_node_of(pre, "guard-2");
    assert_non_null(node);
    if (strcmp(node, train))
        fail_msg("guard-2 is on %s, want %s (packing; the namespace is no longer selected)", node,
                 train);
    free(node);
    free(train);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_job_pods_recreated, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_other_scheduler_counted, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_podgroup_min_member_20, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_podgroup_preempted_whole, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_job_node_affinity, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_preferred_and_unschedulable, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_volumes, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_namespace_selector_anti_affinity, e2e_scenario_teardown),
    };
    return cmocka_run_group_tests_name("e2e/workloads", tests, e2e_setup, e2e_teardown);
}
