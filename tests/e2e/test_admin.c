/* e2e, the admin's path on a real API server: the CRDs and manifests as
 * shipped are accepted (kubectl apply -f crds/, kubectl apply -k config/
 * as a server-side dry run), kubectl explain reads every field's
 * description, the printer columns show the status the controller writes,
 * and bad objects are refused by the server's validation or marked by the
 * controller (Invalid, Overcommitted, InvalidPod). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "e2e.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/yaml.h"

#define NEED_KUBECTL()                                                                             \
    do {                                                                                           \
        if (!e2e_have_kubectl()) {                                                                 \
            fprintf(stderr, "e2e: SKIPPED %s: no kubectl found (set KUBECTL)\n", __func__);        \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* Whitespace collapsed to single spaces, so that kubectl's line wrapping
 * does not matter (new string). */
static char *squash(const char *s)
{
    char *out = malloc(strlen(s) + 1);
    assert_non_null(out);
    size_t o = 0;
    bool space = false;
    for (; *s; s++) {
        if (isspace((unsigned char)*s)) {
            space = o > 0;
            continue;
        }
        if (space)
            out[o++] = ' ';
        space = false;
        out[o++] = *s;
    }
    out[o] = '\0';
    return out;
}

static json_t *load_crd(const char *file)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/crds/%s", FAIR_SOURCE_DIR, file);
    json_t *docs = NULL;
    struct fair_error err = {0};
    if (fair_yaml_load_file(p, NULL, &docs, &err))
        fail_msg("%s: %s", p, err.msg);
    json_t *crd = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return crd;
}

static json_t *crd_version(json_t *crd)
{
    return json_array_get(json_object_get(json_object_get(crd, "spec"), "versions"), 0);
}

/* ---- kubectl apply ---- */

static void test_crds_apply(void **state)
{
    (void)state;
    NEED_KUBECTL();
    struct fair_buf out;
    fair_buf_init(&out, 1 << 20);
    int rc = e2e_kubectl(&out, (const char *[]){"apply", "-f", "crds/", NULL});
    const char *o = fair_buf_str(&out);
    if (rc != 0)
        fail_msg("kubectl apply -f crds/ exited %d:\n%s", rc, o);
    static const char *const crds[] = {
        "customresourcedefinition.apiextensions.k8s.io/projects.fairshare.dev",
        "customresourcedefinition.apiextensions.k8s.io/queues.fairshare.dev"};
    for (int i = 0; i < 2; i++)
        if (!strstr(o, crds[i]))
            fail_msg("kubectl apply -f crds/ did not apply %s:\n%s", crds[i], o);
    /* Only the two CRDs: nothing else in crds/ reaches the server (a
     * Kustomization there would be refused: no such kind). Warnings (such
     * as a missing last-applied annotation) are not results. */
    int results = 0;
    for (const char *p = o; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 0 && strncmp(p, "Warning:", 8) != 0) {
            if (strncmp(p, "customresourcedefinition.apiextensions.k8s.io/", 46) != 0)
                fail_msg("kubectl apply -f crds/ printed a line that is not a CRD's:\n%s", o);
            results++;
        }
        p += len + (nl ? 1 : 0);
    }
    if (results != 2)
        fail_msg("kubectl apply -f crds/ applied %d objects, want 2:\n%s", results, o);
    fair_buf_release(&out);
}

static void test_config_server_dry_run(void **state)
{
    (void)state;
    NEED_KUBECTL();
    /* The namespace must exist for a dry run of the namespaced objects. */
    json_t *ns = e2e_get("/api/v1/namespaces/fairshare-system");
    bool created = ns == NULL;
    json_decref(ns);
    if (created) {
        e2e_create("/api/v1/namespaces", "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                                         "\"metadata\":{\"name\":\"fairshare-system\"}}");
        e2e_track("/api/v1/namespaces/fairshare-system");
    }
    struct fair_buf out;
    fair_buf_init(&out, 1 << 20);
    int rc =
        e2e_kubectl(&out, (const char *[]){"apply", "-k", "config/", "--dry-run=server", NULL});
    const char *o = fair_buf_str(&out);
    if (rc != 0)
        fail_msg("kubectl apply -k config/ --dry-run=server exited %d:\n%s", rc, o);
    static const char *const want[] = {
        "namespace/fairshare-system",
        "customresourcedefinition.apiextensions.k8s.io/projects.fairshare.dev",
        "customresourcedefinition.apiextensions.k8s.io/queues.fairshare.dev",
        "serviceaccount/fairshare-controller",
        "clusterrole.rbac.authorization.k8s.io/fairshare-controller",
        "clusterrolebinding.rbac.authorization.k8s.io/fairshare-controller",
        "configmap/fairshare-config-",
        "service/fairshare-controller",
        "persistentvolumeclaim/fairshare-ledger",
        "deployment.apps/fairshare-controller",
        "clusterrole.rbac.authorization.k8s.io/fairshare-finance",
        "clusterrole.rbac.authorization.k8s.io/fairshare-viewer",
        "networkpolicy.networking.k8s.io/fairshare-controller",
        "service/fairshare-webhook",
        "role.rbac.authorization.k8s.io/fairshare-webhook-cert",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/fairshare"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(o, want[i]))
            fail_msg("kubectl apply -k config/ did not accept %s:\n%s", want[i], o);
    if (strstr(o, "Error") || strstr(o, "error"))
        fail_msg("kubectl apply -k config/ reported an error:\n%s", o);

    /* The examples' Projects and Queues pass the server's validation. */
    rc = e2e_kubectl(&out,
                     (const char *[]){"apply", "-f", "config/examples/projects.yaml", "-f",
                                      "config/examples/queues.yaml", "--dry-run=server", NULL});
    o = fair_buf_str(&out);
    if (rc != 0 || !strstr(o, "project.fairshare.dev/") || !strstr(o, "queue.fairshare.dev/"))
        fail_msg("the examples' Projects and Queues were refused (exit %d):\n%s", rc, o);
    fair_buf_release(&out);
    e2e_scenario_end();
}

/* ---- kubectl explain ---- */

/* Every property under spec has its description in `kubectl explain
 * PLURAL.spec`, and every property of spec.guaranteed in
 * `kubectl explain PLURAL.spec.guaranteed`. */
static void check_explain(const char *file, const char *plural)
{
    json_t *crd = load_crd(file);
    json_t *spec =
        json_object_get(json_object_get(json_object_get(json_object_get(crd_version(crd), "schema"),
                                                        "openAPIV3Schema"),
                                        "properties"),
                        "spec");
    assert_non_null(spec);
    struct fair_buf out;
    fair_buf_init(&out, 1 << 20);
    static const char *const parts[] = {"", ".guaranteed"};
    for (int k = 0; k < 2; k++) {
        json_t *schema =
            k == 0 ? spec : json_object_get(json_object_get(spec, "properties"), "guaranteed");
        char arg[128];
        snprintf(arg, sizeof arg, "%s.spec%s", plural, parts[k]);
        int rc = e2e_kubectl(&out, (const char *[]){"explain", arg, NULL});
        if (rc != 0)
            fail_msg("kubectl explain %s exited %d:\n%s", arg, rc, fair_buf_str(&out));
        char *text = squash(fair_buf_str(&out));
        const char *key;
        json_t *prop;
        int checked = 0;
        json_object_foreach(json_object_get(schema, "properties"), key, prop)
        {
            const char *desc = json_string_value(json_object_get(prop, "description"));
            assert_non_null(desc);
            char *d = squash(desc);
            if (strlen(d) > 60)
                d[60] = '\0';
            if (!strstr(text, key) || !strstr(text, d))
                fail_msg("kubectl explain %s lacks %s (\"%s...\"):\n%s", arg, key, d,
                         fair_buf_str(&out));
            free(d);
            checked++;
        }
        assert_true(checked >= 3);
        free(text);
    }
    fair_buf_release(&out);
    json_decref(crd);
}

static void test_explain(void **state)
{
    (void)state;
    NEED_KUBECTL();
    check_explain("fairshare.dev_projects.yaml", "projects");
    check_explain("fairshare.dev_queues.yaml", "queues");
}

/* ---- printer columns ---- */

/* Splits a line into whitespace-separated fields (pointers into line,
 * which is modified). */
static int fields(char *line, char **f, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t", &save); t && n < max;
         t = strtok_r(NULL, " \t", &save))
        f[n++] = t;
    return n;
}

/* `kubectl get PLURAL NAME [-o wide]`: the header is the CRD's columns in
 * order (priority 0 only, unless wide), and the value under each header
 * equals want's entry for it (NULL entries are not compared). */
static void check_columns(const char *file, const char *plural, const char *name, bool wide,
                          const char *const *want_names, const char *const *want_values, int nwant)
{
    json_t *crd = load_crd(file);
    json_t *cols = json_object_get(crd_version(crd), "additionalPrinterColumns");
    char *expect[32];
    int ne = 0;
    expect[ne++] = strdup("NAME");
    size_t i;
    json_t *col;
    json_array_foreach(cols, i, col)
    {
        json_t *prio = json_object_get(col, "priority");
        if (!wide && json_integer_value(prio) > 0)
            continue;
        char *up = strdup(e2e_str(col, "name"));
        for (char *p = up; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        expect[ne++] = up;
    }
    struct fair_buf out;
    fair_buf_init(&out, 1 << 20);
    int rc = e2e_kubectl(&out, wide ? (const char *[]){"get", plural, name, "-o", "wide", NULL}
                                    : (const char *[]){"get", plural, name, NULL});
    if (rc != 0)
        fail_msg("kubectl get %s %s exited %d:\n%s", plural, name, rc, fair_buf_str(&out));
    char *text = strdup(fair_buf_str(&out));
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    *nl = '\0';
    char *row = nl + 1;
    char *rnl = strchr(row, '\n');
    if (rnl)
        *rnl = '\0';
    char *hf[32], *vf[32];
    int nh = fields(text, hf, 32), nv = fields(row, vf, 32);
    if (nh != ne)
        fail_msg("kubectl get %s: %d columns, the CRD has %d", plural, nh, ne);
    for (int k = 0; k < ne; k++)
        assert_string_equal(hf[k], expect[k]);
    /* Every value is one word here (no empty cell: all are set). */
    if (nv != nh)
        fail_msg("kubectl get %s %s: %d values under %d columns:\n%s", plural, name, nv, nh,
                 fair_buf_str(&out));
    for (int w = 0; w < nwant; w++) {
        int k = 0;
        while (k < nh && strcmp(hf[k], want_names[w]) != 0)
            k++;
        assert_true(k < nh);
        if (want_values[w] && strcmp(vf[k], want_values[w]) != 0)
            fail_msg("kubectl get %s %s: %s is %s, want %s:\n%s", plural, name, want_names[w],
                     vf[k], want_values[w], fair_buf_str(&out));
    }
    free(text);
    for (int k = 0; k < ne; k++)
        free(expect[k]);
    fair_buf_release(&out);
    json_decref(crd);
}

static bool queue_allocated_is(const char *q, const char *gpus)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/queues/%s", q);
    json_t *j = e2e_get(path);
    const char *a = e2e_str(j, "status.allocated.gpu");
    bool ok = a && !strcmp(a, gpus);
    json_decref(j);
    return ok;
}

static void test_printer_columns(void **state)
{
    (void)state;
    NEED_KUBECTL();
    char pre[128], q[160];
    e2e_scenario_begin("columns", pre, sizeof pre);
    snprintf(q, sizeof q, "%s-q", pre);
    e2e_namespace(pre);
    e2e_project(pre, pre, "8", q);
    e2e_create("/apis/fairshare.dev/v1alpha1/queues",
               "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\","
               "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"project\":\"%s\","
               "\"guaranteed\":{\"gpu\":4},\"limit\":{\"gpu\":\"6\"},\"overQuotaWeight\":3}}",
               q, pre);
    char path[256];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/queues/%s", q);
    e2e_track(path);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "columns", NULL);
    e2e_pods(pre, "w", 2, q, "1", NULL);
    if (!E2E_WAIT(queue_allocated_is(q, "2"), E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("queue %s never reported 2 GPUs allocated", q);
    }
    /* Status is written at most once a second per object: let the last
     * write (pending 0) land. */
    char name_row[160];
    snprintf(name_row, sizeof name_row, "%s", q);
    const char *names[] = {"NAME", "PROJECT", "GUARANTEED", "ALLOCATED", "PENDING"};
    const char *values[] = {name_row, pre, "4", "2", "0"};
    check_columns("fairshare.dev_queues.yaml", "queues", q, false, names, values, 5);
    const char *wnames[] = {"BORROWED", "LIMIT", "WEIGHT"};
    const char *wvalues[] = {"0", "6", "3"};
    check_columns("fairshare.dev_queues.yaml", "queues", q, true, wnames, wvalues, 3);
    const char *pnames[] = {"NAME", "TEAM", "GUARANTEED", "ALLOCATED"};
    const char *pvalues[] = {pre, pre, "8", "2"};
    check_columns("fairshare.dev_projects.yaml", "projects", pre, false, pnames, pvalues, 4);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

/* ---- bad input ---- */

/* POSTs body to path; the server must refuse it with 422 and a message
 * that names field. */
static void refused(const char *path, const char *field, const char *body)
{
    json_t *resp = NULL;
    long code = e2e_req("POST", path, body, &resp);
    const char *msg = e2e_str(resp, "message");
    if (code != 422 || !msg || !strstr(msg, field))
        fail_msg("POST %s %s: HTTP %ld (%s), want 422 naming %s", path, body, code,
                 msg ? msg : "no message", field);
    json_decref(resp);
}

/* Whether the Queue or Project (plural "queues", "projects") has the
 * condition type with status, and a message containing msg_part (NULL:
 * any). */
static bool has_condition(const char *plural, const char *name, const char *type,
                          const char *status, const char *msg_part)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/%s/%s", plural, name);
    json_t *j = e2e_get(path);
    bool ok = false;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(j, "status"), "conditions"), i, c)
    {
        if (!strcmp(e2e_str(c, "type") ?: "", type) &&
            !strcmp(e2e_str(c, "status") ?: "", status) &&
            (!msg_part || strstr(e2e_str(c, "message") ?: "", msg_part)))
            ok = true;
    }
    json_decref(j);
    return ok;
}

static bool pod_reason_is(const char *ns, const char *pod, const char *reason)
{
    char *r = e2e_pod_reason(ns, pod);
    bool ok = r && !strcmp(r, reason);
    free(r);
    return ok;
}

static void test_invalid_objects(void **state)
{
    (void)state;
    char pre[128];
    e2e_scenario_begin("invalid", pre, sizeof pre);
    const char *projects = "/apis/fairshare.dev/v1alpha1/projects";
    const char *queues = "/apis/fairshare.dev/v1alpha1/queues";
    char body[1024];
    /* The server's validation refuses these outright. */
    static const struct {
        const char *spec, *field;
    } bad_projects[] = {
        {"{\"guaranteed\":{\"gpu\":-1}}", "spec.guaranteed.gpu"},
        {"{\"guaranteed\":{\"gpu\":\"-1\"}}", "spec.guaranteed.gpu"},
        {"{\"guaranteed\":{\"gpu\":\"abc\"}}", "spec.guaranteed.gpu"},
        {"{\"limit\":{\"memory\":\"1.5.0Gi\"}}", "spec.limit.memory"},
        {"{\"overQuotaWeight\":0}", "spec.overQuotaWeight"},
        {"{\"overQuotaPriority\":5000}", "spec.overQuotaPriority"},
        {"{\"namespaces\":[\"Not_A_Namespace\"]}", "spec.namespaces"},
    };
    for (size_t i = 0; i < sizeof bad_projects / sizeof *bad_projects; i++) {
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\","
                 "\"metadata\":{\"name\":\"%s-bad%zu\"},\"spec\":%s}",
                 pre, i, bad_projects[i].spec);
        refused(projects, bad_projects[i].field, body);
    }
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\","
             "\"metadata\":{\"name\":\"%s-noproject\"},\"spec\":{\"guaranteed\":{\"gpu\":1}}}",
             pre);
    refused(queues, "spec.project", body);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\","
             "\"metadata\":{\"name\":\"%s-dur\"},\"spec\":{\"project\":\"x\","
             "\"reclaimMinRuntime\":\"ten minutes\"}}",
             pre);
    refused(queues, "spec.reclaimMinRuntime", body);

    /* What only the controller can judge, it marks. */
    char orphan[160], over[160], good[160];
    snprintf(orphan, sizeof orphan, "%s-orphan", pre);
    snprintf(over, sizeof over, "%s-over", pre);
    snprintf(good, sizeof good, "%s-good", pre);
    e2e_namespace(pre);
    e2e_project(pre, pre, "4", good);
    e2e_queue(orphan, "no-such-project", "1", 0);
    e2e_queue(over, pre, "8", 0);
    e2e_queue(good, pre, "2", 0);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "invalid", NULL);
    if (!E2E_WAIT(has_condition("queues", orphan, "Invalid", "True", "does not exist"),
                  E2E_WAIT_MS))
        fail_msg("queue %s (missing project) was not marked Invalid", orphan);
    if (!E2E_WAIT(has_condition("projects", pre, "Overcommitted", "True", "10"), E2E_WAIT_MS))
        fail_msg("project %s (its queues guarantee 10 of its 4 GPUs) was not marked "
                 "Overcommitted",
                 pre);
    if (!E2E_WAIT(has_condition("queues", good, "Ready", "True", NULL), E2E_WAIT_MS))
        fail_msg("queue %s was not Ready", good);

    /* Pods with bad fractions stay pending with a reason and an Event. */
    e2e_pod(pre, "frac-big", good, NULL, NULL, ",\"fairshare.dev/gpu-fraction\":\"1.7\"");
    e2e_pod(pre, "frac-abc", good, NULL, NULL, ",\"fairshare.dev/gpu-fraction\":\"abc\"");
    e2e_pod(pre, "no-queue", "no-such-queue", "1", NULL, NULL);
    if (!E2E_WAIT(pod_reason_is(pre, "frac-big", "InvalidPod") &&
                      pod_reason_is(pre, "frac-abc", "InvalidPod") &&
                      pod_reason_is(pre, "no-queue", "UnknownQueue"),
                  E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("the bad pods were not told why they wait");
    }
    if (!E2E_WAIT(e2e_events(pre, "FailedScheduling") >= 3, E2E_WAIT_MS))
        fail_msg("no FailedScheduling Events for the bad pods");
    struct e2e_counts c = e2e_count(pre, NULL);
    assert_int_equal(c.bound, 0);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_crds_apply, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_config_server_dry_run, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_explain, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_printer_columns, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_invalid_objects, e2e_scenario_teardown),
    };
    /* The CRDs are what this program installs: no setup does it first. */
    return cmocka_run_group_tests_name("e2e/admin", tests, e2e_setup_no_crds, e2e_teardown);
}
