/* The engine's first step: indices out of range fail the call; every other
 * bad value becomes a problem and leaves its object out (docs/engine.md,
 * "Problems"). */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "engine/cycle.h"
#include "engine/share.h"

int fair_eng_check_indices(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    if ((s->nnodes && !s->nodes) || (s->nprojects && !s->projects) || (s->nqueues && !s->queues) ||
        (s->npods && !s->pods))
        return fair_error_set(e->err, FAIR_EINVAL,
                              "snapshot: an array is NULL but its count is not 0");
    if (s->nnodes > INT32_MAX / 2 || s->npods > INT32_MAX / 2 || s->nqueues > INT32_MAX / 2 ||
        s->nprojects > INT32_MAX / 2)
        return fair_error_set(e->err, FAIR_EINVAL, "snapshot: too many objects");
    for (size_t i = 0; i < s->nqueues; i++) {
        int32_t p = s->queues[i].project;
        if (p < -1 || (p >= 0 && (size_t)p >= s->nprojects))
            return fair_error_set(e->err, FAIR_EINVAL,
                                  "queue %zu (\"%s\"): project index %d out of range (0..%zu)", i,
                                  str_or(s->queues[i].q.name, "?"), p, s->nprojects);
    }
    for (size_t i = 0; i < s->npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        if (p->queue < -1 || (p->queue >= 0 && (size_t)p->queue >= s->nqueues))
            return fair_error_set(e->err, FAIR_EINVAL,
                                  "pod %zu (\"%s\"): queue index %d out of range (0..%zu)", i,
                                  str_or(p->name, "?"), p->queue, s->nqueues);
        if (p->state == FAIR_POD_BOUND && (p->node < 0 || (size_t)p->node >= s->nnodes))
            return fair_error_set(e->err, FAIR_EINVAL,
                                  "pod %zu (\"%s\"): bound to node index %d, out of range (0..%zu)",
                                  i, str_or(p->name, "?"), p->node, s->nnodes);
        if (p->state != FAIR_POD_BOUND && p->state != FAIR_POD_PENDING)
            return fair_error_set(e->err, FAIR_EINVAL, "pod %zu (\"%s\"): unknown state %d", i,
                                  str_or(p->name, "?"), (int)p->state);
    }
    return 0;
}

/* Checks one quota; returns 1 when valid, 0 when not (problem added), or
 * FAIR_ENOMEM. */
static int check_quota(struct eng *e, const struct fair_quota *q, enum fair_object_kind obj,
                       int32_t idx)
{
    const char *what = obj == FAIR_OBJ_PROJECT ? "project" : "queue";
    const char *name = str_or(q->name, "?");
    int rc;
    for (int r = 0; r < NRES; r++) {
        const char *rn = fair_res_name((enum fair_res)r);
        if (q->guaranteed.v[r] < 0 || q->guaranteed.v[r] > MAX_QTY) {
            rc = fair_eng_add_problem(
                e, FAIR_PROBLEM_INVALID, obj, idx,
                "%s \"%s\": guaranteed %s is %s (%lld); set it to 0 or more", what, name, rn,
                q->guaranteed.v[r] < 0 ? "negative" : "too large", (long long)q->guaranteed.v[r]);
            return rc ? rc : 0;
        }
        if (q->limit.v[r] < 0 || (q->limit.v[r] > MAX_QTY && q->limit.v[r] != FAIR_UNLIMITED)) {
            rc = fair_eng_add_problem(
                e, FAIR_PROBLEM_INVALID, obj, idx,
                "%s \"%s\": limit %s is %s (%lld); set it to 0 or more, or leave it "
                "out",
                what, name, rn, q->limit.v[r] < 0 ? "negative" : "too large",
                (long long)q->limit.v[r]);
            return rc ? rc : 0;
        }
    }
    /* Lending limits and GPU model quotas (issue 15). */
    for (int r = 0; r < NRES; r++)
        if ((q->lending_set & (1u << r)) &&
            (q->lending_limit.v[r] < 0 || q->lending_limit.v[r] > MAX_QTY)) {
            rc = fair_eng_add_problem(e, FAIR_PROBLEM_INVALID, obj, idx,
                                      "%s \"%s\": lendingLimit %s is out of range (%lld); set it "
                                      "to 0 or more, or leave it out",
                                      what, name, fair_res_name((enum fair_res)r),
                                      (long long)q->lending_limit.v[r]);
            return rc ? rc : 0;
        }
    if (q->nmodels > FAIR_MAX_GPU_MODELS || (q->nmodels && !q->models)) {
        rc = fair_eng_add_problem(e, FAIR_PROBLEM_INVALID, obj, idx,
                                  "%s \"%s\": %zu GPU models named; at most %d", what, name,
                                  q->nmodels, FAIR_MAX_GPU_MODELS);
        return rc ? rc : 0;
    }
    for (size_t i = 0; i < q->nmodels; i++) {
        const struct fair_model_quota *m = &q->models[i];
        const char *bad = NULL;
        if (!m->model || !m->model[0])
            bad = "has no model name";
        else if (m->guaranteed < 0 || m->guaranteed > MAX_QTY)
            bad = "guaranteed is out of range";
        else if (m->has_limit && (m->limit < 0 || m->limit > MAX_QTY))
            bad = "limit is out of range";
        else if (m->has_lending_limit && (m->lending_limit < 0 || m->lending_limit > MAX_QTY))
            bad = "lendingLimit is out of range";
        for (size_t j = 0; j < i && !bad; j++)
            if (cmp_str(q->models[j].model, m->model) == 0)
                bad = "is named twice";
        if (bad) {
            rc = fair_eng_add_problem(e, FAIR_PROBLEM_INVALID, obj, idx,
                                      "%s \"%s\": GPU model \"%s\" %s", what, name,
                                      str_or(m->model, ""), bad);
            return rc ? rc : 0;
        }
    }
    if (q->over_quota_weight <= 0 || q->over_quota_weight > MAX_QTY) {
        rc = fair_eng_add_problem(e, FAIR_PROBLEM_INVALID, obj, idx,
                                  "%s \"%s\": overQuotaWeight is %lld; it must be at least 1", what,
                                  name, (long long)q->over_quota_weight);
        return rc ? rc : 0;
    }
    return 1;
}

int fair_eng_check_objects(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int rc;
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct fair_node *n = &s->nodes[i];
        const char *name = str_or(n->name, "?");
        bool ok = true;
        if (n->gpu_count < 0 || n->gpu_count > FAIR_MAX_GPUS_PER_NODE) {
            rc = fair_eng_add_problem(
                e, FAIR_PROBLEM_INVALID, FAIR_OBJ_NODE, (int32_t)i,
                "node \"%s\": gpu_count %d is out of range (0..%d); node skipped", name,
                n->gpu_count, FAIR_MAX_GPUS_PER_NODE);
            ok = false;
        } else if (n->allocatable.v[GPU] != (int64_t)n->gpu_count * FAIR_GPU_DEVICE_MILLI) {
            rc = fair_eng_add_problem(
                e, FAIR_PROBLEM_INVALID, FAIR_OBJ_NODE, (int32_t)i,
                "node \"%s\": allocatable gpu %lld milli does not match gpu_count %d "
                "(want %lld); node skipped",
                name, (long long)n->allocatable.v[GPU], n->gpu_count,
                (long long)n->gpu_count * FAIR_GPU_DEVICE_MILLI);
            ok = false;
        } else {
            rc = 0;
            for (int r = 0; r < NRES && ok; r++)
                if (n->allocatable.v[r] < 0 || n->allocatable.v[r] > MAX_QTY) {
                    rc = fair_eng_add_problem(
                        e, FAIR_PROBLEM_INVALID, FAIR_OBJ_NODE, (int32_t)i,
                        "node \"%s\": allocatable %s is %s (%lld); node skipped", name,
                        fair_res_name((enum fair_res)r),
                        n->allocatable.v[r] < 0 ? "negative" : "too large",
                        (long long)n->allocatable.v[r]);
                    ok = false;
                }
        }
        if (rc)
            return rc;
        e->node_ok[i] = ok && !n->unschedulable;
    }
    for (size_t i = 0; i < s->nprojects; i++) {
        rc = check_quota(e, &s->projects[i].q, FAIR_OBJ_PROJECT, (int32_t)i);
        if (rc < 0)
            return rc;
        e->p[i].valid = rc == 1;
    }
    for (size_t i = 0; i < s->nqueues; i++) {
        const struct fair_queue *q = &s->queues[i];
        e->q[i].parent = q->project;
        rc = check_quota(e, &q->q, FAIR_OBJ_QUEUE, (int32_t)i);
        if (rc < 0)
            return rc;
        e->q[i].valid = rc == 1;
        if (!e->q[i].valid)
            continue;
        rc = 0;
        if (q->project < 0) {
            rc = fair_eng_add_problem(
                e, FAIR_PROBLEM_INVALID, FAIR_OBJ_QUEUE, (int32_t)i,
                "queue \"%s\": project \"%s\" is unknown; create the Project or fix "
                "spec.project",
                str_or(q->q.name, "?"), str_or(q->project_name, "?"));
            e->q[i].valid = false;
        } else if (!e->p[q->project].valid) {
            rc = fair_eng_add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_QUEUE, (int32_t)i,
                                      "queue \"%s\": its project \"%s\" is invalid",
                                      str_or(q->q.name, "?"),
                                      str_or(s->projects[q->project].q.name, "?"));
            e->q[i].valid = false;
        } else if (q->reclaim_min_runtime_ms < 0) {
            rc = fair_eng_add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_QUEUE, (int32_t)i,
                                      "queue \"%s\": reclaimMinRuntime is negative (%lld ms)",
                                      str_or(q->q.name, "?"), (long long)q->reclaim_min_runtime_ms);
            e->q[i].valid = false;
        }
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < s->npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        uint8_t f = PF_VALID;
        rc = 0;
        for (int r = 0; r < NRES && (f & PF_VALID); r++)
            if (p->request.v[r] < 0 || p->request.v[r] > MAX_QTY) {
                rc = fair_eng_add_problem(
                    e, FAIR_PROBLEM_INVALID, FAIR_OBJ_POD, (int32_t)i,
                    "pod %s/%s: %s request is %s (%lld)", str_or(p->namespace_, "?"),
                    str_or(p->name, "?"), fair_res_name((enum fair_res)r),
                    p->request.v[r] < 0 ? "negative" : "too large", (long long)p->request.v[r]);
                f = 0;
            }
        int64_t g = p->request.v[GPU];
        if ((f & PF_VALID) && !p->mig && g > FAIR_GPU_DEVICE_MILLI && g % FAIR_GPU_DEVICE_MILLI) {
            rc = fair_eng_add_problem(
                e, FAIR_PROBLEM_INVALID, FAIR_OBJ_POD, (int32_t)i,
                "pod %s/%s: gpu request %lld milli is neither a whole number of GPUs "
                "(a multiple of 1000) nor a fraction below 1000",
                str_or(p->namespace_, "?"), str_or(p->name, "?"), (long long)g);
            f = 0;
        }
        if (rc)
            return rc;
        if (p->queue >= 0 && e->q[p->queue].valid)
            f |= PF_MANAGED;
        e->pflags[i] = f;
    }
    return 0;
}
