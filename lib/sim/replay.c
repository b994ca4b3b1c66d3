/* Trace replay through the engine on a virtual clock (design note in
 * replay.h): arrivals, completions and cycles in time order, statistics
 * and time series on the way. */
#include "sim/replay.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "sim/engine_place.h"

#define INF INT64_MAX

enum { J_FUTURE = 0, J_PENDING, J_RUNNING, J_DONE };

struct jstate {
    int8_t st;
    int32_t pos; /* index in the pending or running list */
    int32_t node;
    uint64_t dev;
    uint32_t gen; /* bumped at each start: stale completions are skipped */
    int64_t started;
    int64_t wait; /* submit to first start; -1 until then */
    int32_t queue;
};

struct done_ev {
    int64_t t;
    int32_t job;
    uint32_t gen;
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
    int32_t *pending, *running;
    size_t npending, nrunning;
    struct done_ev *heap;
    size_t nheap, heapcap;
    struct fair_pod *pods;
    int32_t *pod_job;
    size_t podcap;
    /* Per queue, current figures. */
    int64_t *q_alloc, *q_fair;
    int32_t *q_running, *q_pending;
    int64_t pending_gpu;
    int64_t now;
    int64_t next_sample, sample_every;
    size_t samplecap;
    int64_t peak_alloc;
    double area; /* integral of allocated milli-GPU over time (ms) */
    int64_t last_t;
};

/* Arrival time of job j after --speedup. */
static int64_t submit_at(const struct replay *r, int32_t j)
{
    int64_t first = r->t->jobs[0].submit_ms;
    return first + (r->t->jobs[j].submit_ms - first) / r->opts.speedup;
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

static int add_sample(struct replay *r, int64_t at)
{
    struct fair_sim_run *run = r->run;
    size_t nq = r->cfg->nqueues;
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
        qs->allocated = r->q_alloc[q];
        qs->fair_share = r->q_fair[q];
        qs->running = r->q_running[q];
        qs->pending = r->q_pending[q];
    }
    run->nsamples++;
    return 0;
}

/* Moves the clock to T: samples strictly before T see the state so far. */
static int advance(struct replay *r, int64_t T)
{
    while (r->next_sample < T) {
        if (add_sample(r, r->next_sample))
            return FAIR_ENOMEM;
        r->next_sample += r->sample_every;
    }
    r->area += (double)r->cluster.gpu_allocated * (double)(T - r->last_t);
    if (r->cluster.gpu_allocated > r->peak_alloc)
        r->peak_alloc = r->cluster.gpu_allocated;
    r->last_t = T;
    r->now = T;
    return 0;
}

static void account_stop(struct replay *r, int32_t j)
{
    struct jstate *s = &r->js[j];
    const struct fair_sim_job *job = &r->t->jobs[j];
    r->run->qstats[s->queue].used_gpu_ms += job->gpu_milli * (r->now - s->started);
    fair_sim_cluster_unbind(&r->cluster, (size_t)s->node, s->dev, job);
    list_del(r->running, &r->nrunning, r->js, j);
    r->q_alloc[s->queue] -= job->gpu_milli;
    r->q_running[s->queue]--;
}

static void make_pending(struct replay *r, int32_t j)
{
    struct jstate *s = &r->js[j];
    s->st = J_PENDING;
    list_add(r->pending, &r->npending, r->js, j);
    r->q_pending[s->queue]++;
    r->pending_gpu += r->t->jobs[j].gpu_milli;
}

static int start_job(struct replay *r, int32_t j, int32_t node, uint64_t dev)
{
    struct jstate *s = &r->js[j];
    const struct fair_sim_job *job = &r->t->jobs[j];
    list_del(r->pending, &r->npending, r->js, j);
    r->q_pending[s->queue]--;
    r->pending_gpu -= job->gpu_milli;
    s->st = J_RUNNING;
    s->node = node;
    s->dev = dev;
    s->started = r->now;
    s->gen++;
    if (s->wait < 0) {
        s->wait = r->now - submit_at(r, j);
        r->run->qstats[s->queue].started++;
    }
    list_add(r->running, &r->nrunning, r->js, j);
    r->q_alloc[s->queue] += job->gpu_milli;
    r->q_running[s->queue]++;
    r->run->binds++;
    if (job->duration_ms != FAIR_SIM_FOREVER)
        return heap_push(r, (struct done_ev){r->now + job->duration_ms, j, s->gen});
    return 0;
}

static void note_failure(struct replay *r)
{
    if (r->run->first_fail_ms < 0) {
        r->run->first_fail_ms = r->now;
        r->run->first_fail_unallocated = fair_sim_cluster_unallocated(&r->cluster);
    }
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
        r->pod_job[k] = j;
    }
    for (size_t i = 0; i < r->npending; i++, k++) {
        int32_t j = r->pending[i];
        struct fair_pod *p = &r->pods[k];
        fair_sim_enodes_pod(&r->en, &r->t->jobs[j], p);
        p->queue = r->js[j].queue;
        p->created_ms = submit_at(r, j);
        p->state = FAIR_POD_PENDING;
        r->pod_job[k] = j;
    }
    struct fair_snapshot snap = {
        .now_ms = r->now,
        .nodes = r->en.nodes,
        .nnodes = r->en.nnodes,
        .projects = r->cfg->projects,
        .nprojects = r->cfg->nprojects,
        .queues = r->cfg->queues,
        .nqueues = r->cfg->nqueues,
        .pods = r->pods,
        .npods = n,
    };
    struct fair_result res;
    memset(&res, 0, sizeof(res));
    rc = fair_engine_run(&snap, &res, err);
    if (rc)
        return fair_error_prefix(
            err, "simulator: engine cycle at t=%llds: ", (long long)(r->now / 1000));
    r->run->cycles++;
    /* Evictions first: they free room at once in the simulation. */
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        if (a->kind != FAIR_ACTION_EVICT || a->pod < 0 || (size_t)a->pod >= n)
            continue;
        int32_t j = r->pod_job[a->pod];
        if (r->js[j].st != J_RUNNING)
            continue;
        struct fair_sim_qstats *qs = &r->run->qstats[r->js[j].queue];
        qs->preemptions++;
        qs->lost_gpu_ms += r->t->jobs[j].gpu_milli * (r->now - r->js[j].started);
        account_stop(r, j);
        r->js[j].gen++;
        make_pending(r, j);
        r->run->evictions++;
        *changed = true;
    }
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        if (a->kind != FAIR_ACTION_BIND || a->pod < 0 || (size_t)a->pod >= n)
            continue;
        int32_t j = r->pod_job[a->pod];
        if (r->js[j].st != J_PENDING)
            continue;
        const struct fair_sim_job *job = &r->t->jobs[j];
        int32_t node = a->node;
        uint64_t dev = a->gpu_devices;
        if (r->have_placer) {
            if (fair_sim_place(&r->placer, &r->cluster, job, &node, &dev)) {
                note_failure(r);
                continue;
            }
        }
        if (node < 0 || (size_t)node >= r->cluster.nnodes ||
            fair_sim_cluster_bind(&r->cluster, (size_t)node, dev, job)) {
            r->run->bind_conflicts++;
            FAIR_WARN("sim",
                      "msg=\"engine bind does not fit the simulated node\" pod=%s node=%d "
                      "devices=%#llx",
                      job->name, node, (unsigned long long)dev);
            continue;
        }
        if (start_job(r, j, node, dev)) {
            rc = fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
            goto out;
        }
        *changed = true;
    }
    for (size_t q = 0; q < r->cfg->nqueues && q < res.nqueues; q++)
        r->q_fair[q] = res.queues[q].fair_share.v[FAIR_RES_GPU];
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
out:
    fair_result_release(&res);
    return rc;
}

int64_t fair_sim_percentile(const int64_t *sorted, size_t n, int p)
{
    if (n == 0)
        return -1;
    size_t rank = ((size_t)p * n + 99) / 100; /* ceil(p/100 * n) */
    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int finish_stats(struct replay *r, struct fair_error *err)
{
    struct fair_sim_run *run = r->run;
    size_t nq = r->cfg->nqueues, nj = r->t->njobs;
    int64_t *w = fair_malloc((nj ? nj : 1) * sizeof(*w));
    if (!w)
        return fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
    struct fair_sim_qstats *tot = &run->qstats[nq];
    for (size_t q = 0; q <= nq; q++) {
        size_t n = 0;
        for (size_t j = 0; j < nj; j++)
            if ((q == nq || (size_t)r->js[j].queue == q) && r->js[j].wait >= 0)
                w[n++] = r->js[j].wait;
        qsort(w, n, sizeof(*w), cmp_i64);
        struct fair_sim_qstats *s = &run->qstats[q];
        s->wait_p50_ms = fair_sim_percentile(w, n, 50);
        s->wait_p95_ms = fair_sim_percentile(w, n, 95);
        s->wait_max_ms = n ? w[n - 1] : -1;
    }
    for (size_t j = 0; j < nj; j++) {
        struct fair_sim_qstats *s = &run->qstats[r->js[j].queue];
        s->jobs++;
        if (r->js[j].wait < 0)
            s->never_started++;
        if (r->js[j].st == J_DONE)
            s->completed++;
    }
    for (size_t q = 0; q < nq; q++) {
        struct fair_sim_qstats *s = &run->qstats[q];
        tot->jobs += s->jobs;
        tot->started += s->started;
        tot->completed += s->completed;
        tot->never_started += s->never_started;
        tot->preemptions += s->preemptions;
        tot->lost_gpu_ms += s->lost_gpu_ms;
        tot->used_gpu_ms += s->used_gpu_ms;
    }
    fair_free(w);
    return 0;
}

static int64_t align_up(int64_t t, int64_t step)
{
    int64_t r = t % step;
    if (r < 0)
        r += step;
    return r ? t + (step - r) : t;
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
    r.opts = opts_in ? *opts_in : (struct fair_sim_opts){0};
    if (r.opts.cycle_ms <= 0)
        r.opts.cycle_ms = 10000;
    if (r.opts.target_samples == 0)
        r.opts.target_samples = 500;
    if (r.opts.max_cycles == 0)
        r.opts.max_cycles = 5000000;
    if (r.opts.speedup <= 0)
        r.opts.speedup = 1;
    size_t nq = cfg->nqueues, nj = t->njobs;
    run->nqueues = nq;
    run->first_fail_ms = -1;
    run->first_fail_unallocated = -1;
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
    r.js = fair_calloc(nj, sizeof(*r.js));
    r.pending = fair_calloc(nj, sizeof(*r.pending));
    r.running = fair_calloc(nj, sizeof(*r.running));
    r.q_alloc = fair_calloc(nq, sizeof(*r.q_alloc));
    r.q_fair = fair_calloc(nq, sizeof(*r.q_fair));
    r.q_running = fair_calloc(nq, sizeof(*r.q_running));
    r.q_pending = fair_calloc(nq, sizeof(*r.q_pending));
    run->qstats = fair_calloc(nq + 1, sizeof(*run->qstats));
    if (!r.js || !r.pending || !r.running || !r.q_alloc || !r.q_fair || !r.q_running ||
        !r.q_pending || !run->qstats) {
        rc = fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory for %zu jobs", nj);
        goto out;
    }
    int64_t start = t->jobs[0].submit_ms, est_end = start;
    for (size_t j = 0; j < nj; j++) {
        if (queue_of[j] < 0 || (size_t)queue_of[j] >= nq) {
            rc = fair_error_set(err, FAIR_EINVAL, "simulator: job %s has no valid queue",
                                t->jobs[j].name);
            goto out;
        }
        r.js[j].queue = queue_of[j];
        r.js[j].wait = -1;
        r.js[j].node = -1;
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
    run->start_ms = start;

    size_t ai = 0;
    /* An arrival or a completion calls for a cycle (fair shares move with
     * demand) while any pod is left; a cycle's own changes call for
     * another only while pods are pending. */
    bool dirty_event = false, dirty_cycle = false;
    int64_t last_cycle = INT64_MIN;
    for (;;) {
        int64_t t_arr = ai < nj ? submit_at(&r, (int32_t)ai) : INF;
        int64_t t_done = r.nheap ? r.heap[0].t : INF;
        int64_t t_evt = t_arr < t_done ? t_arr : t_done;
        int64_t t_cyc = INF;
        if ((dirty_event && r.npending + r.nrunning > 0) || (dirty_cycle && r.npending > 0)) {
            t_cyc = align_up(r.now, r.opts.cycle_ms);
            if (last_cycle != INT64_MIN && t_cyc < last_cycle + r.opts.cycle_ms)
                t_cyc = last_cycle + r.opts.cycle_ms;
        }
        if (t_evt == INF && t_cyc == INF)
            break;
        if (horizon != INF && (t_evt < t_cyc ? t_evt : t_cyc) > horizon) {
            if ((rc = advance(&r, horizon)))
                goto nomem;
            break;
        }
        if (t_evt <= t_cyc) {
            if ((rc = advance(&r, t_evt)))
                goto nomem;
            while (ai < nj && submit_at(&r, (int32_t)ai) == t_evt) {
                make_pending(&r, (int32_t)ai);
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
                dirty_event = true;
            }
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
        run->qstats[r.js[j].queue].used_gpu_ms += t->jobs[j].gpu_milli * (r.now - r.js[j].started);
    }
    double dur = (double)(run->end_ms - run->start_ms);
    run->mean_alloc_ratio =
        dur > 0 && run->gpu_capacity > 0
            ? r.area / dur / (double)run->gpu_capacity
            : (run->gpu_capacity > 0 ? (double)r.cluster.gpu_allocated / (double)run->gpu_capacity
                                     : 0);
    if (run->gpu_capacity > 0)
        run->peak_alloc_ratio = (double)r.peak_alloc / (double)run->gpu_capacity;
    rc = finish_stats(&r, err);
    goto out;
nomem:
    rc = fair_error_set(err, FAIR_ENOMEM, "simulator: out of memory");
out:
    if (rc)
        fair_sim_run_release(run);
    fair_free(r.js);
    fair_free(r.pending);
    fair_free(r.running);
    fair_free(r.heap);
    fair_free(r.pods);
    fair_free(r.pod_job);
    fair_free(r.q_alloc);
    fair_free(r.q_fair);
    fair_free(r.q_running);
    fair_free(r.q_pending);
    if (r.have_placer)
        fair_sim_placer_release(&r.placer);
    fair_sim_enodes_release(&r.en);
    fair_sim_cluster_release(&r.cluster);
    return rc;
}

void fair_sim_run_release(struct fair_sim_run *run)
{
    if (!run)
        return;
    fair_free(run->samples);
    fair_free(run->qsamples);
    fair_free(run->qstats);
    run->samples = NULL;
    run->qsamples = NULL;
    run->qstats = NULL;
    run->nsamples = 0;
}
