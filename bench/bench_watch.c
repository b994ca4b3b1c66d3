/* Benchmark of the watch path into the informer store: realistic pod
 * events (~3 KB of JSON each, like real pods with managed fields trimmed)
 * go through the framing (in 16 KiB chunks, as reads from a socket),
 * event parsing, pod decoding and the store, exactly as the informer does.
 * Prints the median of 5 runs in pod events per second, and the store's
 * memory per cached pod (malloc'd bytes after / pods, from mallinfo2).
 * Then, when the fake API server was built next to it, the same over real
 * TLS: an informer's first list of N pods, and pods created through the
 * client as seen by a watching informer (end to end, one run each).
 *
 *   make bench   or   build-bench/bench/bench_watch [pods] */
#include <event2/event.h>
#include <libgen.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "cache/informer.h"
#include "cache/store.h"
#include "kube/client.h"
#include "kube/decode.h"
#include "kube/watch.h"

#define POD_FMT                                                                                    \
    "{\"type\":\"%s\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"           \
    "\"name\":\"train-resnet-%06d-worker-%d\",\"generateName\":\"train-resnet-%06d-worker-\","     \
    "\"namespace\":\"team-%02d\",\"uid\":\"6f1c%04x-1b2e-4c5d-9e8f-%012d\","                       \
    "\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-11-23T19:00:00Z\","                   \
    "\"labels\":{\"app.kubernetes.io/name\":\"resnet\",\"app.kubernetes.io/instance\":"            \
    "\"train-resnet-%06d\",\"fairshare.dev/queue\":\"research-%d\","                               \
    "\"fairshare.dev/preemptible\":\"true\",\"batch.kubernetes.io/"                                \
    "job-name\":\"train-resnet-%06d\","                                                            \
    "\"controller-uid\":\"0a1b2c3d-4e5f-6789-abcd-ef0123456789\"},"                                \
    "\"annotations\":{\"fairshare.dev/gang\":\"train-resnet-%06d\",\"fairshare.dev/gang-size\":"   \
    "\"4\",\"kubectl.kubernetes.io/default-container\":\"trainer\",\"prometheus.io/scrape\":"      \
    "\"true\",\"prometheus.io/port\":\"9090\"},"                                                   \
    "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":"                 \
    "\"train-resnet-%06d\",\"uid\":\"0a1b2c3d-4e5f-6789-abcd-ef0123456789\",\"controller\":true,"  \
    "\"blockOwnerDeletion\":true}],\"finalizers\":[\"batch.kubernetes.io/job-tracking\"]},"        \
    "\"spec\":{\"schedulerName\":\"fairshare\",\"priority\":100,\"priorityClassName\":"            \
    "\"research\",\"restartPolicy\":\"Never\",\"serviceAccountName\":\"trainer\","                 \
    "\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\",\"enableServiceLinks\":"  \
    "true,\"nodeSelector\":{\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"},%s"              \
    "\"containers\":[{\"name\":\"trainer\",\"image\":\"registry.example.com/ml/resnet:2.4.1\","    \
    "\"command\":[\"python\",\"-m\",\"torch.distributed.run\",\"--nproc_per_node=8\","             \
    "\"train.py\"],\"args\":[\"--epochs=90\",\"--batch-size=256\",\"--data=/data/imagenet\"],"     \
    "\"env\":[{\"name\":\"MASTER_ADDR\",\"value\":\"train-resnet-%06d-worker-0\"},{\"name\":"      \
    "\"MASTER_PORT\",\"value\":\"29500\"},{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"},{\"name\":" \
    "\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":"               \
    "\"metadata.name\"}}}],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"64\","    \
    "\"memory\":\"512Gi\"},\"requests\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"48\",\"memory\":"      \
    "\"384Gi\"}},\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\",\"readOnly\":true}," \
    "{\"name\":\"dshm\",\"mountPath\":\"/dev/shm\"},{\"name\":\"kube-api-access-x7k2p\","          \
    "\"readOnly\":true,\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}],"         \
    "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\","   \
    "\"imagePullPolicy\":\"IfNotPresent\"},{\"name\":\"metrics\",\"image\":"                       \
    "\"registry.example.com/ml/exporter:1.2\",\"resources\":{\"requests\":{\"cpu\":\"100m\","      \
    "\"memory\":\"64Mi\"}}}],"                                                                     \
    "\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"imagenet\"}},"     \
    "{\"name\":\"dshm\",\"emptyDir\":{\"medium\":\"Memory\",\"sizeLimit\":\"64Gi\"}},{\"name\":"   \
    "\"kube-api-access-x7k2p\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{"             \
    "\"expirationSeconds\":3607,\"path\":\"token\"}},{\"configMap\":{\"name\":"                    \
    "\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}}]}}],"             \
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"             \
    "\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","           \
    "\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":"                                \
    "\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","         \
    "\"tolerationSeconds\":300}]},"                                                                \
    "\"status\":{\"phase\":\"%s\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":"          \
    "\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-23T19:00:01Z\"}%s],"         \
    "\"qosClass\":\"Burstable\"%s}}}\n"

/* Appends one event for pod i at resourceVersion rv. */
static void add_event(struct fair_buf *b, const char *type, int i, int rv, int bound)
{
    int job = i / 4, worker = i % 4;
    fair_buf_appendf(b, POD_FMT, type, job, worker, job, i % 20, (unsigned)(i & 0xffff), i, rv, job,
                     i % 5, job, job, job, bound ? "\"nodeName\":\"gpu-node-0123\"," : "", job,
                     bound ? "Running" : "Pending",
                     bound ? ",{\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":null,"
                             "\"lastTransitionTime\":\"2026-11-23T19:00:05Z\"}"
                           : "",
                     bound ? ",\"hostIP\":\"10.0.12.34\",\"podIP\":\"10.244.3.17\",\"startTime\":"
                             "\"2026-11-23T19:00:02Z\""
                           : "");
}

struct sink {
    struct fair_store *store;
    long events;
    long errors;
};

static int on_line(const char *line, size_t len, void *ctx)
{
    struct sink *s = ctx;
    struct fair_kwatch_event ev;
    json_t *root;
    if (fair_kwatch_event_parse_filtered(line, len, fair_ktype_pod.filter, &ev, &root, NULL)) {
        s->errors++;
        return 0;
    }
    if (ev.type == FAIR_KWATCH_DELETED) {
        const char *uid =
            json_string_value(json_object_get(json_object_get(ev.object, "metadata"), "uid"));
        fair_kpod_free(fair_store_remove(s->store, uid));
    } else {
        struct fair_kpod *p;
        if (fair_kpod_decode(ev.object, &p, NULL) == 0)
            fair_store_put_take(s->store, p, NULL);
        else
            s->errors++;
    }
    json_decref(root);
    s->events++;
    return 0;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void feed(struct sink *s, const struct fair_buf *b)
{
    struct fair_kframer f;
    fair_kframer_init(&f, 0);
    for (size_t off = 0; off < b->len; off += 16384) {
        size_t n = b->len - off < 16384 ? b->len - off : 16384;
        fair_kframer_feed(&f, b->data + off, n, on_line, s, NULL);
    }
    fair_kframer_release(&f);
}

/* ---- over the fake API server ---- */

static struct event_base *base;
static int seen_adds;

static void count_add(void *obj, void *ctx)
{
    (void)obj;
    (void)ctx;
    seen_adds++;
}

static int created, create_errors;

static void on_created(const struct fair_kresponse *resp, void *ctx)
{
    (void)ctx;
    created++;
    if (resp->rc)
        create_errors++;
}

static void run_until(const int *v, int want, double timeout_s)
{
    double end = clock_s(CLOCK_MONOTONIC) + timeout_s;
    while (*v < want && clock_s(CLOCK_MONOTONIC) < end)
        event_base_loop(base, EVLOOP_ONCE);
}

static void on_synced(void *ctx)
{
    *(int *)ctx = 1;
}

static pid_t start_fake(const char *self, char *dir, size_t n)
{
    char exe[4096], bin[4200];
    snprintf(exe, sizeof exe, "%s", self);
    snprintf(bin, sizeof bin, "%s/../fakekube", dirname(exe));
    if (access(bin, X_OK) != 0)
        return -1;
    snprintf(dir, n, "/tmp/bench-fakekube-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char port_file[300];
    snprintf(port_file, sizeof port_file, "%s/port", dir);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        execl(bin, bin, "--state-dir", dir, "--port", "0", "--port-file", port_file, "--token",
              "bench-token", "--history", "100000", "--persist-ms", "0", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 1500; i++) {
        struct stat st;
        if (stat(port_file, &st) == 0 && st.st_size > 0)
            return pid;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static int bench_fake(const char *self, const struct fair_buf *events)
{
    char dir[64], path[128];
    pid_t pid = start_fake(self, dir, sizeof dir);
    if (pid < 0) {
        printf("over the fake API server: skipped (build/fakekube not found or did not start)\n");
        return 0;
    }
    fair_log_set_level(FAIR_LOG_ERROR);
    int rc = 1;
    struct fair_kconfig cfg;
    struct fair_kclient *c = NULL;
    struct fair_informer *inf = NULL, *inf2 = NULL;
    struct fair_error err = {0};
    base = event_base_new();
    snprintf(path, sizeof path, "%s/kubeconfig", dir);
    if (fair_kconfig_load_kubeconfig(path, NULL, &cfg, &err)) {
        fprintf(stderr, "bench_watch: %s\n", err.msg);
        goto out;
    }
    struct fair_kclient_options o = {.qps = -1, .max_host_connections = 8};
    rc = fair_kclient_new(base, &cfg, &o, &c, &err);
    fair_kconfig_release(&cfg);
    if (rc)
        goto out;
    rc = 1;
    fair_kclient_request_sync(c, "POST", "/api/v1/namespaces",
                              "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{"
                              "\"name\":\"bench\"}}",
                              0, NULL, NULL, NULL);
    /* Bodies: the objects of the ADDED events, minus server-set fields. */
    enum { NFAKE = 3000 };
    char **bodies = fair_calloc(NFAKE, sizeof *bodies);
    const char *p = events->data;
    int nb = 0;
    while (nb < NFAKE && p && *p) {
        const char *nl = strchr(p, '\n');
        json_t *ev = json_loadb(p, (size_t)(nl - p), 0, NULL);
        json_t *obj = json_object_get(ev, "object");
        json_t *md = json_object_get(obj, "metadata");
        json_object_del(md, "uid");
        json_object_del(md, "resourceVersion");
        json_object_del(md, "creationTimestamp");
        json_object_set_new(md, "namespace", json_string("bench"));
        json_object_del(obj, "status");
        bodies[nb++] = json_dumps(obj, JSON_COMPACT);
        json_decref(ev);
        p = nl + 1;
    }
    int synced = 0;
    struct fair_informer_options io = {
        .res = &fair_kres_pods, .type = &fair_ktype_pod, .ns = "bench"};
    struct fair_informer_handlers h = {count_add, NULL, NULL, on_synced, &synced};
    if (fair_informer_new(c, &io, &h, &inf, &err) || fair_informer_start(inf, &err))
        goto out;
    run_until(&synced, 1, 30);
    /* Pods created through the client (64 in flight), seen by the
     * watching informer. */
    double t0 = clock_s(CLOCK_MONOTONIC), cc0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    int sent = 0;
    while (created < nb) {
        while (sent < nb && sent - created < 64)
            fair_kclient_create(c, &fair_kres_pods, "bench", bodies[sent++], on_created, NULL,
                                NULL);
        event_base_loop(base, EVLOOP_ONCE);
    }
    run_until(&seen_adds, nb, 60);
    double t1 = clock_s(CLOCK_MONOTONIC), cc1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    printf("fake_server_create_watch: %d pods created and seen through the watch in %.2f s: "
           "%.0f pods/s end to end (%d create errors; client CPU %.2f s)\n",
           nb, t1 - t0, nb / (t1 - t0), create_errors, cc1 - cc0);
    /* A second informer's first list (pages of 500). */
    synced = 0;
    seen_adds = 0;
    if (fair_informer_new(c, &io, &h, &inf2, &err) || fair_informer_start(inf2, &err))
        goto out;
    t0 = clock_s(CLOCK_MONOTONIC);
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    run_until(&synced, 1, 60);
    t1 = clock_s(CLOCK_MONOTONIC);
    double c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    printf("fake_server_list: %zu pods listed into the store in %.3f s: %.0f pods/s "
           "(client CPU %.3f s: the rest is the fake server and the shared machine)\n",
           fair_store_len(fair_informer_store(inf2)), t1 - t0,
           (double)fair_store_len(fair_informer_store(inf2)) / (t1 - t0), c1 - c0);
    rc = seen_adds == nb && create_errors == 0 ? 0 : 1;
    for (int i = 0; i < nb; i++)
        free(bodies[i]);
    fair_free(bodies);
out:
    fair_informer_free(inf);
    fair_informer_free(inf2);
    fair_kclient_free(c);
    event_base_free(base);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_watch: cannot remove %s\n", dir);
    return rc;
}

int main(int argc, char **argv)
{
    long npods = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    if (npods < 100 || npods > 1000000)
        npods = 20000;
    struct fair_buf adds, mods;
    fair_buf_init(&adds, (size_t)1 << 32);
    fair_buf_init(&mods, (size_t)1 << 32);
    for (int i = 0; i < npods; i++)
        add_event(&adds, "ADDED", i, 1000 + i, 0);
    for (int i = 0; i < npods; i++)
        add_event(&mods, "MODIFIED", i, 1000 + (int)npods + i, 1);
    printf("pods=%ld event_bytes_avg=%zu\n", npods, (adds.len + mods.len) / (2 * (size_t)npods));

    enum { RUNS = 5 };
    double rate[RUNS], cpu_rate[RUNS];
    double per_pod[RUNS];
    for (int r = 0; r < RUNS; r++) {
        malloc_trim(0);
        struct mallinfo2 before = mallinfo2();
        struct sink s = {0};
        fair_store_new(&fair_ktype_pod, &s.store);
        double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        feed(&s, &adds); /* ADDED: the first list-like fill */
        feed(&s, &mods); /* MODIFIED: every pod replaced (bound, running) */
        double t1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        struct mallinfo2 after = mallinfo2();
        if (s.errors || s.events != 2L * npods || fair_store_len(s.store) != (size_t)npods) {
            fprintf(stderr, "bench_watch: %ld errors, %ld events, %zu pods\n", s.errors, s.events,
                    fair_store_len(s.store));
            return 1;
        }
        rate[r] = (double)s.events / (t1 - t0);
        cpu_rate[r] = (double)s.events / (c1 - c0);
        per_pod[r] = (double)(after.uordblks - before.uordblks) / npods;
        fair_store_free(s.store);
    }
    qsort(rate, RUNS, sizeof rate[0], cmp_double);
    qsort(per_pod, RUNS, sizeof per_pod[0], cmp_double);
    qsort(cpu_rate, RUNS, sizeof cpu_rate[0], cmp_double);
    printf("watch_decode_store: median %.0f pod events/s (min %.0f, max %.0f) over %d runs\n",
           rate[RUNS / 2], rate[0], rate[RUNS - 1], RUNS);
    /* On a shared machine the wall clock also counts time we were not
     * running; per CPU-second is the figure that does not depend on load. */
    printf("watch_decode_store_cpu: median %.0f pod events per CPU-second\n", cpu_rate[RUNS / 2]);
    printf("store_memory: median %.0f bytes per cached pod (malloc'd bytes, incl. store tables)\n",
           per_pod[RUNS / 2]);
    printf("struct fair_kpod: %zu bytes\n", sizeof(struct fair_kpod));
    int rc = getenv("FAIR_BENCH_NO_FAKE") ? 0 : bench_fake(argv[0], &adds);
    fair_buf_release(&adds);
    fair_buf_release(&mods);
    return rc;
}
