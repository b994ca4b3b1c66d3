/* The finance dashboard and its JSON endpoints, served from a ledger:
 *   GET /                           the page (HTML, CSS and JS embedded here;
 *                                   charts are SVG drawn by inline JS; no CDN)
 *   GET /api/v1/reports/gpu-hours   fair_report_http() (see ledger/report.h)
 *   GET /api/v1/queues/samples?from=&to=[&tz=]  allocation, fair share and
 *                                   guarantee per queue over time (averaged
 *                                   over at most 300 buckets per queue)
 *   GET /api/v1/queues/current      the latest sample of every queue
 * The controller registers the same routes next to /healthz and /metrics. */
#ifndef FAIR_HTTPD_DASHBOARD_H
#define FAIR_HTTPD_DASHBOARD_H

#include "base/buf.h"
#include "httpd/httpd.h"
#include "ledger/ledger.h"

/* Registers the four routes; ledger is borrowed and must outlive srv. */
int fair_dashboard_register(struct fair_httpd *srv, struct fair_ledger *ledger);

/* The handlers, for tests and for servers with their own routing. */
int fair_dashboard_page(void *ledger, const char *query, struct fair_buf *body,
                        const char **content_type, int *status);
int fair_dashboard_samples(void *ledger, const char *query, struct fair_buf *body,
                           const char **content_type, int *status);
int fair_dashboard_current(void *ledger, const char *query, struct fair_buf *body,
                           const char **content_type, int *status);

#endif
