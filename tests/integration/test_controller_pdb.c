/* A PodDisruptionBudget that refuses an eviction (HTTP 429 from the
 * Eviction API) makes the controller choose another victim: the protected
 * pods keep running, an unprotected one goes, and the reclaiming queue gets
 * its GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

static int count_running(struct fair_fake *f, const char *ns)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    json_t *l = list(f, path);
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *ph = fair_fake_json_str(p, "status.phase");
        if (ph && strcmp(ph, "Running") == 0 && pod_live_bound(p))
            n++;
    }
    json_decref(l);
    return n;
}

static void test_pdb_picks_another_victim(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 1, 4, "pdb");
    const char *ns[] = {"team-a", "team-b", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "2", "[\"team-a\"]", NULL);
    mk_project(&fake, "b", "2", "[\"team-b\"]", NULL);
    mk_queue(&fake, "qa", "a", "2", 1);
    mk_queue(&fake, "qb", "b", "2", 1);
    must_create(&fake, "/apis/policy/v1/namespaces/team-b/poddisruptionbudgets",
                "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\","
                "\"metadata\":{\"name\":\"protect\",\"namespace\":\"team-b\"},"
                "\"spec\":{\"maxUnavailable\":0,"
                "\"selector\":{\"matchLabels\":{\"tier\":\"protected\"}}}}");
    /* B uses all 4 GPUs (2 borrowed). The protected pods have the lowest
     * priority, so they are the engine's first choice as victims. */
    const char *prot = ",\"tier\":\"protected\"";
    mk_pod_spec(&fake, "team-b", "prot-0", "qb", "1", NULL, prot, NULL, ",\"priority\":0", 0);
    mk_pod_spec(&fake, "team-b", "prot-1", "qb", "1", NULL, prot, NULL, ",\"priority\":0", 0);
    mk_pod_spec(&fake, "team-b", "prot-2", "qb", "1", NULL, prot, NULL, ",\"priority\":0", 0);
    mk_pod_spec(&fake, "team-b", "free-0", "qb", "1", NULL, NULL, NULL, ",\"priority\":100", 0);
    if (!WAIT_UNTIL(count_running(&fake, "team-b") == 4, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("B's pods not running");
    }
    mk_pod(&fake, "team-a", "a-0", "qa", "1");
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 1, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("A's pod not bound");
    }
    /* At least one eviction was refused, and only free-0 went. */
    assert_true(ctl_metric(&c, "fairshare_evictions_blocked_total") >= 1);
    assert_true(WAIT_UNTIL(count_original_pods(&fake, "team-b") == 3, WAIT_MS));
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "prot-%d", i);
        json_t *p = get_pod(&fake, "team-b", name);
        assert_non_null(p);
        assert_true(pod_live_bound(p));
        json_decref(p);
    }
    json_t *gone = get_pod(&fake, "team-b", "free-0");
    assert_null(gone);
    /* A bare pod: it is back, pending, under a derived name. */
    json_t *again = get_pod(&fake, "team-b", "free-0-rq1");
    assert_non_null(again);
    assert_false(pod_live_bound(again));
    json_decref(again);
    assert_true(WAIT_UNTIL(count_events(&fake, "Preempted", "team-b", "free-0") == 1, WAIT_MS));
    assert_int_equal(count_events(&fake, "Preempted", "team-b", "prot-0") +
                         count_events(&fake, "Preempted", "team-b", "prot-1") +
                         count_events(&fake, "Preempted", "team-b", "prot-2"),
                     0);
    stop_all(&fake, &c);
}

/* The message of the Preempted Event of prot-0 or prot-1 (malloc'd), or NULL. */
static char *preempted_message(struct fair_fake *f)
{
    char *m = event_message(f, "Preempted", "team-b", "prot-0");
    return m ? m : event_message(f, "Preempted", "team-b", "prot-1");
}

/* When the only victims are protected by a budget that allows no
 * disruption, the controller waits eviction.pdbMaxWait (here 2 s, with a
 * 300 ms backoff) and then deletes one, as kube-scheduler's preemption
 * does: the owed queue gets its GPU, the Event says why, and the metric
 * counts it. With pdbMaxWait 0 it keeps waiting. */
static void test_pdb_overridden_after_max_wait(void **state)
{
    (void)state;
    for (int wait = 1; wait >= 0; wait--) {
        static struct fair_fake fake;
        static struct ctl c;
        memset(&c, 0, sizeof c);
        struct fair_fake_opts o = {
            .nodes = 1, .gpus_per_node = 2, .kubelet = 1, .grace_seconds = 1};
        assert_int_equal(tc_fake_start(&fake, &o), 0);
        config_write(c.config, sizeof c.config, &fake, "pdbwait",
                     "eviction:\n  pdbBackoff: 300ms\n  pdbMaxWait: %s\n", wait ? "2s" : "0s");
        assert_int_equal(ctl_start(&c, &fake, wait ? "pdbwait" : "pdbnowait"), 0);
        if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS)) {
            ctl_dump_log(&c, 40);
            fail_msg("controller not ready");
        }
        const char *ns[] = {"team-a", "team-b", NULL};
        mk_namespaces(&fake, ns);
        mk_project(&fake, "a", "1", "[\"team-a\"]", NULL);
        mk_project(&fake, "b", "1", "[\"team-b\"]", NULL);
        mk_queue(&fake, "qa", "a", "1", 1);
        mk_queue(&fake, "qb", "b", "1", 1);
        must_create(&fake, "/apis/policy/v1/namespaces/team-b/poddisruptionbudgets",
                    "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\","
                    "\"metadata\":{\"name\":\"protect\",\"namespace\":\"team-b\"},"
                    "\"spec\":{\"maxUnavailable\":0,"
                    "\"selector\":{\"matchLabels\":{\"tier\":\"protected\"}}}}");
        const char *prot = ",\"tier\":\"protected\"";
        mk_pod_spec(&fake, "team-b", "prot-0", "qb", "1", NULL, prot, NULL, NULL, 0);
        mk_pod_spec(&fake, "team-b", "prot-1", "qb", "1", NULL, prot, NULL, NULL, 0);
        if (!WAIT_UNTIL(count_running(&fake, "team-b") == 2, WAIT_MS)) {
            ctl_dump_log(&c, 40);
            fail_msg("B's pods not running");
        }
        mk_pod(&fake, "team-a", "a-0", "qa", "1");
        /* Refused at first: both of B's pods still run a second later. */
        assert_true(WAIT_UNTIL(ctl_metric(&c, "fairshare_evictions_blocked_total") >= 1, WAIT_MS));
        nap(1000);
        assert_int_equal(count_pods(&fake, "team-a", 1), 0);
        if (wait) {
            if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 1, WAIT_MS)) {
                ctl_dump_log(&c, 60);
                fail_msg("A's pod not bound after pdbMaxWait");
            }
            assert_true(ctl_metric(&c, "fairshare_evictions_pdb_overridden_total") == 1);
            assert_int_equal(count_original_pods(&fake, "team-b"), 1);
            char *msg = NULL;
            assert_true(WAIT_UNTIL((msg = preempted_message(&fake)) != NULL, WAIT_MS));
            assert_non_null(strstr(msg, "a PodDisruptionBudget refused its eviction for 2s"));
            free(msg);
        } else {
            nap(2500);
            assert_int_equal(count_pods(&fake, "team-a", 1), 0);
            assert_int_equal(count_original_pods(&fake, "team-b"), 2);
            assert_true(ctl_metric(&c, "fairshare_evictions_pdb_overridden_total") == 0);
        }
        stop_all(&fake, &c);
    }
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_pdb_picks_another_victim, tc_teardown),
        cmocka_unit_test_teardown(test_pdb_overridden_after_max_wait, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
