/* The controller's config file: defaults, a full file, and a table of bad
 * files, each of which must fail with a message naming the key. Also the
 * address parser and every allocation failing in turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "base/log.h"
#include "ctl/config.h"

#define HEAD "apiVersion: config.fairshare.dev/v1alpha1\nkind: ControllerConfig\n"

static void test_defaults(void **state)
{
    (void)state;
    struct fair_ctl_config c;
    assert_int_equal(fair_ctl_config_init(&c), 0);
    assert_string_equal(c.scheduler_name, "fairshare");
    assert_true(c.leader_elect);
    assert_string_equal(c.lease_name, "fairshare-controller");
    assert_string_equal(c.lease_namespace, "fairshare-system");
    assert_int_equal(c.lease_duration_ms, 15000);
    assert_int_equal(c.cycle_interval_ms, 1000);
    assert_int_equal(c.ledger_sample_ms, 60000);
    assert_int_equal(c.ledger_retention_ms, 400LL * 24 * 3600 * 1000);
    assert_int_equal(c.api_qps, 2000);
    assert_int_equal(c.api_burst, 4000);
    assert_string_equal(c.reclaim_up_to, "FairShare");
    assert_int_equal(c.oq_threshold_pct, 10);
    assert_int_equal(c.oq_min_runtime_ms, 60000);
    assert_int_equal(c.max_evictions, 3);
    assert_int_equal(c.hold_timeout_ms, 600000);
    assert_int_equal(c.lend_max_runtime_ms, 0);
    assert_int_equal(c.min_fraction_milli, 50);
    assert_false(c.charge_other_schedulers);
    assert_int_equal(c.log_level, FAIR_LOG_INFO);
    assert_int_equal(c.event_interval_ms, 5 * 60 * 1000);
    assert_string_equal(c.metrics_address, "127.0.0.1:8080");
    struct fair_error err = {0};
    assert_int_equal(fair_ctl_config_check(&c, &err), 0);
    fair_ctl_config_release(&c);
}

/* The keys config/controller-config.yaml (branch deploy) uses. */
static const char full[] = HEAD "schedulerName: gpu-fair\n"
                                "leaderElection:\n"
                                "  enabled: false\n"
                                "  leaseName: fs-leader\n"
                                "  leaseNamespace: kube-system\n"
                                "metricsAddress: \":9090\"\n"
                                "ledger:\n"
                                "  path: /var/lib/fairshare/ledger.db\n"
                                "  samplePeriod: 30s\n"
                                "  retention: 8760h\n"
                                "cycleInterval: 500ms\n"
                                "kubeAPI:\n"
                                "  qps: 50\n"
                                "  burst: 100\n"
                                "logLevel: debug\n"
                                "fractions:\n"
                                "  minimum: 100m\n"
                                "reclaim:\n"
                                "  lendMaxRuntime: 2h\n"
                                "quota:\n"
                                "  chargeOtherSchedulers: true\n";

static void test_full_file(void **state)
{
    (void)state;
    struct fair_ctl_config c;
    struct fair_error err = {0};
    assert_int_equal(fair_ctl_config_init(&c), 0);
    int rc = fair_ctl_config_load_text(&c, "cfg.yaml", full, strlen(full), &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_string_equal(c.scheduler_name, "gpu-fair");
    assert_false(c.leader_elect);
    assert_string_equal(c.lease_name, "fs-leader");
    assert_string_equal(c.lease_namespace, "kube-system");
    assert_string_equal(c.metrics_address, ":9090");
    assert_string_equal(c.ledger_path, "/var/lib/fairshare/ledger.db");
    assert_int_equal(c.ledger_sample_ms, 30000);
    assert_int_equal(c.ledger_retention_ms, 8760LL * 3600 * 1000);
    assert_int_equal(c.cycle_interval_ms, 500);
    assert_int_equal(c.api_qps, 50);
    assert_int_equal(c.api_burst, 100);
    assert_int_equal(c.log_level, FAIR_LOG_DEBUG);
    assert_int_equal(c.min_fraction_milli, 100);
    assert_true(c.charge_other_schedulers);
    assert_int_equal(c.lend_max_runtime_ms, 2 * 3600 * 1000);
    /* untouched keys keep their defaults */
    assert_int_equal(c.lease_duration_ms, 15000);
    fair_ctl_config_release(&c);
}

static void test_file_on_disk(void **state)
{
    (void)state;
    char path[] = "/tmp/fair-cfg-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, full, strlen(full)), (ssize_t)strlen(full));
    close(fd);
    struct fair_ctl_config c;
    struct fair_error err = {0};
    assert_int_equal(fair_ctl_config_init(&c), 0);
    assert_int_equal(fair_ctl_config_load_file(&c, path, &err), 0);
    assert_string_equal(c.scheduler_name, "gpu-fair");
    fair_ctl_config_release(&c);
    unlink(path);
    assert_int_equal(fair_ctl_config_init(&c), 0);
    assert_int_not_equal(fair_ctl_config_load_file(&c, "/nonexistent/cfg.yaml", &err), 0);
    assert_non_null(strstr(err.msg, "/nonexistent/cfg.yaml"));
    fair_ctl_config_release(&c);
}

struct bad_case {
    const char *text;
    const char *needles[3]; /* all must appear in the message */
};

static const struct bad_case bad[] = {
    {"apiVersion: v1\nkind: ControllerConfig\n", {"apiVersion", "config.fairshare.dev/v1alpha1"}},
    {"apiVersion: config.fairshare.dev/v1alpha1\nkind: Pod\n", {"key kind", "ControllerConfig"}},
    {"kind: ControllerConfig\n", {"apiVersion", "(missing)"}},
    {HEAD "cycleIntervl: 1s\n", {"unknown key cycleIntervl"}},
    {HEAD "ledger:\n  pth: x.db\n", {"unknown key ledger.pth"}},
    {HEAD "ledger: x.db\n", {"unknown key ledger"}},
    {HEAD "cycleInterval: 1\n", {"key cycleInterval", "no unit"}},
    {HEAD "cycleInterval: fast\n", {"key cycleInterval", "not a duration"}},
    {HEAD "cycleInterval: 1h\n", {"key cycleInterval", "out of range"}},
    {HEAD "cycleInterval: 1ms\n", {"key cycleInterval", "out of range"}},
    {HEAD "kubeAPI:\n  qps: 0\n", {"key kubeAPI.qps", "out of range"}},
    {HEAD "reclaim:\n  upTo: Everything\n", {"key reclaim.upTo", "FairShare or Guarantee"}},
    {HEAD "reclaim:\n  overQuotaThreshold: 150\n",
     {"key reclaim.overQuotaThreshold", "out of range"}},
    {HEAD "reclaim:\n  nodeHoldTimeout: soon\n", {"key reclaim.nodeHoldTimeout"}},
    {HEAD "reclaim:\n  lendMaxRuntime: 31d\n", {"key reclaim.lendMaxRuntime", "out of range"}},
    {HEAD "fractions:\n  minimum: 0\n", {"key fractions.minimum", "out of range"}},
    {HEAD "fractions:\n  minimum: 1\n", {"key fractions.minimum", "out of range"}},
    {HEAD "fractions:\n  minimum: some\n", {"key fractions.minimum", "not a quantity"}},
    {HEAD "fractions:\n  minimum: \"-0.5\"\n", {"key fractions.minimum", "out of range"}},
    {HEAD "quota:\n  chargeOtherSchedulers: maybe\n",
     {"key quota.chargeOtherSchedulers", "true or false"}},
    {HEAD "kubeAPI:\n  qps: lots\n", {"key kubeAPI.qps", "not an integer"}},
    {HEAD "kubeAPI:\n  qps: 500\n  burst: 10\n", {"kubeAPI.burst", "at least"}},
    {HEAD "leaderElection:\n  enabled: yes\n", {"key leaderElection.enabled", "true or false"}},
    {HEAD "leaderElection:\n  enabled: [1]\n", {"key leaderElection.enabled", "list"}},
    {HEAD "leaderElection:\n  leaseName: Bad_Name\n",
     {"key leaderElection.leaseName", "not a valid"}},
    {HEAD "leaderElection:\n  leaseDuration: 5s\n  renewDeadline: 10s\n",
     {"leaderElection.renewDeadline", "shorter"}},
    {HEAD "schedulerName: \"\"\n", {"key schedulerName", "empty"}},
    {HEAD "metricsAddress: localhost\n", {"key metricsAddress", "host:port"}},
    {HEAD "metricsAddress: \"127.0.0.1:99999\"\n", {"key metricsAddress", "65535"}},
    {HEAD "logLevel: loud\n", {"key logLevel", "loud"}},
    {HEAD "ledger:\n  samplePeriod: {a: 1}\n", {"key ledger.samplePeriod", "mapping"}},
    {HEAD "---\n" HEAD, {"one YAML document"}},
    {"- a\n- b\n", {"mapping"}},
    {HEAD "cycleInterval: [unclosed\n", {"cfg.yaml"}},
};

static void test_bad_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct fair_ctl_config c;
        struct fair_error err = {0};
        assert_int_equal(fair_ctl_config_init(&c), 0);
        int rc = fair_ctl_config_load_text(&c, "cfg.yaml", bad[i].text, strlen(bad[i].text), &err);
        if (rc == 0)
            fail_msg("case %zu accepted:\n%s", i, bad[i].text);
        for (int j = 0; j < 3 && bad[i].needles[j]; j++)
            if (!strstr(err.msg, bad[i].needles[j]))
                fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, err.msg, bad[i].needles[j]);
        assert_non_null(strstr(err.msg, "cfg.yaml"));
        fair_ctl_config_release(&c);
    }
}

/* issue 15: gpuModels, as a mapping in the file or alias=product text,
 * and the aliases it gives. */
static void test_gpu_models(void **state)
{
    (void)state;
    struct fair_ctl_config c;
    struct fair_error err = {0};
    assert_int_equal(fair_ctl_config_init(&c), 0);
    assert_string_equal(c.gpu_models, "");
    const char *t =
        HEAD "gpuModels:\n  H100: NVIDIA-H100-80GB-HBM3\n  A100: NVIDIA-A100-SXM4-80GB\n";
    assert_int_equal(fair_ctl_config_load_text(&c, "c", t, strlen(t), &err), 0);
    struct fair_ctl_gpu_alias a[FAIR_CTL_MAX_GPU_ALIASES];
    size_t n = 0;
    assert_int_equal(fair_ctl_parse_gpu_models(c.gpu_models, a, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(fair_ctl_gpu_product(a, n, "H100"), "NVIDIA-H100-80GB-HBM3");
    assert_string_equal(fair_ctl_gpu_product(a, n, "A100"), "NVIDIA-A100-SXM4-80GB");
    assert_string_equal(fair_ctl_gpu_product(a, n, "L40S"), "L40S");
    assert_null(fair_ctl_gpu_product(a, n, NULL));
    assert_int_equal(fair_ctl_config_set(&c, "gpuModels", "h=H100", &err), 0);
    assert_int_equal(fair_ctl_config_check(&c, &err), 0);
    static const char *const wrong[] = {"H100", "=x", "a=", "a=b,a=c", "a b=c", "-a=b", "a=b,,"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        assert_int_equal(fair_ctl_config_set(&c, "gpuModels", wrong[i], &err), 0);
        if (fair_ctl_config_check(&c, &err) != FAIR_EINVAL || !strstr(err.msg, "gpuModels"))
            fail_msg("gpuModels \"%s\" accepted", wrong[i]);
    }
    /* A value that is not a string in the mapping. */
    const char *b = HEAD "gpuModels:\n  H100: [1]\n";
    assert_int_equal(fair_ctl_config_load_text(&c, "c", b, strlen(b), &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "gpuModels.H100"));
    fair_ctl_config_release(&c);
}

static void test_set_and_null(void **state)
{
    (void)state;
    struct fair_ctl_config c;
    struct fair_error err = {0};
    assert_int_equal(fair_ctl_config_init(&c), 0);
    assert_int_equal(fair_ctl_config_set(&c, "ledger.path", "/tmp/l.db", &err), 0);
    assert_string_equal(c.ledger_path, "/tmp/l.db");
    assert_int_equal(fair_ctl_config_set(&c, "leaderElection.enabled", "false", &err), 0);
    assert_false(c.leader_elect);
    assert_int_equal(fair_ctl_config_set(&c, "metricsAddress", "0", &err), 0);
    assert_int_equal(fair_ctl_config_set(&c, "nope", "1", &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "nope"));
    assert_int_equal(fair_ctl_config_set(&c, "ledger.retention", "30d", &err), 0);
    assert_int_equal(c.ledger_retention_ms, 30LL * 24 * 3600 * 1000);
    /* "key:" with no value keeps the default */
    const char *t = HEAD "cycleInterval:\nledger:\n  path: \"\"\n";
    assert_int_equal(fair_ctl_config_load_text(&c, "c", t, strlen(t), &err), 0);
    assert_int_equal(c.cycle_interval_ms, 1000);
    assert_string_equal(c.ledger_path, "");
    fair_ctl_config_release(&c);
    fair_ctl_config_release(NULL);
}

static void test_address(void **state)
{
    (void)state;
    char host[256];
    int port = 0;
    struct fair_error err = {0};
    assert_int_equal(fair_ctl_parse_address("127.0.0.1:8080", host, sizeof host, &port, &err), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_int_equal(fair_ctl_parse_address(":9", host, sizeof host, &port, &err), 0);
    assert_string_equal(host, "0.0.0.0");
    assert_int_equal(port, 9);
    assert_int_equal(fair_ctl_parse_address("[::1]:80", host, sizeof host, &port, &err), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(fair_ctl_parse_address("h:", host, sizeof host, &port, &err), FAIR_EINVAL);
    assert_int_equal(fair_ctl_parse_address("h:8x", host, sizeof host, &port, &err), FAIR_EINVAL);
    assert_int_equal(fair_ctl_parse_address("h", host, sizeof host, &port, &err), FAIR_EINVAL);
}

static void test_help_lists_every_key(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fair_ctl_config_print_help(f);
    fclose(f);
    size_t n = 0;
    for (const struct fair_ctl_config_entry *e = fair_ctl_config_table(); e->name; e++, n++)
        assert_non_null(strstr(buf, e->name));
    assert_true(n >= 15);
    free(buf);
}

/* The file the deploy manifests ship (config/controller-config.yaml). */
static void test_shipped_config(void **state)
{
    (void)state;
    struct fair_ctl_config c;
    struct fair_error err = {0};
    assert_int_equal(fair_ctl_config_init(&c), 0);
    /* FAIR_TEST_DATA_DIR is <source>/tests/data, which may not exist. */
    char path[4096];
    snprintf(path, sizeof path, "%s", FAIR_TEST_DATA_DIR);
    char *cut = strstr(path, "/tests/data");
    assert_non_null(cut);
    snprintf(cut, sizeof path - (size_t)(cut - path), "/config/controller-config.yaml");
    int rc = fair_ctl_config_load_file(&c, path, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_string_equal(c.scheduler_name, "fairshare");
    assert_true(c.leader_elect);
    assert_string_equal(c.metrics_address, ":8080");
    assert_string_equal(c.ledger_path, "/var/lib/fairshare/ledger.db");
    assert_int_equal(c.ledger_retention_ms, 400LL * 24 * 3600 * 1000);
    assert_int_equal(c.api_qps, 2000);
    assert_int_equal(c.api_burst, 4000);
    fair_ctl_config_release(&c);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (long k = 0;; k++) {
        struct fair_ctl_config c;
        struct fair_error err = {0};
        fair_alloc_fail_after(k);
        int rc = fair_ctl_config_init(&c);
        if (rc == 0)
            rc = fair_ctl_config_load_text(&c, "cfg.yaml", full, strlen(full), &err);
        long used = fair_alloc_count();
        fair_alloc_fail_after(-1);
        fair_ctl_config_release(&c);
        if (rc == 0) {
            assert_true(used <= k);
            break;
        }
        assert_int_equal(rc, FAIR_ENOMEM);
        assert_true(k < 10000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),       cmocka_unit_test(test_full_file),
        cmocka_unit_test(test_file_on_disk),   cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_set_and_null),   cmocka_unit_test(test_gpu_models),
        cmocka_unit_test(test_address),        cmocka_unit_test(test_help_lists_every_key),
        cmocka_unit_test(test_shipped_config), cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
