/* Required inter-pod affinity and anti-affinity, as kube-scheduler's
 * InterPodAffinity plugin filters (Kubernetes 1.24), and topology spread
 * (PodTopologySpread, DoNotSchedule), for constraints.c.
 * A node passes for pod P when:
 *  1. P's required affinity terms: the node has every term's topology key,
 *     and each term's domain (the nodes with the node's value of that key)
 *     holds a pod that matches all of P's affinity terms; when no pod
 *     anywhere matches them all, P may still go where the keys exist if P
 *     matches its own terms (the first pod of a group);
 *  2. P's required anti-affinity terms: no domain of the node holds a pod
 *     that matches the term;
 *  3. the existing pods' required anti-affinity terms: no pod in a domain
 *     of the node has a term that matches P;
 *  4. P's topology spread constraints (DoNotSchedule, PodTopologySpread):
 *     the node has every key, and per constraint the matching pods of P's
 *     namespace in the node's domain, plus P if it matches, exceed the
 *     fewest in any counted domain by maxSkew at most (counted: the nodes
 *     that pass P's node selector and node affinity and have every key).
 * "Pods" are the bound pods of every scheduler (terminating ones too) and
 * the pods bound earlier in the cycle.
 *
 * Per-cycle state: topology keys map node ranks to domain ids; terms with
 * the same content (and owner namespace where it matters) share one class
 * that counts matching pods per domain. A class for the pending pods' own
 * terms is counted on first use; the classes of anti-affinity terms of
 * pods that are or may be bound count their owners. Binds of the cycle
 * (fair_interpod_commit) update both. */
#ifndef FAIR_ENGINE_INTERPOD_H
#define FAIR_ENGINE_INTERPOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

/* Whether labels l[0..n) match selector s (metav1.LabelSelector). */
bool fair_label_selector_match(const struct fair_label_selector *s, const struct fair_label *l,
                               size_t n);

/* Whether term t, owned by a pod of namespace owner_ns, matches pod p
 * (AffinityTerm.Matches: namespace, then selector). */
bool fair_pod_term_match(const struct fair_pod_term *t, const char *owner_ns,
                         const struct fair_pod *p);

struct fair_interpod;

/* *out is NULL when no pod carries pod (anti-)affinity and no pending
 * pod a spread constraint, or none is pending. rank_idx: rank -> snapshot node index; rank_of the inverse. */
int fair_interpod_new(struct fair_interpod **out, const struct fair_snapshot *snap,
                      const int32_t *rank_idx, const int32_t *rank_of, size_t *bytes);
void fair_interpod_free(struct fair_interpod *ip);

/* Whether existing pods' anti-affinity terms may reject any pod. */
bool fair_interpod_active(const struct fair_interpod *ip);

/* Whether some pod's anti-affinity term (of a pod bound, or that may be
 * bound this cycle) matches pod: only such pods are constrained by other
 * pods' anti-affinity. Cached per pod. */
bool fair_interpod_touches(struct fair_interpod *ip, const struct fair_pod *pod);

/* Whether pod may go to node rank (rules 1-3 above). */
bool fair_interpod_ok(struct fair_interpod *ip, int32_t rank, const struct fair_pod *pod);

/* Scores of preferred terms (kube-scheduler's Score step, before
 * normalisation) of pod on the candidate nodes ranks[0..n):
 *  - InterPodAffinity: per candidate, the weight of each of pod's
 *    preferred affinity terms (minus, for anti-affinity terms) per placed
 *    pod that matches it in the candidate's domain of the term's key, plus
 *    the weights of placed pods' terms that match pod, in the domain of
 *    the placed pod (preferred affinity +weight, preferred anti-affinity
 *    -weight, required affinity +1: hardPodAffinityWeight);
 *  - PodTopologySpread (ScheduleAnyway): per candidate that has every
 *    key, the sum over pod's constraints of the matching pods in its
 *    domain (counted as the filter counts them) times log(domains + 2),
 *    plus maxSkew - 1, rounded; the domains are those of the candidates
 *    (hostname: their number); ignored[i]: candidate i lacks a key.
 * Return 0 or FAIR_ENOMEM. */
bool fair_interpod_scored(struct fair_interpod *ip, const struct fair_pod *pod);
int fair_interpod_affinity_score(struct fair_interpod *ip, const struct fair_pod *pod,
                                 const int32_t *ranks, size_t n, int64_t *out);
int fair_interpod_spread_score(struct fair_interpod *ip, const struct fair_pod *pod,
                               const int32_t *ranks, size_t n, int64_t *out, bool *ignored);

/* pod bound to (sign 1) or taken back from (sign -1) node rank. */
void fair_interpod_commit(struct fair_interpod *ip, int32_t rank, const struct fair_pod *pod,
                          int sign);

#endif
