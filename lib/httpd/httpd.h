/* A small HTTP/1.1 server on libevent's evhttp with a route table: the
 * controller serves /healthz, /readyz, /metrics, the reports and the
 * dashboard through it, and `fairsharectl dashboard` serves a ledger file.
 *
 * Handlers run on the event loop thread and must not block for long. A
 * handler gets the raw query string (NULL when none) and fills body,
 * content_type (a static string) and status; a negative return answers 500.
 * Limits: request headers 16 KiB, bodies 1 MiB, 30 s timeout, 64 routes,
 * response bodies 64 MiB. Unknown paths answer 404, known paths with
 * another method 405, both as JSON {"error": "..."}. HEAD is served as GET
 * without a body. */
#ifndef FAIR_HTTPD_HTTPD_H
#define FAIR_HTTPD_HTTPD_H

#include "base/buf.h"
#include "base/error.h"

struct event_base;
struct fair_httpd;

#define FAIR_HTTPD_MAX_ROUTES 64

typedef int (*fair_httpd_handler)(void *ctx, const char *query, struct fair_buf *body,
                                  const char **content_type, int *status);

/* Listens on addr:port (port 0: an ephemeral port, see fair_httpd_port()).
 * base is borrowed and must outlive the server. *out is new. */
int fair_httpd_new(struct event_base *base, const char *addr, int port, struct fair_httpd **out,
                   struct fair_error *err);
/* Closes the listener. NULL: no-op. */
void fair_httpd_free(struct fair_httpd *srv);
/* method "GET" or "POST"; path exact ("/api/v1/reports/gpu-hours"). ctx is
 * borrowed. Returns FAIR_ERANGE when the table is full, FAIR_EINVAL on a
 * duplicate. */
int fair_httpd_route(struct fair_httpd *srv, const char *method, const char *path,
                     fair_httpd_handler handler, void *ctx);
/* The port the server listens on. */
int fair_httpd_port(const struct fair_httpd *srv);

#endif
