/* Aging (Queue spec.agingHalfLife, docs/engine.md "Admission order") end
 * to end: on one GPU, a pod that has waited several half-lives goes before
 * a newer pod of higher priority in the same queue; without aging the
 * higher priority goes first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_controller_common.h"

static bool is_bound(struct fair_fake *f, const char *name)
{
    char *node = pod_node(f, "team-a", name, NULL);
    bool b = node && *node;
    free(node);
    return b;
}

static void aging_case(bool aging)
{
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 1, 1, aging ? "aging" : "noaging");
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "1", "[\"team-a\"]", NULL);
    char body[1024];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\","
             "\"metadata\":{\"name\":\"qa\"},\"spec\":{\"project\":\"a\","
             "\"guaranteed\":{\"gpu\":\"1\"}%s}}",
             aging ? ",\"agingHalfLife\":\"1s\"" : "");
    must_create(&fake, "/apis/fairshare.dev/v1alpha1/queues", body);
    /* The running pod has the highest priority, so that neither waiting
     * pod may preempt it. */
    mk_pod_spec(&fake, "team-a", "run", "qa", "1", NULL, NULL, NULL, ",\"priority\":100", 0);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 1, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the first pod was not bound");
    }
    mk_pod_spec(&fake, "team-a", "old", "qa", "1", NULL, NULL, NULL, ",\"priority\":0", 0);
    /* Five half-lives: a boost of 2^5 - 1 = 31 over priority 10. */
    nap(5000);
    mk_pod_spec(&fake, "team-a", "new", "qa", "1", NULL, NULL, NULL, ",\"priority\":10", 0);
    nap(500);
    long code = 0;
    json_decref(fair_fake_request_json(&fake, "DELETE", "/api/v1/namespaces/team-a/pods/run",
                                       NULL, &code));
    if (code != 200 && code != 202)
        fail_msg("DELETE of the running pod answered %ld", code);
    if (!WAIT_UNTIL(is_bound(&fake, "old") || is_bound(&fake, "new"), WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("neither waiting pod was bound");
    }
    nap(500);
    if (is_bound(&fake, "old") != aging) {
        ctl_dump_log(&c, 80);
        json_t *q = list(&fake, "/apis/fairshare.dev/v1alpha1/queues");
        char *qs = json_dumps(q, 0);
        fprintf(stderr, "queues: %s\n", qs ? qs : "?");
        free(qs);
        json_decref(q);
    }
    assert_int_equal(is_bound(&fake, "old"), aging);
    assert_int_equal(is_bound(&fake, "new"), !aging);
    stop_all(&fake, &c);
}

static void test_aging_passes_higher_priority(void **state)
{
    (void)state;
    aging_case(true);
}

static void test_without_aging_priority_first(void **state)
{
    (void)state;
    aging_case(false);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_aging_passes_higher_priority, tc_teardown),
        cmocka_unit_test_teardown(test_without_aging_priority_first, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
