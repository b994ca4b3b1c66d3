/* Shared code of the controller's integration tests (test_controller_*.c):
 * runs build/fairshare-controller as a real process against the fake API
 * server over real HTTPS, creates Projects, Queues and pods through the
 * API, and polls the API (never sleeping a fixed time) until a condition
 * holds or a generous deadline passes. Header-only (static functions), so
 * that each test program stays one file plus this. */
#ifndef FAIR_TEST_CONTROLLER_COMMON_H
#define FAIR_TEST_CONTROLLER_COMMON_H

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helper_fakekube.h"

/* Deadline of every wait: generous, since the machine is shared. */
#define WAIT_MS 30000

/* A controller process. Its /healthz and /readyz are on health_port
 * (plain HTTP); /metrics, reports and the dashboard on port, over HTTPS
 * with the fake API server's certificate (signed by the fake's CA) and
 * authorised through the fake's TokenReview and SubjectAccessReview with
 * the fake's admin token, unless plain is set (http.secureServing false:
 * plain HTTP, no authentication) or self_signed (no certificate files:
 * ctl_get() then skips verification). */
struct ctl {
    pid_t pid;
    int port;
    int health_port;
    char log[400];
    char ledger[400];
    char config[400];
    const char *identity;
    bool plain;
    bool self_signed;
    char token[128]; /* sent by ctl_get() (the fake's admin token) */
    char ca[320];    /* trusted by ctl_get() (the fake's CA) */
    char cert[320], key[320];
};

static __attribute__((unused)) long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static __attribute__((unused)) void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Polls expr every 50 ms until it holds or ms pass; evaluates to whether
 * it held. */
#define WAIT_UNTIL(expr, ms)                                                                       \
    ({                                                                                             \
        long long deadline_ = now_ms() + (ms);                                                     \
        bool ok_ = false;                                                                          \
        for (;;) {                                                                                 \
            if (expr) {                                                                            \
                ok_ = true;                                                                        \
                break;                                                                             \
            }                                                                                      \
            if (now_ms() > deadline_)                                                              \
                break;                                                                             \
            nap(50);                                                                               \
        }                                                                                          \
        ok_;                                                                                       \
    })

/* Everything a test started, so that a failed test (cmocka jumps out of
 * it) still stops its processes: tc_teardown() kills what is left. The
 * structs must outlive the test function: tests declare them static. */
static struct ctl *tc_ctls[16];
static int tc_nctls;
static struct fair_fake *tc_fakes[8];
static int tc_nfakes;

static __attribute__((unused)) void tc_track_ctl(struct ctl *c)
{
    for (int i = 0; i < tc_nctls; i++)
        if (tc_ctls[i] == c)
            return;
    if (tc_nctls < 16)
        tc_ctls[tc_nctls++] = c;
}

static __attribute__((unused)) int tc_fake_start(struct fair_fake *f,
                                                 const struct fair_fake_opts *o)
{
    memset(f, 0, sizeof *f);
    int rc = fair_fake_start(f, o);
    if (rc == 0 && tc_nfakes < 8)
        tc_fakes[tc_nfakes++] = f;
    return rc;
}

static __attribute__((unused)) int tc_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < tc_nctls; i++)
        if (tc_ctls[i]->pid > 0) {
            kill(tc_ctls[i]->pid, SIGKILL);
            waitpid(tc_ctls[i]->pid, NULL, 0);
            tc_ctls[i]->pid = 0;
        }
    for (int i = 0; i < tc_nfakes; i++)
        fair_fake_release(tc_fakes[i]);
    tc_nctls = tc_nfakes = 0;
    return 0;
}

static __attribute__((unused)) int free_port(void)
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

static __attribute__((unused)) void ctl_dump_log(const struct ctl *c, int lines)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tail -n %d '%s' >&2", lines, c->log);
    if (system(cmd) != 0)
        fprintf(stderr, "(no controller log)\n");
}

/* The controller's request log (FAIR_KUBE_REQUEST_LOG, kube/client.h):
 * every controller a test program starts appends the requests it sends to
 * FAIR_BIN_DIR/request-log/<program>.log, which the program empties at its
 * first start. integration/test_rbac_requests reads them all and compares
 * the verbs used with config/rbac.yaml (docs/reliability.md, "RBAC from
 * the requests"). */
#ifdef FAIR_TEST_NAME
#define CTL_REQUEST_LOG FAIR_BIN_DIR "/request-log/" FAIR_TEST_NAME ".log"
#else
#define CTL_REQUEST_LOG FAIR_BIN_DIR "/request-log/unnamed.log"
#endif

static __attribute__((unused)) const char *ctl_request_log(void)
{
    static bool emptied;
    if (!emptied) {
        mkdir(FAIR_BIN_DIR "/request-log", 0755);
        int fd = open(CTL_REQUEST_LOG, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            close(fd);
        emptied = true;
    }
    return CTL_REQUEST_LOG;
}

/* Starts the controller against fake; extra arguments may be NULL-ended
 * (NULL: none). The ledger and the log live in the fake's state dir. */
static __attribute__((unused)) int ctl_start_args(struct ctl *c, struct fair_fake *f,
                                                  const char *tag, const char *const *extra)
{
    if (!c->port)
        c->port = free_port();
    while (!c->health_port || c->health_port == c->port)
        c->health_port = free_port();
    snprintf(c->token, sizeof c->token, "%s", f->token);
    snprintf(c->ca, sizeof c->ca, "%s", f->ca_path);
    snprintf(c->cert, sizeof c->cert, "%s/server.crt", f->dir);
    snprintf(c->key, sizeof c->key, "%s/server.key", f->dir);
    snprintf(c->log, sizeof c->log, "%s/controller-%s.log", f->dir, tag);
    if (!c->ledger[0])
        snprintf(c->ledger, sizeof c->ledger, "%s/ledger-%s.db", f->dir, tag);
    char listen[64], health[64], bin[512];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", c->port);
    snprintf(health, sizeof health, "127.0.0.1:%d", c->health_port);
    snprintf(bin, sizeof bin, "%s/fairshare-controller", FAIR_BIN_DIR);
    const char *argv[48];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "--kubeconfig";
    argv[n++] = f->kubeconfig;
    argv[n++] = "--ledger";
    argv[n++] = c->ledger;
    argv[n++] = "--listen";
    argv[n++] = listen;
    argv[n++] = "--health-listen";
    argv[n++] = health;
    if (c->plain) {
        argv[n++] = "--secure-serving=false";
    } else if (!c->self_signed) {
        argv[n++] = "--tls-cert-file";
        argv[n++] = c->cert;
        argv[n++] = "--tls-key-file";
        argv[n++] = c->key;
    }
    if (c->config[0]) {
        argv[n++] = "--config";
        argv[n++] = c->config;
    }
    if (c->identity) {
        argv[n++] = "--pod-name";
        argv[n++] = c->identity;
    }
    for (int i = 0; extra && extra[i] && n < 46; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    const char *reqlog = ctl_request_log();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(c->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        setenv("FAIR_KUBE_REQUEST_LOG", reqlog, 1);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    c->pid = pid;
    tc_track_ctl(c);
    return 0;
}

/* The leaderElection lines of a replica set sharing the Lease
 * fairshare-system/fairshare-test (DURATION, RENEW, RETRY: durations). */
#define CTL_LEASE(duration, renew, retry)                                                          \
    "leaderElection:\n  enabled: true\n  leaseName: fairshare-test\n"                              \
    "  leaseNamespace: fairshare-system\n  leaseDuration: " duration "\n  renewDeadline: " renew   \
    "\n  retryPeriod: " retry "\n"

/* Writes a controller config, the ControllerConfig header and the YAML
 * lines of fmt, to FAKEDIR/config-NAME.yaml; its path into path (n bytes). */
static __attribute__((unused, format(printf, 5, 6))) void config_write(char *path, size_t n,
                                                                       const struct fair_fake *f,
                                                                       const char *name,
                                                                       const char *fmt, ...)
{
    snprintf(path, n, "%s/config-%s.yaml", f->dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("apiVersion: config.fairshare.dev/v1alpha1\nkind: ControllerConfig\n", fp);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(fp, fmt, ap);
    va_end(ap);
    assert_int_equal(fclose(fp), 0);
}

static __attribute__((unused)) int ctl_start(struct ctl *c, struct fair_fake *f, const char *tag)
{
    const char *extra[] = {"--leader-elect=false", NULL};
    return ctl_start_args(c, f, tag, extra);
}

static __attribute__((unused)) size_t sink(char *p, size_t s, size_t n, void *ud)
{
    struct {
        char *d;
        size_t len;
    } *b = ud;
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

/* GET path: /healthz and /readyz from http://127.0.0.1:HEALTH_PORT, the
 * rest from https://127.0.0.1:PORT with c->token, trusting c->ca (or from
 * http:// when c->plain). token NULL: none. Returns the body (malloc'd). */
static __attribute__((unused)) char *ctl_get_as(const struct ctl *c, const char *path,
                                                const char *token, long *code)
{
    struct {
        char *d;
        size_t len;
    } b = {NULL, 0};
    char url[512], auth[300];
    bool health = !strcmp(path, "/healthz") || !strcmp(path, "/readyz");
    bool tls = !health && !c->plain;
    snprintf(url, sizeof url, "%s://127.0.0.1:%d%s", tls ? "https" : "http",
             health ? c->health_port : c->port, path);
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    struct curl_slist *hdrs = NULL;
    if (tls && token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(hdrs, auth);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    }
    if (tls && c->self_signed) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (tls) {
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    *code = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    if (!b.d)
        b.d = strdup("");
    return b.d;
}

/* ctl_get_as() with the fake's admin token, which may read everything. */
static __attribute__((unused)) char *ctl_get(const struct ctl *c, const char *path, long *code)
{
    return ctl_get_as(c, path, c->token, code);
}

static __attribute__((unused)) bool ctl_ready(const struct ctl *c)
{
    long code = 0;
    free(ctl_get(c, "/readyz", &code));
    return code == 200;
}

/* The value of a metric line that starts with `series` (name{labels}), or
 * -1 when absent. */
static __attribute__((unused)) double ctl_metric(const struct ctl *c, const char *series)
{
    long code = 0;
    char *body = ctl_get(c, "/metrics", &code);
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

static __attribute__((unused)) bool ctl_alive(struct ctl *c)
{
    if (!c->pid)
        return false;
    int st;
    pid_t r = waitpid(c->pid, &st, WNOHANG);
    if (r == c->pid) {
        c->pid = 0;
        return false;
    }
    return true;
}

/* SIGTERM and wait (at most 20 s, then SIGKILL). Returns the exit status,
 * or -1 when it had to be killed or died by a signal. */
static __attribute__((unused)) int ctl_stop(struct ctl *c)
{
    if (!c->pid)
        return -1;
    kill(c->pid, SIGTERM);
    long long deadline = now_ms() + 20000;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(c->pid, &st, WNOHANG);
        if (r == c->pid)
            break;
        if (now_ms() > deadline) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &st, 0);
            c->pid = 0;
            return -1;
        }
        nap(20);
    }
    c->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static __attribute__((unused)) void ctl_kill9(struct ctl *c)
{
    if (!c->pid)
        return;
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
    c->pid = 0;
}

/* ---- objects ---- */

static __attribute__((unused)) void must_create(struct fair_fake *f, const char *path,
                                                const char *body)
{
    long code = 0;
    char *resp = NULL;
    if (fair_fake_request(f, "POST", path, body, &code, &resp) != 0 || code != 201) {
        fprintf(stderr, "POST %s -> %ld %s\n", path, code, resp ? resp : "");
        free(resp);
        fail_msg("could not create an object");
    }
    free(resp);
}

/* namespaces: a JSON array text such as "[\"team-a\"]". */
static __attribute__((unused)) void mk_project(struct fair_fake *f, const char *name,
                                               const char *gpus, const char *namespaces,
                                               const char *default_queue)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\","
             "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":%s,"
             "\"guaranteed\":{\"gpu\":\"%s\"}%s%s%s}}",
             name, namespaces, gpus, default_queue ? ",\"defaultQueue\":\"" : "",
             default_queue ? default_queue : "", default_queue ? "\"" : "");
    must_create(f, "/apis/fairshare.dev/v1alpha1/projects", body);
}

static __attribute__((unused)) void mk_queue(struct fair_fake *f, const char *name,
                                             const char *project, const char *gpus, int weight)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\","
             "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"project\":\"%s\","
             "\"guaranteed\":{\"gpu\":\"%s\"},\"overQuotaWeight\":%d}}",
             name, project, gpus, weight);
    must_create(f, "/apis/fairshare.dev/v1alpha1/queues", body);
}

/* A pod asking for `gpus` whole GPUs (NULL: none) or the annotation
 * fraction (NULL: none). labels/annotations/spec_extra: extra JSON members
 * such as ",\"a\":\"b\"" (NULL: none). queue NULL: no queue label. */
static __attribute__((unused)) void mk_pod_spec(struct fair_fake *f, const char *ns,
                                                const char *name, const char *queue,
                                                const char *gpus, const char *fraction,
                                                const char *labels, const char *annotations,
                                                const char *spec_extra, int grace)
{
    char body[4096], path[256], lab[1024], ann[1024], res[256];
    snprintf(lab, sizeof lab, "{\"app\":\"test\"%s%s%s%s}",
             queue ? ",\"fairshare.dev/queue\":\"" : "", queue ? queue : "", queue ? "\"" : "",
             labels ? labels : "");
    snprintf(ann, sizeof ann, "{\"test\":\"1\"%s%s%s%s}",
             fraction ? ",\"fairshare.dev/gpu-fraction\":\"" : "", fraction ? fraction : "",
             fraction ? "\"" : "", annotations ? annotations : "");
    if (gpus)
        snprintf(res, sizeof res, "{\"limits\":{\"nvidia.com/gpu\":\"%s\"}}", gpus);
    else
        snprintf(res, sizeof res, "{\"requests\":{\"cpu\":\"100m\"}}");
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\",\"labels\":%s,\"annotations\":%s},"
             "\"spec\":{\"schedulerName\":\"fairshare\",\"terminationGracePeriodSeconds\":%d,"
             "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":%s}]%s}}",
             name, ns, lab, ann, grace, res, spec_extra ? spec_extra : "");
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    must_create(f, path, body);
}

static __attribute__((unused)) void mk_pod_full(struct fair_fake *f, const char *ns,
                                                const char *name, const char *queue,
                                                const char *gpus, const char *fraction,
                                                const char *labels, const char *annotations,
                                                int grace)
{
    mk_pod_spec(f, ns, name, queue, gpus, fraction, labels, annotations, NULL, grace);
}

static __attribute__((unused)) void mk_pod(struct fair_fake *f, const char *ns, const char *name,
                                           const char *queue, const char *gpus)
{
    mk_pod_spec(f, ns, name, queue, gpus, NULL, NULL, NULL, NULL, 0);
}

/* ---- queries ---- */

static __attribute__((unused)) json_t *list(struct fair_fake *f, const char *path)
{
    long code = 0;
    json_t *j = fair_fake_request_json(f, "GET", path, NULL, &code);
    if (code != 200) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* A live pod is bound and neither finished nor being deleted. */
static __attribute__((unused)) bool pod_live_bound(const json_t *p)
{
    const char *node = fair_fake_json_str(p, "spec.nodeName");
    const char *phase = fair_fake_json_str(p, "status.phase");
    if (!node || !*node || json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
        return false;
    return !phase || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0);
}

/* Pods of namespace ns (NULL: all) that are live and bound (bound = 1),
 * or unbound (bound = 0), or present at all (bound = -1). */
static __attribute__((unused)) int count_pods(struct fair_fake *f, const char *ns, int bound)
{
    char path[256];
    if (ns)
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    else
        snprintf(path, sizeof path, "/api/v1/pods");
    json_t *l = list(f, path);
    if (!l)
        return -1;
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *node = fair_fake_json_str(p, "spec.nodeName");
        bool has_node = node && *node;
        if (bound < 0 || (bound == 1 && pod_live_bound(p)) || (bound == 0 && !has_node))
            n++;
    }
    json_decref(l);
    return n;
}

/* Pods of namespace ns that are not requeued copies (no "-rq<N>" in the
 * name, which the controller gives the bare pods it requeues). */
static __attribute__((unused)) int count_original_pods(struct fair_fake *f, const char *ns)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    json_t *l = list(f, path);
    if (!l)
        return -1;
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *name = fair_fake_json_str(p, "metadata.name");
        if (name && !strstr(name, "-rq"))
            n++;
    }
    json_decref(l);
    return n;
}

static __attribute__((unused)) json_t *get_pod(struct fair_fake *f, const char *ns,
                                               const char *name)
{
    char path[600]; /* names up to 253 characters */
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    return list(f, path);
}

/* Events with reason (NULL: any) about pod ns/name (name NULL: any pod of
 * ns; ns NULL: any). Adds the number of distinct pods to *pods when given. */
static __attribute__((unused)) int count_events(struct fair_fake *f, const char *reason,
                                                const char *ns, const char *name)
{
    json_t *l = list(f, "/api/v1/events");
    if (!l)
        return -1;
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(l, "items"), i, e)
    {
        const char *r = fair_fake_json_str(e, "reason");
        const char *ons = fair_fake_json_str(e, "involvedObject.namespace");
        const char *oname = fair_fake_json_str(e, "involvedObject.name");
        if (reason && (!r || strcmp(r, reason) != 0))
            continue;
        if (ns && (!ons || strcmp(ons, ns) != 0))
            continue;
        if (name && (!oname || strcmp(oname, name) != 0))
            continue;
        json_t *cnt = json_object_get(e, "count");
        n += json_is_integer(cnt) ? (int)json_integer_value(cnt) : 1;
    }
    json_decref(l);
    return n;
}

/* The message of the newest Event with reason about ns/name (malloc'd) or
 * NULL. */
static __attribute__((unused)) char *event_message(struct fair_fake *f, const char *reason,
                                                   const char *ns, const char *name)
{
    json_t *l = list(f, "/api/v1/events");
    char *out = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(l, "items"), i, e)
    {
        const char *r = fair_fake_json_str(e, "reason");
        if (!r || strcmp(r, reason) != 0 ||
            strcmp(fair_fake_json_str(e, "involvedObject.name") ?: "", name) ||
            strcmp(fair_fake_json_str(e, "involvedObject.namespace") ?: "", ns))
            continue;
        free(out);
        out = strdup(fair_fake_json_str(e, "message") ?: "");
    }
    json_decref(l);
    return out;
}

/* The status of a Queue (new reference) or NULL. */
static __attribute__((unused)) json_t *queue_status(struct fair_fake *f, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/fairshare.dev/v1alpha1/queues/%s", name);
    json_t *q = list(f, path);
    json_t *st = q ? json_incref(json_object_get(q, "status")) : NULL;
    json_decref(q);
    return st;
}

/* status.<field>.gpu of a Queue as text, compared with want. */
static __attribute__((unused)) bool queue_gpu_is(struct fair_fake *f, const char *name,
                                                 const char *field, const char *want)
{
    json_t *st = queue_status(f, name);
    const char *v =
        st ? json_string_value(json_object_get(json_object_get(st, field), "gpu")) : NULL;
    bool ok = v && strcmp(v, want) == 0;
    json_decref(st);
    return ok;
}

/* Field field ("reason", "message") of the pod's condition of type
 * (malloc'd; "" when the condition lacks it), or NULL when it has no such
 * condition. With status "False"/"True" in *status_out when given (64
 * bytes). */
static __attribute__((unused)) char *pod_condition_field(struct fair_fake *f, const char *ns,
                                                         const char *name, const char *type,
                                                         const char *field, char *status_out)
{
    json_t *p = get_pod(f, ns, name);
    char *out = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(p, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (!t || strcmp(t, type) != 0)
            continue;
        free(out);
        out = strdup(json_string_value(json_object_get(c, field)) ?: "");
        if (status_out)
            snprintf(status_out, 64, "%s", json_string_value(json_object_get(c, "status")) ?: "");
    }
    json_decref(p);
    return out;
}

/* The reason of the pod's condition of type, as above. */
static __attribute__((unused)) char *pod_condition(struct fair_fake *f, const char *ns,
                                                   const char *name, const char *type,
                                                   char *status_out)
{
    return pod_condition_field(f, ns, name, type, "reason", status_out);
}

/* Deletes the pod at once (grace period 0). */
static __attribute__((unused)) void delete_pod(struct fair_fake *f, const char *ns,
                                               const char *name)
{
    char path[256];
    long code = 0;
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0", ns, name);
    json_decref(fair_fake_request_json(f, "DELETE", path, NULL, &code));
    assert_int_equal(code, 200);
}

/* The message of the pod's condition of type, as above. */
static __attribute__((unused)) char *pod_condition_message(struct fair_fake *f, const char *ns,
                                                           const char *name, const char *type)
{
    return pod_condition_field(f, ns, name, type, "message", NULL);
}

/* Whether that message holds part. */
static __attribute__((unused)) bool pod_condition_message_has(struct fair_fake *f, const char *ns,
                                                              const char *name, const char *type,
                                                              const char *part)
{
    char *m = pod_condition_message(f, ns, name, type);
    bool ok = m && strstr(m, part);
    free(m);
    return ok;
}

static __attribute__((unused)) bool pod_condition_is(struct fair_fake *f, const char *ns,
                                                     const char *name, const char *type,
                                                     const char *reason)
{
    char *r = pod_condition(f, ns, name, type, NULL);
    bool ok = r && strcmp(r, reason) == 0;
    free(r);
    return ok;
}

/* The pod's node ("" when unbound; malloc'd) and its gpu-devices annotation
 * (malloc'd or NULL). */
static __attribute__((unused)) char *pod_node(struct fair_fake *f, const char *ns, const char *name,
                                              char **devices)
{
    json_t *p = get_pod(f, ns, name);
    char *node = strdup(fair_fake_json_str(p, "spec.nodeName") ?: "");
    if (devices) {
        const char *d = json_string_value(
            json_object_get(json_object_get(json_object_get(p, "metadata"), "annotations"),
                            "fairshare.dev/gpu-devices"));
        *devices = d ? strdup(d) : NULL;
    }
    json_decref(p);
    return node;
}

/* Starts a fake cluster of nodes x gpus with the kubelet, and a ready
 * controller (no leader election). */
static __attribute__((unused)) void start_all(struct fair_fake *fake, struct ctl *c, int nodes,
                                              int gpus, const char *tag)
{
    struct fair_fake_opts o = {
        .nodes = nodes, .gpus_per_node = gpus, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(fake, &o), 0);
    assert_int_equal(ctl_start(c, fake, tag), 0);
    if (!WAIT_UNTIL(ctl_ready(c), WAIT_MS)) {
        ctl_dump_log(c, 40);
        fail_msg("controller not ready");
    }
}

static __attribute__((unused)) void stop_all(struct fair_fake *fake, struct ctl *c)
{
    int rc = ctl_stop(c);
    if (rc != 0)
        ctl_dump_log(c, 60);
    assert_int_equal(rc, 0); /* a clean exit; under ASan, no leaks */
    assert_int_equal(fair_fake_stop(fake), 0);
    fair_fake_release(fake);
}

static __attribute__((unused)) void mk_namespaces(struct fair_fake *f, const char *const *ns)
{
    for (int i = 0; ns[i]; i++)
        if (fair_fake_create_namespace(f, ns[i]) != 0)
            fail_msg("namespace %s", ns[i]);
}

#endif
