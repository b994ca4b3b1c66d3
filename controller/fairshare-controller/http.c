/* HTTP endpoints of the controller on lib/httpd (see http.h): health,
 * readiness and metrics from memory, on the loop; the ledger's dashboard
 * and report routes through a query pool, off the loop. No handler waits
 * on the network or on the disk. */
#include "http.h"

#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "ctl/config.h"
#include "ctl/controller.h"
#include "httpd/dashboard.h"
#include "httpd/httpd.h"
#include "httpd/querypool.h"
#include "ledger/ledger.h"

struct fair_ctl_http {
    struct fair_httpd *srv;
    struct fair_querypool *pool; /* NULL without a ledger */
    struct fair_ctl *ctl;
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
    if (!rc && h->pool)
        rc = fair_querypool_metrics(h->pool, body);
    if (!rc && fair_ctl_ledger(h->ctl))
        rc = fair_ledger_metrics(fair_ctl_ledger(h->ctl), body);
    return rc;
}

int fair_ctl_http_new(struct event_base *base, const struct fair_ctl_config *cfg,
                      struct fair_ctl *ctl, struct fair_ctl_http **out, struct fair_error *err)
{
    char host[256];
    int port = 0;
    int rc = fair_ctl_parse_address(cfg->metrics_address, host, sizeof host, &port, err);
    if (rc)
        return rc;
    struct fair_ctl_http *h = fair_calloc(1, sizeof *h);
    if (!h)
        return fair_error_set(err, FAIR_ENOMEM, "out of memory");
    h->ctl = ctl;
    struct fair_httpd_options ho = {.max_connections = (int)cfg->http_max_conns,
                                    .header_timeout_ms = (int)cfg->http_header_timeout_ms};
    if ((rc = fair_httpd_new(base, host, port, &ho, &h->srv, err)))
        goto fail;
    if ((rc = fair_httpd_route(h->srv, "GET", "/healthz", healthz, h)) ||
        (rc = fair_httpd_route(h->srv, "GET", "/readyz", readyz, h)) ||
        (rc = fair_httpd_route(h->srv, "GET", "/metrics", metrics, h))) {
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
    *out = h;
    return 0;
fail:
    fair_ctl_http_free(h);
    return rc;
}

void fair_ctl_http_free(struct fair_ctl_http *h)
{
    if (!h)
        return;
    fair_querypool_free(h->pool); /* stops its threads; pending replies go out */
    fair_httpd_free(h->srv);
    fair_free(h);
}
