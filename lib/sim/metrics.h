/* The figures a replay measures besides allocation, each a small pure
 * computation that the replay (sim/replay.c) feeds and the unit tests
 * check on hand-made cases: distributions (mean and nearest-rank
 * percentiles), work lost to an eviction under the checkpoint model,
 * spans of time during which a condition holds (episodes), the idle GPU
 * that pending pods could use at once ("idle while a pending pod fits"),
 * and the pending requests of a queue (for "owed its guarantee").
 * Definitions are in docs/simulator.md, "Outputs".
 *
 * Ownership: structs are caller-owned with _init/_release where they hold
 * memory; everything else is borrowed. */
#ifndef FAIR_SIM_METRICS_H
#define FAIR_SIM_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/place.h"
#include "sim/trace.h"

/* Nearest-rank percentile (p in 0..100) of n sorted values; -1 if n == 0. */
int64_t fair_sim_percentile(const int64_t *sorted, size_t n, int p);

/* A distribution of durations in ms. Every field is -1 when n == 0. */
struct fair_sim_dist {
    size_t n;
    double mean_ms;
    int64_t p50_ms, p95_ms, p99_ms, max_ms;
};

/* Fills d from v[0..n) (sorted in place). */
void fair_sim_dist_of(int64_t *v, size_t n, struct fair_sim_dist *d);

/* Work thrown away when a pod that has run run_ms since its last start is
 * evicted: all of it without checkpoints (checkpoint_ms <= 0), else what
 * ran since the last checkpoint, taken every checkpoint_ms of run time
 * after the start. *saved_ms (may be NULL) gets the part kept. */
int64_t fair_sim_lost_ms(int64_t run_ms, int64_t checkpoint_ms, int64_t *saved_ms);

/* Episodes: maximal spans of time during which a condition holds, fed
 * with the condition at increasing times. State machine: closed --note
 * (on)--> open(since) --note(off)--> closed, the span's length recorded;
 * fair_sim_spans_end() closes an open span at the end of the run and
 * counts it as unfinished (not in the lengths). */
struct fair_sim_spans {
    bool open;
    int64_t since;
    size_t count;       /* finished spans */
    size_t unfinished;  /* spans still open at the end */
    int64_t longest_ms; /* over finished and unfinished spans; 0 if none */
    int64_t total_ms;   /* over finished and unfinished spans */
    bool keep;          /* keep every finished span's length in len */
    int64_t *len;
    size_t nlen, cap;
};

void fair_sim_spans_init(struct fair_sim_spans *s, bool keep_lengths);
void fair_sim_spans_release(struct fair_sim_spans *s);
/* The condition at time now. FAIR_ENOMEM when a length cannot be kept
 * (the span is still counted). */
int fair_sim_spans_note(struct fair_sim_spans *s, int64_t now, bool on);
void fair_sim_spans_end(struct fair_sim_spans *s, int64_t now);

/* A multiset of GPU requests (milli-GPU): a queue's pending pods and
 * gangs, whose smallest member says whether the queue could still take
 * one within its guarantee. */
struct fair_sim_sizes {
    struct fair_sim_size {
        int64_t size;
        int64_t count;
    } * e; /* sorted by size, counts > 0 */
    size_t n, cap;
};

void fair_sim_sizes_init(struct fair_sim_sizes *s);
void fair_sim_sizes_release(struct fair_sim_sizes *s);
int fair_sim_sizes_add(struct fair_sim_sizes *s, int64_t size);
/* Removes one size (which must be in the set; otherwise nothing). */
void fair_sim_sizes_del(struct fair_sim_sizes *s, int64_t size);
/* The smallest size, or -1 when empty. */
int64_t fair_sim_sizes_min(const struct fair_sim_sizes *s);

/* Idle while a pending pod fits. For a set of pending pods (indexes into
 * the trace's jobs: single pods, and member 0 of a pending gang standing
 * for all its pods), on the cluster's free room now:
 *   fitting pods  = the single pods that fit some node (GPU devices, CPU,
 *                   memory, model), and the gangs whose pods all fit
 *                   together, placed one by one on the first node that
 *                   fits (nodes in list order);
 *   fitting nodes = the nodes where a fitting single pod fits, or where a
 *                   fitting gang's trial placement put a pod;
 *   idle GPU      = min(free GPU of the fitting nodes, GPU requested by
 *                   the fitting pods).
 * Pods without GPU are ignored: they cannot use an idle GPU. The cluster
 * is left as it was. The scratch space is reused between calls.
 *
 * Fraction tenancy (the engine's: fractions of different Projects never
 * share a device unless both opt in): when the caller sets job_key (per
 * trace job, its tenant key) and dev_key (per node x
 * FAIR_MAX_GPUS_PER_NODE, the key of the fractions on each device that
 * is partly taken; FAIR_SIM_KEY_MIXED when several), a single fraction
 * pod fits only a fully free device or one of its own key. Gangs are
 * tried without it. */
#define FAIR_SIM_KEY_MIXED INT32_MIN
struct fair_sim_fit_scratch {
    const int32_t *job_key; /* NULL: no tenancy (borrowed) */
    const int32_t *dev_key; /* borrowed */
    uint8_t *mark;          /* per node: a fitting pod fits there */
    int32_t *cand;          /* nodes with free GPU */
    int32_t *whole;         /* per candidate: fully free devices */
    int32_t *maxfrac;       /* per candidate: most free milli on one device */
    size_t nnodes;
    /* The trace's distinct pod shapes, smallest first, built on the first
     * call: a cycle then counts its pending pods per shape instead of
     * sorting them. */
    const struct fair_sim_trace *trace;
    int32_t *shape_of; /* per trace job */
    struct fair_sim_shape {
        int64_t gpu, cpu, mem;
        uint64_t mask;
        int64_t count;
        bool fits;
        int32_t key;  /* with tenancy, a fraction's tenant key */
    } * all, *shapes; /* all: every shape (count unused); shapes: this call's */
    struct fair_sim_keyed {
        int32_t shape, key;
    } * keyed; /* with tenancy: this call's (shape, key) of each pod */
    size_t keyedcap;
    size_t nall, shapecap;
    int32_t *touched; /* shapes counted in this call */
    struct fair_sim_trial {
        int32_t node;
        uint64_t devices;
    } * trial; /* a gang's trial placement, one per pod */
    size_t trialcap;
};

void fair_sim_fit_scratch_init(struct fair_sim_fit_scratch *s);
void fair_sim_fit_scratch_release(struct fair_sim_fit_scratch *s);
/* *idle_milli gets the idle GPU (milli). skip (NULL: none), per node:
 * nodes left out, as if they had no free room (nodes the engine holds for
 * a pod). 0 or FAIR_ENOMEM. */
int fair_sim_idle_fit(struct fair_sim_cluster *c, const int32_t *pods, size_t n,
                      const uint8_t *skip, struct fair_sim_fit_scratch *s, int64_t *idle_milli);

/* Whether the job (a single pod, or member 0 standing for its gang) fits
 * the cluster as it is now: a gang by first fit of its pods. Used on the
 * empty cluster to find jobs that can never run. The cluster is left as
 * it was. 1: fits, 0: does not, FAIR_ENOMEM. */
int fair_sim_job_fits(struct fair_sim_cluster *c, int32_t job, struct fair_sim_fit_scratch *s);

#endif
