/* The controller's HTTP endpoints, on two listeners:
 *  - healthAddress (plain HTTP, no authentication, for the kubelet's
 *    probes): /healthz, /readyz (ready once the informers have synced);
 *  - metricsAddress (HTTPS, every request authorised by the API server
 *    with a TokenReview and a SubjectAccessReview, lib/httpd/auth.h):
 *    /metrics (Prometheus text: the controller's, the HTTP server's, the
 *    authoriser's, the query pool's and the ledger's), and when the ledger
 *    is on, the dashboard (/) and the GPU-hour report
 *    (/api/v1/reports/gpu-hours) of lib/httpd/dashboard.h, whose queries
 *    run on a query pool (lib/httpd/querypool.h), never on the loop.
 *  - webhook.address (HTTPS, no authentication: the API server calls it
 *    with no token; it only answers AdmissionReviews, lib/httpd/webhook.h):
 *    the GPU env admission webhook, its certificate managed in a Secret
 *    (lib/ctl/webhookcert.h).
 * With http.secureServing false, metricsAddress serves the same routes in
 * plain HTTP without authentication, on a loopback address only.
 * Create it after fair_ctl_start(), which opens (and migrates) the ledger
 * and loads the API server's configuration. */
#ifndef FAIR_CONTROLLER_HTTP_H
#define FAIR_CONTROLLER_HTTP_H

#include "base/error.h"

struct event_base;
struct fair_ctl;
struct fair_ctl_config;
struct fair_ctl_http;

/* The admission webhook's path on webhook.address (config/webhook.yaml). */
#define FAIR_CTL_WEBHOOK_PATH "/mutate-v1-pod"

/* The permissions of the authorised routes (docs/operations.md, "Who may
 * read what"): get reports.fairshare.dev for the GPU-hour report, get
 * dashboard.fairshare.dev for the dashboard page and its queue data, and
 * get on the non-resource URL /metrics. */

/* Checks the HTTP keys together, before anything starts: certFile and
 * keyFile both or neither; secureServing false only on a loopback
 * metricsAddress. err names the key. */
int fair_ctl_http_check(const struct fair_ctl_config *cfg, struct fair_error *err);

/* Listens on cfg->health_address and cfg->metrics_address (either may be
 * "0": off) with cfg's HTTP limits, certificate and authorisation
 * settings; cfg and ctl are borrowed. */
int fair_ctl_http_new(struct event_base *base, const struct fair_ctl_config *cfg,
                      struct fair_ctl *ctl, struct fair_ctl_http **out, struct fair_error *err);
/* Frees. Run the loop once more afterwards (EVLOOP_NONBLOCK) so that the
 * TLS connections' finalizers run. NULL: no-op. */
void fair_ctl_http_free(struct fair_ctl_http *h);

#endif
