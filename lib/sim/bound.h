/* A lower bound on the GPUs that ANY placement policy (online or offline,
 * however clever) must leave unallocated in the fragmentation experiment
 * (sim/frag.h). The arrivals for a seed do not depend on the policy, so the
 * bound is per seed, and every policy's unallocated GPUs are >= it.
 *
 * The relaxation. A job below 1000 milli-GPU takes a fraction of one device;
 * a multiple of 1000 takes gpu/1000 entirely free devices; fractions share a
 * device only with other fractions. Forget CPU, memory, GPU models and node
 * boundaries. A "pattern" p is a multiset of the arrived fraction sizes with
 * sum(p) <= 1000 that uses no size more often than it arrived. Any real end
 * state then gives a feasible point of the linear program
 *
 *     maximize   sum_p sum(p) y_p + 1000 W
 *     subject to sum_p y_p + W          <= D   (devices)
 *                sum_p count_p(s) y_p   <= n_s (arrivals of fraction size s)
 *                W                      <= G   (whole GPUs arrived)
 *                y, W >= 0
 *
 * (y_p = devices holding exactly the fractions p, W = devices held by
 * whole-GPU pods), whose objective is the allocated milli-GPU. So
 * allocated <= LP optimum, and unallocated >= capacity - LP optimum.
 *
 * Rigour against floating point. A primal simplex (from the slack basis:
 * every row is <= with b >= 0) finds dual values u. Whatever their
 * floating-point error, they are then made exactly dual feasible in integer
 * arithmetic: each u is clamped to [0, its size] (0..1000 for the device
 * and whole rows) and rounded UP to a multiple of 2^-16; the largest
 * violation of any column's constraint a_j.u >= c_j is computed exactly and
 * added to the device row's u, which covers every column (all have a 1
 * there). By weak duality the LP optimum, hence the allocation, is at most
 * b.u, computed exactly; allocation is an integer milli-GPU, so at most
 * floor(b.u). The reported bound is capacity - min(floor(b.u), capacity,
 * arrived): it never overstates, even if the simplex stopped early (then it
 * is only looser).
 *
 * Pods that must be placed. A policy may be held to place some pods: the
 * issue's condition that no GPU pod fails before FGD's first failure puts
 * every GPU pod arrived before then in that set. For n'_s of size s and G'
 * whole GPUs that must be placed, the LP gains variables z_s <= n'_s with
 * z_s <= sum_p count_p(s) y_p (and z_W <= G', z_W <= W), each worth a
 * bonus B = 2000 in the objective. Every end state that places them is
 * feasible with z = n', so allocated + B (sum n'_s + G') <= the LP
 * optimum. The proof step is the same: the z columns are made feasible by
 * the duals of their z <= n' rows, every other column by the device row,
 * and the bound subtracts the bonus again. Any B gives a valid bound (a
 * Lagrangian relaxation of the must rows); B larger than a device is worth
 * makes the LP place them all when it can.
 *
 * Ownership: everything is borrowed for the duration of the call. */
#ifndef FAIR_SIM_BOUND_H
#define FAIR_SIM_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "sim/frag.h"
#include "sim/trace.h"

/* More patterns than this: FAIR_ERANGE (the LP would be too large). */
#define FAIR_SIM_BOUND_MAX_PATTERNS 500000

struct fair_sim_frag_bound {
    int64_t capacity_milli;      /* devices x 1000 */
    int64_t arrived_milli;       /* GPU requests that arrived */
    int64_t max_allocated_milli; /* proven: no policy allocates more */
    int64_t bound_milli;         /* proven: min unallocated = capacity - max_allocated */
    double lp_milli;             /* the simplex's own optimum (floating point; not a proof) */
    size_t patterns;             /* LP columns for fractions */
    size_t fraction_sizes;       /* distinct fraction sizes (rows) */
    size_t iterations;           /* simplex pivots */
    bool optimal;                /* false: stopped at the pivot cap, bound looser */
};

/* What arrived, for fair_sim_frag_bound_hist(). */
struct fair_sim_frag_hist {
    const int64_t *sizes;  /* distinct fraction sizes, each in 1..999 milli */
    const int64_t *counts; /* arrivals of each size, >= 0 */
    size_t nsizes;
    int64_t whole_gpus; /* sum of gpu/1000 over whole-GPU arrivals */
    int64_t devices;    /* GPU devices in the cluster */
    size_t max_pivots;  /* simplex pivot cap; 0: 1000 + 100 x rows */
    /* Optional (NULL: none), nsizes entries: how many of each size's
     * arrivals must be placed (0..counts[i]); and of the whole GPUs
     * (0..whole_gpus). The bound then holds only for policies that place
     * them (see above). */
    const int64_t *must_counts;
    int64_t must_whole_gpus;
    /* Optional (NULL: not wanted), DEV + 1 entries: on success, the exact
     * dual-feasible point behind the bound, in milli-GPU: duals[s] for
     * fraction size s (0 where s did not arrive), duals[0] the device row
     * and duals[DEV] the whole-GPU row. sim/nodebound.h starts from it.
     * Not with must rows (FAIR_EINVAL). */
    double *duals;
};

/* The bound for a histogram of arrivals (the pure core, for tests).
 * FAIR_EINVAL for a size outside 1..999, a repeated size, a negative
 * count or total, a must count outside 0..its count, or duals wanted with
 * must rows; FAIR_ERANGE for more than FAIR_SIM_BOUND_MAX_PATTERNS
 * patterns or totals beyond INT32_MAX (devices, whole GPUs, fraction
 * arrivals); FAIR_ENOMEM. */
int fair_sim_frag_bound_hist(const struct fair_sim_frag_hist *h, struct fair_sim_frag_bound *out,
                             struct fair_error *err);

/* The bound for the arrivals fair_sim_frag_run() draws from t with the same
 * opts (seed, stop ratio, pod cap): the same errors as the run's draw,
 * FAIR_EINVAL for a GPU request that is neither a fraction nor whole GPUs,
 * and those of fair_sim_frag_bound_hist(). */
int fair_sim_frag_bound(const struct fair_sim_trace *t, const struct fair_sim_frag_opts *opts,
                        struct fair_sim_frag_bound *out, struct fair_error *err);

#endif
