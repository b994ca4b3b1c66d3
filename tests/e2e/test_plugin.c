/* The kubectl plugin and the install paths against the real API server:
 * the Helm chart's rendered output passes a server-side dry run, the
 * short names fsp/fsq and the group-qualified names answer in kubectl,
 * and `fairsharectl why` (kubectl fairshare why) explains a bound and a
 * waiting pod from what the real server and a running controller say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "e2e.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NEED_KUBECTL()                                                                             \
    do {                                                                                           \
        if (!e2e_have_kubectl()) {                                                                 \
            fprintf(stderr, "e2e: SKIPPED %s: no kubectl found (set KUBECTL)\n", __func__);        \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* Runs argv (argv[0] a path) in the source folder with $KUBECONFIG; stdout
 * (and stderr when err_too) into out; stdin from /dev/null. Returns the
 * exit status (-1: no exit). */
static int run(struct fair_buf *out, bool err_too, const char *const *argv)
{
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/run.XXXXXX", e2e_dir());
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(fd, 1);
        dup2(err_too ? fd : null, 2);
        if (chdir(FAIR_SOURCE_DIR) != 0)
            _exit(126);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    fair_buf_reset(out);
    lseek(fd, 0, SEEK_SET);
    char chunk[4096];
    ssize_t r;
    while ((r = read(fd, chunk, sizeof chunk)) > 0)
        assert_int_equal(fair_buf_append(out, chunk, (size_t)r), 0);
    close(fd);
    unlink(tmpl);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- the Helm chart ---- */

/* Renders the chart into namespace ns with only --namespace (the config's
 * namespace keys are left empty: the chart fills in ns) and applies the
 * output with a server-side dry run; every object must be accepted. */
static void chart_dry_run(const char *ns)
{
    char nsarg[160], file[512], want_ns[3][200];
    snprintf(nsarg, sizeof nsarg, "--namespace=%s", ns);
    snprintf(file, sizeof file, "%s/chart-%s.yaml", e2e_dir(), ns);
    struct fair_buf out;
    fair_buf_init(&out, 4 << 20);
    int rc = run(&out, false,
                 (const char *[]){"/usr/bin/env", "python3", "scripts/render-chart.py",
                                  "charts/fairshare", nsarg, "--name=fairshare", "--include-crds",
                                  "--set", "replicas=3", NULL});
    if (rc == 127 || rc == 126)
        skip();
    if (rc != 0)
        fail_msg("scripts/render-chart.py exited %d", rc);
    /* The lease, the reservation pods and the webhook's Secret: ns. */
    snprintf(want_ns[0], sizeof want_ns[0], "\n      leaseNamespace: %s\n", ns);
    snprintf(want_ns[1], sizeof want_ns[1], "\n      reservationNamespace: %s\n", ns);
    snprintf(want_ns[2], sizeof want_ns[2], "\n      namespace: %s\n", ns);
    for (size_t i = 0; i < 3; i++)
        if (!strstr(fair_buf_str(&out), want_ns[i]))
            fail_msg("rendered with %s, the config lacks %s", nsarg, want_ns[i]);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs(fair_buf_str(&out), f);
    fclose(f);
    rc = e2e_kubectl(&out, (const char *[]){"apply", "-f", file, "--dry-run=server", NULL});
    const char *o = fair_buf_str(&out);
    if (rc != 0)
        fail_msg("kubectl apply -f (the chart rendered for %s) --dry-run=server exited %d:\n%s", ns,
                 rc, o);
    static const char *const want[] = {
        "customresourcedefinition.apiextensions.k8s.io/projects.fairshare.dev",
        "customresourcedefinition.apiextensions.k8s.io/queues.fairshare.dev",
        "serviceaccount/fairshare-controller",
        "clusterrole.rbac.authorization.k8s.io/fairshare-controller",
        "clusterrolebinding.rbac.authorization.k8s.io/fairshare-controller",
        "role.rbac.authorization.k8s.io/fairshare-leader-election",
        "rolebinding.rbac.authorization.k8s.io/fairshare-leader-election",
        "clusterrole.rbac.authorization.k8s.io/fairshare-finance",
        "clusterrole.rbac.authorization.k8s.io/fairshare-viewer",
        "configmap/fairshare-config",
        "persistentvolumeclaim/fairshare-ledger",
        "deployment.apps/fairshare-controller",
        "service/fairshare-controller",
        "networkpolicy.networking.k8s.io/fairshare-controller",
        "serviceaccount/fairshare-reserve",
        "role.rbac.authorization.k8s.io/fairshare-reserve",
        "role.rbac.authorization.k8s.io/fairshare-webhook-cert",
        "service/fairshare-webhook",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/fairshare"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(o, want[i]))
            fail_msg("the server did not accept %s (namespace %s):\n%s", want[i], ns, o);
    if (strstr(o, "rror"))
        fail_msg("kubectl reported an error (namespace %s):\n%s", ns, o);
    unlink(file);
    fair_buf_release(&out);
}

static void test_chart_server_dry_run(void **state)
{
    (void)state;
    NEED_KUBECTL();
    char ns[128], ns2[160];
    e2e_scenario_begin("chart", ns, sizeof ns);
    /* Two release namespaces, neither fairshare-system, each with -n
     * alone; every optional object on except the ServiceMonitor, whose CRD
     * (prometheus-operator's) the plane does not have. */
    snprintf(ns2, sizeof ns2, "%s-b", ns);
    e2e_namespace(ns);
    e2e_namespace(ns2);
    chart_dry_run(ns);
    chart_dry_run(ns2);
    e2e_scenario_end();
}

/* ---- names ---- */

static void test_short_names(void **state)
{
    (void)state;
    NEED_KUBECTL();
    char p[128], ns[160], q[160];
    e2e_scenario_begin("names", p, sizeof p);
    snprintf(ns, sizeof ns, "%s-ns", p);
    snprintf(q, sizeof q, "%s-q", p);
    e2e_namespace(ns);
    e2e_project(p, ns, "2", q);
    e2e_queue(q, p, "1", 0);
    struct fair_buf out;
    fair_buf_init(&out, 1 << 20);
    /* Each way of naming the two kinds lists the objects just made. */
    static const struct {
        const char *res;
        bool project;
    } names[] = {{"fsp", true},
                 {"fsq", false},
                 {"projects.fairshare.dev", true},
                 {"queues.fairshare.dev", false},
                 {"queues.v1alpha1.fairshare.dev", false},
                 {"project.fairshare.dev", true}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *obj = names[i].project ? p : q;
        int rc = e2e_kubectl(&out, (const char *[]){"get", names[i].res, obj, "-o", "name", NULL});
        char want[256];
        snprintf(want, sizeof want, "%s.fairshare.dev/%s", names[i].project ? "project" : "queue",
                 obj);
        if (rc != 0 || !strstr(fair_buf_str(&out), want))
            fail_msg("kubectl get %s %s: exit %d, want %s:\n%s", names[i].res, obj, rc, want,
                     fair_buf_str(&out));
    }
    /* Both at once by short name, as docs/api.md shows. */
    int rc = e2e_kubectl(&out, (const char *[]){"get", "fsp,fsq", "-o", "name", NULL});
    if (rc != 0 || !strstr(fair_buf_str(&out), p) || !strstr(fair_buf_str(&out), q))
        fail_msg("kubectl get fsp,fsq: exit %d:\n%s", rc, fair_buf_str(&out));
    /* The discovery the names come from: the short names are the CRDs'. */
    rc = e2e_kubectl(
        &out, (const char *[]){"api-resources", "--api-group=fairshare.dev", "--no-headers", NULL});
    const char *o = fair_buf_str(&out);
    if (rc != 0 || !strstr(o, "fsp") || !strstr(o, "fsq"))
        fail_msg("kubectl api-resources shows no fsp/fsq:\n%s", o);
    fair_buf_release(&out);
    e2e_scenario_end();
}

/* ---- fairsharectl why ---- */

static bool bound(const char *ns, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    json_t *pod = e2e_get(path);
    bool b = e2e_str(pod, "spec.nodeName") != NULL;
    json_decref(pod);
    return b;
}

static void test_why(void **state)
{
    (void)state;
    char p[128], ns[160], q[160];
    e2e_scenario_begin("why", p, sizeof p);
    snprintf(ns, sizeof ns, "%s-ns", p);
    snprintf(q, sizeof q, "%s-q", p);
    e2e_namespace(ns);
    e2e_project(p, ns, "2", q);
    e2e_queue(q, p, "2", 0);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "why", NULL);
    e2e_pod(ns, "runs", q, "1", NULL, NULL);
    e2e_pod(ns, "lost", "no-such-queue", "1", NULL, NULL);
    if (!E2E_WAIT(bound(ns, "runs"), E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 30);
        fail_msg("pod runs was not bound");
    }
    char *r = NULL;
    if (!E2E_WAIT((free(r), (r = e2e_pod_reason(ns, "lost")) && strcmp(r, "UnknownQueue") == 0),
                  E2E_WAIT_MS))
        fail_msg("pod lost: reason %s, want UnknownQueue", r ? r : "(none)");
    free(r);
    const char *kc = getenv("KUBECONFIG");
    assert_non_null(kc);
    char kcarg[1024];
    snprintf(kcarg, sizeof kcarg, "--kubeconfig=%s", kc);
    struct fair_buf out;
    fair_buf_init(&out, 1 << 20);
    const char *ctl_bin = FAIR_BIN_DIR "/fairsharectl";

    /* The waiting pod: its condition's reason, and that its queue does
     * not exist. */
    int rc = run(&out, true, (const char *[]){ctl_bin, "why", "lost", "-n", ns, kcarg, NULL});
    const char *o = fair_buf_str(&out);
    if (rc != 0 || !strstr(o, "UnknownQueue") || !strstr(o, "no-such-queue") ||
        !strstr(o, "does not exist"))
        fail_msg("fairsharectl why lost: exit %d:\n%s", rc, o);

    /* The bound pod, as JSON: its node and its queue's figures. */
    rc =
        run(&out, false,
            (const char *[]){ctl_bin, "why", "runs", "--namespace", ns, kcarg, "-o", "json", NULL});
    json_error_t je;
    json_t *doc = json_loads(fair_buf_str(&out), 0, &je);
    if (rc != 0 || !doc)
        fail_msg("fairsharectl why runs -o json: exit %d, not JSON (%s):\n%s", rc, je.text,
                 fair_buf_str(&out));
    char node[256];
    snprintf(node, sizeof node, "%s", e2e_str(doc, "node") ? e2e_str(doc, "node") : "");
    if (strcmp(node, e2e_node(0)) != 0 && strcmp(node, e2e_node(1)) != 0)
        fail_msg("why -o json: node \"%s\", want one of the GPU nodes", node);
    if (!e2e_str(doc, "queue.name") || strcmp(e2e_str(doc, "queue.name"), q) != 0 ||
        !e2e_str(doc, "queue.project") || strcmp(e2e_str(doc, "queue.project"), p) != 0)
        fail_msg("why -o json: not queue %s of project %s:\n%s", q, p, fair_buf_str(&out));
    json_decref(doc);

    /* top: the bound pod's GPU on its node and in its queue, read with the
     * real server's field selectors. */
    rc = run(&out, false, (const char *[]){ctl_bin, "top", "-n", ns, kcarg, "-o", "json", NULL});
    doc = json_loads(fair_buf_str(&out), 0, &je);
    if (rc != 0 || !doc)
        fail_msg("fairsharectl top -o json: exit %d:\n%s", rc, fair_buf_str(&out));
    bool node_seen = false, queue_seen = false;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, "nodes"), i, e)
    {
        if (e2e_str(e, "name") && e2e_str(e, "used") && strcmp(e2e_str(e, "name"), node) == 0 &&
            strcmp(e2e_str(e, "used"), "1") == 0)
            node_seen = true;
    }
    json_array_foreach(json_object_get(doc, "queues"), i, e)
    {
        if (e2e_str(e, "name") && e2e_str(e, "used") && strcmp(e2e_str(e, "name"), q) == 0 &&
            strcmp(e2e_str(e, "used"), "1") == 0 &&
            json_integer_value(json_object_get(e, "pods")) == 1)
            queue_seen = true;
    }
    if (!node_seen || !queue_seen)
        fail_msg("top -n %s: the bound pod's GPU is not on node %s and queue %s:\n%s", ns, node, q,
                 fair_buf_str(&out));
    json_decref(doc);

    /* kubectl's conventions: --context of another name is an error that
     * names it; -A does not apply to one pod; an unknown pod exits 1. */
    rc = run(&out, true,
             (const char *[]){ctl_bin, "why", "runs", "-n", ns, kcarg, "--context", "nope", NULL});
    if (rc == 0 || !strstr(fair_buf_str(&out), "nope"))
        fail_msg("why --context nope: exit %d:\n%s", rc, fair_buf_str(&out));
    rc = run(&out, true, (const char *[]){ctl_bin, "why", "runs", "-A", kcarg, NULL});
    if (rc != 2)
        fail_msg("why -A: exit %d, want 2:\n%s", rc, fair_buf_str(&out));
    rc = run(&out, true, (const char *[]){ctl_bin, "why", "ghost", "-n", ns, kcarg, NULL});
    if (rc != 1 || !strstr(fair_buf_str(&out), "not found"))
        fail_msg("why ghost: exit %d:\n%s", rc, fair_buf_str(&out));
    fair_buf_release(&out);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_chart_server_dry_run, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_short_names, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_why, e2e_scenario_teardown),
    };
    return cmocka_run_group_tests_name("e2e/plugin", tests, e2e_setup, e2e_teardown);
}
