/* Integration tests of the fake API server's object lifecycle: finalizers,
 * delete preconditions, namespace deletion, graceful deletion across a
 * restart, watch timeouts and limits, CRDs and discovery. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "helper_fakekube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct fair_fake fake;

static int setup(void **state)
{
    (void)state;
    struct fair_fake_opts o = {
        .nodes = 1, .grace_seconds = 1, .max_watchers = 3, .bookmark_ms = -1};
    if (fair_fake_start(&fake, &o) != 0)
        return -1;
    return fair_fake_create_namespace(&fake, "life");
}

static int teardown(void **state)
{
    (void)state;
    int rc = fair_fake_stop(&fake);
    fair_fake_release(&fake);
    return rc;
}

static long jint(const json_t *j, const char *a, const char *b)
{
    return (long)json_integer_value(json_object_get(json_object_get(j, a), b));
}

static void make_pod(const char *name, const char *extra_meta)
{
    char body[1024];
    long code = 0;
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"%s\"%s},\"spec\":{\"nodeName\":\"node-0000\","
             "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
             name, extra_meta ? extra_meta : "");
    json_t *r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/life/pods", body, &code);
    assert_int_equal(code, 201);
    json_decref(r);
}

static long get_code(const char *path)
{
    long code = 0;
    json_t *r = fair_fake_request_json(&fake, "GET", path, NULL, &code);
    json_decref(r);
    return code;
}

static void test_finalizers_and_preconditions(void **state)
{
    (void)state;
    long code = 0;
    make_pod("fin", ",\"finalizers\":[\"fairshare.dev/ledger\"]");
    json_t *r = fair_fake_request_json(
        &fake, "DELETE", "/api/v1/namespaces/life/pods/fin?gracePeriodSeconds=0", NULL, &code);
    assert_int_equal(code, 200);
    assert_non_null(fair_fake_json_str(r, "metadata.deletionTimestamp"));
    json_decref(r);
    /* Still there while the finalizer is. */
    assert_int_equal(get_code("/api/v1/namespaces/life/pods/fin"), 200);
    char *resp = NULL;
    /* No new finalizers while it is being deleted. */
    fair_fake_request_ct(
        &fake, "PATCH", "/api/v1/namespaces/life/pods/fin", "application/merge-patch+json",
        "{\"metadata\":{\"finalizers\":[\"fairshare.dev/ledger\",\"x/y\"]}}", &code, &resp);
    assert_int_equal(code, 422);
    free(resp);
    fair_fake_request_ct(&fake, "PATCH", "/api/v1/namespaces/life/pods/fin",
                         "application/merge-patch+json", "{\"metadata\":{\"finalizers\":null}}",
                         &code, &resp);
    assert_int_equal(code, 200);
    free(resp);
    assert_int_equal(get_code("/api/v1/namespaces/life/pods/fin"), 404);

    /* Graceful deletion with a finalizer: after the grace period the pod
     * waits for its finalizer, then goes when it is removed. */
    make_pod("finslow", ",\"finalizers\":[\"fairshare.dev/ledger\"]");
    r = fair_fake_request_json(
        &fake, "DELETE", "/api/v1/namespaces/life/pods/finslow?gracePeriodSeconds=1", NULL, &code);
    assert_int_equal(code, 200);
    json_decref(r);
    int zeroed = 0;
    for (int i = 0; i < 600 && !zeroed; i++) {
        r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/life/pods/finslow", NULL,
                                   &code);
        assert_int_equal(code, 200);
        zeroed = jint(r, "metadata", "deletionGracePeriodSeconds") == 0;
        json_decref(r);
        if (!zeroed) {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(zeroed);
    fair_fake_request_ct(&fake, "PATCH", "/api/v1/namespaces/life/pods/finslow",
                         "application/merge-patch+json", "{\"metadata\":{\"finalizers\":[]}}",
                         &code, &resp);
    assert_int_equal(code, 200);
    free(resp);
    assert_int_equal(get_code("/api/v1/namespaces/life/pods/finslow"), 404);

    make_pod("pre", NULL);
    r = fair_fake_request_json(
        &fake, "DELETE", "/api/v1/namespaces/life/pods/pre",
        "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":"
        "{\"uid\":\"not-the-uid\"}}",
        &code);
    assert_int_equal(code, 409);
    assert_string_equal(fair_fake_json_str(r, "reason"), "Conflict");
    json_decref(r);
    r = fair_fake_request_json(&fake, "DELETE", "/api/v1/namespaces/life/pods/pre",
                               "{\"gracePeriodSeconds\":0}", &code);
    assert_int_equal(code, 200);
    json_decref(r);
    assert_int_equal(get_code("/api/v1/namespaces/life/pods/pre"), 404);
}

static void test_graceful_delete_survives_restart(void **state)
{
    (void)state;
    long code = 0;
    make_pod("slow", ",\"generation\":7");
    json_t *r = fair_fake_request_json(
        &fake, "DELETE", "/api/v1/namespaces/life/pods/slow?gracePeriodSeconds=2", NULL, &code);
    assert_int_equal(code, 200);
    assert_int_equal(jint(r, "metadata", "deletionGracePeriodSeconds"), 2);
    assert_int_equal(jint(r, "metadata", "generation"), 2); /* 1 on create, +1 */
    json_decref(r);
    /* A longer grace period does not extend it. */
    r = fair_fake_request_json(
        &fake, "DELETE", "/api/v1/namespaces/life/pods/slow?gracePeriodSeconds=60", NULL, &code);
    assert_int_equal(code, 200);
    assert_int_equal(jint(r, "metadata", "deletionGracePeriodSeconds"), 2);
    json_decref(r);
    assert_int_equal(fair_fake_restart(&fake), 0);
    int gone = 0;
    for (int i = 0; i < 600 && !gone; i++) {
        gone = get_code("/api/v1/namespaces/life/pods/slow") == 404;
        if (!gone) {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(gone);
}

static void test_namespace_delete_cascades(void **state)
{
    (void)state;
    long code = 0;
    assert_int_equal(fair_fake_create_namespace(&fake, "doomed"), 0);
    json_t *r =
        fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/doomed/configmaps",
                               "{\"metadata\":{\"name\":\"cfg\"},\"data\":{\"a\":\"b\"}}", &code);
    assert_int_equal(code, 201);
    json_decref(r);
    r = fair_fake_request_json(&fake, "DELETE", "/api/v1/namespaces/doomed", NULL, &code);
    assert_int_equal(code, 200);
    json_decref(r);
    assert_int_equal(get_code("/api/v1/namespaces/doomed/configmaps/cfg"), 404);
    assert_int_equal(get_code("/api/v1/namespaces/doomed"), 404);
    assert_int_equal(get_code("/api/v1/namespaces/life"), 200);
}

static void test_delete_collection(void **state)
{
    (void)state;
    long code = 0;
    assert_int_equal(fair_fake_create_namespace(&fake, "coll"), 0);
    const char *names[] = {"k1", "k2", "k3"};
    for (int i = 0; i < 3; i++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"run\":\"%s\"}}}",
                 names[i], i < 2 ? "a" : "b");
        json_t *r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/coll/configmaps",
                                           body, &code);
        assert_int_equal(code, 201);
        json_decref(r);
    }
    json_t *r = fair_fake_request_json(
        &fake, "DELETE", "/api/v1/namespaces/coll/configmaps?labelSelector=run%3Da", NULL, &code);
    assert_int_equal(code, 200);
    assert_string_equal(fair_fake_json_str(r, "kind"), "ConfigMapList");
    assert_int_equal(json_array_size(json_object_get(r, "items")), 2);
    json_decref(r);
    assert_int_equal(get_code("/api/v1/namespaces/coll/configmaps/k1"), 404);
    assert_int_equal(get_code("/api/v1/namespaces/coll/configmaps/k3"), 200);
}

static void test_watch_timeout_limit_and_rv(void **state)
{
    (void)state;
    long code = 0;
    struct fair_fake_watch *w =
        fair_fake_watch_open(&fake, "/api/v1/namespaces/life/pods?watch=1&timeoutSeconds=1");
    json_t *ev = NULL;
    int rc;
    while ((rc = fair_fake_watch_next(w, &ev, 10000)) == 1)
        json_decref(ev);      /* synthetic ADDED events of existing pods */
    assert_int_equal(rc, -1); /* ended by the server after 1 s */
    assert_int_equal(fair_fake_watch_http_status(w), 200);
    fair_fake_watch_close(w);

    /* --max-watchers 3: the fourth gets 429. */
    struct fair_fake_watch *ws[3];
    for (int i = 0; i < 3; i++) {
        ws[i] = fair_fake_watch_open(&fake, "/api/v1/nodes?watch=1");
        assert_int_equal(fair_fake_watch_http_status(ws[i]), 200);
    }
    json_t *r = fair_fake_request_json(&fake, "GET", "/api/v1/nodes?watch=1", NULL, &code);
    assert_int_equal(code, 429);
    assert_string_equal(fair_fake_json_str(r, "reason"), "TooManyRequests");
    json_decref(r);
    for (int i = 0; i < 3; i++)
        fair_fake_watch_close(ws[i]);

    /* A list at a resourceVersion the server has not reached: 504. */
    r = fair_fake_request_json(&fake, "GET", "/api/v1/pods?resourceVersion=999999999", NULL, &code);
    assert_int_equal(code, 504);
    assert_string_equal(fair_fake_json_str(r, "reason"), "Timeout");
    json_decref(r);
}

static void test_crd_and_discovery(void **state)
{
    (void)state;
    long code = 0;
    json_t *r = fair_fake_request_json(
        &fake, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"queues.fairshare.dev\"},\"spec\":{\"group\":\"fairshare.dev\","
        "\"scope\":\"Cluster\",\"names\":{\"plural\":\"queues\",\"kind\":\"Queue\"},"
        "\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":true}]}}",
        &code);
    assert_int_equal(code, 201);
    json_t *c1 = json_array_get(json_object_get(json_object_get(r, "status"), "conditions"), 1);
    assert_string_equal(fair_fake_json_str(c1, "type"), "Established");
    assert_string_equal(fair_fake_json_str(c1, "status"), "True");
    json_decref(r);
    r = fair_fake_request_json(&fake, "GET", "/apis/fairshare.dev/v1alpha1", NULL, &code);
    assert_int_equal(code, 200);
    assert_string_equal(fair_fake_json_str(r, "kind"), "APIResourceList");
    assert_string_equal(
        fair_fake_json_str(json_array_get(json_object_get(r, "resources"), 0), "name"), "projects");
    json_decref(r);
    r = fair_fake_request_json(&fake, "GET", "/version", NULL, &code);
    assert_int_equal(code, 200);
    assert_string_equal(fair_fake_json_str(r, "major"), "1");
    json_decref(r);
    assert_int_equal(get_code("/apis/nope/v1/things"), 404);
    /* /fake/ endpoints need the token too. */
    struct fair_fake copy = fake;
    snprintf(copy.token, sizeof(copy.token), "wrong");
    copy.curl = NULL;
    r = fair_fake_request_json(&copy, "GET", "/fake/stats", NULL, &code);
    assert_int_equal(code, 401);
    json_decref(r);
    fair_fake_request(&copy, "GET", "/healthz", NULL, &code, NULL);
    assert_int_equal(code, 200);
    /* release the copy's handle without stopping the shared server */
    copy.pid = 0;
    copy.dir[0] = '\0';
    fair_fake_release(&copy);
}

static json_t *post_pod(const char *resources, long *code)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"metadata\":{\"generateName\":\"res-\"},\"spec\":{\"containers\":[{\"name\":"
             "\"c\",\"image\":\"i\",\"resources\":%s}]}}",
             resources);
    return fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/life/pods", body, code);
}

static void test_pod_resource_defaults(void **state)
{
    (void)state;
    long code = 0;
    /* Requests default to limits; numbers come back as strings. */
    json_t *r =
        post_pod("{\"limits\":{\"nvidia.com/gpu\":2,\"cpu\":\"4\",\"memory\":\"8Gi\"}}", &code);
    assert_int_equal(code, 201);
    json_t *res = json_object_get(
        json_array_get(json_object_get(json_object_get(r, "spec"), "containers"), 0), "resources");
    json_t *rq = json_object_get(res, "requests");
    assert_string_equal(json_string_value(json_object_get(rq, "nvidia.com/gpu")), "2");
    assert_string_equal(json_string_value(json_object_get(rq, "cpu")), "4");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "limits"), "nvidia.com/gpu")), "2");
    assert_string_equal(fair_fake_json_str(r, "status.qosClass"), "Guaranteed");
    json_decref(r);
    r = post_pod("{\"requests\":{\"cpu\":\"500m\"}}", &code);
    assert_int_equal(code, 201);
    assert_string_equal(fair_fake_json_str(r, "status.qosClass"), "Burstable");
    json_decref(r);
    r = post_pod("{}", &code);
    assert_string_equal(fair_fake_json_str(r, "status.qosClass"), "BestEffort");
    json_decref(r);
    /* Extended resources: whole numbers, request == limit. */
    r = post_pod("{\"requests\":{\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"2\"}}",
                 &code);
    assert_int_equal(code, 422);
    assert_string_equal(fair_fake_json_str(r, "reason"), "Invalid");
    json_decref(r);
    r = post_pod("{\"requests\":{\"nvidia.com/gpu\":\"1\"}}", &code);
    assert_int_equal(code, 422);
    json_decref(r);
    r = post_pod("{\"limits\":{\"nvidia.com/gpu\":\"0.5\"}}", &code);
    assert_int_equal(code, 422);
    json_decref(r);
    r = post_pod("{\"limits\":{\"cpu\":\"lots\"}}", &code);
    assert_int_equal(code, 422);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finalizers_and_preconditions),
        cmocka_unit_test(test_graceful_delete_survives_restart),
        cmocka_unit_test(test_namespace_delete_cascades),
        cmocka_unit_test(test_delete_collection),
        cmocka_unit_test(test_watch_timeout_limit_and_rv),
        cmocka_unit_test(test_crd_and_discovery),
        cmocka_unit_test(test_pod_resource_defaults),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
