/* Volumes with the controller on the fake API server (docs/engine.md,
 * "Volumes"): a pod whose claim is bound to a volume with node affinity
 * goes only where the volume is; a claim of a WaitForFirstConsumer class
 * gets the chosen node (selected-node) before the pod is bound, and the
 * pod is bound once the test, playing the provisioner, binds the claim;
 * a missing claim or an Immediate one keeps the pod waiting with
 * VolumeNotReady; a claim of a class without provisioner (static local
 * volumes) gets the smallest matching volume on the chosen node prebound
 * (the volume's claimRef), and the pod is bound once the test, playing the
 * PV controller (fakekube has none), binds the claim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

static void mk_pv(struct fair_fake *f, const char *name, const char *node, const char *claim)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"%s\"},"
             "\"spec\":{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\"],"
             "\"storageClassName\":\"fast\",\"claimRef\":{\"namespace\":\"team-a\","
             "\"name\":\"%s\"},\"local\":{\"path\":\"/mnt/x\"},\"nodeAffinity\":{\"required\":{"
             "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
             "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}}",
             name, claim, node);
    must_create(f, "/api/v1/persistentvolumes", body);
}

/* A claim; volume NULL: unbound. */
static void mk_pvc(struct fair_fake *f, const char *name, const char *cls, const char *volume)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{"
             "\"name\":\"%s\",\"namespace\":\"team-a\"},\"spec\":{\"accessModes\":["
             "\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}},"
             "\"storageClassName\":\"%s\"%s%s%s}}",
             name, cls, volume ? ",\"volumeName\":\"" : "", volume ? volume : "",
             volume ? "\"" : "");
    must_create(f, "/api/v1/namespaces/team-a/persistentvolumeclaims", body);
}

static void mk_class(struct fair_fake *f, const char *name, const char *mode)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{"
             "\"name\":\"%s\"},\"provisioner\":\"example.com/csi\",\"volumeBindingMode\":\"%s\"}",
             name, mode);
    must_create(f, "/apis/storage.k8s.io/v1/storageclasses", body);
}

/* A static local volume of class local-nvme on node, Available. */
static void mk_local_pv(struct fair_fake *f, const char *name, const char *node, const char *size)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"%s\"},"
             "\"spec\":{\"capacity\":{\"storage\":\"%s\"},\"accessModes\":[\"ReadWriteOnce\"],"
             "\"storageClassName\":\"local-nvme\",\"local\":{\"path\":\"/mnt/x\"},"
             "\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
             "\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}}",
             name, size, node);
    must_create(f, "/api/v1/persistentvolumes", body);
}

/* The name in the volume's spec.claimRef (malloc'd; "" when none), and its
 * uid into uid (malloc'd) when asked. */
static char *claim_ref(struct fair_fake *f, const char *pv, char **uid)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/persistentvolumes/%s", pv);
    long code = 0;
    char *resp = NULL, *out = NULL;
    if (uid)
        *uid = NULL;
    if (fair_fake_request(f, "GET", path, NULL, &code, &resp) == 0 && code == 200) {
        json_t *j = json_loads(resp, 0, NULL);
        const json_t *cr = json_object_get(json_object_get(j, "spec"), "claimRef");
        const char *s = json_string_value(json_object_get(cr, "name"));
        out = strdup(s ? s : "");
        if (uid) {
            const char *u = json_string_value(json_object_get(cr, "uid"));
            *uid = strdup(u ? u : "");
        }
        json_decref(j);
    }
    free(resp);
    return out ? out : strdup("");
}

static bool claimed_by(struct fair_fake *f, const char *pv, const char *claim)
{
    char *s = claim_ref(f, pv, NULL);
    bool ok = !strcmp(s, claim);
    free(s);
    return ok;
}

/* The claim's metadata.uid (malloc'd). */
static char *claim_uid(struct fair_fake *f, const char *claim)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/team-a/persistentvolumeclaims/%s", claim);
    long code = 0;
    char *resp = NULL, *out = NULL;
    if (fair_fake_request(f, "GET", path, NULL, &code, &resp) == 0 && code == 200) {
        json_t *j = json_loads(resp, 0, NULL);
        const char *u = json_string_value(json_object_get(json_object_get(j, "metadata"), "uid"));
        out = strdup(u ? u : "");
        json_decref(j);
    }
    free(resp);
    return out ? out : strdup("");
}

/* A one-GPU pod of queue qa using claim. */
static void mk_claim_pod(struct fair_fake *f, const char *name, const char *claim)
{
    char extra[512];
    snprintf(extra, sizeof extra,
             ",\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"%s\"}}]",
             claim);
    mk_pod_spec(f, "team-a", name, "qa", "1", NULL, NULL, NULL, extra, 0);
}

static void patch(struct fair_fake *f, const char *path, const char *body)
{
    long code = 0;
    char *resp = NULL;
    int rc =
        fair_fake_request_ct(f, "PATCH", path, "application/merge-patch+json", body, &code, &resp);
    if (rc || code != 200)
        fprintf(stderr, "PATCH %s -> %ld %s\n", path, code, resp ? resp : "");
    free(resp);
    assert_int_equal(code, 200);
}

/* The claim's selected-node annotation (malloc'd; "" when none). */
static char *selected_node(struct fair_fake *f, const char *claim)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/team-a/persistentvolumeclaims/%s", claim);
    long code = 0;
    char *resp = NULL;
    char *out = NULL;
    if (fair_fake_request(f, "GET", path, NULL, &code, &resp) == 0 && code == 200) {
        json_t *j = json_loads(resp, 0, NULL);
        const char *s = json_string_value(
            json_object_get(json_object_get(json_object_get(j, "metadata"), "annotations"),
                            "volume.kubernetes.io/selected-node"));
        out = strdup(s ? s : "");
        json_decref(j);
    }
    free(resp);
    return out ? out : strdup("");
}

static bool node_is(struct fair_fake *f, const char *pod, const char *want)
{
    char *n = pod_node(f, "team-a", pod, NULL);
    bool ok = strcmp(n, want) == 0;
    free(n);
    return ok;
}

static bool selected_is_set(struct fair_fake *f, const char *claim)
{
    char *s = selected_node(f, claim);
    bool ok = *s != 0;
    free(s);
    return ok;
}

/* Plays the PV controller: claim is bound to volume pv; pod is then bound
 * on node (else the test fails, saying what). */
static void bind_claim(struct fair_fake *f, struct ctl *c, const char *claim, const char *pv,
                       const char *pod, const char *node, const char *what)
{
    char path[256], body[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/team-a/persistentvolumeclaims/%s", claim);
    snprintf(body, sizeof body, "{\"spec\":{\"volumeName\":\"%s\"}}", pv);
    patch(f, path, body);
    strncat(path, "/status", sizeof path - strlen(path) - 1);
    patch(f, path, "{\"status\":{\"phase\":\"Bound\"}}");
    if (!WAIT_UNTIL(node_is(f, pod, node), WAIT_MS)) {
        ctl_dump_log(c, 40);
        fail_msg("%s", what);
    }
}

static void test_volumes(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 2, 8, "volumes");
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "16", "[\"team-a\"]", "qa");
    mk_queue(&fake, "qa", "a", "16", 1);
    mk_class(&fake, "fast", "WaitForFirstConsumer");
    mk_class(&fake, "slow", "Immediate");

    /* A bound claim whose volume is on node-0001 only: the pod goes
     * there, although node-0000 comes first in packing order. */
    mk_pv(&fake, "pv-local", "node-0001", "data-local");
    mk_pvc(&fake, "data-local", "fast", "pv-local");
    mk_claim_pod(&fake, "local", "data-local");
    if (!WAIT_UNTIL(node_is(&fake, "local", "node-0001"), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the pod with a volume on node-0001 was not bound there");
    }

    /* A missing claim, and an unbound claim of an Immediate class: the
     * pods wait, with VolumeNotReady. */
    mk_claim_pod(&fake, "nothing", "no-such-claim");
    mk_pvc(&fake, "data-slow", "slow", NULL);
    mk_claim_pod(&fake, "slow", "data-slow");
    if (!WAIT_UNTIL(
            pod_condition_is(&fake, "team-a", "nothing", "PodScheduled", "VolumeNotReady") &&
                pod_condition_is(&fake, "team-a", "slow", "PodScheduled", "VolumeNotReady"),
            WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("pods with a missing or an immediate unbound claim did not say VolumeNotReady");
    }
    assert_true(node_is(&fake, "nothing", ""));
    assert_true(node_is(&fake, "slow", ""));

    /* A WaitForFirstConsumer claim: the controller writes the chosen node
     * on it and does not bind the pod yet. */
    mk_pvc(&fake, "data-wffc", "fast", NULL);
    mk_claim_pod(&fake, "wffc", "data-wffc");
    if (!WAIT_UNTIL(selected_is_set(&fake, "data-wffc"), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the WaitForFirstConsumer claim got no selected-node");
    }
    char *node = selected_node(&fake, "data-wffc");
    assert_true(!strcmp(node, "node-0000") || !strcmp(node, "node-0001"));
    nap(1500);
    assert_true(node_is(&fake, "wffc", ""));
    assert_true(WAIT_UNTIL(
        pod_condition_is(&fake, "team-a", "wffc", "PodScheduled", "VolumeNotReady"), WAIT_MS));

    /* The provisioner (the test) makes the volume on that node and binds
     * the claim: the pod is bound there. */
    mk_pv(&fake, "pv-wffc", node, "data-wffc");
    bind_claim(&fake, &c, "data-wffc", "pv-wffc", "wffc", node,
               "the pod was not bound where its provisioned volume is");
    free(node);

    /* The missing claim appears, bound to the volume of node-0001: the
     * waiting pod is bound there. */
    mk_pv(&fake, "pv-late", "node-0001", "no-such-claim");
    mk_pvc(&fake, "no-such-claim", "fast", "pv-late");
    if (!WAIT_UNTIL(node_is(&fake, "nothing", "node-0001"), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the pod whose claim appeared was not bound where its volume is");
    }
    assert_true(node_is(&fake, "slow", ""));

    /* Static local volumes (a class without provisioner): 5Gi on
     * node-0000 (too small), 100Gi and 10Gi on node-0001. The pod of an
     * 8Gi claim goes to node-0001, whose 10Gi volume (the smallest that
     * fits) is prebound to the claim; the pod is not bound yet. */
    must_create(&fake, "/apis/storage.k8s.io/v1/storageclasses",
                "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":"
                "{\"name\":\"local-nvme\"},\"provisioner\":\"kubernetes.io/no-provisioner\","
                "\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    const char *const local[][3] = {{"nvme-0-5g", "node-0000", "5Gi"},
                                    {"nvme-1-100g", "node-0001", "100Gi"},
                                    {"nvme-1-10g", "node-0001", "10Gi"}};
    for (size_t i = 0; i < 3; i++) {
        char path[128];
        mk_local_pv(&fake, local[i][0], local[i][1], local[i][2]);
        snprintf(path, sizeof path, "/api/v1/persistentvolumes/%s/status", local[i][0]);
        patch(&fake, path, "{\"status\":{\"phase\":\"Available\"}}");
    }
    must_create(&fake, "/api/v1/namespaces/team-a/persistentvolumeclaims",
                "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{"
                "\"name\":\"scratch\",\"namespace\":\"team-a\"},\"spec\":{\"accessModes\":["
                "\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"8Gi\"}},"
                "\"storageClassName\":\"local-nvme\"}}");
    mk_claim_pod(&fake, "static", "scratch");
    if (!WAIT_UNTIL(claimed_by(&fake, "nvme-1-10g", "scratch"), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the 10Gi volume on node-0001 was not prebound to the static claim");
    }
    char *uid = NULL, *name = claim_ref(&fake, "nvme-1-10g", &uid);
    char *want_uid = claim_uid(&fake, "scratch");
    assert_string_equal(uid, want_uid);
    free(uid);
    free(want_uid);
    free(name);
    assert_true(claimed_by(&fake, "nvme-1-100g", ""));
    assert_true(claimed_by(&fake, "nvme-0-5g", ""));
    assert_false(selected_is_set(&fake, "scratch"));
    nap(1500);
    assert_true(node_is(&fake, "static", ""));
    assert_true(WAIT_UNTIL(
        pod_condition_is(&fake, "team-a", "static", "PodScheduled", "VolumeNotReady"), WAIT_MS));
    assert_true(claimed_by(&fake, "nvme-1-100g", ""));

    /* The PV controller (the test) binds the claim to the prebound
     * volume: the pod is bound to node-0001. */
    patch(&fake, "/api/v1/persistentvolumes/nvme-1-10g/status",
          "{\"status\":{\"phase\":\"Bound\"}}");
    bind_claim(&fake, &c, "scratch", "nvme-1-10g", "static", "node-0001",
               "the pod was not bound where its static volume is");
    stop_all(&fake, &c);
}

/* One node of 8 GPUs, queue qa of team-a guaranteeing gpus, the
 * WaitForFirstConsumer class "fast", and a controller whose
 * volumeBindTimeout is timeout. */
static void start_one_node(struct fair_fake *fake, struct ctl *c, const char *timeout,
                           const char *gpus)
{
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(fake, &o), 0);
    config_write(c->config, sizeof c->config, fake, "provision",
                 "volumeBindTimeout: %s\ncycleInterval: 200ms\n", timeout);
    const char *extra[] = {"--leader-elect=false", NULL};
    assert_int_equal(ctl_start_args(c, fake, "provision", extra), 0);
    assert_true(WAIT_UNTIL(ctl_ready(c), WAIT_MS));
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(fake, ns);
    mk_project(fake, "a", gpus, "[\"team-a\"]", "qa");
    mk_queue(fake, "qa", "a", gpus, 1);
    mk_class(fake, "fast", "WaitForFirstConsumer");
}

/* A one-GPU pod of qa with an unbound claim of class "fast", once the
 * controller has given the claim its node (and so holds the pod's room). */
static void held_pod(struct fair_fake *fake, struct ctl *c, const char *pod, const char *claim)
{
    mk_pvc(fake, claim, "fast", NULL);
    mk_claim_pod(fake, pod, claim);
    if (!WAIT_UNTIL(selected_is_set(fake, claim), WAIT_MS)) {
        ctl_dump_log(c, 40);
        fail_msg("claim %s got no selected-node", claim);
    }
}

/* An 8-GPU pod of qa arrives and waits: the held GPU counts as in use, and
 * 1 + 8 is beyond the queue's share of the 8-GPU node. */
static void big_waits(struct fair_fake *fake)
{
    mk_pod(fake, "team-a", "big", "qa", "8");
    assert_true(
        WAIT_UNTIL(pod_condition_is(fake, "team-a", "big", "PodScheduled", "FairShare"), WAIT_MS));
    nap(1000);
    assert_true(node_is(fake, "big", ""));
}

/* While a claim's volume is made, its pod's room on the chosen node is
 * held, as kube-scheduler assumes the pod there: a one-GPU pod's
 * WaitForFirstConsumer claim gets the node, and an 8-GPU pod that arrives
 * meanwhile waits (before, it took the node, and the first pod then
 * waited for room). Once the claim is bound, the first pod binds. */
static void test_room_held_while_provisioning(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_one_node(&fake, &c, "10m", "16");
    held_pod(&fake, &c, "vol-1", "data-1");
    assert_true(WAIT_UNTIL(
        pod_condition_is(&fake, "team-a", "vol-1", "PodScheduled", "VolumeNotReady"), WAIT_MS));
    big_waits(&fake);

    /* The provisioner makes the volume; the claim is bound; vol-1 binds. */
    mk_pv(&fake, "pv-1", "node-0000", "data-1");
    bind_claim(&fake, &c, "data-1", "pv-1", "vol-1", "node-0000",
               "vol-1 was not bound once its claim was");
    assert_true(node_is(&fake, "big", ""));
}

/* A hold that nobody provisions ends after volumeBindTimeout (2 s here),
 * and the room goes to the pod that waits for it. */
static void test_hold_times_out(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_one_node(&fake, &c, "2s", "16");
    held_pod(&fake, &c, "vol-2", "data-2");
    long long t0 = now_ms();
    mk_pod(&fake, "team-a", "big", "qa", "8");
    if (!WAIT_UNTIL(node_is(&fake, "big", "node-0000"), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the 8-GPU pod did not get the node once the hold timed out");
    }
    assert_true(now_ms() - t0 >= 1000); /* not at once: the hold lasted */
    assert_true(node_is(&fake, "vol-2", ""));
}

/* A held room is reclaimed like a running pod's: team-a (no guarantee)
 * borrows one GPU with a hold; team-b's 8-GPU pod, owed its guarantee,
 * ends the hold at once (nothing to evict) and binds; the held pod waits,
 * its claim still naming the node. */
static void test_held_room_reclaimed(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_one_node(&fake, &c, "10m", "0");
    const char *nsb[] = {"team-b", NULL};
    mk_namespaces(&fake, nsb);
    mk_project(&fake, "b", "8", "[\"team-b\"]", "qb");
    mk_queue(&fake, "qb", "b", "8", 1);
    held_pod(&fake, &c, "vol-3", "data-3");
    mk_pod(&fake, "team-b", "owner", "qb", "8");
    bool bound = false;
    for (int i = 0; i < WAIT_MS / 100 && !bound; i++) {
        char *n = pod_node(&fake, "team-b", "owner", NULL);
        bound = !strcmp(n, "node-0000");
        free(n);
        if (!bound)
            nap(100);
    }
    if (!bound) {
        ctl_dump_log(&c, 40);
        fail_msg("team-b's pod did not get the room held for team-a's");
    }
    assert_true(node_is(&fake, "vol-3", ""));
    assert_true(selected_is_set(&fake, "data-3"));
    /* Its claim keeps it to that node, where team-a is now beyond its
     * fair share (0 GPUs): it waits for room there, not for its volume. */
    assert_true(WAIT_UNTIL(pod_condition_is(&fake, "team-a", "vol-3", "PodScheduled", "FairShare"),
                           WAIT_MS));
    assert_true(node_is(&fake, "vol-3", ""));
}

/* A claim that names its node already (selected-node written before the
 * controller started: a restart, or another leader) keeps its pod to that
 * node, as kube-scheduler's FindPodVolumes does, and the pod's room there
 * is held again while the volume is made: an 8-GPU pod waits. Before,
 * the pod waited without a hold and the 8-GPU pod took the node. */
static void test_named_claim_holds_room(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_one_node(&fake, &c, "10m", "16");
    mk_pvc(&fake, "data-4", "fast", NULL);
    patch(&fake, "/api/v1/namespaces/team-a/persistentvolumeclaims/data-4",
          "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/selected-node\":"
          "\"node-0000\"}}}");
    mk_claim_pod(&fake, "vol-4", "data-4");
    if (!WAIT_UNTIL(pod_condition_message_has(&fake, "team-a", "vol-4", "PodScheduled",
                                              "room there is held"),
                    WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("no room was held for the pod of a claim that names its node");
    }
    big_waits(&fake);
    mk_pv(&fake, "pv-4", "node-0000", "data-4");
    bind_claim(&fake, &c, "data-4", "pv-4", "vol-4", "node-0000",
               "vol-4 was not bound once its claim was");
}

/* A provisioner that fails on the node clears the claim's selected-node
 * so that the scheduler chooses again (kube-scheduler's PreBind then
 * fails at once). The hold ends then, not at volumeBindTimeout (10m
 * here), and the claim is given a node again. */
static void test_provisioning_failed(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_one_node(&fake, &c, "10m", "16");
    held_pod(&fake, &c, "vol-5", "data-5");
    assert_true(WAIT_UNTIL(
        pod_condition_message_has(&fake, "team-a", "vol-5", "PodScheduled", "room there is held"),
        WAIT_MS));
    nap(500); /* the controller's watch has seen the claim name the node */
    patch(&fake, "/api/v1/namespaces/team-a/persistentvolumeclaims/data-5",
          "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/selected-node\":null}}}");
    if (!WAIT_UNTIL(selected_is_set(&fake, "data-5"), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the claim was not given a node again after its provisioner cleared it");
    }
    assert_true(node_is(&fake, "vol-5", ""));
}

/* A provisioner that gives up before the controller's watch ever showed
 * the claim naming the node (the claims' watch hangs meanwhile): once the
 * watch comes back, the claim is newer than the resourceVersion our patch
 * was answered with and names no node, so the hold ends and the claim gets
 * a node again, as kube-scheduler's assume cache tells (before, the hold
 * lasted until volumeBindTimeout, 10m here). */
static void test_provisioning_failed_unseen(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_one_node(&fake, &c, "10m", "16");
    mk_pvc(&fake, "data-7", "fast", NULL);
    nap(500); /* the controller's store has the claim */
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request(&fake, "POST",
                                       "/fake/stall-watches?resource=persistentvolumeclaims", "",
                                       &code, &resp),
                     0);
    free(resp);
    assert_int_equal(code, 200);
    mk_claim_pod(&fake, "vol-7", "data-7");
    if (!WAIT_UNTIL(selected_is_set(&fake, "data-7") &&
                        pod_condition_message_has(&fake, "team-a", "vol-7", "PodScheduled",
                                                  "room there is held"),
                    WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the claim got no selected-node with the pod's room held");
    }
    nap(500); /* the patch's answer is in */
    patch(&fake, "/api/v1/namespaces/team-a/persistentvolumeclaims/data-7",
          "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/selected-node\":null}}}");
    assert_int_equal(fair_fake_request(&fake, "POST", "/fake/drop-watches", "", &code, &resp), 0);
    free(resp);
    assert_int_equal(code, 200);
    if (!WAIT_UNTIL(selected_is_set(&fake, "data-7"), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the claim was not given a node again after its provisioner cleared it unseen");
    }
    assert_true(node_is(&fake, "vol-7", ""));
}

/* A static volume (a class without provisioner) prebound to the claim:
 * the pod's room is held while the PV controller binds the claim, as
 * kube-scheduler's assumed pod holds it through PreBind. An 8-GPU pod
 * waits meanwhile; once the test, playing the PV controller, binds the
 * claim, the pod is bound where its volume is. Before, the room was free
 * while the volume was prebound. */
static void test_static_volume_held(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_one_node(&fake, &c, "10m", "16");
    must_create(&fake, "/apis/storage.k8s.io/v1/storageclasses",
                "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":"
                "{\"name\":\"local-nvme\"},\"provisioner\":\"kubernetes.io/no-provisioner\","
                "\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    mk_local_pv(&fake, "nvme-6", "node-0000", "10Gi");
    patch(&fake, "/api/v1/persistentvolumes/nvme-6/status",
          "{\"status\":{\"phase\":\"Available\"}}");
    mk_pvc(&fake, "data-6", "local-nvme", NULL);
    mk_claim_pod(&fake, "vol-6", "data-6");
    if (!WAIT_UNTIL(claimed_by(&fake, "nvme-6", "data-6"), WAIT_MS) ||
        !WAIT_UNTIL(pod_condition_message_has(&fake, "team-a", "vol-6", "PodScheduled",
                                              "room there is held"),
                    WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the static volume was not prebound with the pod's room held");
    }
    big_waits(&fake);
    assert_true(node_is(&fake, "vol-6", ""));
    patch(&fake, "/api/v1/persistentvolumes/nvme-6/status", "{\"status\":{\"phase\":\"Bound\"}}");
    bind_claim(&fake, &c, "data-6", "nvme-6", "vol-6", "node-0000",
               "vol-6 was not bound once its claim was");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_volumes, tc_teardown),
        cmocka_unit_test_teardown(test_room_held_while_provisioning, tc_teardown),
        cmocka_unit_test_teardown(test_hold_times_out, tc_teardown),
        cmocka_unit_test_teardown(test_held_room_reclaimed, tc_teardown),
        cmocka_unit_test_teardown(test_named_claim_holds_room, tc_teardown),
        cmocka_unit_test_teardown(test_provisioning_failed, tc_teardown),
        cmocka_unit_test_teardown(test_provisioning_failed_unseen, tc_teardown),
        cmocka_unit_test_teardown(test_static_volume_held, tc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
