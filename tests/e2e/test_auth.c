/* Who may read the controller's reports and metrics, on a real API server:
 * the controller (this build, run locally with the suite's admin
 * kubeconfig) reviews real ServiceAccount tokens (TokenRequest API) with
 * the real TokenReview and SubjectAccessReview, against the shipped
 * ClusterRoles of config/rbac-reports.yaml and real bindings.
 *
 *  - test_service_account_tokens: a ServiceAccount bound to
 *    fairshare-finance (ClusterRoleBinding) reads the report and the
 *    dashboard but not /metrics; one bound to fairshare-viewer reads
 *    /metrics and not the report; one bound by a RoleBinding in the
 *    controller's namespace reads the report (resource checks name that
 *    namespace); one without a binding gets 403; no token, a made-up
 *    token and a token for another audience get 401; fairsharectl report
 *    --server with the finance token prints the report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "e2e.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/yaml.h"

#define REPORT "/api/v1/reports/gpu-hours?from=2026-01-01&to=2026-01-02&by=team"

/* Creates the ClusterRoles of config/rbac-reports.yaml that do not exist
 * yet (and tracks those for deletion). */
static void apply_reader_roles(void)
{
    json_t *docs = NULL;
    struct fair_error err = {0};
    if (fair_yaml_load_file(FAIR_SOURCE_DIR "/config/rbac-reports.yaml", NULL, &docs, &err))
        fail_msg("config/rbac-reports.yaml: %s", err.msg);
    size_t i;
    json_t *d;
    int roles = 0;
    json_array_foreach(docs, i, d)
    {
        assert_string_equal(e2e_str(d, "kind"), "ClusterRole");
        char path[256];
        snprintf(path, sizeof path, "/apis/rbac.authorization.k8s.io/v1/clusterroles/%s",
                 e2e_str(d, "metadata.name"));
        json_t *old = e2e_get(path);
        if (!old) {
            char *body = json_dumps(d, JSON_COMPACT);
            long code =
                e2e_req("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", body, NULL);
            free(body);
            if (code != 201)
                fail_msg("creating ClusterRole %s: HTTP %ld", e2e_str(d, "metadata.name"), code);
            e2e_track(path);
        }
        json_decref(old);
        roles++;
    }
    assert_int_equal(roles, 2);
    json_decref(docs);
}

static void service_account(const char *ns, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/serviceaccounts", ns);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"%s\"}}",
               name);
}

/* binding "ClusterRoleBinding" (ns NULL) or "RoleBinding" in ns. */
static void make_binding(const char *kind, const char *bns, const char *name, const char *role,
                         const char *sa_ns, const char *sa)
{
    char coll[256], path[512];
    if (bns)
        snprintf(coll, sizeof coll, "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
                 bns);
    else
        snprintf(coll, sizeof coll, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings");
    e2e_create(coll,
               "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"%s\","
               "\"metadata\":{\"name\":\"%s\"},\"roleRef\":{\"apiGroup\":"
               "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"%s\"},"
               "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"%s\",\"namespace\":\"%s\"}]}",
               kind, name, role, sa, sa_ns);
    snprintf(path, sizeof path, "%s/%s", coll, name);
    e2e_track(path);
}

/* A token of the ServiceAccount (TokenRequest); audience NULL: the API
 * server's. malloc'd. */
static char *sa_token(const char *ns, const char *sa, const char *audience)
{
    char path[256], body[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/serviceaccounts/%s/token", ns, sa);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
             "\"spec\":{\"expirationSeconds\":3600%s%s%s}}",
             audience ? ",\"audiences\":[\"" : "", audience ? audience : "", audience ? "\"]" : "");
    json_t *resp = NULL;
    long code = e2e_req("POST", path, body, &resp);
    const char *tok = e2e_str(resp, "status.token");
    if (code != 201 || !tok)
        fail_msg("TokenRequest for %s/%s: HTTP %ld", ns, sa, code);
    char *t = strdup(tok);
    json_decref(resp);
    return t;
}

static size_t discard(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return s * n;
}

/* The status of GET path on the controller's HTTPS port with token (NULL:
 * none). Its certificate is self-signed: not verified here (the
 * integration tests check it against the logged fingerprint). */
static long status(const struct e2e_ctl *c, const char *path, const char *token)
{
    char url[512], auth[4096];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", c->port, path);
    CURL *h = curl_easy_init();
    assert_non_null(h);
    struct curl_slist *hs = NULL;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hs = curl_slist_append(hs, auth);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
    long code = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    curl_slist_free_all(hs);
    return code;
}

/* Waits for the expected status: a new binding reaches the API server's
 * authorizer a moment after it is created, and a refusal seen before that
 * is cached by the controller for http.authDenyCacheTTL (1s here). */
static void expect(const struct e2e_ctl *c, const char *path, const char *token, long want,
                   const char *who)
{
    long got = 0;
    if (!E2E_WAIT((got = status(c, path, token)) == want, E2E_WAIT_MS)) {
        e2e_ctl_dump(c, 20);
        fail_msg("%s: GET %s -> %ld, want %ld", who, path, got, want);
    }
}

/* fairsharectl report --server with a token file; exit status, output in out. */
static int report_cli(const struct e2e_ctl *c, const char *token_file, char *out, size_t n)
{
    char server[64], outfile[600];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", c->port);
    snprintf(outfile, sizeof outfile, "%s/report.out", e2e_dir());
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        const char *bin = FAIR_BIN_DIR "/fairsharectl";
        execl(bin, bin, "report", "--server", server, "--token-file", token_file,
              "--insecure-skip-tls-verify", "--from", "2026-01-01", "--to", "2026-01-02",
              (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    FILE *f = fopen(outfile, "r");
    size_t len = f ? fread(out, 1, n - 1, f) : 0;
    out[len] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_service_account_tokens(void **state)
{
    (void)state;
    char pre[128], name[200];
    e2e_scenario_begin("auth", pre, sizeof pre);
    e2e_namespace(pre);
    apply_reader_roles();
    service_account(pre, "finance");
    service_account(pre, "viewer");
    service_account(pre, "delegated");
    service_account(pre, "nobody");
    snprintf(name, sizeof name, "%s-finance", pre);
    make_binding("ClusterRoleBinding", NULL, name, "fairshare-finance", pre, "finance");
    snprintf(name, sizeof name, "%s-viewer", pre);
    make_binding("ClusterRoleBinding", NULL, name, "fairshare-viewer", pre, "viewer");

    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.secure = true;
    e2e_ctl_start(&ctl, "auth", "http:\n  authDenyCacheTTL: 1s\n");
    /* Resource checks are made in the controller's namespace: the one of
     * the kubeconfig's context, which the log names. A RoleBinding there
     * grants the reports. */
    char ctl_ns[128] = "default";
    FILE *lf = fopen(ctl.log, "r");
    char line[4096];
    while (lf && fgets(line, sizeof line, lf)) {
        const char *p = strstr(line, "authorised with a TokenReview");
        const char *q = p ? strstr(p, " namespace=") : NULL;
        if (q)
            sscanf(q + 11, "%127s", ctl_ns);
    }
    if (lf)
        fclose(lf);
    snprintf(name, sizeof name, "%s-delegated", pre);
    make_binding("RoleBinding", ctl_ns, name, "fairshare-finance", pre, "delegated");

    char *fin = sa_token(pre, "finance", NULL);
    char *view = sa_token(pre, "viewer", NULL);
    char *deleg = sa_token(pre, "delegated", NULL);
    char *nobody = sa_token(pre, "nobody", NULL);
    char *other_aud = sa_token(pre, "finance", "not-fairshare");

    expect(&ctl, REPORT, fin, 200, "finance (ClusterRoleBinding)");
    expect(&ctl, "/", fin, 200, "finance, dashboard");
    expect(&ctl, "/metrics", fin, 403, "finance, metrics");
    expect(&ctl, "/metrics", view, 200, "viewer (ClusterRoleBinding)");
    expect(&ctl, "/api/v1/queues/current", view, 200, "viewer, dashboard data");
    expect(&ctl, REPORT, view, 403, "viewer, report");
    expect(&ctl, REPORT, deleg, 200, "RoleBinding in the controller's namespace");
    expect(&ctl, "/metrics", deleg, 403, "RoleBinding, metrics (needs a ClusterRoleBinding)");
    expect(&ctl, REPORT, nobody, 403, "ServiceAccount without a binding");
    expect(&ctl, REPORT, NULL, 401, "no token");
    expect(&ctl, REPORT, "eyJhbGciOiJSUzI1NiJ9.e30.bm90LWEtc2lnbmF0dXJl", 401, "made-up token");
    expect(&ctl, REPORT, other_aud, 401, "token for another audience");

    /* The CLI, with the finance token in a file. */
    char tokfile[600], out[8192];
    snprintf(tokfile, sizeof tokfile, "%s/finance.token", e2e_dir());
    FILE *f = fopen(tokfile, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", fin);
    fclose(f);
    int rc = report_cli(&ctl, tokfile, out, sizeof out);
    if (rc != 0 || !strstr(out, "TOTAL"))
        fail_msg("fairsharectl report --server exited %d:\n%s", rc, out);
    unlink(tokfile);

    free(fin);
    free(view);
    free(deleg);
    free(nobody);
    free(other_aud);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_service_account_tokens, e2e_scenario_teardown),
    };
    int rc = cmocka_run_group_tests_name("e2e/auth", tests, e2e_setup, e2e_teardown);
    curl_global_cleanup();
    return rc;
}
