/* End to end on a real API server: GPU-hour budgets (docs/api.md,
 * "Budgets"). Two projects with daily budgets of 10 GPU-hours, their usage
 * already in the ledger: a spent 12 (action block), b 9 (a warning only).
 * The real server keeps the budget in the Project's spec and the
 * controller's figures in its status subresource (state, used, remaining);
 * a's pod waits with reason BudgetExhausted while b's starts; each project
 * gets its alert Event once (BudgetExhausted, BudgetWarning; Events of the
 * cluster-scoped Project live in "default"). After a restart of the
 * controller on the same ledger, a's next pod still waits, and no alert is
 * sent a second time (the new process reads the level from the status). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "e2e.h"
#include "fixture_ledger.h"
#include "ledger/ledger.h"

/* Events with reason about Project name (in "default"), summed over count. */
static int project_events(const char *name, const char *reason)
{
    json_t *l = e2e_get("/api/v1/namespaces/default/events");
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(l, "items"), i, e)
    {
        const char *r = e2e_str(e, "reason");
        const char *kind = e2e_str(e, "involvedObject.kind");
        const char *obj = e2e_str(e, "involvedObject.name");
        if (!r || !kind || !obj || strcmp(r, reason) || strcmp(kind, "Project") ||
            strcmp(obj, name))
            continue;
        json_t *cnt = json_object_get(e, "count");
        n += json_is_integer(cnt) && json_integer_value(cnt) > 0 ? (int)json_integer_value(cnt) : 1;
    }
    json_decref(l);
    return n;
}

/* status.budget.<field> of Project name is want. */
static bool budget_is(const char *name, const char *field, const char *want)
{
    char path[512], dotted[64];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/projects/%s", name);
    snprintf(dotted, sizeof dotted, "status.budget.%s", field);
    json_t *p = e2e_get(path);
    const char *v = e2e_str(p, dotted);
    bool ok = v && !strcmp(v, want);
    json_decref(p);
    return ok;
}

static bool reason_is(const char *ns, const char *pod, const char *want)
{
    char *r = e2e_pod_reason(ns, pod);
    bool ok = r && !strcmp(r, want);
    free(r);
    return ok;
}

static void budget_project(const char *name, const char *ns, const char *action)
{
    e2e_create("/apis/fairshare.dev/v1alpha1/projects",
               "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\","
               "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"],"
               "\"guaranteed\":{\"gpu\":\"4\"},\"defaultQueue\":\"%s\","
               "\"budget\":{\"gpuHours\":10,\"period\":\"day\",\"action\":\"%s\"}}}",
               name, ns, ns, action);
    char path[512];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/projects/%s", name);
    e2e_track(path);
}

static void test_budget_alerts_once(void **state)
{
    (void)state;
    char pre[128], a[160], b[160];
    e2e_scenario_begin("budget", pre, sizeof pre);
    snprintf(a, sizeof a, "%s-a", pre);
    snprintf(b, sizeof b, "%s-b", pre);
    e2e_namespace(a);
    e2e_namespace(b);
    budget_project(a, a, "block");
    budget_project(b, b, "overQuotaOnly");
    e2e_queue(a, a, "4", 0);
    e2e_queue(b, b, "4", 0);
    /* The server keeps the budget as written. */
    char path[512];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/projects/%s", a);
    json_t *p = e2e_get(path);
    assert_string_equal(e2e_str(p, "spec.budget.action"), "block");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(p, "spec"), "budget"), "gpuHours")),
                     10);
    json_decref(p);

    /* 120 GPUs for 6 minutes = 12 GPU-hours, 90 for 6 = 9, within the last
     * 10 minutes; a fixed-offset zone puts local noon near now, so that
     * they fall within "today" whenever the test runs. */
    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    snprintf(ctl.ledger, sizeof ctl.ledger, "%s/ledger-%s.db", e2e_dir(), pre);
    struct fair_ledger_options o;
    fair_ledger_options_init(&o);
    o.path = ctl.ledger;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    if (fair_ledger_open(&o, &l, &err))
        fail_msg("ledger: %s", err.msg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    fixture_ledger_add(l, "old-a", a, 120, now - 8 * 60000, now - 2 * 60000);
    fixture_ledger_add(l, "old-b", b, 90, now - 8 * 60000, now - 2 * 60000);
    assert_int_equal(fair_ledger_flush(l, &err), 0);
    fair_ledger_free(l);
    time_t t = (time_t)ts.tv_sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    int off = 12 - tm.tm_hour; /* local = UTC + off */
    char extra[256];
    snprintf(extra, sizeof extra, "timeZone: Etc/GMT%+d\nfairShare:\n  usageRefresh: 1s\n", -off);
    e2e_ctl_start(&ctl, "budget", extra);

    e2e_pod(a, "a-0", NULL, "1", NULL, NULL);
    e2e_pod(b, "b-0", NULL, "1", NULL, NULL);
    bool held = E2E_WAIT(reason_is(a, "a-0", "BudgetExhausted"), E2E_WAIT_MS);
    bool runs = E2E_WAIT(e2e_count(b, NULL).bound == 1, E2E_WAIT_MS);
    if (!held || !runs) {
        e2e_dump_pods(a);
        e2e_dump_pods(b);
        e2e_ctl_dump(&ctl, 40);
        fail_msg("budgets: a's pod held %d, b's pod bound %d", held, runs);
    }
    assert_int_equal(e2e_count(a, NULL).bound, 0);
    if (!E2E_WAIT(budget_is(a, "state", "Exhausted") && budget_is(a, "usedGpuHours", "12.000") &&
                      budget_is(a, "remainingGpuHours", "0.000") &&
                      budget_is(b, "state", "Warning") &&
                      budget_is(b, "remainingGpuHours", "1.000"),
                  E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 40);
        fail_msg("the Projects' status.budget does not show the ledger's figures");
    }
    if (!E2E_WAIT(project_events(a, "BudgetExhausted") == 1 &&
                      project_events(b, "BudgetWarning") == 1,
                  E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 40);
        fail_msg("alerts: BudgetExhausted on a %d, BudgetWarning on b %d (want 1 each)",
                 project_events(a, "BudgetExhausted"), project_events(b, "BudgetWarning"));
    }
    assert_int_equal(project_events(b, "BudgetExhausted"), 0);

    /* A restart on the same ledger: a stays held, and neither alert comes
     * again. */
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_ctl_start(&ctl, "budget-restart", extra);
    e2e_pod(a, "a-1", NULL, "1", NULL, NULL);
    char series[256];
    snprintf(series, sizeof series, "fairshare_project_budget_alert_level{project=\"%s\"}", a);
    if (!E2E_WAIT(reason_is(a, "a-1", "BudgetExhausted") && e2e_ctl_metric(&ctl, series) == 100,
                  E2E_WAIT_MS)) {
        e2e_ctl_dump(&ctl, 40);
        fail_msg("after the restart, a's new pod is not held by its budget");
    }
    assert_int_equal(e2e_count(a, NULL).bound, 0);
    assert_true(e2e_ctl_metric(&ctl, "fairshare_project_budget_alerts_total{level=\"100\"}") == 0);
    assert_true(e2e_ctl_metric(&ctl, "fairshare_project_budget_alerts_total{level=\"80\"}") == 0);
    e2e_nap(1000);
    if (project_events(a, "BudgetExhausted") != 1 || project_events(b, "BudgetWarning") != 1)
        fail_msg("after the restart: BudgetExhausted on a %d, BudgetWarning on b %d (want 1 each)",
                 project_events(a, "BudgetExhausted"), project_events(b, "BudgetWarning"));
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_budget_alerts_once, e2e_scenario_teardown),
    };
    return cmocka_run_group_tests(tests, e2e_setup, e2e_teardown);
}
