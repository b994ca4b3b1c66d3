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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_quarters_on_a_reservation, e2e_scenario_teardown),
    };
    return cmocka_run_group_tests_name("e2e/fractions", tests, e2e_setup, e2e_teardown);
}
