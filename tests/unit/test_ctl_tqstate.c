/* The controller's time-based quota state (ctl/tqstate.h) over a real
 * ledger file: what goes into the snapshot (effective quotas, decayed
 * usage, held pods, notes), the snapshot's use of it (a spent budget with
 * action block rejects pending pods, overQuotaOnly caps the limit, an
 * unknown zone makes the object invalid), alerts once per level, and no
 * enforcement without a ledger. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl/snapshot.h"
#include "ctl/tqstate.h"
#include "ledger/ledger.h"

#define DAY 86400000LL
#define HOUR 3600000LL
/* Thursday 2026-11-26 12:00 UTC. */
#define NOW (20783 * DAY + 12 * HOUR)

static struct fair_ledger *ledger_at(char *path, size_t n)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, n, "%s/tq-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    struct fair_ledger_options o;
    fair_ledger_options_init(&o);
    o.path = path;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    if (fair_ledger_open(&o, &l, &err))
        fail_msg("%s", err.msg);
    return l;
}

static void used(struct fair_ledger *l, const char *uid, const char *project, int64_t gpus,
                 int64_t start, int64_t end)
{
    struct fair_ledger_interval_info in = {.uid = uid,
                                           .namespace_ = "n",
                                           .pod = uid,
                                           .queue = project,
                                           .project = project,
                                           .gpu_milli = gpus * 1000,
                                           .start_ms = start};
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
    if (end)
        assert_int_equal(fair_ledger_interval_close(l, uid, end, FAIR_LEDGER_COMPLETED, &err), 0);
    assert_int_equal(fair_ledger_flush(l, &err), 0);
}

static struct fair_kproject kp[3];
static struct fair_ktime kt[3];
static struct fair_kwindow kw[1];
static struct fair_kqueue kq[3];
static const struct fair_kproject *pp[3];
static const struct fair_kqueue *qp[3];
static struct fair_kpod pods[3];
static const struct fair_kpod *podp[3];
static char *nss[3][1] = {{"na"}, {"nb"}, {"nc"}};

static void objects(void)
{
    memset(kp, 0, sizeof kp);
    memset(kt, 0, sizeof kt);
    memset(kq, 0, sizeof kq);
    memset(pods, 0, sizeof pods);
    static char *names[3] = {"a", "b", "c"};
    static char *qnames[3] = {"qa", "qb", "qc"};
    for (int i = 0; i < 3; i++) {
        kp[i].meta.name = names[i];
        kp[i].meta.uid = names[i];
        kp[i].quota.guaranteed.v[FAIR_RES_GPU] = 2000;
        for (int r = 0; r < FAIR_RES_COUNT; r++)
            kp[i].quota.limit.v[r] = FAIR_UNLIMITED;
        kp[i].quota.over_quota_weight = 1;
        kp[i].namespaces = nss[i];
        kp[i].nnamespaces = 1;
        kp[i].time = &kt[i];
        kt[i].usage_half_life_ms = 7 * DAY;
        pp[i] = &kp[i];
        kq[i].meta.name = qnames[i];
        kq[i].meta.uid = qnames[i];
        kq[i].project = names[i];
        kq[i].quota = kp[i].quota;
        qp[i] = &kq[i];
        pods[i].meta.uid = qnames[i];
        pods[i].meta.name = qnames[i];
        pods[i].meta.namespace_ = nss[i][0];
        pods[i].scheduler_name = "fairshare";
        pods[i].queue = qnames[i];
        pods[i].request.v[FAIR_RES_GPU] = 1000;
        pods[i].phase = FAIR_KPOD_PENDING;
        podp[i] = &pods[i];
    }
    /* a: 10 GPU-hours a day, block; b: 10 a week, overQuotaOnly; c: a
     * window all day in a zone that does not exist. */
    kt[0].budget_milli_hours = 10000;
    kt[0].budget_period = FAIR_KBUDGET_DAY;
    kt[0].budget_action = FAIR_KBUDGET_BLOCK;
    kt[1].budget_milli_hours = 10000;
    kt[1].budget_period = FAIR_KBUDGET_WEEK;
    memset(kw, 0, sizeof kw);
    snprintf(kw[0].name, sizeof kw[0].name, "all");
    kw[0].days = 0x7f;
    kw[0].end_min = 1440;
    snprintf(kw[0].time_zone, sizeof kw[0].time_zone, "Mars/Olympus_Mons");
    kt[2].windows = kw;
    kt[2].nwindows = 1;
}

static void input(struct fair_ctl_snapshot_input *in)
{
    memset(in, 0, sizeof *in);
    in->scheduler_name = "fairshare";
    in->now_ms = NOW;
    in->projects = pp;
    in->nprojects = 3;
    in->queues = qp;
    in->nqueues = 3;
    in->pods = podp;
    in->npods = 3;
}

static int nalerts, last_level;
static size_t last_project;
static void on_alert(void *ctx, size_t project, int level, const char *message)
{
    (void)ctx;
    assert_non_null(strstr(message, "GPU-hour budget"));
    nalerts++;
    last_level = level;
    last_project = project;
}

/* Prepares t over l at now_ms and mono_ms with a fresh input (in) and
 * takes the alerts due: returns how many (last_level, last_project: the
 * last one's). */
static int alerts_at(struct fair_ctl_tq *t, struct fair_ledger *l, int64_t now_ms, int64_t mono_ms,
                     struct fair_ctl_snapshot_input *in)
{
    input(in);
    assert_int_equal(fair_ctl_tq_prepare(t, l, now_ms, mono_ms, in), 0);
    nalerts = 0;
    fair_ctl_tq_alerts(t, on_alert, NULL);
    return nalerts;
}

static void test_with_ledger(void **state)
{
    (void)state;
    char path[256];
    struct fair_ledger *l = ledger_at(path, sizeof path);
    /* a: 12 GPU-hours today; b: 9 this week (Monday), 5 of them open. */
    used(l, "a1", "a", 12, NOW - 2 * HOUR, NOW - HOUR);
    used(l, "b1", "b", 4, NOW - 2 * DAY, NOW - 2 * DAY + HOUR);
    used(l, "b2", "b", 5, NOW - HOUR, 0);
    /* The heartbeat, so that the open interval (still live) counts up to
     * now. */
    struct fair_error err = {0};
    struct fair_ledger_interval_info live = {.uid = "b2",
                                             .namespace_ = "n",
                                             .pod = "b2",
                                             .queue = "b",
                                             .project = "b",
                                             .gpu_milli = 5000,
                                             .start_ms = NOW - HOUR};
    assert_int_equal(fair_ledger_reconcile(l, NOW, &live, 1, NULL, NULL, &err), 0);
    objects();
    struct fair_ctl_tq_options o = {.time_zone = "UTC", .refresh_ms = 60000};
    struct fair_ctl_tq *t = NULL;
    assert_int_equal(fair_ctl_tq_new(&o, &t, &err), 0);
    struct fair_ctl_snapshot_input in;
    input(&in);
    assert_int_equal(fair_ctl_tq_prepare(t, l, NOW, 1000, &in), 0);
    /* a: spent, block. */
    const struct fair_ctl_status_time *st = fair_ctl_tq_project_status(t, 0);
    assert_non_null(st);
    assert_true(st->budget_known);
    assert_int_equal(st->used_mms, 12 * FAIR_LEDGER_GPU_HOUR_MMS);
    assert_string_equal(st->budget_state, "Exhausted");
    assert_non_null(in.project_hold[0]);
    assert_non_null(strstr(in.project_hold[0], "no new pods start until 2026-11-27T00:00:00Z"));
    /* b: 4 closed + 5 open for an hour = 9 of 10: a warning, no cap. */
    st = fair_ctl_tq_project_status(t, 1);
    assert_int_equal(st->period_start_ms, 20780 * DAY); /* Monday 2026-11-23 */
    assert_string_equal(st->budget_state, "Warning");
    assert_null(in.project_note[1]);
    assert_int_equal(in.project_quota[1].limit.v[FAIR_RES_GPU], FAIR_UNLIMITED);
    /* Decayed usage: a's 12 GPU-hours aged 1 to 2 hours, b's more. */
    assert_non_null(in.project_usage);
    assert_true(in.project_usage[0] > 11 * FAIR_LEDGER_GPU_HOUR_MMS);
    assert_true(in.project_usage[0] < 12 * FAIR_LEDGER_GPU_HOUR_MMS);
    assert_true(in.project_usage[1] > 8 * FAIR_LEDGER_GPU_HOUR_MMS);
    assert_int_equal(in.project_usage[2], 0);
    /* c: invalid (unknown zone). */
    assert_non_null(in.project_invalid[2]);
    assert_non_null(strstr(in.project_invalid[2], "Mars/Olympus_Mons"));
    /* Alerts: a at 100, b at 80, once. */
    nalerts = 0;
    fair_ctl_tq_alerts(t, on_alert, NULL);
    assert_int_equal(nalerts, 2);
    /* The snapshot: a's pod rejected, b's taken, c left out. */
    struct fair_ctl_snapshot s;
    assert_int_equal(fair_ctl_snapshot_build(&in, &s, &err), 0);
    assert_int_equal(s.nrejected, 2);
    bool a_held = false;
    for (size_t i = 0; i < s.nrejected; i++)
        if (s.rejected[i].pod == &pods[0]) {
            a_held = s.rejected[i].reason == FAIR_CTL_REASON_BUDGET_EXHAUSTED;
            assert_non_null(strstr(s.rejected[i].message, "spent its GPU-hour budget"));
        }
    assert_true(a_held);
    assert_int_equal(s.project_index[2], -1);
    assert_non_null(strstr(s.project_problem[2], "unknown time zone"));
    assert_int_equal(s.snap.npods, 1);
    assert_true(s.snap.projects[0].usage > 0);
    fair_ctl_snapshot_release(&s);
    /* b passes its budget: overQuotaOnly caps the limit at the guarantee
     * after the next refresh, and alerts once more (100). */
    used(l, "b3", "b", 2, NOW - 30 * 60000, NOW);
    assert_int_equal(alerts_at(t, l, NOW + 1000, 1000 + 60000, &in), 1);
    assert_non_null(in.project_note[1]);
    assert_int_equal(in.project_quota[1].limit.v[FAIR_RES_GPU], 2000);
    assert_int_equal(in.project_quota[1].limit.v[FAIR_RES_CPU], 0); /* min(limit, guarantee) */
    assert_int_equal(last_level, 100);
    assert_int_equal(last_project, 1);
    /* Metrics. */
    struct fair_buf b;
    fair_buf_init(&b, 1 << 20);
    assert_int_equal(fair_ctl_tq_metrics(t, &b), 0);
    char *text = fair_buf_detach(&b);
    assert_non_null(strstr(text, "fairshare_project_budget_alert_level{project=\"a\"} 100\n"));
    assert_non_null(strstr(text, "fairshare_project_budget_alert_level{project=\"b\"} 100\n"));
    assert_non_null(strstr(text, "fairshare_project_budget_alerts_total{level=\"100\"} 2\n"));
    free(text);
    fair_buf_release(&b);
    fair_ctl_tq_free(t);
    fair_ledger_free(l);
    unlink(path);
}

/* A new process (restart, or another replica taking the lease) takes the
 * alerts that the Projects' status shows for the current period as sent:
 * b's Warning of this week is not sent again, and its 100 is, once it is
 * reached; a's status is of yesterday, so today's alert is sent. */
static void test_alerts_after_restart(void **state)
{
    (void)state;
    char path[256];
    struct fair_ledger *l = ledger_at(path, sizeof path);
    used(l, "a1", "a", 12, NOW - 2 * HOUR, NOW - HOUR);
    used(l, "b1", "b", 9, NOW - 2 * DAY, NOW - 2 * DAY + HOUR);
    objects();
    kp[0].budget_level_seen = 100;
    kp[0].budget_from_seen_ms = 20782 * DAY; /* yesterday */
    kp[1].budget_level_seen = 80;
    kp[1].budget_from_seen_ms = 20780 * DAY; /* this week, Monday */
    struct fair_error err = {0};
    struct fair_ctl_tq_options o = {.time_zone = "UTC", .refresh_ms = 60000};
    struct fair_ctl_tq *t = NULL;
    assert_int_equal(fair_ctl_tq_new(&o, &t, &err), 0);
    struct fair_ctl_snapshot_input in;
    assert_int_equal(alerts_at(t, l, NOW, 1000, &in), 1);
    assert_string_equal(fair_ctl_tq_project_status(t, 1)->budget_state, "Warning");
    assert_int_equal(last_project, 0);
    assert_int_equal(last_level, 100);
    /* The next refresh: nothing new. */
    assert_int_equal(alerts_at(t, l, NOW + 1000, 1000 + 60000, &in), 0);
    /* b spends the rest: its 100 is sent. */
    used(l, "b2", "b", 2, NOW - 30 * 60000, NOW);
    assert_int_equal(alerts_at(t, l, NOW + 2000, 1000 + 120000, &in), 1);
    assert_int_equal(last_project, 1);
    assert_int_equal(last_level, 100);
    fair_ctl_tq_free(t);
    fair_ledger_free(l);
    unlink(path);
}

static void test_without_ledger(void **state)
{
    (void)state;
    objects();
    kw[0].time_zone[0] = 0; /* the controller's zone */
    struct fair_error err = {0};
    struct fair_ctl_tq_options o = {.time_zone = "Europe/Berlin"};
    struct fair_ctl_tq *t = NULL;
    assert_int_equal(fair_ctl_tq_new(&o, &t, &err), 0);
    struct fair_ctl_snapshot_input in;
    input(&in);
    assert_int_equal(fair_ctl_tq_prepare(t, NULL, NOW, 0, &in), 0);
    const struct fair_ctl_status_time *st = fair_ctl_tq_project_status(t, 0);
    assert_false(st->budget_known);
    assert_null(in.project_hold[0]);
    assert_null(in.project_usage);
    /* Berlin's day: from 23:00 UTC the day before. */
    assert_int_equal(st->period_start_ms, 20782 * DAY + 23 * HOUR);
    st = fair_ctl_tq_project_status(t, 2);
    assert_true(st->has_schedule);
    assert_string_equal(st->window, "all");
    assert_int_equal(st->next_switch_ms, 0); /* always on */
    assert_null(in.project_invalid[2]);
    fair_ctl_tq_free(t);
    /* A bad controller zone fails at creation. */
    o.time_zone = "Nowhere/Nothing";
    assert_int_equal(fair_ctl_tq_new(&o, &t, &err), FAIR_EINVAL);
    assert_null(t);
}

/* Issue 15: decayed usage per queue, from the ledger, with the project's
 * half-life. Project a has two queues: qa ran 6 GPUs and qb 2 for the
 * same hour, so qa's decayed usage is 3 times qb's and the two add up to
 * the project's; the engine's queues carry it. */
static void test_queue_usage(void **state)
{
    (void)state;
    char path[256];
    struct fair_ledger *l = ledger_at(path, sizeof path);
    struct fair_error err = {0};
    const char *qs[2] = {"qa", "qb"};
    int64_t g[2] = {6, 2};
    for (int i = 0; i < 2; i++) {
        struct fair_ledger_interval_info iv = {.uid = qs[i],
                                               .namespace_ = "na",
                                               .pod = qs[i],
                                               .queue = qs[i],
                                               .project = "a",
                                               .gpu_milli = g[i] * 1000,
                                               .start_ms = NOW - 2 * HOUR};
        assert_int_equal(fair_ledger_interval_open(l, &iv, &err), 0);
        assert_int_equal(
            fair_ledger_interval_close(l, qs[i], NOW - HOUR, FAIR_LEDGER_COMPLETED, &err), 0);
    }
    assert_int_equal(fair_ledger_flush(l, &err), 0);
    objects();
    kt[0].budget_period = FAIR_KBUDGET_NONE;
    kt[1].usage_half_life_ms = 0; /* b: no decay, so neither for its queue */
    kt[2].nwindows = 0;
    kq[1].project = "a"; /* qb is a's second queue */
    kq[1].meta.name = "qb";
    struct fair_ctl_tq_options o = {.time_zone = "UTC", .refresh_ms = 60000};
    struct fair_ctl_tq *t = NULL;
    assert_int_equal(fair_ctl_tq_new(&o, &t, &err), 0);
    struct fair_ctl_snapshot_input in;
    input(&in);
    assert_int_equal(fair_ctl_tq_prepare(t, l, NOW, 1000, &in), 0);
    assert_non_null(in.queue_usage);
    int64_t ua = in.queue_usage[0], ub = in.queue_usage[1];
    assert_true(ua > 5 * FAIR_LEDGER_GPU_HOUR_MMS && ua < 6 * FAIR_LEDGER_GPU_HOUR_MMS);
    assert_true(ub * 3 - ua <= 3 && ua - ub * 3 <= 3);
    assert_true(llabs(in.project_usage[0] - (ua + ub)) <= 2);
    assert_int_equal(in.queue_usage[2], 0); /* qc: no usage in the ledger */
    struct fair_ctl_snapshot s;
    assert_int_equal(fair_ctl_snapshot_build(&in, &s, &err), 0);
    int seen = 0;
    for (size_t i = 0; i < s.snap.nqueues; i++) {
        if (!strcmp(s.snap.queues[i].q.name, "qa"))
            seen += s.snap.queues[i].usage == ua;
        if (!strcmp(s.snap.queues[i].q.name, "qb"))
            seen += s.snap.queues[i].usage == ub;
    }
    assert_int_equal(seen, 2);
    fair_ctl_snapshot_release(&s);
    /* Without a ledger: no queue usage. */
    input(&in);
    struct fair_ctl_tq *t2 = NULL;
    assert_int_equal(fair_ctl_tq_new(&o, &t2, &err), 0);
    assert_int_equal(fair_ctl_tq_prepare(t2, NULL, NOW, 1000, &in), 0);
    assert_null(in.queue_usage);
    fair_ctl_tq_free(t2);
    fair_ctl_tq_free(t);
    fair_ledger_free(l);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_with_ledger),
        cmocka_unit_test(test_alerts_after_restart),
        cmocka_unit_test(test_without_ledger),
        cmocka_unit_test(test_queue_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
