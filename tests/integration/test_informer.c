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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_informer_under_faults),
        cmocka_unit_test(test_oversized_event_relists),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
