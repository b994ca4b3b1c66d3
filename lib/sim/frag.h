/* The fragmentation experiment of Weng et al. (ATC '23, "Beware of
 * Fragmentation"): workload inflation. Pods drawn at random (with
 * replacement) from a trace keep arriving and never finish; each is placed
 * at once or fails for good. When the GPU requests that have arrived reach
 * the cluster's GPU capacity (or another stop ratio), the GPUs left
 * unallocated measure how much capacity the placement policy fragmented.
 *
 * The policy is a callback, so that the simulator's baselines and the
 * engine (sim/engine_place.h) are measured by the same loop.
 * Ownership: everything is borrowed for the duration of the call. */
#ifndef FAIR_SIM_FRAG_H
#define FAIR_SIM_FRAG_H

#include <stddef.h>
#include <stdint.h>

#include "sim/place.h"
#include "sim/trace.h"

/* Places job: 0 with *node and *devices set (the loop binds it), or
 * FAIR_ENOTFOUND when it does not fit; another error stops the run. */
typedef int (*fair_sim_place_fn)(void *ctx, struct fair_sim_cluster *c,
                                 const struct fair_sim_job *job, int32_t *node, uint64_t *devices,
                                 struct fair_error *err);

/* Adapter for fair_sim_place(): ctx is a struct fair_sim_placer. */
int fair_sim_place_baseline(void *ctx, struct fair_sim_cluster *c, const struct fair_sim_job *job,
                            int32_t *node, uint64_t *devices, struct fair_error *err);

#define FAIR_SIM_FRAG_CURVE 21 /* arrived = 0%, 5%, ..., 100% of capacity */

struct fair_sim_frag_opts {
    uint64_t seed;    /* which pods are drawn */
    int stop_percent; /* arrived GPU requests, % of capacity; default 100 */
    size_t max_pods;  /* safety cap on arrivals; default 10,000,000 */
};

struct fair_sim_frag_result {
    int64_t capacity_milli;
    int64_t arrived_milli;     /* GPU requests that arrived */
    int64_t allocated_milli;   /* GPU held by placed pods at the end */
    int64_t unallocated_milli; /* capacity - allocated at the end */
    /* Unallocated GPU at the first failed GPU pod, and how much had
     * arrived then (-1 when nothing failed). */
    int64_t first_fail_unallocated_milli;
    int64_t first_fail_arrived_milli;
    size_t pods_arrived, pods_placed, pods_failed;
    int64_t gpu_failed_milli; /* GPU requests of the failed pods */
    /* Unallocated GPU (milli) when arrivals reached 0%, 5%, ..., 100%. */
    int64_t curve_unallocated[FAIR_SIM_FRAG_CURVE];
};

/* The arrival sequence, shared by fair_sim_frag_run() and the lower bound
 * (sim/bound.h) so that both see exactly the same pods for the same opts:
 * it depends on the seed, the stop ratio and the trace, never on the
 * policy. A draw borrows its trace. */
struct fair_sim_frag_draw {
    const struct fair_sim_trace *trace;
    uint64_t rng;
    int64_t capacity_milli; /* GPU capacity of the trace's nodes */
    int64_t stop_milli;     /* stop once arrived_milli reaches this */
    int64_t arrived_milli;  /* GPU requests drawn so far */
    size_t pods, max_pods;  /* pods drawn so far, and the cap */
};

/* 0, or FAIR_EINVAL (with a message) when the trace has no job, no GPU or
 * no GPU job. opts may be NULL for the defaults. */
int fair_sim_frag_draw_init(struct fair_sim_frag_draw *d, const struct fair_sim_trace *t,
                            const struct fair_sim_frag_opts *opts, struct fair_error *err);
/* Draws the next arrival: 1 with *job set (borrowed from the trace), 0 when
 * the arrived GPU requests have reached the stop ratio, FAIR_ERANGE past
 * max_pods. */
int fair_sim_frag_draw_next(struct fair_sim_frag_draw *d, const struct fair_sim_job **job,
                            struct fair_error *err);

/* Runs the experiment on a fresh cluster built from t's nodes, drawing
 * from t's jobs (only their requests and model constraints are used). */
int fair_sim_frag_run(const struct fair_sim_trace *t, fair_sim_place_fn place, void *ctx,
                      const struct fair_sim_frag_opts *opts, struct fair_sim_frag_result *res,
                      struct fair_error *err);

#endif
