/* The replay's figures beyond allocation: distributions, lost work under
 * checkpoints, episodes, the pending requests of a queue, and the idle
 * GPU pending pods could use at once (definitions in metrics.h and
 * docs/simulator.md). */
#include "sim/metrics.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

#define FULL FAIR_GPU_DEVICE_MILLI

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

void fair_sim_dist_of(int64_t *v, size_t n, struct fair_sim_dist *d)
{
    d->n = n;
    if (n == 0) {
        d->mean_ms = -1;
        d->p50_ms = d->p95_ms = d->p99_ms = d->max_ms = -1;
        return;
    }
    qsort(v, n, sizeof(*v), cmp_i64);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)v[i];
    d->mean_ms = sum / (double)n;
    d->p50_ms = fair_sim_percentile(v, n, 50);
    d->p95_ms = fair_sim_percentile(v, n, 95);
    d->p99_ms = fair_sim_percentile(v, n, 99);
    d->max_ms = v[n - 1];
}

int64_t fair_sim_lost_ms(int64_t run_ms, int64_t checkpoint_ms, int64_t *saved_ms)
{
    int64_t saved = 0;
    if (run_ms < 0)
        run_ms = 0;
    if (checkpoint_ms > 0)
        saved = run_ms / checkpoint_ms * checkpoint_ms;
    if (saved_ms)
        *saved_ms = saved;
    return run_ms - saved;
}

/* ---- episodes ----------------------------------------------------------- */

void fair_sim_spans_init(struct fair_sim_spans *s, bool keep_lengths)
{
    memset(s, 0, sizeof(*s));
    s->keep = keep_lengths;
}

void fair_sim_spans_release(struct fair_sim_spans *s)
{
    fair_free(s->len);
    memset(s, 0, sizeof(*s));
}

static void spans_close(struct fair_sim_spans *s, int64_t now)
{
    int64_t l = now - s->since;
    s->open = false;
    s->total_ms += l;
    if (l > s->longest_ms)
        s->longest_ms = l;
}

int fair_sim_spans_note(struct fair_sim_spans *s, int64_t now, bool on)
{
    if (on && !s->open) {
        s->open = true;
        s->since = now;
    } else if (!on && s->open) {
        int64_t l = now - s->since;
        spans_close(s, now);
        s->count++;
        if (s->keep) {
            if (fair_grow((void **)&s->len, &s->cap, s->nlen + 1, sizeof(*s->len)))
                return FAIR_ENOMEM;
            s->len[s->nlen++] = l;
        }
    }
    return 0;
}

void fair_sim_spans_end(struct fair_sim_spans *s, int64_t now)
{
    if (!s->open)
        return;
    spans_close(s, now);
    s->unfinished++;
}

/* ---- pending sizes ------------------------------------------------------ */

void fair_sim_sizes_init(struct fair_sim_sizes *s)
{
    memset(s, 0, sizeof(*s));
}

void fair_sim_sizes_release(struct fair_sim_sizes *s)
{
    fair_free(s->e);
    memset(s, 0, sizeof(*s));
}

/* Index of the first entry with e[i].size >= size. */
static size_t sizes_find(const struct fair_sim_sizes *s, int64_t size)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->e[mid].size < size)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int fair_sim_sizes_add(struct fair_sim_sizes *s, int64_t size)
{
    size_t i = sizes_find(s, size);
    if (i < s->n && s->e[i].size == size) {
        s->e[i].count++;
        return 0;
    }
    if (fair_grow((void **)&s->e, &s->cap, s->n + 1, sizeof(*s->e)))
        return FAIR_ENOMEM;
    memmove(&s->e[i + 1], &s->e[i], (s->n - i) * sizeof(*s->e));
    s->e[i].size = size;
    s->e[i].count = 1;
    s->n++;
    return 0;
}

void fair_sim_sizes_del(struct fair_sim_sizes *s, int64_t size)
{
    size_t i = sizes_find(s, size);
    if (i >= s->n || s->e[i].size != size)
        return;
    if (--s->e[i].count > 0)
        return;
    memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(*s->e));
    s->n--;
}

int64_t fair_sim_sizes_min(const struct fair_sim_sizes *s)
{
    return s->n ? s->e[0].size : -1;
}

/* ---- idle while a pending pod fits --------------------------------------- */

void fair_sim_fit_scratch_init(struct fair_sim_fit_scratch *s)
{
    memset(s, 0, sizeof(*s));
}

void fair_sim_fit_scratch_release(struct fair_sim_fit_scratch *s)
{
    fair_free(s->mark);
    fair_free(s->cand);
    fair_free(s->whole);
    fair_free(s->maxfrac);
    fair_free(s->shapes);
    fair_free(s->trial);
    fair_free(s->shape_of);
    fair_free(s->all);
    fair_free(s->touched);
    fair_free(s->keyed);
    memset(s, 0, sizeof(*s));
}

static int scratch_nodes(struct fair_sim_fit_scratch *s, size_t nnodes)
{
    if (s->nnodes == nnodes && s->mark)
        return 0;
    size_t n = nnodes ? nnodes : 1;
    uint8_t *mark = fair_calloc(n, sizeof(*mark));
    int32_t *cand = fair_calloc(n, sizeof(*cand));
    int32_t *whole = fair_calloc(n, sizeof(*whole));
    int32_t *maxfrac = fair_calloc(n, sizeof(*maxfrac));
    if (!mark || !cand || !whole || !maxfrac) {
        fair_free(mark);
        fair_free(cand);
        fair_free(whole);
        fair_free(maxfrac);
        return FAIR_ENOMEM;
    }
    fair_free(s->mark);
    fair_free(s->cand);
    fair_free(s->whole);
    fair_free(s->maxfrac);
    s->mark = mark;
    s->cand = cand;
    s->whole = whole;
    s->maxfrac = maxfrac;
    s->nnodes = nnodes;
    return 0;
}

/* The devices a first-fit placement of job takes on node: the first
 * device with room for a fraction, the lowest fully free ones for whole
 * GPUs. The caller checked fair_sim_fits(). */
static uint64_t pick_devices(const struct fair_sim_cluster *c, size_t node,
                             const struct fair_sim_job *job)
{
    const struct fair_sim_nstate *st = &c->n[node];
    int ngpu = c->trace->nodes[node].gpu_count;
    uint64_t dev = 0;
    if (job->gpu_milli == 0)
        return 0;
    if (job->gpu_milli < FULL) {
        for (int d = 0; d < ngpu; d++)
            if (st->gpu_free[d] >= job->gpu_milli)
                return (uint64_t)1 << d;
        return 0;
    }
    int64_t want = job->gpu_milli / FULL;
    for (int d = 0; d < ngpu && want > 0; d++)
        if (st->gpu_free[d] == FULL) {
            dev |= (uint64_t)1 << d;
            want--;
        }
    return dev;
}

/* Places the gang whose member 0 is job by first fit (nodes in skip left
 * out), recording each pod's node in s->trial; then takes everything back. 1 when every pod found a
 * node, 0 when not, FAIR_ENOMEM. *placed: pods placed (their nodes are in
 * s->trial[0..*placed)). */
static int trial_gang(struct fair_sim_cluster *c, int32_t job, const uint8_t *skip,
                      struct fair_sim_fit_scratch *s, size_t *placed)
{
    const struct fair_sim_job *jobs = c->trace->jobs;
    size_t n = (size_t)jobs[job].gang_size;
    *placed = 0;
    if (fair_grow((void **)&s->trial, &s->trialcap, n, sizeof(*s->trial)))
        return FAIR_ENOMEM;
    size_t k = 0;
    for (; k < n; k++) {
        const struct fair_sim_job *m = &jobs[(size_t)job + k];
        size_t nd = 0;
        while (nd < c->nnodes && ((skip && skip[nd]) || !fair_sim_fits(c, nd, m)))
            nd++;
        if (nd == c->nnodes)
            break;
        uint64_t dev = pick_devices(c, nd, m);
        if (fair_sim_cluster_bind(c, nd, dev, m))
            break; /* cannot happen after fair_sim_fits */
        s->trial[k] = (struct fair_sim_trial){(int32_t)nd, dev};
    }
    for (size_t i = k; i-- > 0;)
        fair_sim_cluster_unbind(c, (size_t)s->trial[i].node, s->trial[i].devices,
                                &jobs[(size_t)job + i]);
    *placed = k;
    return k == n;
}

int fair_sim_job_fits(struct fair_sim_cluster *c, int32_t job, struct fair_sim_fit_scratch *s)
{
    const struct fair_sim_job *j = &c->trace->jobs[job];
    if (j->gang_size > 1) {
        size_t placed;
        return trial_gang(c, job, NULL, s, &placed);
    }
    for (size_t nd = 0; nd < c->nnodes; nd++)
        if (fair_sim_fits(c, nd, j))
            return 1;
    return 0;
}

static int shape_cmp(const void *a, const void *b)
{
    const struct fair_sim_shape *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->cpu != y->cpu)
        return x->cpu < y->cpu ? -1 : 1;
    if (x->mem != y->mem)
        return x->mem < y->mem ? -1 : 1;
    return (x->mask > y->mask) - (x->mask < y->mask);
}

static int i32_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The trace's distinct shapes (single pods with GPU), smallest first, and
 * each job's shape (-1 for others). */
static int scratch_shapes(struct fair_sim_fit_scratch *s, const struct fair_sim_trace *t)
{
    if (s->trace == t && s->shape_of)
        return 0;
    size_t nj = t->njobs ? t->njobs : 1, n = 0;
    int32_t *of = fair_malloc(nj * sizeof(*of));
    struct fair_sim_shape *all = fair_malloc(nj * sizeof(*all));
    int32_t *touched = fair_malloc(nj * sizeof(*touched));
    struct fair_sim_shape *shapes = fair_malloc(nj * sizeof(*shapes));
    if (!of || !all || !touched || !shapes) {
        fair_free(of);
        fair_free(all);
        fair_free(touched);
        fair_free(shapes);
        return FAIR_ENOMEM;
    }
    for (size_t i = 0; i < t->njobs; i++) {
        const struct fair_sim_job *j = &t->jobs[i];
        of[i] = -1;
        if (j->gpu_milli > 0 && j->gang_size <= 1)
            all[n++] = (struct fair_sim_shape){
                j->gpu_milli, j->cpu_milli, j->memory_bytes, j->model_mask, 0, false, 0};
    }
    qsort(all, n, sizeof(*all), shape_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || shape_cmp(&all[u - 1], &all[i]) != 0)
            all[u++] = all[i];
    for (size_t i = 0; i < t->njobs; i++) {
        const struct fair_sim_job *j = &t->jobs[i];
        if (j->gpu_milli <= 0 || j->gang_size > 1)
            continue;
        struct fair_sim_shape key = {
            j->gpu_milli, j->cpu_milli, j->memory_bytes, j->model_mask, 0, false, 0};
        const struct fair_sim_shape *hit = bsearch(&key, all, u, sizeof(*all), shape_cmp);
        of[i] = (int32_t)(hit - all);
    }
    fair_free(s->shape_of);
    fair_free(s->all);
    fair_free(s->touched);
    fair_free(s->shapes);
    s->shape_of = of;
    s->all = all;
    s->nall = u;
    s->touched = touched;
    s->shapes = shapes;
    s->shapecap = nj;
    s->trace = t;
    return 0;
}

/* Fills s->shapes with this call's shapes and their counts; returns how
 * many. */
static size_t count_shapes(struct fair_sim_fit_scratch *s, const int32_t *pods, size_t n)
{
    size_t ntouched = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = s->shape_of[pods[i]];
        if (id < 0)
            continue;
        if (s->all[id].count++ == 0)
            s->touched[ntouched++] = id;
    }
    qsort(s->touched, ntouched, sizeof(*s->touched), i32_cmp);
    for (size_t h = 0; h < ntouched; h++) {
        struct fair_sim_shape *a = &s->all[s->touched[h]];
        s->shapes[h] = *a;
        s->shapes[h].fits = false;
        a->count = 0;
    }
    return ntouched;
}

static int keyed_cmp(const void *a, const void *b)
{
    const struct fair_sim_keyed *x = a, *y = b;
    if (x->shape != y->shape)
        return x->shape < y->shape ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

/* count_shapes() with tenancy: a fraction's shape counts per tenant key
 * (whole GPUs under one key). SIZE_MAX: out of memory. */
static size_t count_keyed(struct fair_sim_fit_scratch *s, const int32_t *pods, size_t n)
{
    if (n > s->keyedcap) {
        struct fair_sim_keyed *k = fair_realloc(s->keyed, n * sizeof(*k));
        if (!k)
            return SIZE_MAX;
        s->keyed = k;
        s->keyedcap = n;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = s->shape_of[pods[i]];
        if (id < 0)
            continue;
        s->keyed[m++] =
            (struct fair_sim_keyed){id, s->all[id].gpu < FULL ? s->job_key[pods[i]] : 0};
    }
    qsort(s->keyed, m, sizeof(*s->keyed), keyed_cmp);
    size_t nsh = 0;
    for (size_t i = 0; i < m; i++) {
        if (nsh && s->keyed[i].shape == s->keyed[i - 1].shape &&
            s->keyed[i].key == s->keyed[i - 1].key) {
            s->shapes[nsh - 1].count++;
            continue;
        }
        s->shapes[nsh] = s->all[s->keyed[i].shape];
        s->shapes[nsh].count = 1;
        s->shapes[nsh].fits = false;
        s->shapes[nsh].key = s->keyed[i].key;
        nsh++;
    }
    return nsh;
}

/* fair_sim_fits() for a shape on candidate k, from the cached device
 * figures (whole free devices, most free milli on one device). */
static bool shape_fits(const struct fair_sim_cluster *c, const struct fair_sim_fit_scratch *s,
                       size_t k, const struct fair_sim_shape *sh)
{
    size_t nd = (size_t)s->cand[k];
    const struct fair_sim_nstate *st = &c->n[nd];
    if (st->cpu_free < sh->cpu || st->mem_free < sh->mem)
        return false;
    if (sh->mask) {
        int m = c->trace->nodes[nd].model;
        if (m < 0 || !((sh->mask >> m) & 1))
            return false;
    }
    if (sh->gpu < FULL && s->job_key) {
        const int32_t *dk = s->dev_key + nd * FAIR_MAX_GPUS_PER_NODE;
        for (int d = 0; d < c->trace->nodes[nd].gpu_count; d++)
            if (st->gpu_free[d] == FULL || (st->gpu_free[d] >= sh->gpu && dk[d] == sh->key))
                return true;
        return false;
    }
    if (sh->gpu < FULL)
        return s->maxfrac[k] >= sh->gpu;
    return (int64_t)s->whole[k] >= sh->gpu / FULL;
}

int fair_sim_idle_fit(struct fair_sim_cluster *c, const int32_t *pods, size_t n,
                      const uint8_t *skip, struct fair_sim_fit_scratch *s, int64_t *idle_milli)
{
    const struct fair_sim_job *jobs = c->trace->jobs;
    *idle_milli = 0;
    if (n == 0 || c->gpu_allocated >= c->gpu_capacity)
        return 0;
    if (scratch_nodes(s, c->nnodes) || scratch_shapes(s, c->trace))
        return FAIR_ENOMEM;
    /* Candidate nodes: those with free GPU, with their device figures. */
    size_t ncand = 0;
    for (size_t nd = 0; nd < c->nnodes; nd++) {
        const struct fair_sim_nstate *st = &c->n[nd];
        s->mark[nd] = 0;
        if (st->gpu_free_total <= 0 || (skip && skip[nd]))
            continue;
        int whole = 0, maxfrac = 0;
        for (int d = 0; d < c->trace->nodes[nd].gpu_count; d++) {
            whole += st->gpu_free[d] == FULL;
            if (st->gpu_free[d] > maxfrac)
                maxfrac = st->gpu_free[d];
        }
        s->cand[ncand] = (int32_t)nd;
        s->whole[ncand] = whole;
        s->maxfrac[ncand] = maxfrac;
        ncand++;
    }
    /* Single pods with GPU, counted per distinct shape (and tenant key,
     * for fractions under tenancy), smallest first (the likeliest to fit,
     * so the node scan stops early). */
    size_t nsh = s->job_key ? count_keyed(s, pods, n) : count_shapes(s, pods, n);
    if (nsh == SIZE_MAX)
        return FAIR_ENOMEM;
    /* Pass 1: each candidate node is a fitting node if some shape fits. */
    for (size_t k = 0; k < ncand; k++)
        for (size_t h = 0; h < nsh; h++)
            if (shape_fits(c, s, k, &s->shapes[h])) {
                s->mark[s->cand[k]] = 1;
                s->shapes[h].fits = true;
                break;
            }
    /* Pass 2: a shape not seen fitting can only fit on a marked node (on
     * the others every shape was tried). */
    for (size_t h = 0; h < nsh; h++)
        for (size_t k = 0; k < ncand && !s->shapes[h].fits; k++)
            if (s->mark[s->cand[k]] && shape_fits(c, s, k, &s->shapes[h]))
                s->shapes[h].fits = true;
    int64_t demand = 0;
    for (size_t h = 0; h < nsh; h++)
        if (s->shapes[h].fits)
            demand += s->shapes[h].count * s->shapes[h].gpu;
    /* Gangs: all pods together, by a trial first fit. */
    for (size_t i = 0; i < n; i++) {
        const struct fair_sim_job *j = &jobs[pods[i]];
        if (j->gpu_milli <= 0 || j->gang_size <= 1)
            continue;
        size_t placed;
        int rc = trial_gang(c, pods[i], skip, s, &placed);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            demand += j->gpu_milli * j->gang_size;
            for (size_t k = 0; k < placed; k++)
                s->mark[s->trial[k].node] = 1;
        }
    }
    int64_t room = 0;
    for (size_t k = 0; k < ncand; k++)
        if (s->mark[s->cand[k]])
            room += c->n[s->cand[k]].gpu_free_total;
    *idle_milli = demand < room ? demand : room;
    return 0;
}
