/* Integration-test helper: starts, stops, kills and restarts the fake
 * Kubernetes API server (FAIR_BIN_DIR/fakekube) as a child process with a
 * temporary state dir (under $TMPDIR when it is set and at most 64
 * characters, else /tmp), and talks to it over real TLS with libcurl.
 *
 * Typical use:
 *   struct fair_fake fake;
 *   struct fair_fake_opts o = {.nodes = 2, .kubelet = 1, .grace_seconds = 1};
 *   assert_int_equal(fair_fake_start(&fake, &o), 0);
 *   // fake.kubeconfig, fake.base_url, fake.token, fake.ca_path
 *   long code; char *body;
 *   fair_fake_request(&fake, "GET", "/api/v1/nodes", NULL, &code, &body);
 *   free(body);
 *   fair_fake_release(&fake); // stops it (SIGTERM) and removes the state dir
 *
 * Lifecycle: fair_fake_start -> (stop | kill9) -> restart -> ... ->
 * fair_fake_release. A restart keeps the state dir, the port, the token and
 * the CA, so a client's kubeconfig stays valid; the server's watch history
 * is empty after it, so watches from an older resourceVersion get 410.
 * State reaches disk on SIGTERM and every persist_ms (default 2 s), so after
 * fair_fake_kill9 the last writes may be lost, as with a crash (and the
 * server then skips 100,000 resourceVersions so that none is reused).
 *
 * Simulated pods: with .kubelet, the annotations
 * sim.fairshare.dev/duration-seconds: "N" (Succeeded N s after Running) and
 * sim.fairshare.dev/exit-code: "C" (Failed with exit code C instead).
 * Debugging: FAIR_FAKEKUBE_LOG_LEVEL=debug logs every request to
 * DIR/fakekube.log; FAIR_KEEP_FAKEKUBE_DIR=1 keeps DIR.
 *
 * The server gets SIGTERM when the test process dies (PR_SET_PDEATHSIG), so
 * a crashed test leaves no server behind.
 *
 * All calls are synchronous and meant for test code only (they block). */
#ifndef FAIR_TEST_HELPER_FAKEKUBE_H
#define FAIR_TEST_HELPER_FAKEKUBE_H

#include <jansson.h>
#include <sys/types.h>

/* Options; a zero field means "the server's default" (in brackets). */
struct fair_fake_opts {
    int nodes;                 /* simulated GPU nodes node-0000.. [0] */
    int gpus_per_node;         /* [8] */
    const char *gpu_model;     /* nvidia.com/gpu.product [NVIDIA-H100-80GB-HBM3] */
    int kubelet;               /* 1: bound pods become Running, then Succeeded */
    int kubelet_delay_ms;      /* bound -> Running [200]; -1 means 0 */
    int grace_seconds;         /* default terminationGracePeriodSeconds [30]; -1 means 0 */
    int history;               /* watch events retained [10000] */
    int bookmark_ms;           /* watch bookmark interval [1000]; -1 disables */
    int persist_ms;            /* state save interval [2000]; -1: only at exit */
    int max_watchers;          /* [1000] */
    const char *token;         /* bearer token [the helper's "fair-test-token"] */
    const char *extra_args[8]; /* more flags, NULL-terminated */
};

struct fair_fake {
    pid_t pid;            /* 0 when not running */
    int port;             /* kept across restarts */
    char dir[256];        /* the state dir under /tmp */
    char kubeconfig[320]; /* DIR/kubeconfig */
    char ca_path[320];    /* DIR/ca.crt: the test CA */
    char log_path[320];   /* DIR/fakekube.log: the server's output */
    char base_url[64];    /* https://127.0.0.1:PORT */
    char token[128];
    struct fair_fake_opts opts;
    void *curl; /* a kept-alive CURL handle for fair_fake_request */
};

/* Starts a server with a fresh state dir and waits until it listens (at
 * most 60 s; a restart loads the saved state first). opts may be NULL.
 * Returns 0 or -1 (a message is printed). */
int fair_fake_start(struct fair_fake *f, const struct fair_fake_opts *opts);
/* SIGTERM and wait: the server saves its state. Returns 0 when it exited
 * with status 0 (under ASan this also means it leaked nothing). */
int fair_fake_stop(struct fair_fake *f);
/* SIGKILL and wait; returns 0. */
int fair_fake_kill9(struct fair_fake *f);
/* Starts the server again on the same state dir and port. */
int fair_fake_restart(struct fair_fake *f);
/* Stops the server if running, removes the state dir, frees the handle.
 * Safe to call twice. */
void fair_fake_release(struct fair_fake *f);

/* One HTTPS request with the bearer token. body may be NULL; with a body
 * the Content-Type is application/json (or content_type when given).
 * *status gets the HTTP code; *response (may be NULL) gets the body,
 * malloc'd, to free(). Returns 0, or -1 on a transport failure. */
int fair_fake_request(struct fair_fake *f, const char *method, const char *path, const char *body,
                      long *status, char **response);
int fair_fake_request_ct(struct fair_fake *f, const char *method, const char *path,
                         const char *content_type, const char *body, long *status, char **response);
/* The same, returning the response parsed as JSON (new reference, NULL
 * when not JSON or on a transport failure). */
json_t *fair_fake_request_json(struct fair_fake *f, const char *method, const char *path,
                               const char *body, long *status);

/* Creates a namespace (an existing one is fine). Returns 0 or -1. */
int fair_fake_create_namespace(struct fair_fake *f, const char *ns);

/* The string at a dotted path in j, e.g. "metadata.name" or "status.phase"
 * (each step at most 127 bytes), borrowed from j; NULL where a step is
 * absent or the value is not a string. Keys with dots in them (label keys)
 * cannot be reached this way. */
const char *fair_fake_json_str(const json_t *j, const char *path);

/* Fault injection (see docs/fakekube.md). Return 0 or -1. */
/* The next count requests whose path starts with prefix (NULL: any; a
 * prefix ending in '$' is the whole path) and whose method is verb (NULL:
 * any) get code (500, 503, 409, 403, or 429 with a Retry-After of
 * retry_after seconds). */
int fair_fake_fail_next(struct fair_fake *f, int code, long count, const char *prefix,
                        const char *verb, int retry_after);
/* Closes every open watch connection (abrupt = 1) or ends the streams
 * cleanly (abrupt = 0). Returns the number dropped, or -1. */
long fair_fake_drop_watches(struct fair_fake *f, int abrupt);
int fair_fake_set_latency(struct fair_fake *f, int ms);
/* Forgets the watch history: watches and continue tokens from an older
 * resourceVersion then get 410. */
int fair_fake_compact(struct fair_fake *f);
/* Clears fail rules and latency. */
int fair_fake_reset_faults(struct fair_fake *f);
/* Authentication and authorisation (TokenReview, SubjectAccessReview; see
 * docs/fakekube.md). Adds a user whose bearer token is token: groups and
 * rules are JSON text (NULL: none), e.g. "[\"finance\"]" and
 * "[{\"verbs\":[\"get\"],\"apiGroups\":[\"fairshare.dev\"],\"resources\":[\"reports\"]}]"
 * (nonResourceURLs for paths such as /metrics). The admin token is in
 * system:masters. Returns 0 or -1. */
int fair_fake_add_user(struct fair_fake *f, const char *token, const char *username,
                       const char *groups, const char *rules);
/* Extra latency of every TokenReview and SubjectAccessReview answer. */
int fair_fake_set_review_latency(struct fair_fake *f, int ms);
/* hold 1: TokenReviews and SubjectAccessReviews get no answer until
 * fair_fake_hold_reviews(f, 0), which sends the held answers at once. */
int fair_fake_hold_reviews(struct fair_fake *f, int hold);
/* How many TokenReviews and SubjectAccessReviews the server received. */
int fair_fake_review_counts(struct fair_fake *f, long *token_reviews, long *access_reviews);

/* The server's objects: {"resourceVersion":"N","objects":{"pods":[...]}};
 * resource (e.g. "pods") may be NULL for all. New reference or NULL. */
json_t *fair_fake_state(struct fair_fake *f, const char *resource);

/* A watch stream read synchronously, for tests. */
struct fair_fake_watch;
/* Opens GET path (which should include watch=1) and waits (at most 10 s)
 * for the response headers, so the watch is in place on return. NULL on
 * failure. */
struct fair_fake_watch *fair_fake_watch_open(struct fair_fake *f, const char *path);
/* Waits at most timeout_ms for the next event line. Returns 1 and sets
 * *event (new reference), 0 on timeout, -1 when the stream ended (see
 * fair_fake_watch_http_status for its status). */
int fair_fake_watch_next(struct fair_fake_watch *w, json_t **event, int timeout_ms);
long fair_fake_watch_http_status(struct fair_fake_watch *w);
void fair_fake_watch_close(struct fair_fake_watch *w);

#endif
