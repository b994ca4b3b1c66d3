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
 * stopped at once, loses the work since its last start, or since its last
 * checkpoint under the checkpoint model, and goes back to PENDING; the
 * other pods of a multi-pod job stop with it), then binds (the pod runs
 * from now for what is left of its duration; a multi-pod job's pods start
 * together or not at all). With a baseline policy the engine still decides
 * which pods start; the baseline picks their node, and a pod it cannot fit
 * stays pending. The replay ends when no event is left and no cycle is
 * due. Nothing sleeps: a month of trace is replayed in seconds.
 *
 * Jobs that can never run under the config (they fit no node of the empty
 * cluster, or ask for more than their queue's or project's limit, or,
 * non-preemptible, more than its guarantee) are left out of the replay:
 * they never arrive, and are reported with an UNRUNNABLE status.
 *
 * Engine state that lives across cycles goes back into the next snapshot,
 * as the controller passes it: each pod's evictions so far, the node held
 * for a pending pod and since when. Time-based engine rules get cycles of
 * their own: at a hold's timeout and at the end of its cooldown, and every
 * cycle period while a pod waits for reclaim held back (min runtime or
 * hysteresis) and some running pod is younger than the minimum runtimes.
 *
 * The figures measured on the way (definitions in docs/simulator.md and
 * sim/metrics.h) are settled at "settle points": after all events at one
 * time, and after each cycle. "Idle while a pending pod fits" is measured
 * after each cycle, on the room the cycle left, and holds until the next
 * cycle (events in between only add room or pending pods, so it is the
 * least idle GPU of the interval: the engine's reaction time to an event
 * is not counted).
 *
 * Ownership: the trace and config are borrowed; a struct fair_sim_run is
 * caller-owned storage whose arrays are released by fair_sim_run_release(). */
#ifndef FAIR_SIM_REPLAY_H
#define FAIR_SIM_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/config.h"
#include "sim/metrics.h"
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
    /* The checkpoint model: every job saves its progress every
     * checkpoint_ms of run time after each (re)start, so an eviction loses
     * only the work since the last checkpoint and the job resumes from it.
     * 0: no checkpoints (an evicted job restarts from scratch). The engine
     * sees it too, as every pod's checkpoint_interval_ms (what the
     * controller reads from fairshare.dev/checkpoint-interval). */
    int64_t checkpoint_ms;
    /* The engine's reclaim settings (struct fair_snapshot), which the
     * controller takes from its config (reclaim.overQuotaThreshold,
     * .overQuotaMinRuntime, .maxEvictions, .nodeHoldTimeout). Zero turns
     * each off; fair_sim_opts_default() sets the controller's defaults. */
    int32_t over_quota_threshold_pct;
    int64_t over_quota_min_runtime_ms;
    int32_t max_evictions;
    int64_t hold_timeout_ms;
    /* Decayed usage (docs/engine.md): projects' over-quota weights follow
     * their GPU usage decayed with this half-life, as the controller's
     * fairShare.usageHalfLife; a Project's spec.usageHalfLife wins; and
     * so do its queues' among themselves, by their own usage. The
     * usage starts at 0 with the trace and is updated each engine cycle
     * from the pods running then. 0: off. */
    int64_t usage_half_life_ms;
    /* Lending only to pods declared short (reclaim.lendMaxRuntime): a GPU
     * pod may borrow only when its declared run time is at most this, or
     * it checkpoints; 0: off. */
    int64_t lend_max_runtime_ms;
    /* Declared run times (the pods' spec.activeDeadlineSeconds): a job
     * declares its trace duration times declared_pct / 100 (>= 100, so no
     * job outlives its deadline), rounded up to a minute, or with
     * declared_buckets up to 15m, 30m, 1h, 2h, 4h, 8h, 12h, 24h, 72h, then
     * whole days; declared_none_pct percent of the jobs (a fixed hash of
     * the job's index) declare none. declared_pct 0: no job declares. */
    int32_t declared_pct;
    bool declared_buckets;
    int32_t declared_none_pct;
    /* Time windows (spec.schedule of Projects and Queues) and budgets
     * (Project spec.budget): the trace's time 0 (its submit times count
     * from there, after speedup) is wall time start_wall_ms (ms since the
     * epoch, UTC;
     * fair_sim_opts_default() sets 2026-01-05T00:00:00Z, a Monday), and
     * budget periods and windows without a timeZone are in time_zone (the
     * controller's timeZone; "": UTC). The effective spec and the budget
     * action come from the controller's own functions (ctl/timequota.h);
     * a budget's use is the GPU time the project's pods ran in the
     * period, from the trace's start. */
    int64_t start_wall_ms;
    char time_zone[65];
};

/* The run time job j of t declares under opts (ms; 0: none). */
int64_t fair_sim_declared_ms(const struct fair_sim_trace *t, size_t j,
                             const struct fair_sim_opts *o);

/* Everything zero (or the built-in default) but the engine's reclaim
 * settings, which get the controller's defaults: 10%, 60 s, 3, 10 min. */
void fair_sim_opts_default(struct fair_sim_opts *o);

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
    int64_t guaranteed; /* milli-GPU, effective (the engine's), from the last cycle */
    int64_t demand;     /* milli-GPU requested by its running and pending pods */
    int32_t running;
    int32_t pending;
    /* Time windows and budgets: the index of the window in force for the
     * queue and for its project (spec.schedule), -1 when the schedule has
     * none active (the spec applies), -2 when it has no schedule; and the
     * project's budget use in its current period (milli-GPU x ms, -1: no
     * budget). */
    int16_t window, project_window;
    int64_t budget_used;
};

/* A budget alert: the project's use in its period reached 80% or 100% of
 * its budget (the controller's Event and metric at the same levels), at
 * trace time t_ms, exact (the allocation is constant between events). */
struct fair_sim_budget_alert {
    int64_t t_ms;
    int64_t period_start_wall_ms; /* the period's start, wall time (UTC ms) */
    int64_t budget_mms;           /* milli-GPU x ms */
    int32_t project;
    int32_t level; /* 80 or 100 */
};

/* A change of the window in force for a Project (queue -1) or a Queue
 * (project -1), at the cycle that applied it: the first evaluation, a
 * window switch (an event of the replay) or later. window -1: none, the
 * spec applies. */
struct fair_sim_switch {
    int64_t t_ms;
    int32_t project, queue;
    int32_t window;
};

/* At most this many of each are kept (a five-month trace with daily
 * windows on every object stays far below). */
#define FAIR_SIM_MAX_TQ_EVENTS 100000

enum fair_sim_job_status {
    FAIR_SIM_JOB_PENDING = 0, /* at the end: never started, or evicted and waiting */
    FAIR_SIM_JOB_RUNNING,     /* at the end (the horizon, or a job that never ends) */
    FAIR_SIM_JOB_COMPLETED,
    FAIR_SIM_JOB_NO_NODE,        /* left out: fits no node of the empty cluster */
    FAIR_SIM_JOB_OVER_LIMIT,     /* left out: more than its queue's or project's limit */
    FAIR_SIM_JOB_OVER_GUARANTEE, /* left out: non-preemptible, more than the guarantee */
    FAIR_SIM_JOB_STATUS_COUNT,
};

/* "pending", "running", "completed", "no-node", "over-limit", "over-guarantee". */
const char *fair_sim_job_status_name(enum fair_sim_job_status s);

static inline bool fair_sim_job_unrunnable(enum fair_sim_job_status s)
{
    return s >= FAIR_SIM_JOB_NO_NODE;
}

/* One job: a pod, or the pods of a multi-pod job taken together. */
struct fair_sim_jobrec {
    int32_t first; /* its first pod in trace->jobs; the others follow */
    int32_t pods;
    int32_t queue;
    enum fair_sim_job_status status;
    int64_t gpu_milli;      /* all its pods */
    int64_t submit_ms;      /* arrival, after --speedup */
    int64_t first_start_ms; /* -1: never started */
    int64_t end_ms;         /* completion; -1: not completed */
    int32_t restarts;       /* times stopped by an eviction */
    int64_t used_gpu_ms;    /* milli-GPU x ms its pods ran */
    int64_t lost_gpu_ms;    /* milli-GPU x ms thrown away by evictions */
};

struct fair_sim_qstats {
    size_t jobs; /* all jobs of the queue, left-out ones included */
    size_t started, completed, never_started, unrunnable;
    struct fair_sim_dist wait; /* submit to first start, over started jobs */
    struct fair_sim_dist jct;  /* submit to end, over completed jobs */
    size_t preemptions;        /* job restarts after an eviction */
    int32_t max_restarts;      /* of one job */
    int64_t lost_gpu_ms;       /* milli-GPU x ms of work thrown away by evictions */
    int64_t used_gpu_ms;       /* milli-GPU x ms held by running pods */
    /* Guarantee (queues with an effective guarantee G > 0; on the total
     * row, sums over those queues): time with demand >= G, and the GPU
     * time of min(allocated, G) over it (delivered / (G x time) is the
     * share delivered). Time to guarantee: spans during which a pending
     * pod or gang of the queue would fit within G. */
    int64_t guaranteed;            /* milli-GPU, effective, at the end */
    int64_t demand_ge_guar_ms;     /* total row: sum of the queues' */
    int64_t guar_delivered_gpu_ms; /* milli-GPU x ms of min(allocated, G) then */
    int64_t guar_owed_gpu_ms;      /* milli-GPU x ms of G over the same time */
    struct fair_sim_dist ttg;      /* finished spans */
    size_t ttg_unfinished;         /* spans open at the end */
};

/* Idle while a pending pod fits (sim/metrics.h): the GPU-time and the
 * episodes (spans with a positive amount). */
struct fair_sim_idle {
    int64_t gpu_ms;  /* milli-GPU x ms */
    size_t episodes; /* finished and unfinished */
    int64_t longest_ms;
};

struct fair_sim_run {
    size_t nqueues;
    struct fair_sim_sample *samples;
    size_t nsamples;
    struct fair_sim_qsample *qsamples; /* nsamples x nqueues, sample-major */
    struct fair_sim_qstats *qstats;    /* nqueues + 1: the last is the total */
    struct fair_sim_jobrec *jobs;      /* every job of the trace, in trace order */
    size_t njobs;
    int64_t gpu_capacity;
    int64_t start_ms, end_ms; /* the first arrival; when the clock stopped */
    /* The reporting window: [start_ms, end_ms] unless fair_sim_run_window()
     * set a common one; the ratios below are over it. */
    int64_t window_start_ms, window_end_ms;
    struct fair_sim_opts opts; /* as the replay used them, defaults filled in */
    /* Fragmentation: the first cycle where a pending pod fitted no node,
     * and the unallocated GPU (milli) then; -1 when it never happened. */
    int64_t first_fail_ms;
    int64_t first_fail_unallocated;
    double mean_alloc_ratio;   /* allocated GPU-time / (capacity x window) */
    double useful_alloc_ratio; /* (allocated - lost) GPU-time / (capacity x window) */
    double peak_alloc_ratio;   /* exact: over every moment, not only samples */
    /* Idle while a pending pod fits: any pending pod, on any node; and
     * ("admissible") only pods the engine did not hold back for a limit or
     * the non-preemptible guarantee rule, on nodes it does not hold for a
     * pod: what its own policy left idle. held_idle_gpu_ms: the free GPUs
     * of the nodes held for a pod, milli-GPU x ms. */
    struct fair_sim_idle idle_fit, idle_fit_admissible;
    int64_t held_idle_gpu_ms;
    size_t cycles, binds, evictions, bind_conflicts;
    /* Time windows and budgets (empty without them); *_dropped: past
     * FAIR_SIM_MAX_TQ_EVENTS. */
    struct fair_sim_budget_alert *alerts;
    size_t nalerts, alerts_dropped;
    struct fair_sim_switch *switches;
    size_t nswitches, switches_dropped;
};

/* Replays t under cfg. queue_of: the queue of each job (from
 * fair_sim_config_assign()). Returns 0 or a FAIR_E* code with err set. */
int fair_sim_replay(const struct fair_sim_trace *t, const struct fair_sim_config *cfg,
                    const int32_t *queue_of, const struct fair_sim_opts *opts,
                    struct fair_sim_run *run, struct fair_error *err);

/* Sets the reporting window of run to [start_ms, end_ms] (which must hold
 * the run's own span) and recomputes the ratios over it: --compare puts
 * every run on the same window. */
void fair_sim_run_window(struct fair_sim_run *run, int64_t start_ms, int64_t end_ms);

void fair_sim_run_release(struct fair_sim_run *run);

#endif
