/* Volumes: where a pod's PersistentVolumeClaims let it run, as
 * kube-scheduler's VolumeBinding plugin reads them (docs/engine.md,
 * "Volumes"). Pure, like the snapshot: from the informers' claims,
 * volumes and storage classes to, per pending pod,
 *  - wait, with a message (a claim missing or being deleted, an unbound
 *    claim of an Immediate class, ...);
 *  - or the node terms its bound volumes (spec.nodeAffinity) and its
 *    unbound WaitForFirstConsumer claims' classes (allowedTopologies)
 *    allow, ANDed with the pod's own required node affinity;
 *  - and whether a claim waits for its node (selected-node): the
 *    controller then writes the chosen node on those claims instead of
 *    binding, as the volume binder does before its bind; a claim whose
 *    selected-node is already set (its provisioner is at work there) keeps
 *    the pod to that node, as kube-scheduler's FindPodVolumes does;
 *  - for an unbound claim of a WaitForFirstConsumer class without
 *    provisioner (static local volumes): the nodes where an Available
 *    volume matches it; the controller then prebinds the smallest one on
 *    the chosen node (spec.claimRef) instead of binding the pod; a claim
 *    with a volume prebound already keeps the pod where that volume is.
 *
 * Ownership: every input is borrowed; node affinities it makes are owned
 * by struct fair_ctl_volumes and live until fair_ctl_volumes_release(). */
#ifndef FAIR_CTL_VOLUMES_H
#define FAIR_CTL_VOLUMES_H

#include <stdbool.h>
#include <stddef.h>

#include "ctl/index.h"
#include "engine/engine.h"
#include "kube/objects.h"

/* The most node terms a pod's own and its volumes' terms make together
 * (their product); above it the pod waits with a message. */
#define FAIR_CTL_VOLUME_MAX_TERMS 64

struct fair_ctl_volumes {
    const struct fair_kpvc *const *pvcs;
    size_t npvcs;
    const struct fair_kpv *const *pvs;
    size_t npvs;
    const struct fair_ksc *const *scs;
    size_t nscs;
    struct fair_ctl_index pvc_by_key; /* "namespace/name" */
    struct fair_ctl_index pv_by_name;
    struct fair_ctl_index sc_by_name;
    /* Volumes by the claim their spec.claimRef names ("namespace/name",
     * the keys in claim_keys); pv_claim_next[i] is the next volume (input
     * order) naming the same claim as volume i, -1 at the end. */
    struct fair_ctl_index pv_by_claim;
    int32_t *pv_claim_next;
    char *claim_keys;
    void **owned; /* node affinities made here */
    size_t nowned, owned_cap;
    /* Static volumes handed out by fair_ctl_volumes_prebind() this cycle
     * (npvs entries): one volume never goes to two claims. */
    bool *pv_taken;
};

/* Indexes the inputs (borrowed). Returns 0 or FAIR_ENOMEM. */
int fair_ctl_volumes_init(struct fair_ctl_volumes *v, const struct fair_kpvc *const *pvcs,
                          size_t npvcs, const struct fair_kpv *const *pvs, size_t npvs,
                          const struct fair_ksc *const *scs, size_t nscs);
void fair_ctl_volumes_release(struct fair_ctl_volumes *v);

/* What pending pod k's claims say. */
struct fair_ctl_volume_verdict {
    bool wait; /* the pod waits: message says why */
    char message[240];
    /* The required node affinity to schedule it with: k's own, or one
     * made here (owned by v) with the volumes' terms ANDed in. */
    const struct fair_node_affinity *affinity;
    /* A claim waits for the node the pod goes to (selected-node). */
    bool select_node;
    /* A claim whose volume is on its way to a node already (its
     * selected-node, or a static volume prebound to it; the affinity keeps
     * the pod there), or NULL. */
    const struct fair_kpvc *selected_claim;
};

/* Resolves k's claims (k->nclaims > 0). Returns 0 or FAIR_ENOMEM. */
int fair_ctl_volumes_pod(struct fair_ctl_volumes *v, const struct fair_kpod *k,
                         struct fair_ctl_volume_verdict *out);

/* The claims of k that wait for a node: unbound, of a WaitForFirstConsumer
 * class with a provisioner, no selected-node yet (static claims, of a class
 * without provisioner, are fair_ctl_volumes_prebind()'s). Fills out (at most max);
 * returns the count. */
size_t fair_ctl_volumes_to_select(const struct fair_ctl_volumes *v, const struct fair_kpod *k,
                                  const struct fair_kpvc **out, size_t max);

/* The claims of k whose volume is on its way to node n: unbound, of a
 * WaitForFirstConsumer class, with a provisioner and selected-node n, or
 * without one and a volume prebound to them that n reaches (written before
 * a restart of the controller, or by another scheduler). Fills out (at
 * most max); returns the count. */
size_t fair_ctl_volumes_selected(const struct fair_ctl_volumes *v, const struct fair_kpod *k,
                                 const struct fair_node *n, const struct fair_kpvc **out,
                                 size_t max);

/* pv's spec.claimRef names claim c (a uid, when set, must be c's). */
bool fair_ctl_volume_claimed_by(const struct fair_kpv *pv, const struct fair_kpvc *c);

/* The first volume (input order) prebound to claim c (claimed by it and
 * not being deleted), or NULL. */
const struct fair_kpv *fair_ctl_volume_prebound(const struct fair_ctl_volumes *v,
                                                const struct fair_kpvc *c);

/* Claim name of namespace ns, or NULL. */
const struct fair_kpvc *fair_ctl_volume_claim(const struct fair_ctl_volumes *v, const char *ns,
                                              const char *name);

/* Volume name, or NULL. */
const struct fair_kpv *fair_ctl_volume(const struct fair_ctl_volumes *v, const char *name);

/* A static volume chosen for a claim (prebind: the controller sets the
 * volume's spec.claimRef to the claim; the PV controller then binds). */
struct fair_ctl_prebind {
    const struct fair_kpvc *claim;
    const struct fair_kpv *pv;
};

/* Whether static volume pv can serve claim c on node n (NULL: any node),
 * as the volume binder's findMatchingVolume reads it: Available and not
 * claimed, same StorageClass, capacity >= the request, the claim's access
 * modes among the volume's, same volume mode, the claim's selector
 * matches the volume's labels, and its node affinity matches n. */
bool fair_ctl_volume_matches(const struct fair_kpv *pv, const struct fair_kpvc *c,
                             const struct fair_node *n);

/* For pod k going to node n: per unbound claim of a WaitForFirstConsumer
 * class without provisioner, the smallest matching volume on n not yet
 * handed out this cycle (claims in order, as the binder does). All or
 * nothing: returns the count filled into out (0: k has no such claim), or
 * -1 when a claim finds no volume left or there are more than max such
 * claims (nothing is marked then). Claims with a volume prebound already
 * are skipped. The volumes returned are marked as handed out. */
int fair_ctl_volumes_prebind(struct fair_ctl_volumes *v, const struct fair_kpod *k,
                             const struct fair_node *n, struct fair_ctl_prebind *out, size_t max);

#endif
