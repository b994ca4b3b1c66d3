/* The simulator's bridge to the engine: the trace's nodes as engine nodes
 * (GPU-model sets become node labels, so that a pod that may run on
 * "V100M16|V100M32" gets one node selector), and the engine as a placement
 * policy for the fragmentation experiment (sim/frag.h).
 *
 * Ownership: struct fair_sim_enodes and struct fair_sim_engine_placer are
 * caller-owned with _init/_release; both borrow the trace, which must
 * outlive them. */
#ifndef FAIR_SIM_ENGINE_PLACE_H
#define FAIR_SIM_ENGINE_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "sim/place.h"
#include "sim/trace.h"

#define FAIR_SIM_SPEC_LABEL "sim.fairshare.dev/gpu-spec-"

struct fair_sim_enodes {
    struct fair_node *nodes; /* trace->nnodes */
    size_t nnodes;
    struct fair_label *labels;      /* all nodes' labels, back to back */
    struct fair_label *spec_labels; /* one per trace spec: the selector */
    char **keys;                    /* owned label keys, one per spec */
    size_t nspecs;
    /* issue 15: the trace's model names (borrowed): a job whose spec is
     * one model names it (fair_pod.gpu_model), as a pod with a
     * nvidia.com/gpu.product node selector does. */
    char *const *models;
    size_t nmodels;
};

int fair_sim_enodes_init(struct fair_sim_enodes *en, const struct fair_sim_trace *t,
                         struct fair_error *err);
void fair_sim_enodes_release(struct fair_sim_enodes *en);

/* Fills an engine pod for job (requests, priority, preemptible, created,
 * selector, gang). queue, state, node and devices are left to the caller;
 * the strings are borrowed from the job and en. */
void fair_sim_enodes_pod(const struct fair_sim_enodes *en, const struct fair_sim_job *job,
                         struct fair_pod *pod);

/* The engine as a placement policy: every call runs one engine cycle with
 * the pods placed so far (bound) and the new one (pending), in one Project
 * and one Queue that guarantee the whole cluster, and takes the engine's
 * BIND. */
struct fair_sim_engine_placer {
    const struct fair_sim_trace *trace;
    struct fair_sim_enodes en;
    struct fair_project project;
    struct fair_queue queue;
    struct fair_pod *pods; /* bound so far, then the pending one */
    char (*uids)[24];
    size_t npods, cap;
    size_t cycles;
};

int fair_sim_engine_placer_init(struct fair_sim_engine_placer *ep, const struct fair_sim_trace *t,
                                struct fair_error *err);
void fair_sim_engine_placer_release(struct fair_sim_engine_placer *ep);

/* A fair_sim_place_fn (sim/frag.h): ctx is a struct fair_sim_engine_placer.
 * On success it records the pod as bound, so the caller must bind it. */
int fair_sim_place_engine(void *ctx, struct fair_sim_cluster *c, const struct fair_sim_job *job,
                          int32_t *node, uint64_t *devices, struct fair_error *err);

#endif
