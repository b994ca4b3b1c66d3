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
 *    --server with the finance token prints the report.
 *  - test_via_apiserver: fairsharectl report and dashboard --via-apiserver
 *    through the real API server's service proxy, with a ServiceAccount's
 *    kubeconfig. The API server proxies a Service to its Endpoints and
 *    refuses loopback addresses there, so the controller listens on a
 *    non-loopback IPv4 address of this machine (E2E_PROXY_ADDR, else the
 *    first one found when the API server is local) behind a Service without a selector and a manual
 *    Endpoints object whose targetRef is a stand-in Pod with that IP (the
 *    proxy checks it); where there is no such address (only lo; a remote
 *    API server without E2E_PROXY_ADDR), the test is skipped with a
 *    message. The report prints with
 *    get on services/proxy and the finance role; without the role the
 *    controller answers 403; a made-up token in X-Fairshare-Authorization
 *    gets 401 from the controller; the dashboard serves its data on
 *    loopback and never prints the token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "e2e.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/yaml.h"
#include "kube/config.h"

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

/* Runs fairsharectl with args (NULL-terminated, without argv[0]); stdout
 * and stderr together into out. Returns the exit status. */
static int run_ctl(const char *const *args, char *out, size_t n)
{
    char outfile[600];
    const char *argv[32];
    int k = 0;
    argv[k++] = FAIR_BIN_DIR "/fairsharectl";
    for (int i = 0; args[i] && k < 31; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    snprintf(outfile, sizeof outfile, "%s/fairsharectl.out", e2e_dir());
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
        execv(argv[0], (char *const *)argv);
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

/* fairsharectl report --server with a token file; exit status, output in out. */
static int report_cli(const struct e2e_ctl *c, const char *token_file, char *out, size_t n)
{
    char server[64];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", c->port);
    const char *args[] = {
        "report", "--server",   server, "--token-file", token_file, "--insecure-skip-tls-verify",
        "--from", "2026-01-01", "--to", "2026-01-02",   NULL};
    return run_ctl(args, out, n);
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

/* ---- through the API server's service proxy ---- */

/* The address the controller listens on for the proxy test, into out:
 * E2E_PROXY_ADDR ("none": skip); else, when the API server is on this
 * machine (its kubeconfig names loopback, as ../shared/k8s's does), the
 * first IPv4 address of this network namespace that the API server can
 * put in Endpoints (not loopback, not link-local; the local plane's own
 * tun0 is one). false, with the reason in why, when there is none. */
static bool proxy_addr(char *out, size_t n, char *why, size_t wn)
{
    const char *env = getenv("E2E_PROXY_ADDR");
    if (env && *env) {
        if (strcmp(env, "none") == 0) {
            snprintf(why, wn, "E2E_PROXY_ADDR=none");
            return false;
        }
        snprintf(out, n, "%s", env);
        return true;
    }
    struct fair_kconfig adm;
    struct fair_error err = {0};
    fair_kconfig_init(&adm);
    bool local = false;
    if (fair_kconfig_load(getenv("KUBECONFIG"), &adm, &err) == 0) {
        const char *h = adm.server + 8; /* after https:// */
        local = !strncmp(h, "127.", 4) || !strncmp(h, "localhost", 9) || !strncmp(h, "[::1]", 5);
    }
    if (!local) {
        snprintf(why, wn,
                 "the API server (%s) is not on this machine: set E2E_PROXY_ADDR to an address "
                 "of this machine that it can reach",
                 adm.server ? adm.server : "?");
        fair_kconfig_release(&adm);
        return false;
    }
    fair_kconfig_release(&adm);
    struct ifaddrs *ifs = NULL, *i;
    bool found = false;
    if (getifaddrs(&ifs) != 0)
        ifs = NULL;
    for (i = ifs; i && !found; i = i->ifa_next) {
        /* By address, not interface: 10.x added to lo is fine too. */
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
            continue;
        const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
        uint32_t ip = ntohl(a->sin_addr.s_addr);
        if ((ip >> 24) == 127 || (ip >> 16) == 0xa9fe || ip == 0) /* loopback, link-local */
            continue;
        found = inet_ntop(AF_INET, &a->sin_addr, out, (socklen_t)n) != NULL;
    }
    if (ifs)
        freeifaddrs(ifs);
    if (!found)
        snprintf(why, wn,
                 "this network namespace has no non-loopback IPv4 address for the controller "
                 "to listen on (set E2E_PROXY_ADDR, or add one)");
    return found;
}

/* A kubeconfig for token, with the suite's API server and CA; its path
 * into path. */
static void token_kubeconfig(const char *name, const char *token, char *path, size_t n)
{
    struct fair_kconfig adm;
    struct fair_error err = {0};
    fair_kconfig_init(&adm);
    if (fair_kconfig_load(getenv("KUBECONFIG"), &adm, &err))
        fail_msg("the suite's kubeconfig: %s", err.msg);
    char ca[600] = "";
    if (adm.ca) {
        snprintf(ca, sizeof ca, "%s/%s.ca.crt", e2e_dir(), name);
        FILE *f = fopen(ca, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(adm.ca, 1, adm.ca_len, f), adm.ca_len);
        assert_int_equal(fclose(f), 0);
    }
    snprintf(path, n, "%s/%s.kubeconfig", e2e_dir(), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\n"
            "clusters:\n- name: c\n  cluster:\n    server: %s\n%s%s%s%s"
            "users:\n- name: u\n  user:\n    token: %s\n"
            "contexts:\n- name: u\n  context:\n    cluster: c\n    user: u\n"
            "current-context: u\n",
            adm.server, ca[0] ? "    certificate-authority: " : "", ca, ca[0] ? "\n" : "",
            adm.insecure ? "    insecure-skip-tls-verify: true\n" : "", token);
    assert_int_equal(fclose(f), 0);
    fair_kconfig_release(&adm);
}

struct body {
    char d[65536];
    size_t len;
};

static size_t body_write(char *p, size_t s, size_t n, void *ud)
{
    struct body *b = ud;
    size_t add = s * n, room = sizeof b->d - 1 - b->len;
    memcpy(b->d + b->len, p, add < room ? add : room);
    b->len += add < room ? add : room;
    b->d[b->len] = '\0';
    return add;
}

/* GET url (plain HTTP on loopback: the local dashboard). */
static long get_local(const char *url, struct body *b)
{
    b->len = 0;
    b->d[0] = '\0';
    CURL *h = curl_easy_init();
    assert_non_null(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
    long code = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    return code;
}

static pid_t dash_pid;

static int via_teardown(void **state)
{
    if (dash_pid > 0) {
        kill(dash_pid, SIGTERM);
        waitpid(dash_pid, NULL, 0);
        dash_pid = 0;
    }
    return e2e_scenario_teardown(state);
}

static void test_via_apiserver(void **state)
{
    (void)state;
    char addr[64], why[512];
    if (!proxy_addr(addr, sizeof addr, why, sizeof why)) {
        fprintf(stderr,
                "e2e/auth test_via_apiserver: skipped: the API server's service proxy needs an "
                "Endpoints address that is not loopback, and %s\n",
                why);
        skip();
    }
    char pre[128], name[200], path[400];
    e2e_scenario_begin("via", pre, sizeof pre);
    e2e_namespace(pre);
    apply_reader_roles();
    service_account(pre, "finance");
    service_account(pre, "proxyonly");
    snprintf(name, sizeof name, "%s-finance", pre);
    make_binding("ClusterRoleBinding", NULL, name, "fairshare-finance", pre, "finance");
    /* get on services/proxy for the controller's Service, for both. The
     * API server authorises the proxy with the name as the URL spells it,
     * scheme and port included: "fairshare-controller" alone is refused. */
    snprintf(path, sizeof path, "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles", pre);
    e2e_create(path, "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\","
                     "\"metadata\":{\"name\":\"fairshare-proxy\"},\"rules\":[{\"apiGroups\":[\"\"],"
                     "\"resources\":[\"services/"
                     "proxy\"],\"resourceNames\":[\"https:fairshare-controller:8080\"],"
                     "\"verbs\":[\"get\"]}]}");
    snprintf(path, sizeof path, "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
             pre);
    e2e_create(path,
               "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\","
               "\"metadata\":{\"name\":\"fairshare-proxy\"},\"roleRef\":{\"apiGroup\":"
               "\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"fairshare-proxy\"},"
               "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"finance\",\"namespace\":"
               "\"%s\"},{\"kind\":\"ServiceAccount\",\"name\":\"proxyonly\",\"namespace\":"
               "\"%s\"}]}",
               pre, pre);

    static struct e2e_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.secure = true;
    snprintf(ctl.listen_host, sizeof ctl.listen_host, "%s", addr);
    e2e_ctl_start(&ctl, "via", "http:\n  authDenyCacheTTL: 1s\n");

    /* The controller's Service as the chart has it (port 8080, "metrics"),
     * without a selector: its Endpoints name this machine's address. The
     * proxy only dials an address whose targetRef is a Pod of the
     * Service's namespace with that IP in status.podIPs (the API server's
     * isValidAddress): a Pod that no scheduler serves stands in for the
     * controller's, with its status set by hand. */
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", pre);
    e2e_create(path, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                     "\"fairshare-controller-0\"},\"spec\":{\"schedulerName\":"
                     "\"e2e-nobody\",\"containers\":[{\"name\":\"c\",\"image\":\"none\"}]}}");
    char body[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/fairshare-controller-0/status", pre);
    snprintf(body, sizeof body, "{\"status\":{\"podIP\":\"%s\",\"podIPs\":[{\"ip\":\"%s\"}]}}",
             addr, addr);
    long pc = e2e_req("PATCH", path, body, NULL);
    if (pc != 200)
        fail_msg("PATCH %s -> %ld", path, pc);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/services", pre);
    e2e_create(path, "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
                     "\"fairshare-controller\"},\"spec\":{\"ports\":[{\"name\":\"metrics\","
                     "\"port\":8080,\"protocol\":\"TCP\"}]}}");
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/endpoints", pre);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":"
               "\"fairshare-controller\"},\"subsets\":[{\"addresses\":[{\"ip\":\"%s\","
               "\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"%s\",\"name\":"
               "\"fairshare-controller-0\"}}],"
               "\"ports\":[{\"name\":\"metrics\",\"port\":%d,\"protocol\":\"TCP\"}]}]}",
               addr, pre, ctl.port);

    char *fin = sa_token(pre, "finance", NULL);
    char *proxyonly = sa_token(pre, "proxyonly", NULL);
    char finkc[600], pokc[600], out[16384];
    token_kubeconfig("finance", fin, finkc, sizeof finkc);
    token_kubeconfig("proxyonly", proxyonly, pokc, sizeof pokc);

    /* The report: the kubeconfig's token for both hops. Bindings reach
     * the authorizer a moment after they are created: retried. */
    const char *rep[] = {
        "report", "--via-apiserver", "--kubeconfig", finkc,  "--controller-namespace",
        pre,      "--from",          "2026-01-01",   "--to", "2026-01-02",
        NULL};
    int rc = -1;
    if (!E2E_WAIT((rc = run_ctl(rep, out, sizeof out)) == 0, E2E_WAIT_MS) ||
        !strstr(out, "TOTAL")) {
        e2e_ctl_dump(&ctl, 20);
        fail_msg("fairsharectl report --via-apiserver exited %d:\n%s", rc, out);
    }
    /* The proxy passed the request on, but the controller judged the
     * token in X-Fairshare-Authorization: no report role, 403; ... */
    const char *po[] = {
        "report", "--via-apiserver", "--kubeconfig", pokc,   "--controller-namespace",
        pre,      "--from",          "2026-01-01",   "--to", "2026-01-02",
        NULL};
    if (!E2E_WAIT((rc = run_ctl(po, out, sizeof out)) == 1 &&
                      strstr(out, "may not get reports.fairshare.dev"),
                  E2E_WAIT_MS))
        fail_msg("report --via-apiserver without the finance role exited %d:\n%s", rc, out);
    assert_non_null(strstr(out, "answered 403"));
    /* ... a made-up token there: 401 from the controller (the API server
     * accepted the kubeconfig's). */
    const char *bad[] = {"report",
                         "--via-apiserver",
                         "--kubeconfig",
                         finkc,
                         "--token",
                         "eyJhbGciOiJSUzI1NiJ9.e30.bm90LWEtc2lnbmF0dXJl",
                         "--controller-namespace",
                         pre,
                         "--from",
                         "2026-01-01",
                         "--to",
                         "2026-01-02",
                         NULL};
    rc = run_ctl(bad, out, sizeof out);
    if (rc != 1 || !strstr(out, "answered 401"))
        fail_msg("report --via-apiserver with a made-up token exited %d:\n%s", rc, out);

    /* The dashboard: a local listener on loopback, forwarding through the
     * proxy. */
    char errfile[600], url[256], u[400];
    snprintf(errfile, sizeof errfile, "%s/dashboard-via.err", e2e_dir());
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    dash_pid = fork();
    assert_true(dash_pid >= 0);
    if (dash_pid == 0) {
        int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fds[1], 1);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        close(fds[0]);
        close(fds[1]);
        const char *bin = FAIR_BIN_DIR "/fairsharectl";
        execl(bin, bin, "dashboard", "--via-apiserver", "--kubeconfig", finkc,
              "--controller-namespace", pre, "--listen", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *pf = fdopen(fds[0], "r");
    assert_non_null(pf);
    bool got = fgets(url, sizeof url, pf) != NULL;
    fclose(pf);
    if (!got) {
        waitpid(dash_pid, NULL, 0);
        dash_pid = 0;
        char cmd[700];
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", errfile);
        if (system(cmd) != 0)
            fprintf(stderr, "(no output)\n");
        fail_msg("fairsharectl dashboard --via-apiserver did not start");
    }
    url[strcspn(url, "\n")] = '\0';
    assert_int_equal(strncmp(url, "http://127.0.0.1:", 17), 0);
    static struct body b;
    assert_int_equal(get_local(url, &b), 200);
    assert_non_null(strstr(b.d, "<title>"));
    snprintf(u, sizeof u, "%sapi/v1/queues/current", url);
    long code = get_local(u, &b);
    if (code != 200 || !strstr(b.d, "\"queues\""))
        fail_msg("dashboard --via-apiserver: GET %s -> %ld: %s", u, code, b.d);
    snprintf(u, sizeof u, "%sapi/v1/reports/gpu-hours?from=2026-01-01&to=2026-01-02&format=json",
             url);
    code = get_local(u, &b);
    if (code != 200 || !strstr(b.d, "\"gpu_hours\""))
        fail_msg("dashboard --via-apiserver: GET %s -> %ld: %s", u, code, b.d);
    kill(dash_pid, SIGTERM);
    int st = 0;
    waitpid(dash_pid, &st, 0);
    dash_pid = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* Its log names the API server, never the token. */
    FILE *ef = fopen(errfile, "r");
    assert_non_null(ef);
    size_t len = fread(out, 1, sizeof out - 1, ef);
    out[len] = '\0';
    fclose(ef);
    assert_non_null(strstr(out, "via=apiserver"));
    assert_null(strstr(out, fin));

    free(fin);
    free(proxyonly);
    assert_int_equal(e2e_ctl_stop(&ctl), 0);
    e2e_scenario_end();
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_service_account_tokens, e2e_scenario_teardown),
        cmocka_unit_test_teardown(test_via_apiserver, via_teardown),
    };
    int rc = cmocka_run_group_tests_name("e2e/auth", tests, e2e_setup, e2e_teardown);
    curl_global_cleanup();
    return rc;
}
