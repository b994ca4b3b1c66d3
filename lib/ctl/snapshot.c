/* Store contents to engine snapshot (see snapshot.h). Three passes:
 * objects (nodes, projects, queues) with their name indexes; pods,
 * classified as left out, bound, pending or rejected; then devices for bound
 * pods that carry no gpu-devices annotation. */
#include "ctl/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/mig.h"
#include "base/quantity.h"

/* The names pods use to join a PodGroup (kube/decode.h has them too; the
 * snapshot stays clear of the decoder). */
#define FAIR_KPG_LABEL_NAME "scheduling.x-k8s.io/pod-group"
#define FAIR_KPG_ANN_NAME "scheduling.k8s.io/group-name"
/* Nodes where HAMi-core enforces fractions' limits (docs/fractions.md). */
#define SNAP_LABEL_ISOLATION "fairshare.dev/gpu-isolation"
#define SNAP_ISOLATION_HAMI "hami-core"
/* GPU feature discovery's node label: the GPU memory in MiB. */
#define SNAP_LABEL_GPU_MEMORY "nvidia.com/gpu.memory"

const char *fair_ctl_reason_str(enum fair_ctl_reason r)
{
    switch (r) {
    case FAIR_CTL_REASON_NONE:
        return "None";
    case FAIR_CTL_REASON_UNKNOWN_QUEUE:
        return "UnknownQueue";
    case FAIR_CTL_REASON_NAMESPACE_NOT_ALLOWED:
        return "NamespaceNotAllowed";
    case FAIR_CTL_REASON_INVALID_QUEUE:
        return "InvalidQueue";
    case FAIR_CTL_REASON_BAD_POD:
        return "InvalidPod";
    case FAIR_CTL_REASON_PODGROUP_NOT_FOUND:
        return "PodGroupNotFound";
    case FAIR_CTL_REASON_BUDGET_EXHAUSTED:
        return "BudgetExhausted";
    case FAIR_CTL_REASON_VOLUME:
        return "VolumeNotReady";
    }
    return "?";
}

int fair_ctl_parse_devices(const char *s, uint64_t *mask)
{
    uint64_t m = 0;
    if (!s || !*s || strlen(s) > 256)
        return FAIR_EINVAL;
    const char *p = s;
    while (*p) {
        if (*p < '0' || *p > '9')
            return FAIR_EINVAL;
        int v = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p - '0');
            if (++digits > 2)
                return FAIR_EINVAL;
            p++;
        }
        if (v >= FAIR_MAX_GPUS_PER_NODE)
            return FAIR_EINVAL;
        m |= (uint64_t)1 << v;
        if (*p == ',') {
            p++;
            if (!*p)
                return FAIR_EINVAL;
        } else if (*p) {
            return FAIR_EINVAL;
        }
    }
    *mask = m;
    return 0;
}

void fair_ctl_format_devices(uint64_t mask, char *out, size_t n)
{
    size_t len = 0;
    if (n == 0)
        return;
    out[0] = '\0';
    for (int i = 0; i < FAIR_MAX_GPUS_PER_NODE; i++) {
        if (!(mask & ((uint64_t)1 << i)))
            continue;
        int w = snprintf(out + len, n - len, "%s%d", len ? "," : "", i);
        if (w < 0 || (size_t)w >= n - len) {
            out[len] = '\0';
            return;
        }
        len += (size_t)w;
    }
}

void fair_ctl_snapshot_release(struct fair_ctl_snapshot *s)
{
    if (!s)
        return;
    fair_free(s->knodes);
    fair_free(s->kprojects);
    fair_free(s->kqueues);
    fair_free(s->kpods);
    fair_free(s->pod_pg);
    fair_free(s->pg_counts);
    fair_free(s->project_index);
    fair_free(s->project_problem);
    fair_free(s->queue_index);
    fair_free(s->queue_problem);
    fair_free(s->project_note);
    fair_free(s->rejected);
    fair_free(s->devices_ignored);
    fair_free(s->reservations);
    for (size_t i = 0; i < s->nown_sel; i++)
        fair_free(s->own_sel[i]);
    fair_free(s->own_sel);
    fair_ctl_index_release(&s->node_by_name);
    fair_ctl_index_release(&s->queue_by_name);
    fair_free(s->nodes);
    fair_free(s->projects);
    fair_free(s->queues);
    fair_free(s->pods);
    fair_free(s->strpool);
    fair_free(s->mquotas);
    fair_ctl_volumes_release(&s->vol);
    fair_free(s->pod_select);
    memset(s, 0, sizeof *s);
}

static void quota_from(struct fair_quota *q, const char *name, const struct fair_kquota *k)
{
    q->name = name;
    q->guaranteed = k->guaranteed;
    q->limit = k->limit;
    q->over_quota_weight = k->over_quota_weight > 0 ? k->over_quota_weight : 1;
    q->over_quota_priority = k->over_quota_priority;
}

/* ---- issue 15: per-model quotas and lending limits ---- */

/* Room for every model quota of the input, before the quotas are built
 * (so that the pointers stay valid). */
static int models_alloc(struct fair_ctl_snapshot *out, const struct fair_ctl_snapshot_input *in)
{
    size_t n = 0;
    for (size_t i = 0; i < in->nprojects; i++)
        n += in->projects[i]->quota.nmodels;
    for (size_t i = 0; i < in->nqueues; i++)
        n += in->queues[i]->quota.nmodels;
    out->nmquotas = 0;
    out->mquotas_cap = n;
    if (n == 0)
        return 0;
    out->mquotas = fair_calloc(n, sizeof *out->mquotas);
    return out->mquotas ? 0 : FAIR_ENOMEM;
}

/* The lending limit and model quotas of k into q; aliases become the
 * products they stand for. */
static void models_from(struct fair_ctl_snapshot *out, const struct fair_ctl_snapshot_input *in,
                        struct fair_quota *q, const struct fair_kquota *k)
{
    q->lending_limit = k->lending_limit;
    q->lending_set = k->lending_set;
    q->models = NULL;
    q->nmodels = 0;
    if (k->nmodels == 0 || out->nmquotas + k->nmodels > out->mquotas_cap)
        return;
    struct fair_model_quota *m = &out->mquotas[out->nmquotas];
    for (size_t i = 0; i < k->nmodels; i++) {
        const struct fair_kmodel_quota *km = &k->models[i];
        m[i] = (struct fair_model_quota){
            .model = fair_ctl_gpu_product(in->gpu_aliases, in->ngpu_aliases, km->model),
            .guaranteed = km->guaranteed,
            .limit = km->limit,
            .lending_limit = km->lending_limit,
            .has_limit = km->has_limit,
            .has_lending_limit = km->has_lending_limit};
    }
    out->nmquotas += k->nmodels;
    q->models = m;
    q->nmodels = k->nmodels;
}

static bool project_has_namespace(const struct fair_kproject *p, const char *ns)
{
    for (size_t i = 0; i < p->nnamespaces; i++)
        if (ns && strcmp(p->namespaces[i], ns) == 0)
            return true;
    return false;
}

/* Working state of one build. */
/* Pods of one namespace mostly name the same queue: successful
 * resolutions are remembered per (namespace, queue label), direct-mapped. */
#define MEMO_SLOTS 1024

struct memo {
    const char *ns;    /* borrowed from a pod; NULL: empty slot */
    const char *queue; /* the label, or NULL */
    int32_t index;
};

struct build {
    const struct fair_ctl_snapshot_input *in;
    struct fair_ctl_snapshot *out;
    struct fair_ctl_index podgroup_by_key; /* "c/ns/name" or "v/ns/name" -> input index */
    char *pg_keys;                         /* the keys' storage */
    struct fair_ctl_index project_by_name; /* input index */
    struct fair_ctl_index kqueue_by_name;  /* input index */
    struct fair_ctl_index project_by_ns;   /* input index of the project */
    struct fair_ctl_index ns_by_name;      /* input index of the namespace, when needed */
    struct memo *memo;                     /* MEMO_SLOTS, or NULL */
};

static uint32_t str_hash(const char *s, uint32_t h)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Finds the queue of one of our pods. Returns its snapshot index, or -1
 * with *reason and msg set. */
static int32_t resolve_queue_slow(struct build *b, const struct fair_kpod *p,
                                  enum fair_ctl_reason *reason, char *msg, size_t msglen);

static int32_t resolve_queue(struct build *b, const struct fair_kpod *p,
                             enum fair_ctl_reason *reason, char *msg, size_t msglen)
{
    const char *ns = p->meta.namespace_ ? p->meta.namespace_ : "";
    const char *q = p->queue && *p->queue ? p->queue : NULL;
    struct memo *m = NULL;
    if (b->memo) {
        m = &b->memo[str_hash(q, str_hash(ns, 2166136261u)) % MEMO_SLOTS];
        if (m->ns && same_str(m->ns, ns) && same_str(m->queue, q))
            return m->index;
    }
    int32_t idx = resolve_queue_slow(b, p, reason, msg, msglen);
    if (m && idx >= 0) {
        m->ns = ns;
        m->queue = q;
        m->index = idx;
    }
    return idx;
}

static int32_t resolve_queue_slow(struct build *b, const struct fair_kpod *p,
                                  enum fair_ctl_reason *reason, char *msg, size_t msglen)
{
    const struct fair_ctl_snapshot_input *in = b->in;
    const char *ns = p->meta.namespace_ ? p->meta.namespace_ : "";
    int32_t ns_project = fair_ctl_index_get(&b->project_by_ns, ns);
    const char *qname = p->queue;
    if (!qname || !*qname) {
        if (ns_project < 0) {
            *reason = FAIR_CTL_REASON_UNKNOWN_QUEUE;
            snprintf(msg, msglen,
                     "no fairshare.dev/queue label, and namespace %s belongs to no Project", ns);
            return -1;
        }
        const struct fair_kproject *kp = in->projects[ns_project];
        if (!kp->default_queue || !*kp->default_queue) {
            *reason = FAIR_CTL_REASON_UNKNOWN_QUEUE;
            snprintf(msg, msglen,
                     "no fairshare.dev/queue label, and project %s has no defaultQueue",
                     kp->meta.name);
            return -1;
        }
        qname = kp->default_queue;
    }
    int32_t kq = fair_ctl_index_get(&b->kqueue_by_name, qname);
    if (kq < 0) {
        *reason = FAIR_CTL_REASON_UNKNOWN_QUEUE;
        snprintf(msg, msglen, "queue %s does not exist", qname);
        return -1;
    }
    const struct fair_kqueue *q = in->queues[kq];
    int32_t kp_i = q->project ? fair_ctl_index_get(&b->project_by_name, q->project) : -1;
    if (kp_i >= 0 && !project_has_namespace(in->projects[kp_i], ns)) {
        *reason = FAIR_CTL_REASON_NAMESPACE_NOT_ALLOWED;
        snprintf(msg, msglen,
                 "namespace %s is not in project %s's namespaces, so it cannot use queue %s", ns,
                 q->project, qname);
        return -1;
    }
    int32_t idx = b->out->queue_index[kq];
    if (idx < 0) {
        *reason = FAIR_CTL_REASON_INVALID_QUEUE;
        snprintf(msg, msglen, "queue %s cannot be used: %s", qname, b->out->queue_problem[kq]);
        return -1;
    }
    return idx;
}

/* The GPU request of one of our pods, or a problem. */
/* The GPU memory (MiB) of a node: its label nvidia.com/gpu.memory, as GPU
 * feature discovery writes it; 0 when absent or not a number. */
int64_t fair_ctl_node_gpu_mib(const struct fair_label *labels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!labels[i].key || strcmp(labels[i].key, SNAP_LABEL_GPU_MEMORY) || !labels[i].value)
            continue;
        const char *v = labels[i].value;
        size_t len = strlen(v);
        if (len == 0 || len > 9 || strspn(v, "0123456789") != len)
            return 0;
        return strtoll(v, NULL, 10);
    }
    return 0;
}

/* A fairshare.dev/gpu-memory request as a fraction of the smallest GPU
 * (gpu_mib) any node reports; -1 with msg set when it cannot be. */
static int memory_fraction(const struct fair_kpod *p, int64_t gpu_mib, int64_t *gpu, char *msg,
                           size_t msglen)
{
    int64_t mib = (p->gpu_memory_bytes + (1LL << 20) - 1) >> 20;
    if (gpu_mib <= 0) {
        snprintf(msg, msglen,
                 "fairshare.dev/gpu-memory needs nodes labelled nvidia.com/gpu.memory (GPU "
                 "feature discovery); none is");
        return -1;
    }
    if (mib >= gpu_mib) {
        snprintf(msg, msglen,
                 "fairshare.dev/gpu-memory asks for %lld MiB, not less than the %lld MiB of the "
                 "smallest GPU; ask for whole GPUs with nvidia.com/gpu",
                 (long long)mib, (long long)gpu_mib);
        return -1;
    }
    int64_t milli = (mib * FAIR_GPU_DEVICE_MILLI + gpu_mib - 1) / gpu_mib;
    *gpu = milli < 1 ? 1 : milli;
    return 0;
}

/* The GPU capacity a node holds as MIG instances (engine.h, fair_node
 * mig_milli): each MIG resource's allocatable times its profile's share.
 * A profile that does not parse adds nothing; pods cannot ask for it
 * either. */
static int64_t node_mig_milli(const struct fair_knode *k)
{
    int64_t sum = 0;
    for (size_t i = 0; i < k->nscalars; i++) {
        const struct fair_scalar *sc = &k->scalars[i];
        int64_t share = 0;
        if (!fair_mig_is_resource(sc->name) || sc->value <= 0 ||
            fair_mig_share_milli(sc->name, &share, NULL))
            continue;
        int64_t n = sc->value < FAIR_MAX_GPUS_PER_NODE * 7 ? sc->value : FAIR_MAX_GPUS_PER_NODE * 7;
        sum += n * share;
    }
    return sum;
}

int64_t fair_ctl_memory_milli(int64_t bytes, int64_t gpu_mib, int64_t min_fraction)
{
    int64_t mib = (bytes + (1LL << 20) - 1) >> 20;
    if (bytes <= 0 || gpu_mib <= 0 || mib >= gpu_mib)
        return -1;
    int64_t milli = (mib * FAIR_GPU_DEVICE_MILLI + gpu_mib - 1) / gpu_mib;
    if (milli < 1)
        milli = 1;
    return milli < min_fraction ? min_fraction : milli;
}

static int pod_gpu(const struct fair_kpod *p, int64_t min_fraction, int64_t gpu_mib, int64_t *gpu,
                   char *msg, size_t msglen)
{
    if (p->problem) {
        snprintf(msg, msglen, "%s", p->problem);
        return -1;
    }
    if (p->mig_milli > 0) {
        /* MIG instances: charged by their profiles' shares (kube/decode.c
         * refuses them next to any other GPU ask). */
        *gpu = p->mig_milli;
        return 0;
    }
    int64_t whole = p->request.v[FAIR_RES_GPU];
    if (p->gpu_fraction_milli > 0) {
        /* kube/decode.c already puts the fraction in request.v[GPU]. */
        if (whole > 0 && whole != p->gpu_fraction_milli) {
            snprintf(msg, msglen,
                     "pod asks for nvidia.com/gpu and fairshare.dev/gpu-fraction at once; use "
                     "one of them");
            return -1;
        }
        if (p->gpu_fraction_milli >= FAIR_GPU_DEVICE_MILLI) {
            snprintf(msg, msglen,
                     "fairshare.dev/gpu-fraction must be below 1; ask for whole GPUs with "
                     "nvidia.com/gpu");
            return -1;
        }
        if (p->gpu_fraction_milli < min_fraction) {
            char lo[32], asked[32];
            fair_milli_format(min_fraction, lo, sizeof lo);
            fair_milli_format(p->gpu_fraction_milli, asked, sizeof asked);
            snprintf(msg, msglen,
                     "fairshare.dev/gpu-fraction must be at least %s GPU (fractions.minimum); "
                     "this pod asks for %s",
                     lo, asked);
            return -1;
        }
        *gpu = p->gpu_fraction_milli;
        return 0;
    }
    if (p->gpu_memory_bytes > 0) {
        if (whole > 0) {
            snprintf(msg, msglen,
                     "pod asks for nvidia.com/gpu and fairshare.dev/gpu-memory at once; use one "
                     "of them");
            return -1;
        }
        if (memory_fraction(p, gpu_mib, gpu, msg, msglen))
            return -1;
        if (*gpu < min_fraction)
            *gpu = min_fraction; /* charged at least the minimum */
        return 0;
    }
    if (whole < 0 || whole % FAIR_GPU_DEVICE_MILLI) {
        snprintf(msg, msglen,
                 "nvidia.com/gpu must be a whole number; use fairshare.dev/gpu-fraction for a "
                 "part of a GPU");
        return -1;
    }
    *gpu = whole;
    return 0;
}

static int add_rejected(struct fair_ctl_snapshot *s, size_t *cap, const struct fair_kpod *p,
                        enum fair_ctl_reason reason, const char *msg)
{
    if (fair_grow((void **)&s->rejected, cap, s->nrejected + 1, sizeof *s->rejected))
        return FAIR_ENOMEM;
    struct fair_ctl_rejected *r = &s->rejected[s->nrejected++];
    r->pod = p;
    r->reason = reason;
    snprintf(r->message, sizeof r->message, "%s", msg);
    return 0;
}

static int add_ignored(struct fair_ctl_snapshot *s, size_t *cap, const struct fair_kpod *p,
                       const char *msg)
{
    if (fair_grow((void **)&s->devices_ignored, cap, s->ndevices_ignored + 1,
                  sizeof *s->devices_ignored))
        return FAIR_ENOMEM;
    struct fair_ctl_rejected *r = &s->devices_ignored[s->ndevices_ignored++];
    r->pod = p;
    r->reason = FAIR_CTL_REASON_BAD_POD;
    snprintf(r->message, sizeof r->message, "%s", msg);
    return 0;
}

/* Resizes *p to n elements of elem bytes (n > 0). */
static int resize(void **p, size_t n, size_t elem)
{
    if (n > SIZE_MAX / elem)
        return FAIR_ENOMEM;
    void *q = fair_realloc(*p, n * elem);
    if (!q)
        return FAIR_ENOMEM;
    *p = q;
    return 0;
}

/* The snapshot's own queue for a charge whose queue is gone (see
 * snapshot.h), made on first use; its index, or -1 on FAIR_ENOMEM. The
 * arrays were sized for every such name before the pods pass. */
static int32_t phantom_queue(struct fair_ctl_snapshot *out, const char *name)
{
    for (size_t i = out->nqueues_real; i < out->snap.nqueues; i++)
        if (!strcmp(out->queues[i].q.name, name))
            return (int32_t)i;
    size_t qi = out->snap.nqueues;
    struct fair_queue *q = &out->queues[qi];
    memset(q, 0, sizeof *q);
    q->q.name = name;
    for (int r = 0; r < FAIR_RES_COUNT; r++)
        q->q.limit.v[r] = FAIR_UNLIMITED;
    q->q.over_quota_weight = 1;
    q->q.over_quota_priority = -1000;
    q->project = out->phantom_project;
    q->project_name = FAIR_CTL_DELETED_PROJECT;
    q->reclaim_up_to = FAIR_RECLAIM_FAIR_SHARE;
    out->kqueues[qi] = NULL;
    if (fair_ctl_index_put(&out->queue_by_name, name, (int32_t)qi))
        return -1;
    out->snap.nqueues = qi + 1;
    return (int32_t)qi;
}

static int popcount64(uint64_t m)
{
    int n = 0;
    for (; m; m &= m - 1)
        n++;
    return n;
}

static const char *pool_add_gang(struct fair_ctl_snapshot *s, const char *ns, const char *gang)
{
    size_t need = strlen(ns) + 1 + strlen(gang) + 1;
    if (s->strpool_len + need > s->strpool_cap)
        return NULL; /* sized in advance; cannot happen */
    char *dst = s->strpool + s->strpool_len;
    snprintf(dst, need, "%s/%s", ns, gang);
    s->strpool_len += need;
    return dst;
}

/* The node selector of a fraction that must go to a HAMi-core node: its
 * own plus fairshare.dev/gpu-isolation: hami-core. */
static int isolate(struct fair_ctl_snapshot *s, size_t *cap, struct fair_pod *p,
                   const struct fair_kpod *k)
{
    if (fair_grow((void **)&s->own_sel, cap, s->nown_sel + 1, sizeof *s->own_sel))
        return FAIR_ENOMEM;
    struct fair_label *sel = fair_malloc((k->nnode_selector + 1) * sizeof *sel);
    if (!sel)
        return FAIR_ENOMEM;
    if (k->nnode_selector)
        memcpy(sel, k->node_selector, k->nnode_selector * sizeof *sel);
    sel[k->nnode_selector] = (struct fair_label){SNAP_LABEL_ISOLATION, SNAP_ISOLATION_HAMI};
    s->own_sel[s->nown_sel++] = sel;
    p->node_selector = sel;
    p->nnode_selector = k->nnode_selector + 1;
    return 0;
}

static bool is_reservation(const struct fair_ctl_snapshot_input *in, const struct fair_kpod *k)
{
    return in->reservation_namespace && k->reservation && k->meta.namespace_ &&
           !strcmp(k->meta.namespace_, in->reservation_namespace) &&
           !(k->scheduler_name && in->scheduler_name &&
             !strcmp(k->scheduler_name, in->scheduler_name));
}

/* A reservation whose slot a fraction holds (bound or being bound) is
 * idle no longer and counts for nothing: the fractions hold the device.
 * resv_pod[r]: the snapshot pod of reservation r, -1: none. One pass over
 * the pods (the slots fractions hold, per node), one over the
 * reservations. */
static int mark_reservations(struct fair_ctl_snapshot *s, const int32_t *resv_pod)
{
    if (s->nreservations == 0)
        return 0;
    uint64_t *held = fair_calloc(s->snap.nnodes ? s->snap.nnodes : 1, sizeof *held);
    if (!held)
        return FAIR_ENOMEM;
    for (size_t i = 0; i < s->snap.npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        int64_t g = p->request.v[FAIR_RES_GPU];
        if (p->state == FAIR_POD_BOUND && p->node >= 0 && g > 0 && g < FAIR_GPU_DEVICE_MILLI)
            held[p->node] |= p->gpu_devices;
    }
    for (size_t r = 0; r < s->nreservations; r++) {
        struct fair_ctl_reservation *rv = &s->reservations[r];
        if (rv->node < 0 || rv->slot < 0 || !(held[rv->node] & ((uint64_t)1 << rv->slot)))
            continue;
        rv->idle = false;
        if (resv_pod[r] >= 0) {
            struct fair_pod *p = &s->pods[resv_pod[r]];
            p->request.v[FAIR_RES_GPU] = 0;
            p->gpu_devices = 0;
        }
    }
    fair_free(held);
    return 0;
}

/* Gives devices to bound pods without a known device set: whole-GPU pods
 * get the lowest free devices; fractions the device with most room. */
static int assign_devices(struct fair_ctl_snapshot *s, const bool *unknown)
{
    size_t nn = s->snap.nnodes;
    int32_t *used = fair_calloc(nn * FAIR_MAX_GPUS_PER_NODE, sizeof *used);
    if (!used)
        return FAIR_ENOMEM;
    for (size_t i = 0; i < s->snap.npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        if (p->state != FAIR_POD_BOUND || unknown[i] || p->node < 0)
            continue;
        int64_t per = p->request.v[FAIR_RES_GPU] < FAIR_GPU_DEVICE_MILLI
                          ? p->request.v[FAIR_RES_GPU]
                          : FAIR_GPU_DEVICE_MILLI;
        for (int d = 0; d < FAIR_MAX_GPUS_PER_NODE; d++)
            if (p->gpu_devices & ((uint64_t)1 << d))
                used[(size_t)p->node * FAIR_MAX_GPUS_PER_NODE + d] += (int32_t)per;
    }
    for (size_t i = 0; i < s->snap.npods; i++) {
        struct fair_pod *p = &s->pods[i];
        if (!unknown[i] || p->node < 0)
            continue;
        int32_t *u = &used[(size_t)p->node * FAIR_MAX_GPUS_PER_NODE];
        int ndev = s->nodes[p->node].gpu_count;
        int64_t gpu = p->request.v[FAIR_RES_GPU];
        uint64_t mask = 0;
        if (gpu >= FAIR_GPU_DEVICE_MILLI) {
            int64_t want = gpu / FAIR_GPU_DEVICE_MILLI;
            for (int d = 0; d < ndev && want > 0; d++)
                if (u[d] == 0) {
                    mask |= (uint64_t)1 << d;
                    u[d] = FAIR_GPU_DEVICE_MILLI;
                    want--;
                }
            /* Overcommitted node (should not happen): take busy ones. */
            for (int d = 0; d < ndev && want > 0; d++)
                if (!(mask & ((uint64_t)1 << d))) {
                    mask |= (uint64_t)1 << d;
                    u[d] = FAIR_GPU_DEVICE_MILLI;
                    want--;
                }
        } else if (gpu > 0 && ndev > 0) {
            int best = 0;
            for (int d = 1; d < ndev; d++)
                if (u[d] < u[best])
                    best = d;
            mask = (uint64_t)1 << best;
            u[best] += (int32_t)gpu;
        }
        p->gpu_devices = mask;
    }
    fair_free(used);
    return 0;
}

/* b->podgroup_by_key from the input PodGroups: "c/ns/name" (scheduler-
 * plugins) or "v/ns/name" (Volcano); the first of duplicates wins. */
static int index_podgroups(struct build *b)
{
    const struct fair_ctl_snapshot_input *in = b->in;
    size_t len = 0;
    for (size_t i = 0; i < in->npodgroups; i++) {
        const struct fair_kpodgroup *g = in->podgroups[i];
        if (g && g->meta.name && g->meta.namespace_)
            len += strlen(g->meta.namespace_) + strlen(g->meta.name) + 4;
    }
    if (!len)
        return 0;
    if (!(b->pg_keys = fair_malloc(len)))
        return FAIR_ENOMEM;
    char *c = b->pg_keys;
    for (size_t i = 0; i < in->npodgroups; i++) {
        const struct fair_kpodgroup *g = in->podgroups[i];
        if (!g || !g->meta.name || !g->meta.namespace_)
            continue;
        size_t n = strlen(g->meta.namespace_) + strlen(g->meta.name) + 4;
        snprintf(c, n, "%c/%s/%s", g->flavor == FAIR_KPG_VOLCANO ? 'v' : 'c', g->meta.namespace_,
                 g->meta.name);
        if (fair_ctl_index_get(&b->podgroup_by_key, c) < 0) {
            int rc = fair_ctl_index_put(&b->podgroup_by_key, c, (int32_t)i);
            if (rc)
                return rc;
        }
        c += n;
    }
    return 0;
}

/* The input index of the PodGroup pod k names, or -1 (none named, or not
 * found). */
static int32_t find_podgroup_index(const struct build *b, const struct fair_kpod *k)
{
    if (!k->pod_group || !b->podgroup_by_key.count)
        return -1;
    char key[600];
    int w =
        snprintf(key, sizeof key, "%c/%s/%s", k->pod_group_flavor == FAIR_KPG_VOLCANO ? 'v' : 'c',
                 k->meta.namespace_ ? k->meta.namespace_ : "", k->pod_group);
    if (w < 0 || (size_t)w >= sizeof key)
        return -1;
    return fair_ctl_index_get(&b->podgroup_by_key, key);
}

/* The PodGroup pod k names, or NULL. */
static const struct fair_kpodgroup *find_podgroup(const struct build *b, const struct fair_kpod *k)
{
    int32_t i = find_podgroup_index(b, k);
    return i >= 0 ? b->in->podgroups[i] : NULL;
}

/* Counts pod k in its PodGroup's figures (any scheduler's pod). */
static void pg_count_pod(const struct build *b, const struct fair_kpod *k)
{
    int32_t gi = find_podgroup_index(b, k);
    if (gi < 0)
        return;
    struct fair_ctl_pg_count *n = &b->out->pg_counts[gi];
    bool bound = k->node_name && *k->node_name;
    if (k->phase == FAIR_KPOD_SUCCEEDED)
        n->succeeded++;
    else if (k->phase == FAIR_KPOD_FAILED)
        n->failed++;
    else if (!bound)
        n->pending++;
    else if (!k->meta.deletion_ms) {
        n->bound++;
        if (k->phase == FAIR_KPOD_RUNNING)
            n->running++;
    }
}

/* A pending pod of ours in a PodGroup: the PodGroup must exist and be
 * usable; else the pod waits with a reason. */
static void pod_group_check(const struct build *b, const struct fair_kpod *k,
                            enum fair_ctl_reason *reason, char *msg, size_t n)
{
    bool volcano = k->pod_group_flavor == FAIR_KPG_VOLCANO;
    const char *api = volcano ? "scheduling.volcano.sh/v1beta1" : "scheduling.x-k8s.io/v1alpha1";
    const char *ns = k->meta.namespace_ ? k->meta.namespace_ : "";
    const struct fair_kpodgroup *g = find_podgroup(b, k);
    if (!g) {
        *reason = FAIR_CTL_REASON_PODGROUP_NOT_FOUND;
        if (b->in->podgroups_known[volcano ? FAIR_KPG_VOLCANO : FAIR_KPG_COSCHED])
            snprintf(msg, n,
                     "PodGroup %s/%s (%s, named by %s %s) does not exist; the pod waits until it "
                     "does",
                     ns, k->pod_group, api, volcano ? "annotation" : "label",
                     volcano ? FAIR_KPG_ANN_NAME : FAIR_KPG_LABEL_NAME);
        else
            snprintf(msg, n,
                     "PodGroup %s/%s: the %s PodGroup CRD is not installed (or not read yet); "
                     "the pod waits until it is and the PodGroup exists",
                     ns, k->pod_group, api);
        return;
    }
    if (g->problem) {
        *reason = FAIR_CTL_REASON_BAD_POD;
        snprintf(msg, n, "PodGroup %s/%s: %s", ns, k->pod_group, g->problem);
    }
}

/* Whether a pod has a pod (anti-)affinity term with a namespaceSelector
 * that has requirements. */
static bool terms_by_labels(const struct fair_pod_term *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].ns_by_labels)
            return true;
    return false;
}

static bool any_ns_selector(const struct fair_ctl_snapshot_input *in)
{
    for (size_t i = 0; i < in->npods; i++) {
        const struct fair_pod_affinity *a = in->pods[i] ? in->pods[i]->pod_affinity : NULL;
        if (a &&
            (terms_by_labels(a->affinity, a->naffinity) || terms_by_labels(a->anti, a->nanti) ||
             terms_by_labels(a->pref_affinity, a->npref_affinity) ||
             terms_by_labels(a->pref_anti, a->npref_anti)))
            return true;
    }
    return false;
}

bool fair_ctl_told_of_eviction(const struct fair_kpod *k)
{
    return k->disruption_target && k->disruption_reason &&
           !strcmp(k->disruption_reason, FAIR_CTL_EVICTION_REASON);
}

int fair_ctl_snapshot_build(const struct fair_ctl_snapshot_input *in, struct fair_ctl_snapshot *out,
                            struct fair_error *err)
{
    struct build b = {.in = in, .out = out};
    bool *unknown = NULL;
    int32_t *resv_pod = NULL;
    size_t own_sel_cap = 0;
    size_t rejected_cap = 0, ignored_cap = 0;
    int rc = 0;
    memset(out, 0, sizeof *out);
    fair_ctl_index_init(&b.project_by_name);
    fair_ctl_index_init(&b.kqueue_by_name);
    fair_ctl_index_init(&b.project_by_ns);
    fair_ctl_index_init(&b.podgroup_by_key);
    fair_ctl_index_init(&b.ns_by_name);
    fair_ctl_index_init(&out->node_by_name);
    fair_ctl_index_init(&out->queue_by_name);

    size_t nn = in->nnodes, np = in->nprojects, nq = in->nqueues, npod = in->npods;
    out->nodes = fair_calloc(nn ? nn : 1, sizeof *out->nodes);
    out->knodes = fair_calloc(nn ? nn : 1, sizeof *out->knodes);
    out->projects = fair_calloc(np ? np : 1, sizeof *out->projects);
    out->kprojects = fair_calloc(np ? np : 1, sizeof *out->kprojects);
    out->project_index = fair_calloc(np ? np : 1, sizeof *out->project_index);
    out->project_problem = fair_calloc(np ? np : 1, sizeof *out->project_problem);
    out->project_note = fair_calloc(np + 1, sizeof *out->project_note); /* + the phantom */
    out->queues = fair_calloc(nq ? nq : 1, sizeof *out->queues);
    out->kqueues = fair_calloc(nq ? nq : 1, sizeof *out->kqueues);
    out->queue_index = fair_calloc(nq ? nq : 1, sizeof *out->queue_index);
    out->queue_problem = fair_calloc(nq ? nq : 1, sizeof *out->queue_problem);
    out->pods = fair_calloc(npod ? npod : 1, sizeof *out->pods);
    out->kpods = fair_calloc(npod ? npod : 1, sizeof *out->kpods);
    out->pod_pg = fair_calloc(npod ? npod : 1, sizeof *out->pod_pg);
    out->pod_select = fair_calloc(npod ? npod : 1, sizeof *out->pod_select);
    out->pg_counts = fair_calloc(in->npodgroups ? in->npodgroups : 1, sizeof *out->pg_counts);
    out->podgroups = in->podgroups;
    out->npodgroups = in->npodgroups;
    unknown = fair_calloc(npod ? npod : 1, sizeof *unknown);
    size_t nresv = 0;
    for (size_t i = 0; in->reservation_namespace && i < npod; i++)
        nresv += is_reservation(in, in->pods[i]);
    out->reservations = fair_calloc(nresv ? nresv : 1, sizeof *out->reservations);
    resv_pod = fair_malloc((nresv ? nresv : 1) * sizeof *resv_pod);
    for (size_t i = 0; resv_pod && i < nresv; i++)
        resv_pod[i] = -1;
    if (!out->reservations || !resv_pod) {
        rc = FAIR_ENOMEM;
        goto out;
    }
    if (!out->nodes || !out->knodes || !out->projects || !out->kprojects || !out->project_index ||
        !out->project_problem || !out->project_note || !out->queues || !out->kqueues ||
        !out->queue_index || !out->queue_problem || !out->pods || !out->kpods || !out->pod_pg ||
        !out->pod_select || !out->pg_counts || !unknown || models_alloc(out, in) ||
        (rc = index_podgroups(&b)) != 0 ||
        fair_ctl_volumes_init(&out->vol, in->pvcs, in->pvcs ? in->npvcs : 0, in->pvs,
                              in->pvs ? in->npvs : 0, in->scs, in->scs ? in->nscs : 0)) {
        rc = rc ? rc : FAIR_ENOMEM;
        rc = FAIR_ENOMEM;
        goto out;
    }
    out->ninput_projects = np;
    out->ninput_queues = nq;
    b.memo = npod > 64 ? fair_calloc(MEMO_SLOTS, sizeof *b.memo) : NULL; /* optional */

    /* Namespaces, by name: only when some pod's (anti-)affinity term
     * selects namespaces by their labels (the others never read them). */
    if (any_ns_selector(in))
        for (size_t i = 0; i < in->nnamespaces; i++) {
            const struct fair_knamespace *k = in->namespaces[i];
            if (k && k->meta.name &&
                (rc = fair_ctl_index_put(&b.ns_by_name, k->meta.name, (int32_t)i)))
                goto out;
        }

    /* Nodes. */
    size_t n_out = 0;
    for (size_t i = 0; i < nn; i++) {
        const struct fair_knode *k = in->nodes[i];
        if (!k->meta.name || fair_ctl_index_get(&out->node_by_name, k->meta.name) >= 0)
            continue;
        struct fair_node *n = &out->nodes[n_out];
        n->name = k->meta.name;
        n->gpu_model = k->gpu_model;
        n->gpu_count = k->gpu_count < 0                        ? 0
                       : k->gpu_count > FAIR_MAX_GPUS_PER_NODE ? FAIR_MAX_GPUS_PER_NODE
                                                               : k->gpu_count;
        n->allocatable = k->allocatable;
        n->allocatable.v[FAIR_RES_GPU] = (int64_t)n->gpu_count * FAIR_GPU_DEVICE_MILLI;
        n->max_pods = k->max_pods;
        n->unschedulable = k->unschedulable || !k->ready;
        for (size_t f = 0; f < in->nfull_nodes && !n->unschedulable; f++)
            if (in->full_nodes[f] && k->meta.name && !strcmp(in->full_nodes[f], k->meta.name))
                n->unschedulable = true; /* holds a pod we cannot read */
        n->labels = k->labels;
        n->nlabels = k->nlabels;
        n->scalars = k->scalars;
        n->nscalars = k->nscalars;
        n->mig_milli = node_mig_milli(k);
        n->taints = k->taints;
        n->ntaints = k->ntaints;
        out->knodes[n_out] = k;
        if ((rc = fair_ctl_index_put(&out->node_by_name, n->name, (int32_t)n_out)))
            goto out;
        n_out++;
    }
    out->snap.nodes = out->nodes;
    out->snap.nnodes = n_out;

    /* Projects: invalid ones are left out; their queues too. */
    size_t p_out = 0;
    for (size_t i = 0; i < np; i++) {
        const struct fair_kproject *k = in->projects[i];
        out->project_index[i] = -1;
        if (!k->meta.name)
            continue;
        if (fair_ctl_index_get(&b.project_by_name, k->meta.name) >= 0) {
            snprintf(out->project_problem[i], sizeof out->project_problem[i],
                     "another Project is named %s", k->meta.name);
            continue;
        }
        if ((rc = fair_ctl_index_put(&b.project_by_name, k->meta.name, (int32_t)i)))
            goto out;
        /* A namespace claimed by two projects makes the later one invalid:
         * pods there would otherwise have two owners. */
        bool clash = false;
        for (size_t j = 0; j < k->nnamespaces; j++) {
            int32_t other = fair_ctl_index_get(&b.project_by_ns, k->namespaces[j]);
            if (other >= 0) {
                snprintf(out->project_problem[i], sizeof out->project_problem[i],
                         "namespace %s already belongs to project %s", k->namespaces[j],
                         in->projects[other]->meta.name);
                clash = true;
                continue;
            }
            if ((rc = fair_ctl_index_put(&b.project_by_ns, k->namespaces[j], (int32_t)i)))
                goto out;
        }
        if (k->problem)
            snprintf(out->project_problem[i], sizeof out->project_problem[i], "%s", k->problem);
        const char *tq_bad = in->project_invalid ? in->project_invalid[i] : NULL;
        if (tq_bad && !k->problem)
            snprintf(out->project_problem[i], sizeof out->project_problem[i], "%s", tq_bad);
        if (k->problem || clash || tq_bad)
            continue;
        const struct fair_kquota *pq_eff = in->project_quota ? &in->project_quota[i] : &k->quota;
        quota_from(&out->projects[p_out].q, k->meta.name, pq_eff);
        models_from(out, in, &out->projects[p_out].q, pq_eff);
        out->projects[p_out].usage = in->project_usage ? in->project_usage[i] : 0;
        out->projects[p_out].share_fractions = k->share_fractions;
        out->project_note[p_out] = in->project_note ? in->project_note[i] : NULL;
        out->kprojects[p_out] = k;
        out->project_index[i] = (int32_t)p_out++;
    }
    out->snap.projects = out->projects;
    out->snap.nprojects = p_out;

    /* Queues. */
    size_t q_out = 0;
    for (size_t i = 0; i < nq; i++) {
        const struct fair_kqueue *k = in->queues[i];
        out->queue_index[i] = -1;
        if (!k->meta.name || fair_ctl_index_get(&b.kqueue_by_name, k->meta.name) >= 0)
            continue;
        if ((rc = fair_ctl_index_put(&b.kqueue_by_name, k->meta.name, (int32_t)i)))
            goto out;
        if (k->problem) {
            snprintf(out->queue_problem[i], sizeof out->queue_problem[i], "%s", k->problem);
            continue;
        }
        if (in->queue_invalid && in->queue_invalid[i]) {
            snprintf(out->queue_problem[i], sizeof out->queue_problem[i], "%s",
                     in->queue_invalid[i]);
            continue;
        }
        int32_t kp = k->project ? fair_ctl_index_get(&b.project_by_name, k->project) : -1;
        if (kp < 0) {
            snprintf(out->queue_problem[i], sizeof out->queue_problem[i],
                     "project %s does not exist", k->project ? k->project : "(none)");
            continue;
        }
        if (out->project_index[kp] < 0) {
            snprintf(out->queue_problem[i], sizeof out->queue_problem[i],
                     "project %s is invalid: %s", k->project, out->project_problem[kp]);
            continue;
        }
        struct fair_queue *q = &out->queues[q_out];
        const struct fair_kquota *qq_eff = in->queue_quota ? &in->queue_quota[i] : &k->quota;
        quota_from(&q->q, k->meta.name, qq_eff);
        models_from(out, in, &q->q, qq_eff);
        q->project_name = k->project;
        q->project = out->project_index[kp];
        q->reclaim_min_runtime_ms = k->reclaim_min_runtime_ms;
        q->aging_half_life_ms = k->aging_half_life_ms;
        q->usage = in->queue_usage ? in->queue_usage[i] : 0;
        /* The queue's reclaimUpTo, else its project's, else the default. */
        enum fair_kreclaim up = k->quota.reclaim_up_to;
        if (up == FAIR_KRECLAIM_UNSET)
            up = in->projects[kp]->quota.reclaim_up_to;
        q->reclaim_up_to = up == FAIR_KRECLAIM_GUARANTEE    ? FAIR_RECLAIM_GUARANTEE
                           : up == FAIR_KRECLAIM_FAIR_SHARE ? FAIR_RECLAIM_FAIR_SHARE
                                                            : in->reclaim_up_to;
        out->kqueues[q_out] = k;
        if ((rc = fair_ctl_index_put(&out->queue_by_name, k->meta.name, (int32_t)q_out)))
            goto out;
        out->queue_index[i] = (int32_t)q_out++;
    }
    out->snap.queues = out->queues;
    out->snap.nqueues = q_out;

    /* Room for the gang keys (live ones, and those fixed in charges), and
     * the queues of charges whose queue is gone. */
    size_t pool = 0, nphantom = 0;
    struct fair_ctl_index phantom_by_name;
    fair_ctl_index_init(&phantom_by_name);
    for (size_t i = 0; i < npod; i++) {
        const struct fair_kpod *k = in->pods[i];
        size_t nsl = strlen(k->meta.namespace_ ? k->meta.namespace_ : "");
        if (k->gang && *k->gang)
            pool += nsl + strlen(k->gang) + 2;
        if (k->pod_group)
            pool += nsl + strlen(k->pod_group) + 2;
        struct fair_ctl_overlay ov = {0};
        if (in->overlay && k->node_name && *k->node_name)
            in->overlay(in->overlay_ctx, &out->vol, k, &ov);
        if (!ov.charge || !ov.charge->set)
            continue;
        if (ov.charge->gang)
            pool += nsl + strlen(ov.charge->gang) + 2;
        const char *qn = ov.charge->queue;
        if (qn && *qn && fair_ctl_index_get(&out->queue_by_name, qn) < 0 &&
            fair_ctl_index_get(&phantom_by_name, qn) < 0) {
            if ((rc = fair_ctl_index_put(&phantom_by_name, qn, (int32_t)nphantom))) {
                fair_ctl_index_release(&phantom_by_name);
                goto out;
            }
            nphantom++;
        }
    }
    fair_ctl_index_release(&phantom_by_name);
    if (pool) {
        out->strpool = fair_malloc(pool);
        if (!out->strpool) {
            rc = FAIR_ENOMEM;
            goto out;
        }
        out->strpool_cap = pool;
    }
    out->nqueues_real = q_out;
    out->phantom_project = -1;
    if (nphantom) {
        /* One project for them all: no guarantee, the lowest tier. */
        if (resize((void **)&out->projects, p_out + 1, sizeof *out->projects) ||
            resize((void **)&out->kprojects, p_out + 1, sizeof *out->kprojects) ||
            resize((void **)&out->queues, q_out + nphantom, sizeof *out->queues) ||
            resize((void **)&out->kqueues, q_out + nphantom, sizeof *out->kqueues)) {
            rc = FAIR_ENOMEM;
            goto out;
        }
        struct fair_project *pp = &out->projects[p_out];
        memset(pp, 0, sizeof *pp);
        pp->q.name = FAIR_CTL_DELETED_PROJECT;
        for (int r = 0; r < FAIR_RES_COUNT; r++)
            pp->q.limit.v[r] = FAIR_UNLIMITED;
        pp->q.over_quota_weight = 1;
        pp->q.over_quota_priority = -1000;
        out->kprojects[p_out] = NULL;
        out->phantom_project = (int32_t)p_out++;
        out->snap.projects = out->projects;
        out->snap.nprojects = p_out;
        out->snap.queues = out->queues;
    }

    /* The smallest GPU memory any node reports, for fairshare.dev/gpu-memory. */
    int64_t gpu_mib = 0;
    for (size_t i = 0; i < nn; i++) {
        int64_t m = fair_ctl_node_gpu_mib(in->nodes[i]->labels, in->nodes[i]->nlabels);
        if (m > 0 && (gpu_mib == 0 || m < gpu_mib))
            gpu_mib = m;
    }

    /* Pods. */
    size_t pod_out = 0;
    bool any_unknown = false;
    for (size_t i = 0; i < npod; i++) {
        const struct fair_kpod *k = in->pods[i];
        if (k->pod_group)
            pg_count_pod(&b, k);
        bool resv = is_reservation(in, k);
        int32_t resv_i = -1;
        if (resv && k->meta.uid) {
            struct fair_ctl_reservation *rv = &out->reservations[out->nreservations];
            resv_i = (int32_t)out->nreservations++;
            rv->pod = k;
            rv->node = k->node_name ? fair_ctl_index_get(&out->node_by_name, k->node_name) : -1;
            rv->slot = k->gpu_slot1 > 0 ? k->gpu_slot1 - 1 : -1;
            if (rv->node >= 0 && rv->slot >= out->nodes[rv->node].gpu_count)
                rv->slot = -1;
            rv->idle = true;
            rv->finished = k->phase == FAIR_KPOD_SUCCEEDED || k->phase == FAIR_KPOD_FAILED;
        }
        if (!k->meta.uid || k->phase == FAIR_KPOD_SUCCEEDED || k->phase == FAIR_KPOD_FAILED)
            continue;
        struct fair_ctl_overlay ov = {0};
        if (in->overlay)
            in->overlay(in->overlay_ctx, &out->vol, k, &ov);
        bool ours = k->scheduler_name && in->scheduler_name &&
                    strcmp(k->scheduler_name, in->scheduler_name) == 0;
        const char *node = k->node_name && *k->node_name ? k->node_name : NULL;
        bool in_flight =
            ov.kind == FAIR_CTL_OVERLAY_BINDING || ov.kind == FAIR_CTL_OVERLAY_PROVISIONING;
        if (!node && in_flight)
            node = ov.node;
        char msg[240] = "";
        enum fair_ctl_reason reason = FAIR_CTL_REASON_NONE;
        bool other_charged = false;
        struct fair_ctl_volume_verdict vol = {.affinity = k->node_affinity};
        /* A MIG pod's GPU is its instances' charge (kube/decode.c). */
        int64_t gpu = k->mig_milli > 0 ? k->mig_milli : k->request.v[FAIR_RES_GPU];
        int32_t queue = -1;
        if (!node) {
            if (!ours || k->meta.deletion_ms)
                continue;
            if (pod_gpu(k, in->min_fraction_milli, gpu_mib, &gpu, msg, sizeof msg)) {
                reason = FAIR_CTL_REASON_BAD_POD;
            } else {
                queue = resolve_queue(&b, k, &reason, msg, sizeof msg);
            }
            if (reason == FAIR_CTL_REASON_NONE && k->pod_group)
                pod_group_check(&b, k, &reason, msg, sizeof msg);
            if (reason == FAIR_CTL_REASON_NONE && k->nclaims) {
                if ((rc = fair_ctl_volumes_pod(&out->vol, k, &vol)))
                    goto out;
                if (vol.wait) {
                    reason = FAIR_CTL_REASON_VOLUME;
                    snprintf(msg, sizeof msg, "%s", vol.message);
                } else if (vol.selected_claim && ov.volume_hold_expired) {
                    reason = FAIR_CTL_REASON_VOLUME;
                    snprintf(msg, sizeof msg,
                             "waiting for claim \"%s\" to be bound to its volume; the room held "
                             "for the pod meanwhile was given up after volumeBindTimeout",
                             vol.selected_claim->meta.name);
                }
            }
            if (reason == FAIR_CTL_REASON_NONE && in->project_hold) {
                /* A spent budget with action block: no new pods. */
                int32_t kp_i =
                    fair_ctl_index_get(&b.project_by_name, out->snap.queues[queue].project_name);
                if (kp_i >= 0 && in->project_hold[kp_i]) {
                    reason = FAIR_CTL_REASON_BUDGET_EXHAUSTED;
                    snprintf(msg, sizeof msg, "%s", in->project_hold[kp_i]);
                }
            }
            if (reason != FAIR_CTL_REASON_NONE) {
                if ((rc = add_rejected(out, &rejected_cap, k, reason, msg)))
                    goto out;
                continue;
            }
        } else if (ours && ov.charge && ov.charge->set) {
            /* Charged as it was bound: later edits of its labels and
             * annotations change nothing. */
            gpu = ov.charge->gpu_milli;
            queue = fair_ctl_index_get(&out->queue_by_name, ov.charge->queue);
            if (queue < 0 && (queue = phantom_queue(out, ov.charge->queue)) < 0) {
                rc = FAIR_ENOMEM;
                goto out;
            }
        } else if (ours) {
            /* Bound before it was charged (before this process, or a bind
             * this process did not make): charged as it asks now, at least
             * the minimum fraction. */
            if (pod_gpu(k, in->min_fraction_milli, gpu_mib, &gpu, msg, sizeof msg)) {
                gpu = k->request.v[FAIR_RES_GPU] > 0 ? k->request.v[FAIR_RES_GPU]
                                                     : k->gpu_fraction_milli;
                if (gpu > 0 && gpu < in->min_fraction_milli)
                    gpu = in->min_fraction_milli;
            } else if (k->gpu_memory_bytes > 0) {
                /* Memory through its own node's GPU, when labelled. */
                int32_t ni = fair_ctl_index_get(&out->node_by_name, node);
                int64_t nm =
                    ni >= 0 ? fair_ctl_node_gpu_mib(out->nodes[ni].labels, out->nodes[ni].nlabels)
                            : 0;
                int64_t g = fair_ctl_memory_milli(k->gpu_memory_bytes, nm, in->min_fraction_milli);
                if (g > 0 && g < gpu)
                    gpu = g;
            }
            queue = resolve_queue(&b, k, &reason, msg, sizeof msg);
        } else if (in->charge_other_schedulers && gpu > 0) {
            /* Another scheduler's pod: charged to its namespace's Project
             * when it has a defaultQueue (never preempted). */
            int32_t kp_i =
                fair_ctl_index_get(&b.project_by_ns, k->meta.namespace_ ? k->meta.namespace_ : "");
            const struct fair_kproject *kp = kp_i >= 0 ? in->projects[kp_i] : NULL;
            if (kp && kp->default_queue && *kp->default_queue) {
                int32_t kq = fair_ctl_index_get(&b.kqueue_by_name, kp->default_queue);
                queue = kq >= 0 ? out->queue_index[kq] : -1;
                if (queue >= 0 && out->snap.queues[queue].project != out->project_index[kp_i])
                    queue = -1; /* the defaultQueue belongs to another Project */
            }
            other_charged = queue >= 0;
        }
        int32_t node_idx = -1;
        if (node) {
            node_idx = fair_ctl_index_get(&out->node_by_name, node);
            if (node_idx < 0)
                continue; /* on a node we do not know: uses nothing we schedule */
        }
        struct fair_pod *p = &out->pods[pod_out];
        p->uid = k->meta.uid;
        p->namespace_ = k->meta.namespace_ ? k->meta.namespace_ : "";
        p->name = k->meta.name ? k->meta.name : "";
        p->queue = queue;
        p->state = node ? FAIR_POD_BOUND : FAIR_POD_PENDING;
        p->priority = k->priority;
        p->created_ms = k->meta.creation_ms;
        p->started_ms = k->start_ms ? k->start_ms : k->meta.creation_ms;
        bool charged = node && ours && ov.charge && ov.charge->set;
        p->preemptible = (charged ? ov.charge->preemptible : k->preemptible) &&
                         ov.kind != FAIR_CTL_OVERLAY_PROTECTED && !other_charged;
        p->request = k->request;
        p->request.v[FAIR_RES_GPU] = gpu;
        /* Its charge (as bound, or now) takes no device: decode.c refuses
         * MIG next to any other GPU ask. */
        p->mig = k->mig_milli > 0 && gpu > 0;
        p->node = node_idx;
        p->terminating = node && (k->meta.deletion_ms != 0 || ov.kind == FAIR_CTL_OVERLAY_EVICTING);
        p->noticed = p->terminating && !k->meta.deletion_ms && ov.noticed;
        p->node_selector = k->node_selector;
        p->nnode_selector = k->nnode_selector;
        if (!node && queue >= 0 && (size_t)queue < out->nqueues_real && gpu > 0 &&
            gpu < FAIR_GPU_DEVICE_MILLI && out->kqueues[queue] &&
            out->kqueues[queue]->fractions_isolated && (rc = isolate(out, &own_sel_cap, p, k)))
            goto out;
        p->tolerations = k->tolerations;
        p->ntolerations = k->ntolerations;
        p->gpu_model = fair_ctl_gpu_product(in->gpu_aliases, in->ngpu_aliases, k->gpu_model);
        p->node_affinity = vol.affinity; /* k's own, unless its claims add terms */
        out->pod_select[pod_out] = !node && vol.select_node;
        p->scalars = k->scalars;
        p->nscalars = k->nscalars;
        p->host_ports = k->host_ports;
        p->nhost_ports = k->nhost_ports;
        p->labels = k->labels;
        p->nlabels = k->nlabels;
        p->pod_affinity = k->pod_affinity;
        if (b.ns_by_name.count) {
            /* A namespace not known (yet) has no labels, as in
             * kube-scheduler. */
            int32_t ni = fair_ctl_index_get(&b.ns_by_name, p->namespace_);
            if (ni >= 0) {
                p->ns_labels = in->namespaces[ni]->labels;
                p->nns_labels = in->namespaces[ni]->nlabels;
            }
        }
        p->spread = k->spread;
        p->nspread = k->nspread;
        p->nspread_soft = k->nspread_soft;
        p->checkpoint_interval_ms = k->checkpoint_interval_ms;
        /* A notice of ours from before (its eviction not sent yet: one of
         * this process makes the pod terminating, never a victim again). */
        if (node && ours && fair_ctl_told_of_eviction(k))
            p->notice_since_ms = k->disruption_since_ms;
        p->max_runtime_ms = k->active_deadline_ms;
        p->evictions = ov.evictions;
        p->hold_node = -1;
        if (!node && ov.hold_node && ov.hold_since_ms > 0) {
            p->hold_node = fair_ctl_index_get(&out->node_by_name, ov.hold_node);
            p->hold_since_ms = ov.hold_since_ms;
        } else if (!node && ov.hold_since_ms > 0) {
            p->hold_since_ms = ov.hold_since_ms; /* a hold that timed out: its cooldown */
        }
        /* pod_pg for every pod of ours in a PodGroup (its status counts
         * them); the gang of a charged pod is its charge's all the same. */
        int32_t kpg_i = ours ? find_podgroup_index(&b, k) : -1;
        const struct fair_kpodgroup *kpg = kpg_i >= 0 && !charged ? in->podgroups[kpg_i] : NULL;
        out->pod_pg[pod_out] = kpg_i;
        if (charged) {
            if (ov.charge->gang) {
                p->gang = pool_add_gang(out, p->namespace_, ov.charge->gang);
                p->gang_size = ov.charge->gang_size > 0 ? ov.charge->gang_size : 1;
            }
        } else if (kpg) {
            /* A PodGroup wins over the pod's own gang annotations. */
            p->gang = pool_add_gang(out, p->namespace_, kpg->meta.name);
            p->gang_size = kpg->min_member > 0 ? kpg->min_member : 1;
        } else if (ours && k->gang && *k->gang) {
            p->gang = pool_add_gang(out, p->namespace_, k->gang);
            p->gang_size = k->gang_size > 0 ? k->gang_size : 1;
        }
        if (node) {
            /* Devices: only where the controller wrote them. */
            uint64_t mask = 0;
            const struct fair_node *sn = &out->nodes[node_idx];
            if (in_flight && !(k->node_name && *k->node_name)) {
                mask = ov.gpu_devices;
            } else if (charged && gpu > 0 && ov.charge->devices) {
                mask = ov.charge->devices;
            } else if (resv_i >= 0 && out->reservations[resv_i].slot >= 0) {
                mask = (uint64_t)1 << out->reservations[resv_i].slot;
                resv_pod[resv_i] = (int32_t)pod_out;
            } else if (ours && !charged && gpu > 0 && gpu < FAIR_GPU_DEVICE_MILLI &&
                       in->reservation_namespace && k->gpu_slot1 > 0 &&
                       k->gpu_slot1 - 1 < sn->gpu_count) {
                mask = (uint64_t)1 << (k->gpu_slot1 - 1);
            } else if (ours && !charged && gpu > 0 && k->gpu_devices) {
                int want = gpu < FAIR_GPU_DEVICE_MILLI ? 1 : (int)(gpu / FAIR_GPU_DEVICE_MILLI);
                uint64_t m = 0;
                bool ok = fair_ctl_parse_devices(k->gpu_devices, &m) == 0 &&
                          popcount64(m) == want &&
                          (sn->gpu_count >= 64 || (m >> sn->gpu_count) == 0);
                if (ok) {
                    mask = m;
                } else {
                    char why[200];
                    snprintf(why, sizeof why,
                             "annotation %s \"%.40s\" does not name %d device(s) of node %s; "
                             "it was ignored and the pod is charged by its request",
                             "fairshare.dev/gpu-devices", k->gpu_devices, want, sn->name);
                    if ((rc = add_ignored(out, &ignored_cap, k, why)))
                        goto out;
                }
            }
            if (gpu > 0 && !mask) {
                unknown[pod_out] = true;
                any_unknown = true;
            }
            p->gpu_devices = mask;
        }
        if (p->terminating && p->queue >= 0)
            out->nterminating++;
        out->kpods[pod_out] = k;
        pod_out++;
    }
    out->snap.pods = out->pods;
    out->snap.npods = pod_out;
    out->snap.now_ms = in->now_ms;
    out->snap.over_quota_threshold_pct = in->over_quota_threshold_pct;
    out->snap.over_quota_min_runtime_ms = in->over_quota_min_runtime_ms;
    out->snap.max_evictions = in->max_evictions;
    out->snap.hold_timeout_ms = in->hold_timeout_ms;
    out->snap.lend_max_runtime_ms = in->lend_max_runtime_ms;
    if ((rc = mark_reservations(out, resv_pod)))
        goto out;
    if (any_unknown && (rc = assign_devices(out, unknown)))
        goto out;

out:
    fair_free(b.memo);
    fair_free(unknown);
    fair_free(resv_pod);
    fair_ctl_index_release(&b.project_by_name);
    fair_ctl_index_release(&b.kqueue_by_name);
    fair_ctl_index_release(&b.project_by_ns);
    fair_ctl_index_release(&b.podgroup_by_key);
    fair_ctl_index_release(&b.ns_by_name);
    fair_free(b.pg_keys);
    if (rc) {
        fair_ctl_snapshot_release(out);
        fair_error_set(err, rc, "building the scheduling snapshot: %s", fair_strerror(rc));
    }
    return rc;
}
