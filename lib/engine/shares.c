/* Capacity, what each queue and project holds and asks, and fair shares
 * level by level (projects, then each project's queues), with share.c's
 * arithmetic (docs/engine.md, "Fair share"). */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "engine/cycle.h"
#include "engine/share.h"

int fair_eng_compute_capacity(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int64_t *cap = e->res->capacity.v;
    for (size_t i = 0; i < s->nnodes; i++)
        if (e->node_ok[i])
            for (int r = 0; r < NRES; r++)
                cap[r] = fair_sat_add(cap[r], s->nodes[i].allocatable.v[r]);
    for (size_t i = 0; i < s->nnodes; i++)
        if (e->node_ok[i] && s->nodes[i].mig_milli > 0)
            cap[GPU] = fair_sat_add(cap[GPU], s->nodes[i].mig_milli);
    for (size_t i = 0; i < s->npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        if (p->state != FAIR_POD_BOUND)
            continue;
        bool managed = e->pflags[i] & PF_MANAGED;
        bool on_ok = e->node_ok[p->node];
        if (managed == on_ok)
            continue;
        for (int r = 0; r < NRES; r++)
            cap[r] =
                fair_sat_add(cap[r], managed ? r_or0(p->request.v[r]) : -r_or0(p->request.v[r]));
    }
    for (int r = 0; r < NRES; r++)
        if (cap[r] < 0)
            cap[r] = 0;
    return 0;
}

struct npkey {
    int32_t queue;
    const char *gang;
    int32_t idx;
};

static int cmp_npkey(const void *pa, const void *pb)
{
    const struct npkey *a = pa, *b = pb;
    if (a->queue != b->queue)
        return a->queue < b->queue ? -1 : 1;
    int c = cmp_str(a->gang, b->gang);
    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* A running gang with a non-preemptible member is never a victim unit
 * (reclaim.c, build_gang_units), so every member of it is as good as
 * non-preemptible: its preemptible members count in their queue's and
 * project's running non-preemptible totals too, against the guarantee
 * that later non-preemptible pods must stay within. */
static int account_shielded_gangs(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    size_t n = 0;
    for (size_t i = 0; i < s->npods; i++)
        if (eng_running_gang_member(e, i))
            n++;
    if (n < 2)
        return 0;
    struct npkey *k = fair_calloc(n, sizeof(*k));
    if (!k)
        return FAIR_ENOMEM;
    size_t nk = 0;
    for (size_t i = 0; i < s->npods; i++)
        if (eng_running_gang_member(e, i))
            k[nk++] = (struct npkey){s->pods[i].queue, s->pods[i].gang, (int32_t)i};
    qsort(k, n, sizeof(*k), cmp_npkey);
    for (size_t i = 0, j; i < n; i = j) {
        bool shielded = false;
        for (j = i; j < n && k[j].queue == k[i].queue && cmp_str(k[j].gang, k[i].gang) == 0; j++)
            shielded |= !s->pods[k[j].idx].preemptible;
        if (!shielded)
            continue;
        struct acct *q = &e->q[k[i].queue], *pr = &e->p[q->parent];
        for (size_t m = i; m < j; m++) {
            const struct fair_pod *p = &s->pods[k[m].idx];
            if (!p->preemptible)
                continue; /* already counted */
            for (int r = 0; r < NRES; r++) {
                int64_t v = r_or0(p->request.v[r]);
                q->np[r] += v;
                pr->np[r] += v;
            }
        }
    }
    fair_free(k);
    return 0;
}

int fair_eng_account_pods(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    for (size_t i = 0; i < s->npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        if (!(e->pflags[i] & PF_MANAGED))
            continue;
        struct acct *q = &e->q[p->queue], *pr = &e->p[q->parent];
        bool bound = p->state == FAIR_POD_BOUND;
        if (!bound && !(e->pflags[i] & PF_VALID))
            continue;
        for (int r = 0; r < NRES; r++) {
            int64_t v = r_or0(p->request.v[r]);
            q->demand[r] = fair_sat_add(q->demand[r], v);
            if (bound) {
                q->alloc0[r] = fair_sat_add(q->alloc0[r], v);
                pr->alloc0[r] = fair_sat_add(pr->alloc0[r], v);
                if (!p->terminating) {
                    q->live[r] += v;
                    pr->live[r] += v;
                }
                if (!p->preemptible) {
                    q->np[r] += v;
                    pr->np[r] += v;
                }
            }
        }
        if (bound) {
            q->nrunning++;
            pr->nrunning++;
        } else {
            q->npending++;
            pr->npending++;
        }
    }
    for (size_t i = 0; i < s->nqueues; i++)
        memcpy(e->q[i].alloc, e->q[i].alloc0, sizeof(e->q[i].alloc));
    for (size_t i = 0; i < s->nprojects; i++)
        memcpy(e->p[i].alloc, e->p[i].alloc0, sizeof(e->p[i].alloc));
    return account_shielded_gangs(e);
}

int fair_eng_share_ws_init(struct eng *e, struct share_ws *w)
{
    const struct fair_snapshot *s = e->s;
    size_t n = s->nprojects > s->nqueues ? s->nprojects : s->nqueues;
    size_t k = n ? n : 1;
    w->n = n;
    w->ch = fair_calloc(k, sizeof(*w->ch));
    w->scratch = fair_calloc(1, FAIR_SHARE_SCRATCH(k));
    w->val = fair_calloc(k, sizeof(int64_t));
    w->out = fair_calloc(k, sizeof(int64_t));
    w->names = fair_calloc(k, sizeof(char *));
    w->ids = fair_calloc(k, sizeof(size_t));
    if (!w->ch || !w->scratch || !w->val || !w->out || !w->names || !w->ids) {
        fair_eng_share_ws_free(w);
        return FAIR_ENOMEM;
    }
    e->bytes += n * (sizeof(*w->ch) + 3 * sizeof(int64_t) + sizeof(size_t)) + FAIR_SHARE_SCRATCH(n);
    return 0;
}

void fair_eng_share_ws_free(struct share_ws *w)
{
    fair_free(w->ch);
    fair_free(w->scratch);
    fair_free(w->val);
    fair_free(w->out);
    fair_free(w->names);
    fair_free(w->ids);
    memset(w, 0, sizeof *w);
}

int fair_eng_compute_fair_share(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int rc = FAIR_ENOMEM;
    struct share_ws w;
    bool have_ws = fair_eng_share_ws_init(e, &w) == 0;
    struct fair_share_child *ch = w.ch;
    void *scratch = w.scratch;
    int64_t *val = w.val, *out = w.out;
    const char **names = w.names;
    size_t *ids = w.ids;
    int64_t *uw = NULL;
    if (!have_ws)
        goto out;
    const int64_t *cap = e->res->capacity.v;
    /* Project demand: the sum of its queues', capped by its limit. */
    for (size_t i = 0; i < s->nqueues; i++) {
        if (!e->q[i].valid)
            continue;
        struct acct *pr = &e->p[e->q[i].parent];
        for (int r = 0; r < NRES; r++) {
            int64_t d = e->q[i].demand[r];
            if (d > s->queues[i].q.limit.v[r])
                d = s->queues[i].q.limit.v[r];
            pr->demand[r] = fair_sat_add(pr->demand[r], d);
        }
    }
    for (size_t i = 0; i < s->nprojects; i++)
        for (int r = 0; r < NRES; r++) {
            e->p[i].lim[r] = s->projects[i].q.limit.v[r];
            if (e->p[i].demand[r] > e->p[i].lim[r])
                e->p[i].demand[r] = e->p[i].lim[r];
        }
    for (size_t i = 0; i < s->nqueues; i++)
        for (int r = 0; r < NRES; r++)
            e->q[i].lim[r] = s->queues[i].q.limit.v[r];
    /* Level 1: projects share the cluster. */
    size_t m = 0;
    for (size_t i = 0; i < s->nprojects; i++)
        if (e->p[i].valid)
            ids[m++] = i;
    /* Decayed usage scales the projects' over-quota weights (val and out
     * are free until the resource loop). */
    uw = fair_calloc(m ? m : 1, sizeof(int64_t));
    if (!uw)
        goto out;
    e->bytes += m * sizeof(int64_t);
    size_t uwn = m;
    for (size_t j = 0; j < m; j++) {
        val[j] = s->projects[ids[j]].q.over_quota_weight;
        out[j] = s->projects[ids[j]].usage;
    }
    fair_share_usage_weights(val, out, m, uw);
    for (int r = 0; r < NRES; r++) {
        i128 sum = 0;
        for (size_t j = 0; j < m; j++) {
            val[j] = quota_g(&s->projects[ids[j]].q, r);
            names[j] = s->projects[ids[j]].q.name;
            sum += val[j];
        }
        if (sum > cap[r]) {
            rc = fair_eng_add_problem(
                e, FAIR_PROBLEM_OVERCOMMITTED, FAIR_OBJ_CLUSTER, -1,
                "cluster: projects guarantee %lld %s in total but the cluster has "
                "%lld; guarantees are scaled down in proportion",
                (long long)sum, fair_res_name((enum fair_res)r), (long long)cap[r]);
            if (rc)
                goto out;
        }
        fair_share_scale(val, names, m, cap[r], out, scratch);
        for (size_t j = 0; j < m; j++) {
            const struct fair_quota *pq = &s->projects[ids[j]].q;
            struct acct *pa = &e->p[ids[j]];
            pa->g[r] = out[j];
            /* Lending limit: the part of the guarantee that may not be
             * lent is the project's even without demand. */
            pa->keep[r] = quota_keep(pq, r, out[j]);
            pa->lendable[r] = out[j] - pa->keep[r];
            ch[j] =
                (struct fair_share_child){pq->name,
                                          out[j],
                                          pa->demand[r] > pa->keep[r] ? pa->demand[r] : pa->keep[r],
                                          pq->limit.v[r],
                                          uw[j],
                                          pq->over_quota_priority,
                                          0};
        }
        fair_share_distribute(cap[r], ch, m, scratch);
        for (size_t j = 0; j < m; j++)
            e->p[ids[j]].fs[r] = ch[j].share;
    }
    /* Level 2: each project's queues share the project's fair share. */
    for (size_t pi = 0; pi < s->nprojects; pi++) {
        if (!e->p[pi].valid)
            continue;
        m = 0;
        for (size_t i = 0; i < s->nqueues; i++)
            if (e->q[i].valid && (size_t)e->q[i].parent == pi)
                ids[m++] = i;
        /* Decayed usage among the project's queues: the same rule as
         * among projects (docs/engine.md, "Decayed usage"); uw is free
         * again, grown to this project's queues. */
        bool qusage = false;
        for (size_t j = 0; j < m && !qusage; j++)
            qusage = s->queues[ids[j]].usage > 0;
        if (qusage && m > uwn) {
            int64_t *nuw = fair_realloc(uw, m * sizeof(int64_t));
            if (!nuw) {
                rc = FAIR_ENOMEM;
                goto out;
            }
            e->bytes += (m - uwn) * sizeof(int64_t);
            uw = nuw;
            uwn = m;
        }
        if (qusage) {
            for (size_t j = 0; j < m; j++) {
                val[j] = s->queues[ids[j]].q.over_quota_weight;
                out[j] = s->queues[ids[j]].usage;
            }
            fair_share_usage_weights(val, out, m, uw);
        }
        for (int r = 0; r < NRES; r++) {
            i128 sum = 0;
            for (size_t j = 0; j < m; j++) {
                val[j] = quota_g(&s->queues[ids[j]].q, r);
                names[j] = s->queues[ids[j]].q.name;
                sum += val[j];
            }
            int64_t pg = quota_g(&s->projects[pi].q, r);
            if (sum > pg) {
                rc = fair_eng_add_problem(
                    e, FAIR_PROBLEM_OVERCOMMITTED, FAIR_OBJ_PROJECT, (int32_t)pi,
                    "project \"%s\": its queues guarantee %lld %s in total, more "
                    "than the project's %lld; queue guarantees are scaled down",
                    str_or(s->projects[pi].q.name, "?"), (long long)sum,
                    fair_res_name((enum fair_res)r), (long long)pg);
                if (rc)
                    goto out;
            }
            fair_share_scale(val, names, m, e->p[pi].g[r], out, scratch);
            for (size_t j = 0; j < m; j++) {
                const struct fair_quota *qq = &s->queues[ids[j]].q;
                struct acct *qa = &e->q[ids[j]];
                qa->g[r] = out[j];
                qa->keep[r] = quota_keep(qq, r, out[j]);
                qa->lendable[r] = out[j] - qa->keep[r];
                ch[j] = (struct fair_share_child){qq->name,
                                                  out[j],
                                                  qa->demand[r] > qa->keep[r] ? qa->demand[r]
                                                                              : qa->keep[r],
                                                  qq->limit.v[r],
                                                  qusage ? uw[j] : qq->over_quota_weight,
                                                  qq->over_quota_priority,
                                                  0};
            }
            fair_share_distribute(e->p[pi].fs[r], ch, m, scratch);
            for (size_t j = 0; j < m; j++)
                e->q[ids[j]].fs[r] = ch[j].share;
        }
    }
    rc = 0;
out:
    fair_eng_share_ws_free(&w);
    fair_free(uw);
    return rc;
}
