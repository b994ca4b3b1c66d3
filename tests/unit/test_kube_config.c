/* Unit tests of lib/kube/config.c: kubeconfig files good and malformed,
 * in-cluster configuration with an overridden service-account directory,
 * token rotation, base64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <event2/event.h>

#include "base/alloc.h"
#include "base/log.h"
#include "kube/client.h"
#include "kube/config.h"

static char dir[64];

static void write_file(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/fair-kconfig-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

/* base64("CA-PEM") = Q0EtUEVN, ("CERT") = Q0VSVA==, ("KEY!") = S0VZIQ== */
#define GOOD_TEXT                                                                                  \
    "apiVersion: v1\n"                                                                             \
    "kind: Config\n"                                                                               \
    "current-context: dev\n"                                                                       \
    "clusters:\n"                                                                                  \
    "- name: other\n"                                                                              \
    "  cluster: {server: https://other:1}\n"                                                       \
    "- name: c1\n"                                                                                 \
    "  cluster:\n"                                                                                 \
    "    server: https://127.0.0.1:6443/\n"                                                        \
    "    certificate-authority-data: Q0EtUEVN\n"                                                   \
    "contexts:\n"                                                                                  \
    "- name: dev\n"                                                                                \
    "  context: {cluster: c1, user: u1, namespace: team-a}\n"                                      \
    "- name: files\n"                                                                              \
    "  context: {cluster: c2, user: u2}\n"                                                         \
    "users:\n"                                                                                     \
    "- name: u1\n"                                                                                 \
    "  user:\n"                                                                                    \
    "    client-certificate-data: Q0VSVA==\n"                                                      \
    "    client-key-data: S0VZIQ==\n"                                                              \
    "    token: abc123\n"
static const char *good = GOOD_TEXT;

static void test_kubeconfig_data(void **state)
{
    (void)state;
    write_file("config", good);
    char path[256];
    snprintf(path, sizeof path, "%s/config", dir);
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    assert_int_equal(fair_kconfig_load_kubeconfig(path, NULL, &cfg, &err), 0);
    assert_string_equal(cfg.server, "https://127.0.0.1:6443");
    assert_int_equal(cfg.ca_len, 6);
    assert_memory_equal(cfg.ca, "CA-PEM", 6);
    assert_int_equal(cfg.cert_len, 4);
    assert_memory_equal(cfg.cert, "CERT", 4);
    assert_int_equal(cfg.key_len, 4);
    assert_memory_equal(cfg.key, "KEY!", 4);
    assert_string_equal(cfg.token, "abc123");
    assert_null(cfg.token_file);
    assert_string_equal(cfg.namespace_, "team-a");
    assert_false(cfg.insecure);
    assert_non_null(strstr(cfg.source, "(context dev)"));
    struct fair_kconfig copy;
    assert_int_equal(fair_kconfig_copy(&copy, &cfg, &err), 0);
    assert_memory_equal(copy.key, "KEY!", 4);
    assert_string_equal(copy.server, cfg.server);
    fair_kconfig_release(&copy);
    fair_kconfig_release(&cfg);
}

static void test_kubeconfig_files(void **state)
{
    (void)state;
    write_file("ca.pem", "CAFILE\n");
    write_file("tok", "file-token\n");
    write_file("config2", "current-context: files\n"
                          "clusters:\n"
                          "- name: c2\n"
                          "  cluster:\n"
                          "    server: https://k:443\n"
                          "    certificate-authority: ca.pem\n"
                          "    insecure-skip-tls-verify: true\n"
                          "contexts:\n"
                          "- name: files\n"
                          "  context: {cluster: c2, user: u2}\n"
                          "users:\n"
                          "- name: u2\n"
                          "  user: {tokenFile: tok}\n");
    char path[256];
    snprintf(path, sizeof path, "%s/config2", dir);
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    /* KUBECONFIG wins over ~/.kube/config; its first entry is used. */
    char env[300];
    snprintf(env, sizeof env, "%s:/nonexistent", path);
    setenv("KUBECONFIG", env, 1);
    assert_int_equal(fair_kconfig_load(NULL, &cfg, &err), 0);
    unsetenv("KUBECONFIG");
    assert_string_equal(cfg.server, "https://k:443");
    assert_string_equal(cfg.ca, "CAFILE\n");
    assert_string_equal(cfg.token, "file-token");
    assert_true(cfg.insecure);
    assert_string_equal(cfg.namespace_, "default");
    assert_null(cfg.cert);
    fair_kconfig_release(&cfg);
}

/* Lines of the log text f holds that contain every one of the words. */
static int log_lines_with(FILE *f, const char *w1, const char *w2)
{
    char line[2048];
    int n = 0;
    rewind(f);
    while (fgets(line, sizeof line, f))
        if (strstr(line, w1) && strstr(line, w2))
            n++;
    return n;
}

/* insecure-skip-tls-verify: true turns TLS verification off. That is said
 * once, at warn level, when such a config is loaded: not for a config that
 * verifies, not again for each client made from it (the controller makes
 * two) or for each request. */
static void test_insecure_warns_once(void **state)
{
    (void)state;
    FILE *logf = tmpfile();
    assert_non_null(logf);
    enum fair_log_level old = fair_log_get_level();
    fair_log_set_stream(logf);
    fair_log_set_level(FAIR_LOG_INFO);
    write_file("insecure", "current-context: x\n"
                           "clusters:\n"
                           "- name: c\n"
                           "  cluster: {server: \"https://127.0.0.1:1\", "
                           "insecure-skip-tls-verify: true}\n"
                           "contexts:\n"
                           "- name: x\n"
                           "  context: {cluster: c}\n");
    write_file("verified", good);
    char path[256];
    struct fair_kconfig cfg;
    struct fair_error err = {0};

    snprintf(path, sizeof path, "%s/verified", dir);
    assert_int_equal(fair_kconfig_load_kubeconfig(path, NULL, &cfg, &err), 0);
    assert_false(cfg.insecure);
    fair_kconfig_release(&cfg);
    fflush(logf);
    assert_int_equal(log_lines_with(logf, "insecure-skip-tls-verify", ""), 0);

    snprintf(path, sizeof path, "%s/insecure", dir);
    assert_int_equal(fair_kconfig_load_kubeconfig(path, NULL, &cfg, &err), 0);
    assert_true(cfg.insecure);
    struct event_base *base = event_base_new();
    struct fair_kclient *a = NULL, *b = NULL;
    assert_int_equal(fair_kclient_new(base, &cfg, NULL, &a, &err), 0);
    assert_int_equal(fair_kclient_new(base, &cfg, NULL, &b, &err), 0);
    fair_kclient_free(a);
    fair_kclient_free(b);
    event_base_free(base);
    fflush(logf);
    /* One line, at warn level, naming the file and the server. */
    assert_int_equal(log_lines_with(logf, "insecure-skip-tls-verify", ""), 1);
    assert_int_equal(log_lines_with(logf, "insecure-skip-tls-verify", "level=warn"), 1);
    assert_int_equal(log_lines_with(logf, "insecure-skip-tls-verify", path), 1);
    assert_int_equal(log_lines_with(logf, "insecure-skip-tls-verify", "https://127.0.0.1:1"), 1);
    fair_kconfig_release(&cfg);

    /* A second load warns again: it is another configuration. */
    assert_int_equal(fair_kconfig_load_kubeconfig(path, NULL, &cfg, &err), 0);
    fair_kconfig_release(&cfg);
    fflush(logf);
    assert_int_equal(log_lines_with(logf, "insecure-skip-tls-verify", "level=warn"), 2);

    fair_log_set_stream(stderr);
    fair_log_set_level(old);
    fclose(logf);
}

struct bad_case {
    const char *text;
    const char *context;
    int rc;
    const char *needle;
};

static void test_kubeconfig_malformed(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {"current-context: x\n", NULL, FAIR_EINVAL, "context \"x\" not found in contexts"},
        {"- a\n", NULL, FAIR_EINVAL, "want a mapping at the top"},
        {"clusters: []\n", NULL, FAIR_EINVAL, "current-context: missing"},
        {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: foo}\n", NULL, FAIR_EINVAL,
         "contexts[0].context.cluster \"foo\" not found in clusters"},
        {"current-context: a\ncontexts:\n- name: a\n  context: {user: u}\n", NULL, FAIR_EINVAL,
         "contexts[0].context.cluster: missing"},
        {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
         "clusters:\n- name: c\n  cluster: {}\n",
         NULL, FAIR_EINVAL, "clusters[0].cluster.server: missing"},
        {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
         "clusters:\n- name: c\n  cluster: {server: [1]}\n",
         NULL, FAIR_EINVAL, "clusters[0].cluster.server: want a string"},
        {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
         "clusters:\n- name: c\n  cluster: {server: \"http://k:80\"}\n",
         NULL, FAIR_EINVAL, "plain http://"},
        {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
         "clusters:\n- name: c\n  cluster: {server: \"https://k\", certificate-authority-data: "
         "\"!!notbase64\"}\n",
         NULL, FAIR_EINVAL, "clusters[0].cluster.certificate-authority-data: not valid base64"},
        {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
         "clusters:\n- name: c\n  cluster: {server: \"https://k\", certificate-authority: "
         "/nonexistent/ca.pem}\n",
         NULL, FAIR_EIO, "clusters[0].cluster.certificate-authority: "},
        {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
         "clusters:\n- name: c\n  cluster: {server: \"https://k\", insecure-skip-tls-verify: "
         "\"yes\"}\n",
         NULL, FAIR_EINVAL, "insecure-skip-tls-verify: want true or false"},
        {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
         "clusters:\n- name: c\n  cluster: {server: \"https://k\"}\n"
         "users:\n- name: u\n  user: {client-certificate-data: Q0VSVA==}\n",
         NULL, FAIR_EINVAL, "client-certificate and client-key go together"},
        {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: nobody}\n"
         "clusters:\n- name: c\n  cluster: {server: \"https://k\"}\n",
         NULL, FAIR_EINVAL, "contexts[0].context.user \"nobody\" not found in users"},
        {"contexts: 5\n", "a", FAIR_EINVAL, "contexts: want a list"},
        {"contexts:\n- {context: {}}\n", "a", FAIR_EINVAL, "contexts[0].name: missing"},
        {"a: [1\n", NULL, FAIR_EPARSE, "kubeconfig "},
        {GOOD_TEXT, "nope", FAIR_EINVAL, "context \"nope\" not found in contexts"},
    };
    char path[256];
    snprintf(path, sizeof path, "%s/bad", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file("bad", cases[i].text);
        struct fair_kconfig cfg;
        struct fair_error err = {0};
        int rc = fair_kconfig_load_kubeconfig(path, cases[i].context, &cfg, &err);
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d want %d (%s)", i, rc, cases[i].rc, err.msg);
        if (!strstr(err.msg, cases[i].needle) || !strstr(err.msg, path))
            fail_msg("case %zu: \"%s\" lacks \"%s\" or the path", i, err.msg, cases[i].needle);
        assert_null(cfg.server);
    }
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    assert_int_equal(fair_kconfig_load_kubeconfig("/nonexistent/config", NULL, &cfg, &err),
                     FAIR_EIO);
    assert_non_null(strstr(err.msg, "kubeconfig /nonexistent/config"));
}

static void test_incluster_and_rotation(void **state)
{
    (void)state;
    write_file("token", "tok-1\n");
    write_file("ca.crt", "CA\n");
    write_file("namespace", "fairshare-system\n");
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(fair_kconfig_load_incluster(dir, &cfg, &err), FAIR_EINVAL);
    assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(fair_kconfig_load_incluster(dir, &cfg, &err), 0);
    assert_string_equal(cfg.server, "https://10.0.0.1:443");
    assert_string_equal(cfg.token, "tok-1");
    assert_string_equal(cfg.ca, "CA\n");
    assert_string_equal(cfg.namespace_, "fairshare-system");
    assert_string_equal(cfg.source, "in-cluster");

    /* The token rotates: a new mtime makes the next refresh re-read it. */
    write_file("token", "tok-2\n");
    char p[256];
    snprintf(p, sizeof p, "%s/token", dir);
    struct timespec ts[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    assert_int_equal(fair_kconfig_refresh_token(&cfg, cfg.token_read_ms + 1, &err), 0);
    assert_string_equal(cfg.token, "tok-2");
    /* Same mtime, within a minute: no re-read even if the content changed. */
    write_file("token", "tok-3\n");
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    int64_t t0 = cfg.token_read_ms;
    assert_int_equal(fair_kconfig_refresh_token(&cfg, t0 + 1000, &err), 0);
    assert_string_equal(cfg.token, "tok-2");
    /* After a minute it is re-read anyway. */
    assert_int_equal(fair_kconfig_refresh_token(&cfg, t0 + FAIR_KCONFIG_TOKEN_REFRESH_MS, &err), 0);
    assert_string_equal(cfg.token, "tok-3");
    /* A vanished token file keeps the old token and reports. */
    unlink(p);
    assert_int_equal(fair_kconfig_refresh_token(&cfg, t0 + 3 * FAIR_KCONFIG_TOKEN_REFRESH_MS, &err),
                     FAIR_EIO);
    assert_string_equal(cfg.token, "tok-3");
    fair_kconfig_release(&cfg);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    write_file("token", "t\n");
    assert_int_equal(fair_kconfig_load_incluster(dir, &cfg, &err), 0);
    assert_string_equal(cfg.server, "https://[fd00::1]:443");
    fair_kconfig_release(&cfg);
    unsetenv("KUBERNETES_SERVICE_HOST");
}

static void test_base64(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int rc;
        const char *out;
    } cases[] = {
        {"", 0, ""},
        {"Zg==", 0, "f"},
        {"Zm8=", 0, "fo"},
        {"Zm9v", 0, "foo"},
        {"Zm9vYg", 0, "foob"},
        {"Zm9v\nYmFy", 0, "foobar"},
        {"Z", FAIR_EINVAL, NULL},
        {"Zm9v!", FAIR_EINVAL, NULL},
        {"Zg==Zg", FAIR_EINVAL, NULL},
        {"Zg===", FAIR_EINVAL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        size_t n = 99;
        int rc = fair_base64_decode(cases[i].in, strlen(cases[i].in), &out, &n);
        assert_int_equal(rc, cases[i].rc);
        if (rc == 0) {
            assert_int_equal(n, strlen(cases[i].out));
            assert_string_equal(out, cases[i].out);
        } else {
            assert_null(out);
        }
        fair_free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeconfig_data),        cmocka_unit_test(test_kubeconfig_files),
        cmocka_unit_test(test_insecure_warns_once),    cmocka_unit_test(test_kubeconfig_malformed),
        cmocka_unit_test(test_incluster_and_rotation), cmocka_unit_test(test_base64),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
