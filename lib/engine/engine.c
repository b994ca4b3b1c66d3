/* The fair-share engine's cycle: validate the snapshot, compute fair shares
 * level by level, admit pending pods queue by queue (pass 1: within fair
 * share), reclaim and preempt for the pods that are owed room, then hand
 * out what is left (pass 2: work conserving). docs/engine.md explains each
 * rule; this file follows it step by step. Pure: no I/O, clock or globals. */
#include "engine/engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "engine/placement.h"
#include "engine/share.h"

typedef __int128 i128;

#define NRES FAIR_RES_COUNT
#define GPU FAIR_RES_GPU
/* Largest quantity accepted on any object: 2^50 (a pebibyte of memory). */
#define MAX_QTY ((int64_t)1 << 50)
#define MAX_PROBLEMS 4096
#define MAX_VICTIMS 64
/* Victim searches per cycle: bounds the reclaim phase's cost; pods left
 * over are looked at again next cycle. */
#define MAX_SEARCHES 1024

enum {
    PF_VALID = 1,     /* pod request usable */
    PF_BOUND = 2,     /* bound this cycle */
    PF_NOFIT = 4,     /* passed admission, no node had room (pass 1) */
    PF_EVICTED = 8,   /* evicted this cycle */
    PF_RESERVED = 16, /* room reserved by reclaim or preemption */
    PF_MANAGED = 32,  /* belongs to a valid queue */
};

/* A request a victim search failed for, with the pod's constraints (by
 * identity of their arrays: the same arrays mean the same constraints). */
#define FAIL_ENTRIES 4
struct fail_entry {
    int64_t req[FAIR_RES_COUNT];
    const char *model;
    const void *sel, *tol;
    size_t nsel, ntol;
};

struct acct {
    bool valid;
    int32_t parent;  /* queues: project index */
    int32_t rank;    /* position by name */
    int64_t g[NRES]; /* effective guaranteed */
    int64_t lim[NRES];
    int64_t fs[NRES];
    int64_t demand[NRES];
    int64_t alloc0[NRES]; /* bound before the cycle */
    int64_t alloc[NRES];  /* plus this cycle's binds */
    int64_t live[NRES];   /* bound, not terminating, not evicted */
    int64_t resv[NRES];   /* reserved for pods waiting on evictions */
    int64_t np[NRES];     /* held by non-preemptible pods */
    int64_t evicted[NRES];
    int32_t npending, nrunning;
    size_t first, count, cursor; /* queues: pending pods in e->order */
    int32_t minvprio;            /* queues: lowest priority of a victim */
    bool has_victim;
    bool blocked;       /* damped cycle: a pod found no room ... */
    int32_t block_prio; /* ... at this priority: lower ones wait */
    /* Smallest unconstrained request a victim search failed for, per mode:
     * bigger ones are not searched again this cycle. */
    struct fail_entry fail[2][FAIL_ENTRIES];
    uint8_t nfail[2], fail_next[2];
};

struct gang {
    size_t first, count; /* members' positions in e->gmem */
    int32_t nbound;
    int32_t size;
    size_t leader; /* position in e->order of the first member */
};

struct eng {
    const struct fair_snapshot *s;
    struct fair_result *res;
    struct fair_error *err;
    struct fair_place pl;
    bool pl_ready;
    bool *node_ok;
    uint8_t *pflags;
    int32_t *pgang; /* gang id of pending pods, -1 */
    uint64_t *masks;
    struct acct *q;
    struct acct *p;
    int32_t *order; /* pending pods of valid queues, queue rank then pod order */
    size_t norder;
    struct gang *gangs;
    size_t ngangs;
    size_t *gmem; /* order positions of gang members */
    int32_t *heap;
    size_t nheap;
    size_t acap, pcap;
    size_t bytes;
    /* Reclaim phase. */
    int32_t *vlist;  /* victims by node rank, in victim order */
    size_t *voff;    /* nnodes + 1 offsets into vlist */
    int32_t *vrank;  /* pod -> victim-order position */
    int32_t *vorder; /* victims in victim order */
    size_t nvict;
    int32_t *cand; /* node ranks with room being freed (fut differs) */
    size_t ncand;
    int32_t *clist; /* per search: nodes holding a plausible victim */
    uint32_t *nstamp;
    uint32_t stamp;
    int64_t (*vsum)[NRES]; /* per node rank: room its remaining victims hold */
    int32_t *rrank;        /* pending pod -> node rank of its reserved room */
    int32_t *qvlist;       /* victims by queue, in victim order */
    size_t *qvoff;         /* nqueues + 1 */
    int searches;
    /* A wave of evictions is still terminating: take no new victims. */
    bool damp;
    /* A pod owed room (its guarantee) got none this cycle: pass 2 hands
     * out nothing above fair share, or it would be reclaimed next cycle. */
    bool starved;
};

static void *eng_calloc(struct eng *e, size_t n, size_t size)
{
    void *p = fair_calloc(n ? n : 1, size);
    if (p)
        e->bytes += (n ? n : 1) * size;
    return p;
}

static int64_t r_or0(int64_t v)
{
    return v > 0 ? v : 0;
}

static const char *str_or(const char *s, const char *dflt)
{
    return s && s[0] ? s : dflt;
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static int add_problem(struct eng *e, enum fair_problem_kind kind, enum fair_object_kind obj,
                       int32_t index, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int add_problem(struct eng *e, enum fair_problem_kind kind, enum fair_object_kind obj,
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

static int add_action(struct eng *e, const struct fair_action *a)
{
    struct fair_result *r = e->res;
    size_t old = e->acap;
    if (fair_grow((void **)&r->actions, &e->acap, r->nactions + 1, sizeof(*r->actions)))
        return FAIR_ENOMEM;
    e->bytes += (e->acap - old) * sizeof(*r->actions);
    r->actions[r->nactions++] = *a;
    return 0;
}

/* ---- validation ---------------------------------------------------- */

static int check_indices(struct eng *e)
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
            rc = add_problem(e, FAIR_PROBLEM_INVALID, obj, idx,
                             "%s \"%s\": guaranteed %s is %s (%lld); set it to 0 or more", what,
                             name, rn, q->guaranteed.v[r] < 0 ? "negative" : "too large",
                             (long long)q->guaranteed.v[r]);
            return rc ? rc : 0;
        }
        if (q->limit.v[r] < 0 || (q->limit.v[r] > MAX_QTY && q->limit.v[r] != FAIR_UNLIMITED)) {
            rc = add_problem(e, FAIR_PROBLEM_INVALID, obj, idx,
                             "%s \"%s\": limit %s is %s (%lld); set it to 0 or more, or leave it "
                             "out",
                             what, name, rn, q->limit.v[r] < 0 ? "negative" : "too large",
                             (long long)q->limit.v[r]);
            return rc ? rc : 0;
        }
    }
    if (q->over_quota_weight <= 0 || q->over_quota_weight > MAX_QTY) {
        rc = add_problem(e, FAIR_PROBLEM_INVALID, obj, idx,
                         "%s \"%s\": overQuotaWeight is %lld; it must be at least 1", what, name,
                         (long long)q->over_quota_weight);
        return rc ? rc : 0;
    }
    return 1;
}

static int check_objects(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int rc;
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct fair_node *n = &s->nodes[i];
        const char *name = str_or(n->name, "?");
        bool ok = true;
        if (n->gpu_count < 0 || n->gpu_count > FAIR_MAX_GPUS_PER_NODE) {
            rc = add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_NODE, (int32_t)i,
                             "node \"%s\": gpu_count %d is out of range (0..%d); node skipped",
                             name, n->gpu_count, FAIR_MAX_GPUS_PER_NODE);
            ok = false;
        } else if (n->allocatable.v[GPU] != (int64_t)n->gpu_count * FAIR_GPU_DEVICE_MILLI) {
            rc = add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_NODE, (int32_t)i,
                             "node \"%s\": allocatable gpu %lld milli does not match gpu_count %d "
                             "(want %lld); node skipped",
                             name, (long long)n->allocatable.v[GPU], n->gpu_count,
                             (long long)n->gpu_count * FAIR_GPU_DEVICE_MILLI);
            ok = false;
        } else {
            rc = 0;
            for (int r = 0; r < NRES && ok; r++)
                if (n->allocatable.v[r] < 0 || n->allocatable.v[r] > MAX_QTY) {
                    rc = add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_NODE, (int32_t)i,
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
            rc = add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_QUEUE, (int32_t)i,
                             "queue \"%s\": project \"%s\" is unknown; create the Project or fix "
                             "spec.project",
                             str_or(q->q.name, "?"), str_or(q->project_name, "?"));
            e->q[i].valid = false;
        } else if (!e->p[q->project].valid) {
            rc = add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_QUEUE, (int32_t)i,
                             "queue \"%s\": its project \"%s\" is invalid", str_or(q->q.name, "?"),
                             str_or(s->projects[q->project].q.name, "?"));
            e->q[i].valid = false;
        } else if (q->reclaim_min_runtime_ms < 0) {
            rc = add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_QUEUE, (int32_t)i,
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
                rc = add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_POD, (int32_t)i,
                                 "pod %s/%s: %s request is %s (%lld)", str_or(p->namespace_, "?"),
                                 str_or(p->name, "?"), fair_res_name((enum fair_res)r),
                                 p->request.v[r] < 0 ? "negative" : "too large",
                                 (long long)p->request.v[r]);
                f = 0;
            }
        int64_t g = p->request.v[GPU];
        if ((f & PF_VALID) && g > FAIR_GPU_DEVICE_MILLI && g % FAIR_GPU_DEVICE_MILLI) {
            rc = add_problem(e, FAIR_PROBLEM_INVALID, FAIR_OBJ_POD, (int32_t)i,
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

/* ---- fair share ---------------------------------------------------- */

static int compute_capacity(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int64_t *cap = e->res->capacity.v;
    for (size_t i = 0; i < s->nnodes; i++)
        if (e->node_ok[i])
            for (int r = 0; r < NRES; r++)
                cap[r] = fair_sat_add(cap[r], s->nodes[i].allocatable.v[r]);
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

static void account_pods(struct eng *e)
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
}

static int compute_fair_share(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    size_t n = s->nprojects > s->nqueues ? s->nprojects : s->nqueues;
    int rc = FAIR_ENOMEM;
    struct fair_share_child *ch = fair_calloc(n ? n : 1, sizeof(*ch));
    void *scratch = fair_calloc(1, FAIR_SHARE_SCRATCH(n ? n : 1));
    int64_t *val = fair_calloc(n ? n : 1, sizeof(int64_t));
    int64_t *out = fair_calloc(n ? n : 1, sizeof(int64_t));
    const char **names = fair_calloc(n ? n : 1, sizeof(char *));
    size_t *ids = fair_calloc(n ? n : 1, sizeof(size_t));
    if (!ch || !scratch || !val || !out || !names || !ids)
        goto out;
    e->bytes += n * (sizeof(*ch) + 3 * sizeof(int64_t) + sizeof(size_t)) + FAIR_SHARE_SCRATCH(n);
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
    for (int r = 0; r < NRES; r++) {
        i128 sum = 0;
        for (size_t j = 0; j < m; j++) {
            val[j] = s->projects[ids[j]].q.guaranteed.v[r];
            names[j] = s->projects[ids[j]].q.name;
            sum += val[j];
        }
        if (sum > cap[r]) {
            rc = add_problem(e, FAIR_PROBLEM_OVERCOMMITTED, FAIR_OBJ_CLUSTER, -1,
                             "cluster: projects guarantee %lld %s in total but the cluster has "
                             "%lld; guarantees are scaled down in proportion",
                             (long long)sum, fair_res_name((enum fair_res)r), (long long)cap[r]);
            if (rc)
                goto out;
        }
        fair_share_scale(val, names, m, cap[r], out, scratch);
        for (size_t j = 0; j < m; j++) {
            const struct fair_quota *pq = &s->projects[ids[j]].q;
            e->p[ids[j]].g[r] = out[j];
            ch[j] = (struct fair_share_child){pq->name,
                                              out[j],
                                              e->p[ids[j]].demand[r],
                                              pq->limit.v[r],
                                              pq->over_quota_weight,
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
        for (int r = 0; r < NRES; r++) {
            i128 sum = 0;
            for (size_t j = 0; j < m; j++) {
                val[j] = s->queues[ids[j]].q.guaranteed.v[r];
                names[j] = s->queues[ids[j]].q.name;
                sum += val[j];
            }
            int64_t pg = s->projects[pi].q.guaranteed.v[r];
            if (sum > pg) {
                rc = add_problem(e, FAIR_PROBLEM_OVERCOMMITTED, FAIR_OBJ_PROJECT, (int32_t)pi,
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
                e->q[ids[j]].g[r] = out[j];
                ch[j] = (struct fair_share_child){qq->name,
                                                  out[j],
                                                  e->q[ids[j]].demand[r],
                                                  qq->limit.v[r],
                                                  qq->over_quota_weight,
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
    fair_free(ch);
    fair_free(scratch);
    fair_free(val);
    fair_free(out);
    fair_free(names);
    fair_free(ids);
    return rc;
}

/* ---- ordering ------------------------------------------------------ */

struct pkey {
    int32_t qrank;
    int32_t prio;
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

static int build_order(struct eng *e)
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
    e->order = eng_calloc(e, n, sizeof(*e->order));
    if (!pk || !e->order)
        goto out;
    e->bytes += n * sizeof(*pk);
    size_t k = 0;
    for (size_t i = 0; i < s->npods; i++) {
        const struct fair_pod *p = &s->pods[i];
        if (!(e->pflags[i] & PF_MANAGED) || p->state != FAIR_POD_PENDING ||
            !(e->pflags[i] & PF_VALID))
            continue;
        pk[k++] =
            (struct pkey){e->q[p->queue].rank, p->priority, p->created_ms, p->uid, (int32_t)i};
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
        e->gmem = eng_calloc(e, ng, sizeof(*e->gmem));
        e->gangs = eng_calloc(e, ng, sizeof(*e->gangs));
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

struct ratio {
    int64_t num, den; /* den 0 with num > 0: infinite */
};

static struct ratio ratio_of(int64_t num, int64_t den)
{
    struct ratio r = {num, den};
    if (num <= 0) {
        r.num = 0;
        r.den = 1;
    }
    return r;
}

static int cmp_ratio(struct ratio a, struct ratio b)
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
    int c = cmp_ratio(ratio_of(ua[GPU], qa->fs[GPU]), ratio_of(ub[GPU], qb->fs[GPU]));
    if (c)
        return c;
    struct ratio ma = ratio_of(ua[1], qa->fs[1]), mb = ratio_of(ub[1], qb->fs[1]);
    struct ratio x = ratio_of(ua[2], qa->fs[2]), y = ratio_of(ub[2], qb->fs[2]);
    if (cmp_ratio(x, ma) > 0)
        ma = x;
    if (cmp_ratio(y, mb) > 0)
        mb = y;
    c = cmp_ratio(ma, mb);
    if (c)
        return c;
    return (qa->rank > qb->rank) - (qa->rank < qb->rank);
}

static void heap_down(struct eng *e, size_t i)
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

static void heap_build(struct eng *e)
{
    e->nheap = 0;
    for (size_t i = 0; i < e->s->nqueues; i++) {
        e->q[i].cursor = 0;
        if (e->q[i].valid && e->q[i].count)
            e->heap[e->nheap++] = (int32_t)i;
    }
    for (size_t i = e->nheap; i-- > 0;)
        heap_down(e, i);
}

/* ---- admission ------------------------------------------------------ */

static bool over(const int64_t *a, const int64_t *b, const int64_t *req, const int64_t *cap)
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
    if (over(q->alloc, q->resv, req, q->lim) || over(p->alloc, p->resv, req, p->lim))
        return FAIR_PENDING_OVER_LIMIT;
    if (over_np(q, np_req) || over_np(p, np_req))
        return FAIR_PENDING_OVER_GUARANTEE;
    if (within_fs && over(q->alloc, q->resv, req, q->fs))
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
    fair_place_commit(&e->pl, rank, &p->request, mask, 1);
    acct_add(e, p->queue, p, 1);
    e->pflags[pi] |= PF_BOUND;
    e->masks[pi] = mask;
    e->res->pending_reasons[pi] = FAIR_PENDING_NONE;
    struct fair_action a = {
        FAIR_ACTION_BIND, pi, e->pl.nodes[rank].idx, mask, FAIR_EVICT_NONE, -1, -1};
    return add_action(e, &a);
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
    if (gi < 0) {
        if (pass == 2 && (e->pflags[pi] & (PF_NOFIT | PF_RESERVED)))
            return 0;
        if (pass == 2 && *reason != FAIR_PENDING_FAIR_SHARE)
            return 0;
        memcpy(req, p->request.v, sizeof(req));
        if (!p->preemptible)
            memcpy(np, req, sizeof(np));
        enum fair_pending_reason why = admit_check(e, p->queue, req, np, pass == 1);
        if (why) {
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
        int32_t rank = fair_place_find(&e->pl, p, &p->request, pass == 2, &mask);
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
    for (size_t j = 0; j < g->count; j++) {
        const struct fair_pod *m = &s->pods[e->order[e->gmem[g->first + j]]];
        for (int r = 0; r < NRES; r++) {
            req[r] += m->request.v[r];
            if (!m->preemptible)
                np[r] += m->request.v[r];
        }
    }
    enum fair_pending_reason why = admit_check(e, p->queue, req, np, pass == 1);
    size_t placed = 0, nact = e->res->nactions;
    if (!why) {
        for (; placed < g->count; placed++) {
            int32_t mi = e->order[e->gmem[g->first + placed]];
            const struct fair_pod *m = &s->pods[mi];
            uint64_t mask = 0;
            int32_t rank = fair_place_find(&e->pl, m, &m->request, pass == 2, &mask);
            if (rank < 0)
                break;
            int rc = bind_pod(e, mi, rank, mask);
            if (rc)
                return rc;
        }
        if (placed == g->count) {
            *admitted = true;
            return 0;
        }
        /* Roll back the tentative binds. */
        for (size_t j = 0; j < placed; j++) {
            int32_t mi = e->order[e->gmem[g->first + j]];
            const struct fair_action *a = &e->res->actions[nact + j];
            fair_place_commit(&e->pl, e->pl.rank_of[a->node], &s->pods[mi].request, a->gpu_devices,
                              -1);
            acct_add(e, s->pods[mi].queue, &s->pods[mi], -1);
            e->pflags[mi] &= (uint8_t)~PF_BOUND;
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

static int run_pass(struct eng *e, int pass)
{
    heap_build(e);
    while (e->nheap) {
        int32_t qi = e->heap[0];
        struct acct *q = &e->q[qi];
        int32_t pi = e->order[q->first + q->cursor];
        q->cursor++;
        bool admitted = false;
        if (!(e->pflags[pi] & PF_BOUND)) {
            int rc = admit_unit(e, pi, pass, &admitted);
            if (rc)
                return rc;
        }
        if (q->cursor >= q->count) {
            e->heap[0] = e->heap[--e->nheap];
        }
        if (e->nheap)
            heap_down(e, 0);
    }
    return 0;
}

/* ---- reclaim and preemption ------------------------------------------ */

struct vkey {
    int32_t pprio, qprio;
    struct ratio over; /* live/fs on GPU of the victim's queue */
    int32_t prio;
    int64_t started;
    const char *uid;
    int32_t idx;
};

static int cmp_vkey(const void *pa, const void *pb)
{
    const struct vkey *a = pa, *b = pb;
    if (a->pprio != b->pprio)
        return a->pprio < b->pprio ? -1 : 1;
    if (a->qprio != b->qprio)
        return a->qprio < b->qprio ? -1 : 1;
    int c = cmp_ratio(a->over, b->over);
    if (c)
        return -c; /* furthest above its fair share first */
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    if (a->started != b->started)
        return a->started > b->started ? -1 : 1; /* youngest first */
    c = cmp_str(a->uid, b->uid);
    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Whether pod i may be evicted to reclaim or preempt: a bound, valid,
 * preemptible pod of ours, not already leaving, that has run at least its
 * queue's reclaimMinRuntime. build_victims counts and then fills with it. */
static bool is_victim(const struct eng *e, size_t i)
{
    const struct fair_snapshot *s = e->s;
    const struct fair_pod *p = &s->pods[i];
    if (p->state != FAIR_POD_BOUND ||
        (e->pflags[i] & (PF_MANAGED | PF_VALID)) != (PF_MANAGED | PF_VALID) || !p->preemptible ||
        p->terminating)
        return false;
    return s->now_ms - p->started_ms >= s->queues[p->queue].reclaim_min_runtime_ms;
}

static int build_victims(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int rc = FAIR_ENOMEM;
    size_t nv = 0;
    struct vkey *vk = NULL;
    for (size_t i = 0; i < s->npods; i++)
        if (is_victim(e, i))
            nv++;
    vk = fair_calloc(nv ? nv : 1, sizeof(*vk));
    e->vlist = eng_calloc(e, nv, sizeof(*e->vlist));
    e->voff = eng_calloc(e, s->nnodes + 1, sizeof(*e->voff));
    e->vrank = eng_calloc(e, s->npods, sizeof(*e->vrank));
    e->vorder = eng_calloc(e, nv, sizeof(*e->vorder));
    e->cand = eng_calloc(e, s->nnodes, sizeof(*e->cand));
    e->clist = eng_calloc(e, s->nnodes, sizeof(*e->clist));
    e->vsum = eng_calloc(e, s->nnodes, sizeof(*e->vsum));
    e->rrank = eng_calloc(e, s->npods, sizeof(*e->rrank));
    e->qvlist = eng_calloc(e, nv, sizeof(*e->qvlist));
    e->qvoff = eng_calloc(e, s->nqueues + 1, sizeof(*e->qvoff));
    e->nstamp = eng_calloc(e, s->nnodes, sizeof(*e->nstamp));
    if (!vk || !e->vlist || !e->voff || !e->vrank || !e->cand || !e->vorder || !e->clist ||
        !e->nstamp || !e->vsum || !e->qvlist || !e->qvoff || !e->rrank)
        goto out;
    e->bytes += nv * sizeof(*vk);
    size_t k = 0;
    for (size_t i = 0; i < s->npods; i++) {
        if (!is_victim(e, i))
            continue;
        const struct fair_pod *p = &s->pods[i];
        const struct acct *q = &e->q[p->queue];
        vk[k++] = (struct vkey){s->projects[q->parent].q.over_quota_priority,
                                s->queues[p->queue].q.over_quota_priority,
                                ratio_of(q->live[GPU], q->fs[GPU]),
                                p->priority,
                                p->started_ms,
                                p->uid,
                                (int32_t)i};
        struct acct *qm = &e->q[p->queue];
        if (!qm->has_victim || p->priority < qm->minvprio)
            qm->minvprio = p->priority;
        qm->has_victim = true;
    }
    qsort(vk, nv, sizeof(*vk), cmp_vkey);
    e->nvict = nv;
    for (size_t i = 0; i < nv; i++) {
        const struct fair_pod *vp = &s->pods[vk[i].idx];
        for (int r = 0; r < NRES; r++)
            e->vsum[e->pl.rank_of[vp->node]][r] += vp->request.v[r];
        e->qvoff[vp->queue + 1]++;
    }
    for (size_t qi = 0; qi < s->nqueues; qi++)
        e->qvoff[qi + 1] += e->qvoff[qi];
    for (size_t i = 0; i < nv; i++)
        e->qvlist[e->qvoff[s->pods[vk[i].idx].queue]++] = vk[i].idx;
    for (size_t qi = s->nqueues; qi-- > 0;)
        e->qvoff[qi + 1] = e->qvoff[qi];
    e->qvoff[0] = 0;
    for (size_t i = 0; i < nv; i++) {
        e->vorder[i] = vk[i].idx;
        e->vrank[vk[i].idx] = (int32_t)i;
        e->voff[e->pl.rank_of[s->pods[vk[i].idx].node] + 1]++;
    }
    for (size_t r = 0; r < s->nnodes; r++)
        e->voff[r + 1] += e->voff[r];
    for (size_t i = 0; i < nv; i++) {
        int32_t rank = e->pl.rank_of[s->pods[vk[i].idx].node];
        /* voff[rank] advances as a cursor; restored below. */
        e->vlist[e->voff[rank]++] = vk[i].idx;
    }
    for (size_t r = s->nnodes; r-- > 0;)
        e->voff[r + 1] = e->voff[r];
    e->voff[0] = 0;
    e->ncand = 0;
    for (size_t r = 0; r < s->nnodes; r++)
        if (e->pl.nodes[r].ok && e->pl.nodes[r].fdiff)
            e->cand[e->ncand++] = (int32_t)r;
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
};

struct trial {
    int32_t v[MAX_VICTIMS];
    int nv;
    int64_t cost;
    int32_t rank;
    int64_t fitkey; /* nv == 0: fut free of the chosen fit, smaller first */
};

/* Whether pod fits on node rank's fut view with victims v[0..nv) gone (skip
 * index `skip`), and with the preemption budget covered. */
static bool fits_with(const struct eng *e, const struct search *sr, int32_t rank, const int32_t *v,
                      int nv, int skip, int64_t *short_by, uint64_t *mask)
{
    const struct fair_pnode *n = &e->pl.nodes[rank];
    const struct fair_node *sn = &e->s->nodes[n->idx];
    int16_t dev[FAIR_MAX_GPUS_PER_NODE];
    int64_t freeres[NRES], budget[NRES];
    int32_t pods = n->fpods;
    memcpy(dev, n->fdev, sizeof(dev));
    memcpy(freeres, n->ffree, sizeof(freeres));
    memcpy(budget, sr->budget, sizeof(budget));
    for (int i = 0; i < nv; i++) {
        if (i == skip)
            continue;
        const struct fair_pod *vp = &e->s->pods[v[i]];
        for (int r = 0; r < NRES; r++) {
            freeres[r] += vp->request.v[r];
            budget[r] -= vp->request.v[r];
        }
        pods--;
        uint64_t m = e->masks[v[i]];
        int64_t g = vp->request.v[GPU];
        for (int d = 0; d < n->ngpu && g > 0; d++)
            if (m >> d & 1) {
                int64_t x = dev[d] + (g < FAIR_GPU_DEVICE_MILLI ? g : FAIR_GPU_DEVICE_MILLI);
                dev[d] = (int16_t)(x > FAIR_GPU_DEVICE_MILLI ? FAIR_GPU_DEVICE_MILLI : x);
                if (g < FAIR_GPU_DEVICE_MILLI)
                    break;
            }
    }
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
    if (!fair_place_pick_devices(dev, n->ngpu, req[GPU], NULL, e->pl.policy, mask)) {
        short_by[GPU] = short_by[GPU] > 0 ? short_by[GPU] : 1;
        ok = false;
    }
    return ok;
}

/* Whether victim vi may go for sr, given the victims already taken. */
static bool victim_ok(const struct eng *e, const struct search *sr, int32_t vi,
                      const int32_t *taken, int nt)
{
    const struct fair_snapshot *s = e->s;
    const struct fair_pod *v = &s->pods[vi];
    if (e->pflags[vi] & PF_EVICTED)
        return false;
    if (sr->mode == M_PREEMPT)
        return v->queue == sr->qi && v->priority < sr->pod->priority;
    if (v->queue == sr->qi)
        return false;
    /* A borrower only, and never below its own fair share (queue, and the
     * project when it is another project's). */
    const struct acct *vq = &e->q[v->queue];
    int32_t vp = vq->parent;
    bool other_project = vp != e->q[sr->qi].parent;
    int64_t tq[NRES] = {0}, tp[NRES] = {0};
    for (int i = 0; i < nt; i++) {
        const struct fair_pod *t = &s->pods[taken[i]];
        for (int r = 0; r < NRES; r++) {
            if (t->queue == v->queue)
                tq[r] += t->request.v[r];
            if (e->q[t->queue].parent == vp)
                tp[r] += t->request.v[r];
        }
    }
    bool gpu_only = v->request.v[GPU] > 0;
    for (int r = 0; r < NRES; r++) {
        if (gpu_only && r != GPU)
            continue;
        int64_t need = v->request.v[r];
        if (need <= 0)
            continue;
        if (vq->live[r] - tq[r] - need < vq->fs[r])
            return false;
        if (other_project && e->p[vp].live[r] - tp[r] - need < e->p[vp].fs[r])
            return false;
    }
    return true;
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
    t->fitkey = 0;
    const struct fair_pnode *nd = &e->pl.nodes[rank];
    for (int r = 0; r < NRES; r++)
        if (nd->ffree[r] + (max_nv > 0 ? e->vsum[rank][r] : 0) < sr->pod->request.v[r])
            return false;
    if (!fair_place_static_ok(&e->pl, rank, sr->pod))
        return false;
    bool ok = fits_with(e, sr, rank, t->v, 0, -1, short_by, &mask);
    for (size_t i = e->voff[rank]; i < e->voff[rank + 1] && !ok && !e->damp; i++) {
        int32_t vi = e->vlist[i];
        const struct fair_pod *v = &e->s->pods[vi];
        bool helps = false;
        for (int r = 0; r < NRES; r++)
            if (short_by[r] > 0 && v->request.v[r] > 0)
                helps = true;
        const struct fair_node *sn = &e->s->nodes[e->pl.nodes[rank].idx];
        if (sn->max_pods > 0 && e->pl.nodes[rank].fpods - t->nv >= sn->max_pods)
            helps = true;
        if (!helps || !victim_ok(e, sr, vi, t->v, t->nv))
            continue;
        if (t->nv == MAX_VICTIMS || t->nv >= max_nv)
            return false;
        t->v[t->nv++] = vi;
        ok = fits_with(e, sr, rank, t->v, t->nv, -1, short_by, &mask);
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
    if (t->nv == 0) {
        /* Among nodes that need no new victim, the fullest fut view wins. */
        const struct fair_pnode *n = &e->pl.nodes[rank];
        int64_t g = sr->pod->request.v[GPU];
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

static bool better(const struct trial *a, const struct trial *b)
{
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
        for (int r = 0; r < NRES; r++) {
            e->vsum[t->rank][r] -= v->request.v[r];
            vq->live[r] -= v->request.v[r];
            vp->live[r] -= v->request.v[r];
            vq->evicted[r] += v->request.v[r];
            vp->evicted[r] += v->request.v[r];
        }
        fair_place_fut(&e->pl, t->rank, &v->request, e->masks[vi], -1);
        struct fair_action a = {FAIR_ACTION_EVICT,
                                vi,
                                v->node,
                                0,
                                sr->mode == M_RECLAIM ? FAIR_EVICT_RECLAIM : FAIR_EVICT_PREEMPT,
                                sr->qi,
                                sr->pi};
        int rc = add_action(e, &a);
        if (rc)
            return rc;
    }
    const struct fair_pnode *n = &e->pl.nodes[t->rank];
    uint64_t m = 0;
    fair_place_pick_devices(n->fdev, n->ngpu, sr->pod->request.v[GPU], NULL, e->pl.policy, &m);
    fair_place_fut(&e->pl, t->rank, &sr->pod->request, m, 1);
    e->masks[sr->pi] = m; /* a pending pod's mask: its reserved devices */
    e->rrank[sr->pi] = t->rank;
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

/* Whether a search for pod can be skipped after one failed for f: same
 * constraints, and a request at least as big everywhere. Victims only get
 * fewer during the phase, so it would fail again (pods left out are looked
 * at next cycle). */
static bool same_shape_or_bigger(const struct fail_entry *f, const struct fair_pod *p)
{
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
    int64_t short_by[NRES];
    uint64_t mask;
    struct acct *q = &e->q[sr->qi];
    int m = sr->mode == M_PREEMPT;
    const int64_t *req = sr->pod->request.v;
    *found = false;
    for (int i = 0; i < q->nfail[m]; i++)
        if (same_shape_or_bigger(&q->fail[m][i], sr->pod))
            return 0;
    if (e->searches >= MAX_SEARCHES)
        return 0;
    e->searches++;
    for (size_t c = 0; c < e->ncand; c++) {
        int32_t r = e->cand[c];
        if (!e->pl.nodes[r].fdiff || !try_node(e, sr, r, &cur, 0))
            continue;
        if (!have || better(&cur, &best)) {
            best = cur;
            have = true;
        }
    }
    size_t nc = 0;
    e->stamp++;
    bool pre = sr->mode == M_PREEMPT;
    size_t from = pre ? e->qvoff[sr->qi] : 0, to = pre ? e->qvoff[sr->qi + 1] : e->nvict;
    for (size_t i = from; i < to && !have && !e->damp; i++) {
        int32_t vi = pre ? e->qvlist[i] : e->vorder[i];
        const struct fair_pod *v = &e->s->pods[vi];
        if (e->pflags[vi] & PF_EVICTED)
            continue;
        if (sr->mode == M_PREEMPT
                ? (v->queue != sr->qi || v->priority >= sr->pod->priority)
                : (v->queue == sr->qi || e->q[v->queue].live[GPU] <= e->q[v->queue].fs[GPU]))
            continue;
        int32_t r = e->pl.rank_of[v->node];
        if (e->nstamp[r] == e->stamp)
            continue;
        if (!fair_place_static_ok(&e->pl, r, sr->pod)) {
            e->nstamp[r] = e->stamp;
            continue;
        }
        if (!victim_ok(e, sr, vi, NULL, 0))
            continue;
        e->nstamp[r] = e->stamp;
        e->clist[nc++] = r;
        if (fits_with(e, sr, r, &vi, 1, -1, short_by, &mask)) {
            best.v[0] = vi;
            best.nv = 1;
            best.rank = r;
            best.cost = e->vrank[vi];
            have = true;
        }
    }
    bool full = !have && !e->damp;
    for (size_t c = 0; c < nc && full; c++) {
        int limit = have ? best.nv : MAX_VICTIMS;
        if (!try_node(e, sr, e->clist[c], &cur, limit))
            continue;
        if (!have || better(&cur, &best)) {
            best = cur;
            have = true;
        }
    }
    if (!have) {
        struct fail_entry *f = &q->fail[m][q->fail_next[m]];
        memcpy(f->req, req, sizeof(f->req));
        f->model = sr->pod->gpu_model;
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
    fair_place_fut(&e->pl, e->rrank[pi], &p->request, e->masks[pi], -1);
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
    for (int r = 0; r < NRES; r++) {
        q->live[r] += v->request.v[r];
        pr->live[r] += v->request.v[r];
        q->evicted[r] -= v->request.v[r];
        pr->evicted[r] -= v->request.v[r];
        e->vsum[rank][r] += v->request.v[r];
    }
    fair_place_fut(&e->pl, rank, &v->request, e->masks[vi], 1);
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
    for (size_t j = 0; j < g->count; j++)
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
    if (!any || over(q->live, q->resv, req, q->fs))
        return 0;
    size_t nact = e->res->nactions;
    struct fail_entry saved[2][FAIL_ENTRIES];
    uint8_t saved_n[2] = {q->nfail[0], q->nfail[1]},
            saved_next[2] = {q->fail_next[0], q->fail_next[1]};
    memcpy(saved, q->fail, sizeof(saved));
    size_t j = 0;
    for (; j < g->count; j++) {
        int32_t mi = e->order[e->gmem[g->first + j]];
        struct search sr = {&s->pods[mi], mi, qi, M_RECLAIM, {0}};
        bool found = false;
        int rc = search_for(e, &sr, &found);
        if (rc)
            return rc;
        if (!found)
            break;
    }
    if (j == g->count)
        return 0;
    e->starved = true;
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
    q->nfail[0] = saved_n[0];
    q->nfail[1] = saved_n[1];
    q->fail_next[0] = saved_next[0];
    q->fail_next[1] = saved_next[1];
    return 0;
}

/* One wave at a time: while pods that look like earlier victims are
 * still terminating (preemptible pods of a queue above its fair share, or
 * below a higher-priority pod waiting in their queue), no new victim is
 * taken. Other deletions (finished work) do not hold it. */
static void compute_damp(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    for (size_t i = 0; i < s->npods && !e->damp; i++) {
        const struct fair_pod *p = &s->pods[i];
        if (p->state != FAIR_POD_BOUND || !p->terminating || !p->preemptible ||
            !(e->pflags[i] & PF_MANAGED))
            continue;
        const struct acct *q = &e->q[p->queue];
        for (int r = 0; r < NRES; r++)
            if (p->request.v[r] > 0 && (r == GPU || p->request.v[GPU] <= 0) &&
                q->alloc0[r] > q->fs[r])
                e->damp = true;
        if (q->count && s->pods[e->order[q->first]].priority > p->priority)
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
            if (n->allocatable.v[k] < p->request.v[k])
                room = false;
        if (room && p->request.v[GPU] >= FAIR_GPU_DEVICE_MILLI &&
            p->request.v[GPU] / FAIR_GPU_DEVICE_MILLI > n->gpu_count)
            room = false;
        if (room && fair_place_static_ok(&e->pl, (int32_t)r, p))
            return true;
    }
    return false;
}

static int reclaim_phase(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    int rc = build_victims(e);
    if (rc)
        return rc;

    /* Queues in admission order at the start of the phase. */
    heap_build(e);
    while (e->nheap) {
        int32_t qi = e->heap[0];
        e->heap[0] = e->heap[--e->nheap];
        if (e->nheap)
            heap_down(e, 0);
        struct acct *q = &e->q[qi];
        for (size_t k = 0; k < q->count; k++) {
            int32_t pi = e->order[q->first + k];
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
            struct search sr = {p, pi, qi, M_RECLAIM, {0}};
            bool found = false;
            if (why == FAIR_PENDING_NO_NODE_FITS && entitled(e, qi, p) &&
                !over(q->live, q->resv, p->request.v, q->fs)) {
                rc = search_for(e, &sr, &found);
                if (rc)
                    return rc;
                if (!found && !e->starved && could_fit(e, p))
                    e->starved = true;
            }
            if (found || !q->has_victim || q->minvprio >= p->priority)
                continue;
            sr.mode = M_PREEMPT;
            for (int r = 0; r < NRES; r++) {
                int64_t b = q->live[r] + q->resv[r] + p->request.v[r] - q->fs[r];
                sr.budget[r] = b > 0 ? b : 0;
            }
            rc = search_for(e, &sr, &found);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* ---- figures --------------------------------------------------------- */

static void fill_status(struct fair_share_status *st, const struct acct *a)
{
    for (int r = 0; r < NRES; r++) {
        st->guaranteed.v[r] = a->g[r];
        st->fair_share.v[r] = a->fs[r];
        st->allocated.v[r] = a->alloc0[r];
        st->allocated_after.v[r] = a->alloc[r] - a->evicted[r];
        st->demand.v[r] = a->demand[r];
        int64_t b = a->alloc0[r] - a->g[r];
        st->borrowed.v[r] = b > 0 ? b : 0;
    }
    st->pending_pods = a->npending;
    st->running_pods = a->nrunning;
}

/* lent: idle guarantee (guaranteed - allocated, at least 0), scaled down to
 * what the siblings actually borrow, with the usual remainder rule. */
static int fill_lent(struct eng *e, struct fair_share_status *st, const struct acct *a, size_t n,
                     const char *const *names)
{
    int rc = FAIR_ENOMEM;
    int64_t *idle = fair_calloc(n ? n : 1, sizeof(int64_t));
    int64_t *out = fair_calloc(n ? n : 1, sizeof(int64_t));
    void *scratch = fair_calloc(1, FAIR_SHARE_SCRATCH(n ? n : 1));
    if (!idle || !out || !scratch)
        goto out;
    e->bytes += 2 * n * sizeof(int64_t) + FAIR_SHARE_SCRATCH(n);
    for (int r = 0; r < NRES; r++) {
        i128 borrowed = 0;
        for (size_t i = 0; i < n; i++) {
            idle[i] = a[i].valid && a[i].g[r] > a[i].alloc0[r] ? a[i].g[r] - a[i].alloc0[r] : 0;
            if (a[i].valid)
                borrowed += st[i].borrowed.v[r];
        }
        fair_share_scale(idle, names, n, borrowed > INT64_MAX ? INT64_MAX : (int64_t)borrowed, out,
                         scratch);
        for (size_t i = 0; i < n; i++)
            st[i].lent.v[r] = out[i];
    }
    rc = 0;
out:
    fair_free(idle);
    fair_free(out);
    fair_free(scratch);
    return rc;
}

static int figures(struct eng *e)
{
    const struct fair_snapshot *s = e->s;
    struct fair_result *res = e->res;
    int rc = FAIR_ENOMEM;
    size_t n = s->nprojects > s->nqueues ? s->nprojects : s->nqueues;
    const char **names = fair_calloc(n ? n : 1, sizeof(char *));
    if (!names)
        goto out;
    for (size_t i = 0; i < s->nqueues; i++) {
        fill_status(&res->queues[i], &e->q[i]);
        names[i] = s->queues[i].q.name;
    }
    rc = fill_lent(e, res->queues, e->q, s->nqueues, names);
    if (rc)
        goto out;
    for (size_t i = 0; i < s->nprojects; i++) {
        fill_status(&res->projects[i], &e->p[i]);
        names[i] = s->projects[i].q.name;
    }
    rc = fill_lent(e, res->projects, e->p, s->nprojects, names);
    if (rc)
        goto out;
    struct fair_share_status *c = &res->cluster;
    for (size_t i = 0; i < s->nprojects; i++) {
        if (!e->p[i].valid)
            continue;
        const struct fair_share_status *p = &res->projects[i];
        for (int r = 0; r < NRES; r++) {
            c->guaranteed.v[r] += p->guaranteed.v[r];
            c->allocated.v[r] += p->allocated.v[r];
            c->allocated_after.v[r] += p->allocated_after.v[r];
            c->demand.v[r] = fair_sat_add(c->demand.v[r], p->demand.v[r]);
            c->borrowed.v[r] += p->borrowed.v[r];
            c->lent.v[r] += p->lent.v[r];
        }
        c->pending_pods += p->pending_pods;
        c->running_pods += p->running_pods;
    }
    c->fair_share = res->capacity;
    rc = 0;
out:
    fair_free(names);
    return rc;
}

/* ---- entry point ----------------------------------------------------- */

static void eng_release(struct eng *e)
{
    if (e->pl_ready)
        fair_place_release(&e->pl);
    fair_free(e->node_ok);
    fair_free(e->pflags);
    fair_free(e->pgang);
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
    fair_free(e->vorder);
    fair_free(e->cand);
    fair_free(e->clist);
    fair_free(e->nstamp);
    fair_free(e->vsum);
    fair_free(e->rrank);
    fair_free(e->qvlist);
    fair_free(e->qvoff);
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
    rc = check_indices(&e);
    if (rc)
        goto out;
    rc = FAIR_ENOMEM;
    e.node_ok = eng_calloc(&e, snap->nnodes, sizeof(*e.node_ok));
    e.pflags = eng_calloc(&e, snap->npods, sizeof(*e.pflags));
    e.pgang = eng_calloc(&e, snap->npods, sizeof(*e.pgang));
    e.masks = eng_calloc(&e, snap->npods, sizeof(*e.masks));
    e.q = eng_calloc(&e, snap->nqueues, sizeof(*e.q));
    e.p = eng_calloc(&e, snap->nprojects, sizeof(*e.p));
    e.heap = eng_calloc(&e, snap->nqueues, sizeof(*e.heap));
    result->queues = eng_calloc(&e, snap->nqueues, sizeof(*result->queues));
    result->projects = eng_calloc(&e, snap->nprojects, sizeof(*result->projects));
    result->pending_reasons = eng_calloc(&e, snap->npods, sizeof(*result->pending_reasons));
    if (!e.node_ok || !e.pflags || !e.pgang || !e.masks || !e.q || !e.p || !e.heap ||
        !result->queues || !result->projects || !result->pending_reasons)
        goto nomem;
    result->nqueues = snap->nqueues;
    result->nprojects = snap->nprojects;
    result->npods = snap->npods;
    for (size_t i = 0; i < snap->npods; i++)
        e.pgang[i] = -1;
    rc = check_objects(&e);
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
    compute_capacity(&e);
    account_pods(&e);
    rc = compute_fair_share(&e);
    if (rc)
        goto nomem;
    rc = fair_place_init(&e.pl, snap, e.node_ok, e.masks);
    if (rc)
        goto nomem;
    e.pl_ready = true;
    e.bytes += e.pl.bytes;
    rc = build_order(&e);
    if (rc)
        goto nomem;
    compute_damp(&e);
    rc = run_pass(&e, 1);
    if (rc)
        goto nomem;
    rc = reclaim_phase(&e);
    if (rc)
        goto nomem;
    fair_place_forget(&e.pl);
    if (!e.starved) {
        rc = run_pass(&e, 2);
        if (rc)
            goto nomem;
    }
    rc = figures(&e);
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
    fair_free(result->problems);
    memset(result, 0, sizeof(*result));
}
