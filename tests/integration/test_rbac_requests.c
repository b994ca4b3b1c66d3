/* config/rbac.yaml, derived from what the controller really sends. Every
 * controller the integration tests start (test_controller_*.c, test_soak.c)
 * logs its API requests (FAIR_KUBE_REQUEST_LOG, kube/client.h) to
 * FAIR_BIN_DIR/request-log/<program>.log; ctest runs this test after those
 * (fixture fair_request_log). Each request is read the way the API server's
 * authorizer reads it (helper_reqlog.h: verb, group, resource, subresource,
 * namespace, name) and compared with the Roles of config/rbac.yaml both
 * ways: every request is allowed by some rule, and every rule allows some
 * request, except the few listed in may_be_unused[] with the reason. The
 * first tests check the parts on fixed inputs, including that the
 * comparison does report a missing and an extra rule. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "base/yaml.h"
#include "helper_reqlog.h"

/* Rules that may go unused by the integration suite, and why. Keep this
 * short: a rule that nothing uses is a permission to remove. */
static const struct {
    const char *group, *res, *verb, *why;
} may_be_unused[] = {
    {NULL, NULL, NULL, NULL}, /* none today */
};

static bool allowed_unused(const struct fair_rbac_grant *g)
{
    for (size_t i = 0; may_be_unused[i].group; i++)
        if (!strcmp(g->group, may_be_unused[i].group) && !strcmp(g->res, may_be_unused[i].res) &&
            !strcmp(g->verb, may_be_unused[i].verb))
            return true;
    return false;
}

/* ---- RequestInfo on fixed paths ---- */

struct info_case {
    const char *method, *path;
    bool resource;
    const char *verb, *group, *ns, *res, *sub, *name;
};

static const struct info_case info_cases[] = {
    /* What the controller sends. */
    {"GET", "/api/v1/pods?limit=500", true, "list", "", "", "pods", "", ""},
    {"GET", "/api/v1/pods?limit=500&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", true, "list", "", "",
     "pods", "", ""},
    {"GET", "/api/v1/pods?watch=1&resourceVersion=12&allowWatchBookmarks=true", true, "watch", "",
     "", "pods", "", ""},
    {"GET", "/api/v1/nodes?watch=true", true, "watch", "", "", "nodes", "", ""},
    {"POST", "/api/v1/namespaces/team-a/pods/p-1/binding", true, "create", "", "team-a", "pods",
     "binding", "p-1"},
    {"POST", "/api/v1/namespaces/team-a/pods/p-1/eviction", true, "create", "", "team-a", "pods",
     "eviction", "p-1"},
    {"PATCH", "/api/v1/namespaces/team-a/pods/p-1/status", true, "patch", "", "team-a", "pods",
     "status", "p-1"},
    {"POST", "/api/v1/namespaces/team-a/events", true, "create", "", "team-a", "events", "", ""},
    {"PATCH", "/apis/fairshare.dev/v1alpha1/queues/qa/status", true, "patch", "fairshare.dev", "",
     "queues", "status", "qa"},
    {"GET", "/apis/fairshare.dev/v1alpha1/projects?limit=500", true, "list", "fairshare.dev", "",
     "projects", "", ""},
    {"GET", "/apis/coordination.k8s.io/v1/namespaces/fairshare-system/leases/l", true, "get",
     "coordination.k8s.io", "fairshare-system", "leases", "", "l"},
    {"POST", "/apis/coordination.k8s.io/v1/namespaces/fairshare-system/leases", true, "create",
     "coordination.k8s.io", "fairshare-system", "leases", "", ""},
    {"PUT", "/apis/coordination.k8s.io/v1/namespaces/fairshare-system/leases/l", true, "update",
     "coordination.k8s.io", "fairshare-system", "leases", "", "l"},
    /* The rest of the rules. */
    {"GET", "/api/v1/namespaces/a/pods?watch=false", true, "list", "", "a", "pods", "", ""},
    {"GET", "/api/v1/namespaces/a/pods?watch=0", true, "list", "", "a", "pods", "", ""},
    {"GET", "/api/v1/namespaces/a/pods?watch", true, "watch", "", "a", "pods", "", ""},
    {"GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dx&watch=1", true, "watch", "",
     "a", "pods", "", "x"},
    {"GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3D%3Dx", true, "list", "", "a",
     "pods", "", "x"},
    {"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn", true, "list", "", "", "pods", "", ""},
    {"HEAD", "/api/v1/namespaces/a/pods/x", true, "get", "", "a", "pods", "", "x"},
    {"DELETE", "/api/v1/namespaces/a/pods", true, "deletecollection", "", "a", "pods", "", ""},
    {"DELETE", "/api/v1/namespaces/a/pods/x", true, "delete", "", "a", "pods", "", "x"},
    {"GET", "/api/v1/watch/namespaces/a/pods", true, "watch", "", "a", "pods", "", ""},
    {"GET", "/api/v1/watch/pods/x", true, "watch", "", "", "pods", "", "x"},
    {"GET", "/api/v1/proxy/nodes/n/x/y", true, "proxy", "", "", "nodes", "", "n"},
    {"GET", "/api/v1/namespaces/a", true, "get", "", "a", "namespaces", "", "a"},
    {"PUT", "/api/v1/namespaces/a/status", true, "update", "", "a", "namespaces", "status", "a"},
    {"PUT", "/api/v1/namespaces/a/finalize", true, "update", "", "a", "namespaces", "finalize",
     "a"},
    {"GET", "/api/v1/namespaces", true, "list", "", "", "namespaces", "", ""},
    {"GET", "/api/v1/nodes/n/", true, "get", "", "", "nodes", "", "n"},
    {"POST", "/apis/authentication.k8s.io/v1/tokenreviews", true, "create", "authentication.k8s.io",
     "", "tokenreviews", "", ""},
    /* Non-resource requests. */
    {"GET", "/healthz", false, "get", "", "", "", "", ""},
    {"GET", "/api/v1", false, "get", "", "", "", "", ""},
    {"GET", "/apis/fairshare.dev/v1alpha1", false, "get", "", "", "", "", ""},
    {"GET", "/version?timeout=32s", false, "get", "", "", "", "", ""},
    {"GET", "/foo/bar/baz/qux", false, "get", "", "", "", "", ""},
};

static void test_request_info(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof info_cases / sizeof *info_cases; i++) {
        const struct info_case *c = &info_cases[i];
        struct fair_reqinfo q;
        if (fair_reqinfo_parse(c->method, c->path, &q) != 0)
            fail_msg("%s %s: not parsed", c->method, c->path);
        if (q.resource != c->resource || strcmp(q.verb, c->verb) || strcmp(q.group, c->group) ||
            strcmp(q.ns, c->ns) || strcmp(q.res, c->res) || strcmp(q.sub, c->sub) ||
            strcmp(q.name, c->name))
            fail_msg("%s %s: got resource=%d verb=%s group=%s ns=%s res=%s sub=%s name=%s",
                     c->method, c->path, q.resource, q.verb, q.group, q.ns, q.res, q.sub, q.name);
    }
    struct fair_reqinfo q;
    assert_int_equal(fair_reqinfo_parse("GET", "/api/v1/watch", &q), -1);
}

/* ---- RBAC matching on fixed rules ---- */

static json_t *yaml_docs(const char *text)
{
    json_t *docs = NULL;
    struct fair_error err = {0};
    if (fair_yaml_parse("test.yaml", text, strlen(text), NULL, &docs, &err))
        fail_msg("%s", err.msg);
    return docs;
}

static bool allows(const struct fair_rbac_grant *g, size_t n, const char *method, const char *path)
{
    struct fair_reqinfo q;
    assert_int_equal(fair_reqinfo_parse(method, path, &q), 0);
    for (size_t i = 0; i < n; i++)
        if (fair_rbac_allows(&g[i], &q))
            return true;
    return false;
}

static void test_rbac_matching(void **state)
{
    (void)state;
    json_t *docs = yaml_docs("kind: ClusterRole\n"
                             "metadata: {name: c}\n"
                             "rules:\n"
                             "- {apiGroups: [''], resources: [pods], verbs: [list]}\n"
                             "- {apiGroups: [''], resources: ['*/status'], verbs: [patch]}\n"
                             "- {apiGroups: [x.io], resources: ['*'], verbs: [get]}\n"
                             "---\n"
                             "kind: Role\n"
                             "metadata: {name: r, namespace: sys}\n"
                             "rules:\n"
                             "- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: "
                             "[create]}\n"
                             "- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: "
                             "[get, update], resourceNames: [mine]}\n");
    struct fair_rbac_grant *g = NULL;
    size_t n = 0;
    char why[256] = "";
    assert_int_equal(fair_rbac_grants(docs, &g, &n, why, sizeof why), 0);
    assert_int_equal(n, 1 + 1 + 1 + 1 + 2);
    assert_true(allows(g, n, "GET", "/api/v1/pods"));
    assert_true(allows(g, n, "GET", "/api/v1/namespaces/a/pods"));
    assert_false(allows(g, n, "GET", "/api/v1/namespaces/a/pods/x"));   /* get */
    assert_false(allows(g, n, "GET", "/api/v1/pods?watch=1"));          /* watch */
    assert_false(allows(g, n, "PATCH", "/api/v1/namespaces/a/pods/x")); /* pods, not status */
    assert_true(allows(g, n, "PATCH", "/api/v1/namespaces/a/pods/x/status"));
    assert_true(allows(g, n, "PATCH", "/api/v1/nodes/x/status")); /* any status */
    assert_false(allows(g, n, "PATCH", "/api/v1/namespaces/a/pods/x/binding"));
    assert_true(allows(g, n, "GET", "/apis/x.io/v1/things/t/sub")); /* '*' has subs */
    assert_false(allows(g, n, "GET", "/apis/y.io/v1/things/t"));
    assert_true(allows(g, n, "POST", "/apis/coordination.k8s.io/v1/namespaces/sys/leases"));
    assert_false(allows(g, n, "POST", "/apis/coordination.k8s.io/v1/namespaces/other/leases"));
    assert_true(allows(g, n, "GET", "/apis/coordination.k8s.io/v1/namespaces/sys/leases/mine"));
    assert_false(allows(g, n, "GET", "/apis/coordination.k8s.io/v1/namespaces/sys/leases/other"));
    /* A list has no name, so a rule with resourceNames never allows it. */
    assert_false(allows(g, n, "GET", "/apis/coordination.k8s.io/v1/namespaces/sys/leases"));
    assert_true(allows(g, n, "PUT", "/apis/coordination.k8s.io/v1/namespaces/sys/leases/mine"));
    free(g);
    json_decref(docs);

    g = NULL;
    n = 0;
    docs = yaml_docs("kind: ClusterRole\nmetadata: {name: c}\nrules:\n"
                     "- {nonResourceURLs: [/metrics], verbs: [get]}\n");
    assert_int_equal(fair_rbac_grants(docs, &g, &n, why, sizeof why), -1);
    assert_non_null(strstr(why, "nonResourceURLs"));
    free(g);
    json_decref(docs);
}

/* ---- the comparison ---- */

/* The distinct requests seen, as the authorizer reads them, with where one
 * of each was first seen. */
struct req_set {
    struct fair_reqinfo *q;
    char (*where)[160];
    long *count;
    size_t n, cap;
    long lines, sends, full_logs;
    const char *lease_name; /* the shipped config's */
};

static bool same_req(const struct fair_reqinfo *a, const struct fair_reqinfo *b)
{
    return a->resource == b->resource && !strcmp(a->verb, b->verb) && !strcmp(a->group, b->group) &&
           !strcmp(a->ns, b->ns) && !strcmp(a->res, b->res) && !strcmp(a->sub, b->sub) &&
           !strcmp(a->name, b->name) && (a->resource || !strcmp(a->path, b->path));
}

static void req_add(struct req_set *s, const struct fair_reqinfo *q, const char *where)
{
    /* Only names matter to RBAC (resourceNames), and only the lease's, the
     * webhook Secret's and the MutatingWebhookConfiguration's are named in
     * a rule: the names of pods, queues and projects would make every pod
     * a distinct request. */
    struct fair_reqinfo k = *q;
    if (strcmp(k.res, "leases") != 0 && strcmp(k.res, "secrets") != 0 &&
        strcmp(k.res, "mutatingwebhookconfigurations") != 0)
        k.name[0] = '\0';
    for (size_t i = 0; i < s->n; i++)
        if (same_req(&s->q[i], &k)) {
            s->count[i]++;
            return;
        }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->q = realloc(s->q, s->cap * sizeof *s->q);
        s->where = realloc(s->where, s->cap * sizeof *s->where);
        s->count = realloc(s->count, s->cap * sizeof *s->count);
        assert_true(s->q && s->where && s->count);
    }
    s->q[s->n] = k;
    snprintf(s->where[s->n], sizeof s->where[0], "%s", where);
    s->count[s->n] = 1;
    s->n++;
}

static void on_line(const struct fair_reqlog_entry *e, void *ctx)
{
    struct req_set *s = ctx;
    s->lines++;
    if (e->done)
        return;
    s->sends++;
    struct fair_reqinfo q;
    if (fair_reqinfo_parse(e->method, e->path, &q) != 0)
        fail_msg("%s:%ld: cannot read %s %s as an API request", e->file, e->line, e->method,
                 e->path);
    /* The controller touches one Lease, the one its config names. The
     * tests name it fairshare-test; the shipped config (whose name the
     * Role lists) fairshare-controller. */
    if (!strcmp(q.res, "leases") && q.name[0] && s->lease_name)
        snprintf(q.name, sizeof q.name, "%s", s->lease_name);
    const char *base = strrchr(e->file, '/');
    char where[160];
    snprintf(where, sizeof where, "%s:%ld", base ? base + 1 : e->file, e->line);
    req_add(s, &q, where);
}

static void req_set_free(struct req_set *s)
{
    free(s->q);
    free(s->where);
    free(s->count);
    memset(s, 0, sizeof *s);
}

/* API discovery (GET /api, /apis, /apis/GROUP/VERSION, ...): every
 * authenticated user may read it through the built-in system:discovery
 * ClusterRole, so no rule of ours needs to grant it. The controller asks
 * discovery whether the optional PodGroup CRDs are served. */
static bool is_discovery(const struct fair_reqinfo *q)
{
    if (q->resource || strcmp(q->verb, "get") != 0)
        return false;
    int slashes = 0;
    for (const char *c = q->path; *c; c++)
        slashes += *c == '/';
    return !strcmp(q->path, "/api") || !strcmp(q->path, "/apis") ||
           (!strncmp(q->path, "/api/", 5) && slashes == 2) ||
           (!strncmp(q->path, "/apis/", 6) && slashes <= 3);
}

/* A request as a grant would name it, for messages. */
static void describe(const struct fair_reqinfo *q, char *out, size_t n)
{
    char res[256];
    fair_reqinfo_resource(q, res, sizeof res);
    if (!q->resource)
        snprintf(out, n, "non-resource %s %s", q->verb, q->path);
    else
        snprintf(out, n, "%s %s/%s%s%s%s%s", q->verb, q->group[0] ? q->group : "core", res,
                 q->ns[0] ? " in namespace " : "", q->ns, q->name[0] ? " named " : "", q->name);
}

/* Compares both ways; appends one line per problem to report (n bytes)
 * and returns how many there are. Lines for the summary go to summary
 * (may be NULL). */
static int compare(const struct fair_rbac_grant *g, size_t ng, const struct req_set *s,
                   char *report, size_t n, FILE *summary)
{
    int problems = 0;
    size_t used = strlen(report);
    long *uses = calloc(ng + 1, sizeof *uses);
    assert_non_null(uses);
    for (size_t i = 0; i < s->n; i++) {
        bool ok = false;
        for (size_t k = 0; k < ng; k++)
            if (fair_rbac_allows(&g[k], &s->q[i])) {
                uses[k] += s->count[i];
                ok = true;
            }
        if (!ok && is_discovery(&s->q[i]))
            ok = true;
        if (!ok) {
            char d[1024];
            describe(&s->q[i], d, sizeof d);
            problems++;
            used += (size_t)snprintf(report + used, used < n ? n - used : 0,
                                     "  not granted: %s (%ld requests, first at %s)\n", d,
                                     s->count[i], s->where[i]);
        }
    }
    for (size_t k = 0; k < ng; k++) {
        if (summary)
            fprintf(summary, "rbac: %-40s %-22s %-24s %-7s%s%s used=%ld%s\n", g[k].role,
                    g[k].group[0] ? g[k].group : "core", g[k].res, g[k].verb,
                    g[k].name[0] ? " name=" : "", g[k].name, uses[k],
                    !uses[k] && allowed_unused(&g[k]) ? " (allowed unused)" : "");
        if (uses[k] || allowed_unused(&g[k]))
            continue;
        problems++;
        used += (size_t)snprintf(report + used, used < n ? n - used : 0,
                                 "  granted but never used: %s %s %s %s%s%s\n", g[k].role,
                                 g[k].group[0] ? g[k].group : "core", g[k].res, g[k].verb,
                                 g[k].name[0] ? " name=" : "", g[k].name);
    }
    free(uses);
    return problems;
}

static json_t *load_yaml(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", FAIR_SOURCE_DIR, rel);
    json_t *docs = NULL;
    struct fair_error err = {0};
    if (fair_yaml_load_file(path, NULL, &docs, &err))
        fail_msg("%s", err.msg);
    return docs;
}

static struct fair_rbac_grant *shipped_grants(size_t *n)
{
    json_t *docs = load_yaml("config/rbac.yaml");
    struct fair_rbac_grant *g = NULL;
    char why[512] = "";
    *n = 0;
    if (fair_rbac_grants(docs, &g, n, why, sizeof why))
        fail_msg("config/rbac.yaml: %s", why);
    json_decref(docs);
    return g;
}

static void add_req(struct req_set *s, const char *method, const char *path)
{
    struct fair_reqinfo q;
    assert_int_equal(fair_reqinfo_parse(method, path, &q), 0);
    req_add(s, &q, "synthetic");
}

/* What the shipped rules are for, one request each: the comparison passes
 * on these, fails when a rule is taken away (not granted) and when one is
 * added (never used). */
static void synthetic_requests(struct req_set *s)
{
    add_req(s, "GET", "/api/v1/pods?limit=500");
    add_req(s, "GET", "/api/v1/pods?watch=1&resourceVersion=1");
    add_req(s, "GET", "/api/v1/nodes?limit=500");
    add_req(s, "GET", "/api/v1/nodes?watch=1");
    add_req(s, "GET", "/api/v1/namespaces?limit=500");
    add_req(s, "GET", "/api/v1/namespaces?watch=1");
    add_req(s, "GET", "/apis/fairshare.dev/v1alpha1/projects?limit=500");
    add_req(s, "GET", "/apis/fairshare.dev/v1alpha1/projects?watch=1");
    add_req(s, "GET", "/apis/fairshare.dev/v1alpha1/queues?limit=500");
    add_req(s, "GET", "/apis/fairshare.dev/v1alpha1/queues?watch=1");
    add_req(s, "POST", "/api/v1/namespaces/a/pods/p/binding");
    add_req(s, "POST", "/api/v1/namespaces/a/pods/p/eviction");
    add_req(s, "POST", "/api/v1/namespaces/a/pods");     /* requeue of a bare pod */
    add_req(s, "DELETE", "/api/v1/namespaces/a/pods/p"); /* a victim past eviction.pdbMaxWait */
    add_req(s, "PATCH", "/api/v1/namespaces/a/pods/p/status");
    add_req(s, "POST", "/api/v1/namespaces/a/events");
    add_req(s, "PATCH", "/apis/fairshare.dev/v1alpha1/queues/q/status");
    add_req(s, "PATCH", "/apis/fairshare.dev/v1alpha1/projects/p/status");
    add_req(s, "GET", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups?limit=500");
    add_req(s, "GET", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups?watch=1");
    add_req(s, "PATCH", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/a/podgroups/g/status");
    add_req(s, "GET", "/apis/scheduling.volcano.sh/v1beta1/podgroups?limit=500");
    add_req(s, "GET", "/apis/scheduling.volcano.sh/v1beta1/podgroups?watch=1");
    add_req(s, "PATCH", "/apis/scheduling.volcano.sh/v1beta1/namespaces/a/podgroups/g/status");
    add_req(s, "GET", "/api/v1/persistentvolumeclaims?limit=500");
    add_req(s, "GET", "/api/v1/persistentvolumeclaims?watch=1");
    add_req(s, "PATCH", "/api/v1/namespaces/a/persistentvolumeclaims/c");
    add_req(s, "GET", "/api/v1/persistentvolumes?limit=500");
    add_req(s, "GET", "/api/v1/persistentvolumes?watch=1");
    add_req(s, "PATCH", "/api/v1/persistentvolumes/v");
    add_req(s, "GET", "/apis/storage.k8s.io/v1/storageclasses?limit=500");
    add_req(s, "GET", "/apis/storage.k8s.io/v1/storageclasses?watch=1");
    add_req(s, "POST", "/apis/coordination.k8s.io/v1/namespaces/fairshare-system/leases");
    add_req(s, "GET",
            "/apis/coordination.k8s.io/v1/namespaces/fairshare-system/leases/fairshare-controller");
    add_req(s, "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/fairshare-system/leases/fairshare-controller");
    add_req(s, "POST", "/apis/authentication.k8s.io/v1/tokenreviews");
    add_req(s, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews");
    /* The webhook's certificate (lib/ctl/webhookcert.c). */
    add_req(s, "GET", "/api/v1/namespaces/fairshare-system/secrets/fairshare-webhook-cert");
    add_req(s, "POST", "/api/v1/namespaces/fairshare-system/secrets");
    add_req(s, "PUT", "/api/v1/namespaces/fairshare-system/secrets/fairshare-webhook-cert");
    add_req(s, "GET",
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/fairshare");
    add_req(s, "PUT",
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/fairshare");
}

static void test_comparison_reports_missing_and_extra(void **state)
{
    (void)state;
    size_t ng = 0;
    struct fair_rbac_grant *g = shipped_grants(&ng);
    struct req_set s = {0};
    synthetic_requests(&s);
    /* Discovery needs no rule of ours (system:discovery). */
    add_req(&s, "GET", "/apis/scheduling.x-k8s.io/v1alpha1");
    char report[8192] = "";
    int problems = compare(g, ng, &s, report, sizeof report, NULL);
    if (problems)
        fail_msg("the shipped rules against one request each:\n%s", report);

    /* A rule taken away: pods/status patch. */
    struct fair_rbac_grant *less = calloc(ng, sizeof *less);
    assert_non_null(less);
    size_t nl = 0;
    for (size_t i = 0; i < ng; i++)
        if (strcmp(g[i].res, "pods/status") != 0)
            less[nl++] = g[i];
    assert_int_equal(nl, ng - 1);
    report[0] = '\0';
    assert_int_equal(compare(less, nl, &s, report, sizeof report, NULL), 1);
    assert_non_null(strstr(report, "not granted: patch core/pods/status in namespace a"));
    free(less);

    /* A rule added: pods patch, which the controller no longer needs. */
    struct fair_rbac_grant *more = calloc(ng + 1, sizeof *more);
    assert_non_null(more);
    memcpy(more, g, ng * sizeof *g);
    more[ng] = (struct fair_rbac_grant){
        .role = "ClusterRole/fairshare-controller", .res = "pods", .verb = "patch"};
    report[0] = '\0';
    assert_int_equal(compare(more, ng + 1, &s, report, sizeof report, NULL), 1);
    assert_non_null(strstr(report, "granted but never used: ClusterRole/fairshare-controller core "
                                   "pods patch"));
    free(more);

    /* A lease name the Role does not list. */
    add_req(&s, "GET", "/apis/coordination.k8s.io/v1/namespaces/fairshare-system/leases/other");
    report[0] = '\0';
    assert_int_equal(compare(g, ng, &s, report, sizeof report, NULL), 1);
    assert_non_null(strstr(report, "named other"));
    req_set_free(&s);
    free(g);
}

/* ---- the real thing ---- */

static const char *shipped_lease_name(void)
{
    static char name[256];
    json_t *docs = load_yaml("config/controller-config.yaml");
    const char *n = json_string_value(
        json_object_get(json_object_get(json_array_get(docs, 0), "leaderElection"), "leaseName"));
    assert_non_null(n);
    snprintf(name, sizeof name, "%s", n);
    json_decref(docs);
    return name;
}

static void test_rbac_matches_requests(void **state)
{
    (void)state;
    const char *dir = FAIR_BIN_DIR "/request-log";
    struct stat bin;
    assert_int_equal(stat(FAIR_BIN_DIR "/fairshare-controller", &bin), 0);
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("no %s: run the controller's integration tests first (ctest runs them before "
                 "this one)",
                 dir);
    struct req_set s = {.lease_name = shipped_lease_name()};
    int files = 0;
    struct dirent *de;
    char stale[2048] = "";
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".log") != 0)
            continue;
        char path[1024], prog[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        /* Logs of test programs that no longer exist are left out. */
        snprintf(prog, sizeof prog, "%s/tests/integration/it_%.*s", FAIR_BIN_DIR, (int)(l - 4),
                 de->d_name);
        struct stat st, pst;
        if (stat(prog, &pst) != 0 || stat(path, &st) != 0)
            continue;
        if (st.st_size == 0)
            continue;
        if (st.st_mtime < bin.st_mtime) {
            size_t u = strlen(stale);
            snprintf(stale + u, sizeof stale - u, " %s", de->d_name);
            continue;
        }
        bool full = false;
        long before = s.sends;
        assert_true(fair_reqlog_read(path, on_line, &s, &full) >= 0);
        s.full_logs += full;
        printf("rbac: %s: %ld requests\n", de->d_name, s.sends - before);
        files++;
    }
    closedir(d);
    if (stale[0]) {
        req_set_free(&s);
        fail_msg("request logs older than the controller binary:%s; run the integration tests "
                 "again (ctest -R integration)",
                 stale);
    }
    assert_true(files > 0);
    size_t ng = 0;
    struct fair_rbac_grant *g = shipped_grants(&ng);
    char report[16384] = "";
    int problems = compare(g, ng, &s, report, sizeof report, stdout);
    printf("rbac: %d logs, %ld lines, %ld requests, %zu distinct, %zu grants, %d problems%s\n",
           files, s.lines, s.sends, s.n, ng, problems,
           s.full_logs ? " (a log hit its size cap)" : "");
    for (size_t i = 0; may_be_unused[i].group; i++)
        printf("rbac: allowed unused: %s %s %s: %s\n", may_be_unused[i].group, may_be_unused[i].res,
               may_be_unused[i].verb, may_be_unused[i].why);
    fflush(stdout);
    free(g);
    req_set_free(&s);
    if (problems)
        fail_msg("config/rbac.yaml does not match the controller's requests:\n%s"
                 "(grant what is used; remove what is not, or list it in may_be_unused[] in "
                 "tests/integration/test_rbac_requests.c with the reason)",
                 report);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_info),
        cmocka_unit_test(test_rbac_matching),
        cmocka_unit_test(test_comparison_reports_missing_and_extra),
        cmocka_unit_test(test_rbac_matches_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
