/* The finance dashboard and its JSON endpoints, served from a ledger:
 *   GET /                           the page (HTML, CSS and JS embedded here;
 *                                   charts are SVG drawn by inline JS; no CDN)
 *   GET /api/v1/reports/gpu-hours   fair_report_http() (see ledger/report.h)
 *   GET /api/v1/queues/samples?from=&to=[&tz=]  allocation, fair share and
 *                                   guarantee per queue over time (averaged
 *                                   over at most 300 buckets per queue; a
 *                                   period longer than 7 days is drawn from
 *                                   the daily rollups, in buckets of whole
 *                                   UTC days, plus one bucket for each
 *                                   partial day at the edges)
 *   GET /api/v1/queues/current      the latest sample of every queue
 * The page is served on the loop; the three JSON endpoints query the ledger
 * and run on the threads of a query pool (querypool.h), never on the loop.
 * The controller registers the same routes next to /healthz and /metrics. */
#ifndef FAIR_HTTPD_DASHBOARD_H
#define FAIR_HTTPD_DASHBOARD_H

#include "base/buf.h"
#include "httpd/httpd.h"
#include "httpd/querypool.h"
#include "ledger/ledger.h"

/* Periods up to this long are drawn from the raw samples. */
#define FAIR_DASHBOARD_RAW_MAX_MS (7 * FAIR_LEDGER_DAY_MS)

/* Registers the four routes; pool is borrowed (see querypool.h for the
 * order of frees). */
int fair_dashboard_register(struct fair_httpd *srv, struct fair_querypool *pool);

/* The handlers, for tests and for servers with their own routing. Each
 * takes a struct fair_ledger * as its first argument (the page ignores it)
 * and only reads that ledger, so that a query pool thread may run it. */
int fair_dashboard_page(void *ledger, const char *query, struct fair_buf *body,
                        const char **content_type, int *status);
int fair_dashboard_samples(void *ledger, const char *query, struct fair_buf *body,
                           const char **content_type, int *status);
int fair_dashboard_current(void *ledger, const char *query, struct fair_buf *body,
                           const char **content_type, int *status);

#endif
