/* Admission: pending pods ordered per queue, queues served from a heap by
 * how far below their fair share they are, limits and fair share checked,
 * nodes found; pass 1 within fair share, pass 2 for the leftovers
 * (docs/engine.md, "Admission order"). */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "engine/cycle.h"
#include "engine/share.h"

struct pkey {
    int32_t qrank;
    int64_t prio; /* priority, plus the aging boost */
    int64_t created;
    const char *uid;
    int32_t idx;
};

static int cmp_pkey(const void *pa, const void *pb)
{
    const struct pkey *a = pa, *b = pb;
    if (a->qrank != b->qrank)
        return a->qrank < b->qrank ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->created != b->created)
        return a->created < b->created ? -1 : 1;
    int c = cmp_str(a->uid, b->uid);
    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

struct nkey {
    const char *name;
    int32_t idx;
};

static int cmp_nkey(const void *pa, const void *pb)
{
    const struct nkey *a = pa, *b = pb;
    int c = cmp_str(a->name, b->name);
    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

struct gkey {
    int32_t queue;
    const char *gang;
    size_t pos; /* order position; SIZE_MAX for bound members */
    int32_t size;
};

static int cmp_gkey(const void *pa, const void *pb)
{
    const struct gkey *a = pa, *b = pb;
    if (a->queue != b->queue)
        return a->queue < b->queue ? -1 : 1;
    int c = cmp_str(a->gang, b->gang);
    if (c)
        return c;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* Largest aging boost: 2^40 - 1, far above any gap between two int32
 * priorities, so a pod that waits long enough passes every other. */
#define AGING_MAX_DOUBLINGS 40

int64_t fair_eng_aging_boost(int64_t wait_ms, int64_t half_life_ms)
{
    if (half_life_ms <= 0 || wait_ms <= 0)
        return 0;
    int64_t k = wait_ms / half_life_ms;
    if (k >= AGING_MAX_DOUBLINGS)
        return ((int64_t)1 << AGING_MAX_DOUBLINGS) - 1;
    int64_t step = (int64_t)1 << k;
    /* Linear between doublings: 2^k - 1 + 2^k * (wait mod h) / h. */
    return step - 1 + (int64_t)((i128)step * (wait_ms % half_life_ms) / half_life_ms);
}

int64_t fair_eng_eff_prio(const struct eng *e, const struct fair_pod *p)
{
    const struct fair_snapshot *s = e->s;
    int64_t pr = p->priority;
    if (p->queue < 0 || (size_t)p->queue >= s->nqueues)
        return pr;
    int64_t h = s->queues[p->queue].aging_half_life_ms;
    if (h <= 0)
        return pr;
    /* A pod just bound has no start time yet (started_ms is then its
     * creation): its wait ran until about now. */
    int64_t until =
        p->state == FAIR_POD_BOUND && p->started_ms > p->created_ms ? p->started_ms : s->now_ms;
    return pr + fair_eng_aging_boost(until - p->created_ms, h);
}

int fair_eng_build_order(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int rc = FAIR_ENOMEM;
    struct nkey *nk = NULL;
    struct pkey *pk = NULL;
    struct gkey *gk = NULL;
    nk = fair_calloc(s->nqueues ? s->nqueues : 1, sizeof(*nk));
    if (!nk)
        goto out;
    for (size_t i = 0; i < s->nqueues; i++)
        nk[i] = (struct nkey){s->queues[i].q.name, (int32_t)i};
    qsort(nk, s->nqueues, sizeof(*nk), cmp_nkey);
    for (size_t i = 0; i < s->nqueues; i++)
        e->q[nk[i].idx].rank = (int32_t)i;
    fair_free(nk);
    nk = fair_calloc(s->nprojects ? s->nprojects : 1, sizeof(*nk));
    if (!nk)
        goto out;
    for (size_t i = 0; i < s->nprojects; i++)
        nk[i] = (struct nkey){s->projects[i].q.name, (int32_t)i};
    qsort(nk, s->nprojects, sizeof(*nk), cmp_nkey);
    for (size_t i = 0; i < s->nprojects; i++)
        e->p[nk[i].idx].rank = (int32_t)i;

    size_t n = 0, ng = 0;
    for (size_t i = 0; i < s->npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        bool has_gang = p->gang && p->gang[0];
        if (!(e->pflags[i] & PF_MANAGED))
            continue;
        if (p->state == FAIR_POD_PENDING && (e->pflags[i] & PF_VALID))
            n++;
        if (has_gang)
            ng++;
    }
    pk = fair_calloc(n ? n : 1, sizeof(*pk));
    e->order = fair_eng_calloc(e, n, sizeof(*e->order));
    if (!pk || !e->order)
        goto out;
    e->bytes += n * sizeof(*pk);
    size_t k = 0;
    for (size_t i = 0; i < s->npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        if (!(e->pflags[i] & PF_MANAGED) || p->state != FAIR_POD_PENDING ||
            !(e->pflags[i] & PF_VALID))
            continue;
        int64_t prio = p->priority;
        int64_t h = s->queues[p->queue].aging_half_life_ms;
        if (h > 0)
            prio += fair_eng_aging_boost(s->now_ms - p->created_ms, h);
        pk[k++] = (struct pkey){e->q[p->queue].rank, prio, p->created_ms, p->uid, (int32_t)i};
    }
    qsort(pk, n, sizeof(*pk), cmp_pkey);
    for (size_t i = 0; i < n; i++) {
        e->order[i] = pk[i].idx;
        struct acct *q = &e->q[s->pods[pk[i].idx].queue];
        if (q->count == 0)
            q->first = i;
        q->count++;
    }
    e->norder = n;
    /* Gangs: members grouped by (queue, gang name). */
    if (ng) {
        gk = fair_calloc(ng, sizeof(*gk));
        e->gmem = fair_eng_calloc(e, ng, sizeof(*e->gmem));
        e->gangs = fair_eng_calloc(e, ng, sizeof(*e->gangs));
        if (!gk || !e->gmem || !e->gangs)
            goto out;
        e->bytes += ng * sizeof(*gk);
        k = 0;
        for (size_t i = 0; i < n; i++) {
            const struct fair_pod *p = &s->pods[e->order[i]];
            if (p->gang && p->gang[0])
                gk[k++] = (struct gkey){p->queue, p->gang, i, p->gang_size};
        }
        for (size_t i = 0; i < s->npods; i++) {
            const struct fair_pod *p = &s->pods[i];
            if ((e->pflags[i] & PF_MANAGED) && p->state == FAIR_POD_BOUND && p->gang && p->gang[0])
                gk[k++] = (struct gkey){p->queue, p->gang, SIZE_MAX, p->gang_size};
        }
        qsort(gk, k, sizeof(*gk), cmp_gkey);
        size_t nm = 0;
        for (size_t i = 0; i < k;) {
            size_t j = i;
            struct gang *g = &e->gangs[e->ngangs];
            memset(g, 0, sizeof(*g));
            g->first = nm;
            while (j < k && gk[j].queue == gk[i].queue && cmp_str(gk[j].gang, gk[i].gang) == 0) {
                if (gk[j].size > g->size)
                    g->size = gk[j].size;
                if (gk[j].pos == SIZE_MAX) {
                    g->nbound++;
                } else {
                    e->gmem[nm++] = gk[j].pos;
                    e->pgang[e->order[gk[j].pos]] = (int32_t)e->ngangs;
                    e->gidx[e->order[gk[j].pos]] = (int32_t)(nm - 1 - g->first);
                }
                j++;
            }
            g->count = nm - g->first;
            if (g->count) {
                g->leader = e->gmem[g->first];
                e->ngangs++;
            }
            i = j;
        }
    }
    rc = 0;
out:
    fair_free(nk);
    fair_free(pk);
    fair_free(gk);
    return rc;
}

/* ---- queue order (admission) ---------------------------------------- */

struct ratio fair_eng_ratio_of(int64_t num, int64_t den)
{
    struct ratio r = {num, den};
    if (num <= 0) {
        r.num = 0;
        r.den = 1;
    }
    return r;
}

int fair_eng_cmp_ratio(struct ratio a, struct ratio b)
{
    if (a.den == 0 || b.den == 0) {
        if (a.den == 0 && b.den == 0)
            return 0;
        return a.den == 0 ? 1 : -1;
    }
    i128 l = (i128)a.num * b.den, r = (i128)b.num * a.den;
    return (l > r) - (l < r);
}

/* Queue order: smallest allocated/fair-share ratio on GPU first, then on
 * the larger of the CPU and memory ratios, then name. */
static int cmp_queue(const struct eng *e, int32_t a, int32_t b)
{
    const struct acct *qa = &e->q[a], *qb = &e->q[b];
    int64_t ua[NRES], ub[NRES];
    for (int r = 0; r < NRES; r++) {
        ua[r] = qa->alloc[r] + qa->resv[r];
        ub[r] = qb->alloc[r] + qb->resv[r];
    }
    int c = fair_eng_cmp_ratio(fair_eng_ratio_of(ua[GPU], qa->fs[GPU]),
                               fair_eng_ratio_of(ub[GPU], qb->fs[GPU]));
    if (c)
        return c;
    struct ratio ma = fair_eng_ratio_of(ua[1], qa->fs[1]), mb = fair_eng_ratio_of(ub[1], qb->fs[1]);
    struct ratio x = fair_eng_ratio_of(ua[2], qa->fs[2]), y = fair_eng_ratio_of(ub[2], qb->fs[2]);
    if (fair_eng_cmp_ratio(x, ma) > 0)
        ma = x;
    if (fair_eng_cmp_ratio(y, mb) > 0)
        mb = y;
    c = fair_eng_cmp_ratio(ma, mb);
    if (c)
        return c;
    return (qa->rank > qb->rank) - (qa->rank < qb->rank);
}

void fair_eng_heap_down(struct eng *e, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < e->nheap && cmp_queue(e, e->heap[l], e->heap[m]) < 0)
            m = l;
        if (r < e->nheap && cmp_queue(e, e->heap[r], e->heap[m]) < 0)
            m = r;
        if (m == i)
            return;
        int32_t t = e->heap[i];
        e->heap[i] = e->heap[m];
        e->heap[m] = t;
        i = m;
    }
}

void fair_eng_heap_build(struct eng *e)
{
    e->nheap = 0;
    for (size_t i = 0; i < e->s->nqueues; i++) {
        e->q[i].cursor = 0;
        if (e->q[i].valid && e->q[i].count)
            e->heap[e->nheap++] = (int32_t)i;
    }
    for (size_t i = e->nheap; i-- > 0;)
        fair_eng_heap_down(e, i);
}

/* ---- admission ------------------------------------------------------ */

bool fair_eng_over(const int64_t *a, const int64_t *b, const int64_t *req, const int64_t *cap)
{
    for (int r = 0; r < NRES; r++)
        if (req[r] > 0 && fair_sat_add(fair_sat_add(a[r], b ? b[r] : 0), req[r]) > cap[r])
            return true;
    return false;
}

/* Non-preemptible pods stay within the guarantee: on GPU always, on CPU
 * and memory where something is guaranteed. */
static bool over_np(const struct acct *a, const int64_t *np_req)
{
    for (int r = 0; r < NRES; r++) {
        if (np_req[r] <= 0 || (r != GPU && a->g[r] <= 0))
            continue;
        if (a->np[r] + np_req[r] > a->g[r])
            return true;
    }
    return false;
}

/* Why req (np_req of it non-preemptible) cannot be admitted to queue qi,
 * or FAIR_PENDING_NONE. within_fs: pass 1 also keeps the queue within its
 * fair share. */
static enum fair_pending_reason admit_check(const struct eng *e, int32_t qi, const int64_t *req,
                                            const int64_t *np_req, bool within_fs)
{
    const struct acct *q = &e->q[qi], *p = &e->p[q->parent];
    if (fair_eng_over(q->alloc, q->resv, req, q->lim) ||
        fair_eng_over(p->alloc, p->resv, req, p->lim))
        return FAIR_PENDING_OVER_LIMIT;
    if (over_np(q, np_req) || over_np(p, np_req))
        return FAIR_PENDING_OVER_GUARANTEE;
    if (within_fs && fair_eng_over(q->alloc, q->resv, req, q->fs))
        return FAIR_PENDING_FAIR_SHARE;
    return FAIR_PENDING_NONE;
}

static void acct_add(struct eng *e, int32_t qi, const struct fair_pod *p, int sign)
{
    struct acct *q = &e->q[qi], *pr = &e->p[q->parent];
    for (int r = 0; r < NRES; r++) {
        int64_t v = sign * p->request.v[r];
        q->alloc[r] += v;
        pr->alloc[r] += v;
        q->live[r] += v;
        pr->live[r] += v;
        if (!p->preemptible) {
            q->np[r] += v;
            pr->np[r] += v;
        }
    }
}

static int bind_pod(struct eng *e, int32_t pi, int32_t rank, uint64_t mask)
{
    const struct fair_pod *p = &e->s->pods[pi];
    fair_place_commit_pod(&e->pl, rank, p, mask, 1);
    acct_add(e, p->queue, p, 1);
    fair_eng_models_bind(e, pi, e->pl.nodes[rank].idx, 1);
    e->pflags[pi] |= PF_BOUND;
    e->masks[pi] = mask;
    e->res->pending_reasons[pi] = FAIR_PENDING_NONE;
    struct fair_action a = {
        FAIR_ACTION_BIND, pi, e->pl.nodes[rank].idx, mask, FAIR_EVICT_NONE, -1, -1};
    return fair_eng_add_action(e, &a);
}

/* Whether pending gang member pi is one of its gang's elastic extras (a
 * member above the gang's size, beyond its unit) whose unit is bound (or
 * not needed: the gang already runs its size): then it is admitted like a
 * pod of its own, and may borrow like one (docs/engine.md, "Gangs"). */
static bool elastic_extra(const struct eng *e, int32_t gi, int32_t pi)
{
    const struct gang *g = &e->gangs[gi];
    size_t nu = gang_unit_count(g);
    if ((size_t)e->gidx[pi] < nu)
        return false;
    return nu == 0 || (e->pflags[e->order[g->leader]] & PF_BOUND);
}

/* Whether a pod evicted max_evictions times (in a queue with a GPU
 * guarantee) would take its queue above that guarantee with req: it runs
 * only within the guarantee, where reclaim never takes it again
 * (reclaim.c, capped), so the bound on evictions holds. The same for a pod
 * that may not borrow (fair_eng_lendable). */
static bool capped_over(const struct eng *e, const struct fair_pod *p, const int64_t *req)
{
    const struct acct *q = &e->q[p->queue];
    /* Not lendable also holds a pod of a queue without a GPU guarantee
     * (fair_eng_capped leaves those out): it then cannot start at all. */
    bool held = fair_eng_capped(e, p) || !fair_eng_lendable(e->s, p);
    return held && q->alloc[GPU] + q->resv[GPU] + req[GPU] > q->g[GPU];
}

/* Whether GPU pod p may borrow (run above its queue's GPU guarantee) under
 * snapshot.lend_max_runtime_ms: it declares a maximum run time of at most
 * that, or it checkpoints, so reclaim loses little of its work. */
bool fair_eng_lendable(const struct fair_snapshot *s, const struct fair_pod *p)
{
    if (s->lend_max_runtime_ms <= 0 || p->request.v[GPU] <= 0 || p->checkpoint_interval_ms > 0)
        return true;
    return p->max_runtime_ms > 0 && p->max_runtime_ms <= s->lend_max_runtime_ms;
}

/* Whether pod pi is tried again although pass 1 found no node for it (by
 * FAIR_ENG_PASS_RETRY, or pass 2, where it may since have got a hold of
 * its own, or been told that its reclaim waits for young victims): only
 * when a hold was let go after pass 1 (its node is then free for
 * everyone, and the pod may have found no room because that node was
 * held), and not for a pod that pass 1 held back behind a higher-priority
 * pod of its queue (the same NO_NODE_FITS). Without it the held node's
 * free room idles until the next cycle. */
static bool retry_nofit(const struct eng *e, int32_t pi)
{
    uint8_t why = e->res->pending_reasons[pi];
    if (!e->holds_freed || (e->pflags[pi] & (PF_NOFIT | PF_RESERVED)) != PF_NOFIT ||
        (why != FAIR_PENDING_NO_NODE_FITS && why != FAIR_PENDING_NODE_HELD &&
         why != FAIR_PENDING_RECLAIM_HELD))
        return false;
    const struct fair_pod *p = &e->s->pods[pi];
    const struct acct *q = &e->q[p->queue];
    return !(q->blocked && p->priority < q->block_prio);
}

/* Admits one pod, or a whole gang when pi leads one. pass 1 keeps within
 * fair share; pass 2 hands out what is left, checking the fut view. */
static int admit_unit(struct eng *e, int32_t pi, int pass, bool *admitted)
{
    const struct fair_snapshot *s = e->s;
    const struct fair_pod *p = &s->pods[pi];
    uint8_t *reason = &e->res->pending_reasons[pi];
    int64_t req[NRES] = {0}, np[NRES] = {0};
    *admitted = false;
    int32_t gi = e->pgang[pi];
    if (pass == FAIR_ENG_PASS_RETRY) {
        /* Pass 1 again, for the pods it found no room for only. */
        if ((gi >= 0 && !elastic_extra(e, gi, pi)) || !retry_nofit(e, pi))
            return 0;
        e->pflags[pi] &= (uint8_t)~PF_NOFIT;
        pass = 1;
    }
    if (gi < 0 || elastic_extra(e, gi, pi)) {
        bool retry = pass == 2 && retry_nofit(e, pi); /* within its fair share */
        if (pass == 2 && !retry &&
            ((e->pflags[pi] & (PF_NOFIT | PF_RESERVED)) || *reason != FAIR_PENDING_FAIR_SHARE))
            return 0;
        /* Evicted too often: it runs within its queue's fair share only. */
        if (pass == 2 && !retry && s->max_evictions > 0 && p->evictions >= s->max_evictions)
            return 0;
        memcpy(req, p->request.v, sizeof(req));
        if (!p->preemptible)
            memcpy(np, req, sizeof(np));
        enum fair_pending_reason why = admit_check(e, p->queue, req, np, pass == 1);
        if (!why && capped_over(e, p, req))
            why = FAIR_PENDING_FAIR_SHARE;
        if (!why &&
            (e->nm || (pass == 2 && e->keeps))) { /* model pools, lending limits (models.c) */
            int64_t mreq[FAIR_MAX_GPU_MODELS] = {0};
            fair_eng_models_req(e, p, mreq);
            why = fair_eng_models_check(e, p, req, mreq, pass);
        }
        if (why) {
            /* A retried pod too (reclaim may have reserved its queue's
             * room for another pod since pass 1), unless it holds a node,
             * which it keeps waiting for. */
            if (!(retry && *reason == FAIR_PENDING_NODE_HELD))
                *reason = (uint8_t)why;
            return 0;
        }
        struct acct *q = &e->q[p->queue];
        if (pass == 1 && q->blocked && p->priority < q->block_prio) {
            /* The room may be the higher-priority pod's once the wave is
             * gone: taking it now would only get this pod preempted. */
            *reason = FAIR_PENDING_NO_NODE_FITS;
            e->pflags[pi] |= PF_NOFIT;
            return 0;
        }
        uint64_t mask = 0;
        int32_t rank = -1;
        /* A pod with a held node takes it as soon as it fits there. */
        if (e->hold_of[pi] >= 0 &&
            fair_place_fits_node(&e->pl, e->hold_of[pi], p, &p->request, pass == 2, &mask))
            rank = e->hold_of[pi];
        enum fair_pending_reason mwhy = FAIR_PENDING_NONE;
        if (rank < 0)
            rank = fair_eng_models_place(e, p, pass, &mask, &mwhy);
        if (rank < 0 && mwhy) {
            /* No GPU model pool may take it now (models.c). */
            if (pass == 1)
                *reason = (uint8_t)mwhy;
            return 0;
        }
        if (rank < 0) {
            if (pass == 1) {
                *reason = FAIR_PENDING_NO_NODE_FITS;
                e->pflags[pi] |= PF_NOFIT;
                if (e->damp && (!q->blocked || p->priority > q->block_prio)) {
                    q->blocked = true;
                    q->block_prio = p->priority;
                }
            }
            return 0;
        }
        *admitted = true;
        return bind_pod(e, pi, rank, mask);
    }
    /* A gang: only its leader (first member in queue order) acts. */
    const struct gang *g = &e->gangs[gi];
    if (e->order[g->leader] != pi)
        return 0;
    if ((int64_t)g->count + g->nbound < g->size) {
        for (size_t j = 0; j < g->count; j++)
            e->res->pending_reasons[e->order[e->gmem[g->first + j]]] = FAIR_PENDING_GANG_INCOMPLETE;
        return 0;
    }
    if (pass == 2 && *reason != FAIR_PENDING_FAIR_SHARE)
        return 0;
    size_t nu = gang_unit_count(g); /* > 0: the leader is in the unit */
    for (size_t j = 0; j < nu && pass == 2 && s->max_evictions > 0; j++)
        if (s->pods[e->order[e->gmem[g->first + j]]].evictions >= s->max_evictions)
            return 0;
    bool shielded = false;
    for (size_t j = 0; j < nu; j++) {
        const struct fair_pod *m = &s->pods[e->order[e->gmem[g->first + j]]];
        shielded |= !m->preemptible;
        for (int r = 0; r < NRES; r++) {
            req[r] += m->request.v[r];
            if (!m->preemptible)
                np[r] += m->request.v[r];
        }
    }
    /* A non-preemptible member shields its whole unit from reclaim
     * (reclaim.c, unit_may_go): the unit is then non-preemptible as a
     * whole and starts only within the guarantee, so it never borrows
     * what could not be taken back. */
    if (shielded)
        memcpy(np, req, sizeof(np));
    enum fair_pending_reason why = admit_check(e, p->queue, req, np, pass == 1);
    if (!why && (e->nm || (pass == 2 && e->keeps))) { /* model pools, lending limits (models.c) */
        int64_t mreq[FAIR_MAX_GPU_MODELS] = {0};
        for (size_t j = 0; j < nu; j++)
            fair_eng_models_req(e, &s->pods[e->order[e->gmem[g->first + j]]], mreq);
        why = fair_eng_models_check(e, p, req, mreq, pass);
    }
    uint8_t before = *reason; /* every member's, from pass 1 */
    for (size_t j = 0; j < nu && !why; j++)
        if (capped_over(e, &s->pods[e->order[e->gmem[g->first + j]]], req))
            why = FAIR_PENDING_FAIR_SHARE;
    size_t placed = 0, nact = e->res->nactions;
    if (!why) {
        for (; placed < nu; placed++) {
            int32_t mi = e->order[e->gmem[g->first + placed]];
            const struct fair_pod *m = &s->pods[mi];
            uint64_t mask = 0;
            enum fair_pending_reason mwhy;
            int32_t rank = fair_eng_models_place(e, m, pass, &mask, &mwhy);
            if (rank < 0)
                break;
            int rc = bind_pod(e, mi, rank, mask);
            if (rc)
                return rc;
        }
        if (placed == nu) {
            *admitted = true;
            return 0;
        }
        /* Roll back the tentative binds. */
        for (size_t j = 0; j < placed; j++) {
            int32_t mi = e->order[e->gmem[g->first + j]];
            const struct fair_action *a = &e->res->actions[nact + j];
            fair_place_commit_pod(&e->pl, e->pl.rank_of[a->node], &s->pods[mi], a->gpu_devices, -1);
            acct_add(e, s->pods[mi].queue, &s->pods[mi], -1);
            fair_eng_models_bind(e, mi, a->node, -1);
            e->pflags[mi] &= (uint8_t)~PF_BOUND;
            /* bind_pod cleared its reason: pass 2 keeps pass 1's (below). */
            e->res->pending_reasons[mi] = before;
        }
        e->res->nactions = nact;
        fair_place_forget(&e->pl);
        why = FAIR_PENDING_GANG_NO_FIT;
    }
    if (pass == 1 || why != FAIR_PENDING_GANG_NO_FIT)
        for (size_t j = 0; j < g->count; j++)
            e->res->pending_reasons[e->order[e->gmem[g->first + j]]] = (uint8_t)why;
    return 0;
}

int fair_eng_run_pass(struct eng *e, int pass)
{
    fair_eng_heap_build(e);
    while (e->nheap) {
        int32_t qi = e->heap[0];
        struct acct *q = &e->q[qi];
        int32_t pi = e->order[q->first + q->cursor];
        q->cursor++;
        if (q->cursor + PREFETCH_AHEAD <= q->count)
            prefetch_pod(&e->s->pods[e->order[q->first + q->cursor + PREFETCH_AHEAD - 1]]);
        bool admitted = false;
        if (!(e->pflags[pi] & PF_BOUND)) {
            int rc = admit_unit(e, pi, pass, &admitted);
            if (rc)
                return rc;
        }
        /* The heap needs mending only when its top changed: a queue done,
         * or admitted pods (no other queue's key moves). */
        if (q->cursor >= q->count) {
            e->heap[0] = e->heap[--e->nheap];
            if (e->nheap)
                fair_eng_heap_down(e, 0);
        } else if (admitted) {
            fair_eng_heap_down(e, 0);
        }
    }
    return 0;
}
