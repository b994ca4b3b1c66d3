/* Building the engine's snapshot from the informer stores: a pure function
 * from the cached Kubernetes objects (plain structs of kube/objects.h), the
 * controller's in-flight operations and "now" to a struct fair_snapshot.
 * No I/O and no clock, so it is unit-tested with tables of objects.
 *
 * What it decides:
 *  - which pods take part: ours (spec.schedulerName == the configured name)
 *    pending or bound; others only when bound to a node and not finished
 *    (queue -1: they use capacity, nothing else);
 *  - each of our pods' queue: label fairshare.dev/queue, else the
 *    defaultQueue of the Project whose spec.namespaces holds the pod's
 *    namespace; the pod may use the queue only if its namespace is in the
 *    queue's project's namespaces (isolation);
 *  - the GPU request: whole GPUs from nvidia.com/gpu, or the fraction of
 *    annotation fairshare.dev/gpu-fraction, or the memory of annotation
 *    fairshare.dev/gpu-memory as a fraction of the smallest GPU any node
 *    reports (label nvidia.com/gpu.memory, MiB), rounded up, for a pending
 *    pod, and of its own node's GPU for a bound one;
 *  - reservation pods (see struct fair_ctl_reservation), and fractions'
 *    device from annotation fairshare.dev/gpu-slot when reservations are on;
 *  - a pending fraction of a queue with spec.fractions.isolation: required
 *    may go only to nodes labelled fairshare.dev/gpu-isolation: hami-core
 *    (added to its node selector);
 *  - the devices of bound pods: annotation fairshare.dev/gpu-devices, else
 *    the lowest devices no other pod holds (pods placed by another
 *    scheduler carry no annotation);
 *  - overlays from the controller: a bind in flight makes the pod BOUND on
 *    its target; an eviction in flight makes it terminating; a pod whose
 *    eviction a PDB refused is protected (not a victim) for a while;
 *  - a bound pod of ours with a charge (fixed when it was bound) is
 *    charged by it, whatever its labels and annotations say now: queue,
 *    preemptible, GPU request, gang, devices. A charged queue that no
 *    longer exists (or is invalid) becomes a queue of the snapshot's own,
 *    under the project "(deleted)": no guarantee, the lowest over-quota
 *    tier, so its pods stay charged and are the first to be reclaimed;
 *  - a device annotation is honoured only where the controller wrote it:
 *    from the charge, or, for a pod of ours bound before any charge was
 *    known, when it parses and names exactly as many devices as the pod
 *    asks for (else it is listed in devices_ignored); pods of other
 *    schedulers get the lowest free devices, whatever they claim.
 * Our pending pods that cannot take part (unknown queue, namespace not
 * allowed, bad annotations, invalid queue) are listed in `rejected` with a
 * reason and a message, for the Event and the PodScheduled condition.
 *
 * Ownership: every input is borrowed. The result borrows strings from the
 * input objects, so it is valid only while they are; it is released with
 * fair_ctl_snapshot_release(). */
#ifndef FAIR_CTL_SNAPSHOT_H
#define FAIR_CTL_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/error.h"
#include "ctl/config.h"
#include "ctl/index.h"
#include "engine/engine.h"
#include "ctl/podmem.h"
#include "ctl/volumes.h"
#include "kube/objects.h"

/* The project of the snapshot's queues for charges whose queue is gone. */
#define FAIR_CTL_DELETED_PROJECT "(deleted)"

/* Reasons the controller finds before the engine runs. */
enum fair_ctl_reason {
    FAIR_CTL_REASON_NONE = 0,
    FAIR_CTL_REASON_UNKNOWN_QUEUE,         /* no such queue, or none named */
    FAIR_CTL_REASON_NAMESPACE_NOT_ALLOWED, /* isolation */
    FAIR_CTL_REASON_INVALID_QUEUE,         /* the queue or its project is invalid */
    FAIR_CTL_REASON_BAD_POD,               /* bad annotation or request */
    FAIR_CTL_REASON_PODGROUP_NOT_FOUND,    /* its PodGroup does not exist (yet) */
    FAIR_CTL_REASON_BUDGET_EXHAUSTED,      /* its project's budget is spent, action block */
    FAIR_CTL_REASON_VOLUME,                /* a claim is not ready for it (ctl/volumes.h) */
};

/* Overlay of one pod, found by UID through the lookup callback. */
enum fair_ctl_overlay_kind {
    FAIR_CTL_OVERLAY_NONE = 0,
    FAIR_CTL_OVERLAY_BINDING,   /* bind in flight: node + devices */
    FAIR_CTL_OVERLAY_EVICTING,  /* eviction in flight or accepted, or under notice */
    FAIR_CTL_OVERLAY_PROTECTED, /* not a victim (a PDB refused it) */
    /* Its claims were given node and their volumes are being made: it
     * counts as bound there (node + devices); as a victim, the controller
     * ends the hold. */
    FAIR_CTL_OVERLAY_PROVISIONING,
};

struct fair_ctl_overlay {
    enum fair_ctl_overlay_kind kind;
    const char *node;     /* BINDING, PROVISIONING */
    uint64_t gpu_devices; /* BINDING, PROVISIONING */
    /* Whatever the kind: a pending pod's held node (NULL: none) and since
     * when (0: none), and how often the pod's lineage was evicted. */
    const char *hold_node;
    int64_t hold_since_ms;
    int32_t evictions;
    /* EVICTING: the eviction waits for a preemption notice (fair_pod.noticed). */
    bool noticed;
    /* Pending: its room was held while its claims' volumes were made,
     * until volumeBindTimeout; while a claim names that node, it waits for
     * the volume instead of holding the room again. */
    bool volume_hold_expired;
    /* A bound pod of ours: what it is charged as, fixed at bind (NULL: not
     * known yet; then its labels and annotations are read, once). */
    const struct fair_ctl_charge *charge;
};

/* The reason of the DisruptionTarget condition the controller sets on a
 * victim it tells of its eviction (kube-scheduler's reason). */
#define FAIR_CTL_EVICTION_REASON "PreemptionByScheduler"

/* Whether pod k carries that condition, True: told of its eviction by this
 * process or by one before it. */
bool fair_ctl_told_of_eviction(const struct fair_kpod *k);

/* Returns the overlay of pod (kind NONE when none); pod is borrowed. vol
 * is the snapshot's volume index (claims, volumes, classes), complete when
 * the overlay is asked. */
typedef void (*fair_ctl_overlay_fn)(void *ctx, const struct fair_ctl_volumes *vol,
                                    const struct fair_kpod *pod, struct fair_ctl_overlay *out);

struct fair_ctl_snapshot_input {
    const char *scheduler_name;
    int64_t now_ms;
    /* Reclaim policy (controller config; see struct fair_snapshot):
     * reclaim_up_to is the default of Projects and Queues that set none. */
    enum fair_reclaim_mode reclaim_up_to;
    int32_t over_quota_threshold_pct;
    int64_t over_quota_min_runtime_ms;
    int32_t max_evictions;
    int64_t hold_timeout_ms;
    int64_t lend_max_runtime_ms; /* reclaim.lendMaxRuntime; 0: off */
    /* The smallest fairshare.dev/gpu-fraction accepted, milli-GPU
     * (fractions.minimum); 0: any fraction above 0. */
    int64_t min_fraction_milli;
    /* Namespace of the reservation pods (fractions.reservations); NULL:
     * reservations are off, and no pod is read as one. */
    const char *reservation_namespace;
    /* Bound GPU pods of other schedulers in a Project's namespaces are
     * charged to its defaultQueue, not preemptible
     * (quota.chargeOtherSchedulers). */
    bool charge_other_schedulers;
    const struct fair_knode *const *nodes;
    size_t nnodes;
    const struct fair_kproject *const *projects;
    size_t nprojects;
    const struct fair_kqueue *const *queues;
    size_t nqueues;
    const struct fair_kpod *const *pods;
    size_t npods;
    /* Namespaces (their labels: pod (anti-)affinity terms with a
     * namespaceSelector); may be NULL. A pod whose namespace is not among
     * them has no namespace labels. */
    const struct fair_knamespace *const *namespaces;
    size_t nnamespaces;
    fair_ctl_overlay_fn overlay; /* may be NULL */
    void *overlay_ctx;
    /* Nodes that hold a pod the controller could not read (too big, or not
     * decodable; the informer's unreadable set): what that pod holds is
     * unknown, so the node takes no new pods (it counts as unschedulable).
     * Names borrowed; may be NULL. */
    const char *const *full_nodes;
    size_t nfull_nodes;
    /* PodGroups of both flavors (kube/objects.h), and whether each flavor's
     * are known (its CRD served and its informer synced; index: enum
     * fair_kpodgroup_flavor). A pod of ours in a PodGroup is a gang member:
     * gang key "namespace/podgroup", gang_size its minMember; the PodGroup
     * wins over fairshare.dev/gang annotations. A pending pod whose
     * PodGroup is not found is rejected (PODGROUP_NOT_FOUND) and waits. */
    /* issue 15: GPU model aliases of the controller config (gpuModels):
     * a quota's gpu/<alias> and a pod's fairshare.dev/gpu-model <alias>
     * mean the product. May be NULL. */
    const struct fair_ctl_gpu_alias *gpu_aliases;
    size_t ngpu_aliases;
    const struct fair_kpodgroup *const *podgroups;
    size_t npodgroups;
    bool podgroups_known[2];
    /* Time-based quota (ctl/tqstate.h), per input project or queue, in
     * input order; each array may be NULL (none):
     *  - *_quota: the spec in force now (schedule window, spent budget),
     *    used instead of the object's own quota;
     *  - *_invalid: non-NULL makes the object invalid with that message;
     *  - project_usage: decayed GPU usage (fair_project.usage);
     *  - queue_usage: the same of each queue's own pods (fair_queue.usage);
     *  - project_hold: non-NULL rejects the project's pending pods
     *    (BUDGET_EXHAUSTED) with that message;
     *  - project_note: non-NULL is said first in its pending pods' messages. */
    const struct fair_kquota *project_quota;
    const struct fair_kquota *queue_quota;
    const char *const *project_invalid;
    const char *const *queue_invalid;
    const int64_t *project_usage;
    const int64_t *queue_usage;
    const char *const *project_hold;
    const char *const *project_note;
    /* Volumes (ctl/volumes.h): claims, volumes and storage classes; a
     * pending pod of ours with claims is placed where they can be
     * reached, or waits (VOLUME). May be NULL. */
    const struct fair_kpvc *const *pvcs;
    size_t npvcs;
    const struct fair_kpv *const *pvs;
    size_t npvs;
    const struct fair_ksc *const *scs;
    size_t nscs;
};

/* The pods of one PodGroup, by state. */
struct fair_ctl_pg_count {
    int32_t pending;   /* not bound, not finished */
    int32_t bound;     /* bound, not finished, not terminating */
    int32_t running;   /* bound and phase Running */
    int32_t succeeded; /* phase Succeeded */
    int32_t failed;    /* phase Failed */
};

/* A reservation pod (label fairshare.dev/reservation: "true" in the
 * reservation namespace, not ours): it holds one device of its node for
 * the fractions of slot (annotation fairshare.dev/gpu-slot). Charged to no
 * one: while a fraction (bound, or being bound) holds its slot, it counts
 * for nothing in the snapshot, as the fractions hold the device; while
 * none does (idle), it holds the whole device, as the device plugin still
 * gives it to the reservation until it is gone. */
struct fair_ctl_reservation {
    const struct fair_kpod *pod;
    int32_t node;  /* snapshot node index; -1: not bound or unknown node */
    int32_t slot;  /* 0..63; -1: no valid fairshare.dev/gpu-slot */
    bool idle;     /* no fraction holds its slot */
    bool finished; /* phase Succeeded or Failed (e.g. the kubelet refused it) */
};

struct fair_ctl_rejected {
    const struct fair_kpod *pod;
    enum fair_ctl_reason reason;
    char message[240];
};

struct fair_ctl_snapshot {
    struct fair_snapshot snap; /* what the engine gets */
    /* Snapshot index -> source object. */
    const struct fair_knode **knodes;
    const struct fair_kproject **kprojects;
    const struct fair_kqueue **kqueues;
    const struct fair_kpod **kpods;
    /* The input PodGroups (borrowed), per snapshot pod the index of the one
     * it names (-1: none; ours only; a charged pod's gang is its charge's
     * whatever this says), and per PodGroup its pods counted (any
     * scheduler's pods that name it, finished ones included). */
    const struct fair_kpodgroup *const *podgroups;
    size_t npodgroups;
    int32_t *pod_pg;
    struct fair_ctl_pg_count *pg_counts;
    /* Per input project/queue (input order): its index in the snapshot,
     * or -1 when left out, with the reason in *_problem ("" when none). */
    int32_t *project_index;
    char (*project_problem)[200];
    int32_t *queue_index;
    char (*queue_problem)[200];
    size_t ninput_projects, ninput_queues;
    /* Bound pods of a queue that are terminating (evicted or deleted). */
    size_t nterminating;
    /* Our pending pods that cannot take part. */
    struct fair_ctl_rejected *rejected;
    size_t nrejected;
    /* Bound pods of ours whose fairshare.dev/gpu-devices annotation was not
     * honoured (message says why); they were given devices by request. */
    struct fair_ctl_rejected *devices_ignored;
    size_t ndevices_ignored;
    /* Reservation pods (input order), when reservation_namespace is set. */
    struct fair_ctl_reservation *reservations;
    size_t nreservations;
    /* Queues the snapshot made for charges whose queue is gone: indices
     * nqueues_real..snap.nqueues-1, under project index phantom_project. */
    size_t nqueues_real;
    int32_t phantom_project;
    /* Per snapshot project: the input's project_note (borrowed; NULL). */
    const char **project_note;
    /* Name -> snapshot index, for the caller's convenience. */
    struct fair_ctl_index node_by_name;
    struct fair_ctl_index queue_by_name;
    /* Owned backing storage. */
    struct fair_node *nodes;
    struct fair_project *projects;
    struct fair_queue *queues;
    struct fair_pod *pods;
    char *strpool; /* gang keys "namespace/gang" */
    /* Node selectors the snapshot made (a pending fraction of a queue with
     * spec.fractions.isolation: required gets its own selector plus
     * fairshare.dev/gpu-isolation: hami-core); each owned. */
    struct fair_label **own_sel;
    size_t nown_sel;
    size_t strpool_len, strpool_cap;
    /* issue 15: the per-model quotas of the projects and queues. */
    struct fair_model_quota *mquotas;
    size_t nmquotas, mquotas_cap;
    /* Volumes: the indexes and the node affinities made for claims, and
     * per snapshot pod whether a claim waits for the node it goes to (the
     * controller then writes selected-node instead of binding). */
    struct fair_ctl_volumes vol;
    uint8_t *pod_select;
};

/* Builds *out (caller storage; zeroed first). Returns 0 or FAIR_ENOMEM /
 * FAIR_ERANGE; on failure *out is released. */
int fair_ctl_snapshot_build(const struct fair_ctl_snapshot_input *in, struct fair_ctl_snapshot *out,
                            struct fair_error *err);

void fair_ctl_snapshot_release(struct fair_ctl_snapshot *s);

/* Parses "0,3" into a device mask (devices < FAIR_MAX_GPUS_PER_NODE).
 * Returns FAIR_EINVAL when malformed. */
int fair_ctl_parse_devices(const char *s, uint64_t *mask);
/* Formats a mask as "0,3" into out (at most n bytes). */
void fair_ctl_format_devices(uint64_t mask, char *out, size_t n);

const char *fair_ctl_reason_str(enum fair_ctl_reason r);

/* A node's GPU memory in MiB from its label nvidia.com/gpu.memory (GPU
 * feature discovery's unit); 0 when absent or not a number. */
int64_t fair_ctl_node_gpu_mib(const struct fair_label *labels, size_t n);

/* A fairshare.dev/gpu-memory request (bytes) as milli-GPU of a GPU of
 * gpu_mib MiB: rounded up to the next thousandth, at least min_fraction;
 * -1 when gpu_mib <= 0 or the request is not below it. The snapshot
 * converts a pending pod through the smallest GPU any node reports (the
 * largest fraction it can be: what quota admission counts), a bound pod
 * and the bind's charge through the GPU of its node (docs/fractions.md,
 * "Asking for memory instead of a fraction"). */
int64_t fair_ctl_memory_milli(int64_t bytes, int64_t gpu_mib, int64_t min_fraction);

/* The gang name of snapshot pod i (its key without "namespace/"), as a
 * charge keeps it; NULL when the pod is in no gang. Borrowed. */
static inline const char *fair_ctl_snapshot_gang_name(const struct fair_ctl_snapshot *s, size_t i)
{
    const struct fair_pod *p = &s->snap.pods[i];
    if (!p->gang)
        return NULL;
    size_t nl = strlen(p->namespace_);
    return strncmp(p->gang, p->namespace_, nl) == 0 && p->gang[nl] == '/' ? p->gang + nl + 1
                                                                          : p->gang;
}

#endif
