/* GPU model pools and lending limits (docs/engine.md, "GPU model pools"
 * and "Lending limit").
 *
 * A pool is the set of nodes whose gpu_model is one name. Each pool is
 * shared out like the GPU total, level by level (projects, then each
 * project's queues), from the per-model quotas (fair_quota.models):
 * guarantee, limit, lending limit, with the weights and tiers of the
 * object. A bound pod counts in the pool of its node; a pending pod counts
 * in the pool it names (fair_pod.gpu_model) and nowhere else. Admission
 * keeps a pod that names a model within its queue's and project's model
 * limits and (pass 1) its queue's fair share of the pool; a GPU pod that
 * names no model may go to any pool within its queue's and project's
 * model limits, and in pass 1 only where the pool has room that no other
 * queue's named pods are owed. Pass 2 never hands out the part of a
 * guarantee that may not be lent (lendingLimit), in a pool or in total. */

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "engine/cycle.h"
#include "engine/share.h"

static int cmp_cstr(const void *a, const void *b)
{
    return cmp_str(*(const char *const *)a, *(const char *const *)b);
}

static int find_model(const struct eng *e, const char *name)
{
    if (!name || !name[0])
        return -1;
    for (size_t m = 0; m < e->nm; m++)
        if (strcmp(e->mname[m], name) == 0)
            return (int)m;
    return -1;
}

static const struct fair_model_quota *quota_model(const struct fair_quota *q, const char *name)
{
    for (size_t i = 0; i < q->nmodels && q->models; i++)
        if (cmp_str(q->models[i].model, name) == 0)
            return &q->models[i];
    return NULL;
}

/* Adds name to the pool list (sorted later); 1 when there was no room. */
static int add_name(const char **names, size_t *n, const char *name)
{
    if (!name || !name[0])
        return 0;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(names[i], name) == 0)
            return 0;
    if (*n >= FAIR_MAX_GPU_MODELS)
        return 1;
    names[(*n)++] = name;
    return 0;
}

static int64_t unused(int64_t keep, int64_t alloc)
{
    return keep > alloc ? keep - alloc : 0;
}

static struct macct *qma(const struct eng *e, size_t qi, size_t m)
{
    return &e->qm[qi * e->nm + m];
}

static struct macct *pma(const struct eng *e, size_t pi, size_t m)
{
    return &e->pm[pi * e->nm + m];
}

int fair_eng_models_setup(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    size_t n = 0;
    int over = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        over |= add_name(e->mname, &n, s->nodes[i].gpu_model);
    for (size_t i = 0; i < s->nprojects; i++)
        for (size_t k = 0; e->p[i].valid && k < s->projects[i].q.nmodels; k++)
            over |= add_name(e->mname, &n, s->projects[i].q.models[k].model);
    for (size_t i = 0; i < s->nqueues; i++)
        for (size_t k = 0; e->q[i].valid && k < s->queues[i].q.nmodels; k++)
            over |= add_name(e->mname, &n, s->queues[i].q.models[k].model);
    if (over) {
        int rc = fair_eng_add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_CLUSTER, -1,
                                      "cluster: more than %d GPU models; the others have no "
                                      "pool of their own",
                                      FAIR_MAX_GPU_MODELS);
        if (rc)
            return rc;
    }
    /* Pools exist only once a quota names a model: without one, nothing
     * changes for clusters that name models in node selectors only. */
    bool named = false;
    for (size_t i = 0; i < s->nprojects; i++)
        named |= e->p[i].valid && s->projects[i].q.nmodels > 0;
    for (size_t i = 0; i < s->nqueues; i++)
        named |= e->q[i].valid && s->queues[i].q.nmodels > 0;
    if (n == 0 || !named)
        return 0;
    qsort(e->mname, n, sizeof(e->mname[0]), cmp_cstr);
    e->nm = n;
    e->nmodel = fair_eng_calloc(e, s->nnodes, sizeof(*e->nmodel));
    e->pmodel = fair_eng_calloc(e, s->npods, sizeof(*e->pmodel));
    e->qm = fair_eng_calloc(e, s->nqueues * n, sizeof(*e->qm));
    e->pm = fair_eng_calloc(e, s->nprojects * n, sizeof(*e->pm));
    if (!e->nmodel || !e->pmodel || (s->nqueues && !e->qm) || (s->nprojects && !e->pm))
        return FAIR_ENOMEM;
    for (size_t i = 0; i < s->nnodes; i++) {
        int m = find_model(e, s->nodes[i].gpu_model);
        e->nmodel[i] = (int8_t)m;
        if (m >= 0 && e->node_ok[i])
            e->mcap[m] = fair_sat_add(e->mcap[m], s->nodes[i].allocatable.v[GPU]);
    }
    for (size_t i = 0; i < s->npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        bool bound = p->state == FAIR_POD_BOUND;
        /* MIG instances are in no model pool: the pools are made of the
         * nodes' nvidia.com/gpu devices. */
        int m = p->mig ? -1 : bound ? e->nmodel[p->node] : find_model(e, p->gpu_model);
        e->pmodel[i] = (int8_t)m;
        int64_t g = r_or0(p->request.v[GPU]);
        if (m < 0 || g == 0)
            continue;
        bool managed = e->pflags[i] & PF_MANAGED;
        if (bound) {
            /* As the capacity: what other schedulers hold is not shared
             * out; managed pods on closed nodes still count. */
            bool on_ok = e->node_ok[p->node];
            if (managed != on_ok)
                e->mcap[m] = fair_sat_add(e->mcap[m], managed ? g : -g);
        }
        if (!managed || (!bound && !(e->pflags[i] & PF_VALID)))
            continue;
        struct macct *q = qma(e, (size_t)p->queue, (size_t)m);
        struct macct *pr = pma(e, (size_t)e->q[p->queue].parent, (size_t)m);
        q->demand = fair_sat_add(q->demand, g);
        if (bound) {
            q->alloc0 += g;
            pr->alloc0 += g;
            e->mused[m] += g;
            if (!p->terminating) {
                q->live += g;
                pr->live += g;
            }
        }
    }
    for (size_t m = 0; m < n; m++)
        if (e->mcap[m] < 0)
            e->mcap[m] = 0;
    for (size_t i = 0; i < s->nqueues; i++)
        for (size_t m = 0; m < n; m++)
            qma(e, i, m)->alloc = qma(e, i, m)->alloc0;
    for (size_t i = 0; i < s->nprojects; i++)
        for (size_t m = 0; m < n; m++)
            pma(e, i, m)->alloc = pma(e, i, m)->alloc0;
    return 0;
}

/* One level of one pool: children (ids, quotas, accounts) share cap. */
static int pool_level(struct eng *e, size_t m, const size_t *ids, size_t k, bool queues,
                      int64_t gcap, int64_t cap, int32_t parent, struct fair_share_child *ch,
                      int64_t *val, int64_t *out, const char **names, void *scratch)
{
    const struct fair_snapshot *s = e->s;
    i128 sum = 0;
    for (size_t j = 0; j < k; j++) {
        const struct fair_quota *q = queues ? &s->queues[ids[j]].q : &s->projects[ids[j]].q;
        const struct fair_model_quota *mq = quota_model(q, e->mname[m]);
        val[j] = mq ? mq->guaranteed : 0;
        names[j] = q->name;
        sum += val[j];
    }
    if (sum > gcap) {
        int rc;
        if (queues)
            rc = fair_eng_add_problem(
                e, FAIR_PROBLEM_OVERCOMMITTED, FAIR_OBJ_PROJECT, parent,
                "project \"%s\": its queues guarantee %lld milli-GPU of model %s, more than the "
                "project's %lld; queue guarantees are scaled down",
                str_or(s->projects[parent].q.name, "?"), (long long)sum, e->mname[m],
                (long long)gcap);
        else
            rc = fair_eng_add_problem(e, FAIR_PROBLEM_OVERCOMMITTED, FAIR_OBJ_CLUSTER, -1,
                                      "cluster: projects guarantee %lld milli-GPU of model %s but "
                                      "its nodes have %lld; guarantees are scaled down in "
                                      "proportion",
                                      (long long)sum, e->mname[m], (long long)gcap);
        if (rc)
            return rc;
    }
    fair_share_scale(val, names, k, gcap, out, scratch);
    for (size_t j = 0; j < k; j++) {
        const struct fair_quota *q = queues ? &s->queues[ids[j]].q : &s->projects[ids[j]].q;
        const struct fair_model_quota *mq = quota_model(q, e->mname[m]);
        struct macct *a = queues ? qma(e, ids[j], m) : pma(e, ids[j], m);
        a->g = out[j];
        a->lim = mq && mq->has_limit ? mq->limit : FAIR_UNLIMITED;
        a->keep = mq && mq->has_lending_limit && mq->lending_limit < out[j]
                      ? out[j] - mq->lending_limit
                      : 0;
        a->lendable = out[j] - a->keep;
        a->quota = mq != NULL || (queues && pma(e, (size_t)parent, m)->quota);
        ch[j] = (struct fair_share_child){q->name,
                                          out[j],
                                          a->demand > a->keep ? a->demand : a->keep,
                                          a->lim,
                                          q->over_quota_weight,
                                          q->over_quota_priority,
                                          0};
    }
    fair_share_distribute(cap, ch, k, scratch);
    for (size_t j = 0; j < k; j++)
        (queues ? qma(e, ids[j], m) : pma(e, ids[j], m))->fs = ch[j].share;
    return 0;
}

int fair_eng_models_fair_share(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    for (size_t i = 0; i < s->nprojects; i++)
        for (int r = 0; r < NRES; r++)
            e->keep_r[r] |= e->p[i].valid && e->p[i].keep[r] > 0;
    for (size_t i = 0; i < s->nqueues; i++)
        for (int r = 0; r < NRES; r++)
            e->keep_r[r] |= e->q[i].valid && e->q[i].keep[r] > 0;
    for (int r = 0; r < NRES; r++)
        e->keeps |= e->keep_r[r];
    if (e->nm == 0)
        return 0;
    int rc = FAIR_ENOMEM;
    struct share_ws w;
    bool have_ws = fair_eng_share_ws_init(e, &w) == 0;
    struct fair_share_child *ch = w.ch;
    void *scratch = w.scratch;
    int64_t *val = w.val, *out = w.out;
    const char **names = w.names;
    size_t *ids = w.ids;
    if (!have_ws)
        goto out;
    /* Project demand per pool: its queues', each capped by the queue's
     * model limit, capped by the project's. */
    for (size_t i = 0; i < s->nqueues; i++) {
        if (!e->q[i].valid)
            continue;
        for (size_t m = 0; m < e->nm; m++) {
            const struct fair_model_quota *mq = quota_model(&s->queues[i].q, e->mname[m]);
            int64_t d = qma(e, i, m)->demand;
            if (mq && mq->has_limit && d > mq->limit)
                d = mq->limit;
            struct macct *pa = pma(e, (size_t)e->q[i].parent, m);
            pa->demand = fair_sat_add(pa->demand, d);
        }
    }
    for (size_t i = 0; i < s->nprojects; i++)
        for (size_t m = 0; m < e->nm; m++) {
            const struct fair_model_quota *mq = quota_model(&s->projects[i].q, e->mname[m]);
            if (mq && mq->has_limit && pma(e, i, m)->demand > mq->limit)
                pma(e, i, m)->demand = mq->limit;
        }
    size_t k = 0;
    for (size_t i = 0; i < s->nprojects; i++)
        if (e->p[i].valid)
            ids[k++] = i;
    for (size_t m = 0; m < e->nm; m++) {
        rc = pool_level(e, m, ids, k, false, e->mcap[m], e->mcap[m], -1, ch, val, out, names,
                        scratch);
        if (rc)
            goto out;
    }
    for (size_t pi = 0; pi < s->nprojects; pi++) {
        if (!e->p[pi].valid)
            continue;
        k = 0;
        for (size_t i = 0; i < s->nqueues; i++)
            if (e->q[i].valid && (size_t)e->q[i].parent == pi)
                ids[k++] = i;
        for (size_t m = 0; m < e->nm; m++) {
            rc = pool_level(e, m, ids, k, true, pma(e, pi, m)->g, pma(e, pi, m)->fs, (int32_t)pi,
                            ch, val, out, names, scratch);
            if (rc)
                goto out;
        }
    }
    for (size_t i = 0; i < s->nqueues; i++)
        for (size_t m = 0; m < e->nm && e->q[i].valid; m++)
            if (qma(e, i, m)->quota)
                e->mowed[m] += unused(qma(e, i, m)->fs, qma(e, i, m)->alloc);
    for (size_t i = 0; i < s->nqueues * e->nm; i++)
        e->keep_m[i % e->nm] |= e->q[i / e->nm].valid && e->qm[i].keep > 0;
    for (size_t i = 0; i < s->nprojects * e->nm; i++)
        e->keep_m[i % e->nm] |= e->p[i / e->nm].valid && e->pm[i].keep > 0;
    for (size_t m = 0; m < e->nm; m++)
        e->keeps |= e->keep_m[m];
    rc = 0;
out:
    fair_eng_share_ws_free(&w);
    return rc;
}

void fair_eng_models_req(const struct eng *e, const struct fair_pod *p, int64_t *mreq)
{
    if (e->nm == 0 || p->request.v[GPU] <= 0)
        return;
    int m = e->pmodel[p - e->s->pods];
    if (m >= 0)
        mreq[m] += p->request.v[GPU];
}

/* Room that others may not borrow in pool m (m < 0: total GPU, resource
 * r), seen from queue qi: the idle non-lendable guarantee of every other
 * project, and of the other queues of qi's project. */
static int64_t kept_for_others(const struct eng *e, int32_t qi, int m, int r)
{
    const struct fair_snapshot *s = e->s;
    int32_t pi = e->q[qi].parent;
    int64_t sum = 0;
    for (size_t i = 0; i < s->nprojects; i++) {
        if (!e->p[i].valid || (int32_t)i == pi)
            continue;
        sum += m < 0 ? unused(e->p[i].keep[r], e->p[i].alloc[r] + e->p[i].resv[r])
                     : unused(pma(e, i, (size_t)m)->keep, pma(e, i, (size_t)m)->alloc);
    }
    for (size_t i = 0; i < s->nqueues; i++) {
        if (!e->q[i].valid || e->q[i].parent != pi || (int32_t)i == qi)
            continue;
        sum += m < 0 ? unused(e->q[i].keep[r], e->q[i].alloc[r] + e->q[i].resv[r])
                     : unused(qma(e, i, (size_t)m)->keep, qma(e, i, (size_t)m)->alloc);
    }
    return sum;
}

static bool any_keep(const struct eng *e, int m, int r)
{
    return m < 0 ? e->keep_r[r] : e->keep_m[m];
}

/* Pass 2 takes no room that an idle non-lendable guarantee keeps. */
static bool over_kept(const struct eng *e, int32_t qi, int m, int r, int64_t req)
{
    if (req <= 0 || !any_keep(e, m, r))
        return false;
    int64_t used = 0, cap;
    if (m < 0) {
        for (size_t i = 0; i < e->s->nprojects; i++)
            if (e->p[i].valid)
                used += e->p[i].alloc[r] + e->p[i].resv[r];
        cap = e->res->capacity.v[r];
    } else {
        used = e->mused[m];
        cap = e->mcap[m];
    }
    return used + req + kept_for_others(e, qi, m, r) > cap;
}

enum fair_pending_reason fair_eng_models_check(const struct eng *e, const struct fair_pod *p,
                                               const int64_t *req, const int64_t *mreq, int pass)
{
    int32_t qi = p->queue;
    if (pass == 2)
        for (int r = 0; r < NRES; r++)
            if (over_kept(e, qi, -1, r, req[r]))
                return FAIR_PENDING_LENDING_KEPT;
    for (size_t m = 0; m < e->nm && mreq; m++) {
        if (mreq[m] <= 0)
            continue;
        const struct macct *q = qma(e, (size_t)qi, m);
        const struct macct *pr = pma(e, (size_t)e->q[qi].parent, m);
        if (q->alloc + mreq[m] > q->lim || pr->alloc + mreq[m] > pr->lim)
            return FAIR_PENDING_OVER_LIMIT;
        if (pass == 1 && q->quota && q->alloc + mreq[m] > q->fs)
            return FAIR_PENDING_FAIR_SHARE;
        if (pass == 2 && over_kept(e, qi, (int)m, GPU, mreq[m]))
            return FAIR_PENDING_LENDING_KEPT;
    }
    return FAIR_PENDING_NONE;
}

/* Room in pool m that other queues' named pods are owed: their fair share
 * of the pool above what they hold there. */
static int64_t owed_to_others(const struct eng *e, int32_t qi, size_t m)
{
    const struct macct *q = qma(e, (size_t)qi, m);
    return e->mowed[m] - (q->quota ? unused(q->fs, q->alloc) : 0);
}

int32_t fair_eng_models_place(struct eng *e, const struct fair_pod *p, int pass, uint64_t *mask,
                              enum fair_pending_reason *why)
{
    *why = FAIR_PENDING_NONE;
    int64_t g = p->request.v[GPU];
    if (e->nm == 0 || g <= 0 || p->mig || (p->gpu_model && p->gpu_model[0]))
        return fair_place_find(&e->pl, p, &p->request, pass == 2, mask);
    int32_t qi = p->queue;
    const struct macct *pr0 = pma(e, (size_t)e->q[qi].parent, 0);
    int64_t room[FAIR_MAX_GPU_MODELS];
    size_t allowed = 0, limited = 0, owed = 0;
    for (size_t m = 0; m < e->nm; m++) {
        const struct macct *q = qma(e, (size_t)qi, m), *pr = pr0 + m;
        room[m] = -1;
        if (q->alloc + g > q->lim || pr->alloc + g > pr->lim) {
            limited++;
            continue;
        }
        int64_t free = e->mcap[m] - e->mused[m];
        int64_t r =
            free - (pass == 1 ? owed_to_others(e, qi, m) : kept_for_others(e, qi, (int)m, GPU));
        if (r >= g) {
            room[m] = r;
            allowed++;
        } else if (free >= g) {
            owed++; /* room there, but others' */
        } else {
            room[m] = -2; /* full: reclaim may make room */
        }
    }
    if (allowed == e->nm)
        return fair_place_find(&e->pl, p, &p->request, pass == 2, mask);
    /* The allowed pools, the most room first (ties by name), each through
     * the placement as if the pod named it. */
    struct fair_pod copy = *p;
    for (size_t n = 0; n < allowed; n++) {
        int best = -1;
        for (size_t m = 0; m < e->nm; m++)
            if (room[m] >= 0 && (best < 0 || room[m] > room[best]))
                best = (int)m;
        room[best] = -1;
        copy.gpu_model = e->mname[best];
        int32_t rank = fair_place_find(&e->pl, &copy, &p->request, pass == 2, mask);
        if (rank >= 0)
            return rank;
    }
    if (owed)
        *why = FAIR_PENDING_FAIR_SHARE;
    else if (limited == e->nm)
        *why = FAIR_PENDING_OVER_LIMIT;
    /* Otherwise the pools it may use are full: NoNodeFits, and reclaim
     * may make room. */
    return -1;
}

void fair_eng_models_bind(struct eng *e, int32_t pi, int32_t node, int sign)
{
    const struct fair_pod *p = &e->s->pods[pi];
    if (e->nm == 0 || node < 0 || p->request.v[GPU] <= 0 || p->mig)
        return;
    int m = e->nmodel[node];
    if (m < 0)
        return;
    int64_t g = sign * p->request.v[GPU];
    struct macct *q = qma(e, (size_t)p->queue, (size_t)m);
    if (q->quota)
        e->mowed[m] -= unused(q->fs, q->alloc);
    q->alloc += g;
    if (q->quota)
        e->mowed[m] += unused(q->fs, q->alloc);
    pma(e, (size_t)e->q[p->queue].parent, (size_t)m)->alloc += g;
    e->mused[m] += g;
}

static void fill(struct fair_model_status *st, const struct macct *a, int64_t cap)
{
    st->capacity = cap;
    st->guaranteed = a->g;
    st->fair_share = a->fs;
    st->allocated = a->alloc0;
    st->demand = a->demand;
    st->borrowed = a->alloc0 > a->g ? a->alloc0 - a->g : 0;
    st->lendable = a->lendable;
}

/* lent per pool: the idle lendable guarantee, scaled down to what the
 * siblings borrow there (as figures.c does for the total). */
static void pool_lent(struct eng *e, struct fair_model_status *st, const struct macct *acc,
                      const struct acct *a, size_t n, const char *const *names, size_t m,
                      int64_t *idle, int64_t *out, void *scratch)
{
    i128 borrowed = 0;
    for (size_t i = 0; i < n; i++) {
        const struct macct *x = &acc[i * e->nm + m];
        int64_t held = x->alloc0 > x->keep ? x->alloc0 : x->keep;
        idle[i] = a[i].valid && x->g > held ? x->g - held : 0;
        if (a[i].valid)
            borrowed += st[i * e->nm + m].borrowed;
    }
    fair_share_scale(idle, names, n, borrowed > INT64_MAX ? INT64_MAX : (int64_t)borrowed, out,
                     scratch);
    for (size_t i = 0; i < n; i++)
        st[i * e->nm + m].lent = out[i];
}

int fair_eng_models_figures(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    struct fair_result *res = e->res;
    res->nmodels = e->nm;
    if (e->nm == 0)
        return 0;
    for (size_t m = 0; m < e->nm; m++)
        res->models[m] = e->mname[m];
    res->queue_models = fair_eng_calloc(e, s->nqueues * e->nm, sizeof(*res->queue_models));
    res->project_models = fair_eng_calloc(e, s->nprojects * e->nm, sizeof(*res->project_models));
    size_t n = s->nprojects > s->nqueues ? s->nprojects : s->nqueues;
    int64_t *idle = fair_calloc(n ? n : 1, sizeof(int64_t));
    int64_t *out = fair_calloc(n ? n : 1, sizeof(int64_t));
    const char **names = fair_calloc(n ? n : 1, sizeof(char *));
    void *scratch = fair_calloc(1, FAIR_SHARE_SCRATCH(n ? n : 1));
    int rc = FAIR_ENOMEM;
    if ((s->nqueues && !res->queue_models) || (s->nprojects && !res->project_models) || !idle ||
        !out || !names || !scratch)
        goto out;
    e->bytes += 3 * n * sizeof(int64_t) + FAIR_SHARE_SCRATCH(n);
    for (size_t i = 0; i < s->nqueues; i++) {
        names[i] = s->queues[i].q.name;
        for (size_t m = 0; m < e->nm; m++)
            fill(&res->queue_models[i * e->nm + m], qma(e, i, m), e->mcap[m]);
    }
    for (size_t m = 0; m < e->nm; m++)
        pool_lent(e, res->queue_models, e->qm, e->q, s->nqueues, names, m, idle, out, scratch);
    for (size_t i = 0; i < s->nprojects; i++) {
        names[i] = s->projects[i].q.name;
        for (size_t m = 0; m < e->nm; m++)
            fill(&res->project_models[i * e->nm + m], pma(e, i, m), e->mcap[m]);
    }
    for (size_t m = 0; m < e->nm; m++) {
        pool_lent(e, res->project_models, e->pm, e->p, s->nprojects, names, m, idle, out, scratch);
        struct fair_model_status *c = &res->cluster_models[m];
        c->capacity = c->fair_share = e->mcap[m];
        for (size_t i = 0; i < s->nprojects; i++) {
            if (!e->p[i].valid)
                continue;
            const struct fair_model_status *x = &res->project_models[i * e->nm + m];
            c->guaranteed += x->guaranteed;
            c->allocated += x->allocated;
            c->demand = fair_sat_add(c->demand, x->demand);
            c->borrowed += x->borrowed;
            c->lent += x->lent;
            c->lendable += x->lendable;
        }
    }
    rc = 0;
out:
    fair_free(idle);
    fair_free(out);
    fair_free(names);
    fair_free(scratch);
    return rc;
}
