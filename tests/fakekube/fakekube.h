/* fakekube: a fake Kubernetes API server for Fairshare's tests and demo.
 * This is the program's one private header: the server struct shared by
 * its files (store.c, select.c, watch.c, api.c, sim.c, tls.c, main.c).
 * One program-private header instead of one per file, because nothing
 * outside tests/fakekube includes it and the parts share one struct.
 *
 * Invariants:
 * - One event loop, no threads.
 * - Stored objects (json_t) are immutable once stored: every write builds a
 *   new object, so that history events can share them by reference.
 * - The resourceVersion counter grows by one per write; every write makes
 *   exactly one history event, so the counter is also the event sequence.
 * - A watch from rv R is served from history when R >= hist_floor
 *   (every event with rv > R is still retained), else it gets 410. */
#ifndef FAKEKUBE_H
#define FAKEKUBE_H

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

#define FK_MAX_BODY ((size_t)3 << 20) /* the real server's 3 MB request cap */
#define FK_MAX_JSON_DEPTH 100
#define FK_MAX_FAULTS 32
#define FK_CRASH_RV_GAP 100000                 /* rvs skipped after loading a crash-time save */
#define FK_MAX_WATCH_BUFFER ((size_t)64 << 20) /* slow watcher is dropped */

enum fk_type_id {
    FK_NAMESPACES,
    FK_PODS,
    FK_NODES,
    FK_EVENTS,
    FK_PDBS,
    FK_LEASES,
    FK_CRDS,
    FK_CONFIGMAPS,
    FK_PROJECTS,
    FK_QUEUES,
    FK_SP_PODGROUPS, /* scheduling.x-k8s.io PodGroups, once their CRD exists */
    FK_VC_PODGROUPS, /* scheduling.volcano.sh PodGroups, once their CRD exists */
    FK_SECRETS,
    FK_MUTATING_WEBHOOKS, /* admissionregistration.k8s.io/v1 MutatingWebhookConfigurations
                             (stored only: nothing calls them) */
    FK_JOBS,         /* batch/v1 Jobs: the simulated Job controller (sim.c) */
    FK_PVS,          /* persistentvolumes (stored only: no binder) */
    FK_PVCS,         /* persistentvolumeclaims (stored only) */
    FK_STORAGECLASSES,
    FK_NTYPES
};

struct fk_type {
    const char *group; /* "" for the core group */
    const char *version;
    const char *plural;
    const char *kind;
    const char *api_version; /* "v1" or "group/version" */
    int namespaced;
    int has_status;  /* status subresource: main writes keep the old status */
    int generation;  /* metadata.generation bumps on spec changes */
    int builtin;     /* list items omit kind/apiVersion, like typed lists */
    json_t *objects; /* "ns/name" or "name" -> object (immutable) */
    char **sorted;   /* keys in etcd order, rebuilt when dirty */
    size_t nsorted;
    int sorted_dirty;
    /* Served only while the CustomResourceDefinition of this name exists
     * (NULL: always), as a real API server serves custom resources. */
    const char *crd;
};

enum fk_etype { FK_ADDED, FK_MODIFIED, FK_DELETED };

struct fk_event {
    uint64_t rv;
    int type;    /* enum fk_type_id */
    int etype;   /* enum fk_etype */
    json_t *obj; /* the new object, or the final one for DELETED (owned) */
    json_t *old; /* the previous object, NULL for ADDED (owned) */
    char *line;  /* {"type":..,"object":..}\n, serialized once (owned) */
    size_t line_len;
};

/* A parsed label or field selector (select.c). */
enum fk_sel_op { FK_SEL_EQ, FK_SEL_NEQ, FK_SEL_EXISTS, FK_SEL_NOTEXISTS, FK_SEL_IN, FK_SEL_NOTIN };
#define FK_SEL_MAX_REQS 32
#define FK_SEL_MAX_VALUES 32
struct fk_sel_req {
    char *key;
    int op;
    char *values[FK_SEL_MAX_VALUES];
    size_t nvalues;
};
struct fk_selector {
    struct fk_sel_req reqs[FK_SEL_MAX_REQS];
    size_t nreqs;
    int is_field; /* keys are JSON paths such as spec.nodeName */
};

struct fk_watcher;
struct fk_timer;
struct fk_deferred;
struct fk_user;

struct fk_fault {
    int code;         /* 500, 503, 429, 409 or 403 */
    long remaining;   /* requests left to fail */
    char prefix[256]; /* path prefix, "" for all; ending in '$': the whole path */
    char verb[16];    /* "" for all */
    int retry_after;  /* seconds, for 429 */
};

struct fk_server {
    struct event_base *base;
    struct evhttp *http;
    SSL_CTX *ssl;
    char state_dir[512];
    char token[256];
    int port;

    uint64_t rv;
    struct fk_type types[FK_NTYPES];

    /* watch history: a ring of at most hist_cap events */
    struct fk_event *hist;
    size_t hist_cap, hist_head, hist_len;
    uint64_t hist_floor;     /* a watch from rv >= hist_floor is served */
    uint64_t continue_floor; /* continue tokens with rv < this are expired */
    uint64_t compactions;    /* /fake/compact calls: older tokens are expired */

    struct fk_watcher *watchers;
    size_t nwatchers, max_watchers;
    int bookmark_ms;

    struct fk_fault faults[FK_MAX_FAULTS];
    size_t nfaults;
    int latency_ms;
    long expire_continue; /* list requests with a continue token still to answer 410 */
    struct fk_deferred *deferred;

    /* authentication and authorisation (auth.c) */
    struct fk_user *users;
    size_t nusers;
    int review_latency_ms; /* added to the latency of TokenReviews and SubjectAccessReviews */
    int review_hold;       /* reviews are answered only at /fake/review-release */
    unsigned long token_reviews, access_reviews;

    struct fk_timer *timers;
    int grace_seconds;
    int kubelet;
    int kubelet_delay_ms;
    /* The simulated device plugin: node name -> {"<device index>":
     * "<pod key> <pod uid>"}, rebuilt from the pods when absent (sim.c). */
    json_t *gpu_devs;

    int pdb_dirty; /* a pod or PDB changed since the last fk_pdb_sync */
    int job_dirty; /* a pod or Job changed since the last fk_job_sync */
    struct event *pdb_ev;
    int persist_ms;
    int64_t persist_next_ms; /* no periodic save before this (wall ms) */
    int dirty;
    struct event *persist_ev;
    unsigned long requests;
};

/* ---- store.c: objects, resourceVersion, history, persistence ---- */
int fk_store_init(struct fk_server *s, size_t history);
void fk_store_release(struct fk_server *s);
/* The type for a URL's group, version and plural; -1 when unknown. */
/* Whether a type is served now (its CRD, if it has one, exists). */
int fk_type_served(const struct fk_server *s, int type);
int fk_type_find(const struct fk_server *s, const char *group, const char *version,
                 const char *plural);
/* Key of an object: "ns/name" (namespaced) or "name"; into out[n]. */
int fk_key(const struct fk_type *t, const char *ns, const char *name, char *out, size_t n);
/* Borrowed: the stored object or NULL. */
json_t *fk_get(struct fk_server *s, int type, const char *key);
/* Stores obj (taken) under key as a new version: sets its
 * metadata.resourceVersion, records the event and notifies watchers.
 * Returns the stored object (borrowed). */
json_t *fk_put(struct fk_server *s, int type, const char *key, json_t *obj, int etype);
/* Removes key; the DELETED event carries a copy of the final object with a
 * new resourceVersion. Returns that final object (new reference). */
json_t *fk_remove(struct fk_server *s, int type, const char *key);
/* Keys in etcd order (borrowed, valid until the next write). */
char **fk_sorted_keys(struct fk_server *s, int type, size_t *n);
/* The history event with the given rv, or NULL when not retained. */
const struct fk_event *fk_hist_at(const struct fk_server *s, uint64_t rv);
void fk_hist_compact(struct fk_server *s);
/* Saves DIR/state.json; clean=1 only for the save at exit. */
int fk_persist(struct fk_server *s, int clean);
int fk_load(struct fk_server *s);
/* metadata helpers: borrowed strings, "" when missing */
const char *fk_meta_str(const json_t *obj, const char *field);
const char *fk_path_str(const json_t *obj, const char *dotted);
void fk_now_rfc3339(char *out, size_t n);
void fk_random_alnum(char *out, size_t n);
void fk_uuid(char *out, size_t n);

/* ---- select.c ---- */
/* Parses a selector; on error returns -1 and writes a message to err. */
int fk_selector_parse(const char *s, int is_field, struct fk_selector *sel, char *err, size_t n);
void fk_selector_release(struct fk_selector *sel);
int fk_selector_match(const struct fk_selector *sel, const json_t *obj);
/* Field selector keys allowed for a type; -1 and a message when not. */
int fk_selector_check_fields(const struct fk_selector *sel, int type, char *err, size_t n);

/* ---- patch.c ---- */
/* Merge patches take target (a reference) and return the result (new
 * reference) or NULL on allocation failure. */
json_t *fk_merge_patch(json_t *target, const json_t *patch);
json_t *fk_strategic_merge_patch(json_t *target, const json_t *patch);
/* Applies RFC 6902 operations to doc in place; -1 and a message on error
 * (doc may then be partly patched: callers patch a copy). */
int fk_json_patch(json_t *doc, const json_t *ops, char *err, size_t n);

/* ---- watch.c ---- */
int fk_watch_start(struct fk_server *s, struct evhttp_request *req, int type, const char *ns,
                   struct evkeyvalq *query);
void fk_watch_notify(struct fk_server *s, const struct fk_event *ev);
/* Closes every watch; abrupt=1 closes the connections, 0 ends the streams. */
size_t fk_watch_drop_all(struct fk_server *s, int abrupt);
void fk_watch_release_all(struct fk_server *s);
/* Hangs every open watch of type (-1: all): see watch.c. Returns how many. */
size_t fk_watch_stall(struct fk_server *s, int type);
/* The connection close callback shared by all connections. */
void fk_on_close(struct evhttp_connection *evcon, void *arg);

/* ---- auth.c: TokenReview, SubjectAccessReview and their users ---- */
#define FK_MAX_USERS 64
/* Answers POST /apis/authentication.k8s.io/v1/tokenreviews and
 * /apis/authorization.k8s.io/v1/subjectaccessreviews; 0 for other paths. */
int fk_auth_handle(struct fk_server *s, struct evhttp_request *req, const char *path, int method);
/* POST /fake/users and /fake/review-latency; 0 for other names. */
int fk_auth_fake(struct fk_server *s, struct evhttp_request *req, const char *what,
                 struct evkeyvalq *q);
void fk_auth_release(struct fk_server *s);

/* ---- api.c ---- */
void fk_api_handle(struct evhttp_request *req, void *arg);
/* Sends body (taken) with code, after the configured latency. */
void fk_reply(struct fk_server *s, struct evhttp_request *req, int code, json_t *body);
/* The same after delay_ms (0: now), whatever the configured latency. */
void fk_reply_after(struct fk_server *s, struct evhttp_request *req, int code, json_t *body,
                    int delay_ms);
/* The same when fk_release_held() runs (tests hold an answer back). */
void fk_reply_held(struct fk_server *s, struct evhttp_request *req, int code, json_t *body);
/* Sends every held answer now; returns how many. */
size_t fk_release_held(struct fk_server *s);
/* The request's body as a JSON object (new reference), or NULL when it was
 * answered with an error (413, 400). */
json_t *fk_read_body(struct fk_server *s, struct evhttp_request *req);
json_t *fk_status(int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fk_deferred_cancel_conn(struct fk_server *s, struct evhttp_connection *evcon);
void fk_deferred_release_all(struct fk_server *s);

/* ---- sim.c: timers for graceful deletion and the simulated kubelet ---- */
enum fk_timer_kind { FK_TIMER_FINALIZE, FK_TIMER_RUN, FK_TIMER_SUCCEED };
int fk_timer_add(struct fk_server *s, int kind, int type, const char *key, const char *uid,
                 long delay_ms);
void fk_timers_release(struct fk_server *s);
/* Called after each pod write: schedules kubelet transitions. */
void fk_sim_pod_written(struct fk_server *s, const char *key, const json_t *pod);
/* After load: reschedules graceful deletions and kubelet transitions. */
void fk_sim_resume(struct fk_server *s);
int fk_sim_create_nodes(struct fk_server *s, int nodes, int gpus, const char *model);
/* Deletes a pod the way the API does: graceful when grace > 0 and the pod
 * is bound and not terminal, else immediately. Returns the object to
 * answer with (new reference). */
json_t *fk_delete_object(struct fk_server *s, int type, const char *key, long grace);

/* PDB helpers (policy/v1 semantics). */
int fk_pod_ready(const json_t *pod); /* Running, Ready=True, not terminating */
int fk_label_selector_matches(const json_t *sel, const json_t *obj); /* LabelSelector */
/* expected: matching non-terminal pods in the PDB's namespace; healthy:
 * those ready; desired: from minAvailable or maxUnavailable. */
void fk_pdb_counts(struct fk_server *s, const json_t *pdb, long *expected, long *healthy,
                   long *desired);
/* The disruption controller: writes each PDB's status when it changed. */
void fk_pdb_sync(struct fk_server *s);
/* The simulated Job controller: keeps min(parallelism, completions -
 * succeeded) pods of each Job active, creating them from its template,
 * and writes the Job's status (docs/fakekube.md). */
void fk_job_sync(struct fk_server *s);
/* What the pod strategy sets on create (schedulerName, restartPolicy,
 * terminationGracePeriodSeconds, a Pending status). */
void fk_pod_defaults(struct fk_server *s, json_t *pod);
void fk_namespace_name_label(json_t *ns, const char *name);

/* ---- tls.c ---- */
/* Loads or creates DIR/ca.{crt,key} and DIR/server.{crt,key}; makes ssl. */
int fk_tls_setup(struct fk_server *s);
/* Writes DIR/kubeconfig (and DIR/ca.crt exists already). */
int fk_write_kubeconfig(struct fk_server *s);

#endif
