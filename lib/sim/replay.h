/* Trace replay on a virtual clock through the engine (fair_engine_run),
 * the same function the controller calls each cycle.
 *
 * Design note: the clock only jumps. Three kinds of moments exist:
 *   - arrivals (a job's submit time), which make it PENDING;
 *   - completions (start + duration), which free its resources;
 *   - cycles, at multiples of cycle_ms, run only when something changed
 *     since the last cycle: after an arrival or a completion while pods
 *     remain (fair shares follow demand), after a cycle that evicted or
 *     bound while pods are pending. Events at a time are handled before a cycle at
 *     the same time; a cycle comes at least cycle_ms after the previous.
 * A cycle builds a snapshot (running pods, pending pods, nodes, projects,
 * queues, now), runs the engine, applies evictions first (the pod is
 * stopped at once, loses its progress, and goes back to PENDING: it will
 * restart from scratch), then binds (the pod runs from now for its full
 * duration). With a baseline policy the engine still decides which pods
 * start; the baseline picks their node, and a pod it cannot fit stays
 * pending. The replay ends when no event is left and no cycle is due.
 * Nothing sleeps: a month of trace is replayed in seconds.
 *
 * Ownership: the trace and config are borrowed; a struct fair_sim_run is
 * caller-owned storage whose arrays are released by fair_sim_run_release(). */
#ifndef FAIR_SIM_REPLAY_H
#define FAIR_SIM_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "sim/config.h"
#include "sim/place.h"
#include "sim/trace.h"

struct fair_sim_opts {
    enum fair_sim_policy policy; /* FAIR_SIM_POLICY_ENGINE = "fairshare" */
    uint64_t seed;               /* random fit */
    int64_t cycle_ms;            /* default 10,000 */
    size_t target_samples;       /* time-series resolution; default 500 */
    size_t max_cycles;           /* safety cap; default 5,000,000 */
    /* Arrivals come this many times faster (times between arrivals are
     * divided by it; run times are not): a what-if for a busier cluster.
     * Default 1. */
    int64_t speedup;
    /* Stop the clock this long after the first arrival (pods still
     * running are charged up to then); 0: run until nothing is left. */
    int64_t horizon_ms;
};

/* The whole cluster at one sample time. */
struct fair_sim_sample {
    int64_t t_ms;
    int64_t gpu_allocated; /* milli-GPU */
    int64_t pending_gpu;   /* milli-GPU requested by pending pods */
    int32_t running;
    int32_t pending;
};

/* One queue at one sample time. */
struct fair_sim_qsample {
    int64_t allocated;  /* milli-GPU */
    int64_t fair_share; /* milli-GPU, from the last cycle */
    int32_t running;
    int32_t pending;
};

struct fair_sim_qstats {
    size_t jobs, started, completed, never_started;
    int64_t wait_p50_ms, wait_p95_ms, wait_max_ms; /* over started jobs; -1 if none */
    size_t preemptions;
    int64_t lost_gpu_ms; /* milli-GPU x ms of work thrown away by evictions */
    int64_t used_gpu_ms; /* milli-GPU x ms held by running pods */
};

struct fair_sim_run {
    size_t nqueues;
    struct fair_sim_sample *samples;
    size_t nsamples;
    struct fair_sim_qsample *qsamples; /* nsamples x nqueues, sample-major */
    struct fair_sim_qstats *qstats;    /* nqueues + 1: the last is the total */
    int64_t gpu_capacity;
    int64_t start_ms, end_ms;
    /* Fragmentation: the first cycle where a pending pod fitted no node,
     * and the unallocated GPU (milli) then; -1 when it never happened. */
    int64_t first_fail_ms;
    int64_t first_fail_unallocated;
    double mean_alloc_ratio; /* time-weighted over [start, end] */
    double peak_alloc_ratio; /* exact: over every moment, not only samples */
    size_t cycles, binds, evictions, bind_conflicts;
};

/* Replays t under cfg. queue_of: the queue of each job (from
 * fair_sim_config_assign()). Returns 0 or a FAIR_E* code with err set. */
int fair_sim_replay(const struct fair_sim_trace *t, const struct fair_sim_config *cfg,
                    const int32_t *queue_of, const struct fair_sim_opts *opts,
                    struct fair_sim_run *run, struct fair_error *err);

void fair_sim_run_release(struct fair_sim_run *run);

/* Nearest-rank percentile (p in 0..100) of n sorted values; -1 if n == 0. */
int64_t fair_sim_percentile(const int64_t *sorted, size_t n, int p);

#endif
