/* The controller end to end against the fake API server: fractional GPUs
 * packed on shared devices, a gang placed all at once, non-preemptible pods
 * kept within guaranteed, namespace isolation and unknown queues told
 * through Events and the PodScheduled condition, and an invalid Queue's
 * status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

static void two_teams(struct fair_fake *fake, const char *ga, const char *gb)
{
    const char *ns[] = {"team-a", "team-b", NULL};
    mk_namespaces(fake, ns);
    mk_project(fake, "a", ga, "[\"team-a\"]", "qa");
    mk_project(fake, "b", gb, "[\"team-b\"]", NULL);
    mk_queue(fake, "qa", "a", ga, 1);
    mk_queue(fake, "qb", "b", gb, 1);
}

static void test_fractions_packed(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 2, 8, "fractions");
    two_teams(&fake, "8", "8");
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "half-%d", i);
        mk_pod_full(&fake, "team-a", name, "qa", NULL, "0.5", NULL, NULL, 0);
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 4, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("fractional pods not bound");
    }
    /* Four halves fill exactly two devices of one node. */
    char *node0 = NULL;
    char seen[4][80];
    int nseen = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "half-%d", i);
        char *dev = NULL;
        char *node = pod_node(&fake, "team-a", name, &dev);
        assert_non_null(dev);
        assert_int_equal(strchr(dev, ',') == NULL, 1); /* one device each */
        if (!node0)
            node0 = strdup(node);
        assert_string_equal(node, node0);
        char key[80];
        snprintf(key, sizeof key, "%s/%s", node, dev);
        bool dup = false;
        for (int k = 0; k < nseen; k++)
            dup |= strcmp(seen[k], key) == 0;
        if (!dup)
            snprintf(seen[nseen++], sizeof seen[0], "%s", key);
        free(node);
        free(dev);
    }
    free(node0);
    assert_int_equal(nseen, 2);
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qa", "allocated", "2"), WAIT_MS));
    /* The default queue: a pod without the label lands in qa too. */
    mk_pod(&fake, "team-a", "defaulted", NULL, "1");
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qa", "allocated", "3"), WAIT_MS));
    stop_all(&fake, &c);
}

static bool is_bound(struct fair_fake *f, const char *ns, const char *name)
{
    char *node = pod_node(f, ns, name, NULL);
    bool bound = node && *node;
    free(node);
    return bound;
}

/* A bind answered 409 Conflict means the pod is already bound (or was
 * replaced) and the controller's cache is behind. It must not bind the pod
 * again every cycle: the pod counts as bound until the watch shows it or
 * inFlightTimeout passes, and only then is it planned again. */
static void test_bind_conflict_not_retried(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    config_write(c.config, sizeof c.config, &fake, "conflict",
                 "inFlightTimeout: 12s\ncycleInterval: 200ms\n");
    const char *extra[] = {"--leader-elect=false", NULL};
    assert_int_equal(ctl_start_args(&c, &fake, "conflict", extra), 0);
    assert_true(WAIT_UNTIL(ctl_ready(&c), WAIT_MS));
    two_teams(&fake, "8", "8");
    assert_int_equal(fair_fake_fail_next(&fake, 409, 1000,
                                         "/api/v1/namespaces/team-a/pods/stale/binding", "POST", 0),
                     0);
    mk_pod(&fake, "team-a", "stale", "qa", "1");
    if (!WAIT_UNTIL(ctl_metric(&c, "fairshare_bind_conflicts_total") >= 1, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("no bind conflict seen");
    }
    long long t0 = now_ms();
    double cycles = ctl_metric(&c, "fairshare_cycles_total");
    /* Another pod still binds, and cycles go on... */
    mk_pod(&fake, "team-a", "fresh", "qa", "1");
    assert_true(WAIT_UNTIL(is_bound(&fake, "team-a", "fresh"), WAIT_MS));
    assert_true(WAIT_UNTIL(ctl_metric(&c, "fairshare_cycles_total") >= cycles + 5, WAIT_MS));
    /* ...without a second bind of the conflicting pod (inFlightTimeout is
     * 12 s; the old behaviour retried on the next cycle). */
    assert_true(now_ms() - t0 < 12000);
    assert_true(ctl_metric(&c, "fairshare_bind_conflicts_total") == 1);
    assert_true(ctl_metric(&c, "fairshare_bind_errors_total") == 1);
    assert_false(is_bound(&fake, "team-a", "stale"));
    /* Once the timeout passes, the pod is planned again and binds. */
    assert_int_equal(fair_fake_reset_faults(&fake), 0);
    if (!WAIT_UNTIL(is_bound(&fake, "team-a", "stale"), 2 * WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the pod was never bound after the conflict");
    }
    assert_true(now_ms() - t0 >= 10000);
    assert_true(ctl_metric(&c, "fairshare_bind_conflicts_total") == 1);
    stop_all(&fake, &c);
}

static void test_gang(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 2, 8, "gang");
    two_teams(&fake, "8", "8");
    const char *gang = ",\"fairshare.dev/gang\":\"job1\",\"fairshare.dev/gang-size\":\"3\"";
    mk_pod_full(&fake, "team-a", "w-0", "qa", "4", NULL, NULL, gang, 0);
    mk_pod_full(&fake, "team-a", "w-1", "qa", "4", NULL, NULL, gang, 0);
    /* Two of three: nobody starts, and they say why. */
    if (!WAIT_UNTIL(pod_condition_is(&fake, "team-a", "w-0", "PodScheduled", "GangIncomplete") &&
                        pod_condition_is(&fake, "team-a", "w-1", "PodScheduled", "GangIncomplete"),
                    WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("no GangIncomplete condition");
    }
    /* w-1's event, not w-0's: on a loaded machine a cycle can run between
     * the two creations, and w-0's one event then says "1 of its 3" (the
     * event is not repeated for the same reason). When w-1 is first seen,
     * w-0 is already known: its event says 2 of 3 whatever the timing. */
    assert_true(WAIT_UNTIL(count_events(&fake, "FailedScheduling", "team-a", "w-1") >= 1, WAIT_MS));
    char *msg = event_message(&fake, "FailedScheduling", "team-a", "w-1");
    assert_non_null(msg);
    assert_non_null(strstr(msg, "gang incomplete: gang team-a/job1 has 2 of its 3 pods"));
    free(msg);
    assert_int_equal(count_pods(&fake, "team-a", 1), 0);
    mk_pod_full(&fake, "team-a", "w-2", "qa", "4", NULL, NULL, gang, 0);
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 3, WAIT_MS));
    /* 12 GPUs: A borrowed 4 of B's idle guarantee to start the gang. */
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qa", "borrowed", "4"), WAIT_MS));
    stop_all(&fake, &c);
}

static void test_non_preemptible(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 2, 8, "nonpre");
    two_teams(&fake, "2", "14");
    const char *np = ",\"fairshare.dev/preemptible\":\"false\"";
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "nb-%d", i);
        mk_pod_full(&fake, "team-a", name, "qa", "1", NULL, np, NULL, 0);
    }
    /* Only the guaranteed 2 run, although 14 GPUs are idle. */
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 2, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("not 2 bound");
    }
    const char *pending = NULL;
    char *n2 = pod_node(&fake, "team-a", "nb-2", NULL);
    pending = *n2 ? NULL : "nb-2";
    free(n2);
    if (!pending) {
        char *n1 = pod_node(&fake, "team-a", "nb-1", NULL);
        pending = *n1 ? "nb-0" : "nb-1";
        free(n1);
    }
    assert_true(WAIT_UNTIL(
        pod_condition_is(&fake, "team-a", pending, "PodScheduled", "OverGuarantee"), WAIT_MS));
    assert_true(
        WAIT_UNTIL(count_events(&fake, "FailedScheduling", "team-a", pending) >= 1, WAIT_MS));
    char *msg = event_message(&fake, "FailedScheduling", "team-a", pending);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "non-preemptible pods run only within guaranteed GPUs"));
    free(msg);
    /* B takes everything it can; A's non-preemptible pods are never evicted. */
    for (int i = 0; i < 16; i++) {
        char name[32];
        snprintf(name, sizeof name, "b-%02d", i);
        mk_pod(&fake, "team-b", name, "qb", "1");
    }
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 14, WAIT_MS));
    nap(500); /* a few more cycles */
    assert_int_equal(count_pods(&fake, "team-a", 1), 2);
    assert_int_equal(count_events(&fake, "Preempted", NULL, NULL), 0);
    stop_all(&fake, &c);
}

static void test_isolation_and_unknown_queue(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 1, 8, "isolation");
    two_teams(&fake, "4", "4");
    const char *ns[] = {"elsewhere", NULL};
    mk_namespaces(&fake, ns);
    mk_queue(&fake, "orphan", "no-such-project", "1", 1);
    mk_pod(&fake, "team-b", "sneaky", "qa", "1");   /* B's namespace, A's queue */
    mk_pod(&fake, "team-a", "typo", "q-a", "1");    /* no such queue */
    mk_pod(&fake, "elsewhere", "stray", NULL, "1"); /* no label, no project */
    mk_pod(&fake, "team-a", "lost", "orphan", "1"); /* queue of a missing project */
    mk_pod(&fake, "team-a", "fine", "qa", "1");
    if (!WAIT_UNTIL(
            pod_condition_is(&fake, "team-b", "sneaky", "PodScheduled", "NamespaceNotAllowed"),
            WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("no NamespaceNotAllowed condition");
    }
    assert_true(
        WAIT_UNTIL(count_events(&fake, "FailedScheduling", "team-b", "sneaky") >= 1, WAIT_MS));
    char *msg = event_message(&fake, "FailedScheduling", "team-b", "sneaky");
    assert_string_equal(msg, "namespace not allowed: namespace team-b is not in project a's "
                             "namespaces, so it cannot use queue qa");
    free(msg);
    assert_true(WAIT_UNTIL(
        pod_condition_is(&fake, "team-a", "typo", "PodScheduled", "UnknownQueue"), WAIT_MS));
    assert_true(WAIT_UNTIL(
        pod_condition_is(&fake, "elsewhere", "stray", "PodScheduled", "UnknownQueue"), WAIT_MS));
    assert_true(WAIT_UNTIL(
        pod_condition_is(&fake, "team-a", "lost", "PodScheduled", "InvalidQueue"), WAIT_MS));
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 1, WAIT_MS));
    assert_int_equal(count_pods(&fake, "team-b", 1), 0);
    assert_int_equal(count_pods(&fake, "elsewhere", 1), 0);
    /* The orphan queue reports why it is unusable. */
    json_t *st = NULL;
    assert_true(WAIT_UNTIL((json_decref(st), st = queue_status(&fake, "orphan")) != NULL &&
                               json_array_size(json_object_get(st, "conditions")) == 3,
                           WAIT_MS));
    json_t *cond;
    size_t i;
    bool invalid_seen = false;
    json_array_foreach(json_object_get(st, "conditions"), i, cond)
    {
        const char *t = json_string_value(json_object_get(cond, "type"));
        const char *s = json_string_value(json_object_get(cond, "status"));
        if (strcmp(t, "Invalid") == 0) {
            invalid_seen = true;
            assert_string_equal(s, "True");
            assert_string_equal(json_string_value(json_object_get(cond, "message")),
                                "project no-such-project does not exist");
        }
        if (strcmp(t, "Ready") == 0)
            assert_string_equal(s, "False");
    }
    assert_true(invalid_seen);
    json_decref(st);
    /* Events are not repeated every cycle: one per pod and reason. */
    nap(1500);
    assert_int_equal(count_events(&fake, "FailedScheduling", "team-b", "sneaky"), 1);
    stop_all(&fake, &c);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fractions_packed, tc_teardown),
        cmocka_unit_test_teardown(test_gang, tc_teardown),
        cmocka_unit_test_teardown(test_bind_conflict_not_retried, tc_teardown),
        cmocka_unit_test_teardown(test_non_preemptible, tc_teardown),
        cmocka_unit_test_teardown(test_isolation_and_unknown_queue, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
