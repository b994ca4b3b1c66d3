/* A small cluster builder for the engine's unit tests: nodes, projects,
 * queues and pods in fixed arrays, one engine run at a time, and a helper
 * that applies a cycle's actions the way the cluster would (binds become
 * BOUND; evicted pods become terminating, or are removed). */
#ifndef FAIR_TEST_ENGINE_FIXTURE_H
#define FAIR_TEST_ENGINE_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

#define TS_MAXN 64
#define TS_MAXP 16
#define TS_MAXQ 32
#define TS_MAXPODS 4096
#define TS_MAXSTR (TS_MAXPODS * 2 + 256)
#define GI ((int64_t)1 << 30)

struct ts {
    struct fair_node nodes[TS_MAXN];
    size_t nn;
    struct fair_project projects[TS_MAXP];
    size_t np;
    struct fair_queue queues[TS_MAXQ];
    size_t nq;
    struct fair_pod pods[TS_MAXPODS];
    size_t npods;
    char strs[TS_MAXSTR][48];
    size_t nstr;
    int64_t now;
    int64_t clock; /* creation times */
    enum fair_place_policy policy;
    /* Snapshot knobs (zero: the engine's defaults). */
    int32_t threshold_pct;
    int64_t oq_min_runtime;
    int32_t max_evictions;
    int64_t hold_timeout;
    int64_t lend_max_runtime;
    struct fair_result res;
    struct fair_error err;
};

__attribute__((unused)) static struct ts *ts_new(void)
{
    struct ts *t = calloc(1, sizeof(*t));
    if (!t)
        abort();
    t->now = 1000000;
    return t;
}

__attribute__((unused)) static void ts_free(struct ts *t)
{
    fair_result_release(&t->res);
    free(t);
}

__attribute__((unused)) static const char *ts_str(struct ts *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
__attribute__((unused)) static const char *ts_str(struct ts *t, const char *fmt, ...)
{
    if (t->nstr >= TS_MAXSTR)
        abort();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->strs[t->nstr], sizeof(t->strs[0]), fmt, ap);
    va_end(ap);
    return t->strs[t->nstr++];
}

__attribute__((unused)) static int ts_node(struct ts *t, const char *name, int gpus)
{
    struct fair_node *n = &t->nodes[t->nn];
    memset(n, 0, sizeof(*n));
    n->name = ts_str(t, "%s", name);
    n->gpu_model = "A100";
    n->gpu_count = gpus;
    n->allocatable.v[FAIR_RES_GPU] = (int64_t)gpus * 1000;
    n->allocatable.v[FAIR_RES_CPU] = 64000;
    n->allocatable.v[FAIR_RES_MEM] = 512 * GI;
    return (int)t->nn++;
}

__attribute__((unused)) static void ts_quota(struct fair_quota *q, const char *name, int64_t g_gpu,
                                             int64_t weight)
{
    memset(q, 0, sizeof(*q));
    q->name = name;
    q->guaranteed.v[FAIR_RES_GPU] = g_gpu;
    for (int r = 0; r < FAIR_RES_COUNT; r++)
        q->limit.v[r] = FAIR_UNLIMITED;
    q->over_quota_weight = weight;
}

__attribute__((unused)) static int ts_project(struct ts *t, const char *name, int64_t g_gpu,
                                              int64_t weight)
{
    ts_quota(&t->projects[t->np].q, ts_str(t, "%s", name), g_gpu, weight);
    return (int)t->np++;
}

__attribute__((unused)) static int ts_queue(struct ts *t, const char *name, int project,
                                            int64_t g_gpu, int64_t weight)
{
    struct fair_queue *q = &t->queues[t->nq];
    memset(q, 0, sizeof(*q));
    ts_quota(&q->q, ts_str(t, "%s", name), g_gpu, weight);
    q->project = project;
    q->project_name = project >= 0 ? t->projects[project].q.name : "missing";
    return (int)t->nq++;
}

/* A project with one queue of the same name; returns the queue. */
__attribute__((unused)) static int ts_team(struct ts *t, const char *name, int64_t g_gpu,
                                           int64_t weight)
{
    int p = ts_project(t, name, g_gpu, weight);
    return ts_queue(t, name, p, g_gpu, weight);
}

__attribute__((unused)) static int ts_pod(struct ts *t, int queue, int64_t gpu)
{
    if (t->npods >= TS_MAXPODS)
        abort();
    struct fair_pod *p = &t->pods[t->npods];
    memset(p, 0, sizeof(*p));
    const char *qn = queue >= 0 ? t->queues[queue].q.name : "none";
    p->name = ts_str(t, "%s-%zu", qn, t->npods);
    p->uid = ts_str(t, "uid-%s-%04zu", qn, t->npods);
    p->namespace_ = "ns";
    p->queue = queue;
    p->state = FAIR_POD_PENDING;
    p->created_ms = ++t->clock;
    p->preemptible = true;
    p->node = -1;
    p->request.v[FAIR_RES_GPU] = gpu;
    p->request.v[FAIR_RES_CPU] = 1000;
    p->request.v[FAIR_RES_MEM] = GI;
    return (int)t->npods++;
}

__attribute__((unused)) static int ts_bound(struct ts *t, int queue, int64_t gpu, int node,
                                            uint64_t mask, int64_t started)
{
    int i = ts_pod(t, queue, gpu);
    struct fair_pod *p = &t->pods[i];
    p->state = FAIR_POD_BOUND;
    p->node = node;
    p->gpu_devices = mask;
    p->started_ms = started;
    return i;
}

__attribute__((unused)) static void ts_snapshot(struct ts *t, struct fair_snapshot *s)
{
    memset(s, 0, sizeof(*s));
    s->now_ms = t->now;
    s->nodes = t->nodes;
    s->nnodes = t->nn;
    s->projects = t->projects;
    s->nprojects = t->np;
    s->queues = t->queues;
    s->nqueues = t->nq;
    s->pods = t->pods;
    s->npods = t->npods;
    s->placement = t->policy;
    s->over_quota_threshold_pct = t->threshold_pct;
    s->over_quota_min_runtime_ms = t->oq_min_runtime;
    s->max_evictions = t->max_evictions;
    s->hold_timeout_ms = t->hold_timeout;
    s->lend_max_runtime_ms = t->lend_max_runtime;
}

__attribute__((unused)) static int ts_run(struct ts *t)
{
    struct fair_snapshot s;
    fair_result_release(&t->res);
    ts_snapshot(t, &s);
    return fair_engine_run(&s, &t->res, &t->err);
}

__attribute__((unused)) static size_t ts_count(const struct ts *t, enum fair_action_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < t->res.nactions; i++)
        if (t->res.actions[i].kind == kind)
            n++;
    return n;
}

/* Actions of a kind on pods of queue q. */
__attribute__((unused)) static size_t ts_count_q(const struct ts *t, enum fair_action_kind kind,
                                                 int q)
{
    size_t n = 0;
    for (size_t i = 0; i < t->res.nactions; i++)
        if (t->res.actions[i].kind == kind && t->pods[t->res.actions[i].pod].queue == q)
            n++;
    return n;
}

/* The last run's BIND of pod, or NULL; the node it binds to, or -1. */
__attribute__((unused)) static const struct fair_action *ts_bind_of(const struct ts *t, int pod)
{
    for (size_t i = 0; i < t->res.nactions; i++)
        if (t->res.actions[i].kind == FAIR_ACTION_BIND && t->res.actions[i].pod == pod)
            return &t->res.actions[i];
    return NULL;
}

__attribute__((unused)) static int ts_bind_node(const struct ts *t, int pod)
{
    const struct fair_action *a = ts_bind_of(t, pod);
    return a ? a->node : -1;
}

__attribute__((unused)) static size_t ts_reason_count(const struct ts *t,
                                                      enum fair_pending_reason r)
{
    size_t n = 0;
    for (size_t i = 0; i < t->res.npods; i++)
        if (t->pods[i].state == FAIR_POD_PENDING && t->res.pending_reasons[i] == r)
            n++;
    return n;
}

/* Applies the last result: binds become BOUND (started now); evicted pods
 * are marked terminating (terminate) or removed; pending pods keep the
 * node held for them, as the controller passes it back. Time moves on a
 * second. */
__attribute__((unused)) static void ts_apply(struct ts *t, bool terminate)
{
    static bool gone[TS_MAXPODS];
    memset(gone, 0, sizeof(gone));
    for (size_t i = 0; i < t->npods && i < t->res.npods && t->res.hold_node; i++) {
        t->pods[i].hold_node = t->res.hold_node[i];
        t->pods[i].hold_since_ms = t->res.hold_since_ms[i];
    }
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *a = &t->res.actions[i];
        struct fair_pod *p = &t->pods[a->pod];
        if (a->kind == FAIR_ACTION_BIND) {
            p->state = FAIR_POD_BOUND;
            p->node = a->node;
            p->gpu_devices = a->gpu_devices;
            p->started_ms = t->now;
        } else if (terminate) {
            p->terminating = true;
        } else {
            gone[a->pod] = true;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < t->npods; i++)
        if (!gone[i])
            t->pods[k++] = t->pods[i];
    t->npods = k;
    t->now += 1000;
    fair_result_release(&t->res);
}

/* Prints the cluster and the last result, for debugging a failure. */
__attribute__((unused)) static void ts_dump(const struct ts *t)
{
    for (size_t i = 0; i < t->nq; i++)
        fprintf(stderr, "queue %s g=%lld fs=%lld alloc=%lld after=%lld demand=%lld\n",
                t->queues[i].q.name, (long long)t->res.queues[i].guaranteed.v[0],
                (long long)t->res.queues[i].fair_share.v[0],
                (long long)t->res.queues[i].allocated.v[0],
                (long long)t->res.queues[i].allocated_after.v[0],
                (long long)t->res.queues[i].demand.v[0]);
    for (size_t i = 0; i < t->npods; i++) {
        const struct fair_pod *p = &t->pods[i];
        fprintf(stderr, "pod %zu %s q=%d gpu=%lld prio=%d %s node=%d mask=%llx term=%d reason=%s\n",
                i, p->uid, p->queue, (long long)p->request.v[0], p->priority,
                p->state == FAIR_POD_BOUND ? "BOUND" : "PENDING", p->node,
                (unsigned long long)p->gpu_devices, p->terminating,
                fair_pending_reason_str((enum fair_pending_reason)t->res.pending_reasons[i]));
    }
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *a = &t->res.actions[i];
        fprintf(stderr, "action %s pod=%d node=%d mask=%llx reason=%d for_q=%d for_pod=%d\n",
                a->kind == FAIR_ACTION_BIND ? "BIND" : "EVICT", a->pod, a->node,
                (unsigned long long)a->gpu_devices, a->reason, a->for_queue, a->for_pod);
    }
}

/* Removes terminating pods (their deletion completed). */
__attribute__((unused)) static void ts_reap(struct ts *t)
{
    size_t k = 0;
    for (size_t i = 0; i < t->npods; i++)
        if (!t->pods[i].terminating)
            t->pods[k++] = t->pods[i];
    t->npods = k;
}

#endif
