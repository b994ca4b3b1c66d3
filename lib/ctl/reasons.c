/* Pending reasons in words (see reasons.h). Messages start with the short
 * human reason ("over the limit: ...") and then give the figures. */
#include "ctl/reasons.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/quantity.h"
#include "engine/constraints.h"
#include "engine/placement.h"

const char *fair_ctl_why_reason(int why)
{
    if (why == FAIR_CTL_WHY_UNSCHEDULABLE)
        return "Unschedulable";
    if (why >= FAIR_CTL_WHY_CTL) {
        switch ((enum fair_ctl_reason)(why - FAIR_CTL_WHY_CTL)) {
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
        case FAIR_CTL_REASON_NONE:
            break;
        }
        return "Unschedulable";
    }
    switch ((enum fair_pending_reason)why) {
    case FAIR_PENDING_NONE:
        return "Scheduled";
    case FAIR_PENDING_UNKNOWN_QUEUE:
        return "UnknownQueue";
    case FAIR_PENDING_INVALID_QUEUE:
        return "InvalidQueue";
    case FAIR_PENDING_OVER_LIMIT:
        return "OverLimit";
    case FAIR_PENDING_OVER_GUARANTEE:
        return "OverGuarantee";
    case FAIR_PENDING_WAITING_RECLAIM:
        return "WaitingForReclaim";
    case FAIR_PENDING_NO_NODE_FITS:
        return "NoNodeFits";
    case FAIR_PENDING_GANG_INCOMPLETE:
        return "GangIncomplete";
    case FAIR_PENDING_GANG_NO_FIT:
        return "GangDoesNotFit";
    case FAIR_PENDING_FAIR_SHARE:
        return "FairShare";
    case FAIR_PENDING_INVALID_POD:
        return "InvalidPod";
    case FAIR_PENDING_RECLAIM_HELD:
        return "ReclaimHeldBack";
    case FAIR_PENDING_NODE_HELD:
        return "WaitingForHeldNode";
    case FAIR_PENDING_LENDING_KEPT:
        return "LendingLimit";
    }
    return "Unschedulable";
}

static void gpus(int64_t milli, char *out, size_t n)
{
    if (milli == FAIR_UNLIMITED)
        snprintf(out, n, "unlimited");
    else
        fair_milli_format(milli, out, n);
}

/* The problem the engine reported for queue q or its project, if any. */
static const char *queue_problem(const struct fair_ctl_snapshot *s, const struct fair_result *r,
                                 int32_t q)
{
    int32_t p = q >= 0 ? s->snap.queues[q].project : -1;
    for (size_t i = 0; i < r->nproblems; i++) {
        const struct fair_problem *pr = &r->problems[i];
        if (pr->kind != FAIR_PROBLEM_INVALID)
            continue;
        if ((pr->object == FAIR_OBJ_QUEUE && pr->index == q) ||
            (pr->object == FAIR_OBJ_PROJECT && pr->index == p))
            return pr->message;
    }
    return "see the queue's status";
}

/* The queue furthest above its fair share on GPU (allocated after the
 * cycle minus fair share), other than skip; -1 when none is above. */
static int32_t most_over(const struct fair_result *r, int32_t skip, int64_t *over)
{
    int32_t best = -1;
    *over = 0;
    for (size_t i = 0; i < r->nqueues; i++) {
        int64_t d =
            r->queues[i].allocated_after.v[FAIR_RES_GPU] - r->queues[i].fair_share.v[FAIR_RES_GPU];
        if ((int32_t)i != skip && d > *over) {
            *over = d;
            best = (int32_t)i;
        }
    }
    return best;
}

int fair_ctl_effective_why(const struct fair_ctl_snapshot *s, const struct fair_result *r,
                           size_t pod)
{
    int why = pod < r->npods ? r->pending_reasons[pod] : 0;
    const struct fair_pod *p = &s->snap.pods[pod];
    if (why != FAIR_PENDING_NO_NODE_FITS || p->queue < 0 || (size_t)p->queue >= r->nqueues)
        return why;
    const struct fair_share_status *qs = &r->queues[p->queue];
    int64_t g = p->request.v[FAIR_RES_GPU];
    int64_t after = qs->allocated_after.v[FAIR_RES_GPU] + (g > 0 ? g : 0);
    if (g > 0 && after <= qs->guaranteed.v[FAIR_RES_GPU] && s->nterminating > 0)
        return FAIR_PENDING_WAITING_RECLAIM;
    /* Quota holds it back (above both its guarantee and its fair share),
     * or a queue above its fair share holds the room (reclaim's job, as
     * the message says): no new node is asked for. */
    int64_t fs = qs->fair_share.v[FAIR_RES_GPU], over = 0;
    if (after > qs->guaranteed.v[FAIR_RES_GPU] && after > fs)
        return why;
    if (g > 0 && after <= fs && most_over(r, p->queue, &over) >= 0)
        return why;
    return FAIR_CTL_WHY_UNSCHEDULABLE;
}

/* A gang that can never start as it is: all its pods (gang_size of them,
 * each missing one counted like this pod, or spec.minResources when more)
 * ask for more GPUs than the cluster has, or than its queue's or project's
 * limit. Writes the message and returns true then. */
static bool gang_too_large(const struct fair_ctl_snapshot *s, const struct fair_result *r,
                           size_t pod, char *out, size_t n)
{
    const struct fair_pod *p = &s->snap.pods[pod];
    if (!p->gang || p->queue < 0)
        return false;
    int64_t need = 0;
    int32_t have = 0;
    for (size_t i = 0; i < s->snap.npods; i++) {
        const struct fair_pod *o = &s->snap.pods[i];
        if (o->gang && o->queue == p->queue && !o->terminating && !strcmp(o->gang, p->gang)) {
            need += o->request.v[FAIR_RES_GPU];
            have++;
        }
    }
    if (have < p->gang_size)
        need += (int64_t)(p->gang_size - have) * p->request.v[FAIR_RES_GPU];
    int32_t pg = s->pod_pg ? s->pod_pg[pod] : -1;
    if (pg >= 0 && s->podgroups[pg]->min_resources.v[FAIR_RES_GPU] > need)
        need = s->podgroups[pg]->min_resources.v[FAIR_RES_GPU];
    const struct fair_queue *q = &s->snap.queues[p->queue];
    const struct fair_quota *pq = q->project >= 0 ? &s->snap.projects[q->project].q : NULL;
    char a[32], b[32];
    gpus(need, a, sizeof a);
    if (need > r->capacity.v[FAIR_RES_GPU]) {
        gpus(r->capacity.v[FAIR_RES_GPU], b, sizeof b);
        snprintf(out, n,
                 "gang too large: the %d pods of gang %s ask for %s GPUs, more than the %s GPUs "
                 "the cluster has for Fairshare's queues; it cannot start until the cluster "
                 "grows or the gang shrinks (minMember / gang-size)",
                 p->gang_size, p->gang, a, b);
        return true;
    }
    const struct fair_quota *lim = q->q.limit.v[FAIR_RES_GPU] < need        ? &q->q
                                   : pq && pq->limit.v[FAIR_RES_GPU] < need ? pq
                                                                            : NULL;
    if (lim) {
        gpus(lim->limit.v[FAIR_RES_GPU], b, sizeof b);
        snprintf(out, n,
                 "gang too large: the %d pods of gang %s ask for %s GPUs, more than the limit "
                 "of %s %s (%s GPUs); it cannot start unless the limit grows or the gang "
                 "shrinks",
                 p->gang_size, p->gang, a, lim == &q->q ? "queue" : "project", lim->name, b);
        return true;
    }
    return false;
}

static void pending_message(const struct fair_ctl_snapshot *s, const struct fair_result *r,
                            size_t pod, char *out, size_t n);

/* Whether fractional pod p is kept off a device that has room for it by
 * the tenancy rule (docs/fractions.md, "Tenancy"): a bound fraction of
 * another tenant key sits on a device with at least p's request free. A
 * few such devices are looked at (each costs a pass over the pods). */
static bool tenancy_blocks(const struct fair_ctl_snapshot *s, const struct fair_pod *p)
{
    const int64_t dev_milli = FAIR_GPU_DEVICE_MILLI;
    int64_t g = p->request.v[FAIR_RES_GPU];
    if (g <= 0 || g >= dev_milli)
        return false;
    int32_t key = fair_place_tenant(&s->snap, p);
    int tried = 0;
    for (size_t i = 0; i < s->snap.npods && tried < 16; i++) {
        const struct fair_pod *c = &s->snap.pods[i];
        int64_t cg = c->request.v[FAIR_RES_GPU];
        if (c->state != FAIR_POD_BOUND || c->node < 0 || cg <= 0 || cg >= dev_milli ||
            !c->gpu_devices)
            continue;
        int32_t ck = fair_place_tenant(&s->snap, c);
        if (ck == key && key >= FAIR_TENANT_SHARED)
            continue;
        tried++;
        uint64_t bit = c->gpu_devices & -c->gpu_devices;
        int64_t used = 0;
        for (size_t j = 0; j < s->snap.npods; j++) {
            const struct fair_pod *o = &s->snap.pods[j];
            int64_t og = o->request.v[FAIR_RES_GPU];
            if (o->state == FAIR_POD_BOUND && o->node == c->node && (o->gpu_devices & bit) &&
                og > 0)
                used += og < dev_milli ? og : dev_milli;
        }
        if (dev_milli - used >= g)
            return true;
    }
    return false;
}

void fair_ctl_pending_message(const struct fair_ctl_snapshot *s, const struct fair_result *r,
                              size_t pod, char *out, size_t n)
{
    const struct fair_pod *p = &s->snap.pods[pod];
    int why = fair_ctl_effective_why(s, r, pod);
    if (why == FAIR_CTL_WHY_UNSCHEDULABLE)
        why = FAIR_PENDING_NO_NODE_FITS; /* the same message */
    if (n == 0)
        return;
    if (p->gang && why != FAIR_PENDING_NONE && why != FAIR_PENDING_WAITING_RECLAIM &&
        why != FAIR_PENDING_INVALID_POD && why != FAIR_PENDING_INVALID_QUEUE &&
        why != FAIR_PENDING_UNKNOWN_QUEUE && gang_too_large(s, r, pod, out, n))
        return;
    /* A PodGroup's members waiting past its scheduleTimeoutSeconds say so
     * first. */
    int32_t pg = s->pod_pg ? s->pod_pg[pod] : -1;
    const struct fair_kpodgroup *g = pg >= 0 ? s->podgroups[pg] : NULL;
    if (g && g->schedule_timeout_s > 0 && why != FAIR_PENDING_NONE &&
        s->snap.now_ms - g->meta.creation_ms >= g->schedule_timeout_s * 1000) {
        int w = snprintf(out, n,
                         "gang timed out: PodGroup %s/%s is still incomplete after its "
                         "scheduleTimeoutSeconds (%lld s); ",
                         g->meta.namespace_ ? g->meta.namespace_ : "", g->meta.name,
                         (long long)g->schedule_timeout_s);
        if (w >= 0 && (size_t)w < n)
            pending_message(s, r, pod, out + w, n - (size_t)w);
        return;
    }
    /* A spent budget (action overQuotaOnly) is said first: it is why the
     * project may not borrow. */
    int32_t pq = p->queue >= 0 ? s->snap.queues[p->queue].project : -1;
    const char *note = pq >= 0 && s->project_note ? s->project_note[pq] : NULL;
    if (note && (why == FAIR_PENDING_OVER_LIMIT || why == FAIR_PENDING_FAIR_SHARE ||
                 why == FAIR_PENDING_LENDING_KEPT)) {
        int w = snprintf(out, n, "%s; ", note);
        if (w >= 0 && (size_t)w < n)
            pending_message(s, r, pod, out + w, n - (size_t)w);
        return;
    }
    pending_message(s, r, pod, out, n);
}

/* Names (up to three, then "and others") the queues and projects other
 * than queue q whose lending limit keeps idle GPUs of their guarantee:
 * keep = guaranteed - lendable above what they hold. */
static void keepers(const struct fair_ctl_snapshot *s, const struct fair_result *r, int32_t q,
                    char *out, size_t n)
{
    size_t used = 0, named = 0, more = 0;
    out[0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        size_t count = pass ? r->nprojects : r->nqueues;
        for (size_t i = 0; i < count; i++) {
            const struct fair_share_status *st = pass ? &r->projects[i] : &r->queues[i];
            if (!pass && (int32_t)i == q)
                continue;
            int64_t keep = st->guaranteed.v[FAIR_RES_GPU] - st->lendable.v[FAIR_RES_GPU];
            if (keep <= 0 || st->allocated_after.v[FAIR_RES_GPU] >= keep)
                continue;
            const char *name = pass ? (i < s->snap.nprojects ? s->snap.projects[i].q.name : NULL)
                                    : (i < s->snap.nqueues ? s->snap.queues[i].q.name : NULL);
            if (!name)
                continue;
            if (named == 3) {
                more++;
                continue;
            }
            int w = snprintf(out + used, n - used, "%s%s %s", named ? ", " : "",
                             pass ? "project" : "queue", name);
            if (w < 0 || (size_t)w >= n - used)
                break;
            used += (size_t)w;
            named++;
        }
    }
    if (!named)
        snprintf(out, n, "the guarantee of a GPU model pool");
    else if (more && used + 12 < n)
        snprintf(out + used, n - used, " and others");
}

static void pending_message(const struct fair_ctl_snapshot *s, const struct fair_result *r,
                            size_t pod, char *out, size_t n)
{
    const struct fair_pod *p = &s->snap.pods[pod];
    int why = fair_ctl_effective_why(s, r, pod);
    if (why == FAIR_CTL_WHY_UNSCHEDULABLE)
        why = FAIR_PENDING_NO_NODE_FITS; /* the same message */
    int32_t qi = p->queue;
    const struct fair_queue *q = qi >= 0 ? &s->snap.queues[qi] : NULL;
    const struct fair_share_status *qs = qi >= 0 && (size_t)qi < r->nqueues ? &r->queues[qi] : NULL;
    const char *qname = q ? q->q.name : "?";
    char req[32], a[32], b[32];
    gpus(p->request.v[FAIR_RES_GPU], req, sizeof req);
    switch ((enum fair_pending_reason)why) {
    case FAIR_PENDING_NONE:
        snprintf(out, n, "scheduled");
        return;
    case FAIR_PENDING_UNKNOWN_QUEUE:
        snprintf(out, n, "unknown queue: the pod's queue does not exist");
        return;
    case FAIR_PENDING_INVALID_QUEUE:
        snprintf(out, n, "invalid queue: queue %s cannot be used: %s", qname,
                 queue_problem(s, r, qi));
        return;
    case FAIR_PENDING_OVER_LIMIT: {
        /* The queue's limit, else its project's. */
        const struct fair_quota *lim = q ? &q->q : NULL;
        const struct fair_share_status *ls = qs;
        const char *what = "queue";
        if (q && q->q.limit.v[FAIR_RES_GPU] == FAIR_UNLIMITED && q->project >= 0) {
            lim = &s->snap.projects[q->project].q;
            ls = (size_t)q->project < r->nprojects ? &r->projects[q->project] : NULL;
            what = "project";
        }
        if (lim && ls && lim->limit.v[FAIR_RES_GPU] != FAIR_UNLIMITED) {
            gpus(lim->limit.v[FAIR_RES_GPU], a, sizeof a);
            gpus(ls->allocated_after.v[FAIR_RES_GPU], b, sizeof b);
            snprintf(out, n,
                     "over the limit: %s %s may use at most %s GPUs and has %s; this pod asks "
                     "for %s",
                     what, lim->name, a, b, req);
        } else {
            snprintf(out, n,
                     "over the limit: queue %s or its project has reached a CPU, memory or GPU "
                     "limit; this pod asks for %s GPUs",
                     qname, req);
        }
        return;
    }
    case FAIR_PENDING_OVER_GUARANTEE:
        gpus(q ? q->q.guaranteed.v[FAIR_RES_GPU] : 0, a, sizeof a);
        gpus(qs ? qs->allocated_after.v[FAIR_RES_GPU] : 0, b, sizeof b);
        snprintf(out, n,
                 "over the guarantee: non-preemptible pods run only within guaranteed GPUs; "
                 "queue %s guarantees %s and has %s in use; this pod asks for %s",
                 qname, a, b, req);
        return;
    case FAIR_PENDING_WAITING_RECLAIM: {
        size_t evicting = 0;
        for (size_t i = 0; i < r->nactions; i++)
            if (r->actions[i].kind == FAIR_ACTION_EVICT && r->actions[i].for_pod == (int32_t)pod)
                evicting++;
        if (evicting)
            snprintf(out, n,
                     "waiting for reclaim: evicting %zu pod(s) of queues that borrowed GPUs, to "
                     "give queue %s back what it is owed",
                     evicting, qname);
        else
            snprintf(out, n,
                     "waiting for reclaim: pods of queues that borrowed GPUs are terminating, to "
                     "give queue %s back what it is owed",
                     qname);
        return;
    }
    case FAIR_PENDING_NO_NODE_FITS: {
        /* A required node affinity that no node matches is the cause,
         * whatever the room. */
        if (fair_cons_constrained(p)) {
            size_t match = 0; /* more nodes: the causes below */
            for (size_t i = 0; i < s->snap.nnodes; i++)
                if (fair_node_affinity_match(p->node_affinity, &s->snap.nodes[i]))
                    match++;
            if (match == 0) {
                snprintf(out, n,
                         "no node fits: no node matches the pod's required node affinity "
                         "(spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
                         "Execution)");
                return;
            }
            /* A resource no node has enough of, even empty. */
            for (size_t k = 0; k < p->nscalars; k++) {
                int64_t most = 0;
                for (size_t i = 0; i < s->snap.nnodes; i++)
                    for (size_t j = 0; j < s->snap.nodes[i].nscalars; j++)
                        if (!strcmp(s->snap.nodes[i].scalars[j].name, p->scalars[k].name) &&
                            s->snap.nodes[i].scalars[j].value > most)
                            most = s->snap.nodes[i].scalars[j].value;
                if (most < p->scalars[k].value) {
                    snprintf(out, n,
                             "no node fits: the pod asks for %" PRId64 " %s and no node has "
                             "more than %" PRId64,
                             p->scalars[k].value, p->scalars[k].name, most);
                    return;
                }
            }
            if (p->nscalars || p->nhost_ports) {
                snprintf(out, n,
                         "no node fits: no node has %s free GPUs together with the pod's CPU, "
                         "memory and other resources (%zu), free host ports (%zu), node "
                         "selector, node affinity and tolerations",
                         req, p->nscalars, p->nhost_ports);
                return;
            }
        }
        /* When the room is held by queues above their fair share while
         * this one is below its own, that is the cause to name. */
        int64_t over = 0;
        int32_t oq = qs ? most_over(r, qi, &over) : -1;
        if (oq >= 0 && p->request.v[FAIR_RES_GPU] > 0 &&
            qs->allocated_after.v[FAIR_RES_GPU] + p->request.v[FAIR_RES_GPU] <=
                qs->fair_share.v[FAIR_RES_GPU]) {
            const struct fair_share_status *os = &r->queues[oq];
            char c[32], d[32];
            gpus(os->allocated_after.v[FAIR_RES_GPU], a, sizeof a);
            gpus(os->fair_share.v[FAIR_RES_GPU], b, sizeof b);
            gpus(qs->allocated_after.v[FAIR_RES_GPU], c, sizeof c);
            gpus(qs->fair_share.v[FAIR_RES_GPU], d, sizeof d);
            snprintf(out, n,
                     "no free GPUs: queue %s is above its fair share (%s GPUs in use, fair share "
                     "%s) while queue %s is below its own (%s of %s); %s",
                     s->snap.queues[oq].q.name, a, b, qname, c, d,
                     q && q->reclaim_up_to == FAIR_RECLAIM_GUARANTEE
                         ? "this queue reclaims only up to its guarantee (spec.reclaimUpTo: "
                           "Guarantee), so it waits for those pods to finish"
                         : "no set of its pods on one node frees this pod's request yet; the "
                           "reclaim is tried again every cycle");
            return;
        }
        if (tenancy_blocks(s, p))
            snprintf(out, n,
                     "no node fits: the GPU devices with %s free hold fractions of other "
                     "projects, and fractions of different projects share no device unless "
                     "each of those projects sets spec.fractions.shareAcrossProjects "
                     "(docs/fractions.md, \"Tenancy\")",
                     req);
        else if (p->request.v[FAIR_RES_GPU] > 0 &&
                 p->request.v[FAIR_RES_GPU] < FAIR_GPU_DEVICE_MILLI)
            snprintf(out, n,
                     "no node fits: no GPU device has %s free on a node that matches the pod's "
                     "node selector, tolerations and CPU/memory request",
                     req);
        else
            snprintf(out, n,
                     "no node fits: no node has %s free GPUs together with the pod's CPU and "
                     "memory request, node selector and tolerations",
                     req);
        return;
    }
    case FAIR_PENDING_RECLAIM_HELD: {
        int64_t over = 0;
        int32_t oq = most_over(r, qi, &over);
        gpus(qs ? qs->allocated_after.v[FAIR_RES_GPU] : 0, a, sizeof a);
        gpus(qs ? qs->fair_share.v[FAIR_RES_GPU] : 0, b, sizeof b);
        int64_t fs = qs ? qs->fair_share.v[FAIR_RES_GPU] : 0;
        int64_t gap = qs ? fs - qs->allocated_after.v[FAIR_RES_GPU] : 0;
        bool band = gap < fs * s->snap.over_quota_threshold_pct / 100;
        snprintf(out, n,
                 "reclaim held back: queue %s is below its fair share (%s of %s GPUs)%s%s%s, "
                 "but %s",
                 qname, a, b, oq >= 0 ? " and queue " : "",
                 oq >= 0 ? s->snap.queues[oq].q.name : "", oq >= 0 ? " is above its own" : "",
                 band ? "by less than the reclaim threshold (reclaim.overQuotaThreshold), so "
                        "nothing is evicted for it"
                      : "the pods that could make room have run less than "
                        "reclaim.overQuotaMinRuntime; they are reclaimed once they have");
        return;
    }
    case FAIR_PENDING_NODE_HELD: {
        int32_t node = pod < r->npods && r->hold_node ? r->hold_node[pod] : -1;
        const char *nn =
            node >= 0 && (size_t)node < s->snap.nnodes ? s->snap.nodes[node].name : "?";
        snprintf(out, n,
                 "waiting for node %s, held for this pod: no node has %s GPUs free and no set "
                 "of borrowed pods frees them, so no other pod is placed on %s until it has "
                 "room for this one (at most reservation.timeout)%s",
                 nn, req, nn,
                 tenancy_blocks(s, p)
                     ? "; the GPU devices with that much free hold fractions of other projects, "
                       "which share no device with this project's (docs/fractions.md, "
                       "\"Tenancy\")"
                     : "");
        return;
    }
    case FAIR_PENDING_GANG_INCOMPLETE: {
        int32_t have = 0;
        for (size_t i = 0; i < s->snap.npods; i++)
            if (s->snap.pods[i].gang && p->gang && s->snap.pods[i].queue == p->queue &&
                strcmp(s->snap.pods[i].gang, p->gang) == 0)
                have++;
        snprintf(out, n, "gang incomplete: gang %s has %d of its %d pods", p->gang ? p->gang : "?",
                 have, p->gang_size);
        return;
    }
    case FAIR_PENDING_GANG_NO_FIT:
        snprintf(out, n, "gang does not fit: the %d pods of gang %s cannot all be placed at once",
                 p->gang_size, p->gang ? p->gang : "?");
        return;
    case FAIR_PENDING_FAIR_SHARE:
        if (s->snap.max_evictions > 0 && p->evictions >= s->snap.max_evictions) {
            /* The bound on evictions (docs/engine.md): not lent again. */
            gpus(qs ? qs->guaranteed.v[FAIR_RES_GPU] : 0, a, sizeof a);
            gpus(qs ? qs->allocated_after.v[FAIR_RES_GPU] : 0, b, sizeof b);
            snprintf(out, n,
                     "evicted %d times (reclaim.maxEvictions is %d): this pod is not lent GPUs "
                     "again; it runs only within queue %s's guarantee (%s GPUs, %s in use), "
                     "where it is not reclaimed again, or within the queue's fair share when "
                     "it guarantees no GPUs",
                     p->evictions, s->snap.max_evictions, qname, a, b);
            return;
        }
        if (s->snap.lend_max_runtime_ms > 0 && p->request.v[FAIR_RES_GPU] > 0 && qs &&
            qs->allocated_after.v[FAIR_RES_GPU] + p->request.v[FAIR_RES_GPU] >
                qs->guaranteed.v[FAIR_RES_GPU] &&
            p->checkpoint_interval_ms <= 0 &&
            (p->max_runtime_ms <= 0 || p->max_runtime_ms > s->snap.lend_max_runtime_ms)) {
            /* Not declared short enough to borrow (docs/engine.md). */
            gpus(qs ? qs->guaranteed.v[FAIR_RES_GPU] : 0, a, sizeof a);
            gpus(qs ? qs->allocated_after.v[FAIR_RES_GPU] : 0, b, sizeof b);
            snprintf(out, n,
                     "not lent GPUs: reclaim.lendMaxRuntime is %" PRId64
                     "s and this pod declares %s spec.activeDeadlineSeconds and no "
                     "fairshare.dev/checkpoint-interval; it runs only within queue %s's "
                     "guarantee (%s GPUs, %s in use)",
                     s->snap.lend_max_runtime_ms / 1000, p->max_runtime_ms > 0 ? "a longer" : "no",
                     qname, a, b);
            return;
        }
        gpus(qs ? qs->fair_share.v[FAIR_RES_GPU] : 0, a, sizeof a);
        gpus(qs ? qs->allocated_after.v[FAIR_RES_GPU] : 0, b, sizeof b);
        snprintf(out, n,
                 "at fair share: queue %s has %s GPUs in use and its fair share is %s; it gets "
                 "more when GPUs free up",
                 qname, b, a);
        return;
    case FAIR_PENDING_LENDING_KEPT: {
        char who[256];
        keepers(s, r, qi, who, sizeof who);
        gpus(qs ? qs->fair_share.v[FAIR_RES_GPU] : 0, a, sizeof a);
        gpus(qs ? qs->allocated_after.v[FAIR_RES_GPU] : 0, b, sizeof b);
        snprintf(out, n,
                 "lending limit: queue %s has %s GPUs in use and its fair share is %s, and the "
                 "GPUs free now are kept for %s: their owners lend only part of their guarantee "
                 "(spec.lendingLimit); it gets more when GPUs free up",
                 qname, b, a, who);
        return;
    }
    case FAIR_PENDING_INVALID_POD: {
        const char *m = "see the pod's annotations and requests";
        for (size_t i = 0; i < r->nproblems; i++)
            if (r->problems[i].object == FAIR_OBJ_POD && r->problems[i].index == (int32_t)pod)
                m = r->problems[i].message;
        snprintf(out, n, "invalid pod: %s", m);
        return;
    }
    }
    snprintf(out, n, "pending");
}

void fair_ctl_rejected_message(const struct fair_ctl_rejected *rj, char *out, size_t n)
{
    const char *head = "cannot be scheduled";
    switch (rj->reason) {
    case FAIR_CTL_REASON_UNKNOWN_QUEUE:
        head = "unknown queue";
        break;
    case FAIR_CTL_REASON_NAMESPACE_NOT_ALLOWED:
        head = "namespace not allowed";
        break;
    case FAIR_CTL_REASON_INVALID_QUEUE:
        head = "invalid queue";
        break;
    case FAIR_CTL_REASON_BAD_POD:
        head = "invalid pod";
        break;
    case FAIR_CTL_REASON_PODGROUP_NOT_FOUND:
        head = "PodGroup not found";
        break;
    case FAIR_CTL_REASON_BUDGET_EXHAUSTED:
        head = "budget exhausted";
        break;
    case FAIR_CTL_REASON_VOLUME:
        head = "volume not ready";
        break;
    case FAIR_CTL_REASON_NONE:
        break;
    }
    snprintf(out, n, "%s: %s", head, rj->message);
}

/* Phases: scheduler-plugins v1alpha1 has Pending, Scheduling, Running,
 * Unknown, Finished and Failed; Volcano v1beta1 Pending, Inqueue, Running,
 * Unknown and Completed (Inqueue is Volcano's admission step, which
 * Fairshare does not have). */
void fair_ctl_podgroup_status(const struct fair_kpodgroup *g, const struct fair_ctl_pg_count *n,
                              int32_t binds, struct fair_ctl_pg_status *out)
{
    int32_t min = g->min_member > 0 ? g->min_member : 1;
    int32_t scheduled = n->bound + binds;
    int32_t pods = n->pending + n->bound + n->succeeded + n->failed;
    memset(out, 0, sizeof *out);
    out->running = n->running;
    out->succeeded = n->succeeded;
    out->failed = n->failed;
    if (g->flavor == FAIR_KPG_VOLCANO) {
        if (n->succeeded >= min && scheduled == 0 && n->pending == 0)
            out->phase = "Completed";
        else if (scheduled + n->succeeded >= min)
            out->phase = "Running";
        else if (scheduled > 0)
            out->phase = "Unknown";
        else
            out->phase = "Pending";
        bool ok = !strcmp(out->phase, "Running") || !strcmp(out->phase, "Completed");
        out->cond_type = ok ? "Scheduled" : "Unschedulable";
        out->cond_reason = ok           ? "GangScheduled"
                           : pods < min ? "NotEnoughTasks"
                                        : "NotEnoughResources";
        return;
    }
    if (n->succeeded >= min)
        out->phase = "Finished";
    else if (n->failed > 0 && scheduled + n->succeeded < min)
        out->phase = "Failed";
    else if (n->running >= min)
        out->phase = "Running";
    else if (scheduled + n->succeeded >= min)
        out->phase = "Scheduling";
    else if (scheduled > 0)
        out->phase = "Unknown";
    else
        out->phase = "Pending";
}
