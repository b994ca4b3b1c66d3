/* The controller's GPU env admission webhook, end to end on the fake API
 * server (which stores a MutatingWebhookConfiguration but, unlike a real
 * one, never calls it: so every pod reaches the controller unmutated, as
 * when the webhook is down and failurePolicy Ignore lets pods in).
 *
 *  - serves_and_tells: the controller makes its CA and certificate, keeps
 *    them in the Secret, writes the caBundle; a client that trusts only
 *    the caBundle gets the patch from webhook.address; a fractional pod
 *    bound without the webhook's mark gets one GPUEnvNotInjected Warning
 *    Event (counted in fairshare_gpu_env_not_injected_total), a marked one
 *    and a whole-GPU pod get none; a restart serves the same certificate
 *    (the caBundle is unchanged); a Secret spoiled by hand is replaced
 *    (update) at the next start. The e2e suite shows the real API server
 *    calling it (tests/e2e/test_webhook.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

#include "base/buf.h"
#include "kube/config.h"

#define MWC_PATH "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/fairshare"
#define SECRET_PATH "/api/v1/namespaces/fairshare-system/secrets/fairshare-webhook-cert"

static int wport;

static void write_config(struct fair_fake *f, char *path, size_t n)
{
    config_write(path, n, f, "webhook",
                 "cycleInterval: 100ms\n"
                 "webhook:\n"
                 "  address: \"127.0.0.1:%d\"\n"
                 "  namespace: fairshare-system\n"
                 "  extraNames: \"127.0.0.1, localhost\"\n"
                 "  configurationName: fairshare\n"
                 "  certValidity: 24h\n",
                 wport);
}

/* The caBundle text (malloc'd, base64 as stored) or NULL. */
static char *ca_bundle(struct fair_fake *f)
{
    long code = 0;
    json_t *m = fair_fake_request_json(f, "GET", MWC_PATH, NULL, &code);
    const char *b = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(m, "webhooks"), 0), "clientConfig"),
        "caBundle"));
    char *out = b ? strdup(b) : NULL;
    json_decref(m);
    return out;
}

static size_t wsink(char *p, size_t s, size_t n, void *ud)
{
    struct fair_buf *b = ud;
    fair_buf_append(b, p, s * n);
    return s * n;
}

/* POSTs a review of a fractional pod to the controller's webhook,
 * trusting only the caBundle; returns the HTTP code, fills body. */
static long post_review(struct fair_fake *f, const char *bundle_b64, struct fair_buf *body)
{
    char *pem = NULL;
    size_t len = 0;
    assert_int_equal(fair_base64_decode(bundle_b64, strlen(bundle_b64), &pem, &len), 0);
    static const char review[] =
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
        "\"uid\":\"r1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
        "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
        "\"operation\":\"CREATE\",\"object\":{\"metadata\":{\"name\":\"p\",\"annotations\":{"
        "\"fairshare.dev/gpu-fraction\":\"0.25\"}},\"spec\":{\"schedulerName\":\"fairshare\","
        "\"containers\":[{\"name\":\"a\"}]}}}}";
    char url[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d/mutate-v1-pod", wport);
    CURL *h = curl_easy_init();
    struct curl_blob blob = {pem, len, CURL_BLOB_COPY};
    struct curl_slist *hs = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, review);
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, wsink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    long code = 0;
    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_OK)
        fprintf(stderr, "webhook call: %s\n", curl_easy_strerror(cc));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hs);
    curl_easy_cleanup(h);
    free(pem);
    (void)f;
    return code;
}

static void test_serves_and_tells(void **state)
{
    (void)state;
    struct fair_fake fake;
    struct ctl c = {0};
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    static const char *const ns[] = {"fairshare-system", "team-a", NULL};
    mk_namespaces(&fake, ns);
    wport = free_port();
    char mwc[1024];
    snprintf(
        mwc, sizeof mwc,
        "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"
        "\"MutatingWebhookConfiguration\",\"metadata\":{\"name\":\"fairshare\"},"
        "\"webhooks\":[{\"name\":\"gpu-env.fairshare.dev\",\"admissionReviewVersions\":[\"v1\"],"
        "\"sideEffects\":\"None\",\"failurePolicy\":\"Ignore\",\"timeoutSeconds\":5,"
        "\"clientConfig\":{\"url\":\"https://127.0.0.1:%d/mutate-v1-pod\"},"
        "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
        "\"resources\":[\"pods\"]}]}]}",
        wport);
    must_create(&fake, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", mwc);
    write_config(&fake, c.config, sizeof c.config);
    assert_int_equal(ctl_start(&c, &fake, "webhook"), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("controller not ready");
    }
    char *bundle = NULL;
    assert_true(WAIT_UNTIL((free(bundle), bundle = ca_bundle(&fake)) != NULL, WAIT_MS));

    /* The webhook answers over TLS that verifies against the caBundle. */
    struct fair_buf body;
    fair_buf_init(&body, 1 << 20);
    assert_true(
        WAIT_UNTIL((fair_buf_reset(&body), post_review(&fake, bundle, &body) == 200), WAIT_MS));
    json_t *ans = json_loads(fair_buf_str(&body), 0, NULL);
    assert_non_null(json_object_get(json_object_get(ans, "response"), "patch"));
    json_decref(ans);
    fair_buf_release(&body);

    /* Pods reach the controller unmutated: the one without the mark is
     * told, the marked one and the whole-GPU one are not. */
    mk_project(&fake, "team-a", "8", "[\"team-a\"]", "team-a-q");
    mk_queue(&fake, "team-a-q", "team-a", "8", 1);
    mk_pod_full(&fake, "team-a", "frac-plain", "team-a-q", NULL, "0.25", NULL, NULL, 0);
    mk_pod_full(&fake, "team-a", "frac-marked", "team-a-q", NULL, "0.25", NULL,
                ",\"fairshare.dev/gpu-env\":\"webhook\"", 0);
    mk_pod(&fake, "team-a", "whole", "team-a-q", "1");
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 3, WAIT_MS));
    assert_true(WAIT_UNTIL(count_events(&fake, "Scheduled", "team-a", NULL) >= 3, WAIT_MS));
    assert_true(
        WAIT_UNTIL(count_events(&fake, "GPUEnvNotInjected", "team-a", "frac-plain") == 1, WAIT_MS));
    char *msg = event_message(&fake, "GPUEnvNotInjected", "team-a", "frac-plain");
    assert_non_null(msg);
    assert_non_null(strstr(msg, "admission webhook did not see this pod"));
    assert_non_null(strstr(msg, "fairshare.dev/gpu-devices"));
    free(msg);
    assert_int_equal(count_events(&fake, "GPUEnvNotInjected", "team-a", "frac-marked"), 0);
    assert_int_equal(count_events(&fake, "GPUEnvNotInjected", "team-a", "whole"), 0);
    assert_true(ctl_metric(&c, "fairshare_gpu_env_not_injected_total") == 1);
    assert_true(ctl_metric(&c, "fairshare_webhook_reviews_total{outcome=\"patched\"}") >= 1);
    assert_true(ctl_metric(&c, "fairshare_webhook_cert_not_after_seconds") > 0);

    /* A restart serves the stored certificate: the caBundle stays. */
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(ctl_start(&c, &fake, "webhook2"), 0);
    assert_true(WAIT_UNTIL(ctl_ready(&c), WAIT_MS));
    fair_buf_init(&body, 1 << 20);
    assert_true(
        WAIT_UNTIL((fair_buf_reset(&body), post_review(&fake, bundle, &body) == 200), WAIT_MS));
    fair_buf_release(&body);
    assert_true(ctl_metric(&c, "fairshare_webhook_cert_renewals_total") == 0);
    char *again = ca_bundle(&fake);
    assert_string_equal(again, bundle);
    free(again);
    assert_int_equal(ctl_stop(&c), 0);

    /* A spoiled Secret is replaced at the next start: a new CA. */
    long code = 0;
    json_t *sec = fair_fake_request_json(&fake, "GET", SECRET_PATH, NULL, &code);
    assert_int_equal(code, 200);
    json_object_set_new(json_object_get(sec, "data"), "tls.crt", json_string("bm90IGEgY2VydA=="));
    char *text = json_dumps(sec, JSON_COMPACT);
    assert_int_equal(fair_fake_request(&fake, "PUT", SECRET_PATH, text, &code, NULL), 0);
    assert_int_equal(code, 200);
    free(text);
    json_decref(sec);
    assert_int_equal(ctl_start(&c, &fake, "webhook3"), 0);
    assert_true(WAIT_UNTIL(ctl_ready(&c), WAIT_MS));
    assert_true(WAIT_UNTIL((again = ca_bundle(&fake)) && strcmp(again, bundle) != 0
                               ? true
                               : (free(again), again = NULL, false),
                           WAIT_MS));
    free(again);
    assert_true(ctl_metric(&c, "fairshare_webhook_cert_renewals_total") == 1);
    free(bundle);
    stop_all(&fake, &c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_serves_and_tells, tc_teardown),
    };
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
