/* Unit tests for lib/ledger: exact GPU-hours over real SQLite files, across
 * period boundaries and time zones, fractions, lent derivation, restart
 * and reconcile, retention, and the failure modes (locked, corrupt, full). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "ledger/ledger.h"
#include "ledger/report.h"

#define H FAIR_LEDGER_GPU_HOUR_MMS

static char dir[64];
static char path[128];

static int64_t T(const char *s)
{
    int64_t ms = 0;
    assert_int_equal(fair_time_parse_rfc3339(s, &ms), 0);
    return ms;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/fair_ledger_unit_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ledger.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static struct fair_ledger *open_ledger(void)
{
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    o.busy_timeout_ms = 50;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    return l;
}

static void open_iv(struct fair_ledger *l, const char *uid, const char *ns, const char *queue,
                    const char *team, const char *model, int64_t milli, int64_t inq, int64_t start)
{
    struct fair_ledger_interval_info in = {
        .uid = uid,
        .namespace_ = ns,
        .pod = uid,
        .queue = queue,
        .project = team,
        .team = team,
        .cost_center = "cc-1",
        .node = "node-1",
        .gpu_model = model,
        .gpu_milli = milli,
        .inquota_milli = inq,
        .start_ms = start,
    };
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
}

static void close_iv(struct fair_ledger *l, const char *uid, int64_t end, enum fair_ledger_end r)
{
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_interval_close(l, uid, end, r, &err), 0);
}

static void flush(struct fair_ledger *l)
{
    struct fair_error err = {0};
    int rc = fair_ledger_flush(l, &err);
    if (rc)
        fprintf(stderr, "flush: %s\n", err.msg);
    assert_int_equal(rc, 0);
}

static void heartbeat(struct fair_ledger *l, int64_t now)
{
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_sample(l, now, NULL, 0, &err), 0);
}

static struct fair_report *report(struct fair_ledger *l, int64_t from, int64_t to,
                                  enum fair_report_by by)
{
    struct fair_report_params p = {.from_ms = from, .to_ms = to, .by = by};
    struct fair_report *r = NULL;
    struct fair_error err = {0};
    int rc = fair_report_run(l, &p, &r, &err);
    if (rc)
        fprintf(stderr, "report: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return r;
}

static const struct fair_report_row *row(const struct fair_report *r, const char *key)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->rows[i].key, key) == 0)
            return &r->rows[i];
    fail_msg("no row %s", key);
    return NULL;
}

/* The November fixture used by several tests. */
static void november(struct fair_ledger *l)
{
    /* a: 0.25 GPU for 4 hours = 1 GPU-hour, all in quota */
    open_iv(l, "u1", "ns-a", "qa", "alpha", "A100", 250, 250, T("2026-11-02T10:00:00Z"));
    close_iv(l, "u1", T("2026-11-02T14:00:00Z"), FAIR_LEDGER_COMPLETED);
    /* a: 2 GPUs, half in quota, across the period start: 2 h in November */
    open_iv(l, "u2", "ns-a", "qa", "alpha", "A100", 2000, 1000, T("2026-10-31T22:00:00Z"));
    close_iv(l, "u2", T("2026-11-01T02:00:00Z"), FAIR_LEDGER_COMPLETED);
    /* b: 1 GPU borrowed, preempted, across the period end: 1 h in November */
    open_iv(l, "u3", "ns-b", "qb", "beta", "H100", 1000, 0, T("2026-11-30T23:00:00Z"));
    close_iv(l, "u3", T("2026-12-01T01:00:00Z"), FAIR_LEDGER_PREEMPTED);
    /* b: 0.5 GPU, still running, known alive until the heartbeat */
    open_iv(l, "u4", "ns-b", "qb", "beta", "H100", 500, 500, T("2026-11-10T00:00:00Z"));
    heartbeat(l, T("2026-11-10T06:00:00Z"));
    flush(l);
}

/* issue 15: --by team,model: one row per team and GPU model, the model in
 * a column of its own, lent unknown (sampled per queue), and the same
 * totals as by team. Full days come from the rollups, the edges from raw
 * rows, both split by model. */
static void test_report_by_team_and_model(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    november(l);
    /* alpha also ran 1 GPU of H100 for 3 hours. */
    open_iv(l, "u5", "ns-a", "qa", "alpha", "H100", 1000, 1000, T("2026-11-05T01:00:00Z"));
    close_iv(l, "u5", T("2026-11-05T04:00:00Z"), FAIR_LEDGER_COMPLETED);
    flush(l);
    struct fair_report_params p = {.from_ms = T("2026-11-01T00:00:00Z"),
                                   .to_ms = T("2026-12-01T00:00:00Z"),
                                   .by = FAIR_REPORT_BY_TEAM,
                                   .by_model = 1};
    struct fair_report *r = NULL;
    struct fair_error err = {0};
    assert_int_equal(fair_report_run(l, &p, &r, &err), 0);
    assert_int_equal(r->n, 3);
    assert_int_equal(row(r, "alpha\tA100")->gpu_mms, 5 * H);
    assert_int_equal(row(r, "alpha\tH100")->gpu_mms, 3 * H);
    assert_int_equal(row(r, "beta\tH100")->gpu_mms, 4 * H);
    assert_int_equal(row(r, "beta\tH100")->preempted_mms, 1 * H);
    assert_int_equal(r->total.gpu_mms, 12 * H);
    assert_int_equal(r->lent_known, 0);
    struct fair_buf out;
    fair_buf_init(&out, 0);
    assert_int_equal(fair_report_render(r, FAIR_REPORT_CSV, NULL, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out),
                        "team,model,gpu_hours,in_quota_gpu_hours,borrowed_gpu_hours,"
                        "preempted_gpu_hours,lent_gpu_hours,avg_gpus,pods\n"
                        "alpha,A100,5.000,3.000,2.000,0.000,,0.007,2\n"
                        "alpha,H100,3.000,3.000,0.000,0.000,,0.004,1\n"
                        "beta,H100,4.000,3.000,1.000,1.000,,0.006,2\n"
                        "TOTAL,,12.000,9.000,3.000,1.000,,0.017,5\n");
    fair_buf_reset(&out);
    assert_int_equal(fair_report_render(r, FAIR_REPORT_JSON, NULL, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "{\"team\":\"alpha\",\"model\":\"H100\","));
    assert_non_null(strstr(fair_buf_str(&out), "\"total\":{\"team\":\"TOTAL\",\"model\":null,"));
    fair_buf_reset(&out);
    assert_int_equal(fair_report_render(r, FAIR_REPORT_TABLE, NULL, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "TEAM  MODEL    GPU-HOURS"));
    assert_non_null(strstr(fair_buf_str(&out), "\nalpha H100         3.000"));
    fair_buf_release(&out);
    fair_report_free(r);
    /* The parser: ",model" after any grouping, nothing else. */
    assert_int_equal(fair_report_by_parse("team,model"),
                     FAIR_REPORT_BY_TEAM | FAIR_REPORT_BY_MODEL);
    assert_int_equal(fair_report_by_parse("queue,model"),
                     FAIR_REPORT_BY_QUEUE | FAIR_REPORT_BY_MODEL);
    assert_int_equal(fair_report_by_parse("model"), -1);
    assert_int_equal(fair_report_by_parse("team,models"), -1);
    fair_ledger_free(l);
}

static void test_exact_across_boundaries(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    november(l);
    struct fair_report *r =
        report(l, T("2026-11-01T00:00:00Z"), T("2026-12-01T00:00:00Z"), FAIR_REPORT_BY_TEAM);
    assert_int_equal(r->n, 2);
    const struct fair_report_row *a = row(r, "alpha"), *b = row(r, "beta");
    assert_int_equal(a->gpu_mms, 1 * H + 4 * H);
    assert_int_equal(a->inquota_mms, 1 * H + 2 * H);
    assert_int_equal(a->borrowed_mms, 2 * H);
    assert_int_equal(a->preempted_mms, 0);
    assert_int_equal(a->pods, 2);
    assert_int_equal(b->gpu_mms, 1 * H + 3 * H);
    assert_int_equal(b->inquota_mms, 3 * H);
    assert_int_equal(b->borrowed_mms, 1 * H);
    assert_int_equal(b->preempted_mms, 1 * H);
    assert_int_equal(b->pods, 2);
    assert_int_equal(r->total.gpu_mms, 9 * H);
    assert_int_equal(r->exact, 1);

    /* Rendered: fractions formatted at the end, average GPUs over 720 h. */
    struct fair_buf out;
    struct fair_error err = {0};
    fair_buf_init(&out, 0);
    assert_int_equal(fair_report_render(r, FAIR_REPORT_CSV, NULL, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out), "team,gpu_hours,in_quota_gpu_hours,borrowed_gpu_hours,"
                                            "preempted_gpu_hours,lent_gpu_hours,avg_gpus,pods\n"
                                            "alpha,5.000,3.000,2.000,0.000,0.000,0.007,2\n"
                                            "beta,4.000,3.000,1.000,1.000,0.000,0.006,2\n"
                                            "TOTAL,9.000,6.000,3.000,1.000,0.000,0.013,4\n");
    /* Cost: A100 at 2.50, H100 from the default 4.00. */
    struct fair_prices pr;
    fair_prices_init(&pr);
    pr.default_micro = 4000000;
    pr.e = calloc(1, sizeof(*pr.e));
    pr.e[0].model = strdup("A100");
    pr.e[0].micro = 2500000;
    pr.n = 1;
    fair_buf_reset(&out);
    assert_int_equal(fair_report_render(r, FAIR_REPORT_CSV, &pr, &out, &err), 0);
    assert_non_null(
        strstr(fair_buf_str(&out), "\nalpha,5.000,3.000,2.000,0.000,0.000,0.007,2,12.50\n"));
    assert_non_null(
        strstr(fair_buf_str(&out), "\nbeta,4.000,3.000,1.000,1.000,0.000,0.006,2,16.00\n"));
    assert_non_null(
        strstr(fair_buf_str(&out), "\nTOTAL,9.000,6.000,3.000,1.000,0.000,0.013,4,28.50\n"));
    /* A model without a price and no default is an error naming it. */
    pr.default_micro = -1;
    fair_buf_reset(&out);
    assert_int_equal(fair_report_render(r, FAIR_REPORT_CSV, &pr, &out, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "H100"));
    free(pr.e[0].model);
    free(pr.e);
    fair_buf_release(&out);
    fair_report_free(r);

    /* Not day-aligned: 2026-11-01T01:00 .. 2026-11-02T12:00 (raw edges). */
    r = report(l, T("2026-11-01T01:00:00Z"), T("2026-11-02T12:00:00Z"), FAIR_REPORT_BY_TEAM);
    assert_int_equal(r->n, 1);
    assert_int_equal(row(r, "alpha")->gpu_mms, 2 * H + 250 * 2 * 3600000LL);
    assert_int_equal(row(r, "alpha")->pods, 2);
    fair_report_free(r);

    /* Time zone +05:30: November is [Oct 31 18:30Z, Nov 30 18:30Z). */
    int tz = 0;
    int64_t from = 0, to = 0;
    struct fair_error e2 = {0};
    assert_int_equal(fair_report_tz_parse("+05:30", &tz, &e2), 0);
    assert_int_equal(tz, 330);
    assert_int_equal(fair_report_date_parse("2026-11-01", tz, &from, &e2), 0);
    assert_int_equal(fair_report_date_parse("2026-12-01", tz, &to, &e2), 0);
    assert_int_equal(from, T("2026-10-31T18:30:00Z"));
    r = report(l, from, to, FAIR_REPORT_BY_TEAM);
    assert_int_equal(row(r, "alpha")->gpu_mms, 1 * H + 8 * H);
    assert_int_equal(row(r, "beta")->gpu_mms, 3 * H);
    assert_int_equal(row(r, "beta")->preempted_mms, 0);
    assert_int_equal(row(r, "beta")->pods, 1);
    fair_report_free(r);

    /* By namespace and by queue give the same figures here. */
    r = report(l, T("2026-11-01T00:00:00Z"), T("2026-12-01T00:00:00Z"), FAIR_REPORT_BY_NAMESPACE);
    assert_int_equal(row(r, "ns-a")->gpu_mms, 5 * H);
    assert_int_equal(r->lent_known, 0);
    fair_report_free(r);
    fair_ledger_free(l);
}

static void test_dates_and_tz(void **state)
{
    (void)state;
    struct fair_error err = {0};
    int64_t ms;
    int tz;
    assert_int_equal(fair_report_date_parse("2026-13-01", 0, &ms, &err), FAIR_EINVAL);
    assert_int_equal(fair_report_date_parse("2026-02-29", 0, &ms, &err), FAIR_EINVAL);
    assert_int_equal(fair_report_date_parse("2028-02-29", 0, &ms, &err), 0);
    assert_int_equal(fair_report_date_parse("2026-11-1", 0, &ms, &err), FAIR_EINVAL);
    assert_int_equal(fair_report_date_parse("yesterday", 0, &ms, &err), FAIR_EINVAL);
    assert_int_equal(fair_report_date_parse("2026-11-01", -60, &ms, &err), 0);
    assert_int_equal(ms, T("2026-11-01T01:00:00Z"));
    assert_int_equal(fair_report_tz_parse("+25:00", &tz, &err), FAIR_EINVAL);
    assert_int_equal(fair_report_tz_parse("CET", &tz, &err), FAIR_EINVAL);
    assert_int_equal(fair_report_tz_parse("-03:00", &tz, &err), 0);
    assert_int_equal(tz, -180);
    int64_t micro;
    assert_int_equal(fair_price_parse("2.5", &micro, &err), 0);
    assert_int_equal(micro, 2500000);
    assert_int_equal(fair_price_parse("-1", &micro, &err), FAIR_EINVAL);
    assert_int_equal(fair_price_parse("1.1234567", &micro, &err), FAIR_EINVAL);
    assert_int_equal(fair_price_parse("11111111111111", &micro, &err), FAIR_EINVAL);
    assert_int_equal(fair_price_parse(".", &micro, &err), FAIR_EINVAL);
    assert_int_equal(fair_price_parse("999999999.999999", &micro, &err), 0);
    assert_int_equal(micro, 999999999999999LL);
    assert_int_equal(fair_price_parse(".5", &micro, &err), 0);
    assert_int_equal(micro, 500000);
    char s[32];
    fair_gpu_hours_format(H / 4, s, sizeof(s));
    assert_string_equal(s, "0.250");
    fair_gpu_hours_format(1800000, s, sizeof(s)); /* half of 0.001: rounds up */
    assert_string_equal(s, "0.001");
}

static void test_lent_derive(void **state)
{
    (void)state;
    struct fair_ledger_sample_row r[3] = {
        {.queue = "q1", .allocated = 1000, .guaranteed = 4000, .lent = -1},
        {.queue = "q2", .allocated = 0, .guaranteed = 2000, .lent = -1},
        {.queue = "q3", .allocated = 2500, .guaranteed = 0, .lent = -1},
    };
    fair_ledger_sample_derive(r, 3);
    assert_int_equal(r[0].in_quota, 1000);
    assert_int_equal(r[0].borrowed, 0);
    assert_int_equal(r[2].in_quota, 0);
    assert_int_equal(r[2].borrowed, 2500);
    assert_int_equal(r[0].lent, 1500);
    assert_int_equal(r[1].lent, 1000);
    assert_int_equal(r[2].lent, 0);
    /* Remainders: 2 borrowed over 3 equal idle guarantees. */
    struct fair_ledger_sample_row s[4] = {
        {.queue = "a", .allocated = 0, .guaranteed = 1, .lent = -1},
        {.queue = "b", .allocated = 0, .guaranteed = 1, .lent = -1},
        {.queue = "c", .allocated = 0, .guaranteed = 1, .lent = -1},
        {.queue = "d", .allocated = 2, .guaranteed = 0, .lent = -1},
    };
    fair_ledger_sample_derive(s, 4);
    assert_int_equal(s[0].lent + s[1].lent + s[2].lent, 2);
    assert_int_equal(s[0].lent, 1);
    assert_int_equal(s[1].lent, 1);
    assert_int_equal(s[2].lent, 0);
}

static void test_samples_lent(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    struct fair_error err = {0};
    /* 90 samples of one minute from 23:00 to 00:30 across midnight: alpha
     * lends 1.5 GPUs to beta throughout. */
    int64_t t0 = T("2026-11-01T23:00:00Z");
    for (int i = 1; i <= 90; i++) {
        struct fair_ledger_sample_row rows[2] = {
            {.queue = "qa",
             .project = "alpha",
             .team = "alpha",
             .allocated = 500,
             .guaranteed = 2000,
             .fair_share = 500,
             .lent = -1},
            {.queue = "qb",
             .project = "beta",
             .team = "beta",
             .allocated = 1500,
             .guaranteed = 0,
             .fair_share = 1500,
             .pending = 1000,
             .lent = -1},
        };
        assert_int_equal(fair_ledger_sample(l, t0 + i * 60000LL, rows, 2, &err), 0);
        if (i % 30 == 0)
            flush(l);
    }
    struct fair_report *r =
        report(l, T("2026-11-01T00:00:00Z"), T("2026-11-03T00:00:00Z"), FAIR_REPORT_BY_TEAM);
    /* 1.5 GPU x 1.5 h (the first sample counts one period too) */
    assert_int_equal(row(r, "alpha")->lent_mms, 1500LL * 90 * 60000);
    assert_int_equal(r->n, 1); /* beta: no use, nothing lent: no row */
    fair_report_free(r);
    /* Only the part after midnight. */
    r = report(l, T("2026-11-02T00:00:00Z"), T("2026-11-02T00:10:00Z"), FAIR_REPORT_BY_QUEUE);
    assert_int_equal(row(r, "qa")->lent_mms, 1500LL * 10 * 60000);
    fair_report_free(r);
    /* A duplicate sample time is ignored (it would count twice). */
    struct fair_ledger_sample_row dup = {.queue = "qa",
                                         .project = "alpha",
                                         .team = "alpha",
                                         .allocated = 0,
                                         .guaranteed = 2000,
                                         .lent = 2000};
    assert_int_equal(fair_ledger_sample(l, t0 + 90 * 60000LL, &dup, 1, &err), 0);
    flush(l);
    r = report(l, T("2026-11-01T00:00:00Z"), T("2026-11-03T00:00:00Z"), FAIR_REPORT_BY_TEAM);
    assert_int_equal(row(r, "alpha")->lent_mms, 1500LL * 90 * 60000);
    fair_report_free(r);
    fair_ledger_free(l);
}

static void test_restart_reconcile(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    struct fair_error err = {0};
    int64_t from = T("2026-11-01T00:00:00Z"), mid = T("2026-11-15T00:00:00Z");
    open_iv(l, "p1", "ns", "q", "alpha", "A100", 1000, 1000, T("2026-11-14T00:00:00Z"));
    open_iv(l, "p2", "ns", "q", "alpha", "A100", 1000, 0, T("2026-11-14T12:00:00Z"));
    heartbeat(l, mid);
    flush(l);
    /* Queued but never flushed: lost with the "crash" below. */
    close_iv(l, "p2", mid + 60000, FAIR_LEDGER_COMPLETED);
    struct fair_report *before = report(l, from, mid, FAIR_REPORT_BY_TEAM);
    assert_int_equal(before->rows[0].gpu_mms, 24 * H + 12 * H);
    /* Simulate a crash: drop the queue by reopening from another handle. */
    struct fair_ledger *l2 = open_ledger();
    struct fair_ledger_interval_info live = {.uid = "p1",
                                             .namespace_ = "ns",
                                             .pod = "p1",
                                             .queue = "q",
                                             .project = "alpha",
                                             .team = "alpha",
                                             .cost_center = "",
                                             .node = "",
                                             .gpu_model = "A100",
                                             .gpu_milli = 1000,
                                             .inquota_milli = 1000,
                                             .start_ms = T("2026-11-14T00:00:00Z")};
    struct fair_ledger_interval_info live2[2] = {live, live};
    live2[1].uid = live2[1].pod = "p3";
    live2[1].start_ms = mid + 30000;
    size_t closed = 99, opened = 99;
    int64_t now = mid + 600000;
    assert_int_equal(fair_ledger_reconcile(l2, now, live2, 2, &closed, &opened, &err), 0);
    assert_int_equal(closed, 1); /* p2, at the heartbeat */
    assert_int_equal(opened, 1); /* p3 */
    /* Idempotent. */
    assert_int_equal(fair_ledger_reconcile(l2, now, live2, 2, &closed, &opened, &err), 0);
    assert_int_equal(closed, 0);
    assert_int_equal(opened, 0);
    struct fair_report *after = report(l2, from, mid, FAIR_REPORT_BY_TEAM);
    assert_int_equal(after->rows[0].gpu_mms, before->rows[0].gpu_mms);
    assert_int_equal(after->rows[0].inquota_mms, before->rows[0].inquota_mms);
    assert_int_equal(after->rows[0].pods, before->rows[0].pods);
    fair_report_free(after);
    /* p1 kept running through the restart: counted up to now. p2 stopped at
     * the heartbeat; p3 from its own start. */
    after = report(l2, from, T("2026-12-01T00:00:00Z"), FAIR_REPORT_BY_TEAM);
    assert_int_equal(after->rows[0].gpu_mms, 1000 * (now - T("2026-11-14T00:00:00Z")) + 12 * H +
                                                 1000 * (now - mid - 30000));
    assert_int_equal(after->rows[0].pods, 3);
    fair_report_free(after);
    fair_report_free(before);
    fair_ledger_free(l2);
    /* The first handle's late close now finds p2 already closed: ignored. */
    fair_ledger_free(l);
    l = open_ledger();
    after = report(l, from, T("2026-12-01T00:00:00Z"), FAIR_REPORT_BY_TEAM);
    assert_int_equal(after->rows[0].gpu_mms, 1000 * (now - T("2026-11-14T00:00:00Z")) + 12 * H +
                                                 1000 * (now - mid - 30000));
    fair_report_free(after);
    fair_ledger_free(l);
}

static void test_retention(void **state)
{
    (void)state;
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    o.retention_ms = 10 * FAIR_LEDGER_DAY_MS;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    /* 40 intervals over 20 days, 1..3 GPUs, some spanning midnight. */
    int64_t d0 = T("2026-01-01T00:00:00Z");
    for (int i = 0; i < 40; i++) {
        char uid[16];
        snprintf(uid, sizeof(uid), "r%d", i);
        int64_t s = d0 + i * 12 * 3600000LL + (i % 5) * 1234567LL;
        open_iv(l, uid, i % 2 ? "ns1" : "ns2", i % 3 ? "q1" : "q2", i % 2 ? "alpha" : "beta",
                "A100", 1000 * (1 + i % 3), 500 * (i % 3), s);
        close_iv(l, uid, s + 20 * 3600000LL, i % 4 ? FAIR_LEDGER_COMPLETED : FAIR_LEDGER_PREEMPTED);
        struct fair_ledger_sample_row rows[2] = {
            {.queue = "q1",
             .project = "alpha",
             .team = "alpha",
             .allocated = 0,
             .guaranteed = 3000,
             .lent = -1},
            {.queue = "q2",
             .project = "beta",
             .team = "beta",
             .allocated = 4000,
             .guaranteed = 1000,
             .lent = -1},
        };
        assert_int_equal(fair_ledger_sample(l, s, rows, 2, &err), 0);
    }
    flush(l);
    enum fair_report_by bys[4] = {FAIR_REPORT_BY_TEAM, FAIR_REPORT_BY_PROJECT, FAIR_REPORT_BY_QUEUE,
                                  FAIR_REPORT_BY_NAMESPACE};
    struct fair_buf before[4], after;
    int64_t from = T("2026-01-02T00:00:00Z"), to = T("2026-01-19T00:00:00Z");
    for (int b = 0; b < 4; b++) {
        fair_buf_init(&before[b], 0);
        struct fair_report *r = report(l, from, to, bys[b]);
        assert_int_equal(fair_report_render(r, FAIR_REPORT_CSV, NULL, &before[b], &err), 0);
        fair_report_free(r);
    }
    /* A non-aligned period inside the range to be pruned, before pruning. */
    struct fair_report *odd = report(l, T("2026-01-03T05:00:00Z"), to, FAIR_REPORT_BY_TEAM);
    assert_int_equal(odd->exact, 1);
    fair_report_free(odd);
    int64_t deleted = 0;
    assert_int_equal(fair_ledger_prune(l, T("2026-01-25T13:00:00Z"), &deleted, &err), 0);
    assert_true(deleted > 0);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(fair_ledger_db(l),
                                        "SELECT count(*) FROM intervals WHERE end_ms <= ?", -1, &st,
                                        NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(st, 1, T("2026-01-15T00:00:00Z"));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    for (int b = 0; b < 4; b++) {
        fair_buf_init(&after, 0);
        struct fair_report *r = report(l, from, to, bys[b]);
        assert_int_equal(r->exact, 1);
        assert_int_equal(fair_report_render(r, FAIR_REPORT_CSV, NULL, &after, &err), 0);
        assert_string_equal(fair_buf_str(&after), fair_buf_str(&before[b]));
        fair_report_free(r);
        fair_buf_release(&after);
        fair_buf_release(&before[b]);
    }
    /* The non-aligned edge now falls in pruned data: flagged. */
    odd = report(l, T("2026-01-03T05:00:00Z"), to, FAIR_REPORT_BY_TEAM);
    assert_int_equal(odd->exact, 0);
    fair_report_free(odd);
    fair_ledger_free(l);
}

static void test_locked(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    open_iv(l, "x1", "ns", "q", "alpha", "A100", 1000, 1000, T("2026-11-01T00:00:00Z"));
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_flush(l, &err), FAIR_EBUSY);
    assert_non_null(strstr(err.msg, "locked"));
    struct fair_ledger_stats st;
    fair_ledger_stats(l, &st);
    assert_int_equal(st.queued, 1); /* kept for the next flush */
    assert_int_equal(st.flush_errors, 1);
    assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    flush(l);
    fair_ledger_stats(l, &st);
    assert_int_equal(st.queued, 0);
    assert_int_equal(st.flushed, 1);
    struct fair_buf m;
    fair_buf_init(&m, 0);
    assert_int_equal(fair_ledger_metrics(l, &m), 0);
    assert_non_null(strstr(fair_buf_str(&m), "\nfairshare_ledger_flush_errors_total 1\n"));
    assert_non_null(strstr(fair_buf_str(&m), "\nfairshare_ledger_flushed_records_total 1\n"));
    assert_non_null(strstr(fair_buf_str(&m), "\nfairshare_ledger_queued_records 0\n"));
    fair_buf_release(&m);
    fair_ledger_free(l);
}

static void test_corrupt(void **state)
{
    (void)state;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 8192; i++)
        fputc((i * 7919) & 0xff, f);
    fclose(f);
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    assert_int_equal(fair_ledger_open(&o, &l, &err), FAIR_EDB);
    assert_null(l);
    assert_non_null(strstr(err.msg, "not a valid ledger"));
    assert_non_null(strstr(err.msg, path));
    o.readonly = 1;
    assert_int_equal(fair_ledger_open(&o, &l, &err), FAIR_EDB);
    /* A missing file read-only: a clear I/O error. */
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/none.db", dir);
    o.path = missing;
    assert_int_equal(fair_ledger_open(&o, &l, &err), FAIR_EIO);
    assert_non_null(strstr(err.msg, "none.db"));
}

static void test_full(void **state)
{
    (void)state;
    /* A tiny tmpfs needs mount privileges; here the database is capped with
     * PRAGMA max_page_count instead (tests/integration/test_ledger_crash.c
     * also tries a real 64 KiB tmpfs). */
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    o.max_pages = 24;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    int rc = 0;
    for (int batch = 0; batch < 50 && !rc; batch++) {
        for (int i = 0; i < 100; i++) {
            char uid[32];
            snprintf(uid, sizeof(uid), "full-%d-%d", batch, i);
            open_iv(l, uid, "namespace-with-a-long-name", "q", "alpha", "A100", 1000, 0,
                    T("2026-11-01T00:00:00Z") + i);
        }
        rc = fair_ledger_flush(l, &err);
    }
    assert_int_equal(rc, FAIR_EIO);
    assert_non_null(strstr(err.msg, "full"));
    struct fair_ledger_stats st;
    fair_ledger_stats(l, &st);
    assert_int_equal(st.queued, 100);
    /* Still a consistent database. */
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(fair_ledger_db(l), "PRAGMA integrity_check", -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
    fair_ledger_free(l); /* the final flush fails too: logged, no crash */
}

static void test_bad_input_and_backpressure(void **state)
{
    (void)state;
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    o.queue_max = 4;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    struct fair_ledger_interval_info in = {.uid = "b1",
                                           .namespace_ = "ns",
                                           .pod = "p",
                                           .queue = "q",
                                           .project = "p",
                                           .team = "t",
                                           .cost_center = "",
                                           .node = "",
                                           .gpu_model = "",
                                           .gpu_milli = 1000,
                                           .inquota_milli = 2000,
                                           .start_ms = 0};
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "inquota"));
    in.inquota_milli = 0;
    in.namespace_ = "";
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), FAIR_EINVAL);
    in.namespace_ = NULL;
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), FAIR_EINVAL);
    in.namespace_ = "ns";
    in.queue = "";
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), FAIR_EINVAL);
    in.queue = "q";
    char longname[300];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    in.team = longname;
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), FAIR_EINVAL);
    in.team = "t";
    in.gpu_milli = 0;
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), FAIR_EINVAL);
    assert_int_equal(fair_ledger_interval_close(l, "b1", 0, 42, &err), FAIR_EINVAL);
    in.gpu_milli = 1000;
    /* 10 opens through a queue of 4: the full queue flushes itself. */
    for (int i = 0; i < 10; i++) {
        char uid[16];
        snprintf(uid, sizeof(uid), "bp%d", i);
        in.uid = uid;
        in.start_ms = T("2026-11-01T00:00:00Z");
        assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
        /* A second open of the same pod is ignored. */
        assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
    }
    flush(l);
    for (int i = 0; i < 10; i++) {
        char uid[16];
        snprintf(uid, sizeof(uid), "bp%d", i);
        close_iv(l, uid, T("2026-11-01T01:00:00Z"), FAIR_LEDGER_DELETED);
        close_iv(l, uid, T("2026-11-01T05:00:00Z"), FAIR_LEDGER_DELETED); /* ignored */
    }
    flush(l);
    struct fair_report *r =
        report(l, T("2026-11-01T00:00:00Z"), T("2026-11-02T00:00:00Z"), FAIR_REPORT_BY_TEAM);
    assert_int_equal(r->n, 1);
    assert_int_equal(r->rows[0].gpu_mms, 10 * H);
    assert_int_equal(r->rows[0].pods, 10);
    fair_report_free(r);
    struct fair_ledger_stats st;
    fair_ledger_stats(l, &st);
    assert_int_equal(st.dropped, 0);
    fair_ledger_free(l);
}

static void test_http(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    november(l);
    struct fair_buf body;
    const char *ct = NULL;
    int status = 0;
    fair_buf_init(&body, 0);
    static const char *const bad[] = {
        "",
        "from=2026-11-01",
        "from=2026-11-01&to=2026-12-01&by=planet",
        "from=2026-11-31&to=2026-12-01",
        "from=2026-11-01&to=2026-10-01",
        "from=2026-11-01&to=2026-12-01&format=xml",
        "from=2026-11-01&to=2026-12-01&tz=Mars",
        "from=2026-11-01&to=2026-12-01&color=red",
        "from=2026-11-01&from=2026-11-02&to=2026-12-01",
        "from=2026-11-01&to=2026-12-01&price=-3",
        "from=%zz&to=2026-12-01",
        "from",
        "from=1013-11-01&to=2026-12-01",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(fair_report_http(l, bad[i], &body, &ct, &status), 0);
        if (status != 400)
            fail_msg("query \"%s\": status %d", bad[i], status);
        assert_string_equal(ct, "application/json");
        assert_int_equal(strncmp(fair_buf_str(&body), "{\"error\":\"", 10), 0);
    }
    assert_int_equal(fair_report_http(l, "from=2026-11-01&to=2026-12-01&by=team&format=csv", &body,
                                      &ct, &status),
                     0);
    assert_int_equal(status, 200);
    assert_string_equal(ct, "text/csv; charset=utf-8");
    assert_string_equal(fair_buf_str(&body), "team,gpu_hours,in_quota_gpu_hours,borrowed_gpu_hours,"
                                             "preempted_gpu_hours,lent_gpu_hours,avg_gpus,pods\n"
                                             "alpha,5.000,3.000,2.000,0.000,0.000,0.007,2\n"
                                             "beta,4.000,3.000,1.000,1.000,0.000,0.006,2\n"
                                             "TOTAL,9.000,6.000,3.000,1.000,0.000,0.013,4\n");
    assert_int_equal(fair_report_http(l, "from=2026-11-01&to=2026-12-01&tz=%2B05:30&price=1", &body,
                                      &ct, &status),
                     0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(fair_buf_str(&body), "\"from\":\"2026-11-01T00:00:00+05:30\""));
    assert_non_null(strstr(fair_buf_str(&body), "{\"team\":\"alpha\",\"gpu_hours\":9.000,"));
    assert_non_null(strstr(fair_buf_str(&body), "\"cost\":9.00}"));
    fair_buf_release(&body);
    fair_ledger_free(l);
}

/* A new ledger, its -wal and -shm files and a backup are readable by their
 * owner only (it holds every team's usage and cost). */
static void test_file_modes(void **state)
{
    (void)state;
    mode_t old = umask(022);
    struct fair_ledger *l = open_ledger();
    open_iv(l, "m1", "ns", "q", "alpha", "A100", 1000, 1000, T("2026-11-01T00:00:00Z"));
    flush(l);
    char side[160], bak[160];
    struct stat st;
    const char *sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof(side), "%s%s", path, sfx[i]);
        assert_int_equal(stat(side, &st), 0);
        if (st.st_mode & 077)
            fail_msg("%s has mode %o", side, (unsigned)(st.st_mode & 0777));
    }
    snprintf(bak, sizeof(bak), "%s/backup.db", dir);
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_backup(l, bak, &err), 0);
    assert_int_equal(stat(bak, &st), 0);
    assert_int_equal(st.st_mode & 077, 0);
    fair_ledger_free(l);
    umask(old);
}

/* With lock wait 0 (the controller's loop), a locked database fails the
 * flush at once; the records stay queued, the retry backs off from 50 ms
 * to the interval, only records past the queue's cap are dropped (and
 * counted), and when the lock clears every queued record is committed. */
static void test_locked_retry(void **state)
{
    (void)state;
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    o.queue_max = 4;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    fair_ledger_set_lock_wait(l, 0);
    assert_int_equal(fair_ledger_retry_delay_ms(l, 1000), 1000);
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    for (int i = 0; i < 4; i++) {
        char uid[16];
        snprintf(uid, sizeof(uid), "k%d", i);
        open_iv(l, uid, "ns", "q", "alpha", "A100", 1000, 1000, T("2026-11-01T00:00:00Z"));
    }
    int64_t want[] = {50, 100, 200, 400, 800, 1000, 1000};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(fair_ledger_flush(l, &err), FAIR_EBUSY);
        assert_int_equal(fair_ledger_retry_delay_ms(l, 1000), want[i]);
    }
    struct fair_ledger_stats st;
    fair_ledger_stats(l, &st);
    assert_int_equal(st.queued, 4);
    assert_int_equal(st.fail_streak, 7);
    /* The queue is full and flushes fail: these two are dropped, counted. */
    struct fair_ledger_interval_info in = {.uid = "k9",
                                           .namespace_ = "ns",
                                           .pod = "p",
                                           .queue = "q",
                                           .gpu_milli = 1000,
                                           .start_ms = 1};
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), FAIR_EBUSY);
    assert_int_equal(fair_ledger_interval_close(l, "k0", 2, FAIR_LEDGER_DELETED, &err), FAIR_EBUSY);
    fair_ledger_stats(l, &st);
    assert_int_equal(st.dropped, 2);
    assert_int_equal(st.queued, 4);
    struct fair_buf m;
    fair_buf_init(&m, 0);
    assert_int_equal(fair_ledger_metrics(l, &m), 0);
    assert_non_null(strstr(fair_buf_str(&m), "\nfairshare_ledger_dropped_records_total 2\n"));
    assert_non_null(strstr(fair_buf_str(&m), "\nfairshare_ledger_flush_failing 7\n"));
    fair_buf_release(&m);
    /* The lock clears: everything queued is committed, the streak ends. */
    assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    flush(l);
    fair_ledger_stats(l, &st);
    assert_int_equal(st.fail_streak, 0);
    assert_int_equal(st.flushed, 4);
    assert_int_equal(fair_ledger_retry_delay_ms(l, 1000), 1000);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(other,
                                        "SELECT count(*) FROM intervals WHERE end_ms IS NULL", -1,
                                        &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 4);
    sqlite3_finalize(q);
    sqlite3_close(other);
    fair_ledger_free(l);
}

struct locker {
    atomic_int locked;
    atomic_int release;
};

static void *hold_lock(void *arg)
{
    struct locker *k = arg;
    sqlite3 *h = NULL;
    if (sqlite3_open(path, &h) != SQLITE_OK ||
        sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK) {
        atomic_store(&k->locked, -1);
        sqlite3_close(h);
        return NULL;
    }
    atomic_store(&k->locked, 1);
    while (!atomic_load(&k->release)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(h);
    return NULL;
}

/* At shutdown the writer waits (boundedly) for a lock: one that clears in
 * time loses nothing; one that outlasts the wait fails with FAIR_EBUSY. */
static void test_lock_wait(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    fair_ledger_set_lock_wait(l, 0);
    struct locker k;
    atomic_init(&k.locked, 0);
    atomic_init(&k.release, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, hold_lock, &k), 0);
    while (!atomic_load(&k.locked))
        sched_yield();
    assert_int_equal(atomic_load(&k.locked), 1);
    open_iv(l, "w1", "ns", "q", "alpha", "A100", 1000, 1000, T("2026-11-01T00:00:00Z"));
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_flush(l, &err), FAIR_EBUSY);
    /* A wait that outlasts the lock: the holder lets go while we wait. */
    fair_ledger_set_lock_wait(l, 60000);
    atomic_store(&k.release, 1);
    flush(l);
    pthread_join(th, NULL);
    struct fair_ledger_stats st;
    fair_ledger_stats(l, &st);
    assert_int_equal(st.flushed, 1);
    /* A lock that outlasts the wait. */
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    fair_ledger_set_lock_wait(l, 50);
    close_iv(l, "w1", T("2026-11-01T01:00:00Z"), FAIR_LEDGER_COMPLETED);
    assert_int_equal(fair_ledger_flush(l, &err), FAIR_EBUSY);
    assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    flush(l);
    fair_ledger_free(l);
}

/* A reader's deadline and cancel flag stop a running statement through the
 * progress handler: FAIR_ETIMEDOUT, and fair_ledger_deadline_hit() says
 * which. */
static void test_reader_deadline(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    /* Enough rows that a report runs far more than 1,000 instructions. */
    for (int i = 0; i < 3000; i++) {
        char uid[16];
        snprintf(uid, sizeof(uid), "d%d", i);
        open_iv(l, uid, "ns", "q", "alpha", "A100", 1000, 500, T("2026-11-01T00:00:00Z") + i);
    }
    heartbeat(l, T("2026-11-02T00:00:00Z"));
    flush(l);
    fair_ledger_free(l);
    struct fair_ledger_options o;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    o.readonly = 1;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    struct fair_report_params p = {.from_ms = T("2026-11-01T00:00:00Z"),
                                   .to_ms = T("2026-11-01T12:00:00Z")};
    struct fair_report *r = NULL;
    fair_ledger_set_deadline(l, now - 1, NULL); /* already past */
    assert_int_equal(fair_report_run(l, &p, &r, &err), FAIR_ETIMEDOUT);
    assert_null(r);
    assert_int_equal(fair_ledger_deadline_hit(l), 1);
    assert_non_null(strstr(err.msg, "deadline"));
    _Atomic int cancel = 1;
    fair_ledger_set_deadline(l, 0, &cancel);
    assert_int_equal(fair_report_run(l, &p, &r, &err), FAIR_ETIMEDOUT);
    assert_int_equal(fair_ledger_deadline_hit(l), 2);
    /* Cleared: the same report runs. */
    fair_ledger_set_deadline(l, 0, NULL);
    r = report(l, p.from_ms, p.to_ms, FAIR_REPORT_BY_TEAM);
    assert_int_equal(fair_ledger_deadline_hit(l), 0);
    assert_int_equal(r->n, 1);
    fair_report_free(r);
    fair_ledger_free(l);
}

static int64_t scalar(sqlite3 *h, const char *sql)
{
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* Schema 1 -> 2: sample_day gains fair_share_mms and sampled_ms, filled in
 * from the raw samples exactly as the writer fills them, except for days
 * whose raw samples were pruned (left at 0, out of the charts). */
/* What versions 3 and 4 added, dropped to go back to an older version. */
#define DROP_V5                                                                                    \
    "DROP INDEX intervals_preempted;"                                                              \
    "ALTER TABLE intervals DROP COLUMN lineage;"
#define DROP_V3                                                                                    \
    DROP_V5                                                                                        \
    "ALTER TABLE intervals DROP COLUMN creator;"                                                   \
    "ALTER TABLE intervals DROP COLUMN preemptible;"                                               \
    "ALTER TABLE intervals DROP COLUMN devices;"                                                   \
    "ALTER TABLE intervals DROP COLUMN gang;"                                                      \
    "ALTER TABLE intervals DROP COLUMN gang_size;"

static void test_migration_v2(void **state)
{
    (void)state;
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    o.sample_period_ms = 600000; /* each 7-minute sample covers 7 minutes */
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    /* Samples every 7 minutes over 3 days (some straddle midnight). */
    int64_t t0 = T("2026-11-01T00:00:00Z");
    for (int i = 1; i <= 3 * 24 * 60 / 7; i++) {
        struct fair_ledger_sample_row rows[2] = {
            {.queue = "qa",
             .team = "alpha",
             .allocated = 1000 + i,
             .guaranteed = 2000,
             .fair_share = 1500 + 3 * i,
             .lent = -1},
            {.queue = "qb",
             .team = "beta",
             .allocated = 700,
             .guaranteed = 0,
             .fair_share = 900 + i % 5,
             .lent = -1},
        };
        assert_int_equal(fair_ledger_sample(l, t0 + i * 420000LL, rows, 2, &err), 0);
    }
    flush(l);
    fair_ledger_free(l);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    int64_t fs = scalar(h, "SELECT sum(fair_share_mms * (day + 7)) FROM sample_day");
    int64_t ms = scalar(h, "SELECT sum(sampled_ms * (day + 3)) FROM sample_day");
    assert_true(fs > 0);
    /* the first sample ever counts one period */
    assert_int_equal(scalar(h, "SELECT sum(sampled_ms) FROM sample_day"),
                     2 * (600000 + (3 * 24 * 60 / 7 - 1) * 420000LL));
    /* Back to version 1, then open: the migration fills the columns in. */
    assert_int_equal(sqlite3_exec(h,
                                  "ALTER TABLE sample_day DROP COLUMN fair_share_mms;"
                                  "ALTER TABLE sample_day DROP COLUMN sampled_ms;" DROP_V3
                                  "PRAGMA user_version=1",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    l = open_ledger();
    fair_ledger_free(l);
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    assert_int_equal(scalar(h, "PRAGMA user_version"), FAIR_LEDGER_SCHEMA_VERSION);
    assert_int_equal(scalar(h, "SELECT sum(fair_share_mms * (day + 7)) FROM sample_day"), fs);
    assert_int_equal(scalar(h, "SELECT sum(sampled_ms * (day + 3)) FROM sample_day"), ms);
    /* Days before the samples' prune cut stay at 0. */
    char sql[600];
    snprintf(sql, sizeof(sql),
             "ALTER TABLE sample_day DROP COLUMN fair_share_mms;"
             "ALTER TABLE sample_day DROP COLUMN sampled_ms;" DROP_V3
             "INSERT INTO meta(key, value) VALUES('samples_pruned_before_ms', %lld);"
             "PRAGMA user_version=1",
             (long long)T("2026-11-02T00:00:00Z"));
    assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    l = open_ledger();
    fair_ledger_free(l);
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM sample_day WHERE day < %lld AND sampled_ms > 0",
             (long long)(T("2026-11-02T00:00:00Z") / FAIR_LEDGER_DAY_MS));
    assert_int_equal(scalar(h, sql), 0);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM sample_day WHERE day >= %lld AND sampled_ms > 0",
             (long long)(T("2026-11-02T00:00:00Z") / FAIR_LEDGER_DAY_MS));
    assert_int_equal(scalar(h, sql), 2 * 2); /* 2 queues x Nov 2 and 3 */
    sqlite3_close(h);
}

/* Two controller replicas that start together on the same file both
 * migrate it: the second one must wait for the first one's migration and
 * then see the migrated schema, never run a migration again ("table meta
 * already exists", "duplicate column"). OPENERS processes open the same file
 * at once, released together through a pipe; each round starts from a new
 * file, then from one at version 2. */
#define OPENERS 8
#define OPEN_ROUNDS 20

static void open_together(void)
{
    int go[2];
    pid_t pids[OPENERS];
    assert_int_equal(pipe(go), 0);
    for (int i = 0; i < OPENERS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            char b;
            close(go[1]);
            /* every child waits here until the parent closes the pipe */
            (void)!read(go[0], &b, 1);
            struct fair_ledger_options o;
            struct fair_ledger *l = NULL;
            struct fair_error err = {0};
            fair_ledger_options_init(&o);
            o.path = path;
            int rc = fair_ledger_open(&o, &l, &err);
            if (rc)
                fprintf(stderr, "opener %d: %s\n", i, err.msg);
            fair_ledger_free(l);
            _exit(rc ? 1 : 0);
        }
    }
    close(go[0]);
    close(go[1]);
    int failed = 0;
    for (int i = 0; i < OPENERS; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    assert_int_equal(failed, 0);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    assert_int_equal(scalar(h, "PRAGMA user_version"), FAIR_LEDGER_SCHEMA_VERSION);
    assert_int_equal(scalar(h, "SELECT count(*) FROM pragma_table_info('intervals')"
                               " WHERE name = 'gang_size'"),
                     1);
    sqlite3_close(h);
}

static void remove_ledger(void)
{
    const char *const sfx[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
        char p[160];
        snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
        unlink(p);
    }
}

static void test_concurrent_open(void **state)
{
    (void)state;
    for (int round = 0; round < OPEN_ROUNDS; round++) {
        remove_ledger();
        open_together();
    }
    /* From an older version: every opener but one finds it migrated. */
    for (int round = 0; round < OPEN_ROUNDS / 4; round++) {
        sqlite3 *h = NULL;
        assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
        assert_int_equal(sqlite3_exec(h, DROP_V3 "PRAGMA user_version=2", NULL, NULL, NULL),
                         SQLITE_OK);
        sqlite3_close(h);
        open_together();
    }
}

/* Every allocation in lib/ledger may fail: each failure point in turn gives
 * FAIR_ENOMEM (or success), never a crash or a leak (ASan checks leaks). */
static void test_alloc_failures(void **state)
{
    (void)state;
    int failures = 0;
    for (long k = 0; k < 400; k++) {
        char p2[160];
        snprintf(p2, sizeof(p2), "%s/alloc-%ld.db", dir, k);
        struct fair_ledger_options o;
        struct fair_ledger *l = NULL;
        struct fair_error err = {0};
        fair_ledger_options_init(&o);
        o.path = p2;
        o.queue_max = 2;
        fair_alloc_fail_after(k);
        int rc = fair_ledger_open(&o, &l, &err);
        if (!rc) {
            struct fair_ledger_interval_info in = {.uid = "m1",
                                                   .namespace_ = "ns",
                                                   .pod = "p",
                                                   .queue = "q",
                                                   .project = "p",
                                                   .team = "t",
                                                   .cost_center = "",
                                                   .node = "",
                                                   .gpu_model = "A100",
                                                   .gpu_milli = 1000,
                                                   .inquota_milli = 500,
                                                   .start_ms = 1000};
            struct fair_ledger_sample_row row = {.queue = "q",
                                                 .project = "p",
                                                 .team = "t",
                                                 .allocated = 1000,
                                                 .guaranteed = 500,
                                                 .lent = -1};
            int r1 = fair_ledger_interval_open(l, &in, &err);
            int r2 = fair_ledger_sample(l, 2000, &row, 1, &err);
            int r3 = fair_ledger_interval_close(l, "m1", 3000, FAIR_LEDGER_COMPLETED, &err);
            int r4 = fair_ledger_flush(l, &err);
            int r5 = fair_ledger_reconcile(l, 4000, &in, 1, NULL, NULL, &err);
            struct fair_report_params p = {.from_ms = 0, .to_ms = 2 * FAIR_LEDGER_DAY_MS};
            struct fair_report *r = NULL;
            struct fair_buf out;
            fair_buf_init(&out, 0);
            int r6 = fair_report_run(l, &p, &r, &err);
            int r7 = r6 ? 0 : fair_report_render(r, FAIR_REPORT_JSON, NULL, &out, &err);
            int all[7] = {r1, r2, r3, r4, r5, r6, r7};
            for (int i = 0; i < 7; i++)
                if (all[i] != 0 && all[i] != FAIR_ENOMEM)
                    fail_msg("k=%ld step %d: rc %d (%s)", k, i, all[i], err.msg);
            fair_report_free(r);
            fair_buf_release(&out);
            fair_ledger_free(l);
        } else {
            assert_int_equal(rc, FAIR_ENOMEM);
        }
        failures += fair_alloc_count() > k;
        fair_alloc_fail_after(-1);
    }
    assert_true(failures > 0);
}

/* A pod of a queue whose project has no team (or no cost center, node or
 * model yet) is still recorded: its GPU-hours show under "(none)". */
static void test_optional_fields(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    struct fair_error err = {0};
    struct fair_ledger_interval_info in = {.uid = "o1",
                                           .namespace_ = "ns",
                                           .pod = "p",
                                           .queue = "q",
                                           .project = "proj",
                                           .team = NULL,
                                           .cost_center = NULL,
                                           .node = NULL,
                                           .gpu_model = NULL,
                                           .gpu_milli = 1000,
                                           .inquota_milli = 0,
                                           .start_ms = T("2026-11-01T00:00:00Z")};
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
    close_iv(l, "o1", T("2026-11-01T02:00:00Z"), FAIR_LEDGER_COMPLETED);
    struct fair_ledger_sample_row row = {
        .queue = "q", .project = NULL, .team = "", .allocated = 1000, .guaranteed = 0, .lent = -1};
    assert_int_equal(fair_ledger_sample(l, T("2026-11-01T01:00:00Z"), &row, 1, &err), 0);
    flush(l);
    /* Reconcile takes the same (a live pod opened directly, not queued). */
    in.uid = "o2";
    in.start_ms = T("2026-11-01T03:00:00Z");
    assert_int_equal(fair_ledger_reconcile(l, T("2026-11-01T04:00:00Z"), &in, 1, NULL, NULL, &err),
                     0);
    struct fair_report *r =
        report(l, T("2026-11-01T00:00:00Z"), T("2026-11-02T00:00:00Z"), FAIR_REPORT_BY_TEAM);
    assert_int_equal(r->n, 1);
    assert_string_equal(r->rows[0].key, "(none)");
    assert_int_equal(r->rows[0].gpu_mms, 3 * H);
    assert_int_equal(r->rows[0].borrowed_mms, 3 * H);
    fair_report_free(r);
    r = report(l, T("2026-11-01T00:00:00Z"), T("2026-11-02T00:00:00Z"), FAIR_REPORT_BY_PROJECT);
    assert_string_equal(r->rows[0].key, "proj");
    fair_report_free(r);
    fair_ledger_free(l);
}

/* Reports by user: the creator recorded at open, read from the intervals
 * (also across full days, which other groupings take from the rollups);
 * a file of version 3 gains the column, its rows with no creator. */
static void iv_by(struct fair_ledger *l, const char *uid, const char *creator, int64_t milli,
                  int64_t start)
{
    struct fair_ledger_interval_info in = {.uid = uid,
                                           .namespace_ = "ns",
                                           .pod = uid,
                                           .queue = "q",
                                           .project = "p",
                                           .team = "t",
                                           .gpu_milli = milli,
                                           .inquota_milli = 0,
                                           .start_ms = start,
                                           .creator = creator};
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
}

static void test_by_user(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    iv_by(l, "u1", "ana", 1000, T("2026-11-01T00:00:00Z"));
    close_iv(l, "u1", T("2026-11-01T02:00:00Z"), FAIR_LEDGER_COMPLETED);
    iv_by(l, "u2", "bob", 500, T("2026-11-01T22:00:00Z")); /* across midnight */
    close_iv(l, "u2", T("2026-11-02T02:00:00Z"), FAIR_LEDGER_COMPLETED);
    iv_by(l, "u3", NULL, 1000, T("2026-11-02T05:00:00Z"));
    close_iv(l, "u3", T("2026-11-02T06:00:00Z"), FAIR_LEDGER_PREEMPTED);
    iv_by(l, "u4", "ana", 1000, T("2026-11-03T00:00:00Z")); /* open */
    heartbeat(l, T("2026-11-03T03:00:00Z"));
    flush(l);
    /* Whole days: the other groupings would read the rollups. */
    struct fair_report *r =
        report(l, T("2026-11-01T00:00:00Z"), T("2026-11-04T00:00:00Z"), FAIR_REPORT_BY_USER);
    assert_int_equal(r->n, 3);
    assert_int_equal(row(r, "ana")->gpu_mms, 5 * H);
    assert_int_equal(row(r, "ana")->pods, 2);
    assert_int_equal(row(r, "bob")->gpu_mms, 2 * H);
    assert_int_equal(row(r, "(none)")->gpu_mms, 1 * H);
    assert_int_equal(row(r, "(none)")->preempted_mms, 1 * H);
    assert_false(r->lent_known);
    fair_report_free(r);
    /* A partial day: only bob's part after midnight. */
    r = report(l, T("2026-11-02T00:00:00Z"), T("2026-11-02T04:00:00Z"), FAIR_REPORT_BY_USER);
    assert_int_equal(r->n, 1);
    assert_int_equal(row(r, "bob")->gpu_mms, H);
    fair_report_free(r);
    /* The same total as by team. */
    r = report(l, T("2026-11-01T00:00:00Z"), T("2026-11-04T00:00:00Z"), FAIR_REPORT_BY_TEAM);
    assert_int_equal(row(r, "t")->gpu_mms, 8 * H);
    fair_report_free(r);
    assert_int_equal(fair_report_by_parse("user"), FAIR_REPORT_BY_USER);
    assert_string_equal(fair_report_by_name(FAIR_REPORT_BY_USER), "user");
    fair_ledger_free(l);

    /* Back to version 3 (no creator column), then open: migrated. */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h,
                                  DROP_V5 "ALTER TABLE intervals DROP COLUMN creator;"
                                          "PRAGMA user_version=3",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    l = open_ledger();
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    assert_int_equal(scalar(h, "PRAGMA user_version"), FAIR_LEDGER_SCHEMA_VERSION);
    assert_int_equal(scalar(h, "SELECT count(*) FROM intervals WHERE creator = ''"), 4);
    sqlite3_close(h);
    r = report(l, T("2026-11-01T00:00:00Z"), T("2026-11-04T00:00:00Z"), FAIR_REPORT_BY_USER);
    assert_int_equal(r->n, 1);
    assert_int_equal(row(r, "(none)")->gpu_mms, 8 * H);
    fair_report_free(r);
    fair_ledger_free(l);
}

/* The eviction bound across restarts: an interval keeps its pod's lineage,
 * and fair_ledger_preemptions counts the preempted ones per lineage; rows
 * without one, and other endings, count for nothing. A file of version 4
 * gains the column (its rows with none). */
static void iv_lineage(struct fair_ledger *l, const char *uid, const char *lineage)
{
    struct fair_ledger_interval_info in = {.uid = uid,
                                           .namespace_ = "ns",
                                           .pod = uid,
                                           .queue = "q",
                                           .gpu_milli = 1000,
                                           .start_ms = T("2026-11-01T00:00:00Z"),
                                           .lineage = lineage};
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
}

struct lineage_counts {
    int n;
    char lineage[4][16];
    int64_t count[4];
};

static int collect_lineage(void *ctx, const char *lineage, int64_t count)
{
    struct lineage_counts *lc = ctx;
    assert_true(lc->n < 4);
    snprintf(lc->lineage[lc->n], sizeof lc->lineage[0], "%s", lineage);
    lc->count[lc->n++] = count;
    return 0;
}

static void test_preemptions(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    const struct {
        const char *uid, *lineage;
        enum fair_ledger_end end;
    } rows[] = {
        {"p1", "job-1", FAIR_LEDGER_PREEMPTED}, {"p2", "job-1", FAIR_LEDGER_PREEMPTED},
        {"p3", "job-1", FAIR_LEDGER_COMPLETED}, {"p4", "job-2", FAIR_LEDGER_FAILED},
        {"p5", "job-3", FAIR_LEDGER_PREEMPTED}, {"p6", NULL, FAIR_LEDGER_PREEMPTED},
        {"p7", "job-4", FAIR_LEDGER_OPEN},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        iv_lineage(l, rows[i].uid, rows[i].lineage);
        if (rows[i].end != FAIR_LEDGER_OPEN)
            close_iv(l, rows[i].uid, T("2026-11-01T01:00:00Z"), rows[i].end);
    }
    flush(l);
    struct lineage_counts lc = {0};
    struct fair_error err = {0};
    assert_int_equal(fair_ledger_preemptions(l, collect_lineage, &lc, &err), 0);
    assert_int_equal(lc.n, 2);
    for (int i = 0; i < lc.n; i++)
        assert_int_equal(lc.count[i], !strcmp(lc.lineage[i], "job-1") ? 2 : 1);
    assert_true(!strcmp(lc.lineage[0], "job-3") || !strcmp(lc.lineage[1], "job-3"));
    fair_ledger_free(l);

    /* Back to version 4 (no lineage): migrated, the old rows count for no
     * workload. */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, DROP_V5 "PRAGMA user_version=4", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    l = open_ledger();
    memset(&lc, 0, sizeof lc);
    assert_int_equal(fair_ledger_preemptions(l, collect_lineage, &lc, &err), 0);
    assert_int_equal(lc.n, 0);
    iv_lineage(l, "p8", "job-5");
    close_iv(l, "p8", T("2026-11-01T02:00:00Z"), FAIR_LEDGER_PREEMPTED);
    flush(l);
    assert_int_equal(fair_ledger_preemptions(l, collect_lineage, &lc, &err), 0);
    assert_int_equal(lc.n, 1);
    assert_string_equal(lc.lineage[0], "job-5");
    assert_int_equal(lc.count[0], 1);
    fair_ledger_free(l);
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    assert_int_equal(scalar(h, "PRAGMA user_version"), FAIR_LEDGER_SCHEMA_VERSION);
    sqlite3_close(h);
}

struct charges_seen {
    int n;
    struct {
        char uid[16], queue[16], gang[16];
        bool non_preemptible;
        uint64_t devices;
        int32_t gang_size;
        int64_t gpu_milli;
    } c[4];
};

static int collect_charge(void *ctx, const struct fair_ledger_interval_info *in)
{
    struct charges_seen *s = ctx;
    if (s->n >= 4)
        return 1;
    snprintf(s->c[s->n].uid, sizeof s->c[s->n].uid, "%s", in->uid);
    snprintf(s->c[s->n].queue, sizeof s->c[s->n].queue, "%s", in->queue);
    snprintf(s->c[s->n].gang, sizeof s->c[s->n].gang, "%s", in->gang ? in->gang : "");
    s->c[s->n].non_preemptible = in->non_preemptible;
    s->c[s->n].devices = in->devices;
    s->c[s->n].gang_size = in->gang_size;
    s->c[s->n].gpu_milli = in->gpu_milli;
    s->n++;
    return 0;
}

/* A bound pod's charge (queue, preemptible, devices, gang) is kept in its
 * open interval and read back after a reopen; closed intervals are not
 * charges any more. */
static void test_charges_round_trip(void **state)
{
    (void)state;
    struct fair_ledger *l = open_ledger();
    struct fair_error err = {0};
    struct fair_ledger_interval_info in = {.uid = "c1",
                                           .namespace_ = "ns",
                                           .pod = "p1",
                                           .queue = "qb",
                                           .project = "b",
                                           .team = "b",
                                           .gpu_milli = 2000,
                                           .start_ms = T("2026-11-01T00:00:00Z"),
                                           .non_preemptible = true,
                                           .devices = 0x30,
                                           .gang = "job-7",
                                           .gang_size = 4};
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
    in.uid = "c2";
    in.pod = "p2";
    in.non_preemptible = false;
    in.devices = 0x1;
    in.gang = NULL;
    in.gang_size = 0;
    in.gpu_milli = 250;
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
    in.uid = "c3";
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
    close_iv(l, "c3", T("2026-11-01T01:00:00Z"), FAIR_LEDGER_COMPLETED);
    flush(l);
    fair_ledger_free(l);
    l = open_ledger();
    struct charges_seen seen = {0};
    assert_int_equal(fair_ledger_open_intervals(l, collect_charge, &seen, &err), 0);
    assert_int_equal(seen.n, 2);
    int c1 = strcmp(seen.c[0].uid, "c1") == 0 ? 0 : 1, c2 = 1 - c1;
    assert_string_equal(seen.c[c1].uid, "c1");
    assert_string_equal(seen.c[c1].queue, "qb");
    assert_true(seen.c[c1].non_preemptible);
    assert_int_equal(seen.c[c1].devices, 0x30);
    assert_string_equal(seen.c[c1].gang, "job-7");
    assert_int_equal(seen.c[c1].gang_size, 4);
    assert_int_equal(seen.c[c1].gpu_milli, 2000);
    assert_string_equal(seen.c[c2].uid, "c2");
    assert_false(seen.c[c2].non_preemptible);
    assert_int_equal(seen.c[c2].devices, 0x1);
    assert_string_equal(seen.c[c2].gang, "");
    assert_int_equal(seen.c[c2].gpu_milli, 250);
    /* The callback's non-zero return stops the walk and is returned. */
    seen.n = 4;
    assert_int_equal(fair_ledger_open_intervals(l, collect_charge, &seen, &err), 1);
    fair_ledger_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_exact_across_boundaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_by_team_and_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dates_and_tz, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lent_derive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_samples_lent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_reconcile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input_and_backpressure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_optional_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_charges_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locked_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_by_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preemptions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_open, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
