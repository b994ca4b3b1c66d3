/* Integration tests of lib/kube/client.c against the fake API server over
 * real TLS: CRUD through the typed helpers, paged lists, a conflict retried
 * after a re-read, 429 with Retry-After retried (and surfaced when asked),
 * eviction blocked by a PodDisruptionBudget surfacing 429, binding, Events,
 * Status decoding of errors, a wrong CA failing TLS, and the client-side
 * rate limiter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helper_fakekube.h"
#include "helper_kclient.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/yaml.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/decode.h"
#include "kube/liststream.h"

static struct fair_fake fake;
static struct event_base *base;
static struct fair_kclient *client;

static int setup(void **state)
{
    (void)state;
    fair_log_set_level(FAIR_LOG_WARN);
    struct fair_fake_opts o = {
        .nodes = 2, .gpus_per_node = 4, .grace_seconds = -1, .bookmark_ms = -1};
    if (fair_fake_start(&fake, &o) != 0)
        return -1;
    if (fair_fake_create_namespace(&fake, "team-a"))
        return -1;
    base = event_base_new();
    return fair_fake_kclient_new(&fake, base, &client);
}

static int teardown(void **state)
{
    (void)state;
    fair_kclient_free(client);
    event_base_free(base);
    int rc = fair_fake_stop(&fake);
    fair_fake_release(&fake);
    return rc;
}

/* ---- a callback that records the response ---- */

struct result {
    bool done;
    int rc;
    long status;
    int retries;
    char reason[64];
    char msg[FAIR_ERROR_MSG_MAX];
    json_t *json;
};

static void record(const struct fair_kresponse *resp, void *ctx)
{
    struct result *r = ctx;
    r->done = true;
    r->rc = resp->rc;
    r->status = resp->status;
    r->retries = resp->retries;
    snprintf(r->reason, sizeof r->reason, "%s", resp->reason);
    snprintf(r->msg, sizeof r->msg, "%s", resp->err.msg);
    r->json = resp->json ? json_incref(resp->json) : NULL;
}

static void wait_for(struct result *r)
{
    while (!r->done)
        assert_true(event_base_loop(base, EVLOOP_ONCE) >= 0);
}

static void reset(struct result *r)
{
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

static const char *jpath(const json_t *j, const char *a, const char *b)
{
    const json_t *x = json_object_get(j, a);
    return json_string_value(b ? json_object_get(x, b) : x);
}

static char *pod_body(const char *name, const char *labels)
{
    char *b = fair_malloc(1024);
    snprintf(b, 1024,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":%s},\"spec\":{\"schedulerName\":\"fairshare\",\"containers\":[{"
             "\"name\":\"main\",\"image\":\"busybox\",\"resources\":{\"limits\":{"
             "\"nvidia.com/gpu\":\"1\"}}}]}}",
             name, labels ? labels : "{}");
    return b;
}

static void create_pod(const char *name, const char *labels)
{
    struct result r = {0};
    char *b = pod_body(name, labels);
    assert_int_equal(fair_kclient_create(client, &fair_kres_pods, "team-a", b, record, &r, NULL),
                     0);
    fair_free(b);
    wait_for(&r);
    if (r.rc)
        fail_msg("create %s: %s", name, r.msg);
    assert_int_equal(r.status, 201);
    reset(&r);
}

static void test_crud_and_errors(void **state)
{
    (void)state;
    struct result r = {0};
    create_pod("p1", "{\"fairshare.dev/queue\":\"q1\"}");
    /* GET, decoded into the plain struct. */
    assert_int_equal(fair_kclient_get(client, &fair_kres_pods, "team-a", "p1", record, &r, NULL),
                     0);
    wait_for(&r);
    assert_int_equal(r.rc, 0);
    struct fair_kpod *pod = NULL;
    assert_int_equal(fair_kpod_decode(r.json, &pod, NULL), 0);
    assert_string_equal(pod->meta.name, "p1");
    assert_string_equal(pod->queue, "q1");
    assert_int_equal(pod->request.v[FAIR_RES_GPU], 1000);
    fair_kpod_free(pod);
    reset(&r);
    /* 404 with the Status decoded. */
    assert_int_equal(fair_kclient_get(client, &fair_kres_pods, "team-a", "nope", record, &r, NULL),
                     0);
    wait_for(&r);
    assert_int_equal(r.rc, FAIR_ENOTFOUND);
    assert_int_equal(r.status, 404);
    assert_string_equal(r.reason, "NotFound");
    assert_non_null(strstr(r.msg, "\"nope\" not found"));
    reset(&r);
    /* 409 AlreadyExists on a second create. */
    char *b = pod_body("p1", NULL);
    assert_int_equal(fair_kclient_create(client, &fair_kres_pods, "team-a", b, record, &r, NULL),
                     0);
    fair_free(b);
    wait_for(&r);
    assert_int_equal(r.rc, FAIR_ECONFLICT);
    assert_string_equal(r.reason, "AlreadyExists");
    reset(&r);
    /* Merge patch of labels, then of the status subresource. */
    assert_int_equal(fair_kclient_merge_patch(client, &fair_kres_pods, "team-a", "p1", NULL,
                                              "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}", record,
                                              &r, NULL),
                     0);
    wait_for(&r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(jpath(json_object_get(r.json, "metadata"), "labels", "x"), "y");
    reset(&r);
    assert_int_equal(fair_kclient_merge_patch(client, &fair_kres_pods, "team-a", "p1", "status",
                                              "{\"status\":{\"conditions\":[{\"type\":"
                                              "\"PodScheduled\",\"status\":\"False\",\"reason\":"
                                              "\"Unschedulable\"}]}}",
                                              record, &r, NULL),
                     0);
    wait_for(&r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(fair_kpod_decode(r.json, &pod, NULL), 0);
    assert_true(pod->scheduled_condition_false);
    assert_string_equal(pod->scheduled_reason, "Unschedulable");
    fair_kpod_free(pod);
    reset(&r);
    /* DELETE. */
    assert_int_equal(fair_kclient_delete(client, &fair_kres_pods, "team-a", "p1", record, &r, NULL),
                     0);
    wait_for(&r);
    assert_int_equal(r.rc, 0);
    reset(&r);
    /* Bad names never reach the wire. */
    struct fair_error err = {0};
    assert_int_equal(fair_kclient_get(client, &fair_kres_pods, "team-a", "../x", record, &r, &err),
                     FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "not a valid name"));
}

/* PUT with the resourceVersion we read; on 409 read again and retry. */
struct updater {
    int conflicts;
    int done;
    int rc;
};

static void test_conflict_retried_after_reread(void **state)
{
    (void)state;
    struct result r = {0};
    create_pod("c1", NULL);
    assert_int_equal(fair_kclient_get(client, &fair_kres_pods, "team-a", "c1", record, &r, NULL),
                     0);
    wait_for(&r);
    json_t *stale = json_incref(r.json);
    reset(&r);
    /* Someone else writes in between. */
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request_ct(&fake, "PATCH", "/api/v1/namespaces/team-a/pods/c1",
                                          "application/merge-patch+json",
                                          "{\"metadata\":{\"labels\":{\"other\":\"1\"}}}", &code,
                                          &resp),
                     0);
    free(resp);
    assert_int_equal(code, 200);
    int conflicts = 0;
    json_t *obj = stale;
    for (int attempt = 0; attempt < 5; attempt++) {
        json_object_set_new(
            json_object_get(obj, "metadata"), "labels",
            json_pack("{s:s, s:s}", "mine", "1", "other",
                      jpath(json_object_get(obj, "metadata"), "labels", "other")
                          ? jpath(json_object_get(obj, "metadata"), "labels", "other")
                          : ""));
        char *body = json_dumps(obj, JSON_COMPACT);
        assert_int_equal(fair_kclient_update(client, &fair_kres_pods, "team-a", "c1", NULL, body,
                                             record, &r, NULL),
                         0);
        free(body);
        wait_for(&r);
        if (r.rc != FAIR_ECONFLICT)
            break;
        conflicts++;
        assert_string_equal(r.reason, "Conflict");
        reset(&r);
        /* re-read */
        assert_int_equal(
            fair_kclient_get(client, &fair_kres_pods, "team-a", "c1", record, &r, NULL), 0);
        wait_for(&r);
        assert_int_equal(r.rc, 0);
        json_decref(obj);
        obj = json_incref(r.json);
        reset(&r);
    }
    json_decref(obj);
    assert_int_equal(conflicts, 1);
    assert_int_equal(r.rc, 0);
    json_t *labels = json_object_get(json_object_get(r.json, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "mine")), "1");
    assert_string_equal(json_string_value(json_object_get(labels, "other")), "1");
    reset(&r);
}

static void test_paged_list(void **state)
{
    (void)state;
    char name[32];
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof name, "page-%d", i);
        create_pod(name, "{\"set\":\"paged\"}");
    }
    struct fair_klist_opts o = {.label_selector = "set=paged", .limit = 3};
    int pages = 0, items = 0;
    char *cont = NULL;
    do {
        struct result r = {0};
        o.continue_token = cont;
        assert_int_equal(
            fair_kclient_list(client, &fair_kres_pods, "team-a", &o, record, &r, NULL, NULL), 0);
        wait_for(&r);
        assert_int_equal(r.rc, 0);
        pages++;
        items += (int)json_array_size(json_object_get(r.json, "items"));
        fair_free(cont);
        const char *c = jpath(r.json, "metadata", "continue");
        cont = c && c[0] ? fair_strdup(c) : NULL;
        reset(&r);
    } while (cont);
    assert_int_equal(pages, 3);
    assert_int_equal(items, 7);
}

/* Streamed pages: items arrive one by one through the Pod filter, the
 * list's metadata comes with the done callback; a page over max_body fails
 * with FAIR_ERANGE unless it holds one item; an item over max_event is
 * handed out unreadable, with its skeleton. */
struct streamed {
    int items, unreadable;
    char names[16][64];
    bool done;
    int rc;
    json_t *meta;
    size_t received;
};

static void on_streamed_object(const struct fair_klist_object *o, void *ctx)
{
    struct streamed *s = ctx;
    if (!o->object) {
        assert_int_equal(o->rc, FAIR_ERANGE);
        assert_non_null(strstr(o->why, "limit"));
        struct fair_kskeleton id;
        assert_int_equal(fair_kskeleton_decode(o->skeleton, &id), 0);
        assert_non_null(id.name);
        assert_non_null(id.uid);
        assert_string_equal(id.namespace_, "team-a");
        fair_kskeleton_release(&id);
        s->unreadable++;
        return;
    }
    assert_null(json_object_get(o->object, "managedFields"));
    struct fair_kpod *p = NULL;
    assert_int_equal(fair_kpod_decode(o->object, &p, NULL), 0);
    assert_true(s->items < 16);
    snprintf(s->names[s->items++], 64, "%s", p->meta.name);
    fair_kpod_free(p);
}

static void on_streamed_done(const struct fair_kresponse *resp, void *ctx)
{
    struct streamed *s = ctx;
    s->done = true;
    s->rc = resp->rc;
    s->received = resp->received;
    s->meta = resp->json ? json_incref(resp->json) : NULL;
}

static int stream_page(struct fair_kclient *kc, long limit, const char *cont, struct streamed *s)
{
    memset(s, 0, sizeof *s);
    struct fair_klist_opts o = {.label_selector = "set=paged",
                                .limit = limit,
                                .continue_token = cont,
                                .filter = fair_ktype_pod.filter};
    assert_int_equal(fair_kclient_list_stream(kc, &fair_kres_pods, "team-a", &o, on_streamed_object,
                                              on_streamed_done, s, NULL, NULL),
                     0);
    while (!s->done)
        assert_true(event_base_loop(base, EVLOOP_ONCE) >= 0);
    return s->rc;
}

static void test_streamed_list(void **state)
{
    (void)state;
    struct streamed s;
    int pages = 0, items = 0;
    char *cont = NULL;
    do {
        assert_int_equal(stream_page(client, 3, cont, &s), 0);
        pages++;
        items += s.items;
        assert_int_equal(s.unreadable, 0);
        assert_null(json_object_get(s.meta, "items"));
        assert_string_equal(jpath(s.meta, "kind", NULL), "PodList");
        assert_non_null(jpath(s.meta, "metadata", "resourceVersion"));
        assert_true(s.received > 0);
        fair_free(cont);
        const char *c = jpath(s.meta, "metadata", "continue");
        cont = c && c[0] ? fair_strdup(c) : NULL;
        json_decref(s.meta);
    } while (cont);
    assert_int_equal(pages, 3);
    assert_int_equal(items, 7);

    struct fair_kconfig cfg;
    struct fair_error err = {0};
    assert_int_equal(fair_kconfig_load_kubeconfig(fake.kubeconfig, NULL, &cfg, &err), 0);
    /* A page of 3 pods is more than 256 bytes: refused. One pod is more
     * too, but a page of one is read whatever its size. */
    struct fair_kclient_options co = {.max_body = 256};
    struct fair_kclient *small = NULL;
    assert_int_equal(fair_kclient_new(base, &cfg, &co, &small, &err), 0);
    assert_int_equal(stream_page(small, 3, NULL, &s), FAIR_ERANGE);
    assert_null(s.meta);
    assert_int_equal(stream_page(small, 1, NULL, &s), 0);
    assert_int_equal(s.items, 1);
    assert_true(s.received > 256);
    json_decref(s.meta);
    fair_kclient_free(small);
    /* Each pod keeps more than 64 bytes of the fields Fairshare reads: all
     * unreadable, named by their skeletons; the page itself succeeds. */
    struct fair_kclient_options tiny = {.max_event = 64};
    assert_int_equal(fair_kclient_new(base, &cfg, &tiny, &small, &err), 0);
    assert_int_equal(stream_page(small, 0, NULL, &s), 0);
    assert_int_equal(s.items, 0);
    assert_int_equal(s.unreadable, 7);
    json_decref(s.meta);
    struct fair_kclient_stats st;
    fair_kclient_stats(small, &st);
    assert_true(st.peak_buffer > 0 && st.peak_buffer <= FAIR_KLIST_MAX_META);
    fair_kclient_free(small);
    fair_kconfig_release(&cfg);
}

static void test_429_retry(void **state)
{
    (void)state;
    struct result r = {0};
    /* Two 429s with Retry-After: 1, then success: retried twice. */
    assert_int_equal(fair_fake_fail_next(&fake, 429, 2, "/api/v1/nodes", "GET", 1), 0);
    assert_int_equal(fair_kclient_get(client, &fair_kres_nodes, NULL, NULL, record, &r, NULL), 0);
    wait_for(&r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.retries, 2);
    assert_int_equal(json_array_size(json_object_get(r.json, "items")), 2);
    reset(&r);
    /* The same with retries turned off: the 429 surfaces. */
    assert_int_equal(fair_fake_fail_next(&fake, 429, 1, "/api/v1/nodes", "GET", 1), 0);
    assert_int_equal(fair_kclient_request(client, "GET", "/api/v1/nodes", NULL, NULL, 0,
                                          FAIR_KREQ_NO_RETRY_429, record, &r, NULL, NULL),
                     0);
    wait_for(&r);
    assert_int_equal(r.rc, FAIR_ETOOMANY);
    assert_int_equal(r.status, 429);
    assert_int_equal(r.retries, 0);
    reset(&r);
    /* Retries are bounded: with max_retries 2, the third 429 surfaces. */
    struct fair_kconfig cfg;
    struct fair_error cerr = {0};
    assert_int_equal(fair_kconfig_load_kubeconfig(fake.kubeconfig, NULL, &cfg, &cerr), 0);
    struct fair_kclient_options o = {.max_retries = 2};
    struct fair_kclient *c2;
    assert_int_equal(fair_kclient_new(base, &cfg, &o, &c2, &cerr), 0);
    fair_kconfig_release(&cfg);
    assert_int_equal(fair_fake_fail_next(&fake, 429, 3, "/api/v1/nodes", "GET", 0), 0);
    assert_int_equal(fair_kclient_get(c2, &fair_kres_nodes, NULL, NULL, record, &r, NULL), 0);
    wait_for(&r);
    assert_int_equal(r.rc, FAIR_ETOOMANY);
    assert_int_equal(r.retries, 2);
    reset(&r);
    struct fair_kclient_stats st;
    fair_kclient_stats(c2, &st);
    assert_int_equal(st.requests, 3);
    assert_int_equal(st.retries_429, 2);
    fair_kclient_free(c2);
    /* 500: not retried by the client. */
    assert_int_equal(fair_fake_fail_next(&fake, 500, 1, "/api/v1/nodes", "GET", 0), 0);
    long status = 0;
    struct fair_error err = {0};
    assert_int_equal(
        fair_kclient_request_sync(client, "GET", "/api/v1/nodes", NULL, 0, &status, NULL, &err),
        FAIR_EHTTP);
    assert_int_equal(status, 500);
    assert_non_null(strstr(err.msg, "HTTP 500"));
    assert_int_equal(fair_fake_reset_faults(&fake), 0);
}

static void set_running_ready(const char *name)
{
    struct result r = {0};
    assert_int_equal(fair_kclient_merge_patch(client, &fair_kres_pods, "team-a", name, "status",
                                              "{\"status\":{\"phase\":\"Running\",\"conditions\":"
                                              "[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                                              record, &r, NULL),
                     0);
    wait_for(&r);
    assert_int_equal(r.rc, 0);
    reset(&r);
}

static void test_bind_evict_pdb(void **state)
{
    (void)state;
    struct result r = {0};
    create_pod("e1", "{\"app\":\"guarded\"}");
    create_pod("e2", "{\"app\":\"free\"}");
    /* Bind e1 with an annotation carried by the Binding. */
    const char *kv[] = {"fairshare.dev/gpu-devices", "0"};
    assert_int_equal(
        fair_kclient_bind(client, "team-a", "e1", NULL, "node-0000", kv, 1, record, &r, NULL), 0);
    wait_for(&r);
    if (r.rc)
        fail_msg("bind: %s", r.msg);
    reset(&r);
    assert_int_equal(
        fair_kclient_bind(client, "team-a", "e2", NULL, "node-0001", NULL, 0, record, &r, NULL), 0);
    wait_for(&r);
    assert_int_equal(r.rc, 0);
    reset(&r);
    assert_int_equal(fair_kclient_get(client, &fair_kres_pods, "team-a", "e1", record, &r, NULL),
                     0);
    wait_for(&r);
    struct fair_kpod *pod = NULL;
    assert_int_equal(fair_kpod_decode(r.json, &pod, NULL), 0);
    assert_string_equal(pod->node_name, "node-0000");
    /* The API server copies the Binding's annotations onto the pod. */
    assert_string_equal(pod->gpu_devices, "0");
    fair_kpod_free(pod);
    reset(&r);
    /* Binding it again: 409. */
    assert_int_equal(
        fair_kclient_bind(client, "team-a", "e1", NULL, "node-0001", NULL, 0, record, &r, NULL), 0);
    wait_for(&r);
    assert_int_equal(r.rc, FAIR_ECONFLICT);
    reset(&r);
    set_running_ready("e1");
    set_running_ready("e2");
    /* A PDB that allows no disruption of app=guarded. */
    struct fair_error err = {0};
    long status = 0;
    assert_int_equal(fair_kclient_request_sync(
                         client, "POST", "/apis/policy/v1/namespaces/team-a/poddisruptionbudgets",
                         "{\"apiVersion\":\"policy/v1\",\"kind\":"
                         "\"PodDisruptionBudget\",\"metadata\":{\"name\":\"guard\"},"
                         "\"spec\":{\"minAvailable\":1,\"selector\":{\"matchLabels\":{"
                         "\"app\":\"guarded\"}}}}",
                         0, &status, NULL, &err),
                     0);
    assert_int_equal(status, 201);
    /* Eviction blocked: 429 reaches the caller at once, never retried. */
    assert_int_equal(fair_kclient_evict(client, "team-a", "e1", record, &r, NULL), 0);
    wait_for(&r);
    assert_int_equal(r.rc, FAIR_ETOOMANY);
    assert_int_equal(r.status, 429);
    assert_int_equal(r.retries, 0);
    assert_non_null(strstr(r.msg, "disruption budget"));
    reset(&r);
    /* The unguarded pod is evicted. */
    assert_int_equal(fair_kclient_evict(client, "team-a", "e2", record, &r, NULL), 0);
    wait_for(&r);
    assert_int_equal(r.rc, 0);
    reset(&r);
    assert_int_equal(fair_kclient_get(client, &fair_kres_pods, "team-a", "e2", record, &r, NULL),
                     0);
    wait_for(&r);
    assert_int_equal(r.rc, FAIR_ENOTFOUND); /* grace 0: gone at once */
    reset(&r);
}

static void test_event_and_lease(void **state)
{
    (void)state;
    struct result r = {0};
    struct fair_kevent_ref ref = {"v1", "Pod", "team-a", "e1", NULL};
    assert_int_equal(fair_kclient_event(client, &ref, "Warning", "OverQuota",
                                        "queue q1 is at its limit", "fairshare", record, &r, NULL),
                     0);
    wait_for(&r);
    if (r.rc)
        fail_msg("event: %s", r.msg);
    assert_string_equal(jpath(r.json, "reason", NULL), "OverQuota");
    assert_string_equal(jpath(r.json, "involvedObject", "name"), "e1");
    reset(&r);
    assert_int_equal(fair_kclient_create(client, &fair_kres_leases, "team-a",
                                         "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":"
                                         "\"Lease\",\"metadata\":{\"name\":\"l1\"},\"spec\":{"
                                         "\"holderIdentity\":\"me\"}}",
                                         record, &r, NULL),
                     0);
    wait_for(&r);
    assert_int_equal(r.rc, 0);
    reset(&r);
    /* Custom resources through generic paths. */
    assert_int_equal(fair_kclient_create(client, &fair_kres_projects, NULL,
                                         "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":"
                                         "\"Project\",\"metadata\":{\"name\":\"vision\"},"
                                         "\"spec\":{\"guaranteed\":{\"gpu\":2}}}",
                                         record, &r, NULL),
                     0);
    wait_for(&r);
    if (r.rc)
        fail_msg("project: %s", r.msg);
    struct fair_kproject *p = NULL;
    assert_int_equal(fair_kproject_decode(r.json, &p, NULL), 0);
    assert_int_equal(p->quota.guaranteed.v[FAIR_RES_GPU], 2000);
    fair_kproject_free(p);
    reset(&r);
}

static void test_wrong_ca(void **state)
{
    (void)state;
    /* A second fake server has its own CA: trusting only that one must
     * fail TLS against the first. */
    struct fair_fake other;
    assert_int_equal(fair_fake_start(&other, NULL), 0);
    char *other_ca = NULL;
    size_t other_len = 0;
    struct fair_error err = {0};
    assert_int_equal(fair_read_file(other.ca_path, 1 << 20, &other_ca, &other_len, &err), 0);
    assert_int_equal(fair_fake_stop(&other), 0);
    fair_fake_release(&other);
    struct fair_kconfig cfg;
    assert_int_equal(fair_kconfig_load_kubeconfig(fake.kubeconfig, NULL, &cfg, &err), 0);
    fair_free(cfg.ca);
    cfg.ca = other_ca;
    cfg.ca_len = other_len;
    struct fair_kclient *c2;
    assert_int_equal(fair_kclient_new(base, &cfg, NULL, &c2, &err), 0);
    assert_int_equal(
        fair_kclient_request_sync(c2, "GET", "/api/v1/nodes", NULL, 0, NULL, NULL, &err),
        FAIR_ETLS);
    assert_non_null(strstr(err.msg, "TLS to https://127.0.0.1:"));
    assert_non_null(strstr(err.msg, "check the CA of kubeconfig"));
    fair_kclient_free(c2);
    /* The system's CAs do not know the test CA either. */
    fair_free(cfg.ca);
    cfg.ca = NULL;
    cfg.ca_len = 0;
    assert_int_equal(fair_kclient_new(base, &cfg, NULL, &c2, &err), 0);
    fair_kconfig_release(&cfg);
    assert_int_equal(
        fair_kclient_request_sync(c2, "GET", "/api/v1/nodes", NULL, 0, NULL, NULL, &err),
        FAIR_ETLS);
    fair_kclient_free(c2);
}

static void test_rate_limit(void **state)
{
    (void)state;
    /* A client with 20 QPS and a burst of 2: 6 requests need 4 waits. */
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    assert_int_equal(fair_kconfig_load_kubeconfig(fake.kubeconfig, NULL, &cfg, &err), 0);
    struct fair_kclient_options o = {.qps = 20, .burst = 2};
    struct fair_kclient *c2;
    assert_int_equal(fair_kclient_new(base, &cfg, &o, &c2, &err), 0);
    fair_kconfig_release(&cfg);
    struct result r[6];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 6; i++)
        assert_int_equal(fair_kclient_get(c2, &fair_kres_nodes, NULL, NULL, record, &r[i], NULL),
                         0);
    for (int i = 0; i < 6; i++) {
        wait_for(&r[i]);
        assert_int_equal(r[i].rc, 0);
        reset(&r[i]);
    }
    struct fair_kclient_stats st;
    fair_kclient_stats(c2, &st);
    assert_int_equal(st.requests, 6);
    assert_int_equal(st.throttled, 4);
    fair_kclient_free(c2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crud_and_errors),
        cmocka_unit_test(test_conflict_retried_after_reread),
        cmocka_unit_test(test_paged_list),
        cmocka_unit_test(test_streamed_list),
        cmocka_unit_test(test_429_retry),
        cmocka_unit_test(test_bind_evict_pdb),
        cmocka_unit_test(test_event_and_lease),
        cmocka_unit_test(test_wrong_ca),
        cmocka_unit_test(test_rate_limit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
