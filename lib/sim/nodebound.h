/* A lower bound on unallocated GPU that keeps node boundaries and CPU, for
 * the paper protocol (sim/paper.h): stronger than, or equal to, the LP of
 * sim/bound.h, which forgets both.
 *
 * The problem bounded. After the first `prefix` arrivals, any policy
 * (online or offline) has placed some subset of the arrived GPU pods; its
 * allocated milli-GPU is at most
 *
 *     OPT = max sum_i v_i x_i over placements of a subset of the pods
 *           (x_i = 1: pod i placed), where every node keeps
 *           - per device: the fractions on it sum to <= 1000 milli;
 *           - whole-GPU pods take that many entirely free devices of one node;
 *           - the CPU of its pods <= its CPU.
 *
 * Memory, GPU models and gangs are relaxed away (dropping constraints only
 * raises OPT). CPU is counted in units of cpu_unit milli, pods rounded
 * DOWN and nodes rounded down too: a set of pods that fits in C milli has
 * sum floor(p/u) <= floor(sum p / u) <= floor(C/u), so rounding only
 * admits more.
 *
 * The relaxation. Pods are grouped into classes c = (GPU request, CPU
 * units), with n_c arrivals. For any prices pi_c >= 0 (Lagrangian
 * relaxation of "at most n_c pods of class c"),
 *
 *     OPT <= L(pi) = sum_c pi_c n_c + sum_nodes K_node(pi),
 *
 * K_node = the best sum of (v_c - pi_c) over pods packed on that node
 * alone, any number of each class. K_node is computed EXACTLY by dynamic
 * programming in integers: a device table (GPU milli x CPU units) for the
 * best fraction pattern of one device, then a node table (devices x CPU
 * units) that adds devices and whole-GPU pods. Every quantity is an
 * integer in 1/FAIR_SIM_NODE_BOUND_SCALE milli-GPU, so L(pi) is exact and
 * the bound never depends on how good pi is: the prices start at the LP's
 * duals (sim/bound.h; then L <= the LP bound) and a subgradient method
 * lowers L; the best L found is reported.
 *
 * Ownership: everything is borrowed for the duration of the call. */
#ifndef FAIR_SIM_NODEBOUND_H
#define FAIR_SIM_NODEBOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "sim/paper.h"
#include "sim/trace.h"

#define FAIR_SIM_NODE_BOUND_SCALE 1024
/* CPU units per node at most (cpu / cpu_unit): beyond, FAIR_ERANGE. */
#define FAIR_SIM_NODE_BOUND_MAX_CPU_UNITS 2048
/* Pod classes at most: beyond, FAIR_ERANGE. */
#define FAIR_SIM_NODE_BOUND_MAX_CLASSES 20000

struct fair_sim_node_bound_opts {
    int64_t cpu_unit_milli; /* 0: 250 */
    size_t iterations;      /* subgradient steps; 0: 150 */
};

struct fair_sim_node_bound {
    int64_t capacity_milli;      /* devices x 1000 */
    int64_t arrived_milli;       /* GPU requests that arrived */
    int64_t lp_bound_milli;      /* sim/bound.h's bound on the same arrivals */
    int64_t max_allocated_milli; /* proven: no policy allocates more */
    int64_t bound_milli;         /* proven: capacity - max_allocated */
    size_t classes;              /* pod classes (GPU request, CPU units) */
    size_t node_shapes;          /* distinct (devices, CPU units) among nodes */
    size_t iterations;           /* subgradient steps run */
};

/* The bound after the first prefix of the arrivals a (drawn from t's jobs)
 * on t's nodes. FAIR_EINVAL for a GPU request that is neither a fraction
 * nor whole GPUs or a bad option, FAIR_ERANGE past the limits above, and
 * the errors of fair_sim_frag_bound_hist(); FAIR_ENOMEM. */
int fair_sim_node_bound(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a,
                        size_t prefix, const struct fair_sim_node_bound_opts *opts,
                        struct fair_sim_node_bound *out, struct fair_error *err);

/* The other side: an explicit offline packing of the first prefix
 * arrivals, every constraint kept (CPU, memory, models, devices; each bind
 * goes through fair_sim_cluster_bind(), which refuses what does not fit).
 * It shows how much room any bound has left: no valid bound can exceed
 * capacity - *allocated_milli. It is also a policy of the protocol, if a
 * clairvoyant one: place arrival i at its spot when placed[i], else fail
 * it (placed[] then gives the window metric).
 *
 * CPU-only pods go first, each on the node with the most free CPU per
 * free device (a real scheduler places them, so they keep their CPU).
 * Fractions are grouped into device patterns by minimum bin slack (each
 * pattern the fullest device the remaining pods allow); patterns and
 * whole-GPU pods, fullest first up to the cluster's devices, are placed
 * CPU-hungry first on the node that keeps the most free CPU per free
 * device; what is left goes best fit. Then the arrivals prefix..until-1
 * (a window's later records), in order, best fit. placed: until entries
 * (out); spot (optional, until entries): where each placed one went;
 * *allocated_milli: after them all.
 * FAIR_ENOMEM; FAIR_EINVAL as fair_sim_node_bound(). */
struct fair_sim_spot {
    int32_t node;     /* index into t->nodes */
    uint64_t devices; /* as fair_sim_cluster_bind() takes them */
};
int fair_sim_node_pack(const struct fair_sim_trace *t, const struct fair_sim_arrivals *a,
                       size_t prefix, size_t until, bool *placed, struct fair_sim_spot *spot,
                       int64_t *allocated_milli, struct fair_error *err);

/* Best fit of one job on the cluster as it is (the packing's last step):
 * a fraction on the fullest device that holds it, whole GPUs on the node
 * with the fewest fully free devices (its first free ones), a CPU-only
 * job on the node with the most free CPU; ties to the first node. False
 * when no node fits. Binds nothing. */
bool fair_sim_best_fit(const struct fair_sim_cluster *c, const struct fair_sim_job *job,
                       size_t *node, uint64_t *devices);

#endif
