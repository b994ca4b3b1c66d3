/* Snapshot building: from plain Kubernetes structs (as the informers cache
 * them) to the engine's snapshot, without any server. Queue resolution and
 * isolation, whole and fractional GPUs, device sets of pods placed by
 * others, overlays of in-flight operations, gangs, and allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "ctl/reasons.h"
#include "ctl/snapshot.h"

/* ---- object builders (test storage; strings are literals) ---- */

static struct fair_knode knodes[4];
static struct fair_kproject kprojects[4];
static struct fair_kqueue kqueues[6];
static struct fair_kpod kpods[160];
static const struct fair_knode *node_ptrs[4];
static const struct fair_kproject *project_ptrs[4];
static const struct fair_kqueue *queue_ptrs[6];
static const struct fair_kpod *pod_ptrs[160];
static size_t nn, np, nq, npod;

static char *ns_a[] = {"team-a", "team-a-dev"};
static char *ns_b[] = {"team-b"};

static void reset(void)
{
    memset(knodes, 0, sizeof knodes);
    memset(kprojects, 0, sizeof kprojects);
    memset(kqueues, 0, sizeof kqueues);
    memset(kpods, 0, sizeof kpods);
    nn = np = nq = npod = 0;
}

static void add_node(char *name, int gpus, bool ready)
{
    struct fair_knode *n = &knodes[nn];
    n->meta.name = name;
    n->meta.uid = name;
    n->gpu_count = gpus;
    n->allocatable.v[FAIR_RES_GPU] = gpus * 1000;
    n->allocatable.v[FAIR_RES_CPU] = 64000;
    n->allocatable.v[FAIR_RES_MEM] = 512LL << 30;
    n->ready = ready;
    node_ptrs[nn++] = n;
}

static struct fair_kproject *add_project(char *name, int64_t gpus, char **ns, size_t nns,
                                         char *defq)
{
    struct fair_kproject *p = &kprojects[np];
    p->meta.name = name;
    p->meta.uid = name;
    p->quota.guaranteed.v[FAIR_RES_GPU] = gpus * 1000;
    for (int r = 0; r < FAIR_RES_COUNT; r++)
        p->quota.limit.v[r] = FAIR_UNLIMITED;
    p->quota.over_quota_weight = 1;
    p->namespaces = ns;
    p->nnamespaces = nns;
    p->default_queue = defq;
    project_ptrs[np++] = p;
    return p;
}

static struct fair_kqueue *add_queue(char *name, char *project, int64_t gpus, int64_t weight)
{
    struct fair_kqueue *q = &kqueues[nq];
    q->meta.name = name;
    q->meta.uid = name;
    q->project = project;
    q->quota.guaranteed.v[FAIR_RES_GPU] = gpus * 1000;
    for (int r = 0; r < FAIR_RES_COUNT; r++)
        q->quota.limit.v[r] = FAIR_UNLIMITED;
    q->quota.over_quota_weight = weight;
    queue_ptrs[nq++] = q;
    return q;
}

static struct fair_kpod *add_pod(char *uid, char *ns, char *sched, char *queue, int64_t gpus_milli,
                                 char *node)
{
    struct fair_kpod *p = &kpods[npod];
    p->meta.uid = uid;
    p->meta.name = uid;
    p->meta.namespace_ = ns;
    p->meta.creation_ms = 1000 + (int64_t)npod;
    p->scheduler_name = sched;
    p->queue = queue;
    p->request.v[FAIR_RES_GPU] = gpus_milli;
    p->request.v[FAIR_RES_CPU] = 1000;
    p->node_name = node;
    p->phase = node ? FAIR_KPOD_RUNNING : FAIR_KPOD_PENDING;
    p->preemptible = true;
    pod_ptrs[npod++] = p;
    return p;
}

/* Overlays for the tests: by UID. */
static void test_overlay(void *ctx, const struct fair_ctl_volumes *vol, const struct fair_kpod *pod,
                         struct fair_ctl_overlay *out)
{
    (void)ctx;
    (void)vol;
    const char *uid = pod->meta.uid;
    memset(out, 0, sizeof *out);
    if (strcmp(uid, "inflight-bind") == 0) {
        out->kind = FAIR_CTL_OVERLAY_BINDING;
        out->node = "n1";
        out->gpu_devices = 0xC0; /* devices 6,7 */
    } else if (strcmp(uid, "inflight-evict") == 0) {
        out->kind = FAIR_CTL_OVERLAY_EVICTING;
    } else if (strcmp(uid, "noticed") == 0) {
        out->kind = FAIR_CTL_OVERLAY_EVICTING; /* under a preemption notice */
        out->noticed = true;
    } else if (strcmp(uid, "pdb-blocked") == 0) {
        out->kind = FAIR_CTL_OVERLAY_PROTECTED;
    } else if (strcmp(uid, "holder") == 0) {
        out->hold_node = "n2";
        out->hold_since_ms = 1000;
        out->evictions = 2;
    } else if (strcmp(uid, "cooling") == 0) {
        out->hold_since_ms = 500; /* a hold that timed out */
    } else if (strcmp(uid, "charged-pg") == 0) {
        /* Bound in gang "old" of 4; its label names PodGroup train now. */
        static const struct fair_ctl_charge ch = {.set = true,
                                                  .queue = "a-train",
                                                  .project = "a",
                                                  .preemptible = true,
                                                  .gpu_milli = 1000,
                                                  .gang = "old",
                                                  .gang_size = 4,
                                                  .devices = 1};
        out->charge = &ch;
    }
}

/* Options of the next build() (reset by it). */
static int64_t opt_min_fraction;
static bool opt_charge_other;
static const struct fair_kpodgroup *const *opt_pgs;
static size_t opt_npgs;
static bool opt_pg_known[2];

static const char *opt_resv_ns; /* fractions.reservations: on when set */
static const struct fair_knamespace *const *opt_ns;
static size_t opt_nns;

static void build(struct fair_ctl_snapshot *s)
{
    struct fair_ctl_snapshot_input in = {
        .min_fraction_milli = opt_min_fraction,
        .charge_other_schedulers = opt_charge_other,
        .scheduler_name = "fairshare",
        .now_ms = 123456,
        .nodes = node_ptrs,
        .nnodes = nn,
        .projects = project_ptrs,
        .nprojects = np,
        .queues = queue_ptrs,
        .nqueues = nq,
        .pods = pod_ptrs,
        .npods = npod,
        .overlay = test_overlay,
        .reclaim_up_to = FAIR_RECLAIM_FAIR_SHARE,
        .over_quota_threshold_pct = 10,
        .hold_timeout_ms = 600000,
        .lend_max_runtime_ms = 7200000,
        .reservation_namespace = opt_resv_ns,
    };
    in.podgroups = opt_pgs;
    in.npodgroups = opt_npgs;
    in.namespaces = opt_ns;
    in.nnamespaces = opt_nns;
    opt_ns = NULL;
    opt_nns = 0;
    in.podgroups_known[0] = opt_pg_known[0];
    in.podgroups_known[1] = opt_pg_known[1];
    opt_min_fraction = 0;
    opt_charge_other = false;
    opt_pgs = NULL;
    opt_npgs = 0;
    opt_pg_known[0] = opt_pg_known[1] = false;
    struct fair_error err = {0};
    int rc = fair_ctl_snapshot_build(&in, s, &err);
    if (rc)
        fail_msg("build: %s", err.msg);
}

static int32_t pod_index(const struct fair_ctl_snapshot *s, const char *uid)
{
    for (size_t i = 0; i < s->snap.npods; i++)
        if (strcmp(s->snap.pods[i].uid, uid) == 0)
            return (int32_t)i;
    return -1;
}

static const struct fair_ctl_rejected *rejected(const struct fair_ctl_snapshot *s, const char *uid)
{
    for (size_t i = 0; i < s->nrejected; i++)
        if (strcmp(s->rejected[i].pod->meta.uid, uid) == 0)
            return &s->rejected[i];
    return NULL;
}

/* reclaimUpTo: a queue's own, else its project's, else the controller's
 * default; a pending pod's held node and its lineage's evictions come from
 * the controller's memory (the overlay). */
static void test_reclaim_policy_and_holds(void **state)
{
    (void)state;
    reset();
    add_node("n1", 8, true);
    add_node("n2", 8, true);
    static char *ns[] = {"team"};
    struct fair_kproject *pr = add_project("p", 8, ns, 1, NULL);
    pr->quota.reclaim_up_to = FAIR_KRECLAIM_GUARANTEE;
    add_queue("inherits", "p", 2, 1);
    struct fair_kqueue *own = add_queue("own", "p", 2, 1);
    own->quota.reclaim_up_to = FAIR_KRECLAIM_FAIR_SHARE;
    static char *ns2[] = {"other"};
    add_project("q", 0, ns2, 1, NULL);
    add_queue("defaulted", "q", 0, 1);
    add_pod("holder", "team", "fairshare", "inherits", 1000, NULL);
    add_pod("cooling", "team", "fairshare", "inherits", 1000, NULL);
    struct fair_kpod *plain = add_pod("plain", "team", "fairshare", "own", 1000, NULL);
    plain->active_deadline_ms = 3600000;
    struct fair_ctl_snapshot s;
    build(&s);
    int32_t qi = fair_ctl_index_get(&s.queue_by_name, "inherits");
    int32_t qo = fair_ctl_index_get(&s.queue_by_name, "own");
    int32_t qd = fair_ctl_index_get(&s.queue_by_name, "defaulted");
    assert_int_equal(s.snap.queues[qi].reclaim_up_to, FAIR_RECLAIM_GUARANTEE);
    assert_int_equal(s.snap.queues[qo].reclaim_up_to, FAIR_RECLAIM_FAIR_SHARE);
    assert_int_equal(s.snap.queues[qd].reclaim_up_to, FAIR_RECLAIM_FAIR_SHARE); /* the default */
    const struct fair_pod *h = &s.snap.pods[pod_index(&s, "holder")];
    assert_int_equal(h->hold_node, fair_ctl_index_get(&s.node_by_name, "n2"));
    assert_int_equal(h->hold_since_ms, 1000);
    assert_int_equal(h->evictions, 2);
    const struct fair_pod *c = &s.snap.pods[pod_index(&s, "cooling")];
    assert_int_equal(c->hold_node, -1);
    assert_int_equal(c->hold_since_ms, 500);
    const struct fair_pod *pl = &s.snap.pods[pod_index(&s, "plain")];
    assert_int_equal(pl->hold_node, -1);
    assert_int_equal(pl->hold_since_ms, 0);
    /* spec.activeDeadlineSeconds is the declared run time; none: 0. */
    assert_int_equal(pl->max_runtime_ms, 3600000);
    assert_int_equal(h->max_runtime_ms, 0);
    assert_int_equal(s.snap.lend_max_runtime_ms, 7200000);
    assert_int_equal(s.snap.hold_timeout_ms, 600000);
    assert_int_equal(s.snap.over_quota_threshold_pct, 10);
    fair_ctl_snapshot_release(&s);
}

/* A node holding a pod the controller cannot read takes no new pods: the
 * engine sees it unschedulable, so nothing is placed on room it may not
 * have. */
static void test_unreadable_pod_blocks_its_node(void **state)
{
    (void)state;
    reset();
    add_node("n1", 8, true);
    add_node("n2", 8, true);
    static char *ns[] = {"team"};
    add_project("p", 8, ns, 1, NULL);
    add_queue("q", "p", 8, 1);
    add_pod("w", "team", "fairshare", "q", 1000, NULL);
    static const char *const full[] = {"n2"};
    struct fair_ctl_snapshot_input in = {
        .scheduler_name = "fairshare",
        .now_ms = 123456,
        .nodes = node_ptrs,
        .nnodes = nn,
        .projects = project_ptrs,
        .nprojects = np,
        .queues = queue_ptrs,
        .nqueues = nq,
        .pods = pod_ptrs,
        .npods = npod,
        .full_nodes = full,
        .nfull_nodes = 1,
    };
    struct fair_ctl_snapshot s;
    struct fair_error err = {0};
    assert_int_equal(fair_ctl_snapshot_build(&in, &s, &err), 0);
    assert_false(s.snap.nodes[fair_ctl_index_get(&s.node_by_name, "n1")].unschedulable);
    assert_true(s.snap.nodes[fair_ctl_index_get(&s.node_by_name, "n2")].unschedulable);
    fair_ctl_snapshot_release(&s);
}

static void standard_cluster(void)
{
    reset();
    add_node("n1", 8, true);
    add_node("n2", 8, true);
    add_project("a", 8, ns_a, 2, "a-default");
    add_project("b", 8, ns_b, 1, NULL);
    add_queue("a-default", "a", 6, 1);
    add_queue("a-train", "a", 2, 2);
    add_queue("b-main", "b", 8, 1);
}

static void test_queue_resolution_and_isolation(void **state)
{
    (void)state;
    standard_cluster();
    add_queue("orphan", "nonexistent", 1, 1);
    add_pod("labelled", "team-a", "fairshare", "a-train", 1000, NULL);
    add_pod("defaulted", "team-a-dev", "fairshare", NULL, 2000, NULL);
    add_pod("no-default", "team-b", "fairshare", NULL, 1000, NULL);
    add_pod("no-project", "elsewhere", "fairshare", NULL, 1000, NULL);
    add_pod("missing-queue", "team-a", "fairshare", "nope", 1000, NULL);
    add_pod("wrong-ns", "team-b", "fairshare", "a-train", 1000, NULL);
    add_pod("orphan-pod", "team-a", "fairshare", "orphan", 1000, NULL);
    struct fair_ctl_snapshot s;
    build(&s);

    assert_int_equal(s.snap.nnodes, 2);
    assert_int_equal(s.snap.nprojects, 2);
    assert_int_equal(s.snap.nqueues, 3);
    assert_int_equal(s.snap.now_ms, 123456);
    assert_int_equal(s.queue_index[3], -1);
    assert_string_equal(s.queue_problem[3], "project nonexistent does not exist");
    assert_int_equal(s.snap.queues[1].project, 0);
    assert_int_equal(s.snap.queues[2].project, 1);
    assert_int_equal(s.snap.queues[1].q.over_quota_weight, 2);
    assert_int_equal(s.snap.queues[0].q.guaranteed.v[FAIR_RES_GPU], 6000);

    assert_int_equal(s.snap.npods, 2);
    int32_t i = pod_index(&s, "labelled");
    assert_true(i >= 0);
    assert_int_equal(s.snap.pods[i].queue, 1);
    assert_int_equal(s.snap.pods[i].state, FAIR_POD_PENDING);
    assert_int_equal(s.snap.pods[i].node, -1);
    assert_ptr_equal(s.kpods[i], &kpods[0]);
    i = pod_index(&s, "defaulted");
    assert_int_equal(s.snap.pods[i].queue, 0);
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_GPU], 2000);

    assert_int_equal(s.nrejected, 5);
    const struct fair_ctl_rejected *r = rejected(&s, "no-default");
    assert_int_equal(r->reason, FAIR_CTL_REASON_UNKNOWN_QUEUE);
    assert_string_equal(r->message,
                        "no fairshare.dev/queue label, and project b has no defaultQueue");
    r = rejected(&s, "no-project");
    assert_int_equal(r->reason, FAIR_CTL_REASON_UNKNOWN_QUEUE);
    assert_string_equal(
        r->message, "no fairshare.dev/queue label, and namespace elsewhere belongs to no Project");
    r = rejected(&s, "missing-queue");
    assert_int_equal(r->reason, FAIR_CTL_REASON_UNKNOWN_QUEUE);
    assert_string_equal(r->message, "queue nope does not exist");
    r = rejected(&s, "wrong-ns");
    assert_int_equal(r->reason, FAIR_CTL_REASON_NAMESPACE_NOT_ALLOWED);
    assert_string_equal(
        r->message,
        "namespace team-b is not in project a's namespaces, so it cannot use queue a-train");
    r = rejected(&s, "orphan-pod");
    assert_int_equal(r->reason, FAIR_CTL_REASON_INVALID_QUEUE);
    assert_string_equal(r->message,
                        "queue orphan cannot be used: project nonexistent does not exist");
    assert_int_equal(fair_ctl_index_get(&s.queue_by_name, "b-main"), 2);
    assert_int_equal(fair_ctl_index_get(&s.node_by_name, "n2"), 1);
    fair_ctl_snapshot_release(&s);
}

static void test_invalid_objects(void **state)
{
    (void)state;
    reset();
    add_node("n1", 8, true);
    add_project("a", 4, ns_a, 2, NULL);
    struct fair_kproject *bad = add_project("b", 4, ns_b, 1, NULL);
    bad->problem = "spec.guaranteed.gpu: must not be negative";
    add_project("c", 4, ns_a, 1, NULL); /* team-a already belongs to a */
    add_queue("qa", "a", 4, 1);
    add_queue("qb", "b", 4, 1);
    struct fair_kqueue *badq = add_queue("qa2", "a", 1, 1);
    badq->problem = "spec.reclaimMinRuntime: not a duration";
    add_pod("p-qb", "team-b", "fairshare", "qb", 1000, NULL);
    add_pod("p-qa2", "team-a", "fairshare", "qa2", 1000, NULL);
    add_pod("running-qb", "team-b", "fairshare", "qb", 1000, "n1");
    struct fair_ctl_snapshot s;
    build(&s);
    assert_int_equal(s.snap.nprojects, 1);
    assert_int_equal(s.project_index[0], 0);
    assert_int_equal(s.project_index[1], -1);
    assert_string_equal(s.project_problem[1], "spec.guaranteed.gpu: must not be negative");
    assert_int_equal(s.project_index[2], -1);
    assert_string_equal(s.project_problem[2], "namespace team-a already belongs to project a");
    assert_int_equal(s.snap.nqueues, 1);
    assert_int_equal(s.queue_index[1], -1);
    assert_string_equal(s.queue_problem[1],
                        "project b is invalid: spec.guaranteed.gpu: must not be negative");
    assert_string_equal(s.queue_problem[2], "spec.reclaimMinRuntime: not a duration");
    assert_int_equal(s.nrejected, 2);
    assert_int_equal(rejected(&s, "p-qb")->reason, FAIR_CTL_REASON_INVALID_QUEUE);
    assert_string_equal(rejected(&s, "p-qa2")->message,
                        "queue qa2 cannot be used: spec.reclaimMinRuntime: not a duration");
    /* A running pod of an unusable queue still holds its GPU. */
    int32_t i = pod_index(&s, "running-qb");
    assert_true(i >= 0);
    assert_int_equal(s.snap.pods[i].queue, -1);
    assert_int_equal(s.snap.pods[i].state, FAIR_POD_BOUND);
    assert_int_equal(s.snap.pods[i].gpu_devices, 0x1);
    fair_ctl_snapshot_release(&s);
}

/* Reservation pods (fractions.reservations): one whose slot holds a
 * fraction counts for nothing (the fraction holds the device); an idle
 * one holds its whole device; a fraction bound before this process is
 * placed on its fairshare.dev/gpu-slot, whatever device name its
 * gpu-devices holds; a pod with the label outside the reservation
 * namespace, or one of ours, is no reservation; failed ones are listed
 * as finished. Without reservation_namespace, none is read. */
static void test_reservations(void **state)
{
    (void)state;
    standard_cluster();
    opt_resv_ns = "fairshare-system";
    struct fair_kpod *busy = add_pod("resv-busy", "fairshare-system", NULL, NULL, 1000, "n1");
    busy->reservation = true;
    busy->gpu_slot1 = 3 + 1;
    busy->reserved_device = "GPU-1111";
    struct fair_kpod *idle = add_pod("resv-idle", "fairshare-system", NULL, NULL, 1000, "n1");
    idle->reservation = true;
    idle->gpu_slot1 = 5 + 1;
    struct fair_kpod *dead = add_pod("resv-failed", "fairshare-system", NULL, NULL, 1000, "n2");
    dead->reservation = true;
    dead->gpu_slot1 = 1;
    dead->phase = FAIR_KPOD_FAILED;
    struct fair_kpod *fake = add_pod("fake-resv", "team-a", NULL, NULL, 1000, "n2");
    fake->reservation = true;
    fake->gpu_slot1 = 1;
    struct fair_kpod *frac = add_pod("frac", "team-a", "fairshare", "a-train", 0, "n1");
    frac->gpu_fraction_milli = 250;
    frac->gpu_devices = "GPU-1111";
    frac->gpu_slot1 = 3 + 1;
    struct fair_ctl_snapshot s;
    build(&s);
    assert_int_equal(s.nreservations, 3);
    assert_string_equal(s.reservations[0].pod->meta.name, "resv-busy");
    assert_int_equal(s.reservations[0].slot, 3);
    assert_false(s.reservations[0].idle);
    assert_false(s.reservations[0].finished);
    assert_true(s.reservations[1].idle);
    assert_int_equal(s.reservations[1].slot, 5);
    assert_true(s.reservations[2].finished);
    int32_t i = pod_index(&s, "resv-busy");
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_GPU], 0);
    assert_int_equal(s.snap.pods[i].gpu_devices, 0);
    assert_int_equal(s.snap.pods[i].queue, -1);
    i = pod_index(&s, "resv-idle");
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_GPU], 1000);
    assert_int_equal(s.snap.pods[i].gpu_devices, 0x20);
    i = pod_index(&s, "frac");
    assert_int_equal(s.snap.pods[i].gpu_devices, 0x8);
    assert_int_equal(s.ndevices_ignored, 0);
    /* Not a reservation: another namespace; counted as any other pod. */
    i = pod_index(&s, "fake-resv");
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_GPU], 1000);
    fair_ctl_snapshot_release(&s);

    opt_resv_ns = NULL;
    build(&s);
    assert_int_equal(s.nreservations, 0);
    i = pod_index(&s, "resv-busy");
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_GPU], 1000);
    /* The fraction's device name is no index: ignored, placed by request. */
    assert_int_equal(s.ndevices_ignored, 1);
    fair_ctl_snapshot_release(&s);
}

/* fairshare.dev/gpu-memory: a fraction of the smallest GPU any node
 * reports (label nvidia.com/gpu.memory, MiB), rounded up, at least
 * fractions.minimum; refused (InvalidPod) when no node reports its memory
 * or when it is not less than that GPU. */
static void test_gpu_memory(void **state)
{
    (void)state;
    standard_cluster();
    static struct fair_label big[] = {{"nvidia.com/gpu.memory", "81920"}};
    static struct fair_label small[] = {{"nvidia.com/gpu.memory", "40960"}};
    knodes[0].labels = big;
    knodes[0].nlabels = 1;
    knodes[1].labels = small;
    knodes[1].nlabels = 1;
    add_pod("mem-10g", "team-a", "fairshare", "a-train", 0, NULL)->gpu_memory_bytes = 10LL << 30;
    add_pod("mem-1m", "team-a", "fairshare", "a-train", 0, NULL)->gpu_memory_bytes = 1LL << 20;
    add_pod("mem-40g", "team-a", "fairshare", "a-train", 0, NULL)->gpu_memory_bytes = 40LL << 30;
    struct fair_kpod *both = add_pod("mem-and-gpu", "team-a", "fairshare", "a-train", 1000, NULL);
    both->gpu_memory_bytes = 1LL << 30;
    struct fair_ctl_snapshot s;
    opt_min_fraction = 50;
    build(&s);
    int32_t i = pod_index(&s, "mem-10g");
    assert_true(i >= 0);
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_GPU], 250); /* 10240 / 40960 */
    i = pod_index(&s, "mem-1m");
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_GPU], 50); /* the minimum */
    assert_int_equal(pod_index(&s, "mem-40g"), -1);
    assert_int_equal(pod_index(&s, "mem-and-gpu"), -1);
    assert_int_equal(s.nrejected, 2);
    for (size_t r = 0; r < s.nrejected; r++) {
        assert_int_equal(s.rejected[r].reason, FAIR_CTL_REASON_BAD_POD);
        if (!strcmp(s.rejected[r].pod->meta.name, "mem-40g"))
            assert_non_null(strstr(s.rejected[r].message, "40960 MiB"));
    }
    fair_ctl_snapshot_release(&s);

    /* Bound (charged as it asks, no charge recorded): through its own
     * node's GPU, 10240 of 81920 MiB and of 40960 MiB; a node without the
     * label: through the smallest GPU, as a pending pod. The conversion
     * itself, per node size. */
    static char bare[] = "n-bare";
    add_node(bare, 8, true);
    add_pod("mem-on-80", "team-a", "fairshare", "a-train", 0, knodes[0].meta.name)
        ->gpu_memory_bytes = 10LL << 30;
    add_pod("mem-on-40", "team-a", "fairshare", "a-train", 0, knodes[1].meta.name)
        ->gpu_memory_bytes = 10LL << 30;
    add_pod("mem-on-bare", "team-a", "fairshare", "a-train", 0, bare)->gpu_memory_bytes = 10LL
                                                                                          << 30;
    build(&s);
    assert_int_equal(s.snap.pods[pod_index(&s, "mem-on-80")].request.v[FAIR_RES_GPU], 125);
    assert_int_equal(s.snap.pods[pod_index(&s, "mem-on-40")].request.v[FAIR_RES_GPU], 250);
    assert_int_equal(s.snap.pods[pod_index(&s, "mem-on-bare")].request.v[FAIR_RES_GPU], 250);
    assert_int_equal(s.snap.pods[pod_index(&s, "mem-10g")].request.v[FAIR_RES_GPU], 250);
    fair_ctl_snapshot_release(&s);
    assert_int_equal(fair_ctl_memory_milli(10LL << 30, 81920, 50), 125);
    assert_int_equal(fair_ctl_memory_milli(10LL << 30, 40960, 50), 250);
    assert_int_equal(fair_ctl_memory_milli(1LL << 20, 81920, 50), 50);
    assert_int_equal(fair_ctl_memory_milli((10LL << 30) + 1, 81920, 0), 126); /* rounded up */
    assert_int_equal(fair_ctl_memory_milli(80LL << 30, 81920, 50), -1);
    assert_int_equal(fair_ctl_memory_milli(10LL << 30, 0, 50), -1);

    knodes[0].nlabels = knodes[1].nlabels = 0;
    build(&s);
    assert_int_equal(pod_index(&s, "mem-10g"), -1);
    assert_non_null(strstr(s.rejected[0].message, "nvidia.com/gpu.memory"));
    fair_ctl_snapshot_release(&s);
}

/* A queue with spec.fractions.isolation: required: its pending fractions
 * (and memory requests) get fairshare.dev/gpu-isolation: hami-core added
 * to their node selector; its whole-GPU pods and other queues' fractions
 * do not. */
static void test_isolation_required(void **state)
{
    (void)state;
    standard_cluster();
    kqueues[1].fractions_isolated = true; /* a-train */
    static struct fair_label own[] = {{"zone", "z1"}};
    struct fair_kpod *f = add_pod("frac", "team-a", "fairshare", "a-train", 0, NULL);
    f->gpu_fraction_milli = 500;
    f->node_selector = own;
    f->nnode_selector = 1;
    add_pod("whole", "team-a", "fairshare", "a-train", 1000, NULL);
    add_pod("other", "team-a", "fairshare", "a-default", 0, NULL)->gpu_fraction_milli = 500;
    struct fair_ctl_snapshot s;
    build(&s);
    const struct fair_pod *p = &s.snap.pods[pod_index(&s, "frac")];
    assert_int_equal(p->nnode_selector, 2);
    assert_string_equal(p->node_selector[0].key, "zone");
    assert_string_equal(p->node_selector[1].key, "fairshare.dev/gpu-isolation");
    assert_string_equal(p->node_selector[1].value, "hami-core");
    assert_int_equal(s.snap.pods[pod_index(&s, "whole")].nnode_selector, 0);
    assert_int_equal(s.snap.pods[pod_index(&s, "other")].nnode_selector, 0);
    fair_ctl_snapshot_release(&s);
}

static void test_foreign_pods_and_devices(void **state)
{
    (void)state;
    standard_cluster();
    struct fair_kpod *mine = add_pod("mine", "team-a", "fairshare", "a-train", 2000, "n1");
    mine->gpu_devices = "0,1";
    add_pod("foreign-gpu", "ml", "default-scheduler", NULL, 3000, "n1");
    add_pod("foreign-cpu", "kube-system", "default-scheduler", NULL, 0, "n1");
    add_pod("foreign-pending", "ml", "default-scheduler", NULL, 1000, NULL);
    struct fair_kpod *done = add_pod("finished", "ml", "default-scheduler", NULL, 1000, "n2");
    done->phase = FAIR_KPOD_SUCCEEDED;
    struct fair_kpod *failed = add_pod("failed", "team-a", "fairshare", "a-train", 1000, "n2");
    failed->phase = FAIR_KPOD_FAILED;
    add_pod("unknown-node", "ml", "default-scheduler", NULL, 1000, "gone");
    struct fair_kpod *frac = add_pod("frac", "team-a", "fairshare", "a-train", 0, "n2");
    frac->gpu_fraction_milli = 500;
    frac->gpu_devices = "3";
    struct fair_kpod *frac2 =
        add_pod("frac-unannotated", "team-a", "fairshare", "a-train", 0, "n2");
    frac2->gpu_fraction_milli = 250;
    struct fair_ctl_snapshot s;
    build(&s);
    assert_int_equal(s.snap.npods, 5);
    int32_t i = pod_index(&s, "mine");
    assert_int_equal(s.snap.pods[i].state, FAIR_POD_BOUND);
    assert_int_equal(s.snap.pods[i].node, 0);
    assert_int_equal(s.snap.pods[i].gpu_devices, 0x3);
    assert_int_equal(s.snap.pods[i].queue, 1);
    i = pod_index(&s, "foreign-gpu");
    assert_int_equal(s.snap.pods[i].queue, -1);
    assert_int_equal(s.snap.pods[i].state, FAIR_POD_BOUND);
    assert_int_equal(s.snap.pods[i].gpu_devices, 0x1C); /* 2,3,4: lowest free */
    i = pod_index(&s, "foreign-cpu");
    assert_int_equal(s.snap.pods[i].gpu_devices, 0);
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_CPU], 1000);
    assert_int_equal(pod_index(&s, "foreign-pending"), -1);
    assert_int_equal(pod_index(&s, "finished"), -1);
    assert_int_equal(pod_index(&s, "failed"), -1);
    assert_int_equal(pod_index(&s, "unknown-node"), -1);
    i = pod_index(&s, "frac");
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_GPU], 500);
    assert_int_equal(s.snap.pods[i].gpu_devices, 0x8);
    i = pod_index(&s, "frac-unannotated");
    assert_int_equal(s.snap.pods[i].request.v[FAIR_RES_GPU], 250);
    assert_int_equal(s.snap.pods[i].gpu_devices, 0x1); /* device 0: most room */
    assert_int_equal(s.nrejected, 0);
    fair_ctl_snapshot_release(&s);
}

static void test_bad_pods(void **state)
{
    (void)state;
    standard_cluster();
    struct fair_kpod *both = add_pod("both", "team-a", "fairshare", "a-train", 1000, NULL);
    both->gpu_fraction_milli = 500;
    struct fair_kpod *big = add_pod("big-frac", "team-a", "fairshare", "a-train", 0, NULL);
    big->gpu_fraction_milli = 1500;
    add_pod("half-whole", "team-a", "fairshare", "a-train", 1500, NULL);
    struct fair_kpod *dec = add_pod("decode", "team-a", "fairshare", "a-train", 1000, NULL);
    dec->problem = "annotation fairshare.dev/gang-size: not a number";
    struct fair_kpod *del = add_pod("deleted", "team-a", "fairshare", "a-train", 1000, NULL);
    del->meta.deletion_ms = 5;
    struct fair_ctl_snapshot s;
    build(&s);
    assert_int_equal(s.snap.npods, 0);
    assert_int_equal(s.nrejected, 4);
    for (size_t i = 0; i < s.nrejected; i++)
        assert_int_equal(s.rejected[i].reason, FAIR_CTL_REASON_BAD_POD);
    assert_non_null(strstr(rejected(&s, "both")->message, "at once"));
    assert_non_null(strstr(rejected(&s, "big-frac")->message, "below 1"));
    assert_non_null(strstr(rejected(&s, "half-whole")->message, "whole number"));
    assert_string_equal(rejected(&s, "decode")->message,
                        "annotation fairshare.dev/gang-size: not a number");
    fair_ctl_snapshot_release(&s);
}

/* fractions.minimum: a pending pod below it is refused with the minimum in
 * the message; one at it is taken; a bound pod below it (bound before the
 * minimum was raised) is charged the minimum. */
static void test_min_fraction(void **state)
{
    (void)state;
    standard_cluster();
    struct fair_kpod *tiny = add_pod("tiny", "team-a", "fairshare", "a-train", 0, NULL);
    tiny->gpu_fraction_milli = 1;
    struct fair_kpod *edge = add_pod("edge", "team-a", "fairshare", "a-train", 0, NULL);
    edge->gpu_fraction_milli = 50;
    struct fair_kpod *old = add_pod("old", "team-a", "fairshare", "a-train", 0, "n1");
    old->gpu_fraction_milli = 10;
    old->gpu_devices = "0";
    opt_min_fraction = 50;
    struct fair_ctl_snapshot s;
    build(&s);
    assert_int_equal(s.nrejected, 1);
    assert_int_equal(s.rejected[0].reason, FAIR_CTL_REASON_BAD_POD);
    assert_non_null(strstr(rejected(&s, "tiny")->message, "at least 0.05 GPU"));
    assert_non_null(strstr(rejected(&s, "tiny")->message, "asks for 0.001"));
    assert_int_equal(s.snap.pods[pod_index(&s, "edge")].request.v[FAIR_RES_GPU], 50);
    assert_int_equal(s.snap.pods[pod_index(&s, "old")].request.v[FAIR_RES_GPU], 50);
    fair_ctl_snapshot_release(&s);
}

/* quota.chargeOtherSchedulers: a bound GPU pod of another scheduler in a
 * Project's namespace is charged to its defaultQueue and is not
 * preemptible; one in a Project without a defaultQueue, outside any
 * Project, or without GPUs stays uncharged; without the option none is. */
static void test_other_schedulers(void **state)
{
    (void)state;
    for (int on = 0; on < 2; on++) {
        standard_cluster();
        add_pod("a-other", "team-a-dev", "default-scheduler", NULL, 2000, "n1");
        add_pod("b-other", "team-b", "default-scheduler", NULL, 1000, "n1");
        add_pod("stray", "ml", "default-scheduler", NULL, 1000, "n2");
        add_pod("a-cpu", "team-a", "default-scheduler", NULL, 0, "n2");
        add_pod("a-pending", "team-a", "default-scheduler", NULL, 1000, NULL);
        opt_charge_other = on;
        struct fair_ctl_snapshot s;
        build(&s);
        assert_int_equal(pod_index(&s, "a-pending"), -1);
        const struct fair_pod *p = &s.snap.pods[pod_index(&s, "a-other")];
        assert_int_equal(p->queue, on ? 0 : -1); /* a-default */
        if (on) {
            assert_string_equal(s.snap.queues[p->queue].q.name, "a-default");
            assert_false(p->preemptible);
        }
        assert_int_equal(s.snap.pods[pod_index(&s, "b-other")].queue, -1);
        assert_int_equal(s.snap.pods[pod_index(&s, "stray")].queue, -1);
        assert_int_equal(s.snap.pods[pod_index(&s, "a-cpu")].queue, -1);
        assert_int_equal(s.nrejected, 0);
        fair_ctl_snapshot_release(&s);
    }
}

/* A bound pod of ours whose DisruptionTarget condition is the
 * scheduler's (a notice from before this process) carries its time to
 * the engine (notice_since_ms); another reason, another scheduler's pod or
 * no condition carry nothing. */
static void test_notice_since(void **state)
{
    (void)state;
    standard_cluster();
    struct fair_kpod *told = add_pod("told", "team-b", "fairshare", "b-main", 1000, "n1");
    told->disruption_target = true;
    told->disruption_reason = "PreemptionByScheduler";
    told->disruption_since_ms = 1795460405000LL;
    struct fair_kpod *evicted = add_pod("evicted", "team-b", "fairshare", "b-main", 1000, "n1");
    evicted->disruption_target = true;
    evicted->disruption_reason = "EvictionByEvictionAPI";
    evicted->disruption_since_ms = 1795460405000LL;
    struct fair_kpod *other = add_pod("other", "team-b", "default-scheduler", NULL, 1000, "n2");
    other->disruption_target = true;
    other->disruption_reason = "PreemptionByScheduler";
    other->disruption_since_ms = 1795460405000LL;
    add_pod("plain", "team-b", "fairshare", "b-main", 1000, "n2");
    struct fair_ctl_snapshot s;
    build(&s);
    assert_int_equal(s.snap.pods[pod_index(&s, "told")].notice_since_ms, 1795460405000LL);
    assert_int_equal(s.snap.pods[pod_index(&s, "evicted")].notice_since_ms, 0);
    assert_int_equal(s.snap.pods[pod_index(&s, "other")].notice_since_ms, 0);
    assert_int_equal(s.snap.pods[pod_index(&s, "plain")].notice_since_ms, 0);
    fair_ctl_snapshot_release(&s);
}

/* Namespace labels reach the snapshot's pods (each its own namespace's;
 * none for a namespace not known), and only when some pod's affinity
 * term selects namespaces by label. */
static void test_namespace_labels(void **state)
{
    (void)state;
    static struct fair_label la = {"team", "a"}, lb[2] = {{"team", "b"}, {"tier", "gold"}};
    static struct fair_knamespace na = {.labels = &la, .nlabels = 1};
    static struct fair_knamespace nb = {.labels = lb, .nlabels = 2};
    na.meta.name = "team-a";
    nb.meta.name = "team-b";
    const struct fair_knamespace *nss[] = {&na, &nb};
    static const char *const teams[] = {"a"};
    struct fair_node_req req = {"team", teams, 1, FAIR_SEL_IN, false};
    struct fair_pod_term term;
    memset(&term, 0, sizeof term);
    term.topology_key = "zone";
    term.ns_by_labels = true;
    term.ns_selector.exprs = &req;
    term.ns_selector.nexprs = 1;
    struct fair_pod_affinity pa = {.anti = &term, .nanti = 1};
    for (int with_term = 0; with_term < 2; with_term++) {
        standard_cluster();
        add_pod("b-run", "team-b", "fairshare", "b-main", 1000, "n1");
        add_pod("stray", "ml", "default-scheduler", NULL, 1000, "n2");
        struct fair_kpod *p = add_pod("a-wait", "team-a", "fairshare", "a-default", 1000, NULL);
        if (with_term)
            p->pod_affinity = &pa;
        opt_ns = nss;
        opt_nns = 2;
        struct fair_ctl_snapshot s;
        build(&s);
        const struct fair_pod *a = &s.snap.pods[pod_index(&s, "a-wait")];
        const struct fair_pod *b = &s.snap.pods[pod_index(&s, "b-run")];
        const struct fair_pod *o = &s.snap.pods[pod_index(&s, "stray")];
        if (with_term) {
            assert_ptr_equal(a->ns_labels, &la);
            assert_int_equal(a->nns_labels, 1);
            assert_ptr_equal(b->ns_labels, lb);
            assert_int_equal(b->nns_labels, 2);
        } else {
            assert_null(a->ns_labels);
            assert_null(b->ns_labels);
        }
        assert_null(o->ns_labels); /* "ml" is not known */
        assert_int_equal(o->nns_labels, 0);
        fair_ctl_snapshot_release(&s);
    }
}

static void test_overlays_gangs_nodes(void **state)
{
    (void)state;
    standard_cluster();
    add_node("n3", 4, false);
    knodes[0].unschedulable = false;
    knodes[1].unschedulable = true;
    add_pod("inflight-bind", "team-a", "fairshare", "a-train", 2000, NULL);
    struct fair_kpod *ev = add_pod("inflight-evict", "team-b", "fairshare", "b-main", 1000, "n2");
    ev->gpu_devices = "0";
    struct fair_kpod *pb = add_pod("pdb-blocked", "team-b", "fairshare", "b-main", 1000, "n2");
    pb->gpu_devices = "1";
    struct fair_kpod *dying = add_pod("dying", "team-b", "fairshare", "b-main", 1000, "n2");
    dying->gpu_devices = "2";
    struct fair_kpod *told = add_pod("noticed", "team-b", "fairshare", "b-main", 1000, "n2");
    told->gpu_devices = "3";
    dying->meta.deletion_ms = 99;
    struct fair_kpod *nonpre = add_pod("interactive", "team-b", "fairshare", "b-main", 1000, NULL);
    nonpre->preemptible = false;
    nonpre->priority = 7;
    nonpre->start_ms = 0;
    struct fair_kpod *g1 = add_pod("g1", "team-a", "fairshare", "a-train", 1000, NULL);
    g1->gang = "job";
    g1->gang_size = 2;
    struct fair_kpod *g2 = add_pod("g2", "team-a-dev", "fairshare", "a-train", 1000, NULL);
    g2->gang = "job";
    g2->gang_size = 2;
    struct fair_ctl_snapshot s;
    build(&s);
    assert_int_equal(s.snap.nnodes, 3);
    assert_false(s.snap.nodes[0].unschedulable);
    assert_true(s.snap.nodes[1].unschedulable);
    assert_true(s.snap.nodes[2].unschedulable); /* not Ready */
    assert_int_equal(s.snap.nodes[2].allocatable.v[FAIR_RES_GPU], 4000);
    int32_t i = pod_index(&s, "inflight-bind");
    assert_int_equal(s.snap.pods[i].state, FAIR_POD_BOUND);
    assert_int_equal(s.snap.pods[i].node, 0);
    assert_int_equal(s.snap.pods[i].gpu_devices, 0xC0);
    assert_false(s.snap.pods[i].terminating);
    i = pod_index(&s, "inflight-evict");
    assert_true(s.snap.pods[i].terminating);
    assert_false(s.snap.pods[i].noticed);
    assert_true(s.snap.pods[i].preemptible);
    /* Under notice: terminating for the engine, flagged as such. */
    i = pod_index(&s, "noticed");
    assert_true(s.snap.pods[i].terminating);
    assert_true(s.snap.pods[i].noticed);
    i = pod_index(&s, "pdb-blocked");
    assert_false(s.snap.pods[i].terminating);
    assert_false(s.snap.pods[i].preemptible);
    i = pod_index(&s, "dying");
    assert_true(s.snap.pods[i].terminating);
    assert_int_equal(s.nterminating, 3); /* inflight-evict, noticed and dying */
    i = pod_index(&s, "interactive");
    assert_false(s.snap.pods[i].preemptible);
    assert_int_equal(s.snap.pods[i].priority, 7);
    assert_int_equal(s.snap.pods[i].started_ms, s.snap.pods[i].created_ms);
    i = pod_index(&s, "g1");
    assert_string_equal(s.snap.pods[i].gang, "team-a/job");
    assert_int_equal(s.snap.pods[i].gang_size, 2);
    i = pod_index(&s, "g2");
    assert_string_equal(s.snap.pods[i].gang, "team-a-dev/job");
    assert_null(s.snap.pods[pod_index(&s, "interactive")].gang);
    fair_ctl_snapshot_release(&s);
}

/* PodGroups: a pod in a PodGroup is a gang member (key ns/name, size
 * minMember) whatever its own gang annotations say; a missing PodGroup, or
 * its CRD, makes the pod wait (PodGroupNotFound); a bad PodGroup makes it
 * InvalidPod; a bound pod keeps the gang of its charge (fixed at bind)
 * whatever its label says now; every pod naming a PodGroup is counted. */
static void test_podgroups(void **state)
{
    (void)state;
    static struct fair_kpodgroup pgs[3];
    static const struct fair_kpodgroup *pg_ptrs[3] = {&pgs[0], &pgs[1], &pgs[2]};
    memset(pgs, 0, sizeof pgs);
    pgs[0] = (struct fair_kpodgroup){.meta = {.name = "train", .namespace_ = "team-a"},
                                     .flavor = FAIR_KPG_COSCHED,
                                     .min_member = 3};
    pgs[1] = (struct fair_kpodgroup){.meta = {.name = "vtrain", .namespace_ = "team-a"},
                                     .flavor = FAIR_KPG_VOLCANO,
                                     .min_member = 2};
    pgs[2] = (struct fair_kpodgroup){.meta = {.name = "bad", .namespace_ = "team-a"},
                                     .flavor = FAIR_KPG_COSCHED,
                                     .min_member = 1,
                                     .problem = "spec.minMember: want a non-negative integer"};
    standard_cluster();
    struct fair_kpod *p = add_pod("sp", "team-a", "fairshare", "a-train", 1000, NULL);
    p->pod_group = "train";
    p->pod_group_flavor = FAIR_KPG_COSCHED;
    p = add_pod("vc", "team-a", "fairshare", "a-train", 1000, NULL);
    p->pod_group = "vtrain";
    p->pod_group_flavor = FAIR_KPG_VOLCANO;
    p->gang = "mine"; /* the PodGroup wins */
    p->gang_size = 5;
    p = add_pod("same-name-other-flavor", "team-a", "fairshare", "a-train", 1000, NULL);
    p->pod_group = "train";
    p->pod_group_flavor = FAIR_KPG_VOLCANO; /* no Volcano PodGroup "train" */
    p = add_pod("ghost", "team-a", "fairshare", "a-train", 1000, NULL);
    p->pod_group = "ghost";
    p = add_pod("bad", "team-a", "fairshare", "a-train", 1000, NULL);
    p->pod_group = "bad";
    p = add_pod("other-ns", "team-a-dev", "fairshare", "a-train", 1000, NULL);
    p->pod_group = "train"; /* PodGroups are namespaced */
    p = add_pod("charged-pg", "team-a", "fairshare", "a-train", 1000, "n1");
    p->pod_group = "train";
    p = add_pod("done", "team-a", "fairshare", "a-train", 1000, NULL);
    p->pod_group = "train";
    p->phase = FAIR_KPOD_SUCCEEDED;
    p = add_pod("foreign", "team-a", "default-scheduler", NULL, 1000, "n2");
    p->pod_group = "train"; /* counted, not ours */
    opt_pgs = pg_ptrs;
    opt_npgs = 3;
    opt_pg_known[0] = opt_pg_known[1] = true;
    struct fair_ctl_snapshot s;
    build(&s);
    int32_t i = pod_index(&s, "sp");
    assert_string_equal(s.snap.pods[i].gang, "team-a/train");
    assert_int_equal(s.snap.pods[i].gang_size, 3);
    assert_int_equal(s.pod_pg[i], 0);
    assert_string_equal(fair_ctl_snapshot_gang_name(&s, (size_t)i), "train");
    i = pod_index(&s, "vc");
    assert_string_equal(s.snap.pods[i].gang, "team-a/vtrain");
    assert_int_equal(s.snap.pods[i].gang_size, 2);
    assert_int_equal(s.pod_pg[i], 1);
    i = pod_index(&s, "charged-pg");
    assert_string_equal(s.snap.pods[i].gang, "team-a/old");
    assert_int_equal(s.snap.pods[i].gang_size, 4);
    const struct fair_ctl_rejected *rj = rejected(&s, "ghost");
    assert_non_null(rj);
    assert_int_equal(rj->reason, FAIR_CTL_REASON_PODGROUP_NOT_FOUND);
    assert_non_null(strstr(rj->message, "PodGroup team-a/ghost"));
    assert_non_null(strstr(rj->message, "does not exist"));
    rj = rejected(&s, "same-name-other-flavor");
    assert_non_null(rj);
    assert_int_equal(rj->reason, FAIR_CTL_REASON_PODGROUP_NOT_FOUND);
    assert_non_null(strstr(rj->message, "scheduling.volcano.sh"));
    rj = rejected(&s, "other-ns");
    assert_non_null(rj);
    assert_int_equal(rj->reason, FAIR_CTL_REASON_PODGROUP_NOT_FOUND);
    rj = rejected(&s, "bad");
    assert_non_null(rj);
    assert_int_equal(rj->reason, FAIR_CTL_REASON_BAD_POD);
    assert_non_null(strstr(rj->message, "spec.minMember"));
    assert_string_equal(fair_ctl_reason_str(FAIR_CTL_REASON_PODGROUP_NOT_FOUND),
                        "PodGroupNotFound");
    /* train: sp pending; charged-pg and foreign bound (both phase Running);
     * done succeeded. */
    assert_int_equal(s.pg_counts[0].pending, 1);
    assert_int_equal(s.pg_counts[0].bound, 2);
    assert_int_equal(s.pg_counts[0].running, 2);
    assert_int_equal(s.pg_counts[0].succeeded, 1);
    assert_int_equal(s.pg_counts[1].pending, 1);
    fair_ctl_snapshot_release(&s);

    /* The CRD not installed (or not read yet): the message says so. */
    standard_cluster();
    p = add_pod("sp", "team-a", "fairshare", "a-train", 1000, NULL);
    p->pod_group = "train";
    build(&s);
    rj = rejected(&s, "sp");
    assert_non_null(rj);
    assert_int_equal(rj->reason, FAIR_CTL_REASON_PODGROUP_NOT_FOUND);
    assert_non_null(strstr(rj->message, "CRD is not installed"));
    fair_ctl_snapshot_release(&s);
}

/* What a waiting PodGroup member is told: a gang that can never start
 * (more GPUs than the cluster, its pods or minResources counted; more than
 * its queue's limit) says so at once, whatever the engine's reason; one
 * past its scheduleTimeoutSeconds says that first. build() runs at now_ms
 * 123456. */
static void test_podgroup_messages(void **state)
{
    (void)state;
    static struct fair_kpodgroup pgs[3];
    static const struct fair_kpodgroup *pg_ptrs[3] = {&pgs[0], &pgs[1], &pgs[2]};
    memset(pgs, 0, sizeof pgs);
    /* 20 one-GPU pods, 4 of them created: 20 GPUs > 16. */
    pgs[0] =
        (struct fair_kpodgroup){.meta = {.name = "big", .namespace_ = "team-a"}, .min_member = 20};
    /* 2 of 3 pods of 1 GPU, and minResources 32 GPUs. */
    pgs[1] = (struct fair_kpodgroup){.meta = {.name = "greedy", .namespace_ = "team-a"},
                                     .min_member = 3,
                                     .min_resources = {.v = {32000, 0, 0}}};
    /* 3 pods, 2 created long ago, timeout 60 s. */
    pgs[2] = (struct fair_kpodgroup){
        .meta = {.name = "slow", .namespace_ = "team-b", .creation_ms = 1000},
        .min_member = 3,
        .schedule_timeout_s = 60};
    static const struct {
        const char *uid, *ns, *group, *queue;
        const char *needle;
    } pods[] = {
        {"big-0", "team-a", "big", "a-train",
         "gang too large: the 20 pods of gang team-a/big ask "
         "for 20 GPUs, more than the 16 GPUs"},
        {"big-1", "team-a", "big", "a-train", NULL},
        {"big-2", "team-a", "big", "a-train", NULL},
        {"big-3", "team-a", "big", "a-train", NULL},
        {"greedy-0", "team-a", "greedy", "a-train", "ask for 32 GPUs"},
        {"greedy-1", "team-a", "greedy", "a-train", NULL},
        {"slow-0", "team-b", "slow", "b-main",
         "gang timed out: PodGroup team-b/slow is still incomplete after its "
         "scheduleTimeoutSeconds (60 s); gang incomplete: gang team-b/slow has 2 of its 3 pods"},
        {"slow-1", "team-b", "slow", "b-main", NULL},
    };
    standard_cluster();
    for (size_t i = 0; i < sizeof pods / sizeof pods[0]; i++) {
        struct fair_kpod *p = add_pod((char *)pods[i].uid, (char *)pods[i].ns, "fairshare",
                                      (char *)pods[i].queue, 1000, NULL);
        p->pod_group = (char *)pods[i].group;
    }
    opt_pgs = pg_ptrs;
    opt_npgs = 3;
    opt_pg_known[0] = true;
    struct fair_ctl_snapshot s;
    build(&s);
    struct fair_result r;
    struct fair_error err = {0};
    assert_int_equal(fair_engine_run(&s.snap, &r, &err), 0);
    assert_int_equal(r.nactions, 0);
    for (size_t i = 0; i < sizeof pods / sizeof pods[0]; i++) {
        if (!pods[i].needle)
            continue;
        char msg[512];
        int32_t k = pod_index(&s, pods[i].uid);
        assert_true(k >= 0);
        fair_ctl_pending_message(&s, &r, (size_t)k, msg, sizeof msg);
        if (!strstr(msg, pods[i].needle))
            fail_msg("%s: \"%s\" lacks \"%s\"", pods[i].uid, msg, pods[i].needle);
    }
    fair_result_release(&r);
    fair_ctl_snapshot_release(&s);

    /* Over the queue's limit: a queue limited to 4 GPUs, a gang of 6. */
    standard_cluster();
    kqueues[1].quota.limit.v[FAIR_RES_GPU] = 4000; /* a-train */
    pgs[0].min_member = 6;
    struct fair_kpod *p = add_pod("big-0", "team-a", "fairshare", "a-train", 1000, NULL);
    p->pod_group = "big";
    opt_pgs = pg_ptrs;
    opt_npgs = 1;
    opt_pg_known[0] = true;
    build(&s);
    assert_int_equal(fair_engine_run(&s.snap, &r, &err), 0);
    char msg[512];
    fair_ctl_pending_message(&s, &r, (size_t)pod_index(&s, "big-0"), msg, sizeof msg);
    if (!strstr(msg, "more than the limit of queue a-train (4 GPUs)"))
        fail_msg("\"%s\"", msg);
    fair_result_release(&r);
    fair_ctl_snapshot_release(&s);
}

/* The PodGroup status written back, from its pods' counts. */
static void test_podgroup_status(void **state)
{
    (void)state;
    static const struct {
        enum fair_kpodgroup_flavor flavor;
        int32_t min;
        struct fair_ctl_pg_count n;
        int32_t binds;
        const char *phase, *cond, *reason;
    } rows[] = {
        {FAIR_KPG_COSCHED, 3, {.pending = 3}, 0, "Pending", NULL, NULL},
        {FAIR_KPG_COSCHED, 3, {.pending = 3}, 3, "Scheduling", NULL, NULL},
        {FAIR_KPG_COSCHED, 3, {.pending = 2, .bound = 1}, 0, "Unknown", NULL, NULL},
        {FAIR_KPG_COSCHED, 3, {.bound = 3, .running = 1}, 0, "Scheduling", NULL, NULL},
        {FAIR_KPG_COSCHED, 3, {.bound = 4, .running = 3}, 0, "Running", NULL, NULL},
        {FAIR_KPG_COSCHED, 3, {.succeeded = 3}, 0, "Finished", NULL, NULL},
        {FAIR_KPG_COSCHED, 3, {.bound = 1, .failed = 1}, 0, "Failed", NULL, NULL},
        {FAIR_KPG_VOLCANO, 2, {.pending = 1}, 0, "Pending", "Unschedulable", "NotEnoughTasks"},
        {FAIR_KPG_VOLCANO, 2, {.pending = 2}, 0, "Pending", "Unschedulable", "NotEnoughResources"},
        {FAIR_KPG_VOLCANO,
         2,
         {.pending = 1, .bound = 1},
         0,
         "Unknown",
         "Unschedulable",
         "NotEnoughResources"},
        {FAIR_KPG_VOLCANO,
         2,
         {.bound = 2, .running = 2},
         0,
         "Running",
         "Scheduled",
         "GangScheduled"},
        {FAIR_KPG_VOLCANO, 2, {.pending = 2}, 2, "Running", "Scheduled", "GangScheduled"},
        {FAIR_KPG_VOLCANO, 2, {.succeeded = 2}, 0, "Completed", "Scheduled", "GangScheduled"},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        struct fair_kpodgroup g = {.flavor = rows[r].flavor, .min_member = rows[r].min};
        struct fair_ctl_pg_status st;
        fair_ctl_podgroup_status(&g, &rows[r].n, rows[r].binds, &st);
        if (strcmp(st.phase, rows[r].phase))
            fail_msg("row %zu: phase %s, want %s", r, st.phase, rows[r].phase);
        if (rows[r].cond) {
            assert_string_equal(st.cond_type, rows[r].cond);
            assert_string_equal(st.cond_reason, rows[r].reason);
        } else {
            assert_null(st.cond_type);
        }
        assert_int_equal(st.running, rows[r].n.running);
        assert_int_equal(st.succeeded, rows[r].n.succeeded);
    }
}

/* Over 64 pods the resolutions are remembered per (namespace, label):
 * the results must be the same as one by one. */
static void test_many_pods_memo(void **state)
{
    (void)state;
    standard_cluster();
    static char names[150][16];
    for (int i = 0; i < 150; i++) {
        snprintf(names[i], sizeof names[i], "p%03d", i);
        switch (i % 3) {
        case 0:
            add_pod(names[i], "team-a", "fairshare", "a-train", 1000, NULL);
            break;
        case 1:
            add_pod(names[i], "team-a-dev", "fairshare", NULL, 1000, NULL);
            break;
        default:
            add_pod(names[i], "team-b", "fairshare", "a-train", 1000, NULL);
            break;
        }
    }
    struct fair_ctl_snapshot s;
    build(&s);
    assert_int_equal(s.snap.npods, 100);
    assert_int_equal(s.nrejected, 50);
    for (size_t i = 0; i < s.snap.npods; i++) {
        long n = strtol(s.snap.pods[i].name + 1, NULL, 10);
        assert_int_equal(s.snap.pods[i].queue, n % 3 == 0 ? 1 : 0);
    }
    for (size_t i = 0; i < s.nrejected; i++)
        assert_int_equal(s.rejected[i].reason, FAIR_CTL_REASON_NAMESPACE_NOT_ALLOWED);
    fair_ctl_snapshot_release(&s);
}

static void test_devices_text(void **state)
{
    (void)state;
    uint64_t m = 0;
    assert_int_equal(fair_ctl_parse_devices("3", &m), 0);
    assert_int_equal(m, 0x8);
    assert_int_equal(fair_ctl_parse_devices("0,1,63", &m), 0);
    assert_true(m == (0x3 | ((uint64_t)1 << 63)));
    const char *bad[] = {"", ",", "1,", "a", "1;2", "64", "100", "-1", "1,,2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(fair_ctl_parse_devices(bad[i], &m), FAIR_EINVAL);
    assert_int_equal(fair_ctl_parse_devices(NULL, &m), FAIR_EINVAL);
    char out[200];
    fair_ctl_format_devices(0x3, out, sizeof out);
    assert_string_equal(out, "0,1");
    fair_ctl_format_devices(0, out, sizeof out);
    assert_string_equal(out, "");
    fair_ctl_format_devices(~(uint64_t)0, out, 8);
    assert_string_equal(out, "0,1,2,3");
}

static void test_empty_and_alloc_failures(void **state)
{
    (void)state;
    reset();
    struct fair_ctl_snapshot s;
    build(&s);
    assert_int_equal(s.snap.npods, 0);
    assert_int_equal(s.snap.nnodes, 0);
    fair_ctl_snapshot_release(&s);

    standard_cluster();
    add_pod("labelled", "team-a", "fairshare", "a-train", 1000, NULL);
    add_pod("foreign-gpu", "ml", "default-scheduler", NULL, 3000, "n1");
    add_pod("wrong-ns", "team-b", "fairshare", "a-train", 1000, NULL);
    struct fair_kpod *g1 = add_pod("g1", "team-a", "fairshare", "a-train", 1000, NULL);
    g1->gang = "job";
    struct fair_ctl_snapshot_input in = {
        .scheduler_name = "fairshare",
        .nodes = node_ptrs,
        .nnodes = nn,
        .projects = project_ptrs,
        .nprojects = np,
        .queues = queue_ptrs,
        .nqueues = nq,
        .pods = pod_ptrs,
        .npods = npod,
    };
    for (long k = 0;; k++) {
        struct fair_error err = {0};
        fair_alloc_fail_after(k);
        int rc = fair_ctl_snapshot_build(&in, &s, &err);
        fair_alloc_fail_after(-1);
        if (rc == 0) {
            assert_int_equal(s.snap.npods, 3);
            fair_ctl_snapshot_release(&s);
            break;
        }
        assert_int_equal(rc, FAIR_ENOMEM);
        assert_non_null(strstr(err.msg, "snapshot"));
        assert_null(s.pods);
        assert_true(k < 1000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_resolution_and_isolation),
        cmocka_unit_test(test_invalid_objects),
        cmocka_unit_test(test_foreign_pods_and_devices),
        cmocka_unit_test(test_bad_pods),
        cmocka_unit_test(test_min_fraction),
        cmocka_unit_test(test_other_schedulers),
        cmocka_unit_test(test_notice_since),
        cmocka_unit_test(test_namespace_labels),
        cmocka_unit_test(test_overlays_gangs_nodes),
        cmocka_unit_test(test_podgroups),
        cmocka_unit_test(test_podgroup_status),
        cmocka_unit_test(test_podgroup_messages),
        cmocka_unit_test(test_reclaim_policy_and_holds),
        cmocka_unit_test(test_unreadable_pod_blocks_its_node),
        cmocka_unit_test(test_many_pods_memo),
        cmocka_unit_test(test_devices_text),
        cmocka_unit_test(test_reservations),
        cmocka_unit_test(test_gpu_memory),
        cmocka_unit_test(test_isolation_required),
        cmocka_unit_test(test_empty_and_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
