/* Authentication and authorisation of HTTP requests by the Kubernetes API
 * server, the way kube-rbac-proxy does it: the request's bearer token is
 * checked with a TokenReview (authentication.k8s.io/v1), then the user it
 * names with a SubjectAccessReview (authorization.k8s.io/v1) for the
 * permission of the route (a virtual resource such as get
 * reports.fairshare.dev, or a non-resource URL such as get /metrics).
 *
 * It is a guard of lib/httpd (httpd.h, fair_httpd_set_guard): requests
 * wait, deferred, while the reviews run as asynchronous requests of a
 * lib/kube client on the same loop; nothing blocks the loop.
 *
 * Answers: no or malformed token 401; a token the API server does not
 * accept 401; a user without the permission 403; reviews that fail or do
 * not both answer within timeout_ms 503 (never cached); more than
 * max_in_flight different (token, permission) pairs under review at once:
 * 503 at once.
 *
 * Design note: a cache entry's life. Entries are keyed by (SHA-256 of the
 * token, permission); the token itself is never kept.
 *
 *   (none)   --request, under max_in_flight----------> REVIEWING (TokenReview sent)
 *   REVIEWING --token accepted---------------------> REVIEWING (SubjectAccessReview sent)
 *   REVIEWING --token refused / access refused / allowed--> DECIDED (401 / 403 / allowed)
 *   REVIEWING --error, or timeout_ms passed-------> removed (every waiter gets 503)
 *   DECIDED  --allow_ttl_ms or deny_ttl_ms passed--> removed at the next lookup
 *   DECIDED  --more than cache_size decided--------> the least recently used removed
 *
 * Requests for a REVIEWING entry wait on it (one pair of reviews however
 * many requests arrive); a client that goes away leaves the wait, and the
 * reviews still complete and fill the cache. fair_auth_guard() and the
 * callbacks run on the loop thread only. */
#ifndef FAIR_HTTPD_AUTH_H
#define FAIR_HTTPD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "httpd/httpd.h"

struct fair_auth;
struct fair_kclient;

/* The permission a route needs: either an API resource (group set) or a
 * non-resource URL (path set). Static data: routes keep a pointer. */
struct fair_auth_perm {
    const char *verb;     /* "get" */
    const char *group;    /* "fairshare.dev"; NULL for a non-resource URL */
    const char *resource; /* "reports" */
    const char *path;     /* "/metrics"; NULL for a resource */
    const char *hint;     /* appended to a 403's message: which role grants it */
};

#define FAIR_AUTH_MAX_TOKEN 8192 /* longer bearer tokens are refused (401) */
/* When a request has no Authorization header, its token may come in this
 * header instead ("X-Fairshare-Authorization: Bearer TOKEN", same syntax and
 * size limit): the API server's service proxy does not pass the caller's
 * Authorization header on to the service. It is reviewed exactly like an
 * Authorization header (TokenReview + SubjectAccessReview), so it grants
 * nothing more; Authorization wins when both are present. */
#define FAIR_AUTH_ALT_HEADER "X-Fairshare-Authorization"

struct fair_auth_options {
    struct fair_kclient *kc;        /* required, borrowed: the reviews go through it */
    const char *namespace_;         /* namespace of resource checks; NULL: cluster-wide */
    int64_t timeout_ms;             /* both reviews of a request; 0: 5000 */
    int64_t allow_ttl_ms;           /* an allowed decision is reused this long; 0: never */
    int64_t deny_ttl_ms;            /* a 401 or 403 is reused this long; 0: never */
    size_t cache_size;              /* decided entries kept; 0: 4096 */
    int max_in_flight;              /* entries under review at once; 0: 64 */
    const struct fair_clock *clock; /* NULL: the system clock; borrowed */
};

/* base is borrowed (the kclient's loop); strings of o are copied. */
int fair_auth_new(struct event_base *base, const struct fair_auth_options *o,
                  struct fair_auth **out, struct fair_error *err);
/* Cancels the reviews in flight and answers their waiters 503. NULL: no-op. */
void fair_auth_free(struct fair_auth *a);

/* The guard (fair_httpd_guard_fn): ctx is the struct fair_auth, route_arg a
 * const struct fair_auth_perm * (NULL: refused with 403, so that a route
 * without a permission is closed, not open). */
void fair_auth_guard(void *ctx, struct fair_httpd_req *req, const char *authorization,
                     const void *route_arg);

struct fair_auth_stats {
    uint64_t allowed;         /* requests let through */
    uint64_t unauthenticated; /* 401 */
    uint64_t forbidden;       /* 403 */
    uint64_t unavailable;     /* 503: review failed, timed out, or too many in flight */
    uint64_t cache_hits;      /* decisions taken from the cache */
    uint64_t token_reviews;   /* TokenReviews sent */
    uint64_t access_reviews;  /* SubjectAccessReviews sent */
    uint64_t review_errors;   /* reviews that failed or timed out */
    uint64_t in_flight;       /* entries under review now */
    uint64_t entries;         /* decided entries cached now */
};
void fair_auth_stats(const struct fair_auth *a, struct fair_auth_stats *out);
/* Prometheus text: fairshare_http_auth_requests_total{decision=...},
 * fairshare_http_auth_cache_hits_total, fairshare_http_auth_reviews_total{kind=...},
 * fairshare_http_auth_review_errors_total, fairshare_http_auth_reviews_in_flight,
 * fairshare_http_auth_cache_entries. */
int fair_auth_metrics(const struct fair_auth *a, struct fair_buf *out);

#endif
