/* HTTP endpoints of the controller on lib/httpd (see http.h): health,
 * readiness and metrics from memory, plus the ledger's dashboard and
 * report routes. No handler waits on the network. */
#include "http.h"

#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "ctl/config.h"
#include "ctl/controller.h"
#include "httpd/dashboard.h"
#include "httpd/httpd.h"

struct fair_ctl_http {
    struct fair_httpd *srv;
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
    return fair_ctl_metrics_text(h->ctl, body);
}

int fair_ctl_http_new(struct event_base *base, const char *addr, struct fair_ctl *ctl,
                      struct fair_ctl_http **out, struct fair_error *err)
{
    char host[256];
    int port = 0;
    int rc = fair_ctl_parse_address(addr, host, sizeof host, &port, err);
    if (rc)
        return rc;
    struct fair_ctl_http *h = fair_calloc(1, sizeof *h);
    if (!h)
        return fair_error_set(err, FAIR_ENOMEM, "out of memory");
    h->ctl = ctl;
    if ((rc = fair_httpd_new(base, host, port, &h->srv, err)))
        goto fail;
    if ((rc = fair_httpd_route(h->srv, "GET", "/healthz", healthz, h)) ||
        (rc = fair_httpd_route(h->srv, "GET", "/readyz", readyz, h)) ||
        (rc = fair_httpd_route(h->srv, "GET", "/metrics", metrics, h))) {
        fair_error_set(err, rc, "cannot register the routes");
        goto fail;
    }
    if (fair_ctl_ledger(ctl) && (rc = fair_dashboard_register(h->srv, fair_ctl_ledger(ctl)))) {
        fair_error_set(err, rc, "cannot register the dashboard routes");
        goto fail;
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
    fair_httpd_free(h->srv);
    fair_free(h);
}
