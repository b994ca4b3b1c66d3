/* Trace replay through the engine on a virtual clock (design note in
 * replay.h): arrivals, completions and cycles in time order, statistics
 * and time series on the way. */
#include "sim/replay.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/tz.h"
#include "ctl/timequota.h"
#include "sim/engine_place.h"

#define INF INT64_MAX
#define SIM_MAX_ZONES 64
#define WINDOW_HORIZON_MS (8 * 86400000LL)

enum { J_FUTURE = 0, J_PENDING, J_RUNNING, J_DONE };

/* One pod. */
struct jstate {
    int8_t st;
    uint8_t reason; /* the engine's pending reason at the last cycle */
    int32_t pos;    /* index in the pending or running list */
    int32_t node;
    uint64_t dev;
    uint32_t gen; /* bumped at each start: stale completions are skipped */
    int64_t started;
    int64_t progress;   /* run time saved by checkpoints */
    int64_t evicted_at; /* the last eviction; -1 */
    int32_t queue;
    int32_t rec;       /* its job in run->jobs */
    int32_t bind_act;  /* this cycle's BIND action; -1 */
    int32_t evictions; /* times it was stopped by an eviction */
    /* The node the engine holds for it (-1) and since when (0: never),
     * from the last cycle, for the next snapshot. */
    int32_t hold_node;
    int64_t hold_since;
};

struct done_ev {
    int64_t t;
    int32_t job;
    uint32_t gen;
};

/* One queue's running figures. */
struct qstate {
    int64_t alloc, fair, guar, pend_gpu;
    int32_t running, pending;
    struct fair_sim_sizes sizes; /* GPU requests of pending pods and gangs */
    struct fair_sim_spans ttg;   /* owed its guarantee */
    int64_t ge_ms, delivered, owed;
};

struct replay {
    const struct fair_sim_trace *t;
    const struct fair_sim_config *cfg;
    const int32_t *queue_of;
    struct fair_sim_opts opts;
    struct fair_sim_run *run;
    struct fair_sim_cluster cluster;
    struct fair_sim_placer placer;
    bool have_placer;
    struct fair_sim_enodes en;
    struct jstate *js;
    int32_t *rec_done; /* per job: pods completed */
    int32_t *pending, *running;
    size_t npending, nrunning;
    struct done_ev *heap;
    size_t nheap, heapcap;
    struct fair_pod *pods;
    int32_t *pod_job;
    size_t podcap;
    int32_t *fitlist; /* pending pods counted for idle-while-fits */
    uint8_t *held;    /* per node: held for a pending pod by the last cycle */
    /* Evictions of the last cycle: the node each freed room on, and the
     * pending pod it was made for (a reservation until that pod binds). */
    int32_t *freed_node, *freed_for;
    size_t nfreed;
    /* Fraction tenancy, for idle-while-fits (NULL when every fraction may
     * share with every other): each job's tenant key (its Project, or one
     * key for the Projects that share across), and each device's. */
    int32_t *job_key, *dev_key;
    struct fair_sim_fit_scratch fit;
    struct qstate *q;
    size_t nq;
    int64_t pending_gpu;
    int64_t now;
    int64_t next_sample, sample_every;
    size_t samplecap;
    int64_t peak_alloc;
    int64_t last_t;
    /* Idle while a pending pod fits, and free GPUs of held nodes, as the
     * last cycle left them. */
    int64_t idle_all, idle_adm, idle_held;
    /* Time-based engine rules: a cycle due then even without a change. */
    int64_t wake;
    int64_t last_start;     /* the latest start of a pod */
    int64_t max_runtime_ms; /* the longest minimum runtime of any rule */
    struct fair_sim_spans idle_all_spans, idle_adm_spans;
    /* Decayed usage per project (opts.usage_half_life_ms or the spec's):
     * the projects handed to the engine, with .usage set. */
    struct fair_project *proj;
    double *usage;
    double *qusage; /* per queue, with its project's half-life, into queues[].usage */
    int64_t *half_life;
    int64_t usage_t;
    bool any_usage;
    /* Time windows and budgets (opts.start_wall_ms): the queues handed to
     * the engine; the zones loaded (tz: opts.time_zone's); per project the
     * budget's period [bfrom, bto) in wall time, its use (milli-GPU x ms)
     * and whether its pending pods are held (action block); the next
     * window switch or period end in simulated time (INF: none). */
    bool any_time, any_budget;
    struct fair_queue *queues;
    struct fair_tz *tz;
    struct fair_tz *zones[SIM_MAX_ZONES];
    char zone_names[SIM_MAX_ZONES][FAIR_TZ_NAME_MAX + 1];
    size_t nzones;
    int64_t *bused, *bfrom, *bto, *palloc;
    bool *blocked, *spent;
    /* The window in force per project and queue (-2: no schedule), and the
     * budget alert level announced in each project's current period. */
    int16_t *pwin, *qwin;
    int32_t *blevel;
    int64_t win_next;
};

void fair_sim_opts_default(struct fair_sim_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->over_quota_threshold_pct = 10;
    o->over_quota_min_runtime_ms = 60000;
    o->max_evictions = 3;
    o->hold_timeout_ms = 600000;
    o->start_wall_ms = 1767571200000LL; /* 2026-01-05T00:00:00Z, a Monday */
}

int64_t fair_sim_declared_ms(const struct fair_sim_trace *t, size_t j,
                             const struct fair_sim_opts *o)
{
    static const int64_t M = 60000;
    static const int64_t bucket[] = {15 * M,  30 * M,  60 * M,   120 * M, 240 * M,
                                     480 * M, 720 * M, 1440 * M, 4320 * M};
    if (o->declared_pct <= 0 || j >= t->njobs)
        return 0;
    const struct fair_sim_job *jb = &t->jobs[j];
    if (jb->duration_ms <= 0 || jb->duration_ms == FAIR_SIM_FOREVER)
        return 0;
    /* The pods of a multi-pod job declare alike: hash its first member. */
    uint64_t h = ((uint64_t)(j - (size_t)jb->member) + 1) * 0x9E3779B97F4A7C15ull;
    if (o->declared_none_pct > 0 && (int32_t)((h >> 32) % 100) < o->declared_none_pct)
        return 0;
    int64_t pct = o->declared_pct < 100 ? 100 : o->declared_pct;
    if (jb->duration_ms > INT64_MAX / 1000)
        return 0;
    int64_t d = (jb->duration_ms * pct + 99) / 100;
    d = (d + M - 1) / M * M;
    if (!o->declared_buckets)
        return d;
    for (size_t i = 0; i < sizeof(bucket) / sizeof(bucket[0]); i++)
        if (d <= bucket[i])
            return bucket[i];
    return (d + 1440 * M - 1) / (1440 * M) * (1440 * M);
}

static const char *const status_names[FAIR_SIM_JOB_STATUS_COUNT] = {
    "pending", "running", "completed", "no-node", "over-limit", "over-guarantee",
};

const char *fair_sim_job_status_name(enum fair_sim_job_status s)
{
    return (unsigned)s < FAIR_SIM_JOB_STATUS_COUNT ? status_names[s] : "?";
}

/* Arrival time of job j after --speedup. */
static int64_t submit_at(const struct replay *r, int32_t j)
{
    int64_t first = r->t->jobs[0].submit_ms;
    return first + (r->t->jobs[j].submit_ms - first) / r->opts.speedup;
}

static struct fair_sim_jobrec *rec_of(struct replay *r, int32_t j)
{
    return &r->run->jobs[r->js[j].rec];
}

static bool ev_less(const struct done_ev *a, const struct done_ev *b)
{
    return a->t != b->t ? a->t < b->t : a->job < b->job;
}

static int heap_push(struct replay *r, struct done_ev e)
{
    if (fair_grow((void **)&r->heap, &r->heapcap, r->nheap + 1, sizeof(*r->heap)))
        return FAIR_ENOMEM;
    size_t i = r->nheap++;
    r->heap[i] = e;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ev_less(&r->heap[i], &r->heap[p]))
            break;
        struct done_ev tmp = r->heap[p];
        r->heap[p] = r->heap[i];
        r->heap[i] = tmp;
        i = p;
    }
    return 0;
}

static struct done_ev heap_pop(struct replay *r)
{
    struct done_ev top = r->heap[0];
    r->heap[0] = r->heap[--r->nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < r->nheap && ev_less(&r->heap[l], &r->heap[m]))
            m = l;
        if (l + 1 < r->nheap && ev_less(&r->heap[l + 1], &r->heap[m]))
            m = l + 1;
        if (m == i)
            break;
        struct done_ev tmp = r->heap[m];
        r->heap[m] = r->heap[i];
        r->heap[i] = tmp;
        i = m;
    }
    return top;
}

static void list_add(int32_t *list, size_t *n, struct jstate *js, int32_t j)
{
    js[j].pos = (int32_t)*n;
    list[(*n)++] = j;
}

static void list_del(int32_t *list, size_t *n, struct jstate *js, int32_t j)
{
    int32_t pos = js[j].pos, last = list[--*n];
    list[pos] = last;
    js[last].pos = pos;
}

static int64_t budget_mms(const struct fair_ktime *tm)
{
    return tm->budget_milli_hours * 3600000; /* GPU-hours x 1000 -> milli-GPU x ms */
}

static const struct fair_ktime *budget_of(const struct replay *r, size_t p)
{
    const struct fair_kproject *kp = r->cfg->kprojects ? r->cfg->kprojects[p] : NULL;
    if (!kp || !kp->time || kp->time->budget_period == FAIR_KBUDGET_NONE)
        return NULL;
    return kp->time;
}

/* r->palloc: each project's GPU allocation now, summed over its queues. */
static void sum_project_alloc(struct replay *r)
{
    size_t np = r->cfg->nprojects;
    memset(r->palloc, 0, (np ? np : 1) * sizeof(*r->palloc));
    for (size_t q = 0; q < r->nq; q++) {
        int32_t p = r->cfg->queues[q].project;
        if (p >= 0 && (size_t)p < np)
            r->palloc[p] += r->q[q].alloc;
    }
}

/* Records the budget alerts of project p whose level its use reached in
 * [t0, t1], where it went from used0 at the rate palloc (milli-GPU): each
 * level once per period, at the exact instant, as the controller's
 * Events (ctl/tqstate.h) at 80% and 100%. */
static int budget_alerts(struct replay *r, size_t p, int64_t used0, int64_t palloc, int64_t t0,
                         int64_t t1)
{
    const struct fair_ktime *tm = budget_of(r, p);
    if (!tm)
        return 0;
    int64_t b = budget_mms(tm);
    int level = fair_ctl_budget_level(r->bused[p], b);
    for (int thr = 80; thr <= 100; thr += 20) {
        if (level < thr || r->blevel[p] >= thr)
            continue;
        /* The least use at that level: the budget, or ceil(4/5 of it). */
        int64_t need = thr == 100 ? b : b - b / 5;
        int64_t t = t0;
        if (need > used0 && palloc > 0) {
            t = t0 + (need - used0 + palloc - 1) / palloc;
            if (t > t1)
                t = t1;
        }
        r->blevel[p] = thr;
        struct fair_sim_run *run = r->run;
        if (run->nalerts >= FAIR_SIM_MAX_TQ_EVENTS) {
            run->alerts_dropped++;
            continue;
        }
        struct fair_sim_budget_alert *na =
            fair_realloc(run->alerts, (run->nalerts + 1) * sizeof(*na));
        if (!na)
            return FAIR_ENOMEM;
        run->alerts = na;
        na[run->nalerts++] = (struct fair_sim_budget_alert){.t_ms = t,
                                                            .period_start_wall_ms = r->bfrom[p],
                                                            .budget_mms = b,
                                                            .project = (int32_t)p,
                                                            .level = thr};
    }
    return 0;
}

/* Records that the window in force for project p (queue -1) or queue q
 * (p -1) is now w, if it changed. */
static int note_switch(struct replay *r, int32_t p, int32_t q, int w)
{
    int16_t *cur = p >= 0 ? &r->pwin[p] : &r->qwin[q];
    if (*cur == w)
        return 0;
    *cur = (int16_t)w;
    struct fair_sim_run *run = r->run;
    if (run->nswitches >= FAIR_SIM_MAX_TQ_EVENTS) {
        run->switches_dropped++;
        return 0;
    }
    struct fair_sim_switch *ns = fair_realloc(run->switches, (run->nswitches + 1) * sizeof(*ns));
    if (!ns)
        return FAIR_ENOMEM;
    run->switches = ns;
    ns[run->nswitches++] =
        (struct fair_sim_switch){.t_ms = r->now, .project = p, .queue = q, .window = w};
    return 0;
}

static int add_sample(struct replay *r, int64_t at)
{
    struct fair_sim_run *run = r->run;
    size_t nq = r->nq;
    size_t old = r->samplecap;
    if (run->nsamples + 1 > r->samplecap) {
        size_t cap = r->samplecap;
        if (fair_grow((void **)&run->samples, &cap, run->nsamples + 1, sizeof(*run->samples)))
            return FAIR_ENOMEM;
        struct fair_sim_qsample *nqs = fair_realloc(run->qsamples, cap * nq * sizeof(*nqs));
        if (!nqs) {
            r->samplecap = old < cap ? old : cap;
            return FAIR_ENOMEM;
        }
        run->qsamples = nqs;
        r->samplecap = cap;
    }
    struct fair_sim_sample *s = &run->samples[run->nsamples];
    s->t_ms = at;
    s->gpu_allocated = r->cluster.gpu_allocated;
    s->pending_gpu = r->pending_gpu;
    s->running = (int32_t)r->nrunning;
    s->pending = (int32_t)r->npending;
    for (size_t q = 0; q < nq; q++) {
        struct fair_sim_qsample *qs = &run->qsamples[run->nsamples * nq + q];
        const struct qstate *st = &r->q[q];
        qs->allocated = st->alloc;
        qs->fair_share = st->fair;
        qs->guaranteed = st->guar;
        qs->demand = st->alloc + st->pend_gpu;
        qs->running = st->running;
        qs->pending = st->pending;
        int32_t p = r->cfg->queues[q].project;
        bool pok = p >= 0 && (size_t)p < r->cfg->nprojects;
        qs->window = r->qwin ? r->qwin[q] : -2;
        qs->project_window = r->pwin && pok ? r->pwin[p] : -2;
        qs->budget_used = -1;
        if (r->any_budget && pok && r->cfg->kprojects && r->cfg->kprojects[p] &&
            r->cfg->kprojects[p]->time &&
            r->cfg->kprojects[p]->time->budget_period != FAIR_KBUDGET_NONE)
            qs->budget_used = r->bused[p];
    }
    run->nsamples++;
    return 0;
}

/* Moves the clock to T: samples strictly before T see the state so far,
 * and the time integrals take the interval since the last move. */
static int advance(struct replay *r, int64_t T)
{
    while (r->next_sample < T) {
        if (add_sample(r, r->next_sample))
            return FAIR_ENOMEM;
        r->next_sample += r->sample_every;
    }
    int64_t dt = T - r->last_t;
    if (r->cluster.gpu_allocated > r->peak_alloc)
        r->peak_alloc = r->cluster.gpu_allocated;
    if (dt > 0) {
        r->run->idle_fit.gpu_ms += r->idle_all * dt;
        r->run->idle_fit_admissible.gpu_ms += r->idle_adm * dt;
        r->run->held_idle_gpu_ms += r->idle_held * dt;
        if (r->any_budget) {
            size_t np = r->cfg->nprojects;
            sum_project_alloc(r);
            for (size_t p = 0; p < np; p++) {
                int64_t used0 = r->bused[p];
                r->bused[p] += r->palloc[p] * dt;
                if (budget_alerts(r, p, used0, r->palloc[p], r->last_t, T))
                    return FAIR_ENOMEM;
            }
        }
        for (size_t q = 0; q < r->nq; q++) {
            struct qstate *s = &r->q[q];
            if (s->guar <= 0 || s->alloc + s->pend_gpu < s->guar)
                continue;
            s->ge_ms += dt;
            s->delivered += (s->alloc < s->guar ? s->alloc : s->guar) * dt;
            s->owed += s->guar * dt;
        }
    }
    r->last_t = T;
    r->now = T;
    return 0;
}

/* Whether queue q is owed its guarantee now: some pending pod (or gang)
 * of it would still fit within the guarantee. */
static bool owed(const struct qstate *s)
{
    int64_t m = fair_sim_sizes_min(&s->sizes);
    return s->guar > 0 && m > 0 && s->alloc + m <= s->guar;
}

/* A settle point (replay.h): the queues' guarantee episodes. */
static int settle(struct replay *r)
{
    for (size_t q = 0; q < r->nq; q++)
        if (fair_sim_spans_note(&r->q[q].ttg, r->now, owed(&r->q[q])))
            return FAIR_ENOMEM;
    return 0;
}

/* The request a pending unit stands for in its queue's size set: a
 * single pod's, or a whole gang's (entered with member 0). */
static int64_t unit_size(const struct fair_sim_job *job)
{
    return job->gpu_milli * (job->gang_size > 1 ? job->gang_size : 1);
}

static void account_stop(struct replay *r, int32_t j)
{
    struct jstate *s = &r->js[j];
    const struct fair_sim_job *job = &r->t->jobs[j];
    rec_of(r, j)->used_gpu_ms += job->gpu_milli * (r->now - s->started);
    fair_sim_cluster_unbind(&r->cluster, (size_t)s->node, s->dev, job);
    list_del(r->running, &r->nrunning, r->js, j);
    r->q[s->queue].alloc -= job->gpu_milli;
    r->q[s->queue].running--;
}

static int make_pending(struct replay *r, int32_t j)
{
    struct jstate *s = &r->js[j];
    const struct fair_sim_job *job = &r->t->jobs[j];
    struct qstate *q = &r->q[s->queue];
    s->st = J_PENDING;
    s->reason = FAIR_PENDING_NONE;
    s->hold_node = -1;
    s->hold_since = 0;
    list_add(r->pending, &r->npending, r->js, j);
    q->pending++;
    q->pend_gpu += job->gpu_milli;
    r->pending_gpu += job->gpu_milli;
    if (job->member == 0 && job->gpu_milli > 0)
        return fair_sim_sizes_add(&q->sizes, unit_size(job));
    return 0;
}

/* The engine's fraction tenancy (fair_place_tenant): a job's key is its
 * Project, or one shared key for the Projects that opt in to sharing.
 * Off (NULL) when there is only one key. */
static int init_tenancy(struct replay *r, struct fair_error *err)
{
    size_t np = r->cfg->nprojects, nshare = 0;
    for (size_t p = 0; p < np; p++)
        nshare += r->cfg->projects[p].share_fractions;
    if (np - nshare + (nshare > 0) <= 1)
        return 0;
    size_t nj = r->t->njobs ? r->t->njobs : 1;
    r->job_key = fair_calloc(nj, sizeof(*r->job_key));
    r->dev_key = fair_calloc(r->cluster.nnodes * FAIR_MAX_GPUS_PER_NODE + 1, sizeof(*r->dev_key));
    if (!r->job_key || !r->dev_key)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
    for (size_t j = 0; j < r->t->njobs; j++) {
        int32_t p = r->cfg->queues[r->queue_of[j]].project;
        r->job_key[j] = p < 0 || r->cfg->projects[p].share_fractions ? -1 : p;
    }
    r->fit.job_key = r->job_key;
    r->fit.dev_key = r->dev_key;
    return 0;
}

/* A fraction of job j now on device dev of node: the device's key is j's
 * if j is alone there, several keys close it (as in the engine). */
static void take_key(struct replay *r, int32_t j, int32_t node, uint64_t dev)
{
    const struct fair_sim_job *job = &r->t->jobs[j];
    if (!r->dev_key || job->gpu_milli <= 0 || job->gpu_milli >= FAIR_GPU_DEVICE_MILLI || !dev)
        return;
    int d = __builtin_ctzll(dev);
    int32_t *k = &r->dev_key[(size_t)node * FAIR_MAX_GPUS_PER_NODE + (size_t)d];
    if (r->cluster.n[node].gpu_free[d] + job->gpu_milli == FAIR_GPU_DEVICE_MILLI)
        *k = r->job_key[j];
    else if (*k != r->job_key[j])
        *k = FAIR_SIM_KEY_MIXED;
}

static int start_job(struct replay *r, int32_t j, int32_t node, uint64_t dev)
{
    struct jstate *s = &r->js[j];
    const struct fair_sim_job *job = &r->t->jobs[j];
    struct qstate *q = &r->q[s->queue];
    list_del(r->pending, &r->npending, r->js, j);
    q->pending--;
    q->pend_gpu -= job->gpu_milli;
    r->pending_gpu -= job->gpu_milli;
    if (job->member == 0 && job->gpu_milli > 0)
        fair_sim_sizes_del(&q->sizes, unit_size(job));
    s->st = J_RUNNING;
    s->node = node;
    s->dev = dev;
    take_key(r, j, node, dev);
    s->started = r->now;
    s->gen++;
    s->hold_node = -1;
    s->hold_since = 0;
    r->last_start = r->now;
    struct fair_sim_jobrec *rec = rec_of(r, j);
    if (rec->first_start_ms < 0)
        rec->first_start_ms = r->now;
    list_add(r->running, &r->nrunning, r->js, j);
    q->alloc += job->gpu_milli;
    q->running++;
    r->run->binds++;
    if (job->duration_ms != FAIR_SIM_FOREVER)
        return heap_push(r, (struct done_ev){r->now + job->duration_ms - s->progress, j, s->gen});
    return 0;
}

/* Stops running pod j for an eviction: the work since its last
 * checkpoint is lost, and it waits again. */
static int stop_evicted(struct replay *r, int32_t j)
{
    struct jstate *s = &r->js[j];
    const struct fair_sim_job *job = &r->t->jobs[j];
    int64_t saved = 0;
    int64_t lost = fair_sim_lost_ms(r->now - s->started, r->opts.checkpoint_ms, &saved);
    s->progress += saved;
    rec_of(r, j)->lost_gpu_ms += job->gpu_milli * lost;
    account_stop(r, j);
    s->gen++;
    s->evicted_at = r->now;
    s->evictions++;
    return make_pending(r, j);
}

/* The engine evicted pod j: it stops, and so do the other running pods of
 * its job (a multi-pod job cannot go on without one of its pods). */
static int evict(struct replay *r, int32_t j)
{
    struct fair_sim_jobrec *rec = rec_of(r, j);
    rec->restarts++;
    for (int32_t k = rec->first; k < rec->first + rec->pods; k++)
        if (r->js[k].st == J_RUNNING) {
            int rc = stop_evicted(r, k);
            if (rc)
                return rc;
        }
    return 0;
}

static void note_failure(struct replay *r)
{
    if (r->run->first_fail_ms < 0) {
        r->run->first_fail_ms = r->now;
        r->run->first_fail_unallocated = fair_sim_cluster_unallocated(&r->cluster);
    }
}

/* Binds pod j where the action (or the baseline policy) says. 1: bound,
 * 0: it did not fit (counted), <0: error. */
static int bind_one(struct replay *r, int32_t j, const struct fair_action *a, int32_t *node,
                    uint64_t *dev)
{
    const struct fair_sim_job *job = &r->t->jobs[j];
    *node = a->node;
    *dev = a->gpu_devices;
    if (r->have_placer && fair_sim_place(&r->placer, &r->cluster, job, node, dev)) {
        note_failure(r);
        return 0;
    }
    if (*node < 0 || (size_t)*node >= r->cluster.nnodes ||
        fair_sim_cluster_bind(&r->cluster, (size_t)*node, *dev, job)) {
        r->run->bind_conflicts++;
        FAIR_WARN("sim",
                  "msg=\"engine bind does not fit the simulated node\" pod=%s node=%d "
                  "devices=%#llx",
                  job->name, *node, (unsigned long long)*dev);
        return 0;
    }
    return 1;
}

/* Applies the BIND of pod j, or of all the pods of j's job at once (a
 * multi-pod job starts whole or not at all). *changed: something started. */
static int apply_bind(struct replay *r, const struct fair_result *res, int32_t j, bool *changed)
{
    const struct fair_sim_jobrec *rec = rec_of(r, j);
    int32_t first = rec->pods > 1 ? rec->first : j, n = rec->pods > 1 ? rec->pods : 1;
    for (int32_t k = first; k < first + n; k++)
        if (r->js[k].st != J_PENDING || r->js[k].bind_act < 0)
            return 0; /* a gang not bound whole: wait */
    int32_t placed = 0;
    int rc = 0;
    for (; placed < n; placed++) {
        int32_t k = first + placed;
        const struct fair_action *a = &res->actions[r->js[k].bind_act];
        rc = bind_one(r, k, a, &r->js[k].node, &r->js[k].dev);
        if (rc != 1)
            break;
    }
    if (rc != 1) {
        for (int32_t k = first + placed; k-- > first;)
            fair_sim_cluster_unbind(&r->cluster, (size_t)r->js[k].node, r->js[k].dev,
                                    &r->t->jobs[k]);
        for (int32_t k = first; k < first + n; k++)
            r->js[k].bind_act = -1;
        return rc < 0 ? rc : 0;
    }
    for (int32_t k = first; k < first + n; k++) {
        r->js[k].bind_act = -1;
        if (start_job(r, k, r->js[k].node, r->js[k].dev))
            return FAIR_ENOMEM;
    }
    *changed = true;
    return 0;
}

/* After a cycle: the idle GPU that pending pods could use at once, over
 * every pending pod, and over those the engine did not hold back for a
 * limit or for the bound on evictions, outside the nodes it holds or frees
 * room on for a reclaim; and the free GPUs of those nodes. Pods evicted in
 * this cycle and pods waiting for the room freed for them are the
 * eviction's own latency: left out. */
static int measure_idle(struct replay *r)
{
    size_t n = 0, na;
    for (size_t i = 0; i < r->npending; i++) {
        int32_t j = r->pending[i];
        const struct jstate *s = &r->js[j];
        if (r->t->jobs[j].member != 0 || r->t->jobs[j].gpu_milli <= 0 || s->evicted_at == r->now ||
            s->reason == FAIR_PENDING_WAITING_RECLAIM)
            continue;
        r->fitlist[n++] = j;
    }
    int rc = fair_sim_idle_fit(&r->cluster, r->fitlist, n, NULL, &r->fit, &r->idle_all);
    if (rc)
        return rc;
    na = 0;
    for (size_t i = 0; i < n; i++) {
        const struct jstate *s = &r->js[r->fitlist[i]];
        uint8_t why = s->reason;
        /* Evicted max_evictions times: the engine runs it only within its
         * queue's guarantee (the bound on evictions), a limit too. */
        bool bound = r->opts.max_evictions > 0 && s->evictions >= r->opts.max_evictions &&
                     why == FAIR_PENDING_FAIR_SHARE;
        /* Not declared short enough to borrow (lendMaxRuntime): a policy
         * choice, like a limit. */
        if (r->opts.lend_max_runtime_ms > 0 && r->opts.checkpoint_ms <= 0 &&
            why == FAIR_PENDING_FAIR_SHARE) {
            int64_t decl = fair_sim_declared_ms(r->t, (size_t)r->fitlist[i], &r->opts);
            if (decl <= 0 || decl > r->opts.lend_max_runtime_ms)
                bound = true;
        }
        if (why != FAIR_PENDING_OVER_LIMIT && why != FAIR_PENDING_OVER_GUARANTEE &&
            why != FAIR_PENDING_LENDING_KEPT && !bound)
            r->fitlist[na++] = r->fitlist[i];
    }
    bool holds = false;
    r->idle_held = 0;
    for (size_t nd = 0; nd < r->cluster.nnodes; nd++)
        if (r->held[nd]) {
            holds = true;
            r->idle_held += r->cluster.n[nd].gpu_free_total;
        }
    r->idle_adm = r->idle_all;
    if ((na < n || holds) &&
        (rc = fair_sim_idle_fit(&r->cluster, r->fitlist, na, r->held, &r->fit, &r->idle_adm)))
        return rc;
    if (fair_sim_spans_note(&r->idle_all_spans, r->now, r->idle_all > 0) ||
        fair_sim_spans_note(&r->idle_adm_spans, r->now, r->idle_adm > 0))
        return FAIR_ENOMEM;
    return 0;
}

/* After a cycle: the nodes held for pending pods, and the next moment a
 * time-based rule may change the engine's mind without any event: a
 * hold's timeout or the end of its cooldown; or, while a pod's reclaim is
 * held back and some running pod is younger than the longest minimum
 * runtime, the next cycle period (the engine does not say which victim it
 * waits for, so the replay asks again as the controller's resync would). */
static void plan_wake(struct replay *r)
{
    int64_t T = r->opts.hold_timeout_ms, wake = INF;
    bool held_back = false;
    memset(r->held, 0, r->cluster.nnodes);
    for (size_t i = 0; i < r->npending; i++) {
        const struct jstate *s = &r->js[r->pending[i]];
        if (s->hold_node >= 0 && (size_t)s->hold_node < r->cluster.nnodes)
            r->held[s->hold_node] = 1;
        if (T > 0 && s->hold_since > 0) {
            int64_t t1 = s->hold_since + T, t2 = s->hold_since + 2 * T;
            if (t1 > r->now && t1 < wake)
                wake = t1;
            else if (t1 <= r->now && t2 > r->now && t2 < wake)
                wake = t2;
        }
        held_back |= s->reason == FAIR_PENDING_RECLAIM_HELD;
    }
    if (held_back && r->now < r->last_start + r->max_runtime_ms && r->now + r->opts.cycle_ms < wake)
        wake = r->now + r->opts.cycle_ms;
    r->wake = wake;
}

/* Decayed usage up to r->now: U <- U 2^(-dt/H) + g H/ln2 (1 - 2^(-dt/H)),
 * exact for g, the project's running GPUs, held constant over dt (the
 * pods running now; those that ended since the last cycle are missed). */
static void decay_usage(struct replay *r)
{
    int64_t dt = r->now - r->usage_t;
    if (dt <= 0)
        return;
    size_t np = r->cfg->nprojects;
    for (size_t p = 0; p < np; p++)
        r->proj[p].usage = 0; /* scratch: running GPUs */
    for (size_t q = 0; q < r->nq; q++)
        r->queues[q].usage = 0; /* the same per queue */
    for (size_t i = 0; i < r->nrunning; i++) {
        int32_t j = r->running[i];
        int32_t q = r->js[j].queue;
        int32_t p = q >= 0 ? r->cfg->queues[q].project : -1;
        if (p >= 0 && (size_t)p < np)
            r->proj[p].usage += r->t->jobs[j].gpu_milli;
        if (q >= 0 && (size_t)q < r->nq)
            r->queues[q].usage += r->t->jobs[j].gpu_milli;
    }
    /* Queues: the same rule with their project's half-life (among a
     * project's queues, docs/engine.md "Decayed usage"). */
    for (size_t q = 0; q < r->nq; q++) {
        double g = (double)r->queues[q].usage;
        int32_t p = r->cfg->queues[q].project;
        int64_t h = p >= 0 && (size_t)p < np ? r->half_life[p] : 0;
        if (h > 0) {
            double f = exp2(-(double)dt / (double)h);
            r->qusage[q] = r->qusage[q] * f + g * (double)h / M_LN2 * (1 - f);
        }
        double u = r->qusage[q];
        r->queues[q].usage = u > 0 ? (u < 9e18 ? (int64_t)llround(u) : INT64_MAX) : 0;
    }
    for (size_t p = 0; p < np; p++) {
        double g = (double)r->proj[p].usage;
        int64_t h = r->half_life[p];
        if (h > 0) {
            double f = exp2(-(double)dt / (double)h);
            r->usage[p] = r->usage[p] * f + g * (double)h / M_LN2 * (1 - f);
        }
        double u = r->usage[p];
        r->proj[p].usage = u > 0 ? (u < 9e18 ? (int64_t)llround(u) : INT64_MAX) : 0;
    }
    r->usage_t = r->now;
}

/* ---- Time windows and budgets (issue 15 items 4-5) ----
 * The controller's rules (ctl/timequota.h) on the simulated clock mapped
 * to wall time: the spec in force is re-read at every cycle and at every
 * window switch, budget period end and budget exhaustion (events of the
 * replay), as the controller re-reads it every cycle. */

static int64_t wall_of(const struct replay *r, int64_t t)
{
    return r->opts.start_wall_ms + t;
}

/* The zone called name ("": opts.time_zone's), loaded once. */
static int zone_get(struct replay *r, const char *name, const struct fair_tz **out,
                    struct fair_error *err)
{
    if (!name || !*name) {
        *out = r->tz;
        return 0;
    }
    for (size_t i = 0; i < r->nzones; i++)
        if (!strcmp(r->zone_names[i], name)) {
            *out = r->zones[i];
            return 0;
        }
    if (r->nzones >= SIM_MAX_ZONES)
        return fair_error_set(err, FAIR_ERANGE, "simulator: more than %d time zones",
                              SIM_MAX_ZONES);
    int rc = fair_tz_load(name, &r->zones[r->nzones], err);
    if (rc)
        return fair_error_prefix(err, "simulator: spec.schedule timeZone: ");
    snprintf(r->zone_names[r->nzones], sizeof r->zone_names[0], "%s", name);
    *out = r->zones[r->nzones++];
    return 0;
}

/* The spec's quota under the window of tm active at wall time wall, into
 * *q (guarantees, limits, weight); notes the next switch in win_next. */
static int window_eff(struct replay *r, const struct fair_ktime *tm, const struct fair_kquota *spec,
                      int64_t wall, struct fair_quota *q, int *active, struct fair_error *err)
{
    *active = -2;
    if (!tm || !tm->nwindows)
        return 0;
    const struct fair_tz *zs[FAIR_KWINDOW_MAX];
    size_t n = tm->nwindows < FAIR_KWINDOW_MAX ? tm->nwindows : FAIR_KWINDOW_MAX;
    for (size_t w = 0; w < n; w++) {
        int rc = zone_get(r, tm->windows[w].time_zone, &zs[w], err);
        if (rc)
            return rc;
    }
    int a = fair_ctl_window_active(tm->windows, n, zs, wall);
    *active = a;
    struct fair_kquota eff;
    fair_ctl_window_apply(spec, a >= 0 ? &tm->windows[a] : NULL, &eff);
    q->guaranteed = eff.guaranteed;
    q->limit = eff.limit;
    q->over_quota_weight = eff.over_quota_weight;
    int64_t nx = fair_ctl_window_next(tm->windows, n, zs, wall, WINDOW_HORIZON_MS);
    if (nx > wall && r->now + (nx - wall) < r->win_next)
        r->win_next = r->now + (nx - wall);
    return 0;
}

/* The effective specs at r->now into r->proj and r->queues, budget
 * periods rolled over, spent budgets applied: block holds the project's
 * pending pods out of the engine (the controller rejects them with
 * BudgetExhausted), overQuotaOnly caps its limits at its guarantees. */
static int tq_eval(struct replay *r, struct fair_error *err)
{
    int64_t wall = wall_of(r, r->now);
    int rc = 0;
    r->win_next = INF;
    for (size_t p = 0; p < r->cfg->nprojects; p++) {
        const struct fair_kproject *kp = r->cfg->kprojects ? r->cfg->kprojects[p] : NULL;
        r->proj[p].q = r->cfg->projects[p].q;
        r->blocked[p] = false;
        if (!kp || !kp->time)
            continue;
        int a;
        if ((rc = window_eff(r, kp->time, &kp->quota, wall, &r->proj[p].q, &a, err)))
            return rc;
        if (a != -2 && note_switch(r, (int32_t)p, -1, a))
            return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
        const struct fair_ktime *tm = kp->time;
        if (tm->budget_period == FAIR_KBUDGET_NONE)
            continue;
        if (wall >= r->bto[p] || wall < r->bfrom[p]) {
            fair_ctl_budget_period(tm->budget_period, r->tz, wall, &r->bfrom[p], &r->bto[p]);
            r->bused[p] = 0;
            r->blevel[p] = 0;
        }
        /* A budget of 0 is spent at the period's start. */
        if (budget_alerts(r, p, r->bused[p], 0, r->now, r->now))
            return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
        if (r->bto[p] > wall && r->now + (r->bto[p] - wall) < r->win_next)
            r->win_next = r->now + (r->bto[p] - wall);
        r->spent[p] = fair_ctl_budget_level(r->bused[p], budget_mms(tm)) == 100;
        if (!r->spent[p])
            continue;
        if (tm->budget_action == FAIR_KBUDGET_BLOCK) {
            r->blocked[p] = true;
        } else {
            struct fair_quota *q = &r->proj[p].q;
            for (int x = 0; x < FAIR_RES_COUNT; x++)
                if (q->limit.v[x] > q->guaranteed.v[x])
                    q->limit.v[x] = q->guaranteed.v[x];
        }
    }
    for (size_t q = 0; q < r->cfg->nqueues; q++) {
        const struct fair_kqueue *kq = r->cfg->kqueues ? r->cfg->kqueues[q] : NULL;
        r->queues[q].q = r->cfg->queues[q].q;
        int a = -2;
        if (kq && (rc = window_eff(r, kq->time, &kq->quota, wall, &r->queues[q].q, &a, err)))
            return rc;
        if (a != -2 && note_switch(r, -1, (int32_t)q, a))
            return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
    }
    return 0;
}

/* The next time-rule event (simulated time; INF: none): a window switch
 * or a period end, or the moment a budget runs out at the project's
 * current allocation (r->now when one ran out unnoticed). */
static int64_t tq_next(struct replay *r)
{
    int64_t t = r->win_next;
    if (!r->any_budget)
        return t;
    size_t np = r->cfg->nprojects;
    sum_project_alloc(r);
    for (size_t p = 0; p < np; p++) {
        const struct fair_kproject *kp = r->cfg->kprojects ? r->cfg->kprojects[p] : NULL;
        if (!kp || !kp->time || kp->time->budget_period == FAIR_KBUDGET_NONE || r->spent[p])
            continue;
        int64_t left = budget_mms(kp->time) - r->bused[p], e;
        if (left <= 0)
            e = r->now;
        else if (r->palloc[p] > 0)
            e = r->now + (left + r->palloc[p] - 1) / r->palloc[p];
        else
            continue;
        if (e < t)
            t = e;
    }
    return t;
}

/* One engine cycle at r->now. *changed: whether anything was applied. */
static int cycle(struct replay *r, bool *changed, struct fair_error *err)
{
    int rc = 0;
    size_t n = r->nrunning + r->npending;
    *changed = false;
    if (fair_grow((void **)&r->pods, &r->podcap, n, sizeof(*r->pods))) {
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory for %zu pods", n);
    }
    size_t jcap = r->podcap;
    int32_t *pj = fair_realloc(r->pod_job, (jcap ? jcap : 1) * sizeof(*pj));
    if (!pj)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory for %zu pods", n);
    r->pod_job = pj;
    if (r->any_time && (rc = tq_eval(r, err)))
        return rc;
    size_t k = 0;
    for (size_t i = 0; i < r->nrunning; i++, k++) {
        int32_t j = r->running[i];
        struct fair_pod *p = &r->pods[k];
        fair_sim_enodes_pod(&r->en, &r->t->jobs[j], p);
        p->queue = r->js[j].queue;
        p->created_ms = submit_at(r, j);
        p->state = FAIR_POD_BOUND;
        p->node = r->js[j].node;
        p->gpu_devices = r->js[j].dev;
        p->started_ms = r->js[j].started;
        p->checkpoint_interval_ms = r->opts.checkpoint_ms;
        p->max_runtime_ms = fair_sim_declared_ms(r->t, (size_t)j, &r->opts);
        p->evictions = r->js[j].evictions;
        p->hold_node = -1;
        r->pod_job[k] = j;
    }
    for (size_t i = 0; i < r->npending; i++) {
        int32_t j = r->pending[i];
        if (r->any_budget) {
            int32_t jq = r->js[j].queue;
            int32_t pq = jq >= 0 && (size_t)jq < r->nq ? r->cfg->queues[jq].project : -1;
            if (pq >= 0 && (size_t)pq < r->cfg->nprojects && r->blocked[pq]) {
                /* held back by a spent budget, like a limit */
                r->js[j].reason = FAIR_PENDING_OVER_LIMIT;
                r->js[j].hold_node = -1;
                r->js[j].hold_since = 0;
                continue;
            }
        }
        struct fair_pod *p = &r->pods[k];
        fair_sim_enodes_pod(&r->en, &r->t->jobs[j], p);
        p->queue = r->js[j].queue;
        p->created_ms = submit_at(r, j);
        p->state = FAIR_POD_PENDING;
        p->checkpoint_interval_ms = r->opts.checkpoint_ms;
        p->max_runtime_ms = fair_sim_declared_ms(r->t, (size_t)j, &r->opts);
        p->evictions = r->js[j].evictions;
        p->hold_node = r->js[j].hold_node;
        p->hold_since_ms = r->js[j].hold_since;
        r->pod_job[k++] = j;
    }
    n = k;
    if (r->any_usage)
        decay_usage(r);
    struct fair_snapshot snap = {
        .now_ms = r->now,
        .nodes = r->en.nodes,
        .nnodes = r->en.nnodes,
        .projects = r->any_usage || r->any_time ? r->proj : r->cfg->projects,
        .nprojects = r->cfg->nprojects,
        .queues = r->queues ? r->queues : r->cfg->queues,
        .nqueues = r->cfg->nqueues,
        .pods = r->pods,
        .npods = n,
        .over_quota_threshold_pct = r->opts.over_quota_threshold_pct,
        .over_quota_min_runtime_ms = r->opts.over_quota_min_runtime_ms,
        .max_evictions = r->opts.max_evictions,
        .hold_timeout_ms = r->opts.hold_timeout_ms,
        .lend_max_runtime_ms = r->opts.lend_max_runtime_ms,
    };
    struct fair_result res;
    memset(&res, 0, sizeof(res));
    rc = fair_engine_run(&snap, &res, err);
    if (rc)
        return fair_error_prefix(
            err, "simulator: engine cycle at t=%llds: ", (long long)(r->now / 1000));
    r->run->cycles++;
    /* The engine's pending reasons, for idle-while-fits; its holds, for
     * the next snapshot (pods that start or are evicted drop theirs). */
    for (size_t i = r->nrunning; i < n && i < res.npods; i++) {
        struct jstate *s = &r->js[r->pod_job[i]];
        s->reason = res.pending_reasons[i];
        s->hold_node = res.hold_node ? res.hold_node[i] : -1;
        s->hold_since = res.hold_since_ms ? res.hold_since_ms[i] : 0;
    }
    /* Evictions first: they free room at once in the simulation. */
    r->nfreed = 0;
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        if (a->kind != FAIR_ACTION_EVICT || a->pod < 0 || (size_t)a->pod >= n)
            continue;
        int32_t j = r->pod_job[a->pod];
        if (r->js[j].st != J_RUNNING)
            continue;
        if (a->for_pod >= 0 && (size_t)a->for_pod < n && r->nfreed < r->t->njobs) {
            r->freed_node[r->nfreed] = r->js[j].node;
            r->freed_for[r->nfreed++] = r->pod_job[a->for_pod];
        }
        if ((rc = evict(r, j)))
            goto nomem;
        r->run->evictions++;
        *changed = true;
    }
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        if (a->kind == FAIR_ACTION_BIND && a->pod >= 0 && (size_t)a->pod < n)
            r->js[r->pod_job[a->pod]].bind_act = (int32_t)i;
    }
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        if (a->kind != FAIR_ACTION_BIND || a->pod < 0 || (size_t)a->pod >= n)
            continue;
        int32_t j = r->pod_job[a->pod];
        if (r->js[j].st != J_PENDING || r->js[j].bind_act < 0)
            continue;
        if ((rc = apply_bind(r, &res, j, changed)))
            goto nomem;
    }
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        if (a->kind == FAIR_ACTION_BIND && a->pod >= 0 && (size_t)a->pod < n)
            r->js[r->pod_job[a->pod]].bind_act = -1;
    }
    for (size_t q = 0; q < r->nq && q < res.nqueues; q++) {
        r->q[q].fair = res.queues[q].fair_share.v[FAIR_RES_GPU];
        r->q[q].guar = res.queues[q].guaranteed.v[FAIR_RES_GPU];
    }
    /* Fragmentation: the first time a pod stays pending because no node
     * can hold it (judged on the simulated cluster, not on the engine's
     * reason, which may name the fair share when the cluster is full). */
    for (size_t i = 0; r->run->first_fail_ms < 0 && i < r->npending; i++) {
        const struct fair_sim_job *job = &r->t->jobs[r->pending[i]];
        bool fits = false;
        for (size_t nd = 0; nd < r->cluster.nnodes && !fits; nd++)
            fits = fair_sim_fits(&r->cluster, nd, job);
        if (!fits)
            note_failure(r);
    }
    plan_wake(r);
    /* Room this cycle's evictions freed for a pod that still waits for it
     * (it binds at the next cycle, as the controller would once the
     * victims are gone) is that pod's reservation, like a held node. */
    for (size_t i = 0; i < r->nfreed; i++) {
        const struct jstate *s = &r->js[r->freed_for[i]];
        int32_t nd = r->freed_node[i];
        if (s->st == J_PENDING && s->reason == FAIR_PENDING_WAITING_RECLAIM && nd >= 0 &&
            (size_t)nd < r->cluster.nnodes)
            r->held[nd] = 1;
    }
    if ((rc = measure_idle(r)) || (rc = settle(r)))
        goto nomem;
    goto out;
nomem:
    rc = fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
out:
    fair_result_release(&res);
    return rc;
}

/* Jobs that can never run under the config, before the replay (the
 * cluster is empty). */
static int check_runnable(struct replay *r)
{
    const struct fair_sim_config *cfg = r->cfg;
    for (size_t i = 0; i < r->run->njobs; i++) {
        struct fair_sim_jobrec *rec = &r->run->jobs[i];
        const struct fair_sim_job *job = &r->t->jobs[rec->first];
        const struct fair_queue *q = &cfg->queues[rec->queue];
        const struct fair_quota *p = q->project >= 0 && (size_t)q->project < cfg->nprojects
                                         ? &cfg->projects[q->project].q
                                         : NULL;
        int64_t want[FAIR_RES_COUNT] = {rec->gpu_milli, job->cpu_milli * rec->pods,
                                        job->memory_bytes * rec->pods};
        int fits = fair_sim_job_fits(&r->cluster, rec->first, &r->fit);
        if (fits < 0)
            return fits;
        if (!fits) {
            rec->status = FAIR_SIM_JOB_NO_NODE;
            continue;
        }
        for (int x = 0; x < FAIR_RES_COUNT; x++)
            if (want[x] > q->q.limit.v[x] || (p && want[x] > p->limit.v[x]))
                rec->status = FAIR_SIM_JOB_OVER_LIMIT;
        if (rec->status != FAIR_SIM_JOB_PENDING || job->preemptible)
            continue;
        /* The engine's rule: on GPU always; on CPU and memory where
         * something is guaranteed. */
        for (int x = 0; x < FAIR_RES_COUNT; x++) {
            int64_t gq = q->q.guaranteed.v[x], gp = p ? p->guaranteed.v[x] : 0;
            if ((x == FAIR_RES_GPU || gq > 0) && want[x] > gq)
                rec->status = FAIR_SIM_JOB_OVER_GUARANTEE;
            if (p && (x == FAIR_RES_GPU || gp > 0) && want[x] > gp)
                rec->status = FAIR_SIM_JOB_OVER_GUARANTEE;
        }
    }
    return 0;
}

static bool runnable(const struct replay *r, size_t j)
{
    return !fair_sim_job_unrunnable(r->run->jobs[r->js[j].rec].status);
}

static int finish_stats(struct replay *r, struct fair_error *err)
{
    struct fair_sim_run *run = r->run;
    size_t nq = r->nq, nrec = run->njobs;
    size_t nttg = 0;
    for (size_t q = 0; q < nq; q++)
        nttg += r->q[q].ttg.nlen;
    size_t cap = nrec > nttg ? nrec : nttg;
    int64_t *w = fair_malloc((cap ? cap : 1) * sizeof(*w));
    if (!w)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
    struct fair_sim_qstats *tot = &run->qstats[nq];
    for (size_t i = 0; i < nrec; i++) {
        const struct fair_sim_jobrec *rec = &run->jobs[i];
        struct fair_sim_qstats *s = &run->qstats[rec->queue];
        for (int k = 0; k < 2; k++, s = tot) {
            s->jobs++;
            if (fair_sim_job_unrunnable(rec->status)) {
                s->unrunnable++;
                continue;
            }
            if (rec->first_start_ms >= 0)
                s->started++;
            else
                s->never_started++;
            s->completed += rec->status == FAIR_SIM_JOB_COMPLETED;
            s->preemptions += (size_t)rec->restarts;
            if (rec->restarts > s->max_restarts)
                s->max_restarts = rec->restarts;
            s->lost_gpu_ms += rec->lost_gpu_ms;
            s->used_gpu_ms += rec->used_gpu_ms;
        }
    }
    /* Waits and completion times, per queue and in total. */
    for (size_t q = 0; q <= nq; q++) {
        size_t n = 0;
        for (size_t i = 0; i < nrec; i++)
            if ((q == nq || (size_t)run->jobs[i].queue == q) && run->jobs[i].first_start_ms >= 0)
                w[n++] = run->jobs[i].first_start_ms - run->jobs[i].submit_ms;
        fair_sim_dist_of(w, n, &run->qstats[q].wait);
        n = 0;
        for (size_t i = 0; i < nrec; i++)
            if ((q == nq || (size_t)run->jobs[i].queue == q) &&
                run->jobs[i].status == FAIR_SIM_JOB_COMPLETED)
                w[n++] = run->jobs[i].end_ms - run->jobs[i].submit_ms;
        fair_sim_dist_of(w, n, &run->qstats[q].jct);
    }
    /* The guarantee. */
    size_t n = 0;
    for (size_t q = 0; q < nq; q++) {
        const struct qstate *st = &r->q[q];
        struct fair_sim_qstats *s = &run->qstats[q];
        s->guaranteed = st->guar;
        s->demand_ge_guar_ms = st->ge_ms;
        s->guar_delivered_gpu_ms = st->delivered;
        s->guar_owed_gpu_ms = st->owed;
        s->ttg_unfinished = st->ttg.unfinished;
        if (st->ttg.nlen)
            memcpy(w + n, st->ttg.len, st->ttg.nlen * sizeof(*w));
        fair_sim_dist_of(w + n, st->ttg.nlen, &s->ttg);
        n += st->ttg.nlen;
        tot->guaranteed += st->guar;
        tot->demand_ge_guar_ms += st->ge_ms;
        tot->guar_delivered_gpu_ms += st->delivered;
        tot->guar_owed_gpu_ms += st->owed;
        tot->ttg_unfinished += st->ttg.unfinished;
    }
    fair_sim_dist_of(w, n, &tot->ttg);
    fair_free(w);
    return 0;
}

void fair_sim_run_window(struct fair_sim_run *run, int64_t start_ms, int64_t end_ms)
{
    run->window_start_ms = start_ms;
    run->window_end_ms = end_ms;
    double span = (double)(end_ms - start_ms), cap = (double)run->gpu_capacity;
    const struct fair_sim_qstats *tot = &run->qstats[run->nqueues];
    if (span > 0 && cap > 0) {
        run->mean_alloc_ratio = (double)tot->used_gpu_ms / span / cap;
        run->useful_alloc_ratio = (double)(tot->used_gpu_ms - tot->lost_gpu_ms) / span / cap;
    } else {
        /* An instant: what was allocated then. */
        run->mean_alloc_ratio = run->useful_alloc_ratio =
            run->nsamples && cap > 0 ? (double)run->samples[run->nsamples - 1].gpu_allocated / cap
                                     : 0;
    }
}

static int64_t align_up(int64_t t, int64_t step)
{
    int64_t r = t % step;
    if (r < 0)
        r += step;
    return r ? t + (step - r) : t;
}

/* The next pod that arrives (runnable), from *ai on; INF when none. */
static int64_t next_arrival(const struct replay *r, size_t *ai)
{
    while (*ai < r->t->njobs && !runnable(r, *ai))
        (*ai)++;
    return *ai < r->t->njobs ? submit_at(r, (int32_t)*ai) : INF;
}

/* Allocates the replay's state and the run's arrays; builds the jobs. */
static int setup(struct replay *r, struct fair_error *err)
{
    const struct fair_sim_trace *t = r->t;
    struct fair_sim_run *run = r->run;
    size_t nq = r->nq, nj = t->njobs;
    r->js = fair_calloc(nj, sizeof(*r->js));
    r->rec_done = fair_calloc(nj, sizeof(*r->rec_done));
    r->pending = fair_calloc(nj, sizeof(*r->pending));
    r->running = fair_calloc(nj, sizeof(*r->running));
    r->fitlist = fair_calloc(nj, sizeof(*r->fitlist));
    r->held = fair_calloc(t->nnodes ? t->nnodes : 1, sizeof(*r->held));
    r->freed_node = fair_calloc(nj, sizeof(*r->freed_node));
    r->freed_for = fair_calloc(nj, sizeof(*r->freed_for));
    r->q = fair_calloc(nq, sizeof(*r->q));
    run->qstats = fair_calloc(nq + 1, sizeof(*run->qstats));
    run->jobs = fair_calloc(nj, sizeof(*run->jobs));
    if (!r->js || !r->rec_done || !r->pending || !r->running || !r->fitlist || !r->held || !r->q ||
        !r->freed_node || !r->freed_for || !run->qstats || !run->jobs)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory for %zu jobs", nj);
    r->max_runtime_ms = r->opts.over_quota_min_runtime_ms;
    for (size_t q = 0; q < nq; q++) {
        if (r->cfg->queues[q].reclaim_min_runtime_ms > r->max_runtime_ms)
            r->max_runtime_ms = r->cfg->queues[q].reclaim_min_runtime_ms;
        fair_sim_spans_init(&r->q[q].ttg, true);
        /* The configured guarantee until the engine's first cycle. */
        int64_t g = r->cfg->queues[q].q.guaranteed.v[FAIR_RES_GPU];
        r->q[q].guar = g < run->gpu_capacity ? g : run->gpu_capacity;
    }
    for (size_t j = 0; j < nj; j++) {
        const struct fair_sim_job *job = &t->jobs[j];
        if (r->queue_of[j] < 0 || (size_t)r->queue_of[j] >= nq)
            return fair_error_set(err, FAIR_EINVAL, "simulator: job %s has no valid queue",
                                  job->name);
        /* A gang's pods follow member 0 (trace.h); a new job starts at
         * member 0, or where the previous gang is complete. */
        bool starts =
            job->member == 0 || run->njobs == 0 || run->jobs[run->njobs - 1].pods >= job->gang_size;
        if (starts) {
            run->jobs[run->njobs++] = (struct fair_sim_jobrec){
                .first = (int32_t)j,
                .pods = 1,
                .queue = r->queue_of[j],
                .gpu_milli = job->gpu_milli,
                .submit_ms = submit_at(r, (int32_t)j),
                .first_start_ms = -1,
                .end_ms = -1,
            };
        } else {
            struct fair_sim_jobrec *rec = &run->jobs[run->njobs - 1];
            rec->pods++;
            rec->gpu_milli += job->gpu_milli;
        }
        r->js[j] = (struct jstate){.queue = r->queue_of[j],
                                   .rec = (int32_t)(run->njobs - 1),
                                   .node = -1,
                                   .evicted_at = -1,
                                   .bind_act = -1,
                                   .hold_node = -1};
    }
    return init_tenancy(r, err);
}

static void teardown(struct replay *r)
{
    fair_free(r->js);
    fair_free(r->rec_done);
    fair_free(r->pending);
    fair_free(r->running);
    fair_free(r->fitlist);
    fair_free(r->held);
    fair_free(r->freed_node);
    fair_free(r->freed_for);
    fair_free(r->job_key);
    fair_free(r->dev_key);
    fair_free(r->heap);
    fair_free(r->pods);
    fair_free(r->pod_job);
    for (size_t q = 0; r->q && q < r->nq; q++) {
        fair_sim_sizes_release(&r->q[q].sizes);
        fair_sim_spans_release(&r->q[q].ttg);
    }
    fair_free(r->q);
    fair_free(r->proj);
    fair_free(r->usage);
    fair_free(r->qusage);
    fair_free(r->half_life);
    fair_free(r->queues);
    fair_free(r->bused);
    fair_free(r->bfrom);
    fair_free(r->bto);
    fair_free(r->palloc);
    fair_free(r->blocked);
    fair_free(r->spent);
    fair_free(r->pwin);
    fair_free(r->qwin);
    fair_free(r->blevel);
    for (size_t i = 0; i < r->nzones; i++)
        fair_tz_free(r->zones[i]);
    fair_tz_free(r->tz);
    fair_sim_spans_release(&r->idle_all_spans);
    fair_sim_spans_release(&r->idle_adm_spans);
    fair_sim_fit_scratch_release(&r->fit);
    if (r->have_placer)
        fair_sim_placer_release(&r->placer);
    fair_sim_enodes_release(&r->en);
    fair_sim_cluster_release(&r->cluster);
}

int fair_sim_replay(const struct fair_sim_trace *t, const struct fair_sim_config *cfg,
                    const int32_t *queue_of, const struct fair_sim_opts *opts_in,
                    struct fair_sim_run *run, struct fair_error *err)
{
    int rc = 0;
    struct replay r;
    memset(&r, 0, sizeof(r));
    memset(run, 0, sizeof(*run));
    r.t = t;
    r.cfg = cfg;
    r.queue_of = queue_of;
    r.run = run;
    r.nq = cfg->nqueues;
    r.opts = opts_in ? *opts_in : (struct fair_sim_opts){0};
    if (r.opts.cycle_ms <= 0)
        r.opts.cycle_ms = 10000;
    if (r.opts.target_samples == 0)
        r.opts.target_samples = 500;
    if (r.opts.max_cycles == 0)
        r.opts.max_cycles = 5000000;
    if (r.opts.speedup <= 0)
        r.opts.speedup = 1;
    if (r.opts.checkpoint_ms < 0)
        r.opts.checkpoint_ms = 0;
    size_t nq = cfg->nqueues, nj = t->njobs;
    run->nqueues = nq;
    run->first_fail_ms = -1;
    run->first_fail_unallocated = -1;
    run->opts = r.opts;
    fair_sim_spans_init(&r.idle_all_spans, false);
    fair_sim_spans_init(&r.idle_adm_spans, false);
    fair_sim_fit_scratch_init(&r.fit);
    if (nj == 0 || t->nnodes == 0 || nq == 0) {
        rc = fair_error_set(err, FAIR_EINVAL, "simulator: needs jobs, nodes and a queue");
        goto out;
    }
    rc = fair_sim_cluster_init(&r.cluster, t, err);
    if (rc)
        goto out;
    run->gpu_capacity = r.cluster.gpu_capacity;
    rc = fair_sim_enodes_init(&r.en, t, err);
    if (rc)
        goto out;
    if (r.opts.policy != FAIR_SIM_POLICY_ENGINE) {
        rc = fair_sim_placer_init(&r.placer, r.opts.policy, r.opts.seed, t, err);
        if (rc)
            goto out;
        r.have_placer = true;
    }
    if ((rc = setup(&r, err)))
        goto out;
    { /* decayed usage: per project, the spec's half-life or the option's */
        size_t np = cfg->nprojects;
        r.proj = fair_calloc(np ? np : 1, sizeof(*r.proj));
        r.usage = fair_calloc(np ? np : 1, sizeof(*r.usage));
        r.half_life = fair_calloc(np ? np : 1, sizeof(*r.half_life));
        if (!r.proj || !r.usage || !r.half_life)
            goto nomem;
        for (size_t p = 0; p < np; p++) {
            r.proj[p] = cfg->projects[p];
            const struct fair_kproject *kp = cfg->kprojects ? cfg->kprojects[p] : NULL;
            int64_t h = kp && kp->time && kp->time->usage_half_life_ms >= 0
                            ? kp->time->usage_half_life_ms
                            : r.opts.usage_half_life_ms;
            r.half_life[p] = h > 0 ? h : 0;
            r.any_usage = r.any_usage || h > 0;
            if (kp && kp->time && kp->time->budget_period != FAIR_KBUDGET_NONE)
                r.any_budget = true;
            if (kp && kp->time && kp->time->nwindows)
                r.any_time = true;
        }
        for (size_t q = 0; q < nq; q++) {
            const struct fair_kqueue *kq = cfg->kqueues ? cfg->kqueues[q] : NULL;
            if (kq && kq->time && kq->time->nwindows)
                r.any_time = true;
        }
        r.any_time = r.any_time || r.any_budget;
        if (r.any_usage || r.any_time) { /* the queues handed to the engine */
            r.queues = fair_calloc(nq ? nq : 1, sizeof(*r.queues));
            r.qusage = fair_calloc(nq ? nq : 1, sizeof(*r.qusage));
            if (!r.queues || !r.qusage)
                goto nomem;
            for (size_t q = 0; q < nq; q++)
                r.queues[q] = cfg->queues[q];
        }
    }
    if (r.any_time) { /* time windows and budgets */
        size_t np = cfg->nprojects ? cfg->nprojects : 1;
        r.bused = fair_calloc(np, sizeof(*r.bused));
        r.bfrom = fair_calloc(np, sizeof(*r.bfrom));
        r.bto = fair_calloc(np, sizeof(*r.bto));
        r.palloc = fair_calloc(np, sizeof(*r.palloc));
        r.blocked = fair_calloc(np, sizeof(*r.blocked));
        r.spent = fair_calloc(np, sizeof(*r.spent));
        r.pwin = fair_calloc(np, sizeof(*r.pwin));
        r.qwin = fair_calloc(nq ? nq : 1, sizeof(*r.qwin));
        r.blevel = fair_calloc(np, sizeof(*r.blevel));
        if (!r.bused || !r.bfrom || !r.bto || !r.palloc || !r.blocked || !r.spent || !r.pwin ||
            !r.qwin || !r.blevel)
            goto nomem;
        for (size_t p = 0; p < np; p++)
            r.pwin[p] = -2;
        for (size_t q = 0; q < nq; q++)
            r.qwin[q] = -2;
        if ((rc = fair_tz_load(r.opts.time_zone[0] ? r.opts.time_zone : "UTC", &r.tz, err))) {
            fair_error_prefix(err, "simulator: ");
            goto out;
        }
        r.win_next = INF;
    }
    if ((rc = check_runnable(&r)))
        goto nomem;
    int64_t start = t->jobs[0].submit_ms, est_end = start;
    for (size_t j = 0; j < nj; j++) {
        int64_t e = submit_at(&r, (int32_t)j);
        if (t->jobs[j].duration_ms != FAIR_SIM_FOREVER)
            e += t->jobs[j].duration_ms;
        if (e > est_end)
            est_end = e;
    }
    int64_t horizon = r.opts.horizon_ms > 0 ? start + r.opts.horizon_ms : INF;
    if (horizon != INF && est_end > horizon)
        est_end = horizon;
    int64_t span = est_end - start;
    r.sample_every = (span + (int64_t)r.opts.target_samples - 1) / (int64_t)r.opts.target_samples;
    if (r.sample_every < r.opts.cycle_ms)
        r.sample_every = r.opts.cycle_ms;
    r.next_sample = start;
    r.now = r.last_t = start;
    r.usage_t = start;
    r.wake = INF;
    run->start_ms = start;

    size_t ai = 0;
    /* An arrival or a completion calls for a cycle (fair shares move with
     * demand) while any pod is left; a cycle's own changes call for
     * another only while pods are pending. */
    bool dirty_event = false, dirty_cycle = false;
    int64_t last_cycle = INT64_MIN;
    for (;;) {
        int64_t t_arr = next_arrival(&r, &ai);
        int64_t t_done = r.nheap ? r.heap[0].t : INF;
        int64_t t_evt = t_arr < t_done ? t_arr : t_done;
        int64_t t_cyc = INF;
        bool due = (dirty_event && r.npending + r.nrunning > 0) || (dirty_cycle && r.npending > 0);
        if (due || (r.wake != INF && r.npending > 0)) {
            t_cyc = align_up(due ? r.now : r.wake, r.opts.cycle_ms);
            if (last_cycle != INT64_MIN && t_cyc < last_cycle + r.opts.cycle_ms)
                t_cyc = last_cycle + r.opts.cycle_ms;
        }
        /* A window switch, period end or spent budget: while something
         * may still change (a pod pending, or an arrival or completion
         * to come). */
        int64_t t_tq = INF;
        if (r.any_time && r.npending + r.nrunning > 0 && (r.npending > 0 || t_evt != INF)) {
            t_tq = tq_next(&r);
            if (t_tq < r.now)
                t_tq = r.now;
        }
        if (t_evt == INF && t_cyc == INF && t_tq == INF)
            break;
        int64_t t_min = t_evt < t_cyc ? t_evt : t_cyc;
        if (t_tq < t_min)
            t_min = t_tq;
        if (horizon != INF && t_min > horizon) {
            if ((rc = advance(&r, horizon)))
                goto nomem;
            break;
        }
        if (t_tq < t_evt && t_tq < t_cyc) {
            if ((rc = advance(&r, t_tq)))
                goto nomem;
            if ((rc = tq_eval(&r, err)))
                goto out;
            dirty_event = true;
        } else if (t_evt <= t_cyc) {
            if ((rc = advance(&r, t_evt)))
                goto nomem;
            while (next_arrival(&r, &ai) == t_evt) {
                if ((rc = make_pending(&r, (int32_t)ai)))
                    goto nomem;
                ai++;
                dirty_event = true;
            }
            while (r.nheap && r.heap[0].t == t_evt) {
                struct done_ev e = heap_pop(&r);
                struct jstate *s = &r.js[e.job];
                if (s->st != J_RUNNING || s->gen != e.gen)
                    continue; /* evicted since: a stale completion */
                account_stop(&r, e.job);
                s->st = J_DONE;
                struct fair_sim_jobrec *rec = rec_of(&r, e.job);
                if (++r.rec_done[s->rec] == rec->pods) {
                    rec->end_ms = r.now;
                    rec->status = FAIR_SIM_JOB_COMPLETED;
                }
                dirty_event = true;
            }
            if ((rc = settle(&r)))
                goto nomem;
        } else {
            if ((rc = advance(&r, t_cyc)))
                goto nomem;
            if (run->cycles >= r.opts.max_cycles) {
                rc = fair_error_set(err, FAIR_ERANGE, "simulator: more than %zu cycles",
                                    r.opts.max_cycles);
                goto out;
            }
            bool changed = false;
            rc = cycle(&r, &changed, err);
            if (rc)
                goto out;
            last_cycle = t_cyc;
            dirty_event = false;
            dirty_cycle = changed;
        }
    }
    /* The end: running pods are charged up to now; one last sample. */
    run->end_ms = r.now;
    if ((rc = advance(&r, r.now)) || (rc = add_sample(&r, r.now)))
        goto nomem;
    for (size_t i = 0; i < r.nrunning; i++) {
        int32_t j = r.running[i];
        struct fair_sim_jobrec *rec = rec_of(&r, j);
        rec->used_gpu_ms += t->jobs[j].gpu_milli * (r.now - r.js[j].started);
        rec->status = FAIR_SIM_JOB_RUNNING;
    }
    for (size_t q = 0; q < nq; q++)
        fair_sim_spans_end(&r.q[q].ttg, r.now);
    fair_sim_spans_end(&r.idle_all_spans, r.now);
    fair_sim_spans_end(&r.idle_adm_spans, r.now);
    run->idle_fit.episodes = r.idle_all_spans.count + r.idle_all_spans.unfinished;
    run->idle_fit.longest_ms = r.idle_all_spans.longest_ms;
    run->idle_fit_admissible.episodes = r.idle_adm_spans.count + r.idle_adm_spans.unfinished;
    run->idle_fit_admissible.longest_ms = r.idle_adm_spans.longest_ms;
    if (run->gpu_capacity > 0)
        run->peak_alloc_ratio = (double)r.peak_alloc / (double)run->gpu_capacity;
    if ((rc = finish_stats(&r, err)))
        goto out;
    fair_sim_run_window(run, run->start_ms, run->end_ms);
    goto out;
nomem:
    rc = fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
out:
    if (rc)
        fair_sim_run_release(run);
    teardown(&r);
    return rc;
}

void fair_sim_run_release(struct fair_sim_run *run)
{
    if (!run)
        return;
    fair_free(run->samples);
    fair_free(run->qsamples);
    fair_free(run->qstats);
    fair_free(run->jobs);
    fair_free(run->alerts);
    fair_free(run->switches);
    run->alerts = NULL;
    run->switches = NULL;
    run->nalerts = run->nswitches = 0;
    run->samples = NULL;
    run->qsamples = NULL;
    run->qstats = NULL;
    run->jobs = NULL;
    run->nsamples = 0;
    run->njobs = 0;
}
