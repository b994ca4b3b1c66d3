/* A small HTTP/1.1 server on libevent's evhttp with a route table: the
 * controller serves /healthz, /readyz, /metrics, the reports and the
 * dashboard through it, and `fairsharectl dashboard` serves a ledger file.
 *
 * Threads: everything in this module runs on the event loop's thread, and
 * so do the handlers; nothing here is thread-safe. A handler must not block
 * (one slow handler stalls /healthz and the controller's lease renewals).
 * Work that may take long, such as the ledger's report queries, uses a
 * deferred reply: an async route's handler keeps its request handle,
 * returns at once, and answers later with fair_httpd_reply(), also on the
 * loop thread (lib/httpd/querypool.h runs such work on its own threads and
 * hands the result back to the loop).
 *
 * Requests: a sync handler gets the raw query string (NULL when none) and
 * fills body, content_type (a static string) and status; a negative return
 * answers 500. Paths match exactly, byte for byte, against the request
 * target up to '?' ("//metrics" is not "/metrics"; an absolute-form target
 * "http://host/metrics" is matched by its path). Unknown paths answer 404;
 * a known path with another method (OPTIONS, PUT, DELETE, PATCH, ...)
 * answers 405 with an Allow header; both as JSON {"error": "..."}. HEAD is
 * served as GET without a body. Limits: request headers 16 KiB, bodies
 * 1 MiB, 64 routes, response bodies 64 MiB, 30 s without progress while
 * writing a response.
 *
 * Design note: the connection state machine.
 *
 *   WAITING --request line, headers and body read--> BUSY
 *   BUSY    --reply written, keep-alive-------------> WAITING (deadline restarts)
 *   WAITING --header deadline passes----------------> closed
 *   any     --client closes, error, eviction--------> closed
 *
 * WAITING covers a new connection, an idle keep-alive one and a slow
 * sender: all of it must be over within header_timeout_ms, however the
 * bytes trickle in. In BUSY the handler runs or a deferred reply is
 * awaited; a client that closes meanwhile cancels the deferred request
 * (its cancel callback runs, the connection is closed at once).
 * At most max_connections at once: beyond the cap, the WAITING connections
 * that have waited longest are closed (evicted), and when the only WAITING
 * ones are those just accepted, these are closed at once (refused), oldest
 * first; BUSY connections are never closed to make room. An accept() that fails (too many open
 * files, no buffers) pauses the listener for a back-off of 10 ms doubling to 1 s, closes the oldest
 * WAITING connection when descriptors ran out (on any server of the same
 * loop: descriptors belong to the process), and is logged once, then
 * at most once per 10 s with the count of failures in between.
 *
 * HTTPS: with options.tls every connection starts with a TLS handshake
 * (libevent's OpenSSL bufferevents); a client that speaks plain HTTP fails
 * the handshake and is closed without an answer. The handshake is part of
 * WAITING, so it too must end within header_timeout_ms.
 *
 * Guards (authentication and authorisation): once fair_httpd_set_guard()
 * installed one, every request that matches a route (path and method)
 * first goes to the guard, deferred like an async request, and reaches the
 * route's handler only when the guard answers fair_httpd_guard_done(req,
 * 0, ...); any other answer is sent as a JSON error. Unknown paths and
 * methods still answer 404 and 405 without the guard (they reveal only the
 * route table, which is documented). */
#ifndef FAIR_HTTPD_HTTPD_H
#define FAIR_HTTPD_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"

struct event_base;
struct fair_httpd;
struct fair_httpd_req;
struct ssl_ctx_st;

#define FAIR_HTTPD_MAX_ROUTES 64

typedef int (*fair_httpd_handler)(void *ctx, const char *query, struct fair_buf *body,
                                  const char **content_type, int *status);

/* An async route's handler. req is new and owned by the handler until it
 * passes it to fair_httpd_reply(), which it must do exactly once, now or
 * later, on the loop thread (also after a cancel). query is borrowed for
 * the duration of the call (NULL when none). */
typedef void (*fair_httpd_async_handler)(void *ctx, struct fair_httpd_req *req, const char *query);

struct fair_httpd_options {
    int max_connections;    /* 0: 256 */
    int header_timeout_ms;  /* 0: 10000. WAITING (see above) lasts at most this */
    struct ssl_ctx_st *tls; /* non-NULL: HTTPS only (httpd/cert.h makes one); the server
                               takes its own reference */
};

/* Listens on addr:port (port 0: an ephemeral port, see fair_httpd_port()).
 * o may be NULL (defaults). base is borrowed and must outlive the server.
 * *out is new. */
int fair_httpd_new(struct event_base *base, const char *addr, int port,
                   const struct fair_httpd_options *o, struct fair_httpd **out,
                   struct fair_error *err);
/* Closes the listener and every connection. Deferred requests still
 * waiting are cancelled (their cancel callbacks run) and orphaned: their
 * owner must still pass them to fair_httpd_reply(), which then only frees
 * them. NULL: no-op. */
void fair_httpd_free(struct fair_httpd *srv);
/* method "GET" or "POST"; path exact ("/api/v1/reports/gpu-hours"). ctx is
 * borrowed. Returns FAIR_ERANGE when the table is full, FAIR_EINVAL on a
 * duplicate. */
int fair_httpd_route(struct fair_httpd *srv, const char *method, const char *path,
                     fair_httpd_handler handler, void *ctx);
/* The same for a handler that replies later (see fair_httpd_async_handler). */
int fair_httpd_route_async(struct fair_httpd *srv, const char *method, const char *path,
                           fair_httpd_async_handler handler, void *ctx);
/* The port the server listens on. */
int fair_httpd_port(const struct fair_httpd *srv);

/* Replaces the TLS context of an HTTPS server for the connections
 * accepted from now on (a renewed certificate); open connections keep
 * theirs. The server takes a reference; a plain server ignores it. */
void fair_httpd_set_tls(struct fair_httpd *srv, struct ssl_ctx_st *tls);

/* A guard: decides whether req may reach its route's handler, now or
 * later, and must then call fair_httpd_guard_done(req, ...) exactly once,
 * on the loop thread (also after a cancel, see fair_httpd_req_on_cancel).
 * authorization is the request's Authorization header (NULL when none)
 * and route_arg what fair_httpd_route_guard() gave the route (NULL when
 * nothing): both borrowed for the duration of the call. */
typedef void (*fair_httpd_guard_fn)(void *ctx, struct fair_httpd_req *req,
                                    const char *authorization, const void *route_arg);
/* Installs the guard of every route (ctx is borrowed). */
void fair_httpd_set_guard(struct fair_httpd *srv, fair_httpd_guard_fn fn, void *ctx);
/* Gives the route method+path (already registered) the argument its guard
 * gets; arg is borrowed and must outlive the server. FAIR_ENOTFOUND when
 * no such route exists. */
int fair_httpd_route_guard(struct fair_httpd *srv, const char *method, const char *path,
                           const void *arg);
/* The guard's answer (req is taken over). status 0: allowed, the route's
 * handler runs (a sync handler now, an async one gets req). Otherwise the
 * request is answered status (401, 403, 503, ...) with {"error": msg};
 * a 401 also carries `WWW-Authenticate: Bearer realm="fairshare"`. A
 * cancelled request is only freed. */
void fair_httpd_guard_done(struct fair_httpd_req *req, int status, const char *msg);
/* The route path of req ("/metrics"), borrowed, for messages. */
const char *fair_httpd_req_path(const struct fair_httpd_req *req);
/* The request's body (at most 1 MiB, the server's cap), made contiguous;
 * NULL with *len 0 when the client has gone. Borrowed until req is
 * answered. Not NUL-terminated. */
const char *fair_httpd_req_body(struct fair_httpd_req *req, size_t *len);
/* A request header (name case-insensitive), borrowed until req is
 * answered; NULL when absent or the client has gone. */
const char *fair_httpd_req_header(struct fair_httpd_req *req, const char *name);

/* Answers a deferred request and frees req (req is taken over). body is
 * borrowed and copied; content_type is borrowed. If the client has gone
 * (or the server was freed), the answer is dropped and req only freed. */
void fair_httpd_reply(struct fair_httpd_req *req, int status, const char *content_type,
                      const char *body, size_t len);
/* Asks to be told when the client goes away before the reply: fn(arg) runs
 * once, on the loop thread, and req stays valid until fair_httpd_reply().
 * fn may call fair_httpd_reply(). */
void fair_httpd_req_on_cancel(struct fair_httpd_req *req, void (*fn)(void *arg), void *arg);
/* Whether the client went away (the reply will be dropped). */
bool fair_httpd_req_cancelled(const struct fair_httpd_req *req);

struct fair_httpd_stats {
    uint64_t connections;     /* open now */
    uint64_t accepted;        /* since start */
    uint64_t header_timeouts; /* closed in WAITING at the header deadline */
    uint64_t evicted;         /* closed in WAITING to make room */
    uint64_t refused;         /* closed as soon as accepted, over the cap */
    uint64_t accept_errors;   /* accept() failures (the listener paused) */
    uint64_t deferred;        /* deferred requests waiting for their reply */
    uint64_t cancelled;       /* deferred requests whose client went away */
};
void fair_httpd_stats(const struct fair_httpd *srv, struct fair_httpd_stats *out);
/* Appends the stats in the Prometheus text format: fairshare_http_connections,
 * fairshare_http_connections_accepted_total,
 * fairshare_http_connections_closed_total{reason="header_timeout"|"evicted"|
 * "refused"}, fairshare_http_accept_errors_total,
 * fairshare_http_deferred_requests, fairshare_http_cancelled_requests_total. */
int fair_httpd_metrics(const struct fair_httpd *srv, struct fair_buf *out);

#endif
