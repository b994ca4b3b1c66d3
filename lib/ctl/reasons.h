/* Why a pod is pending, in words for people: the short reason used for the
 * PodScheduled=False condition and the FailedScheduling Event, and a
 * message with the numbers behind it, so that `kubectl describe pod`
 * answers "why is my job pending?".
 *
 * A "why" code is either an engine reason (enum fair_pending_reason, 0..15)
 * or FAIR_CTL_WHY_CTL + a controller reason (enum fair_ctl_reason). */
#ifndef FAIR_CTL_REASONS_H
#define FAIR_CTL_REASONS_H

#include <stddef.h>

#include "ctl/snapshot.h"
#include "engine/engine.h"

#define FAIR_CTL_WHY_CTL 16
/* No node fits a pod that is within its queue's guarantee or fair share
 * and whose room no queue above its own fair share holds: a node that
 * does not exist yet would let it run. Its condition reason is
 * kube-scheduler's "Unschedulable", the one cluster-autoscaler and
 * Karpenter act on; the message is NoNodeFits' (docs/operations.md,
 * "Cluster autoscalers"). */
#define FAIR_CTL_WHY_UNSCHEDULABLE 64

/* CamelCase reason for the condition ("OverLimit", "WaitingForReclaim",
 * "NoNodeFits", "NamespaceNotAllowed", ...). Static. */
const char *fair_ctl_why_reason(int why);

/* The message for pending pod `pod` (snapshot index) of snapshot s after
 * engine result r; `why` is r->pending_reasons[pod]. Writes at most n
 * bytes into out. */
void fair_ctl_pending_message(const struct fair_ctl_snapshot *s, const struct fair_result *r,
                              size_t pod, char *out, size_t n);

/* The reason to show for pending pod `pod`: the engine's, except that a
 * pod whose queue is still owed guaranteed GPUs while victims terminate is
 * "waiting for reclaim" rather than "no node fits" (the engine holds back
 * new victims until the room of terminating ones is free), and that "no
 * node fits" within the guarantee or fair share, when no queue above its
 * fair share holds the room, is FAIR_CTL_WHY_UNSCHEDULABLE. */
int fair_ctl_effective_why(const struct fair_ctl_snapshot *s, const struct fair_result *r,
                           size_t pod);

/* The status Fairshare writes back to a PodGroup whose pods it schedules,
 * as the coscheduling plugin and Volcano write theirs (docs/controller.md,
 * "PodGroups"). binds: its pods bound this cycle (not yet counted). */
struct fair_ctl_pg_status {
    const char *phase; /* static */
    int32_t running, succeeded, failed;
    /* Volcano only: one condition, "Scheduled" or "Unschedulable" (True),
     * with its reason (static); the message is the caller's. */
    const char *cond_type, *cond_reason;
};
void fair_ctl_podgroup_status(const struct fair_kpodgroup *g, const struct fair_ctl_pg_count *n,
                              int32_t binds, struct fair_ctl_pg_status *out);

/* Message for a pod the snapshot rejected. */
void fair_ctl_rejected_message(const struct fair_ctl_rejected *rj, char *out, size_t n);

#endif
