/* The fair-share engine: a pure function from a snapshot of the cluster
 * (nodes, projects, queues, pods, "now") to per-queue figures and a list of
 * actions (bind, evict). No I/O, no clock, no globals: the same snapshot
 * always yields the same result. The controller, the simulator and the
 * demo all call fair_engine_run() unchanged.
 *
 * Units: GPU in milli-GPU (1000 = one GPU), CPU in millicores, memory in
 * bytes, time in milliseconds since the Unix epoch.
 *
 * Ownership: the snapshot and everything it points to are borrowed for the
 * duration of the call and never modified. The result is owned by the
 * caller and released with fair_result_release(). Actions refer to pods,
 * nodes and queues by their index in the snapshot's arrays. */
#ifndef FAIR_ENGINE_ENGINE_H
#define FAIR_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

enum fair_res { FAIR_RES_GPU = 0, FAIR_RES_CPU = 1, FAIR_RES_MEM = 2, FAIR_RES_COUNT = 3 };

/* Absent limit. */
#define FAIR_UNLIMITED INT64_MAX
/* Most GPU devices on one node: device sets are 64-bit masks. */
#define FAIR_MAX_GPUS_PER_NODE 64
#define FAIR_GPU_DEVICE_MILLI 1000

struct fair_resources {
    int64_t v[FAIR_RES_COUNT];
};

struct fair_label {
    const char *key;
    const char *value;
};

enum fair_taint_effect {
    FAIR_TAINT_NO_SCHEDULE,
    FAIR_TAINT_PREFER_NO_SCHEDULE, /* a preference only: never filters */
    FAIR_TAINT_NO_EXECUTE,
};

struct fair_taint {
    const char *key;
    const char *value; /* may be NULL or "" */
    enum fair_taint_effect effect;
};

enum fair_toleration_op { FAIR_TOLERATE_EQUAL, FAIR_TOLERATE_EXISTS };

struct fair_toleration {
    const char *key; /* NULL or "" with EXISTS tolerates every taint */
    enum fair_toleration_op op;
    const char *value;
    bool any_effect; /* true when the toleration names no effect */
    enum fair_taint_effect effect;
};

struct fair_node {
    const char *name;
    const char *gpu_model; /* e.g. "A100-SXM4-80GB"; may be NULL */
    int gpu_count;         /* devices, each FAIR_GPU_DEVICE_MILLI, <= 64 */
    /* Allocatable: v[GPU] must equal gpu_count * 1000. */
    struct fair_resources allocatable;
    int max_pods; /* 0 means no pod-count limit */
    bool unschedulable;
    const struct fair_label *labels;
    size_t nlabels;
    const struct fair_taint *taints;
    size_t ntaints;
    /* Allocatable of the other resources (struct fair_scalar). */
    const struct fair_scalar *scalars;
    size_t nscalars;
    /* GPU held as MIG instances (nvidia.com/mig-<profile> among scalars),
     * milli-GPU: each profile's count times its share (base/mig.h). It
     * counts in the cluster's GPU capacity (fair shares), not in
     * allocatable.v[GPU] nor in the devices: MIG pods are placed by their
     * instance counts (scalars). 0: none. */
    int64_t mig_milli;
};

/* ---- GPU model pools and lending limits (issue 15, items 1-2) ------
 * A quota may name GPU models next to the plain GPU total (`gpu/H100: 8`
 * beside `gpu: 16`): each model is a pool of its own, made of the nodes
 * whose gpu_model is that name, with its own guarantee, limit, lending
 * limit and fair share (docs/engine.md, "GPU model pools"). */
#define FAIR_MAX_GPU_MODELS 16
struct fair_model_quota {
    const char *model;     /* as the nodes' gpu_model spells it */
    int64_t guaranteed;    /* milli-GPU, >= 0 */
    int64_t limit;         /* milli-GPU; read only when has_limit */
    int64_t lending_limit; /* milli-GPU; read only when has_lending_limit */
    bool has_limit;
    bool has_lending_limit;
};

/* What Projects and Queues have in common. */
struct fair_quota {
    const char *name;
    struct fair_resources guaranteed; /* >= 0 */
    struct fair_resources limit;      /* FAIR_UNLIMITED where absent */
    int64_t over_quota_weight;        /* > 0; the CRD defaults it to 1 */
    int32_t over_quota_priority;      /* higher tiers get surplus first */
    /* spec.lendingLimit: the most of the guarantee that may be lent out,
     * per resource; read only where bit r of lending_set is set (zero
     * means: all of the guarantee may be lent). */
    struct fair_resources lending_limit;
    uint8_t lending_set;
    /* Per-model quotas (distinct models); NULL/0: none. */
    const struct fair_model_quota *models;
    size_t nmodels;
};

struct fair_project {
    struct fair_quota q;
    /* Decayed GPU usage (milli-GPU x ms, usageHalfLife; docs/engine.md,
     * "Decayed usage"); >= 0. 0 for every project: the over-quota weights
     * are used as they are. */
    int64_t usage;
    /* spec.fractions.shareAcrossProjects: its fractions may share a GPU
     * device with fractions of other projects that set it too. false (the
     * default): a device holds fractions of this project only
     * (docs/fractions.md, "Tenancy"). */
    bool share_fractions;
};

/* How far a queue's pending pods may take room back from queues that
 * borrow it (docs/engine.md, "Reclaim and preemption"). */
enum fair_reclaim_mode {
    FAIR_RECLAIM_FAIR_SHARE = 0, /* up to its fair share (the default) */
    FAIR_RECLAIM_GUARANTEE = 1,  /* up to min(guaranteed, demand) only */
};

struct fair_queue {
    struct fair_quota q;
    const char *project_name;       /* for messages */
    int32_t project;                /* index into snapshot.projects; -1: unknown */
    int64_t reclaim_min_runtime_ms; /* borrowed pods younger are not reclaimed */
    enum fair_reclaim_mode reclaim_up_to;
    /* Aging (spec.agingHalfLife; 0 or less: off): a pending pod's rank in
     * its queue rises with its wait (now - created_ms), by a priority
     * boost of 2^(wait/aging_half_life_ms) - 1 (docs/engine.md, "Admission
     * order"). */
    int64_t aging_half_life_ms;
    /* Decayed GPU usage of the queue's own pods (milli-GPU x ms, its
     * project's usageHalfLife; docs/engine.md, "Decayed usage"); >= 0.
     * Weighs the queue's over-quota weight among its project's queues as
     * project usage does among projects; 0 for all of a project's queues:
     * their weights as they are. */
    int64_t usage;
};

/* A resource other than GPU, CPU and memory: extended resources
 * (rdma/ib, nvidia.com/mig-1g.10gb, ...), hugepages-*, ephemeral-storage.
 * In the resource's own unit (bytes for hugepages and storage). On a node:
 * its allocatable; on a pod: its request (NodeResourcesFit). */
struct fair_scalar {
    const char *name;
    int64_t value;
};

enum fair_protocol { FAIR_PROTO_TCP = 0, FAIR_PROTO_UDP = 1, FAIR_PROTO_SCTP = 2 };

/* A container port with a hostPort (NodePorts): conflicts with another on
 * the same node with the same protocol and port when either host IP is
 * 0.0.0.0 (or unset) or both are the same. */
struct fair_host_port {
    const char *host_ip; /* NULL or "": 0.0.0.0 */
    int32_t port;        /* hostPort, > 0 */
    uint8_t protocol;    /* enum fair_protocol */
};

/* Node affinity, as kube-scheduler's NodeAffinity plugin reads
 * spec.affinity.nodeAffinity (docs/engine.md, "Scheduling constraints").
 * One requirement of a term: a matchExpressions entry on the node's labels,
 * or (field) a matchFields entry on the node's fields (metadata.name). */
enum fair_sel_op {
    FAIR_SEL_IN = 0,
    FAIR_SEL_NOT_IN,
    FAIR_SEL_EXISTS,
    FAIR_SEL_DOES_NOT_EXIST,
    FAIR_SEL_GT, /* label value and values[0] parsed as int64: strictly greater */
    FAIR_SEL_LT,
};

struct fair_node_req {
    const char *key;
    const char *const *values;
    uint32_t nvalues;
    uint8_t op; /* enum fair_sel_op */
    bool field; /* matchFields: key names a node field ("metadata.name") */
};

/* A nodeSelectorTerm: its requirements are ANDed. A term with no
 * requirement, or one that does not parse (invalid: an unknown operator,
 * wrong value count, a Gt/Lt value that is not an integer, a bad key or
 * value), matches no node, as in Kubernetes. */
struct fair_node_term {
    const struct fair_node_req *reqs;
    uint32_t nreqs;
    int32_t weight; /* preferred terms only: 1..100 */
    bool invalid;
};

struct fair_node_affinity {
    /* requiredDuringSchedulingIgnoredDuringExecution is set: the node must
     * match one of terms (ORed); with no terms, no node matches. */
    bool required;
    const struct fair_node_term *terms;
    size_t nterms;
    /* preferredDuringSchedulingIgnoredDuringExecution: a node's score is
     * the sum of the weights of the terms it matches. */
    const struct fair_node_term *preferred;
    size_t npreferred;
};

/* A metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn,
 * Exists, DoesNotExist; the field flag unused), ANDed. nothing: the
 * selector is null, which matches no pod; an empty one matches all. */
struct fair_label_selector {
    const struct fair_label *match_labels;
    size_t nmatch_labels;
    const struct fair_node_req *exprs;
    size_t nexprs;
    bool nothing;
    bool invalid; /* does not parse: matches nothing */
};

/* A pod (anti-)affinity term (InterPodAffinity): the pods that
 * selector matches in the term's namespaces, counted per value of
 * topology_key. Its namespaces are the union of namespaces (names) and,
 * with ns_by_labels, those whose labels ns_selector matches (a pod's
 * namespace labels: fair_pod.ns_labels); all_namespaces: namespaceSelector
 * {}, every namespace; none listed, no selector: the owner's own. */
struct fair_pod_term {
    const char *topology_key;
    struct fair_label_selector selector;
    const char *const *namespaces;
    size_t nnamespaces;
    bool all_namespaces;
    int32_t weight; /* preferred terms only: 1..100 */
    bool ns_by_labels;
    struct fair_label_selector ns_selector; /* with ns_by_labels */
};

struct fair_pod_affinity {
    const struct fair_pod_term *affinity; /* required; all must hold */
    size_t naffinity;
    const struct fair_pod_term *anti; /* required anti-affinity */
    size_t nanti;
    /* preferredDuringSchedulingIgnoredDuringExecution (weighted): they
     * only score nodes, after GPU packing (constraints.h). */
    const struct fair_pod_term *pref_affinity;
    size_t npref_affinity;
    const struct fair_pod_term *pref_anti;
    size_t npref_anti;
};

/* A topologySpreadConstraint with whenUnsatisfiable: DoNotSchedule
 * (PodTopologySpread, Kubernetes 1.24: nodeAffinityPolicy and
 * nodeTaintsPolicy do not exist there, minDomains is off but honoured when
 * a newer API server keeps it; nodes are counted when
 * they match the pod's node selector and required node affinity, whatever
 * their taints). The pod's own namespace. ScheduleAnyway ones are kept
 * after them (fair_pod.nspread_soft) and only score nodes. */
struct fair_spread {
    const char *topology_key;
    int32_t max_skew; /* >= 1 */
    struct fair_label_selector selector;
    /* DoNotSchedule: with fewer eligible domains than this, the fewest
     * matching pods of any domain counts as 0 (minDomains; 0 or 1: off). */
    int32_t min_domains;
};

enum fair_pod_state {
    FAIR_POD_PENDING = 0, /* waiting for the engine to place it */
    FAIR_POD_BOUND = 1,   /* placed on a node, holding its resources */
};

struct fair_pod {
    const char *uid;
    const char *namespace_;
    const char *name;
    /* Index into snapshot.queues. -1: not ours (placed by another
     * scheduler): a BOUND pod with queue -1 only uses capacity. */
    int32_t queue;
    enum fair_pod_state state;
    int32_t priority;   /* PriorityClass value; higher first */
    int64_t created_ms; /* older first within a priority */
    int64_t started_ms; /* when bound; for reclaimMinRuntime */
    bool preemptible;   /* false: interactive, within guaranteed only */
    /* Requests. v[GPU] is either a multiple of 1000 (whole GPUs) or,
     * below 1000, a fraction of one device. */
    struct fair_resources request;
    /* v[GPU] is the charge of MIG instances (nvidia.com/mig-<profile> in
     * scalars, at each profile's share of a GPU; any multiple of 1 milli):
     * the pod takes no device and no GPU room of its node, its instances
     * are placed by scalars, and it counts in its queue's GPU figures like
     * any GPU pod (docs/fractions.md, "MIG"). */
    bool mig;
    /* BOUND pods: the node and the devices they hold. */
    int32_t node;         /* index into snapshot.nodes; -1 when PENDING */
    uint64_t gpu_devices; /* bit i = device i of the node */
    /* BOUND pods being deleted (evicted, or deletionTimestamp set): they
     * still hold their resources until they are gone, are never chosen as
     * victims again, and the room they will free counts towards the
     * pending pods they were evicted for, so no extra victims are taken. */
    bool terminating;
    /* A terminating pod whose eviction waits for its preemption notice:
     * counted as above, but it starts no wave (it holds back no other
     * queue's reclaim while the notice runs). */
    bool noticed;
    /* Constraints. */
    const struct fair_label *node_selector;
    size_t nnode_selector;
    const struct fair_toleration *tolerations;
    size_t ntolerations;
    const char *gpu_model; /* required model, or NULL */
    /* spec.affinity.nodeAffinity; NULL: none. Checked for PENDING pods
     * (a pod with spec.nodeName set by its user is already BOUND). */
    const struct fair_node_affinity *node_affinity;
    /* Requests of other resources (distinct names), and host ports. Bound
     * pods of every scheduler hold them on their node. */
    const struct fair_scalar *scalars;
    size_t nscalars;
    const struct fair_host_port *host_ports;
    size_t nhost_ports;
    /* All the pod's labels (for other pods' affinity terms), and its
     * required pod affinity and anti-affinity (NULL: none). Bound pods of
     * every scheduler count. */
    const struct fair_label *labels;
    size_t nlabels;
    /* The labels of the pod's namespace (NULL, 0: none, or the namespace
     * is not known), for terms with a namespaceSelector. */
    const struct fair_label *ns_labels;
    size_t nns_labels;
    const struct fair_pod_affinity *pod_affinity;
    const struct fair_spread *spread; /* DoNotSchedule constraints */
    size_t nspread;
    /* ScheduleAnyway constraints follow them: spread[nspread ..
     * nspread + nspread_soft). They only score nodes. */
    size_t nspread_soft;
    /* Gangs: pods sharing gang (within a queue) are placed all together or
     * not at all; gang_size is how many pods the gang needs. */
    const char *gang;
    int32_t gang_size;
    /* Work lost to an eviction: the pod checkpoints every this many ms
     * from its start (0: never, all work since started_ms is lost). */
    int64_t checkpoint_interval_ms;
    /* BOUND pods told of an eviction before (the scheduler's
     * DisruptionTarget condition, e.g. a preemption notice given before
     * the controller restarted), since this time (ms); 0: none. The notice
     * asked it to checkpoint, so an eviction loses at most the work since
     * (victim order: least work lost first). */
    int64_t notice_since_ms;
    /* Declared maximum run time (spec.activeDeadlineSeconds: the kubelet
     * kills the pod that long after its start), ms; 0: none declared.
     * Read by snapshot.lend_max_runtime_ms. */
    int64_t max_runtime_ms;
    /* How many times this pod (or, for a requeued pod or a workload's
     * replacement, its lineage) was evicted before. */
    int32_t evictions;
    /* PENDING pods: the node held for the pod by an earlier cycle
     * (result.hold_node), and since when; hold_since_ms 0: none. */
    int32_t hold_node;
    int64_t hold_since_ms;
};

/* How placement scores nodes. PACK (the default) fights fragmentation;
 * SPREAD and FIRST_FIT are baselines for the simulator. */
enum fair_place_policy {
    FAIR_PLACE_PACK = 0,
    FAIR_PLACE_SPREAD = 1,
    FAIR_PLACE_FIRST_FIT = 2,
};

struct fair_snapshot {
    int64_t now_ms;
    const struct fair_node *nodes;
    size_t nnodes;
    const struct fair_project *projects;
    size_t nprojects;
    const struct fair_queue *queues;
    size_t nqueues;
    const struct fair_pod *pods;
    size_t npods;
    enum fair_place_policy placement; /* zero (PACK) unless set */
    /* Reclaim up to fair share (FAIR_RECLAIM_FAIR_SHARE queues): only when
     * the queue is below its fair share by at least its pod's request and
     * this share of the fair share (percent; hysteresis), and only victims
     * that have run at least over_quota_min_runtime_ms. */
    int32_t over_quota_threshold_pct;
    int64_t over_quota_min_runtime_ms;
    /* A pod evicted this many times (fair_pod.evictions) runs only within
     * its queue's fair share: pass 2 skips it. 0: no bound. */
    int32_t max_evictions;
    /* Lending only to pods that end or checkpoint soon: a GPU pod may take
     * its queue above its GPU guarantee only when it declares a maximum
     * run time (max_runtime_ms) of at most this, or checkpoints; 0: any
     * pod may borrow. */
    int64_t lend_max_runtime_ms;
    /* A pod owed room that only an emptied node could hold keeps that node
     * for at most this long (then as long again without one); 0: never. */
    int64_t hold_timeout_ms;
};

enum fair_action_kind {
    FAIR_ACTION_BIND,  /* place pod on node, on gpu_devices */
    FAIR_ACTION_EVICT, /* evict pod (through the Eviction API) */
};

enum fair_evict_reason {
    FAIR_EVICT_NONE = 0,
    FAIR_EVICT_RECLAIM,    /* its queue borrowed; the owner wants it back */
    FAIR_EVICT_PREEMPT,    /* a higher-priority pod of the same queue */
    FAIR_EVICT_FAIR_SHARE, /* its queue is above its fair share; a queue below takes it */
};

struct fair_action {
    enum fair_action_kind kind;
    int32_t pod;                   /* index into snapshot.pods */
    int32_t node;                  /* BIND: target node */
    uint64_t gpu_devices;          /* BIND: devices given to the pod */
    enum fair_evict_reason reason; /* EVICT */
    int32_t for_queue;             /* EVICT: the queue the room is made for */
    int32_t for_pod;               /* EVICT: the pending pod the room is made for */
};

/* Why a pending pod was not bound this cycle. */
enum fair_pending_reason {
    FAIR_PENDING_NONE = 0,        /* bound, or not pending */
    FAIR_PENDING_UNKNOWN_QUEUE,   /* queue -1 */
    FAIR_PENDING_INVALID_QUEUE,   /* its queue or project is invalid */
    FAIR_PENDING_OVER_LIMIT,      /* would exceed a queue or project limit */
    FAIR_PENDING_OVER_GUARANTEE,  /* non-preemptible beyond guaranteed */
    FAIR_PENDING_WAITING_RECLAIM, /* evictions issued; waiting for room */
    FAIR_PENDING_NO_NODE_FITS,    /* no node passes the filters */
    FAIR_PENDING_GANG_INCOMPLETE, /* fewer pods than gang_size exist */
    FAIR_PENDING_GANG_NO_FIT,     /* the whole gang does not fit */
    FAIR_PENDING_FAIR_SHARE,      /* its queue is at its fair share */
    FAIR_PENDING_INVALID_POD,     /* the pod itself is invalid (see problems) */
    FAIR_PENDING_RECLAIM_HELD,    /* owed room, but the victims ran too briefly or the
                                     gap is within the hysteresis */
    FAIR_PENDING_NODE_HELD,       /* a node is held for it until enough room is free */
    FAIR_PENDING_LENDING_KEPT,    /* at its fair share, and the room left is other queues'
                                     guarantee kept by their lending limit (pass 2) */
};

/* Per-queue (and per-project) figures, per resource. */
struct fair_share_status {
    struct fair_resources guaranteed;
    struct fair_resources fair_share;
    struct fair_resources allocated;       /* bound pods, before this cycle */
    struct fair_resources allocated_after; /* after this cycle's actions */
    struct fair_resources demand;          /* bound + pending requests */
    struct fair_resources borrowed;        /* allocated above guaranteed */
    struct fair_resources lent;            /* guaranteed idle while others borrow */
    /* The part of guaranteed that may be lent: min(guaranteed, lending
     * limit); lent never exceeds it. */
    struct fair_resources lendable;
    int32_t pending_pods;
    int32_t running_pods;
};

/* Figures of one object in one GPU model pool (milli-GPU). */
struct fair_model_status {
    int64_t capacity; /* the pool's GPUs (the same for every object) */
    int64_t guaranteed;
    int64_t fair_share;
    int64_t allocated; /* bound on the pool's nodes before the cycle */
    int64_t demand;    /* bound there + pending pods naming the model */
    int64_t borrowed;
    int64_t lent;
    int64_t lendable;
};

enum fair_problem_kind {
    FAIR_PROBLEM_INVALID,       /* the object cannot be used: see message */
    FAIR_PROBLEM_OVERCOMMITTED, /* children guarantee more than the parent */
};

enum fair_object_kind {
    FAIR_OBJ_CLUSTER,
    FAIR_OBJ_PROJECT,
    FAIR_OBJ_QUEUE,
    FAIR_OBJ_NODE,
    FAIR_OBJ_POD
};

/* A problem found in the snapshot. Invalid objects are left out of the
 * cycle (their pods stay pending with FAIR_PENDING_INVALID_QUEUE); the rest
 * of the cluster is still scheduled. */
struct fair_problem {
    enum fair_problem_kind kind;
    enum fair_object_kind object;
    int32_t index;
    char message[200];
};

struct fair_result {
    struct fair_action *actions;
    size_t nactions;
    struct fair_share_status *queues; /* nqueues, same order as snapshot */
    size_t nqueues;
    struct fair_share_status *projects; /* nprojects */
    size_t nprojects;
    struct fair_share_status cluster;
    uint8_t *pending_reasons; /* npods; enum fair_pending_reason */
    size_t npods;
    /* npods: the node held for each pending pod after this cycle (-1: none)
     * and since when (0: none), to pass back in the next snapshot. */
    int32_t *hold_node;
    int64_t *hold_since_ms;
    struct fair_problem *problems;
    size_t nproblems;
    /* Capacity shared out: allocatable of schedulable nodes, minus what
     * pods of no (valid) queue hold there, plus what managed pods hold on
     * nodes that take no new pods. */
    struct fair_resources capacity;
    /* Bytes the engine allocated for this cycle's working state (peak sum,
     * result included): the memory figure of the benchmark. */
    size_t mem_bytes;
    /* GPU model pools of the cycle, sorted by name (strings borrowed from
     * the snapshot), and their figures: queue_models[i * nmodels + m],
     * project_models likewise, cluster_models[m]. */
    const char *models[FAIR_MAX_GPU_MODELS];
    size_t nmodels;
    struct fair_model_status *queue_models;
    struct fair_model_status *project_models;
    struct fair_model_status cluster_models[FAIR_MAX_GPU_MODELS];
};

/* Runs one scheduling cycle. Returns 0, or FAIR_ENOMEM / FAIR_EINVAL (a
 * snapshot that is unusable as a whole, e.g. an index out of range; err
 * says what). Problems with single objects do not fail the call: they are
 * listed in result->problems. On failure *result is left empty. */
int fair_engine_run(const struct fair_snapshot *snap, struct fair_result *result,
                    struct fair_error *err);

void fair_result_release(struct fair_result *result);

const char *fair_pending_reason_str(enum fair_pending_reason r);
const char *fair_evict_reason_str(enum fair_evict_reason r);
const char *fair_res_name(enum fair_res r);

#endif
