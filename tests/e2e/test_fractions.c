/* Fractional GPUs on a real API server (docs/fractions.md): the
 * controller's reservation pod passes the real admission chain (it is
 * created bound, asks for nvidia.com/gpu: 1, runs fairshare-reserve); the
 * test plays the device plugin and the container runtime by running
 * fairshare-reserve itself with the env the runtime would set
 * (NVIDIA_VISIBLE_DEVICES) and the downward API's POD_NAME and
 * POD_NAMESPACE; the quarters are bound with that device; the reservation
 * is deleted after its last fraction and fairshare-reserve ends cleanly on
 * SIGTERM, as the kubelet would stop it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

static char resv_ns[160];

static const char *ann(const json_t *p, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(p, "metadata"), "annotations"), key));
}

/* The reservation pod (new reference) when exactly one exists. */
static json_t *one_reservation(void)
{
    char path[256];
    snprintf(path, sizeof path,
             "/api/v1/namespaces/%s/pods?labelSelector=fairshare.dev%%2Freservation%%3Dtrue",
             resv_ns);
    json_t *l = e2e_get(path);
    json_t *items = json_object_get(l, "items");
    json_t *p = json_array_size(items) == 1 ? json_incref(json_array_get(items, 0)) : NULL;
    json_decref(l);
    return p;
}

static int count_reservations(void)
{
    return e2e_count(resv_ns, "fairshare.dev/reservation=true").total;
}

static pid_t run_reserve(const char *pod, const char *dev)
{
    char bin[512], log[700];
    snprintf(bin, sizeof bin, "%s/fairshare-reserve", FAIR_BIN_DIR);
    snprintf(log, sizeof log, "%s/reserve-%s.log", e2e_dir(), pod);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        setenv("NVIDIA_VISIBLE_DEVICES", dev, 1);
        setenv("POD_NAME", pod, 1);
        setenv("POD_NAMESPACE", resv_ns, 1);
        execl(bin, bin, (char *)NULL); /* $KUBECONFIG, as the suite's */
        _exit(127);
    }
    return pid;
}

static bool quarters_have(const char *ns, const char *dev)
{
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/q-%d", ns, i);
        json_t *p = e2e_get(path);
        const char *d = p ? ann(p, "fairshare.dev/gpu-devices") : NULL;
        bool ok = p && e2e_str(p, "spec.nodeName") && d && !strcmp(d, dev);
        json_decref(p);
        if (!ok)
            return false;
    }
    return true;
}

static void test_quarters_on_a_reservation(void **state)
{
    (void)state;
    char pre[128], ns[160];
    e2e_scenario_begin("frac", pre, sizeof pre);
    snprintf(ns, sizeof ns, "%s-a", pre);
    snprintf(resv_ns, sizeof resv_ns, "%s-resv", pre);
    e2e_namespace(ns);
    e2e_namespace(resv_ns);
    e2e_project(ns, ns, "2", ns);
    e2e_queue(ns, ns, "2", 0);
    char extra[512];
    snprintf(extra, sizeof extra,
             "fractions:\n  reservations: true\n  reservationNamespace: %s\n"
             "  reservationServiceAccount: \"\"\n",
             resv_ns);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "frac", extra);
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "q-%d", i);
        e2e_pod(ns, name, ns, NULL, NULL, ",\"fairshare.dev/gpu-fraction\":\"0.25\"");
    }
    json_t *r = NULL;
    if (!E2E_WAIT((json_decref(r), (r = one_reservation()) != NULL), E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 200);
        e2e_dump_pods(resv_ns);
        fail_msg("no reservation pod was created");
    }
    /* Created bound, asking the device plugin for one GPU. */
    const char *node = e2e_str(r, "spec.nodeName");
    assert_non_null(node);
    json_t *c0 = json_array_get(json_object_get(json_object_get(r, "spec"), "containers"), 0);
    const char *want = json_string_value(json_object_get(
        json_object_get(json_object_get(c0, "resources"), "limits"), "nvidia.com/gpu"));
    assert_non_null(want);
    assert_string_equal(want, "1");
    /* Not bound before the reservation reports its device. */
    assert_int_equal(e2e_count(ns, NULL).bound, 0);
    char pod[256], dev[128];
    snprintf(pod, sizeof pod, "%s", e2e_str(r, "metadata.name"));
    snprintf(dev, sizeof dev, "GPU-%s-0000-4000-8000-000000000003", e2e_runid());
    json_decref(r);
    pid_t pid = run_reserve(pod, dev);
    if (!E2E_WAIT(quarters_have(ns, dev), E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 200);
        e2e_dump_pods(ns);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("the quarters were not bound with the reserved device");
    }
    assert_int_equal(count_reservations(), 1);
    /* The last fraction ends: the reservation goes. */
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/q-%d", ns, i);
        long st = e2e_req("DELETE", path, "{\"gracePeriodSeconds\":0}", NULL);
        assert_true(st == 200 || st == 202);
    }
    bool gone = E2E_WAIT(count_reservations() == 0 ||
                             e2e_count(resv_ns, "fairshare.dev/reservation=true").terminating == 1,
                         E2E_WAIT_MS);
    /* The kubelet would stop the container now. */
    int st = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    if (!gone) {
        e2e_ctl_dump(&ctl, 200);
        fail_msg("the reservation outlived its last fraction");
    }
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    if (!E2E_WAIT(count_reservations() == 0, E2E_WAIT_MS))
        fail_msg("the reservation pod was not removed");
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

/* The reservation pods of the scenario (new reference: a list of pods). */
static json_t *reservations(void)
{
    char path[256];
    snprintf(path, sizeof path,
             "/api/v1/namespaces/%s/pods?labelSelector=fairshare.dev%%2Freservation%%3Dtrue",
             resv_ns);
    json_t *l = e2e_get(path);
    json_t *items = json_incref(json_object_get(l, "items"));
    json_decref(l);
    return items;
}

/* The device of a bound fractional pod, "" if none yet (static buffer). */
static const char *pod_device(const char *ns, const char *name)
{
    static char out[2][160];
    static int k;
    char path[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    json_t *p = e2e_get(path);
    const char *d = p && e2e_str(p, "spec.nodeName") ? ann(p, "fairshare.dev/gpu-devices") : NULL;
    k ^= 1;
    snprintf(out[k], sizeof out[k], "%s", d ? d : "");
    json_decref(p);
    return out[k];
}

/* Plays the device plugin for every reservation pod not yet started:
 * fairshare-reserve with a distinct device each. */
static int start_reserves(pid_t *pids, char (*names)[256], int n, int max)
{
    json_t *items = reservations();
    size_t i;
    json_t *r;
    json_array_foreach(items, i, r)
    {
        const char *name = e2e_str(r, "metadata.name");
        bool seen = false;
        for (int k = 0; k < n && name; k++)
            seen = seen || !strcmp(names[k], name);
        if (!name || seen || n >= max)
            continue;
        char dev[128];
        snprintf(dev, sizeof dev, "GPU-%s-0000-4000-8000-%012d", e2e_runid(), 100 + n);
        snprintf(names[n], sizeof names[n], "%s", name);
        pids[n++] = run_reserve(name, dev);
    }
    json_decref(items);
    return n;
}

/* Tenancy (docs/fractions.md, "Tenancy"): a quarter of each of two
 * projects gets a device of its own (two reservations, two devices) unless
 * both projects set spec.fractions.shareAcrossProjects, when they share
 * one reservation's device. The real API server accepts the new field. */
static void tenancy_case(bool share)
{
    char pre[128], ns[2][160];
    e2e_scenario_begin(share ? "tshare" : "tapart", pre, sizeof pre);
    snprintf(resv_ns, sizeof resv_ns, "%s-resv", pre);
    e2e_namespace(resv_ns);
    for (int i = 0; i < 2; i++) {
        snprintf(ns[i], sizeof ns[i], "%s-%c", pre, 'a' + i);
        e2e_namespace(ns[i]);
        e2e_create("/apis/fairshare.dev/v1alpha1/projects",
                   "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\","
                   "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"],"
                   "\"guaranteed\":{\"gpu\":\"1\"},\"fractions\":{\"shareAcrossProjects\":%s}}}",
                   ns[i], ns[i], share ? "true" : "false");
        char path[512];
        snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/projects/%s", ns[i]);
        e2e_track(path);
        json_t *pj = e2e_get(path);
        assert_non_null(pj);
        /* Kept by the real API server (not pruned). */
        assert_true(json_is_boolean(json_object_get(
            json_object_get(json_object_get(pj, "spec"), "fractions"), "shareAcrossProjects")));
        json_decref(pj);
        e2e_queue(ns[i], ns[i], "1", 0);
    }
    char extra[512];
    snprintf(extra, sizeof extra,
             "fractions:\n  reservations: true\n  reservationNamespace: %s\n"
             "  reservationServiceAccount: \"\"\n",
             resv_ns);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, share ? "tshare" : "tapart", extra);
    /* One quarter first, so that the second has a device to join or not. */
    e2e_pod(ns[0], "t-0", ns[0], NULL, NULL, ",\"fairshare.dev/gpu-fraction\":\"0.25\"");
    pid_t pids[4];
    char names[4][256];
    int n = 0;
    if (!E2E_WAIT((n = start_reserves(pids, names, n, 4), pod_device(ns[0], "t-0")[0] != 0),
                  E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 200);
        e2e_dump_pods(resv_ns);
        fail_msg("the first quarter was not bound");
    }
    e2e_pod(ns[1], "t-1", ns[1], NULL, NULL, ",\"fairshare.dev/gpu-fraction\":\"0.25\"");
    if (!E2E_WAIT((n = start_reserves(pids, names, n, 4), pod_device(ns[1], "t-1")[0] != 0),
                  E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 200);
        e2e_dump_pods(resv_ns);
        fail_msg("the second quarter was not bound");
    }
    char d0[160];
    snprintf(d0, sizeof d0, "%s", pod_device(ns[0], "t-0"));
    const char *d1 = pod_device(ns[1], "t-1");
    if (share)
        assert_string_equal(d0, d1);
    else
        assert_string_not_equal(d0, d1);
    assert_int_equal(count_reservations(), share ? 1 : 2);
    assert_int_equal(n, share ? 1 : 2);
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/t-%d", ns[i], i);
        long st = e2e_req("DELETE", path, "{\"gracePeriodSeconds\":0}", NULL);
        assert_true(st == 200 || st == 202);
    }
    bool gone = E2E_WAIT(count_reservations() ==
                             e2e_count(resv_ns, "fairshare.dev/reservation=true").terminating,
                         E2E_WAIT_MS);
    for (int i = 0; i < n; i++) { /* the kubelet would stop them now */
        kill(pids[i], SIGTERM);
        waitpid(pids[i], NULL, 0);
    }
    if (!gone) {
        e2e_ctl_dump(&ctl, 200);
        fail_msg("a reservation outlived its last fraction");
    }
    if (!E2E_WAIT(count_reservations() == 0, E2E_WAIT_MS))
        fail_msg("a reservation pod was not removed");
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

static void test_tenancy_apart(void **state)
{
    (void)state;
    tenancy_case(false);
}

static void test_tenancy_shared(void **state)
{
    (void)state;
    tenancy_case(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_quarters_on_a_reservation, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_tenancy_apart, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_tenancy_shared, e2e_scenario_teardown),
    };
    return cmocka_run_group_tests_name("e2e/fractions", tests, e2e_setup, e2e_teardown);
}
