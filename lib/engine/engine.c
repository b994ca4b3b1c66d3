/* The fair-share engine's cycle: validate the snapshot, compute fair shares
 * level by level, admit pending pods queue by queue (pass 1: within fair
 * share), reclaim and preempt for the pods that are owed room, then hand
 * out what is left (pass 2: work conserving). This file drives the steps;
 * each lives in its own file (see cycle.h). docs/engine.md explains each
 * rule. Pure: no I/O, clock or globals. */
#include "engine/engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "engine/cycle.h"
#include "engine/share.h"

void *fair_eng_calloc(struct eng *e, size_t n, size_t size)
{
    void *p = fair_calloc(n ? n : 1, size);
    if (p)
        e->bytes += (n ? n : 1) * size;
    return p;
}

int fair_eng_add_problem(struct eng *e, enum fair_problem_kind kind, enum fair_object_kind obj,
                         int32_t index, const char *fmt, ...)
{
    struct fair_result *r = e->res;
    if (r->nproblems >= MAX_PROBLEMS)
        return 0;
    size_t old = e->pcap;
    if (fair_grow((void **)&r->problems, &e->pcap, r->nproblems + 1, sizeof(*r->problems)))
        return FAIR_ENOMEM;
    e->bytes += (e->pcap - old) * sizeof(*r->problems);
    struct fair_problem *pr = &r->problems[r->nproblems++];
    memset(pr, 0, sizeof(*pr));
    pr->kind = kind;
    pr->object = obj;
    pr->index = index;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pr->message, sizeof(pr->message), fmt, ap);
    va_end(ap);
    return 0;
}

int fair_eng_add_action(struct eng *e, const struct fair_action *a)
{
    struct fair_result *r = e->res;
    size_t old = e->acap;
    if (fair_grow((void **)&r->actions, &e->acap, r->nactions + 1, sizeof(*r->actions)))
        return FAIR_ENOMEM;
    e->bytes += (e->acap - old) * sizeof(*r->actions);
    r->actions[r->nactions++] = *a;
    return 0;
}

static void eng_release(struct eng *e)
{
    if (e->pl_ready)
        fair_place_release(&e->pl);
    fair_free(e->node_ok);
    fair_free(e->pflags);
    fair_free(e->pgang);
    fair_free(e->gidx);
    fair_free(e->masks);
    fair_free(e->q);
    fair_free(e->p);
    fair_free(e->order);
    fair_free(e->gangs);
    fair_free(e->gmem);
    fair_free(e->heap);
    fair_free(e->vlist);
    fair_free(e->voff);
    fair_free(e->vrank);
    fair_free(e->vpos);
    fair_free(e->vict);
    fair_free(e->vwalk);
    fair_free(e->nplain);
    fair_free(e->fbrief);
    fair_free(e->cand);
    fair_free(e->clist);
    fair_free(e->nstamp);
    fair_free(e->vsum);
    fair_free(e->rrank);
    fair_free(e->qvlist);
    fair_free(e->qvoff);
    fair_free(e->hold);
    fair_free(e->hold_of);
    fair_free(e->gunits);
    fair_free(e->gumem);
    fair_free(e->gutmp);
    fair_free(e->nmodel);
    fair_free(e->pmodel);
    fair_free(e->qm);
    fair_free(e->pm);
}

int fair_engine_run(const struct fair_snapshot *snap, struct fair_result *result,
                    struct fair_error *err)
{
    struct eng e;
    int rc;
    memset(&e, 0, sizeof(e));
    if (!result)
        return fair_error_set(err, FAIR_EINVAL, "engine: result is NULL");
    memset(result, 0, sizeof(*result));
    if (!snap) {
        rc = fair_error_set(err, FAIR_EINVAL, "engine: snapshot is NULL");
        goto out;
    }
    e.s = snap;
    e.res = result;
    e.err = err;
    rc = fair_eng_check_indices(&e);
    if (rc)
        goto out;
    rc = FAIR_ENOMEM;
    e.node_ok = fair_eng_calloc(&e, snap->nnodes, sizeof(*e.node_ok));
    e.pflags = fair_eng_calloc(&e, snap->npods, sizeof(*e.pflags));
    e.pgang = fair_eng_calloc(&e, snap->npods, sizeof(*e.pgang));
    e.gidx = fair_eng_calloc(&e, snap->npods, sizeof(*e.gidx));
    e.masks = fair_eng_calloc(&e, snap->npods, sizeof(*e.masks));
    e.q = fair_eng_calloc(&e, snap->nqueues, sizeof(*e.q));
    e.p = fair_eng_calloc(&e, snap->nprojects, sizeof(*e.p));
    e.heap = fair_eng_calloc(&e, snap->nqueues, sizeof(*e.heap));
    result->queues = fair_eng_calloc(&e, snap->nqueues, sizeof(*result->queues));
    result->projects = fair_eng_calloc(&e, snap->nprojects, sizeof(*result->projects));
    result->pending_reasons = fair_eng_calloc(&e, snap->npods, sizeof(*result->pending_reasons));
    result->hold_node = fair_eng_calloc(&e, snap->npods, sizeof(*result->hold_node));
    result->hold_since_ms = fair_eng_calloc(&e, snap->npods, sizeof(*result->hold_since_ms));
    e.hold = fair_eng_calloc(&e, snap->nnodes, sizeof(*e.hold));
    e.hold_of = fair_eng_calloc(&e, snap->npods, sizeof(*e.hold_of));
    if (!e.node_ok || !e.pflags || !e.pgang || !e.gidx || !e.masks || !e.q || !e.p || !e.heap ||
        !result->queues || !result->projects || !result->pending_reasons || !result->hold_node ||
        !result->hold_since_ms || !e.hold || !e.hold_of)
        goto nomem;
    result->nqueues = snap->nqueues;
    result->nprojects = snap->nprojects;
    result->npods = snap->npods;
    for (size_t i = 0; i < snap->npods; i++) {
        e.pgang[i] = -1;
        e.hold_of[i] = -1;
        result->hold_node[i] = -1;
    }
    rc = fair_eng_check_objects(&e);
    if (rc)
        goto nomem;
    /* Pending reasons for pods the cycle will not look at. */
    for (size_t i = 0; i < snap->npods; i++) {
        const struct fair_pod *p = &snap->pods[i];
        if (p->state != FAIR_POD_PENDING)
            continue;
        if (p->queue < 0)
            result->pending_reasons[i] = FAIR_PENDING_UNKNOWN_QUEUE;
        else if (!(e.pflags[i] & PF_MANAGED))
            result->pending_reasons[i] = FAIR_PENDING_INVALID_QUEUE;
        else if (!(e.pflags[i] & PF_VALID))
            result->pending_reasons[i] = FAIR_PENDING_INVALID_POD;
    }
    fair_eng_compute_capacity(&e);
    rc = fair_eng_account_pods(&e);
    if (!rc)
        rc = fair_eng_compute_fair_share(&e);
    if (rc)
        goto nomem;
    rc = fair_eng_models_setup(&e);
    if (!rc)
        rc = fair_eng_models_fair_share(&e);
    if (rc)
        goto nomem;
    rc = fair_place_init(&e.pl, snap, e.node_ok, e.masks);
    if (rc)
        goto nomem;
    e.pl_ready = true;
    e.pl.hold = e.hold;
    e.bytes += e.pl.bytes;
    rc = fair_eng_build_order(&e);
    if (rc)
        goto nomem;
    fair_eng_compute_damp(&e);
    fair_eng_apply_holds(&e);
    rc = fair_eng_run_pass(&e, 1);
    if (rc)
        goto nomem;
    /* A holder that found room elsewhere in pass 1 lets its node go now:
     * the pods that pass 1 turned away, maybe from that node, try again
     * within their fair share before reclaim looks for victims for them. */
    if (fair_eng_release_holds(&e, true)) {
        fair_place_forget(&e.pl);
        rc = fair_eng_run_pass(&e, FAIR_ENG_PASS_RETRY);
        if (rc)
            goto nomem;
    }
    rc = fair_eng_reclaim_phase(&e);
    if (rc)
        goto nomem;
    fair_place_forget(&e.pl);
    rc = fair_eng_run_pass(&e, 2);
    if (rc)
        goto nomem;
    /* Pass 2 bound a holder elsewhere: its node goes out now too, by pass 2
     * again (each round lets at least one hold go, so this ends). */
    while (fair_eng_release_holds(&e, true)) {
        fair_place_forget(&e.pl);
        rc = fair_eng_run_pass(&e, 2);
        if (rc)
            goto nomem;
    }
    rc = fair_eng_figures(&e);
    if (!rc)
        rc = fair_eng_models_figures(&e);
    if (rc)
        goto nomem;
    result->mem_bytes = e.bytes;
    rc = 0;
    goto out;
nomem:
    rc = fair_error_set(err, FAIR_ENOMEM, "engine: out of memory");
out:
    eng_release(&e);
    if (rc)
        fair_result_release(result);
    return rc;
}

void fair_result_release(struct fair_result *result)
{
    if (!result)
        return;
    fair_free(result->actions);
    fair_free(result->queues);
    fair_free(result->projects);
    fair_free(result->pending_reasons);
    fair_free(result->hold_node);
    fair_free(result->hold_since_ms);
    fair_free(result->problems);
    fair_free(result->queue_models);
    fair_free(result->project_models);
    memset(result, 0, sizeof(*result));
}
