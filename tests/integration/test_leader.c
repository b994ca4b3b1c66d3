/* Integration tests of lib/cache/leader.c against the fake API server:
 * two candidates on one Lease; the holder releases it on a clean stop and
 * the other takes over; a leader that cannot renew (the server fails every
 * Lease request) steps down while the Lease still names it, and a new
 * candidate takes over once the Lease has expired. Short durations keep
 * the test fast. */
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

#include "base/clock.h"
#include "base/log.h"
#include "cache/leader.h"
#include "kube/client.h"
#include "kube/config.h"

static struct fair_fake fake;
static struct event_base *base;
static struct fair_kclient *client;

struct cand {
    struct fair_leader *l;
    int started, stopped, released;
    char seen_leader[64];
};

static void started(void *ctx)
{
    ((struct cand *)ctx)->started++;
}

static void stopped(void *ctx)
{
    ((struct cand *)ctx)->stopped++;
}

static void new_leader(const char *id, void *ctx)
{
    snprintf(((struct cand *)ctx)->seen_leader, 64, "%s", id);
}

static void released(void *ctx)
{
    ((struct cand *)ctx)->released++;
}

static int setup(void **state)
{
    (void)state;
    fair_log_set_level(getenv("FAIR_TEST_LOG") ? FAIR_LOG_DEBUG : FAIR_LOG_ERROR);
    if (fair_fake_start(&fake, NULL) != 0 || fair_fake_create_namespace(&fake, "fairshare"))
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

static void new_cand(struct cand *c, const char *id)
{
    memset(c, 0, sizeof *c);
    struct fair_leader_options o = {.ns = "fairshare",
                                    .name = "fairshare-controller",
                                    .identity = id,
                                    .lease_ms = 2000,
                                    .renew_deadline_ms = 1200,
                                    .retry_ms = 200};
    struct fair_leader_callbacks cb = {started, stopped, new_leader, c};
    struct fair_error err = {0};
    assert_int_equal(fair_leader_new(client, &o, &cb, &c->l, &err), 0);
    assert_string_equal(fair_leader_identity(c->l), id);
    assert_int_equal(fair_leader_start(c->l, &err), 0);
}

static void run_ms(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

/* Runs the loop until *flag becomes non-zero; fails after 20 s. */
static void run_until(const int *flag, const char *what)
{
    int64_t deadline = fair_mono_ms(fair_clock_system()) + 20000;
    while (!*flag) {
        run_ms(20);
        if (fair_mono_ms(fair_clock_system()) > deadline)
            fail_msg("timed out waiting for %s", what);
    }
}

static json_t *lease_spec(void)
{
    long code = 0;
    json_t *l = fair_fake_request_json(&fake, "GET",
                                       "/apis/coordination.k8s.io/v1/namespaces/fairshare/leases/"
                                       "fairshare-controller",
                                       NULL, &code);
    assert_int_equal(code, 200);
    json_t *spec = json_incref(json_object_get(l, "spec"));
    json_decref(l);
    return spec;
}

static void test_handover_and_lost_lease(void **state)
{
    (void)state;
    struct cand a, b, c;
    new_cand(&a, "pod-a");
    run_until(&a.started, "pod-a to lead");
    assert_true(fair_leader_is_leader(a.l));
    json_t *spec = lease_spec();
    assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "pod-a");
    assert_int_equal(json_integer_value(json_object_get(spec, "leaseDurationSeconds")), 2);
    json_decref(spec);

    /* b campaigns while a renews: b never leads. */
    new_cand(&b, "pod-b");
    run_ms(2500); /* longer than the lease: a's renewals keep it */
    assert_int_equal(b.started, 0);
    assert_string_equal(b.seen_leader, "pod-a");
    assert_true(fair_leader_is_leader(a.l));
    assert_int_equal(a.stopped, 0);

    /* a shuts down cleanly: it releases the Lease. */
    fair_leader_stop(a.l, released, &a);
    assert_int_equal(a.stopped, 1);
    assert_false(fair_leader_is_leader(a.l));
    run_until(&a.released, "pod-a to release");
    if (!b.started) {
        spec = lease_spec();
        /* Either still released, or b already took it. */
        const char *h = json_string_value(json_object_get(spec, "holderIdentity"));
        if (h && h[0])
            assert_string_equal(h, "pod-b");
        else
            assert_int_equal(json_integer_value(json_object_get(spec, "leaseDurationSeconds")), 1);
        json_decref(spec);
    }
    run_until(&b.started, "pod-b to take over");
    fair_leader_free(a.l);
    spec = lease_spec();
    assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "pod-b");
    assert_int_equal(json_integer_value(json_object_get(spec, "leaseTransitions")), 1);
    json_decref(spec);

    /* b cannot renew: every Lease request fails. It stops leading, and
     * at that point the Lease still names it (nobody else could write). */
    assert_int_equal(fair_fake_fail_next(&fake, 500, 1000000, "/apis/coordination.k8s.io", NULL, 0),
                     0);
    run_until(&b.stopped, "pod-b to step down");
    assert_false(fair_leader_is_leader(b.l));
    assert_int_equal(fair_fake_reset_faults(&fake), 0);
    spec = lease_spec();
    assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "pod-b");
    json_decref(spec);

    /* A new candidate takes over once the Lease has expired; b, having
     * lost, does not campaign again. */
    new_cand(&c, "pod-c");
    run_until(&c.started, "pod-c to take over");
    assert_int_equal(b.started, 1);
    spec = lease_spec();
    assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "pod-c");
    assert_int_equal(json_integer_value(json_object_get(spec, "leaseTransitions")), 2);
    json_decref(spec);
    fair_leader_stop(b.l, released, &b);
    run_until(&b.released, "pod-b to finish");
    fair_leader_stop(c.l, released, &c);
    run_until(&c.released, "pod-c to release");
    spec = lease_spec();
    assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "");
    json_decref(spec);
    fair_leader_free(b.l);
    fair_leader_free(c.l);
}

static void test_bad_options(void **state)
{
    (void)state;
    struct fair_leader *l = NULL;
    struct fair_error err = {0};
    struct fair_leader_options o = {.name = "x", .lease_ms = 1000, .renew_deadline_ms = 2000};
    assert_int_equal(fair_leader_new(client, &o, NULL, &l, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "renew deadline"));
    assert_null(l);
    setenv("POD_NAME", "from-env", 1);
    struct fair_leader_options d = {.name = "x"};
    assert_int_equal(fair_leader_new(client, &d, NULL, &l, &err), 0);
    assert_string_equal(fair_leader_identity(l), "from-env");
    fair_leader_free(l);
    unsetenv("POD_NAME");
}

/* ---- finding 7: renewals never wait behind bulk requests ---- */

static int flood_done;

static void flood_cb(const struct fair_kresponse *resp, void *ctx)
{
    (void)resp;
    (void)ctx;
    flood_done++;
}

static const char *renew_time(json_t *spec)
{
    return json_string_value(json_object_get(spec, "renewTime"));
}

/* With 300 ms of latency on every answer, 600 requests queued on a busy
 * client (4 connections: about 13 answers a second, so the queue lasts
 * 45 s) and a leader with a 2 s renew deadline on a client of its own, as
 * the controller sets them up: the leader keeps renewing (renewTime moves
 * on, again and again) and never steps down. A renewal queued behind the
 * flood would wait far past the deadline. */
static void test_renewals_do_not_wait_behind_bulk(void **state)
{
    (void)state;
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    assert_int_equal(fair_kconfig_load_kubeconfig(fake.kubeconfig, NULL, &cfg, &err), 0);
    struct fair_kclient_options bulk_opt = {.qps = -1, .max_host_connections = 4};
    struct fair_kclient *bulk = NULL;
    assert_int_equal(fair_kclient_new(base, &cfg, &bulk_opt, &bulk, &err), 0);
    /* The leader's own client, as lib/ctl/controller.c makes it. */
    struct fair_kclient_options lease_opt = {
        .qps = -1, .max_host_connections = 2, .request_timeout_ms = 2000};
    struct fair_kclient *lease_client = NULL;
    assert_int_equal(fair_kclient_new(base, &cfg, &lease_opt, &lease_client, &err), 0);
    fair_kconfig_release(&cfg);

    struct cand a;
    memset(&a, 0, sizeof a);
    struct fair_leader_options o = {.ns = "fairshare",
                                    .name = "flooded",
                                    .identity = "pod-f",
                                    .lease_ms = 3000,
                                    .renew_deadline_ms = 2000,
                                    .retry_ms = 300};
    struct fair_leader_callbacks cb = {started, stopped, new_leader, &a};
    assert_int_equal(fair_leader_new(lease_client, &o, &cb, &a.l, &err), 0);
    assert_int_equal(fair_leader_start(a.l, &err), 0);
    run_until(&a.started, "pod-f to lead");

    assert_int_equal(fair_fake_set_latency(&fake, 300), 0);
    flood_done = 0;
    for (int i = 0; i < 600; i++)
        assert_int_equal(fair_kclient_get(bulk, &fair_kres_nodes, NULL, NULL, flood_cb, NULL, &err),
                         0);
    char last[64] = "";
    int advances = 0;
    const char *path = "/apis/coordination.k8s.io/v1/namespaces/fairshare/leases/flooded";
    while (advances < 6) {
        run_ms(400);
        long code = 0;
        json_t *l = fair_fake_request_json(&fake, "GET", path, NULL, &code);
        assert_int_equal(code, 200);
        json_t *spec = json_object_get(l, "spec");
        assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "pod-f");
        const char *rt = renew_time(spec);
        assert_non_null(rt);
        if (strcmp(rt, last)) {
            snprintf(last, sizeof last, "%s", rt);
            advances++;
        }
        json_decref(l);
        if (a.stopped)
            fail_msg("the leader stepped down behind the flood (%d renewals seen)", advances);
    }
    /* The flood was still queued all along: the leader never waited for it. */
    assert_true(flood_done < 600);
    assert_true(fair_leader_is_leader(a.l));
    assert_int_equal(a.stopped, 0);
    assert_int_equal(fair_fake_reset_faults(&fake), 0);
    fair_leader_stop(a.l, released, &a);
    run_until(&a.released, "pod-f to release");
    fair_leader_free(a.l);
    fair_kclient_free(bulk); /* cancels what is left of the flood */
    fair_kclient_free(lease_client);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handover_and_lost_lease),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_renewals_do_not_wait_behind_bulk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
