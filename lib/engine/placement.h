/* Placement: which node, and which GPU devices, a pod goes to. Holds the
 * free resources of every node during one engine cycle, indexes nodes in
 * buckets so that a pod never scans all nodes, and scores candidates with a
 * policy (packing by default; spread and first-fit exist as baselines for
 * the simulator).
 *
 * Nodes are addressed by rank: their position when sorted by name (then by
 * snapshot index), so that decisions do not depend on input order.
 *
 * Two views of each node are kept:
 *   cur: free now (allocatable minus every bound pod, terminating included);
 *   fut: free once terminating and just-evicted pods are gone, minus the
 *        room reserved for the pending pods they were evicted for.
 * Binds take room in both. Reservations (reclaim) change fut only, and a
 * bind made after reservations (use_fut) must fit in both, so reserved room
 * is never handed to someone else.
 *
 * PACK also keeps CPU and memory in balance with the GPUs (see bal below
 * and docs/engine.md): among the nodes that fit, it prefers the one where
 * the pod strands the fewest GPUs, and only then packs. */
#ifndef FAIR_ENGINE_PLACEMENT_H
#define FAIR_ENGINE_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

#define FAIR_PLACE_FAIL_CACHE 32
/* Fraction fill: a size is common when at least this share (per mille)
 * of the fractional pods, bound and pending, ask for it; a remainder that
 * the common sizes cannot fill costs this many times its size on top. */
#define FAIR_PLACE_FILL_SHARE_PERMILLE 30
#define FAIR_PLACE_FILL_WEIGHT 6
/* Fraction shapes kept per cycle for the node choice within a fill level
 * (shapes_init in placement.c). */
#define FAIR_PLACE_SHAPES_MAX 64

struct fair_pnode {
    int32_t idx;   /* snapshot index */
    bool ok;       /* valid and schedulable: may receive pods */
    bool fdiff;    /* fut may differ from cur (terminating pods or reservations) */
    int8_t ngpu;   /* devices */
    int8_t nwhole; /* cur devices fully free */
    int32_t pods;  /* cur pods bound */
    int32_t fpods; /* fut pods */
    int64_t free[FAIR_RES_COUNT];
    int64_t ffree[FAIR_RES_COUNT];
    int16_t dev[FAIR_MAX_GPUS_PER_NODE];  /* cur free milli per device */
    int16_t fdev[FAIR_MAX_GPUS_PER_NODE]; /* fut free milli per device */
};

/* A request of fractional pods, and how many pods (bound and pending) ask
 * for exactly it. */
struct fair_place_shape {
    int64_t gpu, cpu, mem;
    int64_t count;
    int need; /* index of gpu in fair_place.shape_gpu */
};

struct fair_place_fail {
    int64_t req[FAIR_RES_COUNT];
    bool use_fut;
    int32_t key; /* fractions: the tenant key (fair_place_tenant); else 0 */
};

struct fair_place {
    const struct fair_snapshot *snap;
    enum fair_place_policy policy;
    size_t nnodes;
    struct fair_pnode *nodes; /* by rank */
    int32_t *rank_of;         /* snapshot index -> rank */
    size_t words;             /* 64-bit words per bitset */
    /* whole[b]: nodes (ok only) with exactly b fully free devices (cur). */
    uint64_t *whole;
    int32_t whole_cnt[FAIR_MAX_GPUS_PER_NODE + 1];
    /* part[f]: nodes (ok only) with a device of exactly f free milli,
     * 0 < f < 1000 (cur). */
    uint64_t *part;
    int32_t part_cnt[FAIR_GPU_DEVICE_MILLI];
    /* Bit f: part_cnt[f] > 0, so that searches skip the empty ones. */
    uint64_t part_any[(FAIR_GPU_DEVICE_MILLI + 63) / 64];
    /* Balance (PACK only): the CPU and memory per GPU (bal_cpu and
     * bal_mem per 1000 milli-GPU) that the lighter third of the GPU
     * pods ask for (weighted 1/3 quantile). A node whose free CPU or memory
     * is below its free GPUs times that ratio strands GPUs (free GPUs
     * without the dead remainders, see fill_min): they are free,
     * but even those pods would not fit next to them. Only such nodes (cur
     * view) are in strand; placing a pod there can reduce the stranding,
     * elsewhere it can only add some. */
    bool bal;
    int64_t bal_cpu, bal_mem; /* per GPU (1000 milli) */
    uint64_t *strand;
    int32_t strand_cnt;
    /* Fraction fill (PACK only; see fill_init in placement.c): fill_cost[L]
     * is what leaving L milli free on a device costs once a fraction is
     * placed there: L, plus FAIR_PLACE_FILL_WEIGHT times the part of L that
     * no sum of the common fraction sizes fills. A fraction takes the
     * device of least cost (a fully free one included), the fuller on
     * ties. NULL: no fractional pod, plain best fit. DEV_MILLI entries.
     * fill_fresh is added to the cost of a fully free device: 0, or more
     * than any remainder costs while a whole-GPU pod is pending (then a
     * fraction takes a fully free device only when no used one fits, as
     * in best fit: the devices such a pod needs are not broken up to
     * spare a remainder). */
    int32_t *fill_cost;
    int32_t fill_fresh;
    /* The smallest common fraction size (DEV_MILLI: none; 0: no fill
     * table). A partly used device with less free is a dead remainder:
     * balance does not count it as GPU that CPU or memory could strand. */
    int32_t fill_min;
    /* The fraction shapes (with fill only): the FAIR_PLACE_SHAPES_MAX
     * most common requests (GPU, CPU, memory) of the fractional pods,
     * most common first. Among the nodes of the fill level a fraction
     * takes, it goes where it least raises the free GPU that these shapes
     * could not use (frag_delta), then to the fullest: FGD's expected
     * fragmentation, on the cluster's own pods. */
    struct fair_place_shape *shapes;
    size_t nshapes;
    int64_t shape_gpu[FAIR_PLACE_SHAPES_MAX]; /* their distinct GPU requests */
    int nneeds;
    int64_t shape_cpu, shape_mem; /* the most CPU and memory a shape asks for */
    /* Model contention (PACK only; see contention_init in placement.c):
     * when pods restricted to some GPU models or node labels ask for a
     * larger share of the GPUs than those nodes hold, the nodes are put
     * in a higher tier, and a pod takes a node of the lowest tier where it
     * fits, so that pods that could go anywhere leave the scarce nodes to
     * those that cannot. tiers: ntiers bitsets of words each; ntiers 0:
     * every node is in one tier (no restricted pods, or none scarce). */
    uint64_t *tiers;
    int ntiers;
    /* Requests known not to fit on any node (state only fills up between
     * resets), for pods without node constraints. */
    struct fair_place_fail fail[FAIR_PLACE_FAIL_CACHE];
    size_t nfail;
    size_t fail_next;
    /* Nodes held for one pending pod (by rank; NULL: none): no other pod
     * fits there. Borrowed from the caller, may be NULL. */
    const struct fair_pod *const *hold;
    /* Tenancy of the fractions (docs/fractions.md, "Tenancy"): per rank,
     * FAIR_MAX_GPUS_PER_NODE entries each, the tenant key (fair_place_
     * tenant) of the fractions on each device that is not fully free, in
     * cur (ten) and fut (ften). NULL when the snapshot has no fractional
     * pod: nothing to keep apart. */
    int32_t *ten;
    int32_t *ften;
    /* With ten: per tenant key that may share (FAIR_TENANT_SHARED, then
     * the projects), a bitset of the nodes (ok only) that had a partly
     * used device (cur) of that key at their last bucket update; it may
     * hold nodes that no longer have one, never misses one. Placement of a
     * fraction only looks at those nodes and at nodes with a fully free
     * device (tenscratch, words). */
    uint64_t *tenbits;
    size_t ntenkeys;
    uint64_t *tenscratch;
    /* Scheduling constraints of this cycle (constraints.h); NULL: no pod
     * carries any. */
    struct fair_cons *cons;
    size_t bytes; /* allocated, for the memory figure */
};

/* The room pod takes on a node: its request, except that a MIG pod
 * (engine.h) takes no GPU room and no device, its instances being other
 * resources (scalars). Returns &pod->request, or tmp filled for a MIG
 * pod. */
static inline const struct fair_resources *fair_place_room(const struct fair_pod *pod,
                                                           const struct fair_resources *req,
                                                           struct fair_resources *tmp)
{
    if (!pod->mig)
        return req;
    *tmp = *req;
    tmp->v[FAIR_RES_GPU] = 0;
    return tmp;
}

/* Sets up pl for snap: nodes, their free room from the bound pods (devices
 * from each pod's gpu_devices, or chosen deterministically when a bound pod
 * has none), terminating pods freed in fut. node_ok[i] (by snapshot index)
 * says whether node i may receive pods. masks[i] (npods, caller-owned)
 * receives the devices each bound pod holds. Returns 0 or FAIR_ENOMEM. The
 * pods' node indices must already be checked. */
int fair_place_init(struct fair_place *pl, const struct fair_snapshot *snap, const bool *node_ok,
                    uint64_t *masks);
void fair_place_release(struct fair_place *pl);

/* Whether node (rank) passes pod's static filters: schedulable, GPU model,
 * node selector, taints (NoSchedule, NoExecute) against tolerations, and
 * the constraints of constraints.h (node affinity, other resources, host
 * ports, inter-pod affinity), which this cycle's binds change. */
bool fair_place_static_ok(const struct fair_place *pl, int32_t rank, const struct fair_pod *pod);

/* Chooses a node and devices for a request, per the policy. use_fut: the
 * room must also be free in the fut view. Returns the rank or -1. */
int32_t fair_place_find(struct fair_place *pl, const struct fair_pod *pod,
                        const struct fair_resources *req, bool use_fut, uint64_t *mask);

/* Whether req fits on node rank (filters, room, and no hold for another
 * pod), and the devices it would get there; the per-node check behind
 * fair_place_find. */
bool fair_place_fits_node(const struct fair_place *pl, int32_t rank, const struct fair_pod *pod,
                          const struct fair_resources *req, bool use_fut, uint64_t *mask);

/* Takes (sign 1) or gives back (sign -1) req on node rank, devices mask,
 * in cur and fut. */
void fair_place_commit(struct fair_place *pl, int32_t rank, const struct fair_resources *req,
                       uint64_t mask, int sign);
/* fair_place_commit of pod's request, keeping the constraints' state
 * (other resources, host ports, inter-pod counts: constraints.h) too. */
void fair_place_commit_pod(struct fair_place *pl, int32_t rank, const struct fair_pod *pod,
                           uint64_t mask, int sign);
/* Changes the fut view only: sign -1 frees (an evicted pod), 1 reserves. */
void fair_place_fut(struct fair_place *pl, int32_t rank, const struct fair_resources *req,
                    uint64_t mask, int sign);

/* Tenant keys of fractions: a project's index, or one of these. Fractions
 * of one key only may share a device. */
#define FAIR_TENANT_SHARED (-2)  /* projects with share_fractions, together */
#define FAIR_TENANT_FOREIGN (-3) /* another scheduler's, or no project: alone */
#define FAIR_TENANT_MIXED (-4)   /* several keys already (pods bound before): closed */

/* The tenant key of pod's fractions in snap. */
int32_t fair_place_tenant(const struct fair_snapshot *snap, const struct fair_pod *pod);

/* fair_place_pick_devices for a fraction of tenant key `key`, where
 * ten/ten2 (NULL: no check) are the tenant keys of dev/dev2: only a device
 * that is fully free, or whose fractions have the same key, is taken
 * (in both views when dev2 is given). */
bool fair_place_pick_devices_tenant(const int16_t *dev, int ngpu, int64_t gpu, const int16_t *dev2,
                                    enum fair_place_policy policy, const int32_t *ten,
                                    const int32_t *ten2, int32_t key, uint64_t *mask);

/* fair_place_fut of pod's request, keeping the fut tenancy. */
void fair_place_fut_pod(struct fair_place *pl, int32_t rank, const struct fair_pod *pod,
                        uint64_t mask, int sign);

/* Device choice on one device array: whole GPUs (lowest fully free
 * devices) or a fraction (best fit: the fullest device that still fits,
 * lowest index on ties). Returns false when it does not fit. The engine's
 * own choice (fair_place_fits_node) also weighs the fill cost above. */
bool fair_place_pick_devices(const int16_t *dev, int ngpu, int64_t gpu, const int16_t *dev2,
                             enum fair_place_policy policy, uint64_t *mask);

struct fair_ratio_w {
    int64_t ratio;  /* e.g. CPU milli per GPU */
    int64_t weight; /* > 0 */
};

/* Weighted quantile num/den (0 < num <= den) of v: the smallest ratio
 * whose entries at or below it hold at least num/den of the total weight;
 * 0 for n == 0. Quickselect with a median-of-three pivot and a three-way
 * partition: O(n) expected, reorders v. Used for the balance ratios. */
int64_t fair_place_weighted_quantile(struct fair_ratio_w *v, size_t n, int num, int den);

/* Forgets the no-fit cache (after room was given back). */
void fair_place_forget(struct fair_place *pl);

#endif
