/* Plain C structs for the Kubernetes objects the controller needs, decoded
 * from JSON by lib/kube and cached by lib/cache. Only the fields Fairshare
 * uses are kept (this is what keeps memory per cached pod small); json_t
 * never leaves the decoding layer.
 *
 * Ownership: every string and array is owned by its object and freed by the
 * object's _free() function; _free(NULL) is a no-op. Quantities are already
 * parsed: GPU and CPU in milli-units, memory in bytes. Times are ms since the
 * Unix epoch, 0 when absent. */
#ifndef FAIR_KUBE_OBJECTS_H
#define FAIR_KUBE_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

/* The metadata the controller uses from every object. */
struct fair_kmeta {
    char *uid;
    char *namespace_; /* NULL for cluster-scoped objects */
    char *name;
    char *resource_version;
    int64_t generation;
    int64_t creation_ms;
    int64_t deletion_ms; /* deletionTimestamp; 0 when not being deleted */
};

enum fair_kpod_phase {
    FAIR_KPOD_PENDING,
    FAIR_KPOD_RUNNING,
    FAIR_KPOD_SUCCEEDED,
    FAIR_KPOD_FAILED,
    FAIR_KPOD_UNKNOWN,
};

struct fair_kpod {
    struct fair_kmeta meta;
    char *scheduler_name; /* spec.schedulerName */
    char *node_name;      /* spec.nodeName; NULL when unbound */
    enum fair_kpod_phase phase;
    int32_t priority; /* spec.priority */
    /* Sum over containers of resources.requests (limits where a request is
     * absent, as Kubernetes defaults them); GPU from nvidia.com/gpu. */
    struct fair_resources request;
    /* MIG instances asked for (nvidia.com/mig-<profile> in scalars): their
     * charge, the sum of count x the profile's share (base/mig.h), milli-
     * GPU; 0: none. Set only when every MIG resource parses. */
    int64_t mig_milli;
    /* Labels and annotations Fairshare reads, already extracted: */
    char *queue;                /* label fairshare.dev/queue */
    bool preemptible;           /* label fairshare.dev/preemptible != "false" */
    int64_t gpu_fraction_milli; /* annotation fairshare.dev/gpu-fraction; 0 if none */
    char *gpu_devices;          /* annotation fairshare.dev/gpu-devices ("0,3"); NULL if none */
    bool gpu_env_webhook;       /* annotation fairshare.dev/gpu-env set: the webhook saw it */
    char *gang;                 /* annotation fairshare.dev/gang */
    int32_t gang_size;          /* annotation fairshare.dev/gang-size; 0 if none */
    /* The PodGroup it belongs to: label scheduling.x-k8s.io/pod-group
     * (flavor COSCHED), else annotation scheduling.k8s.io/group-name
     * (flavor VOLCANO); NULL: none. */
    char *pod_group;
    uint8_t pod_group_flavor; /* enum fair_kpodgroup_flavor */
    /* The GPU model the pod names, if any: nodeSelector
     * nvidia.com/gpu.product, else a required node affinity whose every
     * term has nvidia.com/gpu.product In [one value] (the same value), else
     * annotation fairshare.dev/gpu-model (a product or an alias). */
    char *gpu_model;
    int64_t sim_duration_s;         /* annotation sim.fairshare.dev/duration-seconds; 0 if none */
    int64_t checkpoint_interval_ms; /* annotation fairshare.dev/checkpoint-interval; 0 if none */
    /* spec.activeDeadlineSeconds in ms (capped at FAIR_MAX_DEADLINE_S);
     * 0 if none */
    int64_t active_deadline_ms;
    char *owner_uid;  /* uid of metadata.ownerReferences[controller=true]; NULL if none */
    char *owner_kind; /* ...its kind ("Job") and name; NULL if none */
    char *owner_name;
    /* annotation fairshare.dev/preemption-notice: how long before its
     * eviction the pod wants to be told (uncapped; the controller caps it
     * with reclaim.maxPreemptionNotice); 0 if none */
    int64_t preemption_notice_ms;
    bool requeue_opt_out;  /* label or annotation fairshare.dev/requeue: "false" */
    int32_t requeue_count; /* annotation fairshare.dev/requeue-count; 0 if none */
    int64_t grace_s;       /* spec.terminationGracePeriodSeconds; -1 if absent */
    int64_t start_ms;      /* status.startTime */
    /* When its containers stopped: the latest
     * status.containerStatuses[].state.terminated.finishedAt, when every
     * container listed there has terminated (a Succeeded or Failed pod, or
     * a deleted one whose kubelet reported the stop); 0 otherwise. Whole
     * seconds, as the kubelet writes it. */
    int64_t finished_ms;
    bool scheduled_condition_false; /* PodScheduled=False is already set */
    char *scheduled_reason;         /* its reason, to avoid rewriting it */
    bool disruption_target;         /* DisruptionTarget=True condition */
    char *disruption_reason;        /* its reason (NULL: none) */
    int64_t disruption_since_ms;    /* its lastTransitionTime (0: none or malformed) */
    struct fair_label *node_selector;
    size_t nnode_selector;
    struct fair_toleration *tolerations;
    size_t ntolerations;
    /* spec.affinity.nodeAffinity: one allocation (struct, terms,
     * requirements, values, strings) owned by the pod, packed or not;
     * NULL when absent. */
    struct fair_node_affinity *node_affinity;
    /* Requests of resources other than GPU, CPU and memory, and the host
     * ports of spec.containers[].ports; both in the one allocation
     * sched_extra, owned by the pod (NULL when there are none). */
    struct fair_scalar *scalars;
    size_t nscalars;
    struct fair_host_port *host_ports;
    size_t nhost_ports;
    void *sched_extra;
    /* metadata.labels, all of them (packed with the pod), and the required
     * pod affinity and anti-affinity (one allocation owned by the pod;
     * NULL when none). */
    struct fair_label *labels;
    size_t nlabels;
    struct fair_pod_affinity *pod_affinity;
    /* spec.topologySpreadConstraints, DoNotSchedule ones then (nspread_soft)
     * ScheduleAnyway ones: one allocation owned by the pod (NULL when
     * none). */
    struct fair_spread *spread;
    size_t nspread;
    size_t nspread_soft;
    /* Any decode problem that should be told to the user (bad annotation
     * value, ...); NULL when the pod is fine. */
    char *problem;
    /* annotation fairshare.dev/gpu-slot: 0..63 plus one; 0 when absent or
     * not such a number. */
    int8_t gpu_slot1;
    /* annotation fairshare.dev/reserved-device (reservation pods): a
     * device name of [A-Za-z0-9_.:-], at most FAIR_RESERVED_DEVICE_MAX
     * characters; NULL when absent or not such a name. */
    char *reserved_device;
    /* label fairshare.dev/reservation: "true" */
    bool reservation;
    /* annotation fairshare.dev/gpu-memory in bytes (> 0); 0 if none. The
     * snapshot turns it into a fraction (docs/fractions.md). */
    int64_t gpu_memory_bytes;
    /* The PersistentVolumeClaims its volumes use, in spec.volumes order:
     * persistentVolumeClaim.claimName, and "<pod>-<volume>" for a generic
     * ephemeral volume (the claim its controller creates). One allocation
     * (claims_mem, the array then the strings) owned by the pod, packed
     * or not; NULL when none. */
    const char *const *claims;
    size_t nclaims;
    void *claims_mem;
    /* Set by fair_kpod_decode(): the struct, its arrays and its strings
     * are one allocation (fair_kpod_free() frees just that). A pod built
     * by hand leaves it false and owns each string and array. */
    bool packed;
};

/* A PersistentVolumeClaim, as the volume binding of a pod reads it. */
struct fair_kpvc {
    struct fair_kmeta meta;
    char *key;           /* "namespace/name", for lookups */
    char *volume_name;   /* spec.volumeName; NULL: not bound to a volume */
    char *storage_class; /* spec.storageClassName; NULL: absent */
    bool bound;          /* status.phase Bound */
    bool lost;           /* status.phase Lost */
    char *selected_node; /* annotation volume.kubernetes.io/selected-node */
    /* What a static volume must offer (findMatchingVolume): */
    int64_t request_bytes;       /* spec.resources.requests.storage; 0: none */
    uint8_t access_modes;        /* spec.accessModes, FAIR_KACCESS_* bits */
    bool block;                  /* spec.volumeMode Block (default Filesystem) */
    struct fair_label *selector; /* spec.selector.matchLabels (owned) */
    size_t nselector;
    /* spec.selector.matchExpressions (In, NotIn, Exists, DoesNotExist),
     * ANDed, as the one required term of a node affinity (one allocation);
     * NULL: none. */
    struct fair_node_affinity *selector_exprs;
    char *problem; /* a selector or field Fairshare does not read */
};

/* PersistentVolume access modes, as bits. */
#define FAIR_KACCESS_RWO 1u
#define FAIR_KACCESS_ROX 2u
#define FAIR_KACCESS_RWX 4u
#define FAIR_KACCESS_RWOP 8u

/* A PersistentVolume: where it can be reached. */
struct fair_kpv {
    struct fair_kmeta meta;
    /* spec.nodeAffinity.required as required node affinity terms (one
     * allocation); NULL: reachable from every node. */
    struct fair_node_affinity *node_affinity;
    char *problem; /* a nodeAffinity over the limits or of a bad shape */
    /* For static binding (findMatchingVolume): */
    char *storage_class; /* spec.storageClassName; NULL: none */
    char *claim_ns;      /* spec.claimRef; NULL: not claimed */
    char *claim_name;
    char *claim_uid;           /* NULL: pre-bound by name only */
    int64_t capacity_bytes;    /* spec.capacity.storage */
    uint8_t access_modes;      /* FAIR_KACCESS_* bits */
    bool block;                /* spec.volumeMode Block */
    bool available;            /* status.phase Available */
    struct fair_label *labels; /* metadata.labels (owned) */
    size_t nlabels;
};

/* A StorageClass: when its volumes are bound. */
struct fair_ksc {
    struct fair_kmeta meta;
    char *provisioner;
    bool wait_for_first_consumer; /* volumeBindingMode WaitForFirstConsumer */
    /* allowedTopologies as required node affinity terms (In only); NULL:
     * any node. */
    struct fair_node_affinity *allowed;
    char *problem;
};

struct fair_knode {
    struct fair_kmeta meta;
    struct fair_resources allocatable;
    int gpu_count;
    int max_pods;
    char *gpu_model; /* label nvidia.com/gpu.product */
    bool unschedulable;
    bool ready; /* Ready condition True */
    struct fair_label *labels;
    size_t nlabels;
    struct fair_taint *taints;
    size_t ntaints;
    /* status.allocatable of the other resources: one allocation. */
    struct fair_scalar *scalars;
    size_t nscalars;
};

/* A v1 Namespace: its labels, for pod (anti-)affinity terms with a
 * namespaceSelector (at most FAIR_DECODE_MAX_ITEMS, as a node's). */
struct fair_knamespace {
    struct fair_kmeta meta;
    struct fair_label *labels;
    size_t nlabels;
};

/* Most distinct other resources kept per pod and per node, and host ports
 * per pod: a pod over them is rejected with a message. */
/* The longest spec.activeDeadlineSeconds kept (10 years; longer counts
 * as this). */
#define FAIR_MAX_DEADLINE_S ((int64_t)315360000)
#define FAIR_POD_MAX_SCALARS 16
#define FAIR_POD_MAX_HOST_PORTS 64
#define FAIR_NODE_MAX_SCALARS 64

/* spec of a fairshare.dev Project or Queue, shared parts. Unset
 * guaranteed is 0; unset limit is FAIR_UNLIMITED. */
/* spec.reclaimUpTo of a Project or Queue. */
enum fair_kreclaim {
    FAIR_KRECLAIM_UNSET = 0,  /* the parent's, then the controller's default */
    FAIR_KRECLAIM_FAIR_SHARE, /* "FairShare" */
    FAIR_KRECLAIM_GUARANTEE,  /* "Guarantee" */
};

/* ---- issue 15 items 1-2: GPU model quotas and lending limits ---- */
/* One `gpu/<model>` key of spec.guaranteed, spec.limit or
 * spec.lendingLimit: the model as written (a node's nvidia.com/gpu.product
 * or an alias of the controller config), in milli-GPU. */
#define FAIR_KQUOTA_MAX_MODELS 16
#define FAIR_KMODEL_MAX 63 /* a label value */
struct fair_kmodel_quota {
    char model[FAIR_KMODEL_MAX + 1];
    int64_t guaranteed; /* 0 when absent */
    int64_t limit;
    int64_t lending_limit;
    bool has_limit, has_lending_limit;
};

struct fair_kquota {
    struct fair_resources guaranteed;
    struct fair_resources limit;
    int64_t over_quota_weight;   /* default 1 */
    int32_t over_quota_priority; /* default 0 */
    enum fair_kreclaim reclaim_up_to;
    /* issue 15: spec.lendingLimit (bit r of lending_set: key r given) and
     * the gpu/<model> keys of guaranteed, limit and lendingLimit. */
    struct fair_resources lending_limit;
    uint8_t lending_set;
    struct fair_kmodel_quota models[FAIR_KQUOTA_MAX_MODELS];
    size_t nmodels;
};

/* ---- Time-based quota (issue 15 items 3-5; kube/timequota.c) ----
 * spec.usageHalfLife and spec.budget (Projects), spec.schedule (Projects
 * and Queues). */
#define FAIR_KWINDOW_MAX 32
struct fair_kwindow {
    char name[64];        /* spec.schedule[i].name, else "window-<i>" */
    uint8_t days;         /* bit d: weekday d (0 = Sunday) */
    int16_t start_min;    /* minutes after local midnight, 0..1439 */
    int16_t end_min;      /* 1..1440; below start_min: ends the next day */
    char time_zone[65];   /* IANA name; "": the controller's timeZone */
    uint8_t g_set, l_set; /* bit r: guaranteed / limit of resource r given */
    struct fair_resources guaranteed, limit;
    int64_t weight; /* overQuotaWeight; 0: the spec's */
};
enum fair_kbudget_period {
    FAIR_KBUDGET_NONE = 0,
    FAIR_KBUDGET_DAY,
    FAIR_KBUDGET_WEEK,
    FAIR_KBUDGET_MONTH
};
enum fair_kbudget_action { FAIR_KBUDGET_OVER_QUOTA_ONLY = 0, FAIR_KBUDGET_BLOCK };
struct fair_ktime {
    int64_t usage_half_life_ms; /* -1: unset (the controller's default); 0: off */
    int64_t budget_milli_hours; /* GPU-hours x 1000; period NONE: no budget */
    enum fair_kbudget_period budget_period;
    enum fair_kbudget_action budget_action;
    struct fair_kwindow *windows;
    size_t nwindows;
};
void fair_ktime_free(struct fair_ktime *t);

/* A condition of a Project's or Queue's status as the server holds it: the
 * controller keeps its lastTransitionTime across a restart while the
 * status stays the same. */
#define FAIR_KCOND_MAX 4
struct fair_kcond {
    char type[24];
    bool status;      /* "True" */
    int64_t since_ms; /* lastTransitionTime */
};

struct fair_kproject {
    struct fair_kmeta meta;
    struct fair_ktime *time; /* NULL: none of the fields above */
    struct fair_kquota quota;
    char *team; /* defaults to the name */
    char *cost_center;
    char **namespaces;
    size_t nnamespaces;
    char *default_queue;
    /* spec.fractions.shareAcrossProjects: its fractions may share a GPU
     * with those of other projects that set it too. */
    bool share_fractions;
    char *problem; /* validation failure, reported as an Invalid condition */
    struct fair_kcond conds[FAIR_KCOND_MAX]; /* status.conditions that parse */
    size_t nconds;
    /* status.budget as the server holds it (a controller wrote it): the
     * alert level its state stands for (80 Warning, 100 Exhausted, else 0)
     * and its periodStart (ms; 0: none or malformed). */
    int budget_level_seen;
    int64_t budget_from_seen_ms;
};

struct fair_kqueue {
    struct fair_kmeta meta;
    struct fair_ktime *time; /* spec.schedule only; NULL: none */
    struct fair_kquota quota;
    char *project;
    int64_t reclaim_min_runtime_ms;
    int64_t aging_half_life_ms; /* spec.agingHalfLife; 0: off */
    /* spec.fractions.isolation: required: its fractions go only to nodes
     * labelled fairshare.dev/gpu-isolation: hami-core. */
    bool fractions_isolated;
    char *problem;
    struct fair_kcond conds[FAIR_KCOND_MAX]; /* status.conditions that parse */
    size_t nconds;
};

/* A PodGroup: the scheduler-plugins coscheduling plugin's
 * (scheduling.x-k8s.io/v1alpha1) or Volcano's (scheduling.volcano.sh/v1beta1).
 * Its pods are one gang of at least min_member pods. */
enum fair_kpodgroup_flavor { FAIR_KPG_COSCHED = 0, FAIR_KPG_VOLCANO = 1 };

struct fair_kpodgroup {
    struct fair_kmeta meta;
    enum fair_kpodgroup_flavor flavor;
    int32_t min_member;                  /* spec.minMember, 1 when absent or 0 */
    struct fair_resources min_resources; /* spec.minResources: nvidia.com/gpu, cpu, memory */
    int64_t schedule_timeout_s;          /* spec.scheduleTimeoutSeconds; 0: none */
    /* status, as last written (by us or another scheduler) */
    char *phase;
    int32_t running, succeeded, failed;
    char *condition_reason; /* Volcano: the Unschedulable condition's reason; NULL: none */
    char *problem;          /* a spec value that cannot be used; NULL: fine */
};

void fair_kmeta_release(struct fair_kmeta *m);
void fair_kpod_free(struct fair_kpod *p);
void fair_knode_free(struct fair_knode *n);
void fair_knamespace_free(struct fair_knamespace *n);
void fair_kproject_free(struct fair_kproject *p);
void fair_kqueue_free(struct fair_kqueue *q);
void fair_kpodgroup_free(struct fair_kpodgroup *g);
void fair_kpvc_free(struct fair_kpvc *c);
void fair_kpv_free(struct fair_kpv *v);
void fair_ksc_free(struct fair_ksc *c);

#endif
