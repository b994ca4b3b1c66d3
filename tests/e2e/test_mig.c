/* End to end on a real API server: MIG (docs/fractions.md, "MIG"). The
 * first node's status gets two nvidia.com/mig-1g.10gb and one
 * nvidia.com/mig-3g.40gb instance through the status subresource, as the
 * device plugin's kubelet reports them (and loses them afterwards). Four
 * MIG pods of this suite's scheduler: three fit there and are bound
 * there, the fourth waits; the queue's status shows 2/7 + 3/7 = 0.715
 * GPU; the ledger charged 143 and 429 milli-GPU. A pod naming an unknown
 * profile is InvalidPod. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "e2e.h"

static void mig_status(const char *one, const char *three)
{
    char path[256], body[512];
    snprintf(path, sizeof path, "/api/v1/nodes/%s/status", e2e_node(0));
    snprintf(body, sizeof body,
             "{\"status\":{\"capacity\":{\"nvidia.com/mig-1g.10gb\":%s,"
             "\"nvidia.com/mig-3g.40gb\":%s},\"allocatable\":{\"nvidia.com/mig-1g.10gb\":%s,"
             "\"nvidia.com/mig-3g.40gb\":%s}}}",
             one, three, one, three);
    long code = e2e_req("PATCH", path, body, NULL);
    if (code != 200)
        fail_msg("patching the status of %s: HTTP %ld", e2e_node(0), code);
}

static int teardown(void **state)
{
    e2e_scenario_end();
    mig_status("null", "null"); /* as ../shared/k8s made it */
    (void)state;
    return 0;
}

static const char *queue_str(const char *name, const char *dotted)
{
    static char out[128];
    char path[512];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/queues/%s", name);
    json_t *o = e2e_get(path);
    const char *s = o ? e2e_str(o, dotted) : NULL;
    snprintf(out, sizeof out, "%s", s ? s : "");
    json_decref(o);
    return out;
}

static void mig_pod(const char *ns, const char *name, const char *queue, const char *profile)
{
    char res[256];
    snprintf(res, sizeof res, "{\"limits\":{\"nvidia.com/mig-%s\":\"1\"}}", profile);
    e2e_pod_res(ns, name, queue, res, NULL, NULL);
}

static void test_mig(void **state)
{
    (void)state;
    char pre[128], ns[160], pj[160], q[160];
    e2e_scenario_begin("mig", pre, sizeof pre);
    snprintf(ns, sizeof ns, "%s-a", pre);
    snprintf(pj, sizeof pj, "%s-p", pre);
    snprintf(q, sizeof q, "%s-q", pre);
    mig_status("2", "1");
    /* The real API server keeps them, and the node's GPUs. */
    char path[512];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", e2e_node(0));
    json_t *n = e2e_get(path);
    assert_non_null(n);
    json_t *alloc = json_object_get(json_object_get(n, "status"), "allocatable");
    assert_string_equal(json_string_value(json_object_get(alloc, "nvidia.com/mig-1g.10gb")), "2");
    assert_string_equal(json_string_value(json_object_get(alloc, "nvidia.com/gpu")), "8");
    json_decref(n);
    e2e_namespace(ns);
    e2e_project(pj, ns, "4", NULL);
    e2e_queue(q, pj, "4", 0);
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    e2e_ctl_start(&ctl, "mig", NULL);

    mig_pod(ns, "small-0", q, "1g.10gb");
    mig_pod(ns, "small-1", q, "1g.10gb");
    mig_pod(ns, "big-0", q, "3g.40gb");
    if (!E2E_WAIT(e2e_count(ns, NULL).bound == 3, E2E_WAIT_MS)) {
        e2e_dump_pods(ns);
        e2e_ctl_dump(&ctl, 40);
        fail_msg("%d MIG pods bound, want 3", e2e_count(ns, NULL).bound);
    }
    const char *names[] = {"small-0", "small-1", "big-0"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, names[i]);
        json_t *p = e2e_get(path);
        const char *node = p ? e2e_str(p, "spec.nodeName") : NULL;
        if (!node || strcmp(node, e2e_node(0)))
            fail_msg("%s on %s, want %s", names[i], node ? node : "(none)", e2e_node(0));
        json_decref(p);
    }
    /* No instance left of 1g.10gb: the next one waits. */
    mig_pod(ns, "small-2", q, "1g.10gb");
    if (!E2E_WAIT(e2e_events(ns, "FailedScheduling") >= 1, E2E_WAIT_MS)) {
        e2e_dump_pods(ns);
        fail_msg("small-2: no FailedScheduling event");
    }
    assert_int_equal(e2e_count(ns, NULL).bound, 3);
    /* Two 1/7 and one 3/7 of a GPU. */
    if (!E2E_WAIT(!strcmp(queue_str(q, "status.allocated.gpu"), "0.715"), E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 40);
        fail_msg("queue allocated gpu %s, want 0.715", queue_str(q, "status.allocated.gpu"));
    }
    /* An unknown profile: InvalidPod. */
    mig_pod(ns, "odd", q, "5g.50gb");
    char *why = NULL;
    if (!E2E_WAIT((free(why), (why = e2e_pod_reason(ns, "odd")) && !strcmp(why, "InvalidPod")),
                  E2E_WAIT_MS)) {
        e2e_dump_pods(ns);
        fail_msg("odd: reason %s, want InvalidPod", why ? why : "(none)");
    }
    free(why);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);

    /* The ledger: each pod at its share. */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(ctl.ledger, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(
        sqlite3_prepare_v2(h, "SELECT pod, gpu_milli FROM intervals ORDER BY pod", -1, &st, NULL),
        SQLITE_OK);
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *pod = (const char *)sqlite3_column_text(st, 0);
        int64_t milli = sqlite3_column_int64(st, 1);
        int64_t want = !strcmp(pod, "big-0") ? 429 : 143;
        if (milli != want)
            fail_msg("ledger: %s charged %lld milli-GPU, want %lld", pod, (long long)milli,
                     (long long)want);
        rows++;
    }
    assert_int_equal(rows, 3);
    sqlite3_finalize(st);
    sqlite3_close(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_mig, teardown),
    };
    return cmocka_run_group_tests(tests, e2e_setup, e2e_teardown);
}
