/* The node-structured fragmentation bound and the offline packing
 * (sim/nodebound.h) on the paper protocol: for each seed, the LP bound and
 * the node bound at the last arrival of the 99.5-100.5% window (bounds only
 * fall as arrivals are added, so this holds for the window's mean), the LP
 * bound for the policies whose first failed GPU pod comes no earlier than
 * the paper FGD's (sim/bound.h, must rows) as a window mean (each record's
 * bound, averaged as the protocol averages), what the packing leaves there,
 * and the window metric of the clairvoyant policy that follows it; then
 * the medians.
 *
 *   bench_nodebound [NODES.csv PODS.csv [FIRST_SEED [SEEDS [CPU_UNIT [ITERS]]]]]
 *
 * With BENCH_ENGINE_BOUND set, two more columns: the engine's own first
 * failed GPU pod and the LP bound for the policies that fail none before
 * it (about 10 s more per seed on the default trace).
 *
 * Without arguments (as `make bench` runs it): the default openb trace
 * from $FAIR_TRACE_DIR, else ../shared/traces/alibaba-openb-2023; without
 * it the benchmark says so and exits 0. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/engine_place.h"
#include "sim/nodebound.h"
#include "sim/paper.h"
#include "sim/place.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long long arg(int argc, char **argv, int i, long long def)
{
    if (argc <= i)
        return def;
    char *end;
    long long v = strtoll(argv[i], &end, 10);
    if (*end || v < 0) {
        fprintf(stderr, "bench_nodebound: bad number %s\n", argv[i]);
        exit(2);
    }
    return v;
}

/* The index of the first failed GPU pod on a (a->n: none) of the paper
 * FGD, or with engine of Fairshare's engine; -1 on error. */
static long long first_fail(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a,
                            uint64_t seed, bool engine, struct fair_error *err)
{
    struct fair_sim_paper_result res;
    int rc;
    if (engine) {
        struct fair_sim_engine_placer ep;
        rc = fair_sim_engine_placer_init(&ep, t, err);
        if (!rc)
            rc = fair_sim_paper_run(t, a, fair_sim_place_engine, &ep, &res, err);
        fair_sim_engine_placer_release(&ep);
    } else {
        struct fair_sim_placer pl;
        if (fair_sim_placer_init(&pl, FAIR_SIM_POLICY_PAPER_FGD, seed, t, err))
            return -1;
        pl.tie_rank = a->node_rank;
        rc = fair_sim_paper_run(t, a, fair_sim_place_baseline, &pl, &res, err);
        fair_sim_placer_release(&pl);
    }
    if (rc)
        return -1;
    return res.first_fail_index == SIZE_MAX ? (long long)a->n : (long long)res.first_fail_index;
}

/* The LP bound for the policies that fail no GPU pod among the first must
 * arrivals, on the protocol's metric itself: the mean over the window's
 * records (prefixes start..end) of each record's bound (%, rounded down
 * to 0.01); -1 on error. Each record's unallocated GPU is at least its
 * bound, so their mean is too. */
static double bound_before(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a,
                           size_t start, size_t end, long long must, struct fair_error *err)
{
    int64_t sum = 0, cap = 0;
    if (must < 0 || start == 0 || start > end)
        return -1;
    for (size_t p = start; p <= end; p++) {
        struct fair_sim_frag_bound fb;
        if (fair_sim_paper_bound(t, a, p, (size_t)must, &fb, err))
            return -1;
        sum += fb.bound_milli;
        cap = fb.capacity_milli;
    }
    int64_t n = (int64_t)(end - start + 1);
    return (double)(sum * 10000 / (n * cap)) / 100.0;
}

/* Best fit of one pod now (fair_sim_best_fit), bound. */
static bool best_fit(struct fair_sim_cluster *c, const struct fair_sim_job *job)
{
    size_t node;
    uint64_t mask;
    return fair_sim_best_fit(c, job, &node, &mask) &&
           fair_sim_cluster_bind(c, node, mask, job) == 0;
}

/* The protocol's window mean (%) for the policy that places exactly the
 * arrivals with placed[k] among the first end: unallocated GPU averaged
 * over the arrivals at 99.5-100.5% of capacity; -1 when none is. */
static double window_mean(const struct fair_sim_arrivals *a, size_t end, const bool *placed,
                          int64_t cap)
{
    double sum = 0;
    size_t n = 0;
    int64_t arrived = 0, allocated = 0;
    for (size_t k = 0; k < end; k++) {
        arrived += a->jobs[k]->gpu_milli;
        if (placed[k])
            allocated += a->jobs[k]->gpu_milli;
        if (fair_sim_paper_in_window(arrived, cap)) {
            sum += (double)allocated;
            n++;
        }
    }
    return n ? 100.0 - 100.0 * sum / (double)n / (double)cap : -1;
}

/* The clairvoyant policy held to what a scheduler does: every pod that
 * fits somewhere is placed; at its packing spot when that is still free,
 * else best fit. Returns its window metric (%). */
static double work_conserving(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a,
                              size_t end, const bool *placed, const struct fair_sim_spot *spot)
{
    struct fair_sim_cluster c;
    struct fair_error err = {0};
    if (fair_sim_cluster_init(&c, t, &err))
        return -1;
    int64_t cap = c.gpu_capacity, arrived = 0;
    double sum = 0;
    size_t n = 0;
    for (size_t k = 0; k < end; k++) {
        const struct fair_sim_job *job = a->jobs[k];
        arrived += job->gpu_milli;
        if (!(placed[k] &&
              fair_sim_cluster_bind(&c, (size_t)spot[k].node, spot[k].devices, job) == 0))
            (void)best_fit(&c, job);
        if (fair_sim_paper_in_window(arrived, cap)) {
            sum += (double)c.gpu_allocated;
            n++;
        }
    }
    fair_sim_cluster_release(&c);
    return n ? 100.0 - 100.0 * sum / (double)n / (double)cap : -1;
}

int main(int argc, char **argv)
{
    char nodes[4096], pods[4096];
    bool own = argc < 3;
    if (argc == 2 || argc > 7) {
        fprintf(stderr, "usage: bench_nodebound [NODES.csv PODS.csv [FIRST_SEED [SEEDS [CPU_UNIT "
                        "[ITERS]]]]]\n");
        return 2;
    }
    if (own) {
        const char *dir = getenv("FAIR_TRACE_DIR");
        if (!dir)
            dir = "../shared/traces/alibaba-openb-2023";
        snprintf(nodes, sizeof(nodes), "%s/openb_node_list_gpu_node.csv", dir);
        snprintf(pods, sizeof(pods), "%s/openb_pod_list_default.csv", dir);
    } else {
        snprintf(nodes, sizeof(nodes), "%s", argv[1]);
        snprintf(pods, sizeof(pods), "%s", argv[2]);
    }
    long long first = arg(argc, argv, 3, FAIR_SIM_PAPER_FIRST_SEED);
    long long nseeds = arg(argc, argv, 4, FAIR_SIM_PAPER_SEEDS);
    struct fair_sim_node_bound_opts o = {.cpu_unit_milli = arg(argc, argv, 5, 0),
                                         .iterations = (size_t)arg(argc, argv, 6, 0)};
    if (nseeds < 1 || nseeds > 1000) {
        fprintf(stderr, "bench_nodebound: SEEDS must be in 1..1000\n");
        return 2;
    }
    struct fair_error err = {0};
    struct fair_sim_trace t;
    fair_sim_trace_init(&t);
    if (fair_sim_trace_load_nodes(&t, nodes, NULL, &err) ||
        fair_sim_trace_load_jobs(&t, pods, NULL, &err)) {
        fair_sim_trace_release(&t);
        if (own) {
            printf("bench_nodebound: skipped: %s (set FAIR_TRACE_DIR)\n", err.msg);
            return 0;
        }
        fprintf(stderr, "bench_nodebound: %s\n", err.msg);
        return 1;
    }
    double *lp = calloc((size_t)nseeds, sizeof(*lp)), *nbd = calloc((size_t)nseeds, sizeof(*nbd)),
           *fgd = calloc((size_t)nseeds, sizeof(*fgd)), *eng = calloc((size_t)nseeds, sizeof(*eng)),
           *pk = calloc((size_t)nseeds, sizeof(*pk)), *pw = calloc((size_t)nseeds, sizeof(*pw)),
           *wc = calloc((size_t)nseeds, sizeof(*wc));
    int rc = 0;
    const bool with_engine = getenv("BENCH_ENGINE_BOUND") != NULL;
    printf("| seed | window end (arrivals) | LP bound | node bound | FGD's first failed GPU pod "
           "(arrival) | LP bound, no GPU pod failed before it, window mean | offline packing, "
           "window end | "
           "clairvoyant policy, window mean | same, placing every pod that fits | CPU-only pods it "
           "turns away | classes | shapes | steps | seconds |%s\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|%s\n",
           with_engine
               ? " engine's first failed GPU pod | LP bound, none failed before it, window mean |"
               : "",
           with_engine ? "---|---|" : "");
    for (long long i = 0; i < nseeds && lp && nbd && fgd && eng && pk && pw && wc; i++) {
        struct fair_sim_arrivals a = {0};
        if (fair_sim_arrivals_paper(&a, &t, first + i, &err)) {
            fprintf(stderr, "bench_nodebound: %s\n", err.msg);
            rc = 1;
            break;
        }
        int64_t cap = fair_sim_trace_gpu_capacity(&t), arrived = 0;
        size_t end = 0, start = 0;
        for (size_t k = 0; k < a.n; k++) {
            arrived += a.jobs[k]->gpu_milli;
            int64_t a200 = 200 * arrived;
            if (a200 >= 199 * cap && a200 <= 201 * cap) {
                end = k + 1;
                if (!start)
                    start = k + 1;
            }
            if (a200 > 201 * cap)
                break;
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        struct fair_sim_node_bound b;
        if (fair_sim_node_bound(&t, &a, end, &o, &b, &err)) {
            fprintf(stderr, "bench_nodebound: %s\n", err.msg);
            fair_sim_arrivals_release(&a);
            rc = 1;
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        /* The condition: no GPU pod fails before FGD's first. */
        long long ff = first_fail(&t, &a, (uint64_t)(first + i), false, &err);
        long long fe = with_engine ? first_fail(&t, &a, (uint64_t)(first + i), true, &err) : 0;
        fgd[i] = bound_before(&t, &a, start, end, ff, &err);
        eng[i] = with_engine ? bound_before(&t, &a, start, end, fe, &err) : 0;
        if (fgd[i] < 0 || eng[i] < 0) {
            fprintf(stderr, "bench_nodebound: %s\n", err.msg);
            fair_sim_arrivals_release(&a);
            rc = 1;
            break;
        }
        int64_t alloc = 0;
        bool *placed = calloc(end + 1, sizeof(*placed));
        struct fair_sim_spot *spot = calloc(end + 1, sizeof(*spot));
        if (!placed || fair_sim_node_pack(&t, &a, end, end, placed, spot, &alloc, &err)) {
            fprintf(stderr, "bench_nodebound: %s\n", placed ? err.msg : "out of memory");
            free(placed);
            fair_sim_arrivals_release(&a);
            rc = 1;
            break;
        }
        /* Unallocated at the window's end, and the protocol's window mean
         * for the clairvoyant policy that places exactly those pods. */
        pk[i] = 100.0 * (double)(cap - alloc) / (double)cap;
        pw[i] = window_mean(&a, end, placed, cap);
        wc[i] = work_conserving(&t, &a, end, placed, spot);
        free(spot);
        /* The same packing aimed at the window's first record, the window's
         * later arrivals best fit: the better of the two. */
        if (fair_sim_node_pack(&t, &a, start, end, placed, NULL, &alloc, &err)) {
            fprintf(stderr, "bench_nodebound: %s\n", err.msg);
            free(placed);
            fair_sim_arrivals_release(&a);
            rc = 1;
            break;
        }
        double pw2 = window_mean(&a, end, placed, cap);
        size_t cpu_arrived = 0, cpu_failed = 0;
        for (size_t k = 0; k < end; k++)
            if (a.jobs[k]->gpu_milli == 0) {
                cpu_arrived++;
                cpu_failed += !placed[k];
            }
        if (pw2 >= 0 && pw2 < pw[i])
            pw[i] = pw2;
        size_t cpu_failed_s = cpu_failed, cpu_arrived_s = cpu_arrived;
        free(placed);
        /* Rounded down to 0.01%, as the simulate command prints bounds. */
        lp[i] = (double)(b.lp_bound_milli * 10000 / b.capacity_milli) / 100.0;
        nbd[i] = (double)(b.bound_milli * 10000 / b.capacity_milli) / 100.0;
        char more[64] = "";
        if (with_engine)
            snprintf(more, sizeof more, " %lld | %.2f |", fe, eng[i]);
        printf("| %lld | %zu | %.2f | %.2f | %lld | %.2f | %.2f | %.2f | %.2f | %zu of %zu | %zu | "
               "%zu | %zu | %.1f |%s\n",
               first + i, end, lp[i], nbd[i], ff, fgd[i], pk[i], pw[i], wc[i], cpu_failed_s,
               cpu_arrived_s, b.classes, b.node_shapes, b.iterations,
               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, more);
        fflush(stdout);
        fair_sim_arrivals_release(&a);
    }
    if (!rc && lp && nbd && fgd && eng && pk && pw && wc) {
        char more[64] = "";
        if (with_engine)
            snprintf(more, sizeof more, " | **%.2f** |", median(eng, (size_t)nseeds));
        printf(
            "| median | | **%.2f** | **%.2f** | | **%.2f** | **%.2f** | **%.2f** | **%.2f** | | | "
            "| | |%s\n",
            median(lp, (size_t)nseeds), median(nbd, (size_t)nseeds), median(fgd, (size_t)nseeds),
            median(pk, (size_t)nseeds), median(pw, (size_t)nseeds), median(wc, (size_t)nseeds),
            more);
    }
    free(pk);
    free(pw);
    free(wc);
    free(lp);
    free(nbd);
    free(fgd);
    free(eng);
    fair_sim_trace_release(&t);
    return rc;
}
