/* The fragmentation protocol of the FGD paper (Weng et al., "Beware of
 * Fragmentation", USENIX ATC '23) exactly as its simulator,
 * hkust-adsl/kubernetes-scheduler-simulator, runs it, so that our placement
 * can be compared with the paper's published figures on the same arrivals.
 *
 * Arrivals (the simulator's workload tuning, ratio 1.3, seeds 42..51):
 *   1. rand.Seed(seed), then one rand.Int() (its debug log draws one);
 *   2. the trace's pods sorted by name (bytewise), then rand.Shuffle;
 *   3. then copies of pods drawn with rand.Intn(n) from the name-sorted
 *      list, appended while the GPU requested so far plus the drawn pod's
 *      per-device milli-GPU stays within 1.3 x the cluster's GPU capacity
 *      (the simulator compares the per-device request there, and adds the
 *      pod's total; reproduced as is).
 *   4. the simulator then starts its scheduler, whose informers draw from
 *      the same global source (client-go's reflector takes rand.Float64()
 *      for each watch's timeout): FAIR_SIM_PAPER_INFORMER_DRAWS draws;
 *   5. rand.Perm(number of nodes) then ranks the nodes (node_rank below).
 * The number of informer draws is not in the simulator's source: it was
 * found by matching the published figures. With 10, our BestFit,
 * GpuPacking and FGD give the paper's published per-seed results on the
 * default trace (seeds 42-51) to within 0.01 points (the artifact rounds
 * each record before averaging); with 0-9 or 11-16 they do not.
 * Go's math/rand is sim/gorand.h. The order can also come from a CSV
 * (column "name": trace pod names, one row per arrival).
 *
 * Metric (the artifact's merge_alloc_discrete.py): after every arrival,
 * placed or failed, the record (arrived GPU requests, allocated GPU). The
 * records whose arrived share rounds to 100% of capacity (99.5..100.5%,
 * Python's round: both ends in) are averaged: allocated share, then
 * unallocated = 100% - that mean. Without such a record, the records that
 * round to 99..101% (the script's fallback). The paper reports the median
 * over the seeds.
 *
 * Ownership: arrivals borrow the trace's jobs (the trace must outlive them)
 * and own their array; release with fair_sim_arrivals_release(). */
#ifndef FAIR_SIM_PAPER_H
#define FAIR_SIM_PAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/bound.h"
#include "sim/frag.h"
#include "sim/trace.h"

#define FAIR_SIM_PAPER_FIRST_SEED 42
#define FAIR_SIM_PAPER_SEEDS 10
/* Draws from Go's global source between the arrivals and the node
 * permutation (step 4 above). */
#define FAIR_SIM_PAPER_INFORMER_DRAWS 10
/* Workload tuning ratio of the paper's runs, in thousandths. */
#define FAIR_SIM_PAPER_TUNE_MILLI 1300

struct fair_sim_arrivals {
    const struct fair_sim_job **jobs; /* borrowed from the trace, in arrival order */
    size_t n;
    /* The simulator's node order (paper draw only, else NULL): after the
     * arrivals it names node i of the name-sorted list "%04d-NAME" with
     * rand.Perm(nodes)[i], and its scheduler breaks score ties by the
     * smallest name. node_rank[k] is that number for trace node k. */
    int32_t *node_rank;
};

void fair_sim_arrivals_release(struct fair_sim_arrivals *a);

/* The paper simulator's arrivals for seed (above). FAIR_EINVAL when the
 * trace has no job or no GPU; FAIR_ENOMEM. */
int fair_sim_arrivals_paper(struct fair_sim_arrivals *a, const struct fair_sim_trace *t,
                            int64_t seed, struct fair_error *err);

/* A fixed arrival order: CSV with a header holding a "name" column; each
 * row names a pod of t (a name unknown to the trace but ending in
 * "-tuned-N" or "-clone-N", the paper simulator's copies, names the pod
 * before the suffix). Limits as for traces (lim may be NULL); an unknown
 * name or an empty file fails with "file:line: ...". */
int fair_sim_arrivals_parse_csv(struct fair_sim_arrivals *a, const struct fair_sim_trace *t,
                                const char *name, const char *data, size_t len,
                                const struct fair_sim_limits *lim, struct fair_error *err);
int fair_sim_arrivals_load_csv(struct fair_sim_arrivals *a, const struct fair_sim_trace *t,
                               const char *path, const struct fair_sim_limits *lim,
                               struct fair_error *err);

struct fair_sim_paper_result {
    int64_t capacity_milli;
    size_t arrivals; /* arrivals run: up to the end of the widest window */
    size_t placed, failed;
    size_t window_records;            /* records averaged */
    int window_half_width;            /* 1: the 99.5..100.5% window; 3: the 98.5..101.5% fallback */
    double unallocated_pct;           /* 100 - mean allocated share, %; -1 without records */
    size_t window_end;                /* arrivals up to the window's last record (for the bound) */
    int64_t first_fail_arrived_milli; /* arrived before the first failed GPU pod; -1 */
    size_t first_fail_index;          /* its index in the arrivals; SIZE_MAX when none */
    int64_t first_fail_unallocated_milli; /* unallocated then; -1 */
    /* Where the free GPU sits after the window's last record: devices by
     * free milli-GPU (0 .. FAIR_GPU_DEVICE_MILLI). */
    int32_t end_free[FAIR_GPU_DEVICE_MILLI + 1];
};

/* Places the arrivals in order on a fresh cluster of t's nodes with place
 * (sim/frag.h), until they are exhausted or the arrived share passes
 * 101.5%, and computes the window metric. */
/* Whether arrived_milli of cap_milli is in the protocol's window: an
 * arrived share of 99.5% to 100.5%, both ends included (Python's round()
 * takes both to 100). */
static inline bool fair_sim_paper_in_window(int64_t arrived_milli, int64_t cap_milli)
{
    int64_t a200 = 200 * arrived_milli;
    return a200 >= 199 * cap_milli && a200 <= 201 * cap_milli;
}

int fair_sim_paper_run(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a,
                       fair_sim_place_fn place, void *ctx, struct fair_sim_paper_result *res,
                       struct fair_error *err);

/* The LP lower bound (sim/bound.h) on the GPUs any policy leaves
 * unallocated after the first prefix arrivals. Bounds only fall as
 * arrivals are added, so the bound at a window's last record holds for
 * every record of the window, hence for their mean. With must > 0 it
 * holds only for policies that place every GPU pod among the first must
 * arrivals (e.g. those whose first failed GPU pod is no earlier than
 * another policy's: must = that policy's first_fail_index). */
int fair_sim_paper_bound(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a,
                         size_t prefix, size_t must, struct fair_sim_frag_bound *out,
                         struct fair_error *err);

/* The paper's published figures: the GPU allocation share (in hundredths
 * of a percent) at 100% arrived, seeds 42..51, from the artifact's
 * experiments/analysis/expected_results/analysis_allo_discrete.csv
 * (column "100", tune 1.3), for trace labels such as "default" or
 * "gpushare100" and policies "FGD", "BestFit", "GpuPacking". NULL when not
 * published. */
const int32_t *fair_sim_paper_published(const char *trace, const char *policy);

#endif
