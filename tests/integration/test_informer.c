/* Integration tests of lib/cache/informer.c against the fake API server:
 * a paged first list, then changes seen through the watch; then, under
 * injected faults (an abruptly dropped watch, 410 after history
 * compaction, 500s on the watch, a server restart), the store must end
 * equal to the server's state (/fake/state) and the handlers must have been
 * called exactly once per change made: no missed and no duplicated
 * events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helper_fakekube.h"
#include "helper_kclient.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "cache/informer.h"
#include "kube/client.h"
#include "kube/config.h"

static struct fair_fake fake;
static struct event_base *base;
static struct fair_kclient *client;
static struct fair_informer *inf;

/* Handler calls, and what the test expects from the changes it made. */
static int adds, updates, deletes, synced_calls;
static int exp_adds, exp_updates, exp_deletes;
static int bad_updates; /* on_update with the same resourceVersion */

static void on_add(void *obj, void *ctx)
{
    (void)obj;
    (void)ctx;
    adds++;
}

static void on_update(void *old, void *new_, void *ctx)
{
    (void)ctx;
    const char *a = fair_kobj_meta(old)->resource_version;
    const char *b = fair_kobj_meta(new_)->resource_version;
    if (!a || !b || !strcmp(a, b))
        bad_updates++;
    updates++;
}

static void on_delete(void *obj, void *ctx)
{
    (void)obj;
    (void)ctx;
    deletes++;
}

static void on_synced(void *ctx)
{
    (void)ctx;
    synced_calls++;
}

static int setup(void **state)
{
    (void)state;
    fair_log_set_level(getenv("FAIR_TEST_LOG") ? FAIR_LOG_DEBUG : FAIR_LOG_ERROR);
    struct fair_fake_opts o = {.grace_seconds = -1, .bookmark_ms = 200};
    if (fair_fake_start(&fake, &o) != 0 || fair_fake_create_namespace(&fake, "team-a"))
        return -1;
    base = event_base_new();
    return fair_fake_kclient_new(&fake, base, &client);
}

static int teardown(void **state)
{
    (void)state;
    fair_informer_free(inf);
    fair_kclient_free(client);
    event_base_free(base);
    int rc = fair_fake_stop(&fake);
    fair_fake_release(&fake);
    return rc;
}

/* ---- changes made on the server (synchronously, outside our loop) ---- */

static void fk_create(const char *name)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"fairshare.dev/queue\":\"q\"}},\"spec\":{\"schedulerName\":\"fairshare\","
             "\"containers\":[{\"name\":\"m\",\"image\":\"x\",\"resources\":{\"limits\":{"
             "\"nvidia.com/gpu\":\"1\"}}}]}}",
             name);
    long code = 0;
    char *resp = NULL;
    assert_int_equal(
        fair_fake_request(&fake, "POST", "/api/v1/namespaces/team-a/pods", body, &code, &resp), 0);
    if (code != 201)
        fail_msg("create %s: %ld %s", name, code, resp);
    free(resp);
    exp_adds++;
}

static void fk_patch(const char *name, int gen)
{
    char path[256], body[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/team-a/pods/%s", name);
    snprintf(body, sizeof body, "{\"metadata\":{\"labels\":{\"gen\":\"%d\"}}}", gen);
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request_ct(&fake, "PATCH", path, "application/merge-patch+json",
                                          body, &code, &resp),
                     0);
    if (code != 200)
        fail_msg("patch %s: %ld %s", name, code, resp);
    free(resp);
    exp_updates++;
}

static void fk_delete(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/team-a/pods/%s", name);
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request(&fake, "DELETE", path, NULL, &code, &resp), 0);
    if (code != 200)
        fail_msg("delete %s: %ld %s", name, code, resp);
    free(resp);
    exp_deletes++;
}

/* ---- comparing the store with the server ---- */

static bool store_equals_server(char *why, size_t n)
{
    json_t *st = fair_fake_state(&fake, "pods");
    json_t *pods = json_object_get(json_object_get(st, "objects"), "pods");
    struct fair_store *s = fair_informer_store(inf);
    bool ok = json_array_size(pods) == fair_store_len(s);
    if (!ok)
        snprintf(why, n, "server has %zu pods, store %zu", json_array_size(pods),
                 fair_store_len(s));
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p)
    {
        if (!ok)
            break;
        json_t *md = json_object_get(p, "metadata");
        const char *uid = json_string_value(json_object_get(md, "uid"));
        const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
        struct fair_kpod *mine = fair_store_get(s, uid);
        if (!mine || strcmp(mine->meta.resource_version, rv)) {
            snprintf(why, n, "pod %s: server rv %s, store %s",
                     json_string_value(json_object_get(md, "name")), rv,
                     mine ? mine->meta.resource_version : "(absent)");
            ok = false;
        }
    }
    json_decref(st);
    return ok;
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void run_ms(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

static bool counts_match(void)
{
    return adds == exp_adds && updates == exp_updates && deletes == exp_deletes;
}

/* Runs the loop until the handler counts and the store match the server
 * (bounded, so that a bug fails instead of hanging), then a little longer
 * to catch duplicated events, and checks again. */
static void settle(const char *phase)
{
    char why[256] = "";
    int64_t deadline = fair_mono_ms(fair_clock_system()) + 30000;
    struct event *t = event_new(base, -1, EV_PERSIST, tick, NULL);
    struct timeval tv = {0, 50000};
    event_add(t, &tv);
    for (;;) {
        run_ms(50);
        if (fair_informer_has_synced(inf) && counts_match() && store_equals_server(why, sizeof why))
            break;
        if (fair_mono_ms(fair_clock_system()) > deadline) {
            event_free(t);
            fail_msg("%s: not settled: adds %d/%d updates %d/%d deletes %d/%d; %s", phase, adds,
                     exp_adds, updates, exp_updates, deletes, exp_deletes, why);
        }
    }
    run_ms(400);
    event_free(t);
    if (!counts_match() || !store_equals_server(why, sizeof why))
        fail_msg("%s: after settling: adds %d/%d updates %d/%d deletes %d/%d; %s", phase, adds,
                 exp_adds, updates, exp_updates, deletes, exp_deletes, why);
    assert_int_equal(bad_updates, 0);
}

static void name(char *out, size_t n, const char *prefix, int i)
{
    snprintf(out, n, "%s-%d", prefix, i);
}

static void test_informer_under_faults(void **state)
{
    (void)state;
    char nm[64];
    struct fair_informer_stats st;
    /* 25 pods before the start: the first list takes 3 pages of 10. */
    for (int i = 0; i < 25; i++) {
        name(nm, sizeof nm, "pre", i);
        fk_create(nm);
    }
    struct fair_informer_options o = {
        .res = &fair_kres_pods,
        .type = &fair_ktype_pod,
        .ns = "team-a",
        .page_size = 10,
        .watch_timeout_s = 30,
        .backoff_base_ms = 50,
        .backoff_cap_ms = 400,
        .healthy_reset_ms = 2000,
    };
    struct fair_informer_handlers h = {on_add, on_update, on_delete, on_synced, NULL};
    struct fair_error err = {0};
    assert_int_equal(fair_informer_new(client, &o, &h, &inf, &err), 0);
    assert_false(fair_informer_has_synced(inf));
    assert_int_equal(fair_informer_start(inf, &err), 0);
    settle("first list");
    assert_int_equal(synced_calls, 1);
    fair_informer_get_stats(inf, &st);
    assert_int_equal(st.lists, 1);

    /* Changes through a healthy watch. */
    for (int i = 0; i < 5; i++) {
        name(nm, sizeof nm, "w", i);
        fk_create(nm);
        name(nm, sizeof nm, "pre", i);
        fk_patch(nm, 1);
    }
    fk_delete("pre-20");
    fk_delete("pre-21");
    fk_delete("w-0");
    settle("watch");
    fair_informer_get_stats(inf, &st);
    assert_int_equal(st.lists, 1);

    /* The watch is cut; changes happen while we are away; we resume from
     * the last resourceVersion and the server replays its history. */
    assert_true(fair_fake_drop_watches(&fake, 1) >= 1);
    fk_create("d-0");
    fk_create("d-1");
    fk_patch("pre-1", 2);
    fk_patch("w-1", 2);
    fk_delete("pre-22");
    fk_delete("d-1");
    settle("dropped watch");
    fair_informer_get_stats(inf, &st);
    assert_int_equal(st.lists, 1);
    assert_true(st.watches >= 2);

    /* Cut and compacted: the resume gets 410, and the relist's diff
     * produces exactly the missed adds, updates and deletions. */
    assert_true(fair_fake_drop_watches(&fake, 1) >= 1);
    fk_create("c-0");
    fk_create("c-1");
    fk_create("c-2");
    fk_patch("pre-2", 3);
    fk_patch("d-0", 3);
    fk_delete("pre-23");
    fk_delete("c-2");
    exp_adds--; /* c-2 was created and deleted while away: no trace */
    exp_deletes--;
    assert_int_equal(fair_fake_compact(&fake), 0);
    settle("410 after compaction");
    fair_informer_get_stats(inf, &st);
    assert_int_equal(st.lists, 2);
    assert_true(st.gone >= 1);

    /* 500s on the watch: backoff, then resume without loss. */
    uint64_t errors_before = st.errors;
    assert_int_equal(fair_fake_fail_next(&fake, 500, 3, "/api/v1/namespaces/team-a/pods", "GET", 0),
                     0);
    assert_true(fair_fake_drop_watches(&fake, 1) >= 1);
    fk_patch("pre-3", 4);
    fk_create("f-0");
    fk_delete("pre-24");
    settle("500s");
    assert_int_equal(fair_fake_reset_faults(&fake), 0);
    fair_informer_get_stats(inf, &st);
    assert_true(st.errors >= errors_before + 3);
    assert_int_equal(st.lists, 2);

    /* A server restart with changes we did not see: its history is gone,
     * so the resume gets 410 and we relist. */
    assert_true(fair_fake_drop_watches(&fake, 1) >= 1);
    fk_create("r-0");
    fk_patch("pre-4", 5);
    fk_delete("pre-5");
    assert_int_equal(fair_fake_stop(&fake), 0);
    run_ms(300); /* we notice the cut and retry against a dead server */
    assert_int_equal(fair_fake_restart(&fake), 0);
    settle("restart");
    fair_informer_get_stats(inf, &st);
    assert_true(st.lists >= 3);
    assert_int_equal(synced_calls, 1);
    /* Lookups by name work on the final store. */
    struct fair_kpod *p = fair_store_get_by_name(fair_informer_store(inf), "team-a", "r-0");
    assert_non_null(p);
    assert_string_equal(p->queue, "q");
    assert_null(fair_store_get_by_name(fair_informer_store(inf), "team-a", "pre-5"));
}

/* An event over the client's max_event drops the stream; the informer
 * relists and gets the object from the list instead. */
static int big_adds;

static void big_add(void *obj, void *ctx)
{
    (void)obj;
    (void)ctx;
    big_adds++;
}

static void test_oversized_event_relists(void **state)
{
    (void)state;
    assert_int_equal(fair_fake_create_namespace(&fake, "big"), 0);
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    assert_int_equal(fair_kconfig_load_kubeconfig(fake.kubeconfig, NULL, &cfg, &err), 0);
    struct fair_kclient_options co = {.max_event = 4096};
    struct fair_kclient *small = NULL;
    assert_int_equal(fair_kclient_new(base, &cfg, &co, &small, &err), 0);
    fair_kconfig_release(&cfg);
    struct fair_informer_options o = {.res = &fair_kres_pods,
                                      .type = &fair_ktype_pod,
                                      .ns = "big",
                                      .backoff_base_ms = 50,
                                      .backoff_cap_ms = 200};
    struct fair_informer_handlers h = {big_add, NULL, NULL, NULL, NULL};
    struct fair_informer *bi = NULL;
    assert_int_equal(fair_informer_new(small, &o, &h, &bi, &err), 0);
    assert_int_equal(fair_informer_start(bi, &err), 0);
    int64_t deadline = fair_mono_ms(fair_clock_system()) + 20000;
    while (!fair_informer_has_synced(bi) && fair_mono_ms(fair_clock_system()) < deadline)
        run_ms(20);
    assert_true(fair_informer_has_synced(bi));
    /* A pod with a 10 KB annotation: its watch event passes 4 KiB. */
    static char body[12000];
    char note[10001];
    memset(note, 'x', sizeof note - 1);
    note[sizeof note - 1] = '\0';
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"huge\","
             "\"annotations\":{\"note\":\"%s\"}},\"spec\":{\"containers\":[{\"name\":\"m\","
             "\"image\":\"x\"}]}}",
             note);
    long code = 0;
    char *resp = NULL;
    assert_int_equal(
        fair_fake_request(&fake, "POST", "/api/v1/namespaces/big/pods", body, &code, &resp), 0);
    free(resp);
    assert_int_equal(code, 201);
    struct fair_informer_stats st;
    do {
        run_ms(20);
        fair_informer_get_stats(bi, &st);
    } while ((st.lists < 2 || !fair_store_get_by_name(fair_informer_store(bi), "big", "huge")) &&
             fair_mono_ms(fair_clock_system()) < deadline);
    assert_true(st.lists >= 2);
    assert_true(st.errors >= 1);
    assert_non_null(fair_store_get_by_name(fair_informer_store(bi), "big", "huge"));
    run_ms(300);
    assert_int_equal(big_adds, 1);
    fair_informer_free(bi);
    fair_kclient_free(small);
}

/* ---- finding 6: no tenant object can stop the informer from syncing ---- */

/* A client with some options changed (fields left 0 keep the defaults). */
static struct fair_kclient *client_with(const struct fair_kclient_options *co)
{
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    struct fair_kclient *kc = NULL;
    assert_int_equal(fair_kconfig_load_kubeconfig(fake.kubeconfig, NULL, &cfg, &err), 0);
    assert_int_equal(fair_kclient_new(base, &cfg, co, &kc, &err), 0);
    fair_kconfig_release(&cfg);
    return kc;
}

/* The identity the server gave the last pod create_raw() made. */
static char last_uid[64], last_rv[32];

/* POSTs a pod to ns; extra is spliced into metadata (after the name) and
 * spec_extra into spec, both may be ""; env_value (may be NULL) becomes
 * the value of an environment variable. */
static void create_raw(const char *ns, const char *name, const char *meta_extra,
                       const char *spec_extra, const char *env_value)
{
    size_t n = strlen(meta_extra) + strlen(spec_extra) + (env_value ? strlen(env_value) : 0) + 1024;
    char *body = fair_malloc(n);
    snprintf(body, n,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"%s},"
             "\"spec\":{\"schedulerName\":\"other\"%s,\"containers\":[{\"name\":\"m\",\"image\":"
             "\"x\"%s%s%s,\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
             name, meta_extra, spec_extra,
             env_value ? ",\"env\":[{\"name\":\"BLOB\",\"value\":\"" : "",
             env_value ? env_value : "", env_value ? "\"}]" : "");
    char path[128];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request(&fake, "POST", path, body, &code, &resp), 0);
    if (code != 201)
        fail_msg("create %s/%s: %ld %.300s", ns, name, code, resp);
    json_t *j = json_loads(resp, 0, NULL);
    snprintf(last_uid, sizeof last_uid, "%s", fair_fake_json_str(j, "metadata.uid"));
    snprintf(last_rv, sizeof last_rv, "%s", fair_fake_json_str(j, "metadata.resourceVersion"));
    json_decref(j);
    free(resp);
    fair_free(body);
}

static void delete_all(const char *ns)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request(&fake, "DELETE", path, NULL, &code, &resp), 0);
    free(resp);
    assert_int_equal(code, 200);
}

/* Whether the store of i holds exactly the server's pods of ns (by uid
 * and resourceVersion), apart from the names in except. */
static bool store_matches(struct fair_informer *i, const char *ns, const char *const *except,
                          char *why, size_t n)
{
    json_t *st = fair_fake_state(&fake, "pods");
    json_t *pods = json_object_get(json_object_get(st, "objects"), "pods");
    struct fair_store *s = fair_informer_store(i);
    size_t want = 0;
    bool ok = true;
    size_t k;
    json_t *p;
    json_array_foreach(pods, k, p)
    {
        json_t *md = json_object_get(p, "metadata");
        const char *pns = json_string_value(json_object_get(md, "namespace"));
        const char *name = json_string_value(json_object_get(md, "name"));
        bool skip = strcmp(pns, ns) != 0;
        for (const char *const *e = except; !skip && e && *e; e++)
            skip = !strcmp(*e, name);
        if (skip)
            continue;
        want++;
        const char *uid = json_string_value(json_object_get(md, "uid"));
        const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
        struct fair_kpod *mine = fair_store_get(s, uid);
        if (ok && (!mine || strcmp(mine->meta.resource_version, rv))) {
            snprintf(why, n, "pod %s: server rv %s, store %s", name, rv,
                     mine ? mine->meta.resource_version : "(absent)");
            ok = false;
        }
    }
    if (ok && want != fair_store_len(s)) {
        snprintf(why, n, "server has %zu pods, store %zu", want, fair_store_len(s));
        ok = false;
    }
    json_decref(st);
    return ok;
}

static void run_until_synced(struct fair_informer *i, int seconds)
{
    int64_t deadline = fair_mono_ms(fair_clock_system()) + seconds * 1000;
    while (!fair_informer_has_synced(i) && fair_mono_ms(fair_clock_system()) < deadline)
        run_ms(50);
    if (!fair_informer_has_synced(i)) {
        struct fair_informer_stats st;
        fair_informer_get_stats(i, &st);
        fail_msg("not synced after %d s: lists %llu errors %llu gone %llu page size %ld", seconds,
                 (unsigned long long)st.lists, (unsigned long long)st.errors,
                 (unsigned long long)st.gone, fair_informer_page_size(i));
    }
}

static struct fair_informer *start_informer(struct fair_kclient *kc, const char *ns, long page,
                                            const struct fair_informer_handlers *h)
{
    struct fair_informer_options o = {.res = &fair_kres_pods,
                                      .type = &fair_ktype_pod,
                                      .ns = ns,
                                      .page_size = page,
                                      .backoff_base_ms = 50,
                                      .backoff_cap_ms = 400};
    struct fair_informer *i = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_informer_new(kc, &o, h, &i, &err), 0);
    assert_int_equal(fair_informer_start(i, &err), 0);
    return i;
}

/* The finding: 50 pending pods of another scheduler with 1.4 MiB of env
 * each (70 MiB, past the 64 MiB page cap at any page size above 45) next
 * to ordinary pods. With the default page size and client the informer
 * syncs, its store equals the server's pods, and the client never held
 * more than a few KiB of one response: env is skipped as it streams by. */
static void test_huge_env_pods_sync(void **state)
{
    (void)state;
    assert_int_equal(fair_fake_create_namespace(&fake, "env"), 0);
    size_t blob = (size_t)1400 * 1024;
    char *env = fair_malloc(blob + 1);
    memset(env, 'e', blob);
    env[blob] = '\0';
    char nm[64];
    /* What the server holds (nothing changes them afterwards): /fake/state
     * would be a 70 MiB answer, past the test helper's cap. */
    static char uids[70][64], rvs[70][32];
    for (int i = 0; i < 70; i++) {
        snprintf(nm, sizeof nm, i < 50 ? "big-%02d" : "small-%02d", i);
        create_raw("env", nm, "", "", i < 50 ? env : NULL);
        memcpy(uids[i], last_uid, sizeof uids[i]);
        memcpy(rvs[i], last_rv, sizeof rvs[i]);
    }
    fair_free(env);
    struct fair_kclient *kc = NULL;
    assert_int_equal(fair_fake_kclient_new(&fake, base, &kc), 0);
    struct fair_informer *i = start_informer(kc, "env", 0, NULL);
    run_until_synced(i, 240);
    assert_int_equal(fair_store_len(fair_informer_store(i)), 70);
    for (int k = 0; k < 70; k++) {
        struct fair_kpod *p = fair_store_get(fair_informer_store(i), uids[k]);
        if (!p || strcmp(p->meta.resource_version, rvs[k]))
            fail_msg("pod %d: server rv %s, store %s", k, rvs[k],
                     p ? p->meta.resource_version : "(absent)");
        assert_int_equal(p->request.v[FAIR_RES_GPU], 1000);
    }
    struct fair_informer_stats st;
    fair_informer_get_stats(i, &st);
    assert_int_equal(st.lists, 1);
    assert_int_equal(st.oversized, 0);
    assert_int_equal(st.decode_errors, 0);
    assert_true(st.page_shrinks >= 1); /* 70 MiB does not fit in one 64 MiB page */
    assert_int_equal(fair_informer_unreadable_count(i), 0);
    struct fair_kclient_stats cs;
    fair_kclient_stats(kc, &cs);
    if (cs.peak_buffer > 64 * 1024)
        fail_msg("the client held %llu bytes of one response", (unsigned long long)cs.peak_buffer);
    fair_informer_free(i);
    fair_kclient_free(kc);
    for (int k = 0; k < 70; k++) { /* one by one: the collection's answer is 70 MiB */
        char path[128];
        snprintf(path, sizeof path,
                 k < 50 ? "/api/v1/namespaces/env/pods/big-%02d"
                        : "/api/v1/namespaces/env/pods/small-%02d",
                 k);
        long code = 0;
        assert_int_equal(fair_fake_request(&fake, "DELETE", path, NULL, &code, NULL), 0);
        assert_int_equal(code, 200);
    }
}

/* A page over the byte cap is asked again with half the page size, down
 * to one object, and a page of one is read whatever its size. 30 pods of
 * ~5 KB and one of ~100 KB against a 64 KiB cap, 30 per page. */
static void test_page_halves_down_to_one(void **state)
{
    (void)state;
    assert_int_equal(fair_fake_create_namespace(&fake, "half"), 0);
    char *note = fair_malloc(100 * 1024 + 64);
    char nm[64];
    for (int i = 0; i < 30; i++) {
        size_t len = i == 17 ? 100 * 1024 : 5000;
        int o = snprintf(note, 64, ",\"annotations\":{\"note\":\"");
        memset(note + o, 'n', len);
        snprintf(note + o + len, 8, "\"}");
        snprintf(nm, sizeof nm, "p-%02d", i);
        create_raw("half", nm, note, "", NULL);
    }
    fair_free(note);
    struct fair_kclient_options co = {.max_body = 64 * 1024};
    struct fair_kclient *kc = client_with(&co);
    struct fair_informer *i = start_informer(kc, "half", 30, NULL);
    run_until_synced(i, 60);
    char why[256] = "";
    if (!store_matches(i, "half", NULL, why, sizeof why))
        fail_msg("store: %s", why);
    assert_non_null(fair_store_get_by_name(fair_informer_store(i), "half", "p-17"));
    struct fair_informer_stats st;
    fair_informer_get_stats(i, &st);
    assert_int_equal(st.lists, 1);
    /* p-17 alone passes the cap: only a page of one could bring it. */
    assert_true(st.page_shrinks >= 4);
    assert_int_equal(st.oversized, 0);
    fair_informer_free(i);
    fair_kclient_free(kc);
    delete_all("half");
}

/* An expired continue token mid-list restarts the list from the first
 * page, still paged: the whole list (~100 KB) does not fit the client's
 * 64 KiB cap, so one unpaged LIST could never succeed. Two expiries in a
 * row: the second restart waits for the backoff. */
static void test_expired_continue_relists_paged(void **state)
{
    (void)state;
    assert_int_equal(fair_fake_create_namespace(&fake, "exp"), 0);
    char note[1200];
    int o = snprintf(note, sizeof note, ",\"annotations\":{\"note\":\"");
    memset(note + o, 'n', 1000);
    snprintf(note + o + 1000, sizeof note - (size_t)o - 1000, "\"}");
    char nm[64];
    for (int i = 0; i < 60; i++) {
        snprintf(nm, sizeof nm, "p-%02d", i);
        create_raw("exp", nm, note, "", NULL);
    }
    long code = 0;
    char *resp = NULL;
    assert_int_equal(
        fair_fake_request(&fake, "POST", "/fake/expire-continue?count=2", NULL, &code, &resp), 0);
    free(resp);
    assert_int_equal(code, 200);
    struct fair_kclient_options co = {.max_body = 64 * 1024};
    struct fair_kclient *kc = client_with(&co);
    struct fair_informer *i = start_informer(kc, "exp", 10, NULL);
    run_until_synced(i, 60);
    char why[256] = "";
    if (!store_matches(i, "exp", NULL, why, sizeof why))
        fail_msg("store: %s", why);
    struct fair_informer_stats st;
    fair_informer_get_stats(i, &st);
    assert_int_equal(st.gone, 2);
    assert_int_equal(st.lists, 1);
    assert_int_equal(st.page_shrinks, 0);
    assert_int_equal(fair_informer_page_size(i), 10);
    fair_informer_free(i);
    fair_kclient_free(kc);
    delete_all("exp");
}

/* An object over the per-object cap (the client's max_event, 16 KiB here)
 * is skipped and counted, listed as unreadable with its identity and
 * node; everything else syncs. An object that becomes unreadable keeps
 * its last readable version in the store (no delete handler runs), and
 * leaves the unreadable set when it is readable again or deleted. */
static int over_deletes;

static void over_delete(void *obj, void *ctx)
{
    (void)obj;
    (void)ctx;
    over_deletes++;
}

static const struct fair_informer_unreadable *unreadable_named(struct fair_informer *i,
                                                               const char *name)
{
    for (size_t k = 0; k < fair_informer_unreadable_count(i); k++) {
        const struct fair_informer_unreadable *u = fair_informer_unreadable_at(i, k);
        if (u->id.name && !strcmp(u->id.name, name))
            return u;
    }
    return NULL;
}

static void patch_gang(const char *ns, const char *name, const char *value)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    size_t n = strlen(value) + 128;
    char *body = fair_malloc(n);
    snprintf(body, n, "{\"metadata\":{\"annotations\":{\"fairshare.dev/gang\":\"%s\"}}}", value);
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request_ct(&fake, "PATCH", path, "application/merge-patch+json",
                                          body, &code, &resp),
                     0);
    if (code != 200)
        fail_msg("patch %s: %ld %.300s", name, code, resp);
    free(resp);
    fair_free(body);
}

static void wait_for_cond(bool (*cond)(struct fair_informer *), struct fair_informer *i,
                          const char *what)
{
    int64_t deadline = fair_mono_ms(fair_clock_system()) + 30000;
    while (!cond(i)) {
        if (fair_mono_ms(fair_clock_system()) > deadline)
            fail_msg("timed out waiting for %s", what);
        run_ms(50);
    }
}

static bool two_unreadable(struct fair_informer *i)
{
    return unreadable_named(i, "n-0") && unreadable_named(i, "wide");
}

static bool only_n0_unreadable(struct fair_informer *i)
{
    return fair_informer_unreadable_count(i) == 1 && unreadable_named(i, "n-0");
}

static bool none_unreadable(struct fair_informer *i)
{
    char why[256];
    return fair_informer_unreadable_count(i) == 0 &&
           store_matches(i, "over", NULL, why, sizeof why);
}

static void test_oversized_object_skipped(void **state)
{
    (void)state;
    assert_int_equal(fair_fake_create_namespace(&fake, "over"), 0);
    /* nodeSelector is kept whole by the Pod filter: 1000 entries are about
     * 30 KB of kept fields. */
    size_t n = 1000 * 40 + 64;
    char *sel = fair_malloc(n);
    int o = snprintf(sel, n, ",\"nodeName\":\"node-7\",\"nodeSelector\":{");
    for (int k = 0; k < 1000; k++)
        o += snprintf(sel + o, n - (size_t)o, "%s\"example.com/k%04d\":\"v\"", k ? "," : "", k);
    snprintf(sel + o, n - (size_t)o, "}");
    create_raw("over", "wide", "", sel, NULL);
    fair_free(sel);
    char nm[64];
    for (int i = 0; i < 5; i++) {
        snprintf(nm, sizeof nm, "n-%d", i);
        create_raw("over", nm, "", "", NULL);
    }
    struct fair_kclient_options co = {.max_event = 16 * 1024};
    struct fair_kclient *kc = client_with(&co);
    struct fair_informer_handlers h = {NULL, NULL, over_delete, NULL, NULL};
    struct fair_informer *i = start_informer(kc, "over", 0, &h);
    run_until_synced(i, 30);
    const char *const wide[] = {"wide", NULL};
    char why[256] = "";
    if (!store_matches(i, "over", wide, why, sizeof why))
        fail_msg("store: %s", why);
    assert_null(fair_store_get_by_name(fair_informer_store(i), "over", "wide"));
    struct fair_informer_stats st;
    fair_informer_get_stats(i, &st);
    assert_int_equal(st.oversized, 1);
    assert_int_equal(fair_informer_unreadable_count(i), 1);
    const struct fair_informer_unreadable *u = unreadable_named(i, "wide");
    assert_non_null(u);
    assert_string_equal(u->id.namespace_, "over");
    assert_string_equal(u->id.node_name, "node-7");
    assert_string_equal(u->id.scheduler_name, "other");
    assert_non_null(u->id.uid);
    assert_non_null(u->id.resource_version);
    assert_true(u->bytes > 16 * 1024);
    assert_non_null(strstr(u->reason, "limit"));

    /* n-0 becomes unreadable: a 20 KB kept annotation. Its watch event is
     * over the cap too, so the informer relists; n-0's last readable
     * version stays, and no delete handler runs. */
    struct fair_kpod *before = fair_store_get_by_name(fair_informer_store(i), "over", "n-0");
    assert_non_null(before);
    char old_rv[64];
    snprintf(old_rv, sizeof old_rv, "%s", before->meta.resource_version);
    char *gang = fair_malloc(20001);
    memset(gang, 'g', 20000);
    gang[20000] = '\0';
    patch_gang("over", "n-0", gang);
    fair_free(gang);
    wait_for_cond(two_unreadable, i, "n-0 to become unreadable");
    struct fair_kpod *kept = fair_store_get_by_name(fair_informer_store(i), "over", "n-0");
    assert_non_null(kept);
    assert_string_equal(kept->meta.resource_version, old_rv);
    assert_int_equal(over_deletes, 0);

    /* wide is deleted: it leaves the set. n-0 readable again: it leaves
     * the set and the store has its new version. */
    long code = 0;
    char *resp = NULL;
    assert_int_equal(
        fair_fake_request(&fake, "DELETE", "/api/v1/namespaces/over/pods/wide", NULL, &code, &resp),
        0);
    free(resp);
    assert_int_equal(code, 200);
    wait_for_cond(only_n0_unreadable, i, "wide to leave the unreadable set");
    patch_gang("over", "n-0", "g");
    wait_for_cond(none_unreadable, i, "n-0 to be readable again");
    assert_int_equal(over_deletes, 0);
    fair_informer_free(i);
    fair_kclient_free(kc);
    delete_all("over");
}

/* ---- watches that hang or are cut after they worked ---- */

/* Polls until pod ns/name is in i's store, for at most ms; returns
 * whether it came. */
static bool wait_for_pod(struct fair_informer *i, const char *ns, const char *name, int ms)
{
    int64_t deadline = fair_mono_ms(fair_clock_system()) + ms;
    while (!fair_store_get_by_name(fair_informer_store(i), ns, name)) {
        if (fair_mono_ms(fair_clock_system()) > deadline)
            return false;
        run_ms(50);
    }
    return true;
}

/* Waits (at most 30 s) until i's current watch has delivered a bookmark
 * (the fake sends one every 200 ms): the watch is established. */
static void wait_for_bookmark(struct fair_informer *i)
{
    struct fair_informer_stats st;
    fair_informer_get_stats(i, &st);
    uint64_t before = st.bookmarks;
    int64_t deadline = fair_mono_ms(fair_clock_system()) + 30000;
    do {
        if (fair_mono_ms(fair_clock_system()) > deadline)
            fail_msg("no bookmark in 30 s");
        run_ms(50);
        fair_informer_get_stats(i, &st);
    } while (st.bookmarks == before);
}

/* The timeoutSeconds of the watches sent for namespace "stall". */
static long stall_timeouts[64];
static int nstall_timeouts;

static void note_watch_timeout(enum fair_kobserve what, const char *method, const char *path,
                               long status, void *ctx)
{
    (void)method;
    (void)status;
    (void)ctx;
    const char *t = strstr(path, "timeoutSeconds=");
    if (what == FAIR_KOBSERVE_SEND && strstr(path, "/namespaces/stall/") &&
        strstr(path, "watch=1") && t && nstall_timeouts < 64)
        stall_timeouts[nstall_timeouts++] = strtol(t + strlen("timeoutSeconds="), NULL, 10);
}

/* A watch that hangs (the connection stays open, nothing comes: no
 * event, no bookmark, no end) is closed after stall_timeout_ms and
 * watched again, and the change made meanwhile arrives. Without the stall
 * timer the informer would wait for curl's low-speed limit (660 s). */
static void test_hung_watch_is_restarted(void **state)
{
    (void)state;
    assert_int_equal(fair_fake_create_namespace(&fake, "stall"), 0);
    struct fair_informer_options o = {
        .res = &fair_kres_pods,
        .type = &fair_ktype_pod,
        .ns = "stall",
        .watch_timeout_s = 100,
        .stall_timeout_ms = 1000, /* five of the fake's bookmark periods */
        .backoff_base_ms = 60000, /* a backoff would fail the test */
    };
    struct fair_informer *i = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_informer_new(client, &o, NULL, &i, &err), 0);
    fair_kclient_set_observer(client, note_watch_timeout, NULL);
    assert_int_equal(fair_informer_start(i, &err), 0);
    while (!fair_informer_has_synced(i))
        run_ms(50);
    for (int round = 0; round < 3; round++) {
        wait_for_bookmark(i);
        long code = 0;
        char *resp = NULL;
        assert_int_equal(
            fair_fake_request(&fake, "POST", "/fake/stall-watches?resource=pods", "", &code, &resp),
            0);
        assert_int_equal(code, 200);
        json_t *j = json_loads(resp, 0, NULL);
        assert_true(json_integer_value(json_object_get(j, "stalled")) >= 1);
        json_decref(j);
        free(resp);
        char nm[32];
        snprintf(nm, sizeof nm, "s-%d", round);
        create_raw("stall", nm, "", "", NULL);
        if (!wait_for_pod(i, "stall", nm, 15000))
            fail_msg("round %d: pod %s not seen in 15 s: the hung watch was not restarted", round,
                     nm);
    }
    struct fair_informer_stats st;
    fair_informer_get_stats(i, &st);
    assert_true(st.stalls >= 3);
    assert_int_equal(st.lists, 1); /* watched again from its resourceVersion */
    /* Each watch asked for a random timeoutSeconds in [t, 2t), as
     * client-go does, so that watches do not all end together. */
    fair_kclient_set_observer(client, NULL, NULL);
    assert_true(nstall_timeouts >= 4);
    bool differ = false;
    for (int k = 0; k < nstall_timeouts; k++) {
        if (stall_timeouts[k] < 100 || stall_timeouts[k] >= 200)
            fail_msg("watch %d asked for timeoutSeconds=%ld, want [100, 200)", k,
                     stall_timeouts[k]);
        differ = differ || stall_timeouts[k] != stall_timeouts[0];
    }
    assert_true(differ);
    fair_informer_free(i);
    delete_all("stall");
}

/* A watch that was established (it delivered a bookmark) and is then cut
 * is resumed at once, as client-go does, however often it happens: the
 * backoff (20 s here) is only for watches that cannot be opened. */
static void test_cut_established_watch_resumes_at_once(void **state)
{
    (void)state;
    assert_int_equal(fair_fake_create_namespace(&fake, "cut"), 0);
    struct fair_informer_options o = {
        .res = &fair_kres_pods,
        .type = &fair_ktype_pod,
        .ns = "cut",
        .backoff_base_ms = 20000,
        .backoff_cap_ms = 40000,
        .healthy_reset_ms = 600000,
    };
    struct fair_informer *i = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_informer_new(client, &o, NULL, &i, &err), 0);
    assert_int_equal(fair_informer_start(i, &err), 0);
    while (!fair_informer_has_synced(i))
        run_ms(50);
    for (int round = 0; round < 4; round++) {
        wait_for_bookmark(i);
        assert_true(fair_fake_drop_watches(&fake, round % 2 == 0) >= 1);
        char nm[32];
        snprintf(nm, sizeof nm, "c-%d", round);
        create_raw("cut", nm, "", "", NULL);
        /* 10 s: half the backoff's base, less its jitter. */
        if (!wait_for_pod(i, "cut", nm, 10000))
            fail_msg("round %d (%s): pod %s not seen in 10 s: the informer backed off after a "
                     "watch that worked",
                     round, round % 2 == 0 ? "cut" : "ended", nm);
    }
    struct fair_informer_stats st;
    fair_informer_get_stats(i, &st);
    assert_int_equal(st.lists, 1);
    fair_informer_free(i);
    delete_all("cut");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_informer_under_faults),
        cmocka_unit_test(test_oversized_event_relists),
        cmocka_unit_test(test_expired_continue_relists_paged),
        cmocka_unit_test(test_page_halves_down_to_one),
        cmocka_unit_test(test_oversized_object_skipped),
        cmocka_unit_test(test_huge_env_pods_sync),
        cmocka_unit_test(test_hung_watch_is_restarted),
        cmocka_unit_test(test_cut_established_watch_resumes_at_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
