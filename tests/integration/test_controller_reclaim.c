/* The controller end to end over real HTTPS against the fake API server:
 * team B borrows team A's idle GPUs and gives back exactly what A asks for
 * (Eviction API, Events, DisruptionTarget, its bare pods requeued), and three queues with weights
 * 1:2:1 and no guarantee share 16 GPUs as 4/8/4, whether their pods arrive
 * together or one at a time in any order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

static void test_lend_and_reclaim(void **state)
{
    (void)state;
    static struct fair_fake fake;
    struct fair_fake_opts o = {.nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"team-a", "team-b", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "8", "[\"team-a\"]", NULL);
    mk_project(&fake, "b", "8", "[\"team-b\"]", NULL);
    mk_queue(&fake, "qa", "a", "8", 1);
    mk_queue(&fake, "qb", "b", "8", 1);
    static struct ctl c;
    memset(&c, 0, sizeof c);
    assert_int_equal(ctl_start(&c, &fake, "reclaim"), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("controller not ready");
    }

    /* B fills the cluster: 8 of its own guarantee, 8 borrowed from A. */
    char name[64];
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "b-%02d", i);
        mk_pod(&fake, "team-b", name, "qb", "1");
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 16, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("B's 16 pods were not all bound: %d", count_pods(&fake, "team-b", 1));
    }
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qb", "borrowed", "8"), WAIT_MS));
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qa", "lent", "8"), WAIT_MS));
    /* Each bound pod has its devices written and a Scheduled Event. */
    json_t *p0 = get_pod(&fake, "team-b", "b-00");
    assert_non_null(p0);
    json_t *anns = json_object_get(json_object_get(p0, "metadata"), "annotations");
    const char *devices = json_string_value(json_object_get(anns, "fairshare.dev/gpu-devices"));
    assert_non_null(devices);
    assert_int_equal(strlen(devices), 1); /* one GPU: one device number */
    json_decref(p0);
    assert_true(WAIT_UNTIL(count_events(&fake, "Scheduled", "team-b", NULL) == 16, WAIT_MS));

    /* A comes back for its 8 guaranteed GPUs. */
    long long t0 = now_ms();
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "a-%02d", i);
        mk_pod(&fake, "team-a", name, "qa", "1");
    }
    long long t_evicted = -1;
    bool all_bound = false;
    long long deadline = now_ms() + WAIT_MS;
    while (now_ms() < deadline) {
        if (t_evicted < 0 && count_events(&fake, "Preempted", "team-b", NULL) >= 8)
            t_evicted = now_ms();
        if (count_pods(&fake, "team-a", 1) == 8) {
            all_bound = true;
            break;
        }
        nap(20);
    }
    long long t_bound = now_ms();
    if (!all_bound) {
        ctl_dump_log(&c, 80);
        fail_msg("A's pods were not bound: %d", count_pods(&fake, "team-a", 1));
    }
    printf("reclaim: A's 8 pods created -> 8 evictions done in %lld ms, all 8 bound in %lld ms "
           "(B's pods have a 0 s termination grace period)\n",
           t_evicted < 0 ? -1 : t_evicted - t0, t_bound - t0);

    /* Exactly 8 of B's pods were evicted, each once; the other 8 run. The
     * evicted ones are bare pods: each is back, pending, as <name>-rq1
     * (B is at its guarantee, so they wait). */
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-b", -1) == 16, WAIT_MS));
    assert_int_equal(count_pods(&fake, "team-b", 1), 8);
    assert_int_equal(count_pods(&fake, "team-b", 0), 8);
    assert_true(WAIT_UNTIL(ctl_metric(&c, "fairshare_requeues_total") == 8, WAIT_MS));
    assert_true(WAIT_UNTIL(count_events(&fake, "Preempted", "team-b", NULL) == 8, WAIT_MS));
    assert_true(WAIT_UNTIL(count_events(&fake, "Scheduled", "team-a", NULL) == 8, WAIT_MS));
    assert_int_equal(count_events(&fake, "Preempted", "team-a", NULL), 0);
    char *msg = event_message(&fake, "Scheduled", "team-a", "a-00");
    assert_non_null(msg);
    assert_non_null(strstr(msg, "Bound team-a/a-00 to node node-000"));
    assert_non_null(strstr(msg, ", GPUs "));
    free(msg);
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qa", "allocated", "8"), WAIT_MS));
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qb", "borrowed", "0"), WAIT_MS));
    assert_true(WAIT_UNTIL(ctl_metric(&c, "fairshare_preemptions_total{reason=\"reclaim\"}") == 8,
                           WAIT_MS));
    assert_true(ctl_metric(&c, "fairshare_queue_allocated_gpus{queue=\"qa\",project=\"a\"}") == 8);
    assert_true(ctl_metric(&c, "fairshare_bind_errors_total") == 0);

    assert_int_equal(ctl_stop(&c), 0); /* clean exit (under ASan: no leaks) */

    /* The ledger saw it all: 16 placements of B (8 of them preempted) and 8
     * of A, read back through fairsharectl's report. */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s/fairsharectl report --db '%s' --from 2000-01-01 --to 2100-01-01 --by queue "
             "--format json",
             FAIR_BIN_DIR, c.ledger);
    FILE *rp = popen(cmd, "r");
    assert_non_null(rp);
    json_error_t je;
    json_t *rep = json_loadf(rp, 0, &je);
    assert_int_equal(pclose(rp), 0);
    assert_non_null(rep);
    json_t *row;
    size_t ri;
    int seen = 0;
    json_array_foreach(json_object_get(rep, "rows"), ri, row)
    {
        const char *q = json_string_value(json_object_get(row, "queue"));
        json_int_t pods = json_integer_value(json_object_get(row, "pods"));
        if (q && strcmp(q, "qb") == 0) {
            assert_int_equal(pods, 16);
            seen++;
        } else if (q && strcmp(q, "qa") == 0) {
            assert_int_equal(pods, 8);
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    assert_true(json_integer_value(json_object_get(json_object_get(rep, "total"), "gpu_milli_ms")) >
                0);
    json_decref(rep);
    assert_int_equal(fair_fake_stop(&fake), 0);
    fair_fake_release(&fake);
}

static void test_weights_1_2_1(void **state)
{
    (void)state;
    static struct fair_fake fake;
    struct fair_fake_opts o = {.nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"ml", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "research", "0", "[\"ml\"]", NULL);
    mk_queue(&fake, "w1", "research", "0", 1);
    mk_queue(&fake, "w2", "research", "0", 2);
    mk_queue(&fake, "w3", "research", "0", 1);
    /* Everyone wants 12 GPUs, more than a fair share, before the
     * controller starts: the first cycle sees all the demand. */
    char name[64];
    const char *queues[] = {"w1", "w2", "w3"};
    for (int q = 0; q < 3; q++)
        for (int i = 0; i < 12; i++) {
            snprintf(name, sizeof name, "%s-%02d", queues[q], i);
            mk_pod(&fake, "ml", name, queues[q], "1");
        }
    static struct ctl c;
    memset(&c, 0, sizeof c);
    assert_int_equal(ctl_start(&c, &fake, "weights"), 0);
    if (!WAIT_UNTIL(count_pods(&fake, "ml", 1) == 16, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("not 16 bound: %d", count_pods(&fake, "ml", 1));
    }
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "w1", "allocated", "4") &&
                               queue_gpu_is(&fake, "w2", "allocated", "8") &&
                               queue_gpu_is(&fake, "w3", "allocated", "4"),
                           WAIT_MS));
    assert_true(queue_gpu_is(&fake, "w2", "fairShare", "8"));
    json_t *st = queue_status(&fake, "w1");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "pending"), "pods")),
                     8);
    json_decref(st);
    /* The pending ones say why. */
    assert_true(WAIT_UNTIL(count_events(&fake, "FailedScheduling", "ml", NULL) >= 20, WAIT_MS));
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
    fair_fake_release(&fake);
}

/* The 1:2:1 case with real arrival timing: 20 pods per queue created one
 * at a time, 40 ms apart, in three orders (one queue after the other,
 * round robin, and the reverse). Whoever comes first takes what is idle;
 * reclaim up to the fair share brings it to 4/8/4, and it stays there. */
static void test_weights_staggered(void **state)
{
    (void)state;
    static const char *const orders[] = {"sequential", "round-robin", "reverse"};
    for (int o = 0; o < 3; o++) {
        static struct fair_fake fake;
        struct fair_fake_opts opt = {
            .nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = -1};
        assert_int_equal(tc_fake_start(&fake, &opt), 0);
        const char *ns[] = {"ml", NULL};
        mk_namespaces(&fake, ns);
        mk_project(&fake, "research", "0", "[\"ml\"]", NULL);
        mk_queue(&fake, "w1", "research", "0", 1);
        mk_queue(&fake, "w2", "research", "0", 2);
        mk_queue(&fake, "w3", "research", "0", 1);
        static struct ctl c;
        memset(&c, 0, sizeof c);
        /* A short minimum run time (the default is a minute), so that the
         * test also crosses it. */
        config_write(c.config, sizeof c.config, &fake, "staggered",
                     "leaderElection:\n  enabled: false\nreclaim:\n  overQuotaMinRuntime: 1s\n");
        assert_int_equal(ctl_start(&c, &fake, orders[o]), 0);
        if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS))
            fail_msg("controller not ready");
        const char *queues[] = {"w1", "w2", "w3"};
        char name[64];
        for (int k = 0; k < 60; k++) {
            int q = o == 0 ? k / 20 : o == 1 ? k % 3 : 2 - k / 20;
            snprintf(name, sizeof name, "%s-%02d", queues[q], o == 1 ? k / 3 : k % 20);
            mk_pod(&fake, "ml", name, queues[q], "1");
            nap(40);
        }
        if (!WAIT_UNTIL(queue_gpu_is(&fake, "w1", "allocated", "4") &&
                            queue_gpu_is(&fake, "w2", "allocated", "8") &&
                            queue_gpu_is(&fake, "w3", "allocated", "4"),
                        WAIT_MS)) {
            ctl_dump_log(&c, 60);
            json_t *s1 = queue_status(&fake, "w1"), *s2 = queue_status(&fake, "w2"),
                   *s3 = queue_status(&fake, "w3");
            char *t1 = json_dumps(json_object_get(s1, "allocated"), JSON_COMPACT);
            char *t2 = json_dumps(json_object_get(s2, "allocated"), JSON_COMPACT);
            char *t3 = json_dumps(json_object_get(s3, "allocated"), JSON_COMPACT);
            fprintf(stderr,
                    "allocated: w1 %s w2 %s w3 %s; controller %s, %.0f cycles, %.0f in flight\n",
                    t1, t2, t3, ctl_alive(&c) ? "running" : "gone",
                    ctl_metric(&c, "fairshare_cycles_total"),
                    ctl_metric(&c, "fairshare_operations_in_flight"));
            free(t1), free(t2), free(t3);
            json_decref(s1), json_decref(s2), json_decref(s3);
            fail_msg("order %s: not 4/8/4", orders[o]);
        }
        /* It stays: no eviction and no bind for three seconds. */
        double ev = ctl_metric(&c, "fairshare_preemptions_total{reason=\"fair_share\"}");
        double binds = ctl_metric(&c, "fairshare_binds_total");
        nap(3000);
        assert_true(ctl_metric(&c, "fairshare_preemptions_total{reason=\"fair_share\"}") == ev);
        assert_true(ctl_metric(&c, "fairshare_binds_total") == binds);
        assert_int_equal(count_pods(&fake, "ml", 1), 16);
        printf("staggered 1:2:1, order %s: 4/8/4 after %.0f evictions up to the fair share\n",
               orders[o], ev);
        assert_int_equal(ctl_stop(&c), 0);
        assert_int_equal(fair_fake_stop(&fake), 0);
        fair_fake_release(&fake);
    }
}

/* A pod of team-b's queue qb, gpus GPUs, whose controller owner is the
 * Job of uid job (its lineage: its evictions count for the Job). */
static void mk_job_pod(struct fair_fake *f, const char *name, const char *job, const char *gpus)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"team-b\",\"labels\":{\"fairshare.dev/queue\":\"qb\"},"
             "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":"
             "\"train\",\"uid\":\"%s\",\"controller\":true}]},\"spec\":{\"schedulerName\":"
             "\"fairshare\",\"terminationGracePeriodSeconds\":0,\"containers\":[{\"name\":"
             "\"main\",\"image\":\"busybox\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
             "\"%s\"}}}]}}",
             name, job, gpus);
    must_create(f, "/api/v1/namespaces/team-b/pods", body);
}

/* The eviction bound (reclaim.maxEvictions, 1 here) survives a restart
 * and a change of leader: the ledger keeps each interval's workload, and a
 * controller counts the preempted ones when it starts to lead. A Job's pods
 * borrow 6 GPUs and are reclaimed; then the controller restarts (or, with
 * two replicas sharing the ledger, the leader stops and the other, started
 * before the evictions, takes over), and the Job's next pod is not lent
 * GPUs again (it waits, told why), while another Job's pod borrows as
 * before. Before, the count started at 0 and the Job's pod borrowed
 * again. */
static void eviction_bound_kept(bool two_replicas)
{
    static struct fair_fake fake;
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"team-a", "team-b", "fairshare-system", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "6", "[\"team-a\"]", NULL);
    mk_project(&fake, "b", "2", "[\"team-b\"]", NULL);
    mk_queue(&fake, "qa", "a", "6", 1);
    mk_queue(&fake, "qb", "b", "2", 1);
    static struct ctl r1, r2;
    memset(&r1, 0, sizeof r1);
    memset(&r2, 0, sizeof r2);
    config_write(r1.config, sizeof r1.config, &fake, "bound",
                 "reclaim:\n  maxEvictions: 1\n  overQuotaMinRuntime: 0s\n%s",
                 two_replicas ? CTL_LEASE("4s", "3s", "300ms") : "");
    struct ctl *lead = &r1, *next = &r1;
    if (two_replicas) {
        r1.identity = "replica-1";
        r2.identity = "replica-2";
        snprintf(r2.config, sizeof r2.config, "%s", r1.config);
        snprintf(r1.ledger, sizeof r1.ledger, "%s/ledger-shared.db", fake.dir);
        snprintf(r2.ledger, sizeof r2.ledger, "%s", r1.ledger);
        assert_int_equal(ctl_start_args(&r1, &fake, "r1", NULL), 0);
        assert_true(WAIT_UNTIL(ctl_metric(&r1, "fairshare_leader") == 1, WAIT_MS));
        assert_int_equal(ctl_start_args(&r2, &fake, "r2", NULL), 0);
        assert_true(WAIT_UNTIL(ctl_ready(&r2), WAIT_MS));
        next = &r2;
    } else {
        assert_int_equal(ctl_start(&r1, &fake, "bound"), 0);
        assert_true(WAIT_UNTIL(ctl_ready(&r1), WAIT_MS));
    }
    /* qb's guarantee held by one Job's pod, 6 GPUs borrowed by another's
     * three; team-a's 6 GPUs take three of the four back. */
    const char *job = "00000000-0000-0000-0000-00000000j0b1";
    mk_job_pod(&fake, "b-0", "00000000-0000-0000-0000-00000000j0b0", "2");
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 1, WAIT_MS));
    const char *mine[] = {"b-1", "b-2", "b-3"};
    for (int i = 0; i < 3; i++)
        mk_job_pod(&fake, mine[i], job, "2");
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 4, WAIT_MS));
    mk_pod(&fake, "team-a", "a-1", "qa", "6");
    if (!WAIT_UNTIL(count_pods(&fake, "team-b", -1) == 1 && count_pods(&fake, "team-a", 1) == 1,
                    WAIT_MS)) {
        ctl_dump_log(lead, 40);
        char *m = pod_condition_message(&fake, "team-a", "a-1", "PodScheduled");
        fail_msg("team-b's borrowing pods were not reclaimed for team-a: %s", m ? m : "");
    }
    assert_int_equal(ctl_stop(lead), 0);
    if (two_replicas) {
        assert_true(WAIT_UNTIL(ctl_metric(&r2, "fairshare_leader") == 1, WAIT_MS));
    } else {
        assert_int_equal(ctl_start(&r1, &fake, "bound"), 0);
        assert_true(WAIT_UNTIL(ctl_ready(&r1), WAIT_MS));
    }
    /* team-a is done: 6 GPUs free, qb at its guarantee; the Job's next pod
     * would borrow. */
    delete_pod(&fake, "team-a", "a-1");
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", -1) == 0, WAIT_MS));
    mk_job_pod(&fake, "b-4", job, "2");
    if (!WAIT_UNTIL(pod_condition_message_has(&fake, "team-b", "b-4", "PodScheduled",
                                              "times (reclaim.maxEvictions is 1)"),
                    WAIT_MS)) {
        ctl_dump_log(next, 40);
        char *n = pod_node(&fake, "team-b", "b-4", NULL);
        fail_msg("after %s, the evicted Job's pod was lent GPUs again (node \"%s\")",
                 two_replicas ? "a change of leader" : "a restart", n);
    }
    mk_job_pod(&fake, "c-1", "00000000-0000-0000-0000-00000000j0b2", "2");
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 2, WAIT_MS));
    char *n = pod_node(&fake, "team-b", "b-4", NULL);
    assert_string_equal(n, "");
    free(n);
}

static void test_eviction_bound_survives_restart(void **state)
{
    (void)state;
    eviction_bound_kept(false);
}

static void test_eviction_bound_survives_leader_change(void **state)
{
    (void)state;
    eviction_bound_kept(true);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_lend_and_reclaim, tc_teardown),
        cmocka_unit_test_teardown(test_weights_1_2_1, tc_teardown),
        cmocka_unit_test_teardown(test_weights_staggered, tc_teardown),
        cmocka_unit_test_teardown(test_eviction_bound_survives_restart, tc_teardown),
        cmocka_unit_test_teardown(test_eviction_bound_survives_leader_change, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
