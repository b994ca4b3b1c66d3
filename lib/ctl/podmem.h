/* What the controller remembers about individual pods between cycles, keyed
 * by UID: the operation it has in flight (a bind or an eviction, so that it
 * is never issued twice), a protection after a PodDisruptionBudget refused
 * an eviction, and what it last told the user (reason of the PodScheduled
 * condition and of the last Event, for rate limiting).
 *
 * Operation states of one pod (all transitions on the event loop):
 *   NONE --bind issued (fair_ctl_podmem_begin)--> BINDING
 *   BINDING --informer shows spec.nodeName, or the bind failed, or
 *             op_timeout passed (fair_ctl_podmem_end / _expire)--> NONE
 *   NONE --eviction issued--> EVICTING
 *   NONE --victim with a preemption notice chosen--> EVICTING with
 *             notice_due_ms set (the DisruptionTarget condition is written,
 *             the eviction not sent yet; op_start_ms is the due time, so
 *             op_timeout does not run during the notice)
 *   EVICTING with notice --notice elapsed: eviction sent, notice_due_ms 0
 *             --> EVICTING; --the pod it made room for is gone or placed
 *             (cancelled) --> NONE
 *   EVICTING --the pod is gone (fair_ctl_podmem_remove), the eviction
 *             failed, or op_timeout passed--> NONE
 *   NONE --the pod's claims were given its node (selected-node), so its
 *             room there is held while their volumes are made--> PROVISIONING
 *   PROVISIONING --the claims are bound (provision_ready: the pod is bound
 *             to the node in that cycle, as kube-scheduler's PreBind ends in
 *             its bind)--> BINDING; --a claim is gone or names another
 *             node, or volumeBindTimeout passed--> NONE
 * Invariant: a pod in BINDING or EVICTING gets no new bind or eviction; a
 * pod under notice is EVICTING, so the snapshot shows it terminating (its
 * room counts for the pod it was chosen for, and it is never chosen
 * again).
 *
 * For a bound pod of ours it keeps what the pod is charged as (queue,
 * project, preemptible, GPU request, gang, devices), fixed when the
 * controller bound it (or, for a pod bound before this process, read from
 * the ledger's open interval, else from the pod when first seen bound):
 * the pod's labels and annotations may be edited later by its owner, and
 * those edits change nothing.
 *
 * It also keeps, per pending pod, the node the engine holds for it (passed
 * back into the next snapshot), and per lineage (the pod's controller
 * owner, else the pod itself) how many of its pods were evicted, so that a
 * workload evicted again and again stops borrowing.
 *
 * Ownership: entries and their strings are owned by the table; pointers
 * returned are borrowed until the entry is removed. */
#ifndef FAIR_CTL_PODMEM_H
#define FAIR_CTL_PODMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/index.h"

#define FAIR_CTL_PODMEM_MAX ((size_t)4 << 20)
/* Lineages whose evictions are counted; past this, new ones are not. */
#define FAIR_CTL_LINEAGE_MAX ((size_t)1 << 16)

enum fair_ctl_op {
    FAIR_CTL_OP_NONE = 0,
    FAIR_CTL_OP_BINDING,
    FAIR_CTL_OP_EVICTING,
    FAIR_CTL_OP_PROVISIONING
};

struct fair_ctl_podmem_entry {
    char *uid;
    enum fair_ctl_op op;
    char *op_node;            /* BINDING, PROVISIONING: the target node */
    uint64_t op_devices;      /* BINDING, PROVISIONING: the devices given */
    int64_t op_start_ms;      /* monotonic */
    int64_t protect_until_ms; /* monotonic; 0: not protected */
    int64_t pdb_since_ms;     /* monotonic: first PDB refusal of the current run; 0: none */
    int64_t pdb_last_ms;      /* monotonic: the latest PDB refusal */
    int last_event_why;       /* FAIR_CTL_WHY_* of the last Event; -1: none */
    int64_t last_event_ms;    /* monotonic */
    int last_cond_why;        /* FAIR_CTL_WHY_* of the last condition written; -1 */
    int64_t last_cond_ms;
    bool ledger_open;      /* an interval is open in the ledger */
    bool mark_inflight;    /* the DisruptionTarget=True patch is not answered yet */
    bool unmark_due;       /* ...and a refused eviction wants it set back when it is */
    bool unmark_cancel;    /* ...because the notice was cancelled (not a PDB) */
    bool marked_here;      /* this process sent the pod a DisruptionTarget=True */
    bool stale_unmarked;   /* ...or set back one it found from before (unmark_stale) */
    int64_t notice_due_ms; /* EVICTING under notice: when the eviction goes (monotonic); 0 */
    int64_t notice_ms;     /* the notice given (counted in the grace period) */
    bool requeued;         /* this pod's requeue was created or decided against */
    bool told_devices;     /* a DevicesIgnored Event was sent */
    bool provision_ready;  /* PROVISIONING: its claims are bound; bind it this cycle */
    /* PROVISIONING: the pod's claims (by position, the first 16) seen
     * naming op_node; one seen so that names none now was given up on by
     * its provisioner. */
    uint16_t provision_seen;
    /* PROVISIONING: the highest resourceVersion the API server answered
     * our selected-node patches of its claims with (0: none known). A
     * claim newer than that which names no node was given up on too, even
     * if the watch never showed it naming the node (kube-scheduler's
     * assume cache compares resourceVersions so). */
    uint64_t provision_rv;
    /* A PROVISIONING op of this pod ended at volumeBindTimeout: while its
     * claims name that node, its room is not held again. */
    bool provision_expired;
    char *hold_node;       /* pending: the node the engine holds for it, or NULL */
    int64_t hold_since_ms; /* ...since (wall ms); 0: none */
    struct fair_ctl_charge {
        bool set;
        char *queue; /* by name: a queue deleted since keeps its pods charged */
        char *project;
        bool preemptible;
        int64_t gpu_milli; /* whole GPUs x 1000, or the fraction */
        char *gang;        /* the gang's name (its PodGroup's, else the annotation's), NULL: none */
        int32_t gang_size;
        uint64_t devices;
        /* fairshare.dev/preemption-notice as it was at bind (uncapped);
         * notice_set false: not fixed yet (a charge read from the ledger),
         * fixed from the pod when first seen. */
        bool notice_set;
        int64_t notice_ms;
    } charge;
};

struct fair_ctl_podmem {
    struct fair_ctl_podmem_entry **v;
    size_t n, cap;
    struct fair_ctl_index by_uid; /* uid -> position in v */
    size_t inflight;              /* entries with op != NONE */
    /* Evictions per lineage: keys owned here, counts by position. */
    char **lin_keys;
    int32_t *lin_count;
    size_t nlin, lin_cap, lin_cnt_cap;
    struct fair_ctl_index by_lineage;
};

void fair_ctl_podmem_init(struct fair_ctl_podmem *m);
void fair_ctl_podmem_release(struct fair_ctl_podmem *m);

/* The entry of uid, or NULL. Borrowed. */
struct fair_ctl_podmem_entry *fair_ctl_podmem_get(const struct fair_ctl_podmem *m, const char *uid);
/* The entry of uid, created when absent. NULL on FAIR_ENOMEM/ERANGE. */
struct fair_ctl_podmem_entry *fair_ctl_podmem_ensure(struct fair_ctl_podmem *m, const char *uid);
/* Starts an operation (node copied; may be NULL). Returns FAIR_EBUSY when
 * one is already in flight, FAIR_ENOMEM. */
int fair_ctl_podmem_begin(struct fair_ctl_podmem *m, const char *uid, enum fair_ctl_op op,
                          const char *node, uint64_t devices, int64_t now_ms);
/* Ends the operation of uid, if any. */
void fair_ctl_podmem_end(struct fair_ctl_podmem *m, const char *uid);
/* Ends operations older than timeout_ms (PROVISIONING ones older than
 * provision_timeout_ms, which marks them provision_expired); returns how
 * many. */
size_t fair_ctl_podmem_expire(struct fair_ctl_podmem *m, int64_t now_ms, int64_t timeout_ms,
                              int64_t provision_timeout_ms);
/* Forgets uid entirely (the pod is gone). */
void fair_ctl_podmem_remove(struct fair_ctl_podmem *m, const char *uid);
/* Ends every operation (leadership lost: another replica decides now). */
void fair_ctl_podmem_clear_ops(struct fair_ctl_podmem *m);

/* Sets (node non-NULL, copied) or clears the node held for pod uid, with
 * since_ms (kept without a node: the cooldown of a hold that timed out).
 * Returns 0 or FAIR_ENOMEM. */
int fair_ctl_podmem_set_hold(struct fair_ctl_podmem *m, const char *uid, const char *node,
                             int64_t since_ms);
/* Fixes what pod uid is charged as (strings copied; gang may be NULL);
 * a second call replaces it. Returns 0 or FAIR_ENOMEM. */
int fair_ctl_podmem_set_charge(struct fair_ctl_podmem *m, const char *uid, const char *queue,
                               const char *project, bool preemptible, int64_t gpu_milli,
                               const char *gang, int32_t gang_size, uint64_t devices);

/* Fixes the preemption notice of pod uid's charge (a charge must be set),
 * unless one is fixed already: the value at bind time stays. */
void fair_ctl_podmem_fix_notice(struct fair_ctl_podmem *m, const char *uid, int64_t notice_ms);

/* Counts one eviction of lineage (owner uid or pod uid). Returns 0,
 * FAIR_ENOMEM, or FAIR_ERANGE when FAIR_CTL_LINEAGE_MAX lineages are
 * counted already. */
int fair_ctl_podmem_count_eviction(struct fair_ctl_podmem *m, const char *lineage);
/* At start-up: lineage was evicted n times before (the ledger's preempted
 * intervals); its count becomes at least n. Returns as above. */
int fair_ctl_podmem_restore_evictions(struct fair_ctl_podmem *m, const char *lineage, int64_t n);
/* Evictions counted for lineage (0 when none). */
int32_t fair_ctl_podmem_evictions(const struct fair_ctl_podmem *m, const char *lineage);

#endif
