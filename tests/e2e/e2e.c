/* The end-to-end suite's cluster access, scenario bookkeeping, kubectl and
 * controller processes (see e2e.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "e2e.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/yaml.h"
#include "kube/client.h"
#include "kube/config.h"

#define MAX_TRACKED 256
#define MAX_CTLS 8

static struct {
    struct event_base *base;
    struct fair_kclient *kc;
    char kubeconfig[1024];
    char kubectl[1024];
    char runid[16];
    char dir[256];
    char scheduler[64];
    char nodes[E2E_NODES][256];
    /* The running scenario's objects, deleted in reverse order. */
    char *paths[MAX_TRACKED];
    int npaths;
    char *namespaces[MAX_TRACKED];
    int nnamespaces;
    struct e2e_ctl *ctls[MAX_CTLS];
    int nctls;
} E;

long long e2e_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void e2e_nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

const char *e2e_runid(void)
{
    return E.runid;
}

const char *e2e_dir(void)
{
    return E.dir;
}

const char *e2e_scheduler(void)
{
    return E.scheduler;
}

const char *e2e_node(int i)
{
    return i >= 0 && i < E2E_NODES ? E.nodes[i] : "";
}

/* ---- API requests ---- */

long e2e_req(const char *method, const char *path, const char *body, json_t **out)
{
    long status = 0;
    char *text = NULL;
    struct fair_error err = {0};
    if (out)
        *out = NULL;
    fair_kclient_request_sync(E.kc, method, path, body, 0, &status, &text, &err);
    if (out && text && *text)
        *out = json_loads(text, 0, NULL);
    free(text);
    return status;
}

json_t *e2e_get(const char *path)
{
    json_t *j = NULL;
    long code = e2e_req("GET", path, NULL, &j);
    if (code != 200) {
        json_decref(j);
        return NULL;
    }
    return j;
}

void e2e_create(const char *path, const char *fmt, ...)
{
    char body[16384];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof body);
    json_t *resp = NULL;
    long code = e2e_req("POST", path, body, &resp);
    if (code != 201) {
        char *txt = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
        fprintf(stderr, "POST %s -> %ld %s\n", path, code, txt ? txt : "");
        free(txt);
        json_decref(resp);
        fail_msg("could not create an object at %s", path);
    }
    json_decref(resp);
}

const char *e2e_str(const json_t *j, const char *dotted)
{
    char part[128];
    const char *p = dotted;
    const json_t *cur = j;
    while (cur && *p) {
        size_t len = strcspn(p, ".");
        if (len >= sizeof part)
            return NULL;
        memcpy(part, p, len);
        part[len] = '\0';
        p += len;
        if (*p == '.')
            p++;
        cur = json_object_get(cur, part);
    }
    return json_string_value(cur);
}

/* Percent-encodes a label selector for a query string. */
static void encode_query(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (; *in && o + 4 < n; in++) {
        unsigned char ch = (unsigned char)*in;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '/') {
            out[o++] = (char)ch;
        } else {
            snprintf(out + o, n - o, "%%%02X", ch);
            o += 3;
        }
    }
    out[o] = '\0';
}

/* ---- setup: the cluster's shape, the CRDs ---- */

static bool find_kubectl(void)
{
    const char *env = getenv("KUBECTL");
    if (env && *env) {
        snprintf(E.kubectl, sizeof E.kubectl, "%s", env);
        return access(E.kubectl, X_OK) == 0;
    }
    /* The kubectl closest to the 1.24 server first, as ../shared/k8s's
     * env.sh picks it; then kubectl on PATH. */
    static const char *const sdk = "/usr/lib/google-cloud-sdk/bin";
    for (int minor = 20; minor <= 40; minor++) {
        char p[256];
        snprintf(p, sizeof p, "%s/kubectl.1.%d", sdk, minor);
        if (access(p, X_OK) == 0) {
            snprintf(E.kubectl, sizeof E.kubectl, "%s", p);
            return true;
        }
    }
    const char *path = getenv("PATH");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path ? path : "/usr/bin:/bin");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char p[1024];
        snprintf(p, sizeof p, "%s/kubectl", d);
        if (access(p, X_OK) == 0) {
            snprintf(E.kubectl, sizeof E.kubectl, "%s", p);
            return true;
        }
    }
    E.kubectl[0] = '\0';
    return false;
}

bool e2e_have_kubectl(void)
{
    return E.kubectl[0] != '\0';
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static long gpu_limit(const json_t *pod)
{
    long sum = 0;
    size_t i;
    json_t *ctr;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, ctr)
    {
        json_t *lim = json_object_get(json_object_get(ctr, "resources"), "limits");
        const char *v = json_string_value(json_object_get(lim, "nvidia.com/gpu"));
        if (v)
            sum += strtol(v, NULL, 10);
    }
    return sum;
}

static bool pod_terminating(const json_t *p)
{
    return json_object_get(json_object_get(p, "metadata"), "deletionTimestamp") != NULL;
}

static bool pod_finished(const json_t *p)
{
    const char *phase = e2e_str(p, "status.phase");
    return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
}

void e2e_node_gpus(int gpus[E2E_NODES])
{
    for (int i = 0; i < E2E_NODES; i++)
        gpus[i] = 0;
    json_t *l = e2e_get("/api/v1/pods");
    assert_non_null(l);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *node = e2e_str(p, "spec.nodeName");
        if (!node || pod_terminating(p) || pod_finished(p))
            continue;
        for (int k = 0; k < E2E_NODES; k++)
            if (!strcmp(node, E.nodes[k]))
                gpus[k] += (int)gpu_limit(p);
    }
    json_decref(l);
}

/* Exactly two schedulable nodes with 8 GPUs each, and none in use. */
static void check_cluster(void)
{
    json_t *l = e2e_get("/api/v1/nodes");
    if (!l)
        fail_msg("cannot list nodes with %s", E.kubeconfig);
    int n = 0;
    char names[E2E_NODES][256];
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(l, "items"), i, node)
    {
        const char *g = json_string_value(json_object_get(
            json_object_get(json_object_get(node, "status"), "allocatable"), "nvidia.com/gpu"));
        bool cordoned =
            json_is_true(json_object_get(json_object_get(node, "spec"), "unschedulable"));
        if (!g || strtol(g, NULL, 10) <= 0 || cordoned)
            continue;
        if (strtol(g, NULL, 10) != E2E_GPUS_PER_NODE)
            fail_msg("node %s has %s GPUs; the e2e suite needs %d nodes with %d GPUs each "
                     "(../shared/k8s/up.sh %d %d)",
                     e2e_str(node, "metadata.name"), g, E2E_NODES, E2E_GPUS_PER_NODE, E2E_NODES,
                     E2E_GPUS_PER_NODE);
        if (n < E2E_NODES)
            snprintf(names[n], sizeof names[0], "%s", e2e_str(node, "metadata.name"));
        n++;
    }
    json_decref(l);
    if (n != E2E_NODES)
        fail_msg("the cluster has %d schedulable GPU nodes; the e2e suite needs exactly %d with %d "
                 "GPUs each (../shared/k8s/up.sh %d %d)",
                 n, E2E_NODES, E2E_GPUS_PER_NODE, E2E_NODES, E2E_GPUS_PER_NODE);
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    for (int k = 0; k < E2E_NODES; k++)
        snprintf(E.nodes[k], sizeof E.nodes[k], "%s", names[k]);
    /* Leftovers of an earlier run may still be going away: wait for them. */
    int gpus[E2E_NODES];
    bool free_now = E2E_WAIT((e2e_node_gpus(gpus), gpus[0] + gpus[1] == 0), E2E_WAIT_MS);
    if (!free_now)
        fail_msg("%d GPUs of the e2e nodes are in use by other pods; the suite needs them free",
                 gpus[0] + gpus[1]);
}

static bool crd_established(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s", name);
    json_t *crd = e2e_get(path);
    bool ok = false;
    size_t i;
    json_t *cond;
    json_array_foreach(json_object_get(json_object_get(crd, "status"), "conditions"), i, cond)
    {
        if (!strcmp(e2e_str(cond, "type") ?: "", "Established") &&
            !strcmp(e2e_str(cond, "status") ?: "", "True"))
            ok = true;
    }
    json_decref(crd);
    return ok;
}

/* Installs the CRD files of crds/ through our client when they are missing (the admin
 * test installs them with kubectl; the other programs must not depend on
 * running after it). */
static void ensure_crds(void)
{
    static const char *const files[] = {"fairshare.dev_projects.yaml", "fairshare.dev_queues.yaml"};
    static const char *const names[] = {"projects.fairshare.dev", "queues.fairshare.dev"};
    for (int i = 0; i < 2; i++) {
        if (crd_established(names[i]))
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/crds/%s", FAIR_SOURCE_DIR, files[i]);
        json_t *docs = NULL;
        struct fair_error err = {0};
        if (fair_yaml_load_file(p, NULL, &docs, &err))
            fail_msg("%s: %s", p, err.msg);
        char *body = json_dumps(json_array_get(docs, 0), JSON_COMPACT);
        json_t *resp = NULL;
        long code =
            e2e_req("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body, &resp);
        free(body);
        json_decref(docs);
        json_decref(resp);
        if (code != 201 && code != 409)
            fail_msg("creating CRD %s: HTTP %ld", names[i], code);
        if (!E2E_WAIT(crd_established(names[i]), E2E_WAIT_MS))
            fail_msg("CRD %s is not Established", names[i]);
    }
    /* Established can come a moment before the resource is served. */
    json_t *l = NULL;
    if (!E2E_WAIT((json_decref(l), (l = e2e_get("/apis/fairshare.dev/v1alpha1/queues")) != NULL),
                  E2E_WAIT_MS))
        fail_msg("the API server does not serve fairshare.dev/v1alpha1 queues");
    json_decref(l);
}

static int setup(bool crds)
{
    const char *kc = getenv("KUBECONFIG");
    if (!kc || !*kc) {
        fprintf(stderr, "e2e: KUBECONFIG must name the cluster to test\n");
        return -1;
    }
    snprintf(E.kubeconfig, sizeof E.kubeconfig, "%s", kc);
    const char *sched = getenv("E2E_SCHEDULER");
    snprintf(E.scheduler, sizeof E.scheduler, "%s", sched && *sched ? sched : "fairshare");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(E.runid, sizeof E.runid, "r%06lx",
             ((unsigned long)ts.tv_nsec ^ ((unsigned long)getpid() << 12)) & 0xffffffUL);
    snprintf(E.dir, sizeof E.dir, "/tmp/fairshare-e2e.XXXXXX");
    if (!mkdtemp(E.dir)) {
        perror("e2e: mkdtemp");
        return -1;
    }
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    if (fair_kconfig_load_kubeconfig(E.kubeconfig, NULL, &cfg, &err)) {
        fprintf(stderr, "e2e: %s\n", err.msg);
        return -1;
    }
    E.base = event_base_new();
    struct fair_kclient_options o = {.qps = -1};
    int rc = E.base ? fair_kclient_new(E.base, &cfg, &o, &E.kc, &err) : -1;
    fair_kconfig_release(&cfg);
    if (rc) {
        fprintf(stderr, "e2e: client: %s\n", err.msg);
        return -1;
    }
    find_kubectl();
    check_cluster();
    if (crds)
        ensure_crds();
    fprintf(stderr, "e2e: run %s on %s (nodes %s, %s), kubectl %s, work folder %s\n", E.runid,
            E.kubeconfig, E.nodes[0], E.nodes[1], E.kubectl[0] ? E.kubectl : "(none)", E.dir);
    return 0;
}

int e2e_setup(void **state)
{
    (void)state;
    return setup(true);
}

int e2e_setup_no_crds(void **state)
{
    (void)state;
    return setup(false);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int e2e_teardown(void **state)
{
    (void)state;
    e2e_scenario_end();
    fair_kclient_free(E.kc);
    E.kc = NULL;
    if (E.base)
        event_base_free(E.base);
    E.base = NULL;
    const char *keep = getenv("E2E_KEEP");
    if (!keep || strcmp(keep, "1") != 0)
        remove_dir(E.dir);
    return 0;
}

/* ---- scenarios ---- */

void e2e_scenario_begin(const char *name, char *prefix, size_t n)
{
    int w = snprintf(prefix, n, "e2e-%s-%s", name, E.runid);
    assert_true(w > 0 && (size_t)w < n);
    fprintf(stderr, "e2e: scenario %s\n", prefix);
}

void e2e_track(const char *path)
{
    assert_true(E.npaths < MAX_TRACKED);
    E.paths[E.npaths++] = strdup(path);
}

static int live_pods(const char *ns)
{
    struct e2e_counts c = e2e_count(ns, NULL);
    return c.total;
}

static void delete_pods_now(const char *ns)
{
    char path[512];
    /* Jobs first, so that the Job controller makes no new pods. */
    snprintf(path, sizeof path, "/apis/batch/v1/namespaces/%s/jobs", ns);
    e2e_req(
        "DELETE", path,
        "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"Background\"}",
        NULL);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    e2e_req("DELETE", path,
            "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0}", NULL);
}

void e2e_scenario_end(void)
{
    for (int i = 0; i < E.nctls; i++)
        if (E.ctls[i]->pid > 0)
            e2e_ctl_kill9(E.ctls[i]);
    E.nctls = 0;
    if (!E.kc)
        return;
    for (int i = 0; i < E.nnamespaces; i++)
        delete_pods_now(E.namespaces[i]);
    for (int i = E.npaths - 1; i >= 0; i--) {
        e2e_req("DELETE", E.paths[i], NULL, NULL);
        free(E.paths[i]);
    }
    E.npaths = 0;
    for (int i = 0; i < E.nnamespaces; i++) {
        const char *ns = E.namespaces[i];
        if (!E2E_WAIT((delete_pods_now(ns), live_pods(ns) == 0), E2E_WAIT_MS))
            fprintf(stderr, "e2e: pods of %s are still there\n", ns);
        char path[512];
        snprintf(path, sizeof path, "/api/v1/namespaces/%s", ns);
        e2e_req("DELETE", path, NULL, NULL);
        free(E.namespaces[i]);
    }
    E.nnamespaces = 0;
}

int e2e_scenario_teardown(void **state)
{
    (void)state;
    e2e_scenario_end();
    return 0;
}

void e2e_namespace(const char *ns)
{
    assert_true(E.nnamespaces < MAX_TRACKED);
    e2e_create("/api/v1/namespaces",
               "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    E.namespaces[E.nnamespaces++] = strdup(ns);
    /* Pods need the namespace's default ServiceAccount (the service
     * account admission plugin refuses pods before it exists). */
    char path[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/serviceaccounts/default", ns);
    json_t *sa = NULL;
    if (!E2E_WAIT((json_decref(sa), (sa = e2e_get(path)) != NULL), E2E_WAIT_MS))
        fail_msg("namespace %s has no default ServiceAccount", ns);
    json_decref(sa);
}

void e2e_project(const char *name, const char *ns, const char *gpus, const char *dq)
{
    e2e_create("/apis/fairshare.dev/v1alpha1/projects",
               "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\","
               "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"],"
               "\"guaranteed\":{\"gpu\":\"%s\"}%s%s%s}}",
               name, ns, gpus, dq ? ",\"defaultQueue\":\"" : "", dq ? dq : "", dq ? "\"" : "");
    char path[512];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/projects/%s", name);
    e2e_track(path);
}

void e2e_queue(const char *name, const char *project, const char *gpus, int weight)
{
    char w[64] = "";
    if (weight > 0)
        snprintf(w, sizeof w, ",\"overQuotaWeight\":%d", weight);
    e2e_create("/apis/fairshare.dev/v1alpha1/queues",
               "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\","
               "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"project\":\"%s\","
               "\"guaranteed\":{\"gpu\":\"%s\"}%s}}",
               name, project, gpus, w);
    char path[512];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/queues/%s", name);
    e2e_track(path);
}

void e2e_pod_res(const char *ns, const char *name, const char *queue, const char *res,
                 const char *labels, const char *annotations)
{
    char path[512], lab[1024];
    snprintf(lab, sizeof lab, "{\"app\":\"e2e\"%s%s%s%s}",
             queue ? ",\"fairshare.dev/queue\":\"" : "", queue ? queue : "", queue ? "\"" : "",
             labels ? labels : "");
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    e2e_create(path,
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
               "\"labels\":%s,\"annotations\":{\"e2e\":\"1\"%s}},"
               "\"spec\":{\"schedulerName\":\"%s\",\"terminationGracePeriodSeconds\":0,"
               "\"containers\":[{\"name\":\"main\",\"image\":\"registry.k8s.io/pause:3.7\","
               "\"resources\":%s}]}}",
               name, lab, annotations ? annotations : "", E.scheduler, res);
}

void e2e_pod(const char *ns, const char *name, const char *queue, const char *gpus,
             const char *labels, const char *annotations)
{
    char res[256];
    if (gpus)
        snprintf(res, sizeof res,
                 "{\"limits\":{\"nvidia.com/gpu\":\"%s\"},\"requests\":{\"cpu\":\"100m\","
                 "\"memory\":\"64Mi\"}}",
                 gpus);
    else
        snprintf(res, sizeof res, "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}");
    e2e_pod_res(ns, name, queue, res, labels, annotations);
}

void e2e_pods(const char *ns, const char *prefix, int n, const char *queue, const char *gpus,
              const char *labels)
{
    for (int i = 0; i < n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        e2e_pod(ns, name, queue, gpus, labels, NULL);
    }
}

void e2e_job(const char *ns, const char *name, int n, const char *queue, const char *spec_extra)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/batch/v1/namespaces/%s/jobs", ns);
    e2e_create(path,
               "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"},"
               "\"spec\":{\"parallelism\":%d,\"completions\":%d,\"backoffLimit\":100,"
               "\"template\":{\"metadata\":{\"labels\":{\"fairshare.dev/queue\":\"%s\"}},"
               "\"spec\":{\"schedulerName\":\"%s\",\"restartPolicy\":\"Never\","
               "\"terminationGracePeriodSeconds\":0%s,\"containers\":[{\"name\":\"main\","
               "\"image\":\"registry.k8s.io/pause:3.7\",\"resources\":{\"limits\":"
               "{\"nvidia.com/gpu\":\"1\"},\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}]}"
               "}}}",
               name, n, n, queue ? queue : ns, E.scheduler, spec_extra ? spec_extra : "");
}

struct e2e_counts e2e_count(const char *ns, const char *sel)
{
    struct e2e_counts c = {0};
    char path[1024], q[512] = "";
    if (sel) {
        char enc[400];
        encode_query(sel, enc, sizeof enc);
        snprintf(q, sizeof q, "?labelSelector=%s", enc);
    }
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods%s", ns, q);
    json_t *l = e2e_get(path);
    if (!l) {
        c.total = -1;
        return c;
    }
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *node = e2e_str(p, "spec.nodeName");
        const char *phase = e2e_str(p, "status.phase");
        bool term = pod_terminating(p);
        c.total++;
        if (term)
            c.terminating++;
        if (!node || !*node)
            c.pending++;
        else if (!term && !pod_finished(p))
            c.bound++;
        if (!term && phase && !strcmp(phase, "Running"))
            c.running++;
    }
    json_decref(l);
    return c;
}

int e2e_events(const char *ns, const char *reason)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/events", ns);
    json_t *l = e2e_get(path);
    if (!l)
        return -1;
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(l, "items"), i, e)
    {
        const char *r = e2e_str(e, "reason");
        if (reason && (!r || strcmp(r, reason) != 0))
            continue;
        json_t *cnt = json_object_get(e, "count");
        n += json_is_integer(cnt) && json_integer_value(cnt) > 0 ? (int)json_integer_value(cnt) : 1;
    }
    json_decref(l);
    return n;
}

char *e2e_pod_reason(const char *ns, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    json_t *p = e2e_get(path);
    char *out = NULL;
    size_t i;
    json_t *cond;
    json_array_foreach(json_object_get(json_object_get(p, "status"), "conditions"), i, cond)
    {
        if (!strcmp(e2e_str(cond, "type") ?: "", "PodScheduled") && e2e_str(cond, "reason"))
            out = strdup(e2e_str(cond, "reason"));
    }
    json_decref(p);
    return out;
}

/* For a failing test: every pod of ns with its node, phase, whether it is
 * terminating, and its PodScheduled reason and message. */
void e2e_dump_pods(const char *ns)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    json_t *l = e2e_get(path);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *reason = "", *msg = "";
        size_t k;
        json_t *cond;
        json_array_foreach(json_object_get(json_object_get(p, "status"), "conditions"), k, cond)
        {
            if (!strcmp(e2e_str(cond, "type") ?: "", "PodScheduled")) {
                reason = e2e_str(cond, "reason") ?: "";
                msg = e2e_str(cond, "message") ?: "";
            }
        }
        fprintf(stderr, "e2e: pod %s/%s node=%s phase=%s%s reason=%s msg=%s\n", ns,
                e2e_str(p, "metadata.name") ?: "?", e2e_str(p, "spec.nodeName") ?: "-",
                e2e_str(p, "status.phase") ?: "-",
                e2e_str(p, "metadata.deletionTimestamp") ? " terminating" : "", reason, msg);
    }
    json_decref(l);
}

/* ---- kubectl ---- */

int e2e_kubectl(struct fair_buf *out, const char *const *args)
{
    assert_true(e2e_have_kubectl());
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/kubectl.XXXXXX", E.dir);
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    const char *argv[40];
    int n = 0;
    argv[n++] = E.kubectl;
    for (int i = 0; args[i] && n < 38; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
        if (chdir(FAIR_SOURCE_DIR) != 0)
            _exit(126);
        setenv("KUBECONFIG", E.kubeconfig, 1);
        execv(E.kubectl, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    fair_buf_reset(out);
    char chunk[4096];
    ssize_t r;
    lseek(fd, 0, SEEK_SET);
    while ((r = read(fd, chunk, sizeof chunk)) > 0)
        assert_int_equal(fair_buf_append(out, chunk, (size_t)r), 0);
    close(fd);
    unlink(tmpl);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- the controller ---- */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

struct sink {
    char *d;
    size_t len;
};

static size_t sink_write(char *p, size_t s, size_t n, void *ud)
{
    struct sink *b = ud;
    size_t add = s * n;
    char *nd = realloc(b->d, b->len + add + 1);
    if (!nd)
        return 0;
    memcpy(nd + b->len, p, add);
    b->d = nd;
    b->len += add;
    b->d[b->len] = '\0';
    return add;
}

/* GET http://127.0.0.1:PORT/path (the health port for /healthz and
 * /readyz): the body (malloc'd, "" when none). */
static char *ctl_http(const struct e2e_ctl *c, const char *path, long *code)
{
    struct sink b = {NULL, 0};
    char url[256];
    bool health = !strcmp(path, "/healthz") || !strcmp(path, "/readyz");
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", health ? c->health_port : c->port, path);
    CURL *h = curl_easy_init();
    *code = 0;
    if (h) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
        if (curl_easy_perform(h) == CURLE_OK)
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
        curl_easy_cleanup(h);
    }
    return b.d ? b.d : strdup("");
}

static bool ctl_ready(struct e2e_ctl *c)
{
    long code = 0;
    free(ctl_http(c, "/readyz", &code));
    return code == 200;
}

void e2e_ctl_dump(const struct e2e_ctl *c, int lines)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "tail -n %d '%s' >&2", lines, c->log);
    if (system(cmd) != 0)
        fprintf(stderr, "(no controller log)\n");
}

void e2e_ctl_start(struct e2e_ctl *c, const char *tag, const char *extra)
{
    if (!c->port)
        c->port = free_port();
    while (!c->health_port || c->health_port == c->port)
        c->health_port = free_port();
    assert_true(c->port > 0 && c->health_port > 0);
    snprintf(c->log, sizeof c->log, "%s/controller-%s.log", E.dir, tag);
    if (!c->ledger[0])
        snprintf(c->ledger, sizeof c->ledger, "%s/ledger-%s.db", E.dir, tag);
    snprintf(c->config, sizeof c->config, "%s/config-%s.yaml", E.dir, tag);
    FILE *f = fopen(c->config, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: config.fairshare.dev/v1alpha1\nkind: ControllerConfig\n"
            "schedulerName: %s\nleaderElection:\n  enabled: false\n%s\n",
            E.scheduler, extra ? extra : "");
    assert_int_equal(fclose(f), 0);
    char listen[96], health[64], bin[512];
    snprintf(listen, sizeof listen, "%s:%d", c->listen_host[0] ? c->listen_host : "127.0.0.1",
             c->port);
    snprintf(health, sizeof health, "127.0.0.1:%d", c->health_port);
    snprintf(bin, sizeof bin, "%s/fairshare-controller", FAIR_BIN_DIR);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(c->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execl(bin, bin, "--kubeconfig", E.kubeconfig, "--config", c->config, "--ledger", c->ledger,
              "--listen", listen, "--health-listen", health,
              c->secure ? "--secure-serving=true" : "--secure-serving=false", (char *)NULL);
        _exit(127);
    }
    c->pid = pid;
    bool tracked = false;
    for (int i = 0; i < E.nctls; i++)
        tracked = tracked || E.ctls[i] == c;
    if (!tracked && E.nctls < MAX_CTLS)
        E.ctls[E.nctls++] = c;
    if (!E2E_WAIT(ctl_ready(c), E2E_WAIT_MS)) {
        e2e_ctl_dump(c, 40);
        fail_msg("fairshare-controller did not become ready");
    }
}

int e2e_ctl_stop(struct e2e_ctl *c)
{
    if (c->pid <= 0)
        return -1;
    kill(c->pid, SIGTERM);
    long long deadline = e2e_now_ms() + 30000;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(c->pid, &st, WNOHANG);
        if (r == c->pid)
            break;
        if (e2e_now_ms() > deadline) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &st, 0);
            c->pid = 0;
            return -1;
        }
        e2e_nap(50);
    }
    c->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void e2e_ctl_kill9(struct e2e_ctl *c)
{
    if (c->pid <= 0)
        return;
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
    c->pid = 0;
}

double e2e_ctl_metric(struct e2e_ctl *c, const char *series)
{
    if (c->secure)
        return -1;
    long code = 0;
    char *body = ctl_http(c, "/metrics", &code);
    double v = -1;
    size_t n = strlen(series);
    for (char *line = body; line && *line;) {
        char *end = strchr(line, '\n');
        if (strncmp(line, series, n) == 0 && line[n] == ' ')
            v = strtod(line + n + 1, NULL);
        line = end ? end + 1 : NULL;
    }
    free(body);
    return v;
}
