/* The simulated cluster's free resources and the baseline placement
 * policies (first, random and GPU best fit, the FGD paper's BestFit,
 * GpuPacking and FGD) plus our approximation of FGD. All integer
 * arithmetic but the paper's own scores (floating point as its simulator
 * computes them, in a fixed order), so that every run with the same seed
 * places identically. */
#include "sim/place.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

#define FULL FAIR_GPU_DEVICE_MILLI

uint64_t fair_sim_rand(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ULL;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static const char *const policy_names[FAIR_SIM_POLICY_COUNT] = {
    "fairshare",  "first-fit", "random-fit", "gpu-best-fit", "fgd",
    "fgd-online", "BestFit",   "GpuPacking", "FGD",
};

const char *fair_sim_policy_name(enum fair_sim_policy p)
{
    return (unsigned)p < FAIR_SIM_POLICY_COUNT ? policy_names[p] : "?";
}

int fair_sim_policy_parse(const char *s, enum fair_sim_policy *out)
{
    for (int i = 0; i < FAIR_SIM_POLICY_COUNT; i++)
        if (strcmp(s, policy_names[i]) == 0) {
            *out = (enum fair_sim_policy)i;
            return 0;
        }
    return FAIR_EINVAL;
}

/* ---- cluster ------------------------------------------------------------ */

void fair_sim_cluster_reset(struct fair_sim_cluster *c)
{
    const struct fair_sim_trace *t = c->trace;
    c->gpu_allocated = 0;
    c->gpu_capacity = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        struct fair_sim_nstate *s = &c->n[i];
        memset(s, 0, sizeof(*s));
        s->cpu_free = t->nodes[i].cpu_milli;
        s->mem_free = t->nodes[i].memory_bytes;
        for (int d = 0; d < t->nodes[i].gpu_count; d++)
            s->gpu_free[d] = FULL;
        s->gpu_free_total = (int64_t)t->nodes[i].gpu_count * FULL;
        c->gpu_capacity += s->gpu_free_total;
    }
}

int fair_sim_cluster_init(struct fair_sim_cluster *c, const struct fair_sim_trace *t,
                          struct fair_error *err)
{
    memset(c, 0, sizeof(*c));
    c->trace = t;
    c->nnodes = t->nnodes;
    c->n = fair_calloc(t->nnodes ? t->nnodes : 1, sizeof(*c->n));
    if (!c->n)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory for %zu nodes",
                              t->nnodes);
    fair_sim_cluster_reset(c);
    return 0;
}

void fair_sim_cluster_release(struct fair_sim_cluster *c)
{
    fair_free(c->n);
    memset(c, 0, sizeof(*c));
}

bool fair_sim_model_ok(const struct fair_sim_cluster *c, size_t node,
                       const struct fair_sim_job *job)
{
    if (job->gpu_milli == 0 || job->model_mask == 0)
        return true;
    int m = c->trace->nodes[node].model;
    return m >= 0 && (job->model_mask >> m) & 1;
}

static int full_devices(const struct fair_sim_nstate *s, int ngpu)
{
    int k = 0;
    for (int d = 0; d < ngpu; d++)
        k += s->gpu_free[d] == FULL;
    return k;
}

static bool gpu_fits(const struct fair_sim_nstate *s, int ngpu, int64_t gpu)
{
    if (gpu == 0)
        return true;
    if (gpu < FULL) {
        for (int d = 0; d < ngpu; d++)
            if (s->gpu_free[d] >= gpu)
                return true;
        return false;
    }
    return full_devices(s, ngpu) >= gpu / FULL;
}

bool fair_sim_fits(const struct fair_sim_cluster *c, size_t node, const struct fair_sim_job *job)
{
    const struct fair_sim_nstate *s = &c->n[node];
    if (s->cpu_free < job->cpu_milli || s->mem_free < job->memory_bytes)
        return false;
    if (job->gpu_milli > s->gpu_free_total)
        return false;
    if (!fair_sim_model_ok(c, node, job))
        return false;
    return gpu_fits(s, c->trace->nodes[node].gpu_count, job->gpu_milli);
}

int fair_sim_cluster_bind(struct fair_sim_cluster *c, size_t node, uint64_t devices,
                          const struct fair_sim_job *job)
{
    if (node >= c->nnodes)
        return FAIR_EINVAL;
    struct fair_sim_nstate *s = &c->n[node];
    int ngpu = c->trace->nodes[node].gpu_count;
    if (s->cpu_free < job->cpu_milli || s->mem_free < job->memory_bytes)
        return FAIR_EINVAL;
    if (!fair_sim_model_ok(c, node, job))
        return FAIR_EINVAL;
    int nbits = __builtin_popcountll(devices);
    if (ngpu < 64 && (devices >> ngpu))
        return FAIR_EINVAL;
    if (job->gpu_milli == 0) {
        if (devices)
            return FAIR_EINVAL;
    } else if (job->gpu_milli < FULL) {
        if (nbits != 1 || s->gpu_free[__builtin_ctzll(devices)] < job->gpu_milli)
            return FAIR_EINVAL;
    } else {
        if (nbits != job->gpu_milli / FULL)
            return FAIR_EINVAL;
        for (int d = 0; d < ngpu; d++)
            if ((devices >> d) & 1 && s->gpu_free[d] != FULL)
                return FAIR_EINVAL;
    }
    s->cpu_free -= job->cpu_milli;
    s->mem_free -= job->memory_bytes;
    if (job->gpu_milli > 0 && job->gpu_milli < FULL)
        s->gpu_free[__builtin_ctzll(devices)] -= (int32_t)job->gpu_milli;
    else
        for (int d = 0; d < ngpu; d++)
            if ((devices >> d) & 1)
                s->gpu_free[d] = 0;
    s->gpu_free_total -= job->gpu_milli;
    s->pods++;
    s->frag_epoch = 0;
    s->pfrag_ok = false;
    c->gpu_allocated += job->gpu_milli;
    return 0;
}

void fair_sim_cluster_unbind(struct fair_sim_cluster *c, size_t node, uint64_t devices,
                             const struct fair_sim_job *job)
{
    struct fair_sim_nstate *s = &c->n[node];
    int ngpu = c->trace->nodes[node].gpu_count;
    s->cpu_free += job->cpu_milli;
    s->mem_free += job->memory_bytes;
    if (job->gpu_milli > 0 && job->gpu_milli < FULL)
        s->gpu_free[__builtin_ctzll(devices)] += (int32_t)job->gpu_milli;
    else
        for (int d = 0; d < ngpu; d++)
            if ((devices >> d) & 1)
                s->gpu_free[d] = FULL;
    s->gpu_free_total += job->gpu_milli;
    s->pods--;
    s->frag_epoch = 0;
    s->pfrag_ok = false;
    c->gpu_allocated -= job->gpu_milli;
}

/* ---- device choice ------------------------------------------------------ */

/* Lowest-index whole devices, or for a fraction the first device with room
 * (tightest when best is set). 0 when none. */
static uint64_t pick_devices(const struct fair_sim_nstate *s, int ngpu, int64_t gpu, bool best)
{
    if (gpu == 0)
        return 0;
    if (gpu < FULL) {
        int chosen = -1;
        for (int d = 0; d < ngpu; d++) {
            if (s->gpu_free[d] < gpu)
                continue;
            if (chosen < 0 || (best && s->gpu_free[d] < s->gpu_free[chosen]))
                chosen = d;
            if (!best)
                break;
        }
        return chosen < 0 ? 0 : (uint64_t)1 << chosen;
    }
    uint64_t m = 0;
    int64_t need = gpu / FULL;
    for (int d = 0; d < ngpu && need > 0; d++)
        if (s->gpu_free[d] == FULL) {
            m |= (uint64_t)1 << d;
            need--;
        }
    return need ? 0 : m;
}

/* ---- FGD ---------------------------------------------------------------- */

static int type_cmp(const void *a, const void *b)
{
    const struct fair_sim_podtype *x = a, *y = b;
    if (x->gpu_milli != y->gpu_milli)
        return x->gpu_milli < y->gpu_milli ? -1 : 1;
    if (x->cpu_milli != y->cpu_milli)
        return x->cpu_milli < y->cpu_milli ? -1 : 1;
    return (x->model_mask > y->model_mask) - (x->model_mask < y->model_mask);
}

/* ---- the paper's FGD -------------------------------------------------------- */

static int ptype_key_cmp(const struct fair_sim_fgdtype *x, const struct fair_sim_fgdtype *y)
{
    if (x->cpu_milli != y->cpu_milli)
        return x->cpu_milli < y->cpu_milli ? -1 : 1;
    if (x->milli != y->milli)
        return x->milli < y->milli ? -1 : 1;
    if (x->num != y->num)
        return x->num < y->num ? -1 : 1;
    return (x->spec > y->spec) - (x->spec < y->spec);
}

static int ptype_cmp(const void *a, const void *b)
{
    return ptype_key_cmp(a, b);
}

/* Most frequent first; equal counts in key order (Go's order among them
 * follows map iteration, which is random). */
static int ptype_count_cmp(const void *a, const void *b)
{
    const struct fair_sim_fgdtype *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return ptype_key_cmp(x, y);
}

/* GetTypicalPods (frag.go) with the paper's settings: every pod counts
 * once, CPU-only pods included, the most frequent requests until they
 * cover 95% of the pods, frequencies renormalised over those. */
static int paper_fgd_init(struct fair_sim_placer *p, const struct fair_sim_trace *t,
                          struct fair_error *err)
{
    size_t n = t->njobs;
    struct fair_sim_fgdtype *all = fair_calloc(n ? n : 1, sizeof(*all));
    if (!all)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
    for (size_t i = 0; i < n; i++) {
        const struct fair_sim_job *j = &t->jobs[i];
        struct fair_sim_fgdtype *k = &all[i];
        /* The scheduler's non-zero CPU request: 100m when none. */
        k->cpu_milli = j->cpu_milli > 0 ? j->cpu_milli : 100;
        k->milli = j->gpu_milli >= FULL ? FULL : j->gpu_milli;
        k->num = j->gpu_milli >= FULL ? (int)(j->gpu_milli / FULL) : (j->gpu_milli > 0 ? 1 : 0);
        k->spec = j->gpu_milli > 0 ? j->spec : -1;
        k->model_mask = j->gpu_milli > 0 ? j->model_mask : 0;
        k->count = 1;
    }
    qsort(all, n, sizeof(*all), ptype_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && ptype_key_cmp(&all[m - 1], &all[i]) == 0)
            all[m - 1].count++;
        else
            all[m++] = all[i];
    }
    qsort(all, m, sizeof(*all), ptype_count_cmp);
    double total = (double)n, expected = 95.0 * total / 100.0, cum = 0;
    size_t i = 0, upto = 0;
    while (cum < expected && i < m) {
        upto++;
        for (; i < upto && i < m; i++) {
            cum += (double)all[i].count;
            all[i].freq = (double)all[i].count / total;
        }
    }
    if (i < m)
        for (size_t k = 0; k < i; k++)
            all[k].freq /= cum / total;
    p->ptypes = all;
    p->nptypes = i;
    return 0;
}

/* NodeGpuShareFragAmountScore (frag.go): for each typical pod, all the
 * node's free GPU when the pod cannot run there (no GPU asked, wrong
 * model, not enough devices or CPU), else the free GPU of the devices too
 * small for it; weighted by frequency. */
static double paper_frag(const struct fair_sim_placer *p, int64_t cpu, const int32_t *dev, int ngpu,
                         int model)
{
    int64_t total = 0;
    for (int d = 0; d < ngpu; d++)
        total += dev[d];
    if (total == 0)
        return 0;
    double f = 0;
    for (size_t i = 0; i < p->nptypes; i++) {
        const struct fair_sim_fgdtype *m = &p->ptypes[i];
        int64_t amount = total;
        bool access = m->model_mask == 0 || (model >= 0 && (m->model_mask >> model) & 1);
        if (m->milli > 0 && access && cpu >= m->cpu_milli) {
            int room = 0;
            int64_t small = 0;
            for (int d = 0; d < ngpu; d++) {
                if (dev[d] >= m->milli)
                    room++;
                else
                    small += dev[d];
            }
            if (room >= m->num)
                amount = small;
        }
        f += m->freq * (double)amount;
    }
    return f;
}

static int64_t paper_fgd_score(struct fair_sim_placer *p, struct fair_sim_cluster *c, size_t node,
                               const struct fair_sim_job *job, uint64_t *devices)
{
    struct fair_sim_nstate *s = &c->n[node];
    const struct fair_sim_node *n = &c->trace->nodes[node];
    if (!s->pfrag_ok) {
        s->pfrag = paper_frag(p, s->cpu_free, s->gpu_free, n->gpu_count, n->model);
        s->pfrag_ok = true;
    }
    int32_t g[FAIR_MAX_GPUS_PER_NODE];
    memcpy(g, s->gpu_free, sizeof(g));
    int64_t cpu = s->cpu_free - (job->cpu_milli > 0 ? job->cpu_milli : 100);
    if (job->gpu_milli > 0 && job->gpu_milli < FULL) {
        int64_t best = -1;
        int bestd = -1;
        for (int d = 0; d < n->gpu_count; d++) {
            if (s->gpu_free[d] < job->gpu_milli)
                continue;
            g[d] -= (int32_t)job->gpu_milli;
            double nf = paper_frag(p, cpu, g, n->gpu_count, n->model);
            g[d] += (int32_t)job->gpu_milli;
            int64_t sc = (int64_t)(1.0 / (1.0 + exp(-((s->pfrag - nf) / 1000))) * 100.0);
            if (bestd < 0 || sc > best) {
                best = sc;
                bestd = d;
            }
        }
        *devices = (uint64_t)1 << bestd;
        return best;
    }
    uint64_t mask = pick_devices(s, n->gpu_count, job->gpu_milli, false);
    for (int d = 0; d < n->gpu_count; d++)
        if ((mask >> d) & 1)
            g[d] = 0;
    *devices = mask;
    double nf = paper_frag(p, cpu, g, n->gpu_count, n->model);
    return (int64_t)(1.0 / (1.0 + exp(-((s->pfrag - nf) / 1000))) * 100.0);
}

int fair_sim_placer_init(struct fair_sim_placer *p, enum fair_sim_policy policy, uint64_t seed,
                         const struct fair_sim_trace *t, struct fair_error *err)
{
    int rc = 0;
    memset(p, 0, sizeof(*p));
    p->policy = policy;
    p->rng = seed ^ 0x5DEECE66DULL;
    if (policy == FAIR_SIM_POLICY_ENGINE || (unsigned)policy >= FAIR_SIM_POLICY_COUNT)
        return fair_error_set(err, FAIR_EINVAL, "simulator: policy %d is not a baseline",
                              (int)policy);
    p->epoch = 1;
    if (policy == FAIR_SIM_POLICY_PAPER_FGD)
        return paper_fgd_init(p, t, err);
    if (policy != FAIR_SIM_POLICY_FGD && policy != FAIR_SIM_POLICY_FGD_ONLINE)
        return 0;
    /* Target workload: the distinct (cpu, gpu, models) of the trace's jobs
     * with their frequency. Memory is left out, as in the paper. */
    struct fair_sim_podtype *all = fair_calloc(t->njobs ? t->njobs : 1, sizeof(*all));
    if (!all) {
        rc = fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
        goto out;
    }
    for (size_t i = 0; i < t->njobs; i++) {
        all[i].cpu_milli = t->jobs[i].cpu_milli;
        all[i].gpu_milli = t->jobs[i].gpu_milli;
        all[i].model_mask = t->jobs[i].gpu_milli ? t->jobs[i].model_mask : 0;
        all[i].count = 1;
    }
    qsort(all, t->njobs, sizeof(*all), type_cmp);
    size_t n = 0;
    for (size_t i = 0; i < t->njobs; i++) {
        if (n > 0 && type_cmp(&all[n - 1], &all[i]) == 0)
            all[n - 1].count++;
        else
            all[n++] = all[i];
    }
    p->types = all;
    p->ntypes = n;
    if (policy == FAIR_SIM_POLICY_FGD_ONLINE) {
        p->seen = fair_calloc(n ? n : 1, sizeof(*p->seen));
        if (!p->seen) {
            rc = fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            p->types[i].count = 0; /* nothing known yet */
        p->next_refresh = 1;
    }
out:
    return rc;
}

void fair_sim_placer_release(struct fair_sim_placer *p)
{
    fair_free(p->ptypes);
    fair_free(p->seen);
    fair_free(p->types);
    memset(p, 0, sizeof(*p));
}

/* F_n(M) for a node state: for each pod type m, the GPU capacity of the
 * node that m cannot use: all of it when m does not fit (or asks for no
 * GPU), else the free share of each device too small for m. */
static int64_t frag_of(const struct fair_sim_placer *p, int64_t cpu_free, const int32_t *gpu_free,
                       int ngpu, int model)
{
    int64_t total = 0, maxfree = 0;
    int full = 0;
    for (int d = 0; d < ngpu; d++) {
        total += gpu_free[d];
        if (gpu_free[d] > maxfree)
            maxfree = gpu_free[d];
        full += gpu_free[d] == FULL;
    }
    if (total == 0)
        return 0;
    int64_t f = 0;
    for (size_t i = 0; i < p->ntypes; i++) {
        const struct fair_sim_podtype *m = &p->types[i];
        int64_t fm;
        bool fits = m->gpu_milli > 0 && cpu_free >= m->cpu_milli &&
                    (m->model_mask == 0 || (model >= 0 && (m->model_mask >> model) & 1)) &&
                    (m->gpu_milli < FULL ? maxfree >= m->gpu_milli : full >= m->gpu_milli / FULL);
        if (!fits) {
            fm = total;
        } else {
            int64_t need = m->gpu_milli < FULL ? m->gpu_milli : FULL;
            fm = 0;
            for (int d = 0; d < ngpu; d++)
                if (gpu_free[d] < need)
                    fm += gpu_free[d];
        }
        f += fm * m->count;
    }
    return f;
}

int64_t fair_sim_node_frag(const struct fair_sim_placer *p, const struct fair_sim_cluster *c,
                           size_t node)
{
    const struct fair_sim_nstate *s = &c->n[node];
    const struct fair_sim_node *n = &c->trace->nodes[node];
    return frag_of(p, s->cpu_free, s->gpu_free, n->gpu_count, n->model);
}

/* Best (lowest) fragmentation increase on node for job; its devices. */
static int64_t fgd_delta(struct fair_sim_placer *p, struct fair_sim_cluster *c, size_t node,
                         const struct fair_sim_job *job, uint64_t *devices)
{
    struct fair_sim_nstate *s = &c->n[node];
    const struct fair_sim_node *n = &c->trace->nodes[node];
    if (s->frag_epoch != p->epoch) {
        s->frag = frag_of(p, s->cpu_free, s->gpu_free, n->gpu_count, n->model);
        s->frag_epoch = p->epoch;
    }
    int32_t g[FAIR_MAX_GPUS_PER_NODE];
    memcpy(g, s->gpu_free, sizeof(g));
    int64_t cpu = s->cpu_free - job->cpu_milli;
    if (job->gpu_milli == 0 || job->gpu_milli >= FULL) {
        uint64_t m = pick_devices(s, n->gpu_count, job->gpu_milli, false);
        for (int d = 0; d < n->gpu_count; d++)
            if ((m >> d) & 1)
                g[d] = 0;
        *devices = m;
        return frag_of(p, cpu, g, n->gpu_count, n->model) - s->frag;
    }
    int64_t best = INT64_MAX;
    int bestd = -1;
    for (int d = 0; d < n->gpu_count; d++) {
        if (s->gpu_free[d] < job->gpu_milli)
            continue;
        bool seen = false; /* devices with equal free room give equal F */
        for (int e = 0; e < d; e++)
            if (s->gpu_free[e] == s->gpu_free[d])
                seen = true;
        if (seen)
            continue;
        g[d] -= (int32_t)job->gpu_milli;
        int64_t f = frag_of(p, cpu, g, n->gpu_count, n->model) - s->frag;
        g[d] += (int32_t)job->gpu_milli;
        if (f < best) {
            best = f;
            bestd = d;
        }
    }
    *devices = (uint64_t)1 << bestd;
    return best;
}

/* FGD_ONLINE: counts job into the workload seen so far, and now and then
 * makes those counts the weights (which invalidates the cached node
 * fragmentation: the epoch changes). */
static void observe(struct fair_sim_placer *p, const struct fair_sim_job *job)
{
    struct fair_sim_podtype key = {.cpu_milli = job->cpu_milli,
                                   .gpu_milli = job->gpu_milli,
                                   .model_mask = job->gpu_milli ? job->model_mask : 0};
    const struct fair_sim_podtype *m = bsearch(&key, p->types, p->ntypes, sizeof(key), type_cmp);
    if (m)
        p->seen[m - p->types]++;
    if (++p->observed < p->next_refresh)
        return;
    for (size_t i = 0; i < p->ntypes; i++)
        p->types[i].count = p->seen[i];
    p->epoch++;
    if (p->epoch == 0)
        p->epoch = 1;
    p->next_refresh = p->observed < 256 ? 2 * p->observed : p->observed + 256;
}

/* ---- the paper's baselines ------------------------------------------------ */

/* BestFit (best_fit_score.go): sum over CPU and GPU of
 * (free - request) / max spec x 0.5, max specs 128 CPUs and 8 GPUs, then
 * (1 - sum) x 100 truncated to an integer; higher is better. Its min-max
 * normalisation keeps exactly the nodes of the highest raw score at the
 * top, so the raw score decides. Same operations, same IEEE results. */
static int64_t paper_bestfit_score(const struct fair_sim_nstate *s, const struct fair_sim_job *job)
{
    double score = 0;
    score += ((double)s->cpu_free - (double)job->cpu_milli) / 128000.0 * 0.5;
    score += ((double)s->gpu_free_total - (double)job->gpu_milli) / 8000.0 * 0.5;
    return (int64_t)((1.0 - score) * 100.0);
}

/* GpuPacking (gpu_packing_score.go), on a node where the job fits: 0 for a
 * pod without GPU; an empty node max(33 - free GPUs, free GPUs); a pod
 * that needs whole free devices on a used node max(50 - those devices, 33);
 * a fraction on a shared device 100 - that device's free percent / 10, at
 * least 50. */
static int64_t paper_gpupacking_score(const struct fair_sim_nstate *s, int ngpu,
                                      const struct fair_sim_job *job)
{
    if (job->gpu_milli <= 0)
        return 0;
    int full = full_devices(s, ngpu);
    if (full == ngpu)
        return 33 - full > full ? 33 - full : full;
    int64_t per = job->gpu_milli < FULL ? job->gpu_milli : FULL;
    int need = job->gpu_milli < FULL ? 1 : (int)(job->gpu_milli / FULL);
    /* Devices by free room, least first (the order among equals does not
     * change the score). */
    int32_t g[FAIR_MAX_GPUS_PER_NODE];
    memcpy(g, s->gpu_free, sizeof(int32_t) * (size_t)ngpu);
    for (int i = 1; i < ngpu; i++)
        for (int j = i; j > 0 && g[j - 1] > g[j]; j--) {
            int32_t tmp = g[j];
            g[j] = g[j - 1];
            g[j - 1] = tmp;
        }
    int full_used = 0;
    int64_t free_pct = 0;
    for (int d = 0; d < ngpu && need > 0; d++)
        if (per <= g[d]) {
            need--;
            full_used += g[d] == FULL;
            free_pct += (int64_t)g[d] * 100 / FULL;
        }
    if (full_used > 0)
        return 50 - full_used > 33 ? 50 - full_used : 33;
    int64_t score = 100 - free_pct / 10;
    return score > 50 ? score : 50;
}

/* ---- policies ----------------------------------------------------------- */

int fair_sim_place(struct fair_sim_placer *p, struct fair_sim_cluster *c,
                   const struct fair_sim_job *job, int32_t *node_out, uint64_t *devices_out)
{
    int64_t best_score = INT64_MAX, best_tie = INT64_MAX;
    int32_t best = -1;
    uint64_t best_dev = 0;
    uint64_t seen = 0;
    if (p->policy == FAIR_SIM_POLICY_FGD_ONLINE)
        observe(p, job);
    for (size_t i = 0; i < c->nnodes; i++) {
        if (!fair_sim_fits(c, i, job))
            continue;
        const struct fair_sim_nstate *s = &c->n[i];
        int ngpu = c->trace->nodes[i].gpu_count;
        switch (p->policy) {
        case FAIR_SIM_POLICY_FIRST_FIT:
            *node_out = (int32_t)i;
            *devices_out = pick_devices(s, ngpu, job->gpu_milli, false);
            return 0;
        case FAIR_SIM_POLICY_RANDOM_FIT:
            /* Reservoir sampling: each fitting node equally likely. */
            seen++;
            if (fair_sim_rand(&p->rng) % seen == 0)
                best = (int32_t)i;
            break;
        case FAIR_SIM_POLICY_PAPER_FGD: {
            uint64_t dev = 0;
            int64_t score = paper_fgd_score(p, c, i, job, &dev);
            if (best < 0 || score > best_score) {
                best_score = score;
                best = (int32_t)i;
                best_dev = dev;
                seen = 1;
            } else if (score == best_score) {
                seen++;
                if (p->tie_rank ? p->tie_rank[i] < p->tie_rank[best]
                                : fair_sim_rand(&p->rng) % seen == 0) {
                    best = (int32_t)i;
                    best_dev = dev;
                }
            }
            break;
        }
        case FAIR_SIM_POLICY_PAPER_BESTFIT:
        case FAIR_SIM_POLICY_PAPER_GPUPACKING: {
            /* The scheduler's selectHost: the highest score, ties to the
             * lowest tie_rank, or uniformly at random without ranks. */
            int64_t score = p->policy == FAIR_SIM_POLICY_PAPER_BESTFIT
                                ? paper_bestfit_score(s, job)
                                : paper_gpupacking_score(s, ngpu, job);
            if (best < 0 || score > best_score) {
                best_score = score;
                best = (int32_t)i;
                seen = 1;
            } else if (score == best_score) {
                seen++;
                if (p->tie_rank ? p->tie_rank[i] < p->tie_rank[best]
                                : fair_sim_rand(&p->rng) % seen == 0)
                    best = (int32_t)i;
            }
            break;
        }
        case FAIR_SIM_POLICY_GPU_BEST_FIT: {
            /* Least GPU left on the node afterwards, then least CPU. */
            int64_t score = s->gpu_free_total - job->gpu_milli;
            int64_t tie = s->cpu_free - job->cpu_milli;
            if (score < best_score || (score == best_score && tie < best_tie)) {
                best_score = score;
                best_tie = tie;
                best = (int32_t)i;
            }
            break;
        }
        case FAIR_SIM_POLICY_FGD:
        case FAIR_SIM_POLICY_FGD_ONLINE: {
            uint64_t dev = 0;
            int64_t score = fgd_delta(p, c, i, job, &dev);
            if (score < best_score) {
                best_score = score;
                best = (int32_t)i;
                best_dev = dev;
            }
            break;
        }
        default:
            return FAIR_EINVAL;
        }
    }
    if (best < 0)
        return FAIR_ENOTFOUND;
    *node_out = best;
    if (p->policy == FAIR_SIM_POLICY_FGD || p->policy == FAIR_SIM_POLICY_FGD_ONLINE ||
        p->policy == FAIR_SIM_POLICY_PAPER_FGD) {
        *devices_out = best_dev;
    } else {
        const struct fair_sim_nstate *s = &c->n[best];
        int ngpu = c->trace->nodes[best].gpu_count;
        bool tight = p->policy == FAIR_SIM_POLICY_GPU_BEST_FIT ||
                     p->policy == FAIR_SIM_POLICY_PAPER_BESTFIT ||
                     p->policy == FAIR_SIM_POLICY_PAPER_GPUPACKING;
        *devices_out = pick_devices(s, ngpu, job->gpu_milli, tight);
    }
    return 0;
}
