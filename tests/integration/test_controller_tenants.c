/* Tenants are adversaries (issue 11, findings 1 and 2): what a bound pod is
 * charged as is fixed when the controller binds it, so a tenant who edits
 * the labels of its borrowed pods afterwards (preemptible "false", another
 * queue) still gives the GPUs back; a device annotation the controller did
 * not write (forged on our pod after the bind, or on a pod of another
 * scheduler) does not take whole nodes away; and the charges survive a
 * restart through the ledger. A fraction below fractions.minimum is refused
 * (finding 3), and with quota.chargeOtherSchedulers the GPU pods of other
 * schedulers count against their Project (finding 4). Each scenario failed
 * before the fix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

#include "ledger/ledger.h"

static void patch_pod(struct fair_fake *f, const char *ns, const char *name, const char *patch)
{
    char path[256];
    long code = 0;
    char *resp = NULL;
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    if (fair_fake_request_ct(f, "PATCH", path, "application/merge-patch+json", patch, &code,
                             &resp) != 0 ||
        code != 200) {
        fprintf(stderr, "PATCH %s -> %ld %s\n", path, code, resp ? resp : "");
        free(resp);
        fail_msg("could not patch a pod");
    }
    free(resp);
}

/* Two teams guaranteed 8 each; b borrows a's 8 GPUs with 16 pods. */
static void setup_teams(struct fair_fake *f, struct ctl *c, const char *tag)
{
    struct fair_fake_opts o = {.nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = -1};
    assert_int_equal(tc_fake_start(f, &o), 0);
    const char *ns[] = {"team-a", "team-b", NULL};
    mk_namespaces(f, ns);
    mk_project(f, "a", "8", "[\"team-a\"]", NULL);
    mk_project(f, "b", "8", "[\"team-b\"]", NULL);
    mk_queue(f, "qa", "a", "8", 1);
    mk_queue(f, "qb", "b", "8", 1);
    memset(c, 0, sizeof *c);
    assert_int_equal(ctl_start(c, f, tag), 0);
    if (!WAIT_UNTIL(ctl_ready(c), WAIT_MS))
        fail_msg("controller not ready");
    char name[64];
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "b-%02d", i);
        mk_pod(f, "team-b", name, "qb", "1");
    }
    if (!WAIT_UNTIL(count_pods(f, "team-b", 1) == 16, WAIT_MS)) {
        ctl_dump_log(c, 40);
        fail_msg("b's pods were not all bound");
    }
}

/* b's borrowed pods turn themselves non-preemptible, and half move to a
 * queue that does not exist: a still gets its 8 GPUs back, by evicting 8
 * of b's pods. (Before: the non-preemptible ones could not be reclaimed,
 * and the relabelled ones were charged to no one.) */
static void test_label_edits_after_bind(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    setup_teams(&fake, &c, "labels");
    char name[64];
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "b-%02d", i);
        patch_pod(&fake, "team-b", name,
                  i % 2 ? "{\"metadata\":{\"labels\":{\"fairshare.dev/preemptible\":\"false\"}}}"
                        : "{\"metadata\":{\"labels\":{\"fairshare.dev/queue\":\"no-such-queue\","
                          "\"fairshare.dev/preemptible\":\"false\"}}}");
    }
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "a-%02d", i);
        mk_pod(&fake, "team-a", name, "qa", "1");
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 8, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("a got %d of its 8 GPUs back", count_pods(&fake, "team-a", 1));
    }
    assert_true(WAIT_UNTIL(count_original_pods(&fake, "team-b") == 8, WAIT_MS));
    /* b is still charged for what it runs, under its own queue. */
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qb", "allocated", "8"), WAIT_MS));
    assert_int_equal(ctl_stop(&c), 0);
}

/* The same edits made while the controller is down: the restarted
 * controller reads the charges from its ledger, not from the labels. */
static void test_charges_survive_a_restart(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    setup_teams(&fake, &c, "restart");
    /* Let the ledger commit the binds, then stop. */
    nap(1500);
    assert_int_equal(ctl_stop(&c), 0);
    char name[64];
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "b-%02d", i);
        patch_pod(&fake, "team-b", name,
                  "{\"metadata\":{\"labels\":{\"fairshare.dev/preemptible\":\"false\"}}}");
    }
    assert_int_equal(ctl_start(&c, &fake, "restart"), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS))
        fail_msg("controller not ready after the restart");
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "a-%02d", i);
        mk_pod(&fake, "team-a", name, "qa", "1");
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 8, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("after a restart, a got %d of its 8 GPUs back", count_pods(&fake, "team-a", 1));
    }
    assert_int_equal(ctl_stop(&c), 0);
}

/* A pod of another scheduler placed on node-0000 with 1 GPU claims all 8
 * devices, and one of our bound pods claims all 8 of node-0001 after its
 * bind. Neither claim is honoured: 14 of the 16 GPUs are still given to
 * team a's pods (before: both nodes looked full and a's pods waited with
 * NoNodeFits while GPUs sat free). */
static void test_forged_devices(void **state)
{
    (void)state;
    static struct fair_fake fake;
    struct fair_fake_opts o = {.nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = -1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"team-a", "other", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "16", "[\"team-a\"]", NULL);
    mk_queue(&fake, "qa", "a", "16", 1);
    /* Another scheduler's pod, already on node-0000, claiming every device. */
    must_create(&fake, "/api/v1/namespaces/other/pods",
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"squatter\","
                "\"annotations\":{\"fairshare.dev/gpu-devices\":\"0,1,2,3,4,5,6,7\"}},"
                "\"spec\":{\"nodeName\":\"node-0000\",\"containers\":[{\"name\":\"m\","
                "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
    static struct ctl c;
    memset(&c, 0, sizeof c);
    assert_int_equal(ctl_start(&c, &fake, "devices"), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS))
        fail_msg("controller not ready");
    mk_pod(&fake, "team-a", "first", "qa", "1");
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 1, WAIT_MS));
    /* Our pod's devices are the ones its charge recorded at bind time; the
     * edit below changes nothing (and is not even looked at). */
    patch_pod(&fake, "team-a", "first",
              "{\"metadata\":{\"annotations\":{\"fairshare.dev/gpu-devices\":"
              "\"0,1,2,3,4,5,6,7\"}}}");
    char name[64];
    for (int i = 0; i < 14; i++) {
        snprintf(name, sizeof name, "w-%02d", i);
        mk_pod(&fake, "team-a", name, "qa", "1");
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 15, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("%d of team a's 15 pods bound; forged device sets were honoured",
                 count_pods(&fake, "team-a", 1));
    }
    assert_int_equal(ctl_stop(&c), 0);
}

/* A fraction below the minimum (0.05 GPU by default) stays pending with
 * reason InvalidPod and a message naming the minimum; 0.05 itself is
 * placed. (Before: "1e-9" and "0.0001" were placed and charged 0.001.) */
static void test_tiny_fraction(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = -1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "8", "[\"team-a\"]", NULL);
    mk_queue(&fake, "qa", "a", "8", 1);
    memset(&c, 0, sizeof c);
    assert_int_equal(ctl_start(&c, &fake, "fraction"), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS))
        fail_msg("controller not ready");
    mk_pod_full(&fake, "team-a", "nano", "qa", NULL, "1e-9", NULL, NULL, 0);
    mk_pod_full(&fake, "team-a", "tiny", "qa", NULL, "0.0001", NULL, NULL, 0);
    mk_pod_full(&fake, "team-a", "small", "qa", NULL, "0.05", NULL, NULL, 0);
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 1, WAIT_MS));
    char *node = pod_node(&fake, "team-a", "small", NULL);
    assert_string_not_equal(node, "");
    free(node);
    assert_true(
        WAIT_UNTIL(pod_condition_is(&fake, "team-a", "nano", "PodScheduled", "InvalidPod") &&
                       pod_condition_is(&fake, "team-a", "tiny", "PodScheduled", "InvalidPod"),
                   WAIT_MS));
    char *msg = NULL;
    if (!WAIT_UNTIL((free(msg), msg = event_message(&fake, "FailedScheduling", "team-a", "tiny")),
                    WAIT_MS))
        fail_msg("no FailedScheduling Event for the tiny fraction");
    assert_non_null(strstr(msg, "at least 0.05 GPU"));
    free(msg);
    assert_int_equal(count_pods(&fake, "team-a", 1), 1);
    assert_int_equal(ctl_stop(&c), 0);
}

struct other_seen {
    int open;
    char project[32];
    int64_t gpu_milli;
    bool non_preemptible;
};

static int other_interval(void *ctx, const struct fair_ledger_interval_info *in)
{
    struct other_seen *s = ctx;
    if (strcmp(in->pod, "other") != 0)
        return 0;
    s->open++;
    snprintf(s->project, sizeof s->project, "%s", in->project);
    s->gpu_milli = in->gpu_milli;
    s->non_preemptible = in->non_preemptible;
    return 0;
}

/* Team b (limit 8 GPUs) runs 6 GPUs through another scheduler and asks for
 * 8 more through Fairshare. With quota.chargeOtherSchedulers the 6 count:
 * only 2 of b's Fairshare pods are placed, qb shows 8 allocated, and the
 * ledger holds a non-preemptible interval of the other pod for project b.
 * Without it (the default) all 8 are placed and b runs 14 GPUs. */
static int other_scheduler_run(bool charge, const char *tag)
{
    static struct fair_fake fake;
    static struct ctl c;
    memset(&fake, 0, sizeof fake);
    struct fair_fake_opts o = {.nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = -1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"team-b", NULL};
    mk_namespaces(&fake, ns);
    must_create(&fake, "/apis/fairshare.dev/v1alpha1/projects",
                "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\","
                "\"metadata\":{\"name\":\"b\"},\"spec\":{\"namespaces\":[\"team-b\"],"
                "\"guaranteed\":{\"gpu\":\"4\"},\"limit\":{\"gpu\":\"8\"},"
                "\"defaultQueue\":\"qb\"}}");
    mk_queue(&fake, "qb", "b", "4", 1);
    must_create(&fake, "/api/v1/namespaces/team-b/pods",
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"other\"},"
                "\"spec\":{\"nodeName\":\"node-0000\",\"containers\":[{\"name\":\"m\","
                "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"6\"}}}]}}");
    memset(&c, 0, sizeof c);
    config_write(c.config, sizeof c.config, &fake, tag, "quota:\n  chargeOtherSchedulers: %s\n",
                 charge ? "true" : "false");
    assert_int_equal(ctl_start(&c, &fake, tag), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("controller not ready");
    }
    char name[64];
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "b-%02d", i);
        mk_pod(&fake, "team-b", name, "qb", "1");
    }
    int want = charge ? 2 : 8;
    if (!WAIT_UNTIL(count_pods(&fake, "team-b", 1) == want + 1 &&
                        queue_gpu_is(&fake, "qb", "allocated", "8"),
                    WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("%s: %d of b's pods bound, want %d", tag, count_pods(&fake, "team-b", 1) - 1,
                 want);
    }
    nap(1500); /* more cycles: nothing else is placed; the ledger flushes */
    int bound = count_pods(&fake, "team-b", 1) - 1;
    assert_int_equal(ctl_stop(&c), 0);
    struct fair_ledger_options lo;
    fair_ledger_options_init(&lo);
    lo.path = c.ledger;
    lo.readonly = 1;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_open(&lo, &l, &err), 0);
    struct other_seen seen = {0};
    assert_int_equal(fair_ledger_open_intervals(l, other_interval, &seen, &err), 0);
    fair_ledger_free(l);
    if (charge) {
        assert_int_equal(seen.open, 1);
        assert_string_equal(seen.project, "b");
        assert_int_equal(seen.gpu_milli, 6000);
        assert_true(seen.non_preemptible);
    } else {
        assert_int_equal(seen.open, 0);
    }
    return bound;
}

static void test_other_schedulers_charged(void **state)
{
    (void)state;
    assert_int_equal(other_scheduler_run(true, "other-on"), 2);
}

static void test_other_schedulers_not_charged_by_default(void **state)
{
    (void)state;
    assert_int_equal(other_scheduler_run(false, "other-off"), 8);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_label_edits_after_bind, tc_teardown),
        cmocka_unit_test_teardown(test_charges_survive_a_restart, tc_teardown),
        cmocka_unit_test_teardown(test_forged_devices, tc_teardown),
        cmocka_unit_test_teardown(test_tiny_fraction, tc_teardown),
        cmocka_unit_test_teardown(test_other_schedulers_charged, tc_teardown),
        cmocka_unit_test_teardown(test_other_schedulers_not_charged_by_default, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
