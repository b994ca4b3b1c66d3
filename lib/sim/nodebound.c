/* The node-structured fragmentation bound (see nodebound.h): pod classes,
 * exact per-node dynamic programs under Lagrangian prices, and a
 * subgradient search over the prices started at the LP's duals. */
#include "sim/nodebound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "engine/engine.h"
#include "sim/bound.h"
#include "sim/place.h"

#define DEV FAIR_GPU_DEVICE_MILLI
#define S FAIR_SIM_NODE_BOUND_SCALE

struct cls {
    int64_t gpu; /* milli: a fraction < DEV, or whole GPUs x DEV */
    int64_t cpu; /* units, rounded down */
    int64_t n;   /* arrivals */
};

struct shape {
    int gpus;
    int64_t cpu; /* units, rounded down */
    int64_t m;   /* nodes of this shape */
};

struct nb {
    struct cls *c;
    size_t nc;
    struct shape *sh;
    size_t nsh;
    int64_t cmax;  /* largest node CPU, units */
    int gmax;      /* most devices on a node */
    int64_t *pi;   /* prices, 1/S milli, per class */
    int64_t *use;  /* per class: pods in the nodes' optima (weighted by m) */
    int64_t *f;    /* device table: (DEV + 1) x (cmax + 1) */
    int32_t *fch;  /* its choices: class index, -1: none */
    int64_t *node; /* node table: (gmax + 1) x (cmax + 1) */
    int32_t *nch;  /* >= 0: a device of that CPU; -1 - w: whole class w; INT32_MIN: empty device */
};

static int cmp_cls(const void *a, const void *b)
{
    const struct cls *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

static int cmp_shape(const void *a, const void *b)
{
    const struct shape *x = a, *y = b;
    if (x->gpus != y->gpus)
        return x->gpus < y->gpus ? -1 : 1;
    return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

#define F(g, c) nb->f[(size_t)(g) * (size_t)(nb->cmax + 1) + (size_t)(c)]
#define FCH(g, c) nb->fch[(size_t)(g) * (size_t)(nb->cmax + 1) + (size_t)(c)]
#define N(d, c) nb->node[(size_t)(d) * (size_t)(nb->cmax + 1) + (size_t)(c)]
#define NCH(d, c) nb->nch[(size_t)(d) * (size_t)(nb->cmax + 1) + (size_t)(c)]

/* Counts the fractions of the device optimum F(DEV, x) into use[], times m. */
static void take_device(struct nb *nb, int64_t x, int64_t m)
{
    int64_t g = DEV, c = x;
    while (g > 0 && c >= 0) {
        int32_t j = FCH(g, c);
        if (j < 0)
            break;
        nb->use[j] += m;
        g -= nb->c[j].gpu;
        c -= nb->c[j].cpu;
    }
}

/* L(pi) in 1/S milli; fills use[] with the nodes' optimal pod counts. */
static int64_t evaluate(struct nb *nb)
{
    const size_t w = (size_t)nb->cmax + 1;
    memset(nb->use, 0, nb->nc * sizeof(*nb->use));
    memset(nb->f, 0, (size_t)(DEV + 1) * w * sizeof(*nb->f));
    for (size_t i = 0; i < (size_t)(DEV + 1) * w; i++)
        nb->fch[i] = -1;
    int64_t total = 0;
    for (size_t j = 0; j < nb->nc; j++)
        total += nb->pi[j] * nb->c[j].n;
    /* The device table: unbounded knapsack over the fraction classes with a
     * positive reduced value; F(g, c) = best with <= g milli and <= c units. */
    for (size_t j = 0; j < nb->nc; j++) {
        const struct cls *k = &nb->c[j];
        int64_t r = k->gpu * S - nb->pi[j];
        if (k->gpu >= DEV || r <= 0 || k->cpu > nb->cmax)
            continue;
        for (int64_t g = k->gpu; g <= DEV; g++)
            for (int64_t c = k->cpu; c <= nb->cmax; c++) {
                int64_t v = F(g - k->gpu, c - k->cpu) + r;
                if (v > F(g, c)) {
                    F(g, c) = v;
                    FCH(g, c) = (int32_t)j;
                }
            }
    }
    /* The node table, for every device count up to gmax at once: N(d, c) =
     * best with d devices and <= c units. */
    for (int64_t c = 0; c <= nb->cmax; c++) {
        N(0, c) = 0;
        NCH(0, c) = INT32_MIN;
    }
    for (int d = 1; d <= nb->gmax; d++)
        for (int64_t c = 0; c <= nb->cmax; c++) {
            int64_t best = N(d - 1, c);
            int32_t ch = INT32_MIN;
            for (int64_t x = 0; x <= c; x++) {
                int64_t v = N(d - 1, c - x) + F(DEV, x);
                if (v > best) {
                    best = v;
                    ch = (int32_t)x;
                }
            }
            for (size_t j = 0; j < nb->nc; j++) {
                const struct cls *k = &nb->c[j];
                int64_t kd = k->gpu / DEV;
                if (k->gpu < DEV || kd > d || k->cpu > c)
                    continue;
                int64_t r = k->gpu * S - nb->pi[j];
                if (r <= 0)
                    continue;
                int64_t v = N(d - kd, c - k->cpu) + r;
                if (v > best) {
                    best = v;
                    ch = -1 - (int32_t)j;
                }
            }
            N(d, c) = best;
            NCH(d, c) = ch;
        }
    for (size_t t = 0; t < nb->nsh; t++) {
        const struct shape *s = &nb->sh[t];
        total += s->m * N(s->gpus, s->cpu);
        int64_t d = s->gpus, c = s->cpu;
        while (d > 0) {
            int32_t ch = NCH(d, c);
            if (ch == INT32_MIN) {
                d--;
            } else if (ch >= 0) {
                take_device(nb, ch, s->m);
                d--;
                c -= ch;
            } else {
                size_t j = (size_t)(-1 - ch);
                nb->use[j] += s->m;
                d -= nb->c[j].gpu / DEV;
                c -= nb->c[j].cpu;
            }
        }
    }
    return total;
}

int fair_sim_node_bound(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a,
                        size_t prefix, const struct fair_sim_node_bound_opts *opts,
                        struct fair_sim_node_bound *out, struct fair_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = 0;
    struct nb nbs = {0}, *nb = &nbs;
    int64_t *best_pi = NULL;
    double *p = NULL;
    const int64_t unit = opts && opts->cpu_unit_milli ? opts->cpu_unit_milli : 250;
    const size_t iters = opts && opts->iterations ? opts->iterations : 150;
    if (unit < 1) {
        rc = fair_error_set(err, FAIR_EINVAL, "node bound: the CPU unit must be >= 1 milli");
        goto out;
    }
    if (prefix > a->n)
        prefix = a->n;
    /* Node shapes. */
    nb->sh = fair_calloc(t->nnodes ? t->nnodes : 1, sizeof(*nb->sh));
    nb->c = fair_calloc(prefix ? prefix : 1, sizeof(*nb->c));
    if (!nb->sh || !nb->c) {
        rc = fair_error_set(err, FAIR_ENOMEM, "node bound: out of memory");
        goto out;
    }
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct fair_sim_node *n = &t->nodes[i];
        out->capacity_milli += (int64_t)n->gpu_count * DEV;
        if (n->gpu_count <= 0)
            continue;
        int64_t cu = n->cpu_milli > 0 ? n->cpu_milli / unit : 0;
        if (cu > FAIR_SIM_NODE_BOUND_MAX_CPU_UNITS) {
            rc = fair_error_set(err, FAIR_ERANGE,
                                "node bound: node %s has %lld CPU units of %lld milli, more "
                                "than %d; use a larger unit",
                                n->name, (long long)cu, (long long)unit,
                                FAIR_SIM_NODE_BOUND_MAX_CPU_UNITS);
            goto out;
        }
        nb->sh[nb->nsh++] = (struct shape){.gpus = n->gpu_count, .cpu = cu, .m = 1};
        if (cu > nb->cmax)
            nb->cmax = cu;
        if (n->gpu_count > nb->gmax)
            nb->gmax = n->gpu_count;
    }
    qsort(nb->sh, nb->nsh, sizeof(*nb->sh), cmp_shape);
    size_t k = 0;
    for (size_t i = 0; i < nb->nsh; i++)
        if (k && nb->sh[k - 1].gpus == nb->sh[i].gpus && nb->sh[k - 1].cpu == nb->sh[i].cpu)
            nb->sh[k - 1].m++;
        else
            nb->sh[k++] = nb->sh[i];
    nb->nsh = k;
    /* Pod classes, and the histogram for the LP. */
    int64_t count[DEV] = {0}, whole = 0;
    for (size_t i = 0; i < prefix; i++) {
        const struct fair_sim_job *j = a->jobs[i];
        int64_t g = j->gpu_milli;
        if (g == 0)
            continue;
        if (g < 0 || (g >= DEV && g % DEV)) {
            rc = fair_error_set(err, FAIR_EINVAL,
                                "node bound: pod %s asks for %lld milli-GPU, neither a fraction "
                                "below 1 nor whole GPUs",
                                j->name, (long long)g);
            goto out;
        }
        out->arrived_milli += g;
        if (g < DEV)
            count[g]++;
        else
            whole += g / DEV;
        nb->c[nb->nc++] =
            (struct cls){.gpu = g, .cpu = j->cpu_milli > 0 ? j->cpu_milli / unit : 0, .n = 1};
    }
    qsort(nb->c, nb->nc, sizeof(*nb->c), cmp_cls);
    k = 0;
    for (size_t i = 0; i < nb->nc; i++)
        if (k && nb->c[k - 1].gpu == nb->c[i].gpu && nb->c[k - 1].cpu == nb->c[i].cpu)
            nb->c[k - 1].n++;
        else
            nb->c[k++] = nb->c[i];
    nb->nc = k;
    if (nb->nc > FAIR_SIM_NODE_BOUND_MAX_CLASSES) {
        rc = fair_error_set(err, FAIR_ERANGE, "node bound: %zu pod classes, more than %d", nb->nc,
                            FAIR_SIM_NODE_BOUND_MAX_CLASSES);
        goto out;
    }
    out->classes = nb->nc;
    out->node_shapes = nb->nsh;
    /* The LP and its duals: the starting prices. */
    double duals[DEV + 1];
    int64_t sizes[DEV], counts[DEV];
    size_t ns = 0;
    for (int64_t s = 1; s < DEV; s++)
        if (count[s]) {
            sizes[ns] = s;
            counts[ns++] = count[s];
        }
    struct fair_sim_frag_hist h = {.sizes = sizes,
                                   .counts = counts,
                                   .nsizes = ns,
                                   .whole_gpus = whole,
                                   .devices = out->capacity_milli / DEV,
                                   .duals = duals};
    struct fair_sim_frag_bound lpb;
    rc = fair_sim_frag_bound_hist(&h, &lpb, err);
    if (rc)
        goto out;
    out->lp_bound_milli = lpb.bound_milli;
    const size_t w = (size_t)nb->cmax + 1;
    nb->pi = fair_calloc(nb->nc ? nb->nc : 1, sizeof(*nb->pi));
    nb->use = fair_calloc(nb->nc ? nb->nc : 1, sizeof(*nb->use));
    best_pi = fair_calloc(nb->nc ? nb->nc : 1, sizeof(*best_pi));
    p = fair_calloc(nb->nc ? nb->nc : 1, sizeof(*p));
    nb->f = fair_calloc((size_t)(DEV + 1) * w, sizeof(*nb->f));
    nb->fch = fair_calloc((size_t)(DEV + 1) * w, sizeof(*nb->fch));
    nb->node = fair_calloc((size_t)(nb->gmax + 1) * w, sizeof(*nb->node));
    nb->nch = fair_calloc((size_t)(nb->gmax + 1) * w, sizeof(*nb->nch));
    if (!nb->pi || !nb->use || !best_pi || !p || !nb->f || !nb->fch || !nb->node || !nb->nch) {
        rc = fair_error_set(err, FAIR_ENOMEM, "node bound: out of memory for the tables");
        goto out;
    }
    for (size_t j = 0; j < nb->nc; j++) {
        const struct cls *c = &nb->c[j];
        double u = c->gpu < DEV ? duals[c->gpu] : (double)(c->gpu / DEV) * duals[DEV];
        /* A class no node shape holds is never placed: its price is 0. */
        bool fits = false;
        for (size_t q = 0; q < nb->nsh && !fits; q++)
            fits = nb->sh[q].cpu >= c->cpu &&
                   (c->gpu < DEV ? nb->sh[q].gpus >= 1 : nb->sh[q].gpus >= c->gpu / DEV);
        p[j] = fits ? u : 0;
    }
    /* Subgradient descent on L (convex, piecewise linear in pi). The step
     * aims at a target below the best L so far; it halves after steps
     * without progress. Any pi gives a valid bound, so this only decides
     * how tight it is. */
    int64_t best = INT64_MAX;
    double lambda = 1.0;
    size_t stale = 0;
    for (size_t it = 0; it < iters; it++) {
        for (size_t j = 0; j < nb->nc; j++) {
            double v = p[j];
            if (v < 0)
                v = p[j] = 0;
            if (v > (double)nb->c[j].gpu)
                v = p[j] = (double)nb->c[j].gpu;
            nb->pi[j] = (int64_t)llround(v * S);
        }
        int64_t l = evaluate(nb);
        out->iterations = it + 1;
        if (l < best) {
            best = l;
            memcpy(best_pi, nb->pi, nb->nc * sizeof(*best_pi));
            stale = 0;
        } else if (++stale >= 5) {
            lambda /= 2;
            stale = 0;
            if (lambda < 1e-4)
                break;
        }
        double norm = 0;
        for (size_t j = 0; j < nb->nc; j++) {
            double g = (double)(nb->c[j].n - nb->use[j]);
            norm += g * g;
        }
        if (norm == 0)
            break; /* the relaxed optimum uses every class exactly: L is OPT */
        double target = (double)best / S - 0.002 * (double)out->capacity_milli;
        double step = lambda * ((double)l / S - target) / norm;
        for (size_t j = 0; j < nb->nc; j++)
            p[j] -= step * (double)(nb->c[j].n - nb->use[j]);
    }
    int64_t most = best / S; /* floor: allocation is a whole milli-GPU */
    if (most > out->capacity_milli)
        most = out->capacity_milli;
    if (most > out->arrived_milli)
        most = out->arrived_milli;
    if (most > lpb.max_allocated_milli)
        most = lpb.max_allocated_milli; /* both are proven; keep the tighter */
    out->max_allocated_milli = most;
    out->bound_milli = out->capacity_milli - most;
out:
    fair_free(nb->sh);
    fair_free(nb->c);
    fair_free(nb->pi);
    fair_free(nb->use);
    fair_free(nb->f);
    fair_free(nb->fch);
    fair_free(nb->node);
    fair_free(nb->nch);
    fair_free(best_pi);
    fair_free(p);
    return rc;
}

/* ---- an explicit offline packing (the other side of the bound) ---------- */

struct item {
    size_t *pods; /* arrival indices, a slice of the pool */
    size_t npods;
    int64_t fill; /* milli-GPU per device */
    int devices;
    int64_t cpu, mem;
};

struct pack {
    struct fair_sim_cluster c;
    const struct fair_sim_arrivals *a;
    bool *placed;
    struct fair_sim_spot *spot; /* optional */
};

static void mark(struct pack *p, size_t idx, size_t node, uint64_t mask)
{
    p->placed[idx] = true;
    if (p->spot)
        p->spot[idx] = (struct fair_sim_spot){.node = (int32_t)node, .devices = mask};
}

/* Fullest per device first; then more devices, then more CPU. */
static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->fill != y->fill)
        return x->fill > y->fill ? -1 : 1;
    if (x->devices != y->devices)
        return x->devices > y->devices ? -1 : 1;
    return x->cpu > y->cpu ? -1 : x->cpu < y->cpu;
}

/* Placement order: multi-device items first, then CPU per device, most first. */
static int cmp_item_cpu(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->devices != y->devices)
        return x->devices > y->devices ? -1 : 1;
    int64_t l = x->cpu * y->devices, r = y->cpu * x->devices;
    return l > r ? -1 : l < r;
}

static int full_devices(const struct fair_sim_cluster *c, size_t node)
{
    int n = 0;
    for (int d = 0; d < c->trace->nodes[node].gpu_count; d++)
        n += c->n[node].gpu_free[d] == DEV;
    return n;
}

/* The first k fully free devices of a node, as a mask. */
static uint64_t free_mask(const struct fair_sim_cluster *c, size_t node, int k)
{
    uint64_t mask = 0;
    for (int d = 0; d < c->trace->nodes[node].gpu_count && k; d++)
        if (c->n[node].gpu_free[d] == DEV) {
            mask |= 1ull << d;
            k--;
        }
    return mask;
}

/* Binds an item on one node (the node is chosen with room for the sum of
 * its pods' CPU and memory, so all of them bind): the node that keeps
 * the most free CPU per free device, so that the CPU-hungry items, placed
 * first, take the CPU-rich nodes and no node ends with free devices but
 * no CPU; multi-device items first want the fewest free devices left, so
 * that whole nodes stay whole. */
static void place_item(struct pack *p, const struct item *it)
{
    struct fair_sim_cluster *c = &p->c;
    size_t best = SIZE_MAX;
    int64_t best_key = INT64_MAX;
    double best_ratio = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct fair_sim_nstate *s = &c->n[i];
        if (s->cpu_free < it->cpu || s->mem_free < it->mem)
            continue;
        int fd = full_devices(c, i);
        if (fd < it->devices)
            continue;
        bool ok = true;
        for (size_t k = 0; k < it->npods && ok; k++)
            ok = fair_sim_model_ok(c, i, p->a->jobs[it->pods[k]]);
        if (!ok)
            continue;
        int64_t left = fd - it->devices;
        double ratio = (double)(s->cpu_free - it->cpu) / (double)(left + 1);
        int64_t key = it->devices > 1 ? left : 0;
        if (key < best_key || (key == best_key && ratio > best_ratio)) {
            best = i;
            best_key = key;
            best_ratio = ratio;
        }
    }
    if (best == SIZE_MAX)
        return;
    uint64_t mask = free_mask(c, best, it->devices);
    for (size_t k = 0; k < it->npods; k++)
        if (fair_sim_cluster_bind(c, best, mask, p->a->jobs[it->pods[k]]) == 0)
            mark(p, it->pods[k], best, mask);
}

bool fair_sim_best_fit(const struct fair_sim_cluster *c, const struct fair_sim_job *job,
                       size_t *node, uint64_t *devices)
{
    size_t best = SIZE_MAX;
    int64_t key = INT64_MAX;
    uint64_t mask = 0;
    for (size_t i = 0; i < c->nnodes; i++) {
        if (!fair_sim_fits(c, i, job))
            continue;
        const struct fair_sim_nstate *s = &c->n[i];
        if (job->gpu_milli == 0) {
            if (-s->cpu_free < key) {
                key = -s->cpu_free;
                best = i;
                mask = 0;
            }
        } else if (job->gpu_milli < DEV) {
            for (int d = 0; d < c->trace->nodes[i].gpu_count; d++)
                if (s->gpu_free[d] >= job->gpu_milli && s->gpu_free[d] < key) {
                    key = s->gpu_free[d];
                    best = i;
                    mask = 1ull << d;
                }
        } else if (full_devices(c, i) < key) {
            key = full_devices(c, i);
            best = i;
            mask = free_mask(c, i, (int)(job->gpu_milli / DEV));
        }
    }
    *node = best;
    *devices = mask;
    return best != SIZE_MAX;
}

/* Best fit of one pod with GPU (fair_sim_best_fit), recorded. */
static void place_one(struct pack *p, size_t idx)
{
    const struct fair_sim_job *job = p->a->jobs[idx];
    size_t best;
    uint64_t mask;
    if (fair_sim_best_fit(&p->c, job, &best, &mask) &&
        fair_sim_cluster_bind(&p->c, best, mask, job) == 0)
        mark(p, idx, best, mask);
}

struct leftover {
    int64_t gpu, cpu;
    size_t idx;
};

/* Largest GPU request first, then most CPU, then arrival order. */
static int cmp_left(const void *a, const void *b)
{
    const struct leftover *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu > y->gpu ? -1 : 1;
    if (x->cpu != y->cpu)
        return x->cpu > y->cpu ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int fair_sim_node_pack(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a,
                       size_t prefix, size_t until, bool *placed, struct fair_sim_spot *spot,
                       int64_t *allocated_milli, struct fair_error *err)
{
    *allocated_milli = 0;
    if (until > a->n)
        until = a->n;
    if (prefix > until)
        prefix = until;
    memset(placed, 0, until * sizeof(*placed));
    struct pack p = {.a = a, .placed = placed, .spot = spot};
    int rc = fair_sim_cluster_init(&p.c, t, err);
    if (rc)
        return rc;
    size_t *pool = fair_calloc(prefix + 1, sizeof(*pool));
    struct leftover *left = fair_calloc(prefix + 1, sizeof(*left));
    size_t *bysize = fair_calloc(prefix + 1, sizeof(*bysize));
    struct item *items = fair_calloc(prefix + 1, sizeof(*items));
    size_t *head = fair_calloc(DEV, sizeof(*head)), *cnt = fair_calloc(DEV, sizeof(*cnt));
    if (!pool || !left || !bysize || !items || !head || !cnt) {
        rc = fair_error_set(err, FAIR_ENOMEM, "node packing: out of memory");
        goto out;
    }
    size_t nitems = 0, npool = 0, nleft = 0;
    for (size_t i = 0; i < prefix; i++) {
        const struct fair_sim_job *j = a->jobs[i];
        if (j->gpu_milli <= 0)
            continue;
        if (j->gpu_milli > DEV && j->gpu_milli % DEV) {
            rc = fair_error_set(err, FAIR_EINVAL,
                                "node packing: pod %s asks for %lld milli-GPU, neither a "
                                "fraction below 1 nor whole GPUs",
                                j->name, (long long)j->gpu_milli);
            goto out;
        }
        if (j->gpu_milli < DEV) {
            cnt[j->gpu_milli]++;
            continue;
        }
        pool[npool] = i;
        items[nitems++] = (struct item){.pods = &pool[npool++],
                                        .npods = 1,
                                        .fill = DEV,
                                        .devices = (int)(j->gpu_milli / DEV),
                                        .cpu = j->cpu_milli,
                                        .mem = j->memory_bytes};
    }
    /* Fractions by size (arrival order within a size): bysize[head[s]..]. */
    size_t off = 0;
    for (int64_t s = 1; s < DEV; s++) {
        head[s] = off;
        off += cnt[s];
    }
    for (size_t i = 0, k; i < prefix; i++) {
        int64_t g = a->jobs[i]->gpu_milli;
        if (g > 0 && g < DEV) {
            k = head[g]++;
            bysize[k] = i;
        }
    }
    for (int64_t s = 1; s < DEV; s++)
        head[s] -= cnt[s];
    /* Minimum bin slack: the fullest device pattern of the fractions left
     * (a bounded subset sum over 0..DEV), repeated while the counts allow
     * (it stays the fullest: counts only fall). */
    for (;;) {
        bool reach[DEV + 1] = {false};
        int32_t par[DEV + 1], used[DEV + 1];
        reach[0] = true;
        bool any = false;
        for (int64_t s = DEV - 1; s >= 1; s--) {
            if (!cnt[s])
                continue;
            any = true;
            for (int64_t g = 0; g <= DEV; g++)
                used[g] = 0;
            for (int64_t g = s; g <= DEV; g++)
                if (!reach[g] && reach[g - s] && (size_t)used[g - s] < cnt[s]) {
                    reach[g] = true;
                    used[g] = used[g - s] + 1;
                    par[g] = (int32_t)(g - s);
                }
        }
        if (!any)
            break;
        int64_t g = DEV;
        while (!reach[g])
            g--;
        size_t pc[DEV] = {0};
        int64_t sizes[DEV];
        size_t ns = 0;
        for (int64_t x = g; x > 0; x = par[x]) {
            int64_t s = x - par[x];
            if (!pc[s])
                sizes[ns++] = s;
            pc[s]++;
        }
        size_t reps = SIZE_MAX;
        for (size_t k = 0; k < ns; k++)
            if (cnt[sizes[k]] / pc[sizes[k]] < reps)
                reps = cnt[sizes[k]] / pc[sizes[k]];
        for (size_t r = 0; r < reps; r++) {
            struct item *it = &items[nitems++];
            *it = (struct item){.pods = &pool[npool], .fill = g, .devices = 1};
            for (size_t k = 0; k < ns; k++)
                for (size_t q = 0; q < pc[sizes[k]]; q++) {
                    size_t idx = bysize[head[sizes[k]] + --cnt[sizes[k]]];
                    pool[npool++] = idx;
                    it->npods++;
                    it->cpu += a->jobs[idx]->cpu_milli;
                    it->mem += a->jobs[idx]->memory_bytes;
                }
        }
    }
    /* CPU-only pods first, each on the node with the most free CPU per
     * free device left (the CPU-rich nodes): they change no GPU figure,
     * but a real scheduler places them, so the packing leaves them their
     * CPU. */
    for (size_t i = 0; i < until; i++)
        if (a->jobs[i]->gpu_milli == 0) {
            size_t best = SIZE_MAX;
            double best_ratio = 0;
            for (size_t n = 0; n < p.c.nnodes; n++) {
                if (!fair_sim_fits(&p.c, n, a->jobs[i]))
                    continue;
                double ratio = (double)(p.c.n[n].cpu_free - a->jobs[i]->cpu_milli) /
                               (double)(full_devices(&p.c, n) + 1);
                if (best == SIZE_MAX || ratio > best_ratio) {
                    best = n;
                    best_ratio = ratio;
                }
            }
            if (best != SIZE_MAX && fair_sim_cluster_bind(&p.c, best, 0, a->jobs[i]) == 0)
                mark(&p, i, best, 0);
        }
    /* Keep the fullest items up to the cluster's devices and place those,
     * CPU-hungry first; then everything not placed, best fit, largest
     * first. */
    qsort(items, nitems, sizeof(*items), cmp_item);
    int64_t devs = p.c.gpu_capacity / DEV, want = 0;
    size_t keep = 0;
    while (keep < nitems && want + items[keep].devices <= devs)
        want += items[keep++].devices;
    qsort(items, keep, sizeof(*items), cmp_item_cpu);
    for (size_t i = 0; i < keep; i++)
        place_item(&p, &items[i]);
    for (size_t i = 0; i < nitems; i++)
        for (size_t k = 0; k < items[i].npods; k++)
            if (!placed[items[i].pods[k]])
                left[nleft++] = (struct leftover){.gpu = a->jobs[items[i].pods[k]]->gpu_milli,
                                                  .cpu = a->jobs[items[i].pods[k]]->cpu_milli,
                                                  .idx = items[i].pods[k]};
    qsort(left, nleft, sizeof(*left), cmp_left);
    for (size_t i = 0; i < nleft; i++)
        place_one(&p, left[i].idx);
    for (size_t i = prefix; i < until; i++)
        if (a->jobs[i]->gpu_milli > 0)
            place_one(&p, i);
    *allocated_milli = p.c.gpu_allocated;
out:
    fair_free(pool);
    fair_free(left);
    fair_free(bysize);
    fair_free(items);
    fair_free(head);
    fair_free(cnt);
    fair_sim_cluster_release(&p.c);
    return rc;
}
