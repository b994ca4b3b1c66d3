/* fairsharectl report end to end: a real ledger file written through the
 * API, the real binary (also through a kubectl-fairshare symlink), exit
 * statuses and usage messages, and --server against a real HTTP server
 * (fairsharectl dashboard) including its 400 answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helper_run.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/version.h"
#include "ledger/ledger.h"

static char dir[64], db[128];
static pid_t server_pid; /* killed in teardown when a test fails midway */

static int64_t T(const char *s)
{
    int64_t ms = 0;
    assert_int_equal(fair_time_parse_rfc3339(s, &ms), 0);
    return ms;
}

static void iv(struct fair_ledger *l, const char *uid, const char *queue, const char *team,
               const char *model, int64_t milli, int64_t inq, const char *start, const char *end,
               enum fair_ledger_end reason)
{
    struct fair_error err = {0};
    struct fair_ledger_interval_info in = {.uid = uid,
                                           .namespace_ = team,
                                           .pod = uid,
                                           .queue = queue,
                                           .project = team,
                                           .team = team,
                                           .cost_center = "cc",
                                           .node = "n1",
                                           .gpu_model = model,
                                           .gpu_milli = milli,
                                           .inquota_milli = inq,
                                           .start_ms = T(start)};
    assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
    assert_int_equal(fair_ledger_interval_close(l, uid, T(end), reason, &err), 0);
}

/* November 2026: alpha 41.5 GPU-h, beta 12 (borrowed, preempted), gamma
 * 24; samples every 10 minutes for 72 h in which qa lends 1.333 GPUs and
 * qg 0.667 (2 GPUs borrowed by qb spread over idle guarantees 2:1). */
static void fixture(void)
{
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = db;
    o.sample_period_ms = 600000;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    iv(l, "a1", "qa", "alpha", "A100", 4000, 4000, "2026-11-02T08:00:00Z", "2026-11-02T18:00:00Z",
       FAIR_LEDGER_COMPLETED);
    iv(l, "a2", "qa", "alpha", "A100", 500, 500, "2026-11-02T20:00:00Z", "2026-11-02T23:00:00Z",
       FAIR_LEDGER_COMPLETED);
    iv(l, "b1", "qb", "beta", "H100", 2000, 0, "2026-11-01T12:00:00Z", "2026-11-01T18:00:00Z",
       FAIR_LEDGER_PREEMPTED);
    iv(l, "g1", "qg", "gamma", "H100", 1000, 1000, "2026-11-03T00:00:00Z", "2026-11-04T00:00:00Z",
       FAIR_LEDGER_COMPLETED);
    int64_t t = T("2026-11-01T00:00:00Z");
    for (int k = 1; k <= 432; k++) {
        struct fair_ledger_sample_row rows[3] = {
            {.queue = "qa",
             .project = "alpha",
             .team = "alpha",
             .allocated = 4000,
             .guaranteed = 6000,
             .fair_share = 5000,
             .lent = -1},
            {.queue = "qb",
             .project = "beta",
             .team = "beta",
             .allocated = 2000,
             .guaranteed = 0,
             .fair_share = 1000,
             .pending = 1000,
             .lent = -1},
            {.queue = "qg",
             .project = "gamma",
             .team = "gamma",
             .allocated = 1000,
             .guaranteed = 2000,
             .fair_share = 1000,
             .lent = -1},
        };
        assert_int_equal(fair_ledger_sample(l, t + k * 600000LL, rows, 3, &err), 0);
    }
    assert_int_equal(fair_ledger_flush(l, &err), 0);
    fair_ledger_free(l);
}

static const char expected_csv[] =
    "team,gpu_hours,in_quota_gpu_hours,borrowed_gpu_hours,preempted_gpu_hours,lent_gpu_hours,"
    "avg_gpus,pods\n"
    "alpha,41.500,41.500,0.000,0.000,95.976,0.058,2\n"
    "beta,12.000,0.000,12.000,12.000,0.000,0.017,1\n"
    "gamma,24.000,24.000,0.000,0.000,48.024,0.033,1\n"
    "TOTAL,77.500,65.500,12.000,12.000,144.000,0.108,4\n";

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/fair_report_cli_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof(db), "%s/ledger.db", dir);
    fixture();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fair_test_stop_child(&server_pid);
    return fair_test_remove_dir(dir);
}

/* Runs prog with args (NULL-terminated); returns the exit status. */
static int run(const char *prog, const char *const *args, struct fair_buf *out,
               struct fair_buf *err)
{
    return fair_test_run(dir, prog, args, out, err);
}

static const char *ctl(void)
{
    return FAIR_BIN_DIR "/fairsharectl";
}

static void test_csv_table_json(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    const char *a1[] = {"report", "--from",   "2026-11-01", "--to", "2026-12-01", "--by",
                        "team",   "--format", "csv",        "--db", db,           NULL};
    assert_int_equal(run(ctl(), a1, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out), expected_csv);

    const char *a2[] = {"report", "--from=2026-11-01", "--to=2026-12-01", "--db", db, NULL};
    assert_int_equal(run(ctl(), a2, &out, &err), 0);
    assert_non_null(
        strstr(fair_buf_str(&out), "GPU-hours from 2026-11-01T00:00:00Z to 2026-12-01T00:00:00Z"));
    assert_non_null(strstr(fair_buf_str(&out), "\nalpha       41.500       41.500        0.000"));
    assert_non_null(strstr(fair_buf_str(&out), "\nTOTAL       77.500"));

    const char *a3[] = {
        "report",   "--from", "2026-11-01", "--to", "2026-12-01",           "--by", "queue",
        "--format", "json",   "--db",       db,     "--price-per-gpu-hour", "2",    NULL};
    assert_int_equal(run(ctl(), a3, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out),
                           "{\"queue\":\"qb\",\"gpu_hours\":12.000,\"in_quota_gpu_hours\":0.000,"
                           "\"borrowed_gpu_hours\":12.000,\"preempted_gpu_hours\":12.000,"
                           "\"lent_gpu_hours\":0.000,\"avg_gpus\":0.017,\"pods\":1,"
                           "\"gpu_milli_ms\":43200000000,\"cost\":24.00}"));

    /* A price table per GPU model. */
    char prices[160];
    fair_test_write_file(prices, sizeof(prices), dir, "prices.csv",
                         "model,price\n# per GPU-hour\nA100,2.50\nH100,4\n");
    const char *a4[] = {"report", "--from", "2026-11-01", "--to",          "2026-12-01", "--format",
                        "csv",    "--db",   db,           "--price-table", prices,       NULL};
    assert_int_equal(run(ctl(), a4, &out, &err), 0);
    assert_non_null(
        strstr(fair_buf_str(&out), "\nalpha,41.500,41.500,0.000,0.000,95.976,0.058,2,103.75\n"));
    assert_non_null(
        strstr(fair_buf_str(&out), "\nbeta,12.000,0.000,12.000,12.000,0.000,0.017,1,48.00\n"));
    assert_non_null(
        strstr(fair_buf_str(&out), "\nTOTAL,77.500,65.500,12.000,12.000,144.000,0.108,4,247.75\n"));

    /* kubectl's -o is --format; --by user groups by the creator recorded
     * at bind (none in this fixture: one "(none)" row with every hour). */
    const char *a6[] = {"report", "--from", "2026-11-01", "--to", "2026-12-01", "--by",
                        "team",   "-o",     "csv",        "--db", db,           NULL};
    assert_int_equal(run(ctl(), a6, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out), expected_csv);
    const char *a7[] = {"report", "--from", "2026-11-01",   "--to", "2026-12-01",
                        "--by",   "user",   "--output=csv", "--db", db,
                        NULL};
    assert_int_equal(run(ctl(), a7, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "user,gpu_hours,"));
    assert_non_null(strstr(fair_buf_str(&out), "\n(none),77.500,65.500,12.000,12.000,,"));
    assert_non_null(strstr(fair_buf_str(&out), "\nTOTAL,77.500,"));

    /* Time zone -01:00: November 2 01:00Z .. is local Nov 2 00:00. */
    const char *a5[] = {"report",    "--from", "2026-11-02", "--to", "2026-11-03",
                        "--tz",      "-01:00", "--format",   "csv",  "--by",
                        "namespace", "--db",   db,           NULL};
    assert_int_equal(run(ctl(), a5, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out),
                        "namespace,gpu_hours,in_quota_gpu_hours,borrowed_gpu_hours,"
                        "preempted_gpu_hours,lent_gpu_hours,avg_gpus,pods\n"
                        "alpha,41.500,41.500,0.000,0.000,,1.729,2\n"
                        "gamma,1.000,1.000,0.000,0.000,,0.042,1\n"
                        "TOTAL,42.500,42.500,0.000,0.000,,1.771,3\n");
    fair_buf_release(&out);
    fair_buf_release(&err);
}

/* The UTC date n days from today ("2026-11-25"); *day is today's number. */
static void utc_date(int n, char *out, size_t len)
{
    time_t t = time(NULL) + (time_t)n * 86400;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y-%m-%d", &tm);
}

/* Defaults and relative dates: the period printed is the one asked for.
 * Dates are computed here before and after each run, so that a run across
 * midnight (UTC) still passes. */
static void test_defaults_and_relative_dates(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    char y[16], t[16], want[128], y2[16], t2[16], want2[128];
    /* No dates: yesterday, in UTC. */
    const char *a1[] = {"report", "--db", db, NULL};
    utc_date(-1, y, sizeof y);
    utc_date(0, t, sizeof t);
    assert_int_equal(run(ctl(), a1, &out, &err), 0);
    utc_date(-1, y2, sizeof y2);
    utc_date(0, t2, sizeof t2);
    snprintf(want, sizeof want, "GPU-hours from %sT00:00:00Z to %sT00:00:00Z\n", y, t);
    snprintf(want2, sizeof want2, "GPU-hours from %sT00:00:00Z to %sT00:00:00Z\n", y2, t2);
    if (!strstr(fair_buf_str(&out), want) && !strstr(fair_buf_str(&out), want2))
        fail_msg("expected \"%s\" in:\n%s", want, fair_buf_str(&out));
    /* -7d alone: the last 7 whole days. */
    const char *a2[] = {"report", "--from", "-7d", "--db", db, NULL};
    utc_date(-7, y, sizeof y);
    utc_date(0, t, sizeof t);
    assert_int_equal(run(ctl(), a2, &out, &err), 0);
    utc_date(-7, y2, sizeof y2);
    utc_date(0, t2, sizeof t2);
    snprintf(want, sizeof want, "GPU-hours from %sT00:00:00Z to %sT00:00:00Z\n", y, t);
    snprintf(want2, sizeof want2, "GPU-hours from %sT00:00:00Z to %sT00:00:00Z\n", y2, t2);
    if (!strstr(fair_buf_str(&out), want) && !strstr(fair_buf_str(&out), want2))
        fail_msg("expected \"%s\" in:\n%s", want, fair_buf_str(&out));
    /* last-month alone: the whole of it, whatever its length. */
    const char *a3[] = {"report", "--from", "last-month", "--format", "json", "--db", db, NULL};
    utc_date(0, t, sizeof t);
    assert_int_equal(run(ctl(), a3, &out, &err), 0);
    int yy = (int)strtol(t, NULL, 10), mm = (int)strtol(t + 5, NULL, 10);
    int py = mm == 1 ? yy - 1 : yy, pm = mm == 1 ? 12 : mm - 1;
    snprintf(want, sizeof want,
             "{\"from\":\"%04d-%02d-01T00:00:00Z\",\"to\":\"%04d-%02d-01T00:00:00Z\"", py, pm, yy,
             mm);
    if (strncmp(fair_buf_str(&out), want, strlen(want)) != 0)
        fail_msg("expected \"%s\" in:\n%s", want, fair_buf_str(&out));
    /* --from alone with a date: up to midnight starting today; the
     * fixture's November is all in it. */
    const char *a4[] = {"report", "--from", "2026-11-01", "--format", "csv", "--db", db, NULL};
    assert_int_equal(run(ctl(), a4, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "\nTOTAL,77.500,65.500,12.000,12.000,"));

    /* An IANA zone: the period's two ends in their own offsets across the
     * end of summer time (Europe/Berlin, 2026-10-25). */
    const char *a5[] = {"report", "--from",        "2026-10-01", "--to", "2026-11-01",
                        "--tz",   "Europe/Berlin", "--db",       db,     NULL};
    assert_int_equal(run(ctl(), a5, &out, &err), 0);
    assert_non_null(
        strstr(fair_buf_str(&out),
               "GPU-hours from 2026-10-01T00:00:00+02:00 to 2026-11-01T00:00:00+01:00\n"));
    /* November in Berlin starts at 2026-10-31T23:00Z: the same totals as UTC's. */
    const char *a6[] = {"report",        "--from",   "2026-11-01", "--to", "2026-12-01", "--tz",
                        "Europe/Berlin", "--format", "csv",        "--db", db,           NULL};
    assert_int_equal(run(ctl(), a6, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "\nTOTAL,77.500,65.500,12.000,12.000,"));
    fair_buf_release(&out);
    fair_buf_release(&err);
}

/* --percent and --unit days, from a file and from a server alike. */
static void test_percent_and_unit(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    const char *a1[] = {"report",   "--from", "2026-11-01", "--to", "2026-12-01", "--percent",
                        "--format", "csv",    "--db",       db,     NULL};
    assert_int_equal(run(ctl(), a1, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out),
                        "team,gpu_hours,in_quota_gpu_hours,borrowed_gpu_hours,preempted_gpu_hours,"
                        "lent_gpu_hours,avg_gpus,pods,share_percent\n"
                        "alpha,41.500,41.500,0.000,0.000,95.976,0.058,2,53.5\n"
                        "beta,12.000,0.000,12.000,12.000,0.000,0.017,1,15.5\n"
                        "gamma,24.000,24.000,0.000,0.000,48.024,0.033,1,31.0\n"
                        "TOTAL,77.500,65.500,12.000,12.000,144.000,0.108,4,100.0\n");
    const char *a2[] = {"report", "--from",   "2026-11-01", "--to", "2026-12-01", "--unit",
                        "days",   "--format", "csv",        "--db", db,           NULL};
    assert_int_equal(run(ctl(), a2, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out),
                        "team,gpu_days,in_quota_gpu_days,borrowed_gpu_days,preempted_gpu_days,"
                        "lent_gpu_days,avg_gpus,pods\n"
                        "alpha,1.729,1.729,0.000,0.000,3.999,0.058,2\n"
                        "beta,0.500,0.000,0.500,0.500,0.000,0.017,1\n"
                        "gamma,1.000,1.000,0.000,0.000,2.001,0.033,1\n"
                        "TOTAL,3.229,2.729,0.500,0.500,6.000,0.108,4\n");
    const char *a3[] = {"report", "--from",    "2026-11-01", "--to", "2026-12-01", "--unit",
                        "days",   "--percent", "--db",       db,     NULL};
    assert_int_equal(run(ctl(), a3, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "GPU-days from 2026-11-01T00:00:00Z"));
    assert_non_null(strstr(fair_buf_str(&out), " GPU-DAYS "));
    assert_non_null(strstr(fair_buf_str(&out), "   53.5%\n"));
    fair_buf_release(&out);
    fair_buf_release(&err);
}

static void test_usage_errors(void **state)
{
    (void)state;
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    const char *bad[][16] = {
        {"report", "--from", "2026-11-31", "--to", "2026-12-01", "--db", db, NULL},
        {"report", "--from", "2026/11/01", "--to", "2026-12-01", "--db", db, NULL},
        {"report", "--from", "2026-12-01", "--to", "2026-11-01", "--db", db, NULL},
        {"report", "--from", "2999-11-01", "--db", db, NULL}, /* after today: --to's default */
        {"report", "--from", "2026-11-01", "--to", "2026-12-01", NULL},
        {"report", "--from", "2026-11-01", "--to", "2026-12-01", "--db", db, "--server",
         "http://127.0.0.1:1", NULL},
        {"report", "--from", "2026-11-01", "--to", "2026-12-01", "--db", db, "--by", "planet",
         NULL},
        {"report", "--from", "2026-11-01", "--to", "2026-12-01", "--db", db, "--format", "xml",
         NULL},
        {"report", "--from", "2026-11-01", "--to", "2026-12-01", "--db", db, "--tz", "Mars/Olympus",
         NULL},
        {"report", "--db", db, "--tz", "../../etc/passwd", NULL},
        {"report", "--db", db, "--tz", "/etc/passwd", NULL},
        {"report", "--db", db, "--unit", "weeks", NULL},
        {"report", "--db", db, "--from", "-0d", NULL},
        {"report", "--db", db, "--from", "-7days", NULL},
        {"report", "--db", db, "--from", "-99999d", NULL},
        {"report", "--db", db, "--from", "next-month", NULL},
        {"report", "--db", db, "--from", "today", "--to", "yesterday", NULL},
        {"report", "--from", "2026-11-01", "--to", "2026-12-01", "--db", db, "--colour", NULL},
        {"report", "--from", "2026-11-01", "--to", "2026-12-01", "--db", db, "--price-per-gpu-hour",
         "cheap", NULL},
        {"report", "--from", "2026-11-01", "--to", "2026-12-01", "--db", db, "--from", "2026-11-02",
         NULL},
        {"report", "--from", NULL},
        {"report", "--from", "1900-01-01", "--to", "2026-12-01", "--db", db, NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int st = run(ctl(), bad[i], &out, &err);
        if (st != 2)
            fail_msg("case %zu: status %d, stderr %s", i, st, fair_buf_str(&err));
        assert_non_null(strstr(fair_buf_str(&err), "usage: fairsharectl report"));
        assert_string_equal(fair_buf_str(&out), "");
    }
    /* Runtime errors: status 1 with a clear message. */
    char corrupt[160];
    snprintf(corrupt, sizeof(corrupt), "%s/garbage.db", dir);
    FILE *f = fopen(corrupt, "w");
    assert_non_null(f);
    for (int i = 0; i < 5000; i++)
        fputc('G' + i % 7, f);
    fclose(f);
    const char *c1[] = {"report",     "--from", "2026-11-01", "--to",
                        "2026-12-01", "--db",   corrupt,      NULL};
    assert_int_equal(run(ctl(), c1, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "not a valid ledger database"));
    const char *c2[] = {
        "report", "--from", "2026-11-01", "--to", "2026-12-01", "--db", "/nonexistent/ledger.db",
        NULL};
    assert_int_equal(run(ctl(), c2, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "/nonexistent/ledger.db"));
    const char *c3[] = {"report", "--from",        "2026-11-01",
                        "--to",   "2026-12-01",    "--db",
                        db,       "--price-table", "/nonexistent/prices.csv",
                        NULL};
    assert_int_equal(run(ctl(), c3, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "price table /nonexistent/prices.csv"));
    fair_buf_release(&out);
    fair_buf_release(&err);
}

static void test_kubectl_plugin(void **state)
{
    (void)state;
    char link[160];
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    snprintf(link, sizeof(link), "%s/kubectl-fairshare", dir);
    assert_int_equal(symlink(ctl(), link), 0);
    /* `kubectl fairshare report ...` runs kubectl-fairshare with argv[1]="report". */
    const char *a[] = {"report",   "--from", "2026-11-01", "--to", "2026-12-01",
                       "--format", "csv",    "--db",       db,     NULL};
    assert_int_equal(run(link, a, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out), expected_csv);
    const char *h[] = {"--help", NULL};
    assert_int_equal(run(link, h, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "report"));
    fair_buf_release(&out);
    fair_buf_release(&err);
}

/* Starts `fairsharectl dashboard` on an ephemeral port; returns its pid and
 * the base URL read from its first line of output. */
static pid_t start_server(char *url, size_t n)
{
    fair_test_dashboard_start(db, &server_pid, url, n);
    assert_int_equal(strncmp(url, "http://127.0.0.1:", 17), 0);
    return server_pid;
}

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    return fair_buf_append(ud, p, s * n) ? 0 : s * n;
}

static long http_get(const char *url, struct fair_buf *body, char *ctype, size_t n)
{
    CURL *c = curl_easy_init();
    long status = 0;
    char *ct = NULL;
    fair_buf_reset(body);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(ctype, n, "%s", ct ? ct : "");
    curl_easy_cleanup(c);
    return status;
}

static void test_server(void **state)
{
    (void)state;
    char url[128], u[512], ct[128];
    struct fair_buf out, err, body;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    fair_buf_init(&body, 0);
    pid_t pid = start_server(url, sizeof(url));

    const char *a[] = {"report",   "--from", "2026-11-01", "--to", "2026-12-01",
                       "--format", "csv",    "--server",   url,    NULL};
    assert_int_equal(run(ctl(), a, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out), expected_csv);
    /* The same through the table format and a time zone with a '+'. */
    const char *b[] = {"report", "--from", "2026-11-01", "--to", "2026-12-01",
                       "--tz",   "+05:30", "--server",   url,    NULL};
    assert_int_equal(run(ctl(), b, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "from 2026-11-01T00:00:00+05:30"));
    /* A price table, --percent, --unit and an IANA zone work with --server
     * as with --db: the same bytes. */
    char prices[160];
    fair_test_write_file(prices, sizeof(prices), dir, "prices-srv.csv", "A100,2.50\n*,4\n");
    const char *c[] = {"report",        "--from",        "2026-10-01", "--to",   "2026-12-01",
                       "--tz",          "Europe/Berlin", "--percent",  "--unit", "days",
                       "--price-table", prices,          "--server",   url,      NULL};
    assert_int_equal(run(ctl(), c, &out, &err), 0);
    struct fair_buf local;
    fair_buf_init(&local, 0);
    const char *d[] = {"report",        "--from",        "2026-10-01", "--to",   "2026-12-01",
                       "--tz",          "Europe/Berlin", "--percent",  "--unit", "days",
                       "--price-table", prices,          "--db",       db,       NULL};
    assert_int_equal(run(ctl(), d, &local, &err), 0);
    assert_non_null(strstr(fair_buf_str(&local), "  247.75\n")); /* 41.5 x 2.5 + 36 x 4 */
    /* The server prints both ends in the offset at --from (it is given one). */
    assert_non_null(strstr(fair_buf_str(&out), "GPU-days from 2026-10-01T00:00:00+02:00 to "
                                               "2026-12-01T01:00:00+02:00\n"));
    assert_string_equal(strchr(fair_buf_str(&out), '\n'), strchr(fair_buf_str(&local), '\n'));
    fair_buf_release(&local);

    /* Malformed queries: 400 with a JSON error, over real HTTP. */
    static const char *const bad[] = {
        "api/v1/reports/gpu-hours?from=2026-11-01",
        "api/v1/reports/gpu-hours?from=2026-11-01&to=2026-12-01&by=planet",
        "api/v1/reports/gpu-hours?from=2026-02-30&to=2026-12-01",
        "api/v1/reports/gpu-hours?from=2026-11-01&to=2026-12-01&x=1",
        "api/v1/reports/gpu-hours?from=2026-11-01&to=2026-12-01&unit=weeks",
        "api/v1/reports/gpu-hours?from=2026-11-01&to=2026-12-01&percent=yes",
        "api/v1/reports/gpu-hours?from=2026-11-01&to=2026-12-01&prices=A100",
        "api/v1/queues/samples?from=2026-11-01",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(u, sizeof(u), "%s%s", url, bad[i]);
        assert_int_equal(http_get(u, &body, ct, sizeof(ct)), 400);
        assert_string_equal(ct, "application/json");
        assert_int_equal(strncmp(fair_buf_str(&body), "{\"error\":\"", 10), 0);
    }
    snprintf(u, sizeof(u),
             "%sapi/v1/reports/gpu-hours?from=2026-11-01&to=2026-12-01&by=team&"
             "format=csv",
             url);
    assert_int_equal(http_get(u, &body, ct, sizeof(ct)), 200);
    assert_string_equal(ct, "text/csv; charset=utf-8");
    assert_string_equal(fair_buf_str(&body), expected_csv);
    snprintf(u, sizeof(u), "%snope", url);
    assert_int_equal(http_get(u, &body, ct, sizeof(ct)), 404);
    /* The report fails clearly when the server is gone. */
    kill(pid, SIGTERM);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    server_pid = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(run(ctl(), a, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "GET http://127.0.0.1:"));
    fair_buf_release(&out);
    fair_buf_release(&err);
    fair_buf_release(&body);
}

/* Both programs say which build they are, in the same words, from the
 * same strings as the library this test links. */
static void test_version(void **state)
{
    (void)state;
    struct fair_buf out, err;
    char want[256];
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    snprintf(want, sizeof want, "fairsharectl %s (commit %s, built %s)\n", fair_version,
             fair_git_commit, fair_build_date);
    const char *v1[] = {"version", NULL}, *v2[] = {"--version", NULL};
    assert_int_equal(run(ctl(), v1, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out), want);
    assert_int_equal(run(ctl(), v2, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out), want);
    snprintf(want, sizeof want, "{\"version\":\"%s\",\"gitCommit\":\"%s\",\"buildDate\":\"%s\"}\n",
             fair_version, fair_git_commit, fair_build_date);
    const char *v3[] = {"version", "-o", "json", NULL};
    assert_int_equal(run(ctl(), v3, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out), want);
    const char *v4[] = {"version", "-o", "xml", NULL};
    assert_int_equal(run(ctl(), v4, &out, &err), 2);
    assert_non_null(strstr(fair_buf_str(&err), "use text, json or yaml"));
    /* MAJOR.MINOR.PATCH, a commit, an RFC 3339 UTC date. */
    unsigned a, b, c;
    char tail;
    assert_int_equal(sscanf(fair_version, "%u.%u.%u%c", &a, &b, &c, &tail), 3);
    assert_true(strlen(fair_git_commit) > 0);
    int64_t ms;
    assert_int_equal(fair_time_parse_rfc3339(fair_build_date, &ms), 0);
    assert_true(fair_build_date[strlen(fair_build_date) - 1] == 'Z');

    snprintf(want, sizeof want, "fairshare-controller %s (commit %s, built %s)\n", fair_version,
             fair_git_commit, fair_build_date);
    assert_int_equal(run(FAIR_BIN_DIR "/fairshare-controller", v2, &out, &err), 0);
    assert_string_equal(fair_buf_str(&out), want);
    fair_buf_release(&out);
    fair_buf_release(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_table_json),   cmocka_unit_test(test_defaults_and_relative_dates),
        cmocka_unit_test(test_percent_and_unit), cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_kubectl_plugin),   cmocka_unit_test(test_server),
        cmocka_unit_test(test_version),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
