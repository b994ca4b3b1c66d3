/* The GPU env admission webhook (lib/httpd/webhook.h) served over real TLS
 * with its certificate managed in a Secret (lib/ctl/webhookcert.h), in
 * process, against the fake API server. The server's loop runs on its own
 * thread; the certificate manager's clock is a manual one, so that a
 * renewal is shown without waiting.
 *
 *  - mutate_over_tls: the manager makes the CA and the certificate, stores
 *    them in a kubernetes.io/tls Secret and writes the CA into the
 *    MutatingWebhookConfiguration's caBundle; a libcurl client that trusts
 *    only that caBundle gets the JSONPatch for a fractional pod, nothing
 *    for another pod; without the CA the handshake is refused, plain HTTP
 *    gets no answer; a wrong method, content type, a malformed review and
 *    an oversized body get 405, 415, 400 (an AdmissionReview) and 413.
 *  - rotation: past two thirds of the validity, a check renews both, the
 *    caBundle holds the new and the previous CA, the server presents the
 *    new certificate (a client with only the old CA fails, one with the
 *    bundle succeeds); a second manager on the same Secret (another
 *    replica, or a restart) serves it without making a new one;
 *    a caBundle reset by hand is written again. */
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
#include "ctl/webhookcert.h"
#include "httpd/cert.h"
#include "httpd/httpd.h"
#include "httpd/webhook.h"
#include "kube/client.h"
#include "kube/config.h"

#define WAIT_MS 30000
#define NS "fairshare-system"
#define SECRET "fairshare-webhook-cert"
#define MWC "fairshare"
#define VALIDITY_MS (180 * 1000)

static long long mono_now(void)
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

/* The manager's clock: the loop thread reads it, the test moves it. It
 * starts at the real time, so that the certificates verify for curl. */
static int64_t clock_ms;
static int64_t read_clock(void *ctx)
{
    (void)ctx;
    return __atomic_load_n(&clock_ms, __ATOMIC_SEQ_CST);
}
static const struct fair_clock manual = {read_clock, read_clock, NULL};

static struct {
    struct fair_fake fake;
    struct event_base *base;
    struct fair_kclient *kc;
    struct fair_httpd *srv;
    struct fair_webhook *wh;
    struct fair_ctl_webhookcert *cert, *cert2;
    pthread_t loop;
    int port;
    char dir[256];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
} S;

static void on_cert(void *ctx, SSL_CTX *tls)
{
    (void)ctx;
    fair_httpd_set_tls(S.srv, tls);
}

static void *run_loop(void *arg)
{
    (void)arg;
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Runs fn on the loop thread and waits for it. */
static void (*on_loop_fn)(void *);
static void *on_loop_arg;
static void on_loop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    on_loop_fn(on_loop_arg);
    pthread_mutex_lock(&S.mu);
    S.done = true;
    pthread_cond_signal(&S.cv);
    pthread_mutex_unlock(&S.mu);
}
static void on_loop(void (*fn)(void *), void *arg)
{
    on_loop_fn = fn;
    on_loop_arg = arg;
    S.done = false;
    assert_int_equal(event_base_once(S.base, -1, EV_TIMEOUT, on_loop_cb, NULL, NULL), 0);
    pthread_mutex_lock(&S.mu);
    while (!S.done)
        pthread_cond_wait(&S.cv, &S.mu);
    pthread_mutex_unlock(&S.mu);
}

struct stats_req {
    struct fair_ctl_webhookcert *w;
    struct fair_ctl_webhookcert_stats st;
};
static void stats_fn(void *arg)
{
    struct stats_req *r = arg;
    fair_ctl_webhookcert_stats(r->w, &r->st);
}
static struct fair_ctl_webhookcert_stats stats_of(struct fair_ctl_webhookcert *w)
{
    struct stats_req r = {.w = w};
    on_loop(stats_fn, &r);
    return r.st;
}
static void check_fn(void *arg)
{
    fair_ctl_webhookcert_check(arg);
}

/* Waits until w's checks passed n (each check ends with checks++). */
static struct fair_ctl_webhookcert_stats wait_checks(struct fair_ctl_webhookcert *w, uint64_t n)
{
    long long deadline = mono_now() + WAIT_MS;
    struct fair_ctl_webhookcert_stats st;
    for (;;) {
        st = stats_of(w);
        if (st.checks >= n || mono_now() > deadline)
            break;
        nap(20);
    }
    assert_true(st.checks >= n);
    return st;
}

struct new_req {
    struct fair_ctl_webhookcert **out;
    int rc;
};
static void new_fn(void *arg)
{
    struct new_req *r = arg;
    static const char *const names[] = {"fairshare-webhook.fairshare-system.svc", "127.0.0.1"};
    struct fair_ctl_webhookcert_options o = {.kc = S.kc,
                                             .namespace_ = NS,
                                             .secret_name = SECRET,
                                             .config_name = MWC,
                                             .names = names,
                                             .n_names = 2,
                                             .validity_ms = VALIDITY_MS,
                                             .check_interval_ms = 3600 * 1000,
                                             .clock = &manual,
                                             .on_cert = on_cert};
    struct fair_error err = {0};
    r->rc = fair_ctl_webhookcert_new(S.base, &o, r->out, &err);
    if (r->rc)
        fprintf(stderr, "webhookcert: %s\n", err.msg);
}

static void mwc_create(void)
{
    char body[1024];
    snprintf(
        body, sizeof body,
        "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"
        "\"MutatingWebhookConfiguration\",\"metadata\":{\"name\":\"" MWC "\"},"
        "\"webhooks\":[{\"name\":\"gpu-env.fairshare.dev\",\"admissionReviewVersions\":[\"v1\"],"
        "\"sideEffects\":\"None\",\"failurePolicy\":\"Ignore\",\"timeoutSeconds\":5,"
        "\"clientConfig\":{\"url\":\"https://127.0.0.1:%d/mutate-v1-pod\"},"
        "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
        "\"resources\":[\"pods\"]}]}]}",
        S.port);
    long code = 0;
    assert_int_equal(fair_fake_request(&S.fake, "POST",
                                       "/apis/admissionregistration.k8s.io/v1/"
                                       "mutatingwebhookconfigurations",
                                       body, &code, NULL),
                     0);
    assert_int_equal(code, 201);
}

static int setup(void **state)
{
    (void)state;
    evthread_use_pthreads();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    memset(&S, 0, sizeof S);
    pthread_mutex_init(&S.mu, NULL);
    pthread_cond_init(&S.cv, NULL);
    clock_ms = (int64_t)time(NULL) * 1000;
    struct fair_fake_opts o = {.nodes = 0};
    if (fair_fake_start(&S.fake, &o) != 0 || fair_fake_create_namespace(&S.fake, NS))
        return -1;
    snprintf(S.dir, sizeof S.dir, "%s", S.fake.dir);
    S.base = event_base_new();
    if (!S.base || fair_fake_kclient_new(&S.fake, S.base, &S.kc) != 0)
        return -1;
    struct fair_error err = {0};
    SSL_CTX *tls = NULL;
    static const char *const names[] = {"127.0.0.1"};
    if (fair_cert_self_signed(names, 1, &tls, NULL, &err))
        return -1;
    struct fair_httpd_options ho = {.tls = tls};
    int rc = fair_httpd_new(S.base, "127.0.0.1", 0, &ho, &S.srv, &err);
    SSL_CTX_free(tls);
    struct fair_webhook_options wo = {.scheduler_name = "fairshare"};
    if (rc || fair_webhook_register(S.srv, "/mutate-v1-pod", &wo, &S.wh))
        return -1;
    S.port = fair_httpd_port(S.srv);
    return pthread_create(&S.loop, NULL, run_loop, NULL);
}

static void stop_loop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    fair_ctl_webhookcert_free(S.cert);
    fair_ctl_webhookcert_free(S.cert2);
    fair_httpd_free(S.srv);
    fair_webhook_free(S.wh);
    fair_kclient_free(S.kc);
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

/* ---- the client ---- */

/* method on the webhook's path, trusting only ca_file (NULL: no CA at
 * all); scheme "https" or "http". */
static struct fair_https_resp call(const char *scheme, const char *method, const char *ctype,
                                   const char *body, size_t len, const char *ca_file)
{
    char url[256], hdr[128];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d/mutate-v1-pod", scheme, S.port);
    if (ctype)
        snprintf(hdr, sizeof hdr, "Content-Type: %s", ctype);
    const char *headers[] = {"Expect:", ctype ? hdr : NULL, NULL};
    struct fair_https_req req = {.method = method,
                                 .url = url,
                                 .headers = headers,
                                 .body = body,
                                 .body_len = len,
                                 .ca_file = ca_file,
                                 .timeout_ms = 10000};
    return fair_https_call(&req);
}

/* The MutatingWebhookConfiguration's caBundle, decoded, written to path. */
static int bundle_to_file(const char *path, int *ncerts)
{
    long code = 0;
    json_t *m = fair_fake_request_json(&S.fake, "GET",
                                       "/apis/admissionregistration.k8s.io/v1/"
                                       "mutatingwebhookconfigurations/" MWC,
                                       NULL, &code);
    assert_int_equal(code, 200);
    const char *b64 = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(m, "webhooks"), 0), "clientConfig"),
        "caBundle"));
    assert_non_null(b64);
    char *pem = NULL;
    size_t len = 0;
    assert_int_equal(fair_base64_decode(b64, strlen(b64), &pem, &len), 0);
    *ncerts = 0;
    for (const char *p = pem; (p = strstr(p, "BEGIN CERTIFICATE")); p++)
        (*ncerts)++;
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite(pem, 1, len, f);
    fclose(f);
    free(pem);
    json_decref(m);
    return 0;
}

#define REVIEW(annotations)                                                                        \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"           \
    "\"uid\":\"0b7e\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"              \
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"                      \
    "\"operation\":\"CREATE\",\"object\":{\"metadata\":{\"name\":\"p\",\"annotations\":"           \
    "{" annotations                                                                                \
    "}},\"spec\":{\"schedulerName\":\"fairshare\",\"containers\":[{\"name\":\"a\"}]}}}}"

static json_t *response_of(const struct fair_https_resp *r)
{
    json_t *j = json_loadb(r->body, r->len, 0, NULL);
    assert_non_null(j);
    return j;
}

static void test_mutate_over_tls(void **state)
{
    (void)state;
    mwc_create();
    struct new_req nr = {.out = &S.cert};
    on_loop(new_fn, &nr);
    assert_int_equal(nr.rc, 0);
    struct fair_ctl_webhookcert_stats st = wait_checks(S.cert, 1);
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.issued, 1);
    assert_int_equal(st.secret_writes, 1);
    assert_int_equal(st.bundle_writes, 1);
    assert_int_equal(st.loaded, 1);

    /* The Secret: a kubernetes.io/tls one with the CA beside the pair. */
    long code = 0;
    json_t *sec = fair_fake_request_json(&S.fake, "GET",
                                         "/api/v1/namespaces/" NS "/secrets/" SECRET, NULL, &code);
    assert_int_equal(code, 200);
    assert_string_equal(fair_fake_json_str(sec, "type"), "kubernetes.io/tls");
    for (const char *k = "ca.crt\0ca.key\0tls.crt\0tls.key\0"; *k; k += strlen(k) + 1)
        assert_non_null(json_string_value(json_object_get(json_object_get(sec, "data"), k)));
    json_decref(sec);

    char ca[400];
    int n = 0;
    snprintf(ca, sizeof ca, "%s/webhook-ca.pem", S.dir);
    bundle_to_file(ca, &n);
    assert_int_equal(n, 1);

    /* A fractional pod: the patch, over TLS verified against the bundle. */
    const char *rv = REVIEW("\"fairshare.dev/gpu-fraction\":\"0.5\"");
    struct fair_https_resp r = call("https", "POST", "application/json", rv, strlen(rv), ca);
    assert_int_equal(r.cc, CURLE_OK);
    assert_int_equal(r.code, 200);
    json_t *j = response_of(&r);
    const json_t *resp = json_object_get(j, "response");
    assert_string_equal(json_string_value(json_object_get(resp, "uid")), "0b7e");
    assert_true(json_is_true(json_object_get(resp, "allowed")));
    const char *patch = json_string_value(json_object_get(resp, "patch"));
    assert_non_null(patch);
    char *raw = NULL;
    size_t rl = 0;
    assert_int_equal(fair_base64_decode(patch, strlen(patch), &raw, &rl), 0);
    assert_non_null(strstr(raw, "\"path\":\"/spec/containers/0/env\""));
    assert_non_null(strstr(raw, "NVIDIA_VISIBLE_DEVICES"));
    assert_non_null(strstr(raw, "metadata.annotations['fairshare.dev/gpu-devices']"));
    free(raw);
    json_decref(j);
    fair_https_resp_free(&r);

    /* Not a fraction: allowed, no patch. */
    rv = REVIEW("\"x\":\"y\"");
    r = call("https", "POST", "application/json", rv, strlen(rv), ca);
    assert_int_equal(r.code, 200);
    j = response_of(&r);
    assert_true(json_is_true(json_object_get(json_object_get(j, "response"), "allowed")));
    assert_null(json_object_get(json_object_get(j, "response"), "patch"));
    json_decref(j);
    fair_https_resp_free(&r);

    /* Without the CA, the certificate is not trusted; plain HTTP gets no
     * HTTP answer. */
    r = call("https", "POST", "application/json", rv, strlen(rv), NULL);
    assert_true(r.cc == CURLE_PEER_FAILED_VERIFICATION || r.cc == CURLE_SSL_CACERT_BADFILE ||
                r.cc == CURLE_SSL_CONNECT_ERROR);
    fair_https_resp_free(&r);
    r = call("http", "POST", "application/json", rv, strlen(rv), NULL);
    assert_true(r.cc != CURLE_OK || r.code == 0);
    fair_https_resp_free(&r);

    /* Refused: a GET (405), another content type (415), a malformed
     * review (400, still an AdmissionReview), a body over 1 MiB (413). */
    r = call("https", "GET", NULL, NULL, 0, ca);
    assert_int_equal(r.code, 405);
    fair_https_resp_free(&r);
    r = call("https", "POST", "text/plain", rv, strlen(rv), ca);
    assert_int_equal(r.code, 415);
    fair_https_resp_free(&r);
    r = call("https", "POST", "application/json", "{\"request\":", 11, ca);
    assert_int_equal(r.code, 400);
    j = response_of(&r);
    assert_string_equal(fair_fake_json_str(j, "kind"), "AdmissionReview");
    assert_true(json_is_false(json_object_get(json_object_get(j, "response"), "allowed")));
    json_decref(j);
    fair_https_resp_free(&r);
    size_t big = (2u << 20);
    char *huge = malloc(big);
    memset(huge, ' ', big);
    huge[0] = '{';
    huge[big - 1] = '}';
    r = call("https", "POST", "application/json", huge, big, ca);
    assert_true(r.code == 413 || r.cc != CURLE_OK);
    free(huge);
    fair_https_resp_free(&r);

    struct fair_webhook_stats ws;
    fair_webhook_stats(S.wh, &ws);
    assert_int_equal(ws.reviews[FAIR_WEBHOOK_PATCHED], 1);
    assert_int_equal(ws.reviews[FAIR_WEBHOOK_IGNORED], 1);
    assert_int_equal(ws.reviews[FAIR_WEBHOOK_MALFORMED], 2); /* 415 and 400 */
}

static void test_rotation(void **state)
{
    (void)state;
    char old_ca[400], bundle[400];
    int n = 0;
    snprintf(old_ca, sizeof old_ca, "%s/webhook-ca-old.pem", S.dir);
    snprintf(bundle, sizeof bundle, "%s/webhook-ca-new.pem", S.dir);
    bundle_to_file(old_ca, &n);
    assert_int_equal(n, 1);
    struct fair_ctl_webhookcert_stats st0 = stats_of(S.cert);
    assert_true(st0.renew_at_s > 0);

    /* Before the renewal time: a check changes nothing. */
    __atomic_store_n(&clock_ms, (st0.renew_at_s - 5) * 1000, __ATOMIC_SEQ_CST);
    on_loop(check_fn, S.cert);
    struct fair_ctl_webhookcert_stats st = wait_checks(S.cert, st0.checks + 1);
    assert_int_equal(st.issued, 1);
    assert_int_equal(st.bundle_writes, 1);

    /* Past it: renewed, both CAs in the bundle. */
    __atomic_store_n(&clock_ms, (st0.renew_at_s + 1) * 1000, __ATOMIC_SEQ_CST);
    on_loop(check_fn, S.cert);
    st = wait_checks(S.cert, st0.checks + 2);
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.issued, 2);
    assert_int_equal(st.secret_writes, 2);
    assert_int_equal(st.bundle_writes, 2);
    assert_int_equal(st.loaded, 2);
    assert_true(st.renew_at_s > st0.renew_at_s);
    bundle_to_file(bundle, &n);
    assert_int_equal(n, 2);
    long code = 0;
    json_t *sec = fair_fake_request_json(&S.fake, "GET",
                                         "/api/v1/namespaces/" NS "/secrets/" SECRET, NULL, &code);
    assert_non_null(json_object_get(json_object_get(sec, "data"), "ca-prev.crt"));
    json_decref(sec);

    /* The server presents the new certificate. */
    const char *rv = REVIEW("\"fairshare.dev/gpu-fraction\":\"0.5\"");
    struct fair_https_resp r = call("https", "POST", "application/json", rv, strlen(rv), old_ca);
    assert_int_not_equal(r.cc, CURLE_OK);
    fair_https_resp_free(&r);
    r = call("https", "POST", "application/json", rv, strlen(rv), bundle);
    assert_int_equal(r.cc, CURLE_OK);
    assert_int_equal(r.code, 200);
    fair_https_resp_free(&r);

    /* Another replica (or a restart) serves the stored one, makes none. */
    struct new_req nr = {.out = &S.cert2};
    on_loop(new_fn, &nr);
    assert_int_equal(nr.rc, 0);
    struct fair_ctl_webhookcert_stats s2 = wait_checks(S.cert2, 1);
    assert_int_equal(s2.errors, 0);
    assert_int_equal(s2.issued, 0);
    assert_int_equal(s2.secret_writes, 0);
    assert_int_equal(s2.bundle_writes, 0);
    assert_int_equal(s2.loaded, 1);
    assert_int_equal(s2.not_after_s, st.not_after_s);

    /* A caBundle emptied by hand (a re-applied manifest) is written again. */
    json_t *m = fair_fake_request_json(&S.fake, "GET",
                                       "/apis/admissionregistration.k8s.io/v1/"
                                       "mutatingwebhookconfigurations/" MWC,
                                       NULL, &code);
    json_object_del(
        json_object_get(json_array_get(json_object_get(m, "webhooks"), 0), "clientConfig"),
        "caBundle");
    char *text = json_dumps(m, JSON_COMPACT);
    assert_int_equal(fair_fake_request(&S.fake, "PUT",
                                       "/apis/admissionregistration.k8s.io/v1/"
                                       "mutatingwebhookconfigurations/" MWC,
                                       text, &code, NULL),
                     0);
    assert_int_equal(code, 200);
    free(text);
    json_decref(m);
    on_loop(check_fn, S.cert2);
    s2 = wait_checks(S.cert2, 2);
    assert_int_equal(s2.bundle_writes, 1);
    assert_int_equal(s2.issued, 0);
    bundle_to_file(bundle, &n);
    assert_int_equal(n, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutate_over_tls),
        cmocka_unit_test(test_rotation),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
