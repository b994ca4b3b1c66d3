/* An asynchronous Kubernetes API client: libcurl's multi interface driven
 * by one libevent loop (CURLMOPT_SOCKETFUNCTION + CURLMOPT_TIMERFUNCTION,
 * as in libcurl's multi-event example). Connections are reused through the
 * multi handle's connection cache; at most max_host_connections at once.
 *
 * Every request completes exactly once through its callback, from the
 * event loop, unless it is cancelled first (fair_kreq_cancel() or
 * fair_kclient_free(): then the callback is never called).
 *
 * Errors: an HTTP error's body is decoded as a Kubernetes Status; the
 * response carries rc (404 FAIR_ENOTFOUND, 409 FAIR_ECONFLICT, 410
 * FAIR_EGONE, 429 FAIR_ETOOMANY, other FAIR_EHTTP; TLS failures
 * FAIR_ETLS; transport failures FAIR_EHTTP, timeouts FAIR_ETIMEDOUT), the
 * HTTP status and the Status' reason and message.
 *
 * Throttling: every request first takes a token from the client's token
 * bucket (QPS, burst). A 429 answer with Retry-After is retried after that
 * delay (capped at max_retry_after_ms, at most max_retries times) unless
 * the request has FAIR_KREQ_NO_RETRY_429 (evictions: a 429 there means a
 * PodDisruptionBudget blocks it, and the caller must see it).
 *
 * Watches are streams: each complete newline-delimited JSON event is
 * handed to the event callback as it arrives (see kube/watch.h for the
 * framing), and the done callback is called once when the stream ends.
 * Streamed LISTs (fair_kclient_list_stream()) are parsed item by item as
 * the bytes arrive (kube/liststream.h): memory is bounded by one item's
 * kept fields (max_event), not by the page, which is capped in bytes by
 * max_body only so that one request stays bounded in time.
 *
 * Isolation: a client's requests share its curl multi handle, hence its
 * connections (and HTTP/2 streams); a request waits behind the others
 * once max_host_connections are busy. Work that must never wait behind
 * bulk writes (leader election) gets a client of its own. */
#ifndef FAIR_KUBE_CLIENT_H
#define FAIR_KUBE_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "kube/config.h"
#include "kube/watch.h"

struct event_base;
struct fair_kclient; /* opaque */
struct fair_kreq;    /* opaque handle of one request in flight */

struct fair_kclient_options {
    double qps;                     /* default 50; < 0: no client-side limit */
    int burst;                      /* default 100 */
    long max_host_connections;      /* default 16 */
    long connect_timeout_ms;        /* default 10000 */
    long request_timeout_ms;        /* non-watch requests; default 60000 */
    size_t max_body;                /* largest response body, and largest
                                       page of a streamed LIST; default 64 MiB */
    size_t max_event;               /* largest watch event, and the most a
                                       streamed LIST keeps of one item; default 4 MiB */
    int max_retries;                /* 429 retries per request; default 5 */
    int64_t max_retry_after_ms;     /* cap on a Retry-After; default 30000 */
    const char *user_agent;         /* default "fairshare/0.1" */
    const struct fair_clock *clock; /* default the system clock; borrowed */
};

/* Zero fields of opt take the defaults above. */
void fair_kclient_options_default(struct fair_kclient_options *opt);

/* A new client on base (borrowed; it must outlive the client). cfg is
 * copied. opt may be NULL. */
int fair_kclient_new(struct event_base *base, const struct fair_kconfig *cfg,
                     const struct fair_kclient_options *opt, struct fair_kclient **out,
                     struct fair_error *err);
/* Cancels what is in flight (no callbacks) and frees. NULL is a no-op.
 * Not from inside a request callback. The client, like everything on the
 * loop, is used from the loop's thread only. */
void fair_kclient_free(struct fair_kclient *c);

struct event_base *fair_kclient_base(struct fair_kclient *c);
/* The options in force (defaults filled in). */
void fair_kclient_get_options(const struct fair_kclient *c, struct fair_kclient_options *out);
/* The namespace of the configuration ("default" when unset). Borrowed. */
const char *fair_kclient_namespace(const struct fair_kclient *c);

/* Extra request headers, sent with every later request of this client
 * after its own (Accept, Authorization, Content-Type). For a second hop
 * that needs a credential of its own: `fairsharectl dashboard
 * --via-apiserver` sends the user's token to the controller in
 * X-Fairshare-Authorization through the API server's service proxy, which
 * drops Authorization. Bounded: at most FAIR_KCLIENT_MAX_HEADERS; name an
 * HTTP token (RFC 9110) of at most 64 bytes, not one the client or curl
 * sets itself (Accept, Authorization, Content-Type, Content-Length, Host,
 * Transfer-Encoding, User-Agent, Connection, Cookie); value at most
 * FAIR_KCLIENT_MAX_HEADER_VALUE bytes, without CR, LF or NUL. The value is
 * copied and treated as a secret: it never appears in a log line, an error
 * message or the request log, and it is zeroed when the client is freed.
 * Returns 0, FAIR_EINVAL (bad or reserved name, bad value), FAIR_ERANGE
 * (too many, too long) or FAIR_ENOMEM. */
#define FAIR_KCLIENT_MAX_HEADERS 4
#define FAIR_KCLIENT_MAX_HEADER_VALUE 8192
int fair_kclient_add_header(struct fair_kclient *c, const char *name, const char *value,
                            struct fair_error *err);

/* The result of a request, borrowed for the duration of the callback. */
struct fair_kresponse {
    int rc;                /* 0 on 2xx, else a FAIR_E* code (see above) */
    long status;           /* HTTP status; 0 when no answer came */
    struct fair_error err; /* set when rc != 0: what failed, on which path */
    const char *reason;    /* the Status' reason ("Conflict", ...) or "" */
    const char *body;      /* NUL-terminated; "" when none */
    size_t body_len;
    json_t *json;    /* body parsed as JSON, or NULL; borrowed. Streamed
                        LISTs: the list without its items */
    int retries;     /* 429 retries done */
    size_t received; /* body bytes received (streamed LISTs: not kept) */
};

typedef void (*fair_kclient_cb)(const struct fair_kresponse *resp, void *ctx);

/* Request flags. */
#define FAIR_KREQ_NO_RETRY_429 0x1u  /* surface every 429 to the caller */
#define FAIR_KREQ_NO_RATE_LIMIT 0x2u /* bypass the token bucket (leases) */

/* A resource type: API group ("" for core), version, plural resource. */
struct fair_kres {
    const char *group;
    const char *version;
    const char *resource;
    bool namespaced;
};

extern const struct fair_kres fair_kres_pods;     /* v1 pods */
extern const struct fair_kres fair_kres_nodes;    /* v1 nodes */
extern const struct fair_kres fair_kres_namespaces; /* v1 namespaces */
extern const struct fair_kres fair_kres_events;   /* v1 events */
extern const struct fair_kres fair_kres_leases;   /* coordination.k8s.io/v1 leases */
extern const struct fair_kres fair_kres_projects; /* fairshare.dev/v1alpha1 projects */
extern const struct fair_kres fair_kres_queues;   /* fairshare.dev/v1alpha1 queues */
/* PodGroups of the scheduler-plugins coscheduling plugin and of Volcano
 * (optional CRDs: the controller checks they are served first). */
extern const struct fair_kres fair_kres_sp_podgroups; /* scheduling.x-k8s.io/v1alpha1 */
extern const struct fair_kres fair_kres_vc_podgroups; /* scheduling.volcano.sh/v1beta1 */
/* Volumes, for where a pod's claims can be reached. */
extern const struct fair_kres fair_kres_pvcs;           /* v1 persistentvolumeclaims */
extern const struct fair_kres fair_kres_pvs;            /* v1 persistentvolumes */
extern const struct fair_kres fair_kres_storageclasses; /* storage.k8s.io/v1 storageclasses */

/* Appends the API path of a resource to out:
 *   /api/v1/namespaces/NS/pods/NAME/SUB, /apis/G/V/RES/NAME, ...
 * ns NULL: all namespaces (or cluster-scoped); name and sub may be NULL.
 * Names are checked (no '/', '?', '%', not "." or "..", at most 253). */
int fair_kpath(struct fair_buf *out, const struct fair_kres *r, const char *ns, const char *name,
               const char *sub, struct fair_error *err);

/* Options of LIST and WATCH; every field may be 0/NULL. */
struct fair_klist_opts {
    const char *label_selector;
    const char *field_selector;
    long limit;                   /* LIST page size; 0: no paging */
    const char *continue_token;   /* LIST: next page */
    const char *resource_version; /* LIST: "0" for any; WATCH: start after */
    long timeout_s;               /* WATCH: server-side timeoutSeconds */
    /* WATCH: a stream that delivers no line (no event, no bookmark) for
     * stall_ms from when its transfer starts, or since its last line, is
     * closed and fails with FAIR_ETIMEDOUT ("watch stalled"). Measured on
     * the loop's timer, not by curl, so it holds whatever state the
     * transfer is in. 0: only curl's low-speed limit (660 s) applies. */
    int64_t stall_ms;
    /* WATCH and LIST: the fields of each object (event object, list item)
     * to parse (kube/jsonfilter.h, e.g. fair_ktype_pod.filter); NULL parses
     * everything. Borrowed: it must outlive the request (the ktype filters
     * are static). */
    const struct fair_jfield *filter;
};

/* The general request: method ("GET", "POST", "PUT", "PATCH", "DELETE"),
 * path (with query string, as fair_kpath() builds it), optional body (NULL:
 * none; copied) with its content type (NULL: application/json). handle may
 * be NULL; otherwise it receives a borrowed handle valid until the
 * callback runs or fair_kreq_cancel() is called. */
int fair_kclient_request(struct fair_kclient *c, const char *method, const char *path,
                         const char *content_type, const char *body, size_t body_len,
                         unsigned flags, fair_kclient_cb cb, void *ctx, struct fair_kreq **handle,
                         struct fair_error *err);

/* Cancels a request in flight; its callback will not run. */
void fair_kreq_cancel(struct fair_kreq *req);

/* Typed helpers. ns may be NULL for cluster-scoped resources. body is JSON
 * text (borrowed, copied). */
int fair_kclient_get(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                     const char *name, fair_kclient_cb cb, void *ctx, struct fair_error *err);
/* One page of a LIST (opts->limit / continue_token for paging), buffered
 * whole (at most max_body) and parsed when complete: for tests, the CLI and
 * benchmarks. The informer reads pages with fair_kclient_list_stream(). */
int fair_kclient_list(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                      const struct fair_klist_opts *opts, fair_kclient_cb cb, void *ctx,
                      struct fair_kreq **handle, struct fair_error *err);

/* One item of a streamed LIST page, borrowed for the duration of the
 * callback. */
struct fair_klist_object {
    json_t *object;   /* the item parsed through opts->filter; NULL when unreadable */
    json_t *skeleton; /* when object is NULL: fair_kskeleton_filter's fields
                         (kube/decode.h), or NULL when even those were lost */
    size_t bytes;     /* the item's size in the response */
    int rc;           /* 0; FAIR_ERANGE: its kept fields pass max_event (or
                         nest too deeply); FAIR_EPARSE: they are malformed */
    const char *why;  /* when rc != 0: what failed, in words */
};
typedef void (*fair_klist_object_cb)(const struct fair_klist_object *o, void *ctx);

/* One page of a LIST, parsed as it arrives: on_object runs for each item
 * (readable or not: an item that cannot be read never fails the page),
 * then on_done once, with resp->json the list without its items
 * (metadata.continue, metadata.resourceVersion). A page over max_body
 * bytes fails with FAIR_ERANGE (ask for a smaller limit); a page of one
 * item (opts->limit == 1) is read whatever its size, since no smaller page
 * exists and memory does not depend on it. Items already handed out by a
 * page that then fails are the caller's to drop. */
int fair_kclient_list_stream(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                             const struct fair_klist_opts *opts, fair_klist_object_cb on_object,
                             fair_kclient_cb on_done, void *ctx, struct fair_kreq **handle,
                             struct fair_error *err);
int fair_kclient_create(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                        const char *body, fair_kclient_cb cb, void *ctx, struct fair_error *err);
/* PUT; sub "status" for the status subresource, else NULL. The body's
 * metadata.resourceVersion makes it conditional (409 when stale). */
int fair_kclient_update(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                        const char *name, const char *sub, const char *body, fair_kclient_cb cb,
                        void *ctx, struct fair_error *err);
/* JSON merge patch (RFC 7386); sub "status" or NULL. */
int fair_kclient_merge_patch(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                             const char *name, const char *sub, const char *patch,
                             fair_kclient_cb cb, void *ctx, struct fair_error *err);
int fair_kclient_delete(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                        const char *name, fair_kclient_cb cb, void *ctx, struct fair_error *err);

/* POST pods/NAME/binding: binds the pod to node. uid (may be NULL) is a
 * precondition; annotations (may be NULL, n pairs) are copied onto the
 * pod by the API server with the binding. */
int fair_kclient_bind(struct fair_kclient *c, const char *ns, const char *pod, const char *uid,
                      const char *node, const char *const *annotation_kv, size_t nannotations,
                      fair_kclient_cb cb, void *ctx, struct fair_error *err);

/* POST pods/NAME/eviction with a policy/v1 Eviction. Never retried on
 * 429: resp->rc == FAIR_ETOOMANY means a PodDisruptionBudget blocks it. */
int fair_kclient_evict(struct fair_kclient *c, const char *ns, const char *pod, fair_kclient_cb cb,
                       void *ctx, struct fair_error *err);

/* A core/v1 Event about an object. type "Normal" or "Warning". */
struct fair_kevent_ref {
    const char *api_version; /* "v1", "fairshare.dev/v1alpha1" */
    const char *kind;        /* "Pod", "Queue", ... */
    const char *namespace_;  /* NULL for cluster-scoped (the Event goes to "default") */
    const char *name;
    const char *uid; /* may be NULL */
};
int fair_kclient_event(struct fair_kclient *c, const struct fair_kevent_ref *obj, const char *type,
                       const char *reason, const char *message, const char *component,
                       fair_kclient_cb cb, void *ctx, struct fair_error *err);

/* A WATCH stream from opts->resource_version (allowWatchBookmarks=true).
 * on_event runs for every event (borrowed; see kube/watch.h); on_done
 * runs once when the stream ends: resp->rc 0 for a clean end (server
 * timeout), FAIR_EGONE for 410, FAIR_ERANGE for an event over max_event,
 * FAIR_EPARSE for a malformed event, others as for any request. */
typedef void (*fair_kwatch_event_cb)(const struct fair_kwatch_event *ev, void *ctx);
int fair_kclient_watch(struct fair_kclient *c, const struct fair_kres *r, const char *ns,
                       const struct fair_klist_opts *opts, fair_kwatch_event_cb on_event,
                       fair_kclient_cb on_done, void *ctx, struct fair_kreq **handle,
                       struct fair_error *err);

/* Runs the loop until the request started with fair_kclient_request()-like
 * arguments completes, then returns its rc; body_out (may be NULL)
 * receives a copy of the body (caller frees), status_out the HTTP status.
 * For tests and the CLI: never call it from inside a loop callback. */
int fair_kclient_request_sync(struct fair_kclient *c, const char *method, const char *path,
                              const char *body, unsigned flags, long *status_out, char **body_out,
                              struct fair_error *err);

/* Observing requests, for tests.
 *
 * An observer sees every transfer of a client: FAIR_KOBSERVE_SEND when it
 * starts (a 429 retry is a new transfer), FAIR_KOBSERVE_DONE when it ends,
 * with the HTTP status (0: no answer: refused, cut or timed out before the
 * status line). A request cancelled in flight gets no DONE. path is the
 * request's path and query, as sent ("/api/v1/pods?limit=500"); method and
 * path are borrowed for the call. Called on the loop; it must not call
 * back into the client. fn NULL removes it.
 *
 * The request log does the same for a whole process without code: when
 * FAIR_KUBE_REQUEST_LOG names a file at fair_kclient_new(), every client
 * appends one line per event to it (created 0600):
 *   <wall ms> <pid> send <METHOD> <PATH?QUERY>
 *   <wall ms> <pid> done <METHOD> <PATH?QUERY> <STATUS>
 * each line in one write() on an O_APPEND descriptor, so that clients and
 * processes sharing the file never mix their lines. The file is bounded:
 * once it holds FAIR_KUBE_REQUEST_LOG_MAX bytes (default 64 MiB), a client
 * writes one "# request log full" line and stops. The integration tests
 * set it for every controller they run, to derive the RBAC rules the
 * controller needs from what it really sends (docs/reliability.md). */
#define FAIR_KUBE_REQUEST_LOG_DEFAULT_MAX ((int64_t)64 << 20)

enum fair_kobserve { FAIR_KOBSERVE_SEND, FAIR_KOBSERVE_DONE };
typedef void (*fair_kclient_observer_fn)(enum fair_kobserve what, const char *method,
                                         const char *path, long status, void *ctx);
void fair_kclient_set_observer(struct fair_kclient *c, fair_kclient_observer_fn fn, void *ctx);

/* Retry-After. Parses one response header line as curl hands it ("Name:
 * value\r\n", len bytes, not NUL-terminated). When it is Retry-After with
 * delay-seconds (RFC 9110: digits only, whitespace around them allowed),
 * returns 1 and sets *ms, capped at FAIR_KUBE_RETRY_AFTER_MAX_S; anything
 * else returns 0 and leaves *ms alone: another header, an HTTP-date (the
 * API server sends seconds), a sign, a fraction, junk. client-go also
 * reads only whole seconds (strconv.Atoi). */
#define FAIR_KUBE_RETRY_AFTER_MAX_S 86400
int fair_kretry_after_parse(const char *line, size_t len, int64_t *ms);

/* Counters, for metrics and tests. */
struct fair_kclient_stats {
    uint64_t requests; /* transfers started (retries included) */
    uint64_t retries_429;
    uint64_t errors;
    uint64_t throttled;    /* requests that waited for the token bucket */
    uint64_t watch_stalls; /* watches closed for delivering nothing (stall_ms) */
    /* The most bytes one finished request held at once for its body: a
     * buffered body, the longest watch event, or a streamed LIST's largest
     * item (kept fields) and list metadata. */
    uint64_t peak_buffer;
};
void fair_kclient_stats(const struct fair_kclient *c, struct fair_kclient_stats *out);

#endif
