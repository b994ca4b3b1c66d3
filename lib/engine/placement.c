/* Placement: node filters, device choice and node scoring (see placement.h).
 * Nodes sit in bitset buckets by their count of fully free devices and by
 * the free milli of their partly used devices, so that finding the best
 * node walks a few buckets in rank order instead of every node. */
#include "engine/placement.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "engine/constraints.h"

#define DEV_MILLI FAIR_GPU_DEVICE_MILLI

static void bit_set(uint64_t *bits, int32_t i)
{
    bits[i >> 6] |= (uint64_t)1 << (i & 63);
}

static void bit_clear(uint64_t *bits, int32_t i)
{
    bits[i >> 6] &= ~((uint64_t)1 << (i & 63));
}

static bool bit_test(const uint64_t *bits, int32_t i)
{
    return (bits[i >> 6] >> (i & 63)) & 1;
}

static uint64_t *whole_bits(const struct fair_place *pl, int b)
{
    return pl->whole + (size_t)b * pl->words;
}

static uint64_t *part_bits(const struct fair_place *pl, int f)
{
    return pl->part + (size_t)f * pl->words;
}

/* GPU milli left free on a node with free room gpu, cpu, mem that the
 * cluster's pods could not use for lack of CPU or memory, at the ratios
 * they ask for (0 when balance is off). gpu leaves out the dead
 * remainders (node_dead): no pod could use them anyway. */
static int64_t stranded(const struct fair_place *pl, int64_t gpu, int64_t cpu, int64_t mem)
{
    if (!pl->bal || gpu <= 0)
        return 0;
    int64_t use = gpu;
    if (pl->bal_cpu > 0) {
        __int128 u = (__int128)(cpu > 0 ? cpu : 0) * DEV_MILLI / pl->bal_cpu;
        if (u < use)
            use = (int64_t)u;
    }
    if (pl->bal_mem > 0) {
        __int128 u = (__int128)(mem > 0 ? mem : 0) * DEV_MILLI / pl->bal_mem;
        if (u < use)
            use = (int64_t)u;
    }
    return gpu - use;
}

/* A device's free milli f that no common fraction size fits (fill_min,
 * see fill_init), else 0. */
static int64_t dead_milli(const struct fair_place *pl, int64_t f)
{
    return f > 0 && f < pl->fill_min ? f : 0;
}

/* The dead remainders of node n: free GPU milli on partly used devices
 * that no common fraction size fits. */
static int64_t node_dead(const struct fair_place *pl, const struct fair_pnode *n, bool fut)
{
    const int16_t *dev = fut ? n->fdev : n->dev;
    int64_t s = 0;
    for (int d = 0; d < n->ngpu; d++)
        s += dead_milli(pl, dev[d]);
    return s;
}

static int64_t node_stranded(const struct fair_place *pl, const struct fair_pnode *n, bool fut)
{
    const int64_t *f = fut ? n->ffree : n->free;
    return stranded(pl, f[FAIR_RES_GPU] - node_dead(pl, n, fut), f[FAIR_RES_CPU], f[FAIR_RES_MEM]);
}

/* How many more GPU milli node n strands once req is on it, a fraction
 * on the device of mask (negative: the pod uses GPUs that lacked CPU or
 * memory). */
static int64_t strand_delta(const struct fair_place *pl, const struct fair_pnode *n,
                            const struct fair_resources *req, uint64_t mask, bool fut)
{
    const int64_t *f = fut ? n->ffree : n->free;
    int64_t gpu = req->v[FAIR_RES_GPU], dead = node_dead(pl, n, fut), after = dead;
    if (gpu > 0 && gpu < DEV_MILLI && mask) {
        int64_t l = (fut ? n->fdev : n->dev)[__builtin_ctzll(mask)];
        after += dead_milli(pl, l - gpu) - dead_milli(pl, l);
    }
    /* node_stranded() with dead, not summed again. */
    return stranded(pl, f[FAIR_RES_GPU] - gpu - after, f[FAIR_RES_CPU] - req->v[FAIR_RES_CPU],
                    f[FAIR_RES_MEM] - req->v[FAIR_RES_MEM]) -
           stranded(pl, f[FAIR_RES_GPU] - dead, f[FAIR_RES_CPU], f[FAIR_RES_MEM]);
}

/* The bitset of tenant key (tenbits), or NULL for a key that shares with
 * no other fraction. */
static uint64_t *ten_bits(const struct fair_place *pl, int32_t key)
{
    if (!pl->tenbits || key < FAIR_TENANT_SHARED || (key >= 0 && (size_t)key + 1 >= pl->ntenkeys))
        return NULL;
    size_t i = key == FAIR_TENANT_SHARED ? 0 : (size_t)key + 1;
    return pl->tenbits + i * pl->words;
}

static void bucket_out(struct fair_place *pl, int32_t r)
{
    struct fair_pnode *n = &pl->nodes[r];
    if (!n->ok)
        return;
    if (pl->strand && bit_test(pl->strand, r)) {
        bit_clear(pl->strand, r);
        pl->strand_cnt--;
    }
    bit_clear(whole_bits(pl, n->nwhole), r);
    pl->whole_cnt[n->nwhole]--;
    for (int d = 0; d < n->ngpu; d++) {
        int f = n->dev[d];
        if (f > 0 && f < DEV_MILLI && bit_test(part_bits(pl, f), r)) {
            bit_clear(part_bits(pl, f), r);
            if (--pl->part_cnt[f] == 0)
                bit_clear(pl->part_any, f);
        }
    }
}

static void bucket_in(struct fair_place *pl, int32_t r)
{
    struct fair_pnode *n = &pl->nodes[r];
    int w = 0;
    for (int d = 0; d < n->ngpu; d++)
        if (n->dev[d] >= DEV_MILLI)
            w++;
    n->nwhole = (int8_t)w;
    if (!n->ok)
        return;
    bit_set(whole_bits(pl, w), r);
    pl->whole_cnt[w]++;
    if (pl->strand && node_stranded(pl, n, false) > 0) {
        bit_set(pl->strand, r);
        pl->strand_cnt++;
    }
    for (int d = 0; d < n->ngpu; d++) {
        int f = n->dev[d];
        if (pl->tenbits && f < DEV_MILLI) {
            uint64_t *tb = ten_bits(pl, pl->ten[(size_t)r * FAIR_MAX_GPUS_PER_NODE + (size_t)d]);
            if (tb)
                bit_set(tb, r);
        }
        if (f > 0 && f < DEV_MILLI && !bit_test(part_bits(pl, f), r)) {
            bit_set(part_bits(pl, f), r);
            if (pl->part_cnt[f]++ == 0)
                bit_set(pl->part_any, f);
        }
    }
}

/* The smallest f' >= f with part_cnt[f'] > 0, or DEV_MILLI. */
static int part_next(const struct fair_place *pl, int f)
{
    while (f < DEV_MILLI) {
        uint64_t x = pl->part_any[f >> 6] >> (f & 63);
        if (x)
            return f + __builtin_ctzll(x);
        f = (f | 63) + 1;
    }
    return DEV_MILLI;
}

/* The largest f' <= f with part_cnt[f'] > 0, or -1. */
static int part_prev(const struct fair_place *pl, int f)
{
    while (f >= 0) {
        uint64_t x = pl->part_any[f >> 6] & (~(uint64_t)0 >> (63 - (f & 63)));
        if (x)
            return (f & ~63) + 63 - __builtin_clzll(x);
        f = (f & ~63) - 1;
    }
    return -1;
}

static int16_t clamp_dev(int64_t v)
{
    if (v < 0)
        return 0;
    if (v > DEV_MILLI)
        return DEV_MILLI;
    return (int16_t)v;
}

/* Applies a pod's devices to one device array; sign 1 takes, -1 frees. */
static void dev_apply(int16_t *dev, int ngpu, int64_t gpu, uint64_t mask, int sign)
{
    if (gpu <= 0)
        return;
    if (gpu < DEV_MILLI) {
        for (int d = 0; d < ngpu; d++)
            if (mask >> d & 1) {
                dev[d] = clamp_dev(dev[d] - sign * gpu);
                return;
            }
        return;
    }
    for (int d = 0; d < ngpu; d++)
        if (mask >> d & 1)
            dev[d] = clamp_dev(dev[d] - sign * DEV_MILLI);
}

int32_t fair_place_tenant(const struct fair_snapshot *snap, const struct fair_pod *pod)
{
    /* Only the queue, which the controller derives from the namespace and
     * its Project, counts: nothing else a pod says changes its key. */
    if (pod->queue < 0 || (size_t)pod->queue >= snap->nqueues)
        return FAIR_TENANT_FOREIGN;
    int32_t p = snap->queues[pod->queue].project;
    if (p < 0 || (size_t)p >= snap->nprojects)
        return FAIR_TENANT_FOREIGN;
    return snap->projects[p].share_fractions ? FAIR_TENANT_SHARED : p;
}

/* Records that a fraction of key takes device (the lowest of mask) of a
 * view, before dev_apply: a fully free device becomes key's; a device of
 * another key holds several keys from now on (only pods bound before can
 * do that), which closes it to new fractions until it is fully free. */
static void tenant_take(int32_t *ten, const int16_t *dev, int ngpu, int64_t gpu, uint64_t mask,
                        int32_t key)
{
    if (!ten || gpu <= 0 || gpu >= DEV_MILLI || !mask)
        return;
    int d = __builtin_ctzll(mask);
    if (d >= ngpu)
        return;
    if (dev[d] >= DEV_MILLI)
        ten[d] = key;
    else if (ten[d] != key)
        ten[d] = FAIR_TENANT_MIXED;
}

/* Whether a fraction of key may go to device d of a view. */
static bool tenant_ok(const int16_t *dev, const int32_t *ten, int d, int32_t key)
{
    return !ten || dev[d] >= DEV_MILLI || (ten[d] == key && key >= FAIR_TENANT_SHARED);
}

/* Fraction fill's order (fill_init, find_fill) of free level f, DEV_MILLI
 * being a fully free device, for a fraction of gpu milli: the cost of the
 * remainder (plus fresh on a fully free device), then the fuller level.
 * The device choice and the level search both order by it; fill_level()
 * gives f back. */
static int64_t fill_key(const int32_t *cost, int32_t fresh, int64_t gpu, int f)
{
    return (int64_t)(cost[f - gpu] + (f >= DEV_MILLI ? fresh : 0)) * (DEV_MILLI + 1) + f;
}

static int fill_level(int64_t key)
{
    return (int)(key % (DEV_MILLI + 1));
}

/* The device choice behind fair_place_pick_devices_tenant; with cost
 * (fill_cost, PACK), a fraction takes the device of least cost for what
 * it leaves free (plus fresh for a fully free one), the fullest on ties. */
static bool pick_devices(const int16_t *dev, int ngpu, int64_t gpu, const int16_t *dev2,
                         enum fair_place_policy policy, const int32_t *ten, const int32_t *ten2,
                         int32_t key, const int32_t *cost, int32_t fresh, uint64_t *mask)
{
    *mask = 0;
    if (gpu <= 0)
        return true;
    if (gpu >= DEV_MILLI) {
        int64_t k = gpu / DEV_MILLI;
        uint64_t m = 0;
        for (int d = 0; d < ngpu && k > 0; d++)
            if (dev[d] >= DEV_MILLI && (!dev2 || dev2[d] >= DEV_MILLI)) {
                m |= (uint64_t)1 << d;
                k--;
            }
        if (k > 0)
            return false;
        *mask = m;
        return true;
    }
    int best = -1;
    int64_t bkey = 0;
    for (int d = 0; d < ngpu; d++) {
        int f = dev[d];
        if (dev2 && dev2[d] < f)
            f = dev2[d];
        if (f < gpu || !tenant_ok(dev, ten, d, key) || (dev2 && !tenant_ok(dev2, ten2, d, key)))
            continue;
        int64_t k = f;
        if (policy == FAIR_PLACE_SPREAD)
            k = -f;
        else if (policy == FAIR_PLACE_PACK && cost)
            k = fill_key(cost, fresh, gpu, f);
        if (best < 0 || (policy != FAIR_PLACE_FIRST_FIT && k < bkey)) {
            best = d;
            bkey = k;
        }
        if (policy == FAIR_PLACE_FIRST_FIT)
            break;
    }
    if (best < 0)
        return false;
    *mask = (uint64_t)1 << best;
    return true;
}

bool fair_place_pick_devices(const int16_t *dev, int ngpu, int64_t gpu, const int16_t *dev2,
                             enum fair_place_policy policy, uint64_t *mask)
{
    return pick_devices(dev, ngpu, gpu, dev2, policy, NULL, NULL, 0, NULL, 0, mask);
}

bool fair_place_pick_devices_tenant(const int16_t *dev, int ngpu, int64_t gpu, const int16_t *dev2,
                                    enum fair_place_policy policy, const int32_t *ten,
                                    const int32_t *ten2, int32_t key, uint64_t *mask)
{
    return pick_devices(dev, ngpu, gpu, dev2, policy, ten, ten2, key, NULL, 0, mask);
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* Node order: by size (PACK; zero for the other policies), then name. */
struct node_key {
    int64_t size[3]; /* GPUs, CPU, memory */
    const char *name;
    int32_t idx;
};

static int cmp_node_key(const void *pa, const void *pb)
{
    const struct node_key *a = pa, *b = pb;
    for (int k = 0; k < 3; k++)
        if (a->size[k] != b->size[k])
            return a->size[k] < b->size[k] ? -1 : 1;
    int c = cmp_str(a->name, b->name);
    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

struct uid_idx {
    const char *uid;
    int32_t idx;
};

static int cmp_uid_idx(const void *pa, const void *pb)
{
    const struct uid_idx *a = pa, *b = pb;
    int c = cmp_str(a->uid, b->uid);
    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static void *place_alloc(struct fair_place *pl, size_t count, size_t size)
{
    void *p = fair_calloc(count, size);
    if (p)
        pl->bytes += count * size;
    return p;
}

/* Takes a bound pod's room in the node views it occupies. */
/* The tenancy rows of rank (NULL when not kept). */
static int32_t *ten_row(int32_t *ten, int32_t rank)
{
    return ten ? ten + (size_t)rank * FAIR_MAX_GPUS_PER_NODE : NULL;
}

/* Records that pod, taking room g (milli-GPU) on the devices of mask,
 * holds its tenant key on node rank: in the current view when now, in
 * the future view (victims gone) when fut. */
static void tenant_take_pod(struct fair_place *pl, int32_t rank, const struct fair_pod *pod,
                            int64_t g, uint64_t mask, bool now, bool fut)
{
    if (!pl->ten)
        return;
    struct fair_pnode *n = &pl->nodes[rank];
    int32_t key = fair_place_tenant(pl->snap, pod);
    if (now)
        tenant_take(ten_row(pl->ten, rank), n->dev, n->ngpu, g, mask, key);
    if (fut)
        tenant_take(ten_row(pl->ften, rank), n->fdev, n->ngpu, g, mask, key);
}

static void hold_pod(struct fair_place *pl, const struct fair_pod *p, uint64_t mask)
{
    int32_t rank = pl->rank_of[p->node];
    struct fair_pnode *n = &pl->nodes[rank];
    struct fair_resources tmp;
    const struct fair_resources *req = fair_place_room(p, &p->request, &tmp);
    /* The room, not the charge: a MIG pod takes no device. */
    tenant_take_pod(pl, rank, p, req->v[FAIR_RES_GPU], mask, true, !p->terminating);
    for (int r = 0; r < FAIR_RES_COUNT; r++) {
        int64_t v = req->v[r] > 0 ? req->v[r] : 0;
        n->free[r] -= v;
        if (!p->terminating)
            n->ffree[r] -= v;
    }
    n->pods++;
    if (!p->terminating)
        n->fpods++;
    else
        n->fdiff = true;
    dev_apply(n->dev, n->ngpu, req->v[FAIR_RES_GPU], mask, 1);
    if (!p->terminating)
        dev_apply(n->fdev, n->ngpu, req->v[FAIR_RES_GPU], mask, 1);
}

static void rw_swap(struct fair_ratio_w *v, size_t i, size_t j)
{
    struct fair_ratio_w x = v[i];
    v[i] = v[j];
    v[j] = x;
}

int64_t fair_place_weighted_quantile(struct fair_ratio_w *v, size_t n, int num, int den)
{
    if (n == 0)
        return 0;
    __int128 total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i].weight;
    __int128 need = (total * num + den - 1) / den;
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        int64_t x = v[lo].ratio, y = v[lo + (hi - lo) / 2].ratio, z = v[hi - 1].ratio;
        int64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        size_t lt = lo, i = lo, gt = hi; /* [lo,lt) < pivot, [lt,i) ==, [gt,hi) > */
        __int128 wl = 0, we = 0;
        while (i < gt) {
            if (v[i].ratio < pivot) {
                wl += v[i].weight;
                rw_swap(v, lt++, i++);
            } else if (v[i].ratio > pivot) {
                rw_swap(v, i, --gt);
            } else {
                we += v[i].weight;
                i++;
            }
        }
        if (need <= wl) {
            hi = lt;
        } else if (need <= wl + we) {
            return pivot;
        } else {
            need -= wl + we;
            lo = gt;
        }
    }
    return v[lo].ratio;
}

/* Balance ratios: the CPU and memory per GPU that the lighter third of
 * the GPU pods (bound and pending, weighted by GPUs) ask for at most: the
 * weighted 1/3 quantile. A node strands GPUs only when even those pods
 * would not find the CPU or memory they need next to the free GPUs. With
 * the mean or the median, nodes built with less CPU per GPU than that
 * (common 8-GPU nodes) looked short of CPU while empty, and small pods were
 * sent to break up the empty nodes that 8-GPU pods need. */
static int balance_init(struct fair_place *pl, const struct fair_snapshot *snap)
{
    size_t n = 0;
    for (size_t i = 0; i < snap->npods; i++)
        n += snap->pods[i].request.v[FAIR_RES_GPU] > 0;
    if (n == 0)
        return 0;
    struct fair_ratio_w *v = fair_calloc(n, sizeof(*v));
    if (!v)
        return FAIR_ENOMEM;
    pl->bytes += n * sizeof(*v); /* freed below, but part of the cycle's peak */
    const enum fair_res res[2] = {FAIR_RES_CPU, FAIR_RES_MEM};
    int64_t ratio[2];
    for (int k = 0; k < 2; k++) {
        size_t j = 0;
        for (size_t i = 0; i < snap->npods; i++) {
            const struct fair_resources *q = &snap->pods[i].request;
            int64_t g = q->v[FAIR_RES_GPU];
            if (g <= 0)
                continue;
            int64_t x = q->v[res[k]] > 0 ? q->v[res[k]] : 0;
            __int128 r = (__int128)x * DEV_MILLI / g;
            v[j].ratio = r > INT64_MAX ? INT64_MAX : (int64_t)r;
            v[j].weight = g;
            j++;
        }
        ratio[k] = fair_place_weighted_quantile(v, n, 1, 3);
    }
    fair_free(v);
    pl->bal_cpu = ratio[0];
    pl->bal_mem = ratio[1];
    pl->bal = pl->bal_cpu > 0 || pl->bal_mem > 0;
    if (!pl->bal)
        return 0;
    pl->strand = place_alloc(pl, pl->words, sizeof(uint64_t));
    return pl->strand ? 0 : FAIR_ENOMEM;
}

/* Fraction fill. Best fit alone sends a 0.32 GPU pod onto a device where
 * a 0.47 one left 0.53, and the 0.21 it leaves waits for pods of 0.21 or
 * less, which are rare; on a fully free device it would have left 0.68,
 * which the common 0.65 pods fill. So each leftover L is priced L plus
 * FAIR_PLACE_FILL_WEIGHT times the part of L that no sum of common sizes
 * fills (a subset-sum over the sizes that at least
 * FAIR_PLACE_FILL_SHARE_PERMILLE of the fractional pods, bound and
 * pending, ask for). With no common size every remainder is unfillable,
 * the cost is 7L, and the order is best fit's. While a whole-GPU pod is
 * pending, fully free devices come last (fill_fresh): on the simulator's
 * replays, breaking them up for fractions cost whole-GPU pods more than
 * the remainders saved. docs/performance.md ("Fraction fill") has the
 * figures and the choice of the two constants. The smallest common size
 * is fill_min: less than that free on a partly used device is a dead
 * remainder, which balance does not count as GPU that CPU could strand
 * (node_dead). */
/* More than any remainder costs: (FAIR_PLACE_FILL_WEIGHT + 1) x 999. */
#define FILL_FRESH_LAST (1 << 20)
_Static_assert((FAIR_PLACE_FILL_WEIGHT + 1) * (DEV_MILLI - 1) < FILL_FRESH_LAST,
               "FILL_FRESH_LAST must exceed every fill cost");

static int shapes_init(struct fair_place *pl, const struct fair_snapshot *snap, size_t n);

static int fill_init(struct fair_place *pl, const struct fair_snapshot *snap)
{
    int32_t cnt[DEV_MILLI] = {0};
    int64_t n = 0;
    for (size_t i = 0; i < snap->npods; i++) {
        const struct fair_pod *p = &snap->pods[i];
        int64_t g = p->mig ? 0 : p->request.v[FAIR_RES_GPU];
        if (g > 0 && g < DEV_MILLI) {
            cnt[g] += cnt[g] < INT32_MAX;
            n++;
        }
        if (g >= DEV_MILLI && p->state == FAIR_POD_PENDING)
            pl->fill_fresh = FILL_FRESH_LAST;
    }
    if (n == 0)
        return 0;
    pl->fill_cost = place_alloc(pl, DEV_MILLI, sizeof(*pl->fill_cost));
    if (!pl->fill_cost)
        return FAIR_ENOMEM;
    /* best[L]: the largest sum of common sizes (each any number of times)
     * that is at most L. */
    int16_t best[DEV_MILLI] = {0};
    pl->fill_min = DEV_MILLI;
    for (int s = 1; s < DEV_MILLI; s++) {
        if ((int64_t)cnt[s] * 1000 < (int64_t)FAIR_PLACE_FILL_SHARE_PERMILLE * n)
            continue;
        if (s < pl->fill_min)
            pl->fill_min = s;
        for (int l = s; l < DEV_MILLI; l++)
            if (best[l - s] + s > best[l])
                best[l] = (int16_t)(best[l - s] + s);
    }
    for (int l = 0; l < DEV_MILLI; l++)
        pl->fill_cost[l] = l + FAIR_PLACE_FILL_WEIGHT * (l - best[l]);
    return shapes_init(pl, snap, (size_t)n);
}

/* The fraction shapes. The fill level fixes how full the chosen device
 * ends up, but not which node of that level the fraction goes to; the
 * fullest one may be left with CPU or memory that no common fraction
 * request fits, and then its other free GPU waits for nothing. So each
 * cycle the engine keeps the most common fraction requests, with CPU and
 * memory, and scores a node by the free GPU they could not use (FGD's
 * fragmentation, ATC '23, with the pods' own mix as its workload).
 * docs/performance.md ("Node choice within a fill level") has the
 * figures. */
static int cmp_shape_key(const struct fair_place_shape *a, const struct fair_place_shape *b)
{
    if (a->gpu != b->gpu)
        return (a->gpu > b->gpu) - (a->gpu < b->gpu);
    if (a->cpu != b->cpu)
        return (a->cpu > b->cpu) - (a->cpu < b->cpu);
    return (a->mem > b->mem) - (a->mem < b->mem);
}

/* Whether shape a comes before b: more pods, then the smaller request. */
static bool shape_before(const struct fair_place_shape *a, const struct fair_place_shape *b)
{
    return a->count != b->count ? a->count > b->count : cmp_shape_key(a, b) < 0;
}

/* The shape of a fractional pod (count 1), or count 0 for any other pod. */
static struct fair_place_shape pod_shape(const struct fair_pod *p)
{
    int64_t g = p->mig ? 0 : p->request.v[FAIR_RES_GPU];
    if (g <= 0 || g >= DEV_MILLI)
        return (struct fair_place_shape){.count = 0};
    return (struct fair_place_shape){
        .gpu = g,
        .cpu = p->request.v[FAIR_RES_CPU] > 0 ? p->request.v[FAIR_RES_CPU] : 0,
        .mem = p->request.v[FAIR_RES_MEM] > 0 ? p->request.v[FAIR_RES_MEM] : 0,
        .count = 1};
}

static size_t shape_slot(const struct fair_place_shape *s, size_t cap)
{
    uint64_t h = (uint64_t)s->gpu * 0x9E3779B97F4A7C15ULL;
    h = (h ^ (uint64_t)s->cpu) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (uint64_t)s->mem) * 0x94D049BB133111EBULL;
    return (size_t)(h ^ (h >> 31)) & (cap - 1);
}

/* Counts the n fractional pods (fill_init counted them) by request in a
 * hash table (O(pods); a slot is a pod of the shape and a count), then
 * keeps the FAIR_PLACE_SHAPES_MAX most common, in shape_before order
 * whatever the pods' order. */
static int shapes_init(struct fair_place *pl, const struct fair_snapshot *snap, size_t n)
{
    if (n == 0 || snap->npods >= UINT32_MAX) /* none, or too many to index: fullest node */
        return 0;
    size_t cap = 16;
    while (cap < 2 * n)
        cap <<= 1;
    struct slot {
        uint32_t pod; /* index + 1; 0: empty */
        uint32_t count;
    } *tab = fair_calloc(cap, sizeof(*tab));
    pl->shapes = place_alloc(pl, FAIR_PLACE_SHAPES_MAX, sizeof(*pl->shapes));
    if (!tab || !pl->shapes) {
        fair_free(tab);
        return FAIR_ENOMEM;
    }
    pl->bytes += cap * sizeof(*tab); /* freed below, but part of the cycle's peak */
    for (size_t i = 0; i < snap->npods; i++) {
        struct fair_place_shape s = pod_shape(&snap->pods[i]);
        if (!s.count)
            continue;
        size_t h = shape_slot(&s, cap);
        while (tab[h].pod) {
            struct fair_place_shape t = pod_shape(&snap->pods[tab[h].pod - 1]);
            if (cmp_shape_key(&t, &s) == 0)
                break;
            h = (h + 1) & (cap - 1);
        }
        if (!tab[h].pod)
            tab[h].pod = (uint32_t)i + 1;
        tab[h].count++;
    }
    size_t k = 0;
    for (size_t h = 0; h < cap; h++) {
        if (!tab[h].pod)
            continue;
        struct fair_place_shape s = pod_shape(&snap->pods[tab[h].pod - 1]);
        s.count = tab[h].count;
        if (k == FAIR_PLACE_SHAPES_MAX && !shape_before(&s, &pl->shapes[k - 1]))
            continue;
        size_t at = k < FAIR_PLACE_SHAPES_MAX ? k++ : k - 1;
        for (; at > 0 && shape_before(&s, &pl->shapes[at - 1]); at--)
            pl->shapes[at] = pl->shapes[at - 1];
        pl->shapes[at] = s;
    }
    fair_free(tab);
    pl->nshapes = k;
    for (size_t i = 0; i < k; i++) {
        struct fair_place_shape *t = &pl->shapes[i];
        for (t->need = 0; t->need < pl->nneeds && pl->shape_gpu[t->need] != t->gpu; t->need++)
            ;
        if (t->need == pl->nneeds)
            pl->shape_gpu[pl->nneeds++] = t->gpu;
        if (t->cpu > pl->shape_cpu)
            pl->shape_cpu = t->cpu;
        if (t->mem > pl->shape_mem)
            pl->shape_mem = t->mem;
    }
    return 0;
}

/* The change in what a shape of request need cannot use on the devices of
 * a node where its CPU and memory fit before and after: the device of fd
 * free milli loses g. */
static int64_t small_delta(int64_t need, int64_t fd, int64_t g)
{
    if (fd < need)
        return -g;
    return fd - g < need ? fd - g : 0;
}

/* frag_delta on a node whose CPU and memory fit every shape before and
 * after: it depends only on the device's free milli fd and the request. */
static int64_t frag_delta_roomy(const struct fair_place *pl, int64_t fd, int64_t g)
{
    int64_t d = 0;
    for (size_t i = 0; i < pl->nshapes; i++)
        d += pl->shapes[i].count * small_delta(pl->shapes[i].gpu, fd, g);
    return d;
}

/* How much the fraction shapes' fragmentation of node n rises once the
 * fraction req is on device dd. What a shape cannot use of a node's free
 * GPU is all of it when its CPU or memory does not fit or no device has
 * room for it, else what the devices with less free than it asks for
 * hold; the shapes are weighted by their counts. roomy is
 * frag_delta_roomy() for the device's free milli: the answer wherever the
 * node's CPU and memory fit every shape before and after, the usual case.
 * Elsewhere only device dd and the node's CPU and memory change, so each
 * shape costs O(1) once the room per distinct request is known. */
static int64_t frag_delta(const struct fair_place *pl, const struct fair_pnode *n,
                          const struct fair_resources *req, int dd, bool fut, int64_t roomy)
{
    const int64_t *f = fut ? n->ffree : n->free;
    const int16_t *dev = fut ? n->fdev : n->dev;
    int64_t g = req->v[FAIR_RES_GPU], total = 0;
    int64_t fd = dev[dd] > 0 ? dev[dd] : 0, left = fd - g;
    int64_t cpu = f[FAIR_RES_CPU], mem = f[FAIR_RES_MEM];
    int64_t cpu2 = cpu - req->v[FAIR_RES_CPU], mem2 = mem - req->v[FAIR_RES_MEM];
    if (cpu2 >= pl->shape_cpu && mem2 >= pl->shape_mem)
        return roomy;
    int64_t small[FAIR_PLACE_SHAPES_MAX];
    int room[FAIR_PLACE_SHAPES_MAX];
    for (int k = 0; k < pl->nneeds; k++) {
        small[k] = 0;
        room[k] = 0;
    }
    for (int d = 0; d < n->ngpu; d++) {
        int64_t v = dev[d] > 0 ? dev[d] : 0;
        total += v;
        for (int k = 0; k < pl->nneeds; k++) {
            if (v >= pl->shape_gpu[k])
                room[k]++;
            else
                small[k] += v;
        }
    }
    int64_t delta = 0;
    for (size_t i = 0; i < pl->nshapes; i++) {
        const struct fair_place_shape *t = &pl->shapes[i];
        int64_t sb = small[t->need], sa = sb + small_delta(t->gpu, fd, g);
        int rb = room[t->need], ra = rb - (fd >= t->gpu && left < t->gpu);
        int64_t before = cpu >= t->cpu && mem >= t->mem && rb > 0 ? sb : total;
        int64_t after = cpu2 >= t->cpu && mem2 >= t->mem && ra > 0 ? sa : total - g;
        delta += t->count * (after - before);
    }
    return delta;
}

/* ---- Model contention (PACK) ---------------------------------------------
 * Pods restricted to some nodes (a GPU model, a node selector) can only use
 * those; pods without restriction can use any. When unrestricted pods take
 * the GPUs of a model that restricted pods ask for more than their share of,
 * the restricted pods fail later while other models still have room (the
 * gpuspec traces of the FGD paper: T4 is 13.5% of the GPUs, and pods that
 * ask for T4 alone are up to 17% of the demand). The pressure of a node is
 * the sum, over the groups of restricted pods (bound and pending, by equal
 * restriction) that may use it, of the group's share of all GPU requests
 * over its nodes' share of all GPUs; nodes are put in tiers by pressure,
 * and a pod takes a node of the lowest tier where it fits. */

#define CONT_GROUPS 64 /* restriction groups counted; the rest count as free */
#define CONT_SLOTS 128 /* hash slots for them (more than CONT_GROUPS: probes end) */

static bool restricted(const struct fair_pod *p)
{
    return p->request.v[FAIR_RES_GPU] > 0 &&
           ((p->gpu_model && p->gpu_model[0]) || p->nnode_selector > 0);
}

static bool same_restriction(const struct fair_pod *a, const struct fair_pod *b)
{
    if (a->gpu_model == b->gpu_model && a->node_selector == b->node_selector &&
        a->nnode_selector == b->nnode_selector)
        return true; /* the same strings (the simulator's pods share them) */
    if (cmp_str(a->gpu_model, b->gpu_model) != 0 || a->nnode_selector != b->nnode_selector)
        return false;
    for (size_t i = 0; i < a->nnode_selector; i++)
        if (cmp_str(a->node_selector[i].key, b->node_selector[i].key) != 0 ||
            cmp_str(a->node_selector[i].value, b->node_selector[i].value) != 0)
            return false;
    return true;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
    for (const char *c = s ? s : ""; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL; /* a separator after each string */
}

/* FNV-1a of the restriction's strings (NULL hashes as ""), for the group
 * table. */
static uint64_t restriction_hash(const struct fair_pod *p)
{
    uint64_t h = fnv_str(1469598103934665603ULL, p->gpu_model);
    for (size_t i = 0; i < p->nnode_selector; i++)
        h = fnv_str(fnv_str(h, p->node_selector[i].key), p->node_selector[i].value);
    return h;
}

static bool label_has(const struct fair_node *n, const struct fair_label *want);

static bool restriction_ok(const struct fair_node *sn, const struct fair_pod *p)
{
    if (p->gpu_model && p->gpu_model[0] && cmp_str(p->gpu_model, sn->gpu_model) != 0)
        return false;
    for (size_t i = 0; i < p->nnode_selector; i++)
        if (!label_has(sn, &p->node_selector[i]))
            return false;
    return true;
}

/* Tier of a pressure in thousandths: a node whose restricted pods are
 * expected to want under a tenth of its GPUs is free for anyone. */
static int pressure_tier(int64_t p)
{
    static const int64_t bound[] = {100, 300, 600, 1000};
    int t = 0;
    while (t < 4 && p >= bound[t])
        t++;
    return t;
}

static int contention_init(struct fair_place *pl, const struct fair_snapshot *snap)
{
    struct {
        const struct fair_pod *rep;
        __int128 demand; /* sums of up to 2^50 per pod (validate.c) */
    } g[CONT_GROUPS];
    int slot[CONT_SLOTS];
    for (size_t i = 0; i < CONT_SLOTS; i++)
        slot[i] = -1;
    size_t ng = 0;
    __int128 dtotal = 0;
    int64_t ctotal = 0;
    for (size_t i = 0; i < snap->npods; i++) {
        const struct fair_pod *p = &snap->pods[i];
        int64_t gpu = p->request.v[FAIR_RES_GPU];
        if (gpu <= 0 || p->mig)
            continue;
        dtotal += gpu;
        if (!restricted(p))
            continue;
        /* Open addressing on the hash: a pod costs one hash and, as a
         * rule, one comparison, however many groups there are. */
        size_t h = (size_t)(restriction_hash(p) % CONT_SLOTS);
        while (slot[h] >= 0 && !same_restriction(g[slot[h]].rep, p))
            h = (h + 1) % CONT_SLOTS;
        if (slot[h] < 0) {
            if (ng == CONT_GROUPS)
                continue;
            slot[h] = (int)ng;
            g[ng].rep = p;
            g[ng++].demand = 0;
        }
        g[slot[h]].demand += gpu;
    }
    for (size_t r = 0; r < pl->nnodes; r++)
        if (pl->nodes[r].ok)
            ctotal += (int64_t)pl->nodes[r].ngpu * DEV_MILLI;
    if (ng == 0 || dtotal <= 0 || ctotal <= 0)
        return 0;
    int64_t *press = fair_calloc(pl->nnodes, sizeof(*press));
    uint64_t *elig = fair_calloc(pl->words, sizeof(*elig));
    if (!press || !elig) {
        fair_free(press);
        fair_free(elig);
        return FAIR_ENOMEM;
    }
    /* freed below, part of the peak */
    pl->bytes += pl->nnodes * sizeof(*press) + pl->words * sizeof(*elig);
    for (size_t k = 0; k < ng; k++) {
        int64_t cap = 0;
        memset(elig, 0, pl->words * sizeof(*elig));
        for (size_t r = 0; r < pl->nnodes; r++) {
            const struct fair_pnode *n = &pl->nodes[r];
            if (n->ok && n->ngpu > 0 && restriction_ok(&snap->nodes[n->idx], g[k].rep)) {
                cap += (int64_t)n->ngpu * DEV_MILLI;
                bit_set(elig, (int32_t)r);
            }
        }
        if (cap <= 0)
            continue;
        __int128 pk = g[k].demand * ctotal * 1000 / (dtotal * cap);
        int64_t pg = pk > 1000000 ? 1000000 : (int64_t)pk;
        for (size_t w = 0; w < pl->words; w++)
            for (uint64_t x = elig[w]; x; x &= x - 1)
                press[w * 64 + (size_t)__builtin_ctzll(x)] += pg;
    }
    fair_free(elig);
    /* Tiers in use, renumbered from 0; one tier in use: nothing to do. */
    int used[5] = {0}, idx[5], nt = 0;
    for (size_t r = 0; r < pl->nnodes; r++)
        if (pl->nodes[r].ok)
            used[pressure_tier(press[r])] = 1;
    for (int t = 0; t < 5; t++)
        idx[t] = used[t] ? nt++ : -1;
    int rc = 0;
    if (nt > 1) {
        pl->tiers = place_alloc(pl, (size_t)nt * pl->words, sizeof(uint64_t));
        if (!pl->tiers) {
            rc = FAIR_ENOMEM;
        } else {
            pl->ntiers = nt;
            for (size_t r = 0; r < pl->nnodes; r++)
                if (pl->nodes[r].ok)
                    bit_set(pl->tiers + (size_t)idx[pressure_tier(press[r])] * pl->words,
                            (int32_t)r);
        }
    }
    fair_free(press);
    return rc;
}

int fair_place_init(struct fair_place *pl, const struct fair_snapshot *snap, const bool *node_ok,
                    uint64_t *masks)
{
    int rc = FAIR_ENOMEM;
    struct node_key *order = NULL;
    struct uid_idx *nomask = NULL;
    memset(pl, 0, sizeof(*pl));
    pl->snap = snap;
    pl->policy = snap->placement;
    if (pl->policy != FAIR_PLACE_SPREAD && pl->policy != FAIR_PLACE_FIRST_FIT)
        pl->policy = FAIR_PLACE_PACK;
    pl->nnodes = snap->nnodes;
    pl->words = (snap->nnodes + 63) / 64;
    if (pl->words == 0)
        pl->words = 1;
    pl->nodes = place_alloc(pl, snap->nnodes ? snap->nnodes : 1, sizeof(*pl->nodes));
    pl->rank_of = place_alloc(pl, snap->nnodes ? snap->nnodes : 1, sizeof(*pl->rank_of));
    pl->whole = place_alloc(pl, (size_t)(FAIR_MAX_GPUS_PER_NODE + 1) * pl->words, sizeof(uint64_t));
    pl->part = place_alloc(pl, (size_t)DEV_MILLI * pl->words, sizeof(uint64_t));
    order = fair_calloc(snap->nnodes ? snap->nnodes : 1, sizeof(*order));
    if (!pl->nodes || !pl->rank_of || !pl->whole || !pl->part || !order)
        goto out;
    pl->bytes += snap->nnodes * sizeof(*order);
    if (pl->policy == FAIR_PLACE_PACK) {
        rc = balance_init(pl, snap);
        if (!rc)
            rc = fill_init(pl, snap);
        if (rc)
            goto out;
        rc = FAIR_ENOMEM;
    }
    /* PACK ranks the smaller nodes first (GPUs, then CPU, then memory),
     * so that among nodes that pack a pod equally well it takes the
     * smallest, and the big nodes stay whole for the pods only they hold:
     * an 8-GPU pod of 120 cores fits only a 128-core 8-GPU node. */
    for (size_t i = 0; i < snap->nnodes; i++) {
        const struct fair_node *sn = &snap->nodes[i];
        if (pl->policy == FAIR_PLACE_PACK) {
            order[i].size[0] = sn->gpu_count;
            order[i].size[1] = sn->allocatable.v[FAIR_RES_CPU];
            order[i].size[2] = sn->allocatable.v[FAIR_RES_MEM];
        }
        order[i].name = sn->name;
        order[i].idx = (int32_t)i;
    }
    qsort(order, snap->nnodes, sizeof(*order), cmp_node_key);
    for (size_t r = 0; r < snap->nnodes; r++) {
        const struct fair_node *sn = &snap->nodes[order[r].idx];
        struct fair_pnode *n = &pl->nodes[r];
        pl->rank_of[order[r].idx] = (int32_t)r;
        n->idx = order[r].idx;
        n->ok = node_ok[order[r].idx];
        int g = sn->gpu_count;
        if (g < 0)
            g = 0;
        if (g > FAIR_MAX_GPUS_PER_NODE)
            g = FAIR_MAX_GPUS_PER_NODE;
        n->ngpu = (int8_t)g;
        for (int d = 0; d < g; d++)
            n->dev[d] = n->fdev[d] = DEV_MILLI;
        for (int res = 0; res < FAIR_RES_COUNT; res++)
            n->free[res] = n->ffree[res] = sn->allocatable.v[res] > 0 ? sn->allocatable.v[res] : 0;
    }
    /* Tenancy only matters, and costs memory, with fractional pods. */
    for (size_t i = 0; i < snap->npods; i++) {
        int64_t g = snap->pods[i].mig ? 0 : snap->pods[i].request.v[FAIR_RES_GPU];
        if (g > 0 && g < DEV_MILLI) {
            size_t cells = (snap->nnodes ? snap->nnodes : 1) * FAIR_MAX_GPUS_PER_NODE;
            pl->ten = place_alloc(pl, cells, sizeof(*pl->ten));
            pl->ften = place_alloc(pl, cells, sizeof(*pl->ften));
            if (!pl->ten || !pl->ften)
                goto out;
            if (snap->nprojects < SIZE_MAX / pl->words - 1) {
                pl->ntenkeys = snap->nprojects + 1;
                pl->tenbits = place_alloc(pl, pl->ntenkeys * pl->words, sizeof(uint64_t));
                pl->tenscratch = place_alloc(pl, pl->words, sizeof(uint64_t));
                if (!pl->tenbits || !pl->tenscratch)
                    goto out;
            }
            break;
        }
    }
    /* Bound pods with devices first; those without (placed by another
     * scheduler) then get devices chosen in uid order, deterministically. */
    size_t nn = 0;
    for (size_t i = 0; i < snap->npods; i++) {
        const struct fair_pod *p = &snap->pods[i];
        if (p->state != FAIR_POD_BOUND || p->node < 0)
            continue;
        int64_t gpu = p->mig ? 0 : p->request.v[FAIR_RES_GPU];
        const struct fair_pnode *n = &pl->nodes[pl->rank_of[p->node]];
        uint64_t valid = n->ngpu >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n->ngpu) - 1);
        if (gpu > 0 && (p->gpu_devices & valid) == 0) {
            nn++;
            continue;
        }
        hold_pod(pl, p, p->gpu_devices & valid);
        masks[i] = p->gpu_devices & valid;
    }
    if (nn) {
        nomask = fair_calloc(nn, sizeof(*nomask));
        if (!nomask)
            goto out;
        pl->bytes += nn * sizeof(*nomask);
        size_t k = 0;
        for (size_t i = 0; i < snap->npods; i++) {
            const struct fair_pod *p = &snap->pods[i];
            if (p->state != FAIR_POD_BOUND || p->node < 0 || p->request.v[FAIR_RES_GPU] <= 0 ||
                p->mig)
                continue;
            const struct fair_pnode *n = &pl->nodes[pl->rank_of[p->node]];
            uint64_t valid = n->ngpu >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n->ngpu) - 1);
            if ((p->gpu_devices & valid) == 0) {
                nomask[k].uid = p->uid;
                nomask[k].idx = (int32_t)i;
                k++;
            }
        }
        qsort(nomask, nn, sizeof(*nomask), cmp_uid_idx);
        for (size_t j = 0; j < nn; j++) {
            const struct fair_pod *p = &snap->pods[nomask[j].idx];
            const struct fair_pnode *n = &pl->nodes[pl->rank_of[p->node]];
            uint64_t mask = 0;
            int64_t gpu = p->request.v[FAIR_RES_GPU];
            if (!fair_place_pick_devices(n->dev, n->ngpu, gpu, NULL, FAIR_PLACE_PACK, &mask)) {
                /* Over-subscribed node: take the lowest devices anyway. */
                int64_t k2 = gpu >= DEV_MILLI ? gpu / DEV_MILLI : 1;
                for (int d = 0; d < n->ngpu && k2 > 0; d++, k2--)
                    mask |= (uint64_t)1 << d;
            }
            hold_pod(pl, p, mask);
            masks[nomask[j].idx] = mask;
        }
    }
    for (size_t r = 0; r < snap->nnodes; r++)
        bucket_in(pl, (int32_t)r);
    if (pl->policy == FAIR_PLACE_PACK && contention_init(pl, snap))
        goto out;
    /* Constraints (constraints.c): nothing allocated when no pod has any. */
    if (fair_cons_new(&pl->cons, snap, pl->rank_of, &pl->bytes))
        goto out;
    rc = 0;
out:
    fair_free(order);
    fair_free(nomask);
    if (rc)
        fair_place_release(pl);
    return rc;
}

void fair_place_release(struct fair_place *pl)
{
    if (!pl)
        return;
    fair_free(pl->nodes);
    fair_free(pl->rank_of);
    fair_free(pl->whole);
    fair_free(pl->part);
    fair_free(pl->strand);
    fair_free(pl->fill_cost);
    fair_free(pl->shapes);
    fair_free(pl->tiers);
    fair_free(pl->ten);
    fair_free(pl->ften);
    fair_free(pl->tenbits);
    fair_free(pl->tenscratch);
    fair_cons_free(pl->cons);
    memset(pl, 0, sizeof(*pl));
}

static bool label_has(const struct fair_node *n, const struct fair_label *want)
{
    for (size_t i = 0; i < n->nlabels; i++)
        if (cmp_str(n->labels[i].key, want->key) == 0)
            return cmp_str(n->labels[i].value, want->value) == 0;
    return false;
}

static bool tolerated(const struct fair_pod *p, const struct fair_taint *t)
{
    for (size_t i = 0; i < p->ntolerations; i++) {
        const struct fair_toleration *tol = &p->tolerations[i];
        if (!tol->any_effect && tol->effect != t->effect)
            continue;
        if (tol->op == FAIR_TOLERATE_EXISTS) {
            if (!tol->key || !tol->key[0] || cmp_str(tol->key, t->key) == 0)
                return true;
            continue;
        }
        if (cmp_str(tol->key, t->key) == 0 && cmp_str(tol->value, t->value) == 0)
            return true;
    }
    return false;
}

bool fair_place_static_ok(const struct fair_place *pl, int32_t rank, const struct fair_pod *pod)
{
    const struct fair_pnode *n = &pl->nodes[rank];
    if (!n->ok)
        return false;
    const struct fair_node *sn = &pl->snap->nodes[n->idx];
    if (pod->gpu_model && pod->gpu_model[0] && cmp_str(pod->gpu_model, sn->gpu_model) != 0)
        return false;
    for (size_t i = 0; i < pod->nnode_selector; i++)
        if (!label_has(sn, &pod->node_selector[i]))
            return false;
    for (size_t i = 0; i < sn->ntaints; i++) {
        const struct fair_taint *t = &sn->taints[i];
        if (t->effect == FAIR_TAINT_PREFER_NO_SCHEDULE)
            continue;
        if (!tolerated(pod, t))
            return false;
    }
    /* Constraints of constraints.c: node affinity, other resources, host
     * ports, inter-pod (anti-)affinity. */
    if (fair_cons_pod_constrained(pl->cons, pod) &&
        !fair_cons_node_ok(pl->cons, pl->snap, rank, n->idx, pod))
        return false;
    return true;
}

static bool room_ok(const struct fair_place *pl, const struct fair_pnode *n,
                    const struct fair_resources *req, bool use_fut)
{
    int max_pods = pl->snap->nodes[n->idx].max_pods;
    if (n->free[FAIR_RES_CPU] < req->v[FAIR_RES_CPU] ||
        n->free[FAIR_RES_MEM] < req->v[FAIR_RES_MEM])
        return false;
    if (max_pods > 0 && n->pods >= max_pods)
        return false;
    if (use_fut && n->fdiff) {
        if (n->ffree[FAIR_RES_CPU] < req->v[FAIR_RES_CPU] ||
            n->ffree[FAIR_RES_MEM] < req->v[FAIR_RES_MEM])
            return false;
        if (max_pods > 0 && n->fpods >= max_pods)
            return false;
    }
    return true;
}

bool fair_place_fits_node(const struct fair_place *pl, int32_t rank, const struct fair_pod *pod,
                          const struct fair_resources *req, bool use_fut, uint64_t *mask)
{
    const struct fair_pnode *n = &pl->nodes[rank];
    struct fair_resources tmp;
    req = fair_place_room(pod, req, &tmp);
    if (pl->hold && pl->hold[rank] && pl->hold[rank] != pod)
        return false;
    if (!room_ok(pl, n, req, use_fut))
        return false;
    /* The devices before the static filters: all must pass, and the
     * devices are the cheaper test (with tenancy, the one that most often
     * says no). */
    bool fut = use_fut && n->fdiff;
    int64_t gpu = req->v[FAIR_RES_GPU];
    bool tenant = pl->ten && gpu > 0 && gpu < DEV_MILLI;
    bool dev_ok = pick_devices(
        n->dev, n->ngpu, gpu, fut ? n->fdev : NULL, pl->policy,
        tenant ? ten_row(pl->ten, rank) : NULL, tenant && fut ? ten_row(pl->ften, rank) : NULL,
        tenant ? fair_place_tenant(pl->snap, pod) : 0, pl->fill_cost, pl->fill_fresh, mask);
    return dev_ok && fair_place_static_ok(pl, rank, pod);
}

static bool unconstrained(const struct fair_pod *p)
{
    return p->nnode_selector == 0 && p->ntolerations == 0 && (!p->gpu_model || !p->gpu_model[0]);
}

static int gpu_class(int64_t g)
{
    return g <= 0 ? 0 : (g < DEV_MILLI ? 1 : 2);
}

static bool known_no_fit(const struct fair_place *pl, const struct fair_resources *req,
                         bool use_fut, int32_t key)
{
    for (size_t i = 0; i < pl->nfail; i++) {
        const struct fair_place_fail *f = &pl->fail[i];
        if (f->use_fut && !use_fut)
            continue;
        if (gpu_class(f->req[0]) != gpu_class(req->v[0]) || f->key != key)
            continue;
        bool ge = true;
        for (int r = 0; r < FAIR_RES_COUNT; r++)
            if (req->v[r] < f->req[r])
                ge = false;
        if (ge)
            return true;
    }
    return false;
}

static void remember_no_fit(struct fair_place *pl, const struct fair_resources *req, bool use_fut,
                            int32_t key)
{
    struct fair_place_fail *f = &pl->fail[pl->fail_next];
    memcpy(f->req, req->v, sizeof(f->req));
    f->use_fut = use_fut;
    f->key = key;
    pl->fail_next = (pl->fail_next + 1) % FAIR_PLACE_FAIL_CACHE;
    if (pl->nfail < FAIR_PLACE_FAIL_CACHE)
        pl->nfail++;
}

void fair_place_forget(struct fair_place *pl)
{
    pl->nfail = 0;
    pl->fail_next = 0;
}

/* A node found for a request under balance: the best one whose stranding
 * grows (fallback), or one that strands nothing more. */
struct bal_cand {
    int32_t rank;
    uint64_t mask;
    int64_t delta;
    int64_t key; /* pack order among equal deltas: lower first */
};

static int64_t pack_key(const struct fair_place *pl, int32_t r, const struct fair_resources *req,
                        uint64_t mask)
{
    const struct fair_pnode *n = &pl->nodes[r];
    int64_t gpu = req->v[FAIR_RES_GPU];
    int64_t gfree = n->free[FAIR_RES_GPU] < (1 << 20) ? n->free[FAIR_RES_GPU] : (1 << 20) - 1;
    int64_t first = n->nwhole;
    if (gpu > 0 && gpu < DEV_MILLI && mask) {
        int64_t left = n->dev[__builtin_ctzll(mask)] - gpu;
        first = left + (n->dev[__builtin_ctzll(mask)] >= DEV_MILLI ? DEV_MILLI : 0);
    }
    return (first << 20 | gfree) * ((int64_t)1 << 24) + r;
}

/* Whether rank r fits and strands no more GPU; a node that fits but
 * strands more is remembered in fb when it beats it. */
static bool bal_try(const struct fair_place *pl, int32_t r, const struct fair_pod *pod,
                    const struct fair_resources *req, bool use_fut, uint64_t *mask,
                    struct bal_cand *fb)
{
    if (!fair_place_fits_node(pl, r, pod, req, use_fut, mask))
        return false;
    const struct fair_pnode *n = &pl->nodes[r];
    int64_t d = strand_delta(pl, n, req, *mask, use_fut && n->fdiff);
    if (d <= 0)
        return true;
    if (d < fb->delta) {
        fb->rank = r;
        fb->mask = *mask;
        fb->delta = d;
    }
    return false;
}

/* The ranks of bitset bits within within (NULL: all), in rank order:
 * for (struct ranks it = ranks_of(pl, bits, within); (r = ranks_next(&it)) >= 0;) */
struct ranks {
    const uint64_t *bits, *within;
    size_t words, w;
    uint64_t x;
};

static struct ranks ranks_of(const struct fair_place *pl, const uint64_t *bits,
                             const uint64_t *within)
{
    return (struct ranks){.bits = bits,
                          .within = within,
                          .words = pl->words,
                          .x = bits[0] & (within ? within[0] : ~(uint64_t)0)};
}

static int32_t ranks_next(struct ranks *it)
{
    while (!it->x) {
        if (++it->w >= it->words)
            return -1;
        it->x = it->bits[it->w] & (it->within ? it->within[it->w] : ~(uint64_t)0);
    }
    int b = __builtin_ctzll(it->x);
    it->x &= it->x - 1;
    return (int32_t)(it->w * 64 + (size_t)b);
}

/* Preferred terms (constraints.h, scores): among the nodes of bits that
 * fit (fullest: only those with the least free GPU), the best by score,
 * ties in rank order; -1 if none fits. */
static int32_t scan_scored(const struct fair_place *pl, const uint64_t *bits,
                           const uint64_t *within, const struct fair_pod *pod,
                           const struct fair_resources *req, bool use_fut, uint64_t *mask,
                           struct bal_cand *fb, bool fullest)
{
    int32_t *cand = fair_cons_candidates(pl->cons);
    size_t n = 0;
    uint64_t m = 0;
    int32_t r;
    for (struct ranks it = ranks_of(pl, bits, within); (r = ranks_next(&it)) >= 0;) {
        int64_t f = pl->nodes[r].free[FAIR_RES_GPU];
        if (fullest && n && f > pl->nodes[cand[0]].free[FAIR_RES_GPU])
            continue;
        if (!(fb ? bal_try(pl, r, pod, req, use_fut, &m, fb)
                 : fair_place_fits_node(pl, r, pod, req, use_fut, &m)))
            continue;
        if (fullest && n && f < pl->nodes[cand[0]].free[FAIR_RES_GPU])
            n = 0;
        cand[n++] = r;
    }
    if (n == 0)
        return -1;
    r = cand[fair_cons_best(pl->cons, pod, cand, n)];
    fair_place_fits_node(pl, r, pod, req, use_fut, mask);
    return r;
}

/* First node in bitset bits (rank order) that fits, or -1. With balance
 * (fb set), the first that also strands no more GPU. */
static int32_t scan_first(const struct fair_place *pl, const uint64_t *bits, const uint64_t *within,
                          const struct fair_pod *pod, const struct fair_resources *req,
                          bool use_fut, uint64_t *mask, struct bal_cand *fb)
{
    if (fair_cons_scored(pl->cons, pod))
        return scan_scored(pl, bits, within, pod, req, use_fut, mask, fb, false);
    int32_t r;
    for (struct ranks it = ranks_of(pl, bits, within); (r = ranks_next(&it)) >= 0;)
        if (fb ? bal_try(pl, r, pod, req, use_fut, mask, fb)
               : fair_place_fits_node(pl, r, pod, req, use_fut, mask))
            return r;
    return -1;
}

/* Fullest fitting node in bitset bits: least free GPU milli, then rank;
 * with balance, among those that strand no more GPU. */
static int32_t scan_fullest(const struct fair_place *pl, const uint64_t *bits,
                            const uint64_t *within, const struct fair_pod *pod,
                            const struct fair_resources *req, bool use_fut, uint64_t *mask,
                            struct bal_cand *fb)
{
    if (fair_cons_scored(pl->cons, pod))
        return scan_scored(pl, bits, within, pod, req, use_fut, mask, fb, true);
    int32_t best = -1, r;
    uint64_t m = 0;
    for (struct ranks it = ranks_of(pl, bits, within); (r = ranks_next(&it)) >= 0;) {
        if (best >= 0 && pl->nodes[r].free[FAIR_RES_GPU] >= pl->nodes[best].free[FAIR_RES_GPU])
            continue;
        if (fb ? bal_try(pl, r, pod, req, use_fut, &m, fb)
               : fair_place_fits_node(pl, r, pod, req, use_fut, &m)) {
            best = r;
            *mask = m;
        }
    }
    return best;
}

/* A fill level's node: among the fitting nodes of bits, the one where the
 * fraction least raises what the fraction shapes cannot use (frag_delta),
 * then the fullest, then rank; with balance, among those that strand no
 * more GPU. Not under model contention (ntiers > 0): there the pods that
 * need the scarce nodes' CPU may be whole-GPU pods restricted to them,
 * which the shapes do not describe, and with the shapes such a pod failed
 * at 25% arrived instead of 34% (seed 48 of the FGD paper's gpuspec10);
 * the fullest node, as before. */
static int32_t scan_least_frag(const struct fair_place *pl, int level, const uint64_t *within,
                               const struct fair_pod *pod, const struct fair_resources *req,
                               bool use_fut, uint64_t *mask, struct bal_cand *fb)
{
    const uint64_t *bits = part_bits(pl, level);
    if (pl->nshapes == 0 || pl->ntiers > 0 || fair_cons_scored(pl->cons, pod))
        return scan_fullest(pl, bits, within, pod, req, use_fut, mask, fb);
    int32_t best = -1, r;
    int64_t best_d = 0, gpu = req->v[FAIR_RES_GPU];
    int64_t roomy = frag_delta_roomy(pl, level, gpu);
    uint64_t m = 0;
    for (struct ranks it = ranks_of(pl, bits, within); (r = ranks_next(&it)) >= 0;) {
        const struct fair_pnode *n = &pl->nodes[r];
        bool fut = use_fut && n->fdiff;
        const int16_t *dv = fut ? n->fdev : n->dev;
        /* The device of this level, as a rule the one the pod gets: a
         * node that cannot beat the best with it is not tried. */
        int dl = 0;
        while (dl < n->ngpu && dv[dl] != level)
            dl++;
        int64_t d = dl < n->ngpu ? frag_delta(pl, n, req, dl, fut, roomy) : INT64_MIN;
        if (best >= 0 && d != INT64_MIN &&
            (d > best_d ||
             (d == best_d && n->free[FAIR_RES_GPU] >= pl->nodes[best].free[FAIR_RES_GPU])))
            continue;
        if (!(fb ? bal_try(pl, r, pod, req, use_fut, &m, fb)
                 : fair_place_fits_node(pl, r, pod, req, use_fut, &m)))
            continue;
        if (dl >= n->ngpu || m != (uint64_t)1 << dl) {
            int dm = m ? __builtin_ctzll(m) : 0;
            d = m ? frag_delta(pl, n, req, dm, fut, frag_delta_roomy(pl, dv[dm], gpu)) : 0;
        }
        if (best < 0 || d < best_d ||
            (d == best_d && n->free[FAIR_RES_GPU] < pl->nodes[best].free[FAIR_RES_GPU])) {
            best = r;
            best_d = d;
            *mask = m;
        }
    }
    return best;
}

/* Balance, first step: the stranding node where the pod frees the most
 * stranded GPU (most negative delta), ties in pack order; -1 if none. */
static int32_t find_unstrand(const struct fair_place *pl, const struct fair_pod *pod,
                             const struct fair_resources *req, bool use_fut, uint64_t *mask,
                             const uint64_t *within)
{
    struct bal_cand best = {.rank = -1, .delta = 0};
    uint64_t m = 0;
    int32_t r;
    for (struct ranks it = ranks_of(pl, pl->strand, within); (r = ranks_next(&it)) >= 0;) {
        if (!fair_place_fits_node(pl, r, pod, req, use_fut, &m))
            continue;
        const struct fair_pnode *n = &pl->nodes[r];
        int64_t d = strand_delta(pl, n, req, m, use_fut && n->fdiff);
        if (d >= 0)
            continue;
        int64_t key = pack_key(pl, r, req, m);
        if (best.rank < 0 || d < best.delta || (d == best.delta && key < best.key))
            best = (struct bal_cand){.rank = r, .mask = m, .delta = d, .key = key};
    }
    if (best.rank >= 0)
        *mask = best.mask;
    return best.rank;
}

/* The first node, in bucket order (fewest fully free devices, then rank),
 * with enough fully free devices for req. */
static int32_t find_whole(const struct fair_place *pl, const struct fair_pod *pod,
                          const struct fair_resources *req, bool use_fut, uint64_t *mask,
                          const uint64_t *within, struct bal_cand *fb)
{
    int64_t gpu = req->v[FAIR_RES_GPU];
    int from = gpu >= DEV_MILLI ? (int)(gpu / DEV_MILLI) : (gpu > 0 ? 1 : 0);
    for (int b = from; b <= FAIR_MAX_GPUS_PER_NODE; b++) {
        if (pl->whole_cnt[b] == 0)
            continue;
        int32_t r = scan_first(pl, whole_bits(pl, b), within, pod, req, use_fut, mask, fb);
        if (r >= 0)
            return r;
    }
    return -1;
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* A fraction with fill costs: the free levels it fits (the partly used
 * devices of level f, and a fully free device as f = DEV_MILLI) in order of
 * the cost of what it leaves, the fuller level on ties; the node of a
 * level by scan_least_frag, or the first fully free device in bucket
 * order. */
static int32_t fill_try(const struct fair_place *pl, const struct fair_pod *pod,
                        const struct fair_resources *req, bool use_fut, uint64_t *mask,
                        const uint64_t *open, const uint64_t *within, struct bal_cand *fb,
                        int64_t key)
{
    int f = fill_level(key);
    return f == DEV_MILLI ? find_whole(pl, pod, req, use_fut, mask, within, fb)
                          : scan_least_frag(pl, f, open, pod, req, use_fut, mask, fb);
}

static int32_t find_fill(const struct fair_place *pl, const struct fair_pod *pod,
                         const struct fair_resources *req, bool use_fut, uint64_t *mask,
                         const uint64_t *open, const uint64_t *within, struct bal_cand *fb)
{
    int64_t gpu = req->v[FAIR_RES_GPU];
    /* The cheapest level first; it nearly always fits. A cost is at least
     * the remainder, so the levels past the cheapest cost so far are not
     * looked at. */
    int64_t best = fill_key(pl->fill_cost, pl->fill_fresh, gpu, DEV_MILLI);
    for (int f = part_next(pl, (int)gpu); f < DEV_MILLI && (f - gpu) * (DEV_MILLI + 1) < best;
         f = part_next(pl, f + 1)) {
        int64_t k = fill_key(pl->fill_cost, pl->fill_fresh, gpu, f);
        if (k < best)
            best = k;
    }
    int32_t r = fill_try(pl, pod, req, use_fut, mask, open, within, fb, best);
    if (r >= 0)
        return r;
    /* Then all the others, in order. */
    int64_t key[DEV_MILLI + 1];
    size_t n = 0;
    for (int f = part_next(pl, (int)gpu); f < DEV_MILLI; f = part_next(pl, f + 1))
        key[n++] = fill_key(pl->fill_cost, pl->fill_fresh, gpu, f);
    key[n++] = fill_key(pl->fill_cost, pl->fill_fresh, gpu, DEV_MILLI);
    qsort(key, n, sizeof(*key), cmp_i64);
    for (size_t i = 0; i < n; i++) {
        if (key[i] == best)
            continue;
        r = fill_try(pl, pod, req, use_fut, mask, open, within, fb, key[i]);
        if (r >= 0)
            return r;
    }
    return -1;
}

/* Packing among the nodes in within (NULL: all). */
static int32_t find_pack(struct fair_place *pl, const struct fair_pod *pod,
                         const struct fair_resources *req, bool use_fut, uint64_t *mask,
                         const uint64_t *within, struct bal_cand *fb_keep)
{
    int64_t gpu = req->v[FAIR_RES_GPU];
    int32_t r;
    struct bal_cand fbs = {.rank = -1, .delta = INT64_MAX};
    struct bal_cand *fb = pl->bal ? &fbs : NULL;
    /* Tenancy: a fraction fits only on a node with a fully free device or
     * a partly used one of its tenant key (tenbits); the other nodes of
     * the buckets would all say no. */
    const uint64_t *open = within;
    if (pl->tenbits && gpu > 0 && gpu < DEV_MILLI) {
        const uint64_t *tb = ten_bits(pl, fair_place_tenant(pl->snap, pod));
        for (size_t w = 0; w < pl->words; w++) {
            /* Not in whole[0]: a fully free device, or not ok (then in no
             * bucket, strand included). */
            uint64_t x = (tb ? tb[w] : 0) | ~whole_bits(pl, 0)[w];
            pl->tenscratch[w] = x & (within ? within[w] : ~(uint64_t)0);
        }
        open = pl->tenscratch;
    }
    if (fb && pl->strand_cnt > 0) {
        r = find_unstrand(pl, pod, req, use_fut, mask, open);
        if (r >= 0)
            return r;
    }
    if (gpu > 0 && gpu < DEV_MILLI && pl->fill_cost) {
        r = find_fill(pl, pod, req, use_fut, mask, open, within, fb);
    } else {
        r = -1;
        if (gpu > 0 && gpu < DEV_MILLI)
            for (int f = part_next(pl, (int)gpu); f < DEV_MILLI && r < 0; f = part_next(pl, f + 1))
                r = scan_fullest(pl, part_bits(pl, f), open, pod, req, use_fut, mask, fb);
        if (r < 0)
            r = find_whole(pl, pod, req, use_fut, mask, within, fb);
    }
    if (r >= 0)
        return r;
    if (fb && fb->rank >= 0 && fb_keep) {
        if (fb->delta < fb_keep->delta)
            *fb_keep = *fb;
        return -1;
    }
    if (fb && fb->rank >= 0) {
        *mask = fb->mask;
        return fb->rank;
    }
    return -1;
}

/* Whether a node of tier passes pod's static filters. */
static bool tier_admits(const struct fair_place *pl, const uint64_t *tier,
                        const struct fair_pod *pod)
{
    int32_t r;
    for (struct ranks it = ranks_of(pl, tier, NULL); (r = ranks_next(&it)) >= 0;)
        if (fair_place_static_ok(pl, r, pod))
            return true;
    return false;
}

/* Packing by contention tier: the lowest tier with a node where the pod
 * strands no more GPU; else the node that strands the least, any tier. */
static int32_t find_tiered(struct fair_place *pl, const struct fair_pod *pod,
                           const struct fair_resources *req, bool use_fut, uint64_t *mask)
{
    struct bal_cand fb = {.rank = -1, .delta = INT64_MAX};
    for (int t = 0; t < pl->ntiers; t++) {
        const uint64_t *tier = pl->tiers + (size_t)t * pl->words;
        if (!tier_admits(pl, tier, pod))
            continue; /* cheaper than a search that finds nothing */
        int32_t r = find_pack(pl, pod, req, use_fut, mask, tier, &fb);
        if (r >= 0)
            return r;
    }
    if (fb.rank >= 0)
        *mask = fb.mask;
    return fb.rank;
}

static int32_t find_spread(struct fair_place *pl, const struct fair_pod *pod,
                           const struct fair_resources *req, bool use_fut, uint64_t *mask)
{
    int64_t gpu = req->v[FAIR_RES_GPU];
    int to = gpu >= DEV_MILLI ? (int)(gpu / DEV_MILLI) : (gpu > 0 ? 1 : 0);
    int32_t r;
    for (int b = FAIR_MAX_GPUS_PER_NODE; b >= to; b--) {
        if (pl->whole_cnt[b] == 0)
            continue;
        r = scan_first(pl, whole_bits(pl, b), NULL, pod, req, use_fut, mask, NULL);
        if (r >= 0)
            return r;
    }
    if (gpu > 0 && gpu < DEV_MILLI) {
        for (int f = part_prev(pl, DEV_MILLI - 1); f >= gpu; f = part_prev(pl, f - 1)) {
            r = scan_first(pl, part_bits(pl, f), NULL, pod, req, use_fut, mask, NULL);
            if (r >= 0)
                return r;
        }
    }
    return -1;
}

int32_t fair_place_find(struct fair_place *pl, const struct fair_pod *pod,
                        const struct fair_resources *req, bool use_fut, uint64_t *mask)
{
    bool cacheable = unconstrained(pod) && !fair_cons_pod_constrained(pl->cons, pod);
    int32_t r = -1;
    *mask = 0;
    struct fair_resources tmp;
    req = fair_place_room(pod, req, &tmp);
    /* A fraction that fits nowhere may still fit beside its own
     * project's fractions: the no-fit cache is per tenant key. */
    int64_t g = req->v[FAIR_RES_GPU];
    int32_t key = pl->ten && g > 0 && g < DEV_MILLI ? fair_place_tenant(pl->snap, pod) : 0;
    if (cacheable && known_no_fit(pl, req, use_fut, key))
        return -1;
    if (pl->policy == FAIR_PLACE_FIRST_FIT) {
        for (size_t i = 0; i < pl->nnodes && r < 0; i++)
            if (fair_place_fits_node(pl, (int32_t)i, pod, req, use_fut, mask))
                r = (int32_t)i;
    } else if (pl->policy == FAIR_PLACE_SPREAD) {
        r = find_spread(pl, pod, req, use_fut, mask);
    } else if (pl->ntiers > 0) {
        r = find_tiered(pl, pod, req, use_fut, mask);
    } else {
        r = find_pack(pl, pod, req, use_fut, mask, NULL, NULL);
    }
    if (r < 0 && cacheable)
        remember_no_fit(pl, req, use_fut, key);
    return r;
}

void fair_place_commit(struct fair_place *pl, int32_t rank, const struct fair_resources *req,
                       uint64_t mask, int sign)
{
    struct fair_pnode *n = &pl->nodes[rank];
    bucket_out(pl, rank);
    for (int r = 0; r < FAIR_RES_COUNT; r++) {
        n->free[r] -= sign * req->v[r];
        n->ffree[r] -= sign * req->v[r];
    }
    n->pods += sign;
    n->fpods += sign;
    dev_apply(n->dev, n->ngpu, req->v[FAIR_RES_GPU], mask, sign);
    dev_apply(n->fdev, n->ngpu, req->v[FAIR_RES_GPU], mask, sign);
    bucket_in(pl, rank);
}

void fair_place_commit_pod(struct fair_place *pl, int32_t rank, const struct fair_pod *pod,
                           uint64_t mask, int sign)
{
    struct fair_resources tmp;
    const struct fair_resources *room = fair_place_room(pod, &pod->request, &tmp);
    if (sign > 0)
        tenant_take_pod(pl, rank, pod, room->v[FAIR_RES_GPU], mask, true, true);
    fair_place_commit(pl, rank, room, mask, sign);
    fair_cons_commit(pl->cons, rank, pod, sign);
}

void fair_place_fut(struct fair_place *pl, int32_t rank, const struct fair_resources *req,
                    uint64_t mask, int sign)
{
    struct fair_pnode *n = &pl->nodes[rank];
    for (int r = 0; r < FAIR_RES_COUNT; r++)
        n->ffree[r] -= sign * req->v[r];
    n->fpods += sign;
    dev_apply(n->fdev, n->ngpu, req->v[FAIR_RES_GPU], mask, sign);
    n->fdiff = true;
}

void fair_place_fut_pod(struct fair_place *pl, int32_t rank, const struct fair_pod *pod,
                        uint64_t mask, int sign)
{
    struct fair_resources tmp;
    const struct fair_resources *room = fair_place_room(pod, &pod->request, &tmp);
    if (sign > 0)
        tenant_take_pod(pl, rank, pod, room->v[FAIR_RES_GPU], mask, false, true);
    fair_place_fut(pl, rank, room, mask, sign);
}
