/* The webhook certificate's manager (see webhookcert.h): a Secret holds
 * the CA and the serving certificate, the MutatingWebhookConfiguration
 * holds the CA bundle, and a timer renews both. */
#include "ctl/webhookcert.h"

#include <event2/event.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "httpd/ca.h"
#include "httpd/cert.h"
#include "kube/client.h"
#include "kube/config.h"

#define COMP "webhook"
#define RETRY_MS 10000
#define MAX_RESTARTS 2

static const struct fair_kres kres_secrets = {"", "v1", "secrets", true};
static const struct fair_kres kres_mwc = {"admissionregistration.k8s.io", "v1",
                                          "mutatingwebhookconfigurations", false};

struct fair_ctl_webhookcert {
    struct event_base *base;
    struct fair_kclient *kc;
    char *ns, *secret, *config;
    char *names[FAIR_WEBHOOKCERT_MAX_NAMES];
    size_t n_names;
    int64_t validity_ms, interval_ms;
    const struct fair_clock *clock;
    void (*on_cert)(void *ctx, SSL_CTX *tls);
    void *ctx;
    struct event *timer;
    struct fair_kreq *req; /* the step in flight */
    bool busy;
    bool failed;                 /* this check failed somewhere */
    int restarts;                /* conflicts in this check */
    struct fair_ca_pems pending; /* issued, being written */
    char *pending_prev;          /* the CA it replaces, for the bundle */
    char *served;                /* the serving certificate handed to on_cert */
    char *bundle;                /* PEM: ca.crt, then ca-prev.crt while valid */
    bool config_missing_told;
    struct fair_ctl_webhookcert_stats st;
};

static void get_secret(struct fair_ctl_webhookcert *w);
static void get_config(struct fair_ctl_webhookcert *w);

static int64_t now_s(const struct fair_ctl_webhookcert *w)
{
    return fair_now_ms(w->clock) / 1000;
}

static void finish(struct fair_ctl_webhookcert *w)
{
    w->busy = false;
    w->req = NULL;
    w->st.checks++;
    int64_t delay = w->interval_ms;
    if (w->failed) {
        w->st.errors++;
        if (delay > RETRY_MS)
            delay = RETRY_MS;
    } else if (w->st.renew_at_s) {
        int64_t due = (w->st.renew_at_s - now_s(w)) * 1000;
        if (due < 1000)
            due = 1000;
        if (due < delay)
            delay = due;
    }
    struct timeval tv = {(time_t)(delay / 1000), (suseconds_t)(delay % 1000) * 1000};
    evtimer_add(w->timer, &tv);
}

static void fail(struct fair_ctl_webhookcert *w, const char *what, const struct fair_kresponse *r)
{
    FAIR_WARN(COMP,
              "msg=\"webhook certificate: %s failed; retrying in 10s\" status=%ld error=\"%s\"",
              what, r ? r->status : 0L, r ? r->err.msg : "");
    w->failed = true;
    finish(w);
}

static char *b64(const char *s)
{
    size_t n = strlen(s);
    char *out = fair_malloc(4 * ((n + 2) / 3) + 1);
    if (out)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    return out;
}

/* data[key] decoded, new, or NULL. */
static char *data_get(const json_t *data, const char *key)
{
    const char *v = json_string_value(json_object_get(data, key));
    char *out = NULL;
    size_t len = 0;
    if (!v || fair_base64_decode(v, strlen(v), &out, &len))
        return NULL;
    if (strlen(out) != len) { /* a NUL inside: not PEM */
        fair_free(out);
        return NULL;
    }
    return out;
}

static bool ca_valid_now(const struct fair_ctl_webhookcert *w, const char *pem)
{
    int64_t nb, na;
    return pem && fair_ca_validity(pem, strlen(pem), &nb, &na, NULL) == 0 && na > now_s(w);
}

/* Serves pems (when they are not what is served) and sets the bundle. */
static int adopt(struct fair_ctl_webhookcert *w, const struct fair_ca_pems *p, const char *prev)
{
    struct fair_buf b;
    fair_buf_init(&b, 0);
    int rc = fair_buf_appends(&b, p->ca_cert);
    if (!rc && ca_valid_now(w, prev) && strcmp(prev, p->ca_cert) != 0)
        rc = fair_buf_appends(&b, prev);
    if (rc) {
        fair_buf_release(&b);
        return rc;
    }
    fair_free(w->bundle);
    w->bundle = fair_buf_detach(&b);
    int64_t nb = 0, na = 0;
    fair_ca_validity(p->cert, strlen(p->cert), &nb, &na, NULL);
    w->st.not_after_s = na;
    w->st.renew_at_s = fair_ca_renew_at(nb, na);
    if (w->served && strcmp(w->served, p->cert) == 0)
        return 0;
    SSL_CTX *ctx = NULL;
    struct fair_cert_info ci;
    struct fair_error err = {0};
    rc = fair_cert_load_pem("webhook certificate", p->cert, strlen(p->cert), p->key, strlen(p->key),
                            &ctx, &ci, &err);
    if (rc) {
        FAIR_WARN(COMP, "msg=\"webhook certificate not loaded\" error=\"%s\"", err.msg);
        return rc;
    }
    char *dup = fair_strdup(p->cert);
    if (!dup) {
        SSL_CTX_free(ctx);
        return FAIR_ENOMEM;
    }
    fair_free(w->served);
    w->served = dup;
    if (w->on_cert)
        w->on_cert(w->ctx, ctx);
    SSL_CTX_free(ctx);
    w->st.loaded++;
    FAIR_INFO(COMP, "msg=\"serving the webhook certificate\" secret=%s/%s sha256=%s not_after=%s",
              w->ns, w->secret, ci.sha256, ci.not_after);
    return 0;
}

/* The Secret's document for pems (with resourceVersion rv when updating). */
static char *secret_doc(const struct fair_ctl_webhookcert *w, const struct fair_ca_pems *p,
                        const char *prev, const char *rv)
{
    char *k[5] = {b64(p->ca_cert), b64(p->ca_key), b64(p->cert), b64(p->key),
                  prev ? b64(prev) : NULL};
    char *text = NULL;
    json_t *doc = NULL;
    if (k[0] && k[1] && k[2] && k[3] && (!prev || k[4])) {
        doc = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:s,s:{s:s,s:s,s:s,s:s}}", "apiVersion",
                        "v1", "kind", "Secret", "metadata", "name", w->secret, "namespace", w->ns,
                        "labels", "app.kubernetes.io/name", "fairshare",
                        "app.kubernetes.io/component", "webhook-cert", "type", "kubernetes.io/tls",
                        "data", "ca.crt", k[0], "ca.key", k[1], "tls.crt", k[2], "tls.key", k[3]);
        if (doc && prev)
            json_object_set_new(json_object_get(doc, "data"), "ca-prev.crt", json_string(k[4]));
        if (doc && rv)
            json_object_set_new(json_object_get(doc, "metadata"), "resourceVersion",
                                json_string(rv));
        text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    }
    json_decref(doc);
    for (int i = 0; i < 5; i++)
        if (k[i]) {
            OPENSSL_cleanse(k[i], strlen(k[i]));
            fair_free(k[i]);
        }
    return text;
}

static void on_secret_written(const struct fair_kresponse *r, void *arg)
{
    struct fair_ctl_webhookcert *w = arg;
    w->req = NULL;
    if (r->rc == FAIR_ECONFLICT && w->restarts++ < MAX_RESTARTS) {
        /* another replica wrote it first: use theirs */
        fair_ca_pems_release(&w->pending);
        fair_free(w->pending_prev);
        w->pending_prev = NULL;
        get_secret(w);
        return;
    }
    if (r->rc) {
        fair_ca_pems_release(&w->pending);
        fair_free(w->pending_prev);
        w->pending_prev = NULL;
        fail(w, "writing the Secret", r);
        return;
    }
    w->st.secret_writes++;
    FAIR_INFO(COMP, "msg=\"wrote a new webhook CA and certificate\" secret=%s/%s", w->ns,
              w->secret);
    int rc = adopt(w, &w->pending, w->pending_prev);
    fair_ca_pems_release(&w->pending);
    fair_free(w->pending_prev);
    w->pending_prev = NULL;
    if (rc) {
        fail(w, "loading the new certificate", NULL);
        return;
    }
    get_config(w);
}

/* Issues a new CA and certificate and writes them (rv: update, else create). */
static void renew(struct fair_ctl_webhookcert *w, const char *prev, const char *rv)
{
    struct fair_error err = {0};
    char path[512];
    struct fair_buf p;
    fair_buf_init(&p, 0);
    int rc = fair_ca_issue((const char *const *)w->names, w->n_names, now_s(w),
                           w->validity_ms / 1000, &w->pending, &err);
    if (rc) {
        FAIR_ERROR(COMP, "msg=\"cannot make the webhook certificate\" error=\"%s\"", err.msg);
        fail(w, "issuing", NULL);
        return;
    }
    w->st.issued++;
    w->pending_prev = prev && ca_valid_now(w, prev) ? fair_strdup(prev) : NULL;
    char *doc = secret_doc(w, &w->pending, w->pending_prev, rv);
    rc =
        doc ? fair_kpath(&p, &kres_secrets, w->ns, rv ? w->secret : NULL, NULL, &err) : FAIR_ENOMEM;
    if (!rc) {
        snprintf(path, sizeof path, "%s", fair_buf_str(&p));
        rc = fair_kclient_request(w->kc, rv ? "PUT" : "POST", path, NULL, doc, strlen(doc), 0,
                                  on_secret_written, w, &w->req, &err);
    }
    if (doc) {
        OPENSSL_cleanse(doc, strlen(doc));
        free(doc);
    }
    fair_buf_release(&p);
    if (rc) {
        fair_ca_pems_release(&w->pending);
        fair_free(w->pending_prev);
        w->pending_prev = NULL;
        fail(w, "sending the Secret", NULL);
    }
}

static void on_secret(const struct fair_kresponse *r, void *arg)
{
    struct fair_ctl_webhookcert *w = arg;
    w->req = NULL;
    if (r->rc == FAIR_ENOTFOUND) {
        renew(w, NULL, NULL);
        return;
    }
    if (r->rc || !json_is_object(r->json)) {
        fail(w, "reading the Secret", r);
        return;
    }
    const json_t *data = json_object_get(r->json, "data");
    const char *rv =
        json_string_value(json_object_get(json_object_get(r->json, "metadata"), "resourceVersion"));
    struct fair_ca_pems p = {data_get(data, "ca.crt"), data_get(data, "ca.key"),
                             data_get(data, "tls.crt"), data_get(data, "tls.key")};
    char *prev = data_get(data, "ca-prev.crt");
    const char *why = NULL;
    if (!p.ca_cert || !p.ca_key || !p.cert || !p.key)
        why = "a key is missing or not base64";
    else if (!fair_ca_covers(p.cert, strlen(p.cert), p.ca_cert, strlen(p.ca_cert),
                             (const char *const *)w->names, w->n_names))
        why = "its certificate does not cover the names or the CA";
    else {
        int64_t nb = 0, na = 0;
        fair_ca_validity(p.cert, strlen(p.cert), &nb, &na, NULL);
        if (now_s(w) >= fair_ca_renew_at(nb, na))
            why = "two thirds of its validity have passed";
    }
    if (why) {
        FAIR_INFO(COMP, "msg=\"renewing the webhook certificate\" secret=%s/%s reason=\"%s\"",
                  w->ns, w->secret, why);
        renew(w, p.ca_cert, rv ? rv : "");
    } else if (adopt(w, &p, prev)) {
        fail(w, "loading the certificate", NULL);
    } else {
        get_config(w);
    }
    fair_ca_pems_release(&p);
    fair_free(prev);
}

static void get_secret(struct fair_ctl_webhookcert *w)
{
    struct fair_buf p;
    struct fair_error err = {0};
    fair_buf_init(&p, 0);
    int rc = fair_kpath(&p, &kres_secrets, w->ns, w->secret, NULL, &err);
    if (!rc)
        rc = fair_kclient_request(w->kc, "GET", fair_buf_str(&p), NULL, NULL, 0, 0, on_secret, w,
                                  &w->req, &err);
    fair_buf_release(&p);
    if (rc)
        fail(w, "asking for the Secret", NULL);
}

static void on_config_written(const struct fair_kresponse *r, void *arg)
{
    struct fair_ctl_webhookcert *w = arg;
    w->req = NULL;
    if (r->rc) {
        fail(w, "updating the MutatingWebhookConfiguration's caBundle", r);
        return;
    }
    w->st.bundle_writes++;
    FAIR_INFO(COMP, "msg=\"wrote the webhook CA bundle\" mutatingwebhookconfiguration=%s",
              w->config);
    finish(w);
}

static void on_config(const struct fair_kresponse *r, void *arg)
{
    struct fair_ctl_webhookcert *w = arg;
    w->req = NULL;
    if (r->rc == FAIR_ENOTFOUND) {
        if (!w->config_missing_told)
            FAIR_WARN(COMP,
                      "msg=\"MutatingWebhookConfiguration not found: nothing calls the webhook "
                      "(apply config/webhook.yaml); its caBundle is written once it exists\" "
                      "name=%s",
                      w->config);
        w->config_missing_told = true;
        finish(w);
        return;
    }
    if (r->rc || !json_is_object(r->json)) {
        fail(w, "reading the MutatingWebhookConfiguration", r);
        return;
    }
    w->config_missing_told = false;
    char *want = b64(w->bundle);
    json_t *doc = json_deep_copy(r->json);
    bool changed = false;
    size_t i;
    json_t *wh;
    if (!want || !doc) {
        fair_free(want);
        json_decref(doc);
        fail(w, "out of memory", NULL);
        return;
    }
    json_array_foreach(json_object_get(doc, "webhooks"), i, wh)
    {
        json_t *cc = json_object_get(wh, "clientConfig");
        if (!json_is_object(cc))
            continue;
        const char *have = json_string_value(json_object_get(cc, "caBundle"));
        if (!have || strcmp(have, want) != 0) {
            json_object_set_new(cc, "caBundle", json_string(want));
            changed = true;
        }
    }
    fair_free(want);
    if (!changed) {
        json_decref(doc);
        finish(w);
        return;
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    struct fair_buf p;
    struct fair_error err = {0};
    fair_buf_init(&p, 0);
    int rc = text ? fair_kpath(&p, &kres_mwc, NULL, w->config, NULL, &err) : FAIR_ENOMEM;
    if (!rc)
        rc = fair_kclient_request(w->kc, "PUT", fair_buf_str(&p), NULL, text, strlen(text), 0,
                                  on_config_written, w, &w->req, &err);
    fair_buf_release(&p);
    free(text);
    if (rc)
        fail(w, "sending the MutatingWebhookConfiguration", NULL);
}

static void get_config(struct fair_ctl_webhookcert *w)
{
    if (!w->config) {
        finish(w);
        return;
    }
    struct fair_buf p;
    struct fair_error err = {0};
    fair_buf_init(&p, 0);
    int rc = fair_kpath(&p, &kres_mwc, NULL, w->config, NULL, &err);
    if (!rc)
        rc = fair_kclient_request(w->kc, "GET", fair_buf_str(&p), NULL, NULL, 0, 0, on_config, w,
                                  &w->req, &err);
    fair_buf_release(&p);
    if (rc)
        fail(w, "asking for the MutatingWebhookConfiguration", NULL);
}

void fair_ctl_webhookcert_check(struct fair_ctl_webhookcert *w)
{
    if (w->busy)
        return;
    evtimer_del(w->timer);
    w->busy = true;
    w->failed = false;
    w->restarts = 0;
    get_secret(w);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fair_ctl_webhookcert_check(arg);
}

int fair_ctl_webhookcert_new(struct event_base *base, const struct fair_ctl_webhookcert_options *o,
                             struct fair_ctl_webhookcert **out, struct fair_error *err)
{
    if (!o->kc || !o->namespace_ || !o->secret_name || o->n_names == 0 ||
        o->n_names > FAIR_WEBHOOKCERT_MAX_NAMES)
        return fair_error_set(err, FAIR_EINVAL, "webhook certificate: bad options");
    struct fair_ctl_webhookcert *w = fair_calloc(1, sizeof *w);
    if (!w)
        return fair_error_set(err, FAIR_ENOMEM, "out of memory");
    w->base = base;
    w->kc = o->kc;
    w->validity_ms = o->validity_ms;
    w->interval_ms = o->check_interval_ms > 0 ? o->check_interval_ms : 60000;
    w->clock = o->clock ? o->clock : fair_clock_system();
    w->on_cert = o->on_cert;
    w->ctx = o->ctx;
    bool ok = (w->ns = fair_strdup(o->namespace_)) && (w->secret = fair_strdup(o->secret_name)) &&
              (!o->config_name || !*o->config_name || (w->config = fair_strdup(o->config_name)));
    for (size_t i = 0; ok && i < o->n_names; i++, w->n_names++)
        ok = (w->names[i] = fair_strdup(o->names[i])) != NULL;
    if (ok)
        ok = (w->timer = evtimer_new(base, on_timer, w)) != NULL;
    if (!ok) {
        fair_ctl_webhookcert_free(w);
        return fair_error_set(err, FAIR_ENOMEM, "out of memory");
    }
    /* A bad name or validity fails here, at start, not in the first check
     * (two EC keys: about a millisecond). */
    struct fair_ca_pems probe;
    int rc = fair_ca_issue((const char *const *)w->names, w->n_names, now_s(w),
                           w->validity_ms / 1000, &probe, err);
    fair_ca_pems_release(&probe);
    if (rc) {
        fair_ctl_webhookcert_free(w);
        return rc;
    }
    *out = w;
    fair_ctl_webhookcert_check(w);
    return 0;
}

void fair_ctl_webhookcert_free(struct fair_ctl_webhookcert *w)
{
    if (!w)
        return;
    if (w->req)
        fair_kreq_cancel(w->req);
    if (w->timer)
        event_free(w->timer);
    fair_ca_pems_release(&w->pending);
    fair_free(w->pending_prev);
    fair_free(w->served);
    fair_free(w->bundle);
    for (size_t i = 0; i < w->n_names; i++)
        fair_free(w->names[i]);
    fair_free(w->ns);
    fair_free(w->secret);
    fair_free(w->config);
    fair_free(w);
}

void fair_ctl_webhookcert_stats(const struct fair_ctl_webhookcert *w,
                                struct fair_ctl_webhookcert_stats *out)
{
    *out = w->st;
}

const char *fair_ctl_webhookcert_ca(const struct fair_ctl_webhookcert *w)
{
    return w->bundle ? w->bundle : "";
}

int fair_ctl_webhookcert_metrics(const struct fair_ctl_webhookcert *w, struct fair_buf *out)
{
    return fair_buf_appendf(
        out,
        "# HELP fairshare_webhook_cert_not_after_seconds When the webhook's serving certificate "
        "expires (Unix time; 0: none yet).\n"
        "# TYPE fairshare_webhook_cert_not_after_seconds gauge\n"
        "fairshare_webhook_cert_not_after_seconds %lld\n"
        "# HELP fairshare_webhook_cert_renewals_total New webhook CAs and certificates made.\n"
        "# TYPE fairshare_webhook_cert_renewals_total counter\n"
        "fairshare_webhook_cert_renewals_total %llu\n"
        "# HELP fairshare_webhook_cert_errors_total Certificate checks that failed (retried "
        "after 10s).\n"
        "# TYPE fairshare_webhook_cert_errors_total counter\n"
        "fairshare_webhook_cert_errors_total %llu\n",
        (long long)w->st.not_after_s, (unsigned long long)w->st.issued,
        (unsigned long long)w->st.errors);
}
