/* Who may read the controller's reports, dashboard and metrics: the
 * controller as a real process against the fake API server, over real TLS
 * (the fake's CA signs the serving certificate) with real bearer tokens
 * that the fake's TokenReview and SubjectAccessReview judge. The fake's
 * users get the rules of the shipped ClusterRoles (config/rbac-reports.yaml).
 *
 *  - who_may_read_what: no token 401 (with WWW-Authenticate), a bad token
 *    401, a user without a role 403, fairshare-finance reads reports and
 *    the dashboard but not /metrics, fairshare-viewer the dashboard and
 *    /metrics but not reports; health and readiness need nothing.
 *  - cache: a second request with the same token sends no review; a
 *    refused token is refused from the cache too; four identical requests
 *    that arrive together share one pair of reviews.
 *  - slow_review: while the API server holds a review, /healthz, /readyz
 *    and cached requests answer; the held request completes once released.
 *  - unavailable: a review that does not answer within http.authTimeout,
 *    or fails, answers 503 and is not cached.
 *  - plain_http_refused: plain HTTP to the HTTPS port gets no HTTP answer;
 *    a client that does not trust the CA fails verification.
 *  - report_cli: fairsharectl report --server with --token, --token-file,
 *    a kubeconfig (--kubeconfig, --context), --ca-file and
 *    --insecure-skip-tls-verify; refusals explained.
 *  - dashboard_proxy: fairsharectl dashboard --server serves the page and
 *    forwards its JSON requests with the user's token.
 *  - kclient_extra_header: the kube client's extra headers
 *    (fair_kclient_add_header), what dashboard --via-apiserver uses: a
 *    client whose only credential is X-Fairshare-Authorization reads the
 *    report (the header arrives and is judged as the token); reserved
 *    names, CR/LF, empty and oversize values and a fifth header are
 *    refused; the token is in no error message, no log line of the client
 *    (at debug level), the controller or the request log.
 *  - dashboard_via_apiserver: dashboard --via-apiserver's refusals (the
 *    fake has no service proxy: 404 names the Service; a certificate-only
 *    kubeconfig; usage errors), the token never printed. The whole path
 *    through a real API server's proxy: tests/e2e/test_auth.c.
 *  - self_signed: without certificate files the controller serves a
 *    self-signed certificate whose logged fingerprint is the one served;
 *    that certificate works as --ca-file.
 *  - opt_out: http.secureServing false is refused off loopback and serves
 *    plain HTTP without a token on loopback, with a warning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <sys/stat.h>

#include "test_controller_common.h"

#include <event2/event.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/yaml.h"
#include "helper_run.h"
#include "httpd/auth.h"
#include "kube/client.h"

#define FIN "finance-token-0123456789"
#define VIEW "viewer-token-0123456789"
#define NOBODY "nobody-token-0123456789"
#define REPORT "/api/v1/reports/gpu-hours?from=2026-01-01&to=2026-01-02&by=team"

static char fin_rules[2048], view_rules[2048];

/* The rules of a shipped ClusterRole, as JSON text for the fake. */
static void role_rules(const char *name, char *out, size_t n)
{
    json_t *docs = NULL;
    struct fair_error err = {0};
    if (fair_yaml_load_file(FAIR_SOURCE_DIR "/config/rbac-reports.yaml", NULL, &docs, &err))
        fail_msg("config/rbac-reports.yaml: %s", err.msg);
    size_t i;
    json_t *d;
    bool found = false;
    json_array_foreach(docs, i, d)
    {
        if (strcmp(fair_fake_json_str(d, "kind") ?: "", "ClusterRole") != 0 ||
            strcmp(fair_fake_json_str(d, "metadata.name") ?: "", name) != 0)
            continue;
        char *t = json_dumps(json_object_get(d, "rules"), JSON_COMPACT);
        assert_non_null(t);
        assert_true(strlen(t) < n);
        snprintf(out, n, "%s", t);
        free(t);
        found = true;
    }
    json_decref(docs);
    if (!found)
        fail_msg("config/rbac-reports.yaml has no ClusterRole %s", name);
}

static void start_fake(struct fair_fake *fake)
{
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 8};
    assert_int_equal(tc_fake_start(fake, &o), 0);
    role_rules("fairshare-finance", fin_rules, sizeof fin_rules);
    role_rules("fairshare-viewer", view_rules, sizeof view_rules);
    assert_int_equal(fair_fake_add_user(fake, FIN, "alice", "[\"finance\"]", fin_rules), 0);
    assert_int_equal(fair_fake_add_user(fake, VIEW, "system:serviceaccount:monitoring:prometheus",
                                        "[\"system:serviceaccounts\"]", view_rules),
                     0);
    assert_int_equal(fair_fake_add_user(fake, NOBODY, "bob", NULL, NULL), 0);
}

static void write_config(const struct fair_fake *fake, struct ctl *c, const char *tag,
                         const char *extra)
{
    config_write(c->config, sizeof c->config, fake, tag, "leaderElection:\n  enabled: false\n%s",
                 extra ? extra : "");
}

static void start_ctl(struct ctl *c, struct fair_fake *fake, const char *tag)
{
    assert_int_equal(ctl_start(c, fake, tag), 0);
    if (!WAIT_UNTIL(ctl_ready(c), WAIT_MS)) {
        ctl_dump_log(c, 40);
        fail_msg("controller %s not ready", tag);
    }
}

/* ---- requests with their headers ---- */

struct resp {
    long code;
    CURLcode cc;
    struct fair_buf body, headers;
};

static size_t to_buf(char *p, size_t s, size_t n, void *ud)
{
    return fair_buf_append(ud, p, s * n) ? 0 : s * n;
}

static void resp_release(struct resp *r)
{
    fair_buf_release(&r->body);
    fair_buf_release(&r->headers);
}

/* GET url with token (NULL: none), trusting ca (NULL: the system's). */
static struct resp fetch(const char *url, const char *token, const char *ca)
{
    struct resp r = {0};
    fair_buf_init(&r.body, 0);
    fair_buf_init(&r.headers, 0);
    CURL *h = curl_easy_init();
    assert_non_null(h);
    struct curl_slist *hdrs = NULL;
    char auth[300];
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(hdrs, auth);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    }
    if (ca)
        curl_easy_setopt(h, CURLOPT_CAINFO, ca);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, to_buf);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &r.headers);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
    r.cc = curl_easy_perform(h);
    if (r.cc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.code);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    return r;
}

static struct resp get(const struct ctl *c, const char *path, const char *token)
{
    char url[512];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", c->port, path);
    return fetch(url, token, c->ca);
}

/* The status of GET path with token; also checks a refusal's JSON body. */
static long status_of(const struct ctl *c, const char *path, const char *token)
{
    struct resp r = get(c, path, token);
    if (r.cc != CURLE_OK)
        fail_msg("GET %s: %s", path, curl_easy_strerror(r.cc));
    if (r.code >= 400) {
        json_t *j = json_loads(fair_buf_str(&r.body), 0, NULL);
        if (!json_is_string(json_object_get(j, "error")))
            fail_msg("GET %s -> %ld without a JSON error: %s", path, r.code, fair_buf_str(&r.body));
        json_decref(j);
    }
    long code = r.code;
    resp_release(&r);
    return code;
}

static void reviews(struct fair_fake *f, long *tr, long *sar)
{
    assert_int_equal(fair_fake_review_counts(f, tr, sar), 0);
}

/* ---- a request in the background ---- */

struct bg {
    pthread_t t;
    const struct ctl *c;
    const char *path, *token;
    long code;
    volatile int done;
};

static void *bg_run(void *arg)
{
    struct bg *b = arg;
    struct resp r = get(b->c, b->path, b->token);
    b->code = r.cc == CURLE_OK ? r.code : -1;
    resp_release(&r);
    __atomic_store_n(&b->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void bg_start(struct bg *b, const struct ctl *c, const char *path, const char *token)
{
    memset(b, 0, sizeof *b);
    b->c = c;
    b->path = path;
    b->token = token;
    assert_int_equal(pthread_create(&b->t, NULL, bg_run, b), 0);
}

static long bg_join(struct bg *b)
{
    pthread_join(b->t, NULL);
    return b->code;
}

/* ---- tests ---- */

static void test_who_may_read_what(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    start_ctl(&c, &fake, "who");

    /* No token: 401 with the challenge, before any review. */
    long tr0, sar0, tr, sar;
    reviews(&fake, &tr0, &sar0);
    struct resp r = get(&c, "/metrics", NULL);
    assert_int_equal(r.code, 401);
    assert_non_null(
        strstr(fair_buf_str(&r.headers), "WWW-Authenticate: Bearer realm=\"fairshare\""));
    assert_non_null(strstr(fair_buf_str(&r.body), "no bearer token"));
    resp_release(&r);
    assert_int_equal(status_of(&c, REPORT, NULL), 401);
    assert_int_equal(status_of(&c, "/", NULL), 401);
    reviews(&fake, &tr, &sar);
    assert_int_equal(tr, tr0);
    /* A token the API server does not know, or a malformed header. */
    assert_int_equal(status_of(&c, "/metrics", "not-a-real-token"), 401);
    assert_int_equal(status_of(&c, REPORT, "not-a-real-token"), 401);
    /* Authenticated, but no role. */
    assert_int_equal(status_of(&c, "/metrics", NOBODY), 403);
    assert_int_equal(status_of(&c, REPORT, NOBODY), 403);
    assert_int_equal(status_of(&c, "/", NOBODY), 403);
    /* fairshare-finance: reports and the dashboard, not the metrics. */
    r = get(&c, REPORT, FIN);
    assert_int_equal(r.code, 200);
    assert_non_null(strstr(fair_buf_str(&r.body), "TOTAL"));
    resp_release(&r);
    r = get(&c, "/", FIN);
    assert_int_equal(r.code, 200);
    assert_non_null(strstr(fair_buf_str(&r.body), "<title>Fairshare GPU ledger</title>"));
    resp_release(&r);
    assert_int_equal(status_of(&c, "/api/v1/queues/current", FIN), 200);
    assert_int_equal(status_of(&c, "/api/v1/queues/samples?from=2026-01-01&to=2026-01-02", FIN),
                     200);
    r = get(&c, "/metrics", FIN);
    assert_int_equal(r.code, 403);
    assert_non_null(strstr(fair_buf_str(&r.body), "user \\\"alice\\\" may not get /metrics"));
    resp_release(&r);
    /* fairshare-viewer: the metrics and the dashboard, not the reports. */
    r = get(&c, "/metrics", VIEW);
    assert_int_equal(r.code, 200);
    assert_non_null(strstr(fair_buf_str(&r.body), "fairshare_http_auth_requests_total"));
    resp_release(&r);
    assert_int_equal(status_of(&c, "/", VIEW), 200);
    assert_int_equal(status_of(&c, "/api/v1/queues/current", VIEW), 200);
    r = get(&c, REPORT, VIEW);
    assert_int_equal(r.code, 403);
    assert_non_null(
        strstr(fair_buf_str(&r.body), "get reports.fairshare.dev in namespace default"));
    assert_non_null(strstr(fair_buf_str(&r.body), "fairshare-finance"));
    resp_release(&r);
    /* The admin (system:masters) reads everything; unknown paths are 404. */
    assert_int_equal(status_of(&c, REPORT, fake.token), 200);
    assert_int_equal(status_of(&c, "/metrics", fake.token), 200);
    assert_int_equal(status_of(&c, "/nope", NULL), 404);
    /* Health and readiness: their own port, plain HTTP, no token. */
    long code = 0;
    free(ctl_get_as(&c, "/healthz", NULL, &code));
    assert_int_equal(code, 200);
    free(ctl_get_as(&c, "/readyz", NULL, &code));
    assert_int_equal(code, 200);
    /* ... and only there. */
    assert_int_equal(status_of(&c, "/healthz", fake.token), 404);
    assert_true(ctl_metric(&c, "fairshare_http_auth_requests_total{decision=\"forbidden\"}") >= 5);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

static void test_cache(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    /* Long TTLs: what is checked is that a cached decision sends no
     * review, whatever the machine's speed. */
    write_config(&fake, &c, "cache", "http:\n  authCacheTTL: 10m\n  authDenyCacheTTL: 10m\n");
    start_ctl(&c, &fake, "cache");
    long tr0, sar0, tr, sar;
    reviews(&fake, &tr0, &sar0);
    assert_int_equal(status_of(&c, REPORT, FIN), 200);
    reviews(&fake, &tr, &sar);
    assert_int_equal(tr, tr0 + 1);
    assert_int_equal(sar, sar0 + 1);
    assert_int_equal(status_of(&c, REPORT, FIN), 200);
    assert_int_equal(status_of(&c, REPORT, FIN), 200);
    reviews(&fake, &tr, &sar);
    assert_int_equal(tr, tr0 + 1);
    assert_int_equal(sar, sar0 + 1);
    /* Another permission is another decision. */
    assert_int_equal(status_of(&c, "/metrics", FIN), 403);
    assert_int_equal(status_of(&c, "/metrics", FIN), 403);
    reviews(&fake, &tr, &sar);
    assert_int_equal(tr, tr0 + 2);
    assert_int_equal(sar, sar0 + 2);
    /* A refused token is refused from the cache. */
    assert_int_equal(status_of(&c, REPORT, "nope"), 401);
    assert_int_equal(status_of(&c, REPORT, "nope"), 401);
    reviews(&fake, &tr, &sar);
    assert_int_equal(tr, tr0 + 3);
    assert_int_equal(sar, sar0 + 2);

    /* Requests that arrive together share one pair of reviews. */
    /* ctl_metric() reads /metrics as the admin: cached before reviews stop. */
    assert_int_equal(status_of(&c, "/metrics", fake.token), 200);
    reviews(&fake, &tr0, &sar0);
    assert_int_equal(fair_fake_hold_reviews(&fake, 1), 0);
    static struct bg b[4];
    for (int i = 0; i < 4; i++)
        bg_start(&b[i], &c, "/", VIEW);
    if (!WAIT_UNTIL(ctl_metric(&c, "fairshare_http_deferred_requests") == 4, WAIT_MS))
        fail_msg("the four requests are not all waiting");
    /* The one TokenReview may still be on its way to the server when the
     * four are counted as waiting (seen once in a CI run). */
    if (!WAIT_UNTIL((reviews(&fake, &tr, &sar), tr == tr0 + 1), WAIT_MS))
        fail_msg("%ld TokenReviews for the four waiting requests, want 1", tr - tr0);
    assert_int_equal(fair_fake_hold_reviews(&fake, 0), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(bg_join(&b[i]), 200);
    reviews(&fake, &tr, &sar);
    assert_int_equal(tr, tr0 + 1);
    assert_int_equal(sar, sar0 + 1);
    assert_true(ctl_metric(&c, "fairshare_http_auth_cache_hits_total") >= 5);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

static void test_slow_review(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    write_config(&fake, &c, "slow", "http:\n  authTimeout: 1m\n");
    start_ctl(&c, &fake, "slow");
    assert_int_equal(status_of(&c, "/metrics", fake.token), 200); /* now cached */
    long tr0, tr;
    reviews(&fake, &tr0, NULL);
    assert_int_equal(fair_fake_hold_reviews(&fake, 1), 0);
    static struct bg b;
    bg_start(&b, &c, REPORT, FIN);
    if (!WAIT_UNTIL((reviews(&fake, &tr, NULL), tr == tr0 + 1), WAIT_MS))
        fail_msg("the TokenReview never reached the API server");
    /* The review is held: the loop still answers everything else. */
    long code = 0;
    free(ctl_get_as(&c, "/healthz", NULL, &code));
    assert_int_equal(code, 200);
    free(ctl_get_as(&c, "/readyz", NULL, &code));
    assert_int_equal(code, 200);
    assert_int_equal(status_of(&c, "/metrics", fake.token), 200);
    assert_int_equal(ctl_metric(&c, "fairshare_http_auth_reviews_in_flight"), 1);
    assert_false(__atomic_load_n(&b.done, __ATOMIC_SEQ_CST));
    assert_int_equal(fair_fake_hold_reviews(&fake, 0), 0);
    assert_int_equal(bg_join(&b), 200);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

static void test_unavailable(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    write_config(&fake, &c, "timeout", "http:\n  authTimeout: 300ms\n");
    start_ctl(&c, &fake, "timeout");
    /* The API server does not answer in time: 503, not cached. */
    assert_int_equal(fair_fake_hold_reviews(&fake, 1), 0);
    struct resp r = get(&c, REPORT, FIN);
    if (r.code != 503 || !strstr(fair_buf_str(&r.body), "within 300 ms (http.authTimeout)"))
        fail_msg("held review: HTTP %ld, %s", (long)r.code, fair_buf_str(&r.body));
    resp_release(&r);
    assert_int_equal(fair_fake_hold_reviews(&fake, 0), 0);
    assert_int_equal(status_of(&c, REPORT, FIN), 200);
    /* The API server fails: 503, not cached either. */
    assert_int_equal(fair_fake_fail_next(&fake, 500, 1, "/apis/authentication.k8s.io/", "POST", 0),
                     0);
    assert_int_equal(status_of(&c, "/", VIEW), 503);
    assert_int_equal(status_of(&c, "/", VIEW), 200);
    assert_true(ctl_metric(&c, "fairshare_http_auth_review_errors_total") == 2);
    assert_true(ctl_metric(&c, "fairshare_http_auth_requests_total{decision=\"unavailable\"}") ==
                2);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

static void test_plain_http_refused(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    start_ctl(&c, &fake, "plain");
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", c.port);
    struct resp r = fetch(url, fake.token, NULL);
    assert_int_not_equal(r.cc, CURLE_OK);
    assert_int_equal(r.code, 0);
    resp_release(&r);
    /* The same by hand: whatever comes back is not HTTP. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)c.port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    assert_int_equal(send(fd, req, sizeof req - 1, MSG_NOSIGNAL), (ssize_t)(sizeof req - 1));
    char buf[512];
    size_t got = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (n <= 0 || (got += (size_t)n) >= sizeof buf - 1)
            break;
    }
    close(fd);
    buf[got] = '\0';
    assert_true(got < 5 || strncmp(buf, "HTTP/", 5) != 0);
    /* A client that does not trust the fake's CA (only the system's) refuses
     * the server. */
    snprintf(url, sizeof url, "https://127.0.0.1:%d/metrics", c.port);
    r = fetch(url, fake.token, NULL);
    assert_int_equal(r.cc, CURLE_PEER_FAILED_VERIFICATION);
    resp_release(&r);
    /* Still serving. */
    assert_int_equal(status_of(&c, "/metrics", fake.token), 200);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

/* ---- fairsharectl ---- */

static int ctl_report(const char *dir, const char *const *extra, struct fair_buf *out,
                      struct fair_buf *err)
{
    const char *args[24];
    int n = 0;
    args[n++] = "report";
    args[n++] = "--from";
    args[n++] = "2026-01-01";
    args[n++] = "--to";
    args[n++] = "2026-01-02";
    for (int i = 0; extra[i] && n < 23; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    return fair_test_run(dir, FAIR_BIN_DIR "/fairsharectl", args, out, err);
}

static void write_kubeconfig(const struct fair_fake *fake, char *path, size_t n)
{
    char text[2048];
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\n"
             "clusters:\n- name: c\n  cluster:\n    server: %s\n"
             "    certificate-authority: %s\n"
             "users:\n- name: fin\n  user:\n    token: %s\n"
             "- name: view\n  user:\n    token: %s\n"
             "contexts:\n- name: fin\n  context:\n    cluster: c\n    user: fin\n"
             "- name: view\n  context:\n    cluster: c\n    user: view\n"
             "current-context: view\n",
             fake->base_url, fake->ca_path, FIN, VIEW);
    fair_test_write_file(path, n, fake->dir, "user-kubeconfig", text);
}

static void test_report_cli(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    start_ctl(&c, &fake, "cli");
    char server[64], kc[400], tokfile[400], plain[64];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", c.port);
    snprintf(plain, sizeof plain, "http://127.0.0.1:%d", c.port);
    write_kubeconfig(&fake, kc, sizeof kc);
    fair_test_write_file(tokfile, sizeof tokfile, fake.dir, "fin-token", FIN "\n");
    /* No kubeconfig of the user's own around. */
    unsetenv("KUBECONFIG");
    setenv("HOME", fake.dir, 1);
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);

    const char *a1[] = {"--server", server, "--token", FIN, "--ca-file", fake.ca_path, NULL};
    assert_int_equal(ctl_report(fake.dir, a1, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "TOTAL"));
    const char *a2[] = {"--server",   server, "--token-file", tokfile, "--ca-file",
                        fake.ca_path, NULL};
    assert_int_equal(ctl_report(fake.dir, a2, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "TOTAL"));
    /* The kubeconfig's current user is the viewer: refused, and told why. */
    const char *a3[] = {"--server", server, "--kubeconfig", kc, "--ca-file", fake.ca_path, NULL};
    assert_int_equal(ctl_report(fake.dir, a3, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "server answered 403"));
    assert_non_null(strstr(fair_buf_str(&err), "fairshare-finance"));
    const char *a4[] = {"--server", server,      "--kubeconfig", kc,  "--context",
                        "fin",      "--ca-file", fake.ca_path,   NULL};
    assert_int_equal(ctl_report(fake.dir, a4, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "TOTAL"));
    /* $KUBECONFIG works as kubectl's does. */
    setenv("KUBECONFIG", kc, 1);
    const char *a5[] = {"--server", server, "--context", "fin", "--ca-file", fake.ca_path, NULL};
    assert_int_equal(ctl_report(fake.dir, a5, &out, &err), 0);
    unsetenv("KUBECONFIG");
    /* No token at all. */
    const char *a6[] = {"--server", server, "--ca-file", fake.ca_path, NULL};
    assert_int_equal(ctl_report(fake.dir, a6, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "server answered 401"));
    assert_non_null(strstr(fair_buf_str(&err), "no token was sent"));
    /* The server's certificate is checked unless told otherwise, with a
     * warning. */
    const char *a7[] = {"--server", server, "--token", FIN, NULL};
    assert_int_equal(ctl_report(fake.dir, a7, &out, &err), 1);
    const char *a8[] = {"--server", server, "--token", FIN, "--insecure-skip-tls-verify", NULL};
    assert_int_equal(ctl_report(fake.dir, a8, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&err), "warning: --insecure-skip-tls-verify"));
    assert_non_null(strstr(fair_buf_str(&out), "TOTAL"));
    /* Tokens never go over plain HTTP; auth options need --server. */
    const char *a9[] = {"--server", plain, "--token", FIN, NULL};
    assert_int_equal(ctl_report(fake.dir, a9, &out, &err), 2);
    assert_non_null(strstr(fair_buf_str(&err), "refusing to send a bearer token"));
    const char *a10[] = {"--db", "x.db", "--token", FIN, NULL};
    assert_int_equal(ctl_report(fake.dir, a10, &out, &err), 2);
    /* --via-apiserver: the URL is the API server's service proxy (the fake
     * has none: 404, and the CLI names the Service it tried). */
    char admkc[400], ktext[2048];
    snprintf(ktext, sizeof ktext,
             "apiVersion: v1\nkind: Config\n"
             "clusters:\n- name: c\n  cluster:\n    server: %s\n"
             "    certificate-authority: %s\n"
             "users:\n- name: a\n  user:\n    token: %s\n"
             "contexts:\n- name: a\n  context:\n    cluster: c\n    user: a\n"
             "current-context: a\n",
             fake.base_url, fake.ca_path, fake.token);
    fair_test_write_file(admkc, sizeof admkc, fake.dir, "adm-kubeconfig", ktext);
    const char *a11[] = {"--via-apiserver",        "--kubeconfig", admkc, "--token", FIN,
                         "--controller-namespace", "fs",           NULL};
    assert_int_equal(ctl_report(fake.dir, a11, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "server answered 404"));
    assert_non_null(strstr(fair_buf_str(&err), "fairshare-controller in namespace fs, port 8080"));
    /* The fake's own users are not the API server's: 401, told which hops. */
    const char *a11b[] = {"--via-apiserver", "--kubeconfig", kc, "--context", "fin", NULL};
    assert_int_equal(ctl_report(fake.dir, a11b, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "server answered 401"));
    assert_non_null(strstr(fair_buf_str(&err), "the API server"));
    const char *a12[] = {"--via-apiserver", "--server", server, NULL};
    assert_int_equal(ctl_report(fake.dir, a12, &out, &err), 2);
    const char *a13[] = {"--via-apiserver", "--kubeconfig", kc, "--ca-file", fake.ca_path, NULL};
    assert_int_equal(ctl_report(fake.dir, a13, &out, &err), 2);
    const char *a14[] = {"--via-apiserver",        "--kubeconfig", kc,
                         "--controller-namespace", "a/../b",       NULL};
    assert_int_equal(ctl_report(fake.dir, a14, &out, &err), 2);
    const char *a15[] = {"--server", server, "--controller-port", "443", NULL};
    assert_int_equal(ctl_report(fake.dir, a15, &out, &err), 2);
    /* A user with only a client certificate has no token for the
     * controller: a clear error, before anything is sent. */
    char certkc[400], text[2048];
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\n"
             "clusters:\n- name: c\n  cluster:\n    server: %s\n"
             "    certificate-authority: %s\n"
             "users:\n- name: u\n  user:\n    client-certificate-data: eA==\n"
             "    client-key-data: eA==\n"
             "contexts:\n- name: u\n  context:\n    cluster: c\n    user: u\n"
             "current-context: u\n",
             fake.base_url, fake.ca_path);
    fair_test_write_file(certkc, sizeof certkc, fake.dir, "cert-kubeconfig", text);
    const char *a16[] = {"--via-apiserver", "--kubeconfig", certkc, NULL};
    assert_int_equal(ctl_report(fake.dir, a16, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "port-forward"));
    assert_null(strstr(fair_buf_str(&err), "server answered"));
    fair_buf_release(&out);
    fair_buf_release(&err);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

/* fairsharectl dashboard --server ... in the background; its URL. */
static int proxy_start(pid_t *pid, char *url, size_t n, const char *const *args)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(FAIR_BIN_DIR "/fairsharectl", (char *const *)args);
        _exit(127);
    }
    close(fds[1]);
    *pid = child;
    FILE *f = fdopen(fds[0], "r");
    assert_non_null(f);
    bool got = fgets(url, (int)n, f) != NULL;
    fclose(f);
    if (!got) { /* it exited: its status */
        int st = 0;
        waitpid(child, &st, 0);
        *pid = 0;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    url[strcspn(url, "\n")] = '\0';
    return 0;
}

static pid_t proxy_pid;

static int proxy_teardown(void **state)
{
    fair_test_stop_child(&proxy_pid);
    return tc_teardown(state);
}

static void test_dashboard_proxy(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    start_ctl(&c, &fake, "proxy");
    char server[64], url[256], u[400];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", c.port);
    const char *fin[] = {FAIR_BIN_DIR "/fairsharectl",
                         "dashboard",
                         "--server",
                         server,
                         "--token",
                         FIN,
                         "--ca-file",
                         fake.ca_path,
                         "--listen",
                         "127.0.0.1:0",
                         NULL};
    assert_int_equal(proxy_start(&proxy_pid, url, sizeof url, fin), 0);
    assert_int_equal(strncmp(url, "http://127.0.0.1:", 17), 0);
    /* The browser's requests carry no token; the proxy adds the user's. */
    struct resp r = fetch(url, NULL, NULL);
    assert_int_equal(r.code, 200);
    assert_non_null(strstr(fair_buf_str(&r.body), "<title>Fairshare GPU ledger</title>"));
    resp_release(&r);
    snprintf(u, sizeof u, "%sapi/v1/queues/current", url);
    r = fetch(u, NULL, NULL);
    assert_int_equal(r.code, 200);
    assert_non_null(strstr(fair_buf_str(&r.body), "\"queues\""));
    resp_release(&r);
    snprintf(u, sizeof u, "%sapi/v1/reports/gpu-hours?from=2026-01-01&to=2026-01-02&format=json",
             url);
    r = fetch(u, NULL, NULL);
    assert_int_equal(r.code, 200);
    assert_non_null(strstr(fair_buf_str(&r.body), "\"gpu_hours\""));
    resp_release(&r);
    fair_test_stop_child(&proxy_pid);
    /* A viewer sees the dashboard's data but not the reports. */
    const char *view[] = {FAIR_BIN_DIR "/fairsharectl",
                          "dashboard",
                          "--server",
                          server,
                          "--token",
                          VIEW,
                          "--ca-file",
                          fake.ca_path,
                          "--listen",
                          "127.0.0.1:0",
                          NULL};
    assert_int_equal(proxy_start(&proxy_pid, url, sizeof url, view), 0);
    r = fetch(url, NULL, NULL);
    assert_int_equal(r.code, 200);
    resp_release(&r);
    snprintf(u, sizeof u, "%sapi/v1/reports/gpu-hours?from=2026-01-01&to=2026-01-02&format=json",
             url);
    r = fetch(u, NULL, NULL);
    assert_int_equal(r.code, 403);
    assert_non_null(strstr(fair_buf_str(&r.body), "fairshare-finance"));
    resp_release(&r);
    fair_test_stop_child(&proxy_pid);
    /* No role at all: it says so and stops at once. */
    const char *nobody[] = {FAIR_BIN_DIR "/fairsharectl",
                            "dashboard",
                            "--server",
                            server,
                            "--token",
                            NOBODY,
                            "--ca-file",
                            fake.ca_path,
                            "--listen",
                            "127.0.0.1:0",
                            NULL};
    assert_int_equal(proxy_start(&proxy_pid, url, sizeof url, nobody), 1);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

/* Whether the file at path contains what (a missing file contains nothing). */
static bool file_has(const char *path, const char *what)
{
    char *data = NULL;
    size_t len = 0;
    struct fair_error err = {0};
    if (fair_read_file(path, 64u << 20, &data, &len, &err))
        return false;
    bool has = strstr(data, what) != NULL;
    fair_free(data);
    return has;
}

static void test_kclient_extra_header(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    start_ctl(&c, &fake, "xhdr");
    char reqlog[400], clientlog[400];
    snprintf(reqlog, sizeof reqlog, "%s/xhdr-requests.log", fake.dir);
    snprintf(clientlog, sizeof clientlog, "%s/xhdr-client.log", fake.dir);
    struct fair_error err = {0};
    struct fair_kconfig cfg;
    fair_kconfig_init(&cfg);
    char server[64];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", c.port);
    cfg.server = fair_strdup(server);
    assert_non_null(cfg.server);
    assert_int_equal(
        fair_read_file(fake.ca_path, FAIR_KCONFIG_MAX_FILE, &cfg.ca, &cfg.ca_len, &err), 0);
    struct event_base *base = event_base_new();
    assert_non_null(base);
    struct fair_kclient *with = NULL, *without = NULL, *spare = NULL;
    setenv("FAIR_KUBE_REQUEST_LOG", reqlog, 1);
    assert_int_equal(fair_kclient_new(base, &cfg, NULL, &with, &err), 0);
    assert_int_equal(fair_kclient_new(base, &cfg, NULL, &without, &err), 0);
    assert_int_equal(fair_kclient_new(base, &cfg, NULL, &spare, &err), 0);
    unsetenv("FAIR_KUBE_REQUEST_LOG");
    fair_kconfig_release(&cfg);

    /* Refusals: the client's own headers, bad names, header injection,
     * empty and oversize values; no message shows the value. */
    static const char *const reserved[] = {"Authorization", "authorization", "Host",
                                           "Content-Type",  "User-Agent",    "Accept"};
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
        assert_int_equal(fair_kclient_add_header(with, reserved[i], "Bearer " FIN, &err),
                         FAIR_EINVAL);
        assert_null(strstr(err.msg, FIN));
    }
    assert_int_equal(fair_kclient_add_header(with, "X-Bad Name", "v", &err), FAIR_EINVAL);
    assert_int_equal(fair_kclient_add_header(with, "X-Bad:", "v", &err), FAIR_EINVAL);
    assert_int_equal(fair_kclient_add_header(with, "", "v", &err), FAIR_EINVAL);
    assert_int_equal(fair_kclient_add_header(with, FAIR_AUTH_ALT_HEADER,
                                             "Bearer " FIN "\r\nX-Injected: 1", &err),
                     FAIR_EINVAL);
    assert_null(strstr(err.msg, FIN));
    assert_int_equal(fair_kclient_add_header(with, FAIR_AUTH_ALT_HEADER, "", &err), FAIR_EINVAL);
    char *big = fair_malloc(FAIR_KCLIENT_MAX_HEADER_VALUE + 2);
    assert_non_null(big);
    memset(big, 'a', FAIR_KCLIENT_MAX_HEADER_VALUE + 1);
    big[FAIR_KCLIENT_MAX_HEADER_VALUE + 1] = '\0';
    assert_int_equal(fair_kclient_add_header(with, "X-Big", big, &err), FAIR_ERANGE);
    big[FAIR_KCLIENT_MAX_HEADER_VALUE] = '\0'; /* at the limit: accepted */
    assert_int_equal(fair_kclient_add_header(spare, "X-Big", big, &err), 0);
    fair_free(big);
    for (int i = 1; i < FAIR_KCLIENT_MAX_HEADERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "X-Extra-%d", i);
        assert_int_equal(fair_kclient_add_header(spare, name, "1", &err), 0);
    }
    assert_int_equal(fair_kclient_add_header(spare, "X-Extra-5", "1", &err), FAIR_ERANGE);
    fair_kclient_free(spare);
    assert_int_equal(fair_kclient_add_header(with, FAIR_AUTH_ALT_HEADER, "Bearer " FIN, &err), 0);
    assert_int_equal(fair_kclient_add_header(with, "X-Extra", "1", &err), 0);

    /* The header reaches the controller, which takes the token from it;
     * the same client without it gets 401. The client logs at debug level
     * into clientlog meanwhile. */
    fflush(stderr);
    int saved = dup(2);
    int fd = open(clientlog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    fair_log_set_level(FAIR_LOG_DEBUG);
    long st_with = 0, st_without = 0;
    char *body = NULL, *body2 = NULL;
    fair_kclient_request_sync(with, "GET", REPORT, NULL, 0, &st_with, &body, &err);
    fair_kclient_request_sync(without, "GET", REPORT, NULL, 0, &st_without, &body2, &err);
    fair_log_set_level(FAIR_LOG_WARN);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(st_with, 200);
    assert_non_null(body);
    assert_non_null(strstr(body, "TOTAL"));
    assert_int_equal(st_without, 401);
    free(body);
    free(body2);
    fair_kclient_free(with);
    fair_kclient_free(without);
    event_base_free(base);
    assert_int_equal(ctl_stop(&c), 0);

    /* Two requests were logged; the token nowhere. */
    assert_true(file_has(reqlog, "send GET /api/v1/reports/gpu-hours"));
    assert_false(file_has(reqlog, FIN));
    assert_false(file_has(clientlog, FIN));
    assert_false(file_has(c.log, FIN));
    assert_int_equal(fair_fake_stop(&fake), 0);
}

static void test_dashboard_via_apiserver(void **state)
{
    (void)state;
    static struct fair_fake fake;
    start_fake(&fake);
    unsetenv("KUBECONFIG");
    setenv("HOME", fake.dir, 1);
    char kc[400], admkc[400], certkc[400], text[2048];
    write_kubeconfig(&fake, kc, sizeof kc);
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\n"
             "clusters:\n- name: c\n  cluster:\n    server: %s\n"
             "    certificate-authority: %s\n"
             "users:\n- name: a\n  user:\n    token: %s\n"
             "contexts:\n- name: a\n  context:\n    cluster: c\n    user: a\n"
             "current-context: a\n",
             fake.base_url, fake.ca_path, fake.token);
    fair_test_write_file(admkc, sizeof admkc, fake.dir, "adm-kubeconfig", text);
    /* The fake has no service proxy: 404, and the message names the
     * Service it tried; the dashboard does not start. */
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    const char *a1[] = {
        "dashboard", "--via-apiserver",        "--kubeconfig", admkc,      "--token",
        FIN,         "--controller-namespace", "fs",           "--listen", "127.0.0.1:0",
        NULL};
    assert_int_equal(fair_test_run(fake.dir, FAIR_BIN_DIR "/fairsharectl", a1, &out, &err), 1);
    if (!strstr(fair_buf_str(&err), "answered 404"))
        fail_msg("dashboard --via-apiserver said: %s", fair_buf_str(&err));
    assert_non_null(strstr(fair_buf_str(&err), "fairshare-controller in namespace fs, port 8080"));
    assert_non_null(strstr(fair_buf_str(&err), "/api/v1/namespaces/fs/services/"
                                               "https:fairshare-controller:8080/proxy") ||
                    strstr(fair_buf_str(&err), fake.base_url));
    assert_null(strstr(fair_buf_str(&err), FIN));
    assert_null(strstr(fair_buf_str(&err), fake.token));
    assert_null(strstr(fair_buf_str(&out), "http://"));
    const char *a1b[] = {
        "dashboard", "--via-apiserver", "--kubeconfig", admkc, "--controller-port", "https", NULL};
    assert_int_equal(fair_test_run(fake.dir, FAIR_BIN_DIR "/fairsharectl", a1b, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err),
                           "fairshare-controller in namespace fairshare-system, port https"));
    /* The fake's report users are not the API server's: 401, told which
     * hops; the kubeconfig's token is not printed. */
    const char *a2[] = {"dashboard", "--via-apiserver", "--kubeconfig", kc, "--context", "fin",
                        NULL};
    assert_int_equal(fair_test_run(fake.dir, FAIR_BIN_DIR "/fairsharectl", a2, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "answered 401"));
    assert_non_null(strstr(fair_buf_str(&err), "the API server"));
    assert_null(strstr(fair_buf_str(&err), FIN));
    /* A user with only a client certificate: a clear error, nothing sent. */
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\n"
             "clusters:\n- name: c\n  cluster:\n    server: %s\n"
             "    certificate-authority: %s\n"
             "users:\n- name: u\n  user:\n    client-certificate-data: eA==\n"
             "    client-key-data: eA==\n"
             "contexts:\n- name: u\n  context:\n    cluster: c\n    user: u\n"
             "current-context: u\n",
             fake.base_url, fake.ca_path);
    fair_test_write_file(certkc, sizeof certkc, fake.dir, "cert-kubeconfig", text);
    const char *a3[] = {"dashboard", "--via-apiserver", "--kubeconfig", certkc, NULL};
    assert_int_equal(fair_test_run(fake.dir, FAIR_BIN_DIR "/fairsharectl", a3, &out, &err), 1);
    assert_non_null(strstr(fair_buf_str(&err), "port-forward"));
    assert_null(strstr(fair_buf_str(&err), "answered"));
    /* Usage errors. */
    char server[64];
    snprintf(server, sizeof server, "https://127.0.0.1:1");
    const char *u1[] = {"dashboard", "--via-apiserver", "--server", server, NULL};
    const char *u2[] = {
        "dashboard", "--via-apiserver", "--kubeconfig", kc, "--ca-file", fake.ca_path, NULL};
    const char *u3[] = {"dashboard", "--via-apiserver", "--controller-namespace", "a/../b", NULL};
    const char *u4[] = {"dashboard", "--server", server, "--controller-port", "443", NULL};
    const char *u5[] = {"dashboard", "--via-apiserver", "--db", "x.db", NULL};
    const char *const *usage_cases[] = {u1, u2, u3, u4, u5};
    for (size_t i = 0; i < sizeof usage_cases / sizeof *usage_cases; i++)
        assert_int_equal(
            fair_test_run(fake.dir, FAIR_BIN_DIR "/fairsharectl", usage_cases[i], &out, &err), 2);
    fair_buf_release(&out);
    fair_buf_release(&err);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

/* The "sha256=" value of the controller's log line about its certificate. */
static bool logged_fingerprint(const struct ctl *c, char *out, size_t n)
{
    FILE *f = fopen(c->log, "r");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "self-signed");
        const char *s = p ? strstr(p, " sha256=") : NULL;
        if (!s)
            continue;
        s += 8;
        size_t len = strcspn(s, " \n");
        if (len < n) {
            memcpy(out, s, len);
            out[len] = '\0';
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

static void test_self_signed(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    c.self_signed = true;
    start_fake(&fake);
    start_ctl(&c, &fake, "self");
    char logged[128];
    assert_true(logged_fingerprint(&c, logged, sizeof logged));
    /* The certificate served is the one logged. */
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d/metrics", c.port);
    CURL *h = curl_easy_init();
    struct fair_buf body;
    fair_buf_init(&body, 0);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(h, CURLOPT_CERTINFO, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    assert_int_equal(curl_easy_perform(h), CURLE_OK);
    struct curl_certinfo *ci = NULL;
    assert_int_equal(curl_easy_getinfo(h, CURLINFO_CERTINFO, &ci), CURLE_OK);
    assert_non_null(ci);
    assert_true(ci->num_of_certs >= 1);
    const char *pem = NULL;
    for (struct curl_slist *s = ci->certinfo[0]; s; s = s->next)
        if (!strncmp(s->data, "Cert:", 5))
            pem = s->data + 5;
    assert_non_null(pem);
    char pemfile[400];
    fair_test_write_file(pemfile, sizeof pemfile, fake.dir, "served.pem", pem);
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    curl_easy_cleanup(h); /* frees ci and pem */
    fair_buf_release(&body);
    assert_non_null(x);
    unsigned char md[32];
    unsigned int mdlen = 0;
    assert_int_equal(X509_digest(x, EVP_sha256(), md, &mdlen), 1);
    X509_free(x);
    char served[128];
    size_t o = 0;
    for (unsigned int i = 0; i < mdlen; i++)
        o += (size_t)snprintf(served + o, sizeof served - o, "%s%02X", i ? ":" : "", md[i]);
    assert_string_equal(served, logged);
    /* Trusting that certificate is enough for a client (its names include
     * 127.0.0.1). */
    char server[64];
    snprintf(server, sizeof server, "https://127.0.0.1:%d", c.port);
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    const char *a[] = {"--server", server, "--token", FIN, "--ca-file", pemfile, NULL};
    assert_int_equal(ctl_report(fake.dir, a, &out, &err), 0);
    assert_non_null(strstr(fair_buf_str(&out), "TOTAL"));
    fair_buf_release(&out);
    fair_buf_release(&err);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

static bool log_has(const struct ctl *c, const char *what)
{
    FILE *f = fopen(c->log, "r");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return found;
}

static void test_opt_out(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_fake(&fake);
    struct fair_buf out, err;
    fair_buf_init(&out, 0);
    fair_buf_init(&err, 0);
    /* Off loopback: refused before anything starts, naming the key. */
    const char *a1[] = {"--kubeconfig", fake.kubeconfig, "--secure-serving=false",
                        "--listen",     "0.0.0.0:0",     NULL};
    assert_int_equal(fair_test_run(fake.dir, FAIR_BIN_DIR "/fairshare-controller", a1, &out, &err),
                     2);
    assert_non_null(strstr(fair_buf_str(&err), "key http.secureServing"));
    /* Half a certificate: refused the same way. */
    const char *a2[] = {"--kubeconfig", fake.kubeconfig, "--tls-cert-file", "/x.crt", NULL};
    assert_int_equal(fair_test_run(fake.dir, FAIR_BIN_DIR "/fairshare-controller", a2, &out, &err),
                     2);
    assert_non_null(strstr(fair_buf_str(&err), "http.tls.keyFile"));
    /* A certificate file that cannot be read stops the start, naming it. */
    const char *a3[] = {"--kubeconfig",
                        fake.kubeconfig,
                        "--ledger",
                        "",
                        "--listen",
                        "127.0.0.1:0",
                        "--health-listen",
                        "127.0.0.1:0",
                        "--tls-cert-file",
                        "/nonexistent/tls.crt",
                        "--tls-key-file",
                        "/nonexistent/tls.key",
                        "--leader-elect=false",
                        NULL};
    assert_int_equal(fair_test_run(fake.dir, FAIR_BIN_DIR "/fairshare-controller", a3, &out, &err),
                     1);
    assert_non_null(strstr(fair_buf_str(&err), "http.tls.certFile"));
    assert_non_null(strstr(fair_buf_str(&err), "/nonexistent/tls.crt"));
    fair_buf_release(&out);
    fair_buf_release(&err);
    /* On loopback: plain HTTP, no token, and a warning in the log. */
    c.plain = true;
    start_ctl(&c, &fake, "optout");
    long code = 0;
    char *body = ctl_get_as(&c, "/metrics", NULL, &code);
    assert_int_equal(code, 200);
    assert_non_null(strstr(body, "fairshare_leader"));
    assert_null(strstr(body, "fairshare_http_auth_requests_total"));
    free(body);
    assert_true(log_has(&c, "http.secureServing is false"));
    long tr = -1;
    reviews(&fake, &tr, NULL);
    assert_int_equal(tr, 0);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(fair_fake_stop(&fake), 0);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_who_may_read_what, tc_teardown),
        cmocka_unit_test_teardown(test_cache, tc_teardown),
        cmocka_unit_test_teardown(test_slow_review, tc_teardown),
        cmocka_unit_test_teardown(test_unavailable, tc_teardown),
        cmocka_unit_test_teardown(test_plain_http_refused, tc_teardown),
        cmocka_unit_test_teardown(test_report_cli, tc_teardown),
        cmocka_unit_test_teardown(test_dashboard_proxy, proxy_teardown),
        cmocka_unit_test_teardown(test_kclient_extra_header, tc_teardown),
        cmocka_unit_test_teardown(test_dashboard_via_apiserver, tc_teardown),
        cmocka_unit_test_teardown(test_self_signed, tc_teardown),
        cmocka_unit_test_teardown(test_opt_out, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
