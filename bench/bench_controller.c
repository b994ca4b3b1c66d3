/* bench_controller: the controller end to end through the fake API server
 * (build-bench/fakekube over HTTPS), as real processes.
 *
 *  1. Bind throughput: 1,000 nodes x 8 GPUs, 10,000 pending pods of 0.5 GPU
 *     created before the controller starts; pods bound per second from the
 *     controller's readiness to the last bind (each bind is an annotation
 *     patch plus a pods/binding POST, as the controller does it), and the
 *     controller's RSS afterwards.
 *  2. The same pods bound by a minimal client (lib/kube, the same two
 *     requests per pod, no informers, no engine) through a fresh server:
 *     the ceiling the controller is compared with.
 *  3. Memory at scale: 5,000 nodes and 150,000 bound pods: the controller's
 *     RSS once its informers have synced and it has run cycles.
 *  4. Reclaim latency: a queue owed its guarantee creates one pod at a time
 *     while another queue borrows; time from the pod's creation to the
 *     eviction made for it (seen through the controller's preemption
 *     counter), p50 and p99 over 100 samples.
 *
 * Usage: bench_controller [--quick] (quick: smaller sizes, for a smoke run).
 * Prints one line per figure; the numbers go to docs/performance.md. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/log.h"
#include "kube/client.h"
#include "kube/config.h"

static char bindir[PATH_MAX];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static pid_t spawn(char *const argv[], const char *log)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static void stop(pid_t pid, int sig)
{
    if (pid <= 0)
        return;
    kill(pid, sig);
    waitpid(pid, NULL, 0);
}

static long rss_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    if (!f)
        return -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return v;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- the fake API server and a client for it ---- */

struct fake {
    pid_t pid;
    char dir[256];
    struct event_base *base;
    struct fair_kconfig cfg;
    struct fair_kclient *kc;
};

static int fake_start(struct fake *f, int nodes)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/bench-controller-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    char bin[PATH_MAX + 32], statedir[300], portfile[320], n[32], log[320];
    snprintf(bin, sizeof bin, "%s/fakekube", bindir);
    snprintf(statedir, sizeof statedir, "%s/fake", f->dir);
    snprintf(portfile, sizeof portfile, "%s/port", f->dir);
    snprintf(log, sizeof log, "%s/fakekube.log", f->dir);
    snprintf(n, sizeof n, "%d", nodes);
    char *argv[] = {bin, "--state-dir",     statedir, "--port-file", portfile, "--nodes",
                    n,   "--gpus-per-node", "8",      "--history",   "400000", "--persist-ms",
                    "0", "--bookmark-ms",   "0",      "--log-level", "error",  NULL};
    f->pid = spawn(argv, log);
    struct stat st;
    for (int i = 0; i < 600 && (stat(portfile, &st) != 0 || st.st_size == 0); i++)
        nap_ms(50);
    char kc[320];
    snprintf(kc, sizeof kc, "%s/kubeconfig", statedir);
    struct fair_error err = {0};
    fair_kconfig_init(&f->cfg);
    if (fair_kconfig_load_kubeconfig(kc, NULL, &f->cfg, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return -1;
    }
    f->base = event_base_new();
    struct fair_kclient_options o = {0};
    fair_kclient_options_default(&o);
    o.qps = -1;
    if (fair_kclient_new(f->base, &f->cfg, &o, &f->kc, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void fake_stop(struct fake *f)
{
    fair_kclient_free(f->kc);
    if (f->base)
        event_base_free(f->base);
    fair_kconfig_release(&f->cfg);
    stop(f->pid, SIGKILL);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench: could not remove %s\n", f->dir);
}

/* Runs `total` requests made by make(i) with at most `window` in flight. */
struct pump {
    struct fake *f;
    long total, next, done, failed, window, inflight;
    int (*make)(struct pump *p, long i);
    void *arg;
};

static void pump_cb(const struct fair_kresponse *resp, void *ctx);

static void pump_fill(struct pump *p)
{
    while (p->inflight < p->window && p->next < p->total) {
        long i = p->next++;
        if (p->make(p, i) == 0)
            p->inflight++;
        else {
            p->done++;
            p->failed++;
        }
    }
    if (p->done == p->total)
        event_base_loopbreak(p->f->base);
}

static void pump_cb(const struct fair_kresponse *resp, void *ctx)
{
    struct pump *p = ctx;
    if (resp->rc) {
        if (p->failed++ < 3)
            fprintf(stderr, "bench: request failed: %s\n", resp->err.msg);
    }
    p->inflight--;
    p->done++;
    pump_fill(p);
}

static long pump_run(struct pump *p)
{
    pump_fill(p);
    if (p->done < p->total)
        event_base_dispatch(p->f->base);
    return p->failed;
}

static int post(struct pump *p, const char *path, const char *body)
{
    struct fair_error err = {0};
    return fair_kclient_request(p->f->kc, "POST", path, NULL, body, strlen(body), 0, pump_cb, p,
                                NULL, &err);
}

static int make_setup(struct pump *p, long i)
{
    static const char *objs[][2] = {
        {"/api/v1/namespaces", "{\"metadata\":{\"name\":\"bench\"}}"},
        {"/apis/fairshare.dev/v1alpha1/projects",
         "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\",\"metadata\":{\"name\":"
         "\"p\"},\"spec\":{\"namespaces\":[\"bench\"],\"guaranteed\":{\"gpu\":100}}}"},
        {"/apis/fairshare.dev/v1alpha1/projects",
         "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\",\"metadata\":{\"name\":"
         "\"o\"},\"spec\":{\"namespaces\":[\"other\"],\"guaranteed\":{\"gpu\":100}}}"},
        {"/api/v1/namespaces", "{\"metadata\":{\"name\":\"other\"}}"},
        {"/apis/fairshare.dev/v1alpha1/queues",
         "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
         "\"q\"},\"spec\":{\"project\":\"p\",\"guaranteed\":{\"gpu\":100}}}"},
        {"/apis/fairshare.dev/v1alpha1/queues",
         "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
         "\"qo\"},\"spec\":{\"project\":\"o\",\"guaranteed\":{\"gpu\":100}}}"},
    };
    return post(p, objs[i][0], objs[i][1]);
}

/* Pending pods of 0.5 GPU in queue q. */
static int make_pending(struct pump *p, long i)
{
    char body[700];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%06ld\","
             "\"namespace\":\"bench\",\"labels\":{\"fairshare.dev/queue\":\"q\"},"
             "\"annotations\":{\"fairshare.dev/gpu-fraction\":\"0.5\"}},"
             "\"spec\":{\"schedulerName\":\"fairshare\",\"terminationGracePeriodSeconds\":0,"
             "\"containers\":[{\"name\":\"m\",\"image\":\"x\",\"resources\":{\"requests\":"
             "{\"cpu\":\"100m\"}}}]}}",
             i);
    return post(p, "/api/v1/namespaces/bench/pods", body);
}

/* Bound pods of 0.25 GPU, 30 per node, in queue q (memory at scale). */
static int make_bound(struct pump *p, long i)
{
    char body[900];
    long node = i / 30, k = i % 30;
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"b-%07ld\","
             "\"namespace\":\"bench\",\"labels\":{\"fairshare.dev/queue\":\"q\",\"app\":"
             "\"train\"},\"annotations\":{\"fairshare.dev/gpu-fraction\":\"0.25\","
             "\"fairshare.dev/gpu-devices\":\"%ld\"}},"
             "\"spec\":{\"schedulerName\":\"fairshare\",\"nodeName\":\"node-%04ld\","
             "\"containers\":[{\"name\":\"m\",\"image\":\"x\",\"resources\":{\"requests\":"
             "{\"cpu\":\"100m\",\"memory\":\"1Gi\"}}}]}}",
             i, k / 4, node);
    return post(p, "/api/v1/namespaces/bench/pods", body);
}

/* ---- the controller process ---- */

struct ctl {
    pid_t pid;
    int port;
    char log[320];
};

static char *http_get(int port, const char *path, long *code)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, (curl_write_callback)NULL);
    FILE *mem = NULL;
    char *data = NULL;
    size_t len = 0;
    mem = open_memstream(&data, &len);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
    *code = 0;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
    curl_easy_cleanup(h);
    fclose(mem);
    return data;
}

static double metric(int port, const char *series)
{
    long code = 0;
    char *body = http_get(port, "/metrics", &code);
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

static int ctl_start(struct ctl *c, struct fake *f)
{
    char bin[PATH_MAX + 32], kc[320], cfg[320], ledger[320], listen[64];
    snprintf(bin, sizeof bin, "%s/fairshare-controller", bindir);
    snprintf(kc, sizeof kc, "%s/fake/kubeconfig", f->dir);
    snprintf(cfg, sizeof cfg, "%s/config.yaml", f->dir);
    snprintf(ledger, sizeof ledger, "%s/ledger.db", f->dir);
    snprintf(c->log, sizeof c->log, "%s/controller.log", f->dir);
    c->port = free_port();
    snprintf(listen, sizeof listen, "127.0.0.1:%d", c->port);
    FILE *fp = fopen(cfg, "w");
    if (!fp)
        return -1;
    fprintf(fp,
            "apiVersion: config.fairshare.dev/v1alpha1\nkind: ControllerConfig\n"
            "leaderElection: {enabled: false}\ncycleInterval: 1s\n"
            "kubeAPI: {qps: 100000, burst: 100000}\nlogLevel: %s\n",
            getenv("BENCH_LOG_LEVEL") ? getenv("BENCH_LOG_LEVEL") : "warn");
    fclose(fp);
    char *argv[] = {bin,        "--kubeconfig", kc,         "--config", cfg,
                    "--ledger", ledger,         "--listen", listen,     NULL};
    c->pid = spawn(argv, c->log);
    for (int i = 0; i < 2400; i++) {
        long code = 0;
        free(http_get(c->port, "/readyz", &code));
        if (code == 200)
            return 0;
        nap_ms(25);
    }
    fprintf(stderr, "bench: the controller did not become ready; see %s\n", c->log);
    return -1;
}

/* ---- 1 + 2: bind throughput ---- */

static int create_setup(struct fake *f)
{
    struct pump p = {.f = f, .total = 6, .window = 1, .make = make_setup};
    return pump_run(&p) ? -1 : 0;
}

static int bench_binds(int nodes, long pods, double *rate, long *rss, long *hwm)
{
    struct fake f;
    struct ctl c = {0};
    int rc = -1;
    if (fake_start(&f, nodes) || create_setup(&f))
        goto out;
    struct pump p = {.f = &f, .total = pods, .window = 64, .make = make_pending};
    double t = now_s();
    if (pump_run(&p))
        goto out;
    printf("setup: %ld pending pods created in %.1f s\n", pods, now_s() - t);
    double t0 = now_s();
    if (ctl_start(&c, &f))
        goto out;
    double tready = now_s();
    double bound = 0;
    while ((bound = metric(c.port, "fairshare_binds_total")) < pods && now_s() - t0 < 600)
        nap_ms(20);
    double t1 = now_s();
    *rate = (double)pods / (t1 - tready);
    *rss = rss_kb(c.pid, "VmRSS");
    *hwm = rss_kb(c.pid, "VmHWM");
    printf("controller: start to ready %.2f s (lists %ld pods), ready to %ld binds %.2f s\n",
           tready - t0, pods, pods, t1 - tready);
    rc = bound >= pods ? 0 : -1;
    if (getenv("BENCH_SHOW_CYCLES")) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "grep 'msg=\"cycle' '%s' | awk 'NR %% 20 == 1' | tail -n 15",
                 c.log);
        if (system(cmd) != 0)
            fprintf(stderr, "bench: no cycle lines\n");
    }
out:
    stop(c.pid, SIGTERM);
    fake_stop(&f);
    return rc;
}

/* The minimal client: patch the devices, then bind (node i/16, device
 * (i%16)/2), and with `events` also the Scheduled Event, as the controller
 * writes them; at most 256 pods in flight, as the controller does. */
#define MINIMAL_WINDOW 256

struct minimal {
    long pods, next, finished, failed, inflight;
    bool events;
    struct fake *f;
};

struct minimal_req {
    struct minimal *m;
    long i;
};

static void minimal_start(struct minimal *m);

static void minimal_finish(struct minimal_req *r, bool ok)
{
    struct minimal *m = r->m;
    if (!ok)
        m->failed++;
    free(r);
    m->inflight--;
    m->finished++;
    if (m->finished == m->pods)
        event_base_loopbreak(m->f->base);
    else
        minimal_start(m);
}

static void minimal_event_done(const struct fair_kresponse *resp, void *ctx)
{
    struct minimal_req *r = ctx;
    if (resp->rc && r->m->failed < 3)
        fprintf(stderr, "bench: event failed: %s\n", resp->err.msg);
    minimal_finish(r, resp->rc == 0);
}

static void minimal_bound(const struct fair_kresponse *resp, void *ctx)
{
    struct minimal_req *r = ctx;
    struct minimal *m = r->m;
    if (resp->rc) {
        if (m->failed < 3)
            fprintf(stderr, "bench: bind failed: %s\n", resp->err.msg);
        minimal_finish(r, false);
        return;
    }
    if (!m->events) {
        minimal_finish(r, true);
        return;
    }
    char name[32], msg[200];
    snprintf(name, sizeof name, "p-%06ld", r->i);
    snprintf(msg, sizeof msg, "Bound bench/%s to node node-%04ld, GPUs %ld (queue q)", name,
             r->i / 16, (r->i % 16) / 2);
    struct fair_kevent_ref ref = {
        .api_version = "v1", .kind = "Pod", .namespace_ = "bench", .name = name};
    struct fair_error err = {0};
    if (fair_kclient_event(m->f->kc, &ref, "Normal", "Scheduled", msg, "minimal",
                           minimal_event_done, r, &err))
        minimal_finish(r, false);
}

/* One write per pod, as the controller binds: the Binding carries the
 * device annotation, which the API server copies onto the pod. */
static void minimal_start(struct minimal *m)
{
    while (m->inflight < MINIMAL_WINDOW && m->next < m->pods) {
        long i = m->next++;
        char name[32], node[32], dev[16];
        struct fair_error err = {0};
        snprintf(name, sizeof name, "p-%06ld", i);
        snprintf(node, sizeof node, "node-%04ld", i / 16);
        snprintf(dev, sizeof dev, "%ld", (i % 16) / 2);
        const char *ann[2] = {"fairshare.dev/gpu-devices", dev};
        struct minimal_req *r = malloc(sizeof *r);
        r->m = m;
        r->i = i;
        m->inflight++;
        if (fair_kclient_bind(m->f->kc, "bench", name, NULL, node, ann, 1, minimal_bound, r, &err))
            minimal_finish(r, false);
    }
}

static int bench_minimal(int nodes, long pods, bool events, double *rate)
{
    struct fake f;
    int rc = -1;
    if (fake_start(&f, nodes) || create_setup(&f))
        goto out;
    struct pump p = {.f = &f, .total = pods, .window = 64, .make = make_pending};
    if (pump_run(&p))
        goto out;
    struct minimal m = {.pods = pods, .f = &f, .events = events};
    double t0 = now_s();
    minimal_start(&m);
    if (m.finished < pods)
        event_base_dispatch(f.base);
    double t1 = now_s();
    *rate = (double)pods / (t1 - t0);
    rc = m.failed ? -1 : 0;
out:
    fake_stop(&f);
    return rc;
}

/* ---- 3: memory at scale ---- */

static int bench_memory(int nodes, long pods, long *rss, long *hwm)
{
    struct fake f;
    struct ctl c = {0};
    int rc = -1;
    if (fake_start(&f, nodes) || create_setup(&f))
        goto out;
    struct pump p = {.f = &f, .total = pods, .window = 64, .make = make_bound};
    double t = now_s();
    if (pump_run(&p))
        goto out;
    printf("setup: %ld bound pods on %d nodes created in %.1f s\n", pods, nodes, now_s() - t);
    double t0 = now_s();
    if (ctl_start(&c, &f))
        goto out;
    double tready = now_s();
    double cycles0 = metric(c.port, "fairshare_cycles_total");
    while (metric(c.port, "fairshare_cycles_total") < cycles0 + 3 && now_s() - tready < 120)
        nap_ms(100);
    *rss = rss_kb(c.pid, "VmRSS");
    *hwm = rss_kb(c.pid, "VmHWM");
    double sum = metric(c.port, "fairshare_cycle_duration_seconds_sum");
    double cnt = metric(c.port, "fairshare_cycle_duration_seconds_count");
    printf("controller: start to ready %.2f s; mean cycle %.1f ms over %.0f cycles\n", tready - t0,
           cnt > 0 ? sum / cnt * 1000 : -1, cnt);
    rc = 0;
    if (getenv("BENCH_SHOW_CYCLES")) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "grep 'msg=\"cycle' '%s' | tail -n 4", c.log);
        if (system(cmd) != 0)
            fprintf(stderr, "bench: no cycle lines\n");
    }
out:
    stop(c.pid, SIGTERM);
    fake_stop(&f);
    return rc;
}

/* ---- 4: reclaim latency ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int make_borrower(struct pump *p, long i)
{
    char body[700];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"o-%04ld\","
             "\"namespace\":\"other\",\"labels\":{\"fairshare.dev/queue\":\"qo\"}},"
             "\"spec\":{\"schedulerName\":\"fairshare\",\"terminationGracePeriodSeconds\":0,"
             "\"containers\":[{\"name\":\"m\",\"image\":\"x\",\"resources\":{\"limits\":"
             "{\"nvidia.com/gpu\":\"1\"}}}]}}",
             i);
    return post(p, "/api/v1/namespaces/other/pods", body);
}

static int bench_reclaim(int samples, double *p50, double *p99)
{
    struct fake f;
    struct ctl c = {0};
    int rc = -1;
    /* 25 nodes x 8 = 200 GPUs; q and qo are each guaranteed 100; qo
     * borrows all 200, then q takes back one GPU per sample. */
    if (fake_start(&f, 25) || create_setup(&f))
        goto out;
    if (ctl_start(&c, &f))
        goto out;
    struct pump p = {.f = &f, .total = 200, .window = 32, .make = make_borrower};
    if (pump_run(&p))
        goto out;
    while (metric(c.port, "fairshare_binds_total") < 200)
        nap_ms(20);
    double *lat = calloc((size_t)samples, sizeof *lat);
    int n = 0;
    for (int i = 0; i < samples && i < 100; i++) {
        double before = metric(c.port, "fairshare_preemptions_total{reason=\"reclaim\"}");
        double binds = metric(c.port, "fairshare_binds_total");
        char body[700], path[] = "/api/v1/namespaces/bench/pods";
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"s-%04d\","
                 "\"namespace\":\"bench\",\"labels\":{\"fairshare.dev/queue\":\"q\"}},"
                 "\"spec\":{\"schedulerName\":\"fairshare\",\"containers\":[{\"name\":\"m\","
                 "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
                 i);
        struct fair_error err = {0};
        long status = 0;
        double t0 = now_s();
        if (fair_kclient_request_sync(f.kc, "POST", path, body, 0, &status, NULL, &err) ||
            status != 201)
            break;
        while (metric(c.port, "fairshare_preemptions_total{reason=\"reclaim\"}") <= before &&
               now_s() - t0 < 30)
            nap_ms(1);
        lat[n++] = now_s() - t0;
        /* Let the starved pod be bound before the next sample. */
        while (metric(c.port, "fairshare_binds_total") <= binds && now_s() - t0 < 30)
            nap_ms(2);
    }
    if (n > 0) {
        qsort(lat, (size_t)n, sizeof *lat, cmp_double);
        *p50 = lat[n / 2] * 1000;
        *p99 = lat[(n * 99) / 100 >= n ? n - 1 : (n * 99) / 100] * 1000;
        printf("reclaim: %d samples (includes this client's POST and /metrics polling)\n", n);
        rc = 0;
    }
    free(lat);
out:
    stop(c.pid, SIGTERM);
    fake_stop(&f);
    return rc;
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    char self[PATH_MAX];
    snprintf(self, sizeof self, "%s", argv[0]);
    /* build-bench/bench/bench_controller -> build-bench */
    snprintf(bindir, sizeof bindir, "%s/..", dirname(self));
    signal(SIGPIPE, SIG_IGN);
    fair_log_set_level(FAIR_LOG_ERROR);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int nodes = quick ? 100 : 1000;
    long pods = quick ? 1000 : 10000;
    int big_nodes = quick ? 500 : 5000;
    long big_pods = quick ? 15000 : 150000;

    double rate = 0, mrate = 0, p50 = 0, p99 = 0;
    long rss = 0, hwm = 0, brss = 0, bhwm = 0;
    if (getenv("BENCH_ONLY_MEMORY"))
        goto memory;
    bool only_binds = getenv("BENCH_ONLY_BINDS") != NULL;
    if (bench_binds(nodes, pods, &rate, &rss, &hwm) == 0)
        printf("binds: %d nodes x 8 GPUs, %ld pods of 0.5 GPU: %.0f pods/s; controller RSS %.1f "
               "MB (peak %.1f MB)\n",
               nodes, pods, rate, rss / 1024.0, hwm / 1024.0);
    else
        printf("binds: FAILED\n");
    if (bench_minimal(nodes, pods, false, &mrate) == 0)
        printf("minimal client: the same %ld pods (one bind each, devices on the Binding): "
               "%.0f pods/s; controller "
               "at %.0f%% of it\n",
               pods, mrate, mrate > 0 ? 100.0 * rate / mrate : 0);
    else
        printf("minimal client: FAILED\n");
    if (bench_minimal(nodes, pods, true, &mrate) == 0)
        printf("minimal client with a Scheduled Event per bind right after it (bind + event; the "
               "controller defers its Events): %.0f pods/s; controller at %.0f%% of it\n",
               mrate, mrate > 0 ? 100.0 * rate / mrate : 0);
    else
        printf("minimal client with events: FAILED\n");
    if (only_binds)
        goto done;
    if (bench_reclaim(100, &p50, &p99) == 0)
        printf("reclaim latency (starved pod created -> its eviction done): p50 %.1f ms, p99 %.1f "
               "ms\n",
               p50, p99);
    else
        printf("reclaim: FAILED\n");
memory:
    if (bench_memory(big_nodes, big_pods, &brss, &bhwm) == 0)
        printf("memory: %d nodes, %ld bound pods: controller RSS %.1f MB (peak %.1f MB)\n",
               big_nodes, big_pods, brss / 1024.0, bhwm / 1024.0);
    else
        printf("memory: FAILED\n");
done:
    curl_global_cleanup();
    return 0;
}
