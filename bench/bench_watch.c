/* Benchmark of the watch path into the informer store: realistic pod
 * events (~3 KB of JSON each, like real pods with managed fields trimmed)
 * go through the framing (in 16 KiB chunks, as reads from a socket),
 * event parsing, pod decoding and the store, exactly as the informer does.
 * Prints the median of 5 runs in pod events per second, and the store's
 * memory per cached pod (malloc'd bytes after / pods, from mallinfo2).
 *
 *   make bench   or   build-bench/bench/bench_watch [pods] */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "cache/store.h"
#include "kube/decode.h"
#include "kube/watch.h"

#define POD_FMT \
    "{\"type\":\"%s\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{" \
    "\"name\":\"train-resnet-%06d-worker-%d\",\"generateName\":\"train-resnet-%06d-worker-\"," \
    "\"namespace\":\"team-%02d\",\"uid\":\"6f1c%04x-1b2e-4c5d-9e8f-%012d\"," \
    "\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-11-23T19:00:00Z\"," \
    "\"labels\":{\"app.kubernetes.io/name\":\"resnet\",\"app.kubernetes.io/instance\":" \
    "\"train-resnet-%06d\",\"fairshare.dev/queue\":\"research-%d\"," \
    "\"fairshare.dev/preemptible\":\"true\",\"batch.kubernetes.io/job-name\":\"train-resnet-%06d\"," \
    "\"controller-uid\":\"0a1b2c3d-4e5f-6789-abcd-ef0123456789\"}," \
    "\"annotations\":{\"fairshare.dev/gang\":\"train-resnet-%06d\",\"fairshare.dev/gang-size\":" \
    "\"4\",\"kubectl.kubernetes.io/default-container\":\"trainer\",\"prometheus.io/scrape\":" \
    "\"true\",\"prometheus.io/port\":\"9090\"}," \
    "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":" \
    "\"train-resnet-%06d\",\"uid\":\"0a1b2c3d-4e5f-6789-abcd-ef0123456789\",\"controller\":true," \
    "\"blockOwnerDeletion\":true}],\"finalizers\":[\"batch.kubernetes.io/job-tracking\"]}," \
    "\"spec\":{\"schedulerName\":\"fairshare\",\"priority\":100,\"priorityClassName\":" \
    "\"research\",\"restartPolicy\":\"Never\",\"serviceAccountName\":\"trainer\"," \
    "\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\",\"enableServiceLinks\":" \
    "true,\"nodeSelector\":{\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"},%s" \
    "\"containers\":[{\"name\":\"trainer\",\"image\":\"registry.example.com/ml/resnet:2.4.1\"," \
    "\"command\":[\"python\",\"-m\",\"torch.distributed.run\",\"--nproc_per_node=8\"," \
    "\"train.py\"],\"args\":[\"--epochs=90\",\"--batch-size=256\",\"--data=/data/imagenet\"]," \
    "\"env\":[{\"name\":\"MASTER_ADDR\",\"value\":\"train-resnet-%06d-worker-0\"},{\"name\":" \
    "\"MASTER_PORT\",\"value\":\"29500\"},{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"},{\"name\":" \
    "\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":" \
    "\"metadata.name\"}}}],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"64\"," \
    "\"memory\":\"512Gi\"},\"requests\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"48\",\"memory\":" \
    "\"384Gi\"}},\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\",\"readOnly\":true}," \
    "{\"name\":\"dshm\",\"mountPath\":\"/dev/shm\"},{\"name\":\"kube-api-access-x7k2p\"," \
    "\"readOnly\":true,\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}]," \
    "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\"," \
    "\"imagePullPolicy\":\"IfNotPresent\"},{\"name\":\"metrics\",\"image\":" \
    "\"registry.example.com/ml/exporter:1.2\",\"resources\":{\"requests\":{\"cpu\":\"100m\"," \
    "\"memory\":\"64Mi\"}}}]," \
    "\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"imagenet\"}}," \
    "{\"name\":\"dshm\",\"emptyDir\":{\"medium\":\"Memory\",\"sizeLimit\":\"64Gi\"}},{\"name\":" \
    "\"kube-api-access-x7k2p\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{" \
    "\"expirationSeconds\":3607,\"path\":\"token\"}},{\"configMap\":{\"name\":" \
    "\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}}]}}]," \
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":" \
    "\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\"," \
    "\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":" \
    "\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"," \
    "\"tolerationSeconds\":300}]}," \
    "\"status\":{\"phase\":\"%s\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":" \
    "\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-11-23T19:00:01Z\"}%s]," \
    "\"qosClass\":\"Burstable\"%s}}}\n"

/* Appends one event for pod i at resourceVersion rv. */
static void add_event(struct fair_buf *b, const char *type, int i, int rv, int bound)
{
    int job = i / 4, worker = i % 4;
    fair_buf_appendf(b, POD_FMT, type, job, worker, job, i % 20, (unsigned)(i & 0xffff), i, rv,
                     job, i % 5, job, job, job, bound ? "\"nodeName\":\"gpu-node-0123\"," : "",
                     job, bound ? "Running" : "Pending",
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

int main(int argc, char **argv)
{
    int npods = argc > 1 ? atoi(argv[1]) : 20000; /* NOLINT: bench argument */
    if (npods < 100 || npods > 1000000)
        npods = 20000;
    struct fair_buf adds, mods;
    fair_buf_init(&adds, (size_t)1 << 32);
    fair_buf_init(&mods, (size_t)1 << 32);
    for (int i = 0; i < npods; i++)
        add_event(&adds, "ADDED", i, 1000 + i, 0);
    for (int i = 0; i < npods; i++)
        add_event(&mods, "MODIFIED", i, 1000 + npods + i, 1);
    printf("pods=%d event_bytes_avg=%zu\n", npods, (adds.len + mods.len) / (2 * (size_t)npods));

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
    printf("watch_decode_store_cpu: median %.0f pod events per CPU-second\n",
           cpu_rate[RUNS / 2]);
    printf("store_memory: median %.0f bytes per cached pod (malloc'd bytes, incl. store tables)\n",
           per_pod[RUNS / 2]);
    printf("struct fair_kpod: %zu bytes\n", sizeof(struct fair_kpod));
    fair_buf_release(&adds);
    fair_buf_release(&mods);
    return 0;
}
