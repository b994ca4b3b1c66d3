/* End to end: the GPU env admission webhook on a real API server. A real
 * MutatingWebhookConfiguration points at the controller's webhook.address
 * by URL (https://127.0.0.1:PORT/mutate-v1-pod, so webhook.extraNames adds
 * 127.0.0.1 to the certificate), limited by its namespaceSelector to the
 * scenario's namespace, with failurePolicy Ignore.
 *
 *  - mutates: the controller writes the caBundle; the API server calls
 *    the webhook over TLS, verifying it against that bundle, and the
 *    fractional pod it creates carries the downward-API env and the mark;
 *    a whole-GPU pod is left alone; the fraction is bound without a
 *    GPUEnvNotInjected Event.
 *  - down: the configuration points at a port where nothing listens; the
 *    API server still creates the fractional pod (Ignore), without the
 *    env, and the controller binds it and tells it with a
 *    GPUEnvNotInjected Warning Event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e.h"

static int any_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static char mwc_path[256];

/* The MutatingWebhookConfiguration NAME calling 127.0.0.1:port for pods
 * of namespace ns only (PUT when it exists: its caBundle kept). */
static void put_mwc(const char *name, const char *ns, int port)
{
    snprintf(mwc_path, sizeof mwc_path,
             "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/%s", name);
    json_t *old = e2e_get(mwc_path);
    const char *ca =
        old ? e2e_str(json_array_get(json_object_get(old, "webhooks"), 0), "clientConfig.caBundle")
            : NULL;
    const char *rv = old ? e2e_str(old, "metadata.resourceVersion") : NULL;
    char body[2048];
    snprintf(
        body, sizeof body,
        "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"
        "\"MutatingWebhookConfiguration\",\"metadata\":{\"name\":\"%s\"%s%s%s},"
        "\"webhooks\":[{\"name\":\"gpu-env.fairshare.dev\",\"admissionReviewVersions\":[\"v1\"],"
        "\"sideEffects\":\"None\",\"failurePolicy\":\"Ignore\",\"timeoutSeconds\":5,"
        "\"clientConfig\":{\"url\":\"https://127.0.0.1:%d/mutate-v1-pod\"%s%s%s},"
        "\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"%s\"}},"
        "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
        "\"resources\":[\"pods\"],\"scope\":\"Namespaced\"}]}]}",
        name, rv ? ",\"resourceVersion\":\"" : "", rv ? rv : "", rv ? "\"" : "", port,
        ca ? ",\"caBundle\":\"" : "", ca ? ca : "", ca ? "\"" : "", ns);
    if (old) {
        assert_int_equal(e2e_req("PUT", mwc_path, body, NULL), 200);
        json_decref(old);
    } else {
        e2e_create("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "%s",
                   body);
        e2e_track(mwc_path);
    }
}

static bool has_ca(void)
{
    json_t *m = e2e_get(mwc_path);
    const char *ca =
        m ? e2e_str(json_array_get(json_object_get(m, "webhooks"), 0), "clientConfig.caBundle")
          : NULL;
    bool ok = ca && *ca;
    json_decref(m);
    return ok;
}

/* The env entry name of container 0 of pod (NULL when absent), borrowed. */
static const json_t *env_entry(const json_t *pod, const char *name)
{
    const json_t *c =
        json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(c, "env"), i, e)
    {
        const char *n = e2e_str(e, "name");
        if (n && strcmp(n, name) == 0)
            return e;
    }
    return NULL;
}

static const char *pod_fraction_body(const char *ns, const char *name, char *buf, size_t n)
{
    snprintf(buf, n,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\",\"annotations\":{\"fairshare.dev/gpu-fraction\":\"0.25\"}},"
             "\"spec\":{\"schedulerName\":\"%s\",\"terminationGracePeriodSeconds\":0,"
             "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{"
             "\"requests\":{\"cpu\":\"100m\"}}}]}}",
             name, ns, e2e_scheduler());
    return buf;
}

/* A dry-run create: whether the API server's answer carries the env (the
 * webhook was called and trusted). */
static bool dry_run_mutated(const char *ns)
{
    char body[2048], path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods?dryRun=All", ns);
    json_t *out = NULL;
    long code = e2e_req("POST", path, pod_fraction_body(ns, "dry", body, sizeof body), &out);
    bool ok = code == 201 && env_entry(out, "NVIDIA_VISIBLE_DEVICES");
    json_decref(out);
    return ok;
}

static json_t *get_pod(const char *ns, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    return e2e_get(path);
}

static bool pod_bound(const char *ns, const char *name)
{
    json_t *p = get_pod(ns, name);
    bool ok = p && e2e_str(p, "spec.nodeName");
    json_decref(p);
    return ok;
}

static int pod_events(const char *ns, const char *name, const char *reason)
{
    char path[512];
    snprintf(path, sizeof path,
             "/api/v1/namespaces/%s/events?fieldSelector=involvedObject.name%%3D%s", ns, name);
    json_t *l = e2e_get(path);
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(l, "items"), i, e)
    {
        const char *r = e2e_str(e, "reason");
        if (r && strcmp(r, reason) == 0)
            n++;
    }
    json_decref(l);
    return n;
}

static void test_webhook(void **state)
{
    (void)state;
    char ns[128], body[2048], path[256], extra[1024];
    e2e_scenario_begin("webhook", ns, sizeof ns);
    e2e_namespace(ns);
    e2e_project(ns, ns, "8", ns);
    e2e_queue(ns, ns, "8", 0);
    int port = any_port();
    assert_true(port > 0);
    put_mwc(ns, ns, port);
    snprintf(extra, sizeof extra,
             "webhook:\n  address: \"127.0.0.1:%d\"\n  namespace: %s\n"
             "  extraNames: \"127.0.0.1\"\n  configurationName: %s\n  certCheckInterval: 1s\n",
             port, ns, ns);
    struct e2e_ctl c = {0};
    e2e_ctl_start(&c, "webhook", extra);
    if (!E2E_WAIT(has_ca(), E2E_WAIT_MS)) {
        e2e_ctl_dump(&c, 40);
        fail_msg("the controller did not write the caBundle");
    }

    /* mutates: the API server picks the bundle up, then calls us over TLS. */
    if (!E2E_WAIT(dry_run_mutated(ns), E2E_WAIT_MS)) {
        e2e_ctl_dump(&c, 40);
        fail_msg("the API server never got the env from the webhook");
    }
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    e2e_create(path, "%s", pod_fraction_body(ns, "frac", body, sizeof body));
    e2e_pod(ns, "whole", NULL, "1", NULL, NULL);
    json_t *p = get_pod(ns, "frac");
    assert_non_null(p);
    const json_t *e = env_entry(p, "NVIDIA_VISIBLE_DEVICES");
    assert_non_null(e);
    assert_string_equal(e2e_str(e, "valueFrom.fieldRef.fieldPath"),
                        "metadata.annotations['fairshare.dev/gpu-devices']");
    assert_non_null(env_entry(p, "CUDA_DEVICE_MEMORY_LIMIT"));
    assert_non_null(env_entry(p, "CUDA_DEVICE_SM_LIMIT"));
    assert_null(env_entry(p, "CUDA_VISIBLE_DEVICES")); /* off by default */
    const json_t *ann = json_object_get(json_object_get(p, "metadata"), "annotations");
    assert_string_equal(json_string_value(json_object_get(ann, "fairshare.dev/gpu-env")),
                        "webhook");
    json_decref(p);
    p = get_pod(ns, "whole");
    assert_null(env_entry(p, "NVIDIA_VISIBLE_DEVICES"));
    json_decref(p);
    assert_true(E2E_WAIT(pod_bound(ns, "frac") && pod_bound(ns, "whole"), E2E_WAIT_MS));
    p = get_pod(ns, "frac");
    ann = json_object_get(json_object_get(p, "metadata"), "annotations");
    assert_non_null(json_string_value(json_object_get(ann, "fairshare.dev/gpu-devices")));
    json_decref(p);
    assert_true(E2E_WAIT(pod_events(ns, "frac", "Scheduled") >= 1, E2E_WAIT_MS));
    assert_int_equal(pod_events(ns, "frac", "GPUEnvNotInjected"), 0);
    double reviews = e2e_ctl_metric(&c, "fairshare_webhook_reviews_total{outcome=\"patched\"}");
    assert_true(reviews >= 2); /* the dry run and the pod */

    /* down: the configuration points where nothing listens. */
    int dead = any_port();
    assert_true(dead > 0 && dead != port);
    put_mwc(ns, ns, dead);
    /* Until the API server sees the new URL, a pod may still be mutated:
     * dry-run until one is not. */
    assert_true(E2E_WAIT(!dry_run_mutated(ns), E2E_WAIT_MS));
    e2e_create(path, "%s", pod_fraction_body(ns, "skipped", body, sizeof body));
    p = get_pod(ns, "skipped");
    assert_non_null(p);
    assert_null(env_entry(p, "NVIDIA_VISIBLE_DEVICES"));
    json_decref(p);
    assert_true(E2E_WAIT(pod_bound(ns, "skipped"), E2E_WAIT_MS));
    if (!E2E_WAIT(pod_events(ns, "skipped", "GPUEnvNotInjected") == 1, E2E_WAIT_MS)) {
        e2e_ctl_dump(&c, 40);
        fail_msg("no GPUEnvNotInjected Event on the pod the webhook did not see");
    }
    assert_true(e2e_ctl_metric(&c, "fairshare_gpu_env_not_injected_total") == 1);
    assert_int_equal(e2e_ctl_stop(&c), 0);
    e2e_scenario_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_webhook, e2e_scenario_teardown),
    };
    return cmocka_run_group_tests(tests, e2e_setup, e2e_teardown);
}
