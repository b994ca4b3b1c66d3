/* Reclaim and preemption: victims in victim order, the smallest set on one
 * node per pod, room reserved while victims terminate, one wave at a time
 * (docs/engine.md, "Reclaim and preemption" and "Stability"). */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/mig.h"
#include "engine/constraints.h"
#include "engine/cycle.h"
#include "engine/share.h"

struct vkey {
    bool capped; /* evicted max_evictions times already: last */
    int32_t pprio, qprio;
    int32_t plain; /* 0: an elastic gang's extra member, taken first; 1: others */
    int32_t prio;
    int64_t lost; /* work an eviction would lose: milli-GPU x ms since the last checkpoint */
    int64_t size[NRES];
    struct ratio over; /* live/fs on GPU of the victim's queue */
    const char *uid;
    int32_t idx;
};

/* Victim order: pods at the eviction bound last (fair_eng_capped: only
 * preemption in their own queue may take them), then lower over-quota
 * tiers first (project, then queue), then lower pod priority, then the
 * least work lost (GPUs times the time since start or last checkpoint),
 * then the smallest request (GPU, CPU, memory), then the queue furthest
 * above its fair share, then uid. */
static int cmp_vkey(const void *pa, const void *pb)
{
    const struct vkey *a = pa, *b = pb;
    if (a->capped != b->capped)
        return a->capped ? 1 : -1;
    if (a->pprio != b->pprio)
        return a->pprio < b->pprio ? -1 : 1;
    if (a->qprio != b->qprio)
        return a->qprio < b->qprio ? -1 : 1;
    if (a->plain != b->plain)
        return a->plain < b->plain ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    if (a->lost != b->lost)
        return a->lost < b->lost ? -1 : 1;
    for (int r = 0; r < NRES; r++)
        if (a->size[r] != b->size[r])
            return a->size[r] < b->size[r] ? -1 : 1;
    int c = fair_eng_cmp_ratio(a->over, b->over);
    if (c)
        return -c; /* furthest above its fair share first */
    c = cmp_str(a->uid, b->uid);
    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* The work an eviction of p would lose now: its GPUs (milli; a pod
 * without GPU counts as 1) times its run time since its last checkpoint
 * (all of it without checkpoints), or since it was told of an eviction
 * (notice_since_ms), when that is later. */
static int64_t lost_work(const struct fair_snapshot *s, const struct fair_pod *p)
{
    int64_t run = s->now_ms - p->started_ms;
    if (run < 0)
        return 0;
    if (p->checkpoint_interval_ms > 0)
        run %= p->checkpoint_interval_ms;
    if (p->notice_since_ms > 0 && p->notice_since_ms <= s->now_ms &&
        s->now_ms - p->notice_since_ms < run)
        run = s->now_ms - p->notice_since_ms;
    int64_t g = p->request.v[GPU] > 0 ? p->request.v[GPU] : 1;
    return (int64_t)((i128)run * g > INT64_MAX / 2 ? INT64_MAX / 2 : (i128)run * g);
}

/* Whether pod p has been evicted the snapshot's max_evictions times, or
 * may not borrow under lend_max_runtime_ms (fair_eng_lendable) (a GPU pod
 * of a queue with a GPU guarantee): then admission runs it only within its
 * queue's guarantee (admit.c), and reclaim does not take it while its
 * queue's such pods stay within that guarantee (capped_may_go; only a
 * higher-priority pod of its own queue may preempt it). */
bool fair_eng_capped(const struct eng *e, const struct fair_pod *p)
{
    const struct fair_snapshot *s = e->s;
    /* Under lendMaxRuntime, a pod that may not borrow is held the same way:
     * it starts only within its queue's guarantee, and reclaim does not
     * take it while such pods hold no more than the guarantee. */
    if (!(s->max_evictions > 0 && p->evictions >= s->max_evictions) && fair_eng_lendable(s, p))
        return false;
    return p->request.v[GPU] > 0 && e->q[p->queue].g[GPU] > 0;
}

struct search;
static int build_gang_units(struct eng *e);
static int unit_search(struct eng *e, const struct search *sr, bool *found);

/* Whether pod i may be evicted to reclaim or preempt: a bound, valid,
 * preemptible pod of ours, not already leaving, that has run at least its
 * queue's reclaimMinRuntime, and not in the core of a running gang (that
 * goes only whole: unit_search). build_victims counts and then fills with
 * it. */
static bool is_victim(const struct eng *e, size_t i)
{
    const struct fair_snapshot *s = e->s;
    const struct fair_pod *p = &s->pods[i];
    if ((e->pflags[i] & PF_GANG_CORE) || p->state != FAIR_POD_BOUND ||
        (e->pflags[i] & (PF_MANAGED | PF_VALID)) != (PF_MANAGED | PF_VALID) || !p->preemptible ||
        p->terminating)
        return false;
    return s->now_ms - p->started_ms >= s->queues[p->queue].reclaim_min_runtime_ms;
}

/* Refreshes e->fbrief[rank] from the node's fut devices. */
static void brief(struct eng *e, int32_t rank)
{
    const struct fair_pnode *n = &e->pl.nodes[rank];
    struct fbrief *b = &e->fbrief[rank];
    b->nfull = 0;
    b->maxf = 0;
    b->maxp = 0;
    for (int d = 0; d < n->ngpu; d++) {
        if (n->fdev[d] >= FAIR_GPU_DEVICE_MILLI)
            b->nfull++;
        else if (n->fdev[d] > b->maxp)
            b->maxp = n->fdev[d];
        if (n->fdev[d] > b->maxf)
            b->maxf = n->fdev[d];
    }
}

/* The GPU room (devices) pod takes on a node: none for a MIG pod, whose
 * request.v[GPU] is a charge only (engine.h). */
static int64_t room_gpu(const struct fair_pod *p)
{
    return p->mig ? 0 : p->request.v[GPU];
}

/* fair_place_fut of pod's room (a MIG pod's GPU charge takes no room;
 * a fraction's device keeps its tenancy), with the node's brief kept up
 * to date. */
static void fut_apply(struct eng *e, int32_t rank, const struct fair_pod *pod, uint64_t mask,
                      int sign)
{
    fair_place_fut_pod(&e->pl, rank, pod, mask, sign);
    brief(e, rank);
}

/* Whether victim w's queue may lose it to reclaim: the queue is above its
 * fair share on GPU and, for a GPU victim, stays at or above it without
 * the victim. During the reclaim phase this only ever turns false (a
 * queue's live only drops, but in unevict): e->vwalk relies on it. */
static bool queue_may_lose(const struct eng *e, const struct vpos *w)
{
    const struct acct *vq = &e->q[w->queue];
    return vq->live[GPU] > vq->fs[GPU] && (w->gpu <= 0 || vq->live[GPU] - w->gpu >= vq->fs[GPU]);
}

/* Whether a victim at the eviction bound may still go: only when its queue
 * stays at or above its GPU guarantee without it. Such a pod was admitted
 * within the guarantee (admit.c), unless its count grew while it ran (a
 * sibling of its Job was evicted): then it holds room above the guarantee,
 * which another queue may be owed, and the bound must not keep it there. */
static bool capped_may_go(const struct eng *e, const struct vpos *w)
{
    const struct acct *vq = &e->q[w->queue];
    return vq->caplive - w->gpu >= vq->g[GPU];
}

/* Pod vi leaves (sign -1) or comes back (+1) among the live victims: its
 * queue's caplive follows when it is at the bound. */
static void cap_move(struct eng *e, int32_t vi, int sign)
{
    const struct fair_pod *v = &e->s->pods[vi];
    if (fair_eng_capped(e, v))
        e->q[v->queue].caplive += sign * v->request.v[GPU];
}

/* GPU model pools (docs/engine.md, "GPU model pools: reclaim"). The pool
 * of node rank, -1 (also when there are no pools). */
static int rank_pool(const struct eng *e, int32_t rank)
{
    return e->nm ? e->nmodel[e->pl.nodes[rank].idx] : -1;
}

/* Pod vi (bound) leaves (sign -1) or comes back (+1) among the live pods
 * of its node's pool. */
static void pool_move(struct eng *e, int32_t vi, int sign)
{
    const struct fair_pod *v = &e->s->pods[vi];
    int m = e->nm && v->request.v[GPU] > 0 && !v->mig ? e->nmodel[v->node] : -1;
    if (m < 0)
        return;
    eng_qm(e, (size_t)v->queue, (size_t)m)->live += sign * v->request.v[GPU];
    eng_pm(e, (size_t)e->q[v->queue].parent, (size_t)m)->live += sign * v->request.v[GPU];
}

/* Room on node rank reserved (sign 1) or given up (-1) for pod pi. */
static void pool_reserve(struct eng *e, int32_t pi, int32_t rank, int sign)
{
    const struct fair_pod *p = &e->s->pods[pi];
    int m = p->request.v[GPU] > 0 && !p->mig ? rank_pool(e, rank) : -1;
    if (m >= 0)
        eng_qm(e, (size_t)p->queue, (size_t)m)->resv += sign * p->request.v[GPU];
}

/* e->vwalk from scratch. */
static void build_walk(struct eng *e)
{
    e->nwalk = 0;
    for (size_t k = 0; k < e->nvict; k++)
        if (queue_may_lose(e, &e->vpos[k]))
            e->vwalk[e->nwalk++] = (int32_t)k;
    e->walk_stale = false;
}

static int build_victims(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int rc = FAIR_ENOMEM;
    size_t nv = 0;
    struct vkey *vk = NULL;
    if (build_gang_units(e))
        return FAIR_ENOMEM;
    for (size_t i = 0; i < s->npods; i++)
        if (is_victim(e, i))
            nv++;
    vk = fair_calloc(nv ? nv : 1, sizeof(*vk));
    e->vlist = fair_eng_calloc(e, nv, sizeof(*e->vlist));
    e->voff = fair_eng_calloc(e, s->nnodes + 1, sizeof(*e->voff));
    e->vrank = fair_eng_calloc(e, s->npods, sizeof(*e->vrank));
    e->vpos = fair_eng_calloc(e, nv, sizeof(*e->vpos));
    e->vict = fair_eng_calloc(e, nv, sizeof(*e->vict));
    /* With pools, vwalk's second half is e->mvlist (freed with it). */
    e->vwalk = fair_eng_calloc(e, e->nm ? 2 * nv : nv, sizeof(*e->vwalk));
    e->nplain = fair_eng_calloc(e, s->nnodes, sizeof(*e->nplain));
    e->fbrief = fair_eng_calloc(e, s->nnodes, sizeof(*e->fbrief));
    e->cand = fair_eng_calloc(e, s->nnodes, sizeof(*e->cand));
    e->clist = fair_eng_calloc(e, s->nnodes, sizeof(*e->clist));
    e->vsum = fair_eng_calloc(e, s->nnodes, sizeof(*e->vsum));
    e->rrank = fair_eng_calloc(e, s->npods, sizeof(*e->rrank));
    e->qvlist = fair_eng_calloc(e, nv, sizeof(*e->qvlist));
    e->qvoff = fair_eng_calloc(e, s->nqueues + 1, sizeof(*e->qvoff));
    e->nstamp = fair_eng_calloc(e, s->nnodes, sizeof(*e->nstamp));
    if (!vk || !e->vlist || !e->voff || !e->vrank || !e->cand || !e->vpos || !e->vict ||
        !e->vwalk || !e->nplain || !e->fbrief || !e->clist || !e->nstamp || !e->vsum ||
        !e->qvlist || !e->qvoff || !e->rrank)
        goto out;
    e->bytes += nv * sizeof(*vk);
    size_t k = 0;
    for (size_t j = 0; j < s->nqueues; j++)
        e->q[j].caplive = 0;
    for (size_t i = 0; i < s->npods; i++) {
        if (!is_victim(e, i))
            continue;
        const struct fair_pod *p = &s->pods[i];
        const struct acct *q = &e->q[p->queue];
        cap_move(e, (int32_t)i, +1);
        vk[k] = (struct vkey){.capped = fair_eng_capped(e, p),
                              .pprio = s->projects[q->parent].q.over_quota_priority,
                              .qprio = s->queues[p->queue].q.over_quota_priority,
                              .plain = (e->pflags[i] & PF_GANG_EXTRA) ? 0 : 1,
                              .prio = p->priority,
                              .lost = lost_work(s, p),
                              .over = fair_eng_ratio_of(q->live[GPU], q->fs[GPU]),
                              .uid = p->uid,
                              .idx = (int32_t)i};
        memcpy(vk[k].size, p->request.v, sizeof(vk[k].size));
        k++;
        struct acct *qm = &e->q[p->queue];
        int64_t ep = fair_eng_eff_prio(e, p);
        if (!qm->has_victim || ep < qm->minvprio)
            qm->minvprio = ep;
        qm->has_victim = true;
        if (qm->live[GPU] > qm->fs[GPU] && !vk[k - 1].capped &&
            s->now_ms - p->started_ms < s->over_quota_min_runtime_ms) {
            qm->young++;
            e->young_total++;
        }
    }
    qsort(vk, nv, sizeof(*vk), cmp_vkey);
    e->nvict = nv;
    /* The pods are read once, in victim order; the lists below come from
     * the records. */
    for (size_t i = 0; i < nv; i++) {
        const struct fair_pod *vp = &s->pods[vk[i].idx];
        if (i + PREFETCH_AHEAD < nv)
            prefetch_pod(&s->pods[vk[i + PREFETCH_AHEAD].idx]);
        struct vpos *w = &e->vpos[i];
        struct victim *v = &e->vict[i];
        w->queue = vp->queue;
        w->rank = e->pl.rank_of[vp->node];
        w->gpu = vp->request.v[GPU];
        v->pod = vk[i].idx;
        v->old = s->now_ms - vp->started_ms >= s->over_quota_min_runtime_ms;
        v->capped = vk[i].capped;
        v->mask = e->masks[vk[i].idx];
        v->lost = vk[i].lost;
        memcpy(v->req, vp->request.v, sizeof(v->req));
        e->vrank[vk[i].idx] = (int32_t)i;
    }
    for (size_t i = 0; i < nv; i++) {
        const struct vpos *w = &e->vpos[i];
        for (int r = 0; r < NRES; r++)
            e->vsum[w->rank][r] += e->vict[i].req[r];
        e->qvoff[w->queue + 1]++;
        e->voff[w->rank + 1]++;
    }
    for (size_t qi = 0; qi < s->nqueues; qi++)
        e->qvoff[qi + 1] += e->qvoff[qi];
    for (size_t r = 0; r < s->nnodes; r++)
        e->voff[r + 1] += e->voff[r];
    /* qvoff and voff advance as cursors; restored below. */
    for (size_t i = 0; i < nv; i++) {
        e->qvlist[e->qvoff[e->vpos[i].queue]++] = (int32_t)i;
        e->vlist[e->voff[e->vpos[i].rank]++] = e->vict[i].pod;
    }
    for (size_t qi = s->nqueues; qi-- > 0;)
        e->qvoff[qi + 1] = e->qvoff[qi];
    e->qvoff[0] = 0;
    if (e->nm) {
        /* Victims by the pool of their node, in victim order. */
        e->mvlist = e->vwalk + nv;
        size_t at[FAIR_MAX_GPU_MODELS + 1] = {0};
        for (size_t i = 0; i < nv; i++) {
            int m = rank_pool(e, e->vpos[i].rank);
            if (m >= 0)
                at[m + 1]++;
        }
        for (size_t m = 0; m < e->nm; m++)
            at[m + 1] += at[m];
        memcpy(e->mvoff, at, sizeof(at));
        for (size_t i = 0; i < nv; i++) {
            int m = rank_pool(e, e->vpos[i].rank);
            if (m >= 0)
                e->mvlist[at[m]++] = (int32_t)i;
        }
    }
    build_walk(e);
    for (size_t r = s->nnodes; r-- > 0;)
        e->voff[r + 1] = e->voff[r];
    e->voff[0] = 0;
    e->ncand = 0;
    for (size_t r = 0; r < s->nnodes; r++)
        if (e->pl.nodes[r].ok && e->pl.nodes[r].fdiff)
            e->cand[e->ncand++] = (int32_t)r;
    /* For a pod without constraints only the node's own state counts. */
    const struct fair_pod plain = {.node = -1};
    for (size_t r = 0; r < s->nnodes; r++) {
        e->nplain[r] = fair_place_static_ok(&e->pl, (int32_t)r, &plain);
        brief(e, (int32_t)r);
    }
    rc = 0;
out:
    fair_free(vk);
    return rc;
}

enum mode { M_RECLAIM, M_PREEMPT };

struct search {
    const struct fair_pod *pod;
    int32_t pi;
    int32_t qi;
    enum mode mode;
    int64_t budget[NRES]; /* PREEMPT: what the queue must free on top */
    bool fair_share;      /* RECLAIM up to the fair share, not only the guarantee */
    bool plain;           /* set by search_for: the pod has no node constraints */
    /* RECLAIM in GPU model pool `pool` (the pod names its model and its
     * queue is owed room there): victims are judged on their fair share
     * of the pool instead of the GPU total; -1: on the total. */
    int pool;
    int32_t tkey; /* set by search_for: fair_place_tenant of the pod */
};

/* Index of a search's failure cache: guarantee reclaim, preemption, or
 * reclaim up to the fair share (whose victims are fewer). */
static int fail_slot(const struct search *sr)
{
    return sr->mode == M_PREEMPT ? 1 : sr->fair_share ? 2 : 0;
}

/* A MIG pod's instances are held by bound pods that reclaim may evict, and
 * the constraints' check counts only what is free now: for reclaim, the
 * node checks leave them out (fair_cons_defer_mig) and only ask that the
 * node has that many at all; fits_with then counts what is free plus what
 * the victims hold (mig_fits). */
static bool static_ok_pod(const struct eng *e, int32_t rank, const struct fair_pod *p)
{
    if (!p->mig)
        return fair_place_static_ok(&e->pl, rank, p);
    const struct fair_node *n = &e->s->nodes[e->pl.nodes[rank].idx];
    for (size_t k = 0; k < p->nscalars; k++) {
        if (!fair_mig_is_resource(p->scalars[k].name))
            continue;
        int64_t have = 0;
        for (size_t j = 0; j < n->nscalars; j++)
            if (!strcmp(n->scalars[j].name, p->scalars[k].name))
                have = n->scalars[j].value;
        if (have < p->scalars[k].value)
            return false;
    }
    fair_cons_defer_mig(e->pl.cons, true);
    bool ok = fair_place_static_ok(&e->pl, rank, p);
    fair_cons_defer_mig(e->pl.cons, false);
    return ok;
}

/* Whether sr's MIG pod finds its instances on node rank with victims
 * v[0..nv) gone (skip index `skip`). */
static bool mig_fits(const struct eng *e, const struct search *sr, int32_t rank, const int32_t *v,
                     int nv, int skip)
{
    const struct fair_pod *p = sr->pod;
    for (size_t k = 0; k < p->nscalars; k++) {
        const char *name = p->scalars[k].name;
        if (p->scalars[k].value <= 0 || !fair_mig_is_resource(name))
            continue;
        int64_t have = fair_cons_scalar_free(e->pl.cons, rank, name);
        for (int i = 0; i < nv; i++) {
            const struct fair_pod *vp = &e->s->pods[v[i]];
            for (size_t j = 0; i != skip && j < vp->nscalars; j++)
                if (!strcmp(vp->scalars[j].name, name))
                    have += vp->scalars[j].value;
        }
        if (have < p->scalars[k].value)
            return false;
    }
    return true;
}

/* fair_place_static_ok for sr's pod on node rank; from e->nplain for a pod
 * without constraints. */
static bool static_ok(const struct eng *e, const struct search *sr, int32_t rank)
{
    return sr->plain ? e->nplain[rank] : static_ok_pod(e, rank, sr->pod);
}

/* Whether node rank is held for a pod other than sr's. */
static bool held_by_other(const struct eng *e, const struct search *sr, int32_t rank)
{
    return e->hold[rank] && e->hold[rank] != sr->pod;
}

struct trial {
    int32_t v[MAX_VICTIMS];
    int nv;
    int64_t lost; /* work the victims lose (sum of lost_work) */
    int64_t cost;
    int32_t rank;
    int64_t fitkey; /* nv == 0: fut free of the chosen fit, smaller first */
};

/* Node rank's fut view with a victim gone: what it requests (req) back in
 * freeres, off the preemption budget, one pod fewer, and its devices
 * (mask) freed. */
static void free_victim(const struct fair_pnode *n, int16_t *dev, int64_t *freeres, int64_t *budget,
                        int32_t *pods, const int64_t *req, uint64_t m)
{
    for (int r = 0; r < NRES; r++) {
        freeres[r] += req[r];
        budget[r] -= req[r];
    }
    (*pods)--;
    int64_t g = req[GPU];
    for (int d = 0; d < n->ngpu && g > 0; d++)
        if (m >> d & 1) {
            int64_t x = dev[d] + (g < FAIR_GPU_DEVICE_MILLI ? g : FAIR_GPU_DEVICE_MILLI);
            dev[d] = (int16_t)(x > FAIR_GPU_DEVICE_MILLI ? FAIR_GPU_DEVICE_MILLI : x);
            if (g < FAIR_GPU_DEVICE_MILLI)
                break;
        }
}

/* Devices for pod in dev, a fut view of node n (victims gone or not):
 * fractions keep to their tenancy (docs/fractions.md, "Tenancy"); a device
 * that the victims leave fully free is open to any project. */
static bool pick_fut(const struct eng *e, const struct fair_pnode *n, const int16_t *dev,
                     const struct fair_pod *pod, uint64_t *mask)
{
    int64_t g = room_gpu(pod);
    if (e->pl.ften && g > 0 && g < FAIR_GPU_DEVICE_MILLI) {
        size_t rank = (size_t)(n - e->pl.nodes);
        return fair_place_pick_devices_tenant(dev, n->ngpu, g, NULL, e->pl.policy,
                                              e->pl.ften + rank * FAIR_MAX_GPUS_PER_NODE, NULL,
                                              fair_place_tenant(e->s, pod), mask);
    }
    return fair_place_pick_devices(dev, n->ngpu, g, NULL, e->pl.policy, mask);
}

/* Whether sr's pod fits in that view (freeres, budget, pods, dev), with
 * the preemption budget covered; short_by says by how much it does not. */
static bool fits_view(const struct eng *e, const struct search *sr, const struct fair_pnode *n,
                      const int16_t *dev, const int64_t *freeres, const int64_t *budget,
                      int32_t pods, int64_t *short_by, uint64_t *mask)
{
    const struct fair_node *sn = &e->s->nodes[n->idx];
    bool ok = true;
    const int64_t *req = sr->pod->request.v;
    for (int r = 0; r < NRES; r++) {
        short_by[r] = 0;
        if (r != GPU && freeres[r] < req[r]) {
            short_by[r] = req[r] - freeres[r];
            ok = false;
        }
        if (budget[r] > 0) {
            short_by[r] = short_by[r] > budget[r] ? short_by[r] : budget[r];
            ok = false;
        }
    }
    if (sn->max_pods > 0 && pods >= sn->max_pods)
        ok = false;
    if (!pick_fut(e, n, dev, sr->pod, mask)) {
        short_by[GPU] = short_by[GPU] > 0 ? short_by[GPU] : 1;
        ok = false;
    }
    return ok;
}

/* Whether pod fits on node rank's fut view with victims v[0..nv) gone (skip
 * index `skip`), and with the preemption budget covered. */
static bool fits_with(const struct eng *e, const struct search *sr, int32_t rank, const int32_t *v,
                      int nv, int skip, int64_t *short_by, uint64_t *mask)
{
    const struct fair_pnode *n = &e->pl.nodes[rank];
    int16_t dev[FAIR_MAX_GPUS_PER_NODE];
    int64_t freeres[NRES], budget[NRES];
    int32_t pods = n->fpods;
    memcpy(dev, n->fdev, sizeof(dev));
    memcpy(freeres, n->ffree, sizeof(freeres));
    memcpy(budget, sr->budget, sizeof(budget));
    for (int i = 0; i < nv; i++)
        if (i != skip)
            free_victim(n, dev, freeres, budget, &pods, e->s->pods[v[i]].request.v, e->masks[v[i]]);
    bool ok = fits_view(e, sr, n, dev, freeres, budget, pods, short_by, mask);
    if (sr->pod->mig && !mig_fits(e, sr, rank, v, nv, skip)) {
        /* Short of instances: victims holding GPU (MIG pods) may help. */
        short_by[GPU] = short_by[GPU] > 0 ? short_by[GPU] : 1;
        ok = false;
    }
    return ok;
}

/* Tenancy (docs/fractions.md, "Tenancy"): whether sr's pod, a fraction,
 * may find a device on node rank when each device d has at most up[d]
 * free milli: one that ends fully free, or one that holds fractions of
 * its tenant key alone (pick_fut). */
static bool tenant_open(const struct eng *e, const struct search *sr, int32_t rank,
                        const int64_t *up)
{
    int64_t g = room_gpu(sr->pod);
    const int32_t *ten = e->pl.ften + (size_t)rank * FAIR_MAX_GPUS_PER_NODE;
    int32_t key = sr->tkey;
    for (int d = 0; d < e->pl.nodes[rank].ngpu; d++)
        if (up[d] >= g &&
            (up[d] >= FAIR_GPU_DEVICE_MILLI || (ten[d] == key && key >= FAIR_TENANT_SHARED)))
            return true;
    return false;
}

/* Adds what a victim holding gpu on the devices of mask frees to up. */
static void up_add(int64_t *up, int ngpu, int64_t gpu, uint64_t mask)
{
    for (int d = 0; d < ngpu && gpu > 0; d++)
        if (mask >> d & 1) {
            up[d] += gpu < FAIR_GPU_DEVICE_MILLI ? gpu : FAIR_GPU_DEVICE_MILLI;
            if (gpu < FAIR_GPU_DEVICE_MILLI)
                break;
        }
}

/* Tenancy: false when sr's pod, a fraction, surely finds no device on node
 * rank's fut view with victim v's devices freed (v NULL: none), the
 * tenancy-aware form of gpu_may_fit below. */
static bool tenant_may_fit(const struct eng *e, const struct search *sr, int32_t rank,
                           const struct victim *v)
{
    const struct fair_pnode *n = &e->pl.nodes[rank];
    int64_t up[FAIR_MAX_GPUS_PER_NODE];
    for (int d = 0; d < n->ngpu; d++)
        up[d] = n->fdev[d];
    if (v)
        up_add(up, n->ngpu, v->req[GPU], v->mask);
    return tenant_open(e, sr, rank, up);
}

/* False when sr's pod surely does not fit on node rank's fut devices, with
 * victim v's devices freed (v NULL: none), judged from the node's brief
 * alone: then fits_with says no too. fair_place_pick_devices needs
 * request/1000 wholly free devices, or one device with the fraction free.
 * Freeing v makes at most popcount(mask) more devices wholly free; a
 * fraction, at most one (if the fullest device not wholly free, maxp,
 * reaches 1000 with it), and no device more free than maxf or
 * min(1000, maxp + the fraction). */
static bool gpu_may_fit(const struct eng *e, const struct search *sr, int32_t rank,
                        const struct victim *v)
{
    int64_t g = room_gpu(sr->pod);
    if (g <= 0)
        return true;
    const struct fbrief *b = &e->fbrief[rank];
    int64_t nfull = b->nfull, maxf = b->maxf;
    if (v && v->req[GPU] > 0 && v->mask) {
        int64_t vg = v->req[GPU];
        if (vg >= FAIR_GPU_DEVICE_MILLI) {
            nfull += __builtin_popcountll(v->mask);
            maxf = FAIR_GPU_DEVICE_MILLI;
        } else {
            int64_t up =
                b->maxp + vg < FAIR_GPU_DEVICE_MILLI ? b->maxp + vg : FAIR_GPU_DEVICE_MILLI;
            if (up >= FAIR_GPU_DEVICE_MILLI)
                nfull++;
            if (up > maxf)
                maxf = up;
        }
    }
    if (g >= FAIR_GPU_DEVICE_MILLI)
        return nfull >= g / FAIR_GPU_DEVICE_MILLI;
    /* The brief first (it knows no tenancy, and costs less), then the
     * devices open to the fraction. */
    return maxf >= g && (!e->pl.ften || tenant_may_fit(e, sr, rank, v));
}

/* With queue_may_lose, victim_ok's own test on GPU: a GPU victim of
 * another project than sr's queue's leaves its project at or above its
 * fair share. */
static bool project_may_lose(const struct eng *e, const struct search *sr, const struct vpos *w)
{
    if (w->gpu <= 0)
        return true;
    const struct acct *vq = &e->q[w->queue];
    const struct acct *vp = &e->p[vq->parent];
    return vq->parent == e->q[sr->qi].parent || vp->live[GPU] - w->gpu >= vp->fs[GPU];
}

/* Whether GPU victim w's pool may lose it for sr, given tq and tp GPUs
 * already taken from its queue and project: in a pool search, its queue,
 * and its project when another project's, stay at or above their fair
 * share of the pool (this replaces the total test); otherwise, the same
 * for a queue or project that has a quota for the pool (on top of the
 * total test). True when there are no pools. */
static bool pool_may_lose(const struct eng *e, const struct search *sr, int32_t queue, int32_t rank,
                          int64_t gpu, int64_t tq, int64_t tp)
{
    int m = gpu > 0 ? rank_pool(e, rank) : -1;
    if (m < 0)
        return true;
    int32_t vp = e->q[queue].parent;
    const struct macct *q = eng_qm(e, (size_t)queue, (size_t)m);
    const struct macct *p = eng_pm(e, (size_t)vp, (size_t)m);
    bool pool = sr->pool >= 0;
    if ((pool || q->quota) && q->live - tq - gpu < q->fs)
        return false;
    return vp == e->q[sr->qi].parent || !(pool || p->quota) || p->live - tp - gpu >= p->fs;
}

/* fits_with for one victim, from its record: no pod is read. */
static bool fits_alone(const struct eng *e, const struct search *sr, int32_t rank,
                       const struct victim *v)
{
    const struct fair_pnode *n = &e->pl.nodes[rank];
    int16_t dev[FAIR_MAX_GPUS_PER_NODE];
    int64_t freeres[NRES], budget[NRES], short_by[NRES];
    int32_t pods = n->fpods;
    uint64_t mask;
    memcpy(dev, n->fdev, sizeof(dev));
    memcpy(freeres, n->ffree, sizeof(freeres));
    memcpy(budget, sr->budget, sizeof(budget));
    free_victim(n, dev, freeres, budget, &pods, v->req, v->mask);
    return fits_view(e, sr, n, dev, freeres, budget, pods, short_by, &mask);
}

/* Whether a victim of queue `queue` asking for req (old: it ran at least
 * over_quota_min_runtime_ms) may go for sr, given the victims already
 * taken; vi is its pod. */
static bool victim_ok_as(const struct eng *e, const struct search *sr, int32_t vi, int32_t queue,
                         const int64_t *req, bool old, const int32_t *taken, int nt)
{
    const struct fair_snapshot *s = e->s;
    if (e->pflags[vi] & PF_EVICTED)
        return false;
    if (sr->mode == M_PREEMPT)
        return queue == sr->qi &&
               fair_eng_eff_prio(e, &s->pods[vi]) < fair_eng_eff_prio(e, sr->pod);
    if (queue == sr->qi)
        return false;
    /* Reclaim up to the fair share takes only pods that ran long enough. */
    if (sr->fair_share && !old)
        return false;
    /* A borrower only, and never below its own fair share (queue, and the
     * project when it is another project's). */
    const struct acct *vq = &e->q[queue];
    int32_t vp = vq->parent;
    bool other_project = vp != e->q[sr->qi].parent;
    int64_t tq[NRES] = {0}, tp[NRES] = {0};
    for (int i = 0; i < nt; i++) {
        const struct fair_pod *t = &s->pods[taken[i]];
        for (int r = 0; r < NRES; r++) {
            if (t->queue == queue)
                tq[r] += t->request.v[r];
            if (e->q[t->queue].parent == vp)
                tp[r] += t->request.v[r];
        }
    }
    /* A pod at the bound stays only while its queue is within its guarantee. */
    if (fair_eng_capped(e, &s->pods[vi])) {
        int64_t tcap = 0;
        for (int i = 0; i < nt; i++)
            if (s->pods[taken[i]].queue == queue && fair_eng_capped(e, &s->pods[taken[i]]))
                tcap += s->pods[taken[i]].request.v[GPU];
        if (vq->caplive - tcap - req[GPU] < vq->g[GPU])
            return false;
    }
    bool gpu_only = req[GPU] > 0;
    if (gpu_only && e->nm &&
        !pool_may_lose(e, sr, queue, e->pl.rank_of[s->pods[vi].node], req[GPU], tq[GPU], tp[GPU]))
        return false;
    for (int r = 0; r < NRES; r++) {
        if ((gpu_only && r != GPU) || (r == GPU && sr->pool >= 0))
            continue;
        int64_t need = req[r];
        if (need <= 0)
            continue;
        if (vq->live[r] - tq[r] - need < vq->fs[r])
            return false;
        if (other_project && e->p[vp].live[r] - tp[r] - need < e->p[vp].fs[r])
            return false;
    }
    return true;
}

/* Whether victim vi may go for sr, given the victims already taken. */
static bool victim_ok(const struct eng *e, const struct search *sr, int32_t vi,
                      const int32_t *taken, int nt)
{
    const struct fair_snapshot *s = e->s;
    const struct fair_pod *v = &s->pods[vi];
    return victim_ok_as(e, sr, vi, v->queue, v->request.v,
                        s->now_ms - v->started_ms >= s->over_quota_min_runtime_ms, taken, nt);
}

/* The questions of victim_ok that search_for's walk asks from a victim's
 * records (GPU victims; all of victim_ok's but PF_EVICTED and, for
 * preemption, the priority): true when v cannot be a victim for sr. */
static bool victim_skipped(const struct eng *e, const struct search *sr, const struct vpos *w,
                           const struct victim *v)
{
    bool pre = sr->mode == M_PREEMPT;
    bool pooled = !pre && sr->pool >= 0;
    if (pre)
        return w->queue != sr->qi;
    return w->queue == sr->qi || (v->capped && !capped_may_go(e, w)) ||
           (!pooled && (!queue_may_lose(e, w) || !project_may_lose(e, sr, w))) ||
           (e->nm && !pool_may_lose(e, sr, w->queue, w->rank, w->gpu, 0, 0)) ||
           (sr->fair_share && !v->old);
}

/* Tenancy: false when sr's pod, a fraction, surely finds no device on node
 * rank whatever victims try_node takes there: each device's free milli
 * counted with every victim on it that victim_ok could accept. A node
 * whose devices its tenancy keeps shut (another project's fractions, or
 * pods that may not go) is passed over without trying victims. */
static bool tenant_may_fit_any(const struct eng *e, const struct search *sr, int32_t rank)
{
    const struct fair_pnode *n = &e->pl.nodes[rank];
    int64_t up[FAIR_MAX_GPUS_PER_NODE];
    for (int d = 0; d < n->ngpu; d++)
        up[d] = n->fdev[d];
    for (size_t i = e->voff[rank]; i < e->voff[rank + 1]; i++) {
        int32_t vi = e->vlist[i];
        size_t k = (size_t)e->vrank[vi];
        const struct vpos *w = &e->vpos[k];
        const struct victim *v = &e->vict[k];
        if (w->gpu <= 0 || (e->pflags[vi] & PF_EVICTED) || victim_skipped(e, sr, w, v))
            continue;
        up_add(up, n->ngpu, v->req[GPU], v->mask);
    }
    return tenant_open(e, sr, rank, up);
}

/* Greedy victim choice on one node, then pruned to a minimal set. */
static bool try_node(const struct eng *e, const struct search *sr, int32_t rank, struct trial *t,
                     int max_nv)
{
    int64_t short_by[NRES];
    uint64_t mask;
    t->nv = 0;
    t->rank = rank;
    t->cost = 0;
    t->lost = 0;
    t->fitkey = 0;
    const struct fair_pnode *nd = &e->pl.nodes[rank];
    for (int r = 0; r < NRES; r++)
        if (nd->ffree[r] + (max_nv > 0 ? e->vsum[rank][r] : 0) <
            (r == GPU ? room_gpu(sr->pod) : sr->pod->request.v[r]))
            return false;
    int64_t tg = room_gpu(sr->pod);
    if (max_nv > 0 && e->pl.ften && tg > 0 && tg < FAIR_GPU_DEVICE_MILLI &&
        !tenant_may_fit_any(e, sr, rank))
        return false;
    /* No victim allowed and node constraints to check: the room alone
     * first, then the costlier static filters (both must pass). */
    bool room_first = max_nv == 0 && !sr->plain;
    bool ok = room_first && fits_with(e, sr, rank, t->v, 0, -1, short_by, &mask);
    if ((room_first && !ok) || !static_ok(e, sr, rank))
        return false;
    if (!room_first)
        ok = fits_with(e, sr, rank, t->v, 0, -1, short_by, &mask);
    /* The fut view with the victims so far freed, one more each time (as
     * fits_with would rebuild it, in the same order). */
    int16_t dev[FAIR_MAX_GPUS_PER_NODE];
    int64_t freeres[NRES], budget[NRES];
    int32_t pods = nd->fpods;
    if (!ok) {
        memcpy(dev, nd->fdev, sizeof(dev));
        memcpy(freeres, nd->ffree, sizeof(freeres));
        memcpy(budget, sr->budget, sizeof(budget));
    }
    const int32_t max_pods = e->s->nodes[nd->idx].max_pods;
    for (size_t i = e->voff[rank]; i < e->voff[rank + 1] && !ok && !e->damp; i++) {
        int32_t vi = e->vlist[i];
        const struct fair_pod *v = &e->s->pods[vi];
        bool helps = max_pods > 0 && nd->fpods - t->nv >= max_pods;
        for (int r = 0; r < NRES && !helps; r++)
            if (short_by[r] > 0 && v->request.v[r] > 0)
                helps = true;
        if (!helps || !victim_ok(e, sr, vi, t->v, t->nv))
            continue;
        if (t->nv == MAX_VICTIMS || t->nv >= max_nv)
            return false;
        t->v[t->nv++] = vi;
        free_victim(nd, dev, freeres, budget, &pods, v->request.v, e->masks[vi]);
        ok = fits_view(e, sr, nd, dev, freeres, budget, pods, short_by, &mask);
    }
    if (!ok)
        return false;
    /* Drop victims that turn out not to be needed, latest first. */
    for (int i = t->nv - 1; i >= 0; i--) {
        if (fits_with(e, sr, rank, t->v, t->nv, i, short_by, &mask)) {
            memmove(&t->v[i], &t->v[i + 1], (size_t)(t->nv - i - 1) * sizeof(t->v[0]));
            t->nv--;
        }
    }
    for (int i = 0; i < t->nv; i++)
        t->cost += e->vrank[t->v[i]];
    for (int i = 0; i < t->nv; i++)
        t->lost += e->vict[e->vrank[t->v[i]]].lost;
    if (t->nv == 0) {
        /* Among nodes that need no new victim, the fullest fut view wins. */
        const struct fair_pnode *n = &e->pl.nodes[rank];
        int64_t g = room_gpu(sr->pod);
        if (g > 0 && g < FAIR_GPU_DEVICE_MILLI) {
            for (int d = 0; d < n->ngpu; d++)
                if (mask >> d & 1)
                    t->fitkey = (int64_t)n->fdev[d] * 1000000 + n->ffree[GPU];
        } else {
            t->fitkey = n->ffree[GPU];
        }
    }
    return true;
}

/* Room already being freed wins (it loses no work); then the set that
 * loses the least work, then the fewest victims, then the fullest room,
 * then the earliest in victim order, then the node's rank. Searches that
 * need more than one victim on a node compare their sets this way; a
 * single victim that makes room alone is taken first (see search_for). */
static bool better(const struct trial *a, const struct trial *b)
{
    if (a->lost != b->lost)
        return a->lost < b->lost;
    if (a->nv != b->nv)
        return a->nv < b->nv;
    if (a->nv == 0 && a->fitkey != b->fitkey)
        return a->fitkey < b->fitkey;
    if (a->cost != b->cost)
        return a->cost < b->cost;
    return a->rank < b->rank;
}

static int apply_trial(struct eng *e, const struct search *sr, const struct trial *t)
{
    const struct fair_snapshot *s = e->s;
    if (!e->pl.nodes[t->rank].fdiff && e->pl.nodes[t->rank].ok)
        e->cand[e->ncand++] = t->rank;
    for (int i = 0; i < t->nv; i++) {
        int32_t vi = t->v[i];
        const struct fair_pod *v = &s->pods[vi];
        struct acct *vq = &e->q[v->queue], *vp = &e->p[vq->parent];
        e->pflags[vi] |= PF_EVICTED;
        cap_move(e, vi, -1);
        pool_move(e, vi, -1);
        for (int r = 0; r < NRES; r++) {
            e->vsum[t->rank][r] -= v->request.v[r];
            vq->live[r] -= v->request.v[r];
            vp->live[r] -= v->request.v[r];
            vq->evicted[r] += v->request.v[r];
            vp->evicted[r] += v->request.v[r];
        }
        fut_apply(e, t->rank, v, e->masks[vi], -1);
        struct fair_action a = {FAIR_ACTION_EVICT,
                                vi,
                                v->node,
                                0,
                                sr->mode == M_PREEMPT ? FAIR_EVICT_PREEMPT
                                : sr->fair_share      ? FAIR_EVICT_FAIR_SHARE
                                                      : FAIR_EVICT_RECLAIM,
                                sr->qi,
                                sr->pi};
        int rc = fair_eng_add_action(e, &a);
        if (rc)
            return rc;
    }
    const struct fair_pnode *n = &e->pl.nodes[t->rank];
    uint64_t m = 0;
    pick_fut(e, n, n->fdev, sr->pod, &m);
    fut_apply(e, t->rank, sr->pod, m, 1);
    e->masks[sr->pi] = m; /* a pending pod's mask: its reserved devices */
    e->rrank[sr->pi] = t->rank;
    pool_reserve(e, sr->pi, t->rank, 1);
    struct acct *q = &e->q[sr->qi], *p = &e->p[q->parent];
    for (int r = 0; r < NRES; r++) {
        q->resv[r] += sr->pod->request.v[r];
        p->resv[r] += sr->pod->request.v[r];
    }
    e->pflags[sr->pi] |= PF_RESERVED;
    e->res->pending_reasons[sr->pi] = FAIR_PENDING_WAITING_RECLAIM;
    return 0;
}

/* Whether pending pod pi of queue qi is owed room from borrowers: its
 * queue stays within min(guaranteed, demand) with it. GPU pods are judged
 * on GPU; pods without GPU on every resource they request. */
static bool entitled(const struct eng *e, int32_t qi, const struct fair_pod *p)
{
    const struct acct *q = &e->q[qi];
    bool any = false;
    for (int r = 0; r < NRES; r++) {
        int64_t req = p->request.v[r];
        if (req <= 0 || (p->request.v[GPU] > 0 && r != GPU))
            continue;
        int64_t owed = q->g[r] < q->demand[r] ? q->g[r] : q->demand[r];
        if (q->live[r] + q->resv[r] + req > owed)
            return false;
        any = true;
    }
    return any;
}

/* Whether pending GPU pod pi, which names the model of a pool, is owed
 * room in that pool too: its queue stays within min(guaranteed, demand)
 * of the pool with it (fair_share: within its fair share of the pool).
 * Then its reclaim judges victims on the pool (struct search, pool). */
static bool pool_entitled(const struct eng *e, int32_t pi, bool fair_share)
{
    const struct fair_pod *p = &e->s->pods[pi];
    int64_t g = p->request.v[GPU];
    if (e->nm == 0 || g <= 0 || !p->gpu_model || !p->gpu_model[0] || e->pmodel[pi] < 0)
        return false;
    const struct macct *a = eng_qm(e, (size_t)p->queue, (size_t)e->pmodel[pi]);
    int64_t owed = fair_share ? a->fs : a->g < a->demand ? a->g : a->demand;
    return a->live + a->resv + g <= owed;
}

/* Whether a search for pod can be skipped after one failed for f: same
 * constraints, and a request at least as big everywhere. Victims only get
 * fewer during the phase, so it would fail again (pods left out are looked
 * at next cycle). */
static bool same_shape_or_bigger(const struct fail_entry *f, const struct search *sr)
{
    const struct fair_pod *p = sr->pod;
    if (f->pool != sr->pool)
        return false;
    for (int r = 0; r < NRES; r++)
        if (p->request.v[r] < f->req[r])
            return false;
    if (f->sel != (const void *)p->node_selector || f->nsel != p->nnode_selector ||
        f->tol != (const void *)p->tolerations || f->ntol != p->ntolerations)
        return false;
    return cmp_str(f->model, p->gpu_model) == 0;
}

/* Finds the smallest victim set on one node for sr and applies it. In
 * order: a node where room being freed already fits (no new victim); else
 * the first single victim, in victim order, that makes room alone (that is
 * the cheapest one-victim set); else every candidate node, greedily, the
 * fewest victims winning, then the lower victim-order cost, then rank. */
static int search_for(struct eng *e, struct search *sr, bool *found)
{
    struct trial best = {0}, cur;
    bool have = false;
    struct acct *q = &e->q[sr->qi];
    int m = fail_slot(sr);
    const int64_t *req = sr->pod->request.v;
    /* A pod holding a node may search there, where others may not: the
     * failure cache does not speak for it, nor it for others. */
    bool holder = e->hold_of[sr->pi] >= 0;
    /* Constraints (constraints.h): the node check is the pod's own, and a
     * failed search says nothing of another pod's. */
    bool cons = fair_cons_pod_constrained(e->pl.cons, sr->pod);
    *found = false;
    sr->tkey = fair_place_tenant(e->s, sr->pod);
    sr->plain = sr->pod->nnode_selector == 0 && sr->pod->ntolerations == 0 &&
                (!sr->pod->gpu_model || !sr->pod->gpu_model[0]) && !cons;
    for (int i = 0; i < q->nfail[m] && !holder && !cons; i++)
        if (same_shape_or_bigger(&q->fail[m][i], sr))
            return 0;
    if (e->searches >= MAX_SEARCHES)
        return 0;
    e->searches++;
    for (size_t c = 0; c < e->ncand; c++) {
        int32_t r = e->cand[c];
        if (held_by_other(e, sr, r) || !gpu_may_fit(e, sr, r, NULL) || !e->pl.nodes[r].fdiff ||
            !try_node(e, sr, r, &cur, 0))
            continue;
        if (!have || better(&cur, &best)) {
            best = cur;
            have = true;
        }
    }
    size_t nc = 0;
    e->stamp++;
    bool pre = sr->mode == M_PREEMPT;
    if (!pre && e->walk_stale)
        build_walk(e);
    /* A pool search walks the victims on the pool's nodes (their queues
     * are judged on the pool, not on the total). */
    bool pooled = !pre && sr->pool >= 0;
    size_t from = pre ? e->qvoff[sr->qi] : pooled ? e->mvoff[sr->pool] : 0;
    size_t to = pre ? e->qvoff[sr->qi + 1] : pooled ? e->mvoff[sr->pool + 1] : e->nwalk;
    for (size_t i = from; i < to && !have && !e->damp; i++) {
        /* Reclaim walks the victims its queues may lose, by their records:
         * the pods are not read until a node is worth a look. */
        size_t k = (size_t)(pre ? e->qvlist[i] : pooled ? e->mvlist[i] : e->vwalk[i]);
        const struct vpos *w = &e->vpos[k];
        int32_t r = w->rank;
        /* A node already looked at in this search: nothing below would
         * change (the tests before the stamp only skip). */
        if (e->nstamp[r] == e->stamp)
            continue;
        const struct victim *v = &e->vict[k];
        /* Reclaim asks victim_ok's questions about a victim's queue and
         * project first, before its node: a node only counts once a
         * victim there passes victim_ok, so the order changes nothing. For
         * a GPU victim they are all of victim_ok but PF_EVICTED. */
        bool known_ok = false;
        if (pre) {
            if (w->queue != sr->qi)
                continue;
        } else if (w->queue == sr->qi || (v->capped && !capped_may_go(e, w)) ||
                   (!pooled && (!queue_may_lose(e, w) || !project_may_lose(e, sr, w))) ||
                   (e->nm && !pool_may_lose(e, sr, w->queue, w->rank, w->gpu, 0, 0)) ||
                   (sr->fair_share && !v->old)) {
            continue;
        } else {
            known_ok = w->gpu > 0 && !v->capped;
        }
        int32_t vi = v->pod;
        if ((e->pflags[vi] & PF_EVICTED) ||
            (pre && fair_eng_eff_prio(e, &e->s->pods[vi]) >= fair_eng_eff_prio(e, sr->pod)))
            continue;
        if (!static_ok(e, sr, r) || held_by_other(e, sr, r)) {
            e->nstamp[r] = e->stamp;
            continue;
        }
        if (!known_ok && !victim_ok_as(e, sr, vi, w->queue, v->req, v->old, NULL, 0))
            continue;
        e->nstamp[r] = e->stamp;
        e->clist[nc++] = r;
        if (gpu_may_fit(e, sr, r, v) && fits_alone(e, sr, r, v)) {
            /* Victims come in victim order (least work lost first): the
             * first that makes room alone is the cheapest single one. */
            best.v[0] = vi;
            best.nv = 1;
            best.rank = r;
            best.cost = e->vrank[vi];
            best.lost = v->lost;
            have = true;
        }
    }
    bool full = !have && !e->damp;
    for (size_t c = 0; c < nc && full; c++) {
        if (!try_node(e, sr, e->clist[c], &cur, MAX_VICTIMS))
            continue;
        if (!have || better(&cur, &best)) {
            best = cur;
            have = true;
        }
    }
    if (!have && !e->damp && sr->mode == M_RECLAIM && e->ngunits) {
        /* No set of single victims: a whole running gang, if one frees
         * enough. */
        int rc = unit_search(e, sr, found);
        if (rc || *found)
            return rc;
    }
    if (!have && holder)
        return 0;
    if (!have && cons)
        return 0;
    if (!have) {
        struct fail_entry *f = &q->fail[m][q->fail_next[m]];
        memcpy(f->req, req, sizeof(f->req));
        f->model = sr->pod->gpu_model;
        f->pool = sr->pool;
        f->sel = sr->pod->node_selector;
        f->nsel = sr->pod->nnode_selector;
        f->tol = sr->pod->tolerations;
        f->ntol = sr->pod->ntolerations;
        q->fail_next[m] = (uint8_t)((q->fail_next[m] + 1) % FAIL_ENTRIES);
        if (q->nfail[m] < FAIL_ENTRIES)
            q->nfail[m]++;
        return 0;
    }
    *found = true;
    return apply_trial(e, sr, &best);
}

static void unreserve(struct eng *e, int32_t pi)
{
    const struct fair_pod *p = &e->s->pods[pi];
    struct acct *q = &e->q[p->queue], *pr = &e->p[q->parent];
    fut_apply(e, e->rrank[pi], p, e->masks[pi], -1);
    pool_reserve(e, pi, e->rrank[pi], -1);
    for (int r = 0; r < NRES; r++) {
        q->resv[r] -= p->request.v[r];
        pr->resv[r] -= p->request.v[r];
    }
    e->pflags[pi] &= (uint8_t)~PF_RESERVED;
    e->masks[pi] = 0;
}

static void unevict(struct eng *e, int32_t vi)
{
    const struct fair_pod *v = &e->s->pods[vi];
    struct acct *q = &e->q[v->queue], *pr = &e->p[q->parent];
    int32_t rank = e->pl.rank_of[v->node];
    e->pflags[vi] &= (uint8_t)~PF_EVICTED;
    e->walk_stale = true;                          /* its queue's live grows back */
    bool listed = !(e->pflags[vi] & PF_GANG_CORE); /* a gang's core is in no vsum */
    cap_move(e, vi, +1);
    pool_move(e, vi, +1);
    for (int r = 0; r < NRES; r++) {
        q->live[r] += v->request.v[r];
        pr->live[r] += v->request.v[r];
        q->evicted[r] -= v->request.v[r];
        pr->evicted[r] -= v->request.v[r];
        if (listed)
            e->vsum[rank][r] += v->request.v[r];
    }
    fut_apply(e, rank, v, e->masks[vi], 1);
}

/* Reclaim for a whole gang owed room: every member gets room (new victims
 * or room being freed), or nothing is evicted nor reserved. */
static int gang_reclaim(struct eng *e, int32_t gi)
{
    const struct fair_snapshot *s = e->s;
    const struct gang *g = &e->gangs[gi];
    int32_t qi = s->pods[e->order[g->leader]].queue;
    struct acct *q = &e->q[qi];
    int64_t req[NRES] = {0};
    size_t nu = gang_unit_count(g); /* its elastic extras are not owed room */
    for (size_t j = 0; j < nu; j++)
        for (int r = 0; r < NRES; r++)
            req[r] += s->pods[e->order[e->gmem[g->first + j]]].request.v[r];
    bool any = false;
    for (int r = 0; r < NRES; r++) {
        if (req[r] <= 0 || (req[GPU] > 0 && r != GPU))
            continue;
        int64_t owed = q->g[r] < q->demand[r] ? q->g[r] : q->demand[r];
        if (q->live[r] + q->resv[r] + req[r] > owed)
            return 0;
        any = true;
    }
    if (!any || fair_eng_over(q->live, q->resv, req, q->fs))
        return 0;
    size_t nact = e->res->nactions;
    struct fail_entry saved[3][FAIL_ENTRIES];
    uint8_t saved_n[3], saved_next[3];
    memcpy(saved_n, q->nfail, sizeof(saved_n));
    memcpy(saved_next, q->fail_next, sizeof(saved_next));
    memcpy(saved, q->fail, sizeof(saved));
    size_t j = 0;
    for (; j < nu; j++) {
        int32_t mi = e->order[e->gmem[g->first + j]];
        struct search sr = {&s->pods[mi], mi, qi, M_RECLAIM, {0}, false, false, -1, 0};
        bool found = false;
        int rc = search_for(e, &sr, &found);
        if (rc)
            return rc;
        if (!found)
            break;
    }
    if (j == nu)
        return 0;
    /* Undo, latest first: each member's reservation, then its victims. */
    int32_t cur = -1;
    for (size_t k = e->res->nactions; k-- > nact;) {
        const struct fair_action *a = &e->res->actions[k];
        if (a->for_pod != cur) {
            cur = a->for_pod;
            if (e->pflags[cur] & PF_RESERVED)
                unreserve(e, cur);
        }
        unevict(e, a->pod);
    }
    e->res->nactions = nact;
    for (size_t k = 0; k < g->count; k++) {
        int32_t mi = e->order[e->gmem[g->first + k]];
        if (e->pflags[mi] & PF_RESERVED)
            unreserve(e, mi);
        e->res->pending_reasons[mi] = FAIR_PENDING_GANG_NO_FIT;
    }
    memcpy(q->fail, saved, sizeof(saved));
    memcpy(q->nfail, saved_n, sizeof(saved_n));
    memcpy(q->fail_next, saved_next, sizeof(saved_next));
    return 0;
}

/* One wave at a time: while pods that look like earlier victims are
 * still terminating (preemptible pods of a queue above its fair share, or
 * below a higher-priority pod waiting in their queue), no new victim is
 * taken. Other deletions (finished work) do not hold it, nor do victims
 * still under a preemption notice (noticed): a notice may last minutes,
 * and other queues' reclaims must not wait for it; the room it will free
 * is reserved for the pods that wait for it as for any terminating pod. */
void fair_eng_compute_damp(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    for (size_t i = 0; i < s->npods && !e->damp; i++) {
        const struct fair_pod *p = &s->pods[i];
        if (p->state != FAIR_POD_BOUND || !p->terminating || p->noticed || !p->preemptible ||
            !(e->pflags[i] & PF_MANAGED))
            continue;
        const struct acct *q = &e->q[p->queue];
        for (int r = 0; r < NRES; r++)
            if (p->request.v[r] > 0 && (r == GPU || p->request.v[GPU] <= 0) &&
                q->alloc0[r] > q->fs[r])
                e->damp = true;
        if (q->count &&
            fair_eng_eff_prio(e, &s->pods[e->order[q->first]]) > fair_eng_eff_prio(e, p))
            e->damp = true;
    }
}

/* Whether pod would fit on some node if that node were empty. */
static bool could_fit(const struct eng *e, const struct fair_pod *p)
{
    for (size_t r = 0; r < e->pl.nnodes; r++) {
        const struct fair_node *n = &e->s->nodes[e->pl.nodes[r].idx];
        bool room = true;
        for (int k = 0; k < NRES; k++)
            if (n->allocatable.v[k] < (k == GPU ? room_gpu(p) : p->request.v[k]))
                room = false;
        if (room && room_gpu(p) >= FAIR_GPU_DEVICE_MILLI &&
            p->request.v[GPU] / FAIR_GPU_DEVICE_MILLI > n->gpu_count)
            room = false;
        if (room && static_ok_pod(e, (int32_t)r, p))
            return true;
    }
    return false;
}

/* Whether pending pod p of queue qi may reclaim up to its queue's fair
 * share: the queue takes it back that far (FAIR_RECLAIM_FAIR_SHARE), stays
 * within its fair share with the pod, and is below it by at least the
 * snapshot's threshold (a share of the fair share: the hysteresis), counted
 * before this cycle's reservations. Judged like entitled(). *held says that
 * only the hysteresis stood in the way. */
static bool entitled_fair_share(const struct eng *e, int32_t qi, const struct fair_pod *p,
                                bool *held)
{
    const struct fair_snapshot *s = e->s;
    const struct acct *q = &e->q[qi];
    *held = false;
    if (s->queues[qi].reclaim_up_to != FAIR_RECLAIM_FAIR_SHARE)
        return false;
    /* Beyond the guarantee, only pods that may borrow (lendMaxRuntime). */
    if (!fair_eng_lendable(s, p) && q->live[GPU] + q->resv[GPU] + p->request.v[GPU] > q->g[GPU])
        return false;
    bool any = false;
    for (int r = 0; r < NRES; r++) {
        int64_t req = p->request.v[r];
        if (req <= 0 || (p->request.v[GPU] > 0 && r != GPU))
            continue;
        if (q->live[r] + q->resv[r] + req > q->fs[r])
            return false;
        /* The gap before this cycle's reservations: once a queue is far
         * enough below its share, the cycle closes the whole gap. */
        int64_t gap = q->fs[r] - q->live[r];
        int64_t band = (int64_t)((i128)q->fs[r] * r_or0(s->over_quota_threshold_pct) / 100);
        if (gap < band) {
            *held = true;
            return false;
        }
        any = true;
    }
    return any;
}

/* Whether some pod that reclaim up to the fair share could take, but for
 * its short run time, sits on a queue other than qi above its fair share:
 * then a pod owed room is held back, not without a victim. Counted once
 * per cycle in build_victims (young, young_total). */
static bool young_victims(const struct eng *e, int32_t qi)
{
    return e->young_total - e->q[qi].young > 0;
}

/* Whether pod pi may get a new hold this cycle: holds are on, its queue
 * has none new yet, it holds none, and it is not cooling down after one
 * (after a hold times out, as long again without one). */
static bool may_hold(const struct eng *e, int32_t pi)
{
    const struct fair_snapshot *s = e->s;
    const struct fair_pod *p = &s->pods[pi];
    if (s->hold_timeout_ms <= 0 || e->q[p->queue].held || e->hold_of[pi] >= 0)
        return false;
    return !(p->hold_since_ms > 0 && s->now_ms - p->hold_since_ms < 2 * s->hold_timeout_ms);
}

/* Holds a node for pod pi (owed room that no node has now, though an
 * emptied one would): the node that fits it statically with the most room
 * free or held by victims, ties by rank. Nothing else binds or reclaims
 * there while the hold lasts (snapshot.hold_timeout_ms). At most one new
 * hold per queue and cycle. Returns whether one was made. */
static bool hold_node_for(struct eng *e, int32_t pi)
{
    const struct fair_snapshot *s = e->s;
    const struct fair_pod *p = &s->pods[pi];
    struct acct *q = &e->q[p->queue];
    if (!may_hold(e, pi))
        return false;
    int32_t best = -1;
    int64_t best_room = -1;
    for (size_t r = 0; r < e->pl.nnodes; r++) {
        const struct fair_pnode *pn = &e->pl.nodes[r];
        const struct fair_node *n = &s->nodes[pn->idx];
        if (!pn->ok || e->hold[r] || !static_ok_pod(e, (int32_t)r, p))
            continue;
        bool room = true;
        for (int k = 0; k < NRES; k++)
            if (n->allocatable.v[k] < (k == GPU ? room_gpu(p) : p->request.v[k]))
                room = false;
        if (!room || (room_gpu(p) >= FAIR_GPU_DEVICE_MILLI &&
                      p->request.v[GPU] / FAIR_GPU_DEVICE_MILLI > n->gpu_count))
            continue;
        int64_t free_room = pn->ffree[GPU] + e->vsum[r][GPU];
        if (free_room > best_room) {
            best_room = free_room;
            best = (int32_t)r;
        }
    }
    if (best < 0)
        return false;
    e->hold[best] = p;
    e->hold_of[pi] = best;
    q->held = true;
    e->res->hold_node[pi] = e->pl.nodes[best].idx;
    e->res->hold_since_ms[pi] = s->now_ms;
    return true;
}

/* Nodes held by earlier cycles (pod.hold_node, hold_since_ms): kept while
 * the pod is pending and valid and the hold has not timed out; the first
 * claimant in admission order wins a node claimed twice. A hold that timed
 * out keeps its start in the result, so that the cooldown is known. */
void fair_eng_apply_holds(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    for (size_t k = 0; k < e->norder; k++) {
        int32_t pi = e->order[k];
        const struct fair_pod *p = &s->pods[pi];
        if (p->hold_since_ms <= 0)
            continue;
        bool live = s->hold_timeout_ms > 0 && s->now_ms - p->hold_since_ms < s->hold_timeout_ms;
        if (!live) {
            if (s->hold_timeout_ms > 0 && s->now_ms - p->hold_since_ms < 2 * s->hold_timeout_ms)
                e->res->hold_since_ms[pi] = p->hold_since_ms;
            continue;
        }
        if (p->hold_node < 0 || (size_t)p->hold_node >= s->nnodes)
            continue;
        int32_t rank = e->pl.rank_of[p->hold_node];
        if (!e->pl.nodes[rank].ok || e->hold[rank] || !static_ok_pod(e, rank, p))
            continue;
        e->hold[rank] = p;
        e->hold_of[pi] = rank;
        e->q[p->queue].held = true;
        e->res->hold_node[pi] = p->hold_node;
        e->res->hold_since_ms[pi] = p->hold_since_ms;
    }
}

int fair_eng_reclaim_phase(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int rc = build_victims(e);
    if (rc)
        return rc;

    /* Queues in admission order at the start of the phase. */
    fair_eng_heap_build(e);
    while (e->nheap) {
        int32_t qi = e->heap[0];
        e->heap[0] = e->heap[--e->nheap];
        if (e->nheap)
            fair_eng_heap_down(e, 0);
        struct acct *q = &e->q[qi];
        for (size_t k = 0; k < q->count; k++) {
            int32_t pi = e->order[q->first + k];
            if (k + PREFETCH_AHEAD < q->count)
                prefetch_pod(&s->pods[e->order[q->first + k + PREFETCH_AHEAD]]);
            const struct fair_pod *p = &s->pods[pi];
            uint8_t why = e->res->pending_reasons[pi];
            if (e->pflags[pi] & (PF_BOUND | PF_RESERVED))
                continue;
            if (e->pgang[pi] >= 0) {
                int32_t gi = e->pgang[pi];
                if (e->order[e->gangs[gi].leader] == pi && why == FAIR_PENDING_GANG_NO_FIT) {
                    rc = gang_reclaim(e, gi);
                    if (rc)
                        return rc;
                }
                continue;
            }
            if (why != FAIR_PENDING_NO_NODE_FITS && why != FAIR_PENDING_FAIR_SHARE)
                continue;
            struct search sr = {p, pi, qi, M_RECLAIM, {0}, false, false, -1, 0};
            bool found = false, owed = false, held = false;
            if (why == FAIR_PENDING_NO_NODE_FITS) {
                owed = entitled(e, qi, p) && !fair_eng_over(q->live, q->resv, p->request.v, q->fs);
                if (owed && pool_entitled(e, pi, false))
                    sr.pool = e->pmodel[pi];
                if (!owed && entitled_fair_share(e, qi, p, &held)) {
                    owed = true;
                    sr.fair_share = true;
                    if (pool_entitled(e, pi, true))
                        sr.pool = e->pmodel[pi];
                }
                if (owed) {
                    rc = search_for(e, &sr, &found);
                    if (rc)
                        return rc;
                }
            }
            bool fair_share = sr.fair_share;
            if (!found && q->has_victim && q->minvprio < fair_eng_eff_prio(e, p)) {
                sr.mode = M_PREEMPT;
                sr.fair_share = false;
                sr.pool = -1;
                for (int r = 0; r < NRES; r++) {
                    int64_t b = q->live[r] + q->resv[r] + p->request.v[r] - q->fs[r];
                    sr.budget[r] = b > 0 ? b : 0;
                }
                rc = search_for(e, &sr, &found);
                if (rc)
                    return rc;
            }
            if (found)
                continue;
            /* Owed room that no victim set frees now: say what holds the
             * reclaim back (victims too young, the hysteresis), or hold the
             * node an emptied one would be. */
            if ((owed && fair_share && young_victims(e, qi)) || held)
                e->res->pending_reasons[pi] = FAIR_PENDING_RECLAIM_HELD;
            else if (owed && (e->hold_of[pi] >= 0 || (!e->damp && may_hold(e, pi) &&
                                                      could_fit(e, p) && hold_node_for(e, pi))))
                e->res->pending_reasons[pi] = FAIR_PENDING_NODE_HELD;
        }
    }
    /* A hold lasts only while its pod waits for it: one that got room some
     * other way (room reserved) or is no longer owed any (its queue
     * reached its fair share, say) lets the node go, for pass 2 now and
     * for everyone next cycle. */
    fair_eng_release_holds(e, false);
    return 0;
}

bool fair_eng_release_holds(struct eng *e, bool bound_only)
{
    bool any = false;
    for (size_t pi = 0; pi < e->s->npods; pi++) {
        int32_t rank = e->hold_of[pi];
        if (rank < 0 || (bound_only ? !(e->pflags[pi] & PF_BOUND)
                                    : e->res->pending_reasons[pi] == FAIR_PENDING_NODE_HELD))
            continue;
        e->hold[rank] = NULL;
        e->hold_of[pi] = -1;
        e->res->hold_node[pi] = -1;
        e->res->hold_since_ms[pi] = 0;
        any = true;
    }
    e->holds_freed |= any;
    return any;
}

/* ---- running gangs as victim units ---------------------------------------
 *
 * A running gang is evicted whole or not at all: its bound, not terminating
 * members form one unit, counted with all their GPUs. An elastic gang (more
 * members running than its gang_size, the PodGroup's minMember) keeps its
 * gang_size oldest members as the core; the younger ones above it are its
 * extras: plain victims, first in victim order (they borrow above what the
 * job needs), taken one by one, so the gang never drops below gang_size by
 * them. The core is never a victim alone (is_victim); when no set of single
 * victims makes room, unit_search takes a whole unit (docs/engine.md,
 * "Running gangs"). */

struct gukey {
    int32_t queue;
    const char *gang;
    int64_t started;
    const char *uid;
    int32_t idx;
};

static int cmp_gukey(const void *pa, const void *pb)
{
    const struct gukey *a = pa, *b = pb;
    if (a->queue != b->queue)
        return a->queue < b->queue ? -1 : 1;
    int c = cmp_str(a->gang, b->gang);
    if (c)
        return c;
    if (a->started != b->started)
        return a->started < b->started ? -1 : 1; /* oldest first: the core */
    c = cmp_str(a->uid, b->uid);
    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Unit victim order, as the victim order: over-quota tiers, then the
 * highest member priority, then the least work lost, then the smallest
 * request, then the gang's key and queue. */
static int cmp_gunit(const void *pa, const void *pb)
{
    const struct gunit *a = pa, *b = pb;
    if (a->pprio != b->pprio)
        return a->pprio < b->pprio ? -1 : 1;
    if (a->qprio != b->qprio)
        return a->qprio < b->qprio ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    if (a->lost != b->lost)
        return a->lost < b->lost ? -1 : 1;
    for (int r = 0; r < NRES; r++)
        if (a->req[r] != b->req[r])
            return a->req[r] < b->req[r] ? -1 : 1;
    int c = cmp_str(a->gang, b->gang);
    if (c)
        return c;
    return (a->queue > b->queue) - (a->queue < b->queue);
}

/* Groups the running gang members by (queue, gang) into e->gunits, marks
 * each member core or extra, and sorts the units in unit victim order. */
static int build_gang_units(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    size_t n = 0;
    for (size_t i = 0; i < s->npods; i++)
        if (eng_running_gang_member(e, i))
            n++;
    if (!n)
        return 0;
    struct gukey *k = fair_calloc(n, sizeof(*k));
    e->gumem = fair_eng_calloc(e, n, sizeof(*e->gumem));
    e->gutmp = fair_eng_calloc(e, n, sizeof(*e->gutmp));
    e->gunits = fair_eng_calloc(e, n, sizeof(*e->gunits));
    if (!k || !e->gumem || !e->gutmp || !e->gunits) {
        fair_free(k);
        return FAIR_ENOMEM;
    }
    e->bytes += n * sizeof(*k);
    size_t nk = 0;
    for (size_t i = 0; i < s->npods; i++) {
        if (!eng_running_gang_member(e, i))
            continue;
        const struct fair_pod *p = &s->pods[i];
        k[nk++] = (struct gukey){p->queue, p->gang, p->started_ms, p->uid, (int32_t)i};
    }
    qsort(k, n, sizeof(*k), cmp_gukey);
    size_t nu = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int32_t size = 1;
        for (; j < n && k[j].queue == k[i].queue && cmp_str(k[j].gang, k[i].gang) == 0; j++)
            if (s->pods[k[j].idx].gang_size > size)
                size = s->pods[k[j].idx].gang_size;
        struct gunit *u = &e->gunits[nu++];
        const struct acct *q = &e->q[k[i].queue];
        *u = (struct gunit){.first = i,
                            .count = j - i,
                            .queue = k[i].queue,
                            .pprio = s->projects[q->parent].q.over_quota_priority,
                            .qprio = s->queues[k[i].queue].q.over_quota_priority,
                            .prio = s->pods[k[i].idx].priority,
                            .gang = k[i].gang,
                            .ok = true,
                            .old = true};
        for (size_t m = i; m < j; m++) {
            int32_t pi = k[m].idx;
            const struct fair_pod *p = &s->pods[pi];
            e->gumem[m] = pi;
            e->pflags[pi] |= m - i < (size_t)size ? PF_GANG_CORE : PF_GANG_EXTRA;
            for (int r = 0; r < NRES; r++)
                u->req[r] += p->request.v[r];
            int64_t l = lost_work(s, p);
            u->lost = u->lost > INT64_MAX / 2 - l ? INT64_MAX / 2 : u->lost + l;
            if (p->priority > u->prio)
                u->prio = p->priority;
            int64_t run = s->now_ms - p->started_ms;
            if (!p->preemptible || run < s->queues[p->queue].reclaim_min_runtime_ms)
                u->ok = false;
            if (run < s->over_quota_min_runtime_ms)
                u->old = false;
        }
        i = j;
    }
    e->ngunits = nu;
    qsort(e->gunits, nu, sizeof(*e->gunits), cmp_gunit);
    fair_free(k);
    return 0;
}

/* Whether unit u may go for sr. Its queue (and its project, when another
 * project's) must borrow: run above its fair share on GPU (on what it
 * requests, for a unit without GPU). strict: and stay at or above it
 * without the whole unit, all its GPUs counted. Otherwise the unit may take
 * its queue below its fair share: a gang larger than its queue's excess
 * goes whole or never, and "never" would let a gang keep borrowed GPUs for
 * good (the last unit taken from a borrower may take it below its share,
 * as Kueue's preemption does). */
static bool unit_may_go(const struct eng *e, const struct search *sr, const struct gunit *u,
                        bool strict)
{
    if (!u->ok || u->queue == sr->qi || (sr->fair_share && !u->old))
        return false;
    const struct acct *vq = &e->q[u->queue];
    int32_t vp = vq->parent;
    bool other_project = vp != e->q[sr->qi].parent;
    bool gpu_only = u->req[GPU] > 0, any = false;
    int64_t gone[NRES] = {0};
    for (size_t m = 0; m < u->count; m++) {
        int32_t pi = e->gumem[u->first + m];
        if (e->pflags[pi] & PF_EVICTED)
            continue;
        for (int r = 0; r < NRES; r++)
            gone[r] += e->s->pods[pi].request.v[r];
    }
    for (int r = 0; r < NRES; r++) {
        if ((gpu_only && r != GPU) || gone[r] <= 0)
            continue;
        int64_t floor_q = strict ? vq->fs[r] + gone[r] : vq->fs[r] + 1;
        int64_t floor_p = strict ? e->p[vp].fs[r] + gone[r] : e->p[vp].fs[r] + 1;
        if (vq->live[r] < floor_q || (other_project && e->p[vp].live[r] < floor_p))
            return false;
        any = true;
    }
    return any;
}

/* The node (lowest rank) where evicting unit u's members there makes room
 * for sr's pod, or -1. */
static int32_t unit_node(struct eng *e, const struct search *sr, const struct gunit *u)
{
    const struct fair_snapshot *s = e->s;
    int32_t best = -1;
    for (size_t m = 0; m < u->count; m++) {
        int32_t pi = e->gumem[u->first + m];
        if (e->pflags[pi] & PF_EVICTED)
            continue;
        int32_t rank = e->pl.rank_of[s->pods[pi].node];
        if ((best >= 0 && rank >= best) || !e->pl.nodes[rank].ok || held_by_other(e, sr, rank) ||
            !static_ok(e, sr, rank))
            continue;
        int nv = 0;
        for (size_t j = 0; j < u->count; j++) {
            int32_t pj = e->gumem[u->first + j];
            if (!(e->pflags[pj] & PF_EVICTED) && e->pl.rank_of[s->pods[pj].node] == rank)
                e->gutmp[nv++] = pj;
        }
        int64_t short_by[NRES];
        uint64_t mask;
        if (fits_with(e, sr, rank, e->gutmp, nv, -1, short_by, &mask))
            best = rank;
    }
    return best;
}

/* Evicts every running member of unit u (on whatever node) and reserves
 * the room on node rank for sr's pod, as apply_trial does for one node. */
static int apply_unit(struct eng *e, const struct search *sr, const struct gunit *u, int32_t rank)
{
    const struct fair_snapshot *s = e->s;
    enum fair_evict_reason why = sr->fair_share ? FAIR_EVICT_FAIR_SHARE : FAIR_EVICT_RECLAIM;
    for (size_t m = 0; m < u->count; m++) {
        int32_t vi = e->gumem[u->first + m];
        if (e->pflags[vi] & PF_EVICTED)
            continue;
        const struct fair_pod *v = &s->pods[vi];
        int32_t vr = e->pl.rank_of[v->node];
        struct acct *vq = &e->q[v->queue], *vp = &e->p[vq->parent];
        if (!e->pl.nodes[vr].fdiff && e->pl.nodes[vr].ok)
            e->cand[e->ncand++] = vr;
        bool listed = !(e->pflags[vi] & PF_GANG_CORE); /* extras are in vsum */
        e->pflags[vi] |= PF_EVICTED;
        cap_move(e, vi, -1);
        pool_move(e, vi, -1);
        for (int r = 0; r < NRES; r++) {
            if (listed)
                e->vsum[vr][r] -= v->request.v[r];
            vq->live[r] -= v->request.v[r];
            vp->live[r] -= v->request.v[r];
            vq->evicted[r] += v->request.v[r];
            vp->evicted[r] += v->request.v[r];
        }
        fut_apply(e, vr, v, e->masks[vi], -1);
        struct fair_action a = {FAIR_ACTION_EVICT, vi, v->node, 0, why, sr->qi, sr->pi};
        int rc = fair_eng_add_action(e, &a);
        if (rc)
            return rc;
    }
    const struct fair_pnode *n = &e->pl.nodes[rank];
    uint64_t mask = 0;
    pick_fut(e, n, n->fdev, sr->pod, &mask);
    fut_apply(e, rank, sr->pod, mask, 1);
    e->masks[sr->pi] = mask;
    e->rrank[sr->pi] = rank;
    pool_reserve(e, sr->pi, rank, 1);
    struct acct *q = &e->q[sr->qi], *p = &e->p[q->parent];
    for (int r = 0; r < NRES; r++) {
        q->resv[r] += sr->pod->request.v[r];
        p->resv[r] += sr->pod->request.v[r];
    }
    e->pflags[sr->pi] |= PF_RESERVED;
    e->res->pending_reasons[sr->pi] = FAIR_PENDING_WAITING_RECLAIM;
    return 0;
}

/* Reclaim with whole running gangs, for a pod no set of single victims
 * makes room for: the first unit in unit victim order that may go while
 * its queue stays at or above its fair share and frees enough on one of
 * its nodes; else the first that may go at all (see unit_may_go). */
static int unit_search(struct eng *e, const struct search *sr, bool *found)
{
    *found = false;
    for (int strict = 1; strict >= 0; strict--)
        for (size_t ui = 0; ui < e->ngunits; ui++) {
            const struct gunit *u = &e->gunits[ui];
            if (!unit_may_go(e, sr, u, strict))
                continue;
            int32_t rank = unit_node(e, sr, u);
            if (rank < 0)
                continue;
            *found = true;
            return apply_unit(e, sr, u, rank);
        }
    return 0;
}
