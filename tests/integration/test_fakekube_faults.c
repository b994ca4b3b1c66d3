/* Integration tests of the fake API server's fault injection, restarts,
 * authentication and TLS, limits and the simulated kubelet. Each test gets
 * its own server process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "helper_fakekube.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static struct fair_fake fake;

static int setup(void **state)
{
    (void)state;
    struct fair_fake_opts o = {.nodes = 2,
                               .gpus_per_node = 8,
                               .kubelet = 1,
                               .kubelet_delay_ms = 50,
                               .grace_seconds = 1,
                               .bookmark_ms = 100};
    return fair_fake_start(&fake, &o);
}

static int teardown(void **state)
{
    (void)state;
    int rc = fair_fake_stop(&fake);
    fair_fake_release(&fake);
    return rc;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void create_pod_exit(const char *name, const char *duration, const char *exit_code)
{
    char body[1024];
    long code = 0;
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"annotations\":{\"sim.fairshare.dev/duration-seconds\":\"%s\","
             "\"sim.fairshare.dev/exit-code\":\"%s\"}},\"spec\":{"
             "\"schedulerName\":\"fairshare\",\"containers\":[{\"name\":\"main\",\"image\":"
             "\"trainer\"}]}}",
             name, duration, exit_code);
    json_t *r =
        fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/default/pods", body, &code);
    assert_int_equal(code, 201);
    json_decref(r);
}

static void create_pod(const char *name, const char *duration)
{
    create_pod_exit(name, duration, "0");
}

struct raw_result {
    long code;
    CURLcode cr;
    char retry_after[32];
};

static size_t header_cb(char *buf, size_t size, size_t n, void *ud)
{
    struct raw_result *r = ud;
    size_t len = size * n;
    if (len > 12 && strncasecmp(buf, "Retry-After:", 12) == 0) {
        size_t vl = len - 12;
        const char *v = buf + 12;
        while (vl && *v == ' ') {
            v++;
            vl--;
        }
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
            vl--;
        snprintf(r->retry_after, sizeof(r->retry_after), "%.*s", (int)vl, v);
    }
    return len;
}

static size_t discard_cb(char *buf, size_t size, size_t n, void *ud)
{
    (void)buf;
    (void)ud;
    return size * n;
}

/* A GET with its own handle: a chosen CA, a chosen token (NULL: none). */
static struct raw_result raw_get(const char *path, const char *ca, const char *token)
{
    struct raw_result r;
    memset(&r, 0, sizeof(r));
    char url[512], auth[256];
    snprintf(url, sizeof(url), "%s%s", fake.base_url, path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    if (token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    r.cr = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return r;
}

static void test_auth_and_tls(void **state)
{
    (void)state;
    struct raw_result r = raw_get("/api/v1/nodes", fake.ca_path, "wrong");
    assert_int_equal(r.cr, CURLE_OK);
    assert_int_equal(r.code, 401);
    r = raw_get("/api/v1/nodes", fake.ca_path, NULL);
    assert_int_equal(r.code, 401);
    r = raw_get("/api/v1/nodes", fake.ca_path, fake.token);
    assert_int_equal(r.code, 200);
    long code = 0;
    json_t *st = fair_fake_request_json(&fake, "GET", "/api/v1/nodes", NULL, &code);
    assert_int_equal(code, 200);
    assert_int_equal(json_array_size(json_object_get(st, "items")), 2);
    json_t *node = json_array_get(json_object_get(st, "items"), 1);
    assert_string_equal(fair_fake_json_str(node, "metadata.name"), "node-0001");
    json_decref(st);

    /* Another fake server has another CA: verification must fail. */
    struct fair_fake other;
    assert_int_equal(fair_fake_start(&other, NULL), 0);
    r = raw_get("/api/v1/nodes", other.ca_path, fake.token);
    assert_int_equal(r.cr, CURLE_PEER_FAILED_VERIFICATION);
    assert_int_equal(r.code, 0);
    assert_int_equal(fair_fake_stop(&other), 0);
    fair_fake_release(&other);
}

static void test_node_allocatable(void **state)
{
    (void)state;
    long code = 0;
    json_t *n = fair_fake_request_json(&fake, "GET", "/api/v1/nodes/node-0000", NULL, &code);
    assert_int_equal(code, 200);
    json_t *alloc = json_object_get(json_object_get(n, "status"), "allocatable");
    assert_string_equal(json_string_value(json_object_get(alloc, "nvidia.com/gpu")), "8");
    assert_string_equal(json_string_value(json_object_get(alloc, "pods")), "110");
    json_t *labels = json_object_get(json_object_get(n, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "nvidia.com/gpu.product")),
                        "NVIDIA-H100-80GB-HBM3");
    json_decref(n);
}

static void test_fail_500_and_429(void **state)
{
    (void)state;
    long code = 0;
    assert_int_equal(fair_fake_fail_next(&fake, 500, 2, "/api/v1/nodes", "GET", 0), 0);
    json_t *r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces", NULL, &code);
    assert_int_equal(code, 200); /* other paths are not affected */
    json_decref(r);
    for (int i = 0; i < 2; i++) {
        r = fair_fake_request_json(&fake, "GET", "/api/v1/nodes", NULL, &code);
        assert_int_equal(code, 500);
        assert_string_equal(fair_fake_json_str(r, "reason"), "InternalError");
        json_decref(r);
    }
    r = fair_fake_request_json(&fake, "GET", "/api/v1/nodes", NULL, &code);
    assert_int_equal(code, 200);
    json_decref(r);

    assert_int_equal(fair_fake_fail_next(&fake, 429, 1, NULL, NULL, 7), 0);
    struct raw_result rr = raw_get("/api/v1/pods", fake.ca_path, fake.token);
    assert_int_equal(rr.code, 429);
    assert_string_equal(rr.retry_after, "7");
    rr = raw_get("/api/v1/pods", fake.ca_path, fake.token);
    assert_int_equal(rr.code, 200);

    /* Verb filter: only POSTs fail. */
    assert_int_equal(fair_fake_fail_next(&fake, 503, 1, NULL, "POST", 0), 0);
    r = fair_fake_request_json(&fake, "GET", "/api/v1/pods", NULL, &code);
    assert_int_equal(code, 200);
    json_decref(r);
    r = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces",
                               "{\"metadata\":{\"name\":\"x\"}}", &code);
    assert_int_equal(code, 503);
    json_decref(r);

    /* A prefix ending in '$' is the whole path: the namespace's GET is
     * refused (403, as a quota refuses), one below it is not. */
    assert_int_equal(fair_fake_fail_next(&fake, 403, 2, "/api/v1/namespaces$", "GET", 0), 0);
    r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/default", NULL, &code);
    assert_int_equal(code, 200);
    json_decref(r);
    r = fair_fake_request_json(&fake, "GET", "/api/v1/namespaces", NULL, &code);
    assert_int_equal(code, 403);
    assert_string_equal(fair_fake_json_str(r, "reason"), "Forbidden");
    json_decref(r);
    assert_int_equal(fair_fake_reset_faults(&fake), 0);
}

static void test_latency(void **state)
{
    (void)state;
    long code = 0;
    assert_int_equal(fair_fake_set_latency(&fake, 300), 0);
    long long t0 = mono_ms();
    json_t *r = fair_fake_request_json(&fake, "GET", "/api/v1/nodes", NULL, &code);
    long long took = mono_ms() - t0;
    assert_int_equal(code, 200);
    json_decref(r);
    /* The injected latency is a lower bound on the answer time. */
    assert_true(took >= 300);
    assert_int_equal(fair_fake_set_latency(&fake, 0), 0);
}

static void test_drop_watches(void **state)
{
    (void)state;
    struct fair_fake_watch *w1 =
        fair_fake_watch_open(&fake, "/api/v1/pods?watch=1&allowWatchBookmarks=true");
    struct fair_fake_watch *w2 = fair_fake_watch_open(&fake, "/api/v1/nodes?watch=true");
    assert_non_null(w1);
    assert_non_null(w2);
    json_t *ev = NULL;
    /* w2 starts with the two nodes as synthetic ADDED events. */
    assert_int_equal(fair_fake_watch_next(w2, &ev, 5000), 1);
    assert_string_equal(fair_fake_json_str(ev, "type"), "ADDED");
    json_decref(ev);
    assert_int_equal(fair_fake_drop_watches(&fake, 1), 2);
    int rc;
    while ((rc = fair_fake_watch_next(w1, &ev, 5000)) == 1)
        json_decref(ev); /* bookmarks sent before the drop */
    assert_int_equal(rc, -1);
    while ((rc = fair_fake_watch_next(w2, &ev, 5000)) == 1)
        json_decref(ev);
    assert_int_equal(rc, -1);
    fair_fake_watch_close(w1);
    fair_fake_watch_close(w2);

    /* A clean end of stream (mode=end) also works. */
    w1 = fair_fake_watch_open(&fake, "/api/v1/pods?watch=1");
    assert_int_equal(fair_fake_drop_watches(&fake, 0), 1);
    assert_int_equal(fair_fake_watch_next(w1, &ev, 5000), -1);
    assert_int_equal(fair_fake_watch_http_status(w1), 200);
    fair_fake_watch_close(w1);

    long code = 0;
    json_t *st = fair_fake_request_json(&fake, "GET", "/fake/stats", NULL, &code);
    assert_int_equal(json_integer_value(json_object_get(st, "watchers")), 0);
    json_decref(st);
}

static void test_restart_keeps_state(void **state)
{
    (void)state;
    long code = 0;
    create_pod("keeper", "1000");
    json_t *before =
        fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/default/pods/keeper", NULL, &code);
    assert_int_equal(code, 200);
    assert_int_equal(fair_fake_stop(&fake), 0);
    assert_int_equal(fair_fake_restart(&fake), 0);
    json_t *after =
        fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/default/pods/keeper", NULL, &code);
    assert_int_equal(code, 200);
    assert_string_equal(fair_fake_json_str(after, "metadata.uid"),
                        fair_fake_json_str(before, "metadata.uid"));
    assert_string_equal(fair_fake_json_str(after, "metadata.resourceVersion"),
                        fair_fake_json_str(before, "metadata.resourceVersion"));
    unsigned long long old_rv =
        strtoull(fair_fake_json_str(before, "metadata.resourceVersion"), NULL, 10);
    json_decref(before);
    json_decref(after);

    /* The counter continues; the watch history does not survive. */
    create_pod("second", "1000");
    json_t *l = fair_fake_request_json(&fake, "GET", "/api/v1/pods", NULL, &code);
    assert_true(strtoull(fair_fake_json_str(l, "metadata.resourceVersion"), NULL, 10) > old_rv);
    assert_int_equal(json_array_size(json_object_get(l, "items")), 2);
    json_decref(l);
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/pods?watch=1&resourceVersion=%llu", old_rv - 1);
    struct fair_fake_watch *w = fair_fake_watch_open(&fake, path);
    json_t *ev = NULL;
    assert_int_equal(fair_fake_watch_next(w, &ev, 5000), 1);
    assert_string_equal(fair_fake_json_str(ev, "type"), "ERROR");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "object"), "code")),
                     410);
    json_decref(ev);
    fair_fake_watch_close(w);

    /* After a crash, what was persisted survives. */
    json_t *p = fair_fake_request_json(&fake, "POST", "/fake/persist", NULL, &code);
    assert_int_equal(code, 200);
    json_decref(p);
    json_t *before_kill = fair_fake_state(&fake, "pods");
    unsigned long long rv_at_kill =
        strtoull(fair_fake_json_str(before_kill, "resourceVersion"), NULL, 10);
    json_decref(before_kill);
    assert_int_equal(fair_fake_kill9(&fake), 0);
    assert_int_equal(fair_fake_restart(&fake), 0);
    json_t *dump = fair_fake_state(&fake, "pods");
    assert_non_null(dump);
    /* Saved while running: resourceVersions skip ahead so none is reused. */
    assert_true(strtoull(fair_fake_json_str(dump, "resourceVersion"), NULL, 10) >=
                rv_at_kill + 100000);
    assert_int_equal(json_array_size(json_object_get(json_object_get(dump, "objects"), "pods")), 2);
    json_decref(dump);
}

static json_t *wait_for_phase(const char *name, const char *phase)
{
    char path[128];
    long code = 0;
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
    for (int i = 0; i < 600; i++) {
        json_t *p = fair_fake_request_json(&fake, "GET", path, NULL, &code);
        const char *ph = fair_fake_json_str(p, "status.phase");
        if (ph && strcmp(ph, phase) == 0)
            return p;
        json_decref(p);
        sleep_ms(50);
    }
    fail_msg("pod %s never reached phase %s", name, phase);
    return NULL;
}

static void test_kubelet(void **state)
{
    (void)state;
    long code = 0;
    create_pod("short", "1");
    /* Unbound: stays Pending. */
    json_t *p =
        fair_fake_request_json(&fake, "GET", "/api/v1/namespaces/default/pods/short", NULL, &code);
    assert_string_equal(fair_fake_json_str(p, "status.phase"), "Pending");
    char wpath[160];
    snprintf(wpath, sizeof(wpath),
             "/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%%3Dshort&"
             "resourceVersion=%s",
             fair_fake_json_str(p, "metadata.resourceVersion"));
    json_decref(p);
    struct fair_fake_watch *w = fair_fake_watch_open(&fake, wpath);
    assert_non_null(w);
    p = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/default/pods/short/binding",
                               "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{"
                               "\"name\":\"short\"},\"target\":{\"name\":\"node-0001\"}}",
                               &code);
    assert_int_equal(code, 201);
    json_decref(p);
    /* Follow the pod's updates: Running, then Succeeded. */
    int running = 0, succeeded = 0;
    json_t *ev = NULL;
    while (!succeeded && fair_fake_watch_next(w, &ev, 10000) == 1) {
        json_t *obj = json_object_get(ev, "object");
        const char *phase = fair_fake_json_str(obj, "status.phase");
        if (phase && !strcmp(phase, "Running") && !running) {
            running = 1;
            assert_non_null(fair_fake_json_str(obj, "status.startTime"));
            json_t *conds = json_object_get(json_object_get(obj, "status"), "conditions");
            int ready = 0;
            size_t i;
            json_t *c;
            json_array_foreach(conds, i, c)
            {
                if (!strcmp(fair_fake_json_str(c, "type"), "Ready") &&
                    !strcmp(fair_fake_json_str(c, "status"), "True"))
                    ready = 1;
            }
            assert_true(ready);
        } else if (phase && !strcmp(phase, "Succeeded")) {
            assert_true(running); /* never Succeeded without Running first */
            assert_string_equal(fair_fake_json_str(obj, "spec.nodeName"), "node-0001");
            succeeded = 1;
        }
        json_decref(ev);
    }
    fair_fake_watch_close(w);
    assert_true(running);
    assert_true(succeeded);
    p = wait_for_phase("short", "Succeeded");
    json_decref(p);

    /* With an exit code the pod fails instead. */
    create_pod_exit("crash", "0", "3");
    p = fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/default/pods/crash/binding",
                               "{\"metadata\":{\"name\":\"crash\"},\"target\":{\"name\":"
                               "\"node-0000\"}}",
                               &code);
    assert_int_equal(code, 201);
    json_decref(p);
    p = wait_for_phase("crash", "Failed");
    json_t *cs =
        json_array_get(json_object_get(json_object_get(p, "status"), "containerStatuses"), 0);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(cs, "state"), "terminated"), "exitCode")),
                     3);
    json_decref(p);
}

static void test_limits(void **state)
{
    (void)state;
    size_t n = (size_t)4 << 20;
    char *big = malloc(n + 64);
    assert_non_null(big);
    int w = snprintf(big, 64, "{\"metadata\":{\"name\":\"big\"},\"data\":{\"x\":\"");
    memset(big + w, 'a', n);
    snprintf(big + w + n, 8, "\"}}");
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request(&fake, "POST", "/api/v1/namespaces/default/configmaps", big,
                                       &code, &resp),
                     0);
    assert_int_equal(code, 413);
    free(resp);
    free(big);

    /* Bodies must be JSON. */
    assert_int_equal(fair_fake_request_ct(&fake, "POST", "/api/v1/namespaces/default/configmaps",
                                          "text/plain", "{\"metadata\":{\"name\":\"t\"}}", &code,
                                          &resp),
                     0);
    assert_int_equal(code, 415);
    free(resp);

    /* Deeply nested JSON is refused, not crashed on. */
    char deep[4096];
    size_t k = 0;
    k += (size_t)snprintf(deep, sizeof(deep), "{\"metadata\":{\"name\":\"deep\"},\"data\":");
    for (int d = 0; d < 150; d++)
        deep[k++] = '[';
    for (int d = 0; d < 150; d++)
        deep[k++] = ']';
    deep[k++] = '}';
    deep[k] = '\0';
    json_t *r =
        fair_fake_request_json(&fake, "POST", "/api/v1/namespaces/default/configmaps", deep, &code);
    assert_int_equal(code, 400);
    json_decref(r);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_auth_and_tls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_allocatable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_500_and_429, setup, teardown),
        cmocka_unit_test_setup_teardown(test_latency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_watches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_keeps_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kubelet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
