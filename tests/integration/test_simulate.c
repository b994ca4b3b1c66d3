/* fairsharectl simulate as a user runs it: bad flags (exit 2 and usage),
 * bad files (exit 1, the message names the file and line), the output
 * files of a replay and of a --compare run (one window for both), useful
 * work (per-job CSV, useful allocation = allocation minus lost work,
 * multi-pod jobs, jobs that can never run, checkpoints), the fragmentation
 * mode, and one run on the real Alibaba trace (skipped when it is
 * absent). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "helper_run.h"

#define CTL FAIR_BIN_DIR "/fairsharectl"
#define DATA FAIR_TEST_DATA_DIR "/sim"
#define TRACE FAIR_SOURCE_DIR "/../shared/traces/alibaba-openb-2023"

static char tmpdir[256];
static char out_buf[1 << 16], err_buf[1 << 16];

static void slurp(const char *path, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    size_t len = fread(buf, 1, n - 1, f);
    buf[len] = '\0';
    fclose(f);
}

/* Runs fairsharectl with argv (NULL-terminated, argv[0] omitted); returns
 * its exit status; stdout and stderr land in out_buf and err_buf. */
static int run_ctl(const char *const *args)
{
    char out_path[300], err_path[300];
    snprintf(out_path, sizeof(out_path), "%s/stdout", tmpdir);
    snprintf(err_path, sizeof(err_path), "%s/stderr", tmpdir);
    const char *argv[40] = {CTL};
    size_t n = 1;
    for (; args[n - 1] && n < 39; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(out_path, "w", stdout) || !freopen(err_path, "w", stderr))
            _exit(127);
        execv(CTL, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    slurp(out_path, out_buf, sizeof(out_buf));
    slurp(err_path, err_buf, sizeof(err_buf));
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static char *read_out(const char *dir, const char *name)
{
    static char buf[1 << 20];
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) != 0)
        fail_msg("%s was not written", path);
    slurp(path, buf, sizeof(buf));
    return buf;
}

/* Field `name` of the CSV row that starts with `prefix` (header in the
 * first line), as a number; fails the test when either is missing or the
 * field is empty. (read_out()'s buffer is reused: read, then ask.) */
static double csv_get(const char *csv, const char *prefix, const char *name)
{
    int col = -1, k = 0;
    const char *p = csv;
    for (const char *f = csv; *f && *f != '\n'; k++) {
        size_t len = strcspn(f, ",\n");
        if (len == strlen(name) && strncmp(f, name, len) == 0)
            col = k;
        f += len;
        if (*f == ',')
            f++;
    }
    if (col < 0)
        fail_msg("no column %s", name);
    p = strstr(csv, prefix);
    if (!p)
        fail_msg("no row %s", prefix);
    p += *p == '\n';
    for (int i = 0; i < col; i++) {
        p = strpbrk(p, ",\n");
        if (!p || *p == '\n')
            fail_msg("row %s has no field %d", prefix, col);
        p++;
    }
    if (*p == ',' || *p == '\n')
        fail_msg("row %s: %s is empty", prefix, name);
    return strtod(p, NULL);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/fair-sim-it-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_bad_flags(void **state)
{
    (void)state;
    const char *const cases[][12] = {
        {"simulate", NULL},
        {"simulate", "--bogus", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv",
         "--placement", "worst-fit", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv",
         "--cycle-seconds", "0", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv", "--seed",
         "x", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv", "extra",
         NULL},
        {"simulate", "--pods", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv",
         "--checkpoint-minutes", "soon", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv",
         "--fragmentation", "--checkpoint-minutes", "30", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv",
         "--fragmentation", "--protocol", "fgd", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv", "--protocol",
         "paper", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv",
         "--fragmentation", "--protocol", "paper", "--stop-percent", "90", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv",
         "--fragmentation", "--placement", "BestFit,best-fit", NULL},
        {"simulate", "--nodes", DATA "/nodes_2x8.csv", "--pods", DATA "/jobs_2x8.csv",
         "--fragmentation", "--projects", DATA "/projects.yaml", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = run_ctl(cases[i]);
        if (rc != 2 || !strstr(err_buf, "usage: fairsharectl simulate"))
            fail_msg("case %zu: exit %d, stderr: %s", i, rc, err_buf);
        assert_true(starts_with(err_buf, "fairsharectl simulate: "));
    }
    assert_non_null(strstr(err_buf, "--fragmentation takes no --projects"));
    const char *const help[] = {"simulate", "--help", NULL};
    assert_int_equal(run_ctl(help), 0);
    assert_non_null(strstr(out_buf, "usage: fairsharectl simulate"));
    assert_non_null(strstr(out_buf, "--compare FILE"));
    assert_non_null(strstr(out_buf, "--jobs FILE"));
    assert_non_null(strstr(out_buf, "--checkpoint-minutes N"));
}

static void test_bad_files(void **state)
{
    (void)state;
    const char *const missing[] = {"simulate",           "--nodes", DATA "/nope.csv", "--pods",
                                   DATA "/jobs_2x8.csv", NULL};
    assert_int_equal(run_ctl(missing), 1);
    assert_non_null(strstr(err_buf, DATA "/nope.csv: cannot open"));
    char bad[300];
    fair_test_write_file(bad, sizeof(bad), tmpdir, "bad.csv",
                         "name,queue,submit_s,gpu\nok,q,0,1\nbad,q,zero,1\n");
    const char *const badrow[] = {"simulate", "--nodes", DATA "/nodes_2x8.csv",
                                  "--pods",   bad,       NULL};
    assert_int_equal(run_ctl(badrow), 1);
    assert_non_null(strstr(err_buf, "bad.csv:3: submit_s: \"zero\""));
    const char *const badproj[] = {
        "simulate",           "--nodes",    DATA "/nodes_2x8.csv", "--pods",
        DATA "/jobs_2x8.csv", "--projects", DATA "/nodes_2x8.csv", NULL};
    assert_int_equal(run_ctl(badproj), 1);
    assert_non_null(strstr(err_buf, "nodes_2x8.csv"));
}

static void test_replay_outputs(void **state)
{
    (void)state;
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/out", tmpdir);
    const char *const args[] = {
        "simulate", "--nodes", DATA "/nodes_2x8_plain.csv", "--pods", DATA "/jobs_2x8.csv", "--out",
        dir,        NULL};
    int rc = run_ctl(args);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    assert_non_null(strstr(out_buf, "config=base"));
    assert_non_null(strstr(out_buf, "queue=team-a jobs=3 started=3 completed=3"));
    assert_non_null(strstr(out_buf, "queue=team-b jobs=2 started=2 completed=2"));
    char *ts = read_out(dir, "timeseries.csv");
    assert_true(starts_with(ts, "config,t_s,gpu_capacity,gpu_allocated,alloc_ratio,"));
    size_t nts = count_lines(ts) - 1;
    assert_true(nts >= 10); /* one sample per 10 s cycle over >= 100 s */
    assert_non_null(strstr(ts, "\nbase,0.000,16.000,16.000,1.0000,2,0,0.000\n"));
    char *q = read_out(dir, "queues.csv");
    assert_int_equal(count_lines(q), 1 + 2 * nts);
    assert_true(starts_with(q, "config,t_s,queue,project,allocated_gpu,fair_share_gpu,"));
    char *s = read_out(dir, "summary.csv");
    assert_int_equal(count_lines(s), 4);
    assert_non_null(strstr(s, "\nbase,fairshare,team-a,3,3,3,0,"));
    assert_non_null(strstr(s, "\nbase,fairshare,*,5,5,5,0,"));
    char *h = read_out(dir, "report.html");
    assert_non_null(strstr(h, "<svg"));
    assert_non_null(strstr(h, "</html>"));
    assert_null(strstr(h, "<script"));
    assert_null(strstr(h, "https://"));
    char *j = read_out(dir, "jobs.csv");
    assert_true(starts_with(j, "config,job,queue,pods,gpu,status,submit_s,first_start_s,end_s,"
                               "wait_s,jct_s,restarts,used_gpu_hours,lost_gpu_hours,"
                               "useful_gpu_hours\n"));
    assert_int_equal(count_lines(j), 6);
    /* No schedule, no budget: timequota.csv has its header only, and the
     * report no section for them. */
    char *tq = read_out(dir, "timequota.csv");
    assert_string_equal(tq, "config,t_s,wall_time,kind,project,queue,window,budget_level,"
                            "budget_gpu_h,period,period_start\n");
    h = read_out(dir, "report.html");
    assert_non_null(strstr(h, "</html>"));
    assert_null(strstr(h, "Time windows and budgets"));
}

/* The bundled what-ifs of issue 15 with a budget and with a schedule
 * (docs/simulator.md): the console warns at 80%, and the files and the
 * report carry the answers. */
static void test_budget_and_window_what_ifs(void **state)
{
    (void)state;
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/tq", tmpdir);
    const char *const args[] = {"simulate",
                                "--nodes",
                                DATA "/nodes_16x8.csv",
                                "--jobs",
                                DATA "/bursty4_jobs.csv",
                                "--horizon-hours",
                                "72",
                                "--projects",
                                DATA "/bursty4_budget.yaml",
                                "--compare",
                                DATA "/bursty4_day_window.yaml",
                                "--out",
                                dir,
                                NULL};
    int rc = run_ctl(args);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    assert_non_null(strstr(out_buf, "  budget_alert project=onoff level=80 at_h="));
    assert_non_null(strstr(out_buf, "action=block (warning: at 100% it is enforced)\n"));
    assert_non_null(strstr(out_buf, "  budget_alert project=steady level=100 at_h="));
    assert_non_null(strstr(out_buf, "  window_switches=14 (timequota.csv)\n"));
    char *tq = read_out(dir, "timequota.csv");
    assert_non_null(strstr(tq, "\nbase,"));
    assert_non_null(strstr(tq, ",budget,onoff,,,80,300.000,day,2026-01-05T00:00:00Z\n"));
    assert_non_null(
        strstr(tq, "\ncompare,28800.000,2026-01-05T08:00:00Z,window,day,,office-hours,"));
    char *q = read_out(dir, "queues.csv");
    assert_non_null(strstr(q, ",budget_used_gpu_h,budget_remaining_gpu_h\n"));
    /* compare: day's queue and project in their window, no budget */
    assert_non_null(strstr(q, ",office-hours,office-hours,,\n"));
    char *h = read_out(dir, "report.html");
    assert_non_null(strstr(h, "<h2>Time windows and budgets</h2>"));
    assert_non_null(strstr(h, "project onoff used 80% of its 300.0 GPU-hour budget for this "
                              "day; at 100% it is enforced"));
    assert_non_null(strstr(h, "project steady used 100% of its 500.0 GPU-hour budget for this "
                              "day; action overQuotaOnly: it borrows nothing until the period "
                              "ends"));
    assert_non_null(strstr(h, "office-hours</td><td>36.0 h</td><td>50.0%</td><td>3</td>"));
}

static void test_compare(void **state)
{
    (void)state;
    char dir[300], other[300];
    snprintf(dir, sizeof(dir), "%s/cmp", tmpdir);
    /* What if team-b had the whole cluster guaranteed and team-a none? */
    fair_test_write_file(
        other, sizeof(other), tmpdir, "other.yaml",
        "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: all}\n"
        "spec: {guaranteed: {gpu: 16}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\n"
        "spec: {project: all, guaranteed: {gpu: 0}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-b}\n"
        "spec: {project: all, guaranteed: {gpu: 16}}\n");
    const char *const args[] = {"simulate",
                                "--nodes",
                                DATA "/nodes_2x8_plain.csv",
                                "--pods",
                                DATA "/jobs_2x8.csv",
                                "--projects",
                                DATA "/projects.yaml",
                                "--compare",
                                other,
                                "--out",
                                dir,
                                NULL};
    int rc = run_ctl(args);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    assert_non_null(strstr(out_buf, "config=base projects=" DATA "/projects.yaml"));
    assert_non_null(strstr(out_buf, "config=compare projects="));
    char *s = read_out(dir, "summary.csv");
    assert_int_equal(count_lines(s), 7);
    assert_non_null(strstr(s, "\nbase,fairshare,*,"));
    assert_non_null(strstr(s, "\ncompare,fairshare,*,"));
    char *ts = read_out(dir, "timeseries.csv");
    assert_non_null(strstr(ts, "\nbase,0.000,"));
    assert_non_null(strstr(ts, "\ncompare,0.000,"));
    char *h = read_out(dir, "report.html");
    assert_non_null(strstr(h, ">compare</td>"));
    assert_non_null(strstr(h, "compare fair share"));
    char *j = read_out(dir, "jobs.csv");
    assert_non_null(strstr(j, "\nbase,a1,"));
    assert_non_null(strstr(j, "\ncompare,a1,"));

    /* One window for both. With team-a limited to 8 GPUs, a2 waits for
     * a1 (0-100 s) and a3 for a2 (100-200 s): that run ends at 210 s, the
     * base one at 180 s; both are reported over 210 s. */
    fair_test_write_file(
        other, sizeof(other), tmpdir, "limited.yaml",
        "apiVersion: fairshare.dev/v1alpha1\nkind: Project\nmetadata: {name: all}\n"
        "spec: {guaranteed: {gpu: 16}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-a}\n"
        "spec: {project: all, guaranteed: {gpu: 8}, limit: {gpu: 8}}\n---\n"
        "apiVersion: fairshare.dev/v1alpha1\nkind: Queue\nmetadata: {name: team-b}\n"
        "spec: {project: all, guaranteed: {gpu: 8}}\n");
    rc = run_ctl(args);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    s = read_out(dir, "summary.csv");
    assert_true(csv_get(s, "\nbase,fairshare,*,", "duration_s") == 180);
    assert_true(csv_get(s, "\ncompare,fairshare,*,", "duration_s") == 210);
    assert_true(csv_get(s, "\nbase,fairshare,*,", "window_s") == 210);
    assert_true(csv_get(s, "\ncompare,fairshare,*,", "window_s") == 210);
    assert_non_null(strstr(out_buf,
                           "config=base projects=" DATA "/projects.yaml placement=fairshare "
                           "checkpoint=none reclaim_threshold=10% reclaim_min_runtime=60s "
                           "max_evictions=3 node_hold=10.0min window_h=0.06 simulated_h=0.05"));
}

static void test_useful_work(void **state)
{
    (void)state;
    /* team-b's 2-pod job (4 GPUs each) takes its guarantee back at 20 s:
     * one of team-a's 8-GPU pods is evicted and loses 20 s; "huge" (16
     * GPUs in one pod) fits no node and is left out, with a warning. */
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/useful", tmpdir);
    const char *const args[] = {"simulate",
                                "--nodes",
                                DATA "/nodes_2x8_plain.csv",
                                "--jobs",
                                DATA "/jobs_gang.csv",
                                "--projects",
                                DATA "/projects.yaml",
                                "--out",
                                dir,
                                NULL};
    int rc = run_ctl(args);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    assert_non_null(strstr(out_buf, "trace: 2 nodes, 16 GPUs, 4 jobs of 5 pods"));
    assert_non_null(strstr(err_buf, "warning: config=base"));
    assert_non_null(strstr(err_buf, "1 job can never run and is left out"));
    assert_non_null(strstr(err_buf, "huge (no-node, 16.0 GPUs)"));
    /* The headline: allocation next to useful allocation. */
    assert_non_null(strstr(out_buf, "alloc=75.0% useful_alloc=69.4% "));
    assert_non_null(strstr(out_buf, "lost_gpu_h=0.044"));
    assert_non_null(strstr(out_buf, "left_out=1"));
    assert_null(strstr(out_buf, "=-0"));
    assert_null(strstr(out_buf, " -0"));

    char *s = read_out(dir, "summary.csv");
    const char *tot = "\nbase,fairshare,*,";
    double used = csv_get(s, tot, "used_gpu_hours"), lost = csv_get(s, tot, "lost_gpu_hours");
    double useful = csv_get(s, tot, "useful_gpu_hours");
    double alloc = csv_get(s, tot, "mean_alloc_ratio");
    double ualloc = csv_get(s, tot, "useful_alloc_ratio");
    double window_h = csv_get(s, tot, "window_s") / 3600;
    assert_true(lost > 0.04);
    assert_true(fabs(useful - (used - lost)) < 0.002);
    /* Useful allocation is allocation minus lost work, over 16 GPUs x the
     * window (GPU-hours are printed to 0.001: 0.001 / 0.8 GPU-h). */
    assert_true(fabs(alloc - used / (16 * window_h)) < 0.0015);
    assert_true(fabs(ualloc - (used - lost) / (16 * window_h)) < 0.0015);
    assert_true(fabs((alloc - ualloc) - lost / (16 * window_h)) < 0.0015);
    assert_true(fabs((alloc - ualloc) - 8.0 * 20 / 3600 / (16 * window_h)) < 0.0001);
    assert_true(csv_get(s, tot, "unrunnable") == 1);
    assert_true(csv_get(s, tot, "max_restarts") == 1);
    assert_true(csv_get(s, "\nbase,fairshare,team-b,", "guarantee_delivered_ratio") > 0.83);
    assert_true(csv_get(s, "\nbase,fairshare,team-b,", "ttg_p50_s") == 10);

    char *j = read_out(dir, "jobs.csv");
    assert_non_null(strstr(j, "\nbase,b1,team-b,2,8.000,completed,20.000,30.000,80.000,10.000,"
                              "60.000,0,"));
    assert_non_null(strstr(j, "\nbase,huge,team-b,1,16.000,no-node,30.000,,,,,0,"));
    /* Per-job lost work adds up to the summary's. */
    double jl =
        csv_get(j, "\nbase,a1,", "lost_gpu_hours") + csv_get(j, "\nbase,a2,", "lost_gpu_hours");
    assert_true(fabs(jl - lost) < 0.002);

    char *h = read_out(dir, "report.html");
    assert_non_null(strstr(h, "useful allocation</th>"));
    assert_non_null(strstr(h, "<td class=\"big\">69.4%</td>"));
    assert_non_null(strstr(h, "huge (no-node)"));
    assert_null(strstr(h, "e+0"));

    /* Checkpoints every minute do not help a job evicted after 20 s. */
    const char *const ck[] = {"simulate",
                              "--nodes",
                              DATA "/nodes_2x8_plain.csv",
                              "--jobs",
                              DATA "/jobs_gang.csv",
                              "--projects",
                              DATA "/projects.yaml",
                              "--checkpoint-minutes",
                              "1",
                              NULL};
    rc = run_ctl(ck);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    assert_non_null(strstr(out_buf, "checkpoint=60s"));
    assert_non_null(strstr(out_buf, "lost_gpu_h=0.044"));
}

/* frag.csv's unallocated_gpu (4th column) of each policy: checks that the
 * lower-bound row exists and is <= every policy's; returns it. */
static double check_lower_bound(const char *csv)
{
    double bound = -1, others[16];
    size_t n = 0;
    const char *line = strchr(csv, '\n');
    while (line && line[1]) {
        line++;
        char policy[32];
        double u = 0;
        if (sscanf(line, "%*[^,],%31[^,],%*[^,],%lf", policy, &u) != 2)
            fail_msg("bad frag.csv row: %.80s", line);
        if (strcmp(policy, "lower-bound") == 0) {
            assert_true(bound < 0); /* once */
            bound = u;
        } else {
            assert_true(n < 16);
            others[n++] = u;
        }
        line = strchr(line, '\n');
    }
    if (bound < 0)
        fail_msg("no lower-bound row in frag.csv:\n%s", csv);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++)
        if (bound > others[i])
            fail_msg("lower bound %.1f above a policy's %.1f:\n%s", bound, others[i], csv);
    return bound;
}

static void test_fragmentation_mode(void **state)
{
    (void)state;
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/frag", tmpdir);
    const char *const args[] = {"simulate",  "--fragmentation",
                                "--nodes",   DATA "/nodes_2x8.csv",
                                "--pods",    DATA "/pods_openb.csv",
                                "--repeats", "2",
                                "--out",     dir,
                                NULL};
    int rc = run_ctl(args);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    char *f = read_out(dir, "frag.csv");
    assert_int_equal(count_lines(f), 11); /* header + one row per policy + the bound */
    assert_true(starts_with(f, "trace,policy,repeats,unallocated_gpu,"));
    assert_non_null(strstr(f, "\npods_openb,fairshare,2,"));
    assert_non_null(strstr(f, "\npods_openb,first-fit,2,"));
    assert_non_null(strstr(f, "\npods_openb,fgd,2,"));
    assert_non_null(strstr(f, "\npods_openb,fgd-online,2,"));
    assert_non_null(strstr(f, "\npods_openb,lower-bound,2,"));
    check_lower_bound(f);
    assert_non_null(strstr(out_buf, "fewer GPUs unallocated than the best baseline"));
    assert_non_null(strstr(out_buf, "\npods_openb   lower-bound       2 "));

    /* Only 0.6-GPU pods: one per device, 16 x 0.4 GPU lost whatever the
     * policy, and the bound proves exactly that. */
    char pods[300];
    fair_test_write_file(pods, sizeof(pods), tmpdir, "pods_600.csv",
                         "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,1,600\n");
    const char *const six[] = {"simulate", "--fragmentation",
                               "--nodes",  DATA "/nodes_2x8.csv",
                               "--pods",   pods,
                               "--out",    dir,
                               NULL};
    rc = run_ctl(six);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    f = read_out(dir, "frag.csv");
    assert_true(check_lower_bound(f) == 6.4);
    assert_non_null(strstr(f, "\npods_600,lower-bound,3,6.4,6.4,6.4,-1.0,-1.0,-1.0,"));
    assert_non_null(strstr(f, "\npods_600,first-fit,3,6.4,"));
}

/* The FGD paper's protocol on a fixed arrival order (--arrivals), and its
 * errors. */
static void test_paper_arrivals(void **state)
{
    (void)state;
    char order[300];
    snprintf(order, sizeof(order), "%s/order.csv", tmpdir);
    FILE *f = fopen(order, "w");
    assert_non_null(f);
    /* First fit on node-a (V100M16), node-b (T4), 8 GPUs each: 15 whole
     * GPUs (8 + 7), pod-1 (V100 only) fails after 93.75% arrived, 1 GPU
     * free, pod-4 (T4, 0.25) on
     * node-b's last device (98.4%), pod-4 again (100%: 15,500 of 16,000
     * allocated), a CPU pod (100% again), a copy name of the paper's
     * simulator. The window holds the last three records: 3.125% left. */
    fprintf(f, "name\n");
    for (int i = 0; i < 15; i++)
        fprintf(f, "pod-0\n");
    fprintf(f, "pod-1\npod-4\npod-4-tuned-3\npod-3\n");
    fclose(f);
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/paper", tmpdir);
    const char *const args[] = {
        "simulate",    "--fragmentation",      "--nodes",    DATA "/nodes_2x8.csv",
        "--pods",      DATA "/pods_openb.csv", "--arrivals", order,
        "--placement", "first-fit,BestFit",    "--out",      dir,
        NULL};
    int rc = run_ctl(args);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    if (!strstr(out_buf, "| seed | first-fit | BestFit | lower bound |"))
        fail_msg("no table header: %s", out_buf);
    if (!strstr(out_buf, "| - | 3.12 |"))
        fail_msg("first fit: %s", out_buf);
    char *csv = read_out(dir, "paper.csv");
    assert_true(starts_with(csv, "trace,seed,policy,unallocated_pct,window_records,"));
    assert_non_null(strstr(csv, "\npods_openb,42,first-fit,3.1250,2,19,1,93.75,1.0\n"));
    /* Where the free GPU sits at the window's end: 15 devices full, the
     * last one half used by the two 0.25 pods. */
    char *freecsv = read_out(dir, "paper-free.csv");
    assert_true(starts_with(freecsv, "trace,seed,policy,free_milli,devices\n"));
    assert_non_null(strstr(freecsv, "\npods_openb,42,first-fit,0,15\n"));
    assert_non_null(strstr(freecsv, "\npods_openb,42,first-fit,500,1\n"));
    assert_null(strstr(freecsv, "\npods_openb,42,first-fit,1000,"));

    f = fopen(order, "w");
    assert_non_null(f);
    fprintf(f, "name\npod-0\npod-9\n");
    fclose(f);
    rc = run_ctl(args);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err_buf, "order.csv:3: name: no pod \"pod-9\" in the trace"));
    /* 3 of 16 GPUs requested: no record in any window. */
    f = fopen(order, "w");
    assert_non_null(f);
    fprintf(f, "name\npod-0\npod-0\npod-0\n");
    fclose(f);
    rc = run_ctl(args);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err_buf, "no arrival ends within 98.5-101.5% of the GPU capacity"));
}

static void test_real_trace(void **state)
{
    (void)state;
    struct stat st;
    if (stat(TRACE "/openb_pod_list_default.csv", &st) != 0) {
        printf("SKIPPED: the Alibaba trace is not at " TRACE
               " (clone the shared traces next to the source tree to run this test)\n");
        skip();
    }
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/real", tmpdir);
    const char *const args[] = {"simulate",
                                "--nodes",
                                TRACE "/openb_node_list_gpu_node.csv",
                                "--pods",
                                TRACE "/openb_pod_list_default.csv",
                                "--speedup",
                                "200",
                                "--horizon-hours",
                                "48",
                                "--out",
                                dir,
                                NULL};
    int rc = run_ctl(args);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    assert_non_null(strstr(out_buf, "trace: 1213 nodes, 6212 GPUs, 8152 jobs"));
    assert_non_null(strstr(out_buf, "queue=* jobs=8152 started=8152"));
    char *s = read_out(dir, "summary.csv");
    assert_int_equal(count_lines(s), 3);
    const char *const frag[] = {"simulate",    "--fragmentation",
                                "--nodes",     TRACE "/openb_node_list_gpu_node.csv",
                                "--pods",      TRACE "/openb_pod_list_default.csv",
                                "--placement", "gpu-best-fit",
                                "--repeats",   "1",
                                NULL};
    rc = run_ctl(frag);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    assert_non_null(strstr(out_buf, "default      gpu-best-fit"));
}

/* The paper's protocol on the real trace, seed 42: the arrivals, our
 * BestFit and first fit, the paper's published figures for the seed. */
static void test_real_trace_paper(void **state)
{
    (void)state;
    struct stat st;
    if (stat(TRACE "/openb_pod_list_default.csv", &st) != 0) {
        printf("SKIPPED: the Alibaba trace is not at " TRACE "\n");
        skip();
    }
    const char *const args[] = {"simulate",    "--fragmentation",
                                "--protocol",  "paper",
                                "--nodes",     TRACE "/openb_node_list_gpu_node.csv",
                                "--pods",      TRACE "/openb_pod_list_default.csv",
                                "--placement", "BestFit,first-fit",
                                "--repeats",   "1",
                                NULL};
    int rc = run_ctl(args);
    if (rc)
        fail_msg("exit %d: %s", rc, err_buf);
    /* Seed 42: our BestFit 7.06 (the paper's own figure), first fit 5.95;
     * the paper's FGD 4.86,
     * BestFit 7.06, GpuPacking 8.63; the bound 3.00. */
    if (!strstr(out_buf, "| 42 | 7.06 | 5.95 | 4.86 | 7.06 | 8.63 | 3.00 |"))
        fail_msg("%s", out_buf);
    assert_non_null(strstr(out_buf, "paper: Weng et al., ATC '23"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_flags),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_replay_outputs),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_budget_and_window_what_ifs),
        cmocka_unit_test(test_useful_work),
        cmocka_unit_test(test_fragmentation_mode),
        cmocka_unit_test(test_paper_arrivals),
        cmocka_unit_test(test_real_trace),
        cmocka_unit_test(test_real_trace_paper),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
