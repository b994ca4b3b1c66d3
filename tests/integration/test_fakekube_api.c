/* Integration tests of the fake API server's Kubernetes semantics over real
 * TLS: CRUD, paging, conflicts, watch (order, bookmarks, 410), binding,
 * eviction with PodDisruptionBudgets, graceful deletion and the status
 * subresource. One server for the whole group. */
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
        .nodes = 2, .gpus_per_node = 4, .grace_seconds = 1, .bookmark_ms = 200, .history = 50};
    if (fair_fake_start(&fake, &o) != 0)
        return -1;
    return fair_fake_create_namespace(&fake, "team-a");
}

static int teardown(void **state)
{
    (void)state;
    int rc = fair_fake_stop(&fake);
    fair_fake_release(&fake);
    return rc;
}

static json_t *create_pod(const char *ns, const char *name, const char *labels_json, long *code)
{
    char body[2048], path[256];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":%s},"
             "\"spec\":{\"schedulerName\":\"fairshare\",\"containers\":[{\"name\":\"main\","
             "\"image\":\"busybox\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
             name, labels_json ? labels_json : "{}");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
    return fair_fake_request_json(&fake, "POST", path, body, code);
}

static void bind_pod(const char *ns, const char *name, const char *node, long expect)
{
    char body[512], path[256];
    long code = 0;
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"%s\"},"
             "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"%s\"}}",
             name, node);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", ns, name);
    json_t *r = fair_fake_request_json(&fake, "POST", path, body, &code);
    assert_int_equal(code, expect);
    if (expect == 409)
        assert_string_equal(fair_fake_json_str(r, "reason"), "Conflict");
    json_decref(r);
}

static void set_running_ready(const char *ns, const char *name)
{
    char path[256];
    long code = 0;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", ns, name);
    char *resp = NULL;
    assert_int_equal(
        fair_fake_request_ct(&fake, "PATCH", path, "application/merge-patch+json",
                             "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
                             "\"Ready\",\"status\":\"True\"}]}}",
                             &code, &resp),
        0);
    assert_int_equal(code, 200);
    free(resp);
}

static void test_create_get_conflicts(void **state)
{
    (void)state;
    long code = 0;
    json_t *p = create_pod("team-a", "alpha", "{\"app\":\"x\"}", &code);
    assert_int_equal(code, 201);
    assert_non_null(fair_fake_json_str(p, "metadata.uid"));
    assert_non_null(fair_fake_json_str(p, "metadata.creationTimestamp"));
    assert_string_equal(fair_fake_json_str(p, "status.phase"), "Pending");
    assert_string_equal(fair_fake_json_str(p, "metadata.namespace"), "team-a");
    const char *rv1 = fair_fake_json_str(p, "metadata.resourceVersion");
    assert_non_null(rv1);
    char stale_rv[32];
    snprintf(stale_rv, sizeof(stale_rv), "%s", rv1);

    json_t *dup = create_pod("team-a", "alpha", NULL, &code);
    assert_int_equal(code, 409);
    assert_string_equal(fair_fake_json_str(dup, "reason"), "AlreadyExists");
    assert_string_equal(fair_fake_json_str(dup, "message"), "pods \"alpha\" already exists");
    json_decref(dup);

    /* Update with the current rv succeeds and bumps the rv. */
    json_t *upd = json_deep_copy(p);
    json_object_set_new(json_object_get(json_object_get(upd, "metadata"), "labels"), "tier",
                        json_string("gold"));
    char *body = json_dumps(upd, 0);
    json_t *r =
        fair_fake_request_json(&fake, "PUT", "/api/v1/namespaces/team-a/pods/alpha", body, &code);
    assert_int_equal(code, 200);
    assert_string_equal(fair_fake_json_str(r, "metadata.labels.tier"), "gold");
    assert_true(strtoull(fair_fake_json_str(r, "metadata.resourceVersion"), NULL, 10) >
                strtoull(stale_rv, NULL, 10));
    json_decref(r);
    free(body);

    /* The same body again carries a stale rv: 409 Conflict. */
    json_object_set_new(json_object_get(json_object_get(upd, "metadata"), "labels"), "tier",
                        json_string("silver"));
    body = json_dumps(upd, 0);
    r = fair_fake_request_json(&fake, "PUT", "/api/v1/namespaces/team-a/pods/alpha", body, &code);
    assert_int_equal(code, 409);
    assert_string_equal(fair_fake_json_str(r, "reason"), "Conflict");
    assert_string_equal(fair_fake_json_str(r, "kind"), "Status");
    json_decref(r);
    free(body);
    json_decref(upd);

    r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/team-a/pods/nope", NULL, &code);
    assert_int_equal(code, 404);
    assert_string_equal(fair_fake_json_str(r, "reason"), "NotFound");
    assert_string_equal(fair_fake_json_str(r, "message"), "pods \"nope\" not found");
    json_decref(r);

    /* Bad bodies. */
    r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/team-a/pods", "{not json", &code);
    assert_int_equal(code, 400);
    json_decref(r);
    r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/team-a/pods",
                               "{\"metadata\":{\"name\":\"nocontainers\"},\"spec\":{}}", &code);
    assert_int_equal(code, 422);
    assert_string_equal(fair_fake_json_str(r, "reason"), "Invalid");
    json_decref(r);
    r = create_pod("team-a", "Bad_Name", NULL, &code);
    assert_int_equal(code, 422);
    json_decref(r);
    r = create_pod("no-such-ns", "x", NULL, &code);
    assert_int_equal(code, 404);
    assert_string_equal(fair_fake_json_str(r, "message"), "namespaces \"no-such-ns\" not found");
    json_decref(r);

    /* generateName */
    r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/team-a/pods",
                               "{\"metadata\":{\"generateName\":\"gen-\"},\"spec\":{"
                               "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
                               &code);
    assert_int_equal(code, 201);
    const char *gname = fair_fake_json_str(r, "metadata.name");
    assert_int_equal(strlen(gname), 9);
    assert_memory_equal(gname, "gen-", 4);
    json_decref(r);
    json_decref(p);
}

static void test_list_paging_and_selectors(void **state)
{
    (void)state;
    long code = 0;
    assert_int_equal(fair_fake_create_namespace(&fake, "paging"), 0);
    for (int i = 0; i < 7; i++) {
        char name[32];
        snprintf(name, sizeof(name), "p%d", i);
        json_t *r =
            create_pod("paging", name, i % 2 ? "{\"odd\":\"yes\"}" : "{\"odd\":\"no\"}", &code);
        assert_int_equal(code, 201);
        json_decref(r);
    }
    bind_pod("paging", "p3", "node-0001", 201);

    char path[1024];
    const char *cont = NULL;
    json_t *page = NULL;
    int seen = 0, pages = 0;
    char first_rv[32] = "";
    const char *expect[] = {"p0", "p1", "p2", "p3", "p4", "p5", "p6"};
    do {
        if (cont)
            snprintf(path, sizeof(path), "/api/v1/namespaces/paging/pods?limit=3&continue=%s",
                     cont);
        else
            snprintf(path, sizeof(path), "/api/v1/namespaces/paging/pods?limit=3");
        json_t *next = fair_fake_request_json(&fake, "GET", path, NULL, &code);
        json_decref(page);
        page = next;
        assert_int_equal(code, 200);
        assert_string_equal(fair_fake_json_str(page, "kind"), "PodList");
        if (!first_rv[0])
            snprintf(first_rv, sizeof(first_rv), "%s",
                     fair_fake_json_str(page, "metadata.resourceVersion"));
        else
            assert_string_equal(fair_fake_json_str(page, "metadata.resourceVersion"), first_rv);
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(page, "items"), i, it)
        {
            assert_string_equal(fair_fake_json_str(it, "metadata.name"), expect[seen]);
            seen++;
        }
        cont = fair_fake_json_str(page, "metadata.continue");
        pages++;
        if (pages == 1)
            assert_int_equal(json_integer_value(json_object_get(json_object_get(page, "metadata"),
                                                                "remainingItemCount")),
                             4);
    } while (cont && *cont && pages < 10);
    assert_int_equal(seen, 7);
    assert_int_equal(pages, 3);
    json_decref(page);

    json_t *r = fair_fake_request_json(
        &fake, "GET", "/api/v1/namespaces/paging/pods?labelSelector=odd%3Dyes", NULL, &code);
    assert_int_equal(code, 200);
    assert_int_equal(json_array_size(json_object_get(r, "items")), 3);
    json_decref(r);
    r = fair_fake_request_json(
        &fake, "GET", "/api/v1/namespaces/paging/pods?labelSelector=odd!%3Dyes,odd", NULL, &code);
    assert_int_equal(json_array_size(json_object_get(r, "items")), 4);
    json_decref(r);
    r = fair_fake_request_json(&fake, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-0001",
                               NULL, &code);
    assert_int_equal(code, 200);
    assert_int_equal(json_array_size(json_object_get(r, "items")), 1);
    assert_string_equal(
        fair_fake_json_str(json_array_get(json_object_get(r, "items"), 0), "metadata.name"), "p3");
    json_decref(r);
    r = fair_fake_request_json(
        &fake, "GET",
        "/api/v1/namespaces/paging/pods?fieldSelector=spec.nodeName%3D,status.phase%3DPending",
        NULL, &code);
    assert_int_equal(json_array_size(json_object_get(r, "items")), 6);
    json_decref(r);
    r = fair_fake_request_json(&fake, "GET", "/api/v1/pods?fieldSelector=spec.bogus%3Dx", NULL,
                               &code);
    assert_int_equal(code, 400);
    json_decref(r);

    /* A continue token from before a compaction has expired: 410. */
    r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/paging/pods?limit=2", NULL, &code);
    char tok[512];
    snprintf(tok, sizeof(tok), "%s", fair_fake_json_str(r, "metadata.continue"));
    json_decref(r);
    assert_int_equal(fair_fake_compact(&fake), 0);
    snprintf(path, sizeof(path), "/api/v1/namespaces/paging/pods?limit=2&continue=%s", tok);
    r = fair_fake_request_json(&fake, "GET", path, NULL, &code);
    assert_int_equal(code, 410);
    assert_string_equal(fair_fake_json_str(r, "reason"), "Expired");
    json_decref(r);
}

static json_t *next_non_bookmark(struct fair_fake_watch *w, int *bookmarks)
{
    for (int i = 0; i < 100; i++) {
        json_t *ev = NULL;
        int rc = fair_fake_watch_next(w, &ev, 5000);
        assert_int_equal(rc, 1);
        if (strcmp(fair_fake_json_str(ev, "type"), "BOOKMARK") == 0) {
            (*bookmarks)++;
            assert_non_null(fair_fake_json_str(ev, "object.metadata.resourceVersion"));
            assert_null(json_object_get(json_object_get(ev, "object"), "spec"));
            json_decref(ev);
            continue;
        }
        return ev;
    }
    fail_msg("no event");
    return NULL;
}

static void test_watch_order_bookmarks_and_expiry(void **state)
{
    (void)state;
    long code = 0;
    assert_int_equal(fair_fake_create_namespace(&fake, "watched"), 0);
    json_t *l =
        fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/watched/pods", NULL, &code);
    char path[256];
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/watched/pods?watch=1&resourceVersion=%s&allowWatchBookmarks=true",
             fair_fake_json_str(l, "metadata.resourceVersion"));
    json_decref(l);
    struct fair_fake_watch *w = fair_fake_watch_open(&fake, path);
    assert_non_null(w);

    json_t *p = create_pod("watched", "w1", NULL, &code);
    assert_int_equal(code, 201);
    char created_rv[32];
    snprintf(created_rv, sizeof(created_rv), "%s",
             fair_fake_json_str(p, "metadata.resourceVersion"));
    json_decref(p);
    bind_pod("watched", "w1", "node-0000", 201);
    json_t *d = fair_fake_request_json(
        &fake, "DELETE", "/api/v1/namespaces/watched/pods/w1?gracePeriodSeconds=0", NULL, &code);
    assert_int_equal(code, 200);
    json_decref(d);

    int bookmarks = 0;
    json_t *ev = next_non_bookmark(w, &bookmarks);
    assert_string_equal(fair_fake_json_str(ev, "type"), "ADDED");
    assert_string_equal(fair_fake_json_str(ev, "object.metadata.resourceVersion"), created_rv);
    assert_string_equal(fair_fake_json_str(ev, "object.kind"), "Pod");
    json_decref(ev);
    ev = next_non_bookmark(w, &bookmarks);
    assert_string_equal(fair_fake_json_str(ev, "type"), "MODIFIED");
    assert_string_equal(fair_fake_json_str(ev, "object.spec.nodeName"), "node-0000");
    json_decref(ev);
    ev = next_non_bookmark(w, &bookmarks);
    assert_string_equal(fair_fake_json_str(ev, "type"), "DELETED");
    assert_string_equal(fair_fake_json_str(ev, "object.metadata.name"), "w1");
    assert_string_equal(fair_fake_json_str(ev, "object.spec.nodeName"), "node-0000");
    json_decref(ev);
    /* Bookmarks come every 200 ms; wait for at least one. */
    for (int i = 0; i < 50 && bookmarks == 0; i++) {
        int rc = fair_fake_watch_next(w, &ev, 5000);
        assert_int_equal(rc, 1);
        if (strcmp(fair_fake_json_str(ev, "type"), "BOOKMARK") == 0)
            bookmarks++;
        json_decref(ev);
    }
    assert_true(bookmarks >= 1);
    fair_fake_watch_close(w);

    /* The history keeps 50 events; make more and watch from rv 1. */
    for (int i = 0; i < 60; i++) {
        char name[32];
        snprintf(name, sizeof(name), "churn%d", i);
        json_t *r = create_pod("watched", name, NULL, &code);
        assert_int_equal(code, 201);
        json_decref(r);
    }
    w = fair_fake_watch_open(&fake, "/api/v1/namespaces/watched/pods?watch=1&resourceVersion=2");
    assert_non_null(w);
    assert_int_equal(fair_fake_watch_next(w, &ev, 5000), 1);
    assert_int_equal(fair_fake_watch_http_status(w), 200);
    assert_string_equal(fair_fake_json_str(ev, "type"), "ERROR");
    assert_string_equal(fair_fake_json_str(ev, "object.kind"), "Status");
    assert_string_equal(fair_fake_json_str(ev, "object.reason"), "Expired");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "object"), "code")),
                     410);
    json_decref(ev);
    assert_int_equal(fair_fake_watch_next(w, &ev, 5000), -1);
    fair_fake_watch_close(w);

    /* A label-filtered watch sees an object leave its selection as DELETED. */
    w = fair_fake_watch_open(&fake,
                             "/api/v1/namespaces/watched/pods?watch=1&labelSelector=keep%3Dyes");
    char *resp = NULL;
    fair_fake_request_ct(&fake, "PATCH", "/api/v1/namespaces/watched/pods/churn1",
                         "application/merge-patch+json",
                         "{\"metadata\":{\"labels\":{\"keep\":\"yes\"}}}", &code, &resp);
    assert_int_equal(code, 200);
    free(resp);
    fair_fake_request_ct(&fake, "PATCH", "/api/v1/namespaces/watched/pods/churn1",
                         "application/merge-patch+json",
                         "{\"metadata\":{\"labels\":{\"keep\":null}}}", &code, &resp);
    assert_int_equal(code, 200);
    free(resp);
    int bm = 0;
    ev = next_non_bookmark(w, &bm);
    assert_string_equal(fair_fake_json_str(ev, "type"), "ADDED");
    json_decref(ev);
    ev = next_non_bookmark(w, &bm);
    assert_string_equal(fair_fake_json_str(ev, "type"), "DELETED");
    assert_string_equal(fair_fake_json_str(ev, "object.metadata.name"), "churn1");
    json_decref(ev);
    fair_fake_watch_close(w);
}

static void test_binding_and_eviction(void **state)
{
    (void)state;
    long code = 0;
    assert_int_equal(fair_fake_create_namespace(&fake, "evict"), 0);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "e%d", i);
        json_t *r = create_pod("evict", name, "{\"app\":\"train\"}", &code);
        assert_int_equal(code, 201);
        json_decref(r);
        bind_pod("evict", name, "node-0000", 201);
        set_running_ready("evict", name);
    }
    bind_pod("evict", "e0", "node-0001", 409);
    /* The Binding's annotations land on the pod. */
    json_t *r0 = create_pod("evict", "annotated", NULL, &code);
    json_decref(r0);
    r0 = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/evict/pods/annotated/binding",
                                "{\"metadata\":{\"name\":\"annotated\",\"annotations\":{"
                                "\"fairshare.dev/gpu-devices\":\"0,3\"}},\"target\":{\"name\":"
                                "\"node-0001\"}}",
                                &code);
    assert_int_equal(code, 201);
    json_decref(r0);
    r0 = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/evict/pods/annotated", NULL,
                                &code);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(r0, "metadata"), "annotations"),
                            "fairshare.dev/gpu-devices")),
                        "0,3");
    json_decref(r0);
    bind_pod("evict", "missing", "node-0001", 404);
    /* A pod told PodScheduled=False (as a scheduler does) and then bound
     * has one PodScheduled condition, True, without the old reason. */
    json_t *r1 = create_pod("evict", "was-pending", NULL, &code);
    json_decref(r1);
    char *patched = NULL;
    assert_int_equal(
        fair_fake_request_ct(
            &fake, "PATCH", "/api/v1/namespaces/evict/pods/was-pending/status",
            "application/strategic-merge-patch+json",
            "{\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
            "\"reason\":\"Unschedulable\",\"message\":\"no GPU\"}]}}",
            &code, &patched),
        0);
    assert_int_equal(code, 200);
    free(patched);
    bind_pod("evict", "was-pending", "node-0001", 201);
    r1 = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/evict/pods/was-pending", NULL,
                                &code);
    json_t *conds = json_object_get(json_object_get(r1, "status"), "conditions");
    int nsched = 0;
    size_t ci;
    json_t *c;
    json_array_foreach(conds, ci, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "type")), "PodScheduled") != 0)
            continue;
        nsched++;
        assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
        assert_null(json_object_get(c, "reason"));
        assert_non_null(json_object_get(c, "lastTransitionTime"));
    }
    assert_int_equal(nsched, 1);
    json_decref(r1);

    json_t *r = fair_fake_request_json(
        &fake, "POST", "/apis/policy/v1/namespaces/evict/poddisruptionbudgets",
        "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":"
        "\"pdb\"},\"spec\":{\"minAvailable\":2,\"selector\":{\"matchLabels\":{\"app\":\"train\"}}}"
        "}",
        &code);
    assert_int_equal(code, 201);
    json_decref(r);

#define EV_BODY                                                                                    \
    "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"%s\","           \
    "\"namespace\":\"evict\"}}"
    char body[256];
    snprintf(body, sizeof(body), EV_BODY, "e0");
    r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/evict/pods/e0/eviction", body,
                               &code);
    assert_int_equal(code, 201);
    assert_string_equal(fair_fake_json_str(r, "status"), "Success");
    json_decref(r);

    /* e0 is terminating: two healthy pods left, minAvailable 2 blocks. */
    snprintf(body, sizeof(body), EV_BODY, "e1");
    r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/evict/pods/e1/eviction", body,
                               &code);
    assert_int_equal(code, 429);
    assert_string_equal(fair_fake_json_str(r, "reason"), "TooManyRequests");
    assert_string_equal(fair_fake_json_str(r, "message"),
                        "Cannot evict pod as it would violate the pod's disruption budget.");
    assert_string_equal(
        fair_fake_json_str(
            json_array_get(json_object_get(json_object_get(r, "details"), "causes"), 0), "reason"),
        "DisruptionBudget");
    json_decref(r);

    r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/evict/pods/e0", NULL, &code);
    assert_int_equal(code, 200);
    assert_non_null(fair_fake_json_str(r, "metadata.deletionTimestamp"));
    json_t *dt = json_array_get(json_object_get(json_object_get(r, "status"), "conditions"), 1);
    assert_string_equal(fair_fake_json_str(dt, "type"), "DisruptionTarget");
    assert_string_equal(fair_fake_json_str(dt, "reason"), "EvictionByEvictionAPI");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "metadata"),
                                                        "deletionGracePeriodSeconds")),
                     1);
    json_decref(r);
    /* Grace period 1 s: poll with a generous bound. */
    int gone = 0;
    for (int i = 0; i < 300 && !gone; i++) {
        r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/evict/pods/e0", NULL, &code);
        json_decref(r);
        if (code == 404)
            gone = 1;
        else {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(gone);
    /* The simulated disruption controller publishes the PDB's status. */
    int synced = 0;
    for (int i = 0; i < 600 && !synced; i++) {
        r = fair_fake_request_json(
            &fake, "GET", "/apis/policy/v1/namespaces/evict/poddisruptionbudgets/pdb", NULL, &code);
        json_t *st = json_object_get(r, "status");
        if (json_integer_value(json_object_get(st, "currentHealthy")) == 2 &&
            json_integer_value(json_object_get(st, "expectedPods")) == 2) {
            assert_int_equal(json_integer_value(json_object_get(st, "desiredHealthy")), 2);
            assert_int_equal(json_integer_value(json_object_get(st, "disruptionsAllowed")), 0);
            assert_int_equal(json_integer_value(json_object_get(st, "observedGeneration")), 1);
            synced = 1;
        } else {
            struct timespec ts = {0, 50 * 1000000L};
            nanosleep(&ts, NULL);
        }
        json_decref(r);
    }
    assert_true(synced);
    /* Still blocked: e1 and e2 are the two the budget needs. */
    r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/evict/pods/e1/eviction", body,
                               &code);
    assert_int_equal(code, 429);
    json_decref(r);
    /* maxUnavailable 2 instead allows it. */
    char *resp = NULL;
    fair_fake_request_ct(&fake, "PATCH",
                         "/apis/policy/v1/namespaces/evict/poddisruptionbudgets/pdb",
                         "application/merge-patch+json",
                         "{\"spec\":{\"minAvailable\":null,\"maxUnavailable\":1}}", &code, &resp);
    assert_int_equal(code, 200);
    free(resp);
    r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/evict/pods/e1/eviction", body,
                               &code);
    assert_int_equal(code, 201);
    json_decref(r);
    r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/evict/pods/nope/eviction",
                               "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\"}", &code);
    assert_int_equal(code, 404);
    json_decref(r);
}

static void test_status_subresource(void **state)
{
    (void)state;
    long code = 0;
    json_t *r = fair_fake_request_json(
        &fake, "POST", "/apis/fairshare.dev/v1alpha1/projects",
        "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\",\"metadata\":{\"name\":"
        "\"vision\"},\"spec\":{\"guaranteedGPUs\":8},\"status\":{\"allocatedGPUs\":99}}",
        &code);
    assert_int_equal(code, 201);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "metadata"), "generation")), 1);
    assert_null(json_object_get(r, "status"));
    json_decref(r);

    /* /status writes change only status. */
    char *resp = NULL;
    fair_fake_request_ct(&fake, "PATCH", "/apis/fairshare.dev/v1alpha1/projects/vision/status",
                         "application/merge-patch+json",
                         "{\"spec\":{\"guaranteedGPUs\":1},\"status\":{\"allocatedGPUs\":3}}",
                         &code, &resp);
    assert_int_equal(code, 200);
    free(resp);
    r = fair_fake_request_json(&fake, "GET", "/apis/fairshare.dev/v1alpha1/projects/vision", NULL,
                               &code);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "spec"), "guaranteedGPUs")), 8);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "status"), "allocatedGPUs")), 3);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "metadata"), "generation")), 1);

    /* Main writes ignore status and bump generation on spec changes. */
    json_object_set_new(json_object_get(r, "spec"), "guaranteedGPUs", json_integer(16));
    json_object_set_new(json_object_get(r, "status"), "allocatedGPUs", json_integer(0));
    char *body = json_dumps(r, 0);
    json_decref(r);
    r = fair_fake_request_json(&fake, "PUT", "/apis/fairshare.dev/v1alpha1/projects/vision", body,
                               &code);
    free(body);
    assert_int_equal(code, 200);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "spec"), "guaranteedGPUs")), 16);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "status"), "allocatedGPUs")), 3);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r, "metadata"), "generation")), 2);
    json_decref(r);

    /* Leases: 409 on a stale update. */
    r = fair_fake_request_json(&fake, "POST",
                               "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                               "{\"metadata\":{\"name\":\"fairshare\"},\"spec\":{"
                               "\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15}}",
                               &code);
    assert_int_equal(code, 201);
    char *stale = json_dumps(r, 0);
    json_object_set_new(json_object_get(r, "spec"), "holderIdentity", json_string("b"));
    body = json_dumps(r, 0);
    json_decref(r);
    r = fair_fake_request_json(
        &fake, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/fairshare", body,
        &code);
    assert_int_equal(code, 200);
    json_decref(r);
    r = fair_fake_request_json(
        &fake, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/fairshare", stale,
        &code);
    assert_int_equal(code, 409);
    json_decref(r);
    free(body);
    free(stale);
}

static void test_patch_formats(void **state)
{
    (void)state;
    long code = 0;
    char *resp = NULL;
    json_t *r = fair_fake_request_json(
        &fake, "POST", "/api/v1/namespaces/team-a/pods",
        "{\"metadata\":{\"name\":\"gated\"},\"spec\":{\"schedulingGates\":[{\"name\":"
        "\"fairshare.dev/admission\"}],\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
        &code);
    assert_int_equal(code, 201);
    json_decref(r);
    /* Gated pods cannot be bound. */
    bind_pod("team-a", "gated", "node-0000", 409);
    /* JSON patch removes the gate. */
    assert_int_equal(fair_fake_request_ct(&fake, "PATCH", "/api/v1/namespaces/team-a/pods/gated",
                                          "application/json-patch+json",
                                          "[{\"op\":\"test\",\"path\":\"/spec/schedulingGates/0/"
                                          "name\",\"value\":\"fairshare.dev/admission\"},{\"op\":"
                                          "\"remove\",\"path\":\"/spec/schedulingGates\"}]",
                                          &code, &resp),
                     0);
    assert_int_equal(code, 200);
    free(resp);
    /* A failing test op is 422 and changes nothing. */
    r = NULL;
    fair_fake_request_ct(
        &fake, "PATCH", "/api/v1/namespaces/team-a/pods/gated", "application/json-patch+json",
        "[{\"op\":\"test\",\"path\":\"/metadata/name\",\"value\":\"x\"}]", &code, &resp);
    assert_int_equal(code, 422);
    free(resp);
    bind_pod("team-a", "gated", "node-0000", 201);

    /* Strategic merge patch merges conditions by type. */
    fair_fake_request_ct(&fake, "PATCH", "/api/v1/namespaces/team-a/pods/gated/status",
                         "application/strategic-merge-patch+json",
                         "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
                         "\"True\"}]}}",
                         &code, &resp);
    assert_int_equal(code, 200);
    free(resp);
    r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/team-a/pods/gated", NULL, &code);
    json_t *conds = json_object_get(json_object_get(r, "status"), "conditions");
    assert_int_equal(json_array_size(conds), 2);
    assert_string_equal(fair_fake_json_str(json_array_get(conds, 0), "type"), "PodScheduled");
    assert_string_equal(fair_fake_json_str(json_array_get(conds, 1), "type"), "Ready");
    json_decref(r);
    /* ... while a merge patch replaces the list. */
    fair_fake_request_ct(&fake, "PATCH", "/api/v1/namespaces/team-a/pods/gated/status",
                         "application/merge-patch+json",
                         "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
                         "\"False\"}]}}",
                         &code, &resp);
    assert_int_equal(code, 200);
    free(resp);
    r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/team-a/pods/gated", NULL, &code);
    assert_int_equal(json_array_size(json_object_get(json_object_get(r, "status"), "conditions")),
                     1);
    json_decref(r);
    /* Custom resources do not take strategic merge patches. */
    fair_fake_request_ct(&fake, "PATCH", "/apis/fairshare.dev/v1alpha1/queues/none",
                         "application/strategic-merge-patch+json", "{}", &code, &resp);
    assert_int_equal(code, 415);
    free(resp);
    /* A pod's spec is immutable apart from a few fields. */
    fair_fake_request_ct(&fake, "PATCH", "/api/v1/namespaces/team-a/pods/gated",
                         "application/merge-patch+json", "{\"spec\":{\"nodeName\":\"node-0001\"}}",
                         &code, &resp);
    assert_int_equal(code, 422);
    free(resp);
    /* A stale resourceVersion in a patch is a conflict. */
    fair_fake_request_ct(
        &fake, "PATCH", "/api/v1/namespaces/team-a/pods/gated", "application/merge-patch+json",
        "{\"metadata\":{\"resourceVersion\":\"1\",\"labels\":{\"a\":\"b\"}}}", &code, &resp);
    assert_int_equal(code, 409);
    free(resp);
}

/* Volumes are stored as the API server stores them: a PersistentVolume
 * with node affinity (cluster-scoped), a PersistentVolumeClaim naming it,
 * a WaitForFirstConsumer StorageClass; both PV and PVC start Pending, and
 * the PVC can be annotated with the selected node (what the volume binder
 * writes). No binder runs. */
static void test_volumes_stored(void **state)
{
    (void)state;
    long code = 0;
    json_t *r = fair_fake_request_json(
        &fake, "POST", "/apis/storage.k8s.io/v1/storageclasses",
        "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{\"name\":"
        "\"local\"},\"provisioner\":\"kubernetes.io/no-provisioner\",\"volumeBindingMode\":"
        "\"WaitForFirstConsumer\"}",
        &code);
    assert_int_equal(code, 201);
    json_decref(r);
    r = fair_fake_request_json(
        &fake, "POST", "/api/v1/persistentvolumes",
        "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-1\"},"
        "\"spec\":{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\"],"
        "\"storageClassName\":\"local\",\"local\":{\"path\":\"/mnt/d\"},\"nodeAffinity\":{"
        "\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
        "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"node-0001\"]}]}]}}}}",
        &code);
    assert_int_equal(code, 201);
    assert_string_equal(fair_fake_json_str(r, "status.phase"), "Pending");
    json_decref(r);
    r = fair_fake_request_json(
        &fake, "POST", "/api/v1/namespaces/team-a/persistentvolumeclaims",
        "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":"
        "\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"storageClassName\":\"local\","
        "\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}",
        &code);
    assert_int_equal(code, 201);
    assert_string_equal(fair_fake_json_str(r, "status.phase"), "Pending");
    json_decref(r);
    char *resp = NULL;
    assert_int_equal(fair_fake_request_ct(&fake, "PATCH",
                                          "/api/v1/namespaces/team-a/persistentvolumeclaims/data",
                                          "application/merge-patch+json",
                                          "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/"
                                          "selected-node\":\"node-0001\"}}}",
                                          &code, &resp),
                     0);
    assert_int_equal(code, 200);
    free(resp);
    r = fair_fake_request_json(&fake, "GET", "/api/v1/persistentvolumes/pv-1", NULL, &code);
    assert_int_equal(code, 200);
    assert_string_equal(fair_fake_json_str(r, "kind"), "PersistentVolume");
    json_decref(r);
    r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/team-a/persistentvolumeclaims",
                               NULL, &code);
    assert_int_equal(code, 200);
    assert_int_equal(json_array_size(json_object_get(r, "items")), 1);
    json_decref(r);

    /* A claim's selector is validated as the 1.24 API server does it (the
     * messages are the ones it gave): a selector operator, values with In
     * and NotIn only. A valid one is stored. */
    static const struct {
        const char *expr, *msg;
    } sel[] = {
        {"{\"key\":\"size\",\"operator\":\"Gt\",\"values\":[\"1\"]}",
         "spec.selector.matchExpressions[0].operator: Invalid value: \"Gt\": not a valid selector "
         "operator"},
        {"{\"key\":\"disk\",\"operator\":\"Exists\",\"values\":[\"nvme\"]}",
         "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when "
         "`operator` is 'Exists' or 'DoesNotExist'"},
        {"{\"key\":\"disk\",\"operator\":\"In\"}",
         "spec.selector.matchExpressions[0].values: Required value: must be specified when "
         "`operator` is 'In' or 'NotIn'"},
        {"{\"key\":\"disk\",\"operator\":\"NotIn\",\"values\":[\"hdd\"]}", NULL},
    };
    for (size_t i = 0; i < sizeof sel / sizeof *sel; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{"
                 "\"name\":\"sel-%zu\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
                 "\"storageClassName\":\"local\",\"selector\":{\"matchExpressions\":[%s]}}}",
                 i, sel[i].expr);
        r = fair_fake_request_json(&fake, "POST",
                                   "/api/v1/namespaces/team-a/persistentvolumeclaims", body, &code);
        if (!sel[i].msg) {
            assert_int_equal(code, 201);
        } else {
            assert_int_equal(code, 422);
            assert_non_null(strstr(fair_fake_json_str(r, "message"), sel[i].msg));
        }
        json_decref(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_get_conflicts),
        cmocka_unit_test(test_list_paging_and_selectors),
        cmocka_unit_test(test_watch_order_bookmarks_and_expiry),
        cmocka_unit_test(test_binding_and_eviction),
        cmocka_unit_test(test_status_subresource),
        cmocka_unit_test(test_patch_formats),
        cmocka_unit_test(test_volumes_stored),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
