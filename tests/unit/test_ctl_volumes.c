/* Volumes (ctl/volumes.h): a pending pod's claims, decoded from the JSON
 * the API server sends, against a table of cases: when the pod waits and
 * why, and on which nodes it may run (its own node affinity ANDed with
 * its volumes' node affinity and its classes' allowedTopologies), with
 * the messages of kube-scheduler's VolumeBinding plugin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "ctl/volumes.h"
#include "engine/constraints.h"
#include "kube/decode.h"
#include "kube/jsonfilter.h"

/* Nodes n0 (zone a), n1 (zone a), n2 (zone b). */
static const struct fair_label l0[] = {{"kubernetes.io/hostname", "n0"},
                                       {"topology.kubernetes.io/zone", "a"}};
static const struct fair_label l1[] = {{"kubernetes.io/hostname", "n1"},
                                       {"topology.kubernetes.io/zone", "a"}};
static const struct fair_label l2[] = {{"kubernetes.io/hostname", "n2"},
                                       {"topology.kubernetes.io/zone", "b"}};
static const struct fair_node nodes[3] = {
    {.name = "n0", .labels = l0, .nlabels = 2},
    {.name = "n1", .labels = l1, .nlabels = 2},
    {.name = "n2", .labels = l2, .nlabels = 2},
};

#define HOST_IN(...)                                                                               \
    "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\","          \
    "\"operator\":\"In\",\"values\":[" __VA_ARGS__ "]}]}]}"

/* An unbound claim of the class "local" in namespace t, more of its spec. */
#define LOCAL_PVC(name, spec)                                                                      \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"t\",\"uid\":\"uid-" name "\"},"          \
    "\"spec\":{\"storageClassName\":\"local\"," spec "},\"status\":{\"phase\":\"Pending\"}}"

/* A local volume of the class "local" on one node. */
#define LOCAL_PV(name, labels, node, size, more, phase)                                            \
    "{\"metadata\":{\"name\":\"" name "\",\"labels\":{" labels "}},\"spec\":{"                     \
    "\"storageClassName\":\"local\",\"capacity\":{\"storage\":\"" size "\"},"                      \
    "\"nodeAffinity\":{\"required\":" HOST_IN("\"" node "\"") "}" more "},"                        \
                                                              "\"status\":{\"phase\":\"" phase     \
                                                              "\"}}"

/* The objects of every case. */
static const char *const pvcs_json[] = {
    "{\"metadata\":{\"name\":\"on-n1\",\"namespace\":\"t\"},\"spec\":{\"volumeName\":\"pv-n1\","
    "\"storageClassName\":\"local\"},\"status\":{\"phase\":\"Bound\"}}",
    "{\"metadata\":{\"name\":\"on-n0-or-n2\",\"namespace\":\"t\"},\"spec\":{\"volumeName\":"
    "\"pv-n0n2\"},\"status\":{\"phase\":\"Bound\"}}",
    "{\"metadata\":{\"name\":\"anywhere\",\"namespace\":\"t\"},\"spec\":{\"volumeName\":"
    "\"pv-any\"},\"status\":{\"phase\":\"Bound\"}}",
    "{\"metadata\":{\"name\":\"gone-pv\",\"namespace\":\"t\"},\"spec\":{\"volumeName\":"
    "\"pv-missing\"},\"status\":{\"phase\":\"Bound\"}}",
    "{\"metadata\":{\"name\":\"deleting\",\"namespace\":\"t\",\"deletionTimestamp\":"
    "\"2026-11-27T00:00:00Z\"},\"spec\":{\"volumeName\":\"pv-any\"}}",
    "{\"metadata\":{\"name\":\"lost\",\"namespace\":\"t\"},\"spec\":{\"volumeName\":\"pv-any\"},"
    "\"status\":{\"phase\":\"Lost\"}}",
    "{\"metadata\":{\"name\":\"no-class\",\"namespace\":\"t\"},\"spec\":{\"storageClassName\":"
    "\"\"},\"status\":{\"phase\":\"Pending\"}}",
    "{\"metadata\":{\"name\":\"immediate\",\"namespace\":\"t\"},\"spec\":{\"storageClassName\":"
    "\"standard\"},\"status\":{\"phase\":\"Pending\"}}",
    "{\"metadata\":{\"name\":\"unknown-class\",\"namespace\":\"t\"},\"spec\":{"
    "\"storageClassName\":\"nope\"}}",
    "{\"metadata\":{\"name\":\"wffc\",\"namespace\":\"t\"},\"spec\":{\"storageClassName\":"
    "\"csi-wffc\"},\"status\":{\"phase\":\"Pending\"}}",
    "{\"metadata\":{\"name\":\"wffc-zone\",\"namespace\":\"t\"},\"spec\":{\"storageClassName\":"
    "\"csi-zone-a\"}}",
    "{\"metadata\":{\"name\":\"wffc-selected\",\"namespace\":\"t\",\"annotations\":{"
    "\"volume.kubernetes.io/selected-node\":\"n2\"}},\"spec\":{\"storageClassName\":"
    "\"csi-wffc\"}}",
    "{\"metadata\":{\"name\":\"static-local\",\"namespace\":\"t\"},\"spec\":{"
    "\"storageClassName\":\"local\"}}",
    "{\"metadata\":{\"name\":\"mypod-scratch\",\"namespace\":\"t\"},\"spec\":{\"volumeName\":"
    "\"pv-n1\"},\"status\":{\"phase\":\"Bound\"}}",
    "{\"metadata\":{\"name\":\"on-n1\",\"namespace\":\"other\"},\"spec\":{\"volumeName\":"
    "\"pv-n0n2\"},\"status\":{\"phase\":\"Bound\"}}",
    /* Static claims of the class "local" (no provisioner). */
    LOCAL_PVC("local-8g", "\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":"
                          "{\"storage\":\"8Gi\"}}"),
    LOCAL_PVC("local-15g", "\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":"
                           "{\"storage\":\"15Gi\"}}"),
    LOCAL_PVC("local-rwx", "\"accessModes\":[\"ReadWriteMany\"],\"resources\":{\"requests\":"
                           "{\"storage\":\"1Gi\"}}"),
    LOCAL_PVC("local-100g", "\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":"
                            "{\"storage\":\"100Gi\"}}"),
    LOCAL_PVC("local-block", "\"volumeMode\":\"Block\",\"resources\":{\"requests\":"
                             "{\"storage\":\"50Gi\"}}"),
    LOCAL_PVC("prebound", "\"accessModes\":[\"ReadWriteOnce\"]"),
    LOCAL_PVC("local-sel", "\"selector\":{\"matchLabels\":{\"disk\":\"nvme\"}}"),
    LOCAL_PVC("local-expr", "\"selector\":{\"matchExpressions\":[{\"key\":\"disk\","
                            "\"operator\":\"Exists\"}]}"),
    LOCAL_PVC("local-notin", "\"selector\":{\"matchExpressions\":[{\"key\":\"disk\","
                             "\"operator\":\"NotIn\",\"values\":[\"nvme\"]}]}"),
    LOCAL_PVC("local-dne", "\"selector\":{\"matchExpressions\":[{\"key\":\"disk\","
                           "\"operator\":\"DoesNotExist\"}]}"),
    LOCAL_PVC("local-both", "\"selector\":{\"matchLabels\":{\"disk\":\"nvme\"},"
                            "\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\","
                            "\"values\":[\"ssd\",\"nvme\"]}]}"),
    LOCAL_PVC("local-ssd", "\"selector\":{\"matchExpressions\":[{\"key\":\"disk\","
                           "\"operator\":\"In\",\"values\":[\"ssd\"]}]}"),
    LOCAL_PVC("local-gt", "\"selector\":{\"matchExpressions\":[{\"key\":\"size\","
                          "\"operator\":\"Gt\",\"values\":[\"1\"]}]}"),
    LOCAL_PVC("local-exists-v", "\"selector\":{\"matchExpressions\":[{\"key\":\"disk\","
                                "\"operator\":\"Exists\",\"values\":[\"nvme\"]}]}"),
    LOCAL_PVC("local-expr-shape", "\"selector\":{\"matchExpressions\":[{\"key\":7}]}"),
};
static const char *const pvs_json[] = {
    "{\"metadata\":{\"name\":\"pv-n1\"},\"spec\":{\"nodeAffinity\":{\"required\":" HOST_IN(
        "\"n1\"") "}}}",
    /* two terms: n0, or n2 */
    "{\"metadata\":{\"name\":\"pv-n0n2\"},\"spec\":{\"nodeAffinity\":{\"required\":{"
    "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\","
    "\"operator\":\"In\",\"values\":[\"n0\"]}]},{\"matchFields\":[{\"key\":\"metadata.name\","
    "\"operator\":\"In\",\"values\":[\"n2\"]}]}]}}}}",
    "{\"metadata\":{\"name\":\"pv-any\"},\"spec\":{}}",
    LOCAL_PV("lpv-n0-10", "", "n0", "10Gi", ",\"accessModes\":[\"ReadWriteOnce\"]", "Available"),
    LOCAL_PV("lpv-n2-20", "\"disk\":\"nvme\"", "n2", "20Gi",
             ",\"accessModes\":[\"ReadWriteOnce\",\"ReadWriteMany\"]", "Available"),
    LOCAL_PV("lpv-n2-5", "", "n2", "5Gi", ",\"accessModes\":[\"ReadWriteOnce\"]", "Available"),
    LOCAL_PV("lpv-n1-claimed", "\"disk\":\"nvme\"", "n1", "100Gi",
             ",\"accessModes\":[\"ReadWriteOnce\",\"ReadWriteMany\"],\"claimRef\":{"
             "\"namespace\":\"other\",\"name\":\"x\",\"uid\":\"ux\"}",
             "Bound"),
    LOCAL_PV("lpv-n1-block", "", "n1", "100Gi",
             ",\"accessModes\":[\"ReadWriteOnce\"],\"volumeMode\":\"Block\"", "Available"),
    LOCAL_PV("lpv-n1-prebound", "", "n1", "1Gi",
             ",\"accessModes\":[\"ReadWriteOnce\"],\"claimRef\":{\"namespace\":\"t\","
             "\"name\":\"prebound\"}",
             "Available"),
    LOCAL_PV("lpv-n0-released", "", "n0", "100Gi", ",\"accessModes\":[\"ReadWriteOnce\"]",
             "Released"),
};
static const char *const scs_json[] = {
    "{\"metadata\":{\"name\":\"standard\"},\"provisioner\":\"example.com/csi\","
    "\"volumeBindingMode\":\"Immediate\"}",
    "{\"metadata\":{\"name\":\"csi-wffc\"},\"provisioner\":\"example.com/csi\","
    "\"volumeBindingMode\":\"WaitForFirstConsumer\"}",
    "{\"metadata\":{\"name\":\"csi-zone-a\"},\"provisioner\":\"example.com/csi\","
    "\"volumeBindingMode\":\"WaitForFirstConsumer\",\"allowedTopologies\":[{"
    "\"matchLabelExpressions\":[{\"key\":\"topology.kubernetes.io/zone\",\"values\":[\"a\"]}]}]}",
    "{\"metadata\":{\"name\":\"local\"},\"provisioner\":\"kubernetes.io/no-provisioner\","
    "\"volumeBindingMode\":\"WaitForFirstConsumer\"}",
};

#define NPVC (sizeof pvcs_json / sizeof *pvcs_json)
#define NPV (sizeof pvs_json / sizeof *pvs_json)
#define NSC (sizeof scs_json / sizeof *scs_json)

static struct fair_kpvc *pvcs[NPVC];
static struct fair_kpv *pvs[NPV];
static struct fair_ksc *scs[NSC];

static json_t *load(const char *s)
{
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    if (!j)
        fail_msg("bad JSON in the test: %s: %s", je.text, s);
    return j;
}

/* s parsed as the watch path parses objects of type k (its filter). */
static json_t *load_filtered(const char *s, const struct fair_ktype *k)
{
    json_t *j = NULL;
    assert_int_equal(fair_json_parse_filtered(s, strlen(s), k->filter, &j, NULL), 0);
    return j;
}

static int setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPVC; i++) {
        json_t *j = load(pvcs_json[i]);
        assert_int_equal(fair_kpvc_decode(j, &pvcs[i], NULL), 0);
        json_decref(j);
    }
    for (size_t i = 0; i < NPV; i++) {
        json_t *j = load(pvs_json[i]);
        assert_int_equal(fair_kpv_decode(j, &pvs[i], NULL), 0);
        json_decref(j);
    }
    for (size_t i = 0; i < NSC; i++) {
        json_t *j = load(scs_json[i]);
        assert_int_equal(fair_ksc_decode(j, &scs[i], NULL), 0);
        json_decref(j);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPVC; i++)
        fair_kpvc_free(pvcs[i]);
    for (size_t i = 0; i < NPV; i++)
        fair_kpv_free(pvs[i]);
    for (size_t i = 0; i < NSC; i++)
        fair_ksc_free(scs[i]);
    return 0;
}

struct vcase {
    const char *name;
    const char *volumes;  /* the pod's spec.volumes (JSON array) */
    const char *affinity; /* the pod's spec.affinity.nodeAffinity; NULL: none */
    const char *wait;     /* a substring of the message; NULL: does not wait */
    const char *fits;     /* the nodes it may go to, e.g. "n1"; when it does not wait */
    bool select;          /* a claim waits for its node */
};

#define CLAIM(c) "{\"name\":\"v-" c "\",\"persistentVolumeClaim\":{\"claimName\":\"" c "\"}}"

static const struct vcase cases[] = {
    {"no volume claims anything", "[{\"name\":\"tmp\",\"emptyDir\":{}}]", NULL, NULL, "n0n1n2",
     false},
    {"claim missing", "[" CLAIM("absent") "]", NULL, "persistentvolumeclaim \"absent\" not found",
     NULL, false},
    /* "other" has a claim of the same name, bound to pv-n0n2 */
    {"the claim of the pod's own namespace", "[" CLAIM("on-n1") "]", NULL, NULL, "n1", false},
    {"claim being deleted", "[" CLAIM("deleting") "]", NULL, "is being deleted", NULL, false},
    {"claim lost", "[" CLAIM("lost") "]", NULL, "lost its persistentvolume pv-any", NULL, false},
    {"bound to a volume with node affinity", "[" CLAIM("on-n1") "]", NULL, NULL, "n1", false},
    {"bound to a volume of two terms", "[" CLAIM("on-n0-or-n2") "]", NULL, NULL, "n0n2", false},
    {"bound to a volume reachable anywhere", "[" CLAIM("anywhere") "]", NULL, NULL, "n0n1n2",
     false},
    {"bound to a missing volume", "[" CLAIM("gone-pv") "]", NULL, "which does not exist", NULL,
     false},
    {"the pod's own affinity ANDed with the volume's", "[" CLAIM("on-n0-or-n2") "]",
     "{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
     "\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\","
     "\"values\":[\"a\"]}]}]}}",
     NULL, "n0", false},
    {"two volumes that share no node", "[" CLAIM("on-n1") "," CLAIM("on-n0-or-n2") "]", NULL, NULL,
     "", false},
    {"a preferred-only pod keeps its preference, gets the volume's terms", "[" CLAIM("on-n1") "]",
     "{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":5,\"preference\":{"
     "\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\","
     "\"values\":[\"b\"]}]}}]}",
     NULL, "n1", false},
    {"unbound without a class", "[" CLAIM("no-class") "]", NULL,
     "pod has unbound immediate PersistentVolumeClaims", NULL, false},
    {"unbound, Immediate class", "[" CLAIM("immediate") "]", NULL,
     "pod has unbound immediate PersistentVolumeClaims", NULL, false},
    {"unbound, class not found", "[" CLAIM("unknown-class") "]", NULL,
     "storageclass.storage.k8s.io \"nope\" not found", NULL, false},
    {"WaitForFirstConsumer with a provisioner", "[" CLAIM("wffc") "]", NULL, NULL, "n0n1n2", true},
    {"WaitForFirstConsumer, allowedTopologies", "[" CLAIM("wffc-zone") "]", NULL, NULL, "n0n1",
     true},
    /* Its provisioner works on n2 (selected-node): there only, and its room
     * is held there again (FindPodVolumes). */
    {"WaitForFirstConsumer, being provisioned", "[" CLAIM("wffc-selected") "]", NULL, NULL, "n2",
     true},
    {"WaitForFirstConsumer, being provisioned, the pod's affinity elsewhere",
     "[" CLAIM("wffc-selected") "]",
     "{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
     "\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\","
     "\"values\":[\"a\"]}]}]}}",
     NULL, "", true},
    /* Static volumes (no provisioner): where a matching Available one is. */
    {"static: any size, any mode: n0 and n2 (n1's are Block or claimed)",
     "[" CLAIM("static-local") "]", NULL, NULL, "n0n2", true},
    {"static: capacity 8Gi: 10Gi on n0, 20Gi on n2", "[" CLAIM("local-8g") "]", NULL, NULL, "n0n2",
     true},
    {"static: capacity 15Gi: n2 only", "[" CLAIM("local-15g") "]", NULL, NULL, "n2", true},
    {"static: ReadWriteMany: n2's volume has it", "[" CLAIM("local-rwx") "]", NULL, NULL, "n2",
     true},
    {"static: 100Gi: claimed, Block and Released volumes are no match", "[" CLAIM("local-100g") "]",
     NULL, "no Available persistentvolume of StorageClass \"local\" matches claim \"local-100g\"",
     NULL, false},
    {"static: volume mode Block", "[" CLAIM("local-block") "]", NULL, NULL, "n1", true},
    {"static: selector matchLabels", "[" CLAIM("local-sel") "]", NULL, NULL, "n2", true},
    {"static: selector matchExpressions Exists: the nvme volume (n1's is claimed)",
     "[" CLAIM("local-expr") "]", NULL, NULL, "n2", true},
    {"static: NotIn: volumes without the label match", "[" CLAIM("local-notin") "]", NULL, NULL,
     "n0n2", true},
    {"static: DoesNotExist", "[" CLAIM("local-dne") "]", NULL, NULL, "n0n2", true},
    {"static: matchLabels and matchExpressions, ANDed", "[" CLAIM("local-both") "]", NULL, NULL,
     "n2", true},
    {"static: In with no volume labelled so", "[" CLAIM("local-ssd") "]", NULL,
     "no Available persistentvolume of StorageClass \"local\" matches claim \"local-ssd\"", NULL,
     false},
    {"static: Gt is no label selector operator", "[" CLAIM("local-gt") "]", NULL,
     "claim \"local-gt\": spec.selector.matchExpressions: not a label selector", NULL, false},
    {"static: Exists with values", "[" CLAIM("local-exists-v") "]", NULL,
     "spec.selector.matchExpressions: not a label selector", NULL, false},
    {"static: matchExpressions of a bad shape", "[" CLAIM("local-expr-shape") "]", NULL,
     "spec.selector.matchExpressions", NULL, false},
    /* Prebound (claimRef) before a restart, or by another scheduler: where
     * that volume is, and its room held there again. */
    {"static: a volume's claimRef names the claim: there only", "[" CLAIM("prebound") "]", NULL,
     NULL, "n1", true},
    {"static, ANDed with the pod's own affinity (zone a)", "[" CLAIM("local-8g") "]",
     "{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
     "\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\","
     "\"values\":[\"a\"]}]}]}}",
     NULL, "n0", true},
    {"a generic ephemeral volume's claim",
     "[{\"name\":\"scratch\",\"ephemeral\":{"
     "\"volumeClaimTemplate\":{\"spec\":{}}}}]",
     NULL, NULL, "n1", false},
};

static void fits_string(const struct fair_node_affinity *a, char *out, size_t n)
{
    out[0] = 0;
    for (size_t i = 0; i < 3; i++)
        if (fair_node_affinity_match(a, &nodes[i]))
            strncat(out, nodes[i].name, n - strlen(out) - 1);
}

static void test_table(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const struct vcase *vc = &cases[c];
        char pod[2048];
        snprintf(pod, sizeof pod,
                 "{\"metadata\":{\"name\":\"mypod\",\"namespace\":\"t\",\"uid\":\"u\"},"
                 "\"spec\":{\"volumes\":%s%s%s%s,\"containers\":[{\"name\":\"c\"}]}}",
                 vc->volumes, vc->affinity ? ",\"affinity\":{\"nodeAffinity\":" : "",
                 vc->affinity ? vc->affinity : "", vc->affinity ? "}" : "");
        json_t *j = load(pod);
        struct fair_kpod *k = NULL;
        assert_int_equal(fair_kpod_decode(j, &k, NULL), 0);
        json_decref(j);
        struct fair_ctl_volumes v;
        assert_int_equal(fair_ctl_volumes_init(&v, (const struct fair_kpvc *const *)pvcs, NPVC,
                                               (const struct fair_kpv *const *)pvs, NPV,
                                               (const struct fair_ksc *const *)scs, NSC),
                         0);
        struct fair_ctl_volume_verdict out;
        assert_int_equal(fair_ctl_volumes_pod(&v, k, &out), 0);
        char fits[32];
        fits_string(out.affinity, fits, sizeof fits);
        bool ok = vc->wait ? out.wait && strstr(out.message, vc->wait) != NULL
                           : !out.wait && !strcmp(fits, vc->fits) && out.select_node == vc->select;
        if (!ok)
            fail_msg("case \"%s\": wait=%d message \"%s\" fits \"%s\" select=%d", vc->name,
                     out.wait, out.message, fits, out.select_node);
        if (!strcmp(vc->name, "a preferred-only pod keeps its preference, gets the volume's "
                              "terms")) {
            assert_int_equal(out.affinity->npreferred, 1);
            assert_int_equal(fair_node_affinity_score(out.affinity, &nodes[2]), 5);
        }
        /* The claims the controller writes selected-node on. */
        const struct fair_kpvc *sel[4];
        size_t ns = fair_ctl_volumes_to_select(&v, k, sel, 4);
        /* Static claims ("static" cases) are prebound instead; a claim
         * that names its node already is not written again. */
        bool stat = !strncmp(vc->name, "static", 6);
        bool named = strstr(vc->name, "being provisioned") != NULL;
        bool pre = strstr(vc->name, "claimRef names the claim") != NULL;
        assert_int_equal(ns, vc->select && !stat && !named ? 1 : 0);
        /* On their way to a node: wffc-selected to n2, prebound's volume
         * on n1. */
        assert_int_equal(fair_ctl_volumes_selected(&v, k, &nodes[2], sel, 4), named ? 1 : 0);
        assert_int_equal(fair_ctl_volumes_selected(&v, k, &nodes[1], sel, 4), pre ? 1 : 0);
        assert_int_equal(fair_ctl_volumes_selected(&v, k, &nodes[0], sel, 4), 0);
        const char *want = named ? "wffc-selected" : pre ? "prebound" : NULL;
        assert_true(want ? out.selected_claim && !strcmp(out.selected_claim->meta.name, want)
                         : out.selected_claim == NULL);
        fair_ctl_volumes_release(&v);
        fair_kpod_free(k);
    }
}

static const char *prebind_one(struct fair_ctl_volumes *v, const char *claims, size_t node,
                               char *out, size_t n)
{
    char pod[1024];
    snprintf(pod, sizeof pod,
             "{\"metadata\":{\"name\":\"p\",\"namespace\":\"t\",\"uid\":\"u\"},"
             "\"spec\":{\"volumes\":[%s],\"containers\":[{\"name\":\"c\"}]}}",
             claims);
    json_t *j = load(pod);
    struct fair_kpod *k = NULL;
    assert_int_equal(fair_kpod_decode(j, &k, NULL), 0);
    json_decref(j);
    struct fair_ctl_prebind pb[4];
    int r = fair_ctl_volumes_prebind(v, k, &nodes[node], pb, 4);
    if (r < 0)
        snprintf(out, n, "none");
    else
        out[0] = 0;
    for (int i = 0; i < r; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s=%s", i ? " " : "",
                 pb[i].claim->meta.name, pb[i].pv->meta.name);
    fair_kpod_free(k);
    return out;
}

/* The volume chosen on the node: the smallest that matches, not one handed
 * out earlier in the cycle, two claims of a pod never the same one. */
static void test_prebind(void **state)
{
    (void)state;
    static const struct {
        const char *claims;
        size_t node;
        const char *want; /* "claim=pv ...", "" (no static claim) or "none" */
        bool fresh;       /* a new cycle (nothing handed out yet) */
    } rows[] = {
        {CLAIM("static-local"), 2, "static-local=lpv-n2-5", true},
        {CLAIM("local-8g"), 2, "local-8g=lpv-n2-20", true},
        {CLAIM("local-8g"), 0, "local-8g=lpv-n0-10", true},
        {CLAIM("local-8g"), 1, "none", true},
        {CLAIM("local-block"), 1, "local-block=lpv-n1-block", true},
        {CLAIM("wffc"), 1, "", true},
        {CLAIM("on-n1"), 1, "", true},
        /* a volume is prebound to it already: nothing more */
        {CLAIM("prebound"), 1, "", true},
        /* two claims, two volumes */
        {CLAIM("static-local") "," CLAIM("local-8g"), 2, "static-local=lpv-n2-5 local-8g=lpv-n2-20",
         true},
        /* both need the one 20Gi volume: all or nothing */
        {CLAIM("local-15g") "," CLAIM("local-rwx"), 2, "none", true},
        /* ... and nothing was kept for the failed pod */
        {CLAIM("local-rwx"), 2, "local-rwx=lpv-n2-20", false},
        /* the same cycle: the 20Gi volume is handed out, the 5Gi one left */
        {CLAIM("local-15g"), 2, "none", false},
        {CLAIM("static-local"), 2, "static-local=lpv-n2-5", false},
        {CLAIM("static-local"), 2, "none", false},
    };
    struct fair_ctl_volumes v;
    bool live = false;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        if (rows[i].fresh || !live) {
            if (live)
                fair_ctl_volumes_release(&v);
            assert_int_equal(fair_ctl_volumes_init(&v, (const struct fair_kpvc *const *)pvcs, NPVC,
                                                   (const struct fair_kpv *const *)pvs, NPV,
                                                   (const struct fair_ksc *const *)scs, NSC),
                             0);
            live = true;
        }
        char got[256];
        prebind_one(&v, rows[i].claims, rows[i].node, got, sizeof got);
        if (strcmp(got, rows[i].want))
            fail_msg("row %zu: got \"%s\", want \"%s\"", i, got, rows[i].want);
    }
    fair_ctl_volumes_release(&v);
}

/* Terms multiply: a pod of 8 ORed terms with a volume of 8 would make 64,
 * one more volume of 2 makes 128, over the limit: the pod waits. */
static void test_too_many_terms(void **state)
{
    (void)state;
    char terms[4096] = "";
    for (int i = 0; i < 9; i++) {
        size_t len = strlen(terms);
        snprintf(terms + len, sizeof terms - len,
                 "%s{\"matchExpressions\":[{\"key\":\"k%d\",\"operator\":\"Exists\"}]}",
                 i ? "," : "", i);
    }
    char pod[8192];
    snprintf(pod, sizeof pod,
             "{\"metadata\":{\"name\":\"p\",\"namespace\":\"t\",\"uid\":\"u\"},\"spec\":{"
             "\"volumes\":[" CLAIM("on-n0-or-n2") "," CLAIM(
                 "on-n1") "],\"affinity\":{"
                          "\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
                          "\"nodeSelectorTerms\":[%s]}}},\"containers\":[{\"name\":\"c\"}]}}",
             terms);
    json_t *j = load(pod);
    struct fair_kpod *k = NULL;
    assert_int_equal(fair_kpod_decode(j, &k, NULL), 0);
    json_decref(j);
    struct fair_ctl_volumes v;
    assert_int_equal(fair_ctl_volumes_init(&v, (const struct fair_kpvc *const *)pvcs, NPVC,
                                           (const struct fair_kpv *const *)pvs, NPV,
                                           (const struct fair_ksc *const *)scs, NSC),
                     0);
    struct fair_ctl_volume_verdict out;
    assert_int_equal(fair_ctl_volumes_pod(&v, k, &out), 0);
    /* 9 x 2 = 18 terms, then 18 x 1: fine. */
    assert_false(out.wait);
    fair_ctl_volumes_release(&v);
    fair_kpod_free(k);
    /* 9 terms x a volume of 2 terms, eight times over: 9 x 2^8 > 64. */
    char vols[2048] = "";
    for (int i = 0; i < 8; i++) {
        size_t len = strlen(vols);
        snprintf(vols + len, sizeof vols - len,
                 "%s{\"name\":\"v%d\",\"persistentVolumeClaim\":{\"claimName\":\"on-n0-or-n2\"}}",
                 i ? "," : "", i);
    }
    snprintf(pod, sizeof pod,
             "{\"metadata\":{\"name\":\"p\",\"namespace\":\"t\",\"uid\":\"u\"},\"spec\":{"
             "\"volumes\":[%s],\"affinity\":{\"nodeAffinity\":{"
             "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[%s]}}},"
             "\"containers\":[{\"name\":\"c\"}]}}",
             vols, terms);
    j = load(pod);
    assert_int_equal(fair_kpod_decode(j, &k, NULL), 0);
    json_decref(j);
    assert_int_equal(fair_ctl_volumes_init(&v, (const struct fair_kpvc *const *)pvcs, NPVC,
                                           (const struct fair_kpv *const *)pvs, NPV,
                                           (const struct fair_ksc *const *)scs, NSC),
                     0);
    assert_int_equal(fair_ctl_volumes_pod(&v, k, &out), 0);
    assert_true(out.wait);
    assert_non_null(strstr(out.message, "more than 64 node selector terms"));
    fair_ctl_volumes_release(&v);
    fair_kpod_free(k);
}

/* A PersistentVolume whose nodeAffinity has a bad shape: its pods wait
 * with the problem, never bound where it might not be reachable. */
static void test_bad_volume(void **state)
{
    (void)state;
    json_t *j = load("{\"metadata\":{\"name\":\"pv-bad\"},\"spec\":{\"nodeAffinity\":{"
                     "\"required\":{\"nodeSelectorTerms\":\"n1\"}}}}");
    struct fair_kpv *bad = NULL;
    assert_int_equal(fair_kpv_decode(j, &bad, NULL), 0);
    json_decref(j);
    assert_non_null(bad->problem);
    /* Named by the volume's own path, not by a pod's affinity path. */
    assert_non_null(strstr(bad->problem, "spec.nodeAffinity.required: want {nodeSelectorTerms"));
    assert_null(strstr(bad->problem, "spec.affinity"));
    j = load("{\"metadata\":{\"name\":\"c\",\"namespace\":\"t\"},\"spec\":{\"volumeName\":"
             "\"pv-bad\"}}");
    struct fair_kpvc *claim = NULL;
    assert_int_equal(fair_kpvc_decode(j, &claim, NULL), 0);
    json_decref(j);
    j = load("{\"metadata\":{\"name\":\"p\",\"namespace\":\"t\",\"uid\":\"u\"},\"spec\":{"
             "\"volumes\":[" CLAIM("c") "],\"containers\":[{\"name\":\"c\"}]}}");
    struct fair_kpod *k = NULL;
    assert_int_equal(fair_kpod_decode(j, &k, NULL), 0);
    json_decref(j);
    const struct fair_kpvc *cl[] = {claim};
    const struct fair_kpv *pl[] = {bad};
    struct fair_ctl_volumes v;
    assert_int_equal(fair_ctl_volumes_init(&v, cl, 1, pl, 1, NULL, 0), 0);
    struct fair_ctl_volume_verdict out;
    assert_int_equal(fair_ctl_volumes_pod(&v, k, &out), 0);
    assert_true(out.wait);
    assert_non_null(strstr(out.message, "pv-bad"));
    fair_ctl_volumes_release(&v);
    fair_kpod_free(k);
    fair_kpvc_free(claim);
    fair_kpv_free(bad);
}

static struct fair_kpv *pv_of(const char *s)
{
    json_t *j = load(s);
    struct fair_kpv *pv = NULL;
    assert_int_equal(fair_kpv_decode(j, &pv, NULL), 0);
    json_decref(j);
    return pv;
}

#define CLAIMREF_PV(name, extra, ref)                                                              \
    "{\"metadata\":{\"name\":\"" name "\"" extra "},\"spec\":{\"claimRef\":{" ref "}}}"

/* fair_ctl_volume_prebound(): the first volume, in input order, whose
 * claimRef names the claim, passing over one whose uid is another claim's
 * (the claim was deleted and made again), one being deleted, one of the
 * same name in another namespace, and one without claimRef. */
static void test_prebound_lookup(void **state)
{
    (void)state;
    json_t *j = load("{\"metadata\":{\"name\":\"data\",\"namespace\":\"t\",\"uid\":\"u2\"}}");
    struct fair_kpvc *claim = NULL, *other = NULL;
    assert_int_equal(fair_kpvc_decode(j, &claim, NULL), 0);
    json_decref(j);
    j = load("{\"metadata\":{\"name\":\"lone\",\"namespace\":\"t\",\"uid\":\"u3\"}}");
    assert_int_equal(fair_kpvc_decode(j, &other, NULL), 0);
    json_decref(j);
    struct fair_kpv *pl[] = {
        pv_of(CLAIMREF_PV("free", "", "")),
        pv_of(CLAIMREF_PV("elsewhere", "", "\"namespace\":\"u\",\"name\":\"data\"")),
        pv_of(CLAIMREF_PV("old", "", "\"namespace\":\"t\",\"name\":\"data\",\"uid\":\"u1\"")),
        pv_of(CLAIMREF_PV("going", ",\"deletionTimestamp\":\"2026-11-27T10:00:00Z\"",
                          "\"namespace\":\"t\",\"name\":\"data\"")),
        pv_of(CLAIMREF_PV("mine", "", "\"namespace\":\"t\",\"name\":\"data\",\"uid\":\"u2\"")),
        pv_of(CLAIMREF_PV("mine-too", "", "\"namespace\":\"t\",\"name\":\"data\"")),
    };
    size_t npl = sizeof pl / sizeof *pl;
    const struct fair_kpvc *cl[] = {claim, other};
    struct fair_ctl_volumes v;
    assert_int_equal(
        fair_ctl_volumes_init(&v, cl, 2, (const struct fair_kpv *const *)pl, npl, NULL, 0), 0);
    const struct fair_kpv *pv = fair_ctl_volume_prebound(&v, claim);
    assert_non_null(pv);
    assert_string_equal(pv->meta.name, "mine");
    assert_null(fair_ctl_volume_prebound(&v, other));
    assert_ptr_equal(fair_ctl_volume_claim(&v, "t", "data"), claim);
    assert_null(fair_ctl_volume_claim(&v, "u", "data"));
    assert_ptr_equal(fair_ctl_volume(&v, "old"), pl[2]);
    assert_null(fair_ctl_volume(&v, "nope"));
    fair_ctl_volumes_release(&v);
    /* Without "mine", the one prebound by name alone. */
    const struct fair_kpv *fewer[] = {pl[0], pl[1], pl[2], pl[3], pl[5]};
    assert_int_equal(fair_ctl_volumes_init(&v, cl, 2, fewer, 5, NULL, 0), 0);
    pv = fair_ctl_volume_prebound(&v, claim);
    assert_non_null(pv);
    assert_string_equal(pv->meta.name, "mine-too");
    fair_ctl_volumes_release(&v);
    /* No volumes at all. */
    assert_int_equal(fair_ctl_volumes_init(&v, cl, 2, NULL, 0, NULL, 0), 0);
    assert_null(fair_ctl_volume_prebound(&v, claim));
    fair_ctl_volumes_release(&v);
    for (size_t i = 0; i < npl; i++)
        fair_kpv_free(pl[i]);
    fair_kpvc_free(claim);
    fair_kpvc_free(other);
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The watch path parses objects through the types' filters: what the
 * decoders read must survive them. */
static void test_filters_keep_what_is_read(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPVC; i++) {
        json_t *j = load_filtered(pvcs_json[i], &fair_ktype_pvc);
        struct fair_kpvc *c = NULL;
        assert_int_equal(fair_kpvc_decode(j, &c, NULL), 0);
        json_decref(j);
        assert_true(same_str(c->key, pvcs[i]->key));
        assert_true(same_str(c->volume_name, pvcs[i]->volume_name));
        assert_true(same_str(c->storage_class, pvcs[i]->storage_class));
        assert_true(same_str(c->selected_node, pvcs[i]->selected_node));
        assert_int_equal(c->bound, pvcs[i]->bound);
        assert_int_equal(c->lost, pvcs[i]->lost);
        assert_int_equal(c->meta.deletion_ms, pvcs[i]->meta.deletion_ms);
        assert_true(same_str(c->meta.uid, pvcs[i]->meta.uid));
        assert_int_equal(c->request_bytes, pvcs[i]->request_bytes);
        assert_int_equal(c->access_modes, pvcs[i]->access_modes);
        assert_int_equal(c->block, pvcs[i]->block);
        assert_int_equal(c->nselector, pvcs[i]->nselector);
        assert_int_equal(!c->selector_exprs, !pvcs[i]->selector_exprs);
        if (c->selector_exprs)
            assert_int_equal(c->selector_exprs->terms[0].nreqs,
                             pvcs[i]->selector_exprs->terms[0].nreqs);
        assert_true(same_str(c->problem, pvcs[i]->problem));
        fair_kpvc_free(c);
    }
    for (size_t i = 0; i < NPV; i++) {
        json_t *j = load_filtered(pvs_json[i], &fair_ktype_pv);
        struct fair_kpv *v = NULL;
        assert_int_equal(fair_kpv_decode(j, &v, NULL), 0);
        json_decref(j);
        for (size_t n = 0; n < 3; n++)
            assert_int_equal(fair_node_affinity_match(v->node_affinity, &nodes[n]),
                             fair_node_affinity_match(pvs[i]->node_affinity, &nodes[n]));
        assert_true(same_str(v->storage_class, pvs[i]->storage_class));
        assert_true(same_str(v->claim_ns, pvs[i]->claim_ns));
        assert_true(same_str(v->claim_name, pvs[i]->claim_name));
        assert_true(same_str(v->claim_uid, pvs[i]->claim_uid));
        assert_int_equal(v->capacity_bytes, pvs[i]->capacity_bytes);
        assert_int_equal(v->access_modes, pvs[i]->access_modes);
        assert_int_equal(v->block, pvs[i]->block);
        assert_int_equal(v->available, pvs[i]->available);
        assert_int_equal(v->nlabels, pvs[i]->nlabels);
        assert_true(same_str(v->problem, pvs[i]->problem));
        fair_kpv_free(v);
    }
    for (size_t i = 0; i < NSC; i++) {
        json_t *j = load_filtered(scs_json[i], &fair_ktype_storageclass);
        struct fair_ksc *c = NULL;
        assert_int_equal(fair_ksc_decode(j, &c, NULL), 0);
        json_decref(j);
        assert_true(same_str(c->provisioner, scs[i]->provisioner));
        assert_int_equal(c->wait_for_first_consumer, scs[i]->wait_for_first_consumer);
        for (size_t n = 0; n < 3; n++)
            assert_int_equal(fair_node_affinity_match(c->allowed, &nodes[n]),
                             fair_node_affinity_match(scs[i]->allowed, &nodes[n]));
        fair_ksc_free(c);
    }
    const char *pod =
        "{\"metadata\":{\"name\":\"mypod\",\"namespace\":\"t\",\"uid\":\"u\"},"
        "\"spec\":{\"volumes\":[" CLAIM(
            "on-n1") ",{\"name\":\"scratch\","
                     "\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{}}}},{\"name\":\"e\","
                     "\"emptyDir\":{}}],\"containers\":[{\"name\":\"c\"}]}}";
    json_t *j = load_filtered(pod, &fair_ktype_pod);
    struct fair_kpod *k = NULL;
    assert_int_equal(fair_kpod_decode(j, &k, NULL), 0);
    json_decref(j);
    assert_int_equal(k->nclaims, 2);
    assert_string_equal(k->claims[0], "on-n1");
    assert_string_equal(k->claims[1], "mypod-scratch");
    fair_kpod_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_prebind),
        cmocka_unit_test(test_too_many_terms),
        cmocka_unit_test(test_bad_volume),
        cmocka_unit_test(test_prebound_lookup),
        cmocka_unit_test(test_filters_keep_what_is_read),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
