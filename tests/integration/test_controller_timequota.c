/* Time-based quota end to end (docs/api.md, "Time-based quota"): the
 * controller against the fake API server with a real ledger file that
 * already holds usage. Budgets (block, overQuotaOnly, the 80% warning,
 * Events, metrics, status, and the same after a restart), decayed usage
 * weighting the surplus, and a schedule window switching at its minute. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture_ledger.h"
#include "ledger/ledger.h"
#include "test_controller_common.h"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct fair_ledger *ledger_new(const char *path)
{
    struct fair_ledger_options o;
    fair_ledger_options_init(&o);
    o.path = path;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    if (fair_ledger_open(&o, &l, &err))
        fail_msg("ledger: %s", err.msg);
    return l;
}

static void ledger_done(struct fair_ledger *l)
{
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_flush(l, &err), 0);
    fair_ledger_free(l);
}

/* A config whose timeZone puts local noon near now (a fixed-offset zone),
 * so that "today" has at least six hours behind it whenever the test
 * runs; extra: more YAML lines. */
static void write_config(struct fair_fake *f, struct ctl *c, const char *extra)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    int off = 12 - tm.tm_hour; /* local = UTC + off: -11 .. +12 */
    char name[32];
    snprintf(name, sizeof name, "%d", (int)getpid());
    config_write(c->config, sizeof c->config, f, name,
                 "timeZone: Etc/GMT%+d\nfairShare:\n  usageRefresh: 1s\n%s", -off,
                 extra ? extra : "");
}

static void mk(struct fair_fake *f, const char *kind, const char *body)
{
    char path[128];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/%s", kind);
    must_create(f, path, body);
}

static json_t *project_status(struct fair_fake *f, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/projects/%s", name);
    json_t *p = list(f, path);
    json_t *st = p ? json_incref(json_object_get(p, "status")) : NULL;
    json_decref(p);
    return st;
}

/* status.<a>.<b> of a Project is want. */
static bool pstatus_is(struct fair_fake *f, const char *name, const char *a, const char *b,
                       const char *want)
{
    json_t *st = project_status(f, name);
    const char *v = json_string_value(json_object_get(json_object_get(st, a), b));
    bool ok = v && strcmp(v, want) == 0;
    json_decref(st);
    return ok;
}

static int project_events(struct fair_fake *f, const char *reason, const char *project)
{
    return count_events(f, reason, NULL, project);
}

static void project_json(char *out, size_t n, const char *name, const char *ns, int guaranteed,
                         const char *extra)
{
    snprintf(out, n,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\","
             "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"],"
             "\"guaranteed\":{\"gpu\":%d}%s}}",
             name, ns, guaranteed, extra ? extra : "");
}

/* Three projects with daily budgets, usage already in the ledger:
 * a spent 12 of 10 GPU-hours (block), b 9 of 10 (warning only), c 6 of 5
 * (overQuotaOnly). */
static void test_budgets(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    struct fair_fake_opts o = {.nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"ta", "tb", "tc", NULL};
    mk_namespaces(&fake, ns);
    memset(&c, 0, sizeof c);
    snprintf(c.ledger, sizeof c.ledger, "%s/ledger-budget.db", fake.dir);
    write_config(&fake, &c, NULL);
    int64_t now = wall_ms();
    struct fair_ledger *l = ledger_new(c.ledger);
    /* 120 GPUs for 6 minutes = 12 GPU-hours, and so on; all within the
     * last 10 minutes, so within "today" of the configured zone. */
    fixture_ledger_add(l, "old-a", "a", 120, now - 8 * 60000, now - 2 * 60000);
    fixture_ledger_add(l, "old-b", "b", 90, now - 8 * 60000, now - 2 * 60000);
    fixture_ledger_add(l, "old-c", "c", 60, now - 8 * 60000, now - 2 * 60000);
    ledger_done(l);
    char body[1024];
    project_json(body, sizeof body, "a", "ta", 2,
                 ",\"budget\":{\"gpuHours\":10,\"period\":\"day\",\"action\":\"block\"}");
    mk(&fake, "projects", body);
    project_json(body, sizeof body, "b", "tb", 2,
                 ",\"budget\":{\"gpuHours\":10,\"period\":\"day\"}");
    mk(&fake, "projects", body);
    project_json(body, sizeof body, "c", "tc", 2,
                 ",\"budget\":{\"gpuHours\":5,\"period\":\"day\",\"action\":\"overQuotaOnly\"}");
    mk(&fake, "projects", body);
    mk_queue(&fake, "qa", "a", "2", 1);
    mk_queue(&fake, "qb", "b", "2", 1);
    mk_queue(&fake, "qc", "c", "2", 1);
    assert_int_equal(ctl_start(&c, &fake, "budget"), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS))
        fail_msg("controller not ready");
    mk_pod(&fake, "ta", "a-0", "qa", "1");
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "b-%d", i);
        mk_pod(&fake, "tb", name, "qb", "1");
        snprintf(name, sizeof name, "c-%d", i);
        mk_pod(&fake, "tc", name, "qc", "1");
    }
    /* b borrows (its budget is not spent); c stays within its guarantee. */
    if (!WAIT_UNTIL(count_pods(&fake, "tb", 1) == 4 && count_pods(&fake, "tc", 1) == 2 &&
                        pod_condition_is(&fake, "ta", "a-0", "PodScheduled", "BudgetExhausted"),
                    WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("budgets not enforced: b %d bound, c %d bound", count_pods(&fake, "tb", 1),
                 count_pods(&fake, "tc", 1));
    }
    assert_int_equal(count_pods(&fake, "ta", 1), 0);
    /* c's waiting pods say why. */
    char *msg = NULL;
    for (int i = 0; i < 4 && !msg; i++) {
        snprintf(name, sizeof name, "c-%d", i);
        char *node = pod_node(&fake, "tc", name, NULL);
        if (!*node)
            msg = event_message(&fake, "FailedScheduling", "tc", name);
        free(node);
    }
    assert_non_null(msg);
    if (!strstr(msg, "project c spent its GPU-hour budget for this day (6.000 of 5.000"))
        fail_msg("c's pending message: %s", msg);
    free(msg);
    /* Status, Events, metrics. */
    assert_true(WAIT_UNTIL(pstatus_is(&fake, "a", "budget", "state", "Exhausted") &&
                               pstatus_is(&fake, "a", "budget", "usedGpuHours", "12.000") &&
                               pstatus_is(&fake, "a", "budget", "remainingGpuHours", "0.000") &&
                               pstatus_is(&fake, "b", "budget", "state", "Warning") &&
                               pstatus_is(&fake, "b", "budget", "remainingGpuHours", "1.000") &&
                               pstatus_is(&fake, "c", "budget", "state", "Exhausted"),
                           WAIT_MS));
    assert_true(WAIT_UNTIL(project_events(&fake, "BudgetExhausted", "a") == 1 &&
                               project_events(&fake, "BudgetWarning", "b") == 1 &&
                               project_events(&fake, "BudgetExhausted", "c") == 1,
                           WAIT_MS));
    assert_int_equal(project_events(&fake, "BudgetExhausted", "b"), 0);
    json_t *evs = list(&fake, "/api/v1/namespaces/default/events");
    assert_true(json_array_size(json_object_get(evs, "items")) >= 3);
    json_decref(evs);
    assert_true(ctl_metric(&c, "fairshare_project_budget_alert_level{project=\"a\"}") == 100);
    assert_true(ctl_metric(&c, "fairshare_project_budget_alert_level{project=\"b\"}") == 80);
    assert_true(fabs(ctl_metric(&c, "fairshare_project_budget_used_ratio{project=\"b\"}") - 0.9) <
                1e-6);
    /* A restart reads the same from the ledger. */
    ctl_kill9(&c);
    assert_int_equal(ctl_start(&c, &fake, "budget2"), 0);
    assert_true(WAIT_UNTIL(ctl_ready(&c), WAIT_MS));
    assert_true(WAIT_UNTIL(
        ctl_metric(&c, "fairshare_project_budget_alert_level{project=\"a\"}") == 100, WAIT_MS));
    mk_pod(&fake, "ta", "a-1", "qa", "1");
    assert_true(WAIT_UNTIL(pod_condition_is(&fake, "ta", "a-1", "PodScheduled", "BudgetExhausted"),
                           WAIT_MS));
    assert_int_equal(count_pods(&fake, "ta", 1), 0);
    assert_int_equal(count_pods(&fake, "tc", 1), 2);
    /* ... and takes the alerts the Projects' status shows for today as
     * sent: none again (before, a restart sent all three once more). */
    assert_true(ctl_metric(&c, "fairshare_project_budget_alerts_total{level=\"100\"}") == 0);
    assert_true(ctl_metric(&c, "fairshare_project_budget_alerts_total{level=\"80\"}") == 0);
    usleep(500 * 1000);
    if (project_events(&fake, "BudgetExhausted", "a") != 1 ||
        project_events(&fake, "BudgetWarning", "b") != 1 ||
        project_events(&fake, "BudgetExhausted", "c") != 1)
        fail_msg("after the restart: BudgetExhausted a %d, BudgetWarning b %d, BudgetExhausted c "
                 "%d (want 1 each)",
                 project_events(&fake, "BudgetExhausted", "a"),
                 project_events(&fake, "BudgetWarning", "b"),
                 project_events(&fake, "BudgetExhausted", "c"));
    stop_all(&fake, &c);
}

static bool queue_fair_share(struct fair_fake *f, const char *q, const char *want)
{
    return queue_gpu_is(f, q, "fairShare", want);
}

/* x used 100 GPU-hours three days ago, y nothing; with a 7-day half-life
 * x's weight is 1/4 of y's (2^-2 against 2^0) and the 16 GPUs share as
 * 3.2 / 12.8 (the half-life is the controller's default). */
static void test_decayed_usage(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    struct fair_fake_opts o = {.nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"tx", "ty", NULL};
    mk_namespaces(&fake, ns);
    memset(&c, 0, sizeof c);
    snprintf(c.ledger, sizeof c.ledger, "%s/ledger-usage.db", fake.dir);
    write_config(&fake, &c, "  usageHalfLife: 168h\n");
    int64_t now = wall_ms();
    struct fair_ledger *l = ledger_new(c.ledger);
    fixture_ledger_add(l, "old-x", "x", 10, now - 3 * 86400000LL - 10 * 3600000LL,
                       now - 3 * 86400000LL);
    ledger_done(l);
    char body[1024];
    project_json(body, sizeof body, "x", "tx", 0, NULL);
    mk(&fake, "projects", body);
    project_json(body, sizeof body, "y", "ty", 0, NULL);
    mk(&fake, "projects", body);
    mk_queue(&fake, "qx", "x", "0", 1);
    mk_queue(&fake, "qy", "y", "0", 1);
    /* All the demand is there at the first cycle (pods that came first
     * would otherwise borrow, and reclaim waits out their minimum run
     * time). */
    char name[32];
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "x-%02d", i);
        mk_pod(&fake, "tx", name, "qx", "1");
        snprintf(name, sizeof name, "y-%02d", i);
        mk_pod(&fake, "ty", name, "qy", "1");
    }
    assert_int_equal(ctl_start(&c, &fake, "usage"), 0);
    assert_true(WAIT_UNTIL(ctl_ready(&c), WAIT_MS));
    if (!WAIT_UNTIL(queue_fair_share(&fake, "qx", "3.2") && queue_fair_share(&fake, "qy", "12.8"),
                    WAIT_MS)) {
        json_t *st = queue_status(&fake, "qx");
        char *s = json_dumps(st, 0);
        ctl_dump_log(&c, 40);
        fail_msg("fair shares not weighted by usage: qx status %s", s ? s : "(none)");
    }
    assert_true(WAIT_UNTIL(count_pods(&fake, "tx", 1) + count_pods(&fake, "ty", 1) == 16, WAIT_MS));
    assert_true(count_pods(&fake, "ty", 1) >= 12);
    /* Status: x's usage, decayed (100 GPU-hours, aged about 3 days). */
    json_t *st = project_status(&fake, "x");
    const char *u =
        json_string_value(json_object_get(json_object_get(st, "usage"), "decayedGpuHours"));
    assert_non_null(u);
    double v = strtod(u, NULL);
    /* 100 x 2^(-age / 7 days), age about 3 days (each past day is aged
     * from its middle: 2.5 to 4 days). */
    if (v < 60 || v > 85)
        fail_msg("decayed usage %s", u);
    json_decref(st);
    /* y's usage is what its pods ran since they started (open intervals
     * count up to now): a few GPU-seconds. */
    st = project_status(&fake, "y");
    u = json_string_value(json_object_get(json_object_get(st, "usage"), "decayedGpuHours"));
    assert_non_null(u);
    assert_true(strtod(u, NULL) < 1.0);
    json_decref(st);
    assert_true(pstatus_is(&fake, "y", "usage", "halfLife", "168h0m0s"));
    stop_all(&fake, &c);
}

/* A queue's window starts at the next full minute (UTC): before, the spec
 * (guaranteed 1) and the next switch; after, the window's guarantee. */
static void test_schedule_switch(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 1, 8, "schedule");
    const char *ns[] = {"tw", NULL};
    mk_namespaces(&fake, ns);
    char body[2048];
    project_json(body, sizeof body, "w", "tw", 8, NULL);
    mk(&fake, "projects", body);
    int64_t now = wall_ms();
    int64_t start = (now / 60000 + 1) * 60000; /* the next full minute */
    time_t ts = (time_t)(start / 1000), te = ts + 3600;
    struct tm a, b;
    gmtime_r(&ts, &a);
    gmtime_r(&te, &b);
    char nextsw[40];
    strftime(nextsw, sizeof nextsw, "%Y-%m-%dT%H:%M:%SZ", &a);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\","
             "\"metadata\":{\"name\":\"qw\"},\"spec\":{\"project\":\"w\","
             "\"guaranteed\":{\"gpu\":1},\"schedule\":[{\"name\":\"later\",\"start\":"
             "\"%02d:%02d\",\"end\":\"%02d:%02d\",\"timeZone\":\"UTC\","
             "\"guaranteed\":{\"gpu\":6}}]}}",
             a.tm_hour, a.tm_min, b.tm_hour, b.tm_min);
    mk(&fake, "queues", body);
    if (start - now > 5000) {
        json_t *st = NULL;
        bool ok = WAIT_UNTIL((json_decref(st), st = queue_status(&fake, "qw"),
                              st && json_object_get(st, "schedule")),
                             WAIT_MS);
        assert_true(ok);
        json_t *sc = json_object_get(st, "schedule");
        if (start - wall_ms() > 1000) {
            assert_string_equal(json_string_value(json_object_get(sc, "activeWindow")), "");
            assert_string_equal(json_string_value(json_object_get(sc, "nextSwitch")), nextsw);
            assert_true(queue_gpu_is(&fake, "qw", "guaranteed", "1"));
        }
        json_decref(st);
    }
    bool on = WAIT_UNTIL(queue_gpu_is(&fake, "qw", "guaranteed", "6"), 70000);
    if (!on) {
        ctl_dump_log(&c, 40);
        fail_msg("the window did not start");
    }
    assert_true(wall_ms() >= start);
    json_t *st = queue_status(&fake, "qw");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(st, "schedule"), "activeWindow")),
        "later");
    json_decref(st);
    stop_all(&fake, &c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_budgets, tc_teardown),
        cmocka_unit_test_teardown(test_decayed_usage, tc_teardown),
        cmocka_unit_test_teardown(test_schedule_switch, tc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
