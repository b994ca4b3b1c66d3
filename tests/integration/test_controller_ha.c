/* The controller under failures: SIGKILL in the middle of a reclaim and a
 * restart (state rebuilt from the API, no bind or eviction repeated), the
 * API server restarting under it (watches relist, scheduling goes on), and
 * two replicas with leader election (exactly one acts; the other takes
 * over when the leader stops). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

static void teams(struct fair_fake *fake)
{
    const char *ns[] = {"team-a", "team-b", NULL};
    mk_namespaces(fake, ns);
    mk_project(fake, "a", "8", "[\"team-a\"]", NULL);
    mk_project(fake, "b", "8", "[\"team-b\"]", NULL);
    mk_queue(fake, "qa", "a", "8", 1);
    mk_queue(fake, "qb", "b", "8", 1);
}

static void submit(struct fair_fake *fake, const char *ns, const char *prefix, const char *queue,
                   int n, int grace)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%02d", prefix, i);
        mk_pod_full(fake, ns, name, queue, "1", NULL, NULL, NULL, grace);
    }
}

/* Every pod of ns has at most one Event of reason. */
static void at_most_one_event_each(struct fair_fake *fake, const char *ns, const char *prefix,
                                   int n, const char *reason)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%02d", prefix, i);
        int k = count_events(fake, reason, ns, name);
        if (k > 1)
            fail_msg("%s/%s has %d %s Events", ns, name, k, reason);
    }
}

static void test_kill9_and_restart(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 2, 8, "kill9-first");
    teams(&fake);
    submit(&fake, "team-b", "b", "qb", 16, 2); /* 2 s grace: evictions stay in flight */
    if (!WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 16, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("B not bound");
    }
    submit(&fake, "team-a", "a", "qa", 8, 0);
    /* Kill the controller as soon as the reclaim has started. */
    assert_true(WAIT_UNTIL(count_events(&fake, "Preempted", "team-b", NULL) >= 1, WAIT_MS));
    ctl_kill9(&c);
    int bound_a_at_kill = count_pods(&fake, "team-a", 1);
    static struct ctl c2;
    memset(&c2, 0, sizeof c2);
    snprintf(c2.ledger, sizeof c2.ledger, "%s", c.ledger); /* the same ledger file */
    assert_int_equal(ctl_start(&c2, &fake, "kill9-second"), 0);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 8, WAIT_MS)) {
        ctl_dump_log(&c2, 60);
        fail_msg("A not bound after the restart (%d at the kill)", bound_a_at_kill);
    }
    /* Exactly 8 of B's pods went: none evicted twice or in excess. */
    assert_true(WAIT_UNTIL(count_original_pods(&fake, "team-b") == 8, WAIT_MS));
    nap(1500); /* more cycles of the new controller: nothing else may move */
    /* The evicted bare pods come back pending, each at most once (a name
     * derived from the old one: a second create is 409). */
    assert_true(count_pods(&fake, "team-b", -1) - count_original_pods(&fake, "team-b") <= 8);
    assert_int_equal(count_pods(&fake, "team-b", 1), 8);
    assert_int_equal(count_pods(&fake, "team-a", 1), 8);
    at_most_one_event_each(&fake, "team-a", "a", 8, "Scheduled");
    at_most_one_event_each(&fake, "team-b", "b", 16, "Preempted");
    assert_true(count_events(&fake, "Preempted", "team-b", NULL) <= 8);
    assert_true(ctl_metric(&c2, "fairshare_bind_errors_total") == 0);
    printf("kill -9: %d of A's pods were bound at the kill; the restarted controller did the "
           "rest\n",
           bound_a_at_kill);
    stop_all(&fake, &c2);
}

static void test_apiserver_restart(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 2, 8, "apirestart");
    teams(&fake);
    submit(&fake, "team-b", "b", "qb", 16, 0);
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 16, WAIT_MS));
    assert_int_equal(fair_fake_stop(&fake), 0);
    nap(500);
    assert_int_equal(fair_fake_restart(&fake), 0);
    assert_true(ctl_alive(&c));
    /* After the restart the server's watch history is empty: the
     * controller must relist and keep scheduling. */
    submit(&fake, "team-a", "a", "qa", 8, 0);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 8, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("no scheduling after the API server restart");
    }
    assert_true(WAIT_UNTIL(count_original_pods(&fake, "team-b") == 8, WAIT_MS));
    assert_true(ctl_ready(&c));
    stop_all(&fake, &c);
}

static void write_ha_config(const struct fair_fake *fake, char *path, size_t n)
{
    config_write(path, n, fake, "ha", CTL_LEASE("4s", "3s", "300ms") "cycleInterval: 500ms\n");
}

static double leader_of(struct ctl *c)
{
    return ctl_metric(c, "fairshare_leader");
}

static void test_two_replicas(void **state)
{
    (void)state;
    static struct fair_fake fake;
    struct fair_fake_opts o = {.nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *sys[] = {"fairshare-system", NULL};
    mk_namespaces(&fake, sys);
    teams(&fake);
    static struct ctl r1, r2;
    memset(&r1, 0, sizeof r1);
    memset(&r2, 0, sizeof r2);
    r1.identity = "replica-1";
    r2.identity = "replica-2";
    write_ha_config(&fake, r1.config, sizeof r1.config);
    snprintf(r2.config, sizeof r2.config, "%s", r1.config);
    assert_int_equal(ctl_start_args(&r1, &fake, "r1", NULL), 0);
    assert_int_equal(ctl_start_args(&r2, &fake, "r2", NULL), 0);
    assert_true(WAIT_UNTIL(ctl_ready(&r1) && ctl_ready(&r2), WAIT_MS));
    if (!WAIT_UNTIL(leader_of(&r1) + leader_of(&r2) == 1, WAIT_MS)) {
        ctl_dump_log(&r1, 30);
        ctl_dump_log(&r2, 30);
        fail_msg("not exactly one leader");
    }
    struct ctl *lead = leader_of(&r1) == 1 ? &r1 : &r2;
    struct ctl *follow = lead == &r1 ? &r2 : &r1;
    submit(&fake, "team-b", "b", "qb", 16, 0);
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 16, WAIT_MS));
    assert_true(WAIT_UNTIL(ctl_metric(lead, "fairshare_binds_total") == 16, WAIT_MS));
    assert_true(ctl_metric(follow, "fairshare_binds_total") == 0);
    assert_true(ctl_metric(follow, "fairshare_cycles_total") >= 0);
    assert_true(ctl_metric(lead, "fairshare_bind_errors_total") == 0);
    assert_true(ctl_metric(follow, "fairshare_bind_errors_total") == 0);
    at_most_one_event_each(&fake, "team-b", "b", 16, "Scheduled");

    /* The leader stops (releasing the Lease): the follower takes over. */
    assert_int_equal(ctl_stop(lead), 0);
    if (!WAIT_UNTIL(leader_of(follow) == 1, WAIT_MS)) {
        ctl_dump_log(follow, 30);
        fail_msg("the follower did not take over");
    }
    submit(&fake, "team-a", "a", "qa", 8, 0);
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 8, WAIT_MS));
    assert_true(WAIT_UNTIL(count_original_pods(&fake, "team-b") == 8, WAIT_MS));
    assert_true(ctl_metric(follow, "fairshare_preemptions_total{reason=\"reclaim\"}") == 8);
    /* The Lease names the new leader. */
    json_t *lease = list(&fake, "/apis/coordination.k8s.io/v1/namespaces/fairshare-system/leases/"
                                "fairshare-test");
    assert_non_null(lease);
    assert_string_equal(fair_fake_json_str(lease, "spec.holderIdentity"), follow->identity);
    json_decref(lease);
    stop_all(&fake, follow);
}

/* The lastTransitionTime of the Ready condition of queue qa (malloc'd; ""
 * when none). */
static char *ready_since(struct fair_fake *fake)
{
    json_t *q = list(fake, "/apis/fairshare.dev/v1alpha1/queues/qa");
    char *out = NULL;
    size_t i;
    json_t *cd;
    json_array_foreach(json_object_get(json_object_get(q, "status"), "conditions"), i, cd)
    {
        const char *t = json_string_value(json_object_get(cd, "type"));
        const char *ts = json_string_value(json_object_get(cd, "lastTransitionTime"));
        if (t && ts && !strcmp(t, "Ready"))
            out = strdup(ts);
    }
    json_decref(q);
    return out ? out : strdup("");
}

/* A restart keeps the lastTransitionTime of a condition whose status did
 * not change: the new process takes it from the Queue as the server holds
 * it (before, every condition restarted its clock at each restart). */
static void test_restart_keeps_transition_times(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 1, 8, "since");
    teams(&fake);
    char *before = NULL;
    for (int i = 0; i < WAIT_MS / 100 && !(before && *before); i++) {
        free(before);
        before = ready_since(&fake);
        if (!*before)
            nap(100);
    }
    assert_true(*before);
    nap(2100); /* the times have a second's resolution */
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(ctl_start(&c, &fake, "since"), 0);
    assert_true(WAIT_UNTIL(ctl_ready(&c), WAIT_MS));
    /* The new process writes every status once; then qa's figures change. */
    assert_true(WAIT_UNTIL(ctl_metric(&c, "fairshare_status_writes_total") >= 4, WAIT_MS));
    mk_pod(&fake, "team-a", "a-0", "qa", "1");
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qa", "allocated", "1"), WAIT_MS));
    char *after = ready_since(&fake);
    assert_string_equal(after, before);
    free(after);
    free(before);
    stop_all(&fake, &c);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_kill9_and_restart, tc_teardown),
        cmocka_unit_test_teardown(test_apiserver_restart, tc_teardown),
        cmocka_unit_test_teardown(test_two_replicas, tc_teardown),
        cmocka_unit_test_teardown(test_restart_keeps_transition_times, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
