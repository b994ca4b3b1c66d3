/* MIG end to end against the fake API server: a node's status carries
 * nvidia.com/mig-<profile> resources (patched through the status
 * subresource, as the device plugin's kubelet reports them); pods asking
 * for MIG instances are bound there, only as many as the node has, and
 * the queue's status shows them at their profiles' shares of a GPU. A pod
 * with an unknown profile is InvalidPod, with an Event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "test_controller_common.h"

static void patch_node_status(struct fair_fake *f, const char *node, const char *body)
{
    char path[128];
    long code = 0;
    char *resp = NULL;
    snprintf(path, sizeof path, "/api/v1/nodes/%s/status", node);
    if (fair_fake_request_ct(f, "PATCH", path, "application/merge-patch+json", body, &code,
                             &resp) != 0 ||
        code != 200) {
        fprintf(stderr, "PATCH %s -> %ld %s\n", path, code, resp ? resp : "");
        free(resp);
        fail_msg("could not patch the status of node %s", node);
    }
    free(resp);
}

static void mk_mig_pod(struct fair_fake *f, const char *name, const char *profile, int count)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"team-a\",\"labels\":{\"fairshare.dev/queue\":\"qa\"}},"
             "\"spec\":{\"schedulerName\":\"fairshare\",\"terminationGracePeriodSeconds\":0,"
             "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{"
             "\"limits\":{\"nvidia.com/mig-%s\":\"%d\"}}}]}}",
             name, profile, count);
    must_create(f, "/api/v1/namespaces/team-a/pods", body);
}

#define MIG_STATUS(n1, n3)                                                                         \
    "{\"status\":{\"capacity\":{\"nvidia.com/mig-1g.10gb\":\"" n1 "\",\"nvidia.com/mig-3g.40gb\":" \
    "\"" n3 "\"},\"allocatable\":{\"nvidia.com/mig-1g.10gb\":\"" n1                                \
    "\",\"nvidia.com/mig-3g.40gb\":\"" n3 "\"}}}"

static void test_mig_pods(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 2, 1, "mig");
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "4", "[\"team-a\"]", "qa");
    mk_queue(&fake, "qa", "a", "4", 1);
    /* node-0001 gets two 1g.10gb and one 3g.40gb instance. */
    patch_node_status(&fake, "node-0001", MIG_STATUS("2", "1"));
    json_t *node = list(&fake, "/api/v1/nodes/node-0001");
    const char *alloc = json_string_value(json_object_get(
        json_object_get(json_object_get(node, "status"), "allocatable"), "nvidia.com/mig-1g.10gb"));
    assert_non_null(alloc);
    assert_string_equal(alloc, "2");
    /* The patch merged: the node's other resources are still there. */
    assert_non_null(json_object_get(json_object_get(json_object_get(node, "status"), "allocatable"),
                                    "nvidia.com/gpu"));
    json_decref(node);
    mk_mig_pod(&fake, "small-0", "1g.10gb", 1);
    mk_mig_pod(&fake, "small-1", "1g.10gb", 1);
    mk_mig_pod(&fake, "small-2", "1g.10gb", 1);
    mk_mig_pod(&fake, "big-0", "3g.40gb", 1);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 3, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the MIG pods were not bound");
    }
    const char *names[] = {"small-0", "small-1", "small-2", "big-0"};
    int nbound = 0;
    for (int i = 0; i < 4; i++) {
        char *n = pod_node(&fake, "team-a", names[i], NULL);
        if (n && *n) {
            assert_string_equal(n, "node-0001");
            nbound++;
        }
        free(n);
    }
    assert_int_equal(nbound, 3);
    /* Two 1g.10gb (1/7 each) and one 3g.40gb (3/7): 0.715 GPU. */
    if (!WAIT_UNTIL(queue_gpu_is(&fake, "qa", "allocated", "0.715"), WAIT_MS)) {
        json_t *st = queue_status(&fake, "qa");
        char *d = st ? json_dumps(st, 0) : NULL;
        ctl_dump_log(&c, 40);
        fail_msg("queue status %s, want allocated gpu 0.715", d ? d : "(none)");
    }
    /* The whole GPUs are untouched: a whole-GPU pod still gets one. */
    mk_pod(&fake, "team-a", "whole", "qa", "1");
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 4, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the whole-GPU pod was not bound");
    }
    /* An unknown profile: InvalidPod, with a reason naming it. */
    mk_mig_pod(&fake, "odd", "5g.50gb", 1);
    if (!WAIT_UNTIL(pod_condition_is(&fake, "team-a", "odd", "PodScheduled", "InvalidPod"),
                    WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("no InvalidPod condition for an unknown profile");
    }
    if (!WAIT_UNTIL(count_events(&fake, NULL, "team-a", "odd") >= 1, WAIT_MS))
        fail_msg("no Event for the unknown profile");
    /* The ledger charges each MIG pod its share: GPU-seconds are
     * gpu_milli x time, so 1/7 and 3/7 of a GPU. */
    /* The controller stops first (the last flush); the ledger lives in
     * the fake's folder, gone once the fake stops. */
    assert_int_equal(ctl_stop(&c), 0);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(c.ledger, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(h,
                                        "SELECT pod, gpu_milli FROM intervals WHERE pod <> "
                                        "'whole' ORDER BY pod",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *pod = (const char *)sqlite3_column_text(st, 0);
        int64_t milli = sqlite3_column_int64(st, 1);
        if (!strncmp(pod, "small-", 6))
            assert_int_equal(milli, 143);
        else if (!strcmp(pod, "big-0"))
            assert_int_equal(milli, 429);
        else
            fail_msg("unexpected interval for %s", pod);
        rows++;
    }
    assert_int_equal(rows, 3);
    sqlite3_finalize(st);
    sqlite3_close(h);
    assert_int_equal(fair_fake_stop(&fake), 0);
    fair_fake_release(&fake);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_mig_pods, tc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
