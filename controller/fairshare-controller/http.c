/* HTTP endpoints of the controller on lib/httpd (see http.h): health and
 * readiness on their own plain listener; metrics, reports and the
 * dashboard over HTTPS behind the API server's token and access reviews.
 * No handler waits on the network or on the disk: the reviews are
 * asynchronous requests on the loop, the ledger's queries run on a query
 * pool. A renewed certificate file is picked up within a minute. */
#include "http.h"

#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "ctl/config.h"
#include "ctl/controller.h"
#include "ctl/webhookcert.h"
#include "httpd/auth.h"
#include "httpd/cert.h"
#include "httpd/dashboard.h"
#include "httpd/httpd.h"
#include "httpd/querypool.h"
#include "httpd/webhook.h"
#include "kube/client.h"
#include "kube/config.h"
#include "ledger/ledger.h"

#define COMP "http"
#define CERT_CHECK_MS 60000

struct fair_ctl_http {
    struct fair_httpd *srv;       /* metricsAddress; NULL when off */
    struct fair_httpd *health;    /* healthAddress; NULL when off */
    struct fair_querypool *pool;  /* NULL without a ledger */
    struct fair_kclient *auth_kc; /* the reviews' own client */
    struct fair_auth *auth;       /* NULL: plain HTTP (secureServing false) */
    struct fair_ctl *ctl;
    const struct fair_ctl_config *cfg;
    struct event *cert_timer; /* re-reads http.tls.certFile/keyFile when they change */
    struct stat cert_st, key_st;
    struct fair_httpd *webhook_srv;            /* webhook.address; NULL when off */
    struct fair_webhook *webhook;              /* its route */
    struct fair_kclient *webhook_kc;           /* the certificate manager's client */
    struct fair_ctl_webhookcert *webhook_cert; /* the Secret and the caBundle */
};

/* What each route needs (docs/operations.md, "Who may read what"). */
static const struct fair_auth_perm perm_reports = {
    "get", "fairshare.dev", "reports", NULL,
    "the ClusterRole fairshare-finance grants it (docs/operations.md)"};
static const struct fair_auth_perm perm_dashboard = {
    "get", "fairshare.dev", "dashboard", NULL,
    "the ClusterRoles fairshare-finance and fairshare-viewer grant it (docs/operations.md)"};
static const struct fair_auth_perm perm_metrics = {
    "get", NULL, NULL, "/metrics",
    "the ClusterRole fairshare-viewer grants it, as do Prometheus's usual roles "
    "(docs/operations.md)"};

static const struct {
    const char *path;
    const struct fair_auth_perm *perm;
} guarded[] = {
    {"/metrics", &perm_metrics},
    {"/", &perm_dashboard},
    {"/api/v1/queues/samples", &perm_dashboard},
    {"/api/v1/queues/current", &perm_dashboard},
    {"/api/v1/reports/gpu-hours", &perm_reports},
};

static int healthz(void *ctx, const char *query, struct fair_buf *body, const char **type,
                   int *status)
{
    (void)ctx;
    (void)query;
    *type = "text/plain";
    *status = 200;
    return fair_buf_appends(body, "ok\n");
}

static int readyz(void *ctx, const char *query, struct fair_buf *body, const char **type,
                  int *status)
{
    struct fair_ctl_http *h = ctx;
    (void)query;
    *type = "text/plain";
    if (fair_ctl_ready(h->ctl)) {
        *status = 200;
        return fair_buf_appends(body, "ok\n");
    }
    *status = 503;
    return fair_buf_appends(body, "informers not synced\n");
}

static int metrics(void *ctx, const char *query, struct fair_buf *body, const char **type,
                   int *status)
{
    struct fair_ctl_http *h = ctx;
    (void)query;
    *type = "text/plain; version=0.0.4";
    *status = 200;
    int rc = fair_ctl_metrics_text(h->ctl, body);
    if (!rc)
        rc = fair_httpd_metrics(h->srv, body);
    if (!rc && h->auth)
        rc = fair_auth_metrics(h->auth, body);
    if (!rc && h->pool)
        rc = fair_querypool_metrics(h->pool, body);
    if (!rc && fair_ctl_ledger(h->ctl))
        rc = fair_ledger_metrics(fair_ctl_ledger(h->ctl), body);
    if (!rc && h->webhook)
        rc = fair_webhook_metrics(h->webhook, body);
    if (!rc && h->webhook_cert)
        rc = fair_ctl_webhookcert_metrics(h->webhook_cert, body);
    return rc;
}

static bool is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

int fair_ctl_http_check(const struct fair_ctl_config *cfg, struct fair_error *err)
{
    if (!*cfg->http_tls_cert != !*cfg->http_tls_key)
        return fair_error_set(err, FAIR_EINVAL,
                              "key %s: set http.tls.certFile and http.tls.keyFile together (or "
                              "neither, for a self-signed certificate)",
                              *cfg->http_tls_cert ? "http.tls.keyFile" : "http.tls.certFile");
    if (!cfg->http_secure && strcmp(cfg->metrics_address, "0") != 0) {
        char host[256];
        int port = 0;
        int rc = fair_ctl_parse_address(cfg->metrics_address, host, sizeof host, &port, err);
        if (rc)
            return rc;
        if (!is_loopback(host))
            return fair_error_set(
                err, FAIR_EINVAL,
                "key http.secureServing: false serves reports and metrics to anyone without "
                "authentication, so it needs a loopback metricsAddress (127.0.0.1:PORT), not "
                "\"%s\"",
                cfg->metrics_address);
    }
    return 0;
}

/* ---- the serving certificate ---- */

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void log_cert(const char *what, const struct fair_cert_info *ci, const char *file)
{
    FAIR_INFO(COMP, "msg=\"%s\" cert=\"%s\" subject=\"%s\" sha256=%s not_after=%s", what, file,
              ci->subject, ci->sha256, ci->not_after);
}

/* Every minute: a certificate renewed in place (a Secret's files are
 * swapped atomically by the kubelet) is loaded for new connections. */
static void on_cert_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fair_ctl_http *h = arg;
    struct stat cs, ks;
    if (stat(h->cfg->http_tls_cert, &cs) == 0 && stat(h->cfg->http_tls_key, &ks) == 0 &&
        (!same_file(&cs, &h->cert_st) || !same_file(&ks, &h->key_st))) {
        SSL_CTX *ctx = NULL;
        struct fair_cert_info ci;
        struct fair_error err = {0};
        if (fair_cert_load(h->cfg->http_tls_cert, h->cfg->http_tls_key, &ctx, &ci, &err)) {
            FAIR_WARN(COMP,
                      "msg=\"renewed certificate not loaded; keeping the old one\" error=\"%s\"",
                      err.msg);
        } else {
            fair_httpd_set_tls(h->srv, ctx);
            SSL_CTX_free(ctx);
            log_cert("loaded the renewed serving certificate", &ci, h->cfg->http_tls_cert);
        }
        h->cert_st = cs;
        h->key_st = ks;
    }
    struct timeval tv = {CERT_CHECK_MS / 1000, 0};
    evtimer_add(h->cert_timer, &tv);
}

/* The names a self-signed certificate is made for. */
static int self_signed(const char *ns, SSL_CTX **out, struct fair_cert_info *ci,
                       struct fair_error *err)
{
    char host[256] = "", svc[3][320];
    const char *names[8];
    size_t n = 0;
    names[n++] = "localhost";
    names[n++] = "127.0.0.1";
    names[n++] = "::1";
    names[n++] = "fairshare-controller";
    snprintf(svc[0], sizeof svc[0], "fairshare-controller.%s.svc", ns);
    snprintf(svc[1], sizeof svc[1], "fairshare-controller.%s.svc.cluster.local", ns);
    names[n++] = svc[0];
    names[n++] = svc[1];
    if (gethostname(host, sizeof host - 1) == 0 && host[0] &&
        strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") ==
            strlen(host))
        names[n++] = host;
    const char *pod_ip = getenv("POD_IP");
    if (pod_ip && *pod_ip && strlen(pod_ip) < sizeof svc[2]) {
        snprintf(svc[2], sizeof svc[2], "%s", pod_ip);
        names[n++] = svc[2];
    }
    int rc = fair_cert_self_signed(names, n, out, ci, err);
    if (rc == FAIR_EINVAL && pod_ip) /* a malformed $POD_IP: without it */
        rc = fair_cert_self_signed(names, n - 1, out, ci, err);
    return rc;
}

static int setup_tls(struct fair_ctl_http *h, SSL_CTX **out, struct fair_error *err)
{
    struct fair_cert_info ci;
    const struct fair_ctl_config *cfg = h->cfg;
    if (!*cfg->http_tls_cert) {
        int rc = self_signed(fair_kclient_namespace(h->auth_kc), out, &ci, err);
        if (rc)
            return rc;
        FAIR_INFO(COMP,
                  "msg=\"no http.tls.certFile: serving a self-signed certificate made at start "
                  "(clients must trust it by this fingerprint, or skip verification)\" "
                  "subject=\"%s\" sha256=%s not_after=%s",
                  ci.subject, ci.sha256, ci.not_after);
        return 0;
    }
    int rc = fair_cert_load(cfg->http_tls_cert, cfg->http_tls_key, out, &ci, err);
    if (rc) {
        fair_error_prefix(err, "key http.tls.certFile: ");
        return rc;
    }
    stat(cfg->http_tls_cert, &h->cert_st);
    stat(cfg->http_tls_key, &h->key_st);
    log_cert("serving certificate", &ci, cfg->http_tls_cert);
    return 0;
}

static int new_server(struct event_base *base, const struct fair_ctl_config *cfg, const char *addr,
                      SSL_CTX *tls, struct fair_httpd **out, struct fair_error *err);

/* ---- the admission webhook (webhook.address) ---- */

static void on_webhook_cert(void *ctx, SSL_CTX *tls)
{
    struct fair_ctl_http *h = ctx;
    fair_httpd_set_tls(h->webhook_srv, tls);
}

/* The serving certificate's names: the Service's DNS names, then
 * webhook.extraNames. */
static int webhook_names(const struct fair_ctl_config *cfg, char (*buf)[320], const char **names,
                         size_t *n, struct fair_error *err)
{
    const char *svc = cfg->webhook_service, *ns = cfg->webhook_namespace;
    *n = 0;
    snprintf(buf[0], sizeof buf[0], "%s.%s.svc", svc, ns);
    snprintf(buf[1], sizeof buf[1], "%s.%s.svc.cluster.local", svc, ns);
    snprintf(buf[2], sizeof buf[2], "%s.%s", svc, ns);
    snprintf(buf[3], sizeof buf[3], "%s", svc);
    for (; *n < 4; (*n)++)
        names[*n] = buf[*n];
    const char *p = cfg->webhook_extra_names;
    while (*p) {
        p += strspn(p, " ,");
        size_t len = strcspn(p, ",");
        size_t t = len;
        while (t > 0 && p[t - 1] == ' ')
            t--;
        if (t == 0) {
            p += len;
            continue;
        }
        if (*n >= FAIR_WEBHOOKCERT_MAX_NAMES || t >= sizeof buf[0])
            return fair_error_set(err, FAIR_EINVAL,
                                  "key webhook.extraNames: at most %d names of at most 253 "
                                  "characters",
                                  FAIR_WEBHOOKCERT_MAX_NAMES - 4);
        memcpy(buf[*n], p, t);
        buf[*n][t] = '\0';
        names[*n] = buf[*n];
        (*n)++;
        p += len;
    }
    return 0;
}

static int setup_webhook(struct fair_ctl_http *h, struct event_base *base, struct fair_error *err)
{
    const struct fair_ctl_config *cfg = h->cfg;
    char buf[FAIR_WEBHOOKCERT_MAX_NAMES][320];
    const char *names[FAIR_WEBHOOKCERT_MAX_NAMES];
    size_t n = 0;
    SSL_CTX *tls = NULL;
    int rc = webhook_names(cfg, buf, names, &n, err);
    if (rc)
        return rc;
    /* Until the Secret is read: a throwaway certificate that no API server
     * trusts (calls fail, and failurePolicy Ignore admits the pods). */
    if ((rc = fair_cert_self_signed(names, n, &tls, NULL, err)))
        return rc;
    rc = new_server(base, cfg, cfg->webhook_address, tls, &h->webhook_srv, err);
    SSL_CTX_free(tls);
    if (rc) {
        fair_error_prefix(err, "webhook.address %s: ", cfg->webhook_address);
        return rc;
    }
    struct fair_webhook_options wo = {.scheduler_name = cfg->scheduler_name,
                                      .cuda_visible_devices = cfg->webhook_cuda};
    if ((rc = fair_webhook_register(h->webhook_srv, FAIR_CTL_WEBHOOK_PATH, &wo, &h->webhook)))
        return fair_error_set(err, rc, "cannot register the webhook route");
    struct fair_kclient_options ko = {0};
    fair_kclient_options_default(&ko);
    ko.qps = -1; /* a few requests a minute */
    ko.max_host_connections = 2;
    ko.max_body = 4u << 20;
    if ((rc = fair_kclient_new(base, fair_ctl_kconfig(h->ctl), &ko, &h->webhook_kc, err)))
        return rc;
    struct fair_ctl_webhookcert_options co = {.kc = h->webhook_kc,
                                              .namespace_ = cfg->webhook_namespace,
                                              .secret_name = cfg->webhook_secret,
                                              .config_name = cfg->webhook_config,
                                              .names = names,
                                              .n_names = n,
                                              .validity_ms = cfg->webhook_validity_ms,
                                              .check_interval_ms = cfg->webhook_check_ms,
                                              .on_cert = on_webhook_cert,
                                              .ctx = h};
    if ((rc = fair_ctl_webhookcert_new(base, &co, &h->webhook_cert, err))) {
        fair_error_prefix(err, "webhook certificate: ");
        return rc;
    }
    FAIR_INFO(COMP,
              "msg=\"serving the GPU env admission webhook (HTTPS)\" addr=%s path=%s "
              "secret=%s/%s mutatingwebhookconfiguration=%s",
              cfg->webhook_address, FAIR_CTL_WEBHOOK_PATH, cfg->webhook_namespace,
              cfg->webhook_secret, *cfg->webhook_config ? cfg->webhook_config : "(none)");
    return 0;
}

/* ---- lifecycle ---- */

static int new_server(struct event_base *base, const struct fair_ctl_config *cfg, const char *addr,
                      SSL_CTX *tls, struct fair_httpd **out, struct fair_error *err)
{
    char host[256];
    int port = 0;
    int rc = fair_ctl_parse_address(addr, host, sizeof host, &port, err);
    if (rc)
        return rc;
    struct fair_httpd_options ho = {.max_connections = (int)cfg->http_max_conns,
                                    .header_timeout_ms = (int)cfg->http_header_timeout_ms,
                                    .tls = tls};
    return fair_httpd_new(base, host, port, &ho, out, err);
}

static int setup_auth(struct fair_ctl_http *h, struct event_base *base, struct fair_error *err)
{
    const struct fair_ctl_config *cfg = h->cfg;
    struct fair_kclient_options ko = {0};
    fair_kclient_options_default(&ko);
    ko.qps = -1; /* bounded by the authoriser's reviews in flight */
    ko.max_host_connections = 4;
    /* The authoriser's own timer (http.authTimeout) answers the waiting
     * requests; the client's timeouts, a second later, only abandon the
     * review. With both equal, curl's timeout won the race now and then and
     * the answer said "could not review" instead of naming the timeout. */
    ko.request_timeout_ms = cfg->http_auth_timeout_ms + 1000;
    ko.connect_timeout_ms = cfg->http_auth_timeout_ms + 1000;
    ko.max_body = 1u << 20;
    ko.max_retries = 0;
    int rc = fair_kclient_new(base, fair_ctl_kconfig(h->ctl), &ko, &h->auth_kc, err);
    if (rc)
        return rc;
    struct fair_auth_options ao = {.kc = h->auth_kc,
                                   .namespace_ = fair_kclient_namespace(h->auth_kc),
                                   .timeout_ms = cfg->http_auth_timeout_ms,
                                   .allow_ttl_ms = cfg->http_auth_allow_ttl_ms,
                                   .deny_ttl_ms = cfg->http_auth_deny_ttl_ms,
                                   .cache_size = (size_t)cfg->http_auth_cache_size};
    return fair_auth_new(base, &ao, &h->auth, err);
}

int fair_ctl_http_new(struct event_base *base, const struct fair_ctl_config *cfg,
                      struct fair_ctl *ctl, struct fair_ctl_http **out, struct fair_error *err)
{
    int rc = fair_ctl_http_check(cfg, err);
    SSL_CTX *tls = NULL;
    if (rc)
        return rc;
    struct fair_ctl_http *h = fair_calloc(1, sizeof *h);
    if (!h)
        return fair_error_set(err, FAIR_ENOMEM, "out of memory");
    h->ctl = ctl;
    h->cfg = cfg;
    if (strcmp(cfg->health_address, "0") != 0) {
        if ((rc = new_server(base, cfg, cfg->health_address, NULL, &h->health, err))) {
            fair_error_prefix(err, "healthAddress %s: ", cfg->health_address);
            goto fail;
        }
        if ((rc = fair_httpd_route(h->health, "GET", "/healthz", healthz, h)) ||
            (rc = fair_httpd_route(h->health, "GET", "/readyz", readyz, h))) {
            fair_error_set(err, rc, "cannot register the health routes");
            goto fail;
        }
    }
    if (strcmp(cfg->webhook_address, "0") != 0 && (rc = setup_webhook(h, base, err)))
        goto fail;
    if (strcmp(cfg->metrics_address, "0") == 0) {
        *out = h;
        return 0;
    }
    if (cfg->http_secure) {
        if ((rc = setup_auth(h, base, err)) || (rc = setup_tls(h, &tls, err)))
            goto fail;
    } else {
        FAIR_WARN(COMP,
                  "msg=\"http.secureServing is false: metrics, reports and the dashboard are "
                  "served over plain HTTP, without authentication, to anyone who can reach the "
                  "address\" addr=%s",
                  cfg->metrics_address);
    }
    if ((rc = new_server(base, cfg, cfg->metrics_address, tls, &h->srv, err))) {
        fair_error_prefix(err, "metricsAddress %s: ", cfg->metrics_address);
        goto fail;
    }
    if ((rc = fair_httpd_route(h->srv, "GET", "/metrics", metrics, h))) {
        fair_error_set(err, rc, "cannot register the routes");
        goto fail;
    }
    if (fair_ctl_ledger(ctl)) {
        struct fair_querypool_options po = {.path = cfg->ledger_path,
                                            .threads = (int)cfg->ledger_query_threads,
                                            .timeout_ms = cfg->ledger_query_timeout_ms,
                                            .sample_period_ms = cfg->ledger_sample_ms};
        if ((rc = fair_querypool_new(base, &po, &h->pool, err)))
            goto fail;
        if ((rc = fair_dashboard_register(h->srv, h->pool))) {
            fair_error_set(err, rc, "cannot register the dashboard routes");
            goto fail;
        }
    }
    if (h->auth) {
        fair_httpd_set_guard(h->srv, fair_auth_guard, h->auth);
        for (size_t i = 0; i < sizeof guarded / sizeof *guarded; i++) {
            rc = fair_httpd_route_guard(h->srv, "GET", guarded[i].path, guarded[i].perm);
            if (rc && rc != FAIR_ENOTFOUND) /* the ledger's routes exist only with it */
                goto fail;
        }
        rc = 0;
        if (*cfg->http_tls_cert) {
            h->cert_timer = evtimer_new(base, on_cert_timer, h);
            struct timeval tv = {CERT_CHECK_MS / 1000, 0};
            if (!h->cert_timer || evtimer_add(h->cert_timer, &tv)) {
                rc = fair_error_set(err, FAIR_ENOMEM, "out of memory");
                goto fail;
            }
        }
        FAIR_INFO(COMP,
                  "msg=\"serving HTTPS; every request is authorised with a TokenReview and a "
                  "SubjectAccessReview\" addr=%s namespace=%s cache_ttl_ms=%lld "
                  "deny_cache_ttl_ms=%lld",
                  cfg->metrics_address, fair_kclient_namespace(h->auth_kc),
                  (long long)cfg->http_auth_allow_ttl_ms, (long long)cfg->http_auth_deny_ttl_ms);
    }
    SSL_CTX_free(tls);
    *out = h;
    return 0;
fail:
    SSL_CTX_free(tls);
    fair_ctl_http_free(h);
    return rc;
}

void fair_ctl_http_free(struct fair_ctl_http *h)
{
    if (!h)
        return;
    if (h->cert_timer)
        event_free(h->cert_timer);
    fair_ctl_webhookcert_free(h->webhook_cert);
    fair_httpd_free(h->webhook_srv);
    fair_webhook_free(h->webhook);
    fair_kclient_free(h->webhook_kc);
    fair_auth_free(h->auth);      /* waiting requests get 503 */
    fair_querypool_free(h->pool); /* stops its threads; pending replies go out */
    fair_httpd_free(h->srv);
    fair_httpd_free(h->health);
    fair_kclient_free(h->auth_kc);
    fair_free(h);
}
