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

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_bad_config_and_flags),
        cmocka_unit_test_teardown(test_endpoints, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
