/* Integration-test helper: reads the controller's request log
 * (FAIR_KUBE_REQUEST_LOG, kube/client.h), turns each request into what the
 * API server's authorizer sees (k8s.io/apiserver's RequestInfo: verb, API
 * group, resource, subresource, namespace, name), and matches it against
 * RBAC rules read from a manifest. Used by test_rbac_requests (are the
 * rules of config/rbac.yaml exactly the ones the controller uses?) and by
 * test_soak (bind attempts on pods already bound). */
#ifndef FAIR_TEST_HELPER_REQLOG_H
#define FAIR_TEST_HELPER_REQLOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One request as the authorizer sees it. The rules follow
 * NewRequestInfo() in k8s.io/apiserver/pkg/endpoints/request/requestinfo.go:
 *  - /api/V/... (core, group "") and /apis/G/V/... are resource requests
 *    when they have a resource part; anything else (/healthz, /apis,
 *    /apis/G/V) is a non-resource request, verb = the method in lower case;
 *  - a leading /watch/ or /proxy/ part is the verb ("special verbs");
 *  - otherwise POST create, GET and HEAD get, PUT update, PATCH patch,
 *    DELETE delete;
 *  - namespaces/NS/RES/... is namespaced; namespaces/NS alone, or followed
 *    by status or finalize, is the namespace object itself;
 *  - the parts after the resource are name and subresource;
 *  - get without a name is list, or watch when ?watch= is not "0" or
 *    "false"; there a fieldSelector metadata.name=X names the object;
 *  - delete without a name is deletecollection. */
struct fair_reqinfo {
    bool resource; /* a resource request */
    char verb[24];
    char group[128];
    char version[32];
    char ns[128]; /* "" when cluster-wide or cluster-scoped */
    char res[128];
    char sub[64];
    char name[256];
    char path[512]; /* the path without the query (non-resource requests) */
};

/* Fills *out from a method and a path with its query ("/api/v1/pods?
 * watch=1"). Returns 0, or -1 when the path cannot be read (a special verb
 * with nothing after it, a part too long for the struct). */
int fair_reqinfo_parse(const char *method, const char *path_query, struct fair_reqinfo *out);

/* "pods/status" for a subresource, else "pods" (n bytes at out). */
void fair_reqinfo_resource(const struct fair_reqinfo *q, char *out, size_t n);

/* One line of a request log (see kube/client.h for the format). */
struct fair_reqlog_entry {
    int64_t ms; /* wall clock */
    long pid;   /* the process that sent it */
    bool done;  /* a "done" line (else "send") */
    char method[16];
    const char *path; /* path and query; borrowed for the callback */
    long status;      /* done lines: the HTTP status, 0 for no answer */
    const char *file; /* the log it came from */
    long line;
};
typedef void (*fair_reqlog_fn)(const struct fair_reqlog_entry *e, void *ctx);

/* Calls fn for every line of the log at path. Returns the number of lines
 * read, or -1 when the file cannot be read; *full (may be NULL) tells
 * whether a writer hit the size cap ("# request log full"). A malformed
 * line fails the running cmocka test. */
long fair_reqlog_read(const char *path, fair_reqlog_fn fn, void *ctx, bool *full);

/* One RBAC grant: a rule of a Role or ClusterRole expanded to a single
 * API group, resource ("pods", "pods/status", "*"), verb and resource
 * name ("" when the rule has no resourceNames). */
struct fair_rbac_grant {
    char role[128]; /* "ClusterRole/x" or "Role/ns/x", for messages */
    char ns[128];   /* a Role's namespace; "" for a ClusterRole */
    char group[128];
    char res[128];
    char verb[24];
    char name[256];
};

/* The grants of every Role and ClusterRole in docs (the documents of a
 * YAML file, as base/yaml.h gives them), appended to *out (n of them;
 * the caller frees *out with free()). Returns 0, or -1 with a message in
 * why when a rule cannot be read (nonResourceURLs count as unreadable:
 * the controller must not need any). */
int fair_rbac_grants(json_t *docs, struct fair_rbac_grant **out, size_t *n, char *why,
                     size_t whylen);

/* Whether grant g allows request q, as the RBAC authorizer decides
 * (k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac: VerbMatches,
 * APIGroupMatches, ResourceMatches: "*", "res/sub", or a star followed
 * by "/sub" for that subresource of any resource; and
 * ResourceNameMatches, under which a request without a name, such as a
 * create or a list, never matches a rule that lists names); a Role
 * grants only in its own namespace. */
bool fair_rbac_allows(const struct fair_rbac_grant *g, const struct fair_reqinfo *q);

#endif
