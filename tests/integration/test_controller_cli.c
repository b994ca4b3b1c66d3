/* fairshare-controller as a program: --help lists every config key; a bad
 * config file or flag stops it before it starts, with exit status 2 and a
 * message naming the key; an unreachable API server fails cleanly; the
 * HTTP endpoints answer (health, readiness, metrics, the ledger's report). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

#include <sqlite3.h>

/* Runs the controller with args to completion; returns its exit status and
 * its output (malloc'd) in *out. */
static int run_ctl(const char *const *args, char **out)
{
    char bin[512], log[] = "/tmp/fair-ctl-cli-XXXXXX";
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    snprintf(bin, sizeof bin, "%s/fairshare-controller", FAIR_BIN_DIR);
    const char *argv[16];
    int n = 0;
    argv[n++] = bin;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fd);
    int st = 0;
    long long deadline = now_ms() + 20000;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            break;
        }
        nap(20);
    }
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 16);
    size_t len = fread(buf, 1, (1 << 16) - 1, f);
    buf[len] = '\0';
    fclose(f);
    unlink(log);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_help(void **state)
{
    (void)state;
    char *out = NULL;
    const char *args[] = {"--help", NULL};
    assert_int_equal(run_ctl(args, &out), 0);
    const char *keys[] = {"--kubeconfig",
                          "--config",
                          "--ledger",
                          "--listen",
                          "--leader-elect",
                          "--pod-name",
                          "schedulerName",
                          "leaderElection.leaseName",
                          "ledger.samplePeriod",
                          "cycleInterval",
                          "kubeAPI.qps",
                          "logLevel",
                          NULL};
    for (int i = 0; keys[i]; i++)
        if (!strstr(out, keys[i]))
            fail_msg("--help lacks %s", keys[i]);
    free(out);
}

static void test_bad_config_and_flags(void **state)
{
    (void)state;
    char path[] = "/tmp/fair-ctl-cfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *bad = "apiVersion: config.fairshare.dev/v1alpha1\nkind: ControllerConfig\n"
                      "kubeAPI:\n  qps: -5\n";
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    char *out = NULL;
    const char *a1[] = {"--config", path, NULL};
    assert_int_equal(run_ctl(a1, &out), 2);
    assert_non_null(strstr(out, "key kubeAPI.qps"));
    assert_non_null(strstr(out, path));
    free(out);
    unlink(path);
    const char *a2[] = {"--listen", "nowhere", NULL};
    assert_int_equal(run_ctl(a2, &out), 2);
    assert_non_null(strstr(out, "key metricsAddress"));
    free(out);
    const char *a3[] = {"--leader-elect=maybe", NULL};
    assert_int_equal(run_ctl(a3, &out), 2);
    assert_non_null(strstr(out, "leaderElection.enabled"));
    free(out);
    const char *a4[] = {"--frobnicate", NULL};
    assert_int_equal(run_ctl(a4, &out), 2);
    assert_non_null(strstr(out, "--frobnicate"));
    free(out);
    const char *a5[] = {"--kubeconfig", "/nonexistent/kubeconfig", "--ledger", "", NULL};
    assert_int_equal(run_ctl(a5, &out), 1);
    assert_non_null(strstr(out, "/nonexistent/kubeconfig"));
    free(out);
}

static void test_endpoints(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 1, 8, "endpoints");
    long code = 0;
    char *body = ctl_get(&c, "/healthz", &code);
    assert_int_equal(code, 200);
    assert_string_equal(body, "ok\n");
    free(body);
    body = ctl_get(&c, "/readyz", &code);
    assert_int_equal(code, 200);
    free(body);
    body = ctl_get(&c, "/metrics", &code);
    assert_int_equal(code, 200);
    assert_non_null(strstr(body, "# TYPE fairshare_cycle_duration_seconds histogram"));
    assert_non_null(strstr(body, "fairshare_informers_synced 1"));
    assert_non_null(strstr(body, "fairshare_leader 1"));
    free(body);
    body = ctl_get(&c, "/api/v1/reports/gpu-hours?from=2026-01-01&to=2026-01-02&by=team", &code);
    assert_int_equal(code, 200);
    free(body);
    body = ctl_get(&c, "/api/v1/reports/gpu-hours?from=bad", &code);
    assert_int_equal(code, 400);
    free(body);
    /* The dashboard the finance tour points to is the controller's own "/"
     * (test_dashboard renders the same lib/httpd page in Chromium). */
    body = ctl_get(&c, "/", &code);
    assert_int_equal(code, 200);
    assert_non_null(strstr(body, "<title>Fairshare GPU ledger</title>"));
    free(body);
    body = ctl_get(&c, "/nope", &code);
    assert_int_equal(code, 404);
    free(body);
    stop_all(&fake, &c);
}

/* ledger.creatorLabel: a pod's creator, the value of that label, is kept
 * in the ledger at bind time (for report --by user); a pod without the
 * label has none. */
static void test_creator_label(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    config_write(c.config, sizeof c.config, &fake, "creator",
                 "ledger:\n  creatorLabel: example.com/user\n");
    /* The ledger outside the fake's folder, which stop_all removes. */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/fair-creator-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(c.ledger, sizeof c.ledger, "%s/ledger.db", dir);
    assert_int_equal(ctl_start(&c, &fake, "creator"), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("controller not ready");
    }
    mk_namespaces(&fake, (const char *[]){"team-a", NULL});
    mk_project(&fake, "pa", "4", "[\"team-a\"]", "qa");
    mk_queue(&fake, "qa", "pa", "4", 1);
    mk_pod_full(&fake, "team-a", "by-ana", "qa", "1", NULL, ",\"example.com/user\":\"ana\"", NULL,
                0);
    mk_pod(&fake, "team-a", "by-nobody", "qa", "1");
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 2, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the two pods were not bound");
    }
    char ledger[sizeof c.ledger];
    snprintf(ledger, sizeof ledger, "%s", c.ledger);
    stop_all(&fake, &c); /* the last flush */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(ledger, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(
        sqlite3_prepare_v2(h, "SELECT pod, creator FROM intervals ORDER BY pod", -1, &st, NULL),
        SQLITE_OK);
    const char *want[2][2] = {{"by-ana", "ana"}, {"by-nobody", ""}};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), want[i][0]);
        assert_string_equal((const char *)sqlite3_column_text(st, 1), want[i][1]);
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(h);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_bad_config_and_flags),
        cmocka_unit_test_teardown(test_endpoints, tc_teardown),
        cmocka_unit_test_teardown(test_creator_label, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
