/* The state of one engine cycle, shared by the files that run it (internal
 * to lib/engine; users include engine/engine.h). fair_engine_run() in
 * engine.c drives the steps in order: validate.c checks the snapshot,
 * shares.c computes capacity and fair shares, admit.c orders the pending
 * pods and runs the admission passes, reclaim.c reclaims and preempts,
 * figures.c fills the result's figures. docs/engine.md explains each rule.
 * Everything here is pure: no I/O, clock or globals. */
#ifndef FAIR_ENGINE_CYCLE_H
#define FAIR_ENGINE_CYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/placement.h"

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
    /* Bound members of a running gang (reclaim.c, gang units): the core
     * (up to gang_size of them) goes only as a whole unit; the members
     * above gang_size (an elastic gang's extras) go one by one, first. */
    PF_GANG_CORE = 64,
    PF_GANG_EXTRA = 128,
};

/* A request a victim search failed for, with the pod's constraints (by
 * identity of their arrays: the same arrays mean the same constraints). */
#define FAIL_ENTRIES 4
struct fail_entry {
    int64_t req[FAIR_RES_COUNT];
    const char *model;
    int pool; /* the search's pool (reclaim in a GPU model pool), -1 */
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
    int64_t caplive;      /* queues: GPUs of live victims at the eviction bound */
    int64_t evicted[NRES];
    int32_t npending, nrunning;
    size_t first, count, cursor; /* queues: pending pods in e->order */
    int64_t minvprio;            /* queues: lowest (aged) priority of a victim */
    bool has_victim;
    bool blocked;       /* damped cycle: a pod found no room ... */
    int32_t block_prio; /* ... at this priority: lower ones wait */
    /* Smallest unconstrained request a victim search failed for, per mode:
     * bigger ones are not searched again this cycle. */
    struct fail_entry fail[3][FAIL_ENTRIES]; /* reclaim, preempt, fair-share reclaim */
    uint8_t nfail[3], fail_next[3];
    bool held;     /* a node was held for one of its pods this cycle */
    int32_t young; /* victims too young for reclaim up to a fair share */
    /* models.c: the part of the effective guarantee that may not be lent
     * (guaranteed - lendingLimit, at least 0), and the one that may. */
    int64_t keep[NRES];
    int64_t lendable[NRES];
};

/* One object's account in one GPU model pool (models.c). */
struct macct {
    int64_t g, lim, keep, lendable, fs, demand, alloc0, alloc;
    /* Reclaim (reclaim.c): bound there, not terminating, not evicted; and
     * reserved there for pods waiting on evictions. */
    int64_t live, resv;
    /* The object (or a queue's project) has a quota for the model: its
     * pods that name the model are held to its fair share of the pool. */
    bool quota;
};

/* Victims as the victim search reads them, in victim order: where they
 * are (struct vpos: all that the search's walk reads of most victims) and
 * what evicting them frees (struct victim). The walk reads these arrays in
 * order instead of the pods. */
struct vpos {
    int32_t queue;
    int32_t rank; /* its node's rank */
    int64_t gpu;  /* its GPU request */
};

/* A node's fut devices in brief: how many are wholly free, the most free
 * milli on one device, and the most on one not wholly free. */
struct fbrief {
    int16_t nfull;
    int16_t maxf;
    int16_t maxp;
};

struct victim {
    int32_t pod;
    bool old;      /* ran at least snapshot.over_quota_min_runtime_ms */
    bool capped;   /* evicted snapshot.max_evictions times: reclaim skips it */
    uint64_t mask; /* the devices it holds */
    int64_t lost;  /* work its eviction would lose (lost_work) */
    int64_t req[NRES];
};

/* A running gang as one victim (reclaim.c): its bound, not terminating
 * members (core and extras), taken all together or not at all. */
struct gunit {
    size_t first, count; /* members' pod indices in e->gumem */
    int32_t queue;
    int32_t pprio, qprio, prio; /* tiers, and the highest member priority */
    int64_t lost;               /* work lost, summed over the members */
    int64_t req[NRES];          /* what the members request in all */
    const char *gang;
    bool ok;  /* every member may be a victim (preemptible, ran long enough) */
    bool old; /* every member ran over_quota_min_runtime_ms */
};

struct gang {
    size_t first, count; /* members' positions in e->gmem */
    int32_t nbound;
    int32_t size;
    size_t leader; /* position in e->order of the first member */
};

/* How many of gang g's pending members form its unit, placed all at once:
 * as many as it lacks to reach its size. The others (an elastic gang's
 * members above its size) are placed one by one once the unit is bound
 * (admit.c, elastic_extra). */
static inline size_t gang_unit_count(const struct gang *g)
{
    int64_t need = (int64_t)g->size - g->nbound;
    if (need <= 0)
        return 0;
    return (size_t)need < g->count ? (size_t)need : g->count;
}

struct eng {
    const struct fair_snapshot *s;
    struct fair_result *res;
    struct fair_error *err;
    struct fair_place pl;
    bool pl_ready;
    bool *node_ok;
    uint8_t *pflags;
    int32_t *pgang; /* gang id of pending pods, -1 */
    int32_t *gidx;  /* pending gang members: position among the gang's pending members */
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
    int32_t *vlist;      /* victims by node rank, in victim order */
    size_t *voff;        /* nnodes + 1 offsets into vlist */
    int32_t *vrank;      /* pod -> victim-order position */
    struct vpos *vpos;   /* victims in victim order: where */
    struct victim *vict; /* victims in victim order: what */
    /* Reclaim's walk: positions in vpos of the victims whose queue may
     * lose them (queue_may_lose), in victim order; a superset once some
     * no longer may, rebuilt when stale (after unevict). */
    int32_t *vwalk;
    size_t nwalk;
    bool walk_stale;
    size_t nvict;
    /* Per node rank: whether a pod without constraints (GPU model, node
     * selector, toleration) may go there (fair_place_static_ok). */
    bool *nplain;
    /* Per node rank, kept by the reclaim phase (the only one to change the
     * fut view meanwhile): its fut devices in brief, so that a search skips
     * nodes whose devices cannot fit its pod without reading them. */
    struct fbrief *fbrief;
    int32_t *cand; /* node ranks with room being freed (fut differs) */
    size_t ncand;
    int32_t *clist; /* per search: nodes holding a plausible victim */
    uint32_t *nstamp;
    uint32_t stamp;
    int64_t (*vsum)[NRES]; /* per node rank: room its remaining victims hold */
    int32_t *rrank;        /* pending pod -> node rank of its reserved room */
    int32_t *qvlist;       /* victims by queue: positions in vict */
    size_t *qvoff;         /* nqueues + 1 */
    int searches;
    /* A wave of evictions is still terminating: take no new victims. */
    bool damp;
    /* Nodes held for pending pods (by rank; NULL: none), shared with the
     * placement, and per pod the rank it holds (-1). */
    const struct fair_pod **hold;
    int32_t *hold_of;
    /* A hold was let go after pass 1: pass 2 also tries the pods that
     * pass 1 found no room for (the held node may have been it). */
    bool holds_freed;
    int64_t young_total; /* sum of the queues' young */
    /* Running gangs as victim units, in unit victim order (reclaim.c). */
    struct gunit *gunits;
    size_t ngunits;
    int32_t *gumem; /* members' pod indices, unit by unit */
    int32_t *gutmp; /* scratch: one unit's members on one node */
    /* GPU model pools (models.c; nm 0: no node has a model). */
    size_t nm;
    const char *mname[FAIR_MAX_GPU_MODELS]; /* sorted */
    int8_t *nmodel;                         /* per node index: pool, -1 */
    int8_t *pmodel;        /* per pod: pool it names (pending) or sits on (bound), -1 */
    struct macct *qm, *pm; /* nqueues * nm, nprojects * nm */
    int64_t mcap[FAIR_MAX_GPU_MODELS], mused[FAIR_MAX_GPU_MODELS];
    /* Per pool: the queues' fair share above what they hold there. */
    int64_t mowed[FAIR_MAX_GPU_MODELS];
    /* Reclaim: victims grouped by the pool of their node (positions in
     * vpos, in victim order); pool m's are mvlist[mvoff[m] .. mvoff[m+1]).
     * It is the second half of vwalk's allocation. */
    int32_t *mvlist;
    size_t mvoff[FAIR_MAX_GPU_MODELS + 1];
    bool keeps;                                     /* some object has a non-lendable guarantee */
    bool keep_r[NRES], keep_m[FAIR_MAX_GPU_MODELS]; /* ... of resource r, of pool m */
};

/* Queue qi's and project pi's accounts in pool m (e->nm > 0). */
static inline struct macct *eng_qm(const struct eng *e, size_t qi, size_t m)
{
    return &e->qm[qi * e->nm + m];
}

static inline struct macct *eng_pm(const struct eng *e, size_t pi, size_t m)
{
    return &e->pm[pi * e->nm + m];
}

struct ratio {
    int64_t num, den; /* den 0 with num > 0: infinite */
};

static inline int64_t r_or0(int64_t v)
{
    return v > 0 ? v : 0;
}

static inline const char *str_or(const char *s, const char *dflt)
{
    return s && s[0] ? s : dflt;
}

static inline int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* A quota's guarantee of resource r: on GPU, at least the sum of its
 * per-model guarantees (a guarantee of H100s only is also a GPU one). */
/* Whether snapshot pod i is a running member of a gang of a valid queue:
 * the pods that running gang units (reclaim.c) and the running
 * non-preemptible totals of shielded gangs (shares.c) are made of. */
static inline bool eng_running_gang_member(const struct eng *e, size_t i)
{
    const struct fair_pod *p = &e->s->pods[i];
    return p->state == FAIR_POD_BOUND && !p->terminating && p->gang && p->gang[0] &&
           (e->pflags[i] & (PF_MANAGED | PF_VALID)) == (PF_MANAGED | PF_VALID);
}

static inline int64_t quota_g(const struct fair_quota *q, int r)
{
    int64_t g = q->guaranteed.v[r];
    if (r != FAIR_RES_GPU || !q->models)
        return g;
    int64_t sum = 0;
    for (size_t i = 0; i < q->nmodels; i++)
        if (q->models[i].guaranteed > 0 && q->models[i].guaranteed < ((int64_t)1 << 50))
            sum += q->models[i].guaranteed;
    return sum > g ? sum : g;
}

/* The part of effective guarantee g that may not be lent (lendingLimit). */
static inline int64_t quota_keep(const struct fair_quota *q, int r, int64_t g)
{
    if (!(q->lending_set & (1u << r)) || q->lending_limit.v[r] >= g)
        return 0;
    return g - (q->lending_limit.v[r] > 0 ? q->lending_limit.v[r] : 0);
}

/* Loops over pods in admission or victim order read them far apart in
 * memory: they ask for the pod this many places ahead ahead of time. */
#define PREFETCH_AHEAD 4

static inline void prefetch_pod(const struct fair_pod *p)
{
    __builtin_prefetch(p);
    __builtin_prefetch((const char *)p + 64);
    __builtin_prefetch((const char *)p + 128);
}

/* engine.c: allocation counted in e->bytes, problems and actions. */
void *fair_eng_calloc(struct eng *e, size_t n, size_t size);
int fair_eng_add_problem(struct eng *e, enum fair_problem_kind kind, enum fair_object_kind obj,
                         int32_t index, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int fair_eng_add_action(struct eng *e, const struct fair_action *a);

/* validate.c: indices (FAIR_EINVAL when out of range), then every object. */
int fair_eng_check_indices(struct eng *e);
int fair_eng_check_objects(struct eng *e);

/* shares.c: capacity, per-queue accounting, fair share level by level. */
int fair_eng_compute_capacity(struct eng *e);
int fair_eng_account_pods(struct eng *e);
/* Working arrays of one fair-share pass over projects or queues, sized
 * max(projects, queues) (shares.c, models.c). */
struct share_ws {
    struct fair_share_child *ch;
    void *scratch;
    int64_t *val, *out;
    const char **names;
    size_t *ids;
    size_t n;
};
/* 0, or FAIR_ENOMEM with nothing left to free; counted in e->bytes. */
int fair_eng_share_ws_init(struct eng *e, struct share_ws *w);
void fair_eng_share_ws_free(struct share_ws *w);
int fair_eng_compute_fair_share(struct eng *e);

/* admit.c: admission order, the queue heap, limits, passes 1 and 2. */
int fair_eng_build_order(struct eng *e);
/* Aging: the priority boost of a pod pending wait_ms in a queue with that
 * agingHalfLife, 2^(wait/half_life) - 1, linear between doublings, at most
 * 2^40 - 1; 0 when half_life_ms <= 0. */
int64_t fair_eng_aging_boost(int64_t wait_ms, int64_t half_life_ms);
/* Pod p's priority with its queue's aging: a pending pod's boost for its
 * wait so far, a bound pod's for the wait it had when it started (it keeps
 * the rank it earned, so a newer pod of higher base priority does not
 * preempt what aging let in). Plain priority without aging. */
int64_t fair_eng_eff_prio(const struct eng *e, const struct fair_pod *p);
struct ratio fair_eng_ratio_of(int64_t num, int64_t den);
int fair_eng_cmp_ratio(struct ratio a, struct ratio b);
void fair_eng_heap_down(struct eng *e, size_t i);
void fair_eng_heap_build(struct eng *e);
bool fair_eng_over(const int64_t *a, const int64_t *b, const int64_t *req, const int64_t *cap);
/* pass: 1 (within fair share), 2 (the leftovers), or FAIR_ENG_PASS_RETRY:
 * pass 1 again for the pods it found no room for, after holds were let
 * go (engine.c). */
#define FAIR_ENG_PASS_RETRY 3
int fair_eng_run_pass(struct eng *e, int pass);

/* reclaim.c: the eviction wave in progress (damp), nodes held for pods
 * from earlier cycles, reclaim and preemption. */
void fair_eng_compute_damp(struct eng *e);
void fair_eng_apply_holds(struct eng *e);
/* Whether pod p was evicted snapshot.max_evictions times, or may not
 * borrow under snapshot.lend_max_runtime_ms, and is a GPU pod of a queue
 * with a GPU guarantee: it runs only within that guarantee and reclaim
 * never takes it again (reclaim.c). */
bool fair_eng_capped(const struct eng *e, const struct fair_pod *p);
/* Whether GPU pod p may run above its queue's GPU guarantee under
 * snapshot.lend_max_runtime_ms (admit.c). */
bool fair_eng_lendable(const struct fair_snapshot *s, const struct fair_pod *p);
int fair_eng_reclaim_phase(struct eng *e);
/* Lets go the holds of pods bound this cycle (bound_only), or of every pod
 * not left NODE_HELD; true if any went (e->holds_freed is then set). */
bool fair_eng_release_holds(struct eng *e, bool bound_only);

/* models.c: GPU model pools and lending limits (docs/engine.md, "GPU
 * model pools", "Lending limit"). Called after account_pods (setup:
 * pools, accounting, keeps, and the project and queue demand raised to
 * their keeps), after compute_fair_share (fair shares per pool), by
 * admission (checks, placement and binds) and by figures. */
int fair_eng_models_setup(struct eng *e);
int fair_eng_models_fair_share(struct eng *e);
/* Why req of pod p (or its gang, req summed, per pool in mreq) cannot be
 * admitted to its queue on the model pools and lending limits; NONE. */
enum fair_pending_reason fair_eng_models_check(const struct eng *e, const struct fair_pod *p,
                                               const int64_t *req, const int64_t *mreq, int pass);
/* Adds pod p's request to mreq (per pool) when it names a model. */
void fair_eng_models_req(const struct eng *e, const struct fair_pod *p, int64_t *mreq);
/* fair_place_find, keeping a GPU pod that names no model off the pools it
 * may not use now; *why says why when no pool is allowed. */
int32_t fair_eng_models_place(struct eng *e, const struct fair_pod *p, int pass, uint64_t *mask,
                              enum fair_pending_reason *why);
/* A bind (sign 1) or its undoing (-1) of pod pi on node (snapshot index). */
void fair_eng_models_bind(struct eng *e, int32_t pi, int32_t node, int sign);
int fair_eng_models_figures(struct eng *e);

/* figures.c: per queue, project and cluster figures of the result. */
int fair_eng_figures(struct eng *e);

#endif
