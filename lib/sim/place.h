/* The simulated cluster's free resources, and the simulator's own placement
 * policies: first fit, random fit, best fit and an experimental FGD
 * (fragmentation gradient descent, Weng et al., ATC '23). These baselines
 * are independent of the engine; they exist to measure its placement
 * against classic packing (docs/simulator.md, docs/performance.md).
 *
 * A GPU request below 1000 milli-GPU takes a fraction of one device; a
 * multiple of 1000 takes that many whole, entirely free devices.
 *
 * Ownership: a cluster borrows its trace (which must outlive it) and owns
 * its per-node state; a placer owns its pod-type table. Both are caller-
 * owned structs with _init/_release. */
#ifndef FAIR_SIM_PLACE_H
#define FAIR_SIM_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "sim/trace.h"

struct fair_sim_nstate {
    int64_t cpu_free;
    int64_t mem_free;
    int64_t gpu_free_total; /* sum of gpu_free */
    int32_t gpu_free[FAIR_MAX_GPUS_PER_NODE];
    int32_t pods;
    /* FGD's cached fragmentation of this node, valid while frag_epoch
     * equals the placer's epoch (0: never valid; binds reset it). */
    int64_t frag;
    uint32_t frag_epoch;
    /* The paper FGD's fragmentation of this node (floating point, as its
     * simulator computes it), valid while pfrag_ok (binds reset it). */
    double pfrag;
    bool pfrag_ok;
};

struct fair_sim_cluster {
    const struct fair_sim_trace *trace; /* borrowed: nodes and models */
    struct fair_sim_nstate *n;          /* trace->nnodes entries */
    size_t nnodes;
    int64_t gpu_capacity;  /* milli-GPU */
    int64_t gpu_allocated; /* milli-GPU */
};

int fair_sim_cluster_init(struct fair_sim_cluster *c, const struct fair_sim_trace *t,
                          struct fair_error *err);
void fair_sim_cluster_release(struct fair_sim_cluster *c);
/* Frees everything: back to the state after _init. */
void fair_sim_cluster_reset(struct fair_sim_cluster *c);

/* Whether job could run on node now (CPU, memory, model, GPU devices). */
bool fair_sim_fits(const struct fair_sim_cluster *c, size_t node, const struct fair_sim_job *job);
/* Whether the job's model constraint admits the node at all. */
bool fair_sim_model_ok(const struct fair_sim_cluster *c, size_t node,
                       const struct fair_sim_job *job);

/* Takes the job's resources on node, on the given devices (one bit for a
 * fraction, gpu/1000 bits for whole GPUs). FAIR_EINVAL (nothing changed)
 * when they are not free or the node's GPU model is not one the job may
 * run on. */
int fair_sim_cluster_bind(struct fair_sim_cluster *c, size_t node, uint64_t devices,
                          const struct fair_sim_job *job);
/* Gives them back (the inverse of a successful bind). */
void fair_sim_cluster_unbind(struct fair_sim_cluster *c, size_t node, uint64_t devices,
                             const struct fair_sim_job *job);

static inline int64_t fair_sim_cluster_unallocated(const struct fair_sim_cluster *c)
{
    return c->gpu_capacity - c->gpu_allocated;
}

enum fair_sim_policy {
    FAIR_SIM_POLICY_ENGINE = 0, /* "fairshare": the engine places */
    FAIR_SIM_POLICY_FIRST_FIT,
    FAIR_SIM_POLICY_RANDOM_FIT,
    /* "gpu-best-fit": the node left with the least free GPU, then CPU (not
     * the paper's BestFit, which is FAIR_SIM_POLICY_PAPER_BESTFIT). */
    FAIR_SIM_POLICY_GPU_BEST_FIT,
    /* An approximation of FGD (see docs/simulator.md): the trace's whole pod
     * mix as the target workload, integer fragmentation, first best node. */
    FAIR_SIM_POLICY_FGD,
    /* FGD that learns the target workload from the pods it has been asked
     * to place so far (as a controller would), instead of knowing the
     * whole trace in advance. */
    FAIR_SIM_POLICY_FGD_ONLINE,
    /* The FGD paper's baselines, scored as its simulator scores them
     * (pkg/simulator/plugin/best_fit_score.go, gpu_packing_score.go): the
     * highest integer score wins, ties broken at random, devices chosen
     * tightest first ("best" GPU selection). */
    FAIR_SIM_POLICY_PAPER_BESTFIT,    /* "BestFit" */
    FAIR_SIM_POLICY_PAPER_GPUPACKING, /* "GpuPacking" */
    /* "FGD", the paper's (fgd_score.go): its target workload (the trace's
     * most frequent requests covering 95% of the pods, CPU-only pods
     * included), its fragmentation in floating point, its sigmoid score
     * truncated to 0..100, ties as above. */
    FAIR_SIM_POLICY_PAPER_FGD,
    FAIR_SIM_POLICY_COUNT,
};

const char *fair_sim_policy_name(enum fair_sim_policy p);
/* 0, or FAIR_EINVAL for an unknown name. */
int fair_sim_policy_parse(const char *s, enum fair_sim_policy *out);

/* The FGD "target workload": the trace's pod types and their counts. */
struct fair_sim_podtype {
    int64_t cpu_milli;
    int64_t gpu_milli;
    uint64_t model_mask;
    int64_t count;
};

/* One "typical pod" of the paper's FGD: a request and its frequency. */
struct fair_sim_fgdtype {
    int64_t cpu_milli;
    int64_t milli; /* per device: a fraction, or 1000 for whole GPUs; 0: no GPU */
    int num;       /* devices */
    uint64_t model_mask;
    int spec;
    int64_t count;
    double freq;
};

struct fair_sim_placer {
    enum fair_sim_policy policy;
    uint64_t rng;                   /* xorshift state for random fit */
    struct fair_sim_podtype *types; /* sorted; counts are the weights */
    size_t ntypes;
    uint32_t epoch; /* bumped when the weights change */
    /* FGD_ONLINE: pods seen per type, copied into the weights at 1, 2, 4,
     * ..., 256 pods seen, then every 256. */
    int64_t *seen;
    size_t observed, next_refresh;
    /* Borrowed, optional (NULL: ties at random): one rank per node; BestFit
     * and GpuPacking break score ties by the lowest rank, as the paper's
     * scheduler does by node name (sim/paper.h). */
    const int32_t *tie_rank;
    /* PAPER_FGD: its target workload. */
    struct fair_sim_fgdtype *ptypes;
    size_t nptypes;
};

/* policy must not be ENGINE (that one lives in sim/engine_place.h). The
 * trace's jobs define FGD's target workload. */
int fair_sim_placer_init(struct fair_sim_placer *p, enum fair_sim_policy policy, uint64_t seed,
                         const struct fair_sim_trace *t, struct fair_error *err);
void fair_sim_placer_release(struct fair_sim_placer *p);

/* Chooses a node and devices for job without changing the cluster (FGD_ONLINE
 * also counts the job into its target workload, every call).
 * Returns 0 (with *node and *devices set) or FAIR_ENOTFOUND. */
int fair_sim_place(struct fair_sim_placer *p, struct fair_sim_cluster *c,
                   const struct fair_sim_job *job, int32_t *node, uint64_t *devices);

/* FGD's fragmentation of one node measured against the target workload,
 * in milli-GPU x pod count (divide by the total count for milli-GPU). */
int64_t fair_sim_node_frag(const struct fair_sim_placer *p, const struct fair_sim_cluster *c,
                           size_t node);

/* A deterministic 64-bit generator (xorshift64*), shared by the simulator. */
uint64_t fair_sim_rand(uint64_t *state);

#endif
