/* lib/httpd's HTTPS server with the TokenReview + SubjectAccessReview guard
 * (httpd/auth.h), in process, against the fake API server: the server's
 * loop runs on a thread of its own while the test's requests block, and
 * the guard's clock is a manual one, so that cache lifetimes are shown
 * without waiting for them.
 *
 *  - fake_reviews: the fake's TokenReview and SubjectAccessReview answer
 *    with kube-apiserver's shapes (201, status.authenticated and user,
 *    status.error, status.allowed; 422 and 405 for bad requests).
 *  - ttl: an allowed decision is reused until allow_ttl passes, a refused
 *    one until deny_ttl passes, then the reviews are sent again.
 *  - lru: at most cache_size decisions are kept; the least recently used
 *    goes first.
 *  - in_flight_cap: past max_in_flight tokens under review, a new token
 *    answers 503 at once without a review.
 *  - client_gone: a client that leaves while its review is held is
 *    cancelled; the review still completes and fills the cache.
 *  - headers: malformed Authorization headers and oversized tokens are 401
 *    without a review; the scheme is case-insensitive; a route without a
 *    permission is closed (403). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helper_fakekube.h"
#include "helper_https.h"
#include "helper_kclient.h"

#include "base/buf.h"
#include "base/clock.h"
#include "httpd/auth.h"
#include "httpd/cert.h"
#include "httpd/httpd.h"
#include "kube/client.h"

#define WAIT_MS 30000
#define FIN "finance-token-abcdef"
#define VIEW "viewer-token-abcdef"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#define WAIT_UNTIL(expr, ms)                                                                       \
    ({                                                                                             \
        long long deadline_ = now_ms() + (ms);                                                     \
        bool ok_ = false;                                                                          \
        for (;;) {                                                                                 \
            if (expr) {                                                                            \
                ok_ = true;                                                                        \
                break;                                                                             \
            }                                                                                      \
            if (now_ms() > deadline_)                                                              \
                break;                                                                             \
            nap(20);                                                                               \
        }                                                                                          \
        ok_;                                                                                       \
    })

static const struct fair_auth_perm perm_reports = {"get", "fairshare.dev", "reports", NULL,
                                                   "the test grants it to alice"};
static const struct fair_auth_perm perm_metrics = {"get", NULL, NULL, "/metrics", NULL};

/* The guard's clock: the loop thread reads it, the test moves it. */
static int64_t clock_ms = 1000000;
static int64_t read_clock(void *ctx)
{
    (void)ctx;
    return __atomic_load_n(&clock_ms, __ATOMIC_SEQ_CST);
}
static const struct fair_clock manual = {read_clock, read_clock, NULL};
static void advance(int64_t ms)
{
    __atomic_add_fetch(&clock_ms, ms, __ATOMIC_SEQ_CST);
}

static struct {
    struct fair_fake fake;
    struct event_base *base;
    struct fair_kclient *kc;
    struct fair_auth *auth;
    struct fair_httpd *srv;
    pthread_t loop;
    int port;
} S;

static int metrics_route(void *ctx, const char *query, struct fair_buf *body, const char **type,
                         int *status)
{
    (void)ctx;
    (void)query;
    *type = "text/plain";
    *status = 200;
    return fair_buf_appends(body, "metrics\n");
}

static void reports_route(void *ctx, struct fair_httpd_req *req, const char *query)
{
    (void)ctx;
    (void)query;
    fair_httpd_reply(req, 200, "text/plain", "reports\n", 8);
}

static int open_route(void *ctx, const char *query, struct fair_buf *body, const char **type,
                      int *status)
{
    (void)ctx;
    (void)query;
    *type = "text/plain";
    *status = 200;
    return fair_buf_appends(body, "open\n");
}

static void *run_loop(void *arg)
{
    (void)arg;
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* A server with the guard: cache of 2, 2 tokens under review at most, a
 * second's TTLs on the manual clock. */
static int setup(void **state)
{
    (void)state;
    evthread_use_pthreads();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    memset(&S, 0, sizeof S);
    struct fair_fake_opts o = {.nodes = 0};
    if (fair_fake_start(&S.fake, &o) != 0)
        return -1;
    static const char fin_rules[] =
        "[{\"verbs\":[\"get\"],\"apiGroups\":[\"fairshare.dev\"],\"resources\":[\"reports\"]}]";
    static const char view_rules[] = "[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/metrics\"]}]";
    if (fair_fake_add_user(&S.fake, FIN, "alice", "[\"finance\"]", fin_rules) ||
        fair_fake_add_user(&S.fake, VIEW, "viewer", NULL, view_rules))
        return -1;
    S.base = event_base_new();
    if (!S.base || fair_fake_kclient_new(&S.fake, S.base, &S.kc) != 0)
        return -1;
    struct fair_error err = {0};
    SSL_CTX *tls = NULL;
    char crt[400], key[400];
    snprintf(crt, sizeof crt, "%s/server.crt", S.fake.dir);
    snprintf(key, sizeof key, "%s/server.key", S.fake.dir);
    struct fair_auth_options ao = {.kc = S.kc,
                                   .namespace_ = "fairshare-system",
                                   .timeout_ms = 60000,
                                   .allow_ttl_ms = 1000,
                                   .deny_ttl_ms = 1000,
                                   .cache_size = 2,
                                   .max_in_flight = 2,
                                   .clock = &manual};
    if (fair_cert_load(crt, key, &tls, NULL, &err) || fair_auth_new(S.base, &ao, &S.auth, &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    struct fair_httpd_options ho = {.tls = tls};
    int rc = fair_httpd_new(S.base, "127.0.0.1", 0, &ho, &S.srv, &err);
    SSL_CTX_free(tls);
    if (rc || fair_httpd_route(S.srv, "GET", "/metrics", metrics_route, NULL) ||
        fair_httpd_route_async(S.srv, "GET", "/reports", reports_route, NULL) ||
        fair_httpd_route(S.srv, "GET", "/open", open_route, NULL) ||
        fair_httpd_route_guard(S.srv, "GET", "/metrics", &perm_metrics) ||
        fair_httpd_route_guard(S.srv, "GET", "/reports", &perm_reports))
        return -1;
    assert_int_equal(fair_httpd_route_guard(S.srv, "GET", "/nope", &perm_metrics), FAIR_ENOTFOUND);
    fair_httpd_set_guard(S.srv, fair_auth_guard, S.auth);
    S.port = fair_httpd_port(S.srv);
    return pthread_create(&S.loop, NULL, run_loop, NULL);
}

static void stop_loop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    fair_auth_free(S.auth); /* on the loop's thread, like everything of it */
    S.auth = NULL;
    fair_httpd_free(S.srv);
    S.srv = NULL;
    fair_kclient_free(S.kc);
    S.kc = NULL;
    event_base_loopexit(S.base, NULL);
}

static int teardown(void **state)
{
    (void)state;
    if (S.base) {
        event_base_once(S.base, -1, EV_TIMEOUT, stop_loop_cb, NULL, NULL);
        pthread_join(S.loop, NULL);
        event_base_loop(S.base, EVLOOP_NONBLOCK); /* TLS finalizers */
        event_base_free(S.base);
    }
    int rc = fair_fake_stop(&S.fake);
    fair_fake_release(&S.fake);
    curl_global_cleanup();
    return rc;
}

/* ---- requests ---- */

/* GET path with the header lines line1 and line2 (NULL: none), trusting
 * the fake API server's CA (it signed the server's certificate). Free the
 * answer with fair_https_resp_free(). */
static struct fair_https_resp get_lines(const char *path, const char *line1, const char *line2,
                                        long timeout_ms)
{
    char url[256];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", S.port, path);
    const char *headers[] = {line1 ? line1 : line2, line1 ? line2 : NULL, NULL};
    struct fair_https_req req = {
        .url = url, .headers = headers, .ca_file = S.fake.ca_path, .timeout_ms = timeout_ms};
    return fair_https_call(&req);
}

/* The status of GET path with the header line line1, the answer freed. */
static long get_code(const char *path, const char *line1)
{
    struct fair_https_resp r = get_lines(path, line1, NULL, 60000);
    long code = r.code;
    fair_https_resp_free(&r);
    return code;
}

/* GET path with the Authorization header auth (NULL: none). */
static struct fair_https_resp get_hdr(const char *path, const char *auth, long timeout_ms)
{
    char hdr[10000];
    if (auth)
        snprintf(hdr, sizeof hdr, "Authorization: %s", auth);
    return get_lines(path, auth ? hdr : NULL, NULL, timeout_ms);
}

static long get(const char *path, const char *token)
{
    char auth[9000];
    if (token)
        snprintf(auth, sizeof auth, "Bearer %s", token);
    struct fair_https_resp r = get_hdr(path, token ? auth : NULL, 60000);
    if (r.cc != CURLE_OK)
        fail_msg("GET %s: %s", path, curl_easy_strerror(r.cc));
    long code = r.code;
    fair_https_resp_free(&r);
    return code;
}

static long token_reviews(void)
{
    long tr = -1;
    assert_int_equal(fair_fake_review_counts(&S.fake, &tr, NULL), 0);
    return tr;
}

static struct fair_auth_stats auth_stats(void)
{
    struct fair_auth_stats st;
    fair_auth_stats(S.auth, &st); /* read while the loop idles */
    return st;
}

struct bg {
    pthread_t t;
    const char *path, *token;
    long timeout_ms;
    struct fair_https_resp r;
};

static void *bg_run(void *arg)
{
    struct bg *b = arg;
    char auth[300];
    snprintf(auth, sizeof auth, "Bearer %s", b->token);
    b->r = get_hdr(b->path, auth, b->timeout_ms);
    return NULL;
}

static void bg_start(struct bg *b, const char *path, const char *token, long timeout_ms)
{
    memset(b, 0, sizeof *b);
    b->path = path;
    b->token = token;
    b->timeout_ms = timeout_ms;
    assert_int_equal(pthread_create(&b->t, NULL, bg_run, b), 0);
}

/* ---- tests ---- */

static json_t *post_fake(const char *path, const char *body, long *code)
{
    return fair_fake_request_json(&S.fake, "POST", path, body, code);
}

static void test_fake_reviews(void **state)
{
    (void)state;
    long code = 0;
    static const char *tr = "/apis/authentication.k8s.io/v1/tokenreviews";
    static const char *sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    json_t *j = post_fake(tr,
                          "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
                          "\"spec\":{\"token\":\"" FIN "\"}}",
                          &code);
    assert_int_equal(code, 201);
    assert_string_equal(fair_fake_json_str(j, "kind"), "TokenReview");
    assert_true(json_is_true(json_object_get(json_object_get(j, "status"), "authenticated")));
    assert_string_equal(fair_fake_json_str(j, "status.user.username"), "alice");
    assert_non_null(fair_fake_json_str(j, "status.user.uid"));
    json_t *groups =
        json_object_get(json_object_get(json_object_get(j, "status"), "user"), "groups");
    assert_int_equal(json_array_size(groups), 2);
    assert_string_equal(json_string_value(json_array_get(groups, 1)), "system:authenticated");
    json_decref(j);
    j = post_fake(tr, "{\"kind\":\"TokenReview\",\"spec\":{\"token\":\"nope\"}}", &code);
    assert_int_equal(code, 201);
    assert_null(json_object_get(json_object_get(j, "status"), "authenticated"));
    assert_non_null(strstr(fair_fake_json_str(j, "status.error"), "invalid bearer token"));
    json_decref(j);
    /* Resource and non-resource checks against alice's rules. */
    j = post_fake(sar,
                  "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\","
                  "\"spec\":{\"user\":\"alice\",\"groups\":[\"finance\"],\"resourceAttributes\":"
                  "{\"namespace\":\"x\",\"verb\":\"get\",\"group\":\"fairshare.dev\","
                  "\"resource\":\"reports\"}}}",
                  &code);
    assert_int_equal(code, 201);
    assert_true(json_is_true(json_object_get(json_object_get(j, "status"), "allowed")));
    json_decref(j);
    j = post_fake(sar,
                  "{\"kind\":\"SubjectAccessReview\",\"spec\":{\"user\":\"alice\","
                  "\"nonResourceAttributes\":{\"verb\":\"get\",\"path\":\"/metrics\"}}}",
                  &code);
    assert_int_equal(code, 201);
    assert_true(json_is_false(json_object_get(json_object_get(j, "status"), "allowed")));
    json_decref(j);
    j = post_fake(sar,
                  "{\"kind\":\"SubjectAccessReview\",\"spec\":{\"groups\":[\"system:masters\"],"
                  "\"nonResourceAttributes\":{\"verb\":\"get\",\"path\":\"/anything\"}}}",
                  &code);
    assert_true(json_is_true(json_object_get(json_object_get(j, "status"), "allowed")));
    json_decref(j);
    /* The validation kube-apiserver does. */
    json_decref(post_fake(sar,
                          "{\"kind\":\"SubjectAccessReview\",\"spec\":{\"nonResourceAttributes\":"
                          "{\"verb\":\"get\",\"path\":\"/metrics\"}}}",
                          &code));
    assert_int_equal(code, 422);
    json_decref(
        post_fake(sar, "{\"kind\":\"SubjectAccessReview\",\"spec\":{\"user\":\"alice\"}}", &code));
    assert_int_equal(code, 422);
    json_decref(fair_fake_request_json(&S.fake, "GET", tr, NULL, &code));
    assert_int_equal(code, 405);
}

static void test_ttl(void **state)
{
    (void)state;
    long tr = token_reviews();
    assert_int_equal(get("/reports", FIN), 200);
    assert_int_equal(token_reviews(), tr + 1);
    assert_int_equal(get("/reports", FIN), 200);
    advance(999);
    assert_int_equal(get("/reports", FIN), 200);
    assert_int_equal(token_reviews(), tr + 1);
    advance(1);
    assert_int_equal(get("/reports", FIN), 200);
    assert_int_equal(token_reviews(), tr + 2);
    /* Refusals too. */
    assert_int_equal(get("/reports", "stranger"), 401);
    assert_int_equal(get("/reports", "stranger"), 401);
    assert_int_equal(token_reviews(), tr + 3);
    assert_int_equal(get("/metrics", FIN), 403);
    assert_int_equal(get("/metrics", FIN), 403);
    assert_int_equal(token_reviews(), tr + 4);
    advance(1000);
    assert_int_equal(get("/reports", "stranger"), 401);
    assert_int_equal(get("/metrics", FIN), 403);
    assert_int_equal(token_reviews(), tr + 6);
    advance(1000);
}

static void test_lru(void **state)
{
    (void)state;
    long tr = token_reviews();
    assert_int_equal(get("/reports", FIN), 200);  /* A */
    assert_int_equal(get("/metrics", VIEW), 200); /* B */
    assert_int_equal(get("/reports", FIN), 200);  /* A again: now B is the oldest */
    assert_int_equal(token_reviews(), tr + 2);
    assert_int_equal(get("/metrics", S.fake.token), 200); /* C: B goes */
    assert_int_equal(auth_stats().entries, 2);
    assert_int_equal(token_reviews(), tr + 3);
    assert_int_equal(get("/reports", FIN), 200); /* still cached */
    assert_int_equal(token_reviews(), tr + 3);
    assert_int_equal(get("/metrics", VIEW), 200); /* reviewed again */
    assert_int_equal(token_reviews(), tr + 4);
    assert_true(auth_stats().entries <= 2);
    advance(1000);
}

static void test_in_flight_cap(void **state)
{
    (void)state;
    long tr = token_reviews();
    assert_int_equal(fair_fake_hold_reviews(&S.fake, 1), 0);
    static struct bg b1, b2;
    bg_start(&b1, "/reports", "held-1", 60000);
    bg_start(&b2, "/reports", "held-2", 60000);
    if (!WAIT_UNTIL(token_reviews() == tr + 2, WAIT_MS))
        fail_msg("the two reviews did not reach the API server");
    /* A third token: 503 at once, no review. */
    struct fair_https_resp r = get_hdr("/reports", "Bearer held-3", 60000);
    assert_int_equal(r.code, 503);
    assert_non_null(strstr(r.body, "too many token reviews in flight"));
    fair_https_resp_free(&r);
    assert_int_equal(token_reviews(), tr + 2);
    /* A token already under review waits with it (or, arriving after the
     * release, finds its decision cached): no third review either way. */
    static struct bg b3;
    bg_start(&b3, "/reports", "held-1", 60000);
    assert_int_equal(fair_fake_hold_reviews(&S.fake, 0), 0);
    pthread_join(b1.t, NULL);
    pthread_join(b2.t, NULL);
    pthread_join(b3.t, NULL);
    assert_int_equal(b1.r.code, 401);
    assert_int_equal(b2.r.code, 401);
    assert_int_equal(b3.r.code, 401);
    fair_https_resp_free(&b1.r);
    fair_https_resp_free(&b2.r);
    fair_https_resp_free(&b3.r);
    assert_int_equal(token_reviews(), tr + 2);
    advance(1000);
}

static void test_client_gone(void **state)
{
    (void)state;
    struct fair_httpd_stats hs0, hs;
    fair_httpd_stats(S.srv, &hs0);
    long tr = token_reviews();
    assert_int_equal(fair_fake_hold_reviews(&S.fake, 1), 0);
    /* The client gives up while its review is held. */
    struct fair_https_resp r = get_hdr("/reports", "Bearer " FIN, 300);
    assert_int_equal(r.cc, CURLE_OPERATION_TIMEDOUT);
    fair_https_resp_free(&r);
    if (!WAIT_UNTIL((fair_httpd_stats(S.srv, &hs), hs.cancelled == hs0.cancelled + 1), WAIT_MS))
        fail_msg("the server did not notice the client leave");
    assert_int_equal(fair_fake_hold_reviews(&S.fake, 0), 0);
    if (!WAIT_UNTIL(auth_stats().in_flight == 0, WAIT_MS))
        fail_msg("the review never completed");
    /* Its answer was cached. */
    assert_int_equal(get("/reports", FIN), 200);
    assert_int_equal(token_reviews(), tr + 1);
    advance(1000);
}

static void test_headers(void **state)
{
    (void)state;
    long tr = token_reviews();
    static const char *const bad[] = {
        "Basic YWxpY2U6c2VjcmV0", "Bearer", "Bearer ", "Bearer a b", "Bearer\t", "Token " FIN};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct fair_https_resp r = get_hdr("/reports", bad[i], 60000);
        assert_int_equal(r.code, 401);
        assert_non_null(strstr(r.body, "Unauthorized"));
        fair_https_resp_free(&r);
    }
    static char big[FAIR_AUTH_MAX_TOKEN + 2];
    memset(big, 'a', sizeof big - 1);
    assert_int_equal(get("/reports", big), 401);
    assert_int_equal(token_reviews(), tr);
    struct fair_https_resp r = get_hdr("/reports", "bEaReR   " FIN "  ", 60000);
    assert_int_equal(r.code, 200);
    fair_https_resp_free(&r);
    /* A route nobody gave a permission to is closed, even to the admin. */
    r = get_hdr("/open", "Bearer admin-token-irrelevant", 60000);
    assert_int_equal(r.code, 403);
    assert_non_null(strstr(r.body, "no permission is defined"));
    fair_https_resp_free(&r);
    advance(1000);
}

/* Through the API server's service proxy the token comes in
 * X-Fairshare-Authorization: the same syntax, size limit, TokenReview and
 * SubjectAccessReview as Authorization, which wins when both are sent. */
static void test_alt_header(void **state)
{
    (void)state;
    long tr = token_reviews();
    static const char *const bad[] = {"X-Fairshare-Authorization: Basic YWxpY2U6c2VjcmV0",
                                      "X-Fairshare-Authorization: Bearer a b",
                                      "X-Fairshare-Authorization: " FIN};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct fair_https_resp r = get_lines("/reports", bad[i], NULL, 60000);
        assert_int_equal(r.code, 401);
        assert_non_null(strstr(r.body, "malformed X-Fairshare-Authorization"));
        fair_https_resp_free(&r);
    }
    static char big[FAIR_AUTH_MAX_TOKEN + 64];
    int n = snprintf(big, sizeof big, "X-Fairshare-Authorization: Bearer ");
    memset(big + n, 'a', FAIR_AUTH_MAX_TOKEN + 1);
    assert_int_equal(get_code("/reports", big), 401);
    assert_int_equal(token_reviews(), tr);
    /* No header at all: the message names both ways. */
    struct fair_https_resp r = get_lines("/reports", NULL, NULL, 60000);
    assert_int_equal(r.code, 401);
    assert_non_null(strstr(r.body, "X-Fairshare-Authorization"));
    fair_https_resp_free(&r);
    /* finance may read /reports, not /metrics: the SAR still decides. */
    assert_int_equal(get_code("/reports", "X-Fairshare-Authorization: Bearer " FIN), 200);
    assert_int_equal(get_code("/metrics", "x-fairshare-authorization: bearer " FIN), 403);
    /* A token the API server does not know is refused. */
    assert_int_equal(get_code("/reports", "X-Fairshare-Authorization: Bearer no-such-token-xyz"),
                     401);
    /* Authorization wins: a malformed one is not rescued by the other. */
    r = get_lines("/reports", "Authorization: Basic YWxpY2U6c2VjcmV0",
                  "X-Fairshare-Authorization: Bearer " FIN, 60000);
    assert_int_equal(r.code, 401);
    assert_non_null(strstr(r.body, "malformed Authorization"));
    fair_https_resp_free(&r);
    advance(1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_reviews), cmocka_unit_test(test_ttl),
        cmocka_unit_test(test_lru),          cmocka_unit_test(test_in_flight_cap),
        cmocka_unit_test(test_client_gone),  cmocka_unit_test(test_headers),
        cmocka_unit_test(test_alt_header),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
