/* The controller's HTTP endpoints: /healthz, /readyz (ready once the
 * informers have synced), /metrics (Prometheus text), and when the ledger
 * is on, the dashboard (/) and the GPU-hour report
 * (/api/v1/reports/gpu-hours) of lib/httpd/dashboard.h.
 * Create it after fair_ctl_start(), which opens the ledger. */
#ifndef FAIR_CONTROLLER_HTTP_H
#define FAIR_CONTROLLER_HTTP_H

#include "base/error.h"

struct event_base;
struct fair_ctl;
struct fair_ctl_http;

/* Listens on addr ("host:port"); ctl is borrowed. */
int fair_ctl_http_new(struct event_base *base, const char *addr, struct fair_ctl *ctl,
                      struct fair_ctl_http **out, struct fair_error *err);
void fair_ctl_http_free(struct fair_ctl_http *h);

#endif
