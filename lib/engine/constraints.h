/* Scheduling constraints that kube-scheduler enforces beyond the node
 * selector and taints: required node affinity (the NodeAffinity plugin's
 * filter) and the preferred terms' score; resources other than GPU, CPU
 * and memory (NodeResourcesFit on extended resources, hugepages,
 * ephemeral storage); host ports (NodePorts); required inter-pod affinity
 * and anti-affinity (InterPodAffinity) and topology spread
 * (PodTopologySpread), both in interpod.c. Pure functions over the
 * engine's structs, plus a per-cycle state so that the common case (no pod
 * with constraints) costs nothing.
 *
 * Per-cycle state (struct fair_cons), built by fair_cons_new only when a
 * pending pod carries a constraint:
 *  - node affinity: pending pods whose node affinity is required fall into
 *    classes of identical affinities (pods of one Job carry the same one).
 *    A class's nodes (a bitset by node rank) are computed the first time
 *    one of its pods is placed, then reused: node labels do not change
 *    during a cycle, so a class's bitset never goes stale;
 *  - other resources: per node, what is free of each resource a pending
 *    pod asks for (allocatable minus the bound pods of every scheduler,
 *    terminating ones included);
 *  - host ports: per node, the ports its bound pods hold;
 *  - inter-pod affinity, anti-affinity and topology spread: interpod.h.
 * Binds made during the cycle (and a gang's rolled-back binds) change the
 * last two through fair_cons_commit. Evictions do not free them before the
 * pods are gone: reclaim never counts on them. */
#ifndef FAIR_ENGINE_CONSTRAINTS_H
#define FAIR_ENGINE_CONSTRAINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

/* Limits the decoder enforces on spec.affinity.nodeAffinity (a pod over
 * them is rejected with a message, never half-read). */
#define FAIR_AFFINITY_MAX_TERMS 64   /* per list: required, preferred */
#define FAIR_AFFINITY_MAX_REQS 64    /* matchExpressions + matchFields per term */
#define FAIR_AFFINITY_MAX_VALUES 256 /* values per requirement */
#define FAIR_AFFINITY_MAX_TOTAL 4096 /* values of the whole affinity */

/* Whether node n matches term t (labels.Selector and fields.Selector
 * semantics; an empty or invalid term matches nothing). */
bool fair_node_term_match(const struct fair_node_term *t, const struct fair_node *n);

/* Whether n passes a's required terms (true when a is NULL or has none
 * required). The pod's nodeSelector is checked by placement, ANDed. */
bool fair_node_affinity_match(const struct fair_node_affinity *a, const struct fair_node *n);

/* Whether a and b (either may be NULL) have the same required terms. */
bool fair_node_affinity_same(const struct fair_node_affinity *a,
                             const struct fair_node_affinity *b);

/* The preferred terms' score of n: the sum of the weights of the valid
 * terms it matches (0 for NULL). */
int64_t fair_node_affinity_score(const struct fair_node_affinity *a, const struct fair_node *n);

/* The value of label key in l[0..n) ("" for a NULL value); NULL when
 * absent. */
const char *fair_label_get(const struct fair_label *l, size_t n, const char *key);

/* Whether labels l[0..n) satisfy requirement r (labels.Requirement). */
bool fair_label_req_match(const struct fair_node_req *r, const struct fair_label *l, size_t n);

/* Syntax checks of labels.NewRequirement, for the decoder: a qualified
 * label key ("[dns-subdomain/]name", name 1-63 characters), a label value
 * (empty, or up to 63 characters of [A-Za-z0-9_.-] starting and ending
 * alphanumeric), and a base-10 int64 as Go's strconv.ParseInt reads it. */
bool fair_label_key_valid(const char *s);
bool fair_label_value_valid(const char *s);
bool fair_parse_int64(const char *s, int64_t *out);

/* Whether requirement r parses as Kubernetes parses it: label keys and
 * values valid; In and NotIn with values, Exists and DoesNotExist without;
 * Gt and Lt with exactly one integer; matchFields only In or NotIn with
 * exactly one value. */
bool fair_node_req_valid(const struct fair_node_req *r);

struct fair_cons;

/* The cycle's constraint cache for snap, whose node i has rank rank_of[i]
 * (the placement's order). *out is NULL when no pending pod
 * carries a constraint (nothing allocated). bytes (may be NULL) grows by
 * what is allocated. Returns 0 or FAIR_ENOMEM. */
int fair_cons_new(struct fair_cons **out, const struct fair_snapshot *snap, const int32_t *rank_of,
                  size_t *bytes);
void fair_cons_free(struct fair_cons *c);

/* Whether pod's constraints allow the node of rank rank, snapshot index
 * node. c may be NULL, and pod need not be one of the snapshot's pods:
 * then the terms are evaluated directly. */
bool fair_cons_node_ok(struct fair_cons *c, const struct fair_snapshot *snap, int32_t rank,
                       int32_t node, const struct fair_pod *pod);

/* Reclaim of a MIG pod (docs/fractions.md, "MIG"): with on, the node
 * checks skip the pod's nvidia.com/mig-* resources, which reclaim counts
 * itself with the victims' instances freed (reclaim.c, mig_fits); what
 * is free of resource name on node rank now (bound pods of every
 * scheduler and this cycle's binds taken). c may be NULL (then 0). */
void fair_cons_defer_mig(struct fair_cons *c, bool on);
int64_t fair_cons_scalar_free(const struct fair_cons *c, int32_t rank, const char *name);

/* Takes (sign 1) or gives back (sign -1) pod's resources and host ports
 * on node rank. c may be NULL. */
void fair_cons_commit(struct fair_cons *c, int32_t rank, const struct fair_pod *pod, int sign);

/* Whether host ports a and b conflict (HostPortInfo.CheckConflict). */
bool fair_host_port_conflict(const struct fair_host_port *a, const struct fair_host_port *b);

/* Whether pod carries constraints of this file (the placement's no-fit
 * cache and reclaim's shortcuts do not apply to such pods). */
static inline bool fair_cons_constrained(const struct fair_pod *pod)
{
    return (pod->node_affinity && pod->node_affinity->required) || pod->nscalars > 0 ||
           pod->nhost_ports > 0 ||
           (pod->pod_affinity && (pod->pod_affinity->naffinity || pod->pod_affinity->nanti)) ||
           pod->nspread > 0;
}

/* The same in this cycle: any pod may be constrained by the anti-affinity
 * of pods already placed (c may be NULL). */
bool fair_cons_pod_constrained(const struct fair_cons *c, const struct fair_pod *pod);

/* ---- scores --------------------------------------------------------------
 * Preferred terms rank the nodes that GPU packing leaves equal (the nodes
 * of one packing bucket that fit: placement.c): kube-scheduler's Score and
 * NormalizeScore of NodeAffinity, InterPodAffinity and PodTopologySpread
 * (ScheduleAnyway), each normalised to 0..100 over those candidates and
 * weighted 2 as in the default profile. */

#define FAIR_MAX_NODE_SCORE 100
#define FAIR_SCORE_WEIGHT 2 /* each of the three plugins' default weight */

/* NodeAffinity's NormalizeScore (DefaultNormalizeScore, not reversed):
 * s[i] * 100 / max(s), all 0 when max is 0. */
void fair_score_normalize_max(int64_t *s, size_t n);
/* InterPodAffinity's: (s[i] - min) * 100 / (max - min), 0 when equal. */
void fair_score_normalize_minmax(int64_t *s, size_t n);
/* PodTopologySpread's: ignored candidates 0; otherwise 100 when the
 * highest score is 0, else 100 * (max + min - s[i]) / max (fewer
 * matching pods, higher score). */
void fair_score_normalize_spread(int64_t *s, const bool *ignored, size_t n);

/* Whether the preferred terms score pod's nodes: its own preferred node
 * or pod affinity or ScheduleAnyway spreads, or the terms of placed pods
 * that match it. c may be NULL (then false). */
bool fair_cons_scored(struct fair_cons *c, const struct fair_pod *pod);

/* A buffer of the snapshot's node count, for the candidates' ranks. */
int32_t *fair_cons_candidates(struct fair_cons *c);

/* The index in ranks[0..n) of the candidate with the highest weighted
 * sum of normalised scores; ties, and out of memory: the first. */
size_t fair_cons_best(struct fair_cons *c, const struct fair_pod *pod, const int32_t *ranks,
                      size_t n);

#endif
