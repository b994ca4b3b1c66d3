/* Benchmark of one engine cycle on synthetic clusters (fixed seed):
 * 1,000 nodes x 8 GPUs with 20,000 pods, then 5,000 nodes with 150,000
 * pods. Prints the median cycle time, decisions per second and the
 * engine's memory per pod. Run by `make bench`. The constraint variants run
 * the small cluster again with 20% of the pods carrying a required node
 * affinity, 5% a required anti-affinity on the hostname against the pods
 * of their own service (50 services), or both (each pod its own copy of
 * its terms, as the controller decodes them). The GPU model variant
 * (issue 15) has 4 GPU models on the nodes, each project a guarantee of
 * one model (half of its own) and a third of them a lending limit, and
 * the pods that name a model spread over the 4. The schedule variant
 * (issue 15) adds spec.schedule windows (zone Europe/Berlin, read from the
 * zone files as the controller reads them) to a third of the projects and
 * resolves every project's and queue's effective spec each cycle through
 * the controller's own code (fair_ctl_tq_prepare), then copies it into the
 * engine's snapshot, as ctl/snapshot.c does; it prints that cost apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl/tqstate.h"
#include "engine/engine.h"
#include "kube/objects.h"

#define GIB ((int64_t)1 << 30)

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng >> 33) % n;
}

/* A pod's node affinity: pool In [pool-k, pool-k+1] (one fifth of the
 * nodes), in one allocation per pod. */
struct bench_aff {
    struct fair_node_affinity a;
    struct fair_node_term term;
    struct fair_node_req req;
    const char *values[2];
    /* Anti-affinity: app In [svc-k] on kubernetes.io/hostname. */
    struct fair_pod_affinity pa;
    struct fair_pod_term pterm;
    struct fair_node_req preq;
    struct fair_label label;
    const char *svc[1];
};

static char svc_names[50][8];

/* The node affinity drawn is preferred (weight 10), not required: the
 * cost of scoring (docs/engine.md, "Preferred terms"). */
static bool preferred_mode;

static const char *const pool_names[10] = {"pool-0", "pool-1", "pool-2", "pool-3", "pool-4",
                                           "pool-5", "pool-6", "pool-7", "pool-8", "pool-9"};

struct cluster {
    struct fair_node *nodes;
    struct fair_label *labels; /* 3 per node */
    struct bench_aff *affs;    /* per pod */
    size_t nn;
    struct fair_project projects[10];
    struct fair_queue *queues;
    size_t nq;
    struct fair_pod *pods;
    size_t npods;
    char *names; /* one pool for every string */
    size_t names_used, names_cap;
    int16_t *dev; /* free milli per device, for building running pods */
    size_t nrunning;
};

static const char *pool(struct cluster *c, const char *prefix, size_t i)
{
    char *p = c->names + c->names_used;
    int n = snprintf(p, c->names_cap - c->names_used, "%s-%06zu", prefix, i);
    if (n < 0 || (size_t)n + 1 > c->names_cap - c->names_used) {
        fprintf(stderr, "bench: name pool full\n");
        exit(1);
    }
    c->names_used += (size_t)n + 1;
    return p;
}

static int64_t gpu_size(void)
{
    uint32_t x = rnd(1000);
    if (x < 400)
        return 250;
    if (x < 700)
        return 500;
    if (x < 920)
        return 1000;
    if (x < 970)
        return 2000;
    if (x < 995)
        return 4000;
    return 8000;
}

/* The GPU model variant: 0 (two models, no model quotas) or 4. */
static int bench_models;
static const char *const model_names[4] = {"A100", "H100", "L40S", "H200"};
static struct fair_model_quota model_quotas[10];

static const struct fair_toleration tol_any = {"dedicated", FAIR_TOLERATE_EXISTS, NULL, true, 0};
static const struct fair_taint taint_dedicated = {"dedicated", "infer", FAIR_TAINT_NO_SCHEDULE};

/* Places a pod on the first node, from a random start, with room (a bench
 * stand-in for history). Returns false when nothing fits. */
static bool place_running(struct cluster *c, struct fair_pod *p, int64_t *cpu_free)
{
    int64_t g = p->request.v[FAIR_RES_GPU];
    size_t start = rnd((uint32_t)c->nn);
    for (size_t k = 0; k < 8; k++) {
        size_t n = (start + k * 7919) % c->nn;
        if (c->nodes[n].ntaints)
            continue;
        if (cpu_free[n] < p->request.v[FAIR_RES_CPU])
            continue;
        int16_t *dev = &c->dev[n * 8];
        uint64_t mask = 0;
        if (g < 1000) {
            for (int d = 0; d < 8; d++)
                if (dev[d] >= g) {
                    mask = (uint64_t)1 << d;
                    dev[d] = (int16_t)(dev[d] - g);
                    break;
                }
        } else {
            int need = (int)(g / 1000), got = 0;
            for (int d = 0; d < 8 && got < need; d++)
                if (dev[d] == 1000) {
                    mask |= (uint64_t)1 << d;
                    got++;
                }
            if (got < need)
                mask = 0;
            for (int d = 0; d < 8 && mask; d++)
                if (mask >> d & 1)
                    dev[d] = 0;
        }
        if (!mask)
            continue;
        cpu_free[n] -= p->request.v[FAIR_RES_CPU];
        p->state = FAIR_POD_BOUND;
        p->node = (int32_t)n;
        p->gpu_devices = mask;
        return true;
    }
    return false;
}

static void build(struct cluster *c, size_t nnodes, size_t nrunning, size_t npending, uint64_t seed,
                  int affinity_pct, int anti_pct)
{
    memset(c, 0, sizeof(*c));
    rng = seed;
    c->nn = nnodes;
    c->nq = 100;
    c->npods = nrunning + npending;
    c->nodes = calloc(nnodes, sizeof(*c->nodes));
    c->queues = calloc(c->nq, sizeof(*c->queues));
    c->pods = calloc(c->npods, sizeof(*c->pods));
    c->dev = calloc(nnodes * 8, sizeof(*c->dev));
    c->labels = calloc(nnodes * 3, sizeof(*c->labels));
    c->affs = calloc(c->npods, sizeof(*c->affs));
    c->names_cap = (nnodes + c->npods * 2 + 200) * 16;
    c->names = malloc(c->names_cap);
    int64_t *cpu_free = calloc(nnodes, sizeof(int64_t));
    if (!c->nodes || !c->queues || !c->pods || !c->dev || !c->names || !cpu_free || !c->labels ||
        !c->affs) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < nnodes; i++) {
        struct fair_node *n = &c->nodes[i];
        n->name = pool(c, "node", i);
        n->gpu_model = bench_models ? model_names[i % 4] : i % 2 ? "H100" : "A100";
        n->gpu_count = 8;
        n->allocatable.v[FAIR_RES_GPU] = 8000;
        n->allocatable.v[FAIR_RES_CPU] = 128000;
        n->allocatable.v[FAIR_RES_MEM] = 1024 * GIB;
        n->max_pods = 110;
        /* Labels as on real nodes: a pool, a zone and the hostname. */
        struct fair_label *l = &c->labels[i * 3];
        l[0] = (struct fair_label){"kubernetes.io/hostname", n->name};
        l[1] = (struct fair_label){"pool", pool_names[i % 10]};
        l[2] = (struct fair_label){"topology.kubernetes.io/zone", pool_names[i % 4]};
        n->labels = l;
        n->nlabels = 3;
        if (i % 20 == 19) {
            n->taints = &taint_dedicated;
            n->ntaints = 1;
        }
        cpu_free[i] = 128000;
        for (int d = 0; d < 8; d++)
            c->dev[i * 8 + d] = 1000;
    }
    int64_t cap = (int64_t)nnodes * 8000;
    for (int p = 0; p < 10; p++) {
        struct fair_quota *q = &c->projects[p].q;
        q->name = pool(c, "project", (size_t)p);
        q->guaranteed.v[FAIR_RES_GPU] = cap / 10 * (5 + p % 4) / 10;
        for (int r = 0; r < FAIR_RES_COUNT; r++)
            q->limit.v[r] = FAIR_UNLIMITED;
        q->over_quota_weight = 1 + p % 3;
        q->over_quota_priority = p == 9 ? 1 : 0;
        q->models = NULL;
        q->nmodels = 0;
        q->lending_set = 0;
        if (bench_models) {
            model_quotas[p] = (struct fair_model_quota){
                .model = model_names[p % 4], .guaranteed = q->guaranteed.v[FAIR_RES_GPU] / 2};
            q->models = &model_quotas[p];
            q->nmodels = 1;
            if (p % 3 == 0) {
                q->lending_set = 1u << FAIR_RES_GPU;
                q->lending_limit.v[FAIR_RES_GPU] = q->guaranteed.v[FAIR_RES_GPU] / 2;
            }
        }
    }
    for (size_t i = 0; i < c->nq; i++) {
        struct fair_queue *qu = &c->queues[i];
        int p = (int)(i / 10);
        qu->q.name = pool(c, "queue", i);
        qu->q.guaranteed.v[FAIR_RES_GPU] = c->projects[p].q.guaranteed.v[FAIR_RES_GPU] / 10;
        for (int r = 0; r < FAIR_RES_COUNT; r++)
            qu->q.limit.v[r] = FAIR_UNLIMITED;
        qu->q.over_quota_weight = 1 + (int64_t)(i % 2);
        qu->project = p;
        qu->project_name = c->projects[p].q.name;
        qu->reclaim_min_runtime_ms = i % 3 == 0 ? 600000 : 0;
    }
    int64_t now = 1700000000000LL;
    for (size_t i = 0; i < c->npods; i++) {
        struct fair_pod *p = &c->pods[i];
        p->uid = pool(c, "uid", i);
        p->name = p->uid;
        p->namespace_ = "bench";
        /* Queues of all sizes: some much busier than others. */
        p->queue = (int32_t)(rnd(10) < 7 ? rnd(30) : rnd(100));
        p->priority = (int32_t)rnd(3) * 100;
        p->created_ms = now - (int64_t)rnd(86400000);
        p->preemptible = rnd(20) != 0;
        p->request.v[FAIR_RES_GPU] = gpu_size();
        p->request.v[FAIR_RES_CPU] = 1000 + 500 * (int64_t)rnd(8);
        p->request.v[FAIR_RES_MEM] = (4 + (int64_t)rnd(28)) * GIB;
        p->node = -1;
        p->state = FAIR_POD_PENDING;
        if (rnd(10) == 0) {
            p->tolerations = &tol_any;
            p->ntolerations = 1;
        }
        if (rnd(5) == 0) {
            p->gpu_model = rnd(2) ? "H100" : "A100";
            if (bench_models)
                p->gpu_model = model_names[(i * 7) % 4];
        }
        /* Drawn from a hash of i, not from rng: the pods are the same with
         * and without constraints. */
        uint64_t h = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL;
        if (affinity_pct && (int)((h >> 40) % 100) < affinity_pct) {
            struct bench_aff *b = &c->affs[i];
            uint32_t k = (uint32_t)((h >> 20) % 10);
            b->values[0] = pool_names[k];
            b->values[1] = pool_names[(k + 1) % 10];
            b->req = (struct fair_node_req){"pool", b->values, 2, FAIR_SEL_IN, false};
            b->term = (struct fair_node_term){&b->req, 1, preferred_mode ? 10 : 0, false};
            b->a =
                preferred_mode
                    ? (struct fair_node_affinity){.preferred = &b->term, .npreferred = 1}
                    : (struct fair_node_affinity){.required = true, .terms = &b->term, .nterms = 1};
            p->node_affinity = &b->a;
        }
        if (anti_pct && (int)((h >> 8) % 100) < anti_pct) {
            struct bench_aff *b = &c->affs[i];
            const char *svc = svc_names[(h >> 30) % 50];
            b->label = (struct fair_label){"app", svc};
            p->labels = &b->label;
            p->nlabels = 1;
            b->svc[0] = svc;
            b->preq = (struct fair_node_req){"app", b->svc, 1, FAIR_SEL_IN, false};
            b->pterm = (struct fair_pod_term){.topology_key = "kubernetes.io/hostname",
                                              .selector = {NULL, 0, &b->preq, 1, false, false},
                                              .weight = 0};
            b->pa = (struct fair_pod_affinity){NULL, 0, &b->pterm, 1, NULL, 0, NULL, 0};
            p->pod_affinity = &b->pa;
        }
        if (i < nrunning && place_running(c, p, cpu_free)) {
            p->started_ms = now - (int64_t)rnd(3600000);
            c->nrunning++;
        }
    }
    free(cpu_free);
}

static void release(struct cluster *c)
{
    free(c->nodes);
    free(c->queues);
    free(c->pods);
    free(c->names);
    free(c->dev);
    free(c->labels);
    free(c->affs);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* The schedule variant: Project and Queue objects as the controller
 * decodes them, a third of the projects (p % 3 == 1) with two windows. */
static int bench_schedules;

struct sched {
    struct fair_kproject kp[10];
    const struct fair_kproject *kpp[10];
    struct fair_ktime tm[10];
    struct fair_kwindow win[10][2];
    struct fair_kqueue *kq;
    const struct fair_kqueue **kqp;
    struct fair_ctl_tq *tq;
    double times[32], cpu[32];
};

/* The two windows of a scheduled project: weekdays 08:00-20:00 (Berlin)
 * the full guarantee g, nights 20:00-08:00 (New York) a quarter of it. */
static void day_night(struct fair_kwindow w[2], int64_t g)
{
    w[0] = (struct fair_kwindow){.days = 0x3e,
                                 .start_min = 480,
                                 .end_min = 1200,
                                 .time_zone = "Europe/Berlin",
                                 .g_set = 1u << FAIR_RES_GPU};
    snprintf(w[0].name, sizeof w[0].name, "workday");
    w[0].guaranteed.v[FAIR_RES_GPU] = g;
    w[1] = (struct fair_kwindow){.days = 0x7f,
                                 .start_min = 1200,
                                 .end_min = 480,
                                 .time_zone = "America/New_York",
                                 .g_set = 1u << FAIR_RES_GPU,
                                 .weight = 3};
    snprintf(w[1].name, sizeof w[1].name, "night");
    w[1].guaranteed.v[FAIR_RES_GPU] = g / 4;
}

static void sched_build(struct sched *sc, const struct cluster *c)
{
    memset(sc, 0, sizeof *sc);
    struct fair_ctl_tq_options o = {.time_zone = "Europe/Berlin", .refresh_ms = 60000};
    struct fair_error err = {0};
    if (fair_ctl_tq_new(&o, &sc->tq, &err)) {
        fprintf(stderr, "bench: time-based quota: %s\n", err.msg);
        exit(1);
    }
    for (int p = 0; p < 10; p++) {
        struct fair_kproject *k = &sc->kp[p];
        const struct fair_quota *q = &c->projects[p].q;
        k->meta.name = (char *)q->name;
        k->quota.guaranteed = q->guaranteed;
        k->quota.limit = q->limit;
        k->quota.over_quota_weight = q->over_quota_weight;
        k->quota.over_quota_priority = q->over_quota_priority;
        if (p % 3 == 1) {
            /* Weekdays 08:00-20:00 the full guarantee, nights and
             * weekends a quarter of it (the day/night example),
             * each window in its own IANA zone. */
            struct fair_kwindow *w = sc->win[p];
            day_night(w, q->guaranteed.v[FAIR_RES_GPU]);
            sc->tm[p] = (struct fair_ktime){.usage_half_life_ms = 0, .windows = w, .nwindows = 2};
            k->time = &sc->tm[p];
        }
        sc->kpp[p] = k;
    }
    sc->kq = calloc(c->nq, sizeof *sc->kq);
    sc->kqp = calloc(c->nq, sizeof *sc->kqp);
    if (!sc->kq || !sc->kqp) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < c->nq; i++) {
        sc->kq[i].meta.name = (char *)c->queues[i].q.name;
        sc->kq[i].quota.guaranteed = c->queues[i].q.guaranteed;
        sc->kq[i].quota.limit = c->queues[i].q.limit;
        sc->kq[i].quota.over_quota_weight = c->queues[i].q.over_quota_weight;
        sc->kqp[i] = &sc->kq[i];
    }
}

/* One cycle's resolution: the effective specs at now_ms into the
 * engine's projects and queues (guarantees, limits, weight). Returns how
 * many projects are in their reduced (night) window. */
static int sched_resolve(struct sched *sc, struct cluster *c, int64_t now_ms)
{
    struct fair_ctl_snapshot_input in = {0};
    in.now_ms = now_ms;
    in.projects = sc->kpp;
    in.nprojects = 10;
    in.queues = sc->kqp;
    in.nqueues = c->nq;
    if (fair_ctl_tq_prepare(sc->tq, NULL, now_ms, now_ms, &in)) {
        fprintf(stderr, "bench: fair_ctl_tq_prepare failed\n");
        exit(1);
    }
    int changed = 0;
    for (int p = 0; p < 10; p++) {
        struct fair_quota *q = &c->projects[p].q;
        const struct fair_kquota *e = &in.project_quota[p];
        changed += e->guaranteed.v[FAIR_RES_GPU] < sc->kp[p].quota.guaranteed.v[FAIR_RES_GPU];
        q->guaranteed = e->guaranteed;
        q->limit = e->limit;
        q->over_quota_weight = e->over_quota_weight;
    }
    for (size_t i = 0; i < c->nq; i++) {
        struct fair_quota *q = &c->queues[i].q;
        q->guaranteed = in.queue_quota[i].guaranteed;
        q->limit = in.queue_quota[i].limit;
        q->over_quota_weight = in.queue_quota[i].over_quota_weight;
    }
    return changed;
}

static void sched_release(struct sched *sc)
{
    fair_ctl_tq_free(sc->tq);
    free(sc->kq);
    free(sc->kqp);
}

/* The resolution alone at a larger scale: 999 projects (a third with the
 * two windows above), 9,990 queues without schedules; median of 9. */
static void sched_scale(void)
{
    enum { NP = 999, NQ = 9990, RUNS = 9 };
    struct fair_kproject *kp = calloc(NP, sizeof *kp);
    const struct fair_kproject **kpp = calloc(NP, sizeof *kpp);
    struct fair_kqueue *kq = calloc(NQ, sizeof *kq);
    const struct fair_kqueue **kqp = calloc(NQ, sizeof *kqp);
    char(*names)[16] = calloc(NP + NQ, sizeof *names);
    struct fair_kwindow w[2];
    struct fair_ktime tm = {.windows = w, .nwindows = 2};
    struct fair_ctl_tq_options o = {.time_zone = "Europe/Berlin", .refresh_ms = 60000};
    struct fair_ctl_tq *tq = NULL;
    struct fair_error err = {0};
    if (!kp || !kpp || !kq || !kqp || !names || fair_ctl_tq_new(&o, &tq, &err)) {
        fprintf(stderr, "bench: schedule scale setup failed\n");
        exit(1);
    }
    day_night(w, 16000);
    for (size_t i = 0; i < NP; i++) {
        snprintf(names[i], sizeof names[i], "p-%zu", i);
        kp[i].meta.name = names[i];
        kp[i].quota.guaranteed.v[FAIR_RES_GPU] = 8000;
        kp[i].quota.over_quota_weight = 1;
        kp[i].time = i % 3 == 1 ? &tm : NULL;
        kpp[i] = &kp[i];
    }
    for (size_t i = 0; i < NQ; i++) {
        snprintf(names[NP + i], sizeof names[0], "q-%zu", i);
        kq[i].meta.name = names[NP + i];
        kq[i].quota.over_quota_weight = 1;
        kqp[i] = &kq[i];
    }
    double t[RUNS], cpu[RUNS];
    for (int r = 0; r < RUNS; r++) {
        struct fair_ctl_snapshot_input in = {0};
        in.projects = kpp;
        in.nprojects = NP;
        in.queues = kqp;
        in.nqueues = NQ;
        int64_t now = 1700000000000LL + (int64_t)r * 3600000;
        double a = now_s(), ac = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (fair_ctl_tq_prepare(tq, NULL, now, now, &in)) {
            fprintf(stderr, "bench: fair_ctl_tq_prepare failed\n");
            exit(1);
        }
        t[r] = now_s() - a;
        cpu[r] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - ac;
    }
    qsort(t, RUNS, sizeof(double), cmp_double);
    qsort(cpu, RUNS, sizeof(double), cmp_double);
    printf("schedules alone: %d projects (%d with 2 windows), %d queues, %d runs\n", NP, NP / 3, NQ,
           RUNS);
    printf("  median resolution: %.2f ms wall, %.2f ms CPU (max %.2f ms wall)\n", t[RUNS / 2] * 1e3,
           cpu[RUNS / 2] * 1e3, t[RUNS - 1] * 1e3);
    fair_ctl_tq_free(tq);
    free(kp);
    free(kpp);
    free(kq);
    free(kqp);
    free(names);
}

static void run(const char *title, size_t nnodes, size_t nrunning, size_t npending, int runs,
                int affinity_pct, int anti_pct)
{
    struct cluster c;
    double t0 = now_s();
    build(&c, nnodes, nrunning, npending, 42, affinity_pct, anti_pct);
    double build_s = now_s() - t0;
    static struct sched sc;
    int in_window = 0;
    if (bench_schedules)
        sched_build(&sc, &c);
    struct fair_snapshot s = {0};
    s.now_ms = 1700000000000LL;
    s.nodes = c.nodes;
    s.nnodes = c.nn;
    s.projects = c.projects;
    s.nprojects = 10;
    s.queues = c.queues;
    s.nqueues = c.nq;
    s.pods = c.pods;
    s.npods = c.npods;
    double times[32], cpu[32];
    size_t nactions = 0, binds = 0, evicts = 0, mem = 0;
    for (int i = 0; i < runs; i++) {
        struct fair_result res;
        struct fair_error err = {0};
        double a = now_s(), ac = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (bench_schedules) {
            /* Cycles an hour apart, so that the windows switch on the way
             * (9 cycles from Tuesday 23:13 Berlin time). */
            s.now_ms = 1700000000000LL + (int64_t)i * 3600000;
            in_window = sched_resolve(&sc, &c, s.now_ms);
            sc.times[i] = now_s() - a;
            sc.cpu[i] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - ac;
        }
        int rc = fair_engine_run(&s, &res, &err);
        times[i] = now_s() - a;
        cpu[i] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - ac;
        if (rc) {
            fprintf(stderr, "bench: engine failed: %s\n", err.msg);
            exit(1);
        }
        nactions = res.nactions;
        binds = evicts = 0;
        for (size_t k = 0; k < res.nactions; k++) {
            if (res.actions[k].kind == FAIR_ACTION_BIND)
                binds++;
            else
                evicts++;
        }
        mem = res.mem_bytes;
        fair_result_release(&res);
    }
    qsort(times, (size_t)runs, sizeof(double), cmp_double);
    qsort(cpu, (size_t)runs, sizeof(double), cmp_double);
    double med = times[runs / 2];
    printf("%s: %zu nodes, %zu pods (%zu running, %zu pending), %d runs (setup %.2f s)\n", title,
           c.nn, c.npods, c.nrunning, c.npods - c.nrunning, runs, build_s);
    printf("  median cycle: %.1f ms (min %.1f, max %.1f)\n", med * 1e3, times[0] * 1e3,
           times[runs - 1] * 1e3);
    printf("  median CPU time: %.1f ms (the wall time above includes waiting for a busy CPU)\n",
           cpu[runs / 2] * 1e3);
    printf("  decisions: %zu (%zu binds, %zu evictions), %.0f decisions/s\n", nactions, binds,
           evicts, med > 0 ? (double)nactions / med : 0.0);
    printf("  engine memory: %zu bytes in all, %.0f bytes per pod\n", mem,
           (double)mem / (double)c.npods);
    if (bench_schedules) {
        qsort(sc.times, (size_t)runs, sizeof(double), cmp_double);
        qsort(sc.cpu, (size_t)runs, sizeof(double), cmp_double);
        printf("  of which resolving the schedules (10 projects, 100 queues, 3 projects with 2 "
               "windows; %d in a reduced window at the last cycle): median %.1f us wall, %.1f us "
               "CPU (max %.1f us wall)\n",
               in_window, sc.times[runs / 2] * 1e6, sc.cpu[runs / 2] * 1e6,
               sc.times[runs - 1] * 1e6);
        sched_release(&sc);
    }
    release(&c);
}

int main(void)
{
    for (int i = 0; i < 50; i++)
        snprintf(svc_names[i], sizeof svc_names[i], "svc-%d", i);
    run("small", 1000, 10000, 10000, 9, 0, 0);
    run("small, 20% node affinity", 1000, 10000, 10000, 9, 20, 0);
    run("small, 5% hostname anti-affinity", 1000, 10000, 10000, 9, 0, 5);
    run("small, 20% node affinity + 5% hostname anti-affinity", 1000, 10000, 10000, 9, 20, 5);
    bench_models = 4;
    run("small, 4 GPU models (model quotas, lending limits)", 1000, 10000, 10000, 9, 0, 0);
    bench_schedules = 1;
    run("small, 4 GPU models + schedules on a third of the projects (resolved each cycle)", 1000,
        10000, 10000, 9, 0, 0);
    bench_schedules = 0;
    bench_models = 0;
    sched_scale();
    preferred_mode = true;
    run("small, 20% preferred node affinity", 1000, 10000, 10000, 9, 20, 0);
    preferred_mode = false;
    run("large", 5000, 75000, 75000, 5, 0, 0);
    return 0;
}
