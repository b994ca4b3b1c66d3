/* The controller's HTTP endpoints: /healthz, /readyz (ready once the
 * informers have synced), /metrics (Prometheus text: the controller's, the
 * HTTP server's, the query pool's and the ledger's), and when the ledger
 * is on, the dashboard (/) and the GPU-hour report
 * (/api/v1/reports/gpu-hours) of lib/httpd/dashboard.h, whose queries run
 * on a query pool (lib/httpd/querypool.h), never on the loop.
 * Create it after fair_ctl_start(), which opens (and migrates) the ledger. */
#ifndef FAIR_CONTROLLER_HTTP_H
#define FAIR_CONTROLLER_HTTP_H

#include "base/error.h"

struct event_base;
struct fair_ctl;
struct fair_ctl_config;
struct fair_ctl_http;

/* Listens on cfg->metrics_address ("host:port") with cfg's HTTP limits and
 * query pool settings; cfg and ctl are borrowed. */
int fair_ctl_http_new(struct event_base *base, const struct fair_ctl_config *cfg,
                      struct fair_ctl *ctl, struct fair_ctl_http **out, struct fair_error *err);
void fair_ctl_http_free(struct fair_ctl_http *h);

#endif
