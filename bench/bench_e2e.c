/* bench_e2e: fairshare-controller on a real Kubernetes API server (run by
 * scripts/bench-e2e.sh, which starts ../shared/k8s: 125 nodes x 8 GPUs).
 *
 *  1. Bind throughput. Per round, 1,000 pending one-GPU pods bound by (a)
 *     fairshare-controller (default settings, no leader election) and (b)
 *     a minimal binder (this program run again with --binder: one node
 *     list, one pod list, round-robin placement, N bindings in flight, no
 *     client-side rate limit; N is the best of 16, 64 and 256, tried once
 *     first); and (c) the controller already synced while 1,000 pods are
 *     created as fast as we can. The pods are deleted after each run.
 *  2. Reclaim latency. All nodes but two cordoned; queue qb (guaranteed
 *     half the GPUs) runs a pod on every GPU; the other half's owner, qa,
 *     creates its pods at once; the breakdown of the eviction and rebind.
 *
 * How times are measured. Every time is CLOCK_MONOTONIC in this process,
 * taken when the pod watch's event is handled (so each figure includes one
 * watch delivery, the same for both binders). A binder's run starts just
 * before fork(): the controller's includes exec, its informers' lists and
 * its first cycle; the minimal binder's includes exec, its node and pod
 * lists. The run ends at the last pod seen with spec.nodeName. Both binders
 * are child processes, so neither shares a loop with the watcher. */
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/yaml.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/decode.h"
#include "kube/objects.h"

#define E2E_MAX_PODS 100000
#define E2E_MAX_GROUPS 32
#define E2E_MAX_OBJS 32
#define E2E_MAX_PAGES 10000
#define E2E_NAME_MAX 254 /* a DNS subdomain and its NUL */
#define E2E_TICK_MS 50
#define E2E_CREATE_WINDOW 64 /* pods created before a binder starts */
#define E2E_BURST_WINDOW 256 /* creation-included: "as fast as the client can" */
#define E2E_DELETE_WINDOW 64
#define E2E_STOP_GRACE_S 30.0 /* SIGTERM -> SIGKILL */
#define E2E_RUN_LABEL "bench.fairshare.dev/run"

static const struct fair_kres e2e_kres_namespaces = {"", "v1", "namespaces", false};
static const struct fair_kres e2e_kres_crds = {"apiextensions.k8s.io", "v1",
                                               "customresourcedefinitions", false};
static const long e2e_calibration[] = {16, 64, 256};
#define E2E_NCAL (sizeof e2e_calibration / sizeof e2e_calibration[0])

static volatile sig_atomic_t e2e_interrupted, e2e_cleaning;

/* The first ^C makes every wait fail, so that the cleanup runs; another
 * one (or one during the cleanup) quits at once. */
static void e2e_on_signal(int sig)
{
    if (e2e_interrupted || e2e_cleaning)
        _exit(128 + sig);
    e2e_interrupted = 1;
}

static double e2e_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double e2e_t0; /* program start, for progress lines */

static void e2e_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void e2e_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[bench-e2e %7.1fs] ", e2e_now() - e2e_t0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void e2e_nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !e2e_interrupted) {
    }
}

static int e2e_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of n values (n <= 64; the mean of the middle two when even). */
static double e2e_median(const double *v, size_t n)
{
    double s[64];
    if (n == 0)
        return 0;
    if (n > 64)
        n = 64;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, e2e_cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Copies s into out (size n) or fails with FAIR_ERANGE naming what. */
static int e2e_copy(char *out, size_t n, const char *s, const char *what, struct fair_error *err)
{
    int w = snprintf(out, n, "%s", s ? s : "");
    if (w < 0 || (size_t)w >= n)
        return fair_error_set(err, FAIR_ERANGE, "%s too long (%zu bytes at most): %.60s...", what,
                              n - 1, s);
    return 0;
}

/* ---- requests ------------------------------------------------------------- */

/* The API path of r (see fair_kpath) plus an optional query, into out. */
static int e2e_path(char *out, size_t n, const struct fair_kres *r, const char *ns,
                    const char *name, const char *sub, const char *query, struct fair_error *err)
{
    struct fair_buf b;
    fair_buf_init(&b, 8192);
    int rc = fair_kpath(&b, r, ns, name, sub, err);
    if (!rc && query && (rc = fair_buf_appends(&b, query)))
        fair_error_set(err, rc, "path too long");
    if (!rc)
        rc = e2e_copy(out, n, fair_buf_str(&b), "API path", err);
    fair_buf_release(&b);
    return rc;
}

/* A request run to completion (never from inside a loop callback). The
 * answer's body is parsed into *json_out when asked (caller decrefs). */
static int e2e_sync(struct fair_kclient *kc, const char *method, const char *path, const char *body,
                    json_t **json_out, struct fair_error *err)
{
    char *text = NULL;
    long status = 0;
    int rc = fair_kclient_request_sync(kc, method, path, body, 0, &status, &text, err);
    if (json_out) {
        *json_out = NULL;
        if (!rc && text && !(*json_out = json_loads(text, 0, NULL)))
            rc = fair_error_set(err, FAIR_EPARSE, "%s %s: the answer is not JSON", method, path);
    }
    fair_free(text);
    return rc;
}

/* A window of requests: make(i) starts request i (with e2e_pump_cb and the
 * pump as its context) for i in [0, total); at most `window` in flight. */
struct e2e_pump {
    long total, next, done, failed, inflight, window;
    int (*make)(struct e2e_pump *p, long i, struct fair_error *err);
    void *arg;
    bool ok_notfound; /* deletes: a pod already gone is fine */
    double t_first_sent, t_last_done;
    struct fair_error first_err;
};

static void e2e_pump_fill(struct e2e_pump *p)
{
    while (p->inflight < p->window && p->next < p->total) {
        long i = p->next++;
        struct fair_error err = {0};
        if (i == 0)
            p->t_first_sent = e2e_now();
        if (p->make(p, i, &err)) {
            p->done++;
            if (!p->failed++)
                p->first_err = err;
            continue;
        }
        p->inflight++;
    }
}

static void e2e_pump_cb(const struct fair_kresponse *resp, void *ctx)
{
    struct e2e_pump *p = ctx;
    p->inflight--;
    p->done++;
    p->t_last_done = e2e_now();
    if (resp->rc && !(p->ok_notfound && resp->rc == FAIR_ENOTFOUND) && !p->failed++)
        p->first_err = resp->err;
    e2e_pump_fill(p);
}

static bool e2e_pump_finished(const struct e2e_pump *p)
{
    return p->done >= p->total;
}

/* One page of a LIST, handed to the waiting loop. */
struct e2e_page {
    bool done;
    int rc;
    struct fair_error err;
    json_t *json;
};

static void e2e_page_cb(const struct fair_kresponse *resp, void *ctx)
{
    struct e2e_page *pg = ctx;
    pg->done = true;
    pg->rc = resp->rc;
    if (resp->rc)
        pg->err = resp->err;
    else if (resp->json)
        pg->json = json_incref(resp->json);
    else
        pg->rc = fair_error_set(&pg->err, FAIR_EPARSE, "list: the answer is not JSON");
}

typedef int (*e2e_item_fn)(json_t *item, void *ctx, struct fair_error *err);

/* A paged LIST (500 a page) run to completion; each item goes to fn. rv
 * (may be NULL) receives the list's resourceVersion. */
static int e2e_list_sync(struct fair_kclient *kc, const struct fair_kres *r, const char *ns,
                         const char *labels, const char *fields, const struct fair_jfield *filter,
                         e2e_item_fn fn, void *ctx, char *rv, size_t rv_size,
                         struct fair_error *err)
{
    struct fair_buf cont;
    fair_buf_init(&cont, 64 << 10);
    struct event_base *base = fair_kclient_base(kc);
    int rc = 0;
    for (int page = 0;; page++) {
        if (page >= E2E_MAX_PAGES) {
            rc = fair_error_set(err, FAIR_ERANGE, "list %s: more than %d pages", r->resource,
                                E2E_MAX_PAGES);
            goto out;
        }
        struct fair_klist_opts o = {.label_selector = labels,
                                    .field_selector = fields,
                                    .limit = 500,
                                    .continue_token = fair_buf_str(&cont),
                                    .filter = filter};
        struct e2e_page pg = {0};
        if ((rc = fair_kclient_list(kc, r, ns, &o, e2e_page_cb, &pg, NULL, err)))
            goto out;
        while (!pg.done)
            if (event_base_loop(base, EVLOOP_ONCE) < 0) {
                rc = fair_error_set(err, FAIR_EIO, "list %s: the event loop failed", r->resource);
                goto out; /* not reached in practice; pg would dangle */
            }
        if (pg.rc) {
            *err = pg.err;
            rc = pg.rc;
            goto out;
        }
        json_t *items = json_object_get(pg.json, "items"), *it;
        size_t i;
        json_array_foreach(items, i, it)
        {
            if ((rc = fn(it, ctx, err)))
                break;
        }
        json_t *md = json_object_get(pg.json, "metadata");
        const char *c = json_string_value(json_object_get(md, "continue"));
        if (!rc && rv)
            rc = e2e_copy(rv, rv_size, json_string_value(json_object_get(md, "resourceVersion")),
                          "resourceVersion", err);
        bool more = c && *c;
        fair_buf_reset(&cont);
        if (!rc && more && (rc = fair_buf_appends(&cont, c)))
            fair_error_set(err, rc, "list %s: continue token too long", r->resource);
        json_decref(pg.json); /* c dies with it */
        if (rc || !more)
            goto out;
    }
out:
    fair_buf_release(&cont);
    return rc;
}

/* ---- child processes ------------------------------------------------------ */

struct e2e_child {
    pid_t pid;        /* 0: none */
    const char *what; /* "fairshare-controller", "minimal binder" */
    char log[PATH_MAX];
    bool expect_exit; /* the binder exits when it has bound everything */
    bool exited;
    int status;
    struct rusage ru;
    double t_start;
    int port; /* the controller's --listen port */
};

/* fork + exec with stdout and stderr in log; the child gets its own
 * process group (^C goes to us, and we stop it in order) and SIGTERM when
 * we die. */
static int e2e_spawn(struct e2e_child *c, char *const argv[], struct fair_error *err)
{
    fflush(NULL);
    c->exited = false;
    c->t_start = e2e_now();
    pid_t pid = fork();
    if (pid < 0)
        return fair_error_set(err, FAIR_EIO, "cannot start %s: fork: %s", c->what, strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int fd = open(c->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], argv);
        fprintf(stderr, "bench_e2e: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    c->pid = pid;
    return 0;
}

/* Reaps c without blocking; true when it has exited. */
static bool e2e_child_poll(struct e2e_child *c)
{
    if (c->pid <= 0 || c->exited)
        return c->exited;
    pid_t r = wait4(c->pid, &c->status, WNOHANG, &c->ru);
    if (r == c->pid)
        c->exited = true;
    return c->exited;
}

/* Prints the last nlines lines of a child's log to stderr. */
static void e2e_tail_log(const char *path, int nlines)
{
    char buf[4096];
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    long off = 0;
    if (fseek(f, 0, SEEK_END) == 0 && (off = ftell(f)) > (long)sizeof buf - 1)
        off -= (long)sizeof buf - 1;
    else
        off = 0;
    size_t n = fseek(f, off, SEEK_SET) == 0 ? fread(buf, 1, sizeof buf - 1, f) : 0;
    fclose(f);
    buf[n] = '\0';
    while (n && buf[n - 1] == '\n')
        buf[--n] = '\0';
    const char *p = buf + n;
    for (int seen = 0; p > buf; p--)
        if (p[-1] == '\n' && ++seen >= nlines)
            break;
    fprintf(stderr, "--- last lines of %s ---\n%s\n---\n", path, p);
}

/* Peak RSS (VmHWM, KB) from /proc/PID/status; -1 when unreadable. */
static long e2e_proc_hwm_kb(pid_t pid)
{
    char path[64], line[256];
    long v = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            v = strtol(line + 6, NULL, 10);
    fclose(f);
    return v;
}

/* utime + stime (s) from /proc/PID/stat (fields 14 and 15); -1 on error. */
static double e2e_proc_cpu_s(pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *ok = fgets(line, sizeof line, f);
    fclose(f);
    char *p = ok ? strrchr(line, ')') : NULL; /* comm may hold spaces */
    if (!p)
        return -1;
    p++;
    unsigned long long v[16] = {0};
    /* after ')': field 3 (state) is a letter, then numbers from field 4 */
    while (*p == ' ')
        p++;
    if (*p)
        p++;
    for (int field = 4; field <= 15; field++) {
        char *end;
        v[field] = strtoull(p, &end, 10);
        if (end == p)
            return -1;
        p = end;
    }
    long tick = sysconf(_SC_CLK_TCK);
    return tick > 0 ? (double)(v[14] + v[15]) / (double)tick : -1;
}

/* SIGTERM, then SIGKILL after E2E_STOP_GRACE_S; reaps. */
static void e2e_child_stop(struct e2e_child *c)
{
    if (c->pid <= 0 || e2e_child_poll(c))
        return;
    kill(c->pid, SIGTERM);
    double end = e2e_now() + E2E_STOP_GRACE_S;
    while (!e2e_child_poll(c) && e2e_now() < end)
        e2e_nap_ms(20);
    if (!c->exited) {
        e2e_note("%s (pid %d) did not stop within %.0f s of SIGTERM: killing it", c->what,
                 (int)c->pid, E2E_STOP_GRACE_S);
        kill(c->pid, SIGKILL);
        if (wait4(c->pid, &c->status, 0, &c->ru) == c->pid)
            c->exited = true;
    }
}

static int e2e_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static size_t e2e_discard(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * n;
}

/* GET http://127.0.0.1:port/path (blocking, 1 s at most): the status, 0 when
 * no answer. Only between loop iterations, never inside a callback. */
static long e2e_http_status(int port, const char *path)
{
    char url[128];
    long code = 0;
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *h = curl_easy_init();
    if (!h)
        return 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, e2e_discard);
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    return code;
}

/* ---- pods seen through the watch ----------------------------------------- */

/* What the watch has shown of one pod. Times are e2e_now() when the event
 * was handled, 0 until it happened. */
struct e2e_pod {
    bool exists, bound, running, terminating;
    double t_added, t_bound, t_running, t_terminating, t_gone;
    unsigned gen; /* relist generation that last saw it */
};

/* Pods named PREFIX-NNNNN (n < cap) in one namespace, with live counts. */
struct e2e_group {
    char prefix[24];
    char ns[64];
    long cap, used; /* names 0..used-1 have been created (or tried) */
    struct e2e_pod *pods;
    long n_exist, n_bound, n_running, n_terminating; /* live pods only */
};

static void e2e_pod_count(struct e2e_group *g, const struct e2e_pod *p, long sign)
{
    if (!p->exists)
        return;
    g->n_exist += sign;
    g->n_bound += sign * p->bound;
    g->n_running += sign * (p->running && !p->terminating);
    g->n_terminating += sign * p->terminating;
}

/* The watch (list, then watch from its resourceVersion; resumed from the
 * last resourceVersion when a stream ends cleanly, relisted after a 410 or
 * an error) over every pod with this run's label, in every namespace. */
struct e2e_tracker {
    struct fair_kclient *kc;
    struct e2e_group *groups[E2E_MAX_GROUPS];
    size_t ngroups;
    char selector[96];
    char rv[128];
    struct fair_kreq *watch;
    unsigned gen;
    bool synced;
    bool need_relist;
    double relist_after;
    int failures; /* in a row; reset by any event */
    struct fair_error last_err;
};

#define E2E_WATCH_MAX_FAILURES 20

static struct e2e_pod *e2e_tracker_find(struct e2e_tracker *t, const char *ns, const char *name,
                                        struct e2e_group **gout)
{
    const char *dash = name ? strrchr(name, '-') : NULL;
    if (!dash || !ns)
        return NULL;
    size_t plen = (size_t)(dash - name);
    char *end;
    long idx = strtol(dash + 1, &end, 10);
    if (end == dash + 1 || *end || idx < 0)
        return NULL;
    for (size_t i = 0; i < t->ngroups; i++) {
        struct e2e_group *g = t->groups[i];
        if (strlen(g->prefix) == plen && strncmp(g->prefix, name, plen) == 0 &&
            strcmp(g->ns, ns) == 0 && idx < g->cap) {
            *gout = g;
            return &g->pods[idx];
        }
    }
    return NULL;
}

/* Applies an object (ADDED, MODIFIED, or a list item) or a deletion. */
static void e2e_tracker_apply(struct e2e_tracker *t, json_t *obj, bool deleted, double now)
{
    json_t *md = json_object_get(obj, "metadata");
    struct e2e_group *g = NULL;
    struct e2e_pod *p = e2e_tracker_find(t, json_string_value(json_object_get(md, "namespace")),
                                         json_string_value(json_object_get(md, "name")), &g);
    if (!p)
        return;
    e2e_pod_count(g, p, -1);
    p->gen = t->gen;
    if (deleted) {
        p->exists = false;
        if (!p->t_gone)
            p->t_gone = now;
    } else {
        const char *node =
            json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
        const char *phase =
            json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
        p->exists = true;
        p->bound = node && *node;
        p->running = phase && strcmp(phase, "Running") == 0;
        p->terminating = json_object_get(md, "deletionTimestamp") != NULL &&
                         !json_is_null(json_object_get(md, "deletionTimestamp"));
        if (!p->t_added)
            p->t_added = now;
        if (p->bound && !p->t_bound)
            p->t_bound = now;
        if (p->running && !p->t_running)
            p->t_running = now;
        if (p->terminating && !p->t_terminating)
            p->t_terminating = now;
    }
    e2e_pod_count(g, p, +1);
}

static const struct fair_jfield e2e_meta_f[] = {{"name", NULL},
                                                {"namespace", NULL},
                                                {"resourceVersion", NULL},
                                                {"deletionTimestamp", NULL},
                                                {NULL, NULL}};
static const struct fair_jfield e2e_spec_f[] = {{"nodeName", NULL}, {NULL, NULL}};
static const struct fair_jfield e2e_status_f[] = {{"phase", NULL}, {NULL, NULL}};
static const struct fair_jfield e2e_pod_f[] = {{"metadata", e2e_meta_f},
                                               {"spec", e2e_spec_f},
                                               {"status", e2e_status_f},
                                               {"code", NULL},
                                               {"reason", NULL},
                                               {"message", NULL},
                                               {NULL, NULL}};

static void e2e_watch_start(struct e2e_tracker *t);

static void e2e_watch_event(const struct fair_kwatch_event *ev, void *ctx)
{
    struct e2e_tracker *t = ctx;
    double now = e2e_now();
    t->failures = 0;
    if (ev->type == FAIR_KWATCH_ERROR) {
        fair_error_set(&t->last_err, FAIR_EHTTP, "pod watch: ERROR event code %d: %s", ev->code,
                       ev->message);
        t->need_relist = true; /* the stream ends next; on_done relists */
        return;
    }
    if (ev->resource_version && *ev->resource_version)
        snprintf(t->rv, sizeof t->rv, "%s", ev->resource_version);
    if (ev->type == FAIR_KWATCH_BOOKMARK)
        return;
    e2e_tracker_apply(t, ev->object, ev->type == FAIR_KWATCH_DELETED, now);
}

static void e2e_watch_done(const struct fair_kresponse *resp, void *ctx)
{
    struct e2e_tracker *t = ctx;
    t->watch = NULL;
    if (resp->rc == 0 && !t->need_relist) {
        e2e_watch_start(t); /* a clean end (server timeout): resume */
        return;
    }
    if (resp->rc) {
        t->last_err = resp->err;
        t->failures++;
    }
    t->need_relist = true;
    t->relist_after = e2e_now() + (resp->rc == FAIR_EGONE ? 0 : 1.0);
}

static void e2e_watch_start(struct e2e_tracker *t)
{
    struct fair_klist_opts o = {
        .label_selector = t->selector, .resource_version = t->rv, .filter = e2e_pod_f};
    struct fair_error err = {0};
    if (fair_kclient_watch(t->kc, &fair_kres_pods, NULL, &o, e2e_watch_event, e2e_watch_done, t,
                           &t->watch, &err)) {
        t->last_err = err;
        t->failures++;
        t->need_relist = true;
        t->relist_after = e2e_now() + 1.0;
    }
}

static int e2e_relist_item(json_t *item, void *ctx, struct fair_error *err)
{
    (void)err;
    e2e_tracker_apply(ctx, item, false, e2e_now());
    return 0;
}

/* LIST, mark the pods the list no longer holds as gone, WATCH from there.
 * Never from inside a callback. */
static int e2e_tracker_relist(struct e2e_tracker *t, struct fair_error *err)
{
    t->need_relist = false;
    t->gen++;
    int rc = e2e_list_sync(t->kc, &fair_kres_pods, NULL, t->selector, NULL, e2e_pod_f,
                           e2e_relist_item, t, t->rv, sizeof t->rv, err);
    if (rc) {
        t->last_err = *err;
        t->failures++;
        t->need_relist = true;
        t->relist_after = e2e_now() + 1.0;
        return rc;
    }
    double now = e2e_now();
    for (size_t i = 0; i < t->ngroups; i++) {
        struct e2e_group *g = t->groups[i];
        for (long k = 0; k < g->used; k++) {
            struct e2e_pod *p = &g->pods[k];
            if (p->exists && p->gen != t->gen) {
                e2e_pod_count(g, p, -1);
                p->exists = false;
                if (!p->t_gone)
                    p->t_gone = now;
            }
        }
    }
    t->synced = true;
    e2e_watch_start(t);
    return 0;
}

static int e2e_group_new(struct e2e_tracker *t, const char *prefix, const char *ns, long cap,
                         struct e2e_group **out, struct fair_error *err)
{
    struct e2e_group *g = NULL;
    int rc = 0;
    *out = NULL;
    if (t->ngroups >= E2E_MAX_GROUPS)
        return fair_error_set(err, FAIR_ERANGE, "more than %d pod groups", E2E_MAX_GROUPS);
    if (!(g = fair_calloc(1, sizeof *g)) ||
        !(g->pods = fair_calloc((size_t)cap, sizeof *g->pods))) {
        rc = fair_error_set(err, FAIR_ENOMEM, "out of memory for %ld pods", cap);
        goto out;
    }
    if ((rc = e2e_copy(g->prefix, sizeof g->prefix, prefix, "pod prefix", err)) ||
        (rc = e2e_copy(g->ns, sizeof g->ns, ns, "namespace", err)))
        goto out;
    g->cap = cap;
    t->groups[t->ngroups++] = g;
    *out = g;
    g = NULL;
out:
    if (g)
        fair_free(g->pods);
    fair_free(g);
    return rc;
}

/* Forgets a group (its pods are gone). */
static void e2e_group_retire(struct e2e_tracker *t, struct e2e_group *g)
{
    for (size_t i = 0; i < t->ngroups; i++)
        if (t->groups[i] == g) {
            t->groups[i] = t->groups[--t->ngroups];
            break;
        }
    fair_free(g->pods);
    fair_free(g);
}

/* ---- the benchmark's state ------------------------------------------------ */

struct e2e_opts {
    const char *kubeconfig, *controller, *crds, *json_path;
    long pods, rounds, reclaim_runs;
    bool skip_throughput, skip_reclaim, keep_logs;
};

struct e2e_obj {
    const struct fair_kres *res;
    char name[E2E_NAME_MAX];
};

struct e2e {
    struct e2e_opts o;
    struct event_base *base;
    struct fair_kconfig cfg;
    struct fair_kclient *kc;
    struct event *tick;
    struct e2e_tracker tr;
    char id[16];
    char dir[1024];     /* logs, controller configs, ledgers */
    char exe[PATH_MAX]; /* this program, run again as the binder */
    struct e2e_child ctl, binder;
    struct e2e_obj objs[E2E_MAX_OBJS]; /* created, deleted in reverse */
    size_t nobjs;
    char (*cordoned)[E2E_NAME_MAX]; /* nodes we cordoned, uncordoned at the end */
    size_t ncordoned;
    size_t nctl; /* controllers started, for their file names */
    json_t *report;
};

static void e2e_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg; /* only wakes the loop so that waits check deadlines */
}

static void e2e_group_describe(const struct e2e_group *g, struct fair_buf *b)
{
    fair_buf_appendf(b, " [%s/%s-*: %ld exist, %ld bound, %ld running, %ld terminating]", g->ns,
                     g->prefix, g->n_exist, g->n_bound, g->n_running, g->n_terminating);
}

/* Runs the loop until done(ctx), or fails after deadline_s seconds (or on
 * ^C, a broken watch, or a child that died) with a message naming what. */
static int e2e_wait(struct e2e *e, bool (*done)(void *ctx), void *ctx, double deadline_s,
                    const char *what, struct fair_error *err)
{
    double end = e2e_now() + deadline_s;
    struct e2e_child *kids[] = {&e->ctl, &e->binder};
    int rc = 0;
    while (!done(ctx)) {
        if (e2e_interrupted) {
            rc = fair_error_set(err, FAIR_EIO, "interrupted while waiting for %s", what);
            goto out;
        }
        for (size_t i = 0; i < 2; i++) {
            struct e2e_child *c = kids[i];
            if (c->pid > 0 && !c->exited && e2e_child_poll(c) &&
                (!c->expect_exit || !WIFEXITED(c->status) || WEXITSTATUS(c->status))) {
                e2e_tail_log(c->log, 15);
                rc = fair_error_set(
                    err, FAIR_EIO,
                    "%s (pid %d) %s %d while waiting for %s; its "
                    "log: %s",
                    c->what, (int)c->pid,
                    WIFEXITED(c->status) ? "exited with status" : "was killed by signal",
                    WIFEXITED(c->status) ? WEXITSTATUS(c->status) : WTERMSIG(c->status), what,
                    c->log);
                goto out;
            }
        }
        if (e->tr.failures >= E2E_WATCH_MAX_FAILURES) {
            rc = fair_error_set(err, FAIR_EHTTP, "the pod watch failed %d times in a row (%s)",
                                e->tr.failures, e->tr.last_err.msg);
            goto out;
        }
        /* after an ERROR event the stream is still open until it ends */
        if (e->tr.need_relist && !e->tr.watch && e2e_now() >= e->tr.relist_after) {
            struct fair_error lerr = {0};
            if (e2e_tracker_relist(&e->tr, &lerr))
                e2e_note("pod watch: relist failed (%s); retrying", lerr.msg);
            continue;
        }
        if (e2e_now() > end) {
            struct fair_buf b;
            fair_buf_init(&b, 4096);
            for (size_t i = 0; i < e->tr.ngroups; i++)
                e2e_group_describe(e->tr.groups[i], &b);
            rc = fair_error_set(err, FAIR_ETIMEDOUT, "timed out after %.0f s waiting for %s;%s",
                                deadline_s, what, fair_buf_str(&b));
            fair_buf_release(&b);
            goto out;
        }
        if (event_base_loop(e->base, EVLOOP_ONCE) < 0) {
            rc = fair_error_set(err, FAIR_EIO, "the event loop failed");
            goto out;
        }
    }
out:
    return rc;
}

static bool e2e_never(void *ctx)
{
    (void)ctx;
    return false;
}

/* Runs the loop for s seconds (lets the controller's writes settle). */
static int e2e_sleep(struct e2e *e, double s, struct fair_error *err)
{
    struct fair_error werr = {0};
    int rc = e2e_wait(e, e2e_never, NULL, s, "a pause", &werr);
    if (rc == FAIR_ETIMEDOUT)
        return 0;
    *err = werr;
    return rc;
}

static bool e2e_pump_done_pred(void *ctx)
{
    return e2e_pump_finished(ctx);
}

/* After a failed wait: sends nothing more and lets the requests in flight
 * finish (the client's timeout bounds them), since their callbacks point at
 * p, which usually lives on the caller's stack. */
static void e2e_pump_drain(struct e2e *e, struct e2e_pump *p)
{
    p->total = p->next;
    while (p->inflight > 0)
        if (event_base_loop(e->base, EVLOOP_ONCE) < 0)
            break;
}

/* Runs a pump to its end; fails when any request failed. */
static int e2e_pump_run(struct e2e *e, struct e2e_pump *p, double deadline_s, const char *what,
                        struct fair_error *err)
{
    e2e_pump_fill(p);
    int rc = e2e_wait(e, e2e_pump_done_pred, p, deadline_s, what, err);
    if (rc)
        e2e_pump_drain(e, p);
    if (!rc && p->failed)
        rc = fair_error_set(err, p->first_err.code ? p->first_err.code : FAIR_EHTTP,
                            "%s: %ld of %ld requests failed; the first: %s", what, p->failed,
                            p->total, p->first_err.msg);
    return rc;
}

/* Deadline of a wait over n pods: generous for a busy 2-core machine. */
static double e2e_deadline(long n)
{
    return 120.0 + 0.3 * (double)n;
}

/* ---- cluster objects -------------------------------------------------------- */

static int e2e_create(struct e2e *e, const struct fair_kres *r, const char *name, const char *body,
                      struct fair_error *err)
{
    char path[512];
    int rc;
    if (e->nobjs >= E2E_MAX_OBJS)
        return fair_error_set(err, FAIR_ERANGE, "more than %d objects", E2E_MAX_OBJS);
    if ((rc = e2e_path(path, sizeof path, r, NULL, NULL, NULL, NULL, err)) ||
        (rc = e2e_sync(e->kc, "POST", path, body, NULL, err))) {
        fair_error_prefix(err, "creating %s %s: ", r->resource, name);
        return rc;
    }
    e->objs[e->nobjs].res = r;
    snprintf(e->objs[e->nobjs].name, sizeof e->objs[0].name, "%s", name);
    e->nobjs++;
    return 0;
}

static int e2e_create_namespace(struct e2e *e, const char *ns, struct fair_error *err)
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"" E2E_RUN_LABEL "\":\"%s\"}}}",
             ns, e->id);
    return e2e_create(e, &e2e_kres_namespaces, ns, body, err);
}

/* A Project owning namespace ns with defaultQueue queue, guaranteed gpus,
 * and its Queue with the same guarantee and no limit. */
static int e2e_create_quota(struct e2e *e, const char *project, const char *ns, const char *queue,
                            long gpus, struct fair_error *err)
{
    char body[1024];
    int rc;
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\",\"metadata\":"
             "{\"name\":\"%s\",\"labels\":{\"" E2E_RUN_LABEL "\":\"%s\"}},\"spec\":{\"namespaces\":"
             "[\"%s\"],\"defaultQueue\":\"%s\",\"guaranteed\":{\"gpu\":%ld}}}",
             project, e->id, ns, queue, gpus);
    if ((rc = e2e_create(e, &fair_kres_projects, project, body, err)))
        return rc;
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":"
             "{\"name\":\"%s\",\"labels\":{\"" E2E_RUN_LABEL "\":\"%s\"}},\"spec\":{\"project\":"
             "\"%s\",\"guaranteed\":{\"gpu\":%ld}}}",
             queue, e->id, project, gpus);
    return e2e_create(e, &fair_kres_queues, queue, body, err);
}

/* The CRDs of dir (every *.yaml document of kind CustomResourceDefinition):
 * created when absent, then waited for until Established. */
static int e2e_crd_established(json_t *crd)
{
    json_t *conds = json_object_get(json_object_get(crd, "status"), "conditions"), *c;
    size_t i;
    json_array_foreach(conds, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (type && st && !strcmp(type, "Established") && !strcmp(st, "True"))
            return 1;
    }
    return 0;
}

static int e2e_yaml_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int e2e_install_crds(struct e2e *e, struct fair_error *err)
{
    char names[16][E2E_NAME_MAX], *files[64], path[PATH_MAX + 256];
    size_t nnames = 0, nfiles = 0;
    int rc = 0;
    json_t *docs = NULL, *got = NULL;
    DIR *d = opendir(e->o.crds);
    if (!d)
        return fair_error_set(err, FAIR_EIO, "--crds %s: %s", e->o.crds, strerror(errno));
    struct dirent *de;
    while ((de = readdir(d)) && nfiles < 64) {
        size_t n = strlen(de->d_name);
        if ((n > 5 && !strcmp(de->d_name + n - 5, ".yaml")) ||
            (n > 4 && !strcmp(de->d_name + n - 4, ".yml")))
            if (!(files[nfiles++] = fair_strdup(de->d_name))) {
                nfiles--;
                rc = fair_error_set(err, FAIR_ENOMEM, "out of memory");
                break;
            }
    }
    closedir(d);
    if (rc)
        goto out;
    qsort(files, nfiles, sizeof *files, e2e_yaml_name_cmp);
    for (size_t f = 0; f < nfiles; f++) {
        snprintf(path, sizeof path, "%s/%s", e->o.crds, files[f]);
        if ((rc = fair_yaml_load_file(path, NULL, &docs, err)))
            goto out;
        json_t *doc;
        size_t i;
        json_array_foreach(docs, i, doc)
        {
            const char *kind = json_string_value(json_object_get(doc, "kind"));
            const char *name =
                json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
            if (!kind || strcmp(kind, "CustomResourceDefinition") != 0)
                continue;
            if (!name || nnames >= 16) {
                rc = fair_error_set(err, FAIR_EINVAL,
                                    "%s: a CRD without metadata.name, or "
                                    "more than 16 CRDs",
                                    path);
                goto out;
            }
            char p[512];
            if ((rc = e2e_copy(names[nnames++], E2E_NAME_MAX, name, "CRD name", err)) ||
                (rc = e2e_path(p, sizeof p, &e2e_kres_crds, NULL, name, NULL, NULL, err)))
                goto out;
            rc = e2e_sync(e->kc, "GET", p, NULL, NULL, err);
            if (rc == FAIR_ENOTFOUND) {
                char *body = json_dumps(doc, JSON_COMPACT);
                if (!body) {
                    rc = fair_error_set(err, FAIR_ENOMEM, "out of memory");
                    goto out;
                }
                rc = e2e_path(p, sizeof p, &e2e_kres_crds, NULL, NULL, NULL, NULL, err);
                if (!rc)
                    rc = e2e_sync(e->kc, "POST", p, body, NULL, err);
                free(body);
                if (rc == FAIR_ECONFLICT)
                    rc = 0; /* created meanwhile by someone else */
                if (rc) {
                    fair_error_prefix(err, "installing CRD %s from %s: ", name, path);
                    goto out;
                }
                e2e_note("installed CRD %s (from %s); it stays installed", name, path);
            } else if (rc) {
                fair_error_prefix(err, "reading CRD %s: ", name);
                goto out;
            }
        }
        json_decref(docs);
        docs = NULL;
    }
    if (nnames == 0) {
        rc = fair_error_set(err, FAIR_EINVAL, "--crds %s: no CustomResourceDefinition found",
                            e->o.crds);
        goto out;
    }
    for (size_t i = 0; i < nnames; i++) {
        char p[512];
        double end = e2e_now() + 60;
        if ((rc = e2e_path(p, sizeof p, &e2e_kres_crds, NULL, names[i], NULL, NULL, err)))
            goto out;
        for (;;) {
            if ((rc = e2e_sync(e->kc, "GET", p, NULL, &got, err)))
                goto out;
            int ok = e2e_crd_established(got);
            json_decref(got);
            got = NULL;
            if (ok)
                break;
            if (e2e_now() > end || e2e_interrupted) {
                rc = fair_error_set(err, FAIR_ETIMEDOUT,
                                    "CRD %s is not Established after 60 s (kubectl get crd %s "
                                    "-o yaml shows why)",
                                    names[i], names[i]);
                goto out;
            }
            e2e_nap_ms(200);
        }
    }
out:
    json_decref(docs);
    for (size_t f = 0; f < nfiles; f++)
        fair_free(files[f]);
    return rc;
}

/* ---- nodes ------------------------------------------------------------------ */

struct e2e_node {
    char name[E2E_NAME_MAX];
    long gpus;
    bool schedulable; /* not cordoned, Ready */
};

struct e2e_nodes {
    struct e2e_node *v;
    size_t n, cap;
};

static int e2e_node_item(json_t *item, void *ctx, struct fair_error *err)
{
    struct e2e_nodes *ns = ctx;
    struct fair_knode *k = NULL;
    int rc = fair_knode_decode(item, &k, err);
    if (rc)
        return rc;
    if ((rc = fair_grow((void **)&ns->v, &ns->cap, ns->n + 1, sizeof *ns->v))) {
        fair_error_set(err, rc, "out of memory");
        goto out;
    }
    struct e2e_node *n = &ns->v[ns->n];
    if ((rc = e2e_copy(n->name, sizeof n->name, k->meta.name, "node name", err)))
        goto out;
    n->gpus = (long)(k->allocatable.v[FAIR_RES_GPU] / 1000);
    n->schedulable = !k->unschedulable && k->ready;
    ns->n++;
out:
    fair_knode_free(k);
    return rc;
}

static int e2e_node_cmp(const void *a, const void *b)
{
    return strcmp(((const struct e2e_node *)a)->name, ((const struct e2e_node *)b)->name);
}

static int e2e_list_nodes(struct fair_kclient *kc, struct e2e_nodes *out, struct fair_error *err)
{
    int rc = e2e_list_sync(kc, &fair_kres_nodes, NULL, NULL, NULL, fair_ktype_node.filter,
                           e2e_node_item, out, NULL, 0, err);
    if (rc)
        fair_error_prefix(err, "listing nodes: ");
    else if (out->n)
        qsort(out->v, out->n, sizeof *out->v, e2e_node_cmp);
    return rc;
}

/* ---- pods ------------------------------------------------------------------- */

/* The pod of kapi.py `pods` (without its volcano annotation). */
static int e2e_pod_body(const struct e2e *e, const struct e2e_group *g, long idx, char *out,
                        size_t n, struct fair_error *err)
{
    int w = snprintf(
        out, n,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%05ld\","
        "\"namespace\":\"%s\",\"labels\":{\"" E2E_RUN_LABEL "\":\"%s\"}},\"spec\":{"
        "\"schedulerName\":\"fairshare\",\"terminationGracePeriodSeconds\":30,"
        "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\",\"image\":"
        "\"registry.invalid/sleeper:1\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":"
        "\"2Gi\",\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
        g->prefix, idx, g->ns, e->id);
    if (w < 0 || (size_t)w >= n)
        return fair_error_set(err, FAIR_ERANGE, "pod body too long");
    return 0;
}

struct e2e_podjob {
    struct e2e *e;
    struct e2e_group *g;
    long *idx; /* pod indexes in the group */
};

static int e2e_make_create(struct e2e_pump *p, long i, struct fair_error *err)
{
    struct e2e_podjob *j = p->arg;
    char body[1024], path[512];
    int rc = e2e_pod_body(j->e, j->g, j->idx[i], body, sizeof body, err);
    if (!rc)
        rc = e2e_path(path, sizeof path, &fair_kres_pods, j->g->ns, NULL, NULL, NULL, err);
    if (!rc)
        rc = fair_kclient_request(j->e->kc, "POST", path, NULL, body, strlen(body), 0, e2e_pump_cb,
                                  p, NULL, err);
    return rc;
}

static int e2e_make_delete(struct e2e_pump *p, long i, struct fair_error *err)
{
    struct e2e_podjob *j = p->arg;
    char name[64], path[512];
    snprintf(name, sizeof name, "%s-%05ld", j->g->prefix, j->idx[i]);
    int rc = e2e_path(path, sizeof path, &fair_kres_pods, j->g->ns, name, NULL,
                      "?gracePeriodSeconds=0", err);
    if (!rc)
        rc = fair_kclient_request(j->e->kc, "DELETE", path, NULL, NULL, 0, 0, e2e_pump_cb, p, NULL,
                                  err);
    return rc;
}

/* Starts creating n new pods of g (indexes g->used..), window at a time;
 * the caller runs the pump (p->arg points at *job; both stay alive). */
static int e2e_pods_create_start(struct e2e *e, struct e2e_group *g, long n, long window,
                                 struct e2e_pump *p, struct e2e_podjob *job, struct fair_error *err)
{
    memset(p, 0, sizeof *p);
    *job = (struct e2e_podjob){.e = e, .g = g};
    if (g->used + n > g->cap)
        return fair_error_set(err, FAIR_ERANGE, "group %s: more than %ld pods", g->prefix, g->cap);
    if (!(job->idx = fair_calloc((size_t)(n ? n : 1), sizeof *job->idx)))
        return fair_error_set(err, FAIR_ENOMEM, "out of memory");
    for (long i = 0; i < n; i++)
        job->idx[i] = g->used + i;
    g->used += n;
    *p = (struct e2e_pump){.total = n, .window = window, .make = e2e_make_create, .arg = job};
    e2e_pump_fill(p);
    return 0;
}

struct e2e_count_pred {
    struct e2e_group *g;
    long want;
};

static bool e2e_pred_exist(void *ctx)
{
    struct e2e_count_pred *c = ctx;
    return c->g->n_exist >= c->want;
}

static bool e2e_pred_bound(void *ctx)
{
    struct e2e_count_pred *c = ctx;
    return c->g->n_bound >= c->want;
}

static bool e2e_pred_none(void *ctx)
{
    struct e2e_count_pred *c = ctx;
    return c->g->n_exist == 0;
}

/* Creates n pods of g and waits until the watch shows them all. span
 * (may be NULL) receives the time from the first create sent to the last
 * pod seen by the watch. */
static int e2e_pods_create(struct e2e *e, struct e2e_group *g, long n, long window, double *span,
                           struct fair_error *err)
{
    struct e2e_pump p;
    struct e2e_podjob job;
    char what[128];
    struct e2e_count_pred c = {g, g->n_exist + n};
    int rc = e2e_pods_create_start(e, g, n, window, &p, &job, err);
    snprintf(what, sizeof what, "creating %ld pods in %s", n, g->ns);
    if (!rc)
        rc = e2e_pump_run(e, &p, e2e_deadline(n), what, err);
    snprintf(what, sizeof what, "%ld pods of %s/%s-* to be seen by the watch", c.want, g->ns,
             g->prefix);
    if (!rc)
        rc = e2e_wait(e, e2e_pred_exist, &c, e2e_deadline(n), what, err);
    if (span)
        *span = e2e_now() - p.t_first_sent;
    fair_free(job.idx);
    return rc;
}

/* Deletes every live pod of g (gracePeriodSeconds 0) and waits until the
 * watch shows none left. */
static int e2e_pods_delete(struct e2e *e, struct e2e_group *g, struct fair_error *err)
{
    struct e2e_podjob job = {.e = e, .g = g};
    struct e2e_pump p = {0};
    long n = 0;
    char what[128];
    int rc = 0;
    if (!(job.idx = fair_calloc((size_t)(g->used ? g->used : 1), sizeof *job.idx)))
        return fair_error_set(err, FAIR_ENOMEM, "out of memory");
    for (long i = 0; i < g->used; i++)
        if (g->pods[i].exists || !g->pods[i].t_added)
            job.idx[n++] = i; /* live, or created but not seen yet */
    p = (struct e2e_pump){.total = n,
                          .window = E2E_DELETE_WINDOW,
                          .make = e2e_make_delete,
                          .arg = &job,
                          .ok_notfound = true};
    snprintf(what, sizeof what, "deleting %ld pods in %s", n, g->ns);
    rc = e2e_pump_run(e, &p, e2e_deadline(n), what, err);
    struct e2e_count_pred c = {g, 0};
    snprintf(what, sizeof what, "the pods of %s/%s-* to be gone", g->ns, g->prefix);
    if (!rc)
        rc = e2e_wait(e, e2e_pred_none, &c, e2e_deadline(n), what, err);
    fair_free(job.idx);
    return rc;
}

/* ---- the controller and the minimal binder as processes --------------------- */

struct e2e_ready_pred {
    struct e2e_child *c;
    double next_poll;
};

static bool e2e_pred_ready(void *ctx)
{
    struct e2e_ready_pred *r = ctx;
    if (e2e_now() < r->next_poll)
        return false;
    r->next_poll = e2e_now() + 0.1;
    return e2e_http_status(r->c->port, "/readyz") == 200;
}

/* Starts fairshare-controller with the default settings except: no leader
 * election, its ledger in our temp dir, --listen on a free port. */
static int e2e_ctl_start(struct e2e *e, const char *label, struct fair_error *err)
{
    struct e2e_child *c = &e->ctl;
    char cfg[PATH_MAX + 64], ledger[PATH_MAX + 64], listen[64];
    int n = (int)++e->nctl;
    *c = (struct e2e_child){.what = "fairshare-controller"};
    snprintf(cfg, sizeof cfg, "%s/controller-%d-%s.yaml", e->dir, n, label);
    snprintf(ledger, sizeof ledger, "%s/ledger-%d-%s.db", e->dir, n, label);
    snprintf(c->log, sizeof c->log, "%s/controller-%d-%s.log", e->dir, n, label);
    if ((c->port = e2e_free_port()) <= 0)
        return fair_error_set(err, FAIR_EIO, "no free port on 127.0.0.1 for --listen");
    snprintf(listen, sizeof listen, "127.0.0.1:%d", c->port);
    FILE *f = fopen(cfg, "w");
    if (!f)
        return fair_error_set(err, FAIR_EIO, "%s: %s", cfg, strerror(errno));
    fprintf(f,
            "# bench_e2e: the defaults, but no leader election and a throwaway ledger\n"
            "apiVersion: config.fairshare.dev/v1alpha1\n"
            "kind: ControllerConfig\n"
            "leaderElection:\n  enabled: false\n"
            "ledger:\n  path: %s\n",
            ledger);
    if (fclose(f) != 0)
        return fair_error_set(err, FAIR_EIO, "%s: %s", cfg, strerror(errno));
    char *argv[10];
    int a = 0;
    argv[a++] = (char *)e->o.controller;
    if (e->o.kubeconfig) {
        argv[a++] = "--kubeconfig";
        argv[a++] = (char *)e->o.kubeconfig;
    }
    argv[a++] = "--config";
    argv[a++] = cfg;
    argv[a++] = "--listen";
    argv[a++] = listen;
    argv[a] = NULL;
    return e2e_spawn(c, argv, err);
}

static int e2e_ctl_wait_ready(struct e2e *e, struct fair_error *err)
{
    struct e2e_ready_pred r = {.c = &e->ctl};
    return e2e_wait(e, e2e_pred_ready, &r, 120, "the controller's /readyz", err);
}

/* Reads the controller's peak RSS and CPU time, then stops it. */
static void e2e_ctl_stop(struct e2e *e, long *hwm_kb, double *cpu_s)
{
    struct e2e_child *c = &e->ctl;
    if (hwm_kb)
        *hwm_kb = c->pid > 0 && !c->exited ? e2e_proc_hwm_kb(c->pid) : -1;
    if (cpu_s)
        *cpu_s = c->pid > 0 && !c->exited ? e2e_proc_cpu_s(c->pid) : -1;
    e2e_child_stop(c);
    c->pid = 0;
}

static int e2e_binder_start(struct e2e *e, const char *ns, long inflight, const char *label,
                            struct fair_error *err)
{
    struct e2e_child *c = &e->binder;
    char n[32];
    *c = (struct e2e_child){.what = "minimal binder", .expect_exit = true};
    snprintf(c->log, sizeof c->log, "%s/binder-%s.log", e->dir, label);
    snprintf(n, sizeof n, "%ld", inflight);
    char *argv[10];
    int a = 0;
    argv[a++] = e->exe;
    argv[a++] = "--binder";
    if (e->o.kubeconfig) {
        argv[a++] = "--kubeconfig";
        argv[a++] = (char *)e->o.kubeconfig;
    }
    argv[a++] = "--namespace";
    argv[a++] = (char *)ns;
    argv[a++] = "--inflight";
    argv[a++] = n;
    argv[a] = NULL;
    return e2e_spawn(c, argv, err);
}

/* Waits for the binder to exit (it does once it has bound everything);
 * its peak RSS and CPU time come from wait4's rusage. */
static void e2e_binder_stop(struct e2e *e, long *hwm_kb, double *cpu_s)
{
    struct e2e_child *c = &e->binder;
    double end = e2e_now() + 10;
    while (c->pid > 0 && !e2e_child_poll(c) && e2e_now() < end)
        e2e_nap_ms(10);
    e2e_child_stop(c);
    if (hwm_kb)
        *hwm_kb = c->exited ? c->ru.ru_maxrss : -1;
    if (cpu_s)
        *cpu_s = c->exited ? (double)c->ru.ru_utime.tv_sec + c->ru.ru_utime.tv_usec / 1e6 +
                                 (double)c->ru.ru_stime.tv_sec + c->ru.ru_stime.tv_usec / 1e6
                           : -1;
    c->pid = 0;
}

/* ---- throughput ------------------------------------------------------------- */

enum e2e_who { E2E_CONTROLLER, E2E_BINDER, E2E_CREATION };

struct e2e_bind_result {
    double start_to_first, first_to_last, start_to_last, rate;
    /* E2E_CREATION: first create sent -> last create answered; the others:
     * the pending pods' creation (first sent -> last seen), which tells how
     * fast the server was at the time */
    double create_span;
    double last_create_to_last_bind;
    double cpu_s;
    long hwm_kb;
    long inflight; /* E2E_BINDER */
};

static const char *e2e_who_name(enum e2e_who w)
{
    return w == E2E_CONTROLLER ? "controller" : w == E2E_BINDER ? "binder" : "creation";
}

/* One bind run of e->o.pods pods in namespace ns. */
static int e2e_bind_run(struct e2e *e, const char *ns, enum e2e_who who, long inflight,
                        const char *label, struct e2e_bind_result *res, struct fair_error *err)
{
    struct e2e_group *g = NULL;
    struct e2e_pump p = {0};
    struct e2e_podjob job = {0};
    long n = e->o.pods;
    char what[160];
    double t0 = 0;
    int rc;
    memset(res, 0, sizeof *res);
    res->inflight = inflight;
    res->hwm_kb = -1;
    res->cpu_s = -1;
    if ((rc = e2e_group_new(&e->tr, label, ns, n, &g, err)))
        goto out;
    if (who == E2E_CREATION) {
        if ((rc = e2e_ctl_start(e, label, err)) || (rc = e2e_ctl_wait_ready(e, err)))
            goto out;
        if ((rc = e2e_pods_create_start(e, g, n, E2E_BURST_WINDOW, &p, &job, err)))
            goto out;
        t0 = p.t_first_sent;
    } else {
        if ((rc = e2e_pods_create(e, g, n, E2E_CREATE_WINDOW, &res->create_span, err)))
            goto out;
        t0 = e2e_now();
        rc = who == E2E_CONTROLLER ? e2e_ctl_start(e, label, err)
                                   : e2e_binder_start(e, ns, inflight, label, err);
        if (rc)
            goto out;
    }
    struct e2e_count_pred c = {g, n};
    snprintf(what, sizeof what, "%ld pods to be bound by the %s", n,
             who == E2E_BINDER ? "minimal binder" : "controller");
    if ((rc = e2e_wait(e, e2e_pred_bound, &c, e2e_deadline(n), what, err)))
        goto out;
    if (who == E2E_CREATION) {
        snprintf(what, sizeof what, "the creation of %ld pods", n);
        if ((rc = e2e_pump_run(e, &p, e2e_deadline(n), what, err)))
            goto out;
        res->create_span = p.t_last_done - p.t_first_sent;
    }
    double first = 0, last = 0;
    for (long i = 0; i < g->used; i++) {
        double tb = g->pods[i].t_bound;
        if (tb && (!first || tb < first))
            first = tb;
        if (tb > last)
            last = tb;
    }
    res->start_to_first = first - t0;
    res->first_to_last = last - first;
    res->start_to_last = last - t0;
    res->rate = res->start_to_last > 0 ? (double)n / res->start_to_last : 0;
    if (who == E2E_CREATION)
        res->last_create_to_last_bind = last - p.t_last_done;
    if (who == E2E_BINDER)
        e2e_binder_stop(e, &res->hwm_kb, &res->cpu_s);
    else
        e2e_ctl_stop(e, &res->hwm_kb, &res->cpu_s);
    e2e_note("%-10s %-8s %ld pods: start->last bind %.2f s (%.1f pods/s), first->last %.2f s",
             label, e2e_who_name(who), n, res->start_to_last, res->rate, res->first_to_last);
    if ((rc = e2e_pods_delete(e, g, err)))
        goto out;
    e2e_group_retire(&e->tr, g);
    g = NULL;
out:
    if (rc) {
        /* leave g registered: the cleanup deletes its pods */
        e2e_child_stop(&e->ctl);
        e2e_child_stop(&e->binder);
        e->ctl.pid = e->binder.pid = 0;
        e2e_pump_drain(e, &p);
    }
    fair_free(job.idx);
    return rc;
}

static json_t *e2e_bind_json(const struct e2e_bind_result *r, enum e2e_who who)
{
    json_t *o = json_pack("{s:f, s:f, s:f, s:f, s:f, s:I}", "start_to_first_bind_s",
                          r->start_to_first, "first_to_last_bind_s", r->first_to_last,
                          "start_to_last_bind_s", r->start_to_last, "pods_per_s", r->rate, "cpu_s",
                          r->cpu_s, "peak_rss_kb", (json_int_t)r->hwm_kb);
    if (o && who == E2E_BINDER)
        json_object_set_new(o, "inflight", json_integer(r->inflight));
    if (o && who != E2E_CREATION)
        json_object_set_new(o, "pending_pods_created_s", json_real(r->create_span));
    if (o && who == E2E_CREATION) {
        json_object_set_new(o, "first_create_to_last_bind_s", json_real(r->start_to_last));
        json_object_set_new(o, "create_span_s", json_real(r->create_span));
        json_object_set_new(o, "last_create_to_last_bind_s",
                            json_real(r->last_create_to_last_bind));
    }
    return o;
}

static void e2e_print_bind_row(const char *round, const char *who, const struct e2e_bind_result *r)
{
    printf("  %-6s %-28s %8.2f %9.2f %9.2f %9.1f %7.2f %8.1f %8.2f\n", round, who,
           r->start_to_first, r->first_to_last, r->start_to_last, r->rate, r->cpu_s,
           r->hwm_kb >= 0 ? (double)r->hwm_kb / 1024.0 : -1.0, r->create_span);
}

static int e2e_throughput(struct e2e *e, struct fair_error *err)
{
    char ns[64], project[64], queue[64], label[24], who[48];
    struct e2e_nodes nodes = {0};
    struct e2e_bind_result cal[E2E_NCAL], *rounds = NULL;
    long n = e->o.pods, R = e->o.rounds;
    double *rc_rate = NULL, *rb_rate = NULL, *rn_rate = NULL;
    json_t *jt = json_object(), *jcal = json_array(), *jrounds = json_array();
    int rc = 0;
    if (!jt || !jcal || !jrounds || !(rounds = fair_calloc((size_t)R * 3, sizeof *rounds)) ||
        !(rc_rate = fair_calloc((size_t)R, sizeof *rc_rate)) ||
        !(rb_rate = fair_calloc((size_t)R, sizeof *rb_rate)) ||
        !(rn_rate = fair_calloc((size_t)R, sizeof *rn_rate))) {
        rc = fair_error_set(err, FAIR_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = e2e_list_nodes(e->kc, &nodes, err)))
        goto out;
    long gpus = 0, sched = 0;
    for (size_t i = 0; i < nodes.n; i++)
        if (nodes.v[i].schedulable) {
            gpus += nodes.v[i].gpus;
            sched++;
        }
    if (gpus < n) {
        rc = fair_error_set(err, FAIR_ERANGE,
                            "throughput: the %ld schedulable nodes have %ld GPUs; %ld pods of "
                            "1 GPU need %ld (lower --pods, or use a bigger cluster)",
                            sched, gpus, n, n);
        goto out;
    }
    json_object_set_new(jt, "pods", json_integer(n));
    json_object_set_new(jt, "schedulable_nodes", json_integer(sched));
    json_object_set_new(jt, "gpus", json_integer(gpus));
    snprintf(ns, sizeof ns, "bench-e2e-%s", e->id);
    snprintf(project, sizeof project, "bench-e2e-%s", e->id);
    snprintf(queue, sizeof queue, "bench-e2e-%s", e->id);
    if ((rc = e2e_create_namespace(e, ns, err)) ||
        (rc = e2e_create_quota(e, project, ns, queue, 0, err)))
        goto out;

    /* The minimal binder at its best: try each window once. */
    size_t best = 0;
    for (size_t i = 0; i < E2E_NCAL; i++) {
        snprintf(label, sizeof label, "cal%ld", e2e_calibration[i]);
        if ((rc = e2e_bind_run(e, ns, E2E_BINDER, e2e_calibration[i], label, &cal[i], err)))
            goto out;
        if (cal[i].rate > cal[best].rate)
            best = i;
        json_array_append_new(jcal, e2e_bind_json(&cal[i], E2E_BINDER));
    }
    long inflight = e2e_calibration[best];
    e2e_note("minimal binder: best with %ld requests in flight (%.1f pods/s)", inflight,
             cal[best].rate);

    for (long r = 0; r < R; r++) {
        struct e2e_bind_result *rr = &rounds[r * 3];
        /* a then b in odd rounds, b then a in even ones, so that neither
         * always follows the other's deletions */
        for (int k = 0; k < 2; k++) {
            bool ctl_turn = (k == 0) == (r % 2 == 0);
            snprintf(label, sizeof label, "%s%ld", ctl_turn ? "ctl" : "bnd", r + 1);
            if ((rc = e2e_bind_run(e, ns, ctl_turn ? E2E_CONTROLLER : E2E_BINDER, inflight, label,
                                   &rr[ctl_turn ? 0 : 1], err)))
                goto out;
        }
        snprintf(label, sizeof label, "new%ld", r + 1);
        if ((rc = e2e_bind_run(e, ns, E2E_CREATION, 0, label, &rr[2], err)))
            goto out;
        rc_rate[r] = rr[0].rate;
        rb_rate[r] = rr[1].rate;
        rn_rate[r] = rr[2].rate;
        json_array_append_new(jrounds,
                              json_pack("{s:I, s:o, s:o, s:o}", "round", (json_int_t)(r + 1),
                                        "controller", e2e_bind_json(&rr[0], E2E_CONTROLLER),
                                        "binder", e2e_bind_json(&rr[1], E2E_BINDER),
                                        "creation_included", e2e_bind_json(&rr[2], E2E_CREATION)));
    }
    double mc = e2e_median(rc_rate, (size_t)R), mb = e2e_median(rb_rate, (size_t)R),
           mn = e2e_median(rn_rate, (size_t)R);

    printf("\n== bind throughput: %ld pending pods of 1 GPU, %ld schedulable nodes, %ld GPUs ==\n",
           n, sched, gpus);
    printf("Times from the binder's start (fork) to the pods seen bound by a watch; pods/s =\n"
           "pods / (start->last). \"server\": how long the %ld pending pods took to create\n"
           "just before (%d in flight), a gauge of the API server's speed at the time.\n\n",
           n, E2E_CREATE_WINDOW);
    printf("  %-6s %-28s %8s %9s %9s %9s %7s %8s %8s\n", "round", "binder", "start->", "1st->last",
           "start->", "pods/s", "CPU s", "peak RSS", "server");
    printf("  %-6s %-28s %8s %9s %9s %9s %7s %8s %8s\n", "", "", "1st bind", "bind s", "last s", "",
           "", "MB", "s");
    for (size_t i = 0; i < E2E_NCAL; i++) {
        snprintf(who, sizeof who, "minimal, %ld in flight%s", e2e_calibration[i],
                 i == best ? " *" : "");
        e2e_print_bind_row("cal", who, &cal[i]);
    }
    for (long r = 0; r < R; r++) {
        char rn[24];
        snprintf(rn, sizeof rn, "%ld", r + 1);
        e2e_print_bind_row(rn, "fairshare-controller", &rounds[r * 3]);
        snprintf(who, sizeof who, "minimal, %ld in flight", inflight);
        e2e_print_bind_row(rn, who, &rounds[r * 3 + 1]);
    }
    printf("\n  creation included (controller running and synced; %d creates in flight;\n"
           "  pods/s = pods / (last bind - first create sent)):\n",
           E2E_BURST_WINDOW);
    printf("  %-6s %12s %12s %14s %9s %7s %8s\n", "round", "create span", "1st create->",
           "last create->", "pods/s", "CPU s", "peak RSS");
    printf("  %-6s %12s %12s %14s %9s %7s %8s\n", "", "s", "last bind s", "last bind s", "", "",
           "MB");
    for (long r = 0; r < R; r++) {
        const struct e2e_bind_result *x = &rounds[r * 3 + 2];
        printf("  %-6ld %12.2f %12.2f %14.2f %9.1f %7.2f %8.1f\n", r + 1, x->create_span,
               x->start_to_last, x->last_create_to_last_bind, x->rate, x->cpu_s,
               x->hwm_kb >= 0 ? (double)x->hwm_kb / 1024.0 : -1.0);
    }
    printf("\n  median over %ld rounds: controller %.1f pods/s, minimal binder (%ld in flight) "
           "%.1f pods/s,\n  ratio controller/binder %.2f; creation included %.1f pods/s\n",
           R, mc, inflight, mb, mb > 0 ? mc / mb : 0, mn);
    fflush(stdout);

    json_object_set_new(jt, "binder_calibration", jcal);
    jcal = NULL;
    json_object_set_new(jt, "binder_inflight", json_integer(inflight));
    json_object_set_new(jt, "rounds", jrounds);
    jrounds = NULL;
    json_object_set_new(jt, "median_controller_pods_per_s", json_real(mc));
    json_object_set_new(jt, "median_binder_pods_per_s", json_real(mb));
    json_object_set_new(jt, "ratio_controller_to_binder", json_real(mb > 0 ? mc / mb : 0));
    json_object_set_new(jt, "median_creation_included_pods_per_s", json_real(mn));
out:
    if (jt)
        json_object_set_new(jt, "ok", json_boolean(rc == 0));
    json_object_set_new(e->report, "throughput", jt);
    json_decref(jcal);
    json_decref(jrounds);
    fair_free(nodes.v);
    fair_free(rounds);
    fair_free(rc_rate);
    fair_free(rb_rate);
    fair_free(rn_rate);
    return rc;
}

/* ---- reclaim ---------------------------------------------------------------- */

struct e2e_patchjob {
    struct e2e *e;
    const char *patch;
};

static int e2e_make_node_patch(struct e2e_pump *p, long i, struct fair_error *err)
{
    struct e2e_patchjob *j = p->arg;
    return fair_kclient_merge_patch(j->e->kc, &fair_kres_nodes, NULL, j->e->cordoned[i], NULL,
                                    j->patch, e2e_pump_cb, p, err);
}

static int e2e_uncordon(struct e2e *e, struct fair_error *err)
{
    if (!e->ncordoned)
        return 0;
    struct e2e_patchjob j = {e, "{\"spec\":{\"unschedulable\":null}}"};
    struct e2e_pump p = {.total = (long)e->ncordoned,
                         .window = 32,
                         .make = e2e_make_node_patch,
                         .arg = &j,
                         .ok_notfound = true};
    int rc = e2e_pump_run(e, &p, e2e_deadline(p.total), "uncordoning nodes", err);
    if (!rc) {
        e2e_note("uncordoned %zu nodes", e->ncordoned);
        e->ncordoned = 0;
    }
    return rc;
}

struct e2e_reclaim_pred {
    struct e2e_group *qa, *qb;
    long k;
};

/* qa: k Running; qb: k Running and none terminating (victims gone). */
static bool e2e_pred_reclaimed(void *ctx)
{
    struct e2e_reclaim_pred *r = ctx;
    return r->qa->n_running >= r->k && r->qb->n_running == r->k && r->qb->n_terminating == 0 &&
           r->qb->n_exist == r->k;
}

/* qb: 2k bound and Running, none terminating. */
static bool e2e_pred_qb_full(void *ctx)
{
    struct e2e_reclaim_pred *r = ctx;
    return r->qb->n_running >= 2 * r->k && r->qb->n_bound >= 2 * r->k && r->qb->n_terminating == 0;
}

struct e2e_reclaim_run {
    double first_victim, victims_gone, qa_bound, steady; /* ms after the last create */
    long victims;
};

#define E2E_RECLAIM_STEPS 4
static const char *const e2e_reclaim_rows[E2E_RECLAIM_STEPS] = {
    "first victim seen terminating", "last victim gone", "last qa pod bound",
    NULL, /* "qa K Running and qb K Running" */
};
static const char *const e2e_reclaim_keys[E2E_RECLAIM_STEPS] = {
    "first_victim_ms", "last_victim_gone_ms", "last_qa_bound_ms", "all_running_ms"};
static const char *const e2e_step_keys[E2E_RECLAIM_STEPS] = {
    "created_to_first_victim_ms", "first_victim_to_victims_gone_ms", "victims_gone_to_qa_bound_ms",
    "qa_bound_to_all_running_ms"};
static const char *const e2e_reclaim_steps[E2E_RECLAIM_STEPS] = {
    "qa created -> first eviction (controller: watch, cycle, eviction)",
    "first eviction -> last victim gone (API server, kubelet)",
    "last victim gone -> last qa bound (controller: watch, cycle, bind)",
    "last qa bound -> all Running (kubelet)",
};

static double e2e_run_field(const struct e2e_reclaim_run *r, int i)
{
    return i == 0 ? r->first_victim : i == 1 ? r->victims_gone : i == 2 ? r->qa_bound : r->steady;
}

static int e2e_reclaim(struct e2e *e, struct fair_error *err)
{
    struct e2e_nodes nodes = {0};
    struct e2e_group *qa = NULL, *qb = NULL;
    struct e2e_reclaim_run *runs = NULL;
    char nsa[64], nsb[64], pa[64], pb[64], qan[64], qbn[64], label[24];
    const char *keep[2] = {NULL, NULL};
    long R = e->o.reclaim_runs, G = 0, K;
    json_t *jr = json_object(), *jruns = json_array();
    long hwm = -1;
    double cpu = -1;
    int rc = 0;
    if (!jr || !jruns || !(runs = fair_calloc((size_t)R, sizeof *runs))) {
        rc = fair_error_set(err, FAIR_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = e2e_list_nodes(e->kc, &nodes, err)))
        goto out;
    for (size_t i = 0; i < nodes.n && !keep[1]; i++)
        if (nodes.v[i].schedulable && nodes.v[i].gpus > 0) {
            keep[keep[0] ? 1 : 0] = nodes.v[i].name;
            G += nodes.v[i].gpus;
        }
    if (!keep[1] || G % 2) {
        rc = fair_error_set(err, FAIR_ERANGE,
                            "reclaim: needs two schedulable nodes with GPUs, with an even "
                            "number of GPUs together (%s)",
                            keep[1] ? "their GPUs add up to an odd number" : "found fewer");
        goto out;
    }
    K = G / 2;
    /* Cordon every other schedulable node; uncordoned at the end. */
    if (!(e->cordoned = fair_calloc(nodes.n ? nodes.n : 1, sizeof *e->cordoned))) {
        rc = fair_error_set(err, FAIR_ENOMEM, "out of memory");
        goto out;
    }
    size_t ncord = 0;
    for (size_t i = 0; i < nodes.n; i++) {
        const struct e2e_node *nd = &nodes.v[i];
        if (nd->schedulable && nd->name != keep[0] && nd->name != keep[1])
            snprintf(e->cordoned[ncord++], E2E_NAME_MAX, "%s", nd->name);
    }
    {
        struct e2e_patchjob j = {e, "{\"spec\":{\"unschedulable\":true}}"};
        struct e2e_pump p = {
            .total = (long)ncord, .window = 32, .make = e2e_make_node_patch, .arg = &j};
        e->ncordoned = ncord; /* uncordon all of them even if some patches fail */
        if ((rc = e2e_pump_run(e, &p, e2e_deadline(p.total), "cordoning nodes", err)))
            goto out;
    }
    e2e_note("reclaim: cordoned %zu nodes; %s and %s stay, %ld GPUs; qa and qb guaranteed %ld "
             "each",
             ncord, keep[0], keep[1], G, K);
    snprintf(nsa, sizeof nsa, "bench-e2e-%s-a", e->id);
    snprintf(nsb, sizeof nsb, "bench-e2e-%s-b", e->id);
    snprintf(pa, sizeof pa, "bench-e2e-%s-a", e->id);
    snprintf(pb, sizeof pb, "bench-e2e-%s-b", e->id);
    snprintf(qan, sizeof qan, "bench-e2e-%s-qa", e->id);
    snprintf(qbn, sizeof qbn, "bench-e2e-%s-qb", e->id);
    if ((rc = e2e_create_namespace(e, nsa, err)) || (rc = e2e_create_namespace(e, nsb, err)) ||
        (rc = e2e_create_quota(e, pa, nsa, qan, K, err)) ||
        (rc = e2e_create_quota(e, pb, nsb, qbn, K, err)))
        goto out;
    if ((rc = e2e_ctl_start(e, "reclaim", err)) || (rc = e2e_ctl_wait_ready(e, err)))
        goto out;
    /* qb: 2K pods at first, K more after each run */
    if ((rc = e2e_group_new(&e->tr, "qb", nsb, 2 * K + K * R, &qb, err)))
        goto out;
    struct e2e_reclaim_pred pr = {.qb = qb, .k = K};
    char what[160];
    snprintf(what, sizeof what, "%ld qb pods bound and Running", 2 * K);
    if ((rc = e2e_pods_create(e, qb, 2 * K, 2 * K, NULL, err)) ||
        (rc = e2e_wait(e, e2e_pred_qb_full, &pr, e2e_deadline(2 * K), what, err)))
        goto out;

    for (long r = 0; r < R; r++) {
        struct e2e_reclaim_run *x = &runs[r];
        struct e2e_pump p;
        struct e2e_podjob job;
        if ((rc = e2e_sleep(e, 1.0, err)))
            goto out;
        snprintf(label, sizeof label, "qa%ld", r + 1);
        if ((rc = e2e_group_new(&e->tr, label, nsa, K, &qa, err)))
            goto out;
        pr.qa = qa;
        double t_start = e2e_now();
        rc = e2e_pods_create_start(e, qa, K, K, &p, &job, err);
        if (!rc)
            rc = e2e_pump_run(e, &p, 60, "creating the qa pods", err);
        fair_free(job.idx);
        if (rc)
            goto out;
        double t0 = p.t_last_done;
        snprintf(what, sizeof what, "the reclaim: qa %ld Running, qb %ld Running, its victims gone",
                 K, K);
        if ((rc = e2e_wait(e, e2e_pred_reclaimed, &pr, 120, what, err)))
            goto out;
        double first = 0, gone = 0, bound = 0, running = 0, kth = 0;
        for (long i = 0; i < qb->used; i++) {
            const struct e2e_pod *v = &qb->pods[i];
            double seen = v->t_terminating ? v->t_terminating : v->t_gone;
            if (seen < t_start)
                continue; /* not this run's victim */
            x->victims++;
            if (!first || seen < first)
                first = seen;
            if (seen > kth)
                kth = seen;
            if (v->t_gone > gone)
                gone = v->t_gone;
        }
        for (long i = 0; i < qa->used; i++) {
            if (qa->pods[i].t_bound > bound)
                bound = qa->pods[i].t_bound;
            if (qa->pods[i].t_running > running)
                running = qa->pods[i].t_running;
        }
        x->first_victim = (first - t0) * 1000;
        x->victims_gone = (gone - t0) * 1000;
        x->qa_bound = (bound - t0) * 1000;
        x->steady = ((running > kth ? running : kth) - t0) * 1000;
        e2e_note("reclaim run %ld: first victim %.0f ms, victims gone %.0f ms, qa bound %.0f ms, "
                 "all Running %.0f ms (%ld victims)",
                 r + 1, x->first_victim, x->victims_gone, x->qa_bound, x->steady, x->victims);
        json_array_append_new(
            jruns, json_pack("{s:I, s:f, s:f, s:f, s:f, s:I, s:f}", "run", (json_int_t)(r + 1),
                             "first_victim_ms", x->first_victim, "last_victim_gone_ms",
                             x->victims_gone, "last_qa_bound_ms", x->qa_bound, "all_running_ms",
                             x->steady, "victims", (json_int_t)x->victims, "qa_created_span_ms",
                             (p.t_last_done - p.t_first_sent) * 1000));
        /* back to the start: no qa pods, 2K qb pods bound and Running */
        if ((rc = e2e_pods_delete(e, qa, err)))
            goto out;
        e2e_group_retire(&e->tr, qa);
        qa = pr.qa = NULL;
        snprintf(what, sizeof what, "%ld qb pods bound and Running again", 2 * K);
        if ((rc = e2e_pods_create(e, qb, 2 * K - qb->n_exist, 2 * K, NULL, err)) ||
            (rc = e2e_wait(e, e2e_pred_qb_full, &pr, e2e_deadline(2 * K), what, err)))
            goto out;
    }
    e2e_ctl_stop(e, &hwm, &cpu);
    if ((rc = e2e_pods_delete(e, qb, err)))
        goto out;
    e2e_group_retire(&e->tr, qb);
    qb = NULL;
    rc = e2e_uncordon(e, err);

    printf("\n== reclaim latency: 2 nodes, %ld GPUs; queue qb (guaranteed %ld) runs %ld pods, "
           "then %ld qa pods (guaranteed %ld) are created at once ==\n",
           G, K, 2 * K, K, K);
    printf("Times in ms from the response to the last qa create; %ld runs.\n\n", R);
    printf("  %-42s %8s   %s\n", "", "median", "runs");
    json_t *jmed = json_object(), *jsteps = json_object();
    for (int s = 0; s < E2E_RECLAIM_STEPS; s++) {
        double v[64];
        char name[96];
        for (long r = 0; r < R && r < 64; r++)
            v[r] = e2e_run_field(&runs[r], s);
        if (s == 3)
            snprintf(name, sizeof name, "qa %ld Running and qb %ld Running", K, K);
        else
            snprintf(name, sizeof name, "%s", e2e_reclaim_rows[s]);
        printf("  %-42s %8.0f  ", name, e2e_median(v, (size_t)(R < 64 ? R : 64)));
        for (long r = 0; r < R; r++)
            printf(" %6.0f", v[r < 64 ? r : 63]);
        printf("\n");
        json_object_set_new(jmed, e2e_reclaim_keys[s],
                            json_real(e2e_median(v, (size_t)(R < 64 ? R : 64))));
    }
    printf("  %-42s %8s  ", "victims (evicted qb pods)", "");
    for (long r = 0; r < R; r++)
        printf(" %6ld", runs[r].victims);
    printf("\n\n  where the time goes (median of each run's step, ms):\n");
    for (int s = 0; s < E2E_RECLAIM_STEPS; s++) {
        double v[64];
        for (long r = 0; r < R && r < 64; r++)
            v[r] = e2e_run_field(&runs[r], s) - (s ? e2e_run_field(&runs[r], s - 1) : 0);
        double m = e2e_median(v, (size_t)(R < 64 ? R : 64));
        printf("  %-66s %7.0f\n", e2e_reclaim_steps[s], m);
        json_object_set_new(jsteps, e2e_step_keys[s], json_real(m));
    }
    printf("\n  controller: CPU %.2f s, peak RSS %.1f MB over the reclaim phase\n", cpu,
           hwm >= 0 ? (double)hwm / 1024.0 : -1.0);
    fflush(stdout);
    json_object_set_new(jr, "median_ms", jmed);
    json_object_set_new(jr, "step_medians_ms", jsteps);
    json_object_set_new(jr, "gpus", json_integer(G));
    json_object_set_new(jr, "guaranteed_per_queue", json_integer(K));
    json_object_set_new(jr, "controller_cpu_s", json_real(cpu));
    json_object_set_new(jr, "controller_peak_rss_kb", json_integer(hwm));
out:
    if (rc)
        e2e_child_stop(&e->ctl), e->ctl.pid = 0;
    if (jr) {
        json_object_set_new(jr, "runs", jruns);
        jruns = NULL;
        json_object_set_new(jr, "ok", json_boolean(rc == 0));
    }
    json_object_set_new(e->report, "reclaim", jr);
    json_decref(jruns);
    fair_free(runs);
    fair_free(nodes.v);
    return rc;
}

/* ---- setup and cleanup ------------------------------------------------------ */

/* Everything we created goes, also after a failure: children first, then
 * pods, cordons, quotas and namespaces. Errors are reported, not fatal. */
static void e2e_cleanup(struct e2e *e)
{
    struct fair_error err = {0};
    e2e_cleaning = 1; /* a ^C stopped the benchmark; the cleanup still runs */
    e2e_interrupted = 0;
    e2e_child_stop(&e->ctl);
    e2e_child_stop(&e->binder);
    if (e->kc && e->tr.synced)
        for (size_t i = e->tr.ngroups; i-- > 0;) {
            struct e2e_group *g = e->tr.groups[i];
            if (g->n_exist || g->used) {
                e2e_note("cleanup: deleting the pods of %s/%s-*", g->ns, g->prefix);
                if (e2e_pods_delete(e, g, &err))
                    e2e_note("cleanup: %s", err.msg);
            }
        }
    if (e->kc && e2e_uncordon(e, &err))
        e2e_note("cleanup: %s (uncordon them with kubectl uncordon)", err.msg);
    for (size_t i = e->nobjs; e->kc && i-- > 0;) {
        char path[512];
        struct e2e_obj *o = &e->objs[i];
        int rc = e2e_path(path, sizeof path, o->res, NULL, o->name, NULL, NULL, &err);
        if (!rc)
            rc = e2e_sync(e->kc, "DELETE", path, NULL, NULL, &err);
        if (rc && rc != FAIR_ENOTFOUND)
            e2e_note("cleanup: deleting %s %s: %s", o->res->resource, o->name, err.msg);
    }
    if (e->nobjs)
        e2e_note("cleanup: deleted %zu objects (namespaces, projects, queues)", e->nobjs);
    e->nobjs = 0;
}

/* Removes our temp dir (flat: logs, configs, ledgers and their -wal). */
static int e2e_rm_dir(const char *dir)
{
    char path[PATH_MAX + 256];
    int rc = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            rc |= unlink(path);
        }
    closedir(d);
    return rc | rmdir(dir);
}

static void e2e_usage(FILE *f)
{
    fprintf(f, "usage: bench_e2e --controller BIN --crds DIR [--kubeconfig FILE] [--pods N]\n"
               "                 [--rounds N] [--reclaim-runs N] [--skip-throughput]\n"
               "                 [--skip-reclaim] [--json FILE] [--keep-logs]\n"
               "\n"
               "Bind throughput and reclaim latency of fairshare-controller on a real API\n"
               "server (an idle one: it cordons nodes and binds to every node). Normally run\n"
               "by `make bench-e2e` (scripts/bench-e2e.sh).\n"
               "\n"
               "  --kubeconfig FILE   the cluster (default: $KUBECONFIG, then ~/.kube/config)\n"
               "  --controller BIN    fairshare-controller to measure\n"
               "  --crds DIR          CRDs to install when absent\n"
               "  --pods N            pods per throughput run (default 1000)\n"
               "  --rounds N          throughput rounds (default 3)\n"
               "  --reclaim-runs N    reclaim runs (default 5)\n"
               "  --skip-throughput, --skip-reclaim\n"
               "  --json FILE         every figure, as JSON\n"
               "  --keep-logs         keep the controllers' logs (kept anyway on failure)\n"
               "\n"
               "bench_e2e --binder --namespace NS [--inflight N] [--kubeconfig FILE] is the\n"
               "minimal binder alone, as the benchmark runs it.\n");
}

static int e2e_parse_long(const char *flag, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "bench_e2e: %s wants an integer from %ld to %ld (got \"%s\")\n", flag, lo,
                hi, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

/* ---- the minimal binder (bench_e2e --binder) --------------------------------- */

struct e2e_bpod {
    char name[E2E_NAME_MAX];
    char uid[64];
    long gpus;
    long node;
};

struct e2e_binder {
    struct fair_kclient *kc;
    const char *ns;
    struct e2e_nodes nodes;
    long *free; /* GPUs left per node */
    struct e2e_bpod *pods;
    size_t npods, cap;
};

static int e2e_bpod_item(json_t *item, void *ctx, struct fair_error *err)
{
    struct e2e_binder *b = ctx;
    struct fair_kpod *k = NULL;
    int rc = fair_kpod_decode(item, &k, err);
    if (rc)
        return rc;
    if ((rc = fair_grow((void **)&b->pods, &b->cap, b->npods + 1, sizeof *b->pods))) {
        fair_error_set(err, rc, "out of memory");
        goto out;
    }
    struct e2e_bpod *p = &b->pods[b->npods];
    if ((rc = e2e_copy(p->name, sizeof p->name, k->meta.name, "pod name", err)) ||
        (rc = e2e_copy(p->uid, sizeof p->uid, k->meta.uid, "pod uid", err)))
        goto out;
    p->gpus = (long)((k->request.v[FAIR_RES_GPU] + 999) / 1000);
    p->node = -1;
    b->npods++;
out:
    fair_kpod_free(k);
    return rc;
}

static int e2e_make_bind(struct e2e_pump *p, long i, struct fair_error *err)
{
    struct e2e_binder *b = p->arg;
    const struct e2e_bpod *pod = &b->pods[i];
    return fair_kclient_bind(b->kc, b->ns, pod->name, pod->uid, b->nodes.v[pod->node].name, NULL, 0,
                             e2e_pump_cb, p, err);
}

/* Lists the nodes and the namespace's pending pods of scheduler fairshare,
 * assigns nodes round-robin within their GPUs (nodes are assumed empty:
 * the benchmark deletes every pod between runs), and POSTs the bindings
 * with `inflight` requests at once and no client-side rate limit. */
static int e2e_binder_main(const char *kubeconfig, const char *ns, long inflight)
{
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    struct event_base *base = NULL;
    struct e2e_binder b = {.ns = ns};
    int rc;
    fair_kconfig_init(&cfg);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    double t0 = e2e_now();
    if ((rc = fair_kconfig_load(kubeconfig, &cfg, &err)))
        goto out;
    if (!(base = event_base_new())) {
        rc = fair_error_set(&err, FAIR_ENOMEM, "cannot create the event loop");
        goto out;
    }
    struct fair_kclient_options o;
    memset(&o, 0, sizeof o);
    fair_kclient_options_default(&o);
    o.qps = -1;
    if ((rc = fair_kclient_new(base, &cfg, &o, &b.kc, &err)) ||
        (rc = e2e_list_nodes(b.kc, &b.nodes, &err)))
        goto out;
    if ((rc = e2e_list_sync(b.kc, &fair_kres_pods, ns, NULL,
                            "spec.schedulerName=fairshare,spec.nodeName=", fair_ktype_pod.filter,
                            e2e_bpod_item, &b, NULL, 0, &err))) {
        fair_error_prefix(&err, "listing pending pods: ");
        goto out;
    }
    if (!(b.free = fair_calloc(b.nodes.n ? b.nodes.n : 1, sizeof *b.free))) {
        rc = fair_error_set(&err, FAIR_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < b.nodes.n; i++)
        b.free[i] = b.nodes.v[i].schedulable ? b.nodes.v[i].gpus : -1;
    size_t rr = 0, placed = 0;
    for (size_t i = 0; i < b.npods && b.nodes.n; i++) {
        for (size_t k = 0; k < b.nodes.n; k++) {
            size_t j = (rr + k) % b.nodes.n;
            if (b.free[j] >= b.pods[i].gpus) {
                b.free[j] -= b.pods[i].gpus;
                b.pods[i].node = (long)j;
                rr = j + 1;
                break;
            }
        }
        if (b.pods[i].node < 0)
            break;
        /* keep the placed pods first: the pump binds pods[0..placed) */
        placed++;
    }
    double t_listed = e2e_now();
    struct e2e_pump p = {
        .total = (long)placed, .window = inflight, .make = e2e_make_bind, .arg = &b};
    e2e_pump_fill(&p);
    while (!e2e_pump_finished(&p))
        if (event_base_loop(base, EVLOOP_ONCE) < 0) {
            rc = fair_error_set(&err, FAIR_EIO, "the event loop failed");
            goto out;
        }
    double t1 = e2e_now();
    printf("binder: %zu nodes, %zu pending pods listed in %.3f s; %zu placed; %ld bound, %ld "
           "failed in %.3f s with %ld in flight (%.1f binds/s)\n",
           b.nodes.n, b.npods, t_listed - t0, placed, p.done - p.failed, p.failed, t1 - t_listed,
           inflight, t1 > t_listed ? (double)(p.done - p.failed) / (t1 - t_listed) : 0);
    if (p.failed)
        rc = fair_error_set(&err, p.first_err.code, "%ld binds failed; the first: %s", p.failed,
                            p.first_err.msg);
    else if (placed < b.npods)
        rc = fair_error_set(&err, FAIR_ERANGE, "%zu pods did not fit on the nodes",
                            b.npods - placed);
out:
    if (rc)
        fprintf(stderr, "bench_e2e --binder: %s\n", err.msg);
    fair_kclient_free(b.kc);
    if (base)
        event_base_free(base);
    fair_kconfig_release(&cfg);
    fair_free(b.nodes.v);
    fair_free(b.pods);
    fair_free(b.free);
    curl_global_cleanup();
    return rc ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    struct e2e e;
    struct fair_error err = {0};
    bool binder = false;
    const char *ns = NULL;
    long inflight = 64;
    int rc = 1;
    memset(&e, 0, sizeof e);
    e.o = (struct e2e_opts){.pods = 1000, .rounds = 3, .reclaim_runs = 5};
    e2e_t0 = e2e_now();
    fair_log_set_level(FAIR_LOG_ERROR);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        if (!strcmp(a, "--kubeconfig") && v)
            e.o.kubeconfig = v;
        else if (!strcmp(a, "--controller") && v)
            e.o.controller = v;
        else if (!strcmp(a, "--crds") && v)
            e.o.crds = v;
        else if (!strcmp(a, "--json") && v)
            e.o.json_path = v;
        else if (!strcmp(a, "--namespace") && v)
            ns = v;
        else if (!strcmp(a, "--pods")) {
            if (e2e_parse_long(a, v, 1, E2E_MAX_PODS, &e.o.pods))
                return 2;
        } else if (!strcmp(a, "--rounds")) {
            if (e2e_parse_long(a, v, 1, 64, &e.o.rounds))
                return 2;
        } else if (!strcmp(a, "--reclaim-runs")) {
            if (e2e_parse_long(a, v, 1, 64, &e.o.reclaim_runs))
                return 2;
        } else if (!strcmp(a, "--inflight")) {
            if (e2e_parse_long(a, v, 1, 4096, &inflight))
                return 2;
        } else {
            takes = false;
            if (!strcmp(a, "--skip-throughput"))
                e.o.skip_throughput = true;
            else if (!strcmp(a, "--skip-reclaim"))
                e.o.skip_reclaim = true;
            else if (!strcmp(a, "--keep-logs"))
                e.o.keep_logs = true;
            else if (!strcmp(a, "--binder"))
                binder = true;
            else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                e2e_usage(stdout);
                return 0;
            } else {
                fprintf(stderr, "bench_e2e: unknown or incomplete option \"%s\"\n\n", a);
                e2e_usage(stderr);
                return 2;
            }
        }
        if (takes)
            i++;
    }
    signal(SIGPIPE, SIG_IGN);
    if (binder) {
        if (!ns) {
            fprintf(stderr, "bench_e2e --binder: --namespace is required\n");
            return 2;
        }
        return e2e_binder_main(e.o.kubeconfig, ns, inflight);
    }
    if (!e.o.controller || !e.o.crds) {
        fprintf(stderr, "bench_e2e: --controller and --crds are required\n\n");
        e2e_usage(stderr);
        return 2;
    }
    if (access(e.o.controller, X_OK) != 0) {
        fprintf(stderr, "bench_e2e: --controller %s: %s (build it first)\n", e.o.controller,
                strerror(errno));
        return 2;
    }
    ssize_t n = readlink("/proc/self/exe", e.exe, sizeof e.exe - 1);
    if (n <= 0 || (size_t)n >= sizeof e.exe - 1) {
        fprintf(stderr, "bench_e2e: cannot read /proc/self/exe\n");
        return 1;
    }
    e.exe[n] = '\0';

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = e2e_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    fair_kconfig_init(&e.cfg);
    snprintf(e.id, sizeof e.id, "%06lx",
             ((unsigned long)getpid() * 2654435761UL ^ (unsigned long)time(NULL)) & 0xffffff);
    const char *tmp = getenv("TMPDIR");
    snprintf(e.dir, sizeof e.dir, "%s/bench-e2e-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", e.id);
    if (!mkdtemp(e.dir)) {
        fprintf(stderr, "bench_e2e: cannot create %s: %s\n", e.dir, strerror(errno));
        e.dir[0] = '\0';
        goto out;
    }
    if (!(e.report = json_object()))
        goto out;
    if (fair_kconfig_load(e.o.kubeconfig, &e.cfg, &err))
        goto fail;
    if (!(e.base = event_base_new())) {
        fair_error_set(&err, FAIR_ENOMEM, "cannot create the event loop");
        goto fail;
    }
    struct fair_kclient_options ko;
    memset(&ko, 0, sizeof ko);
    fair_kclient_options_default(&ko);
    ko.qps = -1; /* the harness must never be what limits a run */
    if (fair_kclient_new(e.base, &e.cfg, &ko, &e.kc, &err))
        goto fail;
    struct timeval tv = {0, E2E_TICK_MS * 1000};
    if (!(e.tick = event_new(e.base, -1, EV_PERSIST, e2e_tick, NULL)) || event_add(e.tick, &tv)) {
        fair_error_set(&err, FAIR_ENOMEM, "cannot create the loop's tick");
        goto fail;
    }
    e.tr.kc = e.kc;
    snprintf(e.tr.selector, sizeof e.tr.selector, E2E_RUN_LABEL "=%s", e.id);
    e2e_note("run %s on %s; logs in %s", e.id, e.cfg.server, e.dir);
    json_object_set_new(e.report, "run", json_string(e.id));
    json_object_set_new(e.report, "server", json_string(e.cfg.server));
    json_object_set_new(e.report, "controller", json_string(e.o.controller));
    json_object_set_new(e.report, "rounds", json_integer(e.o.rounds));
    json_object_set_new(e.report, "reclaim_runs", json_integer(e.o.reclaim_runs));
    if (e2e_install_crds(&e, &err) || e2e_tracker_relist(&e.tr, &err))
        goto fail;
    if (!e.o.skip_throughput && e2e_throughput(&e, &err))
        goto fail;
    if (!e.o.skip_reclaim && e2e_reclaim(&e, &err))
        goto fail;
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "bench_e2e: %s\n", err.msg);
    if (e.dir[0])
        fprintf(stderr, "bench_e2e: logs kept in %s\n", e.dir);
out:
    if (e.kc)
        e2e_cleanup(&e);
    if (e.report && e.o.json_path) {
        json_object_set_new(e.report, "ok", json_boolean(rc == 0));
        if (json_dump_file(e.report, e.o.json_path, JSON_INDENT(2)) != 0) {
            fprintf(stderr, "bench_e2e: cannot write %s\n", e.o.json_path);
            rc = 1;
        }
    }
    json_decref(e.report);
    if (e.tr.watch)
        fair_kreq_cancel(e.tr.watch);
    for (size_t i = e.tr.ngroups; i-- > 0;)
        e2e_group_retire(&e.tr, e.tr.groups[i]);
    fair_kclient_free(e.kc);
    if (e.tick)
        event_free(e.tick);
    if (e.base)
        event_base_free(e.base);
    fair_kconfig_release(&e.cfg);
    fair_free(e.cordoned);
    curl_global_cleanup();
    if (e.dir[0] && rc == 0 && !e.o.keep_logs) {
        if (e2e_rm_dir(e.dir) != 0)
            fprintf(stderr, "bench_e2e: could not remove %s\n", e.dir);
    } else if (e.dir[0] && rc == 0) {
        e2e_note("logs kept in %s", e.dir);
    }
    return rc;
}
